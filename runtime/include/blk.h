/* blk.h - the blk JIT runtime: load .blk programs, launch their kernels on
 * device tensors.
 *
 * A BlkRuntime owns one GPU (its primary context, so blk shares a process
 * with the CUDA runtime, cuBLAS or PyTorch).  A BlkProgram is a compiled
 * .blk source; a BlkFunc is one of its kernels.  blk_launch binds the
 * kernel's symbolic sizes (M, N, K) from the tensors' shapes, compiles the
 * kernel for exactly those sizes, strides and dtypes on first use (then
 * caches it), and launches it on a stream.
 *
 * Errors: functions return false / NULL and leave a readable message in
 * blk_runtime_last_error (compile errors with file:line:col, driver errors
 * as "cuXxx failed: CUDA_ERROR_NAME (code): description").  The CUDA driver
 * is loaded at run time; a machine without one gets a clear error, never a
 * crash.  Every destroy/free function accepts NULL.
 *
 * One runtime must not be used from two threads at once (except for
 * blk_runtime_interrupt, made to be called from another thread).
 */
#ifndef BLK_H
#define BLK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API: libblk.so exports these and nothing else (its
 * version script, runtime/libblk.map, lists the same names; a test keeps
 * the two in step). */
#ifndef BLK_API
#define BLK_API __attribute__((visibility("default")))
#endif

/* blk's version, "0.1.0" (the soname's major is its first number). */
BLK_API const char *blk_version(void);

/* ORDER DTYPE: the same values as ir/ir.h's BlkDType. */
enum {
	BLK_DTYPE_F32 = 0,
	BLK_DTYPE_F16 = 1,  /* stored as IEEE half bits */
	BLK_DTYPE_BF16 = 2, /* stored as bfloat16 bits */
	BLK_DTYPE_I32 = 3,
	BLK_DTYPE_BOOL = 4, /* one byte, 0 or 1 */
	BLK_DTYPE_I8 = 5,   /* signed byte */
	BLK_DTYPE_U8 = 6,   /* unsigned byte */
	BLK_DTYPE_F8E4M3 = 7, /* 8-bit float, OCP E4M3FN bits (torch.float8_e4m3fn) */
	BLK_DTYPE_F8E5M2 = 8, /* 8-bit float, E5M2 bits (torch.float8_e5m2) */
	BLK_DTYPE_U32 = 9,  /* unsigned 32-bit integer */
};

#define BLK_TENSOR_MAX_RANK 4
/* The most ranks a world of GPUs may have (blk_runtime_set_world,
 * blk_symmetric_create): more than any NVLink domain. */
#define BLK_MAX_WORLD 4096

typedef struct BlkRuntime BlkRuntime;
typedef struct BlkProgram BlkProgram;
typedef struct BlkFunc BlkFunc;
typedef struct BlkTimer BlkTimer;
/* A CUstream; NULL is the default (legacy) stream.  A stream made by the
 * CUDA runtime or PyTorch on the same device may be passed as is. */
typedef void *BlkStream;

/* A device array as a launch sees it.  strides are in elements, not bytes. */
typedef struct BlkTensor {
	void *data; /* device pointer (CUdeviceptr) */
	int dtype;  /* BLK_DTYPE_* */
	int rank;   /* 0 .. BLK_TENSOR_MAX_RANK */
	int64_t shape[BLK_TENSOR_MAX_RANK];
	int64_t strides[BLK_TENSOR_MAX_RANK];
	/* A symmetric param's tensor (docs/language.md, "Several GPUs"): a
	 * device array of the world's u64 addresses of this buffer, entry r
	 * rank r's (any one address per rank of the same allocation works: a
	 * kernel reaches rank r at data + peers[r] - peers[rank]).  NULL for
	 * every other param. */
	const void *peers;
} BlkTensor;

/* A row-major contiguous tensor over data. */
BLK_API BlkTensor blk_tensor_make(void *data, int dtype, int rank, const int64_t *shape);
/* Bytes of one element of dtype; 0 for an unknown dtype. */
BLK_API size_t blk_tensor_elem_size(int dtype);
/* Elements of a tensor (the product of its shape); -1 for a negative dim,
 * INT64_MAX for a product past it. */
