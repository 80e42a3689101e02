/* pipeline.c - the software pipeliner: a dot's operand slabs go from
 * global to shared memory by cp.async, num_stages slabs deep -- a
 * tensor-core dot's, and the exact SIMT (f32 fma) dot's (below).
 *
 * Requires: block refs lowered (blockspec.c: masks set), shapes constant,
 * dot engines chosen (dot_engine.c).  Applies to a `for` with a constant
 * step > 0 and any bounds (constants, or values of the program such as
 * program ids and sizes), and to each dot with engine "mma" or "wgmma"
 * directly in its body whose two operands are 2-D 16-bit or 8-bit slabs
 * loaded in that body from `in` arrays (zero fill), B also through a
 * transpose (`x @ w.T`; 8-bit B only so: both engines read bytes
 * contiguous along k), at
 * indices that depend only on the iv and values from outside the loop --
 * or, for one of them, a tile from outside the loop (attention's q), which
 * is stored into a shared buffer once, before the loop; or, for A, the
 * result of another mma dot of the body (attention's P = softmax(Q K^T)),
 * when both run over one warp column: its accumulator registers are the A
 * fragments (emit_mma.c), so A stays in registers.  A tensor-core
 * dot's slab may also be a gather of rows (gathered_rows below: an
 * implicit GEMM's A), its copies computing their rows' indices at their
 * own iteration.
 * With S = num_stages >= 2, each operand X gets a buffer
 * bufX = local_alloc [S, R, C + 16 bytes] (the pad spreads ldmatrix's row
 * reads over the banks; for wgmma [S, R, C] swizzled, ir/layout.h, and a
 * fence_async before the barrier: cp.async writes through the generic
 * proxy, wgmma reads through the async one) and:
 *
 *   for s in 0 .. D-1:                       -- before the loop
 *     if lo + s*step < hi { async_copy bufX[s] <- X(lo + s*step) }
 *     async_commit                           -- a group per slab, maybe empty
 *   for k (.., rd = 0, wr = D) {
 *     async_wait {pending = D-1}             -- slab k has landed
 *     barrier                                -- for every thread; slot wr is free
 *     d = dot bufA[rd], bufB[rd] (or trans_view of it), acc {
 *       if k + D*step < hi { async_copy bufX[wr] <- X(k + D*step) }
 *       ...                                  -- in parts, spread over the
 *       async_commit                         -- dot's k16 steps (emit_mma.c)
 *     }
 *     yield .., rd + 1 mod S, wr + 1 mod S
 *   }
 *
 * D = S - 1 slabs run ahead; S - 2 where the loop's dots are all wgmma
 * over S >= 3 slots, whose last group stays in flight into the next
 * iteration (attr wait_pending = 1 on the dot, mma_steps.c): slot wr was
 * then read two iterations back, by a group every warpgroup has waited
 * for before this iteration's barrier.
 * Every copy sees an iv of the loop's own range, so the loads' masks stay
 * valid, and a loop that runs fewer than D times copies nothing past
 * it.  Several dots of one loop (attention's two) share the counters, one
 * commit group a slab for all their operands, and one wait and barrier a
 * iteration, before the first of them.  A loop inside another loop starts
 * with a barrier: the previous execution's last reads of the slots come
 * before this one's first copies.
 *
 * An f32 dot of engine "fma" whose two operands are such slabs is taken
 * the same way, its slots laid out as emit_dot.c reads them (simt_orient):
 * k-major, [S, K, pad(M) + 4] and [S, K, pad(N) + 4].  A slab that lies
 * along k (A as loaded, w of `x @ w.T`) is written through a trans_view,
 * one 4-byte cp.async an element, so nothing is staged through registers;
 * the dot reads A through a trans_view and B as it lies, and loses
 * b_trans.  Its copies go in its region in two parts each (mma_steps.c
 * splits the dot into k steps around them).  The stages are cut to what
 * fits SIMT_SMEM (two programs an SM), or SIMT_SMEM_ONE for a micro-tile
 * that keeps one program an SM; where not even two fit, dot_stage.c
 * stages the operands.
 */
#include "pipeline.h"

#include <string.h>

/* The accumulators a thread of a SIMT dot's micro-tile (its dot<>
 * layout, not made yet: the padded tile over the threads). */
static int64_t simt_nacc(const LowerCtx *c, const BlkOp *dot)
{
	const BlkType *t = &dot->results[0]->type;
	int64_t n = (int64_t)blk_pow2ceil((int)blk_lower_dim(t->dims[0])) *
	            blk_pow2ceil((int)blk_lower_dim(t->dims[1])) / c->nthreads;
	return n < 1 ? 1 : n;
}

static bool zero_fill(const BlkOp *ld)
{
	const BlkAttr *f = blk_op_attr(ld, "fill");
	return !f || (f->kind == BLK_ATTR_FLOAT ? f->f == 0 : f->kind == BLK_ATTR_INT && f->i == 0);
}

/* v is defined outside the loop (the same in every iteration). */
static bool invariant(const Pipe *P, const BlkValue *v)
{
	return !blk_lower_within(P->L.body, v);
}

/* v (A of a dot over one warp column) is, through elementwise ops of the
 * loop body, the result of another such dot with as many rows: its mma
 * registers are A's fragments as they are (attention's P), no shared
 * memory needed. */
static bool from_rows_dot(const Pipe *P, const BlkValue *v)
{
	const BlkOp *d = v->type.rank == 2 ? blk_lower_dot_behind(v, P->L.body) : NULL, *me = P->s->dot;
	if (!d || !blk_sym_equal(d->results[0]->type.dims[0], me->results[0]->type.dims[0]))
		return false;
	if (blk_lower_dot_wgmma(d) && blk_lower_dot_wgmma(me)) /* every warp owns whole rows */
		return true;
	return blk_op_int(me, "warps_n", 0) == 1 && blk_lower_dot_mma(d) && blk_op_int(d, "warps_n", 0) == 1;
}

/* The dot is the exact SIMT one (engine "fma") on f32 operands. */
static bool simt_f32(const BlkOp *dot)
{
	const BlkAttr *e = blk_op_attr(dot, "engine");
	return e && e->kind == BLK_ATTR_STRING && strcmp(e->s, "fma") == 0 &&
	       dot->operands[0]->type.dtype == BLK_F32 && dot->operands[1]->type.dtype == BLK_F32;
}

