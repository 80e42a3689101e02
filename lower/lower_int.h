/* lower_int.h - what the passes of lower/ share (internal to lower/).
 *
 * The passes run on a private clone of the kernel (clone.c) and talk
 * through the IR: layouts are in the types, shared buffers, async copies
 * and barriers are ops, each dot's engine an attr (docs/ir.md, the GPU
 * level).  LowerCtx holds only what comes from outside the IR -- the launch
 * sizes, the arrays, the options -- and what the backend hands back: the
 * PTX and the LLVM IR.  What the launch needs (grid, threads, shared
 * bytes, the argument list) is the kernel's launch header, in the IR.
 */
#ifndef BLK_LOWER_INT_H
#define BLK_LOWER_INT_H

#include <llvm-c/Core.h>

#include "ir/layout.h"
#include "lower/lower.h"
#include "support/ptrmap.h" /* BlkPtrMap: values to values, values to layouts */

/* A kernel of more ops than this (counted on its clone, before the
 * passes) is huge: thousands of unrolled stores or `when`s.  No kernel of
 * the examples or the GPU suites comes near; see `huge` below. */
enum { BLK_HUGE_KERNEL_OPS = 8000 };

typedef struct LowerCtx {
	/* inputs */
	BlkArena *a;
	BlkDiag *d;
	BlkModule *m;          /* holds the one kernel being lowered */
	BlkKernel *k;          /* the clone; its launch header (k->launch) is the launch contract */
	const int64_t *sizes;  /* the launch's sizes (their class, for dynamic ones): specialize's */
	const BlkArrayDesc *arrays; /* one per non-scratch param: specialize's */
	const BlkLowerOptions *opt;
	const char *arch;      /* opt->arch or the default, sm_90a */
	BlkSymEnv env;
	BlkSymEnv launch_env;  /* every size at the launch's own value: what the cost model
	                        * reads where a dynamic size is not compiled in (env) */
	int nthreads;          /* num_warps * 32: the threads tiles spread over */
	BlkLayout scalar;      /* rank 0, held by every thread */
	bool huge;             /* more than BLK_HUGE_KERNEL_OPS ops (driver.c): verified once,
	                        * guarded stores predicated, LLVM's short path (ptx.c) */
	bool no_stream;        /* pipeline.c makes no streams (driver.c's second try) */
	bool streamed;         /* ...it made one */
	bool stream_overflow;  /* smem-plan: past the arch's shared memory with streams (no error) */
	/* outputs */
	char *llvm_ir;         /* malloc'ed by LLVM, copied to the arena */
	const char *ptx;
} LowerCtx;

/* cost.c: the cost model's two readings of the kernel being lowered. */
void blk_lower_cost_read(const LowerCtx *c, BlkCostWork *w);
void blk_lower_cost_estimate(const LowerCtx *c, const BlkCostWork *w, BlkCost *out);

/* Passes, in pipeline order (pipeline.c lists them). */
BlkKernel *blk_lower_clone(LowerCtx *c, const BlkKernel *k);
/* A deep copy of op (its regions too) at b; vm maps what is copied to the
 * copy, values from outside op stay themselves. */
BlkOp *blk_lower_clone_op(LowerCtx *c, BlkBuilder *b, BlkPtrMap *vm, const BlkOp *op);
bool blk_lower_specialize(LowerCtx *c);
bool blk_lower_blockspec(LowerCtx *c);
/* regrid.c: a 1-D grid walking a rectangle of blocks -> that rectangle's 2-D grid. */
bool blk_lower_regrid(LowerCtx *c);
bool blk_lower_window(LowerCtx *c);
/* branches.c: `when`s spelling one step two ways -> one step. */
bool blk_lower_branches(LowerCtx *c);
/* seq_loop.c: a seq grid axis accumulating in scratch -> a plain loop's form. */
bool blk_lower_seq_loop(LowerCtx *c);
/* canonicalize.c: one normal form for equivalent spellings (tile level). */
bool blk_lower_canonicalize(LowerCtx *c);
/* coarsen.c: neighbouring programs of small dot blocks merged into one. */
bool blk_lower_coarsen(LowerCtx *c);
/* The warps a program of `warps` gets for dot accumulators of acc
 * elements (coarsen.c's widen: more than 128 a thread, doubled up to 8). */
