/* lower_ast.c - the checked AST to IR.  Contract: requires a BlkCkFile
 * without errors (every node typed); produces a module that blk_ir_verify
 * accepts: elementwise ops see operands of one shape (explicit `broadcast`),
 * weak literals are `const`s of the dtype they took, `acc + dot(a, b)` is a
 * `dot` with an accumulator, unrolled loops are expanded.
 *
 * Names are not looked up again: each NAME node's binding (from the checker)
 * holds the BlkValue it denotes at this point of the lowering (BlkCkBind
 * .value); lowering a `let` or entering a loop body sets it.  An unrolled
 * loop lowers its body once per iteration with the induction variable bound
 * to a constant.
 */
#include <math.h>
#include <string.h>

#include "frontend/check.h"

typedef struct Lw {
	BlkArena *a;
	const BlkPtrMap *map;
	const CkKernel *k;
	BlkBuilder b;
} Lw;

static BlkValue *lw_expr(Lw *L, const BlkAstExpr *e, BlkDType want);
static void lw_stmts(Lw *L, const BlkAstBlock *blk);
static void name_value(BlkValue *v, const char *name);

static CkInfo *info(Lw *L, const void *node)
{
	CkInfo *in = blk_ck_info(L->map, node);
	if (!in)
		blk_die("lower_ast: a node the checker never saw");
	return in;
}

static BlkType tile(BlkDType dt, int rank, const BlkSym *const *dims)
{
	return blk_type_tile(dt, rank, dims);
}

static BlkValue *op1(Lw *L, BlkOpKind k, BlkLoc loc, BlkType t, BlkValue *x)
{
	return blk_build1(&L->b, k, loc, t, 1, &x);
}

static BlkValue *op2(Lw *L, BlkOpKind k, BlkLoc loc, BlkType t, BlkValue *x, BlkValue *y)
{
	BlkValue *o[2] = { x, y };
	return blk_build1(&L->b, k, loc, t, 2, o);
}

static BlkValue *op_axis(Lw *L, BlkOpKind k, BlkLoc loc, BlkType t, BlkValue *x, int axis)
{
	BlkValue *v = blk_build1(&L->b, k, loc, t, x ? 1 : 0, x ? &x : NULL);
	blk_op_set_int(L->a, v->def, "axis", axis);
	return v;
}

/* A compile-time constant as a `const` of type t (a splat for tiles). */
static BlkValue *lw_const(Lw *L, BlkLoc loc, BlkType t, const CkType *k)
{
	if (blk_dtype_is_float(t.dtype) || blk_dtype_is_fp8(t.dtype))
		return blk_build_const_float(&L->b, loc, t, k->weak == CK_WEAK_INT ? (double)k->i : k->f);
	return blk_build_const_int(&L->b, loc, t, k->i);
}

static BlkValue *lw_i32(Lw *L, BlkLoc loc, int64_t v)
{
	return blk_build_const_int(&L->b, loc, blk_type_scalar(BLK_I32), v);
}

/* e as a tile of dtype dt and shape dims: weak constants become a const of
 * that type, other values broadcast to it. */
static BlkValue *lw_as(Lw *L, const BlkAstExpr *e, BlkDType dt, int rank,
                       const BlkSym *const *dims)
{
	CkInfo *in = info(L, e);
	BlkType t = tile(dt, rank, dims);
	if (in->type.kind == CK_VALUE && in->type.konst)
		return lw_const(L, e->loc, t, &in->type);
	BlkValue *v = lw_expr(L, e, dt);
	if (v->type.dtype != dt && v->type.rank == 0) /* a weak scalar (check_expr.c's scalar_joins) */
		v = op1(L, BLK_OP_CAST, e->loc, blk_type_scalar(dt), v);
	if (v->type.dtype != dt)
		blk_die("lower_ast: %s value where %s is wanted", blk_dtype_name(v->type.dtype),
		        blk_dtype_name(dt));
	if (blk_type_equal(&v->type, &t))
		return v;
	return op1(L, BLK_OP_BROADCAST, e->loc, t, v);
}

static BlkValue *lw_as_type(Lw *L, const BlkAstExpr *e, const BlkType *t)
{
	return lw_as(L, e, t->dtype, t->rank, t->dims);
}

static BlkValue *lw_scalar_i32(Lw *L, const BlkAstExpr *e)
{
	return lw_as(L, e, BLK_I32, 0, NULL);
}

/* ---- Ref accesses ------------------------------------------------------------ */

/* The tile shape an access addresses: the kept dims, the gathered
 * ones' shape where the first gathered dim was. */
static BlkType accessed(const BlkValue *ref, const CkAccess *acc)
{
	BlkType t = ref->type;
	t.kind = BLK_TYPE_TILE;
	t.space = BLK_SPACE_GLOBAL;
	t.rank = 0;
	for (int d = 0; d < acc->rank; d++) {
		if (acc->grank && t.rank == acc->gpos && acc->idx[d].kind == BLK_INDEX_GATHER)
			for (int k = 0; k < acc->grank; k++)
				t.dims[t.rank++] = acc->gdims[k];
		if (acc->idx[d].kind == BLK_INDEX_FULL || acc->idx[d].kind == BLK_INDEX_DS)
			t.dims[t.rank++] = acc->idx[d].kind == BLK_INDEX_DS ? acc->idx[d].size : ref->type.dims[d];
	}
	return t;
}

/* A gather's index tile as the whole accessed shape t: its dims aligned
 * to the gathered ones (numpy), broadcast over the rest. */
static BlkValue *lw_gather_index(Lw *L, const CkAccess *acc, const BlkAstExpr *e, const BlkType *t)
{
	BlkValue *v = lw_expr(L, e, BLK_I32);
	for (int d = acc->gpos + acc->grank; d < t->rank; d++) {
		BlkType x = v->type;
		x.dims[x.rank++] = blk_sym_const(L->a, 1);
		v = op_axis(L, BLK_OP_EXPAND_DIMS, e->loc, x, v, v->type.rank);
	}
	BlkType w = *t;
	w.dtype = BLK_I32;
	return v->type.rank == w.rank && blk_type_equal(&v->type, &w) ? v : op1(L, BLK_OP_BROADCAST, e->loc, w, v);
}

static BlkValue *lw_sym(Lw *L, BlkLoc loc, const BlkSym *s);

/* The operands of an access op: ref, then one i32 per SCALAR or DS dim,
 * one i32 tile of the accessed shape per GATHER dim. */
static int access_operands(Lw *L, BlkValue *ref, const CkAccess *acc, BlkValue **ops)
{
	int n = 0;
	BlkType t = accessed(ref, acc);
	ops[n++] = ref;
	for (int d = 0; d < acc->rank; d++) {
		if (acc->idx[d].kind == BLK_INDEX_FULL)
			continue;
		if (acc->idx[d].kind == BLK_INDEX_GATHER)
			ops[n++] = lw_gather_index(L, acc, acc->src[d]->a, &t);
		else if (acc->from_end >> d & 1) /* x[-k] on a dim of extent N: N - k */
			ops[n++] = op2(L, BLK_OP_ADD, acc->src[d]->loc, blk_type_scalar(BLK_I32),
			               lw_sym(L, acc->src[d]->loc, ref->type.dims[d]),
			               lw_i32(L, acc->src[d]->loc, acc->start[d]));
		else
			ops[n++] = !(acc->konst >> d & 1) ? lw_scalar_i32(L, acc->src[d]->a)
			         : blk_build_const_int(&L->b, acc->src[d]->loc, blk_type_scalar(BLK_I32),
			                               acc->start[d]);
	}
	return n;
}