/* A slab of dt can be staged for the dot: 16-bit and 8-bit types on tensor
 * cores (the engines take no others), f32 for the SIMT dot. */
static bool slab_dtype(const BlkOp *dot, BlkDType dt)
{
	if (simt_f32(dot))
		return dt == BLK_F32;
	return blk_dtype_size(dt) == 2 || blk_dtype_size(dt) == 1;
}

/* How the SIMT dot's slots lie (emit_dot.c's outer product reads, at one
 * k, a thread's rows of A and its columns of B as consecutive floats):
 * both k-major, A [K, M] read through a trans_view, B [K, N].  A slab
 * that lies the other way ([M, K] A, or w of `x @ w.T`) is transposed by
 * its copy (one 4-byte cp.async an element). */
static void simt_orient(const BlkOp *dot, int o, Operand *x)
{
	bool t = x->trans != NULL; /* the load is [K, M] for A, [N, K] for B */
	x->kmajor = o == 0 ? !t : t != (blk_op_int(dot, "b_trans", 0) != 0);
	x->dot_trans = o == 0;
}

/* A slot's rows and columns: the slab's [R, C], or [C, R] where it holds
 * it transposed (kmajor: SIMT's k-major slots, a transposed view's slabs);
 * a SIMT row holds pow2ceil(columns) + 4 floats. */
static void slot_dims(const Operand *x, int64_t d[2])
{
	d[0] = x->kmajor ? x->C : x->R;
	d[1] = x->kmajor ? x->R : x->C;
}

/* Every use of v in body is an operand of a dot of body, directly or
 * through a transpose only that dot reads (B): a slab that several
 * tensor-core dots read (SwiGLU's x, the backward's dO) is staged once,
 * all of them reading its slot (blk_pipe_choose checks they are all
 * taken). */
static bool dots_only(const BlkRegion *body, const BlkValue *v)
{
	for (const BlkOp *op = body->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			if (blk_lower_uses(op->regions[r], v))
				return false;
		for (int i = 0; i < op->noperands; i++) {
			if (op->operands[i] != v)
				continue;
			bool ok = op->kind == BLK_OP_DOT && i < 2;
			if (!ok && blk_transpose_plain(op) && blk_lower_uses(body, op->results[0]) == 1)
				for (const BlkOp *u = op->next; u && !ok; u = u->next)
					ok = u->kind == BLK_OP_DOT && u->noperands >= 2 && u->operands[1] == op->results[0];
			if (!ok)
				return false;
		}
	}
	return true;
}

/* The uses of the load's result in the body: its dots' and transposes'. */
static int slab_uses(const Pipe *P, const BlkOp *load)
{
	return blk_lower_uses(P->L.body, load->results[0]);
}

/* The taken operands that read x's slab. */
static int readers(const Pipe *P, const Operand *x)
{
	int n = 0;
	for (int j = 0; j < P->n; j++)
		for (int q = 0; q < 2; q++)
			n += P->all[j].x[q].load == x->load;
	return n;
}

/* Slabs read by several taken dots: the first operand with a load owns
 * it, the others name it (same).  A dot reading a slab that something
 * not taken also reads (a dot left to another path, which needs the
 * load) is left out too, until every slab's reads are taken dots'. */
static void share_slabs(Pipe *P)
{
	for (bool dropped = true; dropped;) {
		dropped = false;
		int n = 0;
		for (int i = 0; i < P->n; i++) {
			bool whole = true;
			for (int o = 0; o < 2; o++) {
				const Operand *x = &P->all[i].x[o];
				whole = whole && (!x->load || readers(P, x) == slab_uses(P, x->load));
			}
			if (whole)
				P->all[n++] = P->all[i];
			dropped |= !whole;
		}
		P->n = n;
	}
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			x->same = 0;
			for (int j = 0; j <= i && x->load && !x->same; j++)
				for (int q = 0; q < (j < i ? 2 : o); q++)
					if (P->all[j].x[q].load == x->load && !x->same)
						x->same = 1 + 2 * j + q;
		}
}

/* A gathering load (an implicit GEMM's rows, picked by computed indices)
 * is a slab a tensor-core dot's copies can fetch -- cp.async takes any
 * address, 16 bytes a piece along the row -- where the slab's last dim is
 * a plain slice of the array's last (contiguous) dim and it lies as the
 * dot reads it.  TMA cannot gather (warp_spec.c copies such a slab by
 * cp.async; schedule.c keeps such loops plain). */
static bool gathered_rows(const Pipe *P, const Operand *x, const BlkOp *ld)
{
	const BlkAttr *idx = blk_op_attr(ld, "idx");
	int n = idx->index.n;
	BlkIndexKind last = idx->index.v[n - 1].kind;
	return !simt_f32(P->s->dot) && !x->trans && (last == BLK_INDEX_FULL || last == BLK_INDEX_DS);
}

/* Slab x of a tensor-core dot is 16-bit and its array was passed as a
 * transposed view (`dy.T` from torch: contiguous along its second-last
 * dim, so along the slab's rows): its slot holds it as it lies, [C, R]
 * (kmajor), filled by TMA through a `trans` map (warp_spec.c) or by
 * cp.async pieces along the rows, and the dot reads the slot through a
 * trans_view -- wgmma's MN-major A (the transpose immediate) or K-major B;
 * mma.sync's ldmatrix(.trans) the other way round.  Copied into a [R, C]
 * slot it would be one element a thread a load (gpu-notes run 172).  Not
 * for 8 bits (wgmma and ldmatrix read those k-contiguous only) nor a slot
 * whose rows wgmma cannot swizzle or ldmatrix read in 16-byte pieces. */
static bool transposed_view(const Pipe *P, const Operand *x)
{
	LowerCtx *c = P->L.c;
	int pi = blk_lower_ref_param(x->load->operands[0]);
	bool wg = blk_lower_dot_wgmma(P->s->dot);
	if (!(wg || blk_lower_dot_mma(P->s->dot)) || blk_dtype_size(x->load->results[0]->type.dtype) != 2 ||
	    pi < 0 || c->k->params[pi].rank < 2 || c->k->params[pi].access == BLK_ACCESS_SCRATCH)
		return false;
	int R = c->k->params[pi].rank, shape[2] = { (int)x->C, (int)x->R };
	const BlkLaunchArg *g = blk_lower_ptr_arg(c, pi);
	bool rows_ok = wg ? blk_layout_shared_swizzled(2, shape, 2).swz != 0 : x->R % 8 == 0;
	return g->strides[R - 2] == 1 && g->strides[R - 1] != 1 && rows_ok;
}

