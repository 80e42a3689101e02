/* warp_spec.c - the pipeliner's warp-specialized form: a producer
 * warpgroup copies the slabs of a loop's wgmma dots, the kernel's warps
 * (the consumers) only wait for them, multiply and hand the slots back.
 *
 * Applies (pipeline.c calls it after choosing the loop's dots) when the
 * kernel targets sm_90a, every dot of the loop is wgmma with both operands
 * slabs loaded in the loop, the loop is at the top of the kernel's body
 * and the kernel's warps are whole warpgroups.  With S = num_stages slots
 * and C consumer warpgroups:
 *
 *   bufA, bufB = local_alloc [S, R, C] swizzled
 *   bars = local_alloc i32[4S]              -- 2S mbarriers: full[s], empty[s]
 *   mbarrier_init bars, s {count = 128}     -- full: the producer's threads
 *   mbarrier_init bars, S+s {count = 128C}  -- empty: the consumers' threads
 *   barrier
 *   warp_specialize {consumers = C} {
 *     acc = for k (.., slot = 0, phase = 0) {          -- consumers
 *       mbarrier_wait bars, slot, phase                 -- slab k has landed
 *       fence_async
 *       d = dot bufA[slot], bufB[slot], acc {wait_pending = 1}
 *       if k != lo { mbarrier_arrive bars, S + slot-1 } -- slab k-1's group is done
 *       (a dot whose registers others read in the loop waits for its group
 *       instead, and the loop hands its own slot back)
 *       yield d, next slot, phase flipped at the wrap
 *     }
 *     ...the rest of the kernel...
 *   } {
 *     for k (slot = 0, phase = 0) {                     -- producer
 *       mbarrier_wait bars, S+slot, 1 - phase           -- the slot is free
 *       async_copy bufA[slot] <- A(k) {threads = 128}; ... B
 *         (or, for an operand TMA can copy (tma_ok): mbarrier_expect_tx
 *         bars, slot {bytes} then tma_load bufA[slot], bars, slot <- A(k),
 *         both by one thread; the full barrier then counts 129)
 *       async_arrive bars, slot                          -- full once they land
 *       yield next slot, phase flipped at the wrap
 *     }
 *   }
 *
 * The loop may also sit in a top-level loop with no results (persist.c's
 * loop over tiles): the warp_specialize then holds that loop, each side
 * its own copy of it (the producer's with only the ops its copies need),
 * slot and phase carried through both loops, and the consumers hand the
 * last slot of a tile back once its groups are done, so the producer
 * copies the next tile's slabs while they store this one's results.
 * A fresh barrier counts its phase "1" as completed, so the producer's
 * first pass over the slots does not wait.  mma_steps.c puts wgmma_wait
 * {pending = 1} right after the dot's steps, before the arrive: the group
 * of iteration k-1, the last reader of its slot, is then complete.  The
 * consumers' barriers (tile.c's, the epilogue's) become a named barrier
 * of their threads alone (emit_wgmma.c).
 *
 * Loops in a row: the loops that follow the pipelined one in its region
 * and stage the same slabs (same dots, operands of one shape, dtype and
 * copy path, the same tile from before them), needing no result of the
 * loops before them, join it (gather): the producer runs a loop of copies
 * for each, one after the other, slot and phase carried from one to the
 * next, and so do the consumers, each loop handing its last slot back
 * before the next begins.  That is causal attention split at its
 * diagonal (loop_split.c, or written so by hand): one ring of slots,
 * filled without a break at the split.
 *
 * Ping-pong: in that outer loop, a kernel of one warpgroup gets two
 * consumer programs (warp_specialize {consumers = 2, programs = 2}, region
 * 0's argument %prog the program's index).  Program p takes the tiles
 * lo + p*step, lo + (p+2)*step, ...; the producer still copies every
 * tile's slabs in order, so a program steps its slot and phase over the
 * other program's tile (its trip count, the inner loop's bounds computed
 * for that tile) before its own.  The two take turns at the tensor cores:
 *
 *   for t = lo + prog*step to hi step 2*step (slot, phase) {
 *     slot', phase' = slot, phase advanced by trips(t - step) if t != lo
 *     if t != lo { turn_wait %prog }          -- the other's loop is done
 *     ...the inner loop from slot', phase'...
 *     if t + step < hi { turn_pass %prog }    -- the other's next tile
 *     ...the epilogue, while the other program multiplies...
 *   }
 *
 * The turns are what keep the shared barriers' phases right: a program
 * waits on a slot only after the other has waited on all its earlier
 * fills, so no wait is more than one phase ahead of the barrier.  One
 * program's epilogue (bias, activation, stores) then runs while the other
 * multiplies: what a one-tile-at-a-time CTA leaves the tensor cores idle
 * for.
 */
#include "pipeline.h"

#include <stdint.h>
#include <string.h>

enum { MAX_GROUP = 4 }; /* sibling loops fed by one producer */

static BlkValue *i32c(BlkBuilder *b, BlkLoc loc, int64_t v)
{
	return blk_lower_i32(b, loc, v);
}

static BlkOp *mbar(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkValue *bars, BlkValue *i, BlkValue *parity)
{
	BlkValue *ops[3] = { bars, i, parity };
	return blk_build(b, k, loc, parity ? 3 : 2, ops, 0, NULL, 0);
}

