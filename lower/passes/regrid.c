/* regrid.c - a one-axis grid whose programs walk a rectangle of blocks in
 * some order (Triton's matmul: `pid_m`, `pid_n` computed from one
 * program id, rows grouped GROUP_M at a time for L2) becomes the
 * two-axis grid of that rectangle, as matmul.blk writes it.
 *
 * Requires: specialize (constant shapes and grid).  Produces: grid (A, B)
 * for grid (A * B); each index map of (i, j), and the body's program ids
 * program_id(0) and program_id(1): every value the program id's arithmetic
 * gave to the rest (a block index, a ds start, pid_m itself) rewritten as
 * β + α * i (or j), the arithmetic gone; attr regrid = G on the body's
 * program_id(0).  blockspec then sees matmul.blk's form (its masks and
 * axis order included).
 *
 * Which kernels: one parallel grid axis of a constant G programs; the
 * program id used only through scalar i32 arithmetic (+ - * ~/ % min max,
 * constants) -- in the index maps and in the body -- whose results leave
 * it (the "sinks": yielded block indices, block starts) each an arithmetic
 * progression β + α·t over t = 0..n-1 with every t taken; the sinks'
 * t's two functions of the program id, F1 (extent A) and F2 (extent B),
 * with A·B = G and (F1, F2) one to one -- checked by evaluating every sink
 * at every program id (G <= MAX_PROGRAMS).  No num_programs, no prefetch
 * tables, one rank, no dynamic sizes.
 *
 * Why: the programs and the blocks each one computes are the same; only
 * their launch order changes, which blk chooses itself (persist's tile
 * order, coarsen's merged neighbours, CTA pairs).  Those passes recognise
 * a block start `program_id(a) * C`; behind Triton's swizzle they saw an
 * opaque 1-D grid, and its 64x64 tiles ran at 0.4 of cuBLAS where
 * matmul.blk's ran at 0.9.  F1 is the function of the first sink in
 * program order (a's rows in a matmul), so it takes CUDA x as matmul.blk's
 * row axis does. */
#include "lower/lower_int.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_PROGRAMS = 1 << 17, MAX_WORK = 1 << 24, MAX_CONE = 4096 };

typedef struct Regrid {
	LowerCtx *c;
	BlkPtrMap in_cone; /* value -> 1 + its cone index */
	BlkValue *cone[MAX_CONE]; /* in program order; a root (the program id) first in its region */
	int ncone;
	BlkValue *sink[MAX_CONE];
	int site[MAX_CONE]; /* the sink's region: -1 the body, else its param's index map */
	int nsink;
	bool ok;
} Regrid;

static int cone_index(const Regrid *g, const BlkValue *v)
{
	return (int)(uintptr_t)blk_pmap_get(&g->in_cone, v) - 1;
}

static bool arith(BlkOpKind k)
{
	return k == BLK_OP_ADD || k == BLK_OP_SUB || k == BLK_OP_MUL || k == BLK_OP_FLOORDIV ||
	       k == BLK_OP_MOD || k == BLK_OP_MIN || k == BLK_OP_MAX;
}

static void add_cone(Regrid *g, BlkValue *v)
{
	if (g->ncone == MAX_CONE) {
		g->ok = false;
		return;
	}
	g->cone[g->ncone++] = v;
	blk_pmap_put(g->c->a, &g->in_cone, v, (void *)(uintptr_t)g->ncone);
}

static void add_sink(Regrid *g, BlkValue *v, int site)
{
	for (int i = 0; i < g->nsink; i++)
		if (g->sink[i] == v)
			return;
	if (g->nsink == MAX_CONE) {
		g->ok = false;
		return;
	}
	g->site[g->nsink] = site;
	g->sink[g->nsink++] = v;
}

/* The cone: the program id (the body's program_id, an index map's
 * argument) and the scalar arithmetic on it; a cone value any other op
 * reads is a sink. */
static void find_cone(Regrid *g, BlkRegion *r, int site)
{
	for (BlkOp *op = r->first; op && g->ok; op = op->next) {
		if (op->kind == BLK_OP_NUM_PROGRAMS) {
			g->ok = false;
			return;
		}
		bool from_pid = false, rest_const = true;
		for (int i = 0; i < op->noperands; i++) {
			int64_t v;
			if (cone_index(g, op->operands[i]) >= 0)
				from_pid = true;
			else if (!blk_lower_const_int(op->operands[i], &v))
				rest_const = false;
		}
		bool scalar = op->nresults == 1 && op->results[0]->type.rank == 0 &&
		              op->results[0]->type.dtype == BLK_I32;
		if (op->kind == BLK_OP_PROGRAM_ID || (from_pid && rest_const && scalar && arith(op->kind) &&
		                                      op->noperands == 2 && op->nregions == 0)) {
			add_cone(g, op->results[0]);
			continue;
		}
		for (int i = 0; i < op->noperands; i++)
			if (cone_index(g, op->operands[i]) >= 0)
				add_sink(g, op->operands[i], site);
		for (int i = 0; i < op->nregions; i++)
			find_cone(g, op->regions[i], site);
	}
}

