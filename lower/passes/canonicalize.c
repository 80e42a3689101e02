/* canonicalize.c - one normal form for spellings that mean the same.
 *
 * Requires: shapes constant (specialize.c), block refs lowered; runs
 * before any GPU decision (dot-engine on).  Produces: the kernel rewritten
 * by small local rules, to a fixed point, so that spellings a user may
 * choose between reach the GPU passes as the same IR.  Each rule keeps
 * every value bit for bit (no reassociation, no new roundings).
 *
 *   sink-expand-dims   an elementwise op whose tile operands are all
 *                      expand_dims on one axis (or splat constants, or
 *                      broadcast scalars) -> the
 *                      op on the operands before, then one expand_dims:
 *                      `exp(m - m_new)` on [R, 1] statistics computes on
 *                      [R], as `keepdims = false` with `[:, None]` does.
 *   mask-combine       where(c2, where(c1, x, v), v) -> where(c1 && c2, x,
 *                      v): two masks one after the other (`-inf` both
 *                      times) as one; where(c2, where(c1, x, v), x) ->
 *                      where(c1 || !c2, x, v): a mask applied only where
 *                      c2.
 *   when-const,        (branches.c, a pass of its own before seq-loop, too)
 *                      a `when` on a constant -> the
 *                      branch taken;
 *   when-else,         two `when`s on opposite conditions
 *   branch-merge       -> one with an else; a `when`/else whose branches
 *                      make the same effects on values that differ in
 *                      cheap pure parts -> the effects once, the parts
 *                      where(c, a, b): causal attention's masked and
 *                      plain steps as one masked step.
 *   select-not         where(!c, a, b) -> where(c, b, a).
 *   compare-face       a comparison: a scalar bound second, else `<` or
 *                      `<=` (`S > cols` -> `cols < S`, `rows >= cols` ->
 *                      `cols <= rows`).
 *   commute            a commutative op: a loop carry first, a scalar
 *                      (broadcast or splat) second (`scale * s` -> `s *
 *                      scale`); two tiles keep their order.
 *   fold-scalar        sqrt, rsqrt, + - * / of f32 scalar constants -> the
 *                      constant (`sqrt(D * 1.0)` is one, so `s / sqrt(D
 *                      * 1.0)` divides by a constant).
 *   transpose-pair     transpose(transpose(x)) -> x (rank 2).
 *   whole-view         r.at[:, ...] of all of r -> r.
 *   load-view          load(r.at[idx]) of the whole view -> load(r)
 *                      {idx}: `load(k.at[ds(j * BK, BK), :])` reads as
 *                      `k[ds(j * BK, BK), :]` does (one load of the
 *                      block's Ref, which TMA can then copy).
 *   extract-expand     extract(expand_dims(v, a)) at 0 of dim a, the rest
 *                      whole -> v: `mu[:, 0]` of a keepdims statistic.
 *   row-gather         a gather of rows `(s + iota(B)) ~/ G`, B dividing G
 *                      and s a multiple of B -> the one row `s ~/ G`,
 *                      broadcast: a group scale `scales[kk ~/ G, :]` read
 *                      for each k of a step that never crosses a group
 *                      boundary is one row, not a [B, N] gather.
 *   broadcast-at-use   a broadcast moves to just before its first reader.
 *   hoist-invariant-load  a load of an `in` array inside a loop, its Ref
 *                      and indices from outside it -> before the loop.
 *   scratch-carry      a scratch Ref stored whole before a loop, loaded and
 *                      stored whole once per iteration, loaded after ->
 *                      a loop carry (Pallas's acc_ref as fori_loop's acc).
 *   same-load          a load of an `in` array that an earlier load of the
 *                      same region repeats (the same Ref, indices computed
 *                      alike, the same attributes) -> that load's value:
 *                      `dot(x[:, ds(k * BK, BK)], w1..)` and the same x
 *                      chunk read again for a second dot are one slab,
 *                      which the pipeliner then stages once.
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
 *   loop-nest          for i < n1 { pure(i); for j < n2 { body } }, the
 *                      carries passed straight through, constant trip
 *                      counts -> one loop over t < n1 * n2, i = t ~/ n2,
 *                      j = t % n2: a convolution's taps written as loops
 *                      around its channel loop pipeline as one loop.
 *
 * Rewrites that are not exact (1/sqrt vs rsqrt, additive masks, a scale
 * moved into exp or across a dot, a dot added after it is named) are no
 * rules: they need a rounding policy.  Each rule's test is a case of
 * tests/lower/canonicalize.ir; the spellings it unifies are registered in
 * tests/lower/meson.build (spelling.sh), with a bound where one differs.
 */
#include "lower/lower_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* How many ops back same-load looks for the load a load repeats. */
enum { SAME_LOAD_LOOKBACK = 1024 };

