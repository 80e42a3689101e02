/* emit_wgmma.c - Hopper's warpgroup tensor-core ops (sm_90a; mma_steps.c
 * makes them), as inline PTX: LLVM 19 has no intrinsics for them.
 *
 *   dot (engine "wgmma") on swizzled shared Refs a [M, K], b [K, N]: per
 *     k16 step and per m64 block of its warpgroup (warpgroup g of G owns
 *     rows 64g + 64G i, layout.h's blk_layout_wgmma), one
 *     wgmma.mma_async.m64nNk16 on two matrix descriptors, the
 *     accumulator registers tied in and out; 8-bit operands, both
 *     k-contiguous, take k32 steps of .s32.s8/.u8 into i32 registers, or
 *     of .f32.e4m3/.e5m2 (the same accumulator layout).  A descriptor (64 bits):
 *     the start address >> 4 (before the swizzle: the hardware swizzles
 *     by address bits), the leading-dimension byte offset >> 4 at bit 16,
 *     the stride byte offset >> 4 at bit 32, the swizzle mode at bit 62
 *     (1: 128 B, 2: 64 B, 3: 32 B).  Rows are one swizzle span apart, so
 *     8-row groups are 8 spans apart (the stride offset, either major);
 *     for an operand whose M or N is contiguous (transposed: imm-trans 1)
 *     the leading offset is the distance between its column blocks.  The
 *     first step of a chain -- an accumulator not made by a wgmma dot --
 *     starts with wgmma.fence, as its registers were written by others.
 *   wgmma_commit: wgmma.commit_group.
 *   wgmma_wait: wgmma.wait_group N taking and giving the accumulator, so
 *     no read of it moves above the wait.
 *   fence_async: fence.proxy.async.shared::cta.
 * wgmma's register order per m64 block is d[4j + 2h + c] for n8 block j,
 * row half h, column c; the layout's is row half major (emit maps).
 */
#include "emit.h"

#include <stdio.h>
#include <string.h>

/* Inline PTX that stays in place (barriers, fences, async ops). */
static LLVMValueRef ptx_asm(Emit *E, LLVMTypeRef ret, LLVMValueRef *args, int n, const char *text,
                            const char *cons)
{
	return blk_emit_asm(E, ret, args, n, text, cons, true);
}

void blk_emit_fence_async(Emit *E)
{
	ptx_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, "fence.proxy.async.shared::cta;", "~{memory}");
}

/* Every (not exited) thread of the cluster meets here; what each wrote
 * before (barrier inits, remote arrivals) is seen by the others after. */
void blk_emit_cluster_sync(Emit *E)
{
	ptx_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0,
	        "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;", "~{memory}");
}

static LLVMValueRef cluster_rank(Emit *E)
{
	return blk_emit_intrinsic(E, "llvm.nvvm.read.ptx.sreg.cluster.ctarank", NULL, 0, NULL, 0);
}

void blk_emit_wgmma_commit(Emit *E)
{
	ptx_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, "wgmma.commit_group.sync.aligned;", "~{memory}");
}

/* The accumulator registers regs[0..n) (f32, or i32 of an integer dot)
 * through inline PTX `text` whose operands $0..$n-1 are them (tied in
 * and out), then `extra` inputs. */
static void tied_asm(Emit *E, LLVMValueRef *regs, int n, LLVMValueRef *extra, int nextra, const char *cons_extra,
                     const char *text)
{
	LLVMTypeRef *ft = BLK_NEW_N(E->c->a, LLVMTypeRef, n);
	LLVMValueRef *args = BLK_NEW_N(E->c->a, LLVMValueRef, n + nextra);
	size_t cap = (size_t)n * 12 + 64, at = 0;
	char *cons = BLK_NEW_N(E->c->a, char, cap);
	LLVMTypeRef rt = LLVMTypeOf(regs[0]);
	const char *rc = LLVMGetTypeKind(rt) == LLVMIntegerTypeKind ? "r" : "f";
	for (int i = 0; i < n; i++) {
		ft[i] = rt;
		at += (size_t)snprintf(cons + at, cap - at, "%s=%s", i ? "," : "", rc);
	}
	for (int i = 0; i < nextra; i++)
		args[i] = extra[i];
	if (nextra)
		at += (size_t)snprintf(cons + at, cap - at, ",%s", cons_extra);
	for (int i = 0; i < n; i++) {
		args[nextra + i] = regs[i];
		at += (size_t)snprintf(cons + at, cap - at, ",%d", i);
	}
	snprintf(cons + at, cap - at, ",~{memory}");
	LLVMTypeRef st = LLVMStructTypeInContext(E->cx, ft, (unsigned)n, false);
	LLVMTypeRef *pt = BLK_NEW_N(E->c->a, LLVMTypeRef, n + nextra);
	for (int i = 0; i < n + nextra; i++)
		pt[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(st, pt, (unsigned)(n + nextra), false);
	LLVMValueRef f = LLVMGetInlineAsm(fty, (char *)text, strlen(text), cons, strlen(cons), true, false,
	                                  LLVMInlineAsmDialectATT, false);
	LLVMValueRef r = LLVMBuildCall2(E->b, fty, f, args, (unsigned)(n + nextra), "");
	for (int i = 0; i < n; i++)
		regs[i] = LLVMBuildExtractValue(E->b, r, (unsigned)i, "");
}

void blk_emit_wgmma_wait(Emit *E, const BlkOp *op)
{
	const ETile *a = blk_emit_tile(E, op->operands[0]);
	int n = blk_layout_nregs(a->l);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, a->l);
	for (int i = 0; i < n; i++)
		ev->t.r[i] = a->r[i];
	char text[64];
	snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %lld;", (long long)blk_op_int(op, "pending", 0));
	tied_asm(E, ev->t.r, n, NULL, 0, "", text);
	blk_emit_bind(E, op->results[0], ev);
}

