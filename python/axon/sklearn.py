"""axon.sklearn: MLPClassifier and MLPRegressor, scikit-learn's estimators
trained by libaxon.

Parameters have scikit-learn's names and meanings where axon has the
feature (docs/python.md lists them); an option axon lacks (max_fun other
than its default; learning_rate="adaptive" with early_stopping) raises
ValueError naming it. learning_rate "invscaling" and "adaptive" (sgd) are
axon's schedules of the same names, which follow scikit-learn's SGDOptimizer. The weights start as scikit-learn's do (Glorot
uniform with its factors, drawn from random_state in its order), so coefs_
and intercepts_ can be loaded into scikit-learn's own estimator, and the
objective is scikit-learn's: for classification axon's cross-entropy equals
scikit-learn's log loss, and alpha becomes axon's l2 = alpha / rows of the
batch (the full set for lbfgs and cg). For regression axon's MSE (the mean of
squared errors over rows and outputs) is twice the loss scikit-learn reports
(half that mean), while scikit-learn steps along the gradient of half the
squared errors summed over outputs and averaged over rows: axon's gradient is
r = 2 / outputs times that one, so l2 = r alpha / rows, SGD's learning
rate is divided by r and Adam's epsilon multiplied by r, to take
scikit-learn's steps; loss_ and loss_curve_
are axon's figures halved (with several outputs and alpha > 0 their L2 part
is r/2 times scikit-learn's). Stopping follows
scikit-learn's rule (tol, n_iter_no_change, early_stopping with
validation_fraction), checked after each epoch in the progress callback.

The optimizer's state carries over as scikit-learn's does: fit (also with
warm_start) starts a new one, partial_fit continues the one the last fit or
partial_fit left (SGD's velocity, Adam's moments and step count), held in
_optimizer as an axon.OptimizerState, which pickles. Should the solver,
momentum (zero or not) or precision change between partial_fit calls,
axon starts a new state where scikit-learn would go on with its old
optimizer object; the learning rate, momentum and betas are always the
current parameters' (scikit-learn's optimizer keeps those it was made with).

X may be a scipy.sparse matrix, as for scikit-learn's estimators (any format, read as
CSR): the library makes the rows of each batch dense as it uses them (ax_dataset_wrap_csr),
never the whole set, and predicts from the sparse rows a chunk at a time; coefs_ and the
predictions equal those of the dense matrix bit for bit (precision float32; float64 and
bfloat16 networks take dense X). Early stopping's validation scores multiply the sparse
rows by the first layer's weights as scikit-learn does.

Differences, by construction: the rows are shuffled by axon's generator, not
NumPy's; lbfgs is axon's L-BFGS
(strong-Wolfe line search, gtol = tol, max_iter iterations), not SciPy's
L-BFGS-B.
"""
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import check_random_state, column_or_1d
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import (_check_partial_fit_first_call, check_classification_targets,
                                      type_of_target, unique_labels)
from sklearn.utils.validation import check_is_fitted

from ._data import is_sparse
from ._lib import StoppedError
from ._net import Net, set_threads
from ._optimizer_state import OptimizerState

_ACTIVATIONS = {"identity": "identity", "logistic": "sigmoid", "tanh": "tanh", "relu": "relu"}
_SOLVERS = {"sgd": "sgd", "adam": "adam", "lbfgs": "lbfgs", "cg": "cg"}
_PRECISIONS = {"float32": "f32", "f32": "f32", "float64": "f64", "f64": "f64",
               "bfloat16": "bf16", "bf16": "bf16"}


