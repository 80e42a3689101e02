/* random.c - the random numbers of rand, randn, randint and philox.
 *
 * Counter-based: an element's value is a pure function of the seed and
 * its counter (Philox4x32 with 10 rounds, Salmon et al., SC'11), so any
 * program computes any element without state, and the interpreter and the
 * GPU agree bit for bit.  The words become floats by exact integer steps
 * and f32 operations each rounded once (no library log or cos, whose
 * last bits differ between libm and the GPU): the emitter
 * (lower/emit/emit_random.c) builds the same operations in the same
 * order.  Written so that no product feeds a sum outside an explicit
 * fmaf, so a compiler that contracts cannot change a bit.
 */
#include "ir/ir.h"

#include <math.h>
#include <string.h>

/* One round: two 32x32 -> 64-bit products, their halves crossed with the
 * other words and the key. */
static void philox_round(uint32_t k0, uint32_t k1, uint32_t c[4])
{
	uint64_t p0 = (uint64_t)BLK_PHILOX_M0 * c[0], p1 = (uint64_t)BLK_PHILOX_M1 * c[2];
	uint32_t n[4] = {
		(uint32_t)(p1 >> 32) ^ c[1] ^ k0,
		(uint32_t)p1,
		(uint32_t)(p0 >> 32) ^ c[3] ^ k1,
		(uint32_t)p0,
	};
	memcpy(c, n, sizeof n);
}

void blk_philox(uint32_t k0, uint32_t k1, uint32_t ctr[4])
{
	for (int r = 0; r < BLK_PHILOX_ROUNDS; r++, k0 += BLK_PHILOX_W0, k1 += BLK_PHILOX_W1)
		philox_round(k0, k1, ctr);
}

uint32_t blk_philox_key_hi(int32_t seed)
{
	return seed < 0 ? 0xffffffffu : 0;
}

float blk_rand_uniform(uint32_t x)
{
	int32_t v = (int32_t)(x & 0x7fffffffu);
	if (x >> 31) /* ~x as i32: -x - 1 */
		v = (int32_t)(~x);
	return (float)v * BLK_RAND_SCALE;
}

static float from_bits(uint32_t b)
{
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

static uint32_t to_bits(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof b);
	return b;
}

/* log(u) of a normal positive u: u = m 2^e with m in [2/3, 4/3) by its
 * bits, then log m = 2 atanh(s), s = (m - 1)/(m + 1) in [-1/5, 1/7]. */
static float rand_log(float u)
{
	static const float c[] = BLK_RAND_LOG_C;
	uint32_t b = to_bits(u);
	int32_t e = (int32_t)(b >> 23) - 127;
	uint32_t mb = (b & 0x7fffffu) | 0x3f800000u; /* [1, 2) */
	if (mb >= BLK_RAND_MID) {
		mb -= 1u << 23; /* halved: [2/3, 1) */
		e += 1;
	}
	float f = from_bits(mb) - 1.0f; /* exact */
	float s = f / (f + 2.0f), t = s * s;
	float p = fmaf(t, c[3], c[2]);
	p = fmaf(t, p, c[1]);
	p = fmaf(t, p, c[0]);
	float lm = fmaf(s * t, p, 2.0f * s);
	return fmaf((float)e, BLK_RAND_LN2, lm);
}

static float poly(const float *c, int n, float q)
{
	float p = c[n - 1];
	for (int i = n - 2; i >= 0; i--)
		p = fmaf(q, p, c[i]);
	return p;
}

/* cos(2 pi u) of u in [0, 1), reduced by exact subtractions to z in
 * [0, 1/8]: v = u or u - 1 (cos is even: |v|), w = 1/2 - |v| flips the
 * sign, 1/4 - w turns cos into sin.  Each subtraction is exact (its
 * operands within a factor 2 of each other). */
static float cos_2pi(float u)
{
	static const float cc[] = BLK_RAND_COS_C, sc[] = BLK_RAND_SIN_C;
	float w = u >= 0.5f ? 1.0f - u : u; /* |v| in [0, 1/2] */
	bool neg = w > 0.25f;
	if (neg)
		w = 0.5f - w;
	bool sine = w > 0.125f;
	float z = sine ? 0.25f - w : w, q = z * z;
	float r = sine ? z * poly(sc, 5, q) : fmaf(q, poly(cc, 5, q), 1.0f);
	return neg ? -r : r;
}

float blk_rand_normal(uint32_t a, uint32_t b)
{
	float u1 = blk_rand_uniform(a), u2 = blk_rand_uniform(b);
	if (!(u1 >= BLK_RAND_TINY))
		u1 = BLK_RAND_TINY;
	float r = sqrtf(-2.0f * rand_log(u1));
	return r * cos_2pi(u2);
}
