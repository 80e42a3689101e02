/* hostdata.c - host arrays: .npy, random data, poison, comparison.
 *
 * The .npy reader treats its input as untrusted: every length is checked
 * before use, the header dict is parsed by a small grammar rather than
 * searched for substrings, and anything not understood is refused with a
 * message naming the file.  Format: "\x93NUMPY", major, minor, header length
 * (u16 in v1, u32 in v2/v3, little-endian), then a Python dict literal
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, then the raw data, C order.
 */
#include "hostdata.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const BlkLoc no_loc;

/* ---- arrays --------------------------------------------------------------- */

BlkHostArray *blk_host_new(BlkDType dt, int rank, const int64_t *shape)
{
	if (rank < 0 || rank > BLK_MAX_RANK)
		return NULL;
	uint64_t count = 1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0 || __builtin_mul_overflow(count, (uint64_t)shape[i], &count) ||
		    count > BLK_HOST_MAX_BYTES)
			return NULL;
	}
	if (count * (uint64_t)blk_dtype_size(dt) > BLK_HOST_MAX_BYTES)
		return NULL;
	BlkHostArray *h = calloc(1, sizeof *h);
	size_t nbytes = (size_t)count * (size_t)blk_dtype_size(dt);
	h->data = calloc(1, nbytes + 1);
	if (!h->data) {
		free(h);
		return NULL;
	}
	h->desc.dtype = dt;
	h->desc.rank = rank;
	int64_t s = 1;
	for (int i = rank - 1; i >= 0; i--) {
		h->desc.shape[i] = shape[i];
		h->desc.strides[i] = s;
		s *= shape[i];
	}
	h->count = (size_t)count;
	h->nbytes = nbytes;
	return h;
}

void blk_host_free(BlkHostArray *h)
{
	if (!h)
		return;
	free(h->data);
	free(h);
}

double blk_host_get(const BlkHostArray *h, size_t i)
{
	const unsigned char *p = (const unsigned char *)h->data + i * (size_t)blk_dtype_size(h->desc.dtype);
	uint16_t u;
	int32_t v;
	float f;
	switch (h->desc.dtype) {
	case BLK_F32: memcpy(&f, p, 4); return f;
	case BLK_F16: memcpy(&u, p, 2); return blk_f16_to_f32(u);
	case BLK_BF16: memcpy(&u, p, 2); return blk_bf16_to_f32(u);
	case BLK_I32: memcpy(&v, p, 4); return v;
	case BLK_U32: memcpy(&v, p, 4); return (uint32_t)v;
	case BLK_I8: return (int8_t)*p;
	case BLK_U8: return *p;
	case BLK_F8E4M3: case BLK_F8E5M2: return blk_fp8_to_f32(h->desc.dtype, *p);
	default: return *p != 0;
	}
}

static int32_t to_i32(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 2147483647.0)
		return INT32_MAX;
	if (v <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)v;
}

void blk_host_set(BlkHostArray *h, size_t i, double v)
{
	unsigned char *p = (unsigned char *)h->data + i * (size_t)blk_dtype_size(h->desc.dtype);
	uint16_t u;
	int32_t n;
	float f = (float)v;
	switch (h->desc.dtype) {
	case BLK_F32: memcpy(p, &f, 4); break;
	case BLK_F16: u = blk_f32_to_f16(f); memcpy(p, &u, 2); break;
	case BLK_BF16: u = blk_f32_to_bf16(f); memcpy(p, &u, 2); break;
	case BLK_I32: n = to_i32(v); memcpy(p, &n, 4); break;
	case BLK_U32: /* saturated to [0, 2^32 - 1], NaN 0 */
		n = (int32_t)(uint32_t)(v > 0 ? (v < 4294967295.0 ? v : 4294967295.0) : 0.0);
		memcpy(p, &n, 4);
		break;
	case BLK_I8: case BLK_U8: *p = (unsigned char)blk_int_wrap(h->desc.dtype, to_i32(v)); break;
	case BLK_F8E4M3: case BLK_F8E5M2: *p = blk_f32_to_fp8(h->desc.dtype, f); break;
	default: *p = v != 0.0; break;
	}
}

