/* blkc.c - the blk compiler driver.
 *
 *   blkc [options] FILE.blk [SIZE=VALUE...]       check, compile, print a stage
 *   blkc run [options] FILE.blk [NAME=VALUE...]   run a kernel (GPU or interpreter)
 *
 * Exit status: 0 success, 1 a diagnosed error, 2 bad usage.
 */
#include "blkc.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lower/lower.h"
#include "runtime/auto.h"
#include "runtime/include/blk.h"

static const char usage_text[] =
"usage: blkc [options] FILE.blk [SIZE=VALUE...]\n"
"       blkc run [options] FILE.blk [SIZE=VALUE | PARAM=FILE.npy ...]\n"
"\n"
"Checks and compiles the kernels of a .blk file; `run` runs one.\n"
"\n"
"Arguments after the file:\n"
"  SIZE=VALUE         binds a launch size, e.g. M=1024 (needed to lower to\n"
"                     LLVM or PTX, and to run)\n"
"  PARAM=FILE.npy     run: reads that input array from a NumPy file\n"
"\n"
"Compiling:\n"
"  --emit=STAGE       print a stage: tokens, ast, ir (need no sizes),\n"
"                     llvm, ptx (need the sizes); c: the kernel compiled\n"
"                     ahead of time as C (PTX for each arch of --arch=A,B,\n"
"                     a typed launch function needing only the CUDA\n"
"                     driver; -o NAME.c also writes NAME.h)\n"
"  -D NAME=VALUE      override a compile-time parameter (repeatable), e.g.\n"
"                     -D BM=128 -D T=bf16\n"
"  -k, --kernel=NAME  the kernel to compile or run (default: the only one)\n"
"  -o FILE            write the emitted stage to FILE instead of stdout\n"
"  --arch=ARCH        GPU target: sm_80, sm_86, sm_89, sm_90, sm_90a\n"
"                     (default: the GPU's own if there is one, else sm_90a)\n"
"  --dump-after=PASS  print the IR after a lowering pass (or `all`) to stderr;\n"
"                     the passes are: %s\n"
"  --report           per kernel: threads per program, shared memory, grid;\n"
"                     registers and spills (where ptxas is installed);\n"
"                     occupancy (programs per SM and what limits it) and\n"
"                     waves; compulsory traffic, the dots' FLOPs, arithmetic\n"
"                     intensity and the memory and compute rooflines on\n"
"                     H100/H200 (docs/backend.md)\n"
"  --estimate         the cost model's estimate at the sizes (what `auto`\n"
"                     ranks) and what it read of the kernel, as one JSON\n"
"                     line; the IR passes only, no LLVM (docs/backend.md)\n"
"  --from-ir          FILE is IR text (as --emit=ir or --dump-after print it);\n"
"                     with --pass=NAME, runs that IR pass alone on it and\n"
"                     prints the result; without, verifies and prints it;\n"
"                     with --emit=llvm|ptx, the LLVM IR or PTX of IR as\n"
"                     smem-plan leaves it (its launch header included)\n"
"  --pass=NAME        with --from-ir: one IR pass of the list above\n"
"\n"
"Running (blkc run):\n"
"  --interpret        run in the CPU interpreter (no GPU needed); without it\n"
"                     the kernel runs on the GPU and is compared with the\n"
"                     interpreter on the same inputs\n"
"  --seed=N           seed of the random inputs (default 1)\n"
"  --out-dir=DIR      write each output as DIR/NAME.npy (default: .; DIR is\n"
"                     made if missing)\n"
"  --no-check         GPU: skip the comparison with the interpreter\n"
"  --iters=N          GPU: timed repetitions, median reported (default 20)\n"
"\n"
"  -h, --help         this text\n"
"  --version          blkc's version\n"
"\n"
"Exit status: 0 success, 1 an error in the input or at run time, 2 bad usage.\n";

