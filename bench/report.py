#!/usr/bin/python3
"""Turns the CSV written by bench/compare.sh into bench/results/report.md (mean and
standard deviation over repeats per system, variant and workload, and each system's
speed against the best peer) and gnuplot PNGs beside it:
  time.png          time per workload per system, bars with standard deviation
  loss.png          training loss against epoch, B1(a) and B1(b) (the Fashion-MNIST MLP), per system
  gflops_batch.png  B2 GFLOP/s against batch size, width 256 (TMVA's regression)
  gflops_width.png  B2 GFLOP/s against width, batch 1024 (TMVA's regression)

A run is the rows of one (system, variant, workload, precision, threads, batch, width,
repeat): one row per epoch, or one row with an empty epoch giving the whole run.

usage: report.py RESULTS.csv [--out DIR]   (DIR defaults to the CSV's folder)"""
import argparse
import csv
import os
import statistics
import subprocess
from collections import defaultdict

COLUMNS = ("system", "workload", "variant", "precision", "threads", "batch", "width", "repeat",
           "epoch", "seconds", "loss", "test_accuracy", "gflops", "samples_per_second")
CONFIG = ("workload", "precision", "threads", "batch", "width")
TITLES = {"b1a": "B1(a) mnist-mlp, mini-batch SGD", "b1b": "B1(b) mnist-mlp, full batch",
          "b2": "B2 tmva-dnn, synthetic regression",
          "galaxy-cg": "B3 galaxy 1024-8-3, full-batch CG (Python original: NumPy + fmin_cg)",
          "lenet": "LeNet conv 32 5x5, pool, conv 64 5x5, pool, 1024, 10 on Fashion-MNIST (issue 28)"}
ORDER = {"axon": 0, "torch": 1, "numpy": 2}
# An empty panel: gnuplot refuses to plot only undefined points, so draw a line
# below the visible range.
EMPTY_PLOT = "set yrange [0:1]\nplot [0:1] -1 notitle\nset yrange [0:*]"
COLORS = {"axon": "#1f77b4", "torch": "#d62728", "numpy": "#2ca02c"}


def num(text):
    return float(text) if text not in ("", None) else None


def read_rows(f):
    """The rows as dicts by column name. The header line is the first of a file that has one
    (compare.sh's, `axon bench --csv`'s); files of axon bench before it wrote one have none and
    get the columns in their order. Header lines met again (files concatenated) are skipped."""
    lines = [line for line in csv.reader(f) if line]
    header = tuple(lines[0]) if lines and lines[0][:1] == ["system"] else COLUMNS
    return [dict(zip(header, line)) for line in lines if line[:1] != ["system"]]


def collect_runs(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["system"], r["variant"]) + tuple(r[k] for k in CONFIG) + (r["repeat"],)].append(r)
    runs = []
    for key, rs in groups.items():
        whole = [r for r in rs if r["epoch"] == ""]
        epochs = sorted((r for r in rs if r["epoch"] != ""), key=lambda r: int(r["epoch"]))
        last = (whole or epochs)[-1]
        seconds = [num(r["seconds"]) for r in epochs]
        total = num(whole[0]["seconds"]) if whole else sum(seconds)
        def rate(column):  # per second over the whole run: weight each epoch by its time
            if whole:
                return num(whole[0][column])
            values = [num(r[column]) for r in epochs]
            return None if None in values else sum(v * s for v, s in zip(values, seconds)) / total
        runs.append(dict(zip(("system", "variant") + CONFIG, key), seconds=total,
                         epoch_seconds=total / max(len(epochs), 1), epochs=len(epochs) or None,
                         gflops=rate("gflops"), samples_per_second=rate("samples_per_second"),
                         loss=num(last["loss"]), test_accuracy=num(last["test_accuracy"]),
                         curve=[(int(r["epoch"]), num(r["loss"])) for r in epochs]))
    return runs


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else None


def summarise(runs):
    groups = defaultdict(list)
    for r in runs:
        groups[tuple(r[k] for k in ("system", "variant") + CONFIG)].append(r)
    summary = []
    for key, rs in groups.items():
        s = dict(zip(("system", "variant") + CONFIG, key), runs=len(rs), epochs=rs[0]["epochs"], all=rs)
        for column in ("seconds", "epoch_seconds", "gflops", "samples_per_second", "loss", "test_accuracy"):
            s[column] = mean_sd([r[column] for r in rs])
        summary.append(s)
    # Speed against the best peer: samples per second, so runs of different lengths compare.
    for s in summary:
        peers = [p for p in summary if p["system"] != "axon" and all(p[k] == s[k] for k in CONFIG)
                 and p["samples_per_second"][0]]
        best = max(peers, key=lambda p: p["samples_per_second"][0], default=None)
        s["best_peer"] = best
        s["ratio"] = s["samples_per_second"][0] / best["samples_per_second"][0] if best and s["samples_per_second"][0] else None
    summary.sort(key=lambda s: (s["workload"], s["precision"], int(s["threads"]), int(s["batch"]),
                                int(s["width"]), ORDER.get(s["system"], 9), s["variant"]))
    return summary


