/* driver.h - the CUDA driver API, loaded at run time (internal).
 *
 * libcuda.so.1 is dlopen'ed, never linked: blk builds and runs its CPU parts
 * on machines without a driver.  Entry points are resolved through
 * cuGetProcAddress by base name at the version of their PFN_*_vNNNN typedef
 * in cudaTypedefs.h (DESIGN.md section 5): guessed _v2 names or a blanket
 * version resolve to other signatures (cuCtxSynchronize@13000 takes a
 * context).
 */
#ifndef BLK_RT_DRIVER_H
#define BLK_RT_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda.h>
#include <cudaTypedefs.h>

/* X(name, version): every entry point blk uses, at its typedef's version. */
#define BLK_CU_FUNCS(X)                     \
	X(cuGetErrorName, 6000)             \
	X(cuGetErrorString, 6000)           \
	X(cuInit, 2000)                     \
	X(cuDriverGetVersion, 2020)         \
	X(cuDeviceGetCount, 2000)           \
	X(cuDeviceGet, 2000)                \
	X(cuDeviceGetAttribute, 2000)       \
	X(cuDeviceGetName, 2000)            \
	X(cuDevicePrimaryCtxRetain, 7000)   \
	X(cuDevicePrimaryCtxRelease, 11000) \
	X(cuCtxSetCurrent, 4000)            \
	X(cuCtxSynchronize, 2000)           \
	X(cuModuleLoadDataEx, 2010)         \
	X(cuModuleUnload, 2000)             \
	X(cuModuleGetFunction, 2000)        \
	X(cuFuncSetAttribute, 9000)         \
	X(cuMemAlloc, 3020)                 \
	X(cuMemFree, 3020)                  \
	X(cuMemcpyHtoD, 3020)               \
	X(cuMemcpyDtoH, 3020)               \
	X(cuMemcpyDtoDAsync, 3020)          \
	X(cuMemsetD8, 3020)                 \
	X(cuLaunchKernel, 4000)             \
	X(cuLaunchKernelEx, 11060)          \
	X(cuTensorMapEncodeTiled, 12000)    \
	X(cuStreamCreate, 2000)             \
	X(cuStreamDestroy, 4000)            \
	X(cuStreamSynchronize, 2000)        \
	X(cuEventCreate, 2000)              \
	X(cuEventDestroy, 4000)             \
	X(cuEventRecord, 2000)              \
	X(cuEventSynchronize, 2000)         \
	X(cuEventElapsedTime, 2000)

/* Virtual memory management, for symmetric buffers (symmetric.c): taken
 * when the driver has them, NULL otherwise (blk_symmetric_create says so). */
#define BLK_CU_VMM_FUNCS(X)                      \
	X(cuMemGetAllocationGranularity, 10020)  \
	X(cuMemCreate, 10020)                    \
	X(cuMemRelease, 10020)                   \
	X(cuMemAddressReserve, 10020)            \
	X(cuMemAddressFree, 10020)               \
	X(cuMemMap, 10020)                       \
	X(cuMemUnmap, 10020)                     \
	X(cuMemSetAccess, 10020)                 \
	X(cuMemExportToShareableHandle, 10020)   \
	X(cuMemImportFromShareableHandle, 10020)

typedef struct BlkDriver {
	void *lib;
	int version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
#define X(name, ver) PFN_##name##_v##ver name;
	BLK_CU_FUNCS(X)
	BLK_CU_VMM_FUNCS(X)
#undef X
} BlkDriver;

/* Loads the driver library and every entry point and runs cuInit.  The
 * library is $BLK_LIBCUDA if set, else libcuda.so.1.  NULL with the reason
 * in err: no library, a driver too old, or cuInit failing (no device). */
BlkDriver *blk_driver_open(char *err, size_t errlen);
void blk_driver_close(BlkDriver *drv);

/* "what failed: CUDA_ERROR_NAME (code): description" into err; r is not
 * CUDA_SUCCESS. */
void blk_driver_format(const BlkDriver *drv, CUresult r, const char *what, char *err,
                       size_t errlen);

#endif
