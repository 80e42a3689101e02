/* emit.h - the state of LLVM emission (internal to the files of lower/emit/).
 *
 * Every tile value becomes the registers its layout gives the thread
 * (an array of LLVM scalars, register order of layout.h); every Ref an
 * ERef: a base pointer and, per dim, where element 0 sits in the block
 * and in the array, so masks and addresses are sums of a per-thread part
 * and a per-register constant that LLVM folds into the load's offset.
 */
#ifndef BLK_EMIT_H
#define BLK_EMIT_H

#include "lower/lower_int.h"

typedef struct ETile {
	const BlkLayout *l;
	LLVMValueRef *r; /* blk_layout_nregs(l) values */
} ETile;

typedef struct ERef {
	BlkSpace space;
	BlkDType dt;
	int pindex;          /* global: the param; -1 for shared */
	LLVMValueRef base;   /* ptr addrspace(1) or (3): element 0 of the array/buffer */
	int64_t sbase;       /* shared: base is smem + sbase (+ sprog) bytes */
	LLVMValueRef sprog;  /* shared: i32 bytes of a consumer program's own copy (ping-pong), or NULL */
	LLVMValueRef off;    /* i64 elements, from dims fixed by scalars */
	LLVMValueRef alive;  /* i1: a fixed dim in bounds; NULL: true */
	int rank;
	LLVMValueRef g[BLK_MAX_RANK]; /* i32: array index of element 0 */
	LLVMValueRef l[BLK_MAX_RANK]; /* i32: block-local index of element 0 */
	int64_t galign[BLK_MAX_RANK]; /* a known divisor of g */
	int64_t lalign[BLK_MAX_RANK]; /* a known divisor of l */
	int64_t offalign;             /* a known divisor of off */
	int64_t stride[BLK_MAX_RANK], bext[BLK_MAX_RANK], aext[BLK_MAX_RANK], ext[BLK_MAX_RANK];
	/* where a dynamic size makes one run-time (global Refs only): its value
	 * (stride i64, extents i32), the int64 above then a known divisor */
	LLVMValueRef dstride[BLK_MAX_RANK], dbext[BLK_MAX_RANK], daext[BLK_MAX_RANK];
	int64_t step[BLK_MAX_RANK]; /* element k of a dim is index k * step (a strided ds; 0: 1) */
	LLVMValueRef peer; /* global: the rank whose buffer base is in (i32), NULL: this rank's */
	int swz;       /* shared, swizzled (layout.h): swz bytes, column blocks */
	int64_t sblk;  /* sblk elements apart along the dim of stride 1 (0: one) */
} ERef;

typedef struct EVal {
	bool is_ref;
	ETile t;
	ERef ref;
} EVal;

typedef struct Emit {
	LowerCtx *c;
	LLVMContextRef cx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMBuilderRef entry; /* allocas, at the top of the entry block */
	LLVMValueRef fn;
	LLVMValueRef tid;     /* i32 */
	LLVMValueRef tid0, entry_tid; /* the kernel's own tid (E->tid outside warp_specialize); its
	                               * read in the entry block (huge kernels' memo) */
	struct ThreadMemo *memo; /* huge kernels: thread-only values made once (emit_llvm.c) */
	int nmemo;
	LLVMValueRef smem;    /* [0 x i8] addrspace(3) */
	LLVMValueRef *params; /* ptr addrspace(1) per kernel param (NULL: scratch) */
	BlkPtrMap vals;       /* BlkValue* -> EVal* */
	LLVMTypeRef i1, i8, i16, i32, i64, f32, f16, bf16, v, p0, p1, p3;
	bool failed;
	bool min_ctas_set;    /* blk_emit_dot asked for 2 CTAs per SM */
	int64_t transit_off;  /* the transit region's local_alloc (emit_transit.c, emit_reduce.c) */
	int64_t transit_prog; /* its bytes per consumer program (ping-pong), or 0 */
	int bar_threads;      /* inside a warp_specialize region: its named barrier's threads (0: the CTA) */
	LLVMValueRef tmap_params[BLK_MAX_TMAPS]; /* the CUtensorMap params (the launch's TMAP args) */
	LLVMValueRef bar_id;  /* i32: that named barrier */
	LLVMValueRef prog;    /* i32: the consumer program's index (ping-pong), or NULL */
	LLVMValueRef *size_args; /* per k->sizes entry: its i32 kernel argument if dynamic, else NULL */
	LLVMValueRef (*stride_args)[BLK_MAX_RANK]; /* per array, dim: i64 argument of a dynamic stride */
	bool plain_pieces;    /* an async_copy since the last async_arrive stored a piece plainly */
	/* several ranks (emit_world.c): the launch's rank, world and timeout
	 * arguments, and per symmetric param its table of every rank's base */
	LLVMValueRef rank_arg, world_arg, timeout_arg;
	LLVMValueRef *peer_args;
} Emit;