static bool eval(const BlkValue *v, const int32_t *val, const Regrid *g, int32_t pid, int32_t *out)
{
	const BlkOp *op = v->def;
	if (!op || op->kind == BLK_OP_PROGRAM_ID) /* a root */
		return *out = pid, true;
	int64_t x[2];
	for (int i = 0; i < 2; i++) {
		int k = cone_index(g, op->operands[i]);
		if (k >= 0)
			x[i] = val[k];
		else
			blk_lower_const_int(op->operands[i], &x[i]);
	}
	int32_t a = (int32_t)x[0], b = (int32_t)x[1];
	switch (op->kind) {
	case BLK_OP_ADD: *out = (int32_t)((uint32_t)a + (uint32_t)b); return true;
	case BLK_OP_SUB: *out = (int32_t)((uint32_t)a - (uint32_t)b); return true;
	case BLK_OP_MUL: *out = (int32_t)((uint32_t)a * (uint32_t)b); return true;
	case BLK_OP_FLOORDIV: if (!b) return false; *out = blk_i32_floordiv(a, b); return true;
	case BLK_OP_MOD: if (!b) return false; *out = blk_i32_mod(a, b); return true;
	case BLK_OP_MIN: *out = a < b ? a : b; return true;
	case BLK_OP_MAX: *out = a > b ? a : b; return true;
	default: return false;
	}
}

/* A sink's values over the programs as β + α·t, t in 0..n-1 every one
 * taken (t[] per program); n = 1 for a constant. */
typedef struct Prog {
	int64_t beta, alpha, n;
	int32_t *t;
	int axis; /* 0: F1, 1: F2, -1: constant */
} Prog;

static int64_t gcd(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b, b = t;
	}
	return a;
}

static bool progression(LowerCtx *c, const int32_t *v, int64_t G, Prog *p)
{
	int64_t lo = v[0], hi = v[0], al = 0;
	for (int64_t i = 1; i < G; i++)
		lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
	for (int64_t i = 0; i < G; i++)
		al = gcd(al, v[i] - lo);
	p->beta = lo, p->alpha = al ? al : 1, p->n = al ? (hi - lo) / al + 1 : 1;
	if (p->n > G)
		return false;
	p->t = BLK_NEW_N(c->a, int32_t, G);
	bool *hit = calloc((size_t)p->n, 1);
	if (!hit)
		return false;
	int64_t seen = 0;
	for (int64_t i = 0; i < G; i++) {
		p->t[i] = (int32_t)((v[i] - lo) / p->alpha);
		seen += !hit[p->t[i]];
		hit[p->t[i]] = true;
	}
	free(hit);
	return seen == p->n;
}

/* β + α·x, built before `at` (or at r's end): x itself where α = 1 and
 * β = 0, the start coarsen and persist know (program_id(a) * C) where β =
 * 0. */
static BlkValue *affine(LowerCtx *c, BlkRegion *r, BlkOp *at, BlkLoc loc, BlkValue *x, const Prog *p)
{
	BlkBuilder b;
	BlkType i32 = blk_type_scalar(BLK_I32);
	if (at)
		blk_builder_before(&b, c->a, at);
	else
		blk_builder_at_end(&b, c->a, r);
	if (p->axis < 0)
		return blk_build_const_int(&b, loc, i32, p->beta);
	BlkValue *v[2] = { x, NULL };
	if (p->alpha != 1) {
		v[1] = blk_build_const_int(&b, loc, i32, p->alpha);
		x = blk_build1(&b, BLK_OP_MUL, loc, i32, 2, v);
	}
	if (p->beta != 0) {
		v[0] = x, v[1] = blk_build_const_int(&b, loc, i32, p->beta);
		x = blk_build1(&b, BLK_OP_ADD, loc, i32, 2, v);
	}
	return x;
}

