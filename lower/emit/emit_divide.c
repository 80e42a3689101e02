/* emit_divide.c - x / c for a constant c, exact and without div.rn.
 *
 * `/` on floats is IEEE division (div.rn.f32), about 27 issue slots an
 * element on sm_90 with a reciprocal on the MUFU pipe: `s / sqrt(D)` on
 * attention's scores doubled its time at D = 128.  For a constant
 * divisor c this emits, with r = RN(1/c) computed here,
 *
 *     q = RN(x r);  e = fma(-q, c, x);  q' = fma(e, r, q)
 *
 * (Markstein's correction: e is the exact remainder, q' the correctly
 * rounded quotient), three instructions, plus a range test.  The claim is
 * not taken on trust: for each c it is checked here against C's own
 * division for all 2^23 significands of x in [1, 2) (5 ms with a hardware
 * fma), and the sequence is used only where it held for every one.  That
 * check covers every x whose quotient, remainder and products stay normal
 * and finite: the sequence commutes with scaling x by a power of two and
 * with its sign.  2^-80 <= |x| < 2^100 with 2^-20 <= |c| <= 2^20 is such a
 * range (the remainder is a multiple of 2^(e_q + e_c - 46), normal there).
 * Each thread tests its registers; if any lies outside (0, an infinity, a
 * NaN, a huge or tiny value), it divides them all with div.rn instead, so
 * the result is RN(x / c) for every x.  A power of two is simpler still:
 * x * (1/c) is exact, subnormals included.
 */
#include "emit.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

static float f32_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* The sequence against RN(x / c) for x in [1, 2), c in [1, 2). */
#define CHECK_BODY                                                     \
	float r = 1.0f / c;                                            \
	for (uint32_t m = 0; m < (1u << 23); m++) {                    \
		float x = f32_of(0x3f800000u | m);                     \
		float q = x * r;                                       \
		float q2 = fmaf(fmaf(-q, c, x), r, q);                 \
		if (bits_of(q2) != bits_of(x / c))                     \
			return false;                                  \
	}                                                              \
	return true;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("fma"))) static bool check_fma(float c)
{
	CHECK_BODY
}
#endif

static bool check_libm(float c)
{
	CHECK_BODY
}

/* c's significand -> whether the check held; a few distinct divisors a
 * process, so a short list. */
enum { KNOWN = 64 };
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t known_sig[KNOWN];
static bool known_ok[KNOWN];
static int nknown;

bool blk_emit_reciprocal_division_exact(float c)
{
	if (!(fabsf(c) >= 0x1p-20f && fabsf(c) <= 0x1p20f))
		return false;
	uint32_t sig = bits_of(c) & 0x7fffffu;
	pthread_mutex_lock(&known_lock);
	for (int i = 0; i < nknown; i++)
		if (known_sig[i] == sig) {
			bool ok = known_ok[i];
			pthread_mutex_unlock(&known_lock);
			return ok;
		}
	pthread_mutex_unlock(&known_lock);
	float m = f32_of(0x3f800000u | sig);
	bool ok;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	ok = __builtin_cpu_supports("fma") ? check_fma(m) : check_libm(m);
#else
	ok = check_libm(m);
#endif
	pthread_mutex_lock(&known_lock);
	if (nknown < KNOWN)
		known_sig[nknown] = sig, known_ok[nknown++] = ok;
	pthread_mutex_unlock(&known_lock);
	return ok;
}

/* The constant v is, through broadcasts. */
static bool constant_f32(const BlkValue *v, float *c)
{
	while (v->def && v->def->kind == BLK_OP_BROADCAST)
		v = v->def->operands[0];
	const BlkAttr *a = v->def && v->def->kind == BLK_OP_CONST ? blk_op_attr(v->def, "value") : NULL;
	if (!a || a->kind != BLK_ATTR_FLOAT)
		return false;
	*c = (float)a->f;
	return true;
}

