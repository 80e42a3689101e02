/* lower.h - from a checked IR kernel to PTX, for one launch configuration.
 *
 * The driver (lower/driver.c) runs the passes of lower/passes/ -- they
 * specialize the kernel on the launch's sizes, lower BlockSpecs, tile --
 * then lower/emit/: LLVM IR through the LLVM-C API, PTX through the NVPTX
 * target machine.  The IR is verified between passes.
 */
#ifndef BLK_LOWER_H
#define BLK_LOWER_H

#include <stddef.h>
#include <stdio.h>

#include "ir/ir.h"

typedef struct BlkLowerOptions {
	const char *arch;        /* "sm_80" .. "sm_90a"; NULL: sm_90a */
	const char *dump_after;  /* pass name, "all", or NULL */
	FILE *dump_out;          /* where dumps go (NULL: stderr) */
	bool want_llvm;          /* keep the LLVM IR text in the result */
	bool no_tma;             /* copy with cp.async only (ahead-of-time C: no tensor maps) */
	int num_sms;             /* the GPU's multiprocessors (persist.c); 0: 132 (H100 SXM, H200) */
} BlkLowerOptions;

/* A TMA tensor map the launch encodes (cuTensorMapEncodeTiled) and passes
 * by value after the pointers: a 2-D view of array `array` (its index
 * among the non-scratch params) -- dims {shape[1], shape[0]}, row stride
 * strides[0] elements, the array's dtype -- boxes of box[0] x box[1]
 * elements (innermost first), the swizzle of `swizzle` bytes (32, 64,
 * 128), zeros out of bounds. */
enum { BLK_MAX_TMAPS = 8 };
typedef struct BlkTmapSpec {
	int array;
	int box[2];
	int swizzle;
} BlkTmapSpec;

/* The kernel ABI: the PTX entry takes one global pointer per non-scratch
 * param, in param order, then one 128-byte CUtensorMap per tmaps[] entry
 * (by value, a grid constant); the code is specialized on the sizes and
 * the arrays' strides given at lowering. */
typedef struct BlkCompiled {
	const char *entry;     /* PTX function name */
	const char *ptx;       /* NUL-terminated, arena-allocated */
	const char *llvm_ir;   /* when want_llvm, else NULL */
	unsigned threads;      /* per program (CTA) */
	size_t smem_bytes;     /* dynamic shared memory per CTA */
	unsigned grid[3];      /* CUDA grid for these sizes */
	bool grid_dynamic;     /* grid depends on dynamic sizes: blk_lower_cuda_grid at each launch */
	int persist_ctas;      /* then also persistent (persist.c): (min(x*y*z, this), 1, 1) */
	int ntmaps;            /* tensor maps the launch passes (sm_90a TMA loads) */
	BlkTmapSpec tmaps[BLK_MAX_TMAPS];
} BlkCompiled;

/* The CUDA grid of k (as checked, not lowered) at these sizes, the way
 * blockspec.c maps grid axes to CUDA's: parallel axes in order to x, y,
 * z, a fourth folded into z.  false if an extent is unbound or over
 * CUDA's limits.  For a kernel whose grid names dynamic sizes. */
bool blk_lower_cuda_grid(const BlkKernel *k, const int64_t *sizes, unsigned grid[3]);
/* The grid c launches with at these sizes: c->grid, or for a dynamic grid
 * blk_lower_cuda_grid's, a persistent one (c->persist_ctas) as min(its
 * programs, persist_ctas) CTAs.  false as blk_lower_cuda_grid. */
bool blk_lower_launch_grid(const BlkCompiled *c, const BlkKernel *k, const int64_t *sizes,
                           unsigned grid[3]);

/* Name of pass i in pipeline order, NULL past the last (for --dump-after
 * and --help): clone, the IR passes, emit-llvm, ptx. */
const char *blk_lower_pass_name(int i);

/* Runs the IR pass named `pass` alone on kernel k of module m, in place,
 * then the verifier (blkc --from-ir FILE --pass=NAME; the per-pass tests).
 * sizes/arrays may be NULL for the passes that do not read them. */
bool blk_lower_run_pass(BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k, const char *pass,
                        const int64_t *sizes, const BlkArrayDesc *arrays,
                        const BlkLowerOptions *opt);

/* sizes: one value per k->sizes entry; arrays: one per non-scratch param
 * (shapes must already be bound and checked by blk_bind_sizes).
 * Reports errors (e.g. an unsupported construct at this size) through d. */
bool blk_lower_kernel(BlkArena *a, BlkDiag *d, const BlkKernel *k,
                      const int64_t *sizes, const BlkArrayDesc *arrays,
                      const BlkLowerOptions *opt, BlkCompiled *out);

#endif