static void set_fill(Lw *L, BlkOp *op, BlkDType dt, const CkType *fill)
{
	bool k = fill->kind == CK_VALUE;
	if (blk_dtype_is_float(dt) || blk_dtype_is_fp8(dt))
		blk_op_set_float(L->a, op, "fill", !k ? 0.0 : fill->weak == CK_WEAK_INT ? (double)fill->i : fill->f);
	else
		blk_op_set_int(L->a, op, "fill", k ? fill->i : 0);
}

/* v with a unit dim inserted at each axis of newaxes (result positions,
 * so inserting in ascending order puts each where it belongs). */
static BlkValue *lw_newaxes(Lw *L, BlkLoc loc, BlkValue *v, unsigned newaxes)
{
	for (int d = 0; newaxes >> d; d++) {
		if (!(newaxes >> d & 1))
			continue;
		BlkType t = v->type;
		memmove(&t.dims[d + 1], &t.dims[d], sizeof t.dims[0] * (size_t)(t.rank - d));
		t.dims[d] = blk_sym_const(L->a, 1);
		t.rank++;
		v = op_axis(L, BLK_OP_EXPAND_DIMS, loc, t, v, d);
	}
	return v;
}

/* `r[idx]` (a load) or `r.at[idx]` (a view), or `t[:, None]` of a tile. */
static BlkValue *lw_index(Lw *L, const BlkAstExpr *e, CkInfo *in)
{
	CkInfo *base = info(L, e->lhs);
	BlkValue *ref = lw_expr(L, e->lhs, base->type.kind == CK_VALUE ? in->type.t.dtype : BLK_I32);
	BlkValue *ops[1 + BLK_MAX_RANK];
	int n = access_operands(L, ref, &in->acc, ops);
	BlkType t = accessed(ref, &in->acc);
	if (base->type.kind == CK_VALUE) { /* a tile: `None`s only, or a part of it */
		BlkValue *v = ref;
		if (n > 1) {
			v = blk_build1(&L->b, BLK_OP_EXTRACT, e->loc, t, n, ops);
			blk_op_set_index(L->a, v->def, "idx", in->acc.rank, in->acc.idx);
		}
		return lw_newaxes(L, e->loc, v, in->acc.newaxes);
	}
	if (e->kind == BLK_AST_AT)
		t = blk_type_ref(t.dtype, t.rank, t.dims, ref->type.space);
	BlkValue *v = blk_build1(&L->b, e->kind == BLK_AST_AT ? BLK_OP_VIEW : BLK_OP_LOAD, e->loc, t, n, ops);
	blk_op_set_index(L->a, v->def, "idx", in->acc.rank, in->acc.idx);
	if (e->kind == BLK_AST_INDEX)
		set_fill(L, v->def, t.dtype, &in->fill);
	return lw_newaxes(L, e->loc, v, in->acc.newaxes);
}

/* ---- operators ----------------------------------------------------------------- */

static BlkOpKind binop_kind(BlkAstOp op)
{
	static const BlkOpKind k[BLK_AST_NUM_OPS] = {
		[BLK_AST_OP_ADD] = BLK_OP_ADD, [BLK_AST_OP_SUB] = BLK_OP_SUB,
		[BLK_AST_OP_MUL] = BLK_OP_MUL, [BLK_AST_OP_DIV] = BLK_OP_DIV,
		[BLK_AST_OP_FLOORDIV] = BLK_OP_FLOORDIV, [BLK_AST_OP_MOD] = BLK_OP_MOD,
		[BLK_AST_OP_EQ] = BLK_OP_EQ, [BLK_AST_OP_NE] = BLK_OP_NE,
		[BLK_AST_OP_LT] = BLK_OP_LT, [BLK_AST_OP_LE] = BLK_OP_LE,
		[BLK_AST_OP_GT] = BLK_OP_GT, [BLK_AST_OP_GE] = BLK_OP_GE,
		[BLK_AST_OP_AND] = BLK_OP_AND, [BLK_AST_OP_OR] = BLK_OP_OR,
		[BLK_AST_OP_BITAND] = BLK_OP_AND, [BLK_AST_OP_BITOR] = BLK_OP_OR,
		[BLK_AST_OP_BITXOR] = BLK_OP_XOR, [BLK_AST_OP_SHL] = BLK_OP_SHL,
		[BLK_AST_OP_SHR] = BLK_OP_SHR, [BLK_AST_OP_POW] = BLK_OP_POW,
	};
	return k[op];
}

/* Batch b of a [B, R, C] tile: [R, C] (extract, through shared memory on
 * the GPU, like tile indexing).  Of t = swapaxes(u, 1, 2) it is the 2-D
 * transpose of u's batch b, so the dot sees `x @ w.T` (its fast forms). */
static BlkValue *batch_of(Lw *L, BlkLoc loc, BlkValue *t, BlkValue *b)
{
	const BlkOp *d = t->def;
	const BlkAttr *pa = d && d->kind == BLK_OP_TRANSPOSE ? blk_op_attr(d, "perm") : NULL;
	if (pa && pa->kind == BLK_ATTR_STRING && strcmp(pa->s, "021") == 0 && !blk_op_attr(d, "flip")) {
		BlkValue *u = batch_of(L, loc, d->operands[0], b);
		const BlkSym *dims[2] = { u->type.dims[1], u->type.dims[0] };
		return op1(L, BLK_OP_TRANSPOSE, loc, tile(t->type.dtype, 2, dims), u);
	}
	BlkValue *ops[2] = { t, b };
	BlkValue *v = blk_build1(&L->b, BLK_OP_EXTRACT, loc, tile(t->type.dtype, 2, t->type.dims + 1), 2, ops);
	BlkIndex idx[3] = { { BLK_INDEX_SCALAR, NULL, 0 }, { BLK_INDEX_FULL, NULL, 0 },
	                    { BLK_INDEX_FULL, NULL, 0 } };
	blk_op_set_index(L->a, v->def, "idx", 3, idx);
	return v;
}

static BlkValue *cdiv_of(Lw *L, BlkLoc loc, BlkValue *x, BlkValue *y);

/* A shape expression as an i32 scalar (sizes through `size` ops). */
static BlkValue *lw_sym(Lw *L, BlkLoc loc, const BlkSym *s)
{
	static const BlkOpKind ops[] = {
		[BLK_SYM_ADD] = BLK_OP_ADD, [BLK_SYM_SUB] = BLK_OP_SUB, [BLK_SYM_MUL] = BLK_OP_MUL,
		[BLK_SYM_FLOORDIV] = BLK_OP_FLOORDIV, [BLK_SYM_MOD] = BLK_OP_MOD,
		[BLK_SYM_MIN] = BLK_OP_MIN, [BLK_SYM_MAX] = BLK_OP_MAX,
	};
	BlkType i32 = blk_type_scalar(BLK_I32);
	if (s->kind == BLK_SYM_CONST)
		return lw_i32(L, loc, s->value);
	if (s->kind == BLK_SYM_VAR) {
		BlkValue *v = blk_build1(&L->b, BLK_OP_SIZE, loc, i32, 0, NULL);
		blk_op_set_string(L->a, v->def, "name", s->name);
		return v;
	}
	BlkValue *a = lw_sym(L, loc, s->a), *b = lw_sym(L, loc, s->b);
	return s->kind == BLK_SYM_CDIV ? cdiv_of(L, loc, a, b) : op2(L, ops[s->kind], loc, i32, a, b);
}

