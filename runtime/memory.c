/* memory.c - device memory, streams and event timers over the driver. */
#include "rt.h"

#include <stdlib.h>

static CUdeviceptr dptr(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

bool blk_mem_alloc(BlkRuntime *rt, size_t bytes, void **out)
{
	if (!out)
		return blk_rt_error(rt, "blk_mem_alloc: out is NULL");
	*out = NULL;
	if (bytes == 0)
		return true;
	CUdeviceptr p = 0;
	if (!blk_rt_enter(rt, "blk_mem_alloc") ||
	    !blk_rt_check(rt, rt->drv->cuMemAlloc(&p, bytes), "cuMemAlloc"))
		return false;
	*out = (void *)(uintptr_t)p;
	return true;
}

void blk_mem_free(BlkRuntime *rt, void *p)
{
	if (p && blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_mem_free") && rt->drv &&
	    blk_rt_enter(rt, "blk_mem_free"))
		blk_rt_check(rt, rt->drv->cuMemFree(dptr(p)), "cuMemFree");
}

/* A copy of bytes > 0 needs both ends. */
static bool ends(BlkRuntime *rt, const char *what, const void *dst, const void *src, size_t bytes)
{
	if (bytes && (!dst || !src))
		return blk_rt_error(rt, "%s: %s is NULL", what, dst ? "src" : "dst");
	return true;
}

bool blk_memcpy_htod(BlkRuntime *rt, void *dst, const void *src, size_t bytes)
{
	return ends(rt, "blk_memcpy_htod", dst, src, bytes) && blk_rt_enter(rt, "blk_memcpy_htod") &&
	       blk_rt_check(rt, rt->drv->cuMemcpyHtoD(dptr(dst), src, bytes), "cuMemcpyHtoD");
}

bool blk_memcpy_dtoh(BlkRuntime *rt, void *dst, const void *src, size_t bytes)
{
	return ends(rt, "blk_memcpy_dtoh", dst, src, bytes) && blk_rt_enter(rt, "blk_memcpy_dtoh") &&
	       blk_rt_check(rt, rt->drv->cuMemcpyDtoH(dst, dptr(src), bytes), "cuMemcpyDtoH");
}

bool blk_memcpy_dtod(BlkRuntime *rt, void *dst, const void *src, size_t bytes, BlkStream s)
{
	return ends(rt, "blk_memcpy_dtod", dst, src, bytes) && blk_rt_enter(rt, "blk_memcpy_dtod") &&
	       blk_rt_check(rt, rt->drv->cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, (CUstream)s),
	                    "cuMemcpyDtoDAsync");
}

bool blk_memset(BlkRuntime *rt, void *dst, uint8_t value, size_t bytes)
{
	return ends(rt, "blk_memset", dst, &value, bytes) && blk_rt_enter(rt, "blk_memset") &&
	       blk_rt_check(rt, rt->drv->cuMemsetD8(dptr(dst), value, bytes), "cuMemsetD8");
}

/* ---- streams ----------------------------------------------------------- */

bool blk_stream_create(BlkRuntime *rt, BlkStream *out)
{
	CUstream s = NULL;
	if (!out)
		return blk_rt_error(rt, "blk_stream_create: out is NULL");
	*out = NULL;
	if (!blk_rt_enter(rt, "blk_stream_create") ||
	    !blk_rt_check(rt, rt->drv->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
		return false;
	*out = s;
	return true;
}

void blk_stream_destroy(BlkRuntime *rt, BlkStream s)
{
	if (s && rt && rt->drv && blk_rt_enter(rt, "blk_stream_destroy"))
		blk_rt_check(rt, rt->drv->cuStreamDestroy((CUstream)s), "cuStreamDestroy");
}

bool blk_stream_synchronize(BlkRuntime *rt, BlkStream s)
{
	return blk_rt_enter(rt, "blk_stream_synchronize") &&
	       blk_rt_check(rt, rt->drv->cuStreamSynchronize((CUstream)s), "cuStreamSynchronize");
}

bool blk_synchronize(BlkRuntime *rt)
{
	/* cuCtxSynchronize@2000: the current context (13000 takes one). */
	return blk_rt_enter(rt, "blk_synchronize") &&
	       blk_rt_check(rt, rt->drv->cuCtxSynchronize(), "cuCtxSynchronize");
}

/* ---- timers ------------------------------------------------------------ */

struct BlkTimer {
	uint32_t tag;        /* BLK_TAG_TIMER (handle.c) */
	BlkRuntime *rt;
	CUevent start, stop;
};

BlkTimer *blk_timer_create(BlkRuntime *rt)
{
	if (!blk_rt_enter(rt, "blk_timer_create"))
		return NULL;
	BlkTimer *t = calloc(1, sizeof *t);
	if (!t) {
		blk_rt_error(rt, "out of memory");
		return NULL;
	}
	t->tag = BLK_TAG_TIMER;
	t->rt = rt;
	if (!blk_rt_check(rt, rt->drv->cuEventCreate(&t->start, CU_EVENT_DEFAULT), "cuEventCreate") ||
	    !blk_rt_check(rt, rt->drv->cuEventCreate(&t->stop, CU_EVENT_DEFAULT), "cuEventCreate")) {
		blk_timer_destroy(t);
		return NULL;
	}
	return t;
}

void blk_timer_destroy(BlkTimer *t)
{
	if (!t || !blk_handle_ok(t, BLK_TAG_TIMER, "blk_timer_destroy"))
		return;
	if (blk_rt_enter(t->rt, "blk_timer_destroy")) {
		if (t->start)
			t->rt->drv->cuEventDestroy(t->start);
		if (t->stop)
			t->rt->drv->cuEventDestroy(t->stop);
	}
	blk_handle_retire(t);
}

bool blk_timer_start(BlkTimer *t, BlkStream s)
{
	if (!blk_handle_ok(t, BLK_TAG_TIMER, "blk_timer_start"))
		return false;
	return blk_rt_enter(t->rt, "blk_timer_start") &&
	       blk_rt_check(t->rt, t->rt->drv->cuEventRecord(t->start, (CUstream)s), "cuEventRecord");
}

bool blk_timer_stop(BlkTimer *t, BlkStream s)
{
	if (!blk_handle_ok(t, BLK_TAG_TIMER, "blk_timer_stop"))
		return false;
	return blk_rt_enter(t->rt, "blk_timer_stop") &&
	       blk_rt_check(t->rt, t->rt->drv->cuEventRecord(t->stop, (CUstream)s), "cuEventRecord");
}

bool blk_timer_elapsed_ms(BlkTimer *t, float *ms)
{
	if (!blk_handle_ok(t, BLK_TAG_TIMER, "blk_timer_elapsed_ms"))
		return false;
	if (!ms)
		return blk_rt_error(t->rt, "blk_timer_elapsed_ms: ms is NULL");
	BlkRuntime *rt = t->rt;
	return blk_rt_enter(rt, "blk_timer_elapsed_ms") &&
	       blk_rt_check(rt, rt->drv->cuEventSynchronize(t->stop), "cuEventSynchronize") &&
	       blk_rt_check(rt, rt->drv->cuEventElapsedTime(ms, t->start, t->stop), "cuEventElapsedTime");
}
