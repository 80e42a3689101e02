/* auto.c - values for `auto` compile-time parameters, chosen per launch by
 * the cost model (lower/cost.c), and the space the tuner searches when it
 * has no candidates.
 *
 * The space (blk_auto_space) comes from how the kernel uses each
 * parameter (the frontend records it, ir.h BlkCParam.uses):
 *   num_warps   4, 8 with a dot (a warpgroup is 4); 1, 2, 4, 8 without;
 *   num_stages  2, 3, 4 when a dot runs in a loop (its operands staged);
 *               else it changes nothing and keeps its value;
 *   a size      (a block dim, a tile's shape, a ds width): with a dot,
 *               16 .. 256 in powers of two (the tensor cores' instruction
 *               shapes are multiples of 16, and 256 is the widest wgmma);
 *               without, 1 .. 4096 (rows of a norm, elements of an add);
 *   other ints  (a count of programs in the grid, as split-K's S, or a
 *               value) 1, 2, 4, 8, 16.
 * The choice, in two rounds:
 *   1. every point of the parameters other than num_warps and num_stages
 *      is compiled by the frontend and lowered to tile level
 *      (blk_lower_cost_work); the model's estimate with the resources
 *      guessed for each num_warps and num_stages ranks all points;
 *   2. the best FINALISTS are lowered through every IR pass
 *      (blk_lower_cost), and the model's full estimate orders them; if
 *      the lowering refuses them all, the next FINALISTS, up to
 *      MAX_LOWERED points in all.
 * A point the frontend or the lowering refuses (a tile too big for the
 * registers, shared memory over the SM's) is left out; a compiler bug in
 * one (blk_die) is too, under blk_guard.
 */
#include "auto.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FINALISTS = 24, MAX_POINTS = 4096, MAX_LOWERED = 8 * FINALISTS };

bool blk_auto_any(const BlkKernel *k)
{
	for (int i = 0; k && i < k->ncparams; i++)
		if (k->cparams[i].is_auto)
			return true;
	return false;
}

/* ---- the space ------------------------------------------------------- */

static bool has_dot(const BlkRegion *r, bool in_loop, bool want_loop)
{
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		if (op->kind == BLK_OP_DOT && (in_loop || !want_loop))
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (has_dot(op->regions[i], in_loop || op->kind == BLK_OP_FOR, want_loop))
				return true;
	}
	return false;
}

static void powers(BlkAutoParam *p, int64_t lo, int64_t hi)
{
	p->n = 0;
	for (int64_t v = lo; v <= hi && p->n < BLK_AUTO_MAX_VALUES; v *= 2)
		p->v[p->n++] = v;
}

static bool named(const BlkDefine *fixed, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(fixed[i].name, name) == 0)
			return true;
	return false;
}

/* The values of cp in the space, or false when it is not in it. */
static bool param_values(const BlkKernel *k, const BlkCParam *cp, bool every_int, BlkAutoParam *p)
{
	bool dot = has_dot(k->body, false, false);
	bool warps = strcmp(cp->name, "num_warps") == 0, stages = strcmp(cp->name, "num_stages") == 0;
	bool size = (cp->uses & BLK_CPARAM_IN_SIZE) && !(cp->uses & BLK_CPARAM_IN_SHAPE);
	bool grid = (cp->uses & BLK_CPARAM_IN_GRID) && !(cp->uses & BLK_CPARAM_IN_SHAPE);
	if (cp->kind != BLK_CPARAM_INT ||
	    (!cp->is_auto && !(every_int && (warps || stages || size || grid))))
		return false;
	p->name = cp->name;
	p->sized = !warps && !stages;
	if (warps && dot)
		powers(p, 4, 8);
	else if (warps)
		powers(p, 1, 8);
	else if (stages && has_dot(k->body, false, true))
		p->v[0] = 2, p->v[1] = 3, p->v[2] = 4, p->n = 3;
	else if (stages)
		p->v[0] = cp->i, p->n = 1;
	else if (size)
		powers(p, dot ? 16 : 1, dot ? 256 : 4096);
	else
		powers(p, 1, 16);
	return true;
}

