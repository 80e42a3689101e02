#!/bin/sh
# Lowers every example at block-multiple and ragged sizes, for f32, f16 and
# bf16, and assembles the PTX with ptxas for sm_80 and sm_90a.
# The bench's tensor-core config (BM=256, BN=128, BK=64, 8 warps: 64x64 warp
# tiles, ~240 registers) must also assemble without spills at 4096^3 (at
# ragged sizes the edge masks push sm_90a to 255 registers and 84 bytes of
# spills: assembled only, see docs/gpu-notes.md).
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
# the bench's f16/bf16 default: no spills at 4096^3; ragged assembles
nospill() {
	for arch in sm_80 sm_90a; do
		if ! "$dump" --emit=ptx --arch=$arch "$@" > "$tmp/k.ptx" ||
		   ! "$ptxas" -v -arch=$arch "$tmp/k.ptx" -o "$tmp/k.cubin" 2> "$tmp/err"; then
			echo "FAIL ($arch): $*"; cat "$tmp/err"; fail=1; continue
		fi
		if grep -Eq "[1-9][0-9]* bytes spill|[1-9][0-9]* bytes stack" "$tmp/err"; then
			echo "FAIL spills ($arch): $*"; cat "$tmp/err"; fail=1
		fi
	done
}
for T in f16 bf16; do
	nospill "$ex/matmul.blk" M=4096 N=4096 K=4096 -D T=$T -D BM=256 -D BN=128 -D BK=64 -D num_warps=8
	run "$ex/matmul.blk" M=300 N=200 K=77 -D T=$T -D BM=256 -D BN=128 -D BK=64 -D num_warps=8
done
exit $fail
