/* tma_store.c - a tensor-core accumulator's store to its output block by
 * TMA, from shared memory.
 *
 * Requires: mma-steps (wgmma accumulators in their layout; the epilogue's
 * ops -- bias, activation, the cast -- in it too).  Applies, on sm_90a, to
 * a `store` (or an f32 `atomic_add`: split-K's partial sums, by TMA's
 * element-wise atomic add, attr reduce = "add") of a whole block of an
 * output array TMA can address (blk_lower_tma_array: 2-D, or 3-D with a
 * batch dim squeezed in the block) from a tile in the wgmma<> layout,
 * where that store (or add) is the array's only access.  Produces, per
 * column chunk of one swizzle span (128 bytes: 64 bf16 columns, 32 f32):
 *
 *     tma_store_wait {pending = p}   the slot's last tma_store has read it
 *     barrier
 *     store %slot, extract_slice(%v, chunk)   conflict-free: the swizzle
 *     fence_async                             the writes, to the async proxy
 *     barrier
 *     tma_store %slot, %ref, %col            one thread; a bulk group
 *
 * into two slots (one where shared memory has room for only one, or where
 * there is one chunk) of a local_alloc placed before the outermost loop
 * around the store; chunk j takes slot j % 2 in every execution.  Chunk 0
 * first waits for every earlier group's writes too ({writes = 1}): TMA
 * does not order two bulk groups' writes, and a loop may write one block
 * twice (a persistent tile loop never does; by then the previous tile's
 * writes have long landed).  After that loop, tma_store_wait {pending =
 * 0}: no CTA leaves while TMA still reads its shared memory.
 *
 * Why: the wgmma layout gives a thread two adjacent columns of a row, so
 * a direct store writes 4 bytes an instruction (bf16), 16 bytes of each of
 * 8 rows a warp.  TMA writes whole rows of the chunk from shared memory
 * while the warps go on (to the next tile's dots, in the persistent loop),
 * and clips the box at the array's edges, so the store needs no masks.
 */
#include "lower/lower_int.h"

#include <string.h>

/* The op of the store's thread region (the kernel's body or a
 * warp_specialize's consumer region) that holds it, or NULL (the
 * producer's region). */
static BlkOp *anchor_of(BlkOp *st)
{
	BlkOp *a = st;
	for (;;) {
		BlkRegion *r = a->parent;
		BlkOp *owner = r->parent;
		if (!owner || (owner->kind == BLK_OP_WARP_SPECIALIZE && r == owner->regions[0]))
			return a;
		if (owner->kind == BLK_OP_WARP_SPECIALIZE)
			return NULL;
		a = owner;
	}
}

typedef struct Scan {
	int param;
	const BlkOp *store;
	bool other;          /* another op reads or writes the array */
	int64_t bytes;       /* every local_alloc's but the transit region's, each aligned to 1024 */
	int64_t transit;     /* the transit region's (tile.c) */
} Scan;

/* The launch has the tensor map of param pi in boxes of cols x rows, or
 * room for one more. */
static bool map_room(LowerCtx *c, int pi, int cols, int rows, int swz)
{
	const BlkLaunch *l = blk_lower_launch(c);
	int box[2] = { cols, rows };
	return blk_launch_find_tmap(l, pi, box, swz, false) >= 0 || blk_launch_count(l, BLK_ARG_TMAP) < BLK_MAX_TMAPS;
}

static void scan(void *ctx, BlkOp *op)
{
	Scan *s = ctx;
	const BlkAttr *role = op->kind == BLK_OP_LOCAL_ALLOC ? blk_op_attr(op, "role") : NULL;
	if (role && role->kind == BLK_ATTR_STRING && strcmp(role->s, "transit") == 0)
		s->transit = blk_lower_buffer_bytes(&op->results[0]->type);
	if (op->kind == BLK_OP_LOCAL_ALLOC && !role)
		s->bytes += (blk_lower_buffer_bytes(&op->results[0]->type) + 1023) / 1024 * 1024 *
		            blk_lower_programs_at(op);
	if (op == s->store || op->kind == BLK_OP_VIEW || op->kind == BLK_OP_BLOCK_REF)
		return;
	for (int i = 0; i < op->noperands; i++) {
		const BlkType *t = &op->operands[i]->type;
		if (t->kind == BLK_TYPE_REF && t->space == BLK_SPACE_GLOBAL &&
		    blk_lower_ref_param(op->operands[i]) == s->param)
			s->other = true;
	}
}

/* The store's value: a whole-block tile in the wgmma layout, of a dtype
 * TMA moves as bytes, cut into chunks of its swizzle span. */
