/* ir.h - blk's stateful tile IR.
 *
 * The IR is the analogue of Pallas's stateful jaxpr.  A module holds
 * kernels; a kernel's body is a region of ops in SSA form.  Values are tiles
 * (a dtype and a static, possibly symbolic shape; rank 0 is a scalar) or
 * Refs.  Refs are the only mutable state and every access to one is an
 * explicit op (load, store, swap, atomic_add).  Control flow is structured:
 * `for` and `if` are ops that own regions; a region is one straight-line
 * list of ops with block arguments, ended by `yield` where it produces
 * values.  The textual form (docs/ir.md) prints and parses back exactly.
 *
 * All IR memory comes from the module's arena.
 */
#ifndef BLK_IR_H
#define BLK_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "support/arena.h"
#include "support/diag.h"
#include "support/sym.h"

#define BLK_MAX_RANK 4
/* Grid axes: any up to this many, folded onto CUDA's three (blockspec.c). */
#define BLK_MAX_GRID 8

/* ---- dtypes ------------------------------------------------------------ */

/* X(ENUM, "name", bytes)  ORDER DTYPE: runtime/blk.h's BLK_DTYPE_* agree. */
#define BLK_DTYPES(X)            \
	X(F32, "f32", 4)         \
	X(F16, "f16", 2)         \
	X(BF16, "bf16", 2)       \
	X(I32, "i32", 4)         \
	X(BOOL, "bool", 1)       \
	X(I8, "i8", 1)           \
	X(U8, "u8", 1)           \
	X(F8E4M3, "f8e4m3", 1)   \
	X(F8E5M2, "f8e5m2", 1)   \
	X(U32, "u32", 4)

typedef enum {
#define X(e, n, b) BLK_##e,
	BLK_DTYPES(X)
#undef X
	BLK_NUM_DTYPES
} BlkDType;

const char *blk_dtype_name(BlkDType t);
int blk_dtype_size(BlkDType t);
bool blk_dtype_from_name(const char *name, BlkDType *out);
bool blk_dtype_is_float(BlkDType t); /* f32 f16 bf16 */
bool blk_dtype_is_int(BlkDType t);   /* i32 i8 u8 u32 */
bool blk_dtype_is_byte(BlkDType t);  /* i8 u8: one-byte integers, wrapped after each op */
/* f8e4m3 f8e5m2: 8-bit floats for storage, conversions and dot (no
 * arithmetic): e4m3 as OCP's E4M3FN (bias 7, no infinities, 0x7f NaN,
 * largest 448), e5m2 as E5M2 (bias 15, infinities, largest 57344). */
bool blk_dtype_is_fp8(BlkDType t);
/* f -> an fp8 dtype's bits: round to nearest even, saturated to the
 * largest finite value (infinities too, as cvt.rn.satfinite), NaN to
 * 0x7f with f's sign. */
uint8_t blk_f32_to_fp8(BlkDType t, float f);
/* An fp8 format's exponent and mantissa bits and its largest finite code
 * (the kernel's conversions, lower/emit/emit_elementwise.c, read it too). */
void blk_fp8_format(BlkDType t, int *eb, int *mb, int *maxcode);
float blk_fp8_to_f32(BlkDType t, uint8_t b); /* exact */
/* v wrapped to an integer dtype's range (two's complement, as NumPy's i8
 * and u8 arithmetic and astype do); i32 and others: as is. */
int32_t blk_int_wrap(BlkDType t, int64_t v);
/* f32 -> an integer dtype t as astype converts: toward zero, saturated to
 * t's range, NaN as 0 (i32: blk_f32_to_i32). */
int32_t blk_f32_to_int(BlkDType t, float f);

/* f32 -> i32 as astype converts, and as a float constant of an integer
 * tile is taken: toward zero, saturated, NaN as 0 (cvt.rzi.s32.f32).  The
 * interpreter and the GPU lowering both use these, so they agree. */
int32_t blk_f32_to_i32(float x);
/* A load's float fill for an integer array: truncated where it is in i32's
 * range, else 0 (a -inf fill is meant for float arrays). */