/* Operand o of the dot, if it is a slab this pass can stage, or a 2-D
 * 16-bit tile from outside the loop (attention's q), kept in shared
 * memory for every iteration. */
static bool stageable(Pipe *P, int o)
{
	Operand *x = &P->s->x[o];
	BlkValue *v = P->s->dot->operands[o];
	BlkOp *d = v->def;
	if (o == 0 && blk_dtype_size(v->type.dtype) == 2 && from_rows_dot(P, v)) {
		x->regs = true;
		return true;
	}
	if (invariant(P, v) && v->type.rank == 2 && blk_dtype_size(v->type.dtype) == 2) {
		x->fixed = v;
		x->R = blk_lower_dim(v->type.dims[0]);
		x->C = blk_lower_dim(v->type.dims[1]);
		return true;
	}
	/* (B only: an A from registers must be in the dot's own mma layout, one
	 * warp column, tile.c; a computed A stays with dot_stage.c) */
	if (o == 1 && blk_lower_dot_tc(P->s->dot) && v->type.rank == 2 && blk_dtype_size(v->type.dtype) == 2 &&
	    blk_lower_transformed_load(v, P->L.body)) {
		x->computed = true;
		x->R = blk_lower_dim(v->type.dims[0]);
		x->C = blk_lower_dim(v->type.dims[1]);
		return true;
	}
	bool simt = simt_f32(P->s->dot);
	if ((o == 1 || simt) && d && blk_transpose_plain(d) && d->parent == P->L.body &&
	    blk_lower_uses(P->L.body, v) == 1) {
		x->trans = d;
		v = d->operands[0];
		d = v->def;
	}
	if (blk_dtype_size(v->type.dtype) == 1 && o == 1 && !x->trans) /* 8 bits are read k-contiguous */
		return false;
	if (!d || d->kind != BLK_OP_LOAD || (blk_op_gathers(d) && !gathered_rows(P, x, d)) || blk_op_strided(d) ||
	    d->parent != P->L.body ||
	    v->type.rank != 2 || !slab_dtype(P->s->dot, v->type.dtype) || !zero_fill(d) ||
	    (simt ? blk_lower_uses(P->L.body, v) != 1 : !dots_only(P->L.body, v)) ||
	    (!blk_loop_read_only(P->L.c, d->operands[0]) && !blk_loop_fed_by_wait(&P->L, d->operands[0]) &&
	     !blk_loop_peer_read_only(P->L.c, d->operands[0])))
		return false;
	for (int i = 0; i < d->noperands; i++) /* the block Ref may be the body's too */
		if (!blk_loop_slice(&P->L, &x->in, d->operands[i]))
			return false;
	x->load = d;
	x->R = blk_lower_dim(v->type.dims[0]);
	x->C = blk_lower_dim(v->type.dims[1]);
	if (simt)
		simt_orient(P->s->dot, o, x);
	else {
		x->kmajor = transposed_view(P, x);
		x->dot_trans = (x->trans != NULL) != x->kmajor;
	}
	return true;
}

BlkValue *blk_pipe_binop(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkValue *x, BlkValue *y)
{
	BlkValue *o[2] = { x, y };
	bool cmp = k == BLK_OP_LT || k == BLK_OP_EQ || k == BLK_OP_NE;
	BlkType t = blk_type_scalar(cmp ? BLK_BOOL : BLK_I32);
	return blk_build1(b, k, loc, t, 2, o);
}

static BlkType shared_type(LowerCtx *c, BlkDType dt, int rank, const int64_t *shape, const BlkLayout *l)
{
	const BlkSym *dims[BLK_MAX_RANK];
	for (int d = 0; d < rank; d++)
		dims[d] = blk_sym_const(c->a, shape[d]);
	BlkType t = blk_type_ref(dt, rank, dims, BLK_SPACE_SHARED);
	t.layout = l;
	return t;
}

/* bufX = local_alloc [S, R, C] with rows of C + PAD (SIMT: k-major, see
 * simt_orient); [R, C] for a tile from outside the loop, stored into it
 * once. */
void blk_pipe_share_buffers(Pipe *P)
{
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			if (blk_pipe_shared(x)) {
				const Operand *y = &P->all[(x->same - 1) / 2].x[(x->same - 1) % 2];
				x->buf = y->buf;
				x->tma = y->tma;
			}
		}
}

void blk_pipe_make_buffer(Pipe *P, BlkBuilder *b, Operand *x, const char *name)
{
	if (blk_pipe_shared(x))
		return; /* blk_pipe_share_buffers gives it its owner's */
	LowerCtx *c = P->L.c;
	int64_t shape64[3] = { P->S };
	slot_dims(x, shape64 + 1);
	int shape[3] = { P->S, (int)shape64[1], (int)shape64[2] };
	int rank = x->fixed ? 2 : 3;
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	BlkDType dt = x->fixed ? x->fixed->type.dtype : x->load->results[0]->type.dtype;
	if (blk_lower_dot_wgmma(P->s->dot)) /* wgmma reads swizzled rows, no pad */
		*l = blk_layout_shared_swizzled(rank, shape + 3 - rank, blk_dtype_size(dt));
	else if (simt_f32(P->s->dot))
		/* k-major rows of a power of two (the dot's threads cover that
		 * much) + 4 floats: the rows of a transposing copy's writes
		 * then start 4 banks apart */
		*l = blk_layout_shared(rank, shape + 3 - rank, blk_pow2ceil(shape[2]) + 4 - shape[2]);
	else
		*l = blk_layout_shared(rank, shape + 3 - rank, PAD_BYTES / blk_dtype_size(dt));
	BlkLoc loc = x->fixed ? P->s->dot->loc : x->load->loc;
	BlkType t = shared_type(c, dt, rank, shape64 + 3 - rank, l);
	x->buf = blk_build(b, BLK_OP_LOCAL_ALLOC, loc, 0, NULL, 1, &t, 0)->results[0];
	x->buf->name = name;
	if (x->fixed) {
		BlkValue *ops[2] = { x->buf, x->fixed };
		BlkOp *st = blk_build(b, BLK_OP_STORE, loc, 2, ops, 0, NULL, 0);
		BlkIndex idx[2] = { { BLK_INDEX_FULL, NULL, 0 }, { BLK_INDEX_FULL, NULL, 0 } };
		blk_op_set_index(c->a, st, "idx", 2, idx);
	}
}

