#!/bin/bash
# mpi_train.sh: data-parallel training under mpirun (docs/mpi.md), 2 ranks
# oversubscribed on one machine, against one process without MPI:
#  - SGD (and Adam) with global batch B on 2 ranks ends with the weights of
#    1 process with batch B, within 1e-5 relative (float64); the runs use
#    L2, a validation split with early stopping (sharded evaluation) and a
#    last batch of one row (one rank has no rows in it), and check that the
#    replicas stay identical (--check-replicas);
#  - the same with each layer's gradient sum begun during the backward pass
#    (AXON_ALLREDUCE=overlap): within 1e-5 of 1 process, and the same bytes as
#    the blocking sum;
#  - full-batch CG and L-BFGS on 2 ranks follow the 1-process trajectory;
#  - mpirun -np 1 is the same as no mpirun, byte for byte;
#  - with --val-split a rank reads only the span of rows holding its shards
#    of both parts (a NaN in the last row is found by rank 1 alone);
#  - the comparison itself can fail: another seed's model is refused;
#  - a rank given a missing file ends the whole job quickly, non-zero, with a
#    message naming the rank and the file;
#  - checkpoints on 2 ranks: resuming from an epoch checkpoint on 2 ranks ends
#    byte-identical to the uninterrupted 2-rank run, and in 1 process within
#    1e-5; a SIGTERM to rank 1 alone (raised by rank 1 itself at a known
#    step through AXON_TEST_FAULT) stops both ranks at the next step with the
#    interrupted checkpoint written by rank 0, which says where (epoch and
#    batch, as the checkpoint records them), and resuming it ends
#    byte-identical too; a SIGTERM to rank 1 after training ended lets the
#    job complete; a resume with one changed value in rank 1's shard of a
#    CSV is refused by both ranks (the fingerprint of the whole set).
# Exits 77 (skipped) when mpirun is missing.
#
# usage: mpi_train.sh AXON WORKDIR
set -u
tests_dir=$(cd "$(dirname "$0")" && pwd)
. "$tests_dir/test_python.sh"
axon=$1
work=$2
command -v mpirun >/dev/null || { echo "mpi_train: SKIP: no mpirun on PATH"; exit 77; }
need_python numpy # tests/compare_models.py
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

# Root in a container needs Open MPI's consent; --oversubscribe lets 2 ranks
# share fewer cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Shared memory between the ranks of one machine; no network probing.
export OMPI_MCA_btl=self,vader
mpi=(timeout 120 mpirun -np 2)

fail() { echo "mpi_train: FAIL: $*" >&2; exit 1; }

# Largest relative difference of each tensor: max |a - b| / max |b|.
compare() { "$PYTHON" "$tests_dir/compare_models.py" "$@"; } # compare A B TOLERANCE

# A classification set: 3 classes by the sign pattern of two features.
"$PYTHON" - <<'EOF' || fail "could not write the CSV"
import numpy as np
rng = np.random.default_rng(7)
x = rng.normal(size=(1501, 6))
y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
np.savetxt("classes.csv", np.column_stack([x, y]), delimiter=",", fmt="%.6f")
EOF

common=(--precision f64 --threads 1 --quiet)
regression=(--data synth:linear --rows 2001 --features 10 --layers 16:tanh,16:tanh,1)
# 2001 rows, 10 % held out: 1801 training rows; batch 100 leaves a last
# batch of 1 row, which one rank does not hold.
sgd=(--batch 100 --epochs 4 --l2 0.001 --lr 0.05 --val-split 0.1 --early-stop 2)

echo "SGD, 1 process and 2 ranks"
"$axon" train "${regression[@]}" "${sgd[@]}" "${common[@]}" --out sgd1.safetensors ||
    fail "SGD in one process failed"
"${mpi[@]}" "$axon" train "${regression[@]}" "${sgd[@]}" "${common[@]}" --check-replicas \
    --out sgd2.safetensors > sgd2.log 2>&1 || { cat sgd2.log; fail "SGD on 2 ranks failed"; }
compare sgd2.safetensors sgd1.safetensors 1e-5 || fail "SGD on 2 ranks differs from 1 process"

