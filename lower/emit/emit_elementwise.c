/* emit_elementwise.c - leaves, arithmetic, comparisons, casts, math.
 *
 * Elementwise ops work register by register: operands share the result's
 * layout (tile.c made sure).  f16/bf16 compute in f32 and round after each
 * op (cvt.rn), as docs/language.md asks; i8/u8 live in i8 registers and
 * compute in i32 (sign- or zero-extended), truncated after each op.
 * Accuracy of the math on f32:
 * sqrt and div are IEEE (sqrt.rn, div.rn; a division by a constant takes
 * emit_divide.c's exact sequence); rsqrt is 1/sqrt with both
 * correctly rounded (<= 1 ulp); exp is ex2.approx.ftz(x * log2 e) (about 2
 * ulp plus |x| ulp from the scaling; of a - b, b broadcast, |b| ulp:
 * exp_of_difference; results below 2^-126 flush to 0: the
 * non-ftz form costs three more instructions an element, which softmax
 * and attention pay per score); log is lg2.approx(x) * ln 2 (about 2
 * ulp, absolute 2^-22 near 1); tanh is 1 - 2 / (exp(2x) + 1), the
 * division div.approx.ftz (2 ulp; the IEEE division's
 * slow path cost a gelu epilogue a third of its matmul's time): absolute
 * error about 1e-7, relative larger near 0.  exp2 and log2 are ex2/lg2
 * alone; the activations (silu, gelu's two forms, softplus) are built of
 * the functions above, so they inherit their accuracy; fma is fma.rn,
 * the interpreter's fmaf exactly.
 */
#include "emit.h"

#include <math.h>

static LLVMValueRef fconst(Emit *E, double v)
{
	return LLVMConstReal(E->f32, v);
}

/* ---- leaves -------------------------------------------------------------------- */

static LLVMValueRef const_of(Emit *E, const BlkOp *op)
{
	const BlkAttr *a = blk_op_attr(op, "value");
	BlkDType dt = op->results[0]->type.dtype;
	double f = !a ? 0 : a->kind == BLK_ATTR_FLOAT ? a->f : (double)a->i;
	if (blk_dtype_is_float(dt))
		return LLVMConstReal(blk_emit_reg_type(E, dt), f);
	if (blk_dtype_is_fp8(dt)) /* its bits */
		return LLVMConstInt(E->i8, blk_f32_to_fp8(dt, (float)f), false);
	bool fl = a && a->kind == BLK_ATTR_FLOAT;
	if (dt == BLK_BOOL) /* as the interpreter: any nonzero value is true */
		return LLVMConstInt(E->i1, fl ? f != 0 : a && a->i != 0, false);
	int32_t v = !a ? 0 : fl ? blk_f32_to_int(dt, (float)a->f) : blk_int_wrap(dt, a->i);
	return LLVMConstInt(blk_emit_reg_type(E, dt), (unsigned long long)(int64_t)v, true);
}

LLVMValueRef blk_emit_program_id(Emit *E, int a)
{
	static const char *const ctaid[3] = {
		"llvm.nvvm.read.ptx.sreg.ctaid.x",
		"llvm.nvvm.read.ptx.sreg.ctaid.y",
		"llvm.nvvm.read.ptx.sreg.ctaid.z",
	};
	const BlkLaunch *l = E->c->k->launch;
	LLVMValueRef v = blk_emit_intrinsic(E, ctaid[l->axis[a]], NULL, 0, NULL, 0);
	if (!l->div[a]) /* not folded */
		return v;
	int64_t d = 0, m = 0;
	bool dc = blk_sym_is_const(l->div[a], &d), mc = blk_sym_is_const(l->mod[a], &m);
	/* an axis of 0 programs launches none: any divisor will do */
	if (!dc || d > 1)
		v = LLVMBuildUDiv(E->b, v, dc ? blk_emit_i32(E, d) : blk_emit_sym(E, l->div[a]), "");
	return LLVMBuildURem(E->b, v, mc ? blk_emit_i32(E, m > 0 ? m : 1) : blk_emit_sym(E, l->mod[a]), "");
}

/* A program id: its CUDA axis as the launch header maps it (a persistent
 * kernel's axis 0: the CTA, persist.c); seq axes were replaced by loop
 * ivs, and an IR without a grid (no blockspec) runs one program. */
static LLVMValueRef program_id(Emit *E, const BlkOp *op)
{
	int64_t a = blk_op_int(op, "axis", 0);
	const BlkLaunch *l = E->c->k->launch;
	if (!l->grid[0] || a >= E->c->k->grid_rank || l->axis[a] < 0)
		return blk_emit_i32(E, 0);
	return blk_emit_program_id(E, (int)a);
}

void blk_emit_leaf(Emit *E, const BlkOp *op)
{
	const BlkValue *v = op->results[0];
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, blk_emit_layout(E, v));
	const BlkLayout *l = ev->t.l;
	int n = blk_layout_nregs(l), axis = (int)blk_op_int(op, "axis", 0);
	LLVMValueRef s = NULL;
	if (op->kind == BLK_OP_PROGRAM_ID)
		s = program_id(E, op);
	else if (op->kind == BLK_OP_CLUSTER_RANK)
		s = blk_emit_intrinsic(E, "llvm.nvvm.read.ptx.sreg.cluster.ctarank", NULL, 0, NULL, 0);
	else if (op->kind == BLK_OP_NUM_PROGRAMS)
		s = axis < E->c->k->grid_rank ? blk_emit_sym(E, E->c->k->grid[axis]) : blk_emit_i32(E, 1);
	else if (op->kind == BLK_OP_SIZE)
		s = blk_emit_size(E, blk_op_attr(op, "name")->s);
	else if (op->kind != BLK_OP_IOTA)
		s = const_of(E, op);
	int rd[BLK_MAX_RANK];
	for (int r = 0; r < n; r++) {
		if (s) {
			ev->t.r[r] = s;
			continue;
		}
		blk_layout_reg_split(l, r, rd);
		ev->t.r[r] = blk_emit_coord(E, l, axis, rd[axis]);
	}
	blk_emit_bind(E, v, ev);
}

