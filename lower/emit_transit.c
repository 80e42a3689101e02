/* emit_transit.c - ops that move elements between threads, through the
 * shared-memory transit region: layout conversions, broadcasts,
 * transposes, expand_dims and reductions.
 *
 * Each writes its operand, row-major over the operand's padded shape,
 * between two barriers (the first waits for the previous user of the
 * region), then every thread reads what its result registers need.
 * Reductions read the reduced dim in index order and accumulate serially
 * in f32 (i32 for integers), so sums are bit-identical to the
 * interpreter's; a future version would use warp shuffles for long rows.
 */
#include "emit.h"

static LLVMValueRef transit_ptr(Emit *E, const BlkLayout *src, LLVMValueRef *c, LLVMTypeRef et)
{
	LLVMValueRef idx = emit_i32(E, 0);
	int64_t st = 1;
	for (int d = src->rank - 1; d >= 0; d--) {
		idx = LLVMBuildAdd(E->b, idx, LLVMBuildMul(E->b, c[d], emit_i32(E, st), ""), "");
		st *= src->pad[d];
	}
	LLVMValueRef p = emit_smem_ptr(E, emit_i32(E, (int64_t)E->c->transit_off));
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
	emit_barrier(E);
	LLVMBasicBlockRef cont = emit_begin_if(E, emit_owner(E, l));
	for (int r = 0; r < n; r++) {
		LLVMValueRef c[BLK_MAX_RANK], x = src->r[r];
		blk_layout_reg_split(l, r, rd);
		for (int d = 0; d < l->rank; d++)
			c[d] = emit_coord(E, l, d, rd[d]);
		LLVMTypeRef et = slot_type(E, x);
		if (et != LLVMTypeOf(x))
			x = LLVMBuildZExt(E->b, x, et, "");
		LLVMBuildStore(E->b, x, transit_ptr(E, l, c, et));
	}
	emit_end_if(E, cont);
	emit_barrier(E);
}

static LLVMValueRef transit_read(Emit *E, const ETile *src, LLVMValueRef *c)
{
	LLVMTypeRef rt = LLVMTypeOf(src->r[0]), et = slot_type(E, src->r[0]);
	LLVMValueRef x = LLVMBuildLoad2(E->b, et, transit_ptr(E, src->l, c, et), "");
	return et != rt ? LLVMBuildTrunc(E->b, x, rt, "") : x;
}

/* ---- reductions ---------------------------------------------------------------- */

static LLVMValueRef combine(Emit *E, BlkOpKind k, bool fl, LLVMValueRef a, LLVMValueRef x)
{
	LLVMValueRef args[2] = { a, x };
	LLVMTypeRef t = fl ? E->f32 : E->i32;
	if (k == BLK_OP_REDUCE_SUM)
		return fl ? LLVMBuildFAdd(E->b, a, x, "") : LLVMBuildAdd(E->b, a, x, "");
	if (fl)
		return emit_intrinsic(E, k == BLK_OP_REDUCE_MAX ? "llvm.maximum" : "llvm.minimum",
		                      &t, 1, args, 2);
	return emit_intrinsic(E, k == BLK_OP_REDUCE_MAX ? "llvm.smax" : "llvm.smin", &t, 1, args, 2);
}

static LLVMValueRef reduce_init(Emit *E, BlkOpKind k, bool fl)
{
	if (k == BLK_OP_REDUCE_SUM)
		return fl ? LLVMConstReal(E->f32, 0) : emit_i32(E, 0);
	bool mx = k == BLK_OP_REDUCE_MAX;
	if (fl)
		return LLVMConstReal(E->f32, mx ? -__builtin_inf() : __builtin_inf());
	return emit_i32(E, mx ? INT32_MIN : INT32_MAX);
}

