#!/usr/bin/env bash
# bf16_cli.sh: --precision bf16 from the command line.
#   - the detection paths: axon info names the kernel bf16 GEMMs run on, and
#     why; AXON_BF16_KERNEL=emulated forces the "no AVX512_BF16" path, which
#     trains with a one-line note; =native on a CPU without the instructions
#     falls back to the emulation and says so;
#   - both kernels train the same network to losses within bf16's noise of
#     each other and of f32;
#   - models and checkpoints stay float32 on disk, and a bf16 run resumed
#     from its checkpoint ends byte-identical to the uninterrupted run (with
#     each kernel the CPU can run);
#   - CG and L-BFGS refuse bf16, naming the line search; CUDA refuses it.
#
# usage: bf16_cli.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "bf16_cli: FAIL: $*" >&2; exit 1; }
has_bf16=false
grep -qw avx512_bf16 /proc/cpuinfo && has_bf16=true

echo "axon info names the bf16 kernel and why"
"$axon" info > info.txt || fail "axon info failed"
if $has_bf16; then
    grep -qE "^  bf16 +(native: VDPBF16PS|native: oneDNN's bf16 matmul in fixed blocks, chosen as this CPU has AMX|native: axon's AMX tiles for products of 2\^20 multiply-adds or more, chosen as this CPU has AMX|emulated: this CPU has AVX512_BF16, but VDPBF16PS measured)" info.txt ||
        { cat info.txt; fail "axon info does not report the AVX512_BF16 this CPU has"; }
else
    grep -qE "^  bf16 +emulated: this CPU has no AVX512_BF16" info.txt ||
        { cat info.txt; fail "axon info does not say that this CPU lacks AVX512_BF16"; }
fi
AXON_BF16_KERNEL=emulated "$axon" info > info_emulated.txt || fail "axon info failed"
grep -qE "^  bf16 +emulated, as AXON_BF16_KERNEL asks" info_emulated.txt ||
    { cat info_emulated.txt; fail "AXON_BF16_KERNEL=emulated is not reported"; }
AXON_BF16_KERNEL=emulated "$axon" info --json | grep -q '"bf16":"emulated"' || fail "--json lacks bf16"
AXON_BF16_KERNEL=native "$axon" info > info_native.txt || fail "axon info failed"
if $has_bf16; then
    grep -qE "^  bf16 +native: VDPBF16PS" info_native.txt || { cat info_native.txt; fail "native not forced"; }
else
    grep -qE "^  bf16 +emulated: AXON_BF16_KERNEL=native, but this CPU has no AVX512_BF16" info_native.txt ||
        { cat info_native.txt; fail "native forced without the instructions is not refused"; }
fi

small=(--data synth:linear --rows 4000 --features 16 --layers 32:tanh,32:tanh,1 --batch 64 --lr 0.01
       --seed 4 --threads 2)

echo "the forced emulation trains, with a one-line note"
AXON_BF16_KERNEL=emulated "$axon" train "${small[@]}" --epochs 3 --precision bf16 \
    --out emulated.safetensors > emulated.log 2> emulated.err || { cat emulated.log emulated.err; fail "emulated bf16 run failed"; }
[ "$(grep -c "note: bf16 GEMMs emulated" emulated.err)" -eq 1 ] || { cat emulated.err; fail "no one-line note"; }
grep -q "bf16 (emulated bfloat16 GEMMs" emulated.log || { cat emulated.log; fail "the header does not say emulated bf16"; }

echo "f32 and each bf16 kernel reach the same loss within bf16's noise"
"$axon" train "${small[@]}" --epochs 3 --out f32.safetensors > f32.log 2>&1 || fail "f32 run failed"
kernels=(emulated)
if $has_bf16; then
    kernels+=(native)
    AXON_BF16_KERNEL=native "$axon" train "${small[@]}" --epochs 3 --precision bf16 \
        --out native.safetensors > native.log 2>&1 || { cat native.log; fail "native bf16 run failed"; }
fi
final_loss() { awk '/^final training loss/ {print $4}' "$1"; }
loss32=$(final_loss f32.log)
for k in "${kernels[@]}"; do
    loss=$(final_loss "$k.log")
    echo "  final training loss: f32 $loss32, bf16 $k $loss"
    awk -v a="$loss32" -v b="$loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 0.05 * a) }' ||
        fail "bf16 ($k) final loss $loss is not within 5 % of f32's $loss32"
done
if $has_bf16; then
    cmp -s native.safetensors emulated.safetensors && fail "the native and emulated runs are identical: was a kernel not used?"
fi

echo "models stay float32 on disk"
head -c 400 emulated.safetensors | grep -q '"dtype":"F32"' || fail "the bf16 model is not float32"
head -c 400 emulated.safetensors | grep -q '"F64"\|"BF16"' && fail "the bf16 model holds another dtype"

echo "a bf16 run resumed from its checkpoint ends byte-identical"
for k in "${kernels[@]}"; do
    AXON_BF16_KERNEL=$k "$axon" train "${small[@]}" --epochs 4 --precision bf16 --checkpoint-every 2 \
        --keep-checkpoints 0 --checkpoint "ck_$k" --out "whole_$k.safetensors" > "whole_$k.log" 2>&1 ||
        { cat "whole_$k.log"; fail "bf16 ($k) run with checkpoints failed"; }
    [ -f "ck_$k.epoch-000002.safetensors" ] || { ls; fail "no epoch-2 checkpoint"; }
    grep -qE 'precision[^a-z]{1,6}bf16' "ck_$k.epoch-000002.safetensors" || fail "the checkpoint does not record bf16"
    AXON_BF16_KERNEL=$k "$axon" train --data synth:linear --rows 4000 --features 16 \
        --resume "ck_$k.epoch-000002.safetensors" --out "resumed_$k.safetensors" > "resumed_$k.log" 2>&1 ||
        { cat "resumed_$k.log"; fail "the bf16 ($k) resume failed"; }
    cmp "whole_$k.safetensors" "resumed_$k.safetensors" || fail "bf16 ($k): the resumed run differs"
done

echo "CG and L-BFGS refuse bf16, naming the line search"
for optimizer in cg lbfgs; do
    "$axon" train "${small[@]}" --optimizer $optimizer --batch full --epochs 2 --precision bf16 \
        > refused.log 2> refused.err && fail "$optimizer accepted bf16"
    grep -q "$optimizer refuses bf16: its line search compares costs" refused.err || { cat refused.err; fail "no reason given"; }
done

echo "A device without bf16 GEMMs refuses bf16, naming it; CUDA runs it where there is a GPU"
if "$axon" train "${small[@]}" --epochs 1 --precision bf16 --device opencl > opencl.log 2> opencl.err; then
    fail "bf16 on OpenCL accepted"
fi
grep -Eiq "bf16 needs bfloat16 GEMMs, which OPENCL device 0 does not have|no OpenCL device|has no opencl backend" opencl.err ||
    { cat opencl.err; fail "no reason given for bf16 on OpenCL"; }
if ! "$axon" train "${small[@]}" --epochs 1 --precision bf16 --device cuda > cuda.log 2> cuda.err; then
    grep -Eiq "no CUDA device 0|has no cuda backend" cuda.err || { cat cuda.err; fail "bf16 on CUDA failed for another reason"; }
fi

echo "bf16_cli: all checks passed"