int blk_lower_widened_warps(int warps, int64_t acc);
bool blk_lower_reduce_hoist(LowerCtx *c);
bool blk_lower_dot_engine(LowerCtx *c);
/* loop_split.c: a loop's iterations whose i32 compares are all true,
 * split off into a loop without them (causal attention's diagonal). */
bool blk_lower_loop_split(LowerCtx *c);
bool blk_lower_pipeline(LowerCtx *c);
bool blk_lower_prefetch(LowerCtx *c);
bool blk_lower_tile(LowerCtx *c);
bool blk_lower_dot_stage(LowerCtx *c);
bool blk_lower_mma_steps(LowerCtx *c);
bool blk_lower_rotate(LowerCtx *c);
/* tma_store.c: a wgmma accumulator's output block stored by TMA. */
bool blk_lower_tma_store(LowerCtx *c);
bool blk_lower_smem_plan(LowerCtx *c);
/* A SIMT dot's k steps are emitted unrolled while their FMAs a thread
 * (k steps x accumulators) stay within SIMT_UNROLL_FMAS, 64 steps of an
 * 8x8 micro-tile; more run as a loop (emit_dot.c).  Twice that (64 steps
 * of 8x16) overflows the instruction cache: 2.2x slower (gpu-notes run
 * 113). */
enum { SIMT_UNROLL_FMAS = 64 * 64 };
static inline bool blk_lower_simt_unrolled(int64_t ksteps, int64_t nacc)
{
	return ksteps * nacc <= SIMT_UNROLL_FMAS;
}
/* A SIMT dot of at most this many accumulators a thread, in a program of
 * at most 256 threads, asks for two programs an SM (128 registers a
 * thread, emit_dot.c); a larger micro-tile keeps one. */
enum { SIMT_TWO_CTA_ACC = 64, SIMT_TWO_CTA_THREADS = 256 };
/* The bytes a local_alloc of type t spans (smem_plan.c): padded rows whole. */
int64_t blk_lower_buffer_bytes(const BlkType *t);
/* The kernel's launch header (launch.c): made by specialize from the
 * launch's arrays; a kernel read from text without one gets one at the
 * first use, as for contiguous arrays of its params' shapes. */
BlkLaunch *blk_lower_make_launch(LowerCtx *c);
BlkLaunch *blk_lower_launch(LowerCtx *c);
/* Param pi's pointer argument: its strides and alignment. */
const BlkLaunchArg *blk_lower_ptr_arg(LowerCtx *c, int pi);
/* Gives a tma_load or tma_store its tensor map (attr tmap, the launch's
 * argument appended if new; a `trans` one for a tma_load of attr trans);
 * false, with an error, past BLK_MAX_TMAPS. */
bool blk_lower_note_tmap(LowerCtx *c, BlkOp *op);
/* The tensor maps in the order the kernel first uses them, those nothing
 * uses dropped: one order whichever pass made them (tma-store, the last
 * to add any, calls it). */
void blk_lower_order_tmaps(LowerCtx *c);
/* The lowest PTX ISA (times 10) that has arch, 0 for an unknown one (ptx.c). */
bool blk_lower_emit_llvm(LowerCtx *c, LLVMModuleRef *out);
bool blk_lower_ptx(LowerCtx *c, LLVMModuleRef mod);

/* false, with an error listing the arches there are, for an unknown one (ptx.c). */
bool blk_lower_check_arch(BlkDiag *d, const char *arch);

/* A `for` op as the loop passes see it (loops.c); lo, last, step are
 * prefetch.c's constant bounds. */
