/* kernel_fuzz.c - a differential fuzzer of well-typed kernels.
 *
 * Each round generates a random kernel that the checker must accept: a 1-D
 * or 2-D grid over ragged arrays in T (f32, f16 or bf16) and i32, whose body
 * is a random tree of elementwise math (pow and ** included), comparisons
 * and `where`, casts across dtypes, reductions with keepdims broadcast
 * back, argmax/argmin, scans (f32 and i32, either axis, reversed or
 * not), reshapes and parts of tiles (slices, negative indices) broadcast
 * back, `fori_loop` carries, i32 floor division and modulo by divisors that are sometimes 0
 * or -1, i32 `& | ^ ~` and shifts by amounts from -4 to 35, i32
 * reductions, bool logic, `seq` grid axes, `when`, `dot` and `.T` (square
 * blocks), shifted `load(x.at[ds(1, B)], other=)` windows past the block,
 * gathers at i32 tiles of indices (some masked), i8/u8 arithmetic (wrapping,
 * saturating casts, scans) widened back to i32, inputs through f8e4m3 and
 * f8e5m2 (rounding, saturation, `where` on fp8) and back, `atomic_add`,
 * `atomic_max` or `atomic_min` into an inout f32
 * vector, and scoped scratch.  Then, with random launch sizes and inputs:
 *   1. the frontend compiles it (a rejection is a finding: the generator
 *      only writes well-typed kernels);
 *   2. the interpreter runs it and writes every output element;
 *   3. the GPU lowering compiles it to PTX for sm_90a (offline runtime)
 *      and ptxas, where installed, assembles it;
 *   4. with --gpu, the GPU runs it and every output must equal the
 *      interpreter's within the dtype's tolerance.
 * A finding prints the kernel, its sizes and seed, and makes the exit
 * status 1; `--seed S --count 1` reproduces it.
 *
 * usage: kernel-fuzz [--seed S] [--count N] [--seconds T] [--gpu] [--no-ptxas]
 *                    [--print]
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blk.h"
#include "gpu_test.h"
#include "frontend/frontend.h"
#include "interp/interp.h"
#include "tools/hostdata.h"

enum { MAX_SRC = 16384, NARR = 5 };

/* ---- random numbers: splitmix64 -------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int pick(int n) { return (int)(rnd() % (uint64_t)n); }

/* ---- the kernel text ----------------------------------------------------- */

typedef struct Gen {
	char src[MAX_SRC];
	size_t n;
	int rank;        /* 1 or 2 */
	int b0, b1;      /* block dims (b1: rank 2) */
	int loops;       /* fori_loop nesting: the carries in scope are acc0.. */
	bool in_loop_i;  /* a loop index `t<loops>` is in scope */
} Gen;

