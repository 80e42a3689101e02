/* check_expr.c - types and shapes of expressions.
 *
 * Every expression gets a CkType (check.h).  Shapes are BlkSym dims with
 * compile-time parameters already substituted, so only launch sizes stay
 * symbolic.  Literals and constant expressions of them are weak: they take
 * the dtype of the other operand and are folded here, so lowering emits one
 * `const` of the right dtype for them.  After an error the expression's type
 * is POISON and every consumer of a POISON stays silent: one mistake, one
 * message.
 */
#include <math.h>
#include <string.h>

#include "frontend/check_impl.h"

/* ---- types ------------------------------------------------------------------ */

CkType blk_ck_poison(void)
{
	CkType t;
	memset(&t, 0, sizeof t);
	t.kind = CK_POISON;
	return t;
}

CkType blk_ck_value(BlkDType dt, int rank, const BlkSym *const *dims)
{
	CkType t = blk_ck_poison();
	t.kind = CK_VALUE;
	t.t.kind = BLK_TYPE_TILE;
	t.t.dtype = dt;
	t.t.rank = rank;
	for (int i = 0; i < rank; i++)
		t.t.dims[i] = dims[i];
	return t;
}

CkType blk_ck_ref(BlkDType dt, int rank, const BlkSym *const *dims, BlkSpace sp,
              BlkAccess acc, const BlkCkBind *root)
{
	CkType t = blk_ck_value(dt, rank, dims);
	t.kind = CK_REF;
	t.t.kind = BLK_TYPE_REF;
	t.t.space = sp;
	t.access = acc;
	t.root = root;
	return t;
}

static CkType ck_weak_int(int64_t v)
{
	CkType t = blk_ck_value(BLK_I32, 0, NULL);
	t.weak = CK_WEAK_INT;
	t.konst = true;
	t.i = v;
	t.f = (double)v;
	return t;
}

static CkType ck_weak_float(double v)
{
	CkType t = blk_ck_value(BLK_F32, 0, NULL);
	t.weak = CK_WEAK_FLOAT;
	t.konst = true;
	t.f = v;
	return t;
}

static CkType ck_bool_const(bool v)
{
	CkType t = blk_ck_value(BLK_BOOL, 0, NULL);
	t.konst = true;
	t.i = v;
	return t;
}

CkType blk_ck_strong(CkType t)
{
	t.weak = CK_STRONG;
	return t;
}

static bool dims_equal(int r, const BlkSym *const *x, const BlkSym *const *y)
{
	for (int i = 0; i < r; i++)
		if (!blk_sym_equal(x[i], y[i]))
			return false;
	return true;
}

bool blk_ck_converts(const CkType *t, BlkDType dt)
{
	if (t->weak == CK_WEAK_INT) /* an 8-bit integer takes only the literals it holds (200 is no i8) */
		return dt != BLK_BOOL && !(blk_dtype_is_byte(dt) && t->konst && blk_int_wrap(dt, t->i) != t->i);
	if (t->weak == CK_WEAK_FLOAT) /* fp8 too: a fill or full()'s value, rounded to it */
		return blk_dtype_is_float(dt) || blk_dtype_is_fp8(dt);
	return t->t.dtype == dt;
}

bool blk_ck_same_type(const CkType *x, const CkType *y)
{
	return x->kind == y->kind && x->t.dtype == y->t.dtype && x->t.rank == y->t.rank &&
	       dims_equal(x->t.rank, x->t.dims, y->t.dims);
}

/* ---- messages ---------------------------------------------------------------- */

static void type_print(FILE *f, const CkType *t)
{
	switch (t->kind) {
	case CK_POISON: fputs("<error>", f); return;
	case CK_VOID: fputs("nothing", f); return;
	case CK_DTYPE: fprintf(f, "dtype %s", blk_dtype_name(t->dtype)); return;
	case CK_TUPLE:
		fputc('(', f);
		for (int i = 0; i < t->n; i++) {
			fputs(i ? ", " : "", f);
			type_print(f, &t->elems[i]);
		}
		fputc(')', f);
		return;
	default: break;
	}
	fputs(t->kind == CK_REF ? "ref<" : "", f);
	fputs(blk_dtype_name(t->t.dtype), f);
	if (t->t.rank > 0) {
		fputc('[', f);
		for (int i = 0; i < t->t.rank; i++) {
			fputs(i ? ", " : "", f);
			blk_sym_print(f, t->t.dims[i]);
		}
		fputc(']', f);
	}
	fputs(t->kind == CK_REF ? ">" : "", f);
}

const char *blk_ck_type_str(BlkArena *a, const CkType *t)
{
	BlkArenaStream s;
	type_print(blk_arena_stream_open(&s), t);
	return blk_arena_stream_close(&s, a);
}

static const char *tstr(Ck *c, const CkType *t)
{
	return blk_ck_type_str(c->a, t);
}

static bool is_poison(const CkType *t)
{
	return t->kind == CK_POISON;
}

/* Requires a value (not a Ref, tuple or dtype); reports what it got. */
static bool need_value(Ck *c, const BlkAstExpr *e, const CkType *t)
{
	if (t->kind == CK_VALUE)
		return true;
	if (t->kind == CK_REF)
		blk_error(c->d, e->loc, "expected a value, got a Ref (%s); read it with [...]", tstr(c, t));
	else if (t->kind != CK_POISON)
		blk_error(c->d, e->loc, "expected a value, got %s", tstr(c, t));
	return false;
}

/* An i32 scalar (weak int literals count); what names it for the message. */
static bool need_i32(Ck *c, const BlkAstExpr *e, const CkType *t, const char *what)
{
	if (is_poison(t))
		return false;
	if (t->kind == CK_VALUE && t->t.rank == 0 && t->t.dtype == BLK_I32)
		return true;
	blk_error(c->d, e->loc, "%s must be an i32 scalar, got %s", what, tstr(c, t));
	return false;
}

/* An integer compile-time constant (axis=, program_id's axis). */
static bool need_const_int(Ck *c, const BlkAstExpr *e, const CkType *t, const char *what,
                           int64_t *out)
{
	if (is_poison(t))
		return false;
	if (t->kind == CK_VALUE && t->konst && t->weak == CK_WEAK_INT) {
		*out = t->i;
		return true;
	}
	blk_error(c->d, e->loc, "%s must be an integer constant", what);
	return false;
}

/* ---- size expressions --------------------------------------------------------- */

static const BlkSym *sym_name(Ck *c, const BlkAstExpr *e)
{
	BlkCkBind *b = blk_ck_lookup(c, e->name);
	if (b && b->kind == CK_BIND_CPARAM && b->cp) /* for `auto`: runtime/auto.c */
		b->cp->uses |= c->new_sizes ? BLK_CPARAM_IN_SHAPE : c->in_grid ? BLK_CPARAM_IN_GRID : BLK_CPARAM_IN_SIZE;
	if (b && b->kind == CK_BIND_SIZE)
		return blk_sym_var(c->a, b->name);
	if (b && b->type.kind == CK_VALUE && b->type.weak == CK_WEAK_INT)
		return blk_sym_const(c->a, b->type.i); /* an int cparam or constant let */
	if (b && b->type.kind == CK_POISON)
		return NULL;
	if (!b && c->new_sizes && c->k->nsizes == BLK_MAX_SIZES) {
		blk_error(c->d, e->loc, "too many launch sizes; the limit is %d", BLK_MAX_SIZES);
		return NULL;
	}
	if (!b && c->new_sizes) {
		b = blk_ck_bind(c, CK_BIND_SIZE, e->name, e->loc, blk_ck_value(BLK_I32, 0, NULL));
		c->k->sizes = blk_arena_grow(c->a, c->k->sizes, (size_t)c->k->nsizes,
		                             (size_t)c->k->nsizes + 1, sizeof *c->k->sizes);
		c->k->sizes[c->k->nsizes++] = b->name;
		return blk_sym_var(c->a, b->name);
	}
	if (!b) {
		blk_error(c->d, e->loc, "unknown size `%s`", e->name);
		blk_note(c->d, e->loc, "launch sizes are introduced by the parameters' shapes");
		return NULL;
	}
	blk_error(c->d, e->loc, "`%s` is not a size or an integer compile-time parameter", e->name);
	blk_ck_declared_here(c, b);
	return NULL;
}

static const BlkSym *sym_binary(Ck *c, const BlkAstExpr *e, BlkSymKind k,
                                const BlkAstExpr *x, const BlkAstExpr *y)
{
	const BlkSym *sx = blk_ck_sym(c, x), *sy = blk_ck_sym(c, y);
	int64_t v;
	if (!sx || !sy)
		return NULL;
	if ((k == BLK_SYM_FLOORDIV || k == BLK_SYM_MOD || k == BLK_SYM_CDIV) &&
	    blk_sym_is_const(sy, &v) && v == 0) {
		blk_error(c->d, e->loc, "division by zero in a size expression");
		return NULL;
	}
	return blk_sym_binary(c->a, k, sx, sy);
}

static CkBuiltin builtin_of(const char *name);

/* cdiv, min and max (CK_BF_SIZE) of sizes: a size. */
static const BlkSym *sym_call(Ck *c, const BlkAstExpr *e, bool *matched)
{
	CkBuiltin b = builtin_of(e->name);
	if (!(blk_ck_builtins[b].flags & CK_BF_SIZE))
		return NULL;
	*matched = true;
	if (e->nargs != 2 || e->args[0].name || e->args[1].name) {
		blk_error(c->d, e->loc, "`%s` takes 2 arguments", e->name);
		return NULL;
	}
	BlkSymKind k = b == CK_B_CDIV ? BLK_SYM_CDIV : b == CK_B_MIN ? BLK_SYM_MIN : BLK_SYM_MAX;
	return sym_binary(c, e, k, e->args[0].value, e->args[1].value);
}

const BlkSym *blk_ck_sym(Ck *c, const BlkAstExpr *e)
{
	static const BlkSymKind bin[BLK_AST_NUM_OPS] = {
		[BLK_AST_OP_ADD] = BLK_SYM_ADD, [BLK_AST_OP_SUB] = BLK_SYM_SUB,
		[BLK_AST_OP_MUL] = BLK_SYM_MUL, [BLK_AST_OP_FLOORDIV] = BLK_SYM_FLOORDIV,
		[BLK_AST_OP_MOD] = BLK_SYM_MOD,
	};
	const BlkSym *s = NULL;
	bool matched = false;
	switch (e->kind) {
	case BLK_AST_INT: return blk_sym_const(c->a, e->ival);
	case BLK_AST_NAME: return sym_name(c, e);
	case BLK_AST_UNARY:
		if (e->op == BLK_AST_OP_NEG && (s = blk_ck_sym(c, e->lhs)))
			return blk_sym_binary(c->a, BLK_SYM_SUB, blk_sym_const(c->a, 0), s);
		if (e->op == BLK_AST_OP_NEG)
			return NULL;
		break;
	case BLK_AST_BINARY:
		if (bin[e->op])
			return sym_binary(c, e, bin[e->op], e->lhs, e->rhs);
		break;
	case BLK_AST_CALL:
		if ((s = sym_call(c, e, &matched)) || matched)
			return s;
		break;
	default: break;
	}
	blk_error(c->d, e->loc, "expected a size: an expression of launch sizes, integer "
	          "compile-time parameters and integer constants");
	return NULL;
}

bool blk_ck_dims_ok(Ck *c, BlkLoc loc, int rank, const BlkSym *const *dims, bool tile)
{
	int64_t n = 1, v;
	bool all = true;
	for (int i = 0; i < rank; i++) {
		if (!blk_sym_is_const(dims[i], &v)) {
			all = false;
			continue;
		}
		if (v > CK_MAX_DIM) {
			blk_error(c->d, loc, "dimension %lld is too large (the limit is 2^24)", (long long)v);
			return false;
		}
		if (tile && v <= 0) {
			blk_error(c->d, loc, "dimension %lld must be positive", (long long)v);
			return false;
		}
		n *= v > 0 ? v : 1;
	}
	if (tile && all && n > CK_MAX_TILE) {
		blk_error(c->d, loc, "a tile of %lld elements is too large (the limit is 2^22)",
		          (long long)n);
		return false;
	}
	return true;
}

bool blk_ck_dtype(Ck *c, const BlkAstExpr *e, BlkDType *out)
{
	CkType t = blk_ck_expr(c, e);
	if (t.kind == CK_DTYPE) {
		*out = t.dtype;
		return true;
	}
	if (!is_poison(&t))
		blk_error(c->d, e->loc, "expected a dtype (f32, f16, bf16, i32, i8, u8, f8e4m3, f8e5m2, bool or a dtype parameter)");
	return false;
}

/* ---- broadcasting and dtype unification ------------------------------------------ */

static bool dim_is_one(const BlkSym *s)
{
	int64_t v;
	return blk_sym_is_const(s, &v) && v == 1;
}

/* NumPy: align right; equal dims or a 1 stretch.  out gets the result. */
static bool broadcast(const CkType *x, const CkType *y, int *rank, const BlkSym **out)
{
	int r = x->t.rank > y->t.rank ? x->t.rank : y->t.rank;
	for (int i = 0; i < r; i++) {
		int ix = x->t.rank - r + i, iy = y->t.rank - r + i;
		const BlkSym *a = ix >= 0 ? x->t.dims[ix] : NULL, *b = iy >= 0 ? y->t.dims[iy] : NULL;
		if (!a || (b && dim_is_one(a)))
			out[i] = b;
		else if (!b || dim_is_one(b) || blk_sym_equal(a, b))
			out[i] = a;
		else
			return false;
	}
	*rank = r;
	return true;
}

static bool broadcast_or_report(Ck *c, BlkLoc loc, const CkType *x, const CkType *y, int *rank,
                                const BlkSym **out)
{
	if (broadcast(x, y, rank, out))
		return true;
	blk_error(c->d, loc, "cannot broadcast %s and %s", tstr(c, x), tstr(c, y));
	return false;
}

