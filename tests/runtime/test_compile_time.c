/* test_compile_time.c - compile time grows linearly with a kernel's size:
 * n and 4n scalar stores (each a region guarded by one thread), n and 4n
 * `when`s, compiled offline to PTX; the 4n kernel may take at most 8 times
 * the n one's CPU time (linear: 4; the quadratic LLVM path of
 * lower/emit/ptx.c took 16 and more).  A ratio of CPU times, the best of
 * two runs each, so a loaded machine does not fail it.  n = 1500: both
 * kernels are huge (lower/lower_int.h, BLK_HUGE_KERNEL_OPS; a store is six
 * ops, a `when` eight), so the ratio is of one path's times, not of the
 * ordinary path's against the huge one's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "blk.h"

typedef void (*Gen)(FILE *f, int n);

static void stores(FILE *f, int n)
{
	fprintf(f, "kernel many(x: in f32[N] block (N) index (i) -> (0),\n"
	           "            y: out f32[N] block (N) index (i) -> (0)) grid (1) {\n"
	           "    let v = x[...];\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "    y[%d] = v[%d] + %d.0;\n", i % 64, i % 64, i);
	fprintf(f, "}\n");
}

static void whens(FILE *f, int n)
{
	fprintf(f, "kernel many(x: in f32[N] block (N) index (i) -> (0),\n"
	           "            y: out f32[N] block (N) index (i) -> (0)) grid (4) {\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "    when program_id(0) == %d { y[...] = x[...] + %d.0; }\n", i % 4, i);
	fprintf(f, "}\n");
}

/* CPU seconds to load and compile the kernel gen makes for n. */
static double compile_seconds(Gen gen, int n)
{
	char *src = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&src, &len);
	assert_non_null(f);
	gen(f, n);
	fclose(f);
	BlkRuntime *rt = blk_runtime_create_offline("sm_90a", NULL, 0);
	assert_non_null(rt);
	clock_t t0 = clock();
	BlkProgram *p = blk_program_load_source(rt, "many.blk", src, NULL, 0);
	if (!p)
		fail_msg("%s", blk_runtime_last_error(rt));
	int64_t shape = 64;
	BlkTensor t[2] = {blk_tensor_make((void *)0x10000, BLK_DTYPE_F32, 1, &shape),
	                  blk_tensor_make((void *)0x20000, BLK_DTYPE_F32, 1, &shape)};
	bool ok = blk_func_compile(blk_program_kernel(p, NULL), t, 2, NULL);
	double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
	if (!ok)
		fail_msg("%s", blk_runtime_last_error(rt));
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
	free(src);
	return s;
}

static double best_of_two(Gen gen, int n)
{
	double a = compile_seconds(gen, n), b = compile_seconds(gen, n);
	return a < b ? a : b;
}

static void check_growth(Gen gen, const char *what, int n)
{
	double small = best_of_two(gen, n), big = best_of_two(gen, 4 * n);
	printf("%d %s: %.3f s, %d: %.3f s (x%.1f)\n", n, what, small, 4 * n, big, big / small);
	if (big > 8 * small)
		fail_msg("%d %s took %.3f s, %d took %.3f s: %.1f times for 4 times the size", 4 * n, what,
		         big, n, small, big / small);
}

static void test_stores(void **state)
{
	(void)state;
	check_growth(stores, "stores", 1500);
}

static void test_whens(void **state)
{
	(void)state;
	check_growth(whens, "whens", 1500);
}

int main(void)
{
	setenv("BLK_CACHE", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stores),
		cmocka_unit_test(test_whens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
