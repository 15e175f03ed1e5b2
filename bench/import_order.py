#!/usr/bin/env python3
"""import_order.py: the fit of issue 29 (784-128-128-10, Adam, batch 128, 2 threads
held) timed in fresh processes with axon imported first and with scikit-learn first,
orders alternating, ROUNDS rounds, with no GOMP_SPINCOUNT in the environment (as a
user has it); prints the seconds and the ratio of the least
times. A measurement, not a test: on a busy 2-core machine one run in four can be
3x off its pair (the suite's timed version failed that way), so no verdict lives in
the suite. Run with the build's environment as python_tests has it:
    AXON_LIBRARY=build/libaxon.so.0.1.0 /usr/bin/python3 bench/import_order.py [ROUNDS [THREADS]]
THREADS: 2 held (the default), or 0 for axon's own choice (the thread governor)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
from test_import_order import run  # noqa: E402

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2  # 0: axon's default (the governor)
seconds = {"axon-first": [], "sklearn-first": []}
for _ in range(rounds):
    for order in seconds:
        # as a user has it: no GOMP_SPINCOUNT in the environment, so with scikit-learn
        # first libgomp keeps its own spin count (and axon warns)
        seconds[order].append(run(order, 20000, 2, threads, env={"GOMP_SPINCOUNT": None},
                                  strict=False)["seconds"])
least = {order: min(times) for order, times in seconds.items()}
print("seconds per order:", seconds)
print(f"ratio of the least times (sklearn-first / axon-first): "
      f"{least['sklearn-first'] / least['axon-first']:.2f}")
