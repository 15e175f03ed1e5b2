"""run.py [pytest arguments]: runs the Python tests as CTest's python_tests does,
exiting 77 (CTest's skip) with the reason when NumPy, pytest or scikit-learn is
missing (scripts/setup.sh installs Debian's python3-numpy, python3-pytest and
python3-sklearn)."""
import importlib.util
import os
import sys

missing = [name for name in ("numpy", "pytest", "sklearn") if importlib.util.find_spec(name) is None]
if missing:
    print(f"SKIPPED: {sys.executable} lacks {', '.join(missing)} (apt-get install "
          + " ".join("python3-" + name for name in missing) + ")")
    sys.exit(77)
here = os.path.dirname(os.path.abspath(__file__))
# axon before NumPy and scikit-learn, as docs/python.md asks (its BLAS and OpenMP settings).
sys.path.insert(0, os.path.dirname(here))
import axon  # noqa: E402,F401
import pytest  # noqa: E402

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-W", "error::RuntimeWarning", here]
                     + sys.argv[1:]))
