/* test_layout.c - the layout choices of ir/layout.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ir/layout.h"

/* [64, 32] f32 over 4 warps: a warp reads 4 rows of 128 contiguous bytes
 * as float4s (coalesced and vectorized), 4 registers per thread. */
static void blocked_64x32_f32(void **state)
{
	(void)state;
	int shape[2] = { 64, 32 };
	BlkLayout l = blk_layout_blocked(2, shape, BLK_F32, 128);
	assert_int_equal(l.spt[1], 4);
	assert_int_equal(l.spt[0], 1);
	assert_int_equal(l.thr[1], 8);
	assert_int_equal(l.thr[0], 16);
	assert_int_equal(blk_layout_nregs(&l), 16);
	assert_int_equal(blk_layout_owners(&l), 128);
	/* lane 1 starts 4 elements after lane 0 */
	assert_int_equal(blk_layout_coord(&l, 1, 0, 1), 4);
}

/* [4, 70]: padded to [4, 128]; 32 threads per row, 2 padding-lane
 * registers per row at most. */
static void padded_4x70(void **state)
{
	(void)state;
	int shape[2] = { 4, 70 };
	BlkLayout l = blk_layout_blocked(2, shape, BLK_F32, 128);
	assert_int_equal(l.pad[1], 128);
	assert_int_equal(l.pad[0], 4);
	assert_int_equal(l.thr[1], 32);
	assert_int_equal(l.thr[0], 4);
	assert_int_equal(blk_layout_nregs(&l), 4);
}

/* A tile smaller than the CTA leaves replicas. */
static void replicas(void **state)
{
	(void)state;
	int shape[1] = { 4 };
	BlkLayout l = blk_layout_blocked(1, shape, BLK_F32, 128);
	assert_int_equal(blk_layout_owners(&l), 1);
	assert_int_equal(blk_layout_nregs(&l), 4);
}

/* 128x128 with 256 threads: 16x16 threads, 8x8 each as 2x2 blocks of 4x4. */
static void dot_128x128(void **state)
{
	(void)state;
	int shape[2] = { 128, 128 };
	BlkLayout l = blk_layout_dot(shape, 256);
	assert_int_equal(l.spt[0], 4);
	assert_int_equal(l.spt[1], 4);
	assert_int_equal(l.thr[0], 16);
	assert_int_equal(l.thr[1], 16);
	assert_int_equal(blk_layout_nregs(&l), 64);
	/* register row 4 is the second 4x4 block: 64 rows further down */
	assert_int_equal(blk_layout_coord(&l, 0, 4, 0), 64);
	assert_int_equal(blk_layout_coord(&l, 0, 1, 3), 13);
}

/* The mma accumulator [128, 128] over 8 warps: a 4x2 warp grid (32x64
 * warp tiles); every thread's (row, col) is the m16n8 C fragment's. */
static int thread_index(const BlkLayout *l, int d, int tid)
{
	if (!l->lbits[d])
		return (tid >> l->tsh[d]) & (l->thr[d] - 1);
	return ((tid >> l->tsh[d]) & ((1 << l->lbits[d]) - 1)) |
	       ((tid >> l->hsh[d]) & ((l->thr[d] >> l->lbits[d]) - 1)) << l->lbits[d];
}

static void mma_128x128(void **state)
{
	(void)state;
	int shape[2] = { 128, 128 };
	assert_true(blk_layout_mma_fits(128, 128, 32, 256, 2));
	assert_false(blk_layout_mma_fits(128, 128, 24, 256, 2));
	BlkLayout l = blk_layout_mma(shape, 256);
	assert_true(l.mma && l.dot && blk_layout_split(&l));
	assert_int_equal(l.thr[0], 32);
	assert_int_equal(l.thr[1], 8);
	assert_int_equal(blk_layout_nregs(&l), 64);
	assert_int_equal(blk_layout_used_bits(&l), 255);
	for (int tid = 0; tid < 256; tid++) {
		int w = tid / 32, g = (tid % 32) / 4, t = tid % 4, wi = w / 2, wj = w % 2;
		for (int r = 0; r < 64; r++) {
			int rd[2];
			blk_layout_reg_split(&l, r, rd);
			int row = blk_layout_coord(&l, 0, rd[0], thread_index(&l, 0, tid));
			int col = blk_layout_coord(&l, 1, rd[1], thread_index(&l, 1, tid));
			/* m16 instance rd0/2, n8 block rd1/2 */
			assert_int_equal(row, (rd[0] / 2) * 64 + (rd[0] % 2) * 32 + 8 * wi + g);
			assert_int_equal(col, (rd[1] / 2) * 16 + 8 * wj + 2 * t + rd[1] % 2);
		}
	}
	/* 64x64 over 4 warps: 2x2 warps */
	int s64[2] = { 64, 64 };
	BlkLayout m = blk_layout_mma(s64, 128);
	assert_int_equal(m.thr[0], 16);
	assert_int_equal(m.thr[1], 8);
}

