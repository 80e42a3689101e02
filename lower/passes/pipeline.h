/* pipeline.h - what the pipeline pass (pipeline.c, the software
 * pipeliner) shares with its warp-specialized form (warp_spec.c). */
#ifndef BLK_PIPELINER_H
#define BLK_PIPELINER_H

#include "lower/lower_int.h"

enum { PAD_BYTES = 16 }; /* added to each row of a slot (ldmatrix's rows on distinct banks) */
/* the most shared memory an f32 (SIMT) dot's slots take: two programs an
 * SM, with room for a small transit region beside each; where the micro-
 * tile keeps one program an SM (SIMT_TWO_CTA_ACC), 160 KB, leaving 67 KB
 * of the SM's 227 for the rest (128x256x32's 3 stages take 147 KB; its 4
 * stages were no faster, run 113) */
enum { SIMT_SMEM = 110 * 1024, SIMT_SMEM_ONE = 160 * 1024 };

typedef struct Operand {
	bool regs;        /* A from registers: the mma fragments of an earlier dot */
	BlkValue *fixed;  /* a tile from outside the loop: stored once, or NULL */
	bool computed;    /* a tile the body computes from loads (blk_lower_transformed_load: int4
	                   * weights unpacked): dot_stage.c stores it each iteration, beside the
	                   * other operand's staged slab */
	BlkOp *load;      /* the slab's load */
	BlkOp *trans;     /* the transpose between it and the dot, or NULL */
	bool kmajor;      /* the slot holds the slab transposed ([C, R]): SIMT's k-major slots, whose copies
	                   * write through a trans_view; a slab of an array passed as a transposed view,
	                   * which TMA copies as it lies (warp_spec.c) */
	bool dot_trans;   /* the dot reads the slot through a trans_view */
	BlkPtrMap in;     /* the body ops its indices depend on */
	BlkValue *buf;    /* [S, R, C]; [S, C, R] where kmajor */
	bool tma;         /* warp specialized: copied by TMA (warp_spec.c) */
	bool multicast;   /* ...its rows shared out among the CTAs of a cluster, each copying its share to all */
	int same;         /* 1 + 2i + o where all[i].x[o] has the same load (one slab feeds both
	                   * dots: made, copied and erased there only); 0: its own */
	int64_t R, C;
} Operand;

enum { MAX_DOTS = 4 }; /* pipelined dots in one loop */
enum { MAX_RAW = 4 };  /* loads a computed operand comes from, staged beside the slabs */

typedef struct Staged {
	BlkOp *dot;
	Operand x[2];
} Staged;

/* One loop: all[0..n) the dots taken, s the one being looked at (all[n]
 * while it is a candidate). */
typedef struct Pipe {
	BlkLoop L;
	Staged all[MAX_DOTS + 1];
	Staged *s;
	int n;
	int S;
	int D;     /* slabs copied ahead: S - 1, or S - 2 with a wgmma group in flight */
	/* the plain 2-D loads computed operands come from (packed int4 words,
	 * i8 weights), copied into slots `num_stages` deep like the slabs and
	 * read from them where the loads were (pipeline.c raw_slabs) */
	Operand raw[MAX_RAW];
	int nraw;
	int64_t step;
} Pipe;

/* x op y, an i32 (a bool for lt, eq) scalar. */
BlkValue *blk_pipe_binop(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkValue *x, BlkValue *y);
/* bufX = local_alloc [S, R, C] (swizzled for wgmma, rows padded for
 * ldmatrix; SIMT: k-major, rows of pow2 + 4 floats), or [R, C] for a tile
 * from outside the loop, stored once. */
void blk_pipe_make_buffer(Pipe *P, BlkBuilder *b, Operand *x, const char *name);
/* x's slab is staged by another operand of the loop (same > 0): no
 * buffer, copies or erase of its own. */
static inline bool blk_pipe_shared(const Operand *x)
{
	return x->same > 0;
}
/* Each operand that shares another's slab takes its buffer (and TMA
 * choice), once the owners' are made. */
void blk_pipe_share_buffers(Pipe *P);
/* bufX[slot] as a shared Ref of the buffer's last two dims. */
BlkValue *blk_pipe_slot_view(Pipe *P, BlkBuilder *b, Operand *x, BlkValue *slot);
/* The dot's operand from a slot view, through a trans_view where
 * dot_trans (B of `x @ w.T` on tensor cores; the SIMT dot's A). */
BlkValue *blk_pipe_operand_view(Pipe *P, BlkBuilder *b, Operand *x, BlkValue *view);
/* async_copy bufX[slot] <- X at the indices vm maps (part of parts), in an
 * `if cond` (cond NULL: none); the copy. */
BlkOp *blk_pipe_copy(Pipe *P, BlkBuilder *b, BlkValue *cond, Operand *x, BlkValue *slot, BlkPtrMap *vm,
                 int part, int parts);
/* The staged loads (and transposes) out of the loop, then the index ops
 * only they used. */
void blk_pipe_erase_loads(Pipe *P);
/* v + 1, wrapped to 0 at S. */
BlkValue *blk_pipe_advance(Pipe *P, BlkBuilder *b, BlkValue *v);

/* The dot may leave its group in flight past the end of an iteration: a
 * wgmma dot accumulating into a carry of the loop whose result nothing
 * but the yield (of that carry) reads, so no instruction touches its
 * registers before the next iteration's dot. */
bool blk_pipe_in_flight(const Pipe *P, const BlkOp *dot);

/* The dots of P->L.loop (P->L and P->S set) whose slabs this pass can
 * stage, into P->all[0..n); false if none (or the loop's step is not a
 * positive constant). */
bool blk_pipe_choose(Pipe *P);

/* warp_spec.c: the loop's wgmma dots fed by a producer warpgroup, if it
 * applies (else false, nothing changed). */
bool blk_pipe_warp_specialize(Pipe *P);

#endif
