#!/usr/bin/python3
"""sklearn_compare.py: fit time and accuracy of axon.sklearn.MLPClassifier against
scikit-learn's own (Debian's 1.2) at the same settings, each fit in a fresh process:

  b1      MLPClassifier(hidden_layer_sizes=(128, 128), solver="adam", batch_size=128,
          max_iter=5) on Fashion-MNIST (60,000 rows; test accuracy on the 10,000 test rows)
  galaxy  MLPClassifier(hidden_layer_sizes=(8,), activation="logistic", solver="lbfgs",
          max_iter=200) on the galaxy set (2,700 rows of 1,024 pixels / 255; 675 test rows):
          the galaxy classifier's 1024-8-3 network

Three contenders per workload and seed:
  sklearn          scikit-learn as Debian installs it: NumPy's OpenBLAS picks its own kernels
                   (Debian 12's OpenBLAS 0.3.21 does not know every CPU; `kernels` says which)
  sklearn-coretype the same with OPENBLAS_CORETYPE set to the core that fits the CPU (what
                   axon's package sets for itself): scikit-learn at its BLAS's best
  axon             axon.sklearn.MLPClassifier (axon imported first, as docs/python.md asks)
Fit time only (the data are loaded before the clock starts). The machine may be shared:
record `uptime` with the figures (the script prints it before and after).

--dtype float64 hands every contender the data as a typical user has them after
`X / 255.0`: float64. scikit-learn then computes in float64 (with float32 data it
computes in float32); axon converts them to float32 once (its precision stays float32)
before training, inside the timed fit. --max-iter N runs the galaxy fit for N L-BFGS
iterations instead of 200 (docs/notes/python-sklearn.md: both overfit past about 150).

  /usr/bin/python3 bench/sklearn_compare.py [--workloads b1,galaxy] [--seeds 0,1,2]
      [--contenders sklearn,sklearn-coretype,axon] [--threads N] [--dtype float32|float64]
      [--max-iter N]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

CHILD = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
contender, workload, seed, repo, galaxy, dtype, max_iter = sys.argv[1:8]
seed, max_iter = int(seed), int(max_iter)
if contender == "axon":
    sys.path.insert(0, os.path.join(repo, "python"))
    import axon
    from axon.sklearn import MLPClassifier
else:
    from sklearn.neural_network import MLPClassifier
import numpy as np
import threadpoolctl
def idx(kind, part):
    import gzip
    base = os.environ.get("AXON_DATASETS", "/usr/share/datasets") + "/fashion-mnist/"
    name = base + f"{part}-{kind}-idx{3 if kind == 'images' else 1}-ubyte"
    opener = gzip.open if os.path.exists(name + ".gz") else open
    with opener(name + (".gz" if os.path.exists(name + ".gz") else ""), "rb") as f:
        data = f.read()
    if kind == "images":
        pixels = np.frombuffer(data, np.uint8, offset=16).reshape(-1, 784)
        if dtype == "float64":
            return pixels / 255.0
        return (pixels / np.float32(255)).astype(np.float32)
    return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)
def csv(name):
    a = np.loadtxt(os.path.join(galaxy, name), delimiter=",", dtype=np.float32)
    if dtype == "float64":
        return a[:, 1:].astype(np.float64) / 255.0, a[:, 0].astype(np.int64)
    return (a[:, 1:] / np.float32(255)).astype(np.float32), a[:, 0].astype(np.int64)
if workload == "b1":
    X, y, Xt, yt = idx("images", "train"), idx("labels", "train"), idx("images", "t10k"), idx("labels", "t10k")
    model = MLPClassifier(hidden_layer_sizes=(128, 128), solver="adam", batch_size=128,
                          max_iter=5, random_state=seed)
else:
    (X, y), (Xt, yt) = csv("train.csv"), csv("test.csv")
    model = MLPClassifier(hidden_layer_sizes=(8,), activation="logistic", solver="lbfgs",
                          max_iter=max_iter, random_state=seed)
start = time.perf_counter()
model.fit(X, y)
seconds = time.perf_counter() - start
blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({"contender": contender, "workload": workload, "seed": seed, "dtype": str(X.dtype),
                  "seconds": seconds, "iterations": model.n_iter_, "loss": float(model.loss_),
                  "accuracy": model.score(Xt, yt),
                  "kernels": ",".join(sorted({str(i.get("architecture")) for i in blas})),
                  "threads": ",".join(sorted({str(i.get("num_threads")) for i in blas}))}))
"""