int32_t blk_fill_to_i32(double f);
/* i32 `x ~/ y` and `x % y` (floor, as Python), defined for every input:
 * x ~/ 0 == 0 and x % 0 == 0; INT32_MIN ~/ -1 wraps to INT32_MIN.  The
 * interpreter and constant folding call these; lower/emit/emit_elementwise.c
 * emits the same function. */
int32_t blk_i32_floordiv(int32_t x, int32_t y);
int32_t blk_i32_mod(int32_t x, int32_t y);
/* i32 `x << y` and `x >> y` (arithmetic), defined for every input: the
 * amount is taken as unsigned, so one outside [0, 32) (negative ones
 * included) shifts every bit out: x << y == 0, x >> y == (x < 0 ? -1 : 0),
 * as numpy and PTX's shl/shr do.  lower/emit/emit_elementwise.c emits the same. */
int32_t blk_i32_shl(int32_t x, int32_t y);
int32_t blk_i32_shr(int32_t x, int32_t y);
/* u32 (held as the i32 with its bits): `x ~/ y`, `x % y` unsigned, x ~/ 0
 * == x % 0 == 0 as for i32; `x >> y` logical, an amount outside [0, 32)
 * gives 0; `<` and friends, max, min unsigned.  lower/emit/emit_elementwise.c
 * emits the same. */
int32_t blk_u32_div(int32_t x, int32_t y);
int32_t blk_u32_mod(int32_t x, int32_t y);
int32_t blk_u32_shr(int32_t x, int32_t y);
bool blk_u32_lt(int32_t x, int32_t y);

/* Random numbers (ir/random.c), the definition docs/language.md gives:
 * Philox4x32-10 and two conversions of its 32-bit words to f32.  The
 * interpreter calls these; lower/emit/emit_random.c emits the same
 * operations in the same order, so the GPU gives the same bits. */
#define BLK_PHILOX_M0 0xD2511F53u /* round multipliers */
#define BLK_PHILOX_M1 0xCD9E8D57u
#define BLK_PHILOX_W0 0x9E3779B9u /* key increments (Weyl sequence) */
#define BLK_PHILOX_W1 0xBB67AE85u
#define BLK_PHILOX_ROUNDS 10
/* ctr[4] through 10 rounds under the key (k0, k1), in place. */
void blk_philox(uint32_t k0, uint32_t k1, uint32_t ctr[4]);
/* The key an i32 seed gives: the seed sign-extended to 64 bits, low word
 * first (what Triton's philox makes of an i32 seed). */
uint32_t blk_philox_key_hi(int32_t seed);
/* A word as f32 in [0, 1): |x| of the word as i32, its negative ones
 * folded by ~x onto [0, 2^31), times (1 - 2^-24) 2^-31. */
float blk_rand_uniform(uint32_t x);
/* A standard normal from two words by Box-Muller's first output:
 * sqrt(-2 log max(u1, 1e-7)) cos(2 pi u2), u = blk_rand_uniform, log and
 * cos built of f32 adds, products, fmas, one division and a sqrt. */
float blk_rand_normal(uint32_t a, uint32_t b);
/* The constants of those (the emitter builds the same float constants). */
#define BLK_RAND_SCALE 0x1.fffffep-32f   /* (1 - 2^-24) 2^-31: 2^31 - 1 maps below 1 */
#define BLK_RAND_TINY 1e-7f              /* u1's floor: log(0) never taken */
#define BLK_RAND_LN2 0.693147182f
#define BLK_RAND_MID 0x3faaaaabu         /* 4/3's bits: log's mantissa goes to [2/3, 4/3) */
/* 2 atanh(s) = 2s + s^3 (2/3 + s^2 (2/5 + s^2 (2/7 + s^2 2/9))) */
#define BLK_RAND_LOG_C { 0.666666687f, 0.400000006f, 0.285714298f, 0.222222224f }
/* cos(2 pi z) = 1 + q (c1 + q (c2 + ...)), q = z^2, z in [0, 1/8] (Taylor) */
#define BLK_RAND_COS_C { -19.7392082f, 64.9393921f, -85.4568176f, 60.2446404f, -26.4262562f }
/* sin(2 pi z) = z (s0 + q (s1 + ...)) */
#define BLK_RAND_SIN_C { 6.28318548f, -41.3417015f, 81.6052475f, -76.7058563f, 42.0586929f }

