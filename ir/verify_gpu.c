/* verify_gpu.c - the verifier's rules for the GPU level (docs/ir.md).
 *
 * After lower/'s tile pass every tile of rank >= 1 carries a layout in its
 * type (ir/layout.h).  The rules here say what the emitters rely on, each
 * with a message that names the layouts involved:
 *   1. a kernel is at one level: all such tiles have layouts, or none;
 *   2. a layout is made for its tile's shape and the kernel's threads;
 *   3. elementwise ops see their operands in the result's layout (a
 *      convert_layout must come between otherwise), a reduction's result
 *      is its operand's layout sliced, expand_dims its operand's expanded,
 *      a dot's result and accumulator are in a dot<> or mma<> layout, the
 *      one its engine attr (lower/passes/dot_engine.c) names;
 *   4. the lowered ops: convert_layout changes only the layout,
 *      block_ref names a param and takes one i32 start per array dim,
 *      local_alloc gives a shared Ref of constant shape at a 16-byte
 *      aligned offset, barrier takes and gives nothing; at the GPU level a
 *      dot takes its accumulator, and tiles, shared operands, or
 *      mma_a/mma_b fragments (one k16 step or
 *      more of mma.sync: local_load makes them from shared memory,
 *      convert_layout from an accumulator over one warp column,
 *      extract_slice cuts whole k16 steps; nothing else reads them), or
 *      one k step of an fma dot as fma_a/fma_b tiles (local_load makes
 *      them from a slot contiguous along M or N; only that dot reads them).
 * Scalars (rank 0) are held by every thread and carry no layout.
 */
#include "layout.h"
#include "verify_int.h"

#include <string.h>

#define fail blk_verify_fail
#define ty blk_verify_ty

static int kernel_threads(const Verifier *V)
{
	return 32 * (V->k->num_warps > 0 ? V->k->num_warps : 4);
}

static const char *lstr(Verifier *V, const BlkLayout *l)
{
	return blk_layout_str(V->a, l);
}

static void check_made_for(Verifier *V, const BlkType *t)
{
	const BlkLayout *l = t->layout;
	if (l->rank != t->rank) {
		fail(V, "layout %s has rank %d, its tile %s rank %d", lstr(V, l), l->rank, ty(V, t), t->rank);
		return;
	}
	for (int d = 0; d < t->rank; d++) {
		int64_t n;
		if (!blk_sym_is_const(t->dims[d], &n) || n != l->shape[d]) {
			fail(V, "layout %s was made for dim %d of extent %d, not the extent of %s", lstr(V, l),
			     d, l->shape[d], ty(V, t));
			return;
		}
	}
	if (l->nthreads != kernel_threads(V))
		fail(V, "layout %s spreads over %d threads, the kernel has %d", lstr(V, l), l->nthreads,
		     kernel_threads(V));
}

/* A Ref's layout, where it has one, is the shared<> layout of a shared Ref. */
static void check_ref_layout(Verifier *V, const BlkType *t)
{
	if (!t->layout)
		return;
	if (t->space != BLK_SPACE_SHARED || !t->layout->shared)
		fail(V, "%s: only a shared Ref has a layout, and it is a shared<> one", ty(V, t));
	else if (t->layout->rank != t->rank)
		fail(V, "%s: its layout has %d strides for %d dims", ty(V, t), t->layout->rank, t->rank);
}

void blk_verify_level(Verifier *V, const BlkValue *v)
{
	const BlkType *t = &v->type;
	if (t->kind == BLK_TYPE_REF)
		check_ref_layout(V, t);
	if (t->kind != BLK_TYPE_TILE || t->rank == 0)
		return;
	if (t->layout && t->layout->shared) {
		fail(V, "%s: a tile's layout says how threads hold it; shared<> is for shared Refs", ty(V, t));
		return;
	}
	int level = t->layout ? 2 : 1;
	if (!V->level)
		V->level = level;
	if (level != V->level) {
		fail(V, level == 2 ? "%s has a layout, but other tiles of this kernel have none"
		                   : "%s has no layout, but this kernel is at the GPU level, where every "
		                     "tile has one",
		     ty(V, t));
		return;
	}
	if (t->layout)
		check_made_for(V, t);
}

static const BlkLayout *layout(const BlkOp *op, int i)
{
	return op->operands[i]->type.layout;
}

static void same_as_result(Verifier *V, const BlkOp *op, int i, const char *why)
{
	const BlkLayout *r = op->results[0]->type.layout, *l = layout(op, i);
	if (l && op->operands[i]->type.rank == op->results[0]->type.rank && !blk_layout_equal(l, r))
		fail(V, "operand %d is in %s but the result in %s (%s)", i, lstr(V, l), lstr(V, r), why);
}

static void expect_layout(Verifier *V, const BlkOp *op, const BlkLayout *want, const char *what)
{
	const BlkLayout *got = op->results[0]->type.layout;
	if (!blk_layout_equal(got, want))
		fail(V, "result is in %s, expected %s (%s)", lstr(V, got), lstr(V, want), what);
}

static void check_convert(Verifier *V, const BlkOp *op)
{
	BlkType a = op->operands[0]->type, r = op->results[0]->type;
	bool moved = a.layout && r.layout && blk_layout_equal(a.layout, r.layout);
	a.layout = r.layout = NULL;
	if (!blk_type_equal(&a, &r))
		fail(V, "result %s is not the operand's tile %s in another layout",
		     ty(V, &op->results[0]->type), ty(V, &op->operands[0]->type));
	else if (moved)
		fail(V, "converts to %s, the layout its operand already has", lstr(V, r.layout ? r.layout : layout(op, 0)));
}

static void check_block_ref(Verifier *V, const BlkOp *op)
{
	const BlkAttr *p = blk_op_attr(op, "param");
	if (!p || p->kind != BLK_ATTR_INT || p->i < 0 || p->i >= V->k->nparams) {
		fail(V, "attr param must name one of the kernel's %d params", V->k->nparams);
		return;
	}
	const BlkParam *pa = &V->k->params[p->i];
	if (op->noperands != pa->rank || op->nresults != 1 ||
	    op->results[0]->type.kind != BLK_TYPE_REF) {
		fail(V, "takes one i32 block start per dim of %s (%d) and gives its Ref", pa->name, pa->rank);
		return;
	}
	for (int i = 0; i < op->noperands; i++)
		if (!blk_type_is_scalar(&op->operands[i]->type) || op->operands[i]->type.dtype != BLK_I32)
			fail(V, "operand %d has type %s, expected i32", i, ty(V, &op->operands[i]->type));
}

static void check_local_alloc(Verifier *V, const BlkOp *op)
{
	if (op->noperands || op->nresults != 1 || op->nregions) {
		fail(V, "takes no operands and gives one shared Ref");
		return;
	}
	const BlkType *t = &op->results[0]->type;
	int64_t n;
	bool fixed = t->kind == BLK_TYPE_REF && t->space == BLK_SPACE_SHARED;
	for (int d = 0; fixed && d < t->rank; d++)
		fixed = blk_sym_is_const(t->dims[d], &n) && n > 0;
	if (!fixed)
		fail(V, "result %s is not a shared Ref of constant shape", ty(V, t));
	const BlkAttr *off = blk_op_attr(op, "offset");
	if (off && (off->kind != BLK_ATTR_INT || off->i < 0 || off->i % 16))
		fail(V, "attr offset must be a byte offset that is a multiple of 16");
}

static bool shared_ref(const BlkValue *v)
{
	return v->type.kind == BLK_TYPE_REF && v->type.space == BLK_SPACE_SHARED;
}

/* A reshape at the GPU level: a merge of the last two dims whose layout
 * renumbers the operand's registers (blk_layout_merge_last). */
