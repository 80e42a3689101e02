/* parse.c - recursive-descent parser: tokens to AST.
 *
 * One function per grammar rule of docs/language.md, the rule in a comment
 * above it.  The whole file is lexed first, so the parser can look ahead
 * freely (`name = expr` arguments need two tokens).
 *
 * Error recovery is panic mode: the first error sets `panic`, which silences
 * further errors; the statement loop then skips to a `;` (consumed), a `}`
 * or the next `kernel`, clears `panic` and goes on, so one run reports one
 * error per broken statement.  An error in a kernel header skips to the
 * body's `{`.  Failed expressions yield a placeholder node, never NULL, so
 * the parser itself never dereferences NULL.
 *
 * Termination on any input: every loop either consumes a token per turn or
 * stops at EOF; nesting deeper than MAX_DEPTH (parens, unary operators,
 * blocks) reports "nesting too deep" and abandons the file, as does a
 * saturated diag, so neither the stack nor the error output can blow up.
 *
 * The parser's own recursion is bounded by MAX_DEPTH, but the trees it
 * builds are not: `a + b + ... + z` loops in the parser and nests in the
 * tree, which the checker and the lowering then recurse over.  So every
 * node records its height (leaves 1; a block counts its statements' deepest
 * expression plus its own level), and a node taller than
 * BLK_MAX_EXPR_DEPTH is an error, whatever the shape of the tree.
 */
#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#include "frontend/ast.h"
#include "frontend/foreign.h"
#include "frontend/frontend.h"
#include "frontend/lex.h"
#include "support/limits.h"

enum { MAX_DEPTH = BLK_MAX_NESTING };

typedef struct Parser {
	BlkArena *a;
	BlkDiag *d;
	const BlkSource *src;
	BlkToken *t;
	int n, pos;
	int depth;
	int hmax;   /* the tallest node built in the current block */
	bool panic; /* an error was reported; silent until resynchronized */
	int errors; /* syntax errors reported */
} Parser;

/* A growable arena array. */
typedef struct Vec {
	void *data;
	int n, cap;
} Vec;

static void *vec_push(Parser *p, Vec *v, size_t elem)
{
	if (v->n == v->cap) {
		int ncap = v->cap ? v->cap * 2 : 4;
		v->data = blk_arena_grow(p->a, v->data, (size_t)v->n, (size_t)ncap, elem);
		v->cap = ncap;
	}
	return (char *)v->data + elem * (size_t)v->n++;
}

static void vec_push_ptr(Parser *p, Vec *v, void *x)
{
	*(void **)vec_push(p, v, sizeof(void *)) = x;
}

/* ---- token helpers ----------------------------------------------------------- */

static BlkToken *tok(Parser *p) { return &p->t[p->pos]; }
static BlkTokKind peek(Parser *p) { return p->t[p->pos].kind; }
static BlkTokKind peek2(Parser *p)
{
	return p->pos + 1 < p->n ? p->t[p->pos + 1].kind : BLK_TOK_EOF;
}
static bool at(Parser *p, BlkTokKind k) { return peek(p) == k; }
static BlkLoc here(Parser *p) { return tok(p)->loc; }

static BlkToken *next(Parser *p)
{
	BlkToken *t = tok(p);
	if (t->kind != BLK_TOK_EOF)
		p->pos++;
	return t;
}

static bool accept(Parser *p, BlkTokKind k)
{
	if (!at(p, k))
		return false;
	next(p);
	return true;
}

/* Gives up on the rest of the file: no more tokens, no more errors. */
static void abandon(Parser *p)
{
	p->pos = p->n - 1;
	p->panic = true;
}

static void error_at(Parser *p, BlkLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error_at(Parser *p, BlkLoc loc, const char *fmt, ...)
{
	if (p->panic)
		return;
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	blk_error(p->d, loc, "%s", buf);
	p->errors++;
	p->panic = true;
	if (blk_diag_saturated(p->d))
		abandon(p);
}

/* The previous token's line went on with `// x` (a Python floor division
 * the lexer took for a comment), and the error is on a later line: a note
 * that says so. */
static void note_floordiv(Parser *p)
{
	if (p->pos < 1 || p->pos >= p->n)
		return;
	const BlkToken *prev = &p->t[p->pos - 1], *cur = tok(p);
	if (!prev->text || cur->loc.line <= prev->loc.line)
		return;
	const char *q = prev->text + prev->len;
	while (*q == ' ' || *q == '\t')
		q++;
	if (q[0] != '/' || q[1] != '/')
		return;
	const char *r = q + 2;
	while (*r == ' ' || *r == '\t')
		r++;
	if (!(isalnum((unsigned char)*r) || *r == '_' || *r == '('))
		return;
	BlkLoc loc = prev->loc;
	loc.col += (int)(q - prev->text);
	blk_note(p->d, loc, "`//` starts a comment in blk, so the rest of line %d is ignored; floor "
	         "division is `~/`", prev->loc.line);
}

/* "expected WHAT, found TOKEN" at the current token. */
static void expected(Parser *p, const char *what)
{
	bool quiet = p->panic;
	error_at(p, here(p), "expected %s, found %s", what, blk_tok_describe(p->a, tok(p)));
	if (!quiet)
		note_floordiv(p);
}

static bool expect(Parser *p, BlkTokKind k)
{
	if (accept(p, k))
		return true;
	expected(p, blk_arena_printf(p->a, "'%s'", blk_tok_spelling(k)));
	return false;
}

/* IDENT; returns its text, or "<error>" after reporting. */
static const char *expect_ident(Parser *p, const char *what, BlkLoc *loc)
{
	if (loc)
		*loc = here(p);
	if (!at(p, BLK_TOK_IDENT)) {
		BlkTokKind k = tok(p)->kind;
		if (k >= BLK_TOK_KERNEL && k <= BLK_TOK_BOOL) /* `let out = ...` */
			error_at(p, here(p), "expected %s, found '%s', a keyword of the language: choose another name",
			         what, blk_tok_spelling(k));
		else
			expected(p, what);
		return "<error>";
	}
	BlkToken *t = next(p);
	return blk_arena_strndup(p->a, t->text, t->len);
}

/* After a list item: true if another item follows (a comma that is not a
 * trailing one before close). */
static bool more(Parser *p, BlkTokKind close)
{
	return accept(p, BLK_TOK_COMMA) && !at(p, close);
}

static bool enter(Parser *p)
{
	if (++p->depth <= MAX_DEPTH)
		return true;
	error_at(p, here(p), "nesting too deep (more than %d levels)", MAX_DEPTH);
	abandon(p);
	return false;
}

static void leave(Parser *p) { p->depth--; }

static int height(const BlkAstExpr *e) { return e ? e->height : 0; }
static int imax(int a, int b) { return a > b ? a : b; }

/* Records that a node of height h was built at loc; too tall abandons. */
static bool tall(Parser *p, int h, BlkLoc loc)
{
	p->hmax = imax(p->hmax, h);
	if (h <= BLK_MAX_EXPR_DEPTH)
		return false;
	error_at(p, loc, "expression nested too deeply (more than %d levels)",
	         BLK_MAX_EXPR_DEPTH);
	abandon(p);
	return true;
}

/* e's height is one more than its tallest child's (h). */
static BlkAstExpr *grown(Parser *p, BlkAstExpr *e, int h)
{
	e->height = h + 1;
	tall(p, e->height, e->loc);
	return e;
}

static int args_height(const BlkAstArg *args, int n)
{
	int h = 0;
	for (int i = 0; i < n; i++)
		h = imax(h, height(args[i].value));
	return h;
}

static int idx_height(const BlkAstIndex *idx, int n)
{
	int h = 0;
	for (int i = 0; i < n; i++)
		h = imax(h, imax(height(idx[i].a), imax(height(idx[i].b), height(idx[i].c))));
	return h;
}

static BlkAstExpr *error_expr(Parser *p, BlkLoc loc)
{
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_NAME, loc);
	e->name = "<error>";
	return e;
}

