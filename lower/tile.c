/* tile.c - a distributed layout for every tile, and the shared-memory plan.
 *
 * Requires: block refs lowered (blockspec.c), shapes constant.  Produces:
 *   1. a layout (layout.h) for every tile value, in c->layouts and as a
 *      `layout` attribute on its op for --dump-after=tile:
 *      - dot results get the dot layout (register micro-tiles);
 *      - elementwise ops keep their operands' layout when they agree
 *        (so `acc.astype(T)` stays in the dot layout and its store writes
 *        each thread's 4x4 blocks directly), else take the default
 *        layout and convert the others;
 *      - loop carries take their init's layout, except a constant init
 *        whose loop yields a dot result: then the dot layout, so the
 *        accumulator never moves;
 *      - everything else gets the default (coalesced, vectorized) layout;
 *   2. `convert_layout` ops where a consumer needs another layout (a
 *      constant splat is rebuilt in place instead: it has no data);
 *   3. shared memory: scratch buffers, two K-major staging buffers per
 *      dot (double-buffered: one barrier per slab), and one transit region
 *      shared by every conversion, broadcast, transpose and reduction
 *      (each such op brackets its use with barriers).  Offsets are the
 *      `smem` attribute; c->smem_bytes is the total.
 */
#include "lower_int.h"

#include <string.h>

/* A scalar is held by every thread: rank-0 types carry no layout. */
static const BlkLayout *layout_of(LowerCtx *c, const BlkValue *v)
{
	if (v->type.rank == 0)
		return blk_lower_scalar_layout(c);
	if (!v->type.layout)
		blk_die("lower: tile: a value has no layout");
	return v->type.layout;
}

static void static_shape(const BlkType *t, int *shape)
{
	for (int d = 0; d < t->rank; d++)
		shape[d] = (int)blk_lower_dim(t->dims[d]);
}

static const BlkLayout *default_layout(LowerCtx *c, const BlkType *t)
{
	int shape[BLK_MAX_RANK];
	static_shape(t, shape);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = blk_layout_blocked(t->rank, shape, t->dtype, c->nthreads);
	return l;
}

static const BlkLayout *dot_layout(LowerCtx *c, const BlkType *t, const BlkOp *dot)
{
	if (!blk_op_attr(dot, "engine")) { /* IR text that skipped dot-engine */
		blk_error(c->d, dot->loc, "dot has no engine attr: the dot-engine pass runs before tile");
		blk_op_set_string(c->a, (BlkOp *)dot, "engine", "fma");
	}
	int shape[BLK_MAX_RANK];
	static_shape(t, shape);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = blk_lower_dot_mma(dot) ? blk_layout_mma(shape, c->nthreads)
	                               : blk_layout_dot(shape, c->nthreads);
	return l;
}

static void set_layout(LowerCtx *c, BlkValue *v, const BlkLayout *l)
{
	(void)c;
	if (v->type.rank > 0)
		v->type.layout = l;
}

/* ---- shared memory ---------------------------------------------------------- */

static size_t smem_alloc(LowerCtx *c, size_t bytes)
{
	size_t at = (c->smem_bytes + 15) & ~(size_t)15;
	c->smem_bytes = at + bytes;
	return at;
}

static void set_smem(LowerCtx *c, BlkOp *op, const void *key, size_t off)
{
	blk_pmap_put(c->a, &c->smem_off, key, (void *)(uintptr_t)(off + 1));
	if (op)
		blk_op_set_int(c->a, op, "smem", (int64_t)off);
}

static size_t elems(const BlkType *t)
{
	size_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= (size_t)blk_lower_dim(t->dims[d]);
	return n;
}

static size_t ref_bytes(const BlkType *t)
{
	return elems(t) * (size_t)blk_dtype_size(t->dtype);
}

/* Staging for dot(a[M,K], b[K,N]): A as f32 [K][pad(M)+4] (K-major, the
 * +4 staggers the transposing stores across banks), B as f32 [K][pad(N)];
 * two of each. */
size_t blk_lower_dot_stage_bytes(const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	size_t M = (size_t)blk_pow2ceil((int)blk_lower_dim(a->dims[0]));
	size_t K = (size_t)blk_lower_dim(a->dims[1]);
	size_t N = (size_t)blk_pow2ceil((int)blk_lower_dim(b->dims[1]));
	return (K * (M + 4) + K * N) * 4;
}

/* Staging for a tensor-core dot (emit_mma.c): A row-major [M][K+8] and B
 * row-major [K][N+8] in the operands' 16-bit type; the 8-element pad makes
 * the 8 row addresses of each ldmatrix hit distinct 16-byte bank groups. */
