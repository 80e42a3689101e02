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
 *      and at 130x70x33 checks exactly the ragged dims.
 * Parallel grid axes map, in order, to the CUDA grid's x, y, z.
 */
#include "lower_int.h"

#include <string.h>

/* ---- value ranges of i32 scalars ------------------------------------------- */

typedef struct Range {
	int64_t lo, hi;
	bool known;
} Range;

static const Range unknown = { 0, 0, false };

static Range range_of(LowerCtx *c, const BlkValue *v);

static Range range_iv(LowerCtx *c, const BlkValue *v)
{
	BlkOp *f = v->owner ? v->owner->parent : NULL;
	int64_t lo, hi, st;
	if (!f || f->kind != BLK_OP_FOR || v->index != 0 ||
	    !blk_lower_const_int(f->operands[0], &lo) || !blk_lower_const_int(f->operands[1], &hi) ||
	    !blk_lower_const_int(f->operands[2], &st) || st <= 0)
		return unknown;
	(void)c;
	return (Range){ lo, hi > lo ? hi - 1 : lo, true };
}

static Range range_binary(BlkOpKind k, Range x, Range y)
{
	if (!x.known || !y.known)
		return unknown;
	switch (k) {
	case BLK_OP_ADD: return (Range){ x.lo + y.lo, x.hi + y.hi, true };
	case BLK_OP_SUB: return (Range){ x.lo - y.hi, x.hi - y.lo, true };
	case BLK_OP_MIN: return (Range){ x.lo < y.lo ? x.lo : y.lo, x.hi < y.hi ? x.hi : y.hi, true };
	case BLK_OP_MAX: return (Range){ x.lo > y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi, true };
	case BLK_OP_MUL:
		if (y.lo == y.hi && y.lo >= 0)
			return (Range){ x.lo * y.lo, x.hi * y.lo, true };
		if (x.lo == x.hi && x.lo >= 0)
			return (Range){ y.lo * x.lo, y.hi * x.lo, true };
		return unknown;
	case BLK_OP_FLOORDIV:
		if (y.lo == y.hi && y.lo > 0 && x.lo >= 0)
			return (Range){ x.lo / y.lo, x.hi / y.lo, true };
		return unknown;
	case BLK_OP_MOD:
		if (y.lo == y.hi && y.lo > 0)
			return (Range){ 0, y.lo - 1, true };
		return unknown;
	default: return unknown;
	}
}

