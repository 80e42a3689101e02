/* tile.c - a distributed layout for every tile, shared buffers as ops.
 *
 * Requires: block refs lowered (blockspec.c), shapes constant, every dot's
 * engine chosen (dot_engine.c).  Produces the GPU level (docs/ir.md):
 *   1. a layout (ir/layout.h) in the type of every tile value:
 *      - dot results get the dot layout (register micro-tiles);
 *      - elementwise ops keep their operands' layout when they agree
 *        (so `acc.astype(T)` stays in the dot layout and its store writes
 *        each thread's 4x4 blocks directly), else take the default
 *        layout and convert the others;
 *      - loop carries take their init's layout, except a constant init
 *        whose loop yields a dot result (through elementwise ops): the
 *        dot layout, so the accumulator never moves; or a constant vector init whose loop
 *        yields a row reduction of a dot's result: the rows of the dot
 *        layout (a softmax's running max and sum); or a small loaded
 *        vector (prefetch.c's next step's scales) that the body
 *        broadcasts onto a dot's result: that layout's slice;
 *      - everything else gets the default (coalesced, vectorized) layout;
 *   2. `convert_layout` ops where a consumer needs another layout (a
 *      constant splat is rebuilt in place instead: it has no data; a
 *      broadcast of a vector is made again in the consumer's layout, the
 *      vector converted instead of the tile);
 *   3. every dot's accumulator explicit (operand 2: a zero splat where it
 *      had none); its staging is dot_stage.c's;
 *   4. a `local_alloc` op for scratch params and scoped Refs (their uses
 *      move to the alloc; smem_plan.c gives every buffer its bytes) and
 *      for the transit region that every conversion, broadcast, transpose
 *      and cross-warp reduction shares (role "transit"; each such op
 *      brackets its use with barriers), sized by what crosses it;
 *   5. `extract` and `reshape` as a store to a shared buffer and a load
 *      from it (through_shared);
 *   6. a `barrier` before and after each load, store, swap or atomic_add
 *      of a shared Ref or of an array the program accesses twice, once or
 *      more to write (one between two in a row): its elements are other
 *      threads' too.
 */
#include "lower/lower_int.h"

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
	if (blk_lower_dot_wgmma(dot))
		*l = blk_layout_wgmma(shape, c->nthreads);
	else if (blk_lower_dot_mma(dot))
		*l = blk_layout_mma_grid(shape, c->nthreads, blk_lower_dot_warps_n(c, dot));
	else
		*l = blk_layout_dot(shape, c->nthreads);
	return l;
}

static void set_layout(LowerCtx *c, BlkValue *v, const BlkLayout *l)
{
	(void)c;
	if (v->type.rank > 0)
		v->type.layout = l;
}

/* ---- shared memory: local_alloc ops (offsets are smem_plan.c's) ---------------- */

/* A local_alloc of a dt[n0, n1] (n1 == 0: dt[n0]) buffer at b. */
static BlkValue *local_alloc(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkDType dt, int64_t n0,
                             int64_t n1)
{
	const BlkSym *dims[2] = { blk_sym_const(c->a, n0), blk_sym_const(c->a, n1) };
	BlkType t = blk_type_ref(dt, n1 ? 2 : 1, dims, BLK_SPACE_SHARED);
	return blk_build(b, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &t, 0)->results[0];
}

/* A scratch Ref (a scratch param's body arg, a scoped region's arg) becomes
 * a local_alloc at the start of region r; its uses move to it. */
static void alloc_scratch(LowerCtx *c, BlkRegion *r, BlkValue *arg, BlkLoc loc)
{
	BlkBuilder b;
	if (r->first)
		blk_builder_before(&b, c->a, r->first);
	else
		blk_builder_at_end(&b, c->a, r);
	BlkOp *op = blk_build(&b, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &arg->type, 0);
	op->results[0]->name = arg->name;
	blk_replace_uses(r, arg, op->results[0]);
}

/* The transit region holds n 4-byte slots at least. */
static void need_transit_n(size_t *bytes, size_t n)
{
	if (n * 4 > *bytes)
		*bytes = n * 4;
}

/* Elements of v's padded shape (what emit_transit.c writes). */
static size_t result_elems(const BlkValue *v)
{
	size_t n = 1;
	for (int d = 0; d < v->type.rank; d++)
		n *= (size_t)blk_pow2ceil((int)blk_lower_dim(v->type.dims[d]));
	return n;
}

