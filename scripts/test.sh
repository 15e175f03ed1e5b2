#!/usr/bin/env bash
# test.sh: checks the layering of src/ (scripts/check_layers.sh), then sets
# up, builds and runs the whole test suite twice: the release build, then a
# build with AddressSanitizer and UndefinedBehaviorSanitizer; between them it
# builds axon without the optional components, checks its command line
# (scripts/check_minimal_build.sh) and runs that build's suite; then a short
# run of each libFuzzer target (clang build, tests fuzz_*).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== layers: src/ includes downwards only, tools/axon only axon.h"
bash scripts/check_layers.sh

# Every build here treats a compiler warning as an error (-DAXON_WERROR=ON).
bash scripts/setup.sh -DAXON_WERROR=ON
echo "== tests: release build"
ctest --test-dir build --output-on-failure -j 2

echo "== minimal build: without prep, stats, MPI, CUDA and OpenCL: its CLI and its suite"
# libaxon's core needs none of the optional components (docs/design.md,
# "Optional components"): the build links no libarchive, libjpeg or libpng,
# axon info says what is left out, and axon prep refuses naming the option.
# Then the release suite of that build: the tests of a left-out component
# are not registered or skip (77), every other test must pass there too
# (docs/testing.md, "Every build configuration"). About 80 s of CPU time to
# build and 100 s to run, 5 minutes of wall time on 2 busy cores.
cmake -S . -B build-min -DCMAKE_BUILD_TYPE=Release -DAXON_PREP=OFF -DAXON_STATS=OFF -DAXON_TEST_PIP=OFF \
  -DAXON_ONEDNN=OFF \
  -DAXON_MPI=OFF -DAXON_CUDA=OFF -DAXON_OPENCL=OFF -DAXON_WERROR=ON >/dev/null
bash scripts/build.sh build-min
bash scripts/check_minimal_build.sh build-min/axon
ctest --test-dir build-min --output-on-failure -j 2

echo "== tests: AddressSanitizer + UndefinedBehaviorSanitizer build"
# Without the CUDA backend: the CUDA runtime's allocations and driver threads
# do not mix with AddressSanitizer (the release build above compiles and
# links it wherever nvcc is installed; its test skips without a GPU).
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DAXON_SANITIZE=ON -DAXON_CUDA=OFF \
  -DAXON_WERROR=ON >/dev/null
bash scripts/build.sh build-sanitize
# LeakSanitizer cannot follow OpenMP's thread pool teardown reliably; leaks are
# still reported for everything the library allocates itself. PoCL's own
# allocations while it compiles kernels are suppressed (tests/lsan.supp).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
  ctest --test-dir build-sanitize --output-on-failure -j 2

echo "== tests: libFuzzer targets (clang, ASan + UBSan, ${AXON_FUZZ_SECONDS:-20} s each)"
# Only the fuzzers and their library copy are built here (target "fuzz");
# docs/fuzzing.md says how to run them for longer.
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DAXON_FUZZ=ON -DAXON_CUDA=OFF -DAXON_WERROR=ON \
  -DCMAKE_BUILD_TYPE=Debug -DAXON_FUZZ_SECONDS="${AXON_FUZZ_SECONDS:-20}" >/dev/null
bash scripts/build.sh build-fuzz --target fuzz
ctest --test-dir build-fuzz -R fuzz_ --output-on-failure -j 2

echo "== tests: valgrind memcheck (the fast tests of the release build)"
# Every memcheck error and every leak fails (scripts/valgrind.sh; only the
# OpenMP and OpenBLAS thread pools' own allocations are suppressed). About
# 1.5 minutes with 2 cores. Left out, as too slow under valgrind: test_cg
# (over 20 min), test_stats and test_data_synth (1 to 2 min each),
# test_convergence; and test_backend_ops (the CUDA driver), test_mpi_replicas
# (Open MPI). `bash scripts/valgrind.sh` runs them all (docs/fuzzing.md).
bash scripts/valgrind.sh build test_json test_safetensors test_model_file test_data_npy test_dataset_wrap \
  test_data_csv test_data_idx test_torch_reference test_checkpoint test_keep_best test_chunked \
  test_memory_limits test_gradients test_prep test_loaded_batch test_conv_reference test_conv_backend \
  test_sparse test_pickle_python test_npy_header_refusals test_profile_entries \
  test_cpu_load_files test_prep_refusals
