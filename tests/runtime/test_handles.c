/* test_handles.c - a NULL or destroyed handle is an error, never a crash:
 * every function of blk.h that takes a runtime, program, kernel, tuner or
 * timer, called with NULL and with a handle destroyed just before (double
 * destroy included).  The message is in blk_runtime_last_error(NULL).
 * Timers and memory need a device: the fake driver (fake_cuda.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "blk.h"

static const char src[] =
	"kernel add(x: in f32[N] block (N) index (i) -> (0),\n"
	"           y: out f32[N] block (N) index (i) -> (0)) grid (1) {\n"
	"    y[...] = x[...] + 1.0;\n"
	"}\n";

static void expect_orphan(const char *part)
{
	const char *msg = blk_runtime_last_error(NULL);
	if (!strstr(msg, part))
		fail_msg("expected \"%s\" in \"%s\"", part, msg);
}

/* Every function that takes a kernel, given f (NULL or destroyed). */
static void kernel_calls(BlkFunc *f, const char *why)
{
	float x[4] = {0}, y[4] = {0};
	int64_t shape[1] = {4}, sizes[4];
	BlkTensor t[2] = {blk_tensor_make(x, BLK_DTYPE_F32, 1, shape),
	                  blk_tensor_make(y, BLK_DTYPE_F32, 1, shape)};
	BlkParamInfo pi;
	BlkCompiledInfo ci;
	assert_string_equal(blk_func_name(f), "");
	expect_orphan(why);
	assert_int_equal(blk_func_num_tensors(f), -1);
	assert_int_equal(blk_func_num_sizes(f), -1);
	assert_null(blk_func_size_name(f, 0));
	assert_false(blk_func_param(f, 0, &pi));
	expect_orphan("blk_func_param: the kernel");
	assert_false(blk_func_infer_shapes(f, t, 2));
	assert_false(blk_func_bind(f, t, 2, sizes));
	expect_orphan("blk_func_bind: the kernel");
	assert_false(blk_func_check(f, t, 2));
	assert_false(blk_func_compile(f, t, 2, &ci));
	const char *configs[4];
	assert_int_equal(blk_func_search(f, t, 2, configs, 4), -1);
	expect_orphan("blk_func_search: the kernel");
	assert_false(blk_launch(f, t, 2, NULL));
	assert_false(blk_interpret(f, t, 2));
	expect_orphan("blk_interpret: the kernel");
	expect_orphan(why);
}

static void program_calls(BlkProgram *p, const char *why)
{
	unsigned c = 7, h = 7;
	blk_program_cache_stats(p, &c, &h);
	assert_int_equal(c, 0);
	assert_int_equal(h, 0);
	assert_int_equal(blk_program_disk_hits(p), 0);
	expect_orphan("blk_program_disk_hits: the program");
	assert_null(blk_program_kernel(p, NULL));
	expect_orphan(why);
	blk_program_destroy(p);
}

static void tuner_calls(BlkTuner *t, const char *why)
{
	const char *defs[] = {"A=1"};
	BlkTunerResult r;
	assert_false(blk_tuner_add_config(t, defs, 1));
	expect_orphan(why);
	assert_false(blk_tuner_add_config_text(t, "A=2"));
	assert_int_equal(blk_tuner_num_configs(t), 0);
	assert_null(blk_tuner_config(t, 0));
	blk_tuner_set_timing(t, 1, 1);
	assert_false(blk_tuner_launch(t, NULL, 0, NULL));
	assert_int_equal(blk_tuner_compile(t, NULL, 0), -1);
	assert_false(blk_tuner_best(t, NULL, 0, &r));
	assert_string_equal(blk_tuner_log(t), "");
	expect_orphan("blk_tuner_log: the tuner");
	blk_tuner_destroy(t);
}

static void runtime_calls(BlkRuntime *rt, const char *why)
{
	void *d = NULL;
	char buf[8];
	BlkStream s = NULL;
	assert_string_equal(blk_runtime_arch(rt), "");
	expect_orphan(why);
	assert_string_equal(blk_runtime_device_name(rt), "");
	assert_null(blk_runtime_cache_dir(rt));
	assert_false(blk_runtime_set_cache_dir(rt, "/tmp/x"));
	expect_orphan("blk_runtime_set_cache_dir: the runtime");
	assert_string_equal(blk_runtime_last_error(rt), blk_runtime_last_error(NULL));
	assert_false(blk_mem_alloc(rt, 64, &d));
	blk_mem_free(rt, buf);
	assert_false(blk_memcpy_htod(rt, buf, buf, 8));
	assert_false(blk_memcpy_dtoh(rt, buf, buf, 8));
	assert_false(blk_memcpy_dtod(rt, buf, buf, 8, NULL));
	assert_false(blk_memset(rt, buf, 0, 8));
	assert_false(blk_stream_create(rt, &s));
	blk_stream_destroy(rt, buf);
	assert_false(blk_stream_synchronize(rt, NULL));
	assert_false(blk_synchronize(rt));
	assert_null(blk_timer_create(rt));
	assert_null(blk_program_load(rt, "x.blk", NULL, 0));
	expect_orphan("blk_program_load: the runtime");
	assert_null(blk_program_load_source(rt, "x", src, NULL, 0));
	assert_null(blk_tuner_create(rt, NULL, src, NULL, NULL, 0));
	expect_orphan(why);
	blk_runtime_interrupt(rt); /* nothing to stop, nothing touched */
	blk_runtime_destroy(rt);
}

