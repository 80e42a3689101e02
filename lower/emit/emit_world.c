/* emit_world.c - several ranks: my_rank and world, peer Refs, signals.
 *
 * A symmetric param's launch arguments are its local pointer and a table
 * of every rank's base of the same buffer (a peers argument); rank r's
 * copy of an address in rank q's buffer is that address plus table[r] -
 * table[q] (q this rank, or the rank a peer Ref already points at).  So a
 * peer Ref is the Ref with its base moved, and every access (vectors,
 * masks, atomics) works through it unchanged.
 *
 * A signal is one program's act: the program's threads meet at a barrier
 * (their earlier writes done), then thread 0 makes them visible to the
 * whole system (fence.acq_rel.sys) and adds or stores the counter.  A
 * wait is thread 0 spinning on an acquiring load until the counter
 * reaches the value, taking the value off, then the barrier, so every
 * thread's later reads follow the acquire; a proxy fence after it lets TMA
 * (the async proxy) see what peers wrote.  The spin is bounded by the
 * launch's timeout: past it, the program prints what it waited for and
 * traps, and the launch fails with that message instead of hanging.
 */
#include "emit.h"

#include <string.h>

void blk_emit_world_leaf(Emit *E, const BlkOp *op)
{
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, blk_emit_layout(E, op->results[0]));
	LLVMValueRef s = op->kind == BLK_OP_RANK ? E->rank_arg : E->world_arg;
	for (int r = 0; r < blk_layout_nregs(ev->t.l); r++)
		ev->t.r[r] = s;
	blk_emit_bind(E, op->results[0], ev);
}

/* Rank r's base of param pi's buffer (an i64 address), from its table. */
static LLVMValueRef peer_base(Emit *E, int pi, LLVMValueRef r)
{
	LLVMValueRef at = LLVMBuildGEP2(E->b, E->i64, E->peer_args[pi], &r, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(E->b, E->i64, at, "peer");
	LLVMSetAlignment(v, 8);
	return v;
}

void blk_emit_peer(Emit *E, const BlkOp *op)
{
	const ERef *in = &blk_emit_val(E, op->operands[0])->ref;
	if (in->space != BLK_SPACE_GLOBAL || in->pindex < 0 || !E->peer_args[in->pindex])
		blk_die("emit: peer of a Ref of no symmetric param");
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->is_ref = true;
	ev->ref = *in;
	LLVMValueRef r = blk_emit_tile(E, op->operands[1])->r[0];
	LLVMValueRef from = in->peer ? in->peer : E->rank_arg; /* x.on(a).on(b) is x.on(b) */
	LLVMValueRef delta = LLVMBuildSub(E->b, peer_base(E, in->pindex, r),
	                                  peer_base(E, in->pindex, from), "peer.delta");
	ev->ref.base = LLVMBuildGEP2(E->b, E->i8, in->base, &delta, 1, "peer.base");
	ev->ref.peer = r;
	blk_emit_bind(E, op->results[0], ev);
}

/* The counter's address; *alive false when its index is outside the array. */
static LLVMValueRef counter(Emit *E, const BlkOp *op, LLVMValueRef *alive)
{
	const ERef *r = &blk_emit_val(E, op->operands[0])->ref;
	LLVMValueRef off = r->off;
	*alive = r->alive;
	return LLVMBuildGEP2(E->b, E->i32, r->base, &off, 1, "signal");
}

static LLVMValueRef globaltimer(Emit *E)
{
	return blk_emit_asm(E, E->i64, NULL, 0, "mov.u64 $0, %globaltimer;", "=l", true);
}

/* vprintf of fmt with the rank, the program's ids and then n more values
 * (their types in tys), then trap: the launch fails with that message. */
static void fail_here(Emit *E, const char *fmt, LLVMValueRef *more, LLVMTypeRef *tys, int n)
{
	const BlkKernel *k = E->c->k;
	LLVMValueRef vals[8] = { E->rank_arg, blk_emit_program_id(E, 0),
	                         k->grid_rank > 1 ? blk_emit_program_id(E, 1) : blk_emit_i32(E, 0),
	                         k->grid_rank > 2 ? blk_emit_program_id(E, 2) : blk_emit_i32(E, 0) };
	LLVMTypeRef ts[8] = { E->i32, E->i32, E->i32, E->i32 };
	for (int i = 0; i < n && i < 4; i++)
		vals[4 + i] = more[i], ts[4 + i] = tys[i];
	blk_emit_vprintf(E, fmt, "fail", vals, ts, 4 + (n < 4 ? n : 4));
	blk_emit_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, "trap;", "", true);
}

