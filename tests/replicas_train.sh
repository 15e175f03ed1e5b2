#!/bin/bash
# replicas_train.sh: axon train --replicas P, data-parallel training with
# threads of one process as the ranks (docs/mpi.md "Replicas in one
# process"), against one plain process, in float64:
#  - SGD with a global batch (L2, a validation split with early stopping, a
#    last batch of one row that one replica does not hold, --check-replicas),
#    Adam on classes and full-batch CG end with the weights of one process
#    within 1e-10 relative;
#  - two runs of --replicas 2 are byte-identical (the sums are deterministic),
#    and so is --threads 4 --replicas 2 (2 threads per replica);
#  - the comparison itself can fail: another seed's model is refused;
#  - checkpoints: resuming an epoch checkpoint of a --replicas 2 run on 2
#    replicas ends byte-identical to the uninterrupted run; so does one
#    stopped by SIGTERM (at a known step, through AXON_TEST_FAULT) and
#    resumed; a SIGTERM after training ended lets the run complete;
#  - a replica whose shard holds a NaN ends the whole run, non-zero, naming
#    the row, and the other replica is not left waiting (a hang would reach
#    the 120 s timeout, exit 124);
#  - axon bench --replicas 2 reaches the loss of one replica (float64);
#  - --replicas 0, --replicas two, --replicas with --device cuda (and under
#    mpirun, when there is one) are refused with a message.
#
# usage: replicas_train.sh AXON WORKDIR
set -u
tests_dir=$(cd "$(dirname "$0")" && pwd)
. "$tests_dir/test_python.sh"
need_python numpy # tests/compare_models.py
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "replicas_train: FAIL: $*" >&2; exit 1; }

# Largest relative difference of each tensor: max |a - b| / max |b|.
compare() { "$PYTHON" "$tests_dir/compare_models.py" "$@"; } # compare A B TOLERANCE

# A classification set: 3 classes by the sign pattern of two features.
"$PYTHON" - <<'EOF' || fail "could not write the CSV"
import numpy as np
rng = np.random.default_rng(7)
x = rng.normal(size=(1501, 6))
y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
np.savetxt("classes.csv", np.column_stack([x, y]), delimiter=",", fmt="%.6f")
lines = open("classes.csv").read().splitlines()
lines[-1] = "nan" + lines[-1][lines[-1].index(","):]   # row 1501: rank 1's shard
open("poisoned.csv", "w").write("\n".join(lines) + "\n")
EOF

run() { timeout 120 "$axon" train "$@"; }
common=(--precision f64 --quiet)
regression=(--data synth:linear --rows 2001 --features 10 --layers 16:tanh,16:tanh,1)
# 2001 rows, 10 % held out: 1801 training rows; batch 100 leaves a last
# batch of 1 row, which one replica does not hold.
sgd=(--batch 100 --epochs 4 --l2 0.001 --lr 0.05 --val-split 0.1 --early-stop 2)

echo "SGD, 1 process and 2 replicas"
run "${regression[@]}" "${sgd[@]}" "${common[@]}" --threads 1 --out sgd1.safetensors ||
    fail "SGD in one process failed"
run "${regression[@]}" "${sgd[@]}" "${common[@]}" --threads 2 --replicas 2 --check-replicas \
    --out sgd2.safetensors > sgd2.log 2>&1 || { cat sgd2.log; fail "SGD on 2 replicas failed"; }
compare sgd2.safetensors sgd1.safetensors 1e-10 || fail "SGD on 2 replicas differs from 1 process"

echo "2 replicas again: the same bytes; 2 threads per replica: the same bytes"
run "${regression[@]}" "${sgd[@]}" "${common[@]}" --threads 2 --replicas 2 \
    --out sgd2_again.safetensors || fail "the second SGD run on 2 replicas failed"
cmp sgd2_again.safetensors sgd2.safetensors || fail "two runs on 2 replicas differ"
run "${regression[@]}" "${sgd[@]}" "${common[@]}" --threads 4 --replicas 2 \
    --out sgd2_t4.safetensors || fail "SGD on 2 replicas of 2 threads failed"
