/* blockspec.c - BlockSpecs to explicit global accesses.
 *
 * Requires: a specialized kernel (every shape constant).  Produces:
 *   1. `seq` grid axes as `for` loops around the whole body (scratch lives
 *      outside them, so it persists), program_id of such an axis -> the iv;
 *   2. per array param, its index map evaluated at the top of the
 *      innermost loop, times the block dims: a `block_ref` op whose
 *      operands are the block's start element per array dim; the param's
 *      body argument is no longer used;
 *   3. an attr `mask` on each block_ref (per array dim) and on each access
 *      and view (per dim of the Ref operand): '1' where an element can fall
 *      outside its block or its array, '0' where interval arithmetic proves
 *      it cannot.  So matmul at 1024^3 with 64x64 blocks has no checks,
 *      and at 130x70x33 checks exactly the ragged dims;
 *   4. i32 comparisons (`<`, `>=`, and `>`, `<=` with the sides swapped;
 *      of index tiles, iota and the like)
 *      that the same intervals decide become constants (fold_compare):
 *      attention's `cols < S` when BK divides S.
 * Parallel grid axes map, in order, to the CUDA grid's x, y, z.
 */
#include "lower/lower_int.h"

#include <stdint.h>
#include <string.h>

/* ---- value ranges of i32 scalars ------------------------------------------- */

/* [lo, hi], or with a dynamic size in the bound, [lo, top * mul + add]
 * (top a symbolic count: a grid extent, a loop's trip bound). */
typedef struct Range {
	int64_t lo, hi;
	bool known;
	const BlkSym *top;
	int64_t mul, add;
} Range;

static const Range unknown = { 0, 0, false, NULL, 0, 0 };

static Range range_of(LowerCtx *c, const BlkValue *v);

static Range numeric(int64_t lo, int64_t hi)
{
	return (Range){ lo, hi, true, NULL, 0, 0 };
}

/* i in [lo, n - 1] for n a shape expression. */
static Range below(int64_t lo, const BlkSym *n)
{
	int64_t v;
	if (blk_sym_is_const(n, &v))
		return numeric(lo, v > lo ? v - 1 : lo);
	return (Range){ lo, 0, true, n, 1, -1 };
}

/* The shape expression an i32 scalar computes from constants and `size`
 * ops (cdiv in either of lower_ast.c's forms), or NULL. */
static const BlkSym *sym_of(LowerCtx *c, const BlkValue *v, int depth)
{
	int64_t x;
	if (blk_lower_const_int(v, &x))
		return blk_sym_const(c->a, x);
	const BlkOp *op = v->def;
	if (!op || depth > 16 || v->type.rank != 0 || v->type.dtype != BLK_I32)
		return NULL;
	if (op->kind == BLK_OP_SIZE)
		return blk_sym_var(c->a, blk_op_attr(op, "name")->s);
	if (op->kind == BLK_OP_NEG) { /* -((-a) // b) */
		const BlkOp *q = op->operands[0]->def;
		if (!q || q->kind != BLK_OP_FLOORDIV || !q->operands[0]->def ||
		    q->operands[0]->def->kind != BLK_OP_NEG)
			return NULL;
		const BlkSym *a = sym_of(c, q->operands[0]->def->operands[0], depth + 1);
		const BlkSym *d = sym_of(c, q->operands[1], depth + 1);
		return a && d ? blk_sym_binary(c->a, BLK_SYM_CDIV, a, d) : NULL;
	}
	const BlkOp *up = op->noperands == 2 ? op->operands[1]->def : NULL;
	if (op->kind == BLK_OP_ADD && up && up->kind == BLK_OP_CAST &&
	    up->operands[0]->type.dtype == BLK_BOOL && op->operands[0]->def &&
	    op->operands[0]->def->kind == BLK_OP_FLOORDIV) {
		/* a // b + (a % b != 0): the same a and b, compared with 0 */
		const BlkOp *q = op->operands[0]->def, *ne = up->operands[0]->def;
		const BlkOp *r = ne && ne->kind == BLK_OP_NE ? ne->operands[0]->def : NULL;
		int64_t zero = 1;
		if (r && r->kind == BLK_OP_MOD && r->operands[0] == q->operands[0] &&
		    r->operands[1] == q->operands[1] && blk_lower_const_int(ne->operands[1], &zero) && zero == 0) {
			const BlkSym *a = sym_of(c, q->operands[0], depth + 1);
			const BlkSym *d = sym_of(c, q->operands[1], depth + 1);
			return a && d ? blk_sym_binary(c->a, BLK_SYM_CDIV, a, d) : NULL;
		}
	}
	static const BlkSymKind kinds[] = {
		[BLK_OP_ADD] = BLK_SYM_ADD, [BLK_OP_SUB] = BLK_SYM_SUB, [BLK_OP_MUL] = BLK_SYM_MUL,
		[BLK_OP_FLOORDIV] = BLK_SYM_FLOORDIV, [BLK_OP_MOD] = BLK_SYM_MOD,
		[BLK_OP_MIN] = BLK_SYM_MIN, [BLK_OP_MAX] = BLK_SYM_MAX,
	};
	if ((unsigned)op->kind >= sizeof kinds / sizeof kinds[0] || op->noperands != 2 ||
	    (!kinds[op->kind] && op->kind != BLK_OP_ADD))
		return NULL;
	const BlkSym *a = sym_of(c, op->operands[0], depth + 1), *d = sym_of(c, op->operands[1], depth + 1);
	return a && d ? blk_sym_binary(c->a, kinds[op->kind], a, d) : NULL;
}

