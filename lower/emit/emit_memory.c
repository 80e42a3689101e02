/* emit_memory.c - block refs, views, loads, stores, swaps, atomics.
 *
 * An access walks the registers of the value's layout.  Its address is
 * base + (per-thread part, once per access) + (per-register constant),
 * so the constant folds into the instruction's offset.  Along the last dim
 * consecutive registers of a thread are consecutive elements: when the
 * stride is 1 and alignment is provable (block starts and ds starts are
 * multiples, other strides too; the data pointer's alignment is the
 * launch's, BlkArrayDesc.align: 16 bytes unless a slice starts elsewhere)
 * they move as one vector of up to 16 bytes (ld.global.v4.f32).
 * Masks come from the `mask` attributes of blockspec.c: only '1' dims are
 * checked, plus padding lanes of non-power-of-two tiles.  A masked load
 * reads a safe address and selects the fill; a masked store branches.
 * Accesses are ordered by the IR's barrier ops (tile.c brackets those to
 * shared Refs and to arrays a program accesses in two ways; dot_stage.c
 * stages with one barrier).  A swap also waits between its load and its
 * store, whose layouts may differ.
 */
#include "emit.h"

#include <stdio.h>
#include <string.h>

/* ---- block refs and indexing ---------------------------------------------------- */

static LLVMValueRef in_range(Emit *E, LLVMValueRef i, int64_t n)
{
	return LLVMBuildICmp(E->b, LLVMIntULT, i, blk_emit_i32(E, n), "");
}

/* i < an extent that is n, or the run-time dn (a dynamic size). */
static LLVMValueRef in_ext(Emit *E, LLVMValueRef i, int64_t n, LLVMValueRef dn)
{
	return dn ? LLVMBuildICmp(E->b, LLVMIntULT, i, dn, "") : in_range(E, i, n);
}

/* Dim d's step (a strided ds: element k is index k * step). */
static int64_t ref_step(const ERef *r, int d)
{
	return r->step[d] > 1 ? r->step[d] : 1;
}

static LLVMValueRef mul64(Emit *E, LLVMValueRef i32v, int64_t k)
{
	return LLVMBuildMul(E->b, LLVMBuildSExt(E->b, i32v, E->i64, ""), blk_emit_i64(E, k), "");
}

/* i32v times a stride that is k, or the run-time dk (i64). */
static LLVMValueRef mul_stride(Emit *E, LLVMValueRef i32v, int64_t k, LLVMValueRef dk)
{
	return dk ? LLVMBuildMul(E->b, LLVMBuildSExt(E->b, i32v, E->i64, ""), dk, "") : mul64(E, i32v, k);
}

/* Param pi's array's stride along d, as its pointer argument says (a
 * dynamic one: its argument in *dyn, the divisor known of it returned). */
static int64_t array_stride(Emit *E, int pi, int d, LLVMValueRef *dyn)
{
	int64_t s = blk_lower_ptr_arg(E->c, pi)->strides[d];
	*dyn = s < 0 ? E->stride_args[blk_kernel_array_index(E->c->k, pi)][d] : NULL;
	return s < 0 ? -s : s;
}

/* A param's extent (shape or block dim): constant, or the run-time value
 * of its expression of dynamic sizes (*dyn), the divisor known of it. */
static int64_t param_extent(Emit *E, const BlkSym *s, LLVMValueRef *dyn)
{
	int64_t v;
	*dyn = NULL;
	if (blk_sym_is_const(s, &v))
		return v;
	*dyn = blk_emit_sym(E, s);
	v = blk_lower_divisor(E->c, s);
	return v > 0 ? v : (int64_t)1 << 30;
}

void blk_emit_block_ref(Emit *E, const BlkOp *op)
{
	const BlkKernel *k = E->c->k;
	int pi = (int)blk_op_int(op, "param", 0);
	const BlkParam *p = &k->params[pi];
	const BlkLaunchArg *ptr = blk_lower_ptr_arg(E->c, pi);
	const BlkAttr *mask = blk_op_attr(op, "mask");
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ERef *r = &ev->ref;
	ev->is_ref = true;
	r->space = BLK_SPACE_GLOBAL;
	r->dt = p->dtype;
	r->pindex = pi;
	r->base = E->params[pi];
	r->off = blk_emit_i64(E, 0);
	/* the base's alignment bounds every vector access: fold it into what
	 * is known of the offset (elements; 16 bytes at most is ever used) */
	int ab = ptr->align < 16 ? ptr->align : 16, es = blk_dtype_size(p->dtype);
	r->offalign = ab >= es ? ab / es : 1;
	for (int d = 0; d < p->rank; d++) {
		LLVMValueRef s = blk_emit_tile(E, op->operands[d])->r[0], dst, dae, dbe;
		int64_t st = array_stride(E, pi, d, &dst), ae = param_extent(E, p->shape[d], &dae);
		if (p->squeezed[d]) {
			r->off = LLVMBuildAdd(E->b, r->off, mul_stride(E, s, st, dst), "");
			r->offalign = blk_gcd(r->offalign, st);
			if (mask && mask->s[d] == '1')
				r->alive = blk_emit_and(E, r->alive, in_ext(E, s, ae, dae));
			continue;
		}
		int o = r->rank++;
		r->g[o] = s;
		r->l[o] = blk_emit_i32(E, 0);
		r->galign[o] = blk_emit_divisor(op->operands[d]);
		r->lalign[o] = (int64_t)1 << 30;
		r->stride[o] = st, r->dstride[o] = dst;
		r->ext[o] = r->bext[o] = param_extent(E, p->block[d], &dbe);
		r->dbext[o] = dbe;
		r->aext[o] = ae, r->daext[o] = dae;
	}
	blk_emit_bind(E, op->results[0], ev);
}

