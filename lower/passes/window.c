/* window.c - Triton's pointer arithmetic as BlockSpecs: offsets built from
 * `program_id * B + iota(B)` become the windows and blocks a Pallas kernel
 * names, so that the passes that work on blocks (coarsen, the pipeliner,
 * TMA, persistent grids) see the same IR.
 *
 * Requires: specialize (constant shapes), regrid (program ids of a 2-D
 * grid as written).  Produces, before blockspec:
 *
 *   iota-window   an access whose every non-scalar index is a gather by an
 *                 outer product of `s + iota(B)` rows -- `a[rm[:, None],
 *                 rk[None, :]]`, `x[r, off + iota(B)]` -- each along its
 *                 own result axis, in order -> the windows `ds(s, B)`.  The
 *                 same elements: an index outside the dim reads the fill
 *                 (a store skips it) in both, the window's check unsigned
 *                 as the gather's.
 *   block         a param with no block of its own (the whole array, index
 *                 map all 0), all of whose accesses along dim d are windows
 *                 `ds(program_id(a) * C, C)` of one constant C and one
 *                 parallel grid axis a -> block C along d, index map
 *                 program id a there, each window `ds(0, C)` of the block:
 *                 matmul.blk's `block (BM, K) index (i, j) -> (i, 0)`.
 *                 The block's elements past the array are masked as the
 *                 window's were.
 *
 * Attr `window = N` on the kernel's first op says how many accesses the
 * first rule rewrote, `blocked` on a param's index map's yield the dims
 * the second gave a block. */
#include "lower/lower_int.h"

#include <string.h>

static bool is_access(const BlkOp *op)
{
	return op->kind == BLK_OP_LOAD || op->kind == BLK_OP_STORE;
}

/* v (i32, rank 1, extent B) is s + iota(B) or iota(B) + s (s a broadcast
 * scalar), or iota(B) (s NULL: 0).  *s. */
static bool iota_offset(const BlkValue *v, BlkValue **s)
{
	const BlkOp *d = v->def;
	if (v->type.kind != BLK_TYPE_TILE || v->type.rank != 1 || v->type.dtype != BLK_I32 || !d)
		return false;
	if (d->kind == BLK_OP_IOTA) {
		*s = NULL;
		return blk_op_int(d, "axis", 0) == 0;
	}
	if (d->kind != BLK_OP_ADD)
		return false;
	for (int o = 0; o < 2; o++) {
		const BlkOp *bc = d->operands[o]->def, *io = d->operands[1 - o]->def;
		if (bc && bc->kind == BLK_OP_BROADCAST && bc->operands[0]->type.rank == 0 && io &&
		    io->kind == BLK_OP_IOTA && blk_op_int(io, "axis", 0) == 0) {
			*s = bc->operands[0];
			return true;
		}
	}
	return false;
}

/* The rank-1 offsets u whose broadcast along axis `axis` of a rank-n result
 * v is: v itself (n = 1), or broadcast(w), w all ones but `axis` and made
 * from u by expand_dims.  NULL otherwise. */
static BlkValue *along(BlkValue *v, int n, int axis)
{
	if (n == 1)
		return v->type.rank == 1 ? v : NULL;
	const BlkOp *bc = v->def;
	if (!bc || bc->kind != BLK_OP_BROADCAST || v->type.rank != n)
		return NULL;
	BlkValue *w = bc->operands[0];
	if (w->type.rank != n)
		return NULL;
	for (int d = 0; d < n; d++) {
		int64_t e = blk_lower_dim(w->type.dims[d]);
		if ((d == axis) != (e != 1 || blk_lower_dim(v->type.dims[d]) == 1))
			return NULL;
	}
	while (w->type.rank > 1 && w->def && w->def->kind == BLK_OP_EXPAND_DIMS)
		w = w->def->operands[0];
	return w->type.rank == 1 ? w : NULL;
}

typedef struct Win {
	LowerCtx *c;
	int rewritten;
	BlkValue **old; /* the gathers' index tiles, for sweep */
	int nold, cap;
} Win;

/* The offset arithmetic the windows no longer read: pure ops of no
 * regions whose result nothing uses, back through their operands. */
static void sweep(Win *w, BlkValue *v)
{
	BlkOp *d = v->def;
	if (!d || d->nregions || d->nresults != 1 || blk_lower_uses(w->c->k->body, v))
		return;
	switch (d->kind) {
	case BLK_OP_BROADCAST: case BLK_OP_EXPAND_DIMS: case BLK_OP_IOTA: case BLK_OP_ADD:
	case BLK_OP_MUL: case BLK_OP_CONST: case BLK_OP_PROGRAM_ID:
		break;
	default:
		return;
	}
	int n = d->noperands;
	BlkValue *ops[8];
	for (int i = 0; i < n && i < 8; i++)
		ops[i] = d->operands[i];
	blk_op_erase(d);
	for (int i = 0; i < n && i < 8; i++)
		sweep(w, ops[i]);
}