static bool reshape_in_registers(const BlkOp *op)
{
	const BlkLayout *x = op->kind == BLK_OP_RESHAPE ? op->operands[0]->type.layout : NULL;
	BlkLayout m;
	return x && blk_layout_merge_last(x, &m) && blk_layout_equal(&m, op->results[0]->type.layout);
}

/* join: operands in one plain layout, the result that layout joined. */
static void check_join_layout(Verifier *V, const BlkOp *op)
{
	const BlkLayout *l = op->operands[0]->type.layout, *r = op->results[0]->type.layout;
	for (int i = 0; i < op->noperands; i++)
		if (!op->operands[i]->type.layout || !blk_layout_equal(op->operands[i]->type.layout, l)) {
			fail(V, "operand %d is not in operand 0's layout", i);
			return;
		}
	BlkLayout want = blk_layout_join(l, op->noperands);
	if (!l || !blk_layout_plain(l) || !blk_layout_equal(&want, r))
		fail(V, "result is in %s; a join of %s operands is in their layout with a last dim held by each thread",
		     lstr(V, r), l ? lstr(V, l) : "unlaid");
}

/* A dot on operands the pipeliner put in shared memory: b a shared Ref
 * with a layout, a one too or a tile (at the GPU level: in the mma layout
 * of its own shape over one warp column, so its registers are the A
 * fragments), the accumulator, and at most one region (ops issued while it
 * runs). */
static void check_dot_shared(Verifier *V, const BlkOp *op)
{
	bool gpu = op->results[0]->type.layout != NULL; /* tile.c made the accumulator explicit */
	/* B a tile beside A's slot: computed each iteration, dot_stage.c stores it */
	bool b_tile = shared_ref(op->operands[0]) && op->operands[1]->type.kind == BLK_TYPE_TILE;
	if (op->noperands != 3 - (!gpu && op->noperands == 2) || (!shared_ref(op->operands[1]) && !b_tile)) {
		fail(V, "a dot on shared operands takes a, b (shared Refs, or A's and a tile B) and its accumulator");
		return;
	}
	for (int i = 0; i < 2; i++)
		if ((shared_ref(op->operands[i]) && !op->operands[i]->type.layout) || op->operands[i]->type.rank != 2)
			fail(V, "operand %d is a shared Ref of rank 2 with a shared<> layout, not %s", i,
			     ty(V, &op->operands[i]->type));
	const BlkLayout *a = op->operands[0]->type.layout, *r = op->results[0]->type.layout;
	if (gpu && !shared_ref(op->operands[0]) &&
	    (!a || !a->mma || a->thr[1] != 4 || !r->mma || r->thr[1] != 4 || a->thr[0] != r->thr[0]))
		fail(V, "operand 0 from registers must be in mma<warps=[w,1]>, as the result, not %s",
		     ty(V, &op->operands[0]->type));
	if (op->nregions > 1)
		fail(V, "has %d regions, expected at most one", op->nregions);
}

static bool frag_of(const BlkValue *v, int frag)
{
	return v->type.kind == BLK_TYPE_TILE && v->type.layout && v->type.layout->frag == frag;
}

/* A dot on mma.sync fragments: a in mma_a, b in mma_b, both over the
 * result's warp grid, and the accumulator. */
static void check_dot_frags(Verifier *V, const BlkOp *op)
{
	if (op->noperands != 3 || op->nregions || !frag_of(op->operands[0], BLK_FRAG_A) ||
	    !frag_of(op->operands[1], BLK_FRAG_B)) {
		fail(V, "a dot on fragments takes a in mma_a<>, b in mma_b<> and its accumulator");
		return;
	}
	const BlkLayout *r = op->results[0]->type.layout;
	for (int i = 0; i < 2; i++)
		if (!r->mma || layout(op, i)->thr[0] != r->thr[0] || layout(op, i)->thr[1] != r->thr[1])
			fail(V, "operand %d is in %s, not over the warps of the result's %s", i,
			     lstr(V, layout(op, i)), lstr(V, r));
}

/* A tensor-core dot's shape is whole mma.sync tiles: K a multiple of 16
 * (32 for 8-bit operands), M and N whole operand fragments over its warps. */
static void check_mma_shape(Verifier *V, const BlkOp *op)
{
	const BlkType *a = &op->operands[0]->type;
	const BlkLayout *r = op->results[0]->type.layout;
	int64_t K;
	if (a->rank != 2 || !blk_sym_is_const(a->dims[1], &K))
		return; /* the tile-level rules name it */
	int shape[2] = { r->shape[0], (int)K }, wn = blk_layout_warps_n(r), es = blk_dtype_size(a->dtype);
	if (K <= 0 || !blk_layout_mma_operand_fits(BLK_FRAG_A, shape, r->nthreads, wn, es) ||
	    !blk_layout_mma_operand_fits(BLK_FRAG_B, (int[2]){ (int)K, r->shape[1] }, r->nthreads, wn, es))
		fail(V, "a tensor-core dot of [%d, %lld] x [%lld, %d] over %s: K must be a multiple of %d "
		     "and M, N whole m16 / n16 tiles of its warps",
		     r->shape[0], (long long)K, (long long)K, r->shape[1], lstr(V, r), es == 1 ? 32 : 16);
}

static bool is16(BlkDType dt)
{
	return dt == BLK_F16 || dt == BLK_BF16;
}

/* A wgmma operand: a rank-2 shared Ref of f16/bf16 (or i8/u8/fp8),
 * swizzled, one dim contiguous and the other's rows one swizzle span
 * apart (what a matrix descriptor can say, emit_wgmma.c); an 8-bit one
 * contiguous along k (dim kdim): wgmma transposes only 16-bit types. */
static bool wgmma_operand(const BlkValue *v, int kdim)
{
	const BlkLayout *l = v->type.layout;
	bool b8 = blk_dtype_is_byte(v->type.dtype) || blk_dtype_is_fp8(v->type.dtype);
	if (!shared_ref(v) || !l || v->type.rank != 2 || !l->swz || !(is16(v->type.dtype) || b8))
		return false;
	int c = l->sstride[1] == 1 ? 1 : l->sstride[0] == 1 ? 0 : -1;
	if (b8 && c != kdim)
		return false;
	return c >= 0 && l->sstride[1 - c] == l->swz / blk_dtype_size(v->type.dtype);
}

/* A wgmma dot: a and b swizzled shared Refs (a k16 step or more; k32 of
 * 8-bit types), the accumulator; M whole m64 blocks of its warpgroups, N
 * a power of two from 16 to 256. */
static void check_wgmma(Verifier *V, const BlkOp *op)
{
	const BlkLayout *r = op->results[0]->type.layout;
	const BlkValue *a = op->noperands == 3 ? op->operands[0] : NULL;
	bool a_regs = a && a->type.kind == BLK_TYPE_TILE && a->type.layout && a->type.layout->wg &&
	              is16(a->type.dtype) && a->type.layout->shape[0] == r->shape[0];
	if (op->noperands != 3 || !(a_regs || wgmma_operand(a, 1)) || !wgmma_operand(op->operands[1], 0)) {
		fail(V, "a wgmma dot takes a and b as swizzled f16/bf16 (or 8-bit, contiguous along k) shared "
		     "Refs (shared<..., swizzle=..>, rows one swizzle span apart; a may be an f16/bf16 tile of "
		     "its rows in wgmma<>) and its accumulator");
		return;
	}
	/* the operands' dtypes and the result's: verify.c's rules for every dot */
	int64_t K, ks = blk_layout_tc_k(blk_dtype_size(a->type.dtype));
	if (!blk_sym_is_const(op->operands[0]->type.dims[1], &K) || K <= 0 || K % ks ||
	    !blk_layout_wgmma_fits(r->shape[0], r->shape[1], r->nthreads))
		fail(V, "a wgmma dot of [%d, %lld] x [%lld, %d] over %d warps: K must be a multiple of %lld, "
		     "M whole m64 blocks of each warpgroup, N a power of two from 16 to 256",
		     r->shape[0], (long long)K, (long long)K, r->shape[1], r->nthreads / 32, (long long)ks);
	if (op->nregions > 1)
		fail(V, "has %d regions, expected at most one", op->nregions);
}

