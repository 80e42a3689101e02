/* interp_ops.c - the interpreter's tile arithmetic.
 *
 * Exactly the semantics of docs/language.md, written for clarity: one plain
 * loop per op over the elements.  Float dtypes compute in f32 and round to
 * f16/bf16 after every op; i8/u8 compute in i32 and wrap to 8 bits as each
 * result is stored (put_int).  i32 arithmetic wraps (done in uint32_t, so C has
 * no overflow UB); `//` and `%` are floor division and its remainder, and
 * division by zero gives 0 for both: the GPU would give garbage, a trap
 * helps nobody, and a defined answer keeps the oracle deterministic.
 * u32 is held as the i32 with its bits: + - * & | ^ << are i32's, while
 * `~/`, `%`, `>>` (logical), comparisons, max, min and conversions to
 * float take the unsigned value.
 */
#include "interp_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- tiles -------------------------------------------------------------- */

int blk_itile_esize(BlkDType dt)
{
	return dt == BLK_BOOL ? 1 : 4;
}

BlkITile blk_itile_new(BlkDType dt, int rank, const int64_t *dims)
{
	BlkITile t = { .dtype = dt, .rank = rank, .n = 1 };
	for (int i = 0; i < rank; i++) {
		t.dims[i] = dims[i];
		t.n *= dims[i];
	}
	size_t bytes = (size_t)t.n * (size_t)blk_itile_esize(dt);
	t.buf = calloc(1, sizeof(BlkIBuf) + bytes + 1);
	if (!t.buf)
		blk_die("interp: out of memory (%zu bytes)", bytes);
	t.buf->refs = 1;
	t.buf->bytes = bytes;
	return t;
}

BlkITile blk_itile_retain(const BlkITile *t)
{
	t->buf->refs++;
	return *t;
}

void blk_itile_release(BlkITile *t)
{
	if (t->buf && --t->buf->refs == 0)
		free(t->buf);
	t->buf = NULL;
}

float blk_iround(BlkDType dt, float x)
{
	switch (dt) {
	case BLK_F16: return blk_f16_to_f32(blk_f32_to_f16(x));
	case BLK_BF16: return blk_bf16_to_f32(blk_f32_to_bf16(x));
	case BLK_F8E4M3: case BLK_F8E5M2: return blk_fp8_to_f32(dt, blk_f32_to_fp8(dt, x));
	default: return x;
	}
}

/* Values held as floats: the float dtypes and fp8. */
static bool is_float(BlkDType dt)
{
	return blk_dtype_is_float(dt) || blk_dtype_is_fp8(dt);
}

/* Element i of a tile as an int (bool 0/1); the tile is not float. */
static int32_t get_int(const BlkITile *t, int64_t i)
{
	return t->dtype == BLK_BOOL ? BLK_ITB(t)[i] : BLK_ITI(t)[i];
}

/* v as a key that orders as the dtype does: u32's bits with the top one
 * flipped compare as i32s do, in unsigned order. */
static int32_t okey(BlkDType dt, int32_t v)
{
	return dt == BLK_U32 ? (int32_t)((uint32_t)v ^ 0x80000000u) : v;
}

static void put_int(BlkITile *t, int64_t i, int32_t v)
{
	if (t->dtype == BLK_BOOL)
		BLK_ITB(t)[i] = v != 0;
	else
		BLK_ITI(t)[i] = blk_int_wrap(t->dtype, v);
}

/* ---- elementwise -------------------------------------------------------- */

/* The activations, in f32 as the GPU computes them (emit_elementwise.c);
 * each rounds once to f16/bf16 after, as one op. */
static float gelu(float x)
{
	return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

static float gelu_tanh(float x)
{
	return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

/* log(1 + e^x) without overflow: e^x is taken only of -|x|. */
static float softplus(float x)
{
	return (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))); /* NaN: NaN */
}

