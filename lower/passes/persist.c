/* persist.c - a persistent grid: one CTA per SM walks the output tiles.
 *
 * Requires: block refs lowered (blockspec.c), shapes constant, dot engines
 * chosen.  Applies on sm_90a to a kernel of whole warpgroups, every grid
 * axis parallel, more programs T than the GPU has SMs (the runtime's
 * device, BlkLowerOptions.num_sms; else BLK_LOWER_SMS), and a loop at the
 * top of its body running a wgmma dot (the loops that warp_spec.c
 * specializes).  Produces:
 *
 *   %pid = program_id {axis = 0}
 *   for %t = %pid to T step P {            -- P = min(T, SMs) CTAs launched
 *     (x, y, z) = tile(%t)                 -- grouped order, below
 *     ...the body, program_id {axis = a} replaced by its coordinate...
 *   }
 *
 * and the launch header's `persist SMs`: the launch runs (P, 1, 1) CTAs
 * over the grid's T programs (ir/launch.c).  Tiles go in groups of
 * GROUP_M rows of the CUDA grid's x: the programs running at once share
 * their A rows and, a group at a time, their B columns in L2 (Triton's
 * grouped order).  With warp specialization the producer then runs into
 * the next tile's slabs while the consumers store this tile's results.
 * num_programs keeps meaning the kernel's own grid.
 *
 * A loop schedule.c gave to plain programs keeps one CTA a tile, several
 * an SM, but in the same grouped order: no loop, (x, y, z) = tile(%pid),
 * and the launch header's grid becomes the T programs along x.
 */
#include "lower/lower_int.h"

#include <string.h>

enum { GROUP_M = 8 };

static bool has_wgmma(const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next)
		if (op->kind == BLK_OP_DOT && blk_op_attr(op, "engine") && blk_lower_dot_wgmma(op))
			return true;
	return false;
}

static int sms(const LowerCtx *c)
{
	return c->opt->num_sms > 0 ? c->opt->num_sms : BLK_LOWER_SMS;
}

/* Whether r holds a loop that stores (copying work, which varies from
 * program to program); a loop of signals alone is none. */
static bool copy_loop(const BlkKernel *k, const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		if (op->kind == BLK_OP_FOR && blk_lower_writes(k, op->regions[0], -1))
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (copy_loop(k, op->regions[i]))
				return true;
	}
	return false;
}

/* The top-level loop of wgmma dots the tiles are for: persistent unless
 * schedule.c gave it to plain programs (*plain).  Not in a kernel that
 * signals where a loop that stores comes before it (an all-gather's pushes, in some
 * programs only): a persistent CTA would run that work before every later
 * tile of its own, while a CTA a tile lets the others take those tiles
 * (run 162: the all-gather + matmul 15% slower persistent). */
static const BlkOp *tile_loop(const LowerCtx *c, int64_t T, bool *plain)
{
	if (strcmp(c->arch, "sm_90a") != 0 || c->nthreads % 128 || T <= sms(c))
		return NULL;
	bool signals = blk_kernel_signals(c->k);
	for (const BlkOp *op = c->k->body->first; op; op = op->next) {
		if (op->kind == BLK_OP_FOR && has_wgmma(op->regions[0])) {
			*plain = blk_lower_plain_schedule(op);
			return op;
		}
		for (int i = 0; signals && i < op->nregions; i++)
			if ((op->kind == BLK_OP_FOR && blk_lower_writes(c->k, op->regions[i], -1)) ||
			    copy_loop(c->k, op->regions[i]))
				return NULL;
	}
	return NULL;
}

static BlkValue *bin(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkValue *x, BlkValue *y)
{
	int64_t u, v;
	if (k == BLK_OP_MUL && blk_lower_const_int(x, &u) && blk_lower_const_int(y, &v))
		return blk_lower_i32(b, loc, u * v); /* constant grids: the products folded, as before */
	BlkValue *o[2] = { x, y };
	return blk_build1(b, k, loc, blk_type_scalar(BLK_I32), 2, o);
}

