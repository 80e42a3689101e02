/* launch.c - the launch header as lower/ writes it (ir.h BlkLaunch).
 *
 * specialize.c makes the header from the launch's arrays: a pointer per
 * array param with the strides compiled in, then the dynamic sizes and
 * the dynamic strides as arguments.  A kernel read from IR text without a
 * header (a hand-written per-pass test) gets the same one here, the first
 * time a pass asks, from its params' shapes taken as contiguous arrays --
 * what blkc --from-ir binds when it is given no sizes.  Later passes add
 * to it: the grid, threads, tensor maps, shared bytes, the ISA.
 */
#include "lower_int.h"

#include <string.h>

/* Param p's strides and alignment at this launch: its array's (a dynamic
 * one -divisor), else contiguous over its constant shape (a dim that is
 * not constant is dynamic, divisor 1). */
static void ptr_arg(LowerCtx *c, int pi, BlkLaunchArg *g)
{
	const BlkParam *p = &c->k->params[pi];
	*g = (BlkLaunchArg){ .kind = BLK_ARG_PTR, .param = pi, .align = 16 };
	if (c->arrays) {
		const BlkArrayDesc *ad = &c->arrays[blk_kernel_array_index(c->k, pi)];
		memcpy(g->strides, ad->strides, sizeof g->strides);
		g->align = ad->align > 0 ? ad->align : 16;
		return;
	}
	int64_t st = 1, v;
	for (int d = p->rank - 1; d >= 0; d--) {
		g->strides[d] = st > 0 ? st : -1;
		st = st > 0 && blk_sym_is_const(p->shape[d], &v) ? st * v : -1;
	}
}

static BlkLaunch *make_launch(LowerCtx *c)
{
	BlkKernel *k = c->k;
	BlkLaunch *l = BLK_NEW(c->a, BlkLaunch);
	l->threads = c->nthreads;
	l->isa = blk_lower_arch_isa(c->arch);
	for (int pi = 0; pi < k->nparams; pi++)
		if (k->params[pi].access != BLK_ACCESS_SCRATCH) {
			BlkLaunchArg g;
			ptr_arg(c, pi, &g);
			blk_launch_add_arg(c->a, l, &g);
		}
	for (int i = 0; k->size_dyn && i < k->nsizes; i++)
		if (k->size_dyn[i] > 0) {
			BlkLaunchArg g = { .kind = BLK_ARG_SIZE, .size = k->sizes[i] };
			blk_launch_add_arg(c->a, l, &g);
		}
	for (int j = 0, n = l->nargs; j < n; j++) /* (pointers come first) */
		for (int d = 0; l->args[j].kind == BLK_ARG_PTR && d < k->params[l->args[j].param].rank; d++)
			if (l->args[j].strides[d] < 0) {
				BlkLaunchArg g = { .kind = BLK_ARG_STRIDE, .param = l->args[j].param, .dim = d };
				blk_launch_add_arg(c->a, l, &g);
			}
	for (int pi = 0; pi < k->nparams; pi++)
		if (k->params[pi].symmetric) {
			BlkLaunchArg g = { .kind = BLK_ARG_PEERS, .param = pi };
			blk_launch_add_arg(c->a, l, &g);
		}
	for (BlkArgKind a = BLK_ARG_RANK; blk_kernel_multi_rank(k) && a <= BLK_ARG_TIMEOUT; a++) {
		BlkLaunchArg g = { .kind = a, .param = -1 };
		blk_launch_add_arg(c->a, l, &g);
	}
	return l;
}

BlkLaunch *blk_lower_make_launch(LowerCtx *c)
{
	return c->k->launch = make_launch(c);
}

BlkLaunch *blk_lower_launch(LowerCtx *c)
{
	return c->k->launch ? c->k->launch : blk_lower_make_launch(c);
}

const BlkLaunchArg *blk_lower_ptr_arg(LowerCtx *c, int pi)
{
	BlkLaunch *l = blk_lower_launch(c);
	for (int j = 0; j < l->nargs; j++)
		if (l->args[j].kind == BLK_ARG_PTR && l->args[j].param == pi)
			return &l->args[j];
	blk_die("lower: launch: param %d has no pointer argument", pi);
}

typedef struct TmapOrder {
	LowerCtx *c;
	int map[BLK_MAX_TMAPS]; /* old index -> new, -1 not yet seen */
	int n;
} TmapOrder;

static void first_uses(void *ctx, BlkOp *op)
{
	TmapOrder *o = ctx;
	int t = (int)blk_op_int(op, "tmap", -1);
	if ((op->kind != BLK_OP_TMA_LOAD && op->kind != BLK_OP_TMA_STORE) || t < 0 || t >= BLK_MAX_TMAPS)
		return;
	if (o->map[t] < 0)
		o->map[t] = o->n++;
	blk_op_set_int(o->c->a, op, "tmap", o->map[t]);
}

void blk_lower_order_tmaps(LowerCtx *c)
{
	BlkLaunch *l = blk_lower_launch(c);
	int n = blk_launch_count(l, BLK_ARG_TMAP);
	if (!n)
		return;
	TmapOrder o = { .c = c };
	memset(o.map, -1, sizeof o.map);
	blk_lower_walk(c->k->body, first_uses, &o);
	int first = 0;
	while (l->args[first].kind != BLK_ARG_TMAP)
		first++;
	BlkLaunchArg old[BLK_MAX_TMAPS];
	memcpy(old, &l->args[first], sizeof *old * (size_t)n);
	for (int t = 0; t < n; t++)
		if (o.map[t] >= 0)
			l->args[first + o.map[t]] = old[t];
	/* the maps nothing uses any more leave the list */
	memmove(&l->args[first + o.n], &l->args[first + n], sizeof *l->args * (size_t)(l->nargs - first - n));
	l->nargs -= n - o.n;
}

bool blk_lower_note_tmap(LowerCtx *c, BlkOp *op)
{
	bool load = op->kind == BLK_OP_TMA_LOAD;
	int pi = blk_lower_ref_param(op->operands[load ? 3 : 1]);
	const BlkType *slot = &op->operands[0]->type;
	int swz = slot->layout ? slot->layout->swz : 0;
	int box[2] = { swz / blk_dtype_size(slot->dtype), (int)blk_lower_dim(slot->dims[0]) };
	int mc = (int)blk_op_int(op, "multicast", 0);
	if (mc > 1) /* each CTA of the cluster copies its share of the rows */
		box[1] /= mc;
	int t = blk_launch_tmap(c->a, blk_lower_launch(c), pi, box, swz, blk_op_int(op, "trans", 0) != 0,
	                        blk_lower_tma_rows(&c->k->params[pi]));
	if (t < 0) {
		blk_error(c->d, op->loc, "kernel %s: more than %d tensor maps", c->k->name, BLK_MAX_TMAPS);
		return false;
	}
	blk_op_set_int(c->a, op, "tmap", t);
	return true;
}
