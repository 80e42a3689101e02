/* emit_reduce.c - reductions along one axis, in parallel.
 *
 * The result takes the operand's layout sliced at the axis (tile.c), so
 * each result element lives in the threads that held its operand row and
 * no element moves except through the reduction itself:
 *   1. each thread combines its own registers along the axis, in register
 *      order (ascending coordinate); padding lanes contribute the identity
 *      (0 for sum, -inf/+inf or INT_MIN/MAX for max/min);
 *   2. the lanes of the axis combine by butterfly shuffles
 *      (shfl.sync.bfly, xor 1, 2, 4, ... of the axis's lane bits, every
 *      lane of the warp taking part), which leaves every lane with the
 *      same bits (a+b == b+a);
 *   3. only when the axis spans warps: each warp's lane 0 of the axis
 *      writes its partial to the transit region, a barrier, and every
 *      thread combines the warps' partials in warp order.
 * So f32 sums differ from the interpreter's sequential sum in order only;
 * max and min are exact.  Every thread ends with the reduced value, which
 * is what makes the result a valid scalar when the operand is rank 1.
 */
#include "emit.h"

LLVMValueRef blk_emit_combine(Emit *E, BlkOpKind k, bool fl, LLVMValueRef a, LLVMValueRef x)
{
	LLVMValueRef args[2] = { a, x };
	LLVMTypeRef t = fl ? E->f32 : E->i32;
	if (k == BLK_OP_ADD)
		return fl ? LLVMBuildFAdd(E->b, a, x, "") : LLVMBuildAdd(E->b, a, x, "");
	if (k == BLK_OP_MUL)
		return fl ? LLVMBuildFMul(E->b, a, x, "") : LLVMBuildMul(E->b, a, x, "");
	if (fl)
		return blk_emit_intrinsic(E, k == BLK_OP_MAX ? "llvm.maximum" : "llvm.minimum", &t, 1, args, 2);
	return blk_emit_intrinsic(E, k == BLK_OP_MAX ? "llvm.smax" : "llvm.smin", &t, 1, args, 2);
}

LLVMValueRef blk_emit_combine_identity(Emit *E, BlkOpKind k, bool fl)
{
	if (k == BLK_OP_ADD || k == BLK_OP_MUL)
		return fl ? LLVMConstReal(E->f32, k == BLK_OP_MUL) : blk_emit_i32(E, k == BLK_OP_MUL);
	bool mx = k == BLK_OP_MAX;
	if (fl)
		return LLVMConstReal(E->f32, mx ? -__builtin_inf() : __builtin_inf());
	return blk_emit_i32(E, mx ? INT32_MIN : INT32_MAX);
}

LLVMValueRef blk_emit_order_key(Emit *E, LLVMValueRef x, BlkDType dt, BlkOpKind combiner)
{
	if (dt != BLK_U32 || (combiner != BLK_OP_MAX && combiner != BLK_OP_MIN))
		return x;
	return LLVMBuildXor(E->b, x, blk_emit_i32(E, INT32_MIN), "");
}

/* The elementwise op a reduction combines with. */
static BlkOpKind combiner(BlkOpKind k)
{
	return k == BLK_OP_REDUCE_SUM ? BLK_OP_ADD : k == BLK_OP_REDUCE_MAX ? BLK_OP_MAX : BLK_OP_MIN;
}

static LLVMValueRef combine(Emit *E, BlkOpKind k, bool fl, LLVMValueRef a, LLVMValueRef x)
{
	return blk_emit_combine(E, combiner(k), fl, a, x);
}

static LLVMValueRef identity(Emit *E, BlkOpKind k, bool fl)
{
	return blk_emit_combine_identity(E, combiner(k), fl);
}

/* Register number of per-dim register indices rd (layout.h order). */
static int reg_index(const BlkLayout *l, const int *rd)
{
	int r = 0;
	for (int d = 0; d < l->rank; d++)
		r = r * blk_layout_regs_along(l, d) + rd[d];
	return r;
}

