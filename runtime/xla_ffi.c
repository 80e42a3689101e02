/* xla_ffi.c - blk kernels as XLA custom calls, so that JAX can call them
 * inside jax.jit (docs/python.md, "JAX").
 *
 * The Python package registers two handlers with XLA (jax.ffi): one for
 * the CPU platform, which runs the interpreter on XLA's host buffers, and
 * one for CUDA, which launches on the stream XLA gives.  At trace time it
 * registers each kernel it calls here (blk_xla_kernel: where its source
 * is, which kernel, the compile-time parameters) and passes the id it got
 * as the call's attribute `blk_kernel`; the handler loads the program on
 * the device the call runs on, once, and launches it with XLA's buffers:
 * the operands are the kernel's in and inout params in order, the results
 * its out and inout params in order (an inout param's result aliases its
 * operand).  Nothing here calls back into Python: XLA runs the handlers on
 * its own threads, also with the interpreter lock held elsewhere.
 *
 * The handlers use their own runtimes (one offline runtime for the
 * interpreter, one per GPU on its primary context, as XLA's own), each
 * behind a mutex: a runtime is not to be used from two threads at once,
 * and the Python package's runtimes are guarded by a lock this code cannot
 * take.
 *
 * XLA's FFI is a C ABI of versioned structs (XLA's xla/ffi/api/c_api.h,
 * API major version 0).  The part used here is declared below from that
 * published layout, so libblk builds without JAX installed;
 * tests/runtime/test_xla_abi.c compares every offset with XLA's own header
 * where jaxlib is installed.  Minor versions only append fields, so a
 * handler written against 0.0's fields serves any 0.x: it tells XLA the
 * version XLA itself speaks, and reads a later field only where the
 * struct's size says it is there. */
#include "blk.h"
#include "xla_ffi.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEVICES = 64, MAX_KERNELS = 1 << 16 };

/* The runtime of one place a call runs: index 0 the interpreter's, d + 1
 * GPU d's.  Created on first use and kept for the process (XLA may call a
 * compiled function until exit). */
typedef struct Place {
	pthread_mutex_t lock;
	BlkRuntime *rt;
	char err[512]; /* why rt could not be made */
	bool tried;
} Place;

typedef struct XlaKernel {
	char *path, *source, *name; /* path or source; name NULL: the only kernel */
	char **defines;
	int ndefines;
	BlkProgram *prog[MAX_DEVICES + 1]; /* per place, under its lock */
	BlkFunc *func[MAX_DEVICES + 1];
} XlaKernel;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static XlaKernel *kernels[MAX_KERNELS]; /* id - 1 -> kernel, never freed */
static int nkernels;
static pthread_once_t places_once = PTHREAD_ONCE_INIT;
static Place places[MAX_DEVICES + 1];

static void places_init(void)
{
	for (int i = 0; i <= MAX_DEVICES; i++)
		pthread_mutex_init(&places[i].lock, NULL);
}

static void put_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static char *dup_str(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static bool same_kernel(const XlaKernel *k, const char *path, const char *source, const char *name,
                        const char *const *defines, int ndefines)
{
	if (!same_str(k->path, path) || !same_str(k->source, source) || !same_str(k->name, name) ||
	    k->ndefines != ndefines)
		return false;
	for (int i = 0; i < ndefines; i++)
		if (!same_str(k->defines[i], defines[i]))
			return false;
	return true;
}

static void kernel_free(XlaKernel *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->ndefines; i++)
		free(k->defines[i]);
	free(k->defines);
	free(k->path);
	free(k->source);
	free(k->name);
	free(k);
}

static XlaKernel *kernel_new(const char *path, const char *source, const char *name,
                             const char *const *defines, int ndefines)
{
	XlaKernel *k = calloc(1, sizeof *k);
	if (!k)
		return NULL;
	k->path = dup_str(path);
	k->source = dup_str(source);
	k->name = dup_str(name);
	k->defines = calloc((size_t)ndefines + 1, sizeof *k->defines);
	k->ndefines = ndefines;
	bool ok = k->defines && (!path || k->path) && (!source || k->source) && (!name || k->name);
	for (int i = 0; ok && i < ndefines; i++)
		ok = (k->defines[i] = dup_str(defines[i])) != NULL;
	if (!ok) {
		kernel_free(k);
		return NULL;
	}
	return k;
}

