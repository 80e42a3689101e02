/* test_hostdata.c - .npy round trips and errors, random fill, poison, compare. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/hostdata.h"

typedef struct Ctx {
	BlkArena *a;
	BlkDiag *d;
	char *buf;
	size_t len;
	FILE *f;
} Ctx;

static void ctx_init(Ctx *c)
{
	memset(c, 0, sizeof *c);
	c->a = blk_arena_create();
	c->f = open_memstream(&c->buf, &c->len);
	c->d = blk_diag_create(c->a, c->f, 0);
}

static void ctx_free(Ctx *c)
{
	fclose(c->f);
	free(c->buf);
	blk_arena_destroy(c->a);
}

static void test_npy_round_trip(void **state)
{
	(void)state;
	static const BlkDType dts[] = { BLK_F32, BLK_F16, BLK_BF16, BLK_I32, BLK_BOOL };
	static const int64_t shapes[][3] = { { 3, 5, 2 }, { 7, 0, 0 }, { 0, 0, 0 } };
	static const int ranks[] = { 3, 1, 0 };
	char path[] = "/tmp/blk-npy-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
		for (int s = 0; s < 3; s++) {
			Ctx c;
			ctx_init(&c);
			BlkHostArray *h = blk_host_new(dts[i], ranks[s], shapes[s]);
			blk_host_fill_random(h, 42 + i);
			assert_true(blk_host_npy_write(path, h, c.d));
			BlkHostArray *r = blk_host_npy_read(path, c.d);
			assert_non_null(r);
			assert_int_equal(r->desc.dtype, dts[i]);
			assert_int_equal(r->desc.rank, ranks[s]);
			for (int d = 0; d < ranks[s]; d++)
				assert_int_equal(r->desc.shape[d], shapes[s][d]);
			assert_int_equal(r->nbytes, h->nbytes);
			assert_memory_equal(r->data, h->data, h->nbytes);
			blk_host_free(r);
			blk_host_free(h);
			ctx_free(&c);
		}
	}
	unlink(path);
}

/* The header blk writes, byte for byte as NumPy writes it. */
static void test_npy_header_format(void **state)
{
	(void)state;
	Ctx c;
	ctx_init(&c);
	char path[] = "/tmp/blk-npy-XXXXXX";
	close(mkstemp(path));
	int64_t shape[] = { 3 };
	BlkHostArray *h = blk_host_new(BLK_F32, 1, shape);
	assert_true(blk_host_npy_write(path, h, c.d));
	FILE *f = fopen(path, "rb");
	char buf[256];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	assert_int_equal(n, 128 + 12); /* data aligned to 64 */
	assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 67);
	assert_int_equal(buf[127], '\n');
	blk_host_free(h);
	unlink(path);
	ctx_free(&c);
}

/* A v1.0 image with the given dict and data size. */
static size_t image(unsigned char *out, const char *dict, size_t ndata)
{
	size_t hl = strlen(dict);
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (unsigned char)(hl & 0xff);
	out[9] = (unsigned char)(hl >> 8);
	memcpy(out + 10, dict, hl);
	memset(out + 10 + hl, 0, ndata);
	return 10 + hl + ndata;
}

static void expect_npy_error(const unsigned char *img, size_t len, const char *msg)
{
	Ctx c;
	ctx_init(&c);
	BlkHostArray *h = blk_host_npy_parse("x.npy", img, len, c.d);
	assert_null(h);
	const char *e = blk_diag_last_error(c.d);
	assert_non_null(e);
	if (strcmp(e, msg) != 0)
		fprintf(stderr, "got: %s\nwant: %s\n", e, msg);
	assert_string_equal(e, msg);
	ctx_free(&c);
}

