/* loop_split.c - a loop's iterations where its masks are all true, split
 * off into a loop of their own without them.
 *
 * Requires: block refs lowered (blockspec.c), shapes constant, dot engines
 * chosen.  Produces: the split loops (below), `split` computed before
 * them.  Applies to a `for` with step 1 that runs a tensor-core dot
 * (engine mma or wgmma) in its body and
 * compares i32 tiles there whose two sides are, element by element,
 * affine in the loop's iv: coef * iv + base + [lo, hi], base a scalar
 * that does not change in the loop (a program id times a block, a size),
 * [lo, hi] the constant offsets of iotas and constants.  Such a compare is
 * true at every element of the iterations on one side of a split point
 * the loop can compute before it starts -- causal attention's
 * `cols <= rows` below the diagonal, `cols < S` before the last key
 * block -- and this pass makes that side a loop of its own, the compares
 * replaced by `true` (LLVM then drops the selects they feed).  and/or
 * with a constant operand are folded first: a compare whose value nothing
 * then reads is no reason to split.
 *
 *   sp = the first iteration whose compares may be false
 *   mid = min(max(sp, lo), hi)
 *   r = for j = lo to mid (inits) { ...body, compares true... }
 *   for j = mid to hi (r) { ...body as it was... }
 *
 * With the compares true on a suffix (coef < 0) the mask-free loop comes
 * second.  Only one side is split: the prefix where any compare has one.
 * A loop with a dot is worth a second copy of its body; the split loops
 * are sibling loops the pipeliner handles one by one, or warp_spec.c
 * feeds from one producer.  This is what fast attention kernels write by
 * hand (the causal key loop split at the diagonal blocks).
 */
#include "lower/lower_int.h"

#include <string.h>

enum { MAX_SPLIT = 8, DEPTH = 16 };
/* Coefficients and offsets past this are not tracked: the split point's
 * arithmetic stays well inside i32, as the compare's own operands must
 * (they are i32 values; coef * j + base is assumed not to wrap, as the
 * kernel's index arithmetic is). */
#define BIG_OFFSET ((int64_t)1 << 30)

/* v, element by element, is coef * iv + base + [lo, hi]. */
typedef struct Affine {
	int64_t coef;
	BlkValue *base; /* an i32 scalar that is the same in every iteration, or NULL */
	int64_t lo, hi;
} Affine;

/* v depends on the loop's region args (its iv, its carries, a nested
 * loop's) or reads memory in it: values of one iteration, not of the
 * whole loop. */
static bool varies(const BlkRegion *body, const BlkValue *v, int depth)
{
	if (!blk_lower_within(body, v))
		return false;
	const BlkOp *d = v->def;
	if (!d || depth > DEPTH || d->nregions || !(blk_op_flags(d->kind) & BLK_OPF_PURE))
		return true;
	for (int i = 0; i < d->noperands; i++)
		if (varies(body, d->operands[i], depth + 1))
			return true;
	return false;
}

static bool small(int64_t x)
{
	return x > -BIG_OFFSET && x < BIG_OFFSET;
}

