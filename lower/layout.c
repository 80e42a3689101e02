/* layout.c - blocked layouts: choice, coordinates, text (see layout.h). */
#include "layout.h"

#include <string.h>

int blk_pow2ceil(int n)
{
	int p = 1;
	while (p < n)
		p *= 2;
	return p;
}

static void layout_init(BlkLayout *l, int rank, const int *shape, int nthreads)
{
	memset(l, 0, sizeof *l);
	l->rank = rank;
	l->nthreads = nthreads;
	for (int d = 0; d < rank; d++) {
		l->shape[d] = shape[d];
		l->pad[d] = blk_pow2ceil(shape[d]);
		l->spt[d] = 1;
		l->thr[d] = 1;
	}
}

/* Hands out threads, dims from the last to the first, never more than a
 * dim can use: a small tile leaves threads over (replicas). */
static void give_threads(BlkLayout *l, int left)
{
	for (int d = l->rank - 1; d >= 0 && left > 1; d--) {
		int room = l->pad[d] / l->spt[d];
		int t = room < left ? room : left;
		l->thr[d] = t;
		left /= t;
	}
}

BlkLayout blk_layout_blocked(int rank, const int *shape, BlkDType dt, int nthreads)
{
	BlkLayout l;
	layout_init(&l, rank, shape, nthreads);
	if (rank == 0)
		return l;
	int vec = 16 / blk_dtype_size(dt);
	if (vec > 8)
		vec = 8;
	int last = rank - 1;
	l.spt[last] = l.pad[last] < vec ? l.pad[last] : vec;
	/* Few rows of a wide tile: keep a warp on one row only if the row
	 * has room for 32 threads; give_threads does exactly that. */
	give_threads(&l, nthreads);
	return l;
}

/* Threads go to whichever dim has more micro-tiles left per thread, so
 * the thread grid stays square-ish and each thread's block small. */
BlkLayout blk_layout_dot(const int *shape, int nthreads)
{
	BlkLayout l;
	layout_init(&l, 2, shape, nthreads);
	l.dot = true;
	for (int d = 0; d < 2; d++)
		l.spt[d] = l.pad[d] < 4 ? l.pad[d] : 4;
	int left = nthreads;
	while (left > 1) {
		int r0 = l.pad[0] / (l.spt[0] * l.thr[0]), r1 = l.pad[1] / (l.spt[1] * l.thr[1]);
		if (r0 <= 1 && r1 <= 1)
			break;
		if (r1 >= r0)
			l.thr[1] *= 2;
		else
			l.thr[0] *= 2;
		left /= 2;
	}
	return l;
}

int blk_layout_owners(const BlkLayout *l)
{
	int n = 1;
	for (int d = 0; d < l->rank; d++)
		n *= l->thr[d];
	return n;
}

int blk_layout_regs_along(const BlkLayout *l, int d)
{
	return l->pad[d] / l->thr[d];
}

int blk_layout_nregs(const BlkLayout *l)
{
	int n = 1;
	for (int d = 0; d < l->rank; d++)
		n *= blk_layout_regs_along(l, d);
	return n;
}

int blk_layout_coord(const BlkLayout *l, int d, int rd, int td)
{
	return (rd / l->spt[d]) * l->spt[d] * l->thr[d] + td * l->spt[d] + rd % l->spt[d];
}

void blk_layout_reg_split(const BlkLayout *l, int r, int *rd)
{
	for (int d = l->rank - 1; d >= 0; d--) {
		int n = blk_layout_regs_along(l, d);
		rd[d] = r % n;
		r /= n;
	}
}

bool blk_layout_equal(const BlkLayout *a, const BlkLayout *b)
{
	if (a->rank != b->rank || a->nthreads != b->nthreads)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->shape[d] != b->shape[d] || a->spt[d] != b->spt[d] || a->thr[d] != b->thr[d])
			return false;
	return true;
}

static void put_list(char *buf, size_t n, const char *name, const int *v, int rank)
{
	size_t at = strlen(buf);
	at += (size_t)snprintf(buf + at, n - at, "%s=[", name);
	for (int d = 0; d < rank && at < n; d++)
		at += (size_t)snprintf(buf + at, n - at, "%s%d", d ? "," : "", v[d]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
}

/* Splits the linear thread counts into Triton's threads-per-warp and
 * warps-per-CTA (lanes are the fastest part of the thread index). */
static void split_warps(const BlkLayout *l, int *tpw, int *wpc)
{
	int lanes = 32;
	for (int d = l->rank - 1; d >= 0; d--) {
		tpw[d] = l->thr[d] < lanes ? l->thr[d] : lanes;
		lanes /= tpw[d];
		wpc[d] = l->thr[d] / tpw[d];
	}
	if (l->rank > 0)
		tpw[0] *= lanes; /* lanes left over replicate along dim 0 */
}

const char *blk_layout_str(BlkArena *a, const BlkLayout *l)
{
	if (l->rank == 0)
		return "scalar";
	char buf[256] = "";
	int tpw[BLK_MAX_RANK], wpc[BLK_MAX_RANK];
	split_warps(l, tpw, wpc);
	snprintf(buf, sizeof buf, "%s<", l->dot ? "dot" : "blocked");
	put_list(buf, sizeof buf, "spt", l->spt, l->rank);
	strncat(buf, ", ", sizeof buf - strlen(buf) - 1);
	put_list(buf, sizeof buf, "tpw", tpw, l->rank);
	strncat(buf, ", ", sizeof buf - strlen(buf) - 1);
	put_list(buf, sizeof buf, "wpc", wpc, l->rank);
	strncat(buf, ", ", sizeof buf - strlen(buf) - 1);
	put_list(buf, sizeof buf, "pad", l->pad, l->rank);
	strncat(buf, ">", sizeof buf - strlen(buf) - 1);
	return blk_arena_strdup(a, buf);
}
