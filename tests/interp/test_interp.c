/* test_interp.c - the interpreter on small kernels built with the builder. */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "kbuild.h"
#include "interp/interp.h"

/* Runs t's kernel on arrays of the given descs; prints errors on failure. */
static bool run(KB *t, int n, BlkArrayDesc *ad, void **data, FILE *out)
{
	bool ok = blk_interp_run(t->k, ad, data, n, out, t->d);
	if (!ok)
		fprintf(stderr, "%s", kb_errors(t));
	return ok;
}

static BlkArrayDesc desc1(BlkDType dt, int64_t n)
{
	return (BlkArrayDesc){ .dtype = dt, .rank = 1, .shape = { n }, .strides = { 1 } };
}

static BlkArrayDesc desc2(BlkDType dt, int64_t r, int64_t c)
{
	return (BlkArrayDesc){ .dtype = dt, .rank = 2, .shape = { r, c }, .strides = { c, 1 } };
}

/* z = exp(x) * 2 + x over blocks of 4, N = 10: the last block is partial. */
static void test_elementwise_edges(void **state)
{
	(void)state;
	KB t;
	const char *sizes[] = { "N" };
	const BlkSym *grid[] = { NULL };
	kb_init(&t, 1, sizes, 0, NULL, NULL);
	grid[0] = blk_sym_binary(t.a, BLK_SYM_CDIV, kb_v(&t, "N"), kb_c(&t, 4));
	t.k->grid_rank = 1;
	t.k->grid[0] = grid[0];
	const BlkSym *sh[] = { kb_v(&t, "N") }, *bl[] = { kb_c(&t, 4) };
	int im[] = { 0 };
	BlkValue *x = kb_param(&t, "x", BLK_ACCESS_IN, BLK_F32, 1, sh, bl, im, NULL);
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_F32, 1, sh, bl, im, NULL);
	BlkType ty = kb_tile(BLK_F32, 1, bl);
	BlkValue *xv = kb_load_all(&t, x);
	BlkValue *e = kb_op1(&t, BLK_OP_EXP, ty, xv);
	BlkValue *two = blk_build_const_float(&t.b, t.loc, ty, 2.0);
	BlkValue *r = kb_op2(&t, BLK_OP_ADD, ty, kb_op2(&t, BLK_OP_MUL, ty, e, two), xv);
	kb_store_all(&t, z, r);

	float xs[10], zs[12];
	for (int i = 0; i < 10; i++)
		xs[i] = (float)i * 0.1f;
	for (int i = 0; i < 12; i++)
		zs[i] = -7.0f; /* zs[10], zs[11] must stay: stores past N are dropped */
	BlkArrayDesc ad[] = { desc1(BLK_F32, 10), desc1(BLK_F32, 10) };
	void *data[] = { xs, zs };
	assert_true(run(&t, 2, ad, data, NULL));
	for (int i = 0; i < 10; i++)
		assert_float_equal(zs[i], expf(xs[i]) * 2.0f + xs[i], 0.0f);
	assert_float_equal(zs[10], -7.0f, 0.0f);
	assert_float_equal(zs[11], -7.0f, 0.0f);
	kb_free(&t);
}

