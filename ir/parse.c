/* parse.c - reads the IR's textual form back (docs/ir.md has the grammar).
 *
 * A hand-written lexer and a recursive-descent parser, one function per
 * grammar rule with the rule above it.  Like the printer it is generic over
 * ops: any name in ops.def parses, with its operands, attributes, result
 * types and regions; only counts of known ops are checked here (wrong types
 * and dominance are the verifier's).  Newlines matter in one place: an op's
 * operands, attributes, types and regions start on the op's own line, so an
 * op with nothing after its name still ends where its line ends.
 *
 * The first error stops the parse (longjmp back to blk_ir_parse): the text
 * is usually machine-written, and one precise message beats a cascade.
 */
#include "ir.h"
#include "layout.h"
#include "support/limits.h"
#include "support/strmap.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
	T_EOF, T_IDENT, T_VALUE, T_GLOBAL, T_INT, T_FLOAT, T_STRING, T_PUNCT,
} TokKind;

typedef struct Tok {
	TokKind kind;
	const char *p;  /* start in the source */
	int len;
	BlkLoc loc;
	bool bol;       /* first token on its line */
} Tok;

typedef struct Parser {
	BlkArena *a;
	BlkDiag *d;
	const BlkSource *src;
	const char *p, *end;
	unsigned line, col;
	Tok tok, next;  /* current token and one of lookahead */
	BlkStrMap values; /* name -> BlkValue* in the current scope */
	BlkKernel *k;
	int regions;    /* regions open around the current op */
	int sym_nodes;  /* operators and parentheses of the current size expression */
	jmp_buf fail;
} Parser;

