#!/bin/sh
# ptx-snapshot.sh BUILD OUT - what a build compiles for the GPU suites, kept
# for comparison with another build's (`diff -r OUT1 OUT2`): the PTX of every
# kernel that gpu-features and gpu-examples compile (their .key and .ptx,
# named by the compile key), and every launch and tensor map the runtime
# asks the driver for.  It needs no GPU: the suites run on the stand-in
# driver (tests/runtime/fake_cuda.c), whose results they report as failures;
# only the files count.
set -eu
build=$1 out=$2
rm -rf "$out"
mkdir -p "$out/ptx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in gpu-features gpu-examples; do
	BLK_LIBCUDA="$build/tests/runtime/libfakecuda.so" BLK_DUMP_DIR="$tmp/dump" \
	BLK_CACHE_DIR="$tmp/cache-$t" BLK_FAKE_LAUNCH_LOG="$out/launches-$t.log" \
		"$build/tests/gpu/$t" > /dev/null 2>&1 || true
done
for f in "$tmp"/dump/*.ptx; do
	b=${f%.ptx}
	cp "$f" "$b.key" "$out/ptx/"
done
echo "$(ls "$out/ptx" | grep -c '\.ptx$') kernels, $(cat "$out"/launches-*.log | grep -c '^launch') launches in $out"
