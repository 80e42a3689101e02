/* test_ir.c - the IR core: dtype conversions, types, builder, attributes,
 * printing and parsing back, parse errors and verifier errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ---- helpers ----------------------------------------------------------- */

typedef struct T {
	BlkArena *a;
	BlkDiag *d;
	FILE *errf;
	char *errbuf;
	size_t errlen;
	BlkLoc loc;
} T;

static void t_init(T *t)
{
	memset(t, 0, sizeof *t);
	t->a = blk_arena_create();
	t->errf = open_memstream(&t->errbuf, &t->errlen);
	t->d = blk_diag_create(t->a, t->errf, 0);
}

static void t_free(T *t)
{
	fclose(t->errf);
	free(t->errbuf);
	blk_arena_destroy(t->a);
}

static const char *t_errors(T *t)
{
	fflush(t->errf);
	return t->errbuf ? t->errbuf : "";
}

static char *module_text(const BlkModule *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	blk_ir_print_module(f, m);
	fclose(f);
	return buf;
}

static const BlkSym *C(T *t, int64_t v)
{
	return blk_sym_const(t->a, v);
}

static const BlkSym *V(T *t, const char *n)
{
	return blk_sym_var(t->a, n);
}

static BlkType tile2(BlkDType dt, const BlkSym *a, const BlkSym *b)
{
	const BlkSym *d[2] = { a, b };
	return blk_type_tile(dt, 2, d);
}

static BlkType i32(void)
{
	return blk_type_scalar(BLK_I32);
}

/* An array param with a 2-d block and index map yielding (g[m0], g[m1]),
 * m < 0 meaning the constant 0; adds its body arg. */
static BlkValue *add_param(T *t, BlkKernel *k, const char *name, BlkAccess acc,
                           const BlkSym *s0, const BlkSym *s1, const BlkSym *b0,
                           const BlkSym *b1, int m0, int m1)
{
	BlkParam *p = &k->params[k->nparams++];
	p->name = name;
	p->access = acc;
	p->dtype = BLK_F32;
	p->rank = 2;
	p->shape[0] = s0, p->shape[1] = s1;
	p->block[0] = b0, p->block[1] = b1;
	if (acc != BLK_ACCESS_SCRATCH) {
		static const char *gn[] = { "i", "j", "k" };
		BlkValue *g[3], *y[2];
		p->index_map = blk_region_create(t->a);
		for (int i = 0; i < k->grid_rank; i++)
			g[i] = blk_region_add_arg(t->a, p->index_map, i32(), gn[i]);
		BlkBuilder b;
		blk_builder_at_end(&b, t->a, p->index_map);
		int m[2] = { m0, m1 };
		for (int d = 0; d < 2; d++)
			y[d] = m[d] >= 0 ? g[m[d]] : blk_build_const_int(&b, t->loc, i32(), 0);
		blk_build(&b, BLK_OP_YIELD, t->loc, 2, y, 0, NULL, 0);
	}
	const BlkSym *bd[2] = { b0, b1 };
	return blk_region_add_arg(t->a, k->body,
	                          blk_type_ref(BLK_F32, 2, bd,
	                                       acc == BLK_ACCESS_SCRATCH ? BLK_SPACE_SHARED
	                                                                 : BLK_SPACE_GLOBAL),
	                          name);
}

static BlkKernel *new_kernel(T *t, BlkModule *m, const char *name, int nsizes, int grid_rank)
{
	static const char *sizes[] = { "M", "N", "K" };
	BlkKernel *k = blk_kernel_add(m, name, t->loc);
	k->params = BLK_NEW_N(t->a, BlkParam, 4);
	k->nsizes = nsizes;
	k->sizes = sizes;
	k->grid_rank = grid_rank;
	k->num_warps = 4;
	k->num_stages = 2;
	k->ncparams = 2;
	k->cparams = BLK_NEW_N(t->a, BlkCParam, 2);
	k->cparams[0] = (BlkCParam){ .name = "T", .kind = BLK_CPARAM_DTYPE, .dtype = BLK_F32 };
	k->cparams[1] = (BlkCParam){ .name = "BM", .kind = BLK_CPARAM_INT, .i = 64 };
	return k;
}

/* examples/matmul.blk lowered by hand: the fori_loop is a `for` carrying
 * the accumulator; loads with ds indices; dot with acc; cast; store. */
static BlkModule *build_matmul(T *t)
{
	BlkModule *m = blk_module_create(t->a);
	BlkKernel *k = new_kernel(t, m, "matmul", 3, 2);
	const BlkSym *M = V(t, "M"), *N = V(t, "N"), *K = V(t, "K"), *c64 = C(t, 64);
	k->grid[0] = blk_sym_binary(t->a, BLK_SYM_CDIV, M, c64);
	k->grid[1] = blk_sym_binary(t->a, BLK_SYM_CDIV, N, c64);
	BlkValue *a = add_param(t, k, "a", BLK_ACCESS_IN, M, K, c64, K, 0, -1);
	BlkValue *b = add_param(t, k, "b", BLK_ACCESS_IN, K, N, K, c64, -1, 1);
	BlkValue *c = add_param(t, k, "c", BLK_ACCESS_OUT, M, N, c64, c64, 0, 1);
	BlkBuilder bb;
	blk_builder_at_end(&bb, t->a, k->body);
	BlkValue *zero = blk_build_const_float(&bb, t->loc, tile2(BLK_F32, c64, c64), 0.0);
	BlkValue *ksz = blk_build1(&bb, BLK_OP_SIZE, t->loc, i32(), 0, NULL);
	blk_op_set_string(t->a, ksz->def, "name", "K");
	BlkValue *c32 = blk_build_const_int(&bb, t->loc, i32(), 32);
	BlkValue *c0 = blk_build_const_int(&bb, t->loc, i32(), 0);
	BlkValue *c1 = blk_build_const_int(&bb, t->loc, i32(), 1);
	BlkValue *tmp[2] = { ksz, c32 };
	BlkValue *n = blk_build1(&bb, BLK_OP_ADD, t->loc, i32(), 2, tmp);
	BlkValue *fo[4] = { c0, n, c1, zero };
	BlkType accty = tile2(BLK_F32, c64, c64);
	BlkOp *loop = blk_build(&bb, BLK_OP_FOR, t->loc, 4, fo, 1, &accty, 1);
	blk_op_set_int(t->a, loop, "unroll", 0);
	loop->results[0]->name = "acc";
	BlkRegion *r = loop->regions[0];
	BlkValue *kv = blk_region_add_arg(t->a, r, i32(), "k");
	BlkValue *acc = blk_region_add_arg(t->a, r, accty, "acc");
	BlkBuilder lb;
	blk_builder_at_end(&lb, t->a, r);
	tmp[0] = kv;
	tmp[1] = c32;
	BlkValue *off = blk_build1(&lb, BLK_OP_MUL, t->loc, i32(), 2, tmp);
	BlkIndex ia[2] = { { BLK_INDEX_FULL, NULL, 0 }, { BLK_INDEX_DS, C(t, 32), 0 } };
	BlkValue *lo[2] = { a, off };
	BlkValue *x = blk_build1(&lb, BLK_OP_LOAD, t->loc, tile2(BLK_F32, c64, C(t, 32)), 2, lo);
	blk_op_set_index(t->a, x->def, "idx", 2, ia);
	blk_op_set_float(t->a, x->def, "fill", 0.0);
	x->name = "x";
	BlkIndex ib[2] = { { BLK_INDEX_DS, C(t, 32), 0 }, { BLK_INDEX_FULL, NULL, 0 } };
	lo[0] = b;
	BlkValue *y = blk_build1(&lb, BLK_OP_LOAD, t->loc, tile2(BLK_F32, C(t, 32), c64), 2, lo);
	blk_op_set_index(t->a, y->def, "idx", 2, ib);
	y->name = "x"; /* a clash: printed as %x.1 */
	BlkValue *dops[3] = { x, y, acc };
	BlkValue *sum = blk_build1(&lb, BLK_OP_DOT, t->loc, accty, 3, dops);
	blk_build(&lb, BLK_OP_YIELD, t->loc, 1, &sum, 0, NULL, 0);
	BlkValue *cast = blk_build1(&bb, BLK_OP_CAST, t->loc, tile2(BLK_F32, c64, c64), 1,
	                            &loop->results[0]);
	BlkValue *st[2] = { c, cast };
	blk_build(&bb, BLK_OP_STORE, t->loc, 2, st, 0, NULL, 0);
	return m;
}