static bool is_dtype_kw(BlkTokKind k)
{
	return k >= BLK_TOK_F32 && k <= BLK_TOK_BOOL;
}

static BlkDType dtype_of(BlkTokKind k)
{
	static const BlkDType map[] = {BLK_F32, BLK_F16, BLK_BF16, BLK_I32, BLK_I8, BLK_U8, BLK_U32, BLK_F8E4M3, BLK_F8E5M2,
	                              BLK_BOOL};
	return map[k - BLK_TOK_F32];
}

/* ---- expressions ----------------------------------------------------------- */

static BlkAstExpr *parse_expr(Parser *p);
static BlkAstExpr *parse_unary(Parser *p);
static BlkAstBlock *parse_block(Parser *p, bool is_body);

/* dtype = "f32" | "f16" | "bf16" | "i32" | "i8" | "u8" | "u32" | "f8e4m3" | "f8e5m2" | "bool" | IDENT ; */
static BlkAstExpr *parse_postfix(Parser *p);

static BlkAstExpr *parse_dtype(Parser *p)
{
	BlkLoc loc = here(p);
	if (is_dtype_kw(peek(p))) {
		BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_DTYPE, loc);
		e->dtype = dtype_of(next(p)->kind);
		return e;
	}
	if (at(p, BLK_TOK_IDENT) && peek2(p) == BLK_TOK_DOT) /* `o_ref.dtype`, `jnp.float32` */
		return parse_postfix(p);
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_NAME, loc);
	e->name = expect_ident(p, "a dtype", NULL);
	return e;
}

/* arg = [ IDENT "=" ] expr ; */
static void parse_arg(Parser *p, Vec *args)
{
	BlkAstArg *arg = vec_push(p, args, sizeof(BlkAstArg));
	arg->loc = here(p);
	if (at(p, BLK_TOK_IDENT) && peek2(p) == BLK_TOK_ASSIGN) {
		BlkToken *t = next(p);
		arg->name = blk_arena_strndup(p->a, t->text, t->len);
		next(p);
	}
	arg->value = parse_expr(p);
}

/* args = "(" [ arg { "," arg } [ "," ] ] ")" ;  (the "(" is current) */
static void parse_args(Parser *p, BlkAstExpr *e)
{
	Vec v = {0};
	expect(p, BLK_TOK_LPAREN);
	if (!at(p, BLK_TOK_RPAREN))
		do
			parse_arg(p, &v);
		while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	e->args = v.data;
	e->nargs = v.n;
	grown(p, e, args_height(e->args, e->nargs));
}

/* The rest of a slice after its first ":": [ expr ] [ ":" [ expr ] ]. */
static void parse_slice_end(Parser *p, BlkAstIndex *x)
{
	x->kind = BLK_AST_IDX_SLICE;
	if (!at(p, BLK_TOK_COMMA) && !at(p, BLK_TOK_RBRACKET) && !at(p, BLK_TOK_COLON))
		x->b = parse_expr(p);
	if (accept(p, BLK_TOK_COLON) && !at(p, BLK_TOK_COMMA) && !at(p, BLK_TOK_RBRACKET))
		x->c = parse_expr(p);
}

/* index = [ expr ] ":" [ expr ] [ ":" [ expr ] ] | "..." | "None"
 *       | "ds" "(" expr "," expr [ "," expr ] ")" | expr ; */
static void parse_index(Parser *p, Vec *v)
{
	BlkAstIndex *x = vec_push(p, v, sizeof(BlkAstIndex));
	x->loc = here(p);
	if (accept(p, BLK_TOK_COLON)) {
		parse_slice_end(p, x);
	} else if (accept(p, BLK_TOK_ELLIPSIS)) {
		x->kind = BLK_AST_IDX_ELLIPSIS;
	} else if (accept(p, BLK_TOK_NONE)) {
		x->kind = BLK_AST_IDX_NONE;
	} else if (at(p, BLK_TOK_IDENT) && tok(p)->len == 2 &&
	           memcmp(tok(p)->text, "ds", 2) == 0 && peek2(p) == BLK_TOK_LPAREN) {
		x->kind = BLK_AST_IDX_DS;
		next(p);
		next(p);
		x->a = parse_expr(p);
		expect(p, BLK_TOK_COMMA);
		x->b = parse_expr(p);
		if (accept(p, BLK_TOK_COMMA))
			x->c = parse_expr(p);
		expect(p, BLK_TOK_RPAREN);
	} else {
		x->kind = BLK_AST_IDX_EXPR;
		x->a = parse_expr(p);
		if (accept(p, BLK_TOK_COLON))
			parse_slice_end(p, x);
	}
}

/* indices = index { "," index } ;  then the closing "]" */
static void parse_indices(Parser *p, BlkAstIndex **idx, int *n)
{
	Vec v = {0};
	do
		parse_index(p, &v);
	while (more(p, BLK_TOK_RBRACKET));
	expect(p, BLK_TOK_RBRACKET);
	*idx = v.data;
	*n = v.n;
}

/* lpattern = IDENT | "(" IDENT { "," IDENT } ")" ; */
static void parse_lpattern(Parser *p, BlkAstExpr *e)
{
	Vec names = {0}, locs = {0};
	e->carry = at(p, BLK_TOK_LPAREN) ? BLK_AST_CARRY_TUPLE : BLK_AST_CARRY_ONE;
	bool tuple = accept(p, BLK_TOK_LPAREN);
	do {
		BlkLoc *loc = vec_push(p, &locs, sizeof(BlkLoc));
		vec_push_ptr(p, &names, (void *)expect_ident(p, "a carry name", loc));
	} while (tuple && more(p, BLK_TOK_RPAREN));
	if (tuple)
		expect(p, BLK_TOK_RPAREN);
	e->carries = names.data;
	e->carry_locs = locs.data;
	e->ncarries = names.n;
}

