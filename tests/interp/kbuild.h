/* kbuild.h - building small kernels directly with the IR builder, for the
 * interpreter's unit tests.  Header-only; each test file includes it once. */
#ifndef BLK_TEST_KBUILD_H
#define BLK_TEST_KBUILD_H

#include <string.h>

#include "ir/ir.h"

#define KB_MAX_PARAMS 8

typedef struct KB {
	BlkArena *a;
	BlkDiag *d;
	char *errbuf;
	size_t errlen;
	FILE *errf;
	BlkModule *m;
	BlkKernel *k;
	BlkBuilder b;
	BlkLoc loc;
	BlkValue *ref[KB_MAX_PARAMS]; /* the body's Ref of each param */
} KB;

static inline const BlkSym *kb_c(KB *t, int64_t v)
{
	return blk_sym_const(t->a, v);
}

static inline const BlkSym *kb_v(KB *t, const char *name)
{
	return blk_sym_var(t->a, name);
}

/* A kernel with the given sizes and grid (axes marked seq where seq[i]). */
static inline void kb_init(KB *t, int nsizes, const char **sizes, int grid_rank,
                           const BlkSym **grid, const bool *seq)
{
	memset(t, 0, sizeof *t);
	t->a = blk_arena_create();
	t->errf = open_memstream(&t->errbuf, &t->errlen);
	t->d = blk_diag_create(t->a, t->errf, 0);
	t->m = blk_module_create(t->a);
	t->k = blk_kernel_add(t->m, "t", t->loc);
	t->k->params = BLK_NEW_N(t->a, BlkParam, KB_MAX_PARAMS);
	t->k->nsizes = nsizes;
	t->k->sizes = BLK_NEW_N(t->a, const char *, nsizes + 1);
	for (int i = 0; i < nsizes; i++)
		t->k->sizes[i] = sizes[i];
	t->k->grid_rank = grid_rank;
	for (int i = 0; i < grid_rank; i++) {
		t->k->grid[i] = grid[i];
		t->k->grid_seq[i] = seq && seq[i];
	}
	if (!t->k->body)
		t->k->body = blk_region_create(t->a);
	blk_builder_at_end(&t->b, t->a, t->k->body);
}

static inline void kb_free(KB *t)
{
	fclose(t->errf);
	free(t->errbuf);
	blk_arena_destroy(t->a);
}

/* The diagnostics so far (flushed). */
static inline const char *kb_errors(KB *t)
{
	fflush(t->errf);
	return t->errbuf ? t->errbuf : "";
}

/* Adds a param.  block NULL: the whole array.  imap[d]: the grid axis whose
 * program id is the block index along dim d, or -1 for 0.  squeeze may be
 * NULL. */
static inline BlkValue *kb_param(KB *t, const char *name, BlkAccess acc, BlkDType dt, int rank,
                                 const BlkSym **shape, const BlkSym **block, const int *imap,
                                 const bool *squeeze)
{
	BlkParam *p = &t->k->params[t->k->nparams++];
	p->name = name;
	p->loc = t->loc;
	p->access = acc;
	p->dtype = dt;
	p->rank = rank;
	const BlkSym *bdims[BLK_MAX_RANK];
	int brank = 0;
	for (int d = 0; d < rank; d++) {
		p->shape[d] = shape[d];
		p->block[d] = block ? block[d] : shape[d];
		p->squeezed[d] = squeeze && squeeze[d];
		if (!p->squeezed[d])
			bdims[brank++] = p->block[d];
	}
	if (acc != BLK_ACCESS_SCRATCH) {
		p->index_map = blk_region_create(t->a);
		BlkValue *g[BLK_MAX_RANK], *y[BLK_MAX_RANK];
		for (int i = 0; i < t->k->grid_rank; i++)
			g[i] = blk_region_add_arg(t->a, p->index_map, blk_type_scalar(BLK_I32), NULL);
		BlkBuilder mb;
		blk_builder_at_end(&mb, t->a, p->index_map);
		for (int d = 0; d < rank; d++)
			y[d] = imap && imap[d] >= 0 ? g[imap[d]]
			                            : blk_build_const_int(&mb, t->loc, blk_type_scalar(BLK_I32), 0);
		blk_build(&mb, BLK_OP_YIELD, t->loc, rank, y, 0, NULL, 0);
	}
	BlkSpace sp = acc == BLK_ACCESS_SCRATCH ? BLK_SPACE_SHARED : BLK_SPACE_GLOBAL;
	BlkValue *r = blk_region_add_arg(t->a, t->k->body, blk_type_ref(dt, brank, bdims, sp), name);
	t->ref[t->k->nparams - 1] = r;
	return r;
}

/* ---- op shorthands ---- */

static inline BlkType kb_tile(BlkDType dt, int rank, const BlkSym **dims)
{
	return blk_type_tile(dt, rank, dims);
}

static inline BlkValue *kb_op1(KB *t, BlkOpKind k, BlkType ty, BlkValue *x)
{
	return blk_build1(&t->b, k, t->loc, ty, 1, &x);
}

static inline BlkValue *kb_op2(KB *t, BlkOpKind k, BlkType ty, BlkValue *x, BlkValue *y)
{
	BlkValue *o[2] = { x, y };
	return blk_build1(&t->b, k, t->loc, ty, 2, o);
}

static inline BlkValue *kb_int(KB *t, int64_t v)
{
	return blk_build_const_int(&t->b, t->loc, blk_type_scalar(BLK_I32), v);
}

static inline BlkValue *kb_pid(KB *t, int axis)
{
	BlkValue *v = blk_build1(&t->b, BLK_OP_PROGRAM_ID, t->loc, blk_type_scalar(BLK_I32), 0, NULL);
	blk_op_set_int(t->a, v->def, "axis", axis);
	return v;
}

/* load of the whole ref (no idx attr: every dim `:`) */
static inline BlkValue *kb_load_all(KB *t, BlkValue *ref)
{
	BlkType ty = kb_tile(ref->type.dtype, ref->type.rank, ref->type.dims);
	return kb_op1(t, BLK_OP_LOAD, ty, ref);
}

static inline void kb_store_all(KB *t, BlkValue *ref, BlkValue *v)
{
	BlkValue *o[2] = { ref, v };
	blk_build(&t->b, BLK_OP_STORE, t->loc, 2, o, 0, NULL, 0);
}

static inline BlkDiag *kb_diag(KB *t)
{
	return t->d;
}

#endif