/* dot of [B, M, K] and [B, K, N]: the IR's dot is 2-D, so a loop over the
 * batch dots each pair and selects the result into its slot of the
 * [B, M, N] carry. */
static BlkValue *lw_dot(Lw *L, BlkLoc loc, BlkType rt, BlkValue *x, BlkValue *y)
{
	if (rt.rank == 2)
		return op2(L, BLK_OP_DOT, loc, rt, x, y);
	BlkValue *ops[4] = { lw_i32(L, loc, 0), lw_sym(L, loc, rt.dims[0]), lw_i32(L, loc, 1),
	                     rt.dtype == BLK_I32 ? blk_build_const_int(&L->b, loc, rt, 0)
	                                         : blk_build_const_float(&L->b, loc, rt, 0.0) };
	BlkOp *f = blk_build(&L->b, BLK_OP_FOR, loc, 4, ops, 1, &rt, 1);
	blk_op_set_int(L->a, f, "unroll", 0);
	BlkValue *b = blk_region_add_arg(L->a, f->regions[0], blk_type_scalar(BLK_I32), "batch");
	BlkValue *cur = blk_region_add_arg(L->a, f->regions[0], rt, NULL);
	BlkBuilder saved = L->b;
	blk_builder_at_end(&L->b, L->a, f->regions[0]);
	BlkValue *d = op2(L, BLK_OP_DOT, loc, tile(rt.dtype, 2, rt.dims + 1), batch_of(L, loc, x, b),
	                  batch_of(L, loc, y, b));
	const BlkSym *one[3] = { blk_sym_const(L->a, 1), rt.dims[1], rt.dims[2] };
	d = op1(L, BLK_OP_BROADCAST, loc, rt, op_axis(L, BLK_OP_EXPAND_DIMS, loc, tile(rt.dtype, 3, one), d, 0));
	BlkValue *at = op2(L, BLK_OP_EQ, loc, tile(BLK_BOOL, 3, rt.dims),
	                   op_axis(L, BLK_OP_IOTA, loc, tile(BLK_I32, 3, rt.dims), NULL, 0),
	                   op1(L, BLK_OP_BROADCAST, loc, tile(BLK_I32, 3, rt.dims), b));
	BlkValue *sel[3] = { at, d, cur };
	BlkValue *next = blk_build1(&L->b, BLK_OP_SELECT, loc, rt, 3, sel);
	blk_build(&L->b, BLK_OP_YIELD, loc, 1, &next, 0, NULL, 0);
	L->b = saved;
	return f->results[0];
}

/* `acc + dot(a, b)`: one dot with acc as its accumulator. */
static BlkValue *lw_dot_acc(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	const BlkAstExpr *dot = in->dot_side == 1 ? e->lhs : e->rhs;
	const BlkAstExpr *acc = in->dot_side == 1 ? e->rhs : e->lhs, *a, *b;
	BlkValue *o[3];
	blk_ck_dot_operands(dot, &a, &b);
	o[0] = lw_expr(L, a, BLK_F32);
	o[1] = lw_expr(L, b, BLK_F32);
	o[2] = lw_expr(L, acc, in->type.t.dtype);
	info(L, dot); /* the dot node itself emits nothing */
	return blk_build1(&L->b, BLK_OP_DOT, dot->loc, in->type.t, 3, o);
}

/* Operands of an elementwise op: each as opdt of the result's shape. */
static BlkValue *lw_elementwise(Lw *L, BlkOpKind k, BlkLoc loc, const CkInfo *in,
                                const BlkAstExpr *x, const BlkAstExpr *y)
{
	const BlkType *r = &in->type.t;
	BlkValue *a = lw_as(L, x, in->opdt, r->rank, r->dims);
	BlkValue *b = lw_as(L, y, in->opdt, r->rank, r->dims);
	return op2(L, k, loc, in->type.t, a, b);
}

static BlkValue *lw_binary(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	if (in->dot_side)
		return lw_dot_acc(L, e, in);
	if (e->op == BLK_AST_OP_MATMUL) {
		BlkValue *x = lw_expr(L, e->lhs, BLK_F32); /* in source order */
		return lw_dot(L, e->loc, in->type.t, x, lw_expr(L, e->rhs, BLK_F32));
	}
	return lw_elementwise(L, binop_kind(e->op), e->loc, in, e->lhs, e->rhs);
}

static BlkValue *lw_unary(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *x = lw_expr(L, e->lhs, in->type.t.dtype);
	return op1(L, e->op == BLK_AST_OP_NEG ? BLK_OP_NEG : BLK_OP_NOT, e->loc, in->type.t, x);
}

/* ---- builtins ------------------------------------------------------------------ */

/* sum/max/min with an axis (or every axis), then keepdims' unit dims back. */
static BlkValue *lw_reduce(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkOpKind k = blk_ck_builtins[in->builtin].op; /* reduce_sum .. reduce_argmin */
	BlkValue *x = lw_expr(L, e->args[0].value, info(L, e->args[0].value)->type.t.dtype);
	int rank = x->type.rank;
	for (int d = rank - 1; d >= 0; d--) {
		if (in->axis >= 0 && d != in->axis)
			continue;
		BlkType t = x->type;
		t.rank--;
		memmove(&t.dims[d], &t.dims[d + 1], sizeof t.dims[0] * (size_t)(t.rank - d));
		t.dtype = in->type.t.dtype; /* an index for argmax/argmin */
		x = op_axis(L, k, e->loc, t, x, d);
	}
	for (int d = 0; in->keepdims && d < rank; d++) {
		if (in->axis >= 0 && d != in->axis)
			continue;
		BlkType t = x->type;
		memmove(&t.dims[d + 1], &t.dims[d], sizeof t.dims[0] * (size_t)(t.rank - d));
		t.dims[d] = blk_sym_const(L->a, 1);
		t.rank++;
		x = op_axis(L, BLK_OP_EXPAND_DIMS, e->loc, t, x, d);
	}
	return x;
}

static BlkValue *lw_scan(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *x = lw_expr(L, e->args[0].value, in->type.t.dtype);
	BlkValue *v = op_axis(L, blk_ck_builtins[in->builtin].op, e->loc, in->type.t, x, in->axis);
	if (in->reverse)
		blk_op_set_int(L->a, v->def, "reverse", 1);
	return v;
}

static BlkValue *lw_where(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	const BlkType *r = &in->type.t;
	BlkValue *o[3];
	o[0] = lw_as(L, e->args[0].value, BLK_BOOL, r->rank, r->dims);
	o[1] = lw_as(L, e->args[1].value, in->opdt, r->rank, r->dims);
	o[2] = lw_as(L, e->args[2].value, in->opdt, r->rank, r->dims);
	return blk_build1(&L->b, BLK_OP_SELECT, e->loc, *r, 3, o);
}

/* cdiv(a, b) = a // b + (a % b != 0): exact for every sign (the floor
 * rounds up by one exactly when b does not divide a), 0 for b == 0, and
 * no negated operand: -((-a) // b) wrapped at a = INT_MIN (cdiv(INT_MIN, 2)
 * was +2^30), and the driver's ptxas (CUDA 13.0) can miscompile `neg` then
 * `shr.s32` into a wrong LEA.HI (docs/gpu-notes.md, run 37).  specialize.c
 * folds it. */
