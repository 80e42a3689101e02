/* emit_scan.c - inclusive scans (cumsum, cumprod, cummax, cummin) along
 * one axis, in parallel.
 *
 * The result keeps the operand's layout, one whose elements along the axis
 * are runs (tile.c converts others first, layout.h blk_layout_runs): a
 * thread's registers along the axis are one run of spt consecutive
 * elements per rep, the run of thread index t at rep*spt*thr + t*spt.  The
 * scan order is rep, then t, then the run (all descending for reverse);
 * t's low bits are lanes of a warp, its high bits (if any) warps.  For
 * each rep:
 *   1. each thread scans its run in its registers;
 *   2. the runs' totals scan across the axis's lanes (Hillis-Steele:
 *      shfl.up, or .down for reverse, by 1, 2, 4, .. lanes of the axis);
 *      one more shuffle makes that exclusive, and a shfl.idx from the
 *      axis's last lane in scan order gives every lane the warp's total;
 *   3. only when the axis spans warps: each warp's totals (every row and
 *      rep at once) go to the transit region, a barrier, and each thread
 *      folds the totals of the warps before its own and of all of them;
 *   4. an element is carry (+) warps before (+) lanes before (+) its run so
 *      far, the carry being the folded totals of the reps before.
 * Padding coordinates (>= the extent) hold the identity: a reverse scan
 * meets them first.  f16/bf16 scan in f32 and round each element; f32
 * sums and products combine in another order than the interpreter's
 * sequential one, max and min are exact.
 *
 * A `scan` with a combine region (associative_scan) has no identity and
 * need not be associative, so each line of the axis is combined by one
 * thread, element after element in scan order, as the interpreter does:
 * the results are the interpreter's exactly.  Where its operands' layout
 * holds each line in one thread (tile.c, blk_layout_along), in registers;
 * else (lines too long for registers) through the transit region:
 *   1. every thread writes its elements of each operand there (as
 *      32 bits, at their index in the padded shape), barrier;
 *   2. thread t scans lines t, t + nthreads, ... in place, in a loop over
 *      the line's elements, barrier;
 *   3. every thread reads its elements of the results back.
 */
#include <string.h>

#include "emit.h"

typedef struct Scan {
	BlkOpKind k;        /* the combiner: ADD, MUL, MAX, MIN */
	bool fl, rev;
	BlkDType dt;        /* the operand's */
	const ETile *src;
	const BlkLayout *l;
	const BlkLayout *rows; /* l without the axis: one "row" per register */
	int axis, spt, reps, lb, nw; /* 2^lb lanes and nw warps along the axis */
	LLVMValueRef lane;  /* the thread's lane along the axis, in scan order */
	LLVMValueRef warp;  /* its warp along the axis, in scan order */
} Scan;

/* a (+) x where NULL stands for the identity (nothing to combine). */
static LLVMValueRef comb(Emit *E, const Scan *S, LLVMValueRef a, LLVMValueRef x)
{
	if (!a)
		return x;
	return x ? blk_emit_combine(E, S->k, S->fl, a, x) : a;
}

static LLVMValueRef ident(Emit *E, const Scan *S)
{
	return blk_emit_combine_identity(E, S->k, S->fl);
}

/* Register number of the element of row r, rep i, run position j. */
static int reg_of(const Scan *S, int r, int i, int j)
{
	int rs[BLK_MAX_RANK], rd[BLK_MAX_RANK], reg = 0;
	blk_layout_reg_split(S->rows, r, rs);
	for (int d = 0, o = 0; d < S->l->rank; d++) {
		rd[d] = d == S->axis ? i * S->spt + j : rs[o++];
		reg = reg * blk_layout_regs_along(S->l, d) + rd[d];
	}
	return reg;
}