def cell(pair, digits=3):
    mean, sd = pair
    if mean is None:
        return ""
    return f"{mean:.{digits}g}" + (f" ± {sd:.2g}" if sd is not None else "")


def markdown(summary, source):
    lines = [f"# Benchmark comparison", "",
             f"Source: `{source}`. Mean ± standard deviation over repeats (rounds of "
             "bench/compare.sh, systems alternating within each round). GFLOP/s by TMVA's FLOP "
             "count (docs/notes/benchmarks.md). *vs best peer*: samples per second divided by those "
             "of the fastest peer (torch, numpy) on the same workload, precision, threads, "
             "batch and width; above 1 is faster.", ""]
    head = ("| system | variant | prec | threads | batch | width | runs | epochs | s/epoch | s/run "
            "| GFLOP/s | samples/s | final loss | test acc % | vs best peer |")
    for workload in sorted({s["workload"] for s in summary}):
        lines += [f"## {TITLES.get(workload, workload)} ({workload})", "", head, "|" + " --- |" * 15]
        for s in (s for s in summary if s["workload"] == workload):
            ratio = f"{s['ratio']:.2f}x" if s["ratio"] is not None else ""
            lines.append(f"| {s['system']} | {s['variant']} | {s['precision']} | {s['threads']} | {s['batch']} "
                         f"| {s['width']} | {s['runs']} | {s['epochs'] or ''} | {cell(s['epoch_seconds'])} "
                         f"| {cell(s['seconds'])} | {cell(s['gflops'])} | {cell(s['samples_per_second'])} "
                         f"| {cell(s['loss'])} | {cell(s['test_accuracy'], 4)} | {ratio} |")
        lines.append("")
    lines += ["## Plots", "", "![time](time.png)", "", "![loss](loss.png)", "",
              "![GFLOP/s against batch](gflops_batch.png)", "", "![GFLOP/s against width](gflops_width.png)", ""]
    return "\n".join(lines)


def label(s, summary):
    """System, plus the variant if the system has several, plus threads if they vary."""
    text = s["system"]
    if len({t["variant"] for t in summary if t["system"] == s["system"]}) > 1:
        text += f" {s['variant']}"
    if len({t["threads"] for t in summary}) > 1:
        text += f" {s['threads']}t"
    return text


def gnuplot(script, png):
    subprocess.run(["gnuplot"], input=f"set terminal pngcairo size 1300,520 font ',10'\nset output '{png}'\n"
                   + script, text=True, check=True)


def plot_time(summary, out):
    threads = max((s["threads"] for s in summary), key=int, default="1")
    panels = [("b1a", "f32", "128", "128", "B1(a): s per epoch", "epoch_seconds"),
              ("b1b", "f32", "60000", "128", "B1(b): s per run", "seconds"),
              ("b2", "f32", "1024", "256", "B2 f32 1024x256: s per epoch", "epoch_seconds"),
              ("b2", "f64", "1024", "256", "B2 f64 1024x256: s per epoch", "epoch_seconds"),
              ("galaxy-cg", "f64", "2700", "8", "B3 f64: s per run", "seconds")]
    script = [f"set multiplot layout 1,{len(panels)} title 'Time per workload ({threads} threads), "
              "mean and standard deviation over repeats'",
              "set style fill solid 0.8 border -1", "set boxwidth 0.6", "set yrange [0:*]",
              "set xtics rotate by -30", "unset key", "set grid ytics", "set ylabel 'seconds'"]
    for workload, precision, batch, width, title, column in panels:
        bars = [s for s in summary if (s["workload"], s["precision"], s["threads"]) == (workload, precision, threads)
                and (s["batch"], s["width"]) == (batch, width)]
        script.append(f"set title '{title}'")
        if not bars:
            script += ["set label 1 'not run' at graph 0.5, 0.5 center", EMPTY_PLOT, "unset label 1"]
            continue
        data = "\n".join(f'{i} "{label(s, summary)}" {s[column][0]} {s[column][1] or 0} '
                         f'0x{COLORS.get(s["system"], "#7f7f7f")[1:]}' for i, s in enumerate(bars))
        script += [f"$d << EOD\n{data}\nEOD", f"set xrange [-0.6:{len(bars) - 0.4}]",
                   "plot $d using 1:3:5:xtic(2) with boxes lc rgb variable, "
                   "'' using 1:3:4 with yerrorbars lc rgb 'black' pt 0"]
    gnuplot("\n".join(script) + "\nunset multiplot\n", f"{out}/time.png")