/* bufX[slot] as a [R, C] shared Ref (a stored tile's buffer is that). */
BlkValue *blk_pipe_slot_view(Pipe *P, BlkBuilder *b, Operand *x, BlkValue *slot)
{
	return x->fixed ? x->buf : blk_lower_slot_view(P->L.c, b, x->load->loc, x->buf, slot);
}

/* The dot's operand from a slot view, through a trans_view where
 * dot_trans. */
BlkValue *blk_pipe_operand_view(Pipe *P, BlkBuilder *b, Operand *x, BlkValue *view)
{
	return x->dot_trans ? blk_lower_trans_view(P->L.c, b, P->s->dot->loc, view) : view;
}

/* async_copy bufX[slot] <- X at the indices vm maps (part of parts), in an
 * `if cond` at b. */
BlkOp *blk_pipe_copy(Pipe *P, BlkBuilder *b, BlkValue *cond, Operand *x, BlkValue *slot, BlkPtrMap *vm,
                    int part, int parts)
{
	LowerCtx *c = P->L.c;
	BlkBuilder in = *b;
	if (cond) {
		BlkOp *iff = blk_build(b, BLK_OP_IF, x->load->loc, 1, &cond, 0, NULL, 2);
		blk_builder_at_end(&in, c->a, iff->regions[0]);
	}
	BlkValue *dst = blk_pipe_slot_view(P, &in, x, slot);
	if (x->kmajor)
		dst = blk_lower_trans_view(c, &in, x->load->loc, dst);
	int n = x->load->noperands + 1;
	BlkValue **ops = BLK_NEW_N(c->a, BlkValue *, n);
	ops[0] = dst;
	for (int i = 0; i < x->load->noperands; i++) {
		BlkValue *m = blk_pmap_get(vm, x->load->operands[i]);
		ops[i + 1] = m ? m : x->load->operands[i];
	}
	BlkOp *cp = blk_build(&in, BLK_OP_ASYNC_COPY, x->load->loc, n, ops, 0, NULL, 0);
	for (int i = 0; i < x->load->nattrs; i++) {
		const BlkAttr *a = &x->load->attrs[i];
		if (strcmp(a->name, "idx") == 0)
			blk_op_set_index(c->a, cp, "idx", a->index.n, a->index.v);
		else if (strcmp(a->name, "mask") == 0)
			blk_op_set_string(c->a, cp, "mask", a->s);
	}
	if (parts > 1) {
		blk_op_set_int(c->a, cp, "part", part);
		blk_op_set_int(c->a, cp, "parts", parts);
	}
	return cp;
}

static void commit(BlkBuilder *b, BlkLoc loc)
{
	blk_build(b, BLK_OP_ASYNC_COMMIT, loc, 0, NULL, 0, NULL, 0);
}

/* The slabs of the first D iterations, before the loop. */
static void prologue(Pipe *P, BlkBuilder *b)
{
	BlkOp *f = P->L.loop;
	for (int s = 0; s < P->D; s++) {
		BlkValue *ks = f->operands[0];
		if (s)
			ks = blk_pipe_binop(b, BLK_OP_ADD, f->loc, ks, blk_lower_i32(b, f->loc, s * P->step));
		BlkValue *more = blk_pipe_binop(b, BLK_OP_LT, f->loc, ks, f->operands[1]);
		BlkValue *slot = blk_lower_i32(b, f->loc, s);
		for (int i = 0; i < P->n; i++)
			for (int o = 0; o < 2; o++) {
				BlkPtrMap vm = { 0 };
				P->s = &P->all[i];
				if (!P->s->x[o].load || blk_pipe_shared(&P->s->x[o]))
					continue;
				blk_loop_clone_slice(&P->L, b, &P->s->x[o].in, P->s->x[o].load, ks, &vm);
				blk_pipe_copy(P, b, more, &P->s->x[o], slot, &vm, 0, 1);
			}
		for (int i = 0; i < P->nraw; i++) {
			BlkPtrMap vm = { 0 };
			blk_loop_clone_slice(&P->L, b, &P->raw[i].in, P->raw[i].load, ks, &vm);
			blk_pipe_copy(P, b, more, &P->raw[i], slot, &vm, 0, 1);
		}
		commit(b, f->loc); /* one group a slab, for every dot's operands */
	}
}

/* v + 1, wrapped to 0 at S (at loc). */
static BlkValue *advance_at(Pipe *P, BlkBuilder *b, BlkLoc loc, BlkValue *v)
{
	BlkValue *n = blk_pipe_binop(b, BLK_OP_ADD, loc, v, blk_lower_i32(b, loc, 1));
	BlkValue *wrap = blk_pipe_binop(b, BLK_OP_EQ, loc, n, blk_lower_i32(b, loc, P->S));
	BlkValue *o[3] = { wrap, blk_lower_i32(b, loc, 0), n };
	return blk_build1(b, BLK_OP_SELECT, loc, blk_type_scalar(BLK_I32), 3, o);
}

BlkValue *blk_pipe_advance(Pipe *P, BlkBuilder *b, BlkValue *v)
{
	return advance_at(P, b, P->s->dot->loc, v);
}

/* Parts each operand's next copy is split into: the dot's k16 steps
 * between them, so the copies queue between the ldmatrix reads instead of
 * ahead of them all. */
static int parts_of(const Pipe *P)
{
	if (!blk_lower_dot_tc(P->s->dot)) {
		/* SIMT: K / 8 parts an operand, 2 to 8, which mma_steps.c spreads
		 * over the k steps.  Each part costs ptxas's padding (run 102:
		 * one a k step lost at BK 16, 2 won); at BK 32, 4 beat 2 by 1 %
		 * (NN) and 6 % (x @ w.T: 48 copies a thread a slab), run 118.
		 * A dot emit_dot.c runs as a loop is not split: its copies go
		 * before it in one block, so 2. */
		int64_t K = blk_lower_dim(P->s->dot->operands[0]->type.dims[1]);
		if (K < 16 || !blk_lower_simt_unrolled(K, simt_nacc(P->L.c, P->s->dot)))
			return 2;
		return K / 8 > 8 ? 8 : (int)(K / 8);
	}
	const BlkType *a = &P->s->dot->operands[0]->type;
	int64_t K = blk_lower_dim(a->dims[1]);
	int p = (int)(K / blk_layout_tc_k(blk_dtype_size(a->dtype)) / 2); /* k16 steps of mma too */
	return p < 1 ? 1 : p > 8 ? 8 : p;
}

