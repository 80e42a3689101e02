/* test_runtime.c - the runtime without a GPU: the no-driver paths, launch
 * checks before anything reaches a device, and the compile cache's keys.
 *
 * Tests that need the frontend or the GPU backend skip (cmocka) while this
 * libblk is built without them. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "blk.h"
#include "runtime/rt.h"

#ifndef BLK_FAKE_CUDA
#define BLK_FAKE_CUDA "libfakecuda.so"
#endif
#ifndef BLK_EXAMPLES_DIR
#define BLK_EXAMPLES_DIR "examples"
#endif

static void assert_contains(const char *s, const char *part)
{
	if (!strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s);
}

/* Paths compiled in, unless the environment moves them (a build carried to
 * another machine: BLK_EXAMPLES_DIR, BLK_FAKE_CUDA). */
static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);
	return v && *v ? v : fallback;
}

static const char *matmul_path(void)
{
	static char path[1024];
	snprintf(path, sizeof path, "%s/matmul.blk", env_or("BLK_EXAMPLES_DIR", BLK_EXAMPLES_DIR));
	return path;
}

static int count_of(const char *s, const char *part)
{
	int n = 0;
	for (const char *p = strstr(s, part); p; p = strstr(p + 1, part))
		n++;
	return n;
}

/* ---- no driver --------------------------------------------------------- */