BLK_API int64_t blk_tensor_numel(const BlkTensor *t);

/* ---- runtime ----------------------------------------------------------- */

/* Number of GPUs the CUDA driver sees.  0 when there is no driver or no
 * device (err says which), -1 when the driver is there but failed (err says
 * how).  Tests use it to tell "skip: no GPU" from a real failure. */
BLK_API int blk_device_count(char *err, size_t errlen);

/* A runtime on GPU `device`: loads the driver, retains the device's primary
 * context and makes it current.  Kernels are compiled for the device's own
 * architecture (sm_90a on compute capability 9.0, sm_80 on 8.x, ...).
 * NULL on failure with the reason in err (which may be NULL). */
BLK_API BlkRuntime *blk_runtime_create(int device, char *err, size_t errlen);
/* A runtime with no device, compiling for arch ("sm_90a", "sm_80"; NULL:
 * sm_90a): programs load, launches are checked and compiled (blk_func_compile
 * gives the PTX), but memory, streams and launches fail with an error. */
BLK_API BlkRuntime *blk_runtime_create_offline(const char *arch, char *err, size_t errlen);
/* Releases the primary context.  Programs must be destroyed first. */
BLK_API void blk_runtime_destroy(BlkRuntime *rt);

/* The directory of the disk cache of compiled kernels, shared by every
 * process of the user: $BLK_CACHE_DIR, else $XDG_CACHE_HOME/blk, else
 * ~/.cache/blk; none when BLK_CACHE=0 (docs/runtime.md).  NULL: none. */
BLK_API const char *blk_runtime_cache_dir(const BlkRuntime *rt);
/* Moves the disk cache to dir (created on first write); NULL or "" turns
 * it off for rt. */
BLK_API bool blk_runtime_set_cache_dir(BlkRuntime *rt, const char *dir);

/* The message of the last failed call on rt (or anything made from it); ""
 * if none.  Valid until the next call on rt.  A call given a NULL handle
 * (runtime, program, kernel, tuner, timer), one destroyed already (the
 * last 1024 destroyed are recognized) or one of another kind fails without
 * touching freed memory; its message is blk_runtime_last_error(NULL), kept
 * per thread. */
BLK_API const char *blk_runtime_last_error(const BlkRuntime *rt);
/* The architecture kernels are compiled for, e.g. "sm_90a". */
BLK_API const char *blk_runtime_arch(const BlkRuntime *rt);
/* "NVIDIA H100 80GB HBM3 (sm_90a, driver 13.0)", or "offline (sm_90a)". */
BLK_API const char *blk_runtime_device_name(const BlkRuntime *rt);

/* ---- device memory ----------------------------------------------------- */

/* bytes of device memory in *dptr; a zero-byte request gives NULL. */
BLK_API bool blk_mem_alloc(BlkRuntime *rt, size_t bytes, void **dptr);
BLK_API void blk_mem_free(BlkRuntime *rt, void *dptr);
/* Synchronous copies. */
BLK_API bool blk_memcpy_htod(BlkRuntime *rt, void *dst, const void *src, size_t bytes);
BLK_API bool blk_memcpy_dtoh(BlkRuntime *rt, void *dst, const void *src, size_t bytes);
/* Asynchronous device-to-device copy on stream. */
BLK_API bool blk_memcpy_dtod(BlkRuntime *rt, void *dst, const void *src, size_t bytes, BlkStream stream);
/* Sets bytes bytes of dst to value (synchronous). */
BLK_API bool blk_memset(BlkRuntime *rt, void *dst, uint8_t value, size_t bytes);

/* ---- streams, synchronization, timing --------------------------------- */

BLK_API bool blk_stream_create(BlkRuntime *rt, BlkStream *out);
BLK_API void blk_stream_destroy(BlkRuntime *rt, BlkStream s);
/* Waits for the work queued on s; reports errors of kernels that ran. */
BLK_API bool blk_stream_synchronize(BlkRuntime *rt, BlkStream s);
/* Waits for all work on the runtime's context. */
BLK_API bool blk_synchronize(BlkRuntime *rt);

