/* blkc_report.c - `blkc --report`: what a kernel costs at given sizes.
 *
 * Per kernel: threads, shared memory and grid (from the compile); registers
 * and spills (ptxas -v, where ptxas is installed); occupancy — programs per
 * SM from registers, shared memory, threads and the per-SM program cap, and
 * which of them limits it — and the waves of the grid over the SMs; the
 * compulsory traffic (every input read once, every output written once) and
 * the time that traffic takes at the H100's and H200's memory bandwidth:
 * the memory roofline, a floor no schedule beats.  FLOPs are not counted
 * yet (they need the loop trip counts of the lowered IR).
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
static void report_occupancy(const SmLimits *sm, const BlkCompiled *c, int regs)
{
	int warps = (int)(c->threads + 31) / 32;
	int by_threads = sm->threads / (warps * 32);
	int by_smem = c->smem_bytes ? sm->smem / ((int)c->smem_bytes + sm->smem_reserved) : sm->programs;
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
	double programs = (double)c->grid[0] * c->grid[1] * c->grid[2];
	printf("  waves: %.0f programs over %d SMs x %d = %.3g\n", programs, sm->sms, per_sm,
	       programs / (sm->sms * per_sm));
}

/* Every input read once, every output written once (inout both). */
static double compulsory_bytes(const BlkKernel *k, const BlkArrayDesc *arrays)
{
	double bytes = 0;
	int n = 0;
	for (int p = 0; p < k->nparams; p++) {
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

static void report_traffic(const BlkKernel *k, const BlkArrayDesc *arrays)
{
	double bytes = compulsory_bytes(k, arrays);
	printf("  traffic: at least %.3f MB (inputs read once, outputs written once)\n", bytes / 1e6);
	/* Spec HBM bandwidth; the H200's device-to-device copy measured 4.19 TB/s
	 * (docs/gpu-notes.md), the practical ceiling. */
	printf("  memory roofline: %.2f us on H100 (3.35 TB/s), %.2f us on H200 (4.8 TB/s; "
	       "%.2f us at its measured copy rate, 4.19 TB/s)\n", bytes / 3.35e6, bytes / 4.8e6,
	       bytes / 4.19e6);
}

void blkc_report(const BlkKernel *k, const BlkCompiled *c, const BlkArrayDesc *arrays,
                 const char *arch)
{
	printf("kernel %s: %u threads per program, %zu bytes of shared memory, grid (%u, %u, %u)\n",
	       k->name, c->threads, c->smem_bytes, c->grid[0], c->grid[1], c->grid[2]);
	int regs = report_ptxas(c->ptx, arch);
	report_occupancy(strncmp(arch, "sm_8", 4) == 0 ? &ampere : &hopper, c, regs);
	report_traffic(k, arrays);
}
