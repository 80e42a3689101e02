/* check_fn.c - helpers `fn f(a, b) { ... }` and closures `|a, b| ...`,
 * inlined where they are used.
 *
 * A helper has no types of its own: each call checks a fresh copy of its
 * body (ast_clone.c) with the parameters bound to the arguments' types,
 * so one helper serves f32 and bf16 tiles, scalars, Refs and dtypes, and
 * lowering finds each call's notes on its own copy.  The body sees its
 * parameters and the other helpers, not the calling kernel's names; an
 * error in it is followed by a note at the call (blk_diag_push_call).  A
 * helper no kernel calls is parsed but not checked: its calls give it
 * its types.
 *
 * associative_scan's combine is a helper's name or a closure, checked
 * once with its parameters bound to scalars of the scanned tiles' dtypes
 * (a closure also sees the names around it).  It computes a value from
 * scalars: no Refs, no tiles, no loops, no statement but `let`.
 */
#include <string.h>

#include "frontend/check_impl.h"

const BlkAstFn *blk_ck_helper(const Ck *c, const char *name)
{
	for (int i = 0; c->file && i < c->file->nfns; i++)
		if (strcmp(c->file->fns[i]->name, name) == 0)
			return c->file->fns[i];
	return NULL;
}

/* Levenshtein distance of a and b, or 3 past 2 (or past 63 bytes). */
static int distance(const char *a, const char *b)
{
	int n = (int)strlen(a), m = (int)strlen(b), row[64];
	if (n > 63 || m > 63 || n - m > 2 || m - n > 2)
		return 3;
	for (int j = 0; j <= m; j++)
		row[j] = j;
	for (int i = 1; i <= n; i++) {
		int diag = row[0]++;
		for (int j = 1; j <= m; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			best = up + 1 < best ? up + 1 : best;
			row[j] = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			diag = up;
		}
	}
	return row[m] > 2 ? 3 : row[m];
}

const BlkAstFn *blk_ck_helper_near(const Ck *c, const char *name)
{
	const BlkAstFn *best = NULL;
	int d = 3;
	for (int i = 0; c->file && i < c->file->nfns && strlen(name) > 2; i++) {
		int k = distance(name, c->file->fns[i]->name);
		if (k < d)
			d = k, best = c->file->fns[i];
	}
	return best;
}

static void params_distinct(Ck *c, const BlkAstFn *f)
{
	for (int j = 0; j < f->nparams; j++)
		for (int k = 0; k < j; k++)
			if (strcmp(f->params[j], f->params[k]) == 0) {
				blk_error(c->d, f->param_locs[j], "parameter `%s` is declared twice", f->params[j]);
				break;
			}
}

void blk_ck_helpers(Ck *c, const BlkAstFile *f)
{
	c->file = f;
	c->active = BLK_NEW_N(c->a, const BlkAstFn *, f->nfns + 1);
	for (int i = 0; i < f->nfns; i++) {
		const BlkAstFn *fn = f->fns[i];
		if (blk_ck_is_builtin(fn->name))
			blk_error(c->d, fn->name_loc, "helper `%s` has the name of a builtin function; "
			          "choose another name", fn->name);
		for (int j = 0; j < i; j++)
			if (strcmp(f->fns[j]->name, fn->name) == 0) {
				blk_error(c->d, fn->name_loc, "helper `%s` is defined twice", fn->name);
				blk_note(c->d, f->fns[j]->name_loc, "`%s` is defined here", fn->name);
				break;
			}
		params_distinct(c, fn);
	}
}

/* ---- calls ------------------------------------------------------------------------ */

/* fargs[p]: the argument of f's parameter p, positional ones in order and
 * keyword ones by name. */
static bool match_args(Ck *c, const BlkAstExpr *e, const BlkAstFn *f, const BlkAstExpr **fargs)
{
	if (e->nargs != f->nparams) {
		blk_error(c->d, e->loc, "`%s` takes %d argument%s, got %d", f->name, f->nparams,
		          f->nparams == 1 ? "" : "s", e->nargs);
		return false;
	}
	for (int i = 0, npos = 0; i < e->nargs; i++) {
		const BlkAstArg *g = &e->args[i];
		int p = g->name ? 0 : npos++;
		while (g->name && p < f->nparams && strcmp(f->params[p], g->name) != 0)
			p++;
		if (p == f->nparams) {
			blk_error(c->d, g->loc, "helper `%s` has no parameter named `%s`", f->name, g->name);
			return false;
		}
		if (fargs[p]) {
			blk_error(c->d, g->loc, "`%s` gets parameter `%s` twice", f->name, f->params[p]);
			return false;
		}
		fargs[p] = g->value;
	}
	return true;
}

