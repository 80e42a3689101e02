/* emit_transit.c - ops that move elements between threads, through the
 * shared-memory transit region: layout conversions, broadcasts,
 * transposes and expand_dims.
 *
 * Each writes its operand, row-major over the operand's padded shape,
 * between two barriers (the first waits for the previous user of the
 * region), then every thread reads what its result registers need.
 * Two cases move nothing: expand_dims (tile.c gives the result the
 * operand's layout with an extent-1 dim) and a broadcast whose operand
 * already sits in the threads that need it (blk_layout_bcast_local: the
 * reduce -> expand_dims -> broadcast chain of a row-wise softmax): their
 * result registers are the operand's.
 */
#include "emit.h"

static LLVMValueRef transit_ptr(Emit *E, const BlkLayout *src, LLVMValueRef *c, LLVMTypeRef et)
{
	LLVMValueRef idx = blk_emit_i32(E, 0);
	int64_t st = 1;
	for (int d = src->rank - 1; d >= 0; d--) {
		idx = LLVMBuildAdd(E->b, idx, LLVMBuildMul(E->b, c[d], blk_emit_i32(E, st), ""), "");
		st *= src->pad[d];
	}
	LLVMValueRef p = blk_emit_transit_base(E);
	return LLVMBuildGEP2(E->b, et, p, &idx, 1, "");
}

static LLVMTypeRef slot_type(Emit *E, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	return t == E->i1 ? E->i8 : t;
}

static void transit_write(Emit *E, const ETile *src)
{
	const BlkLayout *l = src->l;
	int n = blk_layout_nregs(l), rd[BLK_MAX_RANK];
	blk_emit_barrier(E);
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, blk_emit_owner(E, l));
	for (int r = 0; r < n; r++) {
		LLVMValueRef c[BLK_MAX_RANK], x = src->r[r];
		blk_layout_reg_split(l, r, rd);
		for (int d = 0; d < l->rank; d++)
			c[d] = blk_emit_coord(E, l, d, rd[d]);
		LLVMTypeRef et = slot_type(E, x);
		if (et != LLVMTypeOf(x))
			x = LLVMBuildZExt(E->b, x, et, "");
		LLVMBuildStore(E->b, x, transit_ptr(E, l, c, et));
	}
	blk_emit_end_if(E, cont);
	blk_emit_barrier(E);
}

static LLVMValueRef transit_read(Emit *E, const ETile *src, LLVMValueRef *c)
{
	LLVMTypeRef rt = LLVMTypeOf(src->r[0]), et = slot_type(E, src->r[0]);
	LLVMValueRef x = LLVMBuildLoad2(E->b, et, transit_ptr(E, src->l, c, et), "");
	return et != rt ? LLVMBuildTrunc(E->b, x, rt, "") : x;
}

/* ---- the ops ---------------------------------------------------------------------- */

/* Source coordinates of result coordinates rc (all but reductions). */
static void source_coords(Emit *E, const BlkOp *op, const BlkLayout *src, LLVMValueRef *rc, int rrank,
                          LLVMValueRef zero, LLVMValueRef *c)
{
	int a = (int)blk_op_int(op, "axis", 0);
	switch (op->kind) {
	case BLK_OP_TRANSPOSE: {
		int perm[BLK_MAX_RANK], flip = blk_transpose_flip(op);
		blk_transpose_perm(op, rrank, perm);
		for (int d = 0; d < rrank; d++)
			c[perm[d]] = rc[d];
		for (int d = 0; d < rrank && flip; d++) { /* padding lanes keep theirs: inside the region */
			if (!(flip >> d & 1))
				continue;
			int n = src->shape[perm[d]];
			LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntSLT, rc[d], blk_emit_i32(E, n), "");
			c[perm[d]] = LLVMBuildSelect(E->b, in, LLVMBuildSub(E->b, blk_emit_i32(E, n - 1), rc[d], ""), rc[d], "");
		}
		return;
	}
	case BLK_OP_EXPAND_DIMS:
		for (int d = 0, o = 0; d < rrank; d++)
			if (d != a)
				c[o++] = rc[d];
		return;
	case BLK_OP_BROADCAST:
		for (int d = 0; d < src->rank; d++)
			c[d] = src->shape[d] == 1 ? zero : rc[d + rrank - src->rank];
		return;
	default: /* convert_layout */
		for (int d = 0; d < rrank; d++)
			c[d] = rc[d];
		return;
	}
}

