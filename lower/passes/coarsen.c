/* coarsen.c - neighbouring programs merged into one: small blocks of a
 * tensor-core dot run as the tile the tensor cores want.
 *
 * Requires: block refs lowered (blockspec.c), shapes and the grid
 * constant.  A 64 x 64 block of `x @ W` reads its A rows and B columns
 * from L2 once per program: at 4096^3 that is 4 GB, and L2's bandwidth
 * holds such a kernel at 0.4 of cuBLAS whatever the schedule (gpu-notes
 * runs 138, 175).  Two programs side by side along a grid axis whose
 * blocks are adjacent along that axis compute exactly what one program of
 * twice the block computes there, if nothing in the body depends on the
 * block's extent along it.  This pass finds such axes and merges f
 * programs of each into one (f = 2 or 4), so a 64 x 64 config runs as
 * 128 x 128 tiles.
 *
 * The analysis unifies the dims of every tile and Ref of the body
 * (union-find over (value, dim)): an elementwise op's operands and result
 * share each dim, a dot's rows follow its lhs and its columns its rhs, a
 * loop's carry its init, body arg, yield and result, a load's FULL dims
 * its Ref's.  A block_ref's dim whose start is program_id(a) * C, C the
 * block's extent there, is "axis a's"; any other block dim is fixed.  Dims
 * whose values depend on their extent are fixed too: a reduction's or
 * scan's axis, an iota's, a dot's K, a ds or scalar index into a Ref dim,
 * a reshape's, an extract's, a gathered access's, a flipped transpose's,
 * a printed tile's, a scratch buffer's and every dim of extent 1 -- but
 * an iota in Triton's row index program_id(a) * C + iota(C) is axis a's,
 * as a block's dim: those are the block's rows, merged or not.  Axis a
 * can merge when every use of its program id is such a block start, it
 * has no num_programs, its extent is a multiple of f (or at least f, its
 * blocks read and written by loads and stores directly: see
 * direct_only), and no class of dims holds both axis a's dims and a fixed
 * dim or another axis's.
 *
 * Applies on sm_90a (wgmma) to a kernel with a dot of 16-bit or 8-bit
 * operands whose result's rows (columns) are one axis's dims, shorter
 * than TARGET_M (TARGET_N): that axis merges toward it, while the merged
 * programs still fill the GPU's SMs, the dots' accumulators fit ACC_REGS
 * a thread and their slabs, num_stages deep, fit the shared memory
 * beside the epilogue's staging (the columns give way first).  Not where a dot in a loop starts afresh each
 * iteration (attention's scores): BQ 64 -> 128 at BK 64 was 14% slower
 * at D = 64 (27% faster at D = 128; gpu-notes run 193), and attention's
 * plain programs at 64 rows already share K and V in L2.
 * num_warps grows with the merge (up to 8): the threads that ran the
 * programs run the merged one.  Without a merge, num_warps grows where
 * the accumulators would not fit ACC_REGS a thread (widen).  Produces the same kernel with the merged
 * block sizes: the block_refs' starts program_id * (f C), every unified
 * dim times f, the params' blocks, the grid's extent / f, and the launch
 * header's `merge f` on each merged axis (`axes (x merge 2, y merge 4)`),
 * which --report prints.  Measured (run 193, bf16 4096^3, H200): the
 * habitual 64 x 64 x 32 config from 0.40 to 0.90 of cuBLAS.
 */
#include "lower/lower_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
	TARGET_M = 128, /* the tile of blk's best matmul config: 128 x 256 on 8 warps */
	TARGET_N = 256,
	MAX_FACTOR = 4,
	MAX_WARPS = 8,
	ACC_REGS = 128, /* f32 accumulator elements a thread, all dots together, after the merge */
	/* beside the merged dots' slabs times num_stages, the epilogue's
	 * staging (a 128 x 256 bf16 tile) under the CTA's most */
	EPILOGUE_BYTES = 64 * 1024,
	MAX_DOTS = 8,
};

enum { FIXED = 1 }; /* a class's flags: FIXED, then one bit per grid axis (2 << a) */

