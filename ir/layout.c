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

int blk_layout_log2(int x)
{
	int n = 0;
	while ((1 << n) < x)
		n++;
	return n;
}

/* Thread-id bits, dims last-fastest from bit 0. */
static void pack_threads(BlkLayout *l)
{
	int at = 0;
	for (int d = l->rank - 1; d >= 0; d--) {
		l->tsh[d] = at;
		at += blk_layout_log2(l->thr[d]);
	}
}

/* Hands out threads, dims from the last to the first, never more than a
 * dim can use (nor more than cap[d]): a small tile leaves threads over. */
static int give_threads(BlkLayout *l, int left, const int *cap)
{
	for (int d = l->rank - 1; d >= 0 && left > 1; d--) {
		int room = l->pad[d] / (l->spt[d] * l->thr[d]);
		if (cap && room > cap[d] / l->thr[d])
			room = cap[d] / l->thr[d];
		int t = room < left ? room : left;
		if (t < 1)
			t = 1;
		l->thr[d] *= t;
		left /= t;
	}
	return left;
}

/* The blocked layout with vec elements a thread along the last dim, and at
 * most lanes threads of a warp across it. */
static BlkLayout blocked_vec(int rank, const int *shape, int vec, int lanes, int nthreads)
{
	BlkLayout l;
	layout_init(&l, rank, shape, nthreads);
	if (rank == 0)
		return l;
	int last = rank - 1;
	l.spt[last] = l.pad[last] < vec ? l.pad[last] : vec;
	/* A row first gets one warp's lanes at most, the warps go to the
	 * rows; only threads left over widen the rows.  A row-wise reduction
	 * then stays inside a warp (shuffles, no shared memory) whenever
	 * there are as many rows as warps, and a warp still reads 32 x 16
	 * contiguous bytes. */
	int cap[BLK_MAX_RANK];
	for (int d = 0; d < rank; d++)
		cap[d] = d == last ? lanes : 1 << 30;
	give_threads(&l, give_threads(&l, nthreads, cap), NULL);
	pack_threads(&l);
	return l;
}

BlkLayout blk_layout_blocked(int rank, const int *shape, BlkDType dt, int nthreads)
{
	int vec = 16 / blk_dtype_size(dt);
	return blocked_vec(rank, shape, vec > 8 ? 8 : vec, 32, nthreads);
}

BlkLayout blk_layout_copy(int rank, const int *shape, BlkDType dt, int nthreads)
{
	return blocked_vec(rank, shape, 16 / blk_dtype_size(dt), 32, nthreads);
}

BlkLayout blk_layout_copy_across(int rank, const int *shape, BlkDType dt, int nthreads)
{
	return blocked_vec(rank, shape, 1, 32 / blk_dtype_size(dt), nthreads);
}

BlkLayout blk_layout_along(int rank, const int *shape, int axis, int nthreads)
{
	BlkLayout l;
	layout_init(&l, rank, shape, nthreads);
	l.spt[axis] = l.pad[axis]; /* no room left for threads along it */
	give_threads(&l, nthreads, NULL);
	pack_threads(&l);
	return l;
}

bool blk_layout_holds_lines(const BlkLayout *l, int axis)
{
	return blk_layout_runs(l) && l->thr[axis] == 1 && l->spt[axis] == l->pad[axis];
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
	pack_threads(&l);
	return l;
}

bool blk_layout_mma_grid_fits(int M, int N, int nthreads, int wn)
{
	int warps = nthreads / 32;
	if (nthreads % 32 || warps < 1 || wn < 1 || warps % wn || M != blk_pow2ceil(M) ||
	    N != blk_pow2ceil(N))
		return false;
	int wm = warps / wn;
	return !(M % (16 * wm) || N % (16 * wn) || M / (8 * wm) > 64 || N / (4 * wn) > 64);
}

