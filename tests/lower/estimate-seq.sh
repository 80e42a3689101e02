#!/bin/sh
# estimate-seq.sh BLKC EXAMPLES - the cost model counts a `seq` grid axis as
# the loop it is in each program, not as programs: matmul_acc.blk (K a seq
# axis) and matmul.blk (K a fori_loop) lower to the same PTX, so their
# estimates are the same, at two configs (the model once ranked matmul_acc's
# configs by 64x too many programs and chose another BK).
blkc="$1"; ex="$2"
for cfg in "-D BM=128 -D BN=128 -D BK=64" "-D BM=64 -D BN=64 -D BK=32"; do
	# shellcheck disable=SC2086
	a=$("$blkc" --estimate "$ex/matmul.blk" M=4096 N=4096 K=4096 -D T=bf16 $cfg |
		sed 's/"kernel": "[^"]*", //') || exit 1
	# shellcheck disable=SC2086
	b=$("$blkc" --estimate "$ex/matmul_acc.blk" M=4096 N=4096 K=4096 -D T=bf16 $cfg |
		sed 's/"kernel": "[^"]*", //') || exit 1
	if [ "$a" != "$b" ]; then
		printf 'FAIL at %s:\n  matmul.blk     %s\n  matmul_acc.blk %s\n' "$cfg" "$a" "$b"
		exit 1
	fi
	echo "the same estimate at $cfg: $a"
done
