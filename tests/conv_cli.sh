#!/bin/bash
# conv_cli.sh: convolutional networks from the command line, on a small set
# of 4-D .npy images (N, H, W, C) NumPy draws here:
# - every optimizer (sgd, sgd with Nesterov, adam, cg, lbfgs), in float32,
#   float64 and bf16 (sgd), with dropout and L2, lowers the training loss;
# - a run stopped at a checkpoint and resumed (--resume) ends with a model
#   byte-identical to the uninterrupted run's (one thread), for sgd and lbfgs;
# - 1 and 2 threads train byte-identical models (float32 and float64);
# - --init-from a conv model continues from its weights: an epoch of sgd at
#   learning rate 1e-30 leaves its predictions unchanged;
# - axon predict reads the model's image shape (input_shape) back;
# - axon stats names each layer's kind, shape and activation;
# - bad layouts and shapes are refused before training
#   (status 2, or 1 for shapes, which need the data) and a message naming
#   the layer, the place in the item and the shapes.
#
# usage: conv_cli.sh AXON WORKDIR
set -u
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "conv_cli: FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/test_python.sh"
need_python numpy # writes the images

"$PYTHON" - <<'EOF' || fail "NumPy could not write the data"
import numpy as np
rng = np.random.default_rng(5)
n, h, w, c = 240, 10, 9, 2
labels = rng.integers(0, 3, n)
x = rng.normal(0, 0.3, (n, h, w, c)).astype(np.float32)
for k in range(3):  # a class is a bright square somewhere of its own
    x[labels == k, 3 * k:3 * k + 4, 2:6, k % c] += 1.0
np.save("images.npy", x)
np.save("labels.npy", labels.astype(np.int64))
np.save("flat.npy", x.reshape(n, -1))
EOF

data=(--data images.npy --labels labels.npy)
layers="conv:4x3x3/p1:relu,maxpool:2,conv:6x3x2/s1:tanh,avgpool:2/s1,16:relu,3:softmax"
common=(--threads 1 --quiet --seed 3)

first_last_loss() { # metrics FILE: the first and last training loss
    sed -E 's/.*"train_loss":([^,}]*).*/\1/' "$1" | sed -n '1p;$p' | tr '\n' ' '
}
decreases() { # NAME METRICS
    read -r first last <<<"$(first_last_loss "$2")"
    "$PYTHON" -c "import sys; f, l = float('$first'), float('$last'); sys.exit(0 if l < f and l == l else 1)" ||
        fail "$1: the training loss went from $first to $last"
}

for run in "sgd f32" "sgd f64" "sgd bf16" "nesterov f32" "adam f32" "cg f64" "lbfgs f64"; do
    read -r optimizer precision <<<"$run"
    extra=()
    case $optimizer in
    nesterov) extra=(--optimizer sgd --nesterov --dropout 0.2) ;;
    sgd) extra=(--optimizer sgd --l2 0.001) ;;
    adam) extra=(--optimizer adam --batch 32) ;;
    cg | lbfgs) extra=(--optimizer "$optimizer" --batch 0) ;;
    esac
    "$axon" train "${data[@]}" --layers "$layers" --epochs 4 --precision "$precision" \
        "${extra[@]}" "${common[@]}" --metrics "$optimizer-$precision.jsonl" 2>err.txt ||
        { cat err.txt; fail "$optimizer in $precision failed"; }
    decreases "$optimizer in $precision" "$optimizer-$precision.jsonl"
done
echo "conv_cli: sgd (f32, f64, bf16), nesterov with dropout, adam, cg and lbfgs lower the loss"

# Checkpoints: stopped after epoch 2 of 4 and resumed, the same bytes.
for optimizer in sgd lbfgs; do
    batch=32
    [ "$optimizer" = lbfgs ] && batch=0
    options=(--layers "$layers" --optimizer "$optimizer" --batch "$batch" --epochs 4)
    "$axon" train "${data[@]}" "${options[@]}" "${common[@]}" --out whole-$optimizer.safetensors ||
        fail "the uninterrupted $optimizer run failed"
    "$axon" train "${data[@]}" "${options[@]}" "${common[@]}" --checkpoint-every 2 \
        --keep-checkpoints 0 --checkpoint part-$optimizer --out ignored.safetensors ||
        fail "the checkpointed $optimizer run failed"
    "$axon" train --resume part-$optimizer.epoch-000002.safetensors "${data[@]}" --threads 1 --quiet \
        --out resumed-$optimizer.safetensors 2>err.txt || { cat err.txt; fail "resuming $optimizer failed"; }
    cmp -s whole-$optimizer.safetensors resumed-$optimizer.safetensors ||
        fail "$optimizer resumed from epoch 2 is not the uninterrupted run's model"
done
echo "conv_cli: sgd and lbfgs resumed from a checkpoint give the uninterrupted models byte for byte"

# Threads: 1 and 2 give the same bytes, in float32 and float64, with a first
# layer whose weight gradient (16 filters x 18 window values over 120 x 56
# positions) takes the long-k kernel (src/backend/cpu/long_gemm.c) where the
# CPU has AVX-512.
for precision in f32 f64; do
    for threads in 1 2; do
        "$axon" train "${data[@]}" --layers conv:16x3x3:relu,maxpool:2,conv:6x2x2:tanh,3:softmax \
            --batch 120 --epochs 2 --precision $precision --seed 3 --quiet --threads $threads \
            --out threads$threads-$precision.safetensors 2>err.txt ||
            { cat err.txt; fail "training on $threads thread(s) in $precision failed"; }
    done
    cmp -s threads1-$precision.safetensors threads2-$precision.safetensors ||
        fail "$precision: 1 and 2 threads trained different models"