/* "fori_loop" "(" arg { "," arg } ")" "|" IDENT [ "," lpattern ] "|" body */
static BlkAstExpr *parse_fori(Parser *p)
{
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_FORI, next(p)->loc);
	parse_args(p, e);
	expect(p, BLK_TOK_PIPE);
	e->ivar = expect_ident(p, "the loop index name", &e->ivar_loc);
	if (accept(p, BLK_TOK_COMMA))
		parse_lpattern(p, e);
	expect(p, BLK_TOK_PIPE);
	e->body = parse_block(p, true);
	return grown(p, e, imax(height(e), e->body->height));
}

static void parse_fn_params(Parser *p, BlkAstFn *f, BlkTokKind close);

/* closure = "|" [ IDENT { "," IDENT } [ "," ] ] "|" ( body | expr ) ;
 * An expression body is the block `{ expr }`. */
static BlkAstExpr *parse_closure(Parser *p)
{
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_CLOSURE, next(p)->loc);
	BlkAstFn *f = e->fn = BLK_NEW(p->a, BlkAstFn);
	f->loc = e->loc;
	parse_fn_params(p, f, BLK_TOK_PIPE);
	if (at(p, BLK_TOK_LBRACE)) {
		f->body = parse_block(p, true);
	} else {
		f->body = BLK_NEW(p->a, BlkAstBlock);
		f->body->loc = here(p);
		f->body->result = parse_expr(p);
		f->body->height = height(f->body->result) + 2;
	}
	return grown(p, e, f->body->height);
}

/* "(" expr ")" | "(" expr "," [ expr { "," expr } ] ")" */
static BlkAstExpr *parse_paren(Parser *p)
{
	BlkLoc loc = next(p)->loc;
	BlkAstExpr *first = parse_expr(p);
	if (!at(p, BLK_TOK_COMMA)) {
		expect(p, BLK_TOK_RPAREN);
		return first;
	}
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_TUPLE, loc);
	Vec v = {0};
	vec_push_ptr(p, &v, first);
	while (more(p, BLK_TOK_RPAREN))
		vec_push_ptr(p, &v, parse_expr(p));
	expect(p, BLK_TOK_RPAREN);
	e->elems = v.data;
	e->nelems = v.n;
	int h = 0;
	for (int i = 0; i < v.n; i++)
		h = imax(h, height(e->elems[i]));
	return grown(p, e, h);
}

static BlkAstExpr *leaf(Parser *p, BlkAstExprKind k)
{
	return blk_ast_expr_new(p->a, k, next(p)->loc);
}

/* primary = INT | FLOAT | "true" | "false" | "inf" | "nan" | IDENT | dtype
 *         | IDENT "(" [ arg { "," arg } ] ")"
 *         | "fori_loop" "(" arg { "," arg } ")" "|" IDENT [ "," lpattern ] "|" body
 *         | "(" expr ")" | "(" expr "," [ expr { "," expr } ] ")" | closure ; */
static BlkAstExpr *dot_with_acc(Parser *p, BlkAstExpr *call);

static BlkAstExpr *parse_primary(Parser *p)
{
	BlkToken *t = tok(p);
	BlkAstExpr *e;
	switch (t->kind) {
	case BLK_TOK_INT:
		e = leaf(p, BLK_AST_INT);
		e->ival = t->ival;
		return e;
	case BLK_TOK_FLOAT:
		e = leaf(p, BLK_AST_FLOAT);
		e->fval = t->fval;
		e->text = blk_arena_strndup(p->a, t->text, t->len);
		return e;
	case BLK_TOK_TRUE:
	case BLK_TOK_FALSE:
		e = leaf(p, BLK_AST_BOOL);
		e->ival = t->kind == BLK_TOK_TRUE;
		return e;
	case BLK_TOK_INF: return leaf(p, BLK_AST_INF);
	case BLK_TOK_NAN: return leaf(p, BLK_AST_NAN);
	case BLK_TOK_IDENT:
		e = leaf(p, peek2(p) == BLK_TOK_LPAREN ? BLK_AST_CALL : BLK_AST_NAME);
		e->name = blk_arena_strndup(p->a, t->text, t->len);
		if (e->kind == BLK_AST_CALL)
			parse_args(p, e);
		return e->kind == BLK_AST_CALL ? dot_with_acc(p, e) : e;
	case BLK_TOK_FORI_LOOP: return parse_fori(p);
	case BLK_TOK_LPAREN: return parse_paren(p);
	case BLK_TOK_PIPE: return parse_closure(p);
	default:
		if (is_dtype_kw(t->kind))
			return parse_dtype(p);
		expected(p, "an expression");
		return error_expr(p, t->loc);
	}
}

/* "." IDENT "(" [ arg { "," arg } ] ")": a method call, the CALL of IDENT
 * with the receiver as its first argument (the checker knows which
 * builtins may be called so). */
static BlkAstExpr *parse_method(Parser *p, BlkAstExpr *recv, const BlkToken *t, const char *word)
{
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_CALL, t->loc);
	e->name = word;
	e->method = true;
	parse_args(p, e);
	BlkAstArg *args = blk_arena_alloc(p->a, sizeof *args * (size_t)(e->nargs + 1));
	args[0] = (BlkAstArg){ .loc = recv->loc, .value = recv };
	for (int i = 0; i < e->nargs; i++)
		args[i + 1] = e->args[i];
	e->args = args;
	e->nargs++;
	return grown(p, e, imax(height(recv), args_height(args, e->nargs)));
}

/* `dot(a, b, acc)` or `dot(a, b, acc = acc)` (Triton's `tl.dot(a, b,
 * acc)`): the sum `acc + dot(a, b)`, which the checker and the lowering
 * already take as a dot accumulating into acc.  (No helper can be named
 * `dot`: the checker refuses helpers with a builtin's name.) */
static BlkAstExpr *dot_with_acc(Parser *p, BlkAstExpr *call)
{
	if (strcmp(call->name, "dot") != 0)
		return call;
	bool named_acc = false;
	for (int i = 0; i < call->nargs; i++)
		named_acc |= call->args[i].name && strcmp(call->args[i].name, "acc") == 0;
	if (named_acc && call->nargs != 3) /* `dot(a, b, z, acc = z)`: acc given twice, or a or b missing */
		error_at(p, call->loc, "`dot` takes a, b and an accumulator (`dot(a, b, acc)` or `acc = acc`), "
		         "got %d arguments", call->nargs);
	if (call->nargs != 3 || call->args[0].name || call->args[1].name ||
	    (call->args[2].name && strcmp(call->args[2].name, "acc") != 0))
		return call;
	BlkAstExpr *sum = blk_ast_expr_new(p->a, BLK_AST_BINARY, call->loc);
	sum->op = BLK_AST_OP_ADD;
	sum->lhs = call->args[2].value;
	call->nargs = 2;
	sum->rhs = call;
	return grown(p, sum, imax(height(sum->lhs), height(call)));
}

