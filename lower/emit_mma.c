/* emit_mma.c - dot on tensor cores: mma.sync m16n8k16, f16/bf16 operands,
 * f32 accumulator (sm_80 and up).
 *
 * dot(a[M,K], b[K,N], acc) with the result in the mma layout (layout.h:
 * a wm x wn warp grid; warp (wi, wj), lane l = 4g + t holds rows
 * 8wi + g + 8wm*i, columns 8wj + 8wn*j + 2t + {0,1}):
 *   1. stage: every thread writes its registers of a and b, unconverted,
 *      into this dot's staging buffer: A row-major [M][K+8], B row-major
 *      [K][N+8] (16-byte stores where the operand layout holds 8
 *      consecutive elements); the +8 pad puts the 8 rows an ldmatrix phase
 *      reads on distinct 16-byte bank groups;
 *   2. one barrier;
 *   3. per k16 step: the A fragment of each m16 instance i (rows of row
 *      reps 2i and 2i+1) with one ldmatrix.x4 (lane L addresses row
 *      L%8 of matrix L/8: reps 2i / 2i+1 by bit 0, k 0 / 8 by bit 1), the B
 *      fragments of each pair of n8 blocks with one ldmatrix.x4.trans (B is
 *      k-major in shared memory: matrix L/8 is k 0 / 8 by bit 0, n block
 *      2p / 2p+1 by bit 1), then one mma.sync per (m16, n8) pair.
 * Two staging buffers used alternately, as on the SIMT path (emit_dot.c):
 * one barrier per execution.  The accumulation order differs from the
 * interpreter's fmaf chain (the tensor core sums k16 products at once).
 */
#include "emit.h"

#include <string.h>

typedef struct MmaCtx {
	int M, K, N, wm, wn, lda, ldb;
	LLVMValueRef phb; /* i32: 0, or the bytes of one buffer pair for buffer 1 */
} MmaCtx;

static LLVMValueRef gep(Emit *E, LLVMValueRef p, int64_t bytes)
{
	LLVMValueRef o = emit_i32(E, bytes);
	return bytes ? LLVMBuildGEP2(E->b, E->i8, p, &o, 1, "") : p;
}

/* smem + off + t (per-thread, i32 bytes) + this execution's slot: the
 * invariant part first so LICM hoists it. */
static LLVMValueRef buf_ptr(Emit *E, const MmaCtx *D, LLVMValueRef off, LLVMValueRef t)
{
	LLVMValueRef inv = emit_smem_ptr(E, LLVMBuildAdd(E->b, t, off, ""));
	return LLVMBuildGEP2(E->b, E->i8, inv, (LLVMValueRef *)&D->phb, 1, "");
}

/* Writes tile t ([rows, cols] of 16-bit elements) row-major with leading
 * dimension ld at byte offset off of this execution's buffer. */
static void stage(Emit *E, const MmaCtx *D, const ETile *t, BlkDType dt, int64_t off, int ld)
{
	const BlkLayout *l = t->l;
	int n = blk_layout_nregs(l), rd[2], vec = 8;
	while (l->spt[1] % vec)
		vec /= 2;
	LLVMBasicBlockRef cont = emit_begin_if(E, emit_owner(E, l));
	LLVMValueRef tr = LLVMBuildMul(E->b, emit_thread_coord(E, l, 0), emit_i32(E, l->spt[0]), "");
	LLVMValueRef tc = LLVMBuildMul(E->b, emit_thread_coord(E, l, 1), emit_i32(E, l->spt[1]), "");
	LLVMValueRef tt = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, tr, emit_i32(E, ld), ""), tc, "");
	LLVMValueRef base = buf_ptr(E, D, emit_i32(E, off), LLVMBuildMul(E->b, tt, emit_i32(E, 2), ""));
	LLVMTypeRef et = emit_reg_type(E, dt);
	for (int r = 0; r < n; r += vec) {
		blk_layout_reg_split(l, r, rd);
		int cr = blk_layout_coord(l, 0, rd[0], 0), cc = blk_layout_coord(l, 1, rd[1], 0);
		LLVMValueRef in = NULL;
		if (l->pad[0] != l->shape[0])
			in = LLVMBuildICmp(E->b, LLVMIntULT, LLVMBuildAdd(E->b, tr, emit_i32(E, cr), ""),
			                   emit_i32(E, l->shape[0]), "");
		if (l->pad[1] != l->shape[1])
			in = emit_and(E, in, LLVMBuildICmp(E->b, LLVMIntULT,
			                                   LLVMBuildAdd(E->b, tc, emit_i32(E, cc), ""),
			                                   emit_i32(E, l->shape[1]), ""));
		LLVMBasicBlockRef done = emit_begin_if(E, in);
		LLVMValueRef x = t->r[r];
		if (vec > 1) {
			x = LLVMGetUndef(LLVMVectorType(et, (unsigned)vec));
			for (int i = 0; i < vec; i++)
				x = LLVMBuildInsertElement(E->b, x, t->r[r + i], emit_i32(E, i), "");
		}
		LLVMSetAlignment(LLVMBuildStore(E->b, x, gep(E, base, ((int64_t)cr * ld + cc) * 2)),
		                 (unsigned)(2 * vec));
		emit_end_if(E, done);
	}
	emit_end_if(E, cont);
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
	return emit_intrinsic(E, name, tys, ntys, args, nargs);
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
	LLVMValueRef v = LLVMBuildInsertElement(E->b, LLVMGetUndef(vt), lo, emit_i32(E, 0), "");
	v = LLVMBuildInsertElement(E->b, v, hi, emit_i32(E, 1), "");
	return LLVMBuildBitCast(E->b, v, E->i32, "");
}

