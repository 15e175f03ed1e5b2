#!/bin/bash
# kill_resume.sh: `axon train` (SGD with dropout, mini-batches) stopped at six
# steps drawn from the seed, five by SIGKILL and one by SIGTERM, resumed each
# time from the newest checkpoint, ends byte-identical to a run never
# interrupted, with equal --metrics (tests/kill_loop.sh says how). The stops
# come at known steps through AXON_TEST_FAULT, whatever the machine's speed.
# A SIGTERM after training (while the model is saved) lets the run complete.
#
# usage: kill_resume.sh AXON WORKDIR
set -u
tests_dir=$(cd "$(dirname "$0")" && pwd)
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "kill_resume: FAIL: $*" >&2; exit 1; }
source "$tests_dir/kill_loop.sh"

# 40000 rows, batch 32: 1250 steps per epoch, 37500 in all.
data=(--data synth:linear --rows 40000 --features 40)
options=(--layers 64:relu,64:relu,1 --batch 32 --lr 0.002 --dropout 0.1 --seed 3 --epochs 30)
RANDOM=12345
run_kills sgd 1250 30

echo "SIGTERM after training ended: the run completes, the model is saved whole"
small=(--data synth:linear --rows 2000 --features 8 --layers 16:relu,1 --batch 32 --lr 0.01 --epochs 2
       --threads 1 --quiet)
"$axon" train "${small[@]}" --out plain.safetensors || fail "the small run failed"
AXON_TEST_FAULT=TERM@saving "$axon" train "${small[@]}" --out late.safetensors > late.log 2>&1 ||
    { cat late.log; fail "a SIGTERM while the model is saved failed the run"; }
grep -q "SIGTERM arrived after training had ended; the run completed and its model was saved" late.log ||
    { cat late.log; fail "no note of the late SIGTERM"; }
cmp late.safetensors plain.safetensors || fail "the model saved after a late SIGTERM differs"

echo "a malformed AXON_TEST_FAULT is refused, naming the variable"
AXON_TEST_FAULT=TERM@stpe:3 "$axon" train "${small[@]}" > bad.log 2>&1 && fail "AXON_TEST_FAULT=TERM@stpe:3 accepted"
grep -q "AXON_TEST_FAULT=TERM@stpe:3: expected SIGNAL@POINT" bad.log || { cat bad.log; fail "no message"; }
echo "kill_resume: final model byte-identical to the uninterrupted run, metrics equal"
