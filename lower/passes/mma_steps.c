/* mma_steps.c - a tensor-core dot becomes its k steps (k16; k32 for 8-bit
 * operands, ir/layout.h blk_layout_tc_k; "k16" below means one): fragment loads
 * and one mma dot per step, each an op of the IR.  A wgmma dot (split_wgmma
 * below) becomes one dot per step on k16 views of its shared operands,
 * then wgmma_commit, the region's ops and wgmma_wait.  An exact SIMT dot
 * with overlap ops (split_simt) becomes one dot a k step on local_loads
 * of A's column and B's row (fma_a, fma_b), the ops between them.
 *
 * Requires: the GPU level (tile.c), every mma dot on shared operands
 * (pipeline.c, dot_stage.c) or with A from registers.  Produces, for
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
 */
#include "lower/lower_int.h"

/* ref's [k0, k0 + kw) along its dim kdim. */
static BlkValue *view_kw(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *ref, int kdim, int64_t k0, int kw)
{
	const BlkType *t = &ref->type;
	const BlkSym *dims[2] = { t->dims[0], t->dims[1] };
	dims[kdim] = blk_sym_const(c->a, kw);
	BlkType vt = blk_type_ref(t->dtype, 2, dims, BLK_SPACE_SHARED);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = *t->layout;
	l->shape[kdim] = kw;
	l->pad[kdim] = kw;
	vt.layout = l;
	BlkValue *ops[2] = { ref, blk_lower_i32(b, loc, k0) };
	BlkValue *v = blk_build1(b, BLK_OP_VIEW, loc, vt, 2, ops);
	BlkIndex idx[2] = { { BLK_INDEX_FULL, NULL, 0 }, { BLK_INDEX_FULL, NULL, 0 } };
	idx[kdim] = (BlkIndex){ BLK_INDEX_DS, dims[kdim], 0 };
	blk_op_set_index(c->a, v->def, "idx", 2, idx);
	return v;
}

static BlkType frag_type(LowerCtx *c, BlkDType dt, int frag, int64_t rows, int64_t cols, int wn)
{
	const BlkSym *dims[2] = { blk_sym_const(c->a, rows), blk_sym_const(c->a, cols) };
	BlkType t = blk_type_tile(dt, 2, dims);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	int shape[2] = { (int)rows, (int)cols };
	*l = blk_layout_mma_operand(frag, shape, c->nthreads, wn, blk_dtype_size(dt));
	t.layout = l;
	return t;
}

typedef struct Steps {
	LowerCtx *c;
	BlkOp *dot;
	BlkValue *a, *b, *areg; /* areg: all of A as mma_a fragments, or NULL */
	int64_t M, N;
	int wn, ks; /* ks: k elements a step, 16 (32 for 8-bit operands) */
} Steps;

/* The fragments of step ks: A, B. */
static void load_step(Steps *S, BlkBuilder *bl, int ks, BlkValue **fa, BlkValue **fb)
{
	LowerCtx *c = S->c;
	BlkLoc loc = S->dot->loc;
	int kw = S->ks;
	BlkType ta = frag_type(c, S->a->type.dtype, BLK_FRAG_A, S->M, kw, S->wn);
	if (S->areg) {
		*fa = blk_build1(bl, BLK_OP_EXTRACT_SLICE, loc, ta, 1, &S->areg);
		blk_op_set_int(c->a, (*fa)->def, "axis", 1);
		blk_op_set_int(c->a, (*fa)->def, "start", kw * ks);
	} else {
		BlkValue *v = view_kw(c, bl, loc, S->a, 1, kw * ks, kw);
		*fa = blk_build1(bl, BLK_OP_LOCAL_LOAD, loc, ta, 1, &v);
	}
	BlkValue *v = view_kw(c, bl, loc, S->b, 0, kw * ks, kw);
	*fb = blk_build1(bl, BLK_OP_LOCAL_LOAD, loc, frag_type(c, S->b->type.dtype, BLK_FRAG_B, kw, S->N, S->wn), 1,
	                 &v);
}

/* The dot region's ops (overlap ops: the pipeliner's next copies), in
 * order, and their count in *r; the dot loses its region. */
