/* test_lang.c - language semantics through the frontend and the
 * interpreter, written as .blk text: constant folding gives what the same
 * operation computes at run time; the math builtins against C references.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "interp/interp.h"

typedef struct Run {
	BlkArena *a;
	BlkDiag *d;
	BlkKernel *k;
	char *err;
	size_t errlen;
	FILE *errf;
} Run;

/* Compiles text (its one kernel `k`); fails the test on an error. */
static void compile(Run *r, const char *text)
{
	memset(r, 0, sizeof *r);
	r->a = blk_arena_create();
	r->errf = open_memstream(&r->err, &r->errlen);
	r->d = blk_diag_create(r->a, r->errf, 0);
	BlkSource *src = blk_source_from_string(r->a, "t.blk", text, strlen(text));
	BlkModule *m = blk_compile_source(r->a, r->d, src, NULL, 0);
	r->k = m ? blk_module_find(m, "k") : NULL;
	if (!r->k) {
		fflush(r->errf);
		fail_msg("did not compile:\n%s\n%s", text, r->err ? r->err : "");
	}
}

static void run_free(Run *r)
{
	fclose(r->errf);
	free(r->err);
	blk_arena_destroy(r->a);
}

/* Runs r's kernel on n rank-1 arrays of len elements each. */
static void run(Run *r, int n, const BlkDType *dt, int64_t len, void **data)
{
	BlkArrayDesc ad[8];
	for (int i = 0; i < n; i++)
		ad[i] = (BlkArrayDesc){ .dtype = dt[i], .rank = 1, .shape = { len }, .strides = { 1 } };
	if (!blk_interp_run(r->k, ad, data, n, NULL, r->d)) {
		fflush(r->errf);
		fail_msg("run failed:\n%s", r->err);
	}
}

/* ---- constant folding = run time ------------------------------------------ */

/* `A op B` folded by the checker and `a[0] op b[0]` computed by the
 * interpreter, from the same values: equal for every i32 operator. */
static void fold_case(const char *op, int32_t x, int32_t y)
{
	char text[512];
	snprintf(text, sizeof text,
	         "kernel k(a: in i32[1], b: in i32[1], f: out i32[1], r: out i32[1]) {\n"
	         "    f[0] = (%d) %s (%d);\n    r[0] = a[0] %s b[0];\n}\n", x, op, y, op);
	Run r;
	compile(&r, text);
	int32_t a = x, b = y, f = 7, v = 7;
	void *data[] = { &a, &b, &f, &v };
	BlkDType dt[] = { BLK_I32, BLK_I32, BLK_I32, BLK_I32 };
	run(&r, 4, dt, 1, data);
	if (f != v)
		fail_msg("%d %s %d: folded %d, at run time %d", x, op, y, f, v);
	run_free(&r);
}

static void test_fold_matches_run_time(void **state)
{
	(void)state;
	static const char *const ops[] = { "+", "-", "*", "~/", "%", "<<", ">>", "&", "|", "^" };
	static const int32_t vals[][2] = {
		{ 7, 0 }, { -7, 0 }, { 2147483647, 1 }, { INT32_MIN, -1 }, { INT32_MIN, 1 }, { -7, 2 },
		{ 7, -2 }, { 1, 31 }, { 1, 32 }, { -1, -1 }, { 65536, 65536 }, { 0x7fffffff, 0x7fffffff },
	};
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		for (size_t j = 0; j < sizeof vals / sizeof *vals; j++)
			fold_case(ops[i], vals[j][0], vals[j][1]);
}

/* cdiv folded and at run time; unary minus of i32's minimum; hex. */
static void test_fold_calls_and_literals(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(a: in i32[4], b: in i32[4], f: out i32[4], r: out i32[4]) {\n"
	            "    f[0] = cdiv(7, 0);\n    f[1] = cdiv(-2147483648, -1);\n"
	            "    f[2] = -(-2147483648);\n    f[3] = 0xFFFFFFFF + 0x7fffffff;\n"
	            "    r[0] = cdiv(a[0], b[0]);\n    r[1] = cdiv(a[1], b[1]);\n}\n");
	int32_t a[4] = { 7, INT32_MIN, 0, 0 }, b[4] = { 0, -1, 1, 1 }, f[4], v[4];
	void *data[] = { a, b, f, v };
	BlkDType dt[] = { BLK_I32, BLK_I32, BLK_I32, BLK_I32 };
	run(&r, 4, dt, 4, data);
	assert_int_equal(f[0], v[0]);
	assert_int_equal(f[1], v[1]);
	assert_int_equal(f[2], INT32_MIN);
	assert_int_equal(f[3], 0x7ffffffe);
	run_free(&r);
}