static void test_no_driver(void **state)
{
	(void)state;
	setenv("BLK_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	char err[256] = "";
	assert_null(blk_runtime_create(0, err, sizeof err));
	assert_string_equal(err, "no CUDA driver: /nonexistent/libcuda.so.1 not found "
	                         "(is this a machine with an NVIDIA GPU?)");
	assert_int_equal(blk_device_count(err, sizeof err), 0);
	assert_contains(err, "no CUDA driver");
	/* No buffer for the message must not crash either. */
	assert_null(blk_runtime_create(0, NULL, 0));
	unsetenv("BLK_LIBCUDA");
}

/* The default name: this machine has no libcuda.so.1 (a GPU machine does, and
 * then the runtime either opens or reports why). */
static void test_default_driver(void **state)
{
	(void)state;
	char err[256] = "";
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	if (rt) {
		blk_runtime_destroy(rt);
		skip();
	}
	assert_true(strlen(err) > 0);
	if (strstr(err, "no CUDA driver"))
		assert_string_equal(err, "no CUDA driver: libcuda.so.1 not found "
		                         "(is this a machine with an NVIDIA GPU?)");
}

/* A library that is there but is no (recent) CUDA driver. */
static void test_driver_too_old(void **state)
{
	(void)state;
	setenv("BLK_LIBCUDA", "libm.so.6", 1);
	char err[256] = "";
	assert_null(blk_runtime_create(0, err, sizeof err));
	assert_contains(err, "CUDA driver too old: cuGetProcAddress_v2 not found");
	assert_int_equal(blk_device_count(err, sizeof err), -1);
	unsetenv("BLK_LIBCUDA");
}

static void test_destroy_null(void **state)
{
	(void)state;
	blk_runtime_destroy(NULL);
	blk_program_destroy(NULL);
	blk_timer_destroy(NULL);
	blk_mem_free(NULL, NULL);
	blk_stream_destroy(NULL, NULL);
	assert_string_equal(blk_runtime_last_error(NULL), "");
}

/* ---- offline runtime --------------------------------------------------- */

static void test_offline(void **state)
{
	(void)state;
	char err[128] = "";
	assert_null(blk_runtime_create_offline("gfx90a", err, sizeof err));
	assert_contains(err, "unknown arch 'gfx90a'");
	BlkRuntime *rt = blk_runtime_create_offline(NULL, err, sizeof err);
	assert_non_null(rt);
	assert_string_equal(blk_runtime_arch(rt), "sm_90a");
	assert_string_equal(blk_runtime_last_error(rt), "");
	void *p = (void *)1;
	assert_false(blk_mem_alloc(rt, 64, &p));
	assert_null(p);
	assert_contains(blk_runtime_last_error(rt), "blk_mem_alloc: this runtime is offline");
	assert_false(blk_synchronize(rt));
	assert_null(blk_timer_create(rt));
	blk_runtime_destroy(rt);
}

static void test_tensor_make(void **state)
{
	(void)state;
	int64_t shape[3] = {2, 3, 5};
	BlkTensor t = blk_tensor_make((void *)64, BLK_DTYPE_BF16, 3, shape);
	assert_int_equal(t.strides[0], 15);
	assert_int_equal(t.strides[1], 5);
	assert_int_equal(t.strides[2], 1);
	assert_int_equal(blk_tensor_numel(&t), 30);
	assert_int_equal(blk_tensor_elem_size(BLK_DTYPE_BF16), 2);
	assert_int_equal(blk_tensor_elem_size(BLK_DTYPE_BOOL), 1);
	assert_int_equal(blk_tensor_elem_size(99), 0);
	/* a product past int64 saturates (it overflowed: UB, and a wrapped
	 * count could read as "no data"); a negative dim is -1 */
	int64_t big[4] = {INT64_MAX, INT64_MAX, 2, 2};
	t = blk_tensor_make(NULL, BLK_DTYPE_F32, 4, big);
	assert_true(t.strides[0] == INT64_MAX);
	assert_true(blk_tensor_numel(&t) == INT64_MAX);
	big[2] = 0;
	t = blk_tensor_make(NULL, BLK_DTYPE_F32, 4, big);
	assert_int_equal(blk_tensor_numel(&t), 0);
	int64_t neg[2] = {-5, 3};
	t = blk_tensor_make(NULL, BLK_DTYPE_F32, 2, neg);
	assert_int_equal(blk_tensor_numel(&t), -1);
}

/* ---- cache keys -------------------------------------------------------- */

static BlkArrayDesc desc2(BlkDType t, int64_t r, int64_t c)
{
	BlkArrayDesc d = {.dtype = t, .rank = 2, .shape = {r, c}, .strides = {c, 1}};
	return d;
}

static void test_cache_key(void **state)
{
	(void)state;
	BlkArrayDesc a[3] = {desc2(BLK_F32, 256, 64), desc2(BLK_F32, 64, 128), desc2(BLK_F32, 256, 128)};
	char *k1 = blk_cache_key("matmul", "sm_90a", a, 3);
	assert_string_equal(k1, "matmul@sm_90a(f32[256,64:64,1],f32[64,128:128,1],f32[256,128:128,1])");
	char *same = blk_cache_key("matmul", "sm_90a", a, 3);
	assert_string_equal(k1, same);
	assert_true(blk_cache_hash(k1) == blk_cache_hash(same));

	/* Every part of the specialization changes the key. */
	char *arch = blk_cache_key("matmul", "sm_80", a, 3);
	a[1].strides[0] = 256;
	char *stride = blk_cache_key("matmul", "sm_90a", a, 3);
	a[1].strides[0] = 128;
	a[2].dtype = BLK_BF16;
	char *dtype = blk_cache_key("matmul", "sm_90a", a, 3);
	a[2].dtype = BLK_F32;
	a[0].shape[0] = 255;
	char *shape = blk_cache_key("matmul", "sm_90a", a, 3);
	char *kernel = blk_cache_key("matmul_acc", "sm_90a", a, 3);
	a[1].align = 8; /* data not 16-byte aligned: a kernel of its own */
	char *align = blk_cache_key("matmul_acc", "sm_90a", a, 3);
	assert_non_null(strstr(align, "f32[64,128:128,1@8]"));
	const char *all[] = {k1, arch, stride, dtype, shape, kernel, align};
	for (int i = 0; i < 7; i++)
		for (int j = i + 1; j < 7; j++)
			assert_string_not_equal(all[i], all[j]);
	free(same);
	for (int i = 0; i < 7; i++)
		free((char *)all[i]);
}

static void test_cache_find(void **state)
{
	(void)state;
	BlkCache c = {0};
	BlkArrayDesc a = {.dtype = BLK_F32, .rank = 1, .shape = {1000}, .strides = {1}};
	BlkLaunch launch = {.threads = 128, .isa = 80};
	BlkCompiled comp = {.entry = "add", .ptx = "// ptx", .launch = &launch};
	assert_null(blk_cache_find(&c, "add@sm_90a(f32[1000:1])"));
	BlkCacheEntry *e = blk_cache_insert(&c, blk_cache_key("add", "sm_90a", &a, 1),
	                                    NULL, &comp);
	assert_non_null(e);
	a.shape[0] = 1001;
	BlkCacheEntry *e2 = blk_cache_insert(&c, blk_cache_key("add", "sm_90a", &a, 1),
	                                     NULL, &comp);
	assert_ptr_equal(blk_cache_find(&c, "add@sm_90a(f32[1000:1])"), e);
	assert_ptr_equal(blk_cache_find(&c, "add@sm_90a(f32[1001:1])"), e2);
	assert_null(blk_cache_find(&c, "add@sm_80(f32[1000:1])"));
	assert_int_equal(c.compiles, 0); /* counted where a kernel is compiled, not here */
	blk_cache_clear(&c, NULL);
	assert_null(c.first);
}

/* ---- launch checks (need the frontend) --------------------------------- */

typedef struct Fixture {
	BlkRuntime *rt;
	BlkProgram *prog;
	BlkFunc *f;
	char load_error[512];
} Fixture;

static int setup_matmul(void **state)
{
	static Fixture fx;
	fx.rt = blk_runtime_create_offline("sm_90a", NULL, 0);
	fx.prog = fx.rt ? blk_program_load(fx.rt, matmul_path(), NULL, 0) : NULL;
	fx.f = fx.prog ? blk_program_kernel(fx.prog, "matmul") : NULL;
	snprintf(fx.load_error, sizeof fx.load_error, "%s", blk_runtime_last_error(fx.rt));
	*state = &fx;
	return fx.rt ? 0 : -1;
}

static int teardown_matmul(void **state)
{
	Fixture *fx = *state;
	blk_program_destroy(fx->prog);
	blk_runtime_destroy(fx->rt);
	return 0;
}

static Fixture *need_program(void **state)
{
	Fixture *fx = *state;
	if (!fx->f) {
		/* Until the frontend lands in libblk there is nothing to launch. */
		if (strstr(fx->load_error, "built without"))
			skip();
		fail_msg("matmul.blk did not load: %s", fx->load_error);
	}
	return fx;
}

/* A, B, C for M=64, N=32, K=16 at fake device addresses. */
static void matmul_tensors(BlkTensor t[3], int dtype)
{
	int64_t sa[2] = {64, 16}, sb[2] = {16, 32}, sc[2] = {64, 32};
	t[0] = blk_tensor_make((void *)0x1000, dtype, 2, sa);
	t[1] = blk_tensor_make((void *)0x2000, dtype, 2, sb);
	t[2] = blk_tensor_make((void *)0x3000, dtype, 2, sc);
}

static void expect_refused(Fixture *fx, const BlkTensor *t, int n, const char *msg)
{
	assert_false(blk_launch(fx->f, t, n, NULL));
	assert_contains(blk_runtime_last_error(fx->rt), msg);
	assert_false(blk_func_check(fx->f, t, n));
	assert_contains(blk_runtime_last_error(fx->rt), msg);
	unsigned compiles = 9;
	blk_program_cache_stats(fx->prog, &compiles, NULL);
	assert_int_equal(compiles, 0);
}

static void test_launch_count(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	assert_int_equal(blk_func_num_tensors(fx->f), 3);
	expect_refused(fx, t, 2, "launch of matmul: expected 3 arrays, got 2");
	expect_refused(fx, NULL, 3, "launch of matmul: tensors is NULL");
	/* a count nothing could hold is the same error, before any memory is
	 * sized by it (it was an out-of-memory, or an overflow of count x ranks) */
	expect_refused(fx, t, INT_MAX, "launch of matmul: expected 3 arrays, got 2147483647");
	int64_t values[8];
	assert_false(blk_func_bind(fx->f, t, INT_MAX, values));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got 2147483647");
	assert_false(blk_interpret(fx->f, t, INT_MAX));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got 2147483647");
	const BlkTensor *ranks[8] = { t, t, t, t, t, t, t, t };
	assert_false(blk_interpret_world(fx->f, 8, ranks, 1 << 28));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got 268435456");
}

static void test_launch_dtype(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	t[1].dtype = BLK_DTYPE_BF16;
	expect_refused(fx, t, 3, "b has dtype bf16 but the kernel expects f32");
	t[1].dtype = 17;
	expect_refused(fx, t, 3, "tensor 1 (b): dtype 17 is not a BLK_DTYPE_*");
}

static void test_launch_rank(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	t[2].rank = 1;
	expect_refused(fx, t, 3, "c has rank 1 but the kernel expects rank 2");
	t[2].rank = 9;
	expect_refused(fx, t, 3, "tensor 2 (c): rank 9 is outside 0..4");
}

static void test_launch_shape(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	t[1].shape[0] = 17; /* K of b disagrees with K of a */
	expect_refused(fx, t, 3, "launch of matmul: b has shape [17, 32] but its dim 0 is");
	matmul_tensors(t, BLK_DTYPE_F32);
	t[0].data = NULL;
	expect_refused(fx, t, 3, "tensor 0 (a): data is NULL");
}

/* What the compiled code assumes of memory: data aligned to its elements
 * (less than 16 bytes is compiled in, test_compile_cache), no
 * sharing between parameters when one is written, no element of a written
 * tensor at another's address.  Read-only tensors may alias and broadcast. */
static void test_launch_memory(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	t[1].data = (void *)0x2002;
	expect_refused(fx, t, 3, "launch of matmul: tensor 1 (b): data 0x2002 is not aligned to its "
	                         "4-byte elements");
	matmul_tensors(t, BLK_DTYPE_F32);
	t[2].data = (void *)0x1800; /* c over the second half of a */
	expect_refused(fx, t, 3, "launch of matmul: tensors 0 (a) and 2 (c) share memory, and c is "
	                         "written: the compiled code assumes they do not");
	matmul_tensors(t, BLK_DTYPE_F32);
	t[2].strides[0] = 0; /* every row of c at one address */
	expect_refused(fx, t, 3, "launch of matmul: tensor 2 (c) is written but its stride 0 in dim 0 "
	                         "makes elements share memory");
	matmul_tensors(t, BLK_DTYPE_F32);
	t[2].strides[0] = 16; /* rows of 32 overlapping */
	expect_refused(fx, t, 3, "tensor 2 (c) is written but its stride 16 in dim 0");
	matmul_tensors(t, BLK_DTYPE_F32);
	t[2].strides[1] = (int64_t)1 << 60;
	expect_refused(fx, t, 3, "tensor 2 (c): stride 1152921504606846976 in dim 1 is out of range");
	/* reads may share and broadcast: a and b over one buffer, b's rows stride 0 */
	matmul_tensors(t, BLK_DTYPE_F32);
	t[1].data = t[0].data;
	t[1].strides[0] = 0;
	assert_true(blk_func_check(fx->f, t, 3));
}

/* A NULL handle or pointer is an error return, never a crash; with no
 * runtime to hold it, the message is blk_runtime_last_error(NULL). */
static void test_null_handles(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	assert_false(blk_launch(NULL, t, 3, NULL));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_launch: the kernel is NULL");
	assert_false(blk_func_check(NULL, t, 3));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_func_check: the kernel is NULL");
	assert_false(blk_func_compile(NULL, t, 3, NULL));
	assert_null(blk_program_kernel(NULL, "matmul"));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_program_kernel: the program is NULL");
	assert_null(blk_program_load(NULL, matmul_path(), NULL, 0));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_program_load: the runtime is NULL");
	assert_null(blk_program_load_source(fx->rt, "x", NULL, NULL, 0));
	assert_contains(blk_runtime_last_error(fx->rt), "source is NULL");
	void *p = NULL;
	assert_false(blk_mem_alloc(NULL, 64, &p));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_mem_alloc: the runtime is NULL");
	assert_false(blk_mem_alloc(fx->rt, 64, NULL));
	assert_false(blk_memcpy_htod(fx->rt, NULL, &p, 8));
	assert_string_equal(blk_runtime_last_error(fx->rt), "blk_memcpy_htod: dst is NULL");
	assert_false(blk_synchronize(NULL));
	assert_null(blk_timer_create(NULL));
	assert_false(blk_timer_start(NULL, NULL));
	float ms;
	assert_false(blk_timer_elapsed_ms(NULL, &ms));
	assert_null(blk_tuner_create(NULL, matmul_path(), NULL, NULL, NULL, 0));
	assert_false(blk_tuner_launch(NULL, t, 3, NULL));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_tuner_launch: the tuner is NULL");
	assert_false(blk_tuner_add_config_text(NULL, "BM=64"));
	assert_int_equal(blk_tuner_compile(NULL, t, 3), -1);
	assert_false(blk_tuner_best(NULL, t, 3, NULL));
	assert_int_equal(blk_tuner_num_configs(NULL), 0);
	assert_null(blk_tuner_config(NULL, 0));
	blk_tuner_set_timing(NULL, 1, 1);
	assert_string_equal(blk_tuner_log(NULL), "");
	assert_string_equal(blk_func_name(NULL), "");
	assert_int_equal(blk_func_num_tensors(NULL), -1);
	assert_int_equal(blk_tensor_numel(NULL), 0);
	assert_string_equal(blk_runtime_arch(NULL), "");
	assert_string_equal(blk_runtime_device_name(NULL), "");
	unsigned c = 7;
	blk_program_cache_stats(NULL, &c, NULL);
	assert_int_equal(c, 0);
	assert_false(blk_launch(fx->f, t, -1, NULL));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got -1");
}

static void test_kernel_lookup(void **state)
{
	Fixture *fx = need_program(state);
	assert_ptr_equal(blk_program_kernel(fx->prog, NULL), fx->f);
	assert_string_equal(blk_func_name(fx->f), "matmul");
	assert_null(blk_program_kernel(fx->prog, "matmull"));
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "no kernel named 'matmull' in the program (it has 'matmul')");
	/* a source with no kernel at all says so (it said "several kernels ()") */
	BlkProgram *none = blk_program_load_source(fx->rt, "none.blk", "// nothing\n", NULL, 0);
	if (none) {
		assert_null(blk_program_kernel(none, NULL));
		assert_contains(blk_runtime_last_error(fx->rt), "the program has no kernel");
		blk_program_destroy(none);
	} else {
		assert_contains(blk_runtime_last_error(fx->rt), "kernel");
	}
	/* a search for no configurations names the argument, not an address */
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	const char *configs[1];
	assert_int_equal(blk_func_search(fx->f, t, 3, configs, 0), -1);
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "blk_func_search: max is 0; it is the number of configurations wanted, 1 or more");
}

/* Offline, a good launch compiles (needs the GPU backend) and then stops
 * before the device; the second compile of the same layout is a hit. */
