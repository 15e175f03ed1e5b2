#!/bin/bash
# dev/gpu_run.sh [PART...]: the prepared checks and benchmarks for a lent GPU machine, in
# one call (../shared/gpu/README.md: build here into build-gpu, pack.sh, then run
# `bash .gpu/remote.sh bash dev/gpu_run.sh` there with `carry: [".gpu"]`).
# Logs go to $OUT (or ./gpu-out), one file per step; summary.txt holds the lines that
# matter. Every step has its own time limit, so a hung step costs its limit, not the call.
# Lessons of the H200 session (2026-11-27):
# - The device tool brings back only a few files from $OUT: write the logs elsewhere and tar
#   them into one file under $OUT (OUT=/tmp/g ... ; tar -C /tmp -czf "$OUT"/g.tgz g).
# - The bundle holds the tracked files as they were at pack time and unpacks over the
#   checkout's path: repack after every change, this script included.
# - `timeout` runs programs, not shell functions: give step commands, or arrays of words.
# - The machine is given back 30 s after a call ends; each fresh start costs about 30-60 s.
#   One call:
#     R=$PWD; mkdir -p /tmp/g; OUT=/tmp/g AXON_GALAXY_TAR=$R/.gpu/galaxy.tar.xz \
#       bash .gpu/remote.sh bash $R/dev/gpu_run.sh PARTS > /tmp/g/console.txt 2>&1;
#     tar -C /tmp -czf $OUT/g.tgz g
#   with the galaxy set packed beside the bundle: tar -C ../shared/data -cJf .gpu/galaxy.tar.xz galaxy
# PARTs (default: all, in this order): tests bench peers profile memcheck; or again (b1b, b1a,
# LeNet and galaxy CG only)
set -u
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
build=${AXON_GPU_BUILD:-build-gpu}
axon=$build/axon
# The galaxy set travels as a tarball (AXON_GALAXY_TAR) beside the bundle.
galaxy=${AXON_GALAXY:-/tmp/axon-galaxy/galaxy}
if [ ! -f "$galaxy/train.csv" ] && [ -f "${AXON_GALAXY_TAR:-}" ]; then
    mkdir -p /tmp/axon-galaxy && tar -C /tmp/axon-galaxy -xJf "$AXON_GALAXY_TAR"
fi
parts=${*:-tests bench peers profile memcheck}
summary=$out/summary.txt
export OMP_WAIT_POLICY=passive

say() { echo "$*" | tee -a "$summary"; }
# step NAME SECONDS COMMAND...: runs it with a limit, its output in NAME.txt
step() {
    local name=$1 limit=$2; shift 2
    local start=$(date +%s%N)
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
    say "$(printf '%-28s rc %3d  %4d.%03d s' "$name" "$rc" $((ms / 1000)) $((ms % 1000)))"
}
# The lines of axon bench's table that carry the figures.
figures() { grep -E "s/epoch|s/iteration|accuracy|GFLOP/s|share|upload|whole call|kernels" "$out/$1.txt" | sed "s/^/    $1: /" >> "$summary"; }

say "gpu_run.sh at $(git rev-parse --short HEAD 2>/dev/null) on $(hostname), $(date -u)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$out/nvidia-smi.txt" 2>&1
cat "$out/nvidia-smi.txt" >> "$summary"
$axon info > "$out/info.txt" 2>&1; grep -iE "cuda|opencl|backends" "$out/info.txt" | head -6 >> "$summary"

for part in $parts; do
case $part in
tests)
    step ctest_cuda 180 ctest --test-dir "$build" -R "cuda|bf16" --output-on-failure
    grep -E "tests passed|tests failed|Failed|Skipped|\*\*\*" "$out/ctest_cuda.txt" | head -12 >> "$summary"
    step backend_ops_cuda 120 "$build/tests/test_backend_ops" cuda
    grep -E "passed|FAILED|differ" "$out/backend_ops_cuda.txt" | head -20 >> "$summary"
    ;;
