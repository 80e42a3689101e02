/* cost.c - the cost model: how long a kernel lowered for one launch should
 * take, from what the lowering decided.  `auto` compile-time parameters
 * are chosen by it (runtime/auto.c), the tuner ranks its search space with
 * it, and `blkc --report` prints it.
 *
 * Two readings of the kernel, both from the IR:
 *   work (after dot-engine, tile level, shapes constant): the programs of
 *       the grid; per program the dots' FLOPs, the bytes its loads and
 *       stores move through global memory (L2), the trip count of its
 *       longest loop (loops whose bounds depend on program_id are counted
 *       for the program in the middle of the grid: causal attention's
 *       average), and the engine of its dots;
 *   resources (after smem-plan, GPU level): threads, shared bytes,
 *       registers per thread (a loop's carried tiles plus the largest tile
 *       its body makes anew, plus an overhead; a warp-specialized kernel
 *       holds the SM), the deepest pipeline (schedule.c's attr stages).
 *
 * The estimate, per SM (docs/backend.md "The cost model" gives the
 * constants and where they were measured):
 *   resident  = programs an SM from threads, shared memory and registers
 *   conc      = min(resident, programs / SMs): what one wave puts on an SM
 *   waves     = ceil(programs / (SMs * resident))
 *   per trip  = max(conc * FLOPs / (peak * efficiency),
 *                   conc * bytes / L2 share,
 *                   (latency + a trip's transfer) / (stages - 1)
 *                   + a trip's own cost)
 *   time      = waves * (trips * per trip + fixed) , at least the
 *               compulsory bytes over DRAM bandwidth, plus the launch.
 * The efficiency of a tensor-core dot falls with the width each warpgroup
 * multiplies (a narrow wgmma or mma issues more instructions per FLOP).
 */
#include "lower/lower_int.h"

#include <math.h>
#include <string.h>

/* One GPU family's numbers (dense peaks; bandwidth as measured). */
typedef struct Machine {
	int sms;
	double tc, tc8, fp32;     /* FLOP/s: 16-bit tensor cores, 8-bit, FP32 FMA */
	double dram, l2;          /* bytes/s: HBM, L2 to the SMs (all SMs) */
	int smem, smem_reserved;  /* shared bytes an SM; the driver's per CTA */
} Machine;

static const Machine hopper = { 132, 989e12, 1979e12, 67e12, 3.6e12, 8.15e12, 233472, 1024 };
static const Machine ampere = { 108, 312e12, 624e12, 19.5e12, 1.55e12, 3.5e12, 167936, 1024 };

/* SPECIALIZED_REGS: what setmaxnreg gives a consumer warpgroup of a
 * warp-specialized kernel (warp_spec.c). */
enum { SM_REGS = 65536, SM_THREADS = 2048, SM_PROGRAMS = 32, OVERHEAD_REGS = 34, SPILL_MARGIN = 24,
       SPECIALIZED_REGS = 232 };

/* Seconds: a global load's latency that the stages must hide; a program's
 * fixed cost (prologue, epilogue); a launch. */
static const double LATENCY = 1.48e-6, FIXED = 1.11e-6, LAUNCH = 3.0e-6;
/* A loop trip's own cost (barrier, waits, address updates), seconds; the
 * SFU's rate an SM (exp: 16 a clock at 1.75 GHz); the bytes a warp keeps
 * in flight without staging; the share of the SFU time two warpgroups
 * leave exposed; how much faster a warp-specialized kernel keeps the
 * tensor cores fed than plain programs (TMA issued by one producer, the
 * epilogue beside the next tile's loads). */
static const double TRIP = 0.089e-6, SFU_RATE = 16 * 1.75e9, WARP_BYTES_IN_FLIGHT = 1320,
                    SFU_EXPOSED = 0.3, SPECIALIZED_GAIN = 1.6;

/* ---- work: a scalar evaluator for loop bounds ---------------------------- */

