/* prefetch.c - software pipelining of the global loads that feed a dot.
 *
 * Requires: block refs lowered (blockspec.c: masks set), loop bounds
 * constant.  Produces: in every `for` with constant bounds and at least two
 * iterations, each `load` of a read-only (`in`) array whose result feeds a
 * `dot` of the same body, and whose indices depend only on the iv, becomes
 * a loop carry:
 *
 *   x0 = load(lo)                      -- before the loop
 *   for k (.., x) {
 *     xn = load(min(k + step, last))   -- the next slab, issued first
 *     ... dot(x, ...) ...              -- stage x, barrier, FMAs
 *     yield .., xn
 *   }
 *
 * so the next slab's global loads are in flight while this slab is staged
 * and multiplied (emit_dot.c: two staging buffers, one barrier per slab).
 * `last` is the last iteration's iv, so the last iteration reloads its own
 * slab instead of reading past the array: every index the clones see is one
 * the original load saw, and the original's `mask` attribute stays valid.
 * The loaded values and their order of use are unchanged, so results are
 * bit-identical.
 */
#include "lower_int.h"

#include <string.h>

typedef struct Loop {
	LowerCtx *c;
	BlkOp *loop;
	BlkRegion *body;
	int64_t lo, last, step;
} Loop;

/* A Ref reaching a read-only array through views. */
static bool read_only(const LowerCtx *c, const BlkValue *ref)
{
	while (ref->def && ref->def->kind == BLK_OP_VIEW)
		ref = ref->def->operands[0];
	if (!ref->def || ref->def->kind != BLK_OP_BLOCK_REF)
		return false;
	int pi = (int)blk_op_int(ref->def, "param", -1);
	return pi >= 0 && pi < c->k->nparams && c->k->params[pi].access == BLK_ACCESS_IN;
}

static bool feeds_dot(const BlkRegion *body, const BlkValue *v)
{
	for (const BlkOp *op = body->first; op; op = op->next)
		if (op->kind == BLK_OP_DOT && (op->operands[0] == v || op->operands[1] == v))
			return true;
	return false;
}

/* Marks in `in` (op -> op) the body ops v depends on; false when v depends
 * on a carry or on an op that is not pure and region-free. */
static bool slice(Loop *L, BlkPtrMap *in, const BlkValue *v)
{
	if (!v->def)
		return v->owner != L->body || v->index == 0;
	BlkOp *d = v->def;
	if (d->parent != L->body || blk_pmap_get(in, d))
		return true;
	if (!(blk_op_flags(d->kind) & BLK_OPF_PURE) || d->nregions)
		return false;
	blk_pmap_put(L->c->a, in, d, d);
	for (int i = 0; i < d->noperands; i++)
		if (!slice(L, in, d->operands[i]))
			return false;
	return true;
}

static bool pipelinable(Loop *L, BlkOp *ld, BlkPtrMap *in)
{
	if (ld->kind != BLK_OP_LOAD || !read_only(L->c, ld->operands[0]) ||
	    !feeds_dot(L->body, ld->results[0]))
		return false;
	for (int i = 0; i < ld->noperands; i++)
		if (!slice(L, in, ld->operands[i]))
			return false;
	return true;
}

/* Copies op before b's insertion point with operands mapped through vm. */
static BlkOp *copy_op(LowerCtx *c, BlkBuilder *b, BlkPtrMap *vm, const BlkOp *op)
{
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, op->noperands + 1);
	BlkType *types = BLK_NEW_N(c->a, BlkType, op->nresults + 1);
	for (int i = 0; i < op->noperands; i++) {
		BlkValue *m = blk_pmap_get(vm, op->operands[i]);
		ops[i] = m ? m : op->operands[i];
	}
	for (int i = 0; i < op->nresults; i++)
		types[i] = op->results[i]->type;
	BlkOp *n = blk_build(b, op->kind, op->loc, op->noperands, ops, op->nresults, types, 0);
	n->nattrs = op->nattrs;
	n->attrs = BLK_NEW_N(c->a, BlkAttr, op->nattrs + 1);
	if (op->nattrs > 0)
		memcpy(n->attrs, op->attrs, sizeof(BlkAttr) * (size_t)op->nattrs);
	for (int i = 0; i < op->nresults; i++) {
		n->results[i]->name = op->results[i]->name;
		blk_pmap_put(c->a, vm, op->results[i], n->results[i]);
	}
	return n;
}

