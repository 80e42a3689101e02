/* layout.h - how a tile is spread over the threads of a CTA.
 *
 * One kind of distributed layout, Triton's "blocked": along each dim d a
 * thread holds spt[d] consecutive elements, thr[d] threads cover
 * spt[d]*thr[d] elements, and that pattern repeats (reps) until the padded
 * extent pad[d] (the next power of two of the tile's extent) is covered.
 * Threads are numbered with the last dim fastest, so lanes of a warp walk
 * the last dim first: that is what makes global accesses coalesced and,
 * with spt[last]*esize == 16, 128-bit wide.
 *
 * Element coordinate along d of register r_d of the thread whose index
 * along d is t_d:   (r_d / spt[d]) * spt[d]*thr[d] + t_d*spt[d] + r_d % spt[d].
 * Registers are numbered with the last dim fastest.  Coordinates at or past
 * shape[d] are padding lanes: computed, never stored, masked on loads.
 * When prod(thr) < nthreads, threads tid >= prod(thr) hold copies of the
 * elements of tid % prod(thr) ("replicas"): they compute but do not write.
 * A rank-0 layout is a scalar held by every thread.
 *
 * The thread index along d is bits [tsh[d], tsh[d] + log2 thr[d]) of the
 * thread id.  Made layouts pack the dims last-fastest from bit 0; a
 * *slice* (a reduction's result) drops the reduced dim and keeps the
 * others' bits, so the dropped dim's threads become replicas and the
 * result sits in the threads that reduced it.  Owners are the threads
 * whose bits outside every dim's range are zero.
 *
 * The dot accumulator uses spt = [4, 4]: with a 16x16 thread grid on a
 * 128x128 tile each thread owns an 8x8 micro-tile as 2x2 blocks of 4x4.
 */
#ifndef BLK_LAYOUT_H
#define BLK_LAYOUT_H

#include <stdbool.h>
#include <stdio.h>

#include "ir.h"

typedef struct BlkLayout {
	int rank;
	int nthreads;
	int shape[BLK_MAX_RANK];
	int pad[BLK_MAX_RANK];
	int spt[BLK_MAX_RANK];
	int thr[BLK_MAX_RANK];
	int tsh[BLK_MAX_RANK]; /* lowest thread-id bit of the index along d */
	bool dot; /* made for a dot accumulator (printed as "dot<...>") */
	bool mma; /* the mma.sync C fragment (printed as "mma<...>"), see blk_layout_mma */
	/* An mma.sync operand fragment (BLK_FRAG_A "mma_a<...>", BLK_FRAG_B
	 * "mma_b<...>"): see blk_layout_mma_operand.  thr holds the warp grid
	 * as the accumulator's does ([8wm, 4wn]); spt and tsh are unused;
	 * kstep is the k elements of one mma.sync (blk_layout_tc_k). */
	int frag;
	int kstep;
	/* A *split* dim (lbits[d] > 0, mma layouts only): its thread index is
	 * lbits[d] bits at tsh[d] (low part) and the rest at hsh[d] (high
	 * part).  Reductions, broadcasts and transposes convert such a value
	 * to the default layout first (tile.c). */
	int lbits[BLK_MAX_RANK];
	int hsh[BLK_MAX_RANK];
	/* The low tlo[d] bits of the thread index along d come below the spt
	 * registers in the coordinate (0 elsewhere): the coordinate is
	 * (r / spt) * spt*thr + (t >> tlo) * (spt << tlo) + (r % spt) << tlo
	 * + t % 2^tlo.  The wgmma accumulator's rows (g + 8h + 16w: lane group
	 * g, register half h, warp w) are that with spt = 2, tlo = 3. */
	int tlo[BLK_MAX_RANK];
	/* The wgmma accumulator (printed "wgmma<warps=[w,1]>"), see
	 * blk_layout_wgmma. */
	bool wg;
	/* A SIMT dot's operand for one k step (BLK_FRAG_A "fma_a<...>": A's
	 * [M, 1] column, BLK_FRAG_B "fma_b<...>": B's [1, N] row): the
	 * accumulator's dot layout with the k dim collapsed
	 * (blk_layout_fma_operand), so each thread holds the rows (columns)
	 * of its micro-tile and the threads across them are replicas.  Only
	 * local_load makes one, only an fma dot reads it. */
	int sfrag;
	/* A shared-memory layout (the layout of a shared Ref, not of a tile):
	 * element i sits sum(i[d] * sstride[d]) elements from the Ref's start.
	 * Padding (a row longer than its extent, so ldmatrix's 8 row addresses
	 * fall on distinct banks) and transposed views are strides; a view of
	 * a buffer keeps the buffer's strides for the dims it keeps. */
	bool shared;
	int sstride[BLK_MAX_RANK];
	/* Swizzled shared memory (the layout wgmma reads, docs/ir.md):
	 * swz = 32, 64 or 128 bytes (0: none).  The contiguous dim (stride 1)
	 * is cut into column blocks of swz bytes, sblk elements apart (0: one
	 * block); within a block rows are swz bytes apart.  The byte offset o
	 * of an element from the buffer's start (aligned to 8 * swz) is
	 * o ^ (((o >> 7) & (swz/16 - 1)) << 4): 16-byte chunk j of a row
	 * lands at chunk j ^ (row % 8) for 128 bytes. */
	int swz;
	int sblk;
} BlkLayout;