static void need_transit(size_t *bytes, const BlkValue *v)
{
	need_transit_n(bytes, result_elems(v));
}

/* ---- layouts ------------------------------------------------------------------- */

static bool is_splat(const BlkValue *v)
{
	return v->def && v->def->kind == BLK_OP_CONST;
}

/* v converted to layout l before op `at`. */
/* ---- rematerialization: values with no data of their own (constants,
 * iota, broadcasts, expand_dims and elementwise ops of those) are computed
 * again in the layout a consumer wants instead of moved through shared
 * memory: a mask built from iotas, a scalar broadcast, a row vector
 * broadcast along the rows of an mma tile; and small loads of read-only
 * arrays, loaded again in that layout (a bias broadcast over the rows). */

/* The layout op's operand i needs for op's result to come out in l, or
 * NULL where no such layout moves nothing. */
static const BlkLayout *operand_layout(LowerCtx *c, const BlkOp *op, int i, const BlkLayout *l)
{
	const BlkType *t = &op->operands[i]->type, *r = &op->results[0]->type;
	if (t->rank == 0)
		return l;
	BlkLayout *m = BLK_NEW(c->a, BlkLayout);
	if (op->kind == BLK_OP_EXPAND_DIMS) {
		int axis = (int)blk_op_int(op, "axis", 0);
		if (l->thr[axis] != 1 || l->spt[axis] != 1)
			return NULL;
		*m = blk_layout_slice(l, axis);
		BlkLayout back = blk_layout_expand(m, axis); /* the verifier's rule */
		return blk_layout_equal(&back, l) ? m : NULL;
	}
	if (op->kind == BLK_OP_BROADCAST) { /* dims align right; the leading ones are new */
		int lead = r->rank - t->rank;
		*m = *l;
		for (int d = 0; d < t->rank; d++)
			if (blk_lower_dim(t->dims[d]) == 1 && blk_lower_dim(r->dims[d + lead]) != 1)
				*m = blk_layout_collapse(m, d + lead);
		for (int d = 0; d < lead; d++)
			*m = blk_layout_slice(m, 0);
		return blk_layout_bcast_local(m, l) ? m : NULL;
	}
	return t->rank == r->rank ? l : NULL;
}

enum { REMAT_LOAD_MAX = 4096 }; /* elements: a bias vector, not a tile */

/* A small load of an array nothing writes: loading it again in another
 * layout costs less than moving it (a bias broadcast over an mma tile). */
static bool small_readonly_load(const LowerCtx *c, const BlkOp *op)
{
	if (op->kind != BLK_OP_LOAD || !blk_loop_read_only(c, op->operands[0]) || blk_op_gathers(op))
		return false;
	int64_t n = 1;
	for (int d = 0; d < op->results[0]->type.rank; d++)
		n *= blk_lower_dim(op->results[0]->type.dims[d]);
	return n <= REMAT_LOAD_MAX;
}

static bool remat_kind(const LowerCtx *c, const BlkOp *op)
{
	BlkOpKind k = op->kind;
	return k == BLK_OP_CONST || k == BLK_OP_IOTA || k == BLK_OP_BROADCAST || k == BLK_OP_EXPAND_DIMS ||
	       (blk_op_flags(k) & BLK_OPF_ELEMENTWISE) || small_readonly_load(c, op);
}

/* v can be had in l without moving data: it is, or it can be recomputed. */
static bool can_remat(LowerCtx *c, const BlkValue *v, const BlkLayout *l, int depth)
{
	if (v->type.rank == 0 || blk_layout_equal(layout_of(c, v), l))
		return true;
	const BlkOp *d = v->def;
	if (!d || depth > BLK_LOWER_CHAIN_DEPTH || d->nresults != 1 || d->nregions || !remat_kind(c, d))
		return false;
	for (int i = 0; i < d->noperands && d->kind != BLK_OP_LOAD; i++) {
		const BlkLayout *m = operand_layout(c, d, i, l);
		if (!m || !can_remat(c, d->operands[i], m, depth + 1))
			return false;
	}
	return true;
}