bench)
    # Device-resident data and deferred losses against the old paths, alternating.
    for round in 1 2; do
        step "b1a_r$round" 60 $axon bench b1a --device cuda --repeat 2; figures "b1a_r$round"
        AXON_DEVICE_DATA=off AXON_DEVICE_LOSS=off step "b1a_hostdata_r$round" 60 $axon bench b1a --device cuda --repeat 2
        figures "b1a_hostdata_r$round"
        step "b1b_r$round" 60 $axon bench b1b --device cuda --repeat 2; figures "b1b_r$round"
        AXON_DEVICE_DATA=off step "b1b_hostdata_r$round" 60 $axon bench b1b --device cuda --repeat 1
        figures "b1b_hostdata_r$round"
    done
    step b2_1024_f32 60 $axon bench b2 --device cuda --repeat 2; figures b2_1024_f32
    for p in f32 f64 bf16; do
        step "b2_8192_$p" 60 $axon bench b2 --device cuda --batch 8192 --precision $p --repeat 2
        figures "b2_8192_$p"
    done
    step b2_4096_w512_f32 60 $axon bench b2 --device cuda --batch 4096 --width 512 --repeat 2; figures b2_4096_w512_f32
    step b2_4096_w512_bf16 60 $axon bench b2 --device cuda --batch 4096 --width 512 --precision bf16 --repeat 2
    figures b2_4096_w512_bf16
    step lenet 90 $axon bench lenet --device cuda --repeat 1; figures lenet
    [ -f "$galaxy/train.csv" ] && { step galaxy_cg 60 $axon bench galaxy-cg --device cuda --galaxy "$galaxy" --repeat 2; figures galaxy_cg; }
    step entropy_mi 60 $axon bench entropy-mi --device cuda; tail -12 "$out/entropy_mi.txt" >> "$summary"
    step tensor_mean 60 $axon bench tensor-mean --device cuda; tail -6 "$out/tensor_mean.txt" >> "$summary"
    ;;
again)  # the workloads a change since the last full run touches: b1b's chunks, evaluation
    for round in 1 2; do
        step "b1b_r$round" 60 $axon bench b1b --device cuda --repeat 3; figures "b1b_r$round"
    done
    step b1a 60 $axon bench b1a --device cuda --repeat 3; figures b1a
    step lenet 90 $axon bench lenet --device cuda --repeat 1; figures lenet
    [ -f "$galaxy/train.csv" ] && { step galaxy_cg 60 $axon bench galaxy-cg --device cuda --galaxy "$galaxy" --repeat 3; figures galaxy_cg; }
    ;;
verify)  # b1b's epoch by the wall clock (400 epochs less 40), the statistics' staging on and off,
        # CG's batched reads on and off: what this session built after its last GPU call
    b1b_train=($axon train --data fashion-mnist --device cuda --batch full --lr 0.5 --momentum 0 --out /dev/null)
    for round in 1 2; do
        step "b1b_wall_40_r$round" 60 "${b1b_train[@]}" --epochs 40
        step "b1b_wall_400_r$round" 60 "${b1b_train[@]}" --epochs 400
        tail -4 "$out/b1b_wall_400_r$round.txt" >> "$summary"
        step "entropy_mi_staged_r$round" 60 $axon bench entropy-mi --device cuda
        tail -9 "$out/entropy_mi_staged_r$round.txt" | head -6 >> "$summary"
        AXON_CUDA_STAGING=off step "entropy_mi_pageable_r$round" 60 $axon bench entropy-mi --device cuda
        tail -9 "$out/entropy_mi_pageable_r$round.txt" | head -6 >> "$summary"
    done
    step tensor_mean_staged 60 $axon bench tensor-mean --device cuda; tail -7 "$out/tensor_mean_staged.txt" | head -2 >> "$summary"
    # CG's batched host reads (backend table's reduce) against one read per reduction
    if [ -f "$galaxy/train.csv" ]; then
        for round in 1 2; do
            step "galaxy_cg_batched_r$round" 60 $axon bench galaxy-cg --device cuda --galaxy "$galaxy" --repeat 2
            figures "galaxy_cg_batched_r$round"
            AXON_BATCHED_READS=off step "galaxy_cg_unbatched_r$round" 60 $axon bench galaxy-cg --device cuda \
                --galaxy "$galaxy" --repeat 2
            figures "galaxy_cg_unbatched_r$round"
        done
    fi
    ;;