typedef struct Canon {
	LowerCtx *c;
	bool changed;
	BlkPtrMap uses;  /* erase_dead's: value -> its readers' count */
	BlkPtrMap subst; /* reuse_load's: a load's value -> the earlier one's (see rewrite) */
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

/* v is one scalar at every element: a splat constant or a broadcast
 * scalar (`j * BK + iota(BK)[None, :]`'s j * BK). */
static bool is_uniform(const BlkValue *v)
{
	return is_splat(v) || (v->def && v->def->kind == BLK_OP_BROADCAST && v->def->operands[0]->type.rank == 0);
}

/* The uniform v at type t, built at b. */
static BlkValue *splat_as(BlkBuilder *b, const BlkValue *v, BlkType t)
{
	if (v->def->kind == BLK_OP_BROADCAST)
		return blk_build1(b, BLK_OP_BROADCAST, v->def->loc, t, 1, &v->def->operands[0]);
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

/* A comparison: its [1, N] mask stays as the examples compute it (sinking
 * it through a broadcast scalar, `cols < S`, would change the code of every
 * ragged attention for no gain); arithmetic sinks through one. */
static bool compares(BlkOpKind kind)
{
	return kind == BLK_OP_LT || kind == BLK_OP_LE || kind == BLK_OP_GT || kind == BLK_OP_GE ||
	       kind == BLK_OP_EQ || kind == BLK_OP_NE;
}

static void sink(Canon *k, BlkOp *op)
{
	if (!(blk_op_flags(op->kind) & BLK_OPF_ELEMENTWISE) || op->nresults != 1 || op->results[0]->type.rank < 1)
		return;
	int d = -1, found = 0;
	for (int i = 0; i < op->noperands; i++) {
		const BlkValue *v = op->operands[i];
		if (expanded_from(op->operands[i], &d))
			found++;
		else if (!is_splat(v) && (compares(op->kind) || !is_uniform(v)))
			return;
	}
	if (!found)
		return;
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, op);
	BlkValue **xs = BLK_NEW_N(k->c->a, BlkValue *, op->noperands + 1);
	for (int i = 0; i < op->noperands; i++) {
		BlkValue *v = op->operands[i];
		xs[i] = is_uniform(v) ? splat_as(&b, v, squeezed(&v->type, d)) : expanded_from(v, &d);
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
	if (!in || in->kind != BLK_OP_SELECT || !blk_type_equal(&in->operands[0]->type, &op->operands[0]->type))
		return;
	/* where(c2, where(c1, x, v), v): both masks; where(c2, where(c1, x,
	 * v), x): the inner mask only where c2 (branch-merge's form of a mask
	 * taken in some blocks) */
	bool both = same_value(in->operands[2], op->operands[2]);
	if (!both && in->operands[1] != op->operands[2])
		return;
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, op);
	BlkValue *c2 = op->operands[0];
	if (!both)
		c2 = blk_build1(&b, BLK_OP_NOT, op->loc, c2->type, 1, &c2);
	BlkValue *cs[2] = { in->operands[0], c2 };
	BlkValue *c = blk_build1(&b, both ? BLK_OP_AND : BLK_OP_OR, op->loc, op->operands[0]->type, 2, cs);
	BlkValue *xs[3] = { c, in->operands[1], in->operands[2] };
	BlkValue *r = op->results[0];
	BlkValue *n = blk_build1(&b, BLK_OP_SELECT, op->loc, r->type, 3, xs);
	n->name = r->name;
	blk_replace_uses(op->parent, r, n);
	blk_op_erase(op);
	k->changed = true;
}

/* ---- bounds-mask ------------------------------------------------------------- */

/* v, a tile of rank n, is u (rank 1) spread along axis *axis: u itself
 * (n = 1), or broadcasts and expand_dims of it.  NULL otherwise. */
static const BlkValue *spread_of(const BlkValue *v, int n, int *axis)
{
	if (v->type.rank == 1) {
		*axis = 0;
		return n == 1 ? v : NULL;
	}
	const BlkValue *w = NULL; /* the rank-n step nearest u */
	while (v->def && (v->def->kind == BLK_OP_BROADCAST || v->def->kind == BLK_OP_EXPAND_DIMS) &&
	       v->def->operands[0]->type.rank >= 1) {
		if (v->type.rank == n)
			w = v;
		v = v->def->operands[0];
	}
	if (v->type.rank != 1 || !w || blk_lower_dim(v->type.dims[0]) == 1)
		return NULL;
	if (w->def->operands[0]->type.rank == 1 && w->def->kind == BLK_OP_BROADCAST) {
		*axis = n - 1; /* numpy's rule: dims align right */
		return v;
	}
	int along = -1; /* w = [.., B, ..], ones elsewhere: an expand_dims of u's */
	for (int d = 0; d < n; d++)
		if (blk_lower_dim(w->type.dims[d]) != 1) {
			if (along >= 0)
				return NULL;
			along = d;
		}
	*axis = along;
	return along >= 0 ? v : NULL;
}

typedef struct Bounds {
	const BlkOp *load;
	int n;                   /* the load's result rank */
	const BlkValue *idx[BLK_MAX_RANK]; /* per gather: its index vector, axis, dim extent */
	int axis[BLK_MAX_RANK];
	int64_t extent[BLK_MAX_RANK];
	int ng;
} Bounds;

/* x (rank 1 along axis a) compared with k says "in its dim's bounds" for
 * one of the load's gathers: x >= 0, x > -1, x < E, x <= E - 1. */
static bool bound_leaf(const Bounds *B, BlkOpKind kind, const BlkValue *x, int a, int64_t k)
{
	for (int g = 0; g < B->ng; g++) {
		if (B->idx[g] != x || B->axis[g] != a)
			continue;
		int64_t E = B->extent[g];
		if ((kind == BLK_OP_GE && k == 0) || (kind == BLK_OP_GT && k == -1) || (kind == BLK_OP_LT && k == E) ||
		    (kind == BLK_OP_LE && k == E - 1))
			return true;
	}
	return false;
}

/* Every conjunct of c (rank n; along axis a where c is rank 1) is a bounds
 * check of one of the load's gathers (or true). */
static bool all_bounds(const Bounds *B, const BlkValue *c, int n, int a, int depth)
{
	const BlkOp *d = c->def;
	int64_t k;
	if (!d || depth > 32 || c->type.dtype != BLK_BOOL)
		return false;
	if (blk_lower_splat_int(c, &k))
		return k != 0;
	if (d->kind == BLK_OP_AND)
		return all_bounds(B, d->operands[0], n, a, depth + 1) && all_bounds(B, d->operands[1], n, a, depth + 1);
	if (c->type.rank > 1 || (n > 1 && c->type.rank == n)) { /* a spread vector of checks */
		int ax;
		const BlkValue *u = spread_of(c, c->type.rank, &ax);
		if (u && u != c)
			return all_bounds(B, u, 1, ax, depth + 1);
		if (d->kind < BLK_OP_LT || d->kind > BLK_OP_GE) /* a compare of spread operands below */
			return false;
	}
	bool cmp = d->kind == BLK_OP_LT || d->kind == BLK_OP_LE || d->kind == BLK_OP_GT || d->kind == BLK_OP_GE;
	if (!cmp || !blk_lower_splat_int(d->operands[1], &k))
		return false;
	int ax = a;
	const BlkValue *x = d->operands[0];
	if (x->type.rank > 1 && !(x = spread_of(x, x->type.rank, &ax)))
		return false;
	return bound_leaf(B, d->kind, x, ax, k);
}

/* where(c, L, f), L a gather with fill f, every conjunct of c a check that
 * one of L's index vectors is within its dim (`where(valid, x[n, ih, iw,
 * c], 0)` with valid = ih >= 0 && ih < H && ...) -> L: where c fails an
 * index is out of bounds, where L reads f anyway.  An implicit GEMM's
 * padding mask then leaves the gathered operand a load the pipeliner can
 * copy. */
static bool unmask_bounds(Canon *k, BlkOp *op)
{
	BlkOp *ld = op->operands[1]->def;
	const BlkAttr *idx = ld && ld->kind == BLK_OP_LOAD ? blk_op_attr(ld, "idx") : NULL;
	const BlkAttr *fill = ld ? blk_op_attr(ld, "fill") : NULL;
	const BlkAttr *f = op->operands[2]->def && op->operands[2]->def->kind == BLK_OP_CONST
	                           ? blk_op_attr(op->operands[2]->def, "value") : NULL;
	if (!idx || idx->kind != BLK_ATTR_INDEX || !f || !blk_op_gathers(ld))
		return false;
	double fv = !fill ? 0 : fill->kind == BLK_ATTR_FLOAT ? fill->f : (double)fill->i;
	double sv = f->kind == BLK_ATTR_FLOAT ? f->f : (double)f->i;
	if (fv != sv || (fv == 0 && signbit(fv) != signbit(sv)))
		return false;
	Bounds B = { .load = ld, .n = ld->results[0]->type.rank };
	const BlkValue *ref = ld->operands[0];
	int first = -1; /* the result axis the gathers' shape sits at: after the dims before them */
	for (int d = 0, axes = 0; d < idx->index.n && first < 0; d++) {
		BlkIndexKind kd = idx->index.v[d].kind;
		if (kd == BLK_INDEX_GATHER)
			first = axes;
		else if (kd != BLK_INDEX_SCALAR)
			axes++;
	}
	for (int d = 0, o = 1; d < idx->index.n; d++) {
		BlkIndexKind kd = idx->index.v[d].kind;
		if (kd == BLK_INDEX_FULL)
			continue;
		if (kd == BLK_INDEX_GATHER && B.ng < BLK_MAX_RANK) {
			int ax;
			const BlkValue *t = ld->operands[o];
			const BlkValue *u = spread_of(t, t->type.rank, &ax);
			if (u) { /* a vector gather lies along the gathers' place; a tile's axes start there */
				B.idx[B.ng] = u, B.extent[B.ng] = blk_lower_dim(ref->type.dims[d]);
				B.axis[B.ng++] = first + ax;
			}
		}
		o++;
	}
	if (!all_bounds(&B, op->operands[0], op->results[0]->type.rank, 0, 0))
		return false;
	blk_replace_uses(op->parent, op->results[0], op->operands[1]);
	blk_op_erase(op);
	k->changed = true;
	return true;
}

/* ---- select-not, compare-face, commute, transpose-pair, whole-view ----------- */

/* where(!c, a, b) -> where(c, b, a): a mask written negated, its arms
 * swapped (`where(!keep, -inf, s)` is `where(keep, s, -inf)`). */
static void unnegate(Canon *k, BlkOp *op)
{
	const BlkOp *n = op->operands[0]->def;
	if (!n || n->kind != BLK_OP_NOT || n->operands[0]->type.dtype != BLK_BOOL)
		return;
	BlkValue *a = op->operands[1];
	op->operands[0] = n->operands[0];
	op->operands[1] = op->operands[2], op->operands[2] = a;
	k->changed = true;
}

/* Where v goes among a commutative op's operands, first to last: -1 a
 * region's arg (a loop's carry or index), 0 computed (a broadcast of a
 * tile too: which operand's layout an op takes is the tile pass's choice,
 * kept as written), 1 a broadcast scalar or an iota (`pid * B + iota(B)`
 * stays as the examples write it), 2 a splat constant. */
static int spread(const BlkValue *v)
{
	if (!v->def)
		return -1;
	if (is_splat(v))
		return 2;
	if (v->def->kind == BLK_OP_EXPAND_DIMS) /* as what sink-expand-dims makes of it */
		return spread(v->def->operands[0]);
	return is_uniform(v) || v->def->kind == BLK_OP_IOTA;
}

/* A comparison takes its more spread operand second (`S > cols` -> `cols <
 * S`); between equals it faces `<` or `<=` (`rows >= cols` -> `cols <=
 * rows`).  Exact, NaN included (both sides false). */
static BlkOpKind mirror(BlkOpKind kind)
{
	switch (kind) {
	case BLK_OP_LT: return BLK_OP_GT;
	case BLK_OP_LE: return BLK_OP_GE;
	case BLK_OP_GT: return BLK_OP_LT;
	default: return BLK_OP_LE;
	}
}

static void face(Canon *k, BlkOp *op)
{
	int a = spread(op->operands[0]), b = spread(op->operands[1]);
	bool up = op->kind == BLK_OP_GT || op->kind == BLK_OP_GE;
	if (a < b || (a == b && !up))
		return;
	BlkValue *x = op->operands[0];
	op->kind = mirror(op->kind);
	op->operands[0] = op->operands[1], op->operands[1] = x;
	k->changed = true;
}

static bool commutes(BlkOpKind kind)
{
	switch (kind) {
	case BLK_OP_ADD: case BLK_OP_MUL: case BLK_OP_MAX: case BLK_OP_MIN:
	case BLK_OP_AND: case BLK_OP_OR: case BLK_OP_XOR: case BLK_OP_EQ: case BLK_OP_NE:
		return true;
	default:
		return false;
	}
}

/* A commutative op takes a carry first and a scalar (broadcast or splat)
 * second: `scale * s` is `s * scale`, `2.0 * x` is `x * 2.0`, `alpha * l`
 * is `l * alpha`, `expand_dims(alpha, 1) * acc` is `acc * ...`, `max(max(s,
 * axis = 1), m)` is `max(m, ...)`.  Exact (IEEE + and * commute; max and min
 * are the NaN-propagating, +0 > -0 ones, commutative too). */
static void commute(Canon *k, BlkOp *op)
{
	if (op->noperands != 2 || spread(op->operands[0]) <= spread(op->operands[1]))
		return;
	BlkValue *x = op->operands[0];
	op->operands[0] = op->operands[1], op->operands[1] = x;
	k->changed = true;
}

/* An f32 scalar constant, as stored (an f32). */
static bool scalar_f32(const BlkValue *v, float *f)
{
	const BlkAttr *a = v->def && v->def->kind == BLK_OP_CONST && v->type.rank == 0 && v->type.dtype == BLK_F32
	                           ? blk_op_attr(v->def, "value") : NULL;
	if (!a || a->kind != BLK_ATTR_FLOAT)
		return false;
	*f = (float)a->f;
	return true;
}

/* sqrt, rsqrt, + - * / of f32 scalar constants -> the constant: `s /
 * sqrt(D * 1.0)` divides by a constant, which emit_divide.c can do
 * without div.rn.  Exact: each is the one IEEE rounding in f32 that the
 * GPU (sqrt.rn, div.rn, rsqrt as 1 / sqrt) and the interpreter make. */
static bool fold_scalar(Canon *k, BlkOp *op)
{
	float x, y = 0, r;
	if (op->nresults != 1 || op->results[0]->type.rank != 0 || op->results[0]->type.dtype != BLK_F32 || op->noperands < 1 ||
	    op->noperands > 2 || !scalar_f32(op->operands[0], &x) ||
	    (op->noperands == 2 && !scalar_f32(op->operands[1], &y)))
		return false;
	switch (op->kind) {
	case BLK_OP_SQRT: r = sqrtf(x); break;
	case BLK_OP_RSQRT: r = 1.0f / sqrtf(x); break;
	case BLK_OP_ADD: r = x + y; break;
	case BLK_OP_SUB: r = x - y; break;
	case BLK_OP_MUL: r = x * y; break;
	case BLK_OP_DIV: r = x / y; break;
	default: return false;
	}
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, op);
	BlkValue *c = blk_build_const_float(&b, op->loc, op->results[0]->type, r);
	blk_replace_uses(op->parent, op->results[0], c);
	blk_op_erase(op);
	k->changed = true;
	return true;
}