/* Before the first dot: wait until slab k has landed (one group holds
 * every dot's operands), one barrier (for every thread; slot wr is free),
 * the next slab's iv kn and whether there is one. */
/* The body's first raw load (P->raw), or NULL. */
static BlkOp *first_raw(const Pipe *P)
{
	for (BlkOp *op = P->L.body->first; op; op = op->next)
		for (int i = 0; i < P->nraw; i++)
			if (P->raw[i].load == op)
				return op;
	return NULL;
}

static void steady_head(Pipe *P, BlkValue **kn, BlkValue **more)
{
	LowerCtx *c = P->L.c;
	BlkOp *dot = P->all[0].dot, *at = first_raw(P); /* before the first raw read */
	if (!at)
		at = dot;
	BlkBuilder b;
	blk_builder_before(&b, c->a, at);
	BlkOp *w = blk_build(&b, BLK_OP_ASYNC_WAIT, dot->loc, 0, NULL, 0, NULL, 0);
	blk_op_set_int(c->a, w, "pending", P->D - 1);
	if (blk_lower_dot_wgmma(dot)) /* the slab, written by this thread, to wgmma's proxy */
		blk_build(&b, BLK_OP_FENCE_ASYNC, dot->loc, 0, NULL, 0, NULL, 0);
	blk_build(&b, BLK_OP_BARRIER, dot->loc, 0, NULL, 0, NULL, 0);
	*kn = blk_pipe_binop(&b, BLK_OP_ADD, dot->loc, P->L.body->args[0],
	            blk_lower_i32(&b, dot->loc, P->D * P->step));
	*more = blk_pipe_binop(&b, BLK_OP_LT, dot->loc, *kn, P->L.loop->operands[1]);
}

/* The current dot on its slots, the next copies in its region (the last
 * dot's region commits them all). */
static void steady(Pipe *P, BlkValue *rd, BlkValue *wr, BlkValue *kn, BlkValue *more, bool last)
{
	LowerCtx *c = P->L.c;
	BlkOp *dot = P->s->dot;
	BlkBuilder b;
	blk_builder_before(&b, c->a, dot);
	BlkPtrMap vm[2] = { { 0 }, { 0 } };
	for (int o = 0; o < 2; o++) {
		if (P->s->x[o].regs || P->s->x[o].computed)
			continue;
		if (P->s->x[o].load && !blk_pipe_shared(&P->s->x[o]))
			blk_loop_clone_slice(&P->L, &b, &P->s->x[o].in, P->s->x[o].load, kn, &vm[o]);
		dot->operands[o] = blk_pipe_operand_view(P, &b, &P->s->x[o], blk_pipe_slot_view(P, &b, &P->s->x[o], rd));
	}
	BlkRegion *r = blk_region_create(c->a);
	r->parent = dot;
	dot->regions = BLK_NEW_N(c->a, BlkRegion *, 1);
	dot->regions[0] = r;
	dot->nregions = 1;
	BlkBuilder in;
	blk_builder_at_end(&in, c->a, r);
	int parts = parts_of(P);
	if (!blk_lower_dot_tc(dot)) /* the slots lie as the dot reads them (simt_orient) */
		blk_op_remove_attr(dot, "b_trans");
	for (int o = 0; o < 2; o++)
		for (int p = 0; p < parts && P->s->x[o].load && !blk_pipe_shared(&P->s->x[o]); p++)
			blk_pipe_copy(P, &in, more, &P->s->x[o], wr, &vm[o], p, parts);
	for (int i = 0; last && i < P->nraw; i++) {
		BlkPtrMap rm = { 0 };
		BlkBuilder pre;
		blk_builder_before(&pre, c->a, dot);
		blk_loop_clone_slice(&P->L, &pre, &P->raw[i].in, P->raw[i].load, kn, &rm);
		blk_pipe_copy(P, &in, more, &P->raw[i], wr, &rm, 0, 1);
	}
	if (last)
		commit(&in, dot->loc);
}

static bool in_loop(const BlkOp *op)
{
	for (const BlkRegion *r = op->parent; r && r->parent; r = r->parent->parent)
		if (r->parent->kind == BLK_OP_FOR)
			return true;
	return false;
}

/* ---- raw slabs: what a computed operand is made from ---------------------- */

enum { RAW_SMEM = 48 * 1024 }; /* the raw slots' most, all stages: room for the dot's own */

/* Load ld (in the body, under a computed operand) can be copied ahead
 * into slots: a 2-D slab of a read-only array (not gathered, strided or
 * scalar-indexed), zero-filled where masked (as cp.async fills), indices
 * from the iv and invariants, rows of whole 4-byte pieces. */
static bool raw_slab(Pipe *P, Operand *x, BlkOp *ld)
{
	const BlkType *t = &ld->results[0]->type;
	const BlkAttr *idx = blk_op_attr(ld, "idx");
	if (ld->kind != BLK_OP_LOAD || t->rank != 2 || blk_op_gathers(ld) || blk_op_strided(ld) || !zero_fill(ld) ||
	    !blk_loop_read_only(P->L.c, ld->operands[0]) || ld->operands[0]->type.rank != 2 ||
	    (blk_lower_dim(t->dims[1]) * blk_dtype_size(t->dtype)) % 4)
		return false;
	for (int d = 0; idx && d < idx->index.n; d++)
		if (idx->index.v[d].kind != BLK_INDEX_FULL && idx->index.v[d].kind != BLK_INDEX_DS)
			return false;
	memset(x, 0, sizeof *x);
	for (int i = 0; i < ld->noperands; i++)
		if (!blk_loop_slice(&P->L, &x->in, ld->operands[i]))
			return false;
	x->load = ld;
	x->R = blk_lower_dim(t->dims[0]);
	x->C = blk_lower_dim(t->dims[1]);
	return true;
}

