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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_matches_run_time),
		cmocka_unit_test(test_fold_calls_and_literals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