/* acc over j in [0, n) of src at c with c[axis] = j, as an LLVM loop. */
static LLVMValueRef reduce_one(Emit *E, const BlkOp *op, const ETile *src, LLVMValueRef *c,
                               int axis, int64_t n)
{
	BlkDType dt = op->operands[0]->type.dtype;
	bool fl = blk_dtype_is_float(dt);
	LLVMValueRef init = reduce_init(E, op->kind, fl);
	if (n == 0)
		return init;
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(E->cx, E->fn, "red");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "red.done");
	LLVMBuildBr(E->b, loop);
	LLVMPositionBuilderAtEnd(E->b, loop);
	LLVMValueRef j = LLVMBuildPhi(E->b, E->i32, "j");
	LLVMValueRef acc = LLVMBuildPhi(E->b, LLVMTypeOf(init), "acc");
	c[axis] = j;
	LLVMValueRef x = transit_read(E, src, c);
	if (fl)
		x = emit_to_f32(E, x, dt);
	else if (LLVMTypeOf(x) == E->i1)
		x = LLVMBuildZExt(E->b, x, E->i32, "");
	LLVMValueRef nacc = combine(E, op->kind, fl, acc, x);
	LLVMValueRef nj = LLVMBuildAdd(E->b, j, emit_i32(E, 1), "");
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, nj, emit_i32(E, n), ""), loop, done);
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
	LLVMValueRef jin[2] = { emit_i32(E, 0), nj }, ain[2] = { init, nacc };
	LLVMBasicBlockRef from[2] = { pre, latch };
	LLVMAddIncoming(j, jin, from, 2);
	LLVMAddIncoming(acc, ain, from, 2);
	LLVMPositionBuilderAtEnd(E->b, done);
	BlkDType rt = op->results[0]->type.dtype;
	if (fl)
		return emit_from_f32(E, nacc, rt);
	return rt == BLK_BOOL ? LLVMBuildICmp(E->b, LLVMIntNE, nacc, emit_i32(E, 0), "") : nacc;
}

/* ---- the ops ---------------------------------------------------------------------- */

/* Source coordinates of result coordinates rc (all but reductions). */
static void source_coords(const BlkOp *op, const BlkLayout *src, LLVMValueRef *rc, int rrank,
                          LLVMValueRef zero, LLVMValueRef *c)
{
	int a = (int)blk_op_int(op, "axis", 0);
	switch (op->kind) {
	case BLK_OP_TRANSPOSE:
		c[0] = rc[1], c[1] = rc[0];
		return;
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

static bool is_reduce(BlkOpKind k)
{
	return k == BLK_OP_REDUCE_SUM || k == BLK_OP_REDUCE_MAX || k == BLK_OP_REDUCE_MIN;
}

void emit_transit(Emit *E, const BlkOp *op)
{
	const ETile *src = emit_tile(E, op->operands[0]);
	const BlkLayout *l = emit_layout(E, op->results[0]);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = emit_new_tile(E, l);
	int n = blk_layout_nregs(l), rd[BLK_MAX_RANK];
	if (src->l->rank == 0) { /* a scalar: every thread has it */
		for (int r = 0; r < n; r++)
			ev->t.r[r] = src->r[0];
		emit_bind(E, op->results[0], ev);
		return;
	}
	transit_write(E, src);
	int axis = (int)blk_op_int(op, "axis", 0);
	for (int r = 0; r < n; r++) {
		LLVMValueRef rc[BLK_MAX_RANK], c[BLK_MAX_RANK];
		blk_layout_reg_split(l, r, rd);
		for (int d = 0; d < l->rank; d++)
			rc[d] = emit_coord(E, l, d, rd[d]);
		if (is_reduce(op->kind)) {
			for (int d = 0, o = 0; d < src->l->rank; d++)
				c[d] = d == axis ? NULL : rc[o++];
			ev->t.r[r] = reduce_one(E, op, src, c, axis, src->l->shape[axis]);
			continue;
		}
		source_coords(op, src->l, rc, l->rank, emit_i32(E, 0), c);
		ev->t.r[r] = transit_read(E, src, c);
	}
	emit_bind(E, op->results[0], ev);
}
