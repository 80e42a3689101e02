/* test_parser.c - precedence, every statement and postfix form, kernel
 * headers, and error recovery that reports several errors in one run. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"

typedef struct Parsed {
	BlkArena *a;
	BlkAstFile *f;
	int errors;
	char *diag;
} Parsed;

static Parsed parse(const char *text)
{
	Parsed r = {0};
	size_t size;
	FILE *mem = open_memstream(&r.diag, &size);
	r.a = blk_arena_create();
	BlkDiag *d = blk_diag_create(r.a, mem, 0);
	BlkSource *src = blk_source_from_string(r.a, "t.blk", text, strlen(text));
	r.f = blk_parse(r.a, d, src);
	r.errors = blk_diag_error_count(d);
	fclose(mem);
	return r;
}

static void done(Parsed *r)
{
	blk_arena_destroy(r->a);
	free(r->diag);
}

/* The dump without locations, on one line: "(binary + (int 1) (int 2))". */
static char *squash(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	while (*s) {
		if (*s == ' ' && s[1] == '@' && isdigit((unsigned char)s[2])) { /* drop " @L:C" */
			for (s += 2; isdigit((unsigned char)*s) || *s == ':'; s++)
				;
		} else if (*s == '\n') {
			while (*++s == ' ')
				;
			if (o > out)
				*o++ = ' ';
		} else {
			*o++ = *s++;
		}
	}
	while (o > out && o[-1] == ' ')
		o--;
	*o = '\0';
	return out;
}

static char *dump_file(const BlkAstFile *f)
{
	char *buf;
	size_t size;
	FILE *mem = open_memstream(&buf, &size);
	blk_ast_print(mem, f);
	fclose(mem);
	char *s = squash(buf);
	free(buf);
	return s;
}

/* Parses `y[0] = EXPR;` in a kernel and checks the squashed tree of EXPR. */
static void expect_expr(const char *expr, const char *want)
{
	char text[1024];
	snprintf(text, sizeof text, "kernel k(y: out f32[N]) { y[0] = %s; }", expr);
	Parsed r = parse(text);
	if (!r.f)
		fail_msg("'%s' did not parse:\n%s", expr, r.diag);
	char *buf;
	size_t size;
	FILE *mem = open_memstream(&buf, &size);
	blk_ast_print_expr(mem, r.f->kernels[0]->body->stmts[0]->value, 0);
	fclose(mem);
	char *got = squash(buf);
	if (strcmp(got, want) != 0)
		fail_msg("'%s'\n  got  %s\n  want %s", expr, got, want);
	free(got);
	free(buf);
	done(&r);
}

static void test_precedence(void **state)
{
	(void)state;
	expect_expr("1 + 2 * 3", "(binary + (int 1) (binary * (int 2) (int 3)))");
	expect_expr("1 - 2 - 3", "(binary - (binary - (int 1) (int 2)) (int 3))");
	expect_expr("a ~/ b % c / d", "(binary / (binary % (binary ~/ (name a) (name b)) (name c)) (name d))");
	expect_expr("-a * b", "(binary * (unary - (name a)) (name b))");
	expect_expr("--a", "(unary - (unary - (name a)))");
	expect_expr("!a && b || c && d",
	            "(binary || (binary && (unary ! (name a)) (name b)) (binary && (name c) (name d)))");
	expect_expr("a + 1 < b * 2", "(binary < (binary + (name a) (int 1)) (binary * (name b) (int 2)))");
	expect_expr("a == b && c", "(binary && (binary == (name a) (name b)) (name c))");
	expect_expr("(1 + 2) * 3", "(binary * (binary + (int 1) (int 2)) (int 3))");
	expect_expr("-x[0].T", "(unary - (T (index (name x) (indices (int 0)))))");
}

/* Python's order: | below ^ below & below shifts below + -, all above
 * comparisons; ~ is unary like -. */
