/* mma_steps.c - a tensor-core dot becomes its k16 steps: fragment loads
 * and one mma dot per step, each an op of the IR.
 *
 * Requires: the GPU level (tile.c), every mma dot on shared operands
 * (pipeliner.c) or with A from registers.  Produces, for
 *   d = dot a, b, acc { overlap ops }          -- a [M, K], b [K, N]
 * with n = K / 16 steps:
 *   fa = convert_layout a : mma_a<..>          -- A in registers only
 *   A0 = local_load view(a)[:, 0:16]  : T[M,16]{mma_a<warps>}   (ldmatrix)
 *        (or extract_slice fa {axis = 1, start = 0})
 *   B0 = local_load view(b)[0:16, :]  : T[16,N]{mma_b<warps>}   (ldmatrix[.trans])
 *   A1, B1 = ..step 1..                       -- the next step's fragments
 *   d0 = dot A0, B0, acc                      -- before this step's mma,
 *   overlap ops of step 0                     -- so their latency hides
 *   A2, B2 = ..; d1 = dot A1, B1, d0; ...
 *   d = dot A(n-1), B(n-1), d(n-2)            -- the original op, last
 * The region's ops (the pipeliner's next copies and their commit) move
 * out, spread over the steps: with r ops, op j < r - 1 after step
 * j * n / (r - 1), the last after the last step.  The values, and the
 * order in which the tensor core accumulates them, are unchanged.
 *
 * A dot whose operands are both tiles (computed, not loaded by the
 * pipeliner) first stores them into shared memory:
 *   stage_a = local_alloc T[2, M, K]  (rows of K + 8), stage_b [2, K, N]
 *                                     -- before the outermost loop around
 *   store stage_a[p], a;  store stage_b[p], b;  barrier;  d = dot ..[p]..
 * Two slots, used alternately: p is a carry of every loop around the dot
 * (0 first, 1 - p after each execution), so the next execution writes the
 * other slot and this execution's barrier orders it after the last
 * reads of that slot -- one barrier an execution.  A dot outside any
 * loop has one slot.  Where an `if` lies between the dot and its loops,
 * the carry cannot flow out of it: one slot, and a barrier before the
 * stores too.
 */
#include "lower_int.h"

