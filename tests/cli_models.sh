#!/usr/bin/env bash
# cli_models.sh: axon eval and predict on small models of each output
# kind, train --profile's report, and the command lines of eval, predict
# and export.
#
#   bash tests/cli_models.sh /path/to/axon WORKDIR
#
# - A regression model (one identity output, MSE): eval prints rmse, the
#   square root of the loss it prints; the loss is the mean squared error
#   of predict's own outputs (its "y" column) against the targets,
#   computed here; --json has accuracy, confusion null and classes 0.
# - A single sigmoid output (binary cross-entropy): predict writes
#   "predicted,p1", p1 in [0, 1] and predicted 1 exactly where p1 >= 0.5.
# - A softmax model over 41 classes: eval says the confusion matrix is too
#   many classes for a table; its accuracy is the share of predict's
#   predicted classes equal to the labels.
# - eval --json names a data file whose name holds a quote, a backslash, a
#   tab and a control character: JSON gives the name back exactly (Python's
#   json, when there).
# - train --profile at float64: the calls are the steps, the printed shares
#   add to 100, the GEMMs line is the GEMM rows' shares; --quiet
#   --profile-json at bf16: no table, the batch capped at the rows.
# - Each bad option of eval, predict and export: status 2, its exact message.
# Prints each check; exits 1 if any failed.
set -u
. "$(dirname "$0")/test_python.sh" # has_python

. "$(dirname "$0")/cli_check.sh"
cli_check_begin cli_models.sh "$@"
# trained NAME ARGS...: trains quietly into NAME.safetensors, or fails the test.
trained() {
    local name=$1
    shift
    if ! "$AXON" train --quiet --seed 3 --out "$name.safetensors" "$@" > /dev/null 2> train_err.txt; then
        fail "training $name: $(head -c 300 train_err.txt)"
        return 1
    fi
}

# ------------------------------------------------------------ regression
awk 'BEGIN { srand(11); for (r = 0; r < 40; r++) { a = rand(); b = rand()
             printf "%.6f,%.6f,%.6f\n", 2 * a - b + 0.5, a, b } }' > regression.csv
if trained regression --data regression.csv --regression --layers 1:identity --epochs 20 --lr 0.2; then
    run "$AXON" eval --model regression.safetensors --data regression.csv --regression
    loss=$(awk '$1 == "loss" { print $2 }' out.txt)
    rmse=$(awk '$1 == "rmse" { print $2 }' out.txt)
    "$AXON" predict --model regression.safetensors --data regression.csv --regression > predicted.csv
    # the targets (column 1) beside predict's outputs (column 4)
    mse=$(tail -n +2 predicted.csv | paste -d, regression.csv - |
          awk -F, '{ d = $4 - $1; s += d * d; n++ } END { printf "%.9g", s / n }')
    if [ "$rc" -eq 0 ] && [ "$(head -1 predicted.csv)" = "y" ] && [ -n "$loss" ] &&
        awk -v l="$loss" -v r="$rmse" -v m="$mse" 'BEGIN {
            exit !((r * r - l) ^ 2 <= (1e-5 * l) ^ 2 && (m - l) ^ 2 <= (1e-4 * l + 1e-7) ^ 2) }'; then
        ok "regression: rmse^2 = loss = the MSE of predict's outputs ($loss, $mse)"
    else
        fail "regression: exit $rc, loss '$loss', rmse '$rmse', MSE of predict '$mse', header '$(head -1 predicted.csv)'"
    fi
    run "$AXON" eval --model regression.safetensors --data regression.csv --regression --json
    if [ "$rc" -eq 0 ] && grep -qF '"accuracy":null,"classes":0,"confusion":null}' out.txt &&
        grep -qF '"loss_function":"mse"' out.txt; then
        ok "regression --json: no accuracy, no classes, no confusion"
    else
        fail "regression --json: exit $rc, $(cat out.txt)"
    fi
fi

# ------------------------------------------------------------ one sigmoid
awk 'BEGIN { srand(5); for (r = 0; r < 40; r++) { a = rand(); b = rand()
             printf "%d,%.6f,%.6f\n", (a + b > 1), a, b } }' > binary.csv
if trained binary --data binary.csv --regression --layers 1:sigmoid --loss binary-cross-entropy --epochs 30 --lr 0.5; then
    run "$AXON" predict --model binary.safetensors --data binary.csv --regression --out binary_predicted.csv
    if [ "$rc" -eq 0 ] && [ "$(head -1 binary_predicted.csv)" = "predicted,p1" ] &&
        awk -F, 'NR > 1 { n++; if (NF != 2 || $2 < 0 || $2 > 1 || $1 != ($2 >= 0.5)) bad++ }
                 END { exit !(n == 40 && !bad) }' binary_predicted.csv; then
        ok "one sigmoid output: predicted,p1 with predicted = (p1 >= 0.5)"
    else
        fail "one sigmoid output: exit $rc, $(head -3 binary_predicted.csv | tr '\n' ' ') $(head -c 300 err.txt)"
    fi
