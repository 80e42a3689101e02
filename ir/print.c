/* print.c - the IR's textual form (docs/ir.md specifies it).
 *
 * The printer is generic: an op prints as its results, name, operands,
 * attributes, result types and regions, whatever its kind, so ops added to
 * ops.def later print (and parse, ir/parse.c) with no change here.
 *
 * Value names.  Each top-level region (an index map, a kernel body) is one
 * name scope.  A value prints as %hint when its name hint is a valid
 * identifier; when several values share a hint the first keeps it and the
 * others get hint.1, hint.2, ... (skipping hints that exist); values with no
 * hint are numbered %0, %1, ... in text order.  Parsing keeps the printed
 * names as hints, so printing again gives the same text.
 */
#include "ir.h"
#include "support/strmap.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Printer {
	FILE *out;
	BlkArena *a;        /* temporary: names of one scope */
	BlkValue **vals;    /* vals[i] prints as names[i]; v->id == i */
	const char **names;
	int n, cap;
} Printer;

/* ---- naming ------------------------------------------------------------ */

static bool valid_hint(const char *s)
{
	if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.')
			return false;
	return true;
}

static void add_value(Printer *p, BlkValue *v)
{
	if (p->n == p->cap) {
		int cap = p->cap ? p->cap * 2 : 64;
		p->vals = blk_arena_grow(p->a, p->vals, (size_t)p->n, (size_t)cap, sizeof *p->vals);
		p->names = blk_arena_grow(p->a, p->names, (size_t)p->n, (size_t)cap, sizeof *p->names);
		p->cap = cap;
	}
	v->id = p->n;
	p->vals[p->n++] = v;
}

/* Text order: an op's results, then its regions' args and ops. */
static void collect(Printer *p, const BlkRegion *r)
{
	for (int i = 0; i < r->nargs; i++)
		add_value(p, r->args[i]);
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			add_value(p, op->results[i]);
		for (int i = 0; i < op->nregions; i++)
			collect(p, op->regions[i]);
	}
}

/* States of a name in a scope's map: some value hints it; it is given. */
static char hint_mark, taken_mark;
#define HINT ((void *)&hint_mark)
#define TAKEN ((void *)&taken_mark)

/* hint.N for the smallest N >= 1 that no hint and no given name uses. */
static const char *fresh_name(Printer *p, BlkStrMap *used, const char *hint)
{
	for (int k = 1;; k++) {
		const char *s = blk_arena_printf(p->a, "%s.%d", hint, k);
		if (!blk_strmap_get(used, s)) {
			blk_strmap_put(used, s, TAKEN);
			return s;
		}
	}
}

static void name_scope(Printer *p, const BlkRegion *r)
{
	BlkStrMap used = { 0 };
	p->n = 0;
	collect(p, r);
	for (int i = 0; i < p->n; i++)
		if (valid_hint(p->vals[i]->name))
			blk_strmap_put(&used, p->vals[i]->name, HINT);
	int num = 0;
	for (int i = 0; i < p->n; i++) {
		const char *h = p->vals[i]->name;
		if (!valid_hint(h)) {
			p->names[i] = blk_arena_printf(p->a, "%d", num++);
		} else if (blk_strmap_get(&used, h) == HINT) { /* first holder of h */
			blk_strmap_put(&used, h, TAKEN);
			p->names[i] = h;
		} else {
			p->names[i] = fresh_name(p, &used, h);
		}
	}
	blk_strmap_free(&used);
}

static void print_value(Printer *p, const BlkValue *v)
{
	/* An operand from outside the scope (invalid IR) still prints. */
	bool ok = v && v->id >= 0 && v->id < p->n && p->vals[v->id] == v;
	fprintf(p->out, "%%%s", ok ? p->names[v->id] : "?");
}

/* ---- literals ---------------------------------------------------------- */

/* The shortest %g form that reads back to the same double, always with a
 * '.' or an exponent so it reads back as a float. */
static void print_double(FILE *out, double v)
{
	if (isnan(v)) {
		fputs("nan", out);
		return;
	}
	if (isinf(v)) {
		fputs(v < 0 ? "-inf" : "inf", out);
		return;
	}
	char buf[64];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		double back = strtod(buf, NULL);
		if (back == v && signbit(back) == signbit(v))
			break;
	}
	fputs(buf, out);
	if (!strpbrk(buf, ".e"))
		fputs(".0", out);
}

static void print_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 32 || c >= 127)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void print_index(FILE *out, int n, const BlkIndex *v)
{
	fputc('[', out);
	for (int i = 0; i < n; i++) {
		fputs(i ? ", " : "", out);
		if (v[i].kind == BLK_INDEX_FULL)
			fputc(':', out);
		else if (v[i].kind == BLK_INDEX_SCALAR)
			fputc('i', out);
		else if (v[i].kind == BLK_INDEX_GATHER)
			fputc('g', out);
		else {
			fputs("ds(", out);
			blk_sym_print(out, v[i].size);
			if (blk_index_step(&v[i]) > 1)
				fprintf(out, ", %lld", (long long)v[i].step);
			fputc(')', out);
		}
	}
	fputc(']', out);
}

