#!/bin/bash
# metrics_resume.sh: `axon train --metrics FILE --resume CHECKPOINT` continues
# the metrics file of the run it resumes. The lines of the epochs before the
# checkpoint are kept, those written after it (by the run that went on and
# was then killed) are dropped, and so is a line cut short by a kill, so the
# file of an interrupted and resumed run equals that of a run never
# interrupted, except the timing columns (seconds, gflops). Also: resuming
# twice from the same checkpoint gives the same file, a missing file is
# created with a note, and no temporary file is left behind.
#
# usage: metrics_resume.sh AXON WORKDIR
set -u
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "metrics_resume: FAIL: $*" >&2; exit 1; }
# A metrics file without its timing columns.
untimed() { sed -E 's/,"seconds":[^,}]*//; s/,"gflops":[^,}]*//' "$1"; }
same_as_reference() {
    diff <(untimed reference.jsonl) <(untimed "$1") >/dev/null ||
        { diff <(untimed reference.jsonl) <(untimed "$1"); fail "$2"; }
}

# Training, validation and test losses all present, dropout and shuffling on.
data=(--data synth:linear --rows 3000 --features 6 --test synth:linear)
options=(--val-split 0.2 --layers 12:relu,1 --batch 64 --lr 0.01 --dropout 0.1 --seed 7 --epochs 6)
common=(--threads 1 --quiet)

"$axon" train "${data[@]}" "${options[@]}" "${common[@]}" --metrics reference.jsonl ||
    fail "the uninterrupted run failed"
[ "$(wc -l <reference.jsonl)" -eq 6 ] || fail "the reference has $(wc -l <reference.jsonl) lines, not 6"
grep -q '"val_loss":null\|"test_loss":null\|"train_loss":null' reference.jsonl &&
    fail "the reference lacks a loss: $(head -n 1 reference.jsonl)"

# The run that "was killed": it went on past its checkpoints and wrote all
# six lines, then a seventh cut short, as a SIGKILL during a write leaves it.
"$axon" train "${data[@]}" "${options[@]}" "${common[@]}" --metrics run.jsonl \
    --checkpoint-every 2 --keep-checkpoints 0 --checkpoint run || fail "the checkpointed run failed"
printf '{"epoch":7,"train_loss":0.12' >>run.jsonl

# Resumed from epoch 2: lines 3 to 6 (and the cut one) dropped, then written again.
"$axon" train --resume run.epoch-000002.safetensors "${data[@]}" "${common[@]}" \
    --metrics run.jsonl 2>resume.err || { cat resume.err; fail "the resumed run failed"; }
[ -s resume.err ] && { cat resume.err; fail "the resumed run printed a note or an error"; }
same_as_reference run.jsonl "resumed from epoch 2: the metrics differ from the uninterrupted run's"

# Resumed again, from epoch 4 of the now complete file: the same result.
"$axon" train --resume run.epoch-000004.safetensors "${data[@]}" "${common[@]}" \
    --metrics run.jsonl || fail "the second resumed run failed"
same_as_reference run.jsonl "resumed from epoch 4: the metrics differ from the uninterrupted run's"

# An interrupted run stopped inside an epoch keeps the epochs it finished:
# the checkpoint of epoch 4 restarted with a file holding epochs 1 to 5.
head -n 5 reference.jsonl >cut.jsonl
"$axon" train --resume run.epoch-000004.safetensors "${data[@]}" "${common[@]}" \
    --metrics cut.jsonl || fail "the resumed run on cut.jsonl failed"
same_as_reference cut.jsonl "resumed with epoch 5 already written: the metrics differ"

# No file to continue: created with the resumed epochs only, and a note.
"$axon" train --resume run.epoch-000004.safetensors "${data[@]}" "${common[@]}" \
    --metrics new.jsonl 2>new.err || { cat new.err; fail "the resumed run without a file failed"; }
grep -q "the metrics file new.jsonl did not exist; it holds epochs 5 on only" new.err ||
    { cat new.err; fail "no note about the missing metrics file"; }
diff <(untimed new.jsonl) <(untimed reference.jsonl | tail -n 2) >/dev/null ||
    fail "the new metrics file does not hold epochs 5 and 6"

# A file with a gap: kept as found, with a note saying so.
sed -n 2p reference.jsonl >gap.jsonl
"$axon" train --resume run.epoch-000002.safetensors "${data[@]}" "${common[@]}" \
    --metrics gap.jsonl 2>gap.err || { cat gap.err; fail "the resumed run on a file with a gap failed"; }
grep -q "held 1 line for the 2 epochs before the checkpoint" gap.err ||
    { cat gap.err; fail "no note about the missing epoch 1"; }
[ "$(wc -l <gap.jsonl)" -eq 5 ] || fail "gap.jsonl has $(wc -l <gap.jsonl) lines, not 5"

ls ./*.tmp.* >/dev/null 2>&1 && fail "a temporary metrics file was left behind: $(ls ./*.tmp.*)"
echo "metrics_resume: resumed metrics equal the uninterrupted run's (timing columns aside)"
