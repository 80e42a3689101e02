/* bind.c - launch-time binding of a kernel's sizes to the arrays passed.
 *
 * A launch size (M, N, K) is bound from the first array dim, in param order,
 * whose shape entry is that size alone.  Then every dim of every array is
 * checked against its entry: a constant must match, a size must match the
 * value it was bound to (the message names the param it came from), and an
 * expression ([2 * N]) is evaluated and must match.  Sizes may be 0 (an empty
 * array; grids over it are empty and run nothing) but must fit in i32,
 * since the body sees each size as an i32 scalar.
 *
 * Last, what the sizes imply must be valid, the same for the interpreter,
 * the GPU lowering and the runtime (all three bind here): every grid
 * extent is >= 0 (0 runs no program), every block dim and scratch dim is
 * >= 1 (a block of `K` with K = 0 is an error: an empty block has no
 * layout on the GPU), all within i32.
 */
#include "ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What the binding knows about each size. */
typedef struct Binding {
	const BlkKernel *k;
	const BlkArrayDesc *arrays; /* one per non-scratch param */
	int64_t *values;
	int *from;                  /* index of the param that bound it, -1 if none */
	BlkDiag *d;
} Binding;

static int size_index(const BlkKernel *k, const char *name)
{
	for (int i = 0; i < k->nsizes; i++)
		if (strcmp(k->sizes[i], name) == 0)
			return i;
	return -1;
}

static int count_arrays(const BlkKernel *k)
{
	int n = 0;
	for (int i = 0; i < k->nparams; i++)
		n += k->params[i].access != BLK_ACCESS_SCRATCH;
	return n;
}

/* "[33, 70]" */
static const char *shape_str(BlkArena *a, const BlkArrayDesc *ad)
{
	char *s = blk_arena_strdup(a, "[");
	for (int i = 0; i < ad->rank; i++)
		s = blk_arena_printf(a, "%s%s%" PRId64, s, i ? ", " : "", ad->shape[i]);
	return blk_arena_printf(a, "%s]", s);
}

/* Checks what needs no sizes: dtype, rank, dims >= 0. */
static bool check_desc(const BlkKernel *k, const BlkParam *p, const BlkArrayDesc *ad,
                       BlkDiag *d)
{
	if (ad->dtype != p->dtype) {
		blk_error(d, p->loc, "launch of %s: %s has dtype %s but the kernel expects %s",
		          k->name, p->name, blk_dtype_name(ad->dtype), blk_dtype_name(p->dtype));
		return false;
	}
	if (ad->rank != p->rank) {
		blk_error(d, p->loc, "launch of %s: %s has rank %d but the kernel expects rank %d",
		          k->name, p->name, ad->rank, p->rank);
		return false;
	}
	for (int i = 0; i < ad->rank; i++) {
		if (ad->shape[i] < 0) {
			blk_error(d, p->loc, "launch of %s: %s has a negative dim %d (%" PRId64 ")",
			          k->name, p->name, i, ad->shape[i]);
			return false;
		}
	}
	return true;
}

/* Step 1: binds each size from the first dim that is that size alone. */
static void bind_vars(Binding *b, int pi, const BlkParam *p, const BlkArrayDesc *ad)
{
	for (int i = 0; i < p->rank; i++) {
		const BlkSym *s = p->shape[i];
		if (s->kind != BLK_SYM_VAR)
			continue;
		int si = size_index(b->k, s->name);
		if (si >= 0 && b->from[si] < 0) {
			b->values[si] = ad->shape[i];
			b->from[si] = pi;
		}
	}
}

/* Step 2: reports sizes that could not be bound or do not fit in i32. */
static bool check_bound(Binding *b)
{
	bool ok = true;
	for (int i = 0; i < b->k->nsizes; i++) {
		if (b->from[i] < 0) {
			blk_error(b->d, b->k->loc, "launch of %s: size %s is no dim by itself of any "
			          "array, so it cannot be bound", b->k->name, b->k->sizes[i]);
			ok = false;
		} else if (b->values[i] > INT32_MAX) {
			const BlkParam *p = &b->k->params[b->from[i]];
			blk_error(b->d, p->loc, "launch of %s: size %s = %" PRId64 " (from %s) "
			          "does not fit in i32", b->k->name, b->k->sizes[i], b->values[i],
			          p->name);
			ok = false;
		}
	}
	return ok;
}