int blk_layout_mma_wn(int M, int N, int nthreads)
{
	int warps = nthreads / 32, best = 0, cost = 1 << 30;
	for (int wn = 1; wn <= warps; wn *= 2) {
		int wm = warps / wn;
		if (!blk_layout_mma_grid_fits(M, N, nthreads, wn))
			continue;
		int c = M / (16 * wm) + N / (16 * wn); /* ldmatrix.x4 per k16 step */
		if (c < cost)
			cost = c, best = wn;
	}
	return best;
}

bool blk_layout_mma_fits(int M, int N, int K, int nthreads, int esize)
{
	return K > 0 && K % blk_layout_tc_k(esize) == 0 && blk_layout_mma_wn(M, N, nthreads) > 0;
}

BlkLayout blk_layout_mma(const int *shape, int nthreads)
{
	return blk_layout_mma_grid(shape, nthreads, blk_layout_mma_wn(shape[0], shape[1], nthreads));
}

BlkLayout blk_layout_mma_grid(const int *shape, int nthreads, int wn)
{
	BlkLayout l;
	layout_init(&l, 2, shape, nthreads);
	int lwn = blk_layout_log2(wn);
	int wm = nthreads / 32 / wn;
	l.dot = l.mma = true;
	l.spt[0] = 1, l.thr[0] = 8 * wm, l.tsh[0] = 2;
	l.spt[1] = 2, l.thr[1] = 4 * wn, l.tsh[1] = 0;
	if (wn > 1) {
		l.lbits[1] = 2, l.hsh[1] = 5;
		l.lbits[0] = 3, l.hsh[0] = 5 + lwn;
	}
	return l;
}

bool blk_layout_wgmma_fits(int M, int N, int nthreads)
{
	int warps = nthreads / 32;
	return nthreads % 128 == 0 && M > 0 && M % (16 * warps) == 0 && M == blk_pow2ceil(M) &&
	       N >= 16 && N <= 256 && N == blk_pow2ceil(N) && M / (8 * warps) * (N / 4) <= 256;
}

int blk_layout_tc_k(int esize)
{
	return 32 / esize;
}

BlkLayout blk_layout_wgmma(const int *shape, int nthreads)
{
	BlkLayout l;
	layout_init(&l, 2, shape, nthreads);
	l.dot = l.wg = true;
	l.spt[0] = 2, l.thr[0] = 8 * (nthreads / 32), l.tsh[0] = 2, l.tlo[0] = 3;
	l.spt[1] = 2, l.thr[1] = 4, l.tsh[1] = 0;
	return l;
}

bool blk_layout_mma_operand_fits(int frag, const int *shape, int nthreads, int wn, int esize)
{
	int warps = nthreads / 32, ks = esize == 1 || esize == 2 ? blk_layout_tc_k(esize) : 0;
	if (nthreads % 32 || warps < 1 || wn < 1 || warps % wn || shape[0] < 1 || shape[1] < 1 || !ks)
		return false;
	if (frag == BLK_FRAG_A)
		return shape[0] % (16 * (warps / wn)) == 0 && shape[1] % ks == 0;
	return frag == BLK_FRAG_B && shape[0] % ks == 0 && shape[1] % (16 * wn) == 0;
}

BlkLayout blk_layout_mma_operand(int frag, const int *shape, int nthreads, int wn, int esize)
{
	BlkLayout l;
	layout_init(&l, 2, shape, nthreads);
	l.frag = frag;
	l.kstep = blk_layout_tc_k(esize);
	l.thr[0] = 8 * (nthreads / 32 / wn), l.thr[1] = 4 * wn;
	return l;
}

int blk_layout_warps_n(const BlkLayout *l)
{
	return l->thr[1] / 4;
}

BlkLayout blk_layout_slice(const BlkLayout *l, int axis)
{
	BlkLayout s = *l;
	s.rank = l->rank - 1;
	s.dot = s.mma = s.wg = false;
	for (int d = axis; d < s.rank; d++) {
		s.shape[d] = l->shape[d + 1];
		s.pad[d] = l->pad[d + 1];
		s.spt[d] = l->spt[d + 1];
		s.thr[d] = l->thr[d + 1];
		s.tsh[d] = l->tsh[d + 1];
		s.lbits[d] = l->lbits[d + 1];
		s.hsh[d] = l->hsh[d + 1];
		s.tlo[d] = l->tlo[d + 1];
	}
	s.lbits[s.rank] = s.hsh[s.rank] = s.tlo[s.rank] = 0;
	return s;
}