static _Noreturn void fail(Parser *P, BlkLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static _Noreturn void fail(Parser *P, BlkLoc loc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	blk_error(P->d, loc, "%s", msg);
	longjmp(P->fail, 1);
}

/* ---- lexer ------------------------------------------------------------- */

static void advance(Parser *P)
{
	if (*P->p == '\n') {
		P->line++;
		P->col = 1;
	} else {
		P->col++;
	}
	P->p++;
}

/* Skips blanks and `;` comments; true if a newline was crossed. */
static bool skip_space(Parser *P)
{
	bool nl = false;
	while (P->p < P->end) {
		if (*P->p == ';')
			while (P->p < P->end && *P->p != '\n')
				advance(P);
		else if (isspace((unsigned char)*P->p))
			nl |= *P->p == '\n', advance(P);
		else
			break;
	}
	return nl;
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

static void lex_number(Parser *P, Tok *t)
{
	t->kind = T_INT;
	while (P->p < P->end && isdigit((unsigned char)*P->p))
		advance(P);
	if (P->p < P->end && *P->p == '.') {
		t->kind = T_FLOAT;
		do
			advance(P);
		while (P->p < P->end && isdigit((unsigned char)*P->p));
	}
	if (P->p < P->end && (*P->p == 'e' || *P->p == 'E')) {
		t->kind = T_FLOAT;
		advance(P);
		if (P->p < P->end && (*P->p == '+' || *P->p == '-'))
			advance(P);
		while (P->p < P->end && isdigit((unsigned char)*P->p))
			advance(P);
	}
}

static void lex_string(Parser *P, Tok *t)
{
	advance(P);
	while (P->p < P->end && *P->p != '"' && *P->p != '\n') {
		if (*P->p == '\\' && P->p + 1 < P->end)
			advance(P);
		advance(P);
	}
	if (P->p >= P->end || *P->p != '"')
		fail(P, t->loc, "unterminated string");
	advance(P);
	t->kind = T_STRING;
}

static Tok lex(Parser *P)
{
	Tok t = { 0 };
	t.bol = skip_space(P);
	t.p = P->p;
	t.loc = (BlkLoc){ P->src, P->line, P->col };
	if (P->p >= P->end) {
		t.kind = T_EOF;
		return t;
	}
	char c = *P->p;
	if (isdigit((unsigned char)c)) {
		lex_number(P, &t);
	} else if (c == '"') {
		lex_string(P, &t);
	} else if ((c == '%' || c == '@') && P->p + 1 < P->end && is_name_char(P->p[1])) {
		t.kind = c == '%' ? T_VALUE : T_GLOBAL;
		do
			advance(P);
		while (P->p < P->end && is_name_char(*P->p));
	} else if (isalpha((unsigned char)c) || c == '_') {
		t.kind = T_IDENT;
		while (P->p < P->end && is_name_char(*P->p))
			advance(P);
	} else if (strchr("()[]{}<>,:=^+-*%?", c)) {
		t.kind = T_PUNCT;
		advance(P);
	} else if (c == '~' && P->p + 1 < P->end && P->p[1] == '/') {
		t.kind = T_PUNCT;
		advance(P);
		advance(P);
	} else {
		fail(P, t.loc, "unexpected character '%c'", isprint((unsigned char)c) ? c : '?');
	}
	t.len = (int)(P->p - t.p);
	return t;
}

static void next(Parser *P)
{
	P->tok = P->next;
	P->next = lex(P);
}

static bool is(const Tok *t, const char *s)
{
	return (t->kind == T_PUNCT || t->kind == T_IDENT) && (int)strlen(s) == t->len &&
	       memcmp(t->p, s, (size_t)t->len) == 0;
}

static bool accept(Parser *P, const char *s)
{
	if (!is(&P->tok, s))
		return false;
	next(P);
	return true;
}

static const char *tok_text(Parser *P, const Tok *t)
{
	if (t->kind == T_EOF)
		return "end of input";
	return blk_arena_printf(P->a, "'%.*s'", t->len > 40 ? 40 : t->len, t->p);
}

static void expect(Parser *P, const char *s)
{
	if (!accept(P, s))
		fail(P, P->tok.loc, "expected '%s', found %s", s, tok_text(P, &P->tok));
}

/* The token's text without its sigil (% or @). */
static const char *tok_name(Parser *P, const Tok *t)
{
	int skip = t->kind == T_VALUE || t->kind == T_GLOBAL;
	return blk_arena_strndup(P->a, t->p + skip, (size_t)(t->len - skip));
}

static const char *expect_ident(Parser *P, const char *what)
{
	if (P->tok.kind != T_IDENT)
		fail(P, P->tok.loc, "expected %s, found %s", what, tok_text(P, &P->tok));
	const char *s = tok_name(P, &P->tok);
	next(P);
	return s;
}

static int64_t expect_int(Parser *P)
{
	bool neg = accept(P, "-");
	if (P->tok.kind != T_INT)
		fail(P, P->tok.loc, "expected an integer, found %s", tok_text(P, &P->tok));
	errno = 0;
	unsigned long long u = strtoull(P->tok.p, NULL, 10);
	if (errno || u > (unsigned long long)INT64_MAX + neg)
		fail(P, P->tok.loc, "integer out of range");
	next(P);
	return neg ? (int64_t)(0 - u) : (int64_t)u;
}

static bool on_line(const Parser *P);

/* ---- symbolic sizes ---------------------------------------------------- */

static const BlkSym *parse_sym(Parser *P);

/* One more operator or parenthesis in a size expression: its size bounds
 * its height, which the parser, the printer and blk_sym_eval recurse over. */
static void sym_node(Parser *P)
{
	if (++P->sym_nodes > BLK_MAX_EXPR_DEPTH)
		fail(P, P->tok.loc, "size expression too large (more than %d operators)",
		     BLK_MAX_EXPR_DEPTH);
}

/* sym_call = ("cdiv" | "min" | "max") "(" sym "," sym ")" */
static const BlkSym *parse_sym_call(Parser *P, BlkSymKind k)
{
	sym_node(P);
	expect(P, "(");
	const BlkSym *x = parse_sym(P);
	expect(P, ",");
	const BlkSym *y = parse_sym(P);
	expect(P, ")");
	return blk_sym_binary(P->a, k, x, y);
}

/* sym_atom = ["-"] INT | NAME | sym_call | "(" sym ")" */
static const BlkSym *parse_sym_atom(Parser *P)
{
	if (P->tok.kind == T_INT || (is(&P->tok, "-") && P->next.kind == T_INT))
		return blk_sym_const(P->a, expect_int(P));
	if (accept(P, "(")) {
		sym_node(P);
		const BlkSym *s = parse_sym(P);
		expect(P, ")");
		return s;
	}
	if (P->tok.kind != T_IDENT)
		fail(P, P->tok.loc, "expected a size expression, found %s", tok_text(P, &P->tok));
	static const struct { const char *name; BlkSymKind k; } calls[] = {
		{ "cdiv", BLK_SYM_CDIV }, { "min", BLK_SYM_MIN }, { "max", BLK_SYM_MAX },
	};
	for (int i = 0; i < 3; i++)
		if (is(&P->tok, calls[i].name) && is(&P->next, "(")) {
			next(P);
			return parse_sym_call(P, calls[i].k);
		}
	return blk_sym_var(P->a, expect_ident(P, "a size"));
}

/* sym_mul = sym_atom { ("*" | "~/" | "%") sym_atom } */
static const BlkSym *parse_sym_mul(Parser *P)
{
	const BlkSym *s = parse_sym_atom(P);
	for (;;) {
		BlkSymKind k;
		if (accept(P, "*"))
			k = BLK_SYM_MUL;
		else if (accept(P, "~/"))
			k = BLK_SYM_FLOORDIV;
		else if (accept(P, "%"))
			k = BLK_SYM_MOD;
		else
			return s;
		sym_node(P);
		s = blk_sym_binary(P->a, k, s, parse_sym_atom(P));
	}
}

/* sym = sym_mul { ("+" | "-") sym_mul } */
static const BlkSym *parse_sym(Parser *P)
{
	const BlkSym *s = parse_sym_mul(P);
	for (;;) {
		BlkSymKind k;
		if (accept(P, "+"))
			k = BLK_SYM_ADD;
		else if (accept(P, "-"))
			k = BLK_SYM_SUB;
		else
			return s;
		sym_node(P);
		s = blk_sym_binary(P->a, k, s, parse_sym_mul(P));
	}
}

/* A whole size expression (sym) where one is expected. */
static const BlkSym *parse_size(Parser *P)
{
	P->sym_nodes = 0;
	return parse_sym(P);
}

/* syms = [ sym { "," sym } ]   (up to BLK_MAX_RANK, before `close`) */
static int parse_syms(Parser *P, const char *close, const BlkSym **out)
{
	int n = 0;
	while (!is(&P->tok, close)) {
		if (n == BLK_MAX_RANK)
			fail(P, P->tok.loc, "more than %d dims", BLK_MAX_RANK);
		out[n++] = parse_size(P);
		if (!accept(P, ","))
			break;
	}
	expect(P, close);
	return n;
}

/* ---- types ------------------------------------------------------------- */

static BlkDType parse_dtype(Parser *P)
{
	BlkDType t;
	if (P->tok.kind != T_IDENT)
		fail(P, P->tok.loc, "expected a dtype, found %s", tok_text(P, &P->tok));
	const char *s = tok_name(P, &P->tok);
	if (!blk_dtype_from_name(s, &t))
		fail(P, P->tok.loc, "unknown dtype '%s'", s);
	next(P);
	return t;
}

/* ints = "[" [ INT { "," INT } ] "]" */
static int parse_ints(Parser *P, int *out)
{
	int n = 0;
	expect(P, "[");
	while (!accept(P, "]")) {
		if (n == BLK_MAX_RANK)
			fail(P, P->tok.loc, "more than %d entries", BLK_MAX_RANK);
		if (n)
			expect(P, ",");
		out[n++] = (int)expect_int(P);
	}
	return n;
}

/* layout = "{" NAME "<" [ NAME "=" ints { "," NAME "=" ints } ] ">" "}"
 * The tile's shape must be constant; the kernel's warps give the threads. */
static const BlkLayout *parse_layout(Parser *P, const BlkType *t)
{
	BlkLoc loc = P->tok.loc;
	expect(P, "{");
	BlkLayoutText lt = { .kind = expect_ident(P, "a layout kind") };
	expect(P, "<");
	while (!accept(P, ">")) {
		if (lt.nkeys == BLK_LAYOUT_MAX_KEYS)
			fail(P, P->tok.loc, "too many layout fields");
		if (lt.nkeys)
			expect(P, ",");
		lt.keys[lt.nkeys] = expect_ident(P, "a layout field");
		expect(P, "=");
		lt.lens[lt.nkeys] = parse_ints(P, lt.vals[lt.nkeys]);
		lt.nkeys++;
	}
	expect(P, "}");
	int shape[BLK_MAX_RANK];
	for (int d = 0; d < t->rank; d++) {
		int64_t v;
		if (!blk_sym_is_const(t->dims[d], &v) || v < 1 || v > (1 << 20))
			fail(P, loc, "a tile with a layout needs a constant shape");
		shape[d] = (int)v;
	}
	BlkLayout *l = BLK_NEW(P->a, BlkLayout);
	int warps = P->k && P->k->num_warps > 0 ? P->k->num_warps : 4;
	const char *why = blk_layout_from_text(&lt, t->rank, shape, 32 * warps, blk_dtype_size(t->dtype), l);
	if (why)
		fail(P, loc, "bad layout %s<...>: %s", lt.kind, why);
	return l;
}

/* tile = DTYPE [ "[" syms "]" [ layout ] ] */
static BlkType parse_tile(Parser *P)
{
	BlkDType t = parse_dtype(P);
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0;
	if (accept(P, "["))
		rank = parse_syms(P, "]", dims);
	BlkType ty = blk_type_tile(t, rank, dims);
	if (rank > 0 && is(&P->tok, "{") && on_line(P) && P->next.kind == T_IDENT &&
	    P->next.loc.line == P->tok.loc.line)
		ty.layout = parse_layout(P, &ty);
	return ty;
}

/* type = "ref" "<" [ "shared" ] tile ">" | tile */
static BlkType parse_type(Parser *P)
{
	if (!accept(P, "ref"))
		return parse_tile(P);
	expect(P, "<");
	BlkSpace sp = accept(P, "shared") ? BLK_SPACE_SHARED : BLK_SPACE_GLOBAL;
	BlkType t = parse_tile(P);
	expect(P, ">");
	BlkType r = blk_type_ref(t.dtype, t.rank, t.dims, sp);
	r.layout = t.layout;
	return r;
}

/* ---- values ------------------------------------------------------------ */

static const char *hint_of(Parser *P, const char *name)
{
	const char *dot = strchr(name, '.');
	return dot ? blk_arena_strndup(P->a, name, (size_t)(dot - name)) : name;
}

static void define(Parser *P, const Tok *t, BlkValue *v)
{
	const char *name = tok_name(P, t);
	if (blk_strmap_get(&P->values, name))
		fail(P, t->loc, "value %%%s is defined twice", name);
	blk_strmap_put(&P->values, name, v);
	/* Numbers are the printer's own names; identifiers are hints, less
	 * the ".N" the printer adds to a hint another value holds (names in
	 * the language have no dots): printed again, or cloned by a pass,
	 * the value is named as it was before it went through text. */
	v->name = isdigit((unsigned char)name[0]) ? NULL : hint_of(P, name);
}

static BlkValue *use(Parser *P)
{
	if (P->tok.kind != T_VALUE)
		fail(P, P->tok.loc, "expected a value, found %s", tok_text(P, &P->tok));
	const char *name = tok_name(P, &P->tok);
	BlkValue *v = blk_strmap_get(&P->values, name);
	if (!v)
		fail(P, P->tok.loc, "undefined value %%%s", name);
	next(P);
	return v;
}

/* ---- attributes -------------------------------------------------------- */

static const char *unescape(Parser *P, const Tok *t)
{
	char *s = blk_arena_alloc(P->a, (size_t)t->len), *o = s;
	for (const char *c = t->p + 1; c < t->p + t->len - 1; c++) {
		if (*c != '\\') {
			*o++ = *c;
			continue;
		}
		c++;
		if (*c == 'n')
			*o++ = '\n';
		else if (*c == 't')
			*o++ = '\t';
		else if (*c == 'x' && isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2])) {
			char hex[3] = { c[1], c[2], 0 };
			*o++ = (char)strtol(hex, NULL, 16);
			c += 2;
		} else if (*c == '"' || *c == '\\')
			*o++ = *c;
		else
			fail(P, t->loc, "bad escape '\\%c' in string", *c);
	}
	return s;
}

