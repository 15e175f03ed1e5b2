#!/usr/bin/env bash
# lenet_alternate.sh: one LeNet epoch on Fashion-MNIST (axon bench lenet's
# network, lr 0.01, momentum 0.9, batch 128, seed 1) for two axon builds and
# the PyTorch peer (bench/peers/lenet_torch.py; PYTHON, default Debian's
# /usr/bin/python3 with python3-torch), alternating in rounds
# so that a changing load hits all three alike (docs/notes/conv.md).
# usage: dev/lenet_alternate.sh NEW_AXON OLD_AXON [ROUNDS [THREADS]]
#   e.g. an old build: git worktree add /tmp/old COMMIT, then cmake and
#   `cmake --build build --target axon` there
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 NEW_AXON OLD_AXON [ROUNDS [THREADS]]" >&2; exit 2; }
new=$1 old=$2 rounds=${3:-3} threads=${4:-2}
layers=conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax
axon_epoch() { # AXON -> its epoch line
    "$1" train --data fashion-mnist --layers "$layers" --lr 0.01 --momentum 0.9 --batch 128 \
        --epochs 1 --seed 1 --threads "$threads" 2>&1 | grep '^epoch 1/1'
}
for round in $(seq "$rounds"); do
    echo "round $round new   (load $(cut -d' ' -f1 /proc/loadavg)): $(axon_epoch "$new")"
    echo "round $round old   (load $(cut -d' ' -f1 /proc/loadavg)): $(axon_epoch "$old")"
    # a user's machine does not preset OPENBLAS_CORETYPE (this workplace does)
    echo "round $round torch (load $(cut -d' ' -f1 /proc/loadavg)): $(env -u OPENBLAS_CORETYPE \
        "${PYTHON:-/usr/bin/python3}" bench/peers/lenet_torch.py --epochs 1 --threads "$threads" 2>&1 | tail -1)"
done