bool blk_auto_space(const BlkKernel *k, bool every_int, const BlkDefine *fixed, int nfixed,
                    BlkAutoSpace *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; i < k->ncparams && out->n < BLK_AUTO_MAX_PARAMS; i++) {
		const BlkCParam *cp = &k->cparams[i];
		if (!cp->is_auto && named(fixed, nfixed, cp->name))
			continue;
		if (param_values(k, cp, every_int, &out->p[out->n]))
			out->n++;
	}
	return out->n > 0;
}

/* ---- points and their defines ------------------------------------------ */

BlkDefine *blk_auto_defines(BlkArena *a, const BlkDefine *defs, int ndefs, const BlkAutoSpace *sp,
                            const BlkAutoPoint *pt, int *n)
{
	BlkDefine *out = BLK_NEW_N(a, BlkDefine, ndefs + sp->n + 1);
	int m = 0;
	for (int i = 0; i < ndefs; i++) {
		bool in_space = false;
		for (int j = 0; j < sp->n; j++)
			in_space |= strcmp(defs[i].name, sp->p[j].name) == 0;
		if (!in_space)
			out[m++] = defs[i];
	}
	for (int j = 0; j < sp->n; j++) {
		char buf[32];
		snprintf(buf, sizeof buf, "%" PRId64, pt->v[j]);
		out[m].name = sp->p[j].name;
		out[m++].value = blk_arena_strdup(a, buf);
	}
	*n = m;
	return out;
}

void blk_auto_point_text(const BlkAutoSpace *sp, const BlkAutoPoint *pt, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int j = 0; j < sp->n && used < len; j++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s=%" PRId64, j ? "," : "",
		                         sp->p[j].name, pt->v[j]);
}

static int find_param(const BlkAutoSpace *sp, const char *name)
{
	for (int j = 0; j < sp->n; j++)
		if (strcmp(sp->p[j].name, name) == 0)
			return j;
	return -1;
}

/* ---- one point through the compiler ------------------------------------- */

/* What one point's compile needs and gives, run under blk_guard. */
typedef struct Job {
	const BlkSource *src;
	const BlkDefine *defs;
	int ndefs;
	const char *kernel;
	const int64_t *sizes;
	const BlkArrayDesc *arrays;
	const BlkLowerOptions *opt;
	BlkDiag *d;
	BlkArena *a;
	bool full;          /* every IR pass (else: tile level) */
	BlkCostWork work;   /* out, !full */
	BlkCost cost;       /* out, full */
	const BlkKernel *k; /* out: the kernel compiled */
} Job;

static bool job_run(void *arg)
{
	Job *j = arg;
	BlkModule *m = blk_compile_source(j->a, j->d, j->src, j->defs, j->ndefs);
	const BlkKernel *k = m ? m->first : NULL;
	while (k && strcmp(k->name, j->kernel) != 0)
		k = k->next;
	j->k = k;
	if (!k)
		return false;
	return j->full ? blk_lower_cost(j->a, j->d, k, j->sizes, j->arrays, j->opt, &j->cost)
	               : blk_lower_cost_work(j->a, j->d, k, j->sizes, j->arrays, j->opt, &j->work);
}

/* The first refusal's text, reported only when no point lowers. */
typedef struct Refusal {
	char text[400];
} Refusal;

/* Compiles one point in a fresh arena (destroyed by the caller). */
static bool job_do(Job *j, Refusal *first)
{
	char bug[300] = "";
	j->a = blk_arena_create();
	j->d = blk_diag_create(j->a, NULL, 1);
	bool ok = blk_guard(job_run, j, bug, sizeof bug) && !blk_diag_error_count(j->d);
	if (!ok && !first->text[0]) {
		const char *e = bug[0] ? bug : blk_diag_last_error(j->d);
		snprintf(first->text, sizeof first->text, "%s", e ? e : "refused");
	}
	return ok;
}

