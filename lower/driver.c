/* driver.c - the GPU pipeline, in one visible list.
 *
 *   clone -> specialize -> regrid -> window -> blockspec -> branches -> seq-loop -> canonicalize
 *         -> coarsen -> reduce-hoist -> dot-engine -> loop-split -> schedule -> persist -> pipeline
 *         -> prefetch -> tile -> dot-stage -> mma-steps -> rotate
 *         -> tma-store -> smem-plan -> emit-llvm -> ptx
 *
 * blk_ir_verify runs after every IR pass, except in a huge kernel (more
 * than BLK_HUGE_KERNEL_OPS ops: thousands of unrolled stores or `when`s),
 * where it runs after the last one only: each run walks the whole kernel,
 * and eighteen of them were a sixth of such a kernel's compile time.
 * --dump-after=PASS (or "all") prints the IR after that pass (emit-llvm:
 * the LLVM module before the LLVM passes of ptx.c; ptx: the PTX).  Each
 * pass states its contract at the top of its file.
 */
#include "lower_int.h"

#include <llvm-c/Core.h>
#include <stdio.h>
#include <string.h>

#include "support/limits.h"

/* The IR -> IR passes, in pipeline order: one table runs the pipeline,
 * names --dump-after's choices and drives a single pass from text. */
typedef bool PassFn(LowerCtx *c);
/* What a pass needs of its input beyond a verified kernel (checked when
 * IR text drives one pass, where nothing earlier made sure of it). */
enum {
	NEEDS_SIZES = 1,  /* the launch sizes and arrays */
	NEEDS_CONST = 2,  /* every shape constant (specialize ran) */
	NEEDS_ENGINE = 4, /* every dot has its engine (dot-engine ran) */
};
static const struct {
	const char *name;
	PassFn *run;
	unsigned needs;
} ir_passes[] = {
	{ "specialize", blk_lower_specialize, NEEDS_SIZES },
	{ "regrid", blk_lower_regrid, NEEDS_CONST },
	{ "window", blk_lower_window, NEEDS_CONST },
	{ "blockspec", blk_lower_blockspec, NEEDS_CONST },
	{ "branches", blk_lower_branches, NEEDS_CONST },
	{ "seq-loop", blk_lower_seq_loop, NEEDS_CONST },
	{ "canonicalize", blk_lower_canonicalize, NEEDS_CONST },
	{ "coarsen", blk_lower_coarsen, NEEDS_CONST },
	{ "reduce-hoist", blk_lower_reduce_hoist, NEEDS_CONST },
	{ "dot-engine", blk_lower_dot_engine, NEEDS_CONST },
	{ "loop-split", blk_lower_loop_split, NEEDS_CONST | NEEDS_ENGINE },
	{ "schedule", blk_lower_schedule, NEEDS_CONST | NEEDS_ENGINE },
	{ "persist", blk_lower_persist, NEEDS_CONST | NEEDS_ENGINE },
	{ "pipeline", blk_lower_pipeline, NEEDS_CONST | NEEDS_ENGINE },
	{ "prefetch", blk_lower_prefetch, NEEDS_CONST | NEEDS_ENGINE },
	{ "tile", blk_lower_tile, NEEDS_CONST | NEEDS_ENGINE },
	{ "dot-stage", blk_lower_dot_stage, NEEDS_CONST | NEEDS_ENGINE },
	{ "mma-steps", blk_lower_mma_steps, NEEDS_CONST | NEEDS_ENGINE },
	{ "rotate", blk_lower_rotate, NEEDS_CONST | NEEDS_ENGINE },
	{ "tma-store", blk_lower_tma_store, NEEDS_CONST | NEEDS_ENGINE },
	{ "smem-plan", blk_lower_smem_plan, NEEDS_CONST },
};
enum { NPASSES = sizeof ir_passes / sizeof ir_passes[0] };

const char *blk_lower_pass_name(int i)
{
	if (i == 0)
		return "clone";
	if (i >= 1 && i <= NPASSES)
		return ir_passes[i - 1].name;
	return i == NPASSES + 1 ? "emit-llvm" : i == NPASSES + 2 ? "ptx" : NULL;
}

static void count_op(void *n, BlkOp *op)
{
	(void)op;
	++*(long *)n;
}

/* Whether to verify after pass i of the table (above; -1: the clone). */
static bool verify_after(const LowerCtx *c, int i)
{
	return !c->huge || i == NPASSES - 1;
}

static bool dumping(const LowerCtx *c, const char *pass)
{
	const char *w = c->opt->dump_after;
	return w && (strcmp(w, "all") == 0 || strcmp(w, pass) == 0);
}

static FILE *dump_file(const LowerCtx *c)
{
	return c->opt->dump_out ? c->opt->dump_out : stderr;
}

