/* rotate.c - the first k step of a pipelined SIMT dot is loaded across
 * the loop's back edge, so no FMA waits on a shared load after a barrier.
 *
 * Requires: mma-steps (a SIMT dot with the pipeliner's copies is a chain
 * of one dot a k step on local_loads of fma_a/fma_b).  Produces, for a
 * `for` whose body is the pipeliner's SIMT loop
 *
 *   for k (acc, rd, ..) {
 *     async_wait; barrier                    -- slab k has landed
 *     A0 = local_load slot(rd)[:, 0]; B0 = ..
 *     .. d0 = dot A0, B0, acc; copies; ..    -- the chain, the next copies
 *     A(n-1), B(n-1) = ..; d(n-2) = ..; commit; rd', .. = ..
 *     d = dot A(n-1), B(n-1), d(n-2)
 *     yield d, rd', ..
 *   }
 * the loop below, the head (which reads carries, never the iv) cloned
 * before it with the carries' inits and at the body's end with their next
 * values:
 *
 *   async_wait; barrier; A0', B0' = local_load slot(rd0)[.., 0]
 *   for k (acc, rd, .., A0, B0) {
 *     .. d0 = dot A0, B0, acc; ..; commit; rd', .. = ..
 *     async_wait; barrier                    -- slab k + 1 has landed
 *     A0n, B0n = local_load slot(rd')[.., 0]
 *     d = dot A(n-1), B(n-1), d(n-2)         -- its FMAs hide those loads
 *     yield d, rd', .., A0n, B0n
 *   }
 *
 * Why it is safe: every read of slab k (its steps' loads) is before the
 * barrier at the end of iteration k, and the copies that overwrite its
 * slot are issued in iteration k + 1, after it; slab k + 1 is read only
 * after that barrier, behind the wait for its group.  The last iteration
 * waits for and reads a slot nothing uses (its copies were predicated
 * off; the group is empty).  The FMAs and their order are unchanged, so
 * results are bit-identical.  Only bodies made of the pipeliner's ops are
 * rotated (scalars, views, local_load, fma dots, copies in `if`s, commit):
 * anything else may rely on the barrier where it was.
 */
#include "lower/lower_int.h"

#include <string.h>

typedef BlkLoop Loop;

static bool is_fma_step(const BlkOp *op)
{
	const BlkAttr *e = blk_op_attr(op, "engine");
	return op->kind == BLK_OP_DOT && op->noperands == 3 && e && e->kind == BLK_ATTR_STRING &&
	       strcmp(e->s, "fma") == 0 && op->operands[0]->type.layout &&
	       op->operands[0]->type.layout->sfrag;
}

/* An op that reads or writes no shared memory outside what the rotation
 * keeps in order: scalar and view arithmetic, the steps, the copies. */
static bool plain_op(const BlkOp *op)
{
	if (op->kind == BLK_OP_LOCAL_LOAD || op->kind == BLK_OP_ASYNC_COMMIT || op->kind == BLK_OP_YIELD ||
	    is_fma_step(op))
		return true;
	if (op->kind == BLK_OP_IF) {
		for (int i = 0; i < op->nregions; i++)
			for (const BlkOp *o = op->regions[i]->first; o; o = o->next)
				if (o->kind != BLK_OP_ASYNC_COPY && !plain_op(o))
					return false;
		return true;
	}
	if (!(blk_op_flags(op->kind) & BLK_OPF_PURE) || op->nregions || blk_op_is_reduce(op->kind) ||
	    blk_op_is_scan(op->kind)) /* a reduction may go through shared memory */
		return false;
	for (int i = 0; i < op->nresults; i++)
		if (op->results[i]->type.kind == BLK_TYPE_TILE && op->results[i]->type.rank > 0)
			return false;
	return true;
}

/* A pure plain op may be part of the head's slice.  The slice reads
 * carries, never the iv (blk_loop_slice_by): the clones run at iv = lo
 * before a loop that may not run and at the last iv + step, where an
 * iv-indexed read could leave its buffer (the pipeliner's slot index is a
 * carry, always in [0, S)). */
static bool head_op(const LowerCtx *c, const BlkOp *op)
{
	(void)c;
	return (blk_op_flags(op->kind) & BLK_OPF_PURE) && plain_op(op);
}

/* The head, and the chain's first step loads (la, lb) and last dot. */
typedef struct Rot {
	BlkOp *wait, *bar, *la, *lb, *last;
	BlkPtrMap in; /* wait, bar, la, lb and the pure ops they read */
} Rot;