/* The word after a ".": at, astype, T, a method call or any attribute. */
static BlkAstExpr *parse_dot_suffix(Parser *p, BlkAstExpr *lhs)
{
	BlkLoc loc = next(p)->loc;
	BlkToken *t = tok(p);
	/* `jnp.inf`, `jnp.float32`, `tl.float16`: a keyword of blk after a
	 * module of Python's, which blk writes bare */
	if (t->kind >= BLK_TOK_KERNEL && t->kind <= BLK_TOK_BOOL && lhs->kind == BLK_AST_NAME &&
	    blk_foreign_module(lhs->name)) {
		error_at(p, lhs->loc, "`%s.%s` is not blk, which has no modules: write `%s`", lhs->name,
		         blk_tok_spelling(t->kind), blk_tok_spelling(t->kind));
		next(p);
		return lhs;
	}
	const char *word = expect_ident(p, "an attribute name after '.'", NULL);
	BlkAstExpr *e;
	if (strcmp(word, "astype") != 0 && at(p, BLK_TOK_LPAREN))
		return parse_method(p, lhs, t, word);
	if (strcmp(word, "at") == 0 && at(p, BLK_TOK_LBRACKET)) {
		e = blk_ast_expr_new(p->a, BLK_AST_AT, loc);
		next(p);
		parse_indices(p, &e->idx, &e->nidx);
	} else if (strcmp(word, "astype") == 0 && at(p, BLK_TOK_LPAREN)) {
		e = blk_ast_expr_new(p->a, BLK_AST_ASTYPE, loc);
		next(p);
		e->rhs = parse_dtype(p);
		expect(p, BLK_TOK_RPAREN);
	} else if (strcmp(word, "T") == 0) {
		e = blk_ast_expr_new(p->a, BLK_AST_TRANSPOSE, loc);
	} else {
		e = blk_ast_expr_new(p->a, BLK_AST_ATTR, t->loc);
		e->name = word;
	}
	e->lhs = lhs;
	int h = imax(height(lhs), imax(height(e->rhs), idx_height(e->idx, e->nidx)));
	return grown(p, e, h);
}

/* postfix = primary { "[" indices "]" | "." "at" "[" indices "]"
 *                   | "." "astype" "(" dtype ")" | "." "T"
 *                   | "." IDENT "(" [ arg { "," arg } ] ")" | "." IDENT } ; */
static BlkAstExpr *parse_postfix(Parser *p)
{
	BlkAstExpr *e = parse_primary(p);
	for (;;) {
		if (at(p, BLK_TOK_LBRACKET)) {
			BlkAstExpr *x = blk_ast_expr_new(p->a, BLK_AST_INDEX, next(p)->loc);
			x->lhs = e;
			parse_indices(p, &x->idx, &x->nidx);
			e = grown(p, x, imax(height(e), idx_height(x->idx, x->nidx)));
		} else if (at(p, BLK_TOK_DOT)) {
			e = parse_dot_suffix(p, e);
		} else {
			return e;
		}
	}
}

/* The binary operator of the current token, if it is one of n listed. */
static bool binop(Parser *p, const BlkTokKind *toks, const BlkAstOp *ops, int n, BlkAstOp *op)
{
	for (int i = 0; i < n; i++)
		if (at(p, toks[i])) {
			*op = ops[i];
			return true;
		}
	return false;
}

static BlkAstExpr *binary(Parser *p, BlkAstOp op, BlkAstExpr *lhs, BlkAstExpr *(*rhs)(Parser *))
{
	BlkAstExpr *e = blk_ast_expr_new(p->a, BLK_AST_BINARY, next(p)->loc);
	e->op = op;
	e->lhs = lhs;
	e->rhs = rhs(p);
	return grown(p, e, imax(height(lhs), height(e->rhs)));
}

/* power = postfix [ "**" unary ] ;  (right-associative; binds tighter than
 * a unary operator on its left, as in Python: -2 ** 2 == -4) */
static BlkAstExpr *parse_power(Parser *p)
{
	BlkAstExpr *e = parse_postfix(p);
	if (at(p, BLK_TOK_STARSTAR))
		e = binary(p, BLK_AST_OP_POW, e, parse_unary);
	return e;
}

/* unary = ( "-" | "!" | "~" ) unary | power ; */
static BlkAstExpr *parse_unary(Parser *p)
{
	static const BlkTokKind toks[] = {BLK_TOK_MINUS, BLK_TOK_BANG, BLK_TOK_TILDE};
	static const BlkAstOp ops[] = {BLK_AST_OP_NEG, BLK_AST_OP_NOT, BLK_AST_OP_BITNOT};
	BlkLoc loc = here(p);
	if (!enter(p))
		return error_expr(p, loc);
	BlkAstExpr *e;
	BlkAstOp op;
	if (binop(p, toks, ops, 3, &op)) {
		e = blk_ast_expr_new(p->a, BLK_AST_UNARY, loc);
		e->op = op;
		next(p);
		e->lhs = parse_unary(p);
		grown(p, e, height(e->lhs));
	} else {
		e = parse_power(p);
	}
	leave(p);
	return e;
}

/* One level of left-associative operators: sub { TOK sub }, toks[i]
 * making ops[i]. */
static BlkAstExpr *left_assoc_of(Parser *p, const BlkTokKind *toks, const BlkAstOp *ops, int n,
                                 BlkAstExpr *(*sub)(Parser *))
{
	BlkAstExpr *e = sub(p);
	BlkAstOp op;
	while (binop(p, toks, ops, n, &op))
		e = binary(p, op, e, sub);
	return e;
}

static BlkAstExpr *left_assoc(Parser *p, BlkTokKind tok, BlkAstOp op, BlkAstExpr *(*sub)(Parser *))
{
	return left_assoc_of(p, &tok, &op, 1, sub);
}

/* mul = unary { ( "*" | "/" | "~/" | "%" | "@" ) unary } ; */
static BlkAstExpr *parse_mul(Parser *p)
{
	static const BlkTokKind toks[] = {BLK_TOK_STAR, BLK_TOK_SLASH, BLK_TOK_FLOORDIV, BLK_TOK_PERCENT,
	                                  BLK_TOK_AT};
	static const BlkAstOp ops[] = {BLK_AST_OP_MUL, BLK_AST_OP_DIV, BLK_AST_OP_FLOORDIV, BLK_AST_OP_MOD,
	                               BLK_AST_OP_MATMUL};
	return left_assoc_of(p, toks, ops, 5, parse_unary);
}

/* add = mul { ( "+" | "-" ) mul } ; */
static BlkAstExpr *parse_add(Parser *p)
{
	static const BlkTokKind toks[] = {BLK_TOK_PLUS, BLK_TOK_MINUS};
	static const BlkAstOp ops[] = {BLK_AST_OP_ADD, BLK_AST_OP_SUB};
	return left_assoc_of(p, toks, ops, 2, parse_mul);
}

