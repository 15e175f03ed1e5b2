#!/bin/bash
# bench_workloads.sh: axon bench's training workloads b1a, b1b and b2 (--quick,
# one or two repeats, b2 at width 32), checked for structure and sanity, with
# no verdict on speed:
#  - the heading names the network, batch, epochs and repeats asked for;
#  - one "run R:" line per repeat, its seconds and GFLOP/s positive, the mean
#    of the summary equal to the mean of the runs;
#  - b1a reaches a test accuracy of 70..95 % in one epoch, b1b's full-batch
#    loss falls over its five epochs and its accuracy is above chance, b2
#    (regression) prints no accuracy;
#  - --csv: the header line, then one row per epoch and repeat with 14 fields,
#    the batch (b1b: every row), width, repeat and epoch of the run, each row's
#    GFLOP/s x seconds equal to the FLOP count of docs/notes/benchmarks.md
#    (bench/peers/common.py's epoch_flops, computed here on its own) and its
#    samples/s x seconds equal to the rows of an epoch;
#  - bad workload, repeat and width are refused with exit status 2, an
#    unwritable --csv with 1.
# b1a and b1b read Fashion-MNIST from Debian's dataset-fashion-mnist; without
# it they are skipped, and said so (b2 needs no data).
#
# usage: bench_workloads.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "bench_workloads: FAIL: $*" >&2; exit 1; }
columns=system,workload,variant,precision,threads,batch,width,repeat,epoch,seconds,loss,test_accuracy,gflops,samples_per_second

# FLOPs of one epoch (docs/notes/benchmarks.md, "The FLOP count"): SIZES is
# "n_0 n_1 ... n_L", the last partial batch counted with its own rows.
epoch_flops() { # SIZES ROWS BATCH
    awk -v sizes="$1" -v rows="$2" -v batch="$3" 'BEGIN {
        L = split(sizes, n, " ")
        full = int(rows / batch); rest = rows - full * batch
        printf "%.6e\n", full * step(n, L, batch) + (rest ? step(n, L, rest) : 0)
    }
    function step(n, L, b,   l, f) {
        for (l = 2; l <= L; l++)
            f += 6 * b * n[l] * n[l-1] + 4 * n[l] * b - n[l] * (n[l-1] + 1) - b * n[l-1]
        return f
    }'
}