/* The "K = 34 (from a)" or "2 * N = 6" or "4" part of a message. */
static const char *expect_str(BlkArena *a, const Binding *b, const BlkSym *s, int64_t v)
{
	if (s->kind == BLK_SYM_CONST)
		return blk_arena_printf(a, "%" PRId64, v);
	if (s->kind == BLK_SYM_VAR) {
		int si = size_index(b->k, s->name);
		if (si >= 0 && b->from[si] >= 0)
			return blk_arena_printf(a, "%s = %" PRId64 " (from %s)", s->name, v,
			                        b->k->params[b->from[si]].name);
	}
	return blk_arena_printf(a, "%s = %" PRId64, blk_sym_str(a, s), v);
}

/* Step 3: every dim of one array against its shape entry. */
static bool check_dims(const Binding *b, const BlkParam *p, const BlkArrayDesc *ad)
{
	BlkSymEnv env = { b->k->nsizes, b->k->sizes, b->values };
	bool ok = true;
	for (int i = 0; i < p->rank; i++) {
		int64_t v;
		BlkArena *a = NULL;
		if (!blk_sym_eval(p->shape[i], &env, &v)) {
			a = blk_arena_create();
			blk_error(b->d, p->loc, "launch of %s: %s's dim %d (%s) cannot be evaluated",
			          b->k->name, p->name, i, blk_sym_str(a, p->shape[i]));
			ok = false;
		} else if (v != ad->shape[i]) {
			a = blk_arena_create();
			blk_error(b->d, p->loc, "launch of %s: %s has shape %s but its dim %d is %s",
			          b->k->name, p->name, shape_str(a, ad), i,
			          expect_str(a, b, p->shape[i], v));
			ok = false;
		}
		blk_arena_destroy(a);
	}
	return ok;
}

static bool check_count(const BlkKernel *k, int narrays, BlkDiag *d)
{
	int want = count_arrays(k);
	if (narrays == want)
		return true;
	blk_error(d, k->loc, "launch of %s: expected %d arrays, got %d", k->name, want,
	          narrays);
	return false;
}

/* Evaluates s; false with an error naming it (what) unless it is within
 * [lo, INT32_MAX]. */
static bool launch_dim(const BlkKernel *k, const BlkSymEnv *env, const BlkSym *s, int64_t lo,
                       BlkLoc loc, const char *what, BlkDiag *d)
{
	int64_t v = 0;
	bool known = blk_sym_eval(s, env, &v);
	if (known && v >= lo && v <= INT32_MAX)
		return true;
	BlkArena *a = blk_arena_create();
	if (known)
		blk_error(d, loc, "launch of %s: %s is %" PRId64 " (%s) at these sizes; it must be %s",
		          k->name, what, v, blk_sym_str(a, s),
		          v > INT32_MAX ? "below 2^31" : lo ? "at least 1" : "at least 0");
	else
		blk_error(d, loc, "launch of %s: %s (%s) cannot be evaluated", k->name, what,
		          blk_sym_str(a, s));
	blk_arena_destroy(a);
	return false;
}

bool blk_check_launch_dims(const BlkKernel *k, const int64_t *values, BlkDiag *d)
{
	BlkSymEnv env = { k->nsizes, k->sizes, (int64_t *)values };
	char what[160];
	bool ok = true;
	for (int a = 0; a < k->grid_rank; a++) {
		snprintf(what, sizeof what, "grid axis %d", a);
		ok &= launch_dim(k, &env, k->grid[a], 0, k->loc, what, d);
	}
	for (int pi = 0; pi < k->nparams; pi++) {
		const BlkParam *p = &k->params[pi];
		bool scratch = p->access == BLK_ACCESS_SCRATCH;
		for (int i = 0; i < p->rank; i++) {
			if (p->squeezed[i])
				continue;
			snprintf(what, sizeof what, "%s dim %d of %s", scratch ? "scratch" : "block", i,
			         p->name);
			ok &= launch_dim(k, &env, scratch || !p->block[i] ? p->shape[i] : p->block[i], 1,
			                 p->loc, what, d);
		}
	}
	return ok;
}