done
echo "conv_cli: 1 and 2 threads train the same bytes (f32, f64)"

# --init-from: the model's network and weights; a learning rate of 1e-30 leaves
# them as they are in float32.
"$axon" train "${data[@]}" --init-from whole-sgd.safetensors --optimizer sgd --lr 1e-30 --momentum 0 \
    --epochs 1 "${common[@]}" --out again.safetensors 2>err.txt || { cat err.txt; fail "--init-from failed"; }
"$axon" predict --model whole-sgd.safetensors "${data[@]}" --out before.csv ||
    fail "predict with the conv model failed"
"$axon" predict --model again.safetensors "${data[@]}" --out after.csv ||
    fail "predict with the --init-from model failed"
cmp -s before.csv after.csv || fail "--init-from with learning rate 1e-30 changed the predictions"
[ "$(wc -l <before.csv)" -eq 241 ] || fail "predict wrote $(wc -l <before.csv) lines, not 241"
# Images of another shape with as many values per row are refused, not misread.
"$PYTHON" -c "import numpy as np; np.save('transposed.npy', np.ascontiguousarray(np.load('images.npy').transpose(0, 2, 1, 3)))" ||
    fail "NumPy could not write transposed.npy"
for command in predict eval; do
    "$axon" $command --model whole-sgd.safetensors --data transposed.npy --labels labels.npy \
        >out.txt 2>err.txt && fail "$command took 9x10x2 images for a 10x9x2 model"
    grep -qF "transposed.npy holds 9x10x2 images but whole-sgd.safetensors takes 10x9x2 (height x width x channels)" err.txt ||
        { cat err.txt; fail "$command: no message naming both shapes"; }
done
echo "conv_cli: --init-from a conv model keeps its weights; predict reads its image shape"

# axon stats names a layer by its kind, shape and activation (issue 25: it read
# the dense activation of every kind, "unknown" for a conv, "tanh" for a pool).
if "$axon" info --json | grep -q '"stats":true'; then
    for pair in "0 0" "1 1" "2 2" "3 3"; do
        read -r x y <<<"$pair"
        "$axon" stats entropy-mi --model whole-sgd.safetensors "${data[@]}" --layer "$x" \
            --layer-y "$y" >>stats.txt 2>&1 || { cat stats.txt; fail "stats of layer $x failed"; }
    done
    for label in "layer 0 (conv, 10x9x4 = 360 wide, relu)" \
        "layer 1 (maxpool, 5x4x4 = 80 wide, no activation)" \
        "layer 2 (conv, 3x3x6 = 54 wide, tanh)" "layer 3 (avgpool, 2x2x6 = 24 wide, no activation)"; do
        grep -qF "$label" stats.txt || { cat stats.txt; fail "axon stats does not say '$label'"; }
    done
    echo "conv_cli: axon stats names conv and pooling layers by kind, shape and activation"
fi

# Refusals, the message naming what is wrong: a malformed layout is a usage
# error (status 2, before the data is read); a layout the data's images do
# not fit is found once they are read (status 1), before training.
refused() { # STATUS EXPECTED-TEXT ARGS...: the run must fail with STATUS naming the text
    local expected=$1 text=$2
    shift 2
    "$axon" train "$@" --epochs 1 --quiet >out.txt 2>err.txt
    local status=$?
    [ $status -eq "$expected" ] || { cat err.txt; fail "status $status, not $expected, for: $*"; }
    [ -s out.txt ] && { cat out.txt; fail "the refused run printed on stdout: $*"; }
    grep -qF -- "$text" err.txt || { cat err.txt; fail "the message lacks '$text' for: $*"; }
}
refused 2 "layer 1: 'conv:4x3:relu' stops fitting at character 9 (':relu'); expected conv:FILTERSxHEIGHTxWIDTH" \
    "${data[@]}" --layers conv:4x3:relu,3:softmax
refused 2 "'conv:4x3x3/q1:relu' stops fitting at character 11 ('/q1:relu')" \
    "${data[@]}" --layers conv:4x3x3/q1:relu,3:softmax
refused 2 "'maxpool2' stops fitting at character 8 ('2'); expected maxpool:WINDOW[/sSTRIDE]" \
    "${data[@]}" --layers conv:4x3x3,maxpool2,3:softmax
refused 2 "padding 3 is out of range (0 to 2" "${data[@]}" --layers conv:4x3x3/p3,3:softmax
refused 2 "softmax is only allowed on a dense output layer" "${data[@]}" --layers conv:4x3x3:softmax,3:softmax
refused 2 "layer 2 ('conv:3x1x1'): a convolution cannot be the output layer" "${data[@]}" --layers conv:4x3x3,conv:3x1x1
refused 2 "layer 2 ('avgpool:2'): pooling cannot be the output layer" "${data[@]}" --layers conv:4x3x3,avgpool:2
refused 1 "layer 3 (conv:8x5x5:relu): its 5x5 kernel is larger than its input, 4x3x4 (height x width x channels) padded by 0" \
    "${data[@]}" --layers conv:4x3x3:relu,maxpool:2,conv:8x5x5,3:softmax
refused 1 "layer 2 (maxpool:5): its 5x5 window leaves nothing of its input, 4x3x4" \
    "${data[@]}" --layers conv:4x7x7,maxpool:5,3:softmax
refused 1 "layer 2 (conv:4x3x3:relu) needs an image input, but layer 1 is dense" \
    "${data[@]}" --layers 16,conv:4x3x3,3:softmax
refused 1 "layer 1 (conv:4x3x3:relu) needs an image input, but the input is 180 values per row with no image shape" \
    --data flat.npy --labels labels.npy --layers conv:4x3x3,3:softmax
echo "conv_cli: bad layouts and shapes refused before training, named"
echo "conv_cli: all checks passed"