/* cdiv at i32's minimum, folded, by a constant and at run time: the
 * ceiling (it was -((-a) ~/ b), which wraps there: cdiv(INT_MIN, 2) gave
 * +2^30 folded and with a run-time divisor, -2^30 by a constant). */
static void test_cdiv_at_int_min(void **state)
{
	(void)state;
	static const int32_t div[] = { 2, -2, 3, -3, 7, 65536, 2147483647 };
	for (size_t i = 0; i < sizeof div / sizeof *div; i++) {
		char text[512];
		snprintf(text, sizeof text,
		         "kernel k(a: in i32[3], f: out i32[3]) {\n"
		         "    f[0] = cdiv(-2147483647 - 1, %d);\n    f[1] = cdiv(a[0], %d);\n"
		         "    f[2] = cdiv(a[0], a[1]);\n}\n", div[i], div[i]);
		Run r;
		compile(&r, text);
		int32_t a[3] = { INT32_MIN, div[i], 0 }, f[3];
		void *data[] = { a, f };
		BlkDType dt[] = { BLK_I32, BLK_I32 };
		run(&r, 2, dt, 3, data);
		int64_t want = INT32_MIN / (int64_t)div[i]; /* C truncates: up when the signs agree */
		if (INT32_MIN % (int64_t)div[i] != 0 && div[i] < 0)
			want++;
		for (int j = 0; j < 3; j++)
			if (f[j] != want)
				fail_msg("cdiv(INT_MIN, %d), form %d: %d, want %lld", div[i], j, f[j], (long long)want);
		run_free(&r);
	}
}

/* ---- math builtins against C references ------------------------------------ */

enum { NX = 24 };

/* Inputs over [-6, 6], the special values, and ends where a naive formula
 * overflows (softplus's e^x, silu's e^-x). */
static void math_inputs(float *x)
{
	static const float special[] = { 0.0f, -0.0f, NAN, INFINITY, -INFINITY, 100.0f, -100.0f, 1e-6f };
	for (int i = 0; i < NX; i++)
		x[i] = i < 8 ? special[i] : -6.0f + 12.0f * (float)(i - 8) / (NX - 9);
}

/* got matches want (a double reference) to f32's precision: NaN for NaN,
 * the infinity for an infinity, else 2e-6 relative or 1e-7 absolute. */
static void expect_close(const char *what, float x, float got, double want)
{
	bool ok = isnan(want) ? isnan(got)
	        : isinf(want) ? got == (float)want
	        : fabs(got - want) <= 2e-6 * fabs(want) + 1e-7;
	if (!ok)
		fail_msg("%s(%g): got %.9g, want %.9g", what, x, got, want);
}

static double ref_gelu(double x)
{
	return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double ref_gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double ref_softplus(double x)
{
	return x > 30 ? x : log1p(exp(x));
}

static double ref_silu(double x)
{
	return isinf(x) && x < 0 ? NAN : x / (1.0 + exp(-x)); /* -inf * 0: NaN, as torch */
}

static void test_activations(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in f32[24], a: out f32[24], b: out f32[24], c: out f32[24],\n"
	            "         d: out f32[24], e: out f32[24], f: out f32[24]) {\n"
	            "    let v = x[...];\n    a[...] = exp2(v);\n    b[...] = log2(abs(v));\n"
	            "    c[...] = silu(v);\n    d[...] = gelu(v);\n"
	            "    e[...] = gelu(v, approximate = true);\n    f[...] = softplus(v);\n}\n");
	float x[NX], o[6][NX];
	math_inputs(x);
	void *data[] = { x, o[0], o[1], o[2], o[3], o[4], o[5] };
	BlkDType dt[7] = { BLK_F32, BLK_F32, BLK_F32, BLK_F32, BLK_F32, BLK_F32, BLK_F32 };
	run(&r, 7, dt, NX, data);
	for (int i = 0; i < NX; i++) {
		double v = x[i];
		expect_close("exp2", x[i], o[0][i], exp2(v));
		expect_close("log2", x[i], o[1][i], log2(fabs(v)));
		expect_close("silu", x[i], o[2][i], ref_silu(v));
		expect_close("gelu", x[i], o[3][i], ref_gelu(v));
		expect_close("gelu_tanh", x[i], o[4][i], ref_gelu_tanh(v));
		expect_close("softplus", x[i], o[5][i], ref_softplus(v));
	}
	run_free(&r);
}

