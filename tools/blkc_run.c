/* blkc_run.c - `blkc run`: run one kernel on seeded random inputs or .npy
 * files, in the interpreter or on the GPU (checked against the interpreter),
 * and write the outputs as .npy files. */
#include "blkc.h"
#include "interp/interp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tools/hostdata.h"
#include "blkc_gpu.h"

static const BlkLoc no_loc;

static void shape_str(char *buf, size_t len, const BlkArrayDesc *a);

/* The .npy given for a param on the command line, or NULL. */
static const char *npy_for(const BlkcOptions *o, const char *param)
{
	for (int b = 0; b < o->nbindings; b++)
		if (strcmp(o->bindings[b].name, param) == 0)
			return o->bindings[b].value;
	return NULL;
}

/* Reads the .npy inputs into host[] (by param) and binds the sizes their
 * shapes determine where the command line left them open. */
static bool read_inputs(const BlkcOptions *o, const BlkKernel *k, BlkHostArray **host,
                        int64_t *sizes, BlkDiag *d)
{
	int n = 0;
	for (int p = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		const char *path = npy_for(o, pa->name);
		if (path && pa->access == BLK_ACCESS_OUT) {
			blk_error(d, pa->loc, "'%s' is an output; only in and inout arrays take a .npy", pa->name);
			return false;
		}
		if (path && !(host[n] = blk_host_npy_read(path, d)))
			return false;
		if (path && blk_dtype_is_fp8(pa->dtype) && host[n]->desc.dtype == BLK_U8)
			host[n]->desc.dtype = pa->dtype; /* fp8 travels as its bits ('|u1') */
		if (path && host[n]->desc.rank != pa->rank) { /* binds no size: say why here */
			blk_error(d, pa->loc, "%s: an array of rank %d, but %s of kernel '%s' has rank %d",
			          path, host[n]->desc.rank, pa->name, k->name, pa->rank);
			return false;
		}
		for (int i = 0; path && i < pa->rank && i < host[n]->desc.rank; i++) {
			for (int s = 0; pa->shape[i]->kind == BLK_SYM_VAR && s < k->nsizes; s++)
				if (strcmp(k->sizes[s], pa->shape[i]->name) == 0 && sizes[s] < 0)
					sizes[s] = host[n]->desc.shape[i];
		}
		n++;
	}
	return true;
}

static bool sizes_complete(const BlkKernel *k, const int64_t *sizes, BlkDiag *d)
{
	for (int i = 0; i < k->nsizes; i++) {
		if (sizes[i] < 0) {
			blk_error(d, no_loc, "size %s of kernel '%s' is unknown: give %s=VALUE or an input .npy that fixes it",
			          k->sizes[i], k->name, k->sizes[i]);
			return false;
		}
	}
	return true;
}

/* Says where each input came from. */
static void describe_inputs(const BlkcOptions *o, const BlkKernel *k, BlkHostArray **host)
{
	int i = 0;
	for (int p = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		BlkHostArray *h = host[i++];
		if (pa->access == BLK_ACCESS_OUT)
			continue;
		char shape[128];
		shape_str(shape, sizeof shape, &h->desc);
		const char *path = npy_for(o, pa->name);
		if (path)
			printf("  %s: %s <- %s\n", pa->name, shape, path);
		else
			printf("  %s: %s <- random (seed %llu)\n", pa->name, shape, (unsigned long long)o->seed);
	}
}