/* The grid's extent along CUDA axis a (the launch header's): a constant,
 * or (dynamic sizes) its arithmetic. */
static BlkValue *extent(LowerCtx *c, BlkBuilder *b, BlkLoc loc, int a)
{
	return blk_lower_build_sym(b, loc, blk_lower_launch(c)->grid[a]);
}

/* The CUDA grid coordinates of tile t: z slowest; within a z, x in groups
 * of GROUP_M (the last group may be shorter), y fastest inside a group. */
static void tile_of(LowerCtx *c, BlkBuilder *b, BlkLoc loc, BlkValue *t, BlkValue **xyz)
{
	BlkValue *g0 = extent(c, b, loc, 0);
	BlkValue *g1 = extent(c, b, loc, 1);
	BlkValue *plane = bin(b, BLK_OP_MUL, loc, g0, g1);
	xyz[2] = bin(b, BLK_OP_FLOORDIV, loc, t, plane);
	BlkValue *r = bin(b, BLK_OP_MOD, loc, t, plane);
	BlkValue *per = bin(b, BLK_OP_MUL, loc, g1, blk_lower_i32(b, loc, GROUP_M));
	BlkValue *group = bin(b, BLK_OP_FLOORDIV, loc, r, per); /* one builder call an argument: a fixed op order */
	BlkValue *first = bin(b, BLK_OP_MUL, loc, group, blk_lower_i32(b, loc, GROUP_M));
	BlkValue *left = bin(b, BLK_OP_SUB, loc, g0, first);
	BlkValue *rows = bin(b, BLK_OP_MIN, loc, left, blk_lower_i32(b, loc, GROUP_M));
	BlkValue *in = bin(b, BLK_OP_MOD, loc, r, per);
	xyz[0] = bin(b, BLK_OP_ADD, loc, first, bin(b, BLK_OP_MOD, loc, in, rows));
	xyz[1] = bin(b, BLK_OP_FLOORDIV, loc, in, rows);
}

typedef struct Pids {
	BlkOp **ops;
	int n, cap;
	BlkArena *a;
} Pids;

static void collect_pid(void *ctx, BlkOp *op)
{
	Pids *p = ctx;
	if (op->kind != BLK_OP_PROGRAM_ID)
		return;
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 8;
		p->ops = blk_arena_grow(p->a, p->ops, (size_t)p->n, (size_t)p->cap, sizeof *p->ops);
	}
	p->ops[p->n++] = op;
}

/* The programs of the launch's grid (blockspec.c put each axis on a CUDA
 * axis: the launch header's axes); one of dynamic extent is known at launch only: taken as many, P =
 * min(T, SMs) there. */
static int64_t cuda_grid(LowerCtx *c)
{
	const BlkLaunch *l = blk_lower_launch(c);
	int64_t T = 1, v;
	for (int a = 0; a < 3; a++) {
		if (!l->grid[a] || !blk_sym_is_const(l->grid[a], &v))
			return l->grid[a] ? INT32_MAX : 0;
		T *= v;
	}
	return T;
}

/* The kernel grid axis on CUDA's x: a program id of it reads the CTA's
 * index along x, what a persistent CTA (or a grouped program) starts from. */
static int x_axis(LowerCtx *c)
{
	const BlkLaunch *l = blk_lower_launch(c);
	for (int a = 0; a < c->k->grid_rank; a++)
		if (l->axis[a] == 0)
			return a;
	return 0;
}

/* Replaces every program id of the region by its coordinate in xyz. */
static void replace_pids(LowerCtx *c, BlkRegion *r, BlkValue **xyz, const BlkOp *keep)
{
	Pids pids = { .a = c->a };
	blk_lower_walk(r, collect_pid, &pids);
	for (int i = 0; i < pids.n; i++) { /* every program id, nested ones too */
		BlkOp *op = pids.ops[i];
		int a = (int)blk_op_int(op, "axis", 0);
		if (op == keep)
			continue;
		if (a < 0 || a > 2)
			blk_die("lower: persist: a program id of axis %d", a);
		blk_replace_uses(r, op->results[0], xyz[blk_lower_launch(c)->axis[a]]);
		blk_op_erase(op);
	}
}