static void test_npy_errors(void **state)
{
	(void)state;
	unsigned char img[512];
	size_t n;
	expect_npy_error((const unsigned char *)"hello world!", 12, "x.npy: not a .npy file (bad magic)");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8);
	img[6] = 9;
	expect_npy_error(img, n, "x.npy: unsupported .npy version 9.0");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8);
	expect_npy_error(img, 20, "x.npy: truncated .npy header");
	expect_npy_error(img, n - 1, "x.npy: truncated data: expected 8 bytes, found 7");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 9);
	expect_npy_error(img, n, "x.npy: trailing bytes after the data: its header's shape holds 8 bytes, and the file has more");
	n = image(img, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8);
	expect_npy_error(img, n, "x.npy: unsupported dtype '>f4' (blk reads '<f4', '<f2', '<u2' as "
	                         "bf16 bits, '<i4', '|b1', '|i1' and '|u1')");
	n = image(img, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", 16);
	expect_npy_error(img, n, "x.npy: unsupported dtype '<f8' (blk reads '<f4', '<f2', '<u2' as "
	                         "bf16 bits, '<i4', '|b1', '|i1' and '|u1')");
	n = image(img, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16);
	expect_npy_error(img, n, "x.npy: fortran_order arrays are not supported");
	n = image(img, "{'descr': '<f4', 'fortran_order': False}\n", 0);
	expect_npy_error(img, n, "x.npy: bad .npy header: it lacks shape");
	n = image(img, "{'descr': '<f4', 'fortran_order': Nope, 'shape': (2,), }\n", 8);
	expect_npy_error(img, n, "x.npy: bad .npy header: fortran_order is not True or False");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,-1), }\n", 8);
	expect_npy_error(img, n, "x.npy: bad .npy header: bad shape");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1), }\n", 4);
	expect_npy_error(img, n, "x.npy: rank over 4 is not supported");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", 4);
	expect_npy_error(img, n, "x.npy: bad .npy header: a dim is too large");
	n = image(img, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", 4);
	expect_npy_error(img, n, "x.npy: the array is too large");
	n = image(img, "{'descr': '<f4', 'extra': 1, 'fortran_order': False, 'shape': (2,), }\n", 8);
	expect_npy_error(img, n, "x.npy: bad .npy header: unknown key 'extra'");
	n = image(img, "['descr']\n", 0);
	expect_npy_error(img, n, "x.npy: bad .npy header: expected '{'");
	n = image(img, "{'descr': '<f4", 0);
	expect_npy_error(img, n, "x.npy: bad .npy header: bad string");
	Ctx c;
	ctx_init(&c);
	assert_null(blk_host_npy_read("/nonexistent/x.npy", c.d));
	assert_string_equal(blk_diag_last_error(c.d), "cannot open /nonexistent/x.npy: No such file or directory");
	ctx_free(&c);
}

static void test_random_poison_compare(void **state)
{
	(void)state;
	int64_t shape[] = { 1000 };
	BlkHostArray *a = blk_host_new(BLK_BF16, 1, shape), *b = blk_host_new(BLK_BF16, 1, shape);
	blk_host_fill_random(a, 7);
	blk_host_fill_random(b, 7);
	assert_memory_equal(a->data, b->data, a->nbytes);
	double *ref = calloc(1000, sizeof *ref);
	for (size_t i = 0; i < a->count; i++) {
		double v = blk_host_get(a, i);
		assert_true(v >= -1.0 && v <= 1.0);
		ref[i] = v * (1.0 + 1e-3); /* within bf16 tolerance */
	}
	BlkHostCompare cmp;
	assert_true(blk_host_compare(a, ref, blk_host_default_tol(BLK_BF16), &cmp));
	assert_true(cmp.max_abs > 0.0 && cmp.max_rel < 2e-2);
	blk_host_poison(a);
	assert_int_equal(blk_host_count_poison(a), 1000);
	assert_false(blk_host_compare(a, ref, 1.0, &cmp)); /* NaN never passes */
	assert_int_equal(cmp.mismatches, 1000);
	assert_int_equal(cmp.first_bad, 0);
	blk_host_set(a, 0, 0.5);
	assert_int_equal(blk_host_count_poison(a), 999);
	/* i32 compares exactly */
	BlkHostArray *n = blk_host_new(BLK_I32, 1, shape);
	blk_host_fill_random(n, 3);
	for (size_t i = 0; i < n->count; i++) {
		ref[i] = blk_host_get(n, i);
		assert_true(ref[i] >= -8 && ref[i] <= 8);
	}
	assert_true(blk_host_compare(n, ref, 0.0, &cmp));
	ref[5] += 1;
	assert_false(blk_host_compare(n, ref, 0.0, &cmp));
	assert_int_equal(cmp.first_bad, 5);
	blk_host_free(n);
	/* f16 among its subnormals: off by less than their spacing (2^-24) is
	 * within any tolerance (the stored result cannot be closer); more is not */
	int64_t one[1] = { 1 };
	BlkHostArray *h = blk_host_new(BLK_F16, 1, one);
	blk_host_set(h, 0, -4.76837158203125e-07); /* -8 * 2^-24 */
	double tiny = -4.57934e-07;
	assert_true(blk_host_compare(h, &tiny, blk_host_default_tol(BLK_F16), &cmp));
	tiny = -4.76837158203125e-07 + 1.2e-7;
	assert_false(blk_host_compare(h, &tiny, blk_host_default_tol(BLK_F16), &cmp));
	tiny = -4.57934e-07; /* a tolerance of 0 stays exact */
	assert_false(blk_host_compare(h, &tiny, 0.0, &cmp));
	blk_host_free(h);
	free(ref);
	blk_host_free(a);
	blk_host_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npy_round_trip),
		cmocka_unit_test(test_npy_header_format),
		cmocka_unit_test(test_npy_errors),
		cmocka_unit_test(test_random_poison_compare),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
