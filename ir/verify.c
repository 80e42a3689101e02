/* verify.c - structural and type checks of the IR (docs/ir.md).
 *
 * Run after the frontend and after every pass.  Two layers:
 *   1. generic, for every op, known or not: operands exist and dominate
 *      their use (a value is visible in the region that defines it and in
 *      regions nested there, after its definition), results belong to the
 *      op, `yield` ends a region and appears nowhere else, regions are
 *      linked to their op;
 *   2. per kind, from a table indexed by BlkOpKind: counts, types, attrs.
 *      Kinds with no entry (ops appended to ops.def by the GPU backend) get
 *      only layer 1.
 * Messages read "IR invalid after STAGE: OP: what is wrong"; operands and
 * results count from 0.
 */
#include "verify_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define fail blk_verify_fail
#define ty blk_verify_ty

void blk_verify_fail(Verifier *V, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	BlkLoc loc = V->op ? V->op->loc : V->k->loc;
	if (V->op)
		blk_error(V->d, loc, "IR invalid after %s: %s: %s", V->stage, blk_op_name(V->op->kind), msg);
	else
		blk_error(V->d, loc, "IR invalid after %s: kernel @%s: %s", V->stage, V->k->name, msg);
	V->ok = false;
}

const char *blk_verify_ty(Verifier *V, const BlkType *t)
{
	return blk_type_str(V->a, t);
}

/* ---- the set of visible values ----------------------------------------- */

static void set_state(Verifier *V, const BlkValue *v, unsigned char st)
{
	blk_pmap_put(NULL, &V->seen, v, (void *)(uintptr_t)st);
}

static int get_state(const Verifier *V, const BlkValue *v)
{
	return (int)(uintptr_t)blk_pmap_get(&V->seen, v);
}

static void push(Verifier *V, const BlkValue *v)
{
	if (V->depth == V->stack_cap) {
		V->stack_cap = V->stack_cap ? V->stack_cap * 2 : 256;
		V->stack = realloc(V->stack, V->stack_cap * sizeof *V->stack);
		if (!V->stack)
			blk_die("out of memory");
	}
	V->stack[V->depth++] = v;
	set_state(V, v, 1);
}

static void pop_to(Verifier *V, size_t depth)
{
	while (V->depth > depth)
		set_state(V, V->stack[--V->depth], 2);
}

/* ---- helpers for the per-op checks ------------------------------------- */

static const BlkType *operand(const BlkOp *op, int i)
{
	return &op->operands[i]->type;
}

static bool is_tile(Verifier *V, const BlkType *t, const char *what, int i)
{
	if (t->kind == BLK_TYPE_TILE)
		return true;
	fail(V, "%s %d has type %s, expected a tile", what, i, ty(V, t));
	return false;
}

/* got is want up to layouts: the GPU level's layout rules are
 * verify_gpu.c's. */
static bool want_type(Verifier *V, const BlkType *got, const BlkType *want, const char *what, int i)
{
	BlkType g = *got, w = *want;
	g.layout = w.layout = NULL;
	if (blk_type_equal(&g, &w))
		return true;
	fail(V, "%s %d has type %s, expected %s", what, i, ty(V, got), ty(V, want));
	return false;
}

static bool want_i32_scalar(Verifier *V, const BlkType *t, const char *what, int i)
{
	BlkType i32 = blk_type_scalar(BLK_I32);
	return want_type(V, t, &i32, what, i);
}

static BlkType with_dtype(const BlkType *t, BlkDType dt)
{
	BlkType r = *t;
	r.dtype = dt;
	return r;
}

static const BlkAttr *want_attr(Verifier *V, const BlkOp *op, const char *name, BlkAttrKind kind)
{
	static const char *kinds[] = { "an int", "a float", "a string", "a dtype", "an index list" };
	const BlkAttr *at = blk_op_attr(op, name);
	if (!at)
		fail(V, "missing attribute '%s'", name);
	else if (at->kind != kind)
		fail(V, "attribute '%s' must be %s", name, kinds[kind]);
	return at && at->kind == kind ? at : NULL;
}

/* The axis attr, checked against [0, limit). */
static bool want_axis(Verifier *V, const BlkOp *op, int limit, int64_t *axis)
{
	const BlkAttr *at = want_attr(V, op, "axis", BLK_ATTR_INT);
	if (!at)
		return false;
	*axis = at->i;
	if (at->i >= 0 && at->i < limit)
		return true;
	fail(V, "axis %lld out of range [0, %d)", (long long)at->i, limit);
	return false;
}

/* Dtype classes by op: what the elementwise ops accept. */
enum { ANY, NUMERIC, FLOAT, INT, BOOLEAN, INT_OR_BOOL, NOT_FP8 };

static bool dtype_ok(BlkDType t, int cls)
{
	switch (cls) {
	case NUMERIC: return t != BLK_BOOL && !blk_dtype_is_fp8(t); /* fp8: stored, converted, dot */
	case FLOAT: return blk_dtype_is_float(t);
	case INT: return blk_dtype_is_int(t);
	case BOOLEAN: return t == BLK_BOOL;
	case INT_OR_BOOL: return blk_dtype_is_int(t) || t == BLK_BOOL;
	case NOT_FP8: return !blk_dtype_is_fp8(t);
	default: return true;
	}
}

static int op_class(BlkOpKind k)
{
	switch (k) {
	case BLK_OP_NOT: case BLK_OP_AND: case BLK_OP_OR: case BLK_OP_XOR: return INT_OR_BOOL;
	case BLK_OP_EXP: case BLK_OP_LOG: case BLK_OP_SQRT: case BLK_OP_RSQRT:
	case BLK_OP_TANH: case BLK_OP_DIV: case BLK_OP_SIGMOID: case BLK_OP_ERF:
	case BLK_OP_LOG1P: case BLK_OP_EXPM1: case BLK_OP_FLOOR: case BLK_OP_CEIL:
	case BLK_OP_EXP2: case BLK_OP_LOG2: case BLK_OP_SILU: case BLK_OP_GELU: case BLK_OP_GELU_TANH:
	case BLK_OP_SOFTPLUS: case BLK_OP_FMA: case BLK_OP_POW: return FLOAT;
	case BLK_OP_FLOORDIV: case BLK_OP_MOD: case BLK_OP_SHL: case BLK_OP_SHR: return INT;
	case BLK_OP_NEG: case BLK_OP_ABS: case BLK_OP_ADD: case BLK_OP_SUB: case BLK_OP_MUL:
	case BLK_OP_MAX: case BLK_OP_MIN: case BLK_OP_REDUCE_SUM: case BLK_OP_REDUCE_MAX:
	case BLK_OP_REDUCE_MIN: case BLK_OP_REDUCE_ARGMAX: case BLK_OP_REDUCE_ARGMIN: case BLK_OP_SCAN_SUM: case BLK_OP_SCAN_PROD: case BLK_OP_SCAN_MAX:
	case BLK_OP_SCAN_MIN: return NUMERIC;
	case BLK_OP_EQ: case BLK_OP_NE: case BLK_OP_LT: case BLK_OP_LE: case BLK_OP_GT:
	case BLK_OP_GE: return NOT_FP8; /* bool compares too; fp8 would compare its bits */
	default: return ANY;
	}
}

