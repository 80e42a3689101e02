/* test_world.c - several ranks in the interpreter: symmetric params read
 * and written through peer Refs, signals, rank_barrier, atomics into a peer,
 * and the errors (deadlock, a bad peer rank, a rank that fails, mismatched
 * symmetric arrays, the checker's rules), written as .blk text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "interp/interp.h"

enum { MAXR = 8, MAXA = 4 };

typedef struct Run {
	BlkArena *a;
	BlkDiag *d;
	BlkKernel *k;
	char *err;
	size_t errlen;
	FILE *errf;
} Run;

static bool compile_text(Run *r, const char *text)
{
	memset(r, 0, sizeof *r);
	r->a = blk_arena_create();
	r->errf = open_memstream(&r->err, &r->errlen);
	r->d = blk_diag_create(r->a, r->errf, 0);
	BlkSource *src = blk_source_from_string(r->a, "w.blk", text, strlen(text));
	BlkModule *m = blk_compile_source(r->a, r->d, src, NULL, 0);
	r->k = m ? blk_module_find(m, "k") : NULL;
	fflush(r->errf);
	return r->k != NULL;
}

static void compile(Run *r, const char *text)
{
	if (!compile_text(r, text))
		fail_msg("did not compile:\n%s\n%s", text, r->err ? r->err : "");
}

static void run_free(Run *r)
{
	fclose(r->errf);
	free(r->err);
	blk_arena_destroy(r->a);
}

/* Each rank's arrays: na arrays of rank 1 (len[i] elements, dtype dt[i]);
 * data[r][i] points at rank r's array i. */
static bool run_world(Run *r, int nranks, int na, const BlkDType *dt, const int64_t *len,
                      void *data[MAXR][MAXA])
{
	BlkArrayDesc ad[MAXR][MAXA];
	const BlkArrayDesc *ads[MAXR];
	void *const *ptrs[MAXR];
	for (int q = 0; q < nranks; q++) {
		for (int i = 0; i < na; i++)
			ad[q][i] = (BlkArrayDesc){ .dtype = dt[i], .rank = 1, .shape = { len[i] },
			                           .strides = { 1 } };
		ads[q] = ad[q];
		ptrs[q] = data[q];
	}
	bool ok = blk_interp_run_world(r->k, nranks, ads, ptrs, na, NULL, r->d, NULL);
	fflush(r->errf);
	return ok;
}

static void must_run(Run *r, int nranks, int na, const BlkDType *dt, const int64_t *len,
                     void *data[MAXR][MAXA])
{
	if (!run_world(r, nranks, na, dt, len, data))
		fail_msg("run on %d ranks failed:\n%s", nranks, r->err);
}

/* y = 2 * (the next rank's x) + my_rank(), on 1, 2, 3 and 4 ranks. */
static void test_ring_read(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in symmetric f32[N], y: out f32[N]) {\n"
	            "    let next = (my_rank() + 1) % world();\n"
	            "    // a peer of a peer is that peer\n"
	            "    y[...] = x.on(0).on(next)[...] * 2.0 + my_rank().astype(f32);\n"
	            "}\n");
	for (int n = 1; n <= 4; n++) {
		float x[MAXR][5], y[MAXR][5];
		void *data[MAXR][MAXA];
		for (int q = 0; q < n; q++) {
			for (int i = 0; i < 5; i++)
				x[q][i] = (float)(q * 10 + i), y[q][i] = -1;
			data[q][0] = x[q], data[q][1] = y[q];
		}
		must_run(&r, n, 2, (BlkDType[]){ BLK_F32, BLK_F32 }, (int64_t[]){ 5, 5 }, data);
		for (int q = 0; q < n; q++)
			for (int i = 0; i < 5; i++)
				assert_float_equal(y[q][i], 2 * x[(q + 1) % n][i] + q, 0);
	}
	run_free(&r);
}

/* An all-gather that pushes: each rank writes its row into every rank's ag
 * and signals it there; each waits for all rows, then reads them (the
 * waits order the peers' writes before the reads). */
