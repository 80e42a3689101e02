/* check.h - the checker's results, shared by check*.c and lower_ast.c.
 *
 * The checker does not change the AST (the parser owns it).  What it learns
 * about each node (its type, the binding a name denotes, the builtin a call
 * names, how an index addresses a Ref) goes into a side table keyed by the
 * node's address (CkInfo); lowering reads it back.  Everything lives in the
 * compilation's arena.
 */
#ifndef BLK_CHECK_H
#define BLK_CHECK_H

#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "support/ptrmap.h"

/* What an expression denotes.  The kinds use these CkType fields:
 *   POISON  nothing: an error was reported; consumers stay silent
 *   VOID    nothing: a fori_loop without carries, atomic_add
 *   VALUE   t (a tile; rank 0 a scalar), weak, konst/i/f
 *   REF     t (kind REF), access, root (the binding it is a view of)
 *   TUPLE   n, elems
 *   DTYPE   dtype (a dtype keyword or a dtype cparam) */
typedef enum { CK_POISON, CK_VOID, CK_VALUE, CK_REF, CK_TUPLE, CK_DTYPE } CkKind;

/* Literals (and constant expressions of them and of compile-time params)
 * are weakly typed: they take the dtype of the other operand.  A weak value
 * is always a compile-time constant scalar. */
typedef enum { CK_STRONG, CK_WEAK_INT, CK_WEAK_FLOAT } CkWeak;

typedef struct BlkCkBind BlkCkBind;

typedef struct CkType {
	CkKind kind;
	BlkType t;
	CkWeak weak;
	bool konst;      /* VALUE scalar with a known value: i (ints, bools) or f */
	int64_t i;
	double f;
	BlkAccess access;
	const BlkCkBind *root;
	int n;
	struct CkType *elems;
	BlkDType dtype;
} CkType;

/* What a name denotes. */
typedef enum {
	CK_BIND_PARAM,  /* a kernel param: type REF; param = its index */
	CK_BIND_CPARAM, /* a compile-time param: cp */
	CK_BIND_SIZE,   /* a launch size: i32 scalar */
	CK_BIND_VALUE,  /* let, loop var, carry, index-map param, scoped scratch */
} CkBindKind;

struct BlkCkBind {
	CkBindKind kind;
	const char *name;
	BlkLoc loc;
	CkType type;
	BlkCParam *cp;       /* CPARAM */
	int param;           /* PARAM */
	BlkValue *value;     /* lowering's current value of the binding */
	BlkCkBind *up;       /* the enclosing binding (scope chain) */
};

/* Builtin functions, defined once in builtins.def (its head says what
 * each column means); blk_ck_builtins is indexed by CkBuiltin. */
typedef enum {
	CK_B_NONE,
#define BUILTIN(id, name, nmin, nmax, kw0, kw1, dtype, op, flags) CK_B_##id,
#include "frontend/builtins.def"
#undef BUILTIN
	CK_NUM_BUILTINS
} CkBuiltin;

typedef enum { CK_DT_OWN, CK_DT_FLOAT, CK_DT_NUMERIC } CkDTypeRule;
enum { CK_BF_METHOD = 1, CK_BF_METHOD_POS = 2, CK_BF_SIZE = 4, CK_BF_MAP = 8 };
#define CK_NO_OP BLK_NUM_OPS /* no single op (builtins.def) */

typedef struct CkBuiltinInfo {
	const char *name;  /* "" for CK_B_NONE */
	int nmin, nmax;    /* positional arguments; -1: its checker counts them */
	const char *kw[2]; /* keyword arguments, NULL: none */
	CkDTypeRule dtype;
	BlkOpKind op;      /* CK_NO_OP: lowering builds several */
	unsigned flags;    /* CK_BF_* */
} CkBuiltinInfo;

extern const CkBuiltinInfo blk_ck_builtins[CK_NUM_BUILTINS];

/* A Ref access resolved against the Ref's rank: one BlkIndex per Ref dim,
 * and for SCALAR/DS dims the AST index that gives the start (src), or
 * where bit d of konst is set the constant start[d] (a slice `lo:hi`, a
 * DS dim; a tile's negative index counted from the end);
 * newaxes: bit i set where dim i of the result is a `None` (new) axis. */