/* The pass itself; every refusal just returns, leaving the kernel as it is. */
static void regrid(LowerCtx *c, Regrid *gp)
{
	BlkKernel *k = c->k;
	int64_t G;
	if (k->grid_rank != 1 || k->grid_seq[0] || !blk_sym_is_const(k->grid[0], &G) || G < 4 ||
	    G > MAX_PROGRAMS || blk_kernel_multi_rank(k) || blk_lower_is_dynamic(c))
		return;
	for (int pi = 0; pi < k->nparams && gp->ok; pi++) {
		BlkRegion *m = k->params[pi].index_map;
		if (k->params[pi].prefetch || (m && m->nargs != 1))
			return;
		if (m) {
			add_cone(gp, m->args[0]);
			find_cone(gp, m, pi);
		}
	}
	find_cone(gp, k->body, -1);
	if (!gp->ok || !gp->nsink || (int64_t)gp->ncone * G > MAX_WORK)
		return;
	/* every sink at every program */
	int32_t *val = malloc(sizeof *val * (size_t)gp->ncone);
	int32_t **sv = BLK_NEW_N(c->a, int32_t *, gp->nsink);
	for (int s = 0; s < gp->nsink; s++)
		sv[s] = BLK_NEW_N(c->a, int32_t, G);
	bool ok = val != NULL;
	for (int64_t pid = 0; ok && pid < G; pid++) {
		for (int i = 0; ok && i < gp->ncone; i++)
			ok = eval(gp->cone[i], val, gp, (int32_t)pid, &val[i]);
		for (int s = 0; ok && s < gp->nsink; s++)
			sv[s][pid] = val[cone_index(gp, gp->sink[s])];
	}
	free(val);
	if (!ok)
		return;
	/* the sinks' progressions and the two functions */
	Prog *pr = BLK_NEW_N(c->a, Prog, gp->nsink);
	const int32_t *F[2] = { NULL, NULL };
	int64_t ext[2] = { 0, 0 };
	for (int s = 0; s < gp->nsink; s++) {
		if (!progression(c, sv[s], G, &pr[s]))
			return;
		pr[s].axis = -1;
		if (pr[s].n == 1)
			continue;
		int a = 0;
		while (a < 2 && F[a] && memcmp(F[a], pr[s].t, sizeof *F[a] * (size_t)G) != 0)
			a++;
		if (a == 2)
			return; /* a third function of the program id */
		if (!F[a])
			F[a] = pr[s].t, ext[a] = pr[s].n;
		pr[s].axis = a;
	}
	if (!F[1] || ext[0] * ext[1] != G)
		return;
	bool *pair = calloc((size_t)G, 1);
	if (!pair)
		return;
	for (int64_t pid = 0; ok && pid < G; pid++) {
		int64_t at = F[0][pid] * ext[1] + F[1][pid];
		ok = !pair[at];
		pair[at] = true;
	}
	free(pair);
	if (!ok)
		return;
	/* The rewrite.  The axes' values: the body's two new program ids (its
	 * first ops), each index map's argument and a second one. */
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *body_ax[2];
	BlkBuilder b;
	blk_builder_before(&b, c->a, k->body->first);
	for (int a = 0; a < 2; a++) {
		BlkOp *op = blk_build(&b, BLK_OP_PROGRAM_ID, k->loc, 0, NULL, 1, &i32, 0);
		blk_op_set_int(c->a, op, "axis", a);
		body_ax[a] = op->results[0];
	}
	/* --dump-after shows the decision: the programs the one axis had */
	blk_op_set_int(c->a, body_ax[0]->def, "regrid", G);
	BlkValue **map_ax = BLK_NEW_N(c->a, BlkValue *, 2 * k->nparams + 1);
	for (int pi = 0; pi < k->nparams; pi++) {
		BlkRegion *m = k->params[pi].index_map;
		if (!m)
			continue;
		BlkValue *i = blk_region_add_arg(c->a, m, i32, "i"); /* the old argument's uses all go */
		map_ax[2 * pi] = i;
		map_ax[2 * pi + 1] = blk_region_add_arg(c->a, m, i32, "j");
	}
	for (int s = 0; s < gp->nsink; s++) {
		BlkValue *v = gp->sink[s], *ax = pr[s].axis < 0 ? NULL
		                            : gp->site[s] < 0 ? body_ax[pr[s].axis] : map_ax[2 * gp->site[s] + pr[s].axis];
		BlkRegion *r = gp->site[s] < 0 ? k->body : k->params[gp->site[s]].index_map;
		BlkOp *def = v->def;
		BlkValue *nv = def ? affine(c, def->parent, def->next, def->loc, ax, &pr[s])
		                   : affine(c, r, r->first, k->loc, ax, &pr[s]);
		blk_replace_uses(r, v, nv);
	}
	for (int i = gp->ncone - 1; i >= 0; i--)
		if (gp->cone[i]->def)
			blk_op_erase(gp->cone[i]->def);
	/* the index maps' old argument (now unused) goes, and the constants
	 * only the swizzle read */
	for (int pi = 0; pi < k->nparams; pi++) {
		BlkRegion *m = k->params[pi].index_map;
		if (!m)
			continue;
		BlkPtrMap used = { 0 };
		for (BlkOp *op = m->first; op; op = op->next)
			for (int i = 0; i < op->noperands; i++)
				blk_pmap_put(c->a, &used, op->operands[i], op);
		for (BlkOp *op = m->first, *next; op; op = next) {
			next = op->next;
			if (op->kind == BLK_OP_CONST && !blk_pmap_get(&used, op->results[0]))
				blk_op_erase(op);
		}
		m->args[0] = m->args[1], m->args[1] = m->args[2];
		m->args[0]->index = 0, m->args[1]->index = 1;
		m->nargs = 2;
	}
	k->grid_rank = 2;
	k->grid[0] = blk_sym_const(c->a, ext[0]);
	k->grid[1] = blk_sym_const(c->a, ext[1]);
	k->grid_seq[1] = false;
}

bool blk_lower_regrid(LowerCtx *c)
{
	Regrid g = { .c = c, .ok = true };
	regrid(c, &g);
	return true;
}
