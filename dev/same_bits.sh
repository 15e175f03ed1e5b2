#!/usr/bin/env bash
# same_bits.sh OLD_AXON NEW_AXON [WORKDIR]: trains the Fashion-MNIST MLP
# (mini-batch 5 epochs, and full batch 5 epochs), the deep tanh regression
# (1 epoch, batch 1024) and the galaxy classifier (CG, 300 iterations) with
# fixed seeds on both binaries and compares the weights exactly
# (tests/compare_models.py, tolerance 0); then times both, alternating, with
# axon bench (b1a, b2, galaxy-cg). Both binaries get the same OpenBLAS
# kernels (OPENBLAS_CORETYPE=Cooperlake, or CORE=...): other kernels round
# differently. The galaxy data is the one the build unpacks (build/data).
set -u
old=$1 new=$2 work=${3:-/tmp/same_bits}
root=$(cd "$(dirname "$0")/.." && pwd)
galaxy=$root/build/data/galaxy
export OPENBLAS_CORETYPE=${CORE:-Cooperlake}
mkdir -p "$work" && cd "$work" || exit 1
train() { # train AXON TAG
    local a=$1 t=$2 q=(--seed 1 --threads 2 --quiet)
    "$a" train --data fashion-mnist --layers 128:relu,128:relu,10:softmax --lr 0.1 --momentum 0.9 \
        --batch 128 --epochs 5 "${q[@]}" --out "$t.b1a.safetensors"
    "$a" train --data fashion-mnist --layers 128:relu,128:relu,10:softmax --lr 0.5 --momentum 0 \
        --batch 0 --epochs 5 "${q[@]}" --out "$t.b1b.safetensors"
    "$a" train --data synth:linear --rows 500000 --features 20 \
        --layers 256:tanh,256:tanh,256:tanh,256:tanh,256:tanh,1 --lr 0.001 --momentum 0 --batch 1024 \
        --epochs 1 "${q[@]}" --out "$t.b2.safetensors"
    "$a" train --data "$galaxy/train.csv" --test "$galaxy/test.csv" --scale 1/255 \
        --layers 8:sigmoid,3:sigmoid --loss binary-cross-entropy --optimizer cg --batch 0 --epochs 300 \
        --l2 0.00037037037 "${q[@]}" --out "$t.b3.safetensors"
}
train "$old" old && train "$new" new || exit 1
for w in b1a b1b b2 b3; do
    /usr/bin/python3 "$root/tests/compare_models.py" "new.$w.safetensors" "old.$w.safetensors" 0
done
for round in 1 2 3; do
    for who in old new; do
        a=$old; [ $who = new ] && a=$new
        echo "== round $round, $who ($(uptime | sed 's/.*load/load/'))"
        "$a" bench b1a --repeat 3 2>&1 | grep "seconds per epoch"
        "$a" bench b2 --repeat 1 2>&1 | grep "seconds per epoch"
        "$a" bench galaxy-cg --repeat 3 --galaxy "$galaxy" 2>&1 | grep "seconds per epoch"
    done
done
