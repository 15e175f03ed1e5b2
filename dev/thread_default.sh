#!/usr/bin/env bash
# thread_default.sh [AXON] [ROUNDS]: B1(a) seconds per epoch (axon bench b1a,
# one run) with axon's default OpenMP waiting (GOMP_SPINCOUNT=1000), with
# GOMP_SPINCOUNT=30000, with OMP_WAIT_POLICY=passive and with --threads 1,
# alternating; idle, then beside two busy loops (one per core).
set -u
axon=${1:-build/axon} rounds=${2:-3}
epoch() { "$@" 2>&1 | grep -o "run 1: [0-9.]*" | cut -d' ' -f3; }
measure() {
    for _ in $(seq "$rounds"); do
        echo "default $(epoch "$axon" bench b1a --repeat 1)" \
             " spin30000 $(GOMP_SPINCOUNT=30000 epoch "$axon" bench b1a --repeat 1)" \
             " passive $(OMP_WAIT_POLICY=passive epoch "$axon" bench b1a --repeat 1)" \
             " threads1 $(epoch "$axon" bench b1a --repeat 1 --threads 1)"
    done
}
echo "idle ($(uptime | sed 's/.*load/load/'))"
measure
sh -c 'while :; do :; done' & busy1=$!
sh -c 'while :; do :; done' & busy2=$!
trap 'kill $busy1 $busy2 2>/dev/null' EXIT
sleep 2
echo "beside two busy loops ($(uptime | sed 's/.*load/load/'))"
measure
