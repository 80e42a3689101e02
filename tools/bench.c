/* bench.c - blk-bench: blk's kernels against cuBLAS and the copy bandwidth,
 * in one process on one GPU, printed as markdown tables.
 *
 *   blk-bench [--sizes 1024,2048] [--autotune f32,bf16,f16|all|none] [--fixed]
 *             [--f32 BM=128,BN=128,...] [--bf16 ...] [--f16 ...]
 *             [--tune-f32 'BM=64,BN=64;BM=128,BN=128'|search] [--tune-bf16 ...] [--tune-f16 ...]
 *             [--budget-ms N] [--examples DIR] [--no-bandwidth] [--no-more]
 *             [--bandwidth-only] [--attention-only] [--only NAME,NAME] [--offline]
 *
 * The matmul rows of the dtypes in --autotune (default: f32) run through the
 * runtime's autotuner over a candidate list (the built-in one below, or
 * --tune-DTYPE's, ';' between candidates; `search`: none, so the tuner
 * times the cost model's best 12 of the kernel's search space for each
 * size, docs/runtime.md); the other dtypes, and a dtype
 * given a fixed config with --f32/--bf16/--f16, use one config.  --fixed is
 * --autotune none.  The last column names the config that ran, and for a
 * tuned row how many candidates were timed and how long tuning took
 * (compiling included).  BLK_TUNE_LOG=1 prints each candidate's median to
 * stderr.  --offline needs no GPU: it compiles every dtype's candidates at
 * every size and says which were skipped and why.  After the matmul rows
 * come the newer examples' rows (bench_rows.c: matmul_nt, matmul_epilogue,
 * bmm and split-K against cuBLAS; colsum, layernorm, rmsnorm and cumsum
 * as bandwidth; attention at tools/bench_torch.py's shapes); --no-more skips
 * them, --bandwidth-only runs the bandwidth table alone, --attention-only
 * the attention table alone, --only NAME,NAME
 * the linear-layer rows of those ops alone (matmul_nt, grouped_matmul...).
 *
 * Method (.library/device/METHOD.md): the same random inputs for both; both
 * results checked (against each other and a sampled float64 CPU reference)
 * before any timing; warm-up; the median of per-launch CUDA-event timings.
 * cuBLAS is dlopen'ed ($BLK_CUBLAS, libcublas.so.13, .so.12): fp32 through
 * cublasSgemm with CUBLAS_DEFAULT_MATH (no TF32), bf16/f16 through
 * cublasGemmEx with an f32 accumulator.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#include "bench.h"
#include "bench_candidates.h"

/* ---- cuBLAS, loaded at run time ----------------------------------------- */

static void *open_cublas(void)
{
	const char *names[] = {getenv("BLK_CUBLAS"), "libcublas.so.13", "libcublas.so.12", "libcublas.so"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		void *lib = names[i] && *names[i] ? dlopen(names[i], RTLD_NOW | RTLD_LOCAL) : NULL;
		if (lib)
			return lib;
	}
	return NULL;
}

static bool cublas_open(Cublas *c)
{
	memset(c, 0, sizeof *c);
	c->lib = open_cublas();
	if (!c->lib) {
		fprintf(stderr, "blk-bench: cuBLAS not found (set BLK_CUBLAS to libcublas.so.*): %s\n", dlerror());
		return false;
	}
	*(void **)&c->create = dlsym(c->lib, "cublasCreate_v2");
	*(void **)&c->destroy = dlsym(c->lib, "cublasDestroy_v2");
	*(void **)&c->set_math_mode = dlsym(c->lib, "cublasSetMathMode");
	*(void **)&c->sgemm = dlsym(c->lib, "cublasSgemm_v2");
	*(void **)&c->gemm_ex = dlsym(c->lib, "cublasGemmEx");
	*(void **)&c->gemm_strided = dlsym(c->lib, "cublasGemmStridedBatchedEx");
	if (!c->create || !c->destroy || !c->set_math_mode || !c->sgemm || !c->gemm_ex ||
	    !c->gemm_strided) {
		fprintf(stderr, "blk-bench: cuBLAS lacks an entry point: %s\n", dlerror());
		return false;
	}
	cublasStatus_t s = c->create(&c->h);
	if (s == CUBLAS_STATUS_SUCCESS)
		s = c->set_math_mode(c->h, CUBLAS_DEFAULT_MATH); /* exact fp32: TF32 off */
	if (s != CUBLAS_STATUS_SUCCESS)
		fprintf(stderr, "blk-bench: cublasCreate/SetMathMode failed: status %d\n", (int)s);
	return s == CUBLAS_STATUS_SUCCESS;
}

/* Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T = B^T A^T. */
static bool cublas_matmul(Cublas *c, BlkDType dt, int m, int n, int k, void *a, void *b, void *out)
{
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t s;
	if (dt == BLK_F32) {
		s = c->sgemm(c->h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, out, n);
	} else {
		cudaDataType t = dt == BLK_BF16 ? CUDA_R_16BF : CUDA_R_16F;
		s = c->gemm_ex(c->h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, t, n, a, t, k, &zero, out, t,
		               n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	}
	if (s != CUBLAS_STATUS_SUCCESS)
		fprintf(stderr, "blk-bench: cuBLAS gemm failed: status %d\n", (int)s);
	return s == CUBLAS_STATUS_SUCCESS;
}

/* ---- host data ---------------------------------------------------------- */

uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static float rnd(uint64_t *s)
{
	return (float)(rng_next(s) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* n random values in [-1, 1), rounded to dt (i8: any byte value):
 * storage in buf, values in f. */
void fill(BlkDType dt, size_t n, void *buf, float *f, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		float v = rnd(&s);
		if (dt == BLK_F32) {
			((float *)buf)[i] = v;
		} else if (dt == BLK_I8) { /* every byte value */
			int8_t b = (int8_t)(rng_next(&s) >> 56);
			((int8_t *)buf)[i] = b;
			v = b;
		} else {
			uint16_t h = dt == BLK_BF16 ? blk_f32_to_bf16(v) : blk_f32_to_f16(v);
			((uint16_t *)buf)[i] = h;
			v = dt == BLK_BF16 ? blk_bf16_to_f32(h) : blk_f16_to_f32(h);
		}
		if (f)
			f[i] = v;
	}
}

double value_at(BlkDType dt, const void *buf, size_t i)
{
	if (dt == BLK_F32)
		return ((const float *)buf)[i];
	if (dt == BLK_I8)
		return ((const int8_t *)buf)[i];
	if (dt == BLK_I32)
		return ((const int32_t *)buf)[i];
	uint16_t h = ((const uint16_t *)buf)[i];
	return dt == BLK_BF16 ? blk_bf16_to_f32(h) : blk_f16_to_f32(h);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* ---- timing ------------------------------------------------------------- */

/* Median ms of per-launch event timings after warm-up; reps shrink (not
 * under MIN_REPS) when one run would blow the budget.  -1 on error. */
double time_median(BlkRuntime *rt, RunFn run, void *ctx, double budget_ms, int *reps_out)
{
	BlkTimer *t = blk_timer_create(rt);
	float ms[MAX_REPS], first = 0;
	int reps = MAX_REPS;
	bool ok = t && run(ctx) && blk_timer_start(t, NULL) && run(ctx) && blk_timer_stop(t, NULL) &&
	          blk_timer_elapsed_ms(t, &first);
	if (ok && first * MAX_REPS > budget_ms)
		reps = first * MIN_REPS > budget_ms ? MIN_REPS : (int)(budget_ms / first);
	for (int i = 0; ok && i < reps; i++)
		ok = blk_timer_start(t, NULL) && run(ctx) && blk_timer_stop(t, NULL) &&
		     blk_timer_elapsed_ms(t, &ms[i]);
	blk_timer_destroy(t);
	if (!ok) {
		fprintf(stderr, "blk-bench: timing failed: %s\n", blk_runtime_last_error(rt));
		return -1;
	}
	qsort(ms, (size_t)reps, sizeof ms[0], cmp_float);
	*reps_out = reps;
	return reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
}

/* ---- blk programs ------------------------------------------------------- */

/* Loads examples/NAME.blk with "T=dtype" and a comma list of NAME=VALUE. */
BlkProgram *load(BlkRuntime *rt, const Options *o, const char *name, BlkDType dt,
                        const char *config)
{
	char path[512], tdef[32], cfg[256];
	snprintf(path, sizeof path, "%s/%s.blk", o->examples, name);
	snprintf(tdef, sizeof tdef, "T=%s", blk_dtype_name(dt));
	snprintf(cfg, sizeof cfg, "%s", config ? config : "");
	const char *defs[MAX_DEFS] = {tdef};
	int n = 1;
	for (char *tok = strtok(cfg, ","); tok && n < MAX_DEFS; tok = strtok(NULL, ","))
		defs[n++] = tok;
	BlkProgram *p = blk_program_load(rt, path, defs, n);
	if (!p)
		fprintf(stderr, "blk-bench: %s\n", blk_runtime_last_error(rt));
	return p;
}

bool run_blk(void *ctx)
{
	Launch *l = ctx;
	if (l->tuner)
		return blk_tuner_launch(l->tuner, l->t, l->n, NULL);
	return blk_launch(l->f, l->t, l->n, NULL);
}

static bool run_cublas(void *ctx)
{
	Launch *l = ctx;
	return cublas_matmul(l->cb, l->dt, l->m, l->nn, l->k, l->t[0].data, l->t[1].data,
	                     l->t[2].data);
}

/* ---- matmul ------------------------------------------------------------- */

typedef struct Mats {
	size_t na, nb, nc, esz;
	void *ha, *hb, *hc_blk, *hc_cb;
	float *fa, *fb;
	void *da, *db, *dc_blk, *dc_cb;
} Mats;

static bool mats_make(BlkRuntime *rt, Mats *x, BlkDType dt, int64_t s)
{
	x->esz = blk_tensor_elem_size((int)dt);
	x->na = x->nb = x->nc = (size_t)(s * s);
	x->ha = malloc(x->na * x->esz), x->hb = malloc(x->nb * x->esz);
	x->hc_blk = malloc(x->nc * x->esz), x->hc_cb = malloc(x->nc * x->esz);
	x->fa = malloc(x->na * 4), x->fb = malloc(x->nb * 4);
	if (!x->ha || !x->hb || !x->hc_blk || !x->hc_cb || !x->fa || !x->fb)
		return false;
	fill(dt, x->na, x->ha, x->fa, 1000 + (uint64_t)s);
	fill(dt, x->nb, x->hb, x->fb, 2000 + (uint64_t)s);
	return blk_mem_alloc(rt, x->na * x->esz, &x->da) && blk_mem_alloc(rt, x->nb * x->esz, &x->db) &&
	       blk_mem_alloc(rt, x->nc * x->esz, &x->dc_blk) &&
	       blk_mem_alloc(rt, x->nc * x->esz, &x->dc_cb) &&
	       blk_memcpy_htod(rt, x->da, x->ha, x->na * x->esz) &&
	       blk_memcpy_htod(rt, x->db, x->hb, x->nb * x->esz) &&
	       blk_memset(rt, x->dc_blk, 0xff, x->nc * x->esz) && /* NaN in every dtype */
	       blk_memset(rt, x->dc_cb, 0xff, x->nc * x->esz);
}

static void mats_free(BlkRuntime *rt, Mats *x)
{
	free(x->ha), free(x->hb), free(x->hc_blk), free(x->hc_cb), free(x->fa), free(x->fb);
	blk_mem_free(rt, x->da), blk_mem_free(rt, x->db);
	blk_mem_free(rt, x->dc_blk), blk_mem_free(rt, x->dc_cb);
}

/* blk vs cuBLAS over every element, and both vs float64 at sampled
 * elements; errors relative to the largest |reference|.  Returns the worst. */
static double check_matmul(const Mats *x, BlkDType dt, int64_t s)
{
	double ref_scale = 0, worst = 0;
	uint64_t seed = 77;
	for (int i = 0; i < SAMPLES; i++) {
		size_t r = rng_next(&seed) % (uint64_t)s, c = rng_next(&seed) % (uint64_t)s;
		double ref = 0;
		for (int64_t p = 0; p < s; p++)
			ref += (double)x->fa[r * (size_t)s + (size_t)p] * x->fb[(size_t)p * (size_t)s + c];
		ref_scale = fmax(ref_scale, fabs(ref));
		double e1 = fabs(value_at(dt, x->hc_blk, r * (size_t)s + c) - ref);
		double e2 = fabs(value_at(dt, x->hc_cb, r * (size_t)s + c) - ref);
		worst = !(e1 <= worst) ? e1 : worst; /* NaN sticks */
		worst = !(e2 <= worst) ? e2 : worst;
	}
	double diff = 0;
	for (size_t i = 0; i < x->nc; i++) {
		double e = fabs(value_at(dt, x->hc_blk, i) - value_at(dt, x->hc_cb, i));
		diff = !(e <= diff) ? e : diff;
	}
	return fmax(worst, diff) / (ref_scale > 0 ? ref_scale : 1);
}

double matmul_tol(BlkDType dt)
{
	return dt == BLK_F32 ? 1e-4 : dt == BLK_I8 ? 1e-5 : dt == BLK_F16 ? 1e-2 : 2e-2;
}

/* ---- autotuning -------------------------------------------------------- */


/* sm_90a's f16/bf16 candidates: wgmma over two consumer warpgroups
 * (128x256, 256x128, 128x128 tiles) or one (128x128, 64x128), 4 or 3
 * slots of 64-wide K slabs (docs/gpu-notes.md, runs 31-34), the best at
 * 4096^3 and 8192^3 first. */
static const char *const hopper_candidates =
	"BM=128,BN=256,BK=64,num_warps=8,num_stages=4;BM=256,BN=128,BK=64,num_warps=8,num_stages=4;"
	"BM=128,BN=256,BK=64,num_warps=8,num_stages=3;BM=128,BN=128,BK=64,num_warps=8,num_stages=4;"
	"BM=128,BN=128,BK=64,num_warps=4,num_stages=4;BM=64,BN=128,BK=64,num_warps=4,num_stages=4;"
	"BM=256,BN=128,BK=64,num_warps=8,num_stages=3;BM=128,BN=256,BK=32,num_warps=8,num_stages=4;"
	"BM=128,BN=128,BK=64,num_warps=4,num_stages=5;BM=128,BN=128,BK=64,num_warps=4,num_stages=6";

/* A tuner over examples/matmul.blk with T=dt and dt's candidates. */
static BlkTuner *make_tuner(BlkRuntime *rt, const Options *o, BlkDType dt)
{
	char path[512], tdef[32], list[4096];
	snprintf(path, sizeof path, "%s/matmul.blk", o->examples);
	snprintf(tdef, sizeof tdef, "T=%s", blk_dtype_name(dt));
	const char *cands = dt == BLK_F32 ? blk_bench_f32_candidates : blk_bench_tc_candidates;
	if (dt != BLK_F32 && strcmp(blk_runtime_arch(rt), "sm_90a") == 0)
		cands = hopper_candidates;
	snprintf(list, sizeof list, "%s", o->candidates[dt] ? o->candidates[dt] : cands);
	const char *base[] = {tdef};
	BlkTuner *t = blk_tuner_create(rt, path, NULL, "matmul", base, 1);
	bool ok = t != NULL;
	if (strcmp(list, "search") == 0) /* no candidates: the tuner's search space (blk_func_search) */
		list[0] = '\0';
	char *save = NULL;
	for (char *c = strtok_r(list, ";", &save); ok && c; c = strtok_r(NULL, ";", &save))
		ok = blk_tuner_add_config_text(t, c);
	if (!ok) {
		fprintf(stderr, "blk-bench: tuner for matmul %s: %s\n", blk_dtype_name(dt),
		        blk_runtime_last_error(rt));
		blk_tuner_destroy(t);
		return NULL;
	}
	return t;
}

double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The config column: the fixed config, or the tuner's pick for l's tensors
 * with how many candidates it timed and the wall time of tuning. */
static void config_cell(const Launch *l, const Options *o, double tune_ms, char *buf, size_t len)
{
	BlkTunerResult r;
	if (!l->tuner)
		snprintf(buf, len, "%s", o->config[l->dt] ? o->config[l->dt] : "(defaults)");
	else if (blk_tuner_best(l->tuner, l->t, l->n, &r))
		snprintf(buf, len, "%s (tuned: %d of %d timed, %.1f s)", blk_tuner_config(l->tuner, r.config),
		         r.timed, r.candidates, tune_ms / 1e3);
	else
		snprintf(buf, len, "(tuning failed)");
}

static void matmul_case(BlkRuntime *rt, Cublas *cb, const Options *o, BlkDType dt, int64_t s)
{
	Mats x = {0};
	Launch l = {.n = 3, .cb = cb, .dt = dt, .m = (int)s, .nn = (int)s, .k = (int)s};
	BlkProgram *p = NULL;
	if (o->tune[dt]) {
		l.tuner = make_tuner(rt, o, dt);
	} else {
		p = load(rt, o, "matmul", dt, o->config[dt]);
		l.f = p ? blk_program_kernel(p, "matmul") : NULL;
	}
	bool ok = (l.f || l.tuner) && mats_make(rt, &x, dt, s);
	int64_t sh[2] = {s, s};
	l.t[0] = blk_tensor_make(x.da, (int)dt, 2, sh);
	l.t[1] = blk_tensor_make(x.db, (int)dt, 2, sh);
	l.t[2] = blk_tensor_make(x.dc_blk, (int)dt, 2, sh);
	Launch lc = l;
	lc.t[2].data = x.dc_cb;
	/* With a tuner, the first launch tunes; the output then holds the
	 * winner's result, checked like a fixed config's. */
	double t0 = now_ms();
	ok = ok && run_blk(&l);
	double tune_ms = now_ms() - t0;
	ok = ok && run_cublas(&lc) && blk_synchronize(rt) &&
	     blk_memcpy_dtoh(rt, x.hc_blk, x.dc_blk, x.nc * x.esz) &&
	     blk_memcpy_dtoh(rt, x.hc_cb, x.dc_cb, x.nc * x.esz);
	double err = ok ? check_matmul(&x, dt, s) : NAN;
	bool good = ok && err <= matmul_tol(dt);
	int rb = 0, rc = 0;
	double tb = good ? time_median(rt, run_blk, &l, o->budget_ms, &rb) : -1;
	double tc = good ? time_median(rt, run_cublas, &lc, o->budget_ms, &rc) : -1;
	double fl = 2.0 * (double)s * (double)s * (double)s;
	if (!ok)
		fprintf(stderr, "blk-bench: matmul %s %lld: %s\n", blk_dtype_name(dt), (long long)s,
		        blk_runtime_last_error(rt));
	if (!ok && l.tuner)
		fprintf(stderr, "blk-bench: tuner log:\n%s", blk_tuner_log(l.tuner));
	char cfg[512];
	config_cell(&l, o, tune_ms, cfg, sizeof cfg);
	printf("| matmul | %-4s | %5lld³ | %9.3f | %7.1f | %9.3f | %7.1f | %5.2f | %.1e %s | %d/%d | %s |\n",
	       blk_dtype_name(dt), (long long)s, tb, tb > 0 ? fl / tb / 1e9 : 0, tc,
	       tc > 0 ? fl / tc / 1e9 : 0, tb > 0 && tc > 0 ? tc / tb : 0, err, good ? "ok" : "WRONG",
	       rb, rc, cfg);
	fflush(stdout);
	mats_free(rt, &x);
	blk_tuner_destroy(l.tuner);
	blk_program_destroy(p);
}

/* ---- bandwidth ---------------------------------------------------------- */

typedef struct Copy {
	BlkRuntime *rt;
	void *dst, *src;
	size_t bytes;
} Copy;

static bool run_copy(void *ctx)
{
	Copy *c = ctx;
	return blk_memcpy_dtod(c->rt, c->dst, c->src, c->bytes, NULL);
}

void bw_row(const char *op, const char *size, double ms, double bytes, double copy_gbs,
                   bool good, int reps)
{
	double gbs = ms > 0 ? bytes / ms / 1e6 : 0;
	printf("| %-8s | %-14s | %8.3f | %7.0f | %5.1f%% | %s | %d |\n", op, size, ms, gbs,
	       copy_gbs > 0 ? 100 * gbs / copy_gbs : 0, good ? "ok" : "WRONG", reps);
	fflush(stdout);
}

/* add: z = x + y over n f32, checked exactly at sampled indices. */
static void add_case(BlkRuntime *rt, const Options *o, size_t n, double copy_gbs)
{
	float *x = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4);
	void *dx = NULL, *dy = NULL, *dz = NULL;
	BlkProgram *p = load(rt, o, "add", BLK_F32, NULL);
	Launch l = {.f = p ? blk_program_kernel(p, "add") : NULL, .n = 3};
	bool ok = x && y && z && l.f;
	if (ok) {
		fill(BLK_F32, n, x, NULL, 5);
		fill(BLK_F32, n, y, NULL, 6);
	}
	ok = ok && blk_mem_alloc(rt, n * 4, &dx) && blk_mem_alloc(rt, n * 4, &dy) &&
	     blk_mem_alloc(rt, n * 4, &dz) && blk_memcpy_htod(rt, dx, x, n * 4) &&
	     blk_memcpy_htod(rt, dy, y, n * 4) && blk_memset(rt, dz, 0xff, n * 4);
	int64_t sh[1] = {(int64_t)n};
	l.t[0] = blk_tensor_make(dx, BLK_DTYPE_F32, 1, sh);
	l.t[1] = blk_tensor_make(dy, BLK_DTYPE_F32, 1, sh);
	l.t[2] = blk_tensor_make(dz, BLK_DTYPE_F32, 1, sh);
	ok = ok && run_blk(&l) && blk_synchronize(rt) && blk_memcpy_dtoh(rt, z, dz, n * 4);
	bool good = ok;
	uint64_t seed = 9;
	for (int i = 0; good && i < 4096; i++) {
		size_t j = i < 2 ? (i ? n - 1 : 0) : rng_next(&seed) % n;
		good = z[j] == x[j] + y[j];
	}
	int reps = 0;
	double ms = good ? time_median(rt, run_blk, &l, o->budget_ms, &reps) : -1;
	if (!ok)
		fprintf(stderr, "blk-bench: add: %s\n", blk_runtime_last_error(rt));
	char size[32];
	snprintf(size, sizeof size, "%zu f32", n);
	bw_row("add", size, ms, 3.0 * (double)n * 4, copy_gbs, good, reps);
	blk_mem_free(rt, dx), blk_mem_free(rt, dy), blk_mem_free(rt, dz);
	free(x), free(y), free(z);
	blk_program_destroy(p);
}

/* softmax over r rows of c f32, checked against float64 at sampled rows. */
static bool softmax_check(const float *x, const float *y, size_t r, size_t c)
{
	uint64_t seed = 11;
	for (int s = 0; s < 16; s++) {
		size_t row = s ? rng_next(&seed) % r : r - 1;
		const float *xr = x + row * c, *yr = y + row * c;
		double m = -INFINITY, sum = 0;
		for (size_t j = 0; j < c; j++)
			m = fmax(m, xr[j]);
		for (size_t j = 0; j < c; j++)
			sum += exp(xr[j] - m);
		for (size_t j = 0; j < c; j++) {
			double ref = exp(xr[j] - m) / sum;
			if (!(fabs(yr[j] - ref) <= 1e-5 * fmax(ref, 1e-3)))
				return false;
		}
	}
	return true;
}

static void softmax_case(BlkRuntime *rt, const Options *o, size_t r, size_t c, double copy_gbs)
{
	size_t n = r * c;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	void *dx = NULL, *dy = NULL;
	BlkProgram *p = load(rt, o, "softmax", BLK_F32, NULL);
	Launch l = {.f = p ? blk_program_kernel(p, "softmax") : NULL, .n = 2};
	bool ok = x && y && l.f;
	if (ok)
		fill(BLK_F32, n, x, NULL, 7);
	ok = ok && blk_mem_alloc(rt, n * 4, &dx) && blk_mem_alloc(rt, n * 4, &dy) &&
	     blk_memcpy_htod(rt, dx, x, n * 4) && blk_memset(rt, dy, 0xff, n * 4);
	int64_t sh[2] = {(int64_t)r, (int64_t)c};
	l.t[0] = blk_tensor_make(dx, BLK_DTYPE_F32, 2, sh);
	l.t[1] = blk_tensor_make(dy, BLK_DTYPE_F32, 2, sh);
	ok = ok && run_blk(&l) && blk_synchronize(rt) && blk_memcpy_dtoh(rt, y, dy, n * 4);
	bool good = ok && softmax_check(x, y, r, c);
	int reps = 0;
	double ms = good ? time_median(rt, run_blk, &l, o->budget_ms, &reps) : -1;
	if (!ok)
		fprintf(stderr, "blk-bench: softmax: %s\n", blk_runtime_last_error(rt));
	char size[32];
	snprintf(size, sizeof size, "%zux%zu f32", r, c);
	bw_row("softmax", size, ms, 2.0 * (double)n * 4, copy_gbs, good, reps);
	blk_mem_free(rt, dx), blk_mem_free(rt, dy);
	free(x), free(y);
	blk_program_destroy(p);
}

static void bandwidth(BlkRuntime *rt, const Options *o)
{
	size_t bytes = (size_t)1 << 30;
	Copy c = {.rt = rt, .bytes = bytes};
	int reps = 0;
	double ms = -1;
	if (blk_mem_alloc(rt, bytes, &c.src) && blk_mem_alloc(rt, bytes, &c.dst) &&
	    blk_memset(rt, c.src, 0x3c, bytes))
		ms = time_median(rt, run_copy, &c, o->budget_ms, &reps);
	blk_mem_free(rt, c.src), blk_mem_free(rt, c.dst);
	double copy_gbs = ms > 0 ? 2.0 * (double)bytes / ms / 1e6 : 0;
	printf("\n| op | size | ms | GB/s | of copy | check | reps |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- |\n");
	bw_row("D2D copy", "1 GiB", ms, 2.0 * (double)bytes, copy_gbs, ms > 0, reps);
	add_case(rt, o, (size_t)1 << 28, copy_gbs);
	softmax_case(rt, o, (size_t)1 << 18, 1024, copy_gbs);
	if (o->more)
		norm_rows(rt, o, copy_gbs);
}

/* ---- compile time ------------------------------------------------------- */

/* The config compile times have been measured at since run 94 (1024
 * FMAs a thread unrolled); the f32 bench config's follows when it differs
 * (128x256x32: 4096 FMAs, so LLVM takes longer). */
#define COMPILE_REF "BM=128,BN=128,BK=16,num_warps=8,num_stages=3"

/* Median ms to load matmul.blk and compile it to PTX (no cache: a fresh
 * program each time, the disk cache off), f32 at 4096³ with config. */
static void compile_config(BlkRuntime *rt, const Options *o, const char *config)
{
	double ms[10];
	int n = 0;
	int64_t sh[2] = {4096, 4096};
	char *dir = blk_runtime_cache_dir(rt) ? strdup(blk_runtime_cache_dir(rt)) : NULL;
	blk_runtime_set_cache_dir(rt, NULL);
	for (int i = 0; i < 10; i++) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		BlkProgram *p = load(rt, o, "matmul", BLK_F32, config);
		BlkFunc *f = p ? blk_program_kernel(p, "matmul") : NULL;
		BlkTensor t[3];
		for (int j = 0; j < 3; j++)
			t[j] = blk_tensor_make((void *)(uintptr_t)(0x40000000 * (uintptr_t)(j + 1)), BLK_DTYPE_F32, 2, sh);
		bool ok = f && blk_func_compile(f, t, 3, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (!ok)
			fprintf(stderr, "blk-bench: compile: %s\n", blk_runtime_last_error(rt));
		blk_program_destroy(p);
		if (!ok)
			break;
		ms[n++] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	}
	for (int i = 1; i < n; i++) /* insertion sort: ten values */
		for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
			double t = ms[j];
			ms[j] = ms[j - 1], ms[j - 1] = t;
		}
	if (n)
		printf("compile matmul.blk -> PTX (%s, f32 4096³, %s): median %.1f ms over %d\n",
		       blk_runtime_arch(rt), config, ms[n / 2], n);
	blk_runtime_set_cache_dir(rt, dir); /* back for the tuner's timings */
	free(dir);
}

static void compile_time(BlkRuntime *rt, const Options *o)
{
	printf("\n");
	compile_config(rt, o, COMPILE_REF);
	if (strcmp(o->config[BLK_F32], COMPILE_REF) != 0)
		compile_config(rt, o, o->config[BLK_F32]);
}

/* The host side of tuning: loading and compiling every candidate of dt for
 * s³ (what the first tuned launch costs before any timing); with log, the
 * tuner's notes (which candidates were skipped and why). */
static void tune_compile_time(BlkRuntime *rt, const Options *o, BlkDType dt, int64_t s, bool log)
{
	int64_t sh[2] = {s, s};
	BlkTensor t[3];
	for (int j = 0; j < 3; j++)
		t[j] = blk_tensor_make((void *)(uintptr_t)(0x40000000 * (uintptr_t)(j + 1)), (int)dt, 2, sh);
	double t0 = now_ms();
	BlkTuner *tu = make_tuner(rt, o, dt);
	int n = tu ? blk_tuner_compile(tu, t, 3) : -1;
	double ms = now_ms() - t0;
	if (n < 0)
		fprintf(stderr, "blk-bench: tuner compile: %s\n", blk_runtime_last_error(rt));
	else
		printf("compile the %s tuner's candidates (%d of %d compiled, %lld³): %.1f ms\n",
		       blk_dtype_name(dt), n, blk_tuner_num_configs(tu), (long long)s, ms);
	if (tu && log)
		fputs(blk_tuner_log(tu), stdout);
	blk_tuner_destroy(tu);
}

/* --offline: no GPU; every dtype's candidates compiled at every size. */
static int offline(const Options *o)
{
	char err[256];
	const char *arch = getenv("BLK_ARCH");
	BlkRuntime *rt = blk_runtime_create_offline(arch && *arch ? arch : NULL, err, sizeof err);
	if (!rt) {
		fprintf(stderr, "blk-bench: %s\n", err);
		return 1;
	}
	printf("device: %s\n", blk_runtime_device_name(rt));
	const BlkDType order[] = {BLK_F32, BLK_BF16, BLK_F16};
	for (int d = 0; d < 3; d++)
		for (int i = 0; i < o->nsizes; i++)
			tune_compile_time(rt, o, order[d], o->sizes[i], true);
	blk_runtime_destroy(rt);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

/* BLK_F32 etc. for "f32", "f16", "bf16"; -1 otherwise. */
static int dtype_index(const char *name, size_t len)
{
	const BlkDType all[] = {BLK_F32, BLK_F16, BLK_BF16};
	for (int i = 0; i < 3; i++)
		if (strlen(blk_dtype_name(all[i])) == len && strncmp(blk_dtype_name(all[i]), name, len) == 0)
			return (int)all[i];
	return -1;
}

/* --autotune LIST: "all", "none", or dtypes separated by commas. */
static bool parse_tune(const char *v, Options *o)
{
	bool all = strcmp(v, "all") == 0;
	for (int d = 0; d < 3; d++)
		o->tune[d] = all;
	if (all || strcmp(v, "none") == 0)
		return true;
	for (const char *p = v; *p;) {
		size_t len = strcspn(p, ",");
		int d = dtype_index(p, len);
		if (d < 0)
			return false;
		o->tune[d] = true;
		p += len + (p[len] == ',');
	}
	return true;
}

/* --f32 CFG pins a config (no tuning); --tune-f32 LIST tunes over LIST. */
static bool parse_dtype_flag(const char *a, const char *v, Options *o, bool *pinned)
{
	bool tune = strncmp(a, "--tune-", 7) == 0;
	const char *name = a + (tune ? 7 : 2);
	int d = strncmp(a, "--", 2) == 0 ? dtype_index(name, strlen(name)) : -1;
	if (d < 0)
		return false;
	if (tune) {
		o->candidates[d] = v;
		o->tune[d] = true;
	} else {
		o->config[d] = v;
		pinned[d] = true;
	}
	return true;
}

static bool parse_args(int argc, char **argv, Options *o)
{
	bool pinned[3] = {false, false, false};
	bool ok = true;
	*o = (Options){.sizes = {1024, 2048, 4096, 8192}, .nsizes = 4, .budget_ms = 4000,
	               .examples = "examples", .bandwidth = true, .more = true, .tune = {[BLK_F32] = true},
	               .config = {"BM=128,BN=256,BK=32,num_warps=8,num_stages=3",
	                          "BM=256,BN=128,BK=64,num_warps=8,num_stages=3",
	                          "BM=256,BN=128,BK=64,num_warps=8,num_stages=3"}};
	const char *env = getenv("BLK_EXAMPLES_DIR");
	if (env && *env)
		o->examples = env;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--no-bandwidth") == 0) {
			o->bandwidth = false;
			continue;
		}
		if (strcmp(a, "--no-more") == 0) {
			o->more = false;
			continue;
		}
		if (strcmp(a, "--attention-only") == 0) {
			o->attention_only = true;
			continue;
		}
		if (strcmp(a, "--bandwidth-only") == 0) {
			o->bandwidth_only = true;
			continue;
		}
		if (strcmp(a, "--fixed") == 0) {
			parse_tune("none", o);
			continue;
		}
		if (strcmp(a, "--offline") == 0) {
			o->offline = true;
			continue;
		}
		if (!v)
			return false;
		i++;
		if (strcmp(a, "--sizes") == 0) {
			o->nsizes = 0;
			for (const char *s = v; *s && o->nsizes < 8; s += *s == ',')
				o->sizes[o->nsizes++] = strtoll(s, (char **)&s, 10);
		} else if (strcmp(a, "--autotune") == 0) {
			ok = ok && parse_tune(v, o);
		} else if (strcmp(a, "--budget-ms") == 0) {
			o->budget_ms = atof(v);
		} else if (strcmp(a, "--only") == 0) {
			o->only = v;
		} else if (strcmp(a, "--examples") == 0) {
			o->examples = v;
		} else if (!parse_dtype_flag(a, v, o, pinned)) {
			return false;
		}
	}
	for (int d = 0; d < 3; d++)
		o->tune[d] = o->tune[d] && !pinned[d];
	return ok;
}