compare sgd2_t4.safetensors sgd1.safetensors 1e-10 ||
    fail "SGD on 2 replicas of 2 threads differs from 1 process"

echo "the comparison refuses a different model"
run "${regression[@]}" "${sgd[@]}" "${common[@]}" --seed 2 --out other.safetensors ||
    fail "SGD with seed 2 failed"
if compare other.safetensors sgd1.safetensors 1e-10; then
    fail "models of different seeds compared equal: the check cannot fail"
fi

echo "the header names the replicas"
run "${regression[@]}" --epochs 1 --precision f64 --threads 2 --replicas 2 > header.log 2>&1 ||
    { cat header.log; fail "a run with the header failed"; }
grep -q "replicas    2 threads of this process" header.log || { cat header.log; fail "no replicas line"; }

echo "Adam on classes (cross-entropy), 1 process and 3 replicas"
adam=(--data classes.csv --label-column -1 --layers 12:relu,3:softmax --optimizer adam --lr 0.01
      --batch 64 --epochs 3)
run "${adam[@]}" "${common[@]}" --threads 1 --out adam1.safetensors || fail "Adam in one process failed"
run "${adam[@]}" "${common[@]}" --threads 3 --replicas 3 --check-replicas --out adam3.safetensors \
    > adam3.log 2>&1 || { cat adam3.log; fail "Adam on 3 replicas failed"; }
compare adam3.safetensors adam1.safetensors 1e-10 || fail "Adam on 3 replicas differs from 1 process"

echo "CG (full batch), 1 process and 2 replicas"
cg=(--data classes.csv --label-column -1 --layers 8:tanh,3:softmax --optimizer cg --max-iter 15)
run "${cg[@]}" "${common[@]}" --threads 1 --out cg1.safetensors || fail "CG in one process failed"
run "${cg[@]}" "${common[@]}" --threads 2 --replicas 2 --out cg2.safetensors > cg2.log 2>&1 ||
    { cat cg2.log; fail "CG on 2 replicas failed"; }
compare cg2.safetensors cg1.safetensors 1e-10 || fail "CG on 2 replicas differs from 1 process"

echo "checkpoints of 2 replicas: a resumed run ends byte-identical"
ckpt=(--data classes.csv --label-column -1 --layers 12:relu,3:softmax --batch 50 --lr 0.05)
run "${ckpt[@]}" "${common[@]}" --epochs 4 --threads 2 --replicas 2 --checkpoint-every 1 \
    --keep-checkpoints 0 --checkpoint whole --out whole.safetensors || fail "the checkpointed run failed"
[ -f whole.epoch-000002.safetensors ] || fail "no checkpoint after epoch 2"
run --resume whole.epoch-000002.safetensors --data classes.csv --label-column -1 --quiet \
    --threads 2 --replicas 2 --out resumed.safetensors > resumed.log 2>&1 ||
    { cat resumed.log; fail "resuming on 2 replicas failed"; }
cmp resumed.safetensors whole.safetensors || fail "the resumed run differs from the whole run"

echo "SIGTERM to 2 replicas: both stop at one step, the checkpoint resumes byte-identical"
# The process raises SIGTERM on itself after step 40 (AXON_TEST_FAULT,
# docs/testing.md); the replicas agree on the stop with the next step's sum:
# after step 41, batch 10 of 31 in epoch 2, on any machine.
AXON_TEST_FAULT=TERM@step:40 run "${ckpt[@]}" "${common[@]}" --epochs 4 --threads 2 --replicas 2 \
    --checkpoint-every 1 --checkpoint stop --out stopped.safetensors > stopped.log 2>&1
status=$?
[ $status -eq 130 ] || { cat stopped.log; fail "SIGTERM to 2 replicas: exit status $status, not 130"; }
grep -q "training interrupted in epoch 2 of 4, after batch 10 of 31\$" stopped.log ||
    { cat stopped.log; fail "SIGTERM to 2 replicas: not stopped after batch 10 of epoch 2"; }
run --resume stop.interrupted.safetensors --data classes.csv --label-column -1 --quiet \
    --threads 2 --replicas 2 --out stop_resumed.safetensors > stop_resumed.log 2>&1 ||
    { cat stop_resumed.log; fail "resuming the interrupted 2-replica run failed"; }
