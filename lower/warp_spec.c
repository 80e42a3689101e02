/* warp_spec.c - the pipeliner's warp-specialized form: a producer
 * warpgroup copies the slabs of a loop's wgmma dots, the kernel's warps
 * (the consumers) only wait for them, multiply and hand the slots back.
 *
 * Applies (pipeliner.c calls it after choosing the loop's dots) when the
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
 *       yield d, next slot, phase flipped at the wrap
 *     }
 *     ...the rest of the kernel...
 *   } {
 *     for k (slot = 0, phase = 0) {                     -- producer
 *       mbarrier_wait bars, S+slot, 1 - phase           -- the slot is free
 *       async_copy bufA[slot] <- A(k) {threads = 128}; ... B
 *       async_arrive bars, slot                          -- full once they land
 *       yield next slot, phase flipped at the wrap
 *     }
 *   }
 *
 * A fresh barrier counts its phase "1" as completed, so the producer's
 * first pass over the slots does not wait.  mma_steps.c puts wgmma_wait
 * {pending = 1} right after the dot's steps, before the arrive: the group
 * of iteration k-1, the last reader of its slot, is then complete.  The
 * consumers' barriers (tile.c's, the epilogue's) become a named barrier
 * of their threads alone (emit_wgmma.c).
 */
#include "pipeliner.h"

#include <string.h>

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
	*ns = pipe_advance(P, b, slot);
	BlkValue *wrap = pipe_binop(b, BLK_OP_EQ, loc, *ns, i32c(b, loc, 0));
	BlkValue *flip = pipe_binop(b, BLK_OP_SUB, loc, i32c(b, loc, 1), phase);
	BlkValue *o[3] = { wrap, flip, phase };
	*np = blk_build1(b, BLK_OP_SELECT, loc, blk_type_scalar(BLK_I32), 3, o);
}

/* The loop qualifies: wgmma dots on loaded slabs only, at the top of the
 * body, whole warpgroups, sm_90a. */
static bool applies(const Pipe *P)
{
	LowerCtx *c = P->L.c;
	if (strcmp(c->arch, "sm_90a") != 0 || c->nthreads % 128 || P->L.loop->parent != c->k->body)
		return false;
	for (int i = 0; i < P->n; i++)
		if (!blk_lower_dot_wgmma(P->all[i].dot) || !P->all[i].x[0].load || !P->all[i].x[1].load)
			return false;
	return true;
}

/* The producer's loop: the same iterations, copies only. */
static void producer(Pipe *P, BlkRegion *r, BlkValue *bars)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	BlkBuilder b;
	blk_builder_at_end(&b, c->a, r);
	BlkValue *zero = i32c(&b, loc, 0);
	BlkValue *ops[5] = { f->operands[0], f->operands[1], f->operands[2], zero, zero };
	BlkType ti = blk_type_scalar(BLK_I32), tys[2] = { ti, ti };
	BlkOp *pf = blk_build(&b, BLK_OP_FOR, loc, 5, ops, 2, tys, 1);
	blk_op_set_int(c->a, pf, "unroll", 0);
	BlkRegion *body = pf->regions[0];
	BlkValue *iv = blk_region_add_arg(c->a, body, ti, "kp");
	BlkValue *slot = blk_region_add_arg(c->a, body, ti, "slot");
	BlkValue *phase = blk_region_add_arg(c->a, body, ti, "phase");
	BlkBuilder in;
	blk_builder_at_end(&in, c->a, body);
	BlkValue *empty = pipe_binop(&in, BLK_OP_ADD, loc, slot, i32c(&in, loc, P->S));
	BlkValue *free_parity = pipe_binop(&in, BLK_OP_SUB, loc, i32c(&in, loc, 1), phase);
	mbar(&in, BLK_OP_MBARRIER_WAIT, loc, bars, empty, free_parity);
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			BlkPtrMap vm = { 0 };
			blk_loop_clone_slice(&P->L, &in, &x->in, x->load, iv, &vm);
			BlkOp *cp = pipe_copy(P, &in, NULL, x, slot, &vm, 0, 1);
			blk_op_set_int(c->a, cp, "threads", 128);
		}
	mbar(&in, BLK_OP_ASYNC_ARRIVE, loc, bars, slot, NULL);
	BlkValue *ns, *np;
	next_slot(P, &in, loc, slot, phase, &ns, &np);
	BlkValue *y[2] = { ns, np };
	blk_build(&in, BLK_OP_YIELD, loc, 2, y, 0, NULL, 0);
}

