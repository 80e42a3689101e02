/* check_impl.h - the checker's internals, shared by check.c (kernels,
 * statements, scopes) and check_expr.c (expressions, builtins, indexing,
 * size expressions).  Not for other modules: they read check.h. */
#ifndef BLK_CHECK_IMPL_H
#define BLK_CHECK_IMPL_H

#include "frontend/check.h"
#include "support/limits.h"

/* Limits beyond which a size is surely a mistake (and would overflow the
 * backend's 32-bit index arithmetic or any GPU's memory per program). */
#define CK_MAX_DIM ((int64_t)BLK_MAX_DIM)
#define CK_MAX_TILE ((int64_t)BLK_MAX_TILE_ELEMS)

typedef struct Ck {
	BlkArena *a;
	BlkDiag *d;
	BlkPtrMap *map;
	BlkCkBind *scope;  /* innermost binding; ->up walks outwards */
	CkKernel *k;       /* the kernel being checked */
	bool in_map;       /* checking an index map: only size arithmetic */
	bool at_gather;    /* checking load's or an atomic's Ref: `x.at[idx]` may gather */
	bool gather_ok;    /* the next blk_ck_access may gather (its caller says) */
	bool new_sizes;    /* checking param shapes: unknown names are sizes */
	bool in_grid;      /* checking the grid's extents (BlkCParam.uses) */
	int64_t copies;    /* copies of the current statement that unrolling makes */
	int64_t scratch_bytes; /* the kernel's scratch params and the scoped scratch open here */
	/* helpers (check_fn.c) */
	const BlkAstFile *file;
	const BlkAstFn **active; /* the helpers being inlined, outermost first */
	int nactive;
	int inline_height;       /* the heights of their bodies, summed */
	int inlined;             /* helper calls inlined in this kernel */
	bool in_combine;         /* checking associative_scan's combine: scalars only */
} Ck;

/* A call's arguments: positional ones in pos (npos counts them all,
 * even past 4), the keyword arguments a builtin takes in kw. */
enum { MAX_POS = 5 }; /* the most positional arguments: philox's seed and four counters */
typedef struct Args {
	const BlkAstExpr *pos[MAX_POS];
	int npos;
	const BlkAstExpr *kw[2];
} Args;

/* check.c */
CkInfo *blk_ck_note(Ck *c, const void *node);
BlkCkBind *blk_ck_lookup(Ck *c, const char *name);
BlkCkBind *blk_ck_bind(Ck *c, CkBindKind kind, const char *name, BlkLoc loc, CkType type);
void blk_ck_declared_here(Ck *c, const BlkCkBind *b);
void blk_ck_block(Ck *c, const BlkAstBlock *blk);
/* A helper's or closure's body: its statements, then its result in their
 * scope; the result's type (VOID without one). */
CkType blk_ck_body(Ck *c, const BlkAstBlock *blk);
/* fori_loop(lo, hi, init) |i, carries| { body }: its type; notes in in. */
CkType blk_ck_fori(Ck *c, const BlkAstExpr *e, CkInfo *in);
/* False (reported) if r is a Ref to an `in` parameter. */
bool blk_ck_writable(Ck *c, BlkLoc loc, const CkType *r);
/* False, with the error, when r is (a view of) a signal param: only the
 * signal ops touch those. */
bool blk_ck_not_signal(Ck *c, BlkLoc loc, const CkType *r);

/* check_expr.c */
CkType blk_ck_expr(Ck *c, const BlkAstExpr *e);
/* A size expression (sizes, cparams, integer constants); NULL after an error. */
const BlkSym *blk_ck_sym(Ck *c, const BlkAstExpr *e);
/* A dtype: a keyword or a dtype cparam; false after an error. */
bool blk_ck_dtype(Ck *c, const BlkAstExpr *e, BlkDType *out);
/* Reports absurd constant dims (> CK_MAX_DIM, or <= 0 when positive) and
 * tiles (> CK_MAX_TILE elements); false if it did. */
bool blk_ck_dims_ok(Ck *c, BlkLoc loc, int rank, const BlkSym *const *dims, bool tile);
/* Indices idx[n] on a Ref (or, for `None` only, a tile): the access and
 * the shape it gives; `None` (a new axis) is allowed only where read. */
bool blk_ck_access(Ck *c, BlkLoc loc, const BlkAstIndex *idx, int n, const CkType *ref, bool read,
               CkAccess *acc, int *rank, const BlkSym **dims);
/* Checks that v can be stored into (or atomically added to) a Ref of the
 * given dtype and shape: dtype equal (weak literals convert), v broadcasts. */
bool blk_ck_storable(Ck *c, BlkLoc loc, const CkType *v, BlkDType dt, int rank,
                 const BlkSym *const *dims);
bool blk_ck_same_type(const CkType *x, const CkType *y);
/* Whether t converts to dtype dt without astype: t has dtype dt, or t is a
 * weak literal dt can hold (an int: any dtype but bool; a float: a float
 * dtype). */
bool blk_ck_converts(const CkType *t, BlkDType dt);

/* e's arguments: min..max positional ones, keywords kw0 and kw1 (NULL:
 * none); false (reported) otherwise. */
bool blk_ck_get_args(Ck *c, const BlkAstExpr *e, int min, int max, const char *kw0,
                     const char *kw1, Args *out);
/* A constant axis of a rank-`rank` tile (negative counts from the end). */
bool blk_ck_axis_arg(Ck *c, const BlkAstExpr *e, int rank, int *axis);
/* `true` or `false`. */
bool blk_ck_bool_arg(Ck *c, const BlkAstExpr *e, bool *out);

/* check_fn.c: helpers and closures, inlined at each use. */
/* Checks the file's helpers' names (before any kernel). */
void blk_ck_helpers(Ck *c, const BlkAstFile *f);
/* The helper named name, or NULL. */
const BlkAstFn *blk_ck_helper(const Ck *c, const char *name);
/* A helper whose name is within two edits of name (a typo), or NULL. */
const BlkAstFn *blk_ck_helper_near(const Ck *c, const char *name);
/* A call of helper f: its arguments, then a copy of its body with the
 * parameters bound to them; the call's type. */
CkType blk_ck_inline(Ck *c, const BlkAstExpr *e, CkInfo *in, const BlkAstFn *f);
/* associative_scan(combine, x, axis = k, reverse = b). */
CkType blk_ck_assoc_scan(Ck *c, const BlkAstExpr *e, CkInfo *in);

/* Whether name is a builtin function. */
bool blk_ck_is_builtin(const char *name);
/* A parameter of the kernel being checked: 1 an `in` i32 one (it could be
 * `prefetch`), 2 another, 0 none. */
int blk_ck_is_param_name(const Ck *c, const char *name);

/* spelling.c: what blk calls a Pallas/Triton/JAX/numpy spelling (NULL if
 * nothing); whether name is one of their modules (tl, pl, jnp, ...); and
 * for `recv.name` with recv such a module, an error saying what to write
 * (false, nothing reported, otherwise). */
const char *blk_ck_spelling(Ck *c, const char *name);
bool blk_ck_foreign_module(const char *name);
bool blk_ck_foreign_qualified(Ck *c, const BlkAstExpr *recv, const char *name, BlkLoc loc);

CkType blk_ck_poison(void);
CkType blk_ck_value(BlkDType dt, int rank, const BlkSym *const *dims);
CkType blk_ck_ref(BlkDType dt, int rank, const BlkSym *const *dims, BlkSpace sp,
              BlkAccess acc, const BlkCkBind *root);
/* A weak value made strong: its default dtype (i32 or f32). */
CkType blk_ck_strong(CkType t);

#endif
