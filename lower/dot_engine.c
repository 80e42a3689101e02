/* dot_engine.c - which hardware runs each dot, decided once.
 *
 * Requires: shapes constant (specialize.c).  Produces: every `dot` gets
 * attr engine, read by every later pass instead of re-deciding:
 *   "mma"  tensor cores (mma.sync m16n8k16, emit_mma.c): both operands f16
 *          or both bf16, and the [M, N] tile and K fit the mma tiling over
 *          the kernel's warps (ir/layout.h, blk_layout_mma_fits);
 *   "fma"  the SIMT path (emit_dot.c): exact f32 FMAs in k order, bit-equal
 *          to the interpreter -- f32 operands, or shapes mma cannot tile.
 * An engine already set (IR text) is kept when the dot can run on it and
 * refused with the reason when it cannot.
 */
#include "lower_int.h"

#include <string.h>

/* NULL when dot can run on tensor cores, else why not. */
static const char *mma_refusal(const LowerCtx *c, const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	if (a->dtype != b->dtype || (a->dtype != BLK_F16 && a->dtype != BLK_BF16))
		return "its operands are not both f16 or both bf16";
	if (!blk_layout_mma_fits((int)blk_lower_dim(a->dims[0]), (int)blk_lower_dim(b->dims[1]),
	                         (int)blk_lower_dim(a->dims[1]), c->nthreads))
		return "its shape does not fit the mma.sync tiling over the kernel's warps";
	return NULL;
}

typedef struct Pick {
	LowerCtx *c;
	bool ok;
} Pick;

static void pick(void *ctx, BlkOp *op)
{
	Pick *p = ctx;
	if (op->kind != BLK_OP_DOT)
		return;
	const BlkAttr *e = blk_op_attr(op, "engine");
	const char *why = mma_refusal(p->c, op);
	if (!e) {
		blk_op_set_string(p->c->a, op, "engine", why ? "fma" : "mma");
		return;
	}
	if (e->kind == BLK_ATTR_STRING && strcmp(e->s, "fma") == 0)
		return;
	if (e->kind != BLK_ATTR_STRING || strcmp(e->s, "mma") != 0) {
		blk_error(p->c->d, op->loc, "dot: engine must be \"mma\" or \"fma\"");
		p->ok = false;
	} else if (why) {
		blk_error(p->c->d, op->loc, "dot: engine \"mma\" cannot run this dot: %s", why);
		p->ok = false;
	}
}

bool blk_lower_dot_engine(LowerCtx *c)
{
	Pick p = { c, true };
	blk_lower_walk(c->k->body, pick, &p);
	return p.ok;
}

bool blk_lower_dot_mma(const BlkOp *dot)
{
	const BlkAttr *e = blk_op_attr(dot, "engine");
	if (!e || e->kind != BLK_ATTR_STRING)
		blk_die("lower: a dot has no engine (dot-engine has not run)");
	return strcmp(e->s, "mma") == 0;
}