/* The layout of a rank-dim shared buffer, row-major, each row of the last
 * dim padded by pad elements: strides [.., shape[last] + pad, 1]. */
BlkLayout blk_layout_shared(int rank, const int *shape, int pad);
/* The swizzled layout of a rank-dim buffer of esize-byte elements whose
 * last dim is its contiguous one: the widest swizzle (128, 64 or 32
 * bytes) whose block divides the last extent's bytes; the buffer is
 * [..., column block, row, element of the block].  swz = 0 where the rows
 * are narrower than 32 bytes or not a multiple of a block. */
BlkLayout blk_layout_shared_swizzled(int rank, const int *shape, int esize);
/* The byte offset of element offset `elems` (the strides' sum, column
 * blocks included) after the swizzle. */
long long blk_layout_swizzle(const BlkLayout *l, long long bytes);
/* A shared layout with dims a and b swapped (a transposed view). */
BlkLayout blk_layout_shared_swap(const BlkLayout *l, int a, int b);

/* The default layout: coalesced along the last dim, vec elements per
 * thread there (16 bytes of dtype when the extent allows). */
BlkLayout blk_layout_blocked(int rank, const int *shape, BlkDType dt, int nthreads);
/* The same with 16 bytes a thread for 8-bit types too (blocked caps them
 * at 8 elements, the registers an elementwise op takes): the layout of a
 * copy that holds nothing in registers (cp.async). */
BlkLayout blk_layout_copy(int rank, const int *shape, BlkDType dt, int nthreads);
/* A copy into a destination that lies the other way (a k-major slot):
 * one element a thread a piece, a warp's lanes along 32 bytes of a source
 * row (one sector) and the rest of the warp on the next rows, so its
 * writes go down as many destination rows as lanes share a row. */
BlkLayout blk_layout_copy_across(int rank, const int *shape, BlkDType dt, int nthreads);
/* Every element along dim axis in one thread (spt = the padded extent),
 * the threads spread over the other dims: the layout of a scan whose
 * combine runs element after element (emit_scan.c). */
BlkLayout blk_layout_along(int rank, const int *shape, int axis, int nthreads);
/* Whether every line of l along axis lies whole in one thread's registers
 * (blk_layout_along's, and any other layout of runs so made). */
bool blk_layout_holds_lines(const BlkLayout *l, int axis);
/* The dot accumulator layout for an [M, N] tile. */
BlkLayout blk_layout_dot(const int *shape, int nthreads);
/* The tensor-core accumulator for an [M, N] tile: the m16n8 C fragment of
 * mma.sync (lane l = 4g + t, register r -> row g + 8*(r/2), col 2t + r%2)
 * over a wm x wn grid of warps (warp w: wn-index w % wn, wm-index w / wn):
 * spt = [1, 2], thr = [8wm, 4wn]; lane bits 0-1 and warp bits 5.. walk
 * columns (t + 4 wn-index), lane bits 2-4 and the warp bits above walk
 * rows (g + 8 wm-index) -- split dims when wn > 1.  Row rep i is rows
 * i*8wm + ..., an m16 instance the reps 2i and 2i+1; n8 block j is columns
 * j*8wn + 8 wn-index + [0, 8).  wn is chosen to minimize the ldmatrix
 * count per k16 step.  blk_layout_mma_fits says when it applies
 * (lower/emit/emit_mma.c); blk_layout_mma_warps gives wn. */
