/* aot_test.c - kernels compiled ahead of time by `blkc --emit=c`
 * (add_aot.c, matmul_aot.c, generated at build time) linked into a program
 * with nothing of blk's compiler in their path:
 *   - a size other than the compiled one is refused before the driver;
 *   - no driver: BLK_AOT_NO_DRIVER, named by the _error function;
 *   - under the stand-in driver (BLK_FAKE_CUDA; launches compute nothing):
 *     the launch goes through, once the caller has a context;
 *   - on a GPU: both kernels against blk's interpreter on the same inputs.
 * libblk is linked only for what the test itself needs: device memory and
 * the interpreter as the oracle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk.h"
#include "add_aot.h"
#include "matmul_aot.h"

#ifndef BLK_EXAMPLES_DIR
#define BLK_EXAMPLES_DIR "examples"
#endif

static int failures;

static void expect(bool ok, const char *what)
{
	printf("%s %s\n", ok ? "PASS" : "FAIL", what);
	failures += !ok;
}

/* Without a usable driver: the size check, then NO_DRIVER. */
static void no_gpu_checks(void)
{
	static float buf[1000];
	int r = blk_aot_add(NULL, buf, buf, buf, 999);
	expect(r == BLK_AOT_BAD_SIZES && strstr(blk_aot_add_error(r), "sizes"),
	       "add with N=999 is refused (compiled for 1000)");
	r = blk_aot_matmul(NULL, buf, buf, buf, 130, 33, 71);
	expect(r == BLK_AOT_BAD_SIZES, "matmul with N=71 is refused");
}

/* f32 inputs in host memory and on the device; true if all went. */
static bool upload(BlkRuntime *rt, float *h, size_t n, void **d, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		h[i] = (float)rand() / RAND_MAX - 0.5f;
	return blk_mem_alloc(rt, n * 4, d) && blk_memcpy_htod(rt, *d, h, n * 4);
}

static double max_err(const float *a, const float *b, size_t n)
{
	double e = 0;
	for (size_t i = 0; i < n; i++)
		e = fmax(e, fabs((double)a[i] - b[i]) / (1 + fabs((double)b[i])));
	return e;
}

/* The interpreter on host arrays: the oracle. */
static bool oracle(const char *file, const char *const *defs, int ndefs, BlkTensor *t, int n)
{
	char path[1024];
	const char *dir = getenv("BLK_EXAMPLES_DIR");
	snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : BLK_EXAMPLES_DIR, file);
	BlkRuntime *off = blk_runtime_create_offline(NULL, NULL, 0);
	BlkProgram *p = off ? blk_program_load(off, path, defs, ndefs) : NULL;
	BlkFunc *f = p ? blk_program_kernel(p, NULL) : NULL;
	bool ok = f && blk_interpret(f, t, n);
	if (!ok)
		printf("oracle: %s\n", blk_runtime_last_error(off));
	blk_program_destroy(p);
	blk_runtime_destroy(off);
	return ok;
}

static void gpu_checks(BlkRuntime *rt)
{
	enum { M = 130, K = 33, N = 70 };
	static float a[M * K], b[K * N], c[M * N], ref[M * N], x[1000], y[1000], z[1000], zr[1000];
	void *da, *db, *dc, *dx, *dy, *dz;
	bool ok = upload(rt, a, M * K, &da, 1) && upload(rt, b, K * N, &db, 2) &&
	          upload(rt, c, M * N, &dc, 3) && upload(rt, x, 1000, &dx, 4) &&
	          upload(rt, y, 1000, &dy, 5) && upload(rt, z, 1000, &dz, 6);
	expect(ok, "device memory");
	int r1 = blk_aot_add(NULL, dx, dy, dz, 1000), r2 = blk_aot_matmul(NULL, da, db, dc, M, K, N);
	printf("  add: %s, matmul: %s\n", blk_aot_add_error(r1), blk_aot_matmul_error(r2));
	expect(r1 == 0 && r2 == 0 && blk_synchronize(rt), "both AOT kernels launched and ran");
	if (!ok || r1 || r2 || !blk_memcpy_dtoh(rt, c, dc, sizeof c) || !blk_memcpy_dtoh(rt, z, dz, sizeof z))
		return;
	int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sn = 1000;
	BlkTensor tm[3] = {blk_tensor_make(a, BLK_DTYPE_F32, 2, sa), blk_tensor_make(b, BLK_DTYPE_F32, 2, sb),
	                   blk_tensor_make(ref, BLK_DTYPE_F32, 2, sc)};
	BlkTensor ta[3] = {blk_tensor_make(x, BLK_DTYPE_F32, 1, &sn), blk_tensor_make(y, BLK_DTYPE_F32, 1, &sn),
	                   blk_tensor_make(zr, BLK_DTYPE_F32, 1, &sn)};
	const char *mdefs[] = {"BM=32", "BN=32", "BK=16"};
	if (oracle("add.blk", NULL, 0, ta, 3) && oracle("matmul.blk", mdefs, 3, tm, 3)) {
		printf("  add max err %.2e, matmul max err %.2e\n", max_err(z, zr, 1000), max_err(c, ref, M * N));
		expect(max_err(z, zr, 1000) == 0, "add (AOT) = add (interpreter)");
		expect(max_err(c, ref, M * N) < 1e-5, "matmul (AOT) = matmul (interpreter)");
	}
}

/* Under the stand-in driver (aot_test --fake, BLK_LIBCUDA set by meson):
 * the driver opens, the context is the caller's, the launches go through. */
static void fake_checks(void)
{
	char err[512];
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	expect(rt != NULL, "a context from the stand-in driver");
	static float buf[130 * 70];
	int r1 = blk_aot_add(NULL, buf, buf, buf, 1000), r2 = blk_aot_matmul(NULL, buf, buf, buf, 130, 33, 70);
	printf("  add: %s, matmul: %s\n", blk_aot_add_error(r1), blk_aot_matmul_error(r2));
	expect(r1 == 0 && r2 == 0, "both AOT kernels launched under the stand-in driver");
	blk_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
	no_gpu_checks();
	if (argc > 1 && strcmp(argv[1], "--fake") == 0) {
		fake_checks();
	} else {
		char err[512];
		int ngpu = blk_device_count(err, sizeof err);
		if (ngpu > 0) {
			BlkRuntime *rt = blk_runtime_create(0, err, sizeof err); /* a current context */
			if (rt)
				gpu_checks(rt);
			else
				expect(false, err);
			blk_runtime_destroy(rt);
		} else {
			static float buf[1000];
			int r = blk_aot_add(NULL, buf, buf, buf, 1000);
			expect(r == BLK_AOT_NO_DRIVER && strstr(blk_aot_add_error(r), "no usable CUDA driver"),
			       "no driver: BLK_AOT_NO_DRIVER");
			printf("skip: no GPU for the launch checks (%s)\n", err);
		}
	}
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