/* v in l, recomputed before b's insertion point (can_remat said it can). */
/* v's op made again at b on operands ops, its result in l. */
static BlkValue *rebuild(LowerCtx *c, BlkBuilder *b, const BlkValue *v, BlkValue **ops, const BlkLayout *l)
{
	const BlkOp *d = v->def;
	BlkValue *n = blk_build1(b, d->kind, d->loc, v->type, d->noperands, ops);
	n->def->nattrs = d->nattrs;
	n->def->attrs = BLK_NEW_N(c->a, BlkAttr, d->nattrs + 1);
	if (d->nattrs > 0)
		memcpy(n->def->attrs, d->attrs, sizeof(BlkAttr) * (size_t)d->nattrs);
	n->name = v->name;
	set_layout(c, n, l);
	return n;
}

static BlkValue *remat(LowerCtx *c, BlkBuilder *b, BlkValue *v, const BlkLayout *l)
{
	if (v->type.rank == 0 || blk_layout_equal(layout_of(c, v), l))
		return v;
	BlkOp *d = v->def;
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, d->noperands + 1);
	for (int i = 0; i < d->noperands; i++) /* a load's operands are its Ref and indices */
		ops[i] = d->kind == BLK_OP_LOAD ? d->operands[i] : remat(c, b, d->operands[i], operand_layout(c, d, i, l));
	return rebuild(c, b, v, ops, l);
}

/* v in layout l before op `at`: itself, recomputed, or converted. */
static BlkValue *relayout(LowerCtx *c, BlkOp *at, BlkValue *v, const BlkLayout *l)
{
	if (blk_layout_equal(layout_of(c, v), l))
		return v;
	BlkBuilder b;
	blk_builder_before(&b, c->a, at);
	if (can_remat(c, v, l, 0))
		return remat(c, &b, v, l);
	const BlkOp *d = v->def;
	const BlkLayout *m = d && (d->kind == BLK_OP_BROADCAST || d->kind == BLK_OP_EXPAND_DIMS) &&
	                     d->operands[0]->type.rank > 0 ? operand_layout(c, d, 0, l) : NULL;
	if (m) {
		/* a vector broadcast over a tile (a loop-carried statistic along
		 * the columns of an mma tile): the vector moves, and the
		 * broadcast is made again in l, instead of the whole tile */
		BlkValue *x = relayout(c, at, d->operands[0], m);
		return rebuild(c, &b, v, &x, l);
	}
	BlkValue *n = blk_build1(&b, BLK_OP_CONVERT_LAYOUT, at->loc, v->type, 1, &v);
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

/* The dot takes an accumulator (a zero splat when it had none). */
static void tile_dot(LowerCtx *c, BlkOp *op)
{
	const BlkLayout *l = dot_layout(c, &op->results[0]->type, op);
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, 4);
	ops[0] = op->operands[0], ops[1] = op->operands[1];
	BlkType rt = op->results[0]->type;
	ops[2] = op->noperands > 2 ? relayout(c, op, op->operands[2], l)
	         : rt.dtype == BLK_I32 ? blk_build_const_int(&b, op->loc, rt, 0)
	                               : blk_build_const_float(&b, op->loc, rt, 0.0);
	set_layout(c, ops[2], l);
	set_layout(c, op->results[0], l);
	op->operands = ops;
	op->noperands = 3; /* dot_stage.c stores tile operands into shared memory */
	if (ops[1]->type.kind == BLK_TYPE_REF && ops[0]->type.kind == BLK_TYPE_TILE) {
		/* B in shared memory (pipeline.c), A from registers: its mma fragments */
		int shape[2];
		static_shape(&ops[0]->type, shape);
		BlkLayout *al = BLK_NEW(c->a, BlkLayout);
		*al = blk_lower_dot_wgmma(op) ? blk_layout_wgmma(shape, c->nthreads)
		                              : blk_layout_mma_grid(shape, c->nthreads, 1);
		ops[0] = relayout(c, op, ops[0], al);
	}
}

/* The layout of the rows of the dot whose row reduction v comes from
 * (through elementwise ops), or NULL: a softmax's running max and sum. */
