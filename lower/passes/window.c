/* window.c - Triton's pointer arithmetic as BlockSpecs: offsets built from
 * `program_id * B + iota(B)` become the windows and blocks a Pallas kernel
 * names, so that the passes that work on blocks (coarsen, the pipeliner,
 * TMA, persistent grids) see the same IR.
 *
 * Requires: specialize (constant shapes), regrid (program ids of a 2-D
 * grid as written).  Produces, before blockspec:
 *
 *   iota-window   an access whose every non-scalar index is a gather by an
 *                 outer product of `s + iota(B)` rows -- `a[rm[:, None],
 *                 rk[None, :]]`, `x[r, off + iota(B)]` -- each along its
 *                 own result axis, in order -> the windows `ds(s, B)`.  The
 *                 same elements: an index outside the dim reads the fill
 *                 (a store skips it) in both, the window's check unsigned
 *                 as the gather's.  An offset masked as the docs show,
 *                 `where(r < D, r, -1)` with D at least the dim's length,
 *                 indexes as r does and counts as r.
 *   vector-window an access whose one gather is a vector `s + iota(B)` or
 *                 `(s + iota(B)) + t` beside windows, whole dims and
 *                 scalars (a stacked weight's rows `w13[N + offs_n, ds(k,
 *                 BK)]`) -> ds there.
 *   gather-ds     rows gathered by index tiles along result axis 0 and a
 *                 last index `s + iota(B)` along axis 1 (Triton's implicit
 *                 GEMM `x[n[:, None], ih[:, None], iw[:, None], offs_c[None,
 *                 :]]`) -> the rows' index tiles and ds(s, B) on the last
 *                 dim: conv2d.blk's `x[n, p, q, ds(c0, BK)]`.
 *   block         a param with no block of its own (the whole array, index
 *                 map all 0), all of whose accesses along dim d are windows
 *                 `ds(program_id(a) * C, C)` of one constant C and one
 *                 parallel grid axis a -> block C along d, index map
 *                 program id a there, each window `ds(0, C)` of the block:
 *                 matmul.blk's `block (BM, K) index (i, j) -> (i, 0)`.
 *                 The block's elements past the array are masked as the
 *                 window's were.
 *
 *   wrap-window   a gather by `(s + iota(B)) % E` along a dim E long (the
 *                 Triton tutorial's `offs_am = (pid_m * BM + arange) % M`:
 *                 every load reads a real row) -> by `s + iota(B)`, where
 *                 the positions s + p >= E, the only ones that differ (the
 *                 window reads the fill there), provably reach nothing
 *                 stored: a forward walk from each such load follows them
 *                 through elementwise ops, broadcasts, transposes, a dot's
 *                 rows (A) or columns (B), reductions along other axes and
 *                 loop carries to stores whose offsets start at the same s
 *                 on a dim at most E long, which drop them; anything else
 *                 that reads them keeps the mod.  Then iota-window applies.
 *
 * Attr `window = N` on the kernel's first op says how many accesses the
 * first rule rewrote, `wrap = N` how many mods wrap-window removed, `blocked` on a param's index map's yield the dims
 * the second gave a block. */
#include "lower/lower_int.h"

#include <string.h>

static bool is_access(const BlkOp *op)
{
	return op->kind == BLK_OP_LOAD || op->kind == BLK_OP_STORE;
}

/* v (i32, rank 1, extent B) is s + iota(B) or iota(B) + s (s a broadcast
 * scalar), or iota(B) (s NULL: 0).  *s. */
static bool iota_offset(const BlkValue *v, BlkValue **s)
{
	const BlkOp *d = v->def;
	if (v->type.kind != BLK_TYPE_TILE || v->type.rank != 1 || v->type.dtype != BLK_I32 || !d)
		return false;
	if (d->kind == BLK_OP_IOTA) {
		*s = NULL;
		return blk_op_int(d, "axis", 0) == 0;
	}
	if (d->kind != BLK_OP_ADD)
		return false;
	for (int o = 0; o < 2; o++) {
		const BlkOp *bc = d->operands[o]->def, *io = d->operands[1 - o]->def;
		if (bc && bc->kind == BLK_OP_BROADCAST && bc->operands[0]->type.rank == 0 && io &&
		    io->kind == BLK_OP_IOTA && blk_op_int(io, "axis", 0) == 0) {
			*s = bc->operands[0];
			return true;
		}
	}
	return false;
}

/* u as an index on a dim `extent` long: `where(x < D, x, c)` (the
 * docs' `where(i < N, perm, -1)` masking) with D >= extent and c outside
 * [0, extent) indexes as x does -- every position x < extent reads or
 * writes x, every other reads the fill or is dropped both ways -- so x;
 * `where(x < D, x + T, c)` (T >= 0: the up rows of a stacked [2N, K]
 * weight, `where(offs < N, N + offs, -1)`) likewise x + T where D + T >=
 * extent; else u. */