static float unary_float(BlkOpKind k, float x)
{
	switch (k) {
	case BLK_OP_NEG: return -x;
	case BLK_OP_EXP: return expf(x);
	case BLK_OP_LOG: return logf(x);
	case BLK_OP_SQRT: return sqrtf(x);
	case BLK_OP_RSQRT: return 1.0f / sqrtf(x);
	case BLK_OP_TANH: return tanhf(x);
	case BLK_OP_ABS: return fabsf(x);
	case BLK_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
	case BLK_OP_ERF: return erff(x);
	case BLK_OP_LOG1P: return log1pf(x);
	case BLK_OP_EXPM1: return expm1f(x);
	case BLK_OP_FLOOR: return floorf(x);
	case BLK_OP_CEIL: return ceilf(x);
	case BLK_OP_EXP2: return exp2f(x);
	case BLK_OP_LOG2: return log2f(x);
	case BLK_OP_SILU: return x / (1.0f + expf(-x));
	case BLK_OP_GELU: return gelu(x);
	case BLK_OP_GELU_TANH: return gelu_tanh(x);
	case BLK_OP_SOFTPLUS: return softplus(x);
	default: blk_die("interp: %s is not a float op", blk_op_name(k));
	}
}

static int32_t unary_int(BlkOpKind k, BlkDType dt, int32_t x)
{
	switch (k) {
	case BLK_OP_NEG: return (int32_t)(0u - (uint32_t)x);
	case BLK_OP_NOT: return dt == BLK_BOOL ? !x : ~x;
	case BLK_OP_ABS: return x < 0 && dt != BLK_U32 ? (int32_t)(0u - (uint32_t)x) : x;
	default: blk_die("interp: %s is not an integer op", blk_op_name(k));
	}
}

void blk_iop_unary(BlkOpKind k, const BlkITile *a, BlkITile *r)
{
	int64_t sa = a->n == 1 ? 0 : 1;
	if (is_float(a->dtype)) {
		for (int64_t i = 0; i < r->n; i++)
			BLK_ITF(r)[i] = blk_iround(r->dtype, unary_float(k, BLK_ITF(a)[i * sa]));
	} else {
		for (int64_t i = 0; i < r->n; i++)
			put_int(r, i, unary_int(k, a->dtype, get_int(a, i * sa)));
	}
}


void blk_iop_cast(const BlkITile *a, BlkITile *r)
{
	int64_t sa = a->n == 1 ? 0 : 1;
	for (int64_t i = 0; i < r->n; i++) {
		if (is_float(a->dtype)) {
			float x = BLK_ITF(a)[i * sa];
			if (is_float(r->dtype))
				BLK_ITF(r)[i] = blk_iround(r->dtype, x);
			else if (r->dtype == BLK_BOOL)
				BLK_ITB(r)[i] = x != 0.0f;
			else
				BLK_ITI(r)[i] = blk_f32_to_int(r->dtype, x);
		} else {
			int32_t x = get_int(a, i * sa);
			if (is_float(r->dtype))
				BLK_ITF(r)[i] = blk_iround(r->dtype, a->dtype == BLK_U32 ? (float)(uint32_t)x : (float)x);
			else
				put_int(r, i, x);
		}
	}
}

/* Max and min propagate NaN and order -0 below +0, as the GPU's max/min. */
static float fmax_nan(float x, float y)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == y)
		return signbit(x) ? y : x;
	return x > y ? x : y;
}

static float fmin_nan(float x, float y)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == y)
		return signbit(x) ? x : y;
	return x < y ? x : y;
}

static float binary_float(BlkOpKind k, float x, float y)
{
	switch (k) {
	case BLK_OP_ADD: return x + y;
	case BLK_OP_SUB: return x - y;
	case BLK_OP_MUL: return x * y;
	case BLK_OP_DIV: return x / y;
	case BLK_OP_MAX: return fmax_nan(x, y);
	case BLK_OP_MIN: return fmin_nan(x, y);
	case BLK_OP_POW: return powf(x, y);
	case BLK_OP_EQ: return x == y;
	case BLK_OP_NE: return x != y;
	case BLK_OP_LT: return x < y;
	case BLK_OP_LE: return x <= y;
	case BLK_OP_GT: return x > y;
	case BLK_OP_GE: return x >= y;
	default: blk_die("interp: %s is not a float op", blk_op_name(k));
	}
}

