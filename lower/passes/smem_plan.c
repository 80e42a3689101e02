/* smem_plan.c - bytes of shared memory for every local_alloc.
 *
 * Requires: the GPU level (tile.c): every shared buffer a local_alloc
 * placed before its first use.  Produces: attr offset on every local_alloc
 * and the launch header's smem; a `barrier` before a buffer that takes bytes another
 * buffer used earlier.  Steps:
 *   1. number the ops in program order (a loop's ops inside its span);
 *   2. a buffer lives from its alloc to its last use, through views (and
 *      transposed views) of it;
 *      a use inside a loop that does not hold the alloc keeps it alive to
 *      that loop's end (the next iteration uses it again); the transit
 *      region lives throughout;
 *   3. first fit, 16-byte aligned (a swizzled buffer: 8 of its swizzle
 *      spans, 1024 bytes for 128), in order of first use, the transit
 *      region last: the lowest offset whose bytes no buffer alive at the
 *      same time holds.  Bytes reused from a dead buffer get a barrier
 *      before the new buffer (one for a run of allocs), so its first
 *      writes cannot overtake the old one's last reads by a slower warp.
 * Under a warp_specialize of two programs (ping-pong, warp_spec.c) each
 * program has its own copy of the buffers its region allocates and of the
 * transit region: twice the bytes, attr program_bytes the distance
 * between the copies (a multiple of the buffer's alignment).
 */
#include "lower/lower_int.h"

#include <stdlib.h>
#include <string.h>


typedef struct Buf {
	BlkOp *op;
	int64_t start, end, off, bytes, align;
	bool transit;
} Buf;

typedef struct Plan {
	LowerCtx *c;
	BlkPtrMap pos;   /* op -> 1 + its number */
	BlkPtrMap span;  /* for op -> 1 + the number of its last nested op */
	BlkPtrMap root;  /* shared Ref value -> its Buf (views included) */
	Buf *bufs;
	int nbufs, cap;
	int64_t n;
} Plan;

static int64_t pos_of(const Plan *p, const BlkOp *op)
{
	return (int64_t)(uintptr_t)blk_pmap_get(&p->pos, op) - 1;
}

/* The bytes a buffer spans: with a shared<> layout (rows padded), whole
 * rows -- its first dim's extent times its stride, as a local_alloc is
 * row-major -- since a SIMT dot reads the padding columns of its staged
 * rows (emit_dot.c: threads cover the padded extent); else dense. */
int64_t blk_lower_buffer_bytes(const BlkType *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= blk_lower_dim(t->dims[d]);
	if (t->layout && t->rank > 0 && !t->layout->swz) /* swizzled: dense */
		n = blk_lower_dim(t->dims[0]) * t->layout->sstride[0];
	return n * blk_dtype_size(t->dtype);
}

static int kernel_programs(const BlkRegion *body)
{
	for (const BlkOp *op = body->first; op; op = op->next)
		if (op->kind == BLK_OP_WARP_SPECIALIZE)
			return (int)blk_op_int(op, "programs", 1);
	return 1;
}

/* Step 1, and the buffers and views in order. */
static void number(Plan *p, BlkRegion *r)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		blk_pmap_put(p->c->a, &p->pos, op, (void *)(uintptr_t)(++p->n));
		if (op->kind == BLK_OP_LOCAL_ALLOC) {
			if (p->nbufs == p->cap) {
				p->cap = p->cap ? 2 * p->cap : 16;
				p->bufs = blk_arena_grow(p->c->a, p->bufs, (size_t)p->nbufs, (size_t)p->cap, sizeof *p->bufs);
			}
			const BlkAttr *role = blk_op_attr(op, "role");
			Buf *b = &p->bufs[p->nbufs++];
			*b = (Buf){ .op = op, .start = p->n - 1, .end = p->n - 1 };
			b->transit = role && role->kind == BLK_ATTR_STRING && strcmp(role->s, "transit") == 0;
			b->bytes = blk_lower_buffer_bytes(&op->results[0]->type);
			/* a swizzle repeats every 8 rows of it, from an aligned start */
			const BlkLayout *l = op->results[0]->type.layout;
			b->align = l && l->swz ? 8 * l->swz : 16;
			int progs = b->transit ? kernel_programs(p->c->k->body) : blk_lower_programs_at(op);
			if (progs > 1) {
				int64_t per = (b->bytes + b->align - 1) & ~(b->align - 1);
				blk_op_set_int(p->c->a, op, "program_bytes", per);
				b->bytes = per * progs;
			}
			blk_pmap_put(p->c->a, &p->root, op->results[0], (void *)(uintptr_t)p->nbufs);
		} else if (op->kind == BLK_OP_VIEW || op->kind == BLK_OP_TRANS_VIEW ||
		           op->kind == BLK_OP_RESHAPE_VIEW) {
			void *rb = blk_pmap_get(&p->root, op->operands[0]);
			if (rb)
				blk_pmap_put(p->c->a, &p->root, op->results[0], rb);
		}
		for (int i = 0; i < op->nregions; i++)
			number(p, op->regions[i]);
		blk_pmap_put(p->c->a, &p->span, op, (void *)(uintptr_t)(p->n));
	}
}