/* The operand's element as an f32/i32 value, the identity in padding. */
static LLVMValueRef element(Emit *E, const Scan *S, int r, int i, int j)
{
	LLVMValueRef x = S->src->r[reg_of(S, r, i, j)];
	x = S->fl ? blk_emit_to_f32(E, x, S->dt) : blk_emit_order_key(E, blk_emit_to_i32(E, x, S->dt), S->dt, S->k);
	if (S->l->shape[S->axis] == S->l->pad[S->axis])
		return x;
	LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntSLT, blk_emit_coord(E, S->l, S->axis, i * S->spt + j),
	                                blk_emit_i32(E, S->l->shape[S->axis]), "");
	return LLVMBuildSelect(E->b, in, x, ident(E, S), "");
}

/* shfl.sync mode ("up", "down", "idx") of v by b lanes (or from lane b). */
static LLVMValueRef shfl(Emit *E, const Scan *S, const char *mode, LLVMValueRef v, LLVMValueRef b)
{
	char name[48];
	snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.%s", mode, S->fl ? "f32" : "i32");
	int c = strcmp(mode, "up") == 0 ? 0 : 31; /* the lane range's clamp */
	LLVMValueRef args[4] = { blk_emit_i32(E, -1), v, b, blk_emit_i32(E, c) };
	return blk_emit_intrinsic(E, name, NULL, 0, args, 4);
}

/* Step 2: from a run total t, the exclusive prefix over the lanes before
 * (NULL for the first lane) in *ex and the warp's total in *total. */
static void lanes(Emit *E, const Scan *S, LLVMValueRef t, LLVMValueRef *ex, LLVMValueRef *total)
{
	int tsh = S->l->tsh[S->axis];
	const char *dir = S->rev ? "down" : "up";
	*ex = NULL;
	*total = t;
	if (!S->lb)
		return;
	for (int k = 0; k < S->lb; k++) {
		LLVMValueRef y = shfl(E, S, dir, t, blk_emit_i32(E, 1 << (tsh + k)));
		LLVMValueRef on = LLVMBuildICmp(E->b, LLVMIntUGE, S->lane, blk_emit_i32(E, 1 << k), "");
		t = LLVMBuildSelect(E->b, on, blk_emit_combine(E, S->k, S->fl, y, t), t, "");
	}
	LLVMValueRef y = shfl(E, S, dir, t, blk_emit_i32(E, 1 << tsh));
	LLVMValueRef first = LLVMBuildICmp(E->b, LLVMIntEQ, S->lane, blk_emit_i32(E, 0), "");
	*ex = LLVMBuildSelect(E->b, first, ident(E, S), y, "");
	/* the last lane in scan order: the axis's lane bits all ones (or zero) */
	int bits = ((1 << S->lb) - 1) << tsh;
	LLVMValueRef me = LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, 31 & ~bits), "");
	*total = shfl(E, S, "idx", t, S->rev ? me : LLVMBuildOr(E->b, me, blk_emit_i32(E, bits), ""));
}

static LLVMValueRef slot(Emit *E, const Scan *S, LLVMValueRef idx)
{
	LLVMTypeRef t = S->fl ? E->f32 : E->i32;
	return LLVMBuildGEP2(E->b, t, blk_emit_transit_base(E), &idx, 1, "");
}

/* The slot index of (row r, rep i, warp w) as the scan's axis walks. */
static LLVMValueRef slot_index(Emit *E, const Scan *S, int r, int i, LLVMValueRef w)
{
	LLVMValueRef row = blk_emit_padded_index(E, S->rows, r);
	LLVMValueRef at = LLVMBuildMul(E->b, LLVMBuildAdd(E->b, LLVMBuildMul(E->b, row,
	                               blk_emit_i32(E, S->reps), ""), blk_emit_i32(E, i), ""),
	                               blk_emit_i32(E, S->nw), "");
	return LLVMBuildAdd(E->b, at, w, "");
}

/* Step 3: wtot[r][i] (every warp's total) in; before[r][i] (the warps
 * before this one) and wtot[r][i] (all warps) out. */