# check_run LOG CSV WORKLOAD REPEATS EPOCHS BATCH WIDTH ROWS SIZES
check_run() {
    local log=$1 csv=$2 name=$3 repeats=$4 epochs=$5 batch=$6 width=$7 rows=$8 sizes=$9
    grep -q "^axon bench $name: .*, batch .*, $epochs epoch(s), .*, $repeats repeat(s)" "$log" ||
        { cat "$log"; fail "$name: the heading does not name $epochs epoch(s) and $repeats repeat(s)"; }
    [ "$(grep -c '^  run [0-9]*: ' "$log")" = "$repeats" ] || { cat "$log"; fail "$name: not $repeats run lines"; }
    grep -q "^over $repeats run(s):" "$log" || { cat "$log"; fail "$name: no summary over $repeats run(s)"; }
    # each run: seconds and GFLOP/s positive, loss finite; the summary's
    # means are the runs' (to the printed digits)
    awk -v name="$name" '
        /^  run [0-9]+: / {
            runs++
            # run N: S s per epoch (T s total, U s with the setup and upload), loss L, ...
            # substr() and sub() leave strings, which awk compares as text
            # ("10.017" < "9.738"): each number is checked as one, then
            # taken with + 0
            seconds = $3; total = substr($7, 2); with_setup = $10; loss = $18; sub(/,$/, "", loss)
            gflops = $(NF - 1)
            numeric = "^[0-9]+([.][0-9]+)?$"
            if (seconds !~ numeric || total !~ numeric || with_setup !~ numeric || loss !~ numeric ||
                gflops !~ numeric || !(seconds + 0 > 0) || !(total + 0 > 0) || !(gflops + 0 > 0) ||
                !(with_setup + 0 >= total + 0)) {
                print name ": implausible run line: " $0; bad = 1
            }
            s += seconds; l += loss; g += gflops
        }
        /^  seconds per epoch/ { ms = $4 }
        /^  final training loss/ { ml = $4 }
        /^  GFLOP\/s/ { mg = $2 }
        END {
            if (!runs) exit 1
            if (ms == "" || ml == "" || mg == "") { print name ": a summary line is missing"; exit 1 }
            # runs print 4 decimals of seconds and loss, 1 of GFLOP/s
            if (ms - s / runs > 1e-4 || s / runs - ms > 1e-4) { print name ": mean seconds " ms " is not the runs'\'' " s / runs; bad = 1 }
            if (ml - l / runs > 1e-4 || l / runs - ml > 1e-4) { print name ": mean loss " ml " is not the runs'\'' " l / runs; bad = 1 }
            if (mg - g / runs > 0.06 || g / runs - mg > 0.06) { print name ": mean GFLOP/s " mg " is not the runs'\'' " g / runs; bad = 1 }
            exit bad
        }' "$log" || { cat "$log"; fail "$name: run lines or summary"; }

    [ "$(head -n 1 "$csv")" = "$columns" ] || fail "$name: the first line of $csv is not the header"
    [ "$(grep -c '^system,' "$csv")" = 1 ] || fail "$name: $csv has more than one header line"
    [ "$(tail -n +2 "$csv" | wc -l)" = $((repeats * epochs)) ] ||
        { cat "$csv"; fail "$name: $csv has not $repeats x $epochs rows"; }
    local flops
    flops=$(epoch_flops "$sizes" "$rows" "$batch")
    tail -n +2 "$csv" | awk -F, -v name="$name" -v batch="$batch" -v width="$width" -v rows="$rows" \
        -v flops="$flops" -v epochs="$epochs" '
        NF != 14 { print name ": a row of " NF " fields: " $0; bad = 1; next }
        {
            expect_repeat = int((NR - 1) / epochs) + 1; expect_epoch = (NR - 1) % epochs + 1
            if ($1 != "axon" || $2 != name || $3 != "axon-sgd" || $4 != "f32" || !($5 >= 1) ||
                $6 != batch || $7 != width || $8 != expect_repeat || $9 != expect_epoch) {
                print name ": row " NR " names another run: " $0; bad = 1
            }
            if (!($10 > 0) || !($11 >= 0) || !($13 > 0) || !($14 > 0)) { print name ": row " NR ": a figure not positive: " $0; bad = 1 }
            # GFLOP/s (3 decimals) x seconds: the FLOP count, to 0.1 % and
            # the rounding of the printed rate
            done = $13 * 1e9 * $10
            if (abs(done - flops) > 1e-3 * flops + 0.0005e9 * $10) { print name ": row " NR ": " done " FLOPs, not " flops; bad = 1 }
            # samples/s (1 decimal) x seconds: the rows of an epoch
            seen = $14 * $10
            if (abs(seen - rows) > 1e-3 * rows + 0.05 * $10) { print name ": row " NR ": " seen " samples, not " rows; bad = 1 }
        }
        function abs(x) { return x < 0 ? -x : x }
        END { exit bad }' || { cat "$csv"; fail "$name: CSV rows"; }
}