static const char *all_gather =
	"kernel k[S = 4](x: in f32[S], ag: inout symmetric f32[R, S], o: out f32[R, S],\n"
	"                flags: signal[R]) {\n"
	"    let me = my_rank();\n"
	"    fori_loop(0, world()) |p| {\n"
	"        ag.on(p)[me, :] = x[...];\n"
	"        signal_add(flags.on(p).at[me], 1);\n"
	"    };\n"
	"    fori_loop(0, world()) |p| { signal_wait(flags.at[p], 1); };\n"
	"    o[...] = ag[...] + 0.5;\n"
	"}\n";

static void test_all_gather(void **state)
{
	(void)state;
	Run r;
	compile(&r, all_gather);
	for (int n = 1; n <= 4; n++) {
		float x[MAXR][4], ag[MAXR][16], out[MAXR][16];
		int32_t flags[MAXR][4] = { { 0 } };
		void *data[MAXR][MAXA];
		BlkArrayDesc ad[MAXR][4];
		const BlkArrayDesc *ads[MAXR];
		void *const *ptrs[MAXR];
		for (int q = 0; q < n; q++) {
			for (int i = 0; i < 4; i++)
				x[q][i] = (float)(100 * q + i);
			for (int i = 0; i < 16; i++)
				ag[q][i] = -7, out[q][i] = -7;
			data[q][0] = x[q], data[q][1] = ag[q], data[q][2] = out[q], data[q][3] = flags[q];
			ad[q][0] = (BlkArrayDesc){ .dtype = BLK_F32, .rank = 1, .shape = { 4 }, .strides = { 1 } };
			ad[q][1] = (BlkArrayDesc){ .dtype = BLK_F32, .rank = 2, .shape = { n, 4 }, .strides = { 4, 1 } };
			ad[q][2] = ad[q][1];
			ad[q][3] = (BlkArrayDesc){ .dtype = BLK_I32, .rank = 1, .shape = { n }, .strides = { 1 } };
			ads[q] = ad[q];
			ptrs[q] = data[q];
		}
		if (!blk_interp_run_world(r.k, n, ads, ptrs, 4, NULL, r.d, NULL)) {
			fflush(r.errf);
			fail_msg("%d ranks: %s", n, r.err);
		}
		for (int q = 0; q < n; q++) {
			for (int p = 0; p < n; p++) {
				for (int i = 0; i < 4; i++)
					assert_float_equal(out[q][p * 4 + i], 100 * p + i + 0.5f, 0);
				assert_int_equal(flags[q][p], 0); /* every wait took its signal */
			}
		}
	}
	run_free(&r);
}

/* Every rank atomically adds its x into rank 0's acc, over several
 * programs: rank 0's acc ends as the sum. */
static void test_atomic_into_peer(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in f32[N] block (2,) index (i) -> (i),\n"
	            "         acc: inout symmetric f32[N] block (2,) index (i) -> (i))\n"
	            "    grid (cdiv(N, 2)) {\n"
	            "    fori_loop(0, 50) |t| { atomic_add(acc.on(0), x[...]); };\n"
	            "}\n");
	int n = 4;
	float x[MAXR][6], acc[MAXR][6];
	void *data[MAXR][MAXA];
	for (int q = 0; q < n; q++) {
		for (int i = 0; i < 6; i++)
			x[q][i] = (float)(q + 1), acc[q][i] = 0;
		data[q][0] = x[q], data[q][1] = acc[q];
	}
	must_run(&r, n, 2, (BlkDType[]){ BLK_F32, BLK_F32 }, (int64_t[]){ 6, 6 }, data);
	for (int i = 0; i < 6; i++) {
		assert_float_equal(acc[0][i], 50 * (1 + 2 + 3 + 4), 0);
		assert_float_equal(acc[1][i], 0, 0);
	}
	run_free(&r);
}