static Range range_iv(LowerCtx *c, const BlkValue *v)
{
	BlkOp *f = v->owner ? v->owner->parent : NULL;
	int64_t lo, st;
	if (!f || f->kind != BLK_OP_FOR || v->index != 0 ||
	    !blk_lower_const_int(f->operands[0], &lo) || !blk_lower_const_int(f->operands[2], &st) ||
	    st <= 0)
		return unknown;
	const BlkSym *hi = sym_of(c, f->operands[1], 0);
	return hi ? below(lo, hi) : unknown;
}

static Range range_binary(BlkOpKind k, Range x, Range y)
{
	if (!x.known || !y.known)
		return unknown;
	if (x.top || y.top) { /* a symbolic bound: offsets and scales of it */
		if (y.top && (k == BLK_OP_ADD || k == BLK_OP_MUL)) {
			Range t = x;
			x = y, y = t;
		}
		if (y.top)
			return unknown;
		switch (k) {
		case BLK_OP_ADD: return (Range){ x.lo + y.lo, 0, true, x.top, x.mul, x.add + y.hi };
		case BLK_OP_SUB: return (Range){ x.lo - y.hi, 0, true, x.top, x.mul, x.add - y.lo };
		case BLK_OP_MUL:
			if (y.lo == y.hi && y.lo >= 0)
				return (Range){ x.lo * y.lo, 0, true, x.top, x.mul * y.lo, x.add * y.lo };
			return unknown;
		case BLK_OP_MIN: return numeric(x.lo < y.lo ? x.lo : y.lo, y.hi);
		default: return unknown;
		}
	}
	switch (k) {
	case BLK_OP_ADD: return numeric(x.lo + y.lo, x.hi + y.hi);
	case BLK_OP_SUB: return numeric(x.lo - y.hi, x.hi - y.lo);
	case BLK_OP_MIN: return numeric(x.lo < y.lo ? x.lo : y.lo, x.hi < y.hi ? x.hi : y.hi);
	case BLK_OP_MAX: return numeric(x.lo > y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi);
	case BLK_OP_MUL:
		if (y.lo == y.hi && y.lo >= 0)
			return numeric(x.lo * y.lo, x.hi * y.lo);
		if (x.lo == x.hi && x.lo >= 0)
			return numeric(y.lo * x.lo, y.hi * x.lo);
		return unknown;
	case BLK_OP_FLOORDIV:
		if (y.lo == y.hi && y.lo > 0 && x.lo >= 0)
			return numeric(x.lo / y.lo, x.hi / y.lo);
		return unknown;
	case BLK_OP_MOD:
		if (y.lo == y.hi && y.lo > 0)
			return numeric(0, y.lo - 1);
		return unknown;
	default: return unknown;
	}
}

