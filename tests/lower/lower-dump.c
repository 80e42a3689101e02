/* lower-dump - lowers one kernel of a .blk file at given sizes and prints
 * one stage, for the FileCheck tests and by hand:
 *
 *   lower-dump --emit=ir|llvm|ptx|report [--arch=sm_80] [--dump-after=PASS]
 *              [--dtype=T] FILE SIZE=VALUE... [-D NAME=VALUE]...
 *
 * Arrays are contiguous row-major with the dtype of their param.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "lower/lower.h"

typedef struct Args {
	const char *emit, *arch, *dump, *file;
	int nsizes, ndefs;
	const char *snames[16];
	int64_t svals[16];
	BlkDefine defs[16];
	const char *kernel; /* --kernel=NAME; else the file's first */
} Args;

static int usage(void)
{
	fprintf(stderr, "usage: lower-dump --emit=ir|llvm|ptx|report [--arch=A] [--dump-after=P] [--kernel=NAME] "
	                "FILE NAME=VALUE... [-D NAME=VALUE]...\n");
	return 2;
}

static bool parse_args(int argc, char **argv, Args *a)
{
	memset(a, 0, sizeof *a);
	a->emit = "ptx";
	for (int i = 1; i < argc; i++) {
		char *s = argv[i], *eq;
		if (strncmp(s, "--emit=", 7) == 0)
			a->emit = s + 7;
		else if (strncmp(s, "--arch=", 7) == 0)
			a->arch = s + 7;
		else if (strncmp(s, "--dump-after=", 13) == 0)
			a->dump = s + 13;
		else if (strncmp(s, "--kernel=", 9) == 0)
			a->kernel = s + 9;
		else if (strcmp(s, "-D") == 0 && i + 1 < argc && (eq = strchr(argv[i + 1], '=')) && a->ndefs < 16) {
			*eq = 0;
			a->defs[a->ndefs++] = (BlkDefine){ argv[i + 1], eq + 1 };
			i++;
		} else if ((eq = strchr(s, '=')) && a->file && a->nsizes < 16) {
			*eq = 0;
			a->snames[a->nsizes] = s;
			a->svals[a->nsizes++] = strtoll(eq + 1, NULL, 10);
		} else if (!a->file)
			a->file = s;
		else
			return false;
	}
	return a->file != NULL;
}

static int64_t size_of(const Args *a, const char *name)
{
	for (int i = 0; i < a->nsizes; i++)
		if (strcmp(a->snames[i], name) == 0)
			return a->svals[i];
	fprintf(stderr, "lower-dump: no value for size %s\n", name);
	exit(2);
}

/* Contiguous arrays whose shapes follow from the sizes. */
static void make_arrays(const Args *a, const BlkKernel *k, BlkArrayDesc *arr, int64_t *sizes)
{
	const char *names[16];
	for (int i = 0; i < k->nsizes; i++) {
		names[i] = k->sizes[i];
		sizes[i] = size_of(a, k->sizes[i]);
	}
	BlkSymEnv env = { k->nsizes, names, sizes };
	int n = 0;
	for (int p = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		BlkArrayDesc *d = &arr[n++];
		memset(d, 0, sizeof *d);
		d->dtype = pa->dtype;
		d->rank = pa->rank;
		int64_t st = 1;
		for (int i = pa->rank - 1; i >= 0; i--) {
			if (!blk_sym_eval(pa->shape[i], &env, &d->shape[i]))
				exit(2);
			d->strides[i] = st;
			st *= d->shape[i];
		}
	}
}

int main(int argc, char **argv)
{
	Args a;
	if (!parse_args(argc, argv, &a))
		return usage();
	BlkArena *ar = blk_arena_create();
	BlkDiag *d = blk_diag_create(ar, stderr, 20);
	BlkSource *src = blk_source_read(ar, d, a.file);
	BlkModule *m = src ? blk_compile_source(ar, d, src, a.defs, a.ndefs) : NULL;
	if (!m || !m->first)
		return 1;
	BlkKernel *k = a.kernel ? blk_module_find(m, a.kernel) : m->first;
	if (!k) {
		fprintf(stderr, "lower-dump: no kernel %s in %s\n", a.kernel, a.file);
		return 1;
	}
	BlkArrayDesc arr[16];
	int64_t sizes[16];
	make_arrays(&a, k, arr, sizes);
	BlkLowerOptions o = { .arch = a.arch, .dump_after = a.dump, .dump_out = stdout,
	                      .want_llvm = strcmp(a.emit, "llvm") == 0 };
	BlkCompiled out;
	if (!blk_lower_kernel(ar, d, k, sizes, arr, &o, &out))
		return 1;
	if (strcmp(a.emit, "llvm") == 0)
		fputs(out.llvm_ir, stdout);
	else if (strcmp(a.emit, "ptx") == 0)
		fputs(out.ptx, stdout);
	else if (strcmp(a.emit, "report") == 0)
	{
		unsigned g[3] = { 0, 0, 0 };
		BlkSymEnv env = { k->nsizes, k->sizes, sizes };
		blk_launch_grid(out.launch, &env, g);
		printf("entry %s threads %d smem %lld grid %u %u %u\n", out.entry, out.launch->threads,
		       (long long)out.launch->smem, g[0], g[1], g[2]);
	}
	blk_arena_destroy(ar);
	return 0;
}
