#!/bin/sh
# valgrind_axon.sh: the axon command under valgrind memcheck, for the shell
# tests that drive it: every memory error and every definite or possible leak
# exits 99 (tests/valgrind.supp silences only OpenMP's, OpenBLAS's and the
# dynamic loader's own). AXON_BINARY picks the binary (default build/axon).
#   bash tests/cli_errors.sh scripts/valgrind_axon.sh /tmp/cli_valgrind
# The variables axon would restart itself to set are set here: a restart
# through /proc/self/exe would start valgrind's tool, not axon.
here=$(cd "$(dirname "$0")/.." && pwd)
export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-1000}"
unset OPENBLAS_CORETYPE
exec valgrind -q --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite,possible --show-leak-kinds=definite,possible \
    --suppressions="$here/tests/valgrind.supp" "${AXON_BINARY:-$here/build/axon}" "$@"