fi

# ------------------------------------------------------------ 41 classes
awk 'BEGIN { srand(9); for (r = 0; r < 123; r++) printf "%d,%.6f,%.6f\n", r % 41, (r % 41) / 41, rand() }' > many.csv
if trained many --data many.csv --layers 41:softmax --epochs 3; then
    run "$AXON" eval --model many.safetensors --data many.csv
    correct=$("$AXON" predict --model many.safetensors --data many.csv |
              tail -n +2 | cut -d, -f1 | paste -d, - many.csv | awk -F, '$1 == $2 { n++ } END { print n + 0 }')
    if [ "$rc" -eq 0 ] && grep -qxF "confusion matrix: 41 classes, too many for a table (see --json)" out.txt &&
        grep -qE "^accuracy .*\($correct of 123 rows\)\$" out.txt; then
        ok "41 classes: no table; the accuracy is predict's ($correct of 123)"
    else
        fail "41 classes: exit $rc, predict's correct $correct, $(grep -E 'accuracy|confusion' out.txt | tr '\n' ' ')"
    fi
fi

# ------------------------------------------------------------ a name JSON must escape
odd=$'we"ird\\\tna\001me.csv'
awk 'BEGIN { for (r = 0; r < 6; r++) printf "%d,%.2f,%.2f\n", r % 2, r / 6, 1 - r / 6 }' > "$odd"
if trained small --data "$odd" --layers 2:softmax --epochs 1; then
    run "$AXON" eval --model small.safetensors --data "$odd" --json
    if [ "$rc" -ne 0 ]; then
        fail "an odd file name: exit $rc, $(head -c 300 err.txt)"
    elif ! grep -qF '"data":"we\"ird\\\tna\u0001me.csv"' out.txt; then
        fail "an odd file name: not escaped as JSON wants: $(cat out.txt)"
    elif has_python && ! "$PYTHON" -c 'import json, sys; sys.exit(json.load(open("out.txt"))["data"] != sys.argv[1])' "$odd"; then
        fail "an odd file name: Python's json does not give it back"
    else
        ok "an odd file name: escaped in eval --json, given back whole"
    fi
fi

# ------------------------------------------------------------ train --profile
# float64, batch 2 of 4 rows, 3 epochs: every operation of a layer ran 6
# times, the shuffle 3; the printed shares add up to 100 and the GEMMs'
# line is the GEMM rows' shares, to the printing's 0.05 per row.
printf '0,0.1,0.2\n1,0.9,0.8\n0,0.2,0.1\n1,0.8,0.9\n' > tiny.csv
run "$AXON" train --data tiny.csv --layers 3:tanh,2:softmax --epochs 3 --batch 2 --precision f64 --seed 1 --profile
if [ "$rc" -eq 0 ] && grep -qF "at this network's shapes with batch 2 (" out.txt &&
    awk '/^  operation /{ on = 1; next } /^  GEMMs:/ { on = 0; gemms = $2; sub(/%/, "", gemms) }
         on { n++; for (i = 1; i <= NF; i++) if ($i ~ /%$/) { share = $i; break }
              sub(/%/, "", share); total += share
              if ($0 ~ /GEMM/) gemm += share }
         END { exit !(n >= 10 && (total - 100) ^ 2 <= (0.05 * n) ^ 2 && (gemms - gemm) ^ 2 <= (0.05 * n + 0.05) ^ 2) }' out.txt &&
    awk '/^  layer [0-9]/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i + 1) ~ /^[0-9.]+$/ && $(i - 1) !~ /^layer$/) { if ($i != 6) bad = 1; break } }
         /^  shuffle / { if ($2 != 3) bad = 1; seen = 1 }
         END { exit bad || !seen }' out.txt; then
    ok "train --profile at f64: the calls are the steps, shares add to 100, the GEMMs line their sum"
else
    fail "train --profile at f64: exit $rc, $(sed -n '/^profile/,$p' out.txt | head -c 1500) $(head -c 300 err.txt)"
fi
# --profile-json alone with --quiet: no table; the batch larger than the
# data is the data's 4 rows; each layer's operation and the batch copy ran
# once per epoch, and one batch of every row is never shuffled.
run "$AXON" train --data tiny.csv --layers 3:tanh,2:softmax --epochs 2 --batch 100 --precision bf16 --seed 1 \
    --quiet --profile-json profile.json
