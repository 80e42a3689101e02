/* ptx.c - LLVM IR to PTX through the NVPTX target machine.
 *
 * Requires: the module of emit_llvm.c.  Produces: c->ptx (and c->llvm_ir,
 * after optimization, when asked).  Runs the LLVM verifier (a failure is
 * an internal error: emission made bad IR), then a short pass list, then
 * the backend at CodeGenOpt::Default, on a target machine kept from an
 * earlier compile (take_tm below).
 *
 * Why not default<O3>: emission already gives straight-line code (the dot
 * unrolled, addresses as constant offsets), so most of O3's ~90 passes
 * find nothing, yet they took 30 ms of the 70 ms for the 128x128 matmul;
 * the Aggressive backend level took 38 ms where Default takes 20 ms for
 * the same PTX.  What the kernels do need, each pass for a reason:
 *   function-attrs   readonly/nocapture on the params: ld.global.nc;
 *   sroa             loop carries and dot accumulators out of allocas;
 *   early-cse, gvn   the repeated per-thread index arithmetic;
 *   instcombine      folds constant offsets into addresses;
 *   licm, loop-rotate  hoists thread-invariant math out of the seq/K
 *                    loops and leaves one branch per iteration;
 *   infer-alignment  proves 16-byte alignment of shared-memory accesses
 *                    so the backend's load/store vectorizer makes v4s.
 * Checked against O3 on every example: same FMA/ld.shared.v4/bar.sync
 * counts in the matmul inner loop, no new spills (docs/backend.md).
 *
 * A huge kernel takes a linear path instead.  Each scalar store, `when`
 * and extract is a region guarded by a branch, and thousands of them
 * branch on the same few conditions (tid == 0, program_id == k).  LLVM's
 * early-cse, gvn and instcombine (through its dominating-condition cache),
 * and codegen's own early-cse, each walk every use of a branch's condition
 * at every branch on it: quadratic (10,000 stores took 100 s).  A huge
 * kernel (lower_int.h: BLK_HUGE_KERNEL_OPS), or one past
 * BIG_KERNEL_BRANCHES conditional branches -- far more than any kernel of
 * the examples or the GPU suites has, whose PTX is unchanged -- gets only
 * sroa (emission already gave it predicated stores and blocks of bounded
 * size, emit_memory.c and emit_llvm.c) and codegen at CodeGenOpt::None:
 * slower code, a compile time linear in the kernel's size.  Each pass
 * dropped from that list was worth a tenth of 10,000 `when`s' time and
 * nothing to the code it selects at None (function-attrs' readonly: loads
 * are ld.global there, not ld.global.nc).
 * The PTX version is the launch header's isa: the lowest that has the
 * arch, so the driver JITs the result wherever that arch runs (sm_90a PTX
 * only runs on sm_90), unless dot-engine chose an instruction that needs
 * a later one.
 */
#include "lower/lower_int.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Each arch, the lowest PTX ISA that has it (times 10), and the most
 * shared memory a CTA of it can opt into (bytes; CUDA's per-block limit:
 * 163 KB on A100 and Orin, 99 KB on sm_86 and Ada, 227 KB on Hopper). */
static const struct {
	const char *arch;
	int isa, smem;
} archs[] = {
	{ "sm_80", 70, 166912 }, { "sm_86", 71, 101376 }, { "sm_87", 74, 166912 },
	{ "sm_89", 78, 101376 }, { "sm_90", 78, 232448 }, { "sm_90a", 80, 232448 },
};

int blk_lower_arch_isa(const char *arch)
{
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
		if (strcmp(archs[i].arch, arch) == 0)
			return archs[i].isa;
	return 0;
}

int blk_lower_arch_smem(const char *arch)
{
	for (size_t i = 0; arch && i < sizeof archs / sizeof archs[0]; i++)
		if (strcmp(archs[i].arch, arch) == 0)
			return archs[i].smem;
	return BLK_LOWER_MAX_SMEM;
}

const char *blk_lower_arch_name(int i)
{
	return i >= 0 && (size_t)i < sizeof archs / sizeof archs[0] ? archs[i].arch : NULL;
}

bool blk_lower_check_arch(BlkDiag *d, const char *arch)
{
	if (blk_lower_arch_isa(arch))
		return true;
	char known[128] = "";
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
		         archs[i].arch);
	BlkLoc none = { 0 };
	blk_error(d, none, "unknown GPU arch '%s'; blk knows %s", arch, known);
	return false;
}

static void init_nvptx(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

static const char big_passes[] = "function(sroa)";

enum { BIG_KERNEL_BRANCHES = 4000 };

static int count_cond_branches(LLVMModuleRef mod)
{
	int n = 0;
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b)) {
			LLVMValueRef t = LLVMGetBasicBlockTerminator(b);
			n += t && LLVMIsABranchInst(t) && LLVMIsConditional(t);
		}
	return n;
}