static void print_attr(FILE *out, const BlkAttr *at)
{
	fprintf(out, "%s = ", at->name);
	switch (at->kind) {
	case BLK_ATTR_INT: fprintf(out, "%" PRId64, at->i); break;
	case BLK_ATTR_FLOAT: print_double(out, at->f); break;
	case BLK_ATTR_STRING: print_string(out, at->s); break;
	case BLK_ATTR_DTYPE: fputs(blk_dtype_name(at->dtype), out); break;
	case BLK_ATTR_INDEX: print_index(out, at->index.n, at->index.v); break;
	}
}

/* ---- ops and regions --------------------------------------------------- */

static void print_region(Printer *p, const BlkRegion *r, int indent);

static void print_list_values(Printer *p, int n, BlkValue *const *v)
{
	for (int i = 0; i < n; i++) {
		fputs(i ? ", " : "", p->out);
		print_value(p, v[i]);
	}
}

static void print_op(Printer *p, const BlkOp *op, int indent)
{
	fprintf(p->out, "%*s", indent * 2, "");
	if (op->nresults) {
		print_list_values(p, op->nresults, op->results);
		fputs(" = ", p->out);
	}
	fputs(blk_op_name(op->kind), p->out);
	if (op->noperands) {
		fputc(' ', p->out);
		print_list_values(p, op->noperands, op->operands);
	}
	for (int i = 0; i < op->nattrs; i++) {
		fputs(i ? ", " : " {", p->out);
		print_attr(p->out, &op->attrs[i]);
	}
	fputs(op->nattrs ? "}" : "", p->out);
	for (int i = 0; i < op->nresults; i++) {
		fputs(i ? ", " : " : ", p->out);
		blk_type_print(p->out, &op->results[i]->type);
	}
	for (int i = 0; i < op->nregions; i++) {
		fputc(' ', p->out);
		print_region(p, op->regions[i], indent);
	}
	fputc('\n', p->out);
}

/* "{", the args line, the ops one level deeper, "}" at indent. */
static void print_region(Printer *p, const BlkRegion *r, int indent)
{
	if (!r->nargs && !r->first) {
		fputs("{}", p->out);
		return;
	}
	fputs("{\n", p->out);
	if (r->nargs) {
		fprintf(p->out, "%*s^(", indent * 2, "");
		for (int i = 0; i < r->nargs; i++) {
			fputs(i ? ", " : "", p->out);
			print_value(p, r->args[i]);
			fputs(": ", p->out);
			blk_type_print(p->out, &r->args[i]->type);
		}
		fputs("):\n", p->out);
	}
	for (const BlkOp *op = r->first; op; op = op->next)
		print_op(p, op, indent + 1);
	fprintf(p->out, "%*s}", indent * 2, "");
}

static void print_scope(Printer *p, const BlkRegion *r, int indent)
{
	name_scope(p, r);
	print_region(p, r, indent);
}

/* ---- kernels ----------------------------------------------------------- */

static void print_syms(FILE *out, int n, const BlkSym *const *s)
{
	for (int i = 0; i < n; i++) {
		fputs(i ? ", " : "", out);
		if (s[i])
			blk_sym_print(out, s[i]);
		else
			fputc('?', out);
	}
}

static void print_cparam(FILE *out, const BlkCParam *c)
{
	fprintf(out, "%s = %s", c->name, c->is_auto ? "auto " : ""); /* auto: its stand-in after */
	switch (c->kind) {
	case BLK_CPARAM_INT: fprintf(out, "%" PRId64, c->i); break;
	case BLK_CPARAM_FLOAT: print_double(out, c->f); break;
	case BLK_CPARAM_BOOL: fputs(c->i ? "true" : "false", out); break;
	case BLK_CPARAM_DTYPE: fputs(blk_dtype_name(c->dtype), out); break;
	}
}

static void print_header(FILE *out, const BlkKernel *k)
{
	fprintf(out, "kernel @%s {\n  cparams [", k->name);
	for (int i = 0; i < k->ncparams; i++) {
		fputs(i ? ", " : "", out);
		print_cparam(out, &k->cparams[i]);
	}
	fputs("]\n  sizes (", out);
	for (int i = 0; i < k->nsizes; i++) {
		int64_t dyn = k->size_dyn ? k->size_dyn[i] : 0;
		fprintf(out, "%s%s", i ? ", " : "", k->sizes[i]);
		if (dyn > 0)
			fputs(" dynamic", out);
		if (dyn > 1) /* what specialization knows: a divisor */
			fprintf(out, "(%lld)", (long long)dyn);
	}
	fputs(")\n  grid (", out);
	for (int i = 0; i < k->grid_rank; i++) {
		fputs(i ? ", " : "", out);
		fputs(k->grid_seq[i] ? "seq " : "", out);
		print_syms(out, 1, &k->grid[i]);
	}
	fprintf(out, ")\n  warps %d stages %d\n", k->num_warps, k->num_stages);
}