if [ "$rc" -eq 0 ] && ! grep -q "^profile" out.txt && grep -qF '"batch":4,' profile.json &&
    grep -qF '{"name":"layer 1 forward GEMM","calls":2,' profile.json &&
    grep -qF '{"name":"batch copy","calls":2,' profile.json && ! grep -qF '"name":"shuffle"' profile.json; then
    ok "train --quiet --profile-json at bf16: no table, the batch capped at the rows, a call per epoch"
else
    fail "train --quiet --profile-json: exit $rc, $(head -c 400 profile.json) $(head -c 300 err.txt)"
fi

# ------------------------------------------------------------ command lines
expect() {
    local name=$1 status=$2 text=$3
    shift 4
    run "$@"
    local stream=err.txt
    [ "$status" -eq 0 ] && stream=out.txt
    if [ "$rc" -eq "$status" ] && grep -qxF -- "$text" "$stream"; then
        ok "$name"
    else
        fail "$name: exit $rc (expected $status), $(head -c 300 err.txt)"
    fi
}
args=() # each table line's words, by eval: the quotes of '' kept
while IFS='|' read -r command message; do
    eval "args=($command)"
    expect "${args[*]}" 2 "$message" -- "$AXON" "${args[@]}"
done <<'EOF'
eval|axon eval: --model is required (see axon eval --help)
eval --model small.safetensors|axon eval: give the data with --data (or --test), once (see axon eval --help)
eval --model small.safetensors --data x.csv --test x.csv|axon eval: give the data with --data (or --test), once (see axon eval --help)
eval --model '' --data x.csv|axon eval: --model: expected a value, got an empty string
eval --model small.safetensors --test ''|axon eval: --test: expected a value, got an empty string
eval --model small.safetensors --data x.csv --json=x|axon eval: --json: expected true or false, got 'x'
eval --model small.safetensors --data x.csv --precision f16|axon eval: --precision: expected one of f32, f64, bf16, got 'f16'
eval --model small.safetensors --data x.csv --device x|axon eval: --device: expected cpu, cuda, cuda:N, opencl, opencl:N (N a device number), got 'x'
eval --model small.safetensors --data x.csv --threads x|axon eval: --threads: expected an integer or 'auto', got 'x'
eval --model small.safetensors --data x.csv --views 11|axon eval: --views: expected an integer between 1 and 10, got 11
eval --model small.safetensors --data x.csv --views 10|axon eval: --views 10 takes crops of streamed batches: give --crop N with --data batches:DIR
predict --data x.csv|axon predict: --model is required (see axon predict --help)
predict --model small.safetensors|axon predict: --data is required (see axon predict --help)
predict --model '' --data x.csv|axon predict: --model: expected a value, got an empty string
predict --model small.safetensors --data ''|axon predict: --data: expected a value, got an empty string
predict --model small.safetensors --data x.csv --out ''|axon predict: --out: expected a value, got an empty string
predict --model small.safetensors --data x.csv --precision x|axon predict: --precision: expected one of f32, f64, bf16, got 'x'
predict --model small.safetensors --data x.csv --device x|axon predict: --device: expected cpu, cuda, cuda:N, opencl, opencl:N (N a device number), got 'x'
predict --model small.safetensors --data x.csv --no-labels=x|axon predict: --no-labels: expected true or false, got 'x'
predict --model small.safetensors --data x.csv --no-labels --labels l.npy|axon predict: --no-labels and --labels FILE do not go together: with a labels file every column of --data is a feature already
predict --model small.safetensors --data x.csv --mirror|axon predict: --stream on, --crop, --mirror, --lighting, --subtract-mean and --mean are for --data batches:DIR (axon prep's output)
export|axon export: --model is required (see axon export --help)
export --model small.safetensors|axon export: --onnx is required (see axon export --help)
export --model '' --onnx x.onnx|axon export: --model: expected a value, got an empty string
export --model small.safetensors --onnx ''|axon export: --onnx: expected a value, got an empty string
EOF
for command in eval predict export; do
    expect "$command --help" 0 "$(case $command in
        eval) echo "usage: axon eval --model FILE --data D [options]" ;;
        predict) echo "usage: axon predict --model FILE --data D [--out FILE.csv] [options]" ;;
        export) echo "usage: axon export --model FILE --onnx FILE.onnx" ;;
        esac)" -- "$AXON" "$command" --help
done

if [ "$failures" -gt 0 ]; then
    echo "cli_models: $failures check(s) failed"
    exit 1
fi
echo "cli_models: all checks passed"