/* ---- math ---------------------------------------------------------------------------- */

static LLVMValueRef call1(Emit *E, const char *name, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	return blk_emit_intrinsic(E, name, &t, 1, &x, 1);
}

static LLVMValueRef call1_nvvm(Emit *E, const char *name, LLVMValueRef x)
{
	return blk_emit_intrinsic(E, name, NULL, 0, &x, 1);
}

static LLVMValueRef exp_f32(Emit *E, LLVMValueRef x)
{
	LLVMValueRef t = LLVMBuildFMul(E->b, x, fconst(E, 1.4426950408889634), "");
	return call1_nvvm(E, "llvm.nvvm.ex2.approx.ftz.f", t);
}

/* 1 - 2 / (e^2x + 1), for every x: e^2x overflows to inf (1) or flushes to
 * 0 (-1) at the ends, NaN stays NaN; no |x| and sign restore needed.
 * Written as fma(-2, rcp(e^2x + 1), 1) and e^2x as ex2(x * 2 log2 e): the
 * same bits as 1 - div.approx(2, ..) and ex2((x * 2) * log2 e) (scaling by
 * 2 is exact, div.approx is a times rcp.approx of b), two instructions
 * fewer an element. */
static LLVMValueRef tanh_f32(Emit *E, LLVMValueRef x)
{
	float two_log2e = 2.0f * (float)1.4426950408889634;
	LLVMValueRef t = LLVMBuildFMul(E->b, x, fconst(E, two_log2e), "");
	LLVMValueRef e = call1_nvvm(E, "llvm.nvvm.ex2.approx.ftz.f", t);
	LLVMValueRef r = call1_nvvm(E, "llvm.nvvm.rcp.approx.ftz.f", LLVMBuildFAdd(E->b, e, fconst(E, 1.0), ""));
	LLVMTypeRef ty = E->f32;
	LLVMValueRef fa[3] = { fconst(E, -2.0), r, fconst(E, 1.0) };
	return blk_emit_intrinsic(E, "llvm.fma", &ty, 1, fa, 3);
}

static LLVMValueRef log_f32(Emit *E, LLVMValueRef x)
{
	return LLVMBuildFMul(E->b, call1_nvvm(E, "llvm.nvvm.lg2.approx.f", x), fconst(E, 0.6931471805599453), "");
}

static LLVMValueRef fma_f32(Emit *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef args[3] = { a, b, c };
	LLVMTypeRef t = E->f32;
	return blk_emit_intrinsic(E, "llvm.fma", &t, 1, args, 3);
}

/* c[0] + y*(c[1] + y*(... + y*c[n-1])), by fma. */
static LLVMValueRef poly(Emit *E, LLVMValueRef y, const double *c, int n)
{
	LLVMValueRef r = fconst(E, c[n - 1]);
	for (int i = n - 2; i >= 0; i--)
		r = fma_f32(E, r, y, fconst(E, c[i]));
	return r;
}

static LLVMValueRef sel_small(Emit *E, LLVMValueRef x, double bound, LLVMValueRef small, LLVMValueRef big)
{
	LLVMValueRef in = LLVMBuildFCmp(E->b, LLVMRealOLT, call1(E, "llvm.fabs", x), fconst(E, bound), "");
	return LLVMBuildSelect(E->b, in, small, big, "");
}

/* exp(x) - 1: below |x| = 0.5 its Taylor series to x^9 (no cancellation),
 * above it exp(x) - 1 (at most 2 ulp of exp lost). */
static LLVMValueRef expm1_f32(Emit *E, LLVMValueRef x)
{
	static const double c[9] = { 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720,
	                             1.0 / 5040, 1.0 / 40320, 1.0 / 362880 };
	LLVMValueRef small = LLVMBuildFMul(E->b, x, poly(E, x, c, 9), "");
	LLVMValueRef big = LLVMBuildFSub(E->b, exp_f32(E, x), fconst(E, 1.0), "");
	return sel_small(E, x, 0.5, small, big);
}

/* log(1 + x): below |x| = 0.5 as 2 atanh(s), s = x / (2 + x), by its odd
 * series to s^11 (|s| <= 0.2); above it log(1 + x). */
static LLVMValueRef log1p_f32(Emit *E, LLVMValueRef x)
{
	static const double c[6] = { 1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11 };
	LLVMValueRef sv = LLVMBuildFDiv(E->b, x, LLVMBuildFAdd(E->b, x, fconst(E, 2.0), ""), "");
	LLVMValueRef s2 = LLVMBuildFMul(E->b, sv, sv, "");
	LLVMValueRef small = LLVMBuildFMul(E->b, LLVMBuildFMul(E->b, sv, fconst(E, 2.0), ""), poly(E, s2, c, 6), "");
	LLVMValueRef big = log_f32(E, LLVMBuildFAdd(E->b, x, fconst(E, 1.0), ""));
	return sel_small(E, x, 0.5, small, big);
}

/* erf: below |x| = 0.5 its Taylor series to x^11 (relative accuracy near
 * 0); above it the Abramowitz-Stegun 7.1.26 rational form, 1 - P(t)
 * e^(-x^2) with t = 1 / (1 + 0.3275911 |x|) (1.5e-7 absolute), the sign
 * restored. */