bool blk_ck_storable(Ck *c, BlkLoc loc, const CkType *v, BlkDType dt, int rank,
                 const BlkSym *const *dims)
{
	CkType target = blk_ck_value(dt, rank, dims);
	const BlkSym *out[BLK_MAX_RANK];
	int r;
	if (!blk_ck_converts(v, dt)) {
		if (v->weak == CK_WEAK_INT && v->konst && blk_dtype_is_byte(dt))
			blk_error(c->d, loc, "the literal %lld does not fit %s (%s)", (long long)v->i,
			          blk_dtype_name(dt), dt == BLK_I8 ? "-128 .. 127" : "0 .. 255");
		else
			blk_error(c->d, loc, "cannot store %s into a Ref of %s; convert it with astype",
			          tstr(c, v), blk_dtype_name(dt));
		return false;
	}
	if (broadcast(v, &target, &r, out) && r == rank && dims_equal(r, out, dims))
		return true;
	blk_error(c->d, loc, "cannot broadcast %s to the shape %s", tstr(c, v), tstr(c, &target));
	return false;
}

/* Weak scalars: a scalar s (rank 0: a size, program_id, a loop index, a
 * read element) beside an operand o of another dtype takes o's dtype when
 * its kind is no higher, as JAX's weak Python scalars and torch's 0-d
 * tensors do: an integer scalar joins a float o (`x / N`), a float scalar
 * a float tile (`x_bf16 * scale`).  Never an integer into i8/u8 (the value
 * would wrap unseen) and never a tile into a tile. */
static bool scalar_joins(const CkType *s, const CkType *o, BlkDType *out)
{
	BlkDType sd = s->t.dtype, od = o->t.dtype;
	if (s->t.rank != 0 || s->weak || !blk_dtype_is_float(od))
		return false;
	if (!blk_dtype_is_int(sd) && !(blk_dtype_is_float(sd) && o->t.rank > 0))
		return false;
	*out = od;
	return true;
}

/* The common dtype of two operands of op `what`, or false after an error. */
static bool unify(Ck *c, BlkLoc loc, const char *what, const CkType *x, const CkType *y,
                  BlkDType *out)
{
	const CkType *w = x->weak ? x : y, *s = x->weak ? y : x;
	if (!x->weak && !y->weak) {
		if (x->t.dtype == y->t.dtype) {
			*out = x->t.dtype;
			return true;
		}
		if (scalar_joins(x, y, out) || scalar_joins(y, x, out))
			return true;
		blk_error(c->d, loc, "mismatched dtypes in `%s`: %s and %s; convert one with astype",
		          what, tstr(c, x), tstr(c, y));
		return false;
	}
	if (x->weak && y->weak) {
		*out = x->weak == CK_WEAK_FLOAT || y->weak == CK_WEAK_FLOAT ? BLK_F32 : BLK_I32;
		return true;
	}
	*out = s->t.dtype;
	if (w->weak == CK_WEAK_INT && blk_dtype_is_byte(s->t.dtype) &&
	    blk_int_wrap(s->t.dtype, w->i) != w->i) {
		blk_error(c->d, loc, "the literal %lld does not fit %s (%s) in `%s`; convert with astype",
		          (long long)w->i, tstr(c, s), s->t.dtype == BLK_I8 ? "-128 .. 127" : "0 .. 255",
		          what);
		return false;
	}
	if (blk_ck_converts(w, s->t.dtype) || scalar_joins(s, w, out))
		return true;
	blk_error(c->d, loc, "cannot combine %s literal with %s in `%s`",
	          w->weak == CK_WEAK_INT ? "an integer" : "a float", tstr(c, s), what);
	return false;
}

/* ---- operators -------------------------------------------------------------------- */

/* x ** y of integer constants, exactly (Python's int power); false if it
 * leaves i32 (reported by the caller: i32 has no `**` at run time to
 * define a wrapped answer). */
static bool ipow(int64_t x, int64_t y, int64_t *r)
{
	*r = 1;
	for (; y > 0; y--)
		if (__builtin_mul_overflow(*r, x, r) || *r > INT32_MAX || *r < INT32_MIN)
			return false;
	return true;
}

/* x op y of integer constants as i32 arithmetic at run time gives it (the
 * interpreter, the GPU): + - * wrap, `~/` and `%` by 0 are 0, by -1 wrap
 * (ir.c's blk_i32_*), so no program the run time defines is refused here.
 * Operands are already i32 values. */
static CkType fold_int(Ck *c, const BlkAstExpr *e, int64_t x, int64_t y)
{
	int32_t a = (int32_t)x, b = (int32_t)y;
	int64_t r = 0;
	switch (e->op) {
	case BLK_AST_OP_ADD: return ck_weak_int(blk_int_wrap(BLK_I32, x + y));
	case BLK_AST_OP_SUB: return ck_weak_int(blk_int_wrap(BLK_I32, x - y));
	case BLK_AST_OP_MUL: return ck_weak_int(blk_int_wrap(BLK_I32, x * y));
	case BLK_AST_OP_DIV: return ck_weak_float((double)x / (double)y);
	case BLK_AST_OP_FLOORDIV: return ck_weak_int(blk_i32_floordiv(a, b));
	case BLK_AST_OP_MOD: return ck_weak_int(blk_i32_mod(a, b));
	case BLK_AST_OP_BITAND: return ck_weak_int(x & y);
	case BLK_AST_OP_BITOR: return ck_weak_int(x | y);
	case BLK_AST_OP_BITXOR: return ck_weak_int(x ^ y);
	case BLK_AST_OP_SHL: return ck_weak_int(blk_i32_shl(a, b));
	case BLK_AST_OP_SHR: return ck_weak_int(blk_i32_shr(a, b));
	case BLK_AST_OP_POW:
		if (y < 0) {
			blk_error(c->d, e->loc, "negative exponent of an integer constant; write a float (2.0 ** -1)");
			return blk_ck_poison();
		}
		if (ipow(x, y, &r))
			return ck_weak_int(r);
		blk_error(c->d, e->loc, "integer constant overflows i32");
		return blk_ck_poison();
	case BLK_AST_OP_EQ: return ck_bool_const(x == y);
	case BLK_AST_OP_NE: return ck_bool_const(x != y);
	case BLK_AST_OP_LT: return ck_bool_const(x < y);
	case BLK_AST_OP_LE: return ck_bool_const(x <= y);
	case BLK_AST_OP_GT: return ck_bool_const(x > y);
	default: return ck_bool_const(x >= y);
	}
}

static CkType fold_float(const BlkAstExpr *e, double x, double y)
{
	switch (e->op) {
	case BLK_AST_OP_ADD: return ck_weak_float(x + y);
	case BLK_AST_OP_SUB: return ck_weak_float(x - y);
	case BLK_AST_OP_MUL: return ck_weak_float(x * y);
	case BLK_AST_OP_DIV: return ck_weak_float(x / y);
	case BLK_AST_OP_POW: return ck_weak_float(pow(x, y));
	case BLK_AST_OP_EQ: return ck_bool_const(x == y);
	case BLK_AST_OP_NE: return ck_bool_const(x != y);
	case BLK_AST_OP_LT: return ck_bool_const(x < y);
	case BLK_AST_OP_LE: return ck_bool_const(x <= y);
	case BLK_AST_OP_GT: return ck_bool_const(x > y);
	default: return ck_bool_const(x >= y);
	}
}

static bool is_cmp(BlkAstOp op)
{
	return op >= BLK_AST_OP_EQ && op <= BLK_AST_OP_GE;
}

/* & | ^ (i32 bitwise, bool logical) */
static bool is_bitwise(BlkAstOp op)
{
	return op == BLK_AST_OP_BITAND || op == BLK_AST_OP_BITOR || op == BLK_AST_OP_BITXOR;
}

static bool is_shift(BlkAstOp op)
{
	return op == BLK_AST_OP_SHL || op == BLK_AST_OP_SHR;
}

/* Whether op applies to dtype dt; reports if not. */
/* fp8 tiles are storage and dot operands: what computes on them refuses
 * them with the conversion to write (true: refused, reported at loc). */
static bool fp8_refused(Ck *c, BlkLoc loc, const char *what, BlkDType dt)
{
	if (!blk_dtype_is_fp8(dt))
		return false;
	blk_error(c->d, loc, "`%s` does not apply to %s, an 8-bit float blk stores, converts and "
	          "multiplies in `dot` only; convert first: x.astype(f32)", what, blk_dtype_name(dt));
	return true;
}

static bool op_dtype_ok(Ck *c, const BlkAstExpr *e, BlkDType dt)
{
	const char *op = blk_ast_op_spelling(e->op);
	if (fp8_refused(c, e->loc, op, dt))
		return false;
	switch (e->op) {
	case BLK_AST_OP_AND:
	case BLK_AST_OP_OR:
		if (dt == BLK_BOOL)
			return true;
		blk_error(c->d, e->loc, "`%s` needs bool operands, got %s", op, blk_dtype_name(dt));
		return false;
	case BLK_AST_OP_DIV:
		if (blk_dtype_is_float(dt))
			return true;
		blk_error(c->d, e->loc, "`/` needs float operands, got %s; use `~/` for integers",
		          blk_dtype_name(dt));
		return false;
	case BLK_AST_OP_POW:
		if (blk_dtype_is_float(dt))
			return true;
		blk_error(c->d, e->loc, "`**` needs float operands, got %s; convert with astype",
		          blk_dtype_name(dt));
		return false;
	case BLK_AST_OP_FLOORDIV:
	case BLK_AST_OP_MOD:
	case BLK_AST_OP_SHL:
	case BLK_AST_OP_SHR:
		if (blk_dtype_is_int(dt))
			return true;
		blk_error(c->d, e->loc, "`%s` needs integer operands, got %s", op, blk_dtype_name(dt));
		return false;
	case BLK_AST_OP_BITAND:
	case BLK_AST_OP_BITOR:
	case BLK_AST_OP_BITXOR:
		if (blk_dtype_is_int(dt) || dt == BLK_BOOL)
			return true;
		blk_error(c->d, e->loc, "`%s` needs integer or bool operands, got %s", op, blk_dtype_name(dt));
		return false;
	case BLK_AST_OP_EQ:
	case BLK_AST_OP_NE:
		return true;
	default:
		if (dt != BLK_BOOL)
			return true;
		blk_error(c->d, e->loc, "`%s` does not apply to bool", op);
		return false;
	}
}

static CkType fold_weak(Ck *c, const BlkAstExpr *e, const CkType *x, const CkType *y)
{
	if (e->op == BLK_AST_OP_AND || e->op == BLK_AST_OP_OR) {
		blk_error(c->d, e->loc, "`%s` needs bool operands", blk_ast_op_spelling(e->op));
		return blk_ck_poison();
	}
	if (x->weak == CK_WEAK_INT && y->weak == CK_WEAK_INT)
		return fold_int(c, e, x->i, y->i);
	if (e->op == BLK_AST_OP_FLOORDIV || e->op == BLK_AST_OP_MOD || is_shift(e->op)) {
		blk_error(c->d, e->loc, "`%s` needs i32 operands", blk_ast_op_spelling(e->op));
		return blk_ck_poison();
	}
	if (is_bitwise(e->op)) {
		blk_error(c->d, e->loc, "`%s` needs i32 or bool operands", blk_ast_op_spelling(e->op));
		return blk_ck_poison();
	}
	return fold_float(e, x->f, y->f);
}

bool blk_ck_is_dot(const BlkAstExpr *e, const CkInfo *in)
{
	if (e->kind == BLK_AST_BINARY)
		return e->op == BLK_AST_OP_MATMUL;
	return e->kind == BLK_AST_CALL && in && in->builtin == CK_B_DOT;
}

void blk_ck_dot_operands(const BlkAstExpr *e, const BlkAstExpr **a, const BlkAstExpr **b)
{
	*a = e->kind == BLK_AST_BINARY ? e->lhs : e->args[0].value;
	*b = e->kind == BLK_AST_BINARY ? e->rhs : e->args[1].value;
}

/* `acc + dot(a, b)`: the dot accumulates into acc when acc is exactly the
 * dot's result type (f32, i32 for 8-bit operands).  Returns 1 or 2 (the side of the dot) or 0. */
static int dot_side(Ck *c, const BlkAstExpr *e, const CkType *l, const CkType *r)
{
	const BlkAstExpr *side[2] = { e->lhs, e->rhs };
	const CkType *other[2] = { r, l };
	if (e->op != BLK_AST_OP_ADD)
		return 0;
	for (int i = 0; i < 2; i++) {
		CkInfo *in = blk_ck_info(c->map, side[i]);
		const CkType *o = other[i];
		if (!blk_ck_is_dot(side[i], in) || in->type.kind != CK_VALUE)
			continue;
		if (!o->weak && o->t.dtype == in->type.t.dtype && o->t.rank == 2 &&
		    dims_equal(2, o->t.dims, in->type.t.dims))
			return i + 1;
	}
	return 0;
}

static CkType dot_type(Ck *c, const BlkAstExpr *e, const CkType *xp, const CkType *yp);

static CkType check_binary(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	CkType l = blk_ck_expr(c, e->lhs), r = blk_ck_expr(c, e->rhs), t;
	const BlkSym *dims[BLK_MAX_RANK];
	BlkDType dt;
	int rank;
	bool okl = need_value(c, e->lhs, &l), okr = need_value(c, e->rhs, &r);
	if (!okl || !okr)
		return blk_ck_poison();
	if (e->op == BLK_AST_OP_MATMUL) {
		l = blk_ck_strong(l);
		r = blk_ck_strong(r);
		return dot_type(c, e, &l, &r);
	}
	if (l.weak && r.weak)
		return fold_weak(c, e, &l, &r);
	if (!unify(c, e->loc, blk_ast_op_spelling(e->op), &l, &r, &dt) || !op_dtype_ok(c, e, dt))
		return blk_ck_poison();
	if (!broadcast_or_report(c, e->loc, &l, &r, &rank, dims))
		return blk_ck_poison();
	in->opdt = dt;
	in->dot_side = dot_side(c, e, &l, &r);
	t = blk_ck_value(is_cmp(e->op) ? BLK_BOOL : dt, rank, dims);
	return t;
}

