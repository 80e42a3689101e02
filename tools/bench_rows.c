/* bench_rows.c - blk-bench's rows for the newer examples: the linear-layer
 * and batched matmuls against cuBLAS, column sums and row norms as memory
 * bandwidth, and attention at the shapes tools/bench_torch.py times in
 * torch (the reference a user would call there).
 *
 * Every row is checked against a float64 CPU reference at sampled elements
 * (and the matmuls also against cuBLAS over every element) before it is
 * timed; a kernel that does not compile, or a wrong result, prints the row
 * as failed (-1 ms, WRONG) with the reason on stderr, and the next row runs.
 * Rows with several candidate configs (';' between them) go through the
 * runtime's autotuner; the config column names the one that ran.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { MAX_BASE_DEFS = 8, NORM_SAMPLES = 16, ATTN_SAMPLES = 8 };

/* ---- kernels: one config, or a tuner over several ---------------------- */

/* examples/NAME.blk's kernel NAME with T=dt, the defines in base ("A=1,B=2")
 * and the configs in cands ("cfg;cfg"): one config loads a program (*p),
 * several make a tuner (l->tuner).  false (the error on stderr) if neither. */
static bool kernel_open(BlkRuntime *rt, const Options *o, const char *name, BlkDType dt,
                        const char *base, const char *cands, Launch *l, BlkProgram **p)
{
	char all[512];
	*p = NULL;
	if (!strchr(cands, ';')) {
		snprintf(all, sizeof all, "%s%s%s", base, *base ? "," : "", cands);
		*p = load(rt, o, name, dt, all);
		l->f = *p ? blk_program_kernel(*p, name) : NULL;
		return l->f != NULL;
	}
	char path[512], tdef[32], list[1024];
	snprintf(path, sizeof path, "%s/%s.blk", o->examples, name);
	snprintf(tdef, sizeof tdef, "T=%s", blk_dtype_name(dt));
	snprintf(all, sizeof all, "%s", base);
	const char *defs[MAX_BASE_DEFS] = {tdef};
	int n = 1;
	char *save = NULL;
	for (char *t = strtok_r(all, ",", &save); t && n < MAX_BASE_DEFS; t = strtok_r(NULL, ",", &save))
		defs[n++] = t;
	l->tuner = blk_tuner_create(rt, path, NULL, name, defs, n);
	bool ok = l->tuner != NULL;
	snprintf(list, sizeof list, "%s", cands);
	for (char *c = strtok_r(list, ";", &save); ok && c; c = strtok_r(NULL, ";", &save))
		ok = blk_tuner_add_config_text(l->tuner, c);
	if (!ok)
		fprintf(stderr, "blk-bench: tuner for %s: %s\n", name, blk_runtime_last_error(rt));
	return ok;
}

static void kernel_close(Launch *l, BlkProgram *p)
{
	blk_tuner_destroy(l->tuner);
	blk_program_destroy(p);
	l->tuner = NULL;
	l->f = NULL;
}

/* The config column: the one config, or the tuner's pick of cands. */
static void config_text(const Launch *l, const char *cands, char *buf, size_t len)
{
	BlkTunerResult r;
	if (!l->tuner)
		snprintf(buf, len, "%s", cands);
	else if (blk_tuner_best(l->tuner, l->t, l->n, &r))
		snprintf(buf, len, "%s (tuned: %d of %d)", blk_tuner_config(l->tuner, r.config), r.timed,
		         r.candidates);
	else
		snprintf(buf, len, "(tuning failed)");
}

/* Device buffers of a row, freed together. */
typedef struct Bufs {
	void *d[6];
	int n;
} Bufs;

/* A device copy of bytes from host (or bytes of poison 0xff, NaN in every
 * float dtype, when host is NULL); NULL on failure. */
static void *bufs_add(BlkRuntime *rt, Bufs *b, const void *host, size_t bytes)
{
	void *d = NULL;
	if (!blk_mem_alloc(rt, bytes, &d))
		return NULL;
	b->d[b->n++] = d;
	bool ok = host ? blk_memcpy_htod(rt, d, host, bytes) : blk_memset(rt, d, 0xff, bytes);
	return ok ? d : NULL;
}

static void bufs_free(BlkRuntime *rt, Bufs *b)
{
	for (int i = 0; i < b->n; i++)
		blk_mem_free(rt, b->d[i]);
	b->n = 0;
}

/* Random host data of n elements of dt (values in [-1, 1)). */
static void *host_random(BlkDType dt, size_t n, uint64_t seed)
{
	void *h = malloc(n * blk_tensor_elem_size((int)dt));
	if (h)
		fill(dt, n, h, NULL, seed);
	return h;
}

/* NaN sticks: the larger of worst and e. */
static double worse(double worst, double e)
{
	return !(e <= worst) ? e : worst;
}

/* ---- linear-layer and batched matmuls vs cuBLAS ------------------------ */

typedef enum { G_NT, G_EPILOGUE, G_BMM, G_SPLITK, G_GROUPED, G_INT8 } GemmKind;

/* One row: bt batches of C[M,N] = A[M,K] @ B; B is [N,K] for G_NT.
 * G_INT8: matmul_int8.blk, W8A8: i8 A and B [N, K], C = (A @ B.T) scaled
 * per row of A and of B, f32 (cuBLAS: the i32 product alone).
 * G_GROUPED: A's M rows in bt groups of ragged sizes (group_sizes), B
 * [bt, K, N], row i of C = A[i] @ B[group of i]. */
typedef struct GemmRow {
	GemmKind kind;
	const char *name;
	BlkDType dt;
	int bt, m, n, k;
	const char *config;
	const char *hopper; /* on sm_90a (wgmma, warp specialized), where set */
} GemmRow;

/* The bench's bf16 and f32 configs (bench.c's defaults).  The bf16
 * epilogue tunes over the default and 128x128 (the gelu's registers spill a
 * little at 256x128), f32 over the default (148 bytes of spills) and two
 * spill-free halves. */