/* Allocates the arrays not read from files: inputs random, outputs poisoned. */
static bool make_arrays(const BlkcOptions *o, const BlkKernel *k, BlkArrayDesc *descs,
                        BlkHostArray **host, int n, BlkDiag *d)
{
	int i = 0;
	for (int p = 0; p < k->nparams && i < n; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		if (host[i]) {
			descs[i] = host[i]->desc; /* a file's own shape: blk_bind_sizes judges it */
		} else if (!(host[i] = blk_host_new(descs[i].dtype, descs[i].rank, descs[i].shape))) {
			blk_error(d, pa->loc, "'%s' is too large to allocate (blkc run makes arrays of up to "
			          "%zu bytes)", pa->name, BLK_HOST_MAX_BYTES);
			return false;
		} else if (pa->access == BLK_ACCESS_OUT) {
			blk_host_poison(host[i]);
		} else {
			blk_host_fill_random(host[i], o->seed * 1000003u + (uint64_t)p);
			if (pa->prefetch) /* its values place blocks: random ones rarely mean much */
				fprintf(stderr, "blkc: note: prefetch array '%s' is random (-8 .. 8); pass "
				        "%s=FILE.npy for a real list\n", pa->name, pa->name);
		}
		i++;
	}
	return true;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void shape_str(char *buf, size_t len, const BlkArrayDesc *a)
{
	int n = snprintf(buf, len, "%s[", blk_dtype_name(a->dtype));
	for (int i = 0; i < a->rank && n < (int)len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
	if (n < (int)len)
		snprintf(buf + n, len - (size_t)n, "]");
}

/* DIR and the directories above it, made where missing (mkdir -p). */
static bool make_dirs(const char *dir, BlkDiag *d)
{
	char path[4096];
	BlkLoc none = { 0 };
	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
		blk_error(d, none, "the output directory's name is too long: %.40s...", dir);
		return false;
	}
	for (char *p = path + 1;; p++) {
		char c = *p;
		if (c != '/' && c != 0)
			continue;
		*p = 0;
		struct stat st;
		if (stat(path, &st) != 0 && mkdir(path, 0777) != 0 && errno != EEXIST) {
			blk_error(d, none, "cannot make the output directory %s: %s", path, strerror(errno));
			return false;
		}
		*p = c;
		if (!c)
			break;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		blk_error(d, none, "the output directory %s is not a directory", path);
		return false;
	}
	return true;
}

/* The output directory, made where missing, before the kernel runs (a
 * --out-dir that is a file was refused only after the run). */
static bool out_dir_ready(const BlkcOptions *o, const BlkKernel *k, BlkDiag *d)
{
	bool outputs = false;
	for (int p = 0; p < k->nparams; p++)
		outputs |= k->params[p].access == BLK_ACCESS_OUT || k->params[p].access == BLK_ACCESS_INOUT;
	return !outputs || make_dirs(o->out_dir, d);
}

/* Writes every out/inout array to DIR/NAME.npy (DIR made by out_dir_ready)
 * and says what it wrote. */
static bool write_outputs(const BlkcOptions *o, const BlkKernel *k, BlkHostArray **host, BlkDiag *d)
{
	int i = 0;
	bool ok = true;
	for (int p = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		BlkHostArray *h = host[i++];
		if (pa->access == BLK_ACCESS_IN)
			continue;
		char path[4096], shape[128];
		snprintf(path, sizeof path, "%s/%s.npy", o->out_dir, pa->name);
		shape_str(shape, sizeof shape, &h->desc);
		size_t unwritten = pa->access == BLK_ACCESS_OUT ? blk_host_count_poison(h) : 0;
		if (!blk_host_npy_write(path, h, d)) {
			ok = false;
			continue;
		}
		printf("  %s: %s -> %s", pa->name, shape, path);
		if (unwritten)
			printf("  (warning: %zu of %zu elements never written)", unwritten, h->count);
		printf("\n");
	}
	return ok;
}

int blkc_run(const BlkcOptions *o, BlkArena *a, BlkDiag *d, BlkModule *m)
{
	(void)a;
	BlkKernel *k = blkc_pick_kernel(m, o, d);
	if (!k)
		return BLKC_ERROR;
	int64_t sizes[BLK_MAX_SIZES];
	BlkArrayDesc descs[BLK_MAX_PARAMS];
	BlkHostArray *host[BLK_MAX_PARAMS] = { 0 };
	if (!blkc_kernel_fits(k, d) || !out_dir_ready(o, k, d))
		return BLKC_ERROR;
	int r = BLKC_ERROR, n = 0;
	if (!blkc_sizes_from_bindings(k, o, sizes, d) || !read_inputs(o, k, host, sizes, d) ||
	    !sizes_complete(k, sizes, d) || (n = blkc_array_descs(k, sizes, descs, d)) < 0 ||
	    !make_arrays(o, k, descs, host, n, d) || !blk_bind_sizes(k, descs, n, sizes, d))
		goto out;
	describe_inputs(o, k, host);
	if (o->interpret) {
		void *data[BLK_MAX_PARAMS];
		for (int i = 0; i < n; i++)
			data[i] = host[i]->data;
		double t0 = now_ms();
		if (!blk_interp_run(k, descs, data, n, stdout, d))
			goto out;
		printf("kernel %s ran in the interpreter in %.1f ms\n", k->name, now_ms() - t0);
	} else if (!blkc_run_gpu(o, k, sizes, descs, host, n, d)) {
		goto out;
	}
	r = write_outputs(o, k, host, d) ? BLKC_OK : BLKC_ERROR;
out:
	for (int i = 0; i < k->nparams && i < BLK_MAX_PARAMS; i++)
		blk_host_free(host[i]);
	return r;
}
