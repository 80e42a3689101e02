/* specialize.c - the kernel at one launch: every shape a constant.
 *
 * Requires: a verified clone and the launch sizes.  Produces: every type,
 * param shape, block dim, grid extent and ds size a constant; `size` and
 * `num_programs` ops replaced by constants; constant i32 scalar arithmetic
 * folded (so ds starts such as k * 32 keep only what depends on k), and a
 * scalar `select` on a constant condition replaced by the arm it takes
 * (attention's `where(CAUSAL, ..)` loop bound, so blockspec sees cdiv).
 *
 * Dynamic sizes (`dynamic (M)`) are the exception: the launch gives only
 * their class (a divisor, ir.h blk_dynamic_class), kept in k->size_dyn.
 * Array shapes, Ref types, block dims and grid extents may still name
 * them, their `size` ops stay (kernel arguments) and a `num_programs` of
 * such an axis becomes that arithmetic; tile shapes and ds sizes must not
 * depend on them (an error at the op).
 *
 * It also starts the launch header (launch.c): a pointer per array with
 * the strides compiled in, the dynamic sizes and strides as arguments.
 */
#include "lower/lower_int.h"

#include "support/limits.h"

#include <string.h>

/* A shape entry at this launch: constant, or (Refs, array shapes, the
 * grid) an expression of dynamic sizes.  *ok false for a constant out of
 * range. */
static const BlkSym *subst(LowerCtx *c, const BlkSym *s, bool *ok)
{
	if (!s)
		return s;
	const BlkSym *r = blk_sym_subst(c->a, s, &c->env);
	int64_t v;
	if (blk_sym_is_const(r, &v) && (v < 0 || v > INT32_MAX))
		*ok = false;
	return r;
}

static bool is_const(const BlkSym *s)
{
	int64_t v;
	return !s || blk_sym_is_const(s, &v);
}

/* The dynamic size s names (for messages). */
static const char *dyn_name(const BlkSym *s)
{
	if (s->kind == BLK_SYM_VAR)
		return s->name;
	if (s->kind == BLK_SYM_CONST)
		return NULL;
	const char *n = dyn_name(s->a);
	return n ? n : dyn_name(s->b);
}

/* A tile's shape, a ds size: compiled in, whatever is dynamic. */
static void must_be_const(LowerCtx *c, BlkLoc loc, const BlkSym *s, const char *what, bool *ok)
{
	if (is_const(s) || !*ok)
		return;
	blk_error(c->d, loc, "%s depends on dynamic size `%s` (%s); tile shapes are compiled in, so "
	          "they may use only compile-time parameters and sizes that are not dynamic",
	          what, dyn_name(s), blk_sym_str(c->a, s));
	*ok = false;
}

static void subst_type(LowerCtx *c, BlkType *t, BlkLoc loc, bool *ok)
{
	int64_t n = 1, v;
	for (int d = 0; d < t->rank; d++) {
		t->dims[d] = subst(c, t->dims[d], ok);
		if (t->kind == BLK_TYPE_TILE)
			must_be_const(c, loc, t->dims[d], "the shape of this value", ok);
		if (blk_sym_is_const(t->dims[d], &v) && v > 0)
			n = n > BLK_MAX_TILE_ELEMS / v ? (int64_t)BLK_MAX_TILE_ELEMS + 1 : n * v;
	}
	/* the checker's limit on tiles, for shapes only this launch's sizes fix
	 * (a block of N elements at N = 2^30 + 1 sent the layouts into an
	 * endless loop) */
	if (t->kind == BLK_TYPE_TILE && *ok && n > BLK_MAX_TILE_ELEMS) {
		blk_error(c->d, loc, "kernel %s: at these sizes this value is a tile of %s, more than %d "
		          "elements (the most a tile may have): use smaller blocks",
		          c->k->name, blk_type_str(c->a, t), BLK_MAX_TILE_ELEMS);
		*ok = false;
	}
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
			must_be_const(c, op->loc, v[j].size, "a ds size", ok);
		}
		at->index.v = v;
	}
}

static void subst_region(LowerCtx *c, BlkRegion *r, BlkLoc loc, bool *ok)
{
	for (int i = 0; r && i < r->nargs; i++)
		subst_type(c, &r->args[i]->type, loc, ok);
	for (BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			subst_type(c, &op->results[i]->type, op->loc, ok);
		subst_index_attr(c, op, ok);
		for (int i = 0; i < op->nregions; i++)
			subst_region(c, op->regions[i], op->loc, ok);
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
			if (p->access == BLK_ACCESS_SCRATCH)
				must_be_const(c, p->loc, p->shape[d], "a scratch buffer's shape", ok);
		}
		subst_region(c, p->index_map, p->loc, ok);
	}
	subst_region(c, k->body, k->loc, ok);
}

/* k->size_dyn: the divisor each dynamic size has at this launch (the
 * canonical sizes say -divisor), 0 for the rest. */
static void note_dynamic(LowerCtx *c)
{
	BlkKernel *k = c->k;
	int64_t *dyn = BLK_NEW_N(c->a, int64_t, k->nsizes + 1);
	for (int i = 0; i < k->nsizes; i++)
		dyn[i] = c->sizes && c->sizes[i] < 0 ? -c->sizes[i] : 0;
	k->size_dyn = dyn;
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
		*out = 1;
		return x >= c->k->grid_rank || blk_sym_is_const(c->k->grid[x], out);
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
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	if (op->kind == BLK_OP_NUM_PROGRAMS && !fold_value(c, op, &v)) { /* a dynamic extent */
		BlkValue *n = blk_lower_build_sym(&b, op->loc, c->k->grid[blk_op_int(op, "axis", 0)]);
		blk_replace_uses(f->top, op->results[0], n);
		blk_op_erase(op);
		return;
	}
	if (op->kind == BLK_OP_SELECT && op->results[0]->type.rank == 0 &&
	    blk_lower_const_int(op->operands[0], &v)) { /* where(CAUSAL, a, b): the arm taken */
		blk_replace_uses(f->top, op->results[0], op->operands[v ? 1 : 2]);
		blk_op_erase(op);
		return;
	}
	if (op->nresults != 1 || !fold_value(c, op, &v))
		return;
	BlkValue *k = blk_build_const_int(&b, op->loc, op->results[0]->type, v);
	blk_replace_uses(f->top, op->results[0], k);
	blk_op_erase(op);
}

bool blk_lower_specialize(LowerCtx *c)
{
	bool ok = true;
	note_dynamic(c);
	subst_kernel(c, &ok);
	if (!ok && blk_diag_error_count(c->d))
		return false;
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
	blk_lower_make_launch(c);
	return true;
}