typedef struct Eval {
	const LowerCtx *c;
	int64_t mid[BLK_MAX_GRID]; /* program_id: the middle program's */
	int64_t nprog[BLK_MAX_GRID];
} Eval;

static bool eval(const Eval *e, const BlkValue *v, int64_t *out, int depth);

static bool eval2(const Eval *e, const BlkOp *op, int64_t *x, int64_t *y, int depth)
{
	return op->noperands >= 2 && eval(e, op->operands[0], x, depth + 1) &&
	       eval(e, op->operands[1], y, depth + 1);
}

static int64_t floordiv(int64_t x, int64_t y)
{
	int64_t q = x / y;
	return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
}

static bool eval_binary(const Eval *e, const BlkOp *op, int64_t *out, int depth)
{
	int64_t x, y;
	if (!eval2(e, op, &x, &y, depth))
		return false;
	switch (op->kind) {
	case BLK_OP_ADD: *out = x + y; return true;
	case BLK_OP_SUB: *out = x - y; return true;
	case BLK_OP_MUL: *out = x * y; return true;
	case BLK_OP_FLOORDIV: return y != 0 && (*out = floordiv(x, y), true);
	case BLK_OP_MOD: return y != 0 && (*out = x - floordiv(x, y) * y, true);
	case BLK_OP_MIN: *out = x < y ? x : y; return true;
	case BLK_OP_MAX: *out = x > y ? x : y; return true;
	case BLK_OP_LT: *out = x < y; return true;
	case BLK_OP_LE: *out = x <= y; return true;
	case BLK_OP_GT: *out = x > y; return true;
	case BLK_OP_GE: *out = x >= y; return true;
	case BLK_OP_EQ: *out = x == y; return true;
	case BLK_OP_NE: *out = x != y; return true;
	case BLK_OP_AND: *out = x & y; return true;
	case BLK_OP_OR: *out = x | y; return true;
	default: return false;
	}
}

/* v's value for the middle program, if v is a scalar computed from
 * constants, sizes and program ids. */
static bool eval(const Eval *e, const BlkValue *v, int64_t *out, int depth)
{
	const BlkOp *op = v->def;
	if (!op || depth > 64 || v->type.rank > 0)
		return false;
	const BlkAttr *at;
	switch (op->kind) {
	case BLK_OP_CONST:
		at = blk_op_attr(op, "value");
		return at && at->kind == BLK_ATTR_INT && (*out = at->i, true);
	case BLK_OP_PROGRAM_ID:
	case BLK_OP_NUM_PROGRAMS:
		at = blk_op_attr(op, "axis");
		if (!at || at->i < 0 || at->i >= BLK_MAX_GRID)
			return false;
		*out = op->kind == BLK_OP_PROGRAM_ID ? e->mid[at->i] : e->nprog[at->i];
		return true;
	case BLK_OP_SIZE: /* compiled in, else (a dynamic size) the launch's own */
		at = blk_op_attr(op, "name");
		return at && at->kind == BLK_ATTR_STRING &&
		       (blk_sym_eval(blk_sym_var(e->c->a, at->s), &e->c->env, out) ||
		        blk_sym_eval(blk_sym_var(e->c->a, at->s), &e->c->launch_env, out));
	case BLK_OP_CAST:
		return eval(e, op->operands[0], out, depth + 1);
	case BLK_OP_SELECT: {
		int64_t cond;
		return eval(e, op->operands[0], &cond, depth + 1) &&
		       eval(e, op->operands[cond ? 1 : 2], out, depth + 1);
	}
	default:
		return eval_binary(e, op, out, depth);
	}
}

/* ---- work: FLOPs, bytes and trips of one program ----------------------- */

/* Bytes: a row shorter than this moves as if it were this long -- L2 and
 * DRAM move 32-byte sectors, and rows of one 128-byte line keep a warp's
 * requests few (run 136: column sums 16 bytes wide ran at 0.55 of 128). */
