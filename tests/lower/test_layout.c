/* test_layout.c - the layout choices of lower/layout.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "lower/layout.h"

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
		cmocka_unit_test(row_per_warp_and_slice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
