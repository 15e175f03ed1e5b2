"""test_plot.py: axon.plot draws a run's loss and accuracy per epoch (issue 29).

Proves: from the history Net.train returns (or the summary holding it) the loss panel
has the train, validation and test curves and the accuracy panel validation and test,
each point the history's value; from an `axon train --metrics` JSON Lines file the
same, a null value leaving its curve out; out= writes the image; a missing matplotlib
is an ImportError saying what to install. Skipped where matplotlib is not installed.
"""
import importlib.util
import json
import sys

import numpy as np
import pytest

import axon

pytestmark = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                reason="matplotlib is not installed "
                                       "(apt-get install python3-matplotlib)")


def blobs(rows=200, features=4, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3, size=(classes, features))
    y = rng.integers(0, classes, rows)
    return (centres[y] + rng.normal(size=(rows, features))).astype(np.float32), y.astype(np.int32)


def lines(axes):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
            for line in axes.get_lines()}


def test_plot_of_a_history_has_every_curve_and_writes_the_image(tmp_path):
    X, y = blobs()
    net = axon.Net(4, "8:relu,3:softmax")
    summary = net.train(X[:120], y[:120], validation=(X[120:160], y[120:160]),
                        test=(X[160:], y[160:]), epochs=3, batch=32)
    history = summary["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3]
    figure = axon.plot(history, out=tmp_path / "run.png", title="blobs")
    loss, accuracy = figure.axes
    curves = lines(loss)
    assert sorted(curves) == ["test", "train", "validation"]
    assert curves["train"] == ([1, 2, 3], [h["train_loss"] for h in history])
    assert curves["validation"][1] == [h["validation_loss"] for h in history]
    assert curves["test"][1] == [h["test_loss"] for h in history]
    assert lines(accuracy)["test"][1] == [h["test_accuracy"] for h in history]
    assert lines(accuracy)["validation"][1] == [h["validation_accuracy"] for h in history]
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert lines(axon.plot(summary).axes[0]) == curves  # the summary itself


def test_plot_of_a_metrics_file_leaves_absent_values_out(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = [{"epoch": e, "train_loss": 1.0 / e, "val_loss": None, "test_loss": 1.5 / e,
             "test_accuracy": 0.5 + e / 10, "seconds": 0.1, "gflops": 1.0, "lr": 0.1}
            for e in (1, 2, 3)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    loss, accuracy = axon.plot(path, out=tmp_path / "m.svg").axes
    assert sorted(lines(loss)) == ["test", "train"]
    assert lines(loss)["train"] == ([1, 2, 3], [1.0, 0.5, 1 / 3])
    assert lines(accuracy) == {"test": ([1, 2, 3], [0.6, 0.7, 0.8])}
    assert b"<svg" in (tmp_path / "m.svg").read_bytes()
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1"):
        axon.plot(path)


def test_plot_without_matplotlib_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match="python3-matplotlib"):
        axon.plot([{"epoch": 1, "train_loss": 1.0}])