static LLVMValueRef erf_f32(Emit *E, LLVMValueRef x)
{
	static const double ts[6] = { 1.1283791670955126, -0.37612638903183754, 0.11283791670955126,
	                              -0.026866170645131252, 0.005223977625442188, -0.0008548327023450852 };
	static const double as[6] = { 0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027,
	                              1.061405429 };
	LLVMValueRef x2 = LLVMBuildFMul(E->b, x, x, "");
	LLVMValueRef small = LLVMBuildFMul(E->b, x, poly(E, x2, ts, 6), "");
	LLVMValueRef ax = call1(E, "llvm.fabs", x);
	LLVMValueRef dv[2] = { fconst(E, 1.0), fma_f32(E, ax, fconst(E, 0.3275911), fconst(E, 1.0)) };
	LLVMValueRef t = blk_emit_intrinsic(E, "llvm.nvvm.div.approx.ftz.f", NULL, 0, dv, 2);
	LLVMValueRef p = poly(E, t, as, 6); /* a1 t + ... + a5 t^5 */
	LLVMValueRef e = exp_f32(E, LLVMBuildFNeg(E->b, x2, ""));
	LLVMValueRef big = LLVMBuildFSub(E->b, fconst(E, 1.0), LLVMBuildFMul(E->b, p, e, ""), "");
	LLVMTypeRef ty = E->f32;
	LLVMValueRef args[2] = { big, x };
	big = blk_emit_intrinsic(E, "llvm.copysign", &ty, 1, args, 2);
	return sel_small(E, x, 0.5, small, big);
}

/* 1 / (1 + e^-x): e^-x overflows to inf (0) or flushes to 0 (1). */
static LLVMValueRef sigmoid_f32(Emit *E, LLVMValueRef x)
{
	LLVMValueRef dv[2] = { fconst(E, 1.0),
	                       LLVMBuildFAdd(E->b, exp_f32(E, LLVMBuildFNeg(E->b, x, "")), fconst(E, 1.0), "") };
	return blk_emit_intrinsic(E, "llvm.nvvm.div.approx.ftz.f", NULL, 0, dv, 2);
}

/* x * sigmoid(x) as div.approx(x, 1 + e^-x): e^-x overflows to inf (-0
 * for a finite x < 0, the interpreter's x / inf), flushes to 0 (x). */
static LLVMValueRef silu_f32(Emit *E, LLVMValueRef x)
{
	LLVMValueRef dv[2] = { x, LLVMBuildFAdd(E->b, exp_f32(E, LLVMBuildFNeg(E->b, x, "")), fconst(E, 1.0), "") };
	return blk_emit_intrinsic(E, "llvm.nvvm.div.approx.ftz.f", NULL, 0, dv, 2);
}

/* x / 2 * (1 + f), f = erf(x / sqrt 2) or the tanh form's tanh. */
static LLVMValueRef half_x_one_plus(Emit *E, LLVMValueRef x, LLVMValueRef f)
{
	LLVMValueRef h = LLVMBuildFMul(E->b, fconst(E, 0.5), x, "");
	return LLVMBuildFMul(E->b, h, LLVMBuildFAdd(E->b, fconst(E, 1.0), f, ""), "");
}

static LLVMValueRef gelu_f32(Emit *E, LLVMValueRef x)
{
	return half_x_one_plus(E, x, erf_f32(E, LLVMBuildFMul(E->b, x, fconst(E, 0.70710678118654752), "")));
}

/* tanh(sqrt(2/pi) (x + 0.044715 x^3)), x^3's product in the
 * interpreter's order. */
static LLVMValueRef gelu_tanh_f32(Emit *E, LLVMValueRef x)
{
	LLVMValueRef c = LLVMBuildFMul(E->b, fconst(E, 0.044715), x, "");
	c = LLVMBuildFMul(E->b, LLVMBuildFMul(E->b, c, x, ""), x, "");
	LLVMValueRef u = LLVMBuildFMul(E->b, fconst(E, 0.7978845608028654), LLVMBuildFAdd(E->b, x, c, ""), "");
	return half_x_one_plus(E, x, tanh_f32(E, u));
}

/* max(x, 0) + log1p(e^-|x|): e^x is never taken of a large x; maxnum
 * gives 0 for a NaN, which the log1p term then makes NaN. */
static LLVMValueRef softplus_f32(Emit *E, LLVMValueRef x)
{
	LLVMTypeRef t = E->f32;
	LLVMValueRef args[2] = { x, fconst(E, 0.0) };
	LLVMValueRef m = blk_emit_intrinsic(E, "llvm.maxnum", &t, 1, args, 2);
	LLVMValueRef e = exp_f32(E, LLVMBuildFNeg(E->b, call1(E, "llvm.fabs", x), ""));
	return LLVMBuildFAdd(E->b, m, log1p_f32(E, e), "");
}

static LLVMValueRef fcmp(Emit *E, LLVMRealPredicate p, LLVMValueRef x, double c)
{
	return LLVMBuildFCmp(E->b, p, x, fconst(E, c), "");
}

/* Whether y is an integer (*integral) and an odd one: floor(y/2) != y/2
 * (every |y| >= 2^24 is even, and so are the infinities). */
static LLVMValueRef odd_integer(Emit *E, LLVMValueRef y, LLVMValueRef *integral)
{
	LLVMValueRef h = LLVMBuildFMul(E->b, y, fconst(E, 0.5), "");
	*integral = LLVMBuildFCmp(E->b, LLVMRealOEQ, call1(E, "llvm.floor", y), y, "");
	return LLVMBuildAnd(E->b, *integral,
	                    LLVMBuildFCmp(E->b, LLVMRealONE, call1(E, "llvm.floor", h), h, ""), "");
}

/* Where powf is 1 whatever the product y log2|x| says (NaN there): y == 0,
 * x == 1, and |x| == 1 with y infinite. */
static LLVMValueRef pow_is_one(Emit *E, LLVMValueRef x, LLVMValueRef ax, LLVMValueRef y)
{
	LLVMValueRef one = LLVMBuildOr(E->b, fcmp(E, LLVMRealOEQ, y, 0.0), fcmp(E, LLVMRealOEQ, x, 1.0), "");
	LLVMValueRef unit_inf = LLVMBuildAnd(E->b, fcmp(E, LLVMRealOEQ, ax, 1.0),
	                                     fcmp(E, LLVMRealOEQ, call1(E, "llvm.fabs", y), INFINITY), "");
	return LLVMBuildOr(E->b, one, unit_inf, "");
}

