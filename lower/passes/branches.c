/* branches.c - `when`s that spell one step two ways become one
 * straight-line step.
 *
 * Requires: shapes constant, block refs lowered (blockspec.c).  Runs
 * before seq-loop, whose loop-bound step wants one `when` around the whole
 * step, and its rules run again inside canonicalize's fixed point.
 * Produces: these rules applied to a fixed point.
 *
 *   when-const    when true {A} else {B} -> A; when false -> B (a
 *                 condition compile-time parameters decide: `when !CAUSAL
 *                 || ...`).
 *   when-else     when c {A}; when !c {B} (nothing but pure ops between,
 *                 !c spelled as the opposite compare of the same values
 *                 or as not(c)) -> when c {A} else {B}; and when r && e
 *                 {A}; when r && !e {B} -> when r { when e {A} else {B} }.
 *   branch-merge  when c {A} else {B} where A and B make the same effects
 *                 (the same stores and loads, in one order, of values
 *                 computed alike) and differ only in pure, cheap
 *                 sub-expressions (elementwise ops, iotas, broadcasts: no
 *                 dot, reduction or memory access) -> those effects once,
 *                 each place the branches differ where(c, a, b).
 *
 * Causal attention written as Pallas authors write it -- a key block that
 * crosses the diagonal takes the masked online-softmax step, the others
 * the plain one, the step a helper called twice -- is one step on
 * where(c, where(mask, s, -inf), s), which mask-combine makes
 * where(!c || mask, s, -inf): the form of the kernel that masks every
 * block, whose scratch statistics scratch-carry then carries in registers
 * and whose diagonal blocks loop-split splits off.  Left as two branches,
 * each branch's dot and scratch stores went through shared memory (56
 * barriers, 215 KB).  Both arms of a differing value are computed (they
 * are pure and cheap: a mask, a scale); everything else runs once as
 * before, so no value changes.
 */
#include "lower/lower_int.h"

enum {
	MAX_LEAVES = 8,  /* places the branches may differ */
	MAX_LEAF_OPS = 32, /* ops computing both arms of those places, in all */
	DEPTH = 64,
};

/* Erases a `when` and what is left in its branches, last first (nothing
 * outside reads a branch's values). */
static void erase_when(BlkOp *op)
{
	for (int r = 0; r < 2; r++)
		for (BlkOp *x = op->regions[r]->last, *p; x; x = p) {
			p = x->prev;
			blk_op_erase(x);
		}
	blk_op_erase(op);
}

/* ---- when-const --------------------------------------------------------------- */

/* v is a constant, or a not of one (another rule's folding leaves
 * `!false`). */
static bool const_cond(const BlkValue *v, int64_t *out)
{
	if (v->def && v->def->kind == BLK_OP_NOT && const_cond(v->def->operands[0], out)) {
		*out = !*out;
		return true;
	}
	return blk_lower_const_int(v, out);
}

static bool when_const(BlkOp *op)
{
	int64_t v;
	if (op->kind != BLK_OP_IF || !const_cond(op->operands[0], &v))
		return false;
	BlkRegion *taken = op->regions[v ? 0 : 1];
	for (BlkOp *x = taken->first, *n; x; x = n) {
		n = x->next;
		blk_lower_move_before(x, op);
	}
	erase_when(op); /* the other branch: nothing outside reads its values */
	return true;
}

/* ---- when-else ---------------------------------------------------------------- */

static BlkOpKind negated(BlkOpKind k)
{
	switch (k) {
	case BLK_OP_LT: return BLK_OP_GE;
	case BLK_OP_LE: return BLK_OP_GT;
	case BLK_OP_GT: return BLK_OP_LE;
	case BLK_OP_GE: return BLK_OP_LT;
	case BLK_OP_EQ: return BLK_OP_NE;
	case BLK_OP_NE: return BLK_OP_EQ;
	default: return BLK_OP_CONST; /* none */
	}
}

static BlkOpKind swapped(BlkOpKind k)
{
	switch (k) {
	case BLK_OP_LT: return BLK_OP_GT;
	case BLK_OP_LE: return BLK_OP_GE;
	case BLK_OP_GT: return BLK_OP_LT;
	case BLK_OP_GE: return BLK_OP_LE;
	default: return k;
	}
}

/* d is !c at every launch: not(c), c not(d) (c computed alike), or the
 * opposite compare of the same (equivalent) operands, either way round. */