/* The body's loads of `d`'s operands, each used by d alone. */
static bool step_loads(Loop *L, Rot *R, BlkOp *d)
{
	R->la = d->operands[0]->def, R->lb = d->operands[1]->def;
	return R->la && R->lb && R->la != R->lb && R->la->parent == L->body && R->lb->parent == L->body &&
	       R->la->kind == BLK_OP_LOCAL_LOAD && R->lb->kind == BLK_OP_LOCAL_LOAD &&
	       blk_lower_uses(L->body, R->la->results[0]) == 1 && blk_lower_uses(L->body, R->lb->results[0]) == 1;
}

/* The dot that accumulates d's result, if any. */
static BlkOp *next_step(const BlkOp *d)
{
	for (BlkOp *o = d->next; o; o = o->next)
		if (is_fma_step(o) && o->operands[2] == d->results[0])
			return o;
	return NULL;
}

static bool match(Loop *L, Rot *R)
{
	BlkOp *w = L->body->first, *y = L->body->last;
	if (!w || w->kind != BLK_OP_ASYNC_WAIT || !w->next || w->next->kind != BLK_OP_BARRIER || !y ||
	    y->kind != BLK_OP_YIELD)
		return false;
	R->wait = w, R->bar = w->next;
	BlkOp *first = NULL;
	for (BlkOp *op = R->bar->next; op; op = op->next) {
		if (!plain_op(op))
			return false;
		if (!first && is_fma_step(op))
			first = op;
	}
	if (!first || !step_loads(L, R, first))
		return false;
	R->last = first;
	for (BlkOp *n; (n = next_step(R->last));)
		R->last = n;
	if (blk_lower_uses(L->body, R->last->results[0]) != 1)
		return false; /* the yield alone reads the chain's result */
	int n = 0;
	for (int i = 0; i < y->noperands; i++)
		n += y->operands[i] == R->last->results[0];
	if (n != 1)
		return false;
	blk_pmap_put(L->c->a, &R->in, R->wait, R->wait);
	blk_pmap_put(L->c->a, &R->in, R->bar, R->bar);
	blk_pmap_put(L->c->a, &R->in, R->la, R->la);
	blk_pmap_put(L->c->a, &R->in, R->lb, R->lb);
	return blk_loop_slice_by(L, &R->in, R->la->operands[0], true, head_op) &&
	       blk_loop_slice_by(L, &R->in, R->lb->operands[0], true, head_op);
}

/* The head at b, carry i (region arg i >= 1) as vals[i - 1] (it reads
 * no iv: blk_loop_slice_by); returns the clone's A and B loads. */
static void clone_head(Loop *L, Rot *R, BlkBuilder *b, BlkValue **vals, BlkValue **fa, BlkValue **fb)
{
	BlkPtrMap vm = { 0 };
	for (int i = 1; i < L->body->nargs; i++)
		blk_pmap_put(L->c->a, &vm, L->body->args[i], vals[i - 1]);
	blk_loop_clone_slice(L, b, &R->in, NULL, L->body->args[0], &vm);
	*fa = blk_pmap_get(&vm, R->la->results[0]);
	*fb = blk_pmap_get(&vm, R->lb->results[0]);
}

static void rotate(Loop *L, Rot *R)
{
	BlkOp *f = L->loop, *y = L->body->last;
	BlkValue *fa0, *fb0, *fan, *fbn;
	BlkBuilder pre, end;
	blk_builder_before(&pre, L->c->a, f);
	clone_head(L, R, &pre, f->operands + 3, &fa0, &fb0);
	blk_builder_before(&end, L->c->a, y);
	clone_head(L, R, &end, y->operands, &fan, &fbn);
	blk_lower_move_before(R->last, y);
	BlkValue *fa = blk_loop_add_carry(L, fa0, fan), *fb = blk_loop_add_carry(L, fb0, fbn);
	blk_replace_uses(L->body, R->la->results[0], fa);
	blk_replace_uses(L->body, R->lb->results[0], fb);
	blk_op_erase(R->la);
	blk_op_erase(R->lb);
	blk_op_erase(R->wait);
	blk_op_erase(R->bar);
	for (BlkOp *op = L->body->last, *prev; op; op = prev) { /* the head's own pure ops */
		prev = op->prev;
		if (blk_pmap_get(&R->in, op) && op->nresults == 1 && !blk_lower_uses(L->body, op->results[0]))
			blk_op_erase(op);
	}
}

static void visit(void *ctx, BlkOp *f)
{
	if (f->kind != BLK_OP_FOR)
		return;
	Loop L = { .c = ctx, .loop = f, .body = f->regions[0] };
	Rot R = { 0 };
	if (match(&L, &R))
		rotate(&L, &R);
}

bool blk_lower_rotate(LowerCtx *c)
{
	blk_lower_walk(c->k->body, visit, c);
	return true;
}
