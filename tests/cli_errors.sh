#!/usr/bin/env bash
# cli_errors.sh: the axon command line on bad input, and a small run that works.
#
#   bash tests/cli_errors.sh /path/to/axon WORKDIR
#
# Writes small bad inputs into WORKDIR (a truncated IDX file, ragged and
# non-numeric CSV files, a corrupt model, ...) and checks that axon refuses
# each with the documented exit status (2 = usage error, 1 = runtime error)
# and a message naming the file or option at fault, without crashing (a
# sanitizer report counts as a failure). Then trains a tiny network on two
# Gaussian blobs and checks the model file, the metrics file, `axon eval` and
# `axon predict`. Prints "N passed, M failed" and exits 1 if any failed.
set -u
. "$(dirname "$0")/test_python.sh" # has_python: the JSON checks where Python is there

if [ $# -ne 2 ]; then
    echo "usage: bash tests/cli_errors.sh /path/to/axon WORKDIR" >&2
    exit 2
fi
AXON=$1
WORK=$2
if [ ! -x "$AXON" ]; then
    echo "cli_errors.sh: $AXON is not an executable" >&2
    exit 1
fi
case "$AXON" in /*) ;; *) AXON="$PWD/$AXON" ;; esac
rm -rf "$WORK"
mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1

passed=0
failed=0
name=""
problems=""
rc=0
TIMEOUT=""
command -v timeout > /dev/null && TIMEOUT="timeout 300"

begin() { name=$1; problems=""; }
note() { problems="$problems    $1"$'\n'; }
# Runs a command, keeping its status and output; a sanitizer report or a
# death by signal is a failure whatever the test expects.
run() {
    $TIMEOUT "$@" > out.txt 2> err.txt
    rc=$?
    if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' err.txt; then
        note "sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error:' err.txt)"
    fi
    if [ "$rc" -gt 128 ] && [ "$rc" -ne 130 ]; then
        note "killed by signal $((rc - 128))"
    fi
}
status_is() { [ "$rc" -eq "$1" ] || note "exit status $rc, expected $1"; }
stderr_has() { grep -qF -- "$1" err.txt || note "stderr lacks '$1'"; }
stdout_has() { grep -qF -- "$1" out.txt || note "stdout lacks '$1'"; }
finish() {
    if [ -z "$problems" ]; then
        passed=$((passed + 1))
        echo "ok    $name"
    else
        failed=$((failed + 1))
        echo "FAIL  $name"
        printf '%s' "$problems"
        sed -n '1,6s/^/    stderr: /p' err.txt
    fi
}

# A refusal: the status, and each further argument must appear in stderr.
# usage: refuse NAME STATUS "TEXT..." -- COMMAND...
refuse() {
    local test_name=$1 status=$2
    shift 2
    local texts=()
    while [ "$1" != "--" ]; do
        texts+=("$1")
        shift
    done
    shift
    begin "$test_name"
    run "$@"
    status_is "$status"
    for text in "${texts[@]}"; do stderr_has "$text"; done
    [ -s err.txt ] || note "nothing on stderr"
    finish
}

# ------------------------------------------------------------------ inputs

# Two Gaussian blobs in 4 dimensions, 100 rows each, label in column 0.
awk 'BEGIN {
    srand(12345); pi = atan2(0, -1)
    for (i = 0; i < 200; i++) {
        c = i % 2; m = c ? 1.5 : -1.5
        printf "%d", c
        for (j = 0; j < 4; j++) {
            z = sqrt(-2 * log(1 - rand())) * cos(2 * pi * rand())
            printf ",%.5f", m + z
        }
        printf "\n"
    }
}' > blobs.csv
# The same with 3 features: the wrong width for a model trained on blobs.csv.
cut -d, -f1-4 blobs.csv > narrow.csv
# Labels 0..3 for a 2-class layout.
awk 'BEGIN { for (i = 0; i < 40; i++) printf "%d,%d,%d,%d,%d\n", i % 4, i, -i, i % 3, 1 }' > four_classes.csv
printf '0,1.5,2.5\n1,0.5,1.0\n0,2.0\n1,1.0,1.0\n' > ragged.csv
printf '0,1.5,2.5\n1,0.5,1.0\n1,abc,1.0\n' > nonnumeric.csv
printf '0,1.5,2.5\n1,nan,1.0\n' > nan.csv
printf 'feature data\n' > notes.txt

# An IDX folder whose images file promises 100 images of 28x28 but holds 10
# bytes of pixels.
mkdir -p idx_truncated
{ printf '\000\000\010\003\000\000\000\144\000\000\000\034\000\000\000\034'; head -c 10 /dev/zero; } \
    > idx_truncated/train-images-idx3-ubyte
{ printf '\000\000\010\001\000\000\000\144'; head -c 100 /dev/zero; } \
    > idx_truncated/train-labels-idx1-ubyte

# ------------------------------------------------------- usage errors (2)

refuse "no command" 2 "usage" -- "$AXON"
refuse "unknown subcommand" 2 "frobnicate" -- "$AXON" frobnicate
refuse "unknown subcommand of help" 2 "frobnicate" -- "$AXON" help frobnicate
refuse "unknown option" 2 "unknown option --lrr" "axon train --help" -- \
    "$AXON" train --data blobs.csv --lrr 0.1
refuse "single-dash option" 2 "-lr" -- "$AXON" train --data blobs.csv -lr 0.1
refuse "stray argument" 2 "blobs.csv" -- "$AXON" train blobs.csv
refuse "missing option value at the end" 2 "--data" -- "$AXON" train --data
refuse "missing option value before another option" 2 "--data" -- \
    "$AXON" train --data --epochs 3
refuse "empty option value" 2 "--data" -- "$AXON" train --data ""
refuse "missing --data" 2 "--data" -- "$AXON" train --epochs 3
refuse "malformed number" 2 "--lr" "abc" -- "$AXON" train --data blobs.csv --lr abc
refuse "malformed number with =" 2 "--lr" "0.1x" -- "$AXON" train --data blobs.csv --lr=0.1x
refuse "negative learning rate" 2 "--lr" "-1" -- "$AXON" train --data blobs.csv --lr -1
refuse "zero learning rate" 2 "--lr" -- "$AXON" train --data blobs.csv --lr 0
refuse "learning rate inf" 2 "--lr" -- "$AXON" train --data blobs.csv --lr inf
refuse "huge epoch count" 2 "--epochs" "99999999999999" -- \
    "$AXON" train --data blobs.csv --epochs 99999999999999
refuse "epoch count beyond int64" 2 "--epochs" -- \
    "$AXON" train --data blobs.csv --epochs 999999999999999999999999
refuse "fractional epochs" 2 "--epochs" -- "$AXON" train --data blobs.csv --epochs 2.5
refuse "negative batch" 2 "--batch" -- "$AXON" train --data blobs.csv --batch -5
refuse "negative threads" 2 "--threads" -- "$AXON" train --data blobs.csv --threads -1
refuse "dropout of 1" 2 "--dropout" -- "$AXON" train --data blobs.csv --dropout 1
refuse "ratio by zero" 2 "--scale" -- "$AXON" train --data blobs.csv --scale 1/0
refuse "unknown precision" 2 "--precision" "f16" -- "$AXON" train --data blobs.csv --precision f16
refuse "unknown device" 2 "--device" "gpu" -- "$AXON" train --data blobs.csv --device gpu
refuse "negative device number" 2 "--device" "cuda:-1" -- "$AXON" train --data blobs.csv --device cuda:-1
# No machine has device 999: refused whether or not this build has CUDA.
refuse "absent CUDA device" 1 "--device" "CUDA" -- "$AXON" train --data blobs.csv --device cuda:999
# The statistics on an absent device: a valid (1, 2) float32 .npy, refused at the device.
printf '\x93NUMPY\x01\x00\x76\x00' > pair.npy
printf '%-117s\n' "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }" >> pair.npy
printf '\x00\x00\x80\x3f\x00\x00\x00\x40' >> pair.npy
if "$AXON" info --json | grep -q '"stats":true'; then
    refuse "stats on an absent CUDA device" 1 "--device" "CUDA device 999" -- \
        "$AXON" stats entropy-mi --x pair.npy --y pair.npy --device cuda:999
    refuse "stats on an unknown device" 2 "--device" "gpu" -- \
        "$AXON" stats tensor-mean --fx pair.npy --fy pair.npy --fz pair.npy --device gpu
    refuse "stats bench on an absent CUDA device" 1 "--device" "CUDA" -- \
        "$AXON" bench tensor-mean --sizes 8 --repeat 1 --min-time 0 --device cuda:999
else
    # A build with AXON_STATS=OFF: every statistic refuses, saying how to rebuild.
    refuse "stats in a build without them" 1 "axon stats entropy-mi" "cmake -DAXON_STATS=ON" -- \
        "$AXON" stats entropy-mi --x pair.npy --y pair.npy
    refuse "tensor-mean in a build without stats" 1 "cmake -DAXON_STATS=ON" -- \
        "$AXON" stats tensor-mean --fx pair.npy --fy pair.npy --fz pair.npy
    refuse "stats bench in a build without stats" 1 "axon bench tensor-mean" "cmake -DAXON_STATS=ON" -- \
        "$AXON" bench tensor-mean --sizes 8 --repeat 1 --min-time 0
fi
if ! "$AXON" info --json | grep -q '"prep":true'; then
    # A build without image preparation (AXON_PREP=OFF, or no libarchive,
    # libjpeg and libpng): axon prep refuses, naming the option and packages.
    refuse "prep in a build without it" 1 "axon prep" "cmake -DAXON_PREP=ON" "libarchive-dev" -- \
        "$AXON" prep --input . --out prep_out
fi
refuse "unknown optimizer" 2 "--optimizer" -- "$AXON" train --data blobs.csv --optimizer rmsprop
refuse "cg with mini-batches" 2 "--optimizer cg" "full batch" -- \
    "$AXON" train --data blobs.csv --optimizer cg --batch 50
refuse "both --max-iter and --epochs" 2 "--max-iter" "--epochs" -- \
    "$AXON" train --data blobs.csv --optimizer cg --max-iter 5 --epochs 5
refuse "lbfgs memory of 0" 2 "--lbfgs-memory" -- \
    "$AXON" train --data blobs.csv --optimizer lbfgs --lbfgs-memory 0
refuse "negative gtol" 2 "--gtol" -- "$AXON" train --data blobs.csv --optimizer cg --gtol -1

for method in cg lbfgs; do
    begin "axon train --optimizer $method reports evaluations and why it stopped"
    run "$AXON" train --data blobs.csv --layers 2:softmax --optimizer $method --max-iter 200 \
        --gtol 1e-4 --l2 0.01
    status_is 0
    stdout_has "gradient evaluations"
    stdout_has "stopped: converged: gradient norm below gtol"
    stdout_has "iterations in"
    finish
done
# The notes about options the chosen optimizer ignores name the kinds that
# read them (from the library's registry of optimizers).
notes=(
    "adam|--max-iter 3 --epochs 1|note: --max-iter and --gtol apply to cg and lbfgs; adam uses --epochs"
    "sgd|--lbfgs-memory 3 --epochs 1|note: --lbfgs-memory applies to lbfgs only"
    "cg|--momentum 0.5 --max-iter 1|note: --momentum and --nesterov apply to sgd only; cg ignores them"
    "lbfgs|--lr 0.5 --max-iter 1|note: lbfgs chooses its steps by line search; --lr is ignored"
)
for entry in "${notes[@]}"; do
    IFS='|' read -r method options text <<< "$entry"
    begin "axon train --optimizer $method $options: $text"
    # shellcheck disable=SC2086 # the options are words
    run "$AXON" train --data blobs.csv --layers 2:softmax --optimizer $method $options --quiet
    status_is 0
    stderr_has "$text"
    finish
done
refuse "malformed layers" 2 "--layers" -- "$AXON" train --data blobs.csv --layers 8:relu,x:softmax
refuse "early stop without validation" 2 "--early-stop" "--val-split" -- \
    "$AXON" train --data blobs.csv --early-stop 3
refuse "flag with a bad value" 2 "--nesterov" -- "$AXON" train --data blobs.csv --nesterov=maybe
refuse "unknown synthetic set" 2 "synth:quadratic" -- "$AXON" train --data synth:quadratic
refuse "unknown data format" 2 "notes.txt" -- "$AXON" train --data notes.txt
refuse "eval without --model" 2 "--model" -- "$AXON" eval --data blobs.csv
refuse "predict without --data" 2 "--data" -- "$AXON" predict --model model.safetensors
# --views, read alike by eval and predict (data_views_read).
for command in eval predict; do
    out=(); [ $command = predict ] && out=(--out views.csv)
    refuse "$command --views 5" 2 "--views is 1 (the centre crop) or 10" -- \
        "$AXON" $command --model model.safetensors --data blobs.csv --views 5 "${out[@]}"
    refuse "$command --views 10 without crops" 2 "--views 10 takes crops of streamed batches" -- \
        "$AXON" $command --model model.safetensors --data blobs.csv --views 10 "${out[@]}"
done

# ----------------------------------------------------- runtime errors (1)

refuse "missing data file" 1 "missing.csv" "no such file" -- "$AXON" train --data missing.csv
refuse "missing test file" 1 "missing_test.csv" "no such file" -- \
    "$AXON" train --data blobs.csv --test missing_test.csv
refuse "data set not installed" 1 "fashion-mnist" "apt-get install dataset-fashion-mnist" -- \
    env AXON_DATASETS="$PWD/no_datasets_here" "$AXON" train --data fashion-mnist
refuse "a bare name that is no data set says which names work" 1 "--data mnist: no such file" \
    "fashion-mnist (apt-get install dataset-fashion-mnist)" "give the folder holding its four files" -- \
    env AXON_DATASETS="$PWD/no_datasets_here" "$AXON" train --data mnist
begin "axon info names the MPI library, or its absence"
run "$AXON" info
status_is 0
grep -qE '^  mpi           (Open MPI|MPICH|.*MPI|no \(a build without MPI)' out.txt || note "no mpi line"
run "$AXON" info --json
grep -q '"mpi":' out.txt || note "no mpi field in --json"
finish
begin "axon info says whether prep and stats are built, in text and JSON"
run "$AXON" info
status_is 0
grep -qE '^  prep          (yes|no \(a build without image preparation)' out.txt || note "no prep line"
grep -qE '^  stats         (yes|no \(a build without activation statistics)' out.txt || note "no stats line"
run "$AXON" info --json
grep -qE '"prep":(true|false)' out.txt || note "no prep field in --json"
grep -qE '"stats":(true|false)' out.txt || note "no stats field in --json"
finish
begin "a stale OPENBLAS_CORETYPE is replaced on an AVX-512 CPU"
if grep -qw avx512f /proc/cpuinfo 2>/dev/null && "$AXON" info | grep -q "^  blas  *OpenBLAS"; then
    run env OPENBLAS_CORETYPE=Prescott "$AXON" info
    status_is 0
    stdout_has "OPENBLAS_CORETYPE=Prescott was ignored"
    grep -qE "kernels: (SkylakeX|Cooperlake)" out.txt || note "not AVX-512 kernels: $(grep blas out.txt)"
    run env OPENBLAS_CORETYPE=Prescott AXON_KEEP_OPENBLAS_CORETYPE=1 "$AXON" info
    stdout_has "kernels: Prescott"
fi
finish
begin "OpenMP's spin count: the user's is kept; beside a running process axon chooses 1000"
run env GOMP_SPINCOUNT=777 "$AXON" info
status_is 0
stdout_has "GOMP_SPINCOUNT=777 (yours)"
# The spinner is runnable from its fork on, so /proc/stat counts it at once,
# however slow or busy the machine: no wait is needed.
sh -c 'while :; do :; done' &
spinner=$!
run env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$AXON" info
kill -9 "$spinner" 2> /dev/null
wait "$spinner" 2> /dev/null
status_is 0
stdout_has "GOMP_SPINCOUNT=1000 (axon's: other processes were running at the start"
finish
begin "axon bench --help gives each default once"
run "$AXON" bench --help
status_is 0
grep -q '(default [^)]*) (default' out.txt && note "a doubled default: $(grep '(default [^)]*) (default' out.txt)"
stdout_has "b2: batch size (default 1024)"
finish
refuse "truncated IDX file" 1 "train-images-idx3-ubyte" -- "$AXON" train --data idx_truncated
refuse "CSV with a ragged row" 1 "ragged.csv" "line 3" -- "$AXON" train --data ragged.csv
refuse "CSV with a non-numeric field" 1 "nonnumeric.csv" "line 3" -- \
    "$AXON" train --data nonnumeric.csv
refuse "CSV with NaN" 1 "nan.csv" "NaN" -- "$AXON" train --data nan.csv
refuse "labels out of range for the layout" 1 "four_classes.csv" "labels" -- \
    "$AXON" train --data four_classes.csv --layers 4:relu,2:softmax
refuse "unwritable --out folder" 1 "no_such_folder" "does not exist" -- \
    "$AXON" train --data blobs.csv --out no_such_folder/model.safetensors
refuse "missing model file" 1 "missing.safetensors" "no such file" -- \
    "$AXON" eval --model missing.safetensors --data blobs.csv

# ----------------------------------------------------------- what works

begin "axon --help"
run "$AXON" --help
status_is 0
stdout_has "train"
finish

begin "axon --version"
run "$AXON" --version
status_is 0
stdout_has "axon "
finish

for command in train eval predict info; do
    begin "axon $command --help"
    run "$AXON" "$command" --help
    status_is 0
    stdout_has "usage: axon $command"
    finish
done

begin "axon train --help lists its options with defaults"
run "$AXON" train --help
for option in --data --test --layers --loss --optimizer --lr --momentum --nesterov --batch \
    --epochs --l2 --dropout --init --init-range --seed --threads --precision --device --val-split \
    --early-stop --out --metrics --quiet --no-shuffle --max-iter --gtol --lbfgs-memory; do
    grep -qE -- "^  $option( |\$)" out.txt || note "no line for $option"
done
stdout_has "(default 128)"
finish

begin "axon help train is axon train --help"
run "$AXON" help train
status_is 0
stdout_has "usage: axon train"
finish

begin "axon info"
run "$AXON" info
status_is 0
stdout_has "blas"
stdout_has "threads"
stdout_has "cores"
finish

begin "tiny CSV training run"
run "$AXON" train --data blobs.csv --layers 8:relu,2:softmax --epochs 3 --batch 16 \
    --out model.safetensors --metrics metrics.jsonl --seed 7
status_is 0
[ -s model.safetensors ] || note "no model.safetensors written"
stdout_has "model.safetensors"
lines=$( (wc -l < metrics.jsonl) 2> /dev/null || echo 0)
[ "$lines" -eq 3 ] || note "metrics.jsonl has $lines lines, expected 3"
for epoch in 1 2 3; do
    grep -qE "^\{\"epoch\":$epoch,\"train_loss\":[-0-9.e+]+,.*\"seconds\":[-0-9.e+]+,\"gflops\":.*\}\$" \
        metrics.jsonl 2> /dev/null || note "no well-formed metrics line for epoch $epoch"
done
if has_python json; then
    "$PYTHON" -c 'import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    assert set(record) >= {"epoch", "train_loss", "val_loss", "test_loss", "test_accuracy", "seconds", "gflops"}
    assert record["val_loss"] is None and record["test_loss"] is None' metrics.jsonl 2> json.txt ||
        note "metrics.jsonl is not valid JSON Lines: $(tail -1 json.txt)"
fi
finish

begin "axon eval on the trained model"
run "$AXON" eval --model model.safetensors --data blobs.csv
status_is 0
stdout_has "accuracy"
stdout_has "confusion matrix"
stdout_has "4-8:relu-2:softmax"
finish

begin "axon eval --json"
run "$AXON" eval --model model.safetensors --data blobs.csv --json
status_is 0
stdout_has '"rows":200'
stdout_has '"confusion":[['
finish

begin "axon predict to a file"
run "$AXON" predict --model model.safetensors --data blobs.csv --out predictions.csv
status_is 0
[ "$( (head -1 predictions.csv) 2> /dev/null)" = "predicted,p0,p1" ] || note "header is not predicted,p0,p1"
rows=$( (wc -l < predictions.csv) 2> /dev/null || echo 0)
[ "$rows" -eq 201 ] || note "predictions.csv has $rows lines, expected 201"
awk -F, 'NR > 1 && (NF != 3 || ($1 != 0 && $1 != 1) || $2 < 0 || $2 > 1) { bad = 1 } END { exit bad }' \
    predictions.csv 2> /dev/null || note "a row of predictions.csv is not class,p0,p1"
finish

begin "axon predict to stdout"
run "$AXON" predict --model model.safetensors --data blobs.csv
status_is 0
[ "$(wc -l < out.txt)" -eq 201 ] || note "stdout has $(wc -l < out.txt) lines, expected 201"
finish

# ---------------------------------------------- errors that need a model

refuse "input width mismatch in eval" 1 "narrow.csv" "model.safetensors" "3 features" "4 inputs" -- \
    "$AXON" eval --model model.safetensors --data narrow.csv
# predict tells a feature-only file from one with its label column by the
# model's inputs (4): 4 columns are features only, 5 hold the label; other
# counts, and readings that contradict an option, are refused.
cut -d, -f1-3 blobs.csv > narrower.csv
cut -d, -f2-5 blobs.csv > features.csv
awk -F, -v OFS=, '{ print $2, $3, $4, $5, $1 }' blobs.csv > label_last.csv
paste -d, features.csv features.csv > wide.csv
refuse "input width mismatch in predict" 1 "narrower.csv" "3 columns" "4 inputs" "give 4 columns" -- \
    "$AXON" predict --model model.safetensors --data narrower.csv
refuse "predict on a file of twice the columns" 1 "wide.csv" "8 columns" "or 5" -- \
    "$AXON" predict --model model.safetensors --data wide.csv
refuse "predict --no-labels on a file with its label column" 1 "--no-labels" "5 columns" \
    "exactly 4" -- "$AXON" predict --model model.safetensors --data blobs.csv --no-labels
refuse "predict --label-column on a feature-only file" 1 "features.csv" "4 columns" \
    "--label-column" -- "$AXON" predict --model model.safetensors --data features.csv \
    --label-column 0
refuse "predict --no-labels on synthetic data" 2 "--no-labels" "synth:linear" -- \
    "$AXON" predict --model model.safetensors --data synth:linear --no-labels
refuse "predict on a feature-only file that is missing" 1 "missing.csv" "no such file" -- \
    "$AXON" predict --model model.safetensors --data missing.csv --no-labels

begin "axon predict on features only: the rows of the labeled file"
run "$AXON" predict --model model.safetensors --data blobs.csv --out labeled.csv
run "$AXON" predict --model model.safetensors --data features.csv --out bare.csv
status_is 0
cmp -s labeled.csv bare.csv || note "features.csv's predictions differ from blobs.csv's"
run "$AXON" predict --model model.safetensors --data features.csv --no-labels --out bare2.csv
status_is 0
cmp -s labeled.csv bare2.csv || note "--no-labels gives other predictions"
run "$AXON" predict --model model.safetensors --data label_last.csv --label-column last --out last.csv
status_is 0
cmp -s labeled.csv last.csv || note "the label in the last column gives other predictions"
[ "$(wc -l < bare.csv)" -eq 201 ] || note "bare.csv has $(wc -l < bare.csv) lines, expected 201"
finish

if has_python numpy; then
    begin "axon predict on a feature-only .npy"
    "$PYTHON" -c 'import numpy, sys
x = numpy.loadtxt(sys.argv[1], delimiter=",", dtype=numpy.float32, ndmin=2)
numpy.save(sys.argv[2], x)
numpy.save(sys.argv[3], x[:, 1:])' blobs.csv labeled.npy bare.npy 2> py.txt || note "numpy: $(tail -1 py.txt)"
    run "$AXON" predict --model model.safetensors --data labeled.npy --out labeled_npy.csv
    status_is 0
    run "$AXON" predict --model model.safetensors --data bare.npy --out bare_npy.csv
    status_is 0
    cmp -s labeled_npy.csv bare_npy.csv || note "bare.npy's predictions differ from labeled.npy's"
    cmp -s labeled.csv bare_npy.csv || note "bare.npy's predictions differ from blobs.csv's"
    finish
fi
if [ -s model.safetensors ]; then
    head -c 100 model.safetensors > corrupt.safetensors
else
    printf 'not a model' > corrupt.safetensors
fi
refuse "corrupt model file for eval" 1 "corrupt.safetensors" -- \
    "$AXON" eval --model corrupt.safetensors --data blobs.csv
printf '\377\377\377\377\377\377\377\177{}' > garbage.safetensors
refuse "model with an absurd header length" 1 "garbage.safetensors" -- \
    "$AXON" eval --model garbage.safetensors --data blobs.csv

# --init-from: the network and weights come from a model file.
refuse "init-from a missing file" 1 "--init-from" "missing.safetensors" "no such file" -- \
    "$AXON" train --data blobs.csv --init-from missing.safetensors
refuse "init-from a folder" 1 "--init-from" "is a folder" -- \
    "$AXON" train --data blobs.csv --init-from .
refuse "init-from with --layers" 2 "--layers" "--init-from" "leave it out" -- \
    "$AXON" train --data blobs.csv --init-from model.safetensors --layers 3:relu,2:softmax
refuse "init-from a corrupt model" 1 "corrupt.safetensors" -- \
    "$AXON" train --data blobs.csv --init-from corrupt.safetensors
refuse "init-from a model of another width" 1 "narrow.csv" "3 features" "4 inputs" -- \
    "$AXON" train --data narrow.csv --init-from model.safetensors
refuse "init-from on a resume" 2 "--init-from" "leave it out" -- \
    "$AXON" train --resume any.safetensors --data blobs.csv --init-from model.safetensors

begin "init-from continues from the model's weights"
# Zero epochs are not allowed; one epoch at a learning rate too small to move
# the weights must evaluate like the model it started from.
run "$AXON" train --data blobs.csv --init-from model.safetensors --epochs 1 --lr 1e-30 \
    --momentum 0 --out continued.safetensors
status_is 0
stdout_has "weights from model.safetensors"
run "$AXON" eval --model model.safetensors --data blobs.csv --json
before=$(sed 's/"model":"[^"]*",//' out.txt)
run "$AXON" eval --model continued.safetensors --data blobs.csv --json
after=$(sed 's/"model":"[^"]*",//' out.txt)
[ -n "$after" ] && [ "$after" = "$before" ] || note "eval after --init-from differs: $after vs $before"
finish

# ------------------------------------- issue 25: a long --layers value
# 200 layers once printed 2,456 bytes of the layout, echoed twice and cut
# mid-layer, and never the reason; now the reason comes first and the layout
# is shown by its start and length, in one short line.
long_layers=$(awk 'BEGIN { for (i = 1; i < 200; i++) printf "128:relu,"; printf "10:softmax" }')
refuse "200 layers: the reason first" 2 "axon train: --layers: too many layers: 200, more than the 64" \
    "(layout '128:relu,128:relu,128:relu,128:relu,128:... (1801 characters)')" -- \
    "$AXON" train --data blobs.csv --layers "$long_layers"
[ "$(wc -c <err.txt)" -lt 200 ] || { echo "FAIL  a $(wc -c <err.txt)-byte message"; failed=$((failed + 1)); }
refuse "a short layout shown whole, once" 2 \
    "axon train: --layers: layout '8:relu,x:softmax': layer 2 has width 'x'" -- \
    "$AXON" train --data blobs.csv --layers 8:relu,x:softmax
[ "$(grep -o "8:relu,x:softmax" err.txt | wc -l)" -eq 1 ] || { echo "FAIL  the layout echoed twice"; failed=$((failed + 1)); }

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
