/* compile_time.c - blk-compile-time: how long blk takes from source to PTX,
 * in process, on the CPU alone (an offline runtime, the disk cache off):
 *
 *   blk-compile-time [--compile-only] [EXAMPLES_DIR]   ($BLK_ARCH: the arch, default sm_90a)
 *
 * Rows: the median of 10 loads + compiles of matmul.blk at M = N = K = 1024
 * (a fresh program each time, so nothing comes from the in-memory cache)
 * for the f32 defaults, the bf16 128x128x64 config and blk-bench's
 * reference config; then the wall time of blk_tuner_compile over the f32
 * and bf16 candidate lists of blk-bench (the median of 3 fresh tuners),
 * which compiles in parallel threads.  BLK_TUNE_THREADS=1 gives the serial
 * figure for comparison; --compile-only leaves the tuner rows out.  blk-bench's compile row needs a GPU (it runs
 * after the timings); this one runs on any machine, so that a change to
 * the compiler's speed can be measured where it is made.
 * Uses only the public API (blk.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_candidates.h"
#include "blk.h"

enum { REPS = 10, TUNER_REPS = 3, MAX_DEFS = 16 };

/* The two dtypes timed here, as the frontend spells them (T=...). */
static const char *dtype_name(int dt)
{
	return dt == BLK_DTYPE_BF16 ? "bf16" : "f32";
}

/* clock: CLOCK_MONOTONIC, or CLOCK_PROCESS_CPUTIME_ID for the CPU time,
 * which a machine shared with other work disturbs less than the wall's. */
static double clock_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Three s x s tensors of dtype dt at made-up addresses: compiling never
 * touches them, and 16-byte aligned data is what a real launch has. */
static void make_tensors(BlkTensor *t, int dt, int64_t s)
{
	int64_t sh[2] = {s, s};
	for (int j = 0; j < 3; j++)
		t[j] = blk_tensor_make((void *)(uintptr_t)(0x40000000 * (uintptr_t)(j + 1)), dt, 2, sh);
}