static const char passes[] =
	"cgscc(function-attrs),"
	"function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,"
	"loop-mssa(licm,loop-rotate,licm),"
	"gvn,instcombine<no-verify-fixpoint>,simplifycfg,infer-alignment)";

/* Target machines are kept for the process, one per arch and PTX ISA in
 * use at a time: creating one builds the NVPTX subtarget and its lowering
 * tables each compile for nothing.  LLVM codegen is not safe on one target
 * machine from two threads (it resets the machine's options per function,
 * and interns names in it), so a compile takes one out of the pool and
 * gives it back; a compile that finds none for its arch and ISA (another
 * thread has it) makes one more.  The PTX does not depend on which one. */
typedef struct PooledTM {
	LLVMTargetMachineRef tm;
	char arch[16];
	int isa;
	bool big;            /* CodeGenOpt::None, for huge kernels (above) */
	struct PooledTM *next;
} PooledTM;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static PooledTM *pool;

static PooledTM *make_tm(const char *arch, int isa, bool big)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, init_nvptx);
	LLVMTargetRef t;
	char *err = NULL;
	if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &t, &err))
		blk_die("lower: no NVPTX target in this LLVM: %s", err ? err : "?");
	PooledTM *e = calloc(1, sizeof *e);
	if (!e)
		blk_die("lower: out of memory");
	snprintf(e->arch, sizeof e->arch, "%s", arch);
	e->isa = isa;
	e->big = big;
	char features[16];
	snprintf(features, sizeof features, "+ptx%d", isa);
	e->tm = LLVMCreateTargetMachine(t, "nvptx64-nvidia-cuda", arch, features,
	                                big ? LLVMCodeGenLevelNone : LLVMCodeGenLevelDefault,
	                                LLVMRelocDefault, LLVMCodeModelDefault);
	return e;
}

static PooledTM *take_tm(const char *arch, int isa, bool big)
{
	pthread_mutex_lock(&pool_lock);
	PooledTM **p = &pool;
	while (*p && (strcmp((*p)->arch, arch) != 0 || (*p)->isa != isa || (*p)->big != big))
		p = &(*p)->next;
	PooledTM *e = *p;
	if (e)
		*p = e->next;
	pthread_mutex_unlock(&pool_lock);
	return e ? e : make_tm(arch, isa, big);
}

static void give_back_tm(PooledTM *e)
{
	pthread_mutex_lock(&pool_lock);
	e->next = pool;
	pool = e;
	pthread_mutex_unlock(&pool_lock);
}

static const char *to_arena(LowerCtx *c, const char *s, size_t n)
{
	return blk_arena_strndup(c->a, s, n);
}

/* Verifier, passes and codegen of mod on tm: its PTX, or NULL with what
 * failed in why (no blk_die here: the caller holds a pooled machine).
 * *ir: the optimized IR when asked (codegen's own IR passes change the
 * module after that), for LLVMDisposeMessage. */
static LLVMMemoryBufferRef run_llvm(LowerCtx *c, LLVMTargetMachineRef tm, LLVMModuleRef mod, bool big,
                                   char **ir, char *why, size_t len)
{
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, td);
	LLVMDisposeTargetData(td);
	char *msg = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		fprintf(stderr, "%s\n", msg);
		snprintf(why, len, "emission produced invalid LLVM IR for kernel %s", c->k->name);
	}
	LLVMDisposeMessage(msg);
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = why[0] ? NULL : LLVMRunPasses(mod, big ? big_passes : passes, tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *em = LLVMGetErrorMessage(e);
		snprintf(why, len, "LLVM passes failed: %s", em);
		LLVMDisposeErrorMessage(em);
	}
	*ir = !why[0] && c->opt->want_llvm ? LLVMPrintModuleToString(mod) : NULL;
	LLVMMemoryBufferRef buf = NULL;
	char *err = NULL;
	if (!why[0] && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
		snprintf(why, len, "NVPTX code generation failed: %s", err ? err : "?");
		buf = NULL;
	}
	LLVMDisposeMessage(err);
	return buf;
}

bool blk_lower_ptx(LowerCtx *c, LLVMModuleRef mod)
{
	bool big = c->huge || count_cond_branches(mod) > BIG_KERNEL_BRANCHES;
	PooledTM *pooled = take_tm(c->arch, blk_lower_launch(c)->isa, big);
	char why[1024] = "", *ir = NULL;
	LLVMMemoryBufferRef buf = run_llvm(c, pooled->tm, mod, big, &ir, why, sizeof why);
	give_back_tm(pooled);
	if (!buf) {
		LLVMDisposeMessage(ir);
		blk_die("lower: %s", why);
	}
	if (ir)
		c->llvm_ir = (char *)to_arena(c, ir, strlen(ir));
	LLVMDisposeMessage(ir);
	c->ptx = to_arena(c, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
	LLVMDisposeMemoryBuffer(buf);
	return true;
}