/* slot + 1 wrapped at S, and phase flipped where it wraps. */
static void next_slot(Pipe *P, BlkBuilder *b, BlkLoc loc, BlkValue *slot, BlkValue *phase, BlkValue **ns,
                      BlkValue **np)
{
	*ns = blk_pipe_advance(P, b, slot);
	BlkValue *wrap = blk_pipe_binop(b, BLK_OP_EQ, loc, *ns, i32c(b, loc, 0));
	BlkValue *flip = blk_pipe_binop(b, BLK_OP_SUB, loc, i32c(b, loc, 1), phase);
	BlkValue *o[3] = { wrap, flip, phase };
	*np = blk_build1(b, BLK_OP_SELECT, loc, blk_type_scalar(BLK_I32), 3, o);
}

/* empty[slot - 1 mod S]: S + slot - 1, or 2S - 1 for slot 0. */
static BlkValue *prev_empty(Pipe *P, BlkBuilder *b, BlkLoc loc, BlkValue *slot)
{
	BlkValue *wrap = blk_pipe_binop(b, BLK_OP_EQ, loc, slot, i32c(b, loc, 0));
	BlkValue *last = i32c(b, loc, 2 * P->S - 1); /* built in a fixed order, not an initializer's */
	BlkValue *o[3] = { wrap, last, blk_pipe_binop(b, BLK_OP_ADD, loc, slot, i32c(b, loc, P->S - 1)) };
	return blk_build1(b, BLK_OP_SELECT, loc, blk_type_scalar(BLK_I32), 3, o);
}

/* The loop around the pipelined one that the warp_specialize holds: none
 * (NULL, *ok) where that sits at the top of the body, a top-level loop
 * without results; *ok false anywhere else. */
static BlkOp *outer_loop(const Pipe *P, bool *ok)
{
	const BlkRegion *top = P->L.c->k->body;
	BlkOp *o = P->L.loop->parent->parent;
	*ok = P->L.loop->parent == top ||
	      (o && o->kind == BLK_OP_FOR && o->parent == top && o->nresults == 0);
	return P->L.loop->parent == top ? NULL : o;
}

/* The loop qualifies: wgmma dots on loaded slabs (A may be registers, as
 * attention's P, or a tile from before the loop, as its Q), at the top of
 * the body or in a top-level loop, whole warpgroups, sm_90a, and not
 * given to plain programs (schedule.c). */
static bool applies(const Pipe *P)
{
	LowerCtx *c = P->L.c;
	bool ok;
	outer_loop(P, &ok);
	if (strcmp(c->arch, "sm_90a") != 0 || c->nthreads % 128 || !ok || blk_lower_plain_schedule(P->L.loop))
		return false;
	for (int i = 0; i < P->n; i++) {
		if (!blk_lower_dot_wgmma(P->all[i].dot) || !P->all[i].x[1].load)
			return false;
		for (int o = 0; o < 2; o++) /* gathered rows: the plain pipeline's cp.async */
			if (P->all[i].x[o].load && blk_op_gathers(P->all[i].x[o].load))
				return false;
	}
	return true;
}

/* Operand x's slabs can come by TMA (cp.async.bulk.tensor): an array TMA
 * can address (blk_lower_tma_array: 2-D, or up to 5-D with the other dims
 * squeezed in a block_ref the load reads directly, whose starts are the
 * box's coordinates along them -- a batch, or a head between the rows and
 * the columns; through a `trans` map where the slot holds the slab as a
 * transposed view lies, kmajor), a swizzled slot of at most 256 rows, and
 * zero fill that agrees with the load's masks: along its rows and columns
 * the slab spans its whole block, or the block the whole array (TMA
 * zero-fills past the array, not the block). */
static bool tma_ok(const Pipe *P, const Operand *x)
{
	LowerCtx *c = P->L.c;
	const BlkOp *ld = x->load;
	int pi = blk_lower_ref_param(ld->operands[0]);
	const BlkLayout *l = x->buf->type.layout;
	if (!blk_lower_tma_array(c, pi, 5, x->kmajor) || !l || !l->swz || (x->kmajor ? x->C : x->R) > 256)
		return false;
	const BlkParam *p = &c->k->params[pi];
	const BlkOp *br = ld->operands[0]->def;
	if (p->rank >= 3 && (!br || br->kind != BLK_OP_BLOCK_REF))
		return false;
	const BlkAttr *idx = blk_op_attr(ld, "idx");
	for (int d = 0; d < 2; d++) {
		BlkIndexKind k = idx && d < idx->index.n ? idx->index.v[d].kind : BLK_INDEX_FULL;
		int pd = d ? p->rank - 1 : blk_lower_tma_rows(p);
		const BlkSym *block = p->block[pd] ? p->block[pd] : p->shape[pd];
		if (k == BLK_INDEX_SCALAR || (k == BLK_INDEX_DS && !blk_sym_equal(block, p->shape[pd])))
			return false;
	}
	return true;
}

/* In CTA clusters (persist.c's pairs), a TMA slab the same in every CTA of
 * the cluster -- its Ref and indices do not depend on the CTA's rank --
 * is copied a share of its rows by each CTA, multicast to all: whole
 * 8-row swizzle blocks a share, a 2-D array, the slab as it lies. */
