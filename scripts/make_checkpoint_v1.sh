#!/usr/bin/env bash
# make_checkpoint_v1.sh: writes the fixtures of test_checkpoint_v1 with the
# axon of commit 2020ee2, the last before 7e21286 gave checkpoints their
# "fingerprint" field (version 2, sums over shards): a checkpoint of data
# fingerprint version 1 and the same run's uninterrupted model.
#   tests/data/checkpoint_v1_train.csv      48 rows: label, 4 features (k/8)
#   tests/data/checkpoint_v1.epoch-000002.safetensors   after epoch 2 of 4
#   tests/data/checkpoint_v1_final.safetensors          after epoch 4
# The old tree is exported with git archive into a temporary folder (no
# worktree), only its command line is built. Run from the repository root:
#   bash scripts/make_checkpoint_v1.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
old=$(mktemp -d /tmp/axon-v1-XXXXXX)
trap 'rm -rf "$old"' EXIT
git archive 2020ee2 | tar -x -C "$old"
cmake -S "$old" -B "$old/build" -DCMAKE_BUILD_TYPE=Release -DAXON_CUDA=OFF -DAXON_MPI=OFF >/dev/null
cmake --build "$old/build" -j "$(nproc)" --target axon >/dev/null
/usr/bin/python3 - "$root/tests/data/checkpoint_v1_train.csv" <<'PY'
import random, sys
r = random.Random(20240601)
with open(sys.argv[1], "w") as f:
    for i in range(48):
        x = [r.randint(-16, 16) / 8 for _ in range(4)]
        label = 0 if x[0] + x[1] < -0.5 else 1 if x[2] - x[3] < 0.25 else 2
        f.write("%d," % label + ",".join("%g" % v for v in x) + "\n")
PY
"$old/build/axon" train --data "$root/tests/data/checkpoint_v1_train.csv" --layers 6:tanh,3:softmax \
  --precision f64 --batch 8 --epochs 4 --dropout 0.25 --seed 5 --lr 0.05 --threads 1 \
  --checkpoint-every 1 --checkpoint "$old/run" --keep-checkpoints 0 --out "$old/final.safetensors"
cp "$old/run.epoch-000002.safetensors" tests/data/checkpoint_v1.epoch-000002.safetensors
cp "$old/final.safetensors" tests/data/checkpoint_v1_final.safetensors