static void test_compile_cache(void **state)
{
	Fixture *fx = need_program(state);
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	BlkCompiledInfo info;
	if (!blk_func_compile(fx->f, t, 3, &info)) {
		if (strstr(blk_runtime_last_error(fx->rt), "built without"))
			skip();
		fail_msg("%s", blk_runtime_last_error(fx->rt));
	}
	assert_false(info.cached);
	assert_non_null(strstr(info.ptx, info.entry));
	int v4 = count_of(info.ptx, "cp.async.cg.shared.global"); /* B's 16-byte copies */
	assert_true(v4 > 0);
	t[0].data = (void *)0x9000; /* other buffers, same layout */
	assert_true(blk_func_compile(fx->f, t, 3, &info));
	assert_true(info.cached);
	assert_false(blk_launch(fx->f, t, 3, NULL));
	assert_contains(blk_runtime_last_error(fx->rt), "blk_launch: this runtime is offline");
	unsigned compiles, hits;
	blk_program_cache_stats(fx->prog, &compiles, &hits);
	assert_int_equal(compiles, 1);
	assert_int_equal(hits, 2);
	/* a slice starting 4 bytes past 16: its own kernel, no 16-byte copies
	 * of that array (a torch view such as big[3:, 1:]) */
	t[1].data = (void *)0x9004;
	assert_true(blk_func_compile(fx->f, t, 3, &info));
	assert_false(info.cached);
	assert_true(count_of(info.ptx, "cp.async.cg.shared.global") < v4);
	blk_program_cache_stats(fx->prog, &compiles, &hits);
	assert_int_equal(compiles, 2);
}

/* An arch the backend does not know is refused when the runtime is made
 * (not at the first compile), naming the arches there are. */
static void test_unknown_arch(void **state)
{
	(void)state;
	char err[256] = "";
	assert_null(blk_runtime_create_offline("sm_70", err, sizeof err));
	assert_string_equal(err, "unknown arch 'sm_70': blk compiles for sm_80, sm_86, sm_87, sm_89, "
	                         "sm_90, sm_90a");
	assert_null(blk_runtime_create_offline("sm_12345", err, sizeof err));
	assert_contains(err, "unknown arch 'sm_12345'");
	assert_null(blk_runtime_create_offline("sm_90ab", err, sizeof err));
	BlkRuntime *rt = blk_runtime_create_offline("sm_89", err, sizeof err);
	assert_non_null(rt);
	/* 180000 bytes of scratch fit a CTA on sm_90, not on sm_89 (99 KB) or
	 * sm_80 (163 KB): refused when compiled for those, with the arch named */
	static const char big[] = "kernel big(x: in f32[N], y: out f32[N], buf: scratch f32[45000]) {\n"
	                          "    buf[ds(0, 16)] = load(x.at[ds(0, 16)], other = 0.0);\n"
	                          "    y[ds(0, 16)] = buf[ds(0, 16)];\n}\n";
	float x[16] = { 0 }, y[16];
	BlkTensor ts[2] = { blk_tensor_make(x, BLK_DTYPE_F32, 1, (int64_t[]){ 16 }),
	                    blk_tensor_make(y, BLK_DTYPE_F32, 1, (int64_t[]){ 16 }) };
	const char *archs[] = { "sm_89", "sm_80", "sm_90a" };
	const char *want[] = { "the most a CTA can have is 101376 on sm_89",
	                       "the most a CTA can have is 166912 on sm_80", NULL };
	for (int i = 0; i < 3; i++) {
		BlkRuntime *r = blk_runtime_create_offline(archs[i], err, sizeof err);
		BlkProgram *p = blk_program_load_source(r, "big.blk", big, NULL, 0);
		assert_non_null(p);
		bool ok = blk_func_compile(blk_program_kernel(p, NULL), ts, 2, NULL);
		assert_int_equal(ok, want[i] == NULL);
		if (want[i])
			assert_contains(blk_runtime_last_error(r), want[i]);
		blk_program_destroy(p);
		blk_runtime_destroy(r);
	}
	blk_runtime_destroy(rt);
}

static void test_bad_define(void **state)
{
	Fixture *fx = *state;
	const char *defs[] = {"BM"};
	assert_null(blk_program_load(fx->rt, matmul_path(), defs, 1));
	assert_string_equal(blk_runtime_last_error(fx->rt), "define 'BM' is not NAME=VALUE");
	const char *twice[] = {"T=f16", "T=f32"};
	assert_null(blk_program_load(fx->rt, matmul_path(), twice, 2));
	assert_contains(blk_runtime_last_error(fx->rt), "-D T is given twice (f16 and f32)");
	assert_null(blk_program_load(fx->rt, matmul_path(), defs, -1));
	assert_string_equal(blk_runtime_last_error(fx->rt), "blk_program_load: -1 defines (a count: 0 or more)");
	assert_null(blk_program_load(fx->rt, matmul_path(), NULL, 2));
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "blk_program_load: 2 defines but the array is NULL (pass NULL with 0 for none)");
	assert_null(blk_program_load(fx->rt, "/nonexistent.blk", NULL, 0));
	assert_contains(blk_runtime_last_error(fx->rt), "/nonexistent.blk");
}

/* ---- tuner (offline: everything up to the timing) ---------------------- */

static BlkTuner *matmul_tuner(BlkRuntime *rt)
{
	const char *base[] = {"T=f32"};
	return blk_tuner_create(rt, matmul_path(), NULL, "matmul", base, 1);
}

static void test_tuner_create(void **state)
{
	Fixture *fx = need_program(state);
	BlkRuntime *rt = fx->rt;
	blk_tuner_destroy(NULL);
	assert_null(blk_tuner_create(rt, NULL, NULL, NULL, NULL, 0));
	assert_string_equal(blk_runtime_last_error(rt),
	                    "blk_tuner_create: give a path or a source, not neither");
	assert_null(blk_tuner_create(rt, "x.blk", "kernel", NULL, NULL, 0));
	assert_contains(blk_runtime_last_error(rt), "not both");
	assert_null(blk_tuner_create(rt, matmul_path(), NULL, "matmull", NULL, 0));
	assert_string_equal(blk_runtime_last_error(rt),
	                    "no kernel named 'matmull' in the program (it has 'matmul')");
	const char *bad[] = {"BM"};
	assert_null(blk_tuner_create(rt, matmul_path(), NULL, NULL, bad, 1));
	assert_string_equal(blk_runtime_last_error(rt), "define 'BM' is not NAME=VALUE");
	assert_null(blk_tuner_create(rt, matmul_path(), NULL, NULL, NULL, 1));
	assert_string_equal(blk_runtime_last_error(rt),
	                    "blk_tuner_create: 1 base defines but the array is NULL (pass NULL with 0 for none)");
	assert_null(blk_tuner_create(rt, NULL, "kernel k(", NULL, NULL, 0));
	assert_contains(blk_runtime_last_error(rt), "<tuner source>:1:");
	/* NULL kernel: the only one, named for messages. */
	BlkTuner *t = blk_tuner_create(rt, matmul_path(), NULL, NULL, NULL, 0);
	assert_non_null(t);
	assert_int_equal(blk_tuner_num_configs(t), 0);
	assert_string_equal(blk_tuner_log(t), "");
	blk_tuner_destroy(t);
}

static void expect_bad_config(BlkTuner *t, BlkRuntime *rt, const char *const *defs, int n,
                              const char *msg)
{
	int before = blk_tuner_num_configs(t);
	assert_false(blk_tuner_add_config(t, defs, n));
	assert_string_equal(blk_runtime_last_error(rt), msg);
	assert_int_equal(blk_tuner_num_configs(t), before);
}

static void test_tuner_configs(void **state)
{
	Fixture *fx = need_program(state);
	BlkTuner *t = matmul_tuner(fx->rt);
	assert_non_null(t);
	const char *good[] = {"BM=64", "BN=128", "BK=16", "num_warps=4"};
	assert_true(blk_tuner_add_config(t, good, 4));
	assert_true(blk_tuner_add_config_text(t, " BM=128, BN=64 num_warps=8,"));
	assert_true(blk_tuner_add_config(t, NULL, 0));
	assert_int_equal(blk_tuner_num_configs(t), 3);
	assert_string_equal(blk_tuner_config(t, 0), "BM=64,BN=128,BK=16,num_warps=4");
	assert_string_equal(blk_tuner_config(t, 1), "BM=128,BN=64,num_warps=8");
	assert_string_equal(blk_tuner_config(t, 2), "");
	assert_null(blk_tuner_config(t, 3));
	assert_null(blk_tuner_config(t, -1));

	const char *no_eq[] = {"BM=64", "BN"}, *no_name[] = {"=64"}, *no_value[] = {"BM="};
	const char *digit[] = {"1BM=2"}, *space[] = {"B M=2"}, *null[] = {NULL};
	const char *twice[] = {"BM=64", "BN=64", "BM=128"};
	expect_bad_config(t, fx->rt, no_eq, 2, "tuner config: 'BN' is not NAME=VALUE");
	expect_bad_config(t, fx->rt, no_name, 1, "tuner config: '=64' is not NAME=VALUE");
	expect_bad_config(t, fx->rt, no_value, 1, "tuner config: 'BM=' is not NAME=VALUE");
	expect_bad_config(t, fx->rt, digit, 1, "tuner config: '1BM=2' is not NAME=VALUE");
	expect_bad_config(t, fx->rt, space, 1, "tuner config: 'B M=2' is not NAME=VALUE");
	expect_bad_config(t, fx->rt, null, 1, "tuner config: '(null)' is not NAME=VALUE");
	assert_false(blk_tuner_add_config_text(t, "B==4"));
	assert_contains(blk_runtime_last_error(fx->rt), "tuner config: 'B==4' is not NAME=VALUE");
	assert_false(blk_tuner_add_config_text(t, "BM=64;BN=32"));
	expect_bad_config(t, fx->rt, twice, 3, "tuner config: BM is given twice ('BM=64', 'BM=128')");
	assert_false(blk_tuner_add_config(t, NULL, 2));
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "blk_tuner_add_config: 2 defines but the array is NULL (pass NULL with 0 for none)");
	assert_false(blk_tuner_add_config_text(t, "BM=64,BM=32"));
	assert_contains(blk_runtime_last_error(fx->rt), "BM is given twice");
	assert_false(blk_tuner_add_config_text(t, NULL));
	assert_int_equal(blk_tuner_num_configs(t), 3);
	/* Many candidates: the array grows. */
	for (int i = 0; i < 20; i++)
		assert_true(blk_tuner_add_config_text(t, "BK=16"));
	assert_string_equal(blk_tuner_config(t, 22), "BK=16");
	blk_tuner_destroy(t);
}