BlkLayout blk_layout_collapse(const BlkLayout *l, int axis)
{
	BlkLayout s = *l;
	s.dot = s.mma = s.wg = false;
	s.sfrag = 0;
	s.shape[axis] = s.pad[axis] = s.spt[axis] = s.thr[axis] = 1;
	s.tsh[axis] = 0;
	s.lbits[axis] = s.hsh[axis] = s.tlo[axis] = 0;
	return s;
}

BlkLayout blk_layout_fma_operand(const BlkLayout *acc, int frag)
{
	BlkLayout s = blk_layout_collapse(acc, frag == BLK_FRAG_A ? 1 : 0);
	s.sfrag = frag;
	return s;
}

BlkLayout blk_layout_expand(const BlkLayout *l, int axis)
{
	BlkLayout s = *l;
	s.rank = l->rank + 1;
	s.dot = s.mma = s.wg = false;
	for (int d = s.rank - 1; d > axis; d--) {
		s.shape[d] = l->shape[d - 1];
		s.pad[d] = l->pad[d - 1];
		s.spt[d] = l->spt[d - 1];
		s.thr[d] = l->thr[d - 1];
		s.tsh[d] = l->tsh[d - 1];
		s.lbits[d] = l->lbits[d - 1];
		s.hsh[d] = l->hsh[d - 1];
		s.tlo[d] = l->tlo[d - 1];
	}
	s.shape[axis] = s.pad[axis] = s.spt[axis] = s.thr[axis] = 1;
	s.tsh[axis] = 0;
	s.lbits[axis] = s.hsh[axis] = s.tlo[axis] = 0;
	return s;
}

bool blk_layout_plain(const BlkLayout *l)
{
	if (l->mma || l->wg || l->frag || l->sfrag || l->shared)
		return false;
	for (int d = 0; d < l->rank; d++)
		if (l->lbits[d] || l->tlo[d])
			return false;
	return true;
}

BlkLayout blk_layout_join(const BlkLayout *l, int n)
{
	BlkLayout s = *l;
	int d = s.rank++;
	s.dot = false;
	s.shape[d] = n;
	s.pad[d] = s.spt[d] = blk_pow2ceil(n);
	s.thr[d] = 1;
	s.tsh[d] = s.lbits[d] = s.hsh[d] = s.tlo[d] = 0;
	return s;
}

bool blk_layout_merge_last(const BlkLayout *l, BlkLayout *out)
{
	int d = l->rank - 1;
	if (d < 1 || !blk_layout_plain(l) || l->thr[d] != 1 || l->spt[d] != l->pad[d] || l->pad[d] != l->shape[d])
		return false;
	*out = *l;
	out->rank = d;
	out->dot = false;
	out->shape[d - 1] *= l->shape[d];
	out->pad[d - 1] *= l->pad[d];
	out->spt[d - 1] *= l->spt[d];
	out->shape[d] = out->pad[d] = out->spt[d] = out->thr[d] = 0;
	out->tsh[d] = 0;
	return true;
}

bool blk_layout_bcast_local(const BlkLayout *src, const BlkLayout *dst)
{
	if (src->rank > dst->rank || src->nthreads != dst->nthreads)
		return false;
	for (int s = 0, d = dst->rank - src->rank; s < src->rank; s++, d++) {
		if (src->shape[s] == 1 && dst->shape[d] != 1) {
			if (src->thr[s] != 1 || src->spt[s] != 1)
				return false;
		} else if (src->shape[s] != dst->shape[d] || src->spt[s] != dst->spt[d] ||
		           src->thr[s] != dst->thr[d] || src->tsh[s] != dst->tsh[d] ||
		           src->tlo[s] != dst->tlo[d] || src->lbits[s] != dst->lbits[d] || (src->lbits[s] && src->hsh[s] != dst->hsh[d])) {
			return false;
		}
	}
	return true;
}

