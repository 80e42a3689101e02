/* test_check.c - the checker and the AST -> IR lowering through
 * blk_compile_source: inferred types and shapes (read off the printed IR),
 * lowering forms (broadcasts, weak literals, dot accumulate, unrolling),
 * -D defines, and each class of error with its exact message and location. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"

typedef struct Run {
	BlkArena *a;
	BlkModule *m;
	char *ir;   /* the printed module (malloc'd), "" if none */
	char *errs; /* the diagnostics (malloc'd) */
	int nerrors;
} Run;

static Run compile_defs(const char *text, const BlkDefine *defs, int ndefs)
{
	Run r = { .a = blk_arena_create() };
	size_t n = 0, ni = 0;
	FILE *ef = open_memstream(&r.errs, &n);
	BlkDiag *d = blk_diag_create(r.a, ef, 0);
	BlkSource *src = blk_source_from_string(r.a, "t.blk", text, strlen(text));
	r.m = blk_compile_source(r.a, d, src, defs, ndefs);
	r.nerrors = blk_diag_error_count(d);
	fclose(ef);
	FILE *irf = open_memstream(&r.ir, &ni);
	if (r.m)
		blk_ir_print_module(irf, r.m);
	fclose(irf);
	return r;
}

static Run compile(const char *text)
{
	return compile_defs(text, NULL, 0);
}

static void run_free(Run *r)
{
	free(r->ir);
	free(r->errs);
	blk_arena_destroy(r->a);
}

/* Compiles and expects success and every substring in the IR. */
static void expect_ir(const char *text, ...)
{
	Run r = compile(text);
	if (!r.m)
		fail_msg("expected success, got:\n%s", r.errs);
	va_list ap;
	va_start(ap, text);
	for (const char *s; (s = va_arg(ap, const char *));)
		if (!strstr(r.ir, s))
			fail_msg("'%s' not in the IR:\n%s", s, r.ir);
	va_end(ap);
	run_free(&r);
}

/* Compiles and expects the first error at "t.blk:LOC: error: MSG". */
static void expect_error(const char *text, const char *loc_msg)
{
	Run r = compile(text);
	char want[512];
	snprintf(want, sizeof want, "t.blk:%s", loc_msg);
	assert_null(r.m);
	if (strncmp(r.errs, want, strlen(want)) != 0)
		fail_msg("expected '%s', got:\n%s", want, r.errs);
	run_free(&r);
}

#define K1 "kernel k(x: in f32[N] block (8) index (i) -> (i), y: out f32[N] block (8) index (i) -> (i)) grid (cdiv(N, 8)) {\n"

/* ---- successes ----------------------------------------------------------- */

static void test_weak_literals(void **state)
{
	(void)state;
	/* 2 takes f16; the scalar is splat to the tile's shape */
	expect_ir("kernel k(x: in f16[8], y: out f16[8]) {\n    y[...] = x[...] * 2;\n}\n",
	          "const {value = 2.0} : f16[8]", "mul %0, %1 : f16[8]", NULL);
	/* constant folding of weak expressions and cparams */
	expect_ir("kernel k[B = 4](y: out i32[8]) {\n    y[...] = B * 3 + 1;\n}\n",
	          "const {value = 13} : i32[8]", NULL);
	/* i32's minimum written as docs/language.md says; folding wraps */
	expect_ir("kernel k(y: out i32[8]) {\n    y[...] = -2147483648;\n}\n",
	          "const {value = -2147483648} : i32[8]", NULL);
	expect_ir("kernel k(y: out i32[8]) {\n    y[...] = 2147483647 + 1;\n}\n",
	          "const {value = -2147483648} : i32[8]", NULL);
	expect_ir("kernel k(y: out i32[8]) {\n    y[...] = 7 ~/ 0 + 0x10;\n}\n",
	          "const {value = 16} : i32[8]", NULL);
}

/* Weak scalars: an integer scalar takes a float operand's dtype, a float
 * scalar a float tile's; a cast of the scalar, then the broadcast. */
