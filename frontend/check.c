/* check.c - the checker: names, compile-time parameters, signatures,
 * statements.  Contract: AST from blk_parse -> BlkCkFile (check.h) whose
 * side table types every expression; the AST is left untouched.
 *
 * A kernel is checked in the order its meaning builds up:
 *   1. compile-time parameters, each default in the scope of the earlier
 *      ones, then the -D overrides (parsed as text of the default's kind);
 *   2. parameter dtypes and shapes: a name that is not a compile-time
 *      parameter is a launch size, introduced at its first appearance;
 *   3. block dims, then the grid (sizes must already be known);
 *   4. index maps, in a scope of the sizes, parameters and map arguments;
 *   5. the body, with one Ref binding per parameter.
 * Scopes are one chain of bindings (BlkCkBind.up); leaving a scope restores
 * the chain's head, so shadowing is the natural lookup order.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/check_impl.h"

/* ---- the side table ---------------------------------------------------------- */

CkInfo *blk_ck_info(const BlkPtrMap *m, const void *node)
{
	return blk_pmap_get(m, node);
}

/* The node's notes, created empty on first use (blk_ck_info only reads them).  A node checked twice (it
 * never is today) would simply be re-noted. */
CkInfo *blk_ck_note(Ck *c, const void *node)
{
	CkInfo *in = blk_ck_info(c->map, node);
	if (in)
		return in;
	in = BLK_NEW(c->a, CkInfo);
	in->type = blk_ck_poison();
	blk_pmap_put(c->a, c->map, node, in);
	return in;
}

/* ---- scopes ------------------------------------------------------------------- */