/* index = ":" | "i" | "g" | "ds" "(" sym [ "," INT ] ")" */
static BlkIndex parse_index(Parser *P)
{
	BlkIndex ix = { BLK_INDEX_FULL, NULL, 0 };
	if (accept(P, ":"))
		return ix;
	if (accept(P, "i")) {
		ix.kind = BLK_INDEX_SCALAR;
		return ix;
	}
	if (accept(P, "g")) {
		ix.kind = BLK_INDEX_GATHER;
		return ix;
	}
	if (!accept(P, "ds"))
		fail(P, P->tok.loc, "expected ':', 'i', 'g' or 'ds(SIZE)', found %s", tok_text(P, &P->tok));
	expect(P, "(");
	ix.kind = BLK_INDEX_DS;
	ix.size = parse_size(P);
	if (accept(P, ",")) {
		const BlkSym *st = parse_size(P);
		if (!blk_sym_is_const(st, &ix.step) || ix.step < 1)
			fail(P, P->tok.loc, "a ds step must be a positive integer");
	}
	expect(P, ")");
	return ix;
}

/* index_list = "[" [ index { "," index } ] "]" */
static void parse_index_list(Parser *P, BlkOp *op, const char *name)
{
	BlkIndex v[BLK_MAX_RANK];
	int n = 0;
	while (!is(&P->tok, "]")) {
		if (n == BLK_MAX_RANK)
			fail(P, P->tok.loc, "more than %d indices", BLK_MAX_RANK);
		v[n++] = parse_index(P);
		if (!accept(P, ","))
			break;
	}
	expect(P, "]");
	blk_op_set_index(P->a, op, name, n, v);
}