/* The last position a use at `use` keeps buffer b alive to (step 2). */
static int64_t live_to(const Plan *p, const Buf *b, BlkOp *use)
{
	int64_t at = pos_of(p, use);
	for (BlkOp *op = use; op->parent && op->parent->parent;) {
		op = op->parent->parent;
		int64_t lo = pos_of(p, op), hi = (int64_t)(uintptr_t)blk_pmap_get(&p->span, op) - 1;
		bool holds_alloc = lo <= b->start && b->start <= hi;
		if (op->kind == BLK_OP_FOR && !holds_alloc && hi > at)
			at = hi;
	}
	return at;
}

static void extend(Plan *p, BlkRegion *r)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->noperands; i++) {
			uintptr_t k = (uintptr_t)blk_pmap_get(&p->root, op->operands[i]);
			if (!k)
				continue;
			Buf *b = &p->bufs[k - 1];
			int64_t e = live_to(p, b, op);
			if (e > b->end)
				b->end = e;
		}
		for (int i = 0; i < op->nregions; i++)
			extend(p, op->regions[i]);
	}
}

static bool overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	return a0 <= b1 && b0 <= a1;
}

/* Step 3 for b.  live: the indices of the buffers placed before it that
 * are alive at its start, in placing order; used: every distinct byte
 * range placed so far.  (A kernel of thousands of scalar extracts has as
 * many transit buffers: comparing each with every earlier one was
 * quadratic.) */
static void place(Plan *p, Buf *b, const int *live, int nlive, const Buf *used, int nused)
{
	int64_t off = 0;
	for (bool moved = true; moved;) {
		moved = false;
		for (int i = 0; i < nlive; i++) {
			const Buf *o = &p->bufs[live[i]];
			if (overlap(o->start, o->end, b->start, b->end) &&
			    overlap(o->off, o->off + o->bytes - 1, off, off + b->bytes - 1)) {
				off = (o->off + o->bytes + b->align - 1) & ~(b->align - 1);
				moved = true;
			}
		}
	}
	b->off = off;
	bool reused = false;
	for (int i = 0; i < nused; i++)
		reused |= overlap(used[i].off, used[i].off + used[i].bytes - 1, off, off + b->bytes - 1);
	const BlkOp *prev = b->op->prev;
	while (prev && prev->kind == BLK_OP_LOCAL_ALLOC)
		prev = prev->prev;
	if (reused && !(prev && prev->kind == BLK_OP_BARRIER)) {
		BlkBuilder bb;
		blk_builder_before(&bb, p->c->a, b->op);
		blk_build(&bb, BLK_OP_BARRIER, b->op->loc, 0, NULL, 0, NULL, 0);
	}
	blk_op_set_int(p->c->a, b->op, "offset", off);
}

static int by_first_use(const void *x, const void *y)
{
	const Buf *a = x, *b = y;
	if (a->transit != b->transit)
		return a->transit ? 1 : -1;
	return (a->start > b->start) - (a->start < b->start);
}

bool blk_lower_smem_plan(LowerCtx *c)
{
	Plan p = { .c = c };
	number(&p, c->k->body);
	extend(&p, c->k->body);
	if (p.nbufs) /* qsort of NULL is undefined even for 0 elements */
		qsort(p.bufs, (size_t)p.nbufs, sizeof *p.bufs, by_first_use);
	int64_t total = 0;
	int *live = BLK_NEW_N(c->a, int, p.nbufs + 1), nlive = 0, nused = 0;
	Buf *used = BLK_NEW_N(c->a, Buf, p.nbufs + 1);
	for (int i = 0; i < p.nbufs; i++) {
		Buf *b = &p.bufs[i];
		if (b->transit) /* (last) alive throughout: every buffer placed */
			b->start = 0, b->end = p.n;
		int n = 0; /* in order of start: one dead at b's start stays dead */
		for (int j = 0; j < (b->transit ? i : nlive); j++) {
			int k = b->transit ? j : live[j];
			if (p.bufs[k].end >= b->start)
				live[n++] = k;
		}
		nlive = n;
		place(&p, b, live, nlive, used, nused);
		live[nlive++] = i;
		int u = 0;
		while (u < nused && (used[u].off != b->off || used[u].bytes != b->bytes))
			u++;
		if (u == nused)
			used[nused++] = *b;
		if (b->off + b->bytes > total)
			total = b->off + b->bytes;
	}
	BlkLaunch *l = blk_lower_launch(c);
	l->smem = (total + 15) & ~(int64_t)15;
	int most = blk_lower_arch_smem(c->arch);
	if (l->smem > most && c->streamed) { /* driver.c tries again without the streams */
		c->stream_overflow = true;
		return false;
	}
	if (l->smem > most) {
		blk_error(c->d, c->k->loc, "kernel %s needs %lld bytes of shared memory at this launch; "
		          "the most a CTA can have is %d%s%s", c->k->name, (long long)l->smem, most,
		          most < BLK_LOWER_MAX_SMEM ? " on " : "", most < BLK_LOWER_MAX_SMEM ? c->arch : "");
		return false;
	}
	return true;
}
