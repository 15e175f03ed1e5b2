"""test_progress.py: Net.train's verbose display and its history (issue 29).

Proves: Net.train returns the history, one dict per epoch, each epoch's loss the one the
display shows; verbose=True without tqdm (its import made to fail) prints one line per
epoch, with the epoch's loss, validation and test figures, and no bar; with tqdm (Debian
python3-tqdm; skipped where absent) a bar per epoch over its steps (steps = ceil(rows /
batch)), ending on the epoch's figures, or for a full-batch optimizer one bar over the
epochs; verbose=2 prints the lines even with tqdm (as Keras' verbose=2); verbose off
prints nothing.
"""
import importlib.util
import math
import re
import sys

import numpy as np
import pytest

import axon

has_tqdm = importlib.util.find_spec("tqdm") is not None
needs_tqdm = pytest.mark.skipif(not has_tqdm, reason="tqdm is not installed "
                                "(apt-get install python3-tqdm)")


def blobs(rows=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows).astype(np.int32)
    return (rng.normal(size=(rows, 4)) + 2 * y[:, None]).astype(np.float32), y


def train(verbose, epochs=3, **options):
    X, y = blobs()
    net = axon.Net(4, "8:relu,2:softmax")
    return net.train(X[:200], y[:200], validation=(X[200:250], y[200:250]),
                     test=(X[250:], y[250:]), epochs=epochs, verbose=verbose, seed=3,
                     **options)


@pytest.fixture
def without_tqdm(monkeypatch):
    """import tqdm fails, as where it is not installed."""
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


def test_history_has_an_epoch_each(capsys):
    summary = train(False, epochs=4, batch=32)
    history = summary["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    assert all(h["epoch_done"] and h["batches"] == math.ceil(200 / 32) for h in history)
    assert all(np.isfinite(h[key]) for h in history
               for key in ("train_loss", "validation_loss", "test_loss"))
    assert capsys.readouterr().err == ""


def test_lines_without_tqdm(capsys, without_tqdm):
    history = train(True, batch=32)["history"]
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and "|" not in err, "a bar was drawn without tqdm"
    assert len(lines) == 3
    for line, h in zip(lines, history):
        assert line.startswith(f"epoch {h['epoch']}/3  loss {h['train_loss']:.6f}")
        assert f"val_loss {h['validation_loss']:.6f}" in line
        assert f"val_acc {h['validation_accuracy']:.2%}" in line
        assert f"test_loss {h['test_loss']:.6f}  test_acc {h['test_accuracy']:.2%}" in line


@needs_tqdm
def test_a_bar_per_epoch_with_tqdm(capsys):
    history = train(True, batch=32)["history"]
    err = capsys.readouterr().err
    steps = math.ceil(200 / 32)
    for h in history:
        # The bar's last drawing: all steps done, the epoch's figures after them.
        final = [part for part in err.split("\r") if part.startswith(f"epoch {h['epoch']}/3:")]
        assert final, f"no bar for epoch {h['epoch']}"
        last = final[-1]
        assert f"{steps}/{steps}" in last and "100%" in last, last
        assert f"loss {h['train_loss']:.6f}" in last, last
        assert f"val_loss {h['validation_loss']:.6f}" in last, last
        assert f"test_acc {h['test_accuracy']:.2%}" in last, last
    assert not re.search(r"^epoch \d+/3  loss", err, re.M), "the lines were printed too"


@needs_tqdm
def test_one_bar_over_the_epochs_for_full_batch(capsys):
    history = train(True, epochs=4, optimizer="lbfgs", batch=0)["history"]
    err = capsys.readouterr().err
    drawn = [part for part in err.split("\r") if part.startswith("training:")]
    assert drawn and "4/4" in drawn[-1], drawn[-1:]
    assert f"loss {history[-1]['train_loss']:.6f}" in drawn[-1]


@needs_tqdm
def test_verbose_2_prints_lines_with_tqdm(capsys):
    history = train(2, batch=32)["history"]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["epoch 1/3", "epoch 2/3", "epoch 3/3"]
    assert lines[-1].startswith(f"epoch 3/3  loss {history[-1]['train_loss']:.6f}")