int blk_layout_used_bits(const BlkLayout *l)
{
	int m = 0;
	for (int d = 0; d < l->rank; d++)
		if (l->lbits[d])
			m |= ((1 << l->lbits[d]) - 1) << l->tsh[d] |
			     ((l->thr[d] >> l->lbits[d]) - 1) << l->hsh[d];
		else
			m |= (l->thr[d] - 1) << l->tsh[d];
	return m;
}

bool blk_layout_split(const BlkLayout *l)
{
	for (int d = 0; d < l->rank; d++)
		if (l->lbits[d])
			return true;
	return false;
}

bool blk_layout_runs(const BlkLayout *l)
{
	if (l->frag || l->shared || blk_layout_split(l))
		return false;
	for (int d = 0; d < l->rank; d++)
		if (l->tlo[d])
			return false;
	return true;
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

int blk_layout_axis_warps(const BlkLayout *l, int axis)
{
	int lo = l->tsh[axis] > 5 ? l->tsh[axis] : 5;
	int hi = l->tsh[axis] + blk_layout_log2(l->thr[axis]);
	return hi > lo ? 1 << (hi - lo) : 1;
}

int blk_layout_nregs(const BlkLayout *l)
{
	if (l->frag == BLK_FRAG_A)
		return l->shape[0] / (2 * l->thr[0]) * (l->shape[1] / l->kstep) * 4;
	if (l->frag == BLK_FRAG_B)
		return l->shape[0] / l->kstep * (l->shape[1] / (2 * l->thr[1])) * 2;
	int n = 1;
	for (int d = 0; d < l->rank; d++)
		n *= blk_layout_regs_along(l, d);
	return n;
}

int blk_layout_coord(const BlkLayout *l, int d, int rd, int td)
{
	int lo = l->tlo[d], s = l->spt[d];
	return (rd / s) * s * l->thr[d] + (td >> lo) * (s << lo) + ((rd % s) << lo) + (td & ((1 << lo) - 1));
}

void blk_layout_reg_split(const BlkLayout *l, int r, int *rd)
{
	for (int d = l->rank - 1; d >= 0; d--) {
		int n = blk_layout_regs_along(l, d);
		rd[d] = r % n;
		r /= n;
	}
}

BlkLayout blk_layout_shared(int rank, const int *shape, int pad)
{
	BlkLayout l;
	layout_init(&l, rank, shape, 0);
	l.shared = true;
	int st = 1;
	for (int d = rank - 1; d >= 0; d--) {
		l.sstride[d] = st;
		st *= shape[d] + (d == rank - 1 ? pad : 0);
	}
	return l;
}

BlkLayout blk_layout_shared_swizzled(int rank, const int *shape, int esize)
{
	int C = shape[rank - 1], bytes = C * esize, swz = 128;
	while (swz >= 32 && bytes % swz)
		swz /= 2;
	if (swz < 32 || rank < 2)
		return blk_layout_shared(rank, shape, 0);
	BlkLayout l;
	layout_init(&l, rank, shape, 0);
	l.shared = true;
	l.swz = swz;
	int bw = swz / esize, R = shape[rank - 2];
	l.sstride[rank - 1] = 1;
	l.sstride[rank - 2] = bw;
	l.sblk = C > bw ? R * bw : 0;
	int st = R * C;
	for (int d = rank - 3; d >= 0; d--) {
		l.sstride[d] = st;
		st *= shape[d];
	}
	return l;
}

long long blk_layout_swizzle(const BlkLayout *l, long long o)
{
	if (!l->swz)
		return o;
	return o ^ (((o >> 7) & (l->swz / 16 - 1)) << 4);
}

BlkLayout blk_layout_shared_swap(const BlkLayout *l, int a, int b)
{
	BlkLayout s = *l;
	s.shape[a] = l->shape[b], s.shape[b] = l->shape[a];
	s.pad[a] = l->pad[b], s.pad[b] = l->pad[a];
	s.sstride[a] = l->sstride[b], s.sstride[b] = l->sstride[a];
	return s;
}

bool blk_layout_equal(const BlkLayout *a, const BlkLayout *b)
{
	if (a->shared || b->shared) {
		if (a->shared != b->shared || a->rank != b->rank)
			return false;
		for (int d = 0; d < a->rank; d++)
			if (a->shape[d] != b->shape[d] || a->sstride[d] != b->sstride[d])
				return false;
		return a->swz == b->swz && a->sblk == b->sblk;
	}
	if (a->rank != b->rank || a->nthreads != b->nthreads || a->frag != b->frag || a->wg != b->wg ||
	    a->kstep != b->kstep || a->sfrag != b->sfrag)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->shape[d] != b->shape[d] || a->spt[d] != b->spt[d] || a->thr[d] != b->thr[d] ||
		    a->tsh[d] != b->tsh[d] || a->tlo[d] != b->tlo[d] || a->lbits[d] != b->lbits[d] ||
		    (a->lbits[d] && a->hsh[d] != b->hsh[d]))
			return false;
	return true;
}