/* Result registers taken from the operand's (see the top). */
static bool emit_local(const BlkOp *op, const ETile *src, ETile *dst)
{
	const BlkLayout *l = dst->l;
	bool expand = false;
	if (op->kind == BLK_OP_EXPAND_DIMS) { /* (a rank-4 broadcast has no expansion) */
		BlkLayout x = blk_layout_expand(src->l, (int)blk_op_int(op, "axis", 0));
		expand = blk_layout_equal(&x, l);
	}
	if (!expand && !(op->kind == BLK_OP_BROADCAST && blk_layout_bcast_local(src->l, l)))
		return false;
	int n = blk_layout_nregs(l), rd[BLK_MAX_RANK];
	for (int r = 0; r < n; r++) {
		if (expand) {
			dst->r[r] = src->r[r];
			continue;
		}
		blk_layout_reg_split(l, r, rd);
		int s = 0, lead = l->rank - src->l->rank;
		for (int d = 0; d < src->l->rank; d++)
			s = s * blk_layout_regs_along(src->l, d) + (src->l->shape[d] == 1 ? 0 : rd[d + lead]);
		dst->r[r] = src->r[s];
	}
	return true;
}

/* join: the result's register e * pad(n) + p is operand p's register e
 * (tile.c gives the operands one plain layout, blk_layout_join); a
 * reshape tile.c kept in registers (blk_layout_merge_last) renumbers
 * nothing.  No data moves. */
void blk_emit_in_registers(Emit *E, const BlkOp *op)
{
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	int n = blk_layout_nregs(l);
	if (op->kind == BLK_OP_RESHAPE) {
		const ETile *src = blk_emit_tile(E, op->operands[0]);
		for (int r = 0; r < n; r++)
			ev->t.r[r] = src->r[r];
	} else {
		int parts = op->noperands, pad = l->pad[l->rank - 1];
		for (int r = 0; r < n; r++) {
			const ETile *src = blk_emit_tile(E, op->operands[r % pad < parts ? r % pad : 0]);
			ev->t.r[r] = src->r[r / pad]; /* (a padding part repeats part 0: never stored) */
		}
	}
	blk_emit_bind(E, op->results[0], ev);
}

void blk_emit_transit(Emit *E, const BlkOp *op)
{
	const ETile *src = blk_emit_tile(E, op->operands[0]);
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	int n = blk_layout_nregs(l), rd[BLK_MAX_RANK];
	if (src->l->rank == 0) { /* a scalar: every thread has it */
		for (int r = 0; r < n; r++)
			ev->t.r[r] = src->r[0];
		blk_emit_bind(E, op->results[0], ev);
		return;
	}
	if (emit_local(op, src, &ev->t)) {
		blk_emit_bind(E, op->results[0], ev);
		return;
	}
	transit_write(E, src);
	for (int r = 0; r < n; r++) {
		LLVMValueRef rc[BLK_MAX_RANK], c[BLK_MAX_RANK];
		blk_layout_reg_split(l, r, rd);
		for (int d = 0; d < l->rank; d++)
			rc[d] = blk_emit_coord(E, l, d, rd[d]);
		source_coords(E, op, src->l, rc, l->rank, blk_emit_i32(E, 0), c);
		ev->t.r[r] = transit_read(E, src, c);
	}
	blk_emit_bind(E, op->results[0], ev);
}