/* shift = add { ( "<<" | ">>" ) add } ; */
static BlkAstExpr *parse_shift(Parser *p)
{
	static const BlkTokKind toks[] = {BLK_TOK_SHL, BLK_TOK_SHR};
	static const BlkAstOp ops[] = {BLK_AST_OP_SHL, BLK_AST_OP_SHR};
	return left_assoc_of(p, toks, ops, 2, parse_add);
}

/* bitand = shift { "&" shift } ; */
static BlkAstExpr *parse_bitand(Parser *p)
{
	return left_assoc(p, BLK_TOK_AMP, BLK_AST_OP_BITAND, parse_shift);
}

/* bitxor = bitand { "^" bitand } ; */
static BlkAstExpr *parse_bitxor(Parser *p)
{
	return left_assoc(p, BLK_TOK_CARET, BLK_AST_OP_BITXOR, parse_bitand);
}

/* bitor = bitxor { "|" bitxor } ; */
static BlkAstExpr *parse_bitor(Parser *p)
{
	return left_assoc(p, BLK_TOK_PIPE, BLK_AST_OP_BITOR, parse_bitxor);
}

/* A second comparison after `a < b`: `a < b < c` is an error, not
 * Python's chain; `a > 0 & b > 0` (a mask in numpy style, which Python
 * reads as `a > (0 & b) > 0`) says how to write it. */
static void chained_cmp(Parser *p, const BlkAstExpr *cmp)
{
	const BlkAstExpr *r = cmp->rhs;
	if (r->kind == BLK_AST_BINARY &&
	    (r->op == BLK_AST_OP_BITAND || r->op == BLK_AST_OP_BITOR || r->op == BLK_AST_OP_BITXOR))
		error_at(p, here(p), "comparisons do not chain, and `%s` binds tighter than "
		         "comparisons (as in Python): write `(a > 0) %s (b > 0)`",
		         blk_ast_op_spelling(r->op), blk_ast_op_spelling(r->op));
	else
		error_at(p, here(p), "comparisons do not chain; use '&&'");
}

/* cmp = bitor [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) bitor ] ;
 * Comparisons do not chain: `a < b < c` is an error, not Python's meaning. */
static BlkAstExpr *parse_cmp(Parser *p)
{
	static const BlkTokKind toks[] = {BLK_TOK_EQ, BLK_TOK_NE, BLK_TOK_LT,
	                                  BLK_TOK_LE, BLK_TOK_GT, BLK_TOK_GE};
	static const BlkAstOp ops[] = {BLK_AST_OP_EQ, BLK_AST_OP_NE, BLK_AST_OP_LT,
	                               BLK_AST_OP_LE, BLK_AST_OP_GT, BLK_AST_OP_GE};
	BlkAstExpr *e = parse_bitor(p);
	BlkAstOp op;
	if (!binop(p, toks, ops, 6, &op))
		return e;
	e = binary(p, op, e, parse_bitor);
	if (binop(p, toks, ops, 6, &op))
		chained_cmp(p, e);
	return e;
}

/* and = cmp { "&&" cmp } ; */
static BlkAstExpr *parse_and(Parser *p)
{
	return left_assoc(p, BLK_TOK_ANDAND, BLK_AST_OP_AND, parse_cmp);
}

/* or = and { "||" and } ; */
static BlkAstExpr *parse_or(Parser *p)
{
	return left_assoc(p, BLK_TOK_OROR, BLK_AST_OP_OR, parse_and);
}

/* expr = or ; */
static BlkAstExpr *parse_expr(Parser *p)
{
	return parse_or(p);
}

/* ---- statements --------------------------------------------------------------- */

static BlkAstParam *parse_shape_list(Parser *p, BlkAstParam *prm);

/* pattern = IDENT | "(" IDENT { "," IDENT } ")" ; */
static void parse_pattern(Parser *p, BlkAstStmt *s)
{
	Vec names = {0}, locs = {0};
	s->tuple_pattern = accept(p, BLK_TOK_LPAREN);
	do {
		BlkLoc *loc = vec_push(p, &locs, sizeof(BlkLoc));
		vec_push_ptr(p, &names, (void *)expect_ident(p, "a name", loc));
	} while (s->tuple_pattern && more(p, BLK_TOK_RPAREN));
	if (s->tuple_pattern)
		expect(p, BLK_TOK_RPAREN);
	s->names = names.data;
	s->name_locs = locs.data;
	s->nnames = names.n;
}

/* "let" pattern "=" expr ";" */
static BlkAstStmt *parse_let(Parser *p)
{
	BlkAstStmt *s = blk_ast_stmt_new(p->a, BLK_AST_LET, next(p)->loc);
	parse_pattern(p, s);
	expect(p, BLK_TOK_ASSIGN);
	s->value = parse_expr(p);
	expect(p, BLK_TOK_SEMI);
	return s;
}

/* "when" expr block [ "else" block ] */
static BlkAstStmt *parse_when(Parser *p)
{
	BlkAstStmt *s = blk_ast_stmt_new(p->a, BLK_AST_WHEN, next(p)->loc);
	s->value = parse_expr(p);
	s->then = parse_block(p, false);
	if (accept(p, BLK_TOK_ELSE))
		s->els = parse_block(p, false);
	return s;
}

/* scratchdecl = IDENT ":" dtype "[" expr { "," expr } "]" ; */
static void parse_scratchdecl(Parser *p, Vec *v)
{
	BlkAstParam *prm = vec_push(p, v, sizeof(BlkAstParam));
	prm->loc = here(p);
	prm->name = expect_ident(p, "a scratch name", NULL);
	prm->access = BLK_AST_SCRATCH;
	prm->access_loc = prm->loc;
	expect(p, BLK_TOK_COLON);
	prm->dtype = parse_dtype(p);
	parse_shape_list(p, prm);
}

/* "scoped" "(" scratchdecl { "," scratchdecl } ")" block */
static BlkAstStmt *parse_scoped(Parser *p)
{
	BlkAstStmt *s = blk_ast_stmt_new(p->a, BLK_AST_SCOPED, next(p)->loc);
	Vec v = {0};
	expect(p, BLK_TOK_LPAREN);
	do
		parse_scratchdecl(p, &v);
	while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	s->scratch = v.data;
	s->nscratch = v.n;
	s->then = parse_block(p, false);
	return s;
}

