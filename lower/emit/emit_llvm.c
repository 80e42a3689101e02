/* emit_llvm.c - the tiled kernel to LLVM IR, through the LLVM-C API.
 *
 * Requires: tiled IR (every tile value has a layout, shared memory planned).
 * Produces: an LLVM module with one kernel (calling convention ptx_kernel,
 * one `ptr addrspace(1) noalias` per array param in param order, reqntid
 * of the CTA size), dynamic shared memory as an external addrspace(3)
 * array.  This file holds the function, the value table and the helpers;
 * each op family is emitted by its own file (emit_*.c).
 *
 * Intrinsics are declared through LLVMLookupIntrinsicID: an unknown name is
 * an internal error, never a silent call to an undefined function.
 */
#include "emit.h"

#include <string.h>

/* ---- values ------------------------------------------------------------------ */

EVal *blk_emit_val(Emit *E, const BlkValue *v)
{
	EVal *ev = blk_pmap_get(&E->vals, v);
	if (!ev)
		blk_die("lower: emit: a value was not emitted before its use");
	return ev;
}

void blk_emit_bind(Emit *E, const BlkValue *v, EVal *ev)
{
	blk_pmap_put(E->c->a, &E->vals, v, ev);
}

ETile *blk_emit_tile(Emit *E, const BlkValue *v)
{
	EVal *ev = blk_emit_val(E, v);
	if (ev->is_ref)
		blk_die("lower: emit: a Ref used as a tile");
	return &ev->t;
}

const BlkLayout *blk_emit_layout(Emit *E, const BlkValue *v)
{
	if (v->type.rank == 0)
		return blk_lower_scalar_layout(E->c);
	if (!v->type.layout)
		blk_die("lower: emit: a tile value has no layout");
	return v->type.layout;
}

ETile blk_emit_new_tile(Emit *E, const BlkLayout *l)
{
	ETile t = { l, BLK_NEW_N(E->c->a, LLVMValueRef, blk_layout_nregs(l) + 1) };
	return t;
}

LLVMValueRef blk_emit_i32(Emit *E, int64_t v)
{
	return LLVMConstInt(E->i32, (unsigned long long)v, true);
}

LLVMValueRef blk_emit_i64(Emit *E, int64_t v)
{
	return LLVMConstInt(E->i64, (unsigned long long)v, true);
}

LLVMTypeRef blk_emit_reg_type(Emit *E, BlkDType dt)
{
	switch (dt) {
	case BLK_F32: return E->f32;
	case BLK_F16: return E->f16;
	case BLK_BF16: return E->bf16;
	case BLK_I32: case BLK_U32: return E->i32;
	case BLK_I8: case BLK_U8: return E->i8;
	case BLK_F8E4M3: case BLK_F8E5M2: return E->i8; /* its bits */
	default: return E->i1;
	}
}

LLVMTypeRef blk_emit_mem_type(Emit *E, BlkDType dt)
{
	return dt == BLK_BOOL ? E->i8 : blk_emit_reg_type(E, dt);
}

LLVMValueRef blk_emit_alloca(Emit *E, LLVMTypeRef t)
{
	return LLVMBuildAlloca(E->entry, t, "");
}

LLVMValueRef blk_emit_to_i32(Emit *E, LLVMValueRef x, BlkDType dt)
{
	if (dt == BLK_I8)
		return LLVMBuildSExt(E->b, x, E->i32, "");
	return dt == BLK_U8 || dt == BLK_BOOL ? LLVMBuildZExt(E->b, x, E->i32, "") : x;
}

LLVMValueRef blk_emit_from_i32(Emit *E, LLVMValueRef x, BlkDType dt)
{
	if (blk_dtype_is_byte(dt))
		return LLVMBuildTrunc(E->b, x, E->i8, "");
	return dt == BLK_BOOL ? LLVMBuildICmp(E->b, LLVMIntNE, x, blk_emit_i32(E, 0), "") : x;
}

LLVMValueRef blk_emit_to_f32(Emit *E, LLVMValueRef x, BlkDType dt)
{
	return dt == BLK_F32 ? x : LLVMBuildFPExt(E->b, x, E->f32, "");
}

LLVMValueRef blk_emit_from_f32(Emit *E, LLVMValueRef x, BlkDType dt)
{
	return dt == BLK_F32 ? x : LLVMBuildFPTrunc(E->b, x, blk_emit_reg_type(E, dt), "");
}

/* ---- intrinsics ------------------------------------------------------------------ */