/* Operand r's descriptor for its element (i0, i1) (i32 indices). */
static LLVMValueRef descriptor(Emit *E, const ERef *r, LLVMValueRef i0, LLVMValueRef i1)
{
	ERef at = *r;
	at.g[0] = LLVMBuildAdd(E->b, r->g[0], i0, "");
	at.g[1] = LLVMBuildAdd(E->b, r->g[1], i1, "");
	LLVMValueRef addr = LLVMBuildZExt(E->b, blk_emit_swizzled_origin(E, &at), E->i64, "");
	int64_t sbo = 8 * (int64_t)r->swz, lbo = r->sblk ? r->sblk * blk_dtype_size(r->dt) : 16;
	int64_t mode = r->swz == 128 ? 1 : r->swz == 64 ? 2 : 3;
	uint64_t k = ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) | ((uint64_t)mode << 62);
	LLVMValueRef start = LLVMBuildLShr(E->b, LLVMBuildAnd(E->b, addr, blk_emit_i64(E, 0x3FFFF), ""), blk_emit_i64(E, 4), "");
	return LLVMBuildOr(E->b, start, LLVMConstInt(E->i64, k, false), "");
}

/* Two 16-bit registers as one b32 wgmma A register. */
static LLVMValueRef pack2(Emit *E, LLVMValueRef lo, LLVMValueRef hi)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(lo), 2);
	LLVMValueRef v = LLVMBuildInsertElement(E->b, LLVMGetUndef(vt), lo, blk_emit_i32(E, 0), "");
	v = LLVMBuildInsertElement(E->b, v, hi, blk_emit_i32(E, 1), "");
	return LLVMBuildBitCast(E->b, v, E->i32, "");
}

/* A store of a 16-bit tile in the wgmma layout into a whole swizzled
 * shared Ref by stmatrix (sm_90): per pair of row registers and pair of
 * n8 blocks, one .x4 of the four 8x8 matrices the warp holds there, each
 * thread's register the packed pair its fragment has (rows g and g + 8 of
 * columns 2t, 2t + 1), lane l giving the address of row l % 8 of matrix
 * l / 8.  A 128-byte swizzle puts the 8 rows of a matrix on 8 bank groups.
 * false where the store is not that (the element walk then stores it). */
