/* gpu_examples.c - every example kernel on the GPU against the interpreter.
 *
 * Each case runs one example at one dtype and shape: the same seeded random
 * inputs go to blk_interp_run (the oracle) and to the GPU; outputs are
 * poisoned (NaN) on both sides first, so an unwritten element fails; every
 * element is compared with the dtype's tolerance relative to the output's
 * magnitude (tools/hostdata.h).  Exits 77 (meson's "skipped") without a GPU.
 * With BLK_GPU_EXAMPLES_OFFLINE=1 it needs none: each case runs in the
 * interpreter and is compiled for its shapes (a check of the table itself).
 * BLK_GPU_CASES=TEXT runs only the kernels whose names contain TEXT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk.h"
#include "gpu_test.h"
#include "frontend/frontend.h"
#include "interp/interp.h"
#include "tools/hostdata.h"

#ifndef BLK_EXAMPLES_DIR
#define BLK_EXAMPLES_DIR "examples"
#endif

enum { MAX_ARRAYS = 5, MAX_RANK = 4, MAX_DEFINES = 6 };

/* $BLK_EXAMPLES_DIR first: on the GPU machine the tree sits elsewhere. */
static void example_path(char *buf, size_t len, const char *kernel)
{
	const char *dir = getenv("BLK_EXAMPLES_DIR");
	snprintf(buf, len, "%s/%s.blk", dir && *dir ? dir : BLK_EXAMPLES_DIR, kernel);
}

/* How a case's output differs from the inputs' dtype T and the poison. */
enum {
	OUT_F32 = 1,  /* the output is f32 whatever T is (colsum, split-K) */
	OUT_ZERO = 2, /* the output starts zeroed, not poisoned: the kernel adds into it */
	IN0_I32 = 4,  /* the first array holds i32 indices (random in -8..8: some out of range) */
	WORK = 8,     /* the first array is grouped_matmul's work list (work_list below) */
};

/* An example at one shape: its arrays' shapes (an array's rank is its
 * number of nonzero dims); the last array is the output. */
typedef struct Case {
	const char *kernel; /* also the file name: examples/KERNEL.blk */
	const char *label;  /* the shape, for the table */
	int narrays;
	int64_t shapes[MAX_ARRAYS][MAX_RANK];
	const char *defines[MAX_DEFINES]; /* extra compile-time parameters, "NAME=VALUE" */
	unsigned out;                     /* OUT_* flags */
} Case;

