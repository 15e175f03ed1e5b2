#!/usr/bin/python3
"""galaxy_lbfgs_paths.py: the paths of the galaxy fit's L-BFGS, iteration by iteration,
for axon.sklearn and scikit-learn from the same initial weights, and with each side's
optimizer swapped, to tell what makes their test accuracies differ
(docs/notes/python-sklearn.md, "Galaxy: why axon's accuracy is 4 points above").

The fit: MLPClassifier(hidden_layer_sizes=(8,), activation="logistic", solver="lbfgs",
alpha=1e-4) on the galaxy set (2,700 x 1,024 pixels / 255 as float32; 675 test rows).
After every iteration the weights are kept and scored afterwards in float64 NumPy:
scikit-learn's objective (log loss + alpha ||W||^2 / (2 n)), training and test accuracy.

Contenders (each in a fresh process):
  axon          axon.sklearn.MLPClassifier (float32)
  sklearn       scikit-learn's MLPClassifier (SciPy's L-BFGS-B)
  scipy-on-axon SciPy's L-BFGS-B minimising axon's float32 objective (ax_net_loss_gradient)
  numpy-axon    axon's algorithm in float64 NumPy over scikit-learn's objective: two-loop
                recursion, memory 10, H0 = s.y/y.y, SciPy's _line_search_wolfe12 (Moré-Thuente,
                then Wolfe-2, as src/optim/line_search.c) with c1 1e-4, c2 0.9
  numpy-wolfe2  the same with SciPy's line_search_wolfe2 alone

  /usr/bin/python3 bench/galaxy_lbfgs_paths.py [--seeds 0,1,2] [--max-iter 300]
      [--contenders axon,sklearn,scipy-on-axon,numpy-axon,numpy-wolfe2]
"""
import argparse
import json
import os
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ALPHA = 1e-4


def load(galaxy):
    import numpy as np

    def csv(name):
        a = np.loadtxt(os.path.join(galaxy, name), delimiter=",", dtype=np.float32)
        return (a[:, 1:] / np.float32(255)).astype(np.float32), a[:, 0].astype(np.int64)
    return csv("train.csv") + csv("test.csv")


def initial(seed):
    """scikit-learn's initial weights (Glorot uniform, factor 2 for logistic), packed as
    its _pack does: coefs then intercepts."""
    import numpy as np
    rs = np.random.RandomState(seed)
    coefs, intercepts = [], []
    for fan_in, fan_out in ((1024, 8), (8, 3)):
        bound = np.sqrt(2.0 / (fan_in + fan_out))
        coefs.append(rs.uniform(-bound, bound, (fan_in, fan_out)))
        intercepts.append(rs.uniform(-bound, bound, fan_out))
    return coefs, intercepts


def unpack(x):
    return [x[:8192].reshape(1024, 8), x[8192:8216].reshape(8, 3)], [x[8216:8224], x[8224:8227]]


def pack(coefs, intercepts):
    import numpy as np
    return np.hstack([p.ravel() for p in coefs + intercepts]).astype(np.float64)


def forward(coefs, intercepts, X):
    import numpy as np
    a = 1 / (1 + np.exp(-(X @ coefs[0] + intercepts[0])))
    z = a @ coefs[1] + intercepts[1]
    z = np.exp(z - z.max(1, keepdims=True))
    return a, z / z.sum(1, keepdims=True)


def objective_gradient(x, X, y, Y):
    """scikit-learn's objective and its gradient in float64, packed as x."""
    import numpy as np
    (W1, W2), (b1, b2) = unpack(x)
    n = len(X)
    a, p = forward([W1, W2], [b1, b2], X)
    loss = -np.log(p[np.arange(n), y]).mean() + 0.5 * ALPHA * ((W1 ** 2).sum() + (W2 ** 2).sum()) / n
    d2 = (p - Y) / n
    d1 = (d2 @ W2.T) * a * (1 - a)
    return loss, np.hstack([(X.T @ d1 + ALPHA * W1 / n).ravel(), (a.T @ d2 + ALPHA * W2 / n).ravel(),
                            d1.sum(0), d2.sum(0)])