/* An access's GATHER dims: per dim its index tile (in the walk's layout:
 * register r indexes element r), where the Ref's element 0 is along it,
 * its stride and extents, and whether it is checked; the accessed tile's
 * dims they give sit at pos (rank of them). */
typedef struct Gather {
	int n, pos, rank;
	const ETile *idx[BLK_MAX_RANK];
	LLVMValueRef l[BLK_MAX_RANK], g[BLK_MAX_RANK];
	int64_t stride[BLK_MAX_RANK], bext[BLK_MAX_RANK], aext[BLK_MAX_RANK];
	LLVMValueRef dstride[BLK_MAX_RANK], dbext[BLK_MAX_RANK], daext[BLK_MAX_RANK];
	bool mask[BLK_MAX_RANK];
} Gather;

/* GATHER dim d of in: noted in *gt, not a dim of the view. */
static void note_gather(Emit *E, const BlkValue *iv, const ERef *in, int d, bool m, int pos, Gather *gt)
{
	if (!gt)
		blk_die("lower: emit: a gather outside a load, store or atomic");
	int j = gt->n++;
	if (!j)
		gt->pos = pos;
	gt->idx[j] = blk_emit_tile(E, iv);
	gt->l[j] = in->l[d], gt->g[j] = in->g[d];
	gt->stride[j] = in->stride[d], gt->bext[j] = in->bext[d], gt->aext[j] = in->aext[d];
	gt->dstride[j] = in->dstride[d], gt->dbext[j] = in->dbext[d], gt->daext[j] = in->daext[d];
	gt->mask[j] = m;
	gt->rank = iv->type.rank;
}

/* The gathered dims into *v at gt->pos: no address or mask of their own
 * (stride 0, never out of bounds); the index tiles carry both. */
static void insert_gathered(Emit *E, ERef *v, bool *dmask, Gather *gt)
{
	int s = gt->rank - v->rank, p = gt->pos;
	gt->rank = s;
	for (int o = v->rank - 1; o >= p; o--) {
		v->g[o + s] = v->g[o], v->l[o + s] = v->l[o], v->stride[o + s] = v->stride[o];
		v->galign[o + s] = v->galign[o], v->lalign[o + s] = v->lalign[o];
		v->bext[o + s] = v->bext[o], v->aext[o + s] = v->aext[o], v->ext[o + s] = v->ext[o];
		v->dstride[o + s] = v->dstride[o], v->dbext[o + s] = v->dbext[o], v->daext[o + s] = v->daext[o];
		dmask[o + s] = dmask[o];
	}
	for (int o = p; o < p + s; o++) {
		v->g[o] = v->l[o] = blk_emit_i32(E, 0);
		v->stride[o] = 0;
		v->galign[o] = v->lalign[o] = (int64_t)1 << 30;
		v->bext[o] = v->aext[o] = v->ext[o] = (int64_t)1 << 30;
		v->dstride[o] = v->dbext[o] = v->daext[o] = NULL;
		dmask[o] = false;
	}
	v->rank += s;
}

/* Applies op's idx to *in, its index operands from operand `next` on;
 * dmask[o] tells whether kept dim o is checked; GATHER dims go to *gt. */
static void apply_index(Emit *E, const BlkOp *op, int next, const ERef *in, ERef *v, bool *dmask,
                        Gather *gt)
{
	const BlkAttr *idx = blk_op_attr(op, "idx"), *mask = blk_op_attr(op, "mask");
	*v = *in;
	v->rank = 0;
	for (int d = 0; d < in->rank; d++) {
		BlkIndexKind kind = idx && d < idx->index.n ? idx->index.v[d].kind : BLK_INDEX_FULL;
		bool m = mask && mask->s[d] == '1';
		int o = v->rank;
		if (kind == BLK_INDEX_GATHER) {
			note_gather(E, op->operands[next++], in, d, m, o, gt);
			continue;
		}
		int64_t st = ref_step(in, d);
		v->g[o] = in->g[d], v->l[o] = in->l[d], v->stride[o] = in->stride[d];
		v->galign[o] = in->galign[d], v->lalign[o] = in->lalign[d];
		v->bext[o] = in->bext[d], v->aext[o] = in->aext[d], v->ext[o] = in->ext[d];
		v->dstride[o] = in->dstride[d], v->dbext[o] = in->dbext[d], v->daext[o] = in->daext[d];
		v->step[o] = st;
		if (kind != BLK_INDEX_FULL) {
			const BlkValue *sv = op->operands[next++];
			LLVMValueRef s = blk_emit_tile(E, sv)->r[0];
			int64_t div = blk_emit_divisor(sv) * st;
			if (st > 1)
				s = LLVMBuildMul(E->b, s, blk_emit_i32(E, st), "");
			v->step[o] = st * blk_index_step(&idx->index.v[d]);
			v->g[o] = LLVMBuildAdd(E->b, in->g[d], s, "");
			v->l[o] = LLVMBuildAdd(E->b, in->l[d], s, "");
			v->galign[o] = blk_gcd(in->galign[d], div);
			v->lalign[o] = blk_gcd(in->lalign[d], div);
			v->ext[o] = kind == BLK_INDEX_DS ? blk_lower_dim(idx->index.v[d].size) : 1;
		}
		if (kind == BLK_INDEX_SCALAR) {
			v->off = LLVMBuildAdd(E->b, v->off, mul_stride(E, v->g[o], in->stride[d], in->dstride[d]), "");
			v->offalign = blk_gcd(v->offalign, in->stride[d]);
			if (m)
				v->alive = blk_emit_and(E, v->alive,
				                    blk_emit_and(E, in_ext(E, v->l[o], in->bext[d], in->dbext[d]),
				                             in_ext(E, v->g[o], in->aext[d], in->daext[d])));
			continue;
		}
		if (dmask)
			dmask[o] = m;
		v->rank++;
	}
	if (gt && gt->n)
		insert_gathered(E, v, dmask, gt);
}