/* transpose(transpose(x)) -> x, both the rank-2 swap. */
static void untranspose(Canon *k, BlkOp *op)
{
	const BlkOp *in = op->operands[0]->def;
	if (!in || in->kind != BLK_OP_TRANSPOSE || op->nattrs || in->nattrs || op->results[0]->type.rank != 2)
		return;
	blk_replace_uses(op->parent, op->results[0], in->operands[0]);
	blk_op_erase(op);
	k->changed = true;
}

/* r.at[:, :] -> r: a view of all of a Ref is the Ref (`atomic_add(c.at[:, :],
 * acc)` is `atomic_add(c, acc)`). */
static void unview(Canon *k, BlkOp *op)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	if (op->noperands != 1 || !idx || !blk_type_equal(&op->results[0]->type, &op->operands[0]->type))
		return;
	for (int i = 0; i < idx->index.n; i++)
		if (idx->index.v[i].kind != BLK_INDEX_FULL)
			return;
	blk_replace_uses(k->c->k->body, op->results[0], op->operands[0]);
	blk_op_erase(op);
	k->changed = true;
}

/* load(view(r, i..) {idx, mask}) {fill, mask}, the load of the whole view
 * with the view's masks -> load(r, i..) {idx, fill, mask}: the same
 * elements, masked alike. */