/* "print" "(" STRING { "," expr } ")" ";" */
static BlkAstStmt *parse_print(Parser *p)
{
	BlkAstStmt *s = blk_ast_stmt_new(p->a, BLK_AST_PRINT, next(p)->loc);
	Vec v = {0};
	s->str = "";
	expect(p, BLK_TOK_LPAREN);
	if (at(p, BLK_TOK_STRING))
		s->str = next(p)->str;
	else
		expected(p, "a string");
	while (more(p, BLK_TOK_RPAREN))
		vec_push_ptr(p, &v, parse_expr(p));
	expect(p, BLK_TOK_RPAREN);
	expect(p, BLK_TOK_SEMI);
	s->args = v.data;
	s->nargs = v.n;
	return s;
}

/* postfix "[" indices "]" "=" expr ";"  |  expr ";"
 * Both start with an expression; a following "=" makes it a store, whose
 * target must then be an index expression.  In a loop body, an expression
 * followed by "}" is the body's result: *result gets it and NULL is returned. */
static BlkAstStmt *parse_expr_stmt(Parser *p, BlkAstExpr **result)
{
	BlkLoc loc = here(p);
	BlkAstExpr *e = parse_expr(p);
	if (result && at(p, BLK_TOK_RBRACE)) {
		*result = e;
		return NULL;
	}
	BlkTokKind k = peek(p);
	if (k == BLK_TOK_ASSIGN || k == BLK_TOK_PLUS_ASSIGN || k == BLK_TOK_MINUS_ASSIGN || k == BLK_TOK_STAR_ASSIGN) {
		BlkAstStmt *s = blk_ast_stmt_new(p->a, BLK_AST_STORE, loc);
		if (e->kind != BLK_AST_INDEX)
			error_at(p, here(p), "only a Ref can be assigned to, as `r[...] = value`");
		BlkLoc at_op = next(p)->loc;
		s->target = e->lhs ? e->lhs : e;
		s->idx = e->idx;
		s->nidx = e->nidx;
		s->value = parse_expr(p);
		if (k != BLK_TOK_ASSIGN && e->kind == BLK_AST_INDEX) {
			/* `r[i] += v` is `r[i] = r[i] + v` (Pallas's `o_ref[...] +=`): the
			 * read a copy of the target, so each gets its own checker notes */
			BlkAstExpr *sum = blk_ast_expr_new(p->a, BLK_AST_BINARY, at_op);
			sum->op = k == BLK_TOK_PLUS_ASSIGN ? BLK_AST_OP_ADD : k == BLK_TOK_MINUS_ASSIGN ? BLK_AST_OP_SUB
			                                                                              : BLK_AST_OP_MUL;
			sum->lhs = blk_ast_clone_expr(p->a, e);
			sum->rhs = s->value;
			s->value = grown(p, sum, imax(height(sum->lhs), height(sum->rhs)));
		}
		expect(p, BLK_TOK_SEMI);
		return s;
	}
	BlkAstStmt *s = blk_ast_stmt_new(p->a, BLK_AST_EXPR, loc);
	s->value = e;
	expect(p, BLK_TOK_SEMI);
	return s;
}

/* stmt = "let" ... | store | "when" ... | "scoped" ... | "print" ... | expr ";" */
/* Python's statements, which blk spells otherwise. */
static const struct {
	const char *word, *blk;
} python_stmts[] = {
	{ "while", "blk has no `while`: loop with fori_loop(lo, hi) |i| { ... } (a value carried: "
	           "fori_loop(lo, hi, init) |i, acc| { ... })" },
	{ "for", "blk has no `for` statement: loop with fori_loop(lo, hi) |i| { ... } (a value carried: "
	         "fori_loop(lo, hi, init) |i, acc| { ... })" },
	{ "if", "blk writes `when cond { ... } else { ... }` (and where(c, a, b) for a value)" },
	{ "return", "blk has no `return`: a kernel stores into its out Refs, a helper's body ends "
	            "with its value" },
	{ "def", "blk writes helpers as `fn name(x: f32[N]) -> f32[N] { ... }`" },
};

static BlkAstStmt *parse_stmt(Parser *p, BlkAstExpr **result)
{
	if (at(p, BLK_TOK_IDENT) && peek2(p) != BLK_TOK_ASSIGN && peek2(p) != BLK_TOK_LBRACKET &&
	    peek2(p) != BLK_TOK_DOT)
		for (size_t i = 0; i < sizeof python_stmts / sizeof python_stmts[0]; i++)
			if (tok(p)->len == strlen(python_stmts[i].word) &&
			    memcmp(tok(p)->text, python_stmts[i].word, tok(p)->len) == 0) {
				error_at(p, here(p), "%s", python_stmts[i].blk);
				/* past its block, so the next statement parses afresh */
				while (!at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_SEMI) && !at(p, BLK_TOK_LBRACE) &&
				       !at(p, BLK_TOK_RBRACE))
					next(p);
				if (accept(p, BLK_TOK_SEMI) || !at(p, BLK_TOK_LBRACE))
					return NULL;
				for (int open = 0; !at(p, BLK_TOK_EOF);) {
					BlkTokKind k = next(p)->kind;
					open += k == BLK_TOK_LBRACE ? 1 : k == BLK_TOK_RBRACE ? -1 : 0;
					if (!open)
						break;
				}
				p->panic = blk_diag_saturated(p->d);
				return NULL;
			}
	switch (peek(p)) {
	case BLK_TOK_LET: return parse_let(p);
	case BLK_TOK_WHEN: return parse_when(p);
	case BLK_TOK_SCOPED: return parse_scoped(p);
	case BLK_TOK_PRINT: return parse_print(p);
	default: return parse_expr_stmt(p, result);
	}
}

/* After an error in a statement that began at token `start`: skip to just
 * past a ";", or to a "}" or "kernel".  A statement that already ended with
 * its ";" is synchronized; one that consumed nothing skips at least one
 * token, so the statement loop always progresses. */
static void sync_stmt(Parser *p, int start)
{
	if (p->pos > start && p->t[p->pos - 1].kind == BLK_TOK_SEMI) {
		p->panic = blk_diag_saturated(p->d);
		return;
	}
	while (!at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_RBRACE) && !at(p, BLK_TOK_KERNEL))
		if (next(p)->kind == BLK_TOK_SEMI)
			break;
	p->panic = blk_diag_saturated(p->d);
}

/* block = "{" { stmt } "}" ;
 * body  = "{" { stmt } [ expr ] "}" ;   (is_body) */
static BlkAstBlock *parse_block(Parser *p, bool is_body)
{
	BlkAstBlock *b = BLK_NEW(p->a, BlkAstBlock);
	b->loc = here(p);
	int outer = p->hmax;
	p->hmax = 0;
	if (!enter(p) || !expect(p, BLK_TOK_LBRACE)) {
		p->hmax = outer;
		leave(p);
		return b;
	}
	Vec v = {0};
	while (!at(p, BLK_TOK_RBRACE) && !at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_KERNEL)) {
		int start = p->pos;
		BlkAstStmt *s = parse_stmt(p, is_body ? &b->result : NULL);
		if (s)
			vec_push_ptr(p, &v, s);
		if (p->panic)
			sync_stmt(p, start);
		else if (b->result)
			break;
	}
	expect(p, BLK_TOK_RBRACE);
	b->stmts = v.data;
	b->nstmts = v.n;
	b->height = p->hmax + 2; /* the statement and the block */
	p->hmax = outer;
	tall(p, b->height, b->loc);
	leave(p);
	return b;
}

