"""test_sklearn.py: axon.sklearn's estimators against scikit-learn's.

Proves: coefs_ and intercepts_ have scikit-learn's shapes and, loaded into
scikit-learn's own MLPClassifier/MLPRegressor, give the same outputs to 1e-5
(multiclass, binary, multilabel, regression); the initial weights are
scikit-learn's for the same random_state; the trained objective is
scikit-learn's (SGD from the same start, without shuffling, reaches the same
loss); partial_fit carries the optimizer's state from call to call as
scikit-learn does (Adam and Nesterov SGD: its weights after three calls),
fit and a warm-start fit start a new one, and a pickle carries it;
accuracy within 0.5 points of scikit-learn's on Fashion-MNIST (a
subset) and the galaxy set; pickling carries the weights; partial_fit;
get_params/set_params; every bad input and unsupported option is an
exception naming it.
"""
import os
import pickle
import warnings

import numpy as np
import pytest
import sklearn.neural_network as sk
from sklearn.datasets import load_digits, make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning

import axon
from axon.sklearn import MLPClassifier, MLPRegressor, _forward

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def digits():
    X, y = load_digits(return_X_y=True)
    return (X / 16).astype(np.float32), y


def load_into_sklearn(estimator, ours, X, y):
    """scikit-learn's estimator with our coefs_ (fitted for one step to set it up)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.set_params(max_iter=1).fit(X, y)
    assert [c.shape for c in estimator.coefs_] == [c.shape for c in ours.coefs_]
    assert [b.shape for b in estimator.intercepts_] == [b.shape for b in ours.intercepts_]
    estimator.coefs_, estimator.intercepts_ = ours.coefs_, ours.intercepts_
    return estimator


@pytest.mark.parametrize("activation", ["relu", "tanh", "logistic", "identity"])
def test_multiclass_weights_predict_the_same_in_sklearn(activation):
    X, y = digits()
    ours = MLPClassifier((32, 16), activation=activation, max_iter=20, random_state=0).fit(X, y)
    theirs = load_into_sklearn(sk.MLPClassifier((32, 16), activation=activation), ours, X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-5)
    assert np.mean(ours.predict(X) == theirs.predict(X)) > 0.999
    assert ours.out_activation_ == theirs.out_activation_ == "softmax"
    assert ours.n_layers_ == theirs.n_layers_ == 4 and ours.n_outputs_ == theirs.n_outputs_ == 10


def test_binary_multilabel_and_regression_weights_predict_the_same_in_sklearn():
    X, y = digits()
    labels = np.where(y > 4, "big", "small")  # any label type
    ours = MLPClassifier((16,), max_iter=30, random_state=1).fit(X, labels)
    assert list(ours.classes_) == ["big", "small"] and ours.coefs_[-1].shape == (16, 1)
    theirs = load_into_sklearn(sk.MLPClassifier((16,)), ours, X, labels)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-5)
    assert ours.out_activation_ == theirs.out_activation_ == "logistic"

    Xm, Ym = make_multilabel_classification(300, 10, n_classes=4, random_state=0)
    ours = MLPClassifier((16,), max_iter=50, random_state=0).fit(Xm, Ym)
    theirs = load_into_sklearn(sk.MLPClassifier((16,)), ours, Xm, Ym)
    np.testing.assert_allclose(ours.predict_proba(Xm), theirs.predict_proba(Xm), atol=1e-5)
    # Labels are probabilities above 0.5: float32 and float64 implementations may put one
    # within the 1e-5 just allowed on either side, so only labels clear of it must agree.
    clear = np.abs(theirs.predict_proba(Xm) - 0.5) > 1e-5
    assert np.array_equal(ours.predict(Xm)[clear], theirs.predict(Xm)[clear])

    rng = np.random.default_rng(0)
    Xr = rng.normal(size=(400, 6))
    Yr = np.column_stack([np.sin(Xr[:, 0]), Xr[:, 1] * Xr[:, 2]])
    ours = MLPRegressor((32,), activation="tanh", max_iter=50, random_state=0).fit(Xr, Yr)
    theirs = load_into_sklearn(sk.MLPRegressor((32,), activation="tanh"), ours, Xr, Yr)
    np.testing.assert_allclose(ours.predict(Xr), theirs.predict(Xr), atol=1e-5)
    assert ours.predict(Xr).shape == (400, 2)
    assert MLPRegressor((4,), max_iter=5).fit(Xr, Yr[:, 0]).predict(Xr).shape == (400,)


def test_initial_weights_and_objective_are_sklearns():
    """One epoch of full-batch SGD from the same start, without shuffling: scikit-learn's
    loss and weights, for classification and regression (alpha scaled as scikit-learn)."""
    X, y = digits()
    X, y = X[:300], y[:300]
    for ours, theirs, target in [
            (MLPClassifier, sk.MLPClassifier, y),
            (MLPRegressor, sk.MLPRegressor, X[:, 10] * 3 + 1),
            (MLPRegressor, sk.MLPRegressor, X[:, 10:13] * 3 + 1)]:
        settings = dict(hidden_layer_sizes=(12,), solver="sgd", batch_size=300, momentum=0,
                        learning_rate_init=0.1, alpha=0.01, max_iter=3, shuffle=False,
                        random_state=4, tol=0)
        a = ours(**settings).fit(X, target)
        b = theirs(**settings).fit(X, target)
        for ca, cb in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_):
            np.testing.assert_allclose(ca, cb, atol=2e-5)
        if target.ndim == 1:  # with several outputs and alpha the L2 part differs (sklearn.py)
            np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-5)


def same_steps_settings(solver):
    return dict(hidden_layer_sizes=(16,), solver=solver, batch_size=50, shuffle=False,
                random_state=3, learning_rate_init=0.01 if solver == "adam" else 0.1,
                momentum=0.9, nesterovs_momentum=True, alpha=1e-4, tol=0)


def max_difference(a, b):
    return max(np.abs(x - y).max() for x, y in zip(a.coefs_ + a.intercepts_,
                                                    b.coefs_ + b.intercepts_))


@pytest.mark.parametrize("solver", ["adam", "sgd"])
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_partial_fit_carries_the_optimizer_as_sklearn(solver, precision):
    """Three partial_fit calls on three parts of the data (4 batches each) from the same
    start without shuffling take scikit-learn's steps: its optimizer (Adam's moments and
    step count t, SGD's Nesterov velocity) goes on from call to call, and so does axon's
    (axon.OptimizerState in _optimizer). Restarting the optimizer at each call (axon
    before it carried the state) is far off. float64 agrees to rounding; float32 to
    float32's rounding of the same steps."""
    X, y = digits()
    dtype = np.float64 if precision == "float64" else np.float32
    X, y = X[:600].astype(dtype), y[:600]
    settings = same_steps_settings(solver)
    ours = MLPClassifier(precision=precision, **settings)
    restarted = MLPClassifier(precision=precision, **settings)
    theirs = sk.MLPClassifier(**settings)
    for part in range(3):
        rows = slice(200 * part, 200 * (part + 1))
        for model in (ours, restarted, theirs):
            model.partial_fit(X[rows], y[rows], classes=np.arange(10))
        del restarted._optimizer
    assert ours._optimizer.steps == 12 and theirs._optimizer.__dict__.get("t", 12) == 12
    tolerance = 1e-12 if precision == "float64" else 1e-5
    assert max_difference(ours, theirs) <= tolerance
    assert max_difference(restarted, theirs) > 1e-2
    np.testing.assert_allclose(ours.loss_curve_, theirs.loss_curve_, rtol=1e-5)


