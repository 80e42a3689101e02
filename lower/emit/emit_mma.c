/* emit_mma.c - the tensor-core ops of the GPU level (mma_steps.c makes
 * them): mma.sync m16n8k16 on f16/bf16 fragments, f32 accumulator (sm_80
 * and up), and m16n8k32 on 8-bit ones: i8/u8 with an i32 accumulator
 * (sm_80), fp8 with an f32 one (sm_89).  A k32 step of bytes is laid out
 * as a k16 step of 16-bit pairs (ir/layout.h), so one ldmatrix addressing
 * serves both, in bytes.
 *
 *   local_load: a shared [R, C] Ref into fragments, one ldmatrix.x4 per
 *     four 8x8 matrices.  A (mma_a, k-contiguous rows): for m16 instance i
 *     (row reps 2i, 2i+1 of the accumulator) lane L addresses row L%8 of
 *     matrix L/8 -- rep 2i / 2i+1 by bit 0, k 0 / 8 by bit 1; a 16-bit A
 *     stored m-contiguous ([K][M] rows: a transposed view's slab as it
 *     lies) the same matrices by ldmatrix.trans from its k rows.  B (mma_b):
 *     for each pair of n8 blocks, matrix L/8 is k 0 / 8 by bit 0 and block
 *     2p / 2p+1 by bit 1; ldmatrix.trans where B is n-contiguous ([K][N]
 *     rows), plain where it is k-contiguous (a trans_view of [N][K]).
 *   convert_layout mma -> mma_a: an accumulator over one warp column is
 *     already in A's fragment order (its n8 blocks 2ks, 2ks+1 are step
 *     ks's k halves, its row reps 2i, 2i+1 the row halves): pairs of its
 *     registers packed, nothing moves.
 *   extract_slice: a run of the fragment registers (whole k16 steps).
 *   dot on fragments: per k16 step, one mma.sync per (m16, n8) pair into
 *     the accumulator registers (layout.h: mma<>).
 * The tensor core sums k16 products at once, so the accumulation order
 * differs from the interpreter's fmaf chain.
 */
#include "emit.h"

#include <stdio.h>
#include <string.h>

static LLVMValueRef gep(Emit *E, LLVMValueRef p, int64_t bytes)
{
	LLVMValueRef o = blk_emit_i32(E, bytes);
	return bytes ? LLVMBuildGEP2(E->b, E->i8, p, &o, 1, "") : p;
}

/* A call of intrinsic `name` (overloaded on tys), each argument bitcast
 * to the parameter's type (i32 <-> <2 x half>). */
static LLVMValueRef call_cast(Emit *E, const char *name, LLVMTypeRef *tys, int ntys,
                              LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (id == 0)
		blk_die("lower: LLVM 19 has no intrinsic %s", name);
	LLVMTypeRef ft = LLVMIntrinsicGetType(E->cx, id, tys, (size_t)ntys);
	LLVMTypeRef pt[16];
	LLVMGetParamTypes(ft, pt);
	for (int i = 0; i < nargs; i++)
		if (LLVMTypeOf(args[i]) != pt[i])
			args[i] = LLVMBuildBitCast(E->b, args[i], pt[i], "");
	return blk_emit_intrinsic(E, name, tys, ntys, args, nargs);
}

/* ldmatrix.x4 at p (shared): 4 x i32 (each two 16-bit elements); the
 * intrinsic is overloaded on the pointer (.p3). */
static void ldmatrix(Emit *E, LLVMValueRef p, bool trans, LLVMValueRef *out)
{
	LLVMValueRef v = call_cast(E, trans ? "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
	                                    : "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16",
	                           &E->p3, 1, &p, 1);
	for (int i = 0; i < 4; i++)
		out[i] = LLVMBuildExtractValue(E->b, v, (unsigned)i, "");
}

/* Two 16-bit registers as the i32 an mma.sync operand register holds. */
static LLVMValueRef pack2(Emit *E, LLVMValueRef lo, LLVMValueRef hi)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(lo), 2);
	LLVMValueRef v = LLVMBuildInsertElement(E->b, LLVMGetUndef(vt), lo, blk_emit_i32(E, 0), "");
	v = LLVMBuildInsertElement(E->b, v, hi, blk_emit_i32(E, 1), "");
	return LLVMBuildBitCast(E->b, v, E->i32, "");
}