static void test_weak_scalars(void **state)
{
	(void)state;
	expect_ir("kernel k(x: in f16[N], y: out f16[N]) {\n    y[...] = x[...] / N;\n}\n",
	          "size {name = \"N\"} : i32", "cast %1 : f16\n", "broadcast %2 : f16[N]",
	          "div %0, %3 : f16[N]", NULL);
	expect_ir("kernel k(x: in bf16[N], s: in f32[1], y: out bf16[N]) {\n"
	          "    y[...] = x[...] * (1.0 / N) + s[0];\n}\n",
	          "div %1, %3 : f32\n", "cast %4 : bf16\n", "cast %9 : bf16\n", NULL);
	expect_ir("kernel k(x: in f32[8], m: out bool[8]) {\n"
	          "    m[...] = fori_loop(0, 4, x[...] < 0.0) |i, c| { c | (x[...] < i + 1) };\n}\n",
	          "add %i, %6 : i32", "cast %7 : f32", "lt %5, %9 : bool[8]", NULL);
}

static void test_broadcast_explicit(void **state)
{
	(void)state;
	expect_ir("kernel k(x: in f32[4, N], b: in f32[N], y: out f32[4, N]) {\n"
	          "    y[...] = x[...] + b[...];\n}\n",
	          "broadcast %1 : f32[4, N]", "add %0, %2 : f32[4, N]", NULL);
}

static void test_dot_accumulate(void **state)
{
	(void)state;
	expect_ir("kernel k(a: in f32[16, 8], b: in f32[8, 16], c: inout f32[16, 16]) {\n"
	          "    c[...] = c[...] + dot(a[...], b[...]);\n}\n",
	          "dot %0, %1, %2 : f32[16, 16]", NULL);
	/* f16 operands: the result is f32 and a cast brings it back */
	expect_ir("kernel k(a: in f16[16, 8], b: in f16[8, 16], c: out f16[16, 16]) {\n"
	          "    c[...] = dot(a[...], b[...]).astype(f16);\n}\n",
	          "dot %0, %1 : f32[16, 16]", "cast %2 : f16[16, 16]", NULL);
}

/* The Python spellings lower to the same IR as blk's own. */
static void test_python_spellings(void **state)
{
	(void)state;
	expect_ir("kernel k(a: in f32[16, 8], b: in f32[8, 16], c: inout f32[16, 16]) {\n"
	          "    c[...] = c[...] + a[...] @ b[...];\n}\n",
	          "dot %0, %1, %2 : f32[16, 16]", NULL);
	expect_ir("kernel k(x: in f32[4, 8], y: out f32[4, 1], z: out f32[1]) {\n"
	          "    y[...] = x[...].max(axis = 1, keepdims = true);\n"
	          "    z[0] = x[...].sum();\n}\n",
	          "reduce_max %0 {axis = 1} : f32[4]", "expand_dims %1 {axis = 1} : f32[4, 1]",
	          "reduce_sum %4 {axis = 1} : f32[4]", "reduce_sum %5 {axis = 0} : f32\n", NULL);
	expect_ir("kernel k(x: in f32[4, 8], y: out f32[4, 8]) {\n"
	          "    y[...] = x[...].cummax(axis = 1) + x[...].cummin(axis = 0, reverse = true);\n}\n",
	          "cummax %0 {axis = 1} : f32[4, 8]", "cummin %2 {axis = 0, reverse = 1} : f32[4, 8]", NULL);
	expect_ir("kernel k(x: in f32[8], y: out f32[8, 8]) {\n"
	          "    y[...] = x[...][:, None] + x[None, :];\n}\n",
	          "expand_dims %0 {axis = 1} : f32[8, 1]", "expand_dims %3 {axis = 0} : f32[1, 8]", NULL);
}

/* The math builtins: an op each, clamp/isnan/isinf as the ops they mean,
 * weak literals taking the tile's dtype. */
static void test_math_builtins(void **state)
{
	(void)state;
	expect_ir("kernel k(x: in f16[8], y: out f16[8]) {\n"
	          "    y[...] = gelu(x[...], approximate = true) + gelu(x[...]) + fma(x[...], 2, 0.5);\n}\n",
	          "gelu_tanh %0 : f16[8]", "gelu %2 : f16[8]", "const {value = 2.0} : f16[8]", "fma %5, %6, %7 : f16[8]", NULL);
	expect_ir("kernel k(x: in f32[8], y: out f32[8], m: out bool[8]) {\n"
	          "    y[...] = clamp(x[...], -1, 1);\n    m[...] = isnan(x[...]) | isinf(x[...]);\n}\n",
	          "max %0, %1 : f32[8]", "min %3, %2 : f32[8]", "ne %5, %5 : bool[8]",
	          "const {value = inf} : f32[8]", "abs %7 : f32[8]", "eq %9, %8 : bool[8]", NULL);
	expect_ir("kernel k(x: in i32[8], y: out i32[8]) {\n    y[...] = clamp(x[...], 0, 5);\n}\n",
	          "max %0, %1 : i32[8]", NULL);
}