bool blk_emit_store_stmatrix(Emit *E, const BlkOp *op, const ERef *v, const ETile *t)
{
	const BlkLayout *l = t->l;
	bool sm90 = strncmp(E->c->arch, "sm_90", 5) == 0;
	if (op->kind != BLK_OP_STORE || !sm90 || v->space != BLK_SPACE_SHARED || !v->swz || v->rank != 2 ||
	    v->stride[1] != 1 || v->alive || !l->wg || blk_dtype_size(v->dt) != 2 || op->noperands != 2 ||
	    l->shape[0] != l->pad[0] || l->shape[1] != l->pad[1] || v->ext[0] != l->shape[0] ||
	    v->ext[1] != l->shape[1] || blk_layout_regs_along(l, 1) % 4 || blk_layout_regs_along(l, 0) % 2)
		return false;
	int nr = blk_layout_regs_along(l, 1), rows = blk_layout_regs_along(l, 0);
	LLVMValueRef lane = LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, 31), "");
	/* the thread's row part is 16 w + g (g = lane / 4): lane l's row in
	 * its matrix is l % 8, its matrix's half (l / 8) % 2 */
	LLVMValueRef g = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, lane, blk_emit_i32(E, 2), ""), blk_emit_i32(E, 7), "");
	LLVMValueRef row = LLVMBuildSub(E->b, blk_emit_thread_part(E, l, 0), g, "");
	row = LLVMBuildAdd(E->b, row, LLVMBuildAnd(E->b, lane, blk_emit_i32(E, 15), ""), "");
	LLVMValueRef col = LLVMBuildMul(E->b, LLVMBuildLShr(E->b, lane, blk_emit_i32(E, 4), ""), blk_emit_i32(E, 8), "");
	LLVMTypeRef vt = LLVMVoidTypeInContext(E->cx);
	LLVMValueRef owner = blk_emit_owner(E, l);
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, owner);
	for (int r0 = 0; r0 < rows; r0 += 2)
		for (int q = 0; q < nr / 4; q++) {
			LLVMValueRef c[2] = {
				LLVMBuildAdd(E->b, row, blk_emit_i32(E, blk_layout_coord(l, 0, r0, 0)), ""),
				LLVMBuildAdd(E->b, col, blk_emit_i32(E, blk_layout_coord(l, 1, 4 * q, 0)), ""),
			};
			LLVMValueRef a[5];
			a[0] = LLVMBuildPtrToInt(E->b, blk_emit_swizzled_ptr(E, v, c), E->i32, "");
			for (int m = 0; m < 4; m++) {
				int r = (r0 + (m & 1)) * nr + 4 * q + 2 * (m >> 1);
				a[1 + m] = pack2(E, t->r[r], t->r[r + 1]);
			}
			ptx_asm(E, vt, a, 5, "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};",
			        "r,r,r,r,r,~{memory}");
		}
	blk_emit_end_if(E, cont);
	return true;
}

/* An 8-bit operand's PTX type. */
static const char *wgmma_type(BlkDType dt)
{
	return dt == BLK_I8 ? "s8" : dt == BLK_U8 ? "u8" : dt == BLK_F8E4M3 ? "e4m3" : "e5m2";
}

