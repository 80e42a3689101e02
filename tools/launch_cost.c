/* launch_cost.c - the host time of one blk_launch of a cached kernel, from
 * C (the figure docs/python.md sets the Python launch beside): examples/
 * add.blk on N = 2^20 f32, 20000 launches on the default stream, one
 * synchronize at the end.  Also what a disk-cache hit costs a new process:
 * source to loaded specialization, compiled vs read from $BLK_CACHE_DIR.
 *   launch-cost [EXAMPLES_DIR]
 * Uses only the public API (blk.h, libblk.so.0). */
#include <stdio.h>
#include <time.h>

#include "blk.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int fail(BlkRuntime *rt, const char *what)
{
	fprintf(stderr, "launch-cost: %s: %s\n", what, blk_runtime_last_error(rt));
	return 1;
}

int main(int argc, char **argv)
{
	char err[512], path[1024];
	snprintf(path, sizeof path, "%s/add.blk", argc > 1 ? argv[1] : "examples");
	if (blk_device_count(err, sizeof err) <= 0) {
		printf("skipped: no GPU (%s)\n", err);
		return 77;
	}
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	if (!rt)
		return fprintf(stderr, "launch-cost: %s\n", err), 1;
	int64_t n = 1 << 20;
	void *x, *y, *z;
	if (!blk_mem_alloc(rt, (size_t)n * 4, &x) || !blk_mem_alloc(rt, (size_t)n * 4, &y) ||
	    !blk_mem_alloc(rt, (size_t)n * 4, &z))
		return fail(rt, "alloc");
	double t0 = now_us();
	BlkProgram *p = blk_program_load(rt, path, NULL, 0);
	BlkFunc *f = p ? blk_program_kernel(p, NULL) : NULL;
	BlkTensor t[3] = {blk_tensor_make(x, BLK_DTYPE_F32, 1, &n), blk_tensor_make(y, BLK_DTYPE_F32, 1, &n),
	                  blk_tensor_make(z, BLK_DTYPE_F32, 1, &n)};
	if (!f || !blk_func_compile(f, t, 3, NULL))
		return fail(rt, "load");
	double t1 = now_us();
	printf("source to specialization: %.3f ms (%s; cache %s)\n", (t1 - t0) / 1e3,
	       blk_program_disk_hits(p) ? "read from the disk cache" : "compiled",
	       blk_runtime_cache_dir(rt) ? blk_runtime_cache_dir(rt) : "off");
	if (!blk_launch(f, t, 3, NULL) || !blk_synchronize(rt))
		return fail(rt, "first launch");
	printf("first launch (driver JIT of the PTX, module load): %.3f ms\n", (now_us() - t1) / 1e3);
	enum { REPS = 20000 };
	double s = now_us();
	for (int i = 0; i < REPS; i++)
		if (!blk_launch(f, t, 3, NULL))
			return fail(rt, "launch");
	double per = (now_us() - s) / REPS;
	if (!blk_synchronize(rt))
		return fail(rt, "synchronize");
	printf("C blk_launch host time: %.2f us per launch (add, N=2^20, %d launches)\n", per, REPS);
	blk_mem_free(rt, x);
	blk_mem_free(rt, y);
	blk_mem_free(rt, z);
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
	return 0;
}