/* Correctly rounded (nearest-even) conversions, NaN and Inf kept. */
float blk_f16_to_f32(uint16_t h);
uint16_t blk_f32_to_f16(float f);
float blk_bf16_to_f32(uint16_t h);
uint16_t blk_f32_to_bf16(float f);

/* ---- types ------------------------------------------------------------- */

typedef enum { BLK_TYPE_TILE, BLK_TYPE_REF } BlkTypeKind;

/* Memory space of a Ref: kernel arrays are global, scratch is shared. */
typedef enum { BLK_SPACE_GLOBAL, BLK_SPACE_SHARED } BlkSpace;

struct BlkLayout; /* ir/layout.h */

/* Small and copied by value.  TILE with rank 0 is a scalar.
 * REF: a view of memory of the given dtype and shape.
 * layout: NULL at the tile level; at the GPU level (after lower/'s tile
 * pass) how a tile of rank >= 1 is spread over the CTA's threads, printed
 * after the shape: f32[64, 64]{mma<warps=[2,2]>}. */
typedef struct BlkType {
	BlkTypeKind kind;
	BlkDType dtype;
	int rank;
	const BlkSym *dims[BLK_MAX_RANK];
	BlkSpace space; /* REF only */
	const struct BlkLayout *layout;
} BlkType;

BlkType blk_type_scalar(BlkDType t);
BlkType blk_type_tile(BlkDType t, int rank, const BlkSym *const *dims);
BlkType blk_type_ref(BlkDType t, int rank, const BlkSym *const *dims, BlkSpace space);
/* Same kind, dtype, shape, space and (where both have one) thread mapping. */
bool blk_type_equal(const BlkType *a, const BlkType *b);
bool blk_type_is_scalar(const BlkType *t);
/* Text form: i32, f32[64, K], ref<f32[64, K]>, ref<shared f32[64, 64]>,
 * f32[64, 64]{blocked<spt=[1,4], thr=[4,32]>} */
void blk_type_print(FILE *out, const BlkType *t);
/* Same text, arena-allocated (for messages). */
const char *blk_type_str(BlkArena *a, const BlkType *t);

/* ---- values, ops, regions --------------------------------------------- */

typedef struct BlkOp BlkOp;
typedef struct BlkRegion BlkRegion;

typedef struct BlkValue {
	BlkType type;
	BlkOp *def;         /* defining op, or NULL for a region argument */
	BlkRegion *owner;   /* region argument: its region */
	int index;          /* result number or argument number */
	const char *name;   /* source name hint ("acc"); may be NULL */
	int id;             /* scratch for printers and passes */
} BlkValue;

/* How a Ref access addresses one dim of the Ref (Pallas indexers).
 * The operands of an access op are: the ref, then one i32 scalar per
 * SCALAR or DS entry and one i32 tile per GATHER entry, in order, then
 * (store/swap/atomics) the value.  GATHER dims are dropped, and the dims
 * of the accessed tile that its GATHER operands have (each has the whole
 * accessed shape) sit where the first GATHER dim was (numpy's rule for
 * adjacent index arrays). */
typedef enum {
	BLK_INDEX_FULL,   /* `:` the whole dim */
	BLK_INDEX_SCALAR, /* i: one element; the dim is dropped from the result */
	BLK_INDEX_DS,     /* ds(start, size[, step]): size elements from start, step apart; size, step static */
	BLK_INDEX_GATHER, /* g: element e of the accessed tile reads index operand's e */
} BlkIndexKind;

typedef struct BlkIndex {
	BlkIndexKind kind;
	const BlkSym *size; /* DS only */
	int64_t step;       /* DS only: elements apart (0 or 1: adjacent; blk_index_step) */
} BlkIndex;

static inline int64_t blk_index_step(const BlkIndex *ix)
{
	return ix->kind == BLK_INDEX_DS && ix->step > 1 ? ix->step : 1;
}

typedef enum {
	BLK_ATTR_INT,
	BLK_ATTR_FLOAT,
	BLK_ATTR_STRING,
	BLK_ATTR_DTYPE,
	BLK_ATTR_INDEX,   /* one BlkIndex per dim of the accessed ref */
} BlkAttrKind;