/* emit_llvm.c */
/* Dynamic sizes: size `name` (its kernel argument) and a shape expression
 * of them, i32, computed where the builder is. */
LLVMValueRef blk_emit_size(Emit *E, const char *name);
LLVMValueRef blk_emit_sym(Emit *E, const BlkSym *s);
/* Python's // and % on i32, as blk_i32_floordiv/blk_i32_mod (emit_elementwise.c). */
LLVMValueRef blk_emit_floor_divmod(Emit *E, bool mod, LLVMValueRef x, LLVMValueRef y);
EVal *blk_emit_val(Emit *E, const BlkValue *v);
void blk_emit_bind(Emit *E, const BlkValue *v, EVal *ev);
ETile *blk_emit_tile(Emit *E, const BlkValue *v);
const BlkLayout *blk_emit_layout(Emit *E, const BlkValue *v);
ETile blk_emit_new_tile(Emit *E, const BlkLayout *l);
/* A call of inline PTX `text` with LLVM constraints `cons` on args[0..n)
 * (at most 16), returning `ret` (void: LLVMVoidType); `side_effects`
 * keeps it in place, else LLVM may move or drop it like an intrinsic. */
LLVMValueRef blk_emit_asm(Emit *E, LLVMTypeRef ret, LLVMValueRef *args, int n, const char *text, const char *cons,
                      bool side_effects);
LLVMValueRef blk_emit_intrinsic(Emit *E, const char *name, LLVMTypeRef *tys, int ntys,
                            LLVMValueRef *args, int nargs);
LLVMValueRef blk_emit_i32(Emit *E, int64_t v);
LLVMValueRef blk_emit_i64(Emit *E, int64_t v);
LLVMTypeRef blk_emit_reg_type(Emit *E, BlkDType dt);   /* in registers */
LLVMTypeRef blk_emit_mem_type(Emit *E, BlkDType dt);   /* in memory (bool: i8) */
LLVMValueRef blk_emit_alloca(Emit *E, LLVMTypeRef t);
void blk_emit_region(Emit *E, const BlkRegion *r);
void blk_emit_barrier(Emit *E);
/* smem + the transit region's offset (the program's own copy of it). */
LLVMValueRef blk_emit_transit_base(Emit *E);
/* A per-kernel nvvm.annotations entry (reqntidx, minctasm, ...). */
void blk_emit_annotation(Emit *E, const char *key, int value);
LLVMValueRef blk_emit_smem_ptr(Emit *E, LLVMValueRef byte_off); /* i32 */
/* A thread's pointer into shared Ref r: its buffer's start plus the
 * per-thread byte offset tbytes (loop-invariant, so LICM hoists it), plus
 * the run-time part of r's offset (a slot); in *cbytes the constant part
 * (indices that are constants), for the caller to fold into immediates. */
LLVMValueRef blk_emit_shared_ptr(Emit *E, const ERef *r, LLVMValueRef tbytes, int64_t *cbytes);
/* Swizzled shared Ref r (r->swz): the pointer to the element at index
 * c[d] (i32, relative to r's element 0) after the swizzle; and the i32
 * shared-window address of element 0 before it (a wgmma descriptor's
 * start: the hardware swizzles what it reads by address bits). */
LLVMValueRef blk_emit_swizzled_ptr(Emit *E, const ERef *r, LLVMValueRef *c);
/* in indexed by op's idx attr, its index operands from operand `next`. */
void blk_emit_index_ref(Emit *E, const BlkOp *op, int next, const ERef *in, ERef *out);
LLVMValueRef blk_emit_swizzled_origin(Emit *E, const ERef *r);
/* The thread's index along dim d of layout l (replicas fold onto owners). */
LLVMValueRef blk_emit_thread_coord(Emit *E, const BlkLayout *l, int d);
/* The thread's part of the element coordinate along d (blk_emit_coord's
 * run-time term). */
