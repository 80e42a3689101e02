/* fake_cuda.c - a stand-in libcuda.so.1 for the runtime's tests (loaded
 * through BLK_LIBCUDA): the tuner's timing path runs on a machine with no
 * GPU.
 *
 * One "sm_90" device; device memory is host memory (copies and memsets
 * work); launches compute nothing but advance a clock by a made-up
 * duration, 1 + 64 / CTAs ms (so more, smaller CTAs are "faster"), and
 * events read that clock.  A launch of more than FAKE_MAX_THREADS threads
 * per CTA is refused with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, as a GPU
 * refuses a kernel whose registers do not fit.  Entry points are found by
 * name through cuGetProcAddress_v2, like the real driver's.
 * With BLK_FAKE_LAUNCH_LOG set, every launch (grid, block, shared bytes)
 * and tensor map (dims, box, strides, swizzle) is appended to that file:
 * tools/ptx-snapshot.sh compares two builds' launches with it.
 * Virtual memory management (runtime/symmetric.c's): an allocation is a
 * memfd, its shareable handle a duplicate descriptor, a mapping an mmap of
 * it, so two mappings of one allocation share their bytes as a rank's and
 * its peer's do; FAKE_CUDA_NO_VMM=1 when the driver opens leaves those
 * entry points out, as an old driver would.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>

enum { FAKE_MAX_THREADS = 384 };

static double clock_ms;
static int launches, tensor_maps;
static unsigned last_grid[3];
static int ctx_dummy, module_dummy, stream_dummy;

/* How many kernel arguments the next launch's args holds (set by the
 * test, since the driver itself is not told). */
static int fake_nargs;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
	const char *path = getenv("BLK_FAKE_LAUNCH_LOG");
	FILE *f = path && *path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

void fake_cuda_set_nargs(int n)
{
	fake_nargs = n;
}

/* For the tests (dlsym): launches so far and the last one's grid. */
int fake_cuda_launches(void)
{
	return launches;
}

/* Tensor maps encoded so far (TMA launches). */
int fake_cuda_tensor_maps(void)
{
	return tensor_maps;
}

/* The last tensor map encoded: its rank, then per dim (innermost first)
 * extent, box and the byte stride of the dims after the first. */
static unsigned last_map_rank;
static unsigned long long last_map[3][5];

unsigned fake_cuda_last_map_rank(void)
{
	return last_map_rank;
}

unsigned long long fake_cuda_last_map(int what, int d)
{
	return what >= 0 && what < 3 && d >= 0 && d < 5 ? last_map[what][d] : 0;
}

unsigned fake_cuda_last_ctas(void)
{
	return last_grid[0] * last_grid[1] * last_grid[2];
}

/* The last launch's CTAs a cluster along x (1: a launch without clusters). */
static unsigned last_cluster = 1;

unsigned fake_cuda_last_cluster(void)
{
	return last_cluster;
}

/* The last launch's grid along axis a, and the first 4 bytes of its
 * argument i (i32 sizes; the low half of an i64 stride), copied at launch. */
enum { FAKE_ARGS = 32 };
static int32_t last_args[FAKE_ARGS];

unsigned fake_cuda_last_grid(int a)
{
	return a >= 0 && a < 3 ? last_grid[a] : 0;
}

int32_t fake_cuda_last_arg(int i)
{
	return i >= 0 && i < FAKE_ARGS ? last_args[i] : 0;
}

static CUresult get_error_name(CUresult r, const char **s)
{
	*s = r == CUDA_SUCCESS ? "CUDA_SUCCESS"
	     : r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
	                                               : "CUDA_ERROR_UNKNOWN";
	return CUDA_SUCCESS;
}

static CUresult get_error_string(CUresult r, const char **s)
{
	*s = r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? "too many resources requested for launch"
	                                             : "fake";
	return CUDA_SUCCESS;
}

static CUresult init(unsigned flags)
{
	(void)flags;
	return CUDA_SUCCESS;
}

static CUresult driver_get_version(int *v)
{
	*v = 13000;
	return CUDA_SUCCESS;
}

static CUresult device_get_count(int *n)
{
	*n = 1;
	return CUDA_SUCCESS;
}

static CUresult device_get(CUdevice *d, int i)
{
	*d = i;
	return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult device_get_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	*v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
	     : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
	     : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
	                                                         : 232448;
	return CUDA_SUCCESS;
}