typedef struct BlkAttr {
	const char *name;
	BlkAttrKind kind;
	union {
		int64_t i;           /* INT */
		double f;            /* FLOAT */
		const char *s;       /* STRING */
		BlkDType dtype;      /* DTYPE */
		struct {
			int n;
			const BlkIndex *v;
		} index;             /* INDEX */
	};
} BlkAttr;

#define BLK_OPF_PURE 1u
#define BLK_OPF_EFFECT 2u
#define BLK_OPF_TERM 4u
#define BLK_OPF_ELEMENTWISE 8u

typedef enum {
#define OP(e, n, f) BLK_OP_##e,
#include "ops.def"
#undef OP
	BLK_NUM_OPS
} BlkOpKind;

const char *blk_op_name(BlkOpKind k);
/* atomic_add, atomic_max, atomic_min, atomic_cas (ORDER OP keeps them
 * together): accesses that read and write each element at once. */
bool blk_op_is_atomic(BlkOpKind k);
/* reduce_sum ... reduce_argmin (ORDER OP keeps them together). */
static inline bool blk_op_is_reduce(BlkOpKind k)
{
	return k >= BLK_OP_REDUCE_SUM && k <= BLK_OP_REDUCE_ARGMIN;
}
/* cumsum, cumprod, cummax, cummin (ORDER OP keeps them together). */
bool blk_op_is_scan(BlkOpKind k);
/* An access some of whose dims are GATHER (its idx attr). */
bool blk_op_gathers(const BlkOp *op);
/* signal_add, signal_set, signal_wait (ORDER OP keeps them together). */
static inline bool blk_op_is_signal(BlkOpKind k)
{
	return k >= BLK_OP_SIGNAL_ADD && k <= BLK_OP_SIGNAL_WAIT;
}
/* An access with a DS dim of step > 1 (its idx attr). */
bool blk_op_strided(const BlkOp *op);
/* A transpose's order: perm[d] the operand dim of result dim d, from attr
 * perm ("021") or, without it, rank 2's swap; false if it is not a
 * permutation of rank dims. */
bool blk_transpose_perm(const BlkOp *op, int rank, int *perm);
/* A transpose's attr flip: a bit per result dim that runs backwards (0:
 * none).  A plain transpose (rank 2's swap, no flip) is what dot operands
 * take as `w.T`. */
int blk_transpose_flip(const BlkOp *op);
bool blk_transpose_plain(const BlkOp *op);
/* A stride as a kernel with dynamic sizes sees it (blk_dynamic_class): 0
 * and 1 exactly, else -16 for a positive multiple of 16, -1 for any other. */
int64_t blk_stride_class(int64_t stride);
unsigned blk_op_flags(BlkOpKind k);
bool blk_op_from_name(const char *name, BlkOpKind *out);
/* The operand and result counts an op of kind k must have (docs/ir.md):
 * min..max operands (max -1: no limit) and nresults (-1: one per operand
 * after the third, as `for`; -2: one per operand, as `scan`).  False for kinds with no fixed rule. */
bool blk_op_arity(BlkOpKind k, int *min_operands, int *max_operands, int *nresults);

struct BlkOp {
	BlkOpKind kind;
	BlkLoc loc;
	int noperands;
	BlkValue **operands;
	int nresults;
	BlkValue **results;
	int nregions;
	BlkRegion **regions;
	int nattrs;
	BlkAttr *attrs;
	BlkRegion *parent;
	BlkOp *prev, *next;
};

/* A region is one block: arguments and a doubly linked list of ops. */
struct BlkRegion {
	int nargs;
	BlkValue **args;
	BlkOp *first, *last;
	BlkOp *parent; /* owning op; NULL for a kernel body or an index map */
};

/* ---- kernels and modules ---------------------------------------------- */

typedef enum { BLK_ACCESS_IN, BLK_ACCESS_OUT, BLK_ACCESS_INOUT, BLK_ACCESS_SCRATCH } BlkAccess;
const char *blk_access_name(BlkAccess a); /* "in" "out" "inout" "scratch" */