LLVMValueRef blk_emit_asm(Emit *E, LLVMTypeRef ret, LLVMValueRef *args, int n, const char *text, const char *cons,
                      bool side_effects)
{
	LLVMTypeRef pt[16];
	for (int i = 0; i < n && i < 16; i++)
		pt[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)n, false);
	LLVMValueRef f = LLVMGetInlineAsm(ft, (char *)text, strlen(text), (char *)cons, strlen(cons), side_effects,
	                                  false, LLVMInlineAsmDialectATT, false);
	return LLVMBuildCall2(E->b, ft, f, args, (unsigned)n, "");
}

LLVMValueRef blk_emit_intrinsic(Emit *E, const char *name, LLVMTypeRef *tys, int ntys,
                            LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (id == 0)
		blk_die("lower: LLVM 19 has no intrinsic %s", name);
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(E->mod, id, tys, (size_t)ntys);
	LLVMTypeRef ft = LLVMIntrinsicGetType(E->cx, id, tys, (size_t)ntys);
	return LLVMBuildCall2(E->b, ft, f, args, (unsigned)nargs, "");
}

/* i computes a value and nothing else: no memory, no other thread (a
 * special register's read is such a call). */
static bool register_only(LLVMValueRef i)
{
	LLVMOpcode o = LLVMGetInstructionOpcode(i);
	if (o == LLVMCall) {
		LLVMValueRef f = LLVMGetCalledValue(i);
		size_t n;
		const char *name = LLVMIsAFunction(f) ? LLVMGetValueName2(f, &n) : "";
		return strncmp(name, "llvm.nvvm.read.ptx.sreg.", 24) == 0;
	}
	return (o >= LLVMAdd && o <= LLVMXor) || (o >= LLVMTrunc && o <= LLVMAddrSpaceCast) ||
	       o == LLVMGetElementPtr || o == LLVMICmp || o == LLVMFCmp || o == LLVMSelect ||
	       o == LLVMExtractElement || o == LLVMInsertElement || o == LLVMShuffleVector ||
	       o == LLVMExtractValue || o == LLVMInsertValue || o == LLVMFNeg || o == LLVMFreeze;
}

/* The block being built already ends in the same barrier, with only
 * register work after it: a second one would order nothing.  (The IR
 * passes put barriers around each store and transit on their own, and a
 * kernel of unrolled scalar stores met two or three in a row at every
 * one: a fifth of its instructions.) */
static bool just_synced(Emit *E, LLVMValueRef bar, const LLVMValueRef *a, int n)
{
	LLVMBasicBlockRef b = LLVMGetInsertBlock(E->b);
	for (LLVMValueRef i = b ? LLVMGetLastInstruction(b) : NULL; i; i = LLVMGetPreviousInstruction(i)) {
		if (LLVMGetInstructionOpcode(i) == LLVMCall && LLVMGetCalledValue(i) == bar) {
			bool same = true;
			for (int k = 0; k < n; k++)
				same &= LLVMGetOperand(i, (unsigned)k) == a[k];
			return same;
		}
		if (!register_only(i))
			return false;
	}
	return false;
}

void blk_emit_barrier(Emit *E)
{
	const char *name = E->bar_threads ? "llvm.nvvm.barrier.sync.cnt" : "llvm.nvvm.barrier0";
	/* a warp_specialize region's warps alone: its barrier and count */
	LLVMValueRef a[2] = { E->bar_id, E->bar_threads ? blk_emit_i32(E, E->bar_threads) : NULL };
	int n = E->bar_threads ? 2 : 0;
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!just_synced(E, LLVMGetIntrinsicDeclaration(E->mod, id, NULL, 0), a, n))
		blk_emit_intrinsic(E, name, NULL, 0, a, n);
}

LLVMValueRef blk_emit_smem_ptr(Emit *E, LLVMValueRef byte_off)
{
	return LLVMBuildGEP2(E->b, E->i8, E->smem, &byte_off, 1, "");
}

/* A consumer program's copy of a buffer of `bytes` a program: prog * bytes
 * (NULL outside a ping-pong warp_specialize). */
static LLVMValueRef program_bytes(Emit *E, int64_t bytes)
{
	return E->prog && bytes ? LLVMBuildMul(E->b, E->prog, blk_emit_i32(E, bytes), "") : NULL;
}

LLVMValueRef blk_emit_transit_base(Emit *E)
{
	LLVMValueRef off = blk_emit_i32(E, E->transit_off), pb = program_bytes(E, E->transit_prog);
	return blk_emit_smem_ptr(E, pb ? LLVMBuildAdd(E->b, off, pb, "") : off);
}

/* ---- thread coordinates -------------------------------------------------------- */

