/* blkc_gpu.c - the GPU side of `blkc run`, through the public runtime API. */
#include "blkc_gpu.h"
#include "interp/interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/include/blk.h"

static const BlkLoc no_loc;

typedef struct GpuRun {
	BlkRuntime *rt;
	BlkProgram *prog;
	BlkTimer *timer;
	BlkTensor tensors[BLK_MAX_PARAMS];
	int n;
} GpuRun;

static bool fail(GpuRun *g, BlkDiag *d, const char *what)
{
	blk_error(d, no_loc, "%s: %s", what, blk_runtime_last_error(g->rt));
	return false;
}

static void gpu_free(GpuRun *g)
{
	for (int i = 0; i < g->n; i++)
		blk_mem_free(g->rt, g->tensors[i].data);
	blk_timer_destroy(g->timer);
	blk_program_destroy(g->prog);
	blk_runtime_destroy(g->rt);
}

/* Device copies of the host arrays (outputs arrive poisoned). */
static bool upload(GpuRun *g, BlkHostArray **host, int n, BlkDiag *d)
{
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		if (!blk_mem_alloc(g->rt, host[i]->nbytes, &p))
			return fail(g, d, "cannot allocate device memory");
		g->tensors[i] = blk_tensor_make(p, (int)host[i]->desc.dtype, host[i]->desc.rank,
		                                host[i]->desc.shape);
		g->n = i + 1;
		if (!blk_memcpy_htod(g->rt, p, host[i]->data, host[i]->nbytes))
			return fail(g, d, "cannot copy to the device");
	}
	return true;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* Median of o->iters timed launches after a few warm-up launches.  Outputs
 * are recomputed each time, so the first launch's results are kept by
 * downloading before timing. */
static bool time_launches(GpuRun *g, BlkFunc *f, int iters, float *median, BlkDiag *d)
{
	float *ms = calloc((size_t)iters, sizeof *ms);
	bool ok = ms && (g->timer = blk_timer_create(g->rt));
	for (int i = 0; ok && i < 3; i++)
		ok = blk_launch(f, g->tensors, g->n, NULL);
	for (int i = 0; ok && i < iters; i++) {
		ok = blk_timer_start(g->timer, NULL) && blk_launch(f, g->tensors, g->n, NULL) &&
		     blk_timer_stop(g->timer, NULL) && blk_timer_elapsed_ms(g->timer, &ms[i]);
	}
	if (ok) {
		qsort(ms, (size_t)iters, sizeof *ms, cmp_float);
		*median = ms[iters / 2];
	}
	free(ms);
	return ok || fail(g, d, "timing the kernel failed");
}

static BlkHostArray *host_copy(const BlkHostArray *h)
{
	BlkHostArray *c = blk_host_new(h->desc.dtype, h->desc.rank, h->desc.shape);
	if (c)
		memcpy(c->data, h->data, h->nbytes);
	return c;
}

/* Copies of the arrays as they are before the launch (inout ones change). */
static bool copy_all(BlkHostArray **host, BlkHostArray **ref, int n, BlkDiag *d)
{
	for (int i = 0; i < n; i++) {
		if (!(ref[i] = host_copy(host[i]))) {
			blk_error(d, no_loc, "out of host memory");
			return false;
		}
	}
	return true;
}

/* Interprets k on the copies made before the launch. */
static bool interpret(const BlkKernel *k, const BlkArrayDesc *descs, BlkHostArray **ref, int n,
                      BlkDiag *d)
{
	void *data[BLK_MAX_PARAMS];
	for (int i = 0; i < n; i++)
		data[i] = ref[i]->data;
	return blk_interp_run(k, descs, data, n, stdout, d);
}