peers)
    cd bench/peers || exit 2
    py="env -u OPENBLAS_CORETYPE python3"  # peers run on the machine's own BLAS choice
    step torch_b1a 90 $py b1_torch.py --device cuda --epochs 3 --threads 4
    step torch_b1b 90 $py b1_torch.py --device cuda --batch full --lr 0.5 --momentum 0 --epochs 40 --threads 4
    step torch_b2_1024 90 $py b2_torch.py --device cuda --threads 4
    step torch_b2_8192 90 $py b2_torch.py --device cuda --batch 8192 --epochs 2 --threads 4
    step torch_b2_8192_bf16 90 $py b2_torch.py --device cuda --batch 8192 --epochs 2 --precision bf16 --threads 4
    step torch_lenet 120 $py lenet_torch.py --device cuda --epochs 2 --threads 4
    cd - > /dev/null
    for f in torch_b1a torch_b1b torch_b2_1024 torch_b2_8192 torch_b2_8192_bf16 torch_lenet; do
        tail -3 "$out/$f.txt" | sed "s/^/    $f: /" >> "$summary"
    done
    ;;
profile)
    step profile_b1a 60 $axon train --data fashion-mnist --device cuda --epochs 2 --profile --out /dev/null
    sed -n '/^profile/,$p' "$out/profile_b1a.txt" | head -30 >> "$summary"
    step profile_b2_8192 90 $axon train --data synth:linear --rows 500000 --features 20 --device cuda \
        --layers 256:tanh,256:tanh,256:tanh,256:tanh,256:tanh,1:identity --loss mse --optimizer sgd \
        --lr 0.001 --momentum 0 --batch 8192 --epochs 2 --profile --out /dev/null
    sed -n '/^profile/,$p' "$out/profile_b2_8192.txt" | head -30 >> "$summary"
    step profile_b1b 60 $axon train --data fashion-mnist --device cuda --batch full --lr 0.5 --momentum 0 \
        --epochs 40 --profile --out /dev/null
    sed -n '/^profile/,$p' "$out/profile_b1b.txt" | head -30 >> "$summary"
    step profile_lenet 60 $axon train --data fashion-mnist --device cuda --lr 0.01 --epochs 1 --profile \
        --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax --out /dev/null
    sed -n '/^profile/,$p' "$out/profile_lenet.txt" | head -30 >> "$summary"
    ;;
cpu)    # issue 28 on this machine's CPU, another kind than the project's: LeNet in float32 and
        # bf16 against PyTorch 2.x on the CPU, alternating, default threads as a user runs them
    lscpu > "$out/lscpu.txt" 2>&1
    grep -E "Model name|^CPU\(s\)|Thread|Socket" "$out/lscpu.txt" >> "$summary"
    say "    flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    step cpu_peak 60 $axon info --peak; grep -iE "peak|GFLOP" "$out/cpu_peak.txt" | head -8 >> "$summary"
    for round in 1 2; do
        step "cpu_lenet_f32_r$round" 120 $axon bench lenet --quick --repeat 1 --threads "$(nproc)"; figures "cpu_lenet_f32_r$round"
        step "cpu_lenet_torch_r$round" 120 env -u OPENBLAS_CORETYPE python3 bench/peers/lenet_torch.py --epochs 1 --threads "$(nproc)"
        tail -3 "$out/cpu_lenet_torch_r$round.txt" | sed "s/^/    cpu_lenet_torch_r$round: /" >> "$summary"
        step "cpu_lenet_bf16_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16 --threads "$(nproc)"
        figures "cpu_lenet_bf16_r$round"
        if [ -x "${AXON_BEFORE:-}" ]; then  # an earlier build's CLI, for a before/after in one sitting
            step "cpu_lenet_f32_before_r$round" 120 "$AXON_BEFORE" bench lenet --quick --repeat 1 --threads "$(nproc)"
            figures "cpu_lenet_f32_before_r$round"
        fi
    done
    step cpu_lenet_f32_2ep 150 $axon bench lenet --repeat 1; figures cpu_lenet_f32_2ep
    step cpu_lenet_bf16_2ep 150 $axon bench lenet --repeat 1 --precision bf16; figures cpu_lenet_bf16_2ep
    ;;