static LLVMValueRef fma3(Emit *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef args[3] = { a, b, c };
	LLVMTypeRef t = E->f32;
	return blk_emit_intrinsic(E, "llvm.fma", &t, 1, args, 3);
}

bool blk_emit_div_by_constant(Emit *E, const BlkOp *op, EVal *ev, int n)
{
	BlkDType dt = op->results[0]->type.dtype;
	float c;
	if (op->kind != BLK_OP_DIV || !blk_dtype_is_float(dt) || !constant_f32(op->operands[1], &c) ||
	    !isfinite(c) || c == 0)
		return false;
	int e;
	bool pow2 = frexpf(c, &e) == 0.5f || frexpf(c, &e) == -0.5f;
	float inv = 1.0f / c;
	if (!(pow2 ? isfinite(inv) && inv != 0 : blk_emit_reciprocal_division_exact(c)))
		return false;
	const ETile *in = blk_emit_tile(E, op->operands[0]);
	int nin = blk_layout_nregs(in->l);
	LLVMValueRef *x = BLK_NEW_N(E->c->a, LLVMValueRef, n);
	for (int i = 0; i < n; i++)
		x[i] = blk_emit_to_f32(E, in->r[nin == 1 ? 0 : i], dt);
	LLVMValueRef cr = LLVMConstReal(E->f32, c), ir = LLVMConstReal(E->f32, inv);
	if (pow2) {
		for (int i = 0; i < n; i++)
			ev->t.r[i] = blk_emit_from_f32(E, LLVMBuildFMul(E->b, x[i], ir, ""), dt);
		blk_emit_bind(E, op->results[0], ev);
		return true;
	}
	/* 2^-80 <= |x| < 2^100 as one unsigned compare of |x|'s bits */
	LLVMValueRef lo = blk_emit_i32(E, 0x17800000), span = blk_emit_i32(E, 0x71800000 - 0x17800000);
	LLVMValueRef all = NULL, *q = BLK_NEW_N(E->c->a, LLVMValueRef, n);
	for (int i = 0; i < n; i++) {
		LLVMValueRef a = LLVMBuildAnd(E->b, LLVMBuildBitCast(E->b, x[i], E->i32, ""), blk_emit_i32(E, 0x7fffffff), "");
		LLVMValueRef in_range = LLVMBuildICmp(E->b, LLVMIntULT, LLVMBuildSub(E->b, a, lo, ""), span, "");
		all = blk_emit_and(E, all, in_range);
		LLVMValueRef qi = LLVMBuildFMul(E->b, x[i], ir, "");
		q[i] = fma3(E, fma3(E, LLVMBuildFNeg(E->b, qi, ""), cr, x[i]), ir, qi);
	}
	LLVMBasicBlockRef fast = LLVMGetInsertBlock(E->b);
	LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(E->cx, E->fn, "div.ieee");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(E->cx, E->fn, "div.done");
	LLVMBuildCondBr(E->b, all, done, slow);
	LLVMPositionBuilderAtEnd(E->b, slow);
	LLVMValueRef *d = BLK_NEW_N(E->c->a, LLVMValueRef, n);
	for (int i = 0; i < n; i++)
		d[i] = LLVMBuildFDiv(E->b, x[i], cr, "");
	LLVMBuildBr(E->b, done);
	LLVMPositionBuilderAtEnd(E->b, done);
	for (int i = 0; i < n; i++) { /* the phis first, the conversions after */
		LLVMValueRef vals[2] = { q[i], d[i] };
		LLVMBasicBlockRef from[2] = { fast, slow };
		q[i] = LLVMBuildPhi(E->b, E->f32, "");
		LLVMAddIncoming(q[i], vals, from, 2);
	}
	for (int i = 0; i < n; i++)
		ev->t.r[i] = blk_emit_from_f32(E, q[i], dt);
	blk_emit_bind(E, op->results[0], ev);
	return true;
}