static void load_through(Canon *k, BlkOp *op)
{
	const BlkOp *v = op->operands[0]->def;
	const BlkAttr *vi = v ? blk_op_attr(v, "idx") : NULL, *vm = v ? blk_op_attr(v, "mask") : NULL;
	const BlkAttr *lm = blk_op_attr(op, "mask");
	if (!vi || v->kind != BLK_OP_VIEW || op->noperands != 1 || blk_op_attr(op, "idx") || !vm != !lm ||
	    (vm && (vm->kind != BLK_ATTR_STRING || lm->kind != BLK_ATTR_STRING || strcmp(vm->s, lm->s) != 0)))
		return;
	BlkValue **ops = BLK_NEW_N(k->c->a, BlkValue *, v->noperands);
	for (int i = 0; i < v->noperands; i++)
		ops[i] = v->operands[i];
	op->operands = ops;
	op->noperands = v->noperands;
	blk_op_set_index(k->c->a, op, "idx", vi->index.n, vi->index.v);
	k->changed = true;
}

/* ---- row-gather ------------------------------------------------------------------- */

/* v is an i32 scalar that is a multiple of b at every launch: a constant,
 * or a product with a constant multiple of b. */
static bool multiple_of(const BlkValue *v, int64_t b)
{
	int64_t c;
	if (blk_lower_const_int(v, &c))
		return c % b == 0;
	const BlkOp *d = v->def;
	if (!d || d->kind != BLK_OP_MUL || v->type.kind != BLK_TYPE_TILE || v->type.rank != 0)
		return false;
	return (blk_lower_const_int(d->operands[1], &c) && c % b == 0) ||
	       (blk_lower_const_int(d->operands[0], &c) && c % b == 0);
}