/* ---- the launch header -------------------------------------------------- */

static const char *const cuda_axes[3] = { "x", "y", "z" };

static void print_launch_grid(FILE *out, const BlkLaunch *l, int rank)
{
	fputs("    grid (", out);
	print_syms(out, 3, l->grid);
	fputc(')', out);
	if (l->persist > 0)
		fprintf(out, " persist %d", l->persist);
	if (l->cluster > 1)
		fprintf(out, " cluster %d", l->cluster);
	fputs("\n    axes (", out);
	for (int i = 0; i < rank; i++) {
		fputs(i ? ", " : "", out);
		if (l->axis[i] < 0) {
			fputs("seq", out);
			continue;
		}
		fputs(cuda_axes[l->axis[i]], out);
		if (l->div[i]) {
			fputs(" div ", out);
			blk_sym_print(out, l->div[i]);
			fputs(" mod ", out);
			blk_sym_print(out, l->mod[i]);
		}
		if (l->merge[i] > 1)
			fprintf(out, " merge %d", l->merge[i]);
	}
	fputs(")\n", out);
}

static void print_strides(FILE *out, const BlkLaunchArg *g, int rank)
{
	fputs(" strides (", out);
	for (int d = 0; d < rank; d++) {
		fputs(d ? ", " : "", out);
		if (g->strides[d] < 0)
			fprintf(out, "?%" PRId64, -g->strides[d]);
		else
			fprintf(out, "%" PRId64, g->strides[d]);
	}
	fprintf(out, ") align %d", g->align);
}

static void print_arg(FILE *out, const BlkLaunchArg *g, const BlkKernel *k)
{
	static const char *const kinds[] = { "ptr", "tmap", "size", "stride", "peers", "rank", "world",
		                             "timeout" };
	if (g->kind >= BLK_ARG_RANK) {
		fprintf(out, "    arg %s\n", kinds[g->kind]);
		return;
	}
	fprintf(out, "    arg %s ", kinds[g->kind]);
	if (g->kind == BLK_ARG_SIZE) {
		fprintf(out, "%s\n", g->size);
		return;
	}
	fputs(k->params[g->param].name, out);
	if (g->kind == BLK_ARG_PTR)
		print_strides(out, g, k->params[g->param].rank);
	else if (g->kind == BLK_ARG_TMAP) {
		fprintf(out, " box (%d, %d) swizzle %d%s", g->box[0], g->box[1], g->swizzle, g->trans ? " trans" : "");
		if (g->rows != k->params[g->param].rank - 2)
			fprintf(out, " rows %d", g->rows);
	} else if (g->kind == BLK_ARG_STRIDE)
		fprintf(out, " %d", g->dim);
	fputc('\n', out);
}

void blk_launch_print(FILE *out, const BlkLaunch *l, const BlkKernel *k)
{
	fputs("  launch {\n", out);
	if (l->grid[0])
		print_launch_grid(out, l, k->grid_rank);
	fprintf(out, "    threads %d smem %" PRId64 " isa %d\n", l->threads, l->smem, l->isa);
	for (int i = 0; i < l->nargs; i++)
		print_arg(out, &l->args[i], k);
	fputs("  }\n", out);
}

static void print_param(Printer *p, const BlkParam *pa)
{
	FILE *out = p->out;
	fprintf(out, "  param %s: %s%s %s[", pa->name,
	        pa->prefetch ? "prefetch" : pa->signal ? "signal" : blk_access_name(pa->access),
	        pa->symmetric && !pa->signal ? " symmetric" : "", blk_dtype_name(pa->dtype));
	print_syms(out, pa->rank, pa->shape);
	fputc(']', out);
	if (pa->access != BLK_ACCESS_SCRATCH) {
		fputs(" block [", out);
		for (int d = 0; d < pa->rank; d++) {
			fputs(d ? ", " : "", out);
			if (pa->squeezed[d])
				fputs("None", out);
			else
				print_syms(out, 1, pa->block[d] ? &pa->block[d] : &pa->shape[d]);
		}
		fputc(']', out);
	}
	if (pa->index_map) {
		fputs(" index ", out);
		print_scope(p, pa->index_map, 1);
	}
	fputc('\n', out);
}

void blk_ir_print_kernel(FILE *out, const BlkKernel *k)
{
	Printer p = { .out = out, .a = blk_arena_create() };
	print_header(out, k);
	for (int i = 0; i < k->nparams; i++)
		print_param(&p, &k->params[i]);
	if (k->launch)
		blk_launch_print(out, k->launch, k);
	fputs("  body ", out);
	if (k->body)
		print_scope(&p, k->body, 1);
	else
		fputs("{}", out);
	fputs("\n}\n", out);
	blk_arena_destroy(p.a);
}

void blk_ir_print_module(FILE *out, const BlkModule *m)
{
	for (const BlkKernel *k = m->first; k; k = k->next) {
		if (k != m->first)
			fputc('\n', out);
		blk_ir_print_kernel(out, k);
	}
}