/* A kernel parameter: an array the launch passes (in/out/inout) with its
 * BlockSpec, or a scratch buffer (no spec; shape static).
 *
 * BlockSpec: block[d] is the block's extent along array dim d (a sym), or
 * squeezed[d] (Pallas's None: extent 1, dim dropped from the block Ref).
 * index_map's args are the grid indices (i32 scalars, one per grid axis); it
 * yields one i32 block index per array dim.  The block of program p starts
 * at element index_map(p)[d] * block[d] along dim d.
 *
 * Scalar prefetch (Pallas's PrefetchScalarGridSpec): a `prefetch` param is
 * an i32 array passed whole to every program; the index maps of the other
 * params take, after the grid indices, one Ref arg per prefetch param in
 * param order (the array, as in the body), so a block can sit where an
 * array says.  A prefetch param's own map takes the grid indices only. */
typedef struct BlkParam {
	const char *name;
	BlkLoc loc;
	BlkAccess access;
	BlkDType dtype;
	int rank;
	const BlkSym *shape[BLK_MAX_RANK];
	const BlkSym *block[BLK_MAX_RANK];
	bool squeezed[BLK_MAX_RANK];
	BlkRegion *index_map;  /* NULL for scratch */
	bool prefetch; /* access IN, i32, whole: a Ref arg of every other param's index map */
	/* Several GPUs: a symmetric param has a buffer of the same shape on
	 * every rank, which `peer` reaches; a signal param (access INOUT, i32,
	 * symmetric) is a row of counters only the signal ops touch. */
	bool symmetric;
	bool signal;
} BlkParam;

typedef enum { BLK_CPARAM_INT, BLK_CPARAM_FLOAT, BLK_CPARAM_BOOL, BLK_CPARAM_DTYPE } BlkCParamKind;

/* Where a compile-time parameter appears as a size (BlkCParam.uses). */
enum {
	BLK_CPARAM_IN_SHAPE = 1, /* in an array parameter's shape: fixed by the arrays */
	BLK_CPARAM_IN_SIZE = 2,  /* as a block dim, a tile's shape, a ds width */
	BLK_CPARAM_IN_GRID = 4,  /* in a grid extent (split-K's S) */
};

/* A compile-time parameter with the value this compilation used.  An
 * `auto` one (INT) holds a stand-in value until the runtime chooses
 * (runtime/auto.c): the kernel is then compiled again with the choice. */
typedef struct BlkCParam {
	const char *name;
	BlkCParamKind kind;
	int64_t i;      /* INT, BOOL */
	double f;       /* FLOAT */
	BlkDType dtype; /* DTYPE */
	bool is_auto;   /* `NAME = auto` or -D NAME=auto, not yet chosen */
	unsigned uses;  /* BLK_CPARAM_IN_* */
} BlkCParam;

/* ---- the launch contract -------------------------------------------------
 * A GPU-level kernel's `launch` header (docs/ir.md): everything the runtime
 * and AOT C need to launch its PTX, in the IR so that --dump-after shows it
 * and emission can start from text.  Written by the passes that decide it:
 * specialize the argument list, blockspec the grid, persist persistence,
 * warp_spec the threads, warp_spec and tma-store the tensor maps, dot-engine
 * the PTX ISA an instruction needs, smem-plan the shared bytes. */
typedef enum BlkArgKind {
	BLK_ARG_PTR,    /* a global pointer to a param's array */
	BLK_ARG_TMAP,   /* a 128-byte CUtensorMap of a param's array, by value (a grid constant) */
	BLK_ARG_SIZE,   /* a dynamic size, i32 */
	BLK_ARG_STRIDE, /* a dynamic stride (elements) of a param's array, i64 */
	/* several ranks (a kernel with a symmetric param or my_rank/world) */
	BLK_ARG_PEERS,   /* a symmetric param: a global pointer to world u64s, rank r's base of its buffer */
	BLK_ARG_RANK,    /* this rank, i32 */
	BLK_ARG_WORLD,   /* the number of ranks, i32 */
	BLK_ARG_TIMEOUT, /* how long a signal_wait may wait, nanoseconds, i64 */
} BlkArgKind;

/* One kernel argument; the list is in ABI order: every PTR (param order),
 * then every TMAP, SIZE, STRIDE, PEERS (param order), RANK, WORLD, TIMEOUT. */
