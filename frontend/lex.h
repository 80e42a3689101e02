/* lex.h - tokens of .blk source and the lexer (frontend/lexer.re).
 *
 * The lexer turns a whole BlkSource into an array of tokens ending with EOF.
 * Lexical errors are reported through the BlkDiag and the offending bytes are
 * skipped, so the parser still sees a plausible token stream and can report
 * syntax errors after them.
 *
 * Keywords are the structural words of the grammar and the builtin dtype
 * names (so `f32` can never be shadowed).  Builtin functions (zeros, dot, exp,
 * ds, cdiv, ...) and the postfix words at/astype/T are plain identifiers: the
 * checker resolves them, and users may still name a value `sum`.
 */
#ifndef BLK_LEX_H
#define BLK_LEX_H

#include <stdbool.h>
#include <stdint.h>

#include "support/arena.h"
#include "support/diag.h"

/* X(ENUM, "dump name", "spelling or NULL")  ORDER TOK: lexer.re's keyword
 * table and the dump names follow this list. */
#define BLK_TOKENS(X)                           \
	X(EOF, "EOF", "end of file")            \
	X(IDENT, "IDENT", NULL)                 \
	X(INT, "INT", NULL)                     \
	X(FLOAT, "FLOAT", NULL)                 \
	X(STRING, "STRING", NULL)               \
	/* keywords (BLK_TOK_KERNEL .. BLK_TOK_BOOL) */ \
	X(KERNEL, "KERNEL", "kernel")           \
	X(IN, "IN", "in")                       \
	X(OUT, "OUT", "out")                    \
	X(INOUT, "INOUT", "inout")              \
	X(SCRATCH, "SCRATCH", "scratch")        \
	X(PREFETCH, "PREFETCH", "prefetch")     \
	X(BLOCK, "BLOCK", "block")              \
	X(INDEX, "INDEX", "index")              \
	X(GRID, "GRID", "grid")                 \
	X(SEQ, "SEQ", "seq")                    \
	X(LET, "LET", "let")                    \
	X(WHEN, "WHEN", "when")                 \
	X(ELSE, "ELSE", "else")                 \
	X(SCOPED, "SCOPED", "scoped")           \
	X(PRINT, "PRINT", "print")              \
	X(FORI_LOOP, "FORI_LOOP", "fori_loop")  \
	X(NONE, "NONE", "None")                 \
	X(TRUE, "TRUE", "true")                 \
	X(FALSE, "FALSE", "false")              \
	X(INF, "INF", "inf")                    \
	X(NAN, "NAN", "nan")                    \
	X(F32, "F32", "f32")                    \
	X(F16, "F16", "f16")                    \
	X(BF16, "BF16", "bf16")                 \
	X(I32, "I32", "i32")                    \
	X(I8, "I8", "i8")                       \
	X(U8, "U8", "u8")                       \
	X(U32, "U32", "u32")                    \
	X(F8E4M3, "F8E4M3", "f8e4m3")           \
	X(F8E5M2, "F8E5M2", "f8e5m2")           \
	X(BOOL, "BOOL", "bool")                 \
	/* punctuation */                       \
	X(LPAREN, "LPAREN", "(")                \
	X(RPAREN, "RPAREN", ")")                \
	X(LBRACKET, "LBRACKET", "[")            \
	X(RBRACKET, "RBRACKET", "]")            \
	X(LBRACE, "LBRACE", "{")                \
	X(RBRACE, "RBRACE", "}")                \
	X(COMMA, "COMMA", ",")                  \
	X(COLON, "COLON", ":")                  \
	X(SEMI, "SEMI", ";")                    \
	X(DOT, "DOT", ".")                      \
	X(ELLIPSIS, "ELLIPSIS", "...")          \
	X(ARROW, "ARROW", "->")                 \
	X(PIPE, "PIPE", "|")                    \
	X(ASSIGN, "ASSIGN", "=")                \
	X(PLUS_ASSIGN, "PLUS_ASSIGN", "+=")     \
	X(MINUS_ASSIGN, "MINUS_ASSIGN", "-=")   \
	X(STAR_ASSIGN, "STAR_ASSIGN", "*=")     \
	X(PLUS, "PLUS", "+")                    \
	X(MINUS, "MINUS", "-")                  \
	X(STAR, "STAR", "*")                    \
	X(SLASH, "SLASH", "/")                  \
	X(FLOORDIV, "FLOORDIV", "~/")       \
	X(PERCENT, "PERCENT", "%")              \
	X(EQ, "EQ", "==")                       \
	X(NE, "NE", "!=")                       \
	X(LT, "LT", "<")                        \
	X(LE, "LE", "<=")                       \
	X(GT, "GT", ">")                        \
	X(GE, "GE", ">=")                       \
	X(ANDAND, "ANDAND", "&&")               \
	X(OROR, "OROR", "||")                   \
	X(BANG, "BANG", "!")                    \
	X(AMP, "AMP", "&")                      \
	X(CARET, "CARET", "^")                  \
	X(TILDE, "TILDE", "~")                  \
	X(SHL, "SHL", "<<")                     \
	X(SHR, "SHR", ">>")                     \
	X(STARSTAR, "STARSTAR", "**")           \
	X(AT, "AT", "@")

typedef enum {
#define X(e, n, s) BLK_TOK_##e,
	BLK_TOKENS(X)
#undef X
	BLK_NUM_TOKENS
} BlkTokKind;

/* The largest integer literal: 2^31, so that `-2147483648` (unary minus
 * applied to 2147483648) can be written; the checker range-checks values. */
#define BLK_LEX_INT_MAX 2147483648LL

typedef struct BlkToken {
	BlkTokKind kind;
	BlkLoc loc;
	const char *text; /* points into the source; len bytes */
	size_t len;
	int64_t ival;     /* INT */
	double fval;      /* FLOAT */
	const char *str;  /* STRING: the contents with escapes resolved (arena) */
} BlkToken;

/* Lexes the whole source.  Always returns an array ending with an EOF token
 * (*ntok counts it); errors go to d and the bad bytes are skipped. */
BlkToken *blk_lex(BlkArena *a, BlkDiag *d, const BlkSource *src, int *ntok);

const char *blk_tok_name(BlkTokKind k);     /* "IDENT", "LPAREN" */
const char *blk_tok_spelling(BlkTokKind k); /* "(", "kernel"; NULL for IDENT etc. */
/* For messages: `'('`, `identifier 'foo'`, `end of file`. */
const char *blk_tok_describe(BlkArena *a, const BlkToken *t);

#endif