echo "SGD on 2 ranks, gradient sums overlapped with the backward pass (MPI_Iallreduce)"
"${mpi[@]}" -x AXON_ALLREDUCE=overlap "$axon" train "${regression[@]}" "${sgd[@]}" "${common[@]}" \
    --check-replicas --out sgd2_overlap.safetensors > sgd2_overlap.log 2>&1 ||
    { cat sgd2_overlap.log; fail "overlapped SGD on 2 ranks failed"; }
compare sgd2_overlap.safetensors sgd1.safetensors 1e-5 ||
    fail "overlapped SGD on 2 ranks differs from 1 process"
# Two ranks add a + b either way: the same bits as the blocking sum.
cmp sgd2_overlap.safetensors sgd2.safetensors || fail "overlapped and blocking sums differ"
"${mpi[@]}" -x AXON_ALLREDUCE=sideways "$axon" train "${regression[@]}" --epochs 1 --threads 1 \
    > sideways.log 2>&1 && fail "AXON_ALLREDUCE=sideways was accepted"
grep -q "AXON_ALLREDUCE=sideways: give overlap or blocking" sideways.log ||
    { cat sideways.log; fail "no message refusing AXON_ALLREDUCE=sideways"; }

echo "the comparison refuses a different model"
"$axon" train "${regression[@]}" "${sgd[@]}" "${common[@]}" --seed 2 --out other.safetensors ||
    fail "SGD with seed 2 failed"
if compare other.safetensors sgd1.safetensors 1e-5; then
    fail "models of different seeds compared equal: the check cannot fail"
fi

echo "Adam on classes (cross-entropy), 1 process and 2 ranks"
adam=(--data classes.csv --label-column -1 --layers 12:relu,3:softmax --optimizer adam --lr 0.01 --batch 64
      --epochs 3)
"$axon" train "${adam[@]}" "${common[@]}" --out adam1.safetensors || fail "Adam in one process failed"
"${mpi[@]}" "$axon" train "${adam[@]}" "${common[@]}" --check-replicas --out adam2.safetensors \
    > adam2.log 2>&1 || { cat adam2.log; fail "Adam on 2 ranks failed"; }
compare adam2.safetensors adam1.safetensors 1e-5 || fail "Adam on 2 ranks differs from 1 process"

for optimizer in cg lbfgs; do
    echo "$optimizer (full batch), 1 process and 2 ranks"
    full=(--data classes.csv --label-column -1 --layers 8:tanh,3:softmax --optimizer $optimizer --max-iter 15)
    "$axon" train "${full[@]}" "${common[@]}" --out ${optimizer}1.safetensors ||
        fail "$optimizer in one process failed"
    "${mpi[@]}" "$axon" train "${full[@]}" "${common[@]}" --out ${optimizer}2.safetensors \
        > ${optimizer}2.log 2>&1 || { cat ${optimizer}2.log; fail "$optimizer on 2 ranks failed"; }
    compare ${optimizer}2.safetensors ${optimizer}1.safetensors 1e-5 ||
        fail "$optimizer on 2 ranks differs from 1 process"
done

echo "mpirun -np 1 is one process, byte for byte"
timeout 120 mpirun -np 1 "$axon" train "${regression[@]}" "${sgd[@]}" "${common[@]}" \
    --out sgd1_mpi.safetensors || fail "mpirun -np 1 failed"
cmp sgd1_mpi.safetensors sgd1.safetensors || fail "mpirun -np 1 differs from a plain run"

echo "only rank 0 prints: one header, one summary, the rank count"
"${mpi[@]}" "$axon" train "${regression[@]}" --epochs 2 --threads 1 > print.log 2>&1 ||
    { cat print.log; fail "the printing run failed"; }
[ "$(grep -c '^axon .* train$' print.log)" = 1 ] || { cat print.log; fail "not one header"; }
grep -q "2 ranks (MPI)" print.log || { cat print.log; fail "the header does not say 2 ranks"; }
grep -q "^all-reduce .* 2 ranks" print.log || { cat print.log; fail "no all-reduce figure"; }

echo "a rank given a missing file ends the job"
cp classes.csv rank0.csv
start=$(date +%s)
timeout 60 mpirun -np 2 bash -c \
    'exec "$0" train --data rank$OMPI_COMM_WORLD_RANK.csv --label-column -1 --layers 3:softmax --epochs 50 --threads 1' \
    "$axon" > missing.log 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