/* The lane's ldmatrix row: lane L = 8q + i, q = 2 q1 + q0; w: the warp's
 * index along M (wm) or N (wn) of the grid. */
typedef struct Lane {
	LLVMValueRef i8, q0, q1, wm, wn;
} Lane;

static Lane lane_of(Emit *E, const BlkLayout *l)
{
	int wn = blk_layout_warps_n(l);
	LLVMValueRef lane = LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, 31), "");
	LLVMValueRef w = LLVMBuildLShr(E->b, E->tid, blk_emit_i32(E, 5), "");
	Lane L;
	L.wn = LLVMBuildAnd(E->b, w, blk_emit_i32(E, wn - 1), "");
	L.wm = LLVMBuildLShr(E->b, w, blk_emit_i32(E, blk_layout_log2(wn)), "");
	L.i8 = LLVMBuildAnd(E->b, lane, blk_emit_i32(E, 7), "");
	L.q0 = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, lane, blk_emit_i32(E, 3), ""), blk_emit_i32(E, 1), "");
	L.q1 = LLVMBuildLShr(E->b, lane, blk_emit_i32(E, 4), "");
	return L;
}

static LLVMValueRef mul(Emit *E, LLVMValueRef x, int64_t k)
{
	return LLVMBuildMul(E->b, x, blk_emit_i32(E, k), "");
}

void blk_emit_local_load(Emit *E, const BlkOp *op)
{
	const ERef *r = &blk_emit_val(E, op->operands[0])->ref;
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	if (l->sfrag) { /* a SIMT dot's k step (emit_dot.c) */
		blk_emit_fma_load(E, op);
		return;
	}
	int wm = l->thr[0] / 8, wn = l->thr[1] / 4;
	Lane L = lane_of(E, l);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	LLVMValueRef *out = ev->t.r;
	int64_t kb;
	LLVMValueRef t;
	/* in bytes: a k step is 32 bytes of a row (k16 of 16-bit, k32 of 8-bit
	 * types), an ldmatrix row 16 bytes, so the addressing is one for both */
	int es = blk_dtype_size(op->results[0]->type.dtype);
	if (l->frag == BLK_FRAG_A && r->stride[0] == 1) { /* [K][M] in memory: 16-bit, ldmatrix.trans */
		/* matrix L/8 of the lane: rep 2i / 2i+1 by bit 0 (m), k 0 / 8 by
		 * bit 1; its row i is k row q1 * 8 + i, 8 m from the rep's start */
		int64_t ld = r->stride[1] * es, mi_n = l->shape[0] / (16 * wm), nks = l->shape[1] / l->kstep;
		LLVMValueRef m0 = LLVMBuildAdd(E->b, mul(E, L.wm, 8), mul(E, L.q0, 8 * wm), "");
		t = LLVMBuildAdd(E->b, mul(E, LLVMBuildAdd(E->b, mul(E, L.q1, 8), L.i8, ""), ld), mul(E, m0, es), "");
		LLVMValueRef p = blk_emit_shared_ptr(E, r, t, &kb);
		for (int ks = 0; ks < nks; ks++)
			for (int mi = 0; mi < mi_n; mi++)
				ldmatrix(E, gep(E, p, kb + ks * l->kstep * ld + mi * 16 * wm * es), true,
				         &out[(ks * mi_n + mi) * 4]);
	} else if (l->frag == BLK_FRAG_A) { /* [M, K], rows of k */
		int64_t ld = r->stride[0] * es, mi_n = l->shape[0] / (16 * wm), nks = l->shape[1] / l->kstep;
		/* row 8 wm-index + i + q0 * 8wm (rep 2mi or 2mi+1), byte column q1 * 16 */
		LLVMValueRef row = LLVMBuildAdd(E->b, LLVMBuildAdd(E->b, mul(E, L.wm, 8), L.i8, ""),
		                                mul(E, L.q0, 8 * wm), "");
		t = LLVMBuildAdd(E->b, mul(E, row, ld), mul(E, L.q1, 16), "");
		LLVMValueRef p = blk_emit_shared_ptr(E, r, t, &kb);
		for (int ks = 0; ks < nks; ks++)
			for (int mi = 0; mi < mi_n; mi++)
				ldmatrix(E, gep(E, p, kb + mi * 16 * wm * ld + ks * 32), false,
				         &out[(ks * mi_n + mi) * 4]);
	} else { /* [K, N] */
		bool kmajor = r->stride[0] == 1; /* [N][K] in memory: plain ldmatrix (always for 8 bits) */
		int64_t ld = (kmajor ? r->stride[1] : r->stride[0]) * es, nj = l->shape[1] / (8 * wn),
		        nks = l->shape[0] / l->kstep;
		/* n8 block 2jp or 2jp+1 by q1 (column 8 wn-index + q1 * 8wn), k
		 * half by q0: k row q0 * 8 + i, or byte column q0 * 16 of row n + i */
		LLVMValueRef n0 = LLVMBuildAdd(E->b, mul(E, L.wn, 8), mul(E, L.q1, 8 * wn), "");
		int64_t ks_b, jp_b;
		if (kmajor) {
			t = LLVMBuildAdd(E->b, mul(E, LLVMBuildAdd(E->b, n0, L.i8, ""), ld), mul(E, L.q0, 16), "");
			ks_b = 32, jp_b = 16 * wn * ld;
		} else {
			t = LLVMBuildAdd(E->b, mul(E, LLVMBuildAdd(E->b, mul(E, L.q0, 8), L.i8, ""), ld), mul(E, n0, es), "");
			ks_b = 16 * ld, jp_b = 16 * wn * es;
		}
		LLVMValueRef p = blk_emit_shared_ptr(E, r, t, &kb);
		for (int ks = 0; ks < nks; ks++)
			for (int jp = 0; jp < nj / 2; jp++)
				ldmatrix(E, gep(E, p, kb + ks * ks_b + jp * jp_b), !kmajor, &out[(ks * nj + jp * 2) * 2]);
	}
	blk_emit_bind(E, op->results[0], ev);
}

