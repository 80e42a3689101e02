/* interp.c - runs a kernel's IR on the CPU: the oracle for GPU results.
 *
 * Requires verified IR.  The run has three steps:
 *   1. bind the launch sizes from the arrays (blk_bind_sizes) and evaluate
 *      the grid, the block dims and every value's shape once;
 *   2. "prepare" the kernel: number every SSA value with a slot in one frame
 *      and mirror each region as an array of instructions, so running an op
 *      is a switch and a few array reads, not a search;
 *   3. run every parallel program in row-major order and, inside each, the
 *      seq grid axes innermost in order.  Scratch params are allocated per
 *      program, poisoned (NaN, 0xdeadbeef) so reads of unwritten scratch
 *      show up, and persist across that program's seq iterations.
 * Tile arithmetic is in interp_ops.c; values are described in interp_int.h.
 * Run-time errors (a zero loop step, a bad axis) are reported through the
 * diagnostics and stop the run; an op the interpreter does not know is an
 * internal error.
 */
#include "interp_int.h"
#include "support/progress.h"
#include "support/ptrmap.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct Instr Instr;

/* A region, prepared: its argument slots and its ops in order. */
typedef struct Block {
	int nargs;
	int *args;
	int n;
	Instr *ins;
} Block;

struct Instr {
	const BlkOp *op;
	int *in;        /* operand slots */
	int *out;       /* result slots */
	Block *regions; /* op->nregions of them */
};

typedef struct Interp {
	const BlkKernel *k;
	BlkDiag *d;
	FILE *out;
	BlkArena *arena; /* the prepared code; freed after the run */
	BlkSymEnv env;
	const BlkArrayDesc *arrays;
	void *const *data;
	int64_t grid[BLK_MAX_GRID];
	int64_t pid[BLK_MAX_GRID];
	bool failed;
	const atomic_bool *stop; /* NULL: never asked to stop */
	/* the frame: one slot per SSA value, its shape evaluated once */
	int nslots, cap_slots;
	BlkIVal *slots;
	int64_t (*sdims)[BLK_MAX_RANK];
	BlkPtrMap map; /* value -> its slot + 1 */
	/* per param: the index map and evaluated block dims */
	Block *maps;
	int64_t (*bdims)[BLK_MAX_RANK];
	BlkIRef *pf; /* per prefetch param: the whole array, an arg of the other index maps */
	Block body;
	/* several ranks: this one's number, the world, every rank's arrays */
	int rank;
	BlkIWorld *world;
	void *const *const *ranks_data;
	int *array_of; /* per param: its index among the arrays (-1: scratch) */
	bool locked;   /* holds the world's lock (an atomic): released if the run dies */
	BlkProgress *progress; /* rank 0's; NULL on the others */
	int64_t programs, done; /* in the grid; run so far */
} Interp;

/* A program or a loop step done: the progress line, when it is due. */
static void tick(Interp *I)
{
	if (I->progress && blk_progress_due(I->progress))
		blk_progress_line(I->progress, "blk: interpreting %s: program %" PRId64 " of %" PRId64
		                  " (%d %%), %.0f s", I->k->name, I->done + 1, I->programs,
		                  (int)(100.0 * (double)I->done / (double)I->programs),
		                  blk_progress_elapsed(I->progress));
}

/* "kernel" alone, or "kernel (rank r)" in a world of several. */
static const char *who(const Interp *I, char *buf, size_t n)
{
	if (blk_iworld_size(I->world) == 1)
		return I->k->name;
	snprintf(buf, n, "%s (rank %d)", I->k->name, I->rank);
	return buf;
}

/* The first error of this rank (the others stay silent). */
static void report(Interp *I, BlkLoc loc, const char *msg)
{
	char w[256];
	if (!I->failed) {
		blk_iworld_diag_lock(I->world);
		blk_error(I->d, loc, "interpreting %s: %s", who(I, w, sizeof w), msg);
		blk_iworld_diag_unlock(I->world);
	}
	I->failed = true;
}

static void fail(Interp *I, BlkLoc loc, const char *msg, int64_t v)
{
	char m[512];
	snprintf(m, sizeof m, "%s (%" PRId64 ")", msg, v);
	report(I, loc, m);
}

/* Whether the caller asked the run to stop; the first time, the error. */
static bool stopped(Interp *I, BlkLoc loc)
{
	if (!I->stop || !atomic_load_explicit(I->stop, memory_order_relaxed))
		return false;
	report(I, loc, "interrupted");
	return true;
}

/* ---- the value -> slot map ---------------------------------------------- */

static int slot_of(const Interp *I, const BlkValue *v)
{
	uintptr_t s = (uintptr_t)blk_pmap_get(&I->map, v);
	if (s)
		return (int)(s - 1);
	blk_die("interp: a value of %s is used before its definition", I->k->name);
}

/* ---- preparing ------------------------------------------------------------ */

/* Evaluates a type's dims under the launch sizes; false (reported) if one
 * cannot be evaluated, is negative, or the tile would be too large. */
static bool eval_dims(Interp *I, const BlkType *t, BlkLoc loc, int64_t *dims)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++) {
		if (!blk_sym_eval(t->dims[i], &I->env, &dims[i])) {
			fail(I, loc, "a dim cannot be evaluated at this launch; dim", i);
			return false;
		}
		if (dims[i] < 0) {
			fail(I, loc, "a dim is negative at this launch", dims[i]);
			return false;
		}
		if (__builtin_mul_overflow(n, dims[i], &n) || n > BLK_INTERP_MAX_ELEMS) {
			fail(I, loc, "a tile is too large for the interpreter; limit 2^28, dim", i);
			return false;
		}
	}
	return true;
}

static int slot_new(Interp *I, const BlkValue *v, BlkLoc loc)
{
	if (I->nslots == I->cap_slots) {
		int cap = I->cap_slots ? I->cap_slots * 2 : 64;
		I->sdims = blk_arena_grow(I->arena, I->sdims, (size_t)I->cap_slots, (size_t)cap,
		                          sizeof *I->sdims);
		I->cap_slots = cap;
	}
	int s = I->nslots;
	blk_pmap_put(I->arena, &I->map, v, (void *)(uintptr_t)(s + 1));
	I->nslots++;
	eval_dims(I, &v->type, loc, I->sdims[s]);
	return s;
}

static void prepare_block(Interp *I, const BlkRegion *r, BlkLoc loc, Block *b);

static void prepare_op(Interp *I, const BlkOp *op, Instr *in)
{
	in->op = op;
	in->in = BLK_NEW_N(I->arena, int, op->noperands + 1);
	for (int i = 0; i < op->noperands; i++)
		in->in[i] = slot_of(I, op->operands[i]);
	in->regions = BLK_NEW_N(I->arena, Block, op->nregions + 1);
	for (int i = 0; i < op->nregions; i++)
		prepare_block(I, op->regions[i], op->loc, &in->regions[i]);
	in->out = BLK_NEW_N(I->arena, int, op->nresults + 1);
	for (int i = 0; i < op->nresults; i++)
		in->out[i] = slot_new(I, op->results[i], op->loc);
}

static void prepare_block(Interp *I, const BlkRegion *r, BlkLoc loc, Block *b)
{
	b->nargs = r ? r->nargs : 0;
	b->args = BLK_NEW_N(I->arena, int, b->nargs + 1);
	for (int i = 0; i < b->nargs; i++)
		b->args[i] = slot_new(I, r->args[i], loc);
	b->n = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next)
		b->n++;
	b->ins = BLK_NEW_N(I->arena, Instr, b->n + 1);
	int i = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next)
		prepare_op(I, op, &b->ins[i++]);
}

/* ---- slots ------------------------------------------------------------------ */

static void slot_clear(Interp *I, int s)
{
	if (I->slots[s].kind == BLK_IVAL_TILE)
		blk_itile_release(&I->slots[s].t);
	I->slots[s].kind = BLK_IVAL_NONE;
}

/* Takes ownership of t. */
static void set_tile(Interp *I, int s, BlkITile t)
{
	slot_clear(I, s);
	I->slots[s].kind = BLK_IVAL_TILE;
	I->slots[s].t = t;
}

