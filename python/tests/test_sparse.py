"""test_sparse.py: scipy.sparse X trains and predicts as the dense matrix does (issue 29).

Proves: MLPClassifier (adam, sgd with early stopping, lbfgs) and MLPRegressor (two outputs)
fitted on CSR, CSC and COO matrices (int64 indices, float32 or float64 values) reach coefs_
equal to the dense fit's bit for bit and predict the same bits, also across the library's
4096-row prediction chunks; partial_fit likewise; Net.train / Net.predict / Net.evaluate
on sparse X equal the dense ones; the library reads the matrix's own arrays (no copy of a
float32, int32 CSR); a set whose dense form would be 1 GB trains and predicts in a process
whose peak memory stays far below that; and float64 networks refuse sparse X naming why.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import axon
import axon.sklearn

sp = pytest.importorskip("scipy.sparse")


def sparse_data(rows=300, features=40, seed=0, density=0.15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features))
    X[rng.random(X.shape) > density] = 0.0
    y = (X[:, :6].sum(axis=1) > 0).astype(int) + (X[:, 6] > 0.2)
    return X, y


def same_weights(a, b):
    return all(np.array_equal(p, q) for p, q in zip(a.coefs_ + a.intercepts_,
                                                   b.coefs_ + b.intercepts_))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver, early_stopping, form", [
    ("adam", False, "csr"), ("sgd", True, "csc"), ("lbfgs", False, "coo")])
def test_classifier_fits_as_on_dense(solver, early_stopping, form):
    X, y = sparse_data()
    S = sp.csr_matrix(X).asformat(form)
    if form == "csc":  # other index and value types than the library's
        S = S.astype(np.float32)
        S.indices = S.indices.astype(np.int64)
    X_ref = S.toarray()  # the same values the sparse matrix holds
    options = dict(hidden_layer_sizes=(12,), solver=solver, max_iter=15, random_state=4,
                   early_stopping=early_stopping)
    dense = axon.sklearn.MLPClassifier(**options).fit(X_ref, y)
    sparse = axon.sklearn.MLPClassifier(**options).fit(S, y)
    assert dense.n_iter_ == sparse.n_iter_
    assert same_weights(dense, sparse)
    assert dense.loss_curve_ == sparse.loss_curve_
    assert np.array_equal(dense.predict_proba(X_ref), sparse.predict_proba(S))
    assert np.array_equal(dense.predict_proba(X_ref), dense.predict_proba(sp.csr_matrix(X_ref)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_regressor_and_partial_fit_as_on_dense():
    X, _ = sparse_data(seed=1)
    Y = X @ np.random.default_rng(2).normal(size=(X.shape[1], 2))
    dense = axon.sklearn.MLPRegressor((10,), max_iter=10, random_state=3).fit(X, Y)
    sparse = axon.sklearn.MLPRegressor((10,), max_iter=10, random_state=3).fit(sp.csr_matrix(X), Y)
    assert same_weights(dense, sparse)
    assert np.array_equal(dense.predict(X), sparse.predict(sp.csr_matrix(X)))
    for _ in range(3):
        dense.partial_fit(X, Y)
        sparse.partial_fit(sp.csr_matrix(X), Y)
    assert same_weights(dense, sparse)


def test_net_train_predict_evaluate_as_on_dense():
    X, y = sparse_data(rows=9000, features=30, seed=5)  # prediction in 4096-row chunks
    X = X.astype(np.float32)
    S = sp.csr_matrix(X)
    results = []
    for data in (X, S):
        net = axon.Net(30, "16:relu,3:softmax", seed=2)
        summary = net.train(data, y.astype(np.int32), validation=(data[:500], y[:500]),
                            optimizer="adam", lr=1e-2, batch=64, epochs=2)
        results.append((net.parameters, net.predict(data), net.evaluate(data, y)["loss"],
                        [h["validation_loss"] for h in summary["history"]]))
    (w0, p0, l0, v0), (w1, p1, l1, v1) = results
    assert np.array_equal(w0, w1) and np.array_equal(p0, p1) and l0 == l1 and v0 == v1


def test_the_matrix_arrays_are_read_in_place():
    X, y = sparse_data()
    S = sp.csr_matrix(X.astype(np.float32))
    S.indices = S.indices.astype(np.int32)
    data = axon.Dataset.from_arrays(S, y.astype(np.int32))
    starts, columns, values = data._keep[:3]
    assert np.shares_memory(columns, S.indices) and np.shares_memory(values, S.data)
    X_back, y_back = data.arrays()
    assert (X_back != S).nnz == 0 and np.array_equal(y_back, y)


def test_float64_networks_refuse_sparse():
    X, y = sparse_data()
    with pytest.raises(axon.UnsupportedError, match="sparse, whose rows are made dense in float32"):
        axon.sklearn.MLPClassifier((4,), max_iter=2, precision="float64").fit(
            sp.csr_matrix(X), y)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_a_set_too_large_to_densify_trains_in_little_memory():
    """25,000 rows x 10,000 features: 1 GB dense, 250,000 values stored."""
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import axon
        import numpy as np, scipy.sparse as sp
        rows, features = 25000, 10000
        rng = np.random.default_rng(0)
        per_row = 10  # (scipy.sparse.random draws its places from the dense size: 2 GB)
        S = sp.csr_matrix((rng.normal(size=rows * per_row).astype(np.float32),
                           rng.integers(0, features, rows * per_row).astype(np.int32),
                           np.arange(0, rows * per_row + 1, per_row)), shape=(rows, features))
        y = (np.asarray(S.sum(axis=1)).ravel() > 0.5).astype(np.int32)
        net = axon.Net(features, "2:relu,2:softmax")
        net.train(S, y, optimizer="adam", batch=256, epochs=1)
        p = net.predict(S)
        assert p.shape == (rows, 2) and np.isfinite(p).all()
        # VmHWM: this program's peak (ru_maxrss would count the parent's from before exec)
        status = open("/proc/self/status").read()
        print(int(status.split("VmHWM:")[1].split()[0]) * 1024)
    """)
    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    done = subprocess.run([sys.executable, "-c", script, package], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    peak = int(done.stdout.split()[-1])
    print(f"peak memory {peak / 1e6:.0f} MB")
    assert peak < 600e6, f"peak memory {peak / 1e6:.0f} MB: was the 1 GB set made dense?"