static void usage(FILE *out)
{
	char passes[512] = "";
	for (int i = 0; blk_lower_pass_name(i); i++) {
		if (i)
			strncat(passes, ", ", sizeof passes - strlen(passes) - 1);
		strncat(passes, blk_lower_pass_name(i), sizeof passes - strlen(passes) - 1);
	}
	fprintf(out, usage_text, passes);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fputs("blkc: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n(see blkc --help)\n", stderr);
	return BLKC_USAGE;
}

static bool parse_emit(const char *s, BlkcEmit *out)
{
	static const char *names[] = { "none", "tokens", "ast", "ir", "llvm", "ptx", "c" };
	for (int i = 0; i < (int)(sizeof names / sizeof *names); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (BlkcEmit)i;
			return true;
		}
	}
	return false;
}

/* Splits NAME=VALUE in place; false if there is no '=' or either side is empty. */
static bool split_binding(char *arg, const char **name, const char **value)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return false;
	*eq = 0;
	*name = arg;
	*value = eq + 1;
	return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return false;
	*out = v;
	return true;
}

enum { OPT_EMIT = 256, OPT_ARCH, OPT_DUMP, OPT_REPORT, OPT_INTERP, OPT_SEED,
       OPT_OUTDIR, OPT_NOCHECK, OPT_ITERS, OPT_FROM_IR, OPT_PASS, OPT_VERSION, OPT_ESTIMATE };

static const struct option long_opts[] = {
	{ "emit", required_argument, 0, OPT_EMIT },
	{ "kernel", required_argument, 0, 'k' },
	{ "arch", required_argument, 0, OPT_ARCH },
	{ "dump-after", required_argument, 0, OPT_DUMP },
	{ "report", no_argument, 0, OPT_REPORT },
	{ "estimate", no_argument, 0, OPT_ESTIMATE },
	{ "interpret", no_argument, 0, OPT_INTERP },
	{ "seed", required_argument, 0, OPT_SEED },
	{ "out-dir", required_argument, 0, OPT_OUTDIR },
	{ "no-check", no_argument, 0, OPT_NOCHECK },
	{ "iters", required_argument, 0, OPT_ITERS },
	{ "from-ir", no_argument, 0, OPT_FROM_IR },
	{ "pass", required_argument, 0, OPT_PASS },
	{ "help", no_argument, 0, 'h' },
	{ "version", no_argument, 0, OPT_VERSION },
	{ 0, 0, 0, 0 },
};

/* One option; returns -1 to go on, else an exit status. */
static int take_option(BlkcOptions *o, int c, char *arg)
{
	uint64_t v;
	switch (c) {
	case OPT_EMIT:
		return parse_emit(arg, &o->emit) ? -1 : bad_usage("unknown --emit stage '%s' (tokens, ast, ir, llvm, ptx, c)", arg);
	case 'D':
		if (o->ndefines == BLKC_MAX_ARGS)
			return bad_usage("too many -D options%s", "");
		if (!split_binding(arg, &o->defines[o->ndefines].name, &o->defines[o->ndefines].value))
			return bad_usage("-D wants NAME=VALUE, got '%s'", arg);
		o->ndefines++;
		return -1;
	case 'k': o->kernel = arg; return -1;
	case 'o': o->out = arg; return -1;
	case OPT_ARCH: o->arch = arg; return -1;
	case OPT_DUMP: o->dump_after = arg; return -1;
	case OPT_REPORT: o->report = true; return -1;
	case OPT_ESTIMATE: o->estimate = true; return -1;
	case OPT_FROM_IR: o->from_ir = true; return -1;
	case OPT_PASS: o->pass = arg; return -1;
	case OPT_INTERP: o->interpret = true; return -1;
	case OPT_OUTDIR: /* "" would make "/NAME.npy": the root, never meant */
		if (!*arg)
			return bad_usage("--out-dir wants a directory (. for the current one)%s", "");
		o->out_dir = arg;
		return -1;
	case OPT_NOCHECK: o->check = false; return -1;
	case OPT_SEED:
		if (!parse_u64(arg, &o->seed))
			return bad_usage("--seed wants a non-negative integer, got '%s'", arg);
		return -1;
	case OPT_ITERS:
		if (!parse_u64(arg, &v) || v < 1 || v > 100000)
			return bad_usage("--iters wants an integer in 1..100000, got '%s'", arg);
		o->iters = (int)v;
		return -1;
	case 'h': usage(stdout); return BLKC_OK;
	case OPT_VERSION: printf("blkc %s\n", blk_version()); return BLKC_OK;
	default: return bad_usage("%s", "unknown option");
	}
}

