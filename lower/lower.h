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

/* The most shared memory a CTA can opt into on sm_90: no compiled kernel
 * asks for more (smem-plan refuses it; the disk cache checks entries). */
enum { BLK_LOWER_MAX_SMEM = 232448 };

/* A compiled kernel: its PTX and its launch contract (ir.h BlkLaunch:
 * grid, threads, shared bytes, the argument list in ABI order), which the
 * runtime and AOT C follow as it is; all arena-allocated. */
typedef struct BlkCompiled {
	const char *entry;     /* PTX function name */
	const char *ptx;       /* NUL-terminated */
	const char *llvm_ir;   /* when want_llvm, else NULL */
	const BlkLaunch *launch;
} BlkCompiled;

/* The lowest PTX ISA (times 10) that has arch, 0 for an arch blk does not
 * compile for; blk_lower_arch_name(i) names the ones it does (NULL past the
 * last), for messages. */
int blk_lower_arch_isa(const char *arch);
const char *blk_lower_arch_name(int i);

/* Name of pass i in pipeline order, NULL past the last (for --dump-after
 * and --help): clone, the IR passes, emit-llvm, ptx. */
const char *blk_lower_pass_name(int i);

/* Runs the IR pass named `pass` alone on kernel k of module m, in place,
 * then the verifier (blkc --from-ir FILE --pass=NAME; the per-pass tests).
 * sizes/arrays may be NULL for the passes that do not read them. */
bool blk_lower_run_pass(BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k, const char *pass,
                        const int64_t *sizes, const BlkArrayDesc *arrays,
                        const BlkLowerOptions *opt);

/* The backend alone (emit-llvm, ptx) on kernel k of module m as the last
 * IR pass left it, launch header and all (blkc --from-ir FILE
 * --emit=llvm|ptx; the emitters' tests): an error for a kernel that is
 * not at that point.  A kernel without a launch header gets the default
 * one (contiguous arrays of its params' shapes). */
bool blk_lower_emit_kernel(BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k, const BlkLowerOptions *opt,
                           BlkCompiled *out);

/* sizes: one value per k->sizes entry; arrays: one per non-scratch param
 * (shapes must already be bound and checked by blk_bind_sizes).
 * Reports errors (e.g. an unsupported construct at this size) through d. */
bool blk_lower_kernel(BlkArena *a, BlkDiag *d, const BlkKernel *k,
                      const int64_t *sizes, const BlkArrayDesc *arrays,
                      const BlkLowerOptions *opt, BlkCompiled *out);

#endif