/* The load `ld` with the iv replaced by `iv`: its slice, then itself. */
static BlkValue *load_at(Loop *L, BlkBuilder *b, BlkPtrMap *in, BlkOp *ld, BlkValue *iv)
{
	BlkPtrMap vm = { 0 };
	blk_pmap_put(L->c->a, &vm, L->body->args[0], iv);
	for (BlkOp *op = L->body->first; op != ld; op = op->next)
		if (blk_pmap_get(in, op))
			copy_op(L->c, b, &vm, op);
	return copy_op(L->c, b, &vm, ld)->results[0];
}

static BlkValue *const_i32(BlkBuilder *b, BlkLoc loc, int64_t v)
{
	return blk_build_const_int(b, loc, blk_type_scalar(BLK_I32), v);
}

/* min(iv + step, last), before `at`. */
static BlkValue *next_iv(Loop *L, BlkOp *at)
{
	BlkBuilder b;
	blk_builder_before(&b, L->c->a, at);
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *s[2] = { L->body->args[0], const_i32(&b, at->loc, L->step) };
	BlkValue *m[2] = { blk_build1(&b, BLK_OP_ADD, at->loc, i32, 2, s), const_i32(&b, at->loc, L->last) };
	return blk_build1(&b, BLK_OP_MIN, at->loc, i32, 2, m);
}

/* Appends a carry to the loop: init before it, next value yielded. */
static BlkValue *add_carry(Loop *L, BlkValue *init, BlkValue *next)
{
	BlkArena *a = L->c->a;
	BlkOp *f = L->loop, *y = L->body->last;
	BlkValue **ops = BLK_NEW_N(a, BlkValue *, f->noperands + 2);
	memcpy(ops, f->operands, sizeof *ops * (size_t)f->noperands);
	ops[f->noperands++] = init;
	f->operands = ops;
	BlkValue **res = BLK_NEW_N(a, BlkValue *, f->nresults + 2);
	memcpy(res, f->results, sizeof *res * (size_t)f->nresults);
	BlkValue *r = BLK_NEW(a, BlkValue);
	r->type = init->type, r->def = f, r->index = f->nresults;
	res[f->nresults++] = r;
	f->results = res;
	BlkValue **yo = BLK_NEW_N(a, BlkValue *, y->noperands + 2);
	memcpy(yo, y->operands, sizeof *yo * (size_t)y->noperands);
	yo[y->noperands++] = next;
	y->operands = yo;
	return blk_region_add_arg(a, L->body, init->type, init->name);
}

static bool used(const BlkRegion *r, const BlkValue *v)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->noperands; i++)
			if (op->operands[i] == v)
				return true;
		for (int i = 0; i < op->nregions; i++)
			if (used(op->regions[i], v))
				return true;
	}
	return false;
}

/* Erases the slice ops (pure) nothing uses any more, last first. */
static void erase_dead(Loop *L, BlkPtrMap *in)
{
	for (BlkOp *op = L->body->last, *prev; op; op = prev) {
		prev = op->prev;
		if (blk_pmap_get(in, op) && !used(L->body, op->results[0]))
			blk_op_erase(op);
	}
}

/* 1. clone the slab-`lo` load before the loop; 2. the next slab's load in
 * place of the original; 3. uses read the carry; 4. the original and its
 * slice go. */
static void pipeline_load(Loop *L, BlkOp *ld, BlkPtrMap *in, BlkValue **nk)
{
	BlkBuilder pre, here;
	blk_builder_before(&pre, L->c->a, L->loop);
	BlkValue *init = load_at(L, &pre, in, ld, const_i32(&pre, ld->loc, L->lo));
	if (!*nk)
		*nk = next_iv(L, L->body->first);
	blk_builder_before(&here, L->c->a, ld);
	BlkValue *next = load_at(L, &here, in, ld, *nk);
	BlkValue *cur = add_carry(L, init, next);
	blk_replace_uses(L->body, ld->results[0], cur);
	blk_op_erase(ld);
	erase_dead(L, in);
}

static bool bounds(Loop *L)
{
	int64_t hi;
	BlkOp *f = L->loop;
	if (!blk_lower_const_int(f->operands[0], &L->lo) || !blk_lower_const_int(f->operands[1], &hi) ||
	    !blk_lower_const_int(f->operands[2], &L->step) || L->step <= 0 || hi - L->lo <= L->step)
		return false;
	L->last = L->lo + (hi - 1 - L->lo) / L->step * L->step;
	BlkOp *y = L->body->last;
	return y && y->kind == BLK_OP_YIELD;
}

/* Uses of v in r (nested regions included). */
static int uses(const BlkRegion *r, const BlkValue *v)
{
	int n = 0;
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->noperands; i++)
			n += op->operands[i] == v;
		for (int i = 0; i < op->nregions; i++)
			n += uses(op->regions[i], v);
	}
	return n;
}