/* rank_barrier orders each step: a rank writes step t into its right
 * neighbour's slot, the barrier, then reads its own slot (written by its
 * left neighbour), the barrier again before the next write. */
static void test_rank_barrier(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(slot: inout symmetric i32[1], o: out i32[1], bar: signal[2]) {\n"
	            "    let next = (my_rank() + 1) % world();\n"
	            "    let s = fori_loop(0, 20, 0) |t, s| {\n"
	            "        slot.on(next)[0] = t * 3 + my_rank();\n"
	            "        rank_barrier(bar.at[0]);\n"
	            "        let got = slot[0];\n"
	            "        rank_barrier(bar.at[1]);\n"
	            "        s + got\n"
	            "    };\n"
	            "    o[0] = s;\n"
	            "}\n");
	for (int n = 1; n <= 5; n++) {
		int32_t slot[MAXR][1], out[MAXR][1], bar[MAXR][2] = { { 0 } };
		void *data[MAXR][MAXA];
		for (int q = 0; q < n; q++)
			slot[q][0] = -1, out[q][0] = -1, data[q][0] = slot[q], data[q][1] = out[q],
			data[q][2] = bar[q];
		must_run(&r, n, 3, (BlkDType[]){ BLK_I32, BLK_I32, BLK_I32 }, (int64_t[]){ 1, 1, 2 }, data);
		for (int q = 0; q < n; q++) {
			int left = (q + n - 1) % n;
			assert_int_equal(out[q][0], 3 * 190 + 20 * left);
			assert_int_equal(bar[q][0], 0);
			assert_int_equal(bar[q][1], 0);
		}
	}
	run_free(&r);
}

/* my_rank() in an index map: each rank's program i takes block
 * (i + rank) mod 4, a rotation by rank. */
static void test_rank_in_index_map(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in f32[8] block (2,) index (i) -> ((i + my_rank()) % 4),\n"
	            "         y: out f32[8] block (2,) index (i) -> (i)) grid (4) {\n"
	            "    y[...] = x[...] + (100 * my_rank()).astype(f32);\n"
	            "}\n");
	float x[MAXR][8], y[MAXR][8];
	void *data[MAXR][MAXA];
	for (int q = 0; q < 3; q++) {
		for (int i = 0; i < 8; i++)
			x[q][i] = (float)i, y[q][i] = -1;
		data[q][0] = x[q], data[q][1] = y[q];
	}
	must_run(&r, 3, 2, (BlkDType[]){ BLK_F32, BLK_F32 }, (int64_t[]){ 8, 8 }, data);
	for (int q = 0; q < 3; q++)
		for (int i = 0; i < 8; i++)
			assert_float_equal(y[q][i], (float)(((i / 2 + q) % 4) * 2 + i % 2 + 100 * q), 0);
	run_free(&r);
}

/* Signals between programs of one rank (programs run in grid order in
 * the interpreter), and signal_set. */
static void test_signal_set_between_programs(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(y: out i32[4] block (1,) index (i) -> (i), s: signal[1]) grid (4) {\n"
	            "    let i = program_id(0);\n"
	            "    when i == 0 { signal_set(s.at[0], 3); }\n"
	            "    when i > 0 { signal_wait(s.at[0], 1); }\n"
	            "    y[0] = i;\n"
	            "}\n");
	int32_t y[MAXR][4], s[MAXR][1] = { { 0 } };
	void *data[MAXR][MAXA] = { { y[0], s[0] } };
	must_run(&r, 1, 2, (BlkDType[]){ BLK_I32, BLK_I32 }, (int64_t[]){ 4, 1 }, data);
	for (int i = 0; i < 4; i++)
		assert_int_equal(y[0][i], i);
	assert_int_equal(s[0][0], 0);
	run_free(&r);
}

static void expect_error(Run *r, const char *want)
{
	if (!r->err || !strstr(r->err, want))
		fail_msg("expected an error with \"%s\", got:\n%s", want, r->err ? r->err : "(none)");
}

