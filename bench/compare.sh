#!/bin/bash
# compare.sh: runs axon and its peers on the workloads of axon bench (docs/notes/benchmarks.md; B1
# and B2: PyTorch and NumPy; B3 galaxy-cg: NumPy + SciPy's fmin_cg) side by side, alternating axon, torch, numpy for each
# workload in each round, so that machine noise falls on all systems alike. LeNet
# (axon bench lenet, issue 28) has PyTorch as its peer (bench/peers/lenet_torch.py). All rows go
# into one CSV, bench/results/<date>.csv; then bench/report.py writes
# bench/results/report.md and the PNG plots. See docs/notes/benchmarks.md.
#
# usage: bench/compare.sh [--quick] [--threads T[,T...]] [--repeat N] [--axon PATH]
#   --quick    2 rounds, B1(a) 2 epochs, B1(b) 10 epochs, B2 50,000 rows and fewer shapes,
#              B3 50 iterations, LeNet 1 epoch
#   --threads  thread counts to run every workload with (default 2)
#   --repeat   rounds (default 5; 2 with --quick)
set -u
cd "$(dirname "$0")/.."
quick=0 threads=2 repeat= axon=build/axon
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --threads) threads=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --axon) axon=$2; shift ;;
    *) echo "usage: $0 [--quick] [--threads T[,T...]] [--repeat N] [--axon PATH]" >&2; exit 2 ;;
    esac
    shift
done

[ -x "$axon" ] || { echo "compare.sh: no axon binary at $axon (build it, or give --axon PATH)" >&2; exit 2; }

# Workloads, one per line: workload batch width precision.
if [ $quick = 1 ]; then
    repeat=${repeat:-2} b1a_epochs=2 b1b_epochs=10 b2_rows=50000 quick_flag=--quick lenet_epochs=1
    configs="b1a 128 128 f32
lenet 128 1024 f32
b1b 60000 128 f32
b2 1024 256 f32
b2 256 256 f32
b2 4096 256 f32
b2 1024 384 f32
b2 1024 512 f32
b2 1024 256 f64
galaxy-cg 2700 8 f64
galaxy-cg 2700 8 f32"
    b3_iterations=50
else
    repeat=${repeat:-5} b1a_epochs=5 b1b_epochs=40 b2_rows=500000 quick_flag= lenet_epochs=2
    configs="b1a 128 128 f32
lenet 128 1024 f32
b1b 60000 128 f32
galaxy-cg 2700 8 f64
galaxy-cg 2700 8 f32"
    b3_iterations=300
    for precision in f32 f64; do
        configs+="
b2 1024 256 $precision
b2 256 256 $precision
b2 4096 256 $precision
b2 1024 384 $precision
b2 1024 512 $precision"
    done
fi

bash bench/setup_peers.sh # NumPy, SciPy, PyTorch, Pillow from Debian, if missing
mkdir -p bench/results
csv=bench/results/$(date +%Y-%m-%d_%H%M%S).csv
log=${csv%.csv}.log
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Each system gets its best BLAS setup: this workplace presets OPENBLAS_CORETYPE=Haswell,
# which keeps OpenBLAS off the AVX-512 kernels.
run="env -u OPENBLAS_CORETYPE"
py="$run /usr/bin/python3"
failures=0
columns=system,workload,variant,precision,threads,batch,width,repeat,epoch,seconds,loss,test_accuracy,gflops,samples_per_second

# run_one ROUND SYSTEM WORKLOAD BATCH WIDTH PRECISION THREADS: one run, its rows appended
# to $csv with the repeat column set to the round.
run_one() {
    local round=$1 system=$2 workload=$3 batch=$4 width=$5 precision=$6 t=$7 cmd
    local common="--threads $t --precision $precision --repeat 1 --csv $tmp"
    case $system:$workload in
    axon:*) cmd="$py bench/axon_bench.py $workload --axon $axon --batch $batch --width $width $common $quick_flag --rows $b2_rows"
            [ $workload = b1a ] && cmd+=" --epochs $b1a_epochs"
            [ $workload = b1b ] && cmd+=" --epochs $b1b_epochs" ;;
    *:b1a) cmd="$py bench/peers/b1_$system.py --epochs $b1a_epochs $common" ;;
    *:b1b) cmd="$py bench/peers/b1_$system.py --batch full --lr 0.5 --momentum 0 --epochs $b1b_epochs $common" ;;
    *:b2) cmd="$py bench/peers/b2_$system.py --rows $b2_rows --batch $batch --width $width $common" ;;
    torch:lenet) cmd="$py bench/peers/lenet_torch.py --epochs $lenet_epochs $common" ;;
    numpy:lenet) return ;; # the convolutional network's peer is PyTorch
    torch:galaxy-cg) return ;; # the galaxy classifier's peer is NumPy + SciPy
    numpy:galaxy-cg)
        # NumPy works in float64 only: its row stands beside axon's f64 row.
        [ "$precision" = f64 ] || return
        cmd="$py bench/peers/galaxy_scipy.py --mode cached --iterations $b3_iterations --threads $t --repeat $round --csv $tmp" ;;
    esac
    rm -f "$tmp"
    echo "round $round: $system $workload batch $batch width $width $precision, $t threads"
    echo "\$ $cmd" >>"$log"
    if ! $cmd </dev/null >>"$log" 2>&1; then
        echo "  failed (see $log)"
        failures=$((failures + 1))
        return
    fi
    [ -s "$csv" ] || echo "$columns" >"$csv"
    awk -F, -v OFS=, -v r="$round" '$1 != "system" { $8 = r; print }' "$tmp" >>"$csv"
}

for round in $(seq "$repeat"); do
    for t in ${threads//,/ }; do
        while read -r workload batch width precision; do
            for system in axon torch numpy; do
                run_one "$round" $system $workload $batch $width $precision "$t"
            done
        done <<<"$configs"
    done
done

echo "results: $csv (log: $log)"
/usr/bin/python3 bench/report.py "$csv" || failures=$((failures + 1))
[ $failures = 0 ] || { echo "$failures runs failed" >&2; exit 1; }
