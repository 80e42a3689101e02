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
#include "interp/interp.h"
#include "tools/hostdata.h"

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

/* A rank-2 or rank-3 array: [d0, d1] when batch is 0, else [batch, d0, d1];
 * random (in), poisoned (out) or zeroed (neither). */
enum Fill { FILL_RANDOM, FILL_POISON, FILL_ZERO };

static BlkHostArray *batched(BlkDType dt, int64_t batch, int64_t d0, int64_t d1, enum Fill f)
{
	int64_t shape[] = { batch, d0, d1 };
	BlkHostArray *h = batch ? blk_host_new(dt, 3, shape) : blk_host_new(dt, 2, shape + 1);
	if (f == FILL_RANDOM)
		blk_host_fill_random(h, seed++);
	else if (f == FILL_POISON)
		blk_host_poison(h);
	return h;
}

/* ---- the matmul family: matmul, matmul_acc, matmul_nt, matmul_epilogue,
 * bmm, matmul_splitk: one reference, C = act(A @ op(B) + bias) per batch ---- */

typedef struct Gemm {
	const char *file, *name;
	bool nt;      /* B is stored [N, K] */
	bool bias;    /* a [N] bias, then gelu (tanh approximation) */
	bool splitk;  /* C is f32 and zeroed, the kernel adds into it */
} Gemm;

static double gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* ref[b][i][j] = act(sum_k a[b][i][k] * B(b, k, j) + bias[j]). */
static void gemm_reference(const Gemm *g, BlkHostArray **arr, int64_t bt, int64_t M, int64_t N,
                           int64_t K, double *ref)
{
	for (int64_t b = 0; b < bt; b++)
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double acc = 0;
				for (int64_t k = 0; k < K; k++) {
					size_t ib = (size_t)(g->nt ? (b * N + j) * K + k : (b * K + k) * N + j);
					acc += blk_host_get(arr[0], (size_t)((b * M + i) * K + k)) *
					       blk_host_get(arr[1], ib);
				}
				if (g->bias)
					acc = gelu_tanh(acc + blk_host_get(arr[2], (size_t)j));
				ref[(b * M + i) * N + j] = acc;
			}
}

/* One case: bt batches (0: the arrays have no batch dim) of M x N x K in
 * dtype T. */
