# dev/blas_core.sh: sourced by the dev scripts that time axon's library
# against its peers: exports OPENBLAS_CORETYPE as the axon CLI sets it
# (tools/axon/blas_env.c: Cooperlake with AVX512_BF16, SkylakeX with
# AVX-512), so that a program linked to libaxon.a runs the BLAS kernels the
# CLI runs. Left as the caller has it on a CPU without AVX-512. OpenBLAS
# 0.3.21 takes recent Xeons for a Prescott when the variable is unset, and
# this project's machines preset Haswell: either runs a fraction of the rate.
if grep -qw avx512_bf16 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Cooperlake
elif grep -qw avx512f /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SkylakeX
fi