/* The signature is the compile cache's key, pointers left out. */
static void test_tuner_key(void **state)
{
	(void)state;
	BlkTensor t[3];
	matmul_tensors(t, BLK_DTYPE_F32);
	char *k = blk_tuner_key("matmul", "sm_90a", t, 3);
	assert_string_equal(k, "matmul@sm_90a(f32[64,16:16,1],f32[16,32:32,1],f32[64,32:32,1])");
	t[0].data = (void *)0x7000;
	char *moved = blk_tuner_key("matmul", "sm_90a", t, 3);
	assert_string_equal(k, moved);
	t[1].strides[0] = 64;
	char *strided = blk_tuner_key("matmul", "sm_90a", t, 3);
	assert_string_not_equal(k, strided);
	matmul_tensors(t, BLK_DTYPE_BF16);
	char *bf16 = blk_tuner_key("matmul", "sm_90a", t, 3);
	assert_string_not_equal(k, bf16);
	t[2].rank = 5;
	assert_null(blk_tuner_key("matmul", "sm_90a", t, 3));
	t[2].rank = 2;
	t[2].dtype = -1;
	assert_null(blk_tuner_key("matmul", "sm_90a", t, 3));
	assert_null(blk_tuner_key("matmul", "sm_90a", NULL, 3));
	assert_null(blk_tuner_key("matmul", "sm_90a", t, -1));
	char *none = blk_tuner_key("k", "sm_80", NULL, 0);
	assert_string_equal(none, "k@sm_80()");
	free(k), free(moved), free(strided), free(bf16), free(none);
}

/* Wrong tensors are refused before any compile; good ones offline stop
 * before the device, after the checks and before compiling. */
static void test_tuner_refuses(void **state)
{
	Fixture *fx = need_program(state);
	BlkTuner *t = matmul_tuner(fx->rt);
	assert_true(blk_tuner_add_config_text(t, "BM=64,BN=64"));
	assert_true(blk_tuner_add_config_text(t, "BM=32,BN=32,num_warps=2"));
	BlkTensor ts[3];
	matmul_tensors(ts, BLK_DTYPE_F32);
	ts[1].dtype = BLK_DTYPE_BF16;
	assert_false(blk_tuner_launch(t, ts, 3, NULL));
	assert_contains(blk_runtime_last_error(fx->rt),
	                "tuner: no candidate of 'matmul' accepts these tensors: ");
	assert_contains(blk_runtime_last_error(fx->rt),
	                "error: launch of matmul: b has dtype bf16 but the kernel expects f32");
	assert_int_equal(blk_tuner_compile(t, ts, 3), -1);
	assert_false(blk_tuner_launch(t, ts, 2, NULL));
	assert_contains(blk_runtime_last_error(fx->rt), "expected 3 arrays, got 2");
	assert_false(blk_tuner_launch(t, NULL, 3, NULL));
	assert_contains(blk_runtime_last_error(fx->rt), "tensors is NULL");
	matmul_tensors(ts, BLK_DTYPE_F32);
	ts[2].rank = 7;
	assert_false(blk_tuner_launch(t, ts, 3, NULL));
	assert_contains(blk_runtime_last_error(fx->rt), "tensor 2 (c): rank 7 is outside 0..4");
	assert_null(strstr(blk_tuner_log(t), "does not compile"));

	matmul_tensors(ts, BLK_DTYPE_F32);
	assert_false(blk_tuner_launch(t, ts, 3, NULL));
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "blk_tuner_launch: this runtime is offline (no device); create it with "
	                    "blk_runtime_create to use a GPU");
	assert_false(blk_tuner_best(t, ts, 3, NULL));
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "tuner: matmul@sm_90a(f32[64,16:16,1],f32[16,32:32,1],f32[64,32:32,1]) "
	                    "has not been tuned");
	blk_tuner_destroy(t);
}

/* Offline compile: candidates that do not load or do not compile are
 * skipped with a note; base defines are overridden, not repeated. */
static void test_tuner_compile(void **state)
{
	Fixture *fx = need_program(state);
	const char *base[] = {"T=f32", "BM=32", "BK=16"};
	BlkTuner *t = blk_tuner_create(fx->rt, matmul_path(), NULL, "matmul", base, 3);
	assert_non_null(t);
	assert_true(blk_tuner_add_config_text(t, "BM=64,BN=64"));
	assert_true(blk_tuner_add_config_text(t, "NOPE=1"));
	assert_true(blk_tuner_add_config_text(t, "BM=512,BN=512,BK=32"));
	assert_true(blk_tuner_add_config_text(t, "num_warps=3"));
	assert_true(blk_tuner_add_config_text(t, ""));
	BlkTensor ts[3];
	matmul_tensors(ts, BLK_DTYPE_F32);
	int n = blk_tuner_compile(t, ts, 3);
	if (n < 0 && strstr(blk_runtime_last_error(fx->rt), "built without")) {
		blk_tuner_destroy(t);
		skip();
	}
	assert_int_equal(n, 2);
	const char *log = blk_tuner_log(t);
	assert_contains(log, "matmul@sm_90a(f32[64,16:16,1],f32[16,32:32,1],f32[64,32:32,1]): "
	                     "5 candidates\n");
	assert_contains(log, "  [1] NOPE=1: skipped, does not load: blk: error: -D NOPE: no kernel has a "
	                     "compile-time parameter named `NOPE`");
	assert_contains(log, "  [2] BM=512,BN=512,BK=32: skipped, does not compile: compiling "
	                     "'matmul' for sm_90a: ");
	assert_contains(log, "error: kernel matmul needs 263168 bytes of shared memory at this "
	                     "launch; the most a CTA can have is 232448\n");
	assert_contains(log, "error: num_warps must be 1, 2, 4, 8 or 16\n  [");
	assert_null(strstr(log, "^"));
	assert_null(strstr(log, "[0]"));
	assert_null(strstr(log, "[4]"));
	/* A second signature: the notes of candidates that never load are not
	 * repeated. */
	ts[0].shape[0] = ts[2].shape[0] = 128;
	assert_int_equal(blk_tuner_compile(t, ts, 3), 2);
	log = blk_tuner_log(t);
	assert_int_equal(count_of(log, "does not load"), 2);
	assert_int_equal(count_of(log, "does not compile"), 2);
	blk_tuner_destroy(t);
}

