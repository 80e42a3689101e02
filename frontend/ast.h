/* ast.h - the syntax tree of a .blk file, as the parser builds it.
 *
 * The tree mirrors the grammar of docs/language.md and nothing more: names
 * are unresolved strings, dtypes in type positions are expressions (a
 * builtin dtype keyword or a name that should denote a dtype parameter), and
 * no types or shapes are computed.  The checker (frontend/check.c) gives it
 * meaning.  Every node carries the location of its first token, except
 * binary/unary operators and postfix forms, which carry the location of
 * their operator token (where a caret is most useful).
 *
 * All nodes live in the compilation's arena; lists are (pointer, count)
 * pairs.  Kinds are tagged unions: each kind's comment names the fields it
 * uses; the other fields are zero/NULL.  After the first commit this header
 * changes only additively.
 */
#ifndef BLK_AST_H
#define BLK_AST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "support/arena.h"
#include "support/diag.h"
#include "ir/ir.h"

typedef struct BlkAstExpr BlkAstExpr;
typedef struct BlkAstStmt BlkAstStmt;
typedef struct BlkAstFn BlkAstFn;

/* ---- expressions --------------------------------------------------------- */

/* X(ENUM, "name used by the printer")  ORDER AST_EXPR: ast.c's names follow. */
#define BLK_AST_EXPRS(X)                                                       \
	X(INT, "int")          /* ival (0 .. 2^31; `-` is a separate UNARY) */ \
	X(FLOAT, "float")      /* fval, text (the literal as written) */      \
	X(BOOL, "bool")        /* ival: 0 false, 1 true */                     \
	X(INF, "inf")          /* (no fields) positive infinity */             \
	X(NAN, "nan")          /* (no fields) a quiet NaN */                   \
	X(NAME, "name")        /* name: variable, size, cparam, dtype param */ \
	X(DTYPE, "dtype")      /* dtype: a builtin dtype keyword (f32 ...) */  \
	X(UNARY, "unary")      /* op (NEG, NOT, BITNOT), lhs */                \
	X(BINARY, "binary")    /* op, lhs, rhs */                              \
	X(CALL, "call")        /* name (callee), args, nargs; method: written \
	                          `x.name(args)`, x is args[0] */               \
	X(FORI, "fori_loop")   /* args, nargs, ivar, carry, carries,          \
	                          ncarries, body (its result may be NULL) */   \
	X(TUPLE, "tuple")      /* elems, nelems (>= 1; `(a,)` has one) */      \
	X(INDEX, "index")      /* lhs, idx, nidx: `lhs[idx...]` */             \
	X(AT, "at")            /* lhs, idx, nidx: `lhs.at[idx...]` */          \
	X(ASTYPE, "astype")    /* lhs, rhs (a DTYPE or NAME): lhs.astype(T) */ \
	X(TRANSPOSE, "T")      /* lhs: `lhs.T` */                              \
	X(ATTR, "attr")        /* lhs, name: `lhs.IDENT` (any other ident) */ \
	X(CLOSURE, "closure")  /* fn: `|a, b| expr` or `|a, b| { ... }`, an   \
	                          unnamed helper (associative_scan's combine) */

typedef enum {
#define X(e, n) BLK_AST_##e,
	BLK_AST_EXPRS(X)
#undef X
	BLK_AST_NUM_EXPRS
} BlkAstExprKind;

/* ORDER AST_OP: ast.c's spellings follow. */
#define BLK_AST_OPS(X)          \
	X(NEG, "-")             \
	X(NOT, "!")             \
	X(ADD, "+")             \
	X(SUB, "-")             \
	X(MUL, "*")             \
	X(DIV, "/")             \
	X(FLOORDIV, "~/")      /* floor division; `//` starts a comment */       \
	X(MOD, "%")             \
	X(EQ, "==")             \
	X(NE, "!=")             \
	X(LT, "<")              \
	X(LE, "<=")             \
	X(GT, ">")              \
	X(GE, ">=")             \
	X(AND, "&&")            \
	X(OR, "||")             \
	X(BITAND, "&")         /* i32 bitwise; on bool the same as && */         \
	X(BITOR, "|")          /* i32 bitwise; on bool the same as || */         \
	X(BITXOR, "^")         /* i32 bitwise; on bool the same as != */         \
	X(SHL, "<<")            \
	X(SHR, ">>")           /* arithmetic (sign-filling) */                    \
	X(BITNOT, "~")         /* unary: i32 bitwise; on bool the same as ! */   \
	X(POW, "**")            \
	X(MATMUL, "@")         /* a @ b is dot(a, b) */

typedef enum {
#define X(e, s) BLK_AST_OP_##e,
	BLK_AST_OPS(X)
#undef X
	BLK_AST_NUM_OPS
} BlkAstOp;