/* fma rounds once; clamp is numpy's clip (NaN stays, ints too); isnan,
 * isinf give bools. */
static void test_fma_clamp_classes(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in f32[24], a: out f32[24], b: out f32[24], n: out bool[24],\n"
	            "         f: out bool[24], i: out i32[24]) {\n"
	            "    let v = x[...];\n    a[...] = fma(v, v * 3.0, 1);\n    b[...] = clamp(v, -1, 2.5);\n"
	            "    n[...] = isnan(v);\n    f[...] = isinf(v);\n"
	            "    i[...] = clamp(iota(24), 3, 20);\n}\n");
	float x[NX], a[NX], b[NX];
	uint8_t n[NX], f[NX];
	int32_t iv[NX];
	math_inputs(x);
	x[NX - 1] = 0x1.000d14p+0f; /* x * 3x + 1 rounds differently in two steps */
	void *data[] = { x, a, b, n, f, iv };
	BlkDType dt[6] = { BLK_F32, BLK_F32, BLK_F32, BLK_BOOL, BLK_BOOL, BLK_I32 };
	run(&r, 6, dt, NX, data);
	for (int i = 0; i < NX; i++) {
		float want = fmaf(x[i], x[i] * 3.0f, 1.0f);
		if (!(isnan(want) ? isnan(a[i]) : a[i] == want))
			fail_msg("fma(%g): got %.9g, want %.9g", x[i], a[i], want);
		expect_close("clamp", x[i], b[i], isnan(x[i]) ? NAN : fmin(fmax(x[i], -1.0), 2.5));
		assert_int_equal(n[i], isnan(x[i]) != 0);
		assert_int_equal(f[i], isinf(x[i]) != 0);
		assert_int_equal(iv[i], i < 3 ? 3 : i > 20 ? 20 : i);
	}
	volatile float p = x[NX - 1] * (x[NX - 1] * 3.0f);
	assert_true(a[NX - 1] != p + 1.0f);
	run_free(&r);
}

/* In bf16 an activation is one operation: the f32 result, rounded once. */
static void test_activation_rounds_once(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in f32[24], y: out bf16[24], z: out f32[24]) {\n"
	            "    let b = x[...].astype(bf16);\n"
	            "    y[...] = gelu(b, approximate = true);\n"
	            "    z[...] = gelu(b.astype(f32), approximate = true);\n}\n");
	float x[NX], z[NX];
	uint16_t y[NX];
	math_inputs(x);
	void *data[] = { x, y, z };
	BlkDType dt[3] = { BLK_F32, BLK_BF16, BLK_F32 };
	run(&r, 3, dt, NX, data);
	for (int i = 0; i < NX; i++) {
		float want = blk_bf16_to_f32(blk_f32_to_bf16(z[i])), got = blk_bf16_to_f32(y[i]);
		if (!(isnan(want) ? isnan(got) : got == want))
			fail_msg("bf16 gelu(%g): got %.9g, want %.9g", x[i], got, want);
	}
	run_free(&r);
}

/* ---- weak scalars ---------------------------------------------------------- */

/* A size, a program id, a read element join a float tile in its dtype. */
static void test_weak_scalars(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in f32[N] block (4) index (i) -> (i), y: out f32[N] block (4) index (i) -> (i),\n"
	            "         z: out bf16[N] block (4) index (i) -> (i)) grid (cdiv(N, 4)) {\n"
	            "    y[...] = x[...] / N + program_id(0);\n"
	            "    z[...] = x[...].astype(bf16) * (1.0 / N) + x[0];\n}\n");
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, y[8];
	uint16_t z[8];
	void *data[] = { x, y, z };
	BlkDType dt[3] = { BLK_F32, BLK_F32, BLK_BF16 };
	run(&r, 3, dt, 8, data);
	for (int i = 0; i < 8; i++) {
		assert_float_equal(y[i], x[i] / 8.0f + (float)(i / 4), 0.0f);
		/* x * (1/8) in bf16, then + x[0] of the program's block, in bf16 */
		float p = blk_bf16_to_f32(blk_f32_to_bf16(x[i] * 0.125f));
		float want = blk_bf16_to_f32(blk_f32_to_bf16(p + x[i / 4 * 4]));
		assert_float_equal(blk_bf16_to_f32(z[i]), want, 0.0f);
	}
	run_free(&r);
}