static BlkAsyncLoad *mark(Loop *L, BlkOp *ld, BlkOp *dot, int o, int ahead)
{
	BlkAsyncLoad *a = BLK_NEW(L->c->a, BlkAsyncLoad);
	a->dot = dot, a->operand = o, a->ahead = ahead;
	blk_pmap_put(L->c->a, &L->c->async, ld, a);
	return a;
}

/* A tensor-core dot whose operands are both pipelinable loads used only by
 * it (zero fill, 2-D, 16-bit): its slabs go global -> shared by cp.async
 * over num_stages buffers instead of through registers:
 *   (lo), (lo + step), ..., (lo + (S-2) step)   -- before the loop, a group each
 *   for k { x = load(k) [skip]; ..; xn = load(min(k + (S-1) step, last)) [deferred];
 *           dot(x, y) }   -- wait.group(S-2), barrier, issue xn/yn, compute
 * The loads keep their indices and masks (the clones see iv values the
 * original saw), so emit_memory.c computes the same addresses. */
static void async_dot(Loop *L, BlkOp *dot)
{
	LowerCtx *c = L->c;
	int S = c->k->num_stages;
	if (S < 2 || dot->noperands < 2 || !blk_lower_dot_mma(dot))
		return;
	BlkOp *ld[2];
	BlkPtrMap in[2] = { { 0 }, { 0 } };
	for (int o = 0; o < 2; o++) {
		const BlkValue *v = dot->operands[o];
		ld[o] = v->def;
		const BlkAttr *f = ld[o] ? blk_op_attr(ld[o], "fill") : NULL;
		if (!ld[o] || ld[o]->parent != L->body || ld[o]->kind != BLK_OP_LOAD ||
		    blk_pmap_get(&c->async, ld[o]) || v->type.rank != 2 || blk_dtype_size(v->type.dtype) != 2 ||
		    (f && (f->kind == BLK_ATTR_FLOAT ? f->f != 0 : f->i != 0)) || uses(L->body, v) != 1 ||
		    !pipelinable(L, ld[o], &in[o]))
			return;
	}
	if (ld[0] == ld[1])
		return;
	BlkBuilder pre, here;
	blk_builder_before(&pre, c->a, L->loop);
	for (int s = 0; s < S - 1; s++)
		for (int o = 0; o < 2; o++) {
			int64_t iv = L->lo + s * L->step;
			if (iv > L->last) /* an empty group keeps the count */
				iv = L->last;
			BlkOp *cl = load_at(L, &pre, &in[o], ld[o], const_i32(&pre, dot->loc, iv))->def;
			BlkAsyncLoad *a = mark(L, cl, dot, o, s);
			a->commit = o == 1;
			a->skip = L->lo + s * L->step > L->last;
		}
	BlkAsyncDot *ad = BLK_NEW(c->a, BlkAsyncDot);
	ad->stages = S;
	ad->iv = L->body->args[0];
	ad->limit = L->last - (int64_t)(S - 1) * L->step;
	BlkType i32 = blk_type_scalar(BLK_I32);
	blk_builder_before(&here, c->a, dot);
	BlkValue *s2[2] = { L->body->args[0], const_i32(&here, dot->loc, (int64_t)(S - 1) * L->step) };
	BlkValue *m2[2] = { blk_build1(&here, BLK_OP_ADD, dot->loc, i32, 2, s2),
	                    const_i32(&here, dot->loc, L->last) };
	BlkValue *nk = blk_build1(&here, BLK_OP_MIN, dot->loc, i32, 2, m2);
	for (int o = 0; o < 2; o++) {
		BlkOp *cl = load_at(L, &here, &in[o], ld[o], nk)->def;
		mark(L, cl, dot, o, S - 1)->deferred = true;
		ad->next[o] = cl;
		mark(L, ld[o], dot, o, 0)->skip = true;
	}
	blk_pmap_put(c->a, &c->async, dot, ad);
}

static void prefetch_loop(void *ctx, BlkOp *f)
{
	Loop L = { .c = ctx, .loop = f, .body = f->kind == BLK_OP_FOR ? f->regions[0] : NULL };
	if (!L.body || !bounds(&L))
		return;
	for (BlkOp *op = L.body->first; op; op = op->next)
		if (op->kind == BLK_OP_DOT)
			async_dot(&L, op);
	BlkValue *nk = NULL;
	for (BlkOp *op = L.body->first, *next; op; op = next) {
		next = op->next;
		BlkPtrMap in = { 0 };
		if (!blk_pmap_get(&L.c->async, op) && pipelinable(&L, op, &in))
			pipeline_load(&L, op, &in, &nk);
	}
}

bool blk_lower_prefetch(LowerCtx *c)
{
	blk_lower_walk(c->k->body, prefetch_loop, c);
	return true;
}