static const BlkLayout *row_layout_behind(LowerCtx *c, BlkValue *v, int depth)
{
	BlkOp *d = v->def;
	if (!d || depth > BLK_LOWER_CHAIN_DEPTH || v->type.rank != 1)
		return NULL;
	if ((d->kind == BLK_OP_REDUCE_SUM || d->kind == BLK_OP_REDUCE_MAX || d->kind == BLK_OP_REDUCE_MIN) &&
	    blk_op_int(d, "axis", 0) == 1) {
		BlkOp *dot = blk_lower_dot_behind(d->operands[0], NULL);
		if (!dot)
			return NULL;
		BlkLayout *l = BLK_NEW(c->a, BlkLayout);
		*l = blk_layout_slice(dot_layout(c, &dot->results[0]->type, dot), 1);
		return l;
	}
	if (!(blk_op_flags(d->kind) & BLK_OPF_ELEMENTWISE))
		return NULL;
	for (int i = 0; i < d->noperands; i++) {
		const BlkLayout *l = row_layout_behind(c, d->operands[i], depth + 1);
		if (l)
			return l;
	}
	return NULL;
}

/* v comes from `from` through elementwise ops of v's rank (in r). */
static bool from_vector(const BlkValue *v, const BlkValue *from, const BlkRegion *r, int depth)
{
	if (v == from)
		return true;
	const BlkOp *d = v->def;
	if (!d || d->parent != r || depth > BLK_LOWER_CHAIN_DEPTH || !(blk_op_flags(d->kind) & BLK_OPF_ELEMENTWISE))
		return false;
	for (int i = 0; i < d->noperands; i++)
		if (d->operands[i]->type.rank == v->type.rank && from_vector(d->operands[i], from, r, depth + 1))
			return true;
	return false;
}

/* The layout tiling will give v, a tile of body r not tiled yet, where v
 * comes through elementwise ops (each taking its first operand's layout,
 * tile_elementwise; a join and the reshape of its last two dims as
 * they keep them in registers) from a dot (its layout), a load (the
 * default layout) or a tile carried by the loop (its carry layout), or
 * NULL. */
static const BlkLayout *carry_layout(LowerCtx *c, BlkOp *loop, int i);

static const BlkLayout *layout_ahead(LowerCtx *c, const BlkValue *v, const BlkRegion *r, int depth)
{
	const BlkOp *d = v->def;
	if (depth > 2 * BLK_LOWER_CHAIN_DEPTH)
		return NULL;
	for (int i = 1; !d && r->parent && r->parent->kind == BLK_OP_FOR && i < r->nargs; i++)
		if (r->args[i] == v && v->type.rank > 1) /* a carry (prefetch.c's next slab): its layout */
			return carry_layout(c, r->parent, i - 1);
	if (!d || d->parent != r)
		return NULL;
	if (d->kind == BLK_OP_DOT)
		return dot_layout(c, &v->type, d);
	if (d->kind == BLK_OP_LOAD)
		return default_layout(c, &v->type);
	if (d->kind == BLK_OP_JOIN || d->kind == BLK_OP_RESHAPE) { /* as tile_join, reshape_in_registers */
		const BlkLayout *o = layout_ahead(c, d->operands[0], r, depth + 1);
		BlkLayout *l = BLK_NEW(c->a, BlkLayout);
		if (d->kind == BLK_OP_JOIN)
			*l = blk_layout_join(o && blk_layout_plain(o) ? o : default_layout(c, &d->operands[0]->type),
			                     d->noperands);
		else if (!o || d->operands[0]->type.rank != v->type.rank + 1 || !blk_layout_merge_last(o, l))
			return NULL;
		return l;
	}
	if (!(blk_op_flags(d->kind) & BLK_OPF_ELEMENTWISE))
		return NULL;
	for (int i = 0; i < d->noperands; i++)
		if (!is_splat(d->operands[i]) && d->operands[i]->type.rank == v->type.rank)
			return layout_ahead(c, d->operands[i], r, depth + 1);
	return NULL;
}

/* The layout a vector carry v of loop body r is used in: where, through
 * elementwise ops, an expand_dims of it on axis a is broadcast and
 * combined with a tile whose layout is known ahead (layout_ahead: a
 * per-step scale on the step's product, block-scaled fp8's `dot(x, w.T)
 * * sx[:, k][:, None]`; a group's scales on unpacked int4 weights), that
 * layout's slice along a -- the vector loaded each step in the layout it
 * is used in, not converted each step.  NULL if none. */