/* Float literals: FLOAT, inf, nan, each with an optional "-". */
static bool parse_float_lit(Parser *P, double *out)
{
	const Tok *t = is(&P->tok, "-") ? &P->next : &P->tok;
	bool special = is(t, "inf") || is(t, "nan");
	if (t->kind != T_FLOAT && !special)
		return false;
	bool neg = accept(P, "-");
	double v = is(&P->tok, "inf") ? INFINITY : is(&P->tok, "nan") ? NAN : strtod(P->tok.p, NULL);
	next(P);
	*out = neg ? -v : v;
	return true;
}

/* attr = NAME "=" ( int | float | STRING | DTYPE | index_list ) */
static void parse_attr(Parser *P, BlkOp *op)
{
	const char *name = expect_ident(P, "an attribute name");
	if (blk_op_attr(op, name))
		fail(P, P->tok.loc, "attribute '%s' given twice", name);
	expect(P, "=");
	double f;
	BlkDType dt;
	if (parse_float_lit(P, &f))
		blk_op_set_float(P->a, op, name, f);
	else if (P->tok.kind == T_INT || is(&P->tok, "-"))
		blk_op_set_int(P->a, op, name, expect_int(P));
	else if (P->tok.kind == T_STRING) {
		blk_op_set_string(P->a, op, name, unescape(P, &P->tok));
		next(P);
	} else if (accept(P, "["))
		parse_index_list(P, op, name);
	else if (P->tok.kind == T_IDENT && blk_dtype_from_name(tok_name(P, &P->tok), &dt)) {
		blk_op_set_dtype(P->a, op, name, dt);
		next(P);
	} else
		fail(P, P->tok.loc, "expected an attribute value, found %s", tok_text(P, &P->tok));
}

/* attrs = "{" attr { "," attr } "}" */
static void parse_attrs(Parser *P, BlkOp *op)
{
	expect(P, "{");
	do
		parse_attr(P, op);
	while (accept(P, ","));
	expect(P, "}");
}

/* ---- ops and regions --------------------------------------------------- */

static void parse_region_body(Parser *P, BlkRegion *r);

/* region = "{" [ "^" "(" [ arg { "," arg } ] ")" ":" ] { op } "}"
 * arg    = VALUE ":" type */