/* x ** y as 2^(y log2|x|) with powf's special cases (C99 F.9.4.4, what
 * the interpreter's powf does): a negative base (-0 included) takes the
 * sign of an odd integral exponent; a finite negative base with a
 * fractional exponent is NaN; pow_is_one's cases are 1. */
static LLVMValueRef pow_f32(Emit *E, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef ax = call1(E, "llvm.fabs", x), integral;
	LLVMValueRef t = LLVMBuildFMul(E->b, y, call1_nvvm(E, "llvm.nvvm.lg2.approx.f", ax), "");
	LLVMValueRef r = call1_nvvm(E, "llvm.nvvm.ex2.approx.ftz.f", t);
	LLVMValueRef odd = odd_integer(E, y, &integral);
	LLVMValueRef sign = LLVMBuildICmp(E->b, LLVMIntSLT, LLVMBuildBitCast(E->b, x, E->i32, ""),
	                                  blk_emit_i32(E, 0), "");
	r = LLVMBuildSelect(E->b, LLVMBuildAnd(E->b, sign, odd, ""), LLVMBuildFNeg(E->b, r, ""), r, "");
	LLVMValueRef neg_finite = LLVMBuildAnd(E->b, fcmp(E, LLVMRealOLT, x, 0.0),
	                                       fcmp(E, LLVMRealONE, x, -INFINITY), "");
	r = LLVMBuildSelect(E->b, LLVMBuildAnd(E->b, neg_finite, LLVMBuildNot(E->b, integral, ""), ""),
	                    fconst(E, NAN), r, "");
	return LLVMBuildSelect(E->b, pow_is_one(E, x, ax, y), fconst(E, 1.0), r, "");
}

static LLVMValueRef unary_f32(Emit *E, BlkOpKind k, LLVMValueRef x)
{
	switch (k) {
	case BLK_OP_NEG: return LLVMBuildFNeg(E->b, x, "");
	case BLK_OP_EXP: return exp_f32(E, x);
	case BLK_OP_LOG: return log_f32(E, x);
	case BLK_OP_SQRT: return call1(E, "llvm.sqrt", x);
	case BLK_OP_RSQRT: return LLVMBuildFDiv(E->b, fconst(E, 1.0), call1(E, "llvm.sqrt", x), "");
	case BLK_OP_TANH: return tanh_f32(E, x);
	case BLK_OP_ABS: return call1(E, "llvm.fabs", x);
	case BLK_OP_SIGMOID: return sigmoid_f32(E, x);
	case BLK_OP_ERF: return erf_f32(E, x);
	case BLK_OP_LOG1P: return log1p_f32(E, x);
	case BLK_OP_EXPM1: return expm1_f32(E, x);
	case BLK_OP_FLOOR: return call1(E, "llvm.floor", x);
	case BLK_OP_CEIL: return call1(E, "llvm.ceil", x);
	case BLK_OP_EXP2: return call1_nvvm(E, "llvm.nvvm.ex2.approx.ftz.f", x);
	case BLK_OP_LOG2: return call1_nvvm(E, "llvm.nvvm.lg2.approx.f", x);
	case BLK_OP_SILU: return silu_f32(E, x);
	case BLK_OP_GELU: return gelu_f32(E, x);
	case BLK_OP_GELU_TANH: return gelu_tanh_f32(E, x);
	case BLK_OP_SOFTPLUS: return softplus_f32(E, x);
	default: blk_die("lower: emit: unary op %s on floats", blk_op_name(k));
	}
}

static LLVMValueRef unary_int(Emit *E, BlkOpKind k, LLVMValueRef x)
{
	switch (k) {
	case BLK_OP_NEG: return LLVMBuildNeg(E->b, x, "");
	case BLK_OP_NOT: return LLVMBuildNot(E->b, x, "");
	case BLK_OP_ABS: {
		LLVMValueRef args[2] = { x, LLVMConstInt(E->i1, 0, false) };
		LLVMTypeRef t = E->i32;
		return blk_emit_intrinsic(E, "llvm.abs", &t, 1, args, 2);
	}
	default: blk_die("lower: emit: unary op %s on integers", blk_op_name(k));
	}
}

/* Python's floor division and modulo from C's truncating ones, defined
 * everywhere as blk_i32_floordiv/blk_i32_mod (ir/ir.c): LLVM's sdiv by 0
 * or of INT32_MIN by -1 is undefined and let it delete the kernel's
 * stores, so the divisor is 1 there and the result selected after. */
LLVMValueRef blk_emit_floor_divmod(Emit *E, bool mod, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef y0 = LLVMBuildICmp(E->b, LLVMIntEQ, y, blk_emit_i32(E, 0), "");
	LLVMValueRef ym1 = LLVMBuildICmp(E->b, LLVMIntEQ, y, blk_emit_i32(E, -1), "");
	LLVMValueRef d = LLVMBuildSelect(E->b, LLVMBuildOr(E->b, y0, ym1, ""), blk_emit_i32(E, 1), y, "");
	LLVMValueRef q = LLVMBuildSDiv(E->b, x, d, ""), r = LLVMBuildSRem(E->b, x, d, "");
	LLVMValueRef nz = LLVMBuildICmp(E->b, LLVMIntNE, r, blk_emit_i32(E, 0), "");
	LLVMValueRef sg = LLVMBuildICmp(E->b, LLVMIntSLT, LLVMBuildXor(E->b, r, d, ""), blk_emit_i32(E, 0), "");
	LLVMValueRef fix = LLVMBuildAnd(E->b, nz, sg, "");
	if (mod) /* d == 1 gives r == 0: x % 0 == x % -1 == 0 */
		return LLVMBuildSelect(E->b, fix, LLVMBuildAdd(E->b, r, d, ""), r, "");
	q = LLVMBuildSelect(E->b, fix, LLVMBuildSub(E->b, q, blk_emit_i32(E, 1), ""), q, "");
	q = LLVMBuildSelect(E->b, y0, blk_emit_i32(E, 0), q, "");
	return LLVMBuildSelect(E->b, ym1, LLVMBuildSub(E->b, blk_emit_i32(E, 0), x, ""), q, "");
}