void blk_emit_wgmma(Emit *E, const BlkOp *op)
{
	EVal *va = blk_emit_val(E, op->operands[0]);
	const ERef *ra = va->is_ref ? &va->ref : NULL, *rb = &blk_emit_val(E, op->operands[1])->ref;
	const BlkLayout *l = blk_emit_layout(E, op->results[0]);
	int M = l->shape[0], N = l->shape[1], K = (int)blk_lower_dim(op->operands[0]->type.dims[1]);
	int G = l->nthreads / 128, reps = M / (64 * G), nn = N / 4;
	const ETile *acc = blk_emit_tile(E, op->operands[2]);
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, l);
	for (int i = 0; i < blk_layout_nregs(l); i++)
		ev->t.r[i] = acc->r[i];
	const BlkOp *ad = op->operands[2]->def;
	if (!(ad && ad->kind == BLK_OP_DOT && blk_lower_dot_wgmma(ad))) /* its registers were others' */
		ptx_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, "wgmma.fence.sync.aligned;", "~{memory}");
	bool regs = !ra; /* A in registers: a tile in the wgmma layout of its rows */
	if (regs && blk_dtype_size(op->operands[0]->type.dtype) != 2) /* the pipeliner keeps 8 bits in shared */
		blk_die("lower: emit: a wgmma dot with an 8-bit A in registers");
	bool ta = ra && ra->stride[0] == 1, tb = rb->stride[1] == 1; /* A m-contiguous; B n-contiguous */
	BlkDType adt = op->operands[0]->type.dtype, bdt = op->operands[1]->type.dtype;
	int kw = blk_layout_tc_k(blk_dtype_size(adt)), nd = N / 2;
	size_t cap = (size_t)nd * 6 + 160, at = 0;
	char *text = BLK_NEW_N(E->c->a, char, cap);
	bool f8 = blk_dtype_is_fp8(adt);
	if (blk_dtype_size(adt) == 1) /* 8-bit: no transpose immediates (nor scales for integers) */
		at += (size_t)snprintf(text, cap, "wgmma.mma_async.sync.aligned.m64n%dk32.%s.%s.%s {", N,
		                       f8 ? "f32" : "s32", wgmma_type(adt), wgmma_type(bdt));
	else
		at += (size_t)snprintf(text, cap, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", N,
		                       adt == BLK_BF16 ? "bf16" : "f16", adt == BLK_BF16 ? "bf16" : "f16");
	for (int i = 0; i < nd; i++)
		at += (size_t)snprintf(text + at, cap - at, "%s$%d", i ? "," : "", i);
	if (regs)
		snprintf(text + at, cap - at, "}, {$%d, $%d, $%d, $%d}, $%d, 1, 1, 1, %d;", nd, nd + 1, nd + 2,
		         nd + 3, nd + 4, tb);
	else if (blk_dtype_size(adt) == 1)
		snprintf(text + at, cap - at, f8 ? "}, $%d, $%d, 1, 1, 1;" : "}, $%d, $%d, 1;", nd, nd + 1);
	else
		snprintf(text + at, cap - at, "}, $%d, $%d, 1, 1, 1, %d, %d;", nd, nd + 1, ta, tb);
	const ETile *at_ = regs ? blk_emit_tile(E, op->operands[0]) : NULL;
	int na = regs ? blk_layout_regs_along(at_->l, 1) : 0;
	LLVMValueRef row0 = LLVMBuildMul(E->b, LLVMBuildLShr(E->b, E->tid, blk_emit_i32(E, 7), ""), blk_emit_i32(E, 64), "");
	LLVMValueRef *d = BLK_NEW_N(E->c->a, LLVMValueRef, nd);
	for (int ks = 0; ks < K / kw; ks++) {
		LLVMValueRef k0 = blk_emit_i32(E, kw * ks), zero = blk_emit_i32(E, 0);
		LLVMValueRef db = descriptor(E, rb, k0, zero);
		for (int i = 0; i < reps; i++) {
			for (int j = 0; j < N / 8; j++)
				for (int h = 0; h < 2; h++)
					for (int c = 0; c < 2; c++)
						d[4 * j + 2 * h + c] = ev->t.r[(2 * i + h) * nn + 2 * j + c];
			if (regs) {
				/* a0..a3: rows h = 0, 1 of k 0..7, then of k 8..15 (n8 blocks
				 * 2ks, 2ks+1 of the rows' registers), two 16-bit elements each */
				LLVMValueRef in[5];
				for (int q = 0; q < 4; q++) {
					int base = (2 * i + q % 2) * na + 4 * ks + 2 * (q / 2);
					in[q] = pack2(E, at_->r[base], at_->r[base + 1]);
				}
				in[4] = db;
				tied_asm(E, d, nd, in, 5, "r,r,r,r,l", text);
			} else {
				LLVMValueRef row = LLVMBuildAdd(E->b, row0, blk_emit_i32(E, 64 * G * i), "");
				LLVMValueRef descs[2] = { descriptor(E, ra, row, k0), db };
				tied_asm(E, d, nd, descs, 2, "l,l", text);
			}
			for (int j = 0; j < N / 8; j++)
				for (int h = 0; h < 2; h++)
					for (int c = 0; c < 2; c++)
						ev->t.r[(2 * i + h) * nn + 2 * j + c] = d[4 * j + 2 * h + c];
		}
	}
	blk_emit_bind(E, op->results[0], ev);
}

/* ---- mbarriers and warp specialization --------------------------------------- */

/* Barrier `index` of the i32[2n] Ref's n (operands `at`, at + 1): 8 bytes each. */
static LLVMValueRef mbarrier_at(Emit *E, const BlkOp *op, int at)
{
	const ERef *r = &blk_emit_val(E, op->operands[at])->ref;
	LLVMValueRef i = blk_emit_tile(E, op->operands[at + 1])->r[0];
	LLVMValueRef o = LLVMBuildMul(E->b, i, blk_emit_i32(E, 8), "");
	o = LLVMBuildAdd(E->b, o, LLVMBuildMul(E->b, LLVMBuildTrunc(E->b, r->off, E->i32, ""), blk_emit_i32(E, 4), ""), "");
	return LLVMBuildGEP2(E->b, E->i8, r->base, &o, 1, "");
}

static LLVMValueRef mbarrier_ptr(Emit *E, const BlkOp *op)
{
	return mbarrier_at(E, op, 0);
}

/* Runs what follows (until blk_emit_end_if) in thread 0 of the region alone. */
static LLVMBasicBlockRef first_thread(Emit *E)
{
	return blk_emit_begin_if(E, LLVMBuildICmp(E->b, LLVMIntEQ, E->tid, blk_emit_i32(E, 0), ""));
}

