#!/usr/bin/env bash
# apt_install.sh: installs the Debian packages named that are not installed
# yet (apt-get update first; sudo when not root). Used by setup.sh and
# bench/setup_peers.sh.
# Usage: bash scripts/apt_install.sh WHO PACKAGE...   (WHO prefixes the message)
set -euo pipefail
who=$1
shift
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "$who: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
