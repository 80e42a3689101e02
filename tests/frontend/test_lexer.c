/* test_lexer.c - every token kind, locations, literals and every lexical error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "frontend/lex.h"

typedef struct Lexed {
	BlkArena *a;
	BlkToken *t;
	int n;
	int errors;
	char *diag; /* what the diag printed */
} Lexed;

static Lexed lex_n(const char *text, size_t len)
{
	Lexed r = {0};
	size_t size;
	FILE *mem = open_memstream(&r.diag, &size);
	r.a = blk_arena_create();
	BlkDiag *d = blk_diag_create(r.a, mem, 0);
	BlkSource *src = blk_source_from_string(r.a, "t.blk", text, len);
	r.t = blk_lex(r.a, d, src, &r.n);
	r.errors = blk_diag_error_count(d);
	fclose(mem);
	return r;
}

static Lexed lex(const char *text) { return lex_n(text, strlen(text)); }

static void done(Lexed *r)
{
	blk_arena_destroy(r->a);
	free(r->diag);
}

/* Every keyword and punctuator, lexed from its own spelling. */
static void test_every_spelled_token(void **state)
{
	(void)state;
	for (int k = 0; k < BLK_NUM_TOKENS; k++) {
		const char *sp = blk_tok_spelling((BlkTokKind)k);
		if (!sp || k == BLK_TOK_EOF)
			continue;
		Lexed r = lex(sp);
		assert_int_equal(r.errors, 0);
		assert_int_equal(r.n, 2);
		if (r.t[0].kind != (BlkTokKind)k)
			fail_msg("'%s' lexed as %s", sp, blk_tok_name(r.t[0].kind));
		assert_int_equal(r.t[1].kind, BLK_TOK_EOF);
		done(&r);
	}
}

static void test_idents_and_builtins(void **state)
{
	(void)state;
	Lexed r = lex("zeros dot exp ds at astype T _x1 kernels f64 None");
	BlkTokKind want[] = {BLK_TOK_IDENT, BLK_TOK_IDENT, BLK_TOK_IDENT, BLK_TOK_IDENT,
	                     BLK_TOK_IDENT, BLK_TOK_IDENT, BLK_TOK_IDENT, BLK_TOK_IDENT,
	                     BLK_TOK_IDENT, BLK_TOK_IDENT, BLK_TOK_NONE, BLK_TOK_EOF};
	assert_int_equal(r.n, 12);
	for (int i = 0; i < r.n; i++)
		assert_int_equal(r.t[i].kind, want[i]);
	assert_int_equal(r.t[8].len, 7);
	done(&r);
}

/* Longest match between operators that share a prefix. */
static void test_maximal_munch(void **state)
{
	(void)state;
	Lexed r = lex("a<=b==c!=!d->e...f.g~/h&&i||j|k/l");
	BlkTokKind want[] = {BLK_TOK_IDENT, BLK_TOK_LE, BLK_TOK_IDENT, BLK_TOK_EQ, BLK_TOK_IDENT,
	                     BLK_TOK_NE, BLK_TOK_BANG, BLK_TOK_IDENT, BLK_TOK_ARROW, BLK_TOK_IDENT,
	                     BLK_TOK_ELLIPSIS, BLK_TOK_IDENT, BLK_TOK_DOT, BLK_TOK_IDENT,
	                     BLK_TOK_FLOORDIV, BLK_TOK_IDENT, BLK_TOK_ANDAND, BLK_TOK_IDENT,
	                     BLK_TOK_OROR, BLK_TOK_IDENT, BLK_TOK_PIPE, BLK_TOK_IDENT,
	                     BLK_TOK_SLASH, BLK_TOK_IDENT, BLK_TOK_EOF};
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.n, (int)(sizeof want / sizeof want[0]));
	for (int i = 0; i < r.n; i++)
		assert_int_equal(r.t[i].kind, want[i]);
	done(&r);
}

static void test_numbers(void **state)
{
	(void)state;
	Lexed r = lex("0 42 2147483648 1.5 2. 1e3 2.5E-2 7e+1");
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.t[0].kind, BLK_TOK_INT);
	assert_int_equal(r.t[1].ival, 42);
	assert_int_equal(r.t[2].ival, 2147483648LL);
	assert_int_equal(r.t[3].kind, BLK_TOK_FLOAT);
	assert_true(r.t[3].fval == 1.5);
	assert_true(r.t[4].fval == 2.0);
	assert_true(r.t[5].fval == 1000.0);
	assert_true(r.t[6].fval == 0.025);
	assert_true(r.t[7].fval == 70.0);
	done(&r);
}

/* Hex literals are 32-bit patterns: past 0x7fffffff, negative i32s. */
static void test_hex(void **state)
{
	(void)state;
	Lexed r = lex("0xFF 0x7fffffff 0X80000000 0xffffffff 0x00000000009E3779B9");
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.t[0].kind, BLK_TOK_INT);
	assert_int_equal(r.t[0].ival, 255);
	assert_int_equal(r.t[1].ival, 2147483647);
	assert_int_equal(r.t[2].ival, INT32_MIN);
	assert_int_equal(r.t[3].ival, -1);
	assert_int_equal(r.t[4].ival, (int32_t)0x9E3779B9u);
	done(&r);
}

