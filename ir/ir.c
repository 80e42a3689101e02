/* ir.c - the IR's tables, types, construction and editing.
 *
 * Everything here allocates from the caller's arena and never frees: an
 * erased op is only unlinked.  The builder inserts at one point of one
 * region, so a pass that creates ops reads like the code it generates.
 */
#include "ir.h"
#include "layout.h"

#include <math.h>
#include <string.h>

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
	const char *name;
	int size;
} dtypes[] = { /* ORDER DTYPE */
#define X(e, n, b) { n, b },
	BLK_DTYPES(X)
#undef X
};

const char *blk_dtype_name(BlkDType t)
{
	return (unsigned)t < BLK_NUM_DTYPES ? dtypes[t].name : "?";
}

int blk_dtype_size(BlkDType t)
{
	return (unsigned)t < BLK_NUM_DTYPES ? dtypes[t].size : 0;
}

bool blk_dtype_from_name(const char *name, BlkDType *out)
{
	for (int i = 0; i < BLK_NUM_DTYPES; i++) {
		if (strcmp(dtypes[i].name, name) == 0) {
			*out = (BlkDType)i;
			return true;
		}
	}
	return false;
}

bool blk_dtype_is_fp8(BlkDType t)
{
	return t == BLK_F8E4M3 || t == BLK_F8E5M2;
}

void blk_fp8_format(BlkDType t, int *eb, int *mb, int *maxcode)
{
	bool e4 = t == BLK_F8E4M3;
	*eb = e4 ? 4 : 5, *mb = e4 ? 3 : 2, *maxcode = e4 ? 0x7e : 0x7b;
}

float blk_fp8_to_f32(BlkDType t, uint8_t b)
{
	int eb, mb, mx;
	blk_fp8_format(t, &eb, &mb, &mx);
	int bias = (1 << (eb - 1)) - 1, e = (b >> mb) & ((1 << eb) - 1), m = b & ((1 << mb) - 1);
	float v;
	if ((b & 0x7f) > mx)
		v = t == BLK_F8E5M2 && (b & 0x7f) == 0x7c ? INFINITY : NAN;
	else if (e == 0)
		v = ldexpf((float)m, 1 - bias - mb);
	else
		v = ldexpf((float)(m | 1 << mb), e - bias - mb);
	return b & 0x80 ? -v : v;
}

/* Rounds |f| at its binade's quantum (the subnormals' below the smallest
 * normal exponent), then encodes: lower/emit/emit_elementwise.c does the same
 * in the kernel, so both agree bit for bit. */
uint8_t blk_f32_to_fp8(BlkDType t, float f)
{
	int eb, mb, mx;
	blk_fp8_format(t, &eb, &mb, &mx);
	int bias = (1 << (eb - 1)) - 1, emin = 1 - bias, e;
	uint8_t s = signbit(f) ? 0x80 : 0;
	float a = fabsf(f);
	if (isnan(f))
		return s | 0x7f;
	if (a >= blk_fp8_to_f32(t, (uint8_t)mx))
		return (uint8_t)(s | mx);
	frexpf(a, &e);
	e = e - 1 < emin ? emin : e - 1;
	float r = rintf(ldexpf(a, mb - e)); /* a in quanta, rounded to even */
	r = ldexpf(r, e - mb);
	frexpf(r, &e);
	e -= 1;
	if (r == 0 || e < emin)
		return (uint8_t)(s | (int)ldexpf(r, mb - emin));
	return (uint8_t)(s | (e + bias) << mb | ((int)ldexpf(r, mb - e) - (1 << mb)));
}

bool blk_dtype_is_float(BlkDType t)
{
	return t == BLK_F32 || t == BLK_F16 || t == BLK_BF16;
}

bool blk_dtype_is_byte(BlkDType t)
{
	return t == BLK_I8 || t == BLK_U8;
}

bool blk_dtype_is_int(BlkDType t)
{
	return t == BLK_I32 || t == BLK_U32 || blk_dtype_is_byte(t);
}

