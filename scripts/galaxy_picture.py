#!/usr/bin/python3
"""galaxy_picture.py: the picture of the galaxy classifier (1024-8-3, full-batch
CG) that its Python original draws, here by gnuplot:
training and test cost against CG iteration (from axon train --metrics) above
a grid of test galaxies (32 x 32 grey, from test.csv, evenly spaced through
the file so that every class shows), each labelled with the
class axon predicts (from axon predict), the wrong ones framed in red with the
true class beside the prediction. Classes in the data set's order: 0 E
(elliptical), 1 S (spiral), 2 I (irregular).

By default it trains first (axon train ... --optimizer cg --keep-best test,
as the Python original keeps the weights with the lowest test cost) and predicts with
the kept weights; --metrics and --predictions draw from earlier runs instead.

usage: scripts/galaxy_picture.py [--axon build/axon] [--data DIR]
           [--out bench/results/galaxy.png] [--iterations 300] [--seed 1] [--keep-best test|none]
           [--count 48] [--columns 8] [--metrics FILE --predictions FILE]
needs: gnuplot with the pngcairo terminal (Debian gnuplot-nox; scripts/setup.sh)"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CLASSES = "ESI"  # elliptical, spiral, irregular
SIDE = 32        # image side in pixels
GAP_X, GAP_Y = 6, 14  # space between images; the label sits in GAP_Y


def fail(message):
    sys.exit("galaxy_picture: " + message)


def run(command):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command)
    if result.returncode != 0:
        fail("%s exited with status %d" % (command[0], result.returncode))


def read_metrics(path):
    rows = []
    with open(path) as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                rows.append((int(record["epoch"]), float(record["train_loss"]),
                             float("nan") if record.get("test_loss") is None
                             else float(record["test_loss"])))
            except (ValueError, KeyError, TypeError) as error:
                fail("%s line %d: not an axon --metrics record (%s)" % (path, number, error))
    if not rows:
        fail("%s holds no iterations" % path)
    return rows


def read_predictions(path):
    with open(path) as stream:
        header = stream.readline().strip().split(",")
        if not header or header[0] != "predicted":
            fail("%s line 1: expected axon predict's header 'predicted,p0,...'" % path)
        predicted = []
        for number, line in enumerate(stream, 2):
            try:
                predicted.append(int(line.split(",", 1)[0]))
            except ValueError:
                fail("%s line %d: the predicted class is not an integer" % (path, number))
    return predicted


def read_images(path):
    images, labels = [], []
    with open(path) as stream:
        for number, line in enumerate(stream, 1):
            fields = line.strip().split(",")
            if len(fields) != 1 + SIDE * SIDE:
                fail("%s line %d: expected a label and %d pixels, found %d fields"
                     % (path, number, SIDE * SIDE, len(fields)))
            try:
                labels.append(int(float(fields[0])))
                images.append([float(v) for v in fields[1:]])
            except ValueError:
                fail("%s line %d: a field is not a number" % (path, number))
    return images, labels


def write_mosaic(path, images, columns):
    """One matrix of grey values: the images in rows of `columns`, white between."""
    rows = (len(images) + columns - 1) // columns
    width = columns * (SIDE + GAP_X) - GAP_X
    height = rows * (SIDE + GAP_Y)
    mosaic = [[255.0] * width for _ in range(height)]
    for k, image in enumerate(images):
        top, left = (k // columns) * (SIDE + GAP_Y), (k % columns) * (SIDE + GAP_X)
        for r in range(SIDE):
            mosaic[top + r][left:left + SIDE] = image[r * SIDE:(r + 1) * SIDE]
    with open(path, "w") as stream:
        for line in mosaic:
            stream.write(" ".join("%g" % v for v in line) + "\n")
    return width, height


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--axon", default=os.path.join(root, "build", "axon"))
    p.add_argument("--data", default=os.path.join(root, "build", "data", "galaxy"))
    p.add_argument("--out", default=os.path.join(root, "bench", "results", "galaxy.png"))
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--seed", type=int, default=1, help="axon's --seed: the initial weights")
    p.add_argument("--keep-best", default="test", choices=["test", "none"])
    p.add_argument("--count", type=int, default=48, help="test galaxies shown")
    p.add_argument("--columns", type=int, default=8)
    p.add_argument("--metrics", help="draw from this axon --metrics file instead of training")
    p.add_argument("--predictions", help="with --metrics: axon predict's CSV for test.csv")
    a = p.parse_args()
    if (a.metrics is None) != (a.predictions is None):
        fail("give --metrics and --predictions together, or neither")
    if a.count < 1 or a.columns < 1 or a.iterations < 1:
        fail("--count, --columns and --iterations must be positive")
    if not shutil.which("gnuplot"):
        fail("gnuplot is not installed (apt-get install gnuplot-nox, or scripts/setup.sh)")
    test_csv = os.path.join(a.data, "test.csv")
    if not os.path.exists(test_csv):
        fail("%s is missing (--data names the folder with train.csv and test.csv)" % test_csv)

    work = tempfile.mkdtemp(prefix="galaxy_picture.")
    try:
        metrics, predictions = a.metrics, a.predictions
        if metrics is None:
            if not os.access(a.axon, os.X_OK):
                fail("%s is not an executable axon (build it, or give --axon)" % a.axon)
            metrics = os.path.join(work, "metrics.jsonl")
            predictions = os.path.join(work, "predictions.csv")
            model = os.path.join(work, "galaxy.safetensors")
            # the galaxy classifier's network and cost (docs/notes/galaxy.md); l2 = lambda / m
            run([a.axon, "train", "--data", os.path.join(a.data, "train.csv"), "--test", test_csv,
                 "--scale", "1/255", "--layers", "8:sigmoid,3:sigmoid",
                 "--loss", "binary-cross-entropy", "--init", "uniform", "--l2", "0.000370370370",
                 "--optimizer", "cg", "--max-iter", str(a.iterations), "--keep-best", a.keep_best,
                 "--seed", str(a.seed), "--metrics", metrics, "--out", model, "--quiet"])
            run([a.axon, "predict", "--model", model, "--data", test_csv, "--scale", "1/255",
                 "--out", predictions])
        costs = read_metrics(metrics)
        images, labels = read_images(test_csv)
        predicted = read_predictions(predictions)
        if len(predicted) != len(images):
            fail("%s has %d predictions for the %d rows of %s"
                 % (predictions, len(predicted), len(images), test_csv))
        total = len(images)
        shown = sorted({k * total // a.count for k in range(min(a.count, total))})
        images = [images[k] for k in shown]
        labels = [labels[k] for k in shown]
        predicted = [predicted[k] for k in shown]

        cost_file = os.path.join(work, "costs.dat")
        with open(cost_file, "w") as stream:
            for epoch, train_cost, test_cost in costs:
                stream.write("%d %.10g %.10g\n" % (epoch, train_cost, test_cost))
        finite = [c for c in costs if c[2] == c[2]]
        best = min(finite, key=lambda c: c[2]) if finite else None
        mosaic_file = os.path.join(work, "mosaic.dat")
        width, height = write_mosaic(mosaic_file, images, a.columns)

        wrong = sum(1 for t, g in zip(labels, predicted) if t != g)
        script = [
            "set terminal pngcairo size 1000,%d font 'sans,10'" % (430 + int(height * 1000 / width)),
            "set output '%s'" % os.path.abspath(a.out).replace("'", "''"),
            "set multiplot",
            # top: the costs
            "set origin 0,%g; set size 1,%g" % (1 - 420.0 / (430 + height * 1000 / width),
                                                420.0 / (430 + height * 1000 / width)),
            "set title 'galaxy 1024-8-3, full-batch CG: cost per iteration'",
            "set xlabel 'iteration'; set ylabel 'cost'; set grid; set key top right",
        ]
        plots = ["'%s' using 1:2 with lines lw 2 title 'training cost'" % cost_file]
        if finite:
            plots.append("'%s' using 1:3 with lines lw 2 title 'test cost'" % cost_file)
            plots.append("'-' using 1:2 with points pt 7 ps 1.5 lc rgb 'black' "
                         "title 'lowest test cost (iteration %d)'" % best[0])
        script.append("plot " + ", ".join(plots))
        if finite:
            script += ["%d %.10g" % (best[0], best[2]), "e"]
        # bottom: the galaxies
        script += [
            "set origin 0,0; set size 1,%g" % (1 - 420.0 / (430 + height * 1000 / width)),
            "unset grid; unset xlabel; unset ylabel; unset key; unset tics; unset border",
            "unset colorbox; set palette grey",
            "set title '%d of the %d test galaxies, evenly spaced: predicted class "
            "(E, S, I); red = wrong, true class after the arrow (%d wrong)'"
            % (len(images), total, wrong),
            "set size ratio -1",
            "set xrange [-0.5:%g]; set yrange [%g:-0.5]" % (width - 0.5, height - 0.5),
            "set cbrange [0:255]",
        ]
        for k, (truth, guess) in enumerate(zip(labels, predicted)):
            top, left = (k // a.columns) * (SIDE + GAP_Y), (k % a.columns) * (SIDE + GAP_X)
            name = CLASSES[guess] if 0 <= guess < 3 else str(guess)
            if truth == guess:
                script.append("set label %d '%s' at %g,%g center front" %
                              (k + 1, name, left + SIDE / 2 - 0.5, top + SIDE + GAP_Y / 2 - 1))
            else:
                true_name = CLASSES[truth] if 0 <= truth < 3 else str(truth)
                script.append("set label %d '%s → %s' at %g,%g center front tc rgb 'red'" %
                              (k + 1, name, true_name, left + SIDE / 2 - 0.5,
                               top + SIDE + GAP_Y / 2 - 1))
                script.append("set object %d rect from %g,%g to %g,%g front fs empty "
                              "border rgb 'red' lw 2" %
                              (k + 1, left - 1, top - 1, left + SIDE, top + SIDE))
        script.append("plot '%s' matrix with image" % mosaic_file)
        script.append("unset multiplot")
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        plot_file = os.path.join(work, "picture.gp")
        with open(plot_file, "w") as stream:
            stream.write("\n".join(script) + "\n")
        run(["gnuplot", plot_file])
        print("wrote %s: %d iterations, %d of %d galaxies shown misclassified"
              % (a.out, len(costs), wrong, len(images)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