/* Compares every out/inout array with the interpreter's; false on a mismatch. */
static bool compare(const BlkKernel *k, BlkHostArray **host, BlkHostArray **ref, BlkDiag *d)
{
	bool ok = true, fp8 = false;
	for (int p = 0; p < k->nparams; p++)
		fp8 |= blk_dtype_is_fp8(k->params[p].dtype);
	for (int p = 0, i = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		int at = i++;
		if (pa->access == BLK_ACCESS_IN)
			continue;
		double *want = malloc(ref[at]->count * sizeof *want + 1);
		if (!want)
			blk_die("out of memory");
		for (size_t e = 0; e < ref[at]->count; e++)
			want[e] = blk_host_get(ref[at], e);
		double tol = blk_host_default_tol(pa->dtype);
		/* fp8 dots on sm_90a sum as Hopper's fp8 tensor cores do (about 14
		 * bits a step, docs/language.md), not in exact f32 */
		if (fp8 && blk_dtype_is_float(pa->dtype) && tol < 2e-2)
			tol = 2e-2;
		BlkHostCompare c;
		bool same = blk_host_compare(host[at], want, tol, &c);
		printf("  %s: max rel err %.3g vs the interpreter (tolerance %.0e): %s\n", pa->name,
		       c.max_rel, tol, same ? "ok" : "MISMATCH");
		if (!same) {
			blk_error(d, pa->loc, "'%s' differs from the interpreter at %zu of %zu elements; first at flat index %zu: GPU %g, interpreter %g",
			          pa->name, c.mismatches, host[at]->count, c.first_bad, c.bad_out, c.bad_ref);
			ok = false;
		}
		free(want);
	}
	return ok;
}

static bool download(GpuRun *g, BlkHostArray **host, int n, BlkDiag *d)
{
	for (int i = 0; i < n; i++)
		if (!blk_memcpy_dtoh(g->rt, host[i]->data, g->tensors[i].data, host[i]->nbytes))
			return fail(g, d, "cannot copy from the device");
	return true;
}

static bool launch_and_check(const BlkcOptions *o, const BlkKernel *k, GpuRun *g, const BlkArrayDesc *descs,
                             BlkHostArray **host, int n, BlkDiag *d)
{
	const char *defs[BLKC_MAX_ARGS];
	char buf[BLKC_MAX_ARGS][256];
	for (int i = 0; i < o->ndefines; i++) {
		snprintf(buf[i], sizeof buf[i], "%s=%s", o->defines[i].name, o->defines[i].value);
		defs[i] = buf[i];
	}
	BlkFunc *f;
	BlkCompiledInfo info;
	if (!(g->prog = blk_program_load(g->rt, o->file, defs, o->ndefines)) ||
	    !(f = blk_program_kernel(g->prog, k->name)))
		return fail(g, d, "cannot load the program");
	BlkHostArray *ref[BLK_MAX_PARAMS] = { 0 };
	bool ok = (!o->check || copy_all(host, ref, n, d)) && upload(g, host, n, d) && (blk_func_compile(f, g->tensors, n, &info) || fail(g, d, "cannot compile")) &&
	          (blk_launch(f, g->tensors, n, NULL) || fail(g, d, "launch failed")) &&
	          (blk_synchronize(g->rt) || fail(g, d, "the kernel failed")) && download(g, host, n, d);
	float ms = 0;
	if (ok && o->check)
		ok = interpret(k, descs, ref, n, d) && compare(k, host, ref, d);
	for (int i = 0; i < n; i++)
		blk_host_free(ref[i]);
	/* Timing relaunches, which would change inout arrays: keep the first
	 * results, time on the device copies. */
	if (ok && time_launches(g, f, o->iters, &ms, d))
		printf("kernel %s on %s: %u threads x grid (%u, %u, %u), %zu B shared memory, %.4f ms (median of %d)\n",
		       k->name, blk_runtime_device_name(g->rt), info.threads, info.grid[0], info.grid[1],
		       info.grid[2], info.smem_bytes, ms, o->iters);
	return ok && !blk_diag_error_count(d);
}

bool blkc_run_gpu(const BlkcOptions *o, const BlkKernel *k, const int64_t *sizes,
                  const BlkArrayDesc *descs, BlkHostArray **host, int n, BlkDiag *d)
{
	(void)sizes;
	char err[512];
	GpuRun g = { 0 };
	if (!(g.rt = blk_runtime_create(0, err, sizeof err))) {
		blk_error(d, no_loc, "cannot run on the GPU: %s", err);
		blk_note(d, no_loc, "`blkc run --interpret` runs the kernel on the CPU");
		return false;
	}
	bool ok = launch_and_check(o, k, &g, descs, host, n, d);
	gpu_free(&g);
	return ok;
}