/* A GPU-level dot: a, b (tiles until dot_stage.c stores them, or shared
 * Refs, or fragments), the accumulator. */
/* An fma dot on step operands: A [M, 1] in fma_a<>, B [1, N] in fma_b<>,
 * both the result's layout with k collapsed. */
static void check_dot_fma_steps(Verifier *V, const BlkOp *op)
{
	const BlkLayout *r = op->results[0]->type.layout; /* a dot<> (check_layouts, the dtypes: rule 3) */
	for (int i = 0; i < 2; i++) {
		BlkLayout want = blk_layout_fma_operand(r, i ? BLK_FRAG_B : BLK_FRAG_A);
		if (!layout(op, i) || !blk_layout_equal(layout(op, i), &want)) {
			fail(V, "operand %d is in %s; this dot's %s step is in %s", i,
			     layout(op, i) ? lstr(V, layout(op, i)) : "no layout", i ? "B" : "A", lstr(V, &want));
			return;
		}
	}
	if (op->nregions)
		fail(V, "a dot on tiles has no region");
}

static void check_dot_operands(Verifier *V, const BlkOp *op)
{
	if (op->results[0]->type.layout->wg && shared_ref(op->operands[1])) {
		check_wgmma(V, op);
		return;
	}
	if (layout(op, 0) && layout(op, 0)->frag) {
		check_dot_frags(V, op);
		return;
	}
	if ((layout(op, 0) && layout(op, 0)->sfrag) || (layout(op, 1) && layout(op, 1)->sfrag)) {
		check_dot_fma_steps(V, op);
		return;
	}
	if (shared_ref(op->operands[0]) || shared_ref(op->operands[1])) {
		check_dot_shared(V, op);
		return;
	}
	if (op->nregions) {
		fail(V, "a dot on tiles has no region");
		return;
	}
	if (op->noperands != 3)
		fail(V, "has %d operands; at the GPU level a dot takes a, b and its accumulator", op->noperands);
}

static void check_trans_view(Verifier *V, const BlkOp *op)
{
	const BlkType *a = &op->operands[0]->type, *r = &op->results[0]->type;
	if (!shared_ref(op->operands[0]) || a->rank != 2 || r->kind != BLK_TYPE_REF ||
	    r->space != BLK_SPACE_SHARED || r->rank != 2 || !blk_sym_equal(a->dims[0], r->dims[1]) ||
	    !blk_sym_equal(a->dims[1], r->dims[0]) || a->dtype != r->dtype) {
		fail(V, "result %s is not operand %s with its dims swapped", ty(V, r), ty(V, a));
		return;
	}
	if (a->layout && r->layout) {
		BlkLayout want = blk_layout_shared_swap(a->layout, 0, 1);
		if (!blk_layout_equal(&want, r->layout))
			fail(V, "result is in %s, expected %s (the operand's strides swapped)",
			     lstr(V, r->layout), lstr(V, &want));
	}
}

/* Only a whole buffer without padded rows is contiguous. */
static void check_reshape_view(Verifier *V, const BlkOp *op)
{
	const BlkType *a = &op->operands[0]->type, *r = &op->results[0]->type;
	int64_t n = 1, m = 1, e;
	bool ok = shared_ref(op->operands[0]) && r->kind == BLK_TYPE_REF && r->space == BLK_SPACE_SHARED &&
	          a->dtype == r->dtype && !a->layout && op->operands[0]->def &&
	          op->operands[0]->def->kind == BLK_OP_LOCAL_ALLOC;
	for (int d = 0; ok && d < a->rank; d++)
		ok = blk_sym_is_const(a->dims[d], &e) && (n *= e) > 0;
	for (int d = 0; ok && d < r->rank; d++)
		ok = blk_sym_is_const(r->dims[d], &e) && (m *= e) > 0;
	if (!ok || n != m)
		fail(V, "result %s is not operand %s reshaped: a local_alloc's whole buffer, unpadded, "
		     "the same dtype and element count", ty(V, r), ty(V, a));
}

/* Of a copy's source indices (attr idx): the dims they keep and the index
 * operands they take. */
/* The copied block's rank and the index operands idx takes; *gather: the
 * first gathered dim's index tile (it holds the whole block's shape, as
 * a gathering load's do), or NULL. */
static void copy_indices(const BlkOp *op, const BlkType *src, int first, int *rank, int *nidx,
                         const BlkValue **gather)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	*rank = *nidx = 0;
	*gather = NULL;
	for (int d = 0; d < src->rank; d++) {
		BlkIndexKind k = idx && d < idx->index.n ? idx->index.v[d].kind : BLK_INDEX_FULL;
		if (k == BLK_INDEX_GATHER && !*gather && first + *nidx < op->noperands)
			*gather = op->operands[first + *nidx];
		*nidx += k != BLK_INDEX_FULL;
		*rank += k == BLK_INDEX_FULL || k == BLK_INDEX_DS;
	}
	if (*gather)
		*rank = (*gather)->type.rank;
}

/* A gathered copy's index tiles: i32 tiles of the block's shape. */
static void check_copy_gathers(Verifier *V, const BlkOp *op, const BlkType *dst)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	int next = 2;
	for (int d = 0; d < idx->index.n; d++) {
		BlkIndexKind k = idx->index.v[d].kind;
		const BlkType *g = &op->operands[next]->type;
		bool ok = k != BLK_INDEX_GATHER ||
		          (g->kind == BLK_TYPE_TILE && g->dtype == BLK_I32 && g->rank == dst->rank);
		for (int j = 0; ok && k == BLK_INDEX_GATHER && j < g->rank; j++)
			ok = blk_sym_equal(g->dims[j], dst->dims[j]);
		if (!ok) {
			fail(V, "a gathered dim's indices have type %s; they must be an i32 tile of the block's "
			     "shape, %s", ty(V, g), ty(V, dst));
			return;
		}
		next += k != BLK_INDEX_FULL;
	}
}

static void check_async_copy(Verifier *V, const BlkOp *op)
{
	if (op->noperands < 2 || op->nresults || !shared_ref(op->operands[0]) ||
	    op->operands[1]->type.kind != BLK_TYPE_REF || op->operands[1]->type.space != BLK_SPACE_GLOBAL) {
		fail(V, "takes a shared Ref to copy into, a global Ref to copy from and its indices");
		return;
	}
	const BlkType *dst = &op->operands[0]->type, *src = &op->operands[1]->type;
	const BlkAttr *idx = blk_op_attr(op, "idx");
	int rank, nidx;
	const BlkValue *gather;
	if (idx && (idx->kind != BLK_ATTR_INDEX || idx->index.n != src->rank)) {
		fail(V, "attr idx must index each of the source's %d dims", src->rank);
		return;
	}
	copy_indices(op, src, 2, &rank, &nidx, &gather);
	if (op->noperands != 2 + nidx)
		fail(V, "has %d index operands, its idx takes %d", op->noperands - 2, nidx);
	else if (rank != dst->rank || dst->dtype != src->dtype)
		fail(V, "copies a rank-%d block of %s into %s", rank, ty(V, src), ty(V, dst));
	else if (gather)
		check_copy_gathers(V, op, dst);
	int64_t part = blk_op_int(op, "part", 0), parts = blk_op_int(op, "parts", 1);
	if (parts < 1 || part < 0 || part >= parts)
		fail(V, "part %lld of %lld: expected 0 <= part < parts", (long long)part, (long long)parts);
}