void blk_emit_index_ref(Emit *E, const BlkOp *op, int next, const ERef *in, ERef *out)
{
	apply_index(E, op, next, in, out, NULL, NULL);
}

/* ---- the element walk -------------------------------------------------------------- */

/* Everything an access needs per register group. */
typedef struct Walk {
	const ERef *v;
	const BlkLayout *l;
	bool dmask[BLK_MAX_RANK];
	int vec;
	LLVMValueRef tc[BLK_MAX_RANK]; /* thread part of the coordinate */
	LLVMValueRef tbase;            /* pointer to the thread's element 0 */
	LLVMValueRef owner;            /* NULL: every thread */
	Gather gt;                     /* GATHER dims (gt.n 0: none) */
} Walk;

static int vec_width(const Walk *w)
{
	const ERef *v = w->v;
	int R = v->rank, last = R - 1;
	if (R == 0 || v->stride[last] != 1 || v->dstride[last] || ref_step(v, last) > 1)
		return 1;
	int esz = blk_dtype_size(v->dt), V = w->l->spt[last];
	while (V * esz > 16)
		V /= 2;
	if (w->l->tlo[last])
		return 1;
	for (; V > 1; V /= 2) {
		bool ok = v->galign[last] % V == 0 && v->offalign % V == 0;
		for (int d = 0; d < last; d++)
			ok = ok && v->stride[d] % V == 0;
		if (w->dmask[last])
			ok = ok && v->aext[last] % V == 0 && v->bext[last] % V == 0 &&
			     v->lalign[last] % V == 0;
		if (w->l->pad[last] != w->l->shape[last])
			ok = ok && w->l->shape[last] % V == 0;
		if (ok)
			break;
	}
	return V;
}

/* A vector group of a gather: every element of it the same row, so the
 * same index registers, and the gathered strides keep its alignment. */
static int gather_vec(const Walk *w, int vec)
{
	const Gather *gt = &w->gt;
	int n = blk_layout_nregs(w->l);
	for (int j = 0; j < gt->n && vec > 1; j++) {
		if (gt->stride[j] % vec)
			return 1;
		for (int r = 0; r < n; r += vec)
			for (int i = 1; i < vec; i++)
				if (gt->idx[j]->r[r + i] != gt->idx[j]->r[r])
					return 1;
	}
	return vec;
}

static void walk_init(Emit *E, Walk *w, const ERef *v, const BlkLayout *l)
{
	w->v = v;
	w->l = l;
	for (int j = 0; j < w->gt.n; j++)
		if (!blk_layout_equal(w->gt.idx[j]->l, l))
			blk_die("lower: emit: a gather's indices are not in its access's layout");
	w->vec = gather_vec(w, vec_width(w));
	/* shared: the thread's part first (loop-invariant, hoisted), then the
	 * Ref's run-time offset (a slot), one add a slot for every pointer */
	bool sh = v->space == BLK_SPACE_SHARED;
	LLVMValueRef off = sh ? blk_emit_i64(E, 0) : v->off;
	for (int d = 0; d < v->rank; d++) {
		w->tc[d] = blk_emit_thread_part(E, l, d);
		if (ref_step(v, d) > 1) /* from here on the coordinate is scaled by the step */
			w->tc[d] = LLVMBuildMul(E->b, w->tc[d], blk_emit_i32(E, ref_step(v, d)), "");
		off = LLVMBuildAdd(E->b, off, mul_stride(E, LLVMBuildAdd(E->b, v->g[d], w->tc[d], ""),
		                                         v->stride[d], v->dstride[d]), "");
	}
	LLVMTypeRef et = blk_emit_mem_type(E, v->dt);
	w->tbase = LLVMBuildGEP2(E->b, et, v->base, &off, 1, "");
	if (sh)
		w->tbase = LLVMBuildGEP2(E->b, et, w->tbase, (LLVMValueRef *)&v->off, 1, "");
	w->owner = blk_emit_owner(E, l);
}

/* The element pointer and the in-bounds condition (NULL: always) of
 * register r. */