/* ---- joining and cutting tiles ----------------------------------------------- */

/* Runs text on x = 0, 1, ..., 23 (as [4, 6]) into outputs of the given
 * element counts (f32), flattened. */
static void run_tiles(const char *text, int nout, const int *counts, float **out)
{
	Run r;
	compile(&r, text);
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	x[23] = -0.0f; /* concatenate is exact: -0.0 stays */
	BlkArrayDesc ad[8];
	void *data[8] = { x };
	ad[0] = (BlkArrayDesc){ .dtype = BLK_F32, .rank = 2, .shape = { 4, 6 }, .strides = { 6, 1 } };
	for (int i = 0; i < nout; i++) {
		out[i] = calloc((size_t)counts[i], sizeof(float));
		data[i + 1] = out[i];
		ad[i + 1] = (BlkArrayDesc){ .dtype = BLK_F32, .rank = 1, .shape = { counts[i] }, .strides = { 1 } };
	}
	if (!blk_interp_run(r.k, ad, data, nout + 1, NULL, r.d)) {
		fflush(r.errf);
		fail_msg("run failed:\n%s", r.err);
	}
	run_free(&r);
}

static float xv(int row, int col)
{
	return row == 3 && col == 5 ? -0.0f : (float)(row * 6 + col);
}

static void expect_bits(const char *what, int i, float got, float want)
{
	if (memcmp(&got, &want, sizeof got) != 0)
		fail_msg("%s[%d]: got %g, want %g", what, i, got, want);
}

static void test_join_and_split(void **state)
{
	(void)state;
	int counts[] = { 40, 48, 48, 12, 24 };
	float *o[5];
	run_tiles("kernel k(x: in f32[4, 6], y: out f32[40], z: out f32[48], w: out f32[48], s: out f32[12],\n"
	          "         c: out f32[24]) {\n"
	          "    let t = x[...];\n"
	          "    y[...] = concatenate((t, t[:, 0:4]), axis = 1).reshape(-1);\n"
	          "    z[...] = stack((t, -t), axis = 1).reshape(-1);\n"
	          "    w[...] = interleave(t, -t).reshape(-1);\n"
	          "    let (a, b) = split(t, 2, axis = 1);\n"
	          "    s[...] = (b - a).reshape(-1);\n"
	          "    let (p, q, u, v) = split(t, 4);\n"
	          "    c[...] = concatenate((v, u, q, p)).reshape(-1);\n}\n", 5, counts, o);
	for (int r = 0; r < 4; r++) {
		for (int j = 0; j < 10; j++) /* [4, 10]: the row, then its first 4 */
			expect_bits("concatenate", r * 10 + j, o[0][r * 10 + j], xv(r, j < 6 ? j : j - 6));
		for (int k = 0; k < 2; k++) /* [4, 2, 6] */
			for (int j = 0; j < 6; j++)
				expect_bits("stack", (r * 2 + k) * 6 + j, o[1][(r * 2 + k) * 6 + j], k ? -xv(r, j) : xv(r, j));
		for (int j = 0; j < 12; j++) /* [4, 12]: t, -t alternating */
			expect_bits("interleave", r * 12 + j, o[2][r * 12 + j], j % 2 ? -xv(r, j / 2) : xv(r, j / 2));
		for (int j = 0; j < 3; j++)
			expect_bits("split", r * 3 + j, o[3][r * 3 + j], xv(r, j + 3) - xv(r, j));
		for (int j = 0; j < 6; j++) /* the rows reversed */
			expect_bits("split rows", r * 6 + j, o[4][r * 6 + j], xv(3 - r, j));
	}
	for (int i = 0; i < 5; i++)
		free(o[i]);
}

/* ---- random numbers ------------------------------------------------------ */