/* The A fragment of m16 instance mi, k16 step ks, from a tile in the mma
 * layout over one warp column (an earlier dot's result, cast): its n8
 * blocks 2ks and 2ks+1 are the k halves, its row reps 2mi and 2mi+1 the
 * row halves -- the accumulator fragment is the A fragment's layout. */
static void reg_frag(Emit *E, const ETile *a, int mi, int ks, LLVMValueRef *out)
{
	int nn = blk_layout_regs_along(a->l, 1);
	for (int h = 0; h < 2; h++)     /* k half: n8 block 2ks + h */
		for (int r = 0; r < 2; r++) { /* row half: rep 2mi + r */
			int base = (2 * mi + r) * nn + 2 * (2 * ks + h);
			out[2 * h + r] = pack2(E, a->r[base], a->r[base + 1]);
		}
}

/* Where each operand's fragments are read: the per-lane ldmatrix pointers
 * and the byte steps between k16 steps and fragment pairs. */
typedef struct Frags {
	LLVMValueRef pa, pb;
	int64_t a_ks, a_mi, b_ks, b_jp;
	bool b_trans; /* B is k-major in shared memory ([N][K]): ldmatrix without .trans */
} Frags;

/* Register operands: staged by every thread into this execution's slot of
 * the dot's staging buffer (operand 3), then one barrier; the two slots
 * alternate (phase), so the next execution's stores need no barrier. */
static void stage_operands(Emit *E, const BlkOp *op, MmaCtx *D, LLVMValueRef *aoff, LLVMValueRef *boff)
{
	const BlkValue *av = op->operands[0], *bv = op->operands[1];
	BlkDType dt = av->type.dtype;
	int64_t off = emit_alloc_offset(op->operands[3]);
	int64_t ao = off, bo = off + (int64_t)D->M * D->lda * 2;
	LLVMValueRef phase = emit_mma_phase(E, op);
	LLVMValueRef ph = LLVMBuildLoad2(E->b, E->i32, phase, "phase");
	D->phb = LLVMBuildMul(E->b, ph, emit_i32(E, (int64_t)blk_lower_mma_stage_bytes(op)), "");
	stage(E, D, emit_tile(E, av), dt, ao, D->lda);
	stage(E, D, emit_tile(E, bv), dt, bo, D->ldb);
	emit_barrier(E);
	LLVMBuildStore(E->b, LLVMBuildXor(E->b, ph, emit_i32(E, 1), ""), phase);
	*aoff = emit_i32(E, ao);
	*boff = emit_i32(E, bo);
}

/* Shared operands (pipeliner.c): a Ref's element 0 as a byte offset into
 * shared memory, and its row stride. */
static LLVMValueRef ref_offset(Emit *E, const ERef *r)
{
	LLVMValueRef p = LLVMBuildGEP2(E->b, emit_mem_type(E, r->dt), r->base, (LLVMValueRef *)&r->off, 1, "");
	LLVMValueRef base = LLVMBuildPtrToInt(E->b, E->smem, E->i64, "");
	return LLVMBuildTrunc(E->b, LLVMBuildSub(E->b, LLVMBuildPtrToInt(E->b, p, E->i64, ""), base, ""),
	                      E->i32, "");
}