typedef struct Uf {
	BlkPtrMap base;  /* value -> index of its dim 0's node, plus one */
	BlkPtrMap used;  /* value -> non-NULL: an op that is not dead reads it */
	BlkPtrMap dead;  /* op -> non-NULL: pure, and nothing reads its results */
	BlkPtrMap uses;  /* value -> its live uses, plus one */
	BlkPtrMap rows;  /* iota or broadcast value -> its uses in Triton's row index, plus one */
	int n, cap;
	int *up;         /* parent */
	unsigned *flags; /* a root's */
	bool bail;       /* something the pass does not know: no merge at all */
	BlkArena *a;
	const BlkKernel *k;
	/* per grid axis: its program id feeds block starts only */
	bool ok[BLK_MAX_GRID];
	int64_t factor[BLK_MAX_GRID];
	const BlkOp *dot[MAX_DOTS];
	int ndots;
} Uf;

static int node(Uf *u, const BlkValue *v, int d)
{
	if (d >= v->type.rank)
		return -1;
	intptr_t b = (intptr_t)blk_pmap_get(&u->base, v);
	if (!b) {
		if (u->n + v->type.rank > u->cap) {
			u->cap = 2 * u->cap + v->type.rank + 64;
			u->up = realloc(u->up, (size_t)u->cap * sizeof *u->up);
			u->flags = realloc(u->flags, (size_t)u->cap * sizeof *u->flags);
			if (!u->up || !u->flags)
				abort();
		}
		b = u->n + 1;
		for (int i = 0; i < v->type.rank; i++) {
			u->up[u->n + i] = u->n + i;
			int64_t e;
			u->flags[u->n + i] = blk_sym_is_const(v->type.dims[i], &e) && e > 1 ? 0 : FIXED;
		}
		u->n += v->type.rank;
		blk_pmap_put(u->a, &u->base, v, (void *)b);
	}
	return (int)b - 1 + d;
}

static int root(Uf *u, int x)
{
	while (u->up[x] != x)
		x = u->up[x] = u->up[u->up[x]];
	return x;
}

static void unite(Uf *u, int x, int y)
{
	if (x < 0 || y < 0)
		return;
	x = root(u, x), y = root(u, y);
	if (x != y)
		u->up[y] = x, u->flags[x] |= u->flags[y];
}

static void mark(Uf *u, int x, unsigned f)
{
	if (x >= 0)
		u->flags[root(u, x)] |= f;
}

static void fix_all(Uf *u, const BlkValue *v)
{
	for (int d = 0; d < v->type.rank; d++)
		mark(u, node(u, v, d), FIXED);
}

static void same_dims(Uf *u, const BlkValue *x, const BlkValue *y)
{
	if (x->type.rank != y->type.rank) {
		fix_all(u, x), fix_all(u, y);
		return;
	}
	for (int d = 0; d < x->type.rank; d++)
		unite(u, node(u, x, d), node(u, y, d));
}

static void fix_op(Uf *u, const BlkOp *op)
{
	for (int i = 0; i < op->noperands; i++)
		fix_all(u, op->operands[i]);
	for (int i = 0; i < op->nresults; i++)
		fix_all(u, op->results[i]);
}

/* A Ref access (load, store, view, ...): the Ref's FULL dims are the
 * tile's (or the view's) in order; a ds or scalar index fixes its dim. */
static void access(Uf *u, const BlkOp *op, const BlkValue *ref, const BlkValue *tile)
{
	if (blk_op_gathers(op)) {
		fix_op(u, op);
		return;
	}
	const BlkAttr *idx = blk_op_attr(op, "idx");
	int td = 0;
	for (int d = 0; d < ref->type.rank; d++) {
		BlkIndexKind kind = idx && d < idx->index.n ? idx->index.v[d].kind : BLK_INDEX_FULL;
		if (kind == BLK_INDEX_SCALAR) {
			mark(u, node(u, ref, d), FIXED);
			continue;
		}
		int t = tile ? node(u, tile, td++) : -1;
		if (kind == BLK_INDEX_FULL)
			unite(u, node(u, ref, d), t);
		else
			mark(u, node(u, ref, d), FIXED), mark(u, t, FIXED);
	}
	if (tile && td != tile->type.rank && tile->type.rank)
		fix_all(u, tile); /* a value of another rank than the access (not after the frontend) */
}

/* i is program_id(a) * C: the axis and C. */
static bool pid_times(const BlkValue *v, int *axis, int64_t *C)
{
	const BlkOp *m = v->def;
	if (!m || m->kind != BLK_OP_MUL || v->type.rank)
		return false;
	for (int i = 0; i < 2; i++) {
		const BlkOp *p = m->operands[i]->def;
		if (p && p->kind == BLK_OP_PROGRAM_ID && blk_lower_const_int(m->operands[1 - i], C)) {
			*axis = (int)blk_op_int(p, "axis", -1);
			return *axis >= 0 && *axis < BLK_MAX_GRID;
		}
	}
	return false;
}