/* The random builtins: philox words of (offsets, 0, 0, 0) under the
 * broadcast seed; rand and randn convert words 0 (and 1); philox gives
 * all four words of its counters. */
static void test_random_builtins(void **state)
{
	(void)state;
	expect_ir("kernel k(s: in i32[1], y: out f32[8]) {\n    y[...] = randn(s[0], iota(8)) + rand(7, iota(8));\n}\n",
	          "philox %2, %3, %4, %5, %6 {word = 0} : i32[8]", "philox %2, %3, %4, %5, %6 {word = 1} : i32[8]",
	          "normal %7, %8 : f32[8]", "const {value = 7} : i32[8]", "uniform %15 : f32[8]", NULL);
	expect_ir("kernel k(s: in i32[1], w: out i32[8]) {\n"
	          "    let (a, b, c, d) = philox(s[0], iota(8), 1, 2, 3);\n    w[...] = randint(s[0], 5) + d;\n}\n",
	          "%d = philox %2, %3, %4, %5, %6 {word = 3} : i32[8]", "philox %8, %9, %10, %11, %12 {word = 0} : i32\n",
	          NULL);
}

/* An `out` parameter is read after a store to it earlier in the source
 * (Pallas's accumulation into o_ref); a read before any store, in the
 * store's own value or in a branch before the one that stores, is an error. */
static void test_read_out_after_store(void **state)
{
	(void)state;
	Run r = compile(K1 "    y[...] = x[...] * 2.0;\n    y[...] += 1.0;\n    y[ds(0, 4)] = y[ds(4, 4)];\n}\n");
	assert_non_null(r.m);
	run_free(&r);
	r = compile(K1 "    when program_id(0) == 0 { y[...] = zeros((8,), f32); }\n"
	               "    y[...] = load(y.at[...]) + x[...];\n}\n");
	assert_non_null(r.m);
	run_free(&r);
	expect_error(K1 "    y[...] += x[...];\n    y[...] = x[...];\n}\n",
	             "2:6: error: cannot read `y` before the kernel stores to it");
	expect_error(K1 "    when program_id(0) > 0 { y[...] += x[...]; } else { y[...] = x[...]; }\n}\n",
	             "2:31: error: cannot read `y` before the kernel stores to it");
	expect_error(K1 "    atomic_add(y, 1.0);\n    y[...] = x[...];\n}\n",
	             "2:5: error: atomic_add adds into `y`, which is an `out` parameter");
}

/* Pallas's spellings of dtypes: `x.astype(o_ref.dtype)`, a tile's
 * `.dtype`, `zeros(shape, dtype = T)` and `full(shape, v, dtype = T)`. */
static void test_dtype_spellings(void **state)
{
	(void)state;
	Run r = compile("kernel k(x: in f32[8], o: out bf16[8], p: out f32[8]) {\n"
	                "    let v = x[...] + zeros((8,), dtype = f32) + full((8,), 1.0, dtype = x.dtype);\n"
	                "    o[...] = v.astype(o.dtype);\n"
	                "    p[...] = v.astype(v.dtype);\n}\n");
	assert_non_null(r.m);
	assert_non_null(strstr(r.ir, "cast %v : bf16[8]"));
	run_free(&r);
	expect_error("kernel k(x: in f32[8], o: out f32[8]) {\n    o[...] = x[...].astype(x.size);\n}\n",
	             "2:30: error: unknown attribute `.size` (known: .at, .astype, .T, .dtype)");
}

static void test_unroll(void **state)
{
	(void)state;
	Run r = compile("kernel k(y: out i32[1]) {\n"
	                "    let s = fori_loop(0, 3, 0, unroll = true) |i, acc| { acc + i };\n"
	                "    y[0] = s;\n}\n");
	assert_non_null(r.m);
	assert_null(strstr(r.ir, "for "));
	int adds = 0;
	for (const char *p = r.ir; (p = strstr(p, " add ")); p++)
		adds++;
	assert_int_equal(adds, 3);
	run_free(&r);
}

static void test_loop_and_carries(void **state)
{
	(void)state;
	expect_ir("kernel k(y: out f32[4]) {\n"
	          "    let (a, n) = fori_loop(0, 10, (zeros((4,), f32), 0)) |i, (s, c)| {\n"
	          "        (s + 1.0, c + i)\n    };\n"
	          "    y[...] = a + n.astype(f32);\n}\n",
	          "for %", ": f32[4], i32 {", "yield", NULL);
}