/* Shifts defined for every amount as blk_i32_shl/blk_i32_shr (ir/ir.c):
 * LLVM's shl and ashr by 32 or more (or a negative amount, unsigned) are
 * poison, so the amount is checked (unsigned) first. */
static LLVMValueRef shift_left(Emit *E, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntULT, y, blk_emit_i32(E, 32), "");
	LLVMValueRef s = LLVMBuildSelect(E->b, in, y, blk_emit_i32(E, 0), "");
	return LLVMBuildSelect(E->b, in, LLVMBuildShl(E->b, x, s, ""), blk_emit_i32(E, 0), "");
}

static LLVMValueRef shift_right(Emit *E, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntULT, y, blk_emit_i32(E, 32), "");
	return LLVMBuildAShr(E->b, x, LLVMBuildSelect(E->b, in, y, blk_emit_i32(E, 31), ""), "");
}

static LLVMValueRef binary_f32(Emit *E, BlkOpKind k, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef args[2] = { x, y };
	LLVMTypeRef t = E->f32;
	switch (k) {
	case BLK_OP_ADD: return LLVMBuildFAdd(E->b, x, y, "");
	case BLK_OP_SUB: return LLVMBuildFSub(E->b, x, y, "");
	case BLK_OP_MUL: return LLVMBuildFMul(E->b, x, y, "");
	case BLK_OP_DIV: return LLVMBuildFDiv(E->b, x, y, "");
	case BLK_OP_MAX: return blk_emit_intrinsic(E, "llvm.maximum", &t, 1, args, 2);
	case BLK_OP_MIN: return blk_emit_intrinsic(E, "llvm.minimum", &t, 1, args, 2);
	case BLK_OP_POW: return pow_f32(E, x, y);
	case BLK_OP_EQ: return LLVMBuildFCmp(E->b, LLVMRealOEQ, x, y, "");
	case BLK_OP_NE: return LLVMBuildFCmp(E->b, LLVMRealUNE, x, y, "");
	case BLK_OP_LT: return LLVMBuildFCmp(E->b, LLVMRealOLT, x, y, "");
	case BLK_OP_LE: return LLVMBuildFCmp(E->b, LLVMRealOLE, x, y, "");
	case BLK_OP_GT: return LLVMBuildFCmp(E->b, LLVMRealOGT, x, y, "");
	case BLK_OP_GE: return LLVMBuildFCmp(E->b, LLVMRealOGE, x, y, "");
	default: blk_die("lower: emit: binary op %s on floats", blk_op_name(k));
	}
}

static LLVMValueRef binary_int(Emit *E, BlkOpKind k, LLVMValueRef x, LLVMValueRef y)
{
	switch (k) {
	case BLK_OP_ADD: return LLVMBuildAdd(E->b, x, y, "");
	case BLK_OP_SUB: return LLVMBuildSub(E->b, x, y, "");
	case BLK_OP_MUL: return LLVMBuildMul(E->b, x, y, "");
	case BLK_OP_FLOORDIV: return blk_emit_floor_divmod(E, false, x, y);
	case BLK_OP_MOD: return blk_emit_floor_divmod(E, true, x, y);
	case BLK_OP_MAX: return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, x, y, ""), x, y, "");
	case BLK_OP_MIN: return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, x, y, ""), x, y, "");
	case BLK_OP_AND: return LLVMBuildAnd(E->b, x, y, "");
	case BLK_OP_OR: return LLVMBuildOr(E->b, x, y, "");
	case BLK_OP_XOR: return LLVMBuildXor(E->b, x, y, "");
	case BLK_OP_SHL: return shift_left(E, x, y);
	case BLK_OP_SHR: return shift_right(E, x, y);
	case BLK_OP_EQ: return LLVMBuildICmp(E->b, LLVMIntEQ, x, y, "");
	case BLK_OP_NE: return LLVMBuildICmp(E->b, LLVMIntNE, x, y, "");
	case BLK_OP_LT: return LLVMBuildICmp(E->b, LLVMIntSLT, x, y, "");
	case BLK_OP_LE: return LLVMBuildICmp(E->b, LLVMIntSLE, x, y, "");
	case BLK_OP_GT: return LLVMBuildICmp(E->b, LLVMIntSGT, x, y, "");
	case BLK_OP_GE: return LLVMBuildICmp(E->b, LLVMIntSGE, x, y, "");
	default: blk_die("lower: emit: binary op %s on integers", blk_op_name(k));
	}
}

/* u32's own ops (ir.c's blk_u32_*): unsigned division with x ~/ 0 ==
 * x % 0 == 0 (LLVM's udiv by 0 is undefined: the divisor is 1 there),
 * logical shift right with amounts outside [0, 32) giving 0, unsigned
 * order; the rest are i32's. */
static LLVMValueRef binary_u32(Emit *E, BlkOpKind k, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef zero = blk_emit_i32(E, 0), y0 = LLVMBuildICmp(E->b, LLVMIntEQ, y, zero, "");
	LLVMValueRef d = LLVMBuildSelect(E->b, y0, blk_emit_i32(E, 1), y, "");
	LLVMValueRef in = LLVMBuildICmp(E->b, LLVMIntULT, y, blk_emit_i32(E, 32), "");
	switch (k) {
	case BLK_OP_FLOORDIV: return LLVMBuildSelect(E->b, y0, zero, LLVMBuildUDiv(E->b, x, d, ""), "");
	case BLK_OP_MOD: return LLVMBuildSelect(E->b, y0, zero, LLVMBuildURem(E->b, x, d, ""), "");
	case BLK_OP_SHR:
		return LLVMBuildSelect(E->b, in, LLVMBuildLShr(E->b, x, LLVMBuildSelect(E->b, in, y, zero, ""), ""),
		                       zero, "");
	case BLK_OP_MAX: return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntUGT, x, y, ""), x, y, "");
	case BLK_OP_MIN: return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntULT, x, y, ""), x, y, "");
	case BLK_OP_LT: return LLVMBuildICmp(E->b, LLVMIntULT, x, y, "");
	case BLK_OP_LE: return LLVMBuildICmp(E->b, LLVMIntULE, x, y, "");
	case BLK_OP_GT: return LLVMBuildICmp(E->b, LLVMIntUGT, x, y, "");
	case BLK_OP_GE: return LLVMBuildICmp(E->b, LLVMIntUGE, x, y, "");
	default: return binary_int(E, k, x, y);
	}
}

