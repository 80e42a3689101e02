/* lexer.re - .blk source to tokens (re2c; generated at build time).
 *
 * re2c builds the DFA; this file adds what a DFA is bad at: block comments
 * and strings are scanned by hand so an unterminated one can be reported at
 * its start, and numbers are converted and range-checked here.
 *
 * Input safety: the source text is NUL-terminated but may contain NULs, so
 * the DFA runs in re2c's "sentinel with bounds checks" mode (re2c:eof): on a
 * NUL it compares the cursor with YYLIMIT (= text + len) and only there takes
 * the end-of-input rule.  Hand-written scans stop at lim.  Nothing reads
 * past text[len].
 *
 * Locations: a token's line and column are computed lazily by walking a
 * cursor forward from the previous token, so the DFA needs no newline
 * bookkeeping and newlines inside comments and strings are still counted.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/lex.h"
#include "support/limits.h"

typedef struct Lexer {
	BlkArena *a;
	BlkDiag *d;
	const BlkSource *src;
	const unsigned char *base, *cur, *lim;
	/* location tracking: lpos has been walked; line/lstart describe it */
	const unsigned char *lpos, *lstart;
	unsigned line;
	BlkToken *toks;
	int n, cap;
} Lexer;

static const struct {
	const char *name, *spelling;
} tok_info[] = {
#define X(e, n, s) {n, s},
	BLK_TOKENS(X)
#undef X
};

const char *blk_tok_name(BlkTokKind k)
{
	return k < BLK_NUM_TOKENS ? tok_info[k].name : "?";
}

const char *blk_tok_spelling(BlkTokKind k)
{
	return k < BLK_NUM_TOKENS ? tok_info[k].spelling : NULL;
}

/* Location of p; p never moves backwards in practice, but restart if it does. */
static BlkLoc loc_at(Lexer *lx, const unsigned char *p)
{
	if (p < lx->lpos) {
		lx->lpos = lx->lstart = lx->base;
		lx->line = 1;
	}
	for (; lx->lpos < p; lx->lpos++)
		if (*lx->lpos == '\n') {
			lx->line++;
			lx->lstart = lx->lpos + 1;
		}
	return (BlkLoc){lx->src, lx->line, (unsigned)(p - lx->lstart) + 1};
}

static BlkToken *push(Lexer *lx, BlkTokKind k, const unsigned char *start,
                      const unsigned char *end)
{
	if (lx->n == lx->cap) {
		int ncap = lx->cap ? lx->cap * 2 : 256;
		lx->toks = blk_arena_grow(lx->a, lx->toks, (size_t)lx->n,
		                          (size_t)ncap, sizeof(BlkToken));
		lx->cap = ncap;
	}
	BlkToken *t = &lx->toks[lx->n++];
	memset(t, 0, sizeof *t);
	t->kind = k;
	t->loc = loc_at(lx, start);
	t->text = (const char *)start;
	t->len = (size_t)(end - start);
	return t;
}

/* Keywords: the spellings of BLK_TOK_KERNEL .. BLK_TOK_BOOL. */
static BlkTokKind keyword(const unsigned char *s, size_t len)
{
	for (int k = BLK_TOK_KERNEL; k <= BLK_TOK_BOOL; k++) {
		const char *sp = tok_info[k].spelling;
		if (strlen(sp) == len && memcmp(sp, s, len) == 0)
			return (BlkTokKind)k;
	}
	return BLK_TOK_IDENT;
}

static void lex_int(Lexer *lx, const unsigned char *s, const unsigned char *e)
{
	int64_t v = 0;
	bool big = false;
	for (const unsigned char *p = s; p < e; p++) {
		v = v * 10 + (*p - '0');
		if (v > BLK_LEX_INT_MAX) {
			big = true;
			v = BLK_LEX_INT_MAX;
		}
	}
	if (big)
		blk_error(lx->d, loc_at(lx, s),
		          "integer literal too large (the limit is 2147483648)");
	push(lx, BLK_TOK_INT, s, e)->ival = v;
}

/* 0x...: a 32-bit pattern, the i32 with those bits (0xFFFFFFFF is -1), as
 * C's (int)0x9E3779B9 is: hashes and masks are written in hex, and i32
 * arithmetic wraps.  Past 32 bits is an error. */
static void lex_hex(Lexer *lx, const unsigned char *s, const unsigned char *e)
{
	uint64_t v = 0;
	bool big = false;
	for (const unsigned char *p = s + 2; p < e; p++) {
		unsigned digit = *p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10;
		v = v << 4 | digit;
		big |= v > 0xFFFFFFFFu;
		v &= 0xFFFFFFFFu;
	}
	if (big)
		blk_error(lx->d, loc_at(lx, s), "hex literal too large (the limit is 0xFFFFFFFF, 32 bits)");
	push(lx, BLK_TOK_INT, s, e)->ival = (int32_t)(uint32_t)v;
}