/* ---- random data and poison -------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void blk_host_fill_random(BlkHostArray *h, uint64_t seed)
{
	uint64_t s = seed;
	for (size_t i = 0; i < h->count; i++) {
		uint64_t r = splitmix64(&s);
		double v;
		if (blk_dtype_is_float(h->desc.dtype))
			v = (double)(r >> 40) * 0x1p-23 - 1.0; /* 24 bits: exact in f32 */
		else if (blk_dtype_is_fp8(h->desc.dtype)) /* [-4, 4): subnormals to 4's binade */
			v = (double)(r >> 40) * 0x1p-21 - 4.0;
		else if (h->desc.dtype == BLK_I32)
			v = (double)(r % 17) - 8.0;
		else if (h->desc.dtype == BLK_U32) /* every bit: the top one too, where u32 is not i32 */
			v = (double)(r >> 32);
		else if (blk_dtype_is_byte(h->desc.dtype)) /* every byte: wraps show */
			v = (double)blk_int_wrap(h->desc.dtype, (int64_t)(r >> 56));
		else
			v = (double)(r >> 63);
		blk_host_set(h, i, v);
	}
}

/* The poison bit pattern of a dtype, in its low bytes.  Floats get a
 * signaling NaN with an odd payload: arithmetic and conversions only make
 * quiet NaNs, so a kernel that writes NaN is not taken for one that never
 * wrote (the canonical quiet NaN was both). */
static uint32_t poison_bits(BlkDType dt)
{
	switch (dt) {
	case BLK_F32: return 0x7fa5a5a5u;
	case BLK_F16: return 0x7d5au;
	case BLK_BF16: return 0x7fa5u;
	case BLK_I32: case BLK_U32: return 0xdeadbeefu;
	case BLK_F8E4M3: case BLK_F8E5M2: return 0x7fu; /* NaN */
	default: return 0xa5u;
	}
}

void blk_host_poison(BlkHostArray *h)
{
	uint32_t bits = poison_bits(h->desc.dtype);
	size_t es = (size_t)blk_dtype_size(h->desc.dtype);
	for (size_t i = 0; i < h->count; i++) {
		uint16_t b16 = (uint16_t)bits;
		uint8_t b8 = (uint8_t)bits;
		unsigned char *p = (unsigned char *)h->data + i * es;
		memcpy(p, es == 4 ? (void *)&bits : es == 2 ? (void *)&b16 : (void *)&b8, es);
	}
}

size_t blk_host_count_poison(const BlkHostArray *h)
{
	uint32_t bits = poison_bits(h->desc.dtype);
	size_t es = (size_t)blk_dtype_size(h->desc.dtype), n = 0;
	if (blk_dtype_is_byte(h->desc.dtype) || blk_dtype_is_fp8(h->desc.dtype))
		return 0; /* every byte is a value (fp8's NaN too): no pattern tells "never written" */
	for (size_t i = 0; i < h->count; i++) {
		uint32_t v = 0;
		memcpy(&v, (const unsigned char *)h->data + i * es, es); /* little-endian host */
		n += v == bits;
	}
	return n;
}

/* ---- comparison --------------------------------------------------------------- */

double blk_host_default_tol(BlkDType dt)
{
	switch (dt) {
	case BLK_F32: return 1e-5;
	case BLK_F16: return 1e-2;
	case BLK_BF16: return 2e-2;
	default: return 0.0;
	}
}

/* The spacing of dt's subnormals: a result stored in dt is off the exact
 * value by up to half of it whatever the scale, so a tolerance relative to
 * the outputs' largest never asks for less (a 1x1 product of small values
 * lands among f16's subnormals). */