static void out(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(g->src + g->n, sizeof g->src - g->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		g->n = g->n + (size_t)k < sizeof g->src ? g->n + (size_t)k : sizeof g->src - 1;
}

static void fexpr(Gen *g, int depth);
static void iexpr(Gen *g, int depth);

/* An f32 tile of the block's shape. */
/* Reads beyond a plain x[...]: a shifted window that sticks out of the
 * block (masked, the fill where it does), and a transpose of a square one. */
static bool fleaf_read(Gen *g)
{
	int last = g->rank == 2 ? g->b1 : g->b0;
	if (last >= 2 && pick(2)) {
		out(g, "load(%s.at[%sds(1, %s)], other = %d.5).astype(f32)", pick(2) ? "x" : "y",
		    g->rank == 2 ? ":, " : "", g->rank == 2 ? "B1" : "B0", pick(3) - 1);
		return true;
	}
	if (g->rank == 2 && g->b0 == g->b1 && pick(2)) {
		out(g, "%s[...].T.astype(f32)", pick(2) ? "x" : "y");
		return true;
	}
	/* a gather at i32 tiles of indices, some -1 (masked, the fill) */
	if (g->rank == 2)
		out(g, "load(%s.at[(k * 3) %% B0 - %d, k %% B1], other = 0.5).astype(f32)", pick(2) ? "x" : "y", pick(2));
	else
		out(g, "%s[(k * 3) %% B0 - %d].astype(f32)", pick(2) ? "x" : "y", pick(2));
	return true;
}

/* An input through an fp8 dtype and back: exact scalings of a and b only,
 * so kernel and interpreter round the same f32 (their conversions agree
 * bit for bit); `where` moves the bytes as they are. */
static void fleaf_fp8(Gen *g)
{
	static const char *f8[] = { "f8e4m3", "f8e5m2" };
	const char *t = f8[pick(2)];
	int s = 1 << pick(12);
	if (pick(3) == 0)
		out(g, "where(a > b, (a * %d.0).astype(%s), full((%s), %d.5, %s)).astype(f32)", s, t,
		    g->rank == 2 ? "B0, B1" : "B0,", pick(500), t);
	else
		out(g, "(%s * %d.0).astype(%s).astype(f32)", pick(2) ? "a" : "b", s, t);
}

static void fleaf(Gen *g)
{
	if (pick(6) == 0 && fleaf_read(g))
		return;
	if (pick(12) == 0) {
		fleaf_fp8(g);
		return;
	}
	switch (pick(g->loops ? 7 : 6)) {
	case 0: out(g, "a"); break;
	case 1: out(g, "b"); break;
	case 2: out(g, "(a * 0.0 + %d.%d)", pick(4), pick(10)); break;
	case 3: out(g, "k.astype(f32)"); break;
	case 4: out(g, "(a * 0.0 + program_id(0).astype(f32))"); break;
	case 5: out(g, "(a + %s)", g->rank == 2 ? "max(b, axis = 1, keepdims = true)"
	                                        : "max(b, axis = 0, keepdims = true)");
		break;
	default: out(g, "acc%d", pick(g->loops)); break;
	}
}

static void fexpr(Gen *g, int depth)
{
	if (depth <= 0) {
		fleaf(g);
		return;
	}
	static const char *bin[] = { "+", "-", "*" };
	static const char *un[] = { "exp(min(%s, 2.0))", "abs(%s)", "sqrt(abs(%s))", "tanh(%s)",
	                            "(%s).astype(bf16).astype(f32)", "(%s).astype(f16).astype(f32)",
	                            "(-%s)", "(%s + ((a * 8.0).astype(i32) %% 5).astype(f32))",
	                            "pow(abs(%s) * 0.5 + 0.5, 1.5)", "(min(abs(%s), 4.0) * 0.25 + 0.5) ** -3.0" };
	int c = pick(9);
	if (c <= 2) {
		out(g, "(");
		fexpr(g, depth - 1);
		out(g, " %s ", bin[pick(3)]);
		fexpr(g, depth - 1);
		out(g, ")");
	} else if (c == 3) {
		out(g, "%s(", pick(2) ? "max" : "min");
		fexpr(g, depth - 1);
		out(g, ", ");
		fexpr(g, depth - 1);
		out(g, ")");
	} else if (c == 4) {
		out(g, "where(");
		fexpr(g, depth - 1);
		out(g, " %s ", pick(2) ? ">" : "<=");
		fexpr(g, depth - 1);
		if (pick(3) == 0) /* bool logic on exact inputs */
			out(g, " %s (k > %d)", pick(2) ? "&&" : "||", pick(5) - 2);
		out(g, ", ");
		fexpr(g, depth - 1);
		out(g, ", ");
		fexpr(g, depth - 1);
		out(g, ")");
	} else if (c == 5) {
		char inner[MAX_SRC];
		Gen sub = *g;
		sub.n = 0;
		fexpr(&sub, depth - 1);
		snprintf(inner, sizeof inner, "%s", sub.src);
		out(g, un[pick(10)], inner);
	} else if (c == 6) {
		out(g, "(");
		fexpr(g, depth - 1);
		out(g, " / (abs(");
		fexpr(g, depth - 1);
		out(g, ") + 1.0))");
	} else if (c == 7 && g->loops < 2) {
		int l = g->loops;
		out(g, "fori_loop(%d, %d, ", pick(2), 1 + pick(3));
		fexpr(g, depth - 1);
		out(g, ") |t%d, acc%d| { acc%d * 0.5 + ", l, l, l);
		g->loops++;
		fexpr(g, depth - 1);
		g->loops--;
		out(g, " }");
	} else if (pick(4) == 0) { /* through shared memory: a reshape round trip, or a part broadcast back */
		bool part = pick(2);
		out(g, part ? "(a * 0.0 + (" : "(");
		fexpr(g, depth - 1);
		int j = pick(g->b1 ? g->b1 : 1);
		if (part && g->rank == 2 && pick(2))
			out(g, ")[:, %d:%d])", j, j + 1);
		else if (part && g->rank == 2)
			out(g, ")[:, -1:])");
		else if (part)
			out(g, ")[%d])", pick(g->b0) - (pick(2) ? g->b0 : 0));
		else if (g->rank == 2)
			out(g, ").reshape(B0 * B1).reshape(B0, B1)");
		else
			out(g, ").reshape(1, -1).reshape(B0)");
	} else if (pick(3) == 0) { /* a scan, either way along either axis */
		static const char *scans[] = { "cumsum", "cummax", "cummin" };
		out(g, "%s(", scans[pick(3)]);
		fexpr(g, depth - 1);
		out(g, ", axis = %d, reverse = %s)", g->rank == 2 ? pick(2) : 0, pick(2) ? "true" : "false");
	} else if (g->rank == 2) {
		out(g, "(a * 0.0 + %s(", pick(2) ? "sum" : "min");
		fexpr(g, depth - 1);
		out(g, ", axis = %d, keepdims = true))", pick(2));
	} else {
		out(g, "(a * 0.0 + sum(");
		fexpr(g, depth - 1);
		out(g, ", axis = 0, keepdims = true))");
	}
}

/* An i8 or u8 tile (dt) of the block's shape: every op computes in i32 and
 * wraps to 8 bits, floats saturate into it, i32 keeps its low byte. */
static void bexpr(Gen *g, int depth, const char *dt)
{
	if (depth <= 0) {
		switch (pick(4)) {
		case 0: out(g, "k.astype(%s)", dt); break;
		case 1: out(g, "(%s * 150.0).astype(%s)", pick(2) ? "a" : "b", dt); break;
		case 2: out(g, "((k * 37) ^ %d).astype(%s)", pick(256), dt); break;
		default: out(g, "(a > b).astype(%s)", dt); break;
		}
		return;
	}
	static const char *ops[] = { "+", "-", "*", "&", "|", "^", "~/", "%", "<<", ">>" };
	static const char *un[] = { "abs(%s)", "(-%s)", "(~%s)", "(%s + 7)", "(%s * 3 - 100)" };
	char sub[2][16];
	switch (pick(7)) {
	case 0: case 1: case 2:
		out(g, "(");
		bexpr(g, depth - 1, dt);
		out(g, " %s ", ops[pick(10)]);
		bexpr(g, depth - 1, dt);
		out(g, ")");
		return;
	case 3: {
		const char *f = un[pick(5)];
		const char *at = strstr(f, "%s");
		snprintf(sub[0], sizeof sub[0], "%.*s", (int)(at - f), f);
		snprintf(sub[1], sizeof sub[1], "%s", at + 2);
		out(g, "%s", sub[0]);
		bexpr(g, depth - 1, dt);
		out(g, "%s", sub[1]);
		return;
	}
	case 4:
		out(g, "%s(", pick(2) ? "min" : "max");
		bexpr(g, depth - 1, dt);
		out(g, ", ");
		bexpr(g, depth - 1, dt);
		out(g, ")");
		return;
	case 5: /* through the other 8-bit dtype */
		out(g, "(");
		bexpr(g, depth - 1, strcmp(dt, "i8") == 0 ? "u8" : "i8");
		out(g, ").astype(%s)", dt);
		return;
	default: /* scans wrap as they go */
		out(g, "%s(", pick(2) ? "cumsum" : "cummax");
		bexpr(g, depth - 1, dt);
		out(g, ", axis = %d, reverse = %s)", g->rank == 2 ? pick(2) : 0, pick(2) ? "true" : "false");
		return;
	}
}

/* An i32 tile of the block's shape. */
static void iexpr(Gen *g, int depth)
{
	if (depth <= 0) {
		switch (pick(4)) {
		case 0: out(g, "k"); break;
		case 1: out(g, "(k * 0 + %d)", pick(7) - 3); break;
		case 2: out(g, "(k * 0 + %s)", g->rank == 2 ? "expand_dims(iota(B0), 1)" : "iota(B0)"); break;
		default: out(g, "(a > b).astype(i32)"); break;
		}
		return;
	}
	int c = pick(8);
	if (c == 7) { /* 8-bit integer arithmetic, widened back */
		out(g, "(");
		bexpr(g, depth - 1, pick(2) ? "i8" : "u8");
		out(g, ").astype(i32)");
		return;
	}
	if (c == 6 && pick(4) == 0) { /* argmax/argmin: of exact values, so the GPU's ties are the same */
		static const char *arg[] = { "a", "b", "(a - b)", "where(a > 0.5, nan, b)" };
		out(g, "(k * 0 + %s(%s", pick(2) ? "argmax" : "argmin", arg[pick(4)]);
		if (g->rank == 2)
			out(g, ", axis = %d, keepdims = true))", pick(2));
		else
			out(g, "))");
		return;
	}
	if (c == 6 && pick(3) == 0) { /* i32 scans are exact too, products wrap */
		static const char *scans[] = { "cumsum", "cumprod", "cummax", "cummin" };
		out(g, "%s(", scans[pick(4)]);
		iexpr(g, depth - 1);
		out(g, ", axis = %d, reverse = %s)", g->rank == 2 ? pick(2) : 0, pick(2) ? "true" : "false");
		return;
	}
	if (c == 6) { /* i32 reductions are exact: broadcast back */
		out(g, "(k * 0 + %s(", pick(2) ? "sum" : "max");
		iexpr(g, depth - 1);
		out(g, ", axis = %d, keepdims = true))", g->rank == 2 ? pick(2) : 0);
		return;
	}
	if (c <= 1) {
		static const char *ops[] = { "+", "-", "*", "&", "|", "^", "~/", "%", "<<", ">>" };
		int o = pick(10);
		out(g, "(%s", pick(4) ? "" : "~");
		iexpr(g, depth - 1);
		out(g, " %s ", ops[o]);
		if (o >= 8) { /* shift amounts in -4..35: outside [0, 32) included */
			out(g, "(");
			iexpr(g, depth - 1);
			out(g, " %% 40 - 4)");
		} else if (o >= 6) { /* divisors in -2..2: 0 and -1 included */
			out(g, "(");
			iexpr(g, depth - 1);
			out(g, " %% 5 - 2)");
		} else {
			iexpr(g, depth - 1);
		}
		out(g, ")");
	} else if (c == 2) {
		out(g, "%s(", pick(2) ? "max" : "min");
		iexpr(g, depth - 1);
		out(g, ", ");
		iexpr(g, depth - 1);
		out(g, ")");
	} else if (c == 3) {
		out(g, "where(");
		iexpr(g, depth - 1);
		out(g, " != 0, ");
		iexpr(g, depth - 1);
		out(g, ", abs(");
		iexpr(g, depth - 1);
		out(g, "))");
	} else if (c == 4) { /* exact inputs only: a cast of approximate math may flip */
		out(g, "(%s * 8.0).astype(i32)", pick(2) ? "a" : "b");
	} else {
		out(g, "(k + (program_id(0) ~/ (program_id(0) - %d)) + cdiv(program_id(0), %d))",
		    pick(3), pick(3));
	}
}

static const char *dtypes[] = { "f32", "f16", "bf16" };

/* Writes a kernel named fz; *t gets T's dtype index. */
static void generate(Gen *g, int *t, bool *atomics)
{
	static const int blocks[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
	memset(g, 0, sizeof *g);
	g->rank = 1 + pick(2);
	g->b0 = blocks[pick(g->rank == 2 ? 7 : 8)];
	g->b1 = g->rank == 2 ? blocks[pick(7)] : 1;
	if (g->rank == 2 && pick(3) == 0) /* square: dot and .T */
		g->b0 = g->b1 = blocks[4 + pick(3)];
	*t = pick(3);
	*atomics = g->rank == 2 && pick(3) == 0;
	bool dot = g->rank == 2 && g->b0 == g->b1 && g->b0 >= 16 && pick(2);
	const char *dims = g->rank == 2 ? "[M, N] block (B0, B1) index (i, j) -> (i, j)"
	                                : "[N] block (B0) index (i) -> (i)";
	out(g, "kernel fz[T = %s, B0 = %d", dtypes[*t], g->b0);
	if (g->rank == 2)
		out(g, ", B1 = %d", g->b1);
	out(g, ", num_warps = %d](\n", 1 << pick(4));
	out(g, "    x: in T%s,\n    y: in T%s,\n    n: in i32%s,\n", dims, dims, dims);
	out(g, "    o: out T%s,\n    q: out i32%s,\n", dims, dims);
	if (*atomics)
		out(g, "    s: inout f32[M] block (B0) index (i, j) -> (i),\n");
	/* a seq axis runs its programs in order inside one CTA: same results */
	const char *seq = pick(4) == 0 ? "seq " : "";
	/* half the kernels take some sizes as run-time arguments */
	static const char *const dyn2[] = { "", ") dynamic (M", ") dynamic (N", ") dynamic (M, N" };
	const char *dyn = g->rank == 2 ? dyn2[pick(4)] : pick(2) ? ") dynamic (N" : "";
	if (g->rank == 2)
		out(g, "%s) grid (cdiv(M, B0), %scdiv(N, B1)) {\n", dyn, seq);
	else
		out(g, "%s) grid (%scdiv(N, B0)) {\n", dyn, seq);
	out(g, "    let a = x[...].astype(f32);\n    let b = y[...].astype(f32);\n");
	out(g, "    let k = n[...];\n");
	int depth = 1 + pick(3);
	out(g, "    let r = ");
	fexpr(g, depth);
	out(g, ";\n");
	if (dot)
		out(g, "    let r2 = r + dot(x[...], y[...].T) * 0.125;\n");
	else
		out(g, "    let r2 = r;\n");
	if (pick(3) == 0) {
		out(g, "    scoped (w: f32%s) {\n        w[...] = r2;\n", g->rank == 2 ? "[B0, B1]" : "[B0]");
		out(g, "        o[...] = (w[...] + 1.0).astype(T);\n    }\n");
	} else {
		out(g, "    o[...] = r2.astype(T);\n");
	}
	out(g, "    q[...] = ");
	iexpr(g, 1 + pick(3));
	out(g, ";\n");
	if (pick(3) == 0) {
		out(g, "    when program_id(0) %% 2 == %d {\n        q[...] = k;\n    }", pick(2));
		if (pick(2))
			out(g, " else {\n        o[...] = b.astype(T);\n    }");
		out(g, "\n");
	}
	if (*atomics) /* max and min of f32 end the same whatever the order */
		out(g, "    atomic_%s(s, %s(r2, axis = 1));\n", (const char *[]){ "add", "max", "min" }[pick(3)],
		    (const char *[]){ "sum", "max", "min" }[pick(3)]);
	out(g, "}\n");
}

/* ---- one round ------------------------------------------------------------- */

typedef struct Round {
	Gen g;
	int t;
	bool atomics;
	int64_t m, n;
	BlkHostArray *h[NARR + 1]; /* x y n o q [s] */
	BlkHostArray *ref[NARR + 1];
	int narr;
	char err[2048];
} Round;

static BlkDType dtype_of(int t)
{
	static const BlkDType d[] = { BLK_F32, BLK_F16, BLK_BF16 };
	return d[t];
}

static void make_arrays(Round *r, uint64_t seed)
{
	int64_t shape[2] = { r->m, r->n };
	int rank = r->g.rank;
	const int64_t *sh = rank == 2 ? shape : &shape[1];
	BlkDType t = dtype_of(r->t);
	BlkDType dts[] = { t, t, BLK_I32, t, BLK_I32 };
	r->narr = r->atomics ? 6 : 5;
	for (int i = 0; i < 5; i++)
		r->h[i] = blk_host_new(dts[i], rank, sh);
	if (r->atomics)
		r->h[5] = blk_host_new(BLK_F32, 1, &shape[0]);
	for (int i = 0; i < r->narr; i++) {
		blk_host_fill_random(r->h[i], seed + (uint64_t)i);
		if (i == 3 || i == 4)
			blk_host_poison(r->h[i]);
	}
}

static void free_arrays(Round *r)
{
	for (int i = 0; i < r->narr; i++) {
		blk_host_free(r->h[i]);
		blk_host_free(r->ref[i]);
		r->h[i] = r->ref[i] = NULL;
	}
}

static bool fail(Round *r, const char *stage, const char *msg)
{
	snprintf(r->err, sizeof r->err, "%s: %s", stage, msg);
	return false;
}

/* 1 and 2: the frontend and the interpreter. */
static bool interpret(Round *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, mem, 5);
	BlkSource *src = blk_source_from_string(a, "fz.blk", r->g.src, r->g.n);
	BlkModule *m = blk_compile_source(a, d, src, NULL, 0);
	BlkArrayDesc descs[NARR + 1];
	void *data[NARR + 1];
	for (int i = 0; i < r->narr; i++)
		descs[i] = r->h[i]->desc, data[i] = r->h[i]->data;
	FILE *null = fopen("/dev/null", "w");
	bool ok = m && blk_interp_run(m->first, descs, data, r->narr, null, d);
	if (null)
		fclose(null);
	fclose(mem);
	if (!ok)
		fail(r, m ? "interpreter" : "frontend", text);
	free(text);
	blk_arena_destroy(a);
	for (int i = 3; ok && i < 5; i++)
		if (blk_host_count_poison(r->h[i]))
			ok = fail(r, "interpreter", "an output element was never written");
	return ok;
}


static bool ptxas_ok(Round *r, const char *ptxas, const char *ptx, const char *arch)
{
	char dir[] = "/tmp/blk-kernel-fuzz-XXXXXX", path[128], cmd[512];
	if (!mkdtemp(dir))
		return fail(r, "ptxas", "mkdtemp failed");
	snprintf(path, sizeof path, "%s/k.ptx", dir);
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(ptx, f) >= 0;
	if (f)
		fclose(f);
	snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o '%s/k.cubin' > '%s/log' 2>&1", ptxas, arch,
	         path, dir, dir);
	ok = ok && system(cmd) == 0;
	if (!ok)
		fail(r, "ptxas", "refused the PTX (rerun with --print to see the kernel)");
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "kernel-fuzz: could not remove %s\n", dir);
	return ok;
}

