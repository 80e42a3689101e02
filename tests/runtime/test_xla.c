/* test_xla.c - libblk's XLA FFI handlers (runtime/xla_ffi.c) called as XLA
 * calls them, on call frames built here: the metadata query, the
 * interpreter on host buffers, a launch under the stand-in driver
 * (tests/runtime/fake_cuda.c), an inout result XLA did not alias, and each
 * error a call can meet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "blk.h"
#include "runtime/xla_ffi.h"

#ifndef BLK_FAKE_CUDA
#define BLK_FAKE_CUDA "libfakecuda.so"
#endif

static const char scale_src[] =
	"kernel scale(x: in f32[N] block (N) index (i) -> (0),\n"
	"             acc: inout f32[N] block (N) index (i) -> (0),\n"
	"             y: out f32[N] block (N) index (i) -> (0)) grid (1) {\n"
	"    y[...] = x[...] * 2.0;\n"
	"    acc[...] = acc[...] + x[...];\n"
	"}\n";

/* ---- a stand-in for XLA's side of the ABI ------------------------------- */

static char last_error[1024];
static int last_code;
static int errors_made, errors_destroyed;

static void *error_create(XlaErrorCreateArgs *a)
{
	snprintf(last_error, sizeof last_error, "%s", a->message);
	last_code = a->code;
	errors_made++;
	return &last_code; /* any non-NULL pointer is an error */
}

static void error_destroy(XlaErrorDestroyArgs *a)
{
	(void)a;
	errors_destroyed++;
}

static int device_ordinal = 0;
static void *get_ordinal(XlaDeviceOrdinalArgs *a)
{
	if (device_ordinal == -2)
		return error_create(&(XlaErrorCreateArgs){ sizeof(XlaErrorCreateArgs), NULL, "no", 3 });
	a->ordinal = device_ordinal;
	return NULL;
}

static void *get_stream(XlaStreamArgs *a)
{
	a->stream = NULL;
	return NULL;
}

static XlaApi api = {
	.struct_size = sizeof(XlaApi),
	.version = { sizeof(XlaApiVersion), NULL, 0, 3 },
	.error_create = error_create,
	.error_destroy = error_destroy,
	.stream_get = get_stream,
	.device_ordinal_get = get_ordinal,
};

/* A call of kernel id on buffers: nargs operands then nrets results. */
typedef struct Call {
	XlaCallFrame cf;
	XlaBuffer bufs[8];
	XlaBuffer *args[8], *rets[8];
	int types[8];
	int64_t dims[8][1];
	int attr_type;
	XlaSpan name, *names[1];
	XlaScalar scalar;
	void *attrs[1];
	int64_t id;
} Call;

static void call_init(Call *c, int64_t id, int nargs, int nrets, float **data, int64_t n)
{
	memset(c, 0, sizeof *c);
	c->id = id;
	for (int i = 0; i < nargs + nrets; i++) {
		c->dims[i][0] = n;
		c->bufs[i] = (XlaBuffer){ sizeof(XlaBuffer), NULL, XLA_F32, data[i], 1, c->dims[i] };
		c->types[i] = 1;
		if (i < nargs)
			c->args[i] = &c->bufs[i];
		else
			c->rets[i - nargs] = &c->bufs[i];
	}
	c->name = (XlaSpan){ "blk_kernel", 10 };
	c->names[0] = &c->name;
	c->scalar = (XlaScalar){ XLA_S64, &c->id };
	c->attrs[0] = &c->scalar;
	c->attr_type = XLA_ATTR_SCALAR;
	c->cf = (XlaCallFrame){
		.struct_size = sizeof(XlaCallFrame),
		.api = &api,
		.stage = XLA_STAGE_EXECUTE,
		.args = { sizeof(XlaBuffers), NULL, nargs, c->types, c->args },
		.rets = { sizeof(XlaBuffers), NULL, nrets, c->types, c->rets },
		.attrs = { sizeof(XlaAttrs), NULL, 1, &c->attr_type, c->names, c->attrs },
	};
}

static void assert_contains(const char *s, const char *part)
{
	if (!strstr(s, part))
		fail_msg("expected \"%s\" in \"%s\"", part, s);
}

