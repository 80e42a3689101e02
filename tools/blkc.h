/* blkc.h - the compiler driver's options, shared by its compile and run modes. */
#ifndef BLKC_H
#define BLKC_H

#include <stdbool.h>
#include <stdint.h>

#include "frontend/frontend.h"
#include "lower/lower.h"
#include "support/limits.h"

enum { BLKC_OK = 0, BLKC_ERROR = 1, BLKC_USAGE = 2 };
enum { BLKC_MAX_ARGS = 64 };

typedef enum { EMIT_NONE, EMIT_TOKENS, EMIT_AST, EMIT_IR, EMIT_LLVM, EMIT_PTX, EMIT_C } BlkcEmit;

/* A NAME=VALUE argument after the file: a launch size or an input .npy. */
typedef BlkDefine BlkcBinding; /* the same pair as a -D */

typedef struct BlkcOptions {
	bool run;              /* `blkc run` */
	bool interpret;        /* run --interpret */
	BlkcEmit emit;
	const char *file;
	const char *kernel;    /* -k; NULL: the file's only kernel */
	const char *out;       /* -o; NULL: stdout */
	const char *arch;      /* --arch; NULL: the GPU's own, else sm_90a */
	const char *dump_after;
	const char *out_dir;   /* run: where outputs go */
	bool report;
	bool estimate;         /* --estimate: the cost model's, one JSON line */
	bool from_ir;          /* --from-ir: the file is IR text */
	const char *pass;      /* --pass: the one IR pass to run on it */
	bool check;            /* run on the GPU: compare with the interpreter */
	uint64_t seed;
	int iters;
	int ndefines;
	BlkDefine defines[BLKC_MAX_ARGS];
	int nbindings;
	BlkcBinding bindings[BLKC_MAX_ARGS];
} BlkcOptions;

/* blkc.c */
BlkKernel *blkc_pick_kernel(const BlkModule *m, const BlkcOptions *o, BlkDiag *d);
/* Fills sizes (k->nsizes values) from the NAME=VALUE bindings and, for run,
 * from the shapes of input .npy files already bound into arrays. */
bool blkc_sizes_from_bindings(const BlkKernel *k, const BlkcOptions *o, int64_t *sizes,
                              BlkDiag *d);
/* Contiguous array descriptors for every non-scratch param at these sizes. */
int blkc_array_descs(const BlkKernel *k, const int64_t *sizes, BlkArrayDesc *arrays, BlkDiag *d);

/* Lowers k for arch at the sizes bound on the command line: sizes
 * (k->nsizes), arrays (*n, contiguous) and the compilation. */
bool blkc_lower_at_sizes(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkKernel *k,
                         const char *arch, int64_t *sizes, BlkArrayDesc *arrays, int *n,
                         BlkCompiled *out);

/* -o FILE or stdout; closing reports write errors. */
FILE *blkc_open_output(const BlkcOptions *o, BlkDiag *d);
bool blkc_close_output(FILE *f, const BlkcOptions *o, BlkDiag *d);

/* blkc_ir.c: --from-ir [--pass=NAME] */
int blkc_from_ir(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkSource *src);

/* blkc_aot.c: --emit=c, the kernel ahead of time for each arch of --arch */
int blkc_emit_c(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkKernel *k);

/* blkc_report.c: --report for kernel k of m compiled (c) at these sizes and
 * arrays; k is specialized in place (to count FLOPs), so it is the last use. */
void blkc_report(const BlkcOptions *o, BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k,
                 const BlkCompiled *c, const int64_t *sizes, const BlkArrayDesc *arrays);

/* blkc_run.c */
int blkc_run(const BlkcOptions *o, BlkArena *a, BlkDiag *d, BlkModule *m);

/* The frontend keeps kernels within BLK_MAX_PARAMS and BLK_MAX_SIZES; a kernel
 * from IR text may not be: false with an error then. */
bool blkc_kernel_fits(const BlkKernel *k, BlkDiag *d);

#endif