void blk_emit_mbarrier(Emit *E, const BlkOp *op)
{
	LLVMValueRef p = mbarrier_ptr(E, op);
	LLVMTypeRef v = LLVMVoidTypeInContext(E->cx);
	switch (op->kind) {
	case BLK_OP_MBARRIER_EXPECT_TX: { /* one thread arrives with the phase's TMA bytes */
		LLVMBasicBlockRef cont = first_thread(E);
		LLVMValueRef a[2] = { LLVMBuildPtrToInt(E->b, p, E->i32, ""), blk_emit_i32(E, blk_op_int(op, "bytes", 0)) };
		ptx_asm(E, v, a, 2, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}");
		blk_emit_end_if(E, cont);
		return;
	}
	case BLK_OP_MBARRIER_INIT: { /* one thread readies it, and fences the init */
		LLVMBasicBlockRef cont = first_thread(E);
		LLVMValueRef a[2] = { p, blk_emit_i32(E, blk_op_int(op, "count", 1)) };
		blk_emit_intrinsic(E, "llvm.nvvm.mbarrier.init.shared", NULL, 0, a, 2);
		ptx_asm(E, v, NULL, 0, "fence.mbarrier_init.release.cluster;", "~{memory}");
		blk_emit_end_if(E, cont);
		return;
	}
	case BLK_OP_MBARRIER_ARRIVE: {
		blk_emit_intrinsic(E, "llvm.nvvm.mbarrier.arrive.shared", NULL, 0, &p, 1);
		int n = (int)blk_op_int(op, "cluster", 0);
		if (n < 2)
			return;
		/* lane 0 of each warp also arrives on the barrier at this address
		 * in every other CTA of the cluster (whose slots this CTA's
		 * multicasts fill too).  Release at the CTA's scope, as CUTLASS's
		 * cluster barriers do: .release.cluster made every k-step 1.4-2.5x
		 * slower (gpu-notes run 182), and the slot's reads are complete
		 * (wgmma_wait) before the arrive. */
		LLVMValueRef lane0 = LLVMBuildICmp(E->b, LLVMIntEQ, LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, 31), ""),
		                                   blk_emit_i32(E, 0), "");
		LLVMBasicBlockRef cont = blk_emit_begin_if(E, lane0);
		LLVMValueRef me = cluster_rank(E), at = LLVMBuildPtrToInt(E->b, p, E->i32, "");
		for (int r = 1; r < n; r++) { /* the CTA r ranks on (n a power of two) */
			LLVMValueRef peer = LLVMBuildAnd(E->b, LLVMBuildAdd(E->b, me, blk_emit_i32(E, r), ""),
			                                 blk_emit_i32(E, n - 1), "");
			LLVMValueRef a[2] = { at, peer };
			ptx_asm(E, v, a, 2,
			        "{ .reg .b32 R; mapa.shared::cluster.u32 R, $0, $1; mbarrier.arrive.shared::cluster.b64 _, [R]; }",
			        "r,r,~{memory}");
		}
		blk_emit_end_if(E, cont);
		return;
	}
	case BLK_OP_ASYNC_ARRIVE:
		/* The thread's one arrival of the phase, once its cp.asyncs have
		 * landed (.noinc: it is the counted one).  Where its copies stored
		 * pieces too narrow for cp.async plainly, a plain arrive must
		 * release them: the cp.asyncs then get an arrive of their own,
		 * not counted (it raises the pending count first).  compute-
		 * sanitizer's synccheck takes those two arrivals of one thread in
		 * one phase for a missing wait (gpu-notes run 145), so the pair is
		 * kept to the kernels that need it. */
		if (E->plain_pieces) {
			blk_emit_intrinsic(E, "llvm.nvvm.cp.async.mbarrier.arrive.shared", NULL, 0, &p, 1);
			blk_emit_intrinsic(E, "llvm.nvvm.mbarrier.arrive.shared", NULL, 0, &p, 1);
		} else
			blk_emit_intrinsic(E, "llvm.nvvm.cp.async.mbarrier.arrive.noinc.shared", NULL, 0, &p, 1);
		E->plain_pieces = false;
		return;
	default: { /* wait: try_wait.parity until the phase has completed */
		LLVMValueRef a[2] = { LLVMBuildPtrToInt(E->b, p, E->i32, ""), blk_emit_tile(E, op->operands[2])->r[0] };
		ptx_asm(E, v, a, 2,
		        "{ .reg .pred P; W${:uid}: mbarrier.try_wait.parity.shared::cta.b64 P, [$0], $1; "
		        "@P bra.uni D${:uid}; bra.uni W${:uid}; D${:uid}: }",
		        "r,r,~{memory}");
		return;
	}
	}
}

/* The named barriers (bar.sync 0 is the CTA's): the consumers' (one a
 * program), then the producer's, then the two programs' turns. */
enum { BAR_CONSUMERS = 1, BAR_TURNS = 4 };