static int64_t scale_id(void)
{
	char err[512] = "";
	int64_t id = blk_xla_kernel(NULL, scale_src, NULL, NULL, 0, err, sizeof err);
	if (!id)
		fail_msg("blk_xla_kernel: %s", err);
	return id;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_register(void **state)
{
	(void)state;
	char err[512];
	int64_t id = scale_id();
	assert_true(id >= 1);
	assert_int_equal(scale_id(), id); /* the same arguments, the same id */
	int64_t named = blk_xla_kernel(NULL, scale_src, "scale", NULL, 0, err, sizeof err);
	assert_true(named >= 1 && named != id);
	const char *defs[] = { "T=f16" };
	assert_int_equal(blk_xla_kernel(NULL, scale_src, NULL, defs, 1, err, sizeof err), 0);
	assert_contains(err, "T");

	assert_int_equal(blk_xla_kernel(NULL, NULL, NULL, NULL, 0, err, sizeof err), 0);
	assert_contains(err, "give a path or a source, not neither");
	assert_int_equal(blk_xla_kernel("a.blk", scale_src, NULL, NULL, 0, err, sizeof err), 0);
	assert_contains(err, "not both");
	assert_int_equal(blk_xla_kernel(NULL, scale_src, NULL, NULL, 2, err, sizeof err), 0);
	assert_contains(err, "2 defines at");
	const char *null_def[] = { NULL };
	assert_int_equal(blk_xla_kernel(NULL, scale_src, NULL, null_def, 1, err, sizeof err), 0);
	assert_contains(err, "define 0 is NULL");
	assert_int_equal(blk_xla_kernel(NULL, "kernel broken(", NULL, NULL, 0, err, sizeof err), 0);
	assert_contains(err, "<string>:1:");
	assert_int_equal(blk_xla_kernel(NULL, scale_src, "nope", NULL, 0, err, sizeof err), 0);
	assert_contains(err, "nope");
	assert_int_equal(blk_xla_kernel("/nonexistent/k.blk", NULL, NULL, NULL, 0, err, sizeof err),
	                 0);
	assert_contains(err, "/nonexistent/k.blk");
	assert_int_equal(blk_xla_kernel(NULL, NULL, NULL, NULL, 0, NULL, 0), 0); /* no err buffer */
}

static void test_metadata(void **state)
{
	(void)state;
	XlaMetadata m = { .struct_size = sizeof m, .traits = 77, .state_type_id = 5 };
	XlaMetadataExt ext = { { sizeof ext, XLA_EXT_METADATA, NULL }, &m };
	XlaCallFrame cf = { .struct_size = sizeof cf, .ext = &ext.base, .api = &api };
	assert_null(blk_xla_handler_host(&cf));
	assert_int_equal(m.version.major, 0);
	assert_int_equal(m.version.minor, 3); /* the version XLA speaks */
	assert_int_equal(m.traits, 0);
	assert_int_equal(m.state_type_id, 0);

	api.version.major = 1;
	int before = errors_made;
	assert_non_null(blk_xla_handler_cuda(&cf));
	api.version.major = 0;
	assert_int_equal(errors_made, before + 1);
	assert_contains(last_error, "speaks XLA FFI API 0.x; this XLA speaks 1.3");

	m.struct_size = 8;
	assert_non_null(blk_xla_handler_host(&cf));
	assert_contains(last_error, "metadata query is too small");
	assert_null(blk_xla_handler_host(NULL)); /* nothing to report through */
}

static void test_interpret(void **state)
{
	(void)state;
	float x[5] = { 1, 2, 3, 4, 5 }, acc[5] = { 10, 10, 10, 10, 10 }, y[5] = { 0 };
	float *data[] = { x, acc, acc, y };
	Call c;
	call_init(&c, scale_id(), 2, 2, data, 5);
	assert_null(blk_xla_handler_host(&c.cf));
	for (int i = 0; i < 5; i++) {
		assert_float_equal(y[i], 2 * x[i], 0);
		assert_float_equal(acc[i], 10 + x[i], 0);
	}

	/* acc's result in another buffer (XLA did not alias it): the operand
	 * is copied in first, and stays as it was. */
	float acc_out[5] = { -1, -1, -1, -1, -1 };
	float *data2[] = { x, acc, acc_out, y };
	call_init(&c, scale_id(), 2, 2, data2, 5);
	assert_null(blk_xla_handler_host(&c.cf));
	for (int i = 0; i < 5; i++) {
		assert_float_equal(acc_out[i], 10 + 2 * x[i], 0);
		assert_float_equal(acc[i], 10 + x[i], 0);
	}

	/* a stage other than execute does nothing */
	c.cf.stage = 0;
	assert_null(blk_xla_handler_host(&c.cf));
}

static void test_call_errors(void **state)
{
	(void)state;
	float x[4] = { 0 }, acc[4] = { 0 }, y[4] = { 0 };
	float *data[] = { x, acc, acc, y };
	Call c;

	call_init(&c, 999999, 2, 2, data, 4);
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "blk_kernel (999999) names no kernel registered");
	assert_int_equal(last_code, XLA_ERR_INVALID_ARGUMENT);

	call_init(&c, scale_id(), 2, 2, data, 4);
	c.cf.attrs.size = 0;
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "blk_kernel (0)");

	call_init(&c, scale_id(), 2, 2, data, 4);
	c.bufs[0].dtype = XLA_BF16;
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "blk kernel scale: the operand for x is bf16, the param is f32");
	c.bufs[0].dtype = 12; /* F64 */
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "x is of an XLA dtype blk has no name for");

	call_init(&c, scale_id(), 2, 2, data, 4);
	c.bufs[3].rank = 2;
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "the result for y has rank 2, the param 1");

	call_init(&c, scale_id(), 1, 2, data, 4);
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "the call has 1 operands and 2 results");
	assert_contains(last_error, "one more operand, for acc");

	call_init(&c, scale_id(), 2, 1, data, 4);
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "one more result, for y");

	float *data3[] = { x, acc, x, acc, y };
	call_init(&c, scale_id(), 3, 2, data3, 4);
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "takes 2 operands and gives 2 results; the call has 3 and 2");

	call_init(&c, scale_id(), 2, 2, data, 4);
	c.dims[2][0] = 3;
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "inout acc's result has another shape than its operand");

	call_init(&c, scale_id(), 2, 2, data, 4);
	c.dims[3][0] = 3; /* y's shape does not follow from x's: the interpreter's check */
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_int_equal(last_code, XLA_ERR_INTERNAL);
	assert_contains(last_error, "y");

	call_init(&c, scale_id(), 2, 2, data, 4);
	c.cf.struct_size = 16;
	assert_non_null(blk_xla_handler_host(&c.cf));
	assert_contains(last_error, "call frame is too small");
}