static BlkOp **take_overlap(LowerCtx *c, BlkOp *dot, int *r)
{
	BlkOp *first = dot->nregions ? dot->regions[0]->first : NULL;
	*r = 0;
	for (BlkOp *o = first; o; o = o->next)
		(*r)++;
	BlkOp **ovl = BLK_NEW_N(c->a, BlkOp *, *r + 1);
	*r = 0;
	for (BlkOp *o = first; o; o = o->next)
		ovl[(*r)++] = o;
	dot->nregions = 0;
	return ovl;
}

/* Of r overlap ops spread over steps first .. n-1, op j goes after step
 * first + j * (n - first) / (r - 1), the last after the last step. */
static int overlap_step(int j, int r, int n, int first)
{
	if (first >= n)
		first = 0;
	return j == r - 1 ? n - 1 : first + (int)((int64_t)j * (n - first) / (r - 1));
}

static void split(LowerCtx *c, BlkOp *dot)
{
	Steps S = { .c = c, .dot = dot, .a = dot->operands[0], .b = dot->operands[1] };
	S.M = blk_lower_dim(dot->results[0]->type.dims[0]);
	S.N = blk_lower_dim(dot->results[0]->type.dims[1]);
	S.wn = blk_layout_warps_n(dot->results[0]->type.layout);
	S.ks = blk_layout_tc_k(blk_dtype_size(S.a->type.dtype));
	int n = (int)(blk_lower_dim(S.a->type.dims[1]) / S.ks);
	BlkBuilder bl;
	blk_builder_before(&bl, c->a, dot);
	if (S.a->type.kind == BLK_TYPE_TILE) {
		BlkType t = frag_type(c, S.a->type.dtype, BLK_FRAG_A, S.M, S.ks * n, S.wn);
		S.areg = blk_build1(&bl, BLK_OP_CONVERT_LAYOUT, dot->loc, t, 1, &S.a);
	}
	int r;
	BlkOp **ovl = take_overlap(c, dot, &r);
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
		for (; j < r && overlap_step(j, r, n, 0) == ks; j++) {
			if (ks + 1 < n) {
				blk_lower_move_after(ovl[j], bl.before->prev); /* after this step's dot */
			} else {
				blk_lower_move_after(ovl[j], last);
				last = ovl[j];
			}
		}
	}
}

/* A dot on shared operands being split into n steps (wgmma, SIMT): the
 * accumulator so far, the overlap ops and how many went out. */
typedef struct Chain {
	LowerCtx *c;
	BlkOp *dot;
	const char *engine;
	int n, r, j;
	int first; /* the first step an overlap op may follow */
	BlkValue *acc;
	BlkOp **ovl;
	BlkOp *last; /* the last op of the last step */
	BlkBuilder bl;
} Chain;

/* Step ks on the views va, vb: a new dot accumulating the last step's
 * result (the original op for the last step), then step ks's overlap
 * ops after it. */
static void chain_step(Chain *ch, int ks, BlkValue *va, BlkValue *vb)
{
	BlkOp *dot = ch->dot;
	if (ks + 1 < ch->n) {
		BlkValue *ops[3] = { va, vb, ch->acc };
		BlkOp *d = blk_build(&ch->bl, BLK_OP_DOT, dot->loc, 3, ops, 1, &dot->results[0]->type, 0);
		blk_op_set_string(ch->c->a, d, "engine", ch->engine);
		ch->acc = d->results[0];
	} else {
		dot->operands[0] = va, dot->operands[1] = vb, dot->operands[2] = ch->acc;
	}
	for (; ch->j < ch->r && overlap_step(ch->j, ch->r, ch->n, ch->first) == ks; ch->j++) {
		BlkOp *after = ks + 1 < ch->n ? ch->bl.before->prev : ch->last;
		blk_lower_move_after(ch->ovl[ch->j], after);
		if (ks + 1 == ch->n)
			ch->last = ch->ovl[ch->j];
	}
}

/* Step ks of a SIMT dot's shared operand: local_load of A's column ks
 * (fma_a) or B's row ks (fma_b) of its slab. */
static BlkValue *fma_step(LowerCtx *c, BlkBuilder *b, BlkOp *dot, int frag, int ks)
{
	BlkValue *ref = dot->operands[frag == BLK_FRAG_A ? 0 : 1];
	BlkValue *v = view_kw(c, b, dot->loc, ref, frag == BLK_FRAG_A ? 1 : 0, ks, 1);
	BlkType t = blk_type_tile(ref->type.dtype, 2, v->type.dims);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = blk_layout_fma_operand(dot->results[0]->type.layout, frag);
	t.layout = l;
	return blk_build1(b, BLK_OP_LOCAL_LOAD, dot->loc, t, 1, &v);
}

