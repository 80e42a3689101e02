/* emit_dot.c - dot on the SIMT path: exact f32, register micro-tiles.
 *
 * dot(A, B, acc) with the result in the dot layout (layout.h), A and B
 * shared Refs of f32 that dot_stage.c or the pipeliner filled: A [M, K] k-major (a
 * trans_view of [K][pad(M)+4]: the rows a thread needs at one k are
 * consecutive floats), B [K, N] row-major.  For k ascending (unrolled up to
 * SIMT_UNROLL_FMAS FMAs a thread) each thread loads its spt-wide column pieces of A's row k and
 * row pieces of B's row k with 128-bit shared loads (ld.shared.v4.f32; the
 * A reads of a warp are broadcasts) and does the outer product into its
 * micro-tile with llvm.fma.f32, so every element accumulates in k order
 * exactly like the interpreter's fmaf loop.  An i8/u8 dot runs the same
 * way on i32 (dot_stage.c widened A and B): a multiply and an add per
 * element, wrapping, exact in any order.  A dot that mma_steps.c made one
 * k step of takes A's column and B's row as fma_a/fma_b tiles that
 * local_load read the same way (blk_emit_fma_load), so the loads are ops of
 * their own: the rotate pass may issue them before a barrier's FMAs.
 */
#include "emit.h"

typedef struct DotCtx {
	const BlkLayout *l;
	LLVMTypeRef et;      /* f32, or i32 for an integer dot */
	int M, K, N;
	int64_t lda, ldb;    /* floats between A's rows of k, B's rows of k */
	LLVMValueRef pa, pb; /* the thread's first A / B element */
} DotCtx;

/* The thread's first element of shared Ref r: its byte offset plus the
 * per-thread part t; the invariant part first, so LICM hoists it. */
static LLVMValueRef thread_ptr(Emit *E, const ERef *r, LLVMValueRef t)
{
	int64_t cb;
	LLVMValueRef p = blk_emit_shared_ptr(E, r, t, &cb);
	LLVMValueRef o = blk_emit_i32(E, cb);
	return cb ? LLVMBuildGEP2(E->b, E->i8, p, &o, 1, "") : p;
}

/* spt consecutive floats at byte offset `at` from p, as one vector load. */
static void load_piece(Emit *E, LLVMTypeRef et, LLVMValueRef p, int64_t at, int spt,
                       LLVMValueRef *out)
{
	LLVMValueRef o = blk_emit_i32(E, at);
	LLVMValueRef q = LLVMBuildGEP2(E->b, E->i8, p, &o, 1, "");
	LLVMTypeRef vt = LLVMVectorType(et, (unsigned)spt);
	LLVMValueRef v = LLVMBuildLoad2(E->b, vt, q, "");
	LLVMSetAlignment(v, (unsigned)(spt * 4));
	for (int i = 0; i < spt; i++)
		out[i] = LLVMBuildExtractElement(E->b, v, blk_emit_i32(E, i), "");
}

/* The outer product of a thread's A column pieces a[nm] and B row pieces
 * b[nn] into its micro-tile. */
static void outer(Emit *E, LLVMTypeRef et, const BlkLayout *l, LLVMValueRef *a, LLVMValueRef *b,
                  LLVMValueRef *acc)
{
	int nm = blk_layout_regs_along(l, 0), nn = blk_layout_regs_along(l, 1);
	LLVMTypeRef t = E->f32;
	for (int i = 0; i < nm; i++)
		for (int j = 0; j < nn; j++) {
			LLVMValueRef args[3] = { a[i], b[j], acc[i * nn + j] };
			acc[i * nn + j] = et == E->i32
			                  ? LLVMBuildAdd(E->b, acc[i * nn + j], LLVMBuildMul(E->b, a[i], b[j], ""), "")
			                  : blk_emit_intrinsic(E, "llvm.fma", &t, 1, args, 3);
		}
}

