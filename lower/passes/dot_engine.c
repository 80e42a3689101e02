/* dot_engine.c - which hardware runs each dot, decided once.
 *
 * Requires: shapes constant (specialize.c).  Produces: every `dot` gets
 * attr engine, read by every later pass instead of re-deciding:
 *   "mma"  tensor cores (mma.sync, emit_mma.c): both operands f16 or both
 *          bf16 (m16n8k16), or both 8-bit (m16n8k32: i8/u8, exact i32
 *          sums; fp8 on sm_89 and newer, f32 sums), and the [M, N] tile
 *          and K fit the mma tiling over the kernel's warps (ir/layout.h,
 *          blk_layout_mma_fits);
 *   "wgmma" Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a
 *          only, emit_wgmma.c): as "mma" -- or both operands 8-bit (i8/u8,
 *          exact i32 sums; fp8, f32 sums; both contiguous along k) -- when the [M, N]
 *          tile is whole m64 blocks of the kernel's warpgroups and N a
 *          power of two from 16 to 256 (blk_layout_wgmma_fits), K whole
 *          wgmma steps (k16; k32 for 8 bits); A may come from another wgmma
 *          dot's result (attention's P: its accumulator registers are
 *          A's fragments, emit_wgmma.c);
 *   "fma"  the SIMT path (emit_dot.c): exact f32 FMAs in k order, bit-equal
 *          to the interpreter -- f32 operands, or shapes mma cannot tile;
 *          a b that is transpose(w) becomes w with attr b_trans (staged
 *          transposed, no conversion through shared memory).
 * An engine already set (IR text) is kept when the dot can run on it and
 * refused with the reason when it cannot.  An mma dot also gets attr
 * warps_n, its warp grid's width (ir/layout.h, blk_layout_mma_grid): 1 --
 * every warp owns whole rows -- when the result's rows are reduced or its
 * accumulator is scaled by a row vector (attention's softmax), so those
 * row vectors never leave the threads holding the rows; otherwise the grid
 * with the fewest ldmatrix per k16 step.  A dot whose instruction needs
 * PTX ISA 8.4 raises the launch header's isa.
 */
#include "lower/lower_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Both operands f16 or both bf16: what mma.sync m16n8k16 multiplies. */
static bool tc_dtypes(const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	return a->dtype == b->dtype && (a->dtype == BLK_F16 || a->dtype == BLK_BF16);
}

/* Both operands 8-bit integers (i8/u8, either mix: i32 sums) or both fp8
 * (e4m3/e5m2, either mix: f32 sums). */
static bool byte_dtypes(const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	return (blk_dtype_is_byte(a->dtype) && blk_dtype_is_byte(b->dtype)) ||
	       (blk_dtype_is_fp8(a->dtype) && blk_dtype_is_fp8(b->dtype));
}

/* NULL when dot can run on mma.sync (m16n8k16 for 16-bit operands,
 * m16n8k32 for 8-bit ones), else why not. */
static const char *mma_refusal(const LowerCtx *c, const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	if (!tc_dtypes(dot) && !byte_dtypes(dot))
		return "its operands are not both f16, both bf16, both 8-bit integers or both fp8";
	if (blk_dtype_is_fp8(a->dtype) && atoi(c->arch + 3) < 89)
		return "fp8 mma.sync needs sm_89 or newer";
	if (!blk_layout_mma_fits((int)blk_lower_dim(a->dims[0]), (int)blk_lower_dim(b->dims[1]),
	                         (int)blk_lower_dim(a->dims[1]), c->nthreads, blk_dtype_size(a->dtype)))
		return blk_dtype_size(a->dtype) == 1
		               ? "its shape does not fit the mma.sync tiling over the kernel's warps (K a multiple of 32)"
		               : "its shape does not fit the mma.sync tiling over the kernel's warps";
	return NULL;
}

/* NULL when dot can run on wgmma, else why not.  8-bit operands (i8/u8,
 * an i32 result; f8e4m3/f8e5m2, an f32 one) are read contiguous along k (wgmma transposes only
 * 16-bit types): the pipeliner copies them by TMA or cp.async only as
 * a [M, K] and b as the transpose of an [N, K] tile (`x @ w.T`, the
 * layout of quantized weights); other orientations are staged through
 * registers (dot_stage.c). */