static void put_list(char *buf, size_t n, const char *name, const int *v, int rank)
{
	size_t at = strlen(buf);
	at += (size_t)snprintf(buf + at, n - at, "%s%s=[", at && buf[at - 1] != '<' ? ", " : "", name);
	for (int d = 0; d < rank && at < n; d++)
		at += (size_t)snprintf(buf + at, n - at, "%s%d", d ? "," : "", v[d]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
}

static bool packed(const BlkLayout *l)
{
	BlkLayout p = *l;
	pack_threads(&p);
	return memcmp(p.tsh, l->tsh, sizeof p.tsh) == 0;
}

/* The canonical text: only what the shape and the thread count do not
 * already decide, so blk_layout_from_text can rebuild it exactly.
 *   blocked<spt=[1,4], thr=[4,32]>       thread bits packed last-fastest
 *   dot<spt=[4,4], thr=[16,16]>          the same, made for a SIMT dot
 *   slice<spt=[4], thr=[16], tsh=[4]>    thread bits where they were
 *   fma_a<spt=[4,1], thr=[16,1], tsh=[4,0]>  the same, a SIMT dot's A step
 *   mma<warps=[2,4]>                     layout.h's blk_layout_mma
 *   wgmma<warps=[8,1]>                   layout.h's blk_layout_wgmma
 *   shared<strides=[64,1], swizzle=128>  a swizzled buffer (cblock: sblk) */
void blk_layout_format(char *buf, size_t n, const BlkLayout *l)
{
	buf[0] = 0;
	if (l->shared) {
		snprintf(buf, n, "shared<");
		put_list(buf, n, "strides", l->sstride, l->rank);
		if (l->swz) {
			put_list(buf, n, "swizzle", &l->swz, 1);
			if (l->sblk)
				put_list(buf, n, "cblock", &l->sblk, 1);
		}
		strncat(buf, ">", n - strlen(buf) - 1);
		return;
	}
	if (l->wg) {
		int w[2] = { l->thr[0] / 8, 1 };
		snprintf(buf, n, "wgmma<");
		put_list(buf, n, "warps", w, 2);
		strncat(buf, ">", n - strlen(buf) - 1);
		return;
	}
	if (l->mma || l->frag) {
		int w[2] = { l->thr[0] / 8, l->thr[1] / 4 };
		snprintf(buf, n, "%s<", l->frag == BLK_FRAG_A ? "mma_a" : l->frag == BLK_FRAG_B ? "mma_b" : "mma");
		put_list(buf, n, "warps", w, 2);
		strncat(buf, ">", n - strlen(buf) - 1);
		return;
	}
	bool pk = packed(l) && !blk_layout_split(l) && !l->sfrag;
	snprintf(buf, n, "%s<", l->sfrag ? (l->sfrag == BLK_FRAG_A ? "fma_a" : "fma_b")
	                        : l->dot ? "dot" : pk ? "blocked" : "slice");
	put_list(buf, n, "spt", l->spt, l->rank);
	put_list(buf, n, "thr", l->thr, l->rank);
	if (!pk)
		put_list(buf, n, "tsh", l->tsh, l->rank);
	if (blk_layout_split(l)) { /* a slice of an mma layout over several warp columns */
		put_list(buf, n, "lbits", l->lbits, l->rank);
		put_list(buf, n, "hsh", l->hsh, l->rank);
	}
	for (int d = 0; d < l->rank; d++)
		if (l->tlo[d]) { /* a slice of a wgmma accumulator */
			put_list(buf, n, "tlo", l->tlo, l->rank);
			break;
		}
	strncat(buf, ">", n - strlen(buf) - 1);
}

const char *blk_layout_str(BlkArena *a, const BlkLayout *l)
{
	char buf[256];
	blk_layout_format(buf, sizeof buf, l);
	return blk_arena_strdup(a, buf);
}

static const int *text_list(const BlkLayoutText *t, const char *key, int n)
{
	for (int i = 0; i < t->nkeys; i++)
		if (strcmp(t->keys[i], key) == 0)
			return t->lens[i] == n ? t->vals[i] : NULL;
	return NULL;
}

static bool pow2(int x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

/* Each dim's spt and thr powers of two that fit its padded extent. */
static const char *check_dims(const BlkLayout *l)
{
	for (int d = 0; d < l->rank; d++) {
		if (!pow2(l->spt[d]) || !pow2(l->thr[d]))
			return "spt and thr must be powers of two";
		if (l->spt[d] * l->thr[d] > l->pad[d])
			return "spt * thr exceeds a dim's padded extent";
		if (l->tsh[d] < 0 || l->tsh[d] + blk_layout_log2(l->thr[d]) > 10)
			return "thread bits out of range";
	}
	if (blk_layout_owners(l) > l->nthreads)
		return "more threads than the kernel has";
	return NULL;
}

/* Strides that never map two elements to one place: sorted from the
 * smallest, each at least the span of the dims faster than it.  A dim of
 * extent 1 never steps (a slab of one k step: [S, 1, N]), so its stride
 * does not count. */
static const char *check_strides(const BlkLayout *l)
{
	int d[BLK_MAX_RANK], n = 0;
	for (int i = 0; i < l->rank; i++) {
		if (l->sstride[i] < 1)
			return "strides must be positive";
		if (l->shape[i] > 1)
			d[n++] = i;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && l->sstride[d[j - 1]] > l->sstride[d[j]]; j--) {
			int t = d[j];
			d[j] = d[j - 1], d[j - 1] = t;
		}
	for (int i = 1; i < n; i++)
		if (l->sstride[d[i]] < l->sstride[d[i - 1]] * l->shape[d[i - 1]])
			return "strides overlap: two elements would share a place";
	return NULL;
}

static const char *shared_from_text(const BlkLayoutText *t, BlkLayout *out)
{
	const int *st = text_list(t, "strides", out->rank);
	const int *sw = text_list(t, "swizzle", 1), *cb = text_list(t, "cblock", 1);
	if (!st || t->nkeys != 1 + !!sw + !!cb || (cb && !sw))
		return "shared<> takes strides, one entry per dim (and swizzle, cblock)";
	out->shared = true;
	for (int d = 0; d < out->rank; d++)
		out->sstride[d] = st[d];
	if (sw) { /* column blocks interleave the strides: checked where used */
		out->swz = sw[0];
		out->sblk = cb ? cb[0] : 0;
		if (out->swz != 32 && out->swz != 64 && out->swz != 128)
			return "swizzle is 32, 64 or 128 (bytes)";
		if (out->sblk < 0)
			return "cblock must be 0 or more";
		return NULL;
	}
	return check_strides(out);
}

const char *blk_layout_from_text(const BlkLayoutText *t, int rank, const int *shape, int nthreads,
                                 int esize, BlkLayout *out)
{
	layout_init(out, rank, shape, nthreads);
	if (strcmp(t->kind, "shared") == 0)
		return shared_from_text(t, out);
	if (strcmp(t->kind, "mma") == 0) {
		const int *w = text_list(t, "warps", 2);
		if (rank != 2 || !w || t->nkeys != 1)
			return "mma<warps=[wm,wn]> is for rank-2 tiles";
		if (w[0] * w[1] * 32 != nthreads || !blk_layout_mma_grid_fits(shape[0], shape[1], nthreads, w[1]))
			return "these warps are not an mma layout of this tile and kernel";
		*out = blk_layout_mma_grid(shape, nthreads, w[1]);
		return NULL;
	}
	if (strcmp(t->kind, "wgmma") == 0) {
		const int *w = text_list(t, "warps", 2);
		if (rank != 2 || !w || t->nkeys != 1)
			return "wgmma<warps=[w,1]> is for rank-2 tiles";
		if (w[1] != 1 || w[0] * 32 != nthreads || !blk_layout_wgmma_fits(shape[0], shape[1], nthreads))
			return "these warps are not a wgmma layout of this tile and kernel";
		*out = blk_layout_wgmma(shape, nthreads);
		return NULL;
	}
	int frag = strcmp(t->kind, "mma_a") == 0 ? BLK_FRAG_A : strcmp(t->kind, "mma_b") == 0 ? BLK_FRAG_B : 0;
	if (frag) {
		const int *w = text_list(t, "warps", 2);
		if (rank != 2 || !w || t->nkeys != 1)
			return "mma_a<warps=[wm,wn]> and mma_b<...> are for rank-2 tiles";
		if (w[0] < 1 || w[1] < 1 || w[0] * w[1] * 32 != nthreads ||
		    !blk_layout_mma_operand_fits(frag, shape, nthreads, w[1], esize))
			return "these warps are not an mma operand layout of this tile and kernel";
		*out = blk_layout_mma_operand(frag, shape, nthreads, w[1], esize);
		return NULL;
	}
	int sfrag = strcmp(t->kind, "fma_a") == 0 ? BLK_FRAG_A : strcmp(t->kind, "fma_b") == 0 ? BLK_FRAG_B : 0;
	bool slice = sfrag || strcmp(t->kind, "slice") == 0;
	if (!slice && strcmp(t->kind, "blocked") != 0 && strcmp(t->kind, "dot") != 0)
		return "unknown layout kind (blocked, dot, slice, mma, mma_a, mma_b, wgmma, fma_a, fma_b, shared)";
	if (sfrag && (rank != 2 || shape[sfrag == BLK_FRAG_A ? 1 : 0] != 1))
		return "fma_a<> is for [M, 1] tiles, fma_b<> for [1, N] ones";
	const int *spt = text_list(t, "spt", rank), *thr = text_list(t, "thr", rank);
	const int *tsh = slice ? text_list(t, "tsh", rank) : NULL;
	const int *lb = slice ? text_list(t, "lbits", rank) : NULL, *hs = slice ? text_list(t, "hsh", rank) : NULL;
	const int *lo = slice ? text_list(t, "tlo", rank) : NULL;
	if (!spt || !thr || (slice && !tsh) || t->nkeys != (slice ? 3 + 2 * (lb && hs) + !!lo : 2))
		return slice ? "slice<> takes spt, thr and tsh (and lbits, hsh; tlo), one entry per dim"
		             : "blocked<> and dot<> take spt and thr, one entry per dim";
	for (int d = 0; lo && d < rank; d++) {
		if (lo[d] < 0 || (1 << lo[d]) > thr[d])
			return "tlo out of range";
		out->tlo[d] = lo[d];
	}
	for (int d = 0; lb && hs && d < rank; d++) {
		if (lb[d] < 0 || (1 << lb[d]) > thr[d] || hs[d] < 0 || hs[d] > 10)
			return "lbits and hsh out of range";
		out->lbits[d] = lb[d];
		out->hsh[d] = lb[d] ? hs[d] : 0;
	}
	for (int d = 0; d < rank; d++) {
		out->spt[d] = spt[d];
		out->thr[d] = thr[d];
		out->tsh[d] = slice ? tsh[d] : 0;
	}
	if (!slice)
		pack_threads(out);
	out->dot = strcmp(t->kind, "dot") == 0;
	out->sfrag = sfrag;
	return check_dims(out);
}