@pytest.mark.parametrize("solver", ["adam", "sgd"])
@pytest.mark.parametrize("outputs", [1, 2])
def test_regressor_partial_fit_takes_sklearns_steps(solver, outputs):
    """The same for MLPRegressor, where axon's gradient is 2 / outputs times scikit-learn's
    (sklearn.py): SGD's learning rate and Adam's epsilon are rescaled to match. The targets
    reach axon as float32 (its targets' type), hence 1e-7 rather than rounding."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])[:, :outputs].squeeze()
    settings = dict(same_steps_settings(solver), learning_rate_init=0.01)
    ours, theirs = MLPRegressor(precision="float64", **settings), sk.MLPRegressor(**settings)
    for part in range(3):
        rows = slice(200 * part, 200 * (part + 1))
        ours.partial_fit(X[rows], Y[rows])
        theirs.partial_fit(X[rows], Y[rows])
    assert max_difference(ours, theirs) <= 1e-7


@pytest.mark.parametrize("schedule", ["invscaling", "adaptive"])
@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
def test_learning_rate_schedules_take_sklearns_steps(schedule, estimator):
    """learning_rate='invscaling' and 'adaptive' (solver sgd, Nesterov momentum 0.9): 5
    epochs without shuffling end at scikit-learn's coefs_ to 1e-6 (float64). adaptive
    with n_iter_no_change=1 and tol=0.5 divides the rate by 5 after epochs 3 and 5; the
    velocity is rescaled at each change as scikit-learn's holds steps. A constant rate
    (what axon.sklearn refused these with before) ends elsewhere."""
    rng = np.random.default_rng(1)
    if estimator == "classifier":
        X, y = digits()
        X, y = X[:400].astype(np.float64), y[:400]
        ours_cls, theirs_cls = MLPClassifier, sk.MLPClassifier
    else:
        X = rng.normal(size=(400, 6))
        y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
        ours_cls, theirs_cls = MLPRegressor, sk.MLPRegressor
    settings = dict(same_steps_settings("sgd"), learning_rate=schedule, max_iter=5,
                    learning_rate_init=0.05, power_t=0.3)
    if schedule == "adaptive":
        settings.update(n_iter_no_change=1, tol=0.5)
    ours = ours_cls(precision="float64", **settings).fit(X, y)
    theirs = theirs_cls(**settings).fit(X, y)
    constant = ours_cls(precision="float64", **dict(settings, learning_rate="constant",
                                                    tol=0, n_iter_no_change=10)).fit(X, y)
    assert ours.n_iter_ == theirs.n_iter_ == 5
    assert max_difference(ours, theirs) <= 1e-6
    assert max_difference(constant, theirs) > 1e-3
    np.testing.assert_allclose(ours.loss_curve_, theirs.loss_curve_, rtol=1e-6)
    if schedule == "adaptive":
        assert theirs._optimizer.learning_rate == pytest.approx(0.05 / 25)


def test_adaptive_stops_where_sklearn_stops():
    """adaptive stops once the rate is at 1e-6 or below and the loss still does not fall
    by tol: after the same epoch as scikit-learn, with its weights."""
    X, y = digits()
    X, y = X[:200].astype(np.float64), y[:200]
    settings = dict(same_steps_settings("sgd"), learning_rate="adaptive", max_iter=50,
                    learning_rate_init=2e-5, n_iter_no_change=1, tol=10.0)
    ours = MLPClassifier(precision="float64", **settings).fit(X, y)
    theirs = sk.MLPClassifier(**settings).fit(X, y)
    assert ours.n_iter_ == theirs.n_iter_ < 50
    assert max_difference(ours, theirs) <= 1e-9


@pytest.mark.parametrize("solver", ["adam", "sgd"])
def test_fit_then_partial_fit_and_warm_start_as_sklearn(solver):
    """fit leaves its optimizer for partial_fit to go on with; a warm_start fit starts
    a new one: scikit-learn's weights after fit, partial_fit, warm-start fit."""
    X, y = digits()
    X, y = X[:400].astype(np.float64), y[:400]
    settings = dict(same_steps_settings(solver), max_iter=2, warm_start=True)
    ours, theirs = MLPClassifier(precision="float64", **settings), sk.MLPClassifier(**settings)
    for model in (ours, theirs):
        model.fit(X, y)
        model.partial_fit(X[:200], y[:200])
    assert ours._optimizer.steps == 2 * 8 + 4
    assert max_difference(ours, theirs) <= 1e-12
    for model in (ours, theirs):
        model.fit(X[200:], y[200:])  # warm start: these weights, a new optimizer
    assert ours._optimizer.steps == 2 * 4
    assert max_difference(ours, theirs) <= 1e-12