int32_t blk_int_wrap(BlkDType t, int64_t v)
{
	if (t == BLK_I8)
		return (int8_t)(uint8_t)(uint64_t)v;
	if (t == BLK_U8)
		return (uint8_t)(uint64_t)v;
	return (int32_t)(uint32_t)(uint64_t)v;
}

int32_t blk_f32_to_int(BlkDType t, float f)
{
	if (t == BLK_U32) /* toward zero into [0, 2^32 - 1], NaN 0: cvt.rzi.sat.u32.f32 */
		return f != f || f <= 0.0f ? 0 : f >= 4294967296.0f ? -1 : (int32_t)(uint32_t)f;
	if (!blk_dtype_is_byte(t))
		return blk_f32_to_i32(f);
	float lo = t == BLK_U8 ? 0.0f : -128.0f, hi = t == BLK_U8 ? 255.0f : 127.0f;
	if (f != f)
		return 0;
	return (int32_t)(f <= lo ? lo : f >= hi ? hi : truncf(f));
}

/* ---- f16 and bf16 ------------------------------------------------------
 *
 * Bit manipulation rather than the compiler's _Float16, which not every
 * target has; tests/ir checks every half value and random floats against a
 * reference computed another way. */

static uint32_t f32_bits(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	return x;
}

static float f32_from_bits(uint32_t x)
{
	float f;
	memcpy(&f, &x, 4);
	return f;
}

/* Shifts m right by s (1..31), rounding to nearest, ties to even. */
static uint32_t shift_rne(uint32_t m, int s)
{
	uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
	return q + (rem > half || (rem == half && (q & 1)));
}

float blk_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
		float v = (float)m * 0x1p-24f;
		return sign ? -v : v;
	}
	if (e == 31) /* Inf, NaN (payload kept) */
		return f32_from_bits(sign | 0x7f800000u | m << 13);
	return f32_from_bits(sign | (e + 112) << 23 | m << 13);
}

int32_t blk_f32_to_i32(float x)
{
	if (isnan(x))
		return 0;
	if (x >= 2147483648.0f)
		return INT32_MAX;
	if (x <= -2147483648.0f)
		return INT32_MIN;
	return (int32_t)x;
}