static void cross_warp(Emit *E, const Scan *S, int nrows, LLVMValueRef *wtot, LLVMValueRef *before)
{
	const BlkLayout *l = S->l;
	int a = S->axis;
	int quiet = ((1 << S->lb) - 1) << l->tsh[a];
	quiet |= (blk_pow2ceil(l->nthreads) - 1) & ~blk_layout_used_bits(l);
	LLVMValueRef writer = LLVMBuildICmp(E->b, LLVMIntEQ,
		LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, quiet), ""), blk_emit_i32(E, 0), "");
	blk_emit_barrier(E);
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, writer);
	for (int r = 0; r < nrows; r++)
		for (int i = 0; i < S->reps; i++)
			LLVMBuildStore(E->b, wtot[r * S->reps + i], slot(E, S, slot_index(E, S, r, i, S->warp)));
	blk_emit_end_if(E, cont);
	blk_emit_barrier(E);
	LLVMTypeRef t = S->fl ? E->f32 : E->i32;
	for (int r = 0; r < nrows; r++)
		for (int i = 0; i < S->reps; i++) {
			LLVMValueRef all = NULL, bef = ident(E, S);
			for (int w = 0; w < S->nw; w++) {
				LLVMValueRef x = LLVMBuildLoad2(E->b, t, slot(E, S, slot_index(E, S, r, i, blk_emit_i32(E, w))), "");
				LLVMValueRef on = LLVMBuildICmp(E->b, LLVMIntULT, blk_emit_i32(E, w), S->warp, "");
				bef = LLVMBuildSelect(E->b, on, blk_emit_combine(E, S->k, S->fl, bef, x), bef, "");
				all = comb(E, S, all, x);
			}
			before[r * S->reps + i] = bef;
			wtot[r * S->reps + i] = all;
		}
}

/* The thread's lane and warp index along the axis, in scan order. */
static void place(Emit *E, Scan *S)
{
	LLVMValueRef t = blk_emit_thread_coord(E, S->l, S->axis);
	int lanes = 1 << S->lb;
	S->lane = LLVMBuildAnd(E->b, t, blk_emit_i32(E, lanes - 1), "");
	S->warp = LLVMBuildLShr(E->b, t, blk_emit_i32(E, S->lb), "");
	if (S->rev) {
		S->lane = LLVMBuildSub(E->b, blk_emit_i32(E, lanes - 1), S->lane, "");
		S->warp = LLVMBuildSub(E->b, blk_emit_i32(E, S->nw - 1), S->warp, "");
	}
}

static BlkOpKind combiner(BlkOpKind k)
{
	return k == BLK_OP_SCAN_SUM ? BLK_OP_ADD : k == BLK_OP_SCAN_PROD ? BLK_OP_MUL
	     : k == BLK_OP_SCAN_MAX ? BLK_OP_MAX : BLK_OP_MIN;
}