enum { SECTOR = 128 };

/* The param a Ref comes from (-1: scratch or a local buffer). */
static int ref_param(const BlkValue *ref)
{
	for (int depth = 0; ref && ref->def && depth < 32; depth++) {
		const BlkOp *op = ref->def;
		if (op->kind == BLK_OP_BLOCK_REF) {
			const BlkAttr *p = blk_op_attr(op, "param");
			return p ? (int)p->i : -1;
		}
		if (op->kind != BLK_OP_VIEW && op->kind != BLK_OP_TRANS_VIEW)
			return -1;
		ref = op->operands[0];
	}
	return -1;
}

static double tile_bytes(const BlkType *t)
{
	double n = blk_dtype_size(t->dtype);
	for (int d = 0; d < t->rank; d++) {
		int64_t v = 0;
		n *= blk_sym_is_const(t->dims[d], &v) ? (double)v : 1;
	}
	return n;
}

static void region_work(const Eval *e, const BlkRegion *r, double times, BlkCostWork *w);

/* The share of a tensor-core engine's peak a dot of width n keeps: a
 * narrow instruction (wgmma's N, mma's tile) issues more often for the same
 * FLOPs.  N = 256 over 128 is worth a few percent (H100, bf16: 128x256
 * tiles 1-3% faster than 256x128 as a matmul, 27% as a 16-batch bmm;
 * gpu-notes runs 140, 142). */
static double width_share(int64_t n)
{
	return n >= 256 ? 1.0 : n >= 128 ? 0.97 : n >= 64 ? 0.675 : n >= 32 ? 0.65 : 0.6;
}

static void count_dot(const BlkOp *op, double times, BlkCostWork *w)
{
	const BlkType *a = &op->operands[0]->type, *b = &op->operands[1]->type;
	int64_t m = 1, k = 1, n = 1;
	blk_sym_is_const(a->dims[a->rank - 2], &m);
	blk_sym_is_const(a->dims[a->rank - 1], &k);
	blk_sym_is_const(b->dims[b->rank - 1], &n);
	double batch = 1;
	for (int d = 0; d < a->rank - 2; d++) {
		int64_t v = 1;
		batch *= blk_sym_is_const(a->dims[d], &v) ? (double)v : 1;
	}
	double f = 2.0 * (double)m * (double)n * (double)k * batch * times;
	w->flops += f;
	w->wide_flops += f / width_share(n); /* each dot at its own width (attention's two, the backward's four) */
	const BlkAttr *eng = blk_op_attr(op, "engine");
	w->engine = eng && eng->kind == BLK_ATTR_STRING ? eng->s : "fma";
	const BlkAttr *fb = blk_op_attr(op, "fallback");
	if (fb && fb->kind == BLK_ATTR_STRING && !w->fallback)
		w->fallback = fb->s;
	w->dtype = a->dtype;
	if (w->dot_m == 0 || (double)m * (double)n > (double)w->dot_m * (double)w->dot_n)
		w->dot_m = m, w->dot_n = n, w->dot_k = k, w->dot_in_loop = times > 1;
}

/* How many bytes move per byte used when tile t of param p reads rows
 * shorter than SECTOR.  Only where the tile and the array have one rank
 * and the array's last dim is contiguous. */
static double sector_waste(const LowerCtx *c, int p, const BlkType *t)
{
	int ai = 0;
	for (int i = 0; i < p; i++)
		ai += c->k->params[i].access != BLK_ACCESS_SCRATCH;
	const BlkArrayDesc *a = c->arrays ? &c->arrays[ai] : NULL;
	int64_t run = 0;
	if (!a || t->rank < 1 || a->rank != t->rank || a->strides[a->rank - 1] != 1 ||
	    !blk_sym_is_const(t->dims[t->rank - 1], &run) || run < 1)
		return 1;
	double bytes = (double)run * blk_dtype_size(t->dtype);
	return bytes >= SECTOR ? 1 : SECTOR / bytes;
}