static Range range_of(LowerCtx *c, const BlkValue *v)
{
	int64_t x;
	if (blk_lower_const_int(v, &x))
		return numeric(x, x);
	if (!v->def)
		return range_iv(c, v);
	const BlkOp *op = v->def;
	if (op->kind == BLK_OP_PROGRAM_ID) {
		int64_t a = blk_op_int(op, "axis", 0);
		return a < c->k->grid_rank ? below(0, c->k->grid[a]) : numeric(0, 0);
	}
	if (v->type.dtype != BLK_I32)
		return unknown;
	if (op->kind == BLK_OP_IOTA) /* tiles of indices: each element's range */
		return below(0, v->type.dims[blk_op_int(op, "axis", 0)]);
	if (op->kind == BLK_OP_BROADCAST || op->kind == BLK_OP_EXPAND_DIMS)
		return range_of(c, op->operands[0]);
	if (op->noperands == 2 && (v->type.rank == 0 || (blk_op_flags(op->kind) & BLK_OPF_ELEMENTWISE)))
		return range_binary(op->kind, range_of(c, op->operands[0]), range_of(c, op->operands[1]));
	return unknown;
}

/* top * mul <= x, for x a dynamic shape expression: top * mul is x, or top
 * is cdiv(x, mul) and mul divides x at this launch, or x // mul. */
static bool prove_scaled_le(LowerCtx *c, const BlkSym *top, int64_t mul, const BlkSym *x)
{
	const BlkSym *p = blk_sym_binary(c->a, BLK_SYM_MUL, top, blk_sym_const(c->a, mul));
	if (blk_sym_equal(p, x))
		return true;
	int64_t q;
	if ((top->kind != BLK_SYM_CDIV && top->kind != BLK_SYM_FLOORDIV) || !blk_sym_is_const(top->b, &q) ||
	    q != mul || !blk_sym_equal(top->a, x))
		return false;
	int64_t g = blk_lower_divisor(c, x);
	return top->kind == BLK_SYM_FLOORDIV || g % q == 0;
}

/* Elements [l, l + ext) all lie in [0, bext).  A dynamic bext may be 0
 * at a launch: only a bound of the same expression (a loop or grid that
 * then runs nothing) proves anything against it. */
static bool provably_inside(LowerCtx *c, Range l, const BlkSym *ext, const BlkSym *bext)
{
	int64_t b, e;
	if (!l.known || l.lo < 0)
		return false;
	if (!blk_sym_is_const(ext, &e)) /* a whole dynamic dim: from its start */
		return !l.top && l.lo == 0 && l.hi == 0 && blk_sym_equal(ext, bext);
	if (!l.top)
		return blk_sym_is_const(bext, &b) && l.hi + e <= b;
	if (l.add + e > 0 || l.mul <= 0 || blk_sym_is_const(bext, &b))
		return false;
	return prove_scaled_le(c, l.top, l.mul, bext);
}

/* ---- seq axes become loops -------------------------------------------------- */

typedef struct PidSubst {
	int axis;
	BlkValue *iv;
	BlkRegion *top;
} PidSubst;

static void subst_pid(void *ctx, BlkOp *op)
{
	PidSubst *s = ctx;
	if (op->kind != BLK_OP_PROGRAM_ID || blk_op_int(op, "axis", 0) != s->axis)
		return;
	blk_replace_uses(s->top, op->results[0], s->iv);
	blk_op_erase(op);
}

/* Wraps the ops of r (but a final yield) in `for iv in [0, n)`; returns
 * the loop's body. */
