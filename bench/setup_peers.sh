#!/usr/bin/env bash
# setup_peers.sh: installs the peers axon is measured against, from Debian 12:
# NumPy, SciPy, PyTorch and Pillow for Python 3 (bench/peers/*.py), and
# gnuplot for the plots. compare.sh, compare_stats.sh and b6.sh call it; it
# installs only what is missing.
set -euo pipefail
bash "$(dirname "$0")/../scripts/apt_install.sh" "axon peers" \
  python3-numpy python3-scipy python3-torch python3-pil gnuplot-nox
