/* ast.c - AST constructors and the tree dump (`blkc --emit=ast`).
 *
 * The dump is an S-expression with one node per line: `(kind fields @L:C`,
 * children indented two spaces below it, and the closing parens at the end
 * of the last child's line.  Each line starts with the node's kind, so
 * FileCheck patterns can pin the shape of the tree line by line.
 */
#include "frontend/ast.h"
#include "frontend/frontend.h"

static const char *expr_names[] = {
#define X(e, n) n,
	BLK_AST_EXPRS(X)
#undef X
};
static const char *stmt_names[] = {
#define X(e, n) n,
	BLK_AST_STMTS(X)
#undef X
};
/* From ir.h's table directly, so the dump needs nothing else of ir/. */
static const char *dtype_names[] = {
#define X(e, n, b) n,
	BLK_DTYPES(X)
#undef X
};
static const char *op_spellings[] = {
#define X(e, s) s,
	BLK_AST_OPS(X)
#undef X
};

const char *blk_ast_expr_kind_name(BlkAstExprKind k)
{
	return k < BLK_AST_NUM_EXPRS ? expr_names[k] : "?";
}

const char *blk_ast_stmt_kind_name(BlkAstStmtKind k)
{
	return k < BLK_AST_NUM_STMTS ? stmt_names[k] : "?";
}

const char *blk_ast_op_spelling(BlkAstOp op)
{
	return op < BLK_AST_NUM_OPS ? op_spellings[op] : "?";
}

const char *blk_ast_access_name(BlkAstAccess acc)
{
	static const char *names[] = {"in", "out", "inout", "scratch", "prefetch", "signal"};
	return acc <= BLK_AST_SIGNAL ? names[acc] : "?";
}

BlkAstExpr *blk_ast_expr_new(BlkArena *a, BlkAstExprKind k, BlkLoc loc)
{
	BlkAstExpr *e = BLK_NEW(a, BlkAstExpr);
	e->kind = k;
	e->loc = loc;
	e->height = 1;
	return e;
}

BlkAstStmt *blk_ast_stmt_new(BlkArena *a, BlkAstStmtKind k, BlkLoc loc)
{
	BlkAstStmt *s = BLK_NEW(a, BlkAstStmt);
	s->kind = k;
	s->loc = loc;
	return s;
}

/* ---- the dump -------------------------------------------------------------- */

/* Opens a node on a new line: newline, indentation, "(" and the head text. */
static void open_node(FILE *out, int depth, const char *head)
{
	fprintf(out, "\n%*s(%s", depth * 2, "", head);
}

static void print_loc(FILE *out, BlkLoc loc)
{
	fprintf(out, " @%u:%u", loc.line, loc.col);
}

static void print_quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void print_block(FILE *out, const BlkAstBlock *b, int depth);

/* `(fn NAME a b @L:C (block ...))`, a closure without the name. */
static void print_fn(FILE *out, const BlkAstFn *f, int depth)
{
	open_node(out, depth, f->name ? "fn " : "params");
	fputs(f->name ? f->name : "", out);
	for (int i = 0; i < f->nparams; i++)
		fprintf(out, " %s", f->params[i]);
	print_loc(out, f->loc);
	print_block(out, f->body, depth + 1);
	fputc(')', out);
}

static void print_indices(FILE *out, const BlkAstIndex *idx, int n, int depth)
{
	open_node(out, depth, "indices");
	for (int i = 0; i < n; i++) {
		const BlkAstIndex *x = &idx[i];
		switch (x->kind) {
		case BLK_AST_IDX_SLICE:
			open_node(out, depth + 1, "slice");
			break;
		case BLK_AST_IDX_ELLIPSIS:
			open_node(out, depth + 1, "ellipsis");
			break;
		case BLK_AST_IDX_NONE:
			open_node(out, depth + 1, "newaxis");
			break;
		case BLK_AST_IDX_DS:
			open_node(out, depth + 1, "ds");
			break;
		case BLK_AST_IDX_EXPR:
			blk_ast_print_expr(out, x->a, depth + 1);
			continue;
		}
		print_loc(out, x->loc);
		if (x->kind == BLK_AST_IDX_DS) {
			blk_ast_print_expr(out, x->a, depth + 2);
			blk_ast_print_expr(out, x->b, depth + 2);
		}
		static const char *const part[3] = { "start", "end", "step" };
		for (int j = 0; j < 3; j++) {
			const BlkAstExpr *e = j == 0 ? x->a : j == 1 ? x->b : x->c;
			if (!e || (x->kind != BLK_AST_IDX_SLICE && (x->kind != BLK_AST_IDX_DS || j < 2)))
				continue;
			open_node(out, depth + 2, part[j]);
			blk_ast_print_expr(out, e, depth + 3);
			fputc(')', out);
		}
		fputc(')', out);
	}
	fputc(')', out);
}

