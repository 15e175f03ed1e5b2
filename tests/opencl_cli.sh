#!/usr/bin/env bash
# opencl_cli.sh AXON WORKDIR: the OpenCL backend from the command line.
# - axon info lists the OpenCL devices (name, compute units, memory, fp64,
#   estimated peak);
# - axon train --device opencl --precision f64 ends at the CPU's weights
#   (within 1e-9, tests/compare_models.py) and says which device it used;
# - a LeNet-style convolutional net (conv 32 5x5, max-pool 2, conv 64 5x5,
#   max-pool 2, 1024 ReLU, 10 softmax) trained for 1 epoch on 1000
#   Fashion-MNIST images (.npy of (N, 28, 28, 1), from the t10k files) with
#   --device opencl ends at the CPU's weights within 1e-9 in float64 (skipped,
#   saying so, where dataset-fashion-mnist is not installed);
# - the refusals, each triggered for real, exit 1 with a message naming the
#   device: a device number past the list; float64 on a device without
#   cl_khr_fp64 (AXON_OPENCL_HIDE_FP64=1 makes every device look so); a kernel
#   build that fails (AXON_OPENCL_BUILD_OPTIONS adds a bad option), whose
#   message carries the compiler's build log;
# - axon stats entropy-mi and tensor-mean --device opencl equal the CPU's
#   float64 figures within 1e-6 (when the build has statistics).
# Skipped (77), saying why, without the OpenCL plugin or an OpenCL device.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ]; then
    echo "usage: bash tests/opencl_cli.sh /path/to/axon WORKDIR" >&2
    exit 2
