/* matmul_host.c - embedding blk: C = A @ B with examples/matmul.blk.
 *
 *     matmul-host [M N K] [path/to/matmul.blk]
 *
 * Loads the kernel, makes random A and B, runs on the GPU, checks C against
 * a plain C reference and prints the kernel's time.  Exits 1 with the
 * runtime's message where there is no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "blk.h"

static float rnd(unsigned *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)(*s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* The largest |C - A@B| over all elements, the reference in double. */
static double check(const float *a, const float *b, const float *c, int m, int n, int k)
{
	double worst = 0;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int p = 0; p < k; p++)
				s += (double)a[(size_t)i * k + p] * b[(size_t)p * n + j];
			double e = fabs(s - c[(size_t)i * n + j]);
			if (!(e <= worst)) /* NaN sticks: an unwritten element fails */
				worst = e;
		}
	return worst;
}

static int fail(BlkRuntime *rt)
{
	fprintf(stderr, "matmul-host: %s\n", blk_runtime_last_error(rt));
	return 1;
}

int main(int argc, char **argv)
{
	int m = argc > 3 ? atoi(argv[1]) : 512, n = argc > 3 ? atoi(argv[2]) : 512;
	int k = argc > 3 ? atoi(argv[3]) : 512;
	const char *path = argc == 2 ? argv[1] : argc > 4 ? argv[4] : "examples/matmul.blk";
	char err[512];
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	if (!rt) {
		fprintf(stderr, "matmul-host: %s\n", err);
		return 1;
	}
	BlkProgram *prog = blk_program_load(rt, path, NULL, 0);
	BlkFunc *f = prog ? blk_program_kernel(prog, "matmul") : NULL;
	if (!f)
		return fail(rt);
	size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
	float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
	unsigned seed = 42;
	for (size_t i = 0; i < na; i++)
		a[i] = rnd(&seed);
	for (size_t i = 0; i < nb; i++)
		b[i] = rnd(&seed);
	void *da, *db, *dc;
	if (!blk_mem_alloc(rt, na * 4, &da) || !blk_mem_alloc(rt, nb * 4, &db) ||
	    !blk_mem_alloc(rt, nc * 4, &dc) || !blk_memcpy_htod(rt, da, a, na * 4) ||
	    !blk_memcpy_htod(rt, db, b, nb * 4) || !blk_memset(rt, dc, 0xff, nc * 4))
		return fail(rt);
	BlkTensor t[3] = {
		blk_tensor_make(da, BLK_DTYPE_F32, 2, (int64_t[]){m, k}),
		blk_tensor_make(db, BLK_DTYPE_F32, 2, (int64_t[]){k, n}),
		blk_tensor_make(dc, BLK_DTYPE_F32, 2, (int64_t[]){m, n}),
	};
	/* The first launch compiles and loads; time the second. */
	BlkTimer *tm = blk_timer_create(rt);
	float ms = 0;
	if (!tm || !blk_launch(f, t, 3, NULL) || !blk_synchronize(rt) || !blk_timer_start(tm, NULL) ||
	    !blk_launch(f, t, 3, NULL) || !blk_timer_stop(tm, NULL) || !blk_timer_elapsed_ms(tm, &ms) ||
	    !blk_memcpy_dtoh(rt, c, dc, nc * 4))
		return fail(rt);
	double err_max = check(a, b, c, m, n, k);
	bool ok = err_max <= 1e-3 * k; /* NaN (unwritten poison) fails too */
	printf("%s\nmatmul %dx%dx%d f32: %.3f ms, %.2f TFLOP/s, max |error| %.2e: %s\n",
	       blk_runtime_device_name(rt), m, n, k, ms, 2.0 * m * n * k / (ms * 1e9), err_max,
	       ok ? "ok" : "WRONG");
	blk_timer_destroy(tm);
	blk_mem_free(rt, da);
	blk_mem_free(rt, db);
	blk_mem_free(rt, dc);
	blk_program_destroy(prog);
	blk_runtime_destroy(rt);
	free(a);
	free(b);
	free(c);
	return ok ? 0 : 1;
}
