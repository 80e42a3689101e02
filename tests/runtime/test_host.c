/* test_host.c - the host-language API without a GPU: the version, a
 * kernel's tensor params, output shapes inferred from the inputs, the
 * interpreter on host arrays, and every error of each. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "blk.h"

static const char rowsum_src[] =
	"kernel rowsum[T = f32](\n"
	"    x: in  T[R, C] block (1, C) index (i) -> (i, 0),\n"
	"    s: out f32[R] block (1) index (i) -> (i),\n"
	"    acc: inout f32[R, 2] block (1, 2) index (i) -> (i, 0),\n"
	") grid (R) {\n"
	"    s[...] = sum(x[...].astype(f32), axis = 1);\n"
	"    acc[...] = acc[...] + 1.0;\n"
	"}\n";

static void assert_contains(const char *s, const char *part)
{
	if (!strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s);
}

typedef struct Fixture {
	BlkRuntime *rt;
	BlkProgram *p;
	BlkFunc *f;
} Fixture;

static int setup(void **state)
{
	static Fixture fx;
	fx.rt = blk_runtime_create_offline(NULL, NULL, 0);
	const char *defs[] = {"T=bf16"};
	fx.p = fx.rt ? blk_program_load_source(fx.rt, "rowsum.blk", rowsum_src, defs, 1) : NULL;
	if (!fx.p)
		fprintf(stderr, "%s\n", blk_runtime_last_error(fx.rt));
	fx.f = fx.p ? blk_program_kernel(fx.p, NULL) : NULL;
	*state = &fx;
	return fx.f ? 0 : -1;
}

static int teardown(void **state)
{
	Fixture *fx = *state;
	blk_program_destroy(fx->p);
	blk_runtime_destroy(fx->rt);
	return 0;
}

static void test_version(void **state)
{
	(void)state;
	assert_string_equal(blk_version(), BLK_VERSION);
}

static void test_params(void **state)
{
	Fixture *fx = *state;
	BlkParamInfo pi;
	assert_int_equal(blk_func_num_tensors(fx->f), 3);
	assert_true(blk_func_param(fx->f, 0, &pi));
	assert_string_equal(pi.name, "x");
	assert_int_equal(pi.access, BLK_PARAM_IN);
	assert_int_equal(pi.dtype, BLK_DTYPE_BF16); /* T=bf16 applied */
	assert_int_equal(pi.rank, 2);
	assert_true(blk_func_param(fx->f, 2, &pi));
	assert_int_equal(pi.access, BLK_PARAM_INOUT);
	assert_false(blk_func_param(fx->f, 3, &pi));
	assert_contains(blk_runtime_last_error(fx->rt), "kernel rowsum has 3 tensor params; there is no param 3");
	assert_false(blk_func_param(fx->f, -1, &pi));
	assert_int_equal(blk_func_num_sizes(fx->f), 2);
	assert_string_equal(blk_func_size_name(fx->f, 0), "R");
	assert_string_equal(blk_func_size_name(fx->f, 1), "C");
	assert_null(blk_func_size_name(fx->f, 2));
	assert_null(blk_func_size_name(fx->f, -1));
}

static void test_infer(void **state)
{
	Fixture *fx = *state;
	int64_t xs[2] = {3, 5};
	BlkTensor t[3] = {blk_tensor_make(NULL, BLK_DTYPE_BF16, 2, xs), {.rank = -1}, {.rank = -1}};
	assert_true(blk_func_infer_shapes(fx->f, t, 3));
	assert_int_equal(t[1].rank, 1);
	assert_int_equal(t[1].dtype, BLK_DTYPE_F32);
	assert_int_equal(t[1].shape[0], 3);
	assert_int_equal(t[2].shape[0], 3);
	assert_int_equal(t[2].shape[1], 2);
	assert_int_equal(t[2].strides[0], 2);
	/* Nothing binds R and C. */
	BlkTensor u[3] = {{.rank = -1}, {.rank = -1}, {.rank = -1}};
	assert_false(blk_func_infer_shapes(fx->f, u, 3));
	assert_contains(blk_runtime_last_error(fx->rt),
	                "the shape of x (dim 0: R) is not fixed by the arrays given; pass x");
	/* R from x is 3, from acc 4. */
	int64_t as[2] = {4, 2};
	BlkTensor v[3] = {blk_tensor_make(NULL, BLK_DTYPE_BF16, 2, xs), {.rank = -1},
	                  blk_tensor_make(NULL, BLK_DTYPE_F32, 2, as)};
	assert_false(blk_func_infer_shapes(fx->f, v, 3));
	assert_contains(blk_runtime_last_error(fx->rt), "size R is 3 from an earlier array but 4 from acc");
	assert_false(blk_func_infer_shapes(fx->f, v, 2));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got 2");
	/* x of rank 1 binds nothing: the rank is the error, not s's shape */
	BlkTensor w[3] = {blk_tensor_make(NULL, BLK_DTYPE_BF16, 1, xs), {.rank = -1}, {.rank = -1}};
	assert_false(blk_func_infer_shapes(fx->f, w, 3));
	assert_contains(blk_runtime_last_error(fx->rt), "launch of rowsum: x has rank 1 but the kernel expects rank 2");
	/* a size past i32 (a broadcast input's dim) is refused before the
	 * caller sizes an output by it (Python allocated 4 TB for s) */
	int64_t huge[2] = {(int64_t)1 << 40, 2};
	BlkTensor b[3] = {blk_tensor_make(NULL, BLK_DTYPE_BF16, 2, huge), {.rank = -1}, {.rank = -1}};
	b[0].strides[0] = 0;
	assert_false(blk_func_infer_shapes(fx->f, b, 3));
	assert_contains(blk_runtime_last_error(fx->rt), "size R = 1099511627776 (from x) does not fit in i32");
}