#define MMA256 "BM=256,BN=128,BK=64,num_warps=8,num_stages=3"
#define MMA128 "BM=128,BN=128,BK=64,num_warps=8,num_stages=3"
/* sm_90a: two consumer warpgroups of 64x256 (or 128x128) wgmma tiles,
 * 4 slots (docs/gpu-notes.md, runs 33-34). */
#define HOP256 "BM=128,BN=256,BK=64,num_warps=8,num_stages=4"
#define HOP128 "BM=128,BN=128,BK=64,num_warps=8,num_stages=4"
#define HOPTALL "BM=256,BN=128,BK=64,num_warps=8,num_stages=4"
/* one warpgroup a program: two programs a CTA, ping-pong (warp_spec.c) */
#define HOPPP "BM=128,BN=128,BK=64,num_warps=4,num_stages=5"
/* grouped_matmul: its work list is built for BM=128, so every candidate has it */
#define GMM_MMA "BM=128,BN=128,BK=64,num_warps=8,num_stages=3"
#define GMM_HOP HOP256 ";" HOP128 ";" HOPPP
/* 8-bit: k32 wgmma steps, slabs of 128 bytes (one 128-byte swizzle span) */
#define HOPI8 "BM=128,BN=256,BK=128,num_warps=8,num_stages=4;BM=128,BN=128,BK=128,num_warps=8,num_stages=5;" \
	"BM=128,BN=128,BK=128,num_warps=4,num_stages=6"
/* 8-bit on mma.sync (sm_80/sm_89, or BLK_ARCH=sm_80 on an H100): k32
 * steps, slabs of 128 bytes (as MMA256's 64 bf16) */
#define MMAI8 "BM=256,BN=128,BK=128,num_warps=8,num_stages=3;BM=128,BN=256,BK=128,num_warps=8,num_stages=3;" \
	"BM=128,BN=128,BK=128,num_warps=8,num_stages=4"
/* exact f32: cp.async slabs 3 deep, one program an SM with 8x16
 * micro-tiles or two with 8x8 (docs/gpu-notes.md, runs 102, 112) */
#define SIMT_ONE "BM=128,BN=256,BK=32,num_warps=8,num_stages=3"
#define SIMT_TWO "BM=128,BN=128,BK=32,num_warps=8,num_stages=3"
#define SIMT SIMT_ONE ";" SIMT_TWO
#define SIMT_EPI "BM=64,BN=128,BK=16,num_warps=8,num_stages=3;BM=128,BN=64,BK=16,num_warps=8,num_stages=3"
static const GemmRow gemm_table[] = {
	{G_NT, "matmul_nt", BLK_BF16, 1, 4096, 4096, 4096, MMA256, HOP256 ";" HOPPP},
	{G_NT, "matmul_nt", BLK_BF16, 1, 8192, 8192, 8192, MMA256, HOP256 ";" HOPPP},
	/* the same kernel with dynamic (M, N, K): sizes as arguments */
	{G_NT, "matmul_dynamic", BLK_BF16, 1, 4096, 4096, 4096, MMA256, HOP256 ";" HOPPP},
	{G_NT, "matmul_dynamic", BLK_BF16, 1, 8192, 8192, 8192, MMA256, HOP256 ";" HOPPP},
	{G_EPILOGUE, "matmul_epilogue", BLK_BF16, 1, 4096, 4096, 4096, MMA256 ";" MMA128,
	 HOP256 ";" HOPTALL ";" HOP128 ";" HOPPP},
	{G_BMM, "bmm", BLK_BF16, 16, 1024, 1024, 1024, MMA256, HOP256 ";" HOPPP},
	{G_SPLITK, "matmul_splitk", BLK_BF16, 1, 1024, 1024, 16384, MMA128 ",S=8;" MMA128 ",S=4;" MMA256 ",S=4",
	 HOP128 ",S=8;" HOP128 ",S=4;" HOP256 ",S=4"},
	{G_NT, "matmul_nt", BLK_F32, 1, 4096, 4096, 4096, SIMT, NULL},
	{G_EPILOGUE, "matmul_epilogue", BLK_F32, 1, 4096, 4096, 4096, SIMT ";" SIMT_EPI, NULL},
	{G_BMM, "bmm", BLK_F32, 16, 1024, 1024, 1024, SIMT, NULL},
	{G_SPLITK, "matmul_splitk", BLK_F32, 1, 1024, 1024, 16384, SIMT_ONE ",S=8;" SIMT_TWO ",S=8", NULL},
	{G_GROUPED, "grouped_matmul", BLK_BF16, 8, 16384, 4096, 4096, GMM_MMA, GMM_HOP},
	{G_INT8, "matmul_int8", BLK_I8, 1, 4096, 4096, 4096, MMAI8, HOPI8},
	{G_INT8, "matmul_int8", BLK_I8, 1, 8192, 8192, 8192, MMAI8, HOPI8},
};

/* 8 groups (experts) of 16384 rows, ragged, none a multiple of 128. */
static const int group_sizes[8] = {1933, 2917, 1024 + 77, 2500, 811, 3100, 1709, 2313};
enum { GMM_BM = 128 };

/* The arrays of one row, host and device; C is f32 for split-K. */
typedef struct Gemm {
	const GemmRow *r;
	Cublas *cb;
	BlkRuntime *rt;
	BlkDType out_dt;
	size_t na, nb, nc;
	void *ha, *hb, *hbias, *hc_blk, *hc_cb;
	void *da, *db, *dbias, *dc_blk, *dc_cb;
	float *hsx; /* G_INT8: A's row scales (B's are hbias) */
	void *dsx;
	int32_t *hwork; /* G_GROUPED: the work list, W items of (block, group, lo, hi) */
	void *dwork;
	int64_t nwork;
	Bufs bufs;
	Launch l;
} Gemm;

/* The group of row i and its first row. */
static int group_of(int64_t i, int64_t *lo)
{
	int g = 0;
	for (*lo = 0; g < 7 && i >= *lo + group_sizes[g]; g++)
		*lo += group_sizes[g];
	return g;
}

/* grouped_matmul's work list (examples/grouped_matmul.blk) for BM=128,
 * padded with empty items to cdiv(M, BM) + G - 1, its size for any sizes. */