interop)  # issue 29: a LeNet trained in axon (here, on the GPU), to PyTorch 2.x and to onnxruntime
    model=/tmp/axon-lenet.safetensors
    step interop_train 120 $axon train --data fashion-mnist --device cuda --optimizer adam --lr 1e-3 \
        --batch 128 --epochs 1 --seed 1 --out $model \
        --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax
    tail -2 "$out/interop_train.txt" >> "$summary"
    AXON_LIBRARY=$PWD/$build/libaxon.so.0.1.0 step interop 240 python3 bench/lenet_interop.py --model $model
    cat "$out/interop.txt" | tail -16 | sed "s/^/    interop: /" >> "$summary"
    ;;
covbf16)  # issue 32: the AVX512_BF16 kernel's coverage, where this CPU has the instruction
    if grep -q -w avx512_bf16 /proc/cpuinfo && [ -f .gpu/covbf16.tar.xz ]; then
        tar -C / -xJf .gpu/covbf16.tar.xz
        cov=${AXON_COVBF16_BUILD:-build-covbf16}
        find "$cov" -name '*.gcda' -delete
        step covbf16_gemm 120 "$cov/tests/test_bf16_gemm"
        step covbf16_convergence 120 "$cov/tests/test_bf16_convergence"
        tail -3 "$out/covbf16_gemm.txt" "$out/covbf16_convergence.txt" >> "$summary"
        find "$cov" -name '*.gcda' | tar -czf "$out/covbf16-gcda.tgz" -T - && say "    gcda: $(tar -tzf "$out/covbf16-gcda.tgz" | wc -l) files"
    else
        say "covbf16: skipped (no avx512_bf16 here, or no .gpu/covbf16.tar.xz)"
    fi
    ;;
cputests)  # the CPU's convolution and bf16 tests on this host's CPU (AVX512_BF16, AMX)
    step ctest_cpu_conv 240 ctest --test-dir "$build" -R "conv|bf16|onednn|weight_gradient" --output-on-failure
    grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest_cpu_conv.txt" | head -12 >> "$summary"
    # which oneDNN implementations a bf16 and a float32 LeNet epoch run (brg:avx512_core_amx?)
    lenet=(train --data fashion-mnist --epochs 1 --out /dev/null
           --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax)
    for p in bf16 f32; do
        ONEDNN_VERBOSE=1 step "onednn_verbose_$p" 60 $axon "${lenet[@]}" --precision $p
        grep -E "^(onednn|dnnl)_verbose,exec" "$out/onednn_verbose_$p.txt" | cut -d, -f4-7 | sort | uniq -c \
            | sort -rn | head -8 | sed "s/^/    onednn $p: /" >> "$summary"
    done
    ;;
cpubf16)  # bf16's convolution modes on this host's CPU: oneDNN's native bf16 primitives (weight
          # gradient included, when the CPU has AVX512_BF16/AMX) against float32 kernels on rounded
          # operands and against float32 itself, alternating, default threads
    for round in 1 2; do
        step "bf16_native_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16; figures "bf16_native_r$round"
        AXON_ONEDNN_BF16=rounded step "bf16_rounded_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16
        figures "bf16_rounded_r$round"
        step "f32_r$round" 120 $axon bench lenet --quick --repeat 1; figures "f32_r$round"
    done
    ;;
