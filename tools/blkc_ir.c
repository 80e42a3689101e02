/* blkc_ir.c - blkc --from-ir FILE [--pass=NAME] [--emit=llvm|ptx] [SIZE=VALUE...]:
 * IR text in.
 *
 * Reads the IR's textual form (docs/ir.md), verifies it, runs the one IR
 * pass asked for on the chosen kernel and prints the kernel after it --
 * or, with --emit=llvm|ptx, the LLVM IR or PTX the backend makes of it
 * (the IR as smem-plan leaves it, launch header included) -- so each pass
 * and each emitter is tested from text alone (the .ir files of
 * tests/lower).  The passes that read the launch sizes (specialize) take
 * them as usual.
 */
#include "blkc.h"
#include "lower/lower.h"

/* sizes and arrays from the bindings (a kernel with no sizes needs none:
 * its arrays are the params' shapes, contiguous), with *given = false when
 * there are none (a pass that needs them says so). */
static bool bind(const BlkcOptions *o, const BlkKernel *k, int64_t *sizes, BlkArrayDesc *arrays,
                 bool *given, BlkDiag *d)
{
	*given = o->nbindings > 0 || k->nsizes == 0;
	if (!*given)
		return true;
	if (!blkc_kernel_fits(k, d))
		return false;
	if (!blkc_sizes_from_bindings(k, o, sizes, d))
		return false;
	int n = blkc_array_descs(k, sizes, arrays, d);
	return n >= 0 && blk_bind_sizes(k, arrays, n, sizes, d);
}

int blkc_from_ir(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkSource *src)
{
	BlkModule *m = blk_ir_parse(a, d, src);
	if (!m || !blk_ir_verify(m, d, "parse"))
		return BLKC_ERROR;
	BlkKernel *k = blkc_pick_kernel(m, o, d);
	if (!k)
		return BLKC_ERROR;
	int64_t sizes[BLK_MAX_SIZES];
	BlkArrayDesc arrays[BLK_MAX_PARAMS];
	bool given;
	if (!bind(o, k, sizes, arrays, &given, d))
		return BLKC_ERROR;
	BlkLowerOptions lo = { .arch = o->arch, .want_llvm = o->emit == EMIT_LLVM };
	if (o->pass && !blk_lower_run_pass(a, d, m, k, o->pass, given ? sizes : NULL,
	                                   given ? arrays : NULL, &lo))
		return BLKC_ERROR;
	BlkCompiled c;
	bool code = o->emit == EMIT_LLVM || o->emit == EMIT_PTX;
	if (code && !blk_lower_emit_kernel(a, d, m, k, &lo, &c))
		return BLKC_ERROR;
	FILE *f = blkc_open_output(o, d);
	if (!f)
		return BLKC_ERROR;
	if (code)
		fputs(o->emit == EMIT_LLVM ? c.llvm_ir : c.ptx, f);
	else
		blk_ir_print_kernel(f, k);
	return blkc_close_output(f, o, d) ? BLKC_OK : BLKC_ERROR;
}
