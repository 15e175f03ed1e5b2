#!/bin/bash
# compare_stats.sh: the activation statistics (docs/stats.md; B4 entropy-mi,
# B5 tensor-mean) with axon and its peers side by side: for each size in each round,
# `axon bench entropy-mi|tensor-mean` and then bench/peers/stats_peers.py (NumPy and
# PyTorch, the seed's naive forms and the best vectorised ones), so that machine noise
# falls on all of them alike. Every sample is one CSV row (seconds per call, repeated
# for at least --min-time); all go into bench/results/stats-<date>/results.csv and
# bench/report.py writes report.md beside it (mean and sd over rounds, and each form's
# speed against the fastest peer form). See docs/stats.md.
#
# usage: bench/compare_stats.sh [--quick] [--threads T[,T...]] [--repeat N] [--axon PATH]
#                               [--naive-max B] [--min-time S] [--wait-policy P]
#   --quick      2 rounds, sizes up to 4096, samples of 0.02 s
#   --threads    thread counts to run everything with (default 2)
#   --repeat     rounds (default 5; 2 with --quick)
#   --naive-max  largest B for the naive entropy-mi forms, whose (B, D, D) temporaries
#                take 4 B D^2 bytes each (default 4096: 1 GB)
#   --wait-policy  OMP_WAIT_POLICY for every system: passive (default), active, or
#                  default (libgomp's: spin, then sleep). On a machine whose cores other
#                  processes keep busy, spinning workers lose their scheduler priority and
#                  each parallel region then waits milliseconds for them (docs/stats.md);
#                  passive workers sleep and are woken at once.
set -u
cd "$(dirname "$0")/.."
quick=0 threads=2 repeat= axon=build/axon naive_max=4096 min_time= wait_policy=passive
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --threads) threads=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --axon) axon=$2; shift ;;
    --naive-max) naive_max=$2; shift ;;
    --min-time) min_time=$2; shift ;;
    --wait-policy) wait_policy=$2; shift ;;
    *) echo "usage: $0 [--quick] [--threads T[,T...]] [--repeat N] [--axon PATH] [--naive-max B] [--min-time S] [--wait-policy P]" >&2
       exit 2 ;;
    esac
    shift
done
case $wait_policy in
passive | active | default) ;;
*) echo "compare_stats.sh: --wait-policy: expected passive, active or default, got '$wait_policy'" >&2; exit 2 ;;
esac
[ -x "$axon" ] || { echo "compare_stats.sh: no axon binary at $axon (build it, or give --axon PATH)" >&2; exit 2; }
"$axon" bench entropy-mi --help >/dev/null 2>&1 ||
    { echo "compare_stats.sh: $axon has no 'bench entropy-mi' (rebuild it)" >&2; exit 2; }

if [ $quick = 1 ]; then
    repeat=${repeat:-2} min_time=${min_time:-0.02}
    sizes="entropy-mi 256 1024 4096
tensor-mean 64 256 1024 4096"
else
    repeat=${repeat:-5} min_time=${min_time:-0.05}
    sizes="entropy-mi 256 1024 4096 16384 65536
tensor-mean 64 256 1024 4096 8192"
fi

bash bench/setup_peers.sh # NumPy, SciPy, PyTorch, Pillow from Debian, if missing
out=bench/results/stats-$(date +%Y-%m-%d_%H%M%S)
mkdir -p "$out"
csv=$out/results.csv log=$out/run.log
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# This workplace presets OPENBLAS_CORETYPE=Haswell, which keeps OpenBLAS (NumPy's BLAS)
# off the AVX-512 kernels; axon drops it itself (tools/axon/blas_env.c).
run="env -u OPENBLAS_CORETYPE"
if [ "$wait_policy" = default ]; then
    run+=" -u OMP_WAIT_POLICY"
else
    run+=" OMP_WAIT_POLICY=$wait_policy"
fi
failures=0
columns=system,workload,variant,precision,threads,batch,width,repeat,epoch,seconds,loss,test_accuracy,gflops,samples_per_second

# run_one ROUND WHO BENCH SIZE THREADS: one sample of axon, or of every peer form, at one
# size; rows appended to $csv with the repeat column set to the round.
run_one() {
    local round=$1 who=$2 bench=$3 size=$4 t=$5 cmd
    if [ "$who" = axon ]; then
        cmd="$run $axon bench $bench --sizes $size --threads $t --repeat 1 --min-time $min_time --csv $tmp"
    else
        cmd="$run /usr/bin/python3 bench/peers/stats_peers.py --bench $bench --sizes $size --threads $t
             --repeat 1 --min-time $min_time --naive-max $naive_max --csv $tmp"
    fi
    rm -f "$tmp"
    echo "round $round: $who $bench $size, $t threads"
    echo "\$ "$cmd >>"$log"
    if ! $cmd </dev/null >>"$log" 2>&1; then
        echo "  failed (see $log)"
        failures=$((failures + 1))
        return
    fi
    [ -s "$csv" ] || echo "$columns" >"$csv"
    awk -F, -v OFS=, -v r="$round" '$1 != "system" { $8 = r; print }' "$tmp" >>"$csv"
}

{
    echo "# compare_stats.sh $(date -Is): threads $threads, $repeat rounds, samples >= $min_time s,"
    echo "# OMP_WAIT_POLICY $wait_policy, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$log"
for round in $(seq "$repeat"); do
    for t in ${threads//,/ }; do
        while read -r bench list; do
            for size in $list; do
                run_one "$round" axon "$bench" "$size" "$t"
                run_one "$round" peers "$bench" "$size" "$t"
            done
        done <<<"$sizes"
    done
done

echo "results: $csv (log: $log)"
/usr/bin/python3 bench/report.py "$csv" --out "$out" || failures=$((failures + 1))
[ $failures = 0 ] || { echo "$failures runs failed" >&2; exit 1; }