int32_t blk_i32_floordiv(int32_t x, int32_t y)
{
	if (y == 0)
		return 0;
	if (y == -1) /* -x, wrapping at INT32_MIN as the GPU's negation does */
		return (int32_t)(0u - (uint32_t)x);
	int32_t q = x / y;
	return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

int32_t blk_i32_mod(int32_t x, int32_t y)
{
	if (y == 0 || y == -1)
		return 0;
	int32_t m = x % y;
	return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
}

int32_t blk_i32_shl(int32_t x, int32_t y)
{
	return (uint32_t)y < 32 ? (int32_t)((uint32_t)x << y) : 0;
}

int32_t blk_i32_shr(int32_t x, int32_t y)
{
	int32_t s = (uint32_t)y < 32 ? y : 31;
	return x < 0 ? ~(~x >> s) : x >> s; /* no implementation-defined >> of a negative */
}

int32_t blk_u32_div(int32_t x, int32_t y)
{
	return y == 0 ? 0 : (int32_t)((uint32_t)x / (uint32_t)y);
}

int32_t blk_u32_mod(int32_t x, int32_t y)
{
	return y == 0 ? 0 : (int32_t)((uint32_t)x % (uint32_t)y);
}

int32_t blk_u32_shr(int32_t x, int32_t y)
{
	return (uint32_t)y < 32 ? (int32_t)((uint32_t)x >> y) : 0;
}

bool blk_u32_lt(int32_t x, int32_t y)
{
	return (uint32_t)x < (uint32_t)y;
}

int32_t blk_fill_to_i32(double f)
{
	return f >= INT32_MIN && f <= INT32_MAX ? (int32_t)f : 0;
}

uint16_t blk_f32_to_f16(float f)
{
	uint32_t x = f32_bits(f), ax = x & 0x7fffffffu;
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	if (ax > 0x7f800000u) /* NaN: quiet, top payload bits kept */
		return sign | 0x7e00 | ((ax >> 13) & 0x3ff);
	if (ax >= 0x477ff000u) /* >= 65520 rounds to Inf */
		return sign | 0x7c00;
	if (ax >= 0x38800000u) /* normal half: rebias, round 13 bits away */
		return sign | (uint16_t)shift_rne(ax - 0x38000000u, 13);
	if (ax <= 0x33000000u) /* <= 2^-25: ties to even give zero */
		return sign;
	uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
	return sign | (uint16_t)shift_rne(m, (int)(126 - e)); /* subnormal */
}

float blk_bf16_to_f32(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

uint16_t blk_f32_to_bf16(float f)
{
	uint32_t x = f32_bits(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	/* Carries into the exponent and up to Inf are the right answers. */
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

/* ---- types ------------------------------------------------------------- */

BlkType blk_type_scalar(BlkDType t)
{
	return blk_type_tile(t, 0, NULL);
}

BlkType blk_type_tile(BlkDType t, int rank, const BlkSym *const *dims)
{
	BlkType ty;
	memset(&ty, 0, sizeof ty);
	if (rank < 0 || rank > BLK_MAX_RANK)
		blk_die("type of rank %d", rank);
	ty.kind = BLK_TYPE_TILE;
	ty.dtype = t;
	ty.rank = rank;
	for (int i = 0; i < rank; i++)
		ty.dims[i] = dims[i];
	return ty;
}

BlkType blk_type_ref(BlkDType t, int rank, const BlkSym *const *dims, BlkSpace space)
{
	BlkType ty = blk_type_tile(t, rank, dims);
	ty.kind = BLK_TYPE_REF;
	ty.space = space;
	return ty;
}

bool blk_type_equal(const BlkType *a, const BlkType *b)
{
	if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank)
		return false;
	if (a->kind == BLK_TYPE_REF && a->space != b->space)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (!blk_sym_equal(a->dims[i], b->dims[i]))
			return false;
	if (!a->layout || !b->layout)
		return a->layout == b->layout;
	return blk_layout_equal(a->layout, b->layout);
}

bool blk_type_is_scalar(const BlkType *t)
{
	return t->kind == BLK_TYPE_TILE && t->rank == 0;
}

static void print_tile(FILE *out, const BlkType *t)
{
	fputs(blk_dtype_name(t->dtype), out);
	if (t->rank == 0)
		return;
	fputc('[', out);
	for (int i = 0; i < t->rank; i++) {
		if (i)
			fputs(", ", out);
		if (t->dims[i])
			blk_sym_print(out, t->dims[i]);
		else
			fputs("?", out);
	}
	fputc(']', out);
	if (t->layout) {
		char buf[256];
		blk_layout_format(buf, sizeof buf, t->layout);
		fprintf(out, "{%s}", buf);
	}
}

void blk_type_print(FILE *out, const BlkType *t)
{
	if (t->kind == BLK_TYPE_TILE) {
		print_tile(out, t);
		return;
	}
	fputs(t->space == BLK_SPACE_SHARED ? "ref<shared " : "ref<", out);
	print_tile(out, t);
	fputc('>', out);
}

const char *blk_type_str(BlkArena *a, const BlkType *t)
{
	BlkArenaStream s;
	blk_type_print(blk_arena_stream_open(&s), t);
	return blk_arena_stream_close(&s, a);
}

/* ---- op table ---------------------------------------------------------- */

static const struct {
	const char *name;
	unsigned flags;
} ops[] = { /* ORDER OP */
#define OP(e, n, f) { n, f },
#include "ops.def"
#undef OP
};

const char *blk_op_name(BlkOpKind k)
{
	return (unsigned)k < BLK_NUM_OPS ? ops[k].name : "?";
}

bool blk_op_is_atomic(BlkOpKind k)
{
	return k >= BLK_OP_ATOMIC_ADD && k <= BLK_OP_ATOMIC_CAS;
}

bool blk_op_gathers(const BlkOp *op)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	for (int d = 0; idx && idx->kind == BLK_ATTR_INDEX && d < idx->index.n; d++)
		if (idx->index.v[d].kind == BLK_INDEX_GATHER)
			return true;
	return false;
}

/* Whether r or a region inside it has an op of kind a..b. */
static bool region_has(const BlkRegion *r, BlkOpKind a, BlkOpKind b)
{
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		if (op->kind >= a && op->kind <= b)
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (region_has(op->regions[i], a, b))
				return true;
	}
	return false;
}

bool blk_kernel_multi_rank(const BlkKernel *k)
{
	for (int pi = 0; pi < k->nparams; pi++)
		if (k->params[pi].symmetric || region_has(k->params[pi].index_map, BLK_OP_RANK, BLK_OP_WORLD))
			return true;
	return region_has(k->body, BLK_OP_RANK, BLK_OP_WORLD); /* (adjacent in ops.def) */
}

bool blk_kernel_signals(const BlkKernel *k)
{
	return region_has(k->body, BLK_OP_SIGNAL_ADD, BLK_OP_SIGNAL_WAIT);
}

int blk_ref_param(const BlkKernel *k, const BlkValue *ref)
{
	while (ref->def && (ref->def->kind == BLK_OP_VIEW || ref->def->kind == BLK_OP_PEER ||
	                    ref->def->kind == BLK_OP_TRANS_VIEW))
		ref = ref->def->operands[0];
	if (ref->def)
		return ref->def->kind == BLK_OP_BLOCK_REF ? (int)blk_op_int(ref->def, "param", -1) : -1;
	return ref->owner == k->body && ref->index < k->nparams ? ref->index : -1;
}

bool blk_transpose_perm(const BlkOp *op, int rank, int *perm)
{
	const BlkAttr *a = blk_op_attr(op, "perm");
	if (!a) {
		perm[0] = 1, perm[1] = 0;
		return rank == 2;
	}
	if (a->kind != BLK_ATTR_STRING || rank < 1 || rank > BLK_MAX_RANK || (int)strlen(a->s) != rank)
		return false;
	bool seen[BLK_MAX_RANK] = { false };
	for (int d = 0; d < rank; d++) {
		int p = a->s[d] - '0';
		if (p < 0 || p >= rank || seen[p])
			return false;
		seen[p] = true;
		perm[d] = p;
	}
	return true;
}

int64_t blk_stride_class(int64_t st)
{
	return st == 0 || st == 1 ? st : st > 0 && st % 16 == 0 ? -16 : -1;
}

int blk_transpose_flip(const BlkOp *op)
{
	return (int)blk_op_int(op, "flip", 0);
}

bool blk_transpose_plain(const BlkOp *op)
{
	return op->kind == BLK_OP_TRANSPOSE && !blk_op_attr(op, "perm") && !blk_op_attr(op, "flip");
}

bool blk_op_strided(const BlkOp *op)
{
	const BlkAttr *idx = blk_op_attr(op, "idx");
	for (int d = 0; idx && idx->kind == BLK_ATTR_INDEX && d < idx->index.n; d++)
		if (blk_index_step(&idx->index.v[d]) > 1)
			return true;
	return false;
}

bool blk_op_is_scan(BlkOpKind k)
{
	return k >= BLK_OP_SCAN_SUM && k <= BLK_OP_SCAN_MIN;
}

unsigned blk_op_flags(BlkOpKind k)
{
	return (unsigned)k < BLK_NUM_OPS ? ops[k].flags : 0;
}

bool blk_op_from_name(const char *name, BlkOpKind *out)
{
	for (int i = 0; i < BLK_NUM_OPS; i++) {
		if (strcmp(ops[i].name, name) == 0) {
			*out = (BlkOpKind)i;
			return true;
		}
	}
	return false;
}

const char *blk_access_name(BlkAccess a)
{
	static const char *names[] = { "in", "out", "inout", "scratch" };
	return (unsigned)a < 4 ? names[a] : "?";
}

/* ---- modules and kernels ----------------------------------------------- */

BlkModule *blk_module_create(BlkArena *a)
{
	BlkModule *m = BLK_NEW(a, BlkModule);
	m->arena = a;
	return m;
}

/* The kernel starts with an empty body; params, sizes and grid are the
 * caller's to fill. */
BlkKernel *blk_kernel_add(BlkModule *m, const char *name, BlkLoc loc)
{
	BlkKernel *k = BLK_NEW(m->arena, BlkKernel);
	k->name = name;
	k->loc = loc;
	k->body = blk_region_create(m->arena);
	if (m->last)
		m->last->next = k;
	else
		m->first = k;
	m->last = k;
	m->nkernels++;
	return k;
}

BlkKernel *blk_module_find(const BlkModule *m, const char *name)
{
	for (BlkKernel *k = m->first; k; k = k->next)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

/* ---- regions, ops, builder --------------------------------------------- */

BlkRegion *blk_region_create(BlkArena *a)
{
	return BLK_NEW(a, BlkRegion);
}

BlkValue *blk_region_add_arg(BlkArena *a, BlkRegion *r, BlkType type, const char *name)
{
	BlkValue *v = BLK_NEW(a, BlkValue);
	v->type = type;
	v->owner = r;
	v->index = r->nargs;
	v->name = name;
	r->args = blk_arena_grow(a, r->args, (size_t)r->nargs, (size_t)r->nargs + 1, sizeof *r->args);
	r->args[r->nargs++] = v;
	return v;
}

void blk_builder_at_end(BlkBuilder *b, BlkArena *a, BlkRegion *r)
{
	b->arena = a;
	b->region = r;
	b->before = NULL;
}

void blk_builder_before(BlkBuilder *b, BlkArena *a, BlkOp *op)
{
	b->arena = a;
	b->region = op->parent;
	b->before = op;
}

static void link_op(BlkRegion *r, BlkOp *before, BlkOp *op)
{
	op->parent = r;
	op->next = before;
	op->prev = before ? before->prev : r->last;
	if (op->prev)
		op->prev->next = op;
	else
		r->first = op;
	if (before)
		before->prev = op;
	else
		r->last = op;
}

BlkOp *blk_build(BlkBuilder *b, BlkOpKind k, BlkLoc loc, int noperands,
                 BlkValue *const *operands, int nresults, const BlkType *types,
                 int nregions)
{
	BlkArena *a = b->arena;
	BlkOp *op = BLK_NEW(a, BlkOp);
	op->kind = k;
	op->loc = loc;
	op->noperands = noperands;
	op->operands = BLK_NEW_N(a, BlkValue *, noperands + 1);
	for (int i = 0; i < noperands; i++)
		op->operands[i] = operands[i];
	op->nresults = nresults;
	op->results = BLK_NEW_N(a, BlkValue *, nresults + 1);
	for (int i = 0; i < nresults; i++) {
		BlkValue *v = BLK_NEW(a, BlkValue);
		v->type = types[i];
		v->def = op;
		v->index = i;
		op->results[i] = v;
	}
	op->nregions = nregions;
	op->regions = BLK_NEW_N(a, BlkRegion *, nregions + 1);
	for (int i = 0; i < nregions; i++) {
		op->regions[i] = blk_region_create(a);
		op->regions[i]->parent = op;
	}
	link_op(b->region, b->before, op);
	return op;
}

BlkValue *blk_build1(BlkBuilder *b, BlkOpKind k, BlkLoc loc, BlkType type,
                     int noperands, BlkValue *const *operands)
{
	return blk_build(b, k, loc, noperands, operands, 1, &type, 0)->results[0];
}

BlkValue *blk_build_const_int(BlkBuilder *b, BlkLoc loc, BlkType type, int64_t v)
{
	BlkValue *r = blk_build1(b, BLK_OP_CONST, loc, type, 0, NULL);
	blk_op_set_int(b->arena, r->def, "value", v);
	return r;
}

BlkValue *blk_build_const_float(BlkBuilder *b, BlkLoc loc, BlkType type, double v)
{
	BlkValue *r = blk_build1(b, BLK_OP_CONST, loc, type, 0, NULL);
	blk_op_set_float(b->arena, r->def, "value", v);
	return r;
}

/* ---- attributes -------------------------------------------------------- */

/* The slot for `name`: the existing one (so setting twice replaces) or a
 * new one at the end (so attributes print in the order they were set). */
static BlkAttr *attr_slot(BlkArena *a, BlkOp *op, const char *name, BlkAttrKind kind)
{
	BlkAttr *at = NULL;
	for (int i = 0; i < op->nattrs && !at; i++)
		if (strcmp(op->attrs[i].name, name) == 0)
			at = &op->attrs[i];
	if (!at) {
		op->attrs = blk_arena_grow(a, op->attrs, (size_t)op->nattrs, (size_t)op->nattrs + 1,
		                           sizeof *op->attrs);
		at = &op->attrs[op->nattrs++];
		at->name = blk_arena_strdup(a, name);
	}
	at->kind = kind;
	return at;
}

void blk_op_set_int(BlkArena *a, BlkOp *op, const char *name, int64_t v)
{
	attr_slot(a, op, name, BLK_ATTR_INT)->i = v;
}

void blk_op_set_float(BlkArena *a, BlkOp *op, const char *name, double v)
{
	attr_slot(a, op, name, BLK_ATTR_FLOAT)->f = v;
}

void blk_op_set_string(BlkArena *a, BlkOp *op, const char *name, const char *s)
{
	attr_slot(a, op, name, BLK_ATTR_STRING)->s = blk_arena_strdup(a, s);
}

void blk_op_set_dtype(BlkArena *a, BlkOp *op, const char *name, BlkDType t)
{
	attr_slot(a, op, name, BLK_ATTR_DTYPE)->dtype = t;
}

void blk_op_set_index(BlkArena *a, BlkOp *op, const char *name, int n, const BlkIndex *idx)
{
	BlkIndex *copy = BLK_NEW_N(a, BlkIndex, n + 1);
	for (int i = 0; i < n; i++)
		copy[i] = idx[i];
	BlkAttr *at = attr_slot(a, op, name, BLK_ATTR_INDEX);
	at->index.n = n;
	at->index.v = copy;
}

const BlkAttr *blk_op_attr(const BlkOp *op, const char *name)
{
	/* (the verifier asks every op for its attrs after every pass: the same
	 * literal is usually the same pointer, and a first letter settles most
	 * misses, before strcmp) */
	for (int i = 0; i < op->nattrs; i++) {
		const char *a = op->attrs[i].name;
		if (a == name || (a[0] == name[0] && strcmp(a, name) == 0))
			return &op->attrs[i];
	}
	return NULL;
}

void blk_op_remove_attr(BlkOp *op, const char *name)
{
	const BlkAttr *at = blk_op_attr(op, name);
	if (!at)
		return;
	size_t i = (size_t)(at - op->attrs);
	memmove(&op->attrs[i], &op->attrs[i + 1], sizeof *op->attrs * ((size_t)op->nattrs - i - 1));
	op->nattrs--;
}

int64_t blk_op_int(const BlkOp *op, const char *name, int64_t dflt)
{
	const BlkAttr *at = blk_op_attr(op, name);
	return at && at->kind == BLK_ATTR_INT ? at->i : dflt;
}

/* ---- editing ----------------------------------------------------------- */

void blk_op_erase(BlkOp *op)
{
	BlkRegion *r = op->parent;
	if (!r)
		return;
	if (op->prev)
		op->prev->next = op->next;
	else
		r->first = op->next;
	if (op->next)
		op->next->prev = op->prev;
	else
		r->last = op->prev;
	op->prev = op->next = NULL;
	op->parent = NULL;
}

void blk_replace_uses(BlkRegion *r, BlkValue *from, BlkValue *to)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->noperands; i++)
			if (op->operands[i] == from)
				op->operands[i] = to;
		for (int i = 0; i < op->nregions; i++)
			blk_replace_uses(op->regions[i], from, to);
	}
}
