/* seq_loop.c - a Pallas-style `seq` grid axis that accumulates in scratch
 * becomes the loop a `fori_loop` kernel has.
 *
 * Requires: block refs lowered (blockspec.c: each `seq` axis a `for` with
 * attr seq around the body, the block refs inside it), shapes constant.
 * Pallas writes a matmul with K as a sequential grid axis:
 *
 *   when k == 0 { acc[...] = zeros(...) }
 *   acc[...] = acc[...] + dot(a[...], b[...])     -- a's block (BM, BK) at (i, k)
 *   when k == num_programs(2) - 1 { c[...] = acc[...].astype(T) }
 *
 * blockspec makes that `for k { block refs of (i, k); if k == 0 {..};
 * ...; if k == n - 1 {..} }`: a block ref that moves every iteration and
 * two conditional stores, which the pipeliner and canonicalize's
 * scratch-carry do not take.  This pass, on the one seq loop at the top of
 * the body (constant bounds 0 to n >= 1, step 1, no seq loop inside):
 *
 *   1. moves the loop's pure ops whose operands come from outside it
 *      before it (the block refs of (i, j), their starts, constants);
 *   2. peels the first effect of the body when it is `if k == 0 { S }`
 *      (no else) and S reads nothing the body computes: S runs before the
 *      loop, which runs at least once;
 *   3. peels the last effect when it is `if k == n - 1 { F }`: F runs after
 *      the loop, k in it the constant n - 1, if it reads nothing else the
 *      body computes;
 *   4. turns a block ref whose start along one dim is k * C (C the block's
 *      extent there, its other starts from outside the loop), read and
 *      written only whole by loads and stores, into the block of the whole
 *      array along that dim, made before the loop, each access taking
 *      ds(k * C, C) of it (masked where the block was): a's (BM, BK) block
 *      at (i, k) is a[:, ds(k * BK, BK)] of the (BM, K) block at (i, 0),
 *      what matmul.blk's fori_loop reads;
 *   5. when the step's one effect left is `if k * C < E { B }` (or <=, or
 *      the sides swapped; C > 0, E from outside the loop), stops the loop
 *      at min(n, the first k that fails it) and runs B unguarded: Pallas's
 *      causal attention skips the key blocks past the diagonal so, and
 *      then runs as attention.blk's causal loop (split at the diagonal).
 *
 * Each step applies on its own where it can; after them, canonicalize's
 * scratch-carry makes `acc` a loop carry, and the loop runs as matmul.blk's
 * does (persistent, warp specialized, coarsened).  Nothing here changes a
 * value: the same stores happen in the same order (S first, F last), the
 * same elements are loaded.  A print keeps its ops in the loop (its
 * program id of the seq axis is the loop's counter).
 */
#include "lower/lower_int.h"

#include <string.h>

typedef struct Seq {
	LowerCtx *c;
	BlkOp *loop;
	BlkRegion *body;
	BlkValue *iv;
	int64_t n;
} Seq;

/* v comes from outside the loop's body. */
static bool outside(const Seq *s, const BlkValue *v)
{
	return !blk_lower_within(s->body, v);
}

/* Every value the ops of r read, but the iv (ok_iv) and values made in r
 * itself, comes from outside the loop; no print among them. */
static bool reads_outside(const Seq *s, const BlkRegion *r, bool ok_iv)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		if (op->kind == BLK_OP_PRINT)
			return false;
		for (int i = 0; i < op->noperands; i++) {
			const BlkValue *v = op->operands[i];
			if (!outside(s, v) && !blk_lower_within(r, v) && !(ok_iv && v == s->iv))
				return false;
		}
		for (int i = 0; i < op->nregions; i++)
			if (!reads_outside(s, op->regions[i], ok_iv))
				return false;
	}
	return true;
}

/* 1: the loop's invariant pure ops, before it, in order. */
static void hoist(Seq *s)
{
	for (BlkOp *op = s->body->first, *next; op; op = next) {
		next = op->next;
		if (!(blk_op_flags(op->kind) & BLK_OPF_PURE) || op->nregions)
			continue;
		bool inv = true;
		for (int i = 0; i < op->noperands && inv; i++)
			inv = outside(s, op->operands[i]);
		if (inv)
			blk_lower_move_before(op, s->loop);
	}
}