static bool work_make(Gemm *g)
{
	const GemmRow *r = g->r;
	g->nwork = (r->m + GMM_BM - 1) / GMM_BM + r->bt - 1;
	g->hwork = calloc((size_t)g->nwork * 4, sizeof *g->hwork);
	int64_t t = 0, lo = 0;
	for (int q = 0; g->hwork && q < r->bt; lo += group_sizes[q++])
		for (int64_t b = lo / GMM_BM; group_sizes[q] && b <= (lo + group_sizes[q] - 1) / GMM_BM; b++, t++) {
			int32_t *w = g->hwork + t * 4;
			w[0] = (int32_t)b, w[1] = q, w[2] = (int32_t)lo, w[3] = (int32_t)(lo + group_sizes[q]);
		}
	return g->hwork && lo == r->m && t <= g->nwork &&
	       (g->dwork = bufs_add(g->rt, &g->bufs, g->hwork, (size_t)g->nwork * 16));
}

static bool gemm_make(BlkRuntime *rt, Gemm *g)
{
	const GemmRow *r = g->r;
	size_t esz = blk_tensor_elem_size((int)r->dt);
	size_t osz = blk_tensor_elem_size((int)g->out_dt);
	size_t bt = r->kind == G_GROUPED ? 1 : (size_t)r->bt;
	g->na = bt * (size_t)r->m * (size_t)r->k;
	g->nb = (size_t)r->bt * (size_t)r->k * (size_t)r->n;
	g->nc = bt * (size_t)r->m * (size_t)r->n;
	g->ha = host_random(r->dt, g->na, 31);
	g->hb = host_random(r->dt, g->nb, 32);
	BlkDType sdt = r->kind == G_INT8 ? BLK_F32 : r->dt; /* bias, or B's scales */
	g->hbias = host_random(sdt, (size_t)r->n, 33);
	g->hsx = r->kind == G_INT8 ? host_random(BLK_F32, (size_t)r->m, 34) : NULL;
	g->hc_blk = malloc(g->nc * osz);
	g->hc_cb = malloc(g->nc * osz);
	if (!g->ha || !g->hb || !g->hbias || !g->hc_blk || !g->hc_cb || (r->kind == G_INT8 && !g->hsx))
		return false;
	if (r->kind == G_INT8 && !(g->dsx = bufs_add(rt, &g->bufs, g->hsx, (size_t)r->m * sizeof(float))))
		return false;
	if (r->kind == G_GROUPED && !work_make(g))
		return false;
	return (g->da = bufs_add(rt, &g->bufs, g->ha, g->na * esz)) &&
	       (g->db = bufs_add(rt, &g->bufs, g->hb, g->nb * esz)) &&
	       (g->dbias = bufs_add(rt, &g->bufs, g->hbias, (size_t)r->n * blk_tensor_elem_size((int)sdt))) &&
	       (g->dc_blk = bufs_add(rt, &g->bufs, NULL, g->nc * osz)) &&
	       (g->dc_cb = bufs_add(rt, &g->bufs, NULL, g->nc * osz));
}

static void gemm_free(BlkRuntime *rt, Gemm *g)
{
	free(g->ha), free(g->hb), free(g->hbias), free(g->hc_blk), free(g->hc_cb), free(g->hwork);
	free(g->hsx);
	bufs_free(rt, &g->bufs);
}

/* The kernel's tensors: a, b, [bias], c; rank 3 for bmm. */
static void gemm_tensors(Gemm *g)
{
	const GemmRow *r = g->r;
	int rank = r->kind == G_BMM ? 3 : 2, o = rank == 3 ? 0 : 1;
	int64_t sa[3] = {r->bt, r->m, r->k}, sc[3] = {r->bt, r->m, r->n};
	int64_t sb[3] = {r->bt, r->k, r->n}, snt[3] = {r->bt, r->n, r->k}, sbias[1] = {r->n};
	int n = 0;
	if (r->kind == G_GROUPED) {
		int64_t sw[2] = {g->nwork, 4};
		g->l.t[n++] = blk_tensor_make(g->dwork, BLK_DTYPE_I32, 2, sw);
		g->l.t[n++] = blk_tensor_make(g->da, (int)r->dt, 2, sa + 1);
		g->l.t[n++] = blk_tensor_make(g->db, (int)r->dt, 3, sb);
		g->l.t[n++] = blk_tensor_make(g->dc_blk, (int)g->out_dt, 2, sc + 1);
		g->l.n = n;
		return;
	}
	g->l.t[n++] = blk_tensor_make(g->da, (int)r->dt, rank, sa + o);
	bool nt = r->kind == G_NT || r->kind == G_INT8;
	g->l.t[n++] = blk_tensor_make(g->db, (int)r->dt, rank, nt ? snt + o : sb + o);
	if (r->kind == G_EPILOGUE)
		g->l.t[n++] = blk_tensor_make(g->dbias, (int)r->dt, 1, sbias);
	if (r->kind == G_INT8) {
		g->l.t[n++] = blk_tensor_make(g->dsx, BLK_DTYPE_F32, 1, sa + 1);
		g->l.t[n++] = blk_tensor_make(g->dbias, BLK_DTYPE_F32, 1, sbias);
	}
	g->l.t[n++] = blk_tensor_make(g->dc_blk, (int)g->out_dt, rank, sc + o);
	g->l.n = n;
}

/* blk's launch; split-K zeroes C first (the caller's job, so timed too). */
static bool run_gemm_blk(void *ctx)
{
	Gemm *g = ctx;
	if (g->r->kind == G_SPLITK &&
	    !blk_memset(g->rt, g->dc_blk, 0, g->nc * blk_tensor_elem_size((int)g->out_dt)))
		return false;
	return run_blk(&g->l);
}

static cudaDataType cuda_type(BlkDType dt)
{
	return dt == BLK_F32 ? CUDA_R_32F : dt == BLK_BF16 ? CUDA_R_16BF : CUDA_R_16F;
}