static bool is_cmp(BlkOpKind k)
{
	return k >= BLK_OP_EQ && k <= BLK_OP_GE;
}

/* ---- casts ------------------------------------------------------------------------------ */

static LLVMValueRef iconst(Emit *E, int64_t v)
{
	return blk_emit_i32(E, v);
}

/* An fp8 format's fields: mantissa bits, exponent bias, largest finite
 * code (ir.c's blk_fp8_format). */
static void fp8_fields(BlkDType dt, int *mb, int *bias, int *maxcode)
{
	int eb;
	blk_fp8_format(dt, &eb, mb, maxcode);
	*bias = (1 << (eb - 1)) - 1;
}

/* fp8 bits (i8) -> f32, exactly (ir.c's blk_fp8_to_f32): a normal code
 * rebuilt as f32 bits, a subnormal as m * 2^(emin - mb), the codes past
 * the largest finite NaN (e5m2's 0x7c infinity). */
LLVMValueRef blk_emit_fp8_to_f32(Emit *E, LLVMValueRef x, BlkDType dt)
{
	int mb, bias, mx;
	fp8_fields(dt, &mb, &bias, &mx);
	LLVMValueRef b = LLVMBuildZExt(E->b, x, E->i32, "");
	LLVMValueRef mag = LLVMBuildAnd(E->b, b, iconst(E, 0x7f), "");
	LLVMValueRef sign = LLVMBuildShl(E->b, LLVMBuildAnd(E->b, b, iconst(E, 0x80), ""), iconst(E, 24), "");
	LLVMValueRef e = LLVMBuildLShr(E->b, mag, iconst(E, mb), "");
	LLVMValueRef m = LLVMBuildAnd(E->b, mag, iconst(E, (1 << mb) - 1), "");
	LLVMValueRef normal = LLVMBuildOr(E->b,
		LLVMBuildShl(E->b, LLVMBuildAdd(E->b, e, iconst(E, 127 - bias), ""), iconst(E, 23), ""),
		LLVMBuildShl(E->b, m, iconst(E, 23 - mb), ""), "");
	LLVMValueRef sub = LLVMBuildBitCast(E->b, LLVMBuildFMul(E->b, LLVMBuildUIToFP(E->b, m, E->f32, ""),
	                                    fconst(E, ldexp(1.0, 1 - bias - mb)), ""), E->i32, "");
	LLVMValueRef bits = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, e, iconst(E, 0), ""), sub,
	                                    normal, "");
	LLVMValueRef special = dt == BLK_F8E5M2
		? LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, mag, iconst(E, 0x7c), ""),
		                  iconst(E, 0x7f800000), iconst(E, 0x7fc00000), "")
		: iconst(E, 0x7fc00000);
	bits = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntUGT, mag, iconst(E, mx), ""), special, bits, "");
	return LLVMBuildBitCast(E->b, LLVMBuildOr(E->b, bits, sign, ""), E->f32, "");
}

/* f32 -> fp8 bits (i8), as ir.c's blk_f32_to_fp8: |f| in quanta of its
 * binade (at least the smallest normal's), rounded to even (rint), then
 * encoded; saturated at the largest finite, NaN 0x7f, the sign kept. */
static LLVMValueRef f32_to_fp8(Emit *E, LLVMValueRef f, BlkDType dt)
{
	int mb, bias, mx;
	fp8_fields(dt, &mb, &bias, &mx);
	int emin = 1 - bias;
	LLVMValueRef bits = LLVMBuildBitCast(E->b, f, E->i32, "");
	LLVMValueRef sign = LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, bits, iconst(E, 24), ""), iconst(E, 0x80), "");
	LLVMTypeRef ft = E->f32;
	LLVMValueRef a = blk_emit_intrinsic(E, "llvm.fabs", &ft, 1, &f, 1);
	/* the exponent of |f|, at least emin; one quantum is 2^(e - mb) */
	LLVMValueRef e = LLVMBuildSub(E->b, LLVMBuildLShr(E->b, LLVMBuildAnd(E->b, bits, iconst(E, 0x7f800000), ""),
	                              iconst(E, 23), ""), iconst(E, 127), "");
	e = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, e, iconst(E, emin), ""), iconst(E, emin), e, "");
	LLVMValueRef inv = LLVMBuildBitCast(E->b, LLVMBuildShl(E->b, LLVMBuildSub(E->b, iconst(E, 127 + mb), e, ""),
	                                    iconst(E, 23), ""), E->f32, "");
	LLVMValueRef q = LLVMBuildBitCast(E->b, LLVMBuildShl(E->b, LLVMBuildAdd(E->b, e, iconst(E, 127 - mb), ""),
	                                  iconst(E, 23), ""), E->f32, "");
	LLVMValueRef scaled = LLVMBuildFMul(E->b, a, inv, "");
	LLVMValueRef r = LLVMBuildFMul(E->b, blk_emit_intrinsic(E, "llvm.rint", &ft, 1, &scaled, 1), q, "");
	/* encode r: normal (its own exponent >= emin) or subnormal */
	LLVMValueRef rb = LLVMBuildBitCast(E->b, r, E->i32, "");
	LLVMValueRef re = LLVMBuildSub(E->b, LLVMBuildLShr(E->b, rb, iconst(E, 23), ""), iconst(E, 127), "");
	LLVMValueRef normal = LLVMBuildOr(E->b,
		LLVMBuildShl(E->b, LLVMBuildAdd(E->b, re, iconst(E, bias), ""), iconst(E, mb), ""),
		LLVMBuildAnd(E->b, LLVMBuildLShr(E->b, rb, iconst(E, 23 - mb), ""), iconst(E, (1 << mb) - 1), ""), "");
	LLVMValueRef sub = LLVMBuildFPToUI(E->b, LLVMBuildFMul(E->b, r, fconst(E, ldexp(1.0, mb - emin)), ""),
	                                   E->i32, "");
	LLVMValueRef code = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, re, iconst(E, emin), ""), sub,
	                                    normal, "");
	LLVMValueRef big = LLVMBuildFCmp(E->b, LLVMRealOGE, a, fconst(E, blk_fp8_to_f32(dt, (uint8_t)mx)), "");
	code = LLVMBuildSelect(E->b, big, iconst(E, mx), code, "");
	code = LLVMBuildSelect(E->b, LLVMBuildFCmp(E->b, LLVMRealUNO, f, f, ""), iconst(E, 0x7f), code, "");
	return LLVMBuildTrunc(E->b, LLVMBuildOr(E->b, code, sign, ""), E->i8, "");
}