/* ---- ranking ----------------------------------------------------------- */

/* By the estimate in steps of 0.5% (closer is a tie, within what the
 * model can tell), then by the compute and memory bounds summed: of two
 * equal estimates the one that asks less of the SM (wider dots, the SFUs
 * beside them, fewer wasted bytes) -- memory-bound kernels tie at the
 * DRAM floor; then by registers a thread (attention's 8 warps over 4 at
 * one tile: 0.366 against 0.430 ms, gpu-notes run 133). */
static int by_us(const void *x, const void *y)
{
	const BlkAutoPoint *p = x, *q = y;
	double a = floor(log(p->us) / log(1.005)), b = floor(log(q->us) / log(1.005));
	if (a != b)
		return a < b ? -1 : 1;
	if (p->busy_us != q->busy_us)
		return p->busy_us < q->busy_us ? -1 : 1;
	return (p->regs > q->regs) - (p->regs < q->regs); /* then the one further from spilling */
}

/* Steps the odometer over the sized params; false after the last point. */
static bool next_point(const BlkAutoSpace *sp, int *idx)
{
	for (int j = 0; j < sp->n; j++) {
		if (!sp->p[j].sized)
			continue;
		if (++idx[j] < sp->p[j].n)
			return true;
		idx[j] = 0;
	}
	return false;
}

/* Appends the point's num_warps x num_stages variants, guessed. */
static int add_variants(const BlkAutoSpace *sp, const int *idx, const BlkCostWork *w,
                        const BlkKernel *k, const BlkLowerOptions *opt, BlkAutoPoint *all, int n)
{
	int jw = find_param(sp, "num_warps"), js = find_param(sp, "num_stages");
	int nw = jw >= 0 ? sp->p[jw].n : 1, ns = js >= 0 ? sp->p[js].n : 1;
	for (int a = 0; a < nw; a++)
		for (int b = 0; b < ns && n < MAX_POINTS; b++) {
			BlkAutoPoint *pt = &all[n++];
			for (int j = 0; j < sp->n; j++)
				pt->v[j] = sp->p[j].v[sp->p[j].sized ? idx[j] : 0];
			if (jw >= 0)
				pt->v[jw] = sp->p[jw].v[a];
			if (js >= 0)
				pt->v[js] = sp->p[js].v[b];
			BlkCost c;
			blk_lower_cost_guess(w, jw >= 0 ? (int)pt->v[jw] : k->num_warps,
			                     js >= 0 ? (int)pt->v[js] : k->num_stages, opt, &c);
			pt->us = c.us;
			pt->busy_us = c.compute_us + c.memory_us;
			pt->regs = c.regs;
		}
	return n;
}

/* Round 1: every sized point at tile level, its variants guessed. */
static int first_round(Job *base, const BlkAutoSpace *sp, const BlkKernel *k, BlkAutoPoint *all,
                       Refusal *first)
{
	int idx[BLK_AUTO_MAX_PARAMS] = { 0 }, n = 0;
	do {
		BlkAutoPoint pt = { { 0 }, 0, 0, 0 };
		for (int j = 0; j < sp->n; j++)
			pt.v[j] = sp->p[j].v[sp->p[j].sized ? idx[j] : 0];
		BlkArena *scratch = blk_arena_create();
		Job j = *base;
		j.full = false;
		j.defs = blk_auto_defines(scratch, base->defs, base->ndefs, sp, &pt, &j.ndefs);
		if (job_do(&j, first) && isfinite(j.work.programs))
			n = add_variants(sp, idx, &j.work, k, base->opt, all, n);
		blk_arena_destroy(j.a);
		blk_arena_destroy(scratch);
	} while (n < MAX_POINTS && next_point(sp, idx));
	return n;
}