static const char *wgmma_refusal(const LowerCtx *c, const BlkOp *dot)
{
	const BlkType *a = &dot->operands[0]->type, *b = &dot->operands[1]->type;
	bool bytes = byte_dtypes(dot);
	if (!tc_dtypes(dot) && !bytes)
		return "its operands are not both f16, both bf16 or both 8-bit";
	if (strcmp(c->arch, "sm_90a") != 0)
		return "wgmma needs --arch=sm_90a";
	int ks = blk_layout_tc_k(blk_dtype_size(a->dtype));
	if ((int)blk_lower_dim(a->dims[1]) % ks ||
	    !blk_layout_wgmma_fits((int)blk_lower_dim(a->dims[0]), (int)blk_lower_dim(b->dims[1]), c->nthreads))
		return bytes ? "its shape is not whole m64 blocks of the kernel's warpgroups with N a power of two "
		               "from 16 to 256 and K a multiple of 32"
		             : "its shape is not whole m64 blocks of the kernel's warpgroups with N a power of two "
		               "from 16 to 256 and K a multiple of 16";
	return NULL;
}

static bool is_reduce(BlkOpKind k)
{
	return k == BLK_OP_REDUCE_SUM || k == BLK_OP_REDUCE_MAX || k == BLK_OP_REDUCE_MIN;
}

/* v (rank 2) reaches a reduction over its rows' axis through elementwise
 * ops of the same region. */
static bool rows_reduced(const BlkValue *v, int depth)
{
	if (depth > BLK_LOWER_CHAIN_DEPTH || !v->def)
		return false;
	for (const BlkOp *op = v->def->next; op; op = op->next)
		for (int i = 0; i < op->noperands; i++) {
			if (op->operands[i] != v)
				continue;
			if (is_reduce(op->kind) && blk_op_int(op, "axis", 0) == 1)
				return true;
			if ((blk_op_flags(op->kind) & BLK_OPF_ELEMENTWISE) && op->nresults == 1 &&
			    rows_reduced(op->results[0], depth + 1))
				return true;
		}
	return false;
}

/* v is, through elementwise ops, scaled by a row vector: a broadcast of
 * expand_dims(x, 1). */
static bool row_scaled(const BlkValue *v, int depth)
{
	const BlkOp *d = v->def;
	if (depth > BLK_LOWER_CHAIN_DEPTH || !d || !(blk_op_flags(d->kind) & BLK_OPF_ELEMENTWISE))
		return false;
	for (int i = 0; i < d->noperands; i++) {
		const BlkOp *b = d->operands[i]->def;
		if (b && b->kind == BLK_OP_BROADCAST && b->operands[0]->def &&
		    b->operands[0]->def->kind == BLK_OP_EXPAND_DIMS && blk_op_int(b->operands[0]->def, "axis", 0) == 1)
			return true;
		if (row_scaled(d->operands[i], depth + 1))
			return true;
	}
	return false;
}

static int pick_wn(const LowerCtx *c, const BlkOp *dot)
{
	int M = (int)blk_lower_dim(dot->operands[0]->type.dims[0]);
	int N = (int)blk_lower_dim(dot->operands[1]->type.dims[1]);
	bool rows = rows_reduced(dot->results[0], 0) || (dot->noperands > 2 && row_scaled(dot->operands[2], 0));
	if (rows && blk_layout_mma_grid_fits(M, N, c->nthreads, 1))
		return 1;
	return blk_layout_mma_wn(M, N, c->nthreads);
}

/* An fma dot whose b is transpose(w), w used for nothing else: the dot
 * takes w itself (attr b_trans) and stages it transposed (emit_dot.c),
 * instead of a transpose through shared memory every slab. */
static void take_transpose(LowerCtx *c, BlkOp *dot)
{
	BlkOp *t = dot->operands[1]->def;
	if (!t || !blk_transpose_plain(t) || t->parent != dot->parent ||
	    blk_lower_uses(dot->parent, dot->operands[1]) != 1 || blk_op_attr(dot, "b_trans"))
		return;
	dot->operands[1] = t->operands[0];
	blk_op_set_int(c->a, dot, "b_trans", 1);
	blk_op_erase(t);
}

typedef struct Pick {
	LowerCtx *c;
	bool ok;
} Pick;