static const BlkLayout *vector_use_layout(LowerCtx *c, const BlkRegion *r, const BlkValue *v)
{
	for (const BlkOp *e = r->first; e; e = e->next) {
		if (e->kind != BLK_OP_EXPAND_DIMS || e->operands[0]->type.rank != 1 ||
		    !from_vector(e->operands[0], v, r, 0))
			continue;
		for (const BlkOp *bc = e->next; bc; bc = bc->next) {
			if (bc->kind != BLK_OP_BROADCAST || bc->operands[0] != e->results[0] || bc->results[0]->type.rank != 2)
				continue;
			for (const BlkOp *u = bc->next; u; u = u->next)
				for (int i = 0; (blk_op_flags(u->kind) & BLK_OPF_ELEMENTWISE) && i < u->noperands; i++) {
					const BlkLayout *m = u->operands[i] == bc->results[0] || !blk_lower_op_reads(u, bc->results[0])
					                     ? NULL : layout_ahead(c, u->operands[i], r, 0);
					if (!m)
						continue;
					BlkLayout *l = BLK_NEW(c->a, BlkLayout);
					*l = blk_layout_slice(m, (int)blk_op_int(e, "axis", 0));
					return l;
				}
		}
	}
	return NULL;
}

/* The layout a loop carry starts in (see 1. above). */
static const BlkLayout *carry_layout(LowerCtx *c, BlkOp *loop, int i)
{
	BlkValue *init = loop->operands[3 + i];
	BlkOp *y = loop->regions[0]->last;
	const BlkLayout *use;
	/* (the init and the next step's load reloaded in it: small_readonly_load;
	 * not a split slice, of mma.sync's tile: an expand_dims moves those to
	 * blocked first, tile_moves) */
	if (init->type.rank == 1 && init->def && small_readonly_load(c, init->def) &&
	    (use = vector_use_layout(c, loop->regions[0], loop->regions[0]->args[1 + i])) && !blk_layout_split(use))
		return use;
	if (is_splat(init) && y && y->kind == BLK_OP_YIELD && i < y->noperands) {
		BlkOp *dot = blk_lower_dot_behind(y->operands[i], NULL);
		if (dot && init->type.rank == 2)
			return dot_layout(c, &init->type, dot);
		const BlkLayout *rows = row_layout_behind(c, y->operands[i], 0);
		if (rows && init->type.rank == 1)
			return rows;
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
	for (int i = r->nargs - 1; i >= 0; i--)
		alloc_scratch(c, r, r->args[i], op->loc);
	r->nargs = 0;
	tile_region(c, r);
}

/* A reduction's result stays where it was reduced (its operand's layout
 * sliced); expand_dims keeps its operand's layout too.  Only reductions
 * whose axis spans warps, and conversions that do move elements, need the
 * transit region. */
static bool tile_moves(LowerCtx *c, BlkOp *op)
{
	if (blk_op_is_scan(op->kind)) { /* in place, in a layout of runs (emit_scan.c) */
		BlkValue *v = op->operands[0];
		if (!blk_layout_runs(layout_of(c, v)))
			v = op->operands[0] = relayout(c, op, v, default_layout(c, &v->type));
		set_layout(c, op->results[0], layout_of(c, v));
		return true;
	}
	if (!(op->kind == BLK_OP_BROADCAST || op->kind == BLK_OP_TRANSPOSE ||
	      op->kind == BLK_OP_EXPAND_DIMS || blk_op_is_reduce(op->kind)))
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
		const BlkLayout *m = op->kind == BLK_OP_BROADCAST ? operand_layout(c, op, 0, l) : NULL;
		if (m && !blk_layout_bcast_local(src, l) && can_remat(c, v, m, 0)) {
			/* an operand with no data of its own (an index vector, a
			 * mask) is computed again where the broadcast needs it */
			BlkBuilder b;
			blk_builder_before(&b, c->a, op);
			op->operands[0] = remat(c, &b, v, m);
		}
	} else {
		*made = blk_layout_slice(src, axis);
		l = made;
	}
	set_layout(c, op->results[0], l);
	return true;
}

/* extract and reshape may move any element to any thread: the tile goes
 * to a shared buffer of its shape (store), and the op becomes a load from
 * it (reshape: through a reshape_view of the buffer; extract: its indices,
 * masked, so an index outside the tile reads 0).  Step 6 brackets both
 * accesses with barriers. */