static BlkRegion *wrap_in_loop(LowerCtx *c, BlkRegion *r, int axis)
{
	BlkBuilder b;
	BlkOp *first = r->first;
	BlkOp *stop = r->last && r->last->kind == BLK_OP_YIELD ? r->last : NULL;
	blk_builder_at_end(&b, c->a, r);
	b.before = stop;
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *bounds[3]; /* in this order: the first marks where the moved ops end */
	bounds[0] = blk_build_const_int(&b, c->k->loc, i32, 0);
	bounds[1] = blk_lower_build_sym(&b, c->k->loc, c->k->grid[axis]);
	bounds[2] = blk_build_const_int(&b, c->k->loc, i32, 1);
	BlkOp *loop = blk_build(&b, BLK_OP_FOR, c->k->loc, 3, bounds, 0, NULL, 1);
	BlkRegion *body = loop->regions[0];
	BlkValue *iv = blk_region_add_arg(c->a, body, i32, "seq");
	blk_op_set_int(c->a, loop, "seq", axis); /* print shows its iv as the axis's program id */
	/* move the old ops, which all come before the bounds we just built */
	for (BlkOp *op = first, *next; op && op != bounds[0]->def; op = next) {
		next = op->next;
		blk_lower_move_op(op, body);
	}
	BlkBuilder yb;
	blk_builder_at_end(&yb, c->a, body);
	blk_build(&yb, BLK_OP_YIELD, c->k->loc, 0, NULL, 0, NULL, 0);
	PidSubst s = { axis, iv, c->k->body };
	blk_lower_walk(body, subst_pid, &s);
	return body;
}

/* ---- block refs ---------------------------------------------------------------- */

/* Evaluates p's index map at the start of region r: one block index per
 * array dim, from program ids (seq axes already substituted by ivs) and
 * the prefetch params' block refs (pf, by param; built first). */
static void eval_index_map(LowerCtx *c, const BlkParam *p, BlkBuilder *b, BlkValue **pids,
                           BlkValue **pf, BlkValue **out)
{
	BlkPtrMap vm = { 0 };
	int g = c->k->grid_rank;
	for (int i = 0; i < p->index_map->nargs && i < g; i++)
		blk_pmap_put(c->a, &vm, p->index_map->args[i], pids[i]);
	for (int q = 0, i = g; q < c->k->nparams && i < p->index_map->nargs; q++)
		if (c->k->params[q].prefetch)
			blk_pmap_put(c->a, &vm, p->index_map->args[i++], pf[q]);
	for (BlkOp *op = p->index_map->first; op; op = op->next) {
		BlkValue *ops[8];
		for (int i = 0; i < op->noperands && i < 8; i++)
			ops[i] = blk_pmap_get(&vm, op->operands[i]);
		if (op->kind == BLK_OP_YIELD) {
			for (int i = 0; i < op->noperands; i++)
				out[i] = ops[i];
			return;
		}
		BlkType t = op->results[0]->type;
		BlkOp *n = blk_build(b, op->kind, op->loc, op->noperands, ops, 1, &t, 0);
		n->attrs = op->attrs;
		n->nattrs = op->nattrs;
		blk_pmap_put(c->a, &vm, op->results[0], n->results[0]);
	}
	blk_die("lower: index map without yield");
}

static BlkValue *mul_dim(LowerCtx *c, BlkBuilder *b, BlkValue *x, const BlkSym *k)
{
	int64_t v, kv;
	BlkType i32 = blk_type_scalar(BLK_I32);
	bool kc = blk_sym_is_const(k, &kv);
	if (blk_lower_const_int(x, &v) && (kc || v == 0))
		return blk_build_const_int(b, c->k->loc, i32, v * (kc ? kv : 0));
	BlkValue *o[2] = { x, blk_lower_build_sym(b, c->k->loc, k) };
	return blk_build1(b, BLK_OP_MUL, c->k->loc, i32, 2, o);
}

/* Per dim of a Ref: where its element 0 may sit inside the block, the
 * block extent, and whether the block can cross the array's edge. */
typedef struct RefInfo {
	int rank;
	Range lstart[BLK_MAX_RANK];
	const BlkSym *ext[BLK_MAX_RANK], *bext[BLK_MAX_RANK];
	bool gmask[BLK_MAX_RANK];
	bool strided; /* a view with a strided ds dim: its indices are not the block's */
} RefInfo;

