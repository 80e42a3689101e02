/* host.c - what a host language needs besides launching: the version, a
 * kernel's tensor parameters, the shapes of outputs it has not made yet,
 * and the CPU interpreter on host arrays (the Python package's
 * interpret=True, and the public face of `blkc run --interpret`). */
#include "rt.h"
#include "interp/interp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(BLK_PARAM_IN == (int)BLK_ACCESS_IN && BLK_PARAM_OUT == (int)BLK_ACCESS_OUT &&
               BLK_PARAM_INOUT == (int)BLK_ACCESS_INOUT, "ORDER ACCESS: blk.h and ir.h disagree");

const char *blk_version(void)
{
	return BLK_VERSION;
}

/* The kernel's param that tensor i is passed for, or NULL. */
static const BlkParam *tensor_param(const BlkKernel *k, int i)
{
	for (int p = 0; p < k->nparams; p++)
		if (k->params[p].access != BLK_ACCESS_SCRATCH && i-- == 0)
			return &k->params[p];
	return NULL;
}

bool blk_func_param(BlkFunc *f, int i, BlkParamInfo *out)
{
	if (!blk_rt_func_ok(f, "blk_func_param"))
		return false;
	if (!out)
		return blk_rt_error(f->prog->rt, "blk_func_param: out is NULL");
	const BlkParam *p = i >= 0 ? tensor_param(f->kernel, i) : NULL;
	if (!p)
		return blk_rt_error(f->prog->rt, "kernel %s has %d tensor params; there is no param %d",
		                    f->kernel->name, f->ntensors, i);
	out->name = p->name;
	out->access = (int)p->access;
	out->dtype = (int)p->dtype;
	out->rank = p->rank;
	out->symmetric = p->signal ? 2 : p->symmetric ? 1 : 0;
	return true;
}

int blk_func_num_sizes(const BlkFunc *f)
{
	return blk_rt_func_ok(f, "blk_func_num_sizes") ? f->kernel->nsizes : -1;
}

const char *blk_func_size_name(const BlkFunc *f, int i)
{
	if (!blk_rt_func_ok(f, "blk_func_size_name"))
		return NULL;
	return i >= 0 && i < f->kernel->nsizes ? f->kernel->sizes[i] : NULL;
}

bool blk_func_bind(BlkFunc *f, const BlkTensor *tensors, int ntensors, int64_t *values)
{
	if (!blk_rt_func_ok(f, "blk_func_bind"))
		return false;
	if (!values && f->kernel->nsizes > 0)
		return blk_rt_error(f->prog->rt, "blk_func_bind: values is NULL");
	if (ntensors != f->ntensors) /* before sizing anything by it */
		return blk_rt_error(f->prog->rt, "launch of %s: expected %d arrays, got %d", f->kernel->name,
		                    f->ntensors, ntensors);
	BlkArrayDesc *arrays = calloc((size_t)(ntensors > 0 ? ntensors : 1), sizeof *arrays);
	bool ok = arrays && blk_rt_bind(f, tensors, ntensors, arrays, values);
	if (!arrays)
		blk_rt_error(f->prog->rt, "out of memory");
	free(arrays);
	return ok;
}

/* ---- shapes of the tensors not given ------------------------------------ */

/* Binds the sizes that given tensors' dims name directly (a dim M); a size
 * bound twice to different values is an error. */
static bool bind_direct(BlkFunc *f, const BlkTensor *t, int n, int64_t *values)
{
	const BlkKernel *k = f->kernel;
	for (int i = 0; i < n; i++) {
		const BlkParam *p = tensor_param(k, i);
		for (int d = 0; t[i].rank == p->rank && d < p->rank; d++) {
			const BlkSym *s = p->shape[d];
			for (int z = 0; s->kind == BLK_SYM_VAR && z < k->nsizes; z++) {
				if (strcmp(k->sizes[z], s->name) != 0)
					continue;
				if (values[z] >= 0 && values[z] != t[i].shape[d])
					return blk_rt_error(f->prog->rt, "launch of %s: size %s is %lld from an earlier "
					                    "array but %lld from %s (dim %d)", k->name, s->name,
					                    (long long)values[z], (long long)t[i].shape[d], p->name, d);
				/* before an output is sized by it (a 2^40 dim of a broadcast
				 * input allocated terabytes) */
				if (t[i].shape[d] > INT32_MAX)
					return blk_rt_error(f->prog->rt, "launch of %s: size %s = %lld (from %s) does "
					                    "not fit in i32", k->name, s->name,
					                    (long long)t[i].shape[d], p->name);
				values[z] = t[i].shape[d];
			}
		}
	}
	return true;
}