/* examples/matmul_acc.blk: scratch, a seq grid axis, `if`. */
static BlkModule *build_matmul_acc(T *t)
{
	BlkModule *m = blk_module_create(t->a);
	BlkKernel *k = new_kernel(t, m, "matmul_acc", 3, 3);
	const BlkSym *M = V(t, "M"), *N = V(t, "N"), *K = V(t, "K"), *c64 = C(t, 64), *c32 = C(t, 32);
	k->grid[0] = blk_sym_binary(t->a, BLK_SYM_CDIV, M, c64);
	k->grid[1] = blk_sym_binary(t->a, BLK_SYM_CDIV, N, c64);
	k->grid[2] = blk_sym_binary(t->a, BLK_SYM_CDIV, K, c32);
	k->grid_seq[2] = true;
	BlkValue *a = add_param(t, k, "a", BLK_ACCESS_IN, M, K, c64, c32, 0, 2);
	BlkValue *b = add_param(t, k, "b", BLK_ACCESS_IN, K, N, c32, c64, 2, 1);
	add_param(t, k, "c", BLK_ACCESS_OUT, M, N, c64, c64, 0, 1);
	BlkValue *acc = add_param(t, k, "acc", BLK_ACCESS_SCRATCH, c64, c64, c64, c64, 0, 0);
	BlkBuilder bb;
	blk_builder_at_end(&bb, t->a, k->body);
	BlkValue *pid = blk_build1(&bb, BLK_OP_PROGRAM_ID, t->loc, i32(), 0, NULL);
	blk_op_set_int(t->a, pid->def, "axis", 2);
	pid->name = "k";
	BlkValue *z = blk_build_const_int(&bb, t->loc, i32(), 0);
	BlkValue *o[3] = { pid, z };
	BlkValue *first = blk_build1(&bb, BLK_OP_EQ, t->loc, blk_type_scalar(BLK_BOOL), 2, o);
	BlkOp *iff = blk_build(&bb, BLK_OP_IF, t->loc, 1, &first, 0, NULL, 2);
	BlkBuilder ib;
	blk_builder_at_end(&ib, t->a, iff->regions[0]);
	BlkType tt = tile2(BLK_F32, c64, c64);
	o[0] = acc;
	o[1] = blk_build_const_float(&ib, t->loc, tt, -0.0);
	blk_build(&ib, BLK_OP_STORE, t->loc, 2, o, 0, NULL, 0);
	BlkValue *va = blk_build1(&bb, BLK_OP_LOAD, t->loc, tile2(BLK_F32, c64, c32), 1, &a);
	BlkValue *vb = blk_build1(&bb, BLK_OP_LOAD, t->loc, tile2(BLK_F32, c32, c64), 1, &b);
	BlkValue *vacc = blk_build1(&bb, BLK_OP_LOAD, t->loc, tt, 1, &acc);
	o[0] = va, o[1] = vb, o[2] = vacc;
	BlkValue *s = blk_build1(&bb, BLK_OP_DOT, t->loc, tt, 3, o);
	o[0] = acc, o[1] = s;
	blk_build(&bb, BLK_OP_STORE, t->loc, 2, o, 0, NULL, 0);
	BlkOp *pr = blk_build(&bb, BLK_OP_PRINT, t->loc, 1, &pid, 0, NULL, 0);
	blk_op_set_string(t->a, pr, "fmt", "k = \"%d\"\n\t\x01");
	blk_op_set_string(t->a, iff, "note", "any string attr");
	return m;
}

static void roundtrip(T *t, BlkModule *m)
{
	assert_true(blk_ir_verify(m, t->d, "build"));
	char *s1 = module_text(m);
	BlkSource *src = blk_source_from_string(t->a, "rt.ir", s1, strlen(s1));
	BlkModule *m2 = blk_ir_parse(t->a, t->d, src);
	if (!m2)
		fprintf(stderr, "%s\n%s", s1, t_errors(t));
	assert_non_null(m2);
	assert_true(blk_ir_verify(m2, t->d, "parse"));
	char *s2 = module_text(m2);
	assert_string_equal(s1, s2);
	free(s1);
	free(s2);
}

/* ---- dtype conversions ------------------------------------------------- */

/* Reference rounding by another method: the nearest of the sorted
 * non-negative codes, compared in double (2x vs lo+hi is exact); the
 * code just past the largest finite value stands for the overflow bound. */
static uint16_t ref_round(float f, const double *val, int ncodes, uint16_t qnan)
{
	if (isnan(f))
		return qnan;
	uint16_t sign = signbit(f) ? 0x8000 : 0;
	double x = fabs((double)f);
	int lo = 0, hi = ncodes - 1; /* largest code with val <= x */
	if (x >= val[hi])
		return sign | (uint16_t)hi;
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (val[mid] <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (val[lo] == x)
		return sign | (uint16_t)lo;
	double twice = 2 * x, mid = val[lo] + val[lo + 1];
	int c = twice < mid ? lo : twice > mid ? lo + 1 : (lo & 1 ? lo + 1 : lo);
	return sign | (uint16_t)c;
}

static uint32_t rng_state = 12345;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

static float random_float(int i)
{
	uint32_t x = rng();
	if (i % 4 == 1) /* near the half range, where rounding is interesting */
		x = (x & 0x80000000u) | (0x33000000u + (x % (0x47800000u - 0x33000000u)));
	else if (i % 4 == 2) /* exact ties */
		x &= ~0xfffu, x |= 0x1000u;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static void test_f16_exhaustive(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = blk_f16_to_f32((uint16_t)h);
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
			assert_true(isnan(f));
			assert_true(isnan(blk_f16_to_f32(blk_f32_to_f16(f))));
			continue;
		}
		assert_int_equal(blk_f32_to_f16(f), h);
#ifdef __FLT16_MAX__
		__extension__ _Float16 r;
		uint16_t rb = (uint16_t)h;
		memcpy(&r, &rb, 2);
		assert_true((float)r == f);
#endif
	}
}

