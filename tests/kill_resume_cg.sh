#!/bin/bash
# kill_resume_cg.sh: kill_resume.sh for the full-batch line-search
# optimizers: `axon train --optimizer cg` (then lbfgs) stopped after six
# iterations drawn from the seed, five by SIGKILL and one by SIGTERM,
# resumed each time from the newest checkpoint, ends with the model (the
# weights kept by --keep-best validation) byte-identical to that of a run
# never interrupted (same seed, one thread), with equal --metrics
# (tests/kill_loop.sh says how; the stops come at known iterations through
# AXON_TEST_FAULT, whatever the machine's speed). A SIGKILL inside an
# iteration leaves the files a SIGKILL after it leaves (checkpoints are
# written between iterations), so the stops come after iterations. The
# checkpoints carry the optimizer's direction (CG) or correction pairs
# (L-BFGS) and the line-search cache's X W^T, so the resumed searches are
# those of the uninterrupted run bit for bit.
#
# usage: kill_resume_cg.sh AXON WORKDIR
set -u
tests_dir=$(cd "$(dirname "$0")" && pwd)
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "kill_resume_cg: FAIL: $*" >&2; exit 1; }
source "$tests_dir/kill_loop.sh"

# 4000 rows (3600 to train), one process: the line-search cache is used.
# One step is one iteration; each iteration ends an "epoch".
data=(--data synth:linear --rows 4000 --features 1000)
RANDOM=4242
for optimizer in cg lbfgs; do
    options=(--layers 64:tanh,1 --optimizer "$optimizer" --batch 0 --epochs 60 --seed 3
             --val-split 0.1 --keep-best validation --l2 0.0001)
    run_kills "$optimizer" 1 60
done
echo "kill_resume_cg: final models byte-identical to the uninterrupted runs, metrics equal"