def numpy_lbfgs(x, X, y, max_iter, line_search_kind, snapshots):
    import numpy as np
    from scipy.optimize import line_search
    from scipy.optimize._optimize import _line_search_wolfe12
    Y = np.eye(3)[y]
    cache = {}

    def evaluate(z):
        key = z.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = objective_gradient(z, X, y, Y)
        return cache[key]
    f = lambda z: evaluate(z)[0]  # noqa: E731
    g = lambda z: evaluate(z)[1]  # noqa: E731
    fx, gx = evaluate(x)
    f_previous = fx + np.linalg.norm(gx) / 2  # fmin_cg's first trial step
    S, Yp = [], []
    for _ in range(max_iter):
        q, coefficients = gx.copy(), []
        for s, v in reversed(list(zip(S, Yp))):
            a = s @ q / (v @ s)
            coefficients.append(a)
            q -= a * v
        if S:
            q *= (S[-1] @ Yp[-1]) / (Yp[-1] @ Yp[-1])
        for (s, v), a in zip(zip(S, Yp), reversed(coefficients)):
            q += s * (a - v @ q / (v @ s))
        d = -q
        old_old = f_previous if not S else None
        try:
            if line_search_kind == "wolfe12":
                step = _line_search_wolfe12(f, g, x, d, gx, fx, old_old if old_old is not None
                                            else fx + 1e300, c1=1e-4, c2=0.9, amin=1e-100,
                                            amax=1e100)[0]
            else:
                step = line_search(f, g, x, d, gfk=gx, old_fval=fx, old_old_fval=old_old,
                                   c1=1e-4, c2=0.9, maxiter=100)[0]
        except Exception:  # SciPy's _LineSearchError: no Wolfe point
            step = None
        if step is None:
            break
        x_new = x + step * d
        f_new, g_new = evaluate(x_new)
        s, v = x_new - x, g_new - gx
        if s @ v > 0:
            S.append(s)
            Yp.append(v)
            if len(S) > 10:
                S.pop(0)
                Yp.pop(0)
        f_previous, x, fx, gx = fx, x_new, f_new, g_new
        snapshots.append(x.copy())