static double subnormal_step(BlkDType dt)
{
	switch (dt) {
	case BLK_F16: return ldexp(1.0, -24);
	case BLK_BF16: return ldexp(1.0, -133);
	case BLK_F8E4M3: return ldexp(1.0, -9);
	case BLK_F8E5M2: return ldexp(1.0, -16);
	default: return 0.0;
	}
}

bool blk_host_compare(const BlkHostArray *out, const double *ref, double tol,
                      BlkHostCompare *res)
{
	memset(res, 0, sizeof *res);
	double floor = tol > 0 ? subnormal_step(out->desc.dtype) : 0.0;
	res->first_bad = out->count;
	for (size_t i = 0; i < out->count; i++)
		if (isfinite(ref[i]) && fabs(ref[i]) > res->scale)
			res->scale = fabs(ref[i]);
	if (res->scale == 0.0)
		res->scale = 1.0;
	for (size_t i = 0; i < out->count; i++) {
		double o = blk_host_get(out, i), diff = fabs(o - ref[i]);
		bool ok = isnan(o) ? isnan(ref[i]) : o == ref[i] || diff <= tol * res->scale || diff <= floor;
		if (isfinite(diff) && diff > res->max_abs)
			res->max_abs = diff;
		if (ok)
			continue;
		if (res->mismatches++ == 0) {
			res->first_bad = i;
			res->bad_out = o;
			res->bad_ref = ref[i];
		}
	}
	res->max_rel = res->max_abs / res->scale;
	return res->mismatches == 0;
}

/* ---- .npy ----------------------------------------------------------------------- */

/* The dtypes blk reads and writes; bf16 travels as its raw bits, and so
 * do f8e4m3 and f8e5m2 ('|u1': read back as u8, blkc run takes a '|u1'
 * file for an fp8 parameter as its bits). */
static const struct {
	const char *descr;
	BlkDType dt;
} npy_dtypes[] = {
	{ "<f4", BLK_F32 }, { "<f2", BLK_F16 }, { "<u2", BLK_BF16 },
	{ "<i4", BLK_I32 }, { "|b1", BLK_BOOL }, { "|i1", BLK_I8 }, { "|u1", BLK_U8 },
	{ "|u1", BLK_F8E4M3 }, { "|u1", BLK_F8E5M2 }, { "<u4", BLK_U32 },
};

/* A cursor over the header text. */
typedef struct Hdr {
	const char *p, *end;
	const char *name;
	BlkDiag *d;
} Hdr;

static void skip_ws(Hdr *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
		h->p++;
}

static bool expect(Hdr *h, char c)
{
	skip_ws(h);
	if (h->p < h->end && *h->p == c) {
		h->p++;
		return true;
	}
	blk_error(h->d, no_loc, "%s: bad .npy header: expected '%c'", h->name, c);
	return false;
}

static bool peek(Hdr *h, char c)
{
	skip_ws(h);
	return h->p < h->end && *h->p == c;
}

/* string = "'" chars "'" | '"' chars '"'   (no escapes: none are valid here) */
static bool parse_str(Hdr *h, char *out, size_t cap)
{
	skip_ws(h);
	char q = h->p < h->end ? *h->p : 0;
	if (q != '\'' && q != '"')
		return expect(h, '\'');
	const char *s = ++h->p;
	while (h->p < h->end && *h->p != q)
		h->p++;
	size_t n = (size_t)(h->p - s);
	if (h->p == h->end || n >= cap) {
		blk_error(h->d, no_loc, "%s: bad .npy header: bad string", h->name);
		return false;
	}
	memcpy(out, s, n);
	out[n] = 0;
	h->p++;
	return true;
}

/* bool = "True" | "False" */
static bool parse_bool(Hdr *h, bool *out)
{
	skip_ws(h);
	size_t left = (size_t)(h->end - h->p);
	if (left >= 4 && memcmp(h->p, "True", 4) == 0) {
		h->p += 4;
		*out = true;
		return true;
	}
	if (left >= 5 && memcmp(h->p, "False", 5) == 0) {
		h->p += 5;
		*out = false;
		return true;
	}
	blk_error(h->d, no_loc, "%s: bad .npy header: fortran_order is not True or False", h->name);
	return false;
}

