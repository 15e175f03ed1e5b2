#!/bin/bash
# mpi_scaling.sh: data-parallel scaling of B2 (TMVA's regression, axon bench b2: 20-(256 tanh)x5-1,
# MSE, SGD, batch 1024, one epoch of 500,000 synth:linear rows) in three
# layouts of the same two cores:
#   1 rank,  1 thread    the baseline
#   2 ranks, 1 thread    data parallel (mpirun, MPI_Allreduce of the gradient)
#   2 ranks, overlapped  the same, each layer's sum begun (MPI_Iallreduce) during
#                        the backward pass (AXON_ALLREDUCE=overlap)
#   1 rank,  2 threads   thread parallel (OpenMP + the BLAS)
# Prints, per layout, the mean and range over the repeats of samples/s
# (training time only, as `axon train` reports it), the scaling efficiency
# against the baseline (samples/s / (cores x baseline samples/s)) and, for 2
# ranks, the all-reduce's share of the training time on rank 0 (waiting for
# the other rank included). docs/mpi.md has the figures and a cost model.
# Then, when mpicc is there, bench/mpi_allreduce.c times the gradient sum
# alone and whether it moves on during compute (what overlap could hide),
# and compares MPI_Allreduce with MPI_Iallreduce + MPI_Wait, alternated.
#
# usage: bench/mpi_scaling.sh [AXON] [REPEATS] [ROWS] [PRECISION]
#        (defaults: build/axon, 3, 500000, f32)
set -u
axon=${1:-build/axon}
repeats=${2:-3}
rows=${3:-500000}
precision=${4:-f32}
command -v mpirun >/dev/null || { echo "mpi_scaling: no mpirun on PATH" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader

b2=(train --data synth:linear --rows "$rows" --features 20
    --layers 256:tanh,256:tanh,256:tanh,256:tanh,256:tanh,1 --lr 0.001 --batch 1024 --epochs 1
    --precision "$precision")

# "seconds-of-training seconds-of-all-reduce" of one run, from its output
run() { # run COMMAND...
    local output
    output=$("$@" 2>&1) || { echo "$output" >&2; echo "mpi_scaling: a run failed" >&2; exit 1; }
    local seconds comm
    seconds=$(echo "$output" | sed -n 's/^trained 1 epoch in \([0-9.]*\) \(m\?s\).*/\1 \2/p')
    [ -n "$seconds" ] || { echo "$output" >&2; echo "mpi_scaling: no time in the output" >&2; exit 1; }
    case $seconds in *" ms") seconds=$(awk -v s="${seconds% ms}" 'BEGIN{print s/1000}');;
                     *) seconds=${seconds% s};; esac
    comm=$(echo "$output" | sed -n 's/^all-reduce \([0-9.]*\) s of.*/\1/p')
    echo "$seconds ${comm:-0}"
}

mean_rate() { printf '%s\n' "$@" | awk -v rows="$rows" '{ s += rows / $1 } END { print s / NR }'; }

summary() { # summary NAME CORES BASELINE "seconds comm" ...
    local name=$1 cores=$2 base=$3
    shift 3
    printf '%s\n' "$@" | awk -v name="$name" -v rows="$rows" -v cores="$cores" -v base="$base" '
        { rate = rows / $1; sum += rate; if (NR == 1 || rate < lo) lo = rate;
          if (rate > hi) hi = rate; share += $2 / $1; n++ }
        END { mean = sum / n;
              printf "%-18s %9.0f samples/s (%.0f .. %.0f)", name, mean, lo, hi;
              printf "  efficiency %5.1f %%", 100 * mean / (cores * base);
              if (share > 0) printf "  all-reduce %4.1f %% of training time", 100 * share / n;
              printf "\n" }'
}

echo "B2, $rows rows, batch 1024, $precision, $repeats repeats; $(nproc) cores"
one=() two=() overlapped=() threads=()
for i in $(seq "$repeats"); do
    one+=("$(run "$axon" "${b2[@]}" --threads 1)")
    two+=("$(run mpirun -np 2 -x AXON_ALLREDUCE=blocking "$axon" "${b2[@]}" --threads 1)")
    overlapped+=("$(run mpirun -np 2 -x AXON_ALLREDUCE=overlap "$axon" "${b2[@]}" --threads 1)")
    threads+=("$(run "$axon" "${b2[@]}" --threads 2)")
done
base=$(mean_rate "${one[@]}")
summary "1 rank, 1 thread" 1 "$base" "${one[@]}"
summary "2 ranks, 1 thread" 2 "$base" "${two[@]}"
summary "2 ranks, overlapped" 2 "$base" "${overlapped[@]}"
summary "1 rank, 2 threads" 2 "$base" "${threads[@]}"

# The sum alone, and whether it progresses during compute (overlap).
if command -v mpicc >/dev/null; then
    micro=$(mktemp -d)
    # The blocking sum against the non-blocking one alone, alternated, on
    # B2's gradient (its bytes in the run's precision, timed as float and as
    # double; medians and percentiles: docs/mpi.md).
    bytes=$((268801 * $([ "$precision" = f64 ] && echo 8 || echo 4)))
    mpicc -O2 -o "$micro/mpi_allreduce" "$(dirname "$0")/mpi_allreduce.c" &&
        mpirun -np 2 "$micro/mpi_allreduce" 268801 200 0.016 &&
        mpirun -np 2 "$micro/mpi_allreduce" compare 200 "$bytes"
    rm -rf "$micro"
fi