/* v is a splat constant tile of an i32 value: *c. */
static bool splat_int(const BlkValue *v, int64_t *c)
{
	const BlkOp *d = v->def;
	const BlkAttr *a = d && d->kind == BLK_OP_CONST ? blk_op_attr(d, "value") : NULL;
	if (!a || a->kind != BLK_ATTR_INT)
		return false;
	*c = a->i;
	return true;
}

/* u (i32 [B]) is (broadcast(s) + iota(B)) ~/ G (either order), G a
 * positive multiple of B and s a multiple of B: every element is s ~/ G,
 * since s % G <= G - B.  *s and *G. */
static bool uniform_rows(const BlkValue *u, BlkValue **s, int64_t *G)
{
	const BlkOp *fd = u->def, *add, *bc;
	int64_t B = u->type.rank == 1 ? blk_lower_dim(u->type.dims[0]) : 0;
	if (B <= 0 || !fd || fd->kind != BLK_OP_FLOORDIV || !splat_int(fd->operands[1], G) || *G <= 0 || *G % B ||
	    !(add = fd->operands[0]->def) || add->kind != BLK_OP_ADD)
		return false;
	for (int o = 0; o < 2; o++) {
		const BlkOp *io = add->operands[1 - o]->def;
		bc = add->operands[o]->def;
		if (bc && bc->kind == BLK_OP_BROADCAST && bc->operands[0]->type.kind == BLK_TYPE_TILE && bc->operands[0]->type.rank == 0 && io &&
		    io->kind == BLK_OP_IOTA && multiple_of(bc->operands[0], B)) {
			*s = bc->operands[0];
			return true;
		}
	}
	return false;
}

/* load r {idx = [g, x]} of a rank-2 tile whose row indices are
 * broadcast(expand_dims(u, 1)), u uniform (above) -> load r, s ~/ G {idx
 * = [i, x]}, expand_dims on axis 0, broadcast back: the same elements,
 * masked alike (the row checked once instead of once an element).  True
 * where op was replaced (and erased). */
static bool row_gather(Canon *k, BlkOp *op)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	BlkValue *res = op->results[0], *s;
	if (!idx || idx->kind != BLK_ATTR_INDEX || idx->index.n != 2 || idx->index.v[0].kind != BLK_INDEX_GATHER ||
	    idx->index.v[1].kind == BLK_INDEX_GATHER || idx->index.v[1].kind == BLK_INDEX_SCALAR ||
	    res->type.rank != 2 || op->noperands < 2)
		return false;
	const BlkOp *bc = op->operands[1]->def, *ex;
	int64_t G;
	if (!bc || bc->kind != BLK_OP_BROADCAST || !(ex = bc->operands[0]->def) || ex->kind != BLK_OP_EXPAND_DIMS ||
	    blk_op_int(ex, "axis", -1) != 1 || !uniform_rows(ex->operands[0], &s, &G))
		return false;
	BlkBuilder b;
	blk_builder_before(&b, k->c->a, op);
	BlkValue *g = blk_lower_i32(&b, op->loc, G);
	BlkValue *fo[2] = { s, g };
	BlkValue *row = blk_build1(&b, BLK_OP_FLOORDIV, op->loc, blk_type_scalar(BLK_I32), 2, fo);
	BlkValue **ops = BLK_NEW_N(k->c->a, BlkValue *, op->noperands);
	memcpy(ops, op->operands, sizeof *ops * (size_t)op->noperands);
	ops[1] = row;
	BlkType rt = squeezed(&res->type, 0);
	BlkOp *ld = blk_build(&b, BLK_OP_LOAD, op->loc, op->noperands, ops, 1, &rt, 0);
	ld->attrs = BLK_NEW_N(k->c->a, BlkAttr, op->nattrs); /* fill, mask: as they were */
	memcpy(ld->attrs, op->attrs, sizeof *ld->attrs * (size_t)op->nattrs);
	ld->nattrs = op->nattrs;
	BlkIndex v[2] = { { BLK_INDEX_SCALAR, NULL, 0 }, idx->index.v[1] };
	blk_op_set_index(k->c->a, ld, "idx", 2, v);
	BlkType et = res->type;
	et.dims[0] = blk_sym_const(k->c->a, 1);
	BlkValue *e = expand(&b, op->loc, ld->results[0], 0, et);
	BlkValue *full = blk_build1(&b, BLK_OP_BROADCAST, op->loc, res->type, 1, &e);
	full->name = res->name;
	blk_replace_uses(k->c->k->body, res, full);
	blk_op_erase(op);
	k->changed = true;
	return true;
}

/* ---- broadcast-at-use ---------------------------------------------------------- */

/* A broadcast moves down to just before the first op that reads it (in its
 * region, or in a region of that op): `scale * dot(x, kb.T)` broadcasts
 * the scale before the dot is computed, `dot(x, kb.T) * scale` after; both
 * now broadcast it between the dot and the multiply.  Order only. */
static void place(Canon *k, BlkOp *op)
{
	BlkValue *v = op->results[0];
	BlkOp *user = op->next;
	bool adjacent = true; /* only broadcasts between (they keep their order) */
	for (; user; adjacent &= user->kind == BLK_OP_BROADCAST, user = user->next) {
		if (blk_lower_op_reads(user, v))
			break;
	}
	if (!user || adjacent)
		return;
	blk_lower_move_before(op, user);
	k->changed = true;
}

/* ---- hoist-invariant-load ------------------------------------------------------ */