/* The runtime of place p (0: the interpreter's, d + 1: GPU d's), made on
 * first use; the caller holds places[p].lock. */
static BlkRuntime *place_runtime(int p)
{
	Place *pl = &places[p];
	if (!pl->rt && !pl->tried) {
		pl->tried = true;
		pl->rt = p == 0 ? blk_runtime_create_offline(getenv("BLK_ARCH"), pl->err, sizeof pl->err)
		                : blk_runtime_create(p - 1, pl->err, sizeof pl->err);
	}
	return pl->rt;
}

/* Kernel k's function at place p, its program loaded on first use; NULL
 * with err set.  The caller holds places[p].lock. */
static BlkFunc *kernel_func(XlaKernel *k, int p, char *err, size_t errlen)
{
	if (k->func[p])
		return k->func[p];
	BlkRuntime *rt = place_runtime(p);
	if (!rt) {
		put_err(err, errlen, "%s", places[p].err);
		return NULL;
	}
	const char *const *defs = (const char *const *)k->defines;
	BlkProgram *prog = k->path ? blk_program_load(rt, k->path, defs, k->ndefines)
	                           : blk_program_load_source(rt, "<string>", k->source, defs, k->ndefines);
	BlkFunc *f = prog ? blk_program_kernel(prog, k->name) : NULL;
	if (!f) {
		put_err(err, errlen, "%s", blk_runtime_last_error(rt));
		blk_program_destroy(prog);
		return NULL;
	}
	k->prog[p] = prog;
	return k->func[p] = f;
}

/* The id of the kernel registered with these arguments, 0 if none; the
 * caller holds registry_lock. */
static int64_t registered(const char *path, const char *source, const char *name,
                          const char *const *defines, int ndefines)
{
	for (int i = 0; i < nkernels; i++)
		if (same_kernel(kernels[i], path, source, name, defines, ndefines))
			return i + 1;
	return 0;
}

int64_t blk_xla_kernel(const char *path, const char *source, const char *kernel,
                       const char *const *defines, int ndefines, char *err, size_t errlen)
{
	if ((path == NULL) == (source == NULL)) {
		put_err(err, errlen, "blk_xla_kernel: give a path or a source, not %s",
		        path ? "both" : "neither");
		return 0;
	}
	if (ndefines < 0 || (ndefines > 0 && !defines)) {
		put_err(err, errlen, "blk_xla_kernel: %d defines at %p", ndefines, (const void *)defines);
		return 0;
	}
	for (int i = 0; i < ndefines; i++)
		if (!defines[i]) {
			put_err(err, errlen, "blk_xla_kernel: define %d is NULL", i);
			return 0;
		}
	pthread_once(&places_once, places_init);
	pthread_mutex_lock(&registry_lock);
	int64_t id = registered(path, source, kernel, defines, ndefines);
	pthread_mutex_unlock(&registry_lock);
	if (id)
		return id;

	/* A new one: checked by loading it for the interpreter now, so a bad
	 * source is refused at trace time, not when XLA runs it. */
	XlaKernel *k = kernel_new(path, source, kernel, defines, ndefines);
	if (!k) {
		put_err(err, errlen, "blk_xla_kernel: out of memory");
		return 0;
	}
	pthread_mutex_lock(&places[0].lock);
	bool ok = kernel_func(k, 0, err, errlen) != NULL;
	pthread_mutex_unlock(&places[0].lock);
	if (!ok) { /* (nothing loaded) */
		kernel_free(k);
		return 0;
	}
	pthread_mutex_lock(&registry_lock);
	id = registered(path, source, kernel, defines, ndefines); /* another thread's, meanwhile */
	if (!id && nkernels < MAX_KERNELS) {
		kernels[nkernels] = k;
		id = ++nkernels;
		k = NULL;
	}
	pthread_mutex_unlock(&registry_lock);
	if (k) {
		pthread_mutex_lock(&places[0].lock);
		blk_program_destroy(k->prog[0]);
		pthread_mutex_unlock(&places[0].lock);
		kernel_free(k);
	}
	if (!id)
		put_err(err, errlen, "blk_xla_kernel: %d kernels registered already, the most there can be",
		        MAX_KERNELS);
	return id;
}