if [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    echo "axon bench b1a --quick: one epoch of SGD, batch 128"
    "$axon" bench b1a --quick --repeat 1 --threads 2 --csv b1a.csv > b1a.log 2>&1 ||
        { cat b1a.log; fail "axon bench b1a"; }
    check_run b1a.log b1a.csv b1a 1 1 128 128 60000 "784 128 128 10"
    accuracy=$(sed -n 's/^  test accuracy *\([0-9.]*\) .*/\1/p' b1a.log)
    awk -v a="$accuracy" 'BEGIN { exit !(a >= 70 && a <= 95) }' ||
        { cat b1a.log; fail "b1a: test accuracy '$accuracy' % after an epoch, not within 70..95 %"; }
    [ "$(tail -n 1 b1a.csv | cut -d, -f12)" = "$(awk -v a="$accuracy" 'BEGIN { printf "%.4f", a }')" ] ||
        fail "b1a: the CSV's test accuracy is not the summary's $accuracy"

    echo "axon bench b1b --quick: five epochs of full-batch gradient descent"
    "$axon" bench b1b --quick --repeat 1 --threads 2 --csv b1b.csv > b1b.log 2>&1 ||
        { cat b1b.log; fail "axon bench b1b"; }
    check_run b1b.log b1b.csv b1b 1 5 60000 128 60000 "784 128 128 10"
    tail -n +2 b1b.csv | awk -F, 'NR == 1 { first = $11 } { last = $11; accuracy = $12 }
        END { exit !(last < first && accuracy > 15 && accuracy <= 100) }' ||
        { cat b1b.csv; fail "b1b: the loss did not fall over five epochs, or the accuracy is at chance"; }
else
    echo "b1a, b1b skipped: no Fashion-MNIST in /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist)"
fi

echo "axon bench b2 --quick --width 32: 100,000 synthetic rows, two repeats"
"$axon" bench b2 --quick --repeat 2 --width 32 --batch 1000 --threads 2 --csv b2.csv > b2.log 2>&1 ||
    { cat b2.log; fail "axon bench b2"; }
grep -q "^axon bench b2: 20-32:tanh,32:tanh,32:tanh,32:tanh,32:tanh,1:identity, sgd, batch 1000," b2.log ||
    { cat b2.log; fail "b2: the heading does not name the width 32 network and batch 1000"; }
check_run b2.log b2.csv b2 2 1 1000 32 100000 "20 32 32 32 32 32 1"
! grep -q "accuracy" b2.log || { cat b2.log; fail "b2 (regression) prints an accuracy"; }
[ -z "$(tail -n +2 b2.csv | cut -d, -f12 | tr -d '\n')" ] || fail "b2's CSV rows have a test accuracy"
# repeat R is seeded with R: a second run of repeat 1 alone gives its loss again
"$axon" bench b2 --quick --repeat 1 --width 32 --batch 1000 --threads 2 > b2_again.log 2>&1 ||
    { cat b2_again.log; fail "axon bench b2 again"; }
[ "$(grep '^  run 1:' b2.log | grep -o 'loss [0-9.]*')" = "$(grep '^  run 1:' b2_again.log | grep -o 'loss [0-9.]*')" ] ||
    fail "b2: repeat 1 gives another loss in a second run"
[ "$(grep '^  run 1:' b2.log | grep -o 'loss [0-9.]*')" != "$(grep '^  run 2:' b2.log | grep -o 'loss [0-9.]*')" ] ||
    fail "b2: repeats 1 and 2 give the same loss (the repeat does not seed the run)"
refuse() { # WHAT STATUS TEXT -- COMMAND...
    local what=$1 want=$2 text=$3
    shift 4
    "$@" > refused.out 2> refused.err
    local status=$?
    [ "$status" = "$want" ] || { cat refused.err; fail "$what: exit status $status, not $want"; }
    grep -qF -- "$text" refused.err || { cat refused.err; fail "$what: the message does not say '$text'"; }
}
refuse "an unknown workload" 2 "unknown workload 'b3'" -- "$axon" bench b3 --quick
refuse "--repeat 0" 2 "--repeat" -- "$axon" bench b2 --quick --repeat 0
refuse "--width 0" 2 "--width" -- "$axon" bench b2 --quick --repeat 1 --width 0
refuse "an unwritable --csv" 1 "cannot open $work/no/such/dir/b.csv" -- \
    "$axon" bench b2 --quick --repeat 1 --width 8 --csv "$work/no/such/dir/b.csv"
[ ! -e "$work/no" ] || fail "the refused --csv made a folder"

echo "bench_workloads: OK"