static bool check_dtype_class(Verifier *V, const BlkOp *op, BlkDType t)
{
	static const char *names[] = { "any", "a numeric", "a float", "an integer", "a bool", "an integer or bool",
		                       "a comparable (not fp8)" };
	int cls = op_class(op->kind);
	if (dtype_ok(t, cls))
		return true;
	fail(V, "operand 0 has dtype %s, expected %s dtype", blk_dtype_name(t), names[cls]);
	return false;
}

/* ---- per-op checks ----------------------------------------------------- */

typedef void CheckFn(Verifier *V, const BlkOp *op);

static void check_const(Verifier *V, const BlkOp *op)
{
	const BlkAttr *at = blk_op_attr(op, "value");
	const BlkType *t = &op->results[0]->type;
	if (!at || (at->kind != BLK_ATTR_INT && at->kind != BLK_ATTR_FLOAT))
		fail(V, "attribute 'value' must be an int or a float");
	else if (at->kind == BLK_ATTR_FLOAT && !blk_dtype_is_float(t->dtype) && !blk_dtype_is_fp8(t->dtype))
		fail(V, "float value for a result of type %s", ty(V, t));
	is_tile(V, t, "result", 0);
}

static void check_size(Verifier *V, const BlkOp *op)
{
	const BlkAttr *at = want_attr(V, op, "name", BLK_ATTR_STRING);
	want_i32_scalar(V, &op->results[0]->type, "result", 0);
	for (int i = 0; at && i < V->k->nsizes; i++)
		if (strcmp(V->k->sizes[i], at->s) == 0)
			return;
	if (at)
		fail(V, "'%s' is not a launch size of the kernel", at->s);
}

static void check_program(Verifier *V, const BlkOp *op)
{
	int64_t axis;
	want_i32_scalar(V, &op->results[0]->type, "result", 0);
	want_axis(V, op, V->k->grid_rank, &axis);
}

static void check_iota(Verifier *V, const BlkOp *op)
{
	const BlkType *t = &op->results[0]->type;
	int64_t axis;
	if (!is_tile(V, t, "result", 0))
		return;
	if (t->dtype != BLK_I32 || t->rank == 0)
		fail(V, "result has type %s, expected an i32 tile", ty(V, t));
	else
		want_axis(V, op, t->rank, &axis);
}

static void check_unary(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	if (!is_tile(V, x, "operand", 0))
		return;
	if (op->kind == BLK_OP_CAST) {
		BlkType want = with_dtype(x, op->results[0]->type.dtype);
		want_type(V, &op->results[0]->type, &want, "result", 0);
		return;
	}
	if (check_dtype_class(V, op, x->dtype))
		want_type(V, &op->results[0]->type, x, "result", 0);
}

static bool is_compare(BlkOpKind k)
{
	return k >= BLK_OP_EQ && k <= BLK_OP_GE;
}

static void check_binary(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	if (!is_tile(V, x, "operand", 0) || !want_type(V, operand(op, 1), x, "operand", 1))
		return;
	if (!check_dtype_class(V, op, x->dtype))
		return;
	BlkType want = is_compare(op->kind) ? with_dtype(x, BLK_BOOL) : *x;
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

static void check_select(Verifier *V, const BlkOp *op)
{
	const BlkType *a = operand(op, 1);
	if (!is_tile(V, a, "operand", 1))
		return;
	BlkType cond = with_dtype(a, BLK_BOOL);
	if (want_type(V, operand(op, 0), &cond, "operand", 0) &&
	    want_type(V, operand(op, 2), a, "operand", 2))
		want_type(V, &op->results[0]->type, a, "result", 0);
}

/* fma(a, b, c): three operands of the result's type, a float. */
static void check_fma(Verifier *V, const BlkOp *op)
{
	const BlkType *a = operand(op, 0);
	if (!is_tile(V, a, "operand", 0) || !check_dtype_class(V, op, a->dtype))
		return;
	if (want_type(V, operand(op, 1), a, "operand", 1) && want_type(V, operand(op, 2), a, "operand", 2))
		want_type(V, &op->results[0]->type, a, "result", 0);
}

/* philox (seed, c0..c3; attr word 0..3), uniform (a word), normal (two
 * words): i32 operands of one shape; philox gives i32, the others f32. */
static void check_random(Verifier *V, const BlkOp *op)
{
	const BlkType *a = operand(op, 0);
	if (!is_tile(V, a, "operand", 0))
		return;
	BlkType w = with_dtype(a, BLK_I32);
	for (int i = 0; i < op->noperands; i++)
		if (!want_type(V, operand(op, i), &w, "operand", i))
			return;
	if (op->kind == BLK_OP_PHILOX) {
		const BlkAttr *at = want_attr(V, op, "word", BLK_ATTR_INT);
		if (at && (at->i < 0 || at->i > 3))
			fail(V, "word %lld is out of range [0, 4)", (long long)at->i);
	}
	BlkType r = with_dtype(a, op->kind == BLK_OP_PHILOX ? BLK_I32 : BLK_F32);
	want_type(V, &op->results[0]->type, &r, "result", 0);
}

static bool dim_is_one(const BlkSym *s)
{
	int64_t v;
	return blk_sym_is_const(s, &v) && v == 1;
}

static void check_broadcast(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0), *r = &op->results[0]->type;
	if (!is_tile(V, x, "operand", 0) || !is_tile(V, r, "result", 0))
		return;
	bool ok = x->dtype == r->dtype && x->rank <= r->rank;
	for (int i = 0; ok && i < x->rank; i++) {
		const BlkSym *a = x->dims[i], *b = r->dims[r->rank - x->rank + i];
		ok = blk_sym_equal(a, b) || dim_is_one(a);
	}
	if (!ok)
		fail(V, "cannot broadcast %s to %s", ty(V, x), ty(V, r));
}

