/* test_fn.c - helpers (`fn`) and associative_scan through the frontend
 * and the interpreter, against C references: a helper shared by two
 * kernels, one helper at two dtypes, nested helpers, Refs, tuples and
 * dtypes as parameters; scans with +, max, a first-order linear
 * recurrence (a combine that is not associative), a tuple combine, in
 * both directions and along either axis.
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
	BlkModule *m;
	char *err;
	size_t errlen;
	FILE *errf;
} Run;

static void compile(Run *r, const char *text)
{
	memset(r, 0, sizeof *r);
	r->a = blk_arena_create();
	r->errf = open_memstream(&r->err, &r->errlen);
	r->d = blk_diag_create(r->a, r->errf, 0);
	BlkSource *src = blk_source_from_string(r->a, "t.blk", text, strlen(text));
	r->m = blk_compile_source(r->a, r->d, src, NULL, 0);
	if (!r->m) {
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

/* Runs kernel `name` on n arrays of shape [d0] (d1 == 0) or [d0, d1]. */
static void run(Run *r, const char *name, int n, const BlkDType *dt, int64_t d0, int64_t d1,
                void **data)
{
	BlkArrayDesc ad[8];
	for (int i = 0; i < n; i++)
		ad[i] = d1 ? (BlkArrayDesc){ .dtype = dt[i], .rank = 2, .shape = { d0, d1 }, .strides = { d1, 1 } }
		           : (BlkArrayDesc){ .dtype = dt[i], .rank = 1, .shape = { d0 }, .strides = { 1 } };
	BlkKernel *k = blk_module_find(r->m, name);
	assert_non_null(k);
	if (!blk_interp_run(k, ad, data, n, NULL, r->d)) {
		fflush(r->errf);
		fail_msg("run failed:\n%s", r->err);
	}
}

enum { N = 37 };

static void fill(float *x, int n, int seed)
{
	for (int i = 0; i < n; i++)
		x[i] = (float)((i * 7919 + seed * 104729) % 2001 - 1000) / 250.0f;
}

/* ---- helpers ---------------------------------------------------------------- */

/* A dropout-style hash written once, used by two kernels of one file. */
static const char *hash_src =
	"fn mix(h) {\n"
	"    let a = h ^ (h >> 16);\n"
	"    let b = a * 0x45d9f3b;\n"
	"    b ^ (b >> 16)\n"
	"}\n"
	"fn keep(i, seed, p) { (mix(i + seed) & 0xffff) >= p }\n"
	"kernel a(x: in f32[N], y: out f32[N]) {\n"
	"    y[...] = where(keep(iota(N), 17, 16384), x[...], 0.0);\n"
	"}\n"
	"kernel b(x: in f32[N], m: out i32[N]) {\n"
	"    m[...] = keep(iota(N), 17, 16384).astype(i32);\n"
	"}\n";

static int32_t c_mix(int32_t h)
{
	uint32_t a = (uint32_t)(h ^ (h >> 16));
	uint32_t b = a * 0x45d9f3bu;
	return (int32_t)(b ^ (uint32_t)((int32_t)b >> 16));
}

static void test_helper_in_two_kernels(void **state)
{
	(void)state;
	Run r;
	compile(&r, hash_src);
	float x[N], y[N];
	int32_t m[N];
	fill(x, N, 1);
	void *da[] = { x, y }, *db[] = { x, m };
	BlkDType ta[] = { BLK_F32, BLK_F32 }, tb[] = { BLK_F32, BLK_I32 };
	run(&r, "a", 2, ta, N, 0, da);
	run(&r, "b", 2, tb, N, 0, db);
	for (int i = 0; i < N; i++) {
		bool keep = (c_mix(i + 17) & 0xffff) >= 16384;
		assert_int_equal(m[i], keep);
		assert_true(y[i] == (keep ? x[i] : 0.0f));
	}
	run_free(&r);
}

/* One helper, f32 and bf16 tiles: the same as the expression written in
 * place, bit for bit (the constant takes each tile's dtype). */