LLVMValueRef blk_emit_thread_coord(Emit *E, const BlkLayout *l, int d)
{
	int shift = l->tsh[d];
	LLVMValueRef t = E->tid;
	if (l->lbits[d]) { /* split: low bits at tsh, the rest at hsh */
		LLVMValueRef lo = LLVMBuildAnd(E->b, shift ? LLVMBuildLShr(E->b, t, blk_emit_i32(E, shift), "") : t,
		                               blk_emit_i32(E, (1 << l->lbits[d]) - 1), "");
		LLVMValueRef hi = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, t, blk_emit_i32(E, l->hsh[d]), ""),
		                               blk_emit_i32(E, (l->thr[d] >> l->lbits[d]) - 1), "");
		return LLVMBuildOr(E->b, lo, LLVMBuildShl(E->b, hi, blk_emit_i32(E, l->lbits[d]), ""), "");
	}
	if (shift)
		t = LLVMBuildLShr(E->b, t, blk_emit_i32(E, shift), "");
	return LLVMBuildAnd(E->b, t, blk_emit_i32(E, l->thr[d] - 1), "");
}

/* A huge kernel (lower_int.h) computes each thread-only value once, in the
 * entry block: its thousands of stores and extracts each recomputed their
 * threads' coordinates, a third of its instructions, which only LLVM's
 * passes of the ordinary path would have merged. */
typedef struct ThreadMemo {
	const BlkLayout *l;
	int d; /* a dim, or -1: the owner test */
	LLVMValueRef v;
} ThreadMemo;

enum { MAX_MEMO = 64 };

static LLVMValueRef thread_part(Emit *E, const BlkLayout *l, int d);
static LLVMValueRef owner(Emit *E, const BlkLayout *l);

static LLVMValueRef memoized(Emit *E, const BlkLayout *l, int d)
{
	for (int i = 0; i < E->nmemo; i++)
		if (E->memo[i].d == d && blk_layout_equal(E->memo[i].l, l))
			return E->memo[i].v;
	if (E->nmemo == MAX_MEMO)
		return NULL;
	LLVMBuilderRef b = E->b;
	LLVMValueRef tid = E->tid;
	if (!E->entry_tid) {
		E->b = E->entry;
		E->entry_tid = blk_emit_intrinsic(E, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0);
	}
	E->b = E->entry, E->tid = E->entry_tid;
	LLVMValueRef v = d < 0 ? owner(E, l) : thread_part(E, l, d);
	E->b = b, E->tid = tid;
	if (!E->memo)
		E->memo = BLK_NEW_N(E->c->a, ThreadMemo, MAX_MEMO);
	E->memo[E->nmemo++] = (ThreadMemo){ l, d, v };
	return v;
}

LLVMValueRef blk_emit_thread_part(Emit *E, const BlkLayout *l, int d)
{
	LLVMValueRef v = E->c->huge && E->tid == E->tid0 && !l->shared ? memoized(E, l, d) : NULL;
	return v ? v : thread_part(E, l, d);
}

static LLVMValueRef thread_part(Emit *E, const BlkLayout *l, int d)
{
	LLVMValueRef t = blk_emit_thread_coord(E, l, d);
	int lo = l->tlo[d];
	if (!lo)
		return LLVMBuildMul(E->b, t, blk_emit_i32(E, l->spt[d]), "");
	/* the low tlo bits stay, the rest step over the spt registers */
	LLVMValueRef low = LLVMBuildAnd(E->b, t, blk_emit_i32(E, (1 << lo) - 1), "");
	LLVMValueRef high = LLVMBuildMul(E->b, LLVMBuildLShr(E->b, t, blk_emit_i32(E, lo), ""),
	                                 blk_emit_i32(E, l->spt[d] << lo), "");
	return LLVMBuildOr(E->b, high, low, "");
}

LLVMValueRef blk_emit_coord(Emit *E, const BlkLayout *l, int d, int rd)
{
	LLVMValueRef t = blk_emit_thread_part(E, l, d);
	int k = blk_layout_coord(l, d, rd, 0);
	return k ? LLVMBuildAdd(E->b, t, blk_emit_i32(E, k), "") : t;
}

LLVMValueRef blk_emit_owner(Emit *E, const BlkLayout *l)
{
	LLVMValueRef v = E->c->huge && E->tid == E->tid0 && !l->shared ? memoized(E, l, -1) : NULL;
	return v ? v : owner(E, l);
}

static LLVMValueRef owner(Emit *E, const BlkLayout *l)
{
	int spare = (blk_pow2ceil(l->nthreads) - 1) & ~blk_layout_used_bits(l);
	if (!spare)
		return NULL;
	LLVMValueRef t = LLVMBuildAnd(E->b, E->tid, blk_emit_i32(E, spare), "");
	return LLVMBuildICmp(E->b, LLVMIntEQ, t, blk_emit_i32(E, 0), "");
}

LLVMValueRef blk_emit_and(Emit *E, LLVMValueRef a, LLVMValueRef b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return LLVMBuildAnd(E->b, a, b, "");
}