static BlkRegion *parse_region(Parser *P)
{
	if (P->regions == BLK_MAX_NESTING)
		fail(P, P->tok.loc, "regions nested too deeply (more than %d levels)", BLK_MAX_NESTING);
	P->regions++;
	BlkRegion *r = blk_region_create(P->a);
	expect(P, "{");
	if (accept(P, "^")) {
		expect(P, "(");
		while (P->tok.kind == T_VALUE) {
			Tok name = P->tok;
			next(P);
			expect(P, ":");
			define(P, &name, blk_region_add_arg(P->a, r, parse_type(P), NULL));
			if (!accept(P, ","))
				break;
		}
		expect(P, ")");
		expect(P, ":");
	}
	parse_region_body(P, r);
	expect(P, "}");
	P->regions--;
	return r;
}

static bool on_line(const Parser *P)
{
	return !P->tok.bol && P->tok.kind != T_EOF;
}

/* `{` starts attributes when `NAME =` follows, else a region. */
static bool at_attrs(const Parser *P)
{
	return is(&P->tok, "{") && P->next.kind == T_IDENT && P->tok.loc.line == P->next.loc.line &&
	       on_line(P);
}


static void check_arity(Parser *P, const BlkOp *op)
{
	int lo, hi, nres;
	if (!blk_op_arity(op->kind, &lo, &hi, &nres))
		return;
	const char *name = blk_op_name(op->kind);
	if (op->noperands < lo || (hi >= 0 && op->noperands > hi)) {
		int want = op->noperands < lo ? lo : hi;
		const char *bound = lo == hi ? "" : op->noperands < lo ? "at least " : "at most ";
		fail(P, op->loc, "%s: expected %s%d operand%s, got %d", name, bound, want,
		     want == 1 ? "" : "s", op->noperands);
	}
	if (nres == -2)
		nres = op->noperands;
	if (nres < 0)
		nres = op->noperands - 3 > 0 ? op->noperands - 3 : 0;
	if (op->nresults != nres)
		fail(P, op->loc, "%s: expected %d result%s, got %d", name, nres, nres == 1 ? "" : "s",
		     op->nresults);
}

/* The op's line after its name: operands, attributes, result types. */
static void parse_op_line(Parser *P, BlkOp *op, int nres, BlkType *types)
{
	BlkValue *ops[256];
	int n = 0;
	while (P->tok.kind == T_VALUE && on_line(P)) {
		if (n == 256)
			fail(P, P->tok.loc, "too many operands");
		ops[n++] = use(P);
		if (!accept(P, ","))
			break;
	}
	op->noperands = n;
	op->operands = BLK_NEW_N(P->a, BlkValue *, n + 1);
	memcpy(op->operands, ops, sizeof *ops * (size_t)n);
	if (at_attrs(P))
		parse_attrs(P, op);
	int nt = 0;
	if (on_line(P) && accept(P, ":")) {
		do {
			if (nt == nres)
				fail(P, P->tok.loc, "more result types than results (%d)", nres);
			types[nt++] = parse_type(P);
		} while (accept(P, ","));
	}
	if (nt != nres)
		fail(P, P->tok.loc, "%d results but %d result types", nres, nt);
}

static void add_region(Parser *P, BlkOp *op, BlkRegion *r)
{
	op->regions = blk_arena_grow(P->a, op->regions, (size_t)op->nregions,
	                             (size_t)op->nregions + 1, sizeof *op->regions);
	op->regions[op->nregions++] = r;
	r->parent = op;
}

/* op = [ VALUE { "," VALUE } "=" ] OPNAME [ VALUE { "," VALUE } ] [ attrs ]
 *      [ ":" type { "," type } ] { region }
 * Results are defined after the regions: an op's regions cannot see them. */
static void parse_op(Parser *P, BlkRegion *r)
{
	Tok res[64];
	int nres = 0;
	while (P->tok.kind == T_VALUE) {
		if (nres == 64)
			fail(P, P->tok.loc, "too many results");
		res[nres++] = P->tok;
		next(P);
		if (!accept(P, ","))
			break;
	}
	if (nres)
		expect(P, "=");
	Tok name = P->tok;
	BlkOpKind kind;
	if (name.kind != T_IDENT)
		fail(P, name.loc, "expected an op, found %s", tok_text(P, &name));
	if (!blk_op_from_name(tok_name(P, &name), &kind))
		fail(P, name.loc, "unknown op '%.*s'", name.len, name.p);
	next(P);
	BlkBuilder b;
	blk_builder_at_end(&b, P->a, r);
	BlkType types[64];
	BlkOp *op = blk_build(&b, kind, name.loc, 0, NULL, 0, NULL, 0);
	parse_op_line(P, op, nres, types);
	op->nresults = nres;
	op->results = BLK_NEW_N(P->a, BlkValue *, nres + 1);
	while (is(&P->tok, "{") && on_line(P))
		add_region(P, op, parse_region(P));
	check_arity(P, op);
	for (int i = 0; i < nres; i++) {
		BlkValue *v = BLK_NEW(P->a, BlkValue);
		v->type = types[i];
		v->def = op;
		v->index = i;
		op->results[i] = v;
		define(P, &res[i], v);
	}
}

