/* gpu_features.c - one small kernel per language feature, on the GPU against
 * the interpreter.
 *
 * The examples (gpu_examples.c) exercise dot, reductions and the edges of a
 * few kernels; this table covers the rest of docs/language.md: every
 * elementwise function, i32 floor division, bitwise ops and shifts, bool
 * logic, comparisons, where,
 * iota, reductions along each axis and over all, keepdims, expand_dims,
 * scans along each axis (reversed too), broadcasting, transpose, astype
 * between every pair of dtypes, zeros/full,
 * fori_loop in all its forms, when/else, seq axes with scratch, scoped
 * scratch, inout, squeezed dims, .at views, ds slices at odd offsets,
 * load(other=), the atomics, print, and 1-D/2-D/3-D grids.  Every shape is
 * ragged (not a multiple of its blocks), so the edge masks are on.
 *
 * Each case runs the same seeded random inputs through blk_interp_run (the
 * oracle) and the GPU with its outputs poisoned first, and compares every
 * output with its dtype's tolerance (exact for i32 and bool).  Typed cases
 * (a `T` parameter) run in f32, f16 and bf16.  `print` is checked by
 * capturing the process's stdout around the launch: every line the
 * interpreter prints must appear in what the GPU printed.
 *
 * Without a GPU this exits 77.  With BLK_GPU_FEATURES_OFFLINE=1 it does all
 * but the launch: each kernel must compile, run in the interpreter (writing
 * every output element), lower to PTX for sm_90a through an offline
 * runtime, and assemble with ptxas when one is installed ($BLK_PTXAS, else
 * /usr/local/cuda/bin/ptxas).  BLK_GPU_FEATURES_PTX_DIR=DIR also writes each
 * kernel's PTX to DIR/CASE.TYPE.ptx, BLK_GPU_CASES=TEXT runs only the cases
 * whose names contain TEXT, and BLK_GPU_FEATURES_ARCH picks the
 * offline arch (default sm_90a): a refactor of lower/ can then be checked to
 * leave every kernel's PTX byte-identical.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk.h"
#include "gpu_test.h"
#include "frontend/frontend.h"
#include "interp/interp.h"
#include "tools/hostdata.h"

enum { MAX_ARRAYS = 8, ERR_LEN = 1024 };

/* ---- the cases ------------------------------------------------------------ */

#define DT_T (-1) /* the case's dtype (the kernel's T) */

/* One array of a launch.  role: 'i' in (random), 'o' out (poisoned),
 * 'x' inout (random, compared). */
typedef struct ArraySpec {
	char role;
	int dtype; /* BlkDType or DT_T */
	int rank;
	int64_t shape[BLK_MAX_RANK];
} ArraySpec;

typedef struct Arrays {
	int n;
	BlkHostArray *h[MAX_ARRAYS];
} Arrays;

/* A C reference for the interpreter (run in both modes): in holds the
 * inputs as generated, out the arrays after the interpreter ran. */
typedef bool CheckFn(const Arrays *in, const Arrays *out, char *err);
/* Overwrites inputs the random fill cannot stand for (a work list). */
typedef void FillFn(Arrays *a);

typedef struct Case {
	const char *name;   /* also the kernel's name */
	bool typed;         /* has `T = f32`: run in f32, f16 and bf16 */
	const char *src;
	const char *expect; /* print cases: text the interpreter's output must hold */
	CheckFn *check;     /* NULL: the interpreter is trusted */
	FillFn *fill;       /* NULL: every input random */
	double tol_mult;    /* 0 or 1: the dtype's default tolerance; more for racing atomics; < 0 exact */
	int narrays;
	ArraySpec a[MAX_ARRAYS];
} Case;

#define A1(r, t, n) {.role = r, .dtype = t, .rank = 1, .shape = {n}}
#define A2(r, t, m, n) {.role = r, .dtype = t, .rank = 2, .shape = {m, n}}
#define A3(r, t, l, m, n) {.role = r, .dtype = t, .rank = 3, .shape = {l, m, n}}
#define A4(r, t, k, l, m, n) {.role = r, .dtype = t, .rank = 4, .shape = {k, l, m, n}}
#define NARGS(...) (int)(sizeof((ArraySpec[]){__VA_ARGS__}) / sizeof(ArraySpec))
#define CASE(nm, ty, text, ...) \
	{.name = nm, .typed = ty, .src = text, .narrays = NARGS(__VA_ARGS__), .a = {__VA_ARGS__}}
#define CASE_TOL(nm, ty, mult, text, ...) {.name = nm, .typed = ty, .src = text, \
	.tol_mult = mult, .narrays = NARGS(__VA_ARGS__), .a = {__VA_ARGS__}}
#define FILLED(nm, ty, fl, fn, text, ...) {.name = nm, .typed = ty, .src = text, .fill = fl, \
	.check = fn, .narrays = NARGS(__VA_ARGS__), .a = {__VA_ARGS__}}
/* Float outputs compared bit for bit (the random numbers). */
#define CASE_EXACT(nm, text, ...) {.name = nm, .src = text, .tol_mult = -1, \
	.narrays = NARGS(__VA_ARGS__), .a = {__VA_ARGS__}}
#define CHECKED(nm, ty, fn, text, ...) \
	{.name = nm, .typed = ty, .src = text, .check = fn, .narrays = NARGS(__VA_ARGS__), .a = {__VA_ARGS__}}

/* y = EXPR(v) over a vector, v = x[...] in T. */
#define UNARY(name, expr)                                                    \
	CASE(name, true,                                                     \
	     "kernel " name "[T = f32, B = 128](\n"                          \
	     "    x: in T[N] block (B) index (i) -> (i),\n"                  \
	     "    y: out T[N] block (B) index (i) -> (i),\n"                 \
	     ") grid (cdiv(N, B)) {\n"                                       \
	     "    let v = x[...];\n"                                         \
	     "    y[...] = " expr ";\n"                                      \
	     "}\n",                                                          \
	     A1('i', DT_T, 1001), A1('o', DT_T, 1001))

/* x in the dtype FROM, converted to the four others. */
#define ASTYPE_FROM(name, from, scale, to1, to2, to3, to4)                      \
	CASE(name, false,                                                       \
	     "kernel " name "[B = 64](\n"                                       \
	     "    x: in " #from "[N] block (B) index (i) -> (i),\n"              \
	     "    a: out " #to1 "[N] block (B) index (i) -> (i),\n"              \
	     "    b: out " #to2 "[N] block (B) index (i) -> (i),\n"              \
	     "    c: out " #to3 "[N] block (B) index (i) -> (i),\n"              \
	     "    d: out " #to4 "[N] block (B) index (i) -> (i),\n"              \
	     ") grid (cdiv(N, B)) {\n"                                          \
	     "    let v = x[...]" scale ";\n"                                   \
	     "    a[...] = v.astype(" #to1 ");\n"                                \
	     "    b[...] = v.astype(" #to2 ");\n"                                \
	     "    c[...] = v.astype(" #to3 ");\n"                                \
	     "    d[...] = v.astype(" #to4 ");\n"                                \
	     "}\n",                                                             \
	     A1('i', BLK_##from, 333), A1('o', BLK_##to1, 333), A1('o', BLK_##to2, 333), \
	     A1('o', BLK_##to3, 333), A1('o', BLK_##to4, 333))
/* A [M, K] x [K, N] matmul over the K slabs a prefetch list kl of NK
 * entries names, in blocks of cparams. */
#define BLOCKSPARSE(name, cparams, nk, m, k, n)                                       \
	CASE(name, true,                                                              \
	     "kernel " name "[T = f32, " cparams "](\n"                                 \
	     "    kl: prefetch i32[NK],\n"                                              \
	     "    x: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"                \
	     "    w: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"                \
	     "    y: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"              \
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"                                    \
	     "    let acc = fori_loop(0, NK, zeros((BM, BN), f32)) |k, acc| {\n"        \
	     "        acc + dot(x[:, ds(kl[k] * BK, BK)], w[ds(kl[k] * BK, BK), :])\n"  \
	     "    };\n"                                                                 \
	     "    y[...] = acc.astype(T);\n"                                            \
	     "}\n",                                                                     \
	     A1('i', BLK_I32, nk), A2('i', DT_T, m, k), A2('i', DT_T, k, n), A2('o', DT_T, m, n))
/* A 3x3 convolution, stride 1, padding 1, NHWC, as an implicit GEMM: the
 * GEMM's rows are output pixels, each tap's A slab their input pixels'
 * rows, gathered by computed (n, h, w) indices (out of the image: zeros),
 * B the weights' rows of that tap and channel chunk. */
#define CONV3X3(name, cparams)                                                                    \
	"kernel " name "[T = f32, " cparams "](\n"                                                  \
	"    x: in T[N, H, W, C] block (N, H, W, C) index (i, j) -> (0, 0, 0, 0),\n"                \
	"    w: in T[9 * C, OC] block (9 * C, BN) index (i, j) -> (0, j),\n"                        \
	"    y: out T[N * H * W, OC] block (BM, BN) index (i, j) -> (i, j),\n"                      \
	") grid (cdiv(N * H * W, BM), cdiv(OC, BN)) {\n"                                            \
	"    let m = program_id(0) * BM + iota(BM);\n"                                              \
	"    let n = m ~/ (H * W);\n"                                                               \
	"    let p = (m % (H * W)) ~/ W;\n"                                                         \
	"    let q = m % W;\n"                                                                      \
	"    let nc = cdiv(C, BK);\n"                                                               \
	"    let acc = fori_loop(0, 9 * nc, zeros((BM, BN), f32)) |t, acc| {\n"                     \
	"        let tap = t ~/ nc;\n"                                                              \
	"        let c0 = (t % nc) * BK;\n"                                                         \
	"        let a = x[n, p + tap ~/ 3 - 1, q + tap % 3 - 1, ds(c0, BK)];\n"                    \
	"        acc + dot(a, w[ds(tap * C + c0, BK), :])\n"                                        \
	"    };\n"                                                                                  \
	"    y[...] = acc.astype(T);\n"                                                             \
	"}\n"
/* SwiGLU's two dots on one x slab: silu(x @ w1.T) * (x @ w3.T). */
#define SWIGLU(name)                                                                              \
	"kernel " name "[T = f32, BM = 128, BN = 128, BK = 32, num_warps = 8, num_stages = 3](\n"   \
	"    x: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"                                \
	"    w1: in T[N, K] block (BN, K) index (i, j) -> (j, 0),\n"                               \
	"    w3: in T[N, K] block (BN, K) index (i, j) -> (j, 0),\n"                               \
	"    h: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"                            \
	") grid (cdiv(M, BM), cdiv(N, BN)) {\n"                                                    \
	"    let (g, u) = fori_loop(0, cdiv(K, BK), (zeros((BM, BN), f32), zeros((BM, BN), f32))) |k, (g, u)| {\n" \
	"        let xs = x[:, ds(k * BK, BK)];\n"                                                  \
	"        (g + dot(xs, w1[:, ds(k * BK, BK)].T), u + dot(xs, w3[:, ds(k * BK, BK)].T))\n"   \
	"    };\n"                                                                                  \
	"    h[...] = silu(g) * u;\n"                                                               \
	"}\n"

#define BLK_f32 BLK_F32
#define BLK_f16 BLK_F16
#define BLK_bf16 BLK_BF16
#define BLK_i32 BLK_I32
#define BLK_bool BLK_BOOL
#define BLK_i8 BLK_I8
#define BLK_u8 BLK_U8
#define BLK_u32 BLK_U32

/* ---- C references for the interpreter's trickier semantics --------------- */

static double at(const Arrays *a, int arr, size_t i)
{
	return blk_host_get(a->h[arr], i);
}

/* Array arr of out must equal want(i) everywhere. */
static bool expect_exact(const Arrays *out, int arr, double (*want)(const Arrays *, size_t),
                         const Arrays *in, char *err)
{
	for (size_t i = 0; i < out->h[arr]->count; i++)
		if (at(out, arr, i) != want(in, i)) {
			snprintf(err, ERR_LEN, "C reference: array %d [%zu] = %g, want %g", arr, i,
			         at(out, arr, i), want(in, i));
			return false;
		}
	return true;
}

static double divisor(const Arrays *in, size_t i)
{
	return at(in, 1, i) == 0 ? 3 : at(in, 1, i);
}

static double floordiv_ref(const Arrays *in, size_t i)
{
	return floor(at(in, 0, i) / divisor(in, i));
}

static double mod_ref(const Arrays *in, size_t i)
{
	return at(in, 0, i) - divisor(in, i) * floordiv_ref(in, i);
}

/* scan_i32 on x [R, C], blocks of 8 rows: row scans over whole rows; column
 * scans within a block, whose rows past R read 0 (a reverse scan starts there). */
enum { SCAN_BR = 8 };

static int32_t scan_x(const Arrays *in, int64_t r, int64_t c)
{
	const BlkArrayDesc *d = &in->h[0]->desc;
	return r < d->shape[0] ? (int32_t)at(in, 0, (size_t)(r * d->shape[1] + c)) : 0;
}

static double scan_ref(const Arrays *in, size_t i, int which)
{
	int64_t C = in->h[0]->desc.shape[1], r = (int64_t)i / C, c = (int64_t)i % C;
	int64_t r0 = r / SCAN_BR * SCAN_BR;
	uint32_t acc = which == 1 ? 1 : 0;
	int32_t m = which == 2 ? INT32_MIN : INT32_MAX;
	if (which == 0)
		for (int64_t k = 0; k <= c; k++)
			acc += (uint32_t)scan_x(in, r, k);
	else if (which == 1)
		for (int64_t k = C - 1; k >= c; k--)
			acc *= (uint32_t)scan_x(in, r, k);
	else if (which == 2)
		for (int64_t k = r0; k <= r; k++)
			m = scan_x(in, k, c) > m ? scan_x(in, k, c) : m;
	else
		for (int64_t k = r0 + SCAN_BR - 1; k >= r; k--)
			m = scan_x(in, k, c) < m ? scan_x(in, k, c) : m;
	return which < 2 ? (double)(int32_t)acc : (double)m;
}

static double scan_sum_ref(const Arrays *in, size_t i) { return scan_ref(in, i, 0); }
static double scan_prod_ref(const Arrays *in, size_t i) { return scan_ref(in, i, 1); }
static double scan_max_ref(const Arrays *in, size_t i) { return scan_ref(in, i, 2); }
static double scan_min_ref(const Arrays *in, size_t i) { return scan_ref(in, i, 3); }

static bool check_scan_i32(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, scan_sum_ref, in, err) && expect_exact(out, 2, scan_prod_ref, in, err) &&
	       expect_exact(out, 3, scan_max_ref, in, err) && expect_exact(out, 4, scan_min_ref, in, err);
}

/* tile_slices_int on x [R, 16]: y = 3x + x[:, 15], m = x[:, 1:3] > 0. */
static double slices_y_ref(const Arrays *in, size_t i)
{
	return 3 * at(in, 0, i) + at(in, 0, i / 16 * 16 + 15);
}

static double slices_m_ref(const Arrays *in, size_t i)
{
	return at(in, 0, i / 2 * 16 + 1 + i % 2) > 0;
}

static bool check_slices_int(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, slices_y_ref, in, err) && expect_exact(out, 2, slices_m_ref, in, err);
}

/* gather_rows on ids [45], table [9, 40]: y = table[ids] (0 outside),
 * z = table[|ids| + 1] (-1 outside). */
static double gather_at(const Arrays *in, size_t i, int64_t row, double fill)
{
	return row >= 0 && row < 9 ? at(in, 1, (size_t)row * 40 + i % 40) : fill;
}

static double gather_y_ref(const Arrays *in, size_t i)
{
	return gather_at(in, i, (int64_t)at(in, 0, i / 40), 0);
}

static double gather_z_ref(const Arrays *in, size_t i)
{
	return gather_at(in, i, (int64_t)fabs(at(in, 0, i / 40)) + 1, -1);
}

static bool check_gather_rows(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 2, gather_y_ref, in, err) && expect_exact(out, 3, gather_z_ref, in, err);
}

/* strided_ds on x [300] i32, blocks of 128: e = evens + odds of each
 * block, y = its odds at even places and twice its evens at odd ones. */
static double strided_x(const Arrays *in, size_t i)
{
	return i < 300 ? at(in, 0, i) : 0;
}

static double strided_e_ref(const Arrays *in, size_t j)
{
	size_t b = j / 64 * 128 + j % 64 * 2;
	return strided_x(in, b) + strided_x(in, b + 1);
}

static double strided_y_ref(const Arrays *in, size_t i)
{
	return i % 2 ? strided_x(in, i - 1) : 2 * strided_x(in, i + 1);
}

static bool check_strided(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, strided_y_ref, in, err) && expect_exact(out, 2, strided_e_ref, in, err);
}

/* transpose_perm: x [3, 5, 7]; r[c, a, b] = x[a, b, c], s[a, c, b] = 2 x[a,
 * b, c], t = 2 x. */
static double tp_r(const Arrays *in, size_t i)
{
	size_t b = i % 5, a = i / 5 % 3, c = i / 15;
	return at(in, 0, (a * 5 + b) * 7 + c);
}

static double tp_s(const Arrays *in, size_t i)
{
	size_t b = i % 5, c = i / 5 % 7, a = i / 35;
	return 2 * at(in, 0, (a * 5 + b) * 7 + c);
}

static double tp_t(const Arrays *in, size_t i)
{
	return 2 * at(in, 0, i);
}

static bool check_transpose_perm(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, tp_r, in, err) && expect_exact(out, 2, tp_s, in, err) &&
	       expect_exact(out, 3, tp_t, in, err);
}

/* flip_tiles over x [10, 19] in blocks of 4 x 8: element (i, j) of a block
 * flipped along a dim reads the mirror inside its block, 0 past the array. */
static double flip_src(const Arrays *in, size_t i, bool rows, bool cols)
{
	size_t r = i / 19, c = i % 19;
	size_t sr = rows ? r / 4 * 4 + 3 - r % 4 : r, sc = cols ? c / 8 * 8 + 7 - c % 8 : c;
	return sr < 10 && sc < 19 ? at(in, 0, sr * 19 + sc) : 0.0;
}

static double flip_a(const Arrays *in, size_t i)
{
	return flip_src(in, i, false, true);
}

static double flip_b(const Arrays *in, size_t i)
{
	return flip_src(in, i, true, true);
}

static double flip_c(const Arrays *in, size_t i)
{
	return 2 * at(in, 0, i); /* flipped twice: itself */
}

static bool check_flip(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, flip_a, in, err) && expect_exact(out, 2, flip_b, in, err) &&
	       expect_exact(out, 3, flip_c, in, err);
}

/* grid6d over o [2, 6, 15, 4] with E = 3, F = 5 (B = 2, C = 3): element
 * (a, b * 3 + e, c * 5 + f, d) = 1e5 a + 1e4 b + 1e3 c + 100 d + 10 e + f
 * + 1e6 * F. */
static double grid6d_ref(const Arrays *in, size_t i)
{
	(void)in;
	size_t d = i % 4, cf = i / 4 % 15, be = i / 60 % 6, a = i / 360;
	size_t b = be / 3, e = be % 3, c = cf / 5, f = cf % 5;
	return (double)(100000 * a + 10000 * b + 1000 * c + 100 * d + 10 * e + f + 5000000);
}

static bool check_grid6d(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 0, grid6d_ref, in, err);
}

/* grid4d: o[a, b, c, d] = 1000a + 100b + 10c + d + 10000 * num_programs(3). */
static double grid4d_ref(const Arrays *in, size_t i)
{
	(void)in;
	size_t d = i % 7, c = i / 7 % 5, b = i / 35 % 3, a = i / 105;
	return (double)(1000 * a + 100 * b + 10 * c + d + 70000);
}

static bool check_grid4d(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 0, grid4d_ref, in, err);
}

/* argmax_i32 on x [13, 77] i32 (values -8..8: many ties): the first index
 * of each row's largest and of each column's smallest (blocks of 8 rows;
 * rows past 13 read 0). */
static double argmax_row_ref(const Arrays *in, size_t r)
{
	size_t best = 0;
	for (size_t c = 1; c < 77; c++)
		best = at(in, 0, r * 77 + c) > at(in, 0, r * 77 + best) ? c : best;
	return (double)best;
}

static double argmin_col_ref(const Arrays *in, size_t i)
{
	size_t b = i / 77, c = i % 77, best = 0;
	for (size_t k = 1; k < 8; k++) {
		size_t r = b * 8 + k, q = b * 8 + best;
		double v = r < 13 ? at(in, 0, r * 77 + c) : 0, w = q < 13 ? at(in, 0, q * 77 + c) : 0;
		best = v < w ? k : best;
	}
	return (double)best;
}

static bool check_argmax_i32(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, argmax_row_ref, in, err) && expect_exact(out, 2, argmin_col_ref, in, err);
}

/* prefetch_gmm: groups of 37, 0, 90 and 5 rows of x [132, 40] times
 * w [4, 40, 70]; the work list names, per program row, a block of 32 rows,
 * its group and the group's rows (a block two groups share is done twice). */
enum { GMM_M = 132, GMM_K = 40, GMM_N = 70, GMM_BM = 32, GMM_W = 7 };
static const int gmm_sizes[] = { 37, 0, 90, 5 };

static void fill_gmm(Arrays *a)
{
	int t = 0, lo = 0;
	for (int g = 0; g < 4; g++) {
		int hi = lo + gmm_sizes[g];
		for (int m = lo / GMM_BM; hi > lo && m <= (hi - 1) / GMM_BM; m++, t++) {
			int v[4] = { m, g, lo, hi };
			for (int j = 0; j < 4; j++)
				blk_host_set(a->h[0], (size_t)t * 4 + (size_t)j, v[j]);
		}
		lo = hi;
	}
	if (t != GMM_W || lo != GMM_M)
		blk_die("gpu-features: fill_gmm built %d items for %d rows", t, lo);
}

static bool check_gmm(const Arrays *in, const Arrays *out, char *err)
{
	BlkDType dt = out->h[3]->desc.dtype;
	double rel = dt == BLK_F32 ? 1e-5 : 1.0 / 64;
	for (int g = 0, lo = 0; g < 4; lo += gmm_sizes[g++])
		for (int r = lo; r < lo + gmm_sizes[g]; r++)
			for (int n = 0; n < GMM_N; n++) {
				double s = 0;
				for (int k = 0; k < GMM_K; k++)
					s += at(in, 1, (size_t)r * GMM_K + (size_t)k) *
					     at(in, 2, ((size_t)g * GMM_K + (size_t)k) * GMM_N + (size_t)n);
				double y = at(out, 3, (size_t)r * GMM_N + (size_t)n);
				if (!(fabs(y - s) <= 1e-4 + rel * fabs(s))) {
					snprintf(err, ERR_LEN, "C reference: y[%d, %d] = %g, want %g", r, n, y, s);
					return false;
				}
			}
	return true;
}

/* prefetch_huge: block indices whose products with the block dim wrap
 * around i32 (2^27 * 32 = 2^32 -> 0 if computed in i32): every one of
 * them is outside the array, so its rows read 0. */
static const int64_t huge_sel[8] = { 0, 2, 3, 1 << 26, INT32_MAX, INT32_MIN, 1 << 27, -1 };

static void fill_huge(Arrays *a)
{
	for (size_t i = 0; i < 8; i++)
		blk_host_set(a->h[0], i, (double)huge_sel[i]);
}

/* fp8_convert: f32 values at fp8's corners -- both formats' largest
 * finite values and just past them, the rounding ties between codes and
 * around the smallest subnormals, zeros of both signs, infinities, NaN
 * -- then a random spread over 2^-20 .. 2^20. */
static void fill_fp8(Arrays *a)
{
	static const float edge[] = {
		0.0f, -0.0f, 1.0f, -1.0f, 448.0f, -448.0f, 464.0f, 470.0f, 1e6f, 57344.0f, 61440.0f, 6e4f,
		INFINITY, -INFINITY, NAN, 0x1p-9f, 0x1p-10f, 0x3p-10f, 0x1p-16f, 0x1p-17f, 0x3p-17f, 0x1.1p0f,
		0x1.3p0f, 0x1.28p0f, 0x1.18p0f, 0x1.5p-7f, 0x1.7p-8f, -0x1.ap-12f, 1e-30f, -3.0e-39f,
	};
	size_t n = a->h[0]->count, ne = sizeof edge / sizeof edge[0];
	uint64_t s = 5;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		float r = ldexpf(1.0f + (float)((s >> 40) & 0xffff) / 65536.0f, (int)((s >> 20) % 41) - 20);
		blk_host_set(a->h[0], i, i < ne ? edge[i] : (s >> 63) ? -r : r);
	}
}

/* div_by_constant: f32 values at the edges of emit_divide.c's fast range
 * (2^-80 and 2^100, each side), zeros of both signs, infinities, NaN,
 * subnormals, the largest finite, then a spread over 2^-140 .. 2^127, so
 * that some threads hold only values inside the range and some a mix. */
static void fill_div(Arrays *a)
{
	static const float edge[] = {
		0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-80f, 0x1.fffffep-81f, -0x1p-80f, 0x1p100f,
		0x1.fffffep99f, -0x1p100f, FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-140f, 0x1.fffffcp-127f, 1.0f, 3.0f,
	};
	size_t n = a->h[0]->count, ne = sizeof edge / sizeof edge[0];
	uint64_t s = 11;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		float m = 1.0f + (float)((s >> 40) & 0xffffff) / 16777216.0f;
		/* the first 512 rows within 2^-20 .. 2^20 (fast everywhere), the
		 * rest anywhere */
		int e = i < 512 * 64 ? (int)((s >> 20) % 41) - 20 : (int)((s >> 20) % 268) - 140;
		float r = ldexpf(m, e);
		blk_host_set(a->h[0], i, i >= 600 * 64 && i - 600 * 64 < ne ? edge[i - 600 * 64] : (s >> 63) ? -r : r);
	}
}

/* div_by_constant's C reference: each quotient is C's f32 division, bit
 * for bit (any NaN for a NaN). */
