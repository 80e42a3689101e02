/* memcheck.c - what the compiled code assumes of a launch's memory, checked
 * before the GPU sees anything.
 *
 * The PTX lowering assumes (docs/backend.md, lower/emit/emit_llvm.c):
 *   1. every array starts aligned to its element size (vector accesses are
 *      chosen from the strides, the block offsets and the base's own
 *      alignment, which the launch compiles in: a slice may start
 *      anywhere an element can);
 *   2. every array parameter is `noalias`: no two parameters share memory
 *      when one of them is written (in-out data is one `inout` parameter);
 *   3. an array that is written has no two elements at one address (a zero
 *      or overlapping stride would make the stores race).
 * A launch breaking one of them is refused with a message naming the
 * tensor; read-only tensors may alias each other and broadcast with
 * stride 0.
 */
#include "rt.h"

#include <inttypes.h>
#include <stdlib.h>

#define MAX_SPAN ((int64_t)1 << 48) /* elements: more than any GPU's memory */

/* The param tensor i is passed for. */
static const BlkParam *param_of(const BlkKernel *k, int i)
{
	for (int p = 0; p < k->nparams; p++)
		if (k->params[p].access != BLK_ACCESS_SCRATCH && i-- == 0)
			return &k->params[p];
	return NULL;
}

/* The bytes [lo, hi) that t's elements span; false when it has none. */
static bool extent(const BlkTensor *t, uintptr_t *lo, uintptr_t *hi)
{
	int64_t first = 0, last = 0;
	for (int d = 0; d < t->rank; d++) {
		if (t->shape[d] == 0)
			return false;
		int64_t span = (t->shape[d] - 1) * t->strides[d];
		if (span < 0)
			first += span;
		else
			last += span;
	}
	int64_t es = (int64_t)blk_tensor_elem_size(t->dtype);
	*lo = (uintptr_t)t->data + (uintptr_t)(first * es);
	*hi = (uintptr_t)t->data + (uintptr_t)((last + 1) * es);
	return true;
}

static int by_stride(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* No two elements of t share an address: with the dims of extent > 1
 * sorted by |stride|, each passes the reach of the smaller ones (and so is
 * not 0).  The sign does not matter: a reversed view (stride -1) has
 * distinct elements.  Returns the offending dim, or -1. */
static int overlapping_dim(const BlkTensor *t)
{
	int64_t dims[BLK_TENSOR_MAX_RANK][3];
	int n = 0;
	for (int d = 0; d < t->rank; d++)
		if (t->shape[d] > 1)
			dims[n][0] = t->strides[d] < 0 ? -t->strides[d] : t->strides[d], /* |stride|: in range */
			dims[n][1] = t->shape[d], dims[n++][2] = d;
	qsort(dims, (size_t)n, sizeof dims[0], by_stride);
	int64_t reach = 1;
	for (int i = 0; i < n; i++) {
		if (dims[i][0] < reach)
			return (int)dims[i][2];
		reach += (dims[i][1] - 1) * dims[i][0]; /* in range: see check_one */
	}
	return -1;
}

static bool check_one(BlkRuntime *rt, const BlkKernel *k, int i, const BlkTensor *t)
{
	const BlkParam *p = param_of(k, i);
	int d;
	for (d = 0; d < t->rank; d++) {
		int64_t span;
		if (__builtin_mul_overflow(t->shape[d], t->strides[d], &span) || span > MAX_SPAN ||
		    span < -MAX_SPAN)
			return blk_rt_error(rt, "launch of %s: tensor %d (%s): stride %" PRId64 " in dim %d "
			                    "is out of range", k->name, i, p->name, t->strides[d], d);
	}
	size_t es = blk_dtype_size((BlkDType)t->dtype);
	if (es > 1 && (uintptr_t)t->data % es && blk_tensor_numel(t) > 0)
		return blk_rt_error(rt, "launch of %s: tensor %d (%s): data %p is not aligned to its "
		                    "%zu-byte elements", k->name, i, p->name, t->data, es);
	if (p->access != BLK_ACCESS_IN && blk_tensor_numel(t) > 0 && (d = overlapping_dim(t)) >= 0)
		return blk_rt_error(rt, "launch of %s: tensor %d (%s) is written but its stride %" PRId64
		                    " in dim %d makes elements share memory", k->name, i, p->name,
		                    t->strides[d], d);
	return true;
}

bool blk_rt_check_memory(BlkRuntime *rt, const BlkKernel *k, const BlkTensor *t, int n)
{
	for (int i = 0; i < n; i++)
		if (!check_one(rt, k, i, &t[i]))
			return false;
	for (int i = 0; i < n; i++) {
		uintptr_t lo, hi, lo2, hi2;
		if (!extent(&t[i], &lo, &hi))
			continue;
		for (int j = 0; j < i; j++) {
			const BlkParam *p = param_of(k, i), *q = param_of(k, j);
			if ((p->access == BLK_ACCESS_IN && q->access == BLK_ACCESS_IN) ||
			    !extent(&t[j], &lo2, &hi2) || hi <= lo2 || hi2 <= lo)
				continue;
			return blk_rt_error(rt, "launch of %s: tensors %d (%s) and %d (%s) share memory, "
			                    "and %s is written: the compiled code assumes they do not (pass "
			                    "in-out data once, as an inout parameter)", k->name, j, q->name,
			                    i, p->name, p->access != BLK_ACCESS_IN ? p->name : q->name);
		}
	}
	return true;
}