/* Loads past the array give the fill; view of a view; ds. */
static void test_fill_and_views(void **state)
{
	(void)state;
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *sh[] = { kb_c(&t, 6) }, *bl[] = { kb_c(&t, 8) };
	BlkValue *x = kb_param(&t, "x", BLK_ACCESS_IN, BLK_I32, 1, sh, bl, NULL, NULL);
	const BlkSym *osh[] = { kb_c(&t, 8) };
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_I32, 1, osh, NULL, NULL, NULL);
	/* v = x.at[ds(2, 5)]; w = v.at[ds(1, 4)] -> elements 3..6 of x; 6 is past */
	BlkIndex ds5 = { BLK_INDEX_DS, kb_c(&t, 5), 0 }, ds4 = { BLK_INDEX_DS, kb_c(&t, 4), 0 };
	const BlkSym *d5[] = { kb_c(&t, 5) }, *d4[] = { kb_c(&t, 4) };
	BlkValue *o1[] = { x, kb_int(&t, 2) };
	BlkValue *v = blk_build1(&t.b, BLK_OP_VIEW, t.loc, blk_type_ref(BLK_I32, 1, d5, BLK_SPACE_GLOBAL), 2, o1);
	blk_op_set_index(t.a, v->def, "idx", 1, &ds5);
	BlkValue *o2[] = { v, kb_int(&t, 1) };
	BlkValue *w = blk_build1(&t.b, BLK_OP_VIEW, t.loc, blk_type_ref(BLK_I32, 1, d4, BLK_SPACE_GLOBAL), 2, o2);
	blk_op_set_index(t.a, w->def, "idx", 1, &ds4);
	BlkValue *l = kb_op1(&t, BLK_OP_LOAD, kb_tile(BLK_I32, 1, d4), w);
	blk_op_set_int(t.a, l->def, "fill", -1);
	/* z[ds(0, 4)] = l; z[ds(6, 4)] = l  (the second: 8, 9 past z, dropped) */
	for (int at = 0; at <= 6; at += 6) {
		BlkValue *so[] = { z, kb_int(&t, at), l };
		BlkOp *s = blk_build(&t.b, BLK_OP_STORE, t.loc, 3, so, 0, NULL, 0);
		blk_op_set_index(t.a, s, "idx", 1, &ds4);
	}
	int32_t xs[6] = { 10, 11, 12, 13, 14, 15 }, zs[10];
	for (int i = 0; i < 10; i++)
		zs[i] = 99;
	BlkArrayDesc ad[] = { desc1(BLK_I32, 6), desc1(BLK_I32, 8) };
	void *data[] = { xs, zs };
	assert_true(run(&t, 2, ad, data, NULL));
	int32_t want[10] = { 13, 14, 15, -1, 99, 99, 13, 14, 99, 99 };
	for (int i = 0; i < 10; i++)
		assert_int_equal(zs[i], want[i]);
	kb_free(&t);
}

/* z[r] = sum(x[r, :]) , m[r] = max(x[r, :]) with x broadcast from a row. */
static void test_broadcast_reduce(void **state)
{
	(void)state;
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *sh2[] = { kb_c(&t, 3), kb_c(&t, 4) }, *row[] = { kb_c(&t, 4) };
	const BlkSym *sh1[] = { kb_c(&t, 3) };
	BlkValue *x = kb_param(&t, "x", BLK_ACCESS_IN, BLK_F32, 1, row, NULL, NULL, NULL);
	BlkValue *s = kb_param(&t, "s", BLK_ACCESS_OUT, BLK_F32, 1, sh1, NULL, NULL, NULL);
	BlkValue *m = kb_param(&t, "m", BLK_ACCESS_OUT, BLK_F32, 1, sh1, NULL, NULL, NULL);
	BlkValue *xv = kb_load_all(&t, x);
	BlkValue *b = kb_op1(&t, BLK_OP_BROADCAST, kb_tile(BLK_F32, 2, sh2), xv);
	BlkValue *io = blk_build1(&t.b, BLK_OP_IOTA, t.loc, kb_tile(BLK_I32, 2, sh2), 0, NULL);
	blk_op_set_int(t.a, io->def, "axis", 0);
	BlkValue *iof = kb_op1(&t, BLK_OP_CAST, kb_tile(BLK_F32, 2, sh2), io);
	BlkValue *y = kb_op2(&t, BLK_OP_MUL, kb_tile(BLK_F32, 2, sh2), b, iof); /* y[r][c] = x[c]*r */
	BlkValue *sum = kb_op1(&t, BLK_OP_REDUCE_SUM, kb_tile(BLK_F32, 1, sh1), y);
	blk_op_set_int(t.a, sum->def, "axis", 1);
	BlkValue *mx = kb_op1(&t, BLK_OP_REDUCE_MAX, kb_tile(BLK_F32, 1, sh1), y);
	blk_op_set_int(t.a, mx->def, "axis", 1);
	kb_store_all(&t, s, sum);
	kb_store_all(&t, m, mx);
	float xs[4] = { 1, -2, 3, 0.5f }, ss[3], ms[3];
	BlkArrayDesc ad[] = { desc1(BLK_F32, 4), desc1(BLK_F32, 3), desc1(BLK_F32, 3) };
	void *data[] = { xs, ss, ms };
	assert_true(run(&t, 3, ad, data, NULL));
	for (int r = 0; r < 3; r++) {
		assert_float_equal(ss[r], 2.5f * (float)r, 0.0f);
		assert_float_equal(ms[r], r == 0 ? 0.0f : 3.0f * (float)r, 0.0f);
	}
	kb_free(&t);
}

