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
 * grouped order); where tiles differ in work, y and z go as one axis
 * inside the groups (tile_of_mixed).  With warp specialization the
 * producer then runs into the next tile's slabs while the consumers store
 * this tile's results.
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
	if (strcmp(c->arch, "sm_90a") != 0 || c->nthreads % 128 || T <= blk_lower_sms(c))
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

/* x and y of tile r of a g0 x g1 plane: x in groups of GROUP_M (the last
 * group may be shorter), y fastest inside a group. */
static void grouped(BlkBuilder *b, BlkLoc loc, BlkValue *r, BlkValue *g0, BlkValue *g1, BlkValue **xyz)
{
	BlkValue *per = bin(b, BLK_OP_MUL, loc, g1, blk_lower_i32(b, loc, GROUP_M));
	BlkValue *group = bin(b, BLK_OP_FLOORDIV, loc, r, per); /* one builder call an argument: a fixed op order */
	BlkValue *first = bin(b, BLK_OP_MUL, loc, group, blk_lower_i32(b, loc, GROUP_M));
	BlkValue *left = bin(b, BLK_OP_SUB, loc, g0, first);
	BlkValue *rows = bin(b, BLK_OP_MIN, loc, left, blk_lower_i32(b, loc, GROUP_M));
	BlkValue *in = bin(b, BLK_OP_MOD, loc, r, per);
	xyz[0] = bin(b, BLK_OP_ADD, loc, first, bin(b, BLK_OP_MOD, loc, in, rows));
	xyz[1] = bin(b, BLK_OP_FLOORDIV, loc, in, rows);
}

/* The CUDA grid coordinates of tile t in a grid of g0 x g1 (x, y): z
 * slowest; within a z, grouped. */
static void tile_of(BlkBuilder *b, BlkLoc loc, BlkValue *t, BlkValue *g0, BlkValue *g1, BlkValue **xyz)
{
	BlkValue *plane = bin(b, BLK_OP_MUL, loc, g0, g1);
	xyz[2] = bin(b, BLK_OP_FLOORDIV, loc, t, plane);
	grouped(b, loc, bin(b, BLK_OP_MOD, loc, t, plane), g0, g1, xyz);
}

/* tile_of where tiles differ in work (a loop bound computed from a
 * program id: causal attention's key loop ends at the diagonal): y and z
 * walked as one axis of g1 * g2 inside x's groups.  With z slowest, a
 * plane of g0 * g1 tiles near a multiple of the CTAs' stride (128 tiles a
 * head against 132 CTAs) gave each CTA tiles from the same few x groups
 * -- some CTAs only short ones, others only long ones; so every CTA's
 * tiles stride over all of x's groups, as a 2-D grid's do. */
static void tile_of_mixed(BlkBuilder *b, BlkLoc loc, BlkValue *t, BlkValue *g0, BlkValue *g1, BlkValue *g2,
                          BlkValue **xyz)
{
	grouped(b, loc, t, g0, bin(b, BLK_OP_MUL, loc, g1, g2), xyz);
	BlkValue *yz = xyz[1];
	xyz[1] = bin(b, BLK_OP_MOD, loc, yz, g1);
	xyz[2] = bin(b, BLK_OP_FLOORDIV, loc, yz, g1);
}

/* Tiles of f's kernel differ in work: f's bounds are computed from a
 * program id, and the grid has a z. */
static bool unequal_tiles(LowerCtx *c, const BlkOp *f)
{
	int64_t z;
	const BlkSym *g2 = blk_lower_launch(c)->grid[2];
	if (!g2 || (blk_sym_is_const(g2, &z) && z == 1))
		return false;
	return blk_lower_computed_from(c->a, f->operands[0], BLK_OP_PROGRAM_ID, -1) ||
	       blk_lower_computed_from(c->a, f->operands[1], BLK_OP_PROGRAM_ID, -1);
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
		int ca = a >= 0 && a < c->k->grid_rank ? blk_lower_launch(c)->axis[a] : -1;
		if (ca < 0 || ca > 2)
			blk_die("lower: persist: a program id of axis %d", a);
		blk_replace_uses(r, op->results[0], xyz[ca]);
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
	tile_of(&b, loc, pid, extent(c, &b, loc, 0), extent(c, &b, loc, 1), xyz);
	replace_pids(c, c->k->body, xyz, pid->def);
	const BlkSym *t = blk_sym_binary(c->a, BLK_SYM_MUL, l->grid[0], l->grid[1]);
	l->grid[0] = blk_sym_binary(c->a, BLK_SYM_MUL, t, l->grid[2]);
	l->grid[1] = l->grid[2] = blk_sym_const(c->a, 1);
	return true;
}