/* ---- the handlers ---------------------------------------------------------- */

static void *xla_error(const XlaCallFrame *cf, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	XlaErrorCreateArgs a = { XLA_SIZE_UPTO(XlaErrorCreateArgs, code), NULL, msg, code };
	return cf->api->error_create(&a);
}

/* A metadata query (XLA asks at registration what the handler speaks):
 * the API version XLA itself speaks, no traits (a launch may compile,
 * so it is not to be captured into a command buffer). */
static void *metadata(const XlaCallFrame *cf, XlaMetadataExt *ext)
{
	if (ext->base.struct_size < XLA_SIZE_UPTO(XlaMetadataExt, metadata) || !ext->metadata ||
	    ext->metadata->struct_size < XLA_SIZE_UPTO(XlaMetadata, traits))
		return xla_error(cf, XLA_ERR_INVALID_ARGUMENT, "blk: XLA's metadata query is too small");
	if (cf->api->version.major != 0)
		return xla_error(cf, XLA_ERR_UNIMPLEMENTED,
		                 "blk's XLA handler speaks XLA FFI API 0.x; this XLA speaks %d.%d",
		                 cf->api->version.major, cf->api->version.minor);
	XlaMetadata *m = ext->metadata;
	m->version = (XlaApiVersion){ XLA_SIZE_UPTO(XlaApiVersion, minor), NULL, 0,
	                              cf->api->version.minor };
	m->traits = 0;
	if (m->struct_size >= XLA_SIZE_UPTO(XlaMetadata, state_type_id))
		m->state_type_id = 0;
	return NULL;
}

static int blk_dtype_of(int xla)
{
	switch (xla) {
	case XLA_F32: return BLK_DTYPE_F32;
	case XLA_F16: return BLK_DTYPE_F16;
	case XLA_BF16: return BLK_DTYPE_BF16;
	case XLA_S32: return BLK_DTYPE_I32;
	case XLA_PRED: return BLK_DTYPE_BOOL;
	case XLA_S8: return BLK_DTYPE_I8;
	case XLA_U8: return BLK_DTYPE_U8;
	case XLA_F8E4M3FN: return BLK_DTYPE_F8E4M3;
	case XLA_F8E5M2: return BLK_DTYPE_F8E5M2;
	case XLA_U32: return BLK_DTYPE_U32;
	default: return -1;
	}
}

static const char *const dtype_names[] = { "f32", "f16", "bf16", "i32", "bool", "i8", "u8",
	                                       "f8e4m3", "f8e5m2", "u32" };

/* The kernel id of attribute `blk_kernel`, or 0. */
static int64_t kernel_attr(const XlaCallFrame *cf)
{
	const XlaAttrs *at = &cf->attrs;
	for (int64_t i = 0; i < at->size; i++) {
		const XlaSpan *n = at->names[i];
		if (at->types[i] != XLA_ATTR_SCALAR || n->len != 10 || memcmp(n->ptr, "blk_kernel", 10) != 0)
			continue;
		const XlaScalar *s = at->attrs[i];
		if (s->dtype == XLA_S64)
			return *(const int64_t *)s->value;
		if (s->dtype == XLA_U64)
			return (int64_t) * (const uint64_t *)s->value;
	}
	return 0;
}

/* Buffer b as tensor param i of f: its dtype and rank checked, row-major
 * strides (XLA passes FFI buffers in the default layout). */