static void block_ref(Uf *u, const BlkOp *op)
{
	int pi = (int)blk_op_int(op, "param", -1);
	if (pi < 0 || pi >= u->k->nparams) {
		u->bail = true;
		return;
	}
	const BlkParam *p = &u->k->params[pi];
	const BlkValue *r = op->results[0];
	same_dims(u, r, u->k->body->args[pi]);
	for (int d = 0, rd = 0; d < p->rank && d < op->noperands; d++) {
		int axis;
		int64_t C, e;
		bool pid = pid_times(op->operands[d], &axis, &C);
		if (p->squeezed[d]) {
			if (pid) /* one block of extent 1 a program: the axis cannot merge */
				u->ok[axis] = false;
			continue;
		}
		bool seed = pid && blk_sym_is_const(r->type.dims[rd], &e) && e == C;
		if (pid && !seed) /* a start that is not the block's own: (2i) * BM */
			u->ok[axis] = false;
		mark(u, node(u, r, rd), seed ? 2u << axis : FIXED);
		rd++;
	}
}

static void reduce_like(Uf *u, const BlkOp *op, bool keeps_axis)
{
	const BlkValue *x = op->operands[0], *y = op->results[0];
	int axis = (int)blk_op_int(op, "axis", -1);
	if (axis < 0 || axis >= x->type.rank) {
		fix_op(u, op);
		return;
	}
	mark(u, node(u, x, axis), FIXED);
	for (int d = 0, e = 0; d < x->type.rank; d++) {
		if (d == axis && !keeps_axis)
			continue;
		unite(u, node(u, x, d), node(u, y, e++));
	}
}

static void row_index(Uf *u, const BlkOp *op);

static void bump(Uf *u, BlkPtrMap *m, const BlkValue *v)
{
	blk_pmap_put(u->a, m, v, (void *)((intptr_t)blk_pmap_get(m, v) + 1));
}

/* Dead ops -- what canonicalize's folds left behind, as attention's
 * causal rows when CAUSAL is false -- ask nothing of the block: marked,
 * last first, in one walk (a use comes after its def or inside a later
 * op's region). */
static void mark_dead(Uf *u, const BlkRegion *r)
{
	for (const BlkOp *op = r->last; op; op = op->prev) {
		bool live = !(blk_op_flags(op->kind) & BLK_OPF_PURE) || op->nregions;
		for (int i = 0; !live && i < op->nresults; i++)
			live = blk_pmap_get(&u->used, op->results[i]) != NULL;
		if (!live) {
			blk_pmap_put(u->a, &u->dead, op, (void *)op);
			continue;
		}
		row_index(u, op);
		for (int i = 0; i < op->nregions; i++)
			mark_dead(u, op->regions[i]);
		for (int i = 0; i < op->noperands; i++) {
			blk_pmap_put(u->a, &u->used, op->operands[i], (void *)op);
			bump(u, &u->uses, op->operands[i]);
		}
	}
}

/* Triton's row index, program_id(a) * C + iota(C) (an iota along a dim
 * of extent C, the other operand the product broadcast): its values are
 * the rows of program a's block, and of the merged block once both C's
 * scale.  Counts each such add's iota and broadcast in u->rows. */
static void row_index(Uf *u, const BlkOp *op)
{
	int axis;
	int64_t C;
	for (int i = 0; op->kind == BLK_OP_ADD && i < 2; i++) {
		const BlkOp *io = op->operands[i]->def, *br = op->operands[1 - i]->def;
		if (!io || io->kind != BLK_OP_IOTA || !br || br->kind != BLK_OP_BROADCAST ||
		    !pid_times(br->operands[0], &axis, &C))
			continue;
		int d = (int)blk_op_int(io, "axis", -1);
		int64_t e;
		if (d >= 0 && d < io->results[0]->type.rank && blk_sym_is_const(io->results[0]->type.dims[d], &e) && e == C) {
			bump(u, &u->rows, io->results[0]);
			bump(u, &u->rows, br->results[0]);
		}
	}
}

/* v's uses are all Triton row indices (row_index). */
static bool only_rows(const Uf *u, const BlkValue *v)
{
	return blk_pmap_get(&u->rows, v) == blk_pmap_get(&u->uses, v);
}

static void visit_region(Uf *u, const BlkRegion *r);