def _forward(coefs, intercepts, X, activation, out_activation):
    """scikit-learn's forward pass in float64 (for validation scores and checks)."""
    # sparse X: the first product is the sparse rows' (an ndarray), as scikit-learn's
    a = X.astype(np.float64) if is_sparse(X) else np.asarray(X, dtype=np.float64)
    for i, (W, b) in enumerate(zip(coefs, intercepts)):
        a = np.asarray(a @ W) + b
        kind = activation if i + 1 < len(coefs) else out_activation
        if kind == "relu":
            a = np.maximum(a, 0)
        elif kind == "tanh":
            a = np.tanh(a)
        elif kind == "logistic":
            a = 1 / (1 + np.exp(-a))
        elif kind == "softmax":
            a = np.exp(a - a.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
    return a


# scikit-learn's checks that cannot pass, with the reason (its _xfail_checks tag).
_XFAIL_CHECKS = {
    "check_methods_sample_order_invariance":
        "axon predicts in float32 through the BLAS, whose GEMM sums a row's products in an "
        "order that depends on where the row falls in the BLAS's blocks: permuting the rows "
        "changes probabilities by about 1e-7 relative, and the check allows 1e-7 (the "
        "predictions themselves are unchanged; float64 NumPy from coefs_ is order-invariant)",
    "check_methods_subset_invariance":
        "the same float32 BLAS blocking: a row predicted in a batch of other rows than in "
        "the full set is summed in another order, and the check allows 1e-7 absolute (one "
        "float32 rounding of an output near 2 is 2.4e-7); which fits trip it depends on "
        "the weights the fit reaches",
}


class _Stopper:
    """scikit-learn's stopping rule, after every epoch, in axon's progress callback."""

    def __init__(self, estimator, net, scale, X_val, y_val, incremental):
        self.e = estimator
        self.net = net
        self.scale = scale
        self.X_val, self.y_val = X_val, y_val
        self.incremental = incremental
        self.stochastic = estimator.solver in ("sgd", "adam")
        self.stopped = False

    def __call__(self, info):
        if not info["epoch_done"]:
            return True
        e = self.e
        loss = info["train_loss"] * self.scale
        e.loss_curve_.append(loss)
        e.n_iter_ += 1
        e.t_ += e._rows
        if e.verbose:
            print("Iteration %d, loss = %.8f" % (e.n_iter_, loss))
        if self.incremental or not self.stochastic:
            return True
        if e.solver == "sgd" and e.learning_rate == "adaptive":
            return True  # the library divides the rate and stops (axon.h, adaptive)
        if self.X_val is not None:
            coefs, intercepts = e._weights_from(self.net)
            score = e._validation_score(coefs, intercepts, self.X_val, self.y_val)
            e.validation_scores_.append(score)
            if score < e.best_validation_score_ + e.tol:
                e._no_improvement_count += 1
            else:
                e._no_improvement_count = 0
            if score > e.best_validation_score_:
                e.best_validation_score_ = score
                e._best_weights = (coefs, intercepts)
        else:
            if loss > e.best_loss_ - e.tol:
                e._no_improvement_count += 1
            else:
                e._no_improvement_count = 0
            e.best_loss_ = min(e.best_loss_, loss)
        if e._no_improvement_count > e.n_iter_no_change:
            if e.verbose:
                what = "Validation score" if self.X_val is not None else "Training loss"
                print(f"{what} did not improve more than tol={e.tol:f} for "
                      f"{e.n_iter_no_change} consecutive epochs. Stopping.")
            self.stopped = True
            return False
        return True


class _AxonMLP(BaseEstimator):
    """What MLPClassifier and MLPRegressor share (scikit-learn's BaseMultilayerPerceptron)."""

    _regression = False

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, solver="adam",
                 alpha=0.0001, batch_size="auto", learning_rate="constant",
                 learning_rate_init=0.001, power_t=0.5, max_iter=200, shuffle=True,
                 random_state=None, tol=1e-4, verbose=False, warm_start=False, momentum=0.9,
                 nesterovs_momentum=True, early_stopping=False, validation_fraction=0.1,
                 beta_1=0.9, beta_2=0.999, epsilon=1e-8, n_iter_no_change=10, max_fun=15000,
                 n_threads=None, precision="float32"):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.solver = solver
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.learning_rate_init = learning_rate_init
        self.power_t = power_t
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.tol = tol
        self.verbose = verbose
        self.warm_start = warm_start
        self.momentum = momentum
        self.nesterovs_momentum = nesterovs_momentum
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.n_iter_no_change = n_iter_no_change
        self.max_fun = max_fun
        self.n_threads = n_threads
        self.precision = precision

    # ------------------------------------------------------------ checks
    def _hidden(self):
        sizes = self.hidden_layer_sizes
        if isinstance(sizes, numbers.Integral) or not hasattr(sizes, "__iter__"):
            sizes = [sizes]
        sizes = list(sizes)
        if any(not isinstance(s, numbers.Integral) or s <= 0 for s in sizes):
            raise ValueError(f"hidden_layer_sizes must be > 0, got {sizes}.")
        return [int(s) for s in sizes]

    def _check_parameters(self):
        def bad(name, why):
            raise ValueError(f"{type(self).__name__}: {name}={getattr(self, name)!r}: {why}")

        if self.activation not in _ACTIVATIONS:
            bad("activation", "must be one of " + ", ".join(_ACTIVATIONS))
        if self.solver not in _SOLVERS:
            bad("solver", "must be one of " + ", ".join(_SOLVERS) + " (cg is axon's own)")
        if self.learning_rate not in ("constant", "invscaling", "adaptive"):
            bad("learning_rate", "must be 'constant', 'invscaling' or 'adaptive'")
        if (self.learning_rate == "adaptive" and self.solver == "sgd" and self.early_stopping):
            bad("learning_rate", "axon's adaptive schedule watches the training loss; with "
                "early_stopping=True scikit-learn watches the validation score instead, which "
                "axon does not (use early_stopping=False or another schedule)")
        if not isinstance(self.power_t, numbers.Real) or not 0 <= self.power_t < np.inf:
            bad("power_t", "must be a finite number >= 0")
        if self.max_fun != 15000 and self.solver in ("lbfgs", "cg"):
            bad("max_fun", "axon's line-search optimizers have no limit on function "
                "evaluations; leave max_fun at 15000 (limit max_iter instead)")
        if not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1:
            bad("max_iter", "must be an integer >= 1")
        if not isinstance(self.n_iter_no_change, numbers.Integral) or self.n_iter_no_change < 1:
            bad("n_iter_no_change", "must be an integer >= 1")
        for name in ("alpha", "tol"):
            if not isinstance(getattr(self, name), numbers.Real) or getattr(self, name) < 0:
                bad(name, "must be a number >= 0")
        if not isinstance(self.learning_rate_init, numbers.Real) or self.learning_rate_init <= 0:
            bad("learning_rate_init", "must be > 0")
        if not 0 <= self.momentum <= 1:
            bad("momentum", "must be in [0, 1]")
        if not 0 < self.validation_fraction < 1:
            bad("validation_fraction", "must be in (0, 1)")
        for name in ("beta_1", "beta_2"):
            if not 0 <= getattr(self, name) < 1:
                bad(name, "must be in [0, 1)")
        if self.epsilon <= 0:
            bad("epsilon", "must be > 0")
        if self.batch_size != "auto" and not isinstance(self.batch_size, numbers.Integral):
            bad("batch_size", "must be 'auto' or an integer")
        if str(self.precision) not in _PRECISIONS:
            bad("precision", "must be float32, float64 or bfloat16")
        if self.n_threads is not None and (not isinstance(self.n_threads, numbers.Integral)
                                           or self.n_threads < 1):
            bad("n_threads", "must be None (all cores) or an integer >= 1")
        return self._hidden()

    # -------------------------------------------------------- the network
    def _layers(self, hidden, n_outputs):
        act = _ACTIVATIONS[self.activation]
        out = {"softmax": "softmax", "logistic": "sigmoid", "identity": "identity"}[
            self.out_activation_]
        return [(h, act) for h in hidden] + [(n_outputs, out)]

    def _loss_name(self):
        return {"softmax": "cross-entropy", "logistic": "binary-cross-entropy",
                "identity": "mse"}[self.out_activation_]

    def _initial_weights(self, sizes, random_state):
        """scikit-learn's _init_coef: Glorot uniform, factor 2 for logistic, else 6."""
        factor = 2.0 if self.activation == "logistic" else 6.0
        coefs, intercepts = [], []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = np.sqrt(factor / (fan_in + fan_out))
            coefs.append(random_state.uniform(-bound, bound, (fan_in, fan_out)))
            intercepts.append(random_state.uniform(-bound, bound, fan_out))
        return coefs, intercepts

    def _new_net(self, coefs, intercepts):
        net = Net(coefs[0].shape[0], self._layers(self._hidden(), coefs[-1].shape[1]),
                  loss=self._loss_name(), precision=_PRECISIONS[str(self.precision)])
        net.set_weights([(W.T, b) for W, b in zip(coefs, intercepts)])
        return net

    @staticmethod
    def _weights_from(net):
        weights = net.get_weights()
        return [W.T.copy() for W, _ in weights], [b for _, b in weights]

    def _get_net(self):
        """The library's network for coefs_ (rebuilt after unpickling or if coefs_ changed)."""
        net = self.__dict__.get("_net")
        if net is None or self.__dict__.get("_net_coefs") is not self.coefs_:
            net = self._new_net(self.coefs_, self.intercepts_)
            self._net, self._net_coefs = net, self.coefs_
        return net

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_net", None)  # a ctypes handle; coefs_ and intercepts_ travel instead
        state.pop("_net_coefs", None)
        return state

    # ------------------------------------------------------------ fitting
    def _fit(self, X, y, incremental):
        hidden = self._check_parameters()
        if self.n_threads is not None:
            set_threads(self.n_threads)
        first = not (incremental or self.warm_start) or not hasattr(self, "coefs_")
        X, y = self._validate_input(X, y, incremental, reset=first)
        rows = X.shape[0]
        random_state = check_random_state(self.random_state)
        if first:
            self.n_outputs_ = y.shape[1]
            self.n_layers_ = len(hidden) + 2
            self.n_iter_ = 0
            self.t_ = 0
            self.loss_curve_ = []
            self._no_improvement_count = 0
            self.best_loss_ = np.inf
            coefs, intercepts = self._initial_weights(
                [X.shape[1]] + hidden + [self.n_outputs_], random_state)
            net = self._new_net(coefs, intercepts)
        else:
            if [c.shape[1] for c in self.coefs_[:-1]] != hidden:
                raise ValueError(f"hidden_layer_sizes changed from "
                                 f"{[c.shape[1] for c in self.coefs_[:-1]]} to {hidden} since "
                                 "the last fit; warm_start and partial_fit need the same layers")
            if y.shape[1] != self.n_outputs_:
                raise ValueError(f"y has {y.shape[1]} outputs; the network was fitted with "
                                 f"{self.n_outputs_}")
            net = self._get_net()
            if not incremental:
                self._no_improvement_count = 0
                self.best_loss_ = np.inf
        stochastic = self.solver in ("sgd", "adam")
        if not stochastic and incremental:
            raise AttributeError("partial_fit is only available for stochastic optimizers "
                                 f"(sgd, adam), not {self.solver}")
        X_val = y_val = None
        early = self.early_stopping and stochastic and not incremental
        if early:
            stratify = y if not self._regression and self.n_outputs_ == 1 else None
            X, X_val, y, y_val = train_test_split(X, y, random_state=random_state,
                                                  test_size=self.validation_fraction,
                                                  stratify=stratify)
            self.validation_scores_ = []
            self.best_validation_score_ = -np.inf
            self._best_weights = None
            rows = X.shape[0]
        else:
            self.validation_scores_ = None
            self.best_validation_score_ = None
        self._rows = rows
        # Regression: axon's MSE (mean over rows and outputs) is twice scikit-learn's
        # reported squared loss, and its gradient (2 / outputs) times the one scikit-learn
        # steps with (mean over rows, sum over outputs, halved): module docstring.
        scale = 0.5 if self._regression else 1.0
        ratio = 2.0 / self.n_outputs_ if self._regression else 1.0
        if stochastic:
            if self.batch_size == "auto":
                batch = min(200, rows)
            else:
                if self.batch_size < 1 or self.batch_size > rows:
                    warnings.warn("Got `batch_size` less than 1 or larger than sample size. "
                                  "It is going to be clipped")
                batch = int(np.clip(self.batch_size, 1, rows))
        else:
            batch = rows
        # Each solver gets the options it reads; the others keep axon's defaults.
        options = dict(optimizer=_SOLVERS[self.solver], epochs=1 if incremental else self.max_iter,
                       l2=self.alpha / batch * ratio, shuffle=self.shuffle,
                       seed=int(random_state.randint(np.iinfo(np.int32).max)))
        if self.solver == "sgd":
            options.update(batch=batch, lr=self.learning_rate_init / ratio, momentum=self.momentum,
                           nesterov=bool(self.nesterovs_momentum and self.momentum > 0))
            options["lr_schedule"] = self._schedule(incremental, scale)
            if incremental and self.learning_rate == "invscaling" and self.t_ > 0:
                # scikit-learn's optimizer holds the rate its last epoch ended with
                options["lr"] = (self.learning_rate_init / ratio
                                 / (self.t_ + 1) ** self.power_t)
        elif self.solver == "adam":
            # scikit-learn adds epsilon before Adam's bias correction (axon.h); Adam's
            # steps do not change when the gradient is scaled by `ratio` if epsilon is too
            options.update(batch=batch, lr=self.learning_rate_init, beta1=self.beta_1,
                           beta2=self.beta_2, epsilon=self.epsilon * ratio,
                           epsilon_before_correction=True)
        else:
            options.update(batch=0, gtol=self.tol)
        if stochastic:
            options["optimizer_state"] = self._optimizer_state(incremental, net)
        labels = self._axon_targets(y)
        stopper = _Stopper(self, net, scale, X_val, y_val, incremental)
        summary = None
        try:
            summary = net.train(X, labels, progress=stopper, progress_interval=1e300,
                                **options)
        except StoppedError:
            if not stopper.stopped:
                self._forget_run()
                raise
        except KeyboardInterrupt:
            self._keep_weights(net, early)  # the weights of the last step, then up it goes
            raise
        except BaseException:
            self._forget_run()
            raise
        self._keep_weights(net, early)
        if summary is not None and not stochastic:
            # One epoch of a line-search optimizer is one iteration.
            self.loss_ = summary["final_train_loss"] * scale
            if not self.loss_curve_:
                self.loss_curve_ = [self.loss_]
            self.best_loss_ = min(self.loss_curve_)
            if summary["epochs_run"] >= self.max_iter and "converged" not in summary["stop_reason"]:
                warnings.warn(f"{self.solver}: maximum iterations ({self.max_iter}) reached and "
                              "the optimization hasn't converged yet.", ConvergenceWarning)
        else:
            self.loss_ = self.loss_curve_[-1] if self.loss_curve_ else np.nan
            if early:
                self.best_loss_ = None
            adaptive_stop = summary is not None and "adaptive" in summary["stop_reason"]
            if not incremental and not stopper.stopped and not adaptive_stop and summary is not None:
                warnings.warn(f"Stochastic Optimizer: Maximum iterations ({self.max_iter}) "
                              "reached and the optimization hasn't converged yet.",
                              ConvergenceWarning)
        return self

    def _schedule(self, incremental, scale):
        """scikit-learn's learning_rate for sgd as axon's schedule (axon.h, ax_lr_schedule):
        invscaling's lr / (rows seen + 1)^power_t after each epoch, adaptive's division by
        5 after more than n_iter_no_change epochs whose training loss did not fall by tol
        (axon's loss is scikit-learn's / scale, hence tol / scale), stopping at 1e-6. Both
        rescale SGD's velocity as scikit-learn's, which holds steps. partial_fit runs one
        epoch at the rate scikit-learn's optimizer holds (invscaling's, from t_)."""
        if incremental or self.learning_rate == "constant":
            return "constant"
        if self.learning_rate == "invscaling":
            return f"invscaling:{float(self.power_t)!r}"
        return f"adaptive:{int(self.n_iter_no_change)}:{float(self.tol) / scale!r}"

    def _optimizer_state(self, incremental, net):
        """scikit-learn's _optimizer: new for fit, kept from call to call by partial_fit
        (a new one when the kept one cannot go on: another solver, momentum zero or not,
        another precision)."""
        state = self.__dict__.get("_optimizer")
        if incremental and isinstance(state, OptimizerState):
            info = state.describe()
            momentum = self.solver == "sgd" and self.momentum > 0
            if info is None or (
                    info["optimizer"] == self.solver and info["parameters"] == net.parameter_count
                    and info["precision"] == _PRECISIONS[str(self.precision)]
                    and info["arrays"] == (2 if self.solver == "adam" else int(momentum))):
                return state
        self._optimizer = OptimizerState()
        return self._optimizer

    def _forget_run(self):
        """After a failed call: coefs_ stayed as they were, while the library's network
        and optimizer state moved on; the network is rebuilt from coefs_ when next needed
        and the next partial_fit starts a new optimizer state."""
        self.__dict__.pop("_net", None)
        self.__dict__.pop("_net_coefs", None)
        self.__dict__.pop("_optimizer", None)

    def _keep_weights(self, net, early):
        """coefs_ and intercepts_ from the network, or early stopping's best ones."""
        if early and self._best_weights is not None:
            self.coefs_, self.intercepts_ = self._best_weights
            net = self._new_net(self.coefs_, self.intercepts_)
        else:
            self.coefs_, self.intercepts_ = self._weights_from(net)
        self._net, self._net_coefs = net, self.coefs_

    def fit(self, X, y):
        """Fits the network to X (rows, features) and y; returns self."""
        return self._fit(X, y, incremental=False)

    def _check_solver(self):
        if self.solver not in ("sgd", "adam"):
            raise AttributeError(f"partial_fit is only available for stochastic optimizers. "
                                 f"{self.solver} is not stochastic.")
        return True

    def _predict_raw(self, X):
        check_is_fitted(self, "coefs_")
        X = self._validate_data(X, accept_sparse="csr", dtype=[np.float32, np.float64],
                                reset=False)
        return self._get_net().predict(X).astype(np.float64)

    def _more_tags(self):
        return {"_xfail_checks": _XFAIL_CHECKS}


