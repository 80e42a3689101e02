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
 * vector, and scoped scratch.
 *
 * It then writes the same kernel again in other spellings (--spellings N,
 * default 1), the ways Triton and Pallas users write one computation:
 * reductions kept as unit dims or reduced and given a new axis (`[:, None]`,
 * expand_dims, reshape), one `where` of `c && d` or two nested, a condition
 * negated with the arms swapped, commuted operands, `x - y` as `x + -y`,
 * `x ** y` as `pow`, `.T` as transpose or swapaxes, `x[...]` as `x[:, :]`,
 * `load(x)`, `ds(0, B)`, `ds(0, B, 1)` or a window whose start is known
 * only at run time, the dot's scale before or after it (by powers of two),
 * a loop's carry kept in a scratch Ref, loops unrolled or with bounds known
 * only at run time, the grid's axes in another order (index maps and
 * program_id following) or with a unit axis, extents as `(N + B - 1) ~/ B`,
 * index maps as `i % cdiv(N, B)`, other sizes `dynamic`, another
 * num_warps, values named by `let` or written inline, operations as calls
 * of helpers (`fn`).  Each rewrite is exactly equivalent in blk's semantics
 * -- the comment at each says why -- so no floating-point operation is
 * reassociated.  Then, with random launch sizes and inputs:
 *   1. the frontend compiles the kernel and every spelling (a rejection is a
 *      finding: the generator only writes well-typed kernels);
 *   2. the interpreter runs the kernel and writes every output element, and
 *      every spelling's outputs are the same bits (NaN payloads aside);
 *   3. the GPU lowering compiles each to PTX for sm_90a (offline runtime)
 *      and ptxas, where installed, assembles it (once per distinct PTX);
 *   4. with --gpu, the GPU runs each and every output must equal the
 *      interpreter's within the dtype's tolerance.
 * A finding prints the kernel (and the spelling it is about, when it is
 * one), its sizes and seed, and makes the exit status 1; `--seed S --count
 * 1` reproduces it.  --self-test checks that a finding can happen: the
 * first spelling of every kernel gets one rewrite that is not equivalent
 * (its i32 output off by one), and every round must report it: the
 * interpreter's comparison and, with --gpu, the GPU's.
 *
 * usage: kernel-fuzz [--seed S] [--count N] [--seconds T] [--spellings N]
 *                    [--self-test] [--gpu] [--no-ptxas] [--print]
 */
#include <math.h>
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

enum { NARR = 5, MAX_SPELLINGS = 8, NREADS = 11 };

/* ---- random numbers: splitmix64 -------------------------------------------- */

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The kernel's stream: every spelling of a kernel draws the same numbers
 * from it in the same order, so it is the same kernel. */
static uint64_t rng_state;

static int pick(int n) { return (int)(splitmix(&rng_state) % (uint64_t)n); }

/* ---- text that grows ------------------------------------------------------- */

typedef struct Buf {
	char *s;
	size_t n, cap;
} Buf;

static void buf_vadd(Buf *b, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int k = vsnprintf(NULL, 0, fmt, ap);
	if (k >= 0) {
		if (b->n + (size_t)k + 1 > b->cap) {
			b->cap = 2 * (b->n + (size_t)k + 1);
			b->s = realloc(b->s, b->cap);
			if (!b->s)
				abort();
		}
		vsnprintf(b->s + b->n, (size_t)k + 1, fmt, again);
		b->n += (size_t)k;
	}
	va_end(again);
}