static char *mask_buf(LowerCtx *c, int n)
{
	char *s = blk_arena_alloc(c->a, (size_t)n + 1);
	memset(s, '0', (size_t)n);
	return s;
}

/* Whether scalar v (an evaluated index map's op) comes from a load. */
static bool reads_memory(const BlkValue *v, int depth)
{
	if (!v->def || depth > 64)
		return depth > 64;
	if (v->def->kind == BLK_OP_LOAD)
		return true;
	for (int i = 0; i < v->def->noperands; i++)
		if (reads_memory(v->def->operands[i], depth + 1))
			return true;
	return false;
}

/* A block index read from an array may be anything: one outside
 * [0, nblocks) becomes nblocks, whose block is just as wholly outside the
 * array, so that index * block dim cannot wrap around i32 into it. */
static BlkValue *clamp_block_index(LowerCtx *c, BlkBuilder *b, BlkValue *x, const BlkSym *nblocks)
{
	BlkType i32 = blk_type_scalar(BLK_I32), i1 = blk_type_scalar(BLK_BOOL);
	BlkValue *n = blk_lower_build_sym(b, c->k->loc, nblocks);
	BlkValue *z = blk_build_const_int(b, c->k->loc, i32, 0);
	BlkValue *lo[2] = { x, z }, *hi[2] = { x, n };
	BlkValue *in[2] = { blk_build1(b, BLK_OP_GE, c->k->loc, i1, 2, lo),
	                    blk_build1(b, BLK_OP_LT, c->k->loc, i1, 2, hi) };
	BlkValue *sel[3] = { blk_build1(b, BLK_OP_AND, c->k->loc, i1, 2, in), x, n };
	return blk_build1(b, BLK_OP_SELECT, c->k->loc, i32, 3, sel);
}

static BlkValue *make_block_ref(LowerCtx *c, int pi, BlkBuilder *b, BlkValue **pids,
                                BlkValue **pf, BlkValue *arg, BlkPtrMap *info)
{
	const BlkParam *p = &c->k->params[pi];
	BlkValue *bidx[BLK_MAX_RANK], *starts[BLK_MAX_RANK];
	eval_index_map(c, p, b, pids, pf, bidx);
	RefInfo *ri = BLK_NEW(c->a, RefInfo);
	char *mask = mask_buf(c, p->rank);
	for (int d = 0; d < p->rank; d++) {
		const BlkSym *bd = p->squeezed[d] ? blk_sym_const(c->a, 1) : p->block[d], *ad = p->shape[d];
		if (reads_memory(bidx[d], 0))
			bidx[d] = clamp_block_index(c, b, bidx[d], blk_sym_binary(c->a, BLK_SYM_CDIV, ad, bd));
		starts[d] = mul_dim(c, b, bidx[d], bd);
		int64_t bv;
		Range r = range_of(c, bidx[d]);
		bool fits = blk_sym_is_const(bd, &bv)
		            ? provably_inside(c, range_binary(BLK_OP_MUL, r, numeric(bv, bv)), bd, ad)
		            : r.known && !r.top && r.lo == 0 && r.hi == 0 && blk_sym_equal(bd, ad);
		mask[d] = fits ? '0' : '1';
		if (p->squeezed[d])
			continue;
		int o = ri->rank++;
		ri->lstart[o] = numeric(0, 0);
		ri->ext[o] = ri->bext[o] = bd;
		ri->gmask[o] = !fits;
	}
	BlkOp *op = blk_build(b, BLK_OP_BLOCK_REF, c->k->loc, p->rank, starts, 1, &arg->type, 0);
	blk_op_set_int(c->a, op, "param", pi);
	blk_op_set_string(c->a, op, "mask", mask);
	op->results[0]->name = p->name;
	blk_pmap_put(c->a, info, op->results[0], ri);
	blk_replace_uses(c->k->body, arg, op->results[0]);
	return op->results[0];
}