static bool parse_int(Hdr *h, int64_t *out)
{
	skip_ws(h);
	int64_t v = 0;
	const char *s = h->p;
	while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *h->p - '0', &v)) {
			blk_error(h->d, no_loc, "%s: bad .npy header: a dim is too large", h->name);
			return false;
		}
		h->p++;
	}
	if (h->p == s) {
		blk_error(h->d, no_loc, "%s: bad .npy header: bad shape", h->name);
		return false;
	}
	if (h->p < h->end && *h->p == 'L') /* Python 2 longs */
		h->p++;
	*out = v;
	return true;
}

/* shape = "(" [ int { "," int } [ "," ] ] ")" */
static bool parse_shape(Hdr *h, int *rank, int64_t *shape)
{
	if (!expect(h, '('))
		return false;
	*rank = 0;
	while (!peek(h, ')')) {
		int64_t v;
		if (!parse_int(h, &v))
			return false;
		if (*rank == BLK_MAX_RANK) {
			blk_error(h->d, no_loc, "%s: rank over %d is not supported", h->name, BLK_MAX_RANK);
			return false;
		}
		shape[(*rank)++] = v;
		if (!peek(h, ')') && !expect(h, ','))
			return false;
	}
	return expect(h, ')');
}

typedef struct NpyHeader {
	char descr[16];
	bool fortran;
	int rank;
	int64_t shape[BLK_MAX_RANK];
	unsigned seen; /* 1 descr, 2 fortran_order, 4 shape */
} NpyHeader;

static bool parse_entry(Hdr *h, NpyHeader *nh)
{
	char key[32];
	if (!parse_str(h, key, sizeof key) || !expect(h, ':'))
		return false;
	if (strcmp(key, "descr") == 0) {
		nh->seen |= 1;
		return parse_str(h, nh->descr, sizeof nh->descr);
	}
	if (strcmp(key, "fortran_order") == 0) {
		nh->seen |= 2;
		return parse_bool(h, &nh->fortran);
	}
	if (strcmp(key, "shape") == 0) {
		nh->seen |= 4;
		return parse_shape(h, &nh->rank, nh->shape);
	}
	blk_error(h->d, no_loc, "%s: bad .npy header: unknown key '%s'", h->name, key);
	return false;
}

/* dict = "{" { entry "," } [ entry ] "}" */
static bool parse_header(Hdr *h, NpyHeader *nh)
{
	if (!expect(h, '{'))
		return false;
	while (!peek(h, '}')) {
		if (!parse_entry(h, nh))
			return false;
		if (!peek(h, '}') && !expect(h, ','))
			return false;
	}
	if (!expect(h, '}'))
		return false;
	if (nh->seen != 7) {
		blk_error(h->d, no_loc, "%s: bad .npy header: it lacks %s", h->name,
		          !(nh->seen & 1) ? "descr" : !(nh->seen & 2) ? "fortran_order" : "shape");
		return false;
	}
	return true;
}

static bool npy_dtype(const char *name, const char *descr, BlkDType *dt, BlkDiag *d)
{
	for (size_t i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++) {
		if (strcmp(descr, npy_dtypes[i].descr) == 0) {
			*dt = npy_dtypes[i].dt;
			return true;
		}
	}
	blk_error(d, no_loc, "%s: unsupported dtype '%s' (blk reads '<f4', '<f2', '<u2' as bf16 "
	          "bits, '<i4', '|b1', '|i1' and '|u1')", name, descr);
	return false;
}

/* The largest header and payload blk reads: NumPy writes headers of a
 * few hundred bytes (and itself refuses ones over 10000 by default). */
enum { NPY_MAX_HEADER = 1 << 16 };
#define NPY_MAX_BYTES BLK_HOST_MAX_BYTES