/* One k step of the outer product; k is a constant or a loop iv. */
static void k_step(Emit *E, const DotCtx *D, LLVMValueRef k, LLVMValueRef *acc)
{
	const BlkLayout *l = D->l;
	int nm = blk_layout_regs_along(l, 0), nn = blk_layout_regs_along(l, 1);
	LLVMValueRef a[64], b[64];
	LLVMValueRef ka = LLVMBuildMul(E->b, k, blk_emit_i32(E, D->lda * 4), "");
	LLVMValueRef kb = LLVMBuildMul(E->b, k, blk_emit_i32(E, D->ldb * 4), "");
	LLVMValueRef pa = LLVMBuildGEP2(E->b, E->i8, D->pa, &ka, 1, "");
	LLVMValueRef pb = LLVMBuildGEP2(E->b, E->i8, D->pb, &kb, 1, "");
	for (int r = 0; r < nm; r += l->spt[0])
		load_piece(E, D->et, pa, (int64_t)blk_layout_coord(l, 0, r, 0) * 4, l->spt[0], &a[r]);
	for (int r = 0; r < nn; r += l->spt[1])
		load_piece(E, D->et, pb, (int64_t)blk_layout_coord(l, 1, r, 0) * 4, l->spt[1], &b[r]);
	outer(E, D->et, l, a, b, acc);
}

/* local_load of one k step of a SIMT dot's operand (fma_a: A's [M, 1]
 * column of its k-major slot; fma_b: B's [1, N] row): the thread's
 * spt-wide pieces along the long dim, one vector load each, as k_step
 * loads them. */
void blk_emit_fma_load(Emit *E, const BlkOp *op)
{
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	int d = l->sfrag == BLK_FRAG_A ? 0 : 1;
	LLVMTypeRef et = op->results[0]->type.dtype == BLK_I32 ? E->i32 : E->f32;
	LLVMValueRef t = LLVMBuildMul(E->b, blk_emit_thread_coord(E, l, d), blk_emit_i32(E, l->spt[d] * 4), "");
	LLVMValueRef p = thread_ptr(E, &blk_emit_val(E, op->operands[0])->ref, t);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	for (int r = 0; r < blk_layout_regs_along(l, d); r += l->spt[d])
		load_piece(E, et, p, (int64_t)blk_layout_coord(l, d, r, 0) * 4, l->spt[d], &ev->t.r[r]);
	blk_emit_bind(E, op->results[0], ev);
}

/* k in [0, K) as an LLVM loop whose phis carry the accumulators. */
static void k_loop(Emit *E, const DotCtx *D, LLVMValueRef *acc, int nacc)
{
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(E->cx, E->fn, "dot.k");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "dot.done");
	LLVMBuildBr(E->b, loop);
	LLVMPositionBuilderAtEnd(E->b, loop);
	LLVMValueRef k = LLVMBuildPhi(E->b, E->i32, "k");
	LLVMValueRef *phi = BLK_NEW_N(E->c->a, LLVMValueRef, nacc);
	for (int i = 0; i < nacc; i++) {
		phi[i] = LLVMBuildPhi(E->b, D->et, "");
		LLVMAddIncoming(phi[i], &acc[i], &pre, 1);
		acc[i] = phi[i];
	}
	k_step(E, D, k, acc);
	LLVMValueRef nk = LLVMBuildAdd(E->b, k, blk_emit_i32(E, 1), "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
	LLVMValueRef zero = blk_emit_i32(E, 0);
	LLVMAddIncoming(k, &zero, &pre, 1);
	LLVMAddIncoming(k, &nk, &latch, 1);
	for (int i = 0; i < nacc; i++)
		LLVMAddIncoming(phi[i], &acc[i], &latch, 1);
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, nk, blk_emit_i32(E, D->K), ""), loop, done);
	LLVMPositionBuilderAtEnd(E->b, done);
}