static bool affine(const BlkRegion *body, BlkValue *v, Affine *out, int depth)
{
	int64_t k;
	if (v->type.dtype != BLK_I32 || depth > DEPTH)
		return false;
	if (blk_lower_splat_int(v, &k)) {
		*out = (Affine){ 0, NULL, k, k };
		return small(k);
	}
	if (v == body->args[0]) {
		*out = (Affine){ 1, NULL, 0, 0 };
		return true;
	}
	if (v->type.rank == 0 && !varies(body, v, 0)) {
		*out = (Affine){ 0, v, 0, 0 };
		return true;
	}
	const BlkOp *d = v->def;
	if (!d)
		return false;
	Affine x, y;
	switch (d->kind) {
	case BLK_OP_IOTA:
		k = blk_lower_dim(v->type.dims[blk_op_int(d, "axis", 0)]);
		*out = (Affine){ 0, NULL, 0, k - 1 };
		return true;
	case BLK_OP_BROADCAST:
	case BLK_OP_EXPAND_DIMS:
		return affine(body, d->operands[0], out, depth + 1);
	case BLK_OP_ADD:
	case BLK_OP_SUB:
		if (!affine(body, d->operands[0], &x, depth + 1) || !affine(body, d->operands[1], &y, depth + 1) ||
		    (y.base != NULL && (x.base != NULL || d->kind == BLK_OP_SUB)))
			return false;
		if (d->kind == BLK_OP_ADD)
			*out = (Affine){ x.coef + y.coef, x.base ? x.base : y.base, x.lo + y.lo, x.hi + y.hi };
		else
			*out = (Affine){ x.coef - y.coef, x.base, x.lo - y.hi, x.hi - y.lo };
		return small(out->coef) && small(out->lo) && small(out->hi);
	case BLK_OP_MUL:
		if (!affine(body, d->operands[0], &x, depth + 1) || !affine(body, d->operands[1], &y, depth + 1))
			return false;
		if (x.coef == 0 && !x.base && x.lo == x.hi) { /* the constant first */
			Affine t = x;
			x = y, y = t;
		}
		if (y.coef != 0 || y.base || y.lo != y.hi || x.base || !small(y.lo))
			return false;
		k = y.lo;
		*out = (Affine){ x.coef * k, NULL, (k >= 0 ? x.lo : x.hi) * k, (k >= 0 ? x.hi : x.lo) * k };
		return small(out->coef) && small(out->lo) && small(out->hi);
	default:
		return false;
	}
}

/* A compare of the loop: every element of iteration j true exactly when
 * coef * j <= rbase + rconst (rbase = by - bx: bases, either NULL). */
typedef struct Split {
	BlkOp *cmp;
	int64_t coef, rconst;
	BlkValue *bx, *by;
} Split;

/* op, a compare of i32 tiles affine in the iv that changes with it. */
static bool analyze(const BlkRegion *body, BlkOp *op, Split *s)
{
	bool swap = op->kind == BLK_OP_GT || op->kind == BLK_OP_GE;
	int e = op->kind == BLK_OP_LT || op->kind == BLK_OP_GT; /* strict: x <= y - 1 */
	if ((op->kind != BLK_OP_LT && op->kind != BLK_OP_LE && !swap) || op->operands[0]->type.rank == 0 ||
	    op->operands[0]->type.dtype != BLK_I32)
		return false;
	Affine x, y;
	if (!affine(body, op->operands[swap], &x, 0) || !affine(body, op->operands[!swap], &y, 0))
		return false;
	/* x <= y - e everywhere: (x.coef - y.coef) j + bx + x.hi <= by + y.lo - e */
	*s = (Split){ op, x.coef - y.coef, y.lo - e - x.hi, x.base, y.base };
	return s->coef != 0 && small(s->coef) && small(s->rconst);
}

/* v (not varying in the loop) at b, before the loop: its ops of the body
 * copied there where it is computed inside. */
static BlkValue *hoisted(LowerCtx *c, BlkBuilder *b, const BlkRegion *body, BlkPtrMap *vm, BlkValue *v)
{
	BlkValue *m = blk_pmap_get(vm, v);
	if (m)
		return m;
	BlkOp *d = v->def;
	if (!blk_lower_within(body, v))
		return v;
	for (int i = 0; i < d->noperands; i++)
		hoisted(c, b, body, vm, d->operands[i]);
	blk_loop_copy_op(c, b, vm, d);
	return blk_pmap_get(vm, v);
}

static BlkValue *binop(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkValue *x, BlkValue *y)
{
	BlkValue *o[2] = { x, y };
	return blk_build1(b, k, loc, blk_type_scalar(BLK_I32), 2, o);
}

/* The split point of s, before the loop: the first iteration where it
 * may be false (prefix, coef > 0), or the first from which it is true
 * (suffix). */