static void count_access(const LowerCtx *c, const BlkOp *op, double times, BlkCostWork *w)
{
	int p = ref_param(op->operands[0]);
	if (p < 0 || p >= c->k->nparams || c->k->params[p].access == BLK_ACCESS_SCRATCH)
		return;
	const BlkType *t = op->kind == BLK_OP_LOAD ? &op->results[0]->type
	                                           : &op->operands[op->noperands - 1]->type;
	w->bytes += tile_bytes(t) * times * sector_waste(c, p, t);
}

static void count_loop(const Eval *e, const BlkOp *op, double times, BlkCostWork *w)
{
	int64_t lo = 0, hi = 0, step = 1;
	double trips = 1;
	if (eval(e, op->operands[0], &lo, 0) && eval(e, op->operands[1], &hi, 0) &&
	    eval(e, op->operands[2], &step, 0) && step > 0)
		trips = hi > lo ? (double)((hi - lo + step - 1) / step) : 0;
	else
		w->guessed = true;
	if (trips * times > w->trips)
		w->trips = trips * times;
	region_work(e, op->regions[0], times * trips, w);
}

static void note_tiles(const BlkOp *op, BlkCostWork *w)
{
	for (int i = 0; i < op->nresults; i++) {
		const BlkType *t = &op->results[i]->type;
		if (t->kind != BLK_TYPE_TILE)
			continue;
		double n = tile_bytes(t) / blk_dtype_size(t->dtype);
		w->largest_tile = n > w->largest_tile ? n : w->largest_tile;
	}
}

static void region_work(const Eval *e, const BlkRegion *r, double times, BlkCostWork *w)
{
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		note_tiles(op, w);
		if (op->kind == BLK_OP_EXP || op->kind == BLK_OP_LOG || op->kind == BLK_OP_TANH ||
		    op->kind == BLK_OP_SIGMOID || op->kind == BLK_OP_ERF || op->kind == BLK_OP_EXPM1)
			w->sfu += tile_bytes(&op->results[0]->type) / blk_dtype_size(op->results[0]->type.dtype) * times;
		switch (op->kind) {
		case BLK_OP_DOT: count_dot(op, times, w); break;
		case BLK_OP_LOAD:
		case BLK_OP_STORE:
		case BLK_OP_SWAP:
		case BLK_OP_ATOMIC_ADD:
		case BLK_OP_ATOMIC_MAX:
		case BLK_OP_ATOMIC_MIN: count_access(e->c, op, times, w); break;
		case BLK_OP_FOR: count_loop(e, op, times, w); continue;
		default: break;
		}
		for (int i = 0; i < op->nregions; i++) /* if: both branches, as if taken */
			region_work(e, op->regions[i], times, w);
	}
}

void blk_lower_cost_read(const LowerCtx *c, BlkCostWork *w)
{
	Eval e = { .c = c };
	memset(w, 0, sizeof *w);
	w->programs = 1;
	for (int i = 0; i < c->k->grid_rank && i < BLK_MAX_GRID; i++) {
		int64_t v = 1; /* a dynamic extent: at the launch's sizes */
		if (!blk_sym_is_const(c->k->grid[i], &v) && !blk_sym_eval(c->k->grid[i], &c->launch_env, &v))
			v = 1;
		e.nprog[i] = v;
		e.mid[i] = (v - 1) / 2;
		if (!c->k->grid_seq[i]) /* a seq axis is a loop in each program (blockspec.c) */
			w->programs *= (double)v;
	}
	w->trips = 1;
	region_work(&e, c->k->body, 1, w);
	w->compulsory = blk_lower_compulsory_bytes(c->k, c->arrays);
}

/* ---- resources --------------------------------------------------------- */