static bool check_div(const Arrays *in, const Arrays *out, char *err)
{
	static const float by[4] = { 3.0f, 11.3137083f, 8.0f, 1e-30f };
	for (size_t i = 0; i < in->h[0]->count; i++) {
		float x = (float)at(in, 0, i);
		for (int k = 0; k < 4; k++) {
			float want = x / (k == 1 ? sqrtf(128.0f) : by[k]), got = (float)at(out, 1 + k, i);
			if (memcmp(&want, &got, 4) != 0 && !(isnan(want) && isnan(got))) {
				snprintf(err, ERR_LEN, "C reference: array %d [%zu] = %a, want %a (x = %a)", 1 + k, i,
				         (double)got, (double)want, (double)x);
				return false;
			}
		}
	}
	return true;
}

/* fp8_convert's C reference: e and m (x rounded to each format), c (a
 * full() of 0.3 where x > 0), y (the fill 300.0 where the shifted window
 * leaves the block: 288 in e4m3); NaN matches NaN. */
static double fp8_round(BlkDType t, double v)
{
	return blk_fp8_to_f32(t, blk_f32_to_fp8(t, (float)v));
}

static bool check_fp8(const Arrays *in, const Arrays *out, char *err)
{
	size_t n = out->h[2]->count, B = 128;
	for (size_t i = 0; i < n; i++) {
		double x = at(in, 0, i), q = fp8_round(BLK_F8E4M3, x);
		double win = i % B < B - 8 && i + 8 < n ? at(in, 1, i + 8) : 288.0;
		double want[4] = { q, fp8_round(BLK_F8E5M2, x), (q == q ? q * 2 : -7.0) + win,
		                   x > 0 ? fp8_round(BLK_F8E5M2, 0.3) : fp8_round(BLK_F8E5M2, x) };
		static const int arr[4] = { 2, 3, 4, 7 };
		for (int k = 0; k < 4; k++) {
			double got = at(out, arr[k], i);
			if (got != want[k] && !(isnan(got) && isnan(want[k]))) {
				snprintf(err, ERR_LEN, "C reference: array %d [%zu] = %g, want %g (x = %a)", arr[k], i,
				         got, want[k], x);
				return false;
			}
		}
	}
	return true;
}

static double huge_ref(const Arrays *in, size_t i)
{
	int64_t b = huge_sel[i / (32 * 16)];
	size_t r = i / 16 % 32, c = i % 16;
	int64_t row = b * 32 + (int64_t)r;
	return b >= 0 && b < 4 && row < 100 ? at(in, 1, (size_t)row * 16 + c) + 1 : 1;
}

static bool check_huge(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 2, huge_ref, in, err);
}

/* paged_attention_decode: 5 sequences of lengths 0 .. 7 pages of 8 over a
 * cache of 23 pages per KV head, each page table a random walk over them
 * (repeats included); the entries past a sequence's pages are junk. */
static void fill_pages(Arrays *a)
{
	uint64_t s = 77;
	for (size_t i = 0; i < a->h[0]->count; i++) {
		s = s * 6364136223846793005u + 1442695040888963407u;
		blk_host_set(a->h[0], i, (double)((s >> 33) % 23) - (i % 7 == 6 ? 40 : 0));
	}
	static const int lens[5] = { 0, 1, 56, 17, 33 };
	for (size_t b = 0; b < 5; b++)
		blk_host_set(a->h[1], b, lens[b]);
}

static bool check_floordiv(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 2, floordiv_ref, in, err) && expect_exact(out, 3, mod_ref, in, err);
}

/* (float)(x * 10) * 1e9 truncated, saturated to i32. */
static double saturate_ref(const Arrays *in, size_t i)
{
	float v = (float)at(in, 0, i) * 10.0f * 1e9f;
	return v >= 2147483647.0f ? 2147483647.0 : v <= -2147483648.0f ? -2147483648.0 : trunc(v);
}

static double truthy_ref(const Arrays *in, size_t i)
{
	return trunc((float)at(in, 0, i) * 10.0f) != 0;
}

static bool check_saturate(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 1, saturate_ref, in, err) && expect_exact(out, 2, truthy_ref, in, err);
}

/* program_id(0) * 64 + iota(64) + cdiv(1001, 64) * 100000 */
static double iota_ref(const Arrays *in, size_t i)
{
	(void)in;
	return (double)i + 16 * 100000;
}

static bool check_iota(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 0, iota_ref, in, err);
}

/* h += counts of x + 8; the 11 lanes past N = 101 in the last block of 16
 * read the fill 0 and count into bin 8. */
static bool check_histogram(const Arrays *in, const Arrays *out, char *err)
{
	double h[17];
	for (size_t b = 0; b < 17; b++)
		h[b] = at(in, 1, b);
	for (size_t i = 0; i < in->h[0]->count; i++)
		h[(int)at(in, 0, i) + 8] += 1;
	h[8] += 112 - 101;
	for (size_t b = 0; b < 17; b++)
		if (at(out, 1, b) != h[b]) {
			snprintf(err, ERR_LEN, "C reference: bin %zu = %g, want %g", b, at(out, 1, b), h[b]);
			return false;
		}
	return true;
}

/* y[i] = (x[i + 1] if i + 1 inside the block and the array, else -2)
 *      + x[i]: blocks of 64 over N = 333. */
static double other_ref(const Arrays *in, size_t i)
{
	size_t n = in->h[0]->count, j = i + 1;
	bool inside = j % 64 != 0 && j < n;
	return (inside ? at(in, 0, j) : -2.0) + at(in, 0, i);
}

static bool check_other(const Arrays *in, const Arrays *out, char *err)
{
	if (out->h[1]->desc.dtype != BLK_F32)
		return true; /* f16/bf16 rounding: the f32 row stands for them */
	for (size_t i = 0; i < out->h[1]->count; i++)
		if (fabs(at(out, 1, i) - other_ref(in, i)) > 1e-6) {
			snprintf(err, ERR_LEN, "C reference: y[%zu] = %g, want %g", i, at(out, 1, i),
			         other_ref(in, i));
			return false;
		}
	return true;
}

/* int_bitwise_shift's v and k at element i (blocks of 128), computed
 * with wrapping as the kernel does; the shifts as docs/language.md
 * defines them for every amount (negative and >= 32 included). */
static int32_t bits_v(const Arrays *in, size_t i)
{
	return (int32_t)((uint32_t)(int32_t)at(in, 0, i) * 123456789u + (uint32_t)(i % 128) * 7919u);
}

static int32_t bits_k(const Arrays *in, size_t i)
{
	return (int32_t)at(in, 1, i) * 5 - 3 + (int32_t)(i % 128 % 3);
}

static double shl_ref(int32_t v, int32_t k)
{
	return k >= 0 && k < 32 ? (double)(int32_t)((uint32_t)v << k) : 0;
}

static double shr_ref(int32_t v, int32_t k)
{
	int32_t s = k >= 0 && k < 32 ? k : 31;
	return v < 0 ? (double)~(~v >> s) : (double)(v >> s);
}

static double bits_and_ref(const Arrays *in, size_t i)
{
	int32_t v = bits_v(in, i), k = bits_k(in, i);
	return (double)((v & 65535) | (~v ^ (int32_t)shl_ref(k, 3)));
}

static double bits_shl_ref(const Arrays *in, size_t i)
{
	return shl_ref(bits_v(in, i), bits_k(in, i));
}

static double bits_shr_ref(const Arrays *in, size_t i)
{
	return shr_ref(bits_v(in, i), bits_k(in, i));
}

static double bits_bool_ref(const Arrays *in, size_t i)
{
	int32_t v = bits_v(in, i), k = bits_k(in, i);
	return ((v > 0) & (k > 0)) | ((v < k) ^ (k < 0));
}

static bool check_bits(const Arrays *in, const Arrays *out, char *err)
{
	return expect_exact(out, 2, bits_and_ref, in, err) && expect_exact(out, 3, bits_shl_ref, in, err) &&
	       expect_exact(out, 4, bits_shr_ref, in, err) && expect_exact(out, 5, bits_bool_ref, in, err);
}

/* atomic_max_min_f32: column maxima and minima of x [61, 45] (rows past
 * 61 read -inf / inf) into the inout starts. */
static bool check_colmaxmin(const Arrays *in, const Arrays *out, char *err)
{
	for (size_t c = 0; c < 45; c++) {
		double hi = at(in, 1, c), lo = at(in, 2, c);
		for (size_t r = 0; r < 61; r++) {
			hi = fmax(hi, at(in, 0, r * 45 + c));
			lo = fmin(lo, at(in, 0, r * 45 + c));
		}
		if (at(out, 1, c) != hi || at(out, 2, c) != lo) {
			snprintf(err, ERR_LEN, "C reference: column %zu: max %g min %g, want %g %g", c,
			         at(out, 1, c), at(out, 2, c), hi, lo);
			return false;
		}
	}
	return true;
}

/* atomic_signed_zero_nan: totalOrder puts -0 below +0 and NaN above all. */
static bool check_signed_zero(const Arrays *in, const Arrays *out, char *err)
{
	static const double s[4] = { -0.0, 0.0, 1.0, 0.0 };
	(void)in;
	for (size_t i = 0; i < 4; i++)
		if (at(out, 0, i) != s[i] || signbit(at(out, 0, i)) != signbit(s[i]) ||
		    at(out, 1, i) != 1.0 / s[i]) {
			snprintf(err, ERR_LEN, "C reference: s[%zu] = %g, 1/s = %g; want %g", i,
			         at(out, 0, i), at(out, 1, i), s[i]);
			return false;
		}
	return true;
}

/* atomic_max_min_i32: x [101] (0 past its end, blocks of 16) into 5 bins
 * by (x + 8) % 5: the largest and smallest x * 100 + (i % 16). */
static bool check_binmaxmin(const Arrays *in, const Arrays *out, char *err)
{
	double hi[5], lo[5];
	for (size_t b = 0; b < 5; b++) {
		hi[b] = at(in, 1, b);
		lo[b] = at(in, 2, b);
	}
	for (size_t i = 0; i < 112; i++) {
		int x = i < 101 ? (int)at(in, 0, i) : 0, b = (x + 8) % 5;
		double v = x * 100 + (int)(i % 16);
		hi[b] = fmax(hi[b], v);
		lo[b] = fmin(lo[b], v);
	}
	for (size_t b = 0; b < 5; b++)
		if (at(out, 1, b) != hi[b] || at(out, 2, b) != lo[b]) {
			snprintf(err, ERR_LEN, "C reference: bin %zu: max %g min %g, want %g %g", b,
			         at(out, 1, b), at(out, 2, b), hi[b], lo[b]);
			return false;
		}
	return true;
}

/* atomic_cas_claim: c's elements equal to 3 become 1000 * program + lane,
 * the rest stay; f[0] becomes 7 (each program swaps what it read, or 7
 * for 7), f[1] stays (never 100). */
static bool check_cas(const Arrays *in, const Arrays *out, char *err)
{
	for (size_t i = 0; i < in->h[1]->count; i++) {
		double want = at(in, 1, i) == 3 ? (double)(i / 16 * 1000 + i % 16) : at(in, 1, i);
		if (at(out, 1, i) != want) {
			snprintf(err, ERR_LEN, "C reference: c[%zu] = %g, want %g", i, at(out, 1, i), want);
			return false;
		}
	}
	if (at(out, 2, 0) == 7 && at(out, 2, 1) == at(in, 2, 1))
		return true;
	snprintf(err, ERR_LEN, "C reference: f = %g %g, want 7 %g", at(out, 2, 0), at(out, 2, 1),
	         at(in, 2, 1));
	return false;
}

/* Causal attention in two loops (Triton's tutorial's form), named. */
#define ATTN_TWO_LOOPS(name) \
	"kernel " name "[T = f32, BQ = 128, BK = 64, D = 32, num_warps = 8, num_stages = 2](\n"\
	"    q: in  T[BH, S, D] block (None, BQ, D) index (i, h) -> (h, i, 0),\n"\
	"    k: in  T[BH, S, D] block (None, S, D)  index (i, h) -> (h, 0, 0),\n"\
	"    v: in  T[BH, S, D] block (None, S, D)  index (i, h) -> (h, 0, 0),\n"\
	"    o: out T[BH, S, D] block (None, BQ, D) index (i, h) -> (h, i, 0),\n"\
	") grid (cdiv(S, BQ), BH) {\n"\
	"    let x = q[...];\n"\
	"    let rows = expand_dims(program_id(0) * BQ + iota(BQ), 1);\n"\
	"    let hi = min(cdiv((program_id(0) + 1) * BQ, BK), cdiv(S, BK));\n"\
	"    let mid = min(program_id(0) * BQ ~/ BK, hi);\n"\
	"    let (m1, l1, a1) = fori_loop(0, mid, (full((BQ,), -inf, f32), zeros((BQ,), f32), zeros((BQ, D), f32))) |j, (m, l, acc)| {\n"\
	"        let s = dot(x, k[ds(j * BK, BK), :].T) * 0.17;\n"\
	"        let m_new = max(m, max(s, axis = 1));\n"\
	"        let p = exp(s - expand_dims(m_new, 1));\n"\
	"        let alpha = exp(m - m_new);\n"\
	"        (m_new, l * alpha + sum(p, axis = 1), acc * expand_dims(alpha, 1) + dot(p.astype(T), v[ds(j * BK, BK), :]))\n"\
	"    };\n"\
	"    let (m, l, acc) = fori_loop(mid, hi, (m1, l1, a1)) |j, (m, l, acc)| {\n"\
	"        let cols = expand_dims(j * BK + iota(BK), 0);\n"\
	"        let s = where(cols <= rows && cols < S, dot(x, k[ds(j * BK, BK), :].T) * 0.17, -inf);\n"\
	"        let m_new = max(m, max(s, axis = 1));\n"\
	"        let p = exp(s - expand_dims(m_new, 1));\n"\
	"        let alpha = exp(m - m_new);\n"\
	"        (m_new, l * alpha + sum(p, axis = 1), acc * expand_dims(alpha, 1) + dot(p.astype(T), v[ds(j * BK, BK), :]))\n"\
	"    };\n"\
	"    o[...] = (acc / expand_dims(l, 1)).astype(T);\n"\
	"}\n"

/* x @ b with x's elements outside KEEP (of rows, cols and W) zeroed, K
 * in blocks of BK, named. */
#define MASKED_DOT(name, w, keep) \
	"kernel " name "[T = f32, BM = 64, BK = 32, W = " w "](\n" \
	"    a: in T[M, K] block (BM, K) index (i) -> (i, 0),\n" \
	"    b: in T[K, N] block (K, N) index (i) -> (0, 0),\n" \
	"    o: out f32[M, N] block (BM, N) index (i) -> (i, 0),\n" \
	") grid (cdiv(M, BM)) {\n" \
	"    let rows = expand_dims(program_id(0) * BM + iota(BM), 1);\n" \
	"    o[...] = fori_loop(0, cdiv(K, BK), zeros((BM, N), f32)) |j, acc| {\n" \
	"        let cols = expand_dims(j * BK + iota(BK), 0);\n" \
	"        let x = where(" keep ", a[:, ds(j * BK, BK)], 0.0);\n" \
	"        acc + dot(x, b[ds(j * BK, BK), :])\n" \
	"    };\n" \
	"}\n"

/* A matmul whose K runs in two loops, named. */
#define TWO_K_LOOPS(name) \
	"kernel " name "[T = f32, BM = 128, BN = 128, BK = 64, num_warps = 8, num_stages = 3](\n" \
	"    a: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n" \
	"    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n" \
	"    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n" \
	") grid (cdiv(M, BM), cdiv(N, BN)) {\n" \
	"    let nk = cdiv(K, BK);\n" \
	"    let half = nk ~/ 2;\n" \
	"    let acc = fori_loop(0, half, zeros((BM, BN), f32)) |k, acc| {\n" \
	"        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n" \
	"    };\n" \
	"    c[...] = fori_loop(half, nk, acc) |k, acc| {\n" \
	"        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n" \
	"    };\n" \
	"}\n"