/* op is an `if` without an else. */
static bool if_only(const BlkOp *op)
{
	return op->kind == BLK_OP_IF && !(op->nregions > 1 && op->regions[1]->first);
}

/* op is `if iv == k` (either side), no else. */
static bool if_iv_is(const Seq *s, const BlkOp *op, int64_t k)
{
	if (!if_only(op))
		return false;
	const BlkOp *eq = op->operands[0]->def;
	if (!eq || eq->kind != BLK_OP_EQ)
		return false;
	int64_t v;
	for (int i = 0; i < 2; i++)
		if (eq->operands[i] == s->iv && blk_lower_const_int(eq->operands[1 - i], &v) && v == k)
			return true;
	return false;
}

static bool effect(const BlkOp *op)
{
	return op->kind != BLK_OP_YIELD && (!(blk_op_flags(op->kind) & BLK_OPF_PURE) || op->nregions);
}

/* Moves the ops of if_op's then-region (not a yield) before (after) pos. */
static void unwrap(BlkOp *if_op, BlkOp *pos, bool after)
{
	BlkRegion *r = if_op->regions[0];
	BlkOp *at = pos;
	for (BlkOp *op = r->first, *next; op; op = next) {
		next = op->next;
		if (op->kind == BLK_OP_YIELD)
			continue;
		if (after) {
			blk_lower_move_after(op, at);
			at = op;
		} else {
			blk_lower_move_before(op, pos);
		}
	}
	BlkOp *cond = if_op->operands[0]->def;
	blk_op_erase(if_op);
	if (cond && !blk_lower_uses(cond->parent, cond->results[0]))
		blk_op_erase(cond);
}

/* 2 and 3: the first effect `if k == 0`, the last `if k == n - 1`. */
static void peel(Seq *s)
{
	BlkOp *first = s->body->first;
	while (first && !effect(first))
		first = first->next;
	if (first && if_iv_is(s, first, 0) && reads_outside(s, first->regions[0], false))
		unwrap(first, s->loop, false);
	BlkOp *last = s->body->last;
	while (last && !effect(last))
		last = last->prev;
	if (!last || !if_iv_is(s, last, s->n - 1) || !reads_outside(s, last->regions[0], true))
		return;
	BlkBuilder b;
	if (s->loop->next)
		blk_builder_before(&b, s->c->a, s->loop->next);
	else
		blk_builder_at_end(&b, s->c->a, s->loop->parent);
	BlkValue *k = blk_lower_i32(&b, s->loop->loc, s->n - 1);
	blk_replace_uses(last->regions[0], s->iv, k);
	unwrap(last, k->def, true);
}

/* k * C with C > 0 constant: C. */
static int64_t iv_times(const Seq *s, const BlkValue *v)
{
	const BlkOp *m = v->def;
	int64_t C;
	for (int i = 0; m && m->kind == BLK_OP_MUL && i < 2; i++)
		if (m->operands[i] == s->iv && blk_lower_const_int(m->operands[1 - i], &C) && C > 0)
			return C;
	return 0;
}

/* 5: the step's one effect `if k * C < E { B }` (or <=, or the sides
 * swapped), E from outside the loop: the loop stops at the first k that
 * fails it, and B is the step.  Pallas's causal attention skips the key
 * blocks past the diagonal so. */
