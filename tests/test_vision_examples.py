"""The vision lessons' smoke modes on the committed real MNIST subset: LeNet-5 and the
VGG-style network (on its clearly labelled stand-in data), both on the Fast plan."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def module(folder: str, name: str) -> ModuleType:
    path = str(ROOT / "examples" / folder)
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(name)


def smoke(folder: str, name: str, out: Path, *extra: str) -> tuple[dict[str, float], str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result: dict[str, float] = module(folder, name).main(["--smoke", "--quiet", "--out", str(out), *extra])
    return result, printed.getvalue()


def test_lenet_learns_digits_on_the_fast_plan(tmp_path: Path) -> None:
    result, out = smoke("mnist", "lenet", tmp_path)
    assert "the committed MNIST subset: 2000 train, 500 test images" in out
    # Chance is 0.10; 30 Adam steps of 32 real digits already put most of the test set right.
    assert result["accuracy"] > 0.5 and result["last"] < result["first"], result
    assert (tmp_path / "lenet_fast_loss.png").stat().st_size > 0
    assert (tmp_path / "lenet_fast_confusion.png").stat().st_size > 0


def test_lenet_cosine_schedule_decays_the_rate_and_scores_each_epoch(tmp_path: Path) -> None:
    import math

    # 63 steps: the subset's epoch is 2,000 // 32 = 62 steps, so one epoch completes and is
    # scored before the end.
    result, out = smoke("mnist", "lenet", tmp_path, "--steps", "63", "--schedule", "cosine")
    assert result["lr_first"] == 1e-3
    # Half a cosine over 63 steps: the last step (62) runs at 1e-3 * (1 + cos(62 pi / 63)) / 2.
    assert math.isclose(result["lr_last"], 1e-3 * 0.5 * (1 + math.cos(math.pi * 62 / 63)), rel_tol=1e-12)
    assert result["lr_last"] < 1e-5
    assert "lenet (fast): epoch 1: test accuracy" in out
    assert 0.5 < result["epoch1"] <= 1.0 and "epoch2" not in result, result
    assert result["accuracy"] > 0.5 and result["last"] < result["first"], result


def test_lenet_constant_rate_stays_put(tmp_path: Path) -> None:
    result, _ = smoke("mnist", "lenet", tmp_path, "--steps", "3")
    assert result["lr_first"] == result["lr_last"] == 1e-3


def test_vgg_trains_and_says_its_data_is_a_stand_in(tmp_path: Path) -> None:
    # The Fast plan: the XLA road's compile of this training step alone costs more than
    # a dozen Fast-plan steps (the README's figures cover that road).
    result, out = smoke("cifar10", "vgg", tmp_path)
    assert "STAND-IN, not CIFAR-10" in out
    assert result["accuracy"] > 0.2 and result["last"] < result["first"], result
    assert (tmp_path / "vgg_fast_confusion.png").stat().st_size > 0


def test_the_vgg_stand_in_has_cifar_shape_and_mnist_pixels() -> None:
    vgg = module("cifar10", "vgg")
    data, where = vgg.stand_in(True)
    images, labels = data["train"]
    assert images.shape == (2000, 3, 32, 32) and labels.shape == (2000,)
    # Three equal channels, each the 28x28 digit in the middle of a 2-pixel border.
    assert (images[:, 0] == images[:, 1]).all() and (images[:, 1] == images[:, 2]).all()
    digits, _ = module("mnist", "digits").mnist(True)
    assert (images[:, 0, 2:30, 2:30] == digits["train"][0][:, 0]).all()
    assert where.startswith("STAND-IN")


def test_the_batch_norm_running_statistics_take_a_tenth_of_each_batch() -> None:
    import numpy as np

    vgg = module("cifar10", "vgg")
    classifier = vgg.VggClassifier(batch=4, rows=4)
    step = classifier.step("fast")
    draws = np.random.default_rng(0)
    images = draws.standard_normal((4, 3, 32, 32)).astype(np.float32) * 3 + 1
    feeds = classifier.feeder((images, np.arange(4)))
    parameters = classifier.network.parameters()
    step(parameters, feeds)
    observed = classifier.plan.forward(parameters, feeds)
    for i, (mean, variance) in enumerate(classifier.running):
        batch_mean = observed.of(classifier.observed[2 * i].symbol).numpy()
        batch_variance = observed.of(classifier.observed[2 * i + 1].symbol).numpy()
        # From (0, 1) with momentum 0.1, the same f32 arithmetic the loop does.
        assert (mean.view(np.uint32) == (0.9 * np.zeros_like(batch_mean) + 0.1 * batch_mean).view(np.uint32)).all()
        assert (variance.view(np.uint32) == (0.9 * np.ones_like(batch_variance) + 0.1 * batch_variance).view(np.uint32)).all()
        assert np.all(batch_variance > 0)


@pytest.mark.parametrize(
    ("folder", "name", "flags"),
    [("mnist", "lenet", ["--road", "--epochs", "--schedule", "--steps", "--smoke"]), ("cifar10", "vgg", ["--road", "--steps", "--smoke"])],
)
def test_help_lists_every_flag_the_example_takes(folder: str, name: str, flags: list[str]) -> None:
    """Its own flags (parsed first) and the shared ones, with the whole opening sentence."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exit_:
        module(folder, name).main(["--help"])
    assert exit_.value.code == 0
    text = printed.getvalue()
    assert all(flag in text for flag in flags), text
    doc = module(folder, name).__doc__
    assert doc is not None
    opening = " ".join(doc.split("\n\n")[0].split())
    assert opening in " ".join(text.split())