/* --dump-after names a pass (or all): a misspelt one would print nothing. */
static int check_dump_after(const BlkcOptions *o)
{
	if (!o->dump_after || strcmp(o->dump_after, "all") == 0)
		return -1;
	for (int i = 0; blk_lower_pass_name(i); i++)
		if (strcmp(o->dump_after, blk_lower_pass_name(i)) == 0)
			return -1;
	return bad_usage("--dump-after: no pass named '%s' (see --help for the passes)", o->dump_after);
}

/* The index of a name given twice among n (name, value) pairs, or -1:
 * `M=4 M=8` or `-D BM=64 -D BM=128` is a typo, not an override. */
static int twice(const BlkDefine *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(v[i].name, v[j].name) == 0)
				return i;
	return -1;
}

static int parse_args(BlkcOptions *o, int argc, char **argv)
{
	o->seed = 1;
	o->iters = 20;
	o->check = true;
	o->out_dir = ".";
	if (argc > 1 && strcmp(argv[1], "run") == 0) {
		o->run = true;
		argv++;
		argc--;
	}
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "D:k:o:h", long_opts, NULL)) != -1) {
		if (c == '?')
			return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
		int r = take_option(o, c, optarg);
		if (r >= 0)
			return r;
	}
	for (; optind < argc; optind++) {
		char *arg = argv[optind];
		if (!o->file && !strchr(arg, '=')) {
			o->file = arg;
		} else if (o->nbindings < BLKC_MAX_ARGS &&
		           split_binding(arg, &o->bindings[o->nbindings].name,
		                         &o->bindings[o->nbindings].value)) {
			o->nbindings++;
		} else {
			return bad_usage("unexpected argument '%s' (want SIZE=VALUE or PARAM=FILE.npy)", arg);
		}
	}
	if (!o->file)
		return bad_usage("no input file%s", "");
	int i = twice(o->bindings, o->nbindings);
	if (i >= 0)
		return bad_usage("%s is given twice", o->bindings[i].name);
	if ((i = twice(o->defines, o->ndefines)) >= 0)
		return bad_usage("-D %s is given twice", o->defines[i].name);
	if (o->interpret && !o->run)
		return bad_usage("--interpret only makes sense with `blkc run`%s", "");
	if (o->arch && strchr(o->arch, ',') && o->emit != EMIT_C)
		return bad_usage("--arch=%s: a list of arches is for --emit=c", o->arch);
	if (o->pass && !o->from_ir)
		return bad_usage("--pass=%s needs --from-ir (a single pass runs on IR text)", o->pass);
	if (o->from_ir && (o->run || o->ndefines || o->emit == EMIT_TOKENS || o->emit == EMIT_AST ||
	                   o->emit == EMIT_C || o->dump_after || o->report || o->estimate))
		return bad_usage("--from-ir takes only --pass, --emit=ir|llvm|ptx, --arch, -k, -o and sizes%s", "");
	return check_dump_after(o);
}