/* The 8x8 micro-tiles need ~120 registers; capping at 128 keeps two CTAs
 * of up to 256 threads per SM, so one CTA's barrier wait hides behind the
 * other's FMAs (the prefetched next slab costs 16 registers more, which
 * ptxas would otherwise take: 145 at 128x128x16, one CTA per SM).  A
 * larger micro-tile (8x16: 128 accumulators) cannot live in 128: capped,
 * ptxas spilled 3.4 KB a thread at 128x256x16; it keeps one CTA. */
static void two_ctas(Emit *E, int nacc)
{
	if (E->min_ctas_set || E->c->nthreads > SIMT_TWO_CTA_THREADS || nacc > SIMT_TWO_CTA_ACC)
		return;
	blk_emit_annotation(E, "minctasm", 2);
	E->min_ctas_set = true;
}

/* The result's registers, starting as the accumulator's. */
static EVal *start_acc(Emit *E, const BlkOp *op, const BlkLayout *l)
{
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	const ETile *acc = blk_emit_tile(E, op->operands[2]);
	for (int i = 0; i < blk_layout_nregs(l); i++)
		ev->t.r[i] = acc->r[i];
	return ev;
}

void blk_emit_dot(Emit *E, const BlkOp *op)
{
	DotCtx D = { .l = blk_emit_layout(E, op->results[0]),
	             .et = op->results[0]->type.dtype == BLK_I32 ? E->i32 : E->f32 };
	if (D.l->mma) {
		blk_emit_mma(E, op);
		return;
	}
	if (D.l->wg) {
		blk_emit_wgmma(E, op);
		return;
	}
	if (op->operands[0]->type.kind == BLK_TYPE_TILE) { /* one k step, loaded by local_load */
		EVal *ev = start_acc(E, op, D.l);
		two_ctas(E, blk_layout_nregs(D.l));
		outer(E, D.et, D.l, blk_emit_tile(E, op->operands[0])->r, blk_emit_tile(E, op->operands[1])->r, ev->t.r);
		blk_emit_bind(E, op->results[0], ev);
		return;
	}
	const ERef *ra = &blk_emit_val(E, op->operands[0])->ref, *rb = &blk_emit_val(E, op->operands[1])->ref;
	D.M = (int)blk_lower_dim(op->operands[0]->type.dims[0]);
	D.K = (int)blk_lower_dim(op->operands[0]->type.dims[1]);
	D.N = (int)blk_lower_dim(op->results[0]->type.dims[1]);
	D.lda = ra->stride[1], D.ldb = rb->stride[0];
	if (ra->stride[0] != 1 || rb->stride[1] != 1) /* dot_stage.c and pipeline.c lay them out so */
		blk_die("lower: emit: a SIMT dot reads A k-major and B row-major from shared memory");
	int nacc = blk_layout_nregs(D.l);
	if (blk_layout_regs_along(D.l, 0) > 64 || blk_layout_regs_along(D.l, 1) > 64) {
		blk_error(E->c->d, op->loc, "dot of %dx%d is too large for %d threads", D.M, D.N,
		          E->c->nthreads);
		E->failed = true;
		return;
	}
	LLVMValueRef tm = LLVMBuildMul(E->b, blk_emit_thread_coord(E, D.l, 0), blk_emit_i32(E, D.l->spt[0] * 4), "");
	LLVMValueRef tn = LLVMBuildMul(E->b, blk_emit_thread_coord(E, D.l, 1), blk_emit_i32(E, D.l->spt[1] * 4), "");
	D.pa = thread_ptr(E, ra, tm);
	D.pb = thread_ptr(E, rb, tn);
	two_ctas(E, nacc);
	EVal *ev = start_acc(E, op, D.l);
	if (blk_lower_simt_unrolled(D.K, nacc))
		for (int k = 0; k < D.K; k++)
			k_step(E, &D, blk_emit_i32(E, k), ev->t.r);
	else
		k_loop(E, &D, ev->t.r, nacc);
	blk_emit_bind(E, op->results[0], ev);
}
