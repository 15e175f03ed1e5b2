#!/bin/sh
# pip_install.sh SOURCE PYTHON: `pip install .` from a copy of the checkout into a fresh
# venv of PYTHON (Debian's python3, --system-site-packages for its NumPy and
# scikit-learn), offline (--no-build-isolation --no-index: setuptools from Debian), then
# MLPClassifier fits in that venv with no AXON_*, LD_LIBRARY_PATH or PYTHONPATH, from
# another folder, on the libaxon inside the installed package; the OpenCL plugin comes
# along where this build makes it, and trains on PoCL where a device exists.
# Exit 77 (skip) without venv, pip, setuptools, wheel or NumPy.
set -eu
source_dir=$1
python=$2
for module in venv pip setuptools wheel numpy sklearn; do
    if ! "$python" -c "import $module" 2>/dev/null; then
        echo "SKIPPED: $python lacks $module (apt-get install python3-venv python3-pip python3-setuptools python3-wheel python3-numpy python3-sklearn)"
        exit 77
    fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
# A fresh copy, as a clone would be: no build trees, no caches.
tar -C "$source_dir" --exclude=./build --exclude='./build-*' --exclude=./.git \
    --exclude=__pycache__ --exclude='*.egg-info' --exclude=./.venv -cf - . | tar -C "$work/src" -xf -
"$python" -m venv --system-site-packages "$work/venv"
AXON_CMAKE_ARGS="-DAXON_CUDA=OFF" "$work/venv/bin/pip" install --no-build-isolation --no-index \
    "$work/src" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }
cd "$work"
env -u PYTHONPATH -u LD_LIBRARY_PATH -u AXON_LIBRARY -u AXON_PREFIX "$work/venv/bin/python" - <<'PY'
import os, sys
import numpy as np
import axon
from axon.sklearn import MLPClassifier
package = os.path.dirname(axon.__file__)
assert package.startswith(sys.prefix), (package, sys.prefix)
assert axon.library_path == os.path.join(package, "libaxon.so.0"), axon.library_path
rng = np.random.default_rng(0)
X = rng.normal(size=(600, 8)).astype(np.float32)
y = (X[:, 0] + X[:, 1] > 0).astype(int)
# 200 epochs at 0.01 converge on this separable set (30 at the default 0.001 reached 0.83)
clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=200, learning_rate_init=0.01,
                    random_state=0).fit(X, y)
accuracy = clf.score(X, y)
assert accuracy > 0.9, accuracy
print(f"installed package: {package}, accuracy {accuracy:.3f}")
if "opencl" in axon.build_info()["backends"].split():
    assert os.path.exists(os.path.join(package, "libaxon_opencl.so"))
    if axon.device_count("opencl") > 0:
        net = axon.Net(8, "16:relu,2:softmax", device="opencl:0")
        net.train(X, y.astype(np.int32), optimizer="adam", epochs=3)
        print("opencl: trained on", net.evaluate(X, y.astype(np.int32))["accuracy"])
    else:
        print("opencl: plugin installed, no OpenCL device here")
PY