BlkKernel *blkc_pick_kernel(const BlkModule *m, const BlkcOptions *o, BlkDiag *d)
{
	BlkLoc none = { 0 };
	if (o->kernel) {
		BlkKernel *k = blk_module_find(m, o->kernel);
		if (!k)
			blk_error(d, none, "no kernel named '%s' in %s", o->kernel, o->file);
		return k;
	}
	if (m->nkernels == 1)
		return m->first;
	if (m->nkernels == 0) {
		blk_error(d, none, "%s has no kernel: a .blk source holds `kernel NAME(...) { ... }`", o->file);
		return NULL;
	}
	blk_error(d, none, "%s has %d kernels; choose one with --kernel", o->file, m->nkernels);
	/* the first few: a file of 4000 kernels printed 12,000 lines of notes */
	enum { SHOWN = 8 };
	int n = 0;
	for (BlkKernel *k = m->first; k && n < SHOWN; k = k->next, n++)
		blk_note(d, k->loc, "kernel '%s' is defined here", k->name);
	if (m->nkernels > SHOWN)
		blk_note(d, none, "and %d more kernels", m->nkernels - SHOWN);
	return NULL;
}

static bool is_size_name(const BlkKernel *k, const char *name, int *index)
{
	for (int i = 0; i < k->nsizes; i++) {
		if (strcmp(k->sizes[i], name) == 0) {
			*index = i;
			return true;
		}
	}
	return false;
}

static bool is_param_name(const BlkKernel *k, const char *name)
{
	for (int i = 0; i < k->nparams; i++)
		if (strcmp(k->params[i].name, name) == 0 && k->params[i].access != BLK_ACCESS_SCRATCH)
			return true;
	return false;
}

/* "M, N, K" for messages. */
static const char *size_list(const BlkKernel *k)
{
	static char buf[256];
	buf[0] = 0;
	for (int i = 0; i < k->nsizes; i++) {
		if (i)
			strncat(buf, ", ", sizeof buf - strlen(buf) - 1);
		strncat(buf, k->sizes[i], sizeof buf - strlen(buf) - 1);
	}
	return k->nsizes ? buf : "none";
}

bool blkc_sizes_from_bindings(const BlkKernel *k, const BlkcOptions *o, int64_t *sizes, BlkDiag *d)
{
	BlkLoc none = { 0 };
	bool ok = true;
	for (int i = 0; i < k->nsizes; i++)
		sizes[i] = -1;
	for (int b = 0; b < o->nbindings; b++) {
		const BlkcBinding *bd = &o->bindings[b];
		int i;
		uint64_t v = 0; /* (parse_u64 may leave it unset on failure) */
		if (is_size_name(k, bd->name, &i)) {
			if (!parse_u64(bd->value, &v) || v > INT32_MAX) {
				blk_error(d, none, "size %s=%s is not an integer in 0..%d", bd->name, bd->value, INT32_MAX);
				ok = false;
			}
			sizes[i] = (int64_t)v;
		} else if (!(o->run && is_param_name(k, bd->name))) {
			blk_error(d, none, "'%s' is %s of kernel '%s' (its sizes: %s)", bd->name,
			          o->run ? "neither a launch size nor an array parameter" : "not a launch size",
			          k->name, size_list(k));
			ok = false;
		}
	}
	return ok;
}

static void list_missing_sizes(const BlkKernel *k, const int64_t *sizes, BlkDiag *d)
{
	char buf[256] = "";
	for (int i = 0; i < k->nsizes; i++) {
		if (sizes[i] >= 0)
			continue;
		if (buf[0])
			strncat(buf, " ", sizeof buf - strlen(buf) - 1);
		strncat(buf, k->sizes[i], sizeof buf - strlen(buf) - 100);
		strncat(buf, "=...", sizeof buf - strlen(buf) - 1);
	}
	BlkLoc none = { 0 };
	blk_error(d, none, "kernel '%s' needs its launch sizes: give %s", k->name, buf);
}