/* A view of a shared Ref keeps the strides of the dims it keeps. */
static void check_shared_view(Verifier *V, const BlkOp *op)
{
	const BlkLayout *a = op->operands[0]->type.layout, *r = op->results[0]->type.layout;
	const BlkAttr *idx = blk_op_attr(op, "idx");
	if (!a || !r || !idx || idx->kind != BLK_ATTR_INDEX)
		return;
	int k = 0;
	for (int d = 0; d < a->rank && d < idx->index.n; d++) {
		if (idx->index.v[d].kind == BLK_INDEX_SCALAR)
			continue;
		if (k >= r->rank || r->sstride[k] != a->sstride[d] || r->swz != a->swz || r->sblk != a->sblk) {
			fail(V, "result is in %s; a view keeps the strides of %s for the dims it keeps",
			     lstr(V, r), lstr(V, a));
			return;
		}
		k++;
	}
}

/* local_load: the fragments of a rank-2 shared Ref; A is read along k
 * (its rows' stride 1), B either way (ldmatrix with or without .trans)
 * when 16-bit, along k when 8-bit (ldmatrix transposes only 16-bit
 * elements); rows 16 bytes apart. */
/* A SIMT dot's step operand: the thread's run of a row of A's k-major
 * slot (B's row) is contiguous, spt elements a vector load. */
static void check_local_load_fma(Verifier *V, const BlkOp *op)
{
	const BlkType *s = &op->operands[0]->type, *r = &op->results[0]->type;
	int d = r->layout->sfrag == BLK_FRAG_A ? 0 : 1;
	if ((s->dtype != BLK_F32 && s->dtype != BLK_I32) || r->dtype != s->dtype || r->rank != 2 ||
	    !blk_sym_equal(r->dims[0], s->dims[0]) || !blk_sym_equal(r->dims[1], s->dims[1]))
		fail(V, "result %s is not the f32 (or i32) tile of %s", ty(V, r), ty(V, s));
	else if (s->layout->sstride[d] != 1 || s->layout->swz)
		fail(V, "reads each thread's %d elements as one vector: %s is not contiguous along dim %d",
		     r->layout->spt[d], lstr(V, s->layout), d);
	else if (s->layout->sstride[1 - d] % r->layout->spt[d])
		fail(V, "reads each thread's %d elements as one aligned vector: the k stride of %s is not a "
		     "multiple of %d", r->layout->spt[d], lstr(V, s->layout), r->layout->spt[d]);
}

static void check_local_load(Verifier *V, const BlkOp *op)
{
	const BlkType *s = &op->operands[0]->type, *r = &op->results[0]->type;
	if (!shared_ref(op->operands[0]) || !s->layout || s->rank != 2 || r->kind != BLK_TYPE_TILE ||
	    !r->layout || (!r->layout->frag && !r->layout->sfrag)) {
		fail(V, "takes a rank-2 shared Ref with a shared<> layout and gives a tile in mma_a<>, mma_b<>, "
		     "fma_a<> or fma_b<>");
		return;
	}
	if (r->layout->sfrag) {
		check_local_load_fma(V, op);
		return;
	}
	BlkType plain = *r;
	plain.layout = NULL;
	bool b8 = blk_dtype_is_byte(s->dtype) || blk_dtype_is_fp8(s->dtype);
	const int *st = s->layout->sstride;
	int kdim = r->layout->frag == BLK_FRAG_A ? 1 : 0;
	if (!(is16(s->dtype) || b8) || plain.rank != 2 || plain.dtype != s->dtype ||
	    !blk_sym_equal(plain.dims[0], s->dims[0]) || !blk_sym_equal(plain.dims[1], s->dims[1]))
		fail(V, "result %s is not the f16/bf16 (or 8-bit) tile of %s", ty(V, r), ty(V, s));
	else if (st[kdim] != 1 && (b8 || st[1 - kdim] != 1)) /* (16-bit: .trans reads m- or n-contiguous rows) */
		fail(V, "ldmatrix reads rows of 16 contiguous bytes: %s has none along %s", lstr(V, s->layout),
		     b8 ? "k" : kdim == 1 ? "k or m" : "k or n");
	else if ((st[st[1] == 1 ? 0 : 1] * blk_dtype_size(s->dtype)) % 16)
		fail(V, "ldmatrix reads 16-byte rows: the row stride of %s is not a multiple of 16 bytes",
		     lstr(V, s->layout));
}

/* extract_slice: whole k steps (blk_layout_tc_k) of a fragment tile, so
 * its registers are a run of the operand's. */
static void check_extract_slice(Verifier *V, const BlkOp *op)
{
	const BlkType *a = &op->operands[0]->type, *r = &op->results[0]->type;
	const BlkLayout *la = a->layout, *lr = r->layout;
	if (la && la->wg) { /* columns of a wgmma accumulator: whole n16 pairs of its n8 blocks */
		int64_t axis = blk_op_int(op, "axis", -1), start = blk_op_int(op, "start", -1);
		if (!lr || !lr->wg || a->dtype != r->dtype || lr->shape[0] != la->shape[0] || axis != 1 ||
		    start < 0 || start % 16 || lr->shape[1] % 16 || start + lr->shape[1] > la->shape[1])
			fail(V, "a slice of %s is columns [16s, 16s + 16t) in the wgmma<> layout of its rows, "
			     "not %s", lstr(V, la), ty(V, r));
		return;
	}
	if (!la || !la->frag || !lr || lr->frag != la->frag || la->thr[0] != lr->thr[0] ||
	    la->thr[1] != lr->thr[1] || a->dtype != r->dtype) {
		fail(V, "takes a tile in mma_a<> or mma_b<> and gives a slice in the same kind over the same warps");
		return;
	}
	int kdim = la->frag == BLK_FRAG_A ? 1 : 0;
	int64_t axis = blk_op_int(op, "axis", -1), start = blk_op_int(op, "start", -1);
	int ks = la->kstep;
	if (axis != kdim || start < 0 || start % ks || lr->shape[kdim] % ks ||
	    start + lr->shape[kdim] > la->shape[kdim] || lr->shape[1 - kdim] != la->shape[1 - kdim])
		fail(V, "slices [%lld, +%d) of axis %lld: a fragment slice is whole k%d steps along k "
		     "(axis %d) inside extent %d", (long long)start, lr->shape[kdim], (long long)axis, ks,
		     kdim, la->shape[kdim]);
}

/* A fragment made from an accumulator: the same warps, one warp column,
 * so each warp's rows are its own (registers only). */
static void check_convert_frag(Verifier *V, const BlkOp *op)
{
	const BlkLayout *a = layout(op, 0), *r = op->results[0]->type.layout;
	if (r->frag != BLK_FRAG_A || !a || !a->mma || a->thr[1] != 4 || r->thr[0] != a->thr[0] ||
	    r->thr[1] != 4 || !is16(op->results[0]->type.dtype))
		fail(V, "converts %s to %s: only an f16/bf16 accumulator over one warp column becomes the "
		     "mma_a<> fragments of the same warps", lstr(V, a), lstr(V, r));
}

