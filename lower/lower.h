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
#include "support/limits.h"

typedef struct BlkLowerOptions {
	const char *arch;        /* "sm_80" .. "sm_90a"; NULL: sm_90a */
	const char *dump_after;  /* pass name, "all", or NULL */
	FILE *dump_out;          /* where dumps go (NULL: stderr) */
	bool want_llvm;          /* keep the LLVM IR text in the result */
	bool no_tma;             /* copy with cp.async only (ahead-of-time C: no tensor maps) */
	int num_sms;             /* the GPU's multiprocessors (persist.c); 0: 132 (H100 SXM, H200) */
} BlkLowerOptions;

/* The most shared memory a CTA can opt into on sm_90, the most of any
 * arch: no compiled kernel asks for more (smem-plan refuses past its
 * arch's, blk_lower_arch_smem; the disk cache checks entries). */
enum { BLK_LOWER_MAX_SMEM = BLK_MAX_SMEM_BYTES };

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
/* The most shared memory a CTA of arch can have (bytes; at most
 * BLK_LOWER_MAX_SMEM, which an unknown or NULL arch gets). */
int blk_lower_arch_smem(const char *arch);
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

/* What the cost model (lower/cost.c) reads of one program, at tile level. */
typedef struct BlkCostWork {
	double programs;       /* the grid's programs: tiles of work */
	double flops;          /* the dots' FLOPs, one program */
	double wide_flops;     /* the same, each dot's over its width's share of the engine's peak */
	double bytes;          /* bytes its loads and stores move, one program */
	double trips;          /* iterations of its longest loop nest (1: none) */
	const char *engine;    /* its largest dot's engine ("wgmma", "mma", "fma"); NULL: no dot */
	const char *fallback;  /* why a dot of tensor-core dtypes runs on "fma" (dot-engine's attr); NULL: none does */
	BlkDType dtype;        /* that dot's operands' */
	int64_t dot_m, dot_n, dot_k; /* that dot's shape */
	bool dot_in_loop;      /* it runs in a loop (its operands are staged) */
	double largest_tile;   /* elements of the largest tile a program computes */
	double sfu;            /* elements through exp, log, tanh, ... (the SFUs), one program */
	double compulsory;     /* bytes: every input read once, every output written once */
	bool guessed;          /* a loop bound did not evaluate (counted once) */
} BlkCostWork;

/* The cost model's estimate for one launch, and what it came from. */
typedef struct BlkCost {
	double us;             /* the kernel's estimated time (INFINITY: does not fit an SM) */
	BlkCostWork work;
	int regs;              /* registers a thread, estimated */
	int threads;           /* a program's */
	int64_t smem;          /* a program's shared bytes */
	bool specialized;      /* warp-specialized: one program holds the SM */
	int per_sm;            /* programs resident an SM */
	const char *limit;     /* what limits per_sm */
	double waves;          /* programs / (SMs * per_sm), rounded up */
	double compute_us, memory_us, latency_us; /* the three per-wave bounds, summed over the waves */
	double dram_us;        /* compulsory bytes at the HBM's bandwidth */
	double flight;         /* the share of the bandwidth the loads in flight keep busy */
} BlkCost;

/* The IR passes alone (no LLVM), then the cost model's estimate of the
 * kernel at these sizes (blk_lower_kernel's arguments).  False, with the
 * error in d, where the lowering refuses the kernel. */
bool blk_lower_cost(BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                    const BlkArrayDesc *arrays, const BlkLowerOptions *opt, BlkCost *out);

/* Every input read once, every output written once (inout both): the
 * bytes no schedule avoids; arrays one per non-scratch param of k. */
double blk_lower_compulsory_bytes(const BlkKernel *k, const BlkArrayDesc *arrays);

/* Only the passes up to dot-engine, then the model's tile-level reading
 * of the kernel (cheaper than blk_lower_cost: the first round of
 * runtime/auto.c's search). */
bool blk_lower_cost_work(BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                         const BlkArrayDesc *arrays, const BlkLowerOptions *opt, BlkCostWork *out);
/* The estimate from the work alone, at warps and stages, with the
 * threads, shared memory and registers they would take guessed. */
void blk_lower_cost_guess(const BlkCostWork *w, int warps, int stages, const BlkLowerOptions *opt,
                          BlkCost *out);

/* sizes: one value per k->sizes entry; arrays: one per non-scratch param
 * (shapes must already be bound and checked by blk_bind_sizes).
 * Reports errors (e.g. an unsupported construct at this size) through d. */
bool blk_lower_kernel(BlkArena *a, BlkDiag *d, const BlkKernel *k,
                      const int64_t *sizes, const BlkArrayDesc *arrays,
                      const BlkLowerOptions *opt, BlkCompiled *out);

#endif