typedef struct BlkLoop {
	LowerCtx *c;
	BlkOp *loop;
	BlkRegion *body;
	int64_t lo, last, step;
} BlkLoop;
/* ref reaches (through views) an `in` array: nothing writes it. */
bool blk_loop_read_only(const LowerCtx *c, const BlkValue *ref);
/* ref reaches an `inout` array that L (a loop of the kernel's body, or of
 * the body of a top-level loop: persist.c's over tiles) does not write and
 * that a signal_wait before L in its region, with no write of it or region
 * in between, made ready: what other programs or ranks wrote before their
 * signals (an all-gather's rows before their product).  The wait's barrier
 * and proxy fence order those writes before any copy the pipeliner issues. */
bool blk_loop_fed_by_wait(const BlkLoop *L, const BlkValue *ref);
/* Whether r (and the regions in it) stores, swaps or adds atomically into
 * param pi (through any view or peer of it), or, for pi < 0, into any Ref. */
bool blk_lower_writes(const BlkKernel *k, const BlkRegion *r, int pi);
/* ref is a peer Ref (through views) of an `in` symmetric array: nothing
 * writes it while the kernel runs, so a copy of it may be issued early;
 * not by TMA (a tensor map holds this rank's address: blk_lower_ref_param
 * stops at the peer op, so tma_ok refuses it), by cp.async, whose address
 * is the peer's.  Other passes keep treating it as unknown (not hoisted
 * above the signal that orders it after the peer's writes). */
bool blk_loop_peer_read_only(const LowerCtx *c, const BlkValue *ref);
/* Marks in `in` (op -> op) the ops of L's body v depends on; false when v
 * depends on a carry or on an op that is not pure and region-free. */
bool blk_loop_slice(BlkLoop *L, BlkPtrMap *in, const BlkValue *v);
/* The same walk with another rule: `carried`, v may depend on carries but
 * not on the iv (rotate.c's clones at other iterations of the carries);
 * ok says which region-free ops of the body may be part of it. */
typedef bool BlkSliceOp(const LowerCtx *c, const BlkOp *op);
bool blk_loop_slice_by(BlkLoop *L, BlkPtrMap *in, const BlkValue *v, bool carried, BlkSliceOp *ok);
/* Copies op before b's insertion point, operands mapped through vm (and
 * its results added to vm). */
BlkOp *blk_loop_copy_op(LowerCtx *c, BlkBuilder *b, BlkPtrMap *vm, const BlkOp *op);
/* Clones at b the ops of `in` that come before `upto`, with the iv as iv;
 * vm maps the originals' values to the clones'. */
void blk_loop_clone_slice(BlkLoop *L, BlkBuilder *b, BlkPtrMap *in, const BlkOp *upto, BlkValue *iv,
                          BlkPtrMap *vm);
/* Appends a carry: init before the loop, next yielded; returns its arg. */
BlkValue *blk_loop_add_carry(BlkLoop *L, BlkValue *init, BlkValue *next);
/* Erases the ops of `in` nothing uses any more, last first. */
void blk_loop_erase_dead(BlkLoop *L, BlkPtrMap *in);
/* Uses of v in r and its nested regions. */
int blk_lower_uses(const BlkRegion *r, const BlkValue *v);
/* op reads v: as an operand, or inside its regions. */
bool blk_lower_op_reads(const BlkOp *op, const BlkValue *v);
BlkValue *blk_lower_i32(BlkBuilder *b, BlkLoc loc, int64_t v);

/* The layout an async_copy's threads copy its [R, C] block in (16 bytes
 * along a row; `across`: one element a piece, for a slot that lies
 * transposed): emit_memory.c walks it, and a gathered copy's index tiles
 * take it (tile.c).  attr threads: the warps sharing the copy. */
BlkLayout blk_lower_copy_layout(const LowerCtx *c, const BlkOp *copy, bool across);

