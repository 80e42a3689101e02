/* test_examples.c - every example kernel (examples/NAME.blk) through the
 * frontend and the interpreter, against plain C references in double
 * precision.
 *
 * Inputs are random with a fresh seed each run (printed on failure; set
 * BLK_TEST_SEED to replay one), outputs are poisoned first so an element
 * the kernel never writes fails the comparison.  Shapes are block multiples
 * and odd ones, in every dtype, with default and overridden block sizes.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "ir/hostdata.h"

static uint64_t seed, seed0; /* seed0: the run's seed, to replay it */

static const char *const dtypes[] = { "f32", "f16", "bf16" };

typedef struct Run {
	BlkArena *a;
	BlkDiag *d;
	BlkKernel *k;
	char *err;
	size_t errlen;
	FILE *errf;
} Run;

/* Compiles examples/<file> with the defines; the kernel `name`. */
static void compile(Run *r, const char *file, const char *name, const BlkDefine *defs, int ndefs)
{
	memset(r, 0, sizeof *r);
	r->a = blk_arena_create();
	r->errf = open_memstream(&r->err, &r->errlen);
	r->d = blk_diag_create(r->a, r->errf, 0);
	char *path = blk_arena_printf(r->a, "%s/%s", BLK_EXAMPLES_DIR, file);
	BlkSource *src = blk_source_read(r->a, r->d, path);
	BlkModule *m = src ? blk_compile_source(r->a, r->d, src, defs, ndefs) : NULL;
	r->k = m ? blk_module_find(m, name) : NULL;
	if (!r->k) {
		fflush(r->errf);
		fail_msg("%s did not compile:\n%s", file, r->err ? r->err : "");
	}
}

static void run_free(Run *r)
{
	fclose(r->errf);
	free(r->err);
	blk_arena_destroy(r->a);
}

static BlkDType dtype_of(const char *name)
{
	BlkDType t = BLK_F32;
	blk_dtype_from_name(name, &t);
	return t;
}

/* Runs r's kernel on arrays and compares output `out` against ref. */
static void run_and_check(Run *r, BlkHostArray **arrays, int n, int out, const double *ref,
                          const char *what)
{
	BlkArrayDesc ad[8];
	void *data[8];
	for (int i = 0; i < n; i++) {
		ad[i] = arrays[i]->desc;
		data[i] = arrays[i]->data;
	}
	if (!blk_interp_run(r->k, ad, data, n, NULL, r->d)) {
		fflush(r->errf);
		fail_msg("%s (seed %llu): run failed:\n%s", what, (unsigned long long)seed0, r->err);
	}
	BlkHostArray *o = arrays[out];
	BlkHostCompare c;
	size_t poison = blk_host_count_poison(o);
	bool ok = blk_host_compare(o, ref, blk_host_default_tol(o->desc.dtype), &c);
	if (!ok || poison) {
		fail_msg("%s (seed %llu): %zu mismatches, %zu unwritten; first at %zu: %g vs %g; "
		         "max abs %g, rel %g", what, (unsigned long long)seed0, c.mismatches, poison,
		         c.first_bad, c.bad_out, c.bad_ref, c.max_abs, c.max_rel);
	}
}

static BlkHostArray *input(BlkDType dt, int rank, int64_t d0, int64_t d1)
{
	int64_t shape[] = { d0, d1 };
	BlkHostArray *h = blk_host_new(dt, rank, shape);
	blk_host_fill_random(h, seed++);
	return h;
}

static BlkHostArray *output(BlkDType dt, int rank, int64_t d0, int64_t d1)
{
	int64_t shape[] = { d0, d1 };
	BlkHostArray *h = blk_host_new(dt, rank, shape);
	blk_host_poison(h);
	return h;
}

/* ---- matmul and matmul_acc ---- */