static void test_f16_random(void **state)
{
	(void)state;
	double *val = malloc(sizeof *val * 0x7c01);
	for (int c = 0; c < 0x7c00; c++)
		val[c] = blk_f16_to_f32((uint16_t)c);
	val[0x7c00] = 65536.0; /* the exponent pattern of Inf, read as a number */
	assert_true(val[1] == ldexp(1, -24) && val[0x7bff] == 65504.0);
	for (int i = 0; i < 3000000; i++) {
		float f = random_float(i);
		uint16_t got = blk_f32_to_f16(f);
		if (isnan(f)) {
			assert_true((got & 0x7c00) == 0x7c00 && (got & 0x3ff));
			continue;
		}
		assert_int_equal(got, ref_round(f, val, 0x7c01, 0x7e00));
#ifdef __FLT16_MAX__
		__extension__ _Float16 r = f;
		uint16_t rb;
		memcpy(&rb, &r, 2);
		assert_int_equal(got, rb);
#endif
	}
	free(val);
}

static void test_bf16(void **state)
{
	(void)state;
	double *val = malloc(sizeof *val * 0x7f81);
	for (int c = 0; c < 0x7f80; c++)
		val[c] = ldexp((c & 0x7f) | (c >= 0x80 ? 0x80 : 0), (c >> 7 ? (c >> 7) : 1) - 134);
	val[0x7f80] = ldexp(1, 128);
	for (uint32_t h = 0; h < 65536; h++) {
		float f = blk_bf16_to_f32((uint16_t)h);
		if ((h & 0x7f80) == 0x7f80 && (h & 0x7f))
			assert_true(isnan(f));
		else
			assert_int_equal(blk_f32_to_bf16(f), h);
		if ((h & 0x7fff) < 0x7f80)
			assert_true(fabs((double)f) == val[h & 0x7fff]);
	}
	for (int i = 0; i < 3000000; i++) {
		float f = random_float(i);
		uint16_t got = blk_f32_to_bf16(f);
		if (isnan(f))
			assert_true((got & 0x7f80) == 0x7f80 && (got & 0x7f));
		else
			assert_int_equal(got, ref_round(f, val, 0x7f81, 0x7fc0));
	}
	free(val);
}

static void test_f16_edges(void **state)
{
	(void)state;
	assert_int_equal(blk_f32_to_f16(65504.0f), 0x7bff);
	assert_int_equal(blk_f32_to_f16(65519.99f), 0x7bff);
	assert_int_equal(blk_f32_to_f16(65520.0f), 0x7c00);
	assert_int_equal(blk_f32_to_f16(-INFINITY), 0xfc00);
	assert_int_equal(blk_f32_to_f16(0x1p-25f), 0);
	assert_int_equal(blk_f32_to_f16(0x1.000002p-25f), 1);
	assert_int_equal(blk_f32_to_f16(-0.0f), 0x8000);
	assert_int_equal(blk_f32_to_bf16(FLT_MAX), 0x7f80);
	assert_int_equal(blk_f32_to_bf16(1.00390625f), 0x3f80); /* a tie, to even */
}

/* ---- types, builder, attributes ---------------------------------------- */

/* The nearest finite code of fp8 dtype t to f, ties to the even code,
 * past the largest the largest: a brute force over every code. */
static uint8_t fp8_nearest(BlkDType t, float f)
{
	int best = -1;
	double bd = 0, a = fabs((double)f);
	for (int c = 0; c < 128; c++) {
		float v = blk_fp8_to_f32(t, (uint8_t)c);
		if (!isfinite(v))
			continue;
		double d = fabs(a - v);
		if (best < 0 || d < bd || (d == bd && (c & 1) == 0))
			best = c, bd = d;
	}
	return (uint8_t)((signbit(f) ? 0x80 : 0) | best);
}

static void test_fp8(void **state)
{
	(void)state;
	BlkDType ts[2] = { BLK_F8E4M3, BLK_F8E5M2 };
	for (int k = 0; k < 2; k++) {
		BlkDType t = ts[k];
		for (int c = 0; c < 256; c++) { /* every code decodes and encodes back */
			float v = blk_fp8_to_f32(t, (uint8_t)c);
			if (isnan(v))
				assert_int_equal(blk_f32_to_fp8(t, v) & 0x7f, 0x7f);
			else if (isfinite(v))
				assert_int_equal(blk_f32_to_fp8(t, v), c == 0x80 ? 0x80 : c);
		}
		uint64_t s = 99 + (uint64_t)k;
		for (int i = 0; i < 200000; i++) { /* random floats over the range and past it */
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			float m = (float)((s >> 40) & 0xffffff) / (float)(1 << 24);
			int e = (int)((s >> 20) % 40) - (k ? 24 : 16);
			float f = ldexpf(1.0f + m, e) * ((s >> 63) ? -1.0f : 1.0f);
			if (blk_f32_to_fp8(t, f) != fp8_nearest(t, f))
				fail_msg("%s: %a gave 0x%02x, nearest 0x%02x", blk_dtype_name(t), (double)f,
				         blk_f32_to_fp8(t, f), fp8_nearest(t, f));
		}
	}
	/* the formats' landmarks: 1, the largest finite, saturation, the
	 * smallest subnormal and the ties around it, infinities, NaN */
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, 1.0f), 0x38);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, -448.0f), 0xfe);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, 470.0f), 0x7e);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, INFINITY), 0x7e);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, ldexpf(1, -9)), 0x01);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, ldexpf(1, -10)), 0x00);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, ldexpf(3, -10)), 0x02);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E4M3, NAN), 0x7f);
	assert_true(isnan(blk_fp8_to_f32(BLK_F8E4M3, 0xff)));
	assert_true(blk_fp8_to_f32(BLK_F8E4M3, 0x7e) == 448.0f);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E5M2, 1.0f), 0x3c);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E5M2, 57344.0f), 0x7b);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E5M2, -INFINITY), 0xfb);
	assert_int_equal(blk_f32_to_fp8(BLK_F8E5M2, ldexpf(1, -16)), 0x01);
	assert_true(blk_fp8_to_f32(BLK_F8E5M2, 0x7c) == INFINITY);
	assert_true(isnan(blk_fp8_to_f32(BLK_F8E5M2, 0x7d)));
	assert_int_equal(blk_dtype_size(BLK_F8E5M2), 1);
	assert_true(blk_dtype_is_fp8(BLK_F8E4M3) && !blk_dtype_is_float(BLK_F8E4M3));
}

static void test_dtypes_and_ops(void **state)
{
	(void)state;
	BlkDType t;
	assert_true(blk_dtype_from_name("bf16", &t) && t == BLK_BF16);
	assert_false(blk_dtype_from_name("f64", &t));
	assert_int_equal(blk_dtype_size(BLK_F16), 2);
	assert_string_equal(blk_dtype_name(BLK_BOOL), "bool");
	assert_true(blk_dtype_is_float(BLK_BF16) && !blk_dtype_is_float(BLK_I32));
	BlkOpKind k;
	assert_true(blk_op_from_name("atomic_add", &k) && k == BLK_OP_ATOMIC_ADD);
	assert_false(blk_op_from_name("nope", &k));
	assert_true(blk_op_flags(BLK_OP_ADD) & BLK_OPF_ELEMENTWISE);
	assert_true(blk_op_flags(BLK_OP_YIELD) & BLK_OPF_TERM);
	assert_string_equal(blk_access_name(BLK_ACCESS_INOUT), "inout");
}