typedef struct Red {
	BlkOpKind kind;
	bool fl;
	BlkDType dt;       /* the operand's */
	const ETile *src;
	int axis;
} Red;

/* The operand register r as an f32/i32 accumulator value. */
static LLVMValueRef widen(Emit *E, const Red *R, LLVMValueRef x)
{
	if (R->fl)
		return blk_emit_to_f32(E, x, R->dt);
	BlkOpKind k = R->kind == BLK_OP_REDUCE_ARGMAX ? BLK_OP_MAX : R->kind == BLK_OP_REDUCE_ARGMIN ? BLK_OP_MIN
	                                                             : combiner(R->kind);
	return blk_emit_order_key(E, blk_emit_to_i32(E, x, R->dt), R->dt, k);
}

/* Step 1 for the result register whose operand indices are rd. */
static LLVMValueRef thread_partial(Emit *E, const Red *R, int *rd)
{
	const BlkLayout *l = R->src->l;
	int a = R->axis, n = blk_layout_regs_along(l, a);
	LLVMValueRef acc = NULL, id = identity(E, R->kind, R->fl);
	for (rd[a] = 0; rd[a] < n; rd[a]++) {
		LLVMValueRef x = widen(E, R, R->src->r[reg_index(l, rd)]);
		if (l->shape[a] != l->pad[a]) {
			LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntSLT, blk_emit_coord(E, l, a, rd[a]),
			                                blk_emit_i32(E, l->shape[a]), "");
			x = LLVMBuildSelect(E->b, in, x, id, "");
		}
		acc = acc ? combine(E, R->kind, R->fl, acc, x) : x;
	}
	return acc;
}

/* Step 2: xor-butterfly over the axis's lane bits. */
static LLVMValueRef warp_reduce(Emit *E, const Red *R, LLVMValueRef v)
{
	const BlkLayout *l = R->src->l;
	int lo = l->tsh[R->axis], hi = lo + blk_layout_log2(l->thr[R->axis]);
	const char *f = R->fl ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32";
	for (int b = lo; b < hi && b < 5; b++) {
		LLVMValueRef args[4] = { blk_emit_i32(E, -1), v, blk_emit_i32(E, 1 << b), blk_emit_i32(E, 31) };
		v = combine(E, R->kind, R->fl, v, blk_emit_intrinsic(E, f, NULL, 0, args, 4));
	}
	return v;
}

LLVMValueRef blk_emit_padded_index(Emit *E, const BlkLayout *s, int r)
{
	int rd[BLK_MAX_RANK];
	blk_layout_reg_split(s, r, rd);
	LLVMValueRef idx = blk_emit_i32(E, 0);
	for (int d = 0; d < s->rank; d++) {
		idx = LLVMBuildMul(E->b, idx, blk_emit_i32(E, s->pad[d]), "");
		idx = LLVMBuildAdd(E->b, idx, blk_emit_coord(E, s, d, rd[d]), "");
	}
	return idx;
}

static LLVMValueRef slot(Emit *E, LLVMValueRef idx, LLVMTypeRef t)
{
	LLVMValueRef p = blk_emit_transit_base(E);
	return LLVMBuildGEP2(E->b, t, p, &idx, 1, "");
}

