/* runtime.c - runtime lifetime, errors, devices, tensors (memory, streams and
 * timers: memory.c). */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(BLK_DTYPE_F32 == (int)BLK_F32 && BLK_DTYPE_F16 == (int)BLK_F16 &&
               BLK_DTYPE_BF16 == (int)BLK_BF16 && BLK_DTYPE_I32 == (int)BLK_I32 &&
               BLK_DTYPE_BOOL == (int)BLK_BOOL && BLK_DTYPE_I8 == (int)BLK_I8 &&
               BLK_DTYPE_U8 == (int)BLK_U8 && BLK_DTYPE_F8E4M3 == (int)BLK_F8E4M3 &&
               BLK_DTYPE_F8E5M2 == (int)BLK_F8E5M2 && BLK_DTYPE_U32 == (int)BLK_U32 &&
               BLK_NUM_DTYPES == 10,
               "ORDER DTYPE: blk.h and ir.h disagree");
_Static_assert(BLK_TENSOR_MAX_RANK == BLK_MAX_RANK, "blk.h and ir.h ranks disagree");

/* ---- errors ------------------------------------------------------------ */

/* The error of a call that had no runtime to keep it (a NULL handle):
 * blk_runtime_last_error(NULL) returns it. */
static _Thread_local char orphan_err[512];

static bool set_error_va(BlkRuntime *rt, const char *fmt, va_list ap)
{
	if (!rt || rt->tag != BLK_TAG_RUNTIME) { /* a bad handle keeps nothing */
		vsnprintf(orphan_err, sizeof orphan_err, fmt, ap);
		return false;
	}
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s) {
		vsnprintf(s, (size_t)n + 1, fmt, ap2);
		free(rt->err);
		rt->err = s;
	}
	va_end(ap2);
	return false;
}

bool blk_rt_error(BlkRuntime *rt, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_error_va(rt, fmt, ap);
	va_end(ap);
	return false;
}

bool blk_rt_count_ok(BlkRuntime *rt, const char *fn, const char *what, int n, const void *array)
{
	if (n < 0)
		return blk_rt_error(rt, "%s: %d %s (a count: 0 or more)", fn, n, what);
	if (n > 0 && !array)
		return blk_rt_error(rt, "%s: %d %s but the array is NULL (pass NULL with 0 for none)", fn, n, what);
	return true;
}

bool blk_rt_check(BlkRuntime *rt, CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return true;
	char buf[512];
	blk_driver_format(rt->drv, r, what, buf, sizeof buf);
	return blk_rt_error(rt, "%s", buf);
}

bool blk_rt_enter(BlkRuntime *rt, const char *what)
{
	if (!blk_handle_ok(rt, BLK_TAG_RUNTIME, what))
		return false;
	if (!rt->drv)
		return blk_rt_error(rt, "%s: this runtime is offline (no device); create it with "
		                    "blk_runtime_create to use a GPU", what);
	return blk_rt_check(rt, rt->drv->cuCtxSetCurrent(rt->ctx), "cuCtxSetCurrent");
}

bool blk_rt_guard(BlkRuntime *rt, const char *what, bool (*fn)(void *arg), void *arg)
{
	char bug[600];
	bool ok = blk_guard(fn, arg, bug, sizeof bug);
	if (bug[0])
		blk_rt_error(rt, "%s: %s", what, bug);
	return ok;
}

const char *blk_runtime_last_error(const BlkRuntime *rt)
{
	return !rt || rt->tag != BLK_TAG_RUNTIME ? orphan_err : rt->err ? rt->err : "";
}

/* ---- creation ---------------------------------------------------------- */

static void copy_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int blk_device_count(char *err, size_t errlen)
{
	char buf[512] = "";
	BlkDriver *drv = blk_driver_open(buf, sizeof buf);
	if (!drv) {
		copy_err(err, errlen, buf);
		/* No library or no device is "0 GPUs"; anything else is a failure. */
		return strncmp(buf, "no CUDA", 7) == 0 ? 0 : -1;
	}
	int n = 0;
	CUresult r = drv->cuDeviceGetCount(&n);
	if (r != CUDA_SUCCESS) {
		blk_driver_format(drv, r, "cuDeviceGetCount", buf, sizeof buf);
		copy_err(err, errlen, buf);
		n = -1;
	} else if (n == 0) {
		copy_err(err, errlen, "no CUDA device: the driver sees no GPU");
	}
	blk_driver_close(drv);
	return n;
}