/* Where a dot's staging buffers live: before the outermost `for` around
 * the dot (every execution alternates between their slots), else before
 * the dot. */
BlkOp *blk_lower_stage_site(LowerCtx *c, BlkOp *dot);
/* SMs of the GPUs sm_90a names (H100 SXM, H200): the persistent grid's
 * CTAs where the options give no device (persist.c). */
enum { BLK_LOWER_SMS = 132 };
/* The SMs of the device the kernel is for: the runtime's, else BLK_LOWER_SMS. */
int blk_lower_sms(const LowerCtx *c);
/* A load at the top of k's body (after its loops: an epilogue) of a rank-2
 * tile of at least `elements` (a residual beside a dot's accumulator): the
 * accumulator goes through shared memory in f32 to meet its layout. */
bool blk_lower_epilogue_tile(const BlkKernel *k, int64_t elements);
/* schedule.c: a top-level loop of wgmma dots is run by plain programs,
 * several an SM (attr schedule = "plain"), or warp-specialized and
 * persistent ("specialize"), by a cost model of resident work. */
bool blk_lower_schedule(LowerCtx *c);
bool blk_lower_plain_schedule(const BlkOp *loop);
bool blk_lower_persist(LowerCtx *c);
/* The dot's engine attr (dot_engine.c) is "mma": mma.sync tensor cores. */
bool blk_lower_dot_mma(const BlkOp *dot);
/* ... is "wgmma": Hopper's warpgroup tensor cores. */
bool blk_lower_dot_wgmma(const BlkOp *dot);
/* ... is either: a tensor-core dot on 16-bit operands. */
bool blk_lower_dot_tc(const BlkOp *dot);
/* An mma dot's warp grid width: its warps_n attr where that fits the tile
 * (dot_engine.c), else the default grid's. */
int blk_lower_dot_warps_n(const LowerCtx *c, const BlkOp *dot);

/* Helpers shared by the IR passes (irutil.c). */
/* Moves op and every op after it in its region to the end of r. */
void blk_lower_move_to_end(BlkOp *op, BlkRegion *r);
enum { BLK_LOWER_CHAIN_DEPTH = 6 }; /* ops a pass follows along a chain of values */
/* v is an integer (or bool) constant, a scalar or a splat, maybe
 * broadcast: its value in *k. */
bool blk_lower_splat_int(const BlkValue *v, int64_t *k);
/* In r and the regions in it: and/or with a constant operand become that
 * constant or the other operand, a select on a constant condition the
 * operand it picks (`!CAUSAL || cols <= rows` with CAUSAL false; a mask
 * the comparison fold proved). */
void blk_lower_fold_logic(BlkRegion *r);
/* v is x * c, c an f32 scalar broadcast over x's shape (a softmax's scale
 * times its scores): *x and *c, else false. */
bool blk_lower_scaled(const BlkValue *v, BlkValue **x, BlkValue **c);
/* The f32 scalar c is positive and finite at every launch: a constant,
 * a conversion, square root or reciprocal square root of one (attention's
 * rsqrt(D)). */
bool blk_lower_positive(const BlkValue *c);
/* v is defined in region r or a region inside it (an op's result or a
 * region's arg): not invariant in a loop whose body r is. */
bool blk_lower_within(const BlkRegion *r, const BlkValue *v);
/* Ops a and b have one kind, the same attributes and result types and no
 * regions (the same computation, if their operands are the same). */
bool blk_lower_alike(const BlkOp *a, const BlkOp *b);
/* a and b are the same value: one value, or results of alike pure ops on
 * equivalent operands (`k * BK` written twice); depth bounds the walk. */
bool blk_lower_equivalent(const BlkValue *a, const BlkValue *b, int depth);
/* branches.c's rules on `when`s, which canonicalize.c runs too: true if
 * op changed (it may be gone). */
bool blk_canon_when(LowerCtx *c, BlkOp *op);
/* v is computed from `on` (through the operands of the ops defining it; an
 * index map's yield from a grid index). */