/* The largest value of `program_id(a) * C + iota(B)` (a parallel grid
 * axis of constant extent G: (G - 1) C + B - 1), or INT64_MAX. */
static int64_t iota_max(const BlkKernel *k, const BlkValue *v)
{
	const BlkOp *d = v->def;
	if (!d || d->kind != BLK_OP_ADD || v->type.rank != 1)
		return INT64_MAX;
	for (int o = 0; o < 2; o++) {
		const BlkOp *bc = d->operands[o]->def, *io = d->operands[1 - o]->def, *m;
		int64_t C = 1, G;
		if (!bc || bc->kind != BLK_OP_BROADCAST || !io || io->kind != BLK_OP_IOTA || !(m = bc->operands[0]->def))
			continue;
		if (m->kind == BLK_OP_MUL) {
			const BlkOp *p = m->operands[0]->def;
			if (!p || p->kind != BLK_OP_PROGRAM_ID || !blk_lower_splat_int(m->operands[1], &C))
				continue;
			m = p;
		}
		int a = m->kind == BLK_OP_PROGRAM_ID ? (int)blk_op_int(m, "axis", -1) : -1;
		if (a < 0 || a >= k->grid_rank || k->grid_seq[a] || C < 0 || !blk_sym_is_const(k->grid[a], &G) || G < 1)
			continue;
		return (G - 1) * C + blk_lower_dim(v->type.dims[0]) - 1;
	}
	return INT64_MAX;
}

static BlkValue *unmasked(const BlkKernel *k, BlkValue *u, int64_t extent)
{
	const BlkOp *sel = u->def, *cmp;
	int64_t D, c;
	if (!sel || sel->kind != BLK_OP_SELECT || sel->operands[1] == sel->operands[2] ||
	    !blk_lower_splat_int(sel->operands[2], &c) || (c >= 0 && c < extent) || !(cmp = sel->operands[0]->def))
		return u;
	BlkValue *y = sel->operands[1], *x = y;
	int64_t T = 0; /* y = x + T: past D, x + T is past D + T */
	const BlkOp *a = y->def;
	for (int o = 0; a && a->kind == BLK_OP_ADD && o < 2 && x == y; o++)
		if (blk_lower_splat_int(a->operands[1 - o], &T) && T >= 0 && cmp->kind != BLK_OP_GT &&
		    cmp->operands[0] == a->operands[o])
			x = a->operands[o];
	if (x == y)
		T = 0;
	bool lt = cmp->kind == BLK_OP_LT && cmp->operands[0] == x && blk_lower_splat_int(cmp->operands[1], &D);
	bool gt = cmp->kind == BLK_OP_GT && cmp->operands[1] == x && blk_lower_splat_int(cmp->operands[0], &D);
	/* or the condition always holds: x's largest value below D (the
	 * gate rows of a stacked weight, `where(offs < N, offs, -1)`, on a
	 * grid of N / BN programs) */
	return (lt || gt) && (D + T >= extent || iota_max(k, x) < D) ? y : u;
}

/* The rank-1 offsets u whose broadcast along axis `axis` of a rank-n result
 * v is: v itself (n = 1), or broadcast(w), w all ones but `axis` and made
 * from u by expand_dims.  NULL otherwise. */
static BlkValue *along(BlkValue *v, int n, int axis)
{
	if (n == 1)
		return v->type.rank == 1 ? v : NULL;
	const BlkOp *bc = v->def;
	if (!bc || bc->kind != BLK_OP_BROADCAST || v->type.rank != n)
		return NULL;
	BlkValue *w = bc->operands[0];
	if (w->type.rank != n)
		return NULL;
	for (int d = 0; d < n; d++) {
		int64_t e = blk_lower_dim(w->type.dims[d]);
		if ((d == axis) != (e != 1 || blk_lower_dim(v->type.dims[d]) == 1))
			return NULL;
	}
	while (w->type.rank > 1 && w->def && w->def->kind == BLK_OP_EXPAND_DIMS)
		w = w->def->operands[0];
	return w->type.rank == 1 ? w : NULL;
}

typedef struct Win {
	LowerCtx *c;
	int rewritten;
	BlkValue **old; /* the gathers' index tiles, for sweep */
	int nold, cap;
} Win;

/* The offset arithmetic the windows no longer read: pure ops of no
 * regions whose result nothing uses, back through their operands. */
static void sweep(Win *w, BlkValue *v)
{
	BlkOp *d = v->def;
	if (!d || d->nregions || d->nresults != 1 || blk_lower_uses(w->c->k->body, v))
		return;
	switch (d->kind) {
	case BLK_OP_BROADCAST: case BLK_OP_EXPAND_DIMS: case BLK_OP_IOTA: case BLK_OP_ADD:
	case BLK_OP_MUL: case BLK_OP_CONST: case BLK_OP_PROGRAM_ID: case BLK_OP_MOD:
		break;
	default:
		return;
	}
	int n = d->noperands;
	BlkValue *ops[8];
	for (int i = 0; i < n && i < 8; i++)
		ops[i] = d->operands[i];
	blk_op_erase(d);
	for (int i = 0; i < n && i < 8; i++)
		sweep(w, ops[i]);
}

