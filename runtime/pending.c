/* pending.c - weak stand-ins for entry points other stages are still
 * landing (blk_compile_source, blk_bind_sizes, blk_lower_kernel), so that
 * libblk links meanwhile.  The real definitions are strong and replace
 * these; delete this file once all three are in the build. */
#include "rt.h"

__attribute__((weak)) BlkModule *blk_compile_source(BlkArena *a, BlkDiag *d, const BlkSource *src,
                                                    const BlkDefine *defines, int ndefines)
{
	(void)a, (void)defines, (void)ndefines;
	blk_error(d, (BlkLoc){src, 0, 0}, "this libblk was built without the frontend");
	return NULL;
}

__attribute__((weak)) bool blk_bind_sizes(const BlkKernel *k, const BlkArrayDesc *arrays,
                                          int narrays, int64_t *values, BlkDiag *d)
{
	(void)k, (void)arrays, (void)narrays, (void)values;
	blk_error(d, (BlkLoc){0}, "this libblk was built without blk_bind_sizes");
	return false;
}

__attribute__((weak)) bool blk_lower_kernel(BlkArena *a, BlkDiag *d, const BlkKernel *k,
                                            const int64_t *sizes, const BlkArrayDesc *arrays,
                                            const BlkLowerOptions *opt, BlkCompiled *out)
{
	(void)a, (void)k, (void)sizes, (void)arrays, (void)opt, (void)out;
	blk_error(d, (BlkLoc){0}, "this libblk was built without the GPU backend");
	return false;
}
