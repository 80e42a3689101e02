#!/bin/sh
# Lowers every example at block-multiple and ragged sizes, for f32, f16 and
# bf16, and assembles the PTX with ptxas for sm_80 and sm_90a (attention
# causal and not).
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
	for arch in ${archs:-sm_80 sm_90a}; do
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
	run "$ex/matmul_nt.blk" M=256 N=256 K=256 -D T=$T
	run "$ex/matmul_nt.blk" M=130 N=70 K=33 -D T=$T
	run "$ex/matmul_epilogue.blk" M=256 N=256 K=256 -D T=$T
	run "$ex/matmul_epilogue.blk" M=130 N=70 K=33 -D T=$T
	run "$ex/bmm.blk" Bt=4 M=256 N=256 K=256 -D T=$T
	run "$ex/bmm.blk" Bt=3 M=130 N=70 K=33 -D T=$T
	run "$ex/matmul_splitk.blk" M=256 N=256 K=1024 -D T=$T
	run "$ex/matmul_splitk.blk" M=130 N=70 K=333 -D T=$T -D S=3
	for c in false true; do
		run "$ex/attention.blk" BH=4 S=256 -D T=$T -D CAUSAL=$c
		run "$ex/attention.blk" BH=3 S=77 -D T=$T -D CAUSAL=$c
		run "$ex/attention.blk" BH=2 S=200 -D T=$T -D CAUSAL=$c -D D=128 -D BQ=32 -D BK=32  # fits sm_80
	done
	run "$ex/layernorm.blk" R=64 C=1024 -D T=$T
	run "$ex/layernorm.blk" R=13 C=77 -D T=$T -D BR=3
	run "$ex/rmsnorm.blk" R=64 C=1024 -D T=$T
	run "$ex/rmsnorm.blk" R=13 C=77 -D T=$T -D BR=3
	run "$ex/colsum.blk" R=256 C=128 -D T=$T
	run "$ex/colsum.blk" R=130 C=77 -D T=$T
	run "$ex/linear_recurrence.blk" R=256 S=1024 -D T=$T
	run "$ex/linear_recurrence.blk" R=13 S=333 -D T=$T -D BR=3 -D BT=8
done
# the bench's f16/bf16 default: no spills at 4096^3; ragged assembles
nospill() {
	for arch in ${archs:-sm_80 sm_90a}; do
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
# the bench's bf16 rows of the new examples (tools/bench.c): spill-free at
# the bench's shapes
mma3="-D T=bf16 -D BK=64 -D num_warps=8 -D num_stages=3"
nospill "$ex/matmul_nt.blk" M=4096 N=4096 K=4096 $mma3 -D BM=256 -D BN=128
nospill "$ex/matmul_epilogue.blk" M=4096 N=4096 K=4096 $mma3 -D BM=128 -D BN=128
nospill "$ex/bmm.blk" Bt=16 M=1024 N=1024 K=1024 $mma3 -D BM=256 -D BN=128
nospill "$ex/matmul_splitk.blk" M=1024 N=1024 K=16384 $mma3 -D BM=128 -D BN=128 -D S=8
for c in false true; do
	nospill "$ex/attention.blk" BH=32 S=4096 -D T=bf16 -D CAUSAL=$c -D D=64 -D BQ=128 -D BK=32 -D num_warps=8
	# assembles; not spill-free since tile.c broadcasts the statistics in
	# the mma layout instead of converting whole tiles: ptxas keeps it at
	# 128 registers and spills 24 bytes, and it runs 1.47x faster than the
	# spill-free build did (gpu-notes run 151)
	run "$ex/attention.blk" BH=32 S=4096 -D T=bf16 -D CAUSAL=$c -D D=128 -D BQ=64 -D BK=64 -D num_warps=8
done
# W8A8 (8-bit dots): the bench's wgmma config (sm_90a alone: the SIMT
# path would need 392 KB of shared memory; 168 registers and 16 bytes of
# spills, the f32 epilogue's scales: docs/gpu-notes.md, run 58); ragged u8
# (sm_80: the SIMT path)
archs=sm_90a
run "$ex/matmul_int8.blk" M=4096 N=4096 K=4096 -D BM=128 -D BN=256 -D BK=128 -D num_warps=8 -D num_stages=4
archs=
run "$ex/matmul_int8.blk" M=300 N=200 K=77 -D T=u8 -D OUT=bf16
# FP8: the same on wgmma's fp8 form, and ragged e5m2 (sm_80: SIMT in f32)
archs=sm_90a
run "$ex/matmul_fp8.blk" M=4096 N=4096 K=4096 -D BM=128 -D BN=256 -D BK=128 -D num_warps=8 -D num_stages=4
archs=
run "$ex/matmul_fp8.blk" M=300 N=200 K=77 -D T=f8e5m2 -D OUT=f32
exit $fail
