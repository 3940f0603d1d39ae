"""Digests of exact runs: the committed table recomputes bit for bit, a flipped bit is seen,
and ``topos digest`` prints the library's digest (or refuses, naming the file and function).

CI runs this file under every setting of ``.ci/portability.py`` (CPU feature levels, OpenBLAS
kernels, thread counts) and several numpy versions: the table test is the portability check,
so it recomputes every job in every element (about ten seconds on one core).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import topos_command as topos

from topos import MapOperation, Symbol, Tape, Tensor, bf16, f32, f64
from topos.digest import (
    ELEMENTS,
    FORMAT,
    JOBS,
    TABLE,
    bit_draws,
    check,
    digest_run,
    index_draws,
    main,
    read_table,
    special_values,
    uniform_draws,
)
from topos.ir import ops
from topos.ir.element import ElementType
from topos.tensor import TensorLike

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "if the change of bits is intended, regenerate the table: python -m topos.digest --write"


# ---------------------------------------------------------------------------- the committed table


@pytest.mark.parametrize("element", list(ELEMENTS.values()), ids=list(ELEMENTS))
@pytest.mark.parametrize("name", [job.name for job in JOBS])
def test_the_committed_table_recomputes_bit_for_bit(name: str, element: ElementType) -> None:
    job = next(job for job in JOBS if job.name == name)
    entry = read_table()["jobs"][name]
    assert entry["steps"] == job.steps
    assert job.digest(element) == entry["digests"][element.name], f"{name} {element.name}: {REGENERATE}"


def test_the_table_holds_every_job_in_every_element_at_twenty_steps_or_more() -> None:
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    assert table["format"] == FORMAT
    assert sorted(table["jobs"]) == sorted(job.name for job in JOBS) == ["every-op", "gpt", "lenet", "makemore"]
    for job in JOBS:
        entry = table["jobs"][job.name]
        assert entry["steps"] == job.steps >= 20
        assert sorted(entry["digests"]) == sorted(ELEMENTS)
        assert all(len(d) == 64 and int(d, 16) >= 0 for d in entry["digests"].values())
    # Every digest differs: the element and the job both reach the hash.
    digests = [d for entry in table["jobs"].values() for d in entry["digests"].values()]
    assert len(set(digests)) == len(digests)


def test_check_reports_a_doctored_entry_and_main_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = read_table()
    committed = table["jobs"]["makemore"]["digests"]["bf16"]
    doctored = committed[:-1] + ("0" if committed[-1] != "0" else "1")
    table["jobs"]["makemore"]["digests"]["bf16"] = doctored
    path = tmp_path / "digests.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    assert check(path, ["makemore"]) == [f"makemore bf16: computed {committed}, committed {doctored}"]
    assert main(["--check", "--job", "makemore", "--table", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH makemore bf16: computed {committed}" in out and "1 mismatch(es)" in out
    # A table of other steps is a mismatch without comparing bits.
    table["jobs"]["makemore"]["steps"] = 21
    path.write_text(json.dumps(table), encoding="utf-8")
    assert check(path, ["makemore"]) == ["makemore: the table has 21 steps, the job 20"]


def test_write_rewrites_only_the_named_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "digests.json"
    table = read_table()
    table["jobs"]["gpt"]["digests"]["f32"] = "0" * 64  # another job's entry, kept as it is
    path.write_text(json.dumps(table), encoding="utf-8")
    assert main(["--write", "--job", "makemore", "--table", str(path)]) == 0
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["jobs"]["makemore"] == read_table()["jobs"]["makemore"]
    assert written["jobs"]["gpt"]["digests"]["f32"] == "0" * 64
    assert "wrote" in capsys.readouterr().out
    assert main(["--check", "--table", str(tmp_path / "absent.json")]) == 3


# ---------------------------------------------------------------------------- what the jobs cover


@pytest.mark.parametrize("element", [f32, f64, bf16], ids=["f32", "f64", "bf16"])
def test_every_op_records_every_opcode_and_every_map(element: ElementType) -> None:
    prepared = JOBS[0].prepare(element)
    assert JOBS[0].name == "every-op"
    recorded = {type(node.op) for node in prepared.network.nodes()}
    maps = {node.op.operation for node in prepared.network.nodes() if isinstance(node.op, ops.Map)}
    assert recorded == set(ops.OPCODES)
    assert maps == set(MapOperation)
    values = special_values(element).astype(np.float64)
    signs = np.signbit(values)
    assert (values == 0)[signs].any() and (values == 0)[~signs].any()  # both zeros
    assert np.isposinf(values).any() and np.isneginf(values).any() and np.isnan(values).any()
    finite = np.abs(values[np.isfinite(values) & (values != 0)])
    assert finite.min() < _smallest_normal(element)  # a subnormal
    assert finite.max() == element.largest


def _smallest_normal(element: ElementType) -> float:
    import ml_dtypes

    finfo: Any = ml_dtypes.finfo  # untyped; numpy's finfo does not know bfloat16
    return float(finfo(element.dtype).smallest_normal)


def test_the_draws_are_pure_functions_of_the_step() -> None:
    first = uniform_draws(5, 3, (4, 2), -1.0, 1.0)
    assert first.dtype == np.float64 and first.shape == (4, 2)
    assert np.array_equal(first, uniform_draws(5, 3, (4, 2), -1.0, 1.0))
    assert not np.array_equal(first, uniform_draws(5, 4, (4, 2), -1.0, 1.0))
    assert np.array_equal(index_draws(5, 3, 9, 7), index_draws(5, 3, 9, 7)) and index_draws(5, 3, 9, 7).max() < 7
    drawn = bit_draws(5, 3, 4096, f32)
    patterns = drawn.astype(np.float64)
    # Every exponent comes up; a NaN pattern is always the one quiet NaN.
    assert set(drawn.view(np.uint32)[np.isnan(patterns)].tolist()) == {0x7FC00000}
    assert (np.abs(patterns) > 1e30).any() and ((patterns != 0) & (np.abs(patterns) < 1e-38)).any()


# ---------------------------------------------------------------------------- the digest can fail


def _line(tape: Tape) -> tuple[Any, Any, Any]:
    w = tape.parameter([0.5, -0.25, 2.0])
    x = tape.input([1.0, 2.0, 3.0])
    error = w * x - 1.0
    return (error * error).sum(), w, x


def test_one_bit_of_one_input_at_one_step_changes_the_digest() -> None:
    network, (loss, _, x) = Tape.record(_line, element=f32)

    def feeds(flip: bool) -> Any:
        def at(step: int) -> Mapping[Symbol, TensorLike]:
            data = uniform_draws(1, step, (3,)).astype(np.float32)
            if flip and step == 7:
                data.view(np.uint32)[1] ^= 1  # the last bit of one element
            return {x: Tensor(data, f32)}

        return at

    plain = digest_run(network, loss, steps=20, feeds=feeds(False))
    assert plain == digest_run(network, loss, steps=20, feeds=feeds(False))
    assert plain != digest_run(network, loss, steps=20, feeds=feeds(True))
    # So does one bit of the step count, the rate or the element.
    assert plain != digest_run(network, loss, steps=19, feeds=feeds(False))
    assert plain != digest_run(network, loss, steps=20, rate=2.0**-5, feeds=feeds(False))
    other, (loss64, _, x64) = Tape.record(_line, element=f64)
    assert plain != digest_run(other, loss64, steps=20, feeds=lambda k: {x64: uniform_draws(1, k, (3,)).astype(np.float32)})


def test_one_bit_of_one_image_changes_the_lenet_digest() -> None:
    job = next(job for job in JOBS if job.name == "lenet")
    prepared = job.prepare(f32)
    assert prepared.feeds is not None
    feeds = prepared.feeds
    images = next(s for s in feeds(0) if prepared.network.node(s).shape.rank == 4)

    def flipped(step: int) -> Mapping[Symbol, TensorLike]:
        given = dict(feeds(step))
        if step == 11:
            data = np.array(given[images], dtype=np.float32)
            data.view(np.uint32)[1, 0, 13, 13] ^= 1
            given[images] = Tensor(data, f32)
        return given

    assert digest_run(prepared.network, prepared.roots, steps=job.steps, feeds=flipped) != read_table()["jobs"]["lenet"]["digests"]["f32"]


def test_nans_are_canonical_unless_asked_for_their_bits() -> None:
    network, (y, x) = Tape.record(lambda t: (lambda x: ((x * x).sum(), x))(t.input([1.0, 2.0])), element=f32)
    positive, negative = (np.array([0.0, b], np.uint32).view(np.float32) for b in (0x7FC00000, 0xFFC00000))
    positive[0] = negative[0] = 1.0

    def feed(value: np.ndarray[Any, Any]) -> Any:
        return lambda step: {x: Tensor(value, f32)}

    assert digest_run(network, [y, x], steps=2, feeds=feed(positive)) == digest_run(network, [y, x], steps=2, feeds=feed(negative))
    assert digest_run(network, [y, x], steps=2, feeds=feed(positive), nans="bits") != digest_run(
        network, [y, x], steps=2, feeds=feed(negative), nans="bits"
    )
    assert digest_run(network, [y, x], steps=2, feeds=feed(positive), nans="bits") != digest_run(
        network, [y, x], steps=2, feeds=feed(positive)
    )


def test_digest_run_refuses_what_it_cannot_train() -> None:
    from topos import BackwardTargetError, InvalidArgumentError

    network, (loss, w, _) = Tape.record(_line, element=f32)
    with pytest.raises(BackwardTargetError, match="rank 0"):
        digest_run(network, [w, loss], steps=2)
    with pytest.raises(InvalidArgumentError, match="steps"):
        digest_run(network, loss, steps=0)
    with pytest.raises(InvalidArgumentError, match="nans"):
        digest_run(network, loss, steps=1, nans="loose")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- the command line

BUILD = """\
from topos import Tape