/* cuBLAS's counterpart.  Row-major C[M,N] = A[M,K] B[K,N] is column-major
 * C^T = B^T A^T, so B goes first; a row-major B[N,K] used transposed (NT)
 * is transa=T there.  Epilogue: the matmul alone (no bias, no gelu).
 * Split-K: GemmEx with an f32 C, as blk's.  bmm: strided-batched GemmEx.
 * f32 through GemmEx with CUBLAS_COMPUTE_32F (math mode default: no TF32).
 * Grouped: one GemmEx per non-empty group, as a user without a grouped
 * kernel would call it. */
static bool run_gemm_cublas(void *ctx)
{
	Gemm *g = ctx;
	const GemmRow *r = g->r;
	const float one = 1.0f, zero = 0.0f;
	cudaDataType t = cuda_type(r->dt), tc = cuda_type(g->out_dt);
	size_t esz = blk_tensor_elem_size((int)r->dt);
	for (int q = 0, lo = 0; r->kind == G_GROUPED && q < r->bt; lo += group_sizes[q++]) {
		cublasStatus_t s = g->cb->gemm_ex(
			g->cb->h, CUBLAS_OP_N, CUBLAS_OP_N, r->n, group_sizes[q], r->k, &one,
			(char *)g->db + (size_t)q * r->k * r->n * esz, t, r->n,
			(char *)g->da + (size_t)lo * r->k * esz, t, r->k, &zero,
			(char *)g->dc_cb + (size_t)lo * r->n * esz, tc, r->n, CUBLAS_COMPUTE_32F,
			CUBLAS_GEMM_DEFAULT);
		if (s != CUBLAS_STATUS_SUCCESS) {
			fprintf(stderr, "blk-bench: cuBLAS (%s) failed: status %d\n", r->name, (int)s);
			return false;
		}
	}
	if (r->kind == G_GROUPED)
		return true;
	bool nt = r->kind == G_NT || r->kind == G_INT8;
	cublasOperation_t ta = nt ? CUBLAS_OP_T : CUBLAS_OP_N;
	int ldb = nt ? r->k : r->n;
	const int32_t ione = 1, izero = 0;
	cublasStatus_t s;
	if (r->kind == G_INT8) /* "TN", int8's layout: i32 sums, compute 32I */
		s = g->cb->gemm_ex(g->cb->h, ta, CUBLAS_OP_N, r->n, r->m, r->k, &ione, g->db, CUDA_R_8I, ldb,
		                   g->da, CUDA_R_8I, r->k, &izero, g->dc_cb, CUDA_R_32I, r->n,
		                   CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
	else if (r->kind == G_BMM)
		s = g->cb->gemm_strided(g->cb->h, ta, CUBLAS_OP_N, r->n, r->m, r->k, &one, g->db, t, ldb,
		                        (long long)r->k * r->n, g->da, t, r->k, (long long)r->m * r->k,
		                        &zero, g->dc_cb, tc, r->n, (long long)r->m * r->n, r->bt,
		                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	else
		s = g->cb->gemm_ex(g->cb->h, ta, CUBLAS_OP_N, r->n, r->m, r->k, &one, g->db, t, ldb, g->da,
		                   t, r->k, &zero, g->dc_cb, tc, r->n, CUBLAS_COMPUTE_32F,
		                   CUBLAS_GEMM_DEFAULT);
	if (s != CUBLAS_STATUS_SUCCESS)
		fprintf(stderr, "blk-bench: cuBLAS (%s) failed: status %d\n", r->name, (int)s);
	return s == CUBLAS_STATUS_SUCCESS;
}

static double gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* A @ B at (b, i, j) in float64. */
static double gemm_ref(const Gemm *g, size_t b, size_t i, size_t j)
{
	const GemmRow *r = g->r;
	size_t m = (size_t)r->m, n = (size_t)r->n, k = (size_t)r->k;
	double acc = 0;
	int64_t lo;
	size_t bb = r->kind == G_GROUPED ? (size_t)group_of((int64_t)i, &lo) : b; /* B's batch */
	b = r->kind == G_GROUPED ? 0 : b;
	for (size_t p = 0; p < k; p++) {
		size_t ib = r->kind == G_NT || r->kind == G_INT8 ? j * k + p : (bb * k + p) * n + j;
		acc += value_at(r->dt, g->ha, (b * m + i) * k + p) * value_at(r->dt, g->hb, ib);
	}
	return acc;
}

/* blk and cuBLAS against float64 at sampled elements (blk with the bias and
 * gelu of the epilogue), and against each other everywhere (but for the
 * epilogue); the worst error relative to the largest |reference|. */
static double gemm_check(const Gemm *g)
{
	const GemmRow *r = g->r;
	bool q = r->kind == G_INT8; /* blk scales the exact i32 sums cuBLAS gives */
	BlkDType cdt = q ? BLK_I32 : g->out_dt;
	double scale = 0, cscale = 0, worst = 0, cworst = 0;
	uint64_t seed = 78;
	for (int s = 0; s < SAMPLES; s++) {
		size_t b = rng_next(&seed) % (uint64_t)r->bt, i = rng_next(&seed) % (uint64_t)r->m;
		b = r->kind == G_GROUPED ? 0 : b; /* C has one batch; gemm_ref finds the group */
		size_t j = s ? rng_next(&seed) % (uint64_t)r->n : (size_t)r->n - 1;
		size_t at = (b * (size_t)r->m + i) * (size_t)r->n + j;
		double ref = gemm_ref(g, b, i, j);
		double act = r->kind == G_EPILOGUE ? gelu_tanh(ref + value_at(r->dt, g->hbias, j))
		             : q ? ref * g->hsx[i] * value_at(BLK_F32, g->hbias, j) : ref;
		scale = fmax(scale, fabs(act));
		cscale = fmax(cscale, fabs(ref));
		worst = worse(worst, fabs(value_at(g->out_dt, g->hc_blk, at) - act));
		cworst = worse(cworst, fabs(value_at(cdt, g->hc_cb, at) - ref));
	}
	for (size_t i = 0; r->kind != G_EPILOGUE && i < g->nc; i++) {
		double c = value_at(cdt, g->hc_cb, i);
		if (q)
			c *= (double)g->hsx[i / (size_t)r->n] * value_at(BLK_F32, g->hbias, i % (size_t)r->n);
		worst = worse(worst, fabs(value_at(g->out_dt, g->hc_blk, i) - c));
	}
	return worse(worst / (scale > 0 ? scale : 1), cworst / (cscale > 0 ? cscale : 1));
}

static void gemm_row(BlkRuntime *rt, Cublas *cb, const Options *o, const GemmRow *r)
{
	Gemm g = {.r = r, .cb = cb, .rt = rt,
	          .out_dt = r->kind == G_SPLITK || r->kind == G_INT8 ? BLK_F32 : r->dt};
	BlkProgram *p = NULL;
	const char *config = r->hopper && strcmp(blk_runtime_arch(rt), "sm_90a") == 0 ? r->hopper : r->config;
	bool ok = kernel_open(rt, o, r->name, r->dt, "", config, &g.l, &p) && gemm_make(rt, &g);
	size_t obytes = g.nc * blk_tensor_elem_size((int)g.out_dt);
	gemm_tensors(&g);
	/* The tuner times its candidates on these tensors at the first launch,
	 * so it runs first and C is poisoned again: the check sees only what
	 * the chosen candidate writes (split-K adds into C and is zeroed
	 * for the check: the runtime's tuner does not reset an accumulated
	 * output). */
	if (ok && strchr(config, ';'))
		ok = run_gemm_blk(&g) && blk_synchronize(rt) &&
		     (r->kind == G_SPLITK || blk_memset(rt, g.dc_blk, 0xff, obytes));
	ok = ok && run_gemm_blk(&g) && run_gemm_cublas(&g) && blk_synchronize(rt) &&
	     blk_memcpy_dtoh(rt, g.hc_blk, g.dc_blk, obytes) && blk_memcpy_dtoh(rt, g.hc_cb, g.dc_cb, obytes);
	if (!ok)
		fprintf(stderr, "blk-bench: %s %s: %s\n", r->name, blk_dtype_name(r->dt),
		        blk_runtime_last_error(rt));
	double err = ok ? gemm_check(&g) : NAN;
	bool good = ok && err <= matmul_tol(r->dt);
	int rb = 0, rc = 0;
	double tb = good ? time_median(rt, run_gemm_blk, &g, o->budget_ms, &rb) : -1;
	double tc = good ? time_median(rt, run_gemm_cublas, &g, o->budget_ms, &rc) : -1;
	double fl = 2.0 * (r->kind == G_GROUPED ? 1 : r->bt) * (double)r->m * r->n * r->k;
	char size[48], cfg[256];
	if (r->kind == G_GROUPED)
		snprintf(size, sizeof size, "%dx%dx%d, %d groups", r->m, r->n, r->k, r->bt);
	else if (r->bt > 1)
		snprintf(size, sizeof size, "%d×%dx%dx%d", r->bt, r->m, r->n, r->k);
	else
		snprintf(size, sizeof size, "%dx%dx%d", r->m, r->n, r->k);
	config_text(&g.l, config, cfg, sizeof cfg);
	printf("| %s | %-4s | %s | %9.3f | %7.1f | %9.3f | %7.1f | %5.2f | %.1e %s | %d/%d | %s |\n",
	       r->name, blk_dtype_name(r->dt), size, tb, tb > 0 ? fl / tb / 1e9 : 0, tc,
	       tc > 0 ? fl / tc / 1e9 : 0, tb > 0 && tc > 0 ? tc / tb : 0, err, good ? "ok" : "WRONG",
	       rb, rc, cfg);
	fflush(stdout);
	gemm_free(rt, &g);
	kernel_close(&g.l, p);
}

void gemm_rows(BlkRuntime *rt, Cublas *cb, const Options *o)
{
	printf("\nLinear-layer and batched matmuls.  cuBLAS: matmul_nt vs cublasGemmEx with B "
	       "transposed; matmul_epilogue vs cuBLAS's plain matmul (no bias, no gelu: the fusion's "
	       "cost shows as the gap); bmm vs cublasGemmStridedBatchedEx; matmul_splitk (f32 C, "
	       "zeroed inside the timing) vs cublasGemmEx with an f32 C; grouped_matmul (scalar prefetch: "
	       "a work list in the index maps) vs one cublasGemmEx per group; matmul_int8 (W8A8: i8 x @ "
	       "w.T, scaled to f32 per row) vs cublasGemmEx i8 -> i32 (compute 32I, TN); its TFLOP/s are "
	       "TOP/s.\n\n");
	printf("| op | type | size | blk ms | blk TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | blk/cuBLAS | "
	       "check (rel err) | reps | config |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (size_t i = 0; i < sizeof gemm_table / sizeof gemm_table[0]; i++)
		if (row_wanted(o, gemm_table[i].name))
			gemm_row(rt, cb, o, &gemm_table[i]);
}

/* ---- colsum, layernorm, rmsnorm, cumsum: bandwidth ----------------------- */

typedef enum { N_COLSUM, N_LAYER, N_RMS, N_CUMSUM } NormKind;

typedef struct NormRow {
	NormKind kind;
	const char *name;
	BlkDType dt;
	size_t r, c;
	const char *cands;
} NormRow;

static const NormRow norm_table[] = {
	{N_COLSUM, "colsum", BLK_F32, 8192, 8192,
	 "BR=64,BC=32;BR=128,BC=32;BR=256,BC=32,num_warps=8;BR=64,BC=64;BR=32,BC=16"},
	{N_LAYER, "layernorm", BLK_BF16, 16384, 4096,
	 "BR=1,num_warps=8;BR=1,num_warps=4;BR=2,num_warps=8;BR=1,num_warps=16;BR=2,num_warps=16;BR=4,num_warps=16"},
	{N_RMS, "rmsnorm", BLK_BF16, 16384, 4096,
	 "BR=1,num_warps=8;BR=1,num_warps=4;BR=2,num_warps=8;BR=1,num_warps=16;BR=2,num_warps=16;BR=4,num_warps=16"},
	{N_CUMSUM, "cumsum", BLK_F32, 16384, 4096,
	 "BR=4,BC=1024;BR=2,BC=1024;BR=1,BC=2048,num_warps=8;BR=4,BC=512;BR=8,BC=512,num_warps=8;BR=1,BC=4096,num_warps=8;BR=2,BC=2048,num_warps=8"},
};

/* Host inputs x [r, c], w [c], b [c] and the output copied back. */
typedef struct Norm {
	const NormRow *n;
	BlkDType out_dt;
	size_t nout;
	void *hx, *hw, *hb, *hy;
	void *dy;
	Bufs bufs;
	Launch l;
} Norm;

static bool norm_make(BlkRuntime *rt, Norm *x)
{
	const NormRow *n = x->n;
	size_t esz = blk_tensor_elem_size((int)n->dt), osz = blk_tensor_elem_size((int)x->out_dt);
	int64_t sx[2] = {(int64_t)n->r, (int64_t)n->c}, sw[1] = {(int64_t)n->c};
	x->nout = n->kind == N_COLSUM ? n->c : n->r * n->c; /* cumsum: [r, c] too */
	x->hx = host_random(n->dt, n->r * n->c, 41);
	x->hw = host_random(n->dt, n->c, 42);
	x->hb = host_random(n->dt, n->c, 43);
	x->hy = malloc(x->nout * osz);
	if (!x->hx || !x->hw || !x->hb || !x->hy)
		return false;
	void *dx = bufs_add(rt, &x->bufs, x->hx, n->r * n->c * esz);
	void *dw = bufs_add(rt, &x->bufs, x->hw, n->c * esz);
	void *db = bufs_add(rt, &x->bufs, x->hb, n->c * esz);
	x->dy = bufs_add(rt, &x->bufs, NULL, x->nout * osz);
	int k = 0;
	x->l.t[k++] = blk_tensor_make(dx, (int)n->dt, 2, sx);
	if (n->kind != N_COLSUM && n->kind != N_CUMSUM)
		x->l.t[k++] = blk_tensor_make(dw, (int)n->dt, 1, sw);
	if (n->kind == N_LAYER)
		x->l.t[k++] = blk_tensor_make(db, (int)n->dt, 1, sw);
	x->l.t[k++] = blk_tensor_make(x->dy, (int)x->out_dt, n->kind == N_COLSUM ? 1 : 2,
	                              n->kind == N_COLSUM ? sw : sx);
	x->l.n = k;
	return dx && dw && db && x->dy;
}

static void norm_free(BlkRuntime *rt, Norm *x)
{
	free(x->hx), free(x->hw), free(x->hb), free(x->hy);
	bufs_free(rt, &x->bufs);
}

/* Column j's sum in float64, within 1e-5 of the sum of |x|. */
static bool colsum_ok(const Norm *x, size_t j)
{
	const NormRow *n = x->n;
	double s = 0, abs_sum = 0;
	for (size_t i = 0; i < n->r; i++) {
		double v = value_at(n->dt, x->hx, i * n->c + j);
		s += v, abs_sum += fabs(v);
	}
	return fabs(value_at(BLK_F32, x->hy, j) - s) <= 1e-5 * fmax(abs_sum, 1);
}

/* Row i's prefix sums in float64, each within 1e-5 of the sum of |x| so far. */
static bool cumsum_row_ok(const Norm *x, size_t i)
{
	const NormRow *n = x->n;
	double s = 0, abs_sum = 0;
	for (size_t j = 0; j < n->c; j++) {
		double v = value_at(n->dt, x->hx, i * n->c + j);
		s += v, abs_sum += fabs(v);
		if (!(fabs(value_at(n->dt, x->hy, i * n->c + j) - s) <= 1e-5 * fmax(abs_sum, 1)))
			return false;
	}
	return true;
}

/* Row i normalized in float64 (eps: the kernels' defaults), within the
 * dtype's tolerance of the row's largest |value|. */
static bool norm_row_ok(const Norm *x, size_t i)
{
	const NormRow *n = x->n;
	bool layer = n->kind == N_LAYER;
	double mean = 0, var = 0, big = 0, worst = 0;
	for (size_t j = 0; layer && j < n->c; j++)
		mean += value_at(n->dt, x->hx, i * n->c + j) / (double)n->c;
	for (size_t j = 0; j < n->c; j++) {
		double d = value_at(n->dt, x->hx, i * n->c + j) - mean;
		var += d * d / (double)n->c;
	}
	double inv = 1 / sqrt(var + (layer ? 1e-5 : 1e-6));
	for (size_t j = 0; j < n->c; j++) {
		double y = (value_at(n->dt, x->hx, i * n->c + j) - mean) * inv * value_at(n->dt, x->hw, j);
		y += layer ? value_at(n->dt, x->hb, j) : 0;
		big = fmax(big, fabs(y));
		worst = worse(worst, fabs(value_at(n->dt, x->hy, i * n->c + j) - y));
	}
	return worst <= (n->dt == BLK_F32 ? 1e-4 : 2e-2) * fmax(big, 1e-3);
}

/* Sampled columns (colsum) or rows (norms), the last one included. */
static bool norm_check(const Norm *x)
{
	uint64_t seed = 12;
	size_t count = x->n->kind == N_COLSUM ? x->n->c : x->n->r;
	bool ok = true;
	for (int s = 0; ok && s < NORM_SAMPLES; s++) {
		size_t at = s ? rng_next(&seed) % count : count - 1;
		ok = x->n->kind == N_COLSUM ? colsum_ok(x, at)
		   : x->n->kind == N_CUMSUM ? cumsum_row_ok(x, at) : norm_row_ok(x, at);
	}
	return ok;
}

/* One bandwidth row; cfg gets the config that ran (printed under the table). */
static void norm_row(BlkRuntime *rt, const Options *o, const NormRow *n, double copy_gbs,
                     char *cfg, size_t cfglen)
{
	Norm x = {.n = n, .out_dt = n->kind == N_COLSUM ? BLK_F32 : n->dt};
	BlkProgram *p = NULL;
	bool ok = kernel_open(rt, o, n->name, n->dt, "", n->cands, &x.l, &p) && norm_make(rt, &x);
	ok = ok && run_blk(&x.l) && blk_synchronize(rt) &&
	     blk_memcpy_dtoh(rt, x.hy, x.dy, x.nout * blk_tensor_elem_size((int)x.out_dt));
	if (!ok)
		fprintf(stderr, "blk-bench: %s: %s\n", n->name, blk_runtime_last_error(rt));
	bool good = ok && norm_check(&x);
	int reps = 0;
	double ms = good ? time_median(rt, run_blk, &x.l, o->budget_ms, &reps) : -1;
	/* Bytes moved: x read once, the output written, the weights read. */
	size_t esz = blk_tensor_elem_size((int)n->dt);
	double bytes = (double)(n->r * n->c * esz + x.nout * blk_tensor_elem_size((int)x.out_dt));
	bytes += n->kind == N_LAYER ? 2.0 * n->c * esz : n->kind == N_RMS ? (double)n->c * esz : 0;
	char size[48];
	snprintf(size, sizeof size, "%zux%zu %s", n->r, n->c, blk_dtype_name(n->dt));
	config_text(&x.l, n->cands, cfg, cfglen);
	bw_row(n->name, size, ms, bytes, copy_gbs, good, reps);
	norm_free(rt, &x);
	kernel_close(&x.l, p);
}

/* ---- embedding: a gather of rows -------------------------------------- */

enum { EMB_N = 65536, EMB_V = 32768, EMB_D = 1024 };
#define EMB_CANDS "BN=16,BD=512;BN=8,BD=1024;BN=32,BD=256;BN=16,BD=1024,num_warps=8;BN=4,BD=1024"

/* Sampled rows of y equal to the table's rows the ids name. */
static bool embed_ok(const int32_t *ids, const float *table, const float *y)
{
	uint64_t seed = 13;
	for (int s = 0; s < NORM_SAMPLES; s++) {
		size_t i = s ? rng_next(&seed) % EMB_N : EMB_N - 1;
		if (memcmp(y + i * EMB_D, table + (size_t)ids[i] * EMB_D, EMB_D * sizeof(float)))
			return false;
	}
	return true;
}

/* y[i, :] = table[ids[i], :], f32: bytes moved are the rows read and
 * written and the ids. */
static void embed_row(BlkRuntime *rt, const Options *o, double copy_gbs, char *cfg, size_t cfglen)
{
	Launch l = {0};
	Bufs b = {0};
	BlkProgram *p = NULL;
	size_t tbytes = (size_t)EMB_V * EMB_D * 4, ybytes = (size_t)EMB_N * EMB_D * 4;
	int32_t *ids = malloc(EMB_N * sizeof *ids);
	float *table = host_random(BLK_F32, (size_t)EMB_V * EMB_D, 61), *y = malloc(ybytes);
	uint64_t seed = 62;
	for (size_t i = 0; ids && i < EMB_N; i++)
		ids[i] = (int32_t)(rng_next(&seed) % EMB_V);
	bool ok = ids && table && y && kernel_open(rt, o, "embedding", BLK_F32, "", EMB_CANDS, &l, &p);
	void *di = ok ? bufs_add(rt, &b, ids, EMB_N * 4) : NULL, *dt = ok ? bufs_add(rt, &b, table, tbytes) : NULL;
	void *dy = ok ? bufs_add(rt, &b, NULL, ybytes) : NULL;
	int64_t si[1] = {EMB_N}, st[2] = {EMB_V, EMB_D}, sy[2] = {EMB_N, EMB_D};
	l.t[0] = blk_tensor_make(di, BLK_DTYPE_I32, 1, si);
	l.t[1] = blk_tensor_make(dt, BLK_DTYPE_F32, 2, st);
	l.t[2] = blk_tensor_make(dy, BLK_DTYPE_F32, 2, sy);
	l.n = 3;
	ok = ok && di && dt && dy && run_blk(&l) && blk_synchronize(rt) && blk_memcpy_dtoh(rt, y, dy, ybytes);
	if (!ok)
		fprintf(stderr, "blk-bench: embedding: %s\n", blk_runtime_last_error(rt));
	bool good = ok && embed_ok(ids, table, y);
	int reps = 0;
	double ms = good ? time_median(rt, run_blk, &l, o->budget_ms, &reps) : -1;
	char size[48];
	snprintf(size, sizeof size, "%dx%d of %d rows f32", EMB_N, EMB_D, EMB_V);
	config_text(&l, EMB_CANDS, cfg, cfglen);
	bw_row("embedding", size, ms, 2.0 * (double)ybytes + EMB_N * 4.0, copy_gbs, good, reps);
	free(ids), free(table), free(y);
	bufs_free(rt, &b);
	kernel_close(&l, p);
}

void norm_rows(BlkRuntime *rt, const Options *o, double copy_gbs)
{
	enum { N = sizeof norm_table / sizeof norm_table[0] };
	char cfg[N][256];
	char ecfg[256];
	for (size_t i = 0; i < N; i++)
		norm_row(rt, o, &norm_table[i], copy_gbs, cfg[i], sizeof cfg[i]);
	embed_row(rt, o, copy_gbs, ecfg, sizeof ecfg);
	printf("\n");
	for (size_t i = 0; i < N; i++)
		printf("%s config: %s\n", norm_table[i].name, cfg[i]);
	printf("embedding config: %s\n", ecfg);
}

/* ---- attention ----------------------------------------------------------- */

typedef struct AttnRow {
	int bh, s, d;
	bool causal;
	const char *cands;
} AttnRow;

/* bf16, BH=32, S=4096: tools/bench_torch.py's shapes. */
#define ATTN64 "BQ=64,BK=64,num_warps=4;BQ=128,BK=64,num_warps=8;BQ=128,BK=32,num_warps=8;BQ=64,BK=64,num_warps=4,num_stages=3;BQ=128,BK=64,num_warps=8,num_stages=3;BQ=128,BK=64,num_warps=8,num_stages=4;BQ=128,BK=128,num_warps=8,num_stages=2;BQ=128,BK=128,num_warps=8,num_stages=3"
#define ATTN128 "BQ=128,BK=128,num_warps=8,num_stages=2;BQ=128,BK=64,num_warps=8;BQ=64,BK=64,num_warps=4;BQ=128,BK=32,num_warps=8;BQ=64,BK=64,num_warps=4,num_stages=3;BQ=128,BK=64,num_warps=8,num_stages=3;BQ=128,BK=32,num_warps=8,num_stages=3;BQ=64,BK=32,num_warps=4,num_stages=3;BQ=128,BK=64,num_warps=8,num_stages=4"
static const AttnRow attn_table[] = {
	{32, 4096, 64, false, ATTN64},
	{32, 4096, 64, true, ATTN64},
	{32, 4096, 128, false, ATTN128},
	{32, 4096, 128, true, ATTN128},
};

typedef struct Attn {
	const AttnRow *a;
	size_t n;
	void *h[4]; /* q, k, v, o */
	void *d_o;
	Bufs bufs;
	Launch l;
} Attn;

static bool attn_make(BlkRuntime *rt, Attn *x)
{
	const AttnRow *a = x->a;
	int64_t sh[3] = {a->bh, a->s, a->d};
	x->n = (size_t)a->bh * (size_t)a->s * (size_t)a->d;
	size_t bytes = x->n * 2;
	bool ok = true;
	for (int i = 0; i < 4; i++) {
		x->h[i] = i < 3 ? host_random(BLK_BF16, x->n, 51 + (uint64_t)i) : malloc(bytes);
		void *d = x->h[i] ? bufs_add(rt, &x->bufs, i < 3 ? x->h[i] : NULL, bytes) : NULL;
		x->l.t[i] = blk_tensor_make(d, BLK_DTYPE_BF16, 3, sh);
		ok = ok && d;
	}
	x->d_o = x->l.t[3].data;
	x->l.n = 4;
	return ok;
}

static void attn_free(BlkRuntime *rt, Attn *x)
{
	for (int i = 0; i < 4; i++)
		free(x->h[i]);
	bufs_free(rt, &x->bufs);
}

/* Query row r of head h against float64 softmax(q k^T / sqrt(D)) v over
 * the keys it may see; within 2e-2 of the row's largest |value| (bf16). */
static bool attn_row_ok(const Attn *x, size_t h, size_t r, double *p, double *out)
{
	const AttnRow *a = x->a;
	size_t s = (size_t)a->s, d = (size_t)a->d, base = h * s * d;
	size_t keys = a->causal ? r + 1 : s;
	double m = -INFINITY, l = 0, big = 0, worst = 0;
	for (size_t j = 0; j < keys; j++) {
		double dot = 0;
		for (size_t e = 0; e < d; e++)
			dot += value_at(BLK_BF16, x->h[0], base + r * d + e) *
			       value_at(BLK_BF16, x->h[1], base + j * d + e);
		p[j] = dot / sqrt((double)d);
		m = fmax(m, p[j]);
	}
	for (size_t j = 0; j < keys; j++)
		l += p[j] = exp(p[j] - m);
	for (size_t e = 0; e < d; e++)
		out[e] = 0;
	for (size_t j = 0; j < keys; j++)
		for (size_t e = 0; e < d; e++)
			out[e] += p[j] / l * value_at(BLK_BF16, x->h[2], base + j * d + e);
	for (size_t e = 0; e < d; e++) {
		big = fmax(big, fabs(out[e]));
		worst = worse(worst, fabs(value_at(BLK_BF16, x->h[3], base + r * d + e) - out[e]));
	}
	return worst <= 2e-2 * fmax(big, 1e-3);
}

/* Sampled (head, row) pairs: the first and last rows and random ones. */
static bool attn_check(const Attn *x)
{
	double *p = malloc((size_t)x->a->s * sizeof *p), *out = malloc((size_t)x->a->d * sizeof *out);
	uint64_t seed = 13;
	bool ok = p && out;
	for (int i = 0; ok && i < ATTN_SAMPLES; i++) {
		size_t h = rng_next(&seed) % (uint64_t)x->a->bh;
		size_t r = i == 0 ? 0 : i == 1 ? (size_t)x->a->s - 1 : rng_next(&seed) % (uint64_t)x->a->s;
		ok = attn_row_ok(x, h, r, p, out);
	}
	free(p), free(out);
	return ok;
}

static void attn_row(BlkRuntime *rt, const Options *o, const AttnRow *a)
{
	Attn x = {.a = a};
	BlkProgram *p = NULL;
	char base[64];
	snprintf(base, sizeof base, "D=%d,CAUSAL=%s", a->d, a->causal ? "true" : "false");
	bool ok = kernel_open(rt, o, "attention", BLK_BF16, base, a->cands, &x.l, &p) && attn_make(rt, &x);
	ok = ok && run_blk(&x.l) && blk_synchronize(rt) && blk_memcpy_dtoh(rt, x.h[3], x.d_o, x.n * 2);
	if (!ok)
		fprintf(stderr, "blk-bench: attention D=%d: %s\n", a->d, blk_runtime_last_error(rt));
	bool good = ok && attn_check(&x);
	int reps = 0;
	double ms = good ? time_median(rt, run_blk, &x.l, o->budget_ms, &reps) : -1;
	/* Two matmuls of BH x S x S x D each; causal does half. */
	double fl = 4.0 * a->bh * (double)a->s * a->s * a->d * (a->causal ? 0.5 : 1);
	char cfg[256];
	config_text(&x.l, a->cands, cfg, sizeof cfg);
	printf("| attention | bf16 | %dx%dx%d | %s | %8.3f | %6.1f | %s | %d | %s |\n", a->bh, a->s,
	       a->d, a->causal ? "yes" : "no", ms, ms > 0 ? fl / ms / 1e9 : 0, good ? "ok" : "WRONG",
	       reps, cfg);
	fflush(stdout);
	attn_free(rt, &x);
	kernel_close(&x.l, p);
}

void attention_rows(BlkRuntime *rt, const Options *o)
{
	printf("\nAttention forward (examples/attention.blk; torch's scaled_dot_product_attention "
	       "at the same shapes: tools/bench_torch.py).  TFLOP/s count 4·BH·S²·D, half with "
	       "the causal mask.\n\n");
	printf("| op | type | BH x S x D | causal | ms | TFLOP/s | check | reps | config |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (size_t i = 0; i < sizeof attn_table / sizeof attn_table[0]; i++)
		attn_row(rt, o, &attn_table[i]);
}
