/* bench_candidates.h - blk-bench's candidate configurations per dtype,
 * shared with blk-compile-time (which times compiling the same lists). */
#ifndef BLK_BENCH_CANDIDATES_H
#define BLK_BENCH_CANDIDATES_H

/* The candidates per dtype, ';' between configs.
 * f32 runs the SIMT dot: tiles of 64 or 128 rows and columns, K slabs of 16
 * or 32, 4 or 8 warps, led by 128x256 on 8 warps (8x16 micro-tiles, one
 * program an SM, slots 3 deep in 150 KB: the fastest at 4096^3 and 8192^3
 * on the H100, gpu-notes run 112) and the cp.async slabs 3 and 4 deep
 * (num_stages; 2, the examples' default, is the rest), in the pairs whose
 * per-thread micro-tile fits the registers without spilling (BM=BN=128
 * needs 8 warps: with 4, ptxas uses 255 registers).  Smaller tiles fill the 132 SMs at 1024³, where
 * BM=BN=128 gives 64 CTAs.  f16/bf16 (tensor cores) lead with BK=64 slabs
 * and 64x64 warp tiles (BM=256, 8 warps, one CTA per SM), the fastest at
 * 4096^3 and 8192^3 on the H200 (docs/gpu-notes.md, branch mma2), now with
 * num_stages cp.async staging buffers (branch mma3: 3 stages 159 KB of
 * shared memory and 170 registers, 4 stages 212 KB). */
static const char blk_bench_f32_candidates[] =
	"BM=128,BN=256,BK=32,num_warps=8,num_stages=3;BM=128,BN=256,BK=16,num_warps=8,num_stages=4;"
	"BM=128,BN=128,BK=32,num_warps=8,num_stages=3;BM=128,BN=128,BK=16,num_warps=8,num_stages=3;"
	"BM=64,BN=128,BK=16,num_warps=4,num_stages=3;BM=128,BN=128,BK=16,num_warps=8,num_stages=4;"
	"BM=128,BN=128,BK=16,num_warps=8;BM=128,BN=128,BK=32,num_warps=8;"
	"BM=64,BN=128,BK=16,num_warps=8;BM=128,BN=64,BK=16,num_warps=8;"
	"BM=64,BN=128,BK=32,num_warps=8;BM=128,BN=64,BK=32,num_warps=8;"
	"BM=64,BN=128,BK=16,num_warps=4;BM=64,BN=64,BK=16,num_warps=4;"
	"BM=64,BN=64,BK=32,num_warps=4;BM=64,BN=64,BK=16,num_warps=8;"
	"BM=128,BN=256,BK=16,num_warps=8;BM=256,BN=128,BK=16,num_warps=8;"
	"BM=128,BN=256,BK=32,num_warps=8";
/* f16 and bf16 alike: the tensor cores' */
static const char blk_bench_tc_candidates[] =
	"BM=256,BN=128,BK=64,num_warps=8,num_stages=3;BM=256,BN=128,BK=64,num_warps=8,num_stages=4;"
	"BM=128,BN=256,BK=64,num_warps=8,num_stages=3;BM=256,BN=128,BK=64,num_warps=8;"
	"BM=128,BN=128,BK=64,num_warps=8,num_stages=3;BM=128,BN=128,BK=64,num_warps=4,num_stages=3;"
	"BM=256,BN=128,BK=32,num_warps=8,num_stages=4;BM=256,BN=128,BK=64,num_warps=16,num_stages=3;"
	"BM=128,BN=128,BK=32,num_warps=8,num_stages=4;BM=128,BN=256,BK=32,num_warps=8,num_stages=4;"
	"BM=64,BN=128,BK=32,num_warps=8,num_stages=3;BM=128,BN=256,BK=64,num_warps=8,num_stages=4";

#endif