static bool multicast_ok(const Pipe *P, const Operand *x)
{
	LowerCtx *c = P->L.c;
	int cl = blk_lower_launch(c)->cluster;
	const BlkOp *ld = x->load;
	if (cl < 2 || !x->tma || x->kmajor || x->R % (8 * cl) ||
	    c->k->params[blk_lower_ref_param(ld->operands[0])].rank != 2)
		return false;
	for (int i = 0; i < ld->noperands; i++)
		if (blk_lower_computed_from(c->a, ld->operands[i], BLK_OP_CLUSTER_RANK, -1))
			return false;
	return true;
}

/* The loop's bounds are the same in every CTA of the cluster: each steps
 * through the copies the others multicast to it. */
static bool same_trips(const Pipe *P)
{
	for (int i = 0; i < 3; i++)
		if (blk_lower_computed_from(P->L.c->a, P->L.loop->operands[i], BLK_OP_CLUSTER_RANK, -1))
			return false;
	return true;
}

/* Sets attr name to v on every op of kind k in r, nested ones too. */
static void mark_all(LowerCtx *c, BlkRegion *r, BlkOpKind k, const char *name, int64_t v)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		if (op->kind == k)
			blk_op_set_int(c->a, op, name, v);
		for (int i = 0; i < op->nregions; i++)
			mark_all(c, op->regions[i], k, name, v);
	}
}

/* Marks the ops of `r` that v needs (v itself defined there). */
static void need(LowerCtx *c, BlkPtrMap *set, const BlkRegion *r, const BlkValue *v)
{
	BlkOp *d = v->def;
	if (!d || d->parent != r || blk_pmap_get(set, d))
		return;
	blk_pmap_put(c->a, set, d, d);
	for (int i = 0; i < d->noperands; i++)
		need(c, set, r, d->operands[i]);
}

/* The ops of region ob (the outer loop's body, or the kernel's) the
 * producer's copies need: the inner loop's bounds and the loads' (and
 * their index ops') operands. */
static void needed_outer(Pipe *P, const BlkRegion *ob, BlkPtrMap *set)
{
	LowerCtx *c = P->L.c;
	for (int i = 0; i < 3; i++)
		need(c, set, ob, P->L.loop->operands[i]);
	for (const BlkOp *op = P->L.body->first; op; op = op->next) {
		bool used = false;
		for (int i = 0; i < P->n && !used; i++)
			for (int o = 0; o < 2; o++)
				used |= op == P->all[i].x[o].load || blk_pmap_get(&P->all[i].x[o].in, op) != NULL;
		for (int i = 0; used && i < op->noperands; i++)
			need(c, set, ob, op->operands[i]);
	}
}

static bool plain(const LowerCtx *c, const BlkOp *op);

/* Whether op (or an op in its regions) reads global memory. */
static bool reads_global(const BlkOp *op)
{
	if ((op->kind == BLK_OP_LOAD || op->kind == BLK_OP_SWAP || blk_op_is_atomic(op->kind)) &&
	    op->operands[0]->type.space == BLK_SPACE_GLOBAL)
		return true;
	for (int i = 0; i < op->nregions; i++)
		for (const BlkOp *o = op->regions[i]->first; o; o = o->next)
			if (reads_global(o))
				return true;
	return false;
}

/* A signal_wait at the top of the outer loop's body before the pipelined
 * loop (an all-gather's tile waiting for its rows): the producer's, whose
 * copies read what the signal made ready, and the consumers' no more --
 * they read the slabs after the producer's arrive on full[slot], which
 * orders them after its acquire (and a second wait would take the signal
 * twice).  Adds each wait and the ops it needs to set (NULL: only checks);
 * false where one of those is not plain, or where the consumers read
 * global memory between the wait and the loop (such a read would not be
 * ordered after the acquire). */
static bool waits_before(Pipe *P, BlkOp *outer, BlkPtrMap *set)
{
	LowerCtx *c = P->L.c;
	const BlkRegion *ob = outer->regions[0];
	for (BlkOp *w = ob->first; w && w != P->L.loop; w = w->next) {
		if (w->kind != BLK_OP_SIGNAL_WAIT)
			continue;
		BlkPtrMap mine = { 0 };
		for (int i = 0; i < w->noperands; i++)
			need(c, &mine, ob, w->operands[i]);
		for (BlkOp *o = ob->first; o != w; o = o->next)
			if (blk_pmap_get(&mine, o) && !plain(c, o))
				return false;
		/* the consumers' reads before the loop would not follow the
		 * producer's acquire: only the slabs do (through full[slot]) */
		for (BlkOp *o = w->next; o && o != P->L.loop; o = o->next)
			if (reads_global(o))
				return false;
		for (BlkOp *o = ob->first; set && o != w; o = o->next)
			if (blk_pmap_get(&mine, o))
				blk_pmap_put(c->a, set, o, o);
		if (set)
			blk_pmap_put(c->a, set, w, w);
	}
	return true;
}

/* The bytes a slot's TMA copies bring (0: none by TMA). */
static int64_t tma_bytes(const Pipe *P)
{
	int64_t n = 0;
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			const Operand *x = &P->all[i].x[o];
			if (x->tma && !blk_pipe_shared(x))
				n += x->R * x->C * blk_dtype_size(x->load->results[0]->type.dtype);
		}
	return n;
}

