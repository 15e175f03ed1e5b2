#!/bin/bash
# onnx_cli.sh: `axon export --model M --onnx FILE` from the command line:
# - a conv model (images (N, H, W, C) from a .npy) exports; where Python has
#   onnx (Debian's python3-onnx), the file passes onnx's checker and, run by
#   the NumPy evaluator of python/tests/onnx_numpy.py, gives the
#   probabilities `axon predict` writes (to their 6 printed digits);
# - a link is written through (it stays a link), /dev/null in place;
# - the refusals, each with its exit status and a message naming the file:
#   --onnx or --model missing (2), an unknown option (2), a folder that does
#   not exist (1), a folder as the file (1), the model as its own output (1),
#   a file that is no model (1), a full device (1: /dev/full); and none of
#   them leaves a file or a temporary behind.
#
# usage: onnx_cli.sh AXON WORKDIR
set -u
axon=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "onnx_cli: FAIL: $*" >&2; exit 1; }
. "$here/test_python.sh"
need_python numpy # writes the images

"$PYTHON" - <<'PY' || fail "NumPy could not write the data"
import numpy as np
rng = np.random.default_rng(5)
x = rng.normal(0, 1, (120, 8, 7, 2)).astype(np.float32)
np.save("images.npy", x)
np.save("labels.npy", rng.integers(0, 3, 120).astype(np.int64))
PY
"$axon" train --data images.npy --labels labels.npy --quiet --threads 1 --epochs 2 \
    --layers conv:3x3x3/p1:relu,maxpool:2,conv:4x2x2/s2:tanh,avgpool:1,5:sigmoid,3:softmax \
    --out m.safetensors || fail "training the model"

"$axon" export --model m.safetensors --onnx m.onnx > out.txt 2>&1 || fail "export: $(cat out.txt)"
grep -q "input (N, 8, 7, 2), output (N, 3)" out.txt || fail "export's line: $(cat out.txt)"
[ -s m.onnx ] || fail "no m.onnx"

if has_python onnx; then
    "$axon" predict --model m.safetensors --data images.npy --labels labels.npy \
        --out p.csv || fail "predict"
    PYTHONPATH="$here/../python/tests" "$PYTHON" - <<'PY' || fail "the ONNX file does not compute axon's predictions"
import numpy as np, onnx, onnx_numpy
model = onnx.load("m.onnx")
onnx.checker.check_model(model, full_check=True)
(got,) = onnx_numpy.run(model, {"input": np.load("images.npy")})
expected = np.loadtxt("p.csv", delimiter=",", skiprows=1)
assert np.array_equal(got.argmax(1), expected[:, 0]), "classes differ"
worst = np.abs(got - expected[:, 1:]).max()
assert worst <= 5e-6 * 1.01, f"probabilities differ by {worst}"
print(f"onnx_cli: checker passed; probabilities within {worst:.1e} of axon predict's")
PY
else
    echo "onnx_cli: no onnx module in $PYTHON: the file is not checked (apt-get install python3-onnx)"
fi

# Outputs as every axon output ("Output files"): a link is written through and stays a
# link; /dev/null is written in place.
ln -s linked.onnx link.onnx
"$axon" export --model m.safetensors --onnx link.onnx > /dev/null 2>&1 || fail "export through a link"
[ -L link.onnx ] && cmp -s linked.onnx m.onnx || fail "the link was replaced or its target differs"
"$axon" export --model m.safetensors --onnx /dev/null > /dev/null 2>&1 || fail "export to /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"

refused() { # STATUS TEXT ARGS...: axon export ARGS exits STATUS with TEXT in its message
    local status=$1 text=$2
    shift 2
    "$axon" export "$@" > err.txt 2>&1
    local got=$?
    [ "$got" -eq "$status" ] || fail "axon export $*: status $got, not $status: $(cat err.txt)"
    grep -qF -- "$text" err.txt || fail "axon export $*: message lacks '$text': $(cat err.txt)"
}
refused 2 "--onnx is required" --model m.safetensors
refused 2 "--model is required" --onnx x.onnx
refused 2 "--out" --model m.safetensors --out x.onnx
refused 1 "nodir" --model m.safetensors --onnx nodir/x.onnx
mkdir folder
refused 1 "folder" --model m.safetensors --onnx folder
refused 1 "the model" --model m.safetensors --onnx m.safetensors
echo "not a model" > fake.safetensors
refused 1 "fake.safetensors" --model fake.safetensors --onnx x.onnx
if [ -w /dev/full ]; then
    refused 1 "No space left on device" --model m.safetensors --onnx /dev/full
fi
leftover=$(ls | grep -v -E '^(images|labels)\.npy$|^m\.(safetensors|onnx)$|^link(ed)?\.onnx$|^(out|err)\.txt$|^p\.csv$|^folder$|^fake\.safetensors$')
[ -z "$leftover" ] || fail "files left behind: $leftover"
[ -z "$(ls folder)" ] || fail "files left in folder/"
echo "onnx_cli: all checks passed"
