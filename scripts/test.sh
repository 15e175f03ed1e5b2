#!/usr/bin/env bash
# test.sh: sets up, builds and runs the whole test suite twice: the release
# build, then a build with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
echo "== tests: release build"
ctest --test-dir build --output-on-failure -j 2

echo "== tests: AddressSanitizer + UndefinedBehaviorSanitizer build"
# Without the CUDA backend: the CUDA runtime's allocations and driver threads
# do not mix with AddressSanitizer (the release build above compiles and
# links it wherever nvcc is installed; its test skips without a GPU).
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DAXON_SANITIZE=ON -DAXON_CUDA=OFF >/dev/null
cmake --build build-sanitize -j "$(nproc)" 2>&1 | grep -E "error:|warning:" || true
# LeakSanitizer cannot follow OpenMP's thread pool teardown reliably; leaks are
# still reported for everything the library allocates itself.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j 2