/* tma_load slot <- X at the indices vm maps, its bytes on full[slot]. */
static void tma_copy(Pipe *P, BlkBuilder *b, Operand *x, BlkValue *bars, BlkValue *slot, BlkPtrMap *vm)
{
	LowerCtx *c = P->L.c;
	BlkOp *ld = x->load;
	int n = ld->noperands + 3;
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, n);
	ops[0] = blk_pipe_slot_view(P, b, x, slot);
	ops[1] = bars, ops[2] = slot;
	for (int i = 0; i < ld->noperands; i++) {
		BlkValue *m = blk_pmap_get(vm, ld->operands[i]);
		ops[i + 3] = m ? m : ld->operands[i];
	}
	BlkOp *t = blk_build(b, BLK_OP_TMA_LOAD, ld->loc, n, ops, 0, NULL, 0);
	const BlkAttr *idx = blk_op_attr(ld, "idx"), *mask = blk_op_attr(ld, "mask");
	if (idx)
		blk_op_set_index(c->a, t, "idx", idx->index.n, idx->index.v);
	if (mask)
		blk_op_set_string(c->a, t, "mask", mask->s);
	if (x->kmajor)
		blk_op_set_int(c->a, t, "trans", 1);
	if (x->multicast)
		blk_op_set_int(c->a, t, "multicast", blk_lower_launch(c)->cluster);
	blk_lower_note_tmap(c, t);
}

/* A `for` at b over the same range as f, carrying slot and phase (inits
 * given); its body's region args: iv, slot, phase. */
static BlkOp *slot_loop(LowerCtx *c, BlkBuilder *b, const BlkOp *f, BlkValue *const *range, BlkValue *slot,
                        BlkValue *phase, const char *ivname)
{
	BlkValue *ops[5] = { range[0], range[1], range[2], slot, phase };
	BlkType ti = blk_type_scalar(BLK_I32), tys[2] = { ti, ti };
	BlkOp *pf = blk_build(b, BLK_OP_FOR, f->loc, 5, ops, 2, tys, 1);
	blk_op_set_int(c->a, pf, "unroll", 0);
	BlkRegion *body = pf->regions[0];
	blk_region_add_arg(c->a, body, ti, ivname);
	blk_region_add_arg(c->a, body, ti, "slot");
	blk_region_add_arg(c->a, body, ti, "phase");
	return pf;
}

static BlkValue *mapped(BlkPtrMap *vm, BlkValue *v)
{
	BlkValue *m = blk_pmap_get(vm, v);
	return m ? m : v;
}

/* One producer loop at b for P's loop: the same iterations, copies only,
 * from slot and phase; returns it (its results: the next slot, phase). */
static BlkOp *producer_loop(Pipe *P, BlkBuilder *b, BlkValue *bars, BlkValue *slot0, BlkValue *phase0,
                            BlkPtrMap *vm)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	BlkValue *range[3] = { mapped(vm, f->operands[0]), mapped(vm, f->operands[1]), mapped(vm, f->operands[2]) };
	BlkOp *pf = slot_loop(c, b, f, range, slot0, phase0, "kp");
	BlkRegion *body = pf->regions[0];
	BlkValue *iv = body->args[0], *slot = body->args[1], *phase = body->args[2];
	BlkBuilder in;
	blk_builder_at_end(&in, c->a, body);
	BlkValue *empty = blk_pipe_binop(&in, BLK_OP_ADD, loc, slot, i32c(&in, loc, P->S));
	BlkValue *free_parity = blk_pipe_binop(&in, BLK_OP_SUB, loc, i32c(&in, loc, 1), phase);
	mbar(&in, BLK_OP_MBARRIER_WAIT, loc, bars, empty, free_parity);
	int64_t tx = tma_bytes(P);
	if (tx) { /* one thread: the slot's TMA bytes, then its copies */
		BlkOp *e = mbar(&in, BLK_OP_MBARRIER_EXPECT_TX, loc, bars, slot, NULL);
		blk_op_set_int(c->a, e, "bytes", tx);
	}
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			if (!x->load || blk_pipe_shared(x))
				continue;
			blk_loop_clone_slice(&P->L, &in, &x->in, x->load, iv, vm);
			if (x->tma) {
				tma_copy(P, &in, x, bars, slot, vm);
				continue;
			}
			BlkOp *cp = blk_pipe_copy(P, &in, NULL, x, slot, vm, 0, 1);
			blk_op_set_int(c->a, cp, "threads", 128);
		}
	mbar(&in, BLK_OP_ASYNC_ARRIVE, loc, bars, slot, NULL);
	BlkValue *ns, *np;
	next_slot(P, &in, loc, slot, phase, &ns, &np);
	BlkValue *y[2] = { ns, np };
	blk_build(&in, BLK_OP_YIELD, loc, 2, y, 0, NULL, 0);
	return pf;
}

/* The producer: a loop of copies for each loop of the group, one after
 * the other through the same slots (inside a copy of the outer loop, with
 * the ops their copies need, where there is one). */
