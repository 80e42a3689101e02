/* canonicalize.c - one normal form for spellings that mean the same.
 *
 * Requires: shapes constant (specialize.c), block refs lowered; runs
 * before any GPU decision (dot-engine on).  Produces: the kernel rewritten
 * by small local rules, to a fixed point, so that spellings a user may
 * choose between reach the GPU passes as the same IR.  Each rule keeps
 * every value bit for bit (no reassociation, no new roundings).
 *
 *   sink-expand-dims   an elementwise op whose tile operands are all
 *                      expand_dims on one axis (or splat constants) -> the
 *                      op on the operands before, then one expand_dims:
 *                      `exp(m - m_new)` on [R, 1] statistics computes on
 *                      [R], as `keepdims = false` with `[:, None]` does.
 *   mask-combine       where(c2, where(c1, x, v), v) -> where(c1 && c2, x,
 *                      v): two masks one after the other (`-inf` both
 *                      times) as one.
 *   carry-squeeze      a `for` carry with a dim of 1, whose yielded value
 *                      is an expand_dims on that dim and whose init is one
 *                      too or a splat constant -> carried without the dim,
 *                      an expand_dims where the loop's body and its users
 *                      read it: running [R, 1] statistics (a flash
 *                      attention's max and sum kept with keepdims) are
 *                      carried as [R], in the layout their reductions give
 *                      them, instead of a layout of their own that every
 *                      iteration converts through shared memory.
 *
 * Each rule's test is a case of tests/lower/canonicalize.ir; the spellings
 * it unifies are in tests/lower/spelling.sh.
 */
#include "lower/lower_int.h"

#include <stdint.h>
#include <string.h>

typedef struct Canon {
	LowerCtx *c;
	bool changed;
} Canon;

/* t without dim d. */
static BlkType squeezed(const BlkType *t, int d)
{
	const BlkSym *dims[BLK_MAX_RANK];
	int n = 0;
	for (int i = 0; i < t->rank; i++)
		if (i != d)
			dims[n++] = t->dims[i];
	return blk_type_tile(t->dtype, n, dims);
}

static bool is_splat(const BlkValue *v)
{
	return v->def && v->def->kind == BLK_OP_CONST && v->type.kind == BLK_TYPE_TILE && blk_op_attr(v->def, "value");
}

/* The splat constant v at type t, built at b. */
static BlkValue *splat_as(BlkBuilder *b, const BlkValue *v, BlkType t)
{
	const BlkAttr *a = blk_op_attr(v->def, "value");
	return a->kind == BLK_ATTR_INT ? blk_build_const_int(b, v->def->loc, t, a->i)
	                               : blk_build_const_float(b, v->def->loc, t, a->f);
}

/* v = expand_dims(x, d): x, and d in *axis (-1: any); else NULL. */
static BlkValue *expanded_from(const BlkValue *v, int *axis)
{
	if (!v->def || v->def->kind != BLK_OP_EXPAND_DIMS)
		return NULL;
	int d = (int)blk_op_int(v->def, "axis", 0);
	if (*axis >= 0 && *axis != d)
		return NULL;
	*axis = d;
	return v->def->operands[0];
}

static BlkValue *expand(BlkBuilder *b, BlkLoc loc, BlkValue *x, int d, BlkType t)
{
	BlkValue *e = blk_build1(b, BLK_OP_EXPAND_DIMS, loc, t, 1, &x);
	blk_op_set_int(b->arena, e->def, "axis", d);
	return e;
}

/* Uses of `from` in r become `to`, but the operand of `to`'s own op. */
static void redirect(BlkRegion *r, BlkValue *from, BlkValue *to)
{
	blk_replace_uses(r, from, to);
	to->def->operands[0] = from;
}

static void rewrite(void *ctx, BlkOp *op);

/* ---- sink-expand-dims ------------------------------------------------------ */

static void sink(Canon *k, BlkOp *op)
{
	if (!(blk_op_flags(op->kind) & BLK_OPF_ELEMENTWISE) || op->nresults != 1 || op->results[0]->type.rank < 1)
		return;
	int d = -1, found = 0;
	for (int i = 0; i < op->noperands; i++) {
		if (expanded_from(op->operands[i], &d))
			found++;
		else if (!is_splat(op->operands[i]))
			return;
	}
	if (!found)
		return;
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, op);
	BlkValue **xs = BLK_NEW_N(k->c->a, BlkValue *, op->noperands + 1);
	for (int i = 0; i < op->noperands; i++) {
		BlkValue *v = op->operands[i];
		xs[i] = is_splat(v) ? splat_as(&b, v, squeezed(&v->type, d)) : expanded_from(v, &d);
	}
	BlkValue *r = op->results[0];
	BlkValue *n = blk_build1(&b, op->kind, op->loc, squeezed(&r->type, d), op->noperands, xs);
	n->def->attrs = op->attrs, n->def->nattrs = op->nattrs;
	n->name = r->name;
	BlkValue *e = expand(&b, op->loc, n, d, r->type);
	blk_replace_uses(op->parent, r, e);
	blk_op_erase(op);
	k->changed = true;
}

