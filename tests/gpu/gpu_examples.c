/* gpu_examples.c - every example kernel on the GPU against the interpreter.
 *
 * Each case runs one example at one dtype and shape: the same seeded random
 * inputs go to blk_interp_run (the oracle) and to the GPU; outputs are
 * poisoned (NaN) on both sides first, so an unwritten element fails; every
 * element is compared with the dtype's tolerance relative to the output's
 * magnitude (ir/hostdata.h).  Exits 77 (meson's "skipped") without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk.h"
#include "gpu_test.h"
#include "frontend/frontend.h"
#include "ir/hostdata.h"

#ifndef BLK_EXAMPLES_DIR
#define BLK_EXAMPLES_DIR "examples"
#endif

enum { MAX_ARRAYS = 4 };

/* $BLK_EXAMPLES_DIR first: on the GPU machine the tree sits elsewhere. */
static void example_path(char *buf, size_t len, const char *kernel)
{
	const char *dir = getenv("BLK_EXAMPLES_DIR");
	snprintf(buf, len, "%s/%s.blk", dir && *dir ? dir : BLK_EXAMPLES_DIR, kernel);
}

/* An example at one shape: its arrays' shapes; the last array is the output. */
typedef struct Case {
	const char *kernel; /* also the file name: examples/KERNEL.blk */
	const char *label;  /* the shape, for the table */
	int narrays, rank;
	int64_t shapes[MAX_ARRAYS][2];
	const char *defines[4]; /* extra compile-time parameters, "NAME=VALUE" */
} Case;

#define MM(M, N, K, name, defs) {name, #M "x" #N "x" #K, 3, 2, {{M, K}, {K, N}, {M, N}}, defs}
#define NONE {NULL}
/* The benchmark's f32 configuration: 8x8 register micro-tiles. */
#define BIG {"BM=128", "BN=128", "BK=16", "num_warps=8"}
static const Case cases[] = {
	MM(256, 256, 256, "matmul", NONE),
	MM(130, 70, 33, "matmul", NONE),
	MM(256, 256, 256, "matmul", BIG),
	MM(300, 200, 77, "matmul", BIG),
	MM(256, 256, 256, "matmul_acc", NONE),
	MM(130, 70, 33, "matmul_acc", NONE),
	{"add", "4096", 3, 1, {{4096}, {4096}, {4096}}, NONE},
	{"add", "1000", 3, 1, {{1000}, {1000}, {1000}}, NONE},
	{"softmax", "64x128", 2, 2, {{64, 128}, {64, 128}}, NONE},
	{"softmax", "13x77", 2, 2, {{13, 77}, {13, 77}}, NONE},
	/* One row per program: a row spans warps (shuffles, then shared memory). */
	{"softmax", "5x1000", 2, 2, {{5, 1000}, {5, 1000}}, {"BR=1"}},
};

/* The case's defines plus T=dtype, as BlkDefine (strings kept in buf). */
static int case_defines(const Case *c, BlkDType dt, BlkDefine *defs, char buf[][64])
{
	int n = 0;
	defs[n++] = (BlkDefine){"T", blk_dtype_name(dt)};
	for (int i = 0; i < 4 && c->defines[i]; i++) {
		snprintf(buf[i], 64, "%s", c->defines[i]);
		char *eq = strchr(buf[i], '=');
		*eq = 0;
		defs[n++] = (BlkDefine){buf[i], eq + 1};
	}
	return n;
}
static const BlkDType dtypes[] = {BLK_F32, BLK_F16, BLK_BF16};

/* Host arrays of one case: inputs random, output poisoned. */
typedef struct Arrays {
	int n;
	BlkHostArray *h[MAX_ARRAYS];
} Arrays;

static bool arrays_make(Arrays *a, const Case *c, BlkDType dt, uint64_t seed)
{
	a->n = c->narrays;
	for (int i = 0; i < c->narrays; i++) {
		a->h[i] = blk_host_new(dt, c->rank, c->shapes[i]);
		if (!a->h[i])
			return false;
		if (i < c->narrays - 1)
			blk_host_fill_random(a->h[i], seed + (uint64_t)i);
		else
			blk_host_poison(a->h[i]);
	}
	return true;
}

static void arrays_free(Arrays *a)
{
	for (int i = 0; i < a->n; i++)
		blk_host_free(a->h[i]);
}