static void test_helper_generic_dtypes(void **state)
{
	(void)state;
	Run r;
	compile(&r, "fn softcap(x, c) { c * tanh(x / c) }\n"
	            "kernel f(x: in f32[N], y: out f32[N], z: out f32[N]) {\n"
	            "    y[...] = softcap(x[...], 3.0);\n    z[...] = 3.0 * tanh(x[...] / 3.0);\n}\n"
	            "kernel h(x: in bf16[N], y: out bf16[N], z: out bf16[N]) {\n"
	            "    y[...] = softcap(x[...], 3.0);\n    z[...] = 3.0 * tanh(x[...] / 3.0);\n}\n");
	float x[N], y[N], z[N];
	uint16_t xb[N], yb[N], zb[N];
	fill(x, N, 2);
	for (int i = 0; i < N; i++) {
		uint32_t bits;
		memcpy(&bits, &x[i], 4);
		xb[i] = (uint16_t)(bits >> 16);
	}
	void *df[] = { x, y, z }, *dh[] = { xb, yb, zb };
	BlkDType tf[] = { BLK_F32, BLK_F32, BLK_F32 }, th[] = { BLK_BF16, BLK_BF16, BLK_BF16 };
	run(&r, "f", 3, tf, N, 0, df);
	run(&r, "h", 3, th, N, 0, dh);
	assert_memory_equal(y, z, sizeof y);
	assert_memory_equal(yb, zb, sizeof yb);
	for (int i = 0; i < N; i++)
		assert_true(fabsf(y[i] - 3.0f * tanhf(x[i] / 3.0f)) < 1e-5f);
	run_free(&r);
}

/* Helpers calling helpers; a Ref, a dtype and keywords as arguments; a
 * tuple as the result; the kernel's names invisible in the helper. */
static void test_helper_forms(void **state)
{
	(void)state;
	Run r;
	compile(&r, "fn sq(x) { x * x }\n"
	            "fn norm2(x, y) { sq(x) + sq(y) }\n"
	            "fn put(r, v, T) { r[...] = v.astype(T); }\n"
	            "fn halves(v) { (v * 0.5, v - v * 0.5) }\n"
	            "kernel k(x: in f32[N], y: out f32[N], q: out i32[N], h: out f32[N]) {\n"
	            "    let v = 2.0;\n"
	            "    y[...] = norm2(y = x[...], x = 1.0);\n"
	            "    put(q, x[...] * 10.0, i32);\n"
	            "    let (a, b) = halves(x[...]);\n"
	            "    h[...] = a - b + v;\n}\n");
	float x[N], y[N], h[N];
	int32_t q[N];
	fill(x, N, 3);
	void *d[] = { x, y, q, h };
	BlkDType t[] = { BLK_F32, BLK_F32, BLK_I32, BLK_F32 };
	run(&r, "k", 4, t, N, 0, d);
	for (int i = 0; i < N; i++) {
		assert_true(y[i] == 1.0f + x[i] * x[i]);
		assert_int_equal(q[i], (int32_t)(x[i] * 10.0f));
		assert_true(h[i] == x[i] * 0.5f - (x[i] - x[i] * 0.5f) + 2.0f);
	}
	run_free(&r);
}

/* ---- associative_scan --------------------------------------------------------- */

/* +, max (as cumsum and cummax), and a * 0.9 + b, which is not
 * associative: y[i] = 0.9 y[i-1] + x[i], exactly the loop's order. */
static void test_scan_rank1(void **state)
{
	(void)state;
	Run r;
	compile(&r, "fn lin(a, b) { a * 0.9 + b }\n"
	            "kernel k(x: in f32[N], s: out f32[N], m: out f32[N], l: out f32[N], "
	            "rl: out f32[N], w: out i32[N]) {\n"
	            "    s[...] = associative_scan(|a, b| a + b, x[...]);\n"
	            "    m[...] = associative_scan(|p, q| max(q, p), x[...]);\n"
	            "    l[...] = associative_scan(lin, x[...]);\n"
	            "    rl[...] = associative_scan(|a, b| a * 0.9 + b, x[...], reverse = true);\n"
	            "    w[...] = associative_scan(|a, b| a * 65599 + b, (x[...] * 100.0).astype(i32));\n}\n");
	float x[N], s[N], m[N], l[N], rl[N];
	int32_t w[N];
	fill(x, N, 4);
	void *d[] = { x, s, m, l, rl, w };
	BlkDType t[] = { BLK_F32, BLK_F32, BLK_F32, BLK_F32, BLK_F32, BLK_I32 };
	run(&r, "k", 6, t, N, 0, d);
	float cs = 0, cm = -INFINITY, cl = 0, cr = 0;
	uint32_t cw = 0;
	for (int i = 0; i < N; i++) {
		cs = i ? cs + x[i] : x[i];
		cm = fmaxf(cm, x[i]);
		float t9 = cl * 0.9f;
		cl = i ? t9 + x[i] : x[i];
		cw = i ? cw * 65599u + (uint32_t)(int32_t)(x[i] * 100.0f) : (uint32_t)(int32_t)(x[i] * 100.0f);
		assert_true(s[i] == cs);
		assert_true(m[i] == cm);
		assert_true(l[i] == cl);
		assert_int_equal(w[i], (int32_t)cw);
	}
	for (int i = N - 1; i >= 0; i--) {
		float t9 = cr * 0.9f;
		cr = i < N - 1 ? t9 + x[i] : x[i];
		assert_true(rl[i] == cr);
	}
	run_free(&r);
}