/* A wait nobody answers: an error at the wait on each rank, not a hang. */
static void test_deadlock(void **state)
{
	(void)state;
	for (int n = 1; n <= 3; n++) {
		Run r;
		compile(&r, "kernel k(y: out i32[1], s: signal[2]) {\n"
		            "    signal_add(s.on((my_rank() + 1) % world()).at[1], 1);\n"
		            "    signal_wait(s.at[0], 1);\n"
		            "    y[0] = 1;\n"
		            "}\n");
		int32_t y[MAXR][1], s[MAXR][2] = { { 0 } };
		void *data[MAXR][MAXA];
		for (int q = 0; q < n; q++)
			data[q][0] = y[q], data[q][1] = s[q];
		assert_false(run_world(&r, n, 2, (BlkDType[]){ BLK_I32, BLK_I32 }, (int64_t[]){ 1, 2 }, data));
		expect_error(&r, "w.blk:3:5: error: interpreting k");
		expect_error(&r, "deadlock: the program waits for a signal to reach 1, and it is 0");
		if (n > 1)
			expect_error(&r, "(rank 1)");
		run_free(&r);
	}
}

/* A wait for a count below 1 computed at run time: an error, not a wait
 * that adds to the counter. */
static void test_wait_count(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(n: in i32[1], s: signal[1]) { signal_wait(s.at[0], n[0]); }\n");
	int32_t n[MAXR][1] = { { -5 } }, s[MAXR][1] = { { 0 } };
	void *data[MAXR][MAXA] = { { n[0], s[0] } };
	assert_false(run_world(&r, 1, 2, (BlkDType[]){ BLK_I32, BLK_I32 }, (int64_t[]){ 1, 1 }, data));
	expect_error(&r, "signal_wait waits for a count of at least 1, got (-5)");
	assert_int_equal(s[0][0], 0);
	run_free(&r);
}

/* A rank that fails: its error alone, the ranks waiting for it stop. */
static void test_rank_fails(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in symmetric f32[1], y: out f32[1], s: signal[1]) {\n"
	            "    when my_rank() == 1 { y[0] = x.on(7)[0]; signal_add(s.on(0).at[0], 1); }\n"
	            "    when my_rank() == 0 { signal_wait(s.at[0], 1); }\n"
	            "}\n");
	float x[MAXR][1] = { { 0 } }, y[MAXR][1];
	int32_t s[MAXR][1] = { { 0 } };
	void *data[MAXR][MAXA];
	for (int q = 0; q < 2; q++)
		data[q][0] = x[q], data[q][1] = y[q], data[q][2] = s[q];
	assert_false(run_world(&r, 2, 3, (BlkDType[]){ BLK_F32, BLK_F32, BLK_I32 },
	                       (int64_t[]){ 1, 1, 1 }, data));
	expect_error(&r, "interpreting k (rank 1): peer rank 7 is outside the world of 2 ranks");
	assert_null(strstr(r.err, "deadlock"));
	run_free(&r);
}

/* A symmetric array of another shape on one rank is refused. */
static void test_symmetric_mismatch(void **state)
{
	(void)state;
	Run r;
	compile(&r, "kernel k(x: in symmetric f32[N], y: out f32[N]) { y[...] = x.on(0)[...]; }\n");
	float x0[4], x1[8], y0[4], y1[8];
	BlkArrayDesc a0[2] = { { .dtype = BLK_F32, .rank = 1, .shape = { 4 }, .strides = { 1 } },
	                       { .dtype = BLK_F32, .rank = 1, .shape = { 4 }, .strides = { 1 } } };
	BlkArrayDesc a1[2] = { { .dtype = BLK_F32, .rank = 1, .shape = { 8 }, .strides = { 1 } },
	                       { .dtype = BLK_F32, .rank = 1, .shape = { 8 }, .strides = { 1 } } };
	const BlkArrayDesc *ads[2] = { a0, a1 };
	void *d0[2] = { x0, y0 }, *d1[2] = { x1, y1 };
	void *const *ptrs[2] = { d0, d1 };
	assert_false(blk_interp_run_world(r.k, 2, ads, ptrs, 2, NULL, r.d, NULL));
	fflush(r.errf);
	expect_error(&r, "symmetric `x` has another shape, dtype or layout on rank 1 than on rank 0");
	run_free(&r);
	compile(&r, "kernel k(y: out f32[1]) { y[0] = 1.0; }\n");
	assert_false(blk_interp_run_world(r.k, 0, ads, ptrs, 1, NULL, r.d, NULL));
	fflush(r.errf);
	expect_error(&r, "a world of 0 ranks; it takes 1 to 64");
	run_free(&r);
}