/* ---- masks on accesses ----------------------------------------------------------- */

typedef struct MaskCtx {
	LowerCtx *c;
	BlkPtrMap *info;
} MaskCtx;

static bool is_access(BlkOpKind k)
{
	return k == BLK_OP_VIEW || k == BLK_OP_LOAD || k == BLK_OP_STORE || k == BLK_OP_SWAP ||
	       blk_op_is_atomic(k);
}

static RefInfo *info_for(MaskCtx *m, BlkValue *ref)
{
	RefInfo *ri = blk_pmap_get(m->info, ref);
	if (ri)
		return ri;
	/* scratch (a kernel or scoped argument): the block is the buffer */
	ri = BLK_NEW(m->c->a, RefInfo);
	ri->rank = ref->type.rank;
	for (int d = 0; d < ri->rank; d++) {
		ri->lstart[d] = numeric(0, 0);
		ri->ext[d] = ri->bext[d] = ref->type.dims[d];
	}
	blk_pmap_put(m->c->a, m->info, ref, ri);
	return ri;
}


static void mask_access(void *ctx, BlkOp *op)
{
	MaskCtx *m = ctx;
	if (!is_access(op->kind))
		return;
	RefInfo *ri = info_for(m, op->operands[0]), *vi = BLK_NEW(m->c->a, RefInfo);
	const BlkAttr *idx = blk_op_attr(op, "idx");
	char *mask = mask_buf(m->c, ri->rank);
	int next = 1;
	for (int d = 0; d < ri->rank; d++) {
		BlkIndexKind kind = idx && d < idx->index.n ? idx->index.v[d].kind : BLK_INDEX_FULL;
		Range l = ri->lstart[d];
		const BlkSym *ext = ri->ext[d];
		if (kind == BLK_INDEX_GATHER) { /* indices from memory: always checked */
			next++;
			mask[d] = '1';
			continue;
		}
		if (kind != BLK_INDEX_FULL) {
			Range s = range_of(m->c, op->operands[next++]);
			l = range_binary(BLK_OP_ADD, l, s);
			int64_t e = kind == BLK_INDEX_DS ? blk_lower_dim(idx->index.v[d].size) : 1;
			if (blk_index_step(&idx->index.v[d]) > 1) /* the span of the strided elements */
				e = (e - 1) * blk_index_step(&idx->index.v[d]) + 1;
			ext = blk_sym_const(m->c->a, e);
		}
		mask[d] = ri->strided || ri->gmask[d] || !provably_inside(m->c, l, ext, ri->bext[d]) ? '1' : '0';
		if (kind == BLK_INDEX_SCALAR)
			continue;
		int o = vi->rank++;
		vi->lstart[o] = l;
		vi->ext[o] = ext;
		vi->bext[o] = ri->bext[d];
		vi->gmask[o] = ri->gmask[d];
	}
	blk_op_set_string(m->c->a, op, "mask", mask);
	vi->strided = ri->strided || blk_op_strided(op);
	if (op->kind == BLK_OP_VIEW)
		blk_pmap_put(m->c->a, m->info, op->results[0], vi);
}

/* ---- comparisons the ranges decide ------------------------------------------------ */

static bool in_i32(Range r)
{
	return r.known && !r.top && r.lo >= INT32_MIN && r.hi <= INT32_MAX;
}

/* 1 when x < y always holds, 0 when never, -1 when the ranges do not say:
 * numerically, or x in [lo, top * mul - 1] against y the shape expression
 * top * mul provably does not exceed (attention's `cols < S` with BK | S). */
static int less(LowerCtx *c, const BlkValue *x, const BlkValue *y)
{
	Range a = range_of(c, x), b = range_of(c, y);
	if (in_i32(a) && in_i32(b))
		return a.hi < b.lo ? 1 : a.lo >= b.hi ? 0 : -1;
	while (y->def && y->def->kind == BLK_OP_BROADCAST)
		y = y->def->operands[0];
	const BlkSym *s = y->type.rank == 0 ? sym_of(c, y, 0) : NULL;
	if (a.known && a.top && a.add == -1 && a.lo >= INT32_MIN && s && prove_scaled_le(c, a.top, a.mul, s))
		return 1;
	return -1;
}

