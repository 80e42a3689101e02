/* specialize.c - the kernel at one launch: every shape a constant.
 *
 * Requires: a verified clone and the launch sizes.  Produces: every type,
 * param shape, block dim, grid extent and ds size a constant; `size` and
 * `num_programs` ops replaced by constants; constant i32 scalar arithmetic
 * folded (so ds starts such as k * 32 keep only what depends on k).
 */
#include "lower_int.h"

#include <string.h>

static const BlkSym *subst(LowerCtx *c, const BlkSym *s, bool *ok)
{
	if (!s)
		return s;
	const BlkSym *r = blk_sym_subst(c->a, s, &c->env);
	int64_t v;
	if (!blk_sym_is_const(r, &v) || v < 0 || v > INT32_MAX)
		*ok = false;
	return r;
}

static void subst_type(LowerCtx *c, BlkType *t, bool *ok)
{
	for (int d = 0; d < t->rank; d++)
		t->dims[d] = subst(c, t->dims[d], ok);
}

static void subst_index_attr(LowerCtx *c, BlkOp *op, bool *ok)
{
	for (int i = 0; i < op->nattrs; i++) {
		BlkAttr *at = &op->attrs[i];
		if (at->kind != BLK_ATTR_INDEX)
			continue;
		BlkIndex *v = BLK_NEW_N(c->a, BlkIndex, at->index.n + 1);
		for (int j = 0; j < at->index.n; j++) {
			v[j] = at->index.v[j];
			v[j].size = subst(c, v[j].size, ok);
		}
		at->index.v = v;
	}
}

static void subst_region(LowerCtx *c, BlkRegion *r, bool *ok)
{
	for (int i = 0; r && i < r->nargs; i++)
		subst_type(c, &r->args[i]->type, ok);
	for (BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			subst_type(c, &op->results[i]->type, ok);
		subst_index_attr(c, op, ok);
		for (int i = 0; i < op->nregions; i++)
			subst_region(c, op->regions[i], ok);
	}
}

static void subst_kernel(LowerCtx *c, bool *ok)
{
	BlkKernel *k = c->k;
	for (int a = 0; a < k->grid_rank; a++)
		k->grid[a] = subst(c, k->grid[a], ok);
	for (int i = 0; i < k->nparams; i++) {
		BlkParam *p = &k->params[i];
		for (int d = 0; d < p->rank; d++) {
			p->shape[d] = subst(c, p->shape[d], ok);
			p->block[d] = subst(c, p->block[d], ok);
		}
		subst_region(c, p->index_map, ok);
	}
	subst_region(c, k->body, ok);
}

/* ---- folding -------------------------------------------------------------- */

/* The value of a foldable op, or false. */
static bool fold_value(LowerCtx *c, BlkOp *op, int64_t *out)
{
	const BlkAttr *at;
	int64_t x, y;
	switch (op->kind) {
	case BLK_OP_SIZE:
		at = blk_op_attr(op, "name");
		for (int i = 0; at && i < c->env.n; i++)
			if (strcmp(c->env.names[i], at->s) == 0)
				return *out = c->env.values[i], true;
		return false;
	case BLK_OP_NUM_PROGRAMS:
		x = blk_op_int(op, "axis", 0);
		*out = x < c->k->grid_rank ? blk_lower_dim(c->k->grid[x]) : 1;
		return true;
	case BLK_OP_NEG:
		if (op->results[0]->type.rank != 0 || !blk_lower_const_int(op->operands[0], &x))
			return false;
		return *out = (int32_t)-x, true;
	case BLK_OP_CAST: /* bool -> i32 (cdiv's rounding up, frontend/lower_ast.c) */
		if (op->results[0]->type.rank != 0 || op->results[0]->type.dtype != BLK_I32 ||
		    op->operands[0]->type.dtype != BLK_BOOL || !blk_lower_const_int(op->operands[0], &x))
			return false;
		return *out = x != 0, true;
	default:
		break;
	}
	if (op->noperands != 2 || op->results[0]->type.rank != 0 ||
	    !blk_lower_const_int(op->operands[0], &x) || !blk_lower_const_int(op->operands[1], &y))
		return false;
	if (op->results[0]->type.dtype == BLK_BOOL && op->operands[0]->type.dtype == BLK_I32) {
		switch (op->kind) { /* i32 comparisons */
		case BLK_OP_EQ: *out = x == y; return true;
		case BLK_OP_NE: *out = x != y; return true;
		case BLK_OP_LT: *out = x < y; return true;
		case BLK_OP_LE: *out = x <= y; return true;
		case BLK_OP_GT: *out = x > y; return true;
		case BLK_OP_GE: *out = x >= y; return true;
		default: return false;
		}
	}
	if (op->results[0]->type.dtype != BLK_I32)
		return false;
	switch (op->kind) {
	case BLK_OP_ADD: *out = (int32_t)(x + y); return true;
	case BLK_OP_SUB: *out = (int32_t)(x - y); return true;
	case BLK_OP_MUL: *out = (int32_t)(x * y); return true;
	case BLK_OP_FLOORDIV: *out = blk_i32_floordiv((int32_t)x, (int32_t)y); return true;
	case BLK_OP_MOD: *out = blk_i32_mod((int32_t)x, (int32_t)y); return true;
	case BLK_OP_MIN: *out = x < y ? x : y; return true;
	case BLK_OP_MAX: *out = x > y ? x : y; return true;
	default: return false;
	}
}

typedef struct FoldCtx {
	LowerCtx *c;
	BlkRegion *top;
} FoldCtx;

static void fold_op(void *ctx, BlkOp *op)
{
	FoldCtx *f = ctx;
	LowerCtx *c = f->c;
	int64_t v;
	if (op->nresults != 1 || !fold_value(c, op, &v))
		return;
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkValue *k = blk_build_const_int(&b, op->loc, op->results[0]->type, v);
	blk_replace_uses(f->top, op->results[0], k);
	blk_op_erase(op);
}

bool blk_lower_specialize(LowerCtx *c)
{
	bool ok = true;
	subst_kernel(c, &ok);
	if (!ok) {
		blk_error(c->d, c->k->loc, "kernel %s: a shape is not a valid constant at this launch",
		          c->k->name);
		return false;
	}
	/* ops are visited in order, so a fold's operands are already folded */
	for (int i = 0; i < c->k->nparams; i++) {
		FoldCtx f = { c, c->k->params[i].index_map };
		blk_lower_walk(f.top, fold_op, &f);
	}
	FoldCtx f = { c, c->k->body };
	blk_lower_walk(f.top, fold_op, &f);
	return true;
}