static void test_reductions_keepdims(void **state)
{
	(void)state;
	expect_ir("kernel k(x: in f32[4, 8], y: out f32[4, 1], z: out f32[1]) {\n"
	          "    y[...] = max(x[...], axis = 1, keepdims = true);\n"
	          "    z[0] = sum(x[...]);\n}\n",
	          "reduce_max %0 {axis = 1} : f32[4]", "expand_dims %1 {axis = 1} : f32[4, 1]",
	          "reduce_sum %4 {axis = 1} : f32[4]", "reduce_sum %5 {axis = 0} : f32\n", NULL);
}

static void test_index_forms(void **state)
{
	(void)state;
	expect_ir("kernel k(x: in f32[4, 8, 16], y: out f32[8, 1]) {\n"
	          "    let i = 2;\n"
	          "    y[...] = x[1, :, ds(i, 1)];\n}\n",
	          "idx = [i, :, ds(1)]", NULL);
	expect_ir("kernel k(x: inout f32[4, 8]) {\n"
	          "    atomic_add(x.at[0, ...], 1.0);\n}\n",
	          "view %x", "idx = [i, :]", "atomic_add", NULL);
}

static void test_squeezed_and_sizes(void **state)
{
	(void)state;
	expect_ir("kernel k(x: in f32[M, N] block (None, N) index (i) -> (i, 0), "
	          "y: out f32[M] block (1) index (i) -> (i)) grid (M) {\n"
	          "    y[0] = sum(x[...]) + N.astype(f32);\n}\n",
	          "sizes (M, N)", "ref<f32[N]>", "size {name = \"N\"} : i32", NULL);
}

static void test_when_scoped_print(void **state)
{
	(void)state;
	expect_ir(K1 "    when program_id(0) == 0 {\n"
	          "        scoped (t: f32[8]) {\n            t[...] = x[...];\n            y[...] = t[...];\n        }\n"
	          "    } else {\n        print(\"hi\", num_programs(0));\n    }\n}\n",
	          "if %", "scoped {", "ref<shared f32[8]>", "print", NULL);
}

static void test_defines(void **state)
{
	(void)state;
	BlkDefine defs[] = { { "BM", "128" }, { "T", "bf16" } };
	Run r = compile_defs("kernel k[T = f32, BM = 64](x: in T[M] block (BM) index (i) -> (i), "
	                     "y: out T[M] block (BM) index (i) -> (i)) grid (cdiv(M, BM)) {\n"
	                     "    y[...] = x[...];\n}\n", defs, 2);
	assert_non_null(r.m);
	assert_non_null(strstr(r.ir, "ref<bf16[128]>"));
	assert_non_null(strstr(r.ir, "cdiv(M, 128)"));
	run_free(&r);
}

/* ---- errors ------------------------------------------------------------------- */

static void test_define_errors(void **state)
{
	(void)state;
	BlkDefine unknown[] = { { "Q", "3" } }, kind[] = { { "B", "1.5" } };
	const char *src = "kernel k[B = 4](y: out i32[8]) {\n    y[...] = B;\n}\n";
	Run r = compile_defs(src, unknown, 1);
	assert_null(r.m);
	assert_non_null(strstr(r.errs, "-D Q: no kernel has a compile-time parameter named `Q`"));
	run_free(&r);
	r = compile_defs(src, kind, 1);
	assert_null(r.m);
	assert_non_null(strstr(r.errs, "-D B=1.5: `B` is an int parameter"));
	assert_non_null(strstr(r.errs, "t.blk:1:10: note: `B` is declared here"));
	run_free(&r);
}

/* `auto`: a stand-in value until the runtime chooses (runtime/auto.c);
 * where the parameter is used is recorded; an array shape may not use it. */
