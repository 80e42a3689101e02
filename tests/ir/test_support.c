/* test_support.c - the support modules under everything (support/): the
 * arena, the diagnostics, the pointer map and symbolic sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/arena.h"
#include "support/diag.h"
#include "support/ptrmap.h"
#include "support/sym.h"

static void test_arena_alloc(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	unsigned char *p = blk_arena_alloc(a, 3);
	assert_int_equal((uintptr_t)p % 16, 0);
	assert_int_equal(p[0] | p[1] | p[2], 0);
	/* A request larger than a chunk, then small ones again. */
	unsigned char *big = blk_arena_alloc(a, 1 << 20);
	assert_int_equal(big[(1 << 20) - 1], 0);
	memset(big, 0xab, 1 << 20);
	for (int i = 0; i < 10000; i++) {
		int *q = blk_arena_alloc(a, sizeof(int) * 5);
		assert_int_equal(q[4], 0);
		q[4] = i;
	}
	assert_true(blk_arena_used(a) >= (1 << 20) + 10000 * 32);
	blk_arena_destroy(a);
	blk_arena_destroy(NULL);
}

static void test_arena_strings(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	assert_string_equal(blk_arena_strndup(a, "abcdef", 3), "abc");
	assert_string_equal(blk_arena_strdup(a, "kernel"), "kernel");
	assert_string_equal(blk_arena_printf(a, "%s=%d", "BM", 128), "BM=128");
	int *v = BLK_NEW_N(a, int, 2);
	v[0] = 1;
	v[1] = 2;
	int *w = blk_arena_grow(a, v, 2, 4, sizeof *v);
	assert_int_equal(w[0], 1);
	assert_int_equal(w[1], 2);
	assert_int_equal(w[3], 0);
	blk_arena_destroy(a);
}

/* Runs fn with diagnostics into a string. */
static char *capture(BlkArena *a, void (*fn)(BlkDiag *, const BlkSource *), int max, int *errors)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	BlkDiag *d = blk_diag_create(a, f, max);
	const char text[] = "kernel k() {\n\tlet x = \x01 1;\n}\n";
	BlkSource *src = blk_source_from_string(a, "t.blk", text, sizeof text - 1);
	fn(d, src);
	*errors = blk_diag_error_count(d);
	fclose(f);
	char *r = blk_arena_strdup(a, buf);
	free(buf);
	return r;
}

static void one_error(BlkDiag *d, const BlkSource *src)
{
	BlkLoc loc = { src, 2, 10 };
	blk_error(d, loc, "unexpected byte %#x", 1);
	blk_note(d, (BlkLoc){ src, 1, 8 }, "in kernel %s", "k");
	blk_error(d, (BlkLoc){ 0 }, "no location");
}

static void test_diag_format(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	int errors;
	char *out = capture(a, one_error, 0, &errors);
	assert_int_equal(errors, 2);
	/* The tab is kept so the caret lines up; the control byte shows as '?'. */
	assert_string_equal(out,
		"t.blk:2:10: error: unexpected byte 0x1\n"
		"    \tlet x = ? 1;\n"
		"    \t        ^\n"
		"t.blk:1:8: note: in kernel k\n"
		"    kernel k() {\n"
		"           ^\n"
		"blk: error: no location\n");
	blk_arena_destroy(a);
}

static void many_errors(BlkDiag *d, const BlkSource *src)
{
	for (int i = 0; i < 5; i++) {
		blk_error(d, (BlkLoc){ src, 1, 1 }, "error %d", i);
		blk_note(d, (BlkLoc){ src, 1, 1 }, "note %d", i);
	}
	assert_true(blk_diag_saturated(d));
	assert_string_equal(blk_diag_last_error(d), "error 4");
}

static void test_diag_limit(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	int errors;
	char *out = capture(a, many_errors, 2, &errors);
	assert_int_equal(errors, 5);
	assert_non_null(strstr(out, "error 1"));
	assert_non_null(strstr(out, "note 1"));
	assert_null(strstr(out, "error 2")); /* past the limit, and its note with it */
	assert_null(strstr(out, "note 2"));
	assert_non_null(strstr(out, "too many errors"));
	blk_arena_destroy(a);
}

static void test_source_read(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, NULL, 0);
	assert_null(blk_source_read(a, d, "/nonexistent/file.blk"));
	assert_non_null(strstr(blk_diag_last_error(d), "cannot open /nonexistent/file.blk"));
	char path[] = "/tmp/blk-test-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	for (int i = 0; i < 100000; i++)
		fputc(i % 7 ? 'x' : 0, f); /* NULs inside are kept */
	fclose(f);
	BlkSource *s = blk_source_read(a, d, path);
	unlink(path);
	assert_non_null(s);
	assert_int_equal(s->len, 100000);
	assert_int_equal(s->text[0], 0);
	assert_int_equal(s->text[1], 'x');
	assert_int_equal(s->text[100000], 0);
	blk_arena_destroy(a);
}

static const char *str(BlkArena *a, const BlkSym *s)
{
	return blk_sym_str(a, s);
}

static bool dies(void *arg)
{
	blk_die("boom %d", *(int *)arg);
}

static bool returns(void *arg)
{
	return *(int *)arg > 0;
}

/* An inner guard catches; the outer one then sees its fn return. */
static bool nests(void *arg)
{
	char msg[64];
	int seven = 7;
	bool ok = blk_guard(dies, &seven, msg, sizeof msg);
	return !ok && strcmp(msg, "internal error: boom 7") == 0 && returns(arg);
}

/* blk_die under blk_guard returns to the guard with the message, however
 * deep, instead of aborting the process. */