/* ---- mask-combine ------------------------------------------------------------ */

/* a and b are one value, or splat constants of one type and value. */
static bool same_value(const BlkValue *a, const BlkValue *b)
{
	if (a == b)
		return true;
	if (!is_splat(a) || !is_splat(b) || !blk_type_equal(&a->type, &b->type))
		return false;
	const BlkAttr *x = blk_op_attr(a->def, "value"), *y = blk_op_attr(b->def, "value");
	return x->kind == y->kind && (x->kind == BLK_ATTR_INT ? x->i == y->i : memcmp(&x->f, &y->f, sizeof x->f) == 0);
}

/* where(c2, where(c1, x, v), v) -> where(c1 && c2, x, v): masks applied
 * one after the other, as one mask. */
static void combine(Canon *k, BlkOp *op)
{
	const BlkOp *in = op->kind == BLK_OP_SELECT ? op->operands[1]->def : NULL;
	if (!in || in->kind != BLK_OP_SELECT || !same_value(in->operands[2], op->operands[2]) ||
	    !blk_type_equal(&in->operands[0]->type, &op->operands[0]->type))
		return;
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, op);
	BlkValue *cs[2] = { in->operands[0], op->operands[0] };
	BlkValue *c = blk_build1(&b, BLK_OP_AND, op->loc, op->operands[0]->type, 2, cs);
	BlkValue *xs[3] = { c, in->operands[1], op->operands[2] };
	BlkValue *r = op->results[0];
	BlkValue *n = blk_build1(&b, BLK_OP_SELECT, op->loc, r->type, 3, xs);
	n->name = r->name;
	blk_replace_uses(op->parent, r, n);
	blk_op_erase(op);
	k->changed = true;
}

/* ---- carry-squeeze ---------------------------------------------------------- */

/* What the squeeze of loop f's carries at dim d needs to know. */
enum { MAX_CARRIES = 32 };

typedef struct Squeeze {
	BlkOp *f;
	int d;
	bool cand[MAX_CARRIES];
	BlkPtrMap memo; /* value -> CLOSED or OPEN */
	BlkArena *a;
} Squeeze;

enum { CLOSED = 1, OPEN = 2 };

/* v is, along dim d, one value broadcast: an expand_dims on d, a splat,
 * a candidate carry's arg, or elementwise ops of such (once the carries
 * are squeezed, sinking makes it an expand_dims on d). */
static bool closed(Squeeze *q, const BlkValue *v)
{
	intptr_t m = (intptr_t)blk_pmap_get(&q->memo, v);
	if (m)
		return m == CLOSED;
	int d = q->d;
	bool ok;
	if (is_splat(v) || expanded_from(v, &d))
		ok = true;
	else if (!v->def)
		ok = v->owner == q->f->regions[0] && v->index >= 1 && v->index - 1 < MAX_CARRIES &&
		     q->cand[v->index - 1];
	else {
		const BlkOp *op = v->def;
		ok = (blk_op_flags(op->kind) & BLK_OPF_ELEMENTWISE) && op->nresults == 1;
		blk_pmap_put(q->a, &q->memo, v, (void *)(intptr_t)OPEN); /* (no cycles: SSA) */
		for (int i = 0; ok && i < op->noperands; i++)
			ok = closed(q, op->operands[i]);
	}
	blk_pmap_put(q->a, &q->memo, v, (void *)(intptr_t)(ok ? CLOSED : OPEN));
	return ok;
}

/* The carries of f to squeeze at dim d: a dim of 1 there, an init that is
 * closed, a yield that is closed once they all are (to a fixed point). */