/* A pair of CUDA events for timing device work on a stream:
 * start, enqueue work, stop, then elapsed (which waits for stop). */
BLK_API BlkTimer *blk_timer_create(BlkRuntime *rt);
BLK_API void blk_timer_destroy(BlkTimer *t);
BLK_API bool blk_timer_start(BlkTimer *t, BlkStream s);
BLK_API bool blk_timer_stop(BlkTimer *t, BlkStream s);
BLK_API bool blk_timer_elapsed_ms(BlkTimer *t, float *ms);

/* ---- programs and kernels ---------------------------------------------- */

/* Compiles a .blk file.  defines: ndefines strings "NAME=VALUE" overriding
 * compile-time parameters ("T=bf16", "BM=128"), as blkc -D does.  NULL on a
 * read or compile error (the diagnostics are in the last error). */
BLK_API BlkProgram *blk_program_load(BlkRuntime *rt, const char *path,
                             const char *const *defines, int ndefines);
/* The same from source text; name is used in messages. */
BLK_API BlkProgram *blk_program_load_source(BlkRuntime *rt, const char *name, const char *source,
                                    const char *const *defines, int ndefines);
/* Unloads its modules and frees its kernels. */
BLK_API void blk_program_destroy(BlkProgram *p);
/* Compilations done and launches served from the in-memory cache, over
 * all kernels (a specialization read from the disk cache is neither). */
BLK_API void blk_program_cache_stats(const BlkProgram *p, unsigned *compiles, unsigned *hits);

/* Specializations read from the disk cache instead of compiled. */
BLK_API unsigned blk_program_disk_hits(const BlkProgram *p);

/* The kernel named name (NULL: the program's only kernel); owned by p.
 * NULL, with an error naming the kernels there are, if there is none. */
BLK_API BlkFunc *blk_program_kernel(BlkProgram *p, const char *name);
BLK_API const char *blk_func_name(const BlkFunc *f);
/* How many tensors a launch passes: the kernel's non-scratch params. */
BLK_API int blk_func_num_tensors(const BlkFunc *f);

/* What one specialization compiled to.  Pointers stay valid as long as the
 * program. */
typedef struct BlkCompiledInfo {
	const char *entry;   /* PTX entry name */
	const char *ptx;
	const char *arch;
	unsigned threads;    /* per CTA */
	size_t smem_bytes;   /* dynamic shared memory per CTA */
	unsigned grid[3];
	bool cached;         /* this call found it in a cache (memory or disk) */
	const char *jit_log; /* the driver JIT's info log once loaded; else NULL */
	const char *config;  /* the values chosen for `auto` parameters for these
	                      * tensors ("BM=128,BN=256,num_warps=8"); "" when none */
} BlkCompiledInfo;

/* Checks tensors against f's params (count, dtype, rank, shape) without
 * compiling or touching the device. */
BLK_API bool blk_func_check(BlkFunc *f, const BlkTensor *tensors, int ntensors);
/* Checks and compiles (or finds in the cache) the specialization for these
 * tensors; works offline.  info may be NULL. */
BLK_API bool blk_func_compile(BlkFunc *f, const BlkTensor *tensors, int ntensors, BlkCompiledInfo *info);
/* The search space for these tensors, ranked by the cost model: up to max
 * configurations of f's int compile-time parameters that its program's
 * defines leave open and the kernel uses as sizes, plus num_warps and
 * num_stages (docs/runtime.md, "auto"), the best first, each as
 * "BM=128,BN=256,num_warps=8" in configs[i] (valid as long as the
 * program).  Returns how many: 0 when nothing is open to search, -1 on
 * an error.  What the tuners time when given no candidates; works offline. */
BLK_API int blk_func_search(BlkFunc *f, const BlkTensor *tensors, int ntensors, const char **configs,
                            int max);
/* Checks, compiles if needed, loads, and enqueues f on stream.  Nothing
 * reaches the GPU if the tensors do not match the kernel.  Asynchronous:
 * errors while the kernel runs surface at the next synchronization. */