static void set_val(Interp *I, int s, const BlkIVal *v)
{
	if (v->kind == BLK_IVAL_TILE) {
		set_tile(I, s, blk_itile_retain(&v->t));
		return;
	}
	slot_clear(I, s);
	I->slots[s] = *v;
}

static const BlkITile *tile_at(Interp *I, int s)
{
	if (I->slots[s].kind != BLK_IVAL_TILE)
		blk_die("interp: %s: slot %d is not a tile", I->k->name, s);
	return &I->slots[s].t;
}

static const BlkIRef *ref_at(Interp *I, int s)
{
	if (I->slots[s].kind != BLK_IVAL_REF)
		blk_die("interp: %s: slot %d is not a ref", I->k->name, s);
	return &I->slots[s].r;
}

static int64_t scalar_at(Interp *I, int s)
{
	const BlkITile *t = tile_at(I, s);
	if (t->dtype == BLK_BOOL)
		return BLK_ITB(t)[0];
	if (t->dtype != BLK_I32)
		blk_die("interp: %s: an index or bound is not an integer", I->k->name);
	return BLK_ITI(t)[0];
}

static BlkITile scalar_i32(int64_t v)
{
	BlkITile t = blk_itile_new(BLK_I32, 0, NULL);
	BLK_ITI(&t)[0] = (int32_t)v;
	return t;
}

/* A fresh tile for result r of the instruction, shaped by its type. */
static BlkITile result_tile(Interp *I, const Instr *in, int r)
{
	const BlkType *t = &in->op->results[r]->type;
	return blk_itile_new(t->dtype, t->rank, I->sdims[in->out[r]]);
}

/* ---- refs ----------------------------------------------------------------- */

static int64_t mem_esize(BlkDType dt)
{
	return blk_dtype_size(dt);
}

static float mem_getf(BlkDType dt, const unsigned char *p)
{
	uint16_t h;
	float f;
	switch (dt) {
	case BLK_F16: memcpy(&h, p, 2); return blk_f16_to_f32(h);
	case BLK_BF16: memcpy(&h, p, 2); return blk_bf16_to_f32(h);
	case BLK_F8E4M3: case BLK_F8E5M2: return blk_fp8_to_f32(dt, *p);
	default: memcpy(&f, p, 4); return f;
	}
}

static void mem_putf(BlkDType dt, unsigned char *p, float f)
{
	uint16_t h;
	switch (dt) {
	case BLK_F16: h = blk_f32_to_f16(f); memcpy(p, &h, 2); break;
	case BLK_BF16: h = blk_f32_to_bf16(f); memcpy(p, &h, 2); break;
	case BLK_F8E4M3: case BLK_F8E5M2: *p = blk_f32_to_fp8(dt, f); break;
	default: memcpy(p, &f, 4); break;
	}
}

static int32_t mem_geti(BlkDType dt, const unsigned char *p)
{
	int32_t v;
	if (dt == BLK_BOOL)
		return *p != 0;
	if (dt == BLK_I8)
		return (int8_t)*p;
	if (dt == BLK_U8)
		return *p;
	memcpy(&v, p, 4);
	return v;
}

static void mem_puti(BlkDType dt, unsigned char *p, int32_t v)
{
	if (dt == BLK_BOOL)
		*p = v != 0;
	else if (blk_dtype_is_byte(dt))
		*p = (unsigned char)v;
	else
		memcpy(p, &v, 4);
}

/* Values held as floats: the float dtypes and fp8. */
static bool dt_float(BlkDType dt)
{
	return blk_dtype_is_float(dt) || blk_dtype_is_fp8(dt);
}

/* Applies an index attr to r: operands from in->in[*next] on. */
/* Dim d's step: element k is index start + k * step (a strided ds). */
static int64_t ref_step(const BlkIRef *r, int d)
{
	return r->step[d] > 1 ? r->step[d] : 1;
}

static void apply_index(Interp *I, const Instr *in, const BlkIRef *r, int *next, BlkIRef *v)
{
	const BlkAttr *idx = blk_op_attr(in->op, "idx");
	int n = idx ? idx->index.n : 0;
	if (n > r->rank)
		blk_die("interp: %s: %d indices on a rank %d ref", I->k->name, n, r->rank);
	*v = *r;
	v->rank = 0;
	for (int d = 0; d < r->rank; d++) {
		BlkIndexKind kind = d < n ? idx->index.v[d].kind : BLK_INDEX_FULL;
		int o = v->rank;
		int64_t st = ref_step(r, d);
		v->stride[o] = r->stride[d];
		v->gstart[o] = r->gstart[d];
		v->lstart[o] = r->lstart[d];
		v->ext[o] = r->ext[d];
		v->bext[o] = r->bext[d];
		v->aext[o] = r->aext[d];
		v->step[o] = st;
		if (kind == BLK_INDEX_FULL) {
			v->rank++;
			continue;
		}
		int64_t i = scalar_at(I, in->in[(*next)++]) * st;
		int64_t l = r->lstart[d] + i, g = r->gstart[d] + i;
		if (kind == BLK_INDEX_SCALAR) {
			if (l < 0 || l >= r->bext[d] || g < 0 || g >= r->aext[d])
				v->dead = true;
			else
				v->off += g * r->stride[d];
			continue;
		}
		int64_t size;
		if (!blk_sym_eval(idx->index.v[d].size, &I->env, &size) || size < 0)
			size = 0, fail(I, in->op->loc, "a ds size is not a valid size; dim", d);
		v->lstart[o] = l;
		v->gstart[o] = g;
		v->ext[o] = size;
		v->step[o] = st * blk_index_step(&idx->index.v[d]);
		v->rank++;
	}
}

/* Walks a ref's elements row by row (the last dim is a row); row() gets the
 * tile index of the row's first element, the memory element offset of it,
 * the row's stride, and [lo, hi): the in-bounds part of the row. */
typedef void RowFn(void *ctx, const BlkIRef *r, int64_t ti, int64_t off, int64_t stride,
                   int64_t lo, int64_t hi, int64_t len);

