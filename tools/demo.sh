#!/usr/bin/env bash
# demo.sh - the flagship: builds blk and runs examples/matmul.blk, on the GPU
# when this machine has one (checked against the interpreter), otherwise in
# the CPU interpreter.  Extra arguments go to `blkc run`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null

sizes=(M=512 N=512 K=512)
out=build/demo
mkdir -p "$out"
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	echo "GPU found: running matmul on the GPU and checking it against the interpreter"
	exec build/tools/blkc run examples/matmul.blk "${sizes[@]}" --out-dir="$out" \
		-D BM=128 -D BN=128 -D BK=16 -D num_warps=8 "$@"
fi
echo "no GPU here: running matmul in the interpreter"
exec build/tools/blkc run --interpret examples/matmul.blk "${sizes[@]}" --out-dir="$out" "$@"