/* ~x: bitwise on i32, logical on bool (numpy's and Pallas's meaning). */
static CkType check_bitnot(Ck *c, const BlkAstExpr *e, CkType x)
{
	if (x.weak == CK_WEAK_INT)
		return ck_weak_int(~x.i);
	if (x.t.dtype == BLK_BOOL && x.konst)
		return ck_bool_const(!x.i);
	if ((blk_dtype_is_int(x.t.dtype) || x.t.dtype == BLK_BOOL) && !x.weak) {
		x.konst = false;
		return x;
	}
	blk_error(c->d, e->loc, "`~` needs an integer or bool operand, got %s", tstr(c, &x));
	return blk_ck_poison();
}

/* `-2147483648`: the literal 2147483648 is an i32 only under a minus. */
static bool is_int_min(Ck *c, const BlkAstExpr *e)
{
	if (e->op != BLK_AST_OP_NEG || e->lhs->kind != BLK_AST_INT || e->lhs->ival != -(int64_t)INT32_MIN)
		return false;
	blk_ck_note(c, e->lhs)->type = ck_weak_int(INT32_MIN);
	return true;
}

static CkType check_unary(Ck *c, const BlkAstExpr *e)
{
	if (is_int_min(c, e))
		return ck_weak_int(INT32_MIN);
	CkType x = blk_ck_expr(c, e->lhs);
	if (!need_value(c, e->lhs, &x))
		return blk_ck_poison();
	if (e->op == BLK_AST_OP_BITNOT)
		return check_bitnot(c, e, x);
	if (e->op == BLK_AST_OP_NOT) {
		if (x.t.dtype == BLK_BOOL && !x.weak)
			return x.konst ? ck_bool_const(!x.i) : x;
		blk_error(c->d, e->loc, "`!` needs a bool operand, got %s", tstr(c, &x));
		return blk_ck_poison();
	}
	if (x.weak == CK_WEAK_INT) /* wraps: -(-2147483648) is itself, as at run time */
		return ck_weak_int(blk_int_wrap(BLK_I32, -x.i));
	if (x.weak == CK_WEAK_FLOAT)
		return ck_weak_float(-x.f);
	if (x.t.dtype == BLK_BOOL) {
		blk_error(c->d, e->loc, "`-` does not apply to bool");
		return blk_ck_poison();
	}
	if (fp8_refused(c, e->loc, "-", x.t.dtype))
		return blk_ck_poison();
	x.konst = false;
	return x;
}

/* ---- names ----------------------------------------------------------------------- */