static void note_old(Win *w, BlkValue *v)
{
	if (w->nold == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 8;
		w->old = blk_arena_grow(w->c->a, w->old, (size_t)w->nold, (size_t)w->cap, sizeof *w->old);
	}
	w->old[w->nold++] = v;
}

/* iota-window on one access: true where it was rewritten. */
static bool iota_window(Win *w, BlkOp *op)
{
	LowerCtx *c = w->c;
	BlkAttr *idx = (BlkAttr *)blk_op_attr(op, "idx");
	if (!idx || idx->kind != BLK_ATTR_INDEX)
		return false;
	int n = 0; /* the gathers: the result's rank */
	for (int d = 0; d < idx->index.n; d++) {
		BlkIndexKind k = idx->index.v[d].kind;
		if (k == BLK_INDEX_GATHER)
			n++;
		else if (k != BLK_INDEX_SCALAR)
			return false; /* a whole dim or a window beside: its axis has a place of its own */
	}
	if (!n)
		return false;
	BlkValue *start[BLK_MAX_RANK];
	int64_t size[BLK_MAX_RANK];
	for (int d = 0, o = 1, g = 0; d < idx->index.n; d++, o++) {
		if (idx->index.v[d].kind != BLK_INDEX_GATHER)
			continue;
		BlkValue *u = along(op->operands[o], n, g);
		if (!u || !iota_offset(u, &start[d]))
			return false;
		size[d] = blk_lower_dim(u->type.dims[0]);
		g++;
	}
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkIndex v[BLK_MAX_RANK];
	for (int d = 0, o = 1; d < idx->index.n; d++, o++) {
		v[d] = idx->index.v[d];
		if (v[d].kind != BLK_INDEX_GATHER)
			continue;
		v[d].kind = BLK_INDEX_DS;
		v[d].size = blk_sym_const(c->a, size[d]);
		v[d].step = 1;
		note_old(w, op->operands[o]);
		op->operands[o] = start[d] ? start[d] : blk_lower_i32(&b, op->loc, 0);
	}
	blk_op_set_index(c->a, op, "idx", idx->index.n, v);
	return true;
}

/* The grid axis a of `program_id(a) * C` (either order) with C == want, a
 * parallel axis; -1 otherwise. */
static int pid_times(const BlkKernel *k, const BlkValue *v, int64_t want)
{
	const BlkOp *m = v->def;
	if (!m || m->kind != BLK_OP_MUL || m->noperands != 2)
		return -1;
	for (int o = 0; o < 2; o++) {
		const BlkOp *p = m->operands[o]->def, *cst = m->operands[1 - o]->def;
		const BlkAttr *val = cst && cst->kind == BLK_OP_CONST ? blk_op_attr(cst, "value") : NULL;
		if (p && p->kind == BLK_OP_PROGRAM_ID && val && val->kind == BLK_ATTR_INT && val->i == want) {
			int a = (int)blk_op_int(p, "axis", -1);
			return a >= 0 && a < k->grid_rank && !k->grid_seq[a] ? a : -1;
		}
	}
	return -1;
}

/* A window ds(0, n) over all n of a dim reads the whole dim: `:` (as
 * matmul.blk writes `a[:, ds(k * BK, BK)]` of its block). */
static void whole_dims(LowerCtx *c, BlkOp *op)
{
	BlkAttr *idx = (BlkAttr *)blk_op_attr(op, "idx");
	const BlkValue *ref = op->operands[0];
	if (!idx || idx->kind != BLK_ATTR_INDEX || idx->index.n != ref->type.rank)
		return;
	int nidx = 0;
	for (int d = 0; d < idx->index.n; d++)
		nidx += idx->index.v[d].kind != BLK_INDEX_FULL;
	BlkIndex v[BLK_MAX_RANK];
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, op->noperands);
	int n = 0;
	ops[n++] = op->operands[0];
	for (int d = 0, o = 1; d < idx->index.n; d++) {
		v[d] = idx->index.v[d];
		if (v[d].kind == BLK_INDEX_FULL)
			continue;
		const BlkOp *s = op->operands[o]->def;
		const BlkAttr *val = s && s->kind == BLK_OP_CONST ? blk_op_attr(s, "value") : NULL;
		if (v[d].kind == BLK_INDEX_DS && blk_index_step(&v[d]) == 1 && val && val->kind == BLK_ATTR_INT &&
		    val->i == 0 && blk_lower_dim(v[d].size) == blk_lower_dim(ref->type.dims[d]))
			v[d].kind = BLK_INDEX_FULL, v[d].size = NULL, v[d].step = 0;
		else
			ops[n++] = op->operands[o];
		o++;
	}
	if (n == 1 + nidx)
		return;
	for (int o = 1 + nidx; o < op->noperands; o++) /* a store's value */
		ops[n++] = op->operands[o];
	op->operands = ops;
	op->noperands = n;
	blk_op_set_index(c->a, op, "idx", idx->index.n, v);
}

typedef struct Uses {
	BlkOp **ops;
	int n, cap;
	const BlkValue *ref;
	bool other; /* used by something not a load or a store of it */
	BlkArena *a;
} Uses;

