#!/usr/bin/env bash
# pack-gpu.sh - builds a release tree (build-gpu/) and copies what the GPU
# machine runs into carry/build/, stripped, keeping the relative layout the
# binaries' $ORIGIN run paths expect.  The device tool then carries `carry`
# and tools/gpu-run.sh runs it with BLK_BUILD=carry/build.  The Python
# package travels as source (python/, tracked) and loads the carried
# library, which exports the public API too:
#   BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python python3 python/tests/gpu_torch.py
# (libblk.so.0, the same objects with only the public API exported, is not
# carried: two copies of LLVM would not fit the carry's 64 MiB.)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build-gpu ] || meson setup build-gpu -Dbuildtype=release >/dev/null
ninja -C build-gpu >/dev/null
rm -rf carry && mkdir -p carry/build
for f in libblk-private.so tools/blkc tools/blk-bench tests/gpu/gpu-examples tests/gpu/gpu-features tests/fuzz/kernel-fuzz tests/runtime/test_runtime tests/runtime/libfakecuda.so examples/host/matmul-host tools/launch-cost tests/aot/aot-test tests/runtime/world-c; do
	mkdir -p "carry/build/$(dirname "$f")"
	strip -o "carry/build/$f" "build-gpu/$f"
done
# The device machine has no cmocka; the unit tests that also run there
# (tests/runtime, with its GPU tuner test) find it beside libblk.
cp -L "$(ldd build-gpu/tests/runtime/test_runtime | awk '/libcmocka/ {print $3}')" carry/build/
du -sh carry