/* No candidate added: the base defines alone are the one. */
static void test_tuner_default_candidate(void **state)
{
	Fixture *fx = need_program(state);
	BlkTuner *t = matmul_tuner(fx->rt);
	BlkTensor ts[3];
	matmul_tensors(ts, BLK_DTYPE_F32);
	int n = blk_tuner_compile(t, ts, 3);
	if (n < 0 && strstr(blk_runtime_last_error(fx->rt), "built without")) {
		blk_tuner_destroy(t);
		skip();
	}
	/* No candidate given: the cost model's best of the search space for
	 * these tensors, BM, BN, BK, num_warps and num_stages all open. */
	assert_true(n >= 2 && n <= 12);
	assert_int_equal(blk_tuner_num_configs(t), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(strncmp(blk_tuner_config(t, i), "BM=", 3), 0);
	assert_contains(blk_tuner_log(t), "(the cost model's best of the search space)");
	/* A second compile of the same tensors adds nothing new. */
	assert_int_equal(blk_tuner_compile(t, ts, 3), n);
	assert_int_equal(blk_tuner_num_configs(t), n);
	/* A kernel with nothing open to search keeps its defines as the one. */
	const char *copy = "kernel copy(x: in f32[N], y: out f32[N]) {\n    y[...] = x[...];\n}\n";
	BlkTuner *one = blk_tuner_create(fx->rt, NULL, copy, NULL, NULL, 0);
	int64_t sx[1] = {100};
	BlkTensor xs[2] = {blk_tensor_make((void *)0x1000, BLK_DTYPE_F32, 1, sx),
	                   blk_tensor_make((void *)0x2000, BLK_DTYPE_F32, 1, sx)};
	assert_int_equal(blk_tuner_compile(one, xs, 2), 1);
	assert_string_equal(blk_tuner_config(one, 0), "");
	blk_tuner_destroy(one);
	/* Every candidate failing is an error naming the log. */
	BlkTuner *bad = matmul_tuner(fx->rt);
	assert_true(blk_tuner_add_config_text(bad, "BM=512,BN=512,BK=32"));
	assert_int_equal(blk_tuner_compile(bad, ts, 3), -1);
	assert_string_equal(blk_runtime_last_error(fx->rt),
	                    "tuner: no candidate of 'matmul' compiles for these tensors "
	                    "(blk_tuner_log says why)");
	blk_tuner_destroy(bad);
	blk_tuner_destroy(t);
}

/* ---- tuner on a GPU (skips without one) -------------------------------- */

typedef struct GpuMatmul {
	int64_t m, n, k;
	float *a, *b, *c;
	void *da, *db, *dc;
	BlkTensor t[3];
} GpuMatmul;

/* Small integers: every sum is exact in f32, so any config gives C exactly. */
static bool gpu_matmul_make(BlkRuntime *rt, GpuMatmul *g, int64_t m, int64_t n, int64_t k)
{
	memset(g, 0, sizeof *g);
	g->m = m, g->n = n, g->k = k;
	g->a = malloc((size_t)(m * k) * 4), g->b = malloc((size_t)(k * n) * 4);
	g->c = malloc((size_t)(m * n) * 4);
	for (int64_t i = 0; i < m * k; i++)
		g->a[i] = (float)(i * 7 % 5) - 2;
	for (int64_t i = 0; i < k * n; i++)
		g->b[i] = (float)(i * 3 % 5) - 2;
	int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
	bool ok = blk_mem_alloc(rt, (size_t)(m * k) * 4, &g->da) &&
	          blk_mem_alloc(rt, (size_t)(k * n) * 4, &g->db) &&
	          blk_mem_alloc(rt, (size_t)(m * n) * 4, &g->dc) &&
	          blk_memcpy_htod(rt, g->da, g->a, (size_t)(m * k) * 4) &&
	          blk_memcpy_htod(rt, g->db, g->b, (size_t)(k * n) * 4);
	g->t[0] = blk_tensor_make(g->da, BLK_DTYPE_F32, 2, sa);
	g->t[1] = blk_tensor_make(g->db, BLK_DTYPE_F32, 2, sb);
	g->t[2] = blk_tensor_make(g->dc, BLK_DTYPE_F32, 2, sc);
	return ok;
}

/* C poisoned (NaN), one launch through the tuner, C compared exactly. */
static void gpu_matmul_run(BlkRuntime *rt, BlkTuner *t, GpuMatmul *g)
{
	size_t bytes = (size_t)(g->m * g->n) * 4;
	assert_true(blk_memset(rt, g->dc, 0xff, bytes));
	if (!blk_tuner_launch(t, g->t, 3, NULL) || !blk_synchronize(rt))
		fail_msg("%s\nlog:\n%s", blk_runtime_last_error(rt), blk_tuner_log(t));
	assert_true(blk_memcpy_dtoh(rt, g->c, g->dc, bytes));
	for (int64_t i = 0; i < g->m; i++)
		for (int64_t j = 0; j < g->n; j++) {
			float ref = 0;
			for (int64_t p = 0; p < g->k; p++)
				ref += g->a[i * g->k + p] * g->b[p * g->n + j];
			if (g->c[i * g->n + j] != ref)
				fail_msg("C[%lld,%lld] = %g, expected %g", (long long)i, (long long)j,
				         (double)g->c[i * g->n + j], (double)ref);
		}
}

static void gpu_matmul_free(BlkRuntime *rt, GpuMatmul *g)
{
	blk_mem_free(rt, g->da), blk_mem_free(rt, g->db), blk_mem_free(rt, g->dc);
	free(g->a), free(g->b), free(g->c);
}

static void test_tuner_gpu(void **state)
{
	need_program(state);
	BlkRuntime *rt = blk_runtime_create(0, NULL, 0);
	if (!rt)
		skip();
	BlkTuner *t = matmul_tuner(rt);
	assert_non_null(t);
	assert_true(blk_tuner_add_config_text(t, "BM=32,BN=32,BK=16,num_warps=2"));
	assert_true(blk_tuner_add_config_text(t, "BM=512,BN=512,BK=32"));
	assert_true(blk_tuner_add_config_text(t, "BM=64,BN=64,BK=16,num_warps=4"));
	blk_tuner_set_timing(t, 1, 3);
	GpuMatmul g;
	assert_true(gpu_matmul_make(rt, &g, 200, 136, 72)); /* edges on every axis */
	gpu_matmul_run(rt, t, &g); /* tunes: C holds the winner's result */
	BlkTunerResult r;
	assert_true(blk_tuner_best(t, g.t, 3, &r));
	assert_true(r.config == 0 || r.config == 2);
	assert_int_equal(r.candidates, 3);
	assert_int_equal(r.timed, 2);
	assert_true(r.ms > 0);
	size_t loglen = strlen(blk_tuner_log(t));
	assert_contains(blk_tuner_log(t), "  [1] BM=512,BN=512,BK=32: skipped, does not compile");
	assert_contains(blk_tuner_log(t), "(median of 3)");
	assert_contains(blk_tuner_log(t), "  best: [");

	gpu_matmul_run(rt, t, &g); /* the winner alone: nothing new noted */
	assert_int_equal(strlen(blk_tuner_log(t)), loglen);

	GpuMatmul g2; /* a new signature tunes again */
	assert_true(gpu_matmul_make(rt, &g2, 64, 64, 64));
	gpu_matmul_run(rt, t, &g2);
	assert_true(strlen(blk_tuner_log(t)) > loglen);
	assert_contains(blk_tuner_log(t), "f32[64,64:64,1]): 3 candidates\n");
	assert_true(blk_tuner_best(t, g2.t, 3, NULL));
	gpu_matmul_run(rt, t, &g); /* back to the first: still tuned */
	gpu_matmul_free(rt, &g2);
	gpu_matmul_free(rt, &g);
	blk_tuner_destroy(t);
	blk_runtime_destroy(rt);
}

/* ---- launches under the fake driver (tests/runtime/fake_cuda.c) -------- */

/* A runtime on the fake driver (sm_90a). */
static BlkRuntime *fake_runtime(void)
{
	setenv("BLK_LIBCUDA", env_or("BLK_FAKE_CUDA", BLK_FAKE_CUDA), 1);
	setenv("BLK_ARCH", "sm_90a", 1);
	char err[256] = "";
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	unsetenv("BLK_LIBCUDA");
	unsetenv("BLK_ARCH");
	if (!rt)
		fail_msg("the fake driver did not load: %s", err);
	return rt;
}


/* A launch on tensors of the last launch's layout reuses its kernel
 * without binding or keying again (a hit); new pointers are still checked;
 * a slice's alignment makes a kernel of its own; the first layout is then
 * found in the cache again. */
static void test_launch_fast_path(void **state)
{
	need_program(state);
	setenv("BLK_CACHE", "0", 1); /* compiles counted here, not read from disk */
	BlkRuntime *rt = fake_runtime();
	BlkProgram *p = blk_program_load(rt, matmul_path(), NULL, 0);
	assert_non_null(p);
	BlkFunc *f = blk_program_kernel(p, NULL);
	GpuMatmul g;
	assert_true(gpu_matmul_make(rt, &g, 64, 32, 16));
	unsigned compiles, hits;
	for (int i = 0; i < 3; i++)
		assert_true(blk_launch(f, g.t, 3, NULL));
	blk_program_cache_stats(p, &compiles, &hits);
	assert_int_equal(compiles, 1);
	assert_int_equal(hits, 2);
	BlkTensor bad[3] = {g.t[0], g.t[1], g.t[2]}; /* c over a: refused at the fast path too */
	bad[2].data = g.da;
	assert_false(blk_launch(f, bad, 3, NULL));
	assert_contains(blk_runtime_last_error(rt), "share memory");
	g.t[1].shape[0] = 15, g.t[0].shape[1] = 15; /* K = 15, 4-byte aligned b */
	g.t[1].data = (char *)g.db + 4;
	assert_true(blk_launch(f, g.t, 3, NULL));
	g.t[1].shape[0] = 16, g.t[0].shape[1] = 16;
	g.t[1].data = g.db;
	assert_true(blk_launch(f, g.t, 3, NULL));
	blk_program_cache_stats(p, &compiles, &hits);
	assert_int_equal(compiles, 2);
	assert_int_equal(hits, 3);
	gpu_matmul_free(rt, &g);
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
}

/* `dynamic (M, N, K)`: one compile per class of sizes, and the launch
 * passes the sizes (i32, in the kernel's order: M, K, N) and the strides
 * that depend on them (i64: a's, b's, c's rows) after the pointers, with
 * the grid computed from these sizes. */
static void test_dynamic_sizes(void **state)
{
	need_program(state);
	const char *fake_path = env_or("BLK_FAKE_CUDA", BLK_FAKE_CUDA);
	setenv("BLK_CACHE", "0", 1);
	BlkRuntime *rt = fake_runtime();
	void *fake = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(fake);
	void (*set_nargs)(int);
	int32_t (*arg)(int);
	unsigned (*grid)(int);
	*(void **)&set_nargs = dlsym(fake, "fake_cuda_set_nargs");
	*(void **)&arg = dlsym(fake, "fake_cuda_last_arg");
	*(void **)&grid = dlsym(fake, "fake_cuda_last_grid");
	assert_true(set_nargs && arg && grid);
	static const char src[] =
		"kernel dyn[BM = 64, BN = 64, BK = 16](\n"
		"    a: in  f32[M, K] block (BM, K)  index (i, j) -> (i, 0),\n"
		"    b: in  f32[N, K] block (BN, K)  index (i, j) -> (j, 0),\n"
		"    c: out f32[M, N] block (BM, BN) index (i, j) -> (i, j),\n"
		") dynamic (M, N, K) grid (cdiv(M, BM), cdiv(N, BN)) {\n"
		"    c[...] = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {\n"
		"        acc + a[:, ds(k * BK, BK)] @ b[:, ds(k * BK, BK)].T\n"
		"    };\n"
		"}\n";
	BlkProgram *p = blk_program_load_source(rt, "dyn", src, NULL, 0);
	assert_non_null(p);
	BlkFunc *f = blk_program_kernel(p, NULL);
	void *d[3];
	for (int i = 0; i < 3; i++)
		assert_true(blk_mem_alloc(rt, 128 * 128 * 4, &d[i]));
	/* M, N, K; the compiles expected after it (classes of 16 and the
	 * block dim 64 for M and N, of 16 for K), the grid, the size arguments */
	static const struct { int64_t m, n, k; unsigned compiles, gx, gy; int nargs; int32_t a[6]; } runs[] = {
		{100, 70, 33, 1, 2, 2, 9, {100, 33, 70, 33, 33, 70}},
		{90, 50, 17, 1, 2, 1, 9, {90, 17, 50, 17, 17, 50}},   /* same class: no compile */
		{128, 64, 32, 2, 2, 1, 9, {128, 32, 64, 32, 32, 64}}, /* multiples of 64, 64, 16 */
		{1, 70, 33, 3, 1, 2, 8, {33, 70, 33, 33, 70, 0}},     /* M = 1 is compiled in */
	};
	for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
		int64_t sa[2] = {runs[r].m, runs[r].k}, sb[2] = {runs[r].n, runs[r].k}, sc[2] = {runs[r].m, runs[r].n};
		BlkTensor t[3] = {blk_tensor_make(d[0], BLK_DTYPE_F32, 2, sa), blk_tensor_make(d[1], BLK_DTYPE_F32, 2, sb),
		                  blk_tensor_make(d[2], BLK_DTYPE_F32, 2, sc)};
		set_nargs(runs[r].nargs);
		if (!blk_launch(f, t, 3, NULL))
			fail_msg("%s", blk_runtime_last_error(rt));
		unsigned compiles, hits;
		blk_program_cache_stats(p, &compiles, &hits);
		assert_int_equal(compiles, runs[r].compiles);
		assert_int_equal(grid(0), runs[r].gx);
		assert_int_equal(grid(1), runs[r].gy);
		for (int i = 3; i < runs[r].nargs; i++)
			assert_int_equal(arg(i), runs[r].a[i - 3]);
	}
	/* b as the transpose of a [K, N] tensor (strides 1, N): N is its
	 * stride, an argument like any other; N = 64 and 128 share a class */
	for (int r = 0; r < 2; r++) {
		int64_t n = 64 << r, sa[2] = {128, 32}, sb[2] = {n, 32}, sc[2] = {128, n};
		BlkTensor t[3] = {blk_tensor_make(d[0], BLK_DTYPE_F32, 2, sa), blk_tensor_make(d[1], BLK_DTYPE_F32, 2, sb),
		                  blk_tensor_make(d[2], BLK_DTYPE_F32, 2, sc)};
		t[1].strides[0] = 1, t[1].strides[1] = n;
		set_nargs(9);
		if (!blk_launch(f, t, 3, NULL))
			fail_msg("%s", blk_runtime_last_error(rt));
		unsigned compiles, hits;
		blk_program_cache_stats(p, &compiles, &hits);
		assert_int_equal(compiles, 4);
		assert_int_equal(arg(6), 32); /* a's rows */
		assert_int_equal(arg(7), (int32_t)n); /* b's dim 1 */
		assert_int_equal(arg(8), (int32_t)n); /* c's rows */
	}
	set_nargs(0);
	for (int i = 0; i < 3; i++)
		blk_mem_free(rt, d[i]);
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
	dlclose(fake);
	unsetenv("BLK_CACHE");
}