cpudirect)  # the direct single-channel convolutions (conv_one_channel.c) against oneDNN's for
            # LeNet's first layer (AXON_CONV_DIRECT=off), float32 and bf16, alternating; their test
    step ctest_conv_one_channel 120 ctest --test-dir "$build" -R "conv_one_channel|conv_weight_gradient" --output-on-failure
    grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest_conv_one_channel.txt" | head -6 >> "$summary"
    for round in 1 2 3; do
        for p in f32 bf16; do
            step "direct_${p}_r$round" 120 $axon bench lenet --quick --repeat 1 --precision $p; figures "direct_${p}_r$round"
            AXON_CONV_DIRECT=off step "onednn_${p}_r$round" 120 $axon bench lenet --quick --repeat 1 --precision $p
            figures "onednn_${p}_r$round"
        done
    done
    ;;
cpuamx)  # issue 28: the GEMMs on oneDNN's matmul in fixed blocks (onednn_matmul.c): bf16's (on a CPU with
        # AMX) against the emulation (AXON_BF16_KERNEL=emulated), float32's forward products against
        # the BLAS (AXON_ONEDNN_MATMUL=off), PyTorch 2.x beside, alternating; their tests; the
        # thread-count bits; where the epoch's time goes. OpenMP's waits as a user has them.
    unset OMP_WAIT_POLICY
    say "    $($axon info | grep -E '^  bf16')"
    step ctest_amx 240 ctest --test-dir "$build" -R "onednn_matmul|bf16_cli|bf16_gemm|thread" --output-on-failure
    grep -E "tests passed|tests failed|Failed|\*\*\*|kernel" "$out/ctest_amx.txt" | head -8 >> "$summary"
    [ -x "$build/amx_matmul" ] && { step amx_layouts 60 "$build/amx_matmul"; AMX_MATMUL_F32=1 step f32_layouts 60 "$build/amx_matmul"
        cat "$out/amx_layouts.txt" "$out/f32_layouts.txt" | sed "s/^/    /" >> "$summary"; }
    for round in 1 2 3; do
        step "amx_bf16_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16; figures "amx_bf16_r$round"
        AXON_BF16_KERNEL=emulated step "emu_bf16_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16
        figures "emu_bf16_r$round"
        step "f32_r$round" 120 $axon bench lenet --quick --repeat 1; figures "f32_r$round"
        AXON_ONEDNN_MATMUL=off step "blas_f32_r$round" 120 $axon bench lenet --quick --repeat 1; figures "blas_f32_r$round"
        step "torch_r$round" 120 env -u OPENBLAS_CORETYPE python3 bench/peers/lenet_torch.py --epochs 1 --threads "$(nproc)"
        tail -1 "$out/torch_r$round.txt" | sed "s/^/    torch_r$round: /" >> "$summary"
        for w in b2; do
            step "amx_${w}_r$round" 60 $axon bench $w --quick --repeat 1 --precision bf16; figures "amx_${w}_r$round"
            AXON_BF16_KERNEL=emulated step "emu_${w}_r$round" 60 $axon bench $w --quick --repeat 1 --precision bf16
            figures "emu_${w}_r$round"
            step "f32_${w}_r$round" 60 $axon bench $w --quick --repeat 1; figures "f32_${w}_r$round"
            AXON_ONEDNN_MATMUL=off step "blas_${w}_r$round" 60 $axon bench $w --quick --repeat 1; figures "blas_${w}_r$round"
        done
    done
    lenet=(train --data fashion-mnist --epochs 1 --seed 5 --lr 0.01 --momentum 0.9
           --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax)
    for p in bf16 f32; do
        step "bits_${p}_t16" 120 $axon "${lenet[@]}" --precision $p --threads 16 --out /tmp/bits_${p}_16.safetensors
        step "bits_${p}_t5" 120 $axon "${lenet[@]}" --precision $p --threads 5 --out /tmp/bits_${p}_5.safetensors
        say "    thread bits $p: LeNet 16 vs 5 threads $(cmp -s /tmp/bits_${p}_16.safetensors /tmp/bits_${p}_5.safetensors && echo identical || echo DIFFER)"
        step "profile_$p" 120 $axon "${lenet[@]}" --precision $p --profile --out /dev/null
        sed -n '/^profile/,$p' "$out/profile_$p.txt" | head -16 >> "$summary"
    done
    step amx_bf16_2ep 150 $axon bench lenet --repeat 1 --precision bf16; figures amx_bf16_2ep
    step f32_2ep 150 $axon bench lenet --repeat 1; figures f32_2ep
    ;;