fi
AXON=$1
WORK=$2
case "$AXON" in /*) ;; *) AXON="$PWD/$AXON" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$WORK"
mkdir -p "$WORK" && cd "$WORK" || exit 1

info=$("$AXON" info) || { echo "opencl_cli: axon info failed" >&2; exit 1; }
if ! grep -q '^  opencl:0 ' <<< "$info"; then
    echo "SKIPPED: no OpenCL device: axon info says: $(grep '^  opencl' <<< "$info")"
    exit 77
fi

. "$HERE/test_python.sh"
need_python numpy # the weights' comparison and the statistics' references

failed=0
fail() { echo "opencl_cli: $*" >&2; failed=$((failed + 1)); }
line=$(grep '^  opencl:0 ' <<< "$info")
for word in "compute units" "GiB" "est. peak" "OpenCL"; do
    grep -qF "$word" <<< "$line" || fail "axon info's opencl:0 line lacks '$word': $line"
done
"$AXON" info --json | grep -q '"opencl_built":true,"opencl_devices":\["' ||
    fail "axon info --json lists no OpenCL device"

# The same run on the CPU and on OpenCL, float64.
train=(train --data synth:linear --layers 16:tanh,8:relu,1 --loss mse --epochs 2 --lr 0.01
       --batch 500 --precision f64 --seed 3)
"$AXON" "${train[@]}" --out cpu.safetensors > cpu.txt 2>&1 || fail "the CPU run failed: $(tail -3 cpu.txt)"
"$AXON" "${train[@]}" --device opencl --out opencl.safetensors > opencl.txt 2>&1 ||
    fail "the OpenCL run failed: $(tail -3 opencl.txt)"
grep -q '^  device      opencl:0: ' opencl.txt || fail "axon train does not name its device: $(head -8 opencl.txt)"
"$PYTHON" "$HERE/compare_models.py" opencl.safetensors cpu.safetensors 1e-9 ||
    fail "the OpenCL run's weights differ from the CPU's by more than 1e-9"

# A LeNet-style net on a Fashion-MNIST subset, CPU and OpenCL, float64.
fashion=${AXON_DATASETS:-/usr/share/datasets}/fashion-mnist
if [ -r "$fashion/t10k-images-idx3-ubyte.gz" ] && [ -r "$fashion/t10k-labels-idx1-ubyte.gz" ]; then
    "$PYTHON" - "$fashion" << 'EOF' || fail "could not write the Fashion-MNIST subset"
import gzip, sys
import numpy as np
folder = sys.argv[1]
x = np.frombuffer(gzip.open(f"{folder}/t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16)
y = np.frombuffer(gzip.open(f"{folder}/t10k-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
x = (x.reshape(-1, 28, 28, 1) / 255).astype(np.float32)
np.save("fm_x.npy", x[:1000]); np.save("fm_y.npy", y[:1000].astype(np.int32))
np.save("fm_tx.npy", x[1000:1500]); np.save("fm_ty.npy", y[1000:1500].astype(np.int32))
EOF
    lenet=(train --data fm_x.npy --labels fm_y.npy --test fm_tx.npy --test-labels fm_ty.npy
           --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax
           --epochs 1 --batch 128 --lr 0.01 --momentum 0.9 --precision f64 --seed 1)
    "$AXON" "${lenet[@]}" --out lenet_cpu.safetensors > lenet_cpu.txt 2>&1 ||
        fail "the LeNet-style CPU run failed: $(tail -3 lenet_cpu.txt)"
    "$AXON" "${lenet[@]}" --device opencl --out lenet_opencl.safetensors > lenet_opencl.txt 2>&1 ||
        fail "the LeNet-style OpenCL run failed: $(tail -3 lenet_opencl.txt)"
    grep -q '^epoch 1/1 .*test_acc' lenet_opencl.txt ||
        fail "the LeNet-style OpenCL run reports no epoch: $(tail -3 lenet_opencl.txt)"
    "$PYTHON" "$HERE/compare_models.py" lenet_opencl.safetensors lenet_cpu.safetensors 1e-9 ||
        fail "the LeNet-style OpenCL run's weights differ from the CPU's by more than 1e-9"
else
    echo "  LeNet-style run not checked: $fashion has no t10k files (apt-get install dataset-fashion-mnist)"
fi

# refuse NAME STDERR_TEXT... -- COMMAND: exit status 1 and each text in stderr.
refuse() {
    local what=$1
    shift
    local texts=()
    while [ "$1" != "--" ]; do texts+=("$1"); shift; done
    shift
    "$@" > out.txt 2> err.txt
    local rc=$?
    [ "$rc" -eq 1 ] || fail "$what: exit status $rc, expected 1 ($(tail -2 err.txt))"
    for text in "${texts[@]}"; do
        grep -qF -- "$text" err.txt || fail "$what: stderr lacks '$text': $(tail -3 err.txt)"
    done
    [ ! -e refused.safetensors ] || fail "$what: wrote its output"
}
refuse "a device past the list" "no OpenCL device 9" "axon info lists them" -- \
    "$AXON" "${train[@]}" --device opencl:9 --out refused.safetensors
refuse "float64 without cl_khr_fp64" "OpenCL device 0" "has no float64" "cl_khr_fp64" \
    "--precision f32" -- env AXON_OPENCL_HIDE_FP64=1 "$AXON" "${train[@]}" --device opencl \
    --out refused.safetensors
refuse "a kernel build that fails" "clBuildProgram" "CL_BUILD_PROGRAM_FAILURE" "build log:" \
    "undeclared identifier" -- env AXON_OPENCL_BUILD_OPTIONS=-DAX_GROUP=undefined_group_size \
    "$AXON" "${train[@]}" --device opencl --out refused.safetensors

# Statistics on the device against the CPU's float64 figures.
if grep -q '^  stats         yes' <<< "$info"; then
    "$PYTHON" - << 'EOF' || fail "could not write the statistics' inputs"
import numpy as np
rng = np.random.default_rng(4)
np.save("x.npy", rng.normal(size=(3001, 37)).astype(np.float32))
np.save("y.npy", rng.normal(size=(3001, 37)).astype(np.float32))
for name in "abc":
    np.save(f"{name}.npy", rng.normal(size=(257, 9)).astype(np.float32))
EOF
    "$AXON" stats entropy-mi --x x.npy --y y.npy --json > mi_cpu.json 2>&1 || fail "entropy-mi on the CPU: $(cat mi_cpu.json)"
    "$AXON" stats entropy-mi --x x.npy --y y.npy --json --device opencl > mi_ocl.json 2>&1 ||
        fail "entropy-mi on OpenCL: $(cat mi_ocl.json)"
    "$AXON" stats tensor-mean --fx a.npy --fy b.npy --fz c.npy --out t_cpu.npy > /dev/null 2>&1 ||
        fail "tensor-mean on the CPU failed"
    "$AXON" stats tensor-mean --fx a.npy --fy b.npy --fz c.npy --out t_ocl.npy --device opencl \
        > tm_ocl.txt 2>&1 || fail "tensor-mean on OpenCL: $(tail -3 tm_ocl.txt)"
    "$PYTHON" - << 'EOF' || fail "the OpenCL statistics differ from the CPU's by more than 1e-6"
import json, sys
import numpy as np
bad = 0
try:
    a, b = json.load(open("mi_cpu.json")), json.load(open("mi_ocl.json"))
    for key in ("entropy", "mutual_information"):
        if abs(a[key] - b[key]) > 1e-6 * max(abs(a[key]), 1e-12):
            print(f"entropy-mi {key}: cpu {a[key]!r}, opencl {b[key]!r}", file=sys.stderr)
            bad += 1
    t, u = np.load("t_cpu.npy").astype(np.float64), np.load("t_ocl.npy").astype(np.float64)
    worst = np.max(np.abs(t - u)) / max(np.max(np.abs(t)), 1e-30)
    print(f"  statistics on opencl:0: entropy-mi and tensor-mean within {worst:.3g} of the CPU's")
    bad += worst > 1e-6
except Exception as error:
    print(f"statistics: {error}", file=sys.stderr)
    bad += 1
sys.exit(1 if bad else 0)
EOF
fi

if [ "$failed" -ne 0 ]; then
    echo "opencl_cli: $failed check(s) failed" >&2
    exit 1
fi
echo "opencl_cli: info, train against the CPU (dense and convolutional), the refusals and the statistics passed"
