/* interp_int.h - the interpreter's run-time values (internal to
 * interp/interp*.c; its API is interp.h).
 *
 * A tile holds its elements in a compute form: f32, f16 and bf16 as float
 * (f16/bf16 already rounded to their dtype, so every value is exact in it),
 * i32 as int32_t, bool as uint8_t 0/1.  Tiles are immutable once made and
 * share their buffer by reference count, so expand_dims and the copies of
 * values into loop carries cost nothing.
 *
 * A Ref is a window on memory in the array's own storage form (f16/bf16 as
 * uint16_t bits, bool as a byte).  Per dim it knows the global index of its
 * element 0 (gstart), the block-local index of it (lstart), its extent, and
 * the two extents that bound it: the block's and the array's.  An element is
 * in bounds iff both its local and its global index are within those; views
 * only move lstart/gstart and change ext, so they compose.  Dims fixed by a
 * scalar index or squeezed away are folded into `off`; if such an index was
 * out of bounds, every element is (`dead`).
 */
#ifndef BLK_INTERP_INT_H
#define BLK_INTERP_INT_H

#include "interp/interp.h"

/* Tiles larger than this are refused (a run-time error, not a crash). */
#define BLK_INTERP_MAX_ELEMS ((int64_t)1 << 28)

typedef struct BlkIBuf {
	int refs;
	size_t bytes;
	unsigned char data[]; /* float, int32_t or uint8_t elements */
} BlkIBuf;

typedef struct BlkITile {
	BlkDType dtype;
	int rank;
	int64_t dims[BLK_MAX_RANK];
	int64_t n;
	BlkIBuf *buf;
} BlkITile;

typedef struct BlkIRef {
	unsigned char *base;
	int param;  /* the kernel param it views (peer finds that buffer on a rank); -1: scratch */
	int holder; /* the rank whose buffer of it base points into */
	BlkDType dtype;
	int rank;
	bool dead;
	int64_t off; /* elements */
	int64_t stride[BLK_MAX_RANK];
	int64_t gstart[BLK_MAX_RANK], lstart[BLK_MAX_RANK];
	int64_t ext[BLK_MAX_RANK], bext[BLK_MAX_RANK], aext[BLK_MAX_RANK];
	/* element k of dim d is index start + k * step[d] of the array (0: 1) */
	int64_t step[BLK_MAX_RANK];
} BlkIRef;

typedef enum { BLK_IVAL_NONE, BLK_IVAL_TILE, BLK_IVAL_REF } BlkIValKind;

/* A slot's value: kind says which member is set. */
typedef struct BlkIVal {
	BlkIValKind kind;
	union {
		BlkITile t; /* TILE */
		BlkIRef r;  /* REF */
	};
} BlkIVal;

/* ---- the world of ranks (world.c) ---- */

/* The ranks of one run, each on its own thread, and what they share. */
typedef struct BlkIWorld BlkIWorld;
typedef enum { BLK_IWAIT_OK, BLK_IWAIT_DEADLOCK, BLK_IWAIT_ABORTED } BlkIWait;

BlkIWorld *blk_iworld_create(int nranks);
void blk_iworld_destroy(BlkIWorld *w);
int blk_iworld_size(const BlkIWorld *w);
/* Held around every atomic when there are several ranks. */
void blk_iworld_lock(BlkIWorld *w);
void blk_iworld_unlock(BlkIWorld *w);
/* Held around an error report or a printed line. */
void blk_iworld_diag_lock(BlkIWorld *w);
void blk_iworld_diag_unlock(BlkIWorld *w);
/* signal_add (set false) or signal_set of the counter. */
void blk_iworld_signal(BlkIWorld *w, int32_t *counter, bool set, int32_t v);
/* signal_wait: until *counter >= v, then subtracts v.  DEADLOCK when no
 * rank can signal any more, ABORTED when another rank failed or *stop was
 * set; *seen: the counter's last value. */
BlkIWait blk_iworld_wait(BlkIWorld *w, int32_t *counter, int32_t v, const atomic_bool *stop,
                         int32_t *seen);
/* A rank is done (failed: the others stop waiting). */
void blk_iworld_finish(BlkIWorld *w, bool failed);

#define BLK_ITF(t) ((float *)(void *)(t)->buf->data)
#define BLK_ITI(t) ((int32_t *)(void *)(t)->buf->data)
#define BLK_ITB(t) ((uint8_t *)(t)->buf->data)

/* A new tile of dtype and shape, elements zero; the caller checked the size. */
BlkITile blk_itile_new(BlkDType dt, int rank, const int64_t *dims);
BlkITile blk_itile_retain(const BlkITile *t);
void blk_itile_release(BlkITile *t);
/* Bytes per element in compute form. */
int blk_itile_esize(BlkDType dt);
/* Rounds x to dt's precision (identity for f32). */
float blk_iround(BlkDType dt, float x);

/* ---- tile ops (interp_ops.c); operands are valid and shapes agree ---- */

/* Elementwise unary and binary ops, cast and select; `r` is allocated by
 * the caller with the result's dtype and shape.  Operands with one element
 * broadcast. */
void blk_iop_unary(BlkOpKind k, const BlkITile *a, BlkITile *r);
void blk_iop_cast(const BlkITile *a, BlkITile *r);
void blk_iop_binary(BlkOpKind k, const BlkITile *a, const BlkITile *b, BlkITile *r);
void blk_iop_fma(const BlkITile *a, const BlkITile *b, const BlkITile *c, BlkITile *r);
/* philox (w: seed, c0..c3; that word), uniform (w[0]), normal (w[0],
 * w[1]): ir/random.c's functions of each element's i32 words. */
void blk_iop_random(BlkOpKind k, int word, const BlkITile *const *w, BlkITile *r);
void blk_iop_select(const BlkITile *c, const BlkITile *a, const BlkITile *b, BlkITile *r);
/* NumPy broadcast of a into r's shape (dims align right, 1 stretches). */
void blk_iop_broadcast(const BlkITile *a, BlkITile *r);
void blk_iop_transpose(const BlkITile *a, const int *perm, int flip, BlkITile *r); /* r dim d = a dim perm[d], reversed where flip has bit d */
void blk_iop_reduce(BlkOpKind k, const BlkITile *a, int axis, BlkITile *r);
void blk_iop_argreduce(BlkOpKind k, const BlkITile *a, int axis, BlkITile *r);
void blk_iop_scan(BlkOpKind k, const BlkITile *a, int axis, bool reverse, BlkITile *r);
/* r = acc + a @ b in f32 with fmaf, k ascending; acc may be NULL. */
void blk_iop_dot(const BlkITile *a, const BlkITile *b, const BlkITile *acc, BlkITile *r);
void blk_iop_iota(int axis, BlkITile *r);
void blk_iop_splat(BlkITile *r, bool is_float, int64_t i, double f);
/* Writes a tile compactly: 3, [1, 2, 3], [[1, 2], [3, 4]]; long dims elided. */
void blk_iop_print(FILE *out, const BlkITile *t);

#endif