amx)    # issue 28: bf16's weight gradient on AMX's tiles (conv_weight_amx.c) on this host's CPU: its
        # tests here, LeNet bf16 with the tiles against AXON_CONV_AMX=off (oneDNN's AMX primitive) and
        # float32, alternating, default threads, OpenMP's waits as a user has them; profile; bits
    unset OMP_WAIT_POLICY
    say "    flags: $(grep -o -w -E 'avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    # where a slice's time goes, and the entry per call against oneDNN's AMX primitive, where
    # built beside the bundle (dev/conv_weight_amx_phases.c; dev/conv_weight_gradient.sh with
    # AXON_BUILD=build-gpu CONV_WEIGHT_GRADIENT_BENCH=build-gpu/conv_wg_bench)
    [ -x "$build/amx_phases" ] && { step amx_phases 60 "$build/amx_phases"; sed "s/^/    /" "$out/amx_phases.txt" >> "$summary"; }
    [ -x "$build/conv_wg_bench" ] && { CONV_WG_BASE=AXON_CONV_AMX=off step conv_wg_amx 120 "$build/conv_wg_bench" 1,16 bf16
        grep -E "conv[0-9]" "$out/conv_wg_amx.txt" | sed "s/^/    /" >> "$summary"; }
    step test_amx 120 "$build/tests/test_conv_weight_amx"
    grep -E "conv_weight_amx|beyond|bits of|failed" "$out/test_amx.txt" | head -12 | sed "s/^/    /" >> "$summary"
    step ctest_amx 200 ctest --test-dir "$build" -j8 -R "conv|bf16|onednn|weight|thread|pool" -E cuda --output-on-failure
    grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest_amx.txt" | head -12 >> "$summary"
    for round in ${AMX_ROUNDS:-1 2 3}; do
        step "bf16_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16; figures "bf16_r$round"
        AXON_CONV_AMX=off step "bf16_noamx_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16
        figures "bf16_noamx_r$round"
        step "f32_r$round" 120 $axon bench lenet --quick --repeat 1; figures "f32_r$round"
    done
    lenet=(train --data fashion-mnist --epochs 1 --seed 5 --lr 0.01 --momentum 0.9
           --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax)
    for p in bf16 f32; do
        step profile_$p 120 $axon "${lenet[@]}" --precision $p --profile --out /dev/null
        sed -n '/^profile/,$p' "$out/profile_$p.txt" | head -22 >> "$summary"
    done
    step "bits_bf16_t16" 120 $axon "${lenet[@]}" --precision bf16 --threads 16 --out /tmp/bits_bf16_16.safetensors
    step "bits_bf16_t5" 120 $axon "${lenet[@]}" --precision bf16 --threads 5 --out /tmp/bits_bf16_5.safetensors
    say "    thread bits bf16: LeNet 16 vs 5 threads $(cmp -s /tmp/bits_bf16_16.safetensors /tmp/bits_bf16_5.safetensors && echo identical || echo DIFFER)"
    [ -n "${AMX_ACCURACY:-1}" ] && { step bf16_2ep 150 $axon bench lenet --repeat 1 --precision bf16; figures bf16_2ep; }
    ;;