/* A given tensor of the wrong rank binds nothing: say so, rather than
 * that an output's shape is not fixed. */
static bool given_ranks_ok(BlkFunc *f, const BlkTensor *t, int n)
{
	for (int i = 0; i < n; i++) {
		const BlkParam *p = tensor_param(f->kernel, i);
		if (t[i].rank >= 0 && t[i].rank != p->rank)
			return blk_rt_error(f->prog->rt, "launch of %s: %s has rank %d but the kernel "
			                    "expects rank %d", f->kernel->name, p->name, t[i].rank, p->rank);
	}
	return true;
}

/* Gives tensor i (not given) its param's dtype, rank, shape and strides. */
static bool infer_one(BlkFunc *f, BlkTensor *t, const BlkParam *p, const BlkSymEnv *env)
{
	memset(t->shape, 0, sizeof t->shape);
	for (int d = 0; d < p->rank; d++) {
		if (!blk_sym_eval(p->shape[d], env, &t->shape[d]) || t->shape[d] < 0) {
			BlkArena *a = blk_arena_create();
			blk_rt_error(f->prog->rt, "launch of %s: the shape of %s (dim %d: %s) is not fixed by "
			             "the arrays given; pass %s", f->kernel->name, p->name, d,
			             blk_sym_str(a, p->shape[d]), p->name);
			blk_arena_destroy(a);
			return false;
		}
	}
	for (int d = 0; d < p->rank; d++)
		if (t->shape[d] > INT32_MAX) { /* a dim is below 2^31, as a launch checks */
			BlkArena *a = blk_arena_create();
			blk_rt_error(f->prog->rt, "launch of %s: dim %d of %s (%s) would be %lld, past "
			             "2^31 - 1", f->kernel->name, d, p->name, blk_sym_str(a, p->shape[d]),
			             (long long)t->shape[d]);
			blk_arena_destroy(a);
			return false;
		}
	*t = blk_tensor_make(t->data, (int)p->dtype, p->rank, t->shape);
	return true;
}

bool blk_func_infer_shapes(BlkFunc *f, BlkTensor *tensors, int ntensors)
{
	if (!blk_rt_func_ok(f, "blk_func_infer_shapes"))
		return false;
	const BlkKernel *k = f->kernel;
	if (ntensors > 0 && !tensors)
		return blk_rt_error(f->prog->rt, "blk_func_infer_shapes: tensors is NULL");
	if (ntensors != f->ntensors)
		return blk_rt_error(f->prog->rt, "launch of %s: expected %d arrays, got %d", k->name,
		                    f->ntensors, ntensors);
	int64_t *values = malloc(sizeof *values * (size_t)(k->nsizes + 1));
	if (!values)
		return blk_rt_error(f->prog->rt, "out of memory");
	for (int z = 0; z < k->nsizes; z++)
		values[z] = -1;
	bool ok = given_ranks_ok(f, tensors, ntensors) && bind_direct(f, tensors, ntensors, values);
	BlkSymEnv env = {.n = k->nsizes, .names = k->sizes, .values = values};
	for (int i = 0; ok && i < ntensors; i++)
		if (tensors[i].rank < 0)
			ok = infer_one(f, &tensors[i], tensor_param(k, i), &env);
	free(values);
	return ok;
}

/* ---- the interpreter ---------------------------------------------------- */

void blk_runtime_interrupt(BlkRuntime *rt)
{
	/* no error on a bad handle: a signal handler may call this */
	if (rt && rt->tag == BLK_TAG_RUNTIME)
		atomic_store(&rt->interrupt, true);
}