BLK_API bool blk_launch(BlkFunc *f, const BlkTensor *tensors, int ntensors, BlkStream stream);

/* ---- parameters, shapes and the interpreter ----------------------------- */

/* ORDER ACCESS: the same values as ir/ir.h's BlkAccess. */
enum { BLK_PARAM_IN = 0, BLK_PARAM_OUT = 1, BLK_PARAM_INOUT = 2 };

/* One tensor parameter of a kernel, as a launch passes it. */
typedef struct BlkParamInfo {
	const char *name;  /* owned by the program */
	int access;        /* BLK_PARAM_* */
	int dtype;         /* BLK_DTYPE_*, compile-time parameters applied */
	int rank;
	int symmetric;     /* 1: a buffer on every rank (a launch passes its peers); 2: a signal array */
} BlkParamInfo;

/* Tensor parameter i (0 .. blk_func_num_tensors - 1); false (with an
 * error) when i is out of range. */
BLK_API bool blk_func_param(BlkFunc *f, int i, BlkParamInfo *out);
/* Fills in the tensors a caller has not made yet: those with rank < 0 get
 * their param's dtype and rank, the shape its symbolic sizes take once the
 * other tensors' shapes bind them, and row-major strides (data untouched).
 * false, with an error naming the size, when a size is bound by no given
 * tensor or two given tensors disagree. */
BLK_API bool blk_func_infer_shapes(BlkFunc *f, BlkTensor *tensors, int ntensors);
/* The kernel's launch sizes (M, N, K, in order of first appearance): how
 * many, and the name of size i (NULL when out of range). */
BLK_API int blk_func_num_sizes(const BlkFunc *f);
BLK_API const char *blk_func_size_name(const BlkFunc *f, int i);
/* Checks the tensors as blk_launch does and binds the sizes from their
 * shapes: values gets blk_func_num_sizes(f) values.  No compile, no device. */
BLK_API bool blk_func_bind(BlkFunc *f, const BlkTensor *tensors, int ntensors, int64_t *values);
/* Runs f in the CPU interpreter: tensors are in host memory (data a host
 * pointer; f16/bf16 as 16-bit patterns, bool as one byte), checked as for
 * blk_launch, strides respected.  No GPU and no compile: works on an
 * offline runtime.  Debug prints go to stdout.  false with the error (a
 * binding error, or a failed check at run time) in the last error. */
BLK_API bool blk_interpret(BlkFunc *f, const BlkTensor *tensors, int ntensors);
/* Asks the blk_interpret running on rt in another thread to stop: it
 * fails soon after (before its next program or loop iteration) with
 * "interpreting KERNEL: interrupted".  The one call that may come from
 * another thread while rt is in use, or from a signal handler (SIGINT);
 * a later blk_interpret starts afresh. */
BLK_API void blk_runtime_interrupt(BlkRuntime *rt);
/* The world this runtime's device belongs to: its rank (0 .. world - 1)
 * and how many ranks there are (1 by default).  The launches of a kernel
 * with symmetric params or my_rank()/world() pass these; each rank's
 * process (or thread) sets its own.  false for a rank outside the world
 * or a world of more than BLK_MAX_WORLD ranks. */
BLK_API bool blk_runtime_set_world(BlkRuntime *rt, int rank, int world);
/* 1 when f runs across ranks (a symmetric or signal param, or my_rank() or
 * world() in its body or an index map: its launches take the runtime's
 * rank and world), 0 when not, -1 with the error for a bad handle. */
BLK_API int blk_func_multi_rank(const BlkFunc *f);
/* ---- symmetric memory (several GPUs, from C) ----------------------------
 * A buffer every rank of a group allocates and maps the others' of, from
 * the CUDA driver's virtual memory management: cuMemCreate with a POSIX
 * file descriptor handle, exported to the other ranks' processes by the
 * caller's own means (a Unix socket with SCM_RIGHTS, pidfd_getfd), each
 * imported and mapped here with cuMemMap and cuMemSetAccess.  Once every
 * rank's is imported, blk_symmetric_peers is the table a symmetric
 * param's BlkTensor.peers takes.  No NVLink multicast. */
