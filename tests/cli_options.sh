#!/usr/bin/env bash
# cli_options.sh: every subcommand's command line, option by option: each
# bad value refused with exit status 2 and its exact message (the option
# named, what it expects, what it got), before any data is read; the notes
# for options that do not apply; the help of each command on stdout with
# status 0; `axon info`'s answers to --threads, OMP_NUM_THREADS and
# GOMP_SPINCOUNT, its JSON parsed, and the peak on one thread; `axon bench
# galaxy-cg` on a small galaxy-shaped data set of the test's own (CG, at
# most 50 iterations a repeat: the CSV's epochs and falling losses; the
# table's runs, mean and sd are the CSV's last losses'); `axon stats
# tensor-mean` of small uint8 .npy files written here, every value of the
# tensor (in --json and in --out's float32 file) against sums taken here.
#
#   bash tests/cli_options.sh /path/to/axon WORKDIR
#
# Prints each check; exits 1 if any failed. The JSON checks need
# Python (tests/test_python.sh); without it they are skipped and
# said so.
set -u
. "$(dirname "$0")/test_python.sh" # has_python

. "$(dirname "$0")/cli_check.sh"
cli_check_begin cli_options.sh "$@"
# npy_u1 PATH ROWS COLS BYTE...: a (ROWS, COLS) uint8 .npy file, written
# byte by byte (version 1.0: magic, header length, the header padded to 64).
npy_u1() {
    local path=$1 rows=$2 cols=$3 byte
    shift 3
    local header="{'descr': '|u1', 'fortran_order': False, 'shape': ($rows, $cols), }"
    local pad=$(( (64 - (10 + ${#header} + 1) % 64) % 64 ))
    local length=$(( ${#header} + pad + 1 ))
    {
        printf '\223NUMPY\001\000'
        printf "\\$(printf %03o $((length % 256)))\\$(printf %03o $((length / 256)))"
        printf '%s%*s\n' "$header" "$pad" ''
        for byte in "$@"; do printf "\\$(printf %03o "$byte")"; done
    } > "$path"
}

# expect NAME STATUS TEXT -- COMMAND: exits STATUS with the line TEXT, whole,
# on stderr (on stdout for status 0), nothing else on stderr for 2.
expect() {
    local name=$1 status=$2 text=$3
    shift 4
    run "$@"
    local problems="" stream=err.txt
    [ "$status" -eq 0 ] && stream=out.txt
    [ "$rc" -eq "$status" ] || problems="$problems exit status $rc, expected $status;"
    grep -qxF -- "$text" "$stream" || problems="$problems no line '$text';"
    if [ "$status" -eq 2 ] && grep -qvF -e "$text" -e ": did you mean " err.txt; then
        problems="$problems more on stderr;"
    fi
    if [ -n "$problems" ]; then fail "$name:$problems $(head -c 300 err.txt)"; else ok "$name"; fi
}

# --------------------------------------------------------------- axon itself
expect "help of two commands" 2 "axon help: give one command, e.g. axon help train" -- "$AXON" help train eval
expect "help help: the overview" 0 "usage: axon COMMAND [options]" -- "$AXON" help help
expect "an option first" 2 \
    "axon: unknown option --frobnicate; the command comes first, e.g. axon train --data ... (see axon --help)" \
    -- "$AXON" --frobnicate
expect "a command mistyped" 2 "axon: unknown command 'trian' (see axon --help)" -- "$AXON" trian
grep -qxF "axon: did you mean 'train'?" err.txt && ok "... and the command meant" || fail "no guess for trian"
run "$AXON" zzzzzzzzzz
if [ "$rc" -eq 2 ] && grep -qxF "axon: unknown command 'zzzzzzzzzz' (see axon --help)" err.txt &&
    ! grep -q "did you mean" err.txt; then
    ok "a command like none: no guess"
else
    fail "a command like none: exit $rc, $(cat err.txt)"
fi

# ---------------------------------------------------------------- axon train
# Options are read before the data: a missing d.csv is never reached.
T=("$AXON" train --data d.csv --layers 2:softmax)
args=() # each table line's options as words, by eval: a quoted '' stays an argument
while IFS='|' read -r option message; do
    eval "args=($option)"
    expect "train $option" 2 "axon train: $message" -- "${T[@]}" "${args[@]}"
done <<'EOF'
--momentum 2|--momentum: expected a number >= 0 and < 1, got 2
--lbfgs-memory 0|--lbfgs-memory: expected an integer between 1 and 1000, got 0
--l1 -1|--l1: expected a number >= 0, got -1
--optimizer adamw --weight-decay -1|--weight-decay: expected a number >= 0, got -1
--clip-norm -1|--clip-norm: expected a number >= 0, got -1
--clip-value -1|--clip-value: expected a number >= 0, got -1
--init uniform --init-range -1|--init-range: expected a number > 0, got -1
--val-split 1|--val-split: expected a number >= 0 and < 1, got 1
--early-stop -1|--early-stop: expected an integer between 0 and 1000000, got -1
--keep-best x|--keep-best: expected one of none, validation, test, got 'x'
--no-shuffle=maybe|--no-shuffle: expected true or false, got 'maybe'
--keep-subnormals=x|--keep-subnormals: expected true or false, got 'x'
--init x|--init: expected one of auto, he, xavier, uniform, got 'x'
--optimizer x|--optimizer: expected one of sgd, adam, cg, lbfgs, adamw, got 'x'
--loss bogus|--loss: expected one of auto, cross-entropy, binary-cross-entropy, mse, got 'bogus'
--test ''|--test: expected a value, got an empty string
--out ''|--out: expected a value, got an empty string
--metrics ''|--metrics: expected a value, got an empty string
--checkpoint ''|--checkpoint: expected a value, got an empty string
--resume ''|--resume: expected a value, got an empty string
--quiet=x|--quiet: expected true or false, got 'x'
--profile=x|--profile: expected true or false, got 'x'
--dropout 1.5|--dropout: expected a number >= 0 and < 1, got 1.5
--dropout 0.1,0.2,x|--dropout: '0.1,0.2,x' is not a probability in [0, 1) or a list of at most 64 of them (one per layer's input, the inputs first, e.g. 0.2,0.5,0.5)
--warmup -1|--warmup: expected an integer >= 0, got -1
--lr-schedule bogus|--lr-schedule: learning-rate schedule 'bogus': not one of constant, step:EVERY:GAMMA, exp:GAMMA, cosine[:MIN], plateau:PATIENCE:FACTOR, invscaling[:POWER] or adaptive[:PATIENCE[:TOL]]
--checkpoint-every -1|--checkpoint-every: expected an integer between 0 and 1000000, got -1
--keep-checkpoints -1|--keep-checkpoints: expected an integer between 0 and 1000000, got -1
--optimizer cg --max-iter 0|--max-iter: expected an integer between 1 and 1000000, got 0
--optimizer cg --lr-schedule cosine|--lr-schedule and --warmup apply to sgd, adam and adamw: cg chooses its own steps by line search
--optimizer cg --warmup 3|--lr-schedule and --warmup apply to sgd, adam and adamw: cg chooses its own steps by line search
--optimizer cg --clip-norm 1|--clip-norm and --clip-value apply to sgd, adam and adamw: cg's line search needs the true gradient
--optimizer lbfgs --clip-value 1|--clip-norm and --clip-value apply to sgd, adam and adamw: lbfgs's line search needs the true gradient
--epochs 0|--epochs: expected an integer between 1 and 1000000, got 0
--lr -1|--lr: expected a number > 0, got -1
--seed x|--seed: expected an integer, got 'x'
--threads 5000|--threads: expected an integer between 0 and 4096 or 'auto', got 5000
--label-column x|--label-column: expected an integer or 'last', got 'x'
--header=x|--header: expected true or false, got 'x'
--regression=x|--regression: expected true or false, got 'x'
--scale 0|--scale: expected a number > 0, got 0
--labels ''|--labels: expected a value, got an empty string
--test-labels ''|--test-labels: expected a value, got an empty string
--rows 0|--rows: expected an integer between 1 and 100000000000, got 0
--features 0|--features: expected an integer between 1 and 1000000, got 0
--delimiter ab|--delimiter: expected one character that cannot be part of a number, or 'tab', got 'ab'
--delimiter .|--delimiter: expected one character that cannot be part of a number, or 'tab', got '.'
--stream x|--stream: expected one of auto, on, off, got 'x'
--mean ''|--mean: expected a value, got an empty string
--crop -1|--crop: expected an integer between 0 and 1000000, got -1
--mirror=x|--mirror: expected true or false, got 'x'
--lighting -1|--lighting: expected a number between 0 and 1e+06, got -1
--mirror|--stream on, --crop, --mirror, --lighting, --subtract-mean and --mean are for --data batches:DIR (axon prep's output)
--stream on|--stream on, --crop, --mirror, --lighting, --subtract-mean and --mean are for --data batches:DIR (axon prep's output)
EOF

# Options that do not apply: a note, and the run goes on (a tiny one).
printf '0,0.1,0.2\n1,0.9,0.8\n0,0.2,0.1\n1,0.8,0.9\n' > tiny.csv
while IFS='|' read -r option message; do
    eval "args=($option)"
    run "$AXON" train --data tiny.csv --layers 2:softmax --epochs 1 --quiet "${args[@]}"
    if [ "$rc" -eq 0 ] && grep -qxF "axon train: note: $message" err.txt; then
        ok "train $option: a note"
    else
        fail "train $option: exit $rc, $(head -c 300 err.txt)"
    fi
done <<'EOF'
--max-iter 5|--max-iter and --gtol apply to cg and lbfgs; sgd uses --epochs
--gtol 1e-3|--max-iter and --gtol apply to cg and lbfgs; sgd uses --epochs
--optimizer cg --lr 0.1|cg chooses its steps by line search; --lr is ignored
--optimizer sgd --weight-decay 0.1|--weight-decay applies to adamw only (for sgd, --l2 is the penalty)
--optimizer adam --nesterov|--momentum and --nesterov apply to sgd only; adam ignores them
--optimizer adam --momentum 0.5|--momentum and --nesterov apply to sgd only; adam ignores them
--init-range 0.3|--init-range applies to --init uniform only
EOF

# ----------------------------------------------------------------- axon info
expect "info --threads x" 2 "axon info: --threads: expected an integer or 'auto', got 'x'" -- \
    "$AXON" info --threads x
expect "info --json=3" 2 "axon info: --json: expected true or false, got '3'" -- "$AXON" info --json=3
expect "info --peek" 2 "axon info: unknown option --peek (see axon info --help)" -- "$AXON" info --peek
grep -qxF "axon info: did you mean --peak?" err.txt && ok "... and the option meant" || fail "no guess for --peek"
expect "info --threads 3" 0 "  threads       3 in use (--threads)" -- "$AXON" info --threads 3
expect "info under OMP_NUM_THREADS" 0 "  threads       2 in use (OMP_NUM_THREADS)" -- \
    env OMP_NUM_THREADS=2 "$AXON" info
expect "info with the user's GOMP_SPINCOUNT" 0 "  omp spin      GOMP_SPINCOUNT=1234 (yours)" -- \
    env GOMP_SPINCOUNT=1234 "$AXON" info
if has_python; then
    run env OMP_NUM_THREADS=2 "$AXON" info --json
    if [ "$rc" -eq 0 ] && "$PYTHON" - out.txt << 'PY'; then
import json, sys
info = json.load(open(sys.argv[1]))
assert info["threads"] == 2, info["threads"]
assert info["cores"] >= 1 and isinstance(info["openmp"], bool)
assert info["bf16"] in ("native", "emulated") and info["bf16_speed_ratio"] >= 0
assert info["mpi"] is None or isinstance(info["mpi"], str)
for key in ("version", "blas", "blas_kernels", "cpu_features", "backends", "compiler"):
    assert isinstance(info[key], str) and (key == "cpu_features" or info[key]), key
cpu = info["devices"][0]
assert cpu["device"] == "cpu" and cpu["kind"] == "cpu" and cpu["compute_units"] >= 1
assert "f64" in cpu["capabilities"] and cpu["memory_bytes"] > 0
for name in info["backends"].split():
    if name != "cpu":
        assert isinstance(info[name + "_built"], bool) and isinstance(info[name + "_devices"], list)
PY
        ok "info --json: its fields, the threads OMP_NUM_THREADS gives"
    else
        fail "info --json: exit $rc, $(head -c 300 out.txt)"
    fi
else
    echo "skipped: info --json's fields (no $PYTHON)"
fi
# The peak on one thread: its cores are the thread, and the shares printed
# are the rates printed over the peaks printed, to the rounding of the
# printing (whole GFLOP/s and percents). No bound against the peak: on a
# busy machine the clock measured for it may be below the GEMMs'.
run "$AXON" info --peak --threads 1
if [ "$rc" -eq 0 ] && grep -qxF "peak (1 thread)" out.txt &&
    awk '
        function off(rate, peak, share) {   # beyond the rounding of all three
            return (share - 100 * rate / peak) ^ 2 > (0.5 + 100 * rate / peak * (0.5 / rate + 0.5 / peak)) ^ 2 }
        /^  theoretical/ { f32 = $2; f64 = $5 }
        /^  GEMM rate .*float32/ {
            rate = $(NF - 8); share = $(NF - 5); gsub(/[(%]/, "", share)
            rate64 = $(NF - 2); share64 = $NF; gsub(/[(%)]/, "", share64)
            if (rate <= 0 || rate64 <= 0 || off(rate, f32, share) || off(rate64, f64, share64)) bad = 1
            n++ }
        END { exit !(n == 2 && f32 > 0 && (f32 - 2 * f64) ^ 2 <= 1.0 && !bad) }' out.txt; then
    ok "info --peak --threads 1: one thread, shares as the rates over the peaks"
else
    fail "info --peak --threads 1: exit $rc, $(sed -n '/^peak/,$p' out.txt | head -c 900) $(head -c 300 err.txt)"
fi

# ---------------------------------------------------------------- axon stats
run "$AXON" stats
if [ "$rc" -eq 2 ] && grep -qxF "       axon stats tensor-mean [options]   third-order tensor mean" err.txt &&
    [ ! -s out.txt ]; then
    ok "stats alone: its help on stderr"
else
    fail "stats alone: exit $rc"
fi
for help in --help -h help; do
    expect "stats $help" 0 "usage: axon stats entropy-mi [options]    entropy and mutual information" -- \
        "$AXON" stats "$help"
done
expect "stats: a statistic mistyped" 2 \
    "axon stats: unknown statistic 'entropy'; entropy-mi or tensor-mean (see axon stats --help)" -- \
    "$AXON" stats entropy
if "$AXON" info --json | grep -q '"stats":true'; then
    either="axon stats entropy-mi: give either --x and --y (.npy files) or --model with --data and --layer (see axon help stats)"
    expect "entropy-mi --help" 0 \
        "usage: axon stats entropy-mi --x X.npy --y Y.npy [--device NAME[:N]] [--json]" -- \
        "$AXON" stats entropy-mi --help
    expect "tensor-mean --help" 0 \
        "usage: axon stats tensor-mean --fx A.npy --fy B.npy --fz C.npy [--out T.npy] [--device NAME[:N]] [--json]" -- \
        "$AXON" stats tensor-mean --help
    expect "entropy-mi without inputs" 2 "$either" -- "$AXON" stats entropy-mi
    expect "entropy-mi, --x alone" 2 "$either" -- "$AXON" stats entropy-mi --x a.npy
    expect "entropy-mi, arrays and a model" 2 "$either" -- \
        "$AXON" stats entropy-mi --x a.npy --y b.npy --model m.safetensors
    expect "entropy-mi --model without --data" 2 \
        "axon stats entropy-mi: with --model, --data and --layer are required (see axon help stats)" -- \
        "$AXON" stats entropy-mi --model m.safetensors
    expect "entropy-mi --layer 64" 2 \
        "axon stats entropy-mi: --layer: expected an integer between 0 and 63, got 64" -- \
        "$AXON" stats entropy-mi --model m.safetensors --data d.csv --layer 64
    expect "entropy-mi --x ''" 2 "axon stats entropy-mi: --x: expected a value, got an empty string" -- \
        "$AXON" stats entropy-mi --x '' --y b.npy
    expect "entropy-mi --json=2" 2 "axon stats entropy-mi: --json: expected true or false, got '2'" -- \
        "$AXON" stats entropy-mi --x a.npy --y b.npy --json=2
    expect "tensor-mean without inputs" 2 \
        "axon stats tensor-mean: --fx, --fy and --fz are required (see axon help stats)" -- \
        "$AXON" stats tensor-mean --fx a.npy
    expect "tensor-mean --fy ''" 2 "axon stats tensor-mean: --fy: expected a value, got an empty string" -- \
        "$AXON" stats tensor-mean --fx a.npy --fy '' --fz c.npy
    expect "tensor-mean --out ''" 2 "axon stats tensor-mean: --out: expected a value, got an empty string" -- \
        "$AXON" stats tensor-mean --fx a.npy --fy b.npy --fz c.npy --out ''
    # tensor-mean of small uint8 arrays: every value of A against the sums
    # taken here, A[i,j,k] = (1/n) sum_r fx[r,i] fy[r,j] fz[r,k] (exact:
    # small integers over 4); --out's float32 file holds the same values.
    npy_u1 a.npy 4 2 1 2 3 4 5 6 7 8
    npy_u1 b.npy 4 2 2 1 0 1 1 0 3 3
    npy_u1 c.npy 3 2 1 1 1 1 1 1
    expected=$(awk 'BEGIN { split("1 2 3 4 5 6 7 8", a, " "); split("2 1 0 1 1 0 3 3", b, " ")
        for (i = 0; i < 2; i++) for (j = 0; j < 2; j++) for (k = 0; k < 2; k++) { s = 0
            for (r = 0; r < 4; r++) s += a[2 * r + i + 1] * b[2 * r + j + 1] * a[2 * r + k + 1]
            printf "%s%g", (i + j + k ? " " : ""), s / 4 } }')
    run "$AXON" stats tensor-mean --fx a.npy --fy b.npy --fz a.npy --json
    got=$(sed -n 's/.*"values":\[\([^]]*\)\].*/\1/p' out.txt | tr ',' ' ')
    if [ "$rc" -eq 0 ] && [ "$(printf '%s' "$got" | awk '{ for (i = 1; i <= NF; i++) printf "%s%g", (i > 1 ? " " : ""), $i }')" = "$expected" ] &&
        grep -qF '"n":4,"d":2,"out":null' out.txt; then
        ok "tensor-mean: every value of A as summed here ($expected)"
    else
        fail "tensor-mean: exit $rc, values '$got', expected '$expected'"
    fi
    run "$AXON" stats tensor-mean --fx a.npy --fy b.npy --fz a.npy --out tensor.npy
    written=$(od -A n -t f4 -j 128 -v tensor.npy 2> /dev/null | awk '{ for (i = 1; i <= NF; i++) printf "%s%g", (n++ ? " " : ""), $i }')
    if [ "$rc" -eq 0 ] && grep -qxF "tensor A    (2, 2, 2) written to tensor.npy" out.txt &&
        [ "$(stat -c %s tensor.npy)" -eq 160 ] && [ "$written" = "$expected" ] &&
        [ "$(head -c 6 tensor.npy | tail -c 5)" = "NUMPY" ]; then
        ok "tensor-mean --out: a .npy of the same float32 values"
    else
        fail "tensor-mean --out: exit $rc, wrote '$written', expected '$expected'"
    fi
    npy_u1 wide.npy 1 17 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17
    run "$AXON" stats tensor-mean --fx wide.npy --fy wide.npy --fz wide.npy --json
    if [ "$rc" -eq 0 ] && grep -qF '"d":17,' out.txt && grep -qF '"values":null}' out.txt; then
        ok "tensor-mean --json of d 17: the values left out (null)"
    else
        fail "tensor-mean --json of d 17: exit $rc, $(head -c 200 out.txt)"
    fi
    expect "tensor-mean of different shapes" 1 \
        "axon stats: a.npy is (4, 2) but c.npy is (3, 2); fx, fy and fz must have the same shape" -- \
        "$AXON" stats tensor-mean --fx a.npy --fy c.npy --fz a.npy
    expect "entropy-mi of different shapes" 1 \
        "axon stats: a.npy is (4, 2) but c.npy is (3, 2); X and Y must have the same shape" -- \
        "$AXON" stats entropy-mi --x a.npy --y c.npy
    # axon bench's statistics workloads
    many=$(seq -s, 1 33)
    while IFS='|' read -r option message; do
        eval "args=($option)"
        for workload in entropy-mi tensor-mean; do
            expect "bench $workload $option" 2 "axon bench: $message" -- "$AXON" bench "$workload" "${args[@]}"
        done
    done <<EOF
--sizes ''|--sizes: expected a value, got an empty string
--sizes 0|--sizes: expected sizes from 1 to 67108864 separated by commas, got '0'
--sizes 1,x|--sizes: expected sizes from 1 to 67108864 separated by commas, got '1,x'
--sizes 100000000|--sizes: expected sizes from 1 to 67108864 separated by commas, got '100000000'
--sizes ,|--sizes: expected sizes from 1 to 67108864 separated by commas, got ','
--sizes 64,|--sizes: a size is missing after the last comma in '64,'
--sizes $many|--sizes: at most 32 sizes
--min-time 100|--min-time: expected a number between 0 and 60, got 100
--repeat 0|--repeat: expected an integer between 1 and 1000, got 0
--quick=x|--quick: expected true or false, got 'x'
--csv ''|--csv: expected a value, got an empty string
--device x|--device: expected cpu, cuda, cuda:N, opencl, opencl:N (N a device number), got 'x'
EOF
    expect "bench tensor-mean --help" 0 \
        "usage: axon bench entropy-mi|tensor-mean [--sizes LIST] [--d D] [--repeat N] [--threads N] [--csv FILE] [--device NAME[:N]]" -- \
        "$AXON" bench tensor-mean --help
    expect "bench entropy-mi --csv in a missing folder" 1 \
        "axon bench: cannot open nodir/x.csv for appending: No such file or directory" -- \
        "$AXON" bench entropy-mi --sizes 64 --csv nodir/x.csv
else
    echo "skipped: the options of axon stats (a build without stats)"
fi

# ---------------------------------------------------------------- axon bench
expect "bench --help" 0 \
    "usage: axon bench b1a|b1b|b2|galaxy-cg|lenet|entropy-mi|tensor-mean [--repeat N] [--threads N] [--csv FILE] [options]" -- \
    "$AXON" bench --help
run "$AXON" bench
if [ "$rc" -eq 2 ] && grep -qF "usage: axon bench b1a|b1b|b2" err.txt && [ ! -s out.txt ]; then
    ok "bench without a workload: its help on stderr"
else
    fail "bench without a workload: exit $rc"
fi
expect "bench b9" 2 "axon bench: unknown workload 'b9' (b1a, b1b, b2, galaxy-cg, lenet, entropy-mi, tensor-mean)" -- \
    "$AXON" bench b9
expect "bench b2 --width 0" 2 "axon bench: --width: expected an integer between 1 and 65536, got 0" -- \
    "$AXON" bench b2 --width 0
expect "bench b2 --batch 0" 2 "axon bench: --batch: expected an integer between 1 and 16777216, got 0" -- \
    "$AXON" bench b2 --batch 0
expect "bench b2 --repeat 0" 2 "axon bench: --repeat: expected an integer between 1 and 1000, got 0" -- \
    "$AXON" bench b2 --repeat 0
expect "bench --quick=x" 2 "axon bench: --quick: expected true or false, got 'x'" -- "$AXON" bench b2 --quick=x
expect "bench --csv ''" 2 "axon bench: --csv: expected a value, got an empty string" -- "$AXON" bench b2 --csv ''
expect "bench --replicas with a device" 2 \
    "axon bench: --replicas trains replicas on the CPU's cores; leave it out with --device opencl:0" -- \
    "$AXON" bench b2 --replicas 2 --device opencl:0
expect "bench galaxy-cg --galaxy ''" 2 "axon bench: --galaxy: expected a value, got an empty string" -- \
    "$AXON" bench galaxy-cg --galaxy ''
run "$AXON" bench galaxy-cg --galaxy "$PWD/nowhere"
if [ "$rc" -eq 1 ] && grep -qF "$PWD/nowhere/train.csv" err.txt; then
    ok "bench galaxy-cg: a folder without train.csv, named"
else
    fail "bench galaxy-cg, a folder without train.csv: exit $rc, $(cat err.txt)"
fi

# A galaxy-shaped set: 32x32 pixels (0-255) and three classes, 30 rows to
# train on and 12 to test; CG, at most 50 iterations a repeat (--quick; CG
# may stop earlier on its gradient tolerance).
mkdir -p galaxy
awk 'BEGIN { srand(7); for (part = 0; part < 2; part++) {
        file = part ? "galaxy/test.csv" : "galaxy/train.csv"; rows = part ? 12 : 30
        for (r = 0; r < rows; r++) { line = r % 3
            for (p = 0; p < 1024; p++) line = line "," int(85 * (r % 3) + 80 * rand())
            print line > file } } }'
mkdir -p galaxy-train-only && cp galaxy/train.csv galaxy-train-only/
expect "bench galaxy-cg: test.csv missing, named" 1 \
    "axon: $PWD/galaxy-train-only/test.csv: cannot open: No such file or directory" -- \
    "$AXON" bench galaxy-cg --quick --galaxy "$PWD/galaxy-train-only"
run "$AXON" bench galaxy-cg --quick --repeat 2 --threads 1 --galaxy "$PWD/galaxy" --csv galaxy.csv
problems=""
[ "$rc" -eq 0 ] || problems="$problems exit $rc: $(head -c 300 err.txt);"
# Every row of 14 columns, galaxy-cg with CG at width 8; each repeat's
# epochs 1, 2, ... n (n <= 50) and its loss falling from the first to the
# last; the table's run lines give those last losses, its mean and sd are
# theirs (to the printing's 4 decimals).
awk -F, 'NR == 1 { next }
    NF != 14 || $1 != "axon" || $2 != "galaxy-cg" || $3 != "axon-cg" || $7 != 8 { bad = "a row: " $0; exit }
    { if ($9 != ++count[$8]) { bad = "repeat " $8 " epoch " $9; exit }
      if ($9 == 1) first[$8] = $11; last[$8] = $11 }
    END { if (bad) { print bad; exit 1 }
          for (r = 1; r <= 2; r++) {
              if (!(count[r] >= 2 && count[r] <= 50 && last[r] < first[r])) { print "repeat " r; exit 1 }
              printf "%s ", last[r] } }' galaxy.csv > last_losses.txt ||
    problems="$problems the CSV: $(cat last_losses.txt);"
read -r loss1 loss2 < last_losses.txt
awk -v a="${loss1:-0}" -v b="${loss2:-0}" '
    function near(x, y) { return (x - y) ^ 2 <= 0.00016 ^ 2 }
    /^  run 1:/ { for (i = 1; i < NF; i++) if ($i == "loss") r1 = $(i + 1) + 0 }
    /^  run 2:/ { for (i = 1; i < NF; i++) if ($i == "loss") r2 = $(i + 1) + 0 }
    /^  final training loss/ { mean = $4; sd = $6 }
    END { exit !(near(r1, a) && near(r2, b) && near(mean, (a + b) / 2) &&
                 near(sd, sqrt((a - b) ^ 2 / 2))) }' out.txt ||
    problems="$problems the table against the CSV's last losses $loss1 $loss2: $(grep -E 'run [12]:|final training' out.txt | tr '\n' ' ');"
if [ -n "$problems" ]; then
    fail "bench galaxy-cg on a small set:$problems"
else
    ok "bench galaxy-cg on a small set: the CSV's epochs and falling losses, the table's runs, mean and sd"
fi

if [ "$failures" -gt 0 ]; then
    echo "cli_options: $failures check(s) failed"
    exit 1
fi
echo "cli_options: all checks passed"