/* On dt's values: u32 divides, shifts and compares unsigned. */
static int32_t binary_int(BlkOpKind k, BlkDType dt, int32_t x, int32_t y)
{
	uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
	int32_t ox = okey(dt, x), oy = okey(dt, y);
	bool u = dt == BLK_U32;
	switch (k) {
	case BLK_OP_ADD: return (int32_t)(ux + uy);
	case BLK_OP_SUB: return (int32_t)(ux - uy);
	case BLK_OP_MUL: return (int32_t)(ux * uy);
	case BLK_OP_DIV:
	case BLK_OP_FLOORDIV: return u ? blk_u32_div(x, y) : blk_i32_floordiv(x, y);
	case BLK_OP_MOD: return u ? blk_u32_mod(x, y) : blk_i32_mod(x, y);
	case BLK_OP_MAX: return ox > oy ? x : y;
	case BLK_OP_MIN: return ox < oy ? x : y;
	case BLK_OP_AND: return x & y;
	case BLK_OP_OR: return x | y;
	case BLK_OP_XOR: return x ^ y;
	case BLK_OP_SHL: return blk_i32_shl(x, y);
	case BLK_OP_SHR: return u ? blk_u32_shr(x, y) : blk_i32_shr(x, y);
	case BLK_OP_EQ: return x == y;
	case BLK_OP_NE: return x != y;
	case BLK_OP_LT: return ox < oy;
	case BLK_OP_LE: return ox <= oy;
	case BLK_OP_GT: return ox > oy;
	case BLK_OP_GE: return ox >= oy;
	default: blk_die("interp: %s is not an integer op", blk_op_name(k));
	}
}

void blk_iop_binary(BlkOpKind k, const BlkITile *a, const BlkITile *b, BlkITile *r)
{
	int64_t sa = a->n == 1 ? 0 : 1, sb = b->n == 1 ? 0 : 1;
	if (is_float(a->dtype)) {
		bool cmp = r->dtype == BLK_BOOL;
		for (int64_t i = 0; i < r->n; i++) {
			float v = binary_float(k, BLK_ITF(a)[i * sa], BLK_ITF(b)[i * sb]);
			if (cmp)
				BLK_ITB(r)[i] = v != 0.0f;
			else
				BLK_ITF(r)[i] = blk_iround(r->dtype, v);
		}
	} else {
		for (int64_t i = 0; i < r->n; i++)
			put_int(r, i, binary_int(k, a->dtype, get_int(a, i * sa), get_int(b, i * sb)));
	}
}

/* a * b + c of floats, rounded once (fmaf), then to the dtype. */
void blk_iop_fma(const BlkITile *a, const BlkITile *b, const BlkITile *c, BlkITile *r)
{
	int64_t sa = a->n == 1 ? 0 : 1, sb = b->n == 1 ? 0 : 1, sc = c->n == 1 ? 0 : 1;
	for (int64_t i = 0; i < r->n; i++)
		BLK_ITF(r)[i] = blk_iround(r->dtype, fmaf(BLK_ITF(a)[i * sa], BLK_ITF(b)[i * sb], BLK_ITF(c)[i * sc]));
}

/* Element i's 32-bit word of operand j (one element: broadcast). */
static uint32_t word_at(const BlkITile *const *w, int j, int64_t i)
{
	return (uint32_t)BLK_ITI(w[j])[w[j]->n == 1 ? 0 : i];
}

void blk_iop_random(BlkOpKind k, int word, const BlkITile *const *w, BlkITile *r)
{
	for (int64_t i = 0; i < r->n; i++) {
		if (k == BLK_OP_UNIFORM) {
			BLK_ITF(r)[i] = blk_rand_uniform(word_at(w, 0, i));
		} else if (k == BLK_OP_NORMAL) {
			BLK_ITF(r)[i] = blk_rand_normal(word_at(w, 0, i), word_at(w, 1, i));
		} else {
			uint32_t seed = word_at(w, 0, i), c[4];
			for (int j = 0; j < 4; j++)
				c[j] = word_at(w, j + 1, i);
			blk_philox(seed, blk_philox_key_hi((int32_t)seed), c);
			BLK_ITI(r)[i] = (int32_t)c[word];
		}
	}
}

void blk_iop_select(const BlkITile *c, const BlkITile *a, const BlkITile *b, BlkITile *r)
{
	int64_t sc = c->n == 1 ? 0 : 1, sa = a->n == 1 ? 0 : 1, sb = b->n == 1 ? 0 : 1;
	size_t es = (size_t)blk_itile_esize(r->dtype);
	for (int64_t i = 0; i < r->n; i++) {
		const BlkITile *src = BLK_ITB(c)[i * sc] ? a : b;
		int64_t j = i * (src == a ? sa : sb);
		memcpy(r->buf->data + (size_t)i * es, src->buf->data + (size_t)j * es, es);
	}
}