static void test_types(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	const BlkSym *d[2] = { blk_sym_const(t.a, 64),
		blk_sym_binary(t.a, BLK_SYM_CDIV, V(&t, "K"), C(&t, 32)) };
	BlkType a = blk_type_tile(BLK_F32, 2, d), r = blk_type_ref(BLK_F16, 2, d, BLK_SPACE_SHARED);
	assert_string_equal(blk_type_str(t.a, &a), "f32[64, cdiv(K, 32)]");
	assert_string_equal(blk_type_str(t.a, &r), "ref<shared f16[64, cdiv(K, 32)]>");
	BlkType s = blk_type_scalar(BLK_I32);
	assert_string_equal(blk_type_str(t.a, &s), "i32");
	assert_true(blk_type_is_scalar(&s) && !blk_type_is_scalar(&a));
	const BlkSym *d2[2] = { C(&t, 64), blk_sym_binary(t.a, BLK_SYM_CDIV, V(&t, "K"), C(&t, 32)) };
	BlkType b = blk_type_tile(BLK_F32, 2, d2);
	assert_true(blk_type_equal(&a, &b));
	b.dtype = BLK_F16;
	assert_false(blk_type_equal(&a, &b));
	t_free(&t);
}

static void test_builder_attrs(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	BlkRegion *r = blk_region_create(t.a);
	BlkBuilder b;
	blk_builder_at_end(&b, t.a, r);
	BlkValue *x = blk_build_const_int(&b, t.loc, i32(), 1);
	BlkValue *z = blk_build_const_int(&b, t.loc, i32(), 3);
	BlkBuilder before;
	blk_builder_before(&before, t.a, z->def);
	BlkValue *y = blk_build_const_int(&before, t.loc, i32(), 2);
	assert_ptr_equal(r->first, x->def);
	assert_ptr_equal(x->def->next, y->def);
	assert_ptr_equal(y->def->next, z->def);
	assert_ptr_equal(r->last, z->def);
	BlkValue *o[2] = { x, y };
	BlkValue *s = blk_build1(&b, BLK_OP_ADD, t.loc, i32(), 2, o);
	blk_op_set_int(t.a, s->def, "n", 5);
	blk_op_set_float(t.a, s->def, "f", 2.5);
	blk_op_set_int(t.a, s->def, "n", 6);
	assert_int_equal(s->def->nattrs, 2);
	assert_int_equal(blk_op_int(s->def, "n", 0), 6);
	assert_int_equal(blk_op_int(s->def, "f", 9), 9);
	assert_null(blk_op_attr(s->def, "g"));
	blk_replace_uses(r, y, z);
	assert_ptr_equal(s->def->operands[1], z);
	blk_op_erase(y->def);
	assert_ptr_equal(x->def->next, z->def);
	assert_ptr_equal(z->def->prev, x->def);
	blk_op_erase(x->def);
	assert_ptr_equal(r->first, z->def);
	t_free(&t);
}

static void test_sym_print(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	const BlkSym *s = blk_sym_binary(t.a, BLK_SYM_MUL,
	                                 blk_sym_binary(t.a, BLK_SYM_SUB, V(&t, "K"), C(&t, 1)),
	                                 C(&t, 2));
	assert_string_equal(blk_sym_str(t.a, s), "(K - 1) * 2");
	t_free(&t);
}

/* ---- round trips ------------------------------------------------------- */

static void test_roundtrip_matmul(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	BlkModule *m = build_matmul(&t);
	char *s = module_text(m);
	assert_non_null(strstr(s, "%x.1 = load %b, %"));
	assert_non_null(strstr(s, "{idx = [:, ds(32)], fill = 0.0} : f32[64, 32]"));
	assert_non_null(strstr(s, "grid (cdiv(M, 64), cdiv(N, 64))"));
	free(s);
	roundtrip(&t, m);
	t_free(&t);
}

static void test_roundtrip_matmul_acc(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	BlkModule *m = build_matmul_acc(&t);
	char *s = module_text(m);
	assert_non_null(strstr(s, "seq cdiv(K, 32)"));
	assert_non_null(strstr(s, "param acc: scratch f32[64, 64]\n"));
	assert_non_null(strstr(s, "const {value = -0.0}"));
	free(s);
	roundtrip(&t, m);
	t_free(&t);
}

static const char *const text_ok =
	"; comment\n"
	"kernel @k {\n"
	"  cparams [F = 1.5, B = true, T = bf16, N2 = -3, X = inf]\n"
	"  sizes (N)\n"
	"  grid (cdiv(N, 128) + 1 - N ~/ 2 % 3)\n"
	"  warps 8 stages 3\n"
	"  param x: inout f16[N, 4] block [128, None] index {\n"
	"  ^(%i: i32):\n"
	"    %0 = const {value = 0} : i32\n"
	"    yield %i, %0\n"
	"  }\n"
	"  body {\n"
	"  ^(%x: ref<f16[128]>):\n"
	"    %0 = const {value = 1e+300} : f32[128]{blocked<spt=[2], thr=[64]>}\n"
	"    %n = size {name = \"N\"} : i32\n"
	"    %v = view %x, %n {idx = [i]} : ref<f16>\n"
	"    print {fmt = \"blocked<[1, 2]>\", t = f16}\n"
	"    %1 = convert_layout %0 {note = \"blocked<[1, 2]>\"} : f32[128]{slice<spt=[1], thr=[128], tsh=[1]>}\n"
	"    scoped {\n"
	"    ^(%s: ref<shared f32[max(N, 2), min(N, 2)]>):\n"
	"    }\n"
	"  }\n"
	"}\n";

static void test_roundtrip_text(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	BlkSource *src = blk_source_from_string(t.a, "t.ir", text_ok, strlen(text_ok));
	BlkModule *m = blk_ir_parse(t.a, t.d, src);
	assert_string_equal(t_errors(&t), "");
	assert_non_null(m);
	assert_int_equal(m->first->params[0].squeezed[1], 1);
	const BlkOp *cl = m->first->body->first->next->next->next->next;
	assert_int_equal(cl->kind, BLK_OP_CONVERT_LAYOUT);
	assert_int_equal(cl->loc.line, 18);
	assert_int_equal(cl->loc.col, 10);
	roundtrip(&t, m);
	t_free(&t);
}

/* ---- parse errors ------------------------------------------------------ */

#define HEAD "kernel @k {\n cparams []\n sizes (N)\n grid (N)\n warps 4 stages 1\n body {\n"

