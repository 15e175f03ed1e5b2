#!/usr/bin/env bash
# python_env.sh [DIR]: makes `import axon` work in Debian's python3, after
# scripts/setup.sh has built libaxon into build/. Creates a virtual
# environment in DIR (default .venv) that sees Debian's own packages
# (--system-site-packages: NumPy, SciPy and scikit-learn from apt) and adds
# this checkout's python/ folder to it with a path file (axon.pth), so that
# the package is used from here and finds build/libaxon.so.0 beside it.
#
# Why this way (PEP 668): Debian marks its python3 "externally managed", so
# `pip install` into it is refused, and --break-system-packages would mix
# files apt does not know into /usr. A venv is the place PEP 668 names for
# such packages; with the system site packages it needs no download and no
# pip (the package is pure Python over ctypes: nothing to build), and
# deleting DIR removes every trace. Use DIR/bin/python, or activate it with
# `source DIR/bin/activate`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$repo/.venv}
[ -e "$repo/build/libaxon.so.0" ] || { echo "python_env: no $repo/build/libaxon.so.0: run bash scripts/setup.sh first" >&2; exit 1; }
/usr/bin/python3 -m venv --system-site-packages --without-pip "$dir"
site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$repo/python" > "$site/axon.pth"
"$dir/bin/python" -c 'import axon, axon.sklearn; print("python_env: import axon works in", __import__("sys").prefix + "/bin/python:", "axon", axon.__version__, "on", axon.library_path)'