def test_a_failed_partial_fit_leaves_coefs_and_starts_a_new_optimizer(monkeypatch):
    """An exception inside training (here from the epoch's progress callback, after the
    library took its steps) leaves coefs_, the predictions and the optimizer as before
    the call: the library's network is rebuilt from coefs_ and the state starts anew."""
    import axon.sklearn as axon_sklearn
    X, y = digits()
    model = MLPClassifier(**same_steps_settings("adam"))
    model.partial_fit(X[:300], y[:300], classes=np.arange(10))
    coefs, probabilities = [c.copy() for c in model.coefs_], model.predict_proba(X)

    def fail(self, info):
        raise RuntimeError("failing on purpose")
    with monkeypatch.context() as patch:
        patch.setattr(axon_sklearn._Stopper, "__call__", fail)
        with pytest.raises(RuntimeError, match="failing on purpose"):
            model.partial_fit(X[300:600], y[300:600])
    assert all(np.array_equal(a, b) for a, b in zip(coefs, model.coefs_))
    # (a network rebuilt from the same weights; float32 GEMMs may sum in another order)
    np.testing.assert_allclose(model.predict_proba(X), probabilities, rtol=1e-5, atol=1e-7)
    assert "_optimizer" not in model.__dict__
    model.partial_fit(X[300:600], y[300:600])
    assert model._optimizer.steps == 6