static bool tensor_of(const XlaBuffer *b, const BlkParamInfo *pi, const char *kname, bool ret,
                      BlkTensor *t, char *msg, size_t len)
{
	int dt = blk_dtype_of(b->dtype);
	if (dt != pi->dtype) {
		snprintf(msg, len, "blk kernel %s: %s %s is %s, the param is %s", kname,
		         ret ? "the result for" : "the operand for", pi->name,
		         dt < 0 ? "of an XLA dtype blk has no name for" : dtype_names[dt],
		         dtype_names[pi->dtype]);
		return false;
	}
	if (b->rank != pi->rank) {
		snprintf(msg, len, "blk kernel %s: %s %s has rank %lld, the param %d", kname,
		         ret ? "the result for" : "the operand for", pi->name, (long long)b->rank, pi->rank);
		return false;
	}
	*t = blk_tensor_make(b->data, dt, pi->rank, b->dims);
	return true;
}

/* The tensors of one call: operands to the in and inout params, results to
 * the out and inout params, each in param order.  copy[i] says an inout
 * param's result is not its operand's buffer (XLA did not alias them):
 * the operand is copied into it before the launch. */
static bool call_tensors(const XlaCallFrame *cf, BlkFunc *f, BlkTensor *ts, const void **copy_from,
                         char *msg, size_t len)
{
	int n = blk_func_num_tensors(f);
	int64_t a = 0, r = 0;
	const char *kname = blk_func_name(f);
	for (int i = 0; i < n; i++) {
		BlkParamInfo pi;
		if (!blk_func_param(f, i, &pi)) {
			snprintf(msg, len, "blk kernel %s: param %d: no such param", kname, i);
			return false;
		}
		copy_from[i] = NULL;
		bool takes = pi.access != BLK_PARAM_OUT, gives = pi.access != BLK_PARAM_IN;
		if ((takes && a >= cf->args.size) || (gives && r >= cf->rets.size)) {
			snprintf(msg, len, "blk kernel %s: the call has %lld operands and %lld results; "
			         "the kernel takes its in and inout params as operands and gives its out "
			         "and inout params as results (at least %s %s here)", kname,
			         (long long)cf->args.size, (long long)cf->rets.size,
			         takes && a >= cf->args.size ? "one more operand, for" : "one more result, for",
			         pi.name);
			return false;
		}
		const XlaBuffer *in = takes ? cf->args.items[a++] : NULL;
		const XlaBuffer *out = gives ? cf->rets.items[r++] : NULL;
		if (in && !tensor_of(in, &pi, kname, false, &ts[i], msg, len))
			return false;
		if (out && !tensor_of(out, &pi, kname, true, &ts[i], msg, len))
			return false;
		if (in && out) {
			if (memcmp(in->dims, out->dims, (size_t)pi.rank * sizeof *in->dims) != 0) {
				snprintf(msg, len, "blk kernel %s: inout %s's result has another shape than "
				         "its operand", kname, pi.name);
				return false;
			}
			if (in->data != out->data)
				copy_from[i] = in->data;
		}
	}
	if (a != cf->args.size || r != cf->rets.size) {
		snprintf(msg, len, "blk kernel %s takes %lld operands and gives %lld results; the call "
		         "has %lld and %lld", kname, (long long)a, (long long)r, (long long)cf->args.size,
		         (long long)cf->rets.size);
		return false;
	}
	return true;
}

static size_t tensor_bytes(const BlkTensor *t)
{
	return (size_t)blk_tensor_numel(t) * blk_tensor_elem_size(t->dtype);
}

/* The device ordinal of this call; -1 when XLA cannot say. */
static int call_device(const XlaCallFrame *cf)
{
	if (cf->api->struct_size < XLA_SIZE_UPTO(XlaApi, device_ordinal_get) ||
	    !cf->api->device_ordinal_get)
		return -1;
	XlaDeviceOrdinalArgs a = { XLA_SIZE_UPTO(XlaDeviceOrdinalArgs, ordinal), NULL, cf->ctx, -1 };
	void *e = cf->api->device_ordinal_get(&a);
	if (e) {
		XlaErrorDestroyArgs d = { XLA_SIZE_UPTO(XlaErrorDestroyArgs, error), NULL, e };
		cf->api->error_destroy(&d);
		return -1;
	}
	return a.ordinal;
}