/* Registers moved from the producer to the consumers (setmaxnreg): with
 * two consumer warpgroups the CTA's 384 threads start at 168 registers
 * each (65536 / 384, 8 at a time; `.minnctapersm 1` makes ptxas count on
 * that at entry, else it ignores setmaxnreg); the producer, which only
 * copies, keeps 40 and the consumers take 232: 40 * 128 + 232 * 256 =
 * 168 * 384, so each inc finds its registers in the CTA's pool.  Their
 * accumulators and epilogues (bias, gelu, attention's softmax) then fit
 * without the 168 cap.  Other splits keep the registers as they are. */
enum { PRODUCER_REGS = 40, CONSUMER_REGS = 232 };

static void set_max_registers(Emit *E, bool inc)
{
	char text[64];
	snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", inc ? "inc" : "dec",
	         inc ? CONSUMER_REGS : PRODUCER_REGS);
	ptx_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, text, "~{memory}");
}

/* Consumers (warpgroups 0 .. n-1) run region 0 with their own barrier
 * (bar.sync 1, 128n), the producer warpgroup region 1 with thread ids
 * from 0 (its copies spread over its 128 threads).  Two programs: each
 * runs region 0 with thread ids from 0, barrier 1 + its index, and its
 * index as the region's argument; the producer's barrier is then 3. */
void blk_emit_warp_specialize(Emit *E, const BlkOp *op)
{
	int n = (int)blk_op_int(op, "consumers", 1), progs = (int)blk_op_int(op, "programs", 1);
	bool moves = n == 2 && strcmp(E->c->arch, "sm_90a") == 0;
	_Static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 256 <= 65536 / 384 / 8 * 8 * 384,
	               "the consumers' registers come from the producer's");
	if (moves) { /* and no SIMT dot's two CTAs (emit_dot.c): the count at entry is 168 */
		blk_emit_annotation(E, "minctasm", 1);
		E->min_ctas_set = true;
	}
	LLVMValueRef cons = LLVMBuildICmp(E->b, LLVMIntULT, E->tid, blk_emit_i32(E, 128 * n), "");
	LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(E->cx, E->fn, "consumers");
	LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(E->cx, E->fn, "producer");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(E->cx, E->fn, "joined");
	LLVMBuildCondBr(E->b, cons, yes, no);
	int bt = E->bar_threads;
	LLVMValueRef tid = E->tid, bid = E->bar_id, prog = E->prog;
	LLVMPositionBuilderAtEnd(E->b, yes);
	if (moves)
		set_max_registers(E, true);
	E->bar_threads = 128 * n / progs, E->bar_id = blk_emit_i32(E, BAR_CONSUMERS);
	if (progs > 1) {
		int per = 128 * n / progs; /* a power of two: one warpgroup */
		E->prog = LLVMBuildUDiv(E->b, tid, blk_emit_i32(E, per), "prog");
		E->tid = LLVMBuildURem(E->b, tid, blk_emit_i32(E, per), "");
		E->bar_id = LLVMBuildAdd(E->b, E->prog, blk_emit_i32(E, BAR_CONSUMERS), "");
		EVal *pv = BLK_NEW(E->c->a, EVal);
		pv->t = blk_emit_new_tile(E, blk_emit_layout(E, op->regions[0]->args[0]));
		pv->t.r[0] = E->prog;
		blk_emit_bind(E, op->regions[0]->args[0], pv);
	}
	blk_emit_region(E, op->regions[0]);
	LLVMBuildBr(E->b, cont);
	LLVMPositionBuilderAtEnd(E->b, no);
	if (moves)
		set_max_registers(E, false);
	E->prog = prog;
	E->bar_threads = 128, E->bar_id = blk_emit_i32(E, BAR_CONSUMERS + progs);
	E->tid = LLVMBuildSub(E->b, tid, blk_emit_i32(E, 128 * n), "");
	blk_emit_region(E, op->regions[1]);
	LLVMBuildBr(E->b, cont);
	LLVMPositionBuilderAtEnd(E->b, cont);
	E->tid = tid, E->bar_threads = bt, E->bar_id = bid;
}

/* The turns of two programs: barrier BAR_TURNS + p is program p's; its
 * turn_wait syncs there with the other program's turn_pass, which only
 * arrives (bar.arrive), 256 threads in all. */
void blk_emit_turn(Emit *E, const BlkOp *op)
{
	LLVMValueRef p = blk_emit_tile(E, op->operands[0])->r[0];
	if (op->kind == BLK_OP_TURN_WAIT) {
		LLVMValueRef a[2] = { LLVMBuildAdd(E->b, p, blk_emit_i32(E, BAR_TURNS), ""), blk_emit_i32(E, 256) };
		blk_emit_intrinsic(E, "llvm.nvvm.barrier.sync.cnt", NULL, 0, a, 2);
		return;
	}
	LLVMValueRef a[2] = { LLVMBuildSub(E->b, blk_emit_i32(E, BAR_TURNS + 1), p, ""), blk_emit_i32(E, 256) };
	ptx_asm(E, LLVMVoidTypeInContext(E->cx), a, 2, "bar.arrive $0, $1;", "r,r,~{memory}");
}