LLVMValueRef blk_emit_thread_part(Emit *E, const BlkLayout *l, int d);
/* Element coordinate of register-dim index rd along d: thread part + const. */
LLVMValueRef blk_emit_coord(Emit *E, const BlkLayout *l, int d, int rd);
/* i1: this thread owns (is not a replica of) layout l's elements; NULL: all do. */
LLVMValueRef blk_emit_owner(Emit *E, const BlkLayout *l);
LLVMValueRef blk_emit_and(Emit *E, LLVMValueRef a, LLVMValueRef b); /* NULL means true */
/* Runs the rest of the current block's emission only when cond (NULL: always);
 * returns the block to continue in, for blk_emit_end_if. */
LLVMBasicBlockRef blk_emit_begin_if(Emit *E, LLVMValueRef cond);
void blk_emit_end_if(Emit *E, LLVMBasicBlockRef cont);
int64_t blk_emit_divisor(const BlkValue *v);
LLVMValueRef blk_emit_to_f32(Emit *E, LLVMValueRef x, BlkDType dt);
/* fp8 bits (i8) -> f32, exactly as ir.c's blk_fp8_to_f32 (emit_elementwise.c). */
LLVMValueRef blk_emit_fp8_to_f32(Emit *E, LLVMValueRef x, BlkDType dt);
/* An integer or bool register as i32 (i8 sign-, u8 and bool zero-extended),
 * and an i32 back to dt's register (i8/u8 truncated, bool: != 0). */
LLVMValueRef blk_emit_to_i32(Emit *E, LLVMValueRef x, BlkDType dt);
LLVMValueRef blk_emit_from_i32(Emit *E, LLVMValueRef x, BlkDType dt);
LLVMValueRef blk_emit_from_f32(Emit *E, LLVMValueRef x, BlkDType dt);
/* philox, uniform, normal of one register's operands x (emit_random.c). */
LLVMValueRef blk_emit_random(Emit *E, const BlkOp *op, const LLVMValueRef *x);

/* per op family */
void blk_emit_elementwise(Emit *E, const BlkOp *op);
/* x / c, c a constant: emit_divide.c (false: not taken, nothing emitted) */
bool blk_emit_div_by_constant(Emit *E, const BlkOp *op, EVal *ev, int n);
bool blk_emit_reciprocal_division_exact(float c);
void blk_emit_leaf(Emit *E, const BlkOp *op);
/* emit_world.c: my_rank/world, peer, signal_add/set/wait */
void blk_emit_world_leaf(Emit *E, const BlkOp *op);
void blk_emit_peer(Emit *E, const BlkOp *op);
void blk_emit_signal(Emit *E, const BlkOp *op);
/* Parallel grid axis a's program id (CUDA's block index; a folded axis
 * decoded from z). */
LLVMValueRef blk_emit_program_id(Emit *E, int a);
void blk_emit_memory(Emit *E, const BlkOp *op);
/* emit_atomic.c: atomic op op's update of the element at p with x (in
 * memory's type), for blk_emit_memory's walk. */
void blk_emit_atomic_rmw(Emit *E, const BlkOp *op, LLVMValueRef p, LLVMValueRef x, BlkDType dt);
void blk_emit_block_ref(Emit *E, const BlkOp *op);
void blk_emit_transit(Emit *E, const BlkOp *op);
/* join, and a reshape tile.c kept in registers: the operands' registers renumbered. */
void blk_emit_in_registers(Emit *E, const BlkOp *op);
void blk_emit_reduce(Emit *E, const BlkOp *op);
/* emit_reduce.c: a (+) x for k = ADD, MUL, MAX, MIN on f32 (max/min
 * NaN-propagating) or i32, and the identity of (+); the linear index of
 * register r's element over layout s's padded shape. */