void blk_emit_scan(Emit *E, const BlkOp *op)
{
	Scan S = { .k = combiner(op->kind), .rev = blk_op_int(op, "reverse", 0) != 0,
	           .dt = op->operands[0]->type.dtype, .src = blk_emit_tile(E, op->operands[0]),
	           .axis = (int)blk_op_int(op, "axis", 0) };
	S.fl = blk_dtype_is_float(S.dt);
	S.l = S.src->l;
	BlkLayout *rows = BLK_NEW(E->c->a, BlkLayout);
	*rows = blk_layout_slice(S.l, S.axis);
	S.rows = rows;
	int a = S.axis, tb = blk_layout_log2(S.l->thr[a]);
	S.spt = S.l->spt[a];
	S.reps = blk_layout_regs_along(S.l, a) / S.spt;
	S.nw = blk_layout_axis_warps(S.l, a);
	S.lb = tb - blk_layout_log2(S.nw);
	place(E, &S);
	int nrows = blk_layout_nregs(rows), n = nrows * S.reps;
	LLVMValueRef *run = BLK_NEW_N(E->c->a, LLVMValueRef, (size_t)n * S.spt);
	LLVMValueRef *ex = BLK_NEW_N(E->c->a, LLVMValueRef, (size_t)n);
	LLVMValueRef *tot = BLK_NEW_N(E->c->a, LLVMValueRef, (size_t)n);
	LLVMValueRef *bef = BLK_NEW_N(E->c->a, LLVMValueRef, (size_t)n);
	for (int r = 0; r < nrows; r++)
		for (int i = 0; i < S.reps; i++) {
			LLVMValueRef acc = NULL, *x = &run[(r * S.reps + i) * S.spt];
			for (int q = 0; q < S.spt; q++) { /* step 1, in scan order */
				int j = S.rev ? S.spt - 1 - q : q;
				x[j] = acc = comb(E, &S, acc, element(E, &S, r, i, j));
			}
			lanes(E, &S, acc, &ex[r * S.reps + i], &tot[r * S.reps + i]);
			bef[r * S.reps + i] = NULL;
		}
	if (S.nw > 1)
		cross_warp(E, &S, nrows, tot, bef);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, S.l);
	for (int r = 0; r < nrows; r++) {
		LLVMValueRef carry = NULL;
		for (int q = 0; q < S.reps; q++) { /* step 4, reps in scan order */
			int i = S.rev ? S.reps - 1 - q : q, ri = r * S.reps + i;
			LLVMValueRef base = comb(E, &S, comb(E, &S, carry, bef[ri]), ex[ri]);
			for (int j = 0; j < S.spt; j++) {
				LLVMValueRef v = comb(E, &S, base, run[ri * S.spt + j]);
				BlkDType rt = op->results[0]->type.dtype;
				ev->t.r[reg_of(&S, r, i, j)] = S.fl ? blk_emit_from_f32(E, v, rt)
				                                    : blk_emit_from_i32(E, blk_emit_order_key(E, v, rt, S.k), rt);
			}
			carry = comb(E, &S, carry, tot[ri]);
		}
	}
	blk_emit_bind(E, op->results[0], ev);
}

/* The combine region of op on scalars acc[n] (the left elements) and
 * x[n] (the right ones); out[n] gets what it yields. */
static void combine_region(Emit *E, const BlkOp *op, LLVMValueRef *acc, LLVMValueRef *x,
                           LLVMValueRef *out)
{
	const BlkRegion *rg = op->regions[0];
	int n = op->noperands;
	for (int p = 0; p < 2 * n; p++) {
		EVal *ev = BLK_NEW(E->c->a, EVal);
		ev->t = blk_emit_new_tile(E, blk_lower_scalar_layout(E->c));
		ev->t.r[0] = p < n ? acc[p] : x[p - n];
		blk_emit_bind(E, rg->args[p], ev);
	}
	blk_emit_region(E, rg);
	for (int i = 0; i < n && !E->failed; i++)
		out[i] = blk_emit_tile(E, rg->last->operands[i])->r[0];
}

/* ---- a combine region through the transit region ---------------------------- */

/* Operand i's slot of padded index idx (i32) among n of total elements. */
static LLVMValueRef line_slot(Emit *E, BlkDType dt, int i, int64_t total, LLVMValueRef idx)
{
	LLVMValueRef at = LLVMBuildAdd(E->b, idx, blk_emit_i32(E, i * total), "");
	return LLVMBuildGEP2(E->b, blk_dtype_is_float(dt) ? E->f32 : E->i32, blk_emit_transit_base(E),
	                     &at, 1, "");
}

static LLVMValueRef widen(Emit *E, LLVMValueRef x, BlkDType dt)
{
	return blk_dtype_is_float(dt) ? blk_emit_to_f32(E, x, dt) : blk_emit_to_i32(E, x, dt);
}

static LLVMValueRef narrow(Emit *E, LLVMValueRef x, BlkDType dt)
{
	return blk_dtype_is_float(dt) ? blk_emit_from_f32(E, x, dt) : blk_emit_from_i32(E, x, dt);
}

static LLVMTypeRef wide_type(Emit *E, BlkDType dt)
{
	return blk_dtype_is_float(dt) ? E->f32 : E->i32;
}

/* A counted loop's head: i (an alloca) from its value while i < hi, the
 * builder in the body; blk_emit_loop_end closes it with i += step. */
