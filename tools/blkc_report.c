/* blkc_report.c - `blkc --report`: what a kernel costs at given sizes.
 *
 * Per kernel: threads, shared memory and grid (from the compile); registers
 * and spills (ptxas -v, where ptxas is installed); occupancy — programs per
 * SM from registers, shared memory, threads and the per-SM program cap, and
 * which of them limits it — and the waves of the grid over the SMs; the
 * compulsory traffic (every input read once, every output written once) and
 * the time that traffic takes at the H100's and H200's memory bandwidth:
 * the memory roofline, a floor no schedule beats; the FLOPs of its dots
 * (counted on the kernel specialized at these sizes: 2·M·N·K per dot, times
 * the trip counts of the loops around it, times the programs of the grid),
 * the arithmetic intensity and the compute roofline at the H100/H200's
 * peak and at cuBLAS's measured rate.  Elementwise work is not counted.
 */
#include "blkc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One SM's limits for an arch family (CUDA's occupancy rules). */
typedef struct SmLimits {
	const char *name;
	int sms;               /* of the GPU named */
	int regs;              /* 32-bit registers per SM */
	int threads;           /* resident threads per SM */
	int programs;          /* resident CTAs per SM */
	int smem;              /* shared memory per SM, bytes */
	int smem_reserved;     /* the driver's per-CTA reservation */
} SmLimits;

static const SmLimits hopper = {"H100/H200 (sm_90)", 132, 65536, 2048, 32, 233472, 1024};
static const SmLimits ampere = {"A100 (sm_80)", 108, 65536, 2048, 32, 167936, 1024};

/* Runs ptxas -v on the PTX (if ptxas exists), prints its register and
 * spill lines, and returns the registers per thread (-1: unknown). */
static int report_ptxas(const char *ptx, const char *arch)
{
	const char *ptxas = access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas" : "ptxas";
	char path[] = "/tmp/blkc-report-XXXXXX";
	int fd = mkstemp(path), regs = -1;
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	fputs(ptx, f);
	fclose(f);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s -v -arch=%s -o /dev/null %s 2>&1", ptxas, arch, path);
	FILE *p = popen(cmd, "r");
	char line[512];
	while (p && fgets(line, sizeof line, p)) {
		const char *used = strstr(line, "Used ");
		if (used && strstr(line, "registers"))
			regs = atoi(used + 5);
		if (strstr(line, "registers") || strstr(line, "spill") || strstr(line, "error"))
			printf("  ptxas: %s", line + (strncmp(line, "ptxas info    : ", 16) == 0 ? 16 : 0));
	}
	if (p)
		pclose(p);
	if (regs < 0)
		printf("  ptxas: not available (registers and spills unknown)\n");
	unlink(path);
	return regs;
}

/* Programs per SM and what limits them; regs < 0 leaves registers out. */
static void report_occupancy(const SmLimits *sm, const BlkLaunch *l, const unsigned grid[3], int regs)
{
	int warps = (l->threads + 31) / 32;
	int by_threads = sm->threads / (warps * 32);
	int by_smem = l->smem ? sm->smem / ((int)l->smem + sm->smem_reserved) : sm->programs;
	int by_regs = sm->programs;
	if (regs > 0) {
		int per_warp = (regs * 32 + 255) / 256 * 256; /* allocated per warp, 256 at a time */
		by_regs = sm->regs / per_warp / warps;
	}
	struct { const char *what; int n; } lim[] = {
		{"threads", by_threads}, {"shared memory", by_smem}, {"registers", by_regs},
		{"the per-SM program cap", sm->programs},
	};
	int best = 0;
	for (int i = 1; i < 4; i++)
		if (lim[i].n < lim[best].n)
			best = i;
	int per_sm = lim[best].n;
	printf("  occupancy on %s: %d program%s per SM, limited by %s (threads allow %d, shared memory %d, "
	       "registers %s%d)\n", sm->name, per_sm, per_sm == 1 ? "" : "s", lim[best].what, by_threads,
	       by_smem, regs > 0 ? "" : "unknown: ", by_regs);
	if (per_sm == 0) {
		printf("  occupancy: the program does not fit on one SM\n");
		return;
	}
	double programs = (double)grid[0] * grid[1] * grid[2];
	printf("  waves: %.0f programs over %d SMs x %d = %.3g\n", programs, sm->sms, per_sm,
	       programs / (sm->sms * per_sm));
}

/* ---- FLOPs of the dots --------------------------------------------------- */

typedef struct Flops {
	bool any;            /* a dot was seen */
	BlkDType dtype;      /* its operands' */
	bool guessed;        /* a loop with a non-constant bound (not counted) or an if */
} Flops;

static bool const_int(const BlkValue *v, int64_t *out)
{
	const BlkAttr *at = v->def && v->def->kind == BLK_OP_CONST ? blk_op_attr(v->def, "value") : NULL;
	if (!at || at->kind != BLK_ATTR_INT)
		return false;
	*out = at->i;
	return true;
}