static void collect(void *ctx, BlkOp *op)
{
	Uses *u = ctx;
	for (int i = 0; i < op->noperands; i++) {
		if (op->operands[i] != u->ref)
			continue;
		if (!is_access(op) || i != 0) {
			u->other = true;
			continue;
		}
		if (u->n == u->cap) {
			u->cap = u->cap ? 2 * u->cap : 8;
			u->ops = blk_arena_grow(u->a, u->ops, (size_t)u->n, (size_t)u->cap, sizeof *u->ops);
		}
		u->ops[u->n++] = op;
	}
}

/* Param pi has no block of its own: every block dim the array's and the
 * index map a yield of constant zeros. */
static BlkOp *whole(const BlkKernel *k, int pi)
{
	const BlkParam *p = &k->params[pi];
	if (!p->index_map || p->prefetch || p->symmetric || p->access == BLK_ACCESS_SCRATCH)
		return NULL;
	for (int d = 0; d < p->rank; d++)
		if (p->squeezed[d] || !blk_sym_equal(p->block[d], p->shape[d]))
			return NULL;
	BlkOp *y = p->index_map->last;
	if (!y || y->kind != BLK_OP_YIELD || y->noperands != p->rank)
		return NULL;
	for (int d = 0; d < p->rank; d++) {
		const BlkOp *cst = y->operands[d]->def;
		const BlkAttr *val = cst && cst->kind == BLK_OP_CONST ? blk_op_attr(cst, "value") : NULL;
		if (!val || val->kind != BLK_ATTR_INT || val->i != 0)
			return NULL;
	}
	return y;
}

/* The operand of access op that is dim d's index (-1: a whole dim). */
static int operand_of(const BlkOp *op, int d)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	int o = 1;
	for (int e = 0; idx && e < d && e < idx->index.n; e++)
		o += idx->index.v[e].kind != BLK_INDEX_FULL;
	return idx && d < idx->index.n && idx->index.v[d].kind != BLK_INDEX_FULL ? o : -1;
}

/* block on param pi: the dims whose every access is ds(program_id(a) * C,
 * C) of one C and one a. */
static void block(Win *w, int pi)
{
	LowerCtx *c = w->c;
	BlkKernel *k = c->k;
	BlkOp *y = whole(k, pi);
	if (!y || pi >= k->body->nargs)
		return;
	Uses u = { .ref = k->body->args[pi], .a = c->a };
	blk_lower_walk(k->body, collect, &u);
	if (u.other || !u.n)
		return;
	BlkParam *p = &k->params[pi];
	int64_t blocked = 0;
	for (int d = 0; d < p->rank; d++) {
		int64_t C = 0;
		int axis = -1;
		for (int i = 0; i < u.n; i++) {
			const BlkAttr *idx = blk_op_attr(u.ops[i], "idx");
			const BlkIndex *ix = idx && d < idx->index.n ? &idx->index.v[d] : NULL;
			int o = operand_of(u.ops[i], d);
			if (!ix || ix->kind != BLK_INDEX_DS || blk_index_step(ix) != 1 || o < 0) {
				axis = -2;
				break;
			}
			int64_t size = blk_lower_dim(ix->size);
			int a = size > 0 ? pid_times(k, u.ops[i]->operands[o], size) : -1;
			if (a < 0 || (i && (a != axis || size != C))) {
				axis = -2;
				break;
			}
			axis = a, C = size;
		}
		if (axis < 0)
			continue;
		/* the block and its index map; each window now starts at 0 */
		p->block[d] = blk_sym_const(c->a, C);
		k->body->args[pi]->type.dims[d] = p->block[d]; /* the body sees the block */
		y->operands[d] = p->index_map->args[axis];
		for (int i = 0; i < u.n; i++) {
			BlkBuilder b;
			blk_builder_before(&b, c->a, u.ops[i]);
			int o = operand_of(u.ops[i], d);
			note_old(w, u.ops[i]->operands[o]);
			u.ops[i]->operands[o] = blk_lower_i32(&b, u.ops[i]->loc, 0);
		}
		blocked |= (int64_t)1 << d;
	}
	if (!blocked)
		return;
	blk_op_set_int(c->a, y, "blocked", blocked);
	for (int i = 0; i < u.n; i++)
		whole_dims(c, u.ops[i]);
}

static void window_op(void *ctx, BlkOp *op)
{
	Win *w = ctx;
	if (is_access(op))
		w->rewritten += iota_window(w, op);
}

bool blk_lower_window(LowerCtx *c)
{
	Win w = { .c = c };
	blk_lower_walk(c->k->body, window_op, &w);
	for (int pi = 0; pi < c->k->nparams; pi++)
		block(&w, pi);
	for (int i = 0; i < w.nold; i++)
		sweep(&w, w.old[i]);
	if (w.rewritten && c->k->body->first)
		blk_op_set_int(c->a, c->k->body->first, "window", w.rewritten);
	return true;
}