typedef struct BlkLaunchArg {
	BlkArgKind kind;
	int param;       /* PTR, TMAP, STRIDE: the kernel param (never scratch) */
	int dim;         /* STRIDE: which of its strides */
	const char *size; /* SIZE: the size's name */
	/* PTR: the array's strides as compiled in, in elements; a dynamic one
	 * (a STRIDE argument) is -d, d a divisor it is known to have.  And the
	 * bytes the pointer is known aligned to. */
	int64_t strides[BLK_MAX_RANK];
	int align;
	/* TMAP: boxes of box[0] (innermost) x box[1] elements of the array's
	 * last two dims, swizzled over `swizzle` bytes (32, 64, 128); `trans`:
	 * the map takes those two dims the other way round, innermost the one
	 * of stride 1 (an array passed as a transposed view: box[0] runs along
	 * its dim rank - 2, and a box lands in shared memory transposed) */
	int box[2], swizzle;
	bool trans;
	/* TMAP: the array dim box[1]'s rows run along: rank - 2, or an earlier
	 * dim where the block squeezes the dims between it and the last
	 * (Pallas's None on a middle dim: [B, S, H, D] in blocks (None, BQ,
	 * None, D)); every dim but these two a box of 1 */
	int rows;
} BlkLaunchArg;

typedef struct BlkLaunch {
	/* The CUDA grid x, y, z (NULL before blockspec): constants, or
	 * expressions of dynamic sizes evaluated at each launch
	 * (blk_launch_grid).  persist > 0: a persistent kernel, launched as
	 * min(x * y * z, persist) CTAs along x that walk the x * y * z tiles.
	 * cluster > 1: CTAs run in clusters of that many along x (their
	 * count a multiple of it), sharing slabs by TMA multicast. */
	const BlkSym *grid[3];
	int persist, cluster;
	/* Per kernel grid axis: its CUDA axis (0..2), -1 for a seq axis (a
	 * loop).  An axis past the third shares z: its program id is
	 * (ctaid.z / div) % mod (div NULL: not folded). */
	int axis[BLK_MAX_GRID];
	const BlkSym *div[BLK_MAX_GRID], *mod[BLK_MAX_GRID];
	/* Per kernel grid axis: how many of the source's programs one program
	 * runs (coarsen.c; 0 or 1: one), its blocks that many times longer
	 * along the axis: the grid and blocks here are the merged ones. */
	int merge[BLK_MAX_GRID];
	int threads;     /* per CTA, warp-specialized warps included */
	int64_t smem;    /* dynamic shared memory per CTA, bytes */
	int isa;         /* the PTX ISA version the code needs, times 10 (80: 8.0) */
	int nargs;
	BlkLaunchArg *args;
} BlkLaunch;

typedef struct BlkKernel {
	const char *name;
	BlkLoc loc;
	int nparams;
	BlkParam *params;        /* declaration order */
	int nsizes;
	const char **sizes;      /* launch sizes, in order of first appearance */
	/* per size (NULL: all 0): 0 compiled in at each launch; > 0 dynamic, a
	 * kernel argument (`dynamic (M)`), the value a known divisor of it
	 * (1 before specialization; the class the launch fell in after) */
	int64_t *size_dyn;
	int grid_rank;
	const BlkSym *grid[BLK_MAX_GRID];
	bool grid_seq[BLK_MAX_GRID]; /* sequential axis: runs in order inside one program, scratch persists */
	int ncparams;
	BlkCParam *cparams;
	int num_warps, num_stages;
	/* args: one Ref per param, in param order.  An array param's Ref is its
	 * block (shape: block dims minus squeezed ones); scratch is the buffer. */
	BlkRegion *body;
	BlkLaunch *launch;       /* NULL above the GPU level (before specialize) */
	struct BlkKernel *next;
} BlkKernel;

typedef struct BlkModule {
	BlkArena *arena;
	BlkKernel *first, *last;
	int nkernels;
} BlkModule;

/* The launch's grid at these sizes (env: the dynamic sizes' values; a
 * persistent grid as min(its programs, persist) CTAs): false if an extent
 * does not evaluate or is over CUDA's limits (launch.c). */