/* c = dot(a, b) (+ acc when with_acc), whole arrays. */
static void run_dot(bool with_acc)
{
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *sa[] = { kb_c(&t, 3), kb_c(&t, 5) }, *sb[] = { kb_c(&t, 5), kb_c(&t, 2) };
	const BlkSym *sc[] = { kb_c(&t, 3), kb_c(&t, 2) };
	BlkValue *a = kb_param(&t, "a", BLK_ACCESS_IN, BLK_F16, 2, sa, NULL, NULL, NULL);
	BlkValue *b = kb_param(&t, "b", BLK_ACCESS_IN, BLK_F16, 2, sb, NULL, NULL, NULL);
	BlkValue *c = kb_param(&t, "c", BLK_ACCESS_INOUT, BLK_F32, 2, sc, NULL, NULL, NULL);
	BlkValue *o[] = { kb_load_all(&t, a), kb_load_all(&t, b), kb_load_all(&t, c) };
	BlkValue *r = blk_build1(&t.b, BLK_OP_DOT, t.loc, kb_tile(BLK_F32, 2, sc), with_acc ? 3 : 2, o);
	kb_store_all(&t, c, r);
	uint16_t as[15], bs[10];
	float af[15], bf[10], cs[6];
	for (int i = 0; i < 15; i++)
		af[i] = blk_f16_to_f32(as[i] = blk_f32_to_f16((float)(i % 7) * 0.37f - 1.0f));
	for (int i = 0; i < 10; i++)
		bf[i] = blk_f16_to_f32(bs[i] = blk_f32_to_f16((float)(i % 3) * 0.61f - 0.5f));
	for (int i = 0; i < 6; i++)
		cs[i] = (float)i;
	BlkArrayDesc ad[] = { desc2(BLK_F16, 3, 5), desc2(BLK_F16, 5, 2), desc2(BLK_F32, 3, 2) };
	void *data[] = { as, bs, cs };
	assert_true(run(&t, 3, ad, data, NULL));
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 2; j++) {
			float want = with_acc ? (float)(i * 2 + j) : 0.0f;
			for (int k = 0; k < 5; k++)
				want = fmaf(af[i * 5 + k], bf[k * 2 + j], want);
			assert_float_equal(cs[i * 2 + j], want, 0.0f);
		}
	}
	kb_free(&t);
}

static void test_dot(void **state)
{
	(void)state;
	run_dot(false);
	run_dot(true);
}

/* s = for i in [lo, hi) step st carrying (acc): acc + i; z[0] = s */
static int32_t run_for(int lo, int hi, int st, bool *ok)
{
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *sh[] = { kb_c(&t, 1) };
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_I32, 1, sh, NULL, NULL, NULL);
	BlkValue *o[] = { kb_int(&t, lo), kb_int(&t, hi), kb_int(&t, st), kb_int(&t, 100) };
	BlkType it = blk_type_scalar(BLK_I32);
	BlkOp *f = blk_build(&t.b, BLK_OP_FOR, t.loc, 4, o, 1, &it, 1);
	BlkValue *iv = blk_region_add_arg(t.a, f->regions[0], it, "i");
	BlkValue *acc = blk_region_add_arg(t.a, f->regions[0], it, "acc");
	BlkBuilder save = t.b;
	blk_builder_at_end(&t.b, t.a, f->regions[0]);
	BlkValue *n = kb_op2(&t, BLK_OP_ADD, it, acc, iv);
	blk_build(&t.b, BLK_OP_YIELD, t.loc, 1, &n, 0, NULL, 0);
	t.b = save;
	BlkValue *so[] = { z, kb_int(&t, 0), f->results[0] };
	BlkIndex sc = { BLK_INDEX_SCALAR, NULL, 0 };
	blk_op_set_index(t.a, blk_build(&t.b, BLK_OP_STORE, t.loc, 3, so, 0, NULL, 0), "idx", 1, &sc);
	int32_t zs[1] = { 0 };
	BlkArrayDesc ad[] = { desc1(BLK_I32, 1) };
	void *data[] = { zs };
	*ok = blk_interp_run(t.k, ad, data, 1, NULL, t.d);
	kb_free(&t);
	return zs[0];
}