static const struct {
	const char *text, *error;
} bad_texts[] = {
	{ HEAD "  %0 = frob : i32\n }\n}\n", "t.ir:7:8: error: unknown op 'frob'" },
	{ HEAD "  %0 = const {value = 1} : f32[4]{blocked<spt=[3], thr=[1]>}\n }\n}\n",
	  "t.ir:7:34: error: bad layout blocked<...>: spt and thr must be powers of two" },
	{ HEAD "  %0 = const {value = 1} : f32[4]{blocked<spt=[1]>}\n }\n}\n",
	  "t.ir:7:34: error: bad layout blocked<...>: blocked<> and dot<> take spt and thr, one entry per dim" },
	{ HEAD "  %0 = const {value = 1} : f32[N]{blocked<spt=[1], thr=[1]>}\n }\n}\n",
	  "t.ir:7:34: error: a tile with a layout needs a constant shape" },
	{ HEAD "  %0 = const {value = 1} : f32[4]{mma<warps=[2,2]>}\n }\n}\n",
	  "t.ir:7:34: error: bad layout mma<...>: mma<warps=[wm,wn]> is for rank-2 tiles" },
	{ HEAD "  %0 = const {value = 1} : f32[64, 64]{mma<warps=[1,2]>}\n }\n}\n",
	  "t.ir:7:39: error: bad layout mma<...>: these warps are not an mma layout of this tile and kernel" },
	{ HEAD "  %0 = local_alloc : ref<shared f32[4, 8]{shared<strides=[4,1]>}>\n }\n}\n",
	  "t.ir:7:42: error: bad layout shared<...>: strides overlap: two elements would share a place" },
	{ HEAD "  %0 = const {value = 1} : f32[4]{swizzled<>}\n }\n}\n",
	  "t.ir:7:34: error: bad layout swizzled<...>: unknown layout kind (blocked, dot, slice, mma, mma_a, mma_b, wgmma, fma_a, fma_b, shared)" },
	{ HEAD "  %0 = const {value = 1} : f32[4]{blocked<spt=[1], thr=[1] }\n }\n}\n",
	  "t.ir:7:60: error: expected ',', found '}'" },
	{ HEAD "  %0 = neg %1 : i32\n }\n}\n", "t.ir:7:12: error: undefined value %1" },
	{ HEAD "  %0 = const {value = 1} : i32\n  %0 = const {value = 2} : i32\n }\n}\n",
	  "t.ir:8:3: error: value %0 is defined twice" },
	{ HEAD "  %0 = const {value = 1} : f33\n }\n}\n", "t.ir:7:28: error: unknown dtype 'f33'" },
	{ HEAD "  %0 = const {value = 1} : f32[4, \n }\n}\n",
	  "t.ir:8:2: error: expected a size expression, found '}'" },
	{ HEAD "  %0 = const {value = 1} : ref<f32\n }\n}\n", "t.ir:8:2: error: expected '>', found '}'" },
	{ HEAD "  %0 = const {value = 1} : i32\n  %1 = add %0 : i32\n }\n}\n",
	  "t.ir:8:8: error: add: expected 2 operands, got 1" },
	{ HEAD "  %0 = const {value = 1} : i32\n  add %0, %0\n }\n}\n",
	  "t.ir:8:3: error: add: expected 1 result, got 0" },
	{ HEAD "  %0 = const {value = 1}\n }\n}\n", "t.ir:8:2: error: 1 results but 0 result types" },
	{ HEAD "  %0 = const {value = $} : i32\n }\n}\n", "t.ir:7:23: error: unexpected character '$'" },
	{ HEAD "  print {fmt = \"abc}\n }\n}\n", "t.ir:7:16: error: unterminated string" },
	{ "kernel k {", "t.ir:1:8: error: expected a kernel name (@name), found 'k'" },
	{ "kernel @k {\n cparams []\n sizes (N)\n grid (N)\n warps 4\n", "t.ir:6:1: error: expected 'stages', found end of input" },
	{ HEAD "  %0 = const {value = 1} : i32\n  %1 = const {value = 1 : i32\n }\n}\n",
	  "t.ir:8:25: error: expected '}', found ':'" },
};

static void test_parse_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_texts / sizeof *bad_texts; i++) {
		T t;
		t_init(&t);
		BlkSource *src = blk_source_from_string(t.a, "t.ir", bad_texts[i].text,
		                                        strlen(bad_texts[i].text));
		assert_null(blk_ir_parse(t.a, t.d, src));
		const char *e = t_errors(&t);
		if (strncmp(e, bad_texts[i].error, strlen(bad_texts[i].error)) != 0)
			fail_msg("case %zu: got\n%s\nexpected\n%s", i, e, bad_texts[i].error);
		t_free(&t);
	}
}

/* Text deep enough to overflow a recursive parser stops at the limits:
 * a size expression of more than 1000 operators, regions nested more than
 * 200 deep. */
static void test_parse_limits(void **state)
{
	(void)state;
	enum { N = 20000 };
	const char *head = "kernel @k {\n cparams []\n sizes (N)\n grid (N";
	char *s = malloc(strlen(head) + 8 * N + 64);
	strcpy(s, head);
	for (int i = 0; i < N; i++)
		strcat(s + strlen(s) - 4, " + 1");
	strcat(s, ")\n warps 4 stages 1\n body {\n }\n}\n");
	T t;
	t_init(&t);
	BlkSource *src = blk_source_from_string(t.a, "t.ir", s, strlen(s));
	assert_null(blk_ir_parse(t.a, t.d, src));
	assert_string_equal(blk_diag_last_error(t.d),
	                    "size expression too large (more than 1000 operators)");
	t_free(&t);
	strcpy(s, HEAD "  %c = const {value = 1} : bool\n");
	for (int i = 0; i < 300; i++)
		strcat(s + strlen(s) - 16, "  if %c {\n");
	t_init(&t);
	src = blk_source_from_string(t.a, "t.ir", s, strlen(s));
	assert_null(blk_ir_parse(t.a, t.d, src));
	assert_string_equal(blk_diag_last_error(t.d), "regions nested too deeply (more than 200 levels)");
	t_free(&t);
	free(s);
}

/* ---- verifier errors --------------------------------------------------- */

#define VHEAD "kernel @k {\n cparams []\n sizes (N)\n grid (N)\n warps 4 stages 1\n" \
	" param r: inout f32[N, 64] block [64, 64] index {\n ^(%g: i32):\n  yield %g, %g\n }\n" \
	" body {\n ^(%r: ref<f32[64, 64]>):\n" \
	"  %i = const {value = 0} : i32\n  %a = const {value = 1.0} : f32[64, 64]\n" \
	"  %b = const {value = 1.0} : f32[64, 32]\n  %c = const {value = 1} : bool\n"
#define VTAIL " }\n}\n"