bool blk_launch_grid(const BlkLaunch *l, const BlkSymEnv *env, unsigned grid[3]);
/* The grid is a constant one (no dynamic size in it). */
bool blk_launch_grid_static(const BlkLaunch *l);
/* Clusters (cluster > 1) divide the CTAs along x of a constant grid. */
bool blk_launch_cluster_fits(const BlkLaunch *l);
/* Appends an argument at its place in ABI order; returns its index. */
int blk_launch_add_arg(BlkArena *a, BlkLaunch *l, const BlkLaunchArg *arg);
/* The index among the TMAP args of the one for (param, box, swizzle,
 * trans), appended if there is none; -1 past BLK_MAX_TMAPS. */
enum { BLK_MAX_TMAPS = 8 };
int blk_launch_tmap(BlkArena *a, BlkLaunch *l, int param, const int box[2], int swizzle, bool trans, int rows);
/* The index among the TMAP args of the one for (param, box, swizzle,
 * trans), or -1. */
int blk_launch_find_tmap(const BlkLaunch *l, int param, const int box[2], int swizzle, bool trans);
/* The i-th argument of this kind, or NULL. */
const BlkLaunchArg *blk_launch_nth(const BlkLaunch *l, BlkArgKind kind, int i);
int blk_launch_count(const BlkLaunch *l, BlkArgKind kind);
/* A deep copy in a. */
BlkLaunch *blk_launch_copy(BlkArena *a, const BlkLaunch *l);
/* The launch header as the IR prints it, alone; and parsed back from such
 * text (the disk cache keeps it so), NULL with an error in d. */
void blk_launch_print(FILE *out, const BlkLaunch *l, const BlkKernel *k);
BlkLaunch *blk_launch_parse(BlkArena *a, BlkDiag *d, const BlkKernel *k, const BlkSource *src);

/* The index of param pi among the non-scratch params (the arrays: the
 * runtime's tensors, BlkArrayDesc lists). */
int blk_kernel_array_index(const BlkKernel *k, int pi);

BlkModule *blk_module_create(BlkArena *a);
BlkKernel *blk_kernel_add(BlkModule *m, const char *name, BlkLoc loc);
BlkKernel *blk_module_find(const BlkModule *m, const char *name);

/* ---- building ---------------------------------------------------------- */

BlkRegion *blk_region_create(BlkArena *a);
BlkValue *blk_region_add_arg(BlkArena *a, BlkRegion *r, BlkType type, const char *name);

/* Inserts new ops into `region` before `before` (NULL: at the end). */
typedef struct BlkBuilder {
	BlkArena *arena;
	BlkRegion *region;
	BlkOp *before;
} BlkBuilder;

void blk_builder_at_end(BlkBuilder *b, BlkArena *a, BlkRegion *r);
void blk_builder_before(BlkBuilder *b, BlkArena *a, BlkOp *op);

/* Creates an op with the given operands and result types and nregions empty
 * regions (their args added by the caller), and inserts it. */
BlkOp *blk_build(BlkBuilder *b, BlkOpKind k, BlkLoc loc, int noperands,
                 BlkValue *const *operands, int nresults, const BlkType *types,
                 int nregions);
/* Shorthand for ops with one result; returns the result. */
BlkValue *blk_build1(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkType type,
                     int noperands, BlkValue *const *operands);
BlkValue *blk_build_const_int(BlkBuilder *b, BlkLoc loc, BlkType type, int64_t v);
BlkValue *blk_build_const_float(BlkBuilder *b, BlkLoc loc, BlkType type, double v);

void blk_op_set_int(BlkArena *a, BlkOp *op, const char *name, int64_t v);
void blk_op_set_float(BlkArena *a, BlkOp *op, const char *name, double v);
void blk_op_set_string(BlkArena *a, BlkOp *op, const char *name, const char *s);
void blk_op_set_dtype(BlkArena *a, BlkOp *op, const char *name, BlkDType t);
void blk_op_set_index(BlkArena *a, BlkOp *op, const char *name, int n, const BlkIndex *idx);
const BlkAttr *blk_op_attr(const BlkOp *op, const char *name); /* NULL if absent */
void blk_op_remove_attr(BlkOp *op, const char *name); /* nothing if absent */
int64_t blk_op_int(const BlkOp *op, const char *name, int64_t dflt);
/* The kernel param a Ref views: ref is a body arg, a block_ref, or a view,
 * peer or trans_view of one; -1 for anything else (scratch allocations,
 * scoped args). */