static BlkFunc *load(BlkRuntime *rt, Round *r, BlkProgram **p)
{
	char *src = strndup(r->g.src, r->g.n);
	*p = blk_program_load_source(rt, "fz.blk", src, NULL, 0);
	free(src);
	return *p ? blk_program_kernel(*p, "fz") : NULL;
}

static void tensors(Round *r, void *const *data, BlkTensor *ts)
{
	for (int i = 0; i < r->narr; i++)
		ts[i] = blk_tensor_make(data[i], (int)r->h[i]->desc.dtype, r->h[i]->desc.rank,
		                        r->h[i]->desc.shape);
}

/* 3: lowered offline to PTX, assembled by ptxas. */
static bool lower(Round *r, BlkRuntime *off, const char *ptxas)
{
	BlkProgram *p;
	BlkFunc *f = load(off, r, &p);
	void *data[NARR + 1];
	BlkTensor ts[NARR + 1];
	for (int i = 0; i < r->narr; i++)
		data[i] = r->h[i]->data;
	tensors(r, data, ts);
	BlkCompiledInfo info;
	bool ok = f && blk_func_compile(f, ts, r->narr, &info);
	if (!ok)
		fail(r, "lowering", blk_runtime_last_error(off));
	if (ok && ptxas)
		ok = ptxas_ok(r, ptxas, info.ptx, blk_runtime_arch(off));
	blk_program_destroy(p);
	return ok;
}