static void test_bitwise_precedence(void **state)
{
	(void)state;
	expect_expr("a | b ^ c & d", "(binary | (name a) (binary ^ (name b) (binary & (name c) (name d))))");
	expect_expr("a & b << 1 + c", "(binary & (name a) (binary << (name b) (binary + (int 1) (name c))))");
	expect_expr("a >> 2 >> b", "(binary >> (binary >> (name a) (int 2)) (name b))");
	expect_expr("~a & -b", "(binary & (unary ~ (name a)) (unary - (name b)))");
	expect_expr("a | b == c & d", "(binary == (binary | (name a) (name b)) (binary & (name c) (name d)))");
	expect_expr("a == b | c || d", "(binary || (binary == (name a) (binary | (name b) (name c))) (name d))");
}

/* ** binds tighter than a unary operator on its left, looser than one on
 * its right, and to the right (Python). */
static void test_power(void **state)
{
	(void)state;
	expect_expr("-a ** 2", "(unary - (binary ** (name a) (int 2)))");
	expect_expr("a ** b ** c", "(binary ** (name a) (binary ** (name b) (name c)))");
	expect_expr("a ** -b * c", "(binary * (binary ** (name a) (unary - (name b))) (name c))");
	expect_expr("2.0 * x[0] ** 2", "(binary * (float 2.0) (binary ** (index (name x) (indices (int 0))) (int 2)))");
}

/* Python's conveniences: `@` at `*`'s level, `x.sum(...)` as a call with
 * the receiver first, `None` in an index. */
static void test_conveniences(void **state)
{
	(void)state;
	expect_expr("a @ b * c + d", "(binary + (binary * (binary @ (name a) (name b)) (name c)) (name d))");
	expect_expr("x.sum(axis = 1)", "(call .sum (name x) (kwarg axis (int 1)))");
	expect_expr("x.T.max()", "(call .max (T (name x)))");
	expect_expr("x[:, None]", "(index (name x) (indices (slice) (newaxis)))");
	expect_expr("x[None][..., None]",
	            "(index (index (name x) (indices (newaxis))) (indices (ellipsis) (newaxis)))");
}

/* `x > 0 & y > 0` means `x > (0 & y) > 0` in Python; here it is refused. */
static void test_bitand_of_compares_is_refused(void **state)
{
	(void)state;
	Parsed r = parse("kernel k(y: out f32[N]) { y[0] = a > 0 & b > 0; }");
	assert_null(r.f);
	assert_non_null(strstr(r.diag, "t.blk:1:44: error: comparisons do not chain, and `&` binds "
	                               "tighter than comparisons (as in Python): write "
	                               "`(a > 0) & (b > 0)`"));
	done(&r);
}

static void test_cmp_does_not_chain(void **state)
{
	(void)state;
	Parsed r = parse("kernel k(y: out f32[N]) { y[0] = a == b == c; }");
	assert_null(r.f);
	assert_non_null(strstr(r.diag, "comparisons do not chain"));
	done(&r);
}

static void test_literals(void **state)
{
	(void)state;
	expect_expr("true", "(bool true)");
	expect_expr("false", "(bool false)");
	expect_expr("inf", "(inf)");
	expect_expr("-nan", "(unary - (nan))");
	expect_expr("2.5e3", "(float 2.5e3)");
	expect_expr("-2147483648", "(unary - (int 2147483648))");
	expect_expr("bf16", "(dtype bf16)");
}

static void test_postfix_and_calls(void **state)
{
	(void)state;
	expect_expr("x[:, ds(k * 4, 4), ...]",
	            "(index (name x) (indices (slice) (ds (binary * (name k) (int 4)) (int 4)) (ellipsis)))");
	expect_expr("r.at[i, :]", "(at (name r) (indices (name i) (slice)))");
	expect_expr("x.astype(T).shape", "(attr shape (astype (name x) (name T)))");
	expect_expr("x[...].astype(f16)", "(astype (index (name x) (indices (ellipsis))) (dtype f16))");
	expect_expr("sum(e, axis = 1, keepdims = true)",
	            "(call sum (name e) (kwarg axis (int 1)) (kwarg keepdims (bool true)))");
	expect_expr("f()", "(call f)");
	expect_expr("zeros((BM, BN), f32)", "(call zeros (tuple (name BM) (name BN)) (dtype f32))");
	expect_expr("(a,)", "(tuple (name a))");
	expect_expr("(a, b,)", "(tuple (name a) (name b))");
}