static void *handle(XlaCallFrame *cf, bool gpu)
{
	if (!cf || !cf->api)
		return NULL; /* nothing to report through */
	if (cf->ext && cf->ext->type == XLA_EXT_METADATA)
		return metadata(cf, (XlaMetadataExt *)cf->ext);
	if (cf->struct_size < XLA_SIZE_UPTO(XlaCallFrame, attrs))
		return xla_error(cf, XLA_ERR_INVALID_ARGUMENT, "blk: XLA's call frame is too small");
	if (cf->stage != XLA_STAGE_EXECUTE)
		return NULL;
	int64_t id = kernel_attr(cf);
	pthread_mutex_lock(&registry_lock);
	XlaKernel *k = id >= 1 && id <= nkernels ? kernels[id - 1] : NULL;
	pthread_mutex_unlock(&registry_lock);
	if (!k)
		return xla_error(cf, XLA_ERR_INVALID_ARGUMENT,
		                 "blk: the call's attribute blk_kernel (%lld) names no kernel registered "
		                 "in this process (blk_xla_kernel gives the ids)", (long long)id);
	int dev = 0;
	void *stream = NULL;
	if (gpu) {
		dev = call_device(cf);
		if (dev < 0 || dev >= MAX_DEVICES)
			return xla_error(cf, XLA_ERR_UNIMPLEMENTED, "blk: XLA did not say which GPU this "
			                 "call runs on (device %d); this XLA is too old for blk's handler", dev);
		XlaStreamArgs sa = { XLA_SIZE_UPTO(XlaStreamArgs, stream), NULL, cf->ctx, NULL };
		void *e = cf->api->stream_get(&sa);
		if (e)
			return e;
		stream = sa.stream;
	}
	int p = gpu ? dev + 1 : 0;
	char msg[1024] = "";
	BlkTensor ts[64];
	const void *copy_from[64];
	void *err = NULL;
	pthread_mutex_lock(&places[p].lock);
	BlkFunc *f = kernel_func(k, p, msg, sizeof msg);
	BlkRuntime *rt = places[p].rt;
	if (!f)
		err = xla_error(cf, XLA_ERR_INTERNAL, "%s", msg);
	else if (blk_func_num_tensors(f) > 64)
		err = xla_error(cf, XLA_ERR_UNIMPLEMENTED, "blk kernel %s: more than 64 arrays",
		                blk_func_name(f));
	else if (!call_tensors(cf, f, ts, copy_from, msg, sizeof msg))
		err = xla_error(cf, XLA_ERR_INVALID_ARGUMENT, "%s", msg);
	int n = f ? blk_func_num_tensors(f) : 0;
	for (int i = 0; !err && i < n; i++) {
		if (!copy_from[i])
			continue;
		if (!gpu)
			memmove(ts[i].data, copy_from[i], tensor_bytes(&ts[i]));
		else if (!blk_memcpy_dtod(rt, ts[i].data, copy_from[i], tensor_bytes(&ts[i]), stream))
			err = xla_error(cf, XLA_ERR_INTERNAL, "%s", blk_runtime_last_error(rt));
	}
	if (!err && !(gpu ? blk_launch(f, ts, n, stream) : blk_interpret(f, ts, n)))
		err = xla_error(cf, XLA_ERR_INTERNAL, "%s", blk_runtime_last_error(rt));
	pthread_mutex_unlock(&places[p].lock);
	return err;
}

void *blk_xla_handler_host(void *call_frame)
{
	pthread_once(&places_once, places_init);
	return handle(call_frame, false);
}

void *blk_xla_handler_cuda(void *call_frame)
{
	pthread_once(&places_once, places_init);
	return handle(call_frame, true);
}
