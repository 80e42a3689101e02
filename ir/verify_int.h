/* verify_int.h - what the verifier's two files share (internal to ir/).
 *
 * verify.c checks the tile level: structure, counts, types and attrs of
 * every op the frontend makes.  verify_gpu.c adds the GPU level: layouts
 * in tile types (ir/layout.h) and the ops only lower/ makes.
 */
#ifndef BLK_VERIFY_INT_H
#define BLK_VERIFY_INT_H

#include "ir.h"
#include "support/ptrmap.h"

typedef struct Verifier {
	const BlkKernel *k;
	BlkArena *a;
	BlkDiag *d;
	const char *stage;
	const BlkOp *op;   /* the op being checked, for messages */
	/* Visible values: value -> state 1, 2 when they leave scope (their
	 * region ends); malloc'd (a NULL arena), freed after the kernel. */
	BlkPtrMap seen;
	const BlkValue **stack; /* values in scope, innermost last */
	size_t depth, stack_cap;
	int level;         /* 0 not known yet, 1 tile level, 2 GPU level */
	bool ok;
} Verifier;

/* "IR invalid after STAGE: OP: what is wrong" at the op (or the kernel). */
void blk_verify_fail(Verifier *V, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *blk_verify_ty(Verifier *V, const BlkType *t);

/* verify_gpu.c: v's type agrees with the kernel's level (every tile of
 * rank >= 1 has a layout at the GPU level, none has one before it). */
void blk_verify_level(Verifier *V, const BlkValue *v);
/* verify_gpu.c: the layout rules of op and the rules of the lowered ops. */
void blk_verify_gpu_op(Verifier *V, const BlkOp *op);
/* verify_gpu.c: the kernel's launch header (ir.h BlkLaunch). */
void blk_verify_launch(Verifier *V);

#endif