static void note_old(Win *w, BlkValue *v)
{
	if (w->nold == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 8;
		w->old = blk_arena_grow(w->c->a, w->old, (size_t)w->nold, (size_t)w->cap, sizeof *w->old);
	}
	w->old[w->nold++] = v;
}

/* iota-window on one access: true where it was rewritten. */
static bool iota_window(Win *w, BlkOp *op)
{
	LowerCtx *c = w->c;
	BlkAttr *idx = (BlkAttr *)blk_op_attr(op, "idx");
	if (!idx || idx->kind != BLK_ATTR_INDEX)
		return false;
	int n = 0; /* the gathers: the result's rank */
	for (int d = 0; d < idx->index.n; d++) {
		BlkIndexKind k = idx->index.v[d].kind;
		if (k == BLK_INDEX_GATHER)
			n++;
		else if (k != BLK_INDEX_SCALAR)
			return false; /* a whole dim or a window beside: its axis has a place of its own */
	}
	if (!n)
		return false;
	BlkValue *start[BLK_MAX_RANK];
	int64_t size[BLK_MAX_RANK];
	for (int d = 0, o = 1, g = 0; d < idx->index.n; d++, o++) {
		if (idx->index.v[d].kind != BLK_INDEX_GATHER)
			continue;
		BlkValue *u = along(op->operands[o], n, g);
		if (u)
			u = unmasked(c->k, u, blk_lower_dim(op->operands[0]->type.dims[d]));
		if (!u || !iota_offset(u, &start[d]))
			return false;
		size[d] = blk_lower_dim(u->type.dims[0]);
		g++;
	}
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkIndex v[BLK_MAX_RANK];
	for (int d = 0, o = 1; d < idx->index.n; d++, o++) {
		v[d] = idx->index.v[d];
		if (v[d].kind != BLK_INDEX_GATHER)
			continue;
		v[d].kind = BLK_INDEX_DS;
		v[d].size = blk_sym_const(c->a, size[d]);
		v[d].step = 1;
		note_old(w, op->operands[o]);
		op->operands[o] = start[d] ? start[d] : blk_lower_i32(&b, op->loc, 0);
	}
	blk_op_set_index(c->a, op, "idx", idx->index.n, v);
	return true;
}

/* vector-window on one access: its one gather a vector `s + iota(B)` (or
 * `(s + iota(B)) + t`, t a scalar), beside windows, whole dims or
 * scalars -- the rows of a stacked weight `w13[N + offs_n, ds(k, BK)]`
 * -> ds(s (+ t), B) there: the same elements, the same order (a vector
 * gather's axis is where it stands). */
static bool vector_window(Win *w, BlkOp *op)
{
	LowerCtx *c = w->c;
	BlkAttr *idx = (BlkAttr *)blk_op_attr(op, "idx");
	if (!idx || idx->kind != BLK_ATTR_INDEX)
		return false;
	int gd = -1, go = -1, axis = 0, rank = 0; /* the gather's dim, operand, result axis */
	for (int d = 0, o = 1; d < idx->index.n; d++) {
		BlkIndexKind k = idx->index.v[d].kind;
		if (k == BLK_INDEX_GATHER) {
			if (gd >= 0)
				return false;
			gd = d, go = o, axis = rank;
		}
		rank += k != BLK_INDEX_SCALAR;
		o += k != BLK_INDEX_FULL;
	}
	/* its index tile holds the kept dims too: the vector spread along its axis */
	BlkValue *u = gd >= 0 ? along(op->operands[go], rank, axis) : NULL, *s = NULL, *t = NULL;
	if (!u)
		return false;
	u = unmasked(c->k, u, blk_lower_dim(op->operands[0]->type.dims[gd]));
	const BlkOp *a = u->def;
	if (!iota_offset(u, &s)) { /* (s + iota(B)) + t */
		for (int o = 0; a && a->kind == BLK_OP_ADD && o < 2 && !t; o++) {
			const BlkOp *bc = a->operands[1 - o]->def;
			if (bc && bc->kind == BLK_OP_BROADCAST && bc->operands[0]->type.rank == 0 && iota_offset(a->operands[o], &s))
				t = bc->operands[0];
		}
		if (!t)
			return false;
	}
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkValue *start = s ? s : blk_lower_i32(&b, op->loc, 0);
	if (t) {
		BlkValue *ops[2] = { start, t };
		start = blk_build1(&b, BLK_OP_ADD, op->loc, blk_type_scalar(BLK_I32), 2, ops);
	}
	BlkIndex v[BLK_MAX_RANK];
	for (int d = 0; d < idx->index.n; d++)
		v[d] = idx->index.v[d];
	v[gd].kind = BLK_INDEX_DS;
	v[gd].size = u->type.dims[0];
	v[gd].step = 1;
	note_old(w, op->operands[go]);
	op->operands[go] = start;
	blk_op_set_index(c->a, op, "idx", idx->index.n, v);
	return true;
}

