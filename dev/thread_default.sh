#!/usr/bin/env bash
# thread_default.sh [AXON] [IDLE_ROUNDS] [BUSY_ROUNDS]: B1(a) seconds per
# epoch (axon bench b1a, one run of 5 epochs) with axon's defaults (threads
# adapting to load, GOMP_SPINCOUNT chosen at the start: 30000 idle, 1000
# busy), the same with GOMP_SPINCOUNT=1000 always (the default before
# stop 23), with --threads 1, with --threads 2 (fixed) and
# with --replicas 2 (two 1-thread replicas), alternating; idle, then beside two busy loops (one per core). Prints
# max/min of each column at the end of each part.
set -u
axon=${1:-build/axon} idle_rounds=${2:-10} busy_rounds=${3:-5}
epoch() { "$@" 2>&1 | grep -o "run 1: [0-9.]*" | cut -d' ' -f3; }
measure() { # measure ROUNDS
    local out
    out=$(for _ in $(seq "$1"); do
        echo "$(epoch "$axon" bench b1a --repeat 1)" \
             "$(GOMP_SPINCOUNT=1000 epoch "$axon" bench b1a --repeat 1)" \
             "$(epoch "$axon" bench b1a --repeat 1 --threads 1)" \
             "$(epoch "$axon" bench b1a --repeat 1 --threads 2)" \
             "$(epoch "$axon" bench b1a --repeat 1 --replicas 2)"
    done)
    echo "default spin1000 threads1 threads2 replicas2"
    echo "$out"
    echo "$out" | awk '{for(i=1;i<=NF;i++){if(NR==1||$i<lo[i])lo[i]=$i; if(NR==1||$i>hi[i])hi[i]=$i; s[i]+=$i}}
        END{printf "min  "; for(i=1;i<=NF;i++) printf " %.4f", lo[i]; print "";
            printf "mean "; for(i=1;i<=NF;i++) printf " %.4f", s[i]/NR; print "";
            printf "max/min"; for(i=1;i<=NF;i++) printf " %.3f", hi[i]/lo[i]; print ""}'
}
echo "idle ($(uptime | sed 's/.*load/load/'))"
measure "$idle_rounds"
sh -c 'while :; do :; done' & busy1=$!
sh -c 'while :; do :; done' & busy2=$!
trap 'kill -9 $busy1 $busy2 2>/dev/null' EXIT
sleep 2
echo "beside two busy loops ($(uptime | sed 's/.*load/load/'))"
measure "$busy_rounds"
