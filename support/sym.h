/* sym.h - symbolic sizes: the integer expressions that shapes are made of.
 *
 * A dimension is a constant (64), a size bound at launch (M), or an
 * expression over those (cdiv(M, 64), K - k*32).  Compile-time parameters are
 * substituted before anything else sees them, so they never appear here.
 * Constructors fold constants and trivial identities (x+0, x*1, cdiv(c1,c2)),
 * so two dims that are equal after specialization usually compare equal
 * before it too.  Nodes are immutable and arena-allocated.
 */
#ifndef BLK_SYM_H
#define BLK_SYM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"

/* ORDER SYM: the names table in sym.c follows this order. */
typedef enum {
	BLK_SYM_CONST, /* value */
	BLK_SYM_VAR,   /* name: a launch size such as M */
	BLK_SYM_ADD,   /* a + b */
	BLK_SYM_SUB,   /* a - b */
	BLK_SYM_MUL,   /* a * b */
	BLK_SYM_FLOORDIV, /* floor(a / b) */
	BLK_SYM_CDIV,  /* ceil(a / b) */
	BLK_SYM_MOD,   /* a - b*floor(a/b) (sign of b, as Python) */
	BLK_SYM_MIN,
	BLK_SYM_MAX,
} BlkSymKind;

typedef struct BlkSym {
	BlkSymKind kind;
	int64_t value;           /* CONST */
	const char *name;        /* VAR */
	const struct BlkSym *a, *b; /* binary kinds */
} BlkSym;

/* Binding of launch sizes to values, for evaluation and substitution. */
typedef struct BlkSymEnv {
	int n;
	const char **names;
	const int64_t *values;
} BlkSymEnv;

const BlkSym *blk_sym_const(BlkArena *a, int64_t v);
const BlkSym *blk_sym_var(BlkArena *a, const char *name);
/* Folds when both sides are constants and on identities; division by a
 * constant zero is left unfolded (the checker reports it). */
const BlkSym *blk_sym_binary(BlkArena *a, BlkSymKind k, const BlkSym *x, const BlkSym *y);

bool blk_sym_equal(const BlkSym *x, const BlkSym *y);
bool blk_sym_is_const(const BlkSym *s, int64_t *out);
/* false if a variable is unbound, a division by zero occurs, or a value
 * leaves int64 range. */
bool blk_sym_eval(const BlkSym *s, const BlkSymEnv *env, int64_t *out);
/* Replaces bound variables by their values and refolds. */
const BlkSym *blk_sym_subst(BlkArena *a, const BlkSym *s, const BlkSymEnv *env);

/* The greatest common divisor of |a| and |b| (gcd(0, x) = |x|). */
int64_t blk_gcd(int64_t a, int64_t b);

/* A number that provably divides s's value, when every variable named in
 * divs divides by its value there (a variable not named: 1).  0 means s
 * is 0 (everything divides it).  Sums, min and max keep the common
 * divisor, products multiply; a division or a modulus knows nothing. */
int64_t blk_sym_divisor(const BlkSym *s, const BlkSymEnv *divs);
/* Whether s names variable `name`. */
bool blk_sym_uses(const BlkSym *s, const char *name);

/* Writes the expression in the language's own syntax: M, 64, cdiv(M, 64),
 * (K - 1) * 2.  Returns the number of characters written. */
int blk_sym_print(FILE *out, const BlkSym *s);
/* Same text, arena-allocated. */
const char *blk_sym_str(BlkArena *a, const BlkSym *s);
const char *blk_sym_kind_name(BlkSymKind k); /* "add", "cdiv", ... */

#endif