static bool has_op(const BlkRegion *r, BlkOpKind kind)
{
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		if (op->kind == kind)
			return true;
		for (int i = 0; i < op->nregions; i++)
			if (has_op(op->regions[i], kind))
				return true;
	}
	return false;
}

/* Bytes a trip of the loops does not read from L2 itself: the other CTAs'
 * shares of the slabs multicast to it (warp_spec.c), (mc - 1) / mc of
 * each. */
static double multicast_bytes(const BlkRegion *r)
{
	double n = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		int64_t mc = op->kind == BLK_OP_TMA_LOAD ? blk_op_int(op, "multicast", 0) : 0;
		const BlkType *t = op->noperands ? &op->operands[0]->type : NULL;
		int64_t rows, cols;
		if (mc > 1 && t->rank == 2 && blk_sym_is_const(t->dims[0], &rows) && blk_sym_is_const(t->dims[1], &cols))
			n += (double)(rows * cols * blk_dtype_size(t->dtype)) * (double)(mc - 1) / (double)mc;
		for (int i = 0; i < op->nregions; i++)
			n += multicast_bytes(op->regions[i]);
	}
	return n;
}

/* A tile's registers a thread: its layout's elements, two 16-bit or four
 * 8-bit ones a register. */
static double tile_regs(const BlkType *t)
{
	if (t->kind != BLK_TYPE_TILE || !t->layout)
		return 0;
	int size = blk_dtype_size(t->dtype);
	return blk_layout_nregs(t->layout) * (size >= 4 ? 1.0 : size / 4.0);
}

/* v accumulates into one of body's arguments: a chain of dots (their acc
 * operand) and wgmma waits back to a loop carry works in place. */
static bool from_carry(const BlkValue *v, const BlkRegion *body)
{
	for (int depth = 0; v && depth < 64; depth++) {
		if (!v->def)
			return v->owner == body;
		if (v->def->kind == BLK_OP_DOT && v->def->noperands > 2)
			v = v->def->operands[2];
		else if (v->def->kind == BLK_OP_WGMMA_WAIT && v->def->noperands > 0)
			v = v->def->operands[0];
		else
			return false;
	}
	return false;
}

/* The largest tile r's ops make anew (not accumulating into a carry of
 * body), nested regions included. */
static double fresh_regs(const BlkRegion *r, const BlkRegion *body)
{
	double most = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			if (!from_carry(op->results[i], body))
				most = fmax(most, tile_regs(&op->results[i]->type));
		for (int i = 0; i < op->nregions; i++)
			most = fmax(most, fresh_regs(op->regions[i], body));
	}
	return most;
}

/* The tiles body makes anew that are live across one of its dots, with
 * that dot's own result, at the busiest dot: a loop of dependent dots
 * (attention's backward: P^T = exp(K Q^T - L) is held while dP^T = V dO^T
 * runs) holds several score tiles at once, where elementwise chains are
 * fused element by element and hold one. */
static double across_dots(const BlkRegion *body)
{
	enum { MAX_HELD = 256 }; /* fresh tiles tracked (a body's, in order) */
	struct { int def, last; double regs; } held[MAX_HELD];
	int n = 0, i = 0;
	for (const BlkOp *op = body->first; op; op = op->next, i++) /* each fresh tile's live range */
		for (int k = 0; k < op->nresults && n < MAX_HELD; k++) {
			const BlkValue *v = op->results[k];
			if (v->type.rank < 2 || from_carry(v, body))
				continue;
			int j = 0, last = -1;
			for (const BlkOp *u = body->first; u; u = u->next, j++)
				if (j > i && blk_lower_op_reads(u, v))
					last = j;
			held[n].def = i, held[n].last = last, held[n].regs = tile_regs(&v->type);
			n++;
		}
	double most = 0;
	i = 0;
	for (const BlkOp *d = body->first; d; d = d->next, i++) {
		if (d->kind != BLK_OP_DOT)
			continue;
		double live = from_carry(d->results[0], body) ? 0 : tile_regs(&d->results[0]->type);
		for (int h = 0; h < n; h++)
			live += held[h].def < i && held[h].last > i ? held[h].regs : 0;
		most = fmax(most, live);
	}
	return most;
}

