"""Shared set-up of the Python tests: the package from this source tree, and the
paths CTest passes (AXON_ABI_LAYOUT, AXON_GALAXY_DIR, AXON_DATASETS)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import axon  # noqa: E402,F401  (before NumPy: docs/python.md)