BlkLayout blk_layout_mma(const int *shape, int nthreads);
/* The same fragment over a given warp grid: wn warps along N, the rest
 * along M (wn = 1: every warp owns whole rows, so row reductions and row
 * broadcasts stay inside the warp). */
BlkLayout blk_layout_mma_grid(const int *shape, int nthreads, int wn);
bool blk_layout_mma_grid_fits(int M, int N, int nthreads, int wn);
/* The operand fragments of mma.sync m16n8k16 (16-bit types) or m16n8k32
 * (8-bit ones) for a dot over a wm x wn warp grid, as ldmatrix loads them:
 * registers are i32, each 4 bytes of a row (two 16-bit elements, four
 * 8-bit ones), k step major.  The two shapes are the same bytes: a k32
 * step of bytes is laid out as a k16 step of 16-bit pairs.  Below, "k16"
 * is one step, kstep = blk_layout_tc_k(esize) elements.  A [M, K]: per k16 step ks and m16 instance mi
 * (rows 2mi and 2mi+1 of the accumulator's row reps), the four registers
 * a0..a3 of mma.sync, register (ks * M/(16wm) + mi) * 4 + q; every warp
 * column holds its warp row's copy.  B [K, N]: per ks and n8 block j
 * (columns j*8wn + 8 wn-index + [0, 8)), the registers b0, b1, register
 * (ks * N/(8wn) + j) * 2 + q.  Such a tile is made by local_load,
 * convert_layout (from an accumulator over one warp column) and
 * extract_slice (whole k16 steps), and used only by a dot (docs/ir.md). */
enum { BLK_FRAG_A = 1, BLK_FRAG_B = 2 };
BlkLayout blk_layout_mma_operand(int frag, const int *shape, int nthreads, int wn, int esize);
bool blk_layout_mma_operand_fits(int frag, const int *shape, int nthreads, int wn, int esize);
int blk_layout_warps_n(const BlkLayout *l); /* an mma or fragment layout's wn */
bool blk_layout_mma_fits(int M, int N, int K, int nthreads, int esize);
int blk_layout_mma_wn(int M, int N, int nthreads); /* 0: none fits */
/* The accumulator of wgmma.mma_async m64nNk16 over W = nthreads / 32
 * warps, W / 4 warpgroups along M: warpgroup g owns rows 64g + [0, 64)
 * of each 64W/4-row block (register bit 1 of dim 0 upward walks those
 * blocks), its warp w rows 16w + [0, 16) of that, each warp as one
 * mma.sync C fragment per n8 block: lane l = 4i + t, registers (h, c)
 * -> row 8h + i, column 2t + c.  spt = [2, 2], thr = [8W, 4], tlo =
 * [3, 0].  Register order is the layout's (row half major), not wgmma's
 * d-index order (n8 block major, emit_wgmma.c maps them).  Fits when M
 * is a multiple of 16W (whole m64 blocks per warpgroup), N a power of
 * two from 16 to 256, W a multiple of 4. */
BlkLayout blk_layout_wgmma(const int *shape, int nthreads);
bool blk_layout_wgmma_fits(int M, int N, int nthreads);
/* The fma_a (frag BLK_FRAG_A: [M, 1]) or fma_b (BLK_FRAG_B: [1, N])
 * operand of one k step of a SIMT dot whose result is in acc (a dot<>
 * layout): acc with the k dim collapsed. */
BlkLayout blk_layout_fma_operand(const BlkLayout *acc, int frag);
/* The k extent of one tensor-core step (wgmma.mma_async or mma.sync)
 * over esize-byte operands: 32 bytes of each row, k16 for f16/bf16, k32
 * for the 8-bit types (the accumulator layout is the same). */