/* Rule 3, for ops whose result has a layout. */
static void check_layouts(Verifier *V, const BlkOp *op)
{
	const BlkLayout *r = op->results[0]->type.layout;
	BlkLayout want;
	if (blk_op_flags(op->kind) & BLK_OPF_ELEMENTWISE) {
		for (int i = 0; i < op->noperands; i++)
			same_as_result(V, op, i, "a convert_layout must come between");
	} else if (op->kind == BLK_OP_DOT) {
		const BlkAttr *e = blk_op_attr(op, "engine");
		bool mma = e && e->kind == BLK_ATTR_STRING && strcmp(e->s, "mma") == 0;
		bool wg = e && e->kind == BLK_ATTR_STRING && strcmp(e->s, "wgmma") == 0;
		if (!r->dot && !r->mma)
			fail(V, "result is in %s; a dot's result is in a dot<>, mma<> or wgmma<> layout", lstr(V, r));
		else if (e && (r->mma != mma || r->wg != wg))
			fail(V, "result is in %s, but engine \"%s\" puts it in %s", lstr(V, r),
			     mma ? "mma" : wg ? "wgmma" : "fma", mma ? "mma<>" : wg ? "wgmma<>" : "dot<>");
		else if (r->mma)
			check_mma_shape(V, op);
		if (V->ok)
			check_dot_operands(V, op);
		if (V->ok && op->noperands > 2)
			same_as_result(V, op, 2, "the accumulator stays where the dot puts its result");
	} else if (blk_op_is_reduce(op->kind)) {
		int axis = (int)blk_op_int(op, "axis", 0);
		want = blk_layout_slice(layout(op, 0), axis);
		expect_layout(V, op, &want, "the operand's layout without the reduced dim");
	} else if (blk_op_is_scan(op->kind)) {
		if (!blk_layout_runs(layout(op, 0)))
			fail(V, "operand is in %s; a scan needs a layout of runs (no split dims, no tlo)",
			     lstr(V, layout(op, 0)));
		else
			same_as_result(V, op, 0, "a scan keeps its operand's layout");
	} else if (op->kind == BLK_OP_EXPAND_DIMS) {
		want = blk_layout_expand(layout(op, 0), (int)blk_op_int(op, "axis", 0));
		expect_layout(V, op, &want, "the operand's layout with the new dim");
	}
}

/* A carry keeps one layout: init, region arg, yielded value, result. */
static void check_for(Verifier *V, const BlkOp *op)
{
	const BlkRegion *r = op->regions[0];
	const BlkOp *y = r->last;
	for (int i = 0; i + 3 < op->noperands; i++) {
		const BlkLayout *l = layout(op, i + 3);
		const BlkLayout *got[3] = { r->args[i + 1]->type.layout, op->results[i]->type.layout,
		                            y->operands[i]->type.layout };
		static const char *const what[3] = { "region arg", "result", "yielded value" };
		for (int j = 0; j < 3; j++)
			if (l && got[j] && !blk_layout_equal(l, got[j]))
				fail(V, "carry %d: the %s is in %s, the init in %s", i, what[j], lstr(V, got[j]),
				     lstr(V, l));
	}
}

static void check_no_operands(Verifier *V, const BlkOp *op)
{
	if (op->noperands || op->nresults || op->nregions)
		fail(V, "takes no operands and gives nothing");
	else if ((op->kind == BLK_OP_ASYNC_WAIT || op->kind == BLK_OP_TMA_STORE_WAIT) &&
	         blk_op_int(op, "pending", -1) < 0)
		fail(V, "attr pending must be a count of groups (0 or more)");
}

static bool one_in_one_out(Verifier *V, const BlkOp *op, const char *what)
{
	if (op->noperands == 1 && op->nresults == 1)
		return true;
	fail(V, "takes one %s and gives one", what);
	return false;
}

/* wgmma_wait: the accumulator of a wgmma dot (or of the loop that
 * carried it in flight), given back as it is. */
static void check_wgmma_wait(Verifier *V, const BlkOp *op)
{
	const BlkValue *a = op->operands[0];
	const BlkAttr *e = a->def && a->def->kind == BLK_OP_DOT ? blk_op_attr(a->def, "engine") : NULL;
	bool wg = e && e->kind == BLK_ATTR_STRING && strcmp(e->s, "wgmma") == 0;
	if (!wg && !(a->def && a->def->kind == BLK_OP_FOR))
		fail(V, "waits for the result of a wgmma dot (or a loop's), not of %s",
		     a->def ? blk_op_name(a->def->kind) : "a region argument");
	else if (!blk_type_equal(&a->type, &op->results[0]->type))
		fail(V, "result %s is not its operand's type %s", ty(V, &op->results[0]->type), ty(V, &a->type));
	else if (blk_op_int(op, "pending", -1) < 0)
		fail(V, "attr pending must be a count of groups (0 or more)");
}

/* An mbarrier op: a shared i32[2n] Ref (n barriers of 8 bytes), an i32
 * index (and for a wait an i32 parity); init's count of arrivals. */
static void check_mbarrier(Verifier *V, const BlkOp *op)
{
	int want = op->kind == BLK_OP_MBARRIER_WAIT ? 3 : 2;
	int64_t n;
	if (op->noperands != want || op->nresults || op->nregions || !shared_ref(op->operands[0]) ||
	    op->operands[0]->type.dtype != BLK_I32 || op->operands[0]->type.rank != 1 ||
	    !blk_sym_is_const(op->operands[0]->type.dims[0], &n) || n % 2) {
		fail(V, "takes a shared i32[2n] Ref of n mbarriers and an i32 index%s, and gives nothing",
		     want == 3 ? " and parity" : "");
		return;
	}
	for (int i = 1; i < want; i++)
		if (op->operands[i]->type.kind != BLK_TYPE_TILE || op->operands[i]->type.rank || op->operands[i]->type.dtype != BLK_I32)
			fail(V, "operand %d is %s, not an i32 scalar", i, ty(V, &op->operands[i]->type));
	int cl = V->k->launch ? V->k->launch->cluster : 0;
	int64_t peers = blk_op_int(op, "cluster", 0);
	if (peers && (op->kind != BLK_OP_MBARRIER_ARRIVE || peers != cl || cl < 2))
		fail(V, "attr cluster %lld: an mbarrier_arrive's, the launch's cluster (%d): lane 0 of each warp "
		        "arrives on the barrier in every CTA of it", (long long)peers, cl);
	if (op->kind == BLK_OP_MBARRIER_INIT && blk_op_int(op, "count", 0) < 1)
		fail(V, "attr count must be the arrivals a phase takes (1 or more)");
	if (op->kind == BLK_OP_MBARRIER_EXPECT_TX && blk_op_int(op, "bytes", 0) < 1)
		fail(V, "attr bytes must be the TMA bytes the phase waits for (1 or more)");
}

/* A TMA box's shared side: a swizzled rank-2 slot of at most 256 rows (a
 * box's most) of the global Ref's dtype, whose indexing keeps rank dims. */
static bool tma_slot(const BlkType *slot, const BlkType *global, int rank)
{
	int64_t rows;
	return rank == 2 && slot->rank == 2 && slot->dtype == global->dtype && slot->layout && slot->layout->swz &&
	       blk_sym_is_const(slot->dims[0], &rows) && rows <= 256;
}

/* A tma op's attr tmap names the launch's tensor map of the slot's box
 * and swizzle (blk_launch_tmap; the array is the emitter's to trust: the
 * global Ref says which). */
static int tmap_rank(Verifier *V, const BlkOp *op);