static BlkValue *cdiv_of(Lw *L, BlkLoc loc, BlkValue *x, BlkValue *y)
{
	BlkType i32 = blk_type_scalar(BLK_I32), b1 = blk_type_scalar(BLK_BOOL);
	BlkValue *q = op2(L, BLK_OP_FLOORDIV, loc, i32, x, y);
	BlkValue *r = op2(L, BLK_OP_MOD, loc, i32, x, y);
	BlkValue *zero = blk_build_const_int(&L->b, loc, i32, 0);
	BlkValue *up = op1(L, BLK_OP_CAST, loc, i32, op2(L, BLK_OP_NE, loc, b1, r, zero));
	return op2(L, BLK_OP_ADD, loc, i32, q, up);
}

static BlkValue *lw_cdiv(Lw *L, const BlkAstExpr *e)
{
	BlkValue *x = lw_scalar_i32(L, e->args[0].value);
	return cdiv_of(L, e->loc, x, lw_scalar_i32(L, e->args[1].value));
}

/* The operands of load's or an atomic's Ref r: a gathering `x.at[idx]`
 * is no view, its indices go to the access itself (*acc; else NULL). */
static int ref_operands(Lw *L, const BlkAstExpr *r, BlkValue **ops, const CkAccess **acc)
{
	CkInfo *ri = info(L, r);
	*acc = NULL;
	if (r->kind != BLK_AST_AT || !ri->acc.grank) {
		ops[0] = lw_expr(L, r, BLK_I32);
		return 1;
	}
	*acc = &ri->acc;
	return access_operands(L, lw_expr(L, r->lhs, BLK_I32), &ri->acc, ops);
}

static BlkValue *lw_load(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *ops[1 + BLK_MAX_RANK];
	const CkAccess *acc;
	int n = ref_operands(L, e->args[0].value, ops, &acc);
	BlkValue *v = blk_build1(&L->b, BLK_OP_LOAD, e->loc, in->type.t, n, ops);
	if (acc)
		blk_op_set_index(L->a, v->def, "idx", acc->rank, acc->idx);
	set_fill(L, v->def, in->type.t.dtype, &in->fill);
	return v;
}

/* x.on(rank): a peer op on x's Ref. */
static BlkValue *lw_on(Lw *L, const BlkAstExpr *e)
{
	BlkValue *ref = lw_expr(L, e->args[0].value, BLK_I32);
	return op2(L, BLK_OP_PEER, e->loc, ref->type, ref, lw_scalar_i32(L, e->args[1].value));
}

/* signal_add/set/wait(sig, v). */
static BlkValue *lw_signal(Lw *L, const BlkAstExpr *e, BlkOpKind k)
{
	BlkValue *o[2] = { lw_expr(L, e->args[0].value, BLK_I32), lw_scalar_i32(L, e->args[1].value) };
	blk_build(&L->b, k, e->loc, 2, o, 0, NULL, 0);
	return NULL;
}

/* rank_barrier(sig): every rank's sig gets 1 from each rank, then each waits
 * for world arrivals on its own (and so leaves it at 0). */
static BlkValue *lw_rank_barrier(Lw *L, const BlkAstExpr *e)
{
	BlkLoc loc = e->loc;
	BlkValue *sig = lw_expr(L, e->args[0].value, BLK_I32);
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *world = blk_build1(&L->b, BLK_OP_WORLD, loc, i32, 0, NULL);
	BlkValue *ops[3] = { lw_i32(L, loc, 0), world, lw_i32(L, loc, 1) };
	BlkOp *f = blk_build(&L->b, BLK_OP_FOR, loc, 3, ops, 0, NULL, 1);
	blk_op_set_int(L->a, f, "unroll", 0);
	BlkValue *r = blk_region_add_arg(L->a, f->regions[0], i32, "r");
	BlkBuilder saved = L->b;
	blk_builder_at_end(&L->b, L->a, f->regions[0]);
	BlkValue *add[2] = { op2(L, BLK_OP_PEER, loc, sig->type, sig, r), lw_i32(L, loc, 1) };
	blk_build(&L->b, BLK_OP_SIGNAL_ADD, loc, 2, add, 0, NULL, 0);
	blk_build(&L->b, BLK_OP_YIELD, loc, 0, NULL, 0, NULL, 0);
	L->b = saved;
	BlkValue *wait[2] = { sig, world };
	blk_build(&L->b, BLK_OP_SIGNAL_WAIT, loc, 2, wait, 0, NULL, 0);
	return NULL;
}

/* atomic_add/max/min(ref, v): ref, v; atomic_cas(ref, cmp, v): ref, cmp, v. */
static BlkValue *lw_atomic(Lw *L, const BlkAstExpr *e, BlkOpKind k)
{
	BlkValue *o[3 + BLK_MAX_RANK];
	const CkAccess *acc;
	int n = ref_operands(L, e->args[0].value, o, &acc);
	const BlkType *rt = &info(L, e->args[0].value)->type.t; /* the Ref's (gathered) shape */
	if (k == BLK_OP_ATOMIC_CAS)
		o[n++] = lw_as(L, e->args[1].value, rt->dtype, 0, NULL);
	o[n] = lw_as(L, e->args[k == BLK_OP_ATOMIC_CAS ? 2 : 1].value, rt->dtype, rt->rank, rt->dims);
	BlkOp *op = blk_build(&L->b, k, e->loc, n + 1, o, 0, NULL, 0);
	if (acc)
		blk_op_set_index(L->a, op, "idx", acc->rank, acc->idx);
	return NULL;
}

static const BlkAstExpr *pos_arg(const BlkAstExpr *e, int i)
{
	for (int j = 0, n = 0; j < e->nargs; j++)
		if (!e->args[j].name && n++ == i)
			return e->args[j].value;
	return NULL;
}

static BlkValue *lw_math(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *x = lw_expr(L, pos_arg(e, 0), in->type.t.dtype);
	BlkOpKind k = in->approx ? BLK_OP_GELU_TANH : blk_ck_builtins[in->builtin].op;
	return op1(L, k, e->loc, in->type.t, x);
}

/* fma(a, b, c), clamp(x, lo, hi) = min(max(x, lo), hi) (numpy's clip: a
 * NaN stays NaN, lo > hi gives hi), each operand as opdt of the result's
 * shape. */
static BlkValue *lw_ternary(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	const BlkType *r = &in->type.t;
	BlkValue *o[3];
	for (int i = 0; i < 3; i++)
		o[i] = lw_as(L, e->args[i].value, in->opdt, r->rank, r->dims);
	if (in->builtin == CK_B_FMA)
		return blk_build1(&L->b, BLK_OP_FMA, e->loc, *r, 3, o);
	return op2(L, BLK_OP_MIN, e->loc, *r, op2(L, BLK_OP_MAX, e->loc, *r, o[0], o[1]), o[2]);
}

/* isnan(x) = x != x (unordered: true for NaN only), isinf(x) =
 * abs(x) == inf: exact in the interpreter and on the GPU alike. */
static BlkValue *lw_float_class(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *x = lw_expr(L, e->args[0].value, info(L, e->args[0].value)->type.t.dtype);
	if (in->builtin == CK_B_ISNAN)
		return op2(L, BLK_OP_NE, e->loc, in->type.t, x, x);
	BlkValue *inf = blk_build_const_float(&L->b, e->loc, x->type, INFINITY);
	return op2(L, BLK_OP_EQ, e->loc, in->type.t, op1(L, BLK_OP_ABS, e->loc, x->type, x), inf);
}

/* ---- random numbers ---- */