/* An i32 comparison (tiles of indices, masks) that the ranges decide
 * becomes a constant, so the where() it feeds folds away in LLVM: the
 * bounds check of a block proved inside its array costs nothing per
 * element. */
static void fold_compare(void *ctx, BlkOp *op)
{
	LowerCtx *c = ctx;
	if (op->noperands != 2 || op->nresults != 1 || op->operands[0]->type.dtype != BLK_I32 ||
	    op->operands[1]->type.dtype != BLK_I32)
		return;
	BlkValue *x = op->operands[0], *y = op->operands[1];
	int v;
	switch (op->kind) {
	case BLK_OP_LT: v = less(c, x, y); break;
	case BLK_OP_GE: v = less(c, x, y), v = v < 0 ? v : !v; break;
	case BLK_OP_GT: v = less(c, y, x); break; /* S > cols: cols < S */
	case BLK_OP_LE: v = less(c, y, x), v = v < 0 ? v : !v; break;
	default: return;
	}
	if (v < 0)
		return;
	BlkBuilder b;
	blk_builder_before(&b, c->a, op);
	blk_replace_uses(c->k->body, op->results[0], blk_build_const_int(&b, op->loc, op->results[0]->type, v));
}

/* ---- the pass ---------------------------------------------------------------------- */

/* Grid axes onto CUDA's x, y, z (launch_order), seq axes skipped, into
 * the launch header.  Parallel axes past the third share CUDA z with it, the
 * later the faster: an axis in z is (ctaid.z / div) % mod, div the
 * product of the extents of the z axes after it.  An extent that names a
 * dynamic size stays an expression, evaluated at each launch. */
/* The array params whose index map reads grid axis a, as a bit set. */
static uint64_t readers_of_axis(const BlkKernel *k, int a)
{
	uint64_t set = 0;
	for (int pi = 0; pi < k->nparams && pi < 64; pi++) {
		const BlkRegion *r = k->params[pi].index_map;
		if (!r || a >= r->nargs)
			continue;
		const BlkOp *y = r->last;
		for (int i = 0; y && y->kind == BLK_OP_YIELD && i < y->noperands; i++)
			if (blk_lower_depends(y->operands[i], r->args[a]))
				set |= (uint64_t)1 << pi;
	}
	return set;
}

/* The parallel axes in the order they take CUDA's x, y, z: as written,
 * except that an axis whose blocks are a strict, non-empty subset of
 * another's, the rest of which are `in` arrays, comes before it --
 * consecutive CTAs (x varies fastest) then share those input blocks:
 * attention's K and V over its query blocks, whichever order the grid
 * names its axes in.  With more than three parallel axes (some fold into
 * z), or index maps that read a prefetch table (the blocks a grouped
 * matmul's programs share are in its data), the written order stays. */
static int launch_order(const BlkKernel *k, int *order)
{
	int n = 0;
	uint64_t readers[BLK_MAX_GRID];
	for (int a = 0; a < k->grid_rank; a++)
		if (!k->grid_seq[a])
			readers[n] = readers_of_axis(k, a), order[n++] = a;
	uint64_t inputs = 0; /* arrays nothing writes: the ones worth sharing */
	bool tables = false;  /* scalar prefetch: which blocks repeat is data */
	for (int pi = 0; pi < k->nparams && pi < 64; pi++) {
		if (k->params[pi].access == BLK_ACCESS_IN)
			inputs |= (uint64_t)1 << pi;
		tables |= k->params[pi].prefetch;
	}
	for (int i = 1; n <= 3 && !tables && i < n; i++)
		for (int j = i; j > 0; j--) {
			uint64_t x = readers[j], y = readers[j - 1];
			/* (an axis no map reads splits work -- split-K's -- and its
			 * neighbours in x would write the same blocks) */
			if (!x || (x & y) != x || x == y || (y & ~x & ~inputs))
				break;
			int t = order[j];
			order[j] = order[j - 1], order[j - 1] = t;
			readers[j] = y, readers[j - 1] = x;
		}
	return n;
}