static int pick_carries(Squeeze *q)
{
	BlkOp *f = q->f;
	const BlkOp *y = f->regions[0]->last;
	int n = f->nresults < MAX_CARRIES ? f->nresults : MAX_CARRIES, count = 0;
	if (!y || y->kind != BLK_OP_YIELD)
		return 0;
	for (int i = 0; i < n; i++) {
		const BlkType *t = &f->results[i]->type;
		int64_t one;
		q->cand[i] = t->kind == BLK_TYPE_TILE && q->d < t->rank && blk_sym_is_const(t->dims[q->d], &one) &&
		             one == 1 && t->rank > 1 && closed(q, f->operands[3 + i]);
	}
	for (bool again = true; again;) {
		again = false;
		q->memo = (BlkPtrMap){ 0 };
		for (int i = 0; i < n; i++)
			if (q->cand[i] && !closed(q, y->operands[i]))
				q->cand[i] = false, again = true;
	}
	for (int i = 0; i < n; i++)
		count += q->cand[i];
	return count;
}

/* Carry i of f without dim d: its init and result squeezed, its arg and
 * its result read through an expand_dims (the yield is mended after the
 * body's sinking, squeeze()). */
static void squeeze_carry(Canon *k, BlkOp *f, int i, int d)
{
	BlkRegion *body = f->regions[0];
	BlkValue *arg = body->args[1 + i], *res = f->results[i], *init = f->operands[3 + i];
	BlkType wide = arg->type, narrow = squeezed(&wide, d);
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, f);
	int dd = d;
	f->operands[3 + i] = is_splat(init) ? splat_as(&b, init, narrow) : expanded_from(init, &dd);
	if (body->first)
		blk_builder_before(&b, k->c->a, body->first);
	else
		blk_builder_at_end(&b, k->c->a, body);
	redirect(body, arg, expand(&b, f->loc, arg, d, wide));
	arg->type = narrow;
	if (f->next)
		blk_builder_before(&b, k->c->a, f->next);
	else
		blk_builder_at_end(&b, k->c->a, f->parent);
	redirect(f->parent, res, expand(&b, f->loc, res, d, wide));
	res->type = narrow;
}

/* The yield's operand i, wide, as the narrow value it broadcasts. */
static void mend_yield(Canon *k, BlkOp *y, int i, int d)
{
	BlkValue *v = y->operands[i];
	int dd = d;
	if (is_splat(v)) {
		BlkBuilder b;
		blk_builder_before(&b, k->c->a, y);
		y->operands[i] = splat_as(&b, v, squeezed(&v->type, d));
	} else if (expanded_from(v, &dd)) {
		y->operands[i] = v->def->operands[0];
	} else {
		blk_die("lower: canonicalize: a squeezed carry's yield is no expand_dims");
	}
}

static void squeeze(Canon *k, BlkOp *f)
{
	if (f->kind != BLK_OP_FOR || !f->nresults)
		return;
	for (int d = 0; d < BLK_MAX_RANK; d++) {
		Squeeze q = { .f = f, .d = d, .a = k->c->a };
		if (!pick_carries(&q))
			continue;
		for (int i = 0; i < f->nresults && i < MAX_CARRIES; i++)
			if (q.cand[i])
				squeeze_carry(k, f, i, d);
		Canon body = { k->c, true };
		while (body.changed) {
			body.changed = false;
			blk_lower_walk(f->regions[0], rewrite, &body);
		}
		for (int i = 0; i < f->nresults && i < MAX_CARRIES; i++)
			if (q.cand[i])
				mend_yield(k, f->regions[0]->last, i, d);
		k->changed = true;
		return;
	}
}

/* ---- the pass ------------------------------------------------------------------ */

static void rewrite(void *ctx, BlkOp *op)
{
	if (op->kind == BLK_OP_SELECT)
		combine(ctx, op);
	else
		sink(ctx, op);
}

static void rewrite_loops(void *ctx, BlkOp *op)
{
	squeeze(ctx, op);
}

/* Erases expand_dims, constants and selects nothing reads any more (what
 * the rules left behind), innermost first. */
static void erase_dead(BlkRegion *r, BlkRegion *top)
{
	for (BlkOp *op = r->last, *prev; op; op = prev) {
		prev = op->prev;
		for (int i = 0; i < op->nregions; i++)
			erase_dead(op->regions[i], top);
		bool orphan = op->kind == BLK_OP_EXPAND_DIMS || op->kind == BLK_OP_CONST || op->kind == BLK_OP_SELECT;
		if (orphan && !blk_lower_uses(top, op->results[0]))
			blk_op_erase(op);
	}
}

bool blk_lower_canonicalize(LowerCtx *c)
{
	Canon k = { c, true };
	bool any = false;
	for (int round = 0; k.changed && round < 64; round++) {
		k.changed = false;
		blk_lower_walk(c->k->body, rewrite, &k);
		blk_lower_walk(c->k->body, rewrite_loops, &k);
		any |= k.changed;
	}
	if (any)
		erase_dead(c->k->body, c->k->body);
	return true;
}