[ $status -ne 0 ] || { cat missing.log; fail "the job with a missing file succeeded"; }
[ $status -ne 124 ] || { cat missing.log; fail "the job with a missing file hung (timeout)"; }
grep -q "axon: rank 1 of 2: --data rank1.csv: no such file or directory" missing.log ||
    { cat missing.log; fail "no message naming rank 1 and its missing file"; }
echo "  ended with status $status after ${elapsed} s"

echo "--val-split on 2 ranks: a rank reads only the rows that hold its shards"
# A NaN in the last row of a .npy file: rank 1's span holds it, rank 0's
# (about the first half of the rows) does not. When every rank read the whole
# file to split it, both found the NaN; now rank 1 alone does and ends the job.
"$PYTHON" -c '
import numpy as np
x = np.random.RandomState(1).rand(400, 4).astype(np.float32)
x[:, 0] = np.arange(400) % 3
x[-1, 2] = np.nan
np.save("nan_last.npy", x)' || fail "could not write nan_last.npy"
"${mpi[@]}" "$axon" train --data nan_last.npy --val-split 0.1 --layers 3:softmax --epochs 1 \
    --threads 1 --quiet > nan.log 2>&1 && { cat nan.log; fail "the NaN was not found"; }
grep -q "rank 1 of 2: .*nan_last.npy.*NaN" nan.log || { cat nan.log; fail "rank 1 did not find the NaN"; }
grep -q "rank 0 of 2: .*NaN" nan.log && { cat nan.log; fail "rank 0 read rows outside its span"; }

echo "checkpoints on 2 ranks: resumed from an epoch checkpoint, byte-identical"
# The uninterrupted 2-rank run writes every epoch's checkpoint (rank 0 alone);
# resuming from the third one on 2 ranks must end with the same bytes.
checkpointed=(--batch 100 --epochs 6 --l2 0.001 --lr 0.05 --val-split 0.1)
"${mpi[@]}" "$axon" train "${regression[@]}" "${checkpointed[@]}" "${common[@]}" \
    --checkpoint-every 1 --keep-checkpoints 0 --checkpoint run --out whole.safetensors \
    > whole.log 2>&1 || { cat whole.log; fail "the checkpointed 2-rank run failed"; }
[ "$(ls run.epoch-*.safetensors | wc -l)" = 6 ] || { ls; fail "not 6 epoch checkpoints"; }
"${mpi[@]}" "$axon" train --resume run.epoch-000003.safetensors "${regression[@]:0:6}" \
    --threads 1 --quiet --out resumed.safetensors > resumed.log 2>&1 ||
    { cat resumed.log; fail "resuming on 2 ranks failed"; }
cmp resumed.safetensors whole.safetensors || fail "resumed on 2 ranks differs from the whole run"

echo "a 2-rank checkpoint resumes in 1 process (same global data), up to rounding"
"$axon" train --resume run.epoch-000003.safetensors "${regression[@]:0:6}" --threads 1 --quiet \
    --out resumed1.safetensors || fail "resuming a 2-rank checkpoint in 1 process failed"
compare resumed1.safetensors whole.safetensors 1e-5 ||
    fail "resumed in 1 process differs from the 2-rank run"

echo "SIGTERM to rank 1 alone: both ranks stop at one step, rank 0 writes the checkpoint"
# Rank 1 raises SIGTERM on itself right after step 1234 (AXON_TEST_FAULT,
# docs/testing.md): its vote to stop travels with the next step's sum, so
# both ranks stop after step 1235, in epoch 4 at batch 35 of 400, on any
# machine however fast or busy.
long=(--data synth:linear --rows 20000 --features 10)
long_options=(--layers 32:tanh,32:tanh,1 --batch 50 --epochs 4 --lr 0.01)
"${mpi[@]}" "$axon" train "${long[@]}" "${long_options[@]}" "${common[@]}" \
    --out long.safetensors > long.log 2>&1 || { cat long.log; fail "the long 2-rank run failed"; }