/* 4: the GPU from the same inputs, outputs poisoned, against the
 * interpreter's results (r->ref). */
static bool on_gpu(Round *r, BlkRuntime *rt, uint64_t seed)
{
	BlkProgram *p;
	BlkFunc *f = load(rt, r, &p);
	void *dev[NARR + 1] = { 0 };
	BlkTensor ts[NARR + 1];
	make_arrays(r, seed); /* fresh inputs: the interpreter wrote into the last ones */
	bool ok = f != NULL;
	for (int i = 0; ok && i < r->narr; i++)
		ok = blk_mem_alloc(rt, r->h[i]->nbytes, &dev[i]) &&
		     blk_memcpy_htod(rt, dev[i], r->h[i]->data, r->h[i]->nbytes);
	tensors(r, dev, ts);
	ok = ok && blk_launch(f, ts, r->narr, NULL) && blk_synchronize(rt);
	for (int i = 3; ok && i < r->narr; i++)
		ok = blk_memcpy_dtoh(rt, r->h[i]->data, dev[i], r->h[i]->nbytes);
	if (!ok)
		fail(r, "gpu", blk_runtime_last_error(rt));
	for (int i = 3; ok && i < r->narr; i++) {
		size_t cnt = r->ref[i]->count;
		double *want = malloc(cnt * sizeof *want);
		for (size_t e = 0; e < cnt; e++)
			want[e] = blk_host_get(r->ref[i], e);
		/* exp, tanh and division are approximate on the GPU (a few ulps),
		 * and rounding through f16/bf16 inside the tree can amplify that */
		double tol = blk_host_default_tol(r->h[i]->desc.dtype) * 4;
		if (tol > 0 && tol < 1e-3)
			tol = 1e-3;
		BlkHostCompare cmp;
		if (!blk_host_compare(r->h[i], want, tol, &cmp)) {
			char msg[256];
			snprintf(msg, sizeof msg, "array %d [%zu] = %g, the interpreter %g (%zu mismatches)",
			         i, cmp.first_bad, cmp.bad_out, cmp.bad_ref, cmp.mismatches);
			ok = fail(r, "gpu vs interpreter", msg);
		}
		free(want);
	}
	for (int i = 0; i < r->narr; i++)
		blk_mem_free(rt, dev[i]);
	blk_program_destroy(p);
	return ok;
}