/* A call or fori_loop argument: `expr` or `name = expr`. */
typedef struct BlkAstArg {
	BlkLoc loc;
	const char *name; /* keyword argument name, NULL when positional */
	BlkAstExpr *value;
} BlkAstArg;

typedef enum {
	BLK_AST_IDX_SLICE,    /* `[a]:[b][:c]`: a (start), b (end), c (step), each NULL when left out (`:`: the whole dim) */
	BLK_AST_IDX_ELLIPSIS, /* `...` all remaining dims (no fields) */
	BLK_AST_IDX_DS,       /* `ds(start, size[, step])`: a, b, c (NULL: 1) */
	BLK_AST_IDX_EXPR,     /* a scalar expression: a */
	BLK_AST_IDX_NONE,     /* `None`: a new axis of extent 1 (no fields) */
} BlkAstIndexKind;

typedef struct BlkAstIndex {
	BlkAstIndexKind kind;
	BlkLoc loc;
	BlkAstExpr *a, *b, *c;
} BlkAstIndex;

/* How a fori_loop names its carries: `|i|`, `|i, acc|`, `|i, (a, b)|`. */
typedef enum {
	BLK_AST_CARRY_NONE,  /* no carry names (ncarries == 0) */
	BLK_AST_CARRY_ONE,   /* one bare name (ncarries == 1) */
	BLK_AST_CARRY_TUPLE, /* a parenthesized tuple of names (ncarries >= 1) */
} BlkAstCarryKind;

/* `{ stmt... [expr] }`: a kernel, when, else or scoped block has result
 * NULL; a fori_loop body's trailing expression (the next carry) is result. */
typedef struct BlkAstBlock {
	BlkLoc loc; /* the `{` */
	BlkAstStmt **stmts;
	int nstmts;
	BlkAstExpr *result;
	int height; /* its deepest statement's expression + 1 (parse.c) */
} BlkAstBlock;

struct BlkAstExpr {
	BlkAstExprKind kind;
	BlkLoc loc;
	int64_t ival;     /* INT, BOOL */
	double fval;      /* FLOAT */
	const char *text; /* FLOAT: source spelling */
	const char *name; /* NAME, CALL, ATTR */
	bool method;      /* CALL: the `x.name(...)` form */
	BlkDType dtype;   /* DTYPE */
	BlkAstOp op;      /* UNARY, BINARY */
	BlkAstExpr *lhs, *rhs; /* UNARY, BINARY, INDEX, AT, ASTYPE, TRANSPOSE, ATTR */
	BlkAstArg *args;  /* CALL, FORI */
	int nargs;
	BlkAstExpr **elems; /* TUPLE */
	int nelems;
	BlkAstIndex *idx; /* INDEX, AT */
	int nidx;
	int height;       /* 1 for a leaf, else 1 + the tallest child (parse.c) */
	/* FORI */
	const char *ivar;     /* the induction variable */
	BlkLoc ivar_loc;
	BlkAstCarryKind carry;
	const char **carries; /* carry names */
	BlkLoc *carry_locs;
	int ncarries;
	BlkAstBlock *body;
	BlkAstFn *fn;         /* CLOSURE */
};

/* A helper `fn name(a, b) { stmts; result }` at file scope, or a closure
 * `|a, b| ...` (name NULL).  body->result is the value (NULL: none, the
 * helper is called as a statement). */
struct BlkAstFn {
	BlkLoc loc;           /* `fn`, or the closure's first `|` */
	const char *name;     /* NULL for a closure */
	BlkLoc name_loc;
	const char **params;
	BlkLoc *param_locs;
	int nparams;
	BlkAstBlock *body;
};

/* ---- statements ------------------------------------------------------------ */

/* ORDER AST_STMT: ast.c's names follow. */
#define BLK_AST_STMTS(X)                                                             \
	X(LET, "let")       /* names, name_locs, nnames, tuple_pattern, value */        \
	X(STORE, "store")   /* target (the Ref expr), idx, nidx, value:              \
	                       `target[idx...] = value` */                           \
	X(WHEN, "when")     /* value (condition), then, els (NULL if no else) */        \
	X(SCOPED, "scoped") /* scratch, nscratch (access SCRATCH), then */              \
	X(PRINT, "print")   /* str (escapes resolved), args, nargs */                   \
	X(EXPR, "expr")     /* value: evaluated for effect (atomic_add, fori_loop) */

typedef enum {
#define X(e, n) BLK_AST_##e,
	BLK_AST_STMTS(X)
#undef X
	BLK_AST_NUM_STMTS
} BlkAstStmtKind;

struct BlkAstParam; /* below */