static void parse_region_body(Parser *P, BlkRegion *r)
{
	while (!is(&P->tok, "}") && P->tok.kind != T_EOF)
		parse_op(P, r);
}

/* A top-level region (index map, body) is its own name scope. */
static BlkRegion *parse_scope(Parser *P)
{
	blk_strmap_free(&P->values);
	return parse_region(P);
}

/* ---- kernels ----------------------------------------------------------- */

/* cparam = NAME "=" ( ["-"] INT | "auto" INT | float | "true" | "false" | DTYPE ) */
static void parse_cparam(Parser *P, BlkCParam *c)
{
	c->name = expect_ident(P, "a parameter name");
	expect(P, "=");
	if (accept(P, "auto")) { /* not chosen yet: the stand-in value follows */
		c->is_auto = true;
		c->i = expect_int(P);
	} else if (parse_float_lit(P, &c->f))
		c->kind = BLK_CPARAM_FLOAT;
	else if (P->tok.kind == T_INT || is(&P->tok, "-"))
		c->i = expect_int(P);
	else if (is(&P->tok, "true") || is(&P->tok, "false")) {
		c->kind = BLK_CPARAM_BOOL;
		c->i = is(&P->tok, "true");
		next(P);
	} else {
		c->kind = BLK_CPARAM_DTYPE;
		c->dtype = parse_dtype(P);
	}
}

/* cparams = "cparams" "[" [ cparam { "," cparam } ] "]" */
static void parse_cparams(Parser *P, BlkKernel *k)
{
	expect(P, "cparams");
	expect(P, "[");
	while (!is(&P->tok, "]")) {
		k->cparams = blk_arena_grow(P->a, k->cparams, (size_t)k->ncparams,
		                            (size_t)k->ncparams + 1, sizeof *k->cparams);
		parse_cparam(P, &k->cparams[k->ncparams++]);
		if (!accept(P, ","))
			break;
	}
	expect(P, "]");
}

/* sizes = "sizes" "(" [ size { "," size } ] ")" ;
 * size = NAME [ "dynamic" [ "(" INT ")" ] ]  (INT: a known divisor) */
static void parse_sizes(Parser *P, BlkKernel *k)
{
	expect(P, "sizes");
	expect(P, "(");
	while (!is(&P->tok, ")")) {
		k->sizes = blk_arena_grow(P->a, k->sizes, (size_t)k->nsizes, (size_t)k->nsizes + 1,
		                          sizeof *k->sizes);
		k->size_dyn = blk_arena_grow(P->a, k->size_dyn, (size_t)k->nsizes, (size_t)k->nsizes + 1,
		                             sizeof *k->size_dyn);
		k->size_dyn[k->nsizes] = 0;
		k->sizes[k->nsizes++] = expect_ident(P, "a size name");
		if (accept(P, "dynamic")) {
			k->size_dyn[k->nsizes - 1] = 1;
			if (accept(P, "(")) {
				BlkLoc l = P->tok.loc;
				int64_t v = expect_int(P);
				if (v < 1)
					fail(P, l, "a dynamic size's divisor must be at least 1, got %lld", (long long)v);
				k->size_dyn[k->nsizes - 1] = v;
				expect(P, ")");
			}
		}
		if (!accept(P, ","))
			break;
	}
	expect(P, ")");
}

/* True if t can follow a complete size expression: `seq` before it is a
 * size named seq, not the flag. */
static bool ends_sym(const Tok *t)
{
	static const char *const after[] = { ",", ")", "+", "-", "*", "~/", "%" };
	for (size_t i = 0; i < sizeof after / sizeof *after; i++)
		if (is(t, after[i]))
			return true;
	return false;
}

/* grid = "grid" "(" [ ["seq"] sym { "," ["seq"] sym } ] ")" */
static void parse_grid(Parser *P, BlkKernel *k)
{
	expect(P, "grid");
	expect(P, "(");
	while (!is(&P->tok, ")")) {
		if (k->grid_rank == BLK_MAX_GRID)
			fail(P, P->tok.loc, "more than %d grid axes", BLK_MAX_GRID);
		k->grid_seq[k->grid_rank] = is(&P->tok, "seq") && !ends_sym(&P->next);
		if (k->grid_seq[k->grid_rank])
			next(P);
		k->grid[k->grid_rank++] = parse_size(P);
		if (!accept(P, ","))
			break;
	}
	expect(P, ")");
}

/* access = ( "in" | "out" | "inout" | "scratch" ) [ "symmetric" ]
 *        | "prefetch" (in, flagged) | "signal" (symmetric inout, flagged) */
static BlkAccess parse_access(Parser *P, BlkParam *pa)
{
	if ((pa->prefetch = accept(P, "prefetch")))
		return BLK_ACCESS_IN;
	if ((pa->signal = pa->symmetric = accept(P, "signal")))
		return BLK_ACCESS_INOUT;
	for (int a = BLK_ACCESS_IN; a <= BLK_ACCESS_SCRATCH; a++)
		if (accept(P, blk_access_name((BlkAccess)a))) {
			pa->symmetric = accept(P, "symmetric");
			return (BlkAccess)a;
		}
	fail(P, P->tok.loc, "expected in, out, inout, scratch, prefetch or signal, found %s",
	     tok_text(P, &P->tok));
}