LLVMBasicBlockRef blk_emit_begin_if(Emit *E, LLVMValueRef cond)
{
	if (!cond)
		return NULL;
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(E->cx, E->fn, "then");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(E->cx, E->fn, "cont");
	LLVMBuildCondBr(E->b, cond, then, cont);
	LLVMPositionBuilderAtEnd(E->b, then);
	return cont;
}

void blk_emit_end_if(Emit *E, LLVMBasicBlockRef cont)
{
	if (!cont)
		return;
	LLVMBuildBr(E->b, cont);
	LLVMPositionBuilderAtEnd(E->b, cont);
}

/* A known divisor of an i32 scalar (for vector alignment); 1 if nothing
 * better is known.  0 has every divisor: 1 << 30 stands for that. */
int64_t blk_emit_divisor(const BlkValue *v)
{
	int64_t x;
	if (blk_lower_const_int(v, &x))
		return x == 0 ? (int64_t)1 << 30 : (x < 0 ? -x : x);
	if (!v->def) {
		BlkOp *f = v->owner ? v->owner->parent : NULL;
		int64_t lo, st;
		if (f && f->kind == BLK_OP_FOR && v->index == 0 &&
		    blk_lower_const_int(f->operands[0], &lo) && blk_lower_const_int(f->operands[2], &st))
			return blk_gcd(lo == 0 ? (int64_t)1 << 30 : lo, st) ? blk_gcd(lo == 0 ? (int64_t)1 << 30 : lo, st) : 1;
		return 1;
	}
	const BlkOp *op = v->def;
	if (op->kind == BLK_OP_MUL && v->type.rank == 0) {
		int64_t p = blk_emit_divisor(op->operands[0]) * blk_emit_divisor(op->operands[1]);
		return p > ((int64_t)1 << 30) ? (int64_t)1 << 30 : p;
	}
	if ((op->kind == BLK_OP_ADD || op->kind == BLK_OP_SUB) && v->type.rank == 0)
		return blk_gcd(blk_emit_divisor(op->operands[0]), blk_emit_divisor(op->operands[1]));
	return 1;
}

/* ---- dispatch ------------------------------------------------------------------------ */