typedef struct Loop {
	LLVMValueRef slot, i;
	LLVMBasicBlockRef head, done;
} Loop;

static Loop loop_begin(Emit *E, LLVMValueRef from, LLVMValueRef hi)
{
	Loop L = { .slot = blk_emit_alloca(E, E->i32) };
	LLVMBuildStore(E->b, from, L.slot);
	L.head = LLVMAppendBasicBlockInContext(E->cx, E->fn, "scan.head");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(E->cx, E->fn, "scan.body");
	L.done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "scan.done");
	LLVMBuildBr(E->b, L.head);
	LLVMPositionBuilderAtEnd(E->b, L.head);
	L.i = LLVMBuildLoad2(E->b, E->i32, L.slot, "");
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, L.i, hi, ""), body, L.done);
	LLVMPositionBuilderAtEnd(E->b, body);
	return L;
}

static void loop_end(Emit *E, const Loop *L, int step)
{
	LLVMBuildStore(E->b, LLVMBuildAdd(E->b, L->i, blk_emit_i32(E, step), ""), L->slot);
	LLVMBuildBr(E->b, L->head);
	LLVMPositionBuilderAtEnd(E->b, L->done);
}

/* Step 2 for the line starting at padded index base, its elements inner
 * apart: its first element in scan order stays, each next one becomes
 * the combine of the one before and itself. */
static void scan_line(Emit *E, const BlkOp *op, const BlkLayout *l, int axis, LLVMValueRef base,
                      int inner, int64_t total)
{
	int n = op->noperands, len = l->shape[axis];
	bool rev = blk_op_int(op, "reverse", 0) != 0;
	LLVMValueRef *acc = BLK_NEW_N(E->c->a, LLVMValueRef, 4 * n), *a = acc + n, *x = acc + 2 * n,
	             *y = acc + 3 * n;
	LLVMValueRef first = LLVMBuildAdd(E->b, base, blk_emit_i32(E, (rev ? len - 1 : 0) * inner), "");
	for (int i = 0; i < n; i++) {
		BlkDType dt = op->operands[i]->type.dtype;
		acc[i] = blk_emit_alloca(E, wide_type(E, dt));
		LLVMBuildStore(E->b, LLVMBuildLoad2(E->b, wide_type(E, dt), line_slot(E, dt, i, total, first), ""),
		               acc[i]);
	}
	Loop s = loop_begin(E, blk_emit_i32(E, 1), blk_emit_i32(E, len));
	LLVMValueRef j = rev ? LLVMBuildSub(E->b, blk_emit_i32(E, len - 1), s.i, "") : s.i;
	LLVMValueRef at = LLVMBuildAdd(E->b, base, LLVMBuildMul(E->b, j, blk_emit_i32(E, inner), ""), "");
	for (int i = 0; i < n; i++) {
		BlkDType dt = op->operands[i]->type.dtype;
		a[i] = narrow(E, LLVMBuildLoad2(E->b, wide_type(E, dt), acc[i], ""), dt);
		x[i] = narrow(E, LLVMBuildLoad2(E->b, wide_type(E, dt), line_slot(E, dt, i, total, at), ""), dt);
	}
	combine_region(E, op, a, x, y);
	for (int i = 0; i < n && !E->failed; i++) {
		BlkDType dt = op->operands[i]->type.dtype;
		LLVMValueRef w = widen(E, y[i], dt);
		LLVMBuildStore(E->b, w, line_slot(E, dt, i, total, at));
		LLVMBuildStore(E->b, w, acc[i]);
	}
	loop_end(E, &s, 1);
}