/* ---- shapes --------------------------------------------------------------- */

void blk_iop_broadcast(const BlkITile *a, BlkITile *r)
{
	int64_t st[BLK_MAX_RANK] = { 0 }, idx[BLK_MAX_RANK] = { 0 };
	int64_t s = 1;
	for (int j = r->rank - 1; j >= 0; j--) {
		int od = j - (r->rank - a->rank);
		if (od < 0)
			continue;
		st[j] = a->dims[od] == 1 ? 0 : s;
		s *= a->dims[od];
	}
	size_t es = (size_t)blk_itile_esize(r->dtype);
	for (int64_t i = 0; i < r->n; i++) {
		int64_t src = 0;
		for (int j = 0; j < r->rank; j++)
			src += idx[j] * st[j];
		memcpy(r->buf->data + (size_t)i * es, a->buf->data + (size_t)src * es, es);
		for (int j = r->rank - 1; j >= 0 && ++idx[j] == r->dims[j]; j--)
			idx[j] = 0;
	}
}

void blk_iop_transpose(const BlkITile *a, const int *perm, int flip, BlkITile *r)
{
	int64_t ast[BLK_MAX_RANK], st = 1, idx[BLK_MAX_RANK] = { 0 };
	for (int d = a->rank - 1; d >= 0; d--)
		ast[d] = st, st *= a->dims[d];
	size_t es = (size_t)blk_itile_esize(r->dtype);
	for (int64_t i = 0; i < r->n; i++) { /* idx: result coordinates, row-major */
		int64_t from = 0;
		for (int d = 0; d < r->rank; d++)
			from += (flip >> d & 1 ? r->dims[d] - 1 - idx[d] : idx[d]) * ast[perm[d]];
		memcpy(r->buf->data + (size_t)i * es, a->buf->data + (size_t)from * es, es);
		for (int d = r->rank - 1; d >= 0 && ++idx[d] == r->dims[d]; d--)
			idx[d] = 0;
	}
}

void blk_iop_iota(int axis, BlkITile *r)
{
	int64_t inner = 1;
	for (int j = axis + 1; j < r->rank; j++)
		inner *= r->dims[j];
	int64_t len = r->rank ? r->dims[axis] : 1;
	for (int64_t i = 0; i < r->n; i++)
		BLK_ITI(r)[i] = (int32_t)(i / inner % len);
}

void blk_iop_splat(BlkITile *r, bool isf, int64_t iv, double fv)
{
	for (int64_t i = 0; i < r->n; i++) {
		if (is_float(r->dtype))
			BLK_ITF(r)[i] = blk_iround(r->dtype, isf ? (float)fv : (float)iv);
		else if (r->dtype == BLK_BOOL)
			BLK_ITB(r)[i] = isf ? fv != 0.0 : iv != 0;
		else
			BLK_ITI(r)[i] = isf ? blk_f32_to_int(r->dtype, (float)fv) : blk_int_wrap(r->dtype, iv);
	}
}

/* ---- reductions and dot ---------------------------------------------------- */

static float reduce_float(BlkOpKind k, const float *x, int64_t len, int64_t stride)
{
	float acc = k == BLK_OP_REDUCE_SUM ? 0.0f : k == BLK_OP_REDUCE_MAX ? -INFINITY : INFINITY;
	for (int64_t i = 0; i < len; i++) {
		float v = x[i * stride];
		if (k == BLK_OP_REDUCE_SUM)
			acc += v;
		else
			acc = k == BLK_OP_REDUCE_MAX ? fmax_nan(acc, v) : fmin_nan(acc, v);
	}
	return acc;
}

static int32_t reduce_int(BlkOpKind k, const BlkITile *a, int64_t at, int64_t len,
                          int64_t stride)
{
	bool isb = a->dtype == BLK_BOOL;
	int32_t acc = k == BLK_OP_REDUCE_SUM ? 0 : k == BLK_OP_REDUCE_MAX ? (isb ? 0 : okey(a->dtype, INT32_MIN))
	                                                                  : (isb ? 1 : okey(a->dtype, INT32_MAX));
	for (int64_t i = 0; i < len; i++) {
		int32_t v = get_int(a, at + i * stride), ov = okey(a->dtype, v), oa = okey(a->dtype, acc);
		if (k == BLK_OP_REDUCE_SUM)
			acc = (int32_t)((uint32_t)acc + (uint32_t)v);
		else if (k == BLK_OP_REDUCE_MAX)
			acc = ov > oa ? v : acc;
		else
			acc = ov < oa ? v : acc;
	}
	return acc;
}