/* Random123's known answers for philox4x32_10 (its kat_vectors):
 * counter 0 under key 0, all ones under all ones (an i32 seed of -1
 * sign-extends to that key), and the digits of pi.  The builtins reach
 * the first two; the third's key is no seed's, so ir/random.c's function
 * (what the interpreter runs) takes it directly. */
static void test_philox_known_answers(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(o: out i32[12]) {\n"
	            "    let (a, b, c, d) = philox(0, 0, 0, 0, 0);\n"
	            "    let (e, f, g, h) = philox(-1, -1, -1, -1, -1);\n"
	            "    let (p, q, u, v) = randint4x(0, iota(2));\n"
	            "    o[0] = a;\n    o[1] = b;\n    o[2] = c;\n    o[3] = d;\n"
	            "    o[4] = e;\n    o[5] = f;\n    o[6] = g;\n    o[7] = h;\n"
	            "    o[8] = p[0];\n    o[9] = q[0];\n    o[10] = u[0];\n    o[11] = randint(0, 0);\n}\n");
	uint32_t o[12];
	void *data[] = { o };
	BlkDType dt[] = { BLK_I32 };
	run(&r, 1, dt, 12, data);
	static const uint32_t want[12] = {
		0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8,
		0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd,
		0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x6627e8d5,
	};
	for (int i = 0; i < 12; i++)
		if (o[i] != want[i])
			fail_msg("word %d: got %08x, want %08x", i, o[i], want[i]);
	uint32_t c[4] = { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 };
	blk_philox(0xa4093822, 0x299f31d0, c);
	assert_int_equal(c[0], 0xd16cfe09);
	assert_int_equal(c[1], 0x94fdcceb);
	assert_int_equal(c[2], 0x5001e420);
	assert_int_equal(c[3], 0x24126ea1);
	run_free(&r);
}

/* A word as [0, 1): ~x for the negative ones, converted, scaled below 1. */
static float ref_uniform(uint32_t x)
{
	int32_t v = (int32_t)x;
	return (float)(v < 0 ? -(v + 1) : v) * 0x1.fffffep-32f;
}

/* rand is randint's word as ref_uniform says, bit for bit; randn is
 * Box-Muller of words 0 and 1 in double within a few f32 ulp of its
 * size; offsets of any shape. */
static void test_random_conversions(void **state)
{
	(void)state;
	enum { N = 4096 };
	Run r;
	compile(&r, "kernel k(s: in i32[4096], w: out i32[4096], v: out i32[4096], u: out f32[4096],\n"
	            "         g: out f32[4096], t: out f32[4096]) {\n"
	            "    let off = iota(4096) * 3 - 77;\n"
	            "    let (a, b, c, d) = randint4x(s[0], off);\n"
	            "    w[...] = a;\n    v[...] = b;\n"
	            "    u[...] = rand(s[0], off);\n    g[...] = randn(s[0], off);\n"
	            "    t[...] = rand(s[0], off.reshape(64, 64)).reshape(-1);\n}\n");
	static int32_t s[N], w[N], v[N];
	static float u[N], g[N], t[N];
	s[0] = -123456789;
	void *data[] = { s, w, v, u, g, t };
	BlkDType dt[] = { BLK_I32, BLK_I32, BLK_I32, BLK_F32, BLK_F32, BLK_F32 };
	run(&r, 6, dt, N, data);
	double worst = 0;
	for (int i = 0; i < N; i++) {
		expect_bits("rand", i, u[i], ref_uniform((uint32_t)w[i]));
		expect_bits("rand 2-D", i, t[i], u[i]);
		double u1 = fmax(ref_uniform((uint32_t)w[i]), 1e-7f), u2 = ref_uniform((uint32_t)v[i]);
		double want = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2), err = fabs(g[i] - want) / fmax(1, fabs(want));
		worst = fmax(worst, err);
		if (err > 1e-6)
			fail_msg("randn[%d] = %.9g, Box-Muller %.9g", i, g[i], want);
	}
	assert_true(ref_uniform(0x7fffffff) < 1.0f && ref_uniform(0x7fffffff) == blk_rand_uniform(0x80000000));
	assert_true(blk_rand_uniform(0) == 0.0f && blk_rand_uniform(0xffffffff) == 0.0f);
	assert_true(blk_rand_uniform(0x7fffffff) == 1.0f - 0x1p-24f);
	assert_true(worst > 0); /* the conversions round: not exact in double */
	run_free(&r);
}