/* The loads under v (a computed operand) in the body, into P->raw. */
static void find_raw(Pipe *P, const BlkValue *v, int depth, int64_t *bytes)
{
	BlkOp *d = v->def;
	if (!d || d->parent != P->L.body || depth > 64 || P->nraw == MAX_RAW)
		return;
	if (d->kind == BLK_OP_LOAD) {
		for (int i = 0; i < P->nraw; i++)
			if (P->raw[i].load == d)
				return;
		Operand *x = &P->raw[P->nraw];
		int64_t b = raw_slab(P, x, d) ? (int64_t)P->S * x->R * x->C * blk_dtype_size(d->results[0]->type.dtype) : 0;
		if (b && *bytes + b <= RAW_SMEM) {
			*bytes += b;
			P->nraw++;
		}
		return;
	}
	for (int i = 0; i < d->noperands; i++)
		find_raw(P, d->operands[i], depth + 1, bytes);
}

static void raw_slabs(Pipe *P)
{
	int64_t bytes = 0;
	P->nraw = 0;
	for (int i = 0; i < P->n; i++)
		if (P->all[i].x[1].computed)
			find_raw(P, P->all[i].dot->operands[1], 0, &bytes);
}

/* stage_r = local_alloc [S, R, C], rows as they lie. */
static void raw_buffer(Pipe *P, BlkBuilder *b, Operand *x)
{
	LowerCtx *c = P->L.c;
	int64_t shape64[3] = { P->S, x->R, x->C };
	int shape[3] = { P->S, (int)x->R, (int)x->C };
	BlkLayout *l = BLK_NEW(c->a, BlkLayout);
	*l = blk_layout_shared(3, shape, 0);
	BlkType t = shared_type(c, x->load->results[0]->type.dtype, 3, shape64, l);
	x->buf = blk_build(b, BLK_OP_LOCAL_ALLOC, x->load->loc, 0, NULL, 1, &t, 0)->results[0];
	x->buf->name = "stage_r";
}

/* Each raw load becomes a load of its slot rd (after the steady head's
 * wait and barrier, which precede the first of them). */
static void raw_reads(Pipe *P, BlkValue *rd)
{
	LowerCtx *c = P->L.c;
	for (int i = 0; i < P->nraw; i++) {
		Operand *x = &P->raw[i];
		BlkBuilder b;
		blk_builder_before(&b, c->a, x->load);
		BlkValue *view = blk_lower_slot_view(c, &b, x->load->loc, x->buf, rd);
		BlkValue *v = blk_build1(&b, BLK_OP_LOAD, x->load->loc, x->load->results[0]->type, 1, &view);
		BlkIndex idx[2] = { { BLK_INDEX_FULL, NULL, 0 }, { BLK_INDEX_FULL, NULL, 0 } };
		blk_op_set_index(c->a, v->def, "idx", 2, idx);
		blk_op_set_int(c->a, v->def, "staged", 1); /* ordered by the head's wait and barrier (tile.c) */
		v->name = x->load->results[0]->name;
		blk_replace_uses(P->L.body, x->load->results[0], v);
		blk_op_erase(x->load);
		blk_loop_erase_dead(&P->L, &x->in);
	}
}

/* B computed as w.T (w [N, K] unpacked in a linear layer's layout): the
 * dot takes w with attr b_trans, and dot_stage.c stores it as it is into
 * a [N][K] slot the dot reads through a trans_view, as the pipelined
 * `x @ w.T` reads its slabs -- not transposed through shared memory
 * first. */
static void computed_nt(Pipe *P, BlkOp *dot)
{
	BlkValue *b = dot->operands[1];
	BlkOp *t = b->def;
	if (!blk_lower_dot_tc(dot) || blk_dtype_size(b->type.dtype) != 2 || !t || !blk_transpose_plain(t) ||
	    t->parent != P->L.body || blk_lower_uses(P->L.body, b) != 1 ||
	    !blk_lower_transformed_load(t->operands[0], P->L.body))
		return;
	dot->operands[1] = t->operands[0];
	blk_op_set_int(P->L.c->a, dot, "b_trans", 1);
	blk_op_erase(t);
}

/* Before the loop (at pre): the raw slots, a barrier where the loop runs
 * inside another (the last run's reads of the slots come first), the first
 * D slabs' copies; the slot counters rd = 0 and wr = D as carries of the
 * loop, advanced before its yield. */
static void slots_ahead(Pipe *P, BlkBuilder *pre, BlkValue **rd, BlkValue **wr)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	for (int i = 0; i < P->nraw; i++)
		raw_buffer(P, pre, &P->raw[i]);
	if (in_loop(f))
		blk_build(pre, BLK_OP_BARRIER, f->loc, 0, NULL, 0, NULL, 0);
	prologue(P, pre);
	BlkBuilder end;
	blk_builder_before(&end, c->a, P->L.body->last);
	BlkValue *rd0 = blk_lower_i32(pre, f->loc, 0), *wr0 = blk_lower_i32(pre, f->loc, P->D);
	*rd = blk_loop_add_carry(&P->L, rd0, rd0), *wr = blk_loop_add_carry(&P->L, wr0, wr0);
	(*rd)->name = "rd", (*wr)->name = "wr";
	BlkOp *y = P->L.body->last;
	y->operands[y->noperands - 2] = advance_at(P, &end, f->loc, *rd);
	y->operands[y->noperands - 1] = advance_at(P, &end, f->loc, *wr);
}

static void pipeline(Pipe *P)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	/* wgmma dots over 3 slots or more leave their group running into the
	 * next iteration (wait_pending = 1, mma_steps.c); the copies then run
	 * one slab less ahead, so they never overwrite a slot that group reads */
	bool wg = P->S >= 3;
	/* (not past a computed operand: dot_stage.c's two slots for it would
	 * let one warpgroup overwrite the slot the other's group still reads) */
	for (int i = 0; i < P->n; i++)
		wg = wg && blk_pipe_in_flight(P, P->all[i].dot) && !P->all[i].x[1].computed;
	P->D = P->S - 1 - wg;
	for (int i = 0; i < P->n && wg; i++)
		blk_op_set_int(c->a, P->all[i].dot, "wait_pending", 1);
	BlkBuilder pre;
	blk_builder_before(&pre, c->a, f);
	for (int i = 0; i < P->n; i++) {
		P->s = &P->all[i]; /* the dot whose slots these are */
		for (int o = 0; o < 2; o++)
			if (!P->all[i].x[o].regs && !P->all[i].x[o].computed) /* (a computed B: dot_stage.c's) */
				blk_pipe_make_buffer(P, &pre, &P->all[i].x[o], o ? "stage_b" : "stage_a");
	}
	blk_pipe_share_buffers(P);
	for (int i = 0; i < P->n; i++)
		computed_nt(P, P->all[i].dot);
	raw_slabs(P);
	BlkValue *rd, *wr;
	slots_ahead(P, &pre, &rd, &wr);
	P->s = &P->all[0];
	BlkValue *kn, *more;
	steady_head(P, &kn, &more);
	for (int i = 0; i < P->n; i++) {
		P->s = &P->all[i];
		steady(P, rd, wr, kn, more, i == P->n - 1);
	}
	raw_reads(P, rd);
	blk_pipe_erase_loads(P);
}

