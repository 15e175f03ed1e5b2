#!/bin/bash
# kill_resume.sh: kills `axon train` with SIGKILL at random moments, resumes
# each time from the newest checkpoint, and checks that the model finally
# saved is byte-identical to that of a run never interrupted (same seed,
# one thread). One stop is a SIGTERM instead, which must end the run
# cleanly (exit 130) with PREFIX.interrupted.safetensors written where
# training stood, and is resumed from that file. About 30 s of killing; the
# run after the deadline is left to finish. Every run writes --metrics to the
# same file, which must end equal to the uninterrupted run's (timing columns
# aside): no epoch lost or written twice.
#
# usage: kill_resume.sh AXON WORKDIR
set -u
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

data=(--data synth:linear --rows 40000 --features 40)
options=(--layers 64:relu,64:relu,1 --batch 32 --lr 0.002 --dropout 0.1 --seed 3 --epochs 30)
common=(--threads 1 --quiet)

fail() { echo "kill_resume: FAIL: $*" >&2; exit 1; }

# The reference: one run, never interrupted.
start=$(date +%s%N)
"$axon" train "${data[@]}" "${options[@]}" "${common[@]}" --out reference.safetensors \
    --metrics reference.jsonl ||
    fail "the uninterrupted run failed"
echo "uninterrupted run: $(( ($(date +%s%N) - start) / 1000000 )) ms"

# The newest epoch checkpoint, or nothing.
latest() { ls run.epoch-*.safetensors 2>/dev/null | sort | tail -n 1; }

RANDOM=12345
kills=0
resumes=0
terms=0
deadline=$(( $(date +%s) + 30 ))
while :; do
    checkpoint=$(latest)
    if [ -n "$checkpoint" ]; then
        command=(--resume "$checkpoint" "${data[@]}")
        resumes=$((resumes + 1))
    elif [ -f run.interrupted.safetensors ]; then
        # Stopped (SIGTERM) and then killed before an epoch ended (slow
        # builds, e.g. with sanitizers): the interrupted state is the newest.
        command=(--resume run.interrupted.safetensors "${data[@]}")
        resumes=$((resumes + 1))
    else
        command=("${data[@]}" "${options[@]}" --checkpoint-every 1 --checkpoint run)
    fi
    quiet=(--quiet)
    [ $terms -eq 0 ] && [ $kills -ge 1 ] && quiet=() # the SIGTERM run shows when training starts
    "$axon" train "${command[@]}" --threads 1 "${quiet[@]}" --out final.safetensors \
        --metrics run.jsonl >log.txt 2>&1 &
    pid=$!
    if [ "$(date +%s)" -ge "$deadline" ]; then
        wait $pid || { cat log.txt; fail "the last run (not killed) failed"; }
        break
    fi
    # 0.15 to 1.15 s: from before the first epoch ends to several epochs in
    # (an epoch takes 0.1 to 0.4 s).
    delay=$((150 + RANDOM % 1000))
    [ ${#quiet[@]} -eq 1 ] && sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    if [ $terms -eq 0 ] && [ $kills -ge 1 ]; then
        # SIGTERM once training runs (the handler is installed for training;
        # before, SIGTERM ends the program as usual, with nothing to save).
        for _ in $(seq 200); do
            grep -q "checkpoints run" log.txt && break
            sleep 0.05
        done
        sleep 0.$((RANDOM % 400 + 100))
        kill -TERM $pid 2>/dev/null
        wait $pid
        status=$?
        if [ $status -eq 0 ]; then
            break # it had finished
        fi
        [ $status -eq 130 ] || { cat log.txt; fail "SIGTERM: exit status $status, not 130"; }
        grep -q "checkpoint written to run.interrupted.safetensors" log.txt ||
            { cat log.txt; fail "SIGTERM: no message naming the checkpoint"; }
        terms=1
        # Continue from the interrupted checkpoint, then let the loop go on.
        "$axon" train --resume run.interrupted.safetensors "${data[@]}" "${common[@]}" \
            --out final.safetensors --metrics run.jsonl >log.txt 2>&1 &
        pid=$!
        resumes=$((resumes + 1))
        sleep 0.5
    fi
    if kill -KILL $pid 2>/dev/null; then
        wait $pid 2>/dev/null
        kills=$((kills + 1))
    else
        wait $pid || { cat log.txt; fail "a run failed before it could be killed"; }
        break # it had finished
    fi
done

echo "SIGKILLs: $kills, SIGTERMs: $terms, resumes: $resumes"
[ -f final.safetensors ] || fail "no final model"
cmp reference.safetensors final.safetensors ||
    fail "the resumed model differs from the uninterrupted one"
[ $kills -ge 3 ] || fail "only $kills kills happened; the runs were too fast to test"
[ $terms -eq 1 ] || fail "the SIGTERM stop was not exercised"
untimed() { sed -E 's/,"seconds":[^,}]*//; s/,"gflops":[^,}]*//' "$1"; }
diff <(untimed reference.jsonl) <(untimed run.jsonl) ||
    fail "the metrics of the resumed runs differ from the uninterrupted run's"
echo "kill_resume: final model byte-identical to the uninterrupted run, metrics equal"
