/* bench.h - what blk-bench's two files share: its options, the cuBLAS
 * entry points it loads, host data, timing, and loading blk kernels.
 * bench.c has the matmul and bandwidth rows (and main), bench_rows.c the
 * rows of the newer examples (linear-layer matmuls, attention, norms). */
#ifndef BLK_BENCH_H
#define BLK_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk.h"
#include "ir/ir.h"

enum { MAX_REPS = 20, MIN_REPS = 5, MAX_DEFS = 16, SAMPLES = 64 };

typedef struct Options {
	int64_t sizes[8];
	int nsizes;
	const char *config[3]; /* per dtype: "BM=128,BN=128,..." */
	bool tune[3];          /* per dtype: autotune the matmul rows */
	const char *candidates[3]; /* per dtype: "cfg;cfg;..." */
	bool offline;          /* no GPU: compile the candidates, print, exit */
	double budget_ms;      /* timing budget per kernel and case */
	const char *examples;
	bool bandwidth;
	bool more;             /* the newer examples' rows (--no-more turns them off) */
	bool bandwidth_only;   /* --bandwidth-only: the bandwidth table alone */
	bool attention_only;   /* --attention-only: the attention table alone */
	const char *only;      /* --only NAME,NAME: those linear-layer rows alone (e.g. grouped_matmul) */
} Options;

/* The few cuBLAS types and constants used here, with the values of its
 * stable C ABI, so the benchmark builds without the cuBLAS headers (a
 * machine with only the driver API headers builds everything). */
typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t;
typedef int cublasMath_t;
typedef int cublasOperation_t;
typedef int cudaDataType;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;
enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_DEFAULT_MATH = 0,
	CUBLAS_OP_N = 0,
	CUBLAS_OP_T = 1,
	CUDA_R_32F = 0,
	CUDA_R_16F = 2,
	CUDA_R_16BF = 14,
	CUDA_R_8I = 3,
	CUDA_R_32I = 10,
	CUBLAS_COMPUTE_32F = 68,
	CUBLAS_COMPUTE_32I = 72,
	CUBLAS_GEMM_DEFAULT = -1,
};

typedef struct Cublas {
	void *lib;
	cublasHandle_t h;
	cublasStatus_t (*create)(cublasHandle_t *);
	cublasStatus_t (*destroy)(cublasHandle_t);
	cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
	cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
	                        const float *, const float *, int, const float *, int, const float *,
	                        float *, int);
	cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
	                          const void *, const void *, cudaDataType, int, const void *,
	                          cudaDataType, int, const void *, void *, cudaDataType, int,
	                          cublasComputeType_t, cublasGemmAlgo_t);
	cublasStatus_t (*gemm_strided)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
	                               int, const void *, const void *, cudaDataType, int, long long,
	                               const void *, cudaDataType, int, long long, const void *,
	                               void *, cudaDataType, int, long long, int,
	                               cublasComputeType_t, cublasGemmAlgo_t);
} Cublas;

typedef struct Launch {
	BlkFunc *f;
	BlkTuner *tuner;       /* when set, launches go through it (f unused) */
	BlkTensor t[5];
	int n;
	Cublas *cb;
	BlkDType dt;
	int m, nn, k;
} Launch;


/* Host data (bench.c). */
uint64_t rng_next(uint64_t *s);
void fill(BlkDType dt, size_t n, void *buf, float *f, uint64_t seed);
double value_at(BlkDType dt, const void *buf, size_t i);
double matmul_tol(BlkDType dt);
double now_ms(void);

/* Timing and kernels (bench.c). */
typedef bool (*RunFn)(void *ctx);
double time_median(BlkRuntime *rt, RunFn run, void *ctx, double budget_ms, int *reps_out);
BlkProgram *load(BlkRuntime *rt, const Options *o, const char *name, BlkDType dt,
                 const char *config);
bool run_blk(void *ctx);
void bw_row(const char *op, const char *size, double ms, double bytes, double copy_gbs, bool good,
            int reps);

/* Whether --only leaves the row of op name in (bench.c). */
bool row_wanted(const Options *o, const char *name);

/* The newer examples' rows (bench_rows.c). */
void gemm_rows(BlkRuntime *rt, Cublas *cb, const Options *o);
void norm_rows(BlkRuntime *rt, const Options *o, double copy_gbs);
void attention_rows(BlkRuntime *rt, const Options *o);

#endif