/* An exact SIMT dot with overlap ops (the pipeliner's next copies): one
 * dot a k step on A's column and B's row of its shared slabs (local_load
 * into fma_a/fma_b, each right before its step: loading step ks+1 ahead,
 * as for mma, measured 4 % slower, ptxas having 128 registers), accumulating
 * in turn, the ops spread between them as for mma but from step 1 on --
 * so the copies queue between the steps' shared loads instead of ahead
 * of them all, and none ahead of step 1's loads (the first in the body
 * once rotate.c loads step 0 in the iteration before: run 110).  Each
 * element still takes its products in k order: the same FMAs, the same
 * bits. */
static void split_simt(LowerCtx *c, BlkOp *dot)
{
	BlkValue *a = dot->operands[0], *acc = dot->operands[2];
	int n = (int)blk_lower_dim(a->type.dims[1]), r;
	BlkOp **ovl = take_overlap(c, dot, &r);
	if (!blk_lower_simt_unrolled(n, blk_layout_nregs(dot->results[0]->type.layout))) {
		/* emit_dot.c runs it as a loop: the ops go first (after the barrier) */
		for (int j = 0; j < r; j++)
			blk_lower_move_before(ovl[j], dot);
		return;
	}
	Chain ch = { .c = c, .dot = dot, .engine = "fma", .n = n, .acc = acc, .ovl = ovl, .r = r, .last = dot,
	             .first = 1 };
	blk_builder_before(&ch.bl, c->a, dot);
	for (int ks = 0; ks < n; ks++) {
		BlkValue *fa = fma_step(c, &ch.bl, dot, BLK_FRAG_A, ks);
		chain_step(&ch, ks, fa, fma_step(c, &ch.bl, dot, BLK_FRAG_B, ks));
	}
}

/* Step ks of an A held in registers (a wgmma accumulator's layout): its
 * columns 16ks .. 16ks+15, registers only. */
static BlkValue *wgmma_a_step(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *a, int ks)
{
	const BlkSym *dims[2] = { a->type.dims[0], blk_sym_const(c->a, 16) };
	BlkType t = blk_type_tile(a->type.dtype, 2, dims);
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	int shape[2] = { (int)blk_lower_dim(a->type.dims[0]), 16 };
	*l = blk_layout_wgmma(shape, c->nthreads);
	t.layout = l;
	BlkValue *v = blk_build1(b, BLK_OP_EXTRACT_SLICE, loc, t, 1, &a);
	blk_op_set_int(c->a, v->def, "axis", 1);
	blk_op_set_int(c->a, v->def, "start", 16 * ks);
	return v;
}

/* w (a wgmma_wait leaving groups in flight) is yielded by the loop around
 * the dot: after the loop, a wgmma_wait {pending = 0} of that carry, and
 * every later use reads it. */
/* v is defined before op: not by op or an op after it in op's region. */
static bool defined_before(const BlkValue *v, const BlkOp *op)
{
	for (const BlkOp *o = op; o; o = o->next)
		if (v->def == o)
			return false;
	return true;
}

/* Loads of `in` arrays after the drain (a bias, a residual) whose
 * operands are ready before it move up to just before it: they are in
 * flight while the last group completes instead of after it.  Nothing
 * writes an `in` array, so no op they pass can change what they read. */
static void hoist_loads(LowerCtx *c, BlkOp *wait)
{
	BlkOp *next;
	for (BlkOp *op = wait->next; op; op = next) {
		next = op->next;
		int pi = op->kind == BLK_OP_LOAD && op->noperands ? blk_lower_ref_param(op->operands[0]) : -1;
		if (pi < 0 || c->k->params[pi].access != BLK_ACCESS_IN)
			continue;
		bool ready = true;
		for (int i = 0; i < op->noperands; i++)
			ready = ready && defined_before(op->operands[i], wait);
		if (ready)
			blk_lower_move_after(op, wait->prev);
	}
}