int blkc_array_descs(const BlkKernel *k, const int64_t *sizes, BlkArrayDesc *arrays, BlkDiag *d)
{
	BlkSymEnv env = { k->nsizes, k->sizes, sizes };
	int n = 0;
	for (int p = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		BlkArrayDesc *ad = &arrays[n++];
		memset(ad, 0, sizeof *ad); /* align 0: the ABI's 16 bytes */
		ad->dtype = pa->dtype;
		ad->rank = pa->rank;
		for (int i = pa->rank - 1; i >= 0; i--) {
			if (!blk_sym_eval(pa->shape[i], &env, &ad->shape[i])) {
				blk_error(d, pa->loc, "cannot compute the shape of '%s' from the given sizes", pa->name);
				return -1;
			}
			if (ad->shape[i] < 0) { /* `f32[N - 8]` at N=4: say which dim and what it came to */
				char *text = NULL;
				size_t len = 0;
				FILE *f = open_memstream(&text, &len);
				if (f) {
					blk_sym_print(f, pa->shape[i]);
					fclose(f);
				}
				blk_error(d, pa->loc, "dim %d of '%s', %s, is %" PRId64 " at the given sizes: an array's dims are "
				          "0 or more", i, pa->name, text ? text : "?", ad->shape[i]);
				free(text);
				return -1;
			}
			ad->strides[i] = i == pa->rank - 1 ? 1 : ad->strides[i + 1] * ad->shape[i + 1];
		}
	}
	return n;
}

/* Whether compile mode goes down to LLVM and PTX (and needs sizes). */
static bool blkc_lowers(const BlkcOptions *o)
{
	return o->emit == EMIT_LLVM || o->emit == EMIT_PTX || o->emit == EMIT_C || o->dump_after ||
	       o->report || o->estimate;
}

/* The target when --arch is not given: the GPU's own if this machine has
 * one, else sm_90a.  The answer is kept in buf. */
static const char *default_arch(char *buf, size_t len)
{
	char err[256];
	snprintf(buf, len, "sm_90a");
	if (blk_device_count(err, sizeof err) <= 0)
		return buf;
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	if (rt)
		snprintf(buf, len, "%s", blk_runtime_arch(rt));
	blk_runtime_destroy(rt);
	return buf;
}

bool blkc_kernel_fits(const BlkKernel *k, BlkDiag *d)
{
	if (k->nsizes <= BLK_MAX_SIZES && k->nparams <= BLK_MAX_PARAMS)
		return true;
	blk_error(d, k->loc, "kernel `%s` has %d parameters and %d launch sizes; the limit is %d of each",
	          k->name, k->nparams, k->nsizes, BLK_MAX_PARAMS);
	return false;
}

/* The sizes bound on the command line and contiguous arrays of them for
 * kernel k; sizes and arrays hold BLK_MAX_SIZES and BLK_MAX_PARAMS. */
static bool bind_at_sizes(const BlkcOptions *o, BlkDiag *d, const BlkKernel *k, int64_t *sizes,
                          BlkArrayDesc *arrays, int *n)
{
	if (!blkc_kernel_fits(k, d))
		return false;
	if (!blkc_sizes_from_bindings(k, o, sizes, d))
		return false;
	for (int i = 0; i < k->nsizes; i++) {
		if (sizes[i] < 0) {
			list_missing_sizes(k, sizes, d);
			return false;
		}
	}
	*n = blkc_array_descs(k, sizes, arrays, d);
	return *n >= 0 && blk_bind_sizes(k, arrays, *n, sizes, d);
}

/* Lowers kernel k at the bound sizes (for --emit=llvm|ptx|c, --dump-after,
 * --report); sizes and arrays hold BLK_MAX_SIZES and BLK_MAX_PARAMS. */
bool blkc_lower_at_sizes(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkKernel *k,
                         const char *arch, int64_t *sizes, BlkArrayDesc *arrays, int *n,
                         BlkCompiled *out)
{
	if (!bind_at_sizes(o, d, k, sizes, arrays, n))
		return false;
	BlkLowerOptions lo = { .arch = arch, .dump_after = o->dump_after, .dump_out = stderr,
	                       .want_llvm = o->emit == EMIT_LLVM, .no_tma = o->emit == EMIT_C };
	return blk_lower_kernel(a, d, k, sizes, arrays, &lo, out);
}