/* gather-ds on one access: rows gathered by index tiles that vary along
 * result axis 0 and a last index `s + iota(B)` along axis 1 -- Triton's
 * implicit GEMM `x[n[:, None], ih[:, None], iw[:, None], offs_c[None, :]]`
 * -> the row index tiles and a window ds(s, B) on the last dim,
 * `x[n, ih, iw, ds(s, B)]`: the same elements, the form whose rows the
 * pipeliner copies by cp.async (a gathered dot operand). */
static bool gather_ds(Win *w, BlkOp *op)
{
	LowerCtx *c = w->c;
	BlkAttr *idx = (BlkAttr *)blk_op_attr(op, "idx");
	const BlkType *rt = op->kind == BLK_OP_LOAD ? &op->results[0]->type : &op->operands[op->noperands - 1]->type;
	if (!idx || idx->kind != BLK_ATTR_INDEX || rt->rank != 2 || idx->index.n < 2)
		return false;
	int last = idx->index.n - 1, ngather = 0;
	for (int d = 0; d < idx->index.n; d++) {
		BlkIndexKind k = idx->index.v[d].kind;
		if (k != BLK_INDEX_GATHER && k != BLK_INDEX_SCALAR)
			return false;
		ngather += k == BLK_INDEX_GATHER;
	}
	if (idx->index.v[last].kind != BLK_INDEX_GATHER || ngather < 2)
		return false;
	BlkValue *rows[BLK_MAX_RANK], *s = NULL;
	for (int d = 0, o = 1; d < idx->index.n; d++, o++) {
		if (idx->index.v[d].kind != BLK_INDEX_GATHER)
			continue;
		if (d == last) {
			BlkValue *u = along(op->operands[o], 2, 1);
			if (!u || !iota_offset(u, &s))
				return false;
			continue;
		}
		rows[d] = along(op->operands[o], 2, 0);
		if (!rows[d] || !blk_sym_equal(rows[d]->type.dims[0], rt->dims[0]))
			return false;
	}
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	BlkIndex v[BLK_MAX_RANK];
	for (int d = 0, o = 1; d < idx->index.n; d++, o++) {
		v[d] = idx->index.v[d];
		if (v[d].kind != BLK_INDEX_GATHER)
			continue;
		if (d == last) { /* the rows' tiles stay: [R, B], the kept dim theirs too */
			note_old(w, op->operands[o]);
			v[d].kind = BLK_INDEX_DS;
			v[d].size = rt->dims[1];
			v[d].step = 1;
			op->operands[o] = s ? s : blk_lower_i32(&b, op->loc, 0);
		}
	}
	blk_op_set_index(c->a, op, "idx", idx->index.n, v);
	return true;
}

/* The grid axis a of `program_id(a) * C` (either order) with C == want, a
 * parallel axis; -1 otherwise. */
static int pid_times(const BlkKernel *k, const BlkValue *v, int64_t want)
{
	const BlkOp *m = v->def;
	if (!m || m->kind != BLK_OP_MUL || m->noperands != 2)
		return -1;
	for (int o = 0; o < 2; o++) {
		const BlkOp *p = m->operands[o]->def, *cst = m->operands[1 - o]->def;
		const BlkAttr *val = cst && cst->kind == BLK_OP_CONST ? blk_op_attr(cst, "value") : NULL;
		if (p && p->kind == BLK_OP_PROGRAM_ID && val && val->kind == BLK_ATTR_INT && val->i == want) {
			int a = (int)blk_op_int(p, "axis", -1);
			return a >= 0 && a < k->grid_rank && !k->grid_seq[a] ? a : -1;
		}
	}
	return -1;
}

/* A window ds(0, n) over all n of a dim reads the whole dim: `:` (as
 * matmul.blk writes `a[:, ds(k * BK, BK)]` of its block). */
static void whole_dims(LowerCtx *c, BlkOp *op)
{
	BlkAttr *idx = (BlkAttr *)blk_op_attr(op, "idx");
	const BlkValue *ref = op->operands[0];
	if (!idx || idx->kind != BLK_ATTR_INDEX || idx->index.n != ref->type.rank)
		return;
	int nidx = 0;
	for (int d = 0; d < idx->index.n; d++)
		nidx += idx->index.v[d].kind != BLK_INDEX_FULL;
	BlkIndex v[BLK_MAX_RANK];
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, op->noperands);
	int n = 0;
	ops[n++] = op->operands[0];
	for (int d = 0, o = 1; d < idx->index.n; d++) {
		v[d] = idx->index.v[d];
		if (v[d].kind == BLK_INDEX_FULL)
			continue;
		const BlkOp *s = op->operands[o]->def;
		const BlkAttr *val = s && s->kind == BLK_OP_CONST ? blk_op_attr(s, "value") : NULL;
		if (v[d].kind == BLK_INDEX_DS && blk_index_step(&v[d]) == 1 && val && val->kind == BLK_ATTR_INT &&
		    val->i == 0 && blk_lower_dim(v[d].size) == blk_lower_dim(ref->type.dims[d]))
			v[d].kind = BLK_INDEX_FULL, v[d].size = NULL, v[d].step = 0;
		else
			ops[n++] = op->operands[o];
		o++;
	}
	if (n == 1 + nidx)
		return;
	for (int o = 1 + nidx; o < op->noperands; o++) /* a store's value */
		ops[n++] = op->operands[o];
	op->operands = ops;
	op->noperands = n;
	blk_op_set_index(c->a, op, "idx", idx->index.n, v);
}