/* ---- kernels ----------------------------------------------------------------- */

/* "[" [ expr { "," expr } ] "]"  (a shape) */
static BlkAstParam *parse_shape_list(Parser *p, BlkAstParam *prm)
{
	Vec v = {0};
	if (!expect(p, BLK_TOK_LBRACKET))
		return prm;
	if (!at(p, BLK_TOK_RBRACKET))
		do
			vec_push_ptr(p, &v, parse_expr(p));
		while (more(p, BLK_TOK_RBRACKET));
	expect(p, BLK_TOK_RBRACKET);
	prm->shape = v.data;
	prm->nshape = v.n;
	return prm;
}

/* bdim = "None" | expr ; */
static void parse_bdim(Parser *p, Vec *dims, Vec *locs)
{
	*(BlkLoc *)vec_push(p, locs, sizeof(BlkLoc)) = here(p);
	vec_push_ptr(p, dims, accept(p, BLK_TOK_NONE) ? NULL : parse_expr(p));
}

/* "index" "(" [ IDENT { "," IDENT } ] ")" "->" "(" expr { "," expr } [ "," ] ")" */
static void parse_index_map(Parser *p, BlkAstParam *prm)
{
	Vec names = {0}, locs = {0}, map = {0};
	prm->has_index = true;
	prm->index_loc = next(p)->loc;
	expect(p, BLK_TOK_LPAREN);
	if (!at(p, BLK_TOK_RPAREN))
		do {
			BlkLoc *loc = vec_push(p, &locs, sizeof(BlkLoc));
			vec_push_ptr(p, &names, (void *)expect_ident(p, "an index-map parameter name", loc));
		} while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	expect(p, BLK_TOK_ARROW);
	expect(p, BLK_TOK_LPAREN);
	do
		vec_push_ptr(p, &map, parse_expr(p));
	while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	prm->index_params = names.data;
	prm->index_param_locs = locs.data;
	prm->nindex_params = names.n;
	prm->index_map = map.data;
	prm->nindex_map = map.n;
}

/* blockspec = "block" "(" bdim { "," bdim } [ "," ] ")"
 *             [ "index" "(" [ IDENT { "," IDENT } ] ")" "->" "(" expr { "," expr } [ "," ] ")" ] ; */
static void parse_blockspec(Parser *p, BlkAstParam *prm)
{
	Vec dims = {0}, locs = {0};
	prm->has_block = true;
	prm->block_loc = next(p)->loc;
	if (!at(p, BLK_TOK_LPAREN)) {
		expected(p, "'(' after 'block'");
		return;
	}
	next(p);
	do
		parse_bdim(p, &dims, &locs);
	while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	prm->block = dims.data;
	prm->block_locs = locs.data;
	prm->nblock = dims.n;
	if (at(p, BLK_TOK_INDEX))
		parse_index_map(p, prm);
}

/* Whether the current token is the word w (a word, not a keyword, so it
 * stays free as a name elsewhere). */
static bool at_word(Parser *p, const char *w)
{
	size_t n = strlen(w);
	return at(p, BLK_TOK_IDENT) && tok(p)->len == n && memcmp(tok(p)->text, w, n) == 0;
}

/* access = ( "in" | "out" | "inout" | "scratch" | "prefetch" ) [ "symmetric" ]
 *        | "signal" ; */
static void parse_access(Parser *p, BlkAstParam *prm)
{
	static const BlkAstAccess map[] = {BLK_AST_IN, BLK_AST_OUT, BLK_AST_INOUT, BLK_AST_SCRATCH,
	                                   BLK_AST_PREFETCH};
	prm->access_loc = here(p);
	BlkTokKind k = peek(p);
	if (k >= BLK_TOK_IN && k <= BLK_TOK_PREFETCH) {
		prm->access = map[next(p)->kind - BLK_TOK_IN];
		if (at_word(p, "symmetric")) {
			next(p);
			prm->symmetric = true;
		}
		return;
	}
	if (at_word(p, "signal") && peek2(p) == BLK_TOK_LBRACKET) {
		next(p);
		prm->access = BLK_AST_SIGNAL;
		prm->symmetric = true;
		return;
	}
	if (k == BLK_TOK_IDENT || is_dtype_kw(k))
		error_at(p, here(p), "expected an access ('in', 'out', 'inout', 'scratch', "
		         "'prefetch' or 'signal'), found %s", blk_tok_describe(p->a, tok(p)));
	else
		expected(p, "an access ('in', 'out', 'inout', 'scratch', 'prefetch' or 'signal')");
}

/* param = IDENT ":" access [ dtype ] "[" [ expr { "," expr } ] "]" [ blockspec ] ;
 * (the dtype is there for every access but signal) */
static void parse_param(Parser *p, Vec *v)
{
	BlkAstParam *prm = vec_push(p, v, sizeof(BlkAstParam));
	prm->loc = here(p);
	prm->name = expect_ident(p, "a parameter name", NULL);
	expect(p, BLK_TOK_COLON);
	parse_access(p, prm);
	if (prm->access != BLK_AST_SIGNAL)
		prm->dtype = parse_dtype(p);
	parse_shape_list(p, prm);
	if (at(p, BLK_TOK_BLOCK))
		parse_blockspec(p, prm);
}

/* The word `auto` alone as a default (`BM = auto`): a word here, not a
 * keyword, so it stays free as a name elsewhere. */
static bool at_auto(Parser *p)
{
	return at_word(p, "auto") && (peek2(p) == BLK_TOK_COMMA || peek2(p) == BLK_TOK_RBRACKET);
}

/* cparam = IDENT "=" ( "auto" | expr ) ; */
static void parse_cparam(Parser *p, Vec *v)
{
	BlkAstCParam *c = vec_push(p, v, sizeof(BlkAstCParam));
	c->loc = here(p);
	c->name = expect_ident(p, "a compile-time parameter name", NULL);
	expect(p, BLK_TOK_ASSIGN);
	if (at_auto(p)) {
		next(p);
		c->is_auto = true;
		return;
	}
	c->value = parse_expr(p);
}

/* gridaxis = [ "seq" ] expr ; */
static void parse_gridaxis(Parser *p, Vec *v)
{
	BlkAstGridAxis *g = vec_push(p, v, sizeof(BlkAstGridAxis));
	g->loc = here(p);
	g->seq = accept(p, BLK_TOK_SEQ);
	g->extent = parse_expr(p);
}