FILE *blkc_open_output(const BlkcOptions *o, BlkDiag *d)
{
	if (!o->out)
		return stdout;
	FILE *f = fopen(o->out, "w");
	if (!f) {
		BlkLoc none = { 0 };
		blk_error(d, none, "cannot write %s: %s", o->out, strerror(errno));
	}
	return f;
}

bool blkc_close_output(FILE *f, const BlkcOptions *o, BlkDiag *d)
{
	bool ok = !ferror(f);
	if (f != stdout)
		ok = fclose(f) == 0 && ok;
	else
		ok = fflush(f) == 0 && ok;
	if (!ok) {
		BlkLoc none = { 0 };
		blk_error(d, none, "error writing %s", o->out ? o->out : "standard output");
	}
	return ok;
}

/* k with its `auto` parameters chosen by the cost model at the sizes
 * bound on the command line (runtime/auto.c), and the module holding it;
 * k itself when it has none.  The choice is noted on stderr. */
static BlkKernel *resolve_autos(const BlkcOptions *o, BlkArena *a, BlkDiag *d, BlkModule **m,
                                BlkKernel *k)
{
	int64_t sizes[BLK_MAX_SIZES];
	BlkArrayDesc arrays[BLK_MAX_PARAMS];
	int n;
	if (!k || !blk_auto_any(k))
		return k;
	if (!bind_at_sizes(o, d, k, sizes, arrays, &n))
		return NULL;
	BlkLowerOptions lo = { .arch = o->arch };
	BlkAutoChoice ch;
	BlkModule *chosen = blk_auto_choose(a, d, k->loc.src, o->defines, o->ndefines, k, sizes,
	                                    arrays, &lo, &ch);
	if (!chosen)
		return NULL;
	fprintf(stderr, "blkc: kernel %s: auto chose %s (the model's estimate %.1f us; %d points "
	        "ranked, %d lowered)\n", k->name, ch.text, ch.cost.us, ch.ranked, ch.lowered);
	*m = chosen;
	for (BlkKernel *c = chosen->first; c; c = c->next)
		if (strcmp(c->name, k->name) == 0)
			return c;
	return NULL;
}

/* --estimate: the cost model's reading and estimate, one JSON line. */
static int estimate_mode(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkKernel *k)
{
	int64_t sizes[BLK_MAX_SIZES];
	BlkArrayDesc arrays[BLK_MAX_PARAMS];
	int n;
	BlkCost c;
	BlkLowerOptions lo = { .arch = o->arch };
	if (!bind_at_sizes(o, d, k, sizes, arrays, &n) || !blk_lower_cost(a, d, k, sizes, arrays, &lo, &c))
		return BLKC_ERROR;
	const BlkCostWork *w = &c.work;
	FILE *f = blkc_open_output(o, d);
	if (!f)
		return BLKC_ERROR;
	fprintf(f, "{\"kernel\": \"%s\", \"us\": %.3f, \"per_sm\": %d, \"limit\": \"%s\", \"regs\": %d, "
	        "\"waves\": %.0f, \"compute_us\": %.3f, \"memory_us\": %.3f, \"latency_us\": %.3f, "
	        "\"dram_us\": %.3f, \"flight\": %.3f, \"programs\": %.0f, \"flops\": %.6g, \"bytes\": %.6g, "
	        "\"trips\": %.0f, \"sfu\": %.6g, \"engine\": \"%s\", \"dot\": [%lld, %lld, %lld], "
	        "\"largest_tile\": %.0f, \"compulsory\": %.6g, \"threads\": %d, \"smem\": %lld, "
	        "\"specialized\": %s, \"stages\": %d}\n",
	        k->name, isfinite(c.us) ? c.us : -1.0, c.per_sm, c.limit ? c.limit : "", c.regs, c.waves,
	        c.compute_us, c.memory_us, c.latency_us, c.dram_us, c.flight, w->programs, w->flops,
	        w->bytes, w->trips, w->sfu, w->engine ? w->engine : "", (long long)w->dot_m,
	        (long long)w->dot_n, (long long)w->dot_k, w->largest_tile, w->compulsory, c.threads,
	        (long long)c.smem, c.specialized ? "true" : "false", k->num_stages);
	return blkc_close_output(f, o, d) ? BLKC_OK : BLKC_ERROR;
}

