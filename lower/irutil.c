/* irutil.c - small IR helpers the passes of lower/ share. */
#include "lower_int.h"

#include <float.h>
#include <string.h>

bool blk_lower_const_int(const BlkValue *v, int64_t *out)
{
	if (!v->def || v->def->kind != BLK_OP_CONST || v->type.rank != 0)
		return false;
	const BlkAttr *a = blk_op_attr(v->def, "value");
	if (!a || a->kind != BLK_ATTR_INT)
		return false;
	*out = a->i;
	return true;
}

int64_t blk_lower_dim(const BlkSym *s)
{
	int64_t v;
	if (!blk_sym_is_const(s, &v))
		blk_die("lower: a dim is still symbolic after specialize");
	return v;
}

void blk_lower_move_op(BlkOp *op, BlkRegion *r)
{
	blk_op_erase(op); /* only unlinks: the results keep their uses */
	op->parent = r;
	op->next = NULL;
	op->prev = r->last;
	if (r->last)
		r->last->next = op;
	else
		r->first = op;
	r->last = op;
}

void blk_lower_walk(BlkRegion *r, void (*f)(void *ctx, BlkOp *op), void *ctx)
{
	for (BlkOp *op = r ? r->first : NULL, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			blk_lower_walk(op->regions[i], f, ctx);
		f(ctx, op);
	}
}

const BlkLayout *blk_lower_scalar_layout(LowerCtx *c)
{
	if (c->scalar.nthreads != c->nthreads)
		c->scalar = blk_layout_blocked(0, NULL, BLK_I32, c->nthreads);
	return &c->scalar;
}


static BlkOp *dot_behind(const BlkValue *v, const BlkRegion *r, int depth)
{
	BlkOp *d = v->def;
	if (!d || depth > BLK_LOWER_CHAIN_DEPTH || (r && d->parent != r))
		return NULL;
	if (d->kind == BLK_OP_DOT)
		return d;
	if (!(blk_op_flags(d->kind) & BLK_OPF_ELEMENTWISE))
		return NULL;
	for (int i = 0; i < d->noperands; i++) {
		BlkOp *dot = d->operands[i]->type.rank == v->type.rank ? dot_behind(d->operands[i], r, depth + 1) : NULL;
		if (dot)
			return dot;
	}
	return NULL;
}

BlkOp *blk_lower_dot_behind(const BlkValue *v, const BlkRegion *r)
{
	return dot_behind(v, r, 0);
}

/* transformed(): *loads counts the loads reached; *budget bounds the
 * walk (a DAG's shared operands are walked again; an unpacking's shift
 * amounts alone are a dozen ops deep). */
static bool transformed(const BlkValue *v, const BlkRegion *r, int depth, int *loads, int *budget)
{
	const BlkOp *d = v->def;
	if (!d || d->parent != r)
		return true; /* from outside the loop (or the iv): invariant here */
	if (--*budget < 0 || depth > 64)
		return false;
	if (d->kind == BLK_OP_LOAD) {
		*loads += 1;
		return true;
	}
	if (!(blk_op_flags(d->kind) & BLK_OPF_PURE) || d->kind == BLK_OP_DOT || d->nregions)
		return false;
	for (int i = 0; i < d->noperands; i++)
		if (!transformed(d->operands[i], r, depth + 1, loads, budget))
			return false;
	return true;
}

bool blk_lower_transformed_load(const BlkValue *v, const BlkRegion *r)
{
	const BlkOp *d = v->def;
	int loads = 0, budget = 256;
	if (d && d->parent == r && blk_transpose_plain(d)) /* B of `x @ w.T`, w computed */
		d = (v = d->operands[0])->def;
	if (!d || d->parent != r || d->kind == BLK_OP_LOAD)
		return false;
	return transformed(v, r, 0, &loads, &budget) && loads > 0;
}

BlkOp *blk_lower_stage_site(LowerCtx *c, BlkOp *dot)
{
	BlkOp *site = dot;
	for (BlkOp *op = dot; op->parent && op->parent != c->k->body;) {
		op = op->parent->parent;
		if (!op)
			break;
		if (op->kind == BLK_OP_FOR)
			site = op;
	}
	return site;
}

