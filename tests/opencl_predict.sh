#!/bin/bash
# opencl_predict.sh: axon predict and axon eval with --device opencl (PoCL in
# CI) on a model trained on the CPU: the model moved to the device gives the
# CPU's figures in float64 (predictions to their printed digits; eval's
# loss, rmse, accuracy and confusion matrix lines equal), for a regression and a classifier; a device
# number past the list is refused (exit 1) naming the device and how many
# there are. Skipped (77), saying why, without an OpenCL device.
#
# usage: opencl_predict.sh AXON WORKDIR DATA.csv (a small labelled CSV)
set -u
axon=$1
work=$2
data=$3
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
case "$data" in /*) ;; *) data="$PWD/$data" ;; esac
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() { echo "opencl_predict: FAIL: $*" >&2; exit 1; }
if ! "$axon" info | grep -q '^  opencl:0 '; then
    echo "SKIPPED: no OpenCL device in axon info"
    exit 77
fi

# same_numbers A B: the same lines, numbers equal to the last printed digit
# (predict prints 6 to 9 significant digits: 2e-6 relative)
same_numbers() {
    [ "$(wc -l < "$1")" = "$(wc -l < "$2")" ] || return 1
    paste -d'|' "$1" "$2" | awk -F'|' '
        function abs(x) { return x < 0 ? -x : x }
        { n = split($1, a, ","); m = split($2, b, ",")
          if (n != m) { bad = 1; next }
          for (i = 1; i <= n; i++)
              if (a[i] != b[i] && !(a[i] + 0 == a[i] && abs(a[i] - b[i]) <= 2e-6 * (abs(a[i]) + 1e-12))) bad = 1 }
        END { exit bad }'
}

regression=(--data synth:linear --rows 300 --features 4 --seed 9)
"$axon" train --data synth:linear --rows 300 --features 4 --layers 6:tanh,1 --loss mse --epochs 2 --quiet \
    --seed 2 --out linear.safetensors > train1.log 2>&1 || { cat train1.log; fail "training the regression"; }
"$axon" train --data "$data" --layers 8:relu,3:softmax --epochs 5 --quiet --seed 2 \
    --out classes.safetensors > train2.log 2>&1 || { cat train2.log; fail "training the classifier"; }

for model in linear classes; do
    if [ "$model" = linear ]; then set -- "${regression[@]}"; else set -- --data "$data"; fi
    for device in cpu opencl; do
        "$axon" predict --model $model.safetensors "$@" --precision f64 --device $device \
            --out $model-$device.csv > predict.log 2>&1 || { cat predict.log; fail "$model: predict --device $device"; }
        "$axon" eval --model $model.safetensors "$@" --precision f64 --device $device \
            > $model-$device.eval 2>&1 || { cat $model-$device.eval; fail "$model: eval --device $device"; }
    done
    [ "$(wc -l < $model-cpu.csv)" -gt 10 ] || fail "$model: the CPU's predictions have $(wc -l < $model-cpu.csv) lines"
    same_numbers $model-cpu.csv $model-opencl.csv ||
        { paste -d' ' $model-cpu.csv $model-opencl.csv | head; fail "$model: OpenCL's predictions are not the CPU's"; }
    sed -n '/^loss/,$p' $model-cpu.eval > cpu.lines
    sed -n '/^loss/,$p' $model-opencl.eval > opencl.lines
    [ -s cpu.lines ] && cmp -s cpu.lines opencl.lines ||
        { cat $model-cpu.eval $model-opencl.eval; fail "$model: eval on OpenCL does not print the CPU's figures"; }
done
grep -q '^accuracy' classes-cpu.eval || { cat classes-cpu.eval; fail "the classifier's eval has no accuracy line"; }

"$axon" eval --model linear.safetensors "${regression[@]}" --device opencl:99 > out.txt 2> err.txt
status=$?
[ "$status" = 1 ] || { cat err.txt; fail "--device opencl:99: exit status $status, not 1"; }
grep -q -- "--device: no OpenCL device 99: this machine has" err.txt || { cat err.txt; fail "--device opencl:99: the message"; }
echo "opencl_predict: OK"