typedef struct CkAccess {
	int rank;
	BlkIndex idx[BLK_MAX_RANK];
	const BlkAstIndex *src[BLK_MAX_RANK];
	int64_t start[BLK_MAX_RANK];
	unsigned konst;
	unsigned from_end; /* SCALAR dims indexed by a negative constant on a Ref dim of symbolic
	                    * extent N: the index is N + start (numpy's x[-1]) */
	/* GATHER dims (tiles of i32 indices): their broadcast shape gdims
	 * [grank] sits at result position gpos (grank 0: no gather);
	 * may_gather says the access allows them, glast is the last one. */
	bool may_gather;
	int gpos, grank, glast;
	const BlkSym *gdims[BLK_MAX_RANK];
	unsigned newaxes;
} CkAccess;

/* The checker's notes on one AST node (expr or stmt).  Fields by node:
 *   every expr         type
 *   NAME               bind
 *   CALL               builtin, opdt (elementwise max/min, where, fma,
 *                      clamp), axis (-1: every axis), keepdims, reduce (a
 *                      reduction), fill (load), reverse (a scan), approx
 *                      (gelu's tanh form)
 *   BINARY             opdt (the operands' common dtype); dot_side
 *   INDEX, AT, STORE   acc
 *   FORI               ivar, carries, ncarries, unroll, lo, hi
 *   LET, SCOPED        binds, nbinds
 *   CALL of a helper   fn, body (this call's copy of fn's body), binds
 *                      (its parameters), fargs (the argument of each)
 *   associative_scan   body, binds (the combine's copy and parameters:
 *                      the left elements, then the right ones), axis,
 *                      reverse, scan (BLK_OP_SCAN, or the cumsum-family
 *                      op a combine of one known operation is) */
typedef struct CkInfo {
	CkType type;
	BlkCkBind *bind;
	CkBuiltin builtin;
	BlkDType opdt;
	int axis;
	int perm[BLK_MAX_RANK]; /* TRANSPOSE, SWAPAXES, `.T`: result dim d is operand dim perm[d] */
	int flip;               /* FLIP: a bit per reversed dim */
	bool keepdims, reduce, reverse, approx;
	CkType fill;
	int dot_side; /* BINARY ADD as `acc + dot`: 1 lhs is the dot, 2 rhs */
	CkAccess acc;
	BlkCkBind *ivar;
	BlkCkBind **binds; /* FORI: the carries; LET, SCOPED: the names */
	int nbinds;
	bool unroll;
	int64_t lo, hi;
	const BlkAstFn *fn;
	BlkAstBlock *body;
	const BlkAstExpr **fargs;
	BlkOpKind scan;
} CkInfo;

/* One checked kernel: its signature already in IR terms. */
typedef struct CkKernel {
	const BlkAstKernel *ast;
	int ncparams;
	BlkCParam *cparams;
	int num_warps, num_stages;
	int nparams;
	BlkParam *params;     /* index_map left NULL: lowering builds it */
	BlkCkBind **pbinds;   /* per param: its binding */
	BlkCkBind ***mapbinds; /* per param: its index map's param bindings */
	bool *written;        /* per param: a store or atomic_add names it */
	bool *stored;         /* per param: a store checked so far (in source order) names it */
	int nsizes;
	const char **sizes;
	int64_t *size_dyn;    /* per size: 1 if `dynamic (...)` names it, else 0 */
	int grid_rank;
	bool grid_bad;        /* more axes than BLK_MAX_GRID (reported once) */
	const BlkSym *grid[BLK_MAX_GRID];
	bool grid_seq[BLK_MAX_GRID];
} CkKernel;

typedef struct BlkCkFile {
	const BlkAstFile *ast;
	int nkernels;
	CkKernel *kernels;
	BlkPtrMap map;     /* AST node -> its CkInfo */
} BlkCkFile;

/* Checks the whole file with the defines applied.  NULL if any error. */
BlkCkFile *blk_check_file(BlkArena *a, BlkDiag *d, const BlkAstFile *f,
                          const BlkDefine *defines, int ndefines);
/* The checked file in IR.  Requires a BlkCkFile without errors. */
BlkModule *blk_lower_ast(BlkArena *a, const BlkCkFile *cf);

/* Whether e is a dot: `dot(a, b)` (in: its notes) or `a @ b`; and its operands. */
bool blk_ck_is_dot(const BlkAstExpr *e, const CkInfo *in);
void blk_ck_dot_operands(const BlkAstExpr *e, const BlkAstExpr **a, const BlkAstExpr **b);
/* The node's notes; NULL if the checker never saw it. */
CkInfo *blk_ck_info(const BlkPtrMap *m, const void *node);
/* "f32[64, K]", "i32", "ref<f32[64]>", "(f32, i32)" for messages. */
const char *blk_ck_type_str(BlkArena *a, const CkType *t);

#endif
