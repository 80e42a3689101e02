#!/usr/bin/env bash
# deps.sh - installs what building and testing blk needs on Debian 12, once.
# Skips the install when everything is already there, so it is cheap to
# call from every entry script.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in build-essential meson ninja-build re2c pkg-config libcmocka-dev \
	llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev zlib1g-dev libzstd-dev; do
	have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "deps: installing ${need[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if [ ! -f /usr/local/cuda/include/cuda.h ] && [ -z "${CUDA_HOME:-}" ]; then
	echo "deps: warning: the CUDA toolkit's headers (/usr/local/cuda/include/cuda.h) are missing;" >&2
	echo "deps: install the CUDA toolkit or set CUDA_HOME; the GPU runtime needs cuda.h to build." >&2
fi