static void test_cuda(void **state)
{
	(void)state;
	float x[4] = { 1, 2, 3, 4 }, acc[4] = { 0 }, acc_out[4] = { 7, 7, 7, 7 }, y[4] = { 0 };
	float *data[] = { x, acc, acc_out, y };
	Call c;
	/* Under the stand-in driver device memory is host memory and a launch
	 * runs nothing: the program loads, the unaliased inout is copied on the
	 * stream, the launch is accepted. */
	call_init(&c, scale_id(), 2, 2, data, 4);
	assert_null(blk_xla_handler_cuda(&c.cf));
	for (int i = 0; i < 4; i++)
		assert_float_equal(acc_out[i], 0, 0);

	device_ordinal = -2; /* XLA cannot say */
	int destroyed = errors_destroyed;
	assert_non_null(blk_xla_handler_cuda(&c.cf));
	assert_int_equal(errors_destroyed, destroyed + 1);
	assert_contains(last_error, "did not say which GPU");
	device_ordinal = 0;

	size_t full = api.struct_size;
	api.struct_size = offsetof(XlaApi, device_ordinal_get); /* an XLA without the entry */
	assert_non_null(blk_xla_handler_cuda(&c.cf));
	assert_contains(last_error, "too old for blk's handler");
	api.struct_size = full;

	device_ordinal = 5; /* the stand-in has one device */
	assert_non_null(blk_xla_handler_cuda(&c.cf));
	assert_int_equal(last_code, XLA_ERR_INTERNAL);
	device_ordinal = 0;
}

int main(void)
{
	setenv("BLK_LIBCUDA", BLK_FAKE_CUDA, 1);
	setenv("BLK_CACHE", "0", 1);
	setenv("BLK_ARCH", "sm_90a", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_interpret),
		cmocka_unit_test(test_call_errors),
		cmocka_unit_test(test_cuda),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
