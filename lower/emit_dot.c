/* emit_dot.c - dot on the SIMT path: exact f32, register micro-tiles.
 *
 * dot(a[M,K], b[K,N], acc) with the result in the dot layout (layout.h):
 *   1. stage: every thread writes its registers of a and b, converted to
 *      f32, into this dot's staging buffer: A K-major (As[k][m], rows of
 *      pad(M)+4 floats: the transposing stores of a warp hit distinct
 *      banks), B row-major (Bs[k][n], float4 stores) -- or, for a b given
 *      as [N, K] (attr b_trans, `x @ w.T`), by transposing stores into rows
 *      of pad(N)+4, so w.T costs no conversion through shared memory;
 *   2. one barrier;
 *   3. for k ascending (unrolled when K <= 64): each thread loads its
 *      spt-wide column pieces of As[k] and row pieces of Bs[k] with
 *      128-bit shared loads (ld.shared.v4.f32; the As reads of a warp are
 *      broadcasts) and does the outer product into its micro-tile with
 *      llvm.fma.f32, so every element accumulates in k order exactly like
 *      the interpreter's fmaf loop.
 * There are two staging buffers per dot, used alternately: the next
 * execution writes the other one, and the barrier of the execution in
 * between orders it after this one's reads -- one barrier per K slab.
 */
#include "emit.h"

typedef struct DotCtx {
	const BlkLayout *l;
	int M, K, N, PM, PN, LDB; /* LDB: Bs's row, PN (+4 when B is staged transposed) */
	int64_t aoff, boff;  /* byte offsets of As and Bs in buffer 0 */
	LLVMValueRef phb;    /* i32: 0, or the bytes of one buffer pair for buffer 1 */
	LLVMValueRef pa, pb; /* the thread's first As / Bs element in this buffer */
} DotCtx;

/* The buffer's element at byte `off` + (per-thread i32 `t`), in this
 * execution's buffer: the invariant part first, so LICM hoists it and
 * each slab adds one offset, and per-register constants fold into the
 * st/ld.shared immediate. */
static LLVMValueRef thread_ptr(Emit *E, const DotCtx *D, int64_t off, LLVMValueRef t)
{
	LLVMValueRef inv = emit_smem_ptr(E, LLVMBuildAdd(E->b, t, emit_i32(E, off), ""));
	return LLVMBuildGEP2(E->b, E->i8, inv, (LLVMValueRef *)&D->phb, 1, "");
}

static LLVMValueRef const_gep(Emit *E, LLVMValueRef p, int64_t bytes)
{
	LLVMValueRef o = emit_i32(E, bytes);
	return bytes ? LLVMBuildGEP2(E->b, E->i8, p, &o, 1, "") : p;
}

/* Floats per st.shared along dim 1 of a row-major buffer: consecutive
 * registers of a thread there are consecutive floats; alignment holds in
 * both buffers when ld, the offset and the pair's size are multiples. */
static int stage_vec(const DotCtx *D, const BlkLayout *l, int ld, bool kmajor, int64_t off)
{
	int64_t pair = (int64_t)D->K * (D->PM + 4 + D->LDB);
	int v = 4;
	while (v > 1 && (kmajor || l->spt[1] % v || ld % v || off % (4 * v) || pair % v))
		v /= 2;
	return v;
}

/* Writes operand t (coordinates (row, col)) at byte offset `off` of the
 * buffer with element (i, j) at (kmajor ? j * ld + i : i * ld + j):
 * one per-thread pointer, constant offsets per register. */
