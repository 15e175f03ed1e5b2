#!/bin/bash
# kill_resume_cg.sh: kill_resume.sh for the full-batch line-search
# optimizers: kills `axon train --optimizer cg` (then lbfgs) with SIGKILL
# at random moments between and inside iterations, resumes each time from
# the newest checkpoint, and checks that the model finally saved, the
# weights kept by --keep-best validation, is byte-identical to that of a
# run never interrupted (same seed, one thread). One stop is a SIGTERM,
# which must end the run cleanly (exit 130) with PREFIX.interrupted written,
# resumed from that file. The checkpoints carry the optimizer's direction
# (CG) or correction pairs (L-BFGS) and the line-search cache's X W^T, so
# the resumed searches are those of the uninterrupted run bit for bit.
# About 12 s of killing per optimizer. --metrics must end equal too.
#
# usage: kill_resume_cg.sh AXON WORKDIR
set -u
axon=$1
work=$2
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "kill_resume_cg: FAIL: $*" >&2; exit 1; }
untimed() { sed -E 's/,"seconds":[^,}]*//; s/,"gflops":[^,}]*//' "$1"; }

# 4000 rows (3600 to train), one process: the line-search cache is used.
data=(--data synth:linear --rows 4000 --features 1000)
RANDOM=4242

run_optimizer() {
    local optimizer=$1
    local options=(--layers 64:tanh,1 --optimizer "$optimizer" --batch 0 --epochs 150 --seed 3
                   --val-split 0.1 --keep-best validation --l2 0.0001)
    rm -f run.* reference.* final.* log.txt
    local start
    start=$(date +%s%N)
    "$axon" train "${data[@]}" "${options[@]}" --threads 1 --quiet --out reference.safetensors \
        --metrics reference.jsonl || fail "$optimizer: the uninterrupted run failed"
    echo "$optimizer: uninterrupted run: $(( ($(date +%s%N) - start) / 1000000 )) ms"

    local kills=0 resumes=0 terms=0 deadline=$(( $(date +%s) + 12 ))
    while :; do
        local checkpoint command
        checkpoint=$(ls run.epoch-*.safetensors 2>/dev/null | sort | tail -n 1)
        if [ -n "$checkpoint" ]; then
            command=(--resume "$checkpoint" "${data[@]}")
            resumes=$((resumes + 1))
        elif [ -f run.interrupted.safetensors ]; then
            command=(--resume run.interrupted.safetensors "${data[@]}")
            resumes=$((resumes + 1))
        else
            command=("${data[@]}" "${options[@]}" --checkpoint-every 1 --checkpoint run)
        fi
        local quiet=(--quiet)
        [ $terms -eq 0 ] && [ $kills -ge 1 ] && quiet=()
        "$axon" train "${command[@]}" --threads 1 "${quiet[@]}" --out final.safetensors \
            --metrics run.jsonl >log.txt 2>&1 &
        local pid=$!
        if [ "$(date +%s)" -ge "$deadline" ]; then
            wait $pid || { cat log.txt; fail "$optimizer: the last run (not killed) failed"; }
            break
        fi
        # 0.3 to 1.3 s: a fraction of an iteration to some tens of them.
        local delay=$((300 + RANDOM % 1000))
        [ ${#quiet[@]} -eq 1 ] && sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
        if [ $terms -eq 0 ] && [ $kills -ge 1 ]; then
            for _ in $(seq 200); do
                grep -q "checkpoints run" log.txt && break
                sleep 0.05
            done
            sleep 0.$((RANDOM % 400 + 100))
            kill -TERM $pid 2>/dev/null
            wait $pid
            local status=$?
            [ $status -eq 0 ] && break # it had finished
            [ $status -eq 130 ] || { cat log.txt; fail "$optimizer: SIGTERM: exit status $status, not 130"; }
            grep -q "checkpoint written to run.interrupted.safetensors" log.txt ||
                { cat log.txt; fail "$optimizer: SIGTERM: no message naming the checkpoint"; }
            terms=1
            # The interrupted state is the newest: go on from it, killed below.
            rm -f run.epoch-*.safetensors
            "$axon" train --resume run.interrupted.safetensors "${data[@]}" --threads 1 --quiet \
                --out final.safetensors --metrics run.jsonl >log.txt 2>&1 &
            pid=$!
            resumes=$((resumes + 1))
            sleep 0.5
        fi
        if kill -KILL $pid 2>/dev/null; then
            wait $pid 2>/dev/null
            kills=$((kills + 1))
        else
            wait $pid || { cat log.txt; fail "$optimizer: a run failed before it could be killed"; }
            break
        fi
    done
    echo "$optimizer: SIGKILLs: $kills, SIGTERMs: $terms, resumes: $resumes"
    [ -f final.safetensors ] || fail "$optimizer: no final model"
    cmp reference.safetensors final.safetensors ||
        fail "$optimizer: the resumed model differs from the uninterrupted one"
    [ $kills -ge 3 ] || fail "$optimizer: only $kills kills happened; the runs were too fast to test"
    [ $terms -eq 1 ] || fail "$optimizer: the SIGTERM stop was not exercised"
    diff <(untimed reference.jsonl) <(untimed run.jsonl) ||
        fail "$optimizer: the metrics of the resumed runs differ from the uninterrupted run's"
}

run_optimizer cg
run_optimizer lbfgs
echo "kill_resume_cg: final models byte-identical to the uninterrupted runs, metrics equal"
