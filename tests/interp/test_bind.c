/* test_bind.c - blk_bind_sizes: binding and every error it reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kbuild.h"

/* matmul's params: a f32[M, K], b f32[K, N], c f32[M, N], s scratch, and
 * d f32[2 * N] (an expression dim, checked), e i32[3] (a constant dim). */
static void make(KB *t)
{
	const char *sizes[] = { "M", "K", "N" };
	kb_init(t, 3, sizes, 0, NULL, NULL);
	t->k->name = "matmul";
	const BlkSym *M = kb_v(t, "M"), *K = kb_v(t, "K"), *N = kb_v(t, "N");
	const BlkSym *sa[] = { M, K }, *sb[] = { K, N }, *sc[] = { M, N };
	const BlkSym *ss[] = { kb_c(t, 4) };
	const BlkSym *sd[] = { blk_sym_binary(t->a, BLK_SYM_MUL, kb_c(t, 2), N) };
	const BlkSym *se[] = { kb_c(t, 3) };
	kb_param(t, "a", BLK_ACCESS_IN, BLK_F32, 2, sa, NULL, NULL, NULL);
	kb_param(t, "b", BLK_ACCESS_IN, BLK_F32, 2, sb, NULL, NULL, NULL);
	kb_param(t, "c", BLK_ACCESS_OUT, BLK_F32, 2, sc, NULL, NULL, NULL);
	kb_param(t, "s", BLK_ACCESS_SCRATCH, BLK_F32, 1, ss, NULL, NULL, NULL);
	kb_param(t, "d", BLK_ACCESS_IN, BLK_F32, 1, sd, NULL, NULL, NULL);
	kb_param(t, "e", BLK_ACCESS_IN, BLK_I32, 1, se, NULL, NULL, NULL);
}

static BlkArrayDesc arr(BlkDType dt, int rank, int64_t d0, int64_t d1)
{
	BlkArrayDesc a = { .dtype = dt, .rank = rank, .shape = { d0, d1 } };
	a.strides[rank - 1] = 1;
	if (rank == 2)
		a.strides[0] = d1;
	return a;
}

static void good(BlkArrayDesc *ad)
{
	ad[0] = arr(BLK_F32, 2, 33, 34);
	ad[1] = arr(BLK_F32, 2, 34, 70);
	ad[2] = arr(BLK_F32, 2, 33, 70);
	ad[3] = arr(BLK_F32, 1, 140, 0);
	ad[4] = arr(BLK_I32, 1, 3, 0);
}

/* Binds with ad; returns the last error ("" if none). */
static const char *bind(KB *t, BlkArrayDesc *ad, int n, int64_t *v)
{
	if (blk_bind_sizes(t->k, ad, n, v, t->d))
		return "";
	const char *e = blk_diag_last_error(t->d);
	return e ? e : "(no message)";
}

static void test_bind_ok(void **state)
{
	(void)state;
	KB t;
	make(&t);
	BlkArrayDesc ad[5];
	int64_t v[3];
	good(ad);
	assert_string_equal(bind(&t, ad, 5, v), "");
	assert_int_equal(v[0], 33);
	assert_int_equal(v[1], 34);
	assert_int_equal(v[2], 70);
	kb_free(&t);
}

/* Changes one desc of a good launch and expects the message. */
static void expect_error(void (*change)(BlkArrayDesc *), int n, const char *msg)
{
	KB t;
	make(&t);
	BlkArrayDesc ad[5];
	int64_t v[3];
	good(ad);
	change(ad);
	assert_string_equal(bind(&t, ad, n, v), msg);
	kb_free(&t);
}

static void bad_repeat(BlkArrayDesc *ad) { ad[1].shape[0] = 33; }
static void bad_expr(BlkArrayDesc *ad) { ad[3].shape[0] = 141; }
static void bad_const(BlkArrayDesc *ad) { ad[4].shape[0] = 4; }
static void bad_dtype(BlkArrayDesc *ad) { ad[2].dtype = BLK_F16; }
static void bad_rank(BlkArrayDesc *ad) { ad[0] = arr(BLK_F32, 1, 33, 0); }
static void bad_negative(BlkArrayDesc *ad) { ad[0].shape[1] = -1; }
static void bad_huge(BlkArrayDesc *ad) { ad[0].shape[0] = (int64_t)1 << 31; ad[2].shape[0] = (int64_t)1 << 31; }
static void no_change(BlkArrayDesc *ad) { (void)ad; }

static void test_bind_errors(void **state)
{
	(void)state;
	expect_error(bad_repeat, 5, "launch of matmul: b has shape [33, 70] but its dim 0 is K = 34 (from a)");
	expect_error(bad_expr, 5, "launch of matmul: d has shape [141] but its dim 0 is 2 * N = 140");
	expect_error(bad_const, 5, "launch of matmul: e has shape [4] but its dim 0 is 3");
	expect_error(bad_dtype, 5, "launch of matmul: c has dtype f16 but the kernel expects f32");
	expect_error(bad_rank, 5, "launch of matmul: a has rank 1 but the kernel expects rank 2");
	expect_error(bad_negative, 5, "launch of matmul: a has a negative dim 1 (-1)");
	expect_error(bad_huge, 5, "launch of matmul: size M = 2147483648 (from a) does not fit in i32");
	expect_error(no_change, 4, "launch of matmul: expected 5 arrays, got 4");
}

/* Zero sizes bind (an empty array), but a block must have an element:
 * here the blocks are the whole arrays.  A grid extent must be >= 0. */
static void test_bind_empty(void **state)
{
	(void)state;
	KB t;
	make(&t);
	BlkArrayDesc ad[5];
	int64_t v[3];
	good(ad);
	ad[0].shape[0] = 0;
	ad[2].shape[0] = 0;
	assert_string_equal(bind(&t, ad, 5, v),
	                    "launch of matmul: block dim 0 of c is 0 (M) at these sizes; it must be at least 1");
	assert_int_equal(v[0], 0);
	good(ad);
	t.k->grid_rank = 2;
	t.k->grid[0] = kb_v(&t, "M");
	t.k->grid[1] = blk_sym_binary(t.a, BLK_SYM_SUB, kb_v(&t, "K"), kb_c(&t, 35));
	assert_string_equal(bind(&t, ad, 5, v),
	                    "launch of matmul: grid axis 1 is -1 (K - 35) at these sizes; it must be at least 0");
	kb_free(&t);
}

/* A size that is no dim by itself cannot be bound. */
static void test_bind_unbindable(void **state)
{
	(void)state;
	KB t;
	const char *sizes[] = { "N" };
	kb_init(&t, 1, sizes, 0, NULL, NULL);
	const BlkSym *sd[] = { blk_sym_binary(t.a, BLK_SYM_MUL, kb_c(&t, 2), kb_v(&t, "N")) };
	kb_param(&t, "d", BLK_ACCESS_IN, BLK_F32, 1, sd, NULL, NULL, NULL);
	BlkArrayDesc ad[] = { arr(BLK_F32, 1, 4, 0) };
	int64_t v[1];
	assert_string_equal(bind(&t, ad, 1, v),
	                    "launch of t: size N is no dim by itself of any array, so it cannot be bound");
	kb_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind_ok),
		cmocka_unit_test(test_bind_errors),
		cmocka_unit_test(test_bind_empty),
		cmocka_unit_test(test_bind_unbindable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
