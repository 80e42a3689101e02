/* loops.c - what the loop passes (pipeline.c, prefetch.c) share: the part
 * of a loop body a value depends on, clones of it at another iteration,
 * new loop carries, dead-code cleanup. */
#include "lower_int.h"

#include <string.h>

bool blk_loop_read_only(const LowerCtx *c, const BlkValue *ref)
{
	int pi = blk_lower_ref_param(ref);
	return pi >= 0 && pi < c->k->nparams && c->k->params[pi].access == BLK_ACCESS_IN;
}

bool blk_loop_peer_read_only(const LowerCtx *c, const BlkValue *ref)
{
	bool peer = false;
	for (const BlkValue *v = ref; v->def && (v->def->kind == BLK_OP_VIEW || v->def->kind == BLK_OP_PEER);
	     v = v->def->operands[0])
		peer = peer || v->def->kind == BLK_OP_PEER;
	int pi = blk_ref_param(c->k, ref);
	return peer && pi >= 0 && c->k->params[pi].access == BLK_ACCESS_IN;
}

bool blk_lower_writes(const BlkKernel *k, const BlkRegion *r, int pi)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		bool w = op->kind == BLK_OP_STORE || op->kind == BLK_OP_SWAP || blk_op_is_atomic(op->kind);
		if (w && (pi < 0 || blk_ref_param(k, op->operands[0]) == pi))
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (blk_lower_writes(k, op->regions[i], pi))
				return true;
	}
	return false;
}

bool blk_loop_fed_by_wait(const BlkLoop *L, const BlkValue *ref)
{
	const BlkKernel *k = L->c->k;
	int pi = blk_lower_ref_param(ref);
	const BlkOp *outer = L->loop->parent->parent; /* persist.c's loop over tiles */
	bool top = L->loop->parent == k->body ||
	           (outer && outer->kind == BLK_OP_FOR && outer->parent == k->body);
	if (pi < 0 || pi >= k->nparams || k->params[pi].access != BLK_ACCESS_INOUT || !top ||
	    blk_lower_writes(k, L->body, pi))
		return false;
	for (const BlkOp *op = L->loop->prev; op; op = op->prev) {
		if (op->kind == BLK_OP_SIGNAL_WAIT)
			return true;
		bool w = op->kind == BLK_OP_STORE || op->kind == BLK_OP_SWAP || blk_op_is_atomic(op->kind);
		if ((w && blk_ref_param(k, op->operands[0]) == pi) || op->nregions)
			return false;
	}
	return false;
}

/* A scalar read of an `in` array at scalar indices (a prefetch list's
 * entry: `kl[k]`): nothing writes it, and a clone at another iteration
 * reads another entry (or, past the end, the fill), so it may be sliced. */
static bool scalar_read(const LowerCtx *c, const BlkOp *d)
{
	if (d->kind != BLK_OP_LOAD || d->results[0]->type.rank != 0 || blk_op_strided(d) ||
	    !blk_loop_read_only(c, d->operands[0]))
		return false;
	const BlkAttr *idx = blk_op_attr(d, "idx");
	for (int i = 0; idx && i < idx->index.n; i++)
		if (idx->index.v[i].kind != BLK_INDEX_SCALAR)
			return false;
	return true;
}

bool blk_loop_slice_by(BlkLoop *L, BlkPtrMap *in, const BlkValue *v, bool carried, BlkSliceOp *ok)
{
	if (!v->def) /* the body's iv (index 0) or a carry, or from outside */
		return v->owner != L->body || (v->index == 0) != carried;
	BlkOp *d = v->def;
	if (d->parent != L->body || blk_pmap_get(in, d))
		return true;
	if (d->nregions || !ok(L->c, d))
		return false;
	blk_pmap_put(L->c->a, in, d, d);
	for (int i = 0; i < d->noperands; i++)
		if (!blk_loop_slice_by(L, in, d->operands[i], carried, ok))
			return false;
	return true;
}

static bool pure_or_scalar_read(const LowerCtx *c, const BlkOp *d)
{
	return (blk_op_flags(d->kind) & BLK_OPF_PURE) || scalar_read(c, d);
}

bool blk_loop_slice(BlkLoop *L, BlkPtrMap *in, const BlkValue *v)
{
	return blk_loop_slice_by(L, in, v, false, pure_or_scalar_read);
}

BlkOp *blk_loop_copy_op(LowerCtx *c, BlkBuilder *b, BlkPtrMap *vm, const BlkOp *op)
{
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, op->noperands + 1);
	BlkType *types = BLK_NEW_N(c->a, BlkType, op->nresults + 1);
	bool moved = false;
	for (int i = 0; i < op->noperands; i++) {
		BlkValue *m = blk_pmap_get(vm, op->operands[i]);
		ops[i] = m ? m : op->operands[i];
		moved |= i > 0 && m;
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
	const BlkAttr *mask = op->kind == BLK_OP_LOAD && op->results[0]->type.rank == 0 && moved
	                      ? blk_op_attr(n, "mask") : NULL;
	if (mask && mask->kind == BLK_ATTR_STRING) { /* a scalar read (a prefetch entry) at */
		char *all = blk_arena_strdup(c->a, mask->s); /* new indices: blockspec's proof */
		memset(all, '1', strlen(all));            /* of its bounds was for the old */
		blk_op_set_string(c->a, n, "mask", all);
	}
	return n;
}

void blk_loop_clone_slice(BlkLoop *L, BlkBuilder *b, BlkPtrMap *in, const BlkOp *upto, BlkValue *iv,
                          BlkPtrMap *vm)
{
	blk_pmap_put(L->c->a, vm, L->body->args[0], iv);
	for (BlkOp *op = L->body->first; op && op != upto; op = op->next)
		if (blk_pmap_get(in, op))
			blk_loop_copy_op(L->c, b, vm, op);
}

BlkValue *blk_loop_add_carry(BlkLoop *L, BlkValue *init, BlkValue *next)
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

int blk_lower_uses(const BlkRegion *r, const BlkValue *v)
{
	int n = 0;
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->noperands; i++)
			n += op->operands[i] == v;
		for (int i = 0; i < op->nregions; i++)
			n += blk_lower_uses(op->regions[i], v);
	}
	return n;
}

bool blk_lower_op_reads(const BlkOp *op, const BlkValue *v)
{
	for (int i = 0; i < op->noperands; i++)
		if (op->operands[i] == v)
			return true;
	for (int i = 0; i < op->nregions; i++)
		if (blk_lower_uses(op->regions[i], v) > 0)
			return true;
	return false;
}

void blk_loop_erase_dead(BlkLoop *L, BlkPtrMap *in)
{
	for (BlkOp *op = L->body->last, *prev; op; op = prev) {
		prev = op->prev;
		if (blk_pmap_get(in, op) && !blk_lower_uses(L->body, op->results[0]))
			blk_op_erase(op);
	}
}

BlkValue *blk_lower_i32(BlkBuilder *b, BlkLoc loc, int64_t v)
{
	return blk_build_const_int(b, loc, blk_type_scalar(BLK_I32), v);
}