/* Round 2: the finalists through every IR pass; refused ones drop out. */
static int second_round(Job *base, const BlkAutoSpace *sp, BlkAutoPoint *pts, int n,
                        Refusal *first, BlkCost *best)
{
	int kept = 0;
	for (int i = 0; i < n; i++) {
		BlkArena *scratch = blk_arena_create();
		Job j = *base;
		j.full = true;
		j.defs = blk_auto_defines(scratch, base->defs, base->ndefs, sp, &pts[i], &j.ndefs);
		if (job_do(&j, first) && isfinite(j.cost.us)) {
			pts[i].us = j.cost.us;
			pts[i].busy_us = j.cost.compute_us + j.cost.memory_us;
			pts[i].regs = j.cost.regs;
			if (kept == 0 || j.cost.us < best->us)
				*best = j.cost;
			pts[kept++] = pts[i];
		}
		blk_arena_destroy(j.a);
		blk_arena_destroy(scratch);
	}
	qsort(pts, (size_t)kept, sizeof *pts, by_us);
	return kept;
}

int blk_auto_rank(const BlkSource *src, const BlkDefine *defs, int ndefs, const BlkKernel *k,
                  const BlkAutoSpace *sp, const int64_t *sizes, const BlkArrayDesc *arrays,
                  const BlkLowerOptions *opt, BlkDiag *d, BlkAutoPoint *pts, int npoints,
                  BlkAutoChoice *info)
{
	BlkAutoPoint *all = calloc(MAX_POINTS, sizeof *all);
	if (!all)
		return 0;
	Job base = { .src = src, .defs = defs, .ndefs = ndefs, .kernel = k->name, .sizes = sizes,
	             .arrays = arrays, .opt = opt };
	Refusal first = { "" };
	int n = first_round(&base, sp, k, all, &first);
	qsort(all, (size_t)n, sizeof *all, by_us);
	int fin = npoints > FINALISTS ? npoints : FINALISTS;
	fin = n < fin ? n : fin;
	BlkCost best = { 0 };
	/* where the lowering refuses every finalist (the model's guess of the
	 * shared memory missed, as for several f32 dots staged one by one), the
	 * next ones in the ranking, a batch at a time */
	int kept = 0, start = 0, lowered = 0;
	while (kept == 0 && start < n && lowered < MAX_LOWERED) {
		int m = n - start < fin ? n - start : fin;
		kept = second_round(&base, sp, all + start, m, &first, &best);
		if (kept && start)
			memmove(all, all + start, sizeof *all * (size_t)kept);
		start += m;
		lowered += m;
	}
	if (kept == 0) {
		BlkLoc none = { 0 };
		blk_error(d, none, "kernel %s: no value of its auto parameters lowers at these sizes; "
		          "the first tried: %s", k->name, first.text[0] ? first.text : "refused");
	}
	kept = kept < npoints ? kept : npoints;
	memcpy(pts, all, sizeof *pts * (size_t)kept);
	if (info) {
		memset(info, 0, sizeof *info);
		info->ranked = n;
		info->lowered = lowered;
		info->cost = best;
		if (kept > 0)
			blk_auto_point_text(sp, &pts[0], info->text, sizeof info->text);
	}
	free(all);
	return kept;
}

BlkModule *blk_auto_choose(BlkArena *a, BlkDiag *d, const BlkSource *src,
                                 const BlkDefine *defs, int ndefs, const BlkKernel *k,
                                 const int64_t *sizes, const BlkArrayDesc *arrays,
                                 const BlkLowerOptions *opt, BlkAutoChoice *out)
{
	BlkAutoSpace sp;
	BlkAutoPoint best;
	if (!blk_auto_space(k, false, NULL, 0, &sp) ||
	    blk_auto_rank(src, defs, ndefs, k, &sp, sizes, arrays, opt, d, &best, 1, out) < 1)
		return NULL;
	int n;
	BlkDefine *chosen = blk_auto_defines(a, defs, ndefs, &sp, &best, &n);
	return blk_compile_source(a, d, src, chosen, n);
}