static void lex_float(Lexer *lx, const unsigned char *s, const unsigned char *e)
{
	char *txt = blk_arena_strndup(lx->a, (const char *)s, (size_t)(e - s));
	errno = 0;
	double v = strtod(txt, NULL);
	if (isinf(v)) {
		blk_error(lx->d, loc_at(lx, s), "float literal out of range");
		v = 0;
	}
	push(lx, BLK_TOK_FLOAT, s, e)->fval = v;
}

/* Block comments do not nest.  Reports an unterminated one at its start. */
static void skip_block_comment(Lexer *lx, const unsigned char *start)
{
	for (const unsigned char *p = lx->cur; p + 1 < lx->lim; p++)
		if (p[0] == '*' && p[1] == '/') {
			lx->cur = p + 2;
			return;
		}
	blk_error(lx->d, loc_at(lx, start), "unterminated block comment");
	lx->cur = lx->lim;
}

/* A string: "..." on one line with escapes \n \t \\ \" ; the opening quote
 * has been consumed. */
static void lex_string(Lexer *lx, const unsigned char *start)
{
	char *buf = blk_arena_alloc(lx->a, (size_t)(lx->lim - lx->cur) + 1);
	size_t n = 0;
	const unsigned char *p = lx->cur;
	for (; p < lx->lim && *p != '"' && *p != '\n'; p++) {
		if (*p != '\\') {
			buf[n++] = (char)*p;
			continue;
		}
		p++;
		switch (p < lx->lim ? *p : 0) {
		case 'n': buf[n++] = '\n'; break;
		case 't': buf[n++] = '\t'; break;
		case '\\': buf[n++] = '\\'; break;
		case '"': buf[n++] = '"'; break;
		default:
			blk_error(lx->d, loc_at(lx, p - 1), "invalid escape sequence in string");
			if (p >= lx->lim || *p == '\n')
				p--; /* let the loop see the end */
		}
	}
	if (p >= lx->lim || *p != '"') {
		blk_error(lx->d, loc_at(lx, start), "unterminated string");
		lx->cur = p;
		return;
	}
	lx->cur = p + 1;
	push(lx, BLK_TOK_STRING, start, lx->cur)->str = buf;
}

static void bad_chars(Lexer *lx, const unsigned char *s, const unsigned char *e)
{
	BlkLoc loc = loc_at(lx, s);
	if (*s == 0)
		blk_error(lx->d, loc, "NUL byte in source");
	else if (*s >= 0x20 && *s < 0x7f)
		blk_error(lx->d, loc, "invalid character '%c'", *s);
	else
		blk_error(lx->d, loc, "invalid character 0x%02x%s", *s,
		          e - s > 1 ? " (and more)" : "");
}

/*!re2c
	re2c:define:YYCTYPE = "unsigned char";
	re2c:define:YYCURSOR = "lx->cur";
	re2c:define:YYLIMIT = "lx->lim";
	re2c:define:YYMARKER = "mar";
	re2c:yyfill:enable = 0;
	re2c:eof = 0;

	dec   = [0-9]+;
	hex   = "0" [xX] [0-9a-fA-F]+;
	exp   = [eE] [+-]? [0-9]+;
	flt   = dec "." [0-9]* exp? | dec exp;
	ident = [a-zA-Z_] [a-zA-Z_0-9]*;
	junk  = [\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\xff];
*/