class MLPClassifier(ClassifierMixin, _AxonMLP):
    """scikit-learn's MLPClassifier trained by libaxon (module docstring; docs/python.md).

    Extra parameters: n_threads (None: all cores, axon.set_threads) and precision
    (float32, float64 or bfloat16: axon's compute precision)."""

    def _validate_input(self, X, y, incremental, reset):
        X, y = self._validate_data(X, y, accept_sparse="csr", multi_output=True,
                                   dtype=[np.float32, np.float64], reset=reset)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        if incremental:
            classes = unique_labels(y)
            if len(np.setdiff1d(classes, self.classes_, assume_unique=True)):
                raise ValueError(f"`y` has classes not in `self.classes_`. `self.classes_` has "
                                 f"{self.classes_}. 'y' has {classes}.")
        elif self.warm_start and hasattr(self, "coefs_"):
            classes = unique_labels(y)
            if set(classes) != set(self.classes_):
                raise ValueError(f"warm_start can only be used where `y` has the same classes "
                                 f"as in the previous call to fit. Previously got "
                                 f"{self.classes_}, `y` has {classes}")
        else:
            self._label_binarizer = LabelBinarizer()
            self._label_binarizer.fit(y)
            self.classes_ = self._label_binarizer.classes_
        if len(self.classes_) < 2 and type_of_target(y) != "multilabel-indicator":
            raise ValueError(f"MLPClassifier needs at least 2 classes in y; got 1 class "
                             f"({self.classes_[0]!r})")
        encoded = self._label_binarizer.transform(y).astype(np.float32)
        self.out_activation_ = "softmax" if self._label_binarizer.y_type_ == "multiclass" \
            else "logistic"
        return X, encoded

    def _axon_targets(self, y):
        if self.out_activation_ == "softmax":
            return np.argmax(y, axis=1).astype(np.int32)  # class labels for cross-entropy
        return y.astype(np.float32)

    def _validation_score(self, coefs, intercepts, X_val, y_val):
        p = _forward(coefs, intercepts, X_val, self.activation, self.out_activation_)
        if self.out_activation_ == "softmax":
            return accuracy_score(np.argmax(y_val, 1), np.argmax(p, 1))
        return accuracy_score(y_val > 0.5, p > 0.5)

    def fit(self, X, y):
        """Fits to X (rows, features) and labels y (any label type; 2-D for multilabel)."""
        return self._fit(X, y, incremental=False)

    @available_if(_AxonMLP._check_solver)
    def partial_fit(self, X, y, classes=None):
        """One epoch over (X, y), continuing from the current weights. classes: every label,
        required on the first call."""
        if _check_partial_fit_first_call(self, classes):
            self._label_binarizer = LabelBinarizer()
            if type_of_target(y).startswith("multilabel"):
                self._label_binarizer.fit(y)
            else:
                self._label_binarizer.fit(self.classes_)
        return self._fit(X, y, incremental=True)

    def predict_proba(self, X):
        """Class probabilities (rows, classes)."""
        p = self._predict_raw(X)
        if self.out_activation_ == "logistic" and self._label_binarizer.y_type_ == "binary":
            p = p.ravel()
            return np.column_stack([1 - p, p])
        return p

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    def predict(self, X):
        """The most probable class of each row (for multilabel: the indicator matrix)."""
        p = self._predict_raw(X)
        if self.n_outputs_ == 1:
            p = p.ravel()
        return self._label_binarizer.inverse_transform(p)

    def _more_tags(self):
        return {"multilabel": True, "_xfail_checks": _XFAIL_CHECKS}