/* The consumers' loop: the original, waiting for each slab and handing
 * the previous one's slot back. */
static void consumer(Pipe *P, BlkValue *bars)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	BlkBuilder pre;
	blk_builder_before(&pre, c->a, f);
	BlkValue *zero = i32c(&pre, loc, 0);
	BlkValue *slot = blk_loop_add_carry(&P->L, zero, zero), *phase = blk_loop_add_carry(&P->L, zero, zero);
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
			dot->operands[o] = pipe_operand_view(P, &b, x, pipe_slot_view(P, &b, x, slot));
		}
		blk_op_set_int(c->a, dot, "wait_pending", 1);
	}
	/* after the last dot (its wait comes first, mma_steps.c) */
	blk_builder_before(&b, c->a, last->next);
	BlkValue *later = pipe_binop(&b, BLK_OP_NE, loc, P->L.body->args[0], f->operands[0]);
	BlkOp *iff = blk_build(&b, BLK_OP_IF, loc, 1, &later, 0, NULL, 2);
	BlkBuilder in;
	blk_builder_at_end(&in, c->a, iff->regions[0]);
	/* empty[slot - 1 mod S] = S + slot - 1, or 2S - 1 for slot 0 */
	BlkValue *wrap = pipe_binop(&in, BLK_OP_EQ, loc, slot, i32c(&in, loc, 0));
	BlkValue *o[3] = { wrap, i32c(&in, loc, 2 * P->S - 1),
	                   pipe_binop(&in, BLK_OP_ADD, loc, slot, i32c(&in, loc, P->S - 1)) };
	BlkValue *empty = blk_build1(&in, BLK_OP_SELECT, loc, blk_type_scalar(BLK_I32), 3, o);
	mbar(&in, BLK_OP_MBARRIER_ARRIVE, loc, bars, empty, NULL);
	BlkBuilder end;
	BlkOp *y = P->L.body->last;
	blk_builder_before(&end, c->a, y);
	BlkValue *ns, *np;
	next_slot(P, &end, loc, slot, phase, &ns, &np);
	y->operands[y->noperands - 2] = ns;
	y->operands[y->noperands - 1] = np;
}

/* Moves op and every op after it in its region to the end of r. */
static void move_rest(BlkOp *op, BlkRegion *r)
{
	for (BlkOp *next; op; op = next) {
		next = op->next;
		blk_op_erase(op);
		op->parent = r;
		op->prev = r->last;
		op->next = NULL;
		if (r->last)
			r->last->next = op;
		else
			r->first = op;
		r->last = op;
	}
}

bool blk_pipe_warp_specialize(Pipe *P)
{
	if (!applies(P))
		return false;
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	BlkLoc loc = f->loc;
	P->D = P->S; /* the producer fills every slot */
	BlkBuilder pre;
	blk_builder_before(&pre, c->a, f);
	for (int i = 0; i < P->n; i++) {
		P->s = &P->all[i];
		for (int o = 0; o < 2; o++)
			pipe_make_buffer(P, &pre, &P->all[i].x[o], o ? "stage_b" : "stage_a");
	}
	const BlkSym *nb = blk_sym_const(c->a, 4 * P->S);
	BlkType bt = blk_type_ref(BLK_I32, 1, &nb, BLK_SPACE_SHARED);
	BlkValue *bars = blk_build(&pre, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &bt, 0)->results[0];
	bars->name = "bars";
	for (int s = 0; s < 2 * P->S; s++) {
		BlkOp *in = mbar(&pre, BLK_OP_MBARRIER_INIT, loc, bars, i32c(&pre, loc, s), NULL);
		blk_op_set_int(c->a, in, "count", s < P->S ? 128 : c->nthreads);
	}
	blk_build(&pre, BLK_OP_BARRIER, loc, 0, NULL, 0, NULL, 0);
	BlkOp *ws = blk_build(&pre, BLK_OP_WARP_SPECIALIZE, loc, 0, NULL, 0, NULL, 2);
	blk_op_set_int(c->a, ws, "consumers", c->nthreads / 128);
	consumer(P, bars);
	producer(P, ws->regions[1], bars);
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			if (x->trans)
				blk_op_erase(x->trans);
			blk_op_erase(x->load);
		}
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++)
			blk_loop_erase_dead(&P->L, &P->all[i].x[o].in);
	move_rest(ws->next, ws->regions[0]); /* the loop, its carries' inits, the rest */
	return true;
}
