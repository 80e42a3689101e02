/* dot_stage.c - a dot's operands that are tiles go to shared memory, as
 * IR ops: a store into a slot of a buffer, then a barrier.
 *
 * Requires: the GPU level (tile.c).  Applies to every dot whose b is a
 * tile (computed, or loaded into registers; the pipeliner's shared
 * operands are done).  Produces, for d = dot a, b, acc:
 *
 *   stage_a = local_alloc [S, .., ..]    -- before the outermost loop
 *   stage_b = local_alloc [S, .., ..]    -- around the dot
 *   store stage_a[p] (as the dot reads it), a
 *   store stage_b[p], b
 *   barrier
 *   d = dot A, B, acc                    -- A, B: views of the slots
 *
 * tensor cores: A [M, K] in rows of K + 16 bytes and B [K, N] in rows of
 *   N + 16 bytes of the operands' type (the pad puts the 8 rows an
 *   ldmatrix phase reads on distinct bank groups); mma_steps.c then loads
 *   fragments; wgmma: the same shapes swizzled (ir/layout.h), a
 *   fence_async before the barrier (wgmma reads through the async proxy);
 *   8-bit B as [N, K] stored through a trans_view (both read 8-bit types
 *   k-contiguous: ldmatrix and wgmma transpose only 16-bit ones);
 * SIMT (exact f32): both as f32 (a cast first), A k-major -- [K][pad(M)+4],
 *   stored through a trans_view, so a thread's rows of A at one k are
 *   consecutive floats (the +4 staggers the transposing stores over the
 *   banks) -- and B [K][pad(N)] row-major; a b given as [N, K] (attr
 *   b_trans, `x @ w.T`) is stored through a trans_view of [K][pad(N)+4],
 *   so w.T costs no conversion.
 *
 * S = 2 slots, used alternately: p is an i32 carry of every loop around
 * the dot (0 before the outermost, 1 - p yielded after the dot), so the
 * next execution writes the other slot and this execution's barrier
 * orders that after every warp's reads of it -- one barrier an execution.
 * A dot outside any loop has one slot.  Where an `if` lies between the dot
 * and its loops the carry cannot flow out: one slot, and a barrier before
 * the stores too.
 */
#include "lower/lower_int.h"

enum { MAX_CHAIN = 16 }; /* loops between a staged dot and its buffers */

