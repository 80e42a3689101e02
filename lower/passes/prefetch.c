/* prefetch.c - software pipelining of the global loads that feed a dot.
 *
 * Requires: block refs lowered (blockspec.c: masks set), loop bounds
 * constant.  Produces: in every `for` with constant bounds and at least two
 * iterations, each `load` of a read-only (`in`) array whose result feeds a
 * `dot` of the same body, or is small enough to hold twice (at most
 * PREFETCH_REGS elements a thread: a streaming reduction's slab), and whose
 * indices depend only on the iv, becomes a loop carry:
 *
 *   x0 = load(lo)                      -- before the loop
 *   for k (.., x) {
 *     xn = load(min(k + step, last))   -- the next slab, issued first
 *     ... dot(x, ...) ...              -- stage x, barrier, FMAs
 *     yield .., xn
 *   }
 *
 * so the next slab's global loads are in flight while this slab is staged
 * and multiplied (emit_dot.c: two staging buffers, one barrier per slab).
 * `last` is the last iteration's iv, so the last iteration reloads its own
 * slab instead of reading past the array: every index the clones see is one
 * the original load saw, and the original's `mask` attribute stays valid.
 * The loaded values and their order of use are unchanged, so results are
 * bit-identical.  A tensor-core dot whose two operands are slabs of `in`
 * arrays has been given to pipeline.c (cp.async into shared memory) before
 * this pass; what stays here is register prefetch.
 */
#include "lower/lower_int.h"

#include <string.h>

typedef BlkLoop Loop;

enum { PREFETCH_REGS = 32 }; /* elements a thread may hold for the next slab */

/* v is a dot's operand (direct), or goes into one the body computes from
 * its loads (int4 weights unpacked and scaled: blk_lower_transformed_load). */
static bool feeds_dot(const BlkRegion *body, const BlkValue *v, bool direct)
{
	for (const BlkOp *op = body->first; op; op = op->next)
		for (int o = 0; op->kind == BLK_OP_DOT && o < 2 && o < op->noperands; o++)
			if (direct ? op->operands[o] == v
			           : blk_lower_transformed_load(op->operands[o], body) && blk_lower_depends(op->operands[o], v))
				return true;
	return false;
}

/* A slab small enough to hold twice (a streaming reduction's tile). */
static bool small(const Loop *L, const BlkValue *v)
{
	int64_t n = 1;
	for (int d = 0; d < v->type.rank; d++)
		n *= blk_lower_dim(v->type.dims[d]);
	return n <= (int64_t)PREFETCH_REGS * L->c->nthreads;
}

static bool pipelinable(Loop *L, BlkOp *ld, BlkPtrMap *in)
{
	if (ld->kind != BLK_OP_LOAD || blk_op_strided(ld) || !blk_loop_read_only(L->c, ld->operands[0]))
		return false;
	/* a gather only into an operand computed from it (GPTQ's rows of
	 * packed words, each k's picked by k / 8): its index tiles are cloned
	 * with it */
	if (blk_op_gathers(ld) ? !feeds_dot(L->body, ld->results[0], false)
	                       : !feeds_dot(L->body, ld->results[0], true) && !feeds_dot(L->body, ld->results[0], false) &&
	                             !small(L, ld->results[0]))
		return false;
	for (int i = 0; i < ld->noperands; i++)
		if (!blk_loop_slice(L, in, ld->operands[i]))
			return false;
	return true;
}

/* The load `ld` with the iv replaced by `iv`: its slice, then itself. */
static BlkValue *load_at(Loop *L, BlkBuilder *b, BlkPtrMap *in, BlkOp *ld, BlkValue *iv)
{
	BlkPtrMap vm = { 0 };
	blk_loop_clone_slice(L, b, in, ld, iv, &vm);
	return blk_loop_copy_op(L->c, b, &vm, ld)->results[0];
}

/* min(iv + step, last), before `at`. */
static BlkValue *next_iv(Loop *L, BlkOp *at)
{
	BlkBuilder b;
	blk_builder_before(&b, L->c->a, at);
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *s[2] = { L->body->args[0], blk_lower_i32(&b, at->loc, L->step) };
	BlkValue *m[2] = { blk_build1(&b, BLK_OP_ADD, at->loc, i32, 2, s), blk_lower_i32(&b, at->loc, L->last) };
	return blk_build1(&b, BLK_OP_MIN, at->loc, i32, 2, m);
}

/* 1. clone the slab-`lo` load before the loop; 2. the next slab's load in
 * place of the original; 3. uses read the carry; 4. the original and its
 * slice go. */
static void pipeline_load(Loop *L, BlkOp *ld, BlkPtrMap *in, BlkValue **nk)
{
	BlkBuilder pre, here;
	blk_builder_before(&pre, L->c->a, L->loop);
	BlkValue *init = load_at(L, &pre, in, ld, blk_lower_i32(&pre, ld->loc, L->lo));
	if (!*nk)
		*nk = next_iv(L, L->body->first);
	blk_builder_before(&here, L->c->a, ld);
	BlkValue *next = load_at(L, &here, in, ld, *nk);
	BlkValue *cur = blk_loop_add_carry(L, init, next);
	blk_replace_uses(L->body, ld->results[0], cur);
	blk_op_erase(ld);
	blk_loop_erase_dead(L, in);
}

static bool bounds(Loop *L)
{
	int64_t hi;
	BlkOp *f = L->loop;
	if (!blk_lower_const_int(f->operands[0], &L->lo) || !blk_lower_const_int(f->operands[1], &hi) ||
	    !blk_lower_const_int(f->operands[2], &L->step) || L->step <= 0 || hi - L->lo <= L->step)
		return false;
	L->last = L->lo + (hi - 1 - L->lo) / L->step * L->step;
	BlkOp *y = L->body->last;
	return y && y->kind == BLK_OP_YIELD;
}

static void prefetch_loop(void *ctx, BlkOp *f)
{
	Loop L = { .c = ctx, .loop = f, .body = f->kind == BLK_OP_FOR ? f->regions[0] : NULL };
	if (!L.body || !bounds(&L))
		return;
	BlkValue *nk = NULL;
	for (BlkOp *op = L.body->first, *next; op; op = next) {
		next = op->next;
		BlkPtrMap in = { 0 };
		if (pipelinable(&L, op, &in))
			pipeline_load(&L, op, &in, &nk);
	}
}

bool blk_lower_prefetch(LowerCtx *c)
{
	blk_lower_walk(c->k->body, prefetch_loop, c);
	return true;
}