/* The arguments' types, in the caller's scope: values, Refs and dtypes. */
static bool arg_types(Ck *c, const BlkAstFn *f, const BlkAstExpr **fargs, CkType *types)
{
	bool ok = true;
	for (int p = 0; p < f->nparams; p++) {
		types[p] = blk_ck_expr(c, fargs[p]);
		CkKind k = types[p].kind;
		if (k == CK_TUPLE || k == CK_VOID) {
			blk_error(c->d, fargs[p]->loc, "an argument of `%s` is a value, a Ref or a dtype, "
			          "not %s", f->name, blk_ck_type_str(c->a, &types[p]));
			k = CK_POISON;
		}
		ok &= k != CK_POISON;
	}
	return ok;
}

/* Whether f may be inlined at e: not into itself, within the limits. */
static bool may_inline(Ck *c, const BlkAstExpr *e, const BlkAstFn *f)
{
	for (int i = 0; i < c->nactive; i++) {
		if (c->active[i] != f)
			continue;
		const BlkAstFn *by = c->active[c->nactive - 1];
		if (by == f)
			blk_error(c->d, e->loc, "helper `%s` calls itself; helpers are inlined, so they "
			          "cannot recurse", f->name);
		else
			blk_error(c->d, e->loc, "helper `%s` calls itself through `%s`; helpers are inlined, "
			          "so they cannot recurse", f->name, by->name);
		return false;
	}
	if (c->inline_height + f->body->height > BLK_MAX_EXPR_DEPTH) {
		blk_error(c->d, e->loc, "helper calls nested too deeply (more than %d levels of "
		          "expressions, counting the helpers' bodies)", BLK_MAX_EXPR_DEPTH);
		return false;
	}
	if (++c->inlined <= BLK_MAX_INLINE)
		return true;
	if (c->inlined == BLK_MAX_INLINE + 1)
		blk_error(c->d, e->loc, "kernel `%s` inlines more than %d helper calls; the limit is %d",
		          c->k->ast->name, BLK_MAX_INLINE, BLK_MAX_INLINE);
	return false;
}

/* body's statements and result in the scope of its parameters (bound by
 * the caller), as helper f's at `call` when f is a helper. */
static CkType check_body(Ck *c, const BlkAstFn *f, BlkLoc call, const BlkAstBlock *body)
{
	if (f->name) {
		c->active[c->nactive++] = f;
		c->inline_height += f->body->height;
		blk_diag_push_call(c->d, call, f->name);
	}
	CkType t = blk_ck_body(c, body);
	if (f->name) {
		blk_diag_pop_call(c->d);
		c->inline_height -= f->body->height;
		c->nactive--;
	}
	return t;
}

CkType blk_ck_inline(Ck *c, const BlkAstExpr *e, CkInfo *in, const BlkAstFn *f)
{
	const BlkAstExpr **fargs = BLK_NEW_N(c->a, const BlkAstExpr *, f->nparams + 1);
	CkType *types = BLK_NEW_N(c->a, CkType, f->nparams + 1);
	if (c->in_map) {
		blk_error(c->d, e->loc, "`%s` cannot be used in an index map", e->name);
		return blk_ck_poison();
	}
	if (!match_args(c, e, f, fargs) || !arg_types(c, f, fargs, types) || !may_inline(c, e, f))
		return blk_ck_poison();
	in->fn = f;
	in->fargs = fargs;
	in->body = blk_ast_clone_block(c->a, f->body);
	in->nbinds = f->nparams;
	in->binds = BLK_NEW_N(c->a, BlkCkBind *, f->nparams + 1);
	BlkCkBind *saved = c->scope;
	c->scope = NULL;
	for (int p = 0; p < f->nparams; p++)
		in->binds[p] = blk_ck_bind(c, CK_BIND_VALUE, f->params[p], f->param_locs[p], types[p]);
	CkType t = check_body(c, f, e->loc, in->body);
	c->scope = saved;
	if (in->body->nstmts && t.kind == CK_VALUE && t.konst) { /* the statements must run */
		t = blk_ck_strong(t);
		t.konst = false;
	}
	return t;
}

/* ---- associative_scan ------------------------------------------------------------- */