/* A transposing copy of an f32 [128, 16] slab over 256 threads: one
 * element a piece, a warp's lanes on 8 consecutive k (32 bytes) of 4
 * rows, so in a k-major slot with rows of 128 + 4 floats the 32 lanes
 * write 32 distinct banks: (4k + m) mod 32. */
static void copy_across_128x16(void **state)
{
	(void)state;
	int shape[2] = { 128, 16 };
	BlkLayout l = blk_layout_copy_across(2, shape, BLK_F32, 256);
	assert_int_equal(l.spt[1], 1);
	assert_int_equal(l.thr[1], 8);
	assert_int_equal(l.thr[0], 32);
	assert_int_equal(blk_layout_nregs(&l), 8);
	for (int r = 0; r < 8; r++) {
		int rd[2];
		unsigned banks = 0;
		blk_layout_reg_split(&l, r, rd);
		for (int lane = 0; lane < 32; lane++) {
			int m = blk_layout_coord(&l, 0, rd[0], thread_index(&l, 0, lane));
			int k = blk_layout_coord(&l, 1, rd[1], thread_index(&l, 1, lane));
			banks |= 1u << ((k * 132 + m) % 32);
		}
		assert_int_equal(banks, 0xffffffffu);
	}
	/* 16-bit: 16 lanes a row (still 32 bytes) */
	BlkLayout h = blk_layout_copy_across(2, shape, BLK_BF16, 256);
	assert_int_equal(h.thr[1], 16);
}

/* The wgmma accumulator [256, 128] over 8 warps (two warpgroups, two m64
 * blocks each): every thread's (row, col) is wgmma's D fragment -- warp w
 * of warpgroup g rows 64g + 16w + 8h + lane/4 of m64 block i (128 rows
 * apart), columns 8j + 2(lane%4) + c -- and its row slice keeps them. */
static void wgmma_256x128(void **state)
{
	(void)state;
	int shape[2] = { 256, 128 };
	assert_true(blk_layout_wgmma_fits(256, 128, 256));
	assert_false(blk_layout_wgmma_fits(96, 128, 256));  /* not whole m64 blocks */
	assert_false(blk_layout_wgmma_fits(128, 512, 256)); /* wider than one wgmma */
	assert_false(blk_layout_wgmma_fits(128, 128, 96));  /* not whole warpgroups */
	BlkLayout l = blk_layout_wgmma(shape, 256);
	assert_true(l.wg && l.dot && !l.mma);
	assert_int_equal(blk_layout_nregs(&l), 128);
	assert_int_equal(blk_layout_used_bits(&l), 255);
	for (int tid = 0; tid < 256; tid++) {
		int w = (tid / 32) % 4, g = tid / 128, lane = tid % 32;
		for (int r = 0; r < 128; r++) {
			int rd[2];
			blk_layout_reg_split(&l, r, rd);
			int row = blk_layout_coord(&l, 0, rd[0], thread_index(&l, 0, tid));
			int col = blk_layout_coord(&l, 1, rd[1], thread_index(&l, 1, tid));
			assert_int_equal(row, (rd[0] / 2) * 128 + 64 * g + 16 * w + 8 * (rd[0] % 2) + lane / 4);
			assert_int_equal(col, (rd[1] / 2) * 8 + 2 * (lane % 4) + rd[1] % 2);
		}
	}
	BlkLayout s = blk_layout_slice(&l, 1), e = blk_layout_expand(&s, 1);
	assert_int_equal(s.tlo[0], 3);
	assert_true(blk_layout_bcast_local(&e, &l)); /* a row vector broadcasts in place */
	char buf[128];
	blk_layout_format(buf, sizeof buf, &l);
	assert_string_equal(buf, "wgmma<warps=[8,1]>");
	blk_layout_format(buf, sizeof buf, &s);
	assert_string_equal(buf, "slice<spt=[2], thr=[64], tsh=[2], tlo=[3]>");
}

/* A SIMT dot's step operands over the 128x128 accumulator of 256
 * threads: A's column keeps the rows of each thread's micro-tile (its
 * column threads are replicas), B's row its columns; each prints with its
 * thread bits and is not the layout the accumulator collapses to plain. */