BlkCkBind *blk_ck_lookup(Ck *c, const char *name)
{
	for (BlkCkBind *b = c->scope; b; b = b->up)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

BlkCkBind *blk_ck_bind(Ck *c, CkBindKind kind, const char *name, BlkLoc loc, CkType type)
{
	BlkCkBind *b = BLK_NEW(c->a, BlkCkBind);
	b->kind = kind;
	b->name = name;
	b->loc = loc;
	b->type = type;
	b->up = c->scope;
	c->scope = b;
	return b;
}

void blk_ck_declared_here(Ck *c, const BlkCkBind *b)
{
	blk_note(c->d, b->loc, "`%s` is declared here", b->name);
}

/* ---- statements -------------------------------------------------------------- */

static void check_stmts(Ck *c, const BlkAstBlock *blk);

void blk_ck_block(Ck *c, const BlkAstBlock *blk)
{
	BlkCkBind *saved = c->scope;
	check_stmts(c, blk);
	c->scope = saved;
}

CkType blk_ck_body(Ck *c, const BlkAstBlock *blk)
{
	BlkCkBind *saved = c->scope;
	CkType t = blk_ck_poison();
	t.kind = CK_VOID;
	check_stmts(c, blk);
	if (blk->result && !blk_diag_saturated(c->d))
		t = blk_ck_expr(c, blk->result);
	else if (blk->result)
		t = blk_ck_poison();
	c->scope = saved;
	return t;
}

/* `let x = v;` or `let (a, b) = v;` */
static void check_let(Ck *c, const BlkAstStmt *s)
{
	CkType t = blk_ck_expr(c, s->value);
	CkInfo *in = blk_ck_note(c, s);
	const CkType *el = &t;
	int n = 1;
	if (s->tuple_pattern && t.kind == CK_TUPLE && t.n == s->nnames) {
		el = t.elems;
		n = t.n;
	} else if (s->tuple_pattern && t.kind != CK_POISON) {
		blk_error(c->d, s->value->loc, "cannot unpack %s into %d names",
		          blk_ck_type_str(c->a, &t), s->nnames);
		t = blk_ck_poison();
	} else if (t.kind == CK_TUPLE || t.kind == CK_VOID || t.kind == CK_DTYPE) {
		blk_error(c->d, s->value->loc, t.kind == CK_TUPLE
		          ? "a tuple must be unpacked: let (a, b) = ..."
		          : "this expression has no value to bind");
		t = blk_ck_poison();
	}
	in->nbinds = s->nnames;
	in->binds = BLK_NEW_N(c->a, BlkCkBind *, s->nnames);
	for (int i = 0; i < s->nnames; i++)
		in->binds[i] = blk_ck_bind(c, CK_BIND_VALUE, s->names[i], s->name_locs[i],
		                       n == s->nnames ? el[i] : blk_ck_poison());
}

bool blk_ck_not_signal(Ck *c, BlkLoc loc, const CkType *r)
{
	if (!r->root || r->root->kind != CK_BIND_PARAM || !c->k->params[r->root->param].signal)
		return true;
	blk_error(c->d, loc, "`%s` is a signal: only signal_add, signal_set, signal_wait and "
	          "rank_barrier touch it (`signal_wait(%s.at[i], n)`)", r->root->name, r->root->name);
	return false;
}

bool blk_ck_writable(Ck *c, BlkLoc loc, const CkType *r)
{
	if (!blk_ck_not_signal(c, loc, r))
		return false;
	if (r->root && r->root->kind == CK_BIND_PARAM)
		c->k->written[r->root->param] = true;
	if (r->access != BLK_ACCESS_IN)
		return true;
	blk_error(c->d, loc, "cannot write to `%s`: it is %s parameter", r->root->name,
	          r->root->kind == CK_BIND_PARAM && c->k->params[r->root->param].prefetch
	          ? "a `prefetch`" : "an `in`");
	blk_ck_declared_here(c, r->root);
	return false;
}

/* `r[idx] = v;`  The target and its indices are checked before the value,
 * so errors come in source order. */
static void check_store(Ck *c, const BlkAstStmt *s)
{
	CkType r = blk_ck_expr(c, s->target), v;
	CkInfo *in = blk_ck_note(c, s);
	const BlkSym *dims[BLK_MAX_RANK];
	int rank;
	if (r.kind != CK_REF && r.kind != CK_POISON)
		blk_error(c->d, s->target->loc, "only Refs can be stored into, but this is %s",
		          blk_ck_type_str(c->a, &r));
	c->gather_ok = true; /* a scatter: x[idx] = v */
	bool ok = r.kind == CK_REF && blk_ck_writable(c, s->loc, &r) &&
	          blk_ck_access(c, s->loc, s->idx, s->nidx, &r, false, &in->acc, &rank, dims);
	c->gather_ok = false;
	v = blk_ck_expr(c, s->value);
	if (r.kind == CK_REF && r.root && r.root->kind == CK_BIND_PARAM)
		c->k->stored[r.root->param] = true; /* after the value: `y[...] = y[...]` reads first */
	if (!ok)
		return;
	if (v.kind == CK_VALUE)
		blk_ck_storable(c, s->value->loc, &v, r.t.dtype, rank, dims);
	else if (v.kind != CK_POISON)
		blk_error(c->d, s->value->loc, "cannot store %s", blk_ck_type_str(c->a, &v));
}

static void check_when(Ck *c, const BlkAstStmt *s)
{
	CkType t = blk_ck_expr(c, s->value);
	if (t.kind != CK_POISON && (t.kind != CK_VALUE || t.t.dtype != BLK_BOOL || t.t.rank != 0))
		blk_error(c->d, s->value->loc, "the condition of `when` must be a bool scalar, got %s",
		          blk_ck_type_str(c->a, &t));
	blk_ck_block(c, s->then);
	if (s->els)
		blk_ck_block(c, s->els);
}

/* A kernel param or a scoped scratch: at most BLK_MAX_RANK dims. */
static bool rank_ok(Ck *c, const BlkAstParam *p)
{
	if (p->nshape <= BLK_MAX_RANK)
		return true;
	blk_error(c->d, p->loc, "`%s` has rank %d; the limit is %d", p->name, p->nshape, BLK_MAX_RANK);
	return false;
}

/* Scratch lives in shared memory, sized at compile time: constant dims of
 * a sensible tile (kernel scratch params and scoped scratch alike). */
static bool scratch_dims_ok(Ck *c, const BlkAstParam *p, const BlkSym *const *dims)
{
	int64_t v;
	for (int i = 0; i < p->nshape; i++)
		if (!blk_sym_is_const(dims[i], &v)) {
			blk_error(c->d, p->shape[i]->loc, "scratch `%s` must have a constant shape", p->name);
			return false;
		}
	return blk_ck_dims_ok(c, p->loc, p->nshape, dims, true);
}

/* Scratch p (dtype dt, constant dims) added to what the program holds in
 * shared memory: more than a CTA can have is refused here, for the
 * interpreter and the GPU alike. */
static bool scratch_fits(Ck *c, const BlkAstParam *p, BlkDType dt, const BlkSym *const *dims)
{
	int64_t n = (int64_t)blk_dtype_size(dt), v;
	for (int i = 0; i < p->nshape; i++)
		n *= blk_sym_is_const(dims[i], &v) ? v : 0;
	c->scratch_bytes += n;
	if (c->scratch_bytes <= BLK_MAX_SMEM_BYTES)
		return true;
	blk_error(c->d, p->loc, "scratch `%s` (%lld bytes) brings the program's scratch to %lld bytes "
	          "of shared memory; the most a program can have is %d", p->name, (long long)n,
	          (long long)c->scratch_bytes, BLK_MAX_SMEM_BYTES);
	return false;
}

/* A scoped scratch Ref's type.  The binding is its own root (for messages
 * about it). */
static CkType scratch_type(Ck *c, const BlkAstParam *p, BlkCkBind *self)
{
	const BlkSym *dims[BLK_MAX_RANK];
	BlkDType dt;
	bool ok = blk_ck_dtype(c, p->dtype, &dt);
	if (!rank_ok(c, p))
		return blk_ck_poison();
	for (int i = 0; i < p->nshape; i++)
		ok &= (dims[i] = blk_ck_sym(c, p->shape[i])) != NULL;
	if (!ok || !scratch_dims_ok(c, p, dims) || !scratch_fits(c, p, dt, dims))
		return blk_ck_poison();
	return blk_ck_ref(dt, p->nshape, dims, BLK_SPACE_SHARED, BLK_ACCESS_SCRATCH, self);
}

static void check_scoped(Ck *c, const BlkAstStmt *s)
{
	BlkCkBind *saved = c->scope;
	int64_t held = c->scratch_bytes; /* the scoped scratch lives for the block */
	CkInfo *in = blk_ck_note(c, s);
	in->nbinds = s->nscratch;
	in->binds = BLK_NEW_N(c->a, BlkCkBind *, s->nscratch);
	for (int i = 0; i < s->nscratch; i++) {
		const BlkAstParam *p = &s->scratch[i];
		BlkCkBind *b = BLK_NEW(c->a, BlkCkBind);
		b->type = scratch_type(c, p, b);
		b->kind = CK_BIND_VALUE;
		b->name = p->name;
		b->loc = p->loc;
		b->up = c->scope;
		c->scope = in->binds[i] = b;
	}
	check_stmts(c, s->then);
	c->scope = saved;
	c->scratch_bytes = held;
}

static void check_print(Ck *c, const BlkAstStmt *s)
{
	for (int i = 0; i < s->nargs; i++) {
		CkType t = blk_ck_expr(c, s->args[i]);
		if (t.kind != CK_VALUE && t.kind != CK_POISON) {
			blk_error(c->d, s->args[i]->loc, "print takes values, got %s",
			          blk_ck_type_str(c->a, &t));
		} else if (t.kind == CK_VALUE && t.t.rank > 0) {
			/* On the GPU one thread prints per program, and a tile is
			 * spread over all of them. */
			blk_error(c->d, s->args[i]->loc, "print takes scalars, got %s",
			          blk_ck_type_str(c->a, &t));
			blk_note(c->d, s->args[i]->loc, "reduce the tile first, e.g. max(x) or sum(x)");
		}
	}
}

/* `e;` is evaluated for its effect; a dtype (`T;`, `f32;`) has none and no
 * value to lower. */
static void check_expr_stmt(Ck *c, const BlkAstStmt *s)
{
	CkType t = blk_ck_expr(c, s->value);
	if (t.kind == CK_DTYPE)
		blk_error(c->d, s->value->loc, "expected a value, got %s", blk_ck_type_str(c->a, &t));
}

static void check_stmt(Ck *c, const BlkAstStmt *s)
{
	if (c->in_combine && s->kind != BLK_AST_LET && s->kind != BLK_AST_EXPR) {
		blk_error(c->d, s->loc, "a combine function only computes its value: `%s` is not "
		          "allowed in it (only `let`)", blk_ast_stmt_kind_name(s->kind));
		return;
	}
	switch (s->kind) {
	case BLK_AST_LET: check_let(c, s); break;
	case BLK_AST_STORE: check_store(c, s); break;
	case BLK_AST_WHEN: check_when(c, s); break;
	case BLK_AST_SCOPED: check_scoped(c, s); break;
	case BLK_AST_PRINT: check_print(c, s); break;
	default: check_expr_stmt(c, s); break;
	}
}

static void check_stmts(Ck *c, const BlkAstBlock *blk)
{
	for (int i = 0; i < blk->nstmts && !blk_diag_saturated(c->d); i++)
		check_stmt(c, blk->stmts[i]);
}

/* ---- fori_loop ---------------------------------------------------------------- */

typedef struct Fori {
	const BlkAstExpr *lo, *hi, *init, *unroll;
	int n;                /* carries */
	const BlkAstExpr **inits;
	CkType *types;
} Fori;

static bool fori_args(Ck *c, const BlkAstExpr *e, Fori *f)
{
	const BlkAstExpr *pos[3] = { NULL, NULL, NULL };
	int npos = 0;
	bool ok = true;
	for (int i = 0; i < e->nargs; i++) {
		const BlkAstArg *g = &e->args[i];
		if (g->name && strcmp(g->name, "unroll") == 0)
			f->unroll = g->value;
		else if (g->name) {
			blk_error(c->d, g->loc, "`fori_loop` has no argument named `%s`", g->name);
			ok = false;
		} else if (npos < 3)
			pos[npos++] = g->value;
		else
			npos++;
	}
	if (npos < 2 || npos > 3) {
		blk_error(c->d, e->loc, "`fori_loop` takes (lo, hi) or (lo, hi, init), got %d arguments", npos);
		return false;
	}
	f->lo = pos[0];
	f->hi = pos[1];
	f->init = pos[2];
	return ok;
}

static bool bound_ok(Ck *c, const BlkAstExpr *e, bool unroll, int64_t *v)
{
	CkType t = blk_ck_expr(c, e);
	if (t.kind == CK_POISON)
		return false;
	if (t.kind != CK_VALUE || t.t.rank != 0 || t.t.dtype != BLK_I32) {
		blk_error(c->d, e->loc, "a loop bound must be an i32 scalar, got %s", blk_ck_type_str(c->a, &t));
		return false;
	}
	if (unroll && !(t.konst && t.weak)) {
		blk_error(c->d, e->loc, "unroll=true needs constant loop bounds");
		return false;
	}
	*v = t.i;
	return true;
}

/* The carries' initial values and types (weak literals made strong). */
static bool fori_inits(Ck *c, Fori *f)
{
	bool ok = true;
	if (!f->init)
		return true;
	bool tuple = f->init->kind == BLK_AST_TUPLE;
	f->n = tuple ? f->init->nelems : 1;
	f->inits = tuple ? (const BlkAstExpr **)f->init->elems : &f->init;
	f->types = BLK_NEW_N(c->a, CkType, f->n);
	blk_ck_expr(c, f->init);
	for (int i = 0; i < f->n; i++) {
		CkInfo *in = blk_ck_info(c->map, f->inits[i]);
		CkType t = blk_ck_strong(in->type);
		t.konst = false;
		if (t.kind != CK_VALUE && t.kind != CK_POISON)
			blk_error(c->d, f->inits[i]->loc, "a loop carry must be a value, got %s",
			          blk_ck_type_str(c->a, &t));
		ok &= t.kind == CK_VALUE;
		f->types[i] = t;
	}
	return ok;
}

static bool fori_pattern(Ck *c, const BlkAstExpr *e, const Fori *f)
{
	int names = e->carry == BLK_AST_CARRY_NONE ? 0 : e->ncarries;
	bool tuple_init = f->init && f->init->kind == BLK_AST_TUPLE;
	if (names == f->n && (e->carry != BLK_AST_CARRY_ONE || !tuple_init))
		return true;
	if (e->carry == BLK_AST_CARRY_ONE && tuple_init)
		blk_error(c->d, e->carry_locs[0], "the loop carries %d values; name them as a tuple: "
		          "|%s, (a, b, ...)|", f->n, e->ivar);
	else
		blk_error(c->d, names ? e->carry_locs[0] : e->ivar_loc,
		          "the carry pattern names %d value%s but the loop's initial value has %d",
		          names, names == 1 ? "" : "s", f->n);
	return false;
}

/* The body's result against carry i. */
static void fori_match(Ck *c, const Fori *f, const BlkAstExpr *e, const BlkAstExpr *res,
                       const CkType *t, int i)
{
	const CkType *want = &f->types[i];
	bool weak_ok = t->weak && want->t.rank == 0 && blk_ck_converts(t, want->t.dtype);
	if (t->kind == CK_POISON || want->kind == CK_POISON || weak_ok)
		return;
	if (t->kind == CK_VALUE && !t->weak && blk_ck_same_type(t, want))
		return;
	blk_error(c->d, res->loc, "the loop body yields %s, but the carry `%s` has type %s",
	          blk_ck_type_str(c->a, t), e->carries[i], blk_ck_type_str(c->a, want));
	blk_note(c->d, f->inits[i]->loc, "the carry's initial value is here");
}

static void fori_result(Ck *c, const BlkAstExpr *e, const Fori *f)
{
	const BlkAstExpr *res = e->body->result;
	if (!res) {
		if (f->n)
			blk_error(c->d, e->body->loc, "the loop body must end with the carry's next value");
		return;
	}
	CkType t = blk_ck_expr(c, res);
	if (f->n == 0) {
		if (t.kind != CK_VOID && t.kind != CK_POISON)
			blk_error(c->d, res->loc, "the loop has no carry, but its body ends with a value");
	} else if (f->n == 1) {
		fori_match(c, f, e, res, &t, 0);
	} else if (t.kind == CK_TUPLE && t.n == f->n) {
		for (int i = 0; i < f->n; i++)
			fori_match(c, f, e, res->kind == BLK_AST_TUPLE ? res->elems[i] : res, &t.elems[i], i);
	} else if (t.kind != CK_POISON) {
		blk_error(c->d, res->loc, "the loop body yields %s, but the loop carries %d values",
		          blk_ck_type_str(c->a, &t), f->n);
	}
}

static CkType fori_type(Ck *c, const Fori *f)
{
	CkType t = blk_ck_poison();
	if (f->n == 1)
		return f->types[0];
	t.kind = f->n ? CK_TUPLE : CK_VOID;
	t.n = f->n;
	t.elems = BLK_NEW_N(c->a, CkType, f->n ? f->n : 1);
	for (int i = 0; i < f->n; i++)
		t.elems[i] = f->types[i];
	return t;
}

/* An unrolled loop of n iterations multiplies the copies of its body,
 * nested ones too: more than BLK_MAX_UNROLL copies is an error. */
static bool unroll_ok(Ck *c, const BlkAstExpr *e, int64_t n)
{
	int64_t outer = c->copies ? c->copies : 1;
	if (n <= 0)
		return true;
	if (n <= BLK_MAX_UNROLL && outer * n <= BLK_MAX_UNROLL) {
		c->copies = outer * n;
		return true;
	}
	if (outer > 1)
		blk_error(c->d, e->loc, "unrolling %lld iterations inside %lld unrolled copies makes "
		          "%lld copies of the body; the limit is %d", (long long)n, (long long)outer,
		          (long long)(n * outer), BLK_MAX_UNROLL);
	else
		blk_error(c->d, e->loc, "unroll=true over %lld iterations; the limit is %d "
		          "(use a loop without unroll)", (long long)n, BLK_MAX_UNROLL);
	return false;
}

CkType blk_ck_fori(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Fori f;
	memset(&f, 0, sizeof f);
	bool ok = fori_args(c, e, &f);
	if (ok && f.unroll) {
		CkType u = blk_ck_expr(c, f.unroll);
		in->unroll = u.kind == CK_VALUE && u.konst && u.t.dtype == BLK_BOOL && u.i;
		if (u.kind != CK_POISON && !(u.kind == CK_VALUE && u.konst && u.t.dtype == BLK_BOOL && !u.weak))
			blk_error(c->d, f.unroll->loc, "unroll must be `true` or `false`"), ok = false;
	}
	if (ok) {
		ok &= bound_ok(c, f.lo, in->unroll, &in->lo);
		ok &= bound_ok(c, f.hi, in->unroll, &in->hi);
		ok &= fori_inits(c, &f);
		ok = fori_pattern(c, e, &f) && ok;
	}
	int64_t copies = c->copies;
	if (ok && in->unroll && !unroll_ok(c, e, in->hi - in->lo))
		ok = false, in->unroll = false;
	BlkCkBind *saved = c->scope;
	in->ivar = blk_ck_bind(c, CK_BIND_VALUE, e->ivar, e->ivar_loc, blk_ck_value(BLK_I32, 0, NULL));
	in->nbinds = e->carry == BLK_AST_CARRY_NONE ? 0 : e->ncarries;
	in->binds = BLK_NEW_N(c->a, BlkCkBind *, in->nbinds + 1);
	for (int i = 0; i < in->nbinds; i++)
		in->binds[i] = blk_ck_bind(c, CK_BIND_VALUE, e->carries[i], e->carry_locs[i],
		                       ok ? f.types[i] : blk_ck_poison());
	check_stmts(c, e->body);
	if (ok)
		fori_result(c, e, &f);
	else if (e->body->result)
		blk_ck_expr(c, e->body->result);
	c->scope = saved;
	c->copies = copies;
	return ok ? fori_type(c, &f) : blk_ck_poison();
}

/* ---- compile-time parameters ----------------------------------------------------- */

static const char *const cparam_kind_names[] = { "an int", "a float", "a bool", "a dtype" };

/* Parses -D text as a value of kind k into cp; false if it is not one. */
static bool parse_define(const char *text, BlkCParamKind k, BlkCParam *cp)
{
	char *end;
	errno = 0;
	switch (k) {
	case BLK_CPARAM_INT: {
		long long v = strtoll(text, &end, 10);
		cp->i = v;
		return *text && !*end && !errno && v >= INT32_MIN && v <= INT32_MAX;
	}
	case BLK_CPARAM_FLOAT:
		cp->f = strtod(text, &end);
		return *text && !*end && !errno;
	case BLK_CPARAM_BOOL:
		cp->i = strcmp(text, "true") == 0;
		return cp->i || strcmp(text, "false") == 0;
	default:
		return blk_dtype_from_name(text, &cp->dtype);
	}
}

static CkType cparam_type(const BlkCParam *cp)
{
	CkType t = blk_ck_value(BLK_I32, 0, NULL);
	t.konst = true;
	switch (cp->kind) {
	case BLK_CPARAM_INT: t.weak = CK_WEAK_INT; t.i = cp->i; t.f = (double)cp->i; break;
	case BLK_CPARAM_FLOAT: t.weak = CK_WEAK_FLOAT; t.t.dtype = BLK_F32; t.f = cp->f; break;
	case BLK_CPARAM_BOOL: t.t.dtype = BLK_BOOL; t.i = cp->i; break;
	default: t = blk_ck_poison(); t.kind = CK_DTYPE; t.dtype = cp->dtype; break;
	}
	return t;
}

/* The value an `auto` parameter holds until the runtime chooses: the
 * compiler's own defaults for the two it knows, else a common block size. */
static int64_t auto_standin(const char *name)
{
	return strcmp(name, "num_warps") == 0 ? 4 : strcmp(name, "num_stages") == 0 ? 2 : 64;
}

static void make_auto(BlkCParam *cp)
{
	cp->kind = BLK_CPARAM_INT;
	cp->is_auto = true;
	cp->i = auto_standin(cp->name);
	cp->f = (double)cp->i;
}

/* The default's kind and value; false (reported) if it is not a constant. */
static bool cparam_default(Ck *c, const BlkAstCParam *ap, BlkCParam *cp)
{
	if (ap->is_auto) {
		make_auto(cp);
		return true;
	}
	CkType t = blk_ck_expr(c, ap->value);
	if (t.kind == CK_DTYPE) {
		cp->kind = BLK_CPARAM_DTYPE;
		cp->dtype = t.dtype;
		return true;
	}
	if (t.kind == CK_VALUE && t.konst) {
		cp->kind = t.weak == CK_WEAK_INT ? BLK_CPARAM_INT
		         : t.weak == CK_WEAK_FLOAT ? BLK_CPARAM_FLOAT : BLK_CPARAM_BOOL;
		cp->i = t.i;
		cp->f = t.f;
		return true;
	}
	if (t.kind != CK_POISON)
		blk_error(c->d, ap->value->loc, "the default of `%s` must be a constant: an int, a float, "
		          "true, false or a dtype", ap->name);
	return false;
}

static void apply_define(Ck *c, const BlkAstCParam *ap, BlkCParam *cp, const BlkDefine *def)
{
	BlkCParam v = *cp;
	BlkLoc none = { 0 };
	if (strcmp(def->value, "auto") == 0 && cp->kind == BLK_CPARAM_INT) {
		make_auto(cp);
		return;
	}
	if (strcmp(def->value, "auto") == 0) {
		blk_error(c->d, none, "-D %s=auto: only an int parameter can be auto, and `%s` is %s "
		          "parameter", def->name, def->name, cparam_kind_names[cp->kind]);
		blk_note(c->d, ap->loc, "`%s` is declared here", ap->name);
		return;
	}
	v.is_auto = false;
	bool ok = parse_define(def->value, cp->kind, &v);
	if (!ok && cp->kind == BLK_CPARAM_FLOAT) /* an int where a float is wanted */
		ok = parse_define(def->value, BLK_CPARAM_INT, &v) && (v.f = (double)v.i, true);
	if (ok) {
		*cp = v;
		return;
	}
	blk_error(c->d, none, "-D %s=%s: `%s` is %s parameter, and `%s` is not %s", def->name,
	          def->value, def->name, cparam_kind_names[cp->kind], def->value,
	          cparam_kind_names[cp->kind]);
	blk_note(c->d, ap->loc, "`%s` is declared here", ap->name);
}

static void reserved_cparam(Ck *c, const BlkAstCParam *ap, const BlkCParam *cp)
{
	bool warps = strcmp(cp->name, "num_warps") == 0, stages = strcmp(cp->name, "num_stages") == 0;
	if (!warps && !stages)
		return;
	int64_t v = cp->i;
	bool ok = cp->kind == BLK_CPARAM_INT &&
	          (warps ? (v == 1 || v == 2 || v == 4 || v == 8 || v == 16) : v >= 1);
	if (!ok)
		blk_error(c->d, ap->loc, warps ? "num_warps must be 1, 2, 4, 8 or 16"
		                               : "num_stages must be an int >= 1");
	else if (warps)
		c->k->num_warps = (int)v;
	else
		c->k->num_stages = (int)v;
}

static void check_cparams(Ck *c, const BlkAstKernel *ak, const BlkDefine *defs, int ndefs,
                          bool *used)
{
	CkKernel *k = c->k;
	k->ncparams = ak->ncparams;
	k->cparams = BLK_NEW_N(c->a, BlkCParam, ak->ncparams + 1);
	k->num_warps = 4;
	k->num_stages = 2;
	for (int i = 0; i < ak->ncparams; i++) {
		const BlkAstCParam *ap = &ak->cparams[i];
		BlkCParam *cp = &k->cparams[i];
		BlkCkBind *dup = blk_ck_lookup(c, ap->name);
		cp->name = ap->name;
		if (dup) {
			blk_error(c->d, ap->loc, "compile-time parameter `%s` is declared twice", ap->name);
			blk_ck_declared_here(c, dup);
		}
		bool ok = cparam_default(c, ap, cp);
		for (int j = ndefs - 1; j >= 0; j--) {
			if (strcmp(defs[j].name, ap->name) != 0)
				continue;
			used[j] = true;
			if (ok)
				apply_define(c, ap, cp, &defs[j]);
			break;
		}
		reserved_cparam(c, ap, cp);
		BlkCkBind *b = blk_ck_bind(c, CK_BIND_CPARAM, ap->name, ap->loc, ok ? cparam_type(cp) : blk_ck_poison());
		b->cp = cp;
	}
}

/* An `auto` parameter the arrays' shapes use: the arrays fix its value,
 * so there is nothing to choose (runtime/auto.c chooses the others). */
static void check_autos(Ck *c, const BlkAstKernel *ak)
{
	for (int i = 0; i < c->k->ncparams; i++) {
		const BlkCParam *cp = &c->k->cparams[i];
		if (cp->is_auto && (cp->uses & BLK_CPARAM_IN_SHAPE))
			blk_error(c->d, ak->cparams[i].loc, "`%s` is auto, but an array parameter's shape "
			          "uses it: its value comes from the arrays; give it one (`%s = 64`) or "
			          "leave it out of the shape", cp->name, cp->name);
	}
}

/* ---- parameters and grid ------------------------------------------------------------ */

static bool param_shape(Ck *c, const BlkAstParam *p, BlkParam *P)
{
	bool ok = true;
	if (p->access == BLK_AST_SIGNAL)
		P->dtype = BLK_I32;
	else
		ok = blk_ck_dtype(c, p->dtype, &P->dtype);
	if (!rank_ok(c, p))
		return false;
	P->rank = p->nshape;
	c->new_sizes = p->access != BLK_AST_SCRATCH;
	for (int i = 0; i < p->nshape; i++)
		ok &= (P->shape[i] = blk_ck_sym(c, p->shape[i])) != NULL;
	c->new_sizes = false;
	return ok && blk_ck_dims_ok(c, p->loc, P->rank, P->shape, false);
}

static bool block_dim(Ck *c, const BlkAstParam *p, int d, BlkParam *P)
{
	int64_t v;
	if (!p->block[d]) {
		P->squeezed[d] = true;
		P->block[d] = blk_sym_const(c->a, 1);
		return true;
	}
	if (!(P->block[d] = blk_ck_sym(c, p->block[d])))
		return false;
	if (blk_sym_is_const(P->block[d], &v) && v <= 0) {
		blk_error(c->d, p->block_locs[d], "a block dim must be positive, got %lld", (long long)v);
		return false;
	}
	return blk_ck_dims_ok(c, p->block_locs[d], 1, &P->block[d], false);
}

static bool param_block(Ck *c, const BlkAstParam *p, BlkParam *P)
{
	bool ok = true;
	if (p->symmetric && p->access == BLK_AST_SCRATCH) {
		blk_error(c->d, p->access_loc, "scratch `%s` is private to a program; only an array "
		          "parameter can be symmetric", p->name);
		return false;
	}
	if (p->symmetric && p->access == BLK_AST_PREFETCH) {
		blk_error(c->d, p->access_loc, "prefetch array `%s` cannot be symmetric; pass it as "
		          "`in symmetric i32[...]` to read a peer's copy", p->name);
		return false;
	}
	if (p->access == BLK_AST_SCRATCH) {
		memcpy(P->block, P->shape, sizeof P->block);
		if (!scratch_dims_ok(c, p, P->shape) || !scratch_fits(c, p, P->dtype, P->shape))
			return false;
		if (p->has_block)
			blk_error(c->d, p->block_loc, "scratch `%s` cannot have a block spec", p->name);
		return !p->has_block;
	}
	if (p->access == BLK_AST_PREFETCH) {
		memcpy(P->block, P->shape, sizeof P->block);
		if (p->has_block)
			blk_error(c->d, p->block_loc, "prefetch array `%s` is whole in every program; it "
			          "takes no block spec", p->name);
		if (P->dtype != BLK_I32)
			blk_error(c->d, p->dtype->loc, "a prefetch array holds i32 indices, not %s",
			          blk_dtype_name(P->dtype));
		return !p->has_block && P->dtype == BLK_I32;
	}
	if (p->access == BLK_AST_SIGNAL) {
		memcpy(P->block, P->shape, sizeof P->block);
		if (p->has_block)
			blk_error(c->d, p->block_loc, "signal `%s` is whole in every program; it takes no "
			          "block spec (index its elements: `%s.at[i]`)", p->name, p->name);
		return !p->has_block;
	}
	if (p->has_block && p->nblock != P->rank) {
		blk_error(c->d, p->block_loc, "the block has %d dim%s but `%s` has rank %d", p->nblock,
		          p->nblock == 1 ? "" : "s", p->name, P->rank);
		return false;
	}
	for (int d = 0; d < P->rank; d++) {
		if (p->has_block)
			ok &= block_dim(c, p, d, P);
		else
			P->block[d] = P->shape[d];
	}
	return ok;
}

static void check_grid(Ck *c, const BlkAstKernel *ak)
{
	CkKernel *k = c->k;
	if (ak->ngrid > BLK_MAX_GRID) {
		blk_error(c->d, ak->grid_loc, "a grid has at most %d axes, this one has %d", BLK_MAX_GRID,
		          ak->ngrid);
		k->grid_bad = true; /* no index-map arity errors against a grid that is not there */
		return;
	}
	k->grid_rank = ak->ngrid;
	for (int i = 0; i < ak->ngrid; i++) {
		c->in_grid = true;
		k->grid[i] = blk_ck_sym(c, ak->grid[i].extent);
		c->in_grid = false;
		k->grid_seq[i] = ak->grid[i].seq;
		if (!k->grid[i])
			k->grid[i] = blk_sym_const(c->a, 1);
	}
}

/* `index (i, j) -> (e0, e1)`: arity = grid rank, results = array rank. */
static void check_index_map(Ck *c, const BlkAstParam *p, int pi)
{
	CkKernel *k = c->k;
	BlkCkBind *saved = c->scope;
	if (!p->has_index)
		return;
	if (p->nindex_params != k->grid_rank && !k->grid_bad)
		blk_error(c->d, p->index_loc, "the index map takes %d parameter%s but the grid has %d ax%s",
		          p->nindex_params, p->nindex_params == 1 ? "" : "s", k->grid_rank,
		          k->grid_rank == 1 ? "is" : "es");
	if (p->nindex_map != k->params[pi].rank)
		blk_error(c->d, p->index_loc, "the index map yields %d block ind%s but `%s` has rank %d",
		          p->nindex_map, p->nindex_map == 1 ? "ex" : "ices", p->name, k->params[pi].rank);
	k->mapbinds[pi] = BLK_NEW_N(c->a, BlkCkBind *, p->nindex_params + 1);
	for (int i = 0; i < p->nindex_params; i++)
		k->mapbinds[pi][i] = blk_ck_bind(c, CK_BIND_VALUE, p->index_params[i], p->index_param_locs[i],
		                             blk_ck_value(BLK_I32, 0, NULL));
	c->in_map = true;
	for (int i = 0; i < p->nindex_map; i++) {
		CkType t = blk_ck_expr(c, p->index_map[i]);
		if (t.kind != CK_POISON && (t.kind != CK_VALUE || t.t.rank || t.t.dtype != BLK_I32))
			blk_error(c->d, p->index_map[i]->loc, "a block index must be an i32 scalar, got %s",
			          blk_ck_type_str(c->a, &t));
	}
	c->in_map = false;
	c->scope = saved;
}

int blk_ck_is_param_name(const Ck *c, const char *name)
{
	for (int i = 0; c->k && c->k->ast && i < c->k->ast->nparams; i++)
		if (strcmp(c->k->ast->params[i].name, name) == 0)
			return c->k->params[i].access == BLK_ACCESS_IN && c->k->params[i].dtype == BLK_I32 ? 1 : 2;
	return 0;
}

static void bind_param(Ck *c, const BlkAstParam *p, int pi, bool ok)
{
	BlkParam *P = &c->k->params[pi];
	const BlkSym *dims[BLK_MAX_RANK];
	int r = 0;
	BlkCkBind *old = blk_ck_lookup(c, p->name);
	if (old && old->kind != CK_BIND_PARAM) {
		blk_error(c->d, p->loc, "parameter `%s` has the name of a %s", p->name,
		          old->kind == CK_BIND_SIZE ? "launch size" : "compile-time parameter");
		blk_ck_declared_here(c, old);
	}
	BlkCkBind *b = blk_ck_bind(c, CK_BIND_PARAM, p->name, p->loc, blk_ck_poison());
	b->param = pi;
	c->k->pbinds[pi] = b;
	for (int d = 0; d < P->rank; d++)
		if (!P->squeezed[d])
			dims[r++] = P->block[d];
	if (ok)
		b->type = blk_ck_ref(P->dtype, r, dims, P->access == BLK_ACCESS_SCRATCH ? BLK_SPACE_SHARED
		                 : BLK_SPACE_GLOBAL, P->access, b);
}

static void check_params(Ck *c, const BlkAstKernel *ak)
{
	CkKernel *k = c->k;
	if (ak->nparams > BLK_MAX_PARAMS) {
		blk_error(c->d, ak->params[BLK_MAX_PARAMS].loc,
		          "kernel `%s` has %d parameters; the limit is %d", ak->name, ak->nparams,
		          BLK_MAX_PARAMS);
		return;
	}
	int n = k->nparams = ak->nparams;
	bool *ok = BLK_NEW_N(c->a, bool, n + 1);
	k->params = BLK_NEW_N(c->a, BlkParam, n + 1);
	k->pbinds = BLK_NEW_N(c->a, BlkCkBind *, n + 1);
	k->mapbinds = BLK_NEW_N(c->a, BlkCkBind **, n + 1);
	k->written = BLK_NEW_N(c->a, bool, n + 1);
	k->stored = BLK_NEW_N(c->a, bool, n + 1);
	for (int i = 0; i < n; i++) {
		const BlkAstParam *p = &ak->params[i];
		k->params[i].name = p->name;
		k->params[i].loc = p->loc;
		k->params[i].prefetch = p->access == BLK_AST_PREFETCH;
		k->params[i].signal = p->access == BLK_AST_SIGNAL;
		k->params[i].symmetric = p->symmetric;
		k->params[i].access = k->params[i].prefetch ? BLK_ACCESS_IN
		                      : k->params[i].signal ? BLK_ACCESS_INOUT
		                      : (BlkAccess)p->access; /* same order */
		for (int j = 0; j < i; j++)
			if (strcmp(ak->params[j].name, p->name) == 0) {
				blk_error(c->d, p->loc, "parameter `%s` is declared twice", p->name);
				blk_note(c->d, ak->params[j].loc, "`%s` is declared here", p->name);
			}
		ok[i] = param_shape(c, p, &k->params[i]);
	}
	for (int i = 0; i < n; i++)
		ok[i] = ok[i] && param_block(c, &ak->params[i], &k->params[i]);
	check_grid(c, ak);
	for (int i = 0; i < n; i++) /* index maps read the prefetch arrays */
		if (k->params[i].prefetch)
			bind_param(c, &ak->params[i], i, ok[i]);
	for (int i = 0; i < n; i++)
		check_index_map(c, &ak->params[i], i);
	for (int i = 0; i < n; i++)
		if (!k->params[i].prefetch)
			bind_param(c, &ak->params[i], i, ok[i]);
}

/* `dynamic (M, N)`: each name a launch size of this kernel, once. */
static void check_dynamic(Ck *c, const BlkAstKernel *ak)
{
	CkKernel *k = c->k;
	k->size_dyn = BLK_NEW_N(c->a, int64_t, k->nsizes + 1);
	for (int i = 0; i < ak->ndynamic; i++) {
		const char *n = ak->dynamic[i];
		int s = 0;
		while (s < k->nsizes && strcmp(k->sizes[s], n) != 0)
			s++;
		for (int j = 0; j < i; j++)
			if (strcmp(ak->dynamic[j], n) == 0) {
				blk_error(c->d, ak->dynamic_loc[i], "`%s` is named twice in `dynamic (...)`", n);
				break;
			}
		if (s < k->nsizes) {
			k->size_dyn[s] = 1;
			continue;
		}
		blk_error(c->d, ak->dynamic_loc[i], "`%s` in `dynamic (...)` is not a launch size of `%s`",
		          n, ak->name);
		if (k->nsizes)
			blk_note(c->d, ak->dynamic_loc[i], "launch sizes are the names in the parameters' "
			         "shapes, such as `%s`", k->sizes[0]);
		else
			blk_note(c->d, ak->dynamic_loc[i], "the parameters' shapes are all constants");
	}
}

/* ---- files ---------------------------------------------------------------------------- */

static void check_kernel(Ck *c, const BlkAstKernel *ak, CkKernel *k, const BlkDefine *defs,
                         int ndefs, bool *used)
{
	c->k = k;
	c->scratch_bytes = 0;
	c->scope = NULL;
	c->inlined = 0;
	k->ast = ak;
	check_cparams(c, ak, defs, ndefs, used);
	check_params(c, ak);
	if (!k->params) /* too many */
		return;
	check_autos(c, ak);
	check_dynamic(c, ak);
	blk_ck_block(c, ak->body);
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].access == BLK_ACCESS_OUT && !k->written[i])
			blk_error(c->d, k->params[i].loc,
			          "`%s` is an `out` parameter but the kernel never writes it",
			          k->params[i].name);
}