/* The seed and counters of a random call as i32 tiles t, each argument
 * lowered once: c0 the first after the seed, the others 0 where the call
 * has only offsets. */
static void lw_counters(Lw *L, const BlkAstExpr *e, BlkType t, BlkValue **o)
{
	for (int i = 0; i < 5; i++)
		o[i] = i < e->nargs ? lw_as(L, e->args[i].value, BLK_I32, t.rank, t.dims)
		                    : blk_build_const_int(&L->b, e->loc, t, 0);
}

/* Word w of Philox4x32-10 of the counters o[1..4] under o[0]'s key. */
static BlkValue *philox_word(Lw *L, BlkLoc loc, BlkType t, BlkValue **o, int w)
{
	BlkValue *v = blk_build1(&L->b, BLK_OP_PHILOX, loc, t, 5, o);
	blk_op_set_int(L->a, v->def, "word", w);
	return v;
}

/* philox, randint4x: the four words. */
static void lw_philox(Lw *L, const BlkAstExpr *e, const CkInfo *in, BlkValue **out)
{
	BlkValue *o[5];
	lw_counters(L, e, in->type.elems[0].t, o);
	for (int i = 0; i < 4; i++)
		out[i] = philox_word(L, e->loc, in->type.elems[0].t, o, i);
}

/* rand: uniform(word 0); randn: normal(words 0, 1); randint: word 0. */
static BlkValue *lw_random(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkType t = in->type.t;
	t.dtype = BLK_I32;
	BlkValue *o[5];
	lw_counters(L, e, t, o);
	BlkValue *w0 = philox_word(L, e->loc, t, o, 0);
	if (in->builtin == CK_B_RANDINT)
		return w0;
	if (in->builtin == CK_B_RAND)
		return op1(L, BLK_OP_UNIFORM, e->loc, in->type.t, w0);
	return op2(L, BLK_OP_NORMAL, e->loc, in->type.t, w0, philox_word(L, e->loc, t, o, 1));
}

/* ---- joining and cutting tiles ---- */

/* x's window of `size` elements from `start` along axis (all of the other
 * dims), as type t: an extract, elements outside x read 0 (false). */
static BlkValue *window(Lw *L, BlkLoc loc, BlkValue *x, int axis, BlkValue *start, const BlkSym *size,
                        BlkType t)
{
	BlkIndex idx[BLK_MAX_RANK];
	for (int d = 0; d < x->type.rank; d++)
		idx[d] = (BlkIndex){ d == axis ? BLK_INDEX_DS : BLK_INDEX_FULL, d == axis ? size : NULL, 0 };
	BlkValue *ops[2] = { x, start };
	BlkValue *v = blk_build1(&L->b, BLK_OP_EXTRACT, loc, t, 2, ops);
	blk_op_set_index(L->a, v->def, "idx", x->type.rank, idx);
	return v;
}

/* parts[0..n) joined along axis into type t: each part's window of the
 * whole axis from -(its offset) (itself where it goes, the fill
 * elsewhere), then selected by the index along the axis, last part first:
 * exact for every dtype, -0.0 and NaN included. */
static BlkValue *concat_of(Lw *L, BlkLoc loc, BlkValue **parts, int n, int axis, BlkType t)
{
	BlkType it = t, bt = t;
	it.dtype = BLK_I32;
	bt.dtype = BLK_BOOL;
	BlkValue *pos = op_axis(L, BLK_OP_IOTA, loc, it, NULL, axis), *acc = NULL;
	const BlkSym *off = blk_sym_const(L->a, 0), **offs = BLK_NEW_N(L->a, const BlkSym *, n);
	for (int i = 0; i < n; i++, off = blk_sym_binary(L->a, BLK_SYM_ADD, off, parts[i - 1]->type.dims[axis]))
		offs[i] = off;
	for (int i = n - 1; i >= 0; i--) {
		BlkValue *start = lw_sym(L, loc, blk_sym_binary(L->a, BLK_SYM_SUB, blk_sym_const(L->a, 0), offs[i]));
		BlkValue *w = window(L, loc, parts[i], axis, start, t.dims[axis], t);
		if (!acc) {
			acc = w;
			continue;
		}
		BlkValue *end = op1(L, BLK_OP_BROADCAST, loc, it, lw_sym(L, loc, offs[i + 1]));
		BlkValue *mine = op2(L, BLK_OP_LT, loc, bt, pos, end);
		BlkValue *o[3] = { mine, w, acc };
		acc = blk_build1(&L->b, BLK_OP_SELECT, loc, t, 3, o);
	}
	return acc;
}

/* A tuple of tiles (a tuple expression, split's result) as values. */
static void lw_multi(Lw *L, const BlkAstExpr *e, int n, const BlkType *want, BlkValue **out);

static BlkValue *lw_join(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	const BlkAstExpr *arg = pos_arg(e, 0);
	int n = info(L, arg)->type.n;
	BlkValue **parts = BLK_NEW_N(L->a, BlkValue *, n);
	lw_multi(L, arg, n, NULL, parts);
	if (in->builtin == CK_B_STACK && in->axis == in->type.t.rank - 1) /* side by side in each thread */
		return blk_build1(&L->b, BLK_OP_JOIN, e->loc, in->type.t, n, parts);
	for (int i = 0; in->builtin == CK_B_STACK && i < n; i++) {
		BlkType t = in->type.t;
		t.dims[in->axis] = blk_sym_const(L->a, 1);
		parts[i] = op_axis(L, BLK_OP_EXPAND_DIMS, e->loc, t, parts[i], in->axis);
	}
	return concat_of(L, e->loc, parts, n, in->axis, in->type.t);
}

/* interleave(a, b) = reshape(join(a, b)): [..., n] twice to [..., n, 2]
 * to [..., 2n] (tile.c keeps both in registers). */
static BlkValue *lw_interleave(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *parts[2];
	for (int i = 0; i < 2; i++)
		parts[i] = lw_expr(L, e->args[i].value, in->type.t.dtype);
	BlkType st = parts[0]->type;
	st.dims[st.rank++] = blk_sym_const(L->a, 2);
	BlkValue *s = blk_build1(&L->b, BLK_OP_JOIN, e->loc, st, 2, parts);
	return op1(L, BLK_OP_RESHAPE, e->loc, in->type.t, s);
}

/* split(x, n, axis = k): part i is the window from i * (extent / n). */
static void lw_split(Lw *L, const BlkAstExpr *e, const CkInfo *in, BlkValue **out)
{
	BlkValue *x = lw_expr(L, e->args[0].value, in->type.elems[0].t.dtype);
	BlkType t = in->type.elems[0].t;
	int64_t size = 0;
	blk_sym_is_const(t.dims[in->axis], &size);
	for (int i = 0; i < in->type.n; i++)
		out[i] = window(L, e->loc, x, in->axis, lw_i32(L, e->loc, i * size), t.dims[in->axis], t);
}

/* transpose of x by in->perm (attr perm: the operand dim of each result
 * dim, as digits; absent for rank 2's swap), dims in->flip reversed (attr
 * flip, a bit per result dim). */
static BlkValue *lw_transpose(Lw *L, BlkLoc loc, const CkInfo *in, BlkValue *x)
{
	int r = in->type.t.rank, moved = 0;
	for (int d = 0; d < r; d++)
		moved += in->perm[d] != d;
	if (!moved && !in->flip)
		return x;
	BlkValue *v = op1(L, BLK_OP_TRANSPOSE, loc, in->type.t, x);
	if (in->flip)
		blk_op_set_int(L->a, v->def, "flip", in->flip);
	if (r == 2 && moved)
		return v;
	char perm[BLK_MAX_RANK + 1];
	for (int d = 0; d < r; d++)
		perm[d] = (char)('0' + in->perm[d]);
	perm[r] = 0;
	blk_op_set_string(L->a, v->def, "perm", perm);
	return v;
}