/* The checker's rules, each with its message. */
static void test_check_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "kernel k(x: in f32[4], y: out f32[4]) { y[...] = x.on(1)[...]; }",
		  "1:52: error: `x` is not symmetric, so it has no buffer on other ranks" },
		{ "kernel k(x: in symmetric f32[4], y: out f32[4]) { y[...] = x.on(1.5)[...]; }",
		  "a rank is an i32 scalar" },
		{ "kernel k(y: out i32[4], s: signal[4]) { y[...] = s[...]; }",
		  "`s` is a signal: only signal_add, signal_set, signal_wait and rank_barrier touch it" },
		{ "kernel k(s: signal[4]) { s[0] = 1; }", "`s` is a signal" },
		{ "kernel k(s: signal[4]) { atomic_add(s.at[0], 1); }", "`s` is a signal" },
		{ "kernel k(s: signal[4]) { signal_add(s, 1); }",
		  "signal_add acts on one signal, got ref<i32[4]>; pick it: `s.at[i]`" },
		{ "kernel k(y: inout i32[4]) { signal_wait(y.at[0], 1); }",
		  "signal_wait needs one element of a `signal` parameter" },
		{ "kernel k(s: signal[4]) { signal_set(s.at[0], 1.5); }", "1.5" },
		{ "kernel k(s: signal[4]) { signal_wait(s.at[0], 0); }",
		  "1:47: error: signal_wait waits for a count of at least 1, got 0" },
		{ "kernel k(s: signal[4]) { rank_barrier(s.on(1).at[0]); }",
		  "rank_barrier meets at its element on every rank: give this rank's (`bar.at[i]`), not a peer's" },
		{ "kernel k(s: signal[4] block (2,)) { signal_set(s.at[0], 1); }",
		  "signal `s` is whole in every program; it takes no block spec" },
		{ "kernel k(s: scratch symmetric f32[4], y: out f32[4]) { y[...] = s[...]; }",
		  "scratch `s` is private to a program; only an array parameter can be symmetric" },
		{ "kernel k(s: signal f32[4]) { }", "expected" },
		{ "kernel k(y: out i32[1]) { y[0] = my_rank(1); }", "my_rank" },
		{ "kernel k(x: in f32[4] block (2,) index (i) -> (i), y: out f32[4]) grid (2) { y[...] = x[...]; }\n"
		  "kernel j(y: out f32[4] block (2,) index (i) -> (program_id(0))) grid (2) { y[...] = 1.0; }",
		  "`program_id` cannot be used in an index map" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		Run r;
		if (compile_text(&r, cases[i].text))
			fail_msg("compiled: %s", cases[i].text);
		if (!strstr(r.err, cases[i].want))
			fail_msg("%s\nexpected \"%s\", got:\n%s", cases[i].text, cases[i].want, r.err);
		run_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_read),
		cmocka_unit_test(test_all_gather),
		cmocka_unit_test(test_atomic_into_peer),
		cmocka_unit_test(test_rank_barrier),
		cmocka_unit_test(test_signal_set_between_programs),
		cmocka_unit_test(test_rank_in_index_map),
		cmocka_unit_test(test_deadlock),
		cmocka_unit_test(test_rank_fails),
		cmocka_unit_test(test_wait_count),
		cmocka_unit_test(test_symmetric_mismatch),
		cmocka_unit_test(test_check_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