static void stage(Emit *E, const DotCtx *D, const ETile *t, BlkDType dt, int64_t off, int ld,
                  bool kmajor)
{
	const BlkLayout *l = t->l;
	int n = blk_layout_nregs(l), rd[2], kdim = kmajor ? 1 : 0, odim = 1 - kdim;
	int vec = stage_vec(D, l, ld, kmajor, off);
	LLVMBasicBlockRef cont = emit_begin_if(E, emit_owner(E, l));
	LLVMValueRef tk = LLVMBuildMul(E->b, emit_thread_coord(E, l, kdim), emit_i32(E, l->spt[kdim]), "");
	LLVMValueRef to = LLVMBuildMul(E->b, emit_thread_coord(E, l, odim), emit_i32(E, l->spt[odim]), "");
	LLVMValueRef tt = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, tk, emit_i32(E, ld), ""), to, "");
	LLVMValueRef base = thread_ptr(E, D, off, LLVMBuildMul(E->b, tt, emit_i32(E, 4), ""));
	for (int r = 0; r < n; r += vec) {
		blk_layout_reg_split(l, r, rd);
		int ck = blk_layout_coord(l, kdim, rd[kdim], 0), co = blk_layout_coord(l, odim, rd[odim], 0);
		LLVMValueRef p = const_gep(E, base, ((int64_t)ck * ld + co) * 4);
		LLVMBasicBlockRef in = NULL;
		if (l->pad[kdim] != D->K)
			in = emit_begin_if(E, LLVMBuildICmp(E->b, LLVMIntULT, LLVMBuildAdd(E->b, tk, emit_i32(E, ck), ""),
			                                    emit_i32(E, D->K), ""));
		LLVMValueRef x = emit_to_f32(E, t->r[r], dt);
		if (vec > 1) {
			x = LLVMGetUndef(LLVMVectorType(E->f32, (unsigned)vec));
			for (int i = 0; i < vec; i++)
				x = LLVMBuildInsertElement(E->b, x, emit_to_f32(E, t->r[r + i], dt), emit_i32(E, i), "");
		}
		LLVMSetAlignment(LLVMBuildStore(E->b, x, p), (unsigned)(4 * vec));
		emit_end_if(E, in);
	}
	emit_end_if(E, cont);
}

/* spt consecutive floats at byte offset `at` from p, as one vector load. */
static void load_piece(Emit *E, LLVMValueRef p, int64_t at, int spt, LLVMValueRef *out)
{
	LLVMValueRef o = emit_i32(E, at);
	LLVMValueRef q = LLVMBuildGEP2(E->b, E->i8, p, &o, 1, "");
	LLVMTypeRef vt = LLVMVectorType(E->f32, (unsigned)spt);
	LLVMValueRef v = LLVMBuildLoad2(E->b, vt, q, "");
	LLVMSetAlignment(v, (unsigned)(spt * 4));
	for (int i = 0; i < spt; i++)
		out[i] = LLVMBuildExtractElement(E->b, v, emit_i32(E, i), "");
}

/* One k step of the outer product; k is a constant or a loop iv. */
static void k_step(Emit *E, const DotCtx *D, LLVMValueRef k, LLVMValueRef *acc)
{
	const BlkLayout *l = D->l;
	int nm = blk_layout_regs_along(l, 0), nn = blk_layout_regs_along(l, 1);
	LLVMValueRef a[64], b[64];
	LLVMValueRef ka = LLVMBuildMul(E->b, k, emit_i32(E, (D->PM + 4) * 4), "");
	LLVMValueRef kb = LLVMBuildMul(E->b, k, emit_i32(E, D->LDB * 4), "");
	LLVMValueRef pa = LLVMBuildGEP2(E->b, E->i8, D->pa, &ka, 1, "");
	LLVMValueRef pb = LLVMBuildGEP2(E->b, E->i8, D->pb, &kb, 1, "");
	for (int r = 0; r < nm; r += l->spt[0])
		load_piece(E, pa, (int64_t)blk_layout_coord(l, 0, r, 0) * 4, l->spt[0], &a[r]);
	for (int r = 0; r < nn; r += l->spt[1])
		load_piece(E, pb, (int64_t)blk_layout_coord(l, 1, r, 0) * 4, l->spt[1], &b[r]);
	LLVMTypeRef t = E->f32;
	for (int i = 0; i < nm; i++)
		for (int j = 0; j < nn; j++) {
			LLVMValueRef args[3] = { a[i], b[j], acc[i * nn + j] };
			acc[i * nn + j] = emit_intrinsic(E, "llvm.fma", &t, 1, args, 3);
		}
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
		phi[i] = LLVMBuildPhi(E->b, E->f32, "");
		LLVMAddIncoming(phi[i], &acc[i], &pre, 1);
		acc[i] = phi[i];
	}
	k_step(E, D, k, acc);
	LLVMValueRef nk = LLVMBuildAdd(E->b, k, emit_i32(E, 1), "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
	LLVMValueRef zero = emit_i32(E, 0);
	LLVMAddIncoming(k, &zero, &pre, 1);
	LLVMAddIncoming(k, &nk, &latch, 1);
	for (int i = 0; i < nacc; i++)
		LLVMAddIncoming(phi[i], &acc[i], &latch, 1);
	LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, nk, emit_i32(E, D->K), ""), loop, done);
	LLVMPositionBuilderAtEnd(E->b, done);
}