/* A[m, k], B[k, n], C[m, n] in bf16, contiguous, in device memory. */
static void bf16_matmul_tensors(BlkRuntime *rt, int64_t m, int64_t n, int64_t k, BlkTensor *t)
{
	int64_t shapes[3][2] = {{m, k}, {k, n}, {m, n}};
	for (int i = 0; i < 3; i++) {
		void *d = NULL;
		assert_true(blk_mem_alloc(rt, (size_t)(shapes[i][0] * shapes[i][1]) * 2, &d));
		t[i] = blk_tensor_make(d, BLK_DTYPE_BF16, 2, shapes[i]);
	}
}

/* A bf16 matmul on sm_90a whose rows are 16-byte aligned gets its slabs by
 * TMA and stores C by TMA: the launch encodes one tensor map per array (A,
 * B, C), at every launch; an A with rows of 66 bytes falls back to
 * cp.async (B keeps its map: both ways in one producer), a C with rows of
 * 242 bytes to stores from registers.  A and B passed as transposed views
 * (contiguous along their first dim) come by TMA too, through maps over
 * their dims the other way round.  A batched matmul's slabs and C come by
 * 3-D maps. */
static void test_tma_tensor_maps(void **state)
{
	need_program(state);
	const char *fake_path = env_or("BLK_FAKE_CUDA", BLK_FAKE_CUDA);
	setenv("BLK_CACHE", "0", 1);
	BlkRuntime *rt = fake_runtime();
	void *fake = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(fake);
	int (*maps)(void);
	*(void **)&maps = dlsym(fake, "fake_cuda_tensor_maps");
	assert_non_null(maps);
	/* (a config schedule.c specializes: two plain programs an SM at most) */
	const char *defs[] = {"T=bf16", "BM=128", "BN=128", "BK=64", "num_warps=4", "num_stages=3"};
	BlkProgram *p = blk_program_load(rt, matmul_path(), defs, 6);
	assert_non_null(p);
	BlkFunc *f = blk_program_kernel(p, NULL);
	BlkTensor t[3];
	bf16_matmul_tensors(rt, 128, 128, 64, t);
	int before = maps();
	if (!blk_launch(f, t, 3, NULL) || !blk_launch(f, t, 3, NULL))
		fail_msg("%s", blk_runtime_last_error(rt));
	assert_int_equal(maps() - before, 6);
	t[0].shape[1] = 33, t[0].strides[0] = 33, t[1].shape[0] = 33; /* A's rows: 66 bytes */
	before = maps();
	if (!blk_launch(f, t, 3, NULL))
		fail_msg("%s", blk_runtime_last_error(rt));
	assert_int_equal(maps() - before, 2); /* B's and C's: A by cp.async */
	t[1].shape[1] = t[2].shape[1] = 120, t[2].strides[0] = 121; /* C's rows: 242 bytes */
	before = maps();
	if (!blk_launch(f, t, 3, NULL))
		fail_msg("%s", blk_runtime_last_error(rt));
	assert_int_equal(maps() - before, 1); /* B's alone: C from registers */
	/* 16 x 16 tiles of 128 x 128, more than the device's 132 SMs: a
	 * persistent grid of one CTA per SM (the fake reports 132) */
	unsigned (*ctas)(void);
	*(void **)&ctas = dlsym(fake, "fake_cuda_last_ctas");
	BlkTensor big[3];
	bf16_matmul_tensors(rt, 2048, 2048, 64, big);
	if (!blk_launch(f, big, 3, NULL))
		fail_msg("%s", blk_runtime_last_error(rt));
	assert_int_equal(ctas(), 132);
	unsigned (*cluster)(void);
	*(void **)&cluster = dlsym(fake, "fake_cuda_last_cluster");
	/* CTA pairs (persist.c), launched in clusters of two by cuLaunchKernelEx */
	assert_int_equal(cluster(), 2);
	/* the same on two consumer warpgroups: pairs too; 64x128 blocks:
	 * two programs merged into one of 128x128 (coarsen.c), paired too;
	 * 128x128x32 on 4 warps: plain programs (schedule.c), a CTA each, no
	 * clusters */
	const char *defs8[] = {"T=bf16", "BM=128", "BN=128", "BK=64", "num_warps=8", "num_stages=3"};
	const char *defs64[] = {"T=bf16", "BM=64", "BN=128", "BK=64", "num_warps=4", "num_stages=3"};
	const char *defs32[] = {"T=bf16", "BM=128", "BN=128", "BK=32", "num_warps=4", "num_stages=3"};
	const char *const *cfgs[3] = {defs8, defs64, defs32};
	for (int i = 0; i < 3; i++) {
		BlkProgram *q = blk_program_load(rt, matmul_path(), cfgs[i], 6);
		assert_non_null(q);
		if (!blk_launch(blk_program_kernel(q, NULL), big, 3, NULL))
			fail_msg("%s", blk_runtime_last_error(rt));
		assert_int_equal(ctas(), i == 2 ? 256 : 132);
		assert_int_equal(cluster(), i == 2 ? 1 : 2);
		blk_program_destroy(q);
	}
	for (int i = 0; i < 3; i++)
		blk_mem_free(rt, big[i].data), blk_mem_free(rt, t[i].data);
	unsigned (*rank)(void);
	*(void **)&rank = dlsym(fake, "fake_cuda_last_map_rank");
	unsigned long long (*map)(int, int);
	*(void **)&map = dlsym(fake, "fake_cuda_last_map");
	/* A [128, 64] and B [64, 128] as transposed views: strides (1, 128) and
	 * (1, 64).  Three maps (C's, A's, B's, in the order of first use); B's,
	 * the last: dims {K, N} (its contiguous dim first), boxes {64 (128
	 * bytes), BN rows of its [BN, BK] slot}, a stride of K elements */
	bf16_matmul_tensors(rt, 128, 128, 64, t);
	t[0].strides[0] = 1, t[0].strides[1] = 128;
	t[1].strides[0] = 1, t[1].strides[1] = 64;
	before = maps();
	if (!blk_launch(f, t, 3, NULL))
		fail_msg("%s", blk_runtime_last_error(rt));
	assert_int_equal(maps() - before, 3);
	assert_int_equal(rank(), 2);
	unsigned long long want_t[3][2] = {{64, 128}, {64, 128}, {128, 0}};
	for (int w = 0; w < 3; w++)
		for (int d = 0; d < 2; d++)
			assert_int_equal(map(w, d), want_t[w][d]);
	for (int i = 0; i < 3; i++)
		blk_mem_free(rt, t[i].data);
	blk_program_destroy(p);
	/* a batched matmul: A [Bt, M, K], B [Bt, K, N] and C [Bt, M, N], the
	 * batch squeezed in their blocks, through 3-D maps: B's, the last */
	char bmm[1024];
	snprintf(bmm, sizeof bmm, "%s/bmm.blk", env_or("BLK_EXAMPLES_DIR", BLK_EXAMPLES_DIR));
	p = blk_program_load(rt, bmm, defs, 6);
	assert_non_null(p);
	int64_t bshapes[3][3] = {{3, 128, 64}, {3, 64, 128}, {3, 128, 128}};
	for (int i = 0; i < 3; i++) {
		void *d = NULL;
		assert_true(blk_mem_alloc(rt, (size_t)(bshapes[i][0] * bshapes[i][1] * bshapes[i][2]) * 2, &d));
		t[i] = blk_tensor_make(d, BLK_DTYPE_BF16, 3, bshapes[i]);
	}
	before = maps();
	if (!blk_launch(blk_program_kernel(p, NULL), t, 3, NULL))
		fail_msg("%s", blk_runtime_last_error(rt));
	assert_int_equal(maps() - before, 3);
	assert_int_equal(rank(), 3);
	/* dims {N, K, Bt}, boxes {64 columns (128 bytes), BK rows, 1 matrix},
	 * strides {a row, a matrix} in bytes */
	unsigned long long want[3][3] = {{128, 64, 3}, {64, 64, 1}, {256, 64 * 256, 0}};
	for (int w = 0; w < 3; w++)
		for (int d = 0; d < 3; d++)
			assert_int_equal(map(w, d), want[w][d]);
	for (int i = 0; i < 3; i++)
		blk_mem_free(rt, t[i].data);
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
	dlclose(fake);
	unsetenv("BLK_CACHE");
}

