/* emit_random.c - philox, uniform and normal, one register at a time.
 *
 * The same operations as ir/random.c in the same order (the interpreter's
 * definition), so the GPU's bits are the interpreter's: Philox's rounds
 * are 32x32 -> 64-bit products (mul.hi.u32 and mul.lo.u32), xors and
 * adds; the conversions
 * to floats use only IEEE operations rounded once (cvt.rn, mul.rn,
 * div.rn, sqrt.rn, fma.rn) and exact ones (bit moves, subtractions of
 * numbers within a factor 2).  No product feeds an add except inside an
 * explicit fma, so no contraction can change a bit.  No calls, no
 * libdevice.
 */
#include "emit.h"

static LLVMValueRef k32(Emit *E, uint32_t v)
{
	return LLVMConstInt(E->i32, v, false);
}

static LLVMValueRef kf(Emit *E, float v)
{
	return LLVMConstReal(E->f32, (double)v);
}

static LLVMValueRef fma3(Emit *E, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef args[3] = { a, b, c };
	LLVMTypeRef t = E->f32;
	return blk_emit_intrinsic(E, "llvm.fma", &t, 1, args, 3);
}

/* m * x as 64 bits: its high word (mul.hi.u32) and low word (mul.lo).  A
 * 64-bit product would do, but LLVM then merges the xors that follow
 * into 64-bit ones. */
static void mul_wide(Emit *E, uint32_t m, LLVMValueRef x, LLVMValueRef *hi, LLVMValueRef *lo)
{
	LLVMValueRef args[2] = { x, k32(E, m) };
	if (LLVMIsAConstantInt(x)) { /* randint's zero counters: LLVM keeps mulhi of a constant */
		uint64_t p = (uint64_t)m * (uint32_t)LLVMConstIntGetZExtValue(x);
		*hi = k32(E, (uint32_t)(p >> 32));
		*lo = k32(E, (uint32_t)p);
		return;
	}
	*hi = blk_emit_intrinsic(E, "llvm.nvvm.mulhi.ui", NULL, 0, args, 2);
	*lo = LLVMBuildMul(E->b, x, args[1], "");
}

/* Word `word` of Philox4x32-10 of c[0..4) under the key (seed, its sign). */
static LLVMValueRef philox(Emit *E, LLVMValueRef seed, const LLVMValueRef *ctr, int word)
{
	LLVMValueRef c[4] = { ctr[0], ctr[1], ctr[2], ctr[3] };
	LLVMValueRef k0 = seed, k1 = LLVMBuildAShr(E->b, seed, k32(E, 31), "");
	for (int r = 0; r < BLK_PHILOX_ROUNDS; r++) {
		LLVMValueRef hi0, lo0, hi1, lo1;
		mul_wide(E, BLK_PHILOX_M0, c[0], &hi0, &lo0);
		mul_wide(E, BLK_PHILOX_M1, c[2], &hi1, &lo1);
		c[0] = LLVMBuildXor(E->b, LLVMBuildXor(E->b, hi1, c[1], ""), k0, "");
		c[1] = lo1;
		c[2] = LLVMBuildXor(E->b, LLVMBuildXor(E->b, hi0, c[3], ""), k1, "");
		c[3] = lo0;
		k0 = LLVMBuildAdd(E->b, k0, k32(E, BLK_PHILOX_W0), "");
		k1 = LLVMBuildAdd(E->b, k1, k32(E, BLK_PHILOX_W1), "");
	}
	return c[word];
}

/* x ^ (x >> 31) (~x of a negative x) as f32, times the scale. */
static LLVMValueRef uniform(Emit *E, LLVMValueRef x)
{
	LLVMValueRef v = LLVMBuildXor(E->b, x, LLVMBuildAShr(E->b, x, k32(E, 31), ""), "");
	return LLVMBuildFMul(E->b, LLVMBuildSIToFP(E->b, v, E->f32, ""), kf(E, BLK_RAND_SCALE), "");
}

static LLVMValueRef select_f(Emit *E, LLVMRealPredicate p, LLVMValueRef x, float c, LLVMValueRef a,
                             LLVMValueRef b)
{
	return LLVMBuildSelect(E->b, LLVMBuildFCmp(E->b, p, x, kf(E, c), ""), a, b, "");
}

/* ir/random.c's rand_log: u = m 2^e, m in [2/3, 4/3) by its bits, log m
 * = 2 atanh((m - 1)/(m + 1)). */