static void test_for(void **state)
{
	(void)state;
	bool ok;
	assert_int_equal(run_for(0, 10, 1, &ok), 145);
	assert_true(ok);
	assert_int_equal(run_for(1, 10, 3, &ok), 112); /* 1 + 4 + 7 */
	assert_int_equal(run_for(5, 5, 1, &ok), 100);
	assert_int_equal(run_for(10, 0, -4, &ok), 118); /* 10 + 6 + 2 */
	run_for(0, 10, 0, &ok);
	assert_false(ok);
}

/* Grid (3) over blocks of 2; program 1 writes its block, `when pid == 1`;
 * every program atomic_adds its pid + 1 into total[0]; programs print. */
static void test_if_atomic_print(void **state)
{
	(void)state;
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	t.k->grid_rank = 1;
	t.k->grid[0] = kb_c(&t, 3);
	const BlkSym *sh[] = { kb_c(&t, 6) }, *bl[] = { kb_c(&t, 2) }, *one[] = { kb_c(&t, 1) };
	int im[] = { 0 };
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_I32, 1, sh, bl, im, NULL);
	BlkValue *tot = kb_param(&t, "total", BLK_ACCESS_INOUT, BLK_F32, 1, one, NULL, NULL, NULL);
	BlkValue *pid = kb_pid(&t, 0);
	BlkValue *c = kb_op2(&t, BLK_OP_EQ, blk_type_scalar(BLK_BOOL), pid, kb_int(&t, 1));
	BlkOp *w = blk_build(&t.b, BLK_OP_IF, t.loc, 1, &c, 0, NULL, 2);
	BlkBuilder save = t.b;
	blk_builder_at_end(&t.b, t.a, w->regions[0]);
	kb_store_all(&t, z, blk_build_const_int(&t.b, t.loc, kb_tile(BLK_I32, 1, bl), 7));
	t.b = save;
	BlkValue *pf = kb_op1(&t, BLK_OP_CAST, blk_type_scalar(BLK_F32), pid);
	BlkValue *p1 = kb_op2(&t, BLK_OP_ADD, blk_type_scalar(BLK_F32), pf,
	                      blk_build_const_float(&t.b, t.loc, blk_type_scalar(BLK_F32), 1.0));
	BlkValue *ao[] = { tot, p1 };
	blk_build(&t.b, BLK_OP_ATOMIC_ADD, t.loc, 2, ao, 0, NULL, 0);
	BlkValue *po[] = { pid, kb_load_all(&t, tot) };
	blk_op_set_string(t.a, blk_build(&t.b, BLK_OP_PRINT, t.loc, 2, po, 0, NULL, 0), "fmt", "pid, total:");
	int32_t zs[6] = { 0 };
	float ts[1] = { 0.5f };
	BlkArrayDesc ad[] = { desc1(BLK_I32, 6), desc1(BLK_F32, 1) };
	void *data[] = { zs, ts };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_true(run(&t, 2, ad, data, out));
	fclose(out);
	int32_t want[6] = { 0, 0, 7, 7, 0, 0 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(zs[i], want[i]);
	assert_float_equal(ts[0], 6.5f, 0.0f);
	assert_string_equal(buf, "program (0): pid, total: 0 [1.5]\n"
	                         "program (1): pid, total: 1 [3.5]\n"
	                         "program (2): pid, total: 2 [6.5]\n");
	free(buf);
	kb_free(&t);
}