static void through_shared(LowerCtx *c, BlkOp *op)
{
	BlkValue *t = op->operands[0];
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkType bt = blk_type_ref(t->type.dtype, t->type.rank, t->type.dims, BLK_SPACE_SHARED);
	BlkValue *buf = blk_build(&b, BLK_OP_LOCAL_ALLOC, op->loc, 0, NULL, 1, &bt, 0)->results[0];
	BlkValue *src = buf, *sv[2] = { buf, t };
	const BlkType *r = &op->results[0]->type;
	if (op->kind == BLK_OP_RESHAPE) { /* the view first: the store, then the load */
		BlkType rt = blk_type_ref(r->dtype, r->rank, r->dims, BLK_SPACE_SHARED);
		src = blk_build1(&b, BLK_OP_RESHAPE_VIEW, op->loc, rt, 1, &buf);
	}
	blk_build(&b, BLK_OP_STORE, op->loc, 2, sv, 0, NULL, 0);
	if (op->kind == BLK_OP_EXTRACT) {
		const BlkAttr *idx = blk_op_attr(op, "idx");
		char mask[BLK_MAX_RANK + 1] = { 0 };
		for (int d = 0; d < t->type.rank; d++)
			mask[d] = idx && d < idx->index.n && idx->index.v[d].kind != BLK_INDEX_FULL ? '1' : '0';
		blk_op_set_string(c->a, op, "mask", mask);
	}
	op->kind = BLK_OP_LOAD;
	op->operands[0] = src;
	set_layout(c, op->results[0], default_layout(c, r));
}

/* A gathering access walks its tile's layout (a load's result: the
 * default one; a store's or atomic's value: the one it has; an
 * async_copy's: its copy layout), and element r's indices are register r
 * of its index tiles: they take that layout. */
static void tile_gather(LowerCtx *c, BlkOp *op)
{
	const BlkLayout *l;
	if (op->kind == BLK_OP_ASYNC_COPY) { /* the pipeliner's gathered slab: the copy's walk */
		BlkLayout *cl = BLK_NEW(c->a, BlkLayout);
		*cl = blk_lower_copy_layout(c, op, false);
		l = cl;
	} else if (op->kind == BLK_OP_LOAD) {
		l = default_layout(c, &op->results[0]->type);
		set_layout(c, op->results[0], l);
	} else {
		l = layout_of(c, op->operands[op->noperands - 1]);
	}
	for (int i = 1; i < op->noperands; i++)
		if (op->operands[i]->type.kind == BLK_TYPE_TILE && op->operands[i]->type.rank > 0)
			op->operands[i] = relayout(c, op, op->operands[i], l);
}

/* A scan with a combine region runs each line of its axis in one thread,
 * in order (emit_scan.c): in registers, where the lines of every operand
 * take at most SCAN_REGS a thread, its operands in a layout that holds
 * each line whole (blk_layout_along); else through the transit region,
 * its operands in operand 0's default layout. */
enum { SCAN_REGS = 128 };

static void tile_scan_region(LowerCtx *c, BlkOp *op)
{
	int shape[BLK_MAX_RANK];
	const BlkType *t = &op->operands[0]->type;
	static_shape(t, shape);
	BlkLayout *along = BLK_NEW(c->a, BlkLayout);
	*along = blk_layout_along(t->rank, shape, (int)blk_op_int(op, "axis", 0), c->nthreads);
	const BlkLayout *l = blk_layout_nregs(along) * op->noperands > SCAN_REGS ? default_layout(c, t) : along;
	for (int i = 0; i < op->noperands; i++) {
		op->operands[i] = relayout(c, op, op->operands[i], l);
		set_layout(c, op->results[i], l);
	}
}

/* join: its operands in one plain layout (the first's where it is one),
 * the parts side by side in each thread's registers. */
static void tile_join(LowerCtx *c, BlkOp *op)
{
	const BlkLayout *l = layout_of(c, op->operands[0]);
	if (!blk_layout_plain(l))
		l = default_layout(c, &op->operands[0]->type);
	for (int i = 0; i < op->noperands; i++)
		op->operands[i] = relayout(c, op, op->operands[i], l);
	BlkLayout *r = BLK_NEW(c->a, BlkLayout);
	*r = blk_layout_join(l, op->noperands);
	set_layout(c, op->results[0], r);
}

/* A reshape that merges the last two dims of a tile whose last dim each
 * thread holds whole (a join's result: interleave, Triton's
 * join-then-reshape) renumbers registers only (blk_layout_merge_last):
 * no trip through shared memory. */