static void test_strings(void **state)
{
	(void)state;
	Lexed r = lex("\"a\\tb\\n\\\\ \\\"q\\\"\"");
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.t[0].kind, BLK_TOK_STRING);
	assert_string_equal(r.t[0].str, "a\tb\n\\ \"q\"");
	done(&r);
}

/* Lines and columns count from 1; columns count bytes; comments count lines. */
static void test_locations(void **state)
{
	(void)state;
	Lexed r = lex("a\n  b /* x\n\n */ c // d\n\te");
	assert_int_equal(r.n, 5);
	unsigned want[][2] = {{1, 1}, {2, 3}, {4, 5}, {5, 2}, {5, 3}};
	for (int i = 0; i < r.n; i++) {
		assert_int_equal(r.t[i].loc.line, want[i][0]);
		assert_int_equal(r.t[i].loc.col, want[i][1]);
	}
	done(&r);
}

/* One lexical error: its count, location and message. */
static void expect_error(const char *text, size_t len, const char *where, const char *msg)
{
	Lexed r = lex_n(text, len);
	if (r.errors < 1 || !strstr(r.diag, where) || !strstr(r.diag, msg))
		fail_msg("lexing '%s': wanted '%s' ... '%s', got:\n%s", text, where, msg, r.diag);
	assert_int_equal(r.t[r.n - 1].kind, BLK_TOK_EOF);
	done(&r);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("a /* b\n c", 9, "t.blk:1:3: error:", "unterminated block comment");
	expect_error("x \"abc\n", 7, "t.blk:1:3: error:", "unterminated string");
	expect_error("\"ab", 3, "t.blk:1:1: error:", "unterminated string");
	expect_error("\"a\\", 3, "t.blk:1:3: error:", "invalid escape");
	expect_error("\"\\x\"", 4, "t.blk:1:2: error:", "invalid escape");
	expect_error("  99999999999999999999", 22, "t.blk:1:3: error:", "integer literal too large");
	expect_error("2147483649", 10, "t.blk:1:1: error:", "integer literal too large");
	expect_error("1e99999", 7, "t.blk:1:1: error:", "float literal out of range");
	expect_error("1e", 2, "t.blk:1:1: error:", "exponent has no digits");
	expect_error("1.5e-", 5, "t.blk:1:1: error:", "exponent has no digits");
	expect_error("12abc", 5, "t.blk:1:1: error:", "malformed number '12abc'");
	expect_error("0x100000000", 11, "t.blk:1:1: error:", "hex literal too large (the limit is 0xFFFFFFFF, 32 bits)");
	expect_error("0xfg", 4, "t.blk:1:1: error:", "malformed number '0xfg'");
	expect_error("a $", 3, "t.blk:1:3: error:", "invalid character '$'");
	expect_error("a\n #", 4, "t.blk:2:2: error:", "invalid character '#'");
	expect_error("a \x01", 3, "t.blk:1:3: error:", "invalid character 0x01");
	expect_error("\xc3\xa9", 2, "t.blk:1:1: error:", "invalid character 0xc3 (and more)");
	expect_error("a\0b", 3, "t.blk:1:2: error:", "NUL byte");
	expect_error("a ` b", 5, "t.blk:1:3: error:", "invalid character '`'");
}

/* Lexing goes on after an error; a run of junk is one error. */
static void test_recovery(void **state)
{
	(void)state;
	Lexed r = lex_n("a \xff\xfe\xfd b $ c", 11);
	assert_int_equal(r.errors, 2);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.t[1].kind, BLK_TOK_IDENT);
	assert_int_equal(r.t[1].loc.col, 7);
	done(&r);
}

/* A NUL inside the text is not the end: the lexer reads to len, not to NUL. */
static void test_embedded_nul_is_not_eof(void **state)
{
	(void)state;
	Lexed r = lex_n("a\0b", 3);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.t[1].kind, BLK_TOK_IDENT);
	assert_int_equal(r.t[1].loc.col, 3);
	done(&r);
}

static void test_dump(void **state)
{
	(void)state;
	char *buf;
	size_t size;
	FILE *mem = open_memstream(&buf, &size);
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 0);
	BlkSource *src = blk_source_from_string(a, "t.blk", "let x = 1.5;", 12);
	assert_true(blk_lex_dump(mem, src, d));
	fclose(mem);
	assert_string_equal(buf, "1:1 LET 'let'\n1:5 IDENT 'x'\n1:7 ASSIGN '='\n"
	                         "1:9 FLOAT '1.5'\n1:12 SEMI ';'\n1:13 EOF ''\n");
	free(buf);
	src = blk_source_from_string(a, "t.blk", "$", 1);
	mem = fopen("/dev/null", "w");
	d = blk_diag_create(a, mem, 0);
	assert_false(blk_lex_dump(mem, src, d));
	fclose(mem);
	blk_arena_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_spelled_token),
		cmocka_unit_test(test_idents_and_builtins),
		cmocka_unit_test(test_maximal_munch),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_locations),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_recovery),
		cmocka_unit_test(test_embedded_nul_is_not_eof),
		cmocka_unit_test(test_dump),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