#define MM(M, N, K, name, defs) {name, #M "x" #N "x" #K, 3, {{M, K}, {K, N}, {M, N}}, defs, 0}
#define NT(M, N, K, defs) {"matmul_nt", #M "x" #N "x" #K, 3, {{M, K}, {N, K}, {M, N}}, defs, 0}
#define DYN(M, N, K, defs) {"matmul_dynamic", #M "x" #N "x" #K, 3, {{M, K}, {N, K}, {M, N}}, defs, 0}
#define EPI(M, N, K, defs) \
	{"matmul_epilogue", #M "x" #N "x" #K, 4, {{M, K}, {K, N}, {N}, {M, N}}, defs, 0}
#define SWIGLU(M, N, K, defs) \
	{"swiglu", #M "x" #N "x" #K, 4, {{M, K}, {N, K}, {N, K}, {M, N}}, defs, 0}
#define CONV(N, H, W, C, OC, defs) \
	{"conv2d", #N "x" #H "x" #W "x" #C "->" #OC, 3, {{N, H, W, C}, {9 * (C), OC}, {(N) * (H) * (W), OC}}, defs, 0}
#define BMM(B, M, N, K, defs) \
	{"bmm", #B "x" #M "x" #N "x" #K, 3, {{B, M, K}, {B, K, N}, {B, M, N}}, defs, 0}
#define SPLITK(M, N, K, defs) \
	{"matmul_splitk", #M "x" #N "x" #K, 3, {{M, K}, {K, N}, {M, N}}, defs, OUT_F32 | OUT_ZERO}
#define ATTN(BH, S, D, ...) \
	{"attention", #BH "x" #S "x" #D, 4, {{BH, S, D}, {BH, S, D}, {BH, S, D}, {BH, S, D}}, \
	 {"D=" #D, __VA_ARGS__}, 0}
#define LN(R, C, defs) {"layernorm", #R "x" #C, 4, {{R, C}, {C}, {C}, {R, C}}, defs, 0}
#define RMS(R, C, defs) {"rmsnorm", #R "x" #C, 3, {{R, C}, {C}, {R, C}}, defs, 0}
#define COLSUM(R, C, defs) {"colsum", #R "x" #C, 2, {{R, C}, {C}}, defs, OUT_F32}
#define CUMSUM(R, C, defs) {"cumsum", #R "x" #C, 2, {{R, C}, {R, C}}, defs, 0}
#define RECUR(R, S, defs) {"linear_recurrence", #R "x" #S, 3, {{R, S}, {R, S}, {R, S}}, defs, 0}
#define EMB(N, V, D, defs) {"embedding", #N "x" #V "x" #D, 3, {{N}, {V, D}, {N, D}}, defs, IN0_I32}
/* W is at least cdiv(M, BM) + G - 1; the list is padded with empty items. */
#define GMM(W, M, K, N, G, defs) \
	{"grouped_matmul", #M "x" #K "x" #N " G=" #G, 4, {{W, 4}, {M, K}, {G, K, N}, {M, N}}, defs, \
	 IN0_I32 | WORK}
#define NONE {NULL}
/* The benchmark's f32 configuration: 8x8 register micro-tiles. */
#define BIG {"BM=128", "BN=128", "BK=16", "num_warps=8"}
/* 8x16 micro-tiles (128 accumulators a thread, one CTA per SM). */
#define WIDE {"BM=128", "BN=256", "BK=16", "num_warps=8"}
/* A tensor-core configuration like the benchmark's (64x32 warp tiles, cp.async). */
#define MMA {"BM=128", "BN=128", "BK=64", "num_warps=8", "num_stages=3"}
/* More tiles than SMs: on sm_90a a persistent, warp-specialized grid. */
#define PERSIST {"BM=64", "BN=64", "BK=64", "num_warps=4", "num_stages=3"}
#define PERSIST8 {"BM=128", "BN=256", "BK=64", "num_warps=8", "num_stages=4"}
/* One warpgroup a program, persistent: two programs a CTA taking turns
 * (ping-pong, lower/passes/warp_spec.c). */
#define PING {"BM=128", "BN=128", "BK=64", "num_warps=4", "num_stages=5"}
/* SwiGLU: BK 32 (f32's SIMT dots stage x once for each: 64 needs more
 * shared memory than an SM has) */
#define SWI {"BM=128", "BN=128", "BK=32", "num_warps=8", "num_stages=3"}
#define SWI4 {"BM=128", "BN=128", "BK=32", "num_warps=8", "num_stages=4"}
#define CONV_BIG {"BM=128", "BN=128", "BK=64", "num_warps=8", "num_stages=4"}
#define CONV_SMALL {"BM=64", "BN=32", "BK=16", "num_warps=4", "num_stages=2"}
#define SPLIT3 {"S=3", "BK=16"}
#define SPLIT5_MMA {"S=5", "BM=128", "BN=128", "BK=64", "num_warps=8", "num_stages=3"}
#define ROWS3 {"BR=3", "num_warps=4"}
#define TALL {"BR=128", "BC=32"}
/* linear_recurrence in chunks of 8 columns, 32 rows a program */
#define CHUNK8 {"BR=32", "BT=8", "num_warps=1"}
/* cumsum over 8 warps, chunks of 512 columns: the scan's axis spans warps */
#define SCAN8 {"BR=1", "BC=512", "num_warps=8"}
#define EMBSMALL {"BN=8", "BD=32"}
#define SMALLGM {"BM=32", "BN=32", "BK=16", "num_warps=4", "num_stages=2"}
static const Case cases[] = {
	MM(256, 256, 256, "matmul", NONE),
	MM(130, 70, 33, "matmul", NONE),
	MM(256, 256, 256, "matmul", BIG),
	MM(300, 200, 77, "matmul", BIG),
	MM(300, 520, 77, "matmul", WIDE),
	MM(256, 256, 256, "matmul_acc", NONE),
	MM(130, 70, 33, "matmul_acc", NONE),
	MM(600, 1300, 200, "matmul", PERSIST),
	MM(2100, 2200, 136, "matmul", PERSIST8),
	/* A's rows 200 bytes (cp.async), B's 2608 (TMA): both in one producer */
	MM(600, 1304, 100, "matmul", PERSIST),
	NT(600, 1300, 200, PERSIST),
	EPI(700, 1250, 96, PERSIST),
	/* x's slab feeds both dots (staged once); the blocks `auto` (NONE), a
	 * tensor-core config, more tiles than SMs */
	SWIGLU(130, 70, 33, NONE),
	SWIGLU(600, 1300, 200, SWI),
	SWIGLU(2100, 2200, 136, SWI4),
	CONV(2, 7, 9, 40, 72, NONE),
	CONV(3, 21, 19, 64, 136, NONE),
	CONV(4, 14, 14, 256, 256, CONV_BIG),
	CONV(5, 9, 11, 24, 40, CONV_SMALL),
	BMM(8, 300, 200, 72, PERSIST),
	/* ragged M, N and K; a CTA count whose last tiles leave one program idle */
	MM(2100, 2200, 200, "matmul", PING),
	MM(1000, 4300, 136, "matmul", PING),
	NT(1100, 2500, 72, PING),
	DYN(1100, 2500, 72, PING),
	DYN(2048, 1024, 256, PING),
	EPI(2050, 2100, 264, PING),
	BMM(5, 700, 900, 136, PING),
	{"add", "4096", 3, {{4096}, {4096}, {4096}}, NONE, 0},
	{"add", "1000", 3, {{1000}, {1000}, {1000}}, NONE, 0},
	/* the mask from rand(seed, i): every bit the interpreter's (seed in -8..8) */
	{"dropout", "5000", 3, {{1}, {5000}, {5000}}, NONE, IN0_I32},
	{"softmax", "64x128", 2, {{64, 128}, {64, 128}}, NONE, 0},
	{"softmax", "13x77", 2, {{13, 77}, {13, 77}}, NONE, 0},
	/* One row per program: a row spans warps (shuffles, then shared memory). */
	{"softmax", "5x1000", 2, {{5, 1000}, {5, 1000}}, {"BR=1"}, 0},
	NT(256, 256, 256, NONE),
	NT(130, 70, 33, NONE),
	DYN(256, 256, 256, NONE),
	DYN(130, 70, 33, NONE),
	DYN(1, 300, 77, MMA),
	NT(300, 200, 77, MMA),
	EPI(256, 256, 256, NONE),
	EPI(130, 70, 33, NONE),
	EPI(300, 200, 77, MMA),
	BMM(4, 128, 128, 64, NONE),
	BMM(3, 130, 70, 33, NONE),
	BMM(2, 300, 200, 77, MMA),
	SPLITK(256, 256, 1024, NONE),
	SPLITK(130, 70, 333, SPLIT3),
	SPLITK(300, 200, 1000, SPLIT5_MMA),
	ATTN(2, 256, 64, "CAUSAL=false"),
	ATTN(2, 256, 64, "CAUSAL=true"),
	ATTN(2, 77, 64, "CAUSAL=false"),
	ATTN(2, 77, 64, "CAUSAL=true"),
	ATTN(3, 100, 32, "CAUSAL=true", "BQ=16", "BK=32"),
	/* The benchmark's D=64 configuration, ragged; D=128 in a configuration
	 * that fits f32 too (the bench's BQ=BK=64 needs 268 KB of shared memory
	 * in f32: docs/gpu-notes.md, known gaps). */
	ATTN(2, 300, 64, "CAUSAL=true", "BQ=128", "BK=32", "num_warps=8"),
	ATTN(2, 200, 128, "CAUSAL=true", "BQ=32", "BK=64"),
	/* More programs than SMs: persistent; bf16/f16 warp specialized (K and
	 * V copied by a producer warpgroup, Q stored once a tile, P from
	 * registers); one warpgroup a program: two programs a CTA (ping-pong). */
	ATTN(45, 260, 64, "CAUSAL=false", "BQ=128", "BK=64", "num_warps=8"),
	ATTN(45, 260, 64, "CAUSAL=true", "BQ=128", "BK=64", "num_warps=8"),
	ATTN(34, 200, 128, "CAUSAL=false", "BQ=64", "BK=32", "num_stages=3"),
	ATTN(34, 200, 64, "CAUSAL=true", "BQ=64", "BK=64"),
	LN(64, 1024, NONE),
	LN(13, 77, ROWS3),
	LN(5, 4096, NONE),
	RMS(64, 1024, NONE),
	RMS(13, 77, ROWS3),
	RMS(5, 4096, NONE),
	COLSUM(256, 128, NONE),
	COLSUM(130, 77, NONE),
	COLSUM(1000, 300, TALL),
	CUMSUM(64, 4096, NONE),
	CUMSUM(13, 3001, NONE),
	CUMSUM(7, 77, NONE),
	CUMSUM(33, 2500, SCAN8),
	RECUR(256, 1024, NONE),
	RECUR(13, 333, NONE),
	RECUR(100, 77, CHUNK8),
	EMB(100, 9, 1000, NONE),
	EMB(37, 16, 64, NONE),
	EMB(45, 5, 77, EMBSMALL),
	GMM(8, 300, 72, 200, 5, NONE),
	GMM(14, 300, 72, 200, 5, SMALLGM),
	GMM(24, 1000, 136, 600, 8, PERSIST),
	GMM(22, 2100, 264, 1304, 6, PING),
};

/* The case's defines plus T=dtype, as BlkDefine (strings kept in buf). */
static int case_defines(const Case *c, BlkDType dt, BlkDefine *defs, char buf[][64])
{
	int n = 0;
	defs[n++] = (BlkDefine){"T", blk_dtype_name(dt)};
	for (int i = 0; i < MAX_DEFINES && c->defines[i]; i++) {
		snprintf(buf[i], 64, "%s", c->defines[i]);
		char *eq = strchr(buf[i], '=');
		*eq = 0;
		defs[n++] = (BlkDefine){buf[i], eq + 1};
	}
	return n;
}
static const BlkDType dtypes[] = {BLK_F32, BLK_F16, BLK_BF16};

/* Host arrays of one case: inputs random, output poisoned (or zeroed). */
typedef struct Arrays {
	int n;
	BlkHostArray *h[MAX_ARRAYS];
} Arrays;

/* An array's rank: its shape's leading nonzero dims. */
static int shape_rank(const int64_t *shape)
{
	int r = 0;
	while (r < MAX_RANK && shape[r])
		r++;
	return r;
}

/* A case's int define NAME, else dflt. */
static int64_t case_int(const Case *c, const char *name, int64_t dflt)
{
	size_t n = strlen(name);
	for (int i = 0; i < MAX_DEFINES && c->defines[i]; i++)
		if (strncmp(c->defines[i], name, n) == 0 && c->defines[i][n] == '=')
			return strtoll(c->defines[i] + n + 1, NULL, 10);
	return dflt;
}

/* grouped_matmul's work list over M rows in G groups of ragged sizes
 * (boundaries M*g^2/G^2 from group 2 on, group 0 empty): per BM-row block a group touches,
 * (block, group, first row, end row); then empty items (0, 0, 0, 0). */
static bool work_list(BlkHostArray *h, int64_t M, int64_t G, int64_t BM)
{
	int64_t t = 0, W = h->desc.shape[0];
	for (int64_t g = 1; g < G; g++) {
		int64_t lo = g == 1 ? 0 : M * g * g / (G * G), hi = M * (g + 1) * (g + 1) / (G * G);
		for (int64_t b = lo / BM; hi > lo && b <= (hi - 1) / BM; b++, t++)
			for (int j = 0; j < 4 && t < W; j++)
				blk_host_set(h, (size_t)(t * 4 + j), (double)(j == 0 ? b : j == 1 ? g : j == 2 ? lo : hi));
	}
	for (int64_t i = t * 4; i < W * 4; i++)
		blk_host_set(h, (size_t)i, 0);
	if (t > W)
		fprintf(stderr, "gpu-examples: a work list of %lld items needs W >= %lld\n", (long long)W,
		        (long long)t);
	return t <= W;
}

static bool arrays_make(Arrays *a, const Case *c, BlkDType dt, uint64_t seed)
{
	a->n = c->narrays;
	for (int i = 0; i < c->narrays; i++) {
		bool out = i == c->narrays - 1;
		BlkDType t = out && (c->out & OUT_F32) ? BLK_F32 : !i && (c->out & IN0_I32) ? BLK_I32 : dt;
		a->h[i] = blk_host_new(t, shape_rank(c->shapes[i]), c->shapes[i]);
		if (!a->h[i])
			return false;
		if (!out)
			blk_host_fill_random(a->h[i], seed + (uint64_t)i);
		else if (!(c->out & OUT_ZERO))
			blk_host_poison(a->h[i]); /* blk_host_new zeroes */
	}
	if (c->out & WORK)
		return work_list(a->h[0], c->shapes[1][0], c->shapes[2][0], case_int(c, "BM", 128));
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
	BlkDefine defs[MAX_DEFINES + 1];
	char buf[MAX_DEFINES][64];
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

/* The case's example loaded on rt with T=dt and its defines. */
static BlkProgram *case_load(BlkRuntime *rt, const Case *c, BlkDType dt, BlkFunc **f)
{
	char def[32];
	snprintf(def, sizeof def, "T=%s", blk_dtype_name(dt));
	const char *defs[MAX_DEFINES + 1] = {def};
	int ndefs = 1;
	for (int i = 0; i < MAX_DEFINES && c->defines[i]; i++)
		defs[ndefs++] = c->defines[i];
	char path[512];
	example_path(path, sizeof path, c->kernel);
	BlkProgram *p = blk_program_load(rt, path, defs, ndefs);
	*f = p ? blk_program_kernel(p, c->kernel) : NULL;
	return p;
}

/* Offline (no GPU): compiles the case for its shapes, as a launch would
 * (fake device pointers; nothing runs). */
static bool offline_compile(BlkRuntime *rt, const Case *c, BlkDType dt, Arrays *host)
{
	BlkFunc *f;
	BlkProgram *p = case_load(rt, c, dt, &f);
	BlkTensor t[MAX_ARRAYS];
	for (int i = 0; i < host->n; i++) {
		BlkHostArray *h = host->h[i];
		void *fake = (void *)((uintptr_t)0x40000000 * (uintptr_t)(i + 1)); /* 1 GiB apart: no overlap */
		t[i] = blk_tensor_make(fake, (int)h->desc.dtype, h->desc.rank, h->desc.shape);
	}
	bool ok = f && blk_func_compile(f, t, host->n, NULL);
	if (!ok)
		printf("  error: %s\n", blk_runtime_last_error(rt));
	blk_program_destroy(p);
	return ok;
}

/* Copies inputs and the poisoned output over, launches, copies back. */
static bool gpu_run(BlkRuntime *rt, const Case *c, BlkDType dt, Arrays *host)
{
	BlkFunc *f;
	BlkProgram *p = case_load(rt, c, dt, &f);
	BlkTensor t[MAX_ARRAYS];
	void *dev[MAX_ARRAYS] = {0};
	bool ok = f != NULL;
	for (int i = 0; ok && i < host->n; i++) {
		BlkHostArray *h = host->h[i];
		ok = blk_mem_alloc(rt, h->nbytes, &dev[i]) && blk_memcpy_htod(rt, dev[i], h->data, h->nbytes);
		t[i] = blk_tensor_make(dev[i], (int)h->desc.dtype, h->desc.rank, h->desc.shape);
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

/* One table row; true on PASS (offline: interpreted and compiled). */
static bool run_case(BlkRuntime *rt, const Case *c, BlkDType dt, uint64_t seed, bool offline)
{
	Arrays ref_in = {0}, gpu = {0};
	double *ref = NULL;
	bool ok = arrays_make(&ref_in, c, dt, seed) && arrays_make(&gpu, c, dt, seed);
	BlkHostArray *out = ok ? gpu.h[gpu.n - 1] : NULL;
	ok = ok && (ref = malloc(out->count * sizeof *ref)) != NULL;
	bool have_ref = ok && interp_reference(c, dt, &ref_in, ref);
	bool ran = have_ref && (offline ? offline_compile(rt, c, dt, &gpu) : gpu_run(rt, c, dt, &gpu));
	BlkHostCompare cmp = {0};
	double tol = out ? blk_host_default_tol(out->desc.dtype) : 0;
	bool pass = ran && (offline || blk_host_compare(out, ref, tol, &cmp));
	char label[128];
	int n = snprintf(label, sizeof label, "%s", c->label);
	for (int i = 0; i < MAX_DEFINES && c->defines[i] && n < (int)sizeof label; i++)
		n += snprintf(label + n, sizeof label - (size_t)n, "%s%s", i ? "," : " ", c->defines[i]);
	printf("| %-15s | %-4s | %-45s | %9.2e | %7.0e | %s", c->kernel, blk_dtype_name(dt), label,
	       cmp.max_rel, tol, !pass ? "FAIL" : offline ? "COMPILED" : "PASS");
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

/* The GPU's runtime, or with BLK_GPU_EXAMPLES_OFFLINE=1 an offline one
 * (sm_90a, or $BLK_ARCH): then every case runs in the interpreter and is
 * compiled for its shapes, which needs no GPU. */
static BlkRuntime *start(bool *offline, int *status)
{
	const char *off = getenv("BLK_GPU_EXAMPLES_OFFLINE");
	*offline = off && *off && strcmp(off, "0") != 0;
	if (!*offline)
		return gpu_test_runtime("gpu-examples", status);
	char err[512];
	const char *arch = getenv("BLK_ARCH");
	BlkRuntime *rt = blk_runtime_create_offline(arch && *arch ? arch : "sm_90a", err, sizeof err);
	if (!rt)
		fprintf(stderr, "gpu-examples: %s\n", err);
	*status = 1;
	return rt;
}

int main(void)
{
	int status;
	bool offline;
	BlkRuntime *rt = start(&offline, &status);
	if (!rt)
		return status;
	printf("| kernel          | type | shape and parameters                          | max rel   | tol     | result |\n");
	printf("| --------------- | ---- | --------------------------------------------- | --------- | ------- | ------ |\n");
	int failed = 0, total = 0;
	uint64_t seed = 1;
	const char *only = getenv("BLK_GPU_CASES"); /* a part of the kernel names to run */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (size_t j = 0; j < sizeof dtypes / sizeof dtypes[0]; j++) {
			seed += 16;
			if (only && *only && !strstr(cases[i].kernel, only))
				continue;
			failed += !run_case(rt, &cases[i], dtypes[j], seed, offline);
			total++;
		}
	printf("\n%d of %d cases %s\n", total - failed, total, offline ? "compiled (offline)" : "passed");
	blk_runtime_destroy(rt);
	return failed ? 1 : 0;
}