static void producer(Pipe **G, int ng, BlkRegion *r, BlkValue *bars, BlkOp *outer, BlkValue *const *orange)
{
	LowerCtx *c = G[0]->L.c;
	BlkOp *f = G[0]->L.loop;
	BlkLoc loc = f->loc;
	BlkBuilder b;
	blk_builder_at_end(&b, c->a, r);
	BlkValue *zero = i32c(&b, loc, 0), *slot = zero, *phase = zero;
	BlkPtrMap vm = { 0 }, set = { 0 };
	BlkOp *po = NULL, *from = f; /* where the ops of f's region the copies need may come from */
	if (outer) {
		po = slot_loop(c, &b, outer, orange, zero, zero, "tp");
		BlkRegion *ob = outer->regions[0], *pb = po->regions[0];
		blk_pmap_put(c->a, &vm, ob->args[0], pb->args[0]);
		slot = pb->args[1], phase = pb->args[2];
		blk_builder_at_end(&b, c->a, pb);
		from = ob->first;
	}
	/* the ops the copies need: at the top, those before f stay outside
	 * the warp_specialize and are used as they are */
	for (int k = 0; k < ng; k++)
		needed_outer(G[k], f->parent, &set);
	if (outer)
		waits_before(G[0], outer, &set);
	for (BlkOp *op = from; op && op != G[ng - 1]->L.loop; op = op->next)
		if (blk_pmap_get(&set, op)) /* plain: needs_plain_ops, waits_before */
			blk_loop_copy_op(c, &b, &vm, op);
	for (BlkOp *op = from, *next; op && op != G[ng - 1]->L.loop; op = next) {
		next = op->next;
		if (op->kind == BLK_OP_SIGNAL_WAIT) /* the producer's alone now */
			blk_op_erase(op);
	}
	for (int k = 0; k < ng; k++) {
		BlkOp *pf = producer_loop(G[k], &b, bars, slot, phase, &vm);
		slot = pf->results[0], phase = pf->results[1];
	}
	if (po) {
		BlkValue *y[2] = { slot, phase };
		blk_builder_at_end(&b, c->a, po->regions[0]);
		blk_build(&b, BLK_OP_YIELD, loc, 2, y, 0, NULL, 0);
	}
}

/* After f: once it ran, the slot of its last iteration is free again
 * (empty[slot - 1 mod S] of the slot it yields). */
static void release_last(Pipe *P, BlkValue *bars, BlkOp *f)
{
	LowerCtx *c = P->L.c;
	BlkLoc loc = f->loc;
	BlkBuilder b;
	blk_builder_before(&b, c->a, f->next);
	BlkValue *ran = blk_pipe_binop(&b, BLK_OP_LT, loc, f->operands[0], f->operands[1]);
	BlkOp *iff = blk_build(&b, BLK_OP_IF, loc, 1, &ran, 0, NULL, 2);
	BlkBuilder in;
	blk_builder_at_end(&in, c->a, iff->regions[0]);
	mbar(&in, BLK_OP_MBARRIER_ARRIVE, loc, bars, prev_empty(P, &in, loc, f->results[f->nresults - 2]), NULL);
}

/* The inner loop's trip count at outer iteration t (its bounds' ops of
 * the outer body cloned there for t): max(0, cdiv(hi - lo, step)). */
static BlkValue *trips_at(Pipe *P, BlkBuilder *b, BlkOp *outer, BlkValue *t)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	BlkRegion *ob = outer->regions[0];
	BlkPtrMap set = { 0 }, vm = { 0 };
	for (int i = 0; i < 3; i++)
		need(c, &set, ob, f->operands[i]);
	blk_pmap_put(c->a, &vm, ob->args[0], t);
	for (BlkOp *op = ob->first; op && op != f; op = op->next)
		if (blk_pmap_get(&set, op))
			blk_loop_copy_op(c, b, &vm, op);
	BlkValue *lo = mapped(&vm, f->operands[0]), *hi = mapped(&vm, f->operands[1]);
	BlkValue *step = mapped(&vm, f->operands[2]);
	BlkValue *d = blk_pipe_binop(b, BLK_OP_SUB, loc, blk_pipe_binop(b, BLK_OP_ADD, loc, hi, step), lo);
	BlkValue *n = blk_pipe_binop(b, BLK_OP_FLOORDIV, loc, blk_pipe_binop(b, BLK_OP_SUB, loc, d, i32c(b, loc, 1)), step);
	return blk_pipe_binop(b, BLK_OP_MAX, loc, n, i32c(b, loc, 0));
}

/* The slabs the group's loops take at outer iteration t. */
static BlkValue *group_trips_at(Pipe **G, int ng, BlkBuilder *b, BlkOp *outer, BlkValue *t)
{
	BlkValue *n = trips_at(G[0], b, outer, t);
	for (int k = 1; k < ng; k++)
		n = blk_pipe_binop(b, BLK_OP_ADD, G[0]->L.loop->loc, n, trips_at(G[k], b, outer, t));
	return n;
}

/* Ping-pong (above): program prog's share of the outer loop, its slot and
 * phase stepped over the other program's tile, and the turns around the
 * inner loop.  range: the outer loop's own (the producer's). */