static bool reshape_in_registers(LowerCtx *c, BlkOp *op)
{
	const BlkType *x = &op->operands[0]->type, *r = &op->results[0]->type;
	int n = r->rank;
	BlkLayout m;
	if (x->rank != n + 1 || n < 1 ||
	    blk_lower_dim(r->dims[n - 1]) != blk_lower_dim(x->dims[n - 1]) * blk_lower_dim(x->dims[n]) ||
	    !blk_layout_merge_last(layout_of(c, op->operands[0]), &m))
		return false;
	for (int d = 0; d < n - 1; d++)
		if (blk_lower_dim(r->dims[d]) != blk_lower_dim(x->dims[d]))
			return false;
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = m;
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
	if (op->kind == BLK_OP_SCAN) {
		tile_scan_region(c, op);
		return;
	}
	if ((fl & BLK_OPF_ELEMENTWISE) && op->nresults == 1) {
		tile_elementwise(c, op);
		return;
	}
	if (op->kind == BLK_OP_JOIN) {
		tile_join(c, op);
		return;
	}
	if (op->kind == BLK_OP_RESHAPE && reshape_in_registers(c, op))
		return;
	if (op->kind == BLK_OP_EXTRACT || op->kind == BLK_OP_RESHAPE) {
		through_shared(c, op);
		return;
	}
	if (blk_op_gathers(op)) {
		tile_gather(c, op);
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

/* How many op operands read each value (erase_dead). */
static void count_uses(LowerCtx *c, const BlkRegion *r, BlkPtrMap *n)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->noperands; i++)
			blk_pmap_put(c->a, n, op->operands[i], (void *)((uintptr_t)blk_pmap_get(n, op->operands[i]) + 1));
		for (int i = 0; i < op->nregions; i++)
			count_uses(c, op->regions[i], n);
	}
}

/* Erases pure ops, and loads of arrays nothing writes, that nothing uses
 * (what rematerialization left behind), in one backward sweep: an erased
 * op's operands lose their use before the ops defining them are seen. */
static void erase_dead(LowerCtx *c, BlkRegion *r, BlkPtrMap *n)
{
	for (BlkOp *op = r->last, *prev; op; op = prev) {
		prev = op->prev;
		for (int i = 0; i < op->nregions; i++)
			erase_dead(c, op->regions[i], n);
		bool used = false;
		for (int i = 0; i < op->nresults && !used; i++)
			used = blk_pmap_get(n, op->results[i]) != NULL;
		bool pure = (blk_op_flags(op->kind) & BLK_OPF_PURE) ||
		            (op->kind == BLK_OP_LOAD && blk_loop_read_only(c, op->operands[0]));
		if (used || !pure || op->nregions || !op->nresults)
			continue;
		for (int i = 0; i < op->noperands; i++)
			blk_pmap_put(c->a, n, op->operands[i], (void *)((uintptr_t)blk_pmap_get(n, op->operands[i]) - 1));
		blk_op_erase(op);
	}
}

/* The transit region's size: the largest tile an op that moves elements
 * between threads passes through it (emit_transit.c, emit_reduce.c). */
static void transit_scan(LowerCtx *c, BlkRegion *r, size_t *bytes)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			transit_scan(c, op->regions[i], bytes);
		if (!op->noperands || op->operands[0]->type.kind != BLK_TYPE_TILE || op->operands[0]->type.rank == 0)
			continue;
		const BlkValue *v = op->operands[0];
		const BlkLayout *src = layout_of(c, v);
		int axis = (int)blk_op_int(op, "axis", 0);
		bool moves = op->kind == BLK_OP_CONVERT_LAYOUT || op->kind == BLK_OP_TRANSPOSE ||
		             (op->kind == BLK_OP_BROADCAST && !blk_layout_bcast_local(src, layout_of(c, op->results[0])));
		if (op->kind == BLK_OP_SCAN && !blk_layout_holds_lines(src, axis)) {
			/* every operand's elements, to be scanned a line a thread */
			need_transit_n(bytes, (size_t)op->noperands * result_elems(v));
			continue;
		}
		if (blk_op_is_scan(op->kind)) {
			/* one total per warp of the axis for each rep of each row */
			int nw = blk_layout_axis_warps(src, axis);
			if (nw > 1)
				need_transit_n(bytes, (size_t)nw * result_elems(v) /
				               (size_t)(src->thr[axis] * src->spt[axis]));
			continue;
		}
		if (blk_op_is_reduce(op->kind)) {
			/* one partial per warp of the axis for each result element
			 * (argmax/argmin: a value and an index) */
			int nw = blk_layout_axis_warps(src, axis);
			bool arg = op->kind == BLK_OP_REDUCE_ARGMAX || op->kind == BLK_OP_REDUCE_ARGMIN;
			if (nw > 1)
				need_transit_n(bytes, (size_t)nw * result_elems(op->results[0]) * (arg ? 2 : 1));
			continue;
		}
		if (moves)
			need_transit(bytes, v);
	}
}

