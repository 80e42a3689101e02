/* clone.c - a deep copy of a kernel, so the passes may rewrite it.
 *
 * Requires: a verified kernel.  Produces: the same kernel in c->m, every
 * value, op, region and attribute list fresh; syms are shared (immutable).
 */
#include "lower/lower_int.h"

#include <string.h>

static void clone_region(LowerCtx *c, BlkPtrMap *vm, const BlkRegion *from, BlkRegion *to, bool open);

/* v's copy; a value from outside what is copied stays itself where the
 * copy is open (one op), and is an error in a whole kernel's copy. */
static BlkValue *mapped(BlkPtrMap *vm, BlkValue *v, bool open)
{
	BlkValue *n = blk_pmap_get(vm, v);
	if (!n && !open)
		blk_die("lower: clone: a value is used outside its scope");
	return n ? n : v;
}

static BlkOp *clone_op(LowerCtx *c, BlkPtrMap *vm, const BlkOp *op, BlkBuilder *b, bool open)
{
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, op->noperands + 1);
	BlkType *types = BLK_NEW_N(c->a, BlkType, op->nresults + 1);
	for (int i = 0; i < op->noperands; i++)
		ops[i] = mapped(vm, op->operands[i], open);
	for (int i = 0; i < op->nresults; i++)
		types[i] = op->results[i]->type;
	BlkOp *n = blk_build(b, op->kind, op->loc, op->noperands, ops, op->nresults, types,
	                     op->nregions);
	n->nattrs = op->nattrs;
	n->attrs = BLK_NEW_N(c->a, BlkAttr, op->nattrs + 1);
	if (op->nattrs > 0) /* attrs is NULL when empty; memcpy(NULL) is UB even for 0 bytes */
		memcpy(n->attrs, op->attrs, sizeof(BlkAttr) * (size_t)op->nattrs);
	for (int i = 0; i < op->nresults; i++) {
		n->results[i]->name = op->results[i]->name;
		blk_pmap_put(c->a, vm, op->results[i], n->results[i]);
	}
	for (int i = 0; i < op->nregions; i++)
		clone_region(c, vm, op->regions[i], n->regions[i], open);
	return n;
}

static void clone_region(LowerCtx *c, BlkPtrMap *vm, const BlkRegion *from, BlkRegion *to, bool open)
{
	for (int i = 0; i < from->nargs; i++) {
		BlkValue *v = blk_region_add_arg(c->a, to, from->args[i]->type, from->args[i]->name);
		blk_pmap_put(c->a, vm, from->args[i], v);
	}
	BlkBuilder b;
	blk_builder_at_end(&b, c->a, to);
	for (const BlkOp *op = from->first; op; op = op->next)
		clone_op(c, vm, op, &b, open);
}

static BlkRegion *clone_top(LowerCtx *c, const BlkRegion *r)
{
	if (!r)
		return NULL;
	BlkPtrMap vm = { 0 };
	BlkRegion *n = blk_region_create(c->a);
	clone_region(c, &vm, r, n, false);
	return n;
}

BlkOp *blk_lower_clone_op(LowerCtx *c, BlkBuilder *b, BlkPtrMap *vm, const BlkOp *op)
{
	return clone_op(c, vm, op, b, true);
}

BlkKernel *blk_lower_clone(LowerCtx *c, const BlkKernel *k)
{
	c->m = blk_module_create(c->a);
	BlkKernel *n = blk_kernel_add(c->m, k->name, k->loc);
	BlkKernel *next = n->next;
	*n = *k;
	n->next = next;
	n->params = BLK_NEW_N(c->a, BlkParam, k->nparams + 1);
	if (k->nparams > 0) /* params is NULL for a kernel without any */
		memcpy(n->params, k->params, sizeof(BlkParam) * (size_t)k->nparams);
	for (int i = 0; i < k->nparams; i++)
		n->params[i].index_map = clone_top(c, k->params[i].index_map);
	n->body = clone_top(c, k->body);
	if (k->launch)
		n->launch = blk_launch_copy(c->a, k->launch);
	return n;
}