/* Along axis 1 and axis 0 of a [R, C] block, and a (value, index) tuple:
 * the running maximum with the index where it was first reached, a
 * combine capturing a scalar of the kernel. */
static void test_scan_rank2_and_tuples(void **state)
{
	(void)state;
	enum { R = 5, C = 9 };
	Run r;
	compile(&r, "kernel k(x: in f32[R, C], d: in f32[1], a1: out f32[R, C], a0: out f32[R, C], "
	            "v: out f32[R, C], ix: out i32[R, C]) {\n"
	            "    let g = d[0];\n"
	            "    a1[...] = associative_scan(|a, b| a * g + b, x[...], axis = 1);\n"
	            "    a0[...] = associative_scan(|a, b| a * g + b, x[...], 0);\n"
	            "    let (bv, bi) = associative_scan(|v0, i0, v1, i1| (where(v1 > v0, v1, v0),\n"
	            "        where(v1 > v0, i1, i0)), (x[...], iota(C)[None, :] + zeros((R, C), i32)),\n"
	            "        axis = 1);\n"
	            "    v[...] = bv;\n    ix[...] = bi;\n}\n");
	float x[R * C], a1[R * C], a0[R * C], v[R * C], g = 0.75f;
	int32_t ix[R * C];
	fill(x, R * C, 5);
	BlkArrayDesc ad[6];
	for (int i = 0; i < 6; i++)
		ad[i] = (BlkArrayDesc){ .dtype = i == 5 ? BLK_I32 : BLK_F32, .rank = 2, .shape = { R, C },
		                        .strides = { C, 1 } };
	ad[1] = (BlkArrayDesc){ .dtype = BLK_F32, .rank = 1, .shape = { 1 }, .strides = { 1 } };
	void *d[] = { x, &g, a1, a0, v, ix };
	if (!blk_interp_run(blk_module_find(r.m, "k"), ad, d, 6, NULL, r.d))
		fail_msg("run failed");
	for (int i = 0; i < R; i++) {
		float acc = 0, best = 0;
		int at = 0;
		for (int j = 0; j < C; j++) {
			float t = acc * g, e = x[i * C + j];
			acc = j ? t + e : e;
			if (j == 0 || e > best)
				best = e, at = j;
			assert_true(a1[i * C + j] == acc);
			assert_true(v[i * C + j] == best);
			assert_int_equal(ix[i * C + j], at);
		}
	}
	for (int j = 0; j < C; j++) {
		float acc = 0;
		for (int i = 0; i < R; i++) {
			float t = acc * g, e = x[i * C + j];
			acc = i ? t + e : e;
			assert_true(a0[i * C + j] == acc);
		}
	}
	run_free(&r);
}

/* A combine of one known operation becomes the cumsum-family op (f32 and
 * the integers for + and *, any numeric dtype for max and min); any other
 * a `scan` with the combine as its region. */
static void test_scan_lowering(void **state)
{
	(void)state;
	static const struct { const char *dt, *combine, *want; } cases[] = {
		{ "f32", "|a, b| a + b", "cumsum" }, { "i32", "|a, b| b * a", "cumprod" },
		{ "bf16", "|a, b| max(a, b)", "cummax" }, { "u8", "|a, b| min(b, a)", "cummin" },
		{ "bf16", "|a, b| a + b", "scan" }, { "f32", "|a, b| a + a", "scan" },
		{ "f32", "|a, b| b", "scan" }, { "bool", "|a, b| a | b", "scan" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[256], *ir;
		size_t len;
		snprintf(text, sizeof text, "kernel k(x: in %s[8], y: out %s[8]) {\n"
		         "    y[...] = associative_scan(%s, x[...]);\n}\n", cases[i].dt, cases[i].dt,
		         cases[i].combine);
		Run r;
		compile(&r, text);
		FILE *f = open_memstream(&ir, &len);
		blk_ir_print_module(f, r.m);
		fclose(f);
		char want[32];
		snprintf(want, sizeof want, "= %s %%", cases[i].want);
		if (!strstr(ir, want))
			fail_msg("%s on %s: no `%s` in\n%s", cases[i].combine, cases[i].dt, want, ir);
		free(ir);
		run_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helper_in_two_kernels),
		cmocka_unit_test(test_helper_generic_dtypes),
		cmocka_unit_test(test_helper_forms),
		cmocka_unit_test(test_scan_rank1),
		cmocka_unit_test(test_scan_rank2_and_tuples),
		cmocka_unit_test(test_scan_lowering),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