/* ---- helpers and associative_scan ---------------------------------------------- */

/* A helper's call: its parameters bound to the arguments' values (a
 * constant or a dtype needs none: each use makes its own), then this
 * call's copy of the body lowered in place.  Its result, if any, is the
 * caller's to lower. */
static void lw_inline(Lw *L, const CkInfo *in)
{
	for (int p = 0; p < in->nbinds; p++) {
		const CkType *t = &in->binds[p]->type;
		if (t->kind == CK_DTYPE || (t->kind == CK_VALUE && t->konst))
			continue;
		in->binds[p]->value = lw_expr(L, in->fargs[p], t->t.dtype);
		name_value(in->binds[p]->value, in->binds[p]->name);
	}
	lw_stmts(L, in->body);
}

/* associative_scan as the cumsum-family op its combine is, or as a
 * `scan` whose region is the combine: 2n scalar arguments, the left
 * elements then the right ones, yielding n. */
static void lw_assoc_scan(Lw *L, const BlkAstExpr *e, const CkInfo *in, BlkValue **out)
{
	int n = in->nbinds / 2;
	const BlkAstExpr *x = pos_arg(e, 1);
	BlkValue **xs = BLK_NEW_N(L->a, BlkValue *, n), **ys = BLK_NEW_N(L->a, BlkValue *, n);
	BlkType *types = BLK_NEW_N(L->a, BlkType, n), *scalars = BLK_NEW_N(L->a, BlkType, n);
	bool tuple = in->type.kind == CK_TUPLE;
	if (tuple)
		lw_multi(L, x, n, NULL, xs);
	else
		xs[0] = lw_expr(L, x, in->type.t.dtype);
	BlkOp *op;
	for (int i = 0; i < n; i++) {
		types[i] = xs[i]->type;
		scalars[i] = blk_type_scalar(types[i].dtype);
	}
	if (in->scan != BLK_OP_SCAN) {
		op = blk_build(&L->b, in->scan, e->loc, 1, xs, 1, types, 0);
	} else {
		op = blk_build(&L->b, BLK_OP_SCAN, e->loc, n, xs, n, types, 1);
		for (int p = 0; p < 2 * n; p++)
			in->binds[p]->value = blk_region_add_arg(L->a, op->regions[0], scalars[p % n],
			                                         in->binds[p]->name);
		BlkBuilder saved = L->b;
		blk_builder_at_end(&L->b, L->a, op->regions[0]);
		lw_stmts(L, in->body);
		if (tuple)
			lw_multi(L, in->body->result, n, scalars, ys);
		else
			ys[0] = lw_as_type(L, in->body->result, &scalars[0]);
		blk_build(&L->b, BLK_OP_YIELD, e->loc, n, ys, 0, NULL, 0);
		L->b = saved;
	}
	blk_op_set_int(L->a, op, "axis", in->axis);
	if (in->reverse)
		blk_op_set_int(L->a, op, "reverse", 1);
	for (int i = 0; i < n; i++)
		out[i] = op->results[i];
}

static BlkValue *lw_call(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	BlkValue *v = NULL;
	if (in->fn) {
		lw_inline(L, in);
		return in->body->result ? lw_expr(L, in->body->result, in->type.t.dtype) : NULL;
	}
	switch (in->builtin) {
	case CK_B_ASSOCIATIVE_SCAN:
		lw_assoc_scan(L, e, in, &v);
		return v;
	case CK_B_ZEROS:
	case CK_B_FULL: return lw_const(L, e->loc, in->type.t, &in->fill);
	case CK_B_IOTA: return op_axis(L, BLK_OP_IOTA, e->loc, in->type.t, NULL, 0);
	case CK_B_MAX:
	case CK_B_MIN:
		if (!in->reduce)
			return lw_elementwise(L, in->builtin == CK_B_MAX ? BLK_OP_MAX : BLK_OP_MIN, e->loc,
			                      in, e->args[0].value, e->args[1].value);
		return lw_reduce(L, e, in);
	case CK_B_SUM: case CK_B_ARGMAX: case CK_B_ARGMIN: return lw_reduce(L, e, in);
	case CK_B_CUMSUM: case CK_B_CUMPROD: case CK_B_CUMMAX: case CK_B_CUMMIN:
		return lw_scan(L, e, in);
	case CK_B_RESHAPE:
		return op1(L, BLK_OP_RESHAPE, e->loc, in->type.t, lw_expr(L, e->args[0].value, in->type.t.dtype));
	case CK_B_POW: return lw_elementwise(L, BLK_OP_POW, e->loc, in, e->args[0].value, e->args[1].value);
	case CK_B_WHERE: return lw_where(L, e, in);
	case CK_B_FMA: case CK_B_CLAMP: return lw_ternary(L, e, in);
	case CK_B_RAND: case CK_B_RANDN: case CK_B_RANDINT: return lw_random(L, e, in);
	case CK_B_ISNAN: case CK_B_ISINF: return lw_float_class(L, e, in);
	case CK_B_DOT: {
		BlkValue *x = lw_expr(L, e->args[0].value, BLK_F32); /* in source order */
		return lw_dot(L, e->loc, in->type.t, x, lw_expr(L, e->args[1].value, BLK_F32));
	}
	case CK_B_TRANSPOSE: case CK_B_SWAPAXES: case CK_B_FLIP:
		return lw_transpose(L, e->loc, in, lw_expr(L, e->args[0].value, in->type.t.dtype));
	case CK_B_EXPAND_DIMS:
		return op_axis(L, BLK_OP_EXPAND_DIMS, e->loc, in->type.t,
		               lw_expr(L, pos_arg(e, 0), in->type.t.dtype), in->axis);
	case CK_B_CDIV: return lw_cdiv(L, e);
	case CK_B_CONCATENATE: case CK_B_STACK: return lw_join(L, e, in);
	case CK_B_INTERLEAVE: return lw_interleave(L, e, in);
	case CK_B_PROGRAM_ID: case CK_B_NUM_PROGRAMS:
		return op_axis(L, blk_ck_builtins[in->builtin].op, e->loc, in->type.t, NULL, in->axis);
	case CK_B_LOAD: return lw_load(L, e, in);
	case CK_B_MY_RANK: case CK_B_WORLD:
		return blk_build1(&L->b, blk_ck_builtins[in->builtin].op, e->loc, in->type.t, 0, NULL);
	case CK_B_ON: return lw_on(L, e);
	case CK_B_SIGNAL_ADD: case CK_B_SIGNAL_SET: case CK_B_SIGNAL_WAIT:
		return lw_signal(L, e, blk_ck_builtins[in->builtin].op);
	case CK_B_RANK_BARRIER: return lw_rank_barrier(L, e);
	case CK_B_ATOMIC_ADD: case CK_B_ATOMIC_MAX: case CK_B_ATOMIC_MIN: case CK_B_ATOMIC_CAS:
		return lw_atomic(L, e, blk_ck_builtins[in->builtin].op);
	default: return lw_math(L, e, in);
	}
}

/* ---- fori_loop ------------------------------------------------------------------ */

static void lw_multi(Lw *L, const BlkAstExpr *e, int n, const BlkType *want, BlkValue **out);

