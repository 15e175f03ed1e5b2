"""test_sklearn_checks.py: scikit-learn's own estimator checks
(parametrize_with_checks) for axon.sklearn.MLPClassifier and MLPRegressor.
A check that cannot pass is listed with its reason in the estimator's
_xfail_checks tag (scikit-learn's mechanism): pytest reports it as xfail, and
as XPASS if it starts passing."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from axon.sklearn import MLPClassifier, MLPRegressor


@parametrize_with_checks([MLPClassifier(max_iter=200), MLPRegressor(max_iter=200)])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