/* grid (2, seq 3): each program sums x[i, k] over its seq axis k into a
 * scratch Ref, cleared at k == 0, written out at the last k.  Also reads
 * the scratch before clearing: poisoned (NaN). */
static void test_seq_scratch(void **state)
{
	(void)state;
	KB t;
	bool seq[] = { false, true };
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	t.k->grid_rank = 2;
	t.k->grid[0] = kb_c(&t, 2);
	t.k->grid[1] = kb_c(&t, 3);
	t.k->grid_seq[1] = seq[1];
	const BlkSym *sx[] = { kb_c(&t, 2), kb_c(&t, 3) }, *one[] = { kb_c(&t, 1) }, *sz[] = { kb_c(&t, 2) };
	int imx[] = { 0, 1 }, imz[] = { 0 };
	bool sq[] = { true, true };
	BlkValue *x = kb_param(&t, "x", BLK_ACCESS_IN, BLK_F32, 2, sx, NULL, imx, sq); /* rank-0 block */
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_F32, 1, sz, one, imz, NULL);
	BlkValue *first = kb_param(&t, "first", BLK_ACCESS_OUT, BLK_F32, 1, sz, one, imz, NULL);
	BlkValue *acc = kb_param(&t, "acc", BLK_ACCESS_SCRATCH, BLK_F32, 1, one, NULL, NULL, NULL);
	BlkType f1 = kb_tile(BLK_F32, 1, one);
	BlkValue *k = kb_pid(&t, 1);
	BlkValue *c0 = kb_op2(&t, BLK_OP_EQ, blk_type_scalar(BLK_BOOL), k, kb_int(&t, 0));
	BlkOp *w = blk_build(&t.b, BLK_OP_IF, t.loc, 1, &c0, 0, NULL, 1);
	BlkBuilder save = t.b;
	blk_builder_at_end(&t.b, t.a, w->regions[0]);
	kb_store_all(&t, first, kb_load_all(&t, acc));
	kb_store_all(&t, acc, blk_build_const_float(&t.b, t.loc, f1, 0.0));
	t.b = save;
	BlkValue *xv = kb_op1(&t, BLK_OP_BROADCAST, f1, kb_load_all(&t, x));
	kb_store_all(&t, acc, kb_op2(&t, BLK_OP_ADD, f1, kb_load_all(&t, acc), xv));
	BlkValue *cl = kb_op2(&t, BLK_OP_EQ, blk_type_scalar(BLK_BOOL), k, kb_int(&t, 2));
	w = blk_build(&t.b, BLK_OP_IF, t.loc, 1, &cl, 0, NULL, 1);
	blk_builder_at_end(&t.b, t.a, w->regions[0]);
	kb_store_all(&t, z, kb_load_all(&t, acc));
	t.b = save;
	float xs[6] = { 1, 2, 3, 10, 20, 30 }, zs[2] = { 0 }, fs[2] = { 0 };
	BlkArrayDesc ad[] = { desc2(BLK_F32, 2, 3), desc1(BLK_F32, 2), desc1(BLK_F32, 2) };
	void *data[] = { xs, zs, fs };
	assert_true(run(&t, 3, ad, data, NULL));
	assert_float_equal(zs[0], 6.0f, 0.0f);
	assert_float_equal(zs[1], 60.0f, 0.0f);
	assert_true(isnan(fs[0]) && isnan(fs[1]));
	kb_free(&t);
}