bool row_wanted(const Options *o, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = o->only; s && *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ',')) {
		if (strncmp(s, name, n) == 0 && (s[n] == ',' || !s[n]))
			return true;
	}
	return !o->only;
}

int main(int argc, char **argv)
{
	Options o;
	if (!parse_args(argc, argv, &o)) {
		fprintf(stderr, "usage: blk-bench [--sizes 1024,2048] [--autotune f32,bf16,f16|all|none] "
		        "[--fixed] [--f32|--f16|--bf16 BM=..,BN=..] [--tune-f32|--tune-f16|--tune-bf16 "
		        "'BM=..,BN=..;BM=..'|search] [--budget-ms N] [--examples DIR] [--no-bandwidth] [--no-more] "
		        "[--bandwidth-only] [--attention-only] [--only NAME,NAME] [--offline]\n");
		return 2;
	}
	if (o.offline)
		return offline(&o);
	char err[512];
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	if (!rt) {
		fprintf(stderr, "blk-bench: %s\n", err);
		return 1;
	}
	Cublas cb;
	if (!cublas_open(&cb))
		return 1;
	printf("device: %s\n\n", blk_runtime_device_name(rt));
	if (o.only) { /* the named linear-layer rows alone */
		gemm_rows(rt, &cb, &o);
		cb.destroy(cb.h);
		blk_runtime_destroy(rt);
		return 0;
	}
	if (o.bandwidth_only || o.attention_only) {
		if (o.bandwidth_only)
			bandwidth(rt, &o);
		if (o.attention_only)
			attention_rows(rt, &o);
		cb.destroy(cb.h);
		blk_runtime_destroy(rt);
		return 0;
	}
	printf("| op | type | size | blk ms | blk TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | blk/cuBLAS | "
	       "check (rel err) | reps | config |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	const BlkDType order[] = {BLK_F32, BLK_BF16, BLK_F16};
	for (int d = 0; d < 3; d++)
		for (int i = 0; i < o.nsizes; i++)
			matmul_case(rt, &cb, &o, order[d], o.sizes[i]);
	if (o.more)
		gemm_rows(rt, &cb, &o);
	if (o.bandwidth)
		bandwidth(rt, &o);
	if (o.more)
		attention_rows(rt, &o);
	compile_time(rt, &o);
	tune_compile_time(rt, &o, BLK_F32, 4096, false);
	cb.destroy(cb.h);
	blk_runtime_destroy(rt);
	return 0;
}