/* ceil(a / b) for b > 0. */
static int64_t cdiv_floor(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/* The k of dim d whose index start + k * step is in the block and array. */
static void row_bounds(const BlkIRef *r, int d, int64_t *lo, int64_t *hi)
{
	int64_t st = ref_step(r, d);
	int64_t a = -r->lstart[d], b = -r->gstart[d];
	int64_t c = r->bext[d] - r->lstart[d], e = r->aext[d] - r->gstart[d];
	*lo = cdiv_floor(a > b ? a : b, st);
	*hi = cdiv_floor(c < e ? c : e, st);
	if (*lo < 0)
		*lo = 0;
	if (*hi > r->ext[d])
		*hi = r->ext[d];
	if (*hi < *lo)
		*hi = *lo;
}

static void ref_walk(const BlkIRef *r, RowFn *row, void *ctx)
{
	if (r->rank == 0) {
		row(ctx, r, 0, r->off, 0, 0, r->dead ? 0 : 1, 1);
		return;
	}
	int last = r->rank - 1;
	int64_t idx[BLK_MAX_RANK] = { 0 }, rows = 1, lo, hi, len = r->ext[last];
	for (int d = 0; d < last; d++)
		rows *= r->ext[d];
	row_bounds(r, last, &lo, &hi);
	for (int64_t k = 0; k < rows && len > 0; k++) {
		bool inb = !r->dead;
		int64_t off = r->off + r->gstart[last] * r->stride[last];
		for (int d = 0; d < last; d++) {
			int64_t l = r->lstart[d] + idx[d] * ref_step(r, d), g = r->gstart[d] + idx[d] * ref_step(r, d);
			inb = inb && l >= 0 && l < r->bext[d] && g >= 0 && g < r->aext[d];
			off += g * r->stride[d];
		}
		row(ctx, r, k * len, off, r->stride[last] * ref_step(r, last), inb ? lo : 0, inb ? hi : 0, len);
		for (int d = last - 1; d >= 0 && ++idx[d] == r->ext[d]; d--)
			idx[d] = 0;
	}
}

/* What a row function works on. */
typedef struct Access {
	BlkITile *t;   /* load/swap: filled; store/swap/atomics: the value */
	BlkITile *old; /* swap: the old values */
	BlkOpKind kind; /* atomic_max/min/cas: which */
	int32_t cmp;    /* atomic_cas: the compare value */
	float fillf;
	int32_t filli;
} Access;

#define ELEM(r, off) ((r)->base + (off) * mem_esize((r)->dtype))

static void load_row(void *ctx, const BlkIRef *r, int64_t ti, int64_t off, int64_t st,
                     int64_t lo, int64_t hi, int64_t len)
{
	Access *a = ctx;
	for (int64_t i = 0; i < len; i++) {
		bool inb = i >= lo && i < hi;
		if (dt_float(r->dtype))
			BLK_ITF(a->t)[ti + i] = inb ? mem_getf(r->dtype, ELEM(r, off + i * st)) : blk_iround(r->dtype, a->fillf);
		else if (r->dtype == BLK_BOOL)
			BLK_ITB(a->t)[ti + i] = (uint8_t)(inb ? mem_geti(r->dtype, ELEM(r, off + i * st)) : a->filli != 0);
		else
			BLK_ITI(a->t)[ti + i] = inb ? mem_geti(r->dtype, ELEM(r, off + i * st))
			                            : blk_int_wrap(r->dtype, a->filli);
	}
}

static void store_row(void *ctx, const BlkIRef *r, int64_t ti, int64_t off, int64_t st,
                      int64_t lo, int64_t hi, int64_t len)
{
	(void)len;
	Access *a = ctx;
	for (int64_t i = lo; i < hi; i++) {
		unsigned char *p = ELEM(r, off + i * st);
		if (dt_float(r->dtype))
			mem_putf(r->dtype, p, BLK_ITF(a->t)[ti + i]);
		else if (r->dtype == BLK_BOOL)
			mem_puti(r->dtype, p, BLK_ITB(a->t)[ti + i]);
		else
			mem_puti(r->dtype, p, BLK_ITI(a->t)[ti + i]);
	}
}

static void swap_row(void *ctx, const BlkIRef *r, int64_t ti, int64_t off, int64_t st,
                     int64_t lo, int64_t hi, int64_t len)
{
	Access *a = ctx;
	Access old = { .t = a->old, .fillf = 0.0f, .filli = 0 };
	load_row(&old, r, ti, off, st, lo, hi, len);
	store_row(ctx, r, ti, off, st, lo, hi, len);
}

/* atomic_add: one read-modify-write per element, rounded to the dtype; bool
 * adds saturate (or). */
static void add_row(void *ctx, const BlkIRef *r, int64_t ti, int64_t off, int64_t st,
                    int64_t lo, int64_t hi, int64_t len)
{
	(void)len;
	Access *a = ctx;
	for (int64_t i = lo; i < hi; i++) {
		unsigned char *p = ELEM(r, off + i * st);
		if (dt_float(r->dtype)) {
			mem_putf(r->dtype, p, mem_getf(r->dtype, p) + BLK_ITF(a->t)[ti + i]);
		} else if (r->dtype == BLK_BOOL) {
			mem_puti(r->dtype, p, mem_geti(r->dtype, p) | BLK_ITB(a->t)[ti + i]);
		} else {
			uint32_t s = (uint32_t)mem_geti(r->dtype, p) + (uint32_t)BLK_ITI(a->t)[ti + i];
			mem_puti(r->dtype, p, (int32_t)s);
		}
	}
}

/* f32 atomic max/min order by IEEE 754's totalOrder (-NaN < -inf < ... <
 * -0 < +0 < ... < inf < NaN), computed on the bits as the GPU does
 * (lower/emit/emit_atomic.c): a value with its sign bit clear by a signed
 * compare, one with it set by an unsigned compare the other way. */
static uint32_t total_max(uint32_t m, uint32_t v)
{
	if ((int32_t)v >= 0)
		return (int32_t)m > (int32_t)v ? m : v;
	return m < v ? m : v;
}

static uint32_t total_min(uint32_t m, uint32_t v)
{
	if ((int32_t)v >= 0)
		return (int32_t)m < (int32_t)v ? m : v;
	return m > v ? m : v;
}

/* One atomic_max/min/cas on the 32-bit element at p (i32 or f32). */
static void rmw_one(const Access *a, BlkDType dt, unsigned char *p, uint32_t v)
{
	uint32_t m;
	memcpy(&m, p, 4);
	if (a->kind == BLK_OP_ATOMIC_CAS)
		m = (int32_t)m == a->cmp ? v : m;
	else if (dt == BLK_F32)
		m = a->kind == BLK_OP_ATOMIC_MAX ? total_max(m, v) : total_min(m, v);
	else if (a->kind == BLK_OP_ATOMIC_MAX)
		m = (int32_t)m > (int32_t)v ? m : v;
	else
		m = (int32_t)m < (int32_t)v ? m : v;
	memcpy(p, &m, 4);
}

/* atomic_max, atomic_min, atomic_cas: one read-modify-write per element. */
static void rmw_row(void *ctx, const BlkIRef *r, int64_t ti, int64_t off, int64_t st,
                    int64_t lo, int64_t hi, int64_t len)
{
	(void)len;
	Access *a = ctx;
	for (int64_t i = lo; i < hi; i++) {
		uint32_t v;
		memcpy(&v, a->t->buf->data + (size_t)(ti + i) * 4, 4);
		rmw_one(a, r->dtype, ELEM(r, off + i * st), v);
	}
}

/* The number of elements a view covers; false (reported) if too many. */
static bool view_size(Interp *I, const Instr *in, const BlkIRef *v, int64_t *n)
{
	*n = 1;
	for (int d = 0; d < v->rank; d++) {
		if (__builtin_mul_overflow(*n, v->ext[d], n) || *n > BLK_INTERP_MAX_ELEMS) {
			fail(I, in->op->loc, "an access is too large for the interpreter; dim", d);
			return false;
		}
	}
	return true;
}

/* The stored value, converted to the ref's dtype and broadcast to the view. */
static BlkITile value_for(const BlkIRef *v, const BlkITile *val)
{
	BlkITile t = blk_itile_retain(val);
	if (t.dtype != v->dtype) {
		BlkITile c = blk_itile_new(v->dtype, t.rank, t.dims);
		blk_iop_cast(&t, &c);
		blk_itile_release(&t);
		t = c;
	}
	bool same = t.rank == v->rank;
	for (int d = 0; same && d < v->rank; d++)
		same = t.dims[d] == v->ext[d];
	if (!same) {
		BlkITile b = blk_itile_new(v->dtype, v->rank, v->ext);
		blk_iop_broadcast(&t, &b);
		blk_itile_release(&t);
		t = b;
	}
	return t;
}

static void fill_of(const BlkOp *op, Access *a)
{
	const BlkAttr *f = blk_op_attr(op, "fill");
	a->fillf = 0.0f;
	a->filli = 0;
	if (f && f->kind == BLK_ATTR_FLOAT) {
		a->fillf = (float)f->f;
		a->filli = blk_fill_to_i32(f->f);
	} else if (f && f->kind == BLK_ATTR_INT) {
		a->fillf = (float)f->i;
		a->filli = (int32_t)f->i;
	}
}

/* An access with GATHER dims, element by element: element e of the
 * accessed tile (its shape: the GATHER operands') takes each gathered
 * dim's index from the operands' element e, the kept dims' from e's
 * coordinates (numpy: the gathered dims sit where the first one was). */
static void gather_walk(Interp *I, const Instr *in, const BlkIRef *r, const BlkITile *sh, RowFn *row,
                        void *ctx)
{
	const BlkAttr *idx = blk_op_attr(in->op, "idx");
	int kept = 0, pos = -1;
	for (int d = 0; d < r->rank; d++) {
		BlkIndexKind k = idx->index.v[d].kind;
		pos = pos < 0 && k == BLK_INDEX_GATHER ? kept : pos;
		kept += k == BLK_INDEX_FULL || k == BLK_INDEX_DS;
	}
	int s = sh->rank - kept;
	int64_t c[BLK_MAX_RANK] = { 0 };
	for (int64_t e = 0; e < sh->n; e++) {
		bool inb = !r->dead;
		int64_t off = r->off;
		for (int d = 0, next = 1, k = 0; d < r->rank; d++) {
			BlkIndexKind kind = idx->index.v[d].kind;
			int64_t i = 0;
			if (kind == BLK_INDEX_FULL || kind == BLK_INDEX_DS)
				i = c[k < pos ? k : k + s] * blk_index_step(&idx->index.v[d]), k++;
			if (kind == BLK_INDEX_GATHER)
				i = BLK_ITI(tile_at(I, in->in[next]))[e];
			else if (kind != BLK_INDEX_FULL)
				i += scalar_at(I, in->in[next]);
			next += kind != BLK_INDEX_FULL;
			i *= ref_step(r, d);
			int64_t l = r->lstart[d] + i, g = r->gstart[d] + i;
			inb = inb && l >= 0 && l < r->bext[d] && g >= 0 && g < r->aext[d];
			off += g * r->stride[d];
		}
		row(ctx, r, e, off, 0, 0, inb ? 1 : 0, 1);
		for (int d = sh->rank - 1; d >= 0 && ++c[d] == sh->dims[d]; d--)
			c[d] = 0;
	}
}

/* The GATHER operand that gives a gathering access its shape. */
static const BlkITile *gather_shape(Interp *I, const Instr *in)
{
	const BlkAttr *idx = blk_op_attr(in->op, "idx");
	for (int d = 0, next = 1; d < idx->index.n; d++) {
		if (idx->index.v[d].kind == BLK_INDEX_GATHER)
			return tile_at(I, in->in[next]);
		next += idx->index.v[d].kind != BLK_INDEX_FULL;
	}
	return NULL;
}

static void exec_gather(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	const BlkIRef *r = ref_at(I, in->in[0]);
	const BlkITile *sh = gather_shape(I, in);
	int nidx = 0;
	for (int d = 0; d < r->rank; d++)
		nidx += blk_op_attr(op, "idx")->index.v[d].kind != BLK_INDEX_FULL;
	Access a = { 0 };
	fill_of(op, &a);
	if (op->kind == BLK_OP_LOAD) {
		BlkITile t = blk_itile_new(r->dtype, sh->rank, sh->dims);
		a.t = &t;
		gather_walk(I, in, r, sh, load_row, &a);
		set_tile(I, in->out[0], t);
		return;
	}
	int next = 1 + nidx;
	if (op->kind == BLK_OP_ATOMIC_CAS)
		a.cmp = BLK_ITI(tile_at(I, in->in[next++]))[0];
	BlkIRef shape = { .dtype = r->dtype, .rank = sh->rank };
	memcpy(shape.ext, sh->dims, sizeof shape.ext);
	BlkITile t = value_for(&shape, tile_at(I, in->in[next]));
	a.t = &t;
	a.kind = op->kind;
	gather_walk(I, in, r, sh, op->kind == BLK_OP_STORE ? store_row : op->kind == BLK_OP_ATOMIC_ADD
	            ? add_row : rmw_row, &a);
	blk_itile_release(&t);
}

static void exec_access(Interp *I, const Instr *in)
{
	if (blk_op_gathers(in->op)) {
		exec_gather(I, in);
		return;
	}
	const BlkOp *op = in->op;
	int next = 1;
	BlkIRef v;
	int64_t n;
	apply_index(I, in, ref_at(I, in->in[0]), &next, &v);
	if (op->kind == BLK_OP_VIEW) {
		BlkIVal rv = { .kind = BLK_IVAL_REF, .r = v };
		set_val(I, in->out[0], &rv);
		return;
	}
	if (I->failed || !view_size(I, in, &v, &n))
		return;
	Access a = { 0 };
	fill_of(op, &a);
	if (op->kind == BLK_OP_LOAD) {
		BlkITile t = blk_itile_new(v.dtype, v.rank, v.ext);
		a.t = &t;
		ref_walk(&v, load_row, &a);
		set_tile(I, in->out[0], t);
		return;
	}
	if (op->kind == BLK_OP_ATOMIC_CAS)
		a.cmp = BLK_ITI(tile_at(I, in->in[next++]))[0];
	BlkITile t = value_for(&v, tile_at(I, in->in[next]));
	a.t = &t;
	a.kind = op->kind;
	bool shared = blk_op_is_atomic(op->kind) && blk_iworld_size(I->world) > 1;
	if (shared) /* other ranks' atomics may hit the same elements */
		blk_iworld_lock(I->world);
	I->locked = shared;
	if (op->kind == BLK_OP_STORE) {
		ref_walk(&v, store_row, &a);
	} else if (op->kind == BLK_OP_ATOMIC_ADD) {
		ref_walk(&v, add_row, &a);
	} else if (blk_op_is_atomic(op->kind)) {
		ref_walk(&v, rmw_row, &a);
	} else {
		BlkITile old = blk_itile_new(v.dtype, v.rank, v.ext);
		a.old = &old;
		ref_walk(&v, swap_row, &a);
		set_tile(I, in->out[0], old);
	}
	if (shared)
		blk_iworld_unlock(I->world);
	I->locked = false;
	blk_itile_release(&t);
}

/* ---- several ranks ------------------------------------------------------------ */

/* peer(ref, r): the same window on rank r's buffer of the param (every
 * rank's symmetric arrays have one shape and strides: run_world checked). */
static void exec_peer(Interp *I, const Instr *in)
{
	BlkIVal v = { .kind = BLK_IVAL_REF, .r = *ref_at(I, in->in[0]) };
	int64_t r = scalar_at(I, in->in[1]);
	if (r < 0 || r >= blk_iworld_size(I->world)) {
		char m[160];
		snprintf(m, sizeof m, "peer rank %" PRId64 " is outside the world of %d rank%s", r,
		         blk_iworld_size(I->world), blk_iworld_size(I->world) == 1 ? "" : "s");
		report(I, in->op->loc, m);
		return;
	}
	int ai = v.r.param >= 0 ? I->array_of[v.r.param] : -1;
	if (ai < 0)
		blk_die("interp: %s: peer of a Ref that views no array", I->k->name);
	v.r.base = (unsigned char *)I->ranks_data[r][ai] +
	           (v.r.base - (unsigned char *)I->ranks_data[v.r.holder][ai]);
	v.r.holder = (int)r;
	set_val(I, in->out[0], &v);
}

/* signal_add/set/wait on one i32 counter. */
static void exec_signal(Interp *I, const Instr *in)
{
	const BlkIRef *r = ref_at(I, in->in[0]);
	int32_t v = (int32_t)scalar_at(I, in->in[1]), seen;
	if (r->dead) {
		report(I, in->op->loc, "the signal's index is outside its signal array");
		return;
	}
	int32_t *counter = (int32_t *)(void *)(r->base + r->off * 4);
	if (in->op->kind == BLK_OP_SIGNAL_WAIT && v < 1) {
		fail(I, in->op->loc, "signal_wait waits for a count of at least 1, got", v);
		return;
	}
	if (in->op->kind != BLK_OP_SIGNAL_WAIT) {
		blk_iworld_signal(I->world, counter, in->op->kind == BLK_OP_SIGNAL_SET, v);
		return;
	}
	BlkIWait w = blk_iworld_wait(I->world, counter, v, I->stop, &seen);
	if (w == BLK_IWAIT_OK)
		return;
	if (w == BLK_IWAIT_ABORTED) {
		if (!stopped(I, in->op->loc))
			I->failed = true; /* another rank failed and said why */
		return;
	}
	char m[400], pid[96] = "the program";
	for (int i = 0, n = 0; i < I->k->grid_rank; i++)
		n += snprintf(pid + n, sizeof pid - (size_t)n, "%s%" PRId64 "%s", i ? ", " : "program (",
		              I->pid[i], i + 1 == I->k->grid_rank ? ")" : "");
	snprintf(m, sizeof m, "deadlock: %s waits for a signal to reach %d, and it is %d; "
	         "no rank that is still running can signal it", pid, v, seen);
	report(I, in->op->loc, m);
}

/* A fresh buffer for a scratch Ref of the given type, poisoned. */
static unsigned char *scratch_new(BlkDType dt, int rank, const int64_t *dims, BlkIRef *r)
{
	memset(r, 0, sizeof *r);
	r->param = -1;
	r->dtype = dt;
	r->rank = rank;
	int64_t n = 1;
	for (int d = rank - 1; d >= 0; d--) {
		r->stride[d] = n;
		r->ext[d] = r->bext[d] = r->aext[d] = dims[d];
		n *= dims[d];
	}
	int64_t es = mem_esize(dt);
	unsigned char *p = malloc((size_t)(n * es) + 1);
	if (!p)
		blk_die("interp: out of memory for scratch");
	static const uint32_t f32_poison = 0x7fc00000u, i32_poison = 0xdeadbeefu;
	static const uint16_t f16_poison = 0x7e00u, bf16_poison = 0x7fc0u;
	for (int64_t i = 0; i < n; i++) {
		switch (dt) {
		case BLK_F32: memcpy(p + i * 4, &f32_poison, 4); break;
		case BLK_I32: memcpy(p + i * 4, &i32_poison, 4); break;
		case BLK_F16: memcpy(p + i * 2, &f16_poison, 2); break;
		case BLK_BF16: memcpy(p + i * 2, &bf16_poison, 2); break;
		case BLK_F8E4M3: case BLK_F8E5M2: p[i] = 0x7f; break; /* NaN */
		default: p[i] = 0xa5; break;
		}
	}
	r->base = p;
	return p;
}

/* A part of a tile: the tile stored into a scratch buffer, then read as a
 * load reads a Ref (indices outside it read 0). */
static void exec_extract(Interp *I, const Instr *in)
{
	const BlkITile *a = tile_at(I, in->in[0]);
	BlkIRef r, v;
	unsigned char *p = scratch_new(a->dtype, a->rank, a->dims, &r);
	Access st = { .t = (BlkITile *)a };
	ref_walk(&r, store_row, &st);
	int next = 1;
	int64_t n;
	apply_index(I, in, &r, &next, &v);
	if (!I->failed && view_size(I, in, &v, &n)) {
		BlkITile t = blk_itile_new(v.dtype, v.rank, v.ext);
		Access ld = { .t = &t };
		ref_walk(&v, load_row, &ld);
		set_tile(I, in->out[0], t);
	}
	free(p);
}

/* join: element e of operand p is element e * n + p of the result (a new
 * last dim of n). */
static void exec_join(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	int n = op->noperands;
	BlkITile r = result_tile(I, in, 0);
	size_t es = (size_t)blk_itile_esize(r.dtype);
	for (int p = 0; p < n; p++) {
		const BlkITile *a = tile_at(I, in->in[p]);
		for (int64_t e = 0; e < a->n; e++)
			memcpy(r.buf->data + ((size_t)e * (size_t)n + (size_t)p) * es, a->buf->data + (size_t)e * es, es);
	}
	set_tile(I, in->out[0], r);
}

/* ---- control flow ------------------------------------------------------------ */

static bool exec_block(Interp *I, const Block *b, BlkIVal *yielded);

static void exec_for(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	int64_t lo = scalar_at(I, in->in[0]), hi = scalar_at(I, in->in[1]);
	int64_t step = scalar_at(I, in->in[2]);
	int nc = op->noperands - 3;
	const Block *body = &in->regions[0];
	if (step == 0) {
		fail(I, op->loc, "for loop with step 0; lo", lo);
		return;
	}
	/* carry[] holds a reference to each carried tile */
	BlkIVal *carry = calloc((size_t)nc + 1, sizeof *carry);
	for (int i = 0; i < nc; i++) {
		carry[i] = I->slots[in->in[3 + i]];
		if (carry[i].kind == BLK_IVAL_TILE)
			blk_itile_retain(&carry[i].t);
	}
	for (int64_t iv = lo; !I->failed && !stopped(I, op->loc) && (step > 0 ? iv < hi : iv > hi); iv += step) {
		tick(I);
		set_tile(I, body->args[0], scalar_i32(iv));
		for (int i = 0; i < nc; i++)
			set_val(I, body->args[1 + i], &carry[i]);
		if (!exec_block(I, body, carry))
			break;
	}
	for (int i = 0; i < nc; i++) {
		if (!I->failed)
			set_val(I, in->out[i], &carry[i]);
		if (carry[i].kind == BLK_IVAL_TILE)
			blk_itile_release(&carry[i].t);
	}
	free(carry);
}

static int axis_attr(Interp *I, const Instr *in, int limit);

/* Element at of t as a scalar tile. */
static BlkITile element_of(const BlkITile *t, int64_t at)
{
	BlkITile e = blk_itile_new(t->dtype, 0, NULL);
	int es = blk_itile_esize(t->dtype);
	memcpy(e.buf->data, t->buf->data + at * es, (size_t)es);
	return e;
}

static void put_element(BlkITile *t, int64_t at, const BlkITile *e)
{
	int es = blk_itile_esize(t->dtype);
	memcpy(t->buf->data + at * es, e->buf->data, (size_t)es);
}

/* One line of a scan: element j of the results is the combine of element
 * j-1's (the previous in scan order) and x's element j; the first is x's.
 * at0 and step address the line's elements in the n operands x, r. */
static void scan_line(Interp *I, const Instr *in, BlkITile *r, BlkIVal *acc, int64_t at0,
                      int64_t step, int64_t len, bool rev)
{
	const Block *body = &in->regions[0];
	int n = in->op->noperands;
	int64_t prev = 0;
	for (int64_t q = 0; q < len && !I->failed; q++) {
		int64_t at = at0 + (rev ? len - 1 - q : q) * step;
		for (int i = 0; i < n && q == 0; i++) {
			BlkITile e = element_of(tile_at(I, in->in[i]), at);
			put_element(&r[i], at, &e);
			blk_itile_release(&e);
		}
		if (q > 0) {
			for (int i = 0; i < n; i++) {
				set_tile(I, body->args[i], element_of(&r[i], prev));
				set_tile(I, body->args[n + i], element_of(tile_at(I, in->in[i]), at));
			}
			if (!exec_block(I, body, acc))
				return;
			for (int i = 0; i < n; i++)
				put_element(&r[i], at, &acc[i].t);
		}
		prev = at;
	}
}

/* scan: the combine's region run once per element, in order along the
 * axis (from its end when reverse), whatever the combine is. */
static void exec_scan(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	int n = op->noperands;
	const BlkITile *x = tile_at(I, in->in[0]);
	int ax = axis_attr(I, in, x->rank);
	if (ax < 0)
		return;
	int64_t outer = 1, inner = 1, len = x->dims[ax];
	for (int d = 0; d < x->rank; d++) {
		outer *= d < ax ? x->dims[d] : 1;
		inner *= d > ax ? x->dims[d] : 1;
	}
	BlkITile *r = calloc((size_t)n, sizeof *r);
	BlkIVal *acc = calloc((size_t)n, sizeof *acc);
	if (!r || !acc)
		blk_die("out of memory");
	for (int i = 0; i < n; i++)
		r[i] = result_tile(I, in, i);
	bool rev = blk_op_int(op, "reverse", 0) != 0;
	for (int64_t o = 0; o < outer && !I->failed; o++)
		for (int64_t k = 0; k < inner && !I->failed; k++)
			scan_line(I, in, r, acc, o * len * inner + k, inner, len, rev);
	for (int i = 0; i < n; i++) {
		if (I->failed)
			blk_itile_release(&r[i]);
		else
			set_tile(I, in->out[i], r[i]);
		if (acc[i].kind == BLK_IVAL_TILE)
			blk_itile_release(&acc[i].t);
	}
	free(r);
	free(acc);
}

static void exec_if(Interp *I, const Instr *in)
{
	bool c = scalar_at(I, in->in[0]) != 0;
	if (c)
		exec_block(I, &in->regions[0], NULL);
	else if (in->op->nregions > 1)
		exec_block(I, &in->regions[1], NULL);
}

static void exec_scoped(Interp *I, const Instr *in)
{
	const Block *b = &in->regions[0];
	unsigned char **bufs = calloc((size_t)b->nargs + 1, sizeof *bufs);
	for (int i = 0; i < b->nargs; i++) {
		const BlkType *t = &in->op->regions[0]->args[i]->type;
		BlkIVal v = { .kind = BLK_IVAL_REF };
		bufs[i] = scratch_new(t->dtype, t->rank, I->sdims[b->args[i]], &v.r);
		set_val(I, b->args[i], &v);
	}
	exec_block(I, b, NULL);
	for (int i = 0; i < b->nargs; i++)
		free(bufs[i]);
	free(bufs);
}

static void exec_print(Interp *I, const Instr *in)
{
	const BlkAttr *fmt = blk_op_attr(in->op, "fmt");
	blk_iworld_diag_lock(I->world);
	if (blk_iworld_size(I->world) > 1)
		fprintf(I->out, "rank %d ", I->rank);
	fputs("program (", I->out);
	for (int i = 0; i < I->k->grid_rank; i++)
		fprintf(I->out, "%s%" PRId64, i ? ", " : "", I->pid[i]);
	fprintf(I->out, "): %s", fmt && fmt->kind == BLK_ATTR_STRING ? fmt->s : "");
	for (int i = 0; i < in->op->noperands; i++) {
		fputc(' ', I->out);
		if (I->slots[in->in[i]].kind == BLK_IVAL_TILE)
			blk_iop_print(I->out, tile_at(I, in->in[i]));
		else
			fputs("<ref>", I->out);
	}
	fputc('\n', I->out);
	blk_iworld_diag_unlock(I->world);
}

/* ---- ops ----------------------------------------------------------------------- */

static int axis_attr(Interp *I, const Instr *in, int limit)
{
	int64_t a = blk_op_int(in->op, "axis", 0);
	if (a < 0 || a >= (limit > 0 ? limit : 1)) {
		fail(I, in->op->loc, "axis out of range", a);
		return -1;
	}
	return (int)a;
}

static void exec_leaf(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	BlkITile r = result_tile(I, in, 0);
	int ax;
	const BlkAttr *a;
	switch (op->kind) {
	case BLK_OP_CONST:
		a = blk_op_attr(op, "value");
		if (a && a->kind == BLK_ATTR_FLOAT)
			blk_iop_splat(&r, true, 0, a->f);
		else
			blk_iop_splat(&r, false, a ? a->i : 0, 0.0);
		break;
	case BLK_OP_SIZE:
		a = blk_op_attr(op, "name");
		for (int i = 0; a && a->kind == BLK_ATTR_STRING && i < I->env.n; i++)
			if (strcmp(I->env.names[i], a->s) == 0)
				blk_iop_splat(&r, false, I->env.values[i], 0.0);
		break;
	case BLK_OP_PROGRAM_ID:
	case BLK_OP_NUM_PROGRAMS:
		if ((ax = axis_attr(I, in, I->k->grid_rank)) >= 0 && ax < I->k->grid_rank)
			blk_iop_splat(&r, false, op->kind == BLK_OP_PROGRAM_ID ? I->pid[ax] : I->grid[ax], 0.0);
		else if (ax == 0 && op->kind == BLK_OP_NUM_PROGRAMS)
			blk_iop_splat(&r, false, 1, 0.0); /* a grid of rank 0 is one program */
		break;
	case BLK_OP_RANK: blk_iop_splat(&r, false, I->rank, 0.0); break;
	case BLK_OP_WORLD: blk_iop_splat(&r, false, blk_iworld_size(I->world), 0.0); break;
	default: /* IOTA */
		if ((ax = axis_attr(I, in, r.rank)) >= 0)
			blk_iop_iota(ax, &r);
		break;
	}
	set_tile(I, in->out[0], r);
}

static void exec_shape(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	const BlkITile *a = tile_at(I, in->in[0]);
	if (op->kind == BLK_OP_EXPAND_DIMS || op->kind == BLK_OP_RESHAPE) { /* the same elements */
		BlkITile r = blk_itile_retain(a);
		r.rank = op->results[0]->type.rank;
		memcpy(r.dims, I->sdims[in->out[0]], sizeof r.dims);
		set_tile(I, in->out[0], r);
		return;
	}
	BlkITile r = result_tile(I, in, 0);
	int ax;
	switch (op->kind) {
	case BLK_OP_BROADCAST: blk_iop_broadcast(a, &r); break;
	case BLK_OP_TRANSPOSE: {
		int perm[BLK_MAX_RANK];
		blk_transpose_perm(op, a->rank, perm); /* verified */
		blk_iop_transpose(a, perm, blk_transpose_flip(op), &r);
		break;
	}
	case BLK_OP_SCAN_SUM: case BLK_OP_SCAN_PROD: case BLK_OP_SCAN_MAX: case BLK_OP_SCAN_MIN:
		if ((ax = axis_attr(I, in, a->rank)) >= 0)
			blk_iop_scan(op->kind, a, ax, blk_op_int(op, "reverse", 0) != 0, &r);
		break;
	case BLK_OP_REDUCE_ARGMAX: case BLK_OP_REDUCE_ARGMIN:
		if ((ax = axis_attr(I, in, a->rank)) >= 0)
			blk_iop_argreduce(op->kind, a, ax, &r);
		break;
	default: /* reductions */
		if ((ax = axis_attr(I, in, a->rank)) >= 0)
			blk_iop_reduce(op->kind, a, ax, &r);
		break;
	}
	set_tile(I, in->out[0], r);
}

static void exec_math(Interp *I, const Instr *in)
{
	const BlkOp *op = in->op;
	BlkITile r = result_tile(I, in, 0);
	const BlkITile *a = tile_at(I, in->in[0]);
	if (op->kind == BLK_OP_CAST)
		blk_iop_cast(a, &r);
	else if (op->kind == BLK_OP_SELECT)
		blk_iop_select(a, tile_at(I, in->in[1]), tile_at(I, in->in[2]), &r);
	else if (op->kind == BLK_OP_FMA)
		blk_iop_fma(a, tile_at(I, in->in[1]), tile_at(I, in->in[2]), &r);
	else if (op->kind == BLK_OP_PHILOX || op->kind == BLK_OP_UNIFORM || op->kind == BLK_OP_NORMAL) {
		const BlkITile *w[5];
		for (int i = 0; i < op->noperands; i++)
			w[i] = tile_at(I, in->in[i]);
		blk_iop_random(op->kind, (int)blk_op_int(op, "word", 0), w, &r);
	}
	else if (op->kind == BLK_OP_DOT)
		blk_iop_dot(a, tile_at(I, in->in[1]),
		            op->noperands > 2 ? tile_at(I, in->in[2]) : NULL, &r);
	else if (op->noperands == 1)
		blk_iop_unary(op->kind, a, &r);
	else
		blk_iop_binary(op->kind, a, tile_at(I, in->in[1]), &r);
	set_tile(I, in->out[0], r);
}

static void exec_instr(Interp *I, const Instr *in)
{
	switch (in->op->kind) {
	case BLK_OP_CONST: case BLK_OP_SIZE: case BLK_OP_PROGRAM_ID:
	case BLK_OP_NUM_PROGRAMS: case BLK_OP_RANK: case BLK_OP_WORLD: case BLK_OP_IOTA:
		exec_leaf(I, in);
		break;
	case BLK_OP_PEER: exec_peer(I, in); break;
	case BLK_OP_SIGNAL_ADD: case BLK_OP_SIGNAL_SET: case BLK_OP_SIGNAL_WAIT:
		exec_signal(I, in);
		break;
	case BLK_OP_NEG: case BLK_OP_NOT: case BLK_OP_EXP: case BLK_OP_LOG:
	case BLK_OP_SQRT: case BLK_OP_RSQRT: case BLK_OP_TANH: case BLK_OP_ABS:
	case BLK_OP_SIGMOID: case BLK_OP_ERF: case BLK_OP_LOG1P: case BLK_OP_EXPM1:
	case BLK_OP_FLOOR: case BLK_OP_CEIL: case BLK_OP_EXP2: case BLK_OP_LOG2:
	case BLK_OP_SILU: case BLK_OP_GELU: case BLK_OP_GELU_TANH: case BLK_OP_SOFTPLUS: case BLK_OP_FMA:
	case BLK_OP_CAST: case BLK_OP_ADD: case BLK_OP_SUB: case BLK_OP_MUL:
	case BLK_OP_DIV: case BLK_OP_FLOORDIV: case BLK_OP_MOD: case BLK_OP_MAX:
	case BLK_OP_MIN: case BLK_OP_POW: case BLK_OP_AND: case BLK_OP_OR: case BLK_OP_XOR:
	case BLK_OP_SHL: case BLK_OP_SHR: case BLK_OP_EQ:
	case BLK_OP_NE: case BLK_OP_LT: case BLK_OP_LE: case BLK_OP_GT:
	case BLK_OP_GE: case BLK_OP_SELECT: case BLK_OP_DOT:
	case BLK_OP_PHILOX: case BLK_OP_UNIFORM: case BLK_OP_NORMAL:
		exec_math(I, in);
		break;
	case BLK_OP_EXTRACT: exec_extract(I, in); break;
	case BLK_OP_JOIN: exec_join(I, in); break;
	case BLK_OP_BROADCAST: case BLK_OP_EXPAND_DIMS: case BLK_OP_TRANSPOSE: case BLK_OP_RESHAPE:
	case BLK_OP_REDUCE_SUM: case BLK_OP_REDUCE_MAX: case BLK_OP_REDUCE_MIN:
	case BLK_OP_REDUCE_ARGMAX: case BLK_OP_REDUCE_ARGMIN:
	case BLK_OP_SCAN_SUM: case BLK_OP_SCAN_PROD: case BLK_OP_SCAN_MAX: case BLK_OP_SCAN_MIN:
		exec_shape(I, in);
		break;
	case BLK_OP_VIEW: case BLK_OP_LOAD: case BLK_OP_STORE: case BLK_OP_SWAP:
	case BLK_OP_ATOMIC_ADD: case BLK_OP_ATOMIC_MAX: case BLK_OP_ATOMIC_MIN: case BLK_OP_ATOMIC_CAS:
		exec_access(I, in);
		break;
	case BLK_OP_FOR: exec_for(I, in); break;
	case BLK_OP_SCAN: exec_scan(I, in); break;
	case BLK_OP_IF: exec_if(I, in); break;
	case BLK_OP_SCOPED: exec_scoped(I, in); break;
	case BLK_OP_PRINT: exec_print(I, in); break;
	default:
		blk_die("interp: no interpretation for op %s", blk_op_name(in->op->kind));
	}
}

/* Runs a block; at its yield, stores the yielded values (retained) in
 * `yielded` when given, releasing what was there.  false once failed. */
static bool exec_block(Interp *I, const Block *b, BlkIVal *yielded)
{
	for (int i = 0; i < b->n && !I->failed; i++) {
		const Instr *in = &b->ins[i];
		if (in->op->kind != BLK_OP_YIELD) {
			exec_instr(I, in);
			continue;
		}
		for (int j = 0; yielded && j < in->op->noperands; j++) {
			BlkIVal v = I->slots[in->in[j]];
			if (v.kind == BLK_IVAL_TILE)
				blk_itile_retain(&v.t);
			if (yielded[j].kind == BLK_IVAL_TILE)
				blk_itile_release(&yielded[j].t);
			yielded[j] = v;
		}
	}
	return !I->failed;
}

/* ---- the grid ---------------------------------------------------------------- */

/* The Ref of array param pi for the current program: its index map gives the
 * block; squeezed dims fold into the offset. */
static void block_ref(Interp *I, int pi, int ai, BlkIRef *r)
{
	const BlkParam *p = &I->k->params[pi];
	const BlkArrayDesc *ad = &I->arrays[ai];
	const Block *map = &I->maps[pi];
	int64_t bidx[BLK_MAX_RANK] = { 0 };
	if (p->index_map) {
		BlkIVal ys[BLK_MAX_RANK] = { 0 };
		int g = I->k->grid_rank;
		for (int i = 0; i < map->nargs && i < g; i++)
			set_tile(I, map->args[i], scalar_i32(I->pid[i]));
		for (int q = 0, i = g; q < I->k->nparams && i < map->nargs; q++)
			if (I->k->params[q].prefetch) {
				BlkIVal v = { .kind = BLK_IVAL_REF, .r = I->pf[q] };
				set_val(I, map->args[i++], &v);
			}
		exec_block(I, map, ys);
		for (int d = 0; d < p->rank; d++) {
			if (ys[d].kind == BLK_IVAL_TILE) {
				bidx[d] = BLK_ITI(&ys[d].t)[0];
				blk_itile_release(&ys[d].t);
			}
		}
	}
	memset(r, 0, sizeof *r);
	r->param = pi;
	r->holder = I->rank;
	r->base = I->data[ai];
	r->dtype = p->dtype;
	for (int d = 0; d < p->rank; d++) {
		int64_t start = bidx[d] * I->bdims[pi][d]; /* |bidx| < 2^31, bdims <= 2^31 */
		if (p->squeezed[d]) {
			if (start < 0 || start >= ad->shape[d])
				r->dead = true;
			else
				r->off += start * ad->strides[d];
			continue;
		}
		int o = r->rank++;
		r->stride[o] = ad->strides[d];
		r->gstart[o] = start;
		r->ext[o] = r->bext[o] = I->bdims[pi][d];
		r->aext[o] = ad->shape[d];
	}
}

/* How many scratch params come before param pi (the arrays skip them). */
static int count_scratch(const BlkKernel *k, int pi)
{
	int n = 0;
	for (int q = 0; q < pi; q++)
		n += k->params[q].access == BLK_ACCESS_SCRATCH;
	return n;
}

/* One program at the current pid: bind the param Refs, run the body. */
static void run_step(Interp *I, const BlkIRef *scratch)
{
	int ai = 0;
	for (int pi = 0; pi < I->k->nparams; pi++) /* first: the other maps read them */
		if (I->k->params[pi].prefetch)
			block_ref(I, pi, pi - count_scratch(I->k, pi), &I->pf[pi]);
	for (int pi = 0; pi < I->k->nparams && !I->failed; pi++) {
		BlkIVal v = { .kind = BLK_IVAL_REF };
		if (I->k->params[pi].access == BLK_ACCESS_SCRATCH)
			v.r = scratch[pi];
		else if (I->k->params[pi].prefetch) { /* bound above */
			v.r = I->pf[pi];
			ai++;
		} else
			block_ref(I, pi, ai++, &v.r);
		set_val(I, I->body.args[pi], &v);
	}
	exec_block(I, &I->body, NULL);
}

/* Advances the pid over the axes with grid_seq == seq, row-major; false
 * when it wrapped around. */
static bool next_pid(Interp *I, bool seq)
{
	for (int a = I->k->grid_rank - 1; a >= 0; a--) {
		if (I->k->grid_seq[a] != seq)
			continue;
		if (++I->pid[a] < I->grid[a])
			return true;
		I->pid[a] = 0;
	}
	return false;
}

static void run_program(Interp *I, BlkIRef *scratch, unsigned char **bufs)
{
	const BlkKernel *k = I->k;
	for (int pi = 0; pi < k->nparams; pi++) {
		const BlkParam *p = &k->params[pi];
		if (p->access == BLK_ACCESS_SCRATCH)
			bufs[pi] = scratch_new(p->dtype, p->rank, I->bdims[pi], &scratch[pi]);
	}
	do {
		run_step(I, scratch);
		tick(I);
	} while (!I->failed && next_pid(I, true));
	for (int pi = 0; pi < k->nparams; pi++) {
		free(bufs[pi]);
		bufs[pi] = NULL;
	}
}

static void run_grid(Interp *I)
{
	for (int a = 0; a < I->k->grid_rank; a++)
		if (I->grid[a] <= 0)
			return; /* an empty grid runs nothing */
	BlkIRef *scratch = calloc((size_t)I->k->nparams + 1, sizeof *scratch);
	unsigned char **bufs = calloc((size_t)I->k->nparams + 1, sizeof *bufs);
	memset(I->pid, 0, sizeof I->pid);
	BlkProgress progress; /* (clock read every 256 programs or loop steps) */
	I->programs = 1;
	for (int a = 0; a < I->k->grid_rank; a++)
		if (!I->k->grid_seq[a]) /* (saturating: only a count to print) */
			I->programs = I->programs > INT64_MAX / I->grid[a] ? INT64_MAX : I->programs * I->grid[a];
	if (I->rank == 0) {
		blk_progress_start(&progress, 256);
		I->progress = &progress;
	}
	do {
		run_program(I, scratch, bufs);
		I->done++;
		tick(I);
	} while (!I->failed && !stopped(I, I->k->loc) && next_pid(I, false));
	if (I->progress)
		blk_progress_end(I->progress);
	I->progress = NULL;
	free(scratch);
	free(bufs);
}

/* ---- setup ------------------------------------------------------------------- */

/* Grid extents, and per param its block dims (scratch: its shape). */
static bool eval_launch(Interp *I)
{
	const BlkKernel *k = I->k;
	for (int a = 0; a < k->grid_rank; a++)
		if (!blk_sym_eval(k->grid[a], &I->env, &I->grid[a]))
			fail(I, k->loc, "a grid extent cannot be evaluated; axis", a);
	I->bdims = blk_arena_alloc(I->arena, sizeof *I->bdims * (size_t)(k->nparams + 1));
	for (int pi = 0; pi < k->nparams && !I->failed; pi++) {
		const BlkParam *p = &k->params[pi];
		for (int d = 0; d < p->rank; d++) {
			const BlkSym *s = p->access == BLK_ACCESS_SCRATCH || !p->block[d] ? p->shape[d]
			                                                                  : p->block[d];
			int64_t *v = &I->bdims[pi][d];
			if (p->squeezed[d])
				*v = 1;
			else if (!blk_sym_eval(s, &I->env, v) || *v <= 0 || *v > INT32_MAX)
				fail(I, p->loc, "a block dim is not a valid size at this launch; dim", d);
		}
	}
	return !I->failed;
}

static void prepare(Interp *I)
{
	const BlkKernel *k = I->k;
	I->maps = BLK_NEW_N(I->arena, Block, k->nparams + 1);
	I->pf = BLK_NEW_N(I->arena, BlkIRef, k->nparams + 1);
	for (int pi = 0; pi < k->nparams; pi++)
		if (k->params[pi].index_map)
			prepare_block(I, k->params[pi].index_map, k->params[pi].loc, &I->maps[pi]);
	prepare_block(I, k->body, k->loc, &I->body);
	if (I->body.nargs != k->nparams)
		blk_die("interp: %s: the body has %d args for %d params", k->name,
		        I->body.nargs, k->nparams);
	I->slots = calloc((size_t)I->nslots + 1, sizeof *I->slots);
}

bool blk_interp_run(const BlkKernel *k, const BlkArrayDesc *arrays, void *const *data,
                    int narrays, FILE *print_out, BlkDiag *d)
{
	return blk_interp_run_until(k, arrays, data, narrays, print_out, d, NULL);
}

bool blk_interp_run_until(const BlkKernel *k, const BlkArrayDesc *arrays, void *const *data,
                          int narrays, FILE *print_out, BlkDiag *d, const atomic_bool *stop)
{
	const BlkArrayDesc *const a[1] = { arrays };
	void *const *const dt[1] = { data };
	return blk_interp_run_world(k, 1, a, dt, narrays, print_out, d, stop);
}

/* Every rank's array of a symmetric param has rank 0's shape and strides,
 * so a peer Ref's offsets hold on every rank. */
static bool symmetric_alike(const BlkKernel *k, int nranks, const BlkArrayDesc *const *arrays,
                            const int *array_of, BlkDiag *d)
{
	for (int pi = 0; pi < k->nparams; pi++) {
		int ai = array_of[pi];
		if (!k->params[pi].symmetric || ai < 0)
			continue;
		const BlkArrayDesc *a0 = &arrays[0][ai];
		for (int r = 1; r < nranks; r++) {
			const BlkArrayDesc *ar = &arrays[r][ai];
			bool same = ar->rank == a0->rank && ar->dtype == a0->dtype;
			for (int i = 0; same && i < a0->rank; i++)
				same = ar->shape[i] == a0->shape[i] && ar->strides[i] == a0->strides[i];
			if (!same) {
				blk_error(d, k->params[pi].loc, "symmetric `%s` has another shape, dtype or "
				          "layout on rank %d than on rank 0; a symmetric array is the same on "
				          "every rank", k->params[pi].name, r);
				return false;
			}
		}
	}
	return true;
}

static bool run_rank(void *arg)
{
	run_grid(arg);
	return true;
}

/* One rank's thread: its grid, then word to the others that it is done. */
static void *rank_main(void *arg)
{
	Interp *I = arg;
	char msg[512];
	if (!blk_guard(run_rank, I, msg, sizeof msg)) {
		if (I->locked) /* it died inside an atomic: the other ranks must not wait on the lock */
			blk_iworld_unlock(I->world);
		I->locked = false;
		report(I, I->k->loc, msg);
	}
	blk_iworld_finish(I->world, I->failed);
	return NULL;
}

/* Starts every rank (on threads when there are several) and waits for them. */
static void run_ranks(Interp *Is, int nranks)
{
	if (nranks == 1) {
		rank_main(&Is[0]);
		return;
	}
	pthread_t *th = calloc((size_t)nranks, sizeof *th);
	bool *started = calloc((size_t)nranks, sizeof *started);
	if (!th || !started)
		blk_die("out of memory");
	for (int r = 0; r < nranks; r++) {
		started[r] = pthread_create(&th[r], NULL, rank_main, &Is[r]) == 0;
		if (!started[r]) { /* the rank never runs: the others must not wait for it */
			report(&Is[r], Is[r].k->loc, "cannot start a thread for this rank");
			blk_iworld_finish(Is[r].world, true);
		}
	}
	for (int r = 0; r < nranks; r++)
		if (started[r])
			pthread_join(th[r], NULL);
	free(th);
	free(started);
}

bool blk_interp_run_world(const BlkKernel *k, int nranks, const BlkArrayDesc *const *arrays,
                          void *const *const *data, int narrays, FILE *print_out, BlkDiag *d,
                          const atomic_bool *stop)
{
	if (nranks < 1 || nranks > BLK_INTERP_MAX_RANKS) {
		blk_error(d, k->loc, "interpreting %s: a world of %d ranks; it takes 1 to %d", k->name,
		          nranks, BLK_INTERP_MAX_RANKS);
		return false;
	}
	int *array_of = calloc((size_t)k->nparams + 1, sizeof *array_of);
	Interp *Is = calloc((size_t)nranks, sizeof *Is);
	int64_t **sizes = calloc((size_t)nranks, sizeof *sizes);
	if (!array_of || !Is || !sizes)
		blk_die("out of memory");
	for (int pi = 0, ai = 0; pi < k->nparams; pi++)
		array_of[pi] = k->params[pi].access == BLK_ACCESS_SCRATCH ? -1 : ai++;
	bool ok = true;
	for (int r = 0; r < nranks && ok; r++) {
		sizes[r] = calloc((size_t)k->nsizes + 1, sizeof **sizes);
		ok = sizes[r] && blk_bind_sizes(k, arrays[r], narrays, sizes[r], d);
	}
	ok = ok && symmetric_alike(k, nranks, arrays, array_of, d);
	BlkIWorld *world = blk_iworld_create(nranks);
	for (int r = 0; r < nranks && ok; r++) {
		Interp *I = &Is[r];
		*I = (Interp){ .k = k, .d = d, .out = print_out ? print_out : stdout,
		               .arena = blk_arena_create(), .arrays = arrays[r], .data = data[r],
		               .stop = stop, .rank = r, .world = world, .ranks_data = data,
		               .array_of = array_of };
		I->env = (BlkSymEnv){ k->nsizes, k->sizes, sizes[r] };
		if (eval_launch(I))
			prepare(I);
		ok = !I->failed;
	}
	if (ok)
		run_ranks(Is, nranks);
	for (int r = 0; r < nranks; r++) {
		Interp *I = &Is[r];
		ok &= !I->failed;
		for (int s = 0; s < I->nslots && I->slots; s++)
			slot_clear(I, s);
		free(I->slots);
		if (I->arena)
			blk_arena_destroy(I->arena);
		free(sizes[r]);
	}
	blk_iworld_destroy(world);
	free(sizes);
	free(Is);
	free(array_of);
	fflush(print_out ? print_out : stdout);
	return ok;
}
