#!/usr/bin/env bash
# thread_bits.sh [AXON] [WORKDIR]: trains the benchmark workloads (B1(a),
# B1(b), B2 in float32, float64 and bf16; the galaxy classifier by CG and
# L-BFGS; LeNet, axon bench lenet's network, one epoch in float32) with
# --threads 1 and --threads 2 and compares the weights
# exactly (tests/compare_models.py, tolerance 0): axon's results do not
# depend on its thread count.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
axon=$(realpath "${1:-$root/build/axon}") work=${2:-/tmp/thread_bits}
galaxy=$root/build/data/galaxy
mkdir -p "$work" && cd "$work" || exit 1
fashion=(--data fashion-mnist --layers 128:relu,128:relu,10:softmax)
b2=(--data synth:linear --rows 50000 --features 20
    --layers 256:tanh,256:tanh,256:tanh,256:tanh,256:tanh,1 --lr 0.001 --momentum 0)
gal=(--data "$galaxy/train.csv" --test "$galaxy/test.csv" --scale 1/255
     --layers 8:sigmoid,3:sigmoid --loss binary-cross-entropy --batch 0 --l2 0.00037037037)
status=0
check() { # check NAME ARGS...: trains with 1 and with 2 threads, compares
    local name=$1; shift
    for t in 1 2; do
        "$axon" train "$@" --seed 1 --threads $t --quiet --out "$name.t$t.safetensors" || return 1
    done
    printf '%-12s ' "$name"
    /usr/bin/python3 "$root/tests/compare_models.py" "$name.t1.safetensors" "$name.t2.safetensors" 0 \
        || status=1
}
for p in f32 f64 bf16; do
    check "b1a-$p" "${fashion[@]}" --lr 0.1 --momentum 0.9 --batch 128 --epochs 1 --precision $p
    check "b1b-$p" "${fashion[@]}" --lr 0.5 --momentum 0 --batch 0 --epochs 3 --precision $p
    check "b2-$p" "${b2[@]}" --batch 1024 --epochs 1 --precision $p
done
check galaxy-cg "${gal[@]}" --optimizer cg --epochs 50
check galaxy-lbfgs "${gal[@]}" --optimizer lbfgs --epochs 50
check lenet-f32 --data fashion-mnist --lr 0.01 --momentum 0.9 --batch 128 --epochs 1 \
    --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax
exit $status