/* i32 floor division and remainder, division by zero; float -> i32 casts. */
static void test_int_semantics(void **state)
{
	(void)state;
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *n[] = { kb_c(&t, 6) };
	BlkValue *a = kb_param(&t, "a", BLK_ACCESS_IN, BLK_I32, 1, n, NULL, NULL, NULL);
	BlkValue *b = kb_param(&t, "b", BLK_ACCESS_IN, BLK_I32, 1, n, NULL, NULL, NULL);
	BlkValue *f = kb_param(&t, "f", BLK_ACCESS_IN, BLK_F32, 1, n, NULL, NULL, NULL);
	BlkValue *q = kb_param(&t, "q", BLK_ACCESS_OUT, BLK_I32, 1, n, NULL, NULL, NULL);
	BlkValue *r = kb_param(&t, "r", BLK_ACCESS_OUT, BLK_I32, 1, n, NULL, NULL, NULL);
	BlkValue *c = kb_param(&t, "c", BLK_ACCESS_OUT, BLK_I32, 1, n, NULL, NULL, NULL);
	BlkType it = kb_tile(BLK_I32, 1, n);
	BlkValue *av = kb_load_all(&t, a), *bv = kb_load_all(&t, b);
	kb_store_all(&t, q, kb_op2(&t, BLK_OP_FLOORDIV, it, av, bv));
	kb_store_all(&t, r, kb_op2(&t, BLK_OP_MOD, it, av, bv));
	kb_store_all(&t, c, kb_op1(&t, BLK_OP_CAST, it, kb_load_all(&t, f)));
	int32_t as[6] = { 7, -7, 7, -7, 5, INT32_MIN }, bs[6] = { 2, 2, -2, -2, 0, -1 };
	float fs[6] = { 2.9f, -2.9f, 3e9f, -3e9f, NAN, -0.5f };
	int32_t qs[6], rs[6], cs[6];
	BlkArrayDesc ad[6];
	for (int i = 0; i < 6; i++)
		ad[i] = desc1(i == 2 ? BLK_F32 : BLK_I32, 6);
	void *data[] = { as, bs, fs, qs, rs, cs };
	assert_true(run(&t, 6, ad, data, NULL));
	int32_t wq[] = { 3, -4, -4, 3, 0, INT32_MIN }, wr[] = { 1, 1, -1, -1, 0, 0 };
	int32_t wc[] = { 2, -2, INT32_MAX, INT32_MIN, 0, 0 };
	for (int i = 0; i < 6; i++) {
		assert_int_equal(qs[i], wq[i]);
		assert_int_equal(rs[i], wr[i]);
		assert_int_equal(cs[i], wc[i]);
	}
	kb_free(&t);
}

/* f16 arithmetic rounds after every op. */
static void test_f16_rounding(void **state)
{
	(void)state;
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *n[] = { kb_c(&t, 1) };
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_F16, 1, n, NULL, NULL, NULL);
	BlkType ht = kb_tile(BLK_F16, 1, n);
	/* 2048 + 1 = 2049 -> 2048 in f16; then + 1 again -> 2048 (not 2050) */
	BlkValue *x = blk_build_const_float(&t.b, t.loc, ht, 2048.0);
	BlkValue *one = blk_build_const_float(&t.b, t.loc, ht, 1.0);
	kb_store_all(&t, z, kb_op2(&t, BLK_OP_ADD, ht, kb_op2(&t, BLK_OP_ADD, ht, x, one), one));
	uint16_t zs[1];
	BlkArrayDesc ad[] = { desc1(BLK_F16, 1) };
	void *data[] = { zs };
	assert_true(run(&t, 1, ad, data, NULL));
	assert_float_equal(blk_f16_to_f32(zs[0]), 2048.0f, 0.0f);
	kb_free(&t);
}