static void check_expand_dims(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	int64_t axis;
	if (!is_tile(V, x, "operand", 0) || x->rank == BLK_MAX_RANK ||
	    !want_axis(V, op, x->rank + 1, &axis))
		return;
	BlkType want = *x;
	want.rank++;
	for (int i = (int)axis; i < x->rank; i++)
		want.dims[i + 1] = x->dims[i];
	want.dims[axis] = blk_sym_const(V->a, 1);
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

/* transpose: rank 2 swaps its dims; attr perm (digits, one per dim: the
 * operand dim of each result dim, a permutation) any other order; attr
 * flip reverses result dims (a bit each). */
static void check_transpose(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	if (!is_tile(V, x, "operand", 0))
		return;
	int perm[BLK_MAX_RANK], flip = blk_transpose_flip(op);
	if (!blk_transpose_perm(op, x->rank, perm)) {
		fail(V, "attr perm must list each of operand 0's %d dims once (digits, e.g. \"021\"); "
		     "without it the operand is rank 2", x->rank);
		return;
	}
	if (flip < 0 || flip >= 1 << x->rank) {
		fail(V, "attr flip must be a bit per reversed dim of the result (0 to %d)", (1 << x->rank) - 1);
		return;
	}
	BlkType want = *x;
	for (int d = 0; d < x->rank; d++)
		want.dims[d] = x->dims[perm[d]];
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

static void check_reduce(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	int64_t axis;
	if (!is_tile(V, x, "operand", 0) || !check_dtype_class(V, op, x->dtype) ||
	    !want_axis(V, op, x->rank, &axis))
		return;
	BlkType want = *x;
	want.rank--;
	for (int i = (int)axis; i < want.rank; i++)
		want.dims[i] = x->dims[i + 1];
	if (op->kind == BLK_OP_REDUCE_ARGMAX || op->kind == BLK_OP_REDUCE_ARGMIN)
		want.dtype = BLK_I32; /* an index */
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

/* A scan keeps its operand's type; it needs a dim to run along. */
static void check_scan(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	int64_t axis;
	if (!is_tile(V, x, "operand", 0) || !check_dtype_class(V, op, x->dtype))
		return;
	if (x->rank == 0) {
		fail(V, "operand is a scalar (%s); a scan runs along a dim of a tile", ty(V, x));
		return;
	}
	if (!want_axis(V, op, x->rank, &axis))
		return;
	const BlkAttr *rev = blk_op_attr(op, "reverse");
	if (rev && (rev->kind != BLK_ATTR_INT || (rev->i != 0 && rev->i != 1))) {
		fail(V, "attribute reverse must be 0 or 1");
		return;
	}
	want_type(V, &op->results[0]->type, x, "result", 0);
}

static const BlkOp *yield_of(const BlkRegion *r);

/* The combine of a `scan`: scalar ops without effects or regions, so the
 * interpreter and the GPU can run it once per element. */
static void check_combine(Verifier *V, const BlkOp *scan, const BlkRegion *r)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		bool scalar = true;
		for (int i = 0; i < op->nresults; i++)
			scalar &= op->results[i]->type.kind == BLK_TYPE_TILE && op->results[i]->type.rank == 0;
		if (op->kind == BLK_OP_YIELD)
			continue;
		if (!scalar || op->nregions || (blk_op_flags(op->kind) & BLK_OPF_EFFECT)) {
			const BlkOp *was = V->op;
			V->op = scan;
			fail(V, "its region holds a %s; a combine computes scalars, without effects or regions",
			     blk_op_name(op->kind));
			V->op = was;
			return;
		}
	}
}

/* scan: n tiles of one shape, n results of their types, a region of 2n
 * scalars (the left elements, then the right ones) yielding n. */
static void check_scan_region(Verifier *V, const BlkOp *op)
{
	int n = op->noperands;
	int64_t axis;
	for (int i = 0; i < n; i++) {
		const BlkType *x = operand(op, i);
		BlkType same = *x;
		same.dtype = operand(op, 0)->dtype;
		if (!is_tile(V, x, "operand", i) || !want_type(V, &same, operand(op, 0), "operand", i) ||
		    !want_type(V, &op->results[i]->type, x, "result", i))
			return;
	}
	if (operand(op, 0)->rank == 0) {
		fail(V, "operand is a scalar (%s); a scan runs along a dim of a tile", ty(V, operand(op, 0)));
		return;
	}
	const BlkAttr *rev = blk_op_attr(op, "reverse");
	if (!want_axis(V, op, operand(op, 0)->rank, &axis))
		return;
	if (rev && (rev->kind != BLK_ATTR_INT || (rev->i != 0 && rev->i != 1))) {
		fail(V, "attribute reverse must be 0 or 1");
		return;
	}
	const BlkRegion *r = op->regions[0];
	if (r->nargs != 2 * n) {
		fail(V, "region has %d args, expected %d (two per operand)", r->nargs, 2 * n);
		return;
	}
	for (int i = 0; i < 2 * n; i++) {
		BlkType s = blk_type_scalar(operand(op, i % n)->dtype);
		want_type(V, &r->args[i]->type, &s, "region arg", i);
	}
	const BlkOp *y = yield_of(r);
	if (!y || y->noperands != n) {
		fail(V, "region must end with a yield of %d values", n);
		return;
	}
	for (int i = 0; i < n; i++) {
		BlkType s = blk_type_scalar(operand(op, i)->dtype);
		want_type(V, operand(y, i), &s, "yielded value", i);
	}
	check_combine(V, op, r);
}

/* Operands a and b are tiles, or (the GPU level, after the pipeliner)
 * shared Refs holding them; the shape rules are the same. */
static void check_dot(Verifier *V, const BlkOp *op)
{
	const BlkType *a = operand(op, 0), *b = operand(op, 1);
	/* lower/: the pipeliner's slots; A's alone where B is computed each
	 * iteration (dot_stage.c stores it) */
	bool sa = a->kind == BLK_TYPE_REF && a->space == BLK_SPACE_SHARED;
	bool sb = b->kind == BLK_TYPE_REF && b->space == BLK_SPACE_SHARED;
	bool shared = (sb && (a->kind == BLK_TYPE_TILE || sa)) || (sa && b->kind == BLK_TYPE_TILE);
	if (!shared && (!is_tile(V, a, "operand", 0) || !is_tile(V, b, "operand", 1)))
		return;
	/* integer: i8 or u8 operands (i32 where the SIMT path staged them widened) */
	bool i8 = blk_dtype_is_int(a->dtype), f8 = blk_dtype_is_fp8(a->dtype) && blk_dtype_is_fp8(b->dtype);
	bool mix = f8 || (blk_dtype_is_byte(a->dtype) && blk_dtype_is_byte(b->dtype)); /* 8-bit formats mix */
	if (a->rank != 2 || b->rank != 2 || (!blk_dtype_is_float(a->dtype) && !i8 && !f8) ||
	    (a->dtype != b->dtype && !mix)) {
		fail(V, "operands have types %s and %s, expected two rank-2 tiles of one float dtype "
		     "(or two fp8 ones, or two 8-bit integer ones, or one integer dtype)", ty(V, a), ty(V, b));
		return;
	}
	int bt = blk_op_int(op, "b_trans", 0) != 0; /* lower/: b given as [N, K] */
	if (!blk_sym_equal(a->dims[1], b->dims[bt])) {
		fail(V, "inner dims differ: %s x %s%s", ty(V, a), ty(V, b), bt ? " (b_trans)" : "");
		return;
	}
	const BlkSym *mn[2] = { a->dims[0], b->dims[1 - bt] };
	BlkType want = blk_type_tile(i8 ? BLK_I32 : BLK_F32, 2, mn);
	if (op->noperands >= 3 && !want_type(V, operand(op, 2), &want, "operand", 2))
		return;
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

/* The accessed shape of a ref through the idx attr (absent: every dim
 * `:`); *nidx gets the number of index operands.  False if malformed. */
static bool accessed(Verifier *V, const BlkOp *op, BlkType *out, int *nidx)
{
	const BlkType *r = operand(op, 0);
	bool tile = op->kind == BLK_OP_EXTRACT;
	if (r->kind != (tile ? BLK_TYPE_TILE : BLK_TYPE_REF)) {
		fail(V, "operand 0 has type %s, expected a %s", ty(V, r), tile ? "tile" : "ref");
		return false;
	}
	const BlkAttr *at = blk_op_attr(op, "idx");
	if (at && at->kind != BLK_ATTR_INDEX) {
		fail(V, "attribute 'idx' must be an index list");
		return false;
	}
	int n = at ? at->index.n : r->rank;
	if (n != r->rank) {
		fail(V, "idx has %d entries for a ref of rank %d", n, r->rank);
		return false;
	}
	*out = *r;
	out->rank = 0;
	*nidx = 0;
	for (int d = 0; d < r->rank; d++) {
		BlkIndexKind k = at ? at->index.v[d].kind : BLK_INDEX_FULL;
		if (k != BLK_INDEX_FULL)
			++*nidx;
		if (k != BLK_INDEX_SCALAR && k != BLK_INDEX_GATHER)
			out->dims[out->rank++] = k == BLK_INDEX_DS ? at->index.v[d].size : r->dims[d];
		int64_t n, st = at ? blk_index_step(&at->index.v[d]) : 1;
		if (st > 1 && blk_sym_is_const(at->index.v[d].size, &n) && n > 0 &&
		    (n - 1) > (INT32_MAX - 1) / st) { /* the GPU's i32 coordinates */
			fail(V, "a strided window of %lld elements %lld apart spans more than 2^31 - 1",
			     (long long)n, (long long)st);
			return false;
		}
	}
	return true;
}

/* With GATHER dims (kept: the other dims *t keeps), the accessed shape is
 * the first GATHER operand's: kept with its own dims inserted where the
 * first GATHER dim was; every GATHER operand is an i32 tile of it. */
static bool gather_shape(Verifier *V, const BlkOp *op, BlkType *t)
{
	const BlkAttr *at = blk_op_attr(op, "idx");
	const BlkType *g = NULL;
	int pos = -1, kept = 0, next = 1;
	for (int d = 0; d < at->index.n; d++) {
		BlkIndexKind k = at->index.v[d].kind;
		if (k == BLK_INDEX_GATHER && pos < 0)
			pos = kept, g = operand(op, next);
		kept += k == BLK_INDEX_FULL || k == BLK_INDEX_DS;
		next += k != BLK_INDEX_FULL;
	}
	int s = g->rank - t->rank;
	bool ok = g->kind == BLK_TYPE_TILE && g->dtype == BLK_I32 && s >= 1;
	for (int d = 0; ok && d < t->rank; d++)
		ok = blk_sym_equal(t->dims[d], g->dims[d < pos ? d : d + s]);
	if (!ok) {
		fail(V, "a gather's indices have type %s; with the dims %s keeps they must be an i32 tile "
		     "holding those dims and its own where the first gathered dim was", ty(V, g), ty(V, t));
		return false;
	}
	BlkType want = *g;
	want.layout = NULL;
	next = 1;
	for (int d = 0; d < at->index.n; d++) {
		BlkIndexKind k = at->index.v[d].kind;
		if (k == BLK_INDEX_GATHER && !want_type(V, operand(op, next), &want, "operand", next))
			return false;
		next += k != BLK_INDEX_FULL;
	}
	t->rank = g->rank;
	memcpy(t->dims, g->dims, sizeof t->dims);
	return true;
}

/* Checks ref, indices and (with_value) the value after them; gives the
 * accessed tile type. */
/* The param a Ref operand views (-1: none), for the rules of several GPUs. */
static const BlkParam *ref_param(Verifier *V, const BlkOp *op)
{
	int pi = blk_ref_param(V->k, op->operands[0]);
	return pi >= 0 ? &V->k->params[pi] : NULL;
}

/* An access: the ref, its index operands, then nvalues more: the value
 * (store, swap, atomics), after a scalar compare value (atomic_cas). */
static bool check_access(Verifier *V, const BlkOp *op, int nvalues, BlkType *tile)
{
	static const char *const tails[] = { "", ", value", ", compare value, value" };
	int nidx;
	if (!accessed(V, op, tile, &nidx))
		return false;
	tile->kind = BLK_TYPE_TILE;
	tile->space = BLK_SPACE_GLOBAL;
	int want = 1 + nidx + nvalues;
	if (op->noperands != want) {
		fail(V, "expected %d operands (ref, %d indices%s), got %d", want, nidx, tails[nvalues],
		     op->noperands);
		return false;
	}
	const BlkAttr *at = blk_op_attr(op, "idx");
	for (int i = 1, d = 0; at && d < at->index.n; d++) {
		BlkIndexKind k = at->index.v[d].kind;
		if (k == BLK_INDEX_FULL)
			continue;
		if (k != BLK_INDEX_GATHER && !want_i32_scalar(V, operand(op, i), "operand", i))
			return false;
		i++;
	}
	const BlkParam *sp = op->kind != BLK_OP_VIEW ? ref_param(V, op) : NULL;
	if (sp && sp->signal) {
		fail(V, "%s of signal param %s: only signal_add, signal_set and signal_wait touch a signal",
		     blk_op_name(op->kind), sp->name);
		return false;
	}
	bool reads_writes = op->kind == BLK_OP_LOAD || op->kind == BLK_OP_STORE || blk_op_is_atomic(op->kind);
	if (blk_op_gathers(op) && !reads_writes) {
		fail(V, "gathers (a `g` index) are for load, store and the atomics");
		return false;
	}
	if (blk_op_gathers(op) && !gather_shape(V, op, tile))
		return false;
	BlkType cmp = blk_type_scalar(tile->dtype);
	if (nvalues == 2 && !want_type(V, operand(op, want - 2), &cmp, "operand", want - 2))
		return false;
	return !nvalues || want_type(V, operand(op, want - 1), tile, "operand", want - 1);
}

static void check_view(Verifier *V, const BlkOp *op)
{
	BlkType t;
	if (!check_access(V, op, 0, &t))
		return;
	BlkType want = blk_type_ref(t.dtype, t.rank, t.dims, operand(op, 0)->space);
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

static void check_load(Verifier *V, const BlkOp *op)
{
	BlkType t;
	const BlkAttr *fill = blk_op_attr(op, "fill");
	if (fill && fill->kind != BLK_ATTR_INT && fill->kind != BLK_ATTR_FLOAT)
		fail(V, "attribute 'fill' must be an int or a float");
	if (check_access(V, op, 0, &t))
		want_type(V, &op->results[0]->type, &t, "result", 0);
}

/* A part of a tile: load's index rules on a tile (no fill: outside is 0). */
static void check_extract(Verifier *V, const BlkOp *op)
{
	BlkType t;
	if (operand(op, 0)->rank == 0)
		fail(V, "operand 0 is a scalar (%s); extract takes a part of a tile", ty(V, operand(op, 0)));
	else if (check_access(V, op, 0, &t))
		want_type(V, &op->results[0]->type, &t, "result", 0);
}

/* The element count of t as a size expression (constants fold). */
static const BlkSym *count_of(Verifier *V, const BlkType *t)
{
	const BlkSym *n = blk_sym_const(V->a, 1);
	for (int d = 0; d < t->rank; d++)
		n = blk_sym_binary(V->a, BLK_SYM_MUL, n, t->dims[d]);
	return n;
}

static void check_reshape(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0), *r = &op->results[0]->type;
	if (!is_tile(V, x, "operand", 0))
		return;
	if (r->kind != BLK_TYPE_TILE || r->dtype != x->dtype || !blk_sym_equal(count_of(V, x), count_of(V, r)))
		fail(V, "result has type %s; a reshape of %s keeps its dtype and element count", ty(V, r),
		     ty(V, x));
}

/* join: n tiles of one type, the result that type with a last dim of n. */
static void check_join(Verifier *V, const BlkOp *op)
{
	const BlkType *x = operand(op, 0);
	if (!is_tile(V, x, "operand", 0))
		return;
	for (int i = 1; i < op->noperands; i++)
		if (!want_type(V, operand(op, i), x, "operand", i))
			return;
	if (x->rank == BLK_MAX_RANK) {
		fail(V, "operands of rank %d: the result would have more than %d dims", x->rank, BLK_MAX_RANK);
		return;
	}
	BlkType want = *x;
	want.dims[want.rank++] = blk_sym_const(V->a, op->noperands);
	want_type(V, &op->results[0]->type, &want, "result", 0);
}

static void check_store(Verifier *V, const BlkOp *op)
{
	BlkType t;
	if (!check_access(V, op, 1, &t))
		return;
	if (op->kind == BLK_OP_SWAP)
		want_type(V, &op->results[0]->type, &t, "result", 0);
	if (op->kind == BLK_OP_ATOMIC_ADD &&
	    (blk_dtype_is_byte(t.dtype) || blk_dtype_is_fp8(t.dtype) || t.dtype == BLK_BOOL))
		fail(V, "a Ref of %s; atomic_add takes i32 or a float dtype", blk_dtype_name(t.dtype));
}

/* atomic_max/min on i32 or f32; atomic_cas on i32 with a scalar compare value. */
static void check_atomic(Verifier *V, const BlkOp *op)
{
	BlkType t;
	bool cas = op->kind == BLK_OP_ATOMIC_CAS;
	if (!check_access(V, op, cas ? 2 : 1, &t))
		return;
	if (t.dtype != BLK_I32 && (cas || t.dtype != BLK_F32))
		fail(V, "a Ref of %s; it takes i32%s", blk_dtype_name(t.dtype), cas ? "" : " or f32");
}

/* The region's yield (its last op), or NULL if it has none. */
static const BlkOp *yield_of(const BlkRegion *r)
{
	return r->last && r->last->kind == BLK_OP_YIELD ? r->last : NULL;
}

static void check_for(Verifier *V, const BlkOp *op)
{
	int nc = op->noperands - 3;
	for (int i = 0; i < 3; i++)
		want_i32_scalar(V, operand(op, i), "operand", i);
	const BlkRegion *r = op->regions[0];
	if (r->nargs != nc + 1) {
		fail(V, "region has %d args, expected %d (iv and %d carries)", r->nargs, nc + 1, nc);
		return;
	}
	want_i32_scalar(V, &r->args[0]->type, "region arg", 0);
	for (int i = 0; i < nc; i++) {
		want_type(V, &r->args[i + 1]->type, operand(op, i + 3), "region arg", i + 1);
		want_type(V, &op->results[i]->type, operand(op, i + 3), "result", i);
	}
	const BlkOp *y = yield_of(r);
	if (!y || y->noperands != nc) {
		fail(V, "region must end with a yield of %d values", nc);
		return;
	}
	for (int i = 0; i < nc; i++)
		want_type(V, operand(y, i), operand(op, i + 3), "yielded value", i);
}

static void check_no_yield_values(Verifier *V, const BlkRegion *r, int i)
{
	const BlkOp *y = yield_of(r);
	if (r->nargs)
		fail(V, "region %d has %d args, expected none", i, r->nargs);
	if (y && y->noperands)
		fail(V, "region %d yields %d values, expected none", i, y->noperands);
}

static void check_if(Verifier *V, const BlkOp *op)
{
	BlkType b = blk_type_scalar(BLK_BOOL);
	want_type(V, operand(op, 0), &b, "operand", 0);
	for (int i = 0; i < 2; i++)
		check_no_yield_values(V, op->regions[i], i);
}

static void check_scoped(Verifier *V, const BlkOp *op)
{
	const BlkRegion *r = op->regions[0];
	for (int i = 0; i < r->nargs; i++)
		if (r->args[i]->type.kind != BLK_TYPE_REF)
			fail(V, "region arg %d has type %s, expected a ref", i, ty(V, &r->args[i]->type));
	const BlkOp *y = yield_of(r);
	if (y && y->noperands)
		fail(V, "region yields %d values, expected none", y->noperands);
}

static void check_rank(Verifier *V, const BlkOp *op)
{
	want_i32_scalar(V, &op->results[0]->type, "result", 0);
}

/* peer(ref, rank): the same Ref of a symmetric param, on that rank. */
static void check_peer(Verifier *V, const BlkOp *op)
{
	const BlkType *r = operand(op, 0);
	if (r->kind != BLK_TYPE_REF || r->space != BLK_SPACE_GLOBAL) {
		fail(V, "operand 0 has type %s, expected a Ref of a symmetric param", ty(V, r));
		return;
	}
	const BlkParam *p = ref_param(V, op);
	if (!p || !p->symmetric)
		fail(V, "operand 0 views %s%s, which is not symmetric: only a symmetric or signal param "
		     "has a buffer on every rank", p ? "param " : "no param", p ? p->name : "");
	else if (want_i32_scalar(V, operand(op, 1), "operand", 1))
		want_type(V, &op->results[0]->type, r, "result", 0);
}

/* signal_add/set/wait(ref, v): ref one i32 element of a signal param. */
static void check_signal(Verifier *V, const BlkOp *op)
{
	const BlkType *r = operand(op, 0);
	BlkType want = blk_type_ref(BLK_I32, 0, NULL, BLK_SPACE_GLOBAL);
	if (!want_type(V, r, &want, "operand", 0) || !want_i32_scalar(V, operand(op, 1), "operand", 1))
		return;
	const BlkParam *p = ref_param(V, op);
	if (!p || !p->signal)
		fail(V, "operand 0 views %s%s, which is not a signal param", p ? "param " : "no param",
		     p ? p->name : "");
}

static void check_print(Verifier *V, const BlkOp *op)
{
	want_attr(V, op, "fmt", BLK_ATTR_STRING);
	for (int i = 0; i < op->noperands; i++)
		is_tile(V, operand(op, i), "operand", i);
}

#define UNARY(e) [BLK_OP_##e] = check_unary
#define BINARY(e) [BLK_OP_##e] = check_binary

static CheckFn *const checks[BLK_NUM_OPS] = {
	[BLK_OP_CONST] = check_const, [BLK_OP_SIZE] = check_size,
	[BLK_OP_PROGRAM_ID] = check_program, [BLK_OP_NUM_PROGRAMS] = check_program,
	[BLK_OP_RANK] = check_rank, [BLK_OP_WORLD] = check_rank, [BLK_OP_IOTA] = check_iota,
	UNARY(NEG), UNARY(NOT), UNARY(EXP), UNARY(LOG), UNARY(SQRT), UNARY(RSQRT),
	UNARY(TANH), UNARY(ABS), UNARY(SIGMOID), UNARY(ERF), UNARY(LOG1P), UNARY(EXPM1),
	UNARY(FLOOR), UNARY(CEIL), UNARY(EXP2), UNARY(LOG2), UNARY(SILU), UNARY(GELU),
	UNARY(GELU_TANH), UNARY(SOFTPLUS), UNARY(CAST),
	BINARY(ADD), BINARY(SUB), BINARY(MUL), BINARY(DIV), BINARY(FLOORDIV), BINARY(MOD),
	BINARY(MAX), BINARY(MIN), BINARY(POW), BINARY(AND), BINARY(OR), BINARY(XOR), BINARY(SHL), BINARY(SHR),
	BINARY(EQ), BINARY(NE),
	BINARY(LT), BINARY(LE), BINARY(GT), BINARY(GE),
	[BLK_OP_SELECT] = check_select, [BLK_OP_FMA] = check_fma, [BLK_OP_BROADCAST] = check_broadcast,
	[BLK_OP_PHILOX] = check_random, [BLK_OP_UNIFORM] = check_random, [BLK_OP_NORMAL] = check_random,
	[BLK_OP_EXPAND_DIMS] = check_expand_dims, [BLK_OP_TRANSPOSE] = check_transpose,
	[BLK_OP_EXTRACT] = check_extract, [BLK_OP_RESHAPE] = check_reshape, [BLK_OP_JOIN] = check_join,
	[BLK_OP_REDUCE_SUM] = check_reduce, [BLK_OP_REDUCE_MAX] = check_reduce,
	[BLK_OP_REDUCE_MIN] = check_reduce, [BLK_OP_REDUCE_ARGMAX] = check_reduce,
	[BLK_OP_REDUCE_ARGMIN] = check_reduce, [BLK_OP_SCAN_SUM] = check_scan,
	[BLK_OP_SCAN_PROD] = check_scan, [BLK_OP_SCAN_MAX] = check_scan,
	[BLK_OP_SCAN_MIN] = check_scan, [BLK_OP_SCAN] = check_scan_region, [BLK_OP_DOT] = check_dot,
	[BLK_OP_VIEW] = check_view, [BLK_OP_LOAD] = check_load,
	[BLK_OP_STORE] = check_store, [BLK_OP_SWAP] = check_store,
	[BLK_OP_ATOMIC_ADD] = check_store, [BLK_OP_ATOMIC_MAX] = check_atomic,
	[BLK_OP_ATOMIC_MIN] = check_atomic, [BLK_OP_ATOMIC_CAS] = check_atomic, [BLK_OP_PEER] = check_peer,
	[BLK_OP_SIGNAL_ADD] = check_signal, [BLK_OP_SIGNAL_SET] = check_signal,
	[BLK_OP_SIGNAL_WAIT] = check_signal, [BLK_OP_FOR] = check_for,
	[BLK_OP_IF] = check_if, [BLK_OP_SCOPED] = check_scoped, [BLK_OP_PRINT] = check_print,
};

/* ---- counts ------------------------------------------------------------ */

/* min operands, max operands (-1: any), results (-1: noperands - 3,
 * -2: noperands),
 * regions (-1: any).  ORDER OP for the frontend's ops. */
static const signed char arity[][4] = {
#define A(e, lo, hi, res, reg) [BLK_OP_##e] = { lo, hi, res, reg }
	A(CONST, 0, 0, 1, 0), A(SIZE, 0, 0, 1, 0), A(PROGRAM_ID, 0, 0, 1, 0),
	A(NUM_PROGRAMS, 0, 0, 1, 0), A(RANK, 0, 0, 1, 0), A(WORLD, 0, 0, 1, 0), A(IOTA, 0, 0, 1, 0),
	A(NEG, 1, 1, 1, 0), A(NOT, 1, 1, 1, 0), A(EXP, 1, 1, 1, 0), A(LOG, 1, 1, 1, 0),
	A(SQRT, 1, 1, 1, 0), A(RSQRT, 1, 1, 1, 0), A(TANH, 1, 1, 1, 0), A(ABS, 1, 1, 1, 0),
	A(SIGMOID, 1, 1, 1, 0), A(ERF, 1, 1, 1, 0), A(LOG1P, 1, 1, 1, 0), A(EXPM1, 1, 1, 1, 0),
	A(FLOOR, 1, 1, 1, 0), A(CEIL, 1, 1, 1, 0), A(EXP2, 1, 1, 1, 0), A(LOG2, 1, 1, 1, 0),
	A(SILU, 1, 1, 1, 0), A(GELU, 1, 1, 1, 0), A(GELU_TANH, 1, 1, 1, 0), A(SOFTPLUS, 1, 1, 1, 0),
	A(CAST, 1, 1, 1, 0),
	A(ADD, 2, 2, 1, 0), A(SUB, 2, 2, 1, 0), A(MUL, 2, 2, 1, 0), A(DIV, 2, 2, 1, 0),
	A(FLOORDIV, 2, 2, 1, 0), A(MOD, 2, 2, 1, 0), A(MAX, 2, 2, 1, 0), A(MIN, 2, 2, 1, 0),
	A(POW, 2, 2, 1, 0),
	A(AND, 2, 2, 1, 0), A(OR, 2, 2, 1, 0), A(XOR, 2, 2, 1, 0), A(SHL, 2, 2, 1, 0),
	A(SHR, 2, 2, 1, 0), A(EQ, 2, 2, 1, 0), A(NE, 2, 2, 1, 0),
	A(LT, 2, 2, 1, 0), A(LE, 2, 2, 1, 0), A(GT, 2, 2, 1, 0), A(GE, 2, 2, 1, 0),
	A(SELECT, 3, 3, 1, 0), A(FMA, 3, 3, 1, 0),
	A(PHILOX, 5, 5, 1, 0), A(UNIFORM, 1, 1, 1, 0), A(NORMAL, 2, 2, 1, 0),
	A(BROADCAST, 1, 1, 1, 0), A(EXPAND_DIMS, 1, 1, 1, 0), A(TRANSPOSE, 1, 1, 1, 0),
	A(EXTRACT, 1, -1, 1, 0), A(RESHAPE, 1, 1, 1, 0), A(JOIN, 2, -1, 1, 0),
	A(REDUCE_SUM, 1, 1, 1, 0), A(REDUCE_MAX, 1, 1, 1, 0), A(REDUCE_MIN, 1, 1, 1, 0),
	A(REDUCE_ARGMAX, 1, 1, 1, 0), A(REDUCE_ARGMIN, 1, 1, 1, 0),
	A(SCAN_SUM, 1, 1, 1, 0), A(SCAN_PROD, 1, 1, 1, 0), A(SCAN_MAX, 1, 1, 1, 0),
	A(SCAN_MIN, 1, 1, 1, 0), A(SCAN, 1, -1, -2, 1),
	A(DOT, 2, 3, 1, -1),
	A(VIEW, 1, -1, 1, 0), A(LOAD, 1, -1, 1, 0), A(STORE, 2, -1, 0, 0), A(SWAP, 2, -1, 1, 0),
	A(ATOMIC_ADD, 2, -1, 0, 0), A(ATOMIC_MAX, 2, -1, 0, 0), A(ATOMIC_MIN, 2, -1, 0, 0),
	A(ATOMIC_CAS, 3, -1, 0, 0),
	A(PEER, 2, 2, 1, 0), A(SIGNAL_ADD, 2, 2, 0, 0), A(SIGNAL_SET, 2, 2, 0, 0),
	A(SIGNAL_WAIT, 2, 2, 0, 0),
	A(FOR, 3, -1, -1, 1), A(IF, 1, 1, 0, 2), A(SCOPED, 0, 0, 0, 1), A(YIELD, 0, -1, 0, 0),
	A(PRINT, 0, -1, 0, 0),
#undef A
};

enum { NKNOWN = BLK_OP_PRINT + 1 }; /* kinds after these have no fixed rule */

bool blk_op_arity(BlkOpKind k, int *min_operands, int *max_operands, int *nresults)
{
	if ((unsigned)k >= NKNOWN)
		return false;
	*min_operands = arity[k][0];
	*max_operands = arity[k][1];
	*nresults = arity[k][2];
	return true;
}

static bool check_counts(Verifier *V, const BlkOp *op)
{
	int lo, hi, nres;
	if (!blk_op_arity(op->kind, &lo, &hi, &nres))
		return true;
	if (nres == -2)
		nres = op->noperands;
	if (nres < 0)
		nres = op->noperands > 3 ? op->noperands - 3 : 0;
	int nreg = arity[op->kind][3];
	if (op->noperands < lo || (hi >= 0 && op->noperands > hi))
		fail(V, "has %d operands, expected %d%s", op->noperands, op->noperands < lo ? lo : hi,
		     lo == hi ? "" : op->noperands < lo ? " or more" : " or fewer");
	else if (op->nresults != nres)
		fail(V, "has %d results, expected %d", op->nresults, nres);
	else if (nreg >= 0 && op->nregions != nreg)
		fail(V, "has %d regions, expected %d", op->nregions, nreg);
	else
		return true;
	return false;
}

/* ---- structure --------------------------------------------------------- */

static void verify_region(Verifier *V, const BlkRegion *r, const BlkOp *parent);

static void check_operands(Verifier *V, const BlkOp *op)
{
	for (int i = 0; i < op->noperands; i++) {
		const BlkValue *v = op->operands[i];
		int st = v ? get_state(V, v) : 0;
		if (st == 1)
			continue;
		const char *name = v && v->name ? blk_arena_printf(V->a, " (%%%s)", v->name) : "";
		fail(V, "operand %d%s %s", i, name,
		     !v ? "is NULL" : st == 2 ? "is used outside the region that defines it"
		                              : "is not defined before its use");
	}
}

static void check_structure(Verifier *V, const BlkOp *op, const BlkRegion *r)
{
	if (op->parent != r)
		fail(V, "op is not linked to its region");
	if (op->kind == BLK_OP_YIELD && op != r->last)
		fail(V, "yield must be the last op of its region");
	if (op->kind != BLK_OP_YIELD && (blk_op_flags(op->kind) & BLK_OPF_TERM) && op != r->last)
		fail(V, "terminator must be the last op of its region");
	for (int i = 0; i < op->nresults; i++)
		if (!op->results[i] || op->results[i]->def != op || op->results[i]->index != i)
			fail(V, "result %d does not belong to the op", i);
	for (int i = 0; i < op->nregions; i++)
		if (op->regions[i]->parent != op)
			fail(V, "region %d is not linked to its op", i);
}

static void verify_op(Verifier *V, const BlkOp *op, const BlkRegion *r)
{
	V->op = op;
	bool ok = V->ok;
	V->ok = true;
	check_operands(V, op);
	check_structure(V, op, r);
	if (V->ok && check_counts(V, op) && checks[op->kind])
		checks[op->kind](V, op);
	if (V->ok)
		blk_verify_gpu_op(V, op);
	V->ok &= ok;
	for (int i = 0; i < op->nregions; i++)
		verify_region(V, op->regions[i], op);
	V->op = op;
	for (int i = 0; i < op->nresults; i++)
		if (op->results[i]) {
			push(V, op->results[i]);
			blk_verify_level(V, op->results[i]);
		}
}

static void verify_region(Verifier *V, const BlkRegion *r, const BlkOp *parent)
{
	size_t depth = V->depth;
	if (r->parent != parent) {
		V->op = parent;
		fail(V, "region is not linked to its op");
	}
	for (int i = 0; i < r->nargs; i++) {
		push(V, r->args[i]);
		blk_verify_level(V, r->args[i]);
	}
	for (const BlkOp *op = r->first; op; op = op->next)
		verify_op(V, op, r);
	pop_to(V, depth);
}

/* ---- kernels ----------------------------------------------------------- */

/* The Ref the body sees for param p. */
static BlkType param_ref(const BlkParam *p)
{
	const BlkSym *dims[BLK_MAX_RANK];
	int rank = 0;
	bool scratch = p->access == BLK_ACCESS_SCRATCH;
	for (int d = 0; d < p->rank; d++)
		if (scratch || !p->squeezed[d])
			dims[rank++] = scratch || !p->block[d] ? p->shape[d] : p->block[d];
	return blk_type_ref(p->dtype, rank, dims, scratch ? BLK_SPACE_SHARED : BLK_SPACE_GLOBAL);
}

/* A prefetch param: i32, read only, whole, its map yielding constant 0s. */
static void verify_prefetch(Verifier *V, const BlkParam *p)
{
	if (p->dtype != BLK_I32 || p->access != BLK_ACCESS_IN)
		fail(V, "param %s: a prefetch param is an `in` i32 array", p->name);
	for (int d = 0; d < p->rank; d++)
		if (p->squeezed[d] || (p->block[d] && !blk_sym_equal(p->block[d], p->shape[d])))
			fail(V, "param %s: a prefetch param's block is the whole array", p->name);
	const BlkOp *y = p->index_map ? yield_of(p->index_map) : NULL;
	for (int i = 0; y && i < y->noperands; i++) {
		const BlkOp *d = y->operands[i]->def;
		const BlkAttr *v = d && d->kind == BLK_OP_CONST ? blk_op_attr(d, "value") : NULL;
		if (!v || v->kind != BLK_ATTR_INT || v->i != 0)
			fail(V, "param %s: a prefetch param's index map yields 0s", p->name);
	}
}

/* A signal param: symmetric inout i32 counters, passed whole. */
static void verify_signal(Verifier *V, const BlkParam *p)
{
	if (p->dtype != BLK_I32 || p->access != BLK_ACCESS_INOUT || !p->symmetric || p->prefetch)
		fail(V, "param %s: a signal param is a symmetric `inout` i32 array", p->name);
	for (int d = 0; d < p->rank; d++)
		if (p->squeezed[d] || (p->block[d] && !blk_sym_equal(p->block[d], p->shape[d])))
			fail(V, "param %s: a signal param's block is the whole array", p->name);
}

static void verify_index_map(Verifier *V, const BlkParam *p)
{
	const BlkRegion *r = p->index_map;
	int g = V->k->grid_rank, npf = 0;
	for (int q = 0; q < V->k->nparams && !p->prefetch; q++)
		npf += V->k->params[q].prefetch;
	if (r->nargs != g + npf)
		fail(V, "param %s: index map has %d args, expected one per grid axis (%d)%s", p->name,
		     r->nargs, g, npf ? " and one per prefetch param" : "");
	for (int i = 0; i < r->nargs && i < g; i++)
		if (!blk_type_is_scalar(&r->args[i]->type) || r->args[i]->type.dtype != BLK_I32)
			fail(V, "param %s: index map arg %d must be i32", p->name, i);
	for (int q = 0, i = g; q < V->k->nparams && i < r->nargs; q++) {
		if (!V->k->params[q].prefetch || p->prefetch)
			continue;
		BlkType want = param_ref(&V->k->params[q]);
		if (!blk_type_equal(&r->args[i]->type, &want))
			fail(V, "param %s: index map arg %d has type %s, expected %s (prefetch param %s)",
			     p->name, i, ty(V, &r->args[i]->type),
			     ty(V, &want), V->k->params[q].name);
		i++;
	}
	verify_region(V, r, NULL);
	for (const BlkOp *op = r->first; op; op = op->next)
		if ((blk_op_flags(op->kind) & BLK_OPF_EFFECT) && op->kind != BLK_OP_LOAD)
			fail(V, "param %s: index map op %s has an effect (a map only computes and reads)",
			     p->name, blk_op_name(op->kind));
	V->op = NULL;
	const BlkOp *y = yield_of(r);
	if (!y || y->noperands != p->rank) {
		fail(V, "param %s: index map must yield %d i32 block indices", p->name, p->rank);
		return;
	}
	for (int i = 0; i < p->rank; i++)
		if (!blk_type_is_scalar(operand(y, i)) || operand(y, i)->dtype != BLK_I32)
			fail(V, "param %s: index map yields %s for dim %d, expected i32", p->name,
			     ty(V, operand(y, i)), i);
}

static void verify_param(Verifier *V, const BlkParam *p, int i)
{
	V->op = NULL;
	if (p->access == BLK_ACCESS_SCRATCH && p->index_map)
		fail(V, "param %s: scratch has no index map", p->name);
	if (p->index_map)
		verify_index_map(V, p);
	if (p->prefetch)
		verify_prefetch(V, p);
	if (p->signal)
		verify_signal(V, p);
	else if (p->symmetric && (p->access == BLK_ACCESS_SCRATCH || p->prefetch))
		fail(V, "param %s: scratch and prefetch params are not symmetric", p->name);
	V->op = NULL;
	const BlkRegion *b = V->k->body;
	if (i >= b->nargs)
		return;
	BlkType want = param_ref(p);
	if (!blk_type_equal(&b->args[i]->type, &want))
		fail(V, "body arg %d has type %s, expected %s for param %s", i,
		     ty(V, &b->args[i]->type), ty(V, &want), p->name);
}

static void verify_kernel(Verifier *V, const BlkKernel *k)
{
	V->k = k;
	V->op = NULL;
	if (k->grid_rank < 0 || k->grid_rank > BLK_MAX_GRID)
		fail(V, "grid rank %d, expected 0 to %d", k->grid_rank, BLK_MAX_GRID);
	if (!k->body) {
		fail(V, "no body");
		return;
	}
	if (k->body->nargs != k->nparams)
		fail(V, "body has %d args, expected one per param (%d)", k->body->nargs, k->nparams);
	for (int i = 0; i < k->nparams; i++)
		verify_param(V, &k->params[i], i);
	if (k->launch)
		blk_verify_launch(V);
	verify_region(V, k->body, NULL);
	V->op = NULL;
	const BlkOp *y = yield_of(k->body);
	if (y && y->noperands)
		fail(V, "body yields %d values, expected none", y->noperands);
}

bool blk_ir_verify(const BlkModule *m, BlkDiag *d, const char *stage)
{
	Verifier V = { .a = m->arena, .d = d, .stage = stage ? stage : "?", .ok = true };
	for (const BlkKernel *k = m->first; k; k = k->next) {
		V.level = 0;
		verify_kernel(&V, k);
		V.depth = 0;
	}
	blk_pmap_free(&V.seen);
	free(V.stack);
	return V.ok;
}
