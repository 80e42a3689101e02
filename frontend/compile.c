/* compile.c - the whole frontend as one visible pipeline:
 * parse -> check (with -D defines) -> lower to IR -> verify.
 * Each stage reports through the same BlkDiag; the first stage with errors
 * stops the pipeline, so later stages only ever see well-formed input. */
#include "frontend/check.h"

BlkModule *blk_compile_source(BlkArena *a, BlkDiag *d, const BlkSource *src,
                              const BlkDefine *defines, int ndefines)
{
	struct BlkAstFile *f = blk_parse(a, d, src);
	if (!f)
		return NULL;
	BlkCkFile *cf = blk_check_file(a, d, f, defines, ndefines);
	if (!cf)
		return NULL;
	BlkModule *m = blk_lower_ast(a, cf);
	return blk_ir_verify(m, d, "frontend") ? m : NULL;
}