static bool opposite(const BlkValue *c, const BlkValue *d)
{
	const BlkOp *x = c->def, *y = d->def;
	if (!x || !y)
		return false;
	if ((y->kind == BLK_OP_NOT && blk_lower_equivalent(y->operands[0], c, 8)) ||
	    (x->kind == BLK_OP_NOT && blk_lower_equivalent(x->operands[0], d, 8)))
		return true;
	BlkOpKind n = negated(x->kind);
	if (n == BLK_OP_CONST || x->noperands != 2 || y->noperands != 2 || x->nattrs || y->nattrs)
		return false;
	const BlkValue *a = x->operands[0], *b = x->operands[1];
	/* !(a < b) is b <= a when the operands are integers (no NaN) */
	if (!blk_dtype_is_int(a->type.dtype) || a->type.rank != 0)
		return false;
	if (y->kind == n && blk_lower_equivalent(y->operands[0], a, 8) && blk_lower_equivalent(y->operands[1], b, 8))
		return true;
	return y->kind == swapped(n) && blk_lower_equivalent(y->operands[0], b, 8) &&
	       blk_lower_equivalent(y->operands[1], a, 8);
}

static bool empty(const BlkRegion *r)
{
	return !r->first;
}

/* c = r && e and d = r' && e' (either way round) with r' the same as r
 * and e' the opposite of e: r and e in *r, *e. */
static bool shared_conjunct(const BlkValue *c, const BlkValue *d, BlkValue **r, BlkValue **e)
{
	const BlkOp *x = c->def, *y = d->def;
	if (!x || !y || x->kind != BLK_OP_AND || y->kind != BLK_OP_AND || c->type.rank != 0)
		return false;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (blk_lower_equivalent(x->operands[i], y->operands[j], 8) &&
			    opposite(x->operands[1 - i], y->operands[1 - j])) {
				*r = x->operands[i], *e = x->operands[1 - i];
				return true;
			}
	return false;
}

/* op is the second `when`: the walk may erase it (it has its next). */
static bool when_else(LowerCtx *c, BlkOp *op)
{
	if (op->kind != BLK_OP_IF || op->nregions != 2 || !empty(op->regions[1]))
		return false;
	BlkOp *first = op->prev;
	while (first && first->nregions == 0 && (blk_op_flags(first->kind) & BLK_OPF_PURE))
		first = first->prev;
	if (!first || first->kind != BLK_OP_IF || first->nregions != 2 || !empty(first->regions[1]))
		return false;
	BlkValue *r, *e;
	BlkOp *into = first;
	if (!opposite(first->operands[0], op->operands[0])) {
		if (!shared_conjunct(first->operands[0], op->operands[0], &r, &e))
			return false;
		/* when r { when e {A} else {B} }: e is computed before the first
		 * `when` (it is an operand of its condition) */
		BlkBuilder b;
		BlkRegion *then = first->regions[0];
		if (then->first)
			blk_builder_before(&b, c->a, then->first);
		else
			blk_builder_at_end(&b, c->a, then);
		into = blk_build(&b, BLK_OP_IF, op->loc, 1, &e, 0, NULL, 2);
		blk_lower_move_to_end(into->next, into->regions[0]);
		first->operands[0] = r;
	}
	/* the pure ops between move before the first `when` (B may read them;
	 * they read no memory and no value of A, so A's effects do not change
	 * them), and B's ops into the else region (`if` regions have no
	 * terminator) */
	for (BlkOp *x = first->next, *n; x != op; x = n) {
		n = x->next;
		blk_lower_move_before(x, first);
	}
	blk_lower_move_to_end(op->regions[0]->first, into->regions[1]);
	blk_op_erase(op);
	return true;
}

/* ---- branch-merge ------------------------------------------------------------- */

enum { MAX_EFFECTS = 64, MAX_PAIRING = 256 /* ops a branch, for the pairing's n^2 */ };