def test_pickle_between_partial_fits_carries_the_optimizer():
    """A pickle round trip between partial_fit calls changes nothing: the optimizer's
    state travels in it, bit for bit."""
    X, y = digits()
    for solver in ("adam", "sgd"):
        settings = dict(same_steps_settings(solver), random_state=5)
        straight, pickled = MLPClassifier(**settings), MLPClassifier(**settings)
        for part in range(3):
            rows = slice(300 * part, 300 * (part + 1))
            straight.partial_fit(X[rows], y[rows], classes=np.arange(10))
            pickled.partial_fit(X[rows], y[rows], classes=np.arange(10))
            pickled = pickle.loads(pickle.dumps(pickled))
        assert pickled._optimizer.steps == straight._optimizer.steps == 18
        for a, b in zip(straight.coefs_ + straight.intercepts_,
                        pickled.coefs_ + pickled.intercepts_):
            assert np.array_equal(a, b)


FASHION = os.environ.get("AXON_DATASETS", "/usr/share/datasets") + "/fashion-mnist"
GALAXY = os.environ.get("AXON_GALAXY_DIR", os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "build", "data", "galaxy"))


@pytest.mark.skipif(not os.path.isdir(FASHION), reason=f"no Fashion-MNIST at {FASHION} "
                    "(apt-get install dataset-fashion-mnist)")
def test_fashion_mnist_accuracy_within_half_a_point_of_sklearn():
    """Adam, batch 128, on 6,000 training rows, tested on all 10,000 test rows; the mean of
    three seeds (a run's own spread from the row order is about half a point)."""
    X, y = axon.Dataset.open("fashion-mnist").arrays()
    Xt, yt = axon.Dataset.open("fashion-mnist", part="test").arrays()
    X, y = X[:6000], y[:6000]
    ours, theirs = [], []
    for seed in range(3):
        settings = dict(hidden_layer_sizes=(64,), batch_size=128, max_iter=6, random_state=seed)
        ours.append(MLPClassifier(**settings).fit(X, y).score(Xt, yt))
        theirs.append(sk.MLPClassifier(**settings).fit(X, y).score(Xt, yt))
    print("fashion-mnist accuracy, axon", ours, "scikit-learn", theirs)
    assert abs(np.mean(ours) - np.mean(theirs)) <= 0.005, (ours, theirs)


@pytest.mark.skipif(not os.path.isfile(os.path.join(GALAXY, "train.csv")),
                    reason=f"no galaxy data at {GALAXY} (the build unpacks it)")
def test_galaxy_lbfgs_same_fit_as_sklearn():
    """L-BFGS on the galaxy set where the minimum is unique (softmax regression, alpha 100,
    standardised pixels: convex), so that the same fit means the same weights: both
    optimizers reach scikit-learn's loss to 3e-6 (float32) and the same test accuracy (within 0.5
    points). The 1024-8-3 network has many minima; bench/sklearn_compare.py compares it
    over seeds."""
    from sklearn.preprocessing import StandardScaler
    open_csv = lambda name: axon.Dataset.open(os.path.join(GALAXY, name), scale=1 / 255,  # noqa: E731
                                              csv_label_column=0).arrays()
    X, y = open_csv("train.csv")
    Xt, yt = open_csv("test.csv")
    scaler = StandardScaler().fit(X)
    X, Xt = scaler.transform(X), scaler.transform(Xt)
    settings = dict(hidden_layer_sizes=(), solver="lbfgs", alpha=100.0, max_iter=1000,
                    random_state=0)
    ours = MLPClassifier(**settings).fit(X, y)
    theirs = sk.MLPClassifier(**settings).fit(X, y)
    assert ours.n_layers_ == theirs.n_layers_ == 2
    # float32 against scikit-learn's float64: the order the BLAS sums in moves
    # axon's loss by about 1e-6 (cpu_backend.c hands it k in blocks of 256)
    assert ours.loss_ == pytest.approx(theirs.loss_, rel=3e-6)
    for a, b in zip(ours.coefs_ + ours.intercepts_, theirs.coefs_ + theirs.intercepts_):
        np.testing.assert_allclose(a, b, atol=2e-3)
    assert abs(ours.score(Xt, yt) - theirs.score(Xt, yt)) <= 0.005