typedef struct BlkSymmetric BlkSymmetric;
/* This rank's buffer of at least `bytes` (rounded up to the driver's
 * granularity) on rt's device, in a group of `world` ranks (at most
 * BLK_MAX_WORLD); NULL with the error (a driver without virtual memory
 * management, no memory, a rank outside the world). */
BLK_API BlkSymmetric *blk_symmetric_create(BlkRuntime *rt, size_t bytes, int rank, int world);
/* This rank's buffer as a new file descriptor to send to the others (the
 * caller closes it); -1 with the error. */
BLK_API int blk_symmetric_export(BlkSymmetric *s);
/* Maps rank r's buffer from a descriptor of it (received from rank r;
 * the caller still owns and closes fd).  Once per other rank; every rank
 * must have created its buffer with the same size. */
BLK_API bool blk_symmetric_import(BlkSymmetric *s, int rank, int fd);
/* This rank's device address of the buffer. */
BLK_API void *blk_symmetric_data(const BlkSymmetric *s);
/* The device table of every rank's address of the buffer (BlkTensor.peers
 * for any tensor in it); NULL with the error until every rank's is mapped. */
BLK_API const void *blk_symmetric_peers(BlkSymmetric *s);
/* Unmaps every rank's buffer and frees this one (after every kernel using
 * it has finished, on every rank).  On a runtime whose device can no
 * longer be entered, the mappings are left to the process's exit. */
BLK_API void blk_symmetric_destroy(BlkSymmetric *s);

/* Runs f in the interpreter as a world of nranks ranks, one thread each:
 * tensors[r] are rank r's ntensors tensors, as blk_interpret takes them
 * (host memory; peers unused: the interpreter sees every rank's arrays).
 * A deadlock between the ranks is an error, not a hang. */
BLK_API bool blk_interpret_world(BlkFunc *f, int nranks, const BlkTensor *const *tensors, int ntensors);

/* ---- autotuner --------------------------------------------------------- */

/* A tuner picks, per shape signature, the fastest of a list of candidate
 * configurations of one kernel, by timing them on the actual tensors.
 *
 * A configuration is a set of compile-time parameters ("BM=64", "BN=128",
 * "BK=16", "num_warps=4"); each candidate is the program compiled with the
 * base defines plus its own (its own win where both name a parameter).
 * The signature is what the compile cache specializes on: the kernel, the
 * arch and every tensor's dtype, shape and strides, never the pointers.
 *
 * The first blk_tuner_launch with a new signature:
 *   1. checks the tensors against every candidate (a mismatch for all of
 *      them is an error before anything is compiled or reaches the GPU);
 *   2. compiles every candidate, skipping those that fail to load or
 *      compile, with a note in the log;
 *   3. on the stream, launches each one `warmup` times, then times `reps`
 *      launches with CUDA events and takes the median; candidates the GPU
 *      refuses (shared memory or registers over its limits) are skipped
 *      with a note;
 *   4. keeps the fastest for the signature and launches it once more, last.
 * It synchronizes the stream (the timings wait for their events).  Every
 * candidate writes the outputs while it is timed, so after the first
 * launch the outputs hold the winner's result; but a kernel that reads
 * what it writes (in-out tensors, accumulation into an output) sees them
 * already changed: tune such a kernel on scratch copies.  Later launches
 * with that signature go straight to the winner (asynchronous, like
 * blk_launch); candidates added after a signature was tuned do not reopen
 * it.
 *
 * With no candidate added, each new signature's candidates are the cost
 * model's best 12 of the kernel's search space for its tensors
 * (blk_func_search; they are added to the list, and a signature times only
 * its own); a kernel with nothing open to search has one candidate, the
 * base defines alone.
 *
 * Errors go to blk_runtime_last_error of the runtime. */
typedef struct BlkTuner BlkTuner;

/* A tuner for kernel (NULL: the program's only kernel) of the .blk file
 * path, or of source when path is NULL (exactly one is given).  The base
 * defines ("T=bf16") apply to every candidate.  The program is loaded once
 * with the base defines to check the source and the kernel name; NULL with
 * the error on failure.  Works offline (blk_tuner_compile). */
