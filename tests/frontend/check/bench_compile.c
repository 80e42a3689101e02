/* bench_compile.c - `bench-frontend [FILE]`: the median time to check and
 * lower a file (default examples/matmul.blk) to IR over 1000 runs, and of
 * the whole frontend (parse + check + lower + verify).  Not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "frontend/check.h"

enum { RUNS = 1000 };

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *t)
{
	qsort(t, RUNS, sizeof *t, cmp);
	return t[RUNS / 2];
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : BLK_SRCDIR "/examples/matmul.blk";
	static double t_ck[RUNS], t_all[RUNS];
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 0);
	BlkSource *src = blk_source_read(a, d, path);
	struct BlkAstFile *f = src ? blk_parse(a, d, src) : NULL;
	if (!f)
		return 1;
	for (int i = 0; i < RUNS; i++) {
		BlkArena *b = blk_arena_create();
		double t0 = now_us();
		BlkCkFile *cf = blk_check_file(b, d, f, NULL, 0);
		if (!cf || !blk_lower_ast(b, cf))
			return 1;
		t_ck[i] = now_us() - t0;
		blk_arena_destroy(b);
		b = blk_arena_create();
		t0 = now_us();
		if (!blk_compile_source(b, d, src, NULL, 0))
			return 1;
		t_all[i] = now_us() - t0;
		blk_arena_destroy(b);
	}
	printf("%s: check + lower: median %.1f us; parse + check + lower + verify: median %.1f us "
	       "(%d runs)\n", path, median(t_ck), median(t_all), RUNS);
	blk_arena_destroy(a);
	return 0;
}