static const Case cases[] = {
	/* ---- elementwise functions, one each */
	UNARY("unary_tanh", "tanh(v * 2.0)"),
	UNARY("unary_exp", "exp(v)"),
	UNARY("unary_log", "log(abs(v) + 0.5)"),
	UNARY("unary_sqrt", "sqrt(abs(v))"),
	UNARY("unary_rsqrt", "rsqrt(abs(v) + 0.25)"),
	UNARY("unary_abs_neg", "abs(v) - -v"),
	UNARY("unary_sigmoid", "sigmoid(v * 8.0)"),
	UNARY("unary_erf", "erf(v * 3.0)"),
	UNARY("unary_erf_small", "erf(v * 0.001)"),
	UNARY("unary_log1p", "log1p(v * 0.95)"),
	UNARY("unary_log1p_small", "log1p(v * 0.0001)"),
	UNARY("unary_expm1", "expm1(v * 4.0)"),
	UNARY("unary_expm1_small", "expm1(v * 0.0001)"),
	UNARY("unary_floor_ceil", "floor(v * 5.0) + ceil(v * 3.0) * 0.5"),
	UNARY("unary_exp2", "exp2(v * 6.0)"),
	UNARY("unary_log2", "log2(abs(v) + 0.25)"),
	UNARY("unary_silu", "silu(v * 8.0)"),
	UNARY("unary_gelu", "gelu(v * 4.0)"),
	UNARY("unary_gelu_tanh", "gelu(v * 4.0, approximate = true)"),
	UNARY("unary_softplus", "softplus(v * 20.0) + softplus(v * 0.001)"),
	UNARY("ternary_fma_clamp", "fma(v, v * 3.0, 0.5) + clamp(v * 2.0, -0.5, 1)"),
	UNARY("weak_scalars", "v / N + v * (1.0 / N) - program_id(0) + clamp(v, -0.5, x[0])"),
	UNARY("unary_isnan_isinf", "where(isnan(sqrt(v)), v, -v) + where(isinf(1.0 / floor(v * 2.0)), v * 4.0, 1.0)"),
	UNARY("binary_pow_frac", "abs(v) ** 1.5 + pow(abs(v) + 0.5, -2.5)"),
	UNARY("binary_pow_negative_base", "(v * 2.0) ** 3.0 - (v * 2.0) ** 2.0 + (v - 1.5) ** -3.0 - -v ** 2"),

	/* random numbers: the GPU's bits are the interpreter's (ir/random.c),
	 * words and floats alike; the seed loaded (random, negative ones too),
	 * counters from an array, the offsets of a 1-D and a 2-D grid */
	CASE("random_bits", false,
	     "kernel random_bits[B = 128](\n"
	     "    s: in i32[1],\n"
	     "    c: in i32[N] block (B) index (i) -> (i),\n"
	     "    a: out i32[N] block (B) index (i) -> (i),\n"
	     "    b: out i32[N] block (B) index (i) -> (i),\n"
	     "    d: out i32[N] block (B) index (i) -> (i),\n"
	     "    e: out i32[N] block (B) index (i) -> (i),\n"
	     "    w: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let off = program_id(0) * B + iota(B);\n"
	     "    let (p, q, r, t) = philox(s[0], off, c[...], off * 7, -1);\n"
	     "    a[...] = p;\n    b[...] = q;\n    d[...] = r;\n    e[...] = t;\n"
	     "    let (x, y, z, u) = randint4x(c[0] - 5, off);\n"
	     "    w[...] = randint(s[0], off) ^ (y >> 3);\n"
	     "}\n",
	     A1('i', BLK_I32, 1), A1('i', BLK_I32, 1001), A1('o', BLK_I32, 1001), A1('o', BLK_I32, 1001),
	     A1('o', BLK_I32, 1001), A1('o', BLK_I32, 1001), A1('o', BLK_I32, 1001)),
	CASE_EXACT("random_floats",
	     "kernel random_floats[B = 128](\n"
	     "    s: in i32[1],\n"
	     "    u: out f32[N] block (B) index (i) -> (i),\n"
	     "    g: out f32[N] block (B) index (i) -> (i),\n"
	     "    h: out f32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let off = program_id(0) * B + iota(B);\n"
	     "    u[...] = rand(s[0], off);\n"
	     "    g[...] = randn(s[0], off);\n"
	     "    h[...] = randn(s[0] * 65599 + 1, off * 4099 - 77);\n"
	     "}\n",
	     A1('i', BLK_I32, 1), A1('o', BLK_F32, 4099), A1('o', BLK_F32, 4099), A1('o', BLK_F32, 4099)),
	CASE_EXACT("random_2d",
	     "kernel random_2d[BR = 16, BC = 64](\n"
	     "    s: in i32[1],\n"
	     "    u: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    g: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    w: out i32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    let row = program_id(0) * BR + iota(BR);\n"
	     "    let col = program_id(1) * BC + iota(BC);\n"
	     "    let off = row[:, None] * C + col[None, :];\n"
	     "    u[...] = rand(s[0], off);\n"
	     "    g[...] = randn(s[0], off);\n"
	     "    w[...] = randint(s[0], off);\n"
	     "}\n",
	     A1('i', BLK_I32, 1), A2('o', BLK_F32, 37, 150), A2('o', BLK_F32, 37, 150), A2('o', BLK_I32, 37, 150)),

	/* tiles joined and cut: split's halves, concatenate, interleave,
	 * stack; rows ragged (37 in blocks of 16) */
	CASE("tile_join_split", true,
	     "kernel tile_join_split[T = f32, BR = 16](\n"
	     "    x: in T[R, 32] block (BR, 32) index (i) -> (i, 0),\n"
	     "    y: out T[R, 48] block (BR, 48) index (i) -> (i, 0),\n"
	     "    z: out T[R, 64] block (BR, 64) index (i) -> (i, 0),\n"
	     "    s: out T[R, 2, 16] block (BR, 2, 16) index (i) -> (i, 0, 0),\n"
	     "    o: out T[R, 13] block (BR, 13) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let t = x[...];\n"
	     "    let (a, b) = split(t, 2, axis = 1);\n"
	     "    y[...] = concatenate((b, t), axis = 1);\n"
	     "    z[...] = interleave(t, -t);\n"
	     "    s[...] = stack((b, a), axis = 1);\n"
	     "    o[...] = concatenate((t[:, 0:5], t[:, 24:]), axis = 1);\n"
	     "}\n",
	     A2('i', DT_T, 37, 32), A2('o', DT_T, 37, 48), A2('o', DT_T, 37, 64), A3('o', DT_T, 37, 2, 16),
	     A2('o', DT_T, 37, 13)),

	/* the same moves on one-byte and bool tiles (fp8 moved, not computed) */
	CASE("tile_join_bytes", false,
	     "kernel tile_join_bytes(\n"
	     "    x: in f8e4m3[R, 8] block (16, 8) index (i) -> (i, 0),\n"
	     "    m: in bool[R, 8] block (16, 8) index (i) -> (i, 0),\n"
	     "    q: in i8[R, 8] block (16, 8) index (i) -> (i, 0),\n"
	     "    y: out f8e4m3[R, 16] block (16, 16) index (i) -> (i, 0),\n"
	     "    n: out bool[R, 2, 8] block (16, 2, 8) index (i) -> (i, 0, 0),\n"
	     "    p: out i8[R, 16] block (16, 16) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, 16)) {\n"
	     "    let (a, b) = split(x[...], 2, axis = 1);\n"
	     "    y[...] = concatenate((b, x[...], a), axis = 1);\n"
	     "    n[...] = stack((m[...], !m[...]), axis = 1);\n"
	     "    p[...] = interleave(q[...], q[...] + 1);\n"
	     "}\n",
	     A2('i', BLK_F8E4M3, 37, 8), A2('i', BLK_BOOL, 37, 8), A2('i', BLK_I8, 37, 8),
	     A2('o', BLK_F8E4M3, 37, 16), A3('o', BLK_BOOL, 37, 2, 8), A2('o', BLK_I8, 37, 16)),

	/* pow with an exponent per element, from -6 to 6 */
	CASE("binary_pow_tiles", true,
	     "kernel binary_pow_tiles[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    z: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    y[...] = pow(abs(x[...]) * 1.5 + 0.5, z[...] * 6.0);\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('i', DT_T, 1001), A1('o', DT_T, 1001)),

	/* powf's special cases, every pair of 9 bases and 8 exponents: NaN
	 * comes out as -7 (a NaN never compares equal), a zero as 1 / it
	 * (its sign) */
	CASE("binary_pow_special", false,
	     "kernel binary_pow_special[B = 72](\n"
	     "    y: out f32[N] block (B) index (i) -> (i),\n"
	     "    z: out f32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let k = iota(B) % 9;\n"
	     "    let j = iota(B) ~/ 9;\n"
	     "    let b = where(k == 0, 0.0, where(k == 1, -0.0, where(k == 2, 1.0, where(k == 3, -1.0, where(k == 4, inf, where(k == 5, -inf, where(k == 6, -2.0, where(k == 7, 2.5, nan))))))));\n"
	     "    let e = where(j == 0, 0.0, where(j == 1, -1.0, where(j == 2, 3.0, where(j == 3, 0.5, where(j == 4, inf, where(j == 5, -inf, where(j == 6, -3.0, 2.0)))))));\n"
	     "    let r = b ** e;\n"
	     "    y[...] = where(r != r, -7.0, r);\n"
	     "    z[...] = where(r == 0.0, 1.0 / r, 0.0);\n"
	     "}\n",
	     A1('o', BLK_F32, 72), A1('o', BLK_F32, 72)),

	CASE("arith_float", true,
	     "kernel arith_float[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    z: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let a = x[...];\n"
	     "    let b = z[...];\n"
	     "    y[...] = a * b - a / (abs(b) + 1.0) + max(a, b) - min(a, 0.25) + -a * 2.0;\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('i', DT_T, 1001), A1('o', DT_T, 1001)),

	/* floor division and modulo with negative operands (Python semantics) */
	CHECKED("arith_i32_floordiv_mod", false, check_floordiv,
	     "kernel arith_i32_floordiv_mod[B = 128](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    z: in i32[N] block (B) index (i) -> (i),\n"
	     "    q: out i32[N] block (B) index (i) -> (i),\n"
	     "    r: out i32[N] block (B) index (i) -> (i),\n"
	     "    y: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let a = x[...];\n"
	     "    let d = where(z[...] == 0, 3, z[...]);\n"
	     "    q[...] = a ~/ d;\n"
	     "    r[...] = a % d;\n"
	     "    y[...] = a * d - (-a) + max(a, d) * 7 - min(a, -2) ~/ 3;\n"
	     "}\n",
	     A1('i', BLK_I32, 1001), A1('i', BLK_I32, 1001), A1('o', BLK_I32, 1001),
	     A1('o', BLK_I32, 1001), A1('o', BLK_I32, 1001)),

	/* division by 0 and by -1 (INT32_MIN ~/ -1 wraps): defined, as in
	 * docs/language.md; LLVM's sdiv would have let the stores go */
	CASE("arith_i32_div_zero", false,
	     "kernel arith_i32_div_zero[B = 128](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    z: in i32[N] block (B) index (i) -> (i),\n"
	     "    q: out i32[N] block (B) index (i) -> (i),\n"
	     "    r: out i32[N] block (B) index (i) -> (i),\n"
	     "    y: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let a = where(iota(B) == 5, -2147483647 - 1, x[...]);\n"
	     "    let d = z[...] % 3 - 1;\n"
	     "    q[...] = a ~/ d;\n"
	     "    r[...] = a % d;\n"
	     "    y[...] = program_id(0) ~/ (N - N) + a % 0 + cdiv(program_id(0) - 3, N - N) + (N - 1001) % (N - 1001);\n"
	     "}\n",
	     A1('i', BLK_I32, 1001), A1('i', BLK_I32, 1001), A1('o', BLK_I32, 1001),
	     A1('o', BLK_I32, 1001), A1('o', BLK_I32, 1001)),

	/* & | ^ ~ << >> on i32 (shift amounts from -43 to 37) and & | ^ on
	 * bool, Python's precedence; integer max/min/abs */
	CHECKED("int_bitwise_shift", false, check_bits,
	     "kernel int_bitwise_shift[B = 128](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    z: in i32[N] block (B) index (i) -> (i),\n"
	     "    a: out i32[N] block (B) index (i) -> (i),\n"
	     "    s: out i32[N] block (B) index (i) -> (i),\n"
	     "    r: out i32[N] block (B) index (i) -> (i),\n"
	     "    b: out bool[N] block (B) index (i) -> (i),\n"
	     "    m: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...] * 123456789 + iota(B) * 7919;\n"
	     "    let k = z[...] * 5 - 3 + iota(B) % 3;\n"
	     "    a[...] = v & 65535 | ~v ^ k << 3;\n"
	     "    s[...] = v << k;\n"
	     "    r[...] = v >> k;\n"
	     "    b[...] = (v > 0) & (k > 0) | (v < k) ^ (k < 0);\n"
	     "    m[...] = max(v, k) - min(v, -k) + abs(v) + (1 << 31 >> 31) + (-1 >> 40) + (3 << 32);\n"
	     "}\n",
	     A1('i', BLK_I32, 1001), A1('i', BLK_I32, 1001), A1('o', BLK_I32, 1001),
	     A1('o', BLK_I32, 1001), A1('o', BLK_I32, 1001), A1('o', BLK_BOOL, 1001),
	     A1('o', BLK_I32, 1001)),

	/* a shift by a scalar amount and of a scalar (the amount broadcasts),
	 * ~ on bool, and tiny blocks */
	CASE("int_shift_scalar", false,
	     "kernel int_shift_scalar[B = 4](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    p: in bool[N] block (B) index (i) -> (i),\n"
	     "    y: out i32[N] block (B) index (i) -> (i),\n"
	     "    q: out bool[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let n = program_id(0) - 2;\n"
	     "    y[...] = (x[...] << n) + (1 >> x[...]) + (-256 >> n) ^ ~n;\n"
	     "    q[...] = ~p[...] ^ (x[...] > 0) | p[...] & (n == 1);\n"
	     "}\n",
	     A1('i', BLK_I32, 37), A1('i', BLK_BOOL, 37), A1('o', BLK_I32, 37), A1('o', BLK_BOOL, 37)),

	/* inf, nan and constants past f32's range, into floats and i32 */
	CASE("inf_nan_constants", true,
	     "kernel inf_nan_constants[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    z: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...];\n"
	     "    y[...] = max(v, -inf) + min(v, 1e39) + where(v > 100.0, nan, v * 0.0);\n"
	     "    z[...] = full((B,), 1e39, f32).astype(i32) + full((B,), -inf, f32).astype(i32)\n"
	     "        + full((B,), nan, f32).astype(i32) + load(x, other = -inf).astype(i32);\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('o', DT_T, 1001), A1('o', BLK_I32, 1001)),

	CASE("compare_to_bool", true,
	     "kernel compare_to_bool[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    z: in T[N] block (B) index (i) -> (i),\n"
	     "    lt: out bool[N] block (B) index (i) -> (i),\n"
	     "    eq: out bool[N] block (B) index (i) -> (i),\n"
	     "    mix: out bool[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let a = x[...];\n"
	     "    let b = z[...];\n"
	     "    lt[...] = a < b;\n"
	     "    eq[...] = (a * 4.0).astype(i32) == (b * 4.0).astype(i32) || a != a;\n"
	     "    mix[...] = (a <= b && !(a >= 0.5)) || a > 0.75;\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('i', DT_T, 1001), A1('o', BLK_BOOL, 1001),
	     A1('o', BLK_BOOL, 1001), A1('o', BLK_BOOL, 1001)),

	CASE("bool_logic", false,
	     "kernel bool_logic[B = 128](\n"
	     "    p: in bool[N] block (B) index (i) -> (i),\n"
	     "    q: in bool[N] block (B) index (i) -> (i),\n"
	     "    o: out bool[N] block (B) index (i) -> (i),\n"
	     "    n: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let a = p[...];\n"
	     "    let b = q[...];\n"
	     "    o[...] = (a && !b) || (!a && b);\n"
	     "    n[...] = where(a || b, 1, 0) + a.astype(i32) * 2;\n"
	     "}\n",
	     A1('i', BLK_BOOL, 1001), A1('i', BLK_BOOL, 1001), A1('o', BLK_BOOL, 1001),
	     A1('o', BLK_I32, 1001)),

	CASE("where_select", true,
	     "kernel where_select[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    w: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...];\n"
	     "    y[...] = where(v > 0.0, v, v * 0.01);\n"
	     "    w[...] = where(v < -0.5, -v, 0.5);\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('o', DT_T, 1001), A1('o', DT_T, 1001)),

	/* ---- grids, program ids, iota, expand_dims, broadcasting */
	CHECKED("iota_program_id_1d", false, check_iota,
	     "kernel iota_program_id_1d[B = 64](\n"
	     "    y: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    y[...] = program_id(0) * B + iota(B) + num_programs(0) * 100000;\n"
	     "}\n",
	     A1('o', BLK_I32, 1001)),

	CASE("grid2d_expand_dims", false,
	     "kernel grid2d_expand_dims[BM = 16, BN = 32](\n"
	     "    y: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let r = expand_dims(program_id(0) * BM + iota(BM), 1);\n"
	     "    let c = expand_dims(program_id(1) * BN + iota(BN), 0);\n"
	     "    y[...] = r * 1000 + c + num_programs(1) * 1000000 + num_programs(0);\n"
	     "}\n",
	     A2('o', BLK_I32, 53, 77)),

	CASE("grid3d_squeezed", true,
	     "kernel grid3d_squeezed[T = f32, BM = 8, BN = 16](\n"
	     "    x: in T[A, M, N] block (None, BM, BN) index (b, i, j) -> (b, i, j),\n"
	     "    y: out T[A, M, N] block (None, BM, BN) index (b, i, j) -> (b, i, j),\n"
	     ") grid (A, cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    y[...] = x[...] * 2.0 + program_id(0).astype(T);\n"
	     "}\n",
	     A3('i', DT_T, 3, 21, 37), A3('o', DT_T, 3, 21, 37)),

	CASE("broadcast_row_col", true,
	     "kernel broadcast_row_col[T = f32, BR = 8, BC = 16](\n"
	     "    x: in T[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    r: in T[R] block (BR) index (i, j) -> (i),\n"
	     "    c: in T[C] block (BC) index (i, j) -> (j),\n"
	     "    y: out T[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    y[...] = x[...] * expand_dims(r[...], 1) + expand_dims(c[...], 0) - 1.5;\n"
	     "}\n",
	     A2('i', DT_T, 29, 45), A1('i', DT_T, 29), A1('i', DT_T, 45), A2('o', DT_T, 29, 45)),

	CASE("transpose_T_and_fn", true,
	     "kernel transpose_T_and_fn[T = f32, BM = 16, BN = 8](\n"
	     "    x: in T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    y: out T[N, M] block (BN, BM) index (i, j) -> (j, i),\n"
	     "    z: out T[N, M] block (BN, BM) index (i, j) -> (j, i),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    y[...] = x[...].T;\n"
	     "    z[...] = transpose(x[...] * 2.0);\n"
	     "}\n",
	     A2('i', DT_T, 37, 21), A2('o', DT_T, 21, 37), A2('o', DT_T, 21, 37)),

	/* ---- reductions */
	CASE("reduce_axis1", true,
	     "kernel reduce_axis1[T = f32, BR = 4](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: out T[R] block (BR) index (i) -> (i),\n"
	     "    hi: out T[R] block (BR) index (i) -> (i),\n"
	     "    lo: out T[R] block (BR) index (i) -> (i),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = sum(v, axis = 1);\n"
	     "    hi[...] = max(v, axis = 1);\n"
	     "    lo[...] = min(v, axis = 1);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('o', DT_T, 13), A1('o', DT_T, 13), A1('o', DT_T, 13)),

	CASE("reduce_axis0", true,
	     "kernel reduce_axis0[T = f32, BC = 16](\n"
	     "    x: in T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    s: out T[C] block (BC) index (j) -> (j),\n"
	     "    hi: out T[C] block (BC) index (j) -> (j),\n"
	     "    lo: out T[C] block (BC) index (j) -> (j),\n"
	     ") grid (cdiv(C, BC)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = sum(v, axis = 0);\n"
	     "    hi[...] = max(v, axis = 0);\n"
	     "    lo[...] = min(v, axis = 0);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('o', DT_T, 77), A1('o', DT_T, 77), A1('o', DT_T, 77)),

	/* no grid: one program, whole-array block, scalar stores */
	CASE("reduce_all_scalar_store", true,
	     "kernel reduce_all_scalar_store[T = f32](\n"
	     "    x: in T[R, C],\n"
	     "    o: out f32[3],\n"
	     ") {\n"
	     "    let v = x[...].astype(f32);\n"
	     "    o[0] = sum(v);\n"
	     "    o[1] = max(v);\n"
	     "    o[2] = min(x[...]).astype(f32);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('o', BLK_F32, 3)),

	CASE("reduce_i32", false,
	     "kernel reduce_i32[BR = 4](\n"
	     "    x: in i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: out i32[R] block (BR) index (i) -> (i),\n"
	     "    hi: out i32[R] block (BR) index (i) -> (i),\n"
	     "    lo: out i32[R] block (BR) index (i) -> (i),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = sum(v, axis = 1);\n"
	     "    hi[...] = max(v, axis = 1);\n"
	     "    lo[...] = min(v, axis = 1);\n"
	     "}\n",
	     A2('i', BLK_I32, 13, 77), A1('o', BLK_I32, 13), A1('o', BLK_I32, 13),
	     A1('o', BLK_I32, 13)),

	/* kernel-fuzz seed 1125: a keepdims reduction over a dim of extent 1
	 * broadcast back (the tile pass chose a layout the verifier refused) */
	CASE("keepdims_extent1", true,
	     "kernel keepdims_extent1[T = f32, BN = 16](\n"
	     "    x: in T[M, N] block (1, BN) index (i, j) -> (i, j),\n"
	     "    y: out T[M, N] block (1, BN) index (i, j) -> (i, j),\n"
	     ") grid (M, cdiv(N, BN)) {\n"
	     "    let a = x[...].astype(f32);\n"
	     "    y[...] = (a + min(a, axis = 0, keepdims = true)\n"
	     "        + max(a, axis = 1, keepdims = true)).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 3, 40), A2('o', DT_T, 3, 40)),

	/* an out stored twice in two layouts (bf16-derived, then i32), the second
	 * under `when`: the stores were unordered between threads (kernel-fuzz
	 * --gpu, seeds 1795453677 and 1795454024) */
	CASE("store_twice", false,
	     "kernel store_twice[B0 = 16, B1 = 32, num_warps = 8](\n"
	     "    x: in bf16[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     "    n: in i32[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     "    q: out i32[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, B0), cdiv(N, B1)) {\n"
	     "    q[...] = (x[...].astype(f32) * 8.0).astype(i32);\n"
	     "    when program_id(0) % 2 == 1 {\n"
	     "        q[...] = n[...];\n"
	     "    }\n"
	     "}\n",
	     A2('i', BLK_BF16, 34, 35), A2('i', BLK_I32, 34, 35), A2('o', BLK_I32, 34, 35)),

	/* rank 4: keepdims reductions broadcast back (wrote past an int[4]) */
	CASE("keepdims_rank4", false,
	     "kernel keepdims_rank4(\n"
	     "    x: in f32[A, B, C, D] block (2, 2, 2, 4) index (i) -> (i, 0, 0, 0),\n"
	     "    y: out f32[A, B, C, D] block (2, 2, 2, 4) index (i) -> (i, 0, 0, 0),\n"
	     ") grid (cdiv(A, 2)) {\n"
	     "    let v = x[...];\n"
	     "    let e = expand_dims(sum(v, axis = 3), 3);\n"
	     "    y[...] = v - max(v, axis = 0, keepdims = true) + e\n"
	     "        + min(v, axis = 1, keepdims = true) + sum(v, axis = 2, keepdims = true);\n"
	     "}\n",
	     A4('i', BLK_F32, 3, 2, 2, 4), A4('o', BLK_F32, 3, 2, 2, 4)),

	CASE("keepdims_broadcast", true,
	     "kernel keepdims_broadcast[T = f32, BR = 8](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    y: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...].astype(f32);\n"
	     "    let m = max(v, axis = 1, keepdims = true);\n"
	     "    let c = sum(v, axis = 0, keepdims = true);\n"
	     "    y[...] = (v - m + c * 0.125).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 21, 45), A2('o', DT_T, 21, 45)),

	/* the block is wider than the array: lanes past C read -inf */
	CASE("masked_rowmax_other_inf", true,
	     "kernel masked_rowmax_other_inf[T = f32, BR = 4, BC = 32](\n"
	     "    x: in T[R, C] block (BR, BC) index (i) -> (i, 0),\n"
	     "    y: out T[R] block (BR) index (i) -> (i),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    y[...] = max(load(x.at[...], other = -inf), axis = 1);\n"
	     "}\n",
	     A2('i', DT_T, 13, 21), A1('o', DT_T, 13)),

	/* ---- astype between every pair */
	ASTYPE_FROM("astype_from_f32", f32, " * 10.0", f16, bf16, i32, bool),
	ASTYPE_FROM("astype_from_f16", f16, " * 10.0", f32, bf16, i32, bool),
	ASTYPE_FROM("astype_from_bf16", bf16, " * 10.0", f32, f16, i32, bool),
	ASTYPE_FROM("astype_from_i32", i32, " * 1001", f32, f16, bf16, bool),
	ASTYPE_FROM("astype_from_bool", bool, "", f32, f16, bf16, i32),
	/* 8-bit integers: floats saturate (x * 200 spans -200 .. 200), i32 wraps */
	ASTYPE_FROM("astype_f32_to_8bit", f32, " * 200.0", i8, u8, i32, bool),
	ASTYPE_FROM("astype_bf16_to_8bit", bf16, " * 200.0", i8, u8, f32, f16),
	ASTYPE_FROM("astype_i32_to_8bit", i32, " * 37", i8, u8, f32, bool),
	ASTYPE_FROM("astype_bool_to_8bit", bool, "", i8, u8, f32, i32),
	/* u32: full 32-bit random values (the top bit set in half) */
	ASTYPE_FROM("astype_from_u32", u32, "", f32, f16, i32, bool),
	ASTYPE_FROM("astype_u32_to_8bit", u32, "", i8, u8, bf16, f32),
	ASTYPE_FROM("astype_f32_to_u32", f32, " * 5.0e9", u32, i32, u8, f16),
	ASTYPE_FROM("astype_i32_to_u32", i32, " * 268435456", u32, f32, u8, bool),
	ASTYPE_FROM("astype_from_i8", i8, "", f32, bf16, i32, u8),
	ASTYPE_FROM("astype_from_u8", u8, "", f16, i8, i32, bool),

	/* i8/u8 arithmetic: in i32, wrapped to 8 bits after each op (inputs
	 * cover every byte) */
	CASE("int8_arith", false,
	     "kernel int8_arith(\n"
	     "    x: in i8[N] block (64) index (i) -> (i),\n"
	     "    u: in u8[N] block (64) index (i) -> (i),\n"
	     "    y: out i8[N] block (64) index (i) -> (i),\n"
	     "    z: out u8[N] block (64) index (i) -> (i),\n"
	     "    f: out f32[N] block (64) index (i) -> (i),\n"
	     "    b: out bool[N] block (64) index (i) -> (i),\n"
	     ") grid (cdiv(N, 64)) {\n"
	     "    let a = x[...];\n"
	     "    let w = u[...];\n"
	     "    y[...] = a * 3 + 100 - abs(a) + (-a) + min(a, 5) + (a % 7) + (a >> 2) + (~a & 12);\n"
	     "    z[...] = (w >> 1) + w.astype(i8).astype(u8) - (a.astype(f32) * 2.5).astype(u8) + (w << 3) + max(w, 200) + w ~/ 3;\n"
	     "    f[...] = a.astype(f32) + w.astype(f32) + (a ~/ 7).astype(f32) + where(a > 0, a, -a).astype(f32);\n"
	     "    b[...] = (a < -100) | (w >= 250) | (a.astype(u8) == w);\n"
	     "}\n",
	     A1('i', BLK_I8, 1000), A1('i', BLK_U8, 1000), A1('o', BLK_I8, 1000), A1('o', BLK_U8, 1000),
	     A1('o', BLK_F32, 1000), A1('o', BLK_BOOL, 1000)),
	/* u32: logical >>, unsigned ~/ % (by 0: 0), order, max/min/clamp,
	 * literals as 32 bits, conversions of the unsigned value */
	CASE("u32_arith", false,
	     "kernel u32_arith(\n"
	     "    x: in u32[N] block (64) index (i) -> (i),\n"
	     "    y: in u32[N] block (64) index (i) -> (i),\n"
	     "    a: out u32[N] block (64) index (i) -> (i),\n"
	     "    b: out u32[N] block (64) index (i) -> (i),\n"
	     "    c: out u32[N] block (64) index (i) -> (i),\n"
	     "    d: out bool[N] block (64) index (i) -> (i),\n"
	     "    f: out f32[N] block (64) index (i) -> (i),\n"
	     ") grid (cdiv(N, 64)) {\n"
	     "    let u = x[...];\n"
	     "    let v = y[...];\n"
	     "    a[...] = (u >> (v & 31)) + (u >> 40) + (u << (v & 7)) + (u ^ 0xDEADBEEF) - (u | 7) * 3 + ~u;\n"
	     "    b[...] = u ~/ (v >> 20) + u % (v >> 24) + u ~/ 0 + max(u, v) - min(u, 0x80000000) + abs(u) + -u;\n"
	     "    c[...] = where(u > v, u, v) + clamp(u, 0x10000000, 0xF0000000) + (v >> (v & 63));\n"
	     "    d[...] = (u < v) | ((u >= 0x80000000) & (v <= 0x7FFFFFFF));\n"
	     "    f[...] = u.astype(f32) - v.astype(f32) + (u ~/ (v | 1)).astype(f32);\n"
	     "}\n",
	     A1('i', BLK_U32, 1000), A1('i', BLK_U32, 1000), A1('o', BLK_U32, 1000), A1('o', BLK_U32, 1000),
	     A1('o', BLK_U32, 1000), A1('o', BLK_BOOL, 1000), A1('o', BLK_F32, 1000)),
	/* u32 reductions, argmax and scans in unsigned order, columns ragged
	 * (50 in a block of 64: the padding holds the identity) */
	CASE("u32_reduce_scan", false,
	     "kernel u32_reduce_scan[BC = 64](\n"
	     "    x: in u32[R, C] block (8, BC) index (i) -> (i, 0),\n"
	     "    m: out u32[R] block (8) index (i) -> (i),\n"
	     "    n: out u32[R] block (8) index (i) -> (i),\n"
	     "    s: out u32[R] block (8) index (i) -> (i),\n"
	     "    a: out i32[R] block (8) index (i) -> (i),\n"
	     "    c: out u32[R, C] block (8, BC) index (i) -> (i, 0),\n"
	     "    d: out u32[R, C] block (8, BC) index (i) -> (i, 0),\n"
	     "    t: out u32[C] block (BC) index (i) -> (0),\n"
	     ") grid (cdiv(R, 8)) {\n"
	     "    let v = x[...];\n"
	     "    m[...] = max(v, axis = 1);\n"
	     "    n[...] = min(v, axis = 1);\n"
	     "    s[...] = sum(v, axis = 1);\n"
	     "    a[...] = argmin(v, axis = 1) + argmax(v, axis = 1) * 100;\n"
	     "    c[...] = cummax(v, axis = 1);\n"
	     "    d[...] = cummin(v, axis = 1, reverse = true);\n"
	     "    when (program_id(0) == 0) {\n"
	     "        t[...] = max(v, axis = 0);\n"
	     "    }\n"
	     "}\n",
	     A2('i', BLK_U32, 37, 50), A1('o', BLK_U32, 37), A1('o', BLK_U32, 37), A1('o', BLK_U32, 37),
	     A1('o', BLK_I32, 37), A2('o', BLK_U32, 37, 50), A2('o', BLK_U32, 37, 50), A1('o', BLK_U32, 50)),
	/* reductions, scans, argmax, transpose on i8/u8, rows ragged */
	CASE("int8_reduce_scan", false,
	     "kernel int8_reduce_scan[BC = 64](\n"
	     "    x: in i8[R, C] block (8, BC) index (i) -> (i, 0),\n"
	     "    u: in u8[R, C] block (8, BC) index (i) -> (i, 0),\n"
	     "    s: out i8[R] block (8) index (i) -> (i),\n"
	     "    m: out u8[R] block (8) index (i) -> (i),\n"
	     "    c: out i8[R, C] block (8, BC) index (i) -> (i, 0),\n"
	     "    a: out i32[R] block (8) index (i) -> (i),\n"
	     "    t: out u8[C, R] block (BC, 8) index (i) -> (0, i),\n"
	     ") grid (cdiv(R, 8)) {\n"
	     "    let v = x[...];\n"
	     "    let w = u[...];\n"
	     "    s[...] = v.sum(axis = 1);\n"
	     "    m[...] = max(w, axis = 1) - min(w, axis = 1);\n"
	     "    c[...] = cumsum(v, axis = 1) ^ (w.astype(i8) << 3) + cummax(v, axis = 0, reverse = true);\n"
	     "    a[...] = argmax(w, axis = 1) + v.astype(i32).sum(axis = 1) + argmin(v, axis = 1);\n"
	     "    t[...] = w.T;\n"
	     "}\n",
	     A2('i', BLK_I8, 13, 64), A2('i', BLK_U8, 13, 64), A1('o', BLK_I8, 13), A1('o', BLK_U8, 13),
	     A2('o', BLK_I8, 13, 64), A1('o', BLK_I32, 13), A2('o', BLK_U8, 64, 13)),
	/* W8A16: i8 weights with per-column scales, converted where they feed
	 * the dot (the first thing a quantized linear layer does) */
	CASE("int8_dequant_matmul", true,
	     "kernel int8_dequant_matmul[T = f32, BM = 32, BN = 32, BK = 32](\n"
	     "    x: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    w: in i8[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    s: in f32[N] block (BN) index (i, j) -> (j),\n"
	     "    y: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[:, ds(k * BK, BK)], w[ds(k * BK, BK), :].astype(T))\n"
	     "    };\n"
	     "    y[...] = (acc * s[...][None, :] * 0.01).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 70, 100), A2('i', BLK_I8, 100, 45), A1('i', BLK_F32, 45), A2('o', DT_T, 70, 45)),
	/* dot of 8-bit tiles: exact in i32, accumulated over a loop (i8, B
	 * stored [N, K] and used transposed) and in one dot of all K (u8:
	 * products up to 65025, sums past 2^16; the SIMT path's k loop) */
	CASE("int8_dot", false,
	     "kernel int8_dot[BM = 32, BN = 32, BK = 32](\n"
	     "    a: in i8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in i8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    u: in u8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    v: in u8[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    d[...] = u[...] @ v[...] - dot(u[:, :8], v[:8, :]);\n"
	     "}\n",
	     A2('i', BLK_I8, 70, 100), A2('i', BLK_I8, 45, 100), A2('i', BLK_U8, 70, 100),
	     A2('i', BLK_U8, 100, 45), A2('o', BLK_I32, 70, 45), A2('o', BLK_I32, 70, 45)),
	/* exact f32 dots on cp.async slabs (lower/passes/pipeline.c) in every orientation,
	 * ragged M, N, K, 3 stages: x.T @ y (A's slab lies k-major, copied as
	 * it lies), x @ w.T (both copied transposed, 4 bytes an element),
	 * x.T @ w.T (B alone transposed) */
	CASE("f32_simt_orient", false,
	     "kernel f32_simt_orient[BM = 64, BN = 64, BK = 16, num_warps = 4, num_stages = 3](\n"
	     "    at: in f32[K, M] block (K, BM) index (i, j) -> (0, i),\n"
	     "    y: in f32[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    x: in f32[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    w: in f32[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    e: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(at[ds(k * BK, BK), :].T, y[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    d[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[:, ds(k * BK, BK)], w[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    e[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(at[ds(k * BK, BK), :].T, w[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_F32, 77, 70), A2('i', BLK_F32, 77, 45), A2('i', BLK_F32, 70, 77), A2('i', BLK_F32, 45, 77),
	     A2('o', BLK_F32, 70, 45), A2('o', BLK_F32, 70, 45), A2('o', BLK_F32, 70, 45)),
	/* an f32 slab of 80 k steps on cp.async slots, 8x8 micro-tiles (2
	 * warps): more FMAs than emit_dot.c unrolls, so its k loop, the next
	 * copies before it; K = 200 ragged */
	CASE("f32_simt_long_k", false,
	     "kernel f32_simt_long_k[BM = 64, BN = 64, BK = 80, num_warps = 2, num_stages = 2](\n"
	     "    x: in f32[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    y: in f32[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[:, ds(k * BK, BK)], y[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_F32, 70, 200), A2('i', BLK_F32, 200, 45), A2('o', BLK_F32, 70, 45)),
	/* 8x16 micro-tiles keep one program an SM, so the slots may take
	 * most of its shared memory (SIMT_SMEM_ONE): 150 KB of 3 stages at
	 * BK 32, rotated; x @ w.T beside x @ y; ragged M, N, K */
	CASE("f32_simt_one_cta", false,
	     "kernel f32_simt_one_cta[BM = 128, BN = 256, BK = 32, num_warps = 8, num_stages = 3](\n"
	     "    x: in f32[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    y: in f32[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    w: in f32[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[:, ds(k * BK, BK)], y[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    d[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[:, ds(k * BK, BK)], w[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_F32, 300, 200), A2('i', BLK_F32, 200, 520), A2('i', BLK_F32, 520, 200),
	     A2('o', BLK_F32, 300, 520), A2('o', BLK_F32, 300, 520)),
	/* an exact f32 dot beside a bf16 one in one loop: the bf16 slabs go
	 * by cp.async, the f32 ones stay with dot_stage.c (blk_pipe_choose) */
	CASE("f32_beside_bf16", false,
	     "kernel f32_beside_bf16[BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 3](\n"
	     "    a: in f32[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in f32[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    p: in bf16[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    q: in bf16[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let (s, t) = fori_loop(0, cdiv(K, BK), (zeros((BM, BN), f32), zeros((BM, BN), f32))) |k, (s, t)| {\n"
	     "        (s + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :]), t + dot(p[:, ds(k * BK, BK)], q[ds(k * BK, BK), :]))\n"
	     "    };\n"
	     "    c[...] = s + t;\n"
	     "}\n",
	     A2('i', BLK_F32, 200, 100), A2('i', BLK_F32, 100, 130), A2('i', BLK_BF16, 200, 100),
	     A2('i', BLK_BF16, 100, 130), A2('o', BLK_F32, 200, 130)),
	/* the 8x8 register micro-tiles of 256 threads, ragged edges */
	CASE("int8_dot_big", false,
	     "kernel int8_dot_big[BM = 128, BN = 128, BK = 16, num_warps = 8](\n"
	     "    a: in i8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in i8[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_I8, 300, 200), A2('i', BLK_I8, 200, 260), A2('o', BLK_I32, 300, 260)),
	/* 8-bit dots on wgmma (sm_90a; the SIMT path elsewhere): x @ w.T
	 * pipelined, i8 and u8, over two consumer warpgroups -- by TMA where
	 * rows are 16-byte multiples (K = 320, the last slab half past the
	 * array, zero-filled) */
	CASE("int8_wgmma_nt", false,
	     "kernel int8_wgmma_nt[BM = 128, BN = 128, BK = 128, num_warps = 8, num_stages = 3](\n"
	     "    a: in i8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in i8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    u: in u8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    v: in u8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    c: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    d[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + u[:, ds(k * BK, BK)] @ v[:, ds(k * BK, BK)].T\n"
	     "    } - 7;\n"
	     "}\n",
	     A2('i', BLK_I8, 300, 320), A2('i', BLK_I8, 200, 320), A2('i', BLK_U8, 300, 320),
	     A2('i', BLK_U8, 200, 320), A2('o', BLK_I32, 300, 200), A2('o', BLK_I32, 300, 200)),
	/* rows of 102 and 77 bytes (no TMA: cp.async of 2- and 1-byte
	 * pieces), one warpgroup, a run-time loop start, a scaled f32
	 * epilogue (W8A8) */
	CASE("int8_wgmma_odd", false,
	     "kernel int8_wgmma_odd[BM = 64, BN = 64, BK = 64, num_stages = 2](\n"
	     "    a: in i8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in i8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    s: in f32[N] block (BN) index (i, j) -> (j),\n"
	     "    e: in u8[M, J] block (BM, J) index (i, j) -> (i, 0),\n"
	     "    f: in u8[N, J] block (BN, J) index (i, j) -> (j, 0),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = fori_loop(program_id(0) % 2, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    c[...] = acc.astype(f32) * s[...][None, :] * 0.5;\n"
	     "    d[...] = fori_loop(0, cdiv(J, 32), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + e[:, ds(k * 32, 32)] @ f[:, ds(k * 32, 32)].T\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_I8, 150, 102), A2('i', BLK_I8, 70, 102), A1('i', BLK_F32, 70), A2('i', BLK_U8, 150, 77),
	     A2('i', BLK_U8, 70, 77), A2('o', BLK_F32, 150, 70), A2('o', BLK_I32, 150, 70)),
	/* 8-bit operands wgmma cannot read as copied (B [K, N] is
	 * n-contiguous; a computed A): staged through registers, B stored
	 * transposed; one dot of all K and a loop */
	CASE("int8_wgmma_staged", false,
	     "kernel int8_wgmma_staged[BM = 64, BN = 64, BK = 32](\n"
	     "    a: in i8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in i8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    u: in u8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    v: in u8[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = dot(a[...] >> 1, b[...].T) + u[...] @ v[...];\n"
	     "    d[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(u[:, ds(k * BK, BK)], v[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_I8, 130, 96), A2('i', BLK_I8, 100, 96), A2('i', BLK_U8, 130, 96),
	     A2('i', BLK_U8, 96, 100), A2('o', BLK_I32, 130, 100), A2('o', BLK_I32, 130, 100)),
	/* 8-bit dots on mma.sync m16n8k32 on every arch (a 32-row block over
	 * 4 warps is no whole m64 block, so never wgmma): i8 x @ w.T exact in
	 * i32, and e4m3 x e5m2 with B [K, N] (n-contiguous: staged transposed,
	 * ldmatrix reads bytes only along k) on sm_89 and up (PTX 8.4; the
	 * SIMT path on sm_80); K ragged (the last slab zero-filled) */
	CASE_TOL("mma8_small", false, 100,
	     "kernel mma8_small[BM = 32, BN = 64, BK = 64](\n"
	     "    a: in i8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in i8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    e: in f8e4m3[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    f: in f8e5m2[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    d[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(e[:, ds(k * BK, BK)], f[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "}\n",
	     A2('i', BLK_I8, 70, 200), A2('i', BLK_I8, 100, 200), A2('i', BLK_F8E4M3, 70, 200),
	     A2('i', BLK_F8E5M2, 200, 100), A2('o', BLK_I32, 70, 100), A2('o', BLK_F32, 70, 100)),
	/* fp8: f32 -> f8e4m3 / f8e5m2 (round to nearest even, saturated,
	 * NaN kept) at every corner, back to f32, bf16 and i32 exactly, and
	 * a constant and a fill of each format (f32 and bf16 outputs hold no
	 * NaN: it is their poison) */
	/* x / c for constants c: emit_divide.c's exact sequence (3, sqrt(128)
	 * folded), a power of two (8), and a divisor past its range (1e-30,
	 * div.rn); bf16 computes in f32 and rounds; compared bit for bit */
	{.name = "div_by_constant", .fill = fill_div, .check = check_div, .tol_mult = -1, .narrays = 6,
	 .src = "kernel div_by_constant[BR = 16, BC = 64](\n"
	        "    x: in f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	        "    a: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	        "    b: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	        "    c: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	        "    d: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	        "    e: out bf16[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	        ") grid (cdiv(R, BR), cdiv(C, BC)) {\n"
	        "    let v = x[...];\n"
	        "    a[...] = v / 3.0;\n"
	        "    b[...] = v / sqrt(128.0);\n"
	        "    c[...] = v / 8.0;\n"
	        "    d[...] = v / 1e-30;\n"
	        "    e[...] = v.astype(bf16) / 7.0;\n"
	        "}\n",
	 .a = {A2('i', BLK_F32, 1000, 64), A2('o', BLK_F32, 1000, 64), A2('o', BLK_F32, 1000, 64),
	       A2('o', BLK_F32, 1000, 64), A2('o', BLK_F32, 1000, 64), A2('o', BLK_BF16, 1000, 64)}},

	FILLED("fp8_convert", false, fill_fp8, check_fp8,
	     "kernel fp8_convert[B = 128](\n"
	     "    x: in f32[N] block (B) index (i) -> (i),\n"
	     "    p: in f8e4m3[N] block (B) index (i) -> (i),\n"
	     "    e: out f8e4m3[N] block (B) index (i) -> (i),\n"
	     "    m: out f8e5m2[N] block (B) index (i) -> (i),\n"
	     "    y: out f32[N] block (B) index (i) -> (i),\n"
	     "    z: out bf16[N] block (B) index (i) -> (i),\n"
	     "    k: out i32[N] block (B) index (i) -> (i),\n"
	     "    c: out f8e5m2[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let q = x[...].astype(f8e4m3);\n"
	     "    e[...] = q;\n"
	     "    m[...] = x[...].astype(f8e5m2);\n"
	     "    let qf = q.astype(f32);\n"
	     "    let zf = x[...].astype(f8e5m2).astype(f32);\n"
	     "    y[...] = where(qf == qf, qf * 2.0, -7.0) + load(p.at[ds(8, B)], other = 300.0).astype(f32);\n"
	     "    z[...] = where(zf == zf, zf, 5.0).astype(bf16);\n"
	     "    k[...] = q.astype(i32) + (x[...] * 1000.0).astype(i32).astype(f8e5m2).astype(i32);\n"
	     "    c[...] = where(x[...] > 0.0, full((B,), 0.3, f8e5m2), x[...].astype(f8e5m2));\n"
	     "}\n",
	     A1('i', BLK_F32, 1000), A1('i', BLK_F8E4M3, 1000), A1('o', BLK_F8E4M3, 1000),
	     A1('o', BLK_F8E5M2, 1000), A1('o', BLK_F32, 1000), A1('o', BLK_BF16, 1000), A1('o', BLK_I32, 1000),
	     A1('o', BLK_F8E5M2, 1000)),
	/* fp8 dots (f32 sums) on wgmma, x @ w.T over two consumer warpgroups:
	 * e4m3 by TMA (rows of 320 bytes, the last slab half past the array),
	 * e5m2 by cp.async of 1-byte pieces (K = 77); wgmma's fp8 sums are
	 * not exact f32 (a wider tolerance) */
	CASE_TOL("fp8_wgmma_nt", false, 100,
	     "kernel fp8_wgmma_nt[BM = 128, BN = 128, BK = 128, num_warps = 8, num_stages = 2](\n"
	     "    a: in f8e4m3[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in f8e4m3[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    u: in f8e5m2[M, J] block (BM, J) index (i, j) -> (i, 0),\n"
	     "    v: in f8e5m2[N, J] block (BN, J) index (i, j) -> (j, 0),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out bf16[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    d[...] = fori_loop(0, cdiv(J, 64), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + u[:, ds(k * 64, 64)] @ v[:, ds(k * 64, 64)].T\n"
	     "    }.astype(bf16);\n"
	     "}\n",
	     A2('i', BLK_F8E4M3, 300, 320), A2('i', BLK_F8E4M3, 200, 320), A2('i', BLK_F8E5M2, 300, 77),
	     A2('i', BLK_F8E5M2, 200, 77), A2('o', BLK_F32, 300, 200), A2('o', BLK_BF16, 300, 200)),
	/* e4m3 x e5m2 (FP8 training's activations x gradients): one dot mixes
	 * the formats -- pipelined, staged through registers (a dot of all K),
	 * and on the SIMT path (16 x 16) */
	CASE_TOL("fp8_mixed", false, 100,
	     "kernel fp8_mixed[BM = 64, BN = 64, BK = 64](\n"
	     "    a: in f8e4m3[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    g: in f8e5m2[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], g[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    d[...] = dot(a[...], g[...].T) + dot(g[...][:16, :], a[...][:16, :].T)[0:1, 0:1];\n"
	     "}\n",
	     A2('i', BLK_F8E4M3, 150, 128), A2('i', BLK_F8E5M2, 70, 128), A2('o', BLK_F32, 150, 70),
	     A2('o', BLK_F32, 150, 70)),
	/* u8 x i8 (asymmetric quantization: unsigned activations, signed
	 * weights), exact: a loop, a dot of all K, a 16 x 16 one -- all on the
	 * SIMT path (wgmma's mixed-integer form needs PTX ISA 8.4) */
	CASE("int8_mixed", false,
	     "kernel int8_mixed[BM = 64, BN = 64, BK = 64](\n"
	     "    a: in u8[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    w: in i8[N, K] block (BN, K) index (i, j) -> (j, 0),\n"
	     "    c: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out i32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), i32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], w[:, ds(k * BK, BK)].T)\n"
	     "    };\n"
	     "    d[...] = dot(w[...][:64, :], a[...].T) + dot(a[...][:16, :], w[...][:16, :].T)[0:1, 0:1];\n"
	     "}\n",
	     A2('i', BLK_U8, 150, 128), A2('i', BLK_I8, 70, 128), A2('o', BLK_I32, 150, 70),
	     A2('o', BLK_I32, 150, 70)),
	/* fp8 dots wgmma cannot read as copied (w [K, N]; a computed A):
	 * staged through registers; and the SIMT path (a tile too small for
	 * wgmma: exact f32 sums) */
	CASE_TOL("fp8_dot_staged", false, 100,
	     "kernel fp8_dot_staged[BM = 64, BN = 64](\n"
	     "    a: in f8e4m3[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    w: in f8e4m3[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    d: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let t = (a[...].astype(f32) * 0.5).astype(f8e4m3);\n"
	     "    c[...] = dot(t, w[...]);\n"
	     "    d[...] = dot(a[:16, :], w[...][:, :16]) [0:1, 0:1] + zeros((BM, BN), f32);\n"
	     "}\n",
	     A2('i', BLK_F8E4M3, 130, 96), A2('i', BLK_F8E4M3, 96, 100), A2('o', BLK_F32, 130, 100),
	     A2('o', BLK_F32, 130, 100)),
	/* batched dots: [H, M, K] x [H, K, N] per program, `dot` and `@`, an
	 * epilogue on the [H, M, N] result; the tensor-core shapes in 16-bit;
	 * an i8 batch (exact i32) */
	CASE("dot_batched", true,
	     "kernel dot_batched[T = f32, H = 3](\n"
	     "    a: in T[N, H, M, K] block (None, H, M, K) index (i) -> (i, 0, 0, 0),\n"
	     "    b: in T[N, H, K, P] block (None, H, K, P) index (i) -> (i, 0, 0, 0),\n"
	     "    c: out f32[N, H, M, P] block (None, H, M, P) index (i) -> (i, 0, 0, 0),\n"
	     ") grid (N) {\n"
	     "    let s = dot(a[...], b[...]);\n"
	     "    c[...] = s - max(s, axis = 2, keepdims = true) + (a[...] @ b[...]) * 0.5;\n"
	     "}\n",
	     A4('i', DT_T, 2, 3, 64, 32), A4('i', DT_T, 2, 3, 32, 64), A4('o', BLK_F32, 2, 3, 64, 64)),
	/* batched dots with the second operand transposed per batch (heads of
	 * attention in one block: q @ k^T), as swapaxes and as the method
	 * transpose; each batch's B is `k.T`, the 2-D dot's fast form;
	 * ragged S (the K block past the array, masked) */
	CASE("dot_batched_trans", true,
	     "kernel dot_batched_trans[T = f32, H = 2, BQ = 32](\n"
	     "    q: in T[N, H, S, D] block (None, H, BQ, D) index (b, i) -> (b, 0, i, 0),\n"
	     "    k: in T[N, H, S, D] block (None, H, 64, D) index (b, i) -> (b, 0, 0, 0),\n"
	     "    o: out f32[N, H, S, S] block (None, H, BQ, 64) index (b, i) -> (b, 0, i, 0),\n"
	     "    p: out f32[N, H, S, S] block (None, H, BQ, 64) index (b, i) -> (b, 0, i, 0),\n"
	     ") grid (N, cdiv(S, BQ)) {\n"
	     "    o[...] = dot(q[...], swapaxes(k[...], 1, 2));\n"
	     "    p[...] = (q[...] @ k[...].transpose(0, 2, 1)) * 0.5 - 1.0;\n"
	     "}\n",
	     A4('i', DT_T, 3, 2, 40, 32), A4('i', DT_T, 3, 2, 40, 32), A4('o', BLK_F32, 3, 2, 40, 40),
	     A4('o', BLK_F32, 3, 2, 40, 40)),
	/* transposes of any rank: a permutation, swapaxes with negative axes,
	 * the identity (nothing moves), checked against C */
	CHECKED("transpose_perm", false, check_transpose_perm,
	     "kernel transpose_perm(\n"
	     "    x: in f32[A, B, C],\n"
	     "    r: out f32[C, A, B],\n"
	     "    s: out f32[A, C, B],\n"
	     "    t: out f32[A, B, C],\n"
	     ") {\n"
	     "    r[...] = transpose(x[...], (2, 0, 1));\n"
	     "    s[...] = x[...].swapaxes(-1, -2) * 2.0;\n"
	     "    t[...] = x[...].transpose(0, 1, 2) + transpose(x[...], axes = (0, 1, 2));\n"
	     "}\n",
	     A3('i', BLK_F32, 3, 5, 7), A3('o', BLK_F32, 7, 3, 5), A3('o', BLK_F32, 3, 7, 5),
	     A3('o', BLK_F32, 3, 5, 7)),
	/* flip: one axis, every axis, and after a permutation; blocks ragged
	 * at the edges (the zeros a masked load reads come first), checked
	 * against C */
	CHECKED("flip_tiles", false, check_flip,
	     "kernel flip_tiles[BR = 4, BC = 8](\n"
	     "    x: in f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    a: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    b: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    c: out f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    a[...] = flip(x[...], axis = 1);\n"
	     "    b[...] = flip(x[...]);\n"
	     "    c[...] = flip(flip(x[...], -2), axis = 0) + x[...];\n"
	     "}\n",
	     A2('i', BLK_F32, 10, 19), A2('o', BLK_F32, 10, 19), A2('o', BLK_F32, 10, 19),
	     A2('o', BLK_F32, 10, 19)),
	CASE("dot_batched_int8", false,
	     "kernel dot_batched_int8(\n"
	     "    a: in i8[G, M, K],\n"
	     "    b: in i8[G, K, P],\n"
	     "    c: out i32[G, M, P],\n"
	     ") {\n"
	     "    c[...] = a[...] @ b[...] + 1;\n"
	     "}\n",
	     A3('i', BLK_I8, 4, 16, 40), A3('i', BLK_I8, 4, 40, 8), A3('o', BLK_I32, 4, 16, 8)),
	/* u8 rows gathered, a u8 load with a fill, stores at a scatter */
	CASE("int8_gather", false,
	     "kernel int8_gather[B = 16](\n"
	     "    ids: in i32[N] block (B) index (i) -> (i),\n"
	     "    table: in u8[V, D],\n"
	     "    y: out u8[N, D] block (B, D) index (i) -> (i, 0),\n"
	     "    f: out f32[N, D] block (B, D) index (i) -> (i, 0),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let r = table[ids[...], :];\n"
	     "    y[...] = r;\n"
	     "    f[...] = load(table.at[ids[...] + 1, :], other = 255).astype(f32) - r.astype(f32);\n"
	     "}\n",
	     A1('i', BLK_I32, 40), A2('i', BLK_U8, 9, 50), A2('o', BLK_U8, 40, 50), A2('o', BLK_F32, 40, 50)),

	/* float -> int saturates; float -> bool is != 0 */
	CHECKED("astype_saturate_truthy", false, check_saturate,
	     "kernel astype_saturate_truthy[B = 64](\n"
	     "    x: in f32[N] block (B) index (i) -> (i),\n"
	     "    s: out i32[N] block (B) index (i) -> (i),\n"
	     "    t: out bool[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...] * 10.0;\n"
	     "    s[...] = (v * 1e9).astype(i32);\n"
	     "    t[...] = v.astype(i32).astype(f32).astype(bool);\n"
	     "}\n",
	     A1('i', BLK_F32, 333), A1('o', BLK_I32, 333), A1('o', BLK_BOOL, 333)),

	CASE("zeros_full", true,
	     "kernel zeros_full[T = f32, B = 64](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    n: out i32[N] block (B) index (i) -> (i),\n"
	     "    t: out bool[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    y[...] = x[...] + full((B,), 2.5, T) + zeros((B,), T);\n"
	     "    n[...] = full((B,), -3, i32) + zeros((B,), i32) + iota(B);\n"
	     "    t[...] = full((B,), true, bool) && x[...] > 0.0;\n"
	     "}\n",
	     A1('i', DT_T, 333), A1('o', DT_T, 333), A1('o', BLK_I32, 333), A1('o', BLK_BOOL, 333)),

	/* ---- control flow */
	CASE("fori_three_carries", true,
	     "kernel fori_three_carries[T = f32, B = 64](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    n: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...].astype(f32);\n"
	     "    let (s, p, c) = fori_loop(0, 5, (zeros((B,), f32), full((B,), 1.0, f32), 0)) |k, (s, p, c)| {\n"
	     "        (s + v * k.astype(f32), p * 0.5 + v, c + k)\n"
	     "    };\n"
	     "    y[...] = (s + p).astype(T);\n"
	     "    n[...] = iota(B) + c;\n"
	     "}\n",
	     A1('i', DT_T, 333), A1('o', DT_T, 333), A1('o', BLK_I32, 333)),

	/* no carry; a column store with a dynamic scalar index per iteration */
	CASE("fori_no_carry_column_store", true,
	     "kernel fori_no_carry_column_store[T = f32, BR = 8](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    y: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    fori_loop(0, C) |j| {\n"
	     "        y[:, j] = x[:, j] * 2.0 + j.astype(T);\n"
	     "    };\n"
	     "}\n",
	     A2('i', DT_T, 21, 13), A2('o', DT_T, 21, 13)),

	CASE("fori_unroll", true,
	     "kernel fori_unroll[T = f32, B = 32](\n"
	     "    x: in T[N, 4] block (B, 4) index (i) -> (i, 0),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let s = fori_loop(0, 4, zeros((B,), f32), unroll = true) |k, acc| {\n"
	     "        acc + x[:, k].astype(f32) * (k + 1).astype(f32)\n"
	     "    };\n"
	     "    y[...] = s.astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 101, 4), A1('o', DT_T, 101)),

	/* a loop over a size; the last ds slice runs past C */
	CASE("fori_ds_slices", true,
	     "kernel fori_ds_slices[T = f32, BR = 4](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    y: out T[R] block (BR) index (i) -> (i),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let acc = fori_loop(0, cdiv(C, 8), zeros((BR, 8), f32)) |k, acc| {\n"
	     "        acc + x[:, ds(k * 8, 8)].astype(f32)\n"
	     "    };\n"
	     "    y[...] = sum(acc, axis = 1).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('o', DT_T, 13)),

	CASE("when_else_nested", false,
	     "kernel when_else_nested[B = 32](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    y: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let p = program_id(0);\n"
	     "    when p % 2 == 0 {\n"
	     "        y[...] = x[...] * 2;\n"
	     "    } else {\n"
	     "        when p == num_programs(0) - 1 { y[...] = x[...] - 100; } else { y[...] = -x[...]; }\n"
	     "    }\n"
	     "}\n",
	     A1('i', BLK_I32, 200), A1('o', BLK_I32, 200)),

	/* ---- scratch */
	CASE("seq_axis_scratch", true,
	     "kernel seq_axis_scratch[T = f32, BR = 8, BC = 16](\n"
	     "    x: in T[R, C] block (BR, BC) index (i, k) -> (i, k),\n"
	     "    y: out T[R] block (BR) index (i, k) -> (i),\n"
	     "    acc: scratch f32[BR],\n"
	     ") grid (cdiv(R, BR), seq cdiv(C, BC)) {\n"
	     "    when program_id(1) == 0 { acc[...] = zeros((BR,), f32); }\n"
	     "    acc[...] = acc[...] + sum(x[...].astype(f32), axis = 1);\n"
	     "    when program_id(1) == num_programs(1) - 1 { y[...] = acc[...].astype(T); }\n"
	     "}\n",
	     A2('i', DT_T, 21, 77), A1('o', DT_T, 21)),

	/* scoped scratch, read back shifted by one (another thread's element) */
	CASE("scoped_scratch", true,
	     "kernel scoped_scratch[T = f32, B = 64](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    z: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    scoped (t: f32[B], u: i32[B]) {\n"
	     "        t[...] = x[...].astype(f32) * 2.0;\n"
	     "        u[...] = iota(B) % 5;\n"
	     "        y[...] = (t[...] + u[...].astype(f32)).astype(T);\n"
	     "        z.at[ds(0, B - 1)][...] = t[ds(1, B - 1)].astype(T);\n"
	     "        z[B - 1] = 0.0;\n"
	     "    }\n"
	     "}\n",
	     A1('i', DT_T, 333), A1('o', DT_T, 333), A1('o', DT_T, 333)),

	/* two scoped regions in sequence: smem-plan gives the second the first
	 * one's bytes (behind a barrier); each reads another thread's element */
	CASE("scoped_reuse", true,
	     "kernel scoped_reuse[T = f32, B = 64](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    s: scratch f32[B],\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    s[...] = x[...].astype(f32);\n"
	     "    scoped (t: f32[B]) {\n"
	     "        t[...] = s[...] * 2.0;\n"
	     "        s.at[ds(0, B - 1)][...] = t[ds(1, B - 1)];\n"
	     "    }\n"
	     "    scoped (u: f32[B], w: i32[B]) {\n"
	     "        u[...] = s[...] + 1.0;\n"
	     "        w[...] = iota(B) % 3;\n"
	     "        y.at[ds(1, B - 1)][...] = (u[ds(0, B - 1)] + w[ds(0, B - 1)].astype(f32)).astype(T);\n"
	     "        y[0] = 0.0;\n"
	     "    }\n"
	     "}\n",
	     A1('i', DT_T, 333), A1('o', DT_T, 333)),

	CASE("inout_axpy", true,
	     "kernel inout_axpy[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: inout T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    y[...] = x[...] * 2.0 + y[...];\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('x', DT_T, 1001)),

	/* A program reads its block and writes it back transposed: threads
	 * store elements other threads load, so the backend must order them. */
	CASE("inout_transpose_in_place", true,
	     "kernel inout_transpose_in_place[T = f32, B = 32](\n"
	     "    y: inout T[N, N] block (B, B) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(N, B), cdiv(N, B)) {\n"
	     "    y[...] = y[...].T + 1.0;\n"
	     "}\n",
	     A2('x', DT_T, 50, 50)),

	/* ---- views, slices, fills */
	CASE("ds_odd_offsets_load_other", true,
	     "kernel ds_odd_offsets_load_other[T = f32, B = 64](\n"
	     "    x: in T[N],\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let s = program_id(0) * B;\n"
	     "    y[...] = x[ds(s + 3, B)] - load(x.at[ds(s + 5, B)], other = 7.0);\n"
	     "}\n",
	     A1('i', DT_T, 333), A1('o', DT_T, 333)),

	/* reads past the block (not just the array) take the fill */
	CHECKED("load_other_past_block", true, check_other,
	     "kernel load_other_past_block[T = f32, B = 64](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    y[...] = load(x.at[ds(1, B)], other = -2.0) + load(x.at[...], other = 5.0);\n"
	     "}\n",
	     A1('i', DT_T, 333), A1('o', DT_T, 333)),

	CASE("at_views_2d", true,
	     "kernel at_views_2d[T = f32, BR = 8](\n"
	     "    x: in T[R, C],\n"
	     "    y: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let r0 = program_id(0) * BR;\n"
	     "    y.at[:, ds(0, 3)][...] = x.at[ds(r0, BR), :][:, ds(2, 3)];\n"
	     "    y.at[:, ds(3, C - 3)][...] = load(x.at[ds(r0 + 1, BR), ds(3, C - 3)], other = 9.0);\n"
	     "}\n",
	     A2('i', DT_T, 21, 13), A2('o', DT_T, 21, 13)),

	/* later stores overwrite earlier ones in program order */
	CASE("store_overwrite", true,
	     "kernel store_overwrite[T = f32, BR = 8](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    y: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    y[...] = x[...];\n"
	     "    y[0, :] = 1.5;\n"
	     "    y[:, 0] = x[:, 1];\n"
	     "}\n",
	     A2('i', DT_T, 21, 13), A2('o', DT_T, 21, 13)),

	/* ---- atomics */
	/* column sums by 4 racing programs: each order rounds differently (bf16
	 * was seen at 1.25e-2 of its 2e-2 default on an H200): twice the tol */
	CASE_TOL("atomic_add_colsum", true, 2,
	     "kernel atomic_add_colsum[T = f32, BR = 16](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: inout T[C],\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    atomic_add(s.at[ds(0, C)], sum(x[...], axis = 0));\n"
	     "}\n",
	     A2('i', DT_T, 61, 45), A1('x', DT_T, 45)),

	/* one program: no ordering between atomics, so the sums must match
	 * the interpreter's exactly (tests the atomic's arithmetic per dtype) */
	CASE("atomic_add_one_program", true,
	     "kernel atomic_add_one_program[T = f32, BR = 16](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: inout T[C],\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    atomic_add(s.at[ds(0, C)], sum(x[...], axis = 0));\n"
	     "}\n",
	     A2('i', DT_T, 13, 45), A1('x', DT_T, 45)),

	CHECKED("atomic_add_histogram", false, check_histogram,
	     "kernel atomic_add_histogram[B = 16](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    h: inout i32[17],\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    fori_loop(0, B) |e| {\n"
	     "        atomic_add(h.at[x[e] + 8], 1);\n"
	     "    };\n"
	     "}\n",
	     A1('i', BLK_I32, 101), A1('x', BLK_I32, 17)),

	/* racing column maxima and minima: max and min under a total order end
	 * the same in any order, so exactly the interpreter's */
	CHECKED("atomic_max_min_f32", false, check_colmaxmin,
	     "kernel atomic_max_min_f32[BR = 16](\n"
	     "    x: in f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    hi: inout f32[C],\n"
	     "    lo: inout f32[C],\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    atomic_max(hi.at[ds(0, C)], max(load(x, other = -inf), axis = 0));\n"
	     "    atomic_min(lo, min(load(x, other = inf), axis = 0));\n"
	     "}\n",
	     A2('i', BLK_F32, 61, 45), A1('x', BLK_F32, 45), A1('x', BLK_F32, 45)),

	/* -0 and +0, NaN: the order of docs/language.md; s is stored, updated
	 * atomically, then read back (barriers between) */
	CHECKED("atomic_signed_zero_nan", false, check_signed_zero,
	     "kernel atomic_signed_zero_nan(\n"
	     "    s: inout f32[4],\n"
	     "    y: out f32[4],\n"
	     ") {\n"
	     "    s[...] = zeros((4,), f32);\n"
	     "    atomic_min(s.at[0], -0.0);\n"
	     "    atomic_max(s.at[1], -0.0);\n"
	     "    atomic_max(s.at[2], nan);\n"
	     "    atomic_min(s.at[2], 1.0);\n"
	     "    atomic_min(s.at[3], nan);\n"
	     "    y[...] = 1.0 / s[...];\n"
	     "}\n",
	     A1('x', BLK_F32, 4), A1('o', BLK_F32, 4)),

	/* element by element into bins at run-time indices, racing programs */
	CHECKED("atomic_max_min_i32", false, check_binmaxmin,
	     "kernel atomic_max_min_i32[B = 16](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    hi: inout i32[5],\n"
	     "    lo: inout i32[5],\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    fori_loop(0, B) |e| {\n"
	     "        let b = (x[e] + 8) % 5;\n"
	     "        atomic_max(hi.at[b], x[e] * 100 + e);\n"
	     "        atomic_min(lo.at[b], x[e] * 100 + e);\n"
	     "    };\n"
	     "}\n",
	     A1('i', BLK_I32, 101), A1('x', BLK_I32, 5), A1('x', BLK_I32, 5)),

	/* compare-and-swap of a block (a scalar compare value, a tile of new
	 * values) and of one element every program swaps alike */
	CHECKED("atomic_cas_claim", false, check_cas,
	     "kernel atomic_cas_claim[B = 16](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    c: inout i32[N] block (B) index (i) -> (i),\n"
	     "    f: inout i32[2],\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    atomic_cas(c, 3, program_id(0) * 1000 + iota(B));\n"
	     "    atomic_cas(f.at[0], f[0], 7);\n"
	     "    atomic_cas(f.at[1], N - 1, 5);\n"
	     "}\n",
	     A1('i', BLK_I32, 101), A1('x', BLK_I32, 101), A1('x', BLK_I32, 2)),

	/* ---- Python's spellings: a @ b (also accumulating), None as a new
	 * axis of a tile and of a Ref read, reductions as methods */
	CASE("matmul_operator_newaxis", true,
	     "kernel matmul_operator_newaxis[T = f32, BM = 16, BN = 32](\n"
	     "    a: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    r: in T[N] block (BN) index (i, j) -> (j),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = zeros((BM, BN), f32) + a[...] @ b[...];\n"
	     "    c[...] = acc + r[...].astype(f32)[None, :] * iota(BM)[:, None].astype(f32)\n"
	     "        - (a[...] @ b[...]) * 0.5;\n"
	     "}\n",
	     A2('i', DT_T, 37, 13), A2('i', DT_T, 13, 45), A1('i', DT_T, 45), A2('o', BLK_F32, 37, 45)),

	CASE("reduce_methods", true,
	     "kernel reduce_methods[T = f32, BR = 4](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: out T[R] block (BR) index (i) -> (i),\n"
	     "    m: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...].astype(f32);\n"
	     "    s[...] = (v.sum(axis = 1) + v.max(axis = 1) - v.min(axis = -1)).astype(T);\n"
	     "    m[...] = (v - v.max(axis = 1, keepdims = true) + x[:, None, :].astype(f32).sum(axis = 1) * 0.5\n"
	     "        + v.max() - v.T.min(axis = 1)[None, :]).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('o', DT_T, 13), A2('o', DT_T, 13, 77)),

	/* ---- argmax / argmin: rows, columns across warps, NaNs (the first
	 * wins), ties (the first index wins), a rank-1 tile to a scalar */
	CASE("argmax_rows", true,
	     "kernel argmax_rows[T = f32, BR = 4](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    hi: out i32[R] block (BR) index (i) -> (i),\n"
	     "    lo: out i32[R, 1] block (BR, 1) index (i) -> (i, 0),\n"
	     "    n: out i32[R] block (BR) index (i) -> (i),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    hi[...] = argmax(v, axis = 1);\n"
	     "    lo[...] = v.argmin(axis = -1, keepdims = true);\n"
	     "    n[...] = argmax(where(v > 0.8, nan, v.astype(f32)), axis = 1)\n"
	     "        + argmin(where(v < -0.9, nan, v.astype(f32)), axis = 1) * 1000;\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('o', BLK_I32, 13), A2('o', BLK_I32, 13, 1), A1('o', BLK_I32, 13)),

	CASE("argmax_cols", true,
	     "kernel argmax_cols[T = f32, BC = 16](\n"
	     "    x: in T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    hi: out i32[C] block (BC) index (j) -> (j),\n"
	     "    lo: out i32[C] block (BC) index (j) -> (j),\n"
	     "    s: out i32[S] block (1) index (j) -> (j),\n"
	     ") grid (cdiv(C, BC)) {\n"
	     "    let v = x[...];\n"
	     "    hi[...] = argmax(v, axis = 0);\n"
	     "    lo[...] = argmin((v.astype(f32) * 4.0).astype(i32), axis = 0);\n"
	     "    s[0] = argmax(x[:, 0]) + argmin(x[:, 1]);\n"
	     "}\n",
	     A2('i', DT_T, 300, 45), A1('o', BLK_I32, 45), A1('o', BLK_I32, 45), A1('o', BLK_I32, 3)),

	CHECKED("argmax_i32", false, check_argmax_i32,
	     "kernel argmax_i32[BR = 8](\n"
	     "    x: in i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    hi: out i32[R] block (BR) index (i) -> (i),\n"
	     "    lo: out i32[RB, C] block (1, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    hi[...] = argmax(v, axis = 1);\n"
	     "    lo[...] = argmin(v, axis = 0, keepdims = true);\n"
	     "}\n",
	     A2('i', BLK_I32, 13, 77), A1('o', BLK_I32, 13), A2('o', BLK_I32, 2, 77)),

	/* ---- scans: along rows and columns, reversed, across warps and reps,
	 * on a dot's accumulator; the padding of a 77-wide tile is met first by
	 * a reverse scan */
	CASE("scan_rows", true,
	     "kernel scan_rows[T = f32, BR = 4](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    hi: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    lo: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    p: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = cumsum(v, axis = 1);\n"
	     "    hi[...] = cummax(v, 1);\n"
	     "    lo[...] = cummin(v, axis = -1, reverse = true);\n"
	     "    p[...] = (v.astype(f32) * 0.25 + 1.0).cumprod(axis = 1).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A2('o', DT_T, 13, 77), A2('o', DT_T, 13, 77),
	     A2('o', DT_T, 13, 77), A2('o', DT_T, 13, 77)),

	/* 300 rows in one tile: lanes, 4 warps and reps along the axis */
	CASE("scan_cols", true,
	     "kernel scan_cols[T = f32, BC = 16](\n"
	     "    x: in T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    s: out T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    hi: out T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    r: out T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     ") grid (cdiv(C, BC)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = cumsum(v, axis = 0);\n"
	     "    hi[...] = cummax(v, axis = 0, reverse = true);\n"
	     "    r[...] = v.cumsum(axis = 0, reverse = true);\n"
	     "}\n",
	     A2('i', DT_T, 300, 45), A2('o', DT_T, 300, 45), A2('o', DT_T, 300, 45),
	     A2('o', DT_T, 300, 45)),

	/* i32: exact, products wrap; a C reference */
	CHECKED("scan_i32", false, check_scan_i32,
	     "kernel scan_i32[BR = 8](\n"
	     "    x: in i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: out i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    p: out i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    hi: out i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    lo: out i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = cumsum(v, axis = 1);\n"
	     "    p[...] = cumprod(v, axis = 1, reverse = true);\n"
	     "    hi[...] = cummax(v, axis = 0);\n"
	     "    lo[...] = cummin(v, axis = 0, reverse = true);\n"
	     "}\n",
	     A2('i', BLK_I32, 13, 77), A2('o', BLK_I32, 13, 77), A2('o', BLK_I32, 13, 77),
	     A2('o', BLK_I32, 13, 77), A2('o', BLK_I32, 13, 77)),

	/* rank 1, 4096 elements over 8 warps: every thread of the CTA on the axis */
	CASE("scan_wide", true,
	     "kernel scan_wide[T = f32, B = 4096, num_warps = 8](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    s: out f32[N] block (B) index (i) -> (i),\n"
	     "    m: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = cumsum(v.astype(f32)) * 0.01;\n"
	     "    m[...] = v.cumsum(reverse = true);\n"
	     "}\n",
	     A1('i', DT_T, 5000), A1('o', BLK_F32, 5000), A1('o', DT_T, 5000)),

	/* the middle axis of a [B, S, D] block */
	CASE("scan_3d", true,
	     "kernel scan_3d[T = f32, BB = 2](\n"
	     "    x: in T[B, S, D] block (BB, S, D) index (i) -> (i, 0, 0),\n"
	     "    s: out T[B, S, D] block (BB, S, D) index (i) -> (i, 0, 0),\n"
	     "    m: out T[B, S, D] block (BB, S, D) index (i) -> (i, 0, 0),\n"
	     ") grid (cdiv(B, BB)) {\n"
	     "    let v = x[...];\n"
	     "    s[...] = cumsum(v, axis = 1);\n"
	     "    m[...] = cummin(v, axis = 1, reverse = true);\n"
	     "}\n",
	     A3('i', DT_T, 3, 37, 20), A3('o', DT_T, 3, 37, 20), A3('o', DT_T, 3, 37, 20)),

	/* a dot's accumulator scanned (its layout converted to one of runs
	 * where it is not one) */
	CASE("scan_of_dot", true,
	     "kernel scan_of_dot[T = f32, BM = 32, BN = 32](\n"
	     "    a: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    s: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    m: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = a[...] @ b[...];\n"
	     "    s[...] = cumsum(acc, axis = 1);\n"
	     "    m[...] = cummax(acc, axis = 0, reverse = true);\n"
	     "}\n",
	     A2('i', DT_T, 45, 16), A2('i', DT_T, 16, 37), A2('o', BLK_F32, 45, 37),
	     A2('o', BLK_F32, 45, 37)),

	/* ---- helpers (`fn`, inlined) and associative_scan.  A generic scan
	 * runs each line of its axis in one thread, the combine applied in
	 * order, so it is the interpreter's to the bit, associative or not. */
	/* a helper at the case's dtype, a hash helper called three times */
	CASE("fn_helpers", true,
	     "fn softcap(x, c) { c * tanh(x / c) }\n"
	     "fn mix(h) { let a = h ^ (h >> 16); let b = a * 0x45d9f3b; b ^ (b >> 16) }\n"
	     "fn keep(i, seed) { (mix(i + seed) & 0xffff) >= 16384 }\n"
	     "kernel fn_helpers[T = f32, B = 128](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    y: out T[N] block (B) index (i) -> (i),\n"
	     "    m: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let i = program_id(0) * B + iota(B);\n"
	     "    y[...] = where(keep(i, 7), softcap(x[...], 2.0), 0.0);\n"
	     "    m[...] = keep(i, 99).astype(i32) + keep(i, 5).astype(i32);\n"
	     "}\n",
	     A1('i', DT_T, 1001), A1('o', DT_T, 1001), A1('o', BLK_I32, 1001)),

	/* along the rows: a linear recurrence with a captured scalar, a
	 * combine with a `let`, reverse; `a + b` (cumsum's path at f32) */
	CASE("assoc_scan_rows", true,
	     "kernel assoc_scan_rows[T = f32, BR = 4](\n"
	     "    x: in T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    d: in f32[1],\n"
	     "    l: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    r: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    s: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let v = x[...];\n"
	     "    let g = (d[0] * 0.5).astype(T);\n"
	     "    l[...] = associative_scan(|a, b| a * g + b, v, axis = 1);\n"
	     "    r[...] = associative_scan(|a, b| { let t = a * 0.5; t + b * t }, v, axis = 1,\n"
	     "                              reverse = true);\n"
	     "    s[...] = associative_scan(|a, b| a + b, v, axis = 1);\n"
	     "}\n",
	     A2('i', DT_T, 13, 77), A1('i', BLK_F32, 1), A2('o', DT_T, 13, 77), A2('o', DT_T, 13, 77),
	     A2('o', DT_T, 13, 77)),

	/* down the columns of a [37, 16] block, both directions */
	CASE("assoc_scan_cols", true,
	     "kernel assoc_scan_cols[T = f32, BC = 16](\n"
	     "    x: in T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    l: out T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    m: out T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     ") grid (cdiv(C, BC)) {\n"
	     "    let v = x[...];\n"
	     "    l[...] = associative_scan(|a, b| a * 0.75 + b, v, axis = 0, reverse = true);\n"
	     "    m[...] = associative_scan(|a, b| max(a, b) - 0.125, v, 0);\n"
	     "}\n",
	     A2('i', DT_T, 37, 45), A2('o', DT_T, 37, 45), A2('o', DT_T, 37, 45)),

	/* tuples: the running maximum with its index, and a gated recurrence
	 * h = a h + x as pairs ((a, x) then (b, y) gives (a b, b x + y)) */
	CASE("assoc_scan_tuple", false,
	     "fn gate(a0, h0, a1, x1) { (a0 * a1, a1 * h0 + x1) }\n"
	     "kernel assoc_scan_tuple[BR = 8](\n"
	     "    x: in f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    a: in f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    v: out f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    ix: out i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    h: out f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let (bv, bi) = associative_scan(|v0, i0, v1, i1| (where(v1 > v0, v1, v0),\n"
	     "        where(v1 > v0, i1, i0)), (x[...], iota(C)[None, :] + zeros((BR, C), i32)), axis = 1);\n"
	     "    v[...] = bv;\n"
	     "    ix[...] = bi;\n"
	     "    let (_, hs) = associative_scan(gate, (a[...], x[...]), axis = 1);\n"
	     "    h[...] = hs;\n"
	     "}\n",
	     A2('i', BLK_F32, 13, 77), A2('i', BLK_F32, 13, 77), A2('o', BLK_F32, 13, 77),
	     A2('o', BLK_I32, 13, 77), A2('o', BLK_F32, 13, 77)),

	/* integers wrap, bools: a hash chain, a reverse running OR, i8 */
	CASE("assoc_scan_int", false,
	     "kernel assoc_scan_int[B = 128](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    h: out i32[N] block (B) index (i) -> (i),\n"
	     "    o: out bool[N] block (B) index (i) -> (i),\n"
	     "    q: out i8[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...];\n"
	     "    h[...] = associative_scan(|a, b| (a ^ b) * 16777619, v);\n"
	     "    o[...] = associative_scan(|a, b| a | b, v % 37 == 0, reverse = true);\n"
	     "    q[...] = associative_scan(|a, b| a * 3 - b, v.astype(i8));\n"
	     "}\n",
	     A1('i', BLK_I32, 1000), A1('o', BLK_I32, 1000), A1('o', BLK_BOOL, 1000), A1('o', BLK_I8, 1000)),

	/* lines too long for a thread's registers (more than 128 a thread):
	 * through the transit region, a thread a line, still in order */
	CASE("assoc_scan_long", true,
	     "kernel assoc_scan_long[T = f32, B = 2048](\n"
	     "    x: in T[N] block (B) index (i) -> (i),\n"
	     "    l: out T[N] block (B) index (i) -> (i),\n"
	     "    r: out T[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = x[...];\n"
	     "    l[...] = associative_scan(|a, b| a * 0.99 + b, v);\n"
	     "    r[...] = associative_scan(|a, b| max(a, b) * 0.5 + min(a, b) * 0.25, v, reverse = true);\n"
	     "}\n",
	     A1('i', DT_T, 5000), A1('o', DT_T, 5000), A1('o', DT_T, 5000)),

	CASE("assoc_scan_long_rows", false,
	     "kernel assoc_scan_long_rows[BR = 8](\n"
	     "    x: in f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    v: out f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    ix: out i32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    q: out i8[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let (bv, bi) = associative_scan(|v0, i0, v1, i1| (where(v1 > v0, v1, v0),\n"
	     "        where(v1 > v0, i1, i0)), (x[...], iota(C)[None, :] + zeros((BR, C), i32)), axis = 1);\n"
	     "    v[...] = bv;\n"
	     "    ix[...] = bi;\n"
	     "    q[...] = associative_scan(|a, b| a * 3 - b, (x[...] * 50.0).astype(i8), axis = 1,\n"
	     "                              reverse = true);\n"
	     "}\n",
	     A2('i', BLK_F32, 13, 700), A2('o', BLK_F32, 13, 700), A2('o', BLK_I32, 13, 700),
	     A2('o', BLK_I8, 13, 700)),

	CASE("assoc_scan_long_cols", true,
	     "kernel assoc_scan_long_cols[T = f32, BC = 16](\n"
	     "    x: in T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     "    l: out T[R, C] block (R, BC) index (j) -> (0, j),\n"
	     ") grid (cdiv(C, BC)) {\n"
	     "    l[...] = associative_scan(|a, b| a * 0.75 + b, x[...], axis = 0);\n"
	     "}\n",
	     A2('i', DT_T, 300, 45), A2('o', DT_T, 300, 45)),

	/* ---- parts of tiles and reshapes (through shared memory on the GPU):
	 * slices, scalar indices (negative from the end, run-time ones, one
	 * past the tile reading 0), ds, reshape round trips, Ref slices */
	CASE("tile_slices", true,
	     "kernel tile_slices[T = f32, BR = 8](\n"
	     "    x: in T[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    y1: out T[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    y2: out T[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    y3: out T[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    y4: out T[R, 4] block (BR, 4) index (i) -> (i, 0),\n"
	     "    y5: out T[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    y6: out T[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let t = x[...].astype(f32);\n"
	     "    y1[...] = (t[:, 2:6].sum(axis = 1, keepdims = true) + t).astype(T);\n"
	     "    y2[...] = (t[:, -1][:, None] * t[0][None, :] + t[-2:, 3:].sum()).astype(T);\n"
	     "    y3[...] = (t.reshape(BR * 16).reshape(2 * BR, 8).reshape(BR, 16) + 1.0).astype(T);\n"
	     "    y4[...] = t.reshape(BR, 4, 4).max(axis = 2).astype(T);\n"
	     "    let p = program_id(0);\n"
	     "    y5[...] = (t + t[p % BR][None, :] + t[p + 7][None, :] + t[:, ds(p * 3, 1)]).astype(T);\n"
	     "    y6[:, 0:8] = x[:, 8:16];\n"
	     "    y6[:, 8:] = x[:, :-8];\n"
	     "}\n",
	     A2('i', DT_T, 13, 16), A2('o', DT_T, 13, 16), A2('o', DT_T, 13, 16), A2('o', DT_T, 13, 16),
	     A2('o', DT_T, 13, 4), A2('o', DT_T, 13, 16), A2('o', DT_T, 13, 16)),

	/* a dot's accumulator (mma fragments on tensor cores) cut and reshaped */
	CASE("tile_slices_dot", true,
	     "kernel tile_slices_dot[T = f32, BM = 32, BN = 32](\n"
	     "    a: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    s: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     "    h: out f32[M, 16] block (BM, 16) index (i, j) -> (i, 0),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = a[...] @ b[...];\n"
	     "    s[...] = (acc.reshape(BM, 2, 16).max(axis = 1).reshape(BM, 16, 1) * 0.5\n"
	     "        + acc.reshape(BM, 16, 2)).reshape(BM, BN);\n"
	     "    when program_id(1) == 0 { h[...] = acc[:, 0:16] - acc[:, 16:32]; }\n"
	     "}\n",
	     A2('i', DT_T, 45, 16), A2('i', DT_T, 16, 37), A2('o', BLK_F32, 45, 37), A2('o', BLK_F32, 45, 16)),

	/* i32 and bool parts; a C reference */
	CHECKED("tile_slices_int", false, check_slices_int,
	     "kernel tile_slices_int[BR = 8](\n"
	     "    x: in i32[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    y: out i32[R, 16] block (BR, 16) index (i) -> (i, 0),\n"
	     "    m: out bool[R, 2] block (BR, 2) index (i) -> (i, 0),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let t = x[...];\n"
	     "    y[...] = t.reshape(BR * 2, 8).reshape(BR, 16) * 3 + t[:, 15][:, None];\n"
	     "    m[...] = (t > 0)[:, 1:3];\n"
	     "}\n",
	     A2('i', BLK_I32, 13, 16), A2('o', BLK_I32, 13, 16), A2('o', BLK_BOOL, 13, 2)),

	/* ---- gathers and scatters: tiles of i32 indices (random in -8..8, so
	 * some fall outside the arrays and are masked) */
	CHECKED("gather_rows", true, check_gather_rows,
	     "kernel gather_rows[T = f32, BB = 16](\n"
	     "    ids: in i32[B] block (BB) index (i) -> (i),\n"
	     "    table: in T[V, D],\n"
	     "    y: out T[B, D] block (BB, D) index (i) -> (i, 0),\n"
	     "    z: out T[B, D] block (BB, D) index (i) -> (i, 0),\n"
	     "    w: out T[B] block (BB) index (i) -> (i),\n"
	     ") grid (cdiv(B, BB)) {\n"
	     "    let idx = ids[...];\n"
	     "    y[...] = table[idx, :];\n"
	     "    z[...] = load(table.at[abs(idx) + 1, :], other = -1.0);\n"
	     "    w[...] = table[idx, 3] + table[abs(idx) % 7, 2];\n"
	     "}\n",
	     A1('i', BLK_I32, 45), A2('i', DT_T, 9, 40), A2('o', DT_T, 45, 40), A2('o', DT_T, 45, 40),
	     A1('o', DT_T, 45)),

	/* a 2-D gather (row and column index tiles broadcast together), a
	 * gather in a loop, a scatter of a permutation */
	CASE("gather_2d_scatter", true,
	     "kernel gather_2d_scatter[T = f32, BR = 8, BC = 16](\n"
	     "    x: in T[R, C],\n"
	     "    r: in i32[R] block (BR) index (i) -> (i),\n"
	     "    y: out T[R, BC] block (BR, BC) index (i) -> (i, 0),\n"
	     "    s: out T[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    p: out T[R, C],\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let rows = abs(r[...]);\n"
	     "    let cols = (iota(BC) * 3 + program_id(0)) % C;\n"
	     "    y[...] = x[rows[:, None], cols[None, :]];\n"
	     "    s[...] = fori_loop(0, 3, zeros((BR, C), f32)) |k, acc| {\n"
	     "        acc + x[(rows + k) % R, :].astype(f32)\n"
	     "    }.astype(T);\n"
	     "    let i = program_id(0) * BR + iota(BR);\n"
	     "    p[where(i < R, (i * 5) % R, -1), :] = x[i, :]; /* rows past R: dropped */\n"
	     "}\n",
	     A2('i', DT_T, 29, 20), A1('i', BLK_I32, 29), A2('o', DT_T, 29, 16), A2('o', DT_T, 29, 20),
	     A2('o', DT_T, 29, 20)),

	/* a rank-2 tile of indices into a rank-1 Ref, rank-4 tiles scanned,
	 * reshaped and sliced, a scatter whose repeated indices write equal
	 * values; one program (no grid) */
	CASE("gather_rank4_mix", true,
	     "kernel gather_rank4_mix[T = f32](\n"
	     "    x: in T[N],\n"
	     "    i: in i32[4, 8],\n"
	     "    t4: in T[2, 3, 4, 5],\n"
	     "    y: out T[4, 8],\n"
	     "    z: out T[2, 3, 4, 5],\n"
	     "    w: out T[6, 20],\n"
	     "    s: inout T[N],\n"
	     ") {\n"
	     "    let idx = i[...];\n"
	     "    y[...] = x[idx] + load(x.at[idx * 2], other = 1.0);\n"
	     "    let v = t4[...];\n"
	     "    z[...] = cumsum(v, axis = 2, reverse = true) + v.reshape(6, 20).reshape(2, 3, 4, 5) * v[:, :, 1:2, :];\n"
	     "    w[...] = v.reshape(6, -1)[:, ::1];\n"
	     "    s[idx] = x[idx] * 3.0;\n"
	     "}\n",
	     A1('i', DT_T, 20), A2('i', BLK_I32, 4, 8), A4('i', DT_T, 2, 3, 4, 5), A2('o', DT_T, 4, 8),
	     A4('o', DT_T, 2, 3, 4, 5), A2('o', DT_T, 6, 20), A1('x', DT_T, 20)),

	/* scalar prefetch: a grouped (MoE) matmul over a work list, groups
	 * ragged and one empty; each row written by the program of its group */
	FILLED("prefetch_gmm", true, fill_gmm, check_gmm,
	     "kernel prefetch_gmm[T = f32, BM = 32, BN = 32, BK = 16](\n"
	     "    work: prefetch i32[W, 4],\n"
	     "    x: in T[M, K] block (BM, K) index (t, j) -> (work[t, 0], 0),\n"
	     "    w: in T[G, K, N] block (None, K, BN) index (t, j) -> (work[t, 1], 0, j),\n"
	     "    y: out T[M, N] block (BM, BN) index (t, j) -> (work[t, 0], j),\n"
	     ") grid (W, cdiv(N, BN)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[:, ds(k * BK, BK)], w[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    let t = program_id(0);\n"
	     "    let row = work[t, 0] * BM + iota(BM);\n"
	     "    let mine = (row >= work[t, 2]) & (row < work[t, 3]);\n"
	     "    y[where(mine, iota(BM), -1), :] = acc.astype(T);\n"
	     "}\n",
	     A2('i', BLK_I32, GMM_W, 4), A2('i', DT_T, GMM_M, GMM_K), A3('i', DT_T, 4, GMM_K, GMM_N),
	     A2('o', DT_T, GMM_M, GMM_N)),
	/* prefetch indices random in -8..8: blocks outside the array on a
	 * squeezed dim, a ragged dim and a whole one; a seq axis; the body
	 * reads the prefetch array as a scalar and as a tile */
	CASE("prefetch_random", false,
	     "kernel prefetch_random(\n"
	     "    sel: prefetch i32[5, 3],\n"
	     "    x: in f32[9, 30, 20] block (None, 8, 16) index (i, j) -> (sel[i, 0], sel[i, 1] + j, sel[j, 2]),\n"
	     "    y: out f32[5, 3, 8, 16] block (None, None, 8, 16) index (i, j) -> (i, j, 0, 0),\n"
	     "    z: inout i32[5, 3] block (1, 3) index (i, j) -> (i, 0),\n"
	     ") grid (5, seq 3) {\n"
	     "    let s = sel[...];\n"
	     "    y[...] = x[...] + sel[program_id(0), program_id(1)].astype(f32);\n"
	     "    z[0, program_id(1)] = z[0, program_id(1)] + s.sum() + sel[4 - program_id(0), 2];\n"
	     "}\n",
	     A2('i', BLK_I32, 5, 3), A3('i', BLK_F32, 9, 30, 20), A4('o', BLK_F32, 5, 3, 8, 16),
	     A2('x', BLK_I32, 5, 3)),
	/* block-sparse: the K slabs a loop visits come from a prefetch list
	 * (random in -8..8: negative and past-the-end slabs read 0), read in
	 * the loop and pipelined with the slabs; small tiles, then tiles of
	 * the tensor-core (sm_90a: wgmma, warp specialized) path */
	BLOCKSPARSE("prefetch_blocksparse", "BM = 32, BN = 32, BK = 32", 7, 70, 200, 45),
	BLOCKSPARSE("prefetch_blocksparse_mma", "BM = 64, BN = 64, BK = 64, num_warps = 4, num_stages = 3",
	            9, 300, 640, 200),
	/* a seq K axis whose blocks a prefetch list picks (Pallas's form) */
	CASE("prefetch_seq_k", true,
	     "kernel prefetch_seq_k[T = f32, BM = 64, BN = 64, BK = 64, num_warps = 4](\n"
	     "    kl: prefetch i32[NK],\n"
	     "    x: in T[M, K] block (BM, BK) index (i, j, k) -> (i, kl[k]),\n"
	     "    w: in T[K, N] block (BK, BN) index (i, j, k) -> (kl[k], j),\n"
	     "    y: out f32[M, N] block (BM, BN) index (i, j, k) -> (i, j),\n"
	     "    acc: scratch f32[BM, BN],\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN), seq NK) {\n"
	     "    when program_id(2) == 0 { acc[...] = zeros((BM, BN), f32); }\n"
	     "    acc[...] = acc[...] + dot(x[...], w[...]);\n"
	     "    when program_id(2) == num_programs(2) - 1 { y[...] = acc[...]; }\n"
	     "}\n",
	     A1('i', BLK_I32, 9), A2('i', DT_T, 200, 640), A2('i', DT_T, 640, 130), A2('o', BLK_F32, 200, 130)),
	FILLED("prefetch_huge", false, fill_huge, check_huge,
	     "kernel prefetch_huge(\n"
	     "    sel: prefetch i32[8],\n"
	     "    x: in f32[100, 16] block (32, 16) index (i) -> (sel[i], 0),\n"
	     "    y: out f32[8, 32, 16] block (None, 32, 16) index (i) -> (i, 0, 0),\n"
	     ") grid (8) {\n"
	     "    y[...] = x[...] + 1.0;\n"
	     "}\n",
	     A1('i', BLK_I32, 8), A2('i', BLK_F32, 100, 16), A3('o', BLK_F32, 8, 32, 16)),

	/* paged attention decode (examples/paged_attention.blk's form): pages
	 * the body finds in a prefetch table, read ahead in the loop; four
	 * query heads per KV head, a sequence of length 0 */
	FILLED("paged_attention_decode", true, fill_pages, NULL,
	     "kernel paged_attention_decode[T = f32, G = 4, PS = 8, D = 32](\n"
	     "    tables: prefetch i32[B, MP],\n"
	     "    lens: prefetch i32[B],\n"
	     "    q: in T[B, KVH, G, D] block (None, None, G, D) index (b, h) -> (b, h, 0, 0),\n"
	     "    k: in T[KVH, NP, PS, D] block (None, NP, PS, D) index (b, h) -> (h, 0, 0, 0),\n"
	     "    v: in T[KVH, NP, PS, D] block (None, NP, PS, D) index (b, h) -> (h, 0, 0, 0),\n"
	     "    o: out T[B, KVH, G, D] block (None, None, G, D) index (b, h) -> (b, h, 0, 0),\n"
	     ") grid (B, KVH) {\n"
	     "    let b = program_id(0);\n"
	     "    let len = lens[b];\n"
	     "    let x = q[...];\n"
	     "    let pages = min(cdiv(max(len, 0), PS), MP);\n"
	     "    let (m, l, acc) = fori_loop(0, pages, (full((G,), -inf, f32), zeros((G,), f32), zeros((G, D), f32))) |p, (m, l, acc)| {\n"
	     "        let page = tables[b, p];\n"
	     "        let kb = k[page, :, :];\n"
	     "        let vb = v[page, :, :];\n"
	     "        let pos = expand_dims(p * PS + iota(PS), 0);\n"
	     "        let s = where(pos < len, dot(x, kb.T) * rsqrt(D.astype(f32)), -inf);\n"
	     "        let m_new = max(m, max(s, axis = 1));\n"
	     "        let alpha = exp(m - m_new);\n"
	     "        let e = exp(s - expand_dims(m_new, 1));\n"
	     "        (m_new, l * alpha + sum(e, axis = 1), acc * expand_dims(alpha, 1) + dot(e.astype(T), vb))\n"
	     "    };\n"
	     "    let lk = expand_dims(l, 1);\n"
	     "    o[...] = where(lk > 0.0, acc / lk, 0.0).astype(T);\n"
	     "}\n",
	     A2('i', BLK_I32, 5, 7), A1('i', BLK_I32, 5), A4('i', DT_T, 5, 3, 4, 32), A4('i', DT_T, 3, 23, 8, 32),
	     A4('i', DT_T, 3, 23, 8, 32), A4('o', DT_T, 5, 3, 4, 32)),

	/* its flash-decoding split: runs of 3 pages per program (a 3-D grid),
	 * empty runs writing m = -inf, l = 0 */
	FILLED("paged_attention_split", true, fill_pages, NULL,
	     "kernel paged_attention_split[T = f32, G = 4, PS = 8, D = 32, SP = 3](\n"
	     "    tables: prefetch i32[B, MP],\n"
	     "    lens: prefetch i32[B],\n"
	     "    q: in T[B, KVH, G, D] block (None, None, G, D) index (b, h, s) -> (b, h, 0, 0),\n"
	     "    k: in T[KVH, NP, PS, D] block (None, NP, PS, D) index (b, h, s) -> (h, 0, 0, 0),\n"
	     "    v: in T[KVH, NP, PS, D] block (None, NP, PS, D) index (b, h, s) -> (h, 0, 0, 0),\n"
	     "    ms: out f32[B, KVH * cdiv(MP, SP), G] block (None, None, G) index (b, h, s) -> (b, h * cdiv(MP, SP) + s, 0),\n"
	     "    ls: out f32[B, KVH * cdiv(MP, SP), G] block (None, None, G) index (b, h, s) -> (b, h * cdiv(MP, SP) + s, 0),\n"
	     "    accs: out f32[B, KVH * cdiv(MP, SP), G, D] block (None, None, G, D) index (b, h, s) -> (b, h * cdiv(MP, SP) + s, 0, 0),\n"
	     ") grid (B, KVH, cdiv(MP, SP)) {\n"
	     "    let b = program_id(0);\n"
	     "    let len = lens[b];\n"
	     "    let x = q[...];\n"
	     "    let first = program_id(2) * SP;\n"
	     "    let last = min(min(cdiv(max(len, 0), PS), MP), first + SP);\n"
	     "    let (m, l, acc) = fori_loop(first, last, (full((G,), -inf, f32), zeros((G,), f32), zeros((G, D), f32))) |p, (m, l, acc)| {\n"
	     "        let page = tables[b, p];\n"
	     "        let kb = k[page, :, :];\n"
	     "        let vb = v[page, :, :];\n"
	     "        let pos = expand_dims(p * PS + iota(PS), 0);\n"
	     "        let s = where(pos < len, dot(x, kb.T) * rsqrt(D.astype(f32)), -inf);\n"
	     "        let m_new = max(m, max(s, axis = 1));\n"
	     "        let alpha = where(m_new == -inf, 1.0, exp(m - m_new));\n"
	     "        let e = where(s == -inf, 0.0, exp(s - expand_dims(m_new, 1)));\n"
	     "        (m_new, l * alpha + sum(e, axis = 1), acc * expand_dims(alpha, 1) + dot(e.astype(T), vb))\n"
	     "    };\n"
	     "    ms[...] = m;\n"
	     "    ls[...] = l;\n"
	     "    accs[...] = acc;\n"
	     "}\n",
	     A2('i', BLK_I32, 5, 7), A1('i', BLK_I32, 5), A4('i', DT_T, 5, 3, 4, 32), A4('i', DT_T, 3, 23, 8, 32),
	     A4('i', DT_T, 3, 23, 8, 32), A3('o', BLK_F32, 5, 9, 4), A3('o', BLK_F32, 5, 9, 4),
	     A4('o', BLK_F32, 5, 9, 4, 32)),

	/* rotary embedding as users write it: halves of each head's row from
	 * slices, written to slices of the output Ref; the head dim squeezed
	 * in the middle of the array */
	CASE("rope_halves", true,
	     "kernel rope_halves[T = f32, BS = 16, D = 64](\n"
	     "    x: in T[S, H, D] block (BS, None, D) index (i, h) -> (i, h, 0),\n"
	     "    cs: in f32[S, D] block (BS, D) index (i, h) -> (i, 0),\n"
	     "    y: out T[S, H, D] block (BS, None, D) index (i, h) -> (i, h, 0),\n"
	     ") grid (cdiv(S, BS), H) {\n"
	     "    let v = x[...].astype(f32);\n"
	     "    let c = cs[:, :D ~/ 2];\n"
	     "    let s = cs[:, D ~/ 2:];\n"
	     "    y[:, :D ~/ 2] = (v[:, :D ~/ 2] * c - v[:, D ~/ 2:] * s).astype(T);\n"
	     "    y[:, D ~/ 2:] = (v[:, D ~/ 2:] * c + v[:, :D ~/ 2] * s).astype(T);\n"
	     "}\n",
	     A3('i', DT_T, 37, 3, 64), A2('i', BLK_F32, 37, 64), A3('o', DT_T, 37, 3, 64)),
	/* cross-entropy rows: logsumexp, the target's logit picked by a mask
	 * (targets random in -8..8: negative ones pick nothing) */
	CASE("xent_rows", false,
	     "kernel xent_rows[BR = 4, C = 1000](\n"
	     "    logits: in f32[R, C] block (BR, C) index (i) -> (i, 0),\n"
	     "    target: in i32[R] block (BR) index (i) -> (i),\n"
	     "    loss: out f32[R] block (BR) index (i) -> (i),\n"
	     ") grid (cdiv(R, BR)) {\n"
	     "    let z = logits[...] * 3.0;\n"
	     "    let m = z.max(axis = 1, keepdims = true);\n"
	     "    let lse = log(sum(exp(z - m), axis = 1)) + m[:, 0];\n"
	     "    let t = target[...];\n"
	     "    loss[...] = lse - sum(where(iota(C)[None, :] == t[:, None], z, 0.0), axis = 1);\n"
	     "}\n",
	     A2('i', BLK_F32, 13, 1000), A1('i', BLK_I32, 13), A1('o', BLK_F32, 13)),

	/* histograms: atomic_add at a tile of bins, i32 and f32 weights */
	CASE_TOL("histogram_gather", false, 2,
	     "kernel histogram_gather[BB = 64](\n"
	     "    v: in i32[N] block (BB) index (i) -> (i),\n"
	     "    wt: in f32[N] block (BB) index (i) -> (i),\n"
	     "    h: inout i32[H],\n"
	     "    hw: inout f32[H],\n"
	     "    m: inout i32[H],\n"
	     ") grid (cdiv(N, BB)) {\n"
	     "    let b = v[...] + 4;\n"
	     "    atomic_add(h.at[b], 1);\n"
	     "    atomic_add(hw.at[b], wt[...]);\n"
	     "    atomic_max(m.at[b], v[...] * 10 + program_id(0));\n"
	     "}\n",
	     A1('i', BLK_I32, 1000), A1('i', BLK_F32, 1000), A1('x', BLK_I32, 12), A1('x', BLK_F32, 12),
	     A1('x', BLK_I32, 12)),

	/* ---- strided ds and slice steps: reads, writes, views of views,
	 * load(other=), atomics, at ragged sizes; a C reference */
	CHECKED("strided_ds", false, check_strided,
	     "kernel strided_ds[B = 64](\n"
	     "    x: in i32[N] block (2 * B) index (i) -> (i),\n"
	     "    y: out i32[N] block (2 * B) index (i) -> (i),\n"
	     "    e: out i32[M] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, 2 * B)) {\n"
	     "    let ev = x[ds(0, B, 2)];\n"
	     "    let od = x[1::2];\n"
	     "    e[...] = ev + od;\n"
	     "    y[ds(1, B, 2)] = ev;\n"
	     "    y[::2] = od * 2;\n"
	     "}\n",
	     A1('i', BLK_I32, 300), A1('o', BLK_I32, 300), A1('o', BLK_I32, 150)),

	CASE_TOL("strided_2d", true, 2,
	     "kernel strided_2d[T = f32, BR = 16, BC = 32](\n"
	     "    x: in T[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    y: out T[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     "    a: inout f32[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    let v = x.at[ds(1, 5, 3), :];\n"
	     "    let w = load(v.at[:, ds(program_id(1), 8, 4)], other = 7.0);\n"
	     "    y[...] = x[...];\n"
	     "    y[::3, 1:30:2] = load(x.at[ds(1, 6, 3), ::2], other = -1.0)[:, 0:15] * 2.0;\n"
	     "    y[0:5, 0:8] = w;\n"
	     "    atomic_add(a.at[2::4, ds(3, 7, 4)], x[0:4, 0:7].astype(f32));\n"
	     "}\n",
	     A2('i', DT_T, 37, 50), A2('o', DT_T, 37, 50), A2('x', BLK_F32, 37, 50)),

	/* ---- grids of four axes: the fourth parallel one shares CUDA z with
	 * the third (its program id decoded); a seq axis among them */
	CHECKED("grid4d", false, check_grid4d,
	     "kernel grid4d(\n"
	     "    o: out i32[A, B, C, D] block (1, 1, 1, 1) index (a, b, c, d) -> (a, b, c, d),\n"
	     ") grid (A, B, C, D) {\n"
	     "    o[0, 0, 0, 0] = program_id(0) * 1000 + program_id(1) * 100 + program_id(2) * 10\n"
	     "        + program_id(3) + num_programs(3) * 10000;\n"
	     "}\n",
	     A4('o', BLK_I32, 2, 3, 5, 7)),

	CASE("grid4d_seq", true,
	     "kernel grid4d_seq[T = f32, BR = 4, BC = 8](\n"
	     "    x: in T[H, K, R, C] block (None, None, BR, BC) index (h, k, i, j) -> (h, k, i, j),\n"
	     "    y: out f32[H, R, C] block (None, BR, BC) index (h, k, i, j) -> (h, i, j),\n"
	     "    acc: scratch f32[BR, BC],\n"
	     ") grid (H, seq K, cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    when program_id(1) == 0 { acc[...] = zeros((BR, BC), f32); }\n"
	     "    acc[...] = acc[...] + x[...].astype(f32) * (program_id(1) + 1).astype(f32)\n"
	     "        + (program_id(0) * 3 + program_id(2) * 5 + program_id(3)).astype(f32);\n"
	     "    when program_id(1) == num_programs(1) - 1 { y[...] = acc[...]; }\n"
	     "}\n",
	     A4('i', DT_T, 3, 4, 10, 19), A3('o', BLK_F32, 3, 10, 19)),

	CASE("grid4d_par", true,
	     "kernel grid4d_par[T = f32, BR = 4, BC = 8](\n"
	     "    x: in T[H, G, R, C] block (None, None, BR, BC) index (h, g, i, j) -> (h, g, i, j),\n"
	     "    y: out T[H, G, R, C] block (None, None, BR, BC) index (h, g, i, j) -> (h, g, i, j),\n"
	     ") grid (H, G, cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    y[...] = x[...] * 2.0 + (program_id(2) * 7 + program_id(3)).astype(T);\n"
	     "}\n",
	     A4('i', DT_T, 3, 2, 10, 19), A4('o', DT_T, 3, 2, 10, 19)),

	/* grids of five and six axes: the parallel ones past the third share
	 * CUDA z, the later the faster (each decoded by a divide and a
	 * modulo); grouped-query heads as two axes (KV group, head in group);
	 * a seq axis among them; dynamic sizes too */
	CHECKED("grid6d", false, check_grid6d,
	     "kernel grid6d[E = 3, F = 5](\n"
	     "    o: out i32[A, B, C, D] block (1, 1, 1, 1) index (a, b, c, d, e, f) -> (a, b * E + e, c * F + f, d),\n"
	     ") dynamic (C) grid (A, cdiv(B, E), cdiv(C, F), D, E, F) {\n"
	     "    o[0, 0, 0, 0] = program_id(0) * 100000 + program_id(1) * 10000 + program_id(2) * 1000\n"
	     "        + program_id(3) * 100 + program_id(4) * 10 + program_id(5) + num_programs(5) * 1000000;\n"
	     "}\n",
	     A4('o', BLK_I32, 2, 6, 15, 4)),
	CASE("grid5d_gqa", true,
	     "kernel grid5d_gqa[T = f32, R = 2, BS = 8, BD = 16](\n"
	     "    x: in T[Bt, H, S, D] block (None, None, BS, BD) index (b, g, r, s, d) -> (b, g * R + r, s, d),\n"
	     "    kv: in T[Bt, G, S, D] block (None, None, BS, BD) index (b, g, r, s, d) -> (b, g, s, d),\n"
	     "    y: out T[Bt, H, S, D] block (None, None, BS, BD) index (b, g, r, s, d) -> (b, g * R + r, s, d),\n"
	     ") grid (Bt, G, R, cdiv(S, BS), cdiv(D, BD)) {\n"
	     "    y[...] = x[...] * kv[...] + (program_id(2) * 5 + program_id(4)).astype(T);\n"
	     "}\n",
	     A4('i', DT_T, 3, 6, 19, 40), A4('i', DT_T, 3, 3, 19, 40), A4('o', DT_T, 3, 6, 19, 40)),
	CASE("grid5d_seq", true,
	     "kernel grid5d_seq[T = f32, BR = 4, BC = 8](\n"
	     "    x: in T[H, K, R, C] block (None, None, BR, BC) index (h, g, k, i, j) -> (h, k, i, j),\n"
	     "    y: out f32[H, G, R, C] block (None, None, BR, BC) index (h, g, k, i, j) -> (h, g, i, j),\n"
	     "    acc: scratch f32[BR, BC],\n"
	     ") dynamic (R) grid (H, G, seq K, cdiv(R, BR), cdiv(C, BC)) {\n"
	     "    when program_id(2) == 0 { acc[...] = zeros((BR, BC), f32); }\n"
	     "    acc[...] = acc[...] + x[...].astype(f32) * (program_id(2) + program_id(1) + 1).astype(f32)\n"
	     "        + (program_id(0) * 3 + program_id(3) * 5 + program_id(4)).astype(f32);\n"
	     "    when program_id(2) == num_programs(2) - 1 { y[...] = acc[...]; }\n"
	     "}\n",
	     A4('i', DT_T, 3, 4, 10, 19), A4('o', BLK_F32, 3, 2, 10, 19)),

	/* ---- the Hopper path (wgmma, warp specialized, persistent) on kernels
	 * shaped like users', f16/bf16 on sm_90a; f32 runs them exact */
	/* the accumulator scaled every step: each group waited for at once,
	 * 324 tiles: persistent */
	CASE("wg_scaled_accumulator", true,
	     "kernel wg_scaled_accumulator[T = f32, BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 3](\n"
	     "    a: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc * 0.5 + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    c[...] = acc;\n"
	     "}\n",
	     A2('i', DT_T, 1100, 96), A2('i', DT_T, 96, 1090), A2('o', BLK_F32, 1100, 1090)),
	/* A stored [K, M]: its slabs transposed into the dot */
	CASE("wg_transposed_a", true,
	     "kernel wg_transposed_a[T = f32, BM = 64, BN = 64, BK = 32, num_warps = 4](\n"
	     "    a: in T[K, M] block (K, BM) index (i, j) -> (0, i),\n"
	     "    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(a[ds(k * BK, BK), :].T, b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    c[...] = acc.astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 80, 130), A2('i', DT_T, 80, 70), A2('o', DT_T, 130, 70)),
	/* a column sum and a row softmax of the product, in the accumulator's layout */
	CASE("wg_reductions_of_product", true,
	     "kernel wg_reductions_of_product[T = f32, BN = 64, num_warps = 4](\n"
	     "    a: in T[64, K] block (64, K) index (j) -> (0, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (j) -> (0, j),\n"
	     "    s: out f32[N] block (BN) index (j) -> (j),\n"
	     "    p: out f32[64, N] block (64, BN) index (j) -> (0, j),\n"
	     ") grid (cdiv(N, BN)) {\n"
	     "    let d = dot(a[...], b[...]);\n"
	     "    s[...] = sum(d, axis = 0);\n"
	     "    let e = exp(d - max(d, axis = 1)[:, None]);\n"
	     "    p[...] = e / sum(e, axis = 1)[:, None];\n"
	     "}\n",
	     A2('i', DT_T, 64, 48), A2('i', DT_T, 48, 150), A1('o', BLK_F32, 150), A2('o', BLK_F32, 64, 150)),
	/* 153 tiles of one warpgroup: ping-pong programs; a column sum across
	 * the warps (each program's own transit region and barrier) and a row
	 * softmax of each tile */
	CASE("wg_pingpong_reductions", true,
	     "kernel wg_pingpong_reductions[T = f32, BK = 32, num_warps = 4, num_stages = 3](\n"
	     "    a: in T[M, K] block (64, K) index (i, j) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, 64) index (i, j) -> (0, j),\n"
	     "    s: out f32[R, N] block (None, 64) index (i, j) -> (i, j),\n"
	     "    p: out f32[M, N] block (64, 64) index (i, j) -> (i, j),\n"
	     ") grid (R, cdiv(N, 64)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((64, 64), f32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    s[...] = sum(acc, axis = 0);\n"
	     "    let e = exp(acc - max(acc, axis = 1)[:, None]);\n"
	     "    p[...] = e / sum(e, axis = 1)[:, None];\n"
	     "}\n",
	     A2('i', DT_T, 1080, 96), A2('i', DT_T, 96, 530), A2('o', BLK_F32, 17, 530), A2('o', BLK_F32, 1080, 530)),
	/* N = 16, the narrowest wgmma tile, and a dot in a branch (staged) */
	CASE("wg_narrow_and_branch", true,
	     "kernel wg_narrow_and_branch[T = f32, num_warps = 4](\n"
	     "    a: in T[M, K] block (64, K) index (i) -> (i, 0),\n"
	     "    b: in T[K, 16],\n"
	     "    c: out f32[M, 16] block (64, 16) index (i) -> (i, 0),\n"
	     ") grid (cdiv(M, 64)) {\n"
	     "    when program_id(0) % 2 == 0 {\n"
	     "        c[...] = dot(a[...], b[...]);\n"
	     "    } else {\n"
	     "        c[...] = dot(a[...] * 2.0, b[...]) + 1.0;\n"
	     "    }\n"
	     "}\n",
	     A2('i', DT_T, 200, 32), A2('i', DT_T, 32, 16), A2('o', BLK_F32, 200, 16)),

	/* ---- cdiv by constants, every sign, and the kernel whose old cdiv
	 * (neg, then shr.s32) the driver's ptxas fused into a wrong LEA.HI
	 * next to an atomic_max (docs/gpu-notes.md, run 37) */
	CASE("cdiv_signs", false,
	     "kernel cdiv_signs[B = 8](\n"
	     "    x: in i32[N] block (B) index (i) -> (i),\n"
	     "    y: out i32[N] block (B) index (i) -> (i),\n"
	     ") grid (cdiv(N, B)) {\n"
	     "    let v = program_id(0) * 7 - 10;\n"
	     "    y[...] = x[...] * 0 + cdiv(v, 2) * 1000000 + cdiv(v, 3) * 1000 + cdiv(v, -2) + iota(B);\n"
	     "}\n",
	     A1('i', BLK_I32, 200), A1('o', BLK_I32, 200)),
	CASE("cdiv_beside_atomic_max", false,
	     "kernel cdiv_beside_atomic_max[B0 = 1, B1 = 1, num_warps = 2](\n"
	     "    x: in f16[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     "    y: in f16[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     "    n: in i32[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     "    q: out i32[M, N] block (B0, B1) index (i, j) -> (i, j),\n"
	     "    s: inout f32[M] block (B0) index (i, j) -> (i),\n"
	     ") grid (cdiv(M, B0), cdiv(N, B1)) {\n"
	     "    let a = x[...].astype(f32);\n"
	     "    let b = y[...].astype(f32);\n"
	     "    let k = n[...];\n"
	     "    q[...] = ((k + (program_id(0) ~/ (program_id(0) - 2)) + cdiv(program_id(0), 2))\n"
	     "        - (~where(k != 0, (a > b).astype(i32), abs(k * 0)) ~/ ((a * 8.0).astype(i32) % 5 - 2)));\n"
	     "    atomic_max(s, max(b, axis = 1));\n"
	     "}\n",
	     A2('i', BLK_F16, 3, 3), A2('i', BLK_F16, 3, 3), A2('i', BLK_I32, 3, 3), A2('o', BLK_I32, 3, 3),
	     A1('x', BLK_F32, 3)),

	/* ---- dot with a transposed operand at tiny odd sizes */
	CASE("dot_transposed_operand", true,
	     "kernel dot_transposed_operand[T = f32](\n"
	     "    a: in T[K, M],\n"
	     "    b: in T[K, N],\n"
	     "    c: out f32[M, N],\n"
	     ") {\n"
	     "    c[...] = dot(a[...].T, b[...]);\n"
	     "}\n",
	     A2('i', DT_T, 13, 9), A2('i', DT_T, 13, 20), A2('o', BLK_F32, 9, 20)),

	/* ---- print: i32 and f32 scalars per program */
	{.name = "print_scalars", .src =
	 "kernel print_scalars[B = 4](\n"
	 "    x: in i32[N] block (B) index (i) -> (i),\n"
	 "    y: out i32[N] block (B) index (i) -> (i),\n"
	 ") grid (cdiv(N, B)) {\n"
	 "    let v = x[...];\n"
	 "    print(\"blk-print\", program_id(0), num_programs(0), sum(v), sum(v).astype(f32) * 0.5);\n"
	 "    y[...] = v;\n"
	 "}\n",
	 .expect = "program (2): blk-print 2 3 ", .narrays = 2,
	 .a = {A1('i', BLK_I32, 11), A1('o', BLK_I32, 11)}},

	/* a bool prints as true/false */
	{.name = "print_bool", .src =
	 "kernel print_bool(\n"
	 "    y: out i32[N] block (4) index (i) -> (i),\n"
	 ") grid (cdiv(N, 4)) {\n"
	 "    print(\"flag\", program_id(0) == 1, num_programs(0));\n"
	 "    y[...] = iota(4);\n"
	 "}\n",
	 .expect = "program (1): flag true 3", .narrays = 1, .a = {A1('o', BLK_I32, 11)}},

	/* an fp8 scalar prints its value (%g of the f32 it converts to) */
	{.name = "print_fp8", .src =
	 "kernel print_fp8(\n"
	 "    y: out i32[N] block (4) index (i) -> (i),\n"
	 ") grid (cdiv(N, 4)) {\n"
	 "    print(\"q\", (program_id(0).astype(f32) * 0.3 - 0.6).astype(f8e4m3));\n"
	 "    y[...] = iota(4);\n"
	 "}\n",
	 .expect = "program (1): q -0.3125", .narrays = 1, .a = {A1('o', BLK_I32, 11)}},

	/* the text is not a format: a '%' in it prints as itself */
	{.name = "print_percent_in_text", .src =
	 "kernel print_percent_in_text(\n"
	 "    y: out i32[N] block (4) index (i) -> (i),\n"
	 ") grid (cdiv(N, 4)) {\n"
	 "    print(\"ratio 50% done\", program_id(0));\n"
	 "    y[...] = iota(4);\n"
	 "}\n",
	 .expect = "program (1): ratio 50% done 1", .narrays = 1, .a = {A1('o', BLK_I32, 11)}},

	/* causal attention written as Triton's tutorial does: the key blocks
	 * below the diagonal in one loop without a mask, the diagonal ones in a
	 * second with it.  On sm_90a one producer feeds both loops through the
	 * same slots (warp_spec.c's group); ragged S; the second case has
	 * more tiles than SMs (persistent) */
	CASE("attn_two_loops", true, ATTN_TWO_LOOPS("attn_two_loops"),
	     A3('i', DT_T, 2, 300, 32), A3('i', DT_T, 2, 300, 32), A3('i', DT_T, 2, 300, 32),
	     A3('o', DT_T, 2, 300, 32)),
	CASE("attn_two_loops_persist", true, ATTN_TWO_LOOPS("attn_two_loops_persist"),
	     A3('i', DT_T, 48, 320, 32), A3('i', DT_T, 48, 320, 32), A3('i', DT_T, 48, 320, 32),
	     A3('o', DT_T, 48, 320, 32)),
	/* loop-split's two directions on a banded matmul: `cols <= rows + W`
	 * holds on a prefix of the K blocks (split off without it), `cols >=
	 * rows - W` on a suffix; ragged M and K.  f16/bf16 run on wgmma (one
	 * warpgroup, warp specialized: the split loops share the producer;
	 * suffix_dot's mask-free loop comes second); f32 is not split */
	CASE("band_dot", true, MASKED_DOT("band_dot", "20", "cols >= rows - W && cols <= rows + W"),
	     A2('i', DT_T, 70, 100), A2('i', DT_T, 100, 32), A2('o', BLK_F32, 70, 32)),
	CASE("suffix_dot", true, MASKED_DOT("suffix_dot", "7", "cols > rows - W"),
	     A2('i', DT_T, 70, 100), A2('i', DT_T, 100, 32), A2('o', BLK_F32, 70, 32)),
	/* a matmul's K in two loops: on sm_90a both are fed by one producer
	 * and each leaves its wgmma group in flight (3 slots), so the first
	 * hands its last slot back after its drain (warp_spec.c's
	 * release_last); ragged M, N and K, then more tiles than SMs */
	CASE("two_k_loops", true, TWO_K_LOOPS("two_k_loops"),
	     A2('i', DT_T, 300, 330), A2('i', DT_T, 330, 200), A2('o', BLK_F32, 300, 200)),
	CASE("two_k_loops_persist", true, TWO_K_LOOPS("two_k_loops_persist"),
	     A2('i', DT_T, 2100, 200), A2('i', DT_T, 200, 2200), A2('o', BLK_F32, 2100, 2200)),
	/* two dots on one slab (issue 26): SwiGLU's x feeds both x @ w1.T and
	 * x @ w3.T, staged once (pipeline.c's shared slabs; on sm_90a one TMA
	 * copy a slab for both wgmma dots); ragged M, N and K, then more
	 * tiles than SMs (persistent) */
	CASE("swiglu_shared_x", true, SWIGLU("swiglu_shared_x"),
	     A2('i', DT_T, 200, 100), A2('i', DT_T, 136, 100), A2('i', DT_T, 136, 100), A2('o', BLK_F32, 200, 136)),
	CASE("swiglu_shared_x_persist", true, SWIGLU("swiglu_shared_x_persist"),
	     A2('i', DT_T, 1500, 192), A2('i', DT_T, 1800, 192), A2('i', DT_T, 1800, 192),
	     A2('o', BLK_F32, 1500, 1800)),
	/* gathered A slabs (pipeline.c's gathered rows: cp.async at computed
	 * row addresses, plain schedule on sm_90a): ragged C (40 of a 64-wide
	 * chunk), pixels and output channels; then 2 chunks a tap, more tiles
	 * than SMs, 8 warps */
	CASE("conv3x3_gather", true, CONV3X3("conv3x3_gather", "BM = 128, BN = 128, BK = 64, num_warps = 4, num_stages = 3"),
	     A4('i', DT_T, 2, 7, 9, 40), A2('i', DT_T, 360, 72), A2('o', DT_T, 126, 72)),
	CASE("conv3x3_gather_big", true, CONV3X3("conv3x3_gather_big", "BM = 128, BN = 64, BK = 32, num_warps = 8, num_stages = 4"),
	     A4('i', DT_T, 3, 21, 19, 64), A2('i', DT_T, 576, 136), A2('o', DT_T, 1197, 136)),
	CASE("conv3x3_gather_small", true, CONV3X3("conv3x3_gather_small", "BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 2"),
	     A4('i', DT_T, 1, 13, 11, 48), A2('i', DT_T, 432, 40), A2('o', DT_T, 143, 40)),
	/* a token gather feeding a dot (MoE's, an embedding's): rows of x
	 * picked by ids loaded once (random in -8..8: the negative ones read
	 * zeros), staged by cp.async at their rows; ragged M, N, K */
	CASE("gather_rows_dot", true,
	     "kernel gather_rows_dot[T = f32, BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 3](\n"
	     "    ids: in i32[M] block (BM) index (i, j) -> (i),\n"
	     "    x: in T[V, K] block (V, K) index (i, j) -> (0, 0),\n"
	     "    w: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    y: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let rows = ids[...];\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(x[rows, ds(k * BK, BK)], w[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    y[...] = acc.astype(T);\n"
	     "}\n",
	     A1('i', BLK_I32, 200), A2('i', DT_T, 9, 104), A2('i', DT_T, 104, 72), A2('o', DT_T, 200, 72)),
	/* the taps as two loops around the channel loop (canonicalize.c's
	 * loop-nest makes one loop of the three, pipelined across taps);
	 * weights [3, 3, C, OC] */
	CASE("conv3x3_nested", true,
	     "kernel conv3x3_nested[T = f32, BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 3](\n"
	     "    x: in T[N, H, W, C] block (N, H, W, C) index (i, j) -> (0, 0, 0, 0),\n"
	     "    w: in T[3, 3, C, OC] block (3, 3, C, BN) index (i, j) -> (0, 0, 0, j),\n"
	     "    y: out T[N * H * W, OC] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(N * H * W, BM), cdiv(OC, BN)) {\n"
	     "    let m = program_id(0) * BM + iota(BM);\n"
	     "    let n = m ~/ (H * W);\n"
	     "    let p = (m % (H * W)) ~/ W;\n"
	     "    let q = m % W;\n"
	     "    let acc = fori_loop(0, 3, zeros((BM, BN), f32)) |r, acc| {\n"
	     "        fori_loop(0, 3, acc) |s, acc| {\n"
	     "            fori_loop(0, cdiv(C, BK), acc) |k, acc| {\n"
	     "                let a = x[n, p + r - 1, q + s - 1, ds(k * BK, BK)];\n"
	     "                acc + dot(a, w[r, s, ds(k * BK, BK), :])\n"
	     "            }\n"
	     "        }\n"
	     "    };\n"
	     "    y[...] = acc.astype(T);\n"
	     "}\n",
	     A4('i', DT_T, 2, 9, 7, 72), A4('i', DT_T, 3, 3, 72, 40), A2('o', DT_T, 126, 40)),
	/* one slab read by two dots in two orientations: dO of attention's
	 * backward, B of p.T @ dO as it lies and A of dO @ v.T (a [BQ, BK]
	 * result, added up over the rows); ragged S */
	CASE("shared_slab_two_ways", true,
	     "kernel shared_slab_two_ways[T = f32, BQ = 64, BK = 64, D = 64, num_warps = 4, num_stages = 3](\n"
	     "    p: in T[S, BK] block (S, BK) index (j) -> (0, j),\n"
	     "    dout: in T[S, D] block (S, D) index (j) -> (0, 0),\n"
	     "    v: in T[N, D] block (BK, D) index (j) -> (j, 0),\n"
	     "    dv: out f32[N, D] block (BK, D) index (j) -> (j, 0),\n"
	     "    dp: out f32[N, BQ] block (BK, BQ) index (j) -> (j, 0),\n"
	     ") grid (cdiv(N, BK)) {\n"
	     "    let vb = v[...];\n"
	     "    let (a, b) = fori_loop(0, cdiv(S, BQ), (zeros((BK, D), f32), zeros((BK, BQ), f32))) |i, (a, b)| {\n"
	     "        let d = dout[ds(i * BQ, BQ), :];\n"
	     "        let pt = p[ds(i * BQ, BQ), :];\n"
	     "        (a + dot(pt.T, d), b + dot(vb, d.T))\n"
	     "    };\n"
	     "    dv[...] = a;\n"
	     "    dp[...] = b;\n"
	     "}\n",
	     A2('i', DT_T, 300, 64), A2('i', DT_T, 300, 64), A2('i', DT_T, 100, 64), A2('o', BLK_F32, 100, 64),
	     A2('o', BLK_F32, 100, 64)),
	/* the epilogue's TMA store (tma_store.c) at ragged edges: rows of 272
	 * bytes (bf16) take a tensor map, and TMA clips the blocks past M = 200
	 * and N = 136; an elementwise epilogue and the cast to T before it */
	CASE("tma_store_edges", true,
	     "kernel tma_store_edges[T = f32, BM = 128, BN = 128, BK = 64, num_warps = 8, num_stages = 3](\n"
	     "    a: in T[M, K] block (BM, K) index (i, j) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),\n"
	     "    c: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    c[...] = max(acc * 0.5, 0.0).astype(T);\n"
	     "}\n",
	     A2('i', DT_T, 200, 64), A2('i', DT_T, 64, 136), A2('o', DT_T, 200, 136)),
	/* a batched output (its batch dim squeezed in the block): a 3-D tensor
	 * map, the batch coordinate the block's start; ragged M */
	CASE("tma_store_batch", true,
	     "kernel tma_store_batch[T = f32, BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 2](\n"
	     "    a: in T[Bt, M, K] block (None, BM, K) index (i, j, b) -> (b, i, 0),\n"
	     "    b: in T[Bt, K, N] block (None, K, BN) index (i, j, b) -> (b, 0, j),\n"
	     "    c: out T[Bt, M, N] block (None, BM, BN) index (i, j, b) -> (b, i, j),\n"
	     ") grid (cdiv(M, BM), cdiv(N, BN), Bt) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    c[...] = acc.astype(T);\n"
	     "}\n",
	     A3('i', DT_T, 3, 100, 32), A3('i', DT_T, 3, 32, 128), A3('o', DT_T, 3, 100, 128)),
	/* one block written three times in a loop: each TMA store's chunk 0
	 * waits for the last one's writes, so the last values stay */
	CASE("tma_store_rewrite", true,
	     "kernel tma_store_rewrite[T = f32, BM = 64, BN = 128, BK = 32, num_warps = 4, num_stages = 2](\n"
	     "    a: in T[M, K] block (BM, K) index (i) -> (i, 0),\n"
	     "    b: in T[K, N] block (K, BN) index (i) -> (0, 0),\n"
	     "    c: out T[M, N] block (BM, BN) index (i) -> (i, 0),\n"
	     ") grid (cdiv(M, BM)) {\n"
	     "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	     "        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	     "    };\n"
	     "    let n = fori_loop(0, 3, 0) |r, n| {\n"
	     "        c[...] = (acc * (r + 1).astype(f32)).astype(T);\n"
	     "        n + 1\n"
	     "    };\n"
	     "}\n",
	     A2('i', DT_T, 130, 64), A2('i', DT_T, 64, 128), A2('o', DT_T, 130, 128)),
};

/* ---- host arrays -------------------------------------------------------- */


static BlkDType spec_dtype(const ArraySpec *s, BlkDType t)
{
	return s->dtype == DT_T ? t : (BlkDType)s->dtype;
}

static bool arrays_make(Arrays *a, const Case *c, BlkDType t, uint64_t seed)
{
	a->n = c->narrays;
	for (int i = 0; i < c->narrays; i++) {
		const ArraySpec *s = &c->a[i];
		a->h[i] = blk_host_new(spec_dtype(s, t), s->rank, s->shape);
		if (!a->h[i])
			return false;
		if (s->role == 'o')
			blk_host_poison(a->h[i]);
		else
			blk_host_fill_random(a->h[i], seed + (uint64_t)i);
	}
	if (c->fill)
		c->fill(a);
	return true;
}

static void arrays_free(Arrays *a)
{
	for (int i = 0; i < a->n; i++)
		blk_host_free(a->h[i]);
}

/* ---- messages ----------------------------------------------------------- */

/* The first line of text into err, after prefix. */
static void set_err(char *err, const char *prefix, const char *text)
{
	size_t n = strcspn(text ? text : "", "\n");
	snprintf(err, ERR_LEN, "%s%.*s", prefix, (int)n, text ? text : "");
}

/* A memory stream for diagnostics or prints; text valid after close. */
typedef struct Mem {
	FILE *f;
	char *text;
	size_t len;
} Mem;

static bool mem_open(Mem *m)
{
	m->text = NULL;
	m->len = 0;
	m->f = open_memstream(&m->text, &m->len);
	return m->f != NULL;
}

static void mem_close(Mem *m)
{
	if (m->f)
		fclose(m->f);
	m->f = NULL;
}

/* ---- the interpreter --------------------------------------------------- */

/* Compiles the case's source with T = t (typed cases only). */
static BlkKernel *compile_front(BlkArena *a, BlkDiag *d, const Case *c, BlkDType t)
{
	BlkDefine def = {"T", blk_dtype_name(t)};
	BlkSource *src = blk_source_from_string(a, c->name, c->src, strlen(c->src));
	BlkModule *m = blk_compile_source(a, d, src, &def, c->typed ? 1 : 0);
	return m ? m->first : NULL;
}

/* Runs the case in the interpreter on arrs; prints go to print_out.
 * stage says how far it got: 0 nothing, 1 compiled, 2 ran. */
static bool interp_run(const Case *c, BlkDType t, Arrays *arrs, FILE *print_out, int *stage,
                       char *err)
{
	BlkArena *a = blk_arena_create();
	Mem diag;
	if (!mem_open(&diag))
		return false;
	BlkDiag *d = blk_diag_create(a, diag.f, 5);
	BlkKernel *k = compile_front(a, d, c, t);
	*stage = k ? 1 : 0;
	BlkArrayDesc descs[MAX_ARRAYS];
	void *data[MAX_ARRAYS];
	for (int i = 0; i < arrs->n; i++) {
		descs[i] = arrs->h[i]->desc;
		data[i] = arrs->h[i]->data;
	}
	bool ok = k && blk_interp_run(k, descs, data, arrs->n, print_out, d);
	*stage += ok;
	mem_close(&diag);
	if (!ok)
		set_err(err, k ? "interpreter: " : "frontend: ", diag.text);
	free(diag.text);
	blk_arena_destroy(a);
	return ok;
}

/* ---- the GPU and the lowering -------------------------------------------- */

static void make_tensors(const Case *c, BlkDType t, Arrays *h, void *const *data, BlkTensor *out)
{
	for (int i = 0; i < h->n; i++)
		out[i] = blk_tensor_make(data[i], (int)spec_dtype(&c->a[i], t), h->h[i]->desc.rank,
		                         h->h[i]->desc.shape);
}

static BlkFunc *load_func(BlkRuntime *rt, const Case *c, BlkDType t, BlkProgram **p)
{
	char def[32];
	snprintf(def, sizeof def, "T=%s", blk_dtype_name(t));
	const char *defs[] = {def};
	*p = blk_program_load_source(rt, c->name, c->src, defs, c->typed ? 1 : 0);
	return *p ? blk_program_kernel(*p, c->name) : NULL;
}

/* Redirects fd 1 into a temporary file while the GPU prints. */
typedef struct Capture {
	int saved;
	FILE *tmp;
} Capture;

static bool capture_begin(Capture *cap)
{
	fflush(stdout);
	cap->tmp = tmpfile();
	cap->saved = cap->tmp ? dup(1) : -1;
	if (cap->saved < 0 || dup2(fileno(cap->tmp), 1) < 0)
		return false;
	return true;
}

/* Restores stdout; the captured text (malloc'd) in *text. */
static void capture_end(Capture *cap, char **text)
{
	fflush(stdout);
	dup2(cap->saved, 1);
	close(cap->saved);
	long n = fseek(cap->tmp, 0, SEEK_END) == 0 ? ftell(cap->tmp) : 0;
	rewind(cap->tmp);
	*text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	if (*text && n > 0 && fread(*text, 1, (size_t)n, cap->tmp) != (size_t)n)
		(*text)[0] = 0;
	fclose(cap->tmp);
}

static bool launch_and_sync(BlkRuntime *rt, BlkFunc *f, const BlkTensor *t, int n,
                            char **printed)
{
	Capture cap;
	if (!printed)
		return blk_launch(f, t, n, NULL) && blk_synchronize(rt);
	if (!capture_begin(&cap))
		return false;
	bool ok = blk_launch(f, t, n, NULL) && blk_synchronize(rt);
	capture_end(&cap, printed);
	return ok;
}

/* Copies every array over (outputs poisoned), launches, copies back every
 * out and inout array.  printed: where the GPU's stdout goes, or NULL. */
static bool gpu_run(BlkRuntime *rt, const Case *c, BlkDType t, Arrays *h, char **printed,
                    char *err)
{
	BlkProgram *p;
	BlkFunc *f = load_func(rt, c, t, &p);
	void *dev[MAX_ARRAYS] = {0};
	BlkTensor ts[MAX_ARRAYS];
	bool ok = f != NULL;
	for (int i = 0; ok && i < h->n; i++)
		ok = blk_mem_alloc(rt, h->h[i]->nbytes, &dev[i]) &&
		     blk_memcpy_htod(rt, dev[i], h->h[i]->data, h->h[i]->nbytes);
	make_tensors(c, t, h, dev, ts);
	ok = ok && launch_and_sync(rt, f, ts, h->n, printed);
	for (int i = 0; ok && i < h->n; i++)
		if (c->a[i].role != 'i')
			ok = blk_memcpy_dtoh(rt, h->h[i]->data, dev[i], h->h[i]->nbytes);
	if (!ok)
		set_err(err, "gpu: ", blk_runtime_last_error(rt));
	for (int i = 0; i < h->n; i++)
		blk_mem_free(rt, dev[i]);
	blk_program_destroy(p);
	return ok;
}


static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;
	return f && fclose(f) == 0 && ok;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 4096);
	if (f && buf && fread(buf, 1, 4095, f) == 0)
		buf[0] = 0;
	if (f)
		fclose(f);
	return buf;
}

/* Assembles ptx for arch with ptxas; its first message into err. */
static bool ptxas_run(const char *ptxas, const char *ptx, const char *arch, char *err)
{
	char dir[] = "/tmp/blk-gpu-features-XXXXXX", cmd[1024], file[64];
	if (!mkdtemp(dir))
		return set_err(err, "ptxas: ", "mkdtemp failed"), false;
	snprintf(file, sizeof file, "%s/k.ptx", dir);
	bool ok = write_file(file, ptx);
	snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s/k.ptx' -o '%s/k.cubin' 2> '%s/err'", ptxas, arch,
	         dir, dir, dir);
	ok = ok && system(cmd) == 0;
	snprintf(file, sizeof file, "%s/err", dir);
	if (!ok) {
		char *msg = read_file(file);
		set_err(err, "ptxas: ", msg && *msg ? msg : "failed");
		free(msg);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "gpu-features: could not remove %s\n", dir);
	return ok;
}

/* Writes ptx to $BLK_GPU_FEATURES_PTX_DIR/CASE.TYPE.ptx when that is set. */
static bool save_ptx(const Case *c, BlkDType t, const char *ptx, char *err)
{
	const char *dir = getenv("BLK_GPU_FEATURES_PTX_DIR");
	if (!dir || !*dir)
		return true;
	char path[1024];
	snprintf(path, sizeof path, "%s/%s.%s.ptx", dir, c->name, c->typed ? blk_dtype_name(t) : "-");
	if (write_file(path, ptx))
		return true;
	set_err(err, "cannot write ", path);
	return false;
}

/* Lowers the case to PTX on an offline runtime and assembles it.
 * *stage: 1 lowered, 2 assembled (or no ptxas: stays 1, *assembled false). */
static bool lower_offline(BlkRuntime *rt, const Case *c, BlkDType t, Arrays *h, int *stage,
                          bool *assembled, char *err)
{
	BlkProgram *p;
	BlkFunc *f = load_func(rt, c, t, &p);
	void *data[MAX_ARRAYS];
	BlkTensor ts[MAX_ARRAYS];
	for (int i = 0; i < h->n; i++)
		data[i] = h->h[i]->data;
	make_tensors(c, t, h, data, ts);
	BlkCompiledInfo info;
	bool ok = f && blk_func_compile(f, ts, h->n, &info);
	*stage = ok;
	*assembled = false;
	if (!ok)
		set_err(err, "lower: ", blk_runtime_last_error(rt));
	if (ok)
		ok = save_ptx(c, t, info.ptx, err);
	const char *ptxas = gpu_test_ptxas();
	if (ok && ptxas) {
		ok = ptxas_run(ptxas, info.ptx, blk_runtime_arch(rt), err);
		*assembled = ok;
		*stage += ok;
	}
	blk_program_destroy(p);
	return ok;
}

/* ---- checking --------------------------------------------------------- */

/* Worst relative error over the case's out and inout arrays; false (with
 * the first bad element in err) on any mismatch.  bool compares bytes, so
 * poison (0xa5) never passes as true. */
static bool compare_all(const Case *c, BlkDType t, Arrays *gpu, Arrays *ref, double *max_rel,
                        char *err)
{
	bool pass = true;
	*max_rel = 0;
	for (int i = 0; i < gpu->n; i++) {
		if (c->a[i].role == 'i')
			continue;
		BlkHostArray *o = gpu->h[i], *r = ref->h[i];
		double *rv = malloc(r->count * sizeof *rv);
		if (!rv)
			return false;
		for (size_t e = 0; e < r->count; e++)
			rv[e] = o->desc.dtype == BLK_BOOL ? ((unsigned char *)r->data)[e] : blk_host_get(r, e);
		double tol = blk_host_default_tol(o->desc.dtype);
		if (c->typed && blk_host_default_tol(t) > tol)
			tol = blk_host_default_tol(t);
		if (c->tol_mult > 1)
			tol *= c->tol_mult;
		if (c->tol_mult < 0)
			tol = 0;
		BlkHostCompare cmp = {0};
		bool ok = o->desc.dtype == BLK_BOOL ? memcmp(o->data, r->data, o->nbytes) == 0
		                                   : blk_host_compare(o, rv, tol, &cmp);
		if (cmp.max_rel > *max_rel)
			*max_rel = cmp.max_rel;
		if (!ok && pass)
			snprintf(err, ERR_LEN, "array %d: %zu bad, first at %zu: %g vs %g; %zu unwritten", i,
			         cmp.mismatches, cmp.first_bad, cmp.bad_out, cmp.bad_ref,
			         blk_host_count_poison(o));
		pass = pass && ok;
		free(rv);
	}
	return pass;
}

/* Offline: every out array written by the interpreter. */
static bool all_written(const Case *c, Arrays *h, char *err)
{
	for (int i = 0; i < h->n; i++) {
		size_t n = c->a[i].role == 'o' ? blk_host_count_poison(h->h[i]) : 0;
		if (n) {
			snprintf(err, ERR_LEN, "interpreter left %zu elements of array %d unwritten", n, i);
			return false;
		}
	}
	return true;
}

/* Every line the interpreter printed must appear in what the GPU printed. */
static bool prints_match(const char *want, const char *got, char *err)
{
	for (const char *l = want; *l;) {
		size_t n = strcspn(l, "\n");
		char line[256];
		snprintf(line, sizeof line, "%.*s", (int)(n < 255 ? n : 255), l);
		if (!got || !strstr(got, line)) {
			snprintf(err, ERR_LEN, "print: GPU output lacks \"%s\" (got \"%.200s\")", line,
			         got ? got : "");
			return false;
		}
		l += n + (l[n] == '\n');
	}
	return true;
}

static bool print_expected(const Case *c, const char *printed, char *err)
{
	if (!c->expect || (printed && strstr(printed, c->expect)))
		return true;
	snprintf(err, ERR_LEN, "print: interpreter output lacks \"%s\" (got \"%.200s\")", c->expect,
	         printed ? printed : "");
	return false;
}

/* ---- one case ----------------------------------------------------------- */

static void shape_label(const Case *c, char *buf, size_t len)
{
	const ArraySpec *s = &c->a[0];
	size_t at = 0;
	buf[0] = 0;
	for (int d = 0; d < s->rank && at < len; d++)
		at += (size_t)snprintf(buf + at, len - at, d ? "x%lld" : "%lld", (long long)s->shape[d]);
}

static void row(const Case *c, BlkDType t, const char *col4, bool pass, const char *err)
{
	char shape[32];
	shape_label(c, shape, sizeof shape);
	printf("| %-28s | %-4s | %-9s | %-13s | %s |%s", c->name, c->typed ? blk_dtype_name(t) : "-",
	       shape, col4, pass ? "PASS" : "FAIL", err[0] ? " " : "");
	for (const char *e = err; *e; e++) /* one row per case: newlines as \n */
		fputs(*e == '\n' ? "\\n" : (char[2]){*e, 0}, stdout);
	putchar('\n');
}

/* The case's C reference on the interpreter's result, if it has one. */
static bool check_reference(const Case *c, BlkDType t, uint64_t seed, const Arrays *ref,
                            char *err)
{
	Arrays in = {0};
	bool ok = !c->check || (arrays_make(&in, c, t, seed) && c->check(&in, ref, err));
	arrays_free(&in);
	return ok;
}

/* Interpreter on ref (prints into *printed when the case prints). */
static bool reference(const Case *c, BlkDType t, uint64_t seed, Arrays *ref, char **printed,
                      int *stage, char *err)
{
	Mem pr = {0};
	if (!mem_open(&pr))
		return false;
	bool ok = interp_run(c, t, ref, pr.f, stage, err);
	mem_close(&pr);
	*printed = pr.text;
	return ok && print_expected(c, pr.text, err) && check_reference(c, t, seed, ref, err);
}

static bool run_gpu_case(BlkRuntime *rt, const Case *c, BlkDType t, uint64_t seed)
{
	Arrays ref = {0}, gpu = {0};
	char err[ERR_LEN] = "", rel[32] = "-";
	char *want = NULL, *got = NULL;
	int stage = 0;
	bool ok = arrays_make(&ref, c, t, seed) && arrays_make(&gpu, c, t, seed);
	ok = ok && reference(c, t, seed, &ref, &want, &stage, err);
	ok = ok && gpu_run(rt, c, t, &gpu, c->expect ? &got : NULL, err);
	double max_rel = 0;
	ok = ok && compare_all(c, t, &gpu, &ref, &max_rel, err);
	if (stage == 2 && (ok || max_rel > 0))
		snprintf(rel, sizeof rel, "%.2e", max_rel);
	ok = ok && (!c->expect || prints_match(want, got, err));
	row(c, t, rel, ok, err);
	free(want);
	free(got);
	arrays_free(&ref);
	arrays_free(&gpu);
	return ok;
}

static bool run_offline_case(BlkRuntime *rt, const Case *c, BlkDType t, uint64_t seed)
{
	Arrays ref = {0};
	char err[ERR_LEN] = "", *printed = NULL;
	int stage = 0, lstage = 0;
	bool assembled = false;
	bool ok = arrays_make(&ref, c, t, seed);
	ok = ok && reference(c, t, seed, &ref, &printed, &stage, err) && all_written(c, &ref, err);
	ok = ok && lower_offline(rt, c, t, &ref, &lstage, &assembled, err);
	char stages[32];
	snprintf(stages, sizeof stages, "%s %s %s %s", stage >= 1 ? "fe" : "--",
	         stage >= 2 ? "in" : "--", lstage >= 1 ? "ptx" : "---", assembled ? "as" : "--");
	row(c, t, stages, ok, err);
	free(printed);
	arrays_free(&ref);
	return ok;
}

/* ---- dynamic sizes: one program over many sizes -------------------------- */

/* A kernel with `dynamic (...)` launched through one program at each set
 * of sizes, each launch checked against the interpreter on its own random
 * inputs with poisoned outputs; an array dim -(i + 1) is size i of the
 * set.  At the end the program must have compiled exactly `classes`
 * kernels (ir.h blk_dynamic_class: one per divisibility class hit). */
enum { MAX_SETS = 12 };
typedef struct Sweep {
	Case c;
	int nsets;
	int64_t sets[MAX_SETS][4];
	unsigned classes;
} Sweep;

#define SZ(i) (-(i) - 1)

static Case at_sizes(const Case *c, const int64_t *set)
{
	Case x = *c;
	for (int i = 0; i < x.narrays; i++)
		for (int d = 0; d < x.a[i].rank; d++)
			if (x.a[i].shape[d] < 0)
				x.a[i].shape[d] = set[-x.a[i].shape[d] - 1];
	return x;
}

static bool sweep_launch(BlkRuntime *rt, BlkFunc *f, const Case *c, BlkDType t, uint64_t seed)
{
	Arrays ref = {0}, gpu = {0};
	char err[ERR_LEN] = "", rel[32] = "-";
	int stage = 0;
	void *dev[MAX_ARRAYS] = {0};
	BlkTensor ts[MAX_ARRAYS];
	char *printed = NULL;
	bool ok = arrays_make(&ref, c, t, seed) && arrays_make(&gpu, c, t, seed);
	ok = ok && reference(c, t, seed, &ref, &printed, &stage, err);
	free(printed);
	for (int i = 0; ok && i < gpu.n; i++)
		ok = blk_mem_alloc(rt, gpu.h[i]->nbytes ? gpu.h[i]->nbytes : 1, &dev[i]) &&
		     blk_memcpy_htod(rt, dev[i], gpu.h[i]->data, gpu.h[i]->nbytes);
	if (ok) {
		make_tensors(c, t, &gpu, dev, ts);
		ok = launch_and_sync(rt, f, ts, gpu.n, NULL);
		for (int i = 0; ok && i < gpu.n; i++)
			if (c->a[i].role != 'i')
				ok = blk_memcpy_dtoh(rt, gpu.h[i]->data, dev[i], gpu.h[i]->nbytes);
		if (!ok)
			set_err(err, "gpu: ", blk_runtime_last_error(rt));
	}
	double max_rel = 0;
	ok = ok && compare_all(c, t, &gpu, &ref, &max_rel, err);
	if (ok)
		snprintf(rel, sizeof rel, "%.2e", max_rel);
	row(c, t, rel, ok, err);
	for (int i = 0; i < gpu.n; i++)
		blk_mem_free(rt, dev[i]);
	arrays_free(&ref);
	arrays_free(&gpu);
	return ok;
}

static const Sweep sweeps[] = {
	/* NN matmul, every size dynamic: block multiples, ragged, size 1 */
	{CASE("dyn_matmul", true,
	      "kernel dyn_matmul[T = f32, BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 3](\n"
	      "    a: in  T[M, K] block (BM, K)  index (i, j) -> (i, 0),\n"
	      "    b: in  T[K, N] block (K, BN)  index (i, j) -> (0, j),\n"
	      "    c: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	      ") dynamic (M, N, K) grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	      "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	      "        acc + dot(a[:, ds(k * BK, BK)], b[ds(k * BK, BK), :])\n"
	      "    };\n"
	      "    c[...] = acc.astype(T);\n"
	      "}\n",
	      A2('i', DT_T, SZ(0), SZ(2)), A2('i', DT_T, SZ(2), SZ(1)), A2('o', DT_T, SZ(0), SZ(1))),
	 /* classes (M, N, K), of the candidates 16 and 64 (M, N) and 16 and
	  * 32 (K: the ds size): (64,64,32) twice, (1,1,1) twice, (16,16,16),
	  * (M = 1 compiled in, 64, 32): 4 */
	 6, {{128, 192, 64}, {256, 64, 128}, {130, 70, 33}, {67, 95, 129}, {48, 80, 16}, {1, 64, 96}},
	 4},
	/* a linear layer as served: x @ w.T + bias, relu; only the batch M
	 * dynamic (K, N compiled in) */
	{CASE("dyn_linear", true,
	      "kernel dyn_linear[T = f32, BM = 64, BN = 64, BK = 32](\n"
	      "    x: in  T[M, K] block (BM, K)  index (i, j) -> (i, 0),\n"
	      "    w: in  T[N, K] block (BN, K)  index (i, j) -> (j, 0),\n"
	      "    bias: in T[N] block (BN) index (i, j) -> (j),\n"
	      "    y: out T[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
	      ") dynamic (M) grid (cdiv(M, BM), cdiv(N, BN)) {\n"
	      "    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
	      "        acc + x[:, ds(k * BK, BK)] @ w[:, ds(k * BK, BK)].T\n"
	      "    };\n"
	      "    y[...] = max(acc + bias[...].astype(f32)[None, :], 0.0).astype(T);\n"
	      "}\n",
	      A2('i', DT_T, SZ(0), 96), A2('i', DT_T, 80, 96), A1('i', DT_T, 80), A2('o', DT_T, SZ(0), 80)),
	 /* M (candidates 16, 64): 1 compiled in, 3/17/100/1000 (none),
	  * 64/128/192 (64) */
	 8, {{1}, {3}, {17}, {64}, {100}, {128}, {192}, {1000}},
	 3},
	/* rows of a softmax, rows dynamic; a 3-axis grid with the batch */
	{CASE("dyn_softmax", true,
	      "kernel dyn_softmax[T = f32, BR = 4](\n"
	      "    x: in  T[B, R, 128] block (None, BR, 128) index (b, i) -> (b, i, 0),\n"
	      "    y: out T[B, R, 128] block (None, BR, 128) index (b, i) -> (b, i, 0),\n"
	      ") dynamic (B, R) grid (B, cdiv(R, BR)) {\n"
	      "    let v = x[...].astype(f32);\n"
	      "    let e = exp(v - max(v, axis = 1)[:, None]);\n"
	      "    y[...] = (e / sum(e, axis = 1)[:, None]).astype(T);\n"
	      "}\n",
	      A3('i', DT_T, SZ(0), SZ(1), 128), A3('o', DT_T, SZ(0), SZ(1), 128)),
	 /* (B, R) of 16 and (R) 4: (1,1) twice, (B = 1, 1), (16,16), (B = 1, 16) */
	 5, {{3, 7}, {1, 5}, {16, 64}, {5, 9}, {1, 32}},
	 4},
	/* a 4-axis grid (the last two share CUDA z), its extents dynamic */
	{CASE("dyn_grid4", false,
	      "kernel dyn_grid4(\n"
	      "    x: in  f32[A, B, C, D] block (None, None, None, None) index (a, b, c, d) -> (a, b, c, d),\n"
	      "    y: out f32[A, B, C, D] block (None, None, None, None) index (a, b, c, d) -> (a, b, c, d),\n"
	      ") dynamic (A, B, C, D) grid (A, B, C, D) {\n"
	      "    y[...] = x[...] * (program_id(3) + 1).astype(f32) + (program_id(2) * 100 + num_programs(3)).astype(f32);\n"
	      "}\n",
	      A4('i', BLK_F32, SZ(0), SZ(1), SZ(2), SZ(3)), A4('o', BLK_F32, SZ(0), SZ(1), SZ(2), SZ(3))),
	 /* all of class 1 (strides too: none a multiple of 16), then B = 1 */
	 3, {{2, 3, 5, 7}, {3, 2, 7, 5}, {4, 1, 3, 6}},
	 2},
	/* a seq axis accumulating in scratch over a dynamic count of blocks */
	{CASE("dyn_seq", false,
	      "kernel dyn_seq[BK = 32](\n"
	      "    x: in  f32[R, K] block (None, BK) index (r, k) -> (r, k),\n"
	      "    y: out f32[R] block (None) index (r, k) -> (r),\n"
	      "    acc: scratch f32[BK],\n"
	      ") dynamic (R, K) grid (R, seq cdiv(K, BK)) {\n"
	      "    when program_id(1) == 0 { acc[...] = zeros((BK,), f32); }\n"
	      "    acc[...] = acc[...] + x[...];\n"
	      "    when program_id(1) == num_programs(1) - 1 { y[...] = sum(acc[...]); }\n"
	      "}\n",
	      A2('i', BLK_F32, SZ(0), SZ(1)), A1('o', BLK_F32, SZ(0))),
	 /* (R, K) of 16 and (K) 32: (1,1) twice, (1,32), (16,32) */
	 4, {{5, 100}, {7, 64}, {9, 33}, {16, 320}},
	 3},
	/* attention with dynamic batch*heads and sequence length: the
	 * sequence's masks and loop bounds come from arguments */
	{CASE("dyn_attention", true,
	      "kernel dyn_attention[T = f32, BQ = 64, BK = 64, D = 64](\n"
	      "    q: in  T[BH, S, D] block (None, BQ, D) index (i, h) -> (h, i, 0),\n"
	      "    k: in  T[BH, S, D] block (None, S, D)  index (i, h) -> (h, 0, 0),\n"
	      "    v: in  T[BH, S, D] block (None, S, D)  index (i, h) -> (h, 0, 0),\n"
	      "    o: out T[BH, S, D] block (None, BQ, D) index (i, h) -> (h, i, 0),\n"
	      ") dynamic (BH, S) grid (cdiv(S, BQ), BH) {\n"
	      "    let x = q[...];\n"
	      "    let (m, l, acc) = fori_loop(0, cdiv(S, BK), (full((BQ,), -inf, f32), zeros((BQ,), f32), zeros((BQ, D), f32))) |j, (m, l, acc)| {\n"
	      "        let cols = expand_dims(j * BK + iota(BK), 0);\n"
	      "        let s = where(cols < S, dot(x, k[ds(j * BK, BK), :].T) * 0.125, -inf);\n"
	      "        let m_new = max(m, max(s, axis = 1));\n"
	      "        let p = exp(s - expand_dims(m_new, 1));\n"
	      "        let alpha = exp(m - m_new);\n"
	      "        (m_new, l * alpha + sum(p, axis = 1), acc * expand_dims(alpha, 1) + dot(p.astype(T), v[ds(j * BK, BK), :]))\n"
	      "    };\n"
	      "    o[...] = (acc / expand_dims(l, 1)).astype(T);\n"
	      "}\n",
	      A3('i', DT_T, SZ(0), SZ(1), 64), A3('i', DT_T, SZ(0), SZ(1), 64), A3('i', DT_T, SZ(0), SZ(1), 64),
	      A3('o', DT_T, SZ(0), SZ(1), 64)),
	 /* (BH, S) of 16 and (S) 64: (1,64) twice, (1,1), (BH = 1, 1) */
	 4, {{2, 128}, {3, 100}, {4, 256}, {1, 77}},
	 3},
};

/* Specializations p made, compiled or read from the disk cache: a count
 * that does not depend on what the user's BLK_CACHE_DIR already holds
 * (compiles alone drop to 0 when a warm cache serves them). */
static unsigned specializations(const BlkProgram *p)
{
	unsigned compiles = 0;
	if (!p)
		return 0;
	blk_program_cache_stats(p, &compiles, NULL);
	return compiles + blk_program_disk_hits(p);
}

/* dyn_linear (f32) launched at M = 1 .. 100 through one program: as many
 * specializations as classes of M (its candidates are 16 and BM = 64: 1 compiled
 * in; multiples of 64, of 16; the rest), the outputs checked only by the
 * sweep above. */
static bool count_classes(BlkRuntime *rt)
{
	const Case *c = &sweeps[1].c;
	BlkProgram *p;
	BlkFunc *f = load_func(rt, c, BLK_F32, &p);
	void *dev[4] = {0};
	int64_t shapes[4][2] = {{100, 96}, {80, 96}, {80, 1}, {100, 80}};
	bool ok = f != NULL;
	for (int i = 0; ok && i < 4; i++)
		ok = blk_mem_alloc(rt, (size_t)(shapes[i][0] * shapes[i][1] * 4), &dev[i]);
	for (int64_t m = 1; ok && m <= 100; m++) {
		int64_t x[2] = {m, 96}, y[2] = {m, 80};
		BlkTensor ts[4] = {
			blk_tensor_make(dev[0], BLK_DTYPE_F32, 2, x), blk_tensor_make(dev[1], BLK_DTYPE_F32, 2, shapes[1]),
			blk_tensor_make(dev[2], BLK_DTYPE_F32, 1, shapes[2]), blk_tensor_make(dev[3], BLK_DTYPE_F32, 2, y),
		};
		ok = blk_launch(f, ts, 4, NULL);
	}
	ok = ok && blk_synchronize(rt);
	unsigned compiles = specializations(p);
	printf("| %-28s | f32  | %u specializations for M = 1..100 (4 classes) | %s |%s%s\n", "dyn_linear_count", compiles,
	       ok && compiles == 4 ? "PASS" : "FAIL", ok ? "" : " ", ok ? "" : blk_runtime_last_error(rt));
	for (int i = 0; i < 4; i++)
		blk_mem_free(rt, dev[i]);
	blk_program_destroy(p);
	return ok && compiles == 4;
}

static int run_sweeps(BlkRuntime *rt, int *total)
{
	int failed = 0;
	uint64_t seed = 9001;
	const char *only = getenv("BLK_GPU_CASES");
	for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
		const Sweep *w = &sweeps[i];
		if (only && *only && !strstr(w->c.name, only))
			continue;
		for (int j = 0; j < (w->c.typed ? 3 : 1); j++) {
			BlkDType t = j == 0 ? BLK_F32 : j == 1 ? BLK_F16 : BLK_BF16;
			BlkProgram *p;
			BlkFunc *f = load_func(rt, &w->c, t, &p);
			bool ok = f != NULL;
			for (int s = 0; f && s < w->nsets; s++, seed += 8) {
				Case c = at_sizes(&w->c, w->sets[s]);
				ok &= sweep_launch(rt, f, &c, t, seed);
				(*total)++;
			}
			unsigned compiles = specializations(p);
			bool counted = compiles == w->classes;
			printf("| %-28s | %-4s | %u specializations for %d sizes (%u classes expected) | %s |\n", w->c.name,
			       w->c.typed ? blk_dtype_name(t) : "-", compiles, w->nsets, w->classes,
			       f && counted ? "PASS" : "FAIL");
			if (!f)
				printf("  load: %s\n", blk_runtime_last_error(rt));
			failed += !ok || !counted || !f;
			blk_program_destroy(p);
		}
	}
	if (!only || !*only || strstr("dyn_linear_count", only))
		failed += !count_classes(rt);
	return failed;
}

/* ---- main --------------------------------------------------------------- */

static const BlkDType float_types[] = {BLK_F32, BLK_F16, BLK_BF16};

static int run_all(BlkRuntime *rt, bool offline)
{
	int failed = 0, total = 0;
	uint64_t seed = 7;
	const char *only = getenv("BLK_GPU_CASES"); /* a part of the case names to run */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int nt = cases[i].typed ? 3 : 1;
		for (int j = 0; j < nt; j++, seed += 16) {
			if (only && *only && !strstr(cases[i].name, only))
				continue;
			total++;
			bool ok = offline ? run_offline_case(rt, &cases[i], float_types[j], seed)
			                  : run_gpu_case(rt, &cases[i], float_types[j], seed);
			failed += !ok;
		}
	}
	printf("\n%d of %d cases passed (%zu kernels)%s\n", total - failed, total,
	       sizeof cases / sizeof cases[0], offline ? ", offline" : "");
	return failed;
}

static void header(const char *col4)
{
	printf("| %-28s | type | shape     | %-13s | result |\n", "case", col4);
	printf("| ---------------------------- | ---- | --------- | ------------- | ------ |\n");
}

static int main_offline(void)
{
	char err[512] = "";
	const char *arch = getenv("BLK_GPU_FEATURES_ARCH");
	BlkRuntime *rt = blk_runtime_create_offline(arch && *arch ? arch : "sm_90a", err, sizeof err);
	if (!rt) {
		fprintf(stderr, "gpu-features: %s\n", err);
		return 1;
	}
	const char *ptxas = gpu_test_ptxas();
	printf("offline: %s; ptxas: %s\n", blk_runtime_device_name(rt), ptxas ? ptxas : "(none)");
	printf("stages: fe = frontend, in = interpreter, ptx = lowered, as = assembled\n\n");
	header("stages");
	int failed = run_all(rt, true);
	blk_runtime_destroy(rt);
	return failed ? 1 : 0;
}

int main(void)
{
	const char *off = getenv("BLK_GPU_FEATURES_OFFLINE");
	if (off && *off && strcmp(off, "0") != 0)
		return main_offline();
	int status;
	BlkRuntime *rt = gpu_test_runtime("gpu-features", &status);
	if (!rt)
		return status;
	header("max rel");
	int failed = run_all(rt, false), swept = 0;
	int sweep_failed = run_sweeps(rt, &swept);
	printf("\ndynamic sizes: %d launches, %d sweeps failed\n", swept, sweep_failed);
	failed += sweep_failed;
	blk_runtime_destroy(rt);
	return failed ? 1 : 0;
}
