/* driver.c - loading libcuda.so.1 and resolving its entry points.
 *
 * cuGetProcAddress_v2 is the one symbol taken with dlsym; everything else
 * comes from it at the version in BLK_CU_FUNCS, so the signatures are the
 * ones the CUDA 13 headers describe whatever the installed driver's
 * default versions are.
 */
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define NO_DRIVER_HINT "(is this a machine with an NVIDIA GPU?)"

static void *open_library(char *err, size_t errlen)
{
	const char *path = getenv("BLK_LIBCUDA");
	if (!path || !*path)
		path = "libcuda.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		snprintf(err, errlen, "no CUDA driver: %s not found %s", path, NO_DRIVER_HINT);
	return lib;
}

/* Resolves one entry point; a driver older than the version asked for gets
 * its own message, since that is the user's fix (update the driver). */
static bool resolve(PFN_cuGetProcAddress_v12000 gpa, const char *name,
                    int version, void **fn, char *err, size_t errlen)
{
	CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
	CUresult r = gpa(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
	if (r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && *fn)
		return true;
	if (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
		snprintf(err, errlen, "CUDA driver too old: %s@%d is not available (update the NVIDIA driver)",
		         name, version);
	else
		snprintf(err, errlen, "CUDA driver lacks %s@%d (cuGetProcAddress returned %d, status %d)",
		         name, version, (int)r, (int)status);
	return false;
}

static bool resolve_all(BlkDriver *drv, char *err, size_t errlen)
{
	PFN_cuGetProcAddress_v12000 gpa;
	*(void **)&gpa = dlsym(drv->lib, "cuGetProcAddress_v2");
	if (!gpa) {
		snprintf(err, errlen, "CUDA driver too old: cuGetProcAddress_v2 not found "
		         "(blk needs a driver for CUDA 12.0 or newer)");
		return false;
	}
#define X(name, ver)                                                               \
	if (!resolve(gpa, #name, ver, (void **)&drv->name, err, errlen))      \
		return false;
	BLK_CU_FUNCS(X)
#undef X
	char ignored[256]; /* optional: NULL where the driver lacks them */
#define X(name, ver) resolve(gpa, #name, ver, (void **)&drv->name, ignored, sizeof ignored);
	BLK_CU_VMM_FUNCS(X)
#undef X
	return true;
}

void blk_driver_format(const BlkDriver *drv, CUresult r, const char *what, char *err,
                       size_t errlen)
{
	const char *name = NULL, *desc = NULL;
	if (drv && drv->cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = NULL;
	if (drv && drv->cuGetErrorString(r, &desc) != CUDA_SUCCESS)
		desc = NULL;
	snprintf(err, errlen, "%s failed: %s (%d): %s", what, name ? name : "CUDA_ERROR_UNKNOWN",
	         (int)r, desc ? desc : "no description");
}

/* cuInit failing is how a machine with a driver but no usable GPU shows. */
static bool init_driver(BlkDriver *drv, char *err, size_t errlen)
{
	CUresult r = drv->cuInit(0);
	if (r == CUDA_ERROR_NO_DEVICE) {
		snprintf(err, errlen, "no CUDA device: the driver is installed but sees no GPU");
		return false;
	}
	if (r != CUDA_SUCCESS) {
		blk_driver_format(drv, r, "cuInit", err, errlen);
		return false;
	}
	r = drv->cuDriverGetVersion(&drv->version);
	if (r != CUDA_SUCCESS) {
		blk_driver_format(drv, r, "cuDriverGetVersion", err, errlen);
		return false;
	}
	return true;
}

BlkDriver *blk_driver_open(char *err, size_t errlen)
{
	BlkDriver *drv = calloc(1, sizeof *drv);
	if (!drv) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	drv->lib = open_library(err, errlen);
	if (!drv->lib || !resolve_all(drv, err, errlen) || !init_driver(drv, err, errlen)) {
		blk_driver_close(drv);
		return NULL;
	}
	return drv;
}

void blk_driver_close(BlkDriver *drv)
{
	if (!drv)
		return;
	if (drv->lib)
		dlclose(drv->lib);
	free(drv);
}