typedef struct Uses {
	BlkOp **ops;
	int n, cap;
	const BlkValue *ref;
	bool other; /* used by something not a load or a store of it */
	BlkArena *a;
} Uses;

static void collect(void *ctx, BlkOp *op)
{
	Uses *u = ctx;
	for (int i = 0; i < op->noperands; i++) {
		if (op->operands[i] != u->ref)
			continue;
		if (!is_access(op) || i != 0) {
			u->other = true;
			continue;
		}
		if (u->n == u->cap) {
			u->cap = u->cap ? 2 * u->cap : 8;
			u->ops = blk_arena_grow(u->a, u->ops, (size_t)u->n, (size_t)u->cap, sizeof *u->ops);
		}
		u->ops[u->n++] = op;
	}
}

/* Param pi has no block of its own: every block dim the array's and the
 * index map a yield of constant zeros. */
static BlkOp *whole(const BlkKernel *k, int pi)
{
	const BlkParam *p = &k->params[pi];
	if (!p->index_map || p->prefetch || p->symmetric || p->access == BLK_ACCESS_SCRATCH)
		return NULL;
	for (int d = 0; d < p->rank; d++)
		if (p->squeezed[d] || !blk_sym_equal(p->block[d], p->shape[d]))
			return NULL;
	BlkOp *y = p->index_map->last;
	if (!y || y->kind != BLK_OP_YIELD || y->noperands != p->rank)
		return NULL;
	for (int d = 0; d < p->rank; d++) {
		const BlkOp *cst = y->operands[d]->def;
		const BlkAttr *val = cst && cst->kind == BLK_OP_CONST ? blk_op_attr(cst, "value") : NULL;
		if (!val || val->kind != BLK_ATTR_INT || val->i != 0)
			return NULL;
	}
	return y;
}

/* The operand of access op that is dim d's index (-1: a whole dim). */
static int operand_of(const BlkOp *op, int d)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	int o = 1;
	for (int e = 0; idx && e < d && e < idx->index.n; e++)
		o += idx->index.v[e].kind != BLK_INDEX_FULL;
	return idx && d < idx->index.n && idx->index.v[d].kind != BLK_INDEX_FULL ? o : -1;
}

/* block on param pi: the dims whose every access is ds(program_id(a) * C,
 * C) of one C and one a. */
static void block(Win *w, int pi)
{
	LowerCtx *c = w->c;
	BlkKernel *k = c->k;
	BlkOp *y = whole(k, pi);
	if (!y || pi >= k->body->nargs)
		return;
	Uses u = { .ref = k->body->args[pi], .a = c->a };
	blk_lower_walk(k->body, collect, &u);
	if (u.other || !u.n)
		return;
	BlkParam *p = &k->params[pi];
	int64_t blocked = 0;
	for (int d = 0; d < p->rank; d++) {
		int64_t C = 0;
		int axis = -1;
		for (int i = 0; i < u.n; i++) {
			const BlkAttr *idx = blk_op_attr(u.ops[i], "idx");
			const BlkIndex *ix = idx && d < idx->index.n ? &idx->index.v[d] : NULL;
			int o = operand_of(u.ops[i], d);
			if (!ix || ix->kind != BLK_INDEX_DS || blk_index_step(ix) != 1 || o < 0) {
				axis = -2;
				break;
			}
			int64_t size = blk_lower_dim(ix->size);
			int a = size > 0 ? pid_times(k, u.ops[i]->operands[o], size) : -1;
			if (a < 0 || (i && (a != axis || size != C))) {
				axis = -2;
				break;
			}
			axis = a, C = size;
		}
		if (axis < 0)
			continue;
		/* the block and its index map; each window now starts at 0 */
		p->block[d] = blk_sym_const(c->a, C);
		k->body->args[pi]->type.dims[d] = p->block[d]; /* the body sees the block */
		y->operands[d] = p->index_map->args[axis];
		for (int i = 0; i < u.n; i++) {
			BlkBuilder b;
			blk_builder_before(&b, c->a, u.ops[i]);
			int o = operand_of(u.ops[i], d);
			note_old(w, u.ops[i]->operands[o]);
			u.ops[i]->operands[o] = blk_lower_i32(&b, u.ops[i]->loc, 0);
		}
		blocked |= (int64_t)1 << d;
	}
	if (!blocked)
		return;
	blk_op_set_int(c->a, y, "blocked", blocked);
	for (int i = 0; i < u.n; i++)
		whole_dims(c, u.ops[i]);
}