/* Mean and variance over 2^18 elements of a grid, loosely (about 5 standard
 * errors): rand uniform on [0, 1), randn standard normal, randint's bits
 * fair; another seed gives other numbers, the same seed the same. */
static void test_random_statistics(void **state)
{
	(void)state;
	enum { N = 1 << 18 };
	Run r;
	compile(&r, "kernel k[B = 4096](s: in i32[N] block (B) index (i) -> (i),\n"
	            "         u: out f32[N] block (B) index (i) -> (i), g: out f32[N] block (B) index (i) -> (i),\n"
	            "         w: out i32[N] block (B) index (i) -> (i), e: out f32[N] block (B) index (i) -> (i),\n"
	            ") grid (cdiv(N, B)) {\n"
	            "    let off = program_id(0) * B + iota(B);\n"
	            "    u[...] = rand(42, off);\n    g[...] = randn(42, off);\n    w[...] = randint(42, off);\n"
	            "    e[...] = rand(43, off);\n}\n");
	int32_t *s = calloc(N, 4), *w = malloc(N * 4);
	float *u = malloc(N * 4), *g = malloc(N * 4), *e = malloc(N * 4);
	void *data[] = { s, u, g, w, e };
	BlkDType dt[] = { BLK_I32, BLK_F32, BLK_F32, BLK_I32, BLK_F32 };
	run(&r, 5, dt, N, data);
	double su = 0, su2 = 0, sg = 0, sg2 = 0, bits = 0, lo = 1, hi = 0, within1 = 0;
	int same = 0;
	for (int i = 0; i < N; i++) {
		su += u[i], su2 += (double)u[i] * u[i], sg += g[i], sg2 += (double)g[i] * g[i];
		lo = fmin(lo, u[i]), hi = fmax(hi, u[i]), within1 += fabs(g[i]) < 1;
		bits += __builtin_popcount((uint32_t)w[i]);
		same += e[i] == u[i];
	}
	double mu = su / N, vu = su2 / N - mu * mu, mg = sg / N, vg = sg2 / N - mg * mg;
	if (fabs(mu - 0.5) > 3e-3 || fabs(vu - 1.0 / 12) > 2e-3 || lo < 0 || hi >= 1)
		fail_msg("rand: mean %g, variance %g, range [%g, %g]", mu, vu, lo, hi);
	if (fabs(mg) > 1e-2 || fabs(vg - 1) > 1.5e-2 || fabs(within1 / N - 0.682689) > 5e-3)
		fail_msg("randn: mean %g, variance %g, %g within 1", mg, vg, within1 / N);
	if (fabs(bits / (32.0 * N) - 0.5) > 1e-3)
		fail_msg("randint: %g of the bits set", bits / (32.0 * N));
	if (same > 16)
		fail_msg("seeds 42 and 43 agree on %d elements", same);
	float first = u[12345];
	run(&r, 5, dt, N, data);
	expect_bits("rand again", 12345, u[12345], first);
	free(s), free(w), free(u), free(g), free(e);
	run_free(&r);
}

/* ---- u32 ------------------------------------------------------------------ */

static uint32_t ref_u32(int op, uint32_t x, uint32_t y)
{
	switch (op) {
	case 0: return y < 32 ? x >> y : 0;
	case 1: return y ? x / y : 0;
	case 2: return y ? x % y : 0;
	case 3: return x > y ? x : y;
	case 4: return (x < y) + 2u * (x <= y) + 4u * (x >= y) + 8u * (x > y);
	case 5: return (x ^ 0xFFFFFFFFu) + (x << 1) - 1u; /* literals wrap: -1 is 0xFFFFFFFF */
	default: return y < 32 ? x << y : 0;
	}
}

/* u32 against C's unsigned arithmetic: `>>` logical, `~/` and `%`
 * unsigned (by 0: 0), unsigned order; hex and negative literals take
 * their 32 bits; conversions to f32 of the unsigned value, from f32
 * saturated; i32 <-> u32 keep the bits; reductions in unsigned order. */