/* The oracle: the interpreter on the same inputs; out gets its result. */
static bool interp_reference(const Case *c, BlkDType dt, Arrays *in, double *ref)
{
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 5);
	char path[512];
	example_path(path, sizeof path, c->kernel);
	BlkDefine defs[5];
	char buf[4][64];
	int ndefs = case_defines(c, dt, defs, buf);
	BlkSource *src = blk_source_read(a, d, path);
	BlkModule *m = src ? blk_compile_source(a, d, src, defs, ndefs) : NULL;
	BlkKernel *k = m ? blk_module_find(m, c->kernel) : NULL;
	BlkArrayDesc descs[MAX_ARRAYS];
	void *data[MAX_ARRAYS];
	for (int i = 0; i < in->n; i++) {
		descs[i] = in->h[i]->desc;
		data[i] = in->h[i]->data;
	}
	bool ok = k && blk_interp_run(k, descs, data, in->n, stdout, d);
	BlkHostArray *out = in->h[in->n - 1];
	for (size_t i = 0; ok && i < out->count; i++)
		ref[i] = blk_host_get(out, i);
	blk_arena_destroy(a);
	return ok;
}

/* Copies inputs and the poisoned output over, launches, copies back. */
static bool gpu_run(BlkRuntime *rt, const Case *c, BlkDType dt, Arrays *host)
{
	char def[32];
	snprintf(def, sizeof def, "T=%s", blk_dtype_name(dt));
	const char *defs[5] = {def};
	int ndefs = 1;
	for (int i = 0; i < 4 && c->defines[i]; i++)
		defs[ndefs++] = c->defines[i];
	char path[512];
	example_path(path, sizeof path, c->kernel);
	BlkProgram *p = blk_program_load(rt, path, defs, ndefs);
	BlkFunc *f = p ? blk_program_kernel(p, c->kernel) : NULL;
	BlkTensor t[MAX_ARRAYS];
	void *dev[MAX_ARRAYS] = {0};
	bool ok = f != NULL;
	for (int i = 0; ok && i < host->n; i++) {
		BlkHostArray *h = host->h[i];
		ok = blk_mem_alloc(rt, h->nbytes, &dev[i]) && blk_memcpy_htod(rt, dev[i], h->data, h->nbytes);
		t[i] = blk_tensor_make(dev[i], (int)dt, h->desc.rank, h->desc.shape);
	}
	ok = ok && blk_launch(f, t, host->n, NULL) && blk_synchronize(rt);
	BlkHostArray *out = host->h[host->n - 1];
	ok = ok && blk_memcpy_dtoh(rt, out->data, dev[host->n - 1], out->nbytes);
	if (!ok)
		printf("  error: %s\n", blk_runtime_last_error(rt));
	for (int i = 0; i < host->n; i++)
		blk_mem_free(rt, dev[i]);
	blk_program_destroy(p);
	return ok;
}

/* One table row; true on PASS. */
static bool run_case(BlkRuntime *rt, const Case *c, BlkDType dt, uint64_t seed)
{
	Arrays ref_in = {0}, gpu = {0};
	double *ref = NULL;
	bool ok = arrays_make(&ref_in, c, dt, seed) && arrays_make(&gpu, c, dt, seed);
	BlkHostArray *out = ok ? gpu.h[gpu.n - 1] : NULL;
	ok = ok && (ref = malloc(out->count * sizeof *ref)) != NULL;
	bool have_ref = ok && interp_reference(c, dt, &ref_in, ref);
	bool ran = have_ref && gpu_run(rt, c, dt, &gpu);
	BlkHostCompare cmp = {0};
	double tol = blk_host_default_tol(dt);
	bool pass = ran && blk_host_compare(out, ref, tol, &cmp);
	char label[128];
	int n = snprintf(label, sizeof label, "%s", c->label);
	for (int i = 0; i < 4 && c->defines[i] && n < (int)sizeof label; i++)
		n += snprintf(label + n, sizeof label - (size_t)n, "%s%s", i ? "," : " ", c->defines[i]);
	printf("| %-10s | %-4s | %-45s | %9.2e | %7.0e | %s", c->kernel, blk_dtype_name(dt), label,
	       cmp.max_rel, tol, pass ? "PASS" : "FAIL");
	if (!have_ref)
		printf(" (no interpreter reference)");
	else if (ran && !pass)
		printf(" (%zu bad, first at %zu: %g vs %g; %zu unwritten)", cmp.mismatches, cmp.first_bad,
		       cmp.bad_out, cmp.bad_ref, blk_host_count_poison(out));
	printf(" |\n");
	free(ref);
	arrays_free(&ref_in);
	arrays_free(&gpu);
	return pass;
}

int main(void)
{
	int status;
	BlkRuntime *rt = gpu_test_runtime("gpu-examples", &status);
	if (!rt)
		return status;
	printf("| kernel     | type | shape and parameters                          | max rel   | tol     | result |\n");
	printf("| ---------- | ---- | --------------------------------------------- | --------- | ------- | ------ |\n");
	int failed = 0, total = 0;
	uint64_t seed = 1;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (size_t j = 0; j < sizeof dtypes / sizeof dtypes[0]; j++, total++)
			failed += !run_case(rt, &cases[i], dtypes[j], seed += 16);
	printf("\n%d of %d cases passed\n", total - failed, total);
	blk_runtime_destroy(rt);
	return failed ? 1 : 0;
}