/* Step 3: slot (element, warp) in the transit region; nw warps. */
static void cross_warp(Emit *E, const Red *R, ETile *dst, int lo, int nw)
{
	const BlkLayout *l = R->src->l;
	int n = blk_layout_nregs(dst->l), a = R->axis;
	LLVMTypeRef t = R->fl ? E->f32 : E->i32;
	LLVMValueRef w = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, E->tid, blk_emit_i32(E, lo), ""),
	                              blk_emit_i32(E, nw - 1), "");
	int quiet = ((1 << lo) - 1) & ((l->thr[a] - 1) << l->tsh[a]);
	quiet |= (blk_pow2ceil(l->nthreads) - 1) & ~blk_layout_used_bits(l);
	LLVMValueRef writer = LLVMBuildICmp(E->b, LLVMIntEQ,
		LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, quiet), ""), blk_emit_i32(E, 0), "");
	blk_emit_barrier(E);
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, writer);
	for (int r = 0; r < n; r++) {
		LLVMValueRef i = LLVMBuildMul(E->b, blk_emit_padded_index(E, dst->l, r), blk_emit_i32(E, nw), "");
		LLVMBuildStore(E->b, dst->r[r], slot(E, LLVMBuildAdd(E->b, i, w, ""), t));
	}
	blk_emit_end_if(E, cont);
	blk_emit_barrier(E);
	for (int r = 0; r < n; r++) {
		LLVMValueRef i = LLVMBuildMul(E->b, blk_emit_padded_index(E, dst->l, r), blk_emit_i32(E, nw), "");
		LLVMValueRef acc = NULL;
		for (int k = 0; k < nw; k++) {
			LLVMValueRef x = LLVMBuildLoad2(E->b, t, slot(E, LLVMBuildAdd(E->b, i, blk_emit_i32(E, k), ""), t), "");
			acc = acc ? combine(E, R->kind, R->fl, acc, x) : x;
		}
		dst->r[r] = acc;
	}
}

/* The accumulator back in the result's dtype. */
static LLVMValueRef narrow(Emit *E, const BlkOp *op, bool fl, LLVMValueRef v)
{
	BlkDType rt = op->results[0]->type.dtype;
	if (fl)
		return blk_emit_from_f32(E, v, rt);
	return blk_emit_from_i32(E, blk_emit_order_key(E, v, rt, combiner(op->kind)), rt);
}

/* ---- argmax, argmin: (value, index) pairs ------------------------------------------ */

/* A pair (value, index): the reductions above with each value's index
 * along the axis beside it.  One pair beats another when its value is
 * larger (argmax) or smaller, a NaN beating every number, and on a tie
 * (NaNs too) when its index is smaller: a total order, so every path of
 * the butterfly and of the warps ends with the same first best index. */
typedef struct Pair {
	LLVMValueRef v, i;
} Pair;

static LLVMValueRef beats(Emit *E, const Red *R, Pair a, Pair b)
{
	bool mx = R->kind == BLK_OP_REDUCE_ARGMAX;
	LLVMValueRef first = LLVMBuildICmp(E->b, LLVMIntSLT, a.i, b.i, "");
	if (!R->fl) {
		LLVMValueRef strict = LLVMBuildICmp(E->b, mx ? LLVMIntSGT : LLVMIntSLT, a.v, b.v, "");
		LLVMValueRef tie = LLVMBuildICmp(E->b, LLVMIntEQ, a.v, b.v, "");
		return LLVMBuildOr(E->b, strict, LLVMBuildAnd(E->b, tie, first, ""), "");
	}
	LLVMValueRef an = LLVMBuildFCmp(E->b, LLVMRealUNO, a.v, a.v, "");
	LLVMValueRef bn = LLVMBuildFCmp(E->b, LLVMRealUNO, b.v, b.v, "");
	LLVMValueRef strict = LLVMBuildFCmp(E->b, mx ? LLVMRealOGT : LLVMRealOLT, a.v, b.v, "");
	LLVMValueRef win = LLVMBuildAnd(E->b, LLVMBuildNot(E->b, bn, ""), LLVMBuildOr(E->b, an, strict, ""), "");
	LLVMValueRef tie = LLVMBuildOr(E->b, LLVMBuildFCmp(E->b, LLVMRealOEQ, a.v, b.v, ""),
	                               LLVMBuildAnd(E->b, an, bn, ""), "");
	return LLVMBuildOr(E->b, win, LLVMBuildAnd(E->b, tie, first, ""), "");
}

static Pair best(Emit *E, const Red *R, Pair a, Pair b)
{
	LLVMValueRef w = beats(E, R, a, b);
	return (Pair){ LLVMBuildSelect(E->b, w, a.v, b.v, ""), LLVMBuildSelect(E->b, w, a.i, b.i, "") };
}