bool blk_lower_depends(const BlkValue *v, const BlkValue *on);
/* v is computed from an op of that kind (with attr axis == axis where
 * axis >= 0: a program id of one grid axis), each op looked at once. */
bool blk_lower_computed_from(BlkArena *a, const BlkValue *v, BlkOpKind kind, int axis);

/* The dot v comes from through elementwise ops of v's rank (all in region
 * r unless r is NULL), or NULL: softmax(Q K^T) -> the QK dot. */
BlkOp *blk_lower_dot_behind(const BlkValue *v, const BlkRegion *r);
/* v is computed in region r, by pure ops of r and no dot, from loads of r
 * (at least one) and values from outside r: a dot operand transformed on
 * its way in (int4 weights unpacked and scaled), or such a tile's
 * transpose.  Not a load itself, nor a load's transpose. */
bool blk_lower_transformed_load(const BlkValue *v, const BlkRegion *r);
const BlkLayout *blk_lower_scalar_layout(LowerCtx *c);
bool blk_lower_const_int(const BlkValue *v, int64_t *out);
/* Dynamic sizes (`dynamic (M)`; ir.h blk_dynamic_class): after specialize,
 * k->size_dyn holds the divisor each is known to have at this launch. */
BlkSymEnv blk_lower_dyn_env(LowerCtx *c);              /* name -> divisor */
int64_t blk_lower_divisor(LowerCtx *c, const BlkSym *s); /* blk_sym_divisor under it */
bool blk_lower_is_dynamic(const LowerCtx *c);
/* s as i32 scalar IR before b's point (sizes through `size` ops). */
BlkValue *blk_lower_build_sym(BlkBuilder *b, BlkLoc loc, const BlkSym *s);
int64_t blk_lower_dim(const BlkSym *s); /* a specialized dim; dies if symbolic */
/* Moves op from its region to the end of region r; or to just after (before) pos. */
void blk_lower_move_op(BlkOp *op, BlkRegion *r);
void blk_lower_move_after(BlkOp *op, BlkOp *pos);
void blk_lower_move_before(BlkOp *op, BlkOp *pos);
/* The param a global Ref comes from (through views of its block_ref), or -1. */
int blk_lower_ref_param(const BlkValue *ref);
/* Param pi's array is one TMA can address on this launch (sm_90a, tensor
 * maps allowed): rank 2 to max_rank, the dims before the last two squeezed
 * in its block (a batch), rows and batches a positive multiple of 16 bytes
 * apart, contiguous rows, a 16-byte aligned start, extents that fit an i32.
 * trans: the same with the last two dims the other way round (an array
 * passed as a transposed view: contiguous columns, its map `trans`).  With
 * max_rank above 3 (a load's map), the box's rows may run along an earlier
 * dim than the second-last, the block squeezing every other dim but the
 * last (blk_lower_tma_rows). */
bool blk_lower_tma_array(LowerCtx *c, int pi, int max_rank, bool trans);
/* The array dim a tensor map's rows run along for param p: the last dim
 * before the last that p's block keeps (rank - 2 where it keeps none). */
int blk_lower_tma_rows(const BlkParam *p);
/* The programs of the warp_specialize whose consumer region holds op (1
 * where none does): each has its own copy of that region's buffers. */
int blk_lower_programs_at(const BlkOp *op);
/* buf[slot]: a view of a shared buffer without its first dim, keeping the
 * other dims' strides. */
BlkValue *blk_lower_slot_view(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *buf, BlkValue *slot);
/* A rank-2 shared Ref with its dims swapped (its strides swapped). */
BlkValue *blk_lower_trans_view(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *ref);
/* Calls f on every op of r and its nested regions, in order (f may not
 * erase ops other than the one it is given). */
void blk_lower_walk(BlkRegion *r, void (*f)(void *ctx, BlkOp *op), void *ctx);
#endif