static LLVMValueRef walk_elem(Emit *E, const Walk *w, int r, LLVMValueRef *mask)
{
	const ERef *v = w->v;
	int rd[BLK_MAX_RANK];
	blk_layout_reg_split(w->l, r, rd);
	int64_t coff = 0;
	LLVMValueRef m = v->alive, doff = NULL; /* doff: the part of run-time strides */
	for (int d = 0; d < v->rank; d++) {
		int k = blk_layout_coord(w->l, d, rd[d], 0), st = (int)ref_step(v, d);
		LLVMValueRef c = LLVMBuildAdd(E->b, w->tc[d], blk_emit_i32(E, k * st), "");
		if (w->l->pad[d] != w->l->shape[d]) /* padding: the coordinate, before the step */
			m = blk_emit_and(E, m, in_range(E, st > 1 ? LLVMBuildAdd(E->b, blk_emit_thread_part(E, w->l, d),
			                                                     blk_emit_i32(E, k), "") : c,
			                            w->l->shape[d]));
		if (v->dstride[d] && k) {
			LLVMValueRef x = LLVMBuildMul(E->b, blk_emit_i64(E, (int64_t)k * st), v->dstride[d], "");
			doff = doff ? LLVMBuildAdd(E->b, doff, x, "") : x;
		} else if (!v->dstride[d]) {
			coff += k * st * v->stride[d];
		}
		if (w->dmask[d]) {
			m = blk_emit_and(E, m, in_ext(E, LLVMBuildAdd(E->b, v->l[d], c, ""), v->bext[d], v->dbext[d]));
			m = blk_emit_and(E, m, in_ext(E, LLVMBuildAdd(E->b, v->g[d], c, ""), v->aext[d], v->daext[d]));
		}
	}
	LLVMValueRef goff = NULL;
	for (int j = 0; j < w->gt.n; j++) { /* a gathered dim: its index register */
		const Gather *gt = &w->gt;
		LLVMValueRef x = gt->idx[j]->r[r];
		if (gt->mask[j]) {
			m = blk_emit_and(E, m, in_ext(E, LLVMBuildAdd(E->b, gt->l[j], x, ""), gt->bext[j], gt->dbext[j]));
			m = blk_emit_and(E, m, in_ext(E, LLVMBuildAdd(E->b, gt->g[j], x, ""), gt->aext[j], gt->daext[j]));
		}
		LLVMValueRef o = mul_stride(E, LLVMBuildAdd(E->b, gt->g[j], x, ""), gt->stride[j], gt->dstride[j]);
		goff = goff ? LLVMBuildAdd(E->b, goff, o, "") : o;
	}
	*mask = m;
	if (v->swz && w->gt.n)
		blk_die("lower: emit: a gather from a swizzled shared Ref");
	if (v->swz) {
		LLVMValueRef c[BLK_MAX_RANK];
		for (int d = 0; d < v->rank; d++)
			c[d] = LLVMBuildAdd(E->b, w->tc[d], blk_emit_i32(E, blk_layout_coord(w->l, d, rd[d], 0)), "");
		return blk_emit_swizzled_ptr(E, v, c);
	}
	LLVMValueRef o = blk_emit_i64(E, coff);
	if (goff)
		o = LLVMBuildAdd(E->b, goff, o, "");
	if (doff)
		o = LLVMBuildAdd(E->b, doff, o, "");
	return LLVMBuildGEP2(E->b, blk_emit_mem_type(E, v->dt), w->tbase, &o, 1, "");
}

static LLVMTypeRef group_type(Emit *E, const Walk *w)
{
	LLVMTypeRef et = blk_emit_mem_type(E, w->v->dt);
	return w->vec > 1 ? LLVMVectorType(et, (unsigned)w->vec) : et;
}

static LLVMValueRef to_reg(Emit *E, LLVMValueRef x, BlkDType dt)
{
	return dt == BLK_BOOL ? LLVMBuildICmp(E->b, LLVMIntNE, x, LLVMConstInt(E->i8, 0, false), "") : x;
}

static LLVMValueRef to_mem(Emit *E, LLVMValueRef x, BlkDType dt)
{
	return dt == BLK_BOOL ? LLVMBuildZExt(E->b, x, E->i8, "") : x;
}

/* ---- loads and stores ----------------------------------------------------------------- */

static LLVMValueRef fill_of(Emit *E, const BlkOp *op, BlkDType dt)
{
	const BlkAttr *f = blk_op_attr(op, "fill");
	double v = !f ? 0 : f->kind == BLK_ATTR_FLOAT ? f->f : (double)f->i;
	if (blk_dtype_is_float(dt))
		return LLVMConstReal(blk_emit_reg_type(E, dt), v);
	if (blk_dtype_is_fp8(dt)) /* its bits */
		return LLVMConstInt(E->i8, blk_f32_to_fp8(dt, (float)v), false);
	int32_t i = !f ? 0 : f->kind == BLK_ATTR_FLOAT ? blk_fill_to_i32(f->f) : (int32_t)f->i;
	if (dt == BLK_BOOL) /* as the interpreter: any nonzero fill is true */
		return LLVMConstInt(E->i1, i != 0, false);
	return LLVMConstInt(blk_emit_reg_type(E, dt), (unsigned long long)(int64_t)i, true);
}