static void visit(Uf *u, const BlkOp *op)
{
	const BlkValue *res = op->nresults ? op->results[0] : NULL;
	unsigned fl = blk_op_flags(op->kind);
	switch (op->kind) {
	case BLK_OP_CONST: case BLK_OP_SIZE: case BLK_OP_PROGRAM_ID: case BLK_OP_NUM_PROGRAMS:
	case BLK_OP_YIELD:
		return;
	case BLK_OP_IOTA: {
		int axis = -1;
		int64_t C;
		const BlkOp *use = blk_pmap_get(&u->used, res);
		if (only_rows(u, res) && use)  /* a row index: the dim is the axis's, as a block's */
			for (int i = 0; i < 2 && axis < 0; i++)
				if (use->operands[i]->def && use->operands[i]->def->kind == BLK_OP_BROADCAST)
					pid_times(use->operands[i]->def->operands[0], &axis, &C);
		mark(u, node(u, res, (int)blk_op_int(op, "axis", 0)), axis >= 0 ? 2u << axis : FIXED);
		return;
	}
	case BLK_OP_BLOCK_REF:
		block_ref(u, op);
		return;
	case BLK_OP_BROADCAST: {
		const BlkValue *x = op->operands[0];
		for (int i = 0; i < x->type.rank; i++) {
			int j = res->type.rank - x->type.rank + i;
			if (j >= 0 && blk_sym_equal(x->type.dims[i], res->type.dims[j]))
				unite(u, node(u, x, i), node(u, res, j));
		}
		return;
	}
	case BLK_OP_EXPAND_DIMS: {
		int axis = (int)blk_op_int(op, "axis", -1);
		for (int d = 0, e = 0; d < res->type.rank; d++)
			if (d != axis)
				unite(u, node(u, op->operands[0], e++), node(u, res, d));
		return;
	}
	case BLK_OP_TRANSPOSE: {
		int perm[BLK_MAX_RANK], flip = blk_transpose_flip(op);
		if (!blk_transpose_perm(op, res->type.rank, perm)) {
			fix_op(u, op);
			return;
		}
		for (int d = 0; d < res->type.rank; d++) {
			unite(u, node(u, op->operands[0], perm[d]), node(u, res, d));
			if (flip >> d & 1)
				mark(u, node(u, res, d), FIXED);
		}
		return;
	}
	case BLK_OP_REDUCE_SUM: case BLK_OP_REDUCE_MAX: case BLK_OP_REDUCE_MIN:
	case BLK_OP_REDUCE_ARGMAX: case BLK_OP_REDUCE_ARGMIN:
		reduce_like(u, op, false);
		return;
	case BLK_OP_SCAN_SUM: case BLK_OP_SCAN_PROD: case BLK_OP_SCAN_MAX: case BLK_OP_SCAN_MIN:
		reduce_like(u, op, true);
		return;
	case BLK_OP_SCAN:
		for (int i = 0; i < op->noperands; i++) {
			same_dims(u, op->operands[0], op->operands[i]);
			same_dims(u, op->operands[i], op->results[i]);
		}
		mark(u, node(u, op->operands[0], (int)blk_op_int(op, "axis", 0)), FIXED);
		return;
	case BLK_OP_DOT: {
		const BlkValue *x = op->operands[0], *y = op->operands[1];
		if (x->type.rank != 2 || y->type.rank != 2 || res->type.rank != 2) {
			fix_op(u, op);
			return;
		}
		unite(u, node(u, x, 0), node(u, res, 0));
		unite(u, node(u, y, 1), node(u, res, 1));
		unite(u, node(u, x, 1), node(u, y, 0));
		mark(u, node(u, x, 1), FIXED);
		if (op->noperands > 2)
			same_dims(u, op->operands[2], res);
		return;
	}
	case BLK_OP_LOAD: case BLK_OP_VIEW:
		access(u, op, op->operands[0], res);
		return;
	case BLK_OP_STORE: case BLK_OP_ATOMIC_ADD: case BLK_OP_ATOMIC_MAX: case BLK_OP_ATOMIC_MIN:
	case BLK_OP_ATOMIC_CAS:
		access(u, op, op->operands[0], op->operands[op->noperands - 1]);
		return;
	case BLK_OP_SWAP:
		access(u, op, op->operands[0], op->operands[op->noperands - 1]);
		same_dims(u, op->operands[op->noperands - 1], res);
		return;
	case BLK_OP_FOR: {
		const BlkRegion *body = op->regions[0];
		const BlkOp *y = body->last;
		for (int i = 0; i < op->nresults; i++) {
			same_dims(u, op->operands[3 + i], body->args[1 + i]);
			same_dims(u, op->operands[3 + i], op->results[i]);
			if (y && y->kind == BLK_OP_YIELD && i < y->noperands)
				same_dims(u, op->operands[3 + i], y->operands[i]);
		}
		visit_region(u, body);
		return;
	}
	case BLK_OP_IF:
		for (int i = 0; i < op->nregions; i++)
			visit_region(u, op->regions[i]);
		return;
	case BLK_OP_SCOPED:
		for (int i = 0; i < op->regions[0]->nargs; i++)
			fix_all(u, op->regions[0]->args[i]);
		visit_region(u, op->regions[0]);
		return;
	default:
		break;
	}
	if ((fl & BLK_OPF_ELEMENTWISE) && res) {
		for (int i = 0; i < op->noperands; i++)
			if (op->operands[i]->type.rank)
				same_dims(u, op->operands[i], res);
		return;
	}
	if (op->nregions)
		u->bail = true; /* a region the rules above do not know */
	fix_op(u, op);
}