static void test_auto(void **state)
{
	(void)state;
	const char *src = "kernel k[T = f32, BM = auto, num_warps = auto](x: in T[M] block (BM) index (i) -> (i), "
	                  "y: out T[M] block (BM) index (i) -> (i)) grid (cdiv(M, BM)) {\n"
	                  "    y[...] = x[...];\n}\n";
	Run r = compile(src);
	assert_non_null(r.m);
	assert_non_null(strstr(r.ir, "BM = auto 64, num_warps = auto 4"));
	const BlkCParam *bm = &r.m->first->cparams[1];
	assert_true(bm->is_auto && (bm->uses & BLK_CPARAM_IN_SIZE) && (bm->uses & BLK_CPARAM_IN_GRID) &&
	            !(bm->uses & BLK_CPARAM_IN_SHAPE));
	assert_int_equal(r.m->first->cparams[2].uses, 0); /* num_warps: a value to the compiler */
	run_free(&r);
	BlkDefine value[] = { { "BM", "128" } }, again[] = { { "T", "auto" } };
	r = compile_defs(src, value, 1); /* a value given: no longer auto */
	assert_non_null(strstr(r.ir, "BM = 128, num_warps = auto 4"));
	run_free(&r);
	r = compile_defs(src, again, 1);
	assert_null(r.m);
	assert_non_null(strstr(r.errs, "-D T=auto: only an int parameter can be auto, and `T` is a dtype parameter"));
	run_free(&r);
	expect_error("kernel k[D = auto](x: in f32[N, D], y: out f32[N, D]) {\n    y[...] = x[...];\n}\n",
	             "1:10: error: `D` is auto, but an array parameter's shape uses it: its value comes from "
	             "the arrays; give it one (`D = 64`) or leave it out of the shape");
	BlkDefine to_auto[] = { { "B", "auto" } };
	r = compile_defs("kernel k[B = 4](y: out i32[8]) {\n    y[...] = B;\n}\n", to_auto, 1);
	assert_non_null(r.m); /* used as a value, not a size: auto all the same */
	assert_non_null(strstr(r.ir, "B = auto 64"));
	run_free(&r);
}

static void test_several_errors_no_cascade(void **state)
{
	(void)state;
	Run r = compile("kernel k(x: in f32[N], y: out f32[N]) {\n"
	                "    let a = q;\n    let b = a + 1.0;\n    y[...] = b * h + x[...];\n"
	                "    y[...] = exp(x[...], 1);\n}\n");
	assert_null(r.m);
	assert_int_equal(r.nerrors, 3); /* q, h, exp's arity; nothing about a or b */
	assert_non_null(strstr(r.errs, "t.blk:2:13: error: unknown name `q`"));
	assert_non_null(strstr(r.errs, "t.blk:4:18: error: unknown name `h`"));
	assert_non_null(strstr(r.errs, "t.blk:5:14: error: `exp` takes 1 argument, got 2"));
	run_free(&r);
}

static void test_error_messages(void **state)
{
	(void)state;
	expect_error(K1 "    y[...] = x[...] + z;\n}\n", "2:23: error: unknown name `z`");
	expect_error(K1 "    y[...] = frob(x[...]);\n}\n", "2:14: error: unknown function `frob`");
	expect_error(K1 "    x[...] = 1.0;\n}\n", "2:5: error: cannot write to `x`: it is an `in` parameter");
	expect_error(K1 "    y[...] = y[...];\n}\n", "2:15: error: cannot read `y` before the kernel stores to it");
	expect_error(K1 "    y[...] = program_id(1);\n}\n",
	             "2:25: error: program_id axis 1 is out of range: the grid has rank 1");
	expect_error(K1 "    when 1 { y[...] = 1.0; }\n}\n",
	             "2:10: error: the condition of `when` must be a bool scalar, got i32");
	expect_error(K1 "    y[...] = x[...] + iota(4);\n}\n",
	             "2:21: error: mismatched dtypes in `+`: f32[8] and i32[4]; convert one with astype");
	expect_error(K1 "    y[...] = x[...] + zeros((4,), f32);\n}\n",
	             "2:21: error: cannot broadcast f32[8] and f32[4]");
	expect_error(K1 "    y[...] = fori_loop(0, 2, x[...]) |i, a| { a.astype(f16) };\n}\n",
	             "2:48: error: the loop body yields f16[8], but the carry `a` has type f32[8]");
	expect_error("kernel k(x: in f32[N] block (8, 8), y: out f32[N]) {\n    y[...] = x[...];\n}\n",
	             "1:23: error: the block has 2 dims but `x` has rank 1");
	expect_error("kernel k(y: out f32[N] block (8) index (i) -> (i, i)) grid (4) {\n}\n",
	             "1:34: error: the index map yields 2 block indices but `y` has rank 1");
	expect_error("kernel k(y: out f32[N] block (8) index (i, j) -> (i)) grid (4) {\n}\n",
	             "1:34: error: the index map takes 2 parameters but the grid has 1 axis");
	expect_error("kernel k[num_stages = 0](y: out f32[N]) {\n}\n",
	             "1:10: error: num_stages must be an int >= 1");
	expect_error("kernel k(y: out f32[N]) {\n    y[...] = zeros((1 << 0,), f32);\n}\n", "2:");
}