static void check_tmap_attr(Verifier *V, const BlkOp *op, const BlkType *slot)
{
	const BlkLaunch *l = V->k->launch;
	int t = (int)blk_op_int(op, "tmap", -1);
	const BlkLaunchArg *g = l ? blk_launch_nth(l, BLK_ARG_TMAP, t) : NULL;
	int64_t rows = 0;
	blk_sym_is_const(slot->dims[0], &rows);
	int swz = slot->layout->swz;
	int mc = (int)blk_op_int(op, "multicast", 0); /* each CTA of the cluster copies rows / mc */
	if (mc > 1 && (!l || mc != l->cluster || rows % (8 * mc) || op->kind != BLK_OP_TMA_LOAD ||
	               blk_op_int(op, "trans", 0) || tmap_rank(V, op) != 2)) {
		fail(V, "attr multicast %d: a 2-D load, not trans, in CTA clusters of that many (the launch's: %d), "
		        "of rows (%lld) whole 8-row swizzle blocks a CTA", mc, l ? l->cluster : 0, (long long)rows);
		return;
	}
	if (mc > 1)
		rows /= mc;
	if (!g)
		fail(V, "attr tmap %d names no tensor map of the kernel's launch", t);
	else if (g->trans != (blk_op_int(op, "trans", 0) != 0))
		fail(V, "tensor map %d is%s trans; the op's attr trans says it is%s", t, g->trans ? "" : " not",
		     g->trans ? " not" : "");
	else if (g->swizzle != swz || g->box[0] != swz / blk_dtype_size(slot->dtype) || g->box[1] != rows)
		fail(V, "tensor map %d has boxes (%d, %d) swizzle %d; the slot takes (%d, %d) swizzle %d", t,
		     g->box[0], g->box[1], g->swizzle, swz / blk_dtype_size(slot->dtype), (int)rows, swz);
}

/* The rank of the array whose tensor map a tma op names (0: none). */
static int tmap_rank(Verifier *V, const BlkOp *op)
{
	const BlkLaunch *l = V->k->launch;
	const BlkLaunchArg *g = l ? blk_launch_nth(l, BLK_ARG_TMAP, (int)blk_op_int(op, "tmap", -1)) : NULL;
	return g && g->param >= 0 && g->param < V->k->nparams ? V->k->params[g->param].rank : 0;
}

/* tma_load: a swizzled rank-2 slot, an mbarrier (bars, index), a global
 * Ref of the same dtype and its indices as `load` takes them, keeping two
 * dims; the slot's rows fit a TMA box (at most 256). */
static void check_tma_load(Verifier *V, const BlkOp *op)
{
	if (op->noperands < 4 || op->nresults || op->nregions || !shared_ref(op->operands[0]) ||
	    !shared_ref(op->operands[1]) || op->operands[3]->type.kind != BLK_TYPE_REF ||
	    op->operands[3]->type.space != BLK_SPACE_GLOBAL) {
		fail(V, "takes a swizzled shared slot, the mbarrier Ref and index, a global Ref and its indices");
		return;
	}
	const BlkType *dst = &op->operands[0]->type, *src = &op->operands[3]->type;
	int rank, nidx;
	const BlkValue *gather;
	copy_indices(op, src, 4, &rank, &nidx, &gather);
	if (op->noperands != 4 + nidx)
		fail(V, "has %d index operands, its idx takes %d", op->noperands - 4, nidx);
	else if (gather)
		fail(V, "gathers: TMA copies boxes, not rows picked by index tiles (async_copy does)");
	else if (!tma_slot(dst, src, rank))
		fail(V, "copies a rank-%d block of %s into %s: TMA fills a swizzled rank-2 slot of at most 256 rows",
		     rank, ty(V, src), ty(V, dst));
	else if (tmap_rank(V, op) >= 3 &&
	         (!op->operands[3]->def || op->operands[3]->def->kind != BLK_OP_BLOCK_REF))
		fail(V, "copies from a 3-D or higher array through %s: the box's other coordinates are a block_ref's "
		        "starts",
		     op->operands[3]->def ? blk_op_name(op->operands[3]->def->kind) : "a region argument");
	else
		check_tmap_attr(V, op, dst);
}

/* The part of dst a tma_store's idx selects has the slot's shape, whole
 * column blocks (the swizzle's bytes) wide. */
static bool tma_store_fits(const BlkOp *op, const BlkType *src, const BlkType *dst)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	for (int d = 0; d < 2; d++) {
		const BlkIndex *ix = idx && d < idx->index.n ? &idx->index.v[d] : NULL;
		const BlkSym *ext = ix && ix->kind == BLK_INDEX_DS ? ix->size : dst->dims[d];
		if (!blk_sym_equal(ext, src->dims[d]))
			return false;
	}
	int64_t cols;
	int bw = src->layout->swz / blk_dtype_size(src->dtype);
	return blk_sym_is_const(src->dims[1], &cols) && bw > 0 && cols % bw == 0;
}

/* tma_store: a swizzled rank-2 slot of at most 256 rows written to a
 * part of a block_ref's block of the same shape and dtype. */
static void check_tma_store(Verifier *V, const BlkOp *op)
{
	if (op->noperands < 2 || op->nresults || op->nregions || !shared_ref(op->operands[0]) ||
	    op->operands[1]->type.kind != BLK_TYPE_REF || op->operands[1]->type.space != BLK_SPACE_GLOBAL) {
		fail(V, "takes a swizzled shared slot, a global Ref and its indices");
		return;
	}
	const BlkType *src = &op->operands[0]->type, *dst = &op->operands[1]->type;
	int rank, nidx;
	const BlkValue *gather;
	copy_indices(op, dst, 2, &rank, &nidx, &gather);
	if (op->noperands != 2 + nidx)
		fail(V, "has %d index operands, its idx takes %d", op->noperands - 2, nidx);
	else if (gather)
		fail(V, "scatters: TMA writes boxes, not rows picked by index tiles");
	else if (!tma_slot(src, dst, rank))
		fail(V, "writes %s to a rank-%d block of %s: TMA stores a swizzled rank-2 slot of at most 256 rows",
		     ty(V, src), rank, ty(V, dst));
	else if (!op->operands[1]->def || op->operands[1]->def->kind != BLK_OP_BLOCK_REF)
		fail(V, "writes to a block_ref's block (its array's tensor map and coordinates), not %s",
		     op->operands[1]->def ? blk_op_name(op->operands[1]->def->kind) : "a region argument");
	else if (!tma_store_fits(op, src, dst))
		fail(V, "writes %s to a part of %s of another shape, or not whole column blocks of %d bytes",
		     ty(V, src), ty(V, dst), src->layout->swz);
	else if (blk_op_attr(op, "reduce") && (blk_op_attr(op, "reduce")->kind != BLK_ATTR_STRING ||
	                                       strcmp(blk_op_attr(op, "reduce")->s, "add") != 0 ||
	                                       src->dtype != BLK_F32))
		fail(V, "attr reduce must be \"add\", of f32 elements");
	else
		check_tmap_attr(V, op, src);
}

/* ---- the launch header -------------------------------------------------- */

static const BlkParam *arg_param(Verifier *V, const BlkLaunchArg *g, int i)
{
	const BlkKernel *k = V->k;
	if (g->param < 0 || g->param >= k->nparams || k->params[g->param].access == BLK_ACCESS_SCRATCH) {
		fail(V, "launch arg %d: param %d is no array param", i, g->param);
		return NULL;
	}
	return &k->params[g->param];
}

static bool is_size(const BlkKernel *k, const char *name)
{
	for (int i = 0; i < k->nsizes; i++)
		if (strcmp(k->sizes[i], name) == 0)
			return true;
	return false;
}

/* One argument: its param or size exists; a tensor map's box and swizzle
 * are ones TMA takes; a stride argument is one its pointer says is
 * dynamic. */
