#!/bin/bash
# phases_cli.sh: `axon train --phase K=V,... --phase ...` (issue 30, part 4).
# - the epoch lines and --metrics name the phase (metrics' epoch counts the
#   run's epochs, phase_epoch the phase's);
# - two phases that change nothing but their epochs equal one run of their
#   sum bit for bit (the optimizer state is carried: a restarted velocity
#   would give other weights);
# - a run of three phases (SGD with momentum; a new rate, batch and L2; Adam
#   with early stopping) resumed from a checkpoint of phase 2 and of phase 3
#   ends with the uninterrupted run's model bytes and metrics (timing aside);
# - malformed --phase texts are refused naming the phase and the bad key.
#
# usage: phases_cli.sh AXON WORKDIR
set -u
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "phases_cli: FAIL: $*" >&2; exit 1; }
untimed() { sed -E 's/,"seconds":[^,}]*//; s/,"gflops":[^,}]*//' "$1"; }

data=(--data synth:linear --rows 2000 --features 6)
common=(--threads 1 --layers 12:relu,1 --seed 3)

# Two phases of the same settings equal one run of 5 epochs.
"$axon" train "${data[@]}" "${common[@]}" --quiet --no-shuffle --lr 0.002 --batch 50 \
    --epochs 5 --out one.safetensors || fail "the one-phase run failed"
"$axon" train "${data[@]}" "${common[@]}" --quiet --no-shuffle --lr 0.002 --batch 50 \
    --phase epochs=2 --phase epochs=3 --out two.safetensors || fail "the two-phase run failed"
cmp -s one.safetensors two.safetensors ||
    fail "two phases of the same settings differ from one run of their epochs"

# Three phases, checkpointed every epoch.
phases=(--phase "lr=0.002,momentum=0.9,batch=32,epochs=3,dropout=0.1"
        --phase "lr=0.001,batch=64,epochs=3,l2=1e-4"
        --phase "optimizer=adam,lr=0.001,epochs=4,patience=2")
"$axon" train "${data[@]}" "${common[@]}" --val-split 0.2 "${phases[@]}" \
    --checkpoint-every 1 --keep-checkpoints 0 --checkpoint run --metrics straight.jsonl \
    --out straight.safetensors >straight.out || fail "the three-phase run failed"
grep -q '^phase 1/3  epoch 1/3  loss' straight.out || fail "no 'phase 1/3  epoch 1/3' line: $(cat straight.out)"
grep -q '^phase 2/3  epoch 3/3  loss' straight.out || fail "no 'phase 2/3  epoch 3/3' line"
grep -q '^phase 3/3  epoch 1/4  loss' straight.out || fail "no 'phase 3/3  epoch 1/4' line"
head -n 1 straight.jsonl | grep -q '^{"epoch":1,"phase":1,"phase_epoch":1,"train_loss"' ||
    fail "metrics line 1: $(head -n 1 straight.jsonl)"
sed -n 4p straight.jsonl | grep -q '^{"epoch":4,"phase":2,"phase_epoch":1,' ||
    fail "metrics line 4: $(sed -n 4p straight.jsonl)"
sed -n 7p straight.jsonl | grep -q '^{"epoch":7,"phase":3,"phase_epoch":1,' ||
    fail "metrics line 7: $(sed -n 7p straight.jsonl)"
[ -f run.phase-2.epoch-000002.safetensors ] && [ -f run.phase-3.epoch-000001.safetensors ] ||
    fail "the phases' checkpoints are missing: $(ls)"

for checkpoint in run.phase-2.epoch-000001 run.phase-2.epoch-000003 run.phase-3.epoch-000001; do
    cp straight.jsonl resumed.jsonl
    "$axon" train --resume $checkpoint.safetensors "${data[@]}" --threads 1 --quiet \
        --metrics resumed.jsonl --out resumed.safetensors || fail "resuming $checkpoint failed"
    cmp -s straight.safetensors resumed.safetensors ||
        fail "resumed from $checkpoint: the model differs from the uninterrupted run's"
    diff <(untimed straight.jsonl) <(untimed resumed.jsonl) >/dev/null ||
        fail "resumed from $checkpoint: the metrics differ"
done

# Stopped by SIGTERM within phase 2 (after step 70 of its 150: phase 1 has
# 4 steps, and the fault counts a phase's steps), resumed from the
# interrupted checkpoint: the uninterrupted run's bytes.
cut=(--val-split 0.2 --phase "lr=0.002,batch=400,epochs=1" --phase "lr=0.001,batch=32,epochs=3")
"$axon" train "${data[@]}" "${common[@]}" --quiet "${cut[@]}" --out whole.safetensors ||
    fail "the uncut run failed"
AXON_TEST_FAULT=TERM@step:70 "$axon" train "${data[@]}" "${common[@]}" --quiet "${cut[@]}" \
    --checkpoint cut --out cut.safetensors 2>cut.err
[ $? -eq 130 ] || fail "the run given SIGTERM did not stop with 130: $(cat cut.err)"
grep -q "^axon: phase 2/2: training interrupted" cut.err || fail "the stop does not name phase 2: $(cat cut.err)"
[ -f cut.phase-2.interrupted.safetensors ] || fail "no cut.phase-2.interrupted.safetensors: $(ls)"
"$axon" train --resume cut.phase-2.interrupted.safetensors "${data[@]}" --threads 1 --quiet \
    --out cut.safetensors || fail "resuming the interrupted phase failed"
cmp -s whole.safetensors cut.safetensors ||
    fail "resumed after SIGTERM in phase 2: the model differs from the uninterrupted run's"

# Refusals: exit 2, the phase and the key named.
refused() { # expected-text, arguments...
    local expected=$1
    shift
    "$axon" train "${data[@]}" "$@" --quiet 2>err.txt >/dev/null
    local rc=$?
    [ $rc -eq 2 ] || fail "$* exited $rc, not 2: $(cat err.txt)"
    grep -qF -- "$expected" err.txt || fail "$*: the message lacks '$expected': $(cat err.txt)"
}
refused "--phase 2: phase 'lr=0.1,speed=3': unknown key 'speed'" --phase epochs=1 --phase "lr=0.1,speed=3"
refused "--phase 1: phase 'momentum=1.5': momentum=1.5: not a number in [0, 1)" --phase momentum=1.5
refused "'lr' is not KEY=VALUE" --phase lr
refused "epochs=0" --phase epochs=0
refused "optimizer=rmsprop" --phase optimizer=rmsprop
refused "--phase 1: patience (early stopping) watches the validation loss" --phase patience=2
refused "--phase 1: 'lr=0.1;x': ';' and '|' have no place" --phase "lr=0.1;x"
refused "--phase 2: lr_schedule, warmup and clipping apply to sgd, adam and adamw: cg" \
    --lr-schedule exp:0.5 --phase epochs=1 --phase optimizer=cg
refused "--phase 1: dropout=0.5 with a dropout per layer" --dropout 0.1,0.2 --phase dropout=0.5
grep -q '^phase 2/3   sgd, lr 0.001, momentum 0.9, batch 64, 3 epochs, l2 0.0001' straight.out ||
    fail "no line with phase 2's settings: $(grep '^phase 2/3   ' straight.out)"
"$axon" train --resume run.phase-2.epoch-000001.safetensors "${data[@]}" --phase epochs=1 \
    2>err.txt >/dev/null
[ $? -eq 2 ] && grep -q -- "--phase: a resumed run keeps the options" err.txt ||
    fail "--phase on --resume was not refused: $(cat err.txt)"
echo "phases_cli: all checks passed"