void blk_emit_op(Emit *E, const BlkOp *op)
{
	unsigned fl = blk_op_flags(op->kind);
	switch (op->kind) {
	case BLK_OP_CONST: case BLK_OP_SIZE: case BLK_OP_PROGRAM_ID:
	case BLK_OP_NUM_PROGRAMS: case BLK_OP_IOTA: case BLK_OP_CLUSTER_RANK:
		blk_emit_leaf(E, op);
		return;
	case BLK_OP_RANK: case BLK_OP_WORLD: blk_emit_world_leaf(E, op); return;
	case BLK_OP_PEER: blk_emit_peer(E, op); return;
	case BLK_OP_SIGNAL_ADD: case BLK_OP_SIGNAL_SET: case BLK_OP_SIGNAL_WAIT:
		blk_emit_signal(E, op);
		return;
	case BLK_OP_BLOCK_REF: blk_emit_block_ref(E, op); return;
	case BLK_OP_LOCAL_ALLOC: blk_emit_local_alloc(E, op); return;
	case BLK_OP_BARRIER: blk_emit_barrier(E); return;
	case BLK_OP_TRANS_VIEW: blk_emit_trans_view(E, op); return;
	case BLK_OP_RESHAPE_VIEW: blk_emit_reshape_view(E, op); return;
	case BLK_OP_ASYNC_COPY: blk_emit_async_copy(E, op); return;
	case BLK_OP_ASYNC_COMMIT: blk_emit_async_commit(E); return;
	case BLK_OP_ASYNC_WAIT: blk_emit_async_wait(E, op); return;
	case BLK_OP_FENCE_ASYNC: blk_emit_fence_async(E); return;
	case BLK_OP_CLUSTER_SYNC: blk_emit_cluster_sync(E); return;
	case BLK_OP_WGMMA_COMMIT: blk_emit_wgmma_commit(E); return;
	case BLK_OP_WGMMA_WAIT: blk_emit_wgmma_wait(E, op); return;
	case BLK_OP_MBARRIER_INIT: case BLK_OP_MBARRIER_WAIT: case BLK_OP_MBARRIER_ARRIVE:
	case BLK_OP_ASYNC_ARRIVE: case BLK_OP_MBARRIER_EXPECT_TX:
		blk_emit_mbarrier(E, op);
		return;
	case BLK_OP_WARP_SPECIALIZE: blk_emit_warp_specialize(E, op); return;
	case BLK_OP_TURN_WAIT: case BLK_OP_TURN_PASS: blk_emit_turn(E, op); return;
	case BLK_OP_TMA_LOAD: blk_emit_tma_load(E, op); return;
	case BLK_OP_TMA_STORE: blk_emit_tma_store(E, op); return;
	case BLK_OP_TMA_STORE_WAIT: blk_emit_tma_store_wait(E, op); return;
	case BLK_OP_LOCAL_LOAD: blk_emit_local_load(E, op); return;
	case BLK_OP_EXTRACT_SLICE: blk_emit_extract_slice(E, op); return;
	case BLK_OP_VIEW: case BLK_OP_LOAD: case BLK_OP_STORE: case BLK_OP_SWAP:
	case BLK_OP_ATOMIC_ADD: case BLK_OP_ATOMIC_MAX: case BLK_OP_ATOMIC_MIN: case BLK_OP_ATOMIC_CAS:
		blk_emit_memory(E, op);
		return;
	case BLK_OP_REDUCE_SUM: case BLK_OP_REDUCE_MAX: case BLK_OP_REDUCE_MIN:
	case BLK_OP_REDUCE_ARGMAX: case BLK_OP_REDUCE_ARGMIN:
		blk_emit_reduce(E, op);
		return;
	case BLK_OP_SCAN_SUM: case BLK_OP_SCAN_PROD: case BLK_OP_SCAN_MAX: case BLK_OP_SCAN_MIN:
		blk_emit_scan(E, op);
		return;
	case BLK_OP_SCAN: blk_emit_scan_region(E, op); return;
	case BLK_OP_CONVERT_LAYOUT:
		if (op->results[0]->type.layout && op->results[0]->type.layout->frag) {
			blk_emit_frag_convert(E, op);
			return;
		}
		blk_emit_transit(E, op);
		return;
	case BLK_OP_BROADCAST: case BLK_OP_EXPAND_DIMS: case BLK_OP_TRANSPOSE:
		blk_emit_transit(E, op);
		return;
	case BLK_OP_JOIN: case BLK_OP_RESHAPE: blk_emit_in_registers(E, op); return;
	case BLK_OP_DOT: blk_emit_dot(E, op); return;
	case BLK_OP_FOR: blk_emit_for(E, op); return;
	case BLK_OP_IF: blk_emit_if(E, op); return;
	case BLK_OP_SCOPED: blk_emit_scoped(E, op); return;
	case BLK_OP_PRINT: blk_emit_print(E, op); return;
	case BLK_OP_YIELD: return; /* read by the op that owns the region */
	default:
		break;
	}
	if (fl & BLK_OPF_ELEMENTWISE) {
		blk_emit_elementwise(E, op);
		return;
	}
	blk_error(E->c->d, op->loc, "the GPU backend cannot lower op %s", blk_op_name(op->kind));
	E->failed = true;
}

/* In a huge kernel (lower_int.h) a region's straight line is cut into
 * basic blocks of this many ops: LLVM's instruction selection builds one
 * DAG a block and grows faster than linearly in its size (10,000 unrolled
 * stores in one block took 2.2 s to select, in blocks of 256 ops 1.3 s;
 * from 64 to 4096 ops a block made no difference). */
enum { HUGE_BLOCK_OPS = 256 };

void blk_emit_region(Emit *E, const BlkRegion *r)
{
	int since = 0;
	for (const BlkOp *op = r->first; op && !E->failed; op = op->next) {
		blk_emit_op(E, op);
		if (E->c->huge && ++since >= HUGE_BLOCK_OPS &&
		    !LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(E->b))) { /* goes on in a new block */
			since = 0;
			LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(E->cx, E->fn, "part");
			LLVMBuildBr(E->b, next);
			LLVMPositionBuilderAtEnd(E->b, next);
		}
	}
}

/* ---- the kernel function ----------------------------------------------------------- */

static void init_types(Emit *E)
{
	E->i1 = LLVMInt1TypeInContext(E->cx);
	E->i8 = LLVMInt8TypeInContext(E->cx);
	E->i16 = LLVMInt16TypeInContext(E->cx);
	E->i32 = LLVMInt32TypeInContext(E->cx);
	E->i64 = LLVMInt64TypeInContext(E->cx);
	E->f32 = LLVMFloatTypeInContext(E->cx);
	E->f16 = LLVMHalfTypeInContext(E->cx);
	E->bf16 = LLVMBFloatTypeInContext(E->cx);
	E->v = LLVMVoidTypeInContext(E->cx);
	E->p0 = LLVMPointerTypeInContext(E->cx, 0);
	E->p1 = LLVMPointerTypeInContext(E->cx, 1);
	E->p3 = LLVMPointerTypeInContext(E->cx, 3);
}

