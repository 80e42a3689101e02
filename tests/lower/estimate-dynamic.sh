#!/bin/sh
# estimate-dynamic.sh BLKC EXAMPLES - the cost model reads a dynamic size
# (`dynamic (M, N, K)`, compiled for its class) at the launch's own value:
# matmul_dynamic.blk at 4096^3 and 64x64 blocks is 4096 programs and 128
# trips (it was 1 and 1, and `auto` then chose 16x16x16 blocks).
blkc="$1"; ex="$2"
out=$("$blkc" --estimate "$ex/matmul_dynamic.blk" M=4096 N=4096 K=4096 -D T=bf16 -D BM=64 -D BN=64 -D BK=32) ||
	exit 1
case "$out" in
*'"programs": 4096,'*'"trips": 128,'*) ;;
*) echo "FAIL: $out"; exit 1 ;;
esac
err=$("$blkc" --emit=ptx "$ex/matmul_dynamic.blk" M=4096 N=4096 K=4096 -D T=bf16 -D BM=auto -D BN=auto \
	-D BK=auto 2>&1 >/dev/null) || { echo "$err"; exit 1; }
case "$err" in
*'auto chose BM=16,'*|*'BN=16,'*) echo "FAIL: $err"; exit 1 ;;
esac
echo "matmul_dynamic at 4096^3: $out"
echo "$err"