static void timer_calls(BlkTimer *t, const char *why)
{
	float ms;
	assert_false(blk_timer_start(t, NULL));
	expect_orphan(why);
	assert_false(blk_timer_stop(t, NULL));
	assert_false(blk_timer_elapsed_ms(t, &ms));
	expect_orphan("blk_timer_elapsed_ms: the timer");
	blk_timer_destroy(t);
}

static void test_null_handles(void **state)
{
	(void)state;
	kernel_calls(NULL, "is NULL");
	program_calls(NULL, "blk_program_kernel: the program is NULL");
	tuner_calls(NULL, "the tuner is NULL");
	runtime_calls(NULL, "the runtime is NULL");
	timer_calls(NULL, "blk_timer_start: the timer is NULL");
}

static BlkRuntime *fake_runtime(void)
{
	setenv("BLK_LIBCUDA", BLK_FAKE_CUDA, 1);
	setenv("BLK_ARCH", "sm_90a", 1);
	char err[256] = "";
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	unsetenv("BLK_LIBCUDA");
	unsetenv("BLK_ARCH");
	if (!rt)
		fail_msg("the fake driver did not load: %s", err);
	return rt;
}

/* Destroying twice, or calling after destroy, fails with "was destroyed". */
static void test_destroyed_handles(void **state)
{
	(void)state;
	setenv("BLK_CACHE", "0", 1);
	BlkRuntime *rt = fake_runtime();
	BlkProgram *p = blk_program_load_source(rt, "add.blk", src, NULL, 0);
	assert_non_null(p);
	BlkFunc *f = blk_program_kernel(p, NULL);
	assert_non_null(f);
	BlkTuner *t = blk_tuner_create(rt, NULL, src, NULL, NULL, 0);
	assert_non_null(t);
	BlkTimer *tm = blk_timer_create(rt);
	assert_non_null(tm);

	blk_program_destroy(p);
	kernel_calls(f, "the kernel was destroyed");
	program_calls(p, "blk_program_kernel: the program was destroyed");
	expect_orphan("blk_program_destroy: the program was destroyed");
	blk_tuner_destroy(t);
	tuner_calls(t, "the tuner was destroyed");
	expect_orphan("blk_tuner_destroy: the tuner was destroyed");
	blk_timer_destroy(tm);
	timer_calls(tm, "blk_timer_start: the timer was destroyed");
	expect_orphan("blk_timer_destroy: the timer was destroyed");

	/* A program that outlives its runtime fails instead of reaching the
	 * released context. */
	p = blk_program_load_source(rt, "add.blk", src, NULL, 0);
	f = blk_program_kernel(p, NULL);
	assert_non_null(f);
	blk_runtime_destroy(rt);
	runtime_calls(rt, "the runtime was destroyed");
	expect_orphan("blk_runtime_destroy: the runtime was destroyed");
	assert_string_equal(blk_func_name(f), "");
	expect_orphan("blk_func_name: the runtime was destroyed");
	blk_program_destroy(p);
	unsetenv("BLK_CACHE");
}

/* Something that is no handle at all (another kind) is refused too. */
static void test_wrong_kind(void **state)
{
	(void)state;
	BlkRuntime *rt = blk_runtime_create_offline(NULL, NULL, 0);
	BlkProgram *p = blk_program_load_source(rt, "add.blk", src, NULL, 0);
	assert_non_null(p);
	assert_int_equal(blk_func_num_tensors((const BlkFunc *)(const void *)p), -1);
	expect_orphan("blk_func_num_tensors: the kernel was destroyed (or is not a kernel made by blk)");
	assert_null(blk_program_kernel((BlkProgram *)(void *)rt, NULL));
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_handles),
		cmocka_unit_test(test_destroyed_handles),
		cmocka_unit_test(test_wrong_kind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