# rank_fault FAULT COMMAND...: COMMAND on 2 ranks, rank 1 with AXON_TEST_FAULT=FAULT.
rank_fault() {
    local fault=$1
    shift
    "${mpi[@]}" bash -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export AXON_TEST_FAULT=$0; exec "$@"' \
        "$fault" "$@"
}
rank_fault TERM@step:1234 "$axon" train "${long[@]}" "${long_options[@]}" "${common[@]}" \
    --checkpoint-every 1 --checkpoint stop --out stopped.safetensors > stopped.log 2>&1
status=$?
[ $status -eq 130 ] || { cat stopped.log; fail "the stopped job: exit status $status, not 130"; }
grep -q "rank 0 of 2: checkpoint written to stop.interrupted.safetensors" stopped.log ||
    { cat stopped.log; fail "rank 0 did not report the interrupted checkpoint"; }
grep -q "rank 0 of 2: training interrupted in epoch 4 of 4, after batch 35 of 400\$" stopped.log ||
    { cat stopped.log; fail "rank 0 did not say it stopped after batch 35 of epoch 4"; }
# The checkpoint records the same place.
"$PYTHON" - <<'EOF2' || fail "the interrupted checkpoint does not record epoch 4, batch 35"
import json, struct, sys
raw = open("stop.interrupted.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
state = json.loads(json.loads(raw[8:8 + n])["__metadata__"]["state"])
sys.exit(0 if (state["epoch"], state["batch"]) == (3, 35) else 1)
EOF2
grep -q "rank 1 of 2: .*interrupted" stopped.log &&
    { cat stopped.log; fail "rank 1 spoke of the interruption (rank 0 alone reports it)"; }
"${mpi[@]}" "$axon" train --resume stop.interrupted.safetensors "${long[@]}" --threads 1 --quiet \
    --out long_resumed.safetensors > long_resumed.log 2>&1 ||
    { cat long_resumed.log; fail "resuming the interrupted checkpoint failed"; }
cmp long_resumed.safetensors long.safetensors ||
    fail "stopped by SIGTERM and resumed on 2 ranks differs from the uninterrupted run"

echo "SIGTERM to rank 1 after training ended: the job completes, the model is saved"
# Before, axon's handlers were gone by then: the signal killed rank 1 and
# mpirun aborted the job.
rank_fault TERM@saving "$axon" train "${long[@]}" "${long_options[@]}" "${common[@]}" \
    --out late.safetensors > late.log 2>&1 || { cat late.log; fail "the job signalled after training failed"; }
grep -q "rank 1 of 2: SIGTERM arrived after training had ended; the run completed" late.log ||
    { cat late.log; fail "rank 1 did not note the late SIGTERM"; }
cmp late.safetensors long.safetensors || fail "the model saved after a late SIGTERM differs"

echo "a resume with changed data is refused on every rank"
# Adam on the CSV, checkpointed; then one value in rank 1's shard changes.
"${mpi[@]}" "$axon" train "${adam[@]}" "${common[@]}" --checkpoint-every 1 --checkpoint csv \
    > csv.log 2>&1 || { cat csv.log; fail "the checkpointed Adam run failed"; }
"$PYTHON" - <<'EOF2' || fail "could not change the CSV"
lines = open("classes.csv").read().splitlines()
values = lines[-3].split(",")
values[2] = "%.6f" % (float(values[2]) + 0.5)
lines[-3] = ",".join(values)
open("changed.csv", "w").write("\n".join(lines) + "\n")
EOF2
"${mpi[@]}" "$axon" train --resume csv.epoch-000003.safetensors --data changed.csv --label-column -1 \
    --threads 1 --quiet > changed.log 2>&1 && { cat changed.log; fail "changed data was accepted"; }
for rank in 0 1; do
    grep -q "rank $rank of 2: .*the training data has the checkpoint's shape but not its values" \
        changed.log || { cat changed.log; fail "rank $rank did not refuse the changed data"; }
done
"${mpi[@]}" "$axon" train --resume csv.epoch-000003.safetensors --data classes.csv --label-column -1 \
    --threads 1 --quiet > unchanged.log 2>&1 ||
    { cat unchanged.log; fail "the unchanged CSV was refused"; }

echo "mpi_train: all passed"