void blk_emit_annotation(Emit *E, const char *key, int value)
{
	LLVMMetadataRef md[3] = {
		LLVMValueAsMetadata(E->fn),
		LLVMMDStringInContext2(E->cx, key, strlen(key)),
		LLVMValueAsMetadata(blk_emit_i32(E, value)),
	};
	LLVMAddNamedMetadataOperand(E->mod, "nvvm.annotations",
	                            LLVMMetadataAsValue(E->cx, LLVMMDNodeInContext2(E->cx, md, 3)));
}

/* Param i: a 128-byte CUtensorMap passed by value (byval, align 64), a
 * grid constant (below), so TMA reads it where the launch put it instead
 * of a local copy (HOPPER-CODEGEN.md section 3). */
static void tmap_param(Emit *E, int i, LLVMValueRef *out)
{
	LLVMTypeRef map = LLVMArrayType2(E->i64, 16);
	unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
	unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
	LLVMAddAttributeAtIndex(E->fn, (unsigned)i + 1, LLVMCreateTypeAttribute(E->cx, byval, map));
	LLVMAddAttributeAtIndex(E->fn, (unsigned)i + 1, LLVMCreateEnumAttribute(E->cx, align, 64));
	*out = LLVMGetParam(E->fn, (unsigned)i);
}

/* One annotation lists every grid constant (1-based param indices): LLVM
 * keeps one list per key and function. */
static void grid_constants(Emit *E, int first, int n)
{
	if (!n)
		return;
	LLVMMetadataRef idx[BLK_MAX_TMAPS];
	for (int i = 0; i < n; i++)
		idx[i] = LLVMValueAsMetadata(blk_emit_i32(E, first + i + 1));
	LLVMMetadataRef md[3] = {
		LLVMValueAsMetadata(E->fn),
		LLVMMDStringInContext2(E->cx, "grid_constant", 13),
		LLVMMDNodeInContext2(E->cx, idx, (size_t)n),
	};
	LLVMAddNamedMetadataOperand(E->mod, "nvvm.annotations",
	                            LLVMMetadataAsValue(E->cx, LLVMMDNodeInContext2(E->cx, md, 3)));
}

/* Binds the kernel argument `arg` (index j) to what the emitters use:
 * a param's base pointer, a tensor map, a dynamic size or stride. */
static void bind_arg(Emit *E, const BlkLaunchArg *g, unsigned j, int *ntmaps)
{
	const BlkKernel *k = E->c->k;
	LLVMValueRef v = LLVMGetParam(E->fn, j);
	unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
	switch (g->kind) {
	case BLK_ARG_PTR:
		E->params[g->param] = v;
		LLVMSetValueName2(v, k->params[g->param].name, strlen(k->params[g->param].name));
		LLVMAddAttributeAtIndex(E->fn, j + 1, LLVMCreateEnumAttribute(E->cx, noalias, 0));
		return;
	case BLK_ARG_TMAP: tmap_param(E, (int)j, &E->tmap_params[(*ntmaps)++]); return;
	case BLK_ARG_SIZE:
		for (int i = 0; i < k->nsizes; i++)
			if (strcmp(k->sizes[i], g->size) == 0)
				E->size_args[i] = v;
		LLVMSetValueName2(v, g->size, strlen(g->size));
		return;
	case BLK_ARG_STRIDE: E->stride_args[blk_kernel_array_index(k, g->param)][g->dim] = v; return;
	case BLK_ARG_PEERS: E->peer_args[g->param] = v; return;
	case BLK_ARG_RANK: E->rank_arg = v; LLVMSetValueName2(v, "rank", 4); return;
	case BLK_ARG_WORLD: E->world_arg = v; LLVMSetValueName2(v, "world", 5); return;
	case BLK_ARG_TIMEOUT: E->timeout_arg = v; LLVMSetValueName2(v, "timeout", 7); return;
	}
}

/* The PTX entry's parameters: the launch header's arguments, in its order. */
static void make_function(Emit *E)
{
	const BlkKernel *k = E->c->k;
	const BlkLaunch *l = k->launch;
	LLVMTypeRef *pt = BLK_NEW_N(E->c->a, LLVMTypeRef, l->nargs + 1);
	for (int j = 0; j < l->nargs; j++) {
		BlkArgKind kind = l->args[j].kind;
		pt[j] = kind == BLK_ARG_PTR || kind == BLK_ARG_PEERS ? E->p1 : kind == BLK_ARG_TMAP ? E->p0
		        : kind == BLK_ARG_SIZE || kind == BLK_ARG_RANK || kind == BLK_ARG_WORLD ? E->i32 : E->i64;
	}
	LLVMTypeRef ft = LLVMFunctionType(E->v, pt, (unsigned)l->nargs, false);
	E->fn = LLVMAddFunction(E->mod, k->name, ft);
	LLVMSetFunctionCallConv(E->fn, 71); /* ptx_kernel */
	E->params = BLK_NEW_N(E->c->a, LLVMValueRef, k->nparams + 1);
	E->size_args = BLK_NEW_N(E->c->a, LLVMValueRef, k->nsizes + 1);
	E->stride_args = blk_arena_alloc(E->c->a, sizeof *E->stride_args * (size_t)(k->nparams + 1));
	E->peer_args = BLK_NEW_N(E->c->a, LLVMValueRef, k->nparams + 1);
	int ntmaps = 0;
	for (int j = 0; j < l->nargs; j++)
		bind_arg(E, &l->args[j], (unsigned)j, &ntmaps);
	/* (the tensor maps' generic addresses are taken once, at the top: blk_emit_tmap_addresses) */
	grid_constants(E, blk_launch_count(l, BLK_ARG_PTR), ntmaps);
	/* reqntid implies maxntid; ptxas refuses both */
	blk_emit_annotation(E, "reqntidx", l->threads);
}