/* block = "block" "[" bdim { "," bdim } "]"    bdim = "None" | sym */
static void parse_block(Parser *P, BlkParam *pa)
{
	Tok at = P->tok;
	int n = 0;
	expect(P, "[");
	while (!is(&P->tok, "]") && n < BLK_MAX_RANK) {
		pa->squeezed[n] = accept(P, "None");
		pa->block[n] = pa->squeezed[n] ? blk_sym_const(P->a, 1) : parse_size(P);
		n++;
		if (!accept(P, ","))
			break;
	}
	expect(P, "]");
	if (n != pa->rank)
		fail(P, at.loc, "param %s: %d block dims for an array of rank %d", pa->name, n, pa->rank);
}

/* param = "param" NAME ":" access DTYPE "[" syms "]" [ "block" block ]
 *         [ "index" region ] */
static void parse_param(Parser *P, BlkParam *pa)
{
	expect(P, "param");
	pa->loc = P->tok.loc;
	pa->name = expect_ident(P, "a parameter name");
	expect(P, ":");
	pa->access = parse_access(P, pa);
	pa->dtype = parse_dtype(P);
	expect(P, "[");
	pa->rank = parse_syms(P, "]", pa->shape);
	for (int d = 0; d < pa->rank; d++)
		pa->block[d] = pa->shape[d];
	if (accept(P, "block"))
		parse_block(P, pa);
	if (accept(P, "index"))
		pa->index_map = parse_scope(P);
}

static void parse_params(Parser *P, BlkKernel *k)
{
	while (is(&P->tok, "param")) {
		k->params = blk_arena_grow(P->a, k->params, (size_t)k->nparams, (size_t)k->nparams + 1,
		                           sizeof *k->params);
		parse_param(P, &k->params[k->nparams++]);
	}
}

/* ---- the launch header (ir.h BlkLaunch) --------------------------------- */

static int param_named(Parser *P, const BlkKernel *k)
{
	Tok at = P->tok;
	const char *name = expect_ident(P, "a parameter name");
	for (int i = 0; i < k->nparams; i++)
		if (strcmp(k->params[i].name, name) == 0 && k->params[i].access != BLK_ACCESS_SCRATCH)
			return i;
	fail(P, at.loc, "kernel @%s has no array param %s", k->name, name);
}

/* axis = "seq" | ("x" | "y" | "z") [ "div" sym "mod" sym ] [ "merge" INT ] */
static void parse_launch_axis(Parser *P, BlkLaunch *l, int i)
{
	static const char *const names[] = { "x", "y", "z" };
	if (accept(P, "seq")) {
		l->axis[i] = -1;
		return;
	}
	for (int c = 0; c < 3; c++)
		if (accept(P, names[c])) {
			l->axis[i] = c;
			if (accept(P, "div")) {
				l->div[i] = parse_size(P);
				expect(P, "mod");
				l->mod[i] = parse_size(P);
			}
			if (accept(P, "merge"))
				l->merge[i] = (int)expect_int(P);
			return;
		}
	fail(P, P->tok.loc, "expected a CUDA axis (x, y, z) or seq, found %s", tok_text(P, &P->tok));
}

/* grid = "grid" "(" sym "," sym "," sym ")" [ "persist" INT ] [ "cluster" INT ]
 *        "axes" "(" [ axis { "," axis } ] ")" */
static void parse_launch_grid(Parser *P, BlkLaunch *l, const BlkKernel *k)
{
	expect(P, "(");
	for (int i = 0; i < 3; i++) {
		l->grid[i] = parse_size(P);
		if (i < 2)
			expect(P, ",");
	}
	expect(P, ")");
	if (accept(P, "persist"))
		l->persist = (int)expect_int(P);
	if (accept(P, "cluster"))
		l->cluster = (int)expect_int(P);
	expect(P, "axes");
	expect(P, "(");
	for (int i = 0; i < k->grid_rank; i++) {
		if (i)
			expect(P, ",");
		parse_launch_axis(P, l, i);
	}
	expect(P, ")");
}

/* strides = "strides" "(" stride { "," stride } ")" "align" INT
 * stride = INT | "?" INT  (dynamic, a known divisor) */
static void parse_arg_strides(Parser *P, BlkLaunchArg *g, const BlkParam *pa)
{
	expect(P, "strides");
	expect(P, "(");
	for (int d = 0; d < pa->rank; d++) {
		if (d)
			expect(P, ",");
		bool dyn = accept(P, "?");
		int64_t v = expect_int(P);
		if (dyn && v < 1)
			fail(P, P->tok.loc, "a dynamic stride's divisor must be at least 1");
		g->strides[d] = dyn ? -v : v;
	}
	expect(P, ")");
	expect(P, "align");
	g->align = (int)expect_int(P);
}

/* arg = "arg" ( "ptr" NAME strides | "tmap" NAME "box" "(" INT "," INT ")"
 *       "swizzle" INT [ "trans" ] | "size" NAME | "stride" NAME INT | "peers" NAME
 *       | "rank" | "world" | "timeout" ) */
