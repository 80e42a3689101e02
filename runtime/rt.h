/* rt.h - the runtime's internal structures (not installed). */
#ifndef BLK_RT_H
#define BLK_RT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "blk.h"
#include "driver.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "lower/lower.h"

/* ---- handle.c ---------------------------------------------------------- */

/* The first field of every public handle: its kind while it lives, 0 once
 * destroyed (ORDER: kind_name in handle.c). */
enum {
	BLK_TAG_RUNTIME = 0x626c6b52, /* "blkR" */
	BLK_TAG_PROGRAM = 0x626c6b50, /* "blkP" */
	BLK_TAG_FUNC = 0x626c6b46,    /* "blkF" */
	BLK_TAG_TUNER = 0x626c6b54,   /* "blkT" */
	BLK_TAG_TIMER = 0x626c6b45,   /* "blkE" (events) */
	BLK_TAG_SYMMETRIC = 0x626c6b53, /* "blkS" */
};
/* true when h is a live handle tagged tag; else false with the error
 * "what: the kernel is NULL" (or "... was destroyed") in
 * blk_runtime_last_error(NULL): a bad handle has no runtime to hold it. */
bool blk_handle_ok(const void *h, uint32_t tag, const char *what);
/* Ends a handle whose contents are freed already: clears its tag and frees
 * the shell later, so a late call reads the cleared tag, not freed memory. */
void blk_handle_retire(void *h);

struct BlkRuntime {
	uint32_t tag;        /* BLK_TAG_RUNTIME (handle.c) */
	BlkDriver *drv;      /* NULL: offline */
	CUdevice dev;
	CUcontext ctx;       /* the device's primary context, retained */
	int cc_major, cc_minor;
	int smem_optin;      /* max dynamic shared memory per CTA, opt-in */
	int sms;             /* multiprocessors: a persistent grid's CTAs (0 offline) */
	char arch[16];
	char name[320];
	char *err;           /* malloc'ed; "" when none */
	char *cache_dir;     /* the disk cache (diskcache.c); NULL: none */
	atomic_bool interrupt; /* blk_runtime_interrupt: stop blk_interpret */
	int rank, world;     /* blk_runtime_set_world (0 of 1 by default) */
	int64_t signal_timeout_ns; /* a signal_wait's bound: BLK_SIGNAL_TIMEOUT seconds, 60 by default */
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
	const char *config;  /* the `auto` values it was compiled with ("" none; in arena) */
	struct BlkCacheEntry *next;
} BlkCacheEntry;

/* Specializations of one kernel, newest first.  A kernel sees few distinct
 * shapes in practice, so a list with a hash check is enough. */
typedef struct BlkCache {
	BlkCacheEntry *first;
	unsigned compiles, hits;
	unsigned disk_hits;  /* specializations read from the disk cache */
} BlkCache;

struct BlkFunc {
	uint32_t tag;        /* BLK_TAG_FUNC */
	BlkProgram *prog;
	const BlkKernel *kernel; /* with `auto` parameters: their stand-ins (runtime/auto.c) */
	bool has_auto;           /* a specialization first chooses them, then compiles */
	int ntensors;
	BlkCache cache;
	/* The last launch's specialization and its tensors' layouts: a launch
	 * whose tensors have the same dtypes, shapes, strides and alignment
	 * takes it without binding sizes or building its key again. */
	BlkCacheEntry *last;
	BlkArrayDesc *last_arrays;
	/* A launch's sizes (dynamic ones are kernel arguments, and make its
	 * grid) -- spec_sizes of the last specialization, with its class as
	 * blk_dynamic_class writes it (the cache key); last_sizes of the
	 * launch `last` is for. */
	int64_t *spec_sizes, *spec_csizes, *last_sizes;
	BlkArrayDesc *spec_carrays;
	BlkFunc *next;
};

struct BlkProgram {
	uint32_t tag;        /* BLK_TAG_PROGRAM */
	BlkRuntime *rt;
	BlkArena *arena;     /* the IR module */
	BlkModule *module;
	BlkFunc *funcs;
	const char *source;  /* the text and defines it was compiled from, */
	size_t source_len;   /* for the disk cache's key (in arena) */
	const BlkDefine *defines;
	int ndefines;
};

