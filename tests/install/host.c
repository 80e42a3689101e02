/* host.c - a C program as a user writes it against an installed blk:
 * `cc host.c $(pkg-config --cflags --libs blk)`.  No GPU: an offline runtime,
 * the output's shape inferred, the kernel run in the interpreter, and a
 * compile error's file:line:col message. */
#include <blk.h>
#include <stdio.h>
#include <string.h>

static const char add_src[] =
	"kernel add[B = 4](\n"
	"    x: in  f32[N] block (B) index (i) -> (i),\n"
	"    y: in  f32[N] block (B) index (i) -> (i),\n"
	"    z: out f32[N] block (B) index (i) -> (i),\n"
	") grid (cdiv(N, B)) {\n"
	"    z[...] = x[...] + y[...];\n"
	"}\n";

static int fail(const char *what, BlkRuntime *rt)
{
	printf("FAIL: %s: %s\n", what, blk_runtime_last_error(rt));
	return 1;
}

int main(void)
{
	char err[256];
	BlkRuntime *rt = blk_runtime_create_offline("sm_90a", err, sizeof err);
	if (!rt)
		return printf("FAIL: runtime: %s\n", err), 1;
	BlkProgram *p = blk_program_load_source(rt, "add.blk", add_src, NULL, 0);
	BlkFunc *f = p ? blk_program_kernel(p, NULL) : NULL;
	if (!f)
		return fail("load", rt);
	float x[10], y[10], z[10];
	for (int i = 0; i < 10; i++) {
		x[i] = (float)i;
		y[i] = 0.5f;
	}
	int64_t n = 10;
	BlkTensor t[3] = {blk_tensor_make(x, BLK_DTYPE_F32, 1, &n),
	                  blk_tensor_make(y, BLK_DTYPE_F32, 1, &n), {.data = z, .rank = -1}};
	if (!blk_func_infer_shapes(f, t, 3) || t[2].shape[0] != 10)
		return fail("infer shapes", rt);
	if (!blk_interpret(f, t, 3))
		return fail("interpret", rt);
	for (int i = 0; i < 10; i++)
		if (z[i] != (float)i + 0.5f)
			return printf("FAIL: z[%d] = %g\n", i, z[i]), 1;
	BlkProgram *bad = blk_program_load_source(rt, "bad.blk", "kernel k(x: in f32[N]) {\n  x[...] = ;\n}\n",
	                                          NULL, 0);
	if (bad || !strstr(blk_runtime_last_error(rt), "bad.blk:2:"))
		return fail("want a bad.blk:2: error", rt);
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
	printf("ok: blk %s installed, add ran in the interpreter\n", blk_version());
	return 0;
}