static void test_fori_forms(void **state)
{
	(void)state;
	expect_expr("fori_loop(0, n, acc) |i, acc| { acc + 1.0 }",
	            "(fori_loop (int 0) (name n) (name acc) (ivar i) (carry acc) "
	            "(block (result (binary + (name acc) (float 1.0)))))");
	expect_expr("fori_loop(0, 4, (a, b), unroll = true) |i, (a, b)| { let c = a; (c, b) }",
	            "(fori_loop (int 0) (int 4) (tuple (name a) (name b)) (kwarg unroll (bool true)) "
	            "(ivar i) (carries a b) (block (let c (name a)) (result (tuple (name c) (name b)))))");
	expect_expr("fori_loop(0, 4) |i| { atomic_add(r, 1.0); }",
	            "(fori_loop (int 0) (int 4) (ivar i) (block (expr (call atomic_add (name r) (float 1.0)))))");
}

static void test_statements(void **state)
{
	(void)state;
	Parsed r = parse("kernel k(x: inout f32[N]) {\n"
	                 "  let a = 1;\n"
	                 "  let (b, c) = f();\n"
	                 "  x.at[0][1] = a;\n"
	                 "  when a < 2 { print(\"a=\\n\", a, b); } else { g(); }\n"
	                 "  scoped (t: f32[4, 4], u: T[8]) { t[...] = 0.0; }\n"
	                 "  fori_loop(0, 2) |i| { };\n"
	                 "}\n");
	if (!r.f)
		fail_msg("%s", r.diag);
	char *s = dump_file(r.f);
	assert_string_equal(s,
		"(file t.blk (kernel k (param x inout (dtype f32) (shape (name N))) (block "
		"(let a (int 1)) "
		"(let (b c) (call f)) "
		"(store (at (name x) (indices (int 0))) (indices (int 1)) (name a)) "
		"(when (binary < (name a) (int 2)) (block (print \"a=\\n\" (name a) (name b))) "
		"(else (block (expr (call g))))) "
		"(scoped (param t scratch (dtype f32) (shape (int 4) (int 4))) "
		"(param u scratch (name T) (shape (int 8))) (block (store (name t) (indices (ellipsis)) (float 0.0)))) "
		"(expr (fori_loop (int 0) (int 2) (ivar i) (block))))))");
	free(s);
	done(&r);
}

static void test_kernel_header(void **state)
{
	(void)state;
	Parsed r = parse("kernel a[T = bf16, B = 2,](x: in T[M, 2 * N] block (None, B) index (i, j) -> (i, j + 1),\n"
	                 "  s: scratch f32[4], y: out i32[]) grid (4, seq cdiv(M, B),) { }\n"
	                 "kernel b(z: out bool[1] block (1)) grid () { }");
	if (!r.f)
		fail_msg("%s", r.diag);
	char *s = dump_file(r.f);
	assert_string_equal(s,
		"(file t.blk (kernel a (cparam T (dtype bf16)) (cparam B (int 2)) "
		"(param x in (name T) (shape (name M) (binary * (int 2) (name N))) (block (none) (name B)) "
		"(index i j (name i) (binary + (name j) (int 1)))) "
		"(param s scratch (dtype f32) (shape (int 4))) "
		"(param y out (dtype i32) (shape)) "
		"(grid (axis (int 4)) (axis seq (call cdiv (name M) (name B)))) (block)) "
		"(kernel b (param z out (dtype bool) (shape (int 1)) (block (int 1))) (grid) (block)))");
	free(s);
	assert_int_equal(r.f->kernels[0]->params[0].block_locs[0].col, 53);
	done(&r);
}