static void check_launch_arg(Verifier *V, const BlkLaunch *l, int i)
{
	const BlkLaunchArg *g = &l->args[i];
	if (i > 0 && g->kind < l->args[i - 1].kind)
		fail(V, "launch arg %d: out of ABI order (pointers, tensor maps, sizes, strides, peers, "
		     "rank, world, timeout)", i);
	if (g->kind >= BLK_ARG_RANK) {
		if (i > 0 && g->kind == l->args[i - 1].kind)
			fail(V, "launch arg %d: a second %s argument", i, g->kind == BLK_ARG_RANK ? "rank"
			     : g->kind == BLK_ARG_WORLD ? "world" : "timeout");
		return;
	}
	if (g->kind == BLK_ARG_SIZE) {
		if (!g->size || !is_size(V->k, g->size))
			fail(V, "launch arg %d: %s is not a size of the kernel", i, g->size ? g->size : "?");
		return;
	}
	const BlkParam *p = arg_param(V, g, i);
	if (!p)
		return;
	if (g->kind == BLK_ARG_PEERS && !p->symmetric)
		fail(V, "launch arg %d: peers of %s, which is not symmetric", i, p->name);
	if (g->kind == BLK_ARG_PTR && (g->align < 1 || (g->align & (g->align - 1))))
		fail(V, "launch arg %d: align %d is not a power of two", i, g->align);
	if (g->kind == BLK_ARG_TMAP && (p->rank < 2 || p->rank > 5 || g->box[0] < 1 || g->box[0] > 256 ||
	                                g->box[1] < 1 || g->box[1] > 256 ||
	                                (g->swizzle != 32 && g->swizzle != 64 && g->swizzle != 128)))
		fail(V, "launch arg %d: a tensor map of boxes (%d, %d) swizzle %d over %s (TMA: rank 2 to 5, "
		     "boxes of 1 to 256, swizzle 32, 64 or 128)", i, g->box[0], g->box[1], g->swizzle, p->name);
	if (g->kind == BLK_ARG_TMAP && (g->rows < 0 || g->rows > p->rank - 2 || (g->trans && g->rows != p->rank - 2)))
		fail(V, "launch arg %d: a tensor map over %s with rows along dim %d (rank - 2, or an earlier dim, "
		     "not trans)", i, p->name, g->rows);
	if (g->kind != BLK_ARG_STRIDE && !(g->kind == BLK_ARG_TMAP && g->trans))
		return;
	const BlkLaunchArg *ptr = NULL;
	for (int j = 0; j < l->nargs && !ptr; j++)
		if (l->args[j].kind == BLK_ARG_PTR && l->args[j].param == g->param)
			ptr = &l->args[j];
	if (g->kind == BLK_ARG_TMAP) {
		if (p->rank >= 2 && (!ptr || ptr->strides[p->rank - 2] != 1))
			fail(V, "launch arg %d: a trans tensor map over %s, whose second-last dim is not contiguous", i,
			     p->name);
		return;
	}
	if (g->dim < 0 || g->dim >= p->rank || !ptr || ptr->strides[g->dim] >= 0)
		fail(V, "launch arg %d: stride %d of %s is not a dynamic stride of its pointer", i, g->dim, p->name);
}

/* One argument of kind for each param `takes` says, in param order: the
 * pointers (every array param), the peers (every symmetric one). */
static void check_per_param(Verifier *V, const BlkLaunch *l, BlkArgKind kind, const char *noun,
                            const char *which, bool (*takes)(const BlkParam *))
{
	int n = 0;
	for (int pi = 0; pi < V->k->nparams; pi++) {
		if (!takes(&V->k->params[pi]))
			continue;
		const BlkLaunchArg *g = blk_launch_nth(l, kind, n++);
		if (!g || g->param != pi)
			fail(V, "launch: %s %d is not param %s's (one %s per %s param, in order)", noun, n - 1,
			     V->k->params[pi].name, noun, which);
	}
	if (blk_launch_count(l, kind) != n)
		fail(V, "launch: %d %ss for %d %s params", blk_launch_count(l, kind), noun, n, which);
}

static bool is_array(const BlkParam *p)
{
	return p->access != BLK_ACCESS_SCRATCH;
}

static bool is_symmetric(const BlkParam *p)
{
	return p->symmetric;
}

/* Several ranks: rank, world and timeout after the peers; none of them
 * for a kernel of one rank. */
static void check_launch_world(Verifier *V, const BlkLaunch *l)
{
	bool multi = blk_kernel_multi_rank(V->k);
	for (BlkArgKind a = BLK_ARG_RANK; a <= BLK_ARG_TIMEOUT; a++)
		if ((blk_launch_count(l, a) > 0) != multi)
			fail(V, "launch: %s %s argument", multi ? "no" : "a kernel of one rank has a",
			     a == BLK_ARG_RANK ? "rank" : a == BLK_ARG_WORLD ? "world" : "timeout");
}

static void check_launch_axes(Verifier *V, const BlkLaunch *l)
{
	for (int a = 0; l->grid[0] && a < V->k->grid_rank; a++) {
		if (l->axis[a] < -1 || l->axis[a] > 2 || (l->axis[a] < 0) != V->k->grid_seq[a])
			fail(V, "launch: grid axis %d maps to %s, expected %s", a,
			     l->axis[a] < 0 ? "seq" : "a CUDA axis", V->k->grid_seq[a] ? "seq" : "a CUDA axis");
		if ((l->div[a] != NULL) != (l->mod[a] != NULL) || (l->div[a] && l->axis[a] != 2))
			fail(V, "launch: grid axis %d: only an axis in z folds, with both div and mod", a);
		int m = l->merge[a];
		if (m < 0 || m > 4 || (m & (m - 1)) || (m > 1 && l->axis[a] < 0))
			fail(V, "launch: grid axis %d: merge %d, expected 2 or 4 programs of a parallel axis (or none)", a, m);
	}
}

void blk_verify_launch(Verifier *V)
{
	const BlkLaunch *l = V->k->launch;
	V->op = NULL;
	if (l->threads < 32 || l->threads > 1024 || l->threads % 32)
		fail(V, "launch: %d threads, expected whole warps, at most 1024", l->threads);
	if (l->cluster < 0 || l->cluster > 8 || (l->cluster & (l->cluster - 1)))
		fail(V, "launch: cluster %d, expected 2, 4 or 8 CTAs (or none)", l->cluster);
	else if (l->cluster > 1 && !blk_launch_cluster_fits(l))
		fail(V, "launch: clusters of %d CTAs along x need a constant grid whose CTAs along x (persist: "
		        "min(programs, persist)) are a multiple of it", l->cluster);
	if (l->smem < 0 || l->isa < 60 || l->persist < 0)
		fail(V, "launch: smem %lld, isa %d, persist %d (none may be negative; isa 60 or more)",
		     (long long)l->smem, l->isa, l->persist);
	if ((l->grid[0] != NULL) != (l->grid[1] != NULL) || (l->grid[0] != NULL) != (l->grid[2] != NULL))
		fail(V, "launch: the grid has all three CUDA extents or none");
	check_launch_axes(V, l);
	check_per_param(V, l, BLK_ARG_PTR, "pointer", "array", is_array);
	check_per_param(V, l, BLK_ARG_PEERS, "peers table", "symmetric", is_symmetric);
	for (int i = 0; i < l->nargs; i++)
		check_launch_arg(V, l, i);
	check_launch_world(V, l);
}

/* warp_specialize: at the top of the body, its consumers the kernel's
 * warps (two programs of one warpgroup each: twice them, and region 0
 * takes the program's index), a consumer and a producer region. */
static void check_warp_specialize(Verifier *V, const BlkOp *op)
{
	int64_t wg = blk_op_int(op, "consumers", 0), progs = blk_op_int(op, "programs", 1);
	if (op->noperands || op->nresults || op->nregions != 2)
		fail(V, "takes no operands, gives nothing and has two regions (consumers, producer)");
	else if (progs != 1 && !(progs == 2 && kernel_threads(V) == 128))
		fail(V, "attr programs must be 1, or 2 in a kernel of one warpgroup (it has %d warps)",
		     kernel_threads(V) / 32);
	else if (wg < 1 || wg * 128 != progs * kernel_threads(V))
		fail(V, "attr consumers must be the kernel's %d warps in warpgroups of 4%s", kernel_threads(V) / 32,
		     progs > 1 ? ", once per program" : "");
	else if (op->parent != V->k->body)
		fail(V, "belongs at the top of the kernel's body");
	else if (op->regions[0]->nargs != (progs > 1) ||
	         (progs > 1 && (op->regions[0]->args[0]->type.kind != BLK_TYPE_TILE ||
	                        op->regions[0]->args[0]->type.rank || op->regions[0]->args[0]->type.dtype != BLK_I32)))
		fail(V, "region 0 takes %s", progs > 1 ? "one argument, the program's index (i32)" : "no arguments");
}

