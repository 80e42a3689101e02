#!/bin/sh
# Lowers every example at block-multiple and ragged sizes, for f32, f16 and
# bf16, and assembles the PTX with ptxas for sm_80 and sm_90a.
# Skips (77) where no ptxas is installed.
dump="$1"; ex="$2"
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
[ -x "$ptxas" ] || { echo "no ptxas: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
run() {
	for arch in sm_80 sm_90a; do
		if ! "$dump" --emit=ptx --arch=$arch "$@" > "$tmp/k.ptx"; then
			echo "FAIL lower ($arch): $*"; fail=1; continue
		fi
		if ! "$ptxas" -arch=$arch "$tmp/k.ptx" -o "$tmp/k.cubin" 2> "$tmp/err"; then
			echo "FAIL ptxas ($arch): $*"; cat "$tmp/err"; fail=1
		fi
	done
}
for T in f32 f16 bf16; do
	run "$ex/add.blk" N=4096 -D T=$T
	run "$ex/add.blk" N=1001 -D T=$T
	run "$ex/matmul.blk" M=256 N=256 K=256 -D T=$T
	run "$ex/matmul.blk" M=130 N=70 K=33 -D T=$T
	run "$ex/matmul.blk" M=4096 N=4096 K=4096 -D T=$T -D BM=128 -D BN=128 -D BK=16 -D num_warps=8
	run "$ex/matmul_acc.blk" M=256 N=128 K=64 -D T=$T
	run "$ex/matmul_acc.blk" M=130 N=70 K=33 -D T=$T
	run "$ex/softmax.blk" R=128 C=70 -D T=$T
	run "$ex/softmax.blk" R=13 C=1024 -D T=$T
done
exit $fail