/* Recovery: one error per broken statement, and on into the next kernel. */
static void test_recovery_reports_several(void **state)
{
	(void)state;
	Parsed r = parse("kernel k(y: out f32[N]) {\n"
	                 "  let = 1;\n"
	                 "  y[0] = (1 + ;\n"
	                 "  let ok = 2;\n"
	                 "  y[0] = 3 4;\n"
	                 "}\n"
	                 "kernel j(x: bad f32[N]) { let a = ; }\n"
	                 "kernel m(y: out f32[N]) { y = 1; }\n");
	assert_null(r.f);
	assert_int_equal(r.errors, 6);
	const char *want[] = {"t.blk:2:7: error: expected a name, found '='",
	                      "t.blk:3:15: error: expected an expression, found ';'",
	                      "t.blk:5:12: error: expected ';', found integer '4'",
	                      "t.blk:7:13: error: expected an access",
	                      "t.blk:7:35: error: expected an expression, found ';'",
	                      "t.blk:8:29: error: only a Ref can be assigned to"};
	for (int i = 0; i < 6; i++)
		if (!strstr(r.diag, want[i]))
			fail_msg("missing '%s' in:\n%s", want[i], r.diag);
	done(&r);
}

/* The error output stops when the diag saturates; parsing ends cleanly. */
static void test_saturation(void **state)
{
	(void)state;
	size_t n = 100 * 12 + 64;
	char *s = malloc(n);
	strcpy(s, "kernel k(y: out f32[N]) {\n");
	for (int i = 0; i < 100; i++)
		strcat(s, "  let = 1;\n");
	strcat(s, "}\n");
	Parsed r = parse(s);
	assert_null(r.f);
	assert_true(r.errors >= 20 && r.errors <= 21);
	done(&r);
	free(s);
}

/* Helpers at file scope, closures as expressions; `fn` is a word only
 * there, so it stays free as a name in kernels. */
static void test_helpers_and_closures(void **state)
{
	(void)state;
	Parsed r = parse("fn f(a, b,) { let c = a; c + b }\nfn g() { }\n"
	                 "kernel k(y: out f32[8]) { let fn = 1; y[0] = f(fn, 2); }\n"
	                 "fn h(r) { r[0] = 1.0; }\n");
	assert_non_null(r.f);
	assert_int_equal(r.f->nfns, 3);
	assert_int_equal(r.f->nkernels, 1);
	char *got = dump_file(r.f);
	assert_non_null(strstr(got, "(fn f a b (block (let c (name a)) (result (binary + (name c) (name b)))))"));
	assert_non_null(strstr(got, "(fn g (block))"));
	assert_non_null(strstr(got, "(let fn (int 1))"));
	free(got);
	done(&r);
	expect_expr("associative_scan(|a, b| a * 0.9 + b, x)",
	            "(call associative_scan (closure (params a b (block (result (binary + (binary * (name a) "
	            "(float 0.9)) (name b)))))) (name x))");
	expect_expr("associative_scan(|a, b| { let c = a; c }, x, axis = 1)",
	            "(call associative_scan (closure (params a b (block (let c (name a)) (result (name c))))) "
	            "(name x) (kwarg axis (int 1)))");
	expect_expr("|a| a | 1", "(closure (params a (block (result (binary | (name a) (int 1))))))");
	r = parse("fn f(a b) { a }\nkernel k(y: out f32[8]) { y[0] = 1.0; }\n");
	assert_null(r.f);
	assert_non_null(strstr(r.diag, "t.blk:1:8: error: expected ')', found identifier 'b'"));
	done(&r);
	r = parse("fn (a) { a }\n");
	assert_null(r.f);
	assert_non_null(strstr(r.diag, "t.blk:1:1: error: expected 'kernel' or 'fn', found identifier 'fn'"));
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_bitwise_precedence),
		cmocka_unit_test(test_power),
		cmocka_unit_test(test_conveniences),
		cmocka_unit_test(test_bitand_of_compares_is_refused),
		cmocka_unit_test(test_cmp_does_not_chain),
		cmocka_unit_test(test_literals),
		cmocka_unit_test(test_postfix_and_calls),
		cmocka_unit_test(test_fori_forms),
		cmocka_unit_test(test_statements),
		cmocka_unit_test(test_kernel_header),
		cmocka_unit_test(test_recovery_reports_several),
		cmocka_unit_test(test_saturation),
		cmocka_unit_test(test_helpers_and_closures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