class MLPRegressor(MultiOutputMixin, RegressorMixin, _AxonMLP):
    """scikit-learn's MLPRegressor trained by libaxon (module docstring; docs/python.md).

    Extra parameters: n_threads and precision, as MLPClassifier."""

    _regression = True

    def _validate_input(self, X, y, incremental, reset):
        X, y = self._validate_data(X, y, accept_sparse="csr", multi_output=True,
                                   y_numeric=True, dtype=[np.float32, np.float64], reset=reset)
        if y.ndim == 1:
            y = y.reshape(-1, 1)
        if not np.isfinite(y).all():
            raise ValueError("Input y contains NaN or infinity.")
        self.out_activation_ = "identity"
        return X, y

    def _axon_targets(self, y):
        return y.astype(np.float32)

    def _validation_score(self, coefs, intercepts, X_val, y_val):
        return r2_score(y_val, _forward(coefs, intercepts, X_val, self.activation, "identity"))

    @available_if(_AxonMLP._check_solver)
    def partial_fit(self, X, y):
        """One epoch over (X, y), continuing from the current weights."""
        return self._fit(X, y, incremental=True)

    def predict(self, X):
        """Predictions (rows,) for one output, else (rows, outputs)."""
        p = self._predict_raw(X)
        return p.ravel() if p.shape[1] == 1 else p