/* The message a timed-out wait prints before it traps. */
static void timed_out(Emit *E, const BlkOp *op, LLVMValueRef seen, LLVMValueRef want)
{
	char fmt[512];
	snprintf(fmt, sizeof fmt, "blk: %s: rank %%d, program (%%d, %%d, %%d): signal_wait at line %u "
	         "timed out after %%lld ms: the signal is %%d, it waits for %%d (raise BLK_SIGNAL_TIMEOUT, "
	         "or check that every rank launches this kernel)\n", E->c->k->name, op->loc.line);
	LLVMValueRef more[3] = { LLVMBuildUDiv(E->b, E->timeout_arg, blk_emit_i64(E, 1000000), ""), seen, want };
	LLVMTypeRef tys[3] = { E->i64, E->i32, E->i32 };
	fail_here(E, fmt, more, tys, 3);
}

/* Thread 0: spin until *p >= want (acquire), then take want off in one
 * atomic step (a compare-and-swap from the value seen: two waiters on one
 * counter cannot both take one signal). */
static void spin_wait(Emit *E, const BlkOp *op, LLVMValueRef p, LLVMValueRef want)
{
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(E->cx, E->fn, "wait.loop");
	LLVMBasicBlockRef take = LLVMAppendBasicBlockInContext(E->cx, E->fn, "wait.take");
	LLVMBasicBlockRef late = LLVMAppendBasicBlockInContext(E->cx, E->fn, "wait.late");
	LLVMBasicBlockRef more = LLVMAppendBasicBlockInContext(E->cx, E->fn, "wait.more");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "wait.done");
	LLVMValueRef t0 = globaltimer(E);
	LLVMBuildBr(E->b, loop);
	LLVMPositionBuilderAtEnd(E->b, loop);
	LLVMValueRef seen = blk_emit_asm(E, E->i32, &p, 1, "ld.acquire.sys.global.s32 $0, [$1];",
	                                 "=r,l,~{memory}", true);
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSGE, seen, want, ""), take, late);
	LLVMPositionBuilderAtEnd(E->b, take);
	LLVMValueRef cas[3] = { p, seen, LLVMBuildSub(E->b, seen, want, "") };
	LLVMValueRef old = blk_emit_asm(E, E->i32, cas, 3, "atom.acquire.sys.global.cas.b32 $0, [$1], $2, $3;",
	                                "=r,l,r,r,~{memory}", true);
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, old, seen, ""), done, loop);
	LLVMPositionBuilderAtEnd(E->b, late);
	LLVMValueRef waited = LLVMBuildSub(E->b, globaltimer(E), t0, "");
	LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(E->cx, E->fn, "wait.timeout");
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntUGT, waited, E->timeout_arg, ""), out, more);
	LLVMPositionBuilderAtEnd(E->b, out);
	timed_out(E, op, seen, want);
	LLVMBuildBr(E->b, done); /* (trap does not return) */
	LLVMPositionBuilderAtEnd(E->b, more);
	blk_emit_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, "nanosleep.u32 64;", "", true);
	LLVMBuildBr(E->b, loop);
	LLVMPositionBuilderAtEnd(E->b, done);
}

void blk_emit_signal(Emit *E, const BlkOp *op)
{
	LLVMValueRef alive, v = blk_emit_tile(E, op->operands[1])->r[0];
	LLVMValueRef p = counter(E, op, &alive);
	blk_emit_barrier(E); /* every thread's earlier writes are done */
	LLVMValueRef is0 = LLVMBuildICmp(E->b, LLVMIntEQ, E->tid, blk_emit_i32(E, 0), "");
	if (alive) { /* an index outside the signal array: the interpreter's error, then a trap */
		LLVMBasicBlockRef bad = blk_emit_begin_if(E, blk_emit_and(E, is0, LLVMBuildNot(E->b, alive, "")));
		char fmt[256];
		snprintf(fmt, sizeof fmt, "blk: %s: rank %%d, program (%%d, %%d, %%d): %s at line %u: the "
		         "signal's index is outside its signal array\n", E->c->k->name, blk_op_name(op->kind),
		         op->loc.line);
		fail_here(E, fmt, NULL, NULL, 0);
		blk_emit_end_if(E, bad);
	}
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, blk_emit_and(E, is0, alive));
	LLVMValueRef args[2] = { p, v };
	switch (op->kind) {
	case BLK_OP_SIGNAL_ADD:
		blk_emit_asm(E, LLVMVoidTypeInContext(E->cx), args, 2,
		             "fence.acq_rel.sys;\n\tred.relaxed.sys.global.add.s32 [$0], $1;", "l,r,~{memory}", true);
		break;
	case BLK_OP_SIGNAL_SET:
		blk_emit_asm(E, LLVMVoidTypeInContext(E->cx), args, 2,
		             "fence.acq_rel.sys;\n\tst.relaxed.sys.global.s32 [$0], $1;", "l,r,~{memory}", true);
		break;
	default:
		spin_wait(E, op, p, v);
		break;
	}
	blk_emit_end_if(E, cont);
	if (op->kind != BLK_OP_SIGNAL_WAIT)
		return;
	blk_emit_barrier(E); /* the other threads read after thread 0's acquire */
	if (strncmp(E->c->arch, "sm_90", 5) == 0) /* TMA reads what the peers' plain stores wrote */
		blk_emit_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, "fence.proxy.async.global;", "~{memory}", true);
}