/* Helpers are inlined: the IR has no call, each call its own copy at its
 * own dtype; an error in a helper's body is followed by a note at every
 * call being inlined, innermost first. */
static void test_helpers(void **state)
{
	(void)state;
	expect_ir("fn sq(x) { x * x }\nkernel k(x: in f32[8], h: in f16[8], y: out f32[8], z: out f16[8]) {\n"
	          "    y[...] = sq(x[...]);\n    z[...] = sq(h[...]);\n}\n",
	          "mul %x.1, %x.1 : f32[8]", "mul %x.2, %x.2 : f16[8]", NULL);
	/* a constant argument stays weak: 2.0 takes bf16 */
	expect_ir("fn scale(x, c) { x * c }\nkernel k(x: in bf16[8], y: out bf16[8]) {\n"
	          "    y[...] = scale(x[...], 2.0);\n}\n", "const {value = 2.0} : bf16[8]", NULL);
	/* a combine over a closure's captured scalar */
	expect_ir("kernel k(x: in f32[8], d: in f32[1], y: out f32[8]) {\n    let g = d[0];\n"
	          "    y[...] = associative_scan(|a, b| a * g + b, x[...], reverse = true);\n}\n",
	          "scan %1 {axis = 0, reverse = 1} : f32[8] {", "^(%a: f32, %b: f32):", "mul %a, %g : f32",
	          "yield %4",
	          NULL);
	Run r = compile("fn inner(x) { exp(x) }\nfn outer(x) { inner(x) }\n"
	                "kernel k(x: in i32[8], y: out i32[8]) {\n    y[...] = outer(x[...]);\n}\n");
	assert_null(r.m);
	assert_int_equal(r.nerrors, 1);
	const char *want =
		"t.blk:1:15: error: `exp` needs a float operand, got i32[8]\n"
		"    fn inner(x) { exp(x) }\n"
		"                  ^\n"
		"t.blk:2:15: note: in the call of `inner`\n"
		"    fn outer(x) { inner(x) }\n"
		"                  ^\n"
		"t.blk:4:14: note: in the call of `outer`\n"
		"        y[...] = outer(x[...]);\n"
		"                 ^\n";
	if (strcmp(r.errs, want) != 0)
		fail_msg("got:\n%s", r.errs);
	run_free(&r);
	/* each call is checked on its own: the f32 call is fine, the i32 one not */
	expect_error("fn e(x) { exp(x) }\nkernel k(x: in f32[8], i: in i32[8], y: out f32[8]) {\n"
	             "    y[...] = e(x[...]) + e(i[...]).astype(f32);\n}\n",
	             "1:11: error: `exp` needs a float operand, got i32[8]");
}

static void test_examples_compile(void **state)
{
	(void)state;
	const char *names[] = { "add", "matmul", "matmul_acc", "softmax" };
	for (int i = 0; i < 4; i++) {
		BlkArena *a = blk_arena_create();
		BlkDiag *d = blk_diag_create(a, stderr, 0);
		char path[512];
		snprintf(path, sizeof path, "%s/examples/%s.blk", BLK_SRCDIR, names[i]);
		BlkSource *src = blk_source_read(a, d, path);
		assert_non_null(src);
		assert_non_null(blk_compile_source(a, d, src, NULL, 0));
		blk_arena_destroy(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weak_literals),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_broadcast_explicit),
		cmocka_unit_test(test_dot_accumulate),
		cmocka_unit_test(test_python_spellings),
		cmocka_unit_test(test_math_builtins),
		cmocka_unit_test(test_random_builtins),
		cmocka_unit_test(test_weak_scalars),
		cmocka_unit_test(test_unroll),
		cmocka_unit_test(test_loop_and_carries),
		cmocka_unit_test(test_reductions_keepdims),
		cmocka_unit_test(test_index_forms),
		cmocka_unit_test(test_squeezed_and_sizes),
		cmocka_unit_test(test_when_scoped_print),
		cmocka_unit_test(test_defines),
		cmocka_unit_test(test_define_errors),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_several_errors_no_cascade),
		cmocka_unit_test(test_error_messages),
		cmocka_unit_test(test_read_out_after_store),
		cmocka_unit_test(test_dtype_spellings),
		cmocka_unit_test(test_examples_compile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