/* Whether v's value depends on a program id of kernel axis a. */
static bool depends_on_axis(LowerCtx *c, const BlkValue *v, int a)
{
	return blk_lower_computed_from(c->a, v, BLK_OP_PROGRAM_ID, a);
}

/* A dot's result of fewer elements than this does not pair its CTAs: a
 * k-step of a 64x128 tile is too short to hide the other CTA's release of
 * a slot (run 185: 6-9 % slower paired, 128x128 and larger level or
 * faster). */
enum { PAIR_MIN_TILE = 128 * 128 };

/* The bytes of the slabs the programs along kernel axis a share: loads
 * in f's body of 2-D arrays, straight into a dot (or through its
 * transpose) of a tile of PAIR_MIN_TILE elements or more, whose Ref and
 * indices do not depend on axis a. */
static double shared_slab(LowerCtx *c, const BlkOp *f, int a)
{
	double bytes = 0;
	for (const BlkOp *op = f->regions[0]->first; op; op = op->next) {
		const BlkType *t = op->kind == BLK_OP_DOT ? &op->results[0]->type : NULL;
		int64_t m, n;
		if (!t || t->rank != 2 || !blk_sym_is_const(t->dims[0], &m) || !blk_sym_is_const(t->dims[1], &n) ||
		    m * n < PAIR_MIN_TILE)
			continue;
		for (int o = 0; o < 2; o++) {
			const BlkOp *ld = op->operands[o]->def;
			if (ld && ld->kind == BLK_OP_TRANSPOSE)
				ld = ld->operands[0]->def;
			int pi = ld && ld->kind == BLK_OP_LOAD ? blk_lower_ref_param(ld->operands[0]) : -1;
			if (pi < 0 || pi >= c->k->nparams || c->k->params[pi].rank != 2 || ld->parent != f->regions[0])
				continue;
			bool own = false;
			for (int i = 0; i < ld->noperands && !own; i++)
				own = depends_on_axis(c, ld->operands[i], a);
			const BlkType *lt = &ld->results[0]->type;
			int64_t r, k;
			if (!own && lt->rank == 2 && blk_sym_is_const(lt->dims[0], &r) && blk_sym_is_const(lt->dims[1], &k))
				bytes += (double)(r * k * blk_dtype_size(lt->dtype));
		}
	}
	return bytes;
}

/* CTAs in pairs along CUDA axis x or y (a cluster of 2 CTAs: along x the
 * tiles (2i, y) and (2i+1, y), which share the slabs that do not depend on
 * x -- B of a matmul --, along y (x, 2j) and (x, 2j+1), sharing A's; which
 * warp_spec.c multicasts): for a constant grid whose extent along that
 * axis and persistent CTA count are even, and a slab to share -- with
 * loop bounds the two tiles agree on, since both CTAs step through each
 * other's copies.  (Ping-pong programs too: both CTAs' programs take the
 * same tiles in the same order.)  The axis sharing more bytes, x on a
 * tie; -1 for none. */
static int pairs(LowerCtx *c, const BlkOp *f, int64_t T)
{
	const BlkLaunch *l = blk_lower_launch(c);
	if (!blk_launch_grid_static(l) || (T < blk_lower_sms(c) ? T : blk_lower_sms(c)) % 2)
		return -1;
	int best = -1;
	double most = 0;
	for (int a = 0; a < c->k->grid_rank; a++) {
		int64_t g;
		int ca = l->axis[a];
		if (ca < 0 || ca > 1 || !blk_sym_is_const(l->grid[ca], &g) || g % 2)
			continue;
		bool same = true;
		for (int i = 0; i < 3 && same; i++)
			same = !depends_on_axis(c, f->operands[i], a);
		double bytes = same ? shared_slab(c, f, a) : 0;
		if (bytes > most || (bytes == most && bytes > 0 && ca == 0))
			most = bytes, best = ca;
	}
	return best;
}

