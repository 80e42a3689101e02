/* limits.h - every size limit of blk, in one place.
 *
 * Each limit turns an input that would exhaust the stack, the memory or the
 * patience of a later stage (ptxas takes minutes on a kernel that spills
 * kilobytes) into a user error that names the construct and the number it
 * exceeded.  docs/language.md ("Limits") lists them for users; each has a
 * test in tests/frontend/bad/limit-*.blk or tests/runtime.
 */
#ifndef BLK_LIMITS_H
#define BLK_LIMITS_H

enum {
	/* Bytes of one source file (a .blk or IR text): 16 MiB. */
	BLK_MAX_SOURCE_BYTES = 16 << 20,
	/* Tokens of one source file: bounds the lexer's array before parsing. */
	BLK_MAX_TOKENS = 1 << 18,
	/* Nesting of parentheses, unary operators and blocks while parsing. */
	BLK_MAX_NESTING = 200,
	/* Height of an expression tree, any shape (`a + b + ... + z` counts
	 * one level per operator), including the blocks of loop bodies: the
	 * checker and the lowering recurse over it. */
	BLK_MAX_EXPR_DEPTH = 1000,
	/* Parameters of one kernel (scratch included), and its launch sizes. */
	BLK_MAX_PARAMS = 64,
	BLK_MAX_SIZES = 64,
	/* A constant dim, and the elements of a tile of constant shape, as the
	 * checker sees them (frontend/check_expr.c, blk_ck_dims_ok); on the GPU
	 * BLK_MAX_TILE_REGS below is the tighter bound, in the interpreter
	 * BLK_INTERP_MAX_ELEMS (its memory). */
	BLK_MAX_DIM = 1 << 24,
	BLK_MAX_TILE_ELEMS = 1 << 22,
	/* Iterations of one `unroll = true` loop, and IR ops it may create. */
	BLK_MAX_UNROLL = 1024,
	/* Elements per thread of the largest tile on the GPU (its registers):
	 * a thread has 255 registers; past this ptxas spills kilobytes and
	 * takes seconds to minutes (lower/driver.c, check_registers). */
	BLK_MAX_TILE_REGS = 512,
	/* Helper calls inlined into one kernel (a copy of the body each):
	 * helpers calling helpers twice over would grow it exponentially. */
	BLK_MAX_INLINE = 1024,
	/* Bytes of shared memory one program (CTA) can have on sm_90: the
	 * scratch a kernel declares, its params and the scoped scratch live at
	 * once, fits in it (the checker, so the interpreter refuses what no GPU
	 * runs); a compiled kernel's own buffers come on top (smem-plan). */
	BLK_MAX_SMEM_BYTES = 232448,
};

#endif
