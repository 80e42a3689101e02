/* bad_inputs.c - every file of tests/frontend/bad/ must fail with a known
 * first error, and nothing may crash.
 *
 * A bad file starts with its expectation:
 *     // ERROR: LINE:COL: message substring
 *     // NOTE: LINE:COL: message substring   (optional: a note that must come too)
 *     // ERRORS: N                           (optional: at most N errors in all)
 *     // STAGE: parse            (optional; "parse" is the default)
 * Stage "parse" runs blk_parse; stage "check" runs the whole frontend
 * (blk_compile_source).
 *
 * Inputs too big or too binary to commit (deep nesting, junk bytes, every
 * truncation of the examples) are generated here.
 *
 * usage: bad-inputs BADDIR EXAMPLESDIR
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "support/limits.h"

static const char *bad_dir, *examples_dir;

typedef bool (*Stage)(BlkArena *a, BlkDiag *d, const BlkSource *src);

static bool stage_parse(BlkArena *a, BlkDiag *d, const BlkSource *src)
{
	return blk_parse(a, d, src) != NULL;
}

static bool stage_check(BlkArena *a, BlkDiag *d, const BlkSource *src)
{
	return blk_compile_source(a, d, src, NULL, 0) != NULL;
}

/* Runs a stage on text; returns what the diag printed (malloc'd) and sets *ok. */
static char *run_stage(Stage stage, const char *name, const char *text, size_t len, bool *ok)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *mem = open_memstream(&buf, &size);
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, mem, 0);
	BlkSource *src = blk_source_from_string(a, name, text, len);
	*ok = stage(a, d, src);
	if (*ok != (blk_diag_error_count(d) == 0))
		fail_msg("%s: the stage's result disagrees with the error count", name);
	blk_arena_destroy(a);
	fclose(mem);
	return buf;
}

/* The first line of `out` that is an error, or NULL. */
static char *first_error(char *out)
{
	for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strstr(line, ": error: ")) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			return line;
		}
	return NULL;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	*len = fread(s, 1, (size_t)n, f);
	s[*len] = '\0';
	fclose(f);
	return s;
}

/* One file of bad/: checks its first error against its ERROR line. */
static void test_bad_file(void **state)
{
	const char *path = *state;
	size_t len;
	char *text = slurp(path, &len);
	unsigned line = 0, col = 0;
	char want[256] = "", stage_name[32] = "parse";
	const char *h = strstr(text, "// ERROR: ");
	if (!h || sscanf(h, "// ERROR: %u:%u: %255[^\n]", &line, &col, want) != 3)
		fail_msg("%s: no '// ERROR: LINE:COL: message' header", path);
	const char *st = strstr(text, "// STAGE: ");
	if (st)
		sscanf(st, "// STAGE: %31s", stage_name);
	if (strcmp(stage_name, "parse") != 0 && strcmp(stage_name, "check") != 0)
		fail_msg("%s: unknown stage '%s' (parse or check)", path, stage_name);
	Stage stage = strcmp(stage_name, "check") == 0 ? stage_check : stage_parse;
	bool ok;
	char *out = run_stage(stage, path, text, len, &ok);
	char *all = strdup(out ? out : ""); /* first_error cuts out at its line */
	char *err = first_error(out);
	char at[64];
	snprintf(at, sizeof at, ":%u:%u: error: ", line, col);
	if (ok || !err)
		fail_msg("%s: expected an error, got none", path);
	if (!strstr(err, at) || !strstr(err, want))
		fail_msg("%s: expected error at %u:%u containing '%s', got\n%s", path, line, col, want, err);
	/* optional: `// NOTE: LINE:COL: message substring`, a note that must follow */
	const char *nh = strstr(text, "// NOTE: ");
	if (nh) {
		if (sscanf(nh, "// NOTE: %u:%u: %255[^\n]", &line, &col, want) != 3)
			fail_msg("%s: a '// NOTE:' header is not 'LINE:COL: message'", path);
		snprintf(at, sizeof at, ":%u:%u: note: ", line, col);
		const char *found = strstr(all, at);
		if (!found || !strstr(found, want))
			fail_msg("%s: expected a note at %u:%u containing '%s', got\n%s", path, line, col, want, all);
	}
	/* optional: `// ERRORS: N`, no more errors than N (no cascade) */
	const char *ch = strstr(text, "// ERRORS: ");
	unsigned most = 0;
	if (ch && sscanf(ch, "// ERRORS: %u", &most) == 1) {
		unsigned n = 0;
		for (const char *q = all; (q = strstr(q, ": error: ")); q++)
			n++;
		if (n > most)
			fail_msg("%s: %u errors, at most %u expected:\n%s", path, n, most, all);
	}
	free(all);
	free(out);
	free(text);
}