/* The tiles scanned: x, or a tuple of tiles of one shape; n of them. */
static bool scanned(Ck *c, const BlkAstExpr *x, CkType *xt, const CkType **el, int *n)
{
	*xt = blk_ck_expr(c, x);
	*n = xt->kind == CK_TUPLE ? xt->n : 1;
	*el = xt->kind == CK_TUPLE ? xt->elems : xt;
	for (int i = 0; i < *n; i++) {
		const CkType *t = &(*el)[i];
		if (t->kind == CK_POISON)
			return false;
		if (t->kind != CK_VALUE || t->t.rank == 0 || t->weak) {
			blk_error(c->d, x->loc, "`associative_scan` scans a tile or a tuple of tiles, got %s",
			          blk_ck_type_str(c->a, xt));
			return false;
		}
		if (blk_dtype_is_fp8(t->t.dtype)) {
			blk_error(c->d, x->loc, "`associative_scan` does not apply to %s; convert first: "
			          "x.astype(f32)", blk_dtype_name(t->t.dtype));
			return false;
		}
		BlkType same = t->t;
		same.dtype = (*el)[0].t.dtype;
		if (!blk_type_equal(&same, &(*el)[0].t)) {
			blk_error(c->d, x->loc, "the tiles `associative_scan` scans together must have one "
			          "shape, got %s", blk_ck_type_str(c->a, xt));
			return false;
		}
	}
	return true;
}

/* The combine: a closure, or the name of a helper. */
static const BlkAstFn *combine_of(Ck *c, const BlkAstExpr *e)
{
	if (e->kind == BLK_AST_CLOSURE)
		return e->fn;
	const BlkAstFn *f = e->kind == BLK_AST_NAME && !blk_ck_lookup(c, e->name)
	                    ? blk_ck_helper(c, e->name) : NULL;
	if (!f)
		blk_error(c->d, e->loc, "the combine of `associative_scan` is a helper's name or a "
		          "closure such as `|a, b| a + b`");
	return f;
}

/* Whether the combine's value t is what x's elements are: a scalar of
 * xt's dtype, or (x a tuple) a tuple of scalars of its dtypes. */
static bool combine_result(Ck *c, BlkLoc loc, const CkType *t, const CkType *xt)
{
	bool tuple = xt->kind == CK_TUPLE;
	int n = tuple ? xt->n : 1;
	const CkType *r = tuple ? t->elems : t, *el = tuple ? xt->elems : xt;
	bool ok = tuple ? t->kind == CK_TUPLE && t->n == n : t->kind == CK_VALUE;
	for (int i = 0; ok && i < n; i++)
		ok = r[i].kind == CK_VALUE && r[i].t.rank == 0 && blk_ck_converts(&r[i], el[i].t.dtype);
	if (ok)
		return true;
	CkType want = *xt;
	want.elems = BLK_NEW_N(c->a, CkType, n);
	for (int i = 0; i < n; i++)
		want.elems[i] = blk_ck_value(el[i].t.dtype, 0, NULL);
	if (!tuple)
		want = want.elems[0];
	blk_error(c->d, loc, "the combine must give %s (the scanned elements' type), got %s",
	          blk_ck_type_str(c->a, &want), blk_ck_type_str(c->a, t));
	return false;
}

/* p is parameter a's or b's NAME. */
static int param_index(Ck *c, const BlkAstExpr *p, BlkCkBind *const *binds)
{
	CkInfo *in = p->kind == BLK_AST_NAME ? blk_ck_info(c->map, p) : NULL;
	return in && in->bind == binds[0] ? 0 : in && in->bind == binds[1] ? 1 : -1;
}

/* The cumsum-family op a combine of one operation on both parameters
 * (`a + b`, `a * b`, `max(a, b)`, `min(a, b)`, either order) computes
 * exactly: max and min at any dtype; + and * where the combine rounds as
 * cumsum does (f32, and the integers, whose wrap commutes with the sum;
 * not f16/bf16, which cumsum accumulates in f32).  BLK_OP_SCAN otherwise. */