/* Magic, version and header length; hstart and hlen locate the dict. */
static bool npy_preamble(const char *name, const unsigned char *b, size_t len,
                         size_t *hstart, size_t *hlen, BlkDiag *d)
{
	if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
		blk_error(d, no_loc, "%s: not a .npy file (bad magic)", name);
		return false;
	}
	if (b[6] < 1 || b[6] > 3) {
		blk_error(d, no_loc, "%s: unsupported .npy version %d.%d", name, b[6], b[7]);
		return false;
	}
	if (b[6] == 1) {
		*hstart = 10;
		*hlen = (size_t)b[8] | (size_t)b[9] << 8;
	} else {
		if (len < 12) {
			blk_error(d, no_loc, "%s: truncated .npy header", name);
			return false;
		}
		*hstart = 12;
		*hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
	}
	if (*hlen > NPY_MAX_HEADER) {
		blk_error(d, no_loc, "%s: a .npy header of %zu bytes; blk reads headers up to %d bytes",
		          name, *hlen, NPY_MAX_HEADER);
		return false;
	}
	if (*hlen > len - *hstart) {
		blk_error(d, no_loc, "%s: truncated .npy header", name);
		return false;
	}
	return true;
}

/* The payload bytes a header announces; false (with an error) past
 * NPY_MAX_BYTES or when the header does not parse. */
static bool npy_payload_bytes(const char *name, const unsigned char *b, size_t hstart, size_t hlen,
                              size_t *bytes, BlkDiag *d)
{
	Hdr h = { (const char *)b + hstart, (const char *)b + hstart + hlen, name, d };
	NpyHeader nh = { 0 };
	BlkDType dt;
	if (!parse_header(&h, &nh) || !npy_dtype(name, nh.descr, &dt, d))
		return false;
	uint64_t n = (uint64_t)blk_dtype_size(dt);
	for (int i = 0; i < nh.rank; i++)
		if (nh.shape[i] < 0 || __builtin_mul_overflow(n, (uint64_t)nh.shape[i], &n) ||
		    n > NPY_MAX_BYTES) {
			blk_error(d, no_loc, "%s: the array is larger than %zu bytes, the most blk reads "
			          "from a .npy", name, NPY_MAX_BYTES);
			return false;
		}
	*bytes = (size_t)n;
	return true;
}

BlkHostArray *blk_host_npy_parse(const char *name, const void *buf, size_t len, BlkDiag *d)
{
	const unsigned char *b = buf;
	size_t hstart, hlen;
	if (!npy_preamble(name, b, len, &hstart, &hlen, d))
		return NULL;
	Hdr h = { (const char *)b + hstart, (const char *)b + hstart + hlen, name, d };
	NpyHeader nh = { 0 };
	BlkDType dt;
	if (!parse_header(&h, &nh) || !npy_dtype(name, nh.descr, &dt, d))
		return NULL;
	if (nh.fortran) {
		blk_error(d, no_loc, "%s: fortran_order arrays are not supported", name);
		return NULL;
	}
	BlkHostArray *a = blk_host_new(dt, nh.rank, nh.shape);
	if (!a) {
		blk_error(d, no_loc, "%s: the array is too large", name);
		return NULL;
	}
	size_t have = len - hstart - hlen;
	if (have < a->nbytes) {
		blk_error(d, no_loc, "%s: truncated data: expected %zu bytes, found %zu", name, a->nbytes, have);
		blk_host_free(a);
		return NULL;
	}
	if (have > a->nbytes) { /* (the reader may stop one byte past the data: no count of the rest) */
		blk_error(d, no_loc, "%s: trailing bytes after the data: its header's shape holds %zu bytes, "
		          "and the file has more", name, a->nbytes);
		blk_host_free(a);
		return NULL;
	}
	memcpy(a->data, b + hstart + hlen, a->nbytes);
	if (dt == BLK_BOOL)
		for (size_t i = 0; i < a->count; i++)
			((unsigned char *)a->data)[i] = ((unsigned char *)a->data)[i] != 0;
	return a;
}

