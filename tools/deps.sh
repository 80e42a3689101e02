#!/usr/bin/env bash
# deps.sh - installs what building and testing blk needs on Debian 12, once.
# Skips the install when everything is already there, so it is cheap to
# call from every entry script.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in build-essential meson ninja-build re2c pkg-config libcmocka-dev \
	llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev zlib1g-dev libzstd-dev \
	python3-numpy python3-venv python3-pip; do
	have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "deps: installing ${need[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# The runtime is built against the CUDA driver API's headers (cuda.h,
# cudaTypedefs.h); the driver itself is loaded at run time.  Without the CUDA
# toolkit, take the headers from NVIDIA's CUDA runtime wheel on PyPI into
# .deps/cuda/include, where runtime/meson.build looks for them.
if [ ! -f /usr/local/cuda/include/cudaTypedefs.h ] && [ ! -f /usr/include/cudaTypedefs.h ] &&
	[ ! -f .deps/cuda/include/cudaTypedefs.h ]; then
	echo "deps: no CUDA toolkit; fetching the CUDA driver API headers from PyPI"
	if ! python3 -m pip --version >/dev/null 2>&1; then
		sudo=""
		[ "$(id -u)" -eq 0 ] || sudo="sudo"
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-pip unzip
	fi
	tmp=$(mktemp -d)
	python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" 'nvidia-cuda-runtime-cu12==12.9.79'
	mkdir -p .deps/cuda
	python3 - "$tmp" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith("nvidia/cuda_runtime/include/"):
            z.extract(name, sys.argv[1])
PY
	rm -rf .deps/cuda/include
	mv "$tmp/nvidia/cuda_runtime/include" .deps/cuda/include
	rm -rf "$tmp"
fi