static void buf_add(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_add(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vadd(b, fmt, ap);
	va_end(ap);
}

/* The text, the caller's to free; b is empty again. */
static char *buf_take(Buf *b)
{
	char *s = b->s ? b->s : strdup("");
	*b = (Buf){ 0 };
	return s;
}

static void buf_free(Buf *b)
{
	free(b->s);
	*b = (Buf){ 0 };
}

/* ---- the kernel text ----------------------------------------------------- */

/* Which spelling a kernel is written in. */
typedef struct Spelling {
	bool on;        /* false: the plain one, the kernel as generated */
	bool perturb;   /* --self-test: q's stores off by one (not equivalent) */
	uint64_t state; /* its own stream of choices, apart from the kernel's */
} Spelling;

typedef struct Gen {
	Buf *to;          /* where out() writes: the expression being built */
	Buf *lets;        /* the statements that run before it: named values, scratch loops */
	bool top;         /* lets at the kernel's top level, not in a loop body */
	int rank;         /* 1 or 2 */
	int b0, b1;       /* block dims (b1: rank 2) */
	int loops;        /* fori_loop nesting: the carries in scope are acc0.. */
	int names;        /* v0, v1, ..: values named by a let */
	int scratch;      /* c0, c1, ..: loop carries kept in scratch Refs */
	int scratch_max;  /* as many as shared memory leaves room for */
	char pid[16];     /* program_id of the grid axis x's first block index follows */
	Buf *helpers;     /* fn h0, h1, ..: helpers the body calls */
	int nhelpers;
	int nreads;       /* block_read's spellings at this rank */
	char reads[3][NREADS][64]; /* a, b and k written inline, one per read spelling */
	Spelling sp;
} Gen;

static void out(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vadd(g->to, fmt, ap);
	va_end(ap);
}

/* A statement that must run before the one being written (a top-level
 * one on its own line, one in a loop body inline). */
static void stmt(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void stmt(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_add(g->lets, "%s", g->top ? "    " : "");
	buf_vadd(g->lets, fmt, ap);
	buf_add(g->lets, "%s", g->top ? "\n" : " ");
	va_end(ap);
}

/* Which of n spellings of the construct at hand to write: 0, the plain
 * one, in the kernel as generated.  Never draws from the kernel's stream. */
static int alt(Gen *g, int n)
{
	return g->sp.on ? (int)(splitmix(&g->sp.state) % (uint64_t)n) : 0;
}

/* Sends out() to a fresh buffer until end_text, which gives its text. */
static Buf *begin_text(Gen *g, Buf *b)
{
	Buf *to = g->to;
	*b = (Buf){ 0 };
	g->to = b;
	return to;
}

static char *end_text(Gen *g, Buf *to, Buf *b)
{
	g->to = to;
	return buf_take(b);
}

/* What gen writes, as a string to place (free it); the statements it
 * needs still go to g->lets. */
static char *text_of(Gen *g, void (*gen)(Gen *, int), int depth)
{
	Buf b;
	Buf *to = begin_text(g, &b);
	gen(g, depth);
	return end_text(g, to, &b);
}

/* A value named by a let ahead of the statement and used by its name.
 * Exact: a let only names a value, and expressions have no effects, so
 * computing it earlier changes nothing. */
static void named(Gen *g, void (*gen)(Gen *, int), int depth)
{
	char *e = text_of(g, gen, depth);
	int v = g->names++;
	stmt(g, "let v%d = %s;", v, e);
	out(g, "v%d", v);
	free(e);
}

/* fmt, a format of one operand or two, of p and q: written out, or as a
 * call of a helper `fn h<n>(u0, u1) { fmt of u0 and u1 }`.  Exact: a call
 * is its body with the parameters bound to the arguments' values (fmt names
 * nothing but its operands). */
static void apply(Gen *g, const char *fmt, const char *p, const char *q)
{
	if (alt(g, 8) != 1) {
		out(g, fmt, p, q);
		return;
	}
	int h = g->nhelpers++;
	buf_add(g->helpers, "fn h%d(u0%s) {\n    ", h, q ? ", u1" : "");
	buf_add(g->helpers, fmt, "u0", "u1");
	buf_add(g->helpers, "\n}\n");
	if (q)
		out(g, "h%d(%s, %s)", h, p, q);
	else
		out(g, "h%d(%s)", h, p);
}

/* `p op q` for a commutative op, in either order.  Exact: IEEE + and * are
 * commutative (only which NaN's payload survives may change, and outputs
 * are compared NaN for NaN), i32 and i8/u8 + * & | ^ wrap the same either
 * way, and blk's max/min are symmetric (a NaN gives NaN, -0 < +0). */
static void commuted(Gen *g, const char *fmt, const char *p, const char *q)
{
	if (alt(g, 2))
		apply(g, fmt, q, p);
	else
		apply(g, fmt, p, q);
}

/* A whole block of Ref `ref` read, spelled `x[...]` or another way that
 * names every element of the block (the fill, 0, past the array alike):
 * a window of the block's size starting at 0, strided by 1, or starting at
 * min(program_id, 0), 0 known only at run time. */
static void block_read(Gen *g, Buf *b, const char *ref, int s)
{
	static const char *const r1[NREADS] = { "%s[...]", "%s[:]", "load(%s)", "%s[ds(0, B0)]", "%s[0:B0]",
	                                        "%s.at[...][...]", "load(%s.at[ds(0, B0)])", "%s[ds(0, B0, 1)]",
	                                        "%s[::1]", "%s[ds(min(%s, 0), B0)]" };
	static const char *const r2[NREADS] = { "%s[...]", "%s[:, :]", "%s[:]", "load(%s)", "%s[ds(0, B0), :]",
	                                        "%s[:, 0:B1]", "load(%s.at[:, ds(0, B1)])", "%s.at[...][...]",
	                                        "%s[ds(0, B0, 1), :]", "%s[:, ::1]", "%s[:, ds(min(%s, 0), B1)]" };
	buf_add(b, (g->rank == 2 ? r2 : r1)[s], ref, g->pid);
}

static const char *read_of(Gen *g, Buf *b, const char *ref)
{
	*b = (Buf){ 0 };
	block_read(g, b, ref, alt(g, g->nreads));
	return b->s;
}

/* a, b or k (which 0, 1, 2): the let's name, or its value written inline. */
static const char *val(Gen *g, int which)
{
	static const char *const name[] = { "a", "b", "k" };
	return alt(g, 2) ? g->reads[which][alt(g, g->nreads)] : name[which];
}
#define A(g) val(g, 0)
#define B(g) val(g, 1)
#define K(g) val(g, 2)

/* A block store to Ref `ref`, spelled `o[...]` or another way that names
 * every element of the block. */
static const char *block_store(Gen *g, Buf *b, const char *ref)
{
	static const char *const s1[] = { "%s[...]", "%s[:]", "%s[ds(0, B0)]", "%s[0:B0]", "%s[ds(0, B0, 1)]",
	                                  "%s[ds(min(%s, 0), B0)]" };
	static const char *const s2[] = { "%s[...]", "%s[:, :]", "%s[:]", "%s[ds(0, B0), :]", "%s[:, 0:B1]",
	                                  "%s.at[...][...]", "%s[:, ds(0, B1, 1)]", "%s[ds(min(%s, 0), B0), :]" };
	*b = (Buf){ 0 };
	if (g->rank == 2)
		buf_add(b, s2[alt(g, 8)], ref, g->pid);
	else
		buf_add(b, s1[alt(g, 6)], ref, g->pid);
	return b->s;
}

/* `z * 0.0 + e` (`z * 0 + e` for i32), which broadcasts e to the block:
 * in any order (commutation, exact as above). */
static void zero_plus(Gen *g, const char *z, const char *zero, const char *e)
{
	switch (alt(g, 3)) {
	case 1: out(g, "(%s + %s * %s)", e, z, zero); break;
	case 2: out(g, "(%s * %s + %s)", zero, z, e); break;
	default: out(g, "(%s * %s + %s)", z, zero, e); break;
	}
}

/* op(e, axis = d, keepdims = true) -- or, where !keep (rank 1 only),
 * op(e) -- in one of its spellings: the reduction kept as a unit dim, or
 * reduced and given the unit dim back by `[:, None]`, expand_dims or a
 * reshape (at rank 1: left a scalar, which broadcasts the same).  Exact:
 * the same elements reduced in the same order; only the result's shape is
 * spelled.  `method`: op has a method form (sum, max, min). */
static void reduced(Gen *g, const char *op, const char *e, int d, bool keep, bool method)
{
	int s = alt(g, 6);
	if (s == 1 && !method)
		s = 2;
	if (g->rank == 2) {
		switch (s) {
		case 1: out(g, "(%s).%s(axis = %d, keepdims = true)", e, op, d); break;
		case 2: out(g, "expand_dims(%s(%s, axis = %d), %d)", op, e, d, d); break;
		case 3: out(g, "%s(%s, axis = %d)%s", op, e, d, d ? "[:, None]" : "[None, :]"); break;
		case 4: out(g, "%s(%s, axis = %d).reshape(%s)", op, e, d, d ? "B0, 1" : "1, B1"); break;
		case 5: out(g, "reshape(%s(%s, axis = %d), (%s))", op, e, d, d ? "B0, 1" : "1, B1"); break;
		default: out(g, "%s(%s, axis = %d, keepdims = true)", op, e, d); break;
		}
		return;
	}
	if (s == 0 && !keep)
		s = 6;
	switch (s) {
	case 1: out(g, "(%s).%s(axis = 0, keepdims = true)", e, op); break;
	case 2: out(g, "%s(%s, axis = 0)", op, e); break;
	case 3: out(g, "%s(%s, axis = 0)[None]", op, e); break;
	case 4: out(g, "expand_dims(%s(%s), 0)", op, e); break;
	case 5: out(g, "%s(%s).reshape(1)", op, e); break;
	case 6: out(g, "%s(%s)", op, e); break;
	default: out(g, "%s(%s, axis = 0, keepdims = true)", op, e); break;
	}
}

/* op(e, axis = ax, reverse = rev), a scan: as a method, with the axis
 * positional, or `reverse = false` left out (its default).  Exact: the
 * same call. */
static void scanned(Gen *g, const char *op, const char *e, int ax, bool rev)
{
	const char *r = rev ? ", reverse = true" : alt(g, 2) ? "" : ", reverse = false";
	switch (alt(g, 3)) {
	case 1: out(g, "(%s).%s(axis = %d%s)", e, op, ax, r); break;
	case 2: out(g, "%s(%s, %d%s)", op, e, ax, r); break;
	default: out(g, "%s(%s, axis = %d%s)", op, e, ax, r); break;
	}
}

/* fmt of two trees gen writes, in either order (as commuted). */
static void commuted_of(Gen *g, const char *fmt, void (*gen)(Gen *, int), int depth)
{
	char *p = text_of(g, gen, depth);
	char *q = text_of(g, gen, depth);
	commuted(g, fmt, p, q);
	free(p);
	free(q);
}

/* A scan of what gen writes: its axis and direction drawn after it. */
static void scan_of(Gen *g, const char *op, void (*gen)(Gen *, int), int depth)
{
	char *e = text_of(g, gen, depth);
	bool rev = pick(2);
	int ax = g->rank == 2 ? pick(2) : 0;
	scanned(g, op, e, ax, rev);
	free(e);
}

/* z * 0 + a reduction of e: the reduction broadcast back to the block. */
static void reduced_back(Gen *g, const char *z, const char *zero, const char *op, const char *e, int d,
                         bool keep, bool method)
{
	Buf rb;
	Buf *to = begin_text(g, &rb);
	reduced(g, op, e, d, keep, method);
	char *r = end_text(g, to, &rb);
	zero_plus(g, z, zero, r);
	free(r);
}

static void fexpr(Gen *g, int depth);
static void iexpr(Gen *g, int depth);

/* Reads beyond a plain x[...]: a shifted window that sticks out of the
 * block (masked, the fill where it does), and a transpose of a square one. */
static bool fleaf_read(Gen *g)
{
	int last = g->rank == 2 ? g->b1 : g->b0;
	Buf rd;
	if (last >= 2 && pick(2)) {
		int fill = pick(3) - 1;
		const char *ref = pick(2) ? "x" : "y";
		/* a start known only at run time (program ids are >= 0) is masked
		 * as the constant one is; `ds(0, B0)` is the whole dim `:` */
		Buf st = { 0 };
		if (alt(g, 2))
			buf_add(&st, "min(%s, 0) + 1", g->pid);
		else
			buf_add(&st, "1");
		out(g, "load(%s.at[%sds(%s, %s)], other = %d.5).astype(f32)", ref,
		    g->rank == 2 ? alt(g, 2) ? "ds(0, B0), " : ":, " : "", st.s, g->rank == 2 ? "B1" : "B0",
		    fill);
		buf_free(&st);
		return true;
	}
	if (g->rank == 2 && g->b0 == g->b1 && pick(2)) {
		/* a transpose spelled any way, before or after the cast (a cast is
		 * elementwise, a transpose moves elements as they are) */
		static const char *const tr[] = { "%s.T.astype(f32)", "transpose(%s).astype(f32)",
		                                  "%s.transpose(1, 0).astype(f32)", "swapaxes(%s, 0, 1).astype(f32)",
		                                  "%s.astype(f32).T", "transpose(%s, (1, 0)).astype(f32)" };
		const char *r = read_of(g, &rd, pick(2) ? "x" : "y");
		out(g, tr[alt(g, 6)], r);
		buf_free(&rd);
		return true;
	}
	/* a gather at i32 tiles of indices, some -1 (masked, the fill); 3 * k
	 * is k * 3 (i32 wraps either way), and a read with the default fill
	 * is a load of the view without `other` */
	int d = pick(2);
	const char *ref = pick(2) ? "x" : "y";
	const char *k = K(g);
	const char *k3 = alt(g, 2) ? "3 * " : "", *k3r = *k3 ? "" : " * 3";
	if (g->rank == 2)
		out(g, "load(%s.at[(%s%s%s) %% B0 - %d, %s %% B1], other = 0.5).astype(f32)", ref, k3, k, k3r, d, K(g));
	else if (alt(g, 2))
		out(g, "load(%s.at[(%s%s%s) %% B0 - %d]).astype(f32)", ref, k3, k, k3r, d);
	else
		out(g, "%s[(%s%s%s) %% B0 - %d].astype(f32)", ref, k3, k, k3r, d);
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
	bool sel = pick(3) == 0;
	Buf full = { 0 }, sc = { 0 };
	if (sel)
		buf_add(&full, "full((%s), %d.5, %s)", g->rank == 2 ? "B0, B1" : "B0,", pick(500), t);
	const char *v = sel || pick(2) ? A(g) : B(g);
	if (alt(g, 2))
		buf_add(&sc, "(%d.0 * %s).astype(%s)", s, v, t);
	else
		buf_add(&sc, "(%s * %d.0).astype(%s)", v, s, t);
	/* a > b is b < a; a negated condition swaps the arms */
	const char *c = alt(g, 2) ? "b < a" : "a > b";
	if (!sel)
		out(g, "%s.astype(f32)", sc.s);
	else if (alt(g, 2))
		out(g, "where(!(%s), %s, %s).astype(f32)", c, full.s, sc.s);
	else
		out(g, "where(%s, %s, %s).astype(f32)", c, sc.s, full.s);
	buf_free(&full);
	buf_free(&sc);
}

static void fleaf(Gen *g)
{
	if (pick(6) == 0 && fleaf_read(g))
		return;
	if (pick(12) == 0) {
		fleaf_fp8(g);
		return;
	}
	Buf e = { 0 };
	switch (pick(g->loops ? 7 : 6)) {
	case 0: out(g, "%s", A(g)); break;
	case 1: out(g, "%s", B(g)); break;
	case 2: {
		int frac = pick(10), whole = pick(4);
		buf_add(&e, "%d.%d", whole, frac);
		zero_plus(g, A(g), "0.0", e.s);
		break;
	}
	case 3: out(g, "%s.astype(f32)", K(g)); break;
	case 4:
		buf_add(&e, "%s.astype(f32)", g->pid);
		zero_plus(g, A(g), "0.0", e.s);
		break;
	case 5: {
		Buf m;
		Buf *to = begin_text(g, &m);
		reduced(g, "max", B(g), g->rank == 2 ? 1 : 0, true, true);
		char *mx = end_text(g, to, &m);
		commuted(g, "(%s + %s)", A(g), mx);
		free(mx);
		break;
	}
	default: out(g, "acc%d", pick(g->loops)); break;
	}
	buf_free(&e);
}

/* p + q, p - q or p * q.  p - q may be p + -q: IEEE defines subtraction
 * as the addition of the negation, the same rounding and signed zeros. */
static void farith(Gen *g, int depth)
{
	char *p = text_of(g, fexpr, depth - 1);
	int o = pick(3);
	char *q = text_of(g, fexpr, depth - 1);
	if (o == 1)
		apply(g, alt(g, 2) ? "(%s + -%s)" : "(%s - %s)", p, q);
	else
		commuted(g, o == 0 ? "(%s + %s)" : "(%s * %s)", p, q);
	free(p);
	free(q);
}

/* where(p > q [&& or || (k > d)], x, y) in its spellings.  Exact: p > q is
 * q < p (one IEEE predicate; a NaN makes both false); `&&` on bool tiles
 * is `&` and commutes (no effects to short-circuit); where(c && d, x, y)
 * is where(c, where(d, x, y), y) and where(c || d, x, y) is where(c, x,
 * where(d, x, y)) element by element; where(!c, y, x) is where(c, x, y).
 * (p <= q negated is not p > q under NaN: a negation is written `!`.) */
static void fwhere(Gen *g, int depth)
{
	char *p = text_of(g, fexpr, depth - 1);
	bool gt = pick(2);
	char *q = text_of(g, fexpr, depth - 1);
	int logic = 0, d = 0;
	if (pick(3) == 0) { /* bool logic on exact inputs */
		d = pick(5) - 2;
		logic = pick(2) ? 1 : 2;
	}
	char *x = text_of(g, fexpr, depth - 1);
	char *y = text_of(g, fexpr, depth - 1);
	Buf c = { 0 }, k = { 0 };
	if (alt(g, 2))
		buf_add(&c, "%s %s %s", q, gt ? "<" : ">=", p);
	else
		buf_add(&c, "%s %s %s", p, gt ? ">" : "<=", q);
	if (alt(g, 2))
		buf_add(&k, "(%d < %s)", d, K(g));
	else
		buf_add(&k, "(%s > %d)", K(g), d);
	if (!logic) {
		switch (alt(g, 3)) {
		case 1: out(g, "where(!(%s), %s, %s)", c.s, y, x); break;
		case 2: out(g, "where(~(%s), %s, %s)", c.s, y, x); break;
		default: out(g, "where(%s, %s, %s)", c.s, x, y); break;
		}
	} else {
		const char *ll = logic == 1 ? "&&" : "||", *l = logic == 1 ? "&" : "|";
		switch (alt(g, 5)) {
		case 1: out(g, "where((%s) %s %s, %s, %s)", c.s, l, k.s, x, y); break;
		case 2: out(g, "where(%s %s %s, %s, %s)", k.s, ll, c.s, x, y); break;
		case 3:
			if (logic == 1)
				out(g, "where(%s, where(%s, %s, %s), %s)", c.s, k.s, x, y, y);
			else
				out(g, "where(%s, %s, where(%s, %s, %s))", c.s, x, k.s, x, y);
			break;
		case 4: out(g, "where(!(%s %s %s), %s, %s)", c.s, ll, k.s, y, x); break;
		default: out(g, "where(%s %s %s, %s, %s)", c.s, ll, k.s, x, y); break;
		}
	}
	buf_free(&c);
	buf_free(&k);
	free(p);
	free(q);
	free(x);
	free(y);
}

/* One elementwise function of a subtree.  The other spellings of a row
 * are exact: min and + and * commute; -x is x * -1.0 (a sign flip);
 * x ** y is pow(x, y) (the same powf); x * 0.25 is x / 4.0 (both the
 * correctly rounded quarter of x). */
static void funary(Gen *g, int depth)
{
	static const char *const un[10][3] = {
		{ "exp(min(%s, 2.0))", "exp(min(2.0, %s))" },
		{ "abs(%s)" },
		{ "sqrt(abs(%s))" },
		{ "tanh(%s)" },
		{ "(%s).astype(bf16).astype(f32)" },
		{ "(%s).astype(f16).astype(f32)" },
		{ "(-%s)", "(%s * -1.0)", "(-1.0 * %s)" },
		{ "(%s + ((a * 8.0).astype(i32) %% 5).astype(f32))", "(%s + ((8.0 * a).astype(i32) %% 5).astype(f32))" },
		{ "pow(abs(%s) * 0.5 + 0.5, 1.5)", "(abs(%s) * 0.5 + 0.5) ** 1.5", "pow(0.5 + 0.5 * abs(%s), 1.5)" },
		{ "(min(abs(%s), 4.0) * 0.25 + 0.5) ** -3.0", "pow(min(abs(%s), 4.0) * 0.25 + 0.5, -3.0)",
		  "(0.5 + min(4.0, abs(%s)) / 4.0) ** -3.0" },
	};
	char *e = text_of(g, fexpr, depth - 1);
	const char *const *row = un[pick(10)];
	int n = 1;
	while (n < 3 && row[n])
		n++;
	if (row == un[7]) /* names a: not a helper's body */
		out(g, row[alt(g, n)], e);
	else
		apply(g, row[alt(g, n)], e, NULL);
	free(e);
}

/* fori_loop(lo, hi, init) |t, acc| { acc * 0.5 + body }.  Its other
 * spellings: unrolled (`unroll = true`, the same iterations at compile
 * time); hi + min(program_id, 0), a bound known only at run time (program
 * ids are >= 0); the step's terms commuted, acc / 2.0 for acc * 0.5; and
 * the carry kept in a scratch Ref instead, stored before the loop, read and
 * written by each iteration, read after it (f32 in, f32 out: exact). */
static void floop(Gen *g, int depth)
{
	int l = g->loops;
	int hi = 1 + pick(3), lo = pick(2);
	char *init = text_of(g, fexpr, depth - 1);
	int bounds = alt(g, 3);
	bool scratch = alt(g, 3) == 1 && g->scratch < g->scratch_max;
	int c = scratch ? g->scratch++ : -1;
	Buf hib = { 0 }, body_lets = { 0 }, step = { 0 };
	if (bounds == 2)
		buf_add(&hib, "min(%s, 0) + %d", g->pid, hi);
	else
		buf_add(&hib, "%d", hi);
	const char *unroll = bounds == 1 ? ", unroll = true" : "";

	Buf *lets = g->lets;
	bool top = g->top;
	g->lets = &body_lets;
	g->top = false;
	if (scratch)
		stmt(g, "let acc%d = c%d[...];", l, c);
	g->loops++;
	char *body = text_of(g, fexpr, depth - 1);
	g->loops--;
	g->lets = lets;
	g->top = top;

	switch (alt(g, 4)) {
	case 1: buf_add(&step, "%s + acc%d * 0.5", body, l); break;
	case 2: buf_add(&step, "0.5 * acc%d + %s", l, body); break;
	case 3: buf_add(&step, "acc%d / 2.0 + %s", l, body); break;
	default: buf_add(&step, "acc%d * 0.5 + %s", l, body); break;
	}
	const char *bl = body_lets.s ? body_lets.s : "";
	if (scratch) {
		stmt(g, "c%d[...] = %s;", c, init);
		stmt(g, "fori_loop(%d, %s%s) |t%d| { %sc%d[...] = %s; };", lo, hib.s, unroll, l, bl, c, step.s);
		int v = g->names++;
		stmt(g, "let v%d = c%d[...];", v, c);
		out(g, "v%d", v);
	} else {
		out(g, "fori_loop(%d, %s, %s%s) |t%d, acc%d| { %s%s }", lo, hib.s, init, unroll, l, l, bl, step.s);
	}
	buf_free(&hib);
	buf_free(&body_lets);
	buf_free(&step);
	free(init);
	free(body);
}

/* Through shared memory: a reshape round trip, or a part broadcast back.
 * Exact other spellings: the same shapes written with -1 or as tuples, or
 * through a new axis; a part [:, j:j+1] as [:, j][:, None] or ds(j, 1), a
 * negative index as the positive one (the dim is constant). */
static void fpart(Gen *g, int depth)
{
	bool part = pick(2);
	char *e = text_of(g, fexpr, depth - 1);
	int j = pick(g->b1);
	if (!part) {
		static const char *const r2[] = { "(%s).reshape(B0 * B1).reshape(B0, B1)",
		                                  "reshape(reshape(%s, (B0 * B1,)), (B0, B1))",
		                                  "(%s).reshape(-1).reshape(B0, -1)",
		                                  "(%s).reshape((B0 * B1,)).reshape((B0, B1))" };
		static const char *const r1[] = { "(%s).reshape(1, -1).reshape(B0)", "(%s).reshape(1, B0).reshape(-1)",
		                                  "reshape(reshape(%s, (1, B0)), (B0,))", "(%s)[None, :].reshape(B0)",
		                                  "(%s)[None][0]" };
		if (g->rank == 2)
			out(g, r2[alt(g, 4)], e);
		else
			out(g, r1[alt(g, 5)], e);
		free(e);
		return;
	}
	Buf p = { 0 };
	if (g->rank == 2 && pick(2)) {
		switch (alt(g, 4)) {
		case 1: buf_add(&p, "(%s)[:, %d][:, None]", e, j); break;
		case 2: buf_add(&p, "(%s)[:, ds(%d, 1)]", e, j); break;
		case 3: buf_add(&p, "expand_dims((%s)[:, %d], 1)", e, j); break;
		default: buf_add(&p, "(%s)[:, %d:%d]", e, j, j + 1); break;
		}
	} else if (g->rank == 2) {
		switch (alt(g, 4)) {
		case 1: buf_add(&p, "(%s)[:, B1 - 1:]", e); break;
		case 2: buf_add(&p, "(%s)[:, -1][:, None]", e); break;
		case 3: buf_add(&p, "(%s)[:, ds(B1 - 1, 1)]", e); break;
		default: buf_add(&p, "(%s)[:, -1:]", e); break;
		}
	} else {
		int i = pick(g->b0) - (pick(2) ? g->b0 : 0);
		int pos = i < 0 ? i + g->b0 : i;
		switch (alt(g, 4)) {
		case 1: buf_add(&p, "(%s)[%d]", e, pos == i ? i - g->b0 : pos); break;
		case 2: buf_add(&p, "(%s)[%d:%d]", e, pos, pos + 1); break;
		case 3: buf_add(&p, "(%s)[ds(%d, 1)]", e, pos); break;
		default: buf_add(&p, "(%s)[%d]", e, i); break;
		}
	}
	zero_plus(g, A(g), "0.0", p.s);
	buf_free(&p);
	free(e);
}

static void fexpr_tree(Gen *g, int depth)
{
	if (depth <= 0) {
		fleaf(g);
		return;
	}
	int c = pick(9);
	if (c <= 2) {
		farith(g, depth);
	} else if (c == 3) {
		commuted_of(g, pick(2) ? "max(%s, %s)" : "min(%s, %s)", fexpr, depth - 1);
	} else if (c == 4) {
		fwhere(g, depth);
	} else if (c == 5) {
		funary(g, depth);
	} else if (c == 6) { /* 1 + |q| is |q| + 1 */
		char *p = text_of(g, fexpr, depth - 1);
		char *q = text_of(g, fexpr, depth - 1);
		out(g, alt(g, 2) ? "(%s / (1.0 + abs(%s)))" : "(%s / (abs(%s) + 1.0))", p, q);
		free(p);
		free(q);
	} else if (c == 7 && g->loops < 2) {
		floop(g, depth);
	} else if (pick(4) == 0) { /* through shared memory */
		fpart(g, depth);
	} else if (pick(3) == 0) { /* a scan, either way along either axis */
		static const char *scans[] = { "cumsum", "cummax", "cummin" };
		scan_of(g, scans[pick(3)], fexpr, depth - 1);
	} else {
		const char *op = g->rank == 2 && !pick(2) ? "min" : "sum";
		char *e = text_of(g, fexpr, depth - 1);
		int d = g->rank == 2 ? pick(2) : 0;
		reduced_back(g, A(g), "0.0", op, e, d, true, true);
		free(e);
	}
}

/* An f32 tree wrapped in rearrangements that give it back as it was: a
 * split and its concatenation, its even and odd elements interleaved, two
 * transposes or two flips.  Exact: they move elements as they are (NaN and
 * -0.0 too). */
static void wrapped(Gen *g, int depth)
{
	int last = g->rank == 2 ? g->b1 : g->b0;
	int d = g->rank == 2 ? alt(g, 2) : 0, dim = d ? g->b1 : g->b0;
	int s = alt(g, 4);
	char *e = text_of(g, fexpr_tree, depth);
	if (s == 0 && dim % 2 == 0) {
		out(g, "concatenate(split(%s, 2, axis = %d), axis = %d)", e, d, d);
	} else if (s == 1 && last % 2 == 0) {
		int v = g->names++;
		const char *all = g->rank == 2 ? ":, " : "";
		stmt(g, "let v%d = %s;", v, e);
		out(g, "interleave(v%d[%s::2], v%d[%s1::2])", v, all, v, all);
	} else if (s == 2 && g->rank == 2) {
		out(g, "(%s).T.T", e);
	} else {
		out(g, "flip(flip(%s, axis = %d), axis = %d)", e, d, d);
	}
	free(e);
}

/* An f32 tile of the block's shape, sometimes named by a let or wrapped. */
static void fexpr(Gen *g, int depth)
{
	int s = alt(g, 8);
	if (s == 1)
		named(g, fexpr_tree, depth);
	else if (s == 2)
		wrapped(g, depth);
	else
		fexpr_tree(g, depth);
}

/* The integer binary ops, as formats of their two operands. */
static const char *const binary_ops[] = { "(%s + %s)", "(%s - %s)", "(%s * %s)", "(%s & %s)", "(%s | %s)",
	                                  "(%s ^ %s)", "(%s ~/ %s)", "(%s %% %s)", "(%s << %s)", "(%s >> %s)" };

static void bexpr(Gen *g, int depth, const char *dt);

static char *btext(Gen *g, int depth, const char *dt)
{
	Buf b;
	Buf *to = begin_text(g, &b);
	bexpr(g, depth, dt);
	return end_text(g, to, &b);
}

/* An i8 or u8 tile (dt) of the block's shape: every op computes in i32 and
 * wraps to 8 bits, floats saturate into it, i32 keeps its low byte.  The
 * commutative ops (+ * & | ^ min max) may swap their operands: the wrapped
 * result is the same. */
static void bexpr(Gen *g, int depth, const char *dt)
{
	if (depth <= 0) {
		switch (pick(4)) {
		case 0: out(g, "%s.astype(%s)", K(g), dt); break;
		case 1: {
			const char *ab = pick(2) ? A(g) : B(g);
			if (alt(g, 2))
				out(g, "(150.0 * %s).astype(%s)", ab, dt);
			else
				out(g, "(%s * 150.0).astype(%s)", ab, dt);
			break;
		}
		case 2: {
			int c = pick(256);
			if (alt(g, 2))
				out(g, "(%d ^ (37 * %s)).astype(%s)", c, K(g), dt);
			else
				out(g, "((%s * 37) ^ %d).astype(%s)", K(g), c, dt);
			break;
		}
		default: out(g, alt(g, 2) ? "(b < a).astype(%s)" : "(a > b).astype(%s)", dt); break;
		}
		return;
	}
	static const char *un[] = { "abs(%s)", "(-%s)", "(~%s)", "(%s + 7)", "(%s * 3 - 100)" };
	char *p = NULL, *q = NULL;
	switch (pick(7)) {
	case 0: case 1: case 2: {
		p = btext(g, depth - 1, dt);
		int o = pick(10);
		q = btext(g, depth - 1, dt);
		if (o == 0 || (o >= 2 && o <= 5))
			commuted(g, binary_ops[o], p, q);
		else
			apply(g, binary_ops[o], p, q);
		break;
	}
	case 3: {
		const char *f = un[pick(5)];
		p = btext(g, depth - 1, dt);
		apply(g, f, p, NULL);
		break;
	}
	case 4: {
		const char *f = pick(2) ? "min(%s, %s)" : "max(%s, %s)";
		p = btext(g, depth - 1, dt);
		q = btext(g, depth - 1, dt);
		commuted(g, f, p, q);
		break;
	}
	case 5: /* through the other 8-bit dtype */
		out(g, "(");
		bexpr(g, depth - 1, strcmp(dt, "i8") == 0 ? "u8" : "i8");
		out(g, ").astype(%s)", dt);
		return;
	default: { /* scans wrap as they go */
		const char *op = pick(2) ? "cumsum" : "cummax";
		p = btext(g, depth - 1, dt);
		bool rev = pick(2);
		int ax = g->rank == 2 ? pick(2) : 0;
		scanned(g, op, p, ax, rev);
		break;
	}
	}
	free(p);
	free(q);
}

/* ~p is -p - 1 and p ^ -1 (two's complement). */
static void inverted(Gen *g, Buf *b, const char *p)
{
	switch (alt(g, 3)) {
	case 1: buf_add(b, "(-%s - 1)", p); break;
	case 2: buf_add(b, "(%s ^ -1)", p); break;
	default: buf_add(b, "~%s", p); break;
	}
}

/* An i32 binary op.  i32 + - * wrap, so they form a ring: + * & | ^
 * commute, p - q is p + -q and -(q - p), and c + r % m is r % m + c. */
static void ibinary(Gen *g, int depth)
{
	int o = pick(10);
	bool inv = !pick(4);
	char *p0 = text_of(g, iexpr, depth - 1);
	Buf pb = { 0 }, qb = { 0 };
	if (inv)
		inverted(g, &pb, p0);
	else
		buf_add(&pb, "%s", p0);
	char *q0 = text_of(g, iexpr, depth - 1);
	if (o >= 6) { /* shift amounts in -4..35, divisors in -2..2: 0 and -1 included */
		int m = o >= 8 ? 40 : 5, c = o >= 8 ? 4 : 2;
		if (alt(g, 2))
			buf_add(&qb, "(-%d + %s %% %d)", c, q0, m);
		else
			buf_add(&qb, "(%s %% %d - %d)", q0, m, c);
	} else {
		buf_add(&qb, "%s", q0);
	}
	const char *f = binary_ops[o];
	if (o == 1) {
		switch (alt(g, 3)) {
		case 1: apply(g, "(%s + -%s)", pb.s, qb.s); break;
		case 2: apply(g, "(-(%s - %s))", qb.s, pb.s); break;
		default: apply(g, "(%s - %s)", pb.s, qb.s); break;
		}
	} else if (o <= 5) {
		commuted(g, f, pb.s, qb.s);
	} else {
		apply(g, f, pb.s, qb.s);
	}
	buf_free(&pb);
	buf_free(&qb);
	free(p0);
	free(q0);
}

/* A leaf of an i32 tree. */
static void ileaf(Gen *g)
{
	Buf e = { 0 };
	switch (pick(4)) {
	case 0: out(g, "%s", K(g)); break;
	case 1:
		buf_add(&e, "%d", pick(7) - 3);
		zero_plus(g, K(g), "0", e.s);
		break;
	case 2:
		if (g->rank == 2) { /* the new axis spelled any way */
			static const char *const col[] = { "expand_dims(iota(B0), 1)", "iota(B0)[:, None]",
			                                   "iota(B0).reshape(B0, 1)", "reshape(iota(B0), (B0, 1))" };
			zero_plus(g, K(g), "0", col[alt(g, 4)]);
		} else {
			zero_plus(g, K(g), "0", "iota(B0)");
		}
		break;
	default: { /* a > b as b < a, or selected as 1 and 0 (bool to i32 is 1 or 0) */
		static const char *const gt[] = { "(a > b).astype(i32)", "(b < a).astype(i32)", "where(a > b, 1, 0)" };
		out(g, "%s", gt[alt(g, 3)]);
		break;
	}
	}
	buf_free(&e);
}

static void iexpr_tree(Gen *g, int depth)
{
	if (depth <= 0) {
		ileaf(g);
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
		static const char *const arg[4][3] = {
			{ "a" }, { "b" }, { "(a - b)", "(a + -b)", "(-b + a)" },
			{ "where(a > 0.5, nan, b)", "where(0.5 < a, nan, b)", "where(!(a > 0.5), b, nan)" },
		};
		const char *const *row = arg[pick(4)];
		const char *op = pick(2) ? "argmax" : "argmin";
		int n = 1;
		while (n < 3 && row[n])
			n++;
		const char *x = row[alt(g, n)];
		int d = g->rank == 2 ? pick(2) : 0;
		reduced_back(g, K(g), "0", op, x, d, g->rank == 2, false);
		return;
	}
	if (c == 6 && pick(3) == 0) { /* i32 scans are exact too, products wrap */
		static const char *scans[] = { "cumsum", "cumprod", "cummax", "cummin" };
		scan_of(g, scans[pick(4)], iexpr, depth - 1);
		return;
	}
	if (c == 6) { /* i32 reductions are exact: broadcast back */
		const char *op = pick(2) ? "sum" : "max";
		char *e = text_of(g, iexpr, depth - 1);
		int d = g->rank == 2 ? pick(2) : 0;
		reduced_back(g, K(g), "0", op, e, d, true, true);
		free(e);
		return;
	}
	if (c <= 1) {
		ibinary(g, depth);
	} else if (c == 2) {
		commuted_of(g, pick(2) ? "max(%s, %s)" : "min(%s, %s)", iexpr, depth - 1);
	} else if (c == 3) { /* where(c != 0, ..): c == 0 with the arms swapped, or negated */
		char *s = text_of(g, iexpr, depth - 1);
		char *x = text_of(g, iexpr, depth - 1);
		char *y = text_of(g, iexpr, depth - 1);
		switch (alt(g, 4)) {
		case 1: out(g, "where(%s == 0, abs(%s), %s)", s, y, x); break;
		case 2: out(g, "where(0 != %s, %s, abs(%s))", s, x, y); break;
		case 3: out(g, "where(!(%s != 0), abs(%s), %s)", s, y, x); break;
		default: out(g, "where(%s != 0, %s, abs(%s))", s, x, y); break;
		}
		free(s);
		free(x);
		free(y);
	} else if (c == 4) { /* exact inputs only: a cast of approximate math may flip */
		const char *ab = pick(2) ? A(g) : B(g);
		out(g, alt(g, 2) ? "(8.0 * %s).astype(i32)" : "(%s * 8.0).astype(i32)", ab);
	} else { /* the three terms in any order: i32 + wraps, associative and commutative */
		int e = pick(3), d = pick(3);
		Buf t1 = { 0 }, t2 = { 0 }, t3 = { 0 };
		buf_add(&t1, "%s", K(g));
		buf_add(&t2, "(%s ~/ (%s - %d))", g->pid, g->pid, d);
		buf_add(&t3, "cdiv(%s, %d)", g->pid, e);
		switch (alt(g, 3)) {
		case 1: out(g, "(%s + %s + %s)", t3.s, t1.s, t2.s); break;
		case 2: out(g, "(%s + %s + %s)", t2.s, t3.s, t1.s); break;
		default: out(g, "(%s + %s + %s)", t1.s, t2.s, t3.s); break;
		}
		buf_free(&t1);
		buf_free(&t2);
		buf_free(&t3);
	}
}

/* An i32 tile of the block's shape, sometimes named by a let. */
static void iexpr(Gen *g, int depth)
{
	if (alt(g, 4) == 1)
		named(g, iexpr_tree, depth);
	else
		iexpr_tree(g, depth);
}

static const char *dtypes[] = { "f32", "f16", "bf16" };

/* The grid's axes in order: i (x's first block index), j (its second, at
 * rank 2), u (a unit axis).  Exact in any order: a program computes the
 * blocks its index maps give from its own ids wherever their axes are,
 * every output element is written by the one program that owns its block,
 * and the atomic adds into a block of s come from the programs of one i in
 * increasing j in every order the interpreter runs a grid (the GPU's
 * order is any anyway). */
static const char *grid_order(Gen *g)
{
	static const char *const o2[] = { "ij", "ji", "iju", "uji", "jiu", "uij" };
	static const char *const o1[] = { "i", "iu", "ui" };
	return g->rank == 2 ? o2[alt(g, 6)] : o1[alt(g, 3)];
}

/* The grid's extent along `size` in blocks of `blk`: cdiv(size, blk) or
 * (size + blk - 1) ~/ blk, one integer (a launch evaluates both in 64 bits). */
static void extent(Gen *g, Buf *b, const char *size, const char *blk)
{
	if (alt(g, 2))
		buf_add(b, "(%s + %s - 1) ~/ %s", size, blk, blk);
	else
		buf_add(b, "cdiv(%s, %s)", size, blk);
}

static void grid_text(Gen *g, Buf *b, const char *order, const char *seq)
{
	for (const char *a = order; *a; a++) {
		buf_add(b, "%s%s", a == order ? "" : ", ", *a == 'u' || (*a == 'i' && g->rank == 2) ? "" : seq);
		if (*a == 'u')
			buf_add(b, "1");
		else if (*a == 'j')
			extent(g, b, "N", "B1");
		else
			extent(g, b, g->rank == 2 ? "M" : "N", "B0");
	}
}

/* The block index of grid id `id` (i or j) along `size` in blocks of `blk`:
 * id, id % cdiv(size, blk) or min(id, cdiv(size, blk) - 1), all the same
 * for every program (0 <= id < cdiv(size, blk), and sizes are >= 1). */
static void block_index(Gen *g, Buf *b, char id, const char *size, const char *blk)
{
	switch (alt(g, 3)) {
	case 1: buf_add(b, "%c %% cdiv(%s, %s)", id, size, blk); break;
	case 2: buf_add(b, "min(%c, cdiv(%s, %s) - 1)", id, size, blk); break;
	default: buf_add(b, "%c", id); break;
	}
}

/* A parameter's shape, block and index map (params: the map's parameters);
 * s's is its own: f32[M] in blocks of B0 along i. */
static void blockspec(Gen *g, Buf *b, const char *params, bool s)
{
	if (s) {
		buf_add(b, "[M] block (B0) index (%s) -> (", params);
		block_index(g, b, 'i', "M", "B0");
	} else if (g->rank == 2) {
		buf_add(b, "[M, N] block (B0, B1) index (%s) -> (", params);
		block_index(g, b, 'i', "M", "B0");
		buf_add(b, ", ");
		block_index(g, b, 'j', "N", "B1");
	} else {
		buf_add(b, "[N] block (B0) index (%s) -> (", params);
		block_index(g, b, 'i', "N", "B0");
	}
	buf_add(b, ")");
}

/* The dot term of r2 in its spellings: `@`, transpose or swapaxes for .T,
 * the 1/8 as * 0.125 or / 8.0 (the same correctly rounded value), or the
 * operand doubled and 1/16 after.  Exact: scaling by a power of two
 * commutes with every rounding of the products and of the f32 sums, and
 * doubling a T in [-1, 1) is exact (subnormal f16 too): no overflow, and
 * no product or sum of these inputs is small enough to be subnormal. */
static void dot_term(Gen *g, Buf *b)
{
	static const char *const d[] = { "dot(%s, %s.T) * 0.125", "%s @ %s.T * 0.125",
	                                 "0.125 * dot(%s, transpose(%s))", "dot(%s * 2.0, %s.T) * 0.0625",
	                                 "dot(%s, %s.T) / 8.0", "dot(%s, swapaxes(%s, 0, 1)) * 0.125" };
	Buf xb, yb;
	const char *x = read_of(g, &xb, "x"), *y = read_of(g, &yb, "y");
	buf_add(b, d[alt(g, 6)], x, y);
	buf_free(&xb);
	buf_free(&yb);
}

/* The statements after r2: o's store (through scoped scratch or not), q's,
 * a `when`, an atomic into s. */
static void stores(Gen *g, Buf *body, bool atomics)
{
	Buf st = { 0 }, e = { 0 };
	const char *w = g->rank == 2 ? "[B0, B1]" : "[B0]";
	int half = g->rank == 2 ? g->b1 : g->b0; /* the last dim, stored in two halves */
	if (pick(3) == 0) {
		/* w's round trip (an f32 Ref holds an f32 exactly), or none */
		switch (alt(g, 3)) {
		case 1: buf_add(body, "    %s = (r2 + 1.0).astype(T);\n", block_store(g, &st, "o")); break;
		case 2:
			buf_add(body, "    scoped (w: f32%s) {\n        w[...] = r2;\n", w);
			buf_add(body, "        %s = (1.0 + w[...]).astype(T);\n    }\n", block_store(g, &st, "o"));
			break;
		default:
			buf_add(body, "    scoped (w: f32%s) {\n        w[...] = r2;\n", w);
			buf_add(body, "        %s = (w[...] + 1.0).astype(T);\n    }\n", block_store(g, &st, "o"));
			break;
		}
	} else if (half % 2 == 0 && alt(g, 4) == 1) {
		/* in two halves (a slice of a tile is its elements, astype is
		 * elementwise: the same values land in the same places) */
		const char *all = g->rank == 2 ? ":, " : "";
		buf_add(body, "    o[%s0:%d] = r2[%s0:%d].astype(T);\n", all, half / 2, all, half / 2);
		buf_add(body, "    o[%s%d:] = r2[%s%d:].astype(T);\n", all, half / 2, all, half / 2);
	} else {
		buf_add(body, "    %s = r2.astype(T);\n", block_store(g, &st, "o"));
	}
	buf_free(&st);

	/* --self-test's rewrite that is not equivalent: q off by one */
	const char *off = g->sp.perturb ? " + 1" : "";
	char *q = text_of(g, iexpr, 1 + pick(3));
	buf_add(body, "    %s = %s%s%s%s;\n", block_store(g, &st, "q"), *off ? "(" : "", q, *off ? ")" : "", off);
	buf_free(&st);
	free(q);

	if (pick(3) == 0) {
		/* `when c {..} else {..}` is `when !c {..} else {..}` with the blocks
		 * swapped, and two whens of c and !c; pid % 2 is pid & 1 (floor
		 * modulo).  Exact: c is one scalar, computed the same each time. */
		int d = pick(2);
		bool els = pick(2);
		Buf c = { 0 }, nc = { 0 }, qs = { 0 }, os = { 0 };
		switch (alt(g, 3)) {
		case 1: buf_add(&c, "(%s & 1) == %d", g->pid, d); break;
		case 2: buf_add(&c, "%d == %s %% 2", d, g->pid); break;
		default: buf_add(&c, "%s %% 2 == %d", g->pid, d); break;
		}
		if (alt(g, 2))
			buf_add(&nc, "!(%s)", c.s);
		else
			buf_add(&nc, "%s %% 2 != %d", g->pid, d);
		buf_add(&qs, "%s = %s%s;", block_store(g, &st, "q"), K(g), off);
		buf_free(&st);
		buf_add(&os, "%s = %s.astype(T);", block_store(g, &st, "o"), B(g));
		buf_free(&st);
		/* a quarter of the kernels store q in the other branch too, another
		 * expression (branches.c merges the two into one store of a
		 * where); the kernel's choice, so every spelling of it makes it */
		if (pick(4) == 0) {
			char *alt_q = text_of(g, iexpr, 1 + pick(3));
			buf_free(&os);
			buf_add(&os, "%s = %s;", block_store(g, &st, "q"), alt_q);
			buf_free(&st);
			free(alt_q);
		}
		int form = els ? alt(g, 3) : 0;
		if (form == 1)
			buf_add(body, "    when %s {\n        %s\n    } else {\n        %s\n    }\n", nc.s, os.s, qs.s);
		else if (form == 2)
			buf_add(body, "    when %s {\n        %s\n    }\n    when %s {\n        %s\n    }\n", c.s, qs.s,
			        nc.s, os.s);

		else if (els)
			buf_add(body, "    when %s {\n        %s\n    } else {\n        %s\n    }\n", c.s, qs.s, os.s);
		else
			buf_add(body, "    when %s {\n        %s\n    }\n", c.s, qs.s);
		buf_free(&c);
		buf_free(&nc);
		buf_free(&qs);
		buf_free(&os);
	}
	if (atomics) { /* max and min of f32 end the same whatever the order */
		static const char *const red[] = { "sum", "max", "min" }, *const op[] = { "add", "max", "min" };
		const char *r = red[pick(3)];
		const char *o = op[pick(3)];
		/* s or a view of all of it; the reduction as a method */
		static const char *const s[] = { "s", "s.at[...]", "s.at[:]" };
		if (alt(g, 2))
			buf_add(&e, "r2.%s(axis = 1)", r);
		else
			buf_add(&e, "%s(r2, axis = 1)", r);
		buf_add(body, "    atomic_%s(%s, %s);\n", o, s[alt(g, 3)], e.s);
	}
	buf_free(&e);
}

/* Writes kernel fz in spelling sp into text; *t gets T's dtype index. */
static void generate(Gen *g, Spelling sp, Buf *text, int *t, bool *atomics)
{
	static const int blocks[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
	*g = (Gen){ .sp = sp };
	g->rank = 1 + pick(2);
	g->b0 = blocks[pick(g->rank == 2 ? 7 : 8)];
	g->b1 = g->rank == 2 ? blocks[pick(7)] : 1;
	if (g->rank == 2 && pick(3) == 0) /* square: dot and .T */
		g->b0 = g->b1 = blocks[4 + pick(3)];
	*t = pick(3);
	*atomics = g->rank == 2 && pick(3) == 0;
	bool dot = g->rank == 2 && g->b0 == g->b1 && g->b0 >= 16 && pick(2);
	int warps = 1 << pick(4);
	/* a seq axis runs its programs in order inside one CTA: same results */
	const char *seq = pick(4) == 0 ? "seq " : "";
	/* half the kernels take some sizes as run-time arguments (bit 0: M, bit 1: N) */
	int dyn = g->rank == 2 ? pick(4) : pick(2) ? 2 : 0;

	/* num_warps and which sizes are dynamic say how the GPU runs the
	 * kernel, not what it computes */
	if (alt(g, 2))
		warps = 1 << alt(g, 4);
	if (alt(g, 2))
		dyn = g->rank == 2 ? alt(g, 4) : 2 * alt(g, 2);
	const char *order = grid_order(g);
	snprintf(g->pid, sizeof g->pid, "program_id(%d)", (int)(strchr(order, 'i') - order));
	/* loop carries in scratch: 48 KiB of shared memory at most */
	g->scratch_max = 49152 / (4 * g->b0 * g->b1);
	g->nreads = g->rank == 2 ? 11 : 10;
	/* T = f32: astype(f32) changes nothing */
	const char *cast = *t == 0 && alt(g, 2) ? "" : ".astype(f32)";
	static const char *const refs[] = { "x", "y", "n" };
	for (int v = 0; v < 3; v++)
		for (int s = 0; s < g->nreads; s++) {
			Buf b = { 0 };
			block_read(g, &b, refs[v], s);
			snprintf(g->reads[v][s], sizeof g->reads[v][s], "%s%s", b.s, v < 2 ? cast : "");
			buf_free(&b);
		}

	Buf body = { 0 }, rd = { 0 }, helpers = { 0 };
	g->helpers = &helpers;
	g->lets = &body;
	g->top = true;
	buf_add(&body, "    let a = %s%s;\n", read_of(g, &rd, "x"), cast);
	buf_free(&rd);
	buf_add(&body, "    let b = %s%s;\n", read_of(g, &rd, "y"), cast);
	buf_free(&rd);
	buf_add(&body, "    let k = %s;\n", read_of(g, &rd, "n"));
	buf_free(&rd);
	int depth = 1 + pick(3);
	char *r = text_of(g, fexpr, depth);
	buf_add(&body, "    let r = %s;\n", r);
	free(r);
	if (dot) {
		dot_term(g, &rd);
		if (alt(g, 2)) /* r + d is d + r */
			buf_add(&body, "    let r2 = %s + r;\n", rd.s);
		else
			buf_add(&body, "    let r2 = r + %s;\n", rd.s);
		buf_free(&rd);
	} else {
		buf_add(&body, "    let r2 = r;\n");
	}
	stores(g, &body, *atomics);
	buf_add(&body, "}\n");

	/* the head, now that the scratch Refs are known */
	Buf params = { 0 }, grid = { 0 };
	for (const char *a = order; *a; a++)
		buf_add(&params, "%s%c", a == order ? "" : ", ", *a);
	buf_add(text, "%skernel fz[T = %s, B0 = %d", helpers.s ? helpers.s : "", dtypes[*t], g->b0);
	if (g->rank == 2)
		buf_add(text, ", B1 = %d", g->b1);
	buf_add(text, ", num_warps = %d](\n", warps);
	static const char *const decls[] = { "x: in T", "y: in T", "n: in i32", "o: out T", "q: out i32",
	                                     "s: inout f32" };
	for (int i = 0; i < (*atomics ? 6 : 5); i++) {
		buf_add(text, "    %s", decls[i]);
		blockspec(g, text, params.s, i == 5);
		buf_add(text, ",\n");
	}
	for (int c = 0; c < g->scratch; c++)
		buf_add(text, "    c%d: scratch f32%s,\n", c, g->rank == 2 ? "[B0, B1]" : "[B0]");
	static const char *const dyns[] = { "", " dynamic (M)", " dynamic (N)", " dynamic (M, N)" };
	grid_text(g, &grid, order, seq);
	buf_add(text, ")%s grid (%s) {\n%s", dyns[dyn], grid.s, body.s);
	buf_free(&params);
	buf_free(&grid);
	buf_free(&body);
	buf_free(&helpers);
	g->helpers = NULL;
}

/* ---- one round ------------------------------------------------------------- */

typedef struct Round {
	Buf src[1 + MAX_SPELLINGS]; /* the kernel, then its spellings */
	int nsrc;
	int rank, b0, t;
	bool atomics;
	int64_t m, n;
	BlkHostArray *h[NARR + 1]; /* x y n o q [s]: the inputs, then a run's outputs */
	BlkHostArray *ref[NARR + 1]; /* the kernel's outputs in the interpreter */
	int narr;
	int bad;        /* the text a finding is about: 0 the kernel, k its spelling k */
	bool differs;   /* the finding is outputs that differ (not an error) */
	int perturbed;  /* --self-test: the spelling that is not equivalent (else 0) */
	int caught;     /* the stages that reported it: 1 the interpreter, 2 the GPU */
	char caught_err[2048];
	long new_ptx;   /* texts whose PTX was not the same as an earlier text's */
	char err[2048];
} Round;

static const char *const array_names[NARR + 1] = { "x", "y", "n", "o", "q", "s" };

static BlkDType dtype_of(int t)
{
	static const BlkDType d[] = { BLK_F32, BLK_F16, BLK_BF16 };
	return d[t];
}

static void free_inputs(Round *r)
{
	for (int i = 0; i < r->narr; i++) {
		blk_host_free(r->h[i]);
		r->h[i] = NULL;
	}
}

/* Fresh inputs (the same for the same seed), outputs poisoned. */
static void make_arrays(Round *r, uint64_t seed)
{
	int64_t shape[2] = { r->m, r->n };
	int rank = r->rank;
	const int64_t *sh = rank == 2 ? shape : &shape[1];
	BlkDType t = dtype_of(r->t);
	BlkDType dts[] = { t, t, BLK_I32, t, BLK_I32 };
	free_inputs(r);
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

static void free_round(Round *r)
{
	free_inputs(r);
	for (int i = 0; i < r->narr; i++) {
		blk_host_free(r->ref[i]);
		r->ref[i] = NULL;
	}
	for (int k = 0; k < r->nsrc; k++)
		buf_free(&r->src[k]);
}

static bool fail(Round *r, const char *stage, const char *msg)
{
	snprintf(r->err, sizeof r->err, "%s: %s", stage, msg);
	return false;
}

/* 1 and 2: the frontend and the interpreter, on text k. */
static bool interpret(Round *r, int k)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, mem, 5);
	BlkSource *src = blk_source_from_string(a, "fz.blk", r->src[k].s, r->src[k].n);
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

/* Whether a spelling's outputs (r->h) are the kernel's (r->ref) bit for
 * bit.  NaN matches NaN whatever its payload: an operation on two NaNs
 * may keep either's, so x + y and y + x may differ there. */
static bool same_outputs(Round *r)
{
	for (int i = 3; i < r->narr; i++) {
		const BlkHostArray *h = r->h[i], *ref = r->ref[i];
		size_t size = h->count ? h->nbytes / h->count : 0;
		bool fl = blk_dtype_is_float(h->desc.dtype);
		for (size_t e = 0; e < h->count; e++) {
			const char *p = (const char *)h->data + e * size, *q = (const char *)ref->data + e * size;
			if (memcmp(p, q, size) == 0 || (fl && isnan(blk_host_get(h, e)) && isnan(blk_host_get(ref, e))))
				continue;
			char msg[256];
			snprintf(msg, sizeof msg, "%s [%zu] = %.9g, the kernel's %.9g", array_names[i], e,
			         blk_host_get(h, e), blk_host_get(ref, e));
			r->differs = true;
			return fail(r, "interpreter: a spelling differs from the kernel", msg);
		}
	}
	return true;
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

static BlkFunc *load(BlkRuntime *rt, Round *r, int k, BlkProgram **p)
{
	*p = blk_program_load_source(rt, "fz.blk", r->src[k].s, NULL, 0);
	return *p ? blk_program_kernel(*p, "fz") : NULL;
}

static void tensors(Round *r, void *const *data, BlkTensor *ts)
{
	for (int i = 0; i < r->narr; i++)
		ts[i] = blk_tensor_make(data[i], (int)r->h[i]->desc.dtype, r->h[i]->desc.rank,
		                        r->h[i]->desc.shape);
}

/* 3: text k lowered offline to PTX, assembled by ptxas unless its PTX is
 * one assembled before (*seen: the PTX of the texts before, joined). */
static bool lower(Round *r, int k, BlkRuntime *off, const char *ptxas, Buf *seen)
{
	BlkProgram *p;
	BlkFunc *f = load(off, r, k, &p);
	void *data[NARR + 1];
	BlkTensor ts[NARR + 1];
	for (int i = 0; i < r->narr; i++)
		data[i] = r->h[i]->data;
	tensors(r, data, ts);
	BlkCompiledInfo info;
	bool ok = f && blk_func_compile(f, ts, r->narr, &info);
	if (!ok)
		fail(r, "lowering", blk_runtime_last_error(off));
	if (ok && !(seen->s && strstr(seen->s, info.ptx))) {
		r->new_ptx++;
		if (ptxas)
			ok = ptxas_ok(r, ptxas, info.ptx, blk_runtime_arch(off));
		buf_add(seen, "%s", info.ptx);
	}
	blk_program_destroy(p);
	return ok;
}

/* 4: text k on the GPU from the same inputs, outputs poisoned, against the
 * interpreter's results (r->ref; every spelling's are the same bits). */
static bool on_gpu(Round *r, int k, BlkRuntime *rt, uint64_t seed)
{
	BlkProgram *p;
	BlkFunc *f = load(rt, r, k, &p);
	void *dev[NARR + 1] = { 0 };
	BlkTensor ts[NARR + 1];
	make_arrays(r, seed); /* fresh inputs: the last run wrote into the last ones */
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
			r->differs = true;
			ok = fail(r, "gpu vs interpreter", msg);
		}
		free(want);
	}
	for (int i = 0; i < r->narr; i++)
		blk_mem_free(rt, dev[i]);
	blk_program_destroy(p);
	return ok;
}

typedef struct Options {
	uint64_t seed;
	long count;
	double seconds;
	int spellings;
	bool self_test, gpu, ptxas, print;
} Options;

/* Whether text k passed a stage (ok); --self-test's perturbed spelling
 * passes when its outputs differ, which is recorded as caught by stage. */
static bool passed(Round *r, int k, bool ok, int stage)
{
	if (k != r->perturbed || k == 0)
		return ok;
	if (!ok && r->differs) {
		size_t n = strlen(r->caught_err);
		snprintf(r->caught_err + n, sizeof r->caught_err - n, "%s%s", r->caught ? "\n// " : "", r->err);
		r->caught |= stage;
		r->differs = false;
		return true;
	}
	if (ok)
		snprintf(r->err, sizeof r->err, "self-test: the perturbed spelling passed %s",
		         stage == 1 ? "the interpreter's comparison" : "the GPU's comparison");
	return false;
}

/* The kernel of seed and its spellings, run through every stage. */
static bool round_run(Round *r, uint64_t seed, const Options *o, BlkRuntime *off, const char *ptxas,
                      BlkRuntime *gpu)
{
	Gen g;
	int t;
	bool atomics;
	rng_state = seed;
	generate(&g, (Spelling){ 0 }, &r->src[0], &r->t, &r->atomics);
	r->rank = g.rank;
	r->b0 = g.b0;
	r->m = 1 + pick(3 * g.b0);
	r->n = 1 + pick(g.rank == 2 ? 3 * g.b1 : 3 * g.b0);
	r->nsrc = 1 + o->spellings;
	r->perturbed = o->self_test ? 1 : 0;
	for (int k = 1; k < r->nsrc; k++) {
		rng_state = seed; /* the same kernel, */
		Spelling sp = { .on = true, .perturb = k == r->perturbed, .state = seed * 64 + (uint64_t)k };
		generate(&g, sp, &r->src[k], &t, &atomics); /* spelled otherwise */
		if (g.rank != r->rank || g.b0 != r->b0 || t != r->t || atomics != r->atomics) {
			fprintf(stderr, "kernel-fuzz: spelling %d of seed %llu is another kernel\n", k,
			        (unsigned long long)seed);
			abort();
		}
	}
	r->bad = 0;
	r->differs = false;
	r->caught = 0;
	r->caught_err[0] = 0;
	make_arrays(r, seed);
	bool ok = interpret(r, 0);
	for (int i = 0; i < r->narr; i++) { /* the interpreter's results, kept */
		r->ref[i] = blk_host_new(r->h[i]->desc.dtype, r->h[i]->desc.rank, r->h[i]->desc.shape);
		memcpy(r->ref[i]->data, r->h[i]->data, r->h[i]->nbytes);
	}
	for (int k = 1; ok && k < r->nsrc; k++) {
		r->bad = k;
		make_arrays(r, seed);
		ok = interpret(r, k);
		ok = ok ? passed(r, k, same_outputs(r), 1) : ok;
	}
	Buf seen = { 0 };
	for (int k = 0; ok && k < r->nsrc; k++) {
		r->bad = k;
		ok = lower(r, k, off, ptxas, &seen);
	}
	buf_free(&seen);
	for (int k = 0; ok && gpu && k < r->nsrc; k++) {
		r->bad = k;
		ok = passed(r, k, on_gpu(r, k, gpu, seed), 2);
	}
	if (ok)
		r->bad = 0;
	return ok;
}

/* ---- the driver ------------------------------------------------------------ */

static bool parse(int argc, char **argv, Options *o)
{
	*o = (Options){ .seed = 1, .count = 50, .seconds = 0, .spellings = 1, .ptxas = true };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			o->seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			o->count = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			o->seconds = strtod(argv[++i], NULL), o->count = 0;
		else if (strcmp(argv[i], "--spellings") == 0 && i + 1 < argc)
			o->spellings = atoi(argv[++i]);
		else if (strcmp(argv[i], "--self-test") == 0)
			o->self_test = true;
		else if (strcmp(argv[i], "--gpu") == 0)
			o->gpu = true;
		else if (strcmp(argv[i], "--no-ptxas") == 0)
			o->ptxas = false;
		else if (strcmp(argv[i], "--print") == 0)
			o->print = true;
		else
			return false;
	}
	if (o->self_test && o->spellings < 1)
		o->spellings = 1;
	return o->spellings >= 0 && o->spellings <= MAX_SPELLINGS;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void report(const Round *r, uint64_t seed, bool ok, bool all)
{
	printf("// seed %llu: %s M=%lld N=%lld\n%s", (unsigned long long)seed, ok ? "ok" : "FINDING",
	       (long long)r->m, (long long)r->n, r->src[0].s);
	for (int k = 1; k < r->nsrc; k++)
		if (all || k == r->bad)
			printf("// spelling %d of seed %llu (the same kernel%s):\n%s", k, (unsigned long long)seed,
			       k == r->bad && !ok ? "; the finding is about this text" : "", r->src[k].s);
	if (!ok)
		printf("// %s\n\n", r->err);
}

int main(int argc, char **argv)
{
	Options o;
	if (!parse(argc, argv, &o)) {
		fprintf(stderr, "usage: kernel-fuzz [--seed S] [--count N] [--seconds T] [--spellings N (0-%d)] "
		                "[--self-test] [--gpu] [--no-ptxas] [--print]\n", MAX_SPELLINGS);
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
	long done = 0, findings = 0, caught = 0, texts = 0, new_ptx = 0;
	static Round r;
	for (uint64_t s = o.seed; o.count ? done < o.count : now() - t0 < o.seconds; s++, done++) {
		bool ok = round_run(&r, s, &o, off, ptxas, gpu);
		texts += r.nsrc;
		new_ptx += r.new_ptx;
		r.new_ptx = 0;
		if (o.self_test && ok) { /* every stage that compares reported the perturbed spelling */
			bool all = r.caught == (gpu ? 3 : 1);
			if (!all) {
				ok = false;
				r.bad = r.perturbed;
				snprintf(r.err, sizeof r.err, "self-test: the GPU's comparison passed the perturbed spelling");
			} else if (caught++ == 0) {
				printf("// --self-test: the first report of a perturbed spelling, as a finding reads:\n");
				snprintf(r.err, sizeof r.err, "%s", r.caught_err);
				r.bad = r.perturbed;
				report(&r, s, false, false);
			}
		}
		if (o.print || !ok)
			report(&r, s, ok, o.print || o.self_test);
		findings += !ok;
		free_round(&r);
	}
	if (o.self_test)
		printf("kernel-fuzz: self-test: %ld of %ld perturbed spellings reported (%s)\n", caught, done,
		       gpu ? "interpreter and GPU" : "interpreter");
	printf("kernel-fuzz: %ld kernels from seed %llu, %d spelling%s each (%ld texts, %ld distinct PTX; "
	       "%s%s%s), %ld findings, %.1f s\n",
	       done, (unsigned long long)o.seed, o.spellings, o.spellings == 1 ? "" : "s", texts, new_ptx,
	       "frontend, interpreter, lowering", ptxas ? ", ptxas" : "",
	       gpu ? ", GPU against the interpreter" : "", findings, now() - t0);
	blk_runtime_destroy(gpu);
	blk_runtime_destroy(off);
	return findings ? 1 : 0;
}