static bool value_ok(const BlkOp *st, int *cw)
{
	const BlkValue *v = st->operands[st->noperands - 1];
	const BlkType *t = &v->type, *rt = &st->operands[0]->type;
	if (st->noperands != 2 || t->kind != BLK_TYPE_TILE || t->rank != 2 || !t->layout || !t->layout->wg ||
	    t->dtype == BLK_BOOL || rt->rank != 2 || (st->kind == BLK_OP_ATOMIC_ADD && t->dtype != BLK_F32))
		return false;
	const BlkAttr *idx = blk_op_attr(st, "idx");
	for (int d = 0; d < 2; d++)
		if ((idx && idx->index.v[d].kind != BLK_INDEX_FULL) || !blk_sym_equal(t->dims[d], rt->dims[d]))
			return false;
	int shape[2] = { (int)blk_lower_dim(t->dims[0]), (int)blk_lower_dim(t->dims[1]) };
	BlkLayout l = blk_layout_shared_swizzled(2, shape, blk_dtype_size(t->dtype));
	*cw = l.swz / blk_dtype_size(t->dtype);
	return l.swz && shape[0] <= 256 && *cw % 16 == 0;
}

/* Groups chunk j > 0's tma_store_wait may leave in flight: those issued
 * since its slot's last chunk (j - slots), or this execution's j (chunk
 * 0 waited for every earlier group). */
static int pending_for(int j, int slots)
{
	return j >= slots ? slots - 1 : j;
}

static BlkValue *chunk_of(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *v, int j, int cw)
{
	if (blk_lower_dim(v->type.dims[1]) == cw)
		return v;
	const BlkSym *dims[2] = { v->type.dims[0], blk_sym_const(c->a, cw) };
	BlkType t = blk_type_tile(v->type.dtype, 2, dims);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	int shape[2] = { (int)blk_lower_dim(v->type.dims[0]), cw };
	*l = blk_layout_wgmma(shape, v->type.layout->nthreads);
	t.layout = l;
	BlkValue *s = blk_build1(b, BLK_OP_EXTRACT_SLICE, loc, t, 1, &v);
	blk_op_set_int(c->a, s->def, "axis", 1);
	blk_op_set_int(c->a, s->def, "start", (int64_t)j * cw);
	return s;
}

static void rewrite(LowerCtx *c, BlkOp *st, BlkOp *anchor, int cw, int slots)
{
	BlkLoc loc = st->loc;
	BlkValue *ref = st->operands[0], *v = st->operands[1];
	BlkDType dt = v->type.dtype;
	int rows = (int)blk_lower_dim(v->type.dims[0]), n = (int)(blk_lower_dim(v->type.dims[1]) / cw);
	BlkBuilder b;
	blk_builder_before(&b, c->a, anchor);
	int shape[3] = { slots, rows, cw };
	int64_t shape64[3] = { slots, rows, cw };
	const BlkSym *dims[3];
	for (int d = 0; d < 3; d++)
		dims[d] = blk_sym_const(c->a, shape64[d]);
	BlkType bt = blk_type_ref(dt, 3, dims, BLK_SPACE_SHARED);
	BlkLayout *bl = BLK_NEW(c->a, BlkLayout);
	*bl = blk_layout_shared_swizzled(3, shape, blk_dtype_size(dt));
	bt.layout = bl;
	BlkValue *buf = blk_build(&b, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &bt, 0)->results[0];
	buf->name = "epilogue";

	blk_builder_before(&b, c->a, st);
	BlkIndex full = { BLK_INDEX_FULL, NULL, 0 };
	BlkIndex whole[2] = { full, full }, cols[2] = { full, { BLK_INDEX_DS, blk_sym_const(c->a, cw), 0 } };
	for (int j = 0; j < n; j++) {
		BlkOp *w = blk_build(&b, BLK_OP_TMA_STORE_WAIT, loc, 0, NULL, 0, NULL, 0);
		blk_op_set_int(c->a, w, "pending", j ? pending_for(j, slots) : 0);
		if (j == 0) /* the last execution's writes landed: none races these */
			blk_op_set_int(c->a, w, "writes", 1);
		blk_build(&b, BLK_OP_BARRIER, loc, 0, NULL, 0, NULL, 0);
		BlkValue *slot = blk_lower_slot_view(c, &b, loc, buf, blk_lower_i32(&b, loc, j % slots));
		BlkValue *sv[2] = { slot, chunk_of(c, &b, loc, v, j, cw) };
		blk_op_set_index(c->a, blk_build(&b, BLK_OP_STORE, loc, 2, sv, 0, NULL, 0), "idx", 2, whole);
		blk_build(&b, BLK_OP_FENCE_ASYNC, loc, 0, NULL, 0, NULL, 0);
		blk_build(&b, BLK_OP_BARRIER, loc, 0, NULL, 0, NULL, 0);
		BlkValue *tv[3] = { slot, ref, blk_lower_i32(&b, loc, (int64_t)j * cw) };
		BlkOp *t = blk_build(&b, BLK_OP_TMA_STORE, loc, 3, tv, 0, NULL, 0);
		blk_op_set_index(c->a, t, "idx", 2, cols);
		if (st->kind == BLK_OP_ATOMIC_ADD) /* TMA adds each element atomically */
			blk_op_set_string(c->a, t, "reduce", "add");
		const BlkAttr *mask = blk_op_attr(st, "mask");
		if (mask)
			blk_op_set_string(c->a, t, "mask", mask->s);
		blk_lower_note_tmap(c, t); /* (map_room made sure it fits) */
	}
	BlkOp *after = anchor == st ? st : anchor->next;
	if (after)
		blk_builder_before(&b, c->a, after);
	else
		blk_builder_at_end(&b, c->a, anchor->parent);
	BlkOp *w = blk_build(&b, BLK_OP_TMA_STORE_WAIT, loc, 0, NULL, 0, NULL, 0);
	blk_op_set_int(c->a, w, "pending", 0);
	blk_op_erase(st);
}