/* Every rank's tensors bound (sizes checked per rank), then the world run. */
static bool interpret(BlkFunc *f, int nranks, const BlkTensor *const *tensors, int ntensors)
{
	BlkRuntime *rt = f->prog->rt;
	const BlkKernel *k = f->kernel;
	if (nranks < 1 || nranks > BLK_INTERP_MAX_RANKS)
		return blk_rt_error(rt, "blk_interpret_world: %d ranks; it takes 1 to %d", nranks,
		                    BLK_INTERP_MAX_RANKS);
	if (!tensors)
		return blk_rt_error(rt, "blk_interpret_world: tensors is NULL");
	if (ntensors != f->ntensors) /* before sizing anything by it (n * nranks overflowed) */
		return blk_rt_error(rt, "launch of %s: expected %d arrays, got %d", k->name, f->ntensors, ntensors);
	int n = ntensors > 0 ? ntensors : 1;
	BlkArrayDesc *arrays = calloc((size_t)(n * nranks), sizeof *arrays);
	int64_t *sizes = calloc((size_t)k->nsizes + 1, sizeof *sizes);
	void **data = calloc((size_t)(n * nranks), sizeof *data);
	const BlkArrayDesc **ranks_arrays = calloc((size_t)nranks, sizeof *ranks_arrays);
	void *const **ranks_data = calloc((size_t)nranks, sizeof *ranks_data);
	bool ok = arrays && sizes && data && ranks_arrays && ranks_data;
	if (!ok)
		blk_rt_error(rt, "out of memory");
	for (int r = 0; ok && r < nranks; r++) {
		if (!tensors[r] && ntensors > 0) {
			ok = blk_rt_error(rt, "blk_interpret_world: rank %d's tensors are NULL", r);
			break;
		}
		ok = blk_rt_bind(f, tensors[r], ntensors, arrays + r * n, sizes);
		for (int i = 0; ok && i < ntensors; i++)
			data[r * n + i] = tensors[r][i].data;
		ranks_arrays[r] = arrays + r * n;
		ranks_data[r] = data + r * n;
	}
	BlkArena *a = ok ? blk_arena_create() : NULL;
	BlkCapture c;
	if (a && blk_rt_capture_open(rt, &c, a)) {
		fflush(stdout);
		atomic_store(&rt->interrupt, false);
		ok = blk_interp_run_world(k, nranks, ranks_arrays, (void *const *const *)ranks_data, ntensors,
		                          stdout, c.d, &rt->interrupt) &&
		     !blk_diag_error_count(c.d);
		fflush(stdout);
		blk_rt_capture_close(rt, &c, !ok, NULL);
	} else {
		ok = false;
	}
	blk_arena_destroy(a);
	free(arrays);
	free(sizes);
	free(data);
	free(ranks_arrays);
	free(ranks_data);
	return ok;
}

bool blk_interpret(BlkFunc *f, const BlkTensor *tensors, int ntensors)
{
	if (!blk_rt_func_ok(f, "blk_interpret"))
		return false;
	const BlkTensor *const t[1] = { tensors };
	return interpret(f, 1, t, ntensors);
}

bool blk_interpret_world(BlkFunc *f, int nranks, const BlkTensor *const *tensors, int ntensors)
{
	if (!blk_rt_func_ok(f, "blk_interpret_world"))
		return false;
	return interpret(f, nranks, tensors, ntensors);
}

int blk_func_multi_rank(const BlkFunc *f)
{
	if (!blk_rt_func_ok(f, "blk_func_multi_rank"))
		return -1;
	return blk_kernel_multi_rank(f->kernel) ? 1 : 0;
}

bool blk_runtime_set_world(BlkRuntime *rt, int rank, int world)
{
	if (!blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_runtime_set_world"))
		return false;
	if (world < 1 || world > BLK_MAX_WORLD)
		return blk_rt_error(rt, "blk_runtime_set_world: a world of %d ranks; it has 1 to %d",
		                    world, BLK_MAX_WORLD);
	if (rank < 0 || rank >= world)
		return blk_rt_error(rt, "blk_runtime_set_world: rank %d of a world of %d (a rank is 0 .. "
		                    "world - 1)", rank, world);
	rt->rank = rank;
	rt->world = world;
	return true;
}