/* op unlinked, then linked beside pos: after it, or before. */
static void move_beside(BlkOp *op, BlkOp *pos, bool after)
{
	BlkRegion *r = pos->parent;
	blk_op_erase(op); /* only unlinks: the results keep their uses */
	op->parent = r;
	op->prev = after ? pos : pos->prev;
	op->next = after ? pos->next : pos;
	if (op->prev)
		op->prev->next = op;
	else
		r->first = op;
	if (op->next)
		op->next->prev = op;
	else
		r->last = op;
}

void blk_lower_move_after(BlkOp *op, BlkOp *pos)
{
	move_beside(op, pos, true);
}

void blk_lower_move_before(BlkOp *op, BlkOp *pos)
{
	move_beside(op, pos, false);
}

void blk_lower_move_to_end(BlkOp *op, BlkRegion *r)
{
	for (BlkOp *next; op; op = next) {
		next = op->next;
		blk_op_erase(op); /* only unlinks */
		op->parent = r;
		op->prev = r->last;
		op->next = NULL;
		if (r->last)
			r->last->next = op;
		else
			r->first = op;
		r->last = op;
	}
}

int blk_lower_ref_param(const BlkValue *ref)
{
	while (ref->def && ref->def->kind == BLK_OP_VIEW)
		ref = ref->def->operands[0];
	return ref->def && ref->def->kind == BLK_OP_BLOCK_REF ? (int)blk_op_int(ref->def, "param", -1) : -1;
}