typedef struct Merge {
	LowerCtx *c;
	BlkLoc loc; /* the `when`'s */
	BlkRegion *ra, *rb;
	int neffects;
	BlkOp *ea[MAX_EFFECTS], *eb[MAX_EFFECTS]; /* the effects, in order */
	BlkPtrMap ab, ba;   /* values of A paired with the values of B they equal */
	BlkPtrMap need;     /* value -> 1 + the last effect its computation reads */
	int nleaves, leaf_ops;
	BlkValue *la[MAX_LEAVES], *lb[MAX_LEAVES];
	BlkValue *sel[MAX_LEAVES]; /* build: where(c, la, lb) */
	BlkPtrMap seen;     /* cost: leaf ops counted */
	BlkPtrMap vm, vma, vmb; /* build: A's values, leaf arms' clones */
} Merge;

static bool inside(const BlkRegion *r, const BlkValue *v)
{
	return v->def && v->def->parent == r;
}

static bool paired(const Merge *m, const BlkValue *v)
{
	return blk_pmap_get(&m->ab, v) || blk_pmap_get(&m->ba, v);
}

static void pair(Merge *m, BlkOp *x, BlkOp *y)
{
	for (int i = 0; i < x->nresults; i++) {
		blk_pmap_put(m->c->a, &m->ab, x->results[i], y->results[i]);
		blk_pmap_put(m->c->a, &m->ba, y->results[i], x->results[i]);
	}
}

/* The next effect (an op that is not pure, or has regions) of r from op on. */
static BlkOp *effect(BlkOp *op)
{
	while (op && op->nregions == 0 && (blk_op_flags(op->kind) & (BLK_OPF_PURE | BLK_OPF_TERM)))
		op = op->next;
	return op;
}

/* A's effects pair with B's, in order, op for op; their results pair. */
static bool pair_effects(Merge *m)
{
	BlkOp *x = effect(m->ra->first), *y = effect(m->rb->first);
	for (; x && y; x = effect(x->next), y = effect(y->next)) {
		if (m->neffects == MAX_EFFECTS || x->nregions || y->nregions || !blk_lower_alike(x, y))
			return false;
		m->ea[m->neffects] = x, m->eb[m->neffects] = y;
		m->neffects++;
		pair(m, x, y);
		for (int i = 0; i < x->nresults; i++) { /* effect e's results: need e + 1 */
			blk_pmap_put(m->c->a, &m->need, x->results[i], (void *)(intptr_t)(m->neffects + 1));
			blk_pmap_put(m->c->a, &m->need, y->results[i], (void *)(intptr_t)(m->neffects + 1));
		}
	}
	return !x && !y;
}

/* a stands for b: one value from outside, or paired. */
static bool same(const Merge *m, const BlkValue *a, const BlkValue *b)
{
	return a == b || blk_pmap_get(&m->ab, a) == b;
}

/* Pairs the pure ops of A and B that compute alike on values that stand
 * for one another (value numbering across the two branches), until no
 * more pair: the step a helper computes in both. */
static void pair_pure(Merge *m)
{
	int n = 0;
	for (BlkOp *x = m->ra->first; x; x = x->next)
		n++;
	for (BlkOp *y = m->rb->first; y; y = y->next)
		n++;
	if (n > 2 * MAX_PAIRING)
		return;
	for (bool more = true; more;) {
		more = false;
		for (BlkOp *x = m->ra->first; x; x = x->next) {
			if (!x->nresults || x->nregions || !(blk_op_flags(x->kind) & BLK_OPF_PURE) || paired(m, x->results[0]))
				continue;
			for (BlkOp *y = m->rb->first; y; y = y->next) {
				if (y->kind != x->kind || paired(m, y->results[0]) || !blk_lower_alike(x, y))
					continue;
				bool ok = true;
				for (int i = 0; ok && i < x->noperands; i++)
					ok = same(m, x->operands[i], y->operands[i]);
				if (ok) {
					pair(m, x, y);
					more = true;
					break;
				}
			}
		}
	}
}

/* 1 + the last effect of r that v's computation in r reads (0: none);
 * the map holds it plus one. */
static int need(Merge *m, const BlkRegion *r, const BlkValue *v, int depth)
{
	if (!inside(r, v))
		return 0;
	intptr_t n = (intptr_t)blk_pmap_get(&m->need, v);
	if (n)
		return (int)n - 1;
	if (depth == 0)
		return MAX_EFFECTS + 1;
	int most = 0;
	const BlkOp *d = v->def;
	for (int i = 0; i < d->noperands; i++) {
		int k = need(m, r, d->operands[i], depth - 1);
		most = k > most ? k : most;
	}
	blk_pmap_put(m->c->a, &m->need, v, (void *)(intptr_t)(most + 1));
	return most;
}