static void test_u32(void **state)
{
	(void)state;
	enum { N = 64 };
	Run r;
	compile(&r, "kernel k(x: in u32[64], y: in u32[64], o: out u32[448], f: out f32[64], g: out u32[64],\n"
	            "         h: out i32[64], m: out u32[68]) {\n"
	            "    let u = x[...];\n    let v = y[...];\n    let s = v & 63;\n"
	            "    o[0:64] = u >> s;\n    o[64:128] = u ~/ v;\n    o[128:192] = u % v;\n"
	            "    o[192:256] = max(u, v);\n"
	            "    o[256:320] = (u < v).astype(u32) + (u <= v).astype(u32) * 2 + (u >= v).astype(u32) * 4 +\n"
	            "                 (u > v).astype(u32) * 8;\n"
	            "    o[320:384] = (u ^ 0xFFFFFFFF) + (u << 1) + -1;\n    o[384:448] = u << s;\n"
	            "    f[...] = u.astype(f32);\n    g[...] = (v.astype(f32) * 1.5 - 1.0e9).astype(u32);\n"
	            "    h[...] = u.astype(i32) >> 31;\n"
	            "    m[0] = max(u);\n    m[1] = min(u);\n    m[2] = sum(u);\n    m[3] = argmax(u, axis = 0).astype(u32);\n"
	            "    m[4:68] = cummax(v);\n}\n");
	static uint32_t x[N], y[N], o[7 * N], g[N], m[N + 4];
	static int32_t h[N];
	static float f[N];
	uint64_t st = 12345;
	for (int i = 0; i < N; i++) {
		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (uint32_t)(st >> 32), y[i] = (uint32_t)st;
	}
	y[0] = 0, y[1] = 31, y[2] = 32, y[3] = 0xFFFFFFFFu, x[4] = y[4];
	void *data[] = { x, y, o, f, g, h, m };
	BlkDType dt[] = { BLK_U32, BLK_U32, BLK_U32, BLK_F32, BLK_U32, BLK_I32, BLK_U32 };
	BlkArrayDesc ad[7];
	int64_t len[7] = { N, N, 7 * N, N, N, N, N + 4 };
	for (int i = 0; i < 7; i++)
		ad[i] = (BlkArrayDesc){ .dtype = dt[i], .rank = 1, .shape = { len[i] }, .strides = { 1 } };
	if (!blk_interp_run(r.k, ad, data, 7, NULL, r.d)) {
		fflush(r.errf);
		fail_msg("run failed:\n%s", r.err);
	}
	uint32_t mx = 0, mn = 0xFFFFFFFFu, sum = 0, arg = 0, run = 0;
	for (int i = 0; i < N; i++) {
		for (int op = 0; op < 7; op++) {
			uint32_t want = ref_u32(op, x[i], op == 0 || op == 6 ? y[i] & 63 : y[i]);
			if (o[op * N + i] != want)
				fail_msg("op %d of %u, %u: got %u, want %u", op, x[i], y[i], o[op * N + i], want);
		}
		expect_bits("u32 to f32", i, f[i], (float)x[i]);
		float gf = (float)y[i] * 1.5f - 1.0e9f;
		assert_int_equal(g[i], gf <= 0 ? 0 : gf >= 4294967296.0f ? 0xFFFFFFFFu : (uint32_t)gf);
		assert_int_equal(h[i], x[i] >> 31 ? -1 : 0);
		arg = x[i] > mx ? (uint32_t)i : arg;
		mx = x[i] > mx ? x[i] : mx, mn = x[i] < mn ? x[i] : mn, sum += x[i];
	}
	assert_int_equal(m[0], mx);
	assert_int_equal(m[1], mn);
	assert_int_equal(m[2], sum);
	assert_int_equal(m[3], arg);
	for (int i = 0; i < N; i++) {
		run = y[i] > run ? y[i] : run;
		assert_int_equal(m[4 + i], run);
	}
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_matches_run_time),
		cmocka_unit_test(test_fold_calls_and_literals),
		cmocka_unit_test(test_cdiv_at_int_min),
		cmocka_unit_test(test_activations),
		cmocka_unit_test(test_fma_clamp_classes),
		cmocka_unit_test(test_activation_rounds_once),
		cmocka_unit_test(test_weak_scalars),
		cmocka_unit_test(test_join_and_split),
		cmocka_unit_test(test_philox_known_answers),
		cmocka_unit_test(test_random_conversions),
		cmocka_unit_test(test_random_statistics),
		cmocka_unit_test(test_u32),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
