"""_plot.py: axon.plot, the curves of a training run with matplotlib.

Reads what Net.train and axon.train return (their "history", one dict per epoch of the
library's ax_progress) or an `axon train --metrics` JSON Lines file (one object per epoch,
docs/cli.md), and draws two panels: the loss per epoch (train, validation, test) and the
accuracy per epoch (validation, test; the library records no training accuracy). Absent
values (NaN in a history, null in a metrics file) leave their curve out. matplotlib is
optional: imported on the first call, with Figure and its Agg canvas rather than pyplot,
so that no GUI backend is started and no global figure state is kept.
"""
import json
import math
import os

# The two sources' names of each curve: (history key, metrics file key, label).
_LOSSES = (("train_loss", "train_loss", "train"),
           ("validation_loss", "val_loss", "validation"),
           ("test_loss", "test_loss", "test"))
_ACCURACIES = (("validation_accuracy", "val_accuracy", "validation"),
               ("test_accuracy", "test_accuracy", "test"))


def _epochs(source):
    """[(epoch, {key: value})] from a history list, a training summary or a metrics path."""
    if isinstance(source, dict) and "history" in source:
        source = source["history"]
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        rows = []
        with open(source) as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except ValueError as error:
                        raise ValueError(f"axon.plot: {os.fsdecode(source)}, line {number}: "
                                         f"not JSON ({error})") from None
        source = rows
    epochs = []
    for i, row in enumerate(source):
        if not isinstance(row, dict):
            raise TypeError("axon.plot: expects a history (a list of dicts per epoch), a "
                            "training summary or a --metrics JSON Lines file")
        epochs.append((int(row.get("epoch", i + 1)), row))
    return epochs


def _value(row, keys):
    for key in keys:
        value = row.get(key)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            return float(value)
    return None


def _curves(epochs, names):
    curves = []
    for history_key, file_key, label in names:
        points = [(epoch, _value(row, (history_key, file_key))) for epoch, row in epochs]
        points = [(e, v) for e, v in points if v is not None]
        if points:
            curves.append((label, points))
    return curves


def plot(source, out=None, *, title=None):
    """Draws the loss and accuracy per epoch of a run: source is the history Net.train
    returns (summary["history"], or the summary itself) or the path of an
    `axon train --metrics` file. out: an image file to write (its suffix names the
    format: .png, .svg, .pdf). Returns the matplotlib Figure. ImportError where
    matplotlib is not installed (Debian: apt-get install python3-matplotlib)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("axon.plot needs matplotlib (Debian: apt-get install "
                          "python3-matplotlib; pip: pip install matplotlib)") from error
    epochs = _epochs(source)
    if not epochs:
        raise ValueError("axon.plot: the run has no epochs")
    figure = Figure(figsize=(10, 4), layout="tight")
    FigureCanvasAgg(figure)
    for axes, names, ylabel in zip(figure.subplots(1, 2), (_LOSSES, _ACCURACIES),
                                   ("loss", "accuracy")):
        curves = _curves(epochs, names)
        for label, points in curves:
            axes.plot([e for e, _ in points], [v for _, v in points], marker="o", label=label)
        if curves:
            axes.legend()
        else:
            axes.text(0.5, 0.5, f"no {ylabel} recorded", ha="center", va="center",
                      transform=axes.transAxes)
        axes.set_xlabel("epoch")
        axes.set_ylabel(ylabel)
        axes.grid(True, alpha=0.3)
    if title:
        figure.suptitle(title)
    if out is not None:
        figure.savefig(out)
    return figure
