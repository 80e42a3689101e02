/* ast_clone.c - deep copies of helper bodies.
 *
 * The checker notes what it learns about a node in a table keyed by the
 * node's address, and lowering reads the notes back.  A helper called
 * twice, at two dtypes, needs two sets of notes, so each call inlines a
 * copy of the helper's body: the same locations (errors point into the
 * helper), new addresses.  Names, strings and locations are shared; every
 * node and every array of nodes is copied.
 */
#include <string.h>

#include "frontend/ast.h"

static BlkAstExpr *clone_expr(BlkArena *a, const BlkAstExpr *e);
static BlkAstStmt *clone_stmt(BlkArena *a, const BlkAstStmt *s);

/* n elements of size sz (NULL stays NULL). */
static void *dup(BlkArena *a, const void *p, int n, size_t sz)
{
	if (!p || n <= 0)
		return NULL;
	void *q = blk_arena_alloc(a, sz * (size_t)n);
	memcpy(q, p, sz * (size_t)n);
	return q;
}

static BlkAstExpr **clone_exprs(BlkArena *a, BlkAstExpr *const *v, int n)
{
	BlkAstExpr **w = dup(a, v, n, sizeof *v);
	for (int i = 0; w && i < n; i++)
		w[i] = clone_expr(a, v[i]);
	return w;
}

static BlkAstIndex *clone_indices(BlkArena *a, const BlkAstIndex *idx, int n)
{
	BlkAstIndex *w = dup(a, idx, n, sizeof *idx);
	for (int i = 0; w && i < n; i++) {
		w[i].a = clone_expr(a, idx[i].a);
		w[i].b = clone_expr(a, idx[i].b);
		w[i].c = clone_expr(a, idx[i].c);
	}
	return w;
}

static BlkAstFn *clone_fn(BlkArena *a, const BlkAstFn *f)
{
	BlkAstFn *g = BLK_NEW(a, BlkAstFn);
	*g = *f;
	g->body = blk_ast_clone_block(a, f->body);
	return g;
}

static BlkAstExpr *clone_expr(BlkArena *a, const BlkAstExpr *e)
{
	if (!e)
		return NULL;
	BlkAstExpr *c = BLK_NEW(a, BlkAstExpr);
	*c = *e;
	c->lhs = clone_expr(a, e->lhs);
	c->rhs = clone_expr(a, e->rhs);
	c->args = dup(a, e->args, e->nargs, sizeof *e->args);
	for (int i = 0; c->args && i < e->nargs; i++)
		c->args[i].value = clone_expr(a, e->args[i].value);
	c->elems = clone_exprs(a, e->elems, e->nelems);
	c->idx = clone_indices(a, e->idx, e->nidx);
	c->body = e->body ? blk_ast_clone_block(a, e->body) : NULL;
	c->fn = e->fn ? clone_fn(a, e->fn) : NULL;
	return c;
}

/* A scoped statement's scratch declarations: their shapes are expressions. */
static BlkAstParam *clone_scratch(BlkArena *a, const BlkAstParam *p, int n)
{
	BlkAstParam *w = dup(a, p, n, sizeof *p);
	for (int i = 0; w && i < n; i++) {
		w[i].dtype = clone_expr(a, p[i].dtype);
		w[i].shape = clone_exprs(a, p[i].shape, p[i].nshape);
	}
	return w;
}

static BlkAstStmt *clone_stmt(BlkArena *a, const BlkAstStmt *s)
{
	BlkAstStmt *c = BLK_NEW(a, BlkAstStmt);
	*c = *s;
	c->value = clone_expr(a, s->value);
	c->target = clone_expr(a, s->target);
	c->idx = clone_indices(a, s->idx, s->nidx);
	c->then = s->then ? blk_ast_clone_block(a, s->then) : NULL;
	c->els = s->els ? blk_ast_clone_block(a, s->els) : NULL;
	c->scratch = clone_scratch(a, s->scratch, s->nscratch);
	c->args = clone_exprs(a, s->args, s->nargs);
	return c;
}

BlkAstBlock *blk_ast_clone_block(BlkArena *a, const BlkAstBlock *b)
{
	BlkAstBlock *c = BLK_NEW(a, BlkAstBlock);
	*c = *b;
	c->stmts = dup(a, b->stmts, b->nstmts, sizeof *b->stmts);
	for (int i = 0; c->stmts && i < b->nstmts; i++)
		c->stmts[i] = clone_stmt(a, b->stmts[i]);
	c->result = clone_expr(a, b->result);
	return c;
}

BlkAstExpr *blk_ast_clone_expr(BlkArena *a, const BlkAstExpr *e)
{
	return clone_expr(a, e);
}