/* "T=f32" then config split at commas into defs; how many. */
static int split_defines(char *cfg, char *tdef, const char **defs)
{
	int n = 0;
	defs[n++] = tdef;
	for (char *tok = strtok(cfg, ","); tok && n < MAX_DEFS; tok = strtok(NULL, ","))
		defs[n++] = tok;
	return n;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* One load + compile of matmul.blk: its wall ms (*cpu: its CPU ms), or -1
 * with the error printed. */
static double compile_once(BlkRuntime *rt, const char *path, int dt, const char *config, int64_t s,
                           double *cpu)
{
	char cfg[256], tdef[32];
	const char *defs[MAX_DEFS];
	snprintf(cfg, sizeof cfg, "%s", config);
	snprintf(tdef, sizeof tdef, "T=%s", dtype_name(dt));
	int n = split_defines(cfg, tdef, defs);
	BlkTensor t[3];
	make_tensors(t, dt, s);
	double t0 = now_ms(), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	BlkProgram *p = blk_program_load(rt, path, defs, n);
	BlkFunc *f = p ? blk_program_kernel(p, "matmul") : NULL;
	bool ok = f && blk_func_compile(f, t, 3, NULL);
	double ms = now_ms() - t0;
	*cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (!ok)
		fprintf(stderr, "blk-compile-time: %s\n", blk_runtime_last_error(rt));
	blk_program_destroy(p);
	return ok ? ms : -1;
}

static void compile_row(BlkRuntime *rt, const char *path, int dt, const char *config, int64_t s)
{
	double ms[REPS], cpu[REPS];
	for (int i = 0; i < REPS; i++)
		if ((ms[i] = compile_once(rt, path, dt, config, s, &cpu[i])) < 0)
			return;
	double med = median(ms, REPS); /* sorts ms */
	printf("compile matmul.blk -> PTX, %s %lld³ %s: median %.1f ms over %d (min %.1f; CPU "
	       "median %.1f ms)\n", dtype_name(dt), (long long)s, config[0] ? config : "(defaults)",
	       med, REPS, ms[0], median(cpu, REPS));
}

/* A fresh tuner over list, compiled for s³; the wall ms, -1 on failure. */
static double tune_once(BlkRuntime *rt, const char *path, int dt, const char *list, int64_t s,
                        int *compiled, int *cands)
{
	char tdef[32], copy[4096];
	snprintf(tdef, sizeof tdef, "T=%s", dtype_name(dt));
	snprintf(copy, sizeof copy, "%s", list);
	const char *base[] = {tdef};
	BlkTensor t[3];
	make_tensors(t, dt, s);
	double t0 = now_ms();
	BlkTuner *tu = blk_tuner_create(rt, path, NULL, "matmul", base, 1);
	char *save = NULL;
	for (char *c = strtok_r(copy, ";", &save); tu && c; c = strtok_r(NULL, ";", &save))
		blk_tuner_add_config_text(tu, c);
	*compiled = tu ? blk_tuner_compile(tu, t, 3) : -1;
	double ms = now_ms() - t0;
	*cands = blk_tuner_num_configs(tu);
	if (*compiled < 0)
		fprintf(stderr, "blk-compile-time: tuner: %s\n", blk_runtime_last_error(rt));
	blk_tuner_destroy(tu);
	return *compiled < 0 ? -1 : ms;
}

static void tuner_row(BlkRuntime *rt, const char *path, int dt, const char *list, int64_t s)
{
	double ms[TUNER_REPS];
	int compiled = 0, cands = 0;
	for (int i = 0; i < TUNER_REPS; i++)
		if ((ms[i] = tune_once(rt, path, dt, list, s, &compiled, &cands)) < 0)
			return;
	const char *th = getenv("BLK_TUNE_THREADS");
	printf("compile the %s tuner's candidates (%d of %d compiled, %lld³, BLK_TUNE_THREADS=%s): "
	       "median %.1f ms over %d\n", dtype_name(dt), compiled, cands, (long long)s,
	       th && *th ? th : "unset", median(ms, TUNER_REPS), TUNER_REPS);
}

int main(int argc, char **argv)
{
	char err[512], path[1024];
	bool tuner = !(argc > 1 && strcmp(argv[1], "--compile-only") == 0);
	int dir = tuner ? 1 : 2;
	if (argc > dir + 1 || (argc > dir && argv[dir][0] == '-'))
		return fprintf(stderr, "usage: blk-compile-time [--compile-only] [EXAMPLES_DIR]  (default: examples)\n"), 2;
	snprintf(path, sizeof path, "%s/matmul.blk", argc > dir ? argv[dir] : "examples");
	const char *arch = getenv("BLK_ARCH");
	BlkRuntime *rt = blk_runtime_create_offline(arch && *arch ? arch : NULL, err, sizeof err);
	if (!rt)
		return fprintf(stderr, "blk-compile-time: %s\n", err), 1;
	blk_runtime_set_cache_dir(rt, NULL);
	printf("%s\n", blk_runtime_device_name(rt));
	double cpu;
	compile_once(rt, path, BLK_DTYPE_F32, "", 1024, &cpu); /* LLVM's one-time setup, not counted */
	compile_row(rt, path, BLK_DTYPE_F32, "", 1024);
	compile_row(rt, path, BLK_DTYPE_BF16, "BM=128,BN=128,BK=64", 1024);
	compile_row(rt, path, BLK_DTYPE_F32, "BM=128,BN=128,BK=16,num_warps=8,num_stages=3", 4096);
	if (tuner) {
		tuner_row(rt, path, BLK_DTYPE_F32, blk_bench_f32_candidates, 1024);
		tuner_row(rt, path, BLK_DTYPE_BF16, blk_bench_tc_candidates, 1024);
	}
	blk_runtime_destroy(rt);
	return 0;
}