/* Registers a thread holds at its busiest: in a loop, the tiles it carries
 * plus the largest its body makes anew (attention's accumulator and its
 * scores), or the tiles held across a dot where that is more; elsewhere
 * the largest tile. */
static double live_regs(const BlkRegion *r)
{
	double most = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		for (int i = 0; i < op->nresults; i++)
			most = fmax(most, tile_regs(&op->results[i]->type));
		if (op->kind == BLK_OP_FOR) {
			const BlkRegion *body = op->regions[0];
			double carried = 0;
			for (int i = 1; i < body->nargs; i++)
				carried += tile_regs(&body->args[i]->type);
			most = fmax(most, carried + fmax(fresh_regs(body, body), across_dots(body)));
		}
		for (int i = 0; i < op->nregions; i++)
			most = fmax(most, live_regs(op->regions[i]));
	}
	return most;
}

/* Programs an SM: the smallest of what threads, shared memory, registers
 * and the CTA cap allow; why names the limit. */
static int resident(const Machine *mc, const BlkLaunch *l, int regs, bool specialized, const char **why)
{
	int threads = l->threads > 0 ? l->threads : 128;
	int warps = (threads + 31) / 32;
	int by_threads = SM_THREADS / threads;
	int by_smem = l->smem ? mc->smem / ((int)l->smem + mc->smem_reserved) : SM_PROGRAMS;
	int per_warp = (regs * 32 + 255) / 256 * 256;
	int by_regs = specialized ? 1 : SM_REGS / per_warp / warps;
	int n = by_threads;
	*why = "threads";
	if (by_smem < n)
		n = by_smem, *why = "shared memory";
	if (by_regs < n)
		n = by_regs, *why = specialized ? "warp specialization (one program holds the SM)" : "registers";
	if (SM_PROGRAMS < n)
		n = SM_PROGRAMS, *why = "the per-SM program cap";
	return n;
}

/* ---- the estimate ------------------------------------------------------ */

/* The share of a dot engine's peak the dots keep: on tensor cores the
 * engine's, each dot's width counted in wide_flops (width_share). */
static double engine_efficiency(const BlkCostWork *w, int threads)
{
	/* FMA: a thread's micro-tile of e accumulators (about sqrt(e) on a
	 * side) loads 2 sqrt(e) shared values a k step for e FMAs; shared
	 * memory's 32 words a clock feed the 128 FMA lanes from e = 64 in
	 * theory, from e = 128 as measured (run 136: 8x16 a thread is the
	 * fastest f32 matmul, 8x8 runs at 0.79 of it) */
	if (!w->engine || strcmp(w->engine, "fma") == 0) {
		double e = (double)w->dot_m * (double)w->dot_n / (threads > 0 ? threads : 128);
		return 0.85 * fmin(1.0, sqrt(e > 1 ? e : 1) / sqrt(128));
	}
	return strcmp(w->engine, "wgmma") == 0 ? 0.9 : 0.65;
}

double blk_lower_compulsory_bytes(const BlkKernel *k, const BlkArrayDesc *arrays)
{
	double bytes = 0;
	int n = 0;
	for (int p = 0; p < k->nparams && arrays; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		const BlkArrayDesc *a = &arrays[n++];
		double elems = 1;
		for (int d = 0; d < a->rank; d++)
			elems *= (double)a->shape[d];
		bytes += elems * blk_dtype_size(a->dtype) * (pa->access == BLK_ACCESS_INOUT ? 2 : 1);
	}
	return bytes;
}

static double peak(const Machine *mc, const BlkCostWork *w)
{
	if (!w->engine || strcmp(w->engine, "fma") == 0)
		return mc->fp32;
	return blk_dtype_size(w->dtype) == 1 ? mc->tc8 : mc->tc;
}