static CUresult device_get_name(char *s, int len, CUdevice d)
{
	(void)d;
	snprintf(s, (size_t)len, "fake GPU");
	return CUDA_SUCCESS;
}

static CUresult primary_ctx_retain(CUcontext *c, CUdevice d)
{
	(void)d;
	*c = (CUcontext)(void *)&ctx_dummy;
	return CUDA_SUCCESS;
}

static CUresult primary_ctx_release(CUdevice d)
{
	(void)d;
	return CUDA_SUCCESS;
}

static CUresult ctx_set_current(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}

static CUresult no_args(void)
{
	return CUDA_SUCCESS;
}

static CUresult module_load_data_ex(CUmodule *m, const void *image, unsigned n, CUjit_option *o,
                                    void **v)
{
	(void)image, (void)n, (void)o, (void)v;
	*m = (CUmodule)(void *)&module_dummy;
	return CUDA_SUCCESS;
}

/* For code that runs in the caller's context (blkc --emit=c): device 0. */
static CUresult ctx_get_current(CUcontext *c)
{
	*c = (CUcontext)(void *)&ctx_dummy;
	return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *d)
{
	*d = 0;
	return CUDA_SUCCESS;
}

static CUresult module_load_data(CUmodule *m, const void *image)
{
	return module_load_data_ex(m, image, 0, NULL, NULL);
}

static CUresult module_unload(CUmodule m)
{
	(void)m;
	return CUDA_SUCCESS;
}

static CUresult module_get_function(CUfunction *f, CUmodule m, const char *name)
{
	(void)m, (void)name;
	*f = (CUfunction)(void *)&module_dummy;
	return CUDA_SUCCESS;
}

static CUresult func_set_attribute(CUfunction f, CUfunction_attribute a, int v)
{
	(void)f, (void)a, (void)v;
	return CUDA_SUCCESS;
}