/* turn_wait, turn_pass: the program index of the two-program
 * warp_specialize whose consumer region holds them. */
static void check_turn(Verifier *V, const BlkOp *op)
{
	const BlkOp *ws = op->parent ? op->parent->parent : NULL;
	const BlkRegion *r = op->parent;
	while (ws && ws->kind != BLK_OP_WARP_SPECIALIZE)
		r = ws->parent, ws = r ? r->parent : NULL;
	if (op->noperands != 1 || op->nresults || op->nregions || op->operands[0]->type.kind != BLK_TYPE_TILE ||
	    op->operands[0]->type.rank || op->operands[0]->type.dtype != BLK_I32)
		fail(V, "takes the program index (an i32 scalar) and gives nothing");
	else if (!ws || r != ws->regions[0] || blk_op_int(ws, "programs", 1) != 2)
		fail(V, "belongs in the consumer region of a warp_specialize of two programs");
}

/* The lowered ops' own rules (rule 4). */
static void check_lowered(Verifier *V, const BlkOp *op)
{
	switch (op->kind) {
	case BLK_OP_CONVERT_LAYOUT:
		if (one_in_one_out(V, op, "tile")) {
			check_convert(V, op);
			if (V->ok && op->results[0]->type.layout && op->results[0]->type.layout->frag)
				check_convert_frag(V, op);
		}
		break;
	case BLK_OP_LOCAL_LOAD:
		if (one_in_one_out(V, op, "shared Ref"))
			check_local_load(V, op);
		break;
	case BLK_OP_EXTRACT_SLICE:
		if (one_in_one_out(V, op, "tile"))
			check_extract_slice(V, op);
		break;
	case BLK_OP_TRANS_VIEW:
		if (one_in_one_out(V, op, "shared Ref"))
			check_trans_view(V, op);
		break;
	case BLK_OP_RESHAPE_VIEW:
		if (one_in_one_out(V, op, "shared Ref"))
			check_reshape_view(V, op);
		break;
	case BLK_OP_EXTRACT:
	case BLK_OP_RESHAPE:
		if (op->nresults == 1 && op->results[0]->type.layout && !reshape_in_registers(op))
			fail(V, "is not a GPU-level op: tile.c rewrites it to a store and a load of shared memory%s",
			     op->kind == BLK_OP_RESHAPE ? " (or keeps a merge of its last two dims in registers)" : "");
		break;
	case BLK_OP_JOIN:
		if (op->nresults == 1 && op->results[0]->type.layout)
			check_join_layout(V, op);
		break;
	case BLK_OP_BLOCK_REF: check_block_ref(V, op); break;
	case BLK_OP_LOCAL_ALLOC: check_local_alloc(V, op); break;
	case BLK_OP_BARRIER:
	case BLK_OP_ASYNC_COMMIT:
	case BLK_OP_FENCE_ASYNC:
	case BLK_OP_WGMMA_COMMIT:
	case BLK_OP_ASYNC_WAIT:
	case BLK_OP_TMA_STORE_WAIT:
	case BLK_OP_CLUSTER_SYNC: check_no_operands(V, op); break;
	case BLK_OP_CLUSTER_RANK:
		if (op->noperands || op->nresults != 1 || op->nregions || op->results[0]->type.rank ||
		    op->results[0]->type.dtype != BLK_I32)
			fail(V, "takes no operands and gives an i32 scalar");
		else if (!V->k->launch || V->k->launch->cluster < 2)
			fail(V, "in a kernel launched without clusters (the launch header's cluster is %d)",
			     V->k->launch ? V->k->launch->cluster : 0);
		break;
	case BLK_OP_TMA_LOAD: check_tma_load(V, op); break;
	case BLK_OP_TMA_STORE: check_tma_store(V, op); break;
	case BLK_OP_MBARRIER_EXPECT_TX:
	case BLK_OP_MBARRIER_INIT:
	case BLK_OP_MBARRIER_WAIT:
	case BLK_OP_MBARRIER_ARRIVE:
	case BLK_OP_ASYNC_ARRIVE: check_mbarrier(V, op); break;
	case BLK_OP_WARP_SPECIALIZE: check_warp_specialize(V, op); break;
	case BLK_OP_TURN_WAIT:
	case BLK_OP_TURN_PASS: check_turn(V, op); break;
	case BLK_OP_WGMMA_WAIT:
		if (one_in_one_out(V, op, "accumulator"))
			check_wgmma_wait(V, op);
		break;
	case BLK_OP_ASYNC_COPY: check_async_copy(V, op); break;
	case BLK_OP_VIEW:
		if (op->noperands >= 1 && shared_ref(op->operands[0]) && op->nresults == 1)
			check_shared_view(V, op);
		break;
	case BLK_OP_DOT: /* before tile.c, on the pipeliner's shared operands */
		if (op->noperands >= 2 && shared_ref(op->operands[1]) && !op->results[0]->type.layout)
			check_dot_shared(V, op);
		break;
	default:
		break;
	}
}

/* Fragment tiles hold packed registers in mma.sync's order: only the ops
 * that know it make or read them.  A SIMT dot's step operands are made by
 * local_load, read by fma dots, and may be loop carries. */
static void check_frag_use(Verifier *V, const BlkOp *op)
{
	/* a step loaded ahead (rotate.c): a loop's init or yielded carry */
	const BlkOp *owner = op->parent ? op->parent->parent : NULL;
	bool carry = op->kind == BLK_OP_FOR || (op->kind == BLK_OP_YIELD && owner && owner->kind == BLK_OP_FOR);
	for (int i = 0; i < op->noperands; i++)
		if (layout(op, i) && (layout(op, i)->frag || layout(op, i)->sfrag) && op->kind != BLK_OP_DOT &&
		    (op->kind != BLK_OP_EXTRACT_SLICE || layout(op, i)->sfrag) && !(carry && layout(op, i)->sfrag)) {
			fail(V, "operand %d is in %s: only a dot or extract_slice reads fragments", i,
			     lstr(V, layout(op, i)));
			return;
		}
	for (int i = 0; i < op->nresults; i++) {
		const BlkLayout *l = op->results[i]->type.layout;
		if (op->results[i]->type.kind == BLK_TYPE_TILE && l && l->sfrag && op->kind != BLK_OP_LOCAL_LOAD &&
		    op->kind != BLK_OP_FOR) {
			fail(V, "result %d is in %s: only local_load makes a SIMT dot's step operands (a loop may "
			     "carry them)", i, lstr(V, l));
			return;
		}
		if (op->results[i]->type.kind == BLK_TYPE_TILE && l && l->frag && op->kind != BLK_OP_LOCAL_LOAD &&
		    op->kind != BLK_OP_CONVERT_LAYOUT && op->kind != BLK_OP_EXTRACT_SLICE) {
			fail(V, "result %d is in %s: only local_load, convert_layout and extract_slice make fragments",
			     i, lstr(V, l));
			return;
		}
	}
}

void blk_verify_gpu_op(Verifier *V, const BlkOp *op)
{
	check_frag_use(V, op);
	if (op->kind == BLK_OP_FOR) {
		check_for(V, op);
		return;
	}
	check_lowered(V, op);
	if (op->nresults == 1 && op->results[0]->type.kind == BLK_TYPE_TILE && op->results[0]->type.layout &&
	    op->noperands > 0 && layout(op, 0))
		check_layouts(V, op);
}