void blk_pipe_erase_loads(Pipe *P)
{
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++) {
			Operand *x = &P->all[i].x[o];
			if (x->trans)
				blk_op_erase(x->trans);
		}
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++)
			if (P->all[i].x[o].load && !blk_pipe_shared(&P->all[i].x[o]))
				blk_op_erase(P->all[i].x[o].load);
	for (int i = 0; i < P->n; i++)
		for (int o = 0; o < 2; o++)
			blk_loop_erase_dead(&P->L, &P->all[i].x[o].in);
}

bool blk_pipe_in_flight(const Pipe *P, const BlkOp *dot)
{
	const BlkRegion *body = P->L.body;
	const BlkOp *y = body->last;
	if (!blk_lower_dot_wgmma(dot) || dot->noperands != 3 || dot->operands[2]->owner != body ||
	    blk_lower_uses(body, dot->results[0]) != 1)
		return false;
	int carry = -1; /* region arg 1 + i is carry i */
	for (int i = 1; i < body->nargs; i++)
		if (body->args[i] == dot->operands[2])
			carry = i - 1;
	return carry >= 0 && carry < y->noperands && y->operands[carry] == dot->results[0] &&
	       blk_lower_uses(body, dot->operands[2]) == 1;
}

bool blk_pipe_choose(Pipe *P)
{
	BlkOp *f = P->L.loop, *y = P->L.body->last;
	P->n = 0;
	if (!blk_lower_const_int(f->operands[2], &P->step) || P->step <= 0 || !y || y->kind != BLK_OP_YIELD)
		return false;
	for (BlkOp *op = P->L.body->first; op; op = op->next) {
		if (op->kind != BLK_OP_DOT || op->noperands < 2 || !(blk_lower_dot_tc(op) || simt_f32(op)) ||
		    op->operands[0]->type.kind != BLK_TYPE_TILE)
			continue;
		P->s = &P->all[P->n];
		memset(P->s, 0, sizeof *P->s);
		P->s->dot = op;
		if (stageable(P, 0) && stageable(P, 1) && (P->s->x[0].load || P->s->x[1].load) &&
		    P->s->x[0].load != P->s->x[1].load && P->n < MAX_DOTS)
			P->n++;
	}
	/* beside tensor-core dots, SIMT ones stay with dot_stage.c: the loop
	 * keeps the tensor cores' stages, slots, fence and warp specialization */
	bool tc = false;
	for (int i = 0; i < P->n; i++)
		tc = tc || blk_lower_dot_tc(P->all[i].dot);
	int n = 0;
	for (int i = 0; i < P->n; i++)
		if (!tc || blk_lower_dot_tc(P->all[i].dot))
			P->all[n++] = P->all[i];
	P->n = n;
	share_slabs(P);
	return P->n > 0;
}

/* A SIMT dot whose micro-tile keeps one program an SM (emit_dot.c asks
 * for two only up to SIMT_TWO_CTA_ACC accumulators a thread). */
static bool simt_one_cta(const LowerCtx *c, const BlkOp *dot)
{
	return c->nthreads > SIMT_TWO_CTA_THREADS || simt_nacc(c, dot) > SIMT_TWO_CTA_ACC;
}

/* A loop with SIMT dots keeps the stages whose slots fit SIMT_SMEM (2 at
 * least), or SIMT_SMEM_ONE where a dot keeps one program an SM anyway;
 * where not even 2 fit, dot_stage.c stages them instead. */
static bool simt_stages(Pipe *P)
{
	int64_t per = 0, budget = SIMT_SMEM;
	bool simt = false;
	for (int i = 0; i < P->n; i++) {
		if (simt_f32(P->all[i].dot) && simt_one_cta(P->L.c, P->all[i].dot))
			budget = SIMT_SMEM_ONE;
		simt = simt || simt_f32(P->all[i].dot);
		for (int o = 0; o < 2; o++) {
			int64_t d[2];
			slot_dims(&P->all[i].x[o], d);
			per += P->all[i].x[o].load ? d[0] * (blk_pow2ceil((int)d[1]) + 4) * 4 : 0;
		}
	}
	if (!simt)
		return true;
	int64_t fit = budget / per;
	if (fit < 2)
		return false;
	if (P->S > fit)
		P->S = (int)fit;
	return true;
}

/* ---- streams: a loop of loads and no dot ---------------------------------- */

/* A loop whose body reads slabs but multiplies nothing (a column sum over
 * row blocks, a norm over column chunks, an online softmax) streams them
 * through slots of their own, as a dot's operands are: cp.async copies S - 1
 * slabs ahead, one commit group a slab, and each iteration waits for its
 * slab, passes a barrier (the slot it then refills was read by every thread
 * in the iteration before), copies the slab S - 1 ahead and reads its own
 * from slot rd where the load was (attr `staged`).  A load issued in the
 * same iteration hides nothing; prefetch's one slab ahead in registers
 * holds only small slabs.
 *
 * How deep: bytes in flight that cover HBM's latency at the SM's share of
 * the bandwidth, STREAM_FLIGHT an SM, more where the grid has fewer
 * programs than SMs (each active SM must then fetch the idle ones' share:
 * a column sum of 32 programs on 132 SMs), divided among the programs an
 * SM holds; at most what shared memory holds for those programs, at least
 * num_stages.  The rest of the kernel's shared memory is not known yet:
 * where the total overflows (a cross-entropy's [BR, BV] f32 transit),
 * driver.c lowers the kernel again without streams.  The choice is attr `stages` on the loop, a stage's bytes
 * attr `stream_bytes` (cost.c counts (stages - 1) of them in flight). */
enum {
	STREAM_FLIGHT = 64 * 1024,     /* bytes in flight an SM */
	STREAM_SMEM = 160 * 1024,      /* the slots' most, all programs of an SM, and 2/3 of its shared memory */
	STREAM_MAX_STAGES = 16,
	STREAM_MIN_ROW_BYTES = 16,     /* a row of at least one cp.async piece */
};