static void fma_operands_128x128(void **state)
{
	(void)state;
	int shape[2] = { 128, 128 };
	BlkLayout acc = blk_layout_dot(shape, 256);
	BlkLayout a = blk_layout_fma_operand(&acc, BLK_FRAG_A), b = blk_layout_fma_operand(&acc, BLK_FRAG_B);
	assert_int_equal(a.shape[0], 128);
	assert_int_equal(a.shape[1], 1);
	assert_int_equal(b.shape[0], 1);
	assert_int_equal(blk_layout_nregs(&a), 8);
	assert_int_equal(blk_layout_nregs(&b), 8);
	for (int tid = 0; tid < 256; tid++)
		for (int r = 0; r < 8; r++) {
			assert_int_equal(blk_layout_coord(&a, 0, r, thread_index(&a, 0, tid)),
			                 blk_layout_coord(&acc, 0, r, thread_index(&acc, 0, tid)));
			assert_int_equal(blk_layout_coord(&b, 1, r, thread_index(&b, 1, tid)),
			                 blk_layout_coord(&acc, 1, r, thread_index(&acc, 1, tid)));
		}
	BlkLayout plain = blk_layout_collapse(&acc, 1);
	assert_false(blk_layout_equal(&a, &plain));
	char buf[128];
	blk_layout_format(buf, sizeof buf, &a);
	assert_string_equal(buf, "fma_a<spt=[4,1], thr=[16,1], tsh=[4,0]>");
	blk_layout_format(buf, sizeof buf, &b);
	assert_string_equal(buf, "fma_b<spt=[1,4], thr=[1,16], tsh=[0,0]>");
}

/* Swizzled shared buffers: 128-byte rows in column blocks, the chunk of
 * row r at chunk ^ (r % 8); narrower rows a narrower swizzle. */
static void shared_swizzled(void **state)
{
	(void)state;
	int b[3] = { 3, 64, 256 }, a[3] = { 2, 128, 32 }, n[2] = { 16, 8 };
	BlkLayout lb = blk_layout_shared_swizzled(3, b, 2);
	assert_int_equal(lb.swz, 128);
	assert_int_equal(lb.sblk, 64 * 64);
	assert_int_equal(lb.sstride[0], 64 * 256);
	assert_int_equal(lb.sstride[1], 64);
	assert_int_equal(lb.sstride[2], 1);
	BlkLayout la = blk_layout_shared_swizzled(3, a, 2);
	assert_int_equal(la.swz, 64);
	assert_int_equal(la.sblk, 0);
	assert_int_equal(la.sstride[1], 32);
	BlkLayout ln = blk_layout_shared_swizzled(2, n, 2); /* 16-byte rows: none */
	assert_int_equal(ln.swz, 0);
	for (int r = 0; r < 16; r++)
		for (int j = 0; j < 8; j++) {
			assert_int_equal(blk_layout_swizzle(&lb, 128 * r + 16 * j + 2), 128 * r + 16 * (j ^ (r % 8)) + 2);
			if (j < 4) /* 64 bytes: two rows share a 128-byte line */
				assert_int_equal(blk_layout_swizzle(&la, 64 * r + 16 * j), 64 * r + 16 * (j ^ ((r / 2) % 4)));
		}
	char buf[128];
	blk_layout_format(buf, sizeof buf, &lb);
	assert_string_equal(buf, "shared<strides=[16384,64,1], swizzle=[128], cblock=[4096]>");
}

/* Softmax rows [4, 1024] over 4 warps: a row per warp (lanes capped at
 * 32 on the last dim), so a row reduction needs shuffles only; its slice
 * keeps the rows on the warp bits and the reduced lanes become replicas. */
static void row_per_warp_and_slice(void **state)
{
	(void)state;
	int shape[2] = { 4, 1024 };
	BlkLayout l = blk_layout_blocked(2, shape, BLK_F32, 128);
	assert_int_equal(l.thr[1], 32);
	assert_int_equal(l.thr[0], 4);
	assert_int_equal(l.tsh[1], 0);
	assert_int_equal(l.tsh[0], 5);
	BlkLayout s = blk_layout_slice(&l, 1);
	assert_int_equal(s.rank, 1);
	assert_int_equal(s.tsh[0], 5);
	assert_int_equal(blk_layout_used_bits(&s), 0x60);
	BlkLayout e = blk_layout_expand(&s, 1);
	assert_true(blk_layout_bcast_local(&e, &l));
	/* one row and 4 warps: threads left over widen the row to 128 */
	int one[2] = { 1, 1024 };
	BlkLayout w = blk_layout_blocked(2, one, BLK_F32, 128);
	assert_int_equal(w.thr[1], 128);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(blocked_64x32_f32),
		cmocka_unit_test(padded_4x70),
		cmocka_unit_test(replicas),
		cmocka_unit_test(dot_128x128),
		cmocka_unit_test(mma_128x128),
		cmocka_unit_test(copy_across_128x16),
		cmocka_unit_test(fma_operands_128x128),
		cmocka_unit_test(row_per_warp_and_slice),
		cmocka_unit_test(wgmma_256x128),
		cmocka_unit_test(shared_swizzled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