/* ---- tuner under the fake driver (tests/runtime/fake_cuda.c) ----------- */

/* The fake driver's library (dlclose it) and its launch counter. */
static void *fake_counter(int (**launches)(void))
{
	void *fake = dlopen(env_or("BLK_FAKE_CUDA", BLK_FAKE_CUDA), RTLD_NOW | RTLD_LOCAL);
	assert_non_null(fake);
	*(void **)launches = dlsym(fake, "fake_cuda_launches");
	assert_non_null(*launches);
	return fake;
}

/* Under the fake, a launch takes 1 + 64 / CTAs ms and more than 384 threads
 * per CTA are refused: the winner is the config with the most CTAs that
 * the "GPU" takes. */
/* Several ranks from C: the world's rank, and symmetric buffers' errors
 * where there is no driver with virtual memory management (the GPU path
 * is python/tests/gpu_world.py's and tools' two-process test). */
static void test_world_and_symmetric(void **state)
{
	(void)state;
	char err[128] = "";
	BlkRuntime *off = blk_runtime_create_offline(NULL, err, sizeof err);
	assert_non_null(off);
	assert_false(blk_runtime_set_world(off, 2, 2));
	assert_contains(blk_runtime_last_error(off), "blk_runtime_set_world: rank 2 of a world of 2");
	assert_false(blk_runtime_set_world(off, 0, 0));
	assert_contains(blk_runtime_last_error(off), "a world of 0 ranks; it has 1 to 4096");
	assert_false(blk_runtime_set_world(off, 0, INT_MAX));
	assert_contains(blk_runtime_last_error(off), "a world of 2147483647 ranks; it has 1 to 4096");
	assert_true(blk_runtime_set_world(off, BLK_MAX_WORLD - 1, BLK_MAX_WORLD));
	assert_true(blk_runtime_set_world(off, 1, 2));
	assert_null(blk_symmetric_create(off, 1024, 0, 2));
	assert_contains(blk_runtime_last_error(off), "blk_symmetric_create: this runtime is offline");
	blk_runtime_destroy(off);
	assert_null(blk_symmetric_create(NULL, 1024, 0, 2));
	assert_string_equal(blk_runtime_last_error(NULL), "blk_symmetric_create: the runtime is NULL");
	assert_int_equal(blk_symmetric_export(NULL), -1);
	assert_string_equal(blk_runtime_last_error(NULL), "blk_symmetric_export: the symmetric buffer is NULL");
	assert_false(blk_symmetric_import(NULL, 1, 3));
	assert_null(blk_symmetric_data(NULL));
	assert_null(blk_symmetric_peers(NULL));
	blk_symmetric_destroy(NULL);
	setenv("FAKE_CUDA_NO_VMM", "1", 1); /* a driver without cuMemCreate */
	BlkRuntime *rt = fake_runtime();
	unsetenv("FAKE_CUDA_NO_VMM");
	assert_null(blk_symmetric_create(rt, 1024, 0, 2));
	assert_contains(blk_runtime_last_error(rt), "the CUDA driver has no virtual memory management");
	blk_runtime_destroy(rt);
}

/* Two ranks' symmetric buffers in one process, on the stand-in driver's
 * virtual memory management (an allocation is a memfd, a mapping an mmap
 * of it): each exports, imports the other's, and rank 0's mapping of rank
 * 1's buffer holds what rank 1 wrote into its own; the peers table lists
 * both; every misuse is an error. */
static void test_symmetric_fake(void **state)
{
	(void)state;
	BlkRuntime *rt0 = fake_runtime(), *rt1 = fake_runtime();
	assert_null(blk_symmetric_create(rt0, 1000, 2, 2));
	assert_contains(blk_runtime_last_error(rt0), "rank 2 of a world of 2");
	assert_null(blk_symmetric_create(rt0, 0, 0, 2));
	assert_null(blk_symmetric_create(rt0, 1000, 0, BLK_MAX_WORLD + 1));
	assert_contains(blk_runtime_last_error(rt0), "a world of 4097 ranks; it has 1 to 4096");
	BlkSymmetric *s0 = blk_symmetric_create(rt0, 1000, 0, 2);
	BlkSymmetric *s1 = blk_symmetric_create(rt1, 1000, 1, 2);
	assert_non_null(s0);
	assert_non_null(s1);
	assert_null(blk_symmetric_peers(s0));
	assert_contains(blk_runtime_last_error(rt0), "rank 1's buffer is not imported yet");
	int fd0 = blk_symmetric_export(s0), fd1 = blk_symmetric_export(s1);
	assert_true(fd0 >= 0 && fd1 >= 0);
	assert_false(blk_symmetric_import(s0, 0, fd1));
	assert_contains(blk_runtime_last_error(rt0), "rank 0 is not another rank of this world of 2");
	assert_false(blk_symmetric_import(s0, 1, -1));
	assert_true(blk_symmetric_import(s0, 1, fd1));
	assert_false(blk_symmetric_import(s0, 1, fd1));
	assert_contains(blk_runtime_last_error(rt0), "rank 1's buffer is mapped already");
	assert_true(blk_symmetric_import(s1, 0, fd0));
	close(fd0);
	close(fd1);
	char *d1 = blk_symmetric_data(s1);
	assert_true(blk_memcpy_htod(rt1, d1 + 100, "from rank 1", 12));
	const void *t = blk_symmetric_peers(s0);
	assert_non_null(t);
	assert_ptr_equal(blk_symmetric_peers(s0), t); /* made once */
	uint64_t table[2];
	assert_true(blk_memcpy_dtoh(rt0, table, t, sizeof table));
	assert_int_equal(table[0], (uint64_t)(uintptr_t)blk_symmetric_data(s0));
	assert_true(table[1] != 0 && table[1] != (uint64_t)(uintptr_t)d1); /* rank 0's own mapping of it */
	char got[12];
	assert_true(blk_memcpy_dtoh(rt0, got, (void *)(uintptr_t)(table[1] + 100), 12));
	assert_string_equal(got, "from rank 1");
	blk_symmetric_destroy(s0);
	assert_int_equal(blk_symmetric_export(s0), -1);
	assert_contains(blk_runtime_last_error(NULL), "the symmetric buffer was destroyed");
	blk_symmetric_destroy(s1);
	blk_runtime_destroy(rt0);
	blk_runtime_destroy(rt1);
}

static void test_tuner_fake_driver(void **state)
{
	need_program(state);
	BlkRuntime *rt = fake_runtime();
	int (*launches)(void);
	void *fake = fake_counter(&launches);
	unsigned (*ctas)(void);
	*(void **)&ctas = dlsym(fake, "fake_cuda_last_ctas");
	assert_non_null(ctas);

	BlkTuner *t = matmul_tuner(rt);
	assert_true(blk_tuner_add_config_text(t, "BM=64,BN=64,BK=16,num_warps=4"));  /* 12 CTAs */
	assert_true(blk_tuner_add_config_text(t, "BM=32,BN=32,BK=16,num_warps=2"));  /* 35 CTAs */
	assert_true(blk_tuner_add_config_text(t, "BM=64,BN=64,BK=16,num_warps=16")); /* refused */
	assert_true(blk_tuner_add_config_text(t, "BM=512,BN=512,BK=32"));            /* no compile */
	blk_tuner_set_timing(t, 2, 5);
	GpuMatmul g;
	assert_true(gpu_matmul_make(rt, &g, 200, 136, 72));
	int before = launches();
	if (!blk_tuner_launch(t, g.t, 3, NULL))
		fail_msg("%s\nlog:\n%s", blk_runtime_last_error(rt), blk_tuner_log(t));
	/* Two candidates x (2 warm-up + 5 timed), then the winner once more. */
	assert_int_equal(launches() - before, 15);
	assert_int_equal(ctas(), 35);
	BlkTunerResult r;
	assert_true(blk_tuner_best(t, g.t, 3, &r));
	assert_int_equal(r.config, 1);
	assert_int_equal(r.candidates, 4);
	assert_int_equal(r.timed, 2);
	assert_float_equal(r.ms, 1.0 + 64.0 / 35, 1e-4);
	assert_string_equal(blk_tuner_config(t, r.config), "BM=32,BN=32,BK=16,num_warps=2");
	const char *log = blk_tuner_log(t);
	assert_contains(log, "  [0] BM=64,BN=64,BK=16,num_warps=4: 6.3333 ms (median of 5)\n");
	assert_contains(log, "  [1] BM=32,BN=32,BK=16,num_warps=2: 2.8286 ms (median of 5)\n");
	assert_contains(log, "  [2] BM=64,BN=64,BK=16,num_warps=16: skipped, the launch failed: "
	                     "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701): "
	                     "too many resources requested for launch\n");
	assert_contains(log, "  [3] BM=512,BN=512,BK=32: skipped, does not compile: ");
	assert_contains(log, "  best: [1] BM=32,BN=32,BK=16,num_warps=2, 2.8286 ms\n");

	/* Tuned: one launch of the winner, other buffers of the same layout too. */
	size_t loglen = strlen(blk_tuner_log(t));
	void *c2 = NULL;
	assert_true(blk_mem_alloc(rt, (size_t)(g.m * g.n) * 4, &c2));
	g.t[2].data = c2;
	assert_true(blk_tuner_launch(t, g.t, 3, NULL));
	g.t[2].data = g.da; /* C over A: refused, they would alias */
	assert_false(blk_tuner_launch(t, g.t, 3, NULL));
	assert_contains(blk_runtime_last_error(rt), "tensors 0 (a) and 2 (c) share memory");
	g.t[2].data = g.dc;
	blk_mem_free(rt, c2);
	assert_int_equal(launches() - before, 16);
	assert_int_equal(strlen(blk_tuner_log(t)), loglen);
	/* A changed shape is a new signature: checked before anything runs. */
	g.t[1].shape[0] = 71;
	assert_false(blk_tuner_launch(t, g.t, 3, NULL));
	assert_contains(blk_runtime_last_error(rt), "accepts these tensors");
	assert_int_equal(launches() - before, 16);

	/* Nothing the GPU takes: an error that points at the log. */
	BlkTuner *none = matmul_tuner(rt);
	assert_true(blk_tuner_add_config_text(none, "num_warps=16"));
	g.t[1].shape[0] = 72;
	assert_false(blk_tuner_launch(none, g.t, 3, NULL));
	assert_string_equal(blk_runtime_last_error(rt), "tuner: no candidate of 'matmul' could be "
	                                                "launched (blk_tuner_log says why)");
	assert_false(blk_tuner_best(none, g.t, 3, NULL));
	blk_tuner_destroy(none);
	gpu_matmul_free(rt, &g);
	blk_tuner_destroy(t);
	blk_runtime_destroy(rt);
	dlclose(fake);
}