static const struct {
	const char *ops, *error;
} bad_ir[] = {
	{ "  %x = add %a, %b : f32[64, 64]\n",
	  "add: operand 1 has type f32[64, 32], expected f32[64, 64]" },
	{ "  %x = add %a, %a : f32[64, 32]\n",
	  "add: result 0 has type f32[64, 32], expected f32[64, 64]" },
	{ "  %x = lt %a, %a : f32[64, 64]\n",
	  "lt: result 0 has type f32[64, 64], expected bool[64, 64]" },
	{ "  %x = floordiv %a, %a : f32[64, 64]\n",
	  "floordiv: operand 0 has dtype f32, expected an integer dtype" },
	{ "  %x = exp %i : i32\n", "exp: operand 0 has dtype i32, expected a float dtype" },
	{ "  %q = cast %a : f8e4m3[64, 64]\n  %x = add %q, %q : f8e4m3[64, 64]\n",
	  "add: operand 0 has dtype f8e4m3, expected a numeric dtype" },
	{ "  %q = cast %a : f8e5m2[64, 64]\n  %x = lt %q, %q : bool[64, 64]\n",
	  "lt: operand 0 has dtype f8e5m2, expected a comparable (not fp8) dtype" },
	{ "  %q = cast %a : f8e4m3[64, 64]\n  %w = cast %b : bf16[64, 32]\n  %x = dot %q, %w : f32[64, 32]\n",
	  "dot: operands have types f8e4m3[64, 64] and bf16[64, 32], expected two rank-2 tiles of one float "
	  "dtype (or two fp8 ones, or two 8-bit integer ones, or one integer dtype)" },
	{ "  %x = select %a, %a, %a : f32[64, 64]\n",
	  "select: operand 0 has type f32[64, 64], expected bool[64, 64]" },
	{ "  %x = dot %a, %a : f32[64, 64]\n  %y = dot %a, %b, %a : f32[64, 32]\n",
	  "dot: operand 2 has type f32[64, 64], expected f32[64, 32]" },
	{ "  %x = dot %b, %b : f32[64, 32]\n", "dot: inner dims differ: f32[64, 32] x f32[64, 32]" },
	{ "  %x = reduce_sum %a {axis = 1} : f32[64, 64]\n",
	  "reduce_sum: result 0 has type f32[64, 64], expected f32[64]" },
	{ "  %x = reduce_max %a {axis = 2} : f32[64]\n", "reduce_max: axis 2 out of range [0, 2)" },
	{ "  %x = reduce_argmax %a {axis = 1} : f32[64]\n",
	  "reduce_argmax: result 0 has type f32[64], expected i32[64]" },
	{ "  %g = const {value = 1} : i32[64]\n  %x = load %r, %g {idx = [g, :]} : f32[64, 64]\n",
	  "load: a gather's indices have type i32[64]; with the dims f32[64] keeps they must be an i32 tile "
	  "holding those dims and its own where the first gathered dim was" },
	{ "  %g = const {value = 1} : i32[64, 64]\n  %x = view %r, %g {idx = [g, :]} : ref<f32[64, 64]>\n",
	  "view: gathers (a `g` index) are for load, store and the atomics" },
	{ "  %g = const {value = 1} : i32[8, 64]\n  %x = load %r, %g {idx = [g, :]} : f32[64, 64]\n",
	  "load: result 0 has type f32[64, 64], expected f32[8, 64]" },
	{ "  %x = load %r, %i {idx = [ds(64, 40000000), :]} : f32[64, 64]\n",
	  "load: a strided window of 64 elements 40000000 apart spans more than 2^31 - 1" },
	{ "  %x = load %r, %i {idx = [ds(8, 4), :]} : f32[64, 64]\n",
	  "load: result 0 has type f32[64, 64], expected f32[8, 64]" },
	{ "  %x = extract %a, %i, %i {idx = [i, ds(8)]} : f32[64]\n",
	  "extract: result 0 has type f32[64], expected f32[8]" },
	{ "  %x = extract %r, %i {idx = [i, :]} : f32[64]\n",
	  "extract: operand 0 has type ref<f32[64, 64]>, expected a tile" },
	{ "  %x = extract %i, %i {idx = [i]} : i32\n",
	  "extract: operand 0 is a scalar (i32); extract takes a part of a tile" },
	{ "  %x = reshape %a : f32[64, 32]\n",
	  "reshape: result has type f32[64, 32]; a reshape of f32[64, 64] keeps its dtype and element count" },
	{ "  %x = reshape %a : i32[4096]\n",
	  "reshape: result has type i32[4096]; a reshape of f32[64, 64] keeps its dtype and element count" },
	{ "  %x = join %a, %a : f32[64, 64, 3]\n",
	  "join: result 0 has type f32[64, 64, 3], expected f32[64, 64, 2]" },
	{ "  %x = join %a, %b : f32[64, 64, 2]\n",
	  "join: operand 1 has type f32[64, 32], expected f32[64, 64]" },
	{ "  %x = cumsum %a {axis = 1} : f32[64]\n",
	  "cumsum: result 0 has type f32[64], expected f32[64, 64]" },
	{ "  %x = cummax %a {axis = 2} : f32[64, 64]\n", "cummax: axis 2 out of range [0, 2)" },
	{ "  %x = cumprod %a {axis = 0, reverse = 2} : f32[64, 64]\n",
	  "cumprod: attribute reverse must be 0 or 1" },
	{ "  %x = cummin %i {axis = 0} : i32\n",
	  "cummin: operand is a scalar (i32); a scan runs along a dim of a tile" },
	{ "  %x = cumsum %c {axis = 0} : bool\n", "cumsum: operand 0 has dtype bool, expected a numeric dtype" },
	{ "  %x = transpose %b : f32[64, 32]\n",
	  "transpose: result 0 has type f32[64, 32], expected f32[32, 64]" },
	{ "  %x = transpose %b {perm = \"00\"} : f32[32, 64]\n",
	  "transpose: attr perm must list each of operand 0's 2 dims once (digits, e.g. \"021\"); without it "
	  "the operand is rank 2" },
	{ "  %x = transpose %b {perm = \"012\"} : f32[32, 64]\n",
	  "transpose: attr perm must list each of operand 0's 2 dims once (digits, e.g. \"021\"); without it "
	  "the operand is rank 2" },
	{ "  %t = reshape %a : f32[4, 16, 64]\n  %x = transpose %t : f32[64, 16, 4]\n",
	  "transpose: attr perm must list each of operand 0's 3 dims once (digits, e.g. \"021\"); without it "
	  "the operand is rank 2" },
	{ "  %x = transpose %b {flip = 4} : f32[32, 64]\n",
	  "transpose: attr flip must be a bit per reversed dim of the result (0 to 3)" },
	{ "  %t = reshape %a : f32[4, 16, 64]\n  %x = transpose %t {perm = \"201\"} : f32[4, 64, 16]\n",
	  "transpose: result 0 has type f32[4, 64, 16], expected f32[64, 4, 16]" },
	{ "  %x = expand_dims %b {axis = 1} : f32[64, 32, 1]\n",
	  "expand_dims: result 0 has type f32[64, 32, 1], expected f32[64, 1, 32]" },
	{ "  %x = broadcast %b : f32[64, 64]\n", "broadcast: cannot broadcast f32[64, 32] to f32[64, 64]" },
	{ "  %x = cast %b : i32[64, 64]\n", "cast: result 0 has type i32[64, 64], expected i32[64, 32]" },
	{ "  %x = load %r, %i {idx = [:, ds(32)]} : f32[64, 64]\n",
	  "load: result 0 has type f32[64, 64], expected f32[64, 32]" },
	{ "  %x = load %r {idx = [:]} : f32[64, 64]\n", "load: idx has 1 entries for a ref of rank 2" },
	{ "  %x = load %r {idx = [i, :]} : f32[64]\n",
	  "load: expected 2 operands (ref, 1 indices), got 1" },
	{ "  %x = load %r, %c {idx = [i, :]} : f32[64]\n",
	  "load: operand 1 has type bool, expected i32" },
	{ "  %x = load %a : f32[64, 64]\n", "load: operand 0 has type f32[64, 64], expected a ref" },
	{ "  store %r, %i, %a {idx = [:, ds(32)]}\n",
	  "store: operand 2 has type f32[64, 64], expected f32[64, 32]" },
	{ "  atomic_cas %r, %i, %a\n", "atomic_cas: operand 1 has type i32, expected f32" },
	{ "  %f = const {value = 2.0} : f32\n  atomic_cas %r, %f, %a\n", "atomic_cas: a Ref of f32; it takes i32" },
	{ "  atomic_cas %r, %i, %i, %a\n",
	  "atomic_cas: expected 3 operands (ref, 0 indices, compare value, value), got 4" },
	{ "  atomic_max %r, %i, %a\n", "atomic_max: expected 2 operands (ref, 0 indices, value), got 3" },
	{ "  %x = shl %a, %a : f32[64, 64]\n", "shl: operand 0 has dtype f32, expected an integer dtype" },
	{ "  %x = xor %a, %a : f32[64, 64]\n", "xor: operand 0 has dtype f32, expected an integer or bool dtype" },
	{ "  %x = pow %i, %i : i32\n", "pow: operand 0 has dtype i32, expected a float dtype" },
	{ "  %x = view %r, %i {idx = [i, :]} : ref<f32[64, 64]>\n",
	  "view: result 0 has type ref<f32[64, 64]>, expected ref<f32[64]>" },
	{ "  %x = for %i, %i, %i, %a : f32[64, 64] {\n  ^(%k: i32, %acc: f32[64, 64]):\n"
	  "    yield %b\n  }\n",
	  "for: yielded value 0 has type f32[64, 32], expected f32[64, 64]" },
	{ "  %x = for %i, %i, %c, %a : f32[64, 64] {\n  ^(%k: i32, %acc: f32[64, 64]):\n"
	  "    yield %acc\n  }\n",
	  "for: operand 2 has type bool, expected i32" },
	{ "  %x = for %i, %i, %i, %a : f32[64, 64] {\n  ^(%k: i32):\n    yield %a\n  }\n",
	  "for: region has 1 args, expected 2 (iv and 1 carries)" },
	{ "  if %i {} {}\n", "if: operand 0 has type i32, expected bool" },
	{ "  if %c {\n    yield %i\n  } {}\n", "if: region 0 yields 1 values, expected none" },
	{ "  yield\n  %x = neg %a : f32[64, 64]\n", "yield: yield must be the last op of its region" },
	{ "  if %c {\n    %y = neg %a : f32[64, 64]\n  } {}\n  %x = neg %y : f32[64, 64]\n",
	  "neg: operand 0 (%y) is used outside the region that defines it" },
	{ "  %x = program_id {axis = 1} : i32\n", "program_id: axis 1 out of range [0, 1)" },
	{ "  %x = size {name = \"Q\"} : i32\n", "size: 'Q' is not a launch size of the kernel" },
	{ "  %x = iota {axis = 0} : f32[64]\n", "iota: result has type f32[64], expected an i32 tile" },
	{ "  %x = const {value = 1.5} : i32\n", "const: float value for a result of type i32" },
	{ "  print %a\n", "print: missing attribute 'fmt'" },
	{ "  scoped {\n  ^(%s: f32):\n  }\n", "scoped: region arg 0 has type f32, expected a ref" },
};