static int compile_mode(const BlkcOptions *o, BlkArena *a, BlkDiag *d, BlkModule *m)
{
	if (!blkc_lowers(o)) {
		if (o->emit != EMIT_IR) /* a check: of the kernel named, which must be there */
			return !o->kernel || blkc_pick_kernel(m, o, d) ? BLKC_OK : BLKC_ERROR;
		FILE *f = blkc_open_output(o, d);
		if (!f)
			return BLKC_ERROR;
		if (o->kernel) {
			BlkKernel *k = blkc_pick_kernel(m, o, d);
			if (k)
				blk_ir_print_kernel(f, k);
		} else {
			blk_ir_print_module(f, m);
		}
		return blkc_close_output(f, o, d) && !blk_diag_error_count(d) ? BLKC_OK : BLKC_ERROR;
	}
	BlkKernel *k = resolve_autos(o, a, d, &m, blkc_pick_kernel(m, o, d));
	if (k && o->estimate)
		return estimate_mode(o, a, d, k);
	if (k && o->emit == EMIT_C)
		return blkc_emit_c(o, a, d, k);
	BlkCompiled c;
	int64_t sizes[BLK_MAX_SIZES];
	BlkArrayDesc arrays[BLK_MAX_PARAMS];
	int n;
	if (!k || !blkc_lower_at_sizes(o, a, d, k, o->arch, sizes, arrays, &n, &c))
		return BLKC_ERROR;
	if (o->emit == EMIT_LLVM || o->emit == EMIT_PTX) {
		FILE *f = blkc_open_output(o, d);
		if (!f)
			return BLKC_ERROR;
		fputs(o->emit == EMIT_LLVM ? c.llvm_ir : c.ptx, f);
		if (!blkc_close_output(f, o, d))
			return BLKC_ERROR;
	}
	if (o->report) /* last: it specializes k in place */
		blkc_report(o, a, d, m, k, &c, sizes, arrays);
	return BLKC_OK;
}

/* tokens and ast need only the parser; everything else the whole frontend. */
static int run_frontend(const BlkcOptions *o, BlkArena *a, BlkDiag *d)
{
	BlkSource *src = blk_source_read(a, d, o->file);
	if (!src)
		return BLKC_ERROR;
	if (o->from_ir)
		return blkc_from_ir(o, a, d, src);
	if (o->emit == EMIT_TOKENS || o->emit == EMIT_AST) {
		if (o->nbindings || o->ndefines || o->run)
			return bad_usage("--emit=tokens|ast takes no sizes, -D or run%s", "");
		FILE *f = blkc_open_output(o, d);
		if (!f)
			return BLKC_ERROR;
		bool ok;
		if (o->emit == EMIT_TOKENS) {
			ok = blk_lex_dump(f, src, d);
		} else {
			struct BlkAstFile *ast = blk_parse(a, d, src);
			if ((ok = ast != NULL))
				blk_ast_print(f, ast);
		}
		return blkc_close_output(f, o, d) && ok ? BLKC_OK : BLKC_ERROR;
	}
	BlkModule *m = blk_compile_source(a, d, src, o->defines, o->ndefines);
	if (!m)
		return BLKC_ERROR;
	return o->run ? blkc_run(o, a, d, m) : compile_mode(o, a, d, m);
}

int main(int argc, char **argv)
{
	BlkcOptions o = { 0 };
	int r = parse_args(&o, argc, argv);
	if (r >= 0)
		return r;
	char arch[32];
	if (!o.run && !o.from_ir && blkc_lowers(&o) && !o.arch)
		o.arch = default_arch(arch, sizeof arch);
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 20);
	r = run_frontend(&o, a, d);
	if (r == BLKC_OK && blk_diag_error_count(d))
		r = BLKC_ERROR;
	blk_arena_destroy(a);
	return r;
}