BLK_API BlkTuner *blk_tuner_create(BlkRuntime *rt, const char *path, const char *source,
                           const char *kernel, const char *const *base_defines, int nbase);
/* Frees the tuner and its candidates' programs; accepts NULL. */
BLK_API void blk_tuner_destroy(BlkTuner *t);

/* Adds a candidate: n strings "NAME=VALUE".  false if one is malformed or a
 * name repeats (nothing is added).  With no candidate added, the search
 * space's (above).  Candidates are numbered from 0 in order added. */
BLK_API bool blk_tuner_add_config(BlkTuner *t, const char *const *defines, int n);
/* The same from text: "BM=64,BN=128,BK=16,num_warps=4" (commas or spaces). */
BLK_API bool blk_tuner_add_config_text(BlkTuner *t, const char *text);
BLK_API int blk_tuner_num_configs(const BlkTuner *t);
/* Candidate i's own defines as text, "BM=64,BN=128,BK=16,num_warps=4" ("" for
 * none); NULL when i is out of range. */
BLK_API const char *blk_tuner_config(const BlkTuner *t, int i);

/* Warm-up launches and timed launches per candidate (defaults 2 and 10;
 * reps at least 1, warmup at least 0). */
BLK_API void blk_tuner_set_timing(BlkTuner *t, int warmup, int reps);

/* Launches the best candidate for these tensors, tuning first when their
 * signature is new (see above). */
BLK_API bool blk_tuner_launch(BlkTuner *t, const BlkTensor *tensors, int ntensors, BlkStream stream);
/* Steps 1 and 2 alone, without a device: checks the tensors and compiles
 * every candidate for their signature (filling the compile cache the
 * tuning run will use).  Returns how many compiled; -1 on an error (the
 * tensors fit no candidate). */
BLK_API int blk_tuner_compile(BlkTuner *t, const BlkTensor *tensors, int ntensors);

/* The outcome of tuning one signature. */
typedef struct BlkTunerResult {
	int config;         /* the winner's index (blk_tuner_config gives its text) */
	float ms;           /* its median time */
	int candidates;     /* candidates there were */
	int timed;          /* ones that compiled, ran and were timed */
} BlkTunerResult;

/* The winner for the signature of these tensors.  false (with an error) if
 * that signature has not been tuned. */
BLK_API bool blk_tuner_best(const BlkTuner *t, const BlkTensor *tensors, int ntensors,
                    BlkTunerResult *out);
/* Everything the tuner noted so far: per signature, each candidate's median
 * or why it was skipped, and the winner.  Valid until the next call on t.
 * With BLK_TUNE_LOG=1 in the environment the notes also go to stderr. */
BLK_API const char *blk_tuner_log(BlkTuner *t);

/* ---- XLA (JAX's jax.jit) ----------------------------------------------- */

/* Registers a kernel for XLA custom calls: a .blk file (path) or source
 * text (source), the kernel named kernel (NULL: the only one) and ndefines
 * "NAME=VALUE" compile-time parameters.  Checked by loading it for the
 * interpreter.  Returns its id (>= 1; the same id for the same arguments),
 * or 0 with the reason in err.  Ids stay valid for the process. */
BLK_API int64_t blk_xla_kernel(const char *path, const char *source, const char *kernel,
                               const char *const *defines, int ndefines, char *err,
                               size_t errlen);
/* XLA FFI handlers (XLA_FFI_Handler: an XLA_FFI_CallFrame * in, an
 * XLA_FFI_Error * or NULL out) for the CPU platform (the interpreter on
 * host buffers) and for CUDA (a launch on XLA's stream).  A call passes the
 * kernel's id as the i64 attribute `blk_kernel`, the buffers of its in and
 * inout params as operands and those of its out and inout params as
 * results, each in param order.  docs/python.md, "JAX", says how the
 * Python package registers them (jax.ffi). */
BLK_API void *blk_xla_handler_host(void *call_frame);
BLK_API void *blk_xla_handler_cuda(void *call_frame);

#ifdef __cplusplus
}
#endif

#endif