static void test_verify_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_ir / sizeof *bad_ir; i++) {
		T t;
		t_init(&t);
		char *text = blk_arena_printf(t.a, "%s%s%s", VHEAD, bad_ir[i].ops, VTAIL);
		BlkSource *src = blk_source_from_string(t.a, "v.ir", text, strlen(text));
		BlkModule *m = blk_ir_parse(t.a, t.d, src);
		if (!m)
			fail_msg("case %zu does not parse:\n%s", i, t_errors(&t));
		if (blk_ir_verify(m, t.d, "test"))
			fail_msg("case %zu verifies", i);
		char *want = blk_arena_printf(t.a, "IR invalid after test: %s", bad_ir[i].error);
		if (strcmp(blk_diag_last_error(t.d), want) != 0)
			fail_msg("case %zu: got\n%s\nexpected\n%s", i, blk_diag_last_error(t.d), want);
		t_free(&t);
	}
}

/* Several ranks: a symmetric param, a signal param, peer and the signal
 * ops, printed and parsed back; each broken variant names what is wrong. */
static const char *world_ir(BlkArena *a, const char *xacc, const char *sacc, const char *body)
{
	return blk_arena_printf(a,
		"kernel @k {\n"
		"  cparams []\n"
		"  sizes ()\n"
		"  grid ()\n"
		"  warps 4 stages 2\n"
		"  param x: %s f32[8] block [8]\n"
		"  param s: %s i32[2] block [2]\n"
		"  body {\n"
		"  ^(%%x: ref<f32[8]>, %%s: ref<i32[2]>):\n"
		"    %%r = rank : i32\n"
		"    %%w = world : i32\n"
		"    %%z = const {value = 0} : i32\n"
		"%s"
		"  }\n"
		"}\n", xacc, sacc, body);
}

static void test_verify_world(void **state)
{
	(void)state;
	static const char *good =
		"    %p = peer %x, %w : ref<f32[8]>\n"
		"    %v = load %p {idx = [:], fill = 0.0} : f32[8]\n"
		"    %e = view %s, %z {idx = [i]} : ref<i32>\n"
		"    %q = peer %e, %r : ref<i32>\n"
		"    signal_add %q, %w\n"
		"    signal_set %q, %z\n"
		"    signal_wait %e, %w\n";
	static const struct { const char *xacc, *sacc, *body, *error; } cases[] = {
		{ "in symmetric", "signal", NULL, NULL },
		{ "in", "signal", NULL,
		  "peer: operand 0 views param x, which is not symmetric: only a symmetric or signal param" },
		{ "in symmetric", "inout symmetric", NULL,
		  "signal_add: operand 0 views param s, which is not a signal param" },
		{ "in symmetric", "signal", "    %v = load %s {idx = [:], fill = 0} : i32[2]\n",
		  "load: load of signal param s: only signal_add, signal_set and signal_wait touch a signal" },
		{ "in symmetric", "signal", "    signal_add %s, %z\n",
		  "signal_add: operand 0 has type ref<i32[2]>, expected ref<i32>" },
		{ "in symmetric", "signal", "    %p = peer %x, %x : ref<f32[8]>\n",
		  "peer: operand 1 has type ref<f32[8]>, expected i32" },
		{ "in symmetric", "out", NULL, "kernel @k: param s: a signal param is a symmetric `inout` i32 array" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		T t;
		t_init(&t);
		bool sig = strcmp(cases[i].sacc, "signal") == 0;
		const char *text = world_ir(t.a, cases[i].xacc, sig ? "signal" : cases[i].sacc,
		                            cases[i].body ? cases[i].body : good);
		BlkSource *src = blk_source_from_string(t.a, "w.ir", text, strlen(text));
		BlkModule *m = blk_ir_parse(t.a, t.d, src);
		if (!m)
			fail_msg("world case %zu does not parse:\n%s", i, t_errors(&t));
		if (i == 6) /* a signal param that is not inout: only a bad pass makes one */
			m->first->params[1].signal = true;
		bool ok = blk_ir_verify(m, t.d, "test");
		if (!cases[i].error) {
			if (!ok)
				fail_msg("world case %zu: %s", i, t_errors(&t));
			assert_true(m->first->params[0].symmetric);
			assert_true(m->first->params[1].signal && m->first->params[1].symmetric);
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);
			blk_ir_print_module(f, m);
			fclose(f);
			assert_non_null(strstr(buf, "param x: in symmetric f32[8]"));
			assert_non_null(strstr(buf, "param s: signal i32[2]"));
			assert_non_null(strstr(buf, "signal_wait %e, %w"));
			free(buf);
		} else {
			const char *want = cases[i].error;
			const char *got = ok ? "(verified)" : t_errors(&t);
			if (!strstr(got, want))
				fail_msg("world case %zu: got\n%s\nexpected\n%s", i, got, want);
		}
		t_free(&t);
	}
}

