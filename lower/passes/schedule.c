/* schedule.c - how the tensor cores are kept busy: by one warp-specialized
 * persistent program an SM, or by several plain programs an SM.
 *
 * Requires: shapes constant, dot engines chosen.  Applies on sm_90a to a
 * kernel of whole warpgroups: each top-level `for` whose body runs a wgmma
 * dot gets attr schedule, which persist.c and warp_spec.c follow, and the
 * numbers the choice came from (a cost model, not a recipe):
 *
 *   "specialize": one persistent CTA an SM, a producer warpgroup filling
 *       the slots by TMA while the consumers multiply (warp_spec.c).  Its
 *       resident accumulator work is the tile, BM x BN elements -- one
 *       program's, for a kernel of one warpgroup, whose two ping-pong
 *       programs take turns at the tensor cores.
 *   "plain": programs as the grid has them, several an SM, each
 *       pipelining its own loads.  As many as registers, shared memory and
 *       threads let stay resident (attr plain_programs, recorded either
 *       way), each with its tile.
 *
 * Plain is chosen only when its resident work is more than twice the
 * specialized one's: the specialized kernel overlaps its loads with the
 * multiplies completely and walks the tiles in L2-friendly groups, so the
 * plain one needs that margin to keep the tensor cores as busy (measured
 * on the habitual block configs, docs/backend.md).  A kernel with big
 * tiles (128 x 128 a warpgroup) keeps one program an SM either way and is
 * specialized; 64 x 64 tiles of one warpgroup run seven plain programs an
 * SM instead of one specialized.
 *
 * A loop whose dot reads rows gathered through index tiles (an implicit
 * GEMM) is plain: TMA cannot gather, the plain pipeline's cp.async can.
 * So is one whose dot operand the body computes from its loads (int4
 * weights unpacked and scaled): the threads that multiply make it.
 *
 * The register estimate: the accumulators a thread holds plus
 * SCHED_OVERHEAD_REGS for addresses, indices and operands; shared memory:
 * num_stages slabs of every dot's operands.
 */
#include "lower/lower_int.h"

#include <string.h>

enum {
	SM_REGS = 65536,          /* registers an SM (sm_90) */
	SM_THREADS = 2048,
	SM_PROGRAMS = 32,         /* resident CTAs an SM */
	SCHED_OVERHEAD_REGS = 40, /* a thread's registers besides its accumulators */
	MAX_THREAD_REGS = 255,
	MAX_FREE_STAGES = 6,      /* free_stages' and free_slots' most */
	SMEM_MARGIN = 8192,       /* free_slots: barriers and what else shares the SM's */
};

typedef struct Work {
	int64_t acc;   /* accumulator elements of the loop's wgmma dots */
	int64_t slab;  /* bytes of one stage of their operands */
	int ndots;
	bool gathers;  /* an operand loaded through index tiles */
	bool computed; /* an operand computed from loads on its way in (int4 weights unpacked) */
} Work;

/* v is loaded through index tiles (directly or transposed). */
static bool gathered(const BlkValue *v)
{
	const BlkOp *d = v->def;
	if (d && blk_transpose_plain(d))
		d = d->operands[0]->def;
	return d && d->kind == BLK_OP_LOAD && blk_op_gathers(d);
}

static void count_dot(void *ctx, BlkOp *op)
{
	Work *w = ctx;
	if (op->kind != BLK_OP_DOT || !blk_lower_dot_wgmma(op))
		return;
	w->gathers = w->gathers || gathered(op->operands[0]) || gathered(op->operands[1]);
	w->computed = w->computed || blk_lower_transformed_load(op->operands[1], op->parent); /* (B: pipeline.c) */
	const BlkType *a = &op->operands[0]->type, *b = &op->operands[1]->type;
	int64_t M = blk_lower_dim(a->dims[0]), K = blk_lower_dim(a->dims[1]), N = blk_lower_dim(b->dims[1]);
	w->acc += M * N;
	w->slab += (M * K * blk_dtype_size(a->dtype)) + (K * N * blk_dtype_size(b->dtype));
	w->ndots++;
}

/* Plain programs an SM: the least of what registers, shared memory,
 * threads and the program cap allow (at least one). */
static int plain_programs(const LowerCtx *c, const Work *w, int stages)
{
	int64_t regs = w->acc / c->nthreads + SCHED_OVERHEAD_REGS;
	regs = regs > MAX_THREAD_REGS ? MAX_THREAD_REGS : (regs + 7) / 8 * 8;
	stages = stages > 1 ? stages : 1;
	int64_t by_regs = SM_REGS / (regs * c->nthreads);
	int64_t by_smem = blk_lower_arch_smem(c->arch) / (stages * w->slab + 1024);
	int64_t n = SM_THREADS / c->nthreads;
	n = by_regs < n ? by_regs : n;
	n = by_smem < n ? by_smem : n;
	n = SM_PROGRAMS < n ? SM_PROGRAMS : n;
	return n > 1 ? (int)n : 1;
}