/* The verifier after an IR pass (where verify), then the dump if asked. */
static bool checked(LowerCtx *c, bool ok, const char *pass, bool verify)
{
	if (!ok)
		return false;
	if (verify && !blk_ir_verify(c->m, c->d, pass))
		return false;
	if (dumping(c, pass)) {
		fprintf(dump_file(c), "// ----- IR after %s\n", pass);
		blk_ir_print_kernel(dump_file(c), c->k);
	}
	return true;
}

static bool check_launch(LowerCtx *c, const BlkKernel *k)
{
	int w = k->num_warps ? k->num_warps : 4;
	if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16) {
		blk_error(c->d, k->loc, "num_warps must be 1, 2, 4, 8 or 16, not %d", w);
		return false;
	}
	c->nthreads = w * 32;
	return blk_lower_check_arch(c->d, c->arch);
}

/* The op whose tile result needs the most registers per thread (its
 * layout's elements per thread), at or below r. */
static const BlkOp *largest_tile(const BlkRegion *r, int *most)
{
	const BlkOp *best = NULL;
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++) {
			const BlkType *t = &op->results[i]->type;
			int n = t->kind == BLK_TYPE_TILE && t->layout ? blk_layout_nregs(t->layout) : 0;
			if (n > *most)
				*most = n, best = op;
		}
		for (int i = 0; i < op->nregions; i++) {
			const BlkOp *b = largest_tile(op->regions[i], most);
			best = b ? b : best;
		}
	}
	return best;
}

/* Refuses a kernel with a tile too large for registers before LLVM and
 * ptxas see it: past a few hundred elements per thread ptxas spills
 * kilobytes and takes minutes (softmax with C = 100000 in blocks of 4 rows:
 * 3125 per thread, 116 s).  An estimate from the largest tile alone. */
static bool check_registers(LowerCtx *c)
{
	int most = 0;
	const BlkOp *op = largest_tile(c->k->body, &most);
	if (most <= BLK_MAX_TILE_REGS)
		return true;
	BlkType t = op->results[0]->type;
	t.layout = NULL;
	blk_error(c->d, op->loc, "kernel %s: a tile of %s needs %d registers per thread over %d "
	          "threads; the limit is %d: use smaller blocks (or more num_warps)",
	          c->k->name, blk_type_str(c->a, &t), most, c->nthreads, BLK_MAX_TILE_REGS);
	return false;
}

static bool run_backend(LowerCtx *c)
{
	LLVMModuleRef mod;
	if (!blk_lower_emit_llvm(c, &mod))
		return false;
	if (dumping(c, "emit-llvm")) {
		char *s = LLVMPrintModuleToString(mod);
		fprintf(dump_file(c), "// ----- LLVM IR after emit-llvm\n%s", s);
		LLVMDisposeMessage(s);
	}
	LLVMContextRef cx = LLVMGetModuleContext(mod);
	bool ok = blk_lower_ptx(c, mod);
	LLVMDisposeModule(mod);
	LLVMContextDispose(cx);
	if (ok && dumping(c, "ptx"))
		fprintf(dump_file(c), "// ----- PTX\n%s", c->ptx);
	return ok;
}

/* LLVM IR and PTX of the GPU-level kernel c->k, into out with its launch
 * header. */
static bool backend(LowerCtx *c, BlkCompiled *out)
{
	if (!check_registers(c) || !run_backend(c))
		return false;
	out->entry = c->k->name;
	out->ptx = c->ptx;
	out->llvm_ir = c->llvm_ir;
	out->launch = c->k->launch;
	return true;
}

/* The launch as the lowering may see it: a kernel with dynamic sizes gets
 * only their class (ir.h blk_dynamic_class), so two launches of one class
 * compile to the same code; env binds the sizes that are compiled in. */
static void launch_class(LowerCtx *c, const BlkKernel *k, const int64_t *sizes,
                         const BlkArrayDesc *arrays)
{
	c->sizes = sizes, c->arrays = arrays;
	c->env = (BlkSymEnv){ k->nsizes, k->sizes, sizes };
	c->launch_env = c->env;
	if (!sizes || !arrays)
		return;
	int n = 0;
	for (int i = 0; i < k->nparams; i++)
		n += k->params[i].access != BLK_ACCESS_SCRATCH;
	int64_t *cs = BLK_NEW_N(c->a, int64_t, k->nsizes + 1);
	BlkArrayDesc *ca = BLK_NEW_N(c->a, BlkArrayDesc, n + 1);
	if (!blk_dynamic_class(k, sizes, arrays, n, cs, ca))
		return;
	const char **names = BLK_NEW_N(c->a, const char *, k->nsizes + 1);
	int64_t *vals = BLK_NEW_N(c->a, int64_t, k->nsizes + 1);
	int m = 0;
	for (int i = 0; i < k->nsizes; i++)
		if (cs[i] >= 0)
			names[m] = k->sizes[i], vals[m++] = cs[i];
	c->sizes = cs, c->arrays = ca;
	c->env = (BlkSymEnv){ m, names, vals };
}

