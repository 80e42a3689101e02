/* hostdata.h - host arrays for tools and tests: .npy files, seeded random
 * data, poisoning, and comparison against a reference.
 *
 * Shared by blkc and the test programs (tests/interp, tests/gpu, tests/fuzz);
 * libblk does not use it, so it lives with the tools (a static library,
 * tools/meson.build) rather than in ir/.  Arrays
 * are contiguous row-major, in the launch's storage form (f16/bf16 as
 * uint16_t bits, bool as one byte 0/1), so `desc` and `data` go straight to
 * blk_interp_run or a device copy.
 *
 * .npy dtypes: f32 '<f4', f16 '<f2', i32 '<i4', bool '|b1'.  NumPy has no
 * bf16, so bf16 is written as '<u2' holding the raw bits, and '<u2' reads
 * back as bf16; the bits are kept exactly.  In NumPy:
 *     (np.load(f).astype(np.uint32) << 16).view(np.float32)
 * gives the values as f32.  i8 and u8 are '|i1' and '|u1'; f8e4m3 and
 * f8e5m2 are written as '|u1' holding their bits (view them as
 * torch.float8_e4m3fn / float8_e5m2, or ml_dtypes'), and read back as u8.
 * Fortran order, other dtypes and big-endian data are refused.
 */
#ifndef BLK_HOSTDATA_H
#define BLK_HOSTDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

typedef struct BlkHostArray {
	BlkArrayDesc desc; /* row-major strides */
	size_t count;      /* elements */
	size_t nbytes;
	void *data;
} BlkHostArray;

/* The most bytes one host array may take (a .npy read, an array blkc run
 * makes): past it a typo in a size is an error, not the machine's memory
 * filled (calloc overcommits; the random fill would touch every page). */
#define BLK_HOST_MAX_BYTES ((size_t)1 << 32)

/* A zeroed array; NULL if the shape is negative or over BLK_HOST_MAX_BYTES.
 * Free with blk_host_free (accepts NULL). */
BlkHostArray *blk_host_new(BlkDType dt, int rank, const int64_t *shape);
void blk_host_free(BlkHostArray *h);

/* Element i (flat, row-major) as a double, and set from a double (rounded to
 * the dtype: f16/bf16 nearest even, i32 truncated and saturated, bool != 0). */
double blk_host_get(const BlkHostArray *h, size_t i);
void blk_host_set(BlkHostArray *h, size_t i, double v);

/* Seeded fill: floats uniform in [-1, 1) rounded to the dtype, i32 uniform in
 * [-8, 8], bool half true.  The same seed gives the same data everywhere. */
void blk_host_fill_random(BlkHostArray *h, uint64_t seed);
/* Poison: NaN for floats (f32 0x7fc00000, f16 0x7e00, bf16 0x7fc0),
 * 0xdeadbeef for i32, 0xa5 for bool.  Outputs are poisoned before a run so
 * unwritten elements are caught by the comparison (NaN never passes). */
void blk_host_poison(BlkHostArray *h);
/* Elements still holding the poison pattern (0 for i8 and u8, where every
 * byte is a value: a comparison with a reference still sees them). */
size_t blk_host_count_poison(const BlkHostArray *h);

/* .npy v1.0, v2.0, v3.0.  Errors name the file and go to d; NULL / false. */
BlkHostArray *blk_host_npy_read(const char *path, BlkDiag *d);
/* Parses an in-memory .npy image; `name` is used in messages. */
BlkHostArray *blk_host_npy_parse(const char *name, const void *buf, size_t len, BlkDiag *d);
/* Writes v1.0 (blk's headers are short), data aligned to 64 bytes. */
bool blk_host_npy_write(const char *path, const BlkHostArray *h, BlkDiag *d);

/* The result of a comparison with a reference.  An element mismatches when
 * |out - ref| > tol * scale, where scale = max |ref| over the array (1 if
 * that is 0): dot products and sums carry rounding error in proportion to
 * the magnitude of the whole output, not of each element.  NaN (or any
 * non-finite value that differs from the reference) always mismatches. */
typedef struct BlkHostCompare {
	double max_abs;    /* max |out - ref| */
	double max_rel;    /* max |out - ref| / scale */
	double scale;
	size_t mismatches;
	size_t first_bad;  /* flat index of the first mismatch; count if none */
	double bad_out, bad_ref;
} BlkHostCompare;

/* Default tolerance (relative to scale) per dtype:
 *   f32  1e-5: f32 rounding error of a K-term dot is about sqrt(K) * 6e-8
 *        relative to the output's magnitude for random data (1.4e-6 at
 *        K = 512), so 1e-5 leaves margin while catching any real bug;
 *   f16  1e-2: storing the result alone costs up to 2^-11 = 4.9e-4;
 *        1e-2 allows ~20 f16 ulps for f32 work rounded through f16;
 *   bf16 2e-2: one bf16 ulp is 2^-8 = 3.9e-3; 5 ulps;
 *   i32, i8, u8, bool: exact (0);
 *   f8e4m3, f8e5m2: exact (0) -- the kernel's conversion is the
 *        interpreter's bit for bit; an fp8 result of a dot whose f32 sum
 *        differs in its last bits may round one code apart (pass a
 *        tolerance: one code is up to 2^-3 (e4m3) or 2^-2 (e5m2) of it). */
double blk_host_default_tol(BlkDType dt);
/* Compares out against ref[count] (doubles, e.g. from a C reference).
 * NaN matches NaN.  true when there is no mismatch. */
bool blk_host_compare(const BlkHostArray *out, const double *ref, double tol,
                      BlkHostCompare *res);

#endif