void blk_emit_frag_convert(Emit *E, const BlkOp *op)
{
	const ETile *a = blk_emit_tile(E, op->operands[0]);
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	int nn = blk_layout_regs_along(a->l, 1), mi_n = l->shape[0] / (2 * l->thr[0]), nks = l->shape[1] / 16;
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	for (int ks = 0; ks < nks; ks++)
		for (int mi = 0; mi < mi_n; mi++)
			for (int h = 0; h < 2; h++)     /* k half: n8 block 2ks + h */
				for (int r = 0; r < 2; r++) { /* row half: rep 2mi + r */
					int at = (2 * mi + r) * nn + 2 * (2 * ks + h);
					ev->t.r[(ks * mi_n + mi) * 4 + 2 * h + r] = pack2(E, a->r[at], a->r[at + 1]);
				}
	blk_emit_bind(E, op->results[0], ev);
}

void blk_emit_extract_slice(Emit *E, const BlkOp *op)
{
	const ETile *a = blk_emit_tile(E, op->operands[0]);
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	if (l->wg) { /* wgmma columns: registers (h, 2j + c), n8 blocks from start/8 */
		int na = blk_layout_regs_along(a->l, 1), nr = blk_layout_regs_along(l, 1);
		int first = (int)(blk_op_int(op, "start", 0) / 4), rows = blk_layout_regs_along(l, 0);
		EVal *ev = BLK_NEW(E->c->a, EVal);
		ev->t = blk_emit_new_tile(E, l);
		for (int r0 = 0; r0 < rows; r0++)
			for (int r1 = 0; r1 < nr; r1++)
				ev->t.r[r0 * nr + r1] = a->r[r0 * na + first + r1];
		blk_emit_bind(E, op->results[0], ev);
		return;
	}
	int n = blk_layout_nregs(l);
	/* registers are k16-step major: step s starts at s * (registers a step) */
	int ks = l->kstep;
	int64_t first = blk_op_int(op, "start", 0) / ks * (n / (l->shape[l->frag == BLK_FRAG_A ? 1 : 0] / ks));
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	for (int i = 0; i < n; i++)
		ev->t.r[i] = a->r[first + i];
	blk_emit_bind(E, op->results[0], ev);
}