static void load_group(Emit *E, const Walk *w, int r, LLVMValueRef fill, ETile *t)
{
	LLVMValueRef m, p = walk_elem(E, w, r, &m);
	if (m)
		p = LLVMBuildSelect(E->b, m, p, w->v->base, "");
	LLVMValueRef x = LLVMBuildLoad2(E->b, group_type(E, w), p, "");
	LLVMSetAlignment(x, (unsigned)(w->vec * blk_dtype_size(w->v->dt)));
	for (int i = 0; i < w->vec; i++) {
		LLVMValueRef e = w->vec > 1 ? LLVMBuildExtractElement(E->b, x, blk_emit_i32(E, i), "") : x;
		e = to_reg(E, e, w->v->dt);
		t->r[r + i] = m ? LLVMBuildSelect(E->b, m, e, fill, "") : e;
	}
}

static ETile do_load(Emit *E, const BlkOp *op, const ERef *v, const BlkLayout *l, Walk *w)
{
	walk_init(E, w, v, l);
	ETile t = blk_emit_new_tile(E, l);
	LLVMValueRef fill = fill_of(E, op, v->dt);
	int n = blk_layout_nregs(l);
	for (int r = 0; r < n; r += w->vec)
		load_group(E, w, r, fill, &t);
	return t;
}

/* The store of the group g (a value of 1, 2, 4, 8 or 16 bytes) to p under
 * the condition `when`, as one predicated PTX store of its bits instead
 * of a branch around a store.  Huge kernels only (lower_int.h): thousands
 * of guarded stores were as many basic blocks, and LLVM selects
 * instructions a block at a time; elsewhere the branch lets LLVM see the
 * store.  False: g has another size. */
static bool predicated_store(Emit *E, LLVMValueRef when, LLVMValueRef p, LLVMValueRef g)
{
	LLVMTypeRef t = LLVMTypeOf(g);
	LLVMTypeRef et = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
	unsigned n = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetVectorSize(t) : 1;
	LLVMTypeKind k = LLVMGetTypeKind(et);
	unsigned bits = n * (k == LLVMFloatTypeKind ? 32 : k == LLVMDoubleTypeKind ? 64
	                   : k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind ? 16
	                   : k == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(et) : 0);
	LLVMValueRef args[6] = { when, p };
	const char *text, *cons;
	bool f32 = k == LLVMFloatTypeKind; /* kept in .f32 registers: .b32 stores take them */
	if (bits == 128) { /* four 32-bit registers */
		LLVMValueRef w = f32 && n == 4 ? g : LLVMBuildBitCast(E->b, g, LLVMVectorType(E->i32, 4), "");
		for (int i = 0; i < 4; i++)
			args[2 + i] = LLVMBuildExtractElement(E->b, w, blk_emit_i32(E, i), "");
		text = "@$0 st.%s.v4.b32 [$1], {$2, $3, $4, $5};";
		cons = f32 && n == 4 ? "b,l,f,f,f,f,~{memory}" : "b,l,r,r,r,r,~{memory}";
	} else if (bits == 8 || bits == 16 || bits == 32 || bits == 64) { /* one register */
		bool same = f32 && n == 1;
		LLVMValueRef w = same ? g : LLVMBuildBitCast(E->b, g, LLVMIntTypeInContext(E->cx, bits), "");
		args[2] = bits == 8 ? LLVMBuildZExt(E->b, w, E->i16, "") : w; /* no 8-bit registers */
		text = bits == 8    ? "@$0 st.%s.b8 [$1], $2;"
		       : bits == 16 ? "@$0 st.%s.b16 [$1], $2;"
		       : bits == 32 ? "@$0 st.%s.b32 [$1], $2;"
		                    : "@$0 st.%s.b64 [$1], $2;";
		cons = bits <= 16 ? "b,l,h,~{memory}" : same ? "b,l,f,~{memory}" : bits == 32 ? "b,l,r,~{memory}"
		                                                                  : "b,l,l,~{memory}";
	} else {
		return false;
	}
	char asm_text[128];
	bool shared = LLVMGetPointerAddressSpace(LLVMTypeOf(p)) == 3;
	snprintf(asm_text, sizeof asm_text, text, shared ? "shared" : "global");
	blk_emit_asm(E, E->v, args, bits == 128 ? 6 : 3, asm_text, cons, true);
	return true;
}

/* atomic: the atomic op (emit_atomic.c), NULL for a store. */
static void store_group(Emit *E, const Walk *w, int r, const ETile *t, const BlkOp *atomic)
{
	LLVMValueRef m, p = walk_elem(E, w, r, &m);
	LLVMValueRef when = blk_emit_and(E, m, w->owner);
	BlkDType dt = w->v->dt;
	int nt = blk_layout_nregs(t->l);
	if (atomic) {
		LLVMBasicBlockRef cont = blk_emit_begin_if(E, when);
		blk_emit_atomic_rmw(E, atomic, p, to_mem(E, t->r[nt == 1 ? 0 : r], dt), dt);
		blk_emit_end_if(E, cont);
		return;
	}
	bool predicate = when && E->c->huge;
	LLVMBasicBlockRef cont = predicate ? NULL : blk_emit_begin_if(E, when);
	LLVMValueRef x = w->vec == 1 ? to_mem(E, t->r[nt == 1 ? 0 : r], dt) : LLVMGetUndef(group_type(E, w));
	for (int i = 0; w->vec > 1 && i < w->vec; i++)
		x = LLVMBuildInsertElement(E->b, x, to_mem(E, t->r[nt == 1 ? 0 : r + i], dt), blk_emit_i32(E, i), "");
	if (predicate && predicated_store(E, when, p, x))
		return;
	if (predicate) /* a group of no predicated form */
		cont = blk_emit_begin_if(E, when);
	LLVMValueRef s = LLVMBuildStore(E->b, x, p);
	LLVMSetAlignment(s, (unsigned)(w->vec * blk_dtype_size(dt)));
	blk_emit_end_if(E, cont);
}