static void ping_pong(Pipe **G, int ng, BlkOp *ws, BlkOp *outer, BlkValue *const *range)
{
	Pipe *P = G[0];
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop, *last = G[ng - 1]->L.loop;
	BlkLoc loc = f->loc;
	BlkValue *prog = blk_region_add_arg(c->a, ws->regions[0], blk_type_scalar(BLK_I32), "prog");
	BlkBuilder b;
	blk_builder_before(&b, c->a, outer);
	outer->operands[0] = blk_pipe_binop(&b, BLK_OP_ADD, loc, range[0], blk_pipe_binop(&b, BLK_OP_MUL, loc, prog, range[2]));
	outer->operands[2] = blk_pipe_binop(&b, BLK_OP_MUL, loc, range[2], i32c(&b, loc, 2));
	BlkValue *t = outer->regions[0]->args[0];
	blk_builder_before(&b, c->a, f);
	BlkValue *later = blk_pipe_binop(&b, BLK_OP_NE, loc, t, range[0]);
	BlkValue *n = group_trips_at(G, ng, &b, outer, blk_pipe_binop(&b, BLK_OP_SUB, loc, t, range[2]));
	BlkValue *o[3] = { later, n, i32c(&b, loc, 0) };
	n = blk_build1(&b, BLK_OP_SELECT, loc, blk_type_scalar(BLK_I32), 3, o);
	int is = f->noperands - 2, ip = f->noperands - 1; /* the slot and phase carries' inits */
	BlkValue *at = blk_pipe_binop(&b, BLK_OP_ADD, loc, f->operands[is], n);
	BlkValue *wraps = blk_pipe_binop(&b, BLK_OP_FLOORDIV, loc, at, i32c(&b, loc, P->S));
	f->operands[is] = blk_pipe_binop(&b, BLK_OP_MOD, loc, at, i32c(&b, loc, P->S));
	/* the phase flips at each wrap (one builder call an argument: their order is C's to choose) */
	BlkValue *flips = blk_pipe_binop(&b, BLK_OP_ADD, loc, f->operands[ip], wraps);
	f->operands[ip] = blk_pipe_binop(&b, BLK_OP_MOD, loc, flips, i32c(&b, loc, 2));
	BlkOp *iff = blk_build(&b, BLK_OP_IF, loc, 1, &later, 0, NULL, 2);
	BlkBuilder in;
	blk_builder_at_end(&in, c->a, iff->regions[0]);
	blk_build(&in, BLK_OP_TURN_WAIT, loc, 1, &prog, 0, NULL, 0);
	/* right after the last loop: the other program may issue while this one drains */
	blk_builder_before(&b, c->a, last->next);
	BlkValue *next = blk_pipe_binop(&b, BLK_OP_ADD, loc, t, range[2]);
	BlkValue *more = blk_pipe_binop(&b, BLK_OP_LT, loc, next, range[1]);
	iff = blk_build(&b, BLK_OP_IF, loc, 1, &more, 0, NULL, 2);
	blk_builder_at_end(&in, c->a, iff->regions[0]);
	blk_build(&in, BLK_OP_TURN_PASS, loc, 1, &prog, 0, NULL, 0);
}

/* A tile from before the loop (attention's Q), stored by the consumers
 * into its buffer right before the loop: after a barrier where the loop
 * runs again for every tile (the last tile's dots read the buffer), then
 * fenced for wgmma's reads and a barrier. */
static void stored_once(Pipe *P, BlkOp *outer)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkBuilder b;
	blk_builder_before(&b, c->a, f);
	bool any = false;
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			if (!x->fixed)
				continue;
			if (!any && outer)
				blk_build(&b, BLK_OP_BARRIER, f->loc, 0, NULL, 0, NULL, 0);
			any = true;
			P->s = &P->all[i];
			blk_pipe_make_buffer(P, &b, x, o ? "stage_b" : "stage_a");
		}
	if (!any)
		return;
	blk_build(&b, BLK_OP_FENCE_ASYNC, f->loc, 0, NULL, 0, NULL, 0);
	blk_build(&b, BLK_OP_BARRIER, f->loc, 0, NULL, 0, NULL, 0);
}

/* The consumers' loop: the original, waiting for each slab and handing
 * the previous one's slot back; slot and phase carried from slot0 and
 * phase0 (zero: a value for the carries' placeholders).  release: the
 * slot of its last iteration goes back after it (a loop or a tile of the
 * outer loop follows). */
static void consumer(Pipe *P, BlkValue *bars, BlkValue *slot0, BlkValue *phase0, BlkValue *zero, bool release)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	bool inflight = true; /* else each dot waits for its group: this slot is free at once */
	for (int i = 0; i < P->n; i++)
		inflight = inflight && blk_pipe_in_flight(P, P->all[i].dot);
	BlkValue *slot = blk_loop_add_carry(&P->L, slot0, zero), *phase = blk_loop_add_carry(&P->L, phase0, zero);
	slot->name = "slot", phase->name = "phase";
	BlkOp *first = P->all[0].dot, *last = P->all[P->n - 1].dot;
	BlkBuilder b;
	blk_builder_before(&b, c->a, first);
	mbar(&b, BLK_OP_MBARRIER_WAIT, loc, bars, slot, phase);
	blk_build(&b, BLK_OP_FENCE_ASYNC, loc, 0, NULL, 0, NULL, 0);
	for (int i = 0; i < P->n; i++) {
		BlkOp *dot = P->all[i].dot;
		blk_builder_before(&b, c->a, dot);
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			if (!x->regs)
				dot->operands[o] = blk_pipe_operand_view(P, &b, x, blk_pipe_slot_view(P, &b, x, slot));
		}
		if (inflight)
			blk_op_set_int(c->a, dot, "wait_pending", 1);
	}
	/* after the last dot (its wait comes first, mma_steps.c) */
	blk_builder_before(&b, c->a, last->next);
	if (inflight) {
		BlkValue *later = blk_pipe_binop(&b, BLK_OP_NE, loc, P->L.body->args[0], f->operands[0]);
		BlkOp *iff = blk_build(&b, BLK_OP_IF, loc, 1, &later, 0, NULL, 2);
		BlkBuilder in;
		blk_builder_at_end(&in, c->a, iff->regions[0]);
		mbar(&in, BLK_OP_MBARRIER_ARRIVE, loc, bars, prev_empty(P, &in, loc, slot), NULL);
	} else {
		mbar(&b, BLK_OP_MBARRIER_ARRIVE, loc, bars, blk_pipe_binop(&b, BLK_OP_ADD, loc, slot, i32c(&b, loc, P->S)),
		     NULL);
	}
	BlkBuilder end;
	BlkOp *y = P->L.body->last;
	blk_builder_before(&end, c->a, y);
	BlkValue *ns, *np;
	next_slot(P, &end, loc, slot, phase, &ns, &np);
	y->operands[y->noperands - 2] = ns;
	y->operands[y->noperands - 1] = np;
	if (release && inflight) /* after the loop (and its drain, mma_steps.c): the last slot back */
		release_last(P, bars, f);
}