BlkValue *blk_lower_slot_view(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *buf, BlkValue *slot)
{
	const BlkType *bt = &buf->type;
	BlkType t = blk_type_ref(bt->dtype, bt->rank - 1, bt->dims + 1, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = *bt->layout;
	l->rank = bt->rank - 1;
	for (int d = 0; d < l->rank; d++) {
		l->shape[d] = l->shape[d + 1];
		l->pad[d] = l->pad[d + 1];
		l->sstride[d] = l->sstride[d + 1];
	}
	t.layout = l;
	BlkValue *ops[2] = { buf, slot };
	BlkValue *v = blk_build1(b, BLK_OP_VIEW, loc, t, 2, ops);
	BlkIndex idx[BLK_MAX_RANK] = { { BLK_INDEX_SCALAR, NULL, 0 } };
	for (int d = 1; d < bt->rank; d++)
		idx[d] = (BlkIndex){ BLK_INDEX_FULL, NULL, 0 };
	blk_op_set_index(c->a, v->def, "idx", bt->rank, idx);
	return v;
}

BlkValue *blk_lower_trans_view(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *ref)
{
	const BlkType *rt = &ref->type;
	const BlkSym *dims[2] = { rt->dims[1], rt->dims[0] };
	BlkType t = blk_type_ref(rt->dtype, 2, dims, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = blk_layout_shared_swap(rt->layout, 0, 1);
	t.layout = l;
	return blk_build1(b, BLK_OP_TRANS_VIEW, loc, t, 1, &ref);
}

/* ---- dynamic sizes ------------------------------------------------------------- */

BlkSymEnv blk_lower_dyn_env(LowerCtx *c)
{
	const BlkKernel *k = c->k;
	BlkSymEnv env = { 0, BLK_NEW_N(c->a, const char *, k->nsizes + 1),
	                  BLK_NEW_N(c->a, int64_t, k->nsizes + 1) };
	for (int i = 0; k->size_dyn && i < k->nsizes; i++)
		if (k->size_dyn[i] > 0) {
			((const char **)env.names)[env.n] = k->sizes[i];
			((int64_t *)env.values)[env.n++] = k->size_dyn[i];
		}
	return env;
}

int64_t blk_lower_divisor(LowerCtx *c, const BlkSym *s)
{
	BlkSymEnv env = blk_lower_dyn_env(c);
	return blk_sym_divisor(s, &env);
}

bool blk_lower_is_dynamic(const LowerCtx *c)
{
	for (int i = 0; c->k->size_dyn && i < c->k->nsizes; i++)
		if (c->k->size_dyn[i] > 0)
			return true;
	return false;
}

BlkValue *blk_lower_build_sym(BlkBuilder *b, BlkLoc loc, const BlkSym *s)
{
	static const BlkOpKind ops[] = {
		[BLK_SYM_ADD] = BLK_OP_ADD, [BLK_SYM_SUB] = BLK_OP_SUB, [BLK_SYM_MUL] = BLK_OP_MUL,
		[BLK_SYM_FLOORDIV] = BLK_OP_FLOORDIV, [BLK_SYM_MOD] = BLK_OP_MOD,
		[BLK_SYM_MIN] = BLK_OP_MIN, [BLK_SYM_MAX] = BLK_OP_MAX,
	};
	BlkType i32 = blk_type_scalar(BLK_I32), b1 = blk_type_scalar(BLK_BOOL);
	if (s->kind == BLK_SYM_CONST)
		return blk_build_const_int(b, loc, i32, s->value);
	if (s->kind == BLK_SYM_VAR) {
		BlkValue *v = blk_build1(b, BLK_OP_SIZE, loc, i32, 0, NULL);
		blk_op_set_string(b->arena, v->def, "name", s->name);
		return v;
	}
	BlkValue *x[2] = { blk_lower_build_sym(b, loc, s->a), blk_lower_build_sym(b, loc, s->b) };
	int64_t d;
	if (s->kind != BLK_SYM_CDIV)
		return blk_build1(b, ops[s->kind], loc, i32, 2, x);
	if (blk_sym_is_const(s->b, &d) && d > 0) { /* a // b + (a % b != 0), as lower_ast.c */
		BlkValue *q = blk_build1(b, BLK_OP_FLOORDIV, loc, i32, 2, x);
		BlkValue *r[2] = { blk_build1(b, BLK_OP_MOD, loc, i32, 2, x),
		                   blk_build_const_int(b, loc, i32, 0) };
		BlkValue *ne = blk_build1(b, BLK_OP_NE, loc, b1, 2, r);
		BlkValue *up = blk_build1(b, BLK_OP_CAST, loc, i32, 1, &ne);
		BlkValue *sum[2] = { q, up };
		return blk_build1(b, BLK_OP_ADD, loc, i32, 2, sum);
	}
	x[0] = blk_build1(b, BLK_OP_NEG, loc, i32, 1, &x[0]);
	BlkValue *q = blk_build1(b, BLK_OP_FLOORDIV, loc, i32, 2, x);
	return blk_build1(b, BLK_OP_NEG, loc, i32, 1, &q);
}

bool blk_lower_within(const BlkRegion *r, const BlkValue *v)
{
	for (const BlkRegion *q = v->def ? v->def->parent : v->owner; q; q = q->parent ? q->parent->parent : NULL)
		if (q == r)
			return true;
	return false;
}

bool blk_lower_scaled(const BlkValue *v, BlkValue **x, BlkValue **c)
{
	const BlkOp *d = v->def;
	if (!d || d->kind != BLK_OP_MUL || v->type.dtype != BLK_F32)
		return false;
	for (int i = 0; i < 2; i++) {
		const BlkOp *b = d->operands[i]->def;
		if (b && b->kind == BLK_OP_BROADCAST && b->operands[0]->type.rank == 0) {
			*c = b->operands[0];
			*x = d->operands[1 - i];
			return true;
		}
	}
	return false;
}

static bool positive(const BlkValue *c, int depth)
{
	const BlkOp *d = c->def;
	if (!d || depth > 8 || c->type.rank != 0)
		return false;
	switch (d->kind) {
	case BLK_OP_CONST: { /* as stored: an f32 (1e-50 is 0 there), or an i32 */
		const BlkAttr *a = blk_op_attr(d, "value");
		float f = a && a->kind == BLK_ATTR_FLOAT ? (float)a->f : 0;
		if (c->type.dtype == BLK_F32)
			return a && a->kind == BLK_ATTR_FLOAT && f > 0 && f <= FLT_MAX;
		return c->type.dtype == BLK_I32 && a && a->kind == BLK_ATTR_INT && a->i > 0;
	}
	case BLK_OP_CAST: /* to f32: no positive value of i32, f16 or bf16 rounds to 0 */
		return c->type.dtype == BLK_F32 && positive(d->operands[0], depth + 1);
	case BLK_OP_SQRT:
	case BLK_OP_RSQRT:
		return positive(d->operands[0], depth + 1);
	default:
		return false;
	}
}

bool blk_lower_positive(const BlkValue *c)
{
	return positive(c, 0);
}

bool blk_lower_splat_int(const BlkValue *v, int64_t *k)
{
	while (v->def && v->def->kind == BLK_OP_BROADCAST)
		v = v->def->operands[0];
	const BlkAttr *a = v->def && v->def->kind == BLK_OP_CONST ? blk_op_attr(v->def, "value") : NULL;
	if (!a || a->kind != BLK_ATTR_INT)
		return false;
	*k = a->i;
	return true;
}

static void fold_logic_op(BlkRegion *top, BlkOp *op)
{
	int64_t k;
	if (op->kind == BLK_OP_SELECT && blk_lower_splat_int(op->operands[0], &k)) {
		blk_replace_uses(top, op->results[0], op->operands[k ? 1 : 2]);
		blk_op_erase(op);
		return;
	}
	if ((op->kind != BLK_OP_AND && op->kind != BLK_OP_OR) || op->results[0]->type.dtype != BLK_BOOL)
		return;
	for (int i = 0; i < 2; i++) {
		if (!blk_lower_splat_int(op->operands[i], &k))
			continue;
		bool absorbs = (op->kind == BLK_OP_OR) == (k != 0); /* x || true, x && false */
		blk_replace_uses(top, op->results[0], op->operands[absorbs ? i : 1 - i]);
		blk_op_erase(op);
		return;
	}
}

static void fold_logic_in(BlkRegion *top, BlkRegion *r)
{
	for (BlkOp *op = r->first, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			fold_logic_in(top, op->regions[i]);
		fold_logic_op(top, op);
	}
}

void blk_lower_fold_logic(BlkRegion *r)
{
	fold_logic_in(r, r);
}

bool blk_lower_tma_array(LowerCtx *c, int pi, int max_rank, bool trans)
{
	if (c->opt->no_tma || strcmp(c->arch, "sm_90a") != 0 || pi < 0)
		return false;
	const BlkParam *p = &c->k->params[pi];
	const BlkLaunchArg *g = blk_lower_ptr_arg(c, pi);
	int es = blk_dtype_size(p->dtype), R = p->rank, inner = R - 1 - trans, rows = blk_lower_tma_rows(p);
	if (R < 2 || R > max_rank || p->squeezed[rows] || p->squeezed[R - 1] || g->strides[inner] != 1 ||
	    g->align < 16 || (rows != R - 2 && (trans || max_rank <= 3)))
		return false;
	for (int d = 0; d < R; d++) {
		/* every dim but the inner one a positive multiple of 16 bytes
		 * apart: a stride compiled in, or the class "a positive multiple
		 * of 16" of a dynamic kernel's argument (a static kernel's negative
		 * stride is a real one, passed as an argument too: no TMA) */
		int64_t st = g->strides[d], v;
		bool ok = d == inner || (st > 0 ? (st * es) % 16 == 0 : st == -16 && blk_lower_is_dynamic(c));
		if (!ok || (blk_sym_is_const(p->shape[d], &v) && v > INT32_MAX) || (d < R - 1 && d != rows && !p->squeezed[d]))
			return false;
	}
	return true;
}

int blk_lower_tma_rows(const BlkParam *p)
{
	for (int d = p->rank - 2; d >= 0; d--)
		if (!p->squeezed[d])
			return d;
	return p->rank - 2;
}

int blk_lower_programs_at(const BlkOp *op)
{
	for (const BlkRegion *r = op->parent; r && r->parent; r = r->parent->parent)
		if (r->parent->kind == BLK_OP_WARP_SPECIALIZE && r == r->parent->regions[0])
			return (int)blk_op_int(r->parent, "programs", 1);
	return 1;
}

static bool depends(const BlkValue *v, const BlkValue *on, int depth)
{
	if (v == on)
		return true;
	if (!v->def || depth > 64)
		return false;
	for (int i = 0; i < v->def->noperands; i++)
		if (depends(v->def->operands[i], on, depth + 1))
			return true;
	return false;
}

bool blk_lower_depends(const BlkValue *v, const BlkValue *on)
{
	return depends(v, on, 0);
}

static bool from_op(BlkArena *a, BlkPtrMap *seen, const BlkValue *v, BlkOpKind kind, int axis)
{
	BlkOp *d = v->def;
	if (!d || blk_pmap_get(seen, d))
		return false;
	blk_pmap_put(a, seen, d, d);
	if (d->kind == kind)
		return axis < 0 || blk_op_int(d, "axis", 0) == axis;
	for (int i = 0; i < d->noperands; i++)
		if (from_op(a, seen, d->operands[i], kind, axis))
			return true;
	return false;
}

bool blk_lower_computed_from(BlkArena *a, const BlkValue *v, BlkOpKind kind, int axis)
{
	BlkPtrMap seen = { 0 };
	return from_op(a, &seen, v, kind, axis);
}

BlkLayout blk_lower_copy_layout(const LowerCtx *c, const BlkOp *copy, bool across)
{
	const BlkType *t = &copy->operands[0]->type;
	int shape[2] = { (int)blk_lower_dim(t->dims[0]), (int)blk_lower_dim(t->dims[1]) };
	int threads = (int)blk_op_int(copy, "threads", c->nthreads);
	return across ? blk_layout_copy_across(2, shape, t->dtype, threads) : blk_layout_copy(2, shape, t->dtype, threads);
}

int blk_lower_sms(const LowerCtx *c)
{
	return c->opt->num_sms > 0 ? c->opt->num_sms : BLK_LOWER_SMS;
}

bool blk_lower_epilogue_tile(const BlkKernel *k, int64_t elements)
{
	for (const BlkOp *op = k->body->first; op; op = op->next) {
		const BlkType *t = op->kind == BLK_OP_LOAD ? &op->results[0]->type : NULL;
		if (t && t->rank == 2 && blk_lower_dim(t->dims[0]) * blk_lower_dim(t->dims[1]) >= elements)
			return true;
	}
	return false;
}

static bool same_attr(const BlkAttr *x, const BlkAttr *y)
{
	if (strcmp(x->name, y->name) != 0 || x->kind != y->kind)
		return false;
	switch (x->kind) {
	case BLK_ATTR_INT: return x->i == y->i;
	case BLK_ATTR_FLOAT: return memcmp(&x->f, &y->f, sizeof x->f) == 0;
	case BLK_ATTR_STRING: return strcmp(x->s, y->s) == 0;
	case BLK_ATTR_DTYPE: return x->dtype == y->dtype;
	case BLK_ATTR_INDEX:
		if (x->index.n != y->index.n)
			return false;
		for (int i = 0; i < x->index.n; i++) {
			const BlkIndex *a = &x->index.v[i], *b = &y->index.v[i];
			if (a->kind != b->kind || blk_index_step(a) != blk_index_step(b) ||
			    (a->kind == BLK_INDEX_DS && !blk_sym_equal(a->size, b->size)))
				return false;
		}
		return true;
	default: return false;
	}
}

/* Ops a and b have the kind, attributes and result types of one another. */
bool blk_lower_alike(const BlkOp *a, const BlkOp *b)
{
	if (a->kind != b->kind || a->noperands != b->noperands || a->nresults != b->nresults || a->nattrs != b->nattrs ||
	    a->nregions || b->nregions)
		return false;
	for (int i = 0; i < a->nresults; i++)
		if (!blk_type_equal(&a->results[i]->type, &b->results[i]->type))
			return false;
	for (int i = 0; i < a->nattrs; i++)
		if (!same_attr(&a->attrs[i], &b->attrs[i]))
			return false;
	return true;
}

/* a and b are the same value: one value, or results of alike pure ops on
 * the same values (`k * BK` written twice); depth bounds the walk. */
bool blk_lower_equivalent(const BlkValue *a, const BlkValue *b, int depth)
{
	if (a == b)
		return true;
	const BlkOp *x = a->def, *y = b->def;
	if (!x || !y || depth == 0 || a->index != b->index || !(blk_op_flags(x->kind) & BLK_OPF_PURE) || !blk_lower_alike(x, y))
		return false;
	for (int i = 0; i < x->noperands; i++)
		if (!blk_lower_equivalent(x->operands[i], y->operands[i], depth - 1))
			return false;
	return true;
}