static LLVMValueRef rand_log(Emit *E, LLVMValueRef u)
{
	static const float c[] = BLK_RAND_LOG_C;
	LLVMValueRef b = LLVMBuildBitCast(E->b, u, E->i32, "");
	LLVMValueRef e = LLVMBuildSub(E->b, LLVMBuildLShr(E->b, b, k32(E, 23), ""), k32(E, 127), "");
	LLVMValueRef mb = LLVMBuildOr(E->b, LLVMBuildAnd(E->b, b, k32(E, 0x7fffff), ""), k32(E, 0x3f800000), "");
	LLVMValueRef hi = LLVMBuildICmp(E->b, LLVMIntUGE, mb, k32(E, BLK_RAND_MID), "");
	mb = LLVMBuildSelect(E->b, hi, LLVMBuildSub(E->b, mb, k32(E, 1u << 23), ""), mb, "");
	e = LLVMBuildAdd(E->b, e, LLVMBuildZExt(E->b, hi, E->i32, ""), "");
	LLVMValueRef f = LLVMBuildFSub(E->b, LLVMBuildBitCast(E->b, mb, E->f32, ""), kf(E, 1.0f), "");
	LLVMValueRef s = LLVMBuildFDiv(E->b, f, LLVMBuildFAdd(E->b, f, kf(E, 2.0f), ""), "");
	LLVMValueRef t = LLVMBuildFMul(E->b, s, s, "");
	LLVMValueRef p = fma3(E, t, kf(E, c[3]), kf(E, c[2]));
	p = fma3(E, t, p, kf(E, c[1]));
	p = fma3(E, t, p, kf(E, c[0]));
	LLVMValueRef lm = fma3(E, LLVMBuildFMul(E->b, s, t, ""), p, LLVMBuildFMul(E->b, kf(E, 2.0f), s, ""));
	return fma3(E, LLVMBuildSIToFP(E->b, e, E->f32, ""), kf(E, BLK_RAND_LN2), lm);
}

static LLVMValueRef poly(Emit *E, const float *c, int n, LLVMValueRef q)
{
	LLVMValueRef p = kf(E, c[n - 1]);
	for (int i = n - 2; i >= 0; i--)
		p = fma3(E, q, p, kf(E, c[i]));
	return p;
}

/* ir/random.c's cos_2pi: exact reductions to z in [0, 1/8], then cos's or
 * sin's polynomial, the sign restored. */
static LLVMValueRef cos_2pi(Emit *E, LLVMValueRef u)
{
	static const float cc[] = BLK_RAND_COS_C, sc[] = BLK_RAND_SIN_C;
	LLVMValueRef w = select_f(E, LLVMRealOGE, u, 0.5f, LLVMBuildFSub(E->b, kf(E, 1.0f), u, ""), u);
	LLVMValueRef neg = LLVMBuildFCmp(E->b, LLVMRealOGT, w, kf(E, 0.25f), "");
	w = LLVMBuildSelect(E->b, neg, LLVMBuildFSub(E->b, kf(E, 0.5f), w, ""), w, "");
	LLVMValueRef sine = LLVMBuildFCmp(E->b, LLVMRealOGT, w, kf(E, 0.125f), "");
	LLVMValueRef z = LLVMBuildSelect(E->b, sine, LLVMBuildFSub(E->b, kf(E, 0.25f), w, ""), w, "");
	LLVMValueRef q = LLVMBuildFMul(E->b, z, z, "");
	LLVMValueRef s = LLVMBuildFMul(E->b, z, poly(E, sc, 5, q), "");
	LLVMValueRef c = fma3(E, q, poly(E, cc, 5, q), kf(E, 1.0f));
	LLVMValueRef r = LLVMBuildSelect(E->b, sine, s, c, "");
	return LLVMBuildSelect(E->b, neg, LLVMBuildFNeg(E->b, r, ""), r, "");
}

/* sqrt(-2 log max(u1, 1e-7)) cos(2 pi u2). */
static LLVMValueRef normal(Emit *E, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef u1 = uniform(E, a);
	u1 = select_f(E, LLVMRealOGE, u1, BLK_RAND_TINY, u1, kf(E, BLK_RAND_TINY));
	LLVMValueRef l = LLVMBuildFMul(E->b, kf(E, -2.0f), rand_log(E, u1), "");
	LLVMTypeRef t = E->f32;
	LLVMValueRef r = blk_emit_intrinsic(E, "llvm.sqrt", &t, 1, &l, 1);
	return LLVMBuildFMul(E->b, r, cos_2pi(E, uniform(E, b)), "");
}

LLVMValueRef blk_emit_random(Emit *E, const BlkOp *op, const LLVMValueRef *x)
{
	switch (op->kind) {
	case BLK_OP_PHILOX: return philox(E, x[0], x + 1, (int)blk_op_int(op, "word", 0));
	case BLK_OP_UNIFORM: return uniform(E, x[0]);
	case BLK_OP_NORMAL: return normal(E, x[0], x[1]);
	default: blk_die("lower: emit: %s is not a random op", blk_op_name(op->kind));
	}
}