static void guard(Seq *s)
{
	BlkOp *g = NULL;
	for (BlkOp *op = s->body->first; op; op = op->next)
		if (effect(op)) {
			if (g)
				return;
			g = op;
		}
	if (!g || !if_only(g))
		return;
	const BlkOp *cmp = g->operands[0]->def;
	if (!cmp || cmp->noperands != 2 || cmp->operands[0]->type.rank) /* a const has none */
		return;
	bool strict;
	int side; /* the operand that is k * C */
	switch (cmp->kind) {
	case BLK_OP_LT: strict = true, side = 0; break;
	case BLK_OP_LE: strict = false, side = 0; break;
	case BLK_OP_GT: strict = true, side = 1; break;
	case BLK_OP_GE: strict = false, side = 1; break;
	default: return;
	}
	int64_t C = iv_times(s, cmp->operands[side]);
	BlkValue *E = cmp->operands[1 - side];
	if (!C || !outside(s, E))
		return;
	/* k C < E  <=>  k < (E + C - 1) ~/ C;  k C <= E  <=>  k < E ~/ C + 1 */
	BlkBuilder b;
	blk_builder_before(&b, s->c->a, s->loop);
	BlkLoc loc = g->loc;
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *x[2] = { E, blk_lower_i32(&b, loc, strict ? C - 1 : 0) };
	BlkValue *num = blk_build1(&b, BLK_OP_ADD, loc, i32, 2, x);
	BlkValue *y[2] = { num, blk_lower_i32(&b, loc, C) };
	BlkValue *q = blk_build1(&b, BLK_OP_FLOORDIV, loc, i32, 2, y);
	if (!strict) {
		BlkValue *z[2] = { q, blk_lower_i32(&b, loc, 1) };
		q = blk_build1(&b, BLK_OP_ADD, loc, i32, 2, z);
	}
	BlkValue *w[2] = { s->loop->operands[1], q };
	s->loop->operands[1] = blk_build1(&b, BLK_OP_MIN, loc, i32, 2, w);
	unwrap(g, g, false);
}

/* The accesses of a block ref, all of them loads and stores that take
 * ref dim rd whole; false for any other use. */
enum { MAX_ACCESSES = 16 };
static int whole_uses(const BlkRegion *r, const BlkValue *ref, int rd, BlkOp **out, int n)
{
	for (BlkOp *op = r->first; op && n >= 0; op = op->next) {
		for (int i = 0; i < op->noperands && n >= 0; i++) {
			if (op->operands[i] != ref)
				continue;
			const BlkAttr *idx = blk_op_attr(op, "idx");
			bool ok = (op->kind == BLK_OP_LOAD || op->kind == BLK_OP_STORE) && i == 0 && idx &&
			          rd < idx->index.n && idx->index.v[rd].kind == BLK_INDEX_FULL && !blk_op_gathers(op) &&
			          (op->kind != BLK_OP_STORE || op->operands[op->noperands - 1] != ref);
			if (!ok || n == MAX_ACCESSES)
				return -1;
			out[n++] = op;
		}
		for (int i = 0; i < op->nregions && n >= 0; i++)
			n = whole_uses(op->regions[i], ref, rd, out, n);
	}
	return n;
}

/* acc's index operands before ref dim rd: one per SCALAR or DS dim before it. */
static int operand_at(const BlkOp *acc, int rd)
{
	const BlkAttr *idx = blk_op_attr(acc, "idx");
	int at = 1;
	for (int d = 0; d < rd; d++)
		at += idx->index.v[d].kind == BLK_INDEX_SCALAR || idx->index.v[d].kind == BLK_INDEX_DS;
	return at;
}

/* 4: a block ref moving with k along one dim -> the whole array's extent
 * there, and ds accesses. */