LLVMValueRef blk_emit_size(Emit *E, const char *name)
{
	const BlkKernel *k = E->c->k;
	for (int i = 0; i < k->nsizes; i++)
		if (strcmp(k->sizes[i], name) == 0 && E->size_args[i])
			return E->size_args[i];
	blk_die("lower: emit: size %s is not a kernel argument", name);
}

LLVMValueRef blk_emit_sym(Emit *E, const BlkSym *s)
{
	if (s->kind == BLK_SYM_CONST)
		return blk_emit_i32(E, s->value);
	if (s->kind == BLK_SYM_VAR)
		return blk_emit_size(E, s->name);
	LLVMValueRef x = blk_emit_sym(E, s->a), y = blk_emit_sym(E, s->b), t;
	switch (s->kind) {
	case BLK_SYM_ADD: return LLVMBuildAdd(E->b, x, y, "");
	case BLK_SYM_SUB: return LLVMBuildSub(E->b, x, y, "");
	case BLK_SYM_MUL: return LLVMBuildMul(E->b, x, y, "");
	case BLK_SYM_FLOORDIV: return blk_emit_floor_divmod(E, false, x, y);
	case BLK_SYM_MOD: return blk_emit_floor_divmod(E, true, x, y);
	case BLK_SYM_CDIV: /* -((-x) // y) */
		t = blk_emit_floor_divmod(E, false, LLVMBuildNeg(E->b, x, ""), y);
		return LLVMBuildNeg(E->b, t, "");
	case BLK_SYM_MIN: return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, x, y, ""), x, y, "");
	case BLK_SYM_MAX: return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, x, y, ""), x, y, "");
	default: blk_die("lower: emit: shape expression kind %d", (int)s->kind);
	}
}

static void make_smem(Emit *E)
{
	LLVMTypeRef t = LLVMArrayType2(E->i8, 0);
	E->smem = LLVMAddGlobalInAddressSpace(E->mod, t, "blk_smem", 3);
	LLVMSetLinkage(E->smem, LLVMExternalLinkage);
	LLVMSetAlignment(E->smem, 1024); /* swizzled buffers repeat every 1024 bytes */
}

int64_t blk_emit_alloc_offset(const BlkValue *buf)
{
	int64_t off = buf->def && buf->def->kind == BLK_OP_LOCAL_ALLOC ? blk_op_int(buf->def, "offset", -1) : -1;
	if (off < 0)
		blk_die("lower: emit: a shared buffer has no offset (smem-plan has not run)");
	return off;
}

/* A local_alloc is a row-major Ref on its bytes of shared memory; the
 * transit region's offset is kept for the ops that use it implicitly. */
void blk_emit_local_alloc(Emit *E, const BlkOp *op)
{
	const BlkValue *buf = op->results[0];
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->is_ref = true;
	ERef *r = &ev->ref;
	int64_t off = blk_emit_alloc_offset(buf);
	const BlkAttr *role = blk_op_attr(op, "role");
	int64_t per_prog = blk_op_int(op, "program_bytes", 0);
	if (role && role->kind == BLK_ATTR_STRING && strcmp(role->s, "transit") == 0)
		E->transit_off = off, E->transit_prog = per_prog;
	r->space = BLK_SPACE_SHARED;
	r->dt = buf->type.dtype;
	r->pindex = -1;
	r->sprog = program_bytes(E, per_prog);
	r->base = blk_emit_smem_ptr(E, r->sprog ? LLVMBuildAdd(E->b, blk_emit_i32(E, off), r->sprog, "") : blk_emit_i32(E, off));
	r->sbase = off;
	r->off = blk_emit_i64(E, 0);
	r->offalign = (int64_t)1 << 30;
	r->rank = buf->type.rank;
	int64_t st = 1;
	for (int d = r->rank - 1; d >= 0; d--) {
		r->g[d] = r->l[d] = blk_emit_i32(E, 0);
		r->galign[d] = r->lalign[d] = (int64_t)1 << 30;
		r->ext[d] = r->bext[d] = r->aext[d] = blk_lower_dim(buf->type.dims[d]);
		r->stride[d] = buf->type.layout ? buf->type.layout->sstride[d] : st; /* padded rows */
		st *= r->ext[d];
	}
	if (buf->type.layout) {
		r->swz = buf->type.layout->swz;
		r->sblk = buf->type.layout->sblk;
	}
	blk_emit_bind(E, buf, ev);
}