def series(summary, keep, x):
    """One line per system/variant/precision/threads: (label, points x mean sd)."""
    lines = defaultdict(list)
    for s in summary:
        if keep(s):
            lines[(label(s, summary) + f" {s['precision']}", s["system"], s["precision"])].append(s)
    return [(name, system, precision, sorted(((x(s),) + s["gflops"] for s in ss), key=lambda p: p[0]))
            for (name, system, precision), ss in sorted(lines.items(), key=lambda i: (ORDER.get(i[0][1], 9), i[0]))]


def plot_lines(lines, title, xlabel, ylabel, png, logx=False):
    script = [f"set title '{title}'", f"set xlabel '{xlabel}'", f"set ylabel '{ylabel}'",
              "set key outside right", "set grid", "set yrange [0:*]", "set offsets graph 0.05, graph 0.05, 0, 0"]
    if logx and lines:
        script.append("set logscale x 2")
    xs = sorted({x for *_, points in lines for x, _, _ in points})
    if xs:
        script.append("set xtics (" + ", ".join(str(x) for x in xs) + ")")
    plots = []
    for i, (name, system, precision, points) in enumerate(lines):
        data = "\n".join(f"{x} {m} {sd or 0}" for x, m, sd in points)
        script.append(f"$d{i} << EOD\n{data}\nEOD")
        plots.append(f"$d{i} using 1:2:3 with yerrorlines lw 2 pt 7 dt {1 if precision == 'f32' else 2} "
                     f"lc rgb '{COLORS.get(system, '#7f7f7f')}' title '{name}'")
    script.append("plot " + ", ".join(plots) if plots else "set label 'not run' at graph 0.5,0.5 center\n" + EMPTY_PLOT)
    gnuplot("\n".join(script) + "\n", png)


def plot_loss(summary, out):
    script = ["set multiplot layout 1,2 title 'Training loss against epoch, mean over repeats'",
              "set xlabel 'epoch'", "set ylabel 'training loss'", "set grid", "set key top right"]
    for workload in ("b1a", "b1b"):
        epochs = max((s["epochs"] or 1 for s in summary if s["workload"] == workload), default=1)
        script += [f"set title '{TITLES[workload]}'", f"set xtics {1 if epochs <= 10 else 5}"]
        plots = []
        for i, s in enumerate(s for s in summary if s["workload"] == workload and s["precision"] == "f32"):
            by_epoch = defaultdict(list)
            for run in s["all"]:
                for epoch, loss in run["curve"]:
                    by_epoch[epoch].append(loss)
            data = "\n".join(f"{e} {statistics.mean(v)}" for e, v in sorted(by_epoch.items()))
            script.append(f"${workload}{i} << EOD\n{data}\nEOD")
            plots.append(f"${workload}{i} using 1:2 with linespoints lw 2 pt 7 "
                         f"lc rgb '{COLORS.get(s['system'], '#7f7f7f')}' title '{label(s, summary)}'")
        script.append("plot " + ", ".join(plots) if plots else EMPTY_PLOT)
    gnuplot("\n".join(script) + "\nunset multiplot\n", f"{out}/loss.png")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--out")
    a = p.parse_args()
    out = a.out or os.path.dirname(os.path.abspath(a.csv))
    with open(a.csv) as f:
        summary = summarise(collect_runs(read_rows(f)))
    with open(f"{out}/report.md", "w") as f:
        f.write(markdown(summary, a.csv))
    plot_time(summary, out)
    plot_loss(summary, out)
    b2 = [s for s in summary if s["workload"] == "b2"]
    plot_lines(series(b2, lambda s: s["width"] == "256", lambda s: int(s["batch"])),
               "B2: GFLOP/s against batch size (width 256)", "batch size", "GFLOP/s", f"{out}/gflops_batch.png", True)
    plot_lines(series(b2, lambda s: s["batch"] == "1024", lambda s: int(s["width"])),
               "B2: GFLOP/s against hidden width (batch 1024)", "hidden layer width", "GFLOP/s", f"{out}/gflops_width.png")
    print(f"report: {out}/report.md, time.png, loss.png, gflops_batch.png, gflops_width.png")


if __name__ == "__main__":
    main()