/* A load of an `in` array inside a loop whose Ref and indices come from
 * outside it -> before the loop: the query block of an attention read in
 * the loop (`dot(q[...], kb.T)`) is read once, as `let x = q[...]` before
 * the loop reads it.  Nothing writes an `in` array and a masked load never
 * faults, so the value is the same even where the loop runs no iteration. */
static void hoist(Canon *k, BlkOp *op)
{
	BlkOp *loop = op->parent ? op->parent->parent : NULL;
	if (!loop || loop->kind != BLK_OP_FOR || !blk_loop_read_only(k->c, op->operands[0]))
		return;
	for (int i = 0; i < op->noperands; i++)
		if (blk_lower_within(op->parent, op->operands[i]))
			return;
	blk_lower_move_before(op, loop);
	k->changed = true;
}

/* ---- same-load ------------------------------------------------------------------ */

/* A load of an `in` array repeating an earlier load of its region -> that
 * one's value (nothing writes an `in` array in between). */
static void reuse_load(Canon *k, BlkOp *op)
{
	if (!blk_loop_read_only(k->c, op->operands[0]))
		return;
	/* at most SAME_LOAD_LOOKBACK ops back: scanning every earlier op of a
	 * long region for each load was quadratic (8000 when/else statements,
	 * whose loads branch-merge gathers into one region: 17 s) */
	int n = 0;
	for (BlkOp *e = op->prev; e && n < SAME_LOAD_LOOKBACK; e = e->prev, n++) {
		if (e->kind != BLK_OP_LOAD || !blk_lower_alike(e, op))
			continue;
		bool same = true;
		for (int i = 0; i < op->noperands && same; i++)
			same = blk_lower_equivalent(e->operands[i], op->operands[i], 8);
		if (!same)
			continue;
		/* the readers, all later in the walk, take e's value as rewrite()
		 * reaches them: replacing in the whole region at each reuse was
		 * quadratic (4000 unrolled stores of repeated loads: 2 s) */
		blk_pmap_put(k->c->a, &k->subst, op->results[0], e->results[0]);
		blk_op_erase(op);
		k->changed = true;
		return;
	}
}

/* ---- scratch-carry ---------------------------------------------------------------- */

/* op reads (load) or writes (store) the whole of Ref r, and nothing else
 * of r: no indices, no view, r not its value. */
static bool whole_access(const BlkOp *op, const BlkValue *r)
{
	int n = op->kind == BLK_OP_LOAD ? 1 : op->kind == BLK_OP_STORE ? 2 : 0;
	const BlkAttr *idx = blk_op_attr(op, "idx");
	if (!n || op->noperands != n || op->operands[0] != r || (n == 2 && op->operands[1] == r) || !idx)
		return false;
	for (int i = 0; i < idx->index.n; i++)
		if (idx->index.v[i].kind != BLK_INDEX_FULL)
			return false;
	return true;
}

/* What carry_spill() found: the store before the loop, the loop, the
 * load and the store in its body, the loads after it. */
enum { MAX_AFTER = 8 };
typedef struct Spill {
	BlkOp *init, *loop, *load, *store, *after[MAX_AFTER];
	int nafter;
} Spill;

/* The uses of scratch Ref r in the body top: one whole store, then a loop
 * whose body's top level loads r whole and then stores it whole, then
 * whole loads only; no other use anywhere. */
static bool find_spill(BlkRegion *top, const BlkValue *r, Spill *s)
{
	*s = (Spill){ 0 };
	for (BlkOp *op = top->first; op; op = op->next) {
		bool direct = false;
		for (int i = 0; i < op->noperands; i++)
			direct |= op->operands[i] == r;
		int nested = 0;
		for (int i = 0; i < op->nregions; i++)
			nested += blk_lower_uses(op->regions[i], r);
		if (!direct && !nested)
			continue;
		if (!s->init) {
			if (nested || op->kind != BLK_OP_STORE || !whole_access(op, r))
				return false;
			s->init = op;
		} else if (!s->loop) {
			if (direct || op->kind != BLK_OP_FOR || nested != 2)
				return false;
			s->loop = op;
			for (BlkOp *b = op->regions[0]->first; b; b = b->next)
				if (b->kind == BLK_OP_LOAD && !s->load && whole_access(b, r))
					s->load = b;
				else if (b->kind == BLK_OP_STORE && s->load && !s->store && whole_access(b, r))
					s->store = b;
			if (!s->store)
				return false;
		} else if (nested || op->kind != BLK_OP_LOAD || !whole_access(op, r) || s->nafter == MAX_AFTER) {
			return false;
		} else {
			s->after[s->nafter++] = op;
		}
	}
	if (!s->loop)
		return false;
	const BlkType *t = &s->load->results[0]->type; /* (the frontend broadcasts what a store writes) */
	return blk_type_equal(&s->init->operands[1]->type, t) && blk_type_equal(&s->store->operands[1]->type, t);
}

/* A scratch Ref stored whole before a loop, read and written whole once
 * per iteration, read whole after it -> a loop carry: Pallas's `acc_ref[...]
 * += dot(...)` accumulator is `fori_loop`'s `acc + dot(...)`.  The value
 * each load gives is the value the store before it wrote, so the carry
 * holds the same bits (where the loop runs no iteration too).  The loop
 * may be a `seq` grid axis's, across whose iterations scratch persists:
 * only with its first and last iterations' conditional stores peeled off
 * (seq_loop.c) is the whole store before it and the load after it.
 *
 * The same for an output's block used as the accumulator (write_back; JAX's
 * Pallas tutorial: `o_ref[...] = zeros` on the first K step, `o_ref[...]
 * += dot(...)` on each): the stores before and in the loop become one
 * store of the carry after it.  Only the last value of the block is ever
 * seen -- no other program writes or reads it, and this one reads it only
 * in the loop and after, as the carry -- so the memory ends the same. */