/* v's computation in r, up to values from outside r or paired, is pure
 * and cheap; counts its ops. */
static bool cheap(Merge *m, const BlkRegion *r, const BlkValue *v, int depth)
{
	if (!inside(r, v) || paired(m, v) || blk_pmap_get(&m->seen, v))
		return true;
	const BlkOp *d = v->def;
	unsigned f = blk_op_flags(d->kind);
	bool ok = (f & BLK_OPF_PURE) && !d->nregions && d->nresults == 1 &&
	          ((f & BLK_OPF_ELEMENTWISE) || d->kind == BLK_OP_BROADCAST || d->kind == BLK_OP_EXPAND_DIMS ||
	           d->kind == BLK_OP_IOTA || d->kind == BLK_OP_CONST);
	if (!ok || depth == 0 || ++m->leaf_ops > MAX_LEAF_OPS)
		return false;
	blk_pmap_put(m->c->a, &m->seen, v, (void *)1);
	for (int i = 0; i < d->noperands; i++)
		if (!cheap(m, r, d->operands[i], depth - 1))
			return false;
	return true;
}

static bool leaf(Merge *m, BlkValue *a, BlkValue *b)
{
	for (int i = 0; i < m->nleaves; i++)
		if (m->la[i] == a && m->lb[i] == b)
			return true;
	if (m->nleaves == MAX_LEAVES || !blk_type_equal(&a->type, &b->type) || a->type.kind == BLK_TYPE_REF ||
	    !cheap(m, m->ra, a, DEPTH) || !cheap(m, m->rb, b, DEPTH))
		return false;
	m->la[m->nleaves] = a, m->lb[m->nleaves] = b;
	m->nleaves++;
	return true;
}

/* a (of A or from outside) and b (of B or from outside) can stand for one
 * another: they do, or they are results of alike pure ops on values that
 * can, or a leaf. */
static bool unify(Merge *m, BlkValue *a, BlkValue *b, int depth)
{
	if (same(m, a, b))
		return true;
	const BlkOp *x = a->def, *y = b->def;
	if (!paired(m, a) && !paired(m, b) && inside(m->ra, a) && inside(m->rb, b) && depth > 0 &&
	    a->index == b->index && (blk_op_flags(x->kind) & BLK_OPF_PURE) && blk_lower_alike(x, y)) {
		pair(m, (BlkOp *)x, (BlkOp *)y);
		bool ok = true;
		for (int i = 0; ok && i < x->noperands; i++)
			ok = unify(m, x->operands[i], y->operands[i], depth - 1);
		if (ok)
			return true;
		/* a leaf then, if it is cheap; the pairs made below stay (they
		 * pair values that are equal) */
	}
	return leaf(m, a, b);
}

/* Every effect's operands unify, and compute from earlier effects only. */
static bool match(Merge *m)
{
	if (!pair_effects(m))
		return false;
	pair_pure(m);
	for (int e = 0; e < m->neffects; e++) {
		BlkOp *x = m->ea[e], *y = m->eb[e];
		for (int i = 0; i < x->noperands; i++) {
			BlkValue *a = x->operands[i], *b = y->operands[i];
			/* a Ref operand must be one Ref, not a leaf */
			if (a->type.kind == BLK_TYPE_REF && !same(m, a, b))
				return false;
			if (!unify(m, a, b, DEPTH) || need(m, m->ra, a, DEPTH) > e || need(m, m->rb, b, DEPTH) > e)
				return false;
		}
	}
	return true;
}

static BlkValue *merged(Merge *m, BlkBuilder *b, BlkValue *cond, BlkValue *a, BlkValue *bv);

/* A clone of the leaf arm v of region r, at b: its values from outside r
 * as they are, its paired ones merged. */
static BlkValue *arm(Merge *m, BlkBuilder *b, BlkValue *cond, BlkPtrMap *vm, const BlkRegion *r, BlkValue *v)
{
	if (!inside(r, v))
		return v;
	BlkValue *p = blk_pmap_get(r == m->ra ? &m->ab : &m->ba, v);
	if (p)
		return r == m->ra ? merged(m, b, cond, v, p) : merged(m, b, cond, p, v);
	BlkValue *n = blk_pmap_get(vm, v);
	if (n)
		return n;
	BlkOp *d = v->def;
	BlkValue **xs = BLK_NEW_N(m->c->a, BlkValue *, d->noperands + 1);
	for (int i = 0; i < d->noperands; i++)
		xs[i] = arm(m, b, cond, vm, r, d->operands[i]);
	n = blk_build1(b, d->kind, d->loc, v->type, d->noperands, xs);
	n->def->attrs = d->attrs, n->def->nattrs = d->nattrs;
	n->name = v->name;
	blk_pmap_put(m->c->a, vm, v, n);
	return n;
}