/* ---- wrap-window ------------------------------------------------------ */

/* A band: the positions p of an axis whose offset s + p is >= E, the rows
 * a `(s + iota(B)) % E` gather wraps to the array's start, where a window
 * `ds(s, B)` reads the fill instead. */
typedef struct Band {
	BlkValue *s; /* NULL: 0 */
	int64_t E;
} Band;

typedef struct Taint {
	const Band *b[BLK_MAX_RANK]; /* per axis: the band whose values may differ, or NULL */
} Taint;

typedef struct Wrap {
	LowerCtx *c;
	BlkPtrMap taint; /* value -> Taint */
	bool fail, changed;
	BlkOp **loads; /* the gathers the mod feeds, and which result axis */
	int *axis, n, cap;
} Wrap;

static const Taint *taint_of(Wrap *w, const BlkValue *v)
{
	return blk_pmap_get(&w->taint, v);
}

/* v's taint becomes t (merged with what it had): false on a conflict. */
static void set_taint(Wrap *w, const BlkValue *v, const Taint *t)
{
	const Taint *old = taint_of(w, v);
	Taint m = old ? *old : (Taint){0};
	bool grew = false, any = false;
	for (int d = 0; d < BLK_MAX_RANK; d++) {
		if (!t->b[d])
			continue;
		if (d >= v->type.rank || (m.b[d] && m.b[d] != t->b[d])) {
			w->fail = true;
			return;
		}
		grew |= !m.b[d];
		m.b[d] = t->b[d];
		any = true;
	}
	if (!any || !grew)
		return;
	Taint *n = BLK_NEW(w->c->a, Taint);
	*n = m;
	blk_pmap_put(w->c->a, &w->taint, v, n);
	w->changed = true;
}

/* Two scalars equal by construction: one value, both 0, or both
 * `program_id(a) * C` (either order) of one a and C, or equal constants. */
static bool same_start(const BlkValue *a, const BlkValue *b)
{
	if (a == b)
		return true;
	if (!a || !b || !a->def || !b->def || a->def->kind != b->def->kind)
		return false;
	const BlkOp *x = a->def, *y = b->def;
	if (x->kind == BLK_OP_CONST) {
		const BlkAttr *p = blk_op_attr(x, "value"), *q = blk_op_attr(y, "value");
		return p && q && p->kind == BLK_ATTR_INT && q->kind == BLK_ATTR_INT && p->i == q->i &&
		       a->type.rank == 0 && b->type.rank == 0;
	}
	if (x->kind == BLK_OP_PROGRAM_ID)
		return blk_op_int(x, "axis", -1) == blk_op_int(y, "axis", -2);
	if (x->kind != BLK_OP_MUL || x->noperands != 2 || y->noperands != 2)
		return false;
	return (same_start(x->operands[0], y->operands[0]) && same_start(x->operands[1], y->operands[1])) ||
	       (same_start(x->operands[0], y->operands[1]) && same_start(x->operands[1], y->operands[0]));
}

/* The start of a store's positions along value axis t: a gather by
 * `s + iota` or a window ds(s, ..) step 1; the index dim in *dim. */
static bool store_start(const BlkKernel *k, const BlkOp *op, int t, BlkValue **s, int *dim)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	if (!idx || idx->kind != BLK_ATTR_INDEX)
		return false;
	int ngather = 0, axis = 0;
	for (int d = 0; d < idx->index.n; d++)
		ngather += idx->index.v[d].kind == BLK_INDEX_GATHER;
	for (int d = 0, o = 1; d < idx->index.n; d++) {
		const BlkIndex *ix = &idx->index.v[d];
		if (ix->kind == BLK_INDEX_FULL)
			continue;
		if (ix->kind == BLK_INDEX_SCALAR || (ngather && ix->kind != BLK_INDEX_GATHER)) {
			o++;
			continue; /* a scalar dim has no axis; a window beside gathers is no axis of theirs */
		}
		if (axis++ == t) {
			*dim = d;
			if (ix->kind == BLK_INDEX_DS) {
				*s = op->operands[o];
				return blk_index_step(ix) == 1;
			}
			BlkValue *u = along(op->operands[o], ngather, t);
			return u && iota_offset(unmasked(k, u, blk_lower_dim(op->operands[0]->type.dims[d])), s);
		}
		o++;
	}
	return false;
}

/* A store of a tainted value: every tainted position lies past the
 * stored dim's end, where the store writes nothing. */
static bool store_skips(const BlkKernel *k, const BlkOp *op, const Taint *t)
{
	const BlkValue *v = op->operands[op->noperands - 1], *ref = op->operands[0];
	for (int a = 0; a < v->type.rank; a++) {
		if (!t->b[a])
			continue;
		BlkValue *s;
		int d;
		if (!store_start(k, op, a, &s, &d) || !same_start(s, t->b[a]->s) ||
		    blk_lower_dim(ref->type.dims[d]) > t->b[a]->E)
			return false;
	}
	return true;
}