/* ---- TMA ------------------------------------------------------------------ */

/* The kernel's tensor-map parameter a tma_load or tma_store uses: its
 * attr tmap, the launch header's tensor map (*g) of the op's array, boxes
 * and swizzle (warp_spec.c, tma_store.c). */
static LLVMValueRef map_of(Emit *E, const BlkOp *op, const BlkLaunchArg **g)
{
	int t = (int)blk_op_int(op, "tmap", -1);
	*g = blk_launch_nth(E->c->k->launch, BLK_ARG_TMAP, t);
	if (!*g)
		blk_die("lower: emit: a %s without its tensor map", blk_op_name(op->kind));
	return E->tmap_params[t];
}

/* Thread 0: one cp.async.bulk.tensor a column block of the slot, at the
 * block's array coordinates (column, row) -- (row, column) through a
 * `trans` map, the slot's columns the block's rows --, then a 3-D array's
 * batch (its block_ref's start along it), completing on the barrier. */
void blk_emit_tma_load(Emit *E, const BlkOp *op)
{
	const ERef *dst = &blk_emit_val(E, op->operands[0])->ref;
	const BlkLaunchArg *s;
	LLVMValueRef map = map_of(E, op, &s);
	ERef src;
	blk_emit_index_ref(E, op, 4, &blk_emit_val(E, op->operands[3])->ref, &src);
	LLVMValueRef bar = LLVMBuildPtrToInt(E->b, mbarrier_at(E, op, 1), E->i32, "");
	LLVMValueRef origin = blk_emit_swizzled_origin(E, dst);
	int cols = (int)blk_lower_dim(op->operands[0]->type.dims[1]), es = blk_dtype_size(dst->dt);
	LLVMValueRef inner = src.g[s->trans ? 0 : 1], outer = src.g[s->trans ? 1 : 0];
	const BlkOp *br = op->operands[3]->def; /* 3-D and up: the verifier's block_ref */
	int rank = E->c->k->params[s->param].rank;
	/* the coordinates past the first two, the map's dims innermost first:
	 * the block's starts along the squeezed dims (a batch; a head between
	 * the rows and the columns, the rows then coming after it) */
	LLVMValueRef more[3];
	int nmore = 0;
	for (int d = rank - 2; d >= 0 && rank >= 3; d--)
		more[nmore++] = d == s->rows ? NULL : blk_emit_tile(E, br->operands[d])->r[0];
	int mc = (int)blk_op_int(op, "multicast", 0);
	LLVMBasicBlockRef cont = first_thread(E);
	if (mc > 1) { /* this CTA's share of the rows (a box of them), to every CTA of the cluster */
		LLVMValueRef rows = LLVMBuildMul(E->b, cluster_rank(E), blk_emit_i32(E, s->box[1]), "");
		origin = LLVMBuildAdd(E->b, origin, LLVMBuildMul(E->b, rows, blk_emit_i32(E, s->swizzle), ""), "");
		outer = LLVMBuildAdd(E->b, outer, rows, "");
	}
	char text[192];
	if (rank >= 3) { /* [dst], [map, {inner, c1, .., c(rank-1)}], [bar] */
		int n = snprintf(text, sizeof text, "cp.async.bulk.tensor.%dd.shared::cluster.global.tile"
		                 ".mbarrier::complete_tx::bytes [$0], [$1, {$2", rank);
		for (int i = 1; i < rank; i++)
			n += snprintf(text + n, sizeof text - (size_t)n, ", $%d", i + 2);
		snprintf(text + n, sizeof text - (size_t)n, "}], [$%d];", rank + 2);
	}
	for (int j = 0; j < cols / s->box[0]; j++) {
		LLVMValueRef a[8] = {
			LLVMBuildAdd(E->b, origin, blk_emit_i32(E, (int64_t)j * dst->sblk * es), ""),
			map,
			LLVMBuildAdd(E->b, inner, blk_emit_i32(E, (int64_t)j * s->box[0]), ""),
			outer,
			bar,
			bar,
		};
		if (rank >= 3) {
			for (int i = 0; i < nmore; i++) /* the rows' place among them */
				a[3 + i] = more[i] ? more[i] : outer;
			a[rank + 2] = bar;
			static const char *cons[] = { "r,l,r,r,r,r,~{memory}", "r,l,r,r,r,r,r,~{memory}",
			                              "r,l,r,r,r,r,r,r,~{memory}" };
			ptx_asm(E, LLVMVoidTypeInContext(E->cx), a, rank + 3, text, cons[rank - 3]);
		} else if (mc > 1) {
			a[5] = LLVMConstInt(LLVMInt16TypeInContext(E->cx), (1u << mc) - 1, false);
			ptx_asm(E, LLVMVoidTypeInContext(E->cx), a, 6,
			        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
			        "[$0], [$1, {$2, $3}], [$4], $5;",
			        "r,l,r,r,r,h,~{memory}");
		} else
			ptx_asm(E, LLVMVoidTypeInContext(E->cx), a, 5,
			        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
			        "[$0], [$1, {$2, $3}], [$4];",
			        "r,l,r,r,r,~{memory}");
	}
	blk_emit_end_if(E, cont);
}