static void visit_region(Uf *u, const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next)
		if (!blk_pmap_get(&u->dead, op))
			visit(u, op);
}

/* Every use of program_id(a) is program_id(a) * C, every use of that a
 * block start; num_programs(a) is not asked. */
static void check_pids(Uf *u, const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		if (blk_pmap_get(&u->dead, op))
			continue;
		if (op->kind == BLK_OP_NUM_PROGRAMS) {
			int a = (int)blk_op_int(op, "axis", -1);
			if (a >= 0 && a < BLK_MAX_GRID)
				u->ok[a] = false;
		}
		for (int i = 0; i < op->noperands; i++) {
			const BlkValue *v = op->operands[i];
			const BlkOp *d = v->def;
			int axis;
			int64_t C;
			if (d && d->kind == BLK_OP_PROGRAM_ID) {
				int a = (int)blk_op_int(d, "axis", -1);
				if (a >= 0 && a < BLK_MAX_GRID && !(op->kind == BLK_OP_MUL && pid_times(op->results[0], &axis, &C)))
					u->ok[a] = false;
			} else if (pid_times(v, &axis, &C) && op->kind != BLK_OP_BLOCK_REF &&
			           !(op->kind == BLK_OP_BROADCAST && only_rows(u, op->results[0]))) {
				u->ok[axis] = false;
			}
		}
		for (int i = 0; i < op->nregions; i++)
			check_pids(u, op->regions[i]);
	}
}

/* The dots of 16-bit or 8-bit operands (up to MAX_DOTS; more: *fresh,
 * no merge) and the one whose accumulator is largest.  *fresh: a dot in a
 * loop starts from zero each iteration (attention's scores), not a GEMM's
 * accumulation. */
static void dots(Uf *u, const BlkRegion *r, bool in_loop, const BlkOp **big, bool *fresh)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		if (op->kind == BLK_OP_DOT && in_loop && op->noperands < 3)
			*fresh = true;
		if (op->kind == BLK_OP_DOT && op->results[0]->type.rank == 2 &&
		    blk_dtype_size(op->operands[0]->type.dtype) <= 2) {
			if (u->ndots == MAX_DOTS)
				*fresh = true;
			else
				u->dot[u->ndots++] = op;
			int64_t m = blk_lower_dim(op->results[0]->type.dims[0]), n = blk_lower_dim(op->results[0]->type.dims[1]);
			if (!*big || m * n > blk_lower_dim((*big)->results[0]->type.dims[0]) *
			                     blk_lower_dim((*big)->results[0]->type.dims[1]))
				*big = op;
		}
		for (int i = 0; i < op->nregions; i++)
			dots(u, op->regions[i], in_loop || op->kind == BLK_OP_FOR, big, fresh);
	}
}

/* The one grid axis a class of dims belongs to, or -1 (none, fixed, or
 * several). */
static int class_axis(Uf *u, int x)
{
	unsigned f = x >= 0 ? u->flags[root(u, x)] : FIXED;
	if (f & FIXED)
		return -1;
	f >>= 1;
	if (!f || (f & (f - 1)))
		return -1;
	int a = 0;
	while (!(f >> a & 1))
		a++;
	return a;
}

/* A class holding axis a's dims and a fixed dim or another axis's rules
 * axis a out. */