/* One op's taint from its operands'. */
static void spread_taint(Wrap *w, BlkOp *op)
{
	bool any = false;
	for (int i = 0; i < op->noperands; i++)
		any |= taint_of(w, op->operands[i]) != NULL;
	if (op->kind == BLK_OP_FOR) { /* carries: init and yield together */
		const BlkOp *y = op->regions[0]->last;
		for (int i = 0; i < 3; i++)
			if (taint_of(w, op->operands[i]))
				w->fail = true;
		for (int i = 3; i < op->noperands; i++) {
			const Taint *a = taint_of(w, op->operands[i]), *b = taint_of(w, y->operands[i - 3]);
			BlkValue *arg = op->regions[0]->args[i - 2], *res = op->results[i - 3];
			if (a)
				set_taint(w, arg, a), set_taint(w, res, a);
			if (b)
				set_taint(w, arg, b), set_taint(w, res, b);
		}
		return;
	}
	if (!any)
		return;
	Taint t = {0};
	const Taint *x = taint_of(w, op->operands[0]);
	BlkOpKind k = op->kind;
	if (k == BLK_OP_YIELD && op->parent->parent && op->parent->parent->kind == BLK_OP_FOR)
		return; /* the for above */
	if (k == BLK_OP_STORE) {
		for (int i = 0; i < op->noperands - 1; i++)
			if (taint_of(w, op->operands[i]))
				w->fail = true;
		if (!store_skips(w->c->k, op, taint_of(w, op->operands[op->noperands - 1])))
			w->fail = true;
		return;
	}
	if (blk_op_flags(k) & BLK_OPF_ELEMENTWISE) {
		for (int i = 0; i < op->noperands; i++) {
			const Taint *o = taint_of(w, op->operands[i]);
			for (int d = 0; o && d < BLK_MAX_RANK; d++)
				if (o->b[d]) {
					if (t.b[d] && t.b[d] != o->b[d])
						w->fail = true;
					t.b[d] = o->b[d];
				}
		}
	} else if (k == BLK_OP_BROADCAST && x) {
		int shift = op->results[0]->type.rank - op->operands[0]->type.rank;
		for (int d = 0; d < op->operands[0]->type.rank; d++)
			t.b[d + shift] = x->b[d];
	} else if (k == BLK_OP_EXPAND_DIMS && x) {
		int a = (int)blk_op_int(op, "axis", 0);
		for (int d = 0; d < op->operands[0]->type.rank; d++)
			t.b[d + (d >= a)] = x->b[d];
	} else if (k == BLK_OP_TRANSPOSE && x && op->results[0]->type.rank == 2 && !op->nattrs) {
		t.b[0] = x->b[1], t.b[1] = x->b[0];
	} else if (blk_op_is_reduce(k) && x && op->noperands == 1) {
		int a = (int)blk_op_int(op, "axis", 0);
		if (x->b[a])
			w->fail = true;
		for (int d = 0; d < op->operands[0]->type.rank; d++)
			if (d != a)
				t.b[d - (d > a)] = x->b[d];
	} else if (k == BLK_OP_DOT) { /* a's rows are the result's, b's columns */
		const Taint *a = x, *b = taint_of(w, op->operands[1]);
		const Taint *acc = op->noperands > 2 ? taint_of(w, op->operands[2]) : NULL;
		if ((a && a->b[1]) || (b && b->b[0]))
			w->fail = true;
		t.b[0] = a ? a->b[0] : NULL;
		t.b[1] = b ? b->b[1] : NULL;
		for (int d = 0; acc && d < 2; d++)
			if (acc->b[d]) {
				if (t.b[d] && t.b[d] != acc->b[d])
					w->fail = true;
				t.b[d] = acc->b[d];
			}
	} else {
		w->fail = true; /* read by what may mix positions, or observed */
		return;
	}
	set_taint(w, op->results[0], &t);
}

static void spread_op(void *ctx, BlkOp *op)
{
	Wrap *w = ctx;
	if (!w->fail)
		spread_taint(w, op);
}

typedef struct ModUses {
	Wrap *w;
	const BlkValue *v[8]; /* the mod's value and its expand_dims and broadcasts */
	int nv;
	bool bad;
} ModUses;