cpu28)  # issue 28 on this host's CPU after the direct weight gradients (eighth session): the conv
        # tests here, LeNet float32 / bf16 (native, rounded) / float32 without the direct kernels /
        # PyTorch 2.x, alternating, default threads, OpenMP's waits as a user has them; profiles; bits
    unset OMP_WAIT_POLICY
    lscpu | grep -E "Model name|^CPU\(s\)" >> "$summary"
    say "    flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    step cpu_peak 60 $axon info --peak; grep -iE "peak|GFLOP|conv" "$out/cpu_peak.txt" | head -12 >> "$summary"
    step ctest_cpu28 200 ctest --test-dir "$build" -j8 -R "conv|bf16|onednn|weight|thread|pool" -E cuda --output-on-failure
    grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest_cpu28.txt" | head -12 >> "$summary"
    for round in 1 2 3; do
        step "f32_r$round" 120 $axon bench lenet --quick --repeat 1; figures "f32_r$round"
        step "bf16_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16; figures "bf16_r$round"
        AXON_ONEDNN_BF16=rounded step "bf16_rounded_r$round" 120 $axon bench lenet --quick --repeat 1 --precision bf16
        figures "bf16_rounded_r$round"
        AXON_CONV_DIRECT=off step "f32_nodirect_r$round" 120 $axon bench lenet --quick --repeat 1
        figures "f32_nodirect_r$round"
        step "torch_r$round" 120 env -u OPENBLAS_CORETYPE python3 bench/peers/lenet_torch.py --epochs 1 --threads "$(nproc)"
        tail -1 "$out/torch_r$round.txt" | sed "s/^/    torch_r$round: /" >> "$summary"
    done
    lenet=(train --data fashion-mnist --epochs 1 --seed 5 --lr 0.01 --momentum 0.9
           --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax)
    for p in f32 bf16; do
        step "profile_$p" 120 $axon "${lenet[@]}" --precision $p --profile --out /dev/null
        sed -n '/^profile/,$p' "$out/profile_$p.txt" | head -40 >> "$summary"
    done
    AXON_ONEDNN_BF16=rounded step profile_bf16_rounded 120 $axon "${lenet[@]}" --precision bf16 --profile --out /dev/null
    sed -n '/^profile/,$p' "$out/profile_bf16_rounded.txt" | head -40 >> "$summary"
    for p in f32 bf16; do
        step "bits_${p}_t16" 120 $axon "${lenet[@]}" --precision $p --threads 16 --out /tmp/bits_${p}_16.safetensors
        step "bits_${p}_t5" 120 $axon "${lenet[@]}" --precision $p --threads 5 --out /tmp/bits_${p}_5.safetensors
        say "    thread bits $p: LeNet 16 vs 5 threads $(cmp -s /tmp/bits_${p}_16.safetensors /tmp/bits_${p}_5.safetensors && echo identical || echo DIFFER)"
    done
    ONEDNN_VERBOSE=1 step onednn_verbose_bf16 60 $axon "${lenet[@]}" --precision bf16 --out /dev/null
    grep -E "^(onednn|dnnl)_verbose,exec" "$out/onednn_verbose_bf16.txt" | cut -d, -f4-7 | sort | uniq -c \
        | sort -rn | head -8 | sed "s/^/    onednn bf16: /" >> "$summary"
    step ctest_cuda 120 ctest --test-dir "$build" -R cuda --output-on-failure
    grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest_cuda.txt" | head -6 >> "$summary"
    ;;
cpuprofile)  # where a LeNet epoch's time goes on this host's CPU
    for p in f32 bf16; do
        step "cpu_profile_lenet_$p" 120 $axon train --data fashion-mnist --epochs 1 --precision $p --profile \
            --layers conv:32x5x5:relu,maxpool:2,conv:64x5x5:relu,maxpool:2,1024:relu,10:softmax --out /dev/null
        sed -n '/^profile/,$p' "$out/cpu_profile_lenet_$p.txt" | head -30 >> "$summary"
    done
    ;;
memcheck)
    step memcheck_ops 150 compute-sanitizer --tool memcheck --leak-check full "$build/tests/test_backend_ops" cuda
    tail -4 "$out/memcheck_ops.txt" >> "$summary"
    step memcheck_stats 60 compute-sanitizer --tool memcheck "$build/tests/test_cuda_stats" cuda
    tail -3 "$out/memcheck_stats.txt" >> "$summary"
    ;;
*)  say "unknown part $part" ;;
esac
done
say "done $(date -u)"