/* Sums accumulate in f32 in index order; f16/bf16 round once at the end. */
void blk_iop_reduce(BlkOpKind k, const BlkITile *a, int axis, BlkITile *r)
{
	int64_t outer = 1, inner = 1, len = a->dims[axis];
	for (int j = 0; j < axis; j++)
		outer *= a->dims[j];
	for (int j = axis + 1; j < a->rank; j++)
		inner *= a->dims[j];
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < inner; i++) {
			int64_t at = o * len * inner + i, ri = o * inner + i;
			if (is_float(a->dtype))
				BLK_ITF(r)[ri] = blk_iround(r->dtype,
				                            reduce_float(k, BLK_ITF(a) + at, len, inner));
			else
				put_int(r, ri, reduce_int(k, a, at, len, inner));
		}
	}
}

/* Whether v at i beats the best so far (b, at its smaller index): larger
 * (argmax) or smaller; a NaN beats every number and the first NaN stays. */
static bool arg_beats(bool mx, float v, float b)
{
	if (isnan(b))
		return false;
	return isnan(v) || (mx ? v > b : v < b);
}

/* The first index of the largest (argmax) or smallest element along axis. */
void blk_iop_argreduce(BlkOpKind k, const BlkITile *a, int axis, BlkITile *r)
{
	int64_t outer = 1, inner = 1, len = a->dims[axis];
	bool mx = k == BLK_OP_REDUCE_ARGMAX, fl = is_float(a->dtype);
	for (int j = 0; j < axis; j++)
		outer *= a->dims[j];
	for (int j = axis + 1; j < a->rank; j++)
		inner *= a->dims[j];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t at = o * len * inner + i, best = 0;
			for (int64_t e = 1; e < len; e++) {
				int64_t p = at + e * inner, q = at + best * inner;
				bool win = fl ? arg_beats(mx, BLK_ITF(a)[p], BLK_ITF(a)[q])
				              : (mx ? okey(a->dtype, get_int(a, p)) > okey(a->dtype, get_int(a, q))
				                    : okey(a->dtype, get_int(a, p)) < okey(a->dtype, get_int(a, q)));
				best = win ? e : best;
			}
			BLK_ITI(r)[o * inner + i] = (int32_t)best;
		}
}

/* One step of a scan: acc combined with v (sum and product wrap on i32). */
static float scan_step_float(BlkOpKind k, float acc, float v)
{
	switch (k) {
	case BLK_OP_SCAN_SUM: return acc + v;
	case BLK_OP_SCAN_PROD: return acc * v;
	case BLK_OP_SCAN_MAX: return fmax_nan(acc, v);
	default: return fmin_nan(acc, v);
	}
}

static int32_t scan_step_int(BlkOpKind k, BlkDType dt, int32_t acc, int32_t v)
{
	switch (k) {
	case BLK_OP_SCAN_SUM: return (int32_t)((uint32_t)acc + (uint32_t)v);
	case BLK_OP_SCAN_PROD: return (int32_t)((uint32_t)acc * (uint32_t)v);
	case BLK_OP_SCAN_MAX: return okey(dt, v) > okey(dt, acc) ? v : acc;
	default: return okey(dt, v) < okey(dt, acc) ? v : acc;
	}
}

/* Inclusive scans start from the identity (so a sum's -0.0 becomes +0.0,
 * as on the GPU) and run in index order (descending if reverse); f16/bf16 accumulate in f32 and
 * each element is rounded from the running value. */