def test_pickle_carries_the_weights():
    X, y = digits()
    model = MLPClassifier((16,), max_iter=10, random_state=0).fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    assert "_net" not in copy.__dict__  # the library's network is rebuilt from coefs_
    # Bit for bit: the same kernels on both sides. ax_net_predict's chunk of rows no longer
    # follows the training batch (issue 25), so the copy and the model make the same GEMM
    # calls on the same float32 weights (tests/test_predict_history.c, docs/testing.md).
    assert np.array_equal(copy.predict_proba(X), model.predict_proba(X))
    copy.partial_fit(X, y)  # and trains on
    assert copy.n_iter_ == model.n_iter_ + 1


def test_fitted_attributes():
    X, y = digits()
    model = MLPClassifier((20,), solver="sgd", max_iter=15, random_state=0, tol=0).fit(X, y)
    assert model.n_iter_ == 15 == len(model.loss_curve_) and model.t_ == 15 * len(X)
    assert model.loss_ == model.loss_curve_[-1] and model.best_loss_ == min(model.loss_curve_)
    assert model.n_features_in_ == 64 and model.classes_.tolist() == list(range(10))
    # tol and n_iter_no_change stop as scikit-learn's rule says
    settings = dict(hidden_layer_sizes=(20,), max_iter=500, tol=1e9, n_iter_no_change=3,
                    random_state=0)
    stopped = MLPClassifier(**settings).fit(X, y)
    assert stopped.n_iter_ == sk.MLPClassifier(**settings).fit(X, y).n_iter_ == 5
    early = MLPClassifier((20,), max_iter=200, early_stopping=True, n_iter_no_change=2,
                          random_state=0).fit(X, y)
    assert early.best_loss_ is None and len(early.validation_scores_) == early.n_iter_
    assert early.best_validation_score_ == max(early.validation_scores_)
    best = _forward(early.coefs_, early.intercepts_, X, "relu", "softmax")
    assert np.allclose(best, early.predict_proba(X), atol=1e-5)
    lbfgs = MLPRegressor((8,), solver="lbfgs", max_iter=20, random_state=0).fit(X, y)
    assert lbfgs.n_iter_ <= 20 and np.isfinite(lbfgs.loss_)


def test_partial_fit_and_changing_labels():
    X, y = digits()
    model = MLPClassifier((16,), random_state=0)
    with pytest.raises(ValueError, match="classes"):
        model.partial_fit(X[:100], y[:100])  # the first call needs every class
    model.partial_fit(X[:100], y[:100], classes=np.arange(10))
    model.partial_fit(X[100:200], y[100:200])
    assert model.n_iter_ == 2
    with pytest.raises(ValueError, match="`y` has classes not in `self.classes_`"):
        model.partial_fit(X[:10], y[:10] + 10)
    with pytest.raises(AttributeError, match="stochastic"):
        MLPClassifier(solver="lbfgs").partial_fit(X, y)
    warm = MLPClassifier((16,), warm_start=True, max_iter=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="warm_start"):
        warm.fit(X[y < 5], y[y < 5])


def test_get_set_params_and_axons_own():
    model = MLPClassifier()
    params = model.get_params()
    for name in ("hidden_layer_sizes", "activation", "solver", "alpha", "batch_size",
                 "learning_rate_init", "max_iter", "tol", "n_iter_no_change", "momentum",
                 "nesterovs_momentum", "early_stopping", "validation_fraction", "shuffle",
                 "random_state", "verbose", "warm_start", "beta_1", "beta_2", "epsilon",
                 "n_threads", "precision"):
        assert name in params
    model.set_params(solver="cg", precision="float64", n_threads=1)
    X, y = digits()
    model.set_params(hidden_layer_sizes=(8,), max_iter=5).fit(X, y)
    assert model._get_net().precision == "f64"