/* Per-thread ldmatrix addresses: lane L = 8q + i, q = 2 q1 + q0. */
static void frag_pointers(Emit *E, MmaCtx *D, LLVMValueRef aoff, LLVMValueRef boff, Frags *F)
{
	LLVMValueRef lane = LLVMBuildAnd(E->b, E->tid, emit_i32(E, 31), "");
	LLVMValueRef w = LLVMBuildLShr(E->b, E->tid, emit_i32(E, 5), "");
	LLVMValueRef wn = LLVMBuildAnd(E->b, w, emit_i32(E, D->wn - 1), "");
	LLVMValueRef wm = LLVMBuildLShr(E->b, w, emit_i32(E, blk_layout_log2(D->wn)), "");
	LLVMValueRef i8 = LLVMBuildAnd(E->b, lane, emit_i32(E, 7), "");
	LLVMValueRef q0 = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, lane, emit_i32(E, 3), ""), emit_i32(E, 1), "");
	LLVMValueRef q1 = LLVMBuildLShr(E->b, lane, emit_i32(E, 4), "");
	/* A: row 8 wm-index + i + q0 * 8wm (row rep 2mi or 2mi+1), column q1 * 8 */
	LLVMValueRef arow = LLVMBuildAdd(E->b, LLVMBuildAdd(E->b, LLVMBuildMul(E->b, wm, emit_i32(E, 8), ""), i8, ""),
	                                 LLVMBuildMul(E->b, q0, emit_i32(E, 8 * D->wm), ""), "");
	LLVMValueRef ta = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, arow, emit_i32(E, D->lda), ""),
	                               LLVMBuildMul(E->b, q1, emit_i32(E, 8), ""), "");
	F->pa = buf_ptr(E, D, aoff, LLVMBuildMul(E->b, ta, emit_i32(E, 2), ""));
	F->a_ks = 16 * 2, F->a_mi = (int64_t)16 * D->wm * D->lda * 2;
	/* B: n8 block 2jp or 2jp+1 by q1 (column 8 wn-index + q1 * 8wn), k
	 * half by q0: k row q0 * 8 + i of [K][N], or k column q0 * 8 of row
	 * n + i of [N][K] */
	LLVMValueRef n0 = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, wn, emit_i32(E, 8), ""),
	                               LLVMBuildMul(E->b, q1, emit_i32(E, 8 * D->wn), ""), "");
	LLVMValueRef k8 = LLVMBuildMul(E->b, q0, emit_i32(E, 8), "");
	LLVMValueRef tb;
	if (F->b_trans) {
		tb = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, LLVMBuildAdd(E->b, n0, i8, ""), emit_i32(E, D->ldb), ""), k8, "");
		F->b_ks = 16 * 2, F->b_jp = (int64_t)16 * D->wn * D->ldb * 2;
	} else {
		tb = LLVMBuildAdd(E->b, LLVMBuildMul(E->b, LLVMBuildAdd(E->b, k8, i8, ""), emit_i32(E, D->ldb), ""), n0, "");
		F->b_ks = (int64_t)16 * D->ldb * 2, F->b_jp = (int64_t)16 * D->wn * 2;
	}
	F->pb = buf_ptr(E, D, boff, LLVMBuildMul(E->b, tb, emit_i32(E, 2), ""));
}

/* The ops of the dot's region (the pipeliner's next copies, then their
 * commit) in order after its k16 steps: with n ops, op j < n - 1 after
 * step j * nks / (n - 1), the last one after the last step. */
static void emit_overlap(Emit *E, const BlkOp *op, int step, int nks)
{
	if (!op->nregions)
		return;
	int n = 0, j = 0;
	for (const BlkOp *o = op->regions[0]->first; o; o = o->next)
		n++;
	for (const BlkOp *o = op->regions[0]->first; o; o = o->next, j++) {
		int at = j == n - 1 ? nks - 1 : j * nks / (n - 1);
		if (at == step)
			emit_op(E, o);
	}
}

