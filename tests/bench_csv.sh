#!/bin/bash
# bench_csv.sh: `axon bench --csv` writes its header line into a new file, and
# only there (a second run appends rows alone), and bench/report.py reads the
# file by its column names (issue 29: it failed with KeyError 'system' on the
# headerless CSV) and writes report.md with the workload's row; a headerless
# file of an older axon is read too. The quickest workloads: tensor-mean and
# entropy-mi at one small size, one sample each.
#
# usage: bench_csv.sh AXON SOURCE_DIR WORKDIR
set -u
axon=$1
source_dir=$2
work=$3
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "bench_csv: FAIL: $*" >&2; exit 1; }
. "$source_dir/tests/test_python.sh"
need_python csv

columns=system,workload,variant,precision,threads,batch,width,repeat,epoch,seconds,loss,test_accuracy,gflops,samples_per_second
quick=(--sizes 16 --repeat 1 --min-time 0.001 --threads 1)
"$axon" bench tensor-mean "${quick[@]}" --csv run.csv > bench1.log 2>&1 || { cat bench1.log; fail "axon bench tensor-mean"; }
[ "$(head -n 1 run.csv)" = "$columns" ] || fail "the first line of run.csv is '$(head -n 1 run.csv)', not the header"
rows=$(wc -l < run.csv)
[ "$rows" -ge 2 ] || fail "run.csv has no row after its header"
"$axon" bench entropy-mi "${quick[@]}" --csv run.csv > bench2.log 2>&1 || { cat bench2.log; fail "axon bench entropy-mi"; }
[ "$(grep -c '^system,' run.csv)" = 1 ] || fail "a second run into run.csv wrote the header again"
[ "$(wc -l < run.csv)" -gt "$rows" ] || fail "the second run appended no row"
awk -F, -v n=14 'NF != n { print "line " NR " has " NF " fields"; bad = 1 } END { exit bad }' run.csv ||
    fail "run.csv has rows of other than 14 columns"

if ! command -v gnuplot > /dev/null 2>&1; then
    echo "SKIPPED: report.py draws with gnuplot, which is not installed (apt-get install gnuplot-nox)"
    exit 77
fi
"$PYTHON" "$source_dir/bench/report.py" run.csv --out . > report.log 2>&1 || { cat report.log; fail "report.py on run.csv"; }
grep -q "tensor-mean" report.md || fail "report.md does not name the tensor-mean workload"
grep -q "entropy-mi" report.md || fail "report.md does not name the entropy-mi workload"
# an older axon's file: the same rows without the header
mkdir old && tail -n +2 run.csv > old/run.csv
"$PYTHON" "$source_dir/bench/report.py" old/run.csv > report_old.log 2>&1 || { cat report_old.log; fail "report.py on a headerless file"; }
grep -q "tensor-mean" old/report.md || fail "report.md of the headerless file does not name tensor-mean"
echo "bench_csv: OK"