int blk_layout_tc_k(int esize);
/* l without dim axis: what a reduction over axis leaves, in place. */
BlkLayout blk_layout_slice(const BlkLayout *l, int axis);
/* l with dim axis shrunk to extent 1 held by one thread and register (the
 * source of a broadcast along axis that moves nothing). */
BlkLayout blk_layout_collapse(const BlkLayout *l, int axis);
/* l with a new extent-1 dim at axis (expand_dims, in place). */
BlkLayout blk_layout_expand(const BlkLayout *l, int axis);
/* l's registers follow the coordinate rule above as it stands (no mma,
 * wgmma or fragment order, no split dim, no tlo): a new last dim held by
 * each thread, or its last dims merged, only renumbers them. */
bool blk_layout_plain(const BlkLayout *l);
/* A plain l with a new last dim of extent n held whole by each thread:
 * join's result, register e * pad(n) + p the operand p's register e. */
BlkLayout blk_layout_join(const BlkLayout *l, int n);
/* A plain l whose last dim each thread holds whole (thr 1, spt = pad =
 * extent) as the layout of its last two dims merged into one (a reshape
 * of [.., C, E] to [.., C * E]): the same registers in the same order,
 * *out; false where that is not so. */
bool blk_layout_merge_last(const BlkLayout *l, BlkLayout *out);
/* A broadcast from src to dst moves nothing: the dims src keeps are laid
 * out alike, the broadcast ones (extent 1) have one thread and register;
 * src's dims align with dst's last ones (numpy), dst's leading dims are new. */
bool blk_layout_bcast_local(const BlkLayout *src, const BlkLayout *dst);
/* The warps dim `axis` spans (1: its threads are lanes of one warp), so
 * the partials a reduction along it combines through shared memory. */
int blk_layout_axis_warps(const BlkLayout *l, int axis);
/* Thread-id bits that index some dim (the rest select replicas). */
int blk_layout_used_bits(const BlkLayout *l);
bool blk_layout_split(const BlkLayout *l); /* some dim's thread bits are split */
/* Along every dim a thread's elements are runs of spt consecutive ones,
 * the run of thread index t at t*spt in each rep (no split dims, no tlo,
 * not a fragment or shared layout): what a scan walks (emit_scan.c). */
bool blk_layout_runs(const BlkLayout *l);
int blk_layout_log2(int x);
int blk_layout_nregs(const BlkLayout *l);
int blk_layout_owners(const BlkLayout *l); /* prod(thr) */
int blk_layout_regs_along(const BlkLayout *l, int d); /* pad[d] / thr[d] */
/* Coordinate along d of per-dim register index rd for thread index td. */
int blk_layout_coord(const BlkLayout *l, int d, int rd, int td);
/* Register r -> per-dim register indices. */
void blk_layout_reg_split(const BlkLayout *l, int r, int *rd);
bool blk_layout_equal(const BlkLayout *a, const BlkLayout *b);
/* The text of a layout in a GPU-level type (docs/ir.md): "blocked<spt=[1,4],
 * thr=[4,32]>", "dot<...>", "slice<spt=[4], thr=[16], tsh=[4]>", "mma<warps=[2,4]>",
 * "fma_a<spt=[4,1], thr=[16,1], tsh=[4,0]>", "shared<strides=[72,1]>" (a
 * shared Ref's). */
void blk_layout_format(char *buf, size_t n, const BlkLayout *l);
const char *blk_layout_str(BlkArena *a, const BlkLayout *l);
/* A layout's text as the IR parser read it: KIND<key=[ints], ...>. */
enum { BLK_LAYOUT_MAX_KEYS = 8 };
typedef struct BlkLayoutText {
	const char *kind;
	int nkeys;
	const char *keys[BLK_LAYOUT_MAX_KEYS];
	int lens[BLK_LAYOUT_MAX_KEYS];
	int vals[BLK_LAYOUT_MAX_KEYS][BLK_MAX_RANK];
} BlkLayoutText;
/* Rebuilds the layout of a tile of this shape in a kernel of nthreads
 * threads; NULL, or what is wrong with the text. */
const char *blk_layout_from_text(const BlkLayoutText *t, int rank, const int *shape, int nthreads,
                                 int esize, BlkLayout *out);
/* Largest power of two >= n (1 for n <= 1). */
int blk_pow2ceil(int n);

#endif