static bool const_is(LLVMValueRef v, unsigned long long k)
{
	return LLVMIsAConstantInt(v) && LLVMGetIntTypeWidth(LLVMTypeOf(v)) <= 64 &&
	       LLVMConstIntGetZExtValue(v) == k;
}

/* What i equals without computing anything (x + 0, x * 1, gep p, 0, a
 * select on a constant), or NULL. */
static LLVMValueRef identity_of(LLVMValueRef i)
{
	LLVMOpcode o = LLVMGetInstructionOpcode(i);
	int n = LLVMGetNumOperands(i);
	LLVMValueRef a = n > 0 ? LLVMGetOperand(i, 0) : NULL, b = n > 1 ? LLVMGetOperand(i, 1) : NULL;
	switch (o) {
	case LLVMAdd: case LLVMOr: case LLVMXor:
		return const_is(b, 0) ? a : const_is(a, 0) ? b : NULL;
	case LLVMSub: case LLVMShl: case LLVMLShr: case LLVMAShr:
		return const_is(b, 0) ? a : NULL;
	case LLVMMul:
		return const_is(b, 1) ? a : const_is(a, 1) ? b : NULL;
	case LLVMGetElementPtr:
		return n == 2 && const_is(b, 0) && LLVMGetTypeKind(LLVMTypeOf(a)) == LLVMPointerTypeKind ? a : NULL;
	case LLVMSelect:
		return LLVMIsAConstantInt(a) ? LLVMGetOperand(i, const_is(a, 1) ? 1 : 2) : NULL;
	default:
		return NULL;
	}
}

/* Emission's builder folds constants only, and the address walks leave
 * many identities (a quarter of the instructions of a kernel of unrolled
 * stores) and values nothing uses: taken out here, in one linear sweep, so
 * the LLVM passes and instruction selection do not build them first. */
static void tidy(LLVMValueRef fn)
{
	for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
		for (LLVMValueRef i = LLVMGetFirstInstruction(b), next; i; i = next) {
			next = LLVMGetNextInstruction(i);
			LLVMValueRef v = identity_of(i);
			if (v) {
				LLVMReplaceAllUsesWith(i, v);
				LLVMInstructionEraseFromParent(i);
			}
		}
	for (LLVMBasicBlockRef b = LLVMGetLastBasicBlock(fn); b; b = LLVMGetPreviousBasicBlock(b))
		for (LLVMValueRef i = LLVMGetLastInstruction(b), prev; i; i = prev) {
			prev = LLVMGetPreviousInstruction(i);
			if (!LLVMGetFirstUse(i) && register_only(i))
				LLVMInstructionEraseFromParent(i);
		}
}

bool blk_lower_emit_llvm(LowerCtx *c, LLVMModuleRef *out)
{
	Emit E = { .c = c };
	blk_lower_launch(c); /* (IR text may come without one) */
	E.cx = LLVMContextCreate();
	E.mod = LLVMModuleCreateWithNameInContext(c->k->name, E.cx);
	LLVMSetTarget(E.mod, "nvptx64-nvidia-cuda");
	init_types(&E);
	make_function(&E);
	make_smem(&E);
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(E.cx, E.fn, "entry");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(E.cx, E.fn, "body");
	E.entry = LLVMCreateBuilderInContext(E.cx);
	LLVMPositionBuilderAtEnd(E.entry, entry);
	E.b = LLVMCreateBuilderInContext(E.cx);
	LLVMPositionBuilderAtEnd(E.b, body);
	E.tid = E.tid0 = blk_emit_intrinsic(&E, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0);
	blk_emit_tmap_addresses(&E);
	blk_emit_region(&E, c->k->body);
	LLVMBuildRetVoid(E.b);
	LLVMBuildBr(E.entry, body);
	LLVMDisposeBuilder(E.b);
	LLVMDisposeBuilder(E.entry);
	if (!E.failed && c->huge)
		tidy(E.fn);
	if (E.failed) {
		LLVMContextRef cx = E.cx;
		LLVMDisposeModule(E.mod);
		LLVMContextDispose(cx);
		return false;
	}
	*out = E.mod;
	return true;
}
