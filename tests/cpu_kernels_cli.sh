#!/usr/bin/env bash
# cpu_kernels_cli.sh: how the CPU backend's kernels are chosen, from the
# command line.
#   - AXON_CPU_KERNELS=generic (the path of a CPU without AVX-512) trains
#     the galaxy-like shapes of axon's own GEMM kernels (8 hidden units over
#     wide inputs, then 4 and 1) to the losses of the CPU's kernels within
#     float32 rounding, and makes bf16 emulated, as axon info says; any
#     other value than generic or auto is refused, naming it, exit 1, no
#     model written;
#   - with the pthread build of OpenBLAS loaded first (LD_PRELOAD, as NumPy
#     does in a Python process), libaxon runs its own copy of the OpenMP
#     build (src/backend/cpu/blas.c), says so in axon info, and trains to
#     the same bytes as without it (the same library file and kernels).
#     Skipped, said so, where the pthread build is not installed.
#
# usage: cpu_kernels_cli.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "cpu_kernels_cli: FAIL: $*" >&2; exit 1; }

# 200 inputs x 8 hidden units (skinny_gemm's shapes), then 4 (tiny_gemm's
# row kernel) and 1 (its weight-gradient kernel, an outer product)
# shellcheck disable=SC2054 # the commas are --layers's
run=(--data synth:linear --rows 3000 --features 200 --layers 8:tanh,4:tanh,1 --batch 512
     --lr 0.01 --epochs 4 --seed 7 --threads 2)

echo "AXON_CPU_KERNELS=generic trains to the CPU kernels' losses"
"$axon" train "${run[@]}" --out auto.safetensors > auto.log 2>&1 || { cat auto.log; fail "auto run failed"; }
AXON_CPU_KERNELS=generic "$axon" train "${run[@]}" --out generic.safetensors > generic.log 2>&1 ||
    { cat generic.log; fail "generic run failed"; }
loss_of() { sed -n 's/^final training loss \([0-9.eE+-]*\)$/\1/p' "$1"; }
auto_loss=$(loss_of auto.log) generic_loss=$(loss_of generic.log)
if [ -z "$auto_loss" ] || [ -z "$generic_loss" ]; then
    cat auto.log generic.log
    fail "no final training loss in the logs"
fi
# 4 epochs of float32 sums in other orders: far below 1e-4 of the loss
# (printed to 6 digits)
awk -v a="$auto_loss" -v g="$generic_loss" \
    'BEGIN { d = a - g; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(d <= 1e-4 * m) }' ||
    fail "losses differ: auto $auto_loss, generic $generic_loss"

echo "AXON_CPU_KERNELS=generic: bf16 emulated, and why"
AXON_CPU_KERNELS=generic "$axon" info > info_generic.txt || fail "axon info failed"
grep -qE "^  bf16 +emulated, as AXON_CPU_KERNELS=generic asks" info_generic.txt ||
    { cat info_generic.txt; fail "generic's bf16 emulation is not reported"; }

echo "other values are refused, naming them"
AXON_CPU_KERNELS=avx512 "$axon" train "${run[@]}" --out refused.safetensors > refused.log 2>&1
status=$?
[ "$status" -eq 1 ] || { cat refused.log; fail "AXON_CPU_KERNELS=avx512: exit $status, not 1"; }
grep -q "^axon: AXON_CPU_KERNELS='avx512' is not generic" refused.log || { cat refused.log; fail "no message"; }
[ ! -e refused.safetensors ] || fail "a model was written"

pthread=/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0
if ! "$axon" info | grep -q "blas  *OpenBLAS .*(OpenMP threads)"; then
    echo "SKIPPED: the own copy of the OpenMP OpenBLAS: this axon is not built on it"
    exit 77
fi
if [ ! -e "$pthread" ]; then
    echo "SKIPPED: the own copy of the OpenMP OpenBLAS: no pthread build at $pthread to load first"
    exit 77
fi
echo "the pthread OpenBLAS loaded first: axon runs its own OpenMP copy"
# In the sanitizer build AddressSanitizer's runtime must come first of all.
asan=$(ldd "$axon" | awk '/libasan\.so/ {print $3}')
preload="${asan:+$asan }$pthread"
LD_PRELOAD=$preload "$axon" info > info_preloaded.txt || fail "axon info failed"
grep -q "OpenMP threads; axon's own copy: another build was loaded first" info_preloaded.txt ||
    { cat info_preloaded.txt; fail "the own copy is not reported"; }
LD_PRELOAD=$preload "$axon" train "${run[@]}" --out preloaded.safetensors > preloaded.log 2>&1 ||
    { cat preloaded.log; fail "the run with the pthread build loaded first failed"; }
cmp -s auto.safetensors preloaded.safetensors || fail "the own copy trained other weights"
echo "cpu_kernels_cli: all passed"