/* The body's next carries, each of its carry's type. */
static void lw_body_result(Lw *L, const BlkAstExpr *res, int n, const BlkType *types,
                           BlkValue **out)
{
	if (n == 1)
		out[0] = lw_as_type(L, res, &types[0]);
	else if (n > 1)
		lw_multi(L, res, n, types, out);
	else if (res)
		lw_expr(L, res, BLK_I32);
}

static void lw_unrolled(Lw *L, const BlkAstExpr *e, const CkInfo *in, int n, const BlkType *types,
                        BlkValue **cur)
{
	for (int64_t i = in->lo; i < in->hi; i++) {
		in->ivar->value = lw_i32(L, e->loc, i);
		for (int c = 0; c < n; c++)
			in->binds[c]->value = cur[c];
		lw_stmts(L, e->body);
		lw_body_result(L, e->body->result, n, types, cur);
	}
}

static void lw_loop(Lw *L, const BlkAstExpr *e, const CkInfo *in, int n, const BlkType *types,
                    BlkValue **cur)
{
	BlkValue **ops = BLK_NEW_N(L->a, BlkValue *, n + 3);
	ops[0] = lw_scalar_i32(L, e->args[0].value);
	ops[1] = lw_scalar_i32(L, e->args[1].value);
	ops[2] = lw_i32(L, e->loc, 1);
	memcpy(ops + 3, cur, sizeof *cur * (size_t)n);
	BlkOp *f = blk_build(&L->b, BLK_OP_FOR, e->loc, n + 3, ops, n, types, 1);
	blk_op_set_int(L->a, f, "unroll", 0);
	in->ivar->value = blk_region_add_arg(L->a, f->regions[0], blk_type_scalar(BLK_I32), e->ivar);
	for (int c = 0; c < n; c++)
		in->binds[c]->value = blk_region_add_arg(L->a, f->regions[0], types[c], e->carries[c]);
	BlkBuilder saved = L->b;
	blk_builder_at_end(&L->b, L->a, f->regions[0]);
	lw_stmts(L, e->body);
	lw_body_result(L, e->body->result, n, types, cur);
	blk_build(&L->b, BLK_OP_YIELD, e->loc, n, cur, 0, NULL, 0);
	L->b = saved;
	for (int c = 0; c < n; c++) {
		cur[c] = f->results[c];
		cur[c]->name = e->carries[c];
	}
}

/* Lowers the loop; out gets its n carries' final values. */
static void lw_fori(Lw *L, const BlkAstExpr *e, BlkValue **out)
{
	CkInfo *in = info(L, e);
	int n = in->nbinds;
	BlkType *types = BLK_NEW_N(L->a, BlkType, n + 1);
	for (int c = 0; c < n; c++)
		types[c] = in->binds[c]->type.t;
	const BlkAstExpr *init = pos_arg(e, 2);
	if (n == 1)
		out[0] = lw_as_type(L, init, &types[0]);
	else if (n > 1)
		lw_multi(L, init, n, types, out);
	for (int c = 0; c < n; c++)
		if (!out[c]->name)
			out[c]->name = e->carries[c];
	if (in->unroll)
		lw_unrolled(L, e, in, n, types, out);
	else
		lw_loop(L, e, in, n, types, out);
}

/* A tuple-valued expression (a tuple or a loop with several carries). */
static void lw_multi(Lw *L, const BlkAstExpr *e, int n, const BlkType *want, BlkValue **out)
{
	if (e->kind == BLK_AST_FORI) {
		lw_fori(L, e, out);
		return;
	}
	if (e->kind == BLK_AST_CALL && info(L, e)->builtin == CK_B_SPLIT) {
		lw_split(L, e, info(L, e), out);
		return;
	}
	if (e->kind == BLK_AST_CALL && (info(L, e)->builtin == CK_B_PHILOX || info(L, e)->builtin == CK_B_RANDINT4X)) {
		lw_philox(L, e, info(L, e), out);
		return;
	}
	if (e->kind == BLK_AST_CALL && info(L, e)->builtin == CK_B_ASSOCIATIVE_SCAN) {
		lw_assoc_scan(L, e, info(L, e), out);
		return;
	}
	if (e->kind == BLK_AST_CALL && info(L, e)->fn) { /* a helper giving a tuple */
		lw_inline(L, info(L, e));
		lw_multi(L, info(L, e)->body->result, n, want, out);
		return;
	}
	if (e->kind != BLK_AST_TUPLE || e->nelems != n)
		blk_die("lower_ast: a %d-tuple expected", n);
	info(L, e);
	for (int i = 0; i < n; i++) {
		CkInfo *in = info(L, e->elems[i]);
		out[i] = want ? lw_as_type(L, e->elems[i], &want[i]) : lw_expr(L, e->elems[i], in->type.t.dtype);
	}
}

/* ---- expressions ----------------------------------------------------------------- */

static BlkValue *lw_name(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	if (in->bind->kind == CK_BIND_SIZE) {
		BlkValue *v = blk_build1(&L->b, BLK_OP_SIZE, e->loc, blk_type_scalar(BLK_I32), 0, NULL);
		blk_op_set_string(L->a, v->def, "name", in->bind->name);
		return v;
	}
	if (!in->bind->value)
		blk_die("lower_ast: `%s` has no value", in->bind->name);
	return in->bind->value;
}

static BlkValue *lw_astype(Lw *L, const BlkAstExpr *e, const CkInfo *in)
{
	CkInfo *x = info(L, e->lhs);
	BlkValue *v = lw_expr(L, e->lhs, x->type.t.dtype);
	if (v->type.dtype == in->type.t.dtype)
		return v;
	return op1(L, BLK_OP_CAST, e->loc, in->type.t, v);
}

static BlkValue *lw_expr(Lw *L, const BlkAstExpr *e, BlkDType want)
{
	CkInfo *in = info(L, e);
	BlkValue *v = NULL;
	if (in->type.kind == CK_VALUE && in->type.konst)
		return lw_const(L, e->loc, blk_type_scalar(in->type.weak ? want : in->type.t.dtype), &in->type);
	switch (e->kind) {
	case BLK_AST_NAME: return lw_name(L, e, in);
	case BLK_AST_UNARY: return lw_unary(L, e, in);
	case BLK_AST_BINARY: return lw_binary(L, e, in);
	case BLK_AST_CALL: return lw_call(L, e, in);
	case BLK_AST_INDEX:
	case BLK_AST_AT: return lw_index(L, e, in);
	case BLK_AST_ASTYPE: return lw_astype(L, e, in);
	case BLK_AST_TRANSPOSE:
		return lw_transpose(L, e->loc, in, lw_expr(L, e->lhs, in->type.t.dtype));
	case BLK_AST_FORI:
		if (in->nbinds > 1)
			blk_die("lower_ast: a loop with %d carries used as one value", in->nbinds);
		lw_fori(L, e, &v);
		return v;
	default:
		blk_die("lower_ast: cannot lower a %s expression", blk_ast_expr_kind_name(e->kind));
	}
}

/* ---- statements -------------------------------------------------------------------- */

static void name_value(BlkValue *v, const char *name)
{
	if (v && !v->name)
		v->name = name;
}