static void print_args(FILE *out, const BlkAstArg *args, int n, int depth)
{
	for (int i = 0; i < n; i++) {
		if (!args[i].name) {
			blk_ast_print_expr(out, args[i].value, depth);
			continue;
		}
		open_node(out, depth, "kwarg ");
		fputs(args[i].name, out);
		print_loc(out, args[i].loc);
		blk_ast_print_expr(out, args[i].value, depth + 1);
		fputc(')', out);
	}
}

static void print_fori(FILE *out, const BlkAstExpr *e, int depth)
{
	print_args(out, e->args, e->nargs, depth);
	open_node(out, depth, "ivar ");
	fputs(e->ivar, out);
	print_loc(out, e->ivar_loc);
	fputc(')', out);
	if (e->carry != BLK_AST_CARRY_NONE) {
		open_node(out, depth, e->carry == BLK_AST_CARRY_TUPLE ? "carries" : "carry");
		for (int i = 0; i < e->ncarries; i++)
			fprintf(out, " %s", e->carries[i]);
		print_loc(out, e->carry_locs[0]);
		fputc(')', out);
	}
	print_block(out, e->body, depth);
}

/* The head of an expression node: kind and salient fields. */
static void print_expr_head(FILE *out, const BlkAstExpr *e)
{
	fprintf(out, "(%s", blk_ast_expr_kind_name(e->kind));
	switch (e->kind) {
	case BLK_AST_INT: fprintf(out, " %lld", (long long)e->ival); break;
	case BLK_AST_FLOAT: fprintf(out, " %s", e->text); break;
	case BLK_AST_BOOL: fputs(e->ival ? " true" : " false", out); break;
	case BLK_AST_NAME:
	case BLK_AST_ATTR: fprintf(out, " %s", e->name); break;
	case BLK_AST_CALL: fprintf(out, " %s%s", e->method ? "." : "", e->name); break;
	case BLK_AST_DTYPE: fprintf(out, " %s", e->dtype < BLK_NUM_DTYPES ? dtype_names[e->dtype] : "?"); break;
	case BLK_AST_UNARY:
	case BLK_AST_BINARY: fprintf(out, " %s", blk_ast_op_spelling(e->op)); break;
	default: break;
	}
	print_loc(out, e->loc);
}

void blk_ast_print_expr(FILE *out, const BlkAstExpr *e, int depth)
{
	fprintf(out, "\n%*s", depth * 2, "");
	print_expr_head(out, e);
	int d = depth + 1;
	switch (e->kind) {
	case BLK_AST_BINARY:
		blk_ast_print_expr(out, e->lhs, d);
		blk_ast_print_expr(out, e->rhs, d);
		break;
	case BLK_AST_UNARY:
	case BLK_AST_TRANSPOSE:
	case BLK_AST_ATTR:
		blk_ast_print_expr(out, e->lhs, d);
		break;
	case BLK_AST_ASTYPE:
		blk_ast_print_expr(out, e->lhs, d);
		blk_ast_print_expr(out, e->rhs, d);
		break;
	case BLK_AST_INDEX:
	case BLK_AST_AT:
		blk_ast_print_expr(out, e->lhs, d);
		print_indices(out, e->idx, e->nidx, d);
		break;
	case BLK_AST_CALL: print_args(out, e->args, e->nargs, d); break;
	case BLK_AST_FORI: print_fori(out, e, d); break;
	case BLK_AST_CLOSURE: print_fn(out, e->fn, d); break;
	case BLK_AST_TUPLE:
		for (int i = 0; i < e->nelems; i++)
			blk_ast_print_expr(out, e->elems[i], d);
		break;
	default: break;
	}
	fputc(')', out);
}

static void print_exprs(FILE *out, const char *head, const BlkLoc *loc,
                        BlkAstExpr *const *v, int n, int depth)
{
	open_node(out, depth, head);
	if (loc)
		print_loc(out, *loc);
	for (int i = 0; i < n; i++)
		if (v[i])
			blk_ast_print_expr(out, v[i], depth + 1);
		else
			open_node(out, depth + 1, "none)");
	fputc(')', out);
}