static bool round_run(Round *r, uint64_t seed, BlkRuntime *off, const char *ptxas, BlkRuntime *gpu)
{
	rng_state = seed;
	generate(&r->g, &r->t, &r->atomics);
	r->m = 1 + pick(3 * r->g.b0);
	r->n = 1 + pick(r->g.rank == 2 ? 3 * r->g.b1 : 3 * r->g.b0);
	make_arrays(r, seed);
	bool ok = interpret(r);
	for (int i = 0; i < r->narr; i++) { /* the interpreter's results, kept */
		r->ref[i] = blk_host_new(r->h[i]->desc.dtype, r->h[i]->desc.rank, r->h[i]->desc.shape);
		memcpy(r->ref[i]->data, r->h[i]->data, r->h[i]->nbytes);
	}
	ok = ok && lower(r, off, ptxas);
	if (ok && gpu) {
		for (int i = 0; i < r->narr; i++)
			blk_host_free(r->h[i]);
		ok = on_gpu(r, gpu, seed);
	}
	return ok;
}

/* ---- the driver ------------------------------------------------------------ */

typedef struct Options {
	uint64_t seed;
	long count;
	double seconds;
	bool gpu, ptxas, print;
} Options;

static bool parse(int argc, char **argv, Options *o)
{
	*o = (Options){ .seed = 1, .count = 50, .seconds = 0, .ptxas = true };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			o->seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			o->count = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			o->seconds = strtod(argv[++i], NULL), o->count = 0;
		else if (strcmp(argv[i], "--gpu") == 0)
			o->gpu = true;
		else if (strcmp(argv[i], "--no-ptxas") == 0)
			o->ptxas = false;
		else if (strcmp(argv[i], "--print") == 0)
			o->print = true;
		else
			return false;
	}
	return true;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	Options o;
	if (!parse(argc, argv, &o)) {
		fprintf(stderr, "usage: kernel-fuzz [--seed S] [--count N] [--seconds T] [--gpu] "
		                "[--no-ptxas] [--print]\n");
		return 2;
	}
	char err[512] = "";
	BlkRuntime *off = blk_runtime_create_offline("sm_90a", err, sizeof err);
	BlkRuntime *gpu = o.gpu ? blk_runtime_create(0, err, sizeof err) : NULL;
	if (!off || (o.gpu && !gpu)) {
		fprintf(stderr, "kernel-fuzz: %s\n", err);
		return o.gpu ? 77 : 1;
	}
	const char *ptxas = o.ptxas ? gpu_test_ptxas() : NULL;
	double t0 = now();
	long done = 0, findings = 0;
	static Round r;
	for (uint64_t s = o.seed; o.count ? done < o.count : now() - t0 < o.seconds; s++, done++) {
		bool ok = round_run(&r, s, off, ptxas, gpu);
		if (o.print || !ok)
			printf("// seed %llu: %s M=%lld N=%lld\n%.*s", (unsigned long long)s,
			       ok ? "ok" : "FINDING", (long long)r.m, (long long)r.n, (int)r.g.n, r.g.src);
		if (!ok) {
			printf("// %s\n\n", r.err);
			findings++;
		}
		free_arrays(&r);
	}
	printf("kernel-fuzz: %ld kernels from seed %llu (%s%s%s), %ld findings, %.1f s\n", done,
	       (unsigned long long)o.seed, "frontend, interpreter, lowering",
	       ptxas ? ", ptxas" : "", gpu ? ", GPU against the interpreter" : "", findings,
	       now() - t0);
	blk_runtime_destroy(gpu);
	blk_runtime_destroy(off);
	return findings ? 1 : 0;
}