/* Up to n more bytes of f at buf + *len. */
static void read_more(FILE *f, unsigned char *buf, size_t *len, size_t n)
{
	*len += fread(buf + *len, 1, n, f);
}

/* The image of a .npy file, read no further than it announces: the
 * preamble, the header it sizes (checked and capped), then the payload the
 * header describes plus one byte to notice trailing data.  A stream such
 * as /dev/zero is refused after its first bytes instead of filling memory. */
static unsigned char *read_npy(const char *path, FILE *f, size_t *len, BlkDiag *d)
{
	size_t hstart, hlen, bytes, n = 0;
	unsigned char *buf = calloc(1, 12 + NPY_MAX_HEADER), *grown;
	if (!buf)
		return NULL;
	read_more(f, buf, &n, 10);
	if (n == 10 && buf[6] > 1)
		read_more(f, buf, &n, 2);
	if (!npy_preamble(path, buf, n < 10 ? n : n + NPY_MAX_HEADER, &hstart, &hlen, d)) {
		free(buf);
		return NULL;
	}
	read_more(f, buf, &n, hlen);
	if (n < hstart + hlen) {
		*len = n; /* truncated: the parse says so */
		return buf;
	}
	if (!npy_payload_bytes(path, buf, hstart, hlen, &bytes, d) ||
	    !(grown = realloc(buf, hstart + hlen + bytes + 1))) {
		free(buf);
		return NULL;
	}
	read_more(f, grown, &n, bytes + 1);
	*len = n;
	return grown;
}

BlkHostArray *blk_host_npy_read(const char *path, BlkDiag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		blk_error(d, no_loc, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	size_t len = 0;
	unsigned char *buf = read_npy(path, f, &len, d);
	bool err = ferror(f);
	fclose(f);
	if (err || !buf) {
		if (err || !blk_diag_error_count(d))
			blk_error(d, no_loc, "cannot read %s", path);
		free(buf);
		return NULL;
	}
	BlkHostArray *a = blk_host_npy_parse(path, buf, len, d);
	free(buf);
	return a;
}

static const char *npy_descr(BlkDType dt)
{
	for (size_t i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++)
		if (npy_dtypes[i].dt == dt)
			return npy_dtypes[i].descr;
	blk_die("hostdata: no .npy dtype for %s", blk_dtype_name(dt));
}

/* The dict, padded so that the data starts at a multiple of 64. */
static int npy_header(char *out, size_t cap, const BlkHostArray *a, int pre)
{
	int n = snprintf(out, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (",
	                 npy_descr(a->desc.dtype));
	for (int i = 0; i < a->desc.rank; i++)
		n += snprintf(out + n, cap - (size_t)n, "%" PRId64 "%s", a->desc.shape[i],
		              a->desc.rank == 1 || i + 1 < a->desc.rank ? "," : "");
	n += snprintf(out + n, cap - (size_t)n, "), }");
	while ((pre + n + 1) % 64 != 0)
		out[n++] = ' ';
	out[n++] = '\n';
	return n;
}

bool blk_host_npy_write(const char *path, const BlkHostArray *a, BlkDiag *d)
{
	char hdr[256];
	int n = npy_header(hdr, sizeof hdr, a, 10);
	unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
	                          (unsigned char)(n & 0xff), (unsigned char)(n >> 8) };
	FILE *f = fopen(path, "wb");
	if (!f) {
		blk_error(d, no_loc, "cannot open %s for writing: %s", path, strerror(errno));
		return false;
	}
	bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre &&
	          fwrite(hdr, 1, (size_t)n, f) == (size_t)n &&
	          fwrite(a->data, 1, a->nbytes, f) == a->nbytes;
	ok = (fclose(f) == 0) && ok;
	if (!ok)
		blk_error(d, no_loc, "cannot write %s", path);
	return ok;
}