/* fp8 mma.sync: PTX 8.4, no LLVM 19 intrinsic, so inline PTX (no side
 * effects: the scheduler may move it like the intrinsic). */
static LLVMValueRef mma_fp8(Emit *E, BlkDType at, BlkDType bt, LLVMValueRef *args)
{
	char text[160];
	snprintf(text, sizeof text,
	         "mma.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
	         "{$10,$11,$12,$13};",
	         at == BLK_F8E4M3 ? "e4m3" : "e5m2", bt == BLK_F8E4M3 ? "e4m3" : "e5m2");
	LLVMTypeRef f4[4] = { E->f32, E->f32, E->f32, E->f32 };
	return blk_emit_asm(E, LLVMStructTypeInContext(E->cx, f4, 4, false), args, 10, text,
	                "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", false);
}

/* The mma.sync intrinsic for a dot of at x bt: m16n8k16 (f16, bf16; f32
 * sums) or m16n8k32 (i8/u8 in any mix; exact i32 sums, wrapping). */
static const char *mma_intrinsic(BlkDType at, BlkDType bt)
{
	if (at == BLK_BF16)
		return "llvm.nvvm.mma.m16n8k16.row.col.bf16";
	if (at == BLK_F16)
		return "llvm.nvvm.mma.m16n8k16.row.col.f32.f32";
	if (at == BLK_I8)
		return bt == BLK_I8 ? "llvm.nvvm.mma.m16n8k32.row.col.s8" : "llvm.nvvm.mma.m16n8k32.row.col.s8.u8";
	return bt == BLK_U8 ? "llvm.nvvm.mma.m16n8k32.row.col.u8" : "llvm.nvvm.mma.m16n8k32.row.col.u8.s8";
}

/* dot on fragments: per k step, mma.sync for each (m16, n8) pair. */
void blk_emit_mma(Emit *E, const BlkOp *op)
{
	if (!blk_emit_layout(E, op->operands[0])->frag) /* mma_steps.c splits every one */
		blk_die("lower: emit: a tensor-core dot not split into k steps");
	const ETile *fa = blk_emit_tile(E, op->operands[0]), *fb = blk_emit_tile(E, op->operands[1]);
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	BlkDType at = op->operands[0]->type.dtype, bt = op->operands[1]->type.dtype;
	bool fp8 = blk_dtype_is_fp8(at);
	const char *mma = fp8 ? NULL : mma_intrinsic(at, bt);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	int nacc = blk_layout_nregs(l), nn = blk_layout_regs_along(l, 1);
	int mi_n = blk_layout_regs_along(l, 0) / 2, nj_n = nn / 2; /* m16 instances, n8 blocks */
	const ETile *acc = blk_emit_tile(E, op->operands[2]);
	for (int r = 0; r < nacc; r++)
		ev->t.r[r] = acc->r[r];
	int nks = fa->l->shape[1] / fa->l->kstep;
	for (int ks = 0; ks < nks; ks++) {
		LLVMValueRef *af = &fa->r[ks * mi_n * 4], *bf = &fb->r[ks * nj_n * 2];
		for (int mi = 0; mi < mi_n; mi++)
			for (int j = 0; j < nj_n; j++) {
				/* C registers: rows 2mi, 2mi+1 x columns 2j, 2j+1 */
				int c[4] = { (2 * mi) * nn + 2 * j, (2 * mi) * nn + 2 * j + 1,
				             (2 * mi + 1) * nn + 2 * j, (2 * mi + 1) * nn + 2 * j + 1 };
				LLVMValueRef args[10] = { af[4 * mi], af[4 * mi + 1], af[4 * mi + 2], af[4 * mi + 3],
				                          bf[2 * j], bf[2 * j + 1],
				                          ev->t.r[c[0]], ev->t.r[c[1]], ev->t.r[c[2]], ev->t.r[c[3]] };
				LLVMValueRef d = fp8 ? mma_fp8(E, at, bt, args) : call_cast(E, mma, NULL, 0, args, 10);
				for (int k = 0; k < 4; k++)
					ev->t.r[c[k]] = LLVMBuildExtractValue(E->b, d, (unsigned)k, "");
			}
	}
	blk_emit_bind(E, op->results[0], ev);
}
