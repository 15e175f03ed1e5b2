"""sparse_fit.py: MLPClassifier on scipy.sparse X against the same matrix dense.

    AXON_LIBRARY=build/libaxon.so /usr/bin/python3 bench/sparse_fit.py [--rounds 5]

MLPClassifier((64,), adam, batch 200, 5 epochs) on 20,000 x 2,000 rows at 2 % density
(values from scipy.sparse.random, labels from two random projections): axon on the dense
float32 matrix, axon on the CSR matrix (each batch made dense by the library, the whole
set never: ax_dataset_wrap_csr) and scikit-learn's own MLPClassifier on the CSR matrix,
alternated within each round; prints each round's seconds, whether axon's two fits reached
the same coefs_ bit for bit, and the medians of the per-round ratios. Run peers with
OPENBLAS_CORETYPE unset; the machine's load (uptime) goes with the figures.
"""
import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import axon.sklearn  # noqa: E402  (axon first: docs/python.md)
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--rounds", type=int, default=5)
args = parser.parse_args()
warnings.filterwarnings("ignore")  # max_iter is short on purpose
rng = np.random.default_rng(0)
rows, features = 20000, 2000
S = sp.random(rows, features, density=0.02, format="csr", dtype=np.float32, random_state=1)
y = (S @ rng.normal(size=features) > 0).astype(int) + (S @ rng.normal(size=features) > 0.3)
X = S.toarray()
options = dict(hidden_layer_sizes=(64,), solver="adam", batch_size=200, max_iter=5,
               random_state=0)


def timed(estimator, data):
    start = time.perf_counter()
    model = estimator(**options).fit(data, y)
    return time.perf_counter() - start, model


rounds = []
for r in range(args.rounds):
    dense_s, dense = timed(axon.sklearn.MLPClassifier, X)
    sparse_s, sparse = timed(axon.sklearn.MLPClassifier, S)
    sklearn_s, _ = timed(MLPClassifier, S)
    same = all(np.array_equal(a, b) for a, b in zip(dense.coefs_, sparse.coefs_))
    rounds.append((dense_s, sparse_s, sklearn_s))
    print(f"round {r}: axon dense {dense_s:.3f} s, axon sparse {sparse_s:.3f} s, "
          f"scikit-learn sparse {sklearn_s:.3f} s, coefs_ equal {same}")
print(f"median axon sparse / axon dense: {np.median([s / d for d, s, _ in rounds]):.2f}; "
      f"median scikit-learn sparse / axon sparse: {np.median([k / s for _, s, k in rounds]):.2f}")