static void carry_spill(Canon *k, BlkValue *r, bool write_back)
{
	BlkRegion *top = k->c->k->body;
	Spill s;
	if (!find_spill(top, r, &s))
		return;
	BlkLoop L = { .c = k->c, .loop = s.loop, .body = s.loop->regions[0] };
	BlkValue *arg = blk_loop_add_carry(&L, s.init->operands[1], s.store->operands[1]);
	BlkValue *res = s.loop->results[s.loop->nresults - 1];
	blk_replace_uses(L.body, s.load->results[0], arg);
	if (write_back) {
		BlkBuilder b;
		if (s.loop->next)
			blk_builder_before(&b, k->c->a, s.loop->next);
		else
			blk_builder_at_end(&b, k->c->a, top);
		BlkValue *ops[2] = { r, res };
		BlkOp *st = blk_build(&b, BLK_OP_STORE, s.store->loc, 2, ops, 0, NULL, 0);
		st->attrs = s.store->attrs, st->nattrs = s.store->nattrs;
	}
	blk_op_erase(s.load), blk_op_erase(s.store), blk_op_erase(s.init);
	for (int i = 0; i < s.nafter; i++) {
		blk_replace_uses(top, s.after[i]->results[0], res);
		blk_op_erase(s.after[i]);
	}
	k->changed = true;
}

