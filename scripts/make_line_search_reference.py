#!/usr/bin/env python3
"""make_line_search_reference.py: the trial steps SciPy's line searches take
on Moré and Thuente's six test functions (ACM TOMS 20, 1994, section 5),
written to tests/data/line_search_reference.txt for test_line_search.

  mt NAME ALPHA1 C1 C2 COUNT STEP...      MINPACK-2's dcsrch as SciPy 1.10's
                                          scalar_search_wolfe1 drives it
                                          (minpack2.dcsrch, xtol 1e-14,
                                          steps in [1e-100, 1e100])
  nw NAME ALPHA1 C1 C2 FOUND COUNT STEP...  scalar_search_wolfe2 (Nocedal and
                                          Wright's algorithms 3.5 and 3.6);
                                          FOUND 0 when it returns None

The steps are the points where each search evaluated the function, in order
(float64, %.17g). SciPy's wolfe2 starts at step 1, so a start ALPHA1 is run
as the function phi(ALPHA1 a) and its steps scaled back. Only the nw cases
where SciPy's choices are axon's are listed (axon's zoom safeguards by the
interval's width where SciPy multiplies by its signed length, and its
bracketing fails where SciPy's returns its last step after 10 doublings);
they include the cases where a zoom step meets sufficient decrease with a
slope still steeply negative (f3 from 0.1, f6 from 0.1, 0.3 and 100), which
only the strong Wolfe test |phi'| <= c2 |phi'(0)| rejects.

Usage: /usr/bin/python3 scripts/make_line_search_reference.py > tests/data/line_search_reference.txt
"""
import math
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")  # minpack2's namespace is deprecated
from scipy.optimize import minpack2  # noqa: E402
from scipy.optimize.linesearch import scalar_search_wolfe2  # noqa: E402


def f1(a, beta=2.0):
    return -a / (a * a + beta), (a * a - beta) / (a * a + beta) ** 2


def f2(a, beta=0.004):
    return (a + beta) ** 5 - 2 * (a + beta) ** 4, 5 * (a + beta) ** 4 - 8 * (a + beta) ** 3


def f3(a, beta=0.01, l=39):
    if a <= 1 - beta:
        p0, d0 = 1 - a, -1.0
    elif a >= 1 + beta:
        p0, d0 = a - 1, 1.0
    else:
        p0, d0 = (a - 1) ** 2 / (2 * beta) + beta / 2, (a - 1) / beta
    return (p0 + 2 * (1 - beta) / (l * math.pi) * math.sin(l * math.pi * a / 2),
            d0 + (1 - beta) * math.cos(l * math.pi * a / 2))


def yanai_ozawa_kaneko(b1, b2):
    def gamma(b):
        return math.sqrt(1 + b * b) - b

    def f(a):
        s1, s2 = math.sqrt((1 - a) ** 2 + b2 * b2), math.sqrt(a * a + b1 * b1)
        return gamma(b1) * s1 + gamma(b2) * s2, -gamma(b1) * (1 - a) / s1 + gamma(b2) * a / s2
    return f


# name: (function, c1 (ftol), c2 (gtol)) as in the paper's tables 1 to 6
FUNCTIONS = {"f1": (f1, 1e-3, 0.1), "f2": (f2, 0.1, 0.1), "f3": (f3, 0.1, 0.1),
             "f4": (yanai_ozawa_kaneko(0.001, 0.001), 0.001, 0.001),
             "f5": (yanai_ozawa_kaneko(0.01, 0.001), 0.001, 0.001),
             "f6": (yanai_ozawa_kaneko(0.001, 0.01), 0.001, 0.001)}
MT_STARTS = (1e-3, 1e-1, 1e1, 1e3)  # the paper's
NW_CASES = (("f1", 0.1), ("f1", 1e3), ("f3", 0.1), ("f3", 100.0), ("f4", 1e-3), ("f4", 10.0),
            ("f5", 1e-3), ("f6", 0.1), ("f6", 0.3), ("f6", 100.0))


def dcsrch_steps(fn, alpha1, c1, c2):
    phi0, derphi0 = fn(0.0)
    isave, dsave = np.zeros((2,), np.intc), np.zeros((13,), float)
    task, stp, f, g, steps = b"START", alpha1, phi0, derphi0, []
    for _ in range(100):
        stp, f, g, task = minpack2.dcsrch(stp, f, g, c1, c2, 1e-14, task, 1e-100, 1e100, isave,
                                          dsave)
        if task[:2] != b"FG":
            break
        steps.append(stp)
        f, g = fn(stp)
    assert task.startswith(b"CONVERGENCE"), task
    return steps


def wolfe2_steps(fn, alpha1, c1, c2):
    steps = []

    def phi(a):
        steps.append(a * alpha1)
        return fn(a * alpha1)[0]

    def derphi(a):
        return fn(a * alpha1)[1] * alpha1

    phi0, derphi0 = fn(0.0)
    alpha = scalar_search_wolfe2(phi, derphi, phi0, None, derphi0 * alpha1, c1, c2, amax=1e100)[0]
    return alpha is not None, steps


def main():
    out = sys.stdout
    out.write("# scripts/make_line_search_reference.py (SciPy %s, NumPy %s)\n"
              % (__import__("scipy").__version__, np.__version__))
    for name, (fn, c1, c2) in FUNCTIONS.items():
        for alpha1 in MT_STARTS:
            steps = dcsrch_steps(fn, alpha1, c1, c2)
            out.write("mt %s %.17g %.17g %.17g %d %s\n" % (name, alpha1, c1, c2, len(steps),
                                                           " ".join("%.17g" % s for s in steps)))
    for name, alpha1 in NW_CASES:
        fn, c1, c2 = FUNCTIONS[name]
        found, steps = wolfe2_steps(fn, alpha1, c1, c2)
        out.write("nw %s %.17g %.17g %.17g %d %d %s\n" % (name, alpha1, c1, c2, int(found),
                                                          len(steps),
                                                          " ".join("%.17g" % s for s in steps)))


if __name__ == "__main__":
    main()