static void pick(void *ctx, BlkOp *op)
{
	Pick *p = ctx;
	if (op->kind != BLK_OP_DOT)
		return;
	const BlkAttr *e = blk_op_attr(op, "engine");
	const char *why = mma_refusal(p->c, op);
	if (!e) {
		const char *wg_why = wgmma_refusal(p->c, op);
		bool wg = !wg_why;
		blk_op_set_string(p->c->a, op, "engine", wg ? "wgmma" : why ? "fma" : "mma");
		if (!wg && why && (tc_dtypes(op) || byte_dtypes(op))) {
			/* tensor-core dtypes on the SIMT path: a cliff, said where --dump-after and --report show it */
			char text[512];
			snprintf(text, sizeof text, "wgmma: %s; mma: %s", wg_why, why);
			blk_op_set_string(p->c->a, op, "fallback", text);
		}
		if (!why && !wg)
			blk_op_set_int(p->c->a, op, "warps_n", pick_wn(p->c, op));
		else if (!wg)
			take_transpose(p->c, op);
		return;
	}
	if (e->kind == BLK_ATTR_STRING && strcmp(e->s, "fma") == 0)
		return;
	if (e->kind == BLK_ATTR_STRING && strcmp(e->s, "wgmma") == 0) {
		why = wgmma_refusal(p->c, op);
		if (why) {
			blk_error(p->c->d, op->loc, "dot: engine \"wgmma\" cannot run this dot: %s", why);
			p->ok = false;
		}
		return;
	}
	if (e->kind != BLK_ATTR_STRING || strcmp(e->s, "mma") != 0) {
		blk_error(p->c->d, op->loc, "dot: engine must be \"wgmma\", \"mma\" or \"fma\"");
		p->ok = false;
	} else if (why) {
		blk_error(p->c->d, op->loc, "dot: engine \"mma\" cannot run this dot: %s", why);
		p->ok = false;
	} else if (!blk_op_attr(op, "warps_n")) {
		blk_op_set_int(p->c->a, op, "warps_n", pick_wn(p->c, op));
	}
}

/* fp8 mma.sync (m16n8k32 .e4m3/.e5m2, sm_89 and up) and wgmma of i8 with
 * u8 are PTX ISA 8.4: the launch header asks for it only where a dot runs
 * one, so the rest keep the arch's lowest ISA. */
static void note_isa(void *ctx, BlkOp *op)
{
	LowerCtx *c = ctx;
	if (op->kind != BLK_OP_DOT)
		return;
	BlkDType a = op->operands[0]->type.dtype, b = op->operands[1]->type.dtype;
	if ((blk_dtype_is_fp8(a) && blk_lower_dot_mma(op)) || (blk_dtype_is_byte(a) && a != b && blk_lower_dot_wgmma(op))) {
		BlkLaunch *l = blk_lower_launch(c);
		l->isa = l->isa > 84 ? l->isa : 84;
	}
}

bool blk_lower_dot_engine(LowerCtx *c)
{
	Pick p = { c, true };
	blk_lower_walk(c->k->body, pick, &p);
	if (p.ok)
		blk_lower_walk(c->k->body, note_isa, c);
	return p.ok;
}

static const char *engine_of(const BlkOp *dot)
{
	const BlkAttr *e = blk_op_attr(dot, "engine");
	if (!e || e->kind != BLK_ATTR_STRING)
		blk_die("lower: a dot has no engine (dot-engine has not run)");
	return e->s;
}

bool blk_lower_dot_mma(const BlkOp *dot)
{
	return strcmp(engine_of(dot), "mma") == 0;
}

bool blk_lower_dot_wgmma(const BlkOp *dot)
{
	return strcmp(engine_of(dot), "wgmma") == 0;
}

bool blk_lower_dot_tc(const BlkOp *dot)
{
	return blk_lower_dot_mma(dot) || blk_lower_dot_wgmma(dot);
}

int blk_lower_dot_warps_n(const LowerCtx *c, const BlkOp *dot)
{
	int64_t wn = blk_op_int(dot, "warps_n", 0);
	int M = (int)blk_lower_dim(dot->results[0]->type.dims[0]);
	int N = (int)blk_lower_dim(dot->results[0]->type.dims[1]);
	if (wn > 0 && wn <= 64 && blk_layout_mma_grid_fits(M, N, c->nthreads, (int)wn))
		return (int)wn;
	return blk_layout_mma_wn(M, N, c->nthreads);
}
