/* launch.c - the launch header of a GPU-level kernel (ir.h BlkLaunch).
 *
 * The one place that evaluates a launch's grid: the runtime at each
 * launch, blkc --report and AOT C all call blk_launch_grid, so the grid a
 * kernel was compiled for and the grid it is launched with cannot drift
 * apart.  The argument list keeps ABI order (pointers, tensor maps, sizes,
 * strides) as passes append to it.
 */
#include "ir.h"

#include <string.h>

int blk_kernel_array_index(const BlkKernel *k, int pi)
{
	int ai = 0;
	for (int i = 0; i < pi; i++)
		ai += k->params[i].access != BLK_ACCESS_SCRATCH;
	return ai;
}

bool blk_launch_grid_static(const BlkLaunch *l)
{
	int64_t v;
	for (int i = 0; i < 3; i++)
		if (l->grid[i] && !blk_sym_is_const(l->grid[i], &v))
			return false;
	return true;
}

bool blk_launch_grid(const BlkLaunch *l, const BlkSymEnv *env, unsigned grid[3])
{
	static const BlkSymEnv none = { 0 };
	int64_t g[3] = { 1, 1, 1 };
	for (int i = 0; i < 3; i++)
		if (l->grid[i] && (!blk_sym_eval(l->grid[i], env ? env : &none, &g[i]) || g[i] < 0))
			return false;
	if (g[0] > INT32_MAX || g[1] > 65535 || g[2] > 65535)
		return false;
	if (l->persist > 0) { /* P = min(T, persist) CTAs walk the T tiles */
		int64_t t = g[0] * g[1] * g[2];
		g[0] = t < l->persist ? t : l->persist;
		g[1] = g[2] = t > 0;
	}
	for (int i = 0; i < 3; i++)
		grid[i] = (unsigned)g[i];
	return true;
}

bool blk_launch_cluster_fits(const BlkLaunch *l)
{
	unsigned g[3];
	if (l->cluster < 2)
		return true;
	return blk_launch_grid_static(l) && l->grid[0] && blk_launch_grid(l, NULL, g) && g[0] % (unsigned)l->cluster == 0;
}

int blk_launch_add_arg(BlkArena *a, BlkLaunch *l, const BlkLaunchArg *arg)
{
	int at = l->nargs;
	while (at > 0 && l->args[at - 1].kind > arg->kind)
		at--;
	l->args = blk_arena_grow(a, l->args, (size_t)l->nargs, (size_t)l->nargs + 1, sizeof *l->args);
	memmove(&l->args[at + 1], &l->args[at], sizeof *l->args * (size_t)(l->nargs - at));
	l->args[at] = *arg;
	l->nargs++;
	return at;
}

const BlkLaunchArg *blk_launch_nth(const BlkLaunch *l, BlkArgKind kind, int i)
{
	for (int j = 0; j < l->nargs; j++)
		if (l->args[j].kind == kind && i-- == 0)
			return &l->args[j];
	return NULL;
}

int blk_launch_count(const BlkLaunch *l, BlkArgKind kind)
{
	int n = 0;
	for (int j = 0; j < l->nargs; j++)
		n += l->args[j].kind == kind;
	return n;
}

int blk_launch_find_tmap(const BlkLaunch *l, int param, const int box[2], int swizzle, bool trans)
{
	int n = 0;
	for (int j = 0; j < l->nargs; j++) {
		const BlkLaunchArg *t = &l->args[j];
		if (t->kind != BLK_ARG_TMAP)
			continue;
		if (t->param == param && t->box[0] == box[0] && t->box[1] == box[1] && t->swizzle == swizzle &&
		    t->trans == trans)
			return n;
		n++;
	}
	return -1;
}

int blk_launch_tmap(BlkArena *a, BlkLaunch *l, int param, const int box[2], int swizzle, bool trans, int rows)
{
	int t = blk_launch_find_tmap(l, param, box, swizzle, trans), n = blk_launch_count(l, BLK_ARG_TMAP);
	if (t >= 0 || n == BLK_MAX_TMAPS)
		return t;
	BlkLaunchArg g = { .kind = BLK_ARG_TMAP, .param = param, .box = { box[0], box[1] }, .swizzle = swizzle,
		            .trans = trans, .rows = rows };
	blk_launch_add_arg(a, l, &g);
	return n;
}

static const BlkSym *copy_sym(BlkArena *a, const BlkSym *s)
{
	if (!s)
		return NULL;
	if (s->kind == BLK_SYM_CONST)
		return blk_sym_const(a, s->value);
	if (s->kind == BLK_SYM_VAR)
		return blk_sym_var(a, blk_arena_strdup(a, s->name));
	return blk_sym_binary(a, s->kind, copy_sym(a, s->a), copy_sym(a, s->b));
}

BlkLaunch *blk_launch_copy(BlkArena *a, const BlkLaunch *l)
{
	BlkLaunch *c = BLK_NEW(a, BlkLaunch);
	*c = *l;
	for (int i = 0; i < 3; i++)
		c->grid[i] = copy_sym(a, l->grid[i]);
	for (int i = 0; i < BLK_MAX_GRID; i++)
		c->div[i] = copy_sym(a, l->div[i]), c->mod[i] = copy_sym(a, l->mod[i]);
	c->args = BLK_NEW_N(a, BlkLaunchArg, l->nargs + 1);
	memcpy(c->args, l->args, sizeof *l->args * (size_t)l->nargs);
	for (int j = 0; j < l->nargs; j++)
		if (l->args[j].size)
			c->args[j].size = blk_arena_strdup(a, l->args[j].size);
	return c;
}