void blk_iop_scan(BlkOpKind k, const BlkITile *a, int axis, bool reverse, BlkITile *r)
{
	int64_t outer = 1, inner = 1, len = a->dims[axis];
	for (int j = 0; j < axis; j++)
		outer *= a->dims[j];
	for (int j = axis + 1; j < a->rank; j++)
		inner *= a->dims[j];
	bool fl = is_float(a->dtype);
	float fid = k == BLK_OP_SCAN_SUM ? 0.0f : k == BLK_OP_SCAN_PROD ? 1.0f
	          : k == BLK_OP_SCAN_MAX ? -INFINITY : INFINITY;
	int32_t iid = k == BLK_OP_SCAN_SUM ? 0 : k == BLK_OP_SCAN_PROD ? 1
	            : okey(a->dtype, k == BLK_OP_SCAN_MAX ? INT32_MIN : INT32_MAX);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			float facc = fid;
			int32_t iacc = iid;
			for (int64_t n = 0; n < len; n++) {
				int64_t at = (o * len + (reverse ? len - 1 - n : n)) * inner + i;
				if (fl) {
					facc = scan_step_float(k, facc, BLK_ITF(a)[at]);
					BLK_ITF(r)[at] = blk_iround(r->dtype, facc);
				} else {
					iacc = scan_step_int(k, a->dtype, iacc, get_int(a, at));
					put_int(r, at, iacc);
				}
			}
		}
}

/* i8/u8 operands: exact products summed in i32, wrapping (as the GPU's
 * integer multiply-adds). */
static void dot_int(const BlkITile *a, const BlkITile *b, const BlkITile *acc, BlkITile *r)
{
	int64_t M = a->dims[0], K = a->dims[1], N = b->dims[1];
	int32_t *ri = BLK_ITI(r);
	const int32_t *ai = BLK_ITI(a), *bi = BLK_ITI(b);
	for (int64_t i = 0; i < M * N; i++)
		ri[i] = acc ? BLK_ITI(acc)[i] : 0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++)
			for (int64_t n = 0; n < N; n++)
				ri[m * N + n] = (int32_t)((uint32_t)ri[m * N + n] +
				                          (uint32_t)(ai[m * K + k] * bi[k * N + n]));
}

/* Row m of r accumulates over k ascending, each step one fmaf: the order the
 * GPU's SIMT path uses, so f32 results compare tightly. */
void blk_iop_dot(const BlkITile *a, const BlkITile *b, const BlkITile *acc, BlkITile *r)
{
	int64_t M = a->dims[0], K = a->dims[1], N = b->dims[1];
	if (!is_float(a->dtype)) {
		dot_int(a, b, acc, r);
		return;
	}
	float *rf = BLK_ITF(r);
	const float *af = BLK_ITF(a), *bf = BLK_ITF(b);
	if (acc)
		memcpy(rf, BLK_ITF(acc), (size_t)(M * N) * sizeof(float));
	else
		memset(rf, 0, (size_t)(M * N) * sizeof(float));
	for (int64_t m = 0; m < M; m++) {
		float *row = rf + m * N;
		for (int64_t k = 0; k < K; k++) {
			float x = af[m * K + k];
			const float *brow = bf + k * N;
			for (int64_t n = 0; n < N; n++)
				row[n] = fmaf(x, brow[n], row[n]);
		}
	}
}

/* ---- printing -------------------------------------------------------------- */

static void print_elem(FILE *out, const BlkITile *t, int64_t i)
{
	if (is_float(t->dtype))
		fprintf(out, "%g", (double)BLK_ITF(t)[i]);
	else if (t->dtype == BLK_BOOL)
		fputs(BLK_ITB(t)[i] ? "true" : "false", out);
	else if (t->dtype == BLK_U32)
		fprintf(out, "%" PRIu32, (uint32_t)BLK_ITI(t)[i]);
	else
		fprintf(out, "%" PRId32, BLK_ITI(t)[i]);
}

/* Dims longer than 8 show their first and last 3 entries around "...". */
static void print_dim(FILE *out, const BlkITile *t, int d, int64_t at)
{
	if (d == t->rank) {
		print_elem(out, t, at);
		return;
	}
	int64_t stride = 1;
	for (int j = d + 1; j < t->rank; j++)
		stride *= t->dims[j];
	int64_t len = t->dims[d];
	bool elide = len > 8;
	fputc('[', out);
	for (int64_t i = 0; i < len; i++) {
		if (elide && i == 3) {
			fputs(", ...", out);
			i = len - 4;
			continue;
		}
		if (i)
			fputs(", ", out);
		print_dim(out, t, d + 1, at + i * stride);
	}
	fputc(']', out);
}

void blk_iop_print(FILE *out, const BlkITile *t)
{
	print_dim(out, t, 0, 0);
}