int blk_ref_param(const BlkKernel *k, const BlkValue *ref);
/* Whether k runs in a world of ranks: it has a symmetric param or asks
 * my_rank() or world(), in its body or an index map (its launch then
 * takes rank, world, timeout). */
bool blk_kernel_multi_rank(const BlkKernel *k);
/* Whether k's body has a signal_add, signal_set or signal_wait: programs
 * that signal one another (the GPU passes keep the stores a signal may
 * follow plain, the stages at num_stages, a copying loop before the tile
 * loop non-persistent; docs/backend.md). */
bool blk_kernel_signals(const BlkKernel *k);

/* Unlinks op from its region (its results must be unused). */
void blk_op_erase(BlkOp *op);
/* Replaces every use of `from` by `to` inside r and its nested regions. */
void blk_replace_uses(BlkRegion *r, BlkValue *from, BlkValue *to);

/* ---- text, checking ---------------------------------------------------- */

void blk_ir_print_module(FILE *out, const BlkModule *m);
void blk_ir_print_kernel(FILE *out, const BlkKernel *k);
/* Parses the printed form back.  Errors go to d with locations in src;
 * returns NULL if there were any. */
BlkModule *blk_ir_parse(BlkArena *a, BlkDiag *d, const BlkSource *src);
/* Structural and type checks of every op (docs/ir.md).  `stage` names the
 * pass that just ran, for the message: "IR invalid after PASS: ...".
 * Reports through d at the op's location; returns false if invalid. */
bool blk_ir_verify(const BlkModule *m, BlkDiag *d, const char *stage);

/* ---- launch-time binding ----------------------------------------------- */

/* What a launch passes for one array param: element type, shape, and
 * strides in elements (row-major contiguous is the common case), and what
 * the data pointer is known aligned to, in bytes (a power of two; 0 means
 * 16, what cudaMalloc and torch give an allocation's start -- a slice can
 * start anywhere, and the generated code vectorizes only as far as this). */
typedef struct BlkArrayDesc {
	BlkDType dtype;
	int rank;
	int64_t shape[BLK_MAX_RANK];
	int64_t strides[BLK_MAX_RANK];
	int align;
} BlkArrayDesc;

/* Binds the kernel's launch sizes from the arrays (one per non-scratch param,
 * in param order) and checks every dtype, rank and shape.  values must have
 * room for k->nsizes.  Errors name the param and the mismatch; false if any. */
bool blk_bind_sizes(const BlkKernel *k, const BlkArrayDesc *arrays, int narrays,
                    int64_t *values, BlkDiag *d);
/* What bound sizes imply (blk_bind_sizes calls it last): every grid extent
 * >= 0, every block and scratch dim >= 1, all below 2^31. */
bool blk_check_launch_dims(const BlkKernel *k, const int64_t *values, BlkDiag *d);

/* ---- dynamic sizes (`dynamic (M)`) ------------------------------------- */

/* The compiled code of a kernel with dynamic sizes depends only on the
 * launch's class, not on those sizes' values.  From bound sizes and the
 * arrays, blk_dynamic_class writes the class as sizes and array descs in
 * which a run-time quantity is negative: -g for "not known now, divisible
 * by g".  A dynamic size equal to 1 stays 1 (compiled in, as Triton does);
 * any other gets g = the lcm of those of its candidates that divide it:
 * 16, the constant block dims of the array dims it is the shape of, and
 * the constant ds sizes of accesses along such dims.  An array dim whose
 * shape uses a dynamic size becomes -(the divisor that implies), and every
 * stride of every array other than 0 and 1 -16 if a positive multiple of
 * 16, else -1 (a view's strides may come from any size).  Everything else is
 * copied.  csizes/carrays may be the same memory as sizes/arrays.
 * Returns whether anything is dynamic.  The compiled code then takes each
 * negative size (i32) and each negative stride (i64) as a kernel argument
 * (lower.h). */
bool blk_dynamic_class(const BlkKernel *k, const int64_t *sizes, const BlkArrayDesc *arrays,
                       int narrays, int64_t *csizes, BlkArrayDesc *carrays);

#endif