static void mod_users(void *ctx, BlkOp *op)
{
	ModUses *m = ctx;
	for (int i = 0; i < op->noperands; i++) {
		int j = 0;
		while (j < m->nv && m->v[j] != op->operands[i])
			j++;
		if (j == m->nv)
			continue;
		if ((op->kind == BLK_OP_EXPAND_DIMS || op->kind == BLK_OP_BROADCAST) && m->nv < 8) {
			m->v[m->nv++] = op->results[0];
			continue;
		}
		Wrap *w = m->w;
		if (op->kind != BLK_OP_LOAD || i == 0) {
			m->bad = true;
			continue;
		}
		if (w->n == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 8;
			w->loads = blk_arena_grow(w->c->a, w->loads, (size_t)w->n, (size_t)w->cap, sizeof *w->loads);
			w->axis = blk_arena_grow(w->c->a, w->axis, (size_t)w->n, (size_t)w->cap, sizeof *w->axis);
		}
		w->loads[w->n] = op;
		w->axis[w->n++] = i; /* the operand, for now */
	}
}

/* wrap-window on the mod m = (s + iota(B)) % E: true where its users, each
 * a gather of an array whose dim is E long, now read s + iota(B). */
static bool wrap_window(Win *win, BlkOp *m)
{
	LowerCtx *c = win->c;
	BlkValue *x = m->operands[0], *s;
	int64_t E;
	if (m->kind != BLK_OP_MOD || m->results[0]->type.rank != 1 || !iota_offset(x, &s) ||
	    !blk_lower_splat_int(m->operands[1], &E) || E <= 0)
		return false;
	/* s >= 0, so s + p < E reads row s + p either way: program_id(a), or
	 * it times a positive constant */
	if (s && !s->def)
		return false;
	if (s && s->def->kind == BLK_OP_MUL) {
		int64_t C = -1;
		for (int o = 0; o < 2; o++)
			if (s->def->operands[o]->def && s->def->operands[o]->def->kind == BLK_OP_PROGRAM_ID)
				blk_lower_splat_int(s->def->operands[1 - o], &C);
		if (C <= 0)
			return false;
	} else if (s && s->def->kind != BLK_OP_PROGRAM_ID) {
		return false;
	}
	Wrap w = { .c = c };
	ModUses mu = { .w = &w, .v = { m->results[0] }, .nv = 1 };
	blk_lower_walk(c->k->body, mod_users, &mu);
	if (mu.bad || !w.n)
		return false;
	Band *band = BLK_NEW(c->a, Band);
	band->s = s, band->E = E;
	for (int i = 0; i < w.n; i++) { /* each user a gather along E of its result axis */
		BlkOp *ld = w.loads[i];
		const BlkAttr *idx = blk_op_attr(ld, "idx");
		int ngather = 0, g = -1, o = 1;
		for (int d = 0; idx && d < idx->index.n; d++) {
			BlkIndexKind k = idx->index.v[d].kind;
			if (k != BLK_INDEX_GATHER && k != BLK_INDEX_SCALAR)
				return false;
			if (k == BLK_INDEX_GATHER) {
				if (o == w.axis[i]) {
					g = ngather;
					if (blk_lower_dim(ld->operands[0]->type.dims[d]) != E)
						return false;
				}
				ngather++;
			}
			o++;
		}
		if (g < 0 || along(ld->operands[w.axis[i]], ngather, g) != m->results[0])
			return false;
		Taint t = {0};
		t.b[g] = band;
		set_taint(&w, ld->results[0], &t);
	}
	for (int round = 0; round < 8 && !w.fail; round++) {
		w.changed = false;
		blk_lower_walk(c->k->body, spread_op, &w);
		if (!w.changed)
			break;
	}
	if (w.fail || w.changed)
		return false;
	blk_replace_uses(c->k->body, m->results[0], x);
	note_old(win, m->results[0]);
	return true;
}

typedef struct Mods {
	BlkOp **ops;
	int n, cap;
	BlkArena *a;
} Mods;

static void collect_mods(void *ctx, BlkOp *op)
{
	Mods *m = ctx;
	if (op->kind != BLK_OP_MOD || op->results[0]->type.rank != 1)
		return;
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 8;
		m->ops = blk_arena_grow(m->a, m->ops, (size_t)m->n, (size_t)m->cap, sizeof *m->ops);
	}
	m->ops[m->n++] = op;
}

static void window_op(void *ctx, BlkOp *op)
{
	Win *w = ctx;
	if (is_access(op))
		w->rewritten += iota_window(w, op) || gather_ds(w, op) || vector_window(w, op);
}

bool blk_lower_window(LowerCtx *c)
{
	Win w = { .c = c };
	Mods mods = { .a = c->a };
	blk_lower_walk(c->k->body, collect_mods, &mods);
	int wrapped = 0;
	for (int i = 0; i < mods.n; i++)
		wrapped += wrap_window(&w, mods.ops[i]);
	blk_lower_walk(c->k->body, window_op, &w);
	for (int pi = 0; pi < c->k->nparams; pi++)
		block(&w, pi);
	for (int i = 0; i < w.nold; i++)
		sweep(&w, w.old[i]);
	if (w.rewritten && c->k->body->first)
		blk_op_set_int(c->a, c->k->body->first, "window", w.rewritten);
	if (wrapped && c->k->body->first)
		blk_op_set_int(c->a, c->k->body->first, "wrap", wrapped);
	return true;
}