size_t blk_lower_mma_stage_bytes(const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	size_t M = (size_t)blk_lower_dim(a->dims[0]), K = (size_t)blk_lower_dim(a->dims[1]);
	size_t N = (size_t)blk_lower_dim(b->dims[1]);
	return (M * (K + 8) + K * (N + 8)) * 2;
}

static void need_transit(LowerCtx *c, const BlkValue *v)
{
	size_t n = 1;
	for (int d = 0; d < v->type.rank; d++)
		n *= (size_t)blk_pow2ceil((int)blk_lower_dim(v->type.dims[d]));
	if (n * 4 > c->transit_bytes)
		c->transit_bytes = n * 4;
}

/* ---- layouts ------------------------------------------------------------------- */

static bool is_splat(const BlkValue *v)
{
	return v->def && v->def->kind == BLK_OP_CONST;
}

/* v converted to layout l before op `at`. */
static BlkValue *relayout(LowerCtx *c, BlkOp *at, BlkValue *v, const BlkLayout *l)
{
	if (blk_layout_equal(layout_of(c, v), l))
		return v;
	BlkBuilder b;
	blk_builder_before(&b, c->a, at);
	BlkValue *n;
	if (is_splat(v)) {
		n = blk_build1(&b, BLK_OP_CONST, v->def->loc, v->type, 0, NULL);
		n->def->nattrs = v->def->nattrs;
		n->def->attrs = BLK_NEW_N(c->a, BlkAttr, v->def->nattrs + 1);
		memcpy(n->def->attrs, v->def->attrs, sizeof(BlkAttr) * (size_t)v->def->nattrs);
	} else {
		n = blk_build1(&b, BLK_OP_CONVERT_LAYOUT, at->loc, v->type, 1, &v);
		need_transit(c, v);
	}
	set_layout(c, n, l);
	return n;
}

static void tile_region(LowerCtx *c, BlkRegion *r);

static void tile_elementwise(LowerCtx *c, BlkOp *op)
{
	const BlkLayout *want = NULL;
	for (int i = 0; i < op->noperands && !want; i++)
		if (!is_splat(op->operands[i]) && op->operands[i]->type.rank == op->results[0]->type.rank)
			want = layout_of(c, op->operands[i]);
	for (int i = 0; i < op->noperands && want; i++)
		if (!blk_layout_equal(layout_of(c, op->operands[i]), want) && !want->dot &&
		    layout_of(c, op->operands[i])->dot)
			want = layout_of(c, op->operands[i]);
	if (!want)
		want = default_layout(c, &op->results[0]->type);
	for (int i = 0; i < op->noperands; i++)
		if (op->operands[i]->type.rank == op->results[0]->type.rank)
			op->operands[i] = relayout(c, op, op->operands[i], want);
	set_layout(c, op->results[0], want);
}

static void tile_dot(LowerCtx *c, BlkOp *op)
{
	const BlkLayout *l = dot_layout(c, &op->results[0]->type, op);
	if (op->noperands > 2)
		op->operands[2] = relayout(c, op, op->operands[2], l);
	set_layout(c, op->results[0], l);
	size_t stage = l->mma ? blk_lower_mma_stage_bytes(op) : blk_lower_dot_stage_bytes(op);
	const BlkAsyncDot *ad = blk_pmap_get(&c->async, op);
	set_smem(c, op, op, smem_alloc(c, (size_t)(ad ? ad->stages : 2) * stage));
}

/* The layout a loop carry starts in (see 1. above). */
static const BlkLayout *carry_layout(LowerCtx *c, BlkOp *loop, int i)
{
	BlkValue *init = loop->operands[3 + i];
	BlkOp *y = loop->regions[0]->last;
	if (is_splat(init) && y && y->kind == BLK_OP_YIELD && i < y->noperands) {
		BlkOp *d = y->operands[i]->def, *dot = d && d->kind == BLK_OP_DOT ? d : NULL;
		for (int j = 0; d && !dot && (blk_op_flags(d->kind) & BLK_OPF_ELEMENTWISE) &&
		                j < d->noperands; j++)
			if (d->operands[j]->def && d->operands[j]->def->kind == BLK_OP_DOT)
				dot = d->operands[j]->def;
		if (dot && init->type.rank == 2)
			return dot_layout(c, &init->type, dot);
	}
	return layout_of(c, init);
}

static void tile_for(LowerCtx *c, BlkOp *op)
{
	BlkRegion *body = op->regions[0];
	int nc = op->noperands - 3;
	const BlkLayout **ls = BLK_NEW_N(c->a, const BlkLayout *, nc + 1);
	for (int i = 0; i < nc; i++) {
		ls[i] = carry_layout(c, op, i);
		op->operands[3 + i] = relayout(c, op, op->operands[3 + i], ls[i]);
	}
	set_layout(c, body->args[0], default_layout(c, &body->args[0]->type));
	for (int i = 0; i < nc; i++)
		set_layout(c, body->args[1 + i], ls[i]);
	tile_region(c, body);
	BlkOp *y = body->last;
	for (int i = 0; y && y->kind == BLK_OP_YIELD && i < y->noperands; i++)
		y->operands[i] = relayout(c, y, y->operands[i], ls[i]);
	for (int i = 0; i < op->nresults; i++)
		set_layout(c, op->results[i], ls[i]);
}