/* x (of A, paired with y of B) cloned at b on merged operands. */
static BlkOp *clone_merged(Merge *m, BlkBuilder *b, BlkValue *cond, BlkOp *x, BlkOp *y)
{
	BlkValue **xs = BLK_NEW_N(m->c->a, BlkValue *, x->noperands + 1);
	for (int i = 0; i < x->noperands; i++)
		xs[i] = merged(m, b, cond, x->operands[i], y->operands[i]);
	BlkType *ts = BLK_NEW_N(m->c->a, BlkType, x->nresults + 1);
	for (int i = 0; i < x->nresults; i++)
		ts[i] = x->results[i]->type;
	BlkOp *o = blk_build(b, x->kind, x->loc, x->noperands, xs, x->nresults, ts, 0);
	o->attrs = x->attrs, o->nattrs = x->nattrs;
	for (int i = 0; i < x->nresults; i++) {
		o->results[i]->name = x->results[i]->name;
		blk_pmap_put(m->c->a, &m->vm, x->results[i], o->results[i]);
	}
	return o;
}

/* The merged value standing for a (of A) where B has b. */
static BlkValue *merged(Merge *m, BlkBuilder *b, BlkValue *cond, BlkValue *a, BlkValue *bv)
{
	BlkValue *n = blk_pmap_get(&m->vm, a);
	if (n && blk_pmap_get(&m->ab, a) == bv)
		return n;
	for (int i = 0; i < m->nleaves; i++) {
		if (m->la[i] != a || m->lb[i] != bv)
			continue;
		if (!m->sel[i]) {
			BlkValue *xa = arm(m, b, cond, &m->vma, m->ra, a), *xb = arm(m, b, cond, &m->vmb, m->rb, bv);
			BlkValue *c = cond;
			if (a->type.rank > 0) {
				BlkType t = a->type;
				t.dtype = BLK_BOOL;
				c = blk_build1(b, BLK_OP_BROADCAST, m->loc, t, 1, &cond);
			}
			BlkValue *xs[3] = { c, xa, xb };
			m->sel[i] = blk_build1(b, BLK_OP_SELECT, m->loc, a->type, 3, xs);
			m->sel[i]->name = a->name;
		}
		return m->sel[i];
	}
	if (!inside(m->ra, a))
		return a; /* the same value on both sides */
	/* a pure op of A paired with one of B (an effect's results are in vm
	 * already: match() saw every value computes from earlier effects) */
	BlkValue *p = blk_pmap_get(&m->ab, a);
	clone_merged(m, b, cond, a->def, p->def);
	return blk_pmap_get(&m->vm, a);
}

static bool branch_merge(LowerCtx *c, BlkOp *op)
{
	if (op->kind != BLK_OP_IF || op->nregions != 2 || empty(op->regions[0]) || empty(op->regions[1]))
		return false;
	Merge m = { .c = c, .loc = op->loc, .ra = op->regions[0], .rb = op->regions[1] };
	if (!match(&m))
		return false;
	/* the effects once, in order, on merged operands; before the `if` */
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	for (int e = 0; e < m.neffects; e++)
		clone_merged(&m, &b, op->operands[0], m.ea[e], m.eb[e]);
	erase_when(op);
	return true;
}

bool blk_canon_when(LowerCtx *c, BlkOp *op)
{
	return when_const(op) || when_else(c, op) || branch_merge(c, op);
}

typedef struct Rules {
	LowerCtx *c;
	bool changed;
} Rules;

static void rules(void *ctx, BlkOp *op)
{
	Rules *r = ctx;
	r->changed |= blk_canon_when(r->c, op);
}

bool blk_lower_branches(LowerCtx *c)
{
	Rules r = { .c = c, .changed = true };
	for (int round = 0; r.changed && round < 16; round++) {
		r.changed = false;
		blk_lower_walk(c->k->body, rules, &r);
	}
	return true;
}