/* Expects the generated input to fail with `want` at line:col. */
static void expect_error(const char *text, size_t len, unsigned line, unsigned col, const char *want)
{
	bool ok;
	char *out = run_stage(stage_parse, "gen.blk", text, len, &ok);
	char *err = first_error(out);
	char at[64];
	snprintf(at, sizeof at, "gen.blk:%u:%u: error: ", line, col);
	assert_false(ok);
	assert_non_null(err);
	if (!strstr(err, at) || !strstr(err, want))
		fail_msg("expected error at %u:%u containing '%s', got\n%s", line, col, want, err);
	free(out);
}

/* 10000 nested parentheses: "nesting too deep", no stack overflow. */
static void test_deep_parens(void **state)
{
	(void)state;
	enum { N = 10000 };
	const char *head = "kernel k(x: out f32[1]) {\n    x[0] = ";
	size_t hl = strlen(head);
	char *s = malloc(hl + 2 * N + 16);
	memcpy(s, head, hl);
	memset(s + hl, '(', N);
	s[hl + N] = '1';
	memset(s + hl + N + 1, ')', N);
	strcpy(s + hl + 2 * N + 1, ";\n}\n");
	/* the error is at the paren that goes past the limit */
	expect_error(s, strlen(s), 2, 11 + 200, "nesting too deep");
	free(s);
}

/* Deep blocks and deep unary chains hit the same limit. */
static void test_deep_blocks_and_unary(void **state)
{
	(void)state;
	enum { N = 5000 };
	char *s = malloc(12 * N + 64);
	strcpy(s, "kernel k(x: out f32[1]) {\n");
	size_t n = strlen(s);
	for (int i = 0; i < N; i++)
		n += (size_t)sprintf(s + n, "when true {");
	expect_error(s, n, 2, 11 * 199 + 6, "nesting too deep"); /* the `true` of the 200th when */
	strcpy(s, "kernel k(x: out f32[1]) {\nx[0] = ");
	n = strlen(s);
	memset(s + n, '-', N);
	n += N;
	s[n] = '\0';
	expect_error(s, n, 2, 8 + 199, "nesting too deep");
	free(s);
}

/* A growable string for generated sources. */
typedef struct Gen {
	char *s;
	size_t n, cap;
} Gen;