/* What a program holds, read from the lowered kernel or guessed. */
typedef struct Res {
	int threads;
	int64_t smem;
	int regs;
	bool specialized;
	int stages;
	double shared;   /* bytes a program gets from the other CTAs of its cluster (multicast) */
	double streamed; /* bytes a stream loop keeps in flight (pipeline.c: (stages - 1) slabs), or 0 */
	int stream_stages;
} Res;

static void estimate(const Machine *mc, int sms, const BlkCostWork *w, const Res *r, BlkCost *out)
{
	BlkLaunch l = { .threads = r->threads, .smem = r->smem };
	memset(out, 0, sizeof *out);
	out->work = *w;
	out->regs = r->regs;
	out->threads = r->threads;
	out->smem = r->smem;
	out->specialized = r->specialized;
	out->per_sm = resident(mc, &l, r->regs > 255 ? 255 : r->regs, r->specialized, &out->limit);
	/* a spill in the inner loop: the live tiles and a few registers for
	 * addresses and indices past what a thread may have */
	if (r->regs - OVERHEAD_REGS + SPILL_MARGIN > (r->specialized ? SPECIALIZED_REGS : 255))
		out->per_sm = 0, out->limit = "registers (a thread would spill)";
	if (out->per_sm < 1) {
		out->us = INFINITY;
		return;
	}
	double per_sm_progs = ceil(w->programs / sms);
	double conc = out->per_sm < per_sm_progs ? out->per_sm : per_sm_progs;
	out->waves = ceil(w->programs / ((double)sms * out->per_sm));
	double trips = w->trips > 0 ? w->trips : 1;
	int warps = r->specialized ? 8 : (r->threads + 31) / 32;
	bool tc = w->engine && strcmp(w->engine, "fma") != 0;
	double dots = w->flops > 0 ? (tc ? w->wide_flops : w->flops) / (peak(mc, w) / sms * engine_efficiency(w, r->threads)) : 0;
	dots /= r->specialized ? SPECIALIZED_GAIN : 1;
	/* exp and friends on the SFUs: mostly beside the dots when two
	 * warpgroups take turns (FlashAttention-3's ping-pong), after them with one */
	double sfu = w->sfu / SFU_RATE * (warps >= 8 && dots > 0 ? SFU_EXPOSED : 1);
	double compute = conc * (dots + sfu);
	/* loads in flight: staged copies for a dot loop, else what the warps
	 * on the SM keep outstanding */
	double held = fmax(warps * WARP_BYTES_IN_FLIGHT, r->streamed); /* a stream's slots, or the warps' loads */
	double flight = w->dot_in_loop ? 1 : fmin(1, conc * held / (mc->dram / sms * LATENCY));
	double memory = conc * fmax(w->bytes - r->shared, 0) / (mc->l2 / sms) / flight;
	int stages = r->stages > 1 && w->dot_in_loop ? r->stages : r->stream_stages > 2 ? r->stream_stages : 2;
	/* a staged copy arrives after its latency and its transfer at the
	 * SM's share of L2 (the slabs of one trip: 96 KB at 128 x 256 x 128,
	 * 1.6 us), stages - 1 of them in flight: a two-stage pipeline of big
	 * slabs leaves most of both exposed (gpu-notes run 218: 128 x 256 x
	 * 128 at 2 stages 0.70 of cuBLAS where 128 x 256 x 64 ran 0.93) */
	double transfer = w->dot_in_loop ? conc * fmax(w->bytes - r->shared, 0) / trips / (mc->l2 / sms) : 0;
	double latency = trips * ((LATENCY + transfer) / (stages - 1) + TRIP);
	out->flight = flight;
	double wave = fmax(fmax(compute, memory), latency) + FIXED;
	out->compute_us = out->waves * compute * 1e6;
	out->memory_us = out->waves * memory * 1e6;
	out->latency_us = out->waves * latency * 1e6;
	out->us = out->waves * wave * 1e6;
}