static void scratch_carries(Canon *k)
{
	const BlkKernel *kn = k->c->k;
	for (int pi = 0; pi < kn->nparams && pi < kn->body->nargs; pi++)
		if (kn->params[pi].access == BLK_ACCESS_SCRATCH)
			carry_spill(k, kn->body->args[pi], false);
	for (BlkOp *op = kn->body->first, *next; op; op = next) {
		next = op->next;
		int pi = op->kind == BLK_OP_BLOCK_REF ? (int)blk_op_int(op, "param", -1) : -1;
		if (pi >= 0 && pi < kn->nparams &&
		    (kn->params[pi].access == BLK_ACCESS_OUT || kn->params[pi].access == BLK_ACCESS_INOUT))
			carry_spill(k, op->results[0], true);
	}
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
		Canon body = { .c = k->c, .changed = true };
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

/* ---- loop-nest ------------------------------------------------------------------ */

enum { MAX_NEST_TRIPS = 1 << 30 };

/* A fori_loop's `for`: from 0 by 1 to a constant n >= 1, not unrolled. */
static bool counted(const BlkOp *f, int64_t *n)
{
	int64_t lo, step;
	return f->kind == BLK_OP_FOR && blk_op_int(f, "unroll", 0) == 0 && blk_lower_const_int(f->operands[0], &lo) &&
	       lo == 0 && blk_lower_const_int(f->operands[2], &step) && step == 1 &&
	       blk_lower_const_int(f->operands[1], n) && *n >= 1;
}

/* The inner loop of a perfect nest: outer's body is pure ops of its iv
 * (no carry), then a `for` started from the outer carries, its results
 * yielded as they are. */
static BlkOp *nested(BlkOp *outer)
{
	BlkRegion *ob = outer->regions[0];
	BlkOp *y = ob->last, *in = y ? y->prev : NULL;
	int nc = outer->nresults;
	if (!in || in->kind != BLK_OP_FOR || in->nresults != nc || y->noperands != nc || in->noperands != 3 + nc)
		return NULL;
	for (int i = 0; i < nc; i++)
		if (y->operands[i] != in->results[i] || in->operands[3 + i] != ob->args[1 + i])
			return NULL;
	for (int i = 0; i < 3; i++) /* the inner bounds: the same for every outer iteration */
		if (blk_lower_depends(in->operands[i], ob->args[0]))
			return NULL;
	for (const BlkOp *op = ob->first; op != in; op = op->next) {
		if (!(blk_op_flags(op->kind) & BLK_OPF_PURE) || op->nregions)
			return NULL;
		for (int i = 1; i < ob->nargs; i++)
			if (blk_lower_op_reads(op, ob->args[i]))
				return NULL;
	}
	return in;
}

/* for i < n1 { pure(i); for j < n2 { body(i, j) } } with the carries
 * passed straight through -> for t < n1 * n2 { i = t ~/ n2; j = t % n2;
 * pure(i); body(i, j) }: the same iterations in the same order.  A conv
 * written with its taps as loops around the channel loop (`for r, for s,
 * for c`) is then one loop, which the pipeliner keeps full across the
 * taps instead of draining it at every inner loop's end. */
static void flatten(Canon *k, BlkOp *outer)
{
	int64_t n1, n2;
	BlkOp *in = counted(outer, &n1) ? nested(outer) : NULL;
	if (!in || !counted(in, &n2) || n1 > MAX_NEST_TRIPS / n2)
		return;
	BlkArena *a = k->c->a;
	BlkRegion *ob = outer->regions[0], *ib = in->regions[0];
	BlkValue *t = ob->args[0];
	BlkBuilder b;
	blk_builder_before(&b, a, outer);
	outer->operands[1] = blk_lower_i32(&b, outer->loc, n1 * n2);
	BlkValue *span = blk_lower_i32(&b, outer->loc, n2);
	blk_builder_before(&b, a, ob->first);
	BlkValue *o[2] = { t, span };
	BlkValue *i = blk_build1(&b, BLK_OP_FLOORDIV, outer->loc, blk_type_scalar(BLK_I32), 2, o);
	i->name = t->name;
	blk_replace_uses(ob, t, i);
	i->def->operands[0] = t;
	blk_builder_before(&b, a, in);
	BlkValue *j = blk_build1(&b, BLK_OP_MOD, in->loc, blk_type_scalar(BLK_I32), 2, o);
	j->name = ib->args[0]->name;
	blk_replace_uses(ib, ib->args[0], j);
	for (int c = 1; c < ib->nargs; c++)
		blk_replace_uses(ib, ib->args[c], ob->args[c]);
	BlkOp *iy = ib->last, *y = ob->last;
	for (int c = 0; c < y->noperands; c++)
		y->operands[c] = iy->operands[c];
	blk_op_erase(iy);
	for (BlkOp *op = ib->first, *next; op; op = next) {
		next = op->next;
		blk_lower_move_before(op, in);
	}
	blk_op_erase(in);
	k->changed = true;
}

/* ---- extract-expand ------------------------------------------------------------ */

/* extract(expand_dims(v, axis = a)) at index 0 of dim a, every other dim
 * whole -> v: `mu[:, 0]` of a keepdims statistic is the statistic (it
 * went through shared memory to be taken apart again: 6 barriers in a
 * layernorm that also stores its mean).  True where op was replaced. */
static bool extract_expand(Canon *k, BlkOp *op)
{
	const BlkOp *ex = op->operands[0]->def;
	const BlkAttr *idx = blk_op_attr(op, "idx");
	if (!ex || ex->kind != BLK_OP_EXPAND_DIMS || !idx || idx->kind != BLK_ATTR_INDEX ||
	    op->noperands != 2 || idx->index.n != op->operands[0]->type.rank)
		return false;
	int a = (int)blk_op_int(ex, "axis", -1);
	int64_t at;
	for (int d = 0; d < idx->index.n; d++)
		if (idx->index.v[d].kind != (d == a ? BLK_INDEX_SCALAR : BLK_INDEX_FULL))
			return false;
	BlkValue *v = ex->operands[0], *res = op->results[0];
	if (!splat_int(op->operands[1], &at) || at != 0 || !blk_type_equal(&v->type, &res->type))
		return false;
	blk_replace_uses(k->c->k->body, res, v);
	blk_op_erase(op);
	k->changed = true;
	return true;
}

/* ---- the pass ------------------------------------------------------------------ */

static void rewrite(void *ctx, BlkOp *op)
{
	Canon *k = ctx;
	for (int i = 0; i < op->noperands; i++) { /* reuse_load's replacements */
		BlkValue *to;
		while ((to = blk_pmap_get(&k->subst, op->operands[i])))
			op->operands[i] = to;
	}
	switch (op->kind) {
	case BLK_OP_SELECT:
		if (unmask_bounds(ctx, op))
			return; /* replaced */
		unnegate(ctx, op);
		combine(ctx, op);
		return;
	case BLK_OP_LT: case BLK_OP_LE: case BLK_OP_GT: case BLK_OP_GE:
		face(ctx, op);
		sink(ctx, op);
		return;
	case BLK_OP_TRANSPOSE:
		untranspose(ctx, op);
		return;
	case BLK_OP_LOAD:
		load_through(ctx, op);
		if (row_gather(ctx, op))
			return; /* replaced */
		hoist(ctx, op);
		reuse_load(ctx, op);
		return;
	case BLK_OP_BROADCAST:
		place(ctx, op);
		return;
	case BLK_OP_VIEW:
		unview(ctx, op);
		return;
	case BLK_OP_EXTRACT:
		extract_expand(ctx, op);
		return;
	default:
		if (fold_scalar(ctx, op))
			return; /* replaced */
		if (commutes(op->kind))
			commute(ctx, op);
		sink(ctx, op);
	}
}

static void rewrite_loops(void *ctx, BlkOp *op)
{
	Canon *k = ctx;
	if (blk_canon_when(k->c, op)) {
		k->changed = true;
		return; /* op is gone */
	}
	squeeze(ctx, op);
	flatten(ctx, op);
}

/* uses: value -> how many operands read it (counted once for the whole
 * kernel: asking each op's uses of the kernel anew was quadratic, 61 % of
 * 4000 unrolled stores' compile). */
static void count_uses(void *ctx, BlkOp *op)
{
	Canon *k = ctx;
	for (int i = 0; i < op->noperands; i++)
		blk_pmap_put(k->c->a, &k->uses, op->operands[i],
		             (void *)((uintptr_t)blk_pmap_get(&k->uses, op->operands[i]) + 1));
}

/* Erases expand_dims, broadcasts, constants, nots, transposes and selects
 * nothing reads any more (what the rules left behind), innermost and last
 * first, so an op whose only reader goes goes too. */
static void erase_dead(Canon *k, BlkRegion *r)
{
	for (BlkOp *op = r->last, *prev; op; op = prev) {
		prev = op->prev;
		for (int i = 0; i < op->nregions; i++)
			erase_dead(k, op->regions[i]);
		bool orphan = op->kind == BLK_OP_EXPAND_DIMS || op->kind == BLK_OP_CONST || op->kind == BLK_OP_SELECT ||
		              op->kind == BLK_OP_NOT || op->kind == BLK_OP_TRANSPOSE || op->kind == BLK_OP_BROADCAST ||
		              op->kind == BLK_OP_VIEW;
		if (!orphan || blk_pmap_get(&k->uses, op->results[0]))
			continue;
		for (int i = 0; i < op->noperands; i++)
			blk_pmap_put(k->c->a, &k->uses, op->operands[i],
			             (void *)((uintptr_t)blk_pmap_get(&k->uses, op->operands[i]) - 1));
		blk_op_erase(op);
	}
}

bool blk_lower_canonicalize(LowerCtx *c)
{
	Canon k = { .c = c, .changed = true };
	bool any = false;
	for (int round = 0; k.changed && round < 64; round++) {
		k.changed = false;
		scratch_carries(&k);
		blk_lower_walk(c->k->body, rewrite, &k);
		blk_lower_walk(c->k->body, rewrite_loops, &k);
		any |= k.changed;
	}
	if (any) {
		blk_lower_walk(c->k->body, count_uses, &k);
		erase_dead(&k, c->k->body);
	}
	return true;
}