static void drain_after_loop(LowerCtx *c, BlkOp *dot, BlkValue *w)
{
	BlkOp *loop = dot->parent->parent, *y = dot->parent->last;
	if (!loop || loop->kind != BLK_OP_FOR || !y || y->kind != BLK_OP_YIELD)
		blk_die("lower: a wgmma dot left in flight outside a loop's body");
	for (int i = 0; i < y->noperands; i++) {
		if (y->operands[i] != w)
			continue;
		BlkValue *r = loop->results[i];
		BlkBuilder b;
		blk_builder_before(&b, c->a, loop->next);
		BlkValue *done = blk_build1(&b, BLK_OP_WGMMA_WAIT, dot->loc, r->type, 1, &r);
		blk_op_set_int(c->a, done->def, "pending", 0);
		blk_replace_uses(loop->parent, r, done);
		done->def->operands[0] = r;
		hoist_loads(c, done->def);
	}
}

/* A wgmma dot: one dot on k16 views (k32 of 8-bit types) of its shared
 * operands per step (each a wgmma.mma_async of its warpgroups, issued
 * without waiting), then wgmma_commit, the overlap ops, and wgmma_wait,
 * whose result replaces the dot's for every later use. */
static void split_wgmma(LowerCtx *c, BlkOp *dot)
{
	BlkValue *a = dot->operands[0], *b = dot->operands[1], *acc = dot->operands[2];
	int kw = blk_layout_tc_k(blk_dtype_size(a->type.dtype));
	int n = (int)(blk_lower_dim(a->type.dims[1]) / kw), r;
	BlkOp **ovl = take_overlap(c, dot, &r);
	/* the overlap ops (the plain pipeline's next copies, in ifs) go after
	 * the commit, not between the steps: ptxas serializes a wgmma chain
	 * that branches between its steps ("warpgroup.arrive is injected"),
	 * and the steps, being asynchronous, hide nothing by being spread */
	Chain ch = { .c = c, .dot = dot, .engine = "wgmma", .n = n, .acc = acc, .ovl = ovl, .r = 0, .last = dot };
	blk_builder_before(&ch.bl, c->a, dot);
	for (int ks = 0; ks < n; ks++) {
		BlkValue *va = a->type.kind == BLK_TYPE_TILE ? wgmma_a_step(c, &ch.bl, dot->loc, a, ks)
		                                              : view_kw(c, &ch.bl, dot->loc, a, 1, kw * ks, kw);
		chain_step(&ch, ks, va, view_kw(c, &ch.bl, dot->loc, b, 0, kw * ks, kw));
	}
	BlkOp *last = ch.last;
	BlkBuilder end;
	blk_builder_before(&end, c->a, last->next);
	BlkOp *at = blk_build(&end, BLK_OP_WGMMA_COMMIT, dot->loc, 0, NULL, 0, NULL, 0);
	BlkValue *d = dot->results[0];
	BlkValue *w = blk_build1(&end, BLK_OP_WGMMA_WAIT, dot->loc, d->type, 1, &d);
	for (int j = 0; j < r; j++, at = at->next)
		blk_lower_move_after(ovl[j], at);
	int64_t pending = blk_op_int(dot, "wait_pending", 0);
	blk_op_set_int(c->a, w->def, "pending", pending);
	blk_op_remove_attr(dot, "wait_pending");
	blk_replace_uses(dot->parent, d, w);
	w->def->operands[0] = d;
	if (pending)
		drain_after_loop(c, dot, w);
}

/* The wgmma dot is a step already: a wait or the next step takes its
 * result. */
static bool issued(const BlkOp *dot)
{
	for (const BlkOp *o = dot->next; o; o = o->next)
		for (int i = 0; i < o->noperands; i++)
			if (o->operands[i] == dot->results[0] &&
			    (o->kind == BLK_OP_WGMMA_WAIT || (o->kind == BLK_OP_DOT && i == 2)))
				return true;
	return false;
}

static void visit(void *ctx, BlkOp *op)
{
	LowerCtx *c = ctx;
	if (op->kind != BLK_OP_DOT || op->noperands != 3 || op->operands[1]->type.kind != BLK_TYPE_REF ||
	    !op->results[0]->type.layout)
		return;
	if (blk_lower_dot_wgmma(op)) {
		if (!issued(op))
			split_wgmma(c, op);
		return;
	}
	if (blk_lower_dot_mma(op))
		split(c, op);
	else if (op->nregions && op->regions[0]->first)
		split_simt(c, op);
}

bool blk_lower_mma_steps(LowerCtx *c)
{
	blk_lower_walk(c->k->body, visit, c);
	return true;
}