static double extent(const BlkType *t, int d)
{
	int64_t v = 0;
	return d >= 0 && d < t->rank && blk_sym_is_const(t->dims[d], &v) ? (double)v : 0;
}

static double region_flops(const BlkRegion *r, Flops *f);

/* One op's dot FLOPs, its regions' included. */
static double op_flops(const BlkOp *op, Flops *f)
{
	if (op->kind == BLK_OP_DOT) {
		const BlkType *a = &op->operands[0]->type, *b = &op->operands[1]->type;
		f->any = true;
		f->dtype = a->dtype;
		return 2 * extent(a, a->rank - 2) * extent(a, a->rank - 1) * extent(b, b->rank - 1);
	}
	if (op->kind == BLK_OP_FOR) {
		int64_t lo, hi, step;
		double body = region_flops(op->regions[0], f);
		if (const_int(op->operands[0], &lo) && const_int(op->operands[1], &hi) &&
		    const_int(op->operands[2], &step) && step > 0)
			return hi > lo ? body * (double)((hi - lo + step - 1) / step) : 0;
		f->guessed = f->guessed || body > 0;
		return 0;
	}
	double most = 0, sum = 0;
	for (int i = 0; i < op->nregions; i++) {
		double x = region_flops(op->regions[i], f);
		most = x > most ? x : most;
		sum += x;
	}
	if (op->kind == BLK_OP_IF && most > 0)
		f->guessed = true; /* the larger branch, as if always taken */
	return op->kind == BLK_OP_IF ? most : sum;
}

static double region_flops(const BlkRegion *r, Flops *f)
{
	double sum = 0;
	for (const BlkOp *op = r ? r->first : NULL; op; op = op->next)
		sum += op_flops(op, f);
	return sum;
}

/* The kernel's dot FLOPs over its whole grid; k must be specialized. */
static double kernel_flops(const BlkKernel *k, Flops *f)
{
	double programs = 1;
	for (int i = 0; i < k->grid_rank; i++) {
		int64_t v = 0;
		if (blk_sym_is_const(k->grid[i], &v))
			programs *= (double)v;
	}
	return region_flops(k->body, f) * programs;
}

static void report_compute(BlkKernel *k, double flops, const Flops *f, double bytes)
{
	if (!f->any) {
		printf("  FLOPs: no dot (elementwise work is not counted): memory-bound\n");
		return;
	}
	if (flops <= 0) {
		printf("  dot FLOPs: unknown (the loops around the dots run a number of times that "
		       "depends on the program)\n");
		return;
	}
	bool tc = f->dtype == BLK_BF16 || f->dtype == BLK_F16;
	bool b8 = blk_dtype_size(f->dtype) == 1 && f->dtype != BLK_BOOL; /* i8/u8/fp8 on sm_90a */
	/* Spec dense peaks (tensor cores for f16/bf16 and 8-bit types, FP32
	 * FMA for f32) and cuBLAS's measured rates (f16/f32 on the H200,
	 * DESIGN.md section 6; 8-bit on the H100, docs/gpu-notes.md runs 58-59:
	 * int8 GemmEx 1204 TOP/s at 4096^3, fp8 _scaled_mm 1158 with fast
	 * accumulation) */
	double peak = b8 ? 1979e12 : tc ? 989e12 : 67e12, measured = b8 ? 1180e12 : tc ? 737e12 : 50e12;
	tc = tc || b8;
	printf("  dot FLOPs: %.4g G%s; arithmetic intensity %.1f FLOP/byte\n", flops / 1e9,
	       f->guessed ? " (an estimate: an if taken, or a loop of unknown length left out)" : "",
	       flops / bytes);
	printf("  compute roofline: %.2f us at %.0f TFLOP/s (%s peak, H100/H200), %.2f us at %.0f "
	       "(cuBLAS %s, measured on %s)\n", flops / peak * 1e6, peak / 1e12,
	       b8 ? "8-bit tensor-core, sm_90a" : tc ? "tensor-core" : "FP32", flops / measured * 1e6,
	       measured / 1e12, b8 ? "int8/fp8" : tc ? "bf16" : "SGEMM", b8 ? "H100" : "H200");
	double mem = bytes / 3.35e12;
	printf("  bound on H100: %s (%.2f us)\n", flops / peak > mem ? "compute" : "memory",
	       (flops / peak > mem ? flops / peak : mem) * 1e6);
	(void)k;
}

static void report_traffic(const BlkKernel *k, const BlkArrayDesc *arrays)
{
	double bytes = blk_lower_compulsory_bytes(k, arrays);
	printf("  traffic: at least %.3f MB (inputs read once, outputs written once)\n", bytes / 1e6);
	/* Spec HBM bandwidth; the H200's device-to-device copy measured 4.19 TB/s
	 * (docs/gpu-notes.md), the practical ceiling. */
	printf("  memory roofline: %.2f us on H100 (3.35 TB/s), %.2f us on H200 (4.8 TB/s; "
	       "%.2f us at its measured copy rate, 4.19 TB/s)\n", bytes / 3.35e6, bytes / 4.8e6,
	       bytes / 4.19e6);
}