/* "grid" "(" [ gridaxis { "," gridaxis } [ "," ] ] ")" */
static void parse_grid(Parser *p, BlkAstKernel *k)
{
	Vec v = {0};
	k->has_grid = true;
	k->grid_loc = next(p)->loc;
	expect(p, BLK_TOK_LPAREN);
	if (!at(p, BLK_TOK_RPAREN))
		do
			parse_gridaxis(p, &v);
		while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	k->grid = v.data;
	k->ngrid = v.n;
}

/* "dynamic" "(" IDENT { "," IDENT } [ "," ] ")" -- `dynamic` is a word
 * here, not a keyword, so it stays free as a name elsewhere. */
static void parse_dynamic(Parser *p, BlkAstKernel *k)
{
	Vec names = {0}, locs = {0};
	next(p);
	expect(p, BLK_TOK_LPAREN);
	if (!at(p, BLK_TOK_RPAREN))
		do {
			BlkLoc *l = vec_push(p, &locs, sizeof(BlkLoc));
			const char **n = vec_push(p, &names, sizeof(const char *));
			*n = expect_ident(p, "a launch size name", l);
		} while (more(p, BLK_TOK_RPAREN));
	expect(p, BLK_TOK_RPAREN);
	k->dynamic = names.data;
	k->dynamic_loc = locs.data;
	k->ndynamic = names.n;
}

/* The kernel header up to the body's "{". */
static void parse_header(Parser *p, BlkAstKernel *k)
{
	Vec cps = {0}, prms = {0};
	k->name = expect_ident(p, "a kernel name", &k->name_loc);
	if (accept(p, BLK_TOK_LBRACKET)) {
		do
			parse_cparam(p, &cps);
		while (more(p, BLK_TOK_RBRACKET));
		expect(p, BLK_TOK_RBRACKET);
	}
	if (expect(p, BLK_TOK_LPAREN)) {
		do
			parse_param(p, &prms);
		while (more(p, BLK_TOK_RPAREN));
		expect(p, BLK_TOK_RPAREN);
	}
	if (at(p, BLK_TOK_IDENT) && tok(p)->len == 7 && memcmp(tok(p)->text, "dynamic", 7) == 0 &&
	    peek2(p) == BLK_TOK_LPAREN)
		parse_dynamic(p, k);
	if (at(p, BLK_TOK_GRID))
		parse_grid(p, k);
	k->cparams = cps.data;
	k->ncparams = cps.n;
	k->params = prms.data;
	k->nparams = prms.n;
}

/* kernel = "kernel" IDENT [ "[" cparam { "," cparam } [ "," ] "]" ]
 *          "(" param { "," param } [ "," ] ")"
 *          [ "dynamic" "(" IDENT { "," IDENT } [ "," ] ")" ]
 *          [ "grid" "(" [ gridaxis { "," gridaxis } [ "," ] ] ")" ]
 *          block ; */
static BlkAstKernel *parse_kernel(Parser *p)
{
	BlkAstKernel *k = BLK_NEW(p->a, BlkAstKernel);
	k->loc = next(p)->loc;
	parse_header(p, k);
	if (p->panic) { /* resynchronize at the body */
		while (!at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_KERNEL) && !at(p, BLK_TOK_LBRACE))
			next(p);
		if (!at(p, BLK_TOK_LBRACE))
			return k;
		p->panic = blk_diag_saturated(p->d);
	}
	k->body = parse_block(p, false);
	return k;
}

/* The word `fn` starting a helper: a word at file scope only, so `fn`
 * stays free as a name inside kernels. */
static bool at_fn(Parser *p)
{
	return at(p, BLK_TOK_IDENT) && tok(p)->len == 2 && memcmp(tok(p)->text, "fn", 2) == 0 &&
	       peek2(p) == BLK_TOK_IDENT;
}

/* IDENT { "," IDENT } [ "," ] close, or just close: a helper's or a
 * closure's parameter names. */
static void parse_fn_params(Parser *p, BlkAstFn *f, BlkTokKind close)
{
	Vec names = {0}, locs = {0};
	if (!at(p, close))
		do {
			BlkLoc *loc = vec_push(p, &locs, sizeof(BlkLoc));
			vec_push_ptr(p, &names, (void *)expect_ident(p, "a parameter name", loc));
		} while (more(p, close));
	expect(p, close);
	f->params = names.data;
	f->param_locs = locs.data;
	f->nparams = names.n;
}

/* fn = "fn" IDENT "(" [ IDENT { "," IDENT } [ "," ] ] ")" body ; */
static BlkAstFn *parse_fn(Parser *p)
{
	BlkAstFn *f = BLK_NEW(p->a, BlkAstFn);
	f->loc = next(p)->loc;
	f->name = expect_ident(p, "a helper name", &f->name_loc);
	if (expect(p, BLK_TOK_LPAREN))
		parse_fn_params(p, f, BLK_TOK_RPAREN);
	f->body = parse_block(p, true);
	return f;
}

/* file = { kernel | fn } EOF ; */
static BlkAstFile *parse_file(Parser *p)
{
	BlkAstFile *f = BLK_NEW(p->a, BlkAstFile);
	Vec v = {0}, fns = {0};
	f->src = p->src;
	while (!at(p, BLK_TOK_EOF)) {
		if (at_fn(p)) {
			vec_push_ptr(p, &fns, parse_fn(p));
		} else if (at(p, BLK_TOK_IDENT) && tok(p)->len == 2 && memcmp(tok(p)->text, "fn", 2) == 0 &&
		           peek2(p) != BLK_TOK_EOF && isalpha((unsigned char)p->t[p->pos + 1].text[0])) {
			/* `fn` and then no name: a keyword (`fn f16(a)`, `fn when()`) */
			const BlkToken *t = &p->t[p->pos + 1];
			error_at(p, t->loc, "`%.*s` is a keyword, so no helper's name: call it something else",
			         (int)t->len, t->text);
			while (!at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_KERNEL) && !at_fn(p))
				next(p);
		} else if (!at(p, BLK_TOK_KERNEL)) {
			expected(p, "'kernel' or 'fn'");
			while (!at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_KERNEL) && !at_fn(p))
				next(p);
		} else {
			vec_push_ptr(p, &v, parse_kernel(p));
		}
		if (p->panic) {
			while (!at(p, BLK_TOK_EOF) && !at(p, BLK_TOK_KERNEL) && !at_fn(p))
				next(p);
			p->panic = blk_diag_saturated(p->d);
		}
	}
	f->kernels = v.data;
	f->nkernels = v.n;
	f->fns = fns.data;
	f->nfns = fns.n;
	return f;
}

BlkAstFile *blk_parse(BlkArena *a, BlkDiag *d, const BlkSource *src)
{
	Parser p = {0};
	int before = blk_diag_error_count(d);
	p.a = a;
	p.d = d;
	p.src = src;
	p.t = blk_lex(a, d, src, &p.n);
	BlkAstFile *f = parse_file(&p);
	return blk_diag_error_count(d) == before ? f : NULL;
}