struct BlkAstStmt {
	BlkAstStmtKind kind;
	BlkLoc loc;
	/* LET */
	const char **names;
	BlkLoc *name_locs;
	int nnames;
	bool tuple_pattern; /* `let (a, b) = ...` (even with one name) */
	BlkAstExpr *value;  /* LET, STORE, WHEN (condition), EXPR */
	/* STORE */
	BlkAstExpr *target;
	BlkAstIndex *idx;
	int nidx;
	/* WHEN, SCOPED */
	BlkAstBlock *then;
	BlkAstBlock *els;
	/* SCOPED */
	struct BlkAstParam *scratch;
	int nscratch;
	/* PRINT */
	const char *str;
	BlkAstExpr **args;
	int nargs;
};

/* ---- kernels ------------------------------------------------------------- */

typedef enum {
	BLK_AST_IN,
	BLK_AST_OUT,
	BLK_AST_INOUT,
	BLK_AST_SCRATCH,
	BLK_AST_PREFETCH, /* an i32 array every program and every index map can read */
	BLK_AST_SIGNAL,   /* symmetric i32 counters for signal_add/set/wait (no dtype written) */
} BlkAstAccess;

/* A kernel parameter `name: access dtype[shape] [block (...) [index (...) -> (...)]]`,
 * or a scratch declaration of `scoped` (access SCRATCH, no BlockSpec). */
typedef struct BlkAstParam {
	BlkLoc loc;
	const char *name;
	BlkAstAccess access;
	BlkLoc access_loc;
	bool symmetric;    /* `in symmetric ...`: a buffer on every rank (SIGNAL: always) */
	BlkAstExpr *dtype; /* DTYPE, or NAME of a dtype cparam; NULL for SIGNAL */
	BlkAstExpr **shape; /* nshape entries (0 for a scalar-shaped array) */
	int nshape;
	bool has_block;     /* a `block (...)` clause was given */
	BlkLoc block_loc;
	BlkAstExpr **block; /* nblock entries; NULL entry = `None` (squeezed) */
	BlkLoc *block_locs; /* per entry, so a `None` has a location too */
	int nblock;
	bool has_index;     /* an `index (...) -> (...)` clause was given */
	BlkLoc index_loc;
	const char **index_params; /* the index map's parameter names */
	BlkLoc *index_param_locs;
	int nindex_params;
	BlkAstExpr **index_map; /* the block index per array dim */
	int nindex_map;
} BlkAstParam;

/* `NAME = default` in a kernel's `[...]`. */
typedef struct BlkAstCParam {
	BlkLoc loc;
	const char *name;
	BlkAstExpr *value; /* NULL for `auto` */
	bool is_auto;      /* `NAME = auto`: the compiler chooses the value */
} BlkAstCParam;

/* `[seq] expr` in a kernel's `grid (...)`. */
typedef struct BlkAstGridAxis {
	BlkLoc loc;
	bool seq;
	BlkAstExpr *extent;
} BlkAstGridAxis;

typedef struct BlkAstKernel {
	BlkLoc loc; /* the `kernel` keyword */
	const char *name;
	BlkLoc name_loc;
	BlkAstCParam *cparams;
	int ncparams;
	BlkAstParam *params;
	int nparams;
	const char **dynamic; /* `dynamic (M, N)`: launch sizes passed at run time */
	BlkLoc *dynamic_loc;
	int ndynamic;
	bool has_grid; /* `grid (...)` was given (possibly empty) */
	BlkLoc grid_loc;
	BlkAstGridAxis *grid;
	int ngrid;
	BlkAstBlock *body;
} BlkAstKernel;

typedef struct BlkAstFile {
	const BlkSource *src;
	BlkAstKernel **kernels;
	int nkernels;
	BlkAstFn **fns; /* the helpers, in source order */
	int nfns;
} BlkAstFile;

/* ---- helpers (ast.c) --------------------------------------------------------- */

const char *blk_ast_expr_kind_name(BlkAstExprKind k);
const char *blk_ast_stmt_kind_name(BlkAstStmtKind k);
const char *blk_ast_op_spelling(BlkAstOp op);
const char *blk_ast_access_name(BlkAstAccess acc);

BlkAstExpr *blk_ast_expr_new(BlkArena *a, BlkAstExprKind k, BlkLoc loc);
BlkAstStmt *blk_ast_stmt_new(BlkArena *a, BlkAstStmtKind k, BlkLoc loc);

/* A deep copy of a helper's or closure's body (names and strings
 * shared): what the checker inlines at each call, so that every call's
 * nodes get notes of their own. */
BlkAstBlock *blk_ast_clone_block(BlkArena *a, const BlkAstBlock *b);
BlkAstExpr *blk_ast_clone_expr(BlkArena *a, const BlkAstExpr *e);

/* Prints one expression (and its children) as the tree dump does, starting
 * at the given indentation depth; for checker debugging and tests. */
void blk_ast_print_expr(FILE *out, const BlkAstExpr *e, int depth);

#endif
