"""Exported models run without topos: a trained makemore-style MLP, exported, then loaded and
run in a subprocess whose import of topos is blocked."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from topos import Parameters, Symbol, Tape, Tensor, Value, XlaExecutable, f32
from topos.cli import main
from topos.export import ExportError, export
from topos.init import normal
from topos.nn import (
    Activation,
    Embedding,
    Linear,
    Sequential,
    Visitor,
    cross_entropy,
    named_parameters,
)
from topos.optim import Adam
from topos.stages.plan import Plan

VOCAB, CONTEXT, DIM, HIDDEN, BATCH, SAMPLES = 27, 3, 8, 32, 16, 5
EPS = float(np.finfo(np.float32).eps)


class CharMlp:
    """examples/makemore_mlp.py's model: embedding, then Linear -> tanh -> Linear."""

    def __init__(self, tape: Tape, seed: int) -> None:
        init = normal(seed, 0.2, tape.element)
        self.embedding = Embedding.init(tape, VOCAB, DIM, init)
        self.head = Sequential(
            Linear.init(tape, CONTEXT * DIM, HIDDEN, init), Activation.TANH, Linear.init(tape, HIDDEN, VOCAB, init)
        )

    def __call__(self, tokens: Value) -> Value:
        return self.head(self.embedding(tokens).reshape((tokens.shape[0] // CONTEXT, CONTEXT * DIM)))

    def visit(self, visitor: Visitor) -> None:
        visitor.child("embedding", self.embedding)
        visitor.child("head", self.head)


class Trained:
    def __init__(self, steps: int = 4) -> None:
        tape = Tape(f32)
        self.model = CharMlp(tape, seed=3)
        tokens = tape.input(Tensor.selection([0] * (BATCH * CONTEXT), VOCAB))
        targets = tape.input(Tensor.selection([0] * BATCH, VOCAB))
        loss = cross_entropy(self.model(tokens), targets)
        adjoints = tape.differentiate(loss, [tape.resolve(s) for _, s in named_parameters(self.model)])
        context = tape.input(Tensor.selection([0] * (SAMPLES * CONTEXT), VOCAB))
        logits = self.model(context)
        network = tape.seal()
        self.network, self.context, self.logits = network, context.symbol, logits.symbol
        train = network.entry(adjoints.roots()).lower()
        self.plan: Plan = network.entry(self.logits).lower()
        rng = np.random.default_rng(0)
        parameters: Parameters = network.parameters()
        adam = Adam(learning_rate=0.05)
        state = adam.init(parameters)
        self.losses: list[float] = []
        for _ in range(steps):
            feeds = {
                tokens.symbol: Tensor.selection(rng.integers(0, VOCAB, BATCH * CONTEXT), VOCAB),
                targets.symbol: Tensor.selection(rng.integers(0, VOCAB, BATCH), VOCAB),
            }
            run = train.forward(parameters, feeds)
            self.losses.append(run.of(loss.symbol).scalar())
            parameters, state = adam.update(run.recorded_gradients(adjoints), state, parameters)
        self.parameters = parameters
        self.rows = rng.integers(0, VOCAB, SAMPLES * CONTEXT).astype(np.int32)

    def reference(self) -> np.ndarray:
        feeds = {self.context: Tensor.selection(self.rows, VOCAB)}
        return self.plan.forward(self.parameters, feeds).of(self.logits).numpy()

    def weights(self) -> dict[str, np.ndarray]:
        return {str(p): self.parameters.of(s).numpy().astype(np.float64) for p, s in named_parameters(self.model)}

    def envelope(self) -> np.ndarray:
        """Per logit, the XLA envelope of docs/acceleration.md, carried through the layers.

        A sum of K terms is within 2(K+1)·eps·Σ|terms| (own order, fused multiply-adds) and
        tanh within 16·eps·max(|x|, 1) of the interpreter; tanh' <= 1 passes the first
        layer's error on unscaled. The plan (fast posture) and XLA each sit inside it on
        their own side, so the allowed gap is twice the bound.
        """
        w = self.weights()
        (first_w, first_b), (second_w, second_b) = (
            (w["head.0.weights"], w["head.0.bias"]), (w["head.2.weights"], w["head.2.bias"]))
        e = w["embedding.weights"][self.rows].reshape(SAMPLES, CONTEXT * DIM)
        pre = e @ first_w + first_b
        h = np.tanh(pre)
        d_pre = 2 * (CONTEXT * DIM + 2) * EPS * (np.abs(e) @ np.abs(first_w) + np.abs(first_b))
        d_h = 16 * EPS * np.maximum(np.abs(pre), 1.0) + d_pre
        bound: np.ndarray = 2 * (HIDDEN + 2) * EPS * (np.abs(h) @ np.abs(second_w) + np.abs(second_b)) + d_h @ np.abs(second_w)
        self.mirror = h @ second_w + second_b
        return 2 * bound


@pytest.fixture(scope="module")
def trained() -> Trained:
    return Trained()


@pytest.fixture(scope="module")
def artifact(trained: Trained, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export") / "makemore"
    export(trained.plan, trained.parameters, folder,
           names={trained.context: "context", trained.logits: "logits"}, module=trained.model)
    return folder


BLOCKED = """\
import sys

class NoTopos:
    def find_spec(self, name, path=None, target=None):
        if name == "topos" or name.startswith("topos."):
            raise ImportError("topos is blocked in this process")
        return None

sys.meta_path.insert(0, NoTopos())
sys.modules.pop("topos", None)
folder, rows, out = sys.argv[1:4]
sys.path.insert(0, folder)
import numpy as np
import load
outputs = load.run(folder, {"context": np.load(rows)})
np.save(out, outputs["logits"])
try:
    import topos
except ImportError:
    pass
else:
    raise SystemExit("topos imported")
assert not [m for m in sys.modules if m == "topos" or m.startswith("topos.")], "topos was loaded"
print(sorted(outputs))
"""


def run_without_topos(folder: Path, rows: np.ndarray, tmp: Path) -> np.ndarray:
    np.save(tmp / "rows.npy", rows)
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", BLOCKED, str(folder), str(tmp / "rows.npy"), str(tmp / "out.npy")],
        capture_output=True, text=True, cwd=tmp, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "['logits']"
    logits: np.ndarray = np.load(tmp / "out.npy")
    return logits


def test_training_moved_the_weights(trained: Trained) -> None:
    initial = trained.network.parameters()
    moved = [not np.array_equal(initial.of(s).numpy(), trained.parameters.of(s).numpy())
             for _, s in named_parameters(trained.model)]
    assert all(moved) and len(trained.losses) == 4


def test_the_artifact_runs_without_topos_within_the_xla_envelope(
    trained: Trained, artifact: Path, tmp_path: Path
) -> None:
    outside = run_without_topos(artifact, trained.rows, tmp_path)
    reference = trained.reference()
    envelope = trained.envelope()
    assert outside.shape == reference.shape == (SAMPLES, VOCAB) and outside.dtype == np.float32
    # The float64 mirror keeps the envelope honest: the plan sits inside it too.
    assert np.all(np.abs(reference - trained.mirror) <= envelope)
    assert np.all(np.abs(outside.astype(np.float64) - reference) <= envelope), np.max(np.abs(outside - reference))
    # Same module, same compiler options, same XLA:CPU: the XLA road's bits exactly.
    on_xla = XlaExecutable.of_plan(trained.plan).forward(
        trained.parameters, {trained.context: Tensor.selection(trained.rows, VOCAB)}).of(trained.logits).numpy()
    assert np.array_equal(outside.view(np.uint32), on_xla.view(np.uint32))


def test_the_signature_names_paths_shapes_and_encodings(trained: Trained, artifact: Path) -> None:
    signature = json.loads((artifact / "signature.json").read_text())
    arguments = signature["arguments"]
    assert [a["name"] for a in arguments if a["kind"] == "parameter"] == [
        str(p) for p, _ in named_parameters(trained.model)]
    context = [a for a in arguments if a["kind"] == "input"]
    assert context == [{"kind": "input", "name": "context", "shape": [SAMPLES * CONTEXT], "dtype": "int32",
                        "encoding": "indices", "vocab": VOCAB, "one": 1.0}]
    assert signature["outputs"] == [{"name": "logits", "shape": [SAMPLES, VOCAB], "dtype": "float32"}]
    assert sorted(p.name for p in artifact.iterdir()) == [
        "README.md", "load.py", "model.jax", "requirements.txt", "signature.json", "weights.safetensors"]
    from safetensors.numpy import load_file

    weights = load_file(str(artifact / "weights.safetensors"))
    for path, symbol in named_parameters(trained.model):
        stored = weights[str(path)]
        assert np.array_equal(stored.view(np.uint32), trained.parameters.of(symbol).numpy().view(np.uint32))


def test_exporting_twice_writes_the_same_bytes(trained: Trained, artifact: Path, tmp_path: Path) -> None:
    again = export(trained.plan, trained.parameters, tmp_path / "again",
                   names={trained.context: "context", trained.logits: "logits"}, module=trained.model)
    for name in ("signature.json", "weights.safetensors", "model.jax", "load.py", "requirements.txt", "README.md"):
        assert (again.directory / name).read_bytes() == (artifact / name).read_bytes(), name


def test_refusals_name_the_problem_and_write_nothing(trained: Trained, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="not an empty directory"):
        export(trained.plan, trained.parameters, taken)
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    first = named_parameters(trained.model)[0][1]
    network = trained.network
    sources = {*network.parameter_nodes, *network.input_nodes, network.index(trained.logits)}
    interior = network.symbol(next(i for i in trained.plan.scheduled if i not in sources))
    cases: list[tuple[dict[Symbol, str], str]] = [
        ({trained.context: "x", first: "x"}, "both named 'x'"),
        ({trained.context: ""}, "non-empty string"),
        ({interior: "interior"}, "no argument or result"),
    ]
    for names, message in cases:
        with pytest.raises(ExportError, match=message):
            export(trained.plan, trained.parameters, tmp_path / "fresh", names=names)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    with pytest.raises(ExportError, match="takes a Plan"):
        export(trained.network, trained.parameters, tmp_path / "fresh")  # type: ignore[arg-type]


CLI_BUILD = """\
from topos import Tape


def affine(t: Tape):
    w = t.parameter([[0.5, -1.0], [2.0, 0.25]])
    x = t.input([[1.0, 2.0]])
    return {"y": (x @ w).tanh()}
"""


def test_the_cli_exports_a_build_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build = tmp_path / "affine.py"
    build.write_text(CLI_BUILD)
    assert main(["export", f"{build}:affine", "-o", str(tmp_path / "out")]) == 0
    assert "inputs input_0; outputs y" in capsys.readouterr().out
    signature = json.loads((tmp_path / "out" / "signature.json").read_text())
    assert [(a["kind"], a["name"]) for a in signature["arguments"]] == [("parameter", "parameter_0"), ("input", "input_0")]
    # The artifact's own loader (jax, numpy, safetensors), imported from the artifact.
    spec = importlib.util.spec_from_file_location("exported_load", tmp_path / "out" / "load.py")
    assert spec is not None and spec.loader is not None
    load = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(load)
    x = np.array([[0.75, -0.5]], dtype=np.float32)
    y = load.run(tmp_path / "out", {"input_0": x})["y"]
    exact = np.tanh(x.astype(np.float64) @ np.array([[0.5, -1.0], [2.0, 0.25]]))
    # two-term dot products and one tanh: 2·3·eps·Σ|terms| + 16·eps, under 1e-6 here
    assert np.all(np.abs(y - exact) <= 2 * 3 * EPS * 2.5 + 16 * EPS)
    assert main(["export", f"{build}:affine", "-o", str(tmp_path / "out")]) == 3


MISSING = """\
import sys

class Without:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[2] or name.startswith(sys.argv[2] + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Without())
for loaded in [m for m in sys.modules if m == sys.argv[2] or m.startswith(sys.argv[2] + ".")]:
    del sys.modules[loaded]
sys.path.insert(0, sys.argv[1])
try:
    import load
    load.load(sys.argv[1])
except ImportError as error:
    print("ImportError:", error)
else:
    print("loaded")
"""


@pytest.mark.parametrize("package", ["flatbuffers", "jaxlib", "jax", "numpy"])
def test_a_missing_package_is_named_with_the_requirements_file(artifact: Path, package: str, tmp_path: Path) -> None:
    listed = (artifact / "requirements.txt").read_text(encoding="utf-8").splitlines()
    wanted = [line for line in listed if line.split(">")[0].split("=")[0].split("<")[0] == package]
    assert len(wanted) == 1, listed
    assert "requirements.txt" in (artifact / "README.md").read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-I", "-B", "-c", MISSING, str(artifact), package],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    message = done.stdout.strip()
    assert message.startswith("ImportError:"), message
    assert f"'{package}'" in message and wanted[0] in message, message
    assert str(artifact / "requirements.txt") in message, message


def test_with_nothing_blocked_the_same_probe_loads(artifact: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-I", "-B", "-c", MISSING, str(artifact), "no_such_blocked_module"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert done.stdout.strip() == "loaded", done.stdout + done.stderr


def test_requirements_cover_what_the_loader_imports() -> None:
    from topos import export_loader

    assert set(export_loader.REQUIREMENTS) == {"numpy", "jax", "jaxlib", "flatbuffers"}
    lines = export_loader.requirements_text().splitlines()
    assert lines == [f"{name}{spec}" for name, spec in export_loader.REQUIREMENTS.items()]