static LLVMValueRef cast(Emit *E, LLVMValueRef x, BlkDType from, BlkDType to)
{
	if (from == to || (blk_dtype_is_byte(from) && blk_dtype_is_byte(to))) /* i8 <-> u8: the same bits */
		return x;
	if (blk_dtype_is_fp8(from)) /* through f32, exact */
		return cast(E, blk_emit_fp8_to_f32(E, x, from), BLK_F32, to);
	if (blk_dtype_is_fp8(to))
		return f32_to_fp8(E, cast(E, x, from, BLK_F32), to);
	bool ff = blk_dtype_is_float(from), tf = blk_dtype_is_float(to);
	if (ff && tf)
		return blk_emit_from_f32(E, blk_emit_to_f32(E, x, from), to);
	if (ff && to == BLK_BOOL)
		return LLVMBuildFCmp(E->b, LLVMRealUNE, x, LLVMConstReal(LLVMTypeOf(x), 0), "");
	if (ff) { /* toward zero, saturated to the dtype's range, NaN 0 */
		LLVMTypeRef t[2] = { blk_emit_reg_type(E, to), E->f32 };
		LLVMValueRef f = blk_emit_to_f32(E, x, from);
		return blk_emit_intrinsic(E, to == BLK_U8 || to == BLK_U32 ? "llvm.fptoui.sat" : "llvm.fptosi.sat", t, 2,
		                          &f, 1);
	}
	if ((from == BLK_BOOL || from == BLK_U8 || from == BLK_U32) && tf)
		return blk_emit_from_f32(E, LLVMBuildUIToFP(E->b, x, E->f32, ""), to);
	if (tf)
		return blk_emit_from_f32(E, LLVMBuildSIToFP(E->b, x, E->f32, ""), to);
	if (to == BLK_BOOL)
		return LLVMBuildICmp(E->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, false), "");
	if (blk_dtype_is_byte(to)) /* i32 wraps, bool is 0 or 1 */
		return from == BLK_BOOL ? LLVMBuildZExt(E->b, x, E->i8, "") : LLVMBuildTrunc(E->b, x, E->i8, "");
	return blk_emit_to_i32(E, x, from); /* bool, i8, u8 -> i32 */
}

/* ---- the op --------------------------------------------------------------------------- */

static LLVMValueRef one_reg(Emit *E, const BlkOp *op, LLVMValueRef *x)
{
	BlkOpKind k = op->kind;
	BlkDType dt = op->operands[0]->type.dtype, rt = op->results[0]->type.dtype;
	if (k == BLK_OP_CAST)
		return cast(E, x[0], dt, rt);
	if (k == BLK_OP_SELECT)
		return LLVMBuildSelect(E->b, x[0], x[1], x[2], "");
	if (k == BLK_OP_PHILOX || k == BLK_OP_UNIFORM || k == BLK_OP_NORMAL)
		return blk_emit_random(E, op, x);
	if (k == BLK_OP_FMA) /* fma.rn.f32: the interpreter's fmaf, bit for bit in f32 */
		return blk_emit_from_f32(E, fma_f32(E, blk_emit_to_f32(E, x[0], dt), blk_emit_to_f32(E, x[1], dt),
		                                    blk_emit_to_f32(E, x[2], dt)), dt);
	if (blk_dtype_is_byte(dt)) { /* in i32, then back to 8 bits */
		LLVMValueRef a = blk_emit_to_i32(E, x[0], dt);
		LLVMValueRef r = op->noperands == 1 ? unary_int(E, k, a)
		                                    : binary_int(E, k, a, blk_emit_to_i32(E, x[1], dt));
		return is_cmp(k) ? r : blk_emit_from_i32(E, r, dt);
	}
	if (dt == BLK_U32 && op->noperands == 1)
		return k == BLK_OP_ABS ? x[0] : unary_int(E, k, x[0]);
	if (dt == BLK_U32)
		return binary_u32(E, k, x[0], x[1]);
	if (!blk_dtype_is_float(dt))
		return op->noperands == 1 ? unary_int(E, k, x[0]) : binary_int(E, k, x[0], x[1]);
	LLVMValueRef a = blk_emit_to_f32(E, x[0], dt);
	if (op->noperands == 1)
		return blk_emit_from_f32(E, unary_f32(E, k, a), dt);
	LLVMValueRef r = binary_f32(E, k, a, blk_emit_to_f32(E, x[1], dt));
	return is_cmp(k) ? r : blk_emit_from_f32(E, r, dt);
}

/* f32 registers lo, hi to bf16/f16 with one cvt.rn.{bf16,f16}x2.f32 (sm_80
 * and up; LLVM 19 converts each alone): the pair the later packing of
 * mma/wgmma operands and 4-byte stores wants, the same rounding. */