def child(contender, seed, max_iter, galaxy):
    warnings.simplefilter("ignore")
    snapshots = []
    if contender in ("axon", "scipy-on-axon"):
        sys.path.insert(0, os.path.join(REPO, "python"))
        import axon  # noqa: F401  (before NumPy: docs/python.md)
    import numpy as np
    X, y, Xt, yt = load(galaxy)
    coefs, intercepts = initial(seed)
    if contender == "axon":
        from axon.sklearn import MLPClassifier, _Stopper
        original = _Stopper.__call__

        def keep(self, info):
            go_on = original(self, info)
            if info["epoch_done"]:
                c, b = self.e._weights_from(self.net)
                snapshots.append(pack(c, b))
            return go_on
        _Stopper.__call__ = keep
        MLPClassifier(hidden_layer_sizes=(8,), activation="logistic", solver="lbfgs",
                      alpha=ALPHA, tol=0, max_iter=max_iter, random_state=seed).fit(X, y)
    elif contender == "sklearn":
        import sklearn.neural_network._multilayer_perceptron as mlp
        original = mlp.scipy.optimize.minimize

        def minimize(*args, **kwargs):
            kwargs["callback"] = lambda xk: snapshots.append(xk.astype(np.float64))
            return original(*args, **kwargs)
        mlp.scipy.optimize.minimize = minimize
        mlp.MLPClassifier(hidden_layer_sizes=(8,), activation="logistic", solver="lbfgs",
                          alpha=ALPHA, tol=0, max_iter=max_iter, max_fun=10 ** 7,
                          random_state=seed).fit(X, y)
    elif contender == "scipy-on-axon":
        import ctypes

        import scipy.optimize
        from axon import _lib
        from axon._lib import lib
        lib.ax_net_loss_gradient.restype = ctypes.c_int
        lib.ax_net_loss_gradient.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
            ctypes.POINTER(_lib.Regularization), ctypes.POINTER(ctypes.c_double),
            ctypes.POINTER(ctypes.c_double)]
        net = axon.Net(1024, [(8, "sigmoid"), (3, "softmax")], loss="cross-entropy")
        net.set_weights([(W.T, b) for W, b in zip(coefs, intercepts)])
        data = net._dataset((X, y.astype(np.int32)), "X")
        regularization = _lib.regularization()  # sized, the library's defaults
        regularization.l2 = ALPHA / len(X)

        def to_axon(x):  # scikit-learn's packing to axon's arena ([W (out, in), b] a layer)
            c, b = unpack(x)
            net.set_weights([(W.T, bias) for W, bias in zip(c, b)])

        def from_axon(gradient):
            out, at = [], 0
            for fan_in, fan_out in ((1024, 8), (8, 3)):
                out.append(gradient[at:at + fan_in * fan_out].reshape(fan_out, fan_in).T)
                at += fan_in * fan_out
                out.append(gradient[at:at + fan_out])
                at += fan_out
            return pack([out[0], out[2]], [out[1], out[3]])

        def f(x):
            to_axon(x)
            loss, gradient = ctypes.c_double(), np.empty(net.parameter_count)
            _lib.check(lib.ax_net_loss_gradient(
                net._net(), data._handle, 0, len(X), ctypes.byref(regularization),
                ctypes.byref(loss), gradient.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
            return loss.value, from_axon(gradient)
        scipy.optimize.minimize(f, pack(coefs, intercepts), jac=True, method="L-BFGS-B",
                                callback=lambda xk: snapshots.append(xk.copy()),
                                options=dict(maxiter=max_iter, maxfun=10 ** 7, gtol=0))
    else:
        numpy_lbfgs(pack(coefs, intercepts), X.astype(np.float64), y, max_iter,
                    "wolfe12" if contender == "numpy-axon" else "wolfe2", snapshots)
    Xd, Xtd, Y = X.astype(np.float64), Xt.astype(np.float64), np.eye(3)[y]
    rows = []
    for i, x in enumerate(snapshots):
        c, b = unpack(x)
        loss = objective_gradient(x, Xd, y, Y)[0]
        train = (forward(c, b, Xd)[1].argmax(1) == y).mean()
        test = (forward(c, b, Xtd)[1].argmax(1) == yt).mean()
        rows.append([i + 1, float(loss), float(train), float(test)])
    print(json.dumps(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--contenders",
                        default="axon,sklearn,scipy-on-axon,numpy-axon,numpy-wolfe2")
    parser.add_argument("--galaxy", default=os.path.join(REPO, "build", "data", "galaxy"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.max_iter, args.galaxy)
        return
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    marks = [i for i in (10, 50, 100, 150, 200, 300, 600, 1000) if i <= args.max_iter]
    print("objective / test accuracy % at iterations " + ", ".join(map(str, marks)) +
          "; test accuracy % (at iteration) where the objective first falls below "
          "0.70, 0.65, 0.60; the best test accuracy (iteration)")
    for seed in args.seeds.split(","):
        for contender in args.contenders.split(","):
            run = subprocess.run([sys.executable, __file__, "--child", contender, seed,
                                  "--max-iter", str(args.max_iter), "--galaxy", args.galaxy],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"galaxy_lbfgs_paths: {contender} seed {seed} failed:\n{run.stderr}")
            rows = json.loads(run.stdout.strip().splitlines()[-1])
            cells = [f"{rows[i - 1][1]:.3f}/{100 * rows[i - 1][3]:.1f}" if i <= len(rows)
                     else "-" for i in marks]
            levels = []
            for level in (0.70, 0.65, 0.60):
                hit = next((r for r in rows if r[1] <= level), None)
                levels.append(f"{100 * hit[3]:.1f}({hit[0]})" if hit else "-")
            best = max(rows, key=lambda r: r[3])
            print(f"seed {seed} {contender:14s} " + " ".join(cells) + " | " + " ".join(levels) +
                  f" | best {100 * best[3]:.1f}({best[0]})", flush=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