/* Thread 0: one cp.async.bulk.tensor store of each column block of the
 * slot to the block's array coordinates (TMA writes nothing past the
 * array; with reduce = "add", cp.reduce.async.bulk.tensor adds each element
 * atomically), then a bulk group of them.  A 3-D array (a batch, squeezed in
 * the block) has a 3-D map; the batch coordinate is the block's start
 * along it (its block_ref's operand 0).  The writing threads fenced their
 * stores to the async proxy and met at a barrier before. */
void blk_emit_tma_store(Emit *E, const BlkOp *op)
{
	const ERef *src = &blk_emit_val(E, op->operands[0])->ref;
	const BlkLaunchArg *s;
	LLVMValueRef map = map_of(E, op, &s);
	ERef dst;
	blk_emit_index_ref(E, op, 2, &blk_emit_val(E, op->operands[1])->ref, &dst);
	const BlkOp *br = op->operands[1]->def; /* the verifier's: a block_ref */
	int rank = br->noperands; /* the array's */
	bool add = blk_op_attr(op, "reduce") != NULL; /* the verifier admits "add" alone */
	char text[160];
	snprintf(text, sizeof text, "cp%s.async.bulk.tensor.%dd.global.shared::cta%s.tile.bulk_group [$0, {$1, $2%s}], [$%d];",
	         add ? ".reduce" : "", rank, add ? ".add" : "", rank == 3 ? ", $3" : "", rank + 1);
	LLVMValueRef origin = blk_emit_swizzled_origin(E, src);
	int cols = (int)blk_lower_dim(op->operands[0]->type.dims[1]), es = blk_dtype_size(src->dt);
	LLVMTypeRef v = LLVMVoidTypeInContext(E->cx);
	LLVMBasicBlockRef cont = first_thread(E);
	for (int j = 0; j < cols / s->box[0]; j++) {
		LLVMValueRef col = LLVMBuildAdd(E->b, dst.g[1], blk_emit_i32(E, (int64_t)j * s->box[0]), "");
		LLVMValueRef at = LLVMBuildAdd(E->b, origin, blk_emit_i32(E, (int64_t)j * src->sblk * es), "");
		LLVMValueRef a[5] = { map, col, dst.g[0], at };
		if (rank == 3)
			a[3] = blk_emit_tile(E, br->operands[0])->r[0], a[4] = at;
		ptx_asm(E, v, a, rank + 2, text, rank == 3 ? "l,r,r,r,r,~{memory}" : "l,r,r,r,~{memory}");
	}
	ptx_asm(E, v, NULL, 0, "cp.async.bulk.commit_group;", "~{memory}");
	blk_emit_end_if(E, cont);
}

/* Thread 0, which issued the tma_stores: until at most `pending` of its
 * bulk groups still read shared memory (writes = 1: still write global
 * memory). */
void blk_emit_tma_store_wait(Emit *E, const BlkOp *op)
{
	char text[64];
	snprintf(text, sizeof text, "cp.async.bulk.wait_group%s %d;", blk_op_int(op, "writes", 0) ? "" : ".read",
	         (int)blk_op_int(op, "pending", 0));
	LLVMBasicBlockRef cont = first_thread(E);
	ptx_asm(E, LLVMVoidTypeInContext(E->cx), NULL, 0, text, "~{memory}");
	blk_emit_end_if(E, cont);
}

void blk_emit_tmap_addresses(Emit *E)
{
	for (int i = 0; i < blk_launch_count(E->c->k->launch, BLK_ARG_TMAP); i++)
		E->tmap_params[i] = blk_emit_asm(E, E->i64, &E->tmap_params[i], 1, "mov.b64 $0, $1;", "=l,l", false);
}