static bool is_access(const BlkOp *op)
{
	return op->kind == BLK_OP_LOAD || op->kind == BLK_OP_STORE || op->kind == BLK_OP_SWAP ||
	       blk_op_is_atomic(op->kind);
}

/* acc[p]: how param p is accessed -- a bit per kind of access op, and
 * whether more than one op writes it or reads it. */
typedef struct Access {
	unsigned kinds;
	int ops;
} Access;

static void note_access(LowerCtx *c, BlkRegion *r, Access *acc)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			note_access(c, op->regions[i], acc);
		/* (through peer Refs too: a rank's own buffer is one of its peers) */
		int p = is_access(op) ? blk_ref_param(c->k, op->operands[0]) : -1;
		if (p >= 0 && p < c->k->nparams) {
			acc[p].kinds |= 1u << (op->kind - BLK_OP_LOAD);
			acc[p].ops++;
		}
	}
}

/* Another thread may touch the same elements of p between two of its
 * accesses: two kinds of access, or two accesses one of which writes (a
 * store in one layout, then another store in another). */
static bool shared_param(const Access *a)
{
	bool writes = (a->kinds & ~1u) != 0; /* bit 0 is load (note_access) */
	return (a->kinds & (a->kinds - 1)) != 0 || (a->ops > 1 && writes);
}

/* Step 6: accesses whose elements other threads of the program touch too
 * -- a shared Ref (scratch, scoped, a tile the pipeliner stores once), or
 * an array the program accesses twice where one access writes (an inout
 * read and written, a store then atomic adds, two stores: the language
 * promises a program sees its own writes in order) -- get a barrier before
 * and after (one between two in a row). */
static void bracket(LowerCtx *c, BlkRegion *r, const Access *acc)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			bracket(c, op->regions[i], acc);
		/* (a read of the pipeliner's slot, attr staged: its async_wait and
		 * barrier come before it, and no one writes the slot before the next
		 * iteration's) */
		if (!is_access(op) || blk_op_int(op, "staged", 0))
			continue;
		int p = blk_ref_param(c->k, op->operands[0]);
		bool multi = p >= 0 && p < c->k->nparams && shared_param(&acc[p]);
		if (op->operands[0]->type.space != BLK_SPACE_SHARED && !multi)
			continue;
		BlkBuilder b;
		blk_builder_before(&b, c->a, op);
		if (!op->prev || op->prev->kind != BLK_OP_BARRIER)
			blk_build(&b, BLK_OP_BARRIER, op->loc, 0, NULL, 0, NULL, 0);
		if (op->next)
			blk_builder_before(&b, c->a, op->next);
		else
			blk_builder_at_end(&b, c->a, r);
		op = blk_build(&b, BLK_OP_BARRIER, op->loc, 0, NULL, 0, NULL, 0);
	}
}

bool blk_lower_tile(LowerCtx *c)
{
	BlkKernel *k = c->k;
	int errors = blk_diag_error_count(c->d);
	size_t transit = 0;
	for (int pi = k->nparams - 1; pi >= 0; pi--)
		if (k->params[pi].access == BLK_ACCESS_SCRATCH && blk_lower_uses(k->body, k->body->args[pi]))
			alloc_scratch(c, k->body, k->body->args[pi], k->params[pi].loc);
	tile_region(c, k->body);
	if (blk_diag_error_count(c->d) > errors)
		return false;
	BlkPtrMap uses = { 0 };
	count_uses(c, k->body, &uses);
	erase_dead(c, k->body, &uses);
	transit_scan(c, k->body, &transit);
	Access *acc = BLK_NEW_N(c->a, Access, (size_t)k->nparams + 1);
	note_access(c, k->body, acc);
	bracket(c, k->body, acc);
	if (transit) {
		BlkBuilder b;
		blk_builder_before(&b, c->a, k->body->first);
		BlkValue *t = local_alloc(c, &b, k->loc, BLK_F32, (int64_t)transit / 4, 0);
		blk_op_set_string(c->a, t->def, "role", "transit");
		t->name = "transit";
	}
	return true;
}