/* Plain programs (schedule.c), one CTA a tile, in the same grouped order:
 * the launch's grid becomes its T programs along x, and each program's
 * coordinates come from its index as a persistent CTA's tiles do -- the
 * programs resident at once share their A rows and B columns in L2. */
static bool group_programs(LowerCtx *c)
{
	BlkLaunch *l = blk_lower_launch(c);
	BlkLoc loc = c->k->loc;
	BlkBuilder b;
	blk_builder_before(&b, c->a, c->k->body->first);
	BlkValue *pid = blk_build1(&b, BLK_OP_PROGRAM_ID, loc, blk_type_scalar(BLK_I32), 0, NULL);
	blk_op_set_int(c->a, pid->def, "axis", x_axis(c));
	BlkValue *xyz[3];
	tile_of(c, &b, loc, pid, xyz);
	replace_pids(c, c->k->body, xyz, pid->def);
	const BlkSym *t = blk_sym_binary(c->a, BLK_SYM_MUL, l->grid[0], l->grid[1]);
	l->grid[0] = blk_sym_binary(c->a, BLK_SYM_MUL, t, l->grid[2]);
	l->grid[1] = l->grid[2] = blk_sym_const(c->a, 1);
	return true;
}

bool blk_lower_persist(LowerCtx *c)
{
	if (c->k->grid_rank > 3) /* axes folded into CUDA z: kept as blockspec.c maps them */
		return true;
	for (int a = 0; a < c->k->grid_rank; a++)
		if (c->k->grid_seq[a])
			return true;
	int64_t T = cuda_grid(c);
	bool plain = false;
	if (!tile_loop(c, T, &plain))
		return true;
	if (plain)
		return group_programs(c);
	BlkRegion *body = c->k->body;
	BlkLoc loc = c->k->loc;
	BlkOp *first = body->first;
	BlkBuilder b;
	blk_builder_before(&b, c->a, first);
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *pid = blk_build1(&b, BLK_OP_PROGRAM_ID, loc, i32, 0, NULL);
	blk_op_set_int(c->a, pid->def, "axis", x_axis(c));
	int64_t P = T < sms(c) ? T : sms(c);
	BlkValue *ops[3] = { pid, NULL, NULL };
	BlkLaunch *l = blk_lower_launch(c);
	l->persist = sms(c); /* the launch: P = min(T, SMs) CTAs */
	if (!blk_launch_grid_static(l)) { /* T = the grid's programs, known at launch */
		BlkValue *t01 = bin(&b, BLK_OP_MUL, loc, extent(c, &b, loc, 0), extent(c, &b, loc, 1));
		ops[1] = bin(&b, BLK_OP_MUL, loc, t01, extent(c, &b, loc, 2));
		ops[2] = bin(&b, BLK_OP_MIN, loc, ops[1], blk_lower_i32(&b, loc, sms(c)));
	} else {
		ops[1] = blk_lower_i32(&b, loc, T);
		ops[2] = blk_lower_i32(&b, loc, P);
	}
	BlkOp *loop = blk_build(&b, BLK_OP_FOR, loc, 3, ops, 0, NULL, 1);
	blk_op_set_int(c->a, loop, "unroll", 0);
	BlkRegion *lb = loop->regions[0];
	BlkValue *t = blk_region_add_arg(c->a, lb, i32, "tile");
	blk_lower_move_to_end(first, lb); /* the body, after the tile's coordinates (below) */
	BlkBuilder in;
	blk_builder_before(&in, c->a, lb->first);
	BlkValue *xyz[3];
	tile_of(c, &in, loc, t, xyz);
	replace_pids(c, lb, xyz, NULL);
	blk_builder_at_end(&in, c->a, lb);
	blk_build(&in, BLK_OP_YIELD, loc, 0, NULL, 0, NULL, 0);
	return true;
}