bool blk_bind_sizes(const BlkKernel *k, const BlkArrayDesc *arrays, int narrays,
                    int64_t *values, BlkDiag *d)
{
	if (!check_count(k, narrays, d))
		return false;
	int from[k->nsizes + 1];
	for (int i = 0; i < k->nsizes; i++) {
		from[i] = -1;
		values[i] = 0;
	}
	Binding b = { k, arrays, values, from, d };
	bool ok = true;
	int ai = 0;
	for (int pi = 0; pi < k->nparams; pi++) {
		const BlkParam *p = &k->params[pi];
		if (p->access == BLK_ACCESS_SCRATCH)
			continue;
		if (check_desc(k, p, &arrays[ai], d))
			bind_vars(&b, pi, p, &arrays[ai]);
		else
			ok = false;
		ai++;
	}
	if (!ok || !check_bound(&b))
		return false;
	ai = 0;
	for (int pi = 0; pi < k->nparams; pi++) {
		const BlkParam *p = &k->params[pi];
		if (p->access != BLK_ACCESS_SCRATCH)
			ok &= check_dims(&b, p, &arrays[ai++]);
	}
	return ok && blk_check_launch_dims(k, values, d);
}

/* ---- dynamic sizes ------------------------------------------------------------ */

enum { MAX_CANDIDATES = 32 };

typedef struct Candidates {
	int n;
	int64_t v[MAX_CANDIDATES];
} Candidates;

static void add_candidate(Candidates *c, const BlkSym *s)
{
	int64_t v;
	if (!s || !blk_sym_is_const(s, &v) || v <= 1 || c->n == MAX_CANDIDATES)
		return;
	for (int i = 0; i < c->n; i++)
		if (c->v[i] == v)
			return;
	c->v[c->n++] = v;
}

/* The size dim d of Ref v runs along (through views to the param whose
 * Ref it is: a shape entry that is a size alone), or -1. */
static int size_along(const BlkKernel *k, const BlkValue *v, int d, int depth)
{
	const BlkOp *op = v->def;
	if (!op) { /* a body arg: the param's dims less the squeezed ones */
		if (v->owner != k->body || v->index < 0 || v->index >= k->nparams)
			return -1;
		const BlkParam *p = &k->params[v->index];
		for (int e = 0, r = 0; e < p->rank; e++) {
			if (p->squeezed[e] || r++ != d)
				continue;
			for (int i = 0; p->shape[e]->kind == BLK_SYM_VAR && i < k->nsizes; i++)
				if (strcmp(k->sizes[i], p->shape[e]->name) == 0)
					return i;
			return -1;
		}
		return -1;
	}
	if (op->kind != BLK_OP_VIEW || depth > 32)
		return -1;
	const BlkAttr *idx = blk_op_attr(op, "idx"); /* result dim d: the d-th input dim kept */
	for (int e = 0, r = 0; e < op->operands[0]->type.rank; e++) {
		BlkIndexKind kind = idx && e < idx->index.n ? idx->index.v[e].kind : BLK_INDEX_FULL;
		if (kind == BLK_INDEX_SCALAR)
			continue;
		if (kind == BLK_INDEX_GATHER)
			return -1;
		if (r++ == d)
			return size_along(k, op->operands[0], e, depth + 1);
	}
	return -1;
}

/* Each constant ds size, a candidate of the size its dim runs along. */
static void ds_candidates(const BlkKernel *k, const BlkRegion *r, Candidates *c)
{
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		const BlkAttr *idx = blk_op_attr(op, "idx");
		bool ref = op->noperands > 0 && op->operands[0]->type.kind == BLK_TYPE_REF;
		for (int j = 0; ref && idx && idx->kind == BLK_ATTR_INDEX && j < idx->index.n; j++) {
			int s = idx->index.v[j].kind == BLK_INDEX_DS ? size_along(k, op->operands[0], j, 0) : -1;
			if (s >= 0)
				add_candidate(&c[s], idx->index.v[j].size);
		}
		for (int i = 0; i < op->nregions; i++)
			ds_candidates(k, op->regions[i], c);
	}
}