/* arch is one blk compiles for; else false with "what 'arch': blk compiles
 * for sm_80, ..." in buf (a typo such as sm_12345 is refused where it is
 * given, not at the first compile). */
static bool arch_known(const char *what, const char *arch, char *buf, size_t len)
{
	if (blk_lower_arch_isa(arch))
		return true;
	int n = snprintf(buf, len, "%s '%.32s': blk compiles for", what, arch);
	for (int i = 0; blk_lower_arch_name(i) && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s %s", i ? "," : "", blk_lower_arch_name(i));
	return false;
}

/* The PTX target for a compute capability: sm_90a uses Hopper-only
 * instructions and loads only on 9.0; newer GPUs JIT plain sm_90 PTX. */
static bool arch_for(int major, int minor, char *arch, size_t len)
{
	const char *env = getenv("BLK_ARCH");
	if (env && *env)
		snprintf(arch, len, "%s", env);
	else if (major == 9 && minor == 0)
		snprintf(arch, len, "sm_90a");
	else if (major >= 9)
		snprintf(arch, len, "sm_90");
	else if (major == 8)
		snprintf(arch, len, "sm_80");
	else
		return false;
	return true;
}

/* BLK_SIGNAL_TIMEOUT: seconds a signal_wait may spin before its kernel
 * traps (60 when unset or not a positive number). */
static int64_t signal_timeout_ns(void)
{
	const char *s = getenv("BLK_SIGNAL_TIMEOUT");
	char *end = NULL;
	double v = s ? strtod(s, &end) : 0;
	if (!s || end == s || *end || !(v > 0) || v > 1e9)
		v = 60;
	return (int64_t)(v * 1e9);
}

static BlkRuntime *runtime_new(void)
{
	BlkRuntime *rt = calloc(1, sizeof *rt);
	if (rt)
		rt->err = calloc(1, 1);
	if (rt) {
		rt->tag = BLK_TAG_RUNTIME;
		rt->world = 1;
		rt->signal_timeout_ns = signal_timeout_ns();
	}
	if (rt)
		blk_disk_init(rt);
	if (rt && !rt->err) {
		free(rt->cache_dir);
		free(rt);
		rt = NULL;
	}
	return rt;
}

static bool query_device(BlkRuntime *rt, int device)
{
	BlkDriver *drv = rt->drv;
	int count = 0;
	if (!blk_rt_check(rt, drv->cuDeviceGetCount(&count), "cuDeviceGetCount"))
		return false;
	if (device < 0 || device >= count)
		return blk_rt_error(rt, "no CUDA device %d: the driver sees %d GPU%s", device, count,
		                    count == 1 ? "" : "s");
	char name[256];
	if (!blk_rt_check(rt, drv->cuDeviceGet(&rt->dev, device), "cuDeviceGet") ||
	    !blk_rt_check(rt, drv->cuDeviceGetName(name, sizeof name, rt->dev), "cuDeviceGetName") ||
	    !blk_rt_check(rt, drv->cuDeviceGetAttribute(&rt->cc_major,
	                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, rt->dev), "cuDeviceGetAttribute") ||
	    !blk_rt_check(rt, drv->cuDeviceGetAttribute(&rt->cc_minor,
	                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, rt->dev), "cuDeviceGetAttribute") ||
	    !blk_rt_check(rt, drv->cuDeviceGetAttribute(&rt->smem_optin,
	                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, rt->dev),
	                  "cuDeviceGetAttribute") ||
	    !blk_rt_check(rt, drv->cuDeviceGetAttribute(&rt->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	                  rt->dev), "cuDeviceGetAttribute"))
		return false;
	if (!arch_for(rt->cc_major, rt->cc_minor, rt->arch, sizeof rt->arch))
		return blk_rt_error(rt, "%s has compute capability %d.%d; blk needs 8.0 or newer", name,
		                    rt->cc_major, rt->cc_minor);
	char buf[256];
	if (!arch_known("BLK_ARCH", rt->arch, buf, sizeof buf))
		return blk_rt_error(rt, "%s", buf);
	snprintf(rt->name, sizeof rt->name, "%s (%s, driver %d.%d)", name, rt->arch,
	         drv->version / 1000, drv->version % 1000 / 10);
	return true;
}

static bool open_context(BlkRuntime *rt)
{
	BlkDriver *drv = rt->drv;
	if (!blk_rt_check(rt, drv->cuDevicePrimaryCtxRetain(&rt->ctx, rt->dev),
	                  "cuDevicePrimaryCtxRetain"))
		return false;
	return blk_rt_check(rt, drv->cuCtxSetCurrent(rt->ctx), "cuCtxSetCurrent");
}

BlkRuntime *blk_runtime_create(int device, char *err, size_t errlen)
{
	BlkRuntime *rt = runtime_new();
	if (!rt) {
		copy_err(err, errlen, "out of memory");
		return NULL;
	}
	char buf[512] = "";
	rt->drv = blk_driver_open(buf, sizeof buf);
	if (!rt->drv) {
		blk_rt_error(rt, "%s", buf);
	} else if (query_device(rt, device) && open_context(rt)) {
		return rt;
	}
	copy_err(err, errlen, rt->err);
	blk_runtime_destroy(rt);
	return NULL;
}

BlkRuntime *blk_runtime_create_offline(const char *arch, char *err, size_t errlen)
{
	if (!arch)
		arch = "sm_90a";
	char buf[256];
	if (!arch_known("unknown arch", arch, buf, sizeof buf)) {
		copy_err(err, errlen, buf);
		return NULL;
	}
	BlkRuntime *rt = runtime_new();
	if (!rt) {
		copy_err(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(rt->arch, sizeof rt->arch, "%s", arch);
	snprintf(rt->name, sizeof rt->name, "offline (%s)", arch);
	return rt;
}

void blk_runtime_destroy(BlkRuntime *rt)
{
	if (!rt || !blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_runtime_destroy"))
		return;
	if (rt->drv && rt->ctx)
		rt->drv->cuDevicePrimaryCtxRelease(rt->dev);
	blk_driver_close(rt->drv);
	free(rt->cache_dir);
	free(rt->err);
	rt->err = NULL;
	blk_handle_retire(rt);
}

const char *blk_runtime_arch(const BlkRuntime *rt)
{
	return blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_runtime_arch") ? rt->arch : "";
}

const char *blk_runtime_device_name(const BlkRuntime *rt)
{
	return blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_runtime_device_name") ? rt->name : "";
}

/* ---- tensors ----------------------------------------------------------- */

size_t blk_tensor_elem_size(int dtype)
{
	static const size_t bytes[] = {
#define X(e, n, b) b,
		BLK_DTYPES(X)
#undef X
	};
	return dtype >= 0 && dtype < BLK_NUM_DTYPES ? bytes[dtype] : 0;
}

BlkTensor blk_tensor_make(void *data, int dtype, int rank, const int64_t *shape)
{
	BlkTensor t = {.data = data, .dtype = dtype, .rank = rank};
	int64_t stride = 1;
	for (int i = rank - 1; shape && i >= 0 && i < BLK_TENSOR_MAX_RANK; i--) {
		t.shape[i] = shape[i];
		t.strides[i] = stride;
		/* past int64 no array can exist: saturate (a launch refuses such
		 * dims) rather than overflow */
		if (__builtin_mul_overflow(stride, shape[i], &stride))
			stride = INT64_MAX;
	}
	return t;
}

int64_t blk_tensor_numel(const BlkTensor *t)
{
	int64_t n = t ? 1 : 0;
	int rank = t && t->rank < BLK_TENSOR_MAX_RANK ? t->rank : BLK_TENSOR_MAX_RANK;
	for (int i = 0; t && i < rank; i++)
		if (t->shape[i] <= 0)
			return t->shape[i] < 0 ? -1 : 0;
	/* saturated: callers ask whether there is data ("> 0"), which
	 * a wrapped product could deny */
	for (int i = 0; t && i < rank; i++)
		if (__builtin_mul_overflow(n, t->shape[i], &n))
			return INT64_MAX;
	return n;
}