static bool map_grid(LowerCtx *c)
{
	BlkLaunch *l = blk_lower_launch(c);
	int n = 0, nz = 0, zax[BLK_MAX_GRID], order[BLK_MAX_GRID];
	const BlkSym *one = blk_sym_const(c->a, 1), *zs = one; /* CUDA z's extent so far */
	l->grid[0] = l->grid[1] = l->grid[2] = one;
	for (int a = 0; a < c->k->grid_rank; a++) {
		l->axis[a] = -1;
		l->div[a] = l->mod[a] = NULL;
	}
	int npar = launch_order(c->k, order);
	for (int oi = 0; oi < npar; oi++) {
		int a = order[oi];
		const BlkSym *g = c->k->grid[a];
		if (n == 3) { /* folded: the z axes so far step by this one's extent */
			for (int i = 0; i < nz; i++) {
				int b = zax[i];
				if (!l->div[b])
					l->div[b] = one, l->mod[b] = c->k->grid[b];
				l->div[b] = blk_sym_binary(c->a, BLK_SYM_MUL, l->div[b], g);
			}
			l->div[a] = one, l->mod[a] = g;
			g = blk_sym_binary(c->a, BLK_SYM_MUL, g, zs);
		}
		int64_t v;
		if (blk_sym_is_const(g, &v) && v > (n ? 65535 : INT32_MAX)) {
			blk_error(c->d, c->k->loc, "kernel %s: grid axis %d (%lld programs%s) exceeds "
			          "the CUDA grid limits", c->k->name, a, (long long)v,
			          n == 3 ? " with the axes it shares CUDA z with" : "");
			return false;
		}
		if (n >= 2)
			zs = g, zax[nz++] = a;
		l->axis[a] = n < 3 ? n : 2;
		l->grid[l->axis[a]] = g;
		n += n < 3;
	}
	return true;
}

bool blk_lower_blockspec(LowerCtx *c)
{
	BlkKernel *k = c->k;
	if (!map_grid(c))
		return false;
	BlkRegion *inner = k->body;
	BlkValue *pids[BLK_MAX_GRID] = { 0 };
	for (int a = 0; a < k->grid_rank; a++)
		if (k->grid_seq[a]) {
			inner = wrap_in_loop(c, inner, a);
			pids[a] = inner->args[0];
		}
	BlkBuilder b;
	blk_builder_at_end(&b, c->a, inner);
	b.before = inner->first;
	for (int x = 0; x < 3; x++) /* in CUDA's order: x, y, z (folded axes in theirs) */
		for (int a = 0; a < k->grid_rank; a++) {
			if (pids[a] || k->launch->axis[a] != x)
				continue;
			pids[a] = blk_build1(&b, BLK_OP_PROGRAM_ID, k->loc, blk_type_scalar(BLK_I32), 0, NULL);
			blk_op_set_int(c->a, pids[a]->def, "axis", a);
		}
	BlkPtrMap info = { 0 };
	BlkValue **pf = BLK_NEW_N(c->a, BlkValue *, k->nparams + 1);
	for (int pi = 0; pi < k->nparams; pi++) /* first: the other index maps read them */
		if (k->params[pi].prefetch)
			pf[pi] = make_block_ref(c, pi, &b, pids, pf, k->body->args[pi], &info);
	for (int pi = 0; pi < k->nparams; pi++)
		if (k->params[pi].access != BLK_ACCESS_SCRATCH && !k->params[pi].prefetch)
			make_block_ref(c, pi, &b, pids, pf, k->body->args[pi], &info);
	MaskCtx m = { c, &info };
	blk_lower_walk(k->body, mask_access, &m);
	blk_lower_walk(k->body, fold_compare, c);
	blk_lower_fold_logic(k->body); /* the selects the fold decided, and/or of constants */
	return true;
}