typedef struct Found {
	BlkOp *stores[16];
	int n;
} Found;

static void find(void *ctx, BlkOp *op)
{
	Found *f = ctx;
	if ((op->kind == BLK_OP_STORE || op->kind == BLK_OP_ATOMIC_ADD) && f->n < 16)
		f->stores[f->n++] = op;
}

/* Whether r, from op on (and the regions in those ops), signals. */
static bool signals_from(const BlkOp *op)
{
	for (; op; op = op->next) {
		if (op->kind == BLK_OP_SIGNAL_ADD || op->kind == BLK_OP_SIGNAL_SET)
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (signals_from(op->regions[i]->first))
				return true;
	}
	return false;
}

/* Whether a signal may follow st (after it in its region or in any region
 * around it, a loop's later iterations included): a signal releases the
 * program's earlier stores, and a TMA store completes later than its issue,
 * so such a store stays plain. */
static bool signal_follows(const BlkOp *st)
{
	for (const BlkOp *op = st; op; op = op->parent ? op->parent->parent : NULL) {
		if (signals_from(op->next))
			return true;
		if (op->kind == BLK_OP_FOR && signals_from(op->regions[0]->first))
			return true;
	}
	return false;
}

bool blk_lower_tma_store(LowerCtx *c)
{
	if (strcmp(c->arch, "sm_90a") != 0)
		return true;
	Found f = { .n = 0 };
	blk_lower_walk(c->k->body, find, &f);
	for (int i = 0; i < f.n; i++) {
		BlkOp *st = f.stores[i];
		const BlkValue *ref = st->operands[0];
		int cw, pi = blk_lower_ref_param(ref);
		if (ref->type.kind != BLK_TYPE_REF || ref->type.space != BLK_SPACE_GLOBAL || !ref->def ||
		    ref->def->kind != BLK_OP_BLOCK_REF || !value_ok(st, &cw) || !blk_lower_tma_array(c, pi, 3, false) ||
		    signal_follows(st))
			continue;
		BlkOp *anchor = anchor_of(st);
		Scan s = { .param = pi, .store = st };
		blk_lower_walk(c->k->body, scan, &s);
		int swz = cw * blk_dtype_size(ref->type.dtype); /* a chunk's row */
		int64_t rows = blk_lower_dim(st->operands[1]->type.dims[0]), chunk = rows * swz;
		if (!anchor || s.other || !map_room(c, pi, cw, (int)rows, swz))
			continue;
		/* room beside every other buffer (an upper bound: smem-plan may
		 * overlap some), each program its own slots */
		int progs = blk_lower_programs_at(st);
		int64_t room = blk_lower_arch_smem(c->arch) - s.bytes - s.transit * progs - 1024;
		int slots = room >= 2 * chunk * progs ? 2 : room >= chunk * progs ? 1 : 0;
		int n = (int)(blk_lower_dim(st->operands[1]->type.dims[1]) / cw);
		if (slots)
			rewrite(c, st, anchor, cw, slots < n ? slots : n);
	}
	blk_lower_order_tmaps(c);
	return true;
}