static BlkOpKind known_op(Ck *c, const BlkAstBlock *b, BlkCkBind *const *binds, BlkDType dt)
{
	const BlkAstExpr *r = b->result, *x, *y;
	if (b->nstmts || !r || dt == BLK_BOOL)
		return BLK_OP_SCAN;
	CkInfo *in = blk_ck_info(c->map, r);
	BlkOpKind k = BLK_OP_SCAN;
	if (r->kind == BLK_AST_BINARY && (r->op == BLK_AST_OP_ADD || r->op == BLK_AST_OP_MUL) &&
	    (dt == BLK_F32 || dt == BLK_I32 || dt == BLK_I8 || dt == BLK_U8)) {
		k = r->op == BLK_AST_OP_ADD ? BLK_OP_SCAN_SUM : BLK_OP_SCAN_PROD;
		x = r->lhs, y = r->rhs;
	} else if (r->kind == BLK_AST_CALL && !r->method && r->nargs == 2 && !r->args[0].name &&
	           !r->args[1].name && (in->builtin == CK_B_MAX || in->builtin == CK_B_MIN)) {
		k = in->builtin == CK_B_MAX ? BLK_OP_SCAN_MAX : BLK_OP_SCAN_MIN;
		x = r->args[0].value, y = r->args[1].value;
	} else {
		return BLK_OP_SCAN;
	}
	int i = param_index(c, x, binds), j = param_index(c, y, binds);
	return i >= 0 && j >= 0 && i != j ? k : BLK_OP_SCAN;
}

/* The combine f's copy, with its 2n parameters bound to scalars. */
static CkType check_combine(Ck *c, const BlkAstExpr *e, CkInfo *in, const BlkAstFn *f,
                            const CkType *el, int n)
{
	if (f->nparams != 2 * n) {
		blk_error(c->d, e->loc, "the combine of `associative_scan` over %d tile%s takes %d "
		          "parameters (the left element%s, then the right), but %s has %d", n,
		          n == 1 ? "" : "s", 2 * n, n == 1 ? "" : "s",
		          f->name ? blk_arena_printf(c->a, "`%s`", f->name) : "this closure", f->nparams);
		return blk_ck_poison();
	}
	if (f->name && !may_inline(c, e, f))
		return blk_ck_poison();
	if (!f->name)
		params_distinct(c, f);
	BlkCkBind *saved = c->scope;
	bool outer = c->in_combine;
	c->scope = f->name ? NULL : c->scope;
	in->nbinds = 2 * n;
	in->binds = BLK_NEW_N(c->a, BlkCkBind *, 2 * n);
	for (int p = 0; p < 2 * n; p++)
		in->binds[p] = blk_ck_bind(c, CK_BIND_VALUE, f->params[p], f->param_locs[p],
		                           blk_ck_value(el[p % n].t.dtype, 0, NULL));
	in->body = blk_ast_clone_block(c->a, f->body);
	c->in_combine = true;
	CkType t = check_body(c, f, e->loc, in->body);
	c->in_combine = outer;
	c->scope = saved;
	return t;
}

/* associative_scan(combine, x, axis = k, reverse = b): the axis may be
 * the third argument, and a rank-1 tile may leave it out. */
CkType blk_ck_assoc_scan(Ck *c, const BlkAstExpr *e, CkInfo *in)
{
	Args g;
	CkType xt;
	const CkType *el;
	int n;
	if (!blk_ck_get_args(c, e, 2, 3, "axis", "reverse", &g))
		return blk_ck_poison();
	const BlkAstFn *f = combine_of(c, g.pos[0]);
	if (!scanned(c, g.pos[1], &xt, &el, &n) || !f)
		return blk_ck_poison();
	const BlkAstExpr *ax = g.npos == 3 ? g.pos[2] : g.kw[0];
	if (g.npos == 3 && g.kw[0]) {
		blk_error(c->d, g.kw[0]->loc, "`%s` got the axis twice", e->name);
		return blk_ck_poison();
	}
	if (!ax && el[0].t.rank > 1) {
		blk_error(c->d, e->loc, "`associative_scan` of a rank-%d tile needs an axis: "
		          "`associative_scan(f, x, axis = k)`", el[0].t.rank);
		return blk_ck_poison();
	}
	in->axis = 0;
	if ((ax && !blk_ck_axis_arg(c, ax, el[0].t.rank, &in->axis)) ||
	    (g.kw[1] && !blk_ck_bool_arg(c, g.kw[1], &in->reverse)))
		return blk_ck_poison();
	CkType r = check_combine(c, e, in, f, el, n);
	BlkLoc at = in->body && in->body->result ? in->body->result->loc : g.pos[0]->loc;
	if (r.kind == CK_POISON || !combine_result(c, at, &r, &xt))
		return blk_ck_poison();
	in->scan = xt.kind != CK_TUPLE ? known_op(c, in->body, in->binds, el[0].t.dtype) : BLK_OP_SCAN;
	return xt;
}