@pytest.mark.parametrize("option, text", [
    (dict(solver="sgd", learning_rate="adaptive", early_stopping=True),
     "learning_rate='adaptive': axon's adaptive schedule watches the training loss"),
    (dict(learning_rate="optimal"), "learning_rate='optimal': must be 'constant'"),
    (dict(power_t=-1.0), "power_t=-1.0"),
    (dict(solver="lbfgs", max_fun=100), "max_fun=100"),
    (dict(activation="softplus"), "activation='softplus': must be one of"),
    (dict(solver="newton"), "solver='newton'"),
    (dict(hidden_layer_sizes=(10, 0)), "hidden_layer_sizes must be > 0"),
    (dict(precision="float16"), "precision='float16'"),
    (dict(alpha=-1.0), "alpha=-1.0"),
    (dict(validation_fraction=1.0), "validation_fraction=1.0"),
    (dict(batch_size="big"), "batch_size='big'"),
])
def test_unsupported_or_bad_options_name_themselves(option, text):
    X, y = digits()
    with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
        MLPClassifier(**option).fit(X[:50], y[:50])


def test_bad_inputs():
    X, y = digits()
    model = MLPClassifier((8,), max_iter=2)
    with pytest.raises(ValueError, match="NaN"):
        bad = X.copy()
        bad[3, 3] = np.nan
        model.fit(bad, y)
    with pytest.raises(ValueError, match="infinity"):
        MLPRegressor((4,), max_iter=2).fit(X, np.where(y == 3, np.inf, y))
    with pytest.raises(ValueError, match="0 sample"):
        model.fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="Expected 2D array"):
        model.fit(X[0], y[:1])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.fit(X, y[:-1])
    with pytest.raises((TypeError, ValueError)):
        model.fit(X.astype(complex), y)
    with pytest.raises(ValueError, match="could not convert|dtype"):
        model.fit(np.full(X.shape, "x"), y)
    with pytest.raises(ValueError, match="Unknown label type"):
        model.fit(X, y + 0.5)
    with pytest.raises(ValueError, match="1 class"):
        model.fit(X, np.zeros(len(X)))
    model.fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but MLPClassifier is expecting 64"):
        model.predict(X[:, :3])
    # Non-contiguous, read-only and integer arrays are read correctly (converted).
    readonly = X.copy()
    readonly.setflags(write=False)
    wide = np.repeat(X, 2, axis=1)[:, ::2]
    reference = MLPClassifier((8,), max_iter=3, random_state=0).fit(X, y).coefs_
    for variant in (readonly, wide, np.asfortranarray(X)):
        got = MLPClassifier((8,), max_iter=3, random_state=0).fit(variant, y).coefs_
        assert all(np.array_equal(a, b) for a, b in zip(got, reference))
    integers = (X * 16).astype(np.int64)
    got = MLPClassifier((8,), max_iter=3, random_state=0).fit(integers, y).coefs_
    reference = MLPClassifier((8,), max_iter=3, random_state=0).fit(X * 16, y).coefs_
    assert all(np.array_equal(a, b) for a, b in zip(got, reference))


def test_a_library_refusal_leaves_the_estimator_unfitted():
    X, y = digits()
    model = MLPClassifier((8,), solver="lbfgs", precision="bfloat16")
    with pytest.raises(NotImplementedError, match="lbfgs refuses bf16"):
        model.fit(X, y)
    assert not hasattr(model, "coefs_")
    bf16 = MLPClassifier((8,), precision="bfloat16", max_iter=5, random_state=0).fit(X, y)
    assert bf16._get_net().precision == "bf16" and bf16.loss_curve_[-1] < bf16.loss_curve_[0]


SKLEARN_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import axon
import numpy as np
from axon.sklearn import MLPClassifier
rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 20)).astype(np.float32)
y = (X[:, 0] > 0).astype(int)
model = MLPClassifier((32,), batch_size=8, max_iter=1000000, tol=0, n_iter_no_change=10**9,
                      random_state=0)
import axon._net as net_module
original = net_module._Watcher.__call__
def announce(self, p, user):  # says when the library's first step is done
    if not getattr(self, "announced", False):
        self.announced = True
        print("training", flush=True)
    return original(self, p, user)
net_module._Watcher.__call__ = announce
try:
    model.fit(X, y)
except KeyboardInterrupt:
    print("KeyboardInterrupt | fitted:", hasattr(model, "coefs_"),
          "| predicts:", model.predict(X[:3]).shape == (3,), flush=True)
"""


def test_ctrl_c_in_fit_keeps_the_last_steps_weights():
    import signal
    import subprocess
    import sys
    python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    child = subprocess.Popen([sys.executable, "-c", SKLEARN_CHILD, python_dir],
                             stdout=subprocess.PIPE, text=True)
    try:
        # The first step is done and 10^6 epochs remain: the signal comes during fit.
        assert child.stdout.readline().strip() == "training"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert "KeyboardInterrupt | fitted: True | predicts: True" in out, out