static void lw_let(Lw *L, const BlkAstStmt *s)
{
	CkInfo *in = info(L, s);
	if (s->tuple_pattern && (s->nnames > 1 || s->value->kind != BLK_AST_TUPLE)) {
		BlkValue **vals = BLK_NEW_N(L->a, BlkValue *, s->nnames);
		lw_multi(L, s->value, s->nnames, NULL, vals);
		for (int i = 0; i < s->nnames; i++)
			name_value(in->binds[i]->value = vals[i], s->names[i]);
		return;
	}
	const BlkAstExpr *e = s->tuple_pattern ? s->value->elems[0] : s->value; /* `let (a,) = (x,)` */
	CkInfo *ve = info(L, e);
	if (ve->type.konst) /* a constant: every use makes its own const */
		return;
	in->binds[0]->value = lw_expr(L, e, ve->type.t.dtype);
	name_value(in->binds[0]->value, s->names[0]);
}

static void lw_store(Lw *L, const BlkAstStmt *s)
{
	CkInfo *in = info(L, s);
	BlkValue *ref = lw_expr(L, s->target, BLK_I32), *ops[2 + BLK_MAX_RANK];
	int n = access_operands(L, ref, &in->acc, ops);
	BlkType t = accessed(ref, &in->acc);
	ops[n++] = lw_as_type(L, s->value, &t);
	BlkOp *op = blk_build(&L->b, BLK_OP_STORE, s->loc, n, ops, 0, NULL, 0);
	blk_op_set_index(L->a, op, "idx", in->acc.rank, in->acc.idx);
}

static void lw_in_region(Lw *L, BlkRegion *r, const BlkAstBlock *blk)
{
	BlkBuilder saved = L->b;
	blk_builder_at_end(&L->b, L->a, r);
	lw_stmts(L, blk);
	L->b = saved;
}

static void lw_when(Lw *L, const BlkAstStmt *s)
{
	BlkValue *c = lw_as(L, s->value, BLK_BOOL, 0, NULL);
	BlkOp *op = blk_build(&L->b, BLK_OP_IF, s->loc, 1, &c, 0, NULL, 2);
	lw_in_region(L, op->regions[0], s->then);
	if (s->els)
		lw_in_region(L, op->regions[1], s->els);
}

static void lw_scoped(Lw *L, const BlkAstStmt *s)
{
	CkInfo *in = info(L, s);
	BlkOp *op = blk_build(&L->b, BLK_OP_SCOPED, s->loc, 0, NULL, 0, NULL, 1);
	for (int i = 0; i < in->nbinds; i++)
		in->binds[i]->value = blk_region_add_arg(L->a, op->regions[0], in->binds[i]->type.t,
		                                         in->binds[i]->name);
	lw_in_region(L, op->regions[0], s->then);
}

static void lw_print(Lw *L, const BlkAstStmt *s)
{
	BlkValue **ops = BLK_NEW_N(L->a, BlkValue *, s->nargs + 1);
	for (int i = 0; i < s->nargs; i++)
		ops[i] = lw_expr(L, s->args[i], info(L, s->args[i])->type.t.dtype);
	BlkOp *op = blk_build(&L->b, BLK_OP_PRINT, s->loc, s->nargs, ops, 0, NULL, 0);
	blk_op_set_string(L->a, op, "fmt", s->str);
}

static void lw_expr_stmt(Lw *L, const BlkAstStmt *s)
{
	CkInfo *in = info(L, s->value);
	if (in->type.konst)
		return;
	if (in->type.kind == CK_TUPLE && s->value->kind == BLK_AST_FORI)
		lw_fori(L, s->value, BLK_NEW_N(L->a, BlkValue *, in->type.n));
	else if (in->type.kind == CK_TUPLE)
		lw_multi(L, s->value, in->type.n, NULL, BLK_NEW_N(L->a, BlkValue *, in->type.n));
	else
		lw_expr(L, s->value, in->type.t.dtype);
}

static void lw_stmts(Lw *L, const BlkAstBlock *blk)
{
	for (int i = 0; i < blk->nstmts; i++) {
		const BlkAstStmt *s = blk->stmts[i];
		switch (s->kind) {
		case BLK_AST_LET: lw_let(L, s); break;
		case BLK_AST_STORE: lw_store(L, s); break;
		case BLK_AST_WHEN: lw_when(L, s); break;
		case BLK_AST_SCOPED: lw_scoped(L, s); break;
		case BLK_AST_PRINT: lw_print(L, s); break;
		default: lw_expr_stmt(L, s); break;
		}
	}
}

/* ---- kernels ------------------------------------------------------------------------ */

/* The param's index map region: grid indices (then, but for a prefetch
 * param, the prefetch arrays) -> block indices (0 without one). */
static BlkRegion *lw_index_map(Lw *L, const BlkAstParam *p, int pi)
{
	BlkRegion *r = blk_region_create(L->a);
	BlkValue *ys[BLK_MAX_RANK];
	int rank = L->k->params[pi].rank;
	for (int i = 0; i < L->k->grid_rank; i++) {
		BlkValue *g = blk_region_add_arg(L->a, r, blk_type_scalar(BLK_I32),
		                                 p->has_index ? p->index_params[i] : NULL);
		if (p->has_index)
			L->k->mapbinds[pi][i]->value = g;
	}
	for (int q = 0; q < L->k->nparams && !L->k->params[pi].prefetch; q++)
		if (L->k->params[q].prefetch)
			L->k->pbinds[q]->value = blk_region_add_arg(L->a, r, L->k->pbinds[q]->type.t,
			                                            L->k->params[q].name);
	blk_builder_at_end(&L->b, L->a, r);
	for (int d = 0; d < rank; d++)
		ys[d] = p->has_index ? lw_scalar_i32(L, p->index_map[d]) : lw_i32(L, p->loc, 0);
	blk_build(&L->b, BLK_OP_YIELD, p->loc, rank, ys, 0, NULL, 0);
	return r;
}

static void lw_signature(Lw *L, BlkKernel *K)
{
	const CkKernel *k = L->k;
	K->nparams = k->nparams;
	K->params = BLK_NEW_N(L->a, BlkParam, k->nparams + 1);
	memcpy(K->params, k->params, sizeof *K->params * (size_t)k->nparams);
	for (int i = 0; i < k->nparams; i++)
		if (K->params[i].access != BLK_ACCESS_SCRATCH)
			K->params[i].index_map = lw_index_map(L, &k->ast->params[i], i);
	K->nsizes = k->nsizes;
	K->sizes = k->sizes;
	K->size_dyn = k->size_dyn;
	K->grid_rank = k->grid_rank;
	memcpy(K->grid, k->grid, sizeof K->grid);
	memcpy(K->grid_seq, k->grid_seq, sizeof K->grid_seq);
	K->ncparams = k->ncparams;
	K->cparams = k->cparams;
	K->num_warps = k->num_warps;
	K->num_stages = k->num_stages;
}

static void lw_kernel(Lw *L, BlkModule *m, const CkKernel *k)
{
	BlkKernel *K = blk_kernel_add(m, k->ast->name, k->ast->name_loc);
	L->k = k;
	lw_signature(L, K);
	for (int i = 0; i < k->nparams; i++)
		k->pbinds[i]->value = blk_region_add_arg(L->a, K->body, k->pbinds[i]->type.t,
		                                         k->params[i].name);
	blk_builder_at_end(&L->b, L->a, K->body);
	lw_stmts(L, k->ast->body);
}

BlkModule *blk_lower_ast(BlkArena *a, const BlkCkFile *cf)
{
	BlkModule *m = blk_module_create(a);
	Lw L = { .a = a, .map = &cf->map };
	for (int i = 0; i < cf->nkernels; i++)
		lw_kernel(&L, m, &cf->kernels[i]);
	return m;
}