/* Step 1: the thread's best pair along the axis (padding lanes skipped). */
static Pair arg_thread(Emit *E, const Red *R, int *rd)
{
	const BlkLayout *l = R->src->l;
	int a = R->axis, n = blk_layout_regs_along(l, a);
	bool mx = R->kind == BLK_OP_REDUCE_ARGMAX;
	Pair acc = { R->fl ? LLVMConstReal(E->f32, mx ? -__builtin_inf() : __builtin_inf())
	                   : blk_emit_i32(E, mx ? INT32_MIN : INT32_MAX), blk_emit_i32(E, INT32_MAX) };
	for (rd[a] = 0; rd[a] < n; rd[a]++) {
		LLVMValueRef c = blk_emit_coord(E, l, a, rd[a]);
		Pair x = { widen(E, R, R->src->r[reg_index(l, rd)]), c };
		Pair m = best(E, R, x, acc);
		if (l->shape[a] != l->pad[a]) {
			LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntSLT, c, blk_emit_i32(E, l->shape[a]), "");
			m.v = LLVMBuildSelect(E->b, in, m.v, acc.v, "");
			m.i = LLVMBuildSelect(E->b, in, m.i, acc.i, "");
		}
		acc = m;
	}
	return acc;
}

/* Step 2: the butterfly, both halves of the pair shuffled. */
static Pair arg_warp(Emit *E, const Red *R, Pair p)
{
	const BlkLayout *l = R->src->l;
	int lo = l->tsh[R->axis], hi = lo + blk_layout_log2(l->thr[R->axis]);
	const char *f = R->fl ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32";
	for (int b = lo; b < hi && b < 5; b++) {
		LLVMValueRef av[4] = { blk_emit_i32(E, -1), p.v, blk_emit_i32(E, 1 << b), blk_emit_i32(E, 31) };
		LLVMValueRef ai[4] = { blk_emit_i32(E, -1), p.i, blk_emit_i32(E, 1 << b), blk_emit_i32(E, 31) };
		Pair o = { blk_emit_intrinsic(E, f, NULL, 0, av, 4),
		           blk_emit_intrinsic(E, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, ai, 4) };
		p = best(E, R, p, o);
	}
	return p;
}

/* Step 3: values in slots [0, n*nw), indices after them. */
static void arg_cross_warp(Emit *E, const Red *R, const BlkLayout *s, Pair *p, int lo, int nw)
{
	const BlkLayout *l = R->src->l;
	int n = blk_layout_nregs(s), a = R->axis;
	int64_t half = (int64_t)nw;
	for (int d = 0; d < s->rank; d++)
		half *= s->pad[d];
	LLVMTypeRef t = R->fl ? E->f32 : E->i32;
	LLVMValueRef w = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, E->tid, blk_emit_i32(E, lo), ""),
	                              blk_emit_i32(E, nw - 1), "");
	int quiet = ((1 << lo) - 1) & ((l->thr[a] - 1) << l->tsh[a]);
	quiet |= (blk_pow2ceil(l->nthreads) - 1) & ~blk_layout_used_bits(l);
	LLVMValueRef writer = LLVMBuildICmp(E->b, LLVMIntEQ,
		LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, quiet), ""), blk_emit_i32(E, 0), "");
	blk_emit_barrier(E);
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, writer);
	for (int r = 0; r < n; r++) {
		LLVMValueRef at = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, blk_emit_padded_index(E, s, r), blk_emit_i32(E, nw), ""), w, "");
		LLVMBuildStore(E->b, p[r].v, slot(E, at, t));
		LLVMBuildStore(E->b, p[r].i, slot(E, LLVMBuildAdd(E->b, at, blk_emit_i32(E, half), ""), E->i32));
	}
	blk_emit_end_if(E, cont);
	blk_emit_barrier(E);
	for (int r = 0; r < n; r++) {
		LLVMValueRef base = LLVMBuildMul(E->b, blk_emit_padded_index(E, s, r), blk_emit_i32(E, nw), "");
		Pair acc = { NULL, NULL };
		for (int k = 0; k < nw; k++) {
			LLVMValueRef at = LLVMBuildAdd(E->b, base, blk_emit_i32(E, k), "");
			Pair x = { LLVMBuildLoad2(E->b, t, slot(E, at, t), ""),
			           LLVMBuildLoad2(E->b, E->i32, slot(E, LLVMBuildAdd(E->b, at, blk_emit_i32(E, half), ""), E->i32), "") };
			acc = acc.v ? best(E, R, x, acc) : x;
		}
		p[r] = acc;
	}
}