/* The lcm of the candidates dividing v (v > 1). */
static int64_t size_class(const Candidates *c, int64_t v)
{
	int64_t g = 1;
	for (int i = 0; i < c->n; i++)
		if (v % c->v[i] == 0) {
			int64_t l = g / blk_gcd(g, c->v[i]) * c->v[i];
			g = l <= (INT64_C(1) << 30) ? l : g;
		}
	return g;
}

bool blk_dynamic_class(const BlkKernel *k, const int64_t *sizes, const BlkArrayDesc *arrays,
                       int narrays, int64_t *csizes, BlkArrayDesc *carrays)
{
	bool any = false;
	/* per size: 16, the constant block dims along it, the ds sizes along it */
	Candidates *c = calloc((size_t)k->nsizes + 1, sizeof *c);
	if (!c)
		blk_die("out of memory");
	for (int i = 0; i < k->nsizes; i++)
		c[i] = (Candidates){ 1, { 16 } };
	for (int pi = 0; pi < k->nparams; pi++)
		for (int d = 0; d < k->params[pi].rank; d++)
			for (int i = 0; k->params[pi].shape[d]->kind == BLK_SYM_VAR && i < k->nsizes; i++)
				if (strcmp(k->sizes[i], k->params[pi].shape[d]->name) == 0)
					add_candidate(&c[i], k->params[pi].block[d]);
	ds_candidates(k, k->body, c);
	for (int i = 0; i < k->nsizes; i++) {
		int64_t v = sizes[i];
		csizes[i] = v;
		any |= v < 0; /* already a class */
		if (k->size_dyn && k->size_dyn[i] > 0 && v != 1 && v >= 0) {
			csizes[i] = -size_class(&c[i], v);
			any = true;
		}
	}
	free(c);
	if (carrays != arrays)
		memcpy(carrays, arrays, sizeof *carrays * (size_t)(narrays > 0 ? narrays : 0));
	if (!any)
		return false;
	/* static values substituted first: what is left names dynamic sizes */
	int64_t *stat = calloc((size_t)k->nsizes + 1, sizeof *stat);
	const char **snames = calloc((size_t)k->nsizes + 1, sizeof *snames);
	int64_t *divs = calloc((size_t)k->nsizes + 1, sizeof *divs);
	const char **dnames = calloc((size_t)k->nsizes + 1, sizeof *dnames);
	BlkArena *a = blk_arena_create();
	if (!stat || !snames || !divs || !dnames || !a)
		blk_die("out of memory");
	BlkSymEnv senv = { 0, snames, stat }, denv = { 0, dnames, divs };
	for (int i = 0; i < k->nsizes; i++) {
		if (csizes[i] >= 0)
			snames[senv.n] = k->sizes[i], stat[senv.n++] = csizes[i];
		else
			dnames[denv.n] = k->sizes[i], divs[denv.n++] = -csizes[i];
	}
	int ai = 0;
	for (int pi = 0; pi < k->nparams && ai < narrays; pi++) {
		const BlkParam *p = &k->params[pi];
		if (p->access == BLK_ACCESS_SCRATCH)
			continue;
		BlkArrayDesc *x = &carrays[ai++];
		for (int d = 0; d < p->rank && d < x->rank; d++) {
			/* any stride may come from a dynamic size (a transposed or
			 * sliced view of a bigger tensor): as Triton, 0 and 1 exactly,
			 * else a positive multiple of 16, or not */
			x->strides[d] = blk_stride_class(x->strides[d]);
			const BlkSym *s = blk_sym_subst(a, p->shape[d], &senv);
			int64_t v;
			if (blk_sym_is_const(s, &v) || x->shape[d] < 0)
				continue;
			int64_t g = blk_sym_divisor(s, &denv);
			x->shape[d] = -(g > 0 ? g : 1);
		}
	}
	blk_arena_destroy(a);
	free(stat);
	free(snames);
	free(divs);
	free(dnames);
	return true;
}