static void gen(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (g->n + (size_t)k + 1 > g->cap) {
		g->cap = (g->n + (size_t)k + 1) * 2;
		g->s = realloc(g->s, g->cap);
	}
	va_start(ap, fmt);
	vsnprintf(g->s + g->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	g->n += (size_t)k;
}

/* Trees that are deep without nesting in the parser: a left-associative
 * chain, a postfix chain, and chains spread over nested loop bodies all
 * stop at the expression depth limit, at the node that exceeds it. */
static void test_deep_trees(void **state)
{
	(void)state;
	Gen g = {0};
	gen(&g, "kernel k(x: out f32[1]) {\nx[0] = 1");
	for (int i = 0; i < 5000; i++)
		gen(&g, " + 1");
	gen(&g, ";\n}\n");
	/* the 1000th `+` builds the node of height 1001 */
	expect_error(g.s, g.n, 2, 4 * 1000 + 6, "expression nested too deeply (more than 1000 levels)");
	g.n = 0;
	gen(&g, "kernel k(x: in f32[1], y: out f32[1]) {\ny[0] = x");
	for (int i = 0; i < 5000; i++)
		gen(&g, ".T");
	expect_error(g.s, g.n, 2, 2 * 1000 + 7, "expression nested too deeply");
	g.n = 0;
	gen(&g, "kernel k(x: out f32[1]) {\nlet a = 1.0;\nx[0] = ");
	for (int i = 0; i < 8; i++)
		gen(&g, "fori_loop(0, 2, a) |i, a| {\n");
	gen(&g, "a\n");
	for (int i = 0; i < 8; i++) {
		gen(&g, "}");
		for (int j = 0; j < 150; j++)
			gen(&g, " + a");
		gen(&g, "\n");
	}
	gen(&g, ";\n}\n");
	/* each body adds its chain: the 7th chain's 79th `+` is too deep */
	expect_error(g.s, g.n, 18, 4 * 79 + 3, "expression nested too deeply");
	free(g.s);
}

/* Just under the limit, the whole frontend runs (and the checker's
 * recursion fits in the stack). */
static void test_deep_tree_under_limit(void **state)
{
	(void)state;
	Gen g = {0};
	gen(&g, "kernel k(x: out f32[1]) {\nx[0] = 1.0");
	for (int i = 0; i < 990; i++)
		gen(&g, " + 1.0");
	gen(&g, ";\n}\n");
	bool ok;
	free(run_stage(stage_check, "gen.blk", g.s, g.n, &ok));
	assert_true(ok);
	free(g.s);
}

/* A source past BLK_MAX_SOURCE_BYTES is refused before lexing; one with
 * more than BLK_MAX_TOKENS tokens stops at the limit. */
static void test_source_limits(void **state)
{
	(void)state;
	size_t n = (size_t)BLK_MAX_SOURCE_BYTES + 1;
	char *s = malloc(n);
	memset(s, ' ', n);
	expect_error(s, n, 1, 1, "gen.blk is larger than 16777216 bytes, the limit of a source");
	n = 2 * (size_t)BLK_MAX_TOKENS + 16;
	for (size_t i = 0; i < n; i += 2)
		s[i] = ';';
	memcpy(s, "kernel ", 7);
	expect_error(s, n, 1, 2 * BLK_MAX_TOKENS + 5, "more than 262144 tokens; the limit of a source");
	free(s);
}

/* Bytes 0x00 0xff 0x80 and other junk: a located error, no crash. */
static void test_binary_junk(void **state)
{
	(void)state;
	static const char junk[] = {'k', 'e', 'r', 'n', 'e', 'l', ' ', '\0', '\xff', '\x80', 'x', '\x01'};
	expect_error(junk, sizeof junk, 1, 8, "NUL byte");
	static const char hi[] = {'\xff', '\x80', '\xfe', ' ', 'k'};
	expect_error(hi, sizeof hi, 1, 1, "invalid character 0xff");
	/* A flood of junk stops at the error limit. */
	char *flood = malloc(65536);
	for (int i = 0; i < 65536; i++)
		flood[i] = (char)(i * 7919 % 251);
	bool ok;
	free(run_stage(stage_parse, "flood.blk", flood, 65536, &ok));
	assert_false(ok);
	free(flood);
}

/* Every prefix of every example either parses or fails cleanly. */
static void test_truncated_examples(void **state)
{
	(void)state;
	DIR *dir = opendir(examples_dir);
	assert_non_null(dir);
	for (struct dirent *e; (e = readdir(dir));) {
		size_t nl = strlen(e->d_name);
		if (nl < 5 || strcmp(e->d_name + nl - 4, ".blk") != 0)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", examples_dir, e->d_name);
		size_t len;
		char *text = slurp(path, &len);
		for (size_t cut = 0; cut <= len; cut++) {
			char saved = text[cut];
			text[cut] = '\0';
			bool ok;
			free(run_stage(stage_parse, path, text, cut, &ok));
			text[cut] = saved;
			if (cut == len)
				assert_true(ok);
		}
		free(text);
	}
	closedir(dir);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct CMUnitTest *)a)->name, ((const struct CMUnitTest *)b)->name);
}

/* The generated tests own their name and path (main strdup'd them). */
static void free_tests(struct CMUnitTest *tests, int n)
{
	for (int i = 0; i < n; i++) {
		free((char *)tests[i].name);
		free((void *)tests[i].initial_state);
	}
	free(tests);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bad-inputs BADDIR EXAMPLESDIR\n");
		return 2;
	}
	bad_dir = argv[1];
	examples_dir = argv[2];
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_deep_parens),
		cmocka_unit_test(test_deep_blocks_and_unary),
		cmocka_unit_test(test_deep_trees),
		cmocka_unit_test(test_deep_tree_under_limit),
		cmocka_unit_test(test_source_limits),
		cmocka_unit_test(test_binary_junk),
		cmocka_unit_test(test_truncated_examples),
	};
	DIR *dir = opendir(bad_dir);
	if (!dir) {
		perror(bad_dir);
		return 1;
	}
	int n = 0, cap = 64;
	struct CMUnitTest *tests = calloc((size_t)cap, sizeof *tests);
	for (struct dirent *e; (e = readdir(dir));) {
		size_t nl = strlen(e->d_name);
		if (nl < 5 || strcmp(e->d_name + nl - 4, ".blk") != 0)
			continue;
		if (n == cap)
			tests = realloc(tests, sizeof *tests * (size_t)(cap *= 2));
		char *path = malloc(strlen(bad_dir) + nl + 2);
		sprintf(path, "%s/%s", bad_dir, e->d_name);
		tests[n++] = (struct CMUnitTest){.name = strdup(e->d_name),
		                                 .test_func = test_bad_file,
		                                 .initial_state = path};
	}
	closedir(dir);
	qsort(tests, (size_t)n, sizeof *tests, by_name);
	int failed = _cmocka_run_group_tests("bad-files", tests, (size_t)n, NULL, NULL);
	failed += cmocka_run_group_tests(fixed, NULL, NULL);
	free_tests(tests, n);
	return failed ? 1 : 0;
}