static void check_kernel_names(Ck *c, const BlkAstFile *f)
{
	for (int i = 0; i < f->nkernels; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(f->kernels[i]->name, f->kernels[j]->name) == 0) {
				blk_error(c->d, f->kernels[i]->name_loc, "kernel `%s` is defined twice",
				          f->kernels[i]->name);
				blk_note(c->d, f->kernels[j]->name_loc, "`%s` is defined here", f->kernels[j]->name);
			}
}

BlkCkFile *blk_check_file(BlkArena *a, BlkDiag *d, const BlkAstFile *f,
                          const BlkDefine *defines, int ndefines)
{
	BlkCkFile *cf = BLK_NEW(a, BlkCkFile);
	Ck c = { .a = a, .d = d, .map = &cf->map };
	bool *used = BLK_NEW_N(a, bool, ndefines + 1);
	int errors = blk_diag_error_count(d);
	BlkLoc none = { 0 };
	cf->ast = f;
	cf->nkernels = f->nkernels;
	cf->kernels = BLK_NEW_N(a, CkKernel, f->nkernels + 1);
	check_kernel_names(&c, f);
	blk_ck_helpers(&c, f);
	for (int i = 0; i < f->nkernels && !blk_diag_saturated(d); i++)
		check_kernel(&c, f->kernels[i], &cf->kernels[i], defines, ndefines, used);
	for (int i = 0; i < ndefines; i++) {
		int first = 0; /* the same name twice (blkc says so itself; the C API and Python get here) */
		while (strcmp(defines[first].name, defines[i].name) != 0)
			first++;
		if (first < i)
			blk_error(d, none, "-D %s is given twice (%s and %s)", defines[i].name, defines[first].value,
			          defines[i].value);
		else if (!used[i])
			blk_error(d, none, "-D %s: no kernel has a compile-time parameter named `%s`",
			          defines[i].name, defines[i].name);
	}
	return blk_diag_error_count(d) > errors ? NULL : cf;
}