/* local_alloc dt[slots, R, C] with rows of ld elements, before `site`. */
static BlkValue *stage_buffer(LowerCtx *c, BlkOp *site, BlkLoc loc, BlkDType dt, int slots, int64_t R,
                              int64_t C, int64_t ld, const char *name)
{
	int shape[3] = { slots, (int)R, (int)C };
	const BlkSym *dims[3] = { blk_sym_const(c->a, slots), blk_sym_const(c->a, R), blk_sym_const(c->a, C) };
	BlkType t = blk_type_ref(dt, 3, dims, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	if (ld == 0) /* wgmma's swizzled rows */
		*l = blk_layout_shared_swizzled(3, shape, blk_dtype_size(dt));
	else
		*l = blk_layout_shared(3, shape, (int)(ld - C));
	t.layout = l;
	BlkBuilder b;
	blk_builder_before(&b, c->a, site);
	BlkValue *v = blk_build(&b, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &t, 0)->results[0];
	v->name = name;
	return v;
}

/* store ref, x (whole); x cast to the Ref's dtype first where it differs. */
static void store_all(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *ref, BlkValue *x)
{
	if (x->type.dtype != ref->type.dtype) {
		BlkType t = x->type;
		t.dtype = ref->type.dtype;
		x = blk_build1(b, BLK_OP_CAST, loc, t, 1, &x);
	}
	BlkValue *ops[2] = { ref, x };
	BlkOp *s = blk_build(b, BLK_OP_STORE, loc, 2, ops, 0, NULL, 0);
	BlkIndex idx[2] = { { BLK_INDEX_FULL, NULL, 0 }, { BLK_INDEX_FULL, NULL, 0 } };
	blk_op_set_index(c->a, s, "idx", 2, idx);
}

/* The `for`s from the dot up to `site`, innermost first; false where an
 * `if` or a scoped region lies between (nothing flows out of those). */
static bool loop_chain(BlkOp *dot, BlkOp *site, BlkOp **chain, int *m)
{
	*m = 0;
	for (BlkOp *op = dot; op != site;) {
		op = op->parent->parent;
		if (op->kind != BLK_OP_FOR || *m == MAX_CHAIN)
			return false;
		chain[(*m)++] = op;
	}
	return true;
}

/* The slot of this execution: a carry of each loop of the chain, 0 before
 * the outermost, 1 - slot yielded after the dot. */
static BlkValue *slot_carry(LowerCtx *c, BlkOp *dot, BlkOp **chain, int m)
{
	BlkBuilder b;
	blk_builder_before(&b, c->a, chain[m - 1]);
	BlkValue *p = blk_lower_i32(&b, dot->loc, 0);
	for (int k = m - 1; k >= 0; k--) { /* outermost first */
		BlkLoop L = { .c = c, .loop = chain[k], .body = chain[k]->regions[0] };
		p = blk_loop_add_carry(&L, p, p); /* the yielded value is set below */
		p->name = "slot";
	}
	blk_builder_before(&b, c->a, dot->next);
	BlkValue *ops[2] = { blk_lower_i32(&b, dot->loc, 1), p };
	BlkValue *next = blk_build1(&b, BLK_OP_SUB, dot->loc, p->type, 2, ops);
	for (int k = 0; k < m; k++) { /* innermost first: yield the next slot */
		BlkOp *y = chain[k]->regions[0]->last;
		y->operands[y->noperands - 1] = next;
		next = chain[k]->results[chain[k]->nresults - 1];
	}
	return p;
}

static void stage(LowerCtx *c, BlkOp *dot)
{
	BlkValue *a = dot->operands[0], *b = dot->operands[1];
	bool mma = blk_lower_dot_tc(dot), wg = blk_lower_dot_wgmma(dot);
	bool bt = !mma && blk_op_int(dot, "b_trans", 0);
	bool bk = mma && blk_dtype_size(b->type.dtype) == 1; /* 8-bit: B k-contiguous, [N, K] */
	bool bn = mma && !bk && blk_op_int(dot, "b_trans", 0); /* 16-bit B given as [N, K] (pipeline.c computed_nt) */
	int64_t M = blk_lower_dim(a->type.dims[0]), K = blk_lower_dim(a->type.dims[1]);
	int64_t N = blk_lower_dim(dot->results[0]->type.dims[1]);
	int64_t PM = blk_pow2ceil((int)M), PN = blk_pow2ceil((int)N);
	BlkOp *site = blk_lower_stage_site(c, dot), *chain[MAX_CHAIN];
	int m;
	bool carried = loop_chain(dot, site, chain, &m) && m > 0;
	int S = carried ? 2 : 1;
	/* A's and B's rows: [R][ld] */
	BlkDType dt = mma ? a->type.dtype : blk_dtype_is_byte(a->type.dtype) ? BLK_I32 : BLK_F32;
	int64_t pad = 16 / blk_dtype_size(a->type.dtype); /* 16 bytes */
	int64_t ar = mma ? M : K, ac = mma ? K : M, ald = mma ? K + pad : PM + 4;
	int64_t bld = mma ? (bk || bn ? K : N) + pad : bt ? PN + 4 : PN;
	if (wg)
		ald = bld = 0;
	bool a_tile = a->type.kind == BLK_TYPE_TILE; /* else the pipeliner's slot already */
	BlkValue *ba = a_tile ? stage_buffer(c, site, dot->loc, dt, S, ar, ac, ald, "stage_a") : NULL;
	BlkDType bdt = mma ? b->type.dtype : dt; /* e4m3 x e5m2: each its own */
	BlkValue *bb = bk || bn ? stage_buffer(c, site, dot->loc, bdt, S, N, K, bld, "stage_b")
	                        : stage_buffer(c, site, dot->loc, bdt, S, K, N, bld, "stage_b");
	BlkValue *p = carried ? slot_carry(c, dot, chain, m) : NULL;
	BlkBuilder bl;
	blk_builder_before(&bl, c->a, dot);
	if (!p) {
		p = blk_lower_i32(&bl, dot->loc, 0);
		if (site != dot)
			blk_build(&bl, BLK_OP_BARRIER, dot->loc, 0, NULL, 0, NULL, 0);
	}
	BlkValue *sa = a;
	if (a_tile) {
		sa = blk_lower_slot_view(c, &bl, dot->loc, ba, p);
		if (!mma) /* k-major: the dot reads A [M, K] through a trans_view */
			sa = blk_lower_trans_view(c, &bl, dot->loc, sa);
		store_all(c, &bl, dot->loc, sa, a);
	}
	BlkValue *sb = blk_lower_slot_view(c, &bl, dot->loc, bb, p);
	BlkValue *tb = bt || bk ? blk_lower_trans_view(c, &bl, dot->loc, sb) : sb;
	store_all(c, &bl, dot->loc, tb, b);
	if (bn) /* stored as it is, [N, K]; the dot reads it [K, N] */
		tb = blk_lower_trans_view(c, &bl, dot->loc, sb);
	if (wg) /* the stores, to wgmma's proxy */
		blk_build(&bl, BLK_OP_FENCE_ASYNC, dot->loc, 0, NULL, 0, NULL, 0);
	blk_build(&bl, BLK_OP_BARRIER, dot->loc, 0, NULL, 0, NULL, 0);
	dot->operands[0] = sa;
	dot->operands[1] = bk || bn ? tb : sb; /* the SIMT dot reads b_trans's [N, K] itself */
	dot->noperands = 3;
	blk_op_remove_attr(dot, "b_trans");
}

static void visit(void *ctx, BlkOp *op)
{
	if (op->kind == BLK_OP_DOT && op->results[0]->type.layout && op->operands[1]->type.kind == BLK_TYPE_TILE)
		stage(ctx, op);
}

bool blk_lower_dot_stage(LowerCtx *c)
{
	blk_lower_walk(c->k->body, visit, c);
	return true;
}