/* A bad launch is refused before anything runs; so is a huge tile. */
static void test_refusals(void **state)
{
	(void)state;
	KB t;
	kb_init(&t, 0, NULL, 0, NULL, NULL);
	const BlkSym *n[] = { kb_c(&t, 4) }, *big[] = { kb_c(&t, 1 << 20), kb_c(&t, 1 << 20) };
	BlkValue *z = kb_param(&t, "z", BLK_ACCESS_OUT, BLK_F32, 1, n, NULL, NULL, NULL);
	BlkValue *h = blk_build_const_float(&t.b, t.loc, kb_tile(BLK_F32, 2, big), 1.0);
	(void)h;
	kb_store_all(&t, z, blk_build_const_float(&t.b, t.loc, kb_tile(BLK_F32, 1, n), 1.0));
	float zs[4] = { 0 };
	BlkArrayDesc bad[] = { desc1(BLK_F32, 5) };
	void *data[] = { zs };
	assert_false(blk_interp_run(t.k, bad, data, 1, NULL, t.d));
	assert_non_null(strstr(kb_errors(&t), "z has shape [5] but its dim 0 is 4"));
	BlkArrayDesc good[] = { desc1(BLK_F32, 4) };
	assert_false(blk_interp_run(t.k, good, data, 1, NULL, t.d));
	assert_non_null(strstr(kb_errors(&t), "too large"));
	assert_float_equal(zs[0], 0.0f, 0.0f);
	kb_free(&t);
}

/* matmul.blk by hand: per program a BM x BN block of c, a loop over K in
 * BK steps loading ds slices of the a and b blocks, dot with acc. */
static void build_matmul(KB *t, BlkDType dt, int64_t BM, int64_t BN, int64_t BK)
{
	const char *sizes[] = { "M", "K", "N" };
	kb_init(t, 3, sizes, 0, NULL, NULL);
	const BlkSym *M = kb_v(t, "M"), *K = kb_v(t, "K"), *N = kb_v(t, "N");
	const BlkSym *bm = kb_c(t, BM), *bn = kb_c(t, BN), *bk = kb_c(t, BK);
	t->k->grid_rank = 2;
	t->k->grid[0] = blk_sym_binary(t->a, BLK_SYM_CDIV, M, bm);
	t->k->grid[1] = blk_sym_binary(t->a, BLK_SYM_CDIV, N, bn);
	const BlkSym *sa[] = { M, K }, *ba[] = { bm, K }, *sb[] = { K, N }, *bb[] = { K, bn };
	const BlkSym *sc[] = { M, N }, *bc[] = { bm, bn };
	int ima[] = { 0, -1 }, imb[] = { -1, 1 }, imc[] = { 0, 1 };
	BlkValue *a = kb_param(t, "a", BLK_ACCESS_IN, dt, 2, sa, ba, ima, NULL);
	BlkValue *b = kb_param(t, "b", BLK_ACCESS_IN, dt, 2, sb, bb, imb, NULL);
	BlkValue *c = kb_param(t, "c", BLK_ACCESS_OUT, BLK_F32, 2, sc, bc, imc, NULL);
	BlkType it = blk_type_scalar(BLK_I32), acct = kb_tile(BLK_F32, 2, bc);
	BlkValue *kv = blk_build1(&t->b, BLK_OP_SIZE, t->loc, it, 0, NULL);
	blk_op_set_string(t->a, kv->def, "name", "K");
	BlkValue *nk = kb_op2(t, BLK_OP_FLOORDIV, it, kb_op2(t, BLK_OP_ADD, it, kv, kb_int(t, BK - 1)),
	                      kb_int(t, BK));
	BlkValue *o[] = { kb_int(t, 0), nk, kb_int(t, 1),
	                  blk_build_const_float(&t->b, t->loc, acct, 0.0) };
	BlkOp *f = blk_build(&t->b, BLK_OP_FOR, t->loc, 4, o, 1, &acct, 1);
	BlkValue *k = blk_region_add_arg(t->a, f->regions[0], it, "k");
	BlkValue *acc = blk_region_add_arg(t->a, f->regions[0], acct, "acc");
	BlkBuilder save = t->b;
	blk_builder_at_end(&t->b, t->a, f->regions[0]);
	BlkValue *start = kb_op2(t, BLK_OP_MUL, it, k, kb_int(t, BK));
	BlkIndex ia[] = { { BLK_INDEX_FULL, NULL, 0 }, { BLK_INDEX_DS, bk, 0 } };
	BlkIndex ib[] = { { BLK_INDEX_DS, bk, 0 }, { BLK_INDEX_FULL, NULL, 0 } };
	const BlkSym *dx[] = { bm, bk }, *dy[] = { bk, bn };
	BlkValue *la[] = { a, start }, *lb[] = { b, start };
	BlkValue *x = blk_build1(&t->b, BLK_OP_LOAD, t->loc, kb_tile(dt, 2, dx), 2, la);
	blk_op_set_index(t->a, x->def, "idx", 2, ia);
	BlkValue *y = blk_build1(&t->b, BLK_OP_LOAD, t->loc, kb_tile(dt, 2, dy), 2, lb);
	blk_op_set_index(t->a, y->def, "idx", 2, ib);
	BlkValue *dop[] = { x, y, acc };
	BlkValue *r = blk_build1(&t->b, BLK_OP_DOT, t->loc, acct, 3, dop);
	blk_build(&t->b, BLK_OP_YIELD, t->loc, 1, &r, 0, NULL, 0);
	t->b = save;
	kb_store_all(t, c, f->results[0]);
}