static void parse_launch_arg(Parser *P, BlkLaunch *l, const BlkKernel *k)
{
	static const char *const kinds[] = { "ptr", "tmap", "size", "stride", "peers", "rank", "world",
		                             "timeout" };
	enum { NKINDS = sizeof kinds / sizeof *kinds };
	BlkLaunchArg g = { .param = -1 };
	int kind = 0;
	while (kind < NKINDS && !accept(P, kinds[kind]))
		kind++;
	if (kind == NKINDS)
		fail(P, P->tok.loc, "expected ptr, tmap, size, stride, peers, rank, world or timeout, found %s",
		     tok_text(P, &P->tok));
	g.kind = (BlkArgKind)kind;
	if (g.kind >= BLK_ARG_RANK)
		; /* nothing follows */
	else if (g.kind == BLK_ARG_SIZE)
		g.size = expect_ident(P, "a size name");
	else
		g.param = param_named(P, k);
	if (g.kind == BLK_ARG_PTR)
		parse_arg_strides(P, &g, &k->params[g.param]);
	else if (g.kind == BLK_ARG_STRIDE)
		g.dim = (int)expect_int(P);
	else if (g.kind == BLK_ARG_TMAP) {
		expect(P, "box");
		expect(P, "(");
		g.box[0] = (int)expect_int(P);
		expect(P, ",");
		g.box[1] = (int)expect_int(P);
		expect(P, ")");
		expect(P, "swizzle");
		g.swizzle = (int)expect_int(P);
		g.trans = accept(P, "trans");
		g.rows = accept(P, "rows") ? (int)expect_int(P) : k->params[g.param].rank - 2;
	}
	l->args = blk_arena_grow(P->a, l->args, (size_t)l->nargs, (size_t)l->nargs + 1, sizeof *l->args);
	l->args[l->nargs++] = g; /* as written: the verifier checks the order */
}

/* launch = "launch" "{" [ "grid" grid ] "threads" INT "smem" INT "isa" INT
 *          { arg } "}" */
static BlkLaunch *parse_launch(Parser *P, const BlkKernel *k)
{
	BlkLaunch *l = BLK_NEW(P->a, BlkLaunch);
	expect(P, "launch");
	expect(P, "{");
	if (accept(P, "grid"))
		parse_launch_grid(P, l, k);
	expect(P, "threads");
	l->threads = (int)expect_int(P);
	expect(P, "smem");
	l->smem = expect_int(P);
	expect(P, "isa");
	l->isa = (int)expect_int(P);
	while (accept(P, "arg"))
		parse_launch_arg(P, l, k);
	expect(P, "}");
	return l;
}

/* kernel = "kernel" GLOBAL "{" cparams sizes grid "warps" INT "stages" INT
 *          [ launch ] { param } "body" region "}" */
static void parse_kernel(Parser *P, BlkModule *m)
{
	expect(P, "kernel");
	if (P->tok.kind != T_GLOBAL)
		fail(P, P->tok.loc, "expected a kernel name (@name), found %s", tok_text(P, &P->tok));
	const char *name = tok_name(P, &P->tok);
	if (blk_module_find(m, name))
		fail(P, P->tok.loc, "kernel @%s is defined twice", name);
	BlkKernel *k = blk_kernel_add(m, name, P->tok.loc);
	P->k = k;
	next(P);
	expect(P, "{");
	parse_cparams(P, k);
	parse_sizes(P, k);
	parse_grid(P, k);
	expect(P, "warps");
	k->num_warps = (int)expect_int(P);
	expect(P, "stages");
	k->num_stages = (int)expect_int(P);
	parse_params(P, k);
	if (is(&P->tok, "launch"))
		k->launch = parse_launch(P, k);
	expect(P, "body");
	k->body = parse_scope(P);
	expect(P, "}");
}

BlkLaunch *blk_launch_parse(BlkArena *a, BlkDiag *d, const BlkKernel *k, const BlkSource *src)
{
	Parser *P = BLK_NEW(a, Parser);
	*P = (Parser){ .a = a, .d = d, .src = src, .p = src->text, .end = src->text + src->len,
	               .line = 1, .col = 1 };
	if (setjmp(P->fail))
		return NULL;
	P->next = lex(P);
	next(P);
	BlkLaunch *l = parse_launch(P, k);
	if (P->tok.kind != T_EOF)
		fail(P, P->tok.loc, "expected the end after the launch header, found %s", tok_text(P, &P->tok));
	return l;
}

/* module = { kernel } EOF */
BlkModule *blk_ir_parse(BlkArena *a, BlkDiag *d, const BlkSource *src)
{
	/* In the arena, not on the stack: longjmp leaves modified locals
	 * indeterminate. */
	Parser *P = BLK_NEW(a, Parser);
	*P = (Parser){ .a = a, .d = d, .src = src, .p = src->text, .end = src->text + src->len,
	               .line = 1, .col = 1 };
	BlkModule *m = blk_module_create(a);
	if (setjmp(P->fail)) {
		blk_strmap_free(&P->values);
		return NULL;
	}
	P->next = lex(P);
	next(P);
	while (P->tok.kind != T_EOF)
		parse_kernel(P, m);
	blk_strmap_free(&P->values);
	return m;
}
