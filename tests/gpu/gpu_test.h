/* gpu_test.h - the start every GPU test shares: a runtime on GPU 0, or
 * exit status 77 ("skipped", for meson) where there is no GPU. */
#ifndef BLK_GPU_TEST_H
#define BLK_GPU_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "blk.h"

/* $BLK_PTXAS, else the CUDA toolkit's; NULL if neither is there. */
static inline const char *gpu_test_ptxas(void)
{
	const char *p = getenv("BLK_PTXAS");
	if (p && *p)
		return p;
	p = "/usr/local/cuda/bin/ptxas";
	return access(p, X_OK) == 0 ? p : NULL;
}

/* A runtime on GPU 0; NULL with *status set to 77 (no GPU: says so) or 1
 * (a driver failure: says which, naming the test). */
static inline BlkRuntime *gpu_test_runtime(const char *test, int *status)
{
	char err[512] = "";
	int n = blk_device_count(err, sizeof err);
	if (n == 0) {
		printf("skipped: no GPU (%s)\n", err);
		*status = 77;
		return NULL;
	}
	BlkRuntime *rt = n > 0 ? blk_runtime_create(0, err, sizeof err) : NULL;
	if (!rt) {
		fprintf(stderr, "%s: %s\n", test, err);
		*status = 1;
		return NULL;
	}
	printf("device: %s\n\n", blk_runtime_device_name(rt));
	return rt;
}

#endif