static void widen(Seq *s, BlkOp *br)
{
	LowerCtx *c = s->c;
	int pi = (int)blk_op_int(br, "param", -1);
	if (pi < 0 || pi >= c->k->nparams)
		return;
	BlkParam *p = &c->k->params[pi];
	const BlkAttr *mask = blk_op_attr(br, "mask");
	int d = -1, rd = -1;
	int64_t C = 0, ext;
	for (int i = 0, r = 0; i < p->rank && i < br->noperands; i++) {
		const BlkValue *v = br->operands[i];
		if (outside(s, v)) {
			r += !p->squeezed[i];
			continue;
		}
		const BlkOp *m = v->def;
		int64_t k;
		if (d >= 0 || p->squeezed[i] || !m || m->kind != BLK_OP_MUL || m->operands[0] != s->iv ||
		    !blk_lower_const_int(m->operands[1], &k) || !blk_sym_is_const(p->block[i], &C) || k != C ||
		    !blk_sym_is_const(p->shape[i], &ext))
			return;
		d = i, rd = r++;
	}
	BlkOp *acc[MAX_ACCESSES];
	int n = d < 0 || !mask || !mask->s ? -1 : whole_uses(s->body, br->results[0], rd, acc, 0);
	if (n < 0)
		return;
	BlkValue *start = br->operands[d];
	BlkBuilder b;
	blk_builder_before(&b, c->a, s->loop);
	BlkValue *ops[BLK_MAX_RANK];
	for (int i = 0; i < br->noperands; i++)
		ops[i] = br->operands[i];
	ops[d] = blk_lower_i32(&b, br->loc, 0);
	BlkType t = br->results[0]->type;
	t.dims[rd] = p->shape[d];
	BlkOp *wide = blk_build(&b, BLK_OP_BLOCK_REF, br->loc, br->noperands, ops, 1, &t, 0);
	blk_op_set_int(c->a, wide, "param", pi);
	char *m = blk_arena_strdup(c->a, mask->s);
	bool was_masked = m[d] == '1';
	m[d] = '0'; /* the whole extent */
	blk_op_set_string(c->a, wide, "mask", m);
	for (int j = 0; j < n; j++) {
		BlkOp *a = acc[j];
		const BlkAttr *idx = blk_op_attr(a, "idx");
		BlkIndex *iv = BLK_NEW_N(c->a, BlkIndex, idx->index.n);
		memcpy(iv, idx->index.v, sizeof *iv * (size_t)idx->index.n);
		iv[rd] = (BlkIndex){ .kind = BLK_INDEX_DS, .size = p->block[d], .step = 1 };
		int at = operand_at(a, rd);
		BlkValue **o = BLK_NEW_N(c->a, BlkValue *, a->noperands + 2);
		for (int i = 0, w = 0; i < a->noperands; i++) {
			if (i == at)
				o[w++] = start;
			o[w++] = a->operands[i];
		}
		if (at == a->noperands)
			o[a->noperands] = start;
		o[0] = wide->results[0];
		a->operands = o;
		a->noperands++;
		blk_op_set_index(c->a, a, "idx", idx->index.n, iv);
		const BlkAttr *am = blk_op_attr(a, "mask");
		if (am && am->s && was_masked) {
			char *nm = blk_arena_strdup(c->a, am->s);
			if (rd < (int)strlen(nm))
				nm[rd] = '1';
			blk_op_set_string(c->a, a, "mask", nm);
		}
	}
	blk_op_erase(br);
	p->block[d] = p->shape[d];
	c->k->body->args[pi]->type.dims[rd] = p->shape[d];
}

static bool has_seq_loop(const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		if (op->kind == BLK_OP_FOR && blk_op_attr(op, "seq"))
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (has_seq_loop(op->regions[i]))
				return true;
	}
	return false;
}

bool blk_lower_seq_loop(LowerCtx *c)
{
	BlkOp *loop = NULL;
	for (BlkOp *op = c->k->body->first; op; op = op->next)
		if (op->kind == BLK_OP_FOR && blk_op_attr(op, "seq"))
			loop = op;
	int64_t lo, hi, step;
	if (!loop || has_seq_loop(loop->regions[0]) || loop->nresults ||
	    !blk_lower_const_int(loop->operands[0], &lo) || !blk_lower_const_int(loop->operands[1], &hi) ||
	    !blk_lower_const_int(loop->operands[2], &step) || lo != 0 || hi < 1 || step != 1)
		return true;
	Seq s = { c, loop, loop->regions[0], loop->regions[0]->args[0], hi };
	hoist(&s);
	peel(&s);
	guard(&s);
	for (BlkOp *op = s.body->first, *next; op; op = next) {
		next = op->next;
		if (op->kind == BLK_OP_BLOCK_REF)
			widen(&s, op);
	}
	hoist(&s); /* what the peeled ifs' conditions leave, and the loads' starts stay */
	return true;
}