/* The group's loops on the consumers' side, one slot and phase carried
 * through them all (and through the outer loop, whose yield gives the
 * last loop's). */
static void consumers(Pipe **G, int ng, BlkValue *bars, BlkOp *outer)
{
	LowerCtx *c = G[0]->L.c;
	BlkOp *f = G[0]->L.loop;
	BlkLoc loc = f->loc;
	BlkBuilder pre;
	blk_builder_before(&pre, c->a, outer ? outer : f);
	BlkValue *zero = i32c(&pre, loc, 0), *slot = zero, *phase = zero;
	BlkLoop OL = { .c = c, .loop = outer, .body = outer ? outer->regions[0] : NULL };
	if (outer) { /* through the outer loop too: its yield gives the inner loops' last */
		if (!OL.body->last || OL.body->last->kind != BLK_OP_YIELD)
			blk_die("lower: warp_spec: the outer loop's body does not end in a yield");
		slot = blk_loop_add_carry(&OL, zero, zero);
		phase = blk_loop_add_carry(&OL, zero, zero);
	}
	for (int k = 0; k < ng; k++) {
		BlkOp *fk = G[k]->L.loop;
		consumer(G[k], bars, slot, phase, zero, outer || k < ng - 1);
		slot = fk->results[fk->nresults - 2], phase = fk->results[fk->nresults - 1];
	}
	if (outer) {
		BlkOp *oy = OL.body->last;
		oy->operands[oy->noperands - 2] = slot;
		oy->operands[oy->noperands - 1] = phase;
	}
}

/* P and Q stage the same slabs: dots alike in number and operands (the
 * same fixed tile, slabs of one shape and dtype, copied alike), so Q's
 * loop can take P's slots. */
static bool same_slabs(const Pipe *P, const Pipe *Q)
{
	if (P->n != Q->n)
		return false;
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			const Operand *x = &P->all[i].x[o], *y = &Q->all[i].x[o];
			if (!x->load != !y->load || x->regs != y->regs || x->fixed != y->fixed || !x->trans != !y->trans ||
			    x->kmajor != y->kmajor ||
			    x->same != y->same ||
			    x->R != y->R || x->C != y->C)
				return false;
			if (x->load && x->load->results[0]->type.dtype != y->load->results[0]->type.dtype)
				return false;
		}
	return true;
}

/* An op the producer may run again for its own copies: pure (constants,
 * index arithmetic, block refs) or a read of an `in` array, nothing with
 * regions (a loop's results are the consumers'). */
static bool plain(const LowerCtx *c, const BlkOp *op)
{
	if (op->nregions)
		return false;
	return (blk_op_flags(op->kind) & BLK_OPF_PURE) ||
	       (op->kind == BLK_OP_LOAD && blk_loop_read_only(c, op->operands[0]));
}

/* What Q's loop needs of its region from op `from` on is plain: the
 * producer, which runs none of the consumers' other work, computes its
 * bounds and indices itself. */
static bool needs_plain_ops(Pipe *Q, BlkOp *from)
{
	BlkPtrMap set = { 0 };
	needed_outer(Q, Q->L.loop->parent, &set);
	for (const BlkOp *op = from; op && op != Q->L.loop; op = op->next)
		if (blk_pmap_get(&set, op) && !plain(Q->L.c, op))
			return false;
	return true;
}

/* The loops after G[0]'s in its region that the producer feeds through the
 * same slots (G[0]'s buffers made, its TMA choices taken), up to the
 * first loop that cannot join: each qualifies for this form, stages the
 * same slabs by the same copies, and needs no result of the loops before
 * it.  Two loops of the same keys, as a causal attention split at its
 * diagonal.  Returns the group's size. */