static void do_store(Emit *E, const ERef *v, const ETile *t, Walk *w, const BlkOp *atomic)
{
	const BlkLayout *l = t->l;
	if (l->rank != v->rank) { /* a scalar stored into every element */
		BlkLayout *bl = BLK_NEW(E->c->a, BlkLayout);
		int shape[BLK_MAX_RANK];
		for (int d = 0; d < v->rank; d++)
			shape[d] = (int)v->ext[d];
		*bl = blk_layout_blocked(v->rank, shape, v->dt, E->c->nthreads);
		l = bl;
	}
	walk_init(E, w, v, l);
	if (atomic)
		w->vec = 1;
	int n = blk_layout_nregs(l);
	for (int r = 0; r < n; r += w->vec)
		store_group(E, w, r, t, atomic);
}


/* A shared Ref's element 0 as a byte offset into shared memory: a run-time
 * part and the constant part (a view at constant indices: the k16 steps),
 * which folds into ldmatrix's immediate offset. */
/* The contiguous dim of a swizzled Ref (stride 1). */
static int contiguous_dim(const ERef *r)
{
	for (int d = 0; d < r->rank; d++)
		if (r->stride[d] == 1)
			return d;
	return -1;
}

/* Element offset (i32) of index c[d] + r->g[d] from the buffer's start,
 * column blocks included, before the swizzle. */
static LLVMValueRef swizzled_elems(Emit *E, const ERef *r, LLVMValueRef *c)
{
	int cd = contiguous_dim(r);
	int64_t bw = r->swz / blk_dtype_size(r->dt);
	LLVMValueRef o = LLVMBuildTrunc(E->b, r->off, E->i32, "");
	for (int d = 0; d < r->rank; d++) {
		LLVMValueRef x = c ? LLVMBuildAdd(E->b, r->g[d], c[d], "") : r->g[d];
		if (d == cd && r->sblk) { /* (x / bw) * sblk + x % bw */
			LLVMValueRef blk = LLVMBuildMul(E->b, LLVMBuildUDiv(E->b, x, blk_emit_i32(E, bw), ""),
			                                blk_emit_i32(E, r->sblk), "");
			x = LLVMBuildAdd(E->b, blk, LLVMBuildURem(E->b, x, blk_emit_i32(E, bw), ""), "");
		} else if (r->stride[d] != 1) {
			x = LLVMBuildMul(E->b, x, blk_emit_i32(E, r->stride[d]), "");
		}
		o = LLVMBuildAdd(E->b, o, x, "");
	}
	return o;
}

LLVMValueRef blk_emit_swizzled_ptr(Emit *E, const ERef *r, LLVMValueRef *c)
{
	LLVMValueRef b = LLVMBuildMul(E->b, swizzled_elems(E, r, c), blk_emit_i32(E, blk_dtype_size(r->dt)), "");
	/* bits 4.. of the byte offset ^= its 128-byte row within the atom */
	LLVMValueRef row = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, b, blk_emit_i32(E, 7), ""),
	                                blk_emit_i32(E, r->swz / 16 - 1), "");
	b = LLVMBuildXor(E->b, b, LLVMBuildShl(E->b, row, blk_emit_i32(E, 4), ""), "");
	return LLVMBuildGEP2(E->b, E->i8, r->base, &b, 1, "");
}

LLVMValueRef blk_emit_swizzled_origin(Emit *E, const ERef *r)
{
	LLVMValueRef b = LLVMBuildMul(E->b, swizzled_elems(E, r, NULL), blk_emit_i32(E, blk_dtype_size(r->dt)), "");
	LLVMValueRef p = LLVMBuildGEP2(E->b, E->i8, r->base, &b, 1, "");
	return LLVMBuildPtrToInt(E->b, p, E->i32, "");
}

LLVMValueRef blk_emit_shared_ptr(Emit *E, const ERef *r, LLVMValueRef tbytes, int64_t *cbytes)
{
	if (r->swz)
		blk_die("lower: emit: a swizzled shared Ref read by element address");
	int64_t k = 0, es = blk_dtype_size(r->dt);
	LLVMValueRef dyn = LLVMBuildTrunc(E->b, r->off, E->i32, "");
	for (int d = 0; d < r->rank; d++) {
		if (LLVMIsAConstantInt(r->g[d]))
			k += LLVMConstIntGetSExtValue(r->g[d]) * r->stride[d];
		else
			dyn = LLVMBuildAdd(E->b, dyn, LLVMBuildMul(E->b, r->g[d], blk_emit_i32(E, r->stride[d]), ""), "");
	}
	*cbytes = k * es;
	LLVMValueRef sb = blk_emit_i32(E, r->sbase);
	if (r->sprog)
		sb = LLVMBuildAdd(E->b, sb, r->sprog, "");
	LLVMValueRef inv = blk_emit_smem_ptr(E, LLVMBuildAdd(E->b, tbytes, sb, ""));
	if (LLVMIsAConstantInt(dyn) && LLVMConstIntGetSExtValue(dyn) == 0)
		return inv;
	LLVMValueRef o = LLVMBuildMul(E->b, dyn, blk_emit_i32(E, es), "");
	return LLVMBuildGEP2(E->b, E->i8, inv, &o, 1, "");
}