static void check_classes(Uf *u)
{
	for (int x = 0; x < u->n; x++) {
		if (u->up[x] != x)
			continue;
		unsigned f = u->flags[x];
		unsigned axes = f >> 1;
		if ((f & FIXED) || (axes & (axes - 1)))
			for (int a = 0; a < BLK_MAX_GRID; a++)
				if (axes >> a & 1)
					u->ok[a] = false;
	}
}

/* The warps of a program that runs f of the source's: theirs, to MAX_WARPS
 * (never fewer than the source's). */
static int merged_warps(const BlkKernel *k, int64_t f)
{
	int w = k->num_warps ? k->num_warps : 4;
	return w * f < MAX_WARPS ? (int)(w * f) : (w > MAX_WARPS ? w : MAX_WARPS);
}

/* The dots' accumulator elements and the bytes of one stage of their
 * operands, at the factors chosen so far. */
static void merged_work(Uf *u, int64_t *acc, int64_t *slab)
{
	*acc = *slab = 0;
	for (int i = 0; i < u->ndots; i++) {
		const BlkValue *x = u->dot[i]->operands[0], *r = u->dot[i]->results[0];
		int64_t f[2];
		for (int d = 0; d < 2; d++) {
			int a = class_axis(u, node(u, r, d));
			f[d] = a >= 0 ? u->factor[a] : 1;
		}
		int64_t M = blk_lower_dim(r->type.dims[0]) * f[0], N = blk_lower_dim(r->type.dims[1]) * f[1];
		int64_t K = blk_lower_dim(x->type.dims[1]);
		*acc += M * N;
		bool shares[2] = { false, false }; /* SwiGLU's x: one slab for both dots */
		for (int j = 0; j < i; j++)
			for (int o = 0; o < 2; o++)
				shares[o] |= u->dot[j]->operands[o] == u->dot[i]->operands[o];
		*slab += ((shares[0] ? 0 : M) + (shares[1] ? 0 : N)) * K * blk_dtype_size(x->type.dtype);
	}
}

/* The factors: the big dot's rows' and columns' axes toward TARGET_M and
 * TARGET_N. */
/* ---- an extent that is no multiple of the factor ---------------------------- */

/* Axis a may merge f programs whose extent is no multiple of f: the last
 * merged program then also covers blocks past the grid, which lie past the
 * array (a block's start is at least the extent times its C, which covers
 * the array), so each access to an axis-a block checks that dim (masks, in
 * rewrite).  That needs every block_ref with an axis-a start read by loads
 * and stores of it directly, whose mask attrs say which dims are checked. */
static bool direct_only(const BlkRegion *r, const BlkValue *ref)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			if (!direct_only(op->regions[i], ref))
				return false;
		bool access = op->kind == BLK_OP_LOAD || op->kind == BLK_OP_STORE || op->kind == BLK_OP_SWAP ||
		              blk_op_is_atomic(op->kind);
		for (int i = 0; i < op->noperands; i++)
			if (op->operands[i] == ref && (!access || i != 0))
				return false;
	}
	return true;
}

static void ragged_ok(Uf *u, const BlkRegion *r, bool *ok)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			ragged_ok(u, op->regions[i], ok);
		if (op->kind != BLK_OP_BLOCK_REF)
			continue;
		for (int d = 0; d < op->noperands; d++) {
			int axis;
			int64_t C;
			if (pid_times(op->operands[d], &axis, &C) && !direct_only(u->k->body, op->results[0]))
				ok[axis] = false;
		}
	}
}

/* Mask bit `at` of op's attr mask set (a dim checked). */
static void check_dim(BlkArena *a, BlkOp *op, int at)
{
	const BlkAttr *m = blk_op_attr(op, "mask");
	if (!m || m->kind != BLK_ATTR_STRING || at >= (int)strlen(m->s))
		return;
	char *s = blk_arena_strdup(a, m->s);
	s[at] = '1';
	blk_op_set_string(a, op, "mask", s);
}

/* Every access of ref (operand 0, direct_only) checks its dim rd. */
static void mask_accesses(BlkRegion *r, const BlkValue *ref, int rd, BlkArena *a)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			mask_accesses(op->regions[i], ref, rd, a);
		if (op->noperands > 0 && op->operands[0] == ref && op->kind != BLK_OP_BLOCK_REF)
			check_dim(a, op, rd);
	}
}

/* For each block_ref with a start on a ragged axis (its extent no multiple
 * of its factor): that dim checked, in it and in every access of it. */