LLVMValueRef blk_emit_combine(Emit *E, BlkOpKind k, bool fl, LLVMValueRef a, LLVMValueRef x);
LLVMValueRef blk_emit_combine_identity(Emit *E, BlkOpKind k, bool fl);
/* x (i32 bits) as a key the signed max/min order as dt's values: u32's
 * with the top bit flipped (its own inverse); others as they are. */
LLVMValueRef blk_emit_order_key(Emit *E, LLVMValueRef x, BlkDType dt, BlkOpKind combiner);
LLVMValueRef blk_emit_padded_index(Emit *E, const BlkLayout *s, int r);
void blk_emit_scan(Emit *E, const BlkOp *op);
void blk_emit_scan_region(Emit *E, const BlkOp *op); /* `scan`, with a combine region */
void blk_emit_dot(Emit *E, const BlkOp *op);
void blk_emit_fma_load(Emit *E, const BlkOp *op); /* local_load into fma_a<>/fma_b<> */
/* emit_mma.c: tensor cores (the ops mma_steps.c makes) */
void blk_emit_mma(Emit *E, const BlkOp *op);
/* emit_wgmma.c: Hopper's warpgroup tensor cores (sm_90a) */
void blk_emit_wgmma(Emit *E, const BlkOp *op);
void blk_emit_wgmma_commit(Emit *E);
void blk_emit_wgmma_wait(Emit *E, const BlkOp *op);
void blk_emit_fence_async(Emit *E);
void blk_emit_cluster_sync(Emit *E);
void blk_emit_mbarrier(Emit *E, const BlkOp *op);
void blk_emit_warp_specialize(Emit *E, const BlkOp *op);
void blk_emit_turn(Emit *E, const BlkOp *op);
void blk_emit_tma_load(Emit *E, const BlkOp *op);
void blk_emit_tma_store(Emit *E, const BlkOp *op);
bool blk_emit_store_stmatrix(Emit *E, const BlkOp *op, const ERef *v, const ETile *t);
void blk_emit_tma_store_wait(Emit *E, const BlkOp *op);
/* Each tensor map param's generic address, once (an asm of the param,
 * which LLVM lowers to cvta.param).  With every grid constant in one
 * annotation, LLVM also converts the params' direct uses without a local
 * copy; this is the form the device runs checked (docs/gpu-notes.md 36b-39). */
void blk_emit_tmap_addresses(Emit *E);
void blk_emit_local_load(Emit *E, const BlkOp *op);
void blk_emit_frag_convert(Emit *E, const BlkOp *op);
void blk_emit_extract_slice(Emit *E, const BlkOp *op);
/* emit_memory.c: the async copies of the pipeline pass, and trans_view */
void blk_emit_async_copy(Emit *E, const BlkOp *op);
void blk_emit_async_commit(Emit *E);
void blk_emit_async_wait(Emit *E, const BlkOp *op);
void blk_emit_trans_view(Emit *E, const BlkOp *op);
void blk_emit_reshape_view(Emit *E, const BlkOp *op);
void blk_emit_op(Emit *E, const BlkOp *op); /* emit_llvm.c: one op */
void blk_emit_for(Emit *E, const BlkOp *op);
void blk_emit_if(Emit *E, const BlkOp *op);
void blk_emit_scoped(Emit *E, const BlkOp *op);
void blk_emit_print(Emit *E, const BlkOp *op);
/* A call of the device's vprintf with fmt (a global string `name`) and the
 * n values (of types tys) packed as its argument buffer. */
void blk_emit_vprintf(Emit *E, const char *fmt, const char *name, const LLVMValueRef *vals,
                      LLVMTypeRef *tys, int n);
void blk_emit_local_alloc(Emit *E, const BlkOp *op); /* emit_llvm.c */
/* Dynamic sizes: size `name` (its kernel argument) and a shape expression
 * of them, i32, computed where the builder is. */
LLVMValueRef blk_emit_size(Emit *E, const char *name);
LLVMValueRef blk_emit_sym(Emit *E, const BlkSym *s);
/* Python's // and % on i32, as blk_i32_floordiv/blk_i32_mod (emit_elementwise.c). */
LLVMValueRef blk_emit_floor_divmod(Emit *E, bool mod, LLVMValueRef x, LLVMValueRef y);
/* The byte offset smem-plan gave buf's local_alloc. */
int64_t blk_emit_alloc_offset(const BlkValue *buf);

#endif