static void matmul_case(const char *file, const char *name, const char *T, int64_t M,
                        int64_t N, int64_t K, const BlkDefine *extra, int nextra)
{
	BlkDefine defs[4] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, file, name, defs, 1 + nextra);
	BlkDType dt = dtype_of(T);
	BlkHostArray *arr[3] = { input(dt, 2, M, K), input(dt, 2, K, N), output(dt, 2, M, N) };
	double *ref = calloc((size_t)(M * N) + 1, sizeof *ref);
	for (int64_t i = 0; i < M; i++)
		for (int64_t k = 0; k < K; k++) {
			double a = blk_host_get(arr[0], (size_t)(i * K + k));
			for (int64_t j = 0; j < N; j++)
				ref[i * N + j] += a * blk_host_get(arr[1], (size_t)(k * N + j));
		}
	char what[128];
	snprintf(what, sizeof what, "%s T=%s %" PRId64 "x%" PRId64 "x%" PRId64 "%s", name, T, M,
	         N, K, nextra ? " (blocks overridden)" : "");
	run_and_check(&r, arr, 3, 2, ref, what);
	free(ref);
	for (int i = 0; i < 3; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void matmul_all(const char *file, const char *name)
{
	static const BlkDefine small[] = { { "BM", "32" }, { "BN", "16" }, { "BK", "8" } };
	for (int t = 0; t < 3; t++) {
		matmul_case(file, name, dtypes[t], 128, 64, 64, NULL, 0);
		matmul_case(file, name, dtypes[t], 130, 70, 33, NULL, 0);
		matmul_case(file, name, dtypes[t], 1, 1, 1, NULL, 0);
		matmul_case(file, name, dtypes[t], 130, 70, 33, small, 3);
	}
}

static void test_matmul(void **state)
{
	(void)state;
	matmul_all("matmul.blk", "matmul");
}

static void test_matmul_acc(void **state)
{
	(void)state;
	matmul_all("matmul_acc.blk", "matmul_acc");
}

/* ---- add ---- */

static void add_case(const char *T, int64_t n, const char *B)
{
	BlkDefine defs[2] = { { "T", T }, { "B", B } };
	Run r;
	compile(&r, "add.blk", "add", defs, B ? 2 : 1);
	BlkDType dt = dtype_of(T);
	BlkHostArray *arr[3] = { input(dt, 1, n, 0), input(dt, 1, n, 0), output(dt, 1, n, 0) };
	double *ref = calloc((size_t)n + 1, sizeof *ref);
	for (int64_t i = 0; i < n; i++)
		ref[i] = blk_host_get(arr[0], (size_t)i) + blk_host_get(arr[1], (size_t)i);
	char what[64];
	snprintf(what, sizeof what, "add T=%s N=%" PRId64 " B=%s", T, n, B ? B : "default");
	run_and_check(&r, arr, 3, 2, ref, what);
	free(ref);
	for (int i = 0; i < 3; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void test_add(void **state)
{
	(void)state;
	for (int t = 0; t < 3; t++) {
		add_case(dtypes[t], 1000, NULL);
		add_case(dtypes[t], 1, NULL);
		add_case(dtypes[t], 4096, NULL);
		add_case(dtypes[t], 1000, "128");
	}
}

/* ---- softmax ---- */

static void softmax_case(const char *T, int64_t R, int64_t C, const char *BR)
{
	BlkDefine defs[2] = { { "T", T }, { "BR", BR } };
	Run r;
	compile(&r, "softmax.blk", "softmax", defs, BR ? 2 : 1);
	BlkDType dt = dtype_of(T);
	BlkHostArray *arr[2] = { input(dt, 2, R, C), output(dt, 2, R, C) };
	double *ref = calloc((size_t)(R * C) + 1, sizeof *ref);
	for (int64_t i = 0; i < R; i++) {
		double m = -INFINITY, s = 0;
		for (int64_t j = 0; j < C; j++)
			m = fmax(m, blk_host_get(arr[0], (size_t)(i * C + j)));
		for (int64_t j = 0; j < C; j++)
			s += ref[i * C + j] = exp(blk_host_get(arr[0], (size_t)(i * C + j)) - m);
		for (int64_t j = 0; j < C; j++)
			ref[i * C + j] /= s;
	}
	char what[64];
	snprintf(what, sizeof what, "softmax T=%s %" PRId64 "x%" PRId64 " BR=%s", T, R, C,
	         BR ? BR : "default");
	run_and_check(&r, arr, 2, 1, ref, what);
	free(ref);
	for (int i = 0; i < 2; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void test_softmax(void **state)
{
	(void)state;
	for (int t = 0; t < 3; t++) {
		softmax_case(dtypes[t], 13, 77, NULL);
		softmax_case(dtypes[t], 8, 64, NULL);
		softmax_case(dtypes[t], 13, 77, "3");
	}
}

int main(void)
{
	const char *s = getenv("BLK_TEST_SEED");
	seed0 = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	seed = seed0;
	printf("# seed %llu (BLK_TEST_SEED=%llu replays it)\n", (unsigned long long)seed0,
	       (unsigned long long)seed0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_matmul_acc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