/* ---- async copies into shared memory (pipeline.c) ------------------------------ */

void blk_emit_async_commit(Emit *E)
{
	blk_emit_intrinsic(E, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
}

void blk_emit_async_wait(Emit *E, const BlkOp *op)
{
	LLVMValueRef n = blk_emit_i32(E, blk_op_int(op, "pending", 0));
	blk_emit_intrinsic(E, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
}

static void swap_v(LLVMValueRef *x)
{
	LLVMValueRef t = x[0];
	x[0] = x[1], x[1] = t;
}

static void swap_i(int64_t *x)
{
	int64_t t = x[0];
	x[0] = x[1], x[1] = t;
}

/* r over the same bytes with dims 0 and 1 swapped (rank 2). */
static void swap_dims(ERef *r)
{
	swap_v(r->g), swap_v(r->l);
	swap_i(r->galign), swap_i(r->lalign), swap_i(r->stride), swap_i(r->bext), swap_i(r->aext);
	swap_v(r->dstride), swap_v(r->dbext), swap_v(r->daext);
	swap_i(r->ext), swap_i(r->step);
}

/* The same bytes with dims 0 and 1 swapped. */
void blk_emit_trans_view(Emit *E, const BlkOp *op)
{
	EVal *ev = BLK_NEW(E->c->a, EVal);
	*ev = *blk_emit_val(E, op->operands[0]);
	swap_dims(&ev->ref);
	blk_emit_bind(E, op->results[0], ev);
}

/* The same bytes, row-major in the result's dims (verify_gpu.c: a whole,
 * unpadded local_alloc). */
void blk_emit_reshape_view(Emit *E, const BlkOp *op)
{
	EVal *ev = BLK_NEW(E->c->a, EVal);
	*ev = *blk_emit_val(E, op->operands[0]);
	ERef *r = &ev->ref;
	const BlkType *t = &op->results[0]->type;
	r->rank = t->rank;
	int64_t st = 1;
	for (int d = r->rank - 1; d >= 0; d--) {
		r->g[d] = r->l[d] = blk_emit_i32(E, 0);
		r->galign[d] = r->lalign[d] = (int64_t)1 << 30;
		r->ext[d] = r->bext[d] = r->aext[d] = blk_lower_dim(t->dims[d]);
		r->stride[d] = st;
		st *= r->ext[d];
	}
	blk_emit_bind(E, op->results[0], ev);
}

/* One piece of the copy: cp.async of `bytes` (16: .cg, 4 or 8: .ca), the
 * zero-filling .s form where the mask can fail; pieces of 1 or 2 bytes
 * (one 16-bit element, one or two 8-bit ones) by a plain load and
 * st.shared. */
static void copy_piece(Emit *E, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef m, LLVMValueRef base,
                       int bytes)
{
	if (m)
		src = LLVMBuildSelect(E->b, m, src, base, "");
	if (bytes >= 4) {
		char name[64];
		snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d%s",
		         bytes == 16 ? "cg" : "ca", bytes, m ? ".s" : "");
		LLVMValueRef args[3] = { dst, src,
		                         m ? LLVMBuildSelect(E->b, m, blk_emit_i32(E, bytes), blk_emit_i32(E, 0), "") : NULL };
		blk_emit_intrinsic(E, name, NULL, 0, args, m ? 3 : 2);
		return;
	}
	E->plain_pieces = true; /* an async_arrive after it must release this store */
	LLVMTypeRef it = LLVMIntTypeInContext(E->cx, (unsigned)bytes * 8);
	LLVMValueRef x = LLVMBuildLoad2(E->b, it, src, "");
	LLVMSetAlignment(x, (unsigned)bytes);
	if (m)
		x = LLVMBuildSelect(E->b, m, x, LLVMConstInt(it, 0, false), "");
	LLVMSetAlignment(LLVMBuildStore(E->b, x, dst), (unsigned)bytes);
}

/* async_copy dst <- src[idx]: each thread copies its pieces of the block
 * (blk_layout_copy: 16 bytes along the row where alignment allows;
 * blk_layout_copy_across where dst lies transposed) to the same
 * coordinates of dst, through dst's strides -- where source and dst are
 * both contiguous along dim 0 (a slab of an array passed as a transposed
 * view, into a slot that holds it as it lies), the copy runs on both with
 * their dims swapped, 16 bytes along dim 0; with
 * part/parts only that share of its pieces.  Padding lanes copy nothing.
 * Gathered dims (an implicit GEMM's rows) take each piece's address from
 * the index tiles, laid out as the copy (tile.c); an index out of bounds
 * copies zeros (cp.async's src-size 0). */
void blk_emit_async_copy(Emit *E, const BlkOp *op)
{
	const ERef *dst = &blk_emit_val(E, op->operands[0])->ref;
	const ERef *in = &blk_emit_val(E, op->operands[1])->ref;
	const BlkType *t = &op->operands[0]->type;
	ERef v, sw;
	Walk w = { 0 };
	apply_index(E, op, 2, in, &v, w.dmask, &w.gt); /* gathered rows: index tiles in l */
	BlkLayout *l = BLK_NEW(E->c->a, BlkLayout);
	if (!w.gt.n && v.rank == 2 && dst->rank == 2 && v.stride[0] == 1 && v.stride[1] != 1 && !v.dstride[0] &&
	    dst->stride[0] == 1 && dst->stride[1] != 1) {
		sw = *dst, dst = &sw;
		swap_dims(&sw), swap_dims(&v);
		bool m = w.dmask[0];
		w.dmask[0] = w.dmask[1], w.dmask[1] = m;
		int shape[2] = { (int)blk_lower_dim(t->dims[1]), (int)blk_lower_dim(t->dims[0]) };
		*l = blk_layout_copy(2, shape, t->dtype, (int)blk_op_int(op, "threads", E->c->nthreads));
	} else /* dst k-major (its rows along the source's columns): pieces of one element */
		*l = blk_lower_copy_layout(E->c, op, dst->stride[1] != 1 && dst->stride[0] == 1);
	walk_init(E, &w, &v, l);
	while (w.vec > 1 && (dst->stride[0] % w.vec || dst->stride[1] != 1))
		w.vec /= 2;
	LLVMValueRef live = w.owner;
	for (int d = 0; d < 2; d++)
		if (l->pad[d] != l->shape[d])
			live = NULL; /* checked per piece below */
	LLVMBasicBlockRef cont = blk_emit_begin_if(E, live);
	LLVMTypeRef et = blk_emit_mem_type(E, t->dtype);
	LLVMValueRef toff = LLVMBuildAdd(E->b, dst->off, LLVMBuildAdd(E->b,
	                    LLVMBuildMul(E->b, LLVMBuildSExt(E->b, w.tc[0], E->i64, ""), blk_emit_i64(E, dst->stride[0]), ""),
	                    LLVMBuildMul(E->b, LLVMBuildSExt(E->b, w.tc[1], E->i64, ""), blk_emit_i64(E, dst->stride[1]), ""), ""), "");
	LLVMValueRef tdst = LLVMBuildGEP2(E->b, et, dst->base, &toff, 1, "");
	int n = blk_layout_nregs(l), groups = n / w.vec, rd[2];
	int64_t part = blk_op_int(op, "part", 0), parts = blk_op_int(op, "parts", 1);
	for (int g = (int)(part * groups / parts); g < (int)((part + 1) * groups / parts); g++) {
		int r = g * w.vec;
		blk_layout_reg_split(l, r, rd);
		int c0 = blk_layout_coord(l, 0, rd[0], 0), c1 = blk_layout_coord(l, 1, rd[1], 0);
		LLVMValueRef pad = live ? NULL : w.owner;
		for (int d = 0; d < 2; d++)
			if (l->pad[d] != l->shape[d])
				pad = blk_emit_and(E, pad, in_range(E, LLVMBuildAdd(E->b, w.tc[d], blk_emit_i32(E, d ? c1 : c0), ""),
				                                l->shape[d]));
		LLVMBasicBlockRef pc = blk_emit_begin_if(E, pad);
		LLVMValueRef m, src = walk_elem(E, &w, r, &m), to;
		if (dst->swz) {
			LLVMValueRef c[2] = { LLVMBuildAdd(E->b, w.tc[0], blk_emit_i32(E, c0), ""),
			                      LLVMBuildAdd(E->b, w.tc[1], blk_emit_i32(E, c1), "") };
			to = blk_emit_swizzled_ptr(E, dst, c);
		} else {
			LLVMValueRef o = blk_emit_i64(E, (int64_t)c0 * dst->stride[0] + (int64_t)c1 * dst->stride[1]);
			to = LLVMBuildGEP2(E->b, et, tdst, &o, 1, "");
		}
		copy_piece(E, to, src, m, v.base, w.vec * blk_dtype_size(t->dtype));
		blk_emit_end_if(E, pc);
	}
	blk_emit_end_if(E, cont);
}

void blk_emit_memory(Emit *E, const BlkOp *op)
{
	const ERef *in = &blk_emit_val(E, op->operands[0])->ref;
	EVal *ev = BLK_NEW(E->c->a, EVal);
	Walk w = { 0 };
	apply_index(E, op, 1, in, &ev->ref, w.dmask, &w.gt);
	if (op->kind == BLK_OP_VIEW) {
		ev->is_ref = true;
		blk_emit_bind(E, op->results[0], ev);
		return;
	}
	if (op->kind == BLK_OP_LOAD || op->kind == BLK_OP_SWAP) {
		Walk lw = w;
		ev->t = do_load(E, op, &ev->ref, blk_emit_layout(E, op->results[0]), &lw);
		blk_emit_bind(E, op->results[0], ev);
	}
	if (op->kind == BLK_OP_SWAP)
		blk_emit_barrier(E);
	if (op->kind != BLK_OP_LOAD) {
		const ETile *t = blk_emit_tile(E, op->operands[op->noperands - 1]);
		if (w.gt.n == 0 && blk_emit_store_stmatrix(E, op, &ev->ref, t))
			return;
		do_store(E, &ev->ref, t, &w, blk_op_is_atomic(op->kind) ? op : NULL);
	}
}
