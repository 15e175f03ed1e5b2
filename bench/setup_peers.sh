#!/usr/bin/env bash
# setup_peers.sh: installs the peers axon is measured against, from Debian 12:
# NumPy, SciPy, PyTorch and Pillow for Python 3 (bench/peers/*.py), and
# gnuplot for the plots. compare.sh, compare_stats.sh and b6.sh call it; it
# installs only what is missing.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
packages=(python3-numpy python3-scipy python3-torch python3-pil gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "axon peers: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