static void cast_pair(Emit *E, BlkDType to, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef *out)
{
	const char *text = to == BLK_BF16 ? "cvt.rn.bf16x2.f32 $0, $1, $2;" : "cvt.rn.f16x2.f32 $0, $1, $2;";
	LLVMValueRef args[2] = { hi, lo };
	LLVMValueRef v = LLVMBuildBitCast(E->b, blk_emit_asm(E, E->i32, args, 2, text, "=r,f,f", false),
	                                  LLVMVectorType(blk_emit_reg_type(E, to), 2), "");
	out[0] = LLVMBuildExtractElement(E->b, v, blk_emit_i32(E, 0), "");
	out[1] = LLVMBuildExtractElement(E->b, v, blk_emit_i32(E, 1), "");
}

/* exp(a - b) in f32 with b broadcast (softmax's exp(x - max), attention's
 * exp(s - m)): ex2(fma(a, log2 e, -(b log2 e))), b log2 e once for the
 * registers that share b -- one instruction an element fewer than
 * ex2((a - b) log2 e), the subtraction left to whatever else reads it;
 * with a = x * c, c a scalar (attention's scores times their scale),
 * ex2(fma(x, c log2 e, -(b log2 e))), one more.  The argument's error
 * becomes about |b| ulp instead of |a - b|.  exp2(a - b) likewise,
 * without the log2 e: Triton's flash attention, `exp2(qk * qk_scale -
 * m[:, None])`, is one fma and one ex2 an element.  And a = x * c + z, z
 * a splat constant: ex2(fma(x, c, z - b)) (log2 e folded in for exp). */
static bool exp_of_difference(Emit *E, const BlkOp *op, EVal *ev, int n)
{
	const BlkOp *d = op->operands[0]->def;
	bool two = op->kind == BLK_OP_EXP2; /* exp2(x * c - b), Triton's: no log2 e to fold */
	if ((op->kind != BLK_OP_EXP && !two) || op->results[0]->type.dtype != BLK_F32 || !d || d->kind != BLK_OP_SUB ||
	    !d->operands[1]->def || d->operands[1]->def->kind != BLK_OP_BROADCAST)
		return false;
	const ETile *a = blk_emit_tile(E, d->operands[0]), *b = blk_emit_tile(E, d->operands[1]);
	if (blk_layout_nregs(a->l) != n || blk_layout_nregs(b->l) != n)
		return false;
	LLVMValueRef log2e = fconst(E, two ? 1.0 : 1.4426950408889634), scale = log2e, z = NULL;
	BlkValue *x, *c, *scaled = d->operands[0];
	const BlkOp *add = scaled->def;
	double zv = 0;
	for (int o = 0; add && add->kind == BLK_OP_ADD && o < 2 && !z; o++) {
		/* a = x * c + z, z a splat (Triton's `qk * scale + where(mask,
		 * 0, -1e6)` with the mask always true): z - b is the fma's
		 * addend, one rounding of it */
		const BlkOp *k = add->operands[1 - o]->def;
		const BlkAttr *kv = k && k->kind == BLK_OP_CONST && k->results[0]->type.rank > 0 ? blk_op_attr(k, "value") : NULL;
		BlkValue *x0, *c0;
		if (kv && kv->kind == BLK_ATTR_FLOAT && blk_lower_scaled(add->operands[o], &x0, &c0))
			zv = kv->f, z = fconst(E, zv), scaled = add->operands[o];
	}
	if (blk_lower_scaled(scaled, &x, &c) && blk_layout_nregs(blk_emit_tile(E, x)->l) == n) {
		a = blk_emit_tile(E, x); /* a = x * c: the fma takes c too */
		scale = two ? blk_emit_tile(E, c)->r[0] : LLVMBuildFMul(E->b, blk_emit_tile(E, c)->r[0], log2e, "");
	} else {
		z = NULL; /* (the add stays a's) */
	}
	for (int r = 0; r < n; r++) {
		LLVMValueRef br = z ? LLVMBuildFSub(E->b, b->r[r], z, "") : b->r[r]; /* -(z - b) = b - z */
		LLVMValueRef bl = LLVMBuildFNeg(E->b, two ? br : LLVMBuildFMul(E->b, br, log2e, ""), "");
		LLVMValueRef args[3] = { a->r[r], scale, bl };
		LLVMTypeRef t = E->f32;
		LLVMValueRef x = blk_emit_intrinsic(E, "llvm.fma", &t, 1, args, 3);
		ev->t.r[r] = call1_nvvm(E, "llvm.nvvm.ex2.approx.ftz.f", x);
	}
	blk_emit_bind(E, op->results[0], ev);
	return true;
}

void blk_emit_elementwise(Emit *E, const BlkOp *op)
{
	EVal *ev = BLK_NEW(E->c->a, EVal);
	ev->t = blk_emit_new_tile(E, blk_emit_layout(E, op->results[0]));
	int n = blk_layout_nregs(ev->t.l);
	BlkDType rt = op->results[0]->type.dtype;
	if (op->kind == BLK_OP_CAST && op->operands[0]->type.dtype == BLK_F32 && (rt == BLK_BF16 || rt == BLK_F16) &&
	    n % 2 == 0 && blk_layout_nregs(blk_emit_tile(E, op->operands[0])->l) == n) {
		const ETile *in = blk_emit_tile(E, op->operands[0]);
		for (int r = 0; r < n; r += 2)
			cast_pair(E, rt, in->r[r], in->r[r + 1], &ev->t.r[r]);
		blk_emit_bind(E, op->results[0], ev);
		return;
	}
	if (exp_of_difference(E, op, ev, n) || blk_emit_div_by_constant(E, op, ev, n))
		return;
	ETile *in[5]; /* philox's seed and counters at most */
	for (int i = 0; i < op->noperands && i < 5; i++)
		in[i] = blk_emit_tile(E, op->operands[i]);
	for (int r = 0; r < n; r++) {
		LLVMValueRef x[5];
		for (int i = 0; i < op->noperands && i < 5; i++)
			x[i] = in[i]->r[blk_layout_nregs(in[i]->l) == 1 ? 0 : r];
		ev->t.r[r] = one_reg(E, op, x);
	}
	blk_emit_bind(E, op->results[0], ev);
}