const CkBuiltinInfo blk_ck_builtins[CK_NUM_BUILTINS] = {
	[CK_B_NONE] = { "", -1, -1, { NULL, NULL }, CK_DT_OWN, CK_NO_OP, 0 },
#define BUILTIN(id, name, nmin, nmax, kw0, kw1, dtype, op, flags) \
	[CK_B_##id] = { name, nmin, nmax, { kw0, kw1 }, dtype, op, flags },
#include "frontend/builtins.def"
#undef BUILTIN
};

static CkBuiltin builtin_of(const char *name)
{
	for (int i = 1; i < CK_NUM_BUILTINS; i++)
		if (strcmp(blk_ck_builtins[i].name, name) == 0)
			return (CkBuiltin)i;
	return CK_B_NONE;
}

bool blk_ck_is_builtin(const char *name)
{
	return builtin_of(name) != CK_B_NONE;
}

static CkType check_name(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	BlkCkBind *b = blk_ck_lookup(c, e->name);
	if (!b) {
		const char *blk = blk_ck_spelling(c, e->name);
		if (builtin_of(e->name))
			blk_error(c->d, e->loc, "`%s` is a builtin function; call it", e->name);
		else if (blk_ck_helper(c, e->name))
			blk_error(c->d, e->loc, "`%s` is a helper function; call it: `%s(...)`", e->name, e->name);
		else if (blk)
			blk_error(c->d, e->loc, "unknown name `%s`; blk writes `%s`", e->name, blk);
		else if (c->in_map && blk_ck_is_param_name(c, e->name) == 1)
			blk_error(c->d, e->loc, "an index map reads only `prefetch` arrays, and `%s` is "
			          "not one (declare it `%s: prefetch i32[...]`: whole, read-only)",
			          e->name, e->name);
		else if (c->in_map && blk_ck_is_param_name(c, e->name))
			blk_error(c->d, e->loc, "an index map cannot read `%s`: maps read only `prefetch` "
			          "arrays (i32, whole, read-only)", e->name);
		else
			blk_error(c->d, e->loc, "unknown name `%s`", e->name);
		return blk_ck_poison();
	}
	in->bind = b;
	if (b->kind == CK_BIND_SIZE)
		return blk_ck_value(BLK_I32, 0, NULL);
	return b->type;
}

/* ---- indexing ------------------------------------------------------------------- */

/* Counts idx's `...` (at most one), `None`s and scalar indices; checks
 * that the rest fit the Ref's rank and the result BLK_MAX_RANK. */
static bool index_count(Ck *c, BlkLoc loc, const BlkAstIndex *idx, int n, int rank, int *ell,
                        int *nnew)
{
	int scalars = 0;
	*ell = *nnew = 0;
	for (int i = 0; i < n; i++) {
		*nnew += idx[i].kind == BLK_AST_IDX_NONE;
		scalars += idx[i].kind == BLK_AST_IDX_EXPR;
		if (idx[i].kind == BLK_AST_IDX_ELLIPSIS && ++*ell > 1) {
			blk_error(c->d, idx[i].loc, "`...` may appear only once in an index");
			return false;
		}
	}
	if (n - *ell - *nnew > rank) {
		blk_error(c->d, loc, "too many indices: %d for a Ref of rank %d", n - *ell - *nnew, rank);
		return false;
	}
	if (rank - scalars + *nnew <= BLK_MAX_RANK)
		return true;
	blk_error(c->d, loc, "indexing with `None` gives rank %d; the limit is %d", rank - scalars + *nnew,
	          BLK_MAX_RANK);
	return false;
}

/* A constant index or ds window [lo, lo + n) on a ref dim of constant extent
 * must touch it, and a window must fit in it.  A window that sticks partly
 * out is masked (a shifted read with a fill, `load(x.at[ds(1, B)], other=0)`,
 * is a stencil's idiom); one the checker sees entirely outside, or larger
 * than the dim, is a mistake. */
static bool index_in_range(Ck *c, const BlkAstIndex *ix, const CkType *t, const BlkSym *size,
                           int64_t step, const CkType *ref, int d)
{
	int64_t ext, n = 1, lo = t->i;
	const char *name = ref->root ? ref->root->name : "the Ref";
	if (size && !blk_sym_is_const(size, &n))
		return true;
	if (n > 0 && step > 1 && (n - 1) > (INT32_MAX - 1) / step) { /* the GPU's coordinates are i32 */
		blk_error(c->d, ix->loc, "ds(..., %lld, %lld) spans more than 2^31 - 1 elements", (long long)n,
		          (long long)step);
		return false;
	}
	if (!blk_sym_is_const(ref->t.dims[d], &ext))
		return true;
	int64_t span = (n - 1) * step + 1; /* a strided window's */
	if (size && step > 1 && span > ext) {
		blk_error(c->d, ix->loc, "ds(..., %lld, %lld) spans %lld elements, more than dim %d of `%s`, "
		          "whose extent is %lld", (long long)n, (long long)step, (long long)span, d, name,
		          (long long)ext);
		return false;
	}
	if (size && n > ext) {
		blk_error(c->d, ix->loc, "ds(..., %lld) is larger than dim %d of `%s`, whose extent is %lld",
		          (long long)n, d, name, (long long)ext);
		return false;
	}
	n = span;
	if (t->kind != CK_VALUE || !t->konst || t->t.rank || (lo + n > 0 && lo < ext))
		return true;
	if (size)
		blk_error(c->d, ix->loc, "ds(%lld, %lld) lies outside dim %d of `%s`, whose extent is %lld",
		          (long long)lo, (long long)n, d, name, (long long)ext);
	else
		blk_error(c->d, ix->loc, "index %lld is out of range for dim %d of `%s`, whose extent is %lld",
		          (long long)lo, d, name, (long long)ext);
	return false;
}

/* A step (ds's third argument, a slice's `::s`): a positive integer
 * constant; absent, 1. */
static bool step_of(Ck *c, const BlkAstExpr *e, const char *what, int64_t *out)
{
	*out = 1;
	if (!e)
		return true;
	CkType t = blk_ck_expr(c, e);
	if (!need_const_int(c, e, &t, what, out))
		return false;
	if (*out >= 1 && *out <= CK_MAX_DIM)
		return true;
	if (*out < 0)
		blk_error(c->d, e->loc, "%s must be from 1 to %lld, got %lld: to reverse a tile write flip(t, "
		          "axis = k) (of a loaded window of a Ref: flip(x[...], axis = k))", what,
		          (long long)CK_MAX_DIM, (long long)*out);
	else
		blk_error(c->d, e->loc, "%s must be from 1 to %lld, got %lld", what, (long long)CK_MAX_DIM,
		          (long long)*out);
	return false;
}

/* A slice bound: an integer constant, negative counting from the end
 * (Python's), which needs the dim's extent to be a constant (ext >= 0). */
static bool slice_bound(Ck *c, const BlkAstExpr *e, int64_t ext, int64_t *out)
{
	CkType t = blk_ck_expr(c, e);
	if (!need_const_int(c, e, &t, "a slice bound", out))
		return false;
	if (*out > CK_MAX_DIM || *out < -CK_MAX_DIM) {
		blk_error(c->d, e->loc, "a slice bound must be within +-%lld, got %lld", (long long)CK_MAX_DIM,
		          (long long)*out);
		return false;
	}
	if (*out >= 0)
		return true;
	if (ext < 0) {
		blk_error(c->d, e->loc, "a negative slice bound needs a dim of constant extent");
		return false;
	}
	*out += ext;
	return true;
}

/* `lo:hi` on ref dim d (one bound at least): a DS of constant start; hi
 * left out is the dim's end (size extent - lo, a size expression). */
static const BlkSym *slice_index(Ck *c, const BlkAstIndex *ix, const CkType *ref, int d,
                                 int64_t *start, int64_t *step)
{
	int64_t ext = -1, hi = 0;
	if (!step_of(c, ix->c, "a slice step", step))
		return NULL;
	const BlkSym *k = blk_sym_const(c->a, *step);
	const char *name = ref->root ? blk_arena_printf(c->a, "`%s`", ref->root->name) : "the tile";
	bool kext = blk_sym_is_const(ref->t.dims[d], &ext);
	*start = 0;
	if ((ix->a && !slice_bound(c, ix->a, kext ? ext : -1, start)) ||
	    (ix->b && !slice_bound(c, ix->b, kext ? ext : -1, &hi)))
		return NULL;
	if (!ix->b && !kext) /* lo: on a symbolic extent */
		return blk_sym_binary(c->a, BLK_SYM_CDIV, blk_sym_binary(c->a, BLK_SYM_SUB, ref->t.dims[d],
		                      blk_sym_const(c->a, *start)), k);
	if (!ix->b)
		hi = ext;
	if (*start >= 0 && *start < hi && (!kext || hi <= ext))
		return blk_sym_const(c->a, (hi - *start + *step - 1) / *step);
	if (kext)
		blk_error(c->d, ix->loc, "slice %lld:%lld of dim %d of %s (extent %lld) is empty or "
		          "out of range", (long long)*start, (long long)hi, d, name, (long long)ext);
	else
		blk_error(c->d, ix->loc, "slice %lld:%lld is empty", (long long)*start, (long long)hi);
	return NULL;
}

/* A tile of i32 indices on ref dim d, a gather (the result's dims so far:
 * pos): the index tiles broadcast together and sit where the first one
 * is; they must be side by side (scalars between them are fine), since
 * numpy would move apart ones to the front. */
static bool gather_index(Ck *c, const BlkAstIndex *ix, const CkType *t, CkAccess *acc, int d, int pos)
{
	if (t->t.dtype != BLK_I32 || t->weak) {
		blk_error(c->d, ix->loc, "an index must be an i32 scalar or an i32 tile (a gather), got %s%s",
		          tstr(c, t), t->t.dtype == BLK_BOOL ? "; a mask does not index: select with where" : "");
		return false;
	}
	if (!acc->may_gather) {
		blk_error(c->d, ix->loc, "an index must be an i32 scalar, got %s: a tile of indices (a gather) "
		          "reads, writes or updates a Ref at once (x[idx], x[idx] = v, load(x.at[idx], other = v), "
		          "atomic_add(x.at[idx], v)), not a tile, a view or a swap", tstr(c, t));
		return false;
	}
	acc->idx[d].kind = BLK_INDEX_GATHER;
	acc->src[d] = ix;
	if (!acc->grank) {
		acc->gpos = pos, acc->grank = t->t.rank, acc->glast = d;
		memcpy(acc->gdims, t->t.dims, sizeof acc->gdims[0] * (size_t)t->t.rank);
		return true;
	}
	for (int k = acc->glast + 1; k < d; k++)
		if (acc->idx[k].kind != BLK_INDEX_SCALAR) {
			blk_error(c->d, ix->loc, "the gathered dims must be side by side (only scalar indices "
			          "between them)");
			return false;
		}
	acc->glast = d;
	CkType s = blk_ck_value(BLK_I32, acc->grank, acc->gdims);
	return broadcast_or_report(c, ix->loc, &s, t, &acc->grank, acc->gdims);
}

/* One AST index on ref dim d; returns the next ref dim. */
static int access_one(Ck *c, const BlkAstIndex *ix, int d, int fill, CkAccess *acc,
                      const CkType *ref, int *rank, const BlkSym **dims, bool *ok)
{
	CkType t;
	switch (ix->kind) {
	case BLK_AST_IDX_SLICE:
		if (ix->a || ix->b || ix->c) {
			acc->idx[d].kind = BLK_INDEX_DS;
			acc->idx[d].size = slice_index(c, ix, ref, d, &acc->start[d], &acc->idx[d].step);
			acc->src[d] = ix;
			acc->konst |= 1u << d;
			*ok &= acc->idx[d].size != NULL;
		}
		dims[(*rank)++] = acc->idx[d].size ? acc->idx[d].size : ref->t.dims[d];
		return d + 1;
	case BLK_AST_IDX_ELLIPSIS:
		for (int j = 0; j < fill; j++, d++)
			dims[(*rank)++] = ref->t.dims[d];
		return d;
	case BLK_AST_IDX_NONE:
		acc->newaxes |= 1u << *rank;
		dims[(*rank)++] = blk_sym_const(c->a, 1);
		return d;
	case BLK_AST_IDX_DS:
		t = blk_ck_expr(c, ix->a);
		*ok &= need_i32(c, ix->a, &t, "the start of ds");
		acc->idx[d].kind = BLK_INDEX_DS;
		acc->idx[d].size = blk_ck_sym(c, ix->b);
		acc->src[d] = ix;
		*ok &= acc->idx[d].size != NULL;
		*ok &= step_of(c, ix->c, "a ds step", &acc->idx[d].step);
		*ok &= index_in_range(c, ix, &t, acc->idx[d].size, acc->idx[d].step, ref, d);
		dims[(*rank)++] = acc->idx[d].size ? acc->idx[d].size : ref->t.dims[d];
		return d + 1;
	default:
		t = blk_ck_expr(c, ix->a);
		if (t.kind == CK_VALUE && t.t.rank > 0) {
			*ok &= gather_index(c, ix, &t, acc, d, *rank);
			return d + 1;
		}
		*ok &= need_i32(c, ix->a, &t, "an index");
		int64_t ext;
		if (t.kind == CK_VALUE && t.konst && !t.t.rank && t.i < 0) { /* x[-1]: from the end, as numpy */
			if (blk_sym_is_const(ref->t.dims[d], &ext) && t.i + ext >= 0) {
				t.i += ext;
				acc->start[d] = t.i;
				acc->konst |= 1u << d;
			} else if (ref->kind == CK_REF && !blk_sym_is_const(ref->t.dims[d], &ext)) {
				acc->start[d] = t.i; /* N + t.i, made where the access is lowered */
				acc->from_end |= 1u << d;
				acc->idx[d].kind = BLK_INDEX_SCALAR;
				acc->src[d] = ix;
				return d + 1;
			} else if (ref->kind == CK_VALUE && !blk_sym_is_const(ref->t.dims[d], &ext)) {
				blk_error(c->d, ix->loc, "a negative index needs a dim of constant extent");
				*ok = false;
				return d + 1;
			}
		}
		*ok &= index_in_range(c, ix, &t, NULL, 1, ref, d);
		acc->idx[d].kind = BLK_INDEX_SCALAR;
		acc->src[d] = ix;
		return d + 1;
	}
}

/* `None` where nothing is read. */
static bool newaxis_written(Ck *c, const BlkAstIndex *idx, int n)
{
	for (int i = 0; i < n; i++)
		if (idx[i].kind == BLK_AST_IDX_NONE) {
			blk_error(c->d, idx[i].loc, "`None` adds an axis to what is read; it cannot index a "
			          "store or an .at view");
			return true;
		}
	return false;
}

bool blk_ck_access(Ck *c, BlkLoc loc, const BlkAstIndex *idx, int n, const CkType *ref, bool read,
               CkAccess *acc, int *rank, const BlkSym **dims)
{
	int R = ref->t.rank, d = 0, ell, nnew;
	bool ok = true, may_gather = c->gather_ok;
	c->gather_ok = false;
	memset(acc, 0, sizeof *acc);
	acc->may_gather = may_gather;
	acc->rank = R;
	*rank = 0;
	if (!index_count(c, loc, idx, n, R, &ell, &nnew) || (!read && newaxis_written(c, idx, n)))
		return false;
	for (int i = 0; i < n; i++)
		d = access_one(c, &idx[i], d, R - (n - ell - nnew), acc, ref, rank, dims, &ok);
	for (; d < R; d++)
		dims[(*rank)++] = ref->t.dims[d];
	if (!ok || !acc->grank)
		return ok;
	if (acc->newaxes || *rank + acc->grank > BLK_MAX_RANK) {
		blk_error(c->d, loc, acc->newaxes ? "`None` and a gather in one access are not supported; "
		          "add the axis with expand_dims" : "a gather gives a tile of rank more than %d",
		          BLK_MAX_RANK);
		return false;
	}
	memmove(&dims[acc->gpos + acc->grank], &dims[acc->gpos], sizeof dims[0] * (size_t)(*rank - acc->gpos));
	memcpy(&dims[acc->gpos], acc->gdims, sizeof dims[0] * (size_t)acc->grank);
	*rank += acc->grank;
	return true;
}

static CkType need_ref(Ck *c, const BlkAstExpr *e, const CkType *t)
{
	if (t->kind == CK_REF || is_poison(t))
		return *t;
	blk_error(c->d, e->loc, "only Refs can be indexed, but this is %s", tstr(c, t));
	return blk_ck_poison();
}

/* A Ref that may be read here.  An `out` parameter holds nothing the
 * caller gave: it may be read only after a store to it earlier in the
 * source (Pallas's `o_ref[...] += ...` after its first step zeroed it),
 * and reads what the program stored. */
static bool readable(Ck *c, BlkLoc loc, const CkType *r)
{
	if (!blk_ck_not_signal(c, loc, r))
		return false;
	if (r->access != BLK_ACCESS_OUT ||
	    (r->root && r->root->kind == CK_BIND_PARAM && c->k->stored[r->root->param]))
		return true;
	blk_error(c->d, loc, "cannot read `%s` before the kernel stores to it: it is an `out` "
	          "parameter, whose elements hold nothing until the program writes them",
	          r->root->name);
	blk_ck_declared_here(c, r->root);
	blk_note(c->d, r->root->loc, "store to it first (`when program_id(2) == 0 { %s[...] = "
	         "zeros(...) }` on the first step of a `seq` axis), or declare it `inout` to read "
	         "what the caller passes", r->root->name);
	return false;
}

/* `t[i, 2:6, None]`: a tile takes a Ref's indices (an extract; elements
 * outside it read 0), `None` adding axes (expand_dims). */
static CkType tile_index(Ck *c, const BlkAstExpr *e, CkInfo *in, CkType x)
{
	const BlkSym *dims[BLK_MAX_RANK];
	int rank;
	x = blk_ck_strong(x);
	c->gather_ok = false;
	if (!blk_ck_access(c, e->loc, e->idx, e->nidx, &x, true, &in->acc, &rank, dims))
		return blk_ck_poison();
	return blk_ck_value(x.t.dtype, rank, dims);
}

static CkType check_index(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	bool at_gather = c->at_gather;
	c->at_gather = false;
	CkType x = blk_ck_expr(c, e->lhs);
	const BlkSym *dims[BLK_MAX_RANK];
	int rank;
	if (x.kind == CK_VALUE && e->kind == BLK_AST_INDEX)
		return tile_index(c, e, in, x);
	x = need_ref(c, e->lhs, &x);
	if (is_poison(&x))
		return x;
	c->gather_ok = e->kind == BLK_AST_INDEX || at_gather;
	if (!blk_ck_access(c, e->loc, e->idx, e->nidx, &x, e->kind == BLK_AST_INDEX, &in->acc, &rank, dims))
		return blk_ck_poison();
	if (e->kind == BLK_AST_AT)
		return blk_ck_ref(x.t.dtype, rank, dims, x.t.space, x.access, x.root);
	if (!readable(c, e->loc, &x) || !blk_ck_dims_ok(c, e->loc, rank, dims, true))
		return blk_ck_poison();
	return blk_ck_value(x.t.dtype, rank, dims);
}

/* ---- builtins ------------------------------------------------------------------- */

/* Keyword arguments of Pallas, Triton and JAX calls that blk has no use
 * for, and what to write instead. */
static const struct {
	const char *fn, *kw, *note;
} foreign_kws[] = {
	{ "load", "mask", "blk masks the elements outside the array itself (they read `other`, 0 by "
	                  "default); for another mask select: where(m, x, v)" },
	{ "dot", "preferred_element_type", "a dot of f16, bf16 or fp8 sums in f32 (i8 in i32) and "
	                                   "returns that; .astype(T) narrows it" },
	{ "program_id", "axis", "write program_id(0)" },
	{ "num_programs", "axis", "write num_programs(0)" },
	{ "fori_loop", "step", "loop over (hi - lo) ~/ step trips and compute lo + i * step" },
};

/* Call arguments sorted: positional ones, then the keyword ones named in kws. */
bool blk_ck_get_args(Ck *c, const BlkAstExpr *e, int min, int max, const char *kw0,
                     const char *kw1, Args *out)
{
	const char *kws[2] = { kw0, kw1 };
	bool ok = true;
	memset(out, 0, sizeof *out);
	for (int i = 0; i < e->nargs; i++) {
		const BlkAstArg *g = &e->args[i];
		int k = -1;
		for (int j = 0; j < 2 && g->name; j++)
			k = kws[j] && strcmp(kws[j], g->name) == 0 ? j : k;
		if (!g->name && out->npos < MAX_POS)
			out->pos[out->npos++] = g->value;
		else if (!g->name)
			out->npos++;
		else if (k >= 0)
			out->kw[k] = g->value;
		else {
			blk_error(c->d, g->loc, "`%s` has no argument named `%s`", e->name, g->name);
			for (size_t f = 0; f < sizeof foreign_kws / sizeof foreign_kws[0]; f++)
				if (strcmp(foreign_kws[f].fn, e->name) == 0 && strcmp(foreign_kws[f].kw, g->name) == 0)
					blk_note(c->d, g->loc, "%s", foreign_kws[f].note);
			ok = false;
		}
	}
	if (out->npos >= min && out->npos <= max)
		return ok;
	if (min == max)
		blk_error(c->d, e->loc, "`%s` takes %d argument%s, got %d", e->name, min,
		          min == 1 ? "" : "s", out->npos);
	else
		blk_error(c->d, e->loc, "`%s` takes %d to %d arguments, got %d", e->name, min, max,
		          out->npos);
	if (out->npos == max + 1 && kw0 && !out->kw[0]) /* `sum(x, -1)`: numpy's positional axis */
		blk_note(c->d, e->loc, "`%s` is given by name: %s(..., %s = ...)", kw0, e->name, kw0);
	return false;
}

/* The arguments of builtin b as builtins.def gives them. */
static bool builtin_args(Ck *c, const BlkAstExpr *e, CkBuiltin b, Args *out)
{
	const CkBuiltinInfo *bi = &blk_ck_builtins[b];
	return blk_ck_get_args(c, e, bi->nmin, bi->nmax, bi->kw[0], bi->kw[1], out);
}

/* A value argument; weak literals become strong (their default dtype). */
static bool value_arg(Ck *c, const BlkAstExpr *e, CkType *t)
{
	*t = blk_ck_expr(c, e);
	if (!need_value(c, e, t))
		return false;
	*t = blk_ck_strong(*t);
	t->konst = false;
	return true;
}

/* `(d0, d1)` or a single dim. */
static bool shape_arg(Ck *c, const BlkAstExpr *e, int *rank, const BlkSym **dims)
{
	const BlkAstExpr *const *el = e->kind == BLK_AST_TUPLE ? (const BlkAstExpr *const *)e->elems : &e;
	int n = e->kind == BLK_AST_TUPLE ? e->nelems : 1;
	bool ok = true;
	if (n > BLK_MAX_RANK) {
		blk_error(c->d, e->loc, "a shape has at most %d dims, this one has %d", BLK_MAX_RANK, n);
		return false;
	}
	for (int i = 0; i < n; i++)
		ok &= (dims[i] = blk_ck_sym(c, el[i])) != NULL;
	*rank = n;
	return ok && blk_ck_dims_ok(c, e->loc, n, dims, true);
}

/* A compile-time constant that can be stored in dtype dt (full's value, other=). */
static bool const_of(Ck *c, const BlkAstExpr *e, BlkDType dt, CkType *out)
{
	*out = blk_ck_expr(c, e);
	if (is_poison(out))
		return false;
	if (out->kind != CK_VALUE || !out->konst) {
		blk_error(c->d, e->loc, "expected a constant");
		return false;
	}
	if (blk_ck_converts(out, dt))
		return true;
	if (out->weak == CK_WEAK_INT && blk_dtype_is_byte(dt))
		blk_error(c->d, e->loc, "the literal %lld does not fit %s (%s)", (long long)out->i,
		          blk_dtype_name(dt), dt == BLK_I8 ? "-128 .. 127" : "0 .. 255");
	else if (out->weak == CK_WEAK_FLOAT) /* it said "the constant f32 does not fit dtype i32" */
		blk_error(c->d, e->loc, "the float literal %g does not fit %s; write %s", out->f,
		          blk_dtype_name(dt), dt == BLK_BOOL ? "true or false" : "an integer literal");
	else
		blk_error(c->d, e->loc, "the constant, a %s, does not fit dtype %s; convert it with astype",
		          tstr(c, out), blk_dtype_name(dt));
	return false;
}

static CkType b_zeros(Ck *c, const BlkAstExpr *e, CkInfo *in, bool full)
{
	Args g;
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0;
	BlkDType dt = BLK_F32;
	if (!builtin_args(c, e, full ? CK_B_FULL : CK_B_ZEROS, &g))
		return blk_ck_poison();
	bool ok = shape_arg(c, g.pos[0], &rank, dims);
	int at = full ? 2 : 1; /* the dtype: positional, or `dtype =` (jnp's) */
	const BlkAstExpr *dte = g.npos > at ? g.pos[at] : g.kw[0];
	if (g.npos > at && g.kw[0]) {
		blk_error(c->d, g.kw[0]->loc, "`%s`'s dtype is given twice", e->name);
		return blk_ck_poison();
	}
	if (!dte) {
		blk_error(c->d, e->loc, "`%s` needs a dtype: %s", e->name,
		          full ? "full((BM, BN), 0.0, f32)" : "zeros((BM, BN), f32)");
		return blk_ck_poison();
	}
	ok &= blk_ck_dtype(c, dte, &dt);
	if (ok && full)
		ok = const_of(c, g.pos[1], dt, &in->fill);
	else if (ok)
		in->fill = ck_weak_int(0);
	return ok ? blk_ck_value(dt, rank, dims) : blk_ck_poison();
}

static CkType b_iota(Ck *c, const BlkAstExpr *e)
{
	Args g;
	const BlkSym *n;
	if (!builtin_args(c, e, CK_B_IOTA, &g) || !(n = blk_ck_sym(c, g.pos[0])) ||
	    !blk_ck_dims_ok(c, e->loc, 1, &n, true))
		return blk_ck_poison();
	return blk_ck_value(BLK_I32, 1, &n);
}

/* Whether dtype dt meets builtin b's operand rule (reported if not). */
static bool math_dtype_ok(Ck *c, const BlkAstExpr *e, CkBuiltin b, const CkType *x)
{
	if (fp8_refused(c, e->loc, e->name, x->t.dtype))
		return false;
	bool numeric = blk_ck_builtins[b].dtype == CK_DT_NUMERIC;
	if (numeric ? x->t.dtype != BLK_BOOL : blk_dtype_is_float(x->t.dtype))
		return true;
	bool one = blk_ck_builtins[b].nmax == 1;
	blk_error(c->d, e->loc, "`%s` needs %s%s operand%s, got %s", e->name, one ? "a " : "",
	          numeric ? "numeric" : "float", one ? "" : "s", tstr(c, x));
	return false;
}

static CkType b_math(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	Args g;
	CkType x;
	if (!builtin_args(c, e, b, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	return math_dtype_ok(c, e, b, &x) ? x : blk_ck_poison();
}

/* isnan(x), isinf(x): a float tile in, a bool tile of its shape out. */
static CkType b_float_class(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	CkType t = b_math(c, e, b);
	t.t.dtype = BLK_BOOL;
	return t;
}


/* gelu(x) (erf), gelu(x, approximate = true) (tanh, JAX's keyword). */
static CkType b_gelu(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x;
	if (!builtin_args(c, e, CK_B_GELU, &g) || !value_arg(c, g.pos[0], &x) ||
	    (g.kw[0] && !blk_ck_bool_arg(c, g.kw[0], &in->approx)))
		return blk_ck_poison();
	return math_dtype_ok(c, e, CK_B_GELU, &x) ? x : blk_ck_poison();
}

bool blk_ck_axis_arg(Ck *c, const BlkAstExpr *e, int rank, int *axis)
{
	CkType t = blk_ck_expr(c, e);
	int64_t v;
	if (!need_const_int(c, e, &t, "axis", &v))
		return false;
	if (v < -rank || v >= rank) {
		blk_error(c->d, e->loc, "axis %lld is out of range for rank %d", (long long)v, rank);
		return false;
	}
	*axis = (int)(v < 0 ? v + rank : v);
	return true;
}

bool blk_ck_bool_arg(Ck *c, const BlkAstExpr *e, bool *out)
{
	CkType t = blk_ck_expr(c, e);
	if (is_poison(&t))
		return false;
	if (t.kind == CK_VALUE && t.konst && t.t.dtype == BLK_BOOL && !t.weak) {
		*out = t.i != 0;
		return true;
	}
	blk_error(c->d, e->loc, "expected `true` or `false`");
	return false;
}

/* sum/max/min(x, axis=k, keepdims=b) */
static CkType b_reduce(Ck *c, const BlkAstExpr *e, CkInfo *in, const Args *g)
{
	CkType x;
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0;
	in->reduce = true;
	in->axis = -1;
	if (!value_arg(c, g->pos[0], &x))
		return blk_ck_poison();
	if (g->kw[0] && !blk_ck_axis_arg(c, g->kw[0], x.t.rank, &in->axis))
		return blk_ck_poison();
	if (g->kw[1] && !blk_ck_bool_arg(c, g->kw[1], &in->keepdims))
		return blk_ck_poison();
	if (x.t.dtype == BLK_BOOL) {
		blk_error(c->d, e->loc, "`%s` does not apply to bool", e->name);
		return blk_ck_poison();
	}
	if (fp8_refused(c, e->loc, e->name, x.t.dtype))
		return blk_ck_poison();
	for (int d = 0; d < x.t.rank; d++) {
		if (in->axis < 0 || d == in->axis)
			dims[rank] = blk_sym_const(c->a, 1);
		else
			dims[rank] = x.t.dims[d];
		rank += in->keepdims || (in->axis >= 0 && d != in->axis);
	}
	return blk_ck_value(x.t.dtype, rank, dims);
}

/* Elementwise over n operands: where(c, a, b), max(a, b), min(a, b). */
static CkType b_elementwise(Ck *c, const BlkAstExpr *e, CkInfo *in, const Args *g)
{
	CkType v[3] = { blk_ck_poison(), blk_ck_poison(), blk_ck_poison() }, acc;
	int n = g->npos, rank = 0, first = n == 3;
	const BlkSym *dims[BLK_MAX_RANK];
	bool ok = true;
	for (int i = 0; i < n; i++) {
		v[i] = blk_ck_expr(c, g->pos[i]);
		ok &= need_value(c, g->pos[i], &v[i]);
	}
	if (!ok)
		return blk_ck_poison();
	if (n == 3 && (v[0].t.dtype != BLK_BOOL || v[0].weak)) {
		blk_error(c->d, g->pos[0]->loc, "where's condition must be bool, got %s", tstr(c, &v[0]));
		return blk_ck_poison();
	}
	if (!unify(c, e->loc, e->name, &v[first], &v[first + 1], &in->opdt))
		return blk_ck_poison();
	if (n == 2 && in->opdt == BLK_BOOL) {
		blk_error(c->d, e->loc, "`%s` does not apply to bool", e->name);
		return blk_ck_poison();
	}
	if (n == 2 && fp8_refused(c, e->loc, e->name, in->opdt)) /* where only selects */
		return blk_ck_poison();
	acc = v[0];
	for (int i = 1; i < n; i++, acc = blk_ck_value(in->opdt, rank, dims))
		if (!broadcast_or_report(c, e->loc, &acc, &v[i], &rank, dims))
			return blk_ck_poison();
	return blk_ck_value(in->opdt, rank, dims);
}

/* fma(a, b, c), clamp(x, lo, hi): three operands of one dtype (weak ones
 * take the others' dtype), broadcast together. */
static CkType b_ternary(Ck *c, const BlkAstExpr *e, CkInfo *in, CkBuiltin b)
{
	Args g;
	CkType v[3], acc;
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0, s = 0;
	bool ok = builtin_args(c, e, b, &g);
	for (int i = 0; ok && i < 3; i++) {
		v[i] = blk_ck_expr(c, g.pos[i]);
		ok &= need_value(c, g.pos[i], &v[i]);
	}
	if (!ok)
		return blk_ck_poison();
	while (s < 2 && v[s].weak) /* the first strong operand */
		s++;
	for (int i = 0; v[s].weak && i < 3; i++) /* all weak: a float one if any */
		s = v[i].weak == CK_WEAK_FLOAT ? i : s;
	for (int i = 0; i < 3; i++)
		if (i != s && !unify(c, e->loc, e->name, &v[s], &v[i], &in->opdt))
			return blk_ck_poison();
	acc = blk_ck_value(in->opdt, 0, NULL);
	if (!math_dtype_ok(c, e, b, &acc))
		return blk_ck_poison();
	for (int i = 0; i < 3; i++, acc = blk_ck_value(in->opdt, rank, dims))
		if (!broadcast_or_report(c, e->loc, &acc, &v[i], &rank, dims))
			return blk_ck_poison();
	return acc;
}

static CkType b_maxmin(Ck *c, const BlkAstExpr *e, CkInfo *in, CkBuiltin b)
{
	Args g;
	if (!builtin_args(c, e, b, &g))
		return blk_ck_poison();
	if (g.npos == 1)
		return b_reduce(c, e, in, &g);
	if (g.kw[0] || g.kw[1]) {
		blk_error(c->d, e->loc, "elementwise `%s(a, b)` takes no axis", e->name);
		return blk_ck_poison();
	}
	return b_elementwise(c, e, in, &g);
}

/* cumsum/cumprod/cummax/cummin(x, axis, reverse = b): the axis may be
 * positional or a keyword, and only a rank-1 tile may leave it out
 * (numpy's flattening default is not blk's: tiles keep their shape). */
static CkType b_scan(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x;
	if (!builtin_args(c, e, in->builtin, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	const BlkAstExpr *ax = g.npos == 2 ? g.pos[1] : g.kw[0];
	if (g.npos == 2 && g.kw[0]) {
		blk_error(c->d, g.kw[0]->loc, "`%s` got the axis twice", e->name);
		return blk_ck_poison();
	}
	if (x.t.rank == 0 || x.t.dtype == BLK_BOOL) {
		blk_error(c->d, g.pos[0]->loc, "`%s` scans a numeric tile, got %s", e->name, tstr(c, &x));
		return blk_ck_poison();
	}
	if (fp8_refused(c, e->loc, e->name, x.t.dtype))
		return blk_ck_poison();
	if (!ax && x.t.rank > 1) {
		blk_error(c->d, e->loc, "`%s` of a rank-%d tile needs an axis: `%s(x, axis = k)`", e->name,
		          x.t.rank, e->name);
		return blk_ck_poison();
	}
	in->axis = 0;
	if ((ax && !blk_ck_axis_arg(c, ax, x.t.rank, &in->axis)) ||
	    (g.kw[1] && !blk_ck_bool_arg(c, g.kw[1], &in->reverse)))
		return blk_ck_poison();
	return x;
}

/* The product of dims as a size expression. */
static const BlkSym *count_of(Ck *c, int rank, const BlkSym *const *dims)
{
	const BlkSym *n = blk_sym_const(c->a, 1);
	for (int d = 0; d < rank; d++)
		n = blk_sym_binary(c->a, BLK_SYM_MUL, n, dims[d]);
	return n;
}

/* reshape's new dims: args[from..] each a dim, or one tuple of them; one
 * may be -1, inferred from the count. */
static bool reshape_dims(Ck *c, const BlkAstExpr *e, int from, const CkType *x, int *rank,
                         const BlkSym **dims)
{
	const BlkAstExpr *a = e->args[from].value;
	bool tuple = e->nargs == from + 1 && a->kind == BLK_AST_TUPLE;
	int n = tuple ? a->nelems : e->nargs - from, infer = -1;
	bool ok = n >= 1 && n <= BLK_MAX_RANK;
	if (!ok)
		blk_error(c->d, a->loc, "a shape has 1 to %d dims, this one has %d", BLK_MAX_RANK, n);
	for (int i = 0; ok && i < n; i++) {
		const BlkAstExpr *el = tuple ? a->elems[i] : e->args[from + i].value;
		int64_t k;
		ok = (dims[i] = blk_ck_sym(c, el)) != NULL;
		if (ok && blk_sym_is_const(dims[i], &k) && (k == 0 || k < -1)) {
			blk_error(c->d, el->loc, "a reshape dim must be positive, or -1 to infer it; got %lld",
			          (long long)k);
			return false;
		}
		if (ok && blk_sym_is_const(dims[i], &k) && k == -1) {
			ok = infer < 0;
			if (!ok)
				blk_error(c->d, el->loc, "only one dim of a reshape may be -1");
			infer = i;
		}
	}
	*rank = n;
	if (!ok)
		return false;
	const BlkSym *want = count_of(c, x->t.rank, x->t.dims);
	int64_t total, known;
	if (infer >= 0) {
		dims[infer] = blk_sym_const(c->a, 1);
		if (!blk_sym_is_const(want, &total) || !blk_sym_is_const(count_of(c, n, dims), &known) ||
		    total % known) {
			blk_error(c->d, e->loc, "cannot infer the -1 dim: %s does not split into whole "
			          "rows of the other dims", tstr(c, x));
			return false;
		}
		dims[infer] = blk_sym_const(c->a, total / known);
	}
	if (!blk_sym_equal(want, count_of(c, n, dims))) {
		blk_error(c->d, e->loc, "reshape keeps the element count: %s has %s, the new shape %s",
		          tstr(c, x), blk_sym_str(c->a, want), blk_sym_str(c->a, count_of(c, n, dims)));
		return false;
	}
	return blk_ck_dims_ok(c, e->loc, n, dims, true);
}

/* reshape(x, (d0, d1)) or x.reshape(d0, d1) / x.reshape((d0, d1)):
 * the elements in row-major order, another shape. */
static CkType b_reshape(Ck *c, const BlkAstExpr *e)
{
	CkType x;
	const BlkSym *dims[BLK_MAX_RANK];
	int rank;
	for (int i = 0; i < e->nargs; i++)
		if (e->args[i].name) {
			blk_error(c->d, e->args[i].loc, "`reshape` takes no keyword arguments");
			return blk_ck_poison();
		}
	if (e->nargs < 2 || (!e->method && e->nargs != 2)) {
		blk_error(c->d, e->loc, "`reshape` takes a tile and a shape: reshape(x, (d0, d1)) or "
		          "x.reshape(d0, d1)");
		return blk_ck_poison();
	}
	if (!value_arg(c, e->args[0].value, &x) || !reshape_dims(c, e, 1, &x, &rank, dims))
		return blk_ck_poison();
	return blk_ck_value(x.t.dtype, rank, dims);
}

/* argmax/argmin(x, axis = k, keepdims = b): i32, the first index of the
 * largest or smallest element; an axis is needed above rank 1 (blk does
 * not flatten). */
static CkType b_arg(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x;
	if (!builtin_args(c, e, in->builtin, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	if (x.t.rank == 0 || x.t.dtype == BLK_BOOL) {
		blk_error(c->d, g.pos[0]->loc, "`%s` needs a numeric tile, got %s", e->name, tstr(c, &x));
		return blk_ck_poison();
	}
	if (fp8_refused(c, e->loc, e->name, x.t.dtype))
		return blk_ck_poison();
	if (!g.kw[0] && x.t.rank > 1) {
		blk_error(c->d, e->loc, "`%s` of a rank-%d tile needs an axis: `%s(x, axis = k)`", e->name,
		          x.t.rank, e->name);
		return blk_ck_poison();
	}
	in->reduce = true;
	in->axis = 0;
	if ((g.kw[0] && !blk_ck_axis_arg(c, g.kw[0], x.t.rank, &in->axis)) ||
	    (g.kw[1] && !blk_ck_bool_arg(c, g.kw[1], &in->keepdims)))
		return blk_ck_poison();
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0;
	for (int d = 0; d < x.t.rank; d++)
		if (d != in->axis || in->keepdims)
			dims[rank++] = d == in->axis ? blk_sym_const(c->a, 1) : x.t.dims[d];
	return blk_ck_value(BLK_I32, rank, dims);
}

static CkType b_where(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	if (!builtin_args(c, e, CK_B_WHERE, &g))
		return blk_ck_poison();
	return b_elementwise(c, e, in, &g);
}

/* pow(x, y): elementwise, floats, the same as x ** y. */
static CkType b_pow(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	if (!builtin_args(c, e, CK_B_POW, &g))
		return blk_ck_poison();
	CkType t = b_elementwise(c, e, in, &g);
	if (is_poison(&t) || blk_dtype_is_float(t.t.dtype))
		return t;
	blk_error(c->d, e->loc, "`pow` needs float operands, got %s; convert with astype",
	          blk_dtype_name(t.t.dtype));
	return blk_ck_poison();
}

/* dot(x, y) or x @ y of two checked values. */
static CkType dot_type(Ck *c, const BlkAstExpr *e, const CkType *xp, const CkType *yp)
{
	CkType x = *xp, y = *yp;
	int r = x.t.rank;
	if (r != y.t.rank || (r != 2 && r != 3)) {
		blk_error(c->d, e->loc, "dot needs two rank-2 tiles (or two rank-3 ones with a leading "
		          "batch dim), got %s and %s", tstr(c, &x), tstr(c, &y));
		return blk_ck_poison();
	}
	if (r == 3 && !blk_sym_equal(x.t.dims[0], y.t.dims[0])) {
		blk_error(c->d, e->loc, "a batched dot needs the same batch dim on both tiles, got "
		          "%s and %s", tstr(c, &x), tstr(c, &y));
		return blk_ck_poison();
	}
	/* the 8-bit formats mix: i8 x u8 (asymmetric quantization), e4m3 x e5m2 */
	bool i8 = blk_dtype_is_byte(x.t.dtype) && blk_dtype_is_byte(y.t.dtype);
	bool f8 = blk_dtype_is_fp8(x.t.dtype) && blk_dtype_is_fp8(y.t.dtype);
	if ((x.t.dtype != y.t.dtype && !f8 && !i8) || (!blk_dtype_is_float(x.t.dtype) && !i8 && !f8)) {
		blk_error(c->d, e->loc, "dot needs two tiles of one dtype, f32, f16 or bf16 (an f32 "
		          "result), or two 8-bit integer tiles (i8 or u8, mixed or not: an i32 result), "
		          "or two fp8 tiles (f8e4m3 or f8e5m2, mixed or not: an f32 result), got %s and "
		          "%s; convert one with astype", tstr(c, &x), tstr(c, &y));
		return blk_ck_poison();
	}
	if (!blk_sym_equal(x.t.dims[r - 1], y.t.dims[r - 2])) {
		blk_error(c->d, e->loc, "dot's inner dims differ: %s and %s", tstr(c, &x), tstr(c, &y));
		return blk_ck_poison();
	}
	const BlkSym *dims[3] = { x.t.dims[0], x.t.dims[r - 2], y.t.dims[r - 1] };
	const BlkSym **d = r == 3 ? dims : dims + 1;
	return blk_ck_dims_ok(c, e->loc, r, d, true) ? blk_ck_value(i8 ? BLK_I32 : BLK_F32, r, d) : blk_ck_poison();
}

/* The two value arguments of builtin b (dot, interleave); false after an error. */
static bool two_values(Ck *c, const BlkAstExpr *e, CkBuiltin b, CkType *x, CkType *y)
{
	Args g;
	if (!builtin_args(c, e, b, &g))
		return false;
	bool ok = value_arg(c, g.pos[0], x);
	return ok & value_arg(c, g.pos[1], y);
}

static CkType b_dot(Ck *c, const BlkAstExpr *e)
{
	CkType x, y;
	return two_values(c, e, CK_B_DOT, &x, &y) ? dot_type(c, e, &x, &y) : blk_ck_poison();
}

/* x with its dims permuted: result dim d is x's dim in->perm[d]. */
static CkType permuted(const CkType *x, const CkInfo *in)
{
	const BlkSym *dims[BLK_MAX_RANK];
	for (int d = 0; d < x->t.rank; d++)
		dims[d] = x->t.dims[in->perm[d]];
	return blk_ck_value(x->t.dtype, x->t.rank, dims);
}

/* `x.T`: rank 2 only -- numpy reverses every axis of a higher rank, which
 * is rarely the batched transpose meant. */
static CkType transpose_of(Ck *c, BlkLoc loc, CkType x, CkInfo *in)
{
	if (x.t.rank != 2) {
		if (x.t.rank > 2)
			blk_error(c->d, loc, "x.T needs a rank-2 tile, got %s: for a batched transpose write "
			          "swapaxes(x, -1, -2), for every axis reversed transpose(x, (%s))",
			          tstr(c, &x), x.t.rank == 3 ? "2, 1, 0" : "3, 2, 1, 0");
		else
			blk_error(c->d, loc, "transpose needs a rank-2 tile, got %s", tstr(c, &x));
		return blk_ck_poison();
	}
	in->perm[0] = 1, in->perm[1] = 0;
	return permuted(&x, in);
}

/* transpose(x) (rank 2), transpose(x, (p0, p1, ..)) or transpose(x, axes =
 * ..), the method x.transpose(p0, p1, ..): numpy's permutation, negative
 * axes counted from the end. */
static CkType b_transpose(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	CkType x;
	const BlkAstExpr *ax = NULL;
	int nax = e->nargs - 1;
	for (int i = 1; i < e->nargs; i++)
		if (e->args[i].name && strcmp(e->args[i].name, "axes") != 0) {
			blk_error(c->d, e->args[i].loc, "`transpose` has no argument named `%s`", e->args[i].name);
			return blk_ck_poison();
		} else if (e->args[i].name && e->nargs != 2) {
			blk_error(c->d, e->args[i].loc, "`axes =` is the only argument after the tile");
			return blk_ck_poison();
		}
	if (e->nargs < 1) {
		blk_error(c->d, e->loc, "`transpose` takes a tile: transpose(x), transpose(x, (1, 0)) or "
		          "x.T");
		return blk_ck_poison();
	}
	if (!value_arg(c, e->args[0].value, &x))
		return blk_ck_poison();
	if (nax == 0)
		return transpose_of(c, e->loc, x, in);
	ax = e->args[1].value;
	bool tuple = nax == 1 && ax->kind == BLK_AST_TUPLE;
	int n = tuple ? ax->nelems : nax;
	if (n != x.t.rank) {
		blk_error(c->d, ax->loc, "transpose of %s takes %d axes, got %d", tstr(c, &x), x.t.rank, n);
		return blk_ck_poison();
	}
	bool seen[BLK_MAX_RANK] = { false };
	for (int d = 0; d < n; d++) {
		const BlkAstExpr *el = tuple ? ax->elems[d] : e->args[1 + d].value;
		if (!blk_ck_axis_arg(c, el, x.t.rank, &in->perm[d]))
			return blk_ck_poison();
		if (seen[in->perm[d]]) {
			blk_error(c->d, el->loc, "axis %d appears twice: transpose's axes are a permutation of "
			          "0 .. %d", in->perm[d], x.t.rank - 1);
			return blk_ck_poison();
		}
		seen[in->perm[d]] = true;
	}
	return permuted(&x, in);
}

/* flip(x, axis = k) (or flip(x, k)): dim k reversed; flip(x): every dim
 * (numpy's and JAX's). */
static CkType b_flip(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x;
	if (!builtin_args(c, e, CK_B_FLIP, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	const BlkAstExpr *ax = g.npos == 2 ? g.pos[1] : g.kw[0];
	if (x.t.rank == 0) {
		blk_error(c->d, e->loc, "flip needs a tile, got %s", tstr(c, &x));
		return blk_ck_poison();
	}
	int a;
	if (ax && !blk_ck_axis_arg(c, ax, x.t.rank, &a))
		return blk_ck_poison();
	in->flip = ax ? 1 << a : (1 << x.t.rank) - 1;
	for (int d = 0; d < x.t.rank; d++)
		in->perm[d] = d;
	return x;
}

/* swapaxes(x, a, b), x.swapaxes(a, b): dims a and b exchanged. */
static CkType b_swapaxes(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x;
	int a, b;
	if (!builtin_args(c, e, CK_B_SWAPAXES, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	if (x.t.rank < 2) {
		blk_error(c->d, e->loc, "swapaxes needs a tile of rank 2 or more, got %s", tstr(c, &x));
		return blk_ck_poison();
	}
	if (!blk_ck_axis_arg(c, g.pos[1], x.t.rank, &a) || !blk_ck_axis_arg(c, g.pos[2], x.t.rank, &b))
		return blk_ck_poison();
	for (int d = 0; d < x.t.rank; d++)
		in->perm[d] = d == a ? b : d == b ? a : d;
	return permuted(&x, in);
}

static CkType b_expand_dims(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x;
	const BlkSym *dims[BLK_MAX_RANK];
	if (!builtin_args(c, e, CK_B_EXPAND_DIMS, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	const BlkAstExpr *ax = g.npos == 2 ? g.pos[1] : g.kw[0];
	if (!ax) {
		blk_error(c->d, e->loc, "expand_dims needs an axis");
		return blk_ck_poison();
	}
	if (x.t.rank >= BLK_MAX_RANK) {
		blk_error(c->d, e->loc, "expand_dims of %s would exceed rank %d", tstr(c, &x), BLK_MAX_RANK);
		return blk_ck_poison();
	}
	if (!blk_ck_axis_arg(c, ax, x.t.rank + 1, &in->axis))
		return blk_ck_poison();
	for (int d = 0, s = 0; d <= x.t.rank; d++)
		dims[d] = d == in->axis ? blk_sym_const(c->a, 1) : x.t.dims[s++];
	return blk_ck_value(x.t.dtype, x.t.rank + 1, dims);
}

/* ---- joining and cutting tiles ---- */

/* The most parts `split` makes (each is an extract: IR and shared memory). */
#define CK_MAX_PARTS 64

/* concatenate's and stack's first argument: a tuple of tiles of one dtype
 * and rank (split's tuple too). */
static bool tile_tuple(Ck *c, const BlkAstExpr *e, const BlkAstExpr *arg, CkType *t)
{
	*t = blk_ck_expr(c, arg);
	if (is_poison(t))
		return false;
	if (t->kind != CK_TUPLE) {
		blk_error(c->d, arg->loc, "`%s` takes a tuple of tiles: %s((a, b), axis = k)", e->name, e->name);
		return false;
	}
	for (int i = 0; i < t->n; i++) {
		const CkType *x = &t->elems[i], *f = &t->elems[0];
		if (is_poison(x) || !need_value(c, arg, x))
			return false;
		if (x->t.rank == 0 || x->t.dtype != f->t.dtype || x->t.rank != f->t.rank || x->weak) {
			blk_error(c->d, arg->loc, "`%s` joins tiles of one dtype and rank (not scalars), got %s "
			          "and %s", e->name, tstr(c, f), tstr(c, x));
			return false;
		}
	}
	return true;
}

/* The axis of concatenate/stack/split: positional or `axis =`, default 0. */
static bool join_axis(Ck *c, const BlkAstExpr *e, const Args *g, int rank, int *axis)
{
	*axis = 0;
	if (g->npos == 2 && g->kw[0]) {
		blk_error(c->d, g->kw[0]->loc, "`%s` got the axis twice", e->name);
		return false;
	}
	const BlkAstExpr *ax = g->npos == 2 ? g->pos[1] : g->kw[0];
	return !ax || blk_ck_axis_arg(c, ax, rank, axis);
}

/* concatenate((a, b, ...), axis = k): dims equal off the axis, summed on it;
 * stack((a, b, ...), axis = k): one shape, a new axis k of the count. */
static CkType b_join(Ck *c, const BlkAstExpr *e, CkInfo *in, bool stack)
{
	Args g;
	CkType t;
	if (!builtin_args(c, e, in->builtin, &g) || !tile_tuple(c, e, g.pos[0], &t))
		return blk_ck_poison();
	const CkType *f = &t.elems[0];
	int rank = f->t.rank + stack;
	if (rank > BLK_MAX_RANK) {
		blk_error(c->d, e->loc, "`stack` of %s would exceed rank %d", tstr(c, f), BLK_MAX_RANK);
		return blk_ck_poison();
	}
	if (!join_axis(c, e, &g, rank, &in->axis))
		return blk_ck_poison();
	const BlkSym *dims[BLK_MAX_RANK], *sum = blk_sym_const(c->a, stack ? t.n : 0);
	for (int i = 0; i < t.n; i++)
		for (int d = 0; d < f->t.rank; d++) {
			if (!stack && d == in->axis) {
				sum = blk_sym_binary(c->a, BLK_SYM_ADD, sum, t.elems[i].t.dims[d]);
				continue;
			}
			if (blk_sym_equal(t.elems[i].t.dims[d], f->t.dims[d]))
				continue;
			blk_error(c->d, e->loc, stack ? "`stack` needs tiles of one shape, got %s and %s"
			          : "`concatenate` needs tiles whose dims agree off the axis, got %s and %s",
			          tstr(c, f), tstr(c, &t.elems[i]));
			return blk_ck_poison();
		}
	for (int d = 0, s = 0; d < rank; d++) /* stack: a new dim; concatenate: the axis' */
		dims[d] = d == in->axis ? sum : f->t.dims[stack ? s++ : d];
	return blk_ck_dims_ok(c, e->loc, rank, dims, true) ? blk_ck_value(f->t.dtype, rank, dims) : blk_ck_poison();
}

/* interleave(a, b): a0 b0 a1 b1 ... along the last dim (Triton's). */
static CkType b_interleave(Ck *c, const BlkAstExpr *e)
{
	CkType a, b;
	if (!two_values(c, e, CK_B_INTERLEAVE, &a, &b))
		return blk_ck_poison();
	if (a.t.rank == 0 || !blk_ck_same_type(&a, &b)) {
		blk_error(c->d, e->loc, "`interleave` needs two tiles of one type, got %s and %s", tstr(c, &a),
		          tstr(c, &b));
		return blk_ck_poison();
	}
	const BlkSym *dims[BLK_MAX_RANK];
	memcpy(dims, a.t.dims, sizeof dims);
	dims[a.t.rank - 1] = blk_sym_binary(c->a, BLK_SYM_MUL, a.t.dims[a.t.rank - 1], blk_sym_const(c->a, 2));
	return blk_ck_dims_ok(c, e->loc, a.t.rank, dims, true) ? blk_ck_value(a.t.dtype, a.t.rank, dims)
	                                                       : blk_ck_poison();
}

/* split(x, n, axis = k): n equal parts along a dim of constant extent, a
 * tuple (`let (lo, hi) = split(x, 2, axis = 1)`). */
static CkType b_split(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType x, nt;
	int64_t n, ext;
	if (!builtin_args(c, e, CK_B_SPLIT, &g) || !value_arg(c, g.pos[0], &x))
		return blk_ck_poison();
	nt = blk_ck_expr(c, g.pos[1]);
	if (!need_const_int(c, g.pos[1], &nt, "the number of parts", &n))
		return blk_ck_poison();
	if (x.t.rank == 0) {
		blk_error(c->d, e->loc, "`split` cuts a tile, got %s", tstr(c, &x));
		return blk_ck_poison();
	}
	in->axis = 0;
	if (g.kw[0] && !blk_ck_axis_arg(c, g.kw[0], x.t.rank, &in->axis))
		return blk_ck_poison();
	if (!blk_sym_is_const(x.t.dims[in->axis], &ext) || n < 1 || n > CK_MAX_PARTS || ext % n) {
		blk_error(c->d, e->loc, "`split` cuts dim %d of %s into %lld equal parts: the dim must be a "
		          "constant multiple of a count from 1 to %d", in->axis, tstr(c, &x), (long long)n,
		          CK_MAX_PARTS);
		return blk_ck_poison();
	}
	CkType t = blk_ck_poison();
	t.kind = CK_TUPLE;
	t.n = (int)n;
	t.elems = BLK_NEW_N(c->a, CkType, t.n);
	x.t.dims[in->axis] = blk_sym_const(c->a, ext / n);
	for (int i = 0; i < t.n; i++)
		t.elems[i] = x;
	return t;
}

/* An integer argument of a random builtin: i32 (weak literals count),
 * what names it in the message. */
static bool random_word(Ck *c, const BlkAstExpr *fn, const BlkAstExpr *e, const char *what, CkType *t)
{
	if (!value_arg(c, e, t))
		return false;
	if (t->t.dtype == BLK_I32)
		return true;
	blk_error(c->d, e->loc, "`%s`'s %s must be i32, got %s", fn->name, what, tstr(c, t));
	return false;
}

/* rand, randn, randint, randint4x (seed, offsets); philox (seed, c0, c1,
 * c2, c3): the seed an i32 scalar, the others i32 values broadcast
 * together.  philox and randint4x give a tuple of four i32 words. */
static CkType b_random(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	static const char *const what[] = { "offsets", "counter c0", "counter c1", "counter c2", "counter c3" };
	Args g;
	CkType s, v, acc;
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0;
	if (!builtin_args(c, e, b, &g))
		return blk_ck_poison();
	s = blk_ck_expr(c, g.pos[0]);
	if (!need_value(c, g.pos[0], &s))
		return blk_ck_poison();
	if (s.t.rank != 0 || s.t.dtype != BLK_I32) {
		blk_error(c->d, g.pos[0]->loc, "`%s`'s seed must be an i32 scalar, got %s", e->name, tstr(c, &s));
		return blk_ck_poison();
	}
	acc = blk_ck_value(BLK_I32, 0, NULL);
	for (int i = 1; i < g.npos; i++) {
		if (!random_word(c, e, g.pos[i], what[b == CK_B_PHILOX ? i : 0], &v) ||
		    !broadcast_or_report(c, e->loc, &acc, &v, &rank, dims))
			return blk_ck_poison();
		acc = blk_ck_value(BLK_I32, rank, dims);
	}
	if (b == CK_B_RAND || b == CK_B_RANDN)
		acc.t.dtype = BLK_F32;
	if (b != CK_B_PHILOX && b != CK_B_RANDINT4X)
		return acc;
	CkType t = blk_ck_poison();
	t.kind = CK_TUPLE;
	t.n = 4;
	t.elems = BLK_NEW_N(c->a, CkType, 4);
	for (int i = 0; i < 4; i++)
		t.elems[i] = acc;
	return t;
}

static CkType b_cdiv(Ck *c, const BlkAstExpr *e)
{
	Args g;
	if (!builtin_args(c, e, CK_B_CDIV, &g))
		return blk_ck_poison();
	CkType x = blk_ck_expr(c, g.pos[0]), y = blk_ck_expr(c, g.pos[1]);
	bool ok = need_i32(c, g.pos[0], &x, "cdiv's operand");
	if (!(ok & need_i32(c, g.pos[1], &y, "cdiv's operand")))
		return blk_ck_poison();
	if (!x.weak || !y.weak)
		return blk_ck_value(BLK_I32, 0, NULL);
	/* x ~/ y + (x % y != 0) in i32, as lowering computes it: cdiv(x, 0) == 0 */
	int32_t q = blk_i32_floordiv((int32_t)x.i, (int32_t)y.i);
	int32_t r = blk_i32_mod((int32_t)x.i, (int32_t)y.i);
	return ck_weak_int(blk_int_wrap(BLK_I32, (int64_t)q + (r != 0)));
}

static CkType b_program_id(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	int64_t v;
	if (!builtin_args(c, e, in->builtin, &g))
		return blk_ck_poison();
	CkType t = blk_ck_expr(c, g.pos[0]);
	if (!need_const_int(c, g.pos[0], &t, "the axis", &v))
		return blk_ck_poison();
	if (v < 0 || v >= c->k->grid_rank) {
		blk_error(c->d, g.pos[0]->loc, "%s axis %lld is out of range: the grid has rank %d",
		          e->name, (long long)v, c->k->grid_rank);
		return blk_ck_poison();
	}
	in->axis = (int)v;
	return blk_ck_value(BLK_I32, 0, NULL);
}

static CkType b_load(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	if (!builtin_args(c, e, CK_B_LOAD, &g))
		return blk_ck_poison();
	c->at_gather = true;
	CkType r = blk_ck_expr(c, g.pos[0]);
	c->at_gather = false;
	if (r.kind != CK_REF) {
		if (!is_poison(&r))
			blk_error(c->d, g.pos[0]->loc, "load needs a Ref, got %s", tstr(c, &r));
		return blk_ck_poison();
	}
	if (!readable(c, e->loc, &r))
		return blk_ck_poison();
	in->fill = ck_weak_int(0);
	if (g.kw[0] && !const_of(c, g.kw[0], r.t.dtype, &in->fill))
		return blk_ck_poison();
	return blk_ck_value(r.t.dtype, r.t.rank, r.t.dims);
}

/* The Ref of an atomic: writable, not `out` (an atomic reads what is
 * there), of a dtype the atomic takes. */
static bool atomic_ref(Ck *c, const BlkAstExpr *e, CkBuiltin b, const CkType *r)
{
	if (!blk_ck_writable(c, e->loc, r))
		return false;
	if (r->access == BLK_ACCESS_OUT) {
		bool add = b == CK_B_ATOMIC_ADD;
		blk_error(c->d, e->loc, "%s %s `%s`, which is an `out` parameter", e->name,
		          add ? "adds into" : "reads", r->root->name);
		blk_ck_declared_here(c, r->root);
		blk_note(c->d, r->root->loc, add ? "declare it `inout` and pass it zeroed (or as the sum's start)"
		                                 : "declare it `inout` and pass it with its starting values");
		return false;
	}
	BlkDType dt = r->t.dtype;
	if (b == CK_B_ATOMIC_ADD && dt == BLK_BOOL)
		blk_error(c->d, e->loc, "atomic_add does not apply to bool");
	else if (blk_dtype_is_byte(dt) || blk_dtype_is_fp8(dt))
		blk_error(c->d, e->loc, "%s needs a Ref of i32 or a float dtype, got %s (the GPU has no "
		          "8-bit atomics)", e->name, tstr(c, r));
	else if (b == CK_B_ATOMIC_CAS && dt != BLK_I32)
		blk_error(c->d, e->loc, "atomic_cas needs a Ref of i32, got %s", tstr(c, r));
	else if (b != CK_B_ATOMIC_ADD && b != CK_B_ATOMIC_CAS && dt != BLK_I32 && dt != BLK_F32)
		blk_error(c->d, e->loc, "%s needs a Ref of i32 or f32, got %s", e->name, tstr(c, r));
	else
		return true;
	return false;
}

/* atomic_cas's compare value: one scalar for every element. */
static bool cas_compare(Ck *c, const BlkAstExpr *e, const CkType *r)
{
	CkType k = blk_ck_expr(c, e);
	if (!need_value(c, e, &k))
		return false;
	if (k.t.rank == 0)
		return blk_ck_storable(c, e->loc, &k, r->t.dtype, 0, NULL);
	blk_error(c->d, e->loc, "atomic_cas compares every element with one scalar, got %s", tstr(c, &k));
	return false;
}

/* atomic_add/max/min(ref, v), atomic_cas(ref, cmp, v): no value. */
static CkType b_atomic(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	Args g;
	int n = blk_ck_builtins[b].nmax; /* the Ref, (the compare,) the value */
	if (!builtin_args(c, e, b, &g))
		return blk_ck_poison();
	c->at_gather = true;
	CkType r = blk_ck_expr(c, g.pos[0]), v;
	c->at_gather = false;
	if (r.kind != CK_REF) {
		if (!is_poison(&r))
			blk_error(c->d, g.pos[0]->loc, "%s needs a Ref, got %s", e->name, tstr(c, &r));
		return blk_ck_poison();
	}
	if (!atomic_ref(c, e, b, &r) || (n == 3 && !cas_compare(c, g.pos[1], &r)))
		return blk_ck_poison();
	v = blk_ck_expr(c, g.pos[n - 1]);
	if (!need_value(c, g.pos[n - 1], &v) ||
	    !blk_ck_storable(c, g.pos[n - 1]->loc, &v, r.t.dtype, r.t.rank, r.t.dims))
		return blk_ck_poison();
	CkType t = blk_ck_poison();
	t.kind = CK_VOID;
	return t;
}

/* ---- several GPUs ---- */

/* The param a Ref views (NULL: scratch). */
static const BlkParam *ref_root_param(Ck *c, const CkType *r)
{
	return r->root && r->root->kind == CK_BIND_PARAM ? &c->k->params[r->root->param] : NULL;
}

/* my_rank(), world(): i32 scalars. */
static CkType b_rank(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	Args g;
	if (!builtin_args(c, e, b, &g))
		return blk_ck_poison();
	return blk_ck_value(BLK_I32, 0, NULL);
}

/* A peer rank: an i32 scalar. */
static bool rank_arg(Ck *c, const BlkAstExpr *e)
{
	CkType t = blk_ck_expr(c, e);
	if (!need_value(c, e, &t))
		return false;
	if (t.t.rank == 0 && (t.weak == CK_WEAK_INT || t.t.dtype == BLK_I32))
		return true;
	blk_error(c->d, e->loc, "a rank is an i32 scalar, got %s", tstr(c, &t));
	return false;
}

/* x.on(rank): the same Ref of a symmetric param in that rank's buffer. */
static CkType b_on(Ck *c, const BlkAstExpr *e)
{
	Args g;
	if (!builtin_args(c, e, CK_B_ON, &g))
		return blk_ck_poison();
	CkType r = blk_ck_expr(c, g.pos[0]);
	if (r.kind != CK_REF) {
		if (!is_poison(&r))
			blk_error(c->d, g.pos[0]->loc, "on(rank) needs a Ref of a symmetric parameter, got %s",
			          tstr(c, &r));
		return blk_ck_poison();
	}
	const BlkParam *p = ref_root_param(c, &r);
	if (!p || !p->symmetric) {
		blk_error(c->d, e->loc, "`%s` is not symmetric, so it has no buffer on other ranks",
		          r.root ? r.root->name : "this Ref");
		if (p)
			blk_note(c->d, r.root->loc, "`%s` is declared here; declare it `%s symmetric ...` and "
			         "pass a buffer from symmetric memory", r.root->name, blk_access_name(p->access));
		return blk_ck_poison();
	}
	return rank_arg(c, g.pos[1]) ? r : blk_ck_poison();
}

/* One element of a signal param: `flags.at[i]`, `flags.on(r).at[i]`. */
static bool signal_ref(Ck *c, const BlkAstExpr *e, const BlkAstExpr *arg)
{
	CkType r = blk_ck_expr(c, arg);
	if (is_poison(&r))
		return false;
	const BlkParam *p = r.kind == CK_REF ? ref_root_param(c, &r) : NULL;
	if (!p || !p->signal) {
		blk_error(c->d, arg->loc, "%s needs one element of a `signal` parameter, got %s", e->name,
		          tstr(c, &r));
		return false;
	}
	if (r.t.rank != 0) {
		blk_error(c->d, arg->loc, "%s acts on one signal, got %s; pick it: `%s.at[i]`", e->name,
		          tstr(c, &r), r.root->name);
		return false;
	}
	return true;
}

/* Whether e reaches its Ref through `.on(...)`. */
static bool through_on(const BlkAstExpr *e)
{
	for (; e; e = e->kind == BLK_AST_CALL && e->nargs ? e->args[0].value : e->lhs)
		if (e->kind == BLK_AST_CALL && strcmp(e->name, "on") == 0)
			return true;
		else if (e->kind != BLK_AST_AT && e->kind != BLK_AST_INDEX && e->kind != BLK_AST_CALL)
			return false;
	return false;
}

/* signal_add/set/wait(sig, v), rank_barrier(sig): nothing. */
static CkType b_signal(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	Args g;
	if (!builtin_args(c, e, b, &g) || !signal_ref(c, e, g.pos[0]))
		return blk_ck_poison();
	if (b == CK_B_RANK_BARRIER && through_on(g.pos[0])) {
		blk_error(c->d, g.pos[0]->loc, "rank_barrier meets at its element on every rank: give this "
		          "rank's (`bar.at[i]`), not a peer's");
		return blk_ck_poison();
	}
	if (b != CK_B_RANK_BARRIER) {
		CkType v = blk_ck_expr(c, g.pos[1]);
		if (!need_value(c, g.pos[1], &v) || !blk_ck_storable(c, g.pos[1]->loc, &v, BLK_I32, 0, NULL))
			return blk_ck_poison();
		if (b == CK_B_SIGNAL_WAIT && v.konst && v.i < 1) {
			blk_error(c->d, g.pos[1]->loc, "signal_wait waits for a count of at least 1, got %lld",
			          (long long)v.i);
			return blk_ck_poison();
		}
	}
	CkType t = blk_ck_poison();
	t.kind = CK_VOID;
	return t;
}

/* `x.name(kw = ...)`: the reductions have a method form, numpy's; the
 * receiver is the call's first argument, the rest must be keywords
 * (numpy's x.max(1) means an axis, blk's max(x, 1) an elementwise max). */
static bool method_ok(Ck *c, const BlkAstExpr *e, CkBuiltin b)
{
	const BlkAstExpr *recv = e->args[0].value;
	if (blk_ck_foreign_qualified(c, recv, e->name, e->loc))
		return false;
	const CkBuiltinInfo *bi = &blk_ck_builtins[b];
	if (bi->flags & CK_BF_METHOD_POS)
		return true; /* numpy's positional dims or axes: b_reshape, b_transpose, b_swapaxes */
	if (!(bi->flags & CK_BF_METHOD)) {
		const char *blk = blk_ck_spelling(c, e->name);
		if (b == CK_B_NONE && blk_ck_helper(c, e->name))
			blk_error(c->d, e->loc, "`%s` is a helper, not a method; call it: `%s(x, ...)`", e->name,
			          e->name);
		else if (b != CK_B_NONE)
			blk_error(c->d, e->loc, "`.%s()` is not a method; call it: `%s(x, ...)`", e->name, e->name);
		else if (blk)
			blk_error(c->d, e->loc, "unknown method `.%s()`; blk writes `%s`", e->name, blk);
		else
			blk_error(c->d, e->loc, "unknown method `.%s()` (known: .sum, .max, .min, .argmax, .argmin, "
			          ".cumsum, .cumprod, .cummax, .cummin, .reshape, .transpose, .swapaxes, .astype)", e->name);
		return false;
	}
	for (int i = 1; i < e->nargs; i++)
		if (!e->args[i].name) {
			blk_error(c->d, e->args[i].loc, "`x.%s(...)` takes only keyword arguments: axis =, %s =",
			          e->name, bi->kw[1]);
			return false;
		}
	return true;
}

static CkType check_call(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	CkBuiltin b = in->builtin = builtin_of(e->name);
	if (e->method && !method_ok(c, e, b))
		return blk_ck_poison();
	if (b == CK_B_NONE && blk_ck_helper(c, e->name))
		return blk_ck_inline(c, e, in, blk_ck_helper(c, e->name));
	if (b == CK_B_NONE) {
		const char *blk = blk_ck_spelling(c, e->name);
		const BlkAstFn *near = blk_ck_helper_near(c, e->name);
		if (blk)
			blk_error(c->d, e->loc, "unknown function `%s`; blk writes `%s`", e->name, blk);
		else if (near)
			blk_error(c->d, e->loc, "unknown function `%s`; did you mean the helper `%s`?", e->name,
			          near->name);
		else
			blk_error(c->d, e->loc, "unknown function `%s`", e->name);
		return blk_ck_poison();
	}
	if (c->in_map && !(blk_ck_builtins[b].flags & (CK_BF_SIZE | CK_BF_MAP))) {
		blk_error(c->d, e->loc, "`%s` cannot be used in an index map", e->name);
		return blk_ck_poison();
	}
	switch (b) {
	case CK_B_ZEROS: return b_zeros(c, e, in, false);
	case CK_B_FULL: return b_zeros(c, e, in, true);
	case CK_B_IOTA: return b_iota(c, e);
	case CK_B_MAX: case CK_B_MIN: case CK_B_SUM: return b_maxmin(c, e, in, b);
	case CK_B_WHERE: return b_where(c, e, in);
	case CK_B_POW: return b_pow(c, e, in);
	case CK_B_FMA: case CK_B_CLAMP: return b_ternary(c, e, in, b);
	case CK_B_GELU: return b_gelu(c, e, in);
	case CK_B_ISNAN: case CK_B_ISINF: return b_float_class(c, e, b);
	case CK_B_CUMSUM: case CK_B_CUMPROD: case CK_B_CUMMAX: case CK_B_CUMMIN:
		return b_scan(c, e, in);
	case CK_B_ASSOCIATIVE_SCAN: return blk_ck_assoc_scan(c, e, in);
	case CK_B_RESHAPE: return b_reshape(c, e);
	case CK_B_ARGMAX: case CK_B_ARGMIN: return b_arg(c, e, in);
	case CK_B_DOT: return b_dot(c, e);
	case CK_B_TRANSPOSE: return b_transpose(c, e, in);
	case CK_B_SWAPAXES: return b_swapaxes(c, e, in);
	case CK_B_FLIP: return b_flip(c, e, in);
	case CK_B_EXPAND_DIMS: return b_expand_dims(c, e, in);
	case CK_B_CDIV: return b_cdiv(c, e);
	case CK_B_CONCATENATE: case CK_B_STACK: return b_join(c, e, in, b == CK_B_STACK);
	case CK_B_INTERLEAVE: return b_interleave(c, e);
	case CK_B_SPLIT: return b_split(c, e, in);
	case CK_B_PROGRAM_ID: case CK_B_NUM_PROGRAMS: return b_program_id(c, e, in);
	case CK_B_LOAD: return b_load(c, e, in);
	case CK_B_MY_RANK: case CK_B_WORLD: return b_rank(c, e, b);
	case CK_B_ON: return b_on(c, e);
	case CK_B_SIGNAL_ADD: case CK_B_SIGNAL_SET: case CK_B_SIGNAL_WAIT: case CK_B_RANK_BARRIER:
		return b_signal(c, e, b);
	case CK_B_RAND: case CK_B_RANDN: case CK_B_RANDINT: case CK_B_RANDINT4X: case CK_B_PHILOX:
		return b_random(c, e, b);
	case CK_B_ATOMIC_ADD: case CK_B_ATOMIC_MAX: case CK_B_ATOMIC_MIN: case CK_B_ATOMIC_CAS:
		return b_atomic(c, e, b);
	case CK_B_DS:
		blk_error(c->d, e->loc, "ds(start, size) is only allowed inside an index");
		return blk_ck_poison();
	default: return b_math(c, e, b);
	}
}

/* ---- other forms ------------------------------------------------------------------ */

static CkType check_astype(Ck *c, const BlkAstExpr *e)
{
	CkType x;
	BlkDType dt;
	bool ok = value_arg(c, e->lhs, &x);
	if (!(ok & blk_ck_dtype(c, e->rhs, &dt)))
		return blk_ck_poison();
	x.t.dtype = dt;
	return x;
}

static CkType check_tuple(Ck *c, const BlkAstExpr *e)
{
	CkType t = blk_ck_poison();
	t.kind = CK_TUPLE;
	t.n = e->nelems;
	t.elems = BLK_NEW_N(c->a, CkType, e->nelems);
	for (int i = 0; i < e->nelems; i++) {
		CkType *el = &t.elems[i];
		*el = blk_ck_expr(c, e->elems[i]);
		if (el->kind == CK_TUPLE || el->kind == CK_VOID || el->kind == CK_DTYPE) {
			blk_error(c->d, e->elems[i]->loc, "a tuple holds values or Refs, not %s",
			          tstr(c, el));
			*el = blk_ck_poison();
		}
		if (is_poison(el))
			t.kind = CK_POISON;
	}
	return t;
}

static CkType check_kind(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	CkType t;
	switch (e->kind) {
	case BLK_AST_INT:
		if (e->ival > INT32_MAX) {
			blk_error(c->d, e->loc, "integer literal %lld overflows i32 (only -%lld may be written)",
			          (long long)e->ival, (long long)e->ival);
			return blk_ck_poison();
		}
		return ck_weak_int(e->ival);
	case BLK_AST_FLOAT: return ck_weak_float(e->fval);
	case BLK_AST_INF: return ck_weak_float(__builtin_inf());
	case BLK_AST_NAN: return ck_weak_float(__builtin_nan(""));
	case BLK_AST_BOOL: return ck_bool_const(e->ival != 0);
	case BLK_AST_NAME: return check_name(c, e, in);
	case BLK_AST_DTYPE:
		t = blk_ck_poison();
		t.kind = CK_DTYPE;
		t.dtype = e->dtype;
		return t;
	case BLK_AST_UNARY: return check_unary(c, e);
	case BLK_AST_BINARY: return check_binary(c, e, in);
	case BLK_AST_CALL: return check_call(c, e, in);
	case BLK_AST_FORI: return blk_ck_fori(c, e, in);
	case BLK_AST_TUPLE: return check_tuple(c, e);
	case BLK_AST_INDEX:
	case BLK_AST_AT: return check_index(c, e, in);
	case BLK_AST_ASTYPE: return check_astype(c, e);
	case BLK_AST_TRANSPOSE:
		return value_arg(c, e->lhs, &t) ? transpose_of(c, e->loc, t, in) : blk_ck_poison();
	case BLK_AST_CLOSURE:
		blk_error(c->d, e->loc, "a closure `|a, b| ...` is only the combine of `associative_scan`; "
		          "name a reused function with `fn`");
		return blk_ck_poison();
	default:
		if (blk_ck_foreign_qualified(c, e->lhs, e->name, e->loc))
			return blk_ck_poison();
		t = blk_ck_expr(c, e->lhs);
		if (strcmp(e->name, "dtype") == 0 && (t.kind == CK_VALUE || t.kind == CK_REF)) {
			BlkDType dt = t.t.dtype; /* `x.astype(o_ref.dtype)`: Pallas's */
			t = blk_ck_poison();
			t.kind = CK_DTYPE;
			t.dtype = dt;
			return t;
		}
		if (is_poison(&t))
			return t;
		if (strcmp(e->name, "shape") == 0)
			blk_error(c->d, e->loc, "blk has no `.shape`: a dim is a name of the header (a launch "
			          "size as `N`, a block as `BM`), usable as a value");
		else
			blk_error(c->d, e->loc, "unknown attribute `.%s` (known: .at, .astype, .T, .dtype)",
			          e->name);
		return blk_ck_poison();
	}
}

/* Inside associative_scan's combine only scalars are computed (it runs
 * once per element, in registers on the GPU). */
static CkType combine_only(Ck *c, const BlkAstExpr *e, CkType t)
{
	const char *why = e->kind == BLK_AST_FORI ? "cannot run a loop"
	                : t.kind == CK_REF ? "cannot use Refs"
	                : t.kind == CK_VALUE && t.t.rank > 0 ? "computes on scalars" : NULL;
	if (!why)
		return t;
	if (t.kind == CK_VALUE)
		blk_error(c->d, e->loc, "a combine function %s, but this is %s", why, tstr(c, &t));
	else
		blk_error(c->d, e->loc, "a combine function %s", why);
	return blk_ck_poison();
}

CkType blk_ck_expr(Ck *c, const BlkAstExpr *e)
{
	CkInfo *in = blk_ck_note(c, e);
	in->type = check_kind(c, e, in);
	if (c->in_combine)
		in->type = combine_only(c, e, in->type);
	return in->type;
}