/* Lexes one token (or skips blanks/comments/junk); false at the end. */
static bool lex_one(Lexer *lx)
{
	const unsigned char *s = lx->cur, *mar = s;
	(void)mar;
#define P(k) push(lx, BLK_TOK_##k, s, lx->cur); return true
	/*!re2c
	$                    { return false; }
	[ \t\r\n\f\v]+       { return true; }
	"//" [^\n]*          { return true; }
	"/*"                 { skip_block_comment(lx, s); return true; }
	["]                  { lex_string(lx, s); return true; }
	flt                  { lex_float(lx, s, lx->cur); return true; }
	hex                  { lex_hex(lx, s, lx->cur); return true; }
	dec                  { lex_int(lx, s, lx->cur); return true; }
	dec ("." [0-9]*)? [eE] [+-]? {
		blk_error(lx->d, loc_at(lx, s), "malformed float literal: exponent has no digits");
		return true;
	}
	(dec | flt) [a-zA-Z_] [a-zA-Z_0-9]* {
		blk_error(lx->d, loc_at(lx, s), "malformed number '%.*s'",
		          (int)(lx->cur - s > 40 ? 40 : lx->cur - s), (const char *)s);
		return true;
	}
	ident                { push(lx, keyword(s, (size_t)(lx->cur - s)), s, lx->cur); return true; }
	"..."                { P(ELLIPSIS); }
	"->"                 { P(ARROW); }
	"~/"                 { P(FLOORDIV); }
	"=="                 { P(EQ); }
	"!="                 { P(NE); }
	"<="                 { P(LE); }
	">="                 { P(GE); }
	"&&"                 { P(ANDAND); }
	"<<"                 { P(SHL); }
	">>"                 { P(SHR); }
	"**"                 { P(STARSTAR); }
	"+="                 { P(PLUS_ASSIGN); }
	"-="                 { P(MINUS_ASSIGN); }
	"*="                 { P(STAR_ASSIGN); }
	"||"                 { P(OROR); }
	"("                  { P(LPAREN); }
	")"                  { P(RPAREN); }
	"["                  { P(LBRACKET); }
	"]"                  { P(RBRACKET); }
	"{"                  { P(LBRACE); }
	"}"                  { P(RBRACE); }
	","                  { P(COMMA); }
	":"                  { P(COLON); }
	";"                  { P(SEMI); }
	"."                  { P(DOT); }
	"|"                  { P(PIPE); }
	"="                  { P(ASSIGN); }
	"+"                  { P(PLUS); }
	"-"                  { P(MINUS); }
	"*"                  { P(STAR); }
	"/"                  { P(SLASH); }
	"%"                  { P(PERCENT); }
	"<"                  { P(LT); }
	">"                  { P(GT); }
	"!"                  { P(BANG); }
	"&"                  { P(AMP); }
	"^"                  { P(CARET); }
	"~"                  { P(TILDE); }
	"@"                  { P(AT); }
	junk+                { bad_chars(lx, s, lx->cur); return true; }
	*                    { bad_chars(lx, s, lx->cur); return true; }
	*/
#undef P
}

BlkToken *blk_lex(BlkArena *a, BlkDiag *d, const BlkSource *src, int *ntok)
{
	Lexer lx = {0};
	lx.a = a;
	lx.d = d;
	lx.src = src;
	lx.base = lx.cur = lx.lpos = lx.lstart = (const unsigned char *)src->text;
	lx.lim = lx.base + src->len;
	lx.line = 1;
	if (src->len > BLK_MAX_SOURCE_BYTES) {
		blk_error(d, loc_at(&lx, lx.base), "%s is larger than %d bytes, the limit of a source",
		          src->name, BLK_MAX_SOURCE_BYTES);
		lx.cur = lx.lim;
	}
	/* A saturated diag means the input is hopeless (e.g. binary junk):
	 * stop early rather than lex megabytes of it. */
	while (lx.cur < lx.lim && lex_one(&lx) && !blk_diag_saturated(d))
		if (lx.n == BLK_MAX_TOKENS) {
			blk_error(d, lx.toks[lx.n - 1].loc, "more than %d tokens; the limit of a source",
			          BLK_MAX_TOKENS);
			break;
		}
	push(&lx, BLK_TOK_EOF, lx.lim, lx.lim);
	*ntok = lx.n;
	return lx.toks;
}

const char *blk_tok_describe(BlkArena *a, const BlkToken *t)
{
	int len = t->len > 32 ? 32 : (int)t->len;
	switch (t->kind) {
	case BLK_TOK_EOF: return "end of file";
	case BLK_TOK_IDENT: return blk_arena_printf(a, "identifier '%.*s'", len, t->text);
	case BLK_TOK_INT: return blk_arena_printf(a, "integer '%.*s'", len, t->text);
	case BLK_TOK_FLOAT: return blk_arena_printf(a, "number '%.*s'", len, t->text);
	case BLK_TOK_STRING: return "string";
	default: return blk_arena_printf(a, "'%s'", blk_tok_spelling(t->kind));
	}
}

/* Token text for the dump, with anything unprintable as \xNN. */
static void print_text(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

bool blk_lex_dump(FILE *out, const BlkSource *src, BlkDiag *d)
{
	BlkArena *a = blk_arena_create();
	int before = blk_diag_error_count(d), n;
	BlkToken *t = blk_lex(a, d, src, &n);
	for (int i = 0; i < n; i++) {
		fprintf(out, "%u:%u %s '", t[i].loc.line, t[i].loc.col, blk_tok_name(t[i].kind));
		print_text(out, t[i].text, t[i].len);
		fputs("'\n", out);
	}
	blk_arena_destroy(a);
	return blk_diag_error_count(d) == before;
}
