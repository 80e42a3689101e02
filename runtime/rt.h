/* rt.h - the runtime's internal structures (not installed). */
#ifndef BLK_RT_H
#define BLK_RT_H

#include <stdarg.h>

#include "blk.h"
#include "driver.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "lower/lower.h"

struct BlkRuntime {
	BlkDriver *drv;      /* NULL: offline */
	CUdevice dev;
	CUcontext ctx;       /* the device's primary context, retained */
	int cc_major, cc_minor;
	int smem_optin;      /* max dynamic shared memory per CTA, opt-in */
	char arch[16];
	char name[320];
	char *err;           /* malloc'ed; "" when none */
};

/* One compiled specialization of a kernel (cache.c). */
typedef struct BlkCacheEntry {
	char *key;
	uint64_t hash;
	BlkArena *arena;     /* holds compiled.ptx etc. */
	BlkCompiled compiled;
	CUmodule module;     /* loaded on first launch */
	CUfunction fn;
	char *jit_log;
	struct BlkCacheEntry *next;
} BlkCacheEntry;

/* Specializations of one kernel, newest first.  A kernel sees few distinct
 * shapes in practice, so a list with a hash check is enough. */
typedef struct BlkCache {
	BlkCacheEntry *first;
	unsigned compiles, hits;
} BlkCache;

struct BlkFunc {
	BlkProgram *prog;
	const BlkKernel *kernel;
	int ntensors;
	BlkCache cache;
	BlkFunc *next;
};

struct BlkProgram {
	BlkRuntime *rt;
	BlkArena *arena;     /* the IR module */
	BlkModule *module;
	BlkFunc *funcs;
};

/* Error reporting: replaces rt->err; always returns false. */
bool blk_rt_error(BlkRuntime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "what failed: CUDA_ERROR_... (n): ..." into rt->err; false unless r is 0. */
bool blk_rt_check(BlkRuntime *rt, CUresult r, const char *what);
/* Makes rt's context current on this thread; false (with an error) when the
 * runtime is offline.  Every call into the driver goes through it. */
bool blk_rt_enter(BlkRuntime *rt, const char *what);
/* Runs fn(arg) under blk_guard: a blk_die inside it (a bug, or an arena out
 * of memory) becomes rt's error "what: internal error: ..." and false. */
bool blk_rt_guard(BlkRuntime *rt, const char *what, bool (*fn)(void *arg), void *arg);
/* What the compiled code assumes of the n tensors of a launch of k (bound
 * already): 16-byte aligned data, no memory shared between two parameters
 * when one is written, no two elements of a written tensor at one address
 * (memcheck.c); false with the error otherwise. */
bool blk_rt_check_memory(BlkRuntime *rt, const BlkKernel *k, const BlkTensor *t, int n);

/* ---- cache.c ----------------------------------------------------------- */

/* The cache key of a specialization: kernel, arch and every array's dtype,
 * shape and strides (sizes follow from the shapes).  Two launches with
 * equal keys can share one compiled kernel.  Returns a malloc'ed string. */
char *blk_cache_key(const char *kernel, const char *arch, const BlkArrayDesc *arrays, int n);
uint64_t blk_cache_hash(const char *key);
BlkCacheEntry *blk_cache_find(BlkCache *c, const char *key);
/* Takes ownership of key and arena. */
BlkCacheEntry *blk_cache_insert(BlkCache *c, char *key, BlkArena *arena,
                                const BlkCompiled *compiled);
/* Frees every entry; unloads modules through drv when given. */
void blk_cache_clear(BlkCache *c, const BlkDriver *drv);

/* ---- tuner.c ----------------------------------------------------------- */

/* A tuner's signature for a launch: blk_cache_key of the tensors' dtypes,
 * shapes and strides.  NULL when a tensor is malformed (bad dtype or rank;
 * the launch checks then say how) or out of memory.  malloc'ed. */
char *blk_tuner_key(const char *kernel, const char *arch, const BlkTensor *t, int n);

#endif
