# kill_loop.sh, sourced by kill_resume.sh and kill_resume_cg.sh: stops a
# training run at steps drawn from the test's seed, resumes it each time
# from the newest checkpoint, and checks that the model finally saved is
# byte-identical to that of a run never interrupted, and its --metrics file
# equal (timing columns aside: no epoch lost or written twice).
#
# Each stop comes through AXON_TEST_FAULT (docs/testing.md): the process
# raises the signal on itself right after the drawn optimizer step, so the
# stop lands at the same step on every machine, fast or slow, idle or busy.
# Every stop is a SIGKILL except the third, a SIGTERM, which must end the
# run cleanly (exit 130) after that very step, say where it stopped and
# write PREFIX.interrupted.safetensors, from which the next run resumes.
#
# The sourcing script sets axon, data=(...) and options=(...) (which must
# not checkpoint: run_kills adds it) and defines fail MESSAGE.

# COUNT distinct steps in [1, LAST - 1], sorted, drawn with $RANDOM.
draw_steps() {
    local count=$1 last=$2 step
    local -A seen=()
    local drawn=()
    while [ ${#drawn[@]} -lt "$count" ]; do
        step=$(( (RANDOM * 32768 + RANDOM) % (last - 1) + 1 ))
        [ -n "${seen[$step]:-}" ] && continue
        seen[$step]=1
        drawn+=("$step")
    done
    printf '%s\n' "${drawn[@]}" | sort -n
}

# The message of a run stopped after step STEP, as axon words it.
stop_message() {
    local step=$1 per_epoch=$2 epochs=$3
    local epoch=$(( (step - 1) / per_epoch + 1 )) batch=$(( (step - 1) % per_epoch + 1 ))
    if [ "$batch" -eq "$per_epoch" ]; then # the epoch's last step: it stops at the epoch's end
        echo "training interrupted after epoch $epoch of $epochs"
    else
        echo "training interrupted in epoch $epoch of $epochs, after batch $batch of $per_epoch"
    fi
}

# run_kills LABEL STEPS_PER_EPOCH EPOCHS: the reference run, then the stops
# (the reference's metrics give the steps it ran, for runs that converge early).
run_kills() {
    local label=$1 per_epoch=$2 epochs=$3
    rm -f run.* reference.* final.* log.txt
    local start
    start=$(date +%s%N)
    "$axon" train "${data[@]}" "${options[@]}" --threads 1 --quiet --out reference.safetensors \
        --metrics reference.jsonl || fail "$label: the uninterrupted run failed"
    echo "$label: uninterrupted run: $(( ($(date +%s%N) - start) / 1000000 )) ms (for the record only)"
    local total=$(( $(wc -l < reference.jsonl) * per_epoch ))
    [ "$total" -ge 10 ] || fail "$label: the reference run made only $total steps"

    # Five steps anywhere, and one epoch's last step (stopped after the
    # epoch's work, before its checkpoint is written).
    local steps
    mapfile -t steps < <( { draw_steps 5 "$total"; echo $(( per_epoch * (1 + RANDOM % (total / per_epoch - 1)) )); } |
                          sort -n | uniq)
    echo "$label: stops after steps ${steps[*]} of $total (a SIGTERM at the third)"

    local interrupted_step=0 kills=0 terms=0 i
    for i in "${!steps[@]}" final; do
        # The newest state: the newest epoch checkpoint, or the interrupted
        # one where that is newer; nothing at first.
        local command checkpoint newest=0
        checkpoint=$(ls run.epoch-*.safetensors 2>/dev/null | sort | tail -n 1)
        [ -n "$checkpoint" ] && newest=$(( 10#$(echo "$checkpoint" | sed -E 's/.*epoch-0*([0-9]+)\..*/\1/') * per_epoch ))
        if [ "$interrupted_step" -gt "$newest" ]; then
            command=(--resume run.interrupted.safetensors "${data[@]}")
        elif [ -n "$checkpoint" ]; then
            command=(--resume "$checkpoint" "${data[@]}")
        else
            command=("${data[@]}" "${options[@]}" --checkpoint-every 1 --checkpoint run)
        fi
        if [ "$i" = final ]; then
            "$axon" train "${command[@]}" --threads 1 --quiet --out final.safetensors \
                --metrics run.jsonl > log.txt 2>&1 || { cat log.txt; fail "$label: the last run failed"; }
            break
        fi
        local step=${steps[$i]} signal=KILL
        [ "$i" -eq 2 ] && signal=TERM
        AXON_TEST_FAULT=$signal@step:$step "$axon" train "${command[@]}" --threads 1 --quiet \
            --out final.safetensors --metrics run.jsonl > log.txt 2>&1
        local status=$?
        if [ $signal = KILL ]; then
            [ $status -eq 137 ] || { cat log.txt; fail "$label: SIGKILL after step $step: exit status $status, not 137"; }
            kills=$((kills + 1))
            continue
        fi
        [ $status -eq 130 ] || { cat log.txt; fail "$label: SIGTERM after step $step: exit status $status, not 130"; }
        local expected
        expected=$(stop_message "$step" "$per_epoch" "$epochs")
        grep -qx "axon: $expected" log.txt ||
            { cat log.txt; fail "$label: SIGTERM after step $step: no line 'axon: $expected'"; }
        grep -q "checkpoint written to run.interrupted.safetensors" log.txt ||
            { cat log.txt; fail "$label: SIGTERM: no message naming the checkpoint"; }
        interrupted_step=$step
        terms=$((terms + 1))
    done

    echo "$label: SIGKILLs: $kills, SIGTERMs: $terms"
    [ -f final.safetensors ] || fail "$label: no final model"
    cmp reference.safetensors final.safetensors ||
        fail "$label: the resumed model differs from the uninterrupted one"
    local untimed='s/,"seconds":[^,}]*//; s/,"gflops":[^,}]*//'
    diff <(sed -E "$untimed" reference.jsonl) <(sed -E "$untimed" run.jsonl) ||
        fail "$label: the metrics of the resumed runs differ from the uninterrupted run's"
}