def best_core():
    sys.path.insert(0, os.path.join(REPO, "python"))
    from axon._lib import _best_openblas_core  # noqa: only the CPU check, no library needed
    return _best_openblas_core()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="b1,galaxy")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--contenders", default="sklearn,sklearn-coretype,axon")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS/OPENBLAS_NUM_THREADS for every contender")
    parser.add_argument("--galaxy", default=os.path.join(REPO, "build", "data", "galaxy"))
    parser.add_argument("--json", help="also write the results here, one JSON object a line")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                        help="the data handed to fit: float32 (default) or float64, as after "
                        "X / 255.0 (scikit-learn then computes in float64; axon converts to "
                        "float32)")
    parser.add_argument("--max-iter", type=int, default=200,
                        help="L-BFGS iterations of the galaxy fit (default 200)")
    args = parser.parse_args()
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if args.dtype == "float64":
        print("data: float64 (X / 255.0): scikit-learn computes in float64; axon converts the "
              "data to float32 once, inside the timed fit, and computes in float32")
    results = []
    for workload in args.workloads.split(","):
        for seed in args.seeds.split(","):
            for contender in args.contenders.split(","):
                env = dict(os.environ)
                if args.threads:
                    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(args.threads)
                if contender == "sklearn-coretype":
                    env["OPENBLAS_CORETYPE"] = best_core() or ""
                run = subprocess.run([sys.executable, "-c", CHILD, contender.split("-")[0]
                                      if contender != "axon" else "axon", workload, seed, REPO,
                                      args.galaxy, args.dtype, str(args.max_iter)],
                                     env=env, capture_output=True, text=True)
                if run.returncode != 0:
                    sys.exit(f"sklearn_compare: {contender} {workload} failed:\n{run.stderr}")
                result = json.loads(run.stdout.strip().splitlines()[-1])
                result["contender"] = contender
                results.append(result)
                print(f"{workload:7s} seed {seed}  {contender:17s} {result['seconds']:8.2f} s  "
                      f"{result['iterations']:4d} iterations  "
                      f"{result['seconds'] / result['iterations']:7.3f} s/iteration  "
                      f"loss {result['loss']:.4f}  test accuracy {100 * result['accuracy']:.2f}%"
                      f"  ({result['dtype']}, BLAS kernels {result['kernels']}, "
                      f"threads {result['threads']})",
                      flush=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    for workload in args.workloads.split(","):
        by = {}
        for r in results:
            if r["workload"] == workload:
                by.setdefault(r["contender"], []).append(r)
        if "axon" not in by:
            continue
        mean = lambda rs, key: sum(r[key] for r in rs) / len(rs)  # noqa: E731
        for other in [c for c in by if c != "axon"]:
            print(f"{workload}: axon fits {mean(by[other], 'seconds') / mean(by['axon'], 'seconds'):.1f}x "
                  f"faster than {other} ({mean(by[other], 'seconds') / mean(by[other], 'iterations') / (mean(by['axon'], 'seconds') / mean(by['axon'], 'iterations')):.1f}x per iteration); "
                  f"mean test accuracy {100 * mean(by['axon'], 'accuracy'):.2f}% vs "
                  f"{100 * mean(by[other], 'accuracy'):.2f}% over {len(by['axon'])} seed(s)")
    if args.json:
        with open(args.json, "w") as out:
            for r in results:
                out.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