static void test_guard(void **state)
{
	(void)state;
	char msg[64];
	int one = 1, zero = 0;
	assert_false(blk_guard(dies, &one, msg, sizeof msg));
	assert_string_equal(msg, "internal error: boom 1");
	assert_true(blk_guard(returns, &one, msg, sizeof msg));
	assert_string_equal(msg, "");
	assert_false(blk_guard(returns, &zero, msg, sizeof msg));
	assert_string_equal(msg, "");
	assert_true(blk_guard(nests, &one, msg, sizeof msg));
	assert_string_equal(msg, "");
	assert_false(blk_guard(dies, &zero, msg, sizeof msg)); /* the outer trap was restored */
	assert_string_equal(msg, "internal error: boom 0");
}

static void test_sym_fold(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	const BlkSym *M = blk_sym_var(a, "M"), *c0 = blk_sym_const(a, 0), *c1 = blk_sym_const(a, 1);
	const BlkSym *c64 = blk_sym_const(a, 64), *cm7 = blk_sym_const(a, -7), *c2 = blk_sym_const(a, 2);
	int64_t v;
	assert_true(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_CDIV, blk_sym_const(a, 130), c64), &v));
	assert_int_equal(v, 3);
	assert_true(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_FLOORDIV, cm7, c2), &v));
	assert_int_equal(v, -4); /* floor, as Python */
	assert_true(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_MOD, cm7, c2), &v));
	assert_int_equal(v, 1);
	assert_true(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_CDIV, cm7, c2), &v));
	assert_int_equal(v, -3);
	assert_ptr_equal(blk_sym_binary(a, BLK_SYM_ADD, M, c0), M);
	assert_ptr_equal(blk_sym_binary(a, BLK_SYM_MUL, c1, M), M);
	assert_ptr_equal(blk_sym_binary(a, BLK_SYM_CDIV, M, c1), M);
	assert_true(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_MUL, M, c0), &v));
	assert_int_equal(v, 0);
	/* Division by a constant zero and overflow stay unfolded. */
	assert_false(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_FLOORDIV, c64, c0), NULL));
	const BlkSym *big = blk_sym_const(a, INT64_MAX);
	assert_false(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_ADD, big, c1), NULL));
	const BlkSym *least = blk_sym_const(a, INT64_MIN);
	assert_false(blk_sym_is_const(blk_sym_binary(a, BLK_SYM_CDIV, least, c2), NULL));
	blk_arena_destroy(a);
}

static void test_sym_eval_print(void **state)
{
	(void)state;
	BlkArena *a = blk_arena_create();
	const BlkSym *M = blk_sym_var(a, "M"), *K = blk_sym_var(a, "K");
	const BlkSym *e = blk_sym_binary(a, BLK_SYM_MUL,
		blk_sym_binary(a, BLK_SYM_SUB, K, blk_sym_const(a, 1)),
		blk_sym_binary(a, BLK_SYM_CDIV, M, blk_sym_const(a, 64)));
	assert_string_equal(str(a, e), "(K - 1) * cdiv(M, 64)");
	const BlkSym *f = blk_sym_binary(a, BLK_SYM_SUB, M, blk_sym_binary(a, BLK_SYM_SUB, K, M));
	assert_string_equal(str(a, f), "M - (K - M)");
	const char *names[] = { "M", "K" };
	int64_t vals[] = { 130, 33 };
	BlkSymEnv env = { 2, names, vals };
	int64_t v;
	assert_true(blk_sym_eval(e, &env, &v));
	assert_int_equal(v, 32 * 3);
	BlkSymEnv only_m = { 1, names, vals };
	assert_false(blk_sym_eval(e, &only_m, &v));
	const BlkSym *partial = blk_sym_subst(a, e, &only_m);
	assert_string_equal(str(a, partial), "(K - 1) * 3");
	assert_true(blk_sym_equal(blk_sym_subst(a, e, &env), blk_sym_const(a, 96)));
	assert_false(blk_sym_equal(M, K));
	assert_true(blk_sym_equal(blk_sym_binary(a, BLK_SYM_MAX, M, K), blk_sym_binary(a, BLK_SYM_MAX, M, K)));
	assert_string_equal(blk_sym_kind_name(BLK_SYM_CDIV), "cdiv");
	blk_arena_destroy(a);
}

/* Many keys through several grows, in an arena and in malloc'd memory:
 * every value reads back, an overwrite keeps the count, absent keys are
 * NULL. */
static void test_ptrmap(void **state)
{
	(void)state;
	enum { N = 1000 };
	static int keys[N];
	BlkArena *a = blk_arena_create();
	for (int heap = 0; heap < 2; heap++) {
		BlkPtrMap m = { 0 };
		assert_null(blk_pmap_get(&m, &keys[0]));
		for (int i = 0; i < N; i++)
			blk_pmap_put(heap ? NULL : a, &m, &keys[i], (void *)(uintptr_t)(i + 1));
		blk_pmap_put(heap ? NULL : a, &m, &keys[7], (void *)(uintptr_t)70);
		assert_int_equal(m.n, N);
		for (int i = 0; i < N; i++)
			assert_int_equal((uintptr_t)blk_pmap_get(&m, &keys[i]), i == 7 ? 70 : i + 1);
		assert_null(blk_pmap_get(&m, &m));
		if (heap) {
			blk_pmap_free(&m);
			assert_int_equal(m.cap, 0);
			assert_null(blk_pmap_get(&m, &keys[0]));
		}
	}
	blk_arena_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena_alloc),
		cmocka_unit_test(test_arena_strings),
		cmocka_unit_test(test_diag_format),
		cmocka_unit_test(test_diag_limit),
		cmocka_unit_test(test_source_read),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_ptrmap),
		cmocka_unit_test(test_sym_fold),
		cmocka_unit_test(test_sym_eval_print),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