/* The context for lowering k at these sizes, and k's clone in it (false:
 * the launch is refused).  One for the whole pipeline and its cuts. */
static bool begin(LowerCtx *c, BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                  const BlkArrayDesc *arrays, const BlkLowerOptions *opt)
{
	static const BlkLowerOptions none = { 0 };
	*c = (LowerCtx){ .a = a, .d = d, .opt = opt ? opt : &none };
	launch_class(c, k, sizes, arrays);
	c->arch = c->opt->arch ? c->opt->arch : "sm_90a";
	if (!check_launch(c, k))
		return false;
	c->k = blk_lower_clone(c, k);
	long n = 0;
	blk_lower_walk(c->k->body, count_op, &n);
	c->huge = n > BLK_HUGE_KERNEL_OPS;
	return true;
}

/* Every IR pass on k's clone in c (work: the tile-level work the cost
 * model reads, or NULL).  Where pipeline.c's streams leave the rest of the
 * kernel too little shared memory (smem-plan says so without an error),
 * the passes run again from a new clone without streams. */
static bool lower_ir(LowerCtx *c, BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                     const BlkArrayDesc *arrays, const BlkLowerOptions *opt, BlkCostWork *work)
{
	bool ok = false;
	for (int again = 0; again < 2; again++) {
		ok = begin(c, a, d, k, sizes, arrays, opt) && checked(c, true, "clone", verify_after(c, -1));
		c->no_stream = again;
		for (int i = 0; ok && i < NPASSES; i++) {
			ok = checked(c, ir_passes[i].run(c), ir_passes[i].name, verify_after(c, i));
			if (ok && work && strcmp(ir_passes[i].name, "dot-engine") == 0) /* tile level, engines chosen */
				blk_lower_cost_read(c, work);
		}
		if (ok || !c->stream_overflow)
			break;
	}
	return ok;
}

bool blk_lower_kernel(BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                      const BlkArrayDesc *arrays, const BlkLowerOptions *opt, BlkCompiled *out)
{
	LowerCtx c;
	memset(out, 0, sizeof *out);
	return lower_ir(&c, a, d, k, sizes, arrays, opt, NULL) && backend(&c, out);
}

bool blk_lower_cost(BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                    const BlkArrayDesc *arrays, const BlkLowerOptions *opt, BlkCost *out)
{
	LowerCtx c;
	BlkCostWork work;
	memset(out, 0, sizeof *out);
	bool ok = lower_ir(&c, a, d, k, sizes, arrays, opt, &work);
	if (ok && check_registers(&c))
		blk_lower_cost_estimate(&c, &work, out);
	return ok && !blk_diag_error_count(d);
}

/* Unverified between the passes: the first round of runtime/auto.c runs
 * this for every point, and the frontend's kernel is verified already. */
bool blk_lower_cost_work(BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                         const BlkArrayDesc *arrays, const BlkLowerOptions *opt, BlkCostWork *out)
{
	LowerCtx c;
	memset(out, 0, sizeof *out);
	bool ok = begin(&c, a, d, k, sizes, arrays, opt);
	for (int i = 0; ok && i < NPASSES; i++) {
		ok = ir_passes[i].run(&c) && !blk_diag_error_count(d);
		if (ok && strcmp(ir_passes[i].name, "dot-engine") == 0) {
			blk_lower_cost_read(&c, out);
			return true;
		}
	}
	return false;
}

/* s is constant, or names only dynamic sizes of k (what specialize leaves
 * in array shapes, block dims and Ref types). */
static bool specialized_dim(const BlkKernel *k, const BlkSym *s)
{
	if (s->kind == BLK_SYM_CONST)
		return true;
	if (s->kind == BLK_SYM_VAR) {
		for (int i = 0; k->size_dyn && i < k->nsizes; i++)
			if (k->size_dyn[i] > 0 && strcmp(k->sizes[i], s->name) == 0)
				return true;
		return false;
	}
	return specialized_dim(k, s->a) && specialized_dim(k, s->b);
}

static bool const_type(const BlkKernel *k, const BlkType *t)
{
	int64_t v;
	for (int d = 0; d < t->rank; d++)
		if (t->kind == BLK_TYPE_REF ? !specialized_dim(k, t->dims[d]) : !blk_sym_is_const(t->dims[d], &v))
			return false;
	return true;
}