/* Candidates compile in threads: with 4 the log, the winner and the error
 * left behind (the first failing candidate's, in candidate order) are
 * those of 1, whichever thread finishes first. */
static void tune_with_threads(BlkRuntime *rt, const char *threads, GpuMatmul *g, char **log,
                              char **err, int *winner)
{
	static const char *const cands[] = {
		"BM=64,BN=64,BK=16,num_warps=4", "BM=512,BN=512,BK=32", /* shared memory */
		"BM=32,BN=32,BK=16,num_warps=2", "num_warps=3",
		"BM=32,BN=64,BK=16,num_warps=4", "BM=64,BN=32,BK=16,num_warps=2",
	};
	setenv("BLK_TUNE_THREADS", threads, 1);
	BlkTuner *t = matmul_tuner(rt);
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
		assert_true(blk_tuner_add_config_text(t, cands[i]));
	blk_tuner_set_timing(t, 1, 3);
	assert_int_equal(blk_tuner_compile(t, g->t, 3), 4);
	*err = strdup(blk_runtime_last_error(rt));
	if (!blk_tuner_launch(t, g->t, 3, NULL))
		fail_msg("%s\nlog:\n%s", blk_runtime_last_error(rt), blk_tuner_log(t));
	BlkTunerResult r;
	assert_true(blk_tuner_best(t, g->t, 3, &r));
	*winner = r.config;
	*log = strdup(blk_tuner_log(t));
	blk_tuner_destroy(t);
	unsetenv("BLK_TUNE_THREADS");
}

static void test_tuner_parallel_compile(void **state)
{
	need_program(state);
	const char *env = getenv("BLK_CACHE");
	char *cache = env ? strdup(env) : NULL; /* put back after: later tests count compiles */
	setenv("BLK_CACHE", "0", 1); /* both compile and time, none reads the other's choice */
	BlkRuntime *rt = fake_runtime();
	GpuMatmul g;
	assert_true(gpu_matmul_make(rt, &g, 200, 136, 72));
	char *log[2], *err[2];
	int winner[2];
	tune_with_threads(rt, "1", &g, &log[0], &err[0], &winner[0]);
	tune_with_threads(rt, "4", &g, &log[1], &err[1], &winner[1]);
	assert_string_equal(log[0], log[1]);
	assert_string_equal(err[0], err[1]);
	assert_contains(err[1], "needs 263168 bytes of shared memory");
	assert_int_equal(winner[0], winner[1]);
	assert_int_equal(winner[1], 2); /* the most CTAs under the fake */
	for (int i = 0; i < 2; i++)
		free(log[i]), free(err[i]);
	gpu_matmul_free(rt, &g);
	blk_runtime_destroy(rt);
	if (cache)
		setenv("BLK_CACHE", cache, 1);
	else
		unsetenv("BLK_CACHE");
	free(cache);
}

/* A kernel with dynamic sizes is tuned once per power-of-two bucket of
 * each dynamic extent: a new M in a tuned bucket launches the winner
 * alone (no timing), a new bucket tunes again; size 1 is its own. */
static void test_tuner_dynamic_buckets(void **state)
{
	need_program(state);
	BlkRuntime *rt = fake_runtime();
	int (*launches)(void);
	void *fake = fake_counter(&launches);
	char path[1024];
	snprintf(path, sizeof path, "%s/matmul_dynamic.blk", env_or("BLK_EXAMPLES_DIR", BLK_EXAMPLES_DIR));
	BlkTuner *t = blk_tuner_create(rt, path, NULL, "matmul_dynamic", NULL, 0);
	assert_non_null(t);
	assert_true(blk_tuner_add_config_text(t, "BM=64,BN=64,BK=32,num_warps=4"));
	assert_true(blk_tuner_add_config_text(t, "BM=32,BN=32,BK=32,num_warps=2"));
	blk_tuner_set_timing(t, 2, 5);
	void *da = NULL, *db = NULL, *dc = NULL;
	assert_true(blk_mem_alloc(rt, 600 * 72 * 4, &da) && blk_mem_alloc(rt, 136 * 72 * 4, &db) &&
	            blk_mem_alloc(rt, 600 * 136 * 4, &dc));
	static const struct { int64_t m; int launched; } steps[] = {
		{200, 15}, /* bucket 129..256: 2 candidates x (2 + 5), then the winner */
		{250, 1},  /* the same bucket: the winner alone */
		{129, 1},
		{256, 1},
		{300, 15}, /* 257..512: tuned again */
		{511, 1},
		{1, 15},   /* size 1 is a bucket (and a class) of its own */
	};
	size_t loglen = 0;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		int64_t sa[2] = {steps[i].m, 72}, sb[2] = {136, 72}, sc[2] = {steps[i].m, 136};
		BlkTensor ts[3] = {blk_tensor_make(da, BLK_DTYPE_F32, 2, sa), blk_tensor_make(db, BLK_DTYPE_F32, 2, sb),
		                   blk_tensor_make(dc, BLK_DTYPE_F32, 2, sc)};
		int before = launches();
		if (!blk_tuner_launch(t, ts, 3, NULL))
			fail_msg("M = %lld: %s\nlog:\n%s", (long long)steps[i].m, blk_runtime_last_error(rt),
			         blk_tuner_log(t));
		if (launches() - before != steps[i].launched)
			fail_msg("M = %lld: %d launches, expected %d", (long long)steps[i].m, launches() - before,
			         steps[i].launched);
		size_t now = strlen(blk_tuner_log(t));
		assert_true(steps[i].launched == 1 ? now == loglen : now > loglen);
		loglen = now;
		BlkTunerResult r;
		assert_true(blk_tuner_best(t, ts, 3, &r));
		assert_int_equal(r.config, 1); /* more CTAs: faster under the fake */
	}
	blk_mem_free(rt, da), blk_mem_free(rt, db), blk_mem_free(rt, dc);
	blk_tuner_destroy(t);
	blk_runtime_destroy(rt);
	dlclose(fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_driver),
		cmocka_unit_test(test_default_driver),
		cmocka_unit_test(test_driver_too_old),
		cmocka_unit_test(test_destroy_null),
		cmocka_unit_test(test_offline),
		cmocka_unit_test(test_tensor_make),
		cmocka_unit_test(test_cache_key),
		cmocka_unit_test(test_cache_find),
	};
	const struct CMUnitTest launch_tests[] = {
		cmocka_unit_test(test_launch_count),
		cmocka_unit_test(test_launch_dtype),
		cmocka_unit_test(test_launch_rank),
		cmocka_unit_test(test_launch_shape),
		cmocka_unit_test(test_launch_memory),
		cmocka_unit_test(test_null_handles),
		cmocka_unit_test(test_kernel_lookup),
		cmocka_unit_test(test_bad_define),
		cmocka_unit_test(test_unknown_arch),
		cmocka_unit_test(test_compile_cache),
		cmocka_unit_test(test_tuner_create),
		cmocka_unit_test(test_tuner_configs),
		cmocka_unit_test(test_tuner_key),
		cmocka_unit_test(test_tuner_refuses),
		cmocka_unit_test(test_tuner_compile),
		cmocka_unit_test(test_tuner_default_candidate),
		cmocka_unit_test(test_tuner_gpu),
		cmocka_unit_test(test_tuner_fake_driver),
		cmocka_unit_test(test_world_and_symmetric),
		cmocka_unit_test(test_symmetric_fake),
		cmocka_unit_test(test_tuner_parallel_compile),
		cmocka_unit_test(test_tuner_dynamic_buckets),
		cmocka_unit_test(test_tma_tensor_maps),
		cmocka_unit_test(test_launch_fast_path),
		cmocka_unit_test(test_dynamic_sizes),
	};
	int failed = cmocka_run_group_tests_name("runtime", tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("launch", launch_tests, setup_matmul, teardown_matmul);
	return failed ? 1 : 0;
}