/* The programs of the launch's grid; INT32_MAX where one extent is
 * dynamic. */
static int64_t launch_programs(LowerCtx *c)
{
	const BlkLaunch *l = blk_lower_launch(c);
	int64_t T = 1, v;
	for (int a = 0; a < 3; a++) {
		if (!l->grid[a])
			continue;
		if (!blk_sym_is_const(l->grid[a], &v))
			return INT32_MAX;
		T *= v;
	}
	return T;
}

static int stream_stages(Pipe *P, int64_t slab)
{
	LowerCtx *c = P->L.c;
	int64_t sms = blk_lower_sms(c), programs = launch_programs(c);
	int64_t per_sm = (programs + sms - 1) / sms, fit = 2048 / c->nthreads;
	per_sm = per_sm < fit ? per_sm : fit;
	per_sm = per_sm < 1 ? 1 : per_sm;
	int64_t active = programs < sms ? programs : sms;
	int64_t want = (int64_t)STREAM_FLIGHT * sms / (active > 0 ? active : 1);
	int64_t D = (want / per_sm + slab - 1) / slab, trips = 0;
	int64_t S = D + 1;
	if (S > STREAM_MAX_STAGES)
		S = STREAM_MAX_STAGES;
	int64_t lo, hi;
	if (blk_lower_const_int(P->L.loop->operands[0], &lo) && blk_lower_const_int(P->L.loop->operands[1], &hi))
		trips = (hi - lo + P->step - 1) / P->step;
	if (trips > 0 && trips < 2)
		return 0; /* one slab: nothing to overlap it with */
	if (trips > 0 && S > trips + 1)
		S = trips + 1;
	int64_t room = blk_lower_arch_smem(c->arch) * 2 / 3; /* a third for the rest (transit regions) */
	room = STREAM_SMEM < room ? STREAM_SMEM : room;
	while (S > 2 && S * slab * per_sm > room)
		S--;
	if (S < c->k->num_stages && c->k->num_stages * slab * per_sm <= room)
		S = c->k->num_stages;
	return S * slab <= room ? (int)S : 0;
}

/* r holds a dot, a loop or a warp_specialize: no innermost stream loop
 * (a persistent kernel's tile loop loads q beside its k loop). */
static bool nests(const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		if (op->kind == BLK_OP_DOT || op->kind == BLK_OP_FOR || op->kind == BLK_OP_WARP_SPECIALIZE)
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (nests(op->regions[i]))
				return true;
	}
	return false;
}

/* The slabs an innermost loop without dots reads: loads directly in its
 * body that raw_slab takes; false if none. */
static bool stream_slabs(Pipe *P, int64_t *slab)
{
	*slab = 0;
	P->nraw = 0;
	if (nests(P->L.body))
		return false;
	for (BlkOp *op = P->L.body->first; op; op = op->next) {
		Operand *x = &P->raw[P->nraw];
		if (op->kind != BLK_OP_LOAD || P->nraw == MAX_RAW || !raw_slab(P, x, op) ||
		    x->C * blk_dtype_size(op->results[0]->type.dtype) < STREAM_MIN_ROW_BYTES)
			continue;
		*slab += x->R * x->C * blk_dtype_size(op->results[0]->type.dtype);
		P->nraw++;
	}
	return P->nraw > 0;
}

static bool stream(Pipe *P)
{
	LowerCtx *c = P->L.c;
	BlkOp *f = P->L.loop;
	int64_t slab;
	if (c->no_stream || !blk_lower_const_int(f->operands[2], &P->step) || P->step <= 0 || !P->L.body->last ||
	    P->L.body->last->kind != BLK_OP_YIELD || !stream_slabs(P, &slab))
		return false;
	P->S = stream_stages(P, slab);
	if (P->S < 2)
		return false;
	P->D = P->S - 1;
	c->streamed = true;
	blk_op_set_int(c->a, f, "stages", P->S);
	blk_op_set_int(c->a, f, "stream_bytes", slab); /* a stage's: the cost model's bytes in flight */
	BlkBuilder pre;
	blk_builder_before(&pre, c->a, f);
	BlkValue *rd, *wr;
	slots_ahead(P, &pre, &rd, &wr);
	/* the head, before the first slab's read: wait, barrier, next copies */
	BlkBuilder b;
	blk_builder_before(&b, c->a, first_raw(P));
	BlkOp *w = blk_build(&b, BLK_OP_ASYNC_WAIT, f->loc, 0, NULL, 0, NULL, 0);
	blk_op_set_int(c->a, w, "pending", P->D - 1);
	blk_build(&b, BLK_OP_BARRIER, f->loc, 0, NULL, 0, NULL, 0);
	BlkValue *kn = blk_pipe_binop(&b, BLK_OP_ADD, f->loc, P->L.body->args[0], blk_lower_i32(&b, f->loc, P->D * P->step));
	BlkValue *more = blk_pipe_binop(&b, BLK_OP_LT, f->loc, kn, f->operands[1]);
	for (int i = 0; i < P->nraw; i++) {
		BlkPtrMap rm = { 0 };
		blk_loop_clone_slice(&P->L, &b, &P->raw[i].in, P->raw[i].load, kn, &rm);
		blk_pipe_copy(P, &b, more, &P->raw[i], wr, &rm, 0, 1);
	}
	commit(&b, f->loc);
	raw_reads(P, rd);
	return true;
}

static void pipeline_loop(void *ctx, BlkOp *f)
{
	LowerCtx *c = ctx;
	const BlkAttr *st = f->kind == BLK_OP_FOR ? blk_op_attr(f, "stages") : NULL;
	int stages = st && st->kind == BLK_ATTR_INT ? (int)st->i : c->k->num_stages; /* schedule.c's */
	if (f->kind != BLK_OP_FOR || stages < 2)
		return;
	Pipe P = { .L = { .c = c, .loop = f, .body = f->regions[0] }, .S = stages };
	if (blk_pipe_choose(&P)) {
		if (simt_stages(&P) && !blk_pipe_warp_specialize(&P))
			pipeline(&P);
	} else if (!P.n) {
		stream(&P);
	}
}

bool blk_lower_pipeline(LowerCtx *c)
{
	int errors = blk_diag_error_count(c->d);
	blk_lower_walk(c->k->body, pipeline_loop, c);
	return blk_diag_error_count(c->d) == errors; /* (a tensor map too many) */
}