/* Runs the hand-built matmul at M x N x K; returns seconds; checks c. */
static double run_matmul(int64_t M, int64_t N, int64_t K, BlkDType dt)
{
	KB t;
	build_matmul(&t, dt, 64, 64, 32);
	size_t es = (size_t)blk_dtype_size(dt);
	unsigned char *a = malloc((size_t)(M * K) * es), *b = malloc((size_t)(K * N) * es);
	float *c = malloc((size_t)(M * N) * sizeof *c);
	double *af = malloc((size_t)(M * K) * sizeof *af), *bf = malloc((size_t)(K * N) * sizeof *bf);
	for (int64_t i = 0; i < M * K; i++) {
		float v = (float)((i * 7919) % 201 - 100) / 64.0f; /* exact in bf16 and f16 */
		af[i] = v;
		if (es == 2) {
			uint16_t h = dt == BLK_F16 ? blk_f32_to_f16(v) : blk_f32_to_bf16(v);
			memcpy(a + i * 2, &h, 2);
		} else {
			memcpy(a + i * 4, &v, 4);
		}
	}
	for (int64_t i = 0; i < K * N; i++) {
		float v = (float)((i * 104729) % 131 - 65) / 32.0f;
		bf[i] = v;
		if (es == 2) {
			uint16_t h = dt == BLK_F16 ? blk_f32_to_f16(v) : blk_f32_to_bf16(v);
			memcpy(b + i * 2, &h, 2);
		} else {
			memcpy(b + i * 4, &v, 4);
		}
	}
	for (int64_t i = 0; i < M * N; i++)
		c[i] = NAN;
	BlkArrayDesc ad[] = { desc2(dt, M, K), desc2(dt, K, N), desc2(BLK_F32, M, N) };
	void *data[] = { a, b, c };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_true(run(&t, 3, ad, data, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* small integers / 2^11: every product and partial sum is exact */
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double want = 0;
			for (int64_t k = 0; k < K; k++)
				want += af[i * K + k] * bf[k * N + j];
			assert_float_equal(c[i * N + j], want, 0.0);
		}
	free(a), free(b), free(c), free(af), free(bf);
	kb_free(&t);
	return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

static void test_matmul_builder(void **state)
{
	(void)state;
	run_matmul(130, 70, 33, BLK_F32);
	run_matmul(130, 70, 33, BLK_BF16);
	run_matmul(64, 64, 64, BLK_F16);
	const char *bench = getenv("BLK_INTERP_BENCH"); /* e.g. 256: time an n^3 f32 matmul */
	if (bench) {
		int64_t n = atoll(bench);
		printf("# interp matmul f32 %" PRId64 "^3: %.3f s\n", n, run_matmul(n, n, n, BLK_F32));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elementwise_edges),
		cmocka_unit_test(test_fill_and_views),
		cmocka_unit_test(test_broadcast_reduce),
		cmocka_unit_test(test_dot),
		cmocka_unit_test(test_for),
		cmocka_unit_test(test_if_atomic_print),
		cmocka_unit_test(test_seq_scratch),
		cmocka_unit_test(test_int_semantics),
		cmocka_unit_test(test_f16_rounding),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_matmul_builder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
