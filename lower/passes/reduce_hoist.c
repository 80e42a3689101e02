/* reduce_hoist.c - a loop that folds a reduction into its carry every
 * iteration reduces once, after the loop.
 *
 * Requires: shapes constant (specialize.c).  Applies to a `for` carry acc
 * whose init is a constant splat and whose next value is
 *   acc OP reduce_OP(X, axis)        (OP: add/sum, max/max, min/min)
 * with the reduction, acc and the next value used only there (acc is not
 * read for anything else, as a softmax's running max is) and X small
 * enough to carry (at most CARRY_REGS elements a thread).  Produces a carry x2 of X's shape that
 * starts as the splat's value (0 for a sum) and takes x2 OP X each
 * iteration; acc passes through, and after the loop the result is
 * acc OP reduce_OP(x2, axis).  A column sum (`acc + sum(x, axis = 0)`)
 * then streams its rows with no reduction across threads -- shuffles,
 * shared memory, barriers -- in the loop.  The sum's order changes (each
 * element's own running sum first), within the dtype's rounding.
 */
#include "lower/lower_int.h"

#include <string.h>

enum { CARRY_REGS = 32 };

static BlkOpKind reduce_of(BlkOpKind k)
{
	return k == BLK_OP_ADD ? BLK_OP_REDUCE_SUM : k == BLK_OP_MAX ? BLK_OP_REDUCE_MAX
	     : k == BLK_OP_MIN ? BLK_OP_REDUCE_MIN : BLK_OP_YIELD;
}

/* The reduction in next = acc OP reduce_OP(X) (either operand order), or
 * NULL. */
static BlkOp *folded_reduce(const BlkLoop *L, const BlkValue *acc, const BlkValue *next)
{
	const BlkOp *op = next->def;
	if (!op || op->parent != L->body || op->noperands != 2 || reduce_of(op->kind) == BLK_OP_YIELD)
		return NULL;
	/* the form first, the uses (a walk of the body each) only then: a loop
	 * of 8000 carries was quadratic */
	for (int i = 0; i < 2; i++) {
		BlkOp *r = op->operands[1 - i]->def;
		if (op->operands[i] == acc && r && r->kind == reduce_of(op->kind) && r->parent == L->body &&
		    blk_lower_uses(L->body, next) == 1 && blk_lower_uses(L->body, acc) == 1 &&
		    blk_lower_uses(L->body, r->results[0]) == 1)
			return r; /* else the running value is used for something else (a softmax's max) */
	}
	return NULL;
}

static bool carryable(const LowerCtx *c, const BlkType *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= blk_lower_dim(t->dims[d]);
	return n <= (int64_t)CARRY_REGS * c->nthreads;
}

static double splat_value(const BlkValue *v)
{
	const BlkAttr *a = blk_op_attr(v->def, "value");
	return !a ? 0 : a->kind == BLK_ATTR_FLOAT ? a->f : (double)a->i;
}

static int64_t splat_int(const BlkValue *v)
{
	const BlkAttr *a = blk_op_attr(v->def, "value");
	return !a ? 0 : a->kind == BLK_ATTR_INT ? a->i : blk_f32_to_i32((float)a->f);
}

/* Carry i of loop L: x2 beside it, acc passed through, the reduction after. */
static void hoist(BlkLoop *L, int i, BlkOp *red)
{
	LowerCtx *c = L->c;
	BlkOp *f = L->loop, *y = L->body->last, *fold = y->operands[i]->def;
	BlkValue *acc = L->body->args[1 + i], *X = red->operands[0];
	BlkBuilder pre, here, post;
	blk_builder_before(&pre, c->a, f);
	BlkValue *init;
	if (blk_dtype_is_float(X->type.dtype))
		init = blk_build_const_float(&pre, f->loc, X->type,
		                             fold->kind == BLK_OP_ADD ? 0 : splat_value(f->operands[3 + i]));
	else
		init = blk_build_const_int(&pre, f->loc, X->type,
		                           fold->kind == BLK_OP_ADD ? 0 : splat_int(f->operands[3 + i]));
	BlkValue *x2 = blk_loop_add_carry(L, init, init);
	blk_builder_before(&here, c->a, y);
	BlkValue *ops[2] = { x2, X };
	y->operands[y->noperands - 1] = blk_build1(&here, fold->kind, fold->loc, X->type, 2, ops);
	y->operands[i] = acc;
	blk_op_erase(fold);
	blk_op_erase(red);
	/* after the loop: acc OP reduce(x2) in place of the loop's result i */
	BlkValue *res = f->results[i];
	if (f->next)
		blk_builder_before(&post, c->a, f->next);
	else
		blk_builder_at_end(&post, c->a, f->parent);
	BlkValue *whole = f->results[f->nresults - 1];
	BlkValue *r = blk_build1(&post, red->kind, red->loc, res->type, 1, &whole);
	r->def->nattrs = red->nattrs;
	r->def->attrs = red->attrs;
	BlkValue *fo[2] = { res, r };
	BlkValue *out = blk_build1(&post, fold->kind, fold->loc, res->type, 2, fo);
	blk_replace_uses(f->parent, res, out);
	out->def->operands[0] = res; /* replace_uses rewrote it too */
}

static void hoist_loop(void *ctx, BlkOp *f)
{
	if (f->kind != BLK_OP_FOR)
		return;
	BlkLoop L = { .c = ctx, .loop = f, .body = f->regions[0] };
	BlkOp *y = L.body->last;
	int nc = f->noperands - 3;
	for (int i = 0; y && y->kind == BLK_OP_YIELD && i < nc; i++) {
		BlkValue *init = f->operands[3 + i];
		BlkOp *red = folded_reduce(&L, L.body->args[1 + i], y->operands[i]);
		if (red && init->def && init->def->kind == BLK_OP_CONST && carryable(L.c, &red->operands[0]->type))
			hoist(&L, i, red);
	}
}

bool blk_lower_reduce_hoist(LowerCtx *c)
{
	blk_lower_walk(c->k->body, hoist_loop, c);
	return true;
}