static BlkValue *split_point(LowerCtx *c, BlkBuilder *b, const BlkRegion *body, BlkPtrMap *vm, const Split *s)
{
	BlkLoc loc = s->cmp->loc;
	BlkValue *r = blk_lower_i32(b, loc, s->rconst);
	if (s->by)
		r = binop(b, BLK_OP_ADD, loc, hoisted(c, b, body, vm, s->by), r);
	if (s->bx)
		r = binop(b, BLK_OP_SUB, loc, r, hoisted(c, b, body, vm, s->bx));
	/* one builder call a statement: the ops' order is not C's to choose */
	BlkValue *d = blk_lower_i32(b, loc, s->coef > 0 ? s->coef : -s->coef);
	BlkValue *q = binop(b, BLK_OP_FLOORDIV, loc, r, d);
	if (s->coef > 0) /* j <= floor(r / coef) */
		return binop(b, BLK_OP_ADD, loc, q, blk_lower_i32(b, loc, 1));
	/* j >= ceil(r / coef) = -floor(r / -coef) */
	BlkValue *zero = blk_lower_i32(b, loc, 0);
	return binop(b, BLK_OP_SUB, loc, zero, q);
}

/* A tensor-core dot in the body: its loop is pipelined whatever its
 * bounds.  (A SIMT dot's loop is prefetched only with constant bounds,
 * prefetch.c, which a split point is not: there the copy would cost more
 * than the masks it saves.) */
static bool has_dot(const BlkRegion *body)
{
	for (const BlkOp *op = body->first; op; op = op->next)
		if (op->kind == BLK_OP_DOT && blk_lower_dot_tc(op))
			return true;
	return false;
}

static void split_loop(void *ctx, BlkOp *f)
{
	LowerCtx *c = ctx;
	int64_t step;
	if (f->kind != BLK_OP_FOR || !blk_lower_const_int(f->operands[2], &step) || step != 1 ||
	    !has_dot(f->regions[0]))
		return;
	BlkRegion *body = f->regions[0];
	blk_lower_fold_logic(body); /* `!CAUSAL || cols <= rows`, CAUSAL false: true */
	Split all[MAX_SPLIT];
	int n = 0;
	bool prefix = false;
	for (BlkOp *op = body->first; op && n < MAX_SPLIT; op = op->next)
		if (op->nresults == 1 && blk_lower_uses(body, op->results[0]) > 0 && analyze(body, op, &all[n]))
			prefix |= all[n++].coef > 0;
	int m = 0; /* the compares of the side split off */
	for (int i = 0; i < n; i++)
		if ((all[i].coef > 0) == prefix)
			all[m++] = all[i];
	if (!m)
		return;
	BlkBuilder b;
	blk_builder_before(&b, c->a, f);
	BlkPtrMap hv = { 0 };
	BlkValue *sp = split_point(c, &b, body, &hv, &all[0]);
	for (int i = 1; i < m; i++) { /* all true: before the first end, from the last start */
		BlkValue *next = split_point(c, &b, body, &hv, &all[i]);
		sp = binop(&b, prefix ? BLK_OP_MIN : BLK_OP_MAX, f->loc, sp, next);
	}
	BlkValue *from = binop(&b, BLK_OP_MAX, f->loc, sp, f->operands[0]);
	BlkValue *mid = binop(&b, BLK_OP_MIN, f->loc, from, f->operands[1]);
	mid->name = "split";
	/* the mask-free copy: before f (prefix) or after it (suffix) */
	if (!prefix)
		blk_builder_before(&b, c->a, f->next);
	BlkPtrMap vm = { 0 };
	BlkOp *g = blk_lower_clone_op(c, &b, &vm, f);
	for (int i = 0; i < m; i++) {
		BlkValue *r = blk_pmap_get(&vm, all[i].cmp->results[0]);
		BlkBuilder cb;
		blk_builder_before(&cb, c->a, r->def);
		blk_replace_uses(g->regions[0], r, blk_build_const_int(&cb, r->def->loc, r->type, 1));
		blk_op_erase(r->def);
	}
	blk_lower_fold_logic(g->regions[0]); /* the masks those compares fed: gone */
	BlkOp *first = prefix ? g : f, *second = prefix ? f : g;
	if (!prefix) /* f's results now go through g */
		for (int i = 0; i < f->nresults; i++)
			blk_replace_uses(f->parent, f->results[i], g->results[i]);
	first->operands[1] = mid;
	second->operands[0] = mid;
	for (int i = 0; i < first->nresults; i++)
		second->operands[3 + i] = first->results[i];
}

bool blk_lower_loop_split(LowerCtx *c)
{
	blk_lower_walk(c->k->body, split_loop, c);
	return true;
}