static const Machine *machine(const char *arch)
{
	return arch && strncmp(arch, "sm_8", 4) == 0 ? &ampere : &hopper;
}

static void finish(const Machine *mc, double compulsory, BlkCost *out)
{
	out->dram_us = compulsory / (mc->dram * (out->flight > 0 ? out->flight : 1)) * 1e6;
	out->us = fmax(out->us, out->dram_us) + LAUNCH * 1e6;
}

/* The most stages schedule.c gave a loop (attr stages), at any depth: a
 * specialized loop sits inside the persistent one and warp_specialize. */
static double deepest(const BlkRegion *r)
{
	double most = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		const BlkAttr *st = op->kind == BLK_OP_FOR ? blk_op_attr(op, "stages") : NULL;
		if (st && st->kind == BLK_ATTR_INT)
			most = fmax(most, (double)st->i);
		for (int i = 0; i < op->nregions; i++)
			most = fmax(most, deepest(op->regions[i]));
	}
	return most;
}

/* A stream loop's bytes in flight and stages (pipeline.c's attrs
 * stream_bytes, a stage's slabs, and stages), the largest. */
static void streams(const BlkRegion *r, Res *res)
{
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next) {
		int64_t bytes = op->kind == BLK_OP_FOR ? blk_op_int(op, "stream_bytes", 0) : 0;
		int64_t S = bytes ? blk_op_int(op, "stages", 2) : 0;
		if (bytes && (double)(S - 1) * bytes > res->streamed)
			res->streamed = (double)(S - 1) * bytes, res->stream_stages = (int)S;
		for (int i = 0; i < op->nregions; i++)
			streams(op->regions[i], res);
	}
}

void blk_lower_cost_estimate(const LowerCtx *c, const BlkCostWork *w, BlkCost *out)
{
	const Machine *mc = machine(c->arch);
	const BlkLaunch *l = c->k->launch;
	Res r = { l->threads, l->smem, (int)ceil(live_regs(c->k->body)) + OVERHEAD_REGS,
	          has_op(c->k->body, BLK_OP_WARP_SPECIALIZE), c->k->num_stages, 0, 0, 0 };
	r.stages = (int)fmax(r.stages, deepest(c->k->body)); /* schedule.c's deeper pipeline */
	r.shared = multicast_bytes(c->k->body) * (w->trips > 0 ? w->trips : 1);
	streams(c->k->body, &r);
	estimate(mc, c->opt->num_sms > 0 ? c->opt->num_sms : mc->sms, w, &r, out);
	finish(mc, w->compulsory, out);
}

void blk_lower_cost_guess(const BlkCostWork *w, int warps, int stages, const BlkLowerOptions *opt,
                          BlkCost *out)
{
	const Machine *mc = machine(opt ? opt->arch : NULL);
	/* coarsen.c's widen: on sm_90a a tensor-core accumulator past 128
	 * registers a thread gets more warps (up to 8) to hold it */
	bool hopper_tc = opt && opt->arch && strcmp(opt->arch, "sm_90a") == 0 && w->dot_in_loop && w->engine &&
	                 strcmp(w->engine, "fma") != 0;
	int threads = (hopper_tc ? blk_lower_widened_warps(warps, w->largest_tile) : warps) * 32;
	double esize = w->engine ? blk_dtype_size(w->dtype) : 0;
	double slab = (double)(w->dot_m + w->dot_n) * (double)w->dot_k * esize;
	Res r = { threads, (int64_t)(slab * (w->dot_in_loop ? stages : 1)),
	          (int)(w->largest_tile / threads) + OVERHEAD_REGS, false, stages, 0, 0, 0 };
	estimate(mc, opt && opt->num_sms > 0 ? opt->num_sms : mc->sms, w, &r, out);
	finish(mc, w->compulsory, out);
}