static void gemm_case(const Gemm *g, const char *T, int64_t bt, int64_t M, int64_t N, int64_t K,
                      const BlkDefine *extra, int nextra)
{
	BlkDefine defs[6] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, g->file, g->name, defs, 1 + nextra);
	BlkDType dt = dtype_of(T);
	int n = 0;
	BlkHostArray *arr[4];
	arr[n++] = batched(dt, bt, M, K, FILL_RANDOM);
	arr[n++] = g->nt ? batched(dt, bt, N, K, FILL_RANDOM) : batched(dt, bt, K, N, FILL_RANDOM);
	if (g->bias)
		arr[n++] = input(dt, 1, N, 0);
	arr[n++] = batched(g->splitk ? BLK_F32 : dt, bt, M, N, g->splitk ? FILL_ZERO : FILL_POISON);
	int64_t nb = bt ? bt : 1;
	double *ref = calloc((size_t)(nb * M * N) + 1, sizeof *ref);
	gemm_reference(g, arr, nb, M, N, K, ref);
	char what[160];
	snprintf(what, sizeof what, "%s T=%s %" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 "%s",
	         g->name, T, nb, M, N, K, nextra ? " (blocks overridden)" : "");
	run_and_check(&r, arr, n, n - 1, ref, what);
	free(ref);
	for (int i = 0; i < n; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

/* Block multiples, odd sizes, 1x1x1 and small overridden blocks, every
 * dtype; bt batches (0: the kernel has no batch dim). */
static void gemm_all(const Gemm *g, int64_t bt)
{
	static const BlkDefine small[] = { { "BM", "32" }, { "BN", "16" }, { "BK", "8" } };
	for (int t = 0; t < 3; t++) {
		gemm_case(g, dtypes[t], bt, 128, 64, 64, NULL, 0);
		gemm_case(g, dtypes[t], bt, 130, 70, 33, NULL, 0);
		gemm_case(g, dtypes[t], bt, 1, 1, 1, NULL, 0);
		gemm_case(g, dtypes[t], bt, 130, 70, 33, small, 3);
	}
}

static void test_matmul(void **state)
{
	(void)state;
	gemm_all(&(Gemm){ .file = "matmul.blk", .name = "matmul" }, 0);
}

static void test_matmul_acc(void **state)
{
	(void)state;
	gemm_all(&(Gemm){ .file = "matmul_acc.blk", .name = "matmul_acc" }, 0);
}

static void test_matmul_nt(void **state)
{
	(void)state;
	gemm_all(&(Gemm){ .file = "matmul_nt.blk", .name = "matmul_nt", .nt = true }, 0);
}

static void test_matmul_dynamic(void **state)
{
	(void)state;
	gemm_all(&(Gemm){ .file = "matmul_dynamic.blk", .name = "matmul_dynamic", .nt = true }, 0);
}

static void test_matmul_epilogue(void **state)
{
	(void)state;
	gemm_all(&(Gemm){ .file = "matmul_epilogue.blk", .name = "matmul_epilogue", .bias = true }, 0);
}

static void test_bmm(void **state)
{
	(void)state;
	const Gemm g = { .file = "bmm.blk", .name = "bmm" };
	gemm_all(&g, 3);
	gemm_case(&g, "f32", 1, 64, 64, 64, NULL, 0);
}

/* Split-K: also more splits than K chunks (empty splits add zeros) and a
 * K that splits unevenly. */
static void test_matmul_splitk(void **state)
{
	(void)state;
	const Gemm g = { .file = "matmul_splitk.blk", .name = "matmul_splitk", .splitk = true };
	static const BlkDefine s3[] = { { "S", "3" }, { "BK", "16" } };
	static const BlkDefine s8[] = { { "S", "8" } };
	gemm_all(&g, 0);
	for (int t = 0; t < 3; t++) {
		gemm_case(&g, dtypes[t], 0, 70, 130, 333, s3, 2);
		gemm_case(&g, dtypes[t], 0, 64, 64, 64, s8, 1);
	}
}

/* ---- swiglu: H = silu(x @ w1^T) * (x @ w3^T) ---- */

static void swiglu_case(const char *T, int64_t M, int64_t N, int64_t K, const BlkDefine *extra, int nextra)
{
	BlkDefine defs[6] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, "swiglu.blk", "swiglu", defs, 1 + nextra);
	BlkDType dt = dtype_of(T);
	BlkHostArray *arr[4] = { input(dt, 2, M, K), input(dt, 2, N, K), input(dt, 2, N, K),
	                         batched(dt, 0, M, N, FILL_POISON) };
	double *ref = calloc((size_t)(M * N) + 1, sizeof *ref);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double g = 0, u = 0;
			for (int64_t k = 0; k < K; k++) {
				double x = blk_host_get(arr[0], (size_t)(i * K + k));
				g += x * blk_host_get(arr[1], (size_t)(j * K + k));
				u += x * blk_host_get(arr[2], (size_t)(j * K + k));
			}
			ref[i * N + j] = g / (1.0 + exp(-g)) * u;
		}
	char what[96];
	snprintf(what, sizeof what, "swiglu T=%s %" PRId64 "x%" PRId64 "x%" PRId64 "%s", T, M, N, K,
	         nextra ? " (blocks given)" : "");
	run_and_check(&r, arr, 4, 3, ref, what);
	free(ref);
	for (int i = 0; i < 4; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

/* The example's blocks are `auto` (the interpreter runs the stand-ins);
 * also small blocks given, ragged against every size. */
static void test_swiglu(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BM", "32" }, { "BN", "16" }, { "BK", "8" } };
	for (int t = 0; t < 3; t++) {
		swiglu_case(dtypes[t], 64, 48, 40, NULL, 0);
		swiglu_case(dtypes[t], 1, 1, 1, NULL, 0);
		swiglu_case(dtypes[t], 70, 33, 45, small, 3);
	}
}

/* ---- conv2d: a 3x3 NHWC convolution, stride 1, padding 1 ---- */

static void conv2d_case(const char *T, int64_t N, int64_t H, int64_t W, int64_t C, int64_t OC,
                        const BlkDefine *extra, int nextra)
{
	BlkDefine defs[6] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, "conv2d.blk", "conv2d", defs, 1 + nextra);
	BlkDType dt = dtype_of(T);
	int64_t xs[4] = { N, H, W, C };
	BlkHostArray *x = blk_host_new(dt, 4, xs);
	blk_host_fill_random(x, seed++);
	BlkHostArray *arr[3] = { x, input(dt, 2, 9 * C, OC), output(dt, 2, N * H * W, OC) };
	double *ref = calloc((size_t)(N * H * W * OC) + 1, sizeof *ref);
	for (int64_t m = 0; m < N * H * W; m++)
		for (int64_t o = 0; o < OC; o++) {
			int64_t n = m / (H * W), p = m / W % H, q = m % W;
			double acc = 0;
			for (int64_t t = 0; t < 9; t++) {
				int64_t h = p + t / 3 - 1, v = q + t % 3 - 1;
				if (h < 0 || h >= H || v < 0 || v >= W)
					continue; /* the padding */
				for (int64_t c = 0; c < C; c++)
					acc += blk_host_get(x, (size_t)(((n * H + h) * W + v) * C + c)) *
					       blk_host_get(arr[1], (size_t)((t * C + c) * OC + o));
			}
			ref[m * OC + o] = acc;
		}
	char what[128];
	snprintf(what, sizeof what, "conv2d T=%s %" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 " -> %" PRId64 "%s",
	         T, N, H, W, C, OC, nextra ? " (blocks given)" : "");
	run_and_check(&r, arr, 3, 2, ref, what);
	free(ref);
	for (int i = 0; i < 3; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

/* `auto` blocks (the interpreter's stand-ins), and small blocks given:
 * channel chunks ragged against C, pixel blocks against N * H * W, one
 * pixel, one channel. */
static void test_conv2d(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BM", "16" }, { "BN", "8" }, { "BK", "8" } };
	for (int t = 0; t < 3; t++) {
		conv2d_case(dtypes[t], 2, 5, 6, 12, 10, NULL, 0);
		conv2d_case(dtypes[t], 1, 1, 1, 1, 1, NULL, 0);
		conv2d_case(dtypes[t], 2, 7, 3, 20, 9, small, 3);
	}
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

/* ---- attention ---- */

/* One query row of one head: softmax(q k^T / sqrt(D)) v over the keys the
 * row may see (all S, or the first row+1 with causal), in double. */
static void attention_row(BlkHostArray **arr, int64_t h, int64_t r, int64_t S, int64_t D,
                          bool causal, double *out, double *p)
{
	size_t base = (size_t)(h * S * D);
	int64_t n = causal ? r + 1 : S;
	double m = -INFINITY, l = 0;
	for (int64_t j = 0; j < n; j++) {
		double dot = 0;
		for (int64_t d = 0; d < D; d++)
			dot += blk_host_get(arr[0], base + (size_t)(r * D + d)) *
			       blk_host_get(arr[1], base + (size_t)(j * D + d));
		p[j] = dot / sqrt((double)D);
		m = fmax(m, p[j]);
	}
	for (int64_t j = 0; j < n; j++)
		l += p[j] = exp(p[j] - m);
	for (int64_t d = 0; d < D; d++) {
		double acc = 0;
		for (int64_t j = 0; j < n; j++)
			acc += p[j] * blk_host_get(arr[2], base + (size_t)(j * D + d));
		out[d] = acc / l;
	}
}

static void attention_case(const char *T, int64_t BH, int64_t S, bool causal, const char *D,
                           const BlkDefine *extra, int nextra)
{
	BlkDefine defs[6] = { { "T", T }, { "CAUSAL", causal ? "true" : "false" }, { "D", D } };
	for (int i = 0; i < nextra; i++)
		defs[3 + i] = extra[i];
	Run r;
	compile(&r, "attention.blk", "attention", defs, 3 + nextra);
	BlkDType dt = dtype_of(T);
	int64_t d = atoi(D);
	BlkHostArray *arr[4] = { batched(dt, BH, S, d, FILL_RANDOM), batched(dt, BH, S, d, FILL_RANDOM),
		                 batched(dt, BH, S, d, FILL_RANDOM), batched(dt, BH, S, d, FILL_POISON) };
	double *ref = calloc((size_t)(BH * S * d) + 1, sizeof *ref);
	double *p = calloc((size_t)S + 1, sizeof *p);
	for (int64_t h = 0; h < BH; h++)
		for (int64_t i = 0; i < S; i++)
			attention_row(arr, h, i, S, d, causal, ref + (h * S + i) * d, p);
	char what[128];
	snprintf(what, sizeof what, "attention T=%s BH=%" PRId64 " S=%" PRId64 " D=%s%s%s", T, BH, S,
	         D, causal ? " causal" : "", nextra ? " (blocks overridden)" : "");
	run_and_check(&r, arr, 4, 3, ref, what);
	free(p);
	free(ref);
	for (int i = 0; i < 4; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

/* Block multiples and ragged S, causal or not; BQ != BK, so the diagonal
 * falls inside a KV block and the causal loop stops mid-way. */
static void test_attention(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BQ", "16" }, { "BK", "32" } };
	static const BlkDefine wide[] = { { "BQ", "32" }, { "BK", "16" } };
	for (int t = 0; t < 3; t++)
		for (int c = 0; c < 2; c++) {
			attention_case(dtypes[t], 2, 128, c, "64", NULL, 0);
			attention_case(dtypes[t], 2, 77, c, "64", NULL, 0);
			attention_case(dtypes[t], 1, 1, c, "64", NULL, 0);
			attention_case(dtypes[t], 3, 77, c, "32", small, 2);
			attention_case(dtypes[t], 2, 50, c, "16", wide, 2);
		}
}

/* ---- layernorm and rmsnorm ---- */

/* Row i of x normalized: layernorm (w, b) when b is set, else rmsnorm (w). */
static void norm_row(BlkHostArray **arr, bool layer, int64_t i, int64_t C, double eps, double *out)
{
	double mean = 0, var = 0;
	for (int64_t j = 0; j < C; j++)
		mean += blk_host_get(arr[0], (size_t)(i * C + j));
	mean = layer ? mean / (double)C : 0;
	for (int64_t j = 0; j < C; j++) {
		double d = blk_host_get(arr[0], (size_t)(i * C + j)) - mean;
		var += d * d;
	}
	double inv = 1 / sqrt(var / (double)C + eps);
	for (int64_t j = 0; j < C; j++) {
		double y = (blk_host_get(arr[0], (size_t)(i * C + j)) - mean) * inv *
		           blk_host_get(arr[1], (size_t)j);
		out[j] = layer ? y + blk_host_get(arr[2], (size_t)j) : y;
	}
}

static void norm_case(bool layer, const char *T, int64_t R, int64_t C, const BlkDefine *extra,
                      int nextra)
{
	const char *name = layer ? "layernorm" : "rmsnorm";
	char file[32];
	snprintf(file, sizeof file, "%s.blk", name);
	BlkDefine defs[4] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, file, name, defs, 1 + nextra);
	BlkDType dt = dtype_of(T);
	int n = 0;
	BlkHostArray *arr[4];
	arr[n++] = input(dt, 2, R, C);
	arr[n++] = input(dt, 1, C, 0);
	if (layer)
		arr[n++] = input(dt, 1, C, 0);
	arr[n++] = output(dt, 2, R, C);
	double eps = layer ? 1e-5 : 1e-6;
	for (int i = 0; i < nextra; i++)
		if (strcmp(extra[i].name, "EPS") == 0)
			eps = atof(extra[i].value);
	double *ref = calloc((size_t)(R * C) + 1, sizeof *ref);
	for (int64_t i = 0; i < R; i++)
		norm_row(arr, layer, i, C, eps, ref + i * C);
	char what[96];
	snprintf(what, sizeof what, "%s T=%s %" PRId64 "x%" PRId64 "%s", name, T, R, C,
	         nextra ? " (parameters overridden)" : "");
	run_and_check(&r, arr, n, n - 1, ref, what);
	free(ref);
	for (int i = 0; i < n; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void norm_all(bool layer)
{
	static const BlkDefine rows3[] = { { "BR", "3" }, { "num_warps", "4" } };
	static const BlkDefine eps[] = { { "BR", "4" }, { "EPS", "0.5" } };
	for (int t = 0; t < 3; t++) {
		norm_case(layer, dtypes[t], 8, 64, NULL, 0);
		norm_case(layer, dtypes[t], 13, 77, NULL, 0);
		norm_case(layer, dtypes[t], 13, 77, rows3, 2);
		norm_case(layer, dtypes[t], 9, 1000, eps, 2);
		norm_case(layer, dtypes[t], 1, 1, NULL, 0);
	}
}

static void test_layernorm(void **state)
{
	(void)state;
	norm_all(true);
}

static void test_rmsnorm(void **state)
{
	(void)state;
	norm_all(false);
}

/* ---- colsum and cumsum: x [R, C] in T, one output; ref from x ---- */

typedef void RefFn(const BlkHostArray *x, int64_t R, int64_t C, double *ref);

static void rc_case(const char *kernel, BlkDType out_dt, int out_rank, RefFn *fn, const char *T,
                    int64_t R, int64_t C, const BlkDefine *extra, int nextra)
{
	BlkDefine defs[4] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	char file[32];
	snprintf(file, sizeof file, "%s.blk", kernel);
	compile(&r, file, kernel, defs, 1 + nextra);
	BlkHostArray *arr[2] = { input(dtype_of(T), 2, R, C),
	                         out_rank == 1 ? output(out_dt, 1, C, 0) : output(out_dt, 2, R, C) };
	double *ref = calloc((size_t)(R * C) + 1, sizeof *ref);
	fn(arr[0], R, C, ref);
	char what[96];
	snprintf(what, sizeof what, "%s T=%s %" PRId64 "x%" PRId64 "%s", kernel, T, R, C,
	         nextra ? " (blocks overridden)" : "");
	run_and_check(&r, arr, 2, 1, ref, what);
	free(ref);
	for (int i = 0; i < 2; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void colsum_ref(const BlkHostArray *x, int64_t R, int64_t C, double *ref)
{
	for (int64_t i = 0; i < R; i++)
		for (int64_t j = 0; j < C; j++)
			ref[j] += blk_host_get(x, (size_t)(i * C + j));
}

static void colsum_case(const char *T, int64_t R, int64_t C, const BlkDefine *extra, int nextra)
{
	rc_case("colsum", BLK_F32, 1, colsum_ref, T, R, C, extra, nextra);
}

static void test_colsum(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BR", "8" }, { "BC", "16" } };
	for (int t = 0; t < 3; t++) {
		colsum_case(dtypes[t], 256, 128, NULL, 0);
		colsum_case(dtypes[t], 130, 77, NULL, 0);
		colsum_case(dtypes[t], 1, 1, NULL, 0);
		colsum_case(dtypes[t], 130, 77, small, 2);
	}
}

/* ---- cumsum ---- */

static void cumsum_ref(const BlkHostArray *x, int64_t R, int64_t C, double *ref)
{
	for (int64_t i = 0; i < R; i++)
		for (int64_t j = 0; j < C; j++)
			ref[i * C + j] = (j ? ref[i * C + j - 1] : 0) + blk_host_get(x, (size_t)(i * C + j));
}

static void cumsum_case(const char *T, int64_t R, int64_t C, const BlkDefine *extra, int nextra)
{
	rc_case("cumsum", dtype_of(T), 2, cumsum_ref, T, R, C, extra, nextra);
}

static void test_cumsum(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BR", "3" }, { "BC", "16" } };
	for (int t = 0; t < 3; t++) {
		cumsum_case(dtypes[t], 8, 2048, NULL, 0);
		cumsum_case(dtypes[t], 13, 3001, NULL, 0);
		cumsum_case(dtypes[t], 1, 1, NULL, 0);
		cumsum_case(dtypes[t], 13, 77, small, 2);
	}
}

/* ---- linear_recurrence: h = a h_prev + x along rows, from a and x ---- */

static void recurrence_case(const char *T, int64_t R, int64_t S, const BlkDefine *extra, int nextra)
{
	BlkDefine defs[4] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, "linear_recurrence.blk", "linear_recurrence", defs, 1 + nextra);
	BlkHostArray *arr[3] = { input(dtype_of(T), 2, R, S), input(dtype_of(T), 2, R, S),
	                         output(dtype_of(T), 2, R, S) };
	double *ref = calloc((size_t)(R * S) + 1, sizeof *ref);
	for (int64_t i = 0; i < R; i++)
		for (int64_t t = 0; t < S; t++) {
			size_t e = (size_t)(i * S + t);
			ref[e] = (t ? blk_host_get(arr[0], e) * ref[e - 1] : 0) + blk_host_get(arr[1], e);
		}
	char what[96];
	snprintf(what, sizeof what, "linear_recurrence T=%s %" PRId64 "x%" PRId64 "%s", T, R, S,
	         nextra ? " (blocks overridden)" : "");
	run_and_check(&r, arr, 3, 2, ref, what);
	free(ref);
	for (int i = 0; i < 3; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void test_linear_recurrence(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BR", "3" }, { "BT", "8" } };
	for (int t = 0; t < 3; t++) {
		recurrence_case(dtypes[t], 64, 256, NULL, 0);
		recurrence_case(dtypes[t], 13, 333, NULL, 0);
		recurrence_case(dtypes[t], 1, 1, NULL, 0);
		recurrence_case(dtypes[t], 13, 77, small, 2);
	}
}

/* ---- embedding: ids random in -8..8, so some rows are outside the table ---- */

static void embedding_case(const char *T, int64_t N, int64_t V, int64_t D, const BlkDefine *extra, int nextra)
{
	BlkDefine defs[4] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	Run r;
	compile(&r, "embedding.blk", "embedding", defs, 1 + nextra);
	BlkHostArray *arr[3] = { input(BLK_I32, 1, N, 0), input(dtype_of(T), 2, V, D), output(dtype_of(T), 2, N, D) };
	double *ref = calloc((size_t)(N * D) + 1, sizeof *ref);
	for (int64_t i = 0; i < N; i++) {
		int64_t id = (int64_t)blk_host_get(arr[0], (size_t)i);
		for (int64_t j = 0; j < D && id >= 0 && id < V; j++)
			ref[i * D + j] = blk_host_get(arr[1], (size_t)(id * D + j));
	}
	char what[96];
	snprintf(what, sizeof what, "embedding T=%s %" PRId64 "x%" PRId64 "x%" PRId64, T, N, V, D);
	run_and_check(&r, arr, 3, 2, ref, what);
	free(ref);
	for (int i = 0; i < 3; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void test_embedding(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BN", "8" }, { "BD", "32" } };
	for (int t = 0; t < 3; t++) {
		embedding_case(dtypes[t], 100, 9, 1000, NULL, 0);
		embedding_case(dtypes[t], 45, 5, 77, small, 2);
	}
}

/* ---- grouped_matmul: ragged groups (random sizes, some empty) ---- */

static void grouped_case(const char *T, int G, int64_t K, int64_t N, int bm, const BlkDefine *extra,
                         int nextra)
{
	BlkDefine defs[6] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	int64_t size[16], M = 0, W = 0;
	uint64_t s = seed++;
	for (int g = 0; g < G; g++) { /* 0 .. 3 blocks and a bit, a quarter empty */
		s = s * 6364136223846793005u + 1442695040888963407u;
		size[g] = (s >> 33) % 4 == 0 ? 0 : (int64_t)((s >> 40) % (uint64_t)(3 * bm + 7));
		M += size[g];
	}
	if (M == 0) /* an all-empty draw: one row in the last group */
		size[G - 1] = M = 1;
	Run r;
	compile(&r, "grouped_matmul.blk", "grouped_matmul", defs, 1 + nextra);
	int32_t work[64][4];
	for (int64_t g = 0, lo = 0; g < G; lo += size[g++])
		for (int64_t b = lo / bm; size[g] && b <= (lo + size[g] - 1) / bm; b++, W++) {
			work[W][0] = (int32_t)b, work[W][1] = (int32_t)g;
			work[W][2] = (int32_t)lo, work[W][3] = (int32_t)(lo + size[g]);
		}
	BlkHostArray *arr[4] = { input(BLK_I32, 2, W, 4), input(dtype_of(T), 2, M, K), NULL,
	                         output(dtype_of(T), 2, M, N) };
	int64_t ws[3] = { G, K, N };
	arr[2] = blk_host_new(dtype_of(T), 3, ws);
	blk_host_fill_random(arr[2], seed++);
	for (int64_t i = 0; i < W * 4; i++)
		blk_host_set(arr[0], (size_t)i, work[i / 4][i % 4]);
	double *ref = calloc((size_t)(M * N) + 1, sizeof *ref);
	for (int64_t g = 0, lo = 0; g < G; lo += size[g++])
		for (int64_t i = lo; i < lo + size[g]; i++)
			for (int64_t j = 0; j < N; j++)
				for (int64_t k = 0; k < K; k++)
					ref[i * N + j] += blk_host_get(arr[1], (size_t)(i * K + k)) *
					                  blk_host_get(arr[2], (size_t)((g * K + k) * N + j));
	char what[96];
	snprintf(what, sizeof what, "grouped_matmul T=%s G=%d M=%" PRId64 " K=%" PRId64 " N=%" PRId64,
	         T, G, M, K, N);
	run_and_check(&r, arr, 4, 3, ref, what);
	free(ref);
	for (int i = 0; i < 4; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void test_grouped_matmul(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BM", "16" }, { "BN", "32" }, { "BK", "16" } };
	for (int t = 0; t < 3; t++) {
		grouped_case(dtypes[t], 4, 64, 128, 128, NULL, 0);
		grouped_case(dtypes[t], 7, 33, 70, 16, small, 3);
	}
}

/* ---- matmul_int8 (W8A8, i8 and u8) and matmul_fp8 (e4m3, e5m2): x @ w.T
 * scaled per row of x and of w, f32 out.  The reference: int8's exact
 * integer sums scaled in f32 as the kernel does; fp8's in double. */

static void scaled_case(const char *kernel, const char *T, BlkDType dt, int64_t M, int64_t N, int64_t K,
                        const BlkDefine *extra, int nextra)
{
	BlkDefine defs[6] = { { "T", T }, { "OUT", "f32" } };
	for (int i = 0; i < nextra; i++)
		defs[2 + i] = extra[i];
	Run r;
	char file[48];
	snprintf(file, sizeof file, "%s.blk", kernel);
	compile(&r, file, kernel, defs, 2 + nextra);
	BlkHostArray *arr[5] = { input(dt, 2, M, K), input(dt, 2, N, K), input(BLK_F32, 1, M, 0),
	                         input(BLK_F32, 1, N, 0), output(BLK_F32, 2, M, N) };
	double *ref = calloc((size_t)(M * N) + 1, sizeof *ref);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0, sx = blk_host_get(arr[2], (size_t)i), sw = blk_host_get(arr[3], (size_t)j);
			for (int64_t k = 0; k < K; k++)
				s += blk_host_get(arr[0], (size_t)(i * K + k)) * blk_host_get(arr[1], (size_t)(j * K + k));
			ref[i * N + j] = blk_dtype_is_fp8(dt) ? s * sx * sw : (double)(float)((float)s * (float)sx * (float)sw);
		}
	char what[96];
	snprintf(what, sizeof what, "%s T=%s %" PRId64 "x%" PRId64 "x%" PRId64, kernel, T, M, N, K);
	run_and_check(&r, arr, 5, 4, ref, what);
	free(ref);
	for (int i = 0; i < 5; i++)
		blk_host_free(arr[i]);
	run_free(&r);
}

static void test_matmul_int8(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BM", "16" }, { "BN", "32" }, { "BK", "8" } };
	scaled_case("matmul_int8", "i8", BLK_I8, 130, 70, 77, NULL, 0);
	scaled_case("matmul_int8", "u8", BLK_U8, 130, 70, 77, NULL, 0);
	scaled_case("matmul_int8", "i8", BLK_I8, 64, 64, 256, small, 3);
}

static void test_matmul_fp8(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "BM", "16" }, { "BN", "32" }, { "BK", "8" } };
	scaled_case("matmul_fp8", "f8e4m3", BLK_F8E4M3, 130, 70, 77, NULL, 0);
	scaled_case("matmul_fp8", "f8e5m2", BLK_F8E5M2, 130, 70, 77, NULL, 0);
	scaled_case("matmul_fp8", "f8e4m3", BLK_F8E4M3, 64, 64, 256, small, 3);
}

/* ---- paged_attention: a page table that scatters each sequence ---- */

static void paged_case(const char *T, int64_t B, int64_t MP, int64_t KVH, int64_t NP,
                       const BlkDefine *extra, int nextra)
{
	BlkDefine defs[6] = { { "T", T } };
	for (int i = 0; i < nextra; i++)
		defs[1 + i] = extra[i];
	int64_t G = 8, PS = 16, D = 128;
	for (int i = 0; i < nextra; i++) {
		int64_t v = strtoll(extra[i].value, NULL, 10);
		G = strcmp(extra[i].name, "G") == 0 ? v : G;
		PS = strcmp(extra[i].name, "PS") == 0 ? v : PS;
		D = strcmp(extra[i].name, "D") == 0 ? v : D;
	}
	Run r;
	compile(&r, "paged_attention.blk", "paged_attention", defs, 1 + nextra);
	BlkDType dt = dtype_of(T);
	int64_t sq[4] = { B, KVH, G, D }, sc[4] = { KVH, NP, PS, D };
	BlkHostArray *arr[6] = { input(BLK_I32, 2, B, MP), input(BLK_I32, 1, B, 0), blk_host_new(dt, 4, sq),
	                         blk_host_new(dt, 4, sc), blk_host_new(dt, 4, sc), blk_host_new(dt, 4, sq) };
	for (int i = 2; i < 5; i++)
		blk_host_fill_random(arr[i], seed++);
	blk_host_poison(arr[5]);
	uint64_t s = seed++;
	for (int64_t b = 0; b < B; b++) { /* lengths 0 .. MP*PS, pages anywhere in the cache */
		s = s * 6364136223846793005u + 1442695040888963407u;
		blk_host_set(arr[1], (size_t)b, b == 0 ? 0 : (double)((s >> 33) % (uint64_t)(MP * PS + 1)));
		for (int64_t p = 0; p < MP; p++) {
			s = s * 6364136223846793005u + 1442695040888963407u;
			blk_host_set(arr[0], (size_t)(b * MP + p), (double)((s >> 33) % (uint64_t)NP));
		}
	}
	double *ref = calloc((size_t)(B * KVH * G * D) + 1, sizeof *ref), *sc_ = calloc((size_t)(MP * PS) + 1, sizeof *sc_);
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < KVH; h++)
			for (int64_t g = 0; g < G; g++) {
				int64_t len = (int64_t)blk_host_get(arr[1], (size_t)b), n = len, qo = ((b * KVH + h) * G + g) * D;
				double mx = -INFINITY, l = 0;
				for (int64_t t = 0; t < n; t++) {
					int64_t page = (int64_t)blk_host_get(arr[0], (size_t)(b * MP + t / PS));
					int64_t ko = ((h * NP + page) * PS + t % PS) * D;
					double dotv = 0;
					for (int64_t d = 0; d < D; d++)
						dotv += blk_host_get(arr[2], (size_t)(qo + d)) * blk_host_get(arr[3], (size_t)(ko + d));
					sc_[t] = dotv / sqrt((double)D);
					mx = sc_[t] > mx ? sc_[t] : mx;
				}
				for (int64_t t = 0; t < n; t++)
					l += exp(sc_[t] - mx);
				for (int64_t t = 0; t < n; t++) {
					int64_t page = (int64_t)blk_host_get(arr[0], (size_t)(b * MP + t / PS));
					int64_t vo = ((h * NP + page) * PS + t % PS) * D;
					for (int64_t d = 0; d < D; d++)
						ref[qo + d] += exp(sc_[t] - mx) / l * blk_host_get(arr[4], (size_t)(vo + d));
				}
			}
	char what[96];
	snprintf(what, sizeof what, "paged_attention T=%s B=%" PRId64 " MP=%" PRId64 " KVH=%" PRId64, T, B, MP, KVH);
	run_and_check(&r, arr, 6, 5, ref, what);
	run_free(&r);
	/* flash-decoding: runs of 3 pages, then the combine, to the same reference */
	int64_t NS = (MP + 2) / 3;
	char ns[16];
	snprintf(ns, sizeof ns, "%" PRId64, NS);
	defs[1 + nextra] = (BlkDefine){ "SP", "3" };
	compile(&r, "paged_attention.blk", "paged_attention_split", defs, 2 + nextra);
	int64_t s3[3] = { B, KVH * NS, G }, s4[4] = { B, KVH * NS, G, D };
	BlkHostArray *part[9] = { arr[0], arr[1], arr[2], arr[3], arr[4], blk_host_new(BLK_F32, 3, s3),
	                          blk_host_new(BLK_F32, 3, s3), blk_host_new(BLK_F32, 4, s4), NULL };
	BlkArrayDesc ad[8];
	void *data[8];
	for (int i = 0; i < 8; i++)
		ad[i] = part[i]->desc, data[i] = part[i]->data;
	if (!blk_interp_run(r.k, ad, data, 8, NULL, r.d))
		fail_msg("%s: the split kernel failed", what);
	run_free(&r);
	BlkDefine cdefs[6];
	int nc = 0;
	for (int i = 0; i < 1 + nextra; i++)
		if (strcmp(defs[i].name, "PS") != 0)
			cdefs[nc++] = defs[i];
	cdefs[nc++] = (BlkDefine){ "NS", ns };
	compile(&r, "paged_attention.blk", "paged_attention_combine", cdefs, nc);
	blk_host_poison(arr[5]);
	BlkHostArray *comb[4] = { part[5], part[6], part[7], arr[5] };
	snprintf(what, sizeof what, "paged_attention_split+combine T=%s B=%" PRId64 " MP=%" PRId64, T, B, MP);
	run_and_check(&r, comb, 4, 3, ref, what);
	run_free(&r);
	for (int i = 5; i < 8; i++)
		blk_host_free(part[i]);
	free(ref);
	free(sc_);
	for (int i = 0; i < 6; i++)
		blk_host_free(arr[i]);
}

static void test_paged_attention(void **state)
{
	(void)state;
	static const BlkDefine small[] = { { "G", "4" }, { "PS", "8" }, { "D", "32" } };
	for (int t = 0; t < 3; t++) {
		paged_case(dtypes[t], 3, 4, 2, 20, NULL, 0);
		paged_case(dtypes[t], 5, 7, 3, 50, small, 3);
	}
}

/* ---- dropout: the mask is rand(seed, i) >= P, ir/random.c's numbers ---- */

/* Whether dropout keeps element i under seed s and drop rate p. */
static bool kept(int32_t s, int64_t i, double p)
{
	uint32_t c[4] = { (uint32_t)i, 0, 0, 0 };
	blk_philox((uint32_t)s, blk_philox_key_hi(s), c);
	return blk_rand_uniform(c[0]) >= (float)p;
}

/* Forward: x / (1 - P) where kept, 0 elsewhere; backward: the same mask
 * on dy, run again from the seed alone; about 1 - P of the elements kept. */
static void dropout_case(const char *T, int64_t n, const char *P, const char *B)
{
	BlkDefine defs[3] = { { "T", T }, { "P", P }, { "B", B } };
	double p = atof(P);
	BlkDType dt = dtype_of(T);
	int64_t one = 1;
	BlkHostArray *sd = blk_host_new(BLK_I32, 1, &one);
	blk_host_set(sd, 0, (double)(int32_t)(uint32_t)(seed++ * 2654435761u));
	int32_t s = (int32_t)blk_host_get(sd, 0);
	double *ref = malloc((size_t)n * sizeof *ref);
	int64_t nkept = 0;
	for (int pass = 0; pass < 2; pass++) {
		Run r;
		compile(&r, "dropout.blk", pass ? "dropout_backward" : "dropout", defs, 3);
		BlkHostArray *a[3] = { sd, input(dt, 1, n, 0), output(dt, 1, n, 0) };
		for (int64_t i = 0; i < n; i++) {
			bool k = kept(s, i, p);
			nkept += k && !pass;
			ref[i] = k ? blk_host_get(a[1], (size_t)i) / (1.0 - p) : 0.0;
		}
		run_and_check(&r, a, 3, 2, ref, pass ? "dropout_backward" : "dropout");
		blk_host_free(a[1]);
		blk_host_free(a[2]);
		run_free(&r);
	}
	if (fabs((double)nkept / (double)n - (1 - p)) > 5.0 / sqrt((double)n))
		fail_msg("dropout P=%s kept %lld of %lld", P, (long long)nkept, (long long)n);
	blk_host_free(sd);
	free(ref);
}

static void test_dropout(void **state)
{
	(void)state;
	for (int t = 0; t < 3; t++)
		dropout_case(dtypes[t], 4096, "0.5", "1024");
	dropout_case("f32", 3001, "0.1", "256");
	dropout_case("bf16", 777, "0.8", "128");
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
		cmocka_unit_test(test_matmul_nt),
		cmocka_unit_test(test_matmul_dynamic),
		cmocka_unit_test(test_matmul_epilogue),
		cmocka_unit_test(test_swiglu),
		cmocka_unit_test(test_conv2d),
		cmocka_unit_test(test_bmm),
		cmocka_unit_test(test_matmul_splitk),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_layernorm),
		cmocka_unit_test(test_rmsnorm),
		cmocka_unit_test(test_colsum),
		cmocka_unit_test(test_cumsum),
		cmocka_unit_test(test_linear_recurrence),
		cmocka_unit_test(test_embedding),
		cmocka_unit_test(test_grouped_matmul),
		cmocka_unit_test(test_matmul_int8),
		cmocka_unit_test(test_matmul_fp8),
		cmocka_unit_test(test_paged_attention),
		cmocka_unit_test(test_dropout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