/* The cost model's estimate (lower/cost.c), which chooses `auto` values. */
static void report_model(BlkArena *a, BlkDiag *d, const BlkKernel *k, const int64_t *sizes,
                         const BlkArrayDesc *arrays, const char *arch)
{
	BlkLowerOptions lo = {.arch = arch};
	BlkCost m;
	if (!blk_lower_cost(a, d, k, sizes, arrays, &lo, &m)) {
		printf("  model: not estimated (the lowering refused the kernel)\n");
		return;
	}
	printf("  model: %.1f us; %d program%s an SM (limited by %s, ~%d registers a thread), "
	       "%.0f programs in %.0f wave%s\n", m.us, m.per_sm, m.per_sm == 1 ? "" : "s", m.limit,
	       m.regs, m.work.programs, m.waves, m.waves == 1 ? "" : "s");
	printf("  model bounds over the waves: compute %.1f us, L2 traffic %.1f us, load latency %.1f us "
	       "(%.0f trips); DRAM floor %.1f us%s\n", m.compute_us, m.memory_us, m.latency_us,
	       m.work.trips, m.dram_us, m.work.guessed ? " (a loop bound unknown: counted once)" : "");
	if (m.work.fallback) /* tensor-core dtypes on the SIMT path: the cliff a block size can cause */
		printf("  a dot of tensor-core dtypes runs on the SIMT fma path (not tensor cores): %s\n",
		       m.work.fallback);
}

void blkc_report(const BlkcOptions *o, BlkArena *a, BlkDiag *d, BlkModule *m, BlkKernel *k,
                 const BlkCompiled *c, const int64_t *sizes, const BlkArrayDesc *arrays)
{
	const char *arch = o->arch;
	const BlkLaunch *l = c->launch;
	BlkSymEnv env = { k->nsizes, k->sizes, sizes };
	unsigned grid[3] = { 0, 0, 0 }; /* a grid of dynamic sizes: the one these sizes launch */
	blk_launch_grid(l, &env, grid);
	printf("kernel %s: %d threads per program, %lld bytes of shared memory, grid (%u, %u, %u)\n",
	       k->name, l->threads, (long long)l->smem, grid[0], grid[1], grid[2]);
	if (k->grid_rank == 1 && l->axis[1] == 1) /* regrid.c */
		printf("  grid: its one axis's programs walk a rectangle of blocks, run as that rectangle's "
		       "2-D grid (regrid: the launch order is blk's)\n");
	for (int a = 0; a < BLK_MAX_GRID; a++) /* coarsen.c (regrid may have added axis 1) */
		if (l->merge[a] > 1)
			printf("  grid axis %d: %d neighbouring programs run as one, its blocks %dx as long (coarsen: "
			       "small dot blocks merged into the tile the tensor cores want)\n", a, l->merge[a], l->merge[a]);
	if (l->cluster > 1) /* persist.c's CTA pairs */
		printf("  clusters of %d CTAs: tiles in pairs that share a slab, each CTA copying its share of the "
		       "rows to both (TMA multicast)\n", l->cluster);
	int64_t csizes[BLK_MAX_SIZES + 1];
	BlkArrayDesc carrays[BLK_MAX_PARAMS + 1];
	int na = 0;
	for (int i = 0; i < k->nparams; i++)
		na += k->params[i].access != BLK_ACCESS_SCRATCH;
	if (blk_dynamic_class(k, sizes, arrays, na, csizes, carrays)) {
		printf("  dynamic sizes (kernel arguments; this code serves every size of the class):");
		const char *sep = " ";
		for (int i = 0; i < k->nsizes; i++) {
			if (!k->size_dyn || !k->size_dyn[i])
				continue;
			if (csizes[i] >= 0)
				printf("%s%s = %lld (compiled in)", sep, k->sizes[i], (long long)csizes[i]);
			else if (csizes[i] < -1)
				printf("%s%s a multiple of %lld", sep, k->sizes[i], (long long)-csizes[i]);
			else
				printf("%s%s any", sep, k->sizes[i]);
			sep = ", ";
		}
		printf("\n");
	}
	int regs = report_ptxas(c->ptx, arch);
	report_occupancy(strncmp(arch, "sm_8", 4) == 0 ? &ampere : &hopper, l, grid, regs);
	report_traffic(k, arrays);
	report_model(a, d, k, sizes, arrays, arch);
	/* The kernel itself, specialized in place (every size compiled in, so
	 * the loops' trip counts are known): nothing uses it after. */
	k->size_dyn = NULL;
	BlkLowerOptions lo = {.arch = arch};
	Flops f = {0};
	if (blk_lower_run_pass(a, d, m, k, "specialize", sizes, arrays, &lo))
		report_compute(k, kernel_flops(k, &f), &f, blk_lower_compulsory_bytes(k, arrays));
	else
		printf("  FLOPs: not counted (the kernel did not specialize)\n");
}