static BlkValue *view_k(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *ref, int kdim, int64_t k0)
{
	const BlkType *t = &ref->type;
	const BlkSym *dims[2] = { t->dims[0], t->dims[1] };
	dims[kdim] = blk_sym_const(c->a, 16);
	BlkType vt = blk_type_ref(t->dtype, 2, dims, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = *t->layout;
	l->shape[kdim] = 16;
	l->pad[kdim] = 16;
	vt.layout = l;
	BlkValue *ops[2] = { ref, blk_lower_i32(b, loc, k0) };
	BlkValue *v = blk_build1(b, BLK_OP_VIEW, loc, vt, 2, ops);
	BlkIndex idx[2] = { { BLK_INDEX_FULL, NULL }, { BLK_INDEX_FULL, NULL } };
	idx[kdim] = (BlkIndex){ BLK_INDEX_DS, dims[kdim] };
	blk_op_set_index(c->a, v->def, "idx", 2, idx);
	return v;
}

static BlkType frag_type(LowerCtx *c, BlkDType dt, int frag, int64_t rows, int64_t cols, int wn)
{
	const BlkSym *dims[2] = { blk_sym_const(c->a, rows), blk_sym_const(c->a, cols) };
	BlkType t = blk_type_tile(dt, 2, dims);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	int shape[2] = { (int)rows, (int)cols };
	*l = blk_layout_mma_operand(frag, shape, c->nthreads, wn);
	t.layout = l;
	return t;
}

typedef struct Steps {
	LowerCtx *c;
	BlkOp *dot;
	BlkValue *a, *b, *areg; /* areg: all of A as mma_a fragments, or NULL */
	int64_t M, N;
	int wn;
} Steps;

/* The fragments of step ks: A, B. */
static void load_step(Steps *S, BlkBuilder *bl, int ks, BlkValue **fa, BlkValue **fb)
{
	LowerCtx *c = S->c;
	BlkLoc loc = S->dot->loc;
	BlkDType dt = S->b->type.dtype;
	BlkType ta = frag_type(c, dt, BLK_FRAG_A, S->M, 16, S->wn);
	if (S->areg) {
		*fa = blk_build1(bl, BLK_OP_EXTRACT_SLICE, loc, ta, 1, &S->areg);
		blk_op_set_int(c->a, (*fa)->def, "axis", 1);
		blk_op_set_int(c->a, (*fa)->def, "start", 16 * ks);
	} else {
		BlkValue *v = view_k(c, bl, loc, S->a, 1, 16 * ks);
		*fa = blk_build1(bl, BLK_OP_LOCAL_LOAD, loc, ta, 1, &v);
	}
	BlkValue *v = view_k(c, bl, loc, S->b, 0, 16 * ks);
	*fb = blk_build1(bl, BLK_OP_LOCAL_LOAD, loc, frag_type(c, dt, BLK_FRAG_B, 16, S->N, S->wn), 1, &v);
}

enum { PAD = 8 };        /* elements added to each staged row (ldmatrix banks) */
enum { MAX_CHAIN = 16 }; /* loops between a staged dot and its buffers */

/* local_alloc T[slots, R, C] with rows of C + PAD, before `site`. */
static BlkValue *stage_buffer(LowerCtx *c, BlkOp *site, BlkLoc loc, BlkDType dt, int slots, int64_t R,
                              int64_t C, const char *name)
{
	int shape[3] = { slots, (int)R, (int)C };
	const BlkSym *dims[3] = { blk_sym_const(c->a, slots), blk_sym_const(c->a, R), blk_sym_const(c->a, C) };
	BlkType t = blk_type_ref(dt, 3, dims, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = blk_layout_shared(3, shape, PAD);
	t.layout = l;
	BlkBuilder b;
	blk_builder_before(&b, c->a, site);
	BlkValue *v = blk_build(&b, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &t, 0)->results[0];
	v->name = name;
	return v;
}

/* buf[p] stored from tile x; returns the slot's Ref. */
static BlkValue *stage_into(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *buf, BlkValue *p, BlkValue *x)
{
	const BlkType *bt = &buf->type;
	BlkType t = blk_type_ref(bt->dtype, 2, bt->dims + 1, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	int shape[2] = { bt->layout->shape[1], bt->layout->shape[2] };
	*l = blk_layout_shared(2, shape, PAD);
	t.layout = l;
	BlkValue *ops[2] = { buf, p };
	BlkValue *v = blk_build1(b, BLK_OP_VIEW, loc, t, 2, ops);
	BlkIndex idx[3] = { { BLK_INDEX_SCALAR, NULL }, { BLK_INDEX_FULL, NULL }, { BLK_INDEX_FULL, NULL } };
	blk_op_set_index(c->a, v->def, "idx", 3, idx);
	BlkValue *st[2] = { v, x };
	BlkOp *s = blk_build(b, BLK_OP_STORE, loc, 2, st, 0, NULL, 0);
	blk_op_set_index(c->a, s, "idx", 2, idx + 1);
	return v;
}

/* The `for`s from the dot up to `site`, innermost first; false where an
 * `if` or a scoped region lies between (nothing flows out of those). */
static bool loop_chain(BlkOp *dot, BlkOp *site, BlkOp **chain, int *m)
{
	*m = 0;
	for (BlkOp *op = dot; op != site;) {
		op = op->parent->parent;
		if (op->kind != BLK_OP_FOR || *m == MAX_CHAIN)
			return false;
		chain[(*m)++] = op;
	}
	return true;
}

/* The slot of this execution: a carry of each loop of the chain, 0 before
 * the outermost, 1 - slot yielded after the dot. */
static BlkValue *slot_carry(LowerCtx *c, BlkOp *dot, BlkOp **chain, int m)
{
	BlkBuilder b;
	blk_builder_before(&b, c->a, chain[m - 1]);
	BlkValue *p = blk_lower_i32(&b, dot->loc, 0);
	for (int k = m - 1; k >= 0; k--) { /* outermost first */
		BlkLoop L = { .c = c, .loop = chain[k], .body = chain[k]->regions[0] };
		p = blk_loop_add_carry(&L, p, p); /* the yielded value is set below */
		p->name = "slot";
	}
	blk_builder_before(&b, c->a, dot->next);
	BlkValue *ops[2] = { blk_lower_i32(&b, dot->loc, 1), p };
	BlkValue *next = blk_build1(&b, BLK_OP_SUB, dot->loc, p->type, 2, ops);
	for (int k = 0; k < m; k++) { /* innermost first: yield the next slot */
		BlkOp *y = chain[k]->regions[0]->last;
		y->operands[y->noperands - 1] = next;
		next = chain[k]->results[chain[k]->nresults - 1];
	}
	return p;
}

/* Both operands are tiles: store them into a slot, then a barrier.  A
 * dot outside any loop has one slot; so has one under an `if` of its
 * loop, with a barrier before the stores too. */
static void stage(LowerCtx *c, BlkOp *dot)
{
	BlkValue *a = dot->operands[0], *b = dot->operands[1];
	int64_t M = blk_lower_dim(a->type.dims[0]), K = blk_lower_dim(a->type.dims[1]);
	int64_t N = blk_lower_dim(b->type.dims[1]);
	BlkOp *site = blk_lower_stage_site(c, dot), *chain[MAX_CHAIN];
	int m;
	bool carried = loop_chain(dot, site, chain, &m) && m > 0;
	BlkValue *ba = stage_buffer(c, site, dot->loc, a->type.dtype, carried ? 2 : 1, M, K, "stage_a");
	BlkValue *bb = stage_buffer(c, site, dot->loc, b->type.dtype, carried ? 2 : 1, K, N, "stage_b");
	BlkValue *p = carried ? slot_carry(c, dot, chain, m) : NULL;
	BlkBuilder bl;
	blk_builder_before(&bl, c->a, dot);
	if (!p) {
		p = blk_lower_i32(&bl, dot->loc, 0);
		if (site != dot)
			blk_build(&bl, BLK_OP_BARRIER, dot->loc, 0, NULL, 0, NULL, 0);
	}
	dot->operands[0] = stage_into(c, &bl, dot->loc, ba, p, a);
	dot->operands[1] = stage_into(c, &bl, dot->loc, bb, p, b);
	blk_build(&bl, BLK_OP_BARRIER, dot->loc, 0, NULL, 0, NULL, 0);
}

/* Unlinks op and inserts it after `pos`. */
static void move_after(BlkOp *op, BlkOp *pos)
{
	BlkRegion *r = pos->parent;
	blk_op_erase(op);
	op->parent = r;
	op->prev = pos;
	op->next = pos->next;
	if (pos->next)
		pos->next->prev = op;
	else
		r->last = op;
	pos->next = op;
}

static void split(LowerCtx *c, BlkOp *dot)
{
	Steps S = { .c = c, .dot = dot, .a = dot->operands[0], .b = dot->operands[1] };
	S.M = blk_lower_dim(dot->results[0]->type.dims[0]);
	S.N = blk_lower_dim(dot->results[0]->type.dims[1]);
	S.wn = blk_layout_warps_n(dot->results[0]->type.layout);
	int n = (int)(blk_lower_dim(S.a->type.dims[1]) / 16);
	BlkBuilder bl;
	blk_builder_before(&bl, c->a, dot);
	if (S.a->type.kind == BLK_TYPE_TILE) {
		BlkType t = frag_type(c, S.a->type.dtype, BLK_FRAG_A, S.M, 16 * n, S.wn);
		S.areg = blk_build1(&bl, BLK_OP_CONVERT_LAYOUT, dot->loc, t, 1, &S.a);
	}
	/* the overlap ops, out of the region, in order */
	int r = 0;
	for (BlkOp *o = dot->nregions ? dot->regions[0]->first : NULL; o; o = o->next)
		r++;
	BlkOp **ovl = BLK_NEW_N(c->a, BlkOp *, r + 1);
	r = 0;
	for (BlkOp *o = dot->nregions ? dot->regions[0]->first : NULL; o; o = o->next)
		ovl[r++] = o;
	dot->nregions = 0;
	BlkValue *fa[2], *fb[2], *acc = dot->operands[2];
	load_step(&S, &bl, 0, &fa[0], &fb[0]);
	BlkOp *last = dot; /* the last step's overlap ops go after it, in order */
	for (int ks = 0, j = 0; ks < n; ks++) {
		if (ks + 1 < n)
			load_step(&S, &bl, ks + 1, &fa[(ks + 1) % 2], &fb[(ks + 1) % 2]);
		if (ks + 1 < n) {
			BlkValue *ops[3] = { fa[ks % 2], fb[ks % 2], acc };
			BlkOp *d = blk_build(&bl, BLK_OP_DOT, dot->loc, 3, ops, 1, &dot->results[0]->type, 0);
			blk_op_set_string(c->a, d, "engine", "mma");
			blk_op_set_int(c->a, d, "warps_n", S.wn);
			acc = d->results[0];
		} else {
			dot->operands[0] = fa[ks % 2];
			dot->operands[1] = fb[ks % 2];
			dot->operands[2] = acc;
		}
		for (; j < r && (j == r - 1 ? ks == n - 1 : (int)((int64_t)j * n / (r - 1)) == ks); j++) {
			if (ks + 1 < n) {
				move_after(ovl[j], bl.before->prev); /* after this step's dot */
			} else {
				move_after(ovl[j], last);
				last = ovl[j];
			}
		}
	}
}

static void visit(void *ctx, BlkOp *op)
{
	LowerCtx *c = ctx;
	if (op->kind != BLK_OP_DOT || !blk_lower_dot_mma(op) || op->noperands != 3 ||
	    !op->results[0]->type.layout || (op->operands[0]->type.layout && op->operands[0]->type.layout->frag))
		return;
	if (op->operands[1]->type.kind == BLK_TYPE_TILE)
		stage(c, op);
	split(c, op);
}

bool blk_lower_mma_steps(LowerCtx *c)
{
	blk_lower_walk(c->k->body, visit, c);
	return true;
}