static void emit_argreduce(Emit *E, const BlkOp *op, Red *R)
{
	const BlkLayout *l = R->src->l, *s = blk_emit_layout(E, op->results[0]);
	int n = blk_layout_nregs(s), rs[BLK_MAX_RANK], rd[BLK_MAX_RANK];
	Pair *p = BLK_NEW_N(E->c->a, Pair, (size_t)n);
	for (int r = 0; r < n; r++) {
		blk_layout_reg_split(s, r, rs);
		for (int d = 0, o = 0; d < l->rank; d++)
			rd[d] = d == R->axis ? 0 : rs[o++];
		p[r] = arg_warp(E, R, arg_thread(E, R, rd));
	}
	int nw = blk_layout_axis_warps(l, R->axis);
	if (nw > 1)
		arg_cross_warp(E, R, s, p, l->tsh[R->axis] > 5 ? l->tsh[R->axis] : 5, nw);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, s);
	for (int r = 0; r < n; r++)
		ev->t.r[r] = p[r].i;
	blk_emit_bind(E, op->results[0], ev);
}

void blk_emit_reduce(Emit *E, const BlkOp *op)
{
	Red R = { op->kind, false, op->operands[0]->type.dtype, blk_emit_tile(E, op->operands[0]),
	          (int)blk_op_int(op, "axis", 0) };
	R.fl = blk_dtype_is_float(R.dt);
	if (op->kind == BLK_OP_REDUCE_ARGMAX || op->kind == BLK_OP_REDUCE_ARGMIN) {
		emit_argreduce(E, op, &R);
		return;
	}
	/* max(x * c) = max(x) * c for c positive, exactly (rounding is
	 * monotone): the scaled tile then need not exist where nothing else
	 * reads it (exp_of_difference, emit_elementwise.c) */
	BlkValue *x, *c = NULL;
	if ((op->kind == BLK_OP_REDUCE_MAX || op->kind == BLK_OP_REDUCE_MIN) &&
	    blk_lower_scaled(op->operands[0], &x, &c) && blk_lower_positive(c) &&
	    blk_layout_nregs(blk_emit_tile(E, x)->l) == blk_layout_nregs(R.src->l))
		R.src = blk_emit_tile(E, x);
	else
		c = NULL;
	const BlkLayout *l = R.src->l, *s = blk_emit_layout(E, op->results[0]);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, s);
	int n = blk_layout_nregs(s), rs[BLK_MAX_RANK], rd[BLK_MAX_RANK];
	for (int r = 0; r < n; r++) {
		blk_layout_reg_split(s, r, rs);
		for (int d = 0, o = 0; d < l->rank; d++)
			rd[d] = d == R.axis ? 0 : rs[o++];
		ev->t.r[r] = warp_reduce(E, &R, thread_partial(E, &R, rd));
	}
	int nw = blk_layout_axis_warps(l, R.axis);
	if (nw > 1)
		cross_warp(E, &R, &ev->t, l->tsh[R.axis] > 5 ? l->tsh[R.axis] : 5, nw);
	for (int r = 0; r < n; r++)
		ev->t.r[r] = narrow(E, op, R.fl, c ? LLVMBuildFMul(E->b, ev->t.r[r], blk_emit_tile(E, c)->r[0], "")
		                                     : ev->t.r[r]);
	blk_emit_bind(E, op->results[0], ev);
}