static void tile_scoped(LowerCtx *c, BlkOp *op)
{
	BlkRegion *r = op->regions[0];
	for (int i = 0; i < r->nargs; i++)
		set_smem(c, NULL, r->args[i], smem_alloc(c, ref_bytes(&r->args[i]->type)));
	tile_region(c, r);
}

/* A reduction's result stays where it was reduced (its operand's layout
 * sliced); expand_dims keeps its operand's layout too.  Only reductions
 * whose axis spans warps, and conversions that do move elements, need the
 * transit region. */
static bool tile_moves(LowerCtx *c, BlkOp *op)
{
	if (!(op->kind == BLK_OP_BROADCAST || op->kind == BLK_OP_TRANSPOSE ||
	      op->kind == BLK_OP_EXPAND_DIMS || op->kind == BLK_OP_REDUCE_SUM ||
	      op->kind == BLK_OP_REDUCE_MAX || op->kind == BLK_OP_REDUCE_MIN))
		return false;
	BlkValue *v = op->operands[0];
	if (v->type.rank == 0)
		return false;
	if (blk_layout_split(layout_of(c, v))) /* an mma accumulator: reduce etc. in blocked */
		v = op->operands[0] = relayout(c, op, v, default_layout(c, &v->type));
	const BlkLayout *src = layout_of(c, v), *l;
	BlkLayout *made = BLK_NEW(c->a, BlkLayout);
	int axis = (int)blk_op_int(op, "axis", 0);
	if (op->kind == BLK_OP_EXPAND_DIMS) {
		*made = blk_layout_expand(src, axis);
		l = made;
	} else if (op->kind == BLK_OP_BROADCAST || op->kind == BLK_OP_TRANSPOSE) {
		l = default_layout(c, &op->results[0]->type);
		if (op->kind == BLK_OP_TRANSPOSE || !blk_layout_bcast_local(src, l))
			need_transit(c, v);
	} else {
		*made = blk_layout_slice(src, axis);
		l = made;
		if (src->tsh[axis] + blk_layout_log2(src->thr[axis]) > 5)
			need_transit(c, v);
	}
	set_layout(c, op->results[0], l);
	return true;
}

static void tile_op(LowerCtx *c, BlkOp *op)
{
	unsigned fl = blk_op_flags(op->kind);
	if (op->kind == BLK_OP_FOR) {
		tile_for(c, op);
		return;
	}
	if (op->kind == BLK_OP_SCOPED) {
		tile_scoped(c, op);
		return;
	}
	for (int i = 0; i < op->nregions; i++)
		tile_region(c, op->regions[i]);
	if (op->kind == BLK_OP_DOT) {
		tile_dot(c, op);
		return;
	}
	if ((fl & BLK_OPF_ELEMENTWISE) && op->nresults == 1) {
		tile_elementwise(c, op);
		return;
	}
	if (tile_moves(c, op))
		return;
	for (int i = 0; i < op->nresults; i++)
		if (op->results[i]->type.kind == BLK_TYPE_TILE)
			set_layout(c, op->results[i], default_layout(c, &op->results[i]->type));
}

static void tile_region(LowerCtx *c, BlkRegion *r)
{
	for (BlkOp *op = r->first; op; op = op->next)
		tile_op(c, op);
}

bool blk_lower_tile(LowerCtx *c)
{
	BlkKernel *k = c->k;
	int errors = blk_diag_error_count(c->d);
	c->transit_bytes = 0;
	c->smem_bytes = 0;
	for (int pi = 0; pi < k->nparams; pi++)
		if (k->params[pi].access == BLK_ACCESS_SCRATCH)
			set_smem(c, NULL, k->body->args[pi], smem_alloc(c, ref_bytes(&k->body->args[pi]->type)));
	tile_region(c, k->body);
	if (blk_diag_error_count(c->d) > errors)
		return false;
	c->transit_off = smem_alloc(c, c->transit_bytes);
	c->smem_bytes = (c->smem_bytes + 15) & ~(size_t)15;
	if (c->smem_bytes > 232448) {
		blk_error(c->d, k->loc, "kernel %s needs %zu bytes of shared memory at this launch; "
		          "the most a CTA can have is 232448", k->name, c->smem_bytes);
		return false;
	}
	return true;
}