/* A scratch Ref is still in use (a seq axis's scratch persists across
 * its iterations; seq_loop.c and canonicalize's scratch-carry turn the
 * Pallas accumulator into a loop carry, which a persistent CTA's tiles
 * may share a loop with). */
static bool uses_scratch(const BlkKernel *k)
{
	for (int i = 0; i < k->nparams && i < k->body->nargs; i++)
		if (k->params[i].access == BLK_ACCESS_SCRATCH && blk_lower_uses(k->body, k->body->args[i]))
			return true;
	return false;
}

bool blk_lower_persist(LowerCtx *c)
{
	int parallel = 0;
	for (int a = 0; a < c->k->grid_rank; a++)
		parallel += !c->k->grid_seq[a];
	if (parallel > 3) /* axes folded into CUDA z: kept as blockspec.c maps them */
		return true;
	for (int a = 0; a < c->k->grid_rank; a++)
		if (c->k->grid_seq[a] && uses_scratch(c->k))
			return true; /* a tile's scratch must not be another's */
	int64_t T = cuda_grid(c);
	bool plain = false;
	const BlkOp *f = tile_loop(c, T, &plain);
	if (!f)
		return true;
	if (plain)
		return group_programs(c);
	int along = pairs(c, f, T), cl = along >= 0 ? 2 : 1;
	bool mixed = unequal_tiles(c, f); /* before the body moves into the tile loop */
	BlkRegion *body = c->k->body;
	BlkLoc loc = c->k->loc;
	BlkOp *first = body->first;
	BlkBuilder b;
	blk_builder_before(&b, c->a, first);
	BlkType i32 = blk_type_scalar(BLK_I32);
	BlkValue *pid = blk_build1(&b, BLK_OP_PROGRAM_ID, loc, i32, 0, NULL);
	blk_op_set_int(c->a, pid->def, "axis", x_axis(c));
	int64_t P = T < blk_lower_sms(c) ? T : blk_lower_sms(c);
	BlkValue *ops[3] = { pid, NULL, NULL }, *rank = NULL;
	BlkLaunch *l = blk_lower_launch(c);
	l->persist = blk_lower_sms(c); /* the launch: P = min(T, SMs) CTAs */
	if (cl > 1) { /* a cluster walks the pairs of tiles: T / 2 of them, P / 2 clusters */
		l->cluster = cl;
		rank = blk_build1(&b, BLK_OP_CLUSTER_RANK, loc, i32, 0, NULL);
		ops[0] = bin(&b, BLK_OP_FLOORDIV, loc, pid, blk_lower_i32(&b, loc, cl));
		T /= cl, P /= cl;
	}
	if (!blk_launch_grid_static(l)) { /* T = the grid's programs, known at launch */
		BlkValue *t01 = bin(&b, BLK_OP_MUL, loc, extent(c, &b, loc, 0), extent(c, &b, loc, 1));
		ops[1] = bin(&b, BLK_OP_MUL, loc, t01, extent(c, &b, loc, 2));
		ops[2] = bin(&b, BLK_OP_MIN, loc, ops[1], blk_lower_i32(&b, loc, blk_lower_sms(c)));
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
	if (rank) { /* the pair's first tile along the paired axis, and this CTA's of the two */
		int64_t g[2];
		blk_sym_is_const(l->grid[0], &g[0]);
		blk_sym_is_const(l->grid[1], &g[1]);
		g[along] /= cl;
		tile_of(&in, loc, t, blk_lower_i32(&in, loc, g[0]), blk_lower_i32(&in, loc, g[1]), xyz);
		xyz[along] = bin(&in, BLK_OP_ADD, loc, bin(&in, BLK_OP_MUL, loc, xyz[along], blk_lower_i32(&in, loc, cl)),
		                 rank);
	} else if (mixed)
		tile_of_mixed(&in, loc, t, extent(c, &in, loc, 0), extent(c, &in, loc, 1), extent(c, &in, loc, 2), xyz);
	else
		tile_of(&in, loc, t, extent(c, &in, loc, 0), extent(c, &in, loc, 1), xyz);
	replace_pids(c, lb, xyz, NULL);
	blk_builder_at_end(&in, c->a, lb);
	blk_build(&in, BLK_OP_YIELD, loc, 0, NULL, 0, NULL, 0);
	return true;
}