def build(t: Tape):
    w = t.parameter([[0.5, -1.0], [0.25, 2.0]])
    x = t.input([[1.0, 2.0], [3.0, -1.0]])
    h = (x @ w).tanh()
    return {"loss": (h * h).sum(), "h": h}


def no_loss(t: Tape):
    return t.parameter([0.5, 1.0]) * 2.0
"""


@pytest.fixture(scope="module")
def build_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("digest") / "model.py"
    path.write_text(BUILD)
    return path


def test_digest_prints_the_library_digest_of_the_same_build(build_file: Path) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(BUILD, str(build_file), "exec"), namespace)
    network, symbols = Tape.record(namespace["build"], element=f64)
    expected = digest_run(network, [symbols["loss"], symbols["h"]], steps=25)
    done = topos("digest", f"{build_file}:build", "--steps", "25", "--element", "f64")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert len(done.stdout.splitlines()) == 1
    digest, rest = done.stdout.split(None, 1)
    assert digest == expected
    for words in (f"{build_file}:build", "f64", "25 SGD steps", "loss 'loss'", "loss, h", "1 parameter (4 values)"):
        assert words in rest
    matched = topos("digest", f"{build_file}:build", "--steps", "25", "--element", "f64", "--expect", expected.upper())
    assert matched.returncode == 0 and matched.stdout.splitlines()[-1] == "matches the expected digest"
    other = ("f" if expected[0] != "f" else "e") + expected[1:]
    differs = topos("digest", f"{build_file}:build", "--steps", "25", "--element", "f64", "--expect", other)
    assert differs.returncode == 1 and f"DIFFERS from the expected digest {other}" in differs.stdout


def test_digest_refusals_name_the_file_and_the_function(build_file: Path, tmp_path: Path) -> None:
    not_a_loss = topos("digest", f"{build_file}:no_loss")
    assert not_a_loss.returncode == 3 and not_a_loss.stdout == "" and "Traceback" not in not_a_loss.stderr
    assert f"BackwardTargetError: {build_file}:no_loss: digest trains the first root as the loss" in not_a_loss.stderr
    assert "rank 0" in not_a_loss.stderr and "<frozen" not in not_a_loss.stderr
    absent = topos("digest", f"{build_file}:absent", cwd=tmp_path)
    assert absent.returncode == 4 and absent.stdout == ""
    assert str(build_file) in absent.stderr and "'absent'" in absent.stderr and "build" in absent.stderr
    usage = topos("digest", f"{build_file}:build", "--expect", "not-hex")
    assert usage.returncode == 2 and "--expect" in usage.stderr