/* Plain programs pipeline deeper than num_stages where shared memory is
 * free: the most slabs (up to MAX_FREE_STAGES) that keep as many programs
 * an SM as num_stages does (registers or threads bind first).  A load
 * issued further ahead hides more of its latency at no cost in occupancy
 * (CUTLASS sizes its stages from the shared memory left the same way).
 * H200, bf16 x @ W.T 4096^3 at 128x128x32 on 4 warps: 3 stages 0.47 of
 * cuBLAS, 4 stages 0.69 (gpu-notes run 137).  The slabs must still fit:
 * plain_programs never says fewer than one program, even where one
 * program's stages overflow the shared memory. */
static int free_stages(const LowerCtx *c, const Work *w, int plain)
{
	int s = c->k->num_stages;
	/* a kernel that signals combines its tiles with others after the loop
	 * (a reduce-scatter's sum), through a transit region the stages would
	 * have taken: it keeps the stages it asks for */
	if (blk_kernel_signals(c->k))
		return s;
	while (s >= 2 && s < MAX_FREE_STAGES && plain_programs(c, w, s + 1) >= plain &&
	       (int64_t)plain * ((s + 1) * w->slab + 1024) <= blk_lower_arch_smem(c->arch))
		s++;
	return s;
}

/* The largest element of the kernel's outputs: what the epilogue stages
 * through shared memory for its TMA store. */
static int64_t out_size(const LowerCtx *c)
{
	int64_t most = 1;
	for (int i = 0; i < c->k->nparams; i++) {
		const BlkParam *p = &c->k->params[i];
		if (p->access == BLK_ACCESS_OUT || p->access == BLK_ACCESS_INOUT)
			most = blk_dtype_size(p->dtype) > most ? blk_dtype_size(p->dtype) : most;
	}
	return most;
}

/* A specialized loop of one dot (a GEMM's, whose shared memory is its
 * slots and the epilogue's staging) fills the shared memory left with
 * more slots, up to MAX_FREE_STAGES: the producer runs further ahead.
 * The epilogue stages each consumer program's tile (two ping-pong
 * programs on one warpgroup).  H200, x @ W.T 4096^3, 128x128x64 on 8
 * warps: 3 stages 0.66 of cuBLAS, 4 stages 0.91 (gpu-notes run 133). */
static int free_slots(const LowerCtx *c, const Work *w)
{
	int s = c->k->num_stages;
	if (blk_kernel_signals(c->k)) /* as free_stages: its epilogue's transit needs the room */
		return s;
	int64_t epilogue = (c->nthreads == 128 ? 2 : 1) * w->acc * out_size(c);
	if (blk_lower_epilogue_tile(c->k, w->acc) && w->acc * 4 > epilogue) /* (mm_bias_silu_res: 278 KB at 6 slabs) */
		epilogue = w->acc * 4;
	int64_t room = blk_lower_arch_smem(c->arch) - SMEM_MARGIN - epilogue;
	while (w->ndots == 1 && s >= 2 && s < MAX_FREE_STAGES && (s + 1) * w->slab <= room)
		s++;
	return s;
}

/* computed: the loop's operands made by its threads get no registers in
 * the estimate, so ptxas is held to the programs it counted (attr
 * min_programs, emit_control.c's minctasm; an unpacked int4 operand
 * beside a 128x128 tile took 129 registers, one program an SM, where 2
 * were counted).  Elsewhere ptxas's own choice stands: given a floor of
 * 2, it spent the headroom (128 threads: 128 registers to 186). */
static void mark(LowerCtx *c, const char *schedule, int plain, int stages)
{
	for (BlkOp *op = c->k->body->first; op; op = op->next) {
		Work here = { 0 };
		if (op->kind == BLK_OP_FOR)
			blk_lower_walk(op->regions[0], count_dot, &here);
		if (!here.ndots)
			continue;
		blk_op_set_string(c->a, op, "schedule", schedule);
		blk_op_set_int(c->a, op, "plain_programs", plain);
		if (stages != c->k->num_stages)
			blk_op_set_int(c->a, op, "stages", stages);
		if (here.computed && plain >= 2 && strcmp(schedule, "plain") == 0)
			blk_op_set_int(c->a, op, "min_programs", plain);
	}
}

bool blk_lower_schedule(LowerCtx *c)
{
	if (strcmp(c->arch, "sm_90a") != 0 || c->nthreads % 128)
		return true;
	Work w = { 0 };
	for (BlkOp *op = c->k->body->first; op; op = op->next)
		if (op->kind == BLK_OP_FOR)
			blk_lower_walk(op->regions[0], count_dot, &w);
	if (!w.ndots)
		return true;
	/* resident accumulator work: the specialized kernel's one tile at the
	 * tensor cores (a kernel of one warpgroup specializes into two
	 * ping-pong programs that take turns) against the plain programs' */
	int64_t specialized = w.acc;
	int plain = plain_programs(c, &w, c->k->num_stages);
	/* TMA cannot gather; an operand computed on its way in is made by the
	 * threads that multiply, which the producer/consumer split has not */
	bool is_plain = plain * w.acc > 2 * specialized || w.gathers || w.computed;
	mark(c, is_plain ? "plain" : "specialize", plain,
	     is_plain ? free_stages(c, &w, plain) : free_slots(c, &w));
	return true;
}

bool blk_lower_plain_schedule(const BlkOp *loop)
{
	const BlkAttr *s = blk_op_attr(loop, "schedule");
	return s && s->kind == BLK_ATTR_STRING && strcmp(s->s, "plain") == 0;
}