/* Error reporting: replaces rt->err; always returns false. */
bool blk_rt_error(BlkRuntime *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n items at `array` are a count a caller may pass (0 or more, the array
 * there when n > 0); else false with the error naming fn and what. */
bool blk_rt_count_ok(BlkRuntime *rt, const char *fn, const char *what, int n, const void *array);
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

/* ---- program.c --------------------------------------------------------- */

/* Diagnostics written to a memory stream, so that compile, binding and
 * interpreter errors become the runtime's error string. */
typedef struct BlkCapture {
	FILE *f;
	char *text;
	size_t len;
	BlkDiag *d;
} BlkCapture;

/* Opens a capture whose diagnostics live in a. */
bool blk_rt_capture_open(BlkRuntime *rt, BlkCapture *c, BlkArena *a);
/* Closes the stream; when failing, the captured text becomes the error,
 * after "what: " unless what is NULL (messages that name their subject). */
void blk_rt_capture_close(BlkRuntime *rt, BlkCapture *c, bool failed, const char *what);
/* Every entry point taking a BlkFunc starts here: f and its runtime are
 * live handles, else false with the error (handle.c). */
bool blk_rt_func_ok(const BlkFunc *f, const char *what);
/* Array descriptors and bound sizes (k->nsizes) for a launch of f on t[n];
 * errors (from blk_bind_sizes among others) become the runtime's error. */
bool blk_rt_bind(BlkFunc *f, const BlkTensor *t, int n, BlkArrayDesc *arrays, int64_t *sizes);

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

/* ---- diskcache.c ------------------------------------------------------- */

/* rt->cache_dir from the environment (BLK_CACHE, BLK_CACHE_DIR, ...). */
void blk_disk_init(BlkRuntime *rt);
/* The disk key of a specialization of a kernel of p whose in-memory key is
 * mem_key: version, arch, mem_key, defines, source.  malloc'ed; *len bytes. */
char *blk_disk_key(const BlkRuntime *rt, const BlkProgram *p, const char *mem_key, size_t *len);
/* A checked entry for key into out (strings in a); false on a miss. */
bool blk_disk_load(const BlkRuntime *rt, const char *key, size_t klen, const BlkKernel *k, BlkArena *a,
                   BlkCompiled *out);
/* A cursor over an entry's payload (bad: it did not parse). */
typedef struct BlkDiskReader {
	const char *p, *end;
	bool bad;
} BlkDiskReader;
/* The whole entry of this kind ("blkc", "blkt") and key, checked (sum,
 * key); *payload reads what follows the key.  malloc'ed, or NULL. */
char *blk_disk_read(const BlkRuntime *rt, const char *kind, const char *key, size_t klen,
                    BlkDiskReader *payload);
/* "WORD N\n" from r: N (r->bad set when not there). */
unsigned long long blk_disk_take_num(BlkDiskReader *r, const char *word);
/* Writes an entry of this kind atomically, then trims; best effort. */
void blk_disk_write(const BlkRuntime *rt, const char *kind, const char *key, size_t klen,
                    const char *payload, size_t plen);
/* A compiled kernel's entry (blk_disk_write of kind "blkc"). */
void blk_disk_store(const BlkRuntime *rt, const char *key, size_t klen, const BlkKernel *k,
                    const BlkCompiled *c);
/* Removes the oldest entries of dir until they take at most 3/4 of
 * max_bytes, if they take more than max_bytes. */
void blk_disk_trim(const char *dir, uint64_t max_bytes);
/* $BLK_CACHE_MAX_MB in bytes, default 512 MB. */
uint64_t blk_disk_max_bytes(void);

/* ---- dump.c ------------------------------------------------------------ */

/* One compile's dumps ($BLK_DUMP_DIR). */
typedef struct BlkDump {
	FILE *ir;            /* the passes' IR, while compiling */
	char base[4096];     /* DIR/KERNEL-HASH; "" when not dumping */
} BlkDump;

/* With $BLK_DUMP_DIR set: writes the key, points opt's dumps at the .ir
 * file and asks for the LLVM IR; false (nothing to end) otherwise. */
bool blk_dump_begin(BlkDump *dm, const char *kernel, const char *key, BlkLowerOptions *opt);
/* Closes the .ir file and, when the compile succeeded, writes .ll and .ptx. */
void blk_dump_end(BlkDump *dm, const BlkCompiled *c, bool ok);

/* ---- tuner.c ----------------------------------------------------------- */

/* A tuner's signature for a launch: blk_cache_key of the tensors' dtypes,
 * shapes and strides.  NULL when a tensor is malformed (bad dtype or rank;
 * the launch checks then say how) or out of memory.  malloc'ed. */
char *blk_tuner_key(const char *kernel, const char *arch, const BlkTensor *t, int n);

#endif
