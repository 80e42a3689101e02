/* compile.c - the whole frontend as one visible pipeline:
 * parse -> check (with -D defines) -> lower to IR -> verify.
 * Each stage reports through the same BlkDiag; the first stage with errors
 * stops the pipeline, so later stages only ever see well-formed input. */
#include "frontend/check.h"

#include <string.h>

/* The dynamic size s uses, or NULL. */
static const char *dynamic_in(const BlkKernel *k, const BlkSym *s)
{
	if (!s || s->kind == BLK_SYM_CONST)
		return NULL;
	if (s->kind == BLK_SYM_VAR) {
		for (int i = 0; k->size_dyn && i < k->nsizes; i++)
			if (k->size_dyn[i] && strcmp(k->sizes[i], s->name) == 0)
				return s->name;
		return NULL;
	}
	const char *n = dynamic_in(k, s->a);
	return n ? n : dynamic_in(k, s->b);
}

/* `dynamic (K)`: K is a kernel argument on the GPU, so no tile's shape
 * may depend on it (Refs and array shapes may).  Said here, at the value,
 * so the interpreter refuses what the GPU would. */
static bool tiles_static(const BlkKernel *k, const BlkRegion *r, BlkDiag *d)
{
	bool ok = true;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		for (int i = 0; i < op->nattrs && ok; i++) /* a view's window too */
			for (int j = 0; op->attrs[i].kind == BLK_ATTR_INDEX && j < op->attrs[i].index.n && ok; j++) {
				const char *n = op->attrs[i].index.v[j].kind == BLK_INDEX_DS
				                ? dynamic_in(k, op->attrs[i].index.v[j].size) : NULL;
				if (n) {
					blk_error(d, op->loc, "this ds size depends on `%s`, which `dynamic (...)` makes "
					          "a run-time value; a window's size must be known when the kernel is "
					          "compiled", n);
					ok = false;
				}
			}
		for (int i = 0; i < op->nresults && ok; i++) {
			const BlkType *t = &op->results[i]->type;
			for (int j = 0; j < t->rank && t->kind == BLK_TYPE_TILE && ok; j++) {
				const char *n = dynamic_in(k, t->dims[j]);
				if (n) {
					blk_error(d, op->loc, "this value's shape depends on `%s`, which `dynamic (...)` "
					          "makes a run-time value; a tile's shape must be known when the kernel "
					          "is compiled (use a block or ds size that is a constant)", n);
					ok = false;
				}
			}
		}
		for (int i = 0; i < op->nregions && ok; i++)
			ok = tiles_static(k, op->regions[i], d);
	}
	return ok;
}

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
	bool ok = true;
	for (const BlkKernel *k = m->first; k; k = k->next)
		ok &= tiles_static(k, k->body, d);
	return ok && blk_ir_verify(m, d, "frontend") ? m : NULL;
}