static CUresult mem_alloc(CUdeviceptr *p, size_t bytes)
{
	void *m = malloc(bytes);
	*p = (CUdeviceptr)(uintptr_t)m;
	return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult mem_free(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

static CUresult memcpy_htod(CUdeviceptr d, const void *s, size_t n)
{
	memcpy((void *)(uintptr_t)d, s, n);
	return CUDA_SUCCESS;
}

static CUresult memcpy_dtoh(void *d, CUdeviceptr s, size_t n)
{
	memcpy(d, (const void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}

static CUresult memcpy_dtod_async(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}

static CUresult memset_d8(CUdeviceptr d, unsigned char v, size_t n)
{
	memset((void *)(uintptr_t)d, v, n);
	return CUDA_SUCCESS;
}

/* Checks what the driver would reject (alignment, box limits); fills
 * nothing the fake launch reads. */
static CUresult tensor_map_encode_tiled(CUtensorMap *m, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                                        const cuuint64_t *dims, const cuuint64_t *strides,
                                        const cuuint32_t *box, const cuuint32_t *estr,
                                        CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                        CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	(void)dt, (void)estr, (void)il, (void)sw, (void)l2, (void)oob;
	if (!m || rank < 1 || rank > 5 || ((uintptr_t)addr & 15))
		return CUDA_ERROR_INVALID_VALUE;
	for (cuuint32_t i = 0; i < rank; i++)
		if (dims[i] == 0 || box[i] == 0 || box[i] > 256 || (i + 1 < rank && strides[i] % 16))
			return CUDA_ERROR_INVALID_VALUE;
	memset(m, 0, sizeof *m);
	tensor_maps++;
	log_line("tmap rank %u swizzle %d", rank, (int)sw);
	for (cuuint32_t i = 0; i < rank; i++)
		log_line(" (%llu %u %llu)", (unsigned long long)dims[i], box[i],
		         (unsigned long long)(i + 1 < rank ? strides[i] : 0));
	log_line("\n");
	last_map_rank = rank;
	for (cuuint32_t i = 0; i < rank; i++) {
		last_map[0][i] = dims[i];
		last_map[1][i] = box[i];
		last_map[2][i] = i + 1 < rank ? strides[i] : 0;
	}
	return CUDA_SUCCESS;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned smem, CUstream s, void **args,
                              void **extra)
{
	(void)f, (void)smem, (void)s, (void)args, (void)extra;
	if (bx * by * bz > FAKE_MAX_THREADS)
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	launches++;
	last_cluster = 1;
	log_line("launch grid %u %u %u block %u %u %u smem %u\n", gx, gy, gz, bx, by, bz, smem);
	last_grid[0] = gx, last_grid[1] = gy, last_grid[2] = gz;
	memset(last_args, 0, sizeof last_args);
	for (int i = 0; args && i < fake_nargs && i < FAKE_ARGS; i++) /* every argument is >= 4 bytes */
		memcpy(&last_args[i], args[i], sizeof last_args[i]);
	clock_ms += 1.0 + 64.0 / (double)(gx * gy * gz);
	return CUDA_SUCCESS;
}

/* A launch in clusters: logged with the cluster's extent along x. */
static CUresult launch_kernel_ex(const CUlaunchConfig *cfg, CUfunction f, void **args, void **extra)
{
	unsigned cx = 1;
	for (unsigned i = 0; i < cfg->numAttrs; i++)
		if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			cx = cfg->attrs[i].value.clusterDim.x;
	if (cfg->gridDimX % cx)
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	log_line("cluster %u\n", cx);
	CUresult r = launch_kernel(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY,
	                           cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, args, extra);
	last_cluster = cx;
	return r;
}

static CUresult stream_create(CUstream *s, unsigned flags)
{
	(void)flags;
	*s = (CUstream)(void *)&stream_dummy;
	return CUDA_SUCCESS;
}

static CUresult stream_op(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}

static CUresult event_create(CUevent *e, unsigned flags)
{
	(void)flags;
	*e = (CUevent)calloc(1, sizeof(double));
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult event_destroy(CUevent e)
{
	free((void *)e);
	return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream s)
{
	(void)s;
	*(double *)(void *)e = clock_ms;
	return CUDA_SUCCESS;
}

static CUresult event_synchronize(CUevent e)
{
	(void)e;
	return CUDA_SUCCESS;
}

static CUresult event_elapsed_time(float *ms, CUevent start, CUevent stop)
{
	*ms = (float)(*(double *)(void *)stop - *(double *)(void *)start);
	return CUDA_SUCCESS;
}

/* ---- virtual memory management ---- */

typedef struct FakeAlloc {
	int fd;
	size_t size;
} FakeAlloc;

static CUresult vmm_granularity(size_t *g, const CUmemAllocationProp *p, CUmemAllocationGranularity_flags f)
{
	(void)p, (void)f;
	*g = (size_t)2 << 20;
	return CUDA_SUCCESS;
}

static CUresult vmm_wrap(int fd, CUmemGenericAllocationHandle *h)
{
	struct stat st;
	FakeAlloc *a = malloc(sizeof *a);
	if (!a || fd < 0 || fstat(fd, &st) != 0) {
		free(a);
		return CUDA_ERROR_INVALID_VALUE;
	}
	a->fd = fd;
	a->size = (size_t)st.st_size;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)a;
	return CUDA_SUCCESS;
}

static CUresult vmm_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *p,
                           unsigned long long flags)
{
	(void)p, (void)flags;
	int fd = memfd_create("fake-vmm", 0);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return vmm_wrap(fd, h);
}

static CUresult vmm_release(CUmemGenericAllocationHandle h)
{
	FakeAlloc *a = (FakeAlloc *)(uintptr_t)h;
	close(a->fd);
	free(a);
	return CUDA_SUCCESS;
}

static CUresult vmm_reserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
                            unsigned long long flags)
{
	(void)align, (void)addr, (void)flags;
	void *m = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*p = (CUdeviceptr)(uintptr_t)m;
	return m == MAP_FAILED ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static CUresult vmm_free(CUdeviceptr p, size_t size)
{
	munmap((void *)(uintptr_t)p, size);
	return CUDA_SUCCESS;
}

static CUresult vmm_map(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                        unsigned long long flags)
{
	(void)flags;
	FakeAlloc *a = (FakeAlloc *)(uintptr_t)h;
	if (offset + size > a->size) /* the driver's answer to a smaller allocation */
		return CUDA_ERROR_INVALID_VALUE;
	void *m = mmap((void *)(uintptr_t)p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd,
	               (off_t)offset);
	return m == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult vmm_unmap(CUdeviceptr p, size_t size)
{
	mmap((void *)(uintptr_t)p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return CUDA_SUCCESS;
}

static CUresult vmm_access(CUdeviceptr p, size_t size, const CUmemAccessDesc *d, size_t n)
{
	(void)p, (void)size, (void)d, (void)n;
	return CUDA_SUCCESS;
}

static CUresult vmm_export(void *out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType t,
                           unsigned long long flags)
{
	(void)t, (void)flags;
	*(int *)out = dup(((FakeAlloc *)(uintptr_t)h)->fd);
	return *(int *)out < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult vmm_import(CUmemGenericAllocationHandle *h, void *os, CUmemAllocationHandleType t)
{
	(void)t;
	return vmm_wrap(dup((int)(intptr_t)os), h);
}

/* Function pointers of every type pass through void (*)(void), which C
 * allows (and -Wcast-function-type exempts); never through void *. */
typedef void (*AnyFn)(void);

typedef struct Entry {
	const char *name;
	AnyFn fn;
} Entry;

#define E(name, fn) {name, (AnyFn)(fn)}
static const Entry entries[] = {
	E("cuGetErrorName", get_error_name), E("cuGetErrorString", get_error_string),
	E("cuInit", init), E("cuDriverGetVersion", driver_get_version),
	E("cuDeviceGetCount", device_get_count), E("cuDeviceGet", device_get),
	E("cuDeviceGetAttribute", device_get_attribute), E("cuDeviceGetName", device_get_name),
	E("cuDevicePrimaryCtxRetain", primary_ctx_retain),
	E("cuDevicePrimaryCtxRelease", primary_ctx_release), E("cuCtxSetCurrent", ctx_set_current),
	E("cuCtxSynchronize", no_args), E("cuModuleLoadDataEx", module_load_data_ex),
	E("cuModuleUnload", module_unload), E("cuModuleGetFunction", module_get_function),
	E("cuFuncSetAttribute", func_set_attribute), E("cuMemAlloc", mem_alloc),
	E("cuMemFree", mem_free), E("cuMemcpyHtoD", memcpy_htod), E("cuMemcpyDtoH", memcpy_dtoh),
	E("cuMemcpyDtoDAsync", memcpy_dtod_async), E("cuMemsetD8", memset_d8),
	E("cuLaunchKernel", launch_kernel), E("cuLaunchKernelEx", launch_kernel_ex), E("cuTensorMapEncodeTiled", tensor_map_encode_tiled),
	E("cuStreamCreate", stream_create),
	E("cuStreamDestroy", stream_op), E("cuStreamSynchronize", stream_op),
	E("cuEventCreate", event_create), E("cuEventDestroy", event_destroy),
	E("cuEventRecord", event_record), E("cuEventSynchronize", event_synchronize),
	E("cuEventElapsedTime", event_elapsed_time), E("cuCtxGetCurrent", ctx_get_current),
	E("cuCtxGetDevice", ctx_get_device), E("cuModuleLoadData", module_load_data),
	E("cuMemGetAllocationGranularity", vmm_granularity), E("cuMemCreate", vmm_create),
	E("cuMemRelease", vmm_release), E("cuMemAddressReserve", vmm_reserve),
	E("cuMemAddressFree", vmm_free), E("cuMemMap", vmm_map), E("cuMemUnmap", vmm_unmap),
	E("cuMemSetAccess", vmm_access), E("cuMemExportToShareableHandle", vmm_export),
	E("cuMemImportFromShareableHandle", vmm_import),
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status);

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
	(void)version, (void)flags;
	const char *no_vmm = getenv("FAKE_CUDA_NO_VMM");
	bool vmm = strncmp(symbol, "cuMem", 5) == 0 && strcmp(symbol, "cuMemAlloc") != 0 &&
	           strcmp(symbol, "cuMemFree") != 0 && strncmp(symbol, "cuMemcpy", 8) != 0 &&
	           strncmp(symbol, "cuMemset", 8) != 0;
	for (size_t i = 0; i < sizeof entries / sizeof entries[0] && !(vmm && no_vmm && *no_vmm == '1'); i++)
		if (strcmp(entries[i].name, symbol) == 0) {
			memcpy(pfn, &entries[i].fn, sizeof *pfn);
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	*pfn = NULL;
	*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}
