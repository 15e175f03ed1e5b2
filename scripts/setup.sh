#!/usr/bin/env bash
# setup.sh: installs what axon needs from Debian 12 and builds it into build/.
# Usage: bash scripts/setup.sh [extra cmake options]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config zlib1g-dev
          libopenblas-dev libopenblas0-openmp libblis-dev libblis4-openmp
          libarchive-dev libjpeg62-turbo-dev libpng-dev python-matplotlib-data
          libdnnl-dev # oneDNN 2.6: the CPU's float32 convolutions (AXON_ONEDNN, docs/notes/conv.md)
          dataset-fashion-mnist
          clang libclang-rt-14-dev libomp-dev valgrind
          libopenmpi-dev openmpi-bin
          gnuplot-nox
          ocl-icd-opencl-dev opencl-c-headers libclblast-dev # the OpenCL backend (plugin)
          pocl-opencl-icd clinfo # PoCL: the CPU as an OpenCL device, so CI runs the OpenCL tests
          python3-numpy python3-scipy  # the tests' float64 references (tests/*.py, *.sh)
          python3-sklearn python3-pytest python3-venv # python/: axon.sklearn, its tests, scripts/python_env.sh
          python3-pip python3-setuptools python3-wheel # pip install . (tests/pip_install.sh)
          python3-onnx # ONNX export's checker (python/tests/test_onnx.py, tests/onnx_cli.sh)
          python3-tqdm) # Net.train(verbose=True)'s bars (python/tests/test_progress.py)
bash scripts/apt_install.sh "axon setup" "${packages[@]}"

# The CUDA backend is built when nvcc is found (on PATH, in CUDACXX or at
# /usr/local/cuda/bin/nvcc; -DAXON_CUDA=OFF leaves it out, =ON requires it).
# Warnings stay warnings for a user's build (another compiler may see more);
# scripts/test.sh passes -DAXON_WERROR=ON, so CI fails on any.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DAXON_WERROR=OFF "$@" >/dev/null
bash scripts/build.sh build
echo "axon setup: built build/axon"