void emit_mma(Emit *E, const BlkOp *op)
{
	const BlkValue *av = op->operands[0], *bv = op->operands[1];
	const BlkLayout *l = emit_layout(E, op->results[0]);
	bool shared = av->type.kind == BLK_TYPE_REF;
	MmaCtx D = { 0 };
	D.M = (int)blk_lower_dim(av->type.dims[0]);
	D.K = (int)blk_lower_dim(av->type.dims[1]);
	D.N = (int)blk_lower_dim(bv->type.dims[1]);
	D.wm = l->thr[0] / 8, D.wn = l->thr[1] / 4;
	BlkDType dt = av->type.dtype;
	const char *mma = dt == BLK_BF16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16"
	                                 : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32";
	Frags F = { 0 };
	LLVMValueRef aoff, boff;
	const ETile *areg = NULL; /* A in registers: the mma fragments of an earlier dot */
	if (bv->type.kind == BLK_TYPE_REF) {
		const ERef *rb = &emit_val(E, bv)->ref;
		F.b_trans = rb->stride[0] == 1;
		D.ldb = (int)(F.b_trans ? rb->stride[1] : rb->stride[0]);
		D.phb = emit_i32(E, 0);
		boff = ref_offset(E, rb);
		if (shared) {
			const ERef *ra = &emit_val(E, av)->ref;
			if (ra->stride[1] != 1)
				blk_die("lower: emit: an mma A operand in shared memory must be k-contiguous");
			D.lda = (int)ra->stride[0];
			aoff = ref_offset(E, ra);
		} else {
			areg = emit_tile(E, av);
			D.lda = 0;
			aoff = emit_i32(E, 0);
		}
	} else {
		D.lda = D.K + 8, D.ldb = D.N + 8;
		stage_operands(E, op, &D, &aoff, &boff);
	}
	frag_pointers(E, &D, aoff, boff, &F);

	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = emit_new_tile(E, l);
	int nacc = blk_layout_nregs(l), nm = blk_layout_regs_along(l, 0), nn = blk_layout_regs_along(l, 1);
	const ETile *acc = op->noperands > 2 ? emit_tile(E, op->operands[2]) : NULL;
	for (int r = 0; r < nacc; r++)
		ev->t.r[r] = acc ? acc->r[r] : LLVMConstReal(E->f32, 0);
	int mi_n = nm / 2, nj_n = nn / 2; /* m16 instances, n8 blocks */
	/* fragments of k16 step ks + 1 are loaded before step ks's mma.sync
	 * (two sets), so ldmatrix latency overlaps the tensor-core work */
	LLVMValueRef *frag[2][2];
	for (int i = 0; i < 2; i++) {
		frag[i][0] = BLK_NEW_N(E->c->a, LLVMValueRef, 4 * mi_n);
		frag[i][1] = BLK_NEW_N(E->c->a, LLVMValueRef, 2 * nj_n);
	}
	int nks = D.K / 16;
	for (int ks = 0; ks <= nks; ks++) {
		if (ks < nks) {
			LLVMValueRef *fa = frag[ks % 2][0], *fb = frag[ks % 2][1];
			for (int mi = 0; mi < mi_n; mi++)
				if (areg)
					reg_frag(E, areg, mi, ks, &fa[4 * mi]);
				else
					ldmatrix(E, gep(E, F.pa, mi * F.a_mi + ks * F.a_ks), false, &fa[4 * mi]);
			for (int jp = 0; jp < nj_n / 2; jp++)
				ldmatrix(E, gep(E, F.pb, ks * F.b_ks + jp * F.b_jp), !F.b_trans, &fb[4 * jp]);
		}
		if (ks == 0)
			continue;
		LLVMValueRef *af = frag[(ks - 1) % 2][0], *bf = frag[(ks - 1) % 2][1];
		for (int mi = 0; mi < mi_n; mi++)
			for (int j = 0; j < nj_n; j++) {
				/* C registers: rows 2mi, 2mi+1 x columns 2j, 2j+1 */
				int c[4] = { (2 * mi) * nn + 2 * j, (2 * mi) * nn + 2 * j + 1,
				             (2 * mi + 1) * nn + 2 * j, (2 * mi + 1) * nn + 2 * j + 1 };
				LLVMValueRef args[10] = { af[4 * mi], af[4 * mi + 1], af[4 * mi + 2], af[4 * mi + 3],
				                          bf[4 * (j / 2) + 2 * (j % 2)], bf[4 * (j / 2) + 2 * (j % 2) + 1],
				                          ev->t.r[c[0]], ev->t.r[c[1]], ev->t.r[c[2]], ev->t.r[c[3]] };
				LLVMValueRef d = call_cast(E, mma, NULL, 0, args, 10);
				for (int k = 0; k < 4; k++)
					ev->t.r[c[k]] = LLVMBuildExtractValue(E->b, d, (unsigned)k, "");
			}
		emit_overlap(E, op, ks - 1, nks);
	}
	emit_bind(E, op->results[0], ev);
}

LLVMValueRef emit_mma_phase(Emit *E, const BlkOp *dot)
{
	LLVMValueRef p = blk_pmap_get(&E->mma_phase, dot);
	if (!p) {
		p = emit_alloca(E, E->i32);
		LLVMBuildStore(E->entry, emit_i32(E, 0), p);
		blk_pmap_put(E->c->a, &E->mma_phase, dot, p);
	}
	return p;
}