static void scan_shared(Emit *E, const BlkOp *op, int axis)
{
	int n = op->noperands;
	const BlkLayout *l = blk_emit_tile(E, op->operands[0])->l;
	int64_t total = 1, lines = 1;
	int inner = 1;
	for (int d = 0; d < l->rank; d++) {
		total *= l->pad[d];
		lines *= d == axis ? 1 : l->pad[d];
		inner *= d > axis ? l->pad[d] : 1;
	}
	blk_emit_barrier(E); /* step 1 */
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, blk_emit_owner(E, l));
	for (int i = 0; i < n; i++) {
		const ETile *t = blk_emit_tile(E, op->operands[i]);
		BlkDType dt = op->operands[i]->type.dtype;
		for (int r = 0; r < blk_layout_nregs(l); r++)
			LLVMBuildStore(E->b, widen(E, t->r[r], dt),
			               line_slot(E, dt, i, total, blk_emit_padded_index(E, l, r)));
	}
	blk_emit_end_if(E, cont);
	blk_emit_barrier(E);
	Loop q = loop_begin(E, E->tid, blk_emit_i32(E, lines)); /* step 2 */
	LLVMValueRef in = blk_emit_i32(E, inner);
	LLVMValueRef base = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, LLVMBuildUDiv(E->b, q.i, in, ""),
	                                                    blk_emit_i32(E, l->pad[axis] * inner), ""),
	                                 LLVMBuildURem(E->b, q.i, in, ""), "");
	scan_line(E, op, l, axis, base, inner, total);
	loop_end(E, &q, E->c->nthreads);
	blk_emit_barrier(E);
	for (int i = 0; i < n; i++) { /* step 3 */
		BlkDType dt = op->operands[i]->type.dtype;
		EVal *ev = BLK_NEW(E->c->a, EVal);
		ev->t = blk_emit_new_tile(E, l);
		for (int r = 0; r < blk_layout_nregs(l); r++)
			ev->t.r[r] = narrow(E, LLVMBuildLoad2(E->b, wide_type(E, dt),
			                    line_slot(E, dt, i, total, blk_emit_padded_index(E, l, r)), ""), dt);
		blk_emit_bind(E, op->results[i], ev);
	}
}

void blk_emit_scan_region(Emit *E, const BlkOp *op)
{
	if (!blk_layout_holds_lines(blk_emit_tile(E, op->operands[0])->l, (int)blk_op_int(op, "axis", 0))) {
		scan_shared(E, op, (int)blk_op_int(op, "axis", 0));
		return;
	}
	int n = op->noperands;
	Scan S = { .rev = blk_op_int(op, "reverse", 0) != 0, .axis = (int)blk_op_int(op, "axis", 0) };
	const ETile **src = BLK_NEW_N(E->c->a, const ETile *, n);
	ETile *dst = BLK_NEW_N(E->c->a, ETile, n);
	for (int i = 0; i < n; i++)
		src[i] = blk_emit_tile(E, op->operands[i]);
	S.l = src[0]->l;
	BlkLayout *rows = BLK_NEW(E->c->a, BlkLayout);
	*rows = blk_layout_slice(S.l, S.axis);
	S.rows = rows;
	S.spt = S.l->pad[S.axis];
	for (int i = 0; i < n; i++)
		dst[i] = blk_emit_new_tile(E, S.l);
	LLVMValueRef *acc = BLK_NEW_N(E->c->a, LLVMValueRef, 3 * n);
	LLVMValueRef *x = acc + n, *y = acc + 2 * n;
	int len = S.l->shape[S.axis], nrows = blk_layout_nregs(rows);
	for (int r = 0; r < nrows && !E->failed; r++)
		for (int j = 0; j < S.spt && !E->failed; j++) { /* padding (j >= len) keeps its element */
			int q = S.rev && j < len ? len - 1 - j : j, reg = reg_of(&S, r, 0, q);
			for (int i = 0; i < n; i++)
				x[i] = y[i] = src[i]->r[reg];
			if (j > 0 && j < len)
				combine_region(E, op, acc, x, y);
			for (int i = 0; i < n && !E->failed; i++)
				dst[i].r[reg] = acc[i] = y[i];
		}
	for (int i = 0; i < n; i++) {
		EVal *ev = BLK_NEW(E->c->a, EVal);
		ev->t = dst[i];
		blk_emit_bind(E, op->results[i], ev);
	}
}