static void mask_ragged(Uf *u, BlkRegion *r, const bool *ragged)
{
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			mask_ragged(u, op->regions[i], ragged);
		if (op->kind != BLK_OP_BLOCK_REF)
			continue;
		const BlkParam *p = &u->k->params[blk_op_int(op, "param", 0)];
		for (int d = 0, rd = 0; d < p->rank && d < op->noperands; d++) {
			int axis;
			int64_t C;
			if (p->squeezed[d])
				continue;
			if (pid_times(op->operands[d], &axis, &C) && ragged[axis]) {
				check_dim(u->a, op, d);
				mask_accesses(u->k->body, op->results[0], rd, u->a);
			}
			rd++;
		}
	}
}

static bool choose(LowerCtx *c, Uf *u, const BlkOp *dot)
{
	BlkKernel *k = c->k;
	int64_t ext[BLK_MAX_GRID];
	bool ragged[BLK_MAX_GRID];
	for (int a = 0; a < k->grid_rank; a++) {
		u->factor[a] = 1;
		ragged[a] = true;
		if (!blk_sym_is_const(k->grid[a], &ext[a]))
			return false;
	}
	ragged_ok(u, k->body, ragged);
	const BlkValue *r = dot->results[0];
	int ax[2] = { class_axis(u, node(u, r, 0)), class_axis(u, node(u, r, 1)) };
	for (int i = 0; i < 2; i++) {
		int a = ax[i];
		if (a < 0 || a >= k->grid_rank || !u->ok[a] || k->grid_seq[a] || (i == 1 && a == ax[0]))
			continue;
		int64_t e = blk_lower_dim(r->type.dims[i]), f = 1;
		int64_t target = i ? TARGET_N : TARGET_M;
		while (e * f * 2 <= target && f * 2 <= MAX_FACTOR && ext[a] >= f * 2 && (ext[a] % (f * 2) == 0 || ragged[a]))
			f *= 2;
		u->factor[a] = f;
	}
	bool residual = blk_lower_epilogue_tile(k, blk_lower_dim(r->type.dims[0]) * blk_lower_dim(r->type.dims[1]));
	for (;;) {
		int64_t f = 1, programs = 1;
		for (int a = 0; a < k->grid_rank; a++) {
			f *= u->factor[a];
			/* (a seq axis is a loop in each program) */
			programs *= k->grid_seq[a] ? 1 : (ext[a] + u->factor[a] - 1) / u->factor[a];
		}
		if (f == 1)
			return false;
		int64_t acc, slab;
		merged_work(u, &acc, &slab);
		int stages = k->num_stages > 2 ? k->num_stages : 2;
		/* the epilogue's staging; an epilogue that loads a tile as large (a
		 * residual) meets the accumulators there in f32 (schedule.c) */
		int64_t epilogue = residual && acc * 4 > EPILOGUE_BYTES ? acc * 4 : EPILOGUE_BYTES;
		if (programs >= blk_lower_sms(c) && acc <= ACC_REGS * 32 * merged_warps(k, f) &&
		    slab * stages + epilogue <= blk_lower_arch_smem(c->arch))
			return true;
		int big = -1; /* halve the largest factor, the columns' first */
		for (int i = 1; i >= 0; i--)
			if (ax[i] >= 0 && u->factor[ax[i]] > 1 && (big < 0 || u->factor[ax[i]] > u->factor[big]))
				big = ax[i];
		u->factor[big] /= 2;
	}
}

/* ---- the rewrite ---------------------------------------------------------- */

static void scale_value(Uf *u, BlkValue *v)
{
	intptr_t b = (intptr_t)blk_pmap_get(&u->base, v);
	if (!b)
		return;
	for (int d = 0; d < v->type.rank; d++) {
		int a = class_axis(u, (int)b - 1 + d);
		if (a >= 0 && u->factor[a] > 1)
			v->type.dims[d] = blk_sym_const(u->a, blk_lower_dim(v->type.dims[d]) * u->factor[a]);
	}
}

static void scale_region(Uf *u, BlkRegion *r, BlkLoc loc)
{
	for (int i = 0; i < r->nargs; i++)
		scale_value(u, r->args[i]);
	for (BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			scale_value(u, op->results[i]);
		int axis;
		int64_t C;
		if (op->kind == BLK_OP_MUL && pid_times(op->results[0], &axis, &C) && u->factor[axis] > 1) {
			/* program_id * C becomes program_id * (f C): the merged block's start */
			BlkBuilder b;
			blk_builder_before(&b, u->a, op);
			int ci = op->operands[0]->def->kind == BLK_OP_PROGRAM_ID ? 1 : 0;
			op->operands[ci] = blk_lower_i32(&b, loc, C * u->factor[axis]);
		}
		if (op->kind == BLK_OP_BLOCK_REF) {
			BlkParam *p = &u->k->params[blk_op_int(op, "param", 0)];
			const BlkValue *res = op->results[0];
			for (int d = 0, rd = 0; d < p->rank; d++)
				if (!p->squeezed[d])
					p->block[d] = res->type.dims[rd++];
		}
		for (int i = 0; i < op->nregions; i++)
			scale_region(u, op->regions[i], loc);
	}
}