/* The first op of r (nested regions too) that breaks `needs`, or NULL. */
static const BlkOp *unmet(const BlkKernel *k, const BlkRegion *r, unsigned needs)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			if ((needs & NEEDS_CONST) && !const_type(k, &op->results[i]->type))
				return op;
		if ((needs & NEEDS_ENGINE) && op->kind == BLK_OP_DOT && !blk_op_attr(op, "engine"))
			return op;
		for (int i = 0; i < op->nregions; i++) {
			const BlkOp *u = unmet(k, op->regions[i], needs);
			if (u)
				return u;
		}
	}
	return NULL;
}

/* The pass's needs hold for k, else an error naming the pass to run first
 * (constant shapes before engines: specialize comes first). */
static bool needs_met(BlkDiag *d, const BlkKernel *k, const char *pass, unsigned needs)
{
	bool params = true;
	for (int i = 0; i < k->nparams && (needs & NEEDS_CONST); i++)
		for (int j = 0; j < k->params[i].rank; j++) {
			params &= specialized_dim(k, k->params[i].shape[j]) &&
			          (!k->params[i].block[j] || specialized_dim(k, k->params[i].block[j]));
		}
	const BlkOp *op = unmet(k, k->body, needs & NEEDS_CONST);
	if (!params || op) {
		blk_error(d, op ? op->loc : k->loc, "pass %s needs constant shapes: run --pass=specialize on it first",
		          pass);
		return false;
	}
	op = unmet(k, k->body, needs & NEEDS_ENGINE);
	if (op) {
		blk_error(d, op->loc, "pass %s needs every dot's engine: run --pass=dot-engine on it first", pass);
		return false;
	}
	return true;
}

bool blk_lower_run_pass(BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k, const char *pass,
                        const int64_t *sizes, const BlkArrayDesc *arrays, const BlkLowerOptions *opt)
{
	static const BlkLowerOptions none = { 0 };
	LowerCtx c = { .a = a, .d = d, .m = m, .k = k, .opt = opt ? opt : &none };
	launch_class(&c, k, sizes, arrays);
	c.arch = c.opt->arch ? c.opt->arch : "sm_90a";
	if (!check_launch(&c, k))
		return false;
	for (int i = 0; i < NPASSES; i++) {
		if (strcmp(ir_passes[i].name, pass) != 0)
			continue;
		if ((ir_passes[i].needs & NEEDS_SIZES) && (!sizes || !arrays)) {
			blk_error(d, k->loc, "pass %s needs the launch sizes of kernel %s (SIZE=VALUE)", pass,
			          k->name);
			return false;
		}
		return needs_met(d, k, pass, ir_passes[i].needs) && ir_passes[i].run(&c) &&
		       blk_ir_verify(m, d, pass);
	}
	char names[256] = "";
	for (int i = 0; i < NPASSES; i++) /* the table's, so the message cannot fall behind it */
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", ir_passes[i].name);
	BlkLoc nowhere = { 0 };
	blk_error(d, nowhere, "no IR pass named '%s' (the IR passes: %s)", pass, names);
	return false;
}

/* The first op at or below r that emission cannot take: a tile without a
 * layout (tile has not run), a shared buffer without an offset (smem-plan
 * has not run). */
static const BlkOp *not_emittable(const BlkRegion *r, const char **why)
{
	for (const BlkOp *op = r->first; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++) {
			const BlkType *t = &op->results[i]->type;
			if (t->kind == BLK_TYPE_TILE && t->rank > 0 && !t->layout)
				return *why = "a tile without a layout: run the passes up to tile", op;
		}
		if (op->kind == BLK_OP_LOCAL_ALLOC && !blk_op_attr(op, "offset"))
			return *why = "a shared buffer without an offset: run --pass=smem-plan on it first", op;
		for (int i = 0; i < op->nregions; i++) {
			const BlkOp *u = not_emittable(op->regions[i], why);
			if (u)
				return u;
		}
	}
	return NULL;
}

bool blk_lower_emit_kernel(BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k, const BlkLowerOptions *opt,
                           BlkCompiled *out)
{
	static const BlkLowerOptions none = { 0 };
	LowerCtx c = { .a = a, .d = d, .m = m, .k = k, .opt = opt ? opt : &none };
	launch_class(&c, k, NULL, NULL);
	c.arch = c.opt->arch ? c.opt->arch : "sm_90a";
	memset(out, 0, sizeof *out);
	if (!check_launch(&c, k) || !needs_met(d, k, "emit-llvm", NEEDS_CONST | NEEDS_ENGINE))
		return false;
	const char *why = NULL;
	const BlkOp *op = not_emittable(k->body, &why);
	if (op) {
		blk_error(d, op->loc, "kernel %s is not ready for emission: %s", k->name, why);
		return false;
	}
	return backend(&c, out);
}