static int gather(Pipe **G, BlkOp *outer)
{
	LowerCtx *c = G[0]->L.c;
	BlkOp *f = G[0]->L.loop, *from = outer ? outer->regions[0]->first : f;
	int ng = 1;
	for (BlkOp *g = f->next; g && ng < MAX_GROUP; g = g->next) {
		if (g->kind != BLK_OP_FOR)
			continue;
		Pipe *Q = BLK_NEW(c->a, Pipe);
		*Q = (Pipe){ .L = { .c = c, .loop = g, .body = g->regions[0] }, .S = G[0]->S, .D = G[0]->D };
		if (!blk_pipe_choose(Q) || !applies(Q) || !same_slabs(G[0], Q) || !needs_plain_ops(Q, from))
			break;
		bool same = true;
		for (int i = 0; i < Q->n; i++)
			for (int o = 0; o < 2; o++) {
				Operand *x = &Q->all[i].x[o];
				x->buf = G[0]->all[i].x[o].buf;
				x->tma = x->load && tma_ok(Q, x);
				same = same && x->tma == G[0]->all[i].x[o].tma;
			}
		if (!same)
			break;
		G[ng++] = Q;
	}
	return ng;
}

bool blk_pipe_warp_specialize(Pipe *P)
{
	if (!applies(P))
		return false;
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	bool ok;
	BlkOp *outer = outer_loop(P, &ok), *top = outer ? outer : f;
	if (outer && (!needs_plain_ops(P, outer->regions[0]->first) || !waits_before(P, outer, NULL)))
		return false; /* the producer could not compute the tile's bounds or waits */
	P->D = P->S; /* the producer fills every slot */
	BlkBuilder pre;
	blk_builder_before(&pre, c->a, top);
	for (int i = 0; i < P->n; i++) {
		P->s = &P->all[i];
		for (int o = 0; o < 2; o++)
			if (P->all[i].x[o].load)
				blk_pipe_make_buffer(P, &pre, &P->all[i].x[o], o ? "stage_b" : "stage_a");
	}
	const BlkSym *nb = blk_sym_const(c->a, 4 * P->S);
	BlkType bt = blk_type_ref(BLK_I32, 1, &nb, BLK_SPACE_SHARED);
	BlkValue *bars = blk_build(&pre, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &bt, 0)->results[0];
	bars->name = "bars";
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			x->tma = x->load && !blk_pipe_shared(x) && tma_ok(P, x);
		}
	blk_pipe_share_buffers(P);
	Pipe *G[MAX_GROUP] = { P };
	int ng = gather(G, outer);
	/* multicast: for every loop of the group or none (the slots are theirs in turn) */
	bool trips = true, mc = false;
	for (int k = 0; k < ng; k++)
		trips = trips && same_trips(G[k]);
	for (int k = 0; k < ng; k++)
		for (int i = 0; i < G[k]->n; i++)
			for (int o = 0; o < 2; o++) {
				Operand *x = &G[k]->all[i].x[o];
				x->multicast = trips && x->load && !blk_pipe_shared(x) && multicast_ok(G[k], x);
				mc = mc || x->multicast;
			}
	int cl = mc ? blk_lower_launch(c)->cluster : 1;
	int full = 128 + (tma_bytes(P) > 0); /* the producer's threads, and its TMA thread's expect_tx */
	for (int s = 0; s < 2 * P->S; s++) {
		BlkOp *in = mbar(&pre, BLK_OP_MBARRIER_INIT, loc, bars, i32c(&pre, loc, s), NULL);
		/* empty: the consumers' threads, and lane 0 of each consumer warp of the other CTAs */
		blk_op_set_int(c->a, in, "count", s < P->S ? full : c->nthreads + (cl - 1) * c->nthreads / 32);
	}
	blk_build(&pre, BLK_OP_BARRIER, loc, 0, NULL, 0, NULL, 0);
	if (mc) /* every CTA's barriers ready before another multicasts to them */
		blk_build(&pre, BLK_OP_CLUSTER_SYNC, loc, 0, NULL, 0, NULL, 0);
	BlkOp *ws = blk_build(&pre, BLK_OP_WARP_SPECIALIZE, loc, 0, NULL, 0, NULL, 2);
	bool pp = outer && c->nthreads == 128;
	blk_op_set_int(c->a, ws, "consumers", (pp ? 2 : 1) * c->nthreads / 128);
	blk_lower_launch(c)->threads = (pp ? 2 : 1) * c->nthreads + 128; /* and the producer warpgroup */
	if (pp)
		blk_op_set_int(c->a, ws, "programs", 2);
	BlkValue *range[3] = { NULL, NULL, NULL };
	for (int i = 0; outer && i < 3; i++)
		range[i] = outer->operands[i];
	stored_once(P, outer);
	for (int k = 1; k < ng; k++) /* the fixed tile's buffer, stored once for all */
		for (int i = 0; i < P->n; i++)
			for (int o = 0; o < 2; o++)
				G[k]->all[i].x[o].buf = P->all[i].x[o].buf;
	consumers(G, ng, bars, outer);
	if (pp)
		ping_pong(G, ng, ws, outer, range);
	producer(G, ng, ws->regions[1], bars, outer, range);
	for (int k = 0; k < ng; k++)
		blk_pipe_erase_loads(G[k]);
	blk_lower_move_to_end(ws->next, ws->regions[0]); /* the loops, their carries' inits, the rest */
	if (mc) { /* slots are freed by the consumers of every CTA they are filled in, and
	           * no CTA leaves while another may still arrive on its barriers */
		mark_all(c, ws->regions[0], BLK_OP_MBARRIER_ARRIVE, "cluster", cl);
		BlkBuilder end;
		blk_builder_at_end(&end, c->a, ws->parent);
		blk_build(&end, BLK_OP_CLUSTER_SYNC, loc, 0, NULL, 0, NULL, 0);
	}
	return true;
}