static uint16_t bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

static void test_interpret(void **state)
{
	Fixture *fx = *state;
	/* x is a strided view: every other column of a 3x10 buffer. */
	uint16_t xbuf[30];
	for (int i = 0; i < 30; i++)
		xbuf[i] = bf16((float)(i % 10 == 1 ? 100 : i % 2 == 0 ? i / 10 + 1 : 0));
	float s[3] = {-1, -1, -1}, acc[6] = {0, 1, 2, 3, 4, 5};
	int64_t xs[2] = {3, 5}, ss = 3, as[2] = {3, 2};
	BlkTensor t[3] = {blk_tensor_make(xbuf, BLK_DTYPE_BF16, 2, xs),
	                  blk_tensor_make(s, BLK_DTYPE_F32, 1, &ss),
	                  blk_tensor_make(acc, BLK_DTYPE_F32, 2, as)};
	t[0].strides[0] = 10;
	t[0].strides[1] = 2;
	assert_true(blk_interpret(fx->f, t, 3));
	for (int r = 0; r < 3; r++)
		assert_true(s[r] == 5.0f * (float)(r + 1));
	assert_true(acc[5] == 6.0f);
	/* A dtype mismatch is caught before anything runs. */
	t[0].dtype = BLK_DTYPE_F32;
	assert_false(blk_interpret(fx->f, t, 3));
	assert_contains(blk_runtime_last_error(fx->rt), "launch of rowsum");
	int64_t v[2];
	assert_false(blk_func_bind(fx->f, t, 3, v));
	assert_contains(blk_runtime_last_error(fx->rt), "launch of rowsum");
	t[0].dtype = BLK_DTYPE_BF16;
	assert_true(blk_func_bind(fx->f, t, 3, v));
	assert_int_equal(v[0], 3);
	assert_int_equal(v[1], 5);
	assert_false(blk_interpret(fx->f, t, 1));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got 1");
	/* An output written through a reversed view (stride -1): its elements
	 * are distinct, so it is taken, and row r lands at s[2 - r]. */
	float rev[3] = {-1, -1, -1};
	t[1] = blk_tensor_make(&rev[2], BLK_DTYPE_F32, 1, &ss);
	t[1].strides[0] = -1;
	if (!blk_interpret(fx->f, t, 3))
		fail_msg("%s", blk_runtime_last_error(fx->rt));
	for (int r = 0; r < 3; r++)
		assert_true(rev[2 - r] == 5.0f * (float)(r + 1));
	t[1].strides[0] = 0; /* all rows at one address: refused */
	assert_false(blk_interpret(fx->f, t, 3));
	assert_contains(blk_runtime_last_error(fx->rt), "stride 0 in dim 0 makes elements share memory");
}

/* 2^31 - 1 loop steps: minutes in the interpreter, unless interrupted. */
static const char spin_src[] =
	"kernel spin(y: out f32[N] block (N) index (i) -> (0)) grid (1) {\n"
	"    y[...] = fori_loop(0, 2147483647, zeros((N,), f32)) |k, acc| { acc + 1.0 };\n"
	"}\n";

typedef struct Spin {
	BlkFunc *f;
	BlkTensor t;
	bool ok;
} Spin;

static void *spin_run(void *arg)
{
	Spin *s = arg;
	s->ok = blk_interpret(s->f, &s->t, 1);
	return NULL;
}

/* blk_runtime_interrupt from another thread stops a long interpretation
 * (Python's Ctrl-C), which fails with a message; the next run is whole. */
static void test_interrupt(void **state)
{
	Fixture *fx = *state;
	BlkProgram *p = blk_program_load_source(fx->rt, "spin.blk", spin_src, NULL, 0);
	assert_non_null(p);
	float y[4];
	int64_t n = 4;
	Spin s = {blk_program_kernel(p, NULL), blk_tensor_make(y, BLK_DTYPE_F32, 1, &n), true};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, spin_run, &s), 0);
	struct timespec pause = {0, 50 * 1000 * 1000};
	nanosleep(&pause, NULL);
	blk_runtime_interrupt(fx->rt);
	pthread_join(th, NULL);
	assert_false(s.ok);
	assert_contains(blk_runtime_last_error(fx->rt), "interpreting spin: interrupted");
	blk_runtime_interrupt(NULL); /* no runtime: nothing to stop, no crash */
	blk_program_destroy(p);
	int64_t xs[2] = {3, 5};
	uint16_t x[15] = {0};
	float sums[3], acc[6] = {0};
	int64_t ss = 3, as[2] = {3, 2};
	BlkTensor t[3] = {blk_tensor_make(x, BLK_DTYPE_BF16, 2, xs), blk_tensor_make(sums, BLK_DTYPE_F32, 1, &ss),
	                  blk_tensor_make(acc, BLK_DTYPE_F32, 2, as)};
	assert_true(blk_interpret(fx->f, t, 3)); /* the flag does not outlive its run */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_infer),
		cmocka_unit_test(test_interpret),
		cmocka_unit_test(test_interrupt),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