static Range range_of(LowerCtx *c, const BlkValue *v)
{
	int64_t x;
	if (blk_lower_const_int(v, &x))
		return (Range){ x, x, true };
	if (!v->def)
		return range_iv(c, v);
	const BlkOp *op = v->def;
	if (op->kind == BLK_OP_PROGRAM_ID) {
		int64_t a = blk_op_int(op, "axis", 0);
		int64_t g = a < c->k->grid_rank ? blk_lower_dim(c->k->grid[a]) : 1;
		return (Range){ 0, g > 0 ? g - 1 : 0, true };
	}
	if (op->noperands == 2 && v->type.rank == 0)
		return range_binary(op->kind, range_of(c, op->operands[0]), range_of(c, op->operands[1]));
	return unknown;
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
	BlkValue *bounds[3] = {
		blk_build_const_int(&b, c->k->loc, i32, 0),
		blk_build_const_int(&b, c->k->loc, i32, blk_lower_dim(c->k->grid[axis])),
		blk_build_const_int(&b, c->k->loc, i32, 1),
	};
	BlkOp *loop = blk_build(&b, BLK_OP_FOR, c->k->loc, 3, bounds, 0, NULL, 1);
	BlkRegion *body = loop->regions[0];
	BlkValue *iv = blk_region_add_arg(c->a, body, i32, "seq");
	c->seq_iv[axis] = iv; /* print shows it as the axis's program id */
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

static BlkValue *mul_const(LowerCtx *c, BlkBuilder *b, BlkValue *x, int64_t k)
{
	int64_t v;
	BlkType i32 = blk_type_scalar(BLK_I32);
	if (blk_lower_const_int(x, &v))
		return blk_build_const_int(b, c->k->loc, i32, v * k);
	BlkValue *o[2] = { x, blk_build_const_int(b, c->k->loc, i32, k) };
	return blk_build1(b, BLK_OP_MUL, c->k->loc, i32, 2, o);
}

/* Per dim of a Ref: where its element 0 may sit inside the block, the
 * block extent, and whether the block can cross the array's edge. */
typedef struct RefInfo {
	int rank;
	Range lstart[BLK_MAX_RANK];
	int64_t ext[BLK_MAX_RANK], bext[BLK_MAX_RANK];
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
static BlkValue *clamp_block_index(LowerCtx *c, BlkBuilder *b, BlkValue *x, int64_t nblocks)
{
	BlkType i32 = blk_type_scalar(BLK_I32), i1 = blk_type_scalar(BLK_BOOL);
	BlkValue *n = blk_build_const_int(b, c->k->loc, i32, nblocks);
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
		int64_t bd = p->squeezed[d] ? 1 : blk_lower_dim(p->block[d]);
		int64_t ad = blk_lower_dim(p->shape[d]);
		if (reads_memory(bidx[d], 0))
			bidx[d] = clamp_block_index(c, b, bidx[d], (ad + bd - 1) / bd);
		starts[d] = mul_const(c, b, bidx[d], bd);
		Range r = range_of(c, bidx[d]);
		bool fits = r.known && r.lo >= 0 && r.hi * bd + bd <= ad;
		mask[d] = fits ? '0' : '1';
		if (p->squeezed[d])
			continue;
		int o = ri->rank++;
		ri->lstart[o] = (Range){ 0, 0, true };
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
		ri->lstart[d] = (Range){ 0, 0, true };
		ri->ext[d] = ri->bext[d] = blk_lower_dim(ref->type.dims[d]);
	}
	blk_pmap_put(m->c->a, m->info, ref, ri);
	return ri;
}

static bool provably_inside(Range l, int64_t ext, int64_t bext)
{
	return l.known && l.lo >= 0 && l.hi + ext <= bext;
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
		int64_t ext = ri->ext[d];
		if (kind == BLK_INDEX_GATHER) { /* indices from memory: always checked */
			next++;
			mask[d] = '1';
			continue;
		}
		if (kind != BLK_INDEX_FULL) {
			Range s = range_of(m->c, op->operands[next++]);
			l = range_binary(BLK_OP_ADD, l, s);
			ext = kind == BLK_INDEX_DS ? blk_lower_dim(idx->index.v[d].size) : 1;
			if (blk_index_step(&idx->index.v[d]) > 1) /* the span of the strided elements */
				ext = (ext - 1) * blk_index_step(&idx->index.v[d]) + 1;
		}
		mask[d] = ri->strided || ri->gmask[d] || !provably_inside(l, ext, ri->bext[d]) ? '1' : '0';
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

/* ---- the pass ---------------------------------------------------------------------- */

static bool map_grid(LowerCtx *c)
{
	int n = 0, z = -1;
	c->grid[0] = c->grid[1] = c->grid[2] = 1;
	for (int a = 0; a < c->k->grid_rank; a++) {
		c->par_axis[a] = -1;
		c->par_div[a] = 0;
		if (c->k->grid_seq[a])
			continue;
		int64_t g = blk_lower_dim(c->k->grid[a]);
		if (n == 3) { /* a fourth parallel axis shares CUDA z with the third, this one fastest */
			c->par_div[z] = g ? (unsigned)g : 1, c->par_mod[z] = c->grid[2];
			c->par_div[a] = 1, c->par_mod[a] = (unsigned)g;
			g *= c->grid[2];
		}
		if (g > (n ? 65535 : INT32_MAX)) {
			blk_error(c->d, c->k->loc, "kernel %s: grid axis %d (%lld programs%s) exceeds "
			          "the CUDA grid limits", c->k->name, a, (long long)g,
			          n == 3 ? " with the axis it shares CUDA z with" : "");
			return false;
		}
		z = n == 2 ? a : z;
		c->par_axis[a] = n < 3 ? n : 2;
		c->grid[c->par_axis[a]] = (unsigned)g;
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
	BlkValue *pids[BLK_MAX_RANK] = { 0 };
	for (int a = 0; a < k->grid_rank; a++)
		if (k->grid_seq[a]) {
			inner = wrap_in_loop(c, inner, a);
			pids[a] = inner->args[0];
		}
	BlkBuilder b;
	blk_builder_at_end(&b, c->a, inner);
	b.before = inner->first;
	for (int a = 0; a < k->grid_rank; a++) {
		if (pids[a])
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
	return true;
}