/* The 8x8 micro-tiles need ~120 registers; capping at 128 keeps two CTAs
 * of up to 256 threads per SM, so one CTA's barrier wait hides behind the
 * other's FMAs (the prefetched next slab costs 16 registers more, which
 * ptxas would otherwise take: 145 at 128x128x16, one CTA per SM). */
static void two_ctas(Emit *E)
{
	if (E->min_ctas_set || E->c->nthreads > 256)
		return;
	emit_annotation(E, "minctasm", 2);
	E->min_ctas_set = true;
}

void emit_dot(Emit *E, const BlkOp *op)
{
	const BlkValue *av = op->operands[0], *bv = op->operands[1];
	DotCtx D = { .l = emit_layout(E, op->results[0]) };
	if (D.l->mma) {
		emit_mma(E, op);
		return;
	}
	bool bt = blk_op_int(op, "b_trans", 0) != 0; /* b is [N, K] (dot_engine.c) */
	D.M = (int)blk_lower_dim(av->type.dims[0]);
	D.K = (int)blk_lower_dim(av->type.dims[1]);
	D.N = (int)blk_lower_dim(op->results[0]->type.dims[1]);
	D.PM = blk_pow2ceil(D.M), D.PN = blk_pow2ceil(D.N);
	D.LDB = D.PN + (bt ? 4 : 0);
	int nacc = blk_layout_nregs(D.l);
	if (blk_layout_regs_along(D.l, 0) > 64 || blk_layout_regs_along(D.l, 1) > 64) {
		blk_error(E->c->d, op->loc, "dot of %dx%d is too large for %d threads", D.M, D.N,
		          E->c->nthreads);
		E->failed = true;
		return;
	}
	/* 1. the phase picks this execution's staging buffer */
	int64_t off = emit_alloc_offset(op->operands[3]);
	LLVMValueRef phase = emit_alloca(E, E->i32);
	LLVMBuildStore(E->entry, emit_i32(E, 0), phase);
	LLVMValueRef ph = LLVMBuildLoad2(E->b, E->i32, phase, "phase");
	D.phb = LLVMBuildMul(E->b, ph, emit_i32(E, (int64_t)blk_lower_dot_stage_bytes(op)), "");
	D.aoff = off;
	D.boff = off + (int64_t)D.K * (D.PM + 4) * 4;
	stage(E, &D, emit_tile(E, av), av->type.dtype, D.aoff, D.PM + 4, true);
	stage(E, &D, emit_tile(E, bv), bv->type.dtype, D.boff, D.LDB, bt);
	/* 2. */
	emit_barrier(E);
	/* 3. */
	LLVMValueRef tm = LLVMBuildMul(E->b, emit_thread_coord(E, D.l, 0), emit_i32(E, D.l->spt[0] * 4), "");
	LLVMValueRef tn = LLVMBuildMul(E->b, emit_thread_coord(E, D.l, 1), emit_i32(E, D.l->spt[1] * 4), "");
	D.pa = thread_ptr(E, &D, D.aoff, tm);
	D.pb = thread_ptr(E, &D, D.boff, tn);
	two_ctas(E);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = emit_new_tile(E, D.l);
	const ETile *acc = op->noperands > 2 ? emit_tile(E, op->operands[2]) : NULL;
	for (int i = 0; i < nacc; i++)
		ev->t.r[i] = acc ? acc->r[i] : LLVMConstReal(E->f32, 0);
	if (D.K <= 64)
		for (int k = 0; k < D.K; k++)
			k_step(E, &D, emit_i32(E, k), ev->t.r);
	else
		k_loop(E, &D, ev->t.r, nacc);
	LLVMBuildStore(E->b, LLVMBuildXor(E->b, ph, emit_i32(E, 1), ""), phase);
	emit_bind(E, op->results[0], ev);
}