cmp stop_resumed.safetensors whole.safetensors || fail "stopped and resumed differs from the whole run"

echo "SIGTERM to 2 replicas after training ended: the run completes, the model is saved"
AXON_TEST_FAULT=TERM@saving run "${ckpt[@]}" "${common[@]}" --epochs 4 --threads 2 --replicas 2 \
    --out late.safetensors > late.log 2>&1 || { cat late.log; fail "the late SIGTERM failed the run"; }
grep -q "SIGTERM arrived after training had ended; the run completed and its model was saved" late.log ||
    { cat late.log; fail "no note of the late SIGTERM"; }
cmp late.safetensors whole.safetensors || fail "the model saved after a late SIGTERM differs"

echo "a replica with bad data ends the run"
run --data poisoned.csv --label-column -1 --layers 4:relu,3:softmax --epochs 2 --threads 2 \
    --replicas 2 > poisoned.log 2>&1
status=$?
[ $status -ne 0 ] && [ $status -ne 124 ] || { cat poisoned.log; fail "a NaN in one shard: exit status $status"; }
grep -qi "nan" poisoned.log || { cat poisoned.log; fail "no message naming the NaN"; }

echo "replica 0 failing alone (--out in no folder) does not leave replica 1 waiting"
run --data classes.csv --label-column -1 --epochs 2 --threads 2 --replicas 2 \
    --out missing/model.safetensors > alone.log 2>&1
status=$?
[ $status -ne 0 ] && [ $status -ne 124 ] || { cat alone.log; fail "a failing replica 0: exit status $status"; }
grep -q "replica 0 of 2: --out missing/model.safetensors: the folder missing does not exist" alone.log ||
    { cat alone.log; fail "no message from replica 0"; }

echo "axon bench --replicas: the same run as one replica, in float64"
bench=(bench b2 --quick --repeat 1 --width 8 --batch 4096 --precision f64)
"$axon" "${bench[@]}" --threads 1 > bench1.log 2>&1 || { cat bench1.log; fail "bench b2 failed"; }
"$axon" "${bench[@]}" --threads 2 --replicas 2 > bench2.log 2>&1 ||
    { cat bench2.log; fail "bench b2 --replicas 2 failed"; }
grep -q "2 replicas of 1 thread(s)" bench2.log || { cat bench2.log; fail "bench does not name the replicas"; }
loss1=$(grep -o "loss [0-9.]*" bench1.log | head -1)
loss2=$(grep -o "loss [0-9.]*" bench2.log | head -1)
[ -n "$loss1" ] && [ "$loss1" = "$loss2" ] || fail "bench: '$loss1' alone, '$loss2' on 2 replicas"
"$axon" bench b2 --quick --replicas 0 > bench0.log 2>&1 && fail "bench --replicas 0 was accepted"
grep -q -- "--replicas" bench0.log || { cat bench0.log; fail "no message refusing bench --replicas 0"; }

echo "bad --replicas refused"
refused() { # refused TEXT ARGS...
    local text=$1
    shift
    "$axon" train --data classes.csv --label-column -1 --epochs 1 --quiet "$@" > refused.log 2>&1 &&
        fail "accepted: $*"
    grep -q -- "$text" refused.log || { cat refused.log; fail "no message '$text' for: $*"; }
}
refused "--replicas" --replicas 0
refused "--replicas" --replicas two
refused "--replicas trains replicas on the CPU" --replicas 2 --device cuda
if command -v mpirun >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
    # ASan's leak check would report Open MPI's plugins (see mpi_train).
    ASAN_OPTIONS=detect_leaks=0 timeout 120 mpirun -np 2 "$axon" train --data classes.csv \
        --label-column -1 --epochs 1 --threads 1 --replicas 2 > mpi.log 2>&1 &&
        fail "--replicas under mpirun -np 2 was accepted"
    # A build without MPI refuses mpirun -np 2 itself.
    grep -q -e "give mpirun -np P or --replicas P, not both" -e "has no MPI" mpi.log ||
        { cat mpi.log; fail "no message refusing --replicas under mpirun"; }
fi
echo "replicas_train: all passed"