static void print_param(FILE *out, const BlkAstParam *p, int depth)
{
	open_node(out, depth, "param ");
	fprintf(out, "%s %s%s", p->name, blk_ast_access_name(p->access),
	        p->symmetric && p->access != BLK_AST_SIGNAL ? " symmetric" : "");
	print_loc(out, p->loc);
	if (p->dtype)
		blk_ast_print_expr(out, p->dtype, depth + 1);
	print_exprs(out, "shape", NULL, p->shape, p->nshape, depth + 1);
	if (p->has_block) {
		print_exprs(out, "block", &p->block_loc, p->block, p->nblock, depth + 1);
		if (p->has_index) {
			open_node(out, depth + 1, "index");
			for (int i = 0; i < p->nindex_params; i++)
				fprintf(out, " %s", p->index_params[i]);
			print_loc(out, p->index_loc);
			for (int i = 0; i < p->nindex_map; i++)
				blk_ast_print_expr(out, p->index_map[i], depth + 2);
			fputc(')', out);
		}
	}
	fputc(')', out);
}

static void print_stmt(FILE *out, const BlkAstStmt *s, int depth)
{
	open_node(out, depth, blk_ast_stmt_kind_name(s->kind));
	int d = depth + 1;
	switch (s->kind) {
	case BLK_AST_LET:
		fputs(s->tuple_pattern ? " (" : " ", out);
		for (int i = 0; i < s->nnames; i++)
			fprintf(out, "%s%s", i ? " " : "", s->names[i]);
		fputs(s->tuple_pattern ? ")" : "", out);
		print_loc(out, s->loc);
		blk_ast_print_expr(out, s->value, d);
		break;
	case BLK_AST_STORE:
		print_loc(out, s->loc);
		blk_ast_print_expr(out, s->target, d);
		print_indices(out, s->idx, s->nidx, d);
		blk_ast_print_expr(out, s->value, d);
		break;
	case BLK_AST_WHEN:
		print_loc(out, s->loc);
		blk_ast_print_expr(out, s->value, d);
		print_block(out, s->then, d);
		if (s->els) {
			open_node(out, d, "else");
			print_block(out, s->els, d + 1);
			fputc(')', out);
		}
		break;
	case BLK_AST_SCOPED:
		print_loc(out, s->loc);
		for (int i = 0; i < s->nscratch; i++)
			print_param(out, &s->scratch[i], d);
		print_block(out, s->then, d);
		break;
	case BLK_AST_PRINT:
		fputc(' ', out);
		print_quoted(out, s->str);
		print_loc(out, s->loc);
		for (int i = 0; i < s->nargs; i++)
			blk_ast_print_expr(out, s->args[i], d);
		break;
	case BLK_AST_EXPR:
		print_loc(out, s->loc);
		blk_ast_print_expr(out, s->value, d);
		break;
	default: break;
	}
	fputc(')', out);
}

static void print_block(FILE *out, const BlkAstBlock *b, int depth)
{
	open_node(out, depth, "block");
	print_loc(out, b->loc);
	for (int i = 0; i < b->nstmts; i++)
		print_stmt(out, b->stmts[i], depth + 1);
	if (b->result) {
		open_node(out, depth + 1, "result");
		blk_ast_print_expr(out, b->result, depth + 2);
		fputc(')', out);
	}
	fputc(')', out);
}

static void print_kernel(FILE *out, const BlkAstKernel *k, int depth)
{
	open_node(out, depth, "kernel ");
	fputs(k->name, out);
	print_loc(out, k->loc);
	int d = depth + 1;
	for (int i = 0; i < k->ncparams; i++) {
		open_node(out, d, "cparam ");
		fputs(k->cparams[i].name, out);
		print_loc(out, k->cparams[i].loc);
		if (k->cparams[i].is_auto)
			fputs(" auto", out);
		else
			blk_ast_print_expr(out, k->cparams[i].value, d + 1);
		fputc(')', out);
	}
	for (int i = 0; i < k->nparams; i++)
		print_param(out, &k->params[i], d);
	if (k->has_grid) {
		open_node(out, d, "grid");
		print_loc(out, k->grid_loc);
		for (int i = 0; i < k->ngrid; i++) {
			open_node(out, d + 1, k->grid[i].seq ? "axis seq" : "axis");
			print_loc(out, k->grid[i].loc);
			blk_ast_print_expr(out, k->grid[i].extent, d + 2);
			fputc(')', out);
		}
		fputc(')', out);
	}
	print_block(out, k->body, d);
	fputc(')', out);
}

void blk_ast_print(FILE *out, const struct BlkAstFile *f)
{
	fprintf(out, "(file %s", f->src ? f->src->name : "?");
	for (int i = 0; i < f->nfns; i++)
		print_fn(out, f->fns[i], 1);
	for (int i = 0; i < f->nkernels; i++)
		print_kernel(out, f->kernels[i], 1);
	fputs(")\n", out);
}