/* The dead ops go: their types were never unified, so would not scale. */
static void erase_dead(Uf *u, BlkRegion *r)
{
	for (BlkOp *op = r->last, *prev; op; op = prev) {
		prev = op->prev;
		if (blk_pmap_get(&u->dead, op))
			blk_op_erase(op);
		else
			for (int i = 0; i < op->nregions; i++)
				erase_dead(u, op->regions[i]);
	}
}

static void rewrite(LowerCtx *c, Uf *u)
{
	BlkKernel *k = c->k;
	BlkLaunch *l = blk_lower_launch(c);
	erase_dead(u, k->body);
	scale_region(u, k->body, k->loc);
	int64_t f = 1;
	bool ragged[BLK_MAX_GRID] = { false };
	for (int a = 0; a < k->grid_rank; a++)
		ragged[a] = u->factor[a] > 1 && blk_lower_dim(k->grid[a]) % u->factor[a] != 0;
	mask_ragged(u, k->body, ragged);
	for (int a = 0; a < k->grid_rank; a++) {
		if (u->factor[a] <= 1)
			continue;
		f *= u->factor[a];
		int64_t e = (blk_lower_dim(k->grid[a]) + u->factor[a] - 1) / u->factor[a];
		k->grid[a] = blk_sym_const(c->a, e);
		l->grid[l->axis[a]] = k->grid[a];
		l->merge[a] = (int)u->factor[a];
	}
	k->num_warps = merged_warps(k, f);
	c->nthreads = k->num_warps * 32;
	l->threads = c->nthreads;
}

/* No merge: where the dots' accumulators need more than ACC_REGS f32
 * registers a thread at the kernel's num_warps (a 128 x 256 tile on 4
 * warps: 256 a thread, which spilled and ran at 0.05 of cuBLAS, gpu-notes
 * run 218), the program gets the warps to hold them, to MAX_WARPS: the
 * threads split the tile (on 8 warps, 0.93).  No value changes. */
static void widen(LowerCtx *c, Uf *u)
{
	BlkKernel *k = c->k;
	int64_t acc = 0;
	for (int i = 0; i < u->ndots; i++)
		acc += blk_lower_dim(u->dot[i]->results[0]->type.dims[0]) * blk_lower_dim(u->dot[i]->results[0]->type.dims[1]);
	int w = blk_lower_widened_warps(k->num_warps ? k->num_warps : 4, acc);
	if (w == (k->num_warps ? k->num_warps : 4))
		return;
	k->num_warps = w;
	c->nthreads = w * 32;
	blk_lower_launch(c)->threads = c->nthreads;
}

int blk_lower_widened_warps(int warps, int64_t acc)
{
	while (warps < MAX_WARPS && acc > (int64_t)ACC_REGS * 32 * warps)
		warps *= 2;
	return warps;
}

bool blk_lower_coarsen(LowerCtx *c)
{
	BlkKernel *k = c->k;
	BlkLaunch *l = blk_lower_launch(c);
	if (strcmp(c->arch, "sm_90a") != 0 || blk_kernel_multi_rank(k) || blk_lower_is_dynamic(c) || !blk_launch_grid_static(l) || l->persist ||
	    l->cluster > 1)
		return true;
	Uf u = { .a = c->a, .k = k };
	const BlkOp *big = NULL;
	bool fresh = false;
	dots(&u, k->body, false, &big, &fresh);
	if (!big || fresh)
		return true;
	for (int a = 0; a < k->grid_rank; a++)
		u.ok[a] = l->axis[a] >= 0 && !l->div[a];
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].access == BLK_ACCESS_SCRATCH)
			fix_all(&u, k->body->args[i]);
	mark_dead(&u, k->body);
	check_pids(&u, k->body);
	visit_region(&u, k->body);
	check_classes(&u);
	if (!u.bail && choose(c, &u, big))
		rewrite(c, &u);
	else
		widen(c, &u);
	free(u.up);
	free(u.flags);
	return true;
}