/* Scalar prefetch: a prefetch param and an index map reading it; each
 * broken variant names what is wrong.  The prefetch param's dtype and
 * block, its map's yield, x's map args (without the Ref arg, x's map
 * yields the grid index). */
static const char *prefetch_ir(BlkArena *a, const char *pdt, const char *pblock, const char *pyield,
                               const char *xargs)
{
	return blk_arena_printf(a,
		"kernel @k {\n"
		"  cparams []\n"
		"  sizes ()\n"
		"  grid (8)\n"
		"  warps 4 stages 2\n"
		"  param work: prefetch %s[8] block [%s] index {\n"
		"  ^(%%0: i32):\n"
		"    %%1 = const {value = %s} : i32\n"
		"    yield %%1\n"
		"  }\n"
		"  param x: in f32[100] block [32] index {\n"
		"  ^(%s):\n"
		"%s"
		"  }\n"
		"  body {\n"
		"  ^(%%work: ref<%s[%s]>, %%x: ref<f32[32]>):\n"
		"  }\n"
		"}\n", pdt, pblock, pyield, xargs,
		strchr(xargs, ',') ? "    %0 = load %work, %i {idx = [i], fill = 0} : i32\n    yield %0\n"
		                   : "    yield %i\n", pdt, pblock);
}

static void test_verify_prefetch(void **state)
{
	(void)state;
	static const struct { const char *dt, *block, *yield, *xargs, *error; } cases[] = {
		{ "i32", "8", "0", "%i: i32, %work: ref<i32[8]>", NULL },
		{ "f32", "8", "0", "%i: i32, %work: ref<f32[8]>",
		  "param work: a prefetch param is an `in` i32 array" },
		{ "i32", "4", "0", "%i: i32, %work: ref<i32[4]>",
		  "param work: a prefetch param's block is the whole array" },
		{ "i32", "8", "1", "%i: i32, %work: ref<i32[8]>",
		  "param work: a prefetch param's index map yields 0s" },
		{ "i32", "8", "0", "%i: i32, %work: ref<i32[9]>",
		  "param x: index map arg 1 has type ref<i32[9]>, expected ref<i32[8]> (prefetch param work)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		T t;
		t_init(&t);
		const char *text = prefetch_ir(t.a, cases[i].dt, cases[i].block, cases[i].yield, cases[i].xargs);
		BlkSource *src = blk_source_from_string(t.a, "p.ir", text, strlen(text));
		BlkModule *m = blk_ir_parse(t.a, t.d, src);
		if (!m)
			fail_msg("prefetch case %zu does not parse:\n%s", i, t_errors(&t));
		bool ok = blk_ir_verify(m, t.d, "test");
		if (!cases[i].error) {
			if (!ok)
				fail_msg("prefetch case %zu: %s", i, t_errors(&t));
			assert_true(m->first->params[0].prefetch);
			assert_int_equal(m->first->params[0].access, BLK_ACCESS_IN);
		} else {
			char *want = blk_arena_printf(t.a, "IR invalid after test: kernel @k: %s", cases[i].error);
			const char *got = ok ? "(verified)" : t_errors(&t);
			if (!strstr(got, want)) /* among the errors: a broken param breaks its uses too */
				fail_msg("prefetch case %zu: got\n%s\nexpected\n%s", i, got, want);
		}
		t_free(&t);
	}
	/* x's map without the prefetch arg */
	T t;
	t_init(&t);
	const char *text = prefetch_ir(t.a, "i32", "8", "0", "%i: i32");
	BlkSource *src = blk_source_from_string(t.a, "p.ir", text, strlen(text));
	BlkModule *m = blk_ir_parse(t.a, t.d, src);
	assert_non_null(m);
	assert_false(blk_ir_verify(m, t.d, "test"));
	assert_non_null(strstr(t_errors(&t), "param x: index map has 1 args, expected one per grid "
	                                    "axis (1) and one per prefetch param"));
	t_free(&t);
	/* a map that writes the array it reads */
	t_init(&t);
	text = prefetch_ir(t.a, "i32", "8", "0", "%i: i32, %work: ref<i32[8]>");
	const char *load = "    %0 = load %work, %i {idx = [i], fill = 0} : i32\n";
	const char *at = strstr(text, load);
	assert_non_null(at);
	text = blk_arena_printf(t.a, "%.*s    store %%work, %%i, %%i {idx = [i]}\n%s", (int)(at - text),
	                        text, at);
	src = blk_source_from_string(t.a, "p.ir", text, strlen(text));
	m = blk_ir_parse(t.a, t.d, src);
	if (!m)
		fail_msg("the storing map does not parse:\n%s", t_errors(&t));
	assert_false(blk_ir_verify(m, t.d, "test"));
	assert_non_null(strstr(t_errors(&t), "param x: index map op store has an effect"));
	t_free(&t);
}

/* Kernel-level checks on hand-broken builds. */
static void test_verify_kernel(void **state)
{
	(void)state;
	T t;
	t_init(&t);
	BlkModule *m = build_matmul(&t);
	BlkKernel *k = m->first;
	assert_true(blk_ir_verify(m, t.d, "build"));
	BlkRegion *im = k->params[0].index_map;
	im->last->noperands = 1;
	assert_false(blk_ir_verify(m, t.d, "x"));
	assert_string_equal(blk_diag_last_error(t.d),
	                    "IR invalid after x: kernel @matmul: param a: index map must yield 2 i32 block indices");
	im->last->noperands = 2;
	k->params[2].block[0] = C(&t, 32);
	assert_false(blk_ir_verify(m, t.d, "x"));
	assert_string_equal(blk_diag_last_error(t.d),
	                    "IR invalid after x: kernel @matmul: body arg 2 has type ref<f32[64, 64]>, expected ref<f32[32, 64]> for param c");
	t_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f16_exhaustive),
		cmocka_unit_test(test_f16_random),
		cmocka_unit_test(test_f16_edges),
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_fp8),
		cmocka_unit_test(test_dtypes_and_ops),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_builder_attrs),
		cmocka_unit_test(test_sym_print),
		cmocka_unit_test(test_roundtrip_matmul),
		cmocka_unit_test(test_roundtrip_matmul_acc),
		cmocka_unit_test(test_roundtrip_text),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_limits),
		cmocka_unit_test(test_verify_errors),
		cmocka_unit_test(test_verify_prefetch),
		cmocka_unit_test(test_verify_world),
		cmocka_unit_test(test_verify_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
