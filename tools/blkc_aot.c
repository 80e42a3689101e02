/* blkc_aot.c - `blkc --emit=c`: a kernel compiled ahead of time into C.
 *
 * The output is a C file (and, with -o NAME.c, NAME.h beside it) holding
 * the kernel's PTX for each arch of --arch=A,B,... and a typed launch
 * function: device pointers and the launch sizes as arguments, the sizes
 * checked against the ones compiled for.  It needs only the CUDA driver,
 * opened with dlopen at the first launch — no LLVM, no libblk — so an
 * application ships compiled kernels (cuda.h is needed to build it, for
 * the driver's types).  At the first launch in a context it
 * picks the first arch the device runs (sm_XYa: exactly X.Y; sm_XY: X.Y or
 * newer), loads that PTX (the driver JITs it) and keeps the function.
 *
 * The arrays are row-major contiguous, as blk specializes on strides too.
 */
#include "blkc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "runtime/include/blk.h"

enum { MAX_ARCHES = 8 };

/* One arch's compilation. */
typedef struct Variant {
	const char *arch;
	BlkCompiled c;
} Variant;

/* Splits "sm_90a,sm_80" into arches (in a's memory); 0 after an error: no
 * arch (`--arch=,` launched variant 0 that was never compiled), too many,
 * or one twice. */
static int split_arches(BlkArena *a, BlkDiag *d, const char *list, const char **out)
{
	BlkLoc none = { 0 };
	int n = 0;
	char *copy = blk_arena_strdup(a, list);
	for (char *s = strtok(copy, ","); s; s = strtok(NULL, ",")) {
		if (n == MAX_ARCHES) {
			blk_error(d, none, "--arch=%s: more than %d arches", list, MAX_ARCHES);
			return 0;
		}
		for (int i = 0; i < n; i++)
			if (strcmp(out[i], s) == 0) {
				blk_error(d, none, "--arch=%s: %s is given twice", list, s);
				return 0;
			}
		out[n++] = s;
	}
	if (n == 0)
		blk_error(d, none, "--arch=%s names no arch (write --arch=sm_90a,sm_80)", list);
	return n;
}

/* A string as C literals, one per line of the text. */
static void put_literal(FILE *f, const char *s)
{
	fputs("\t\"", f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\n')
			fputs(s[1] ? "\\n\"\n\t\"" : "\\n", f);
		else if (c == '\\' || c == '"')
			fprintf(f, "\\%c", c);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 32 || c > 126)
			fprintf(f, "\\%03o", c);
		else
			fputc(c, f);
	}
	fputs("\"", f);
}

/* "void *x, void *y, void *z, int64_t N" */
static void put_params(FILE *f, const BlkKernel *k)
{
	fputs("void *stream", f);
	for (int p = 0; p < k->nparams; p++)
		if (k->params[p].access != BLK_ACCESS_SCRATCH)
			fprintf(f, ", void *%s", k->params[p].name);
	for (int i = 0; i < k->nsizes; i++)
		fprintf(f, ", int64_t %s", k->sizes[i]);
}

static const char *access_name(BlkAccess a)
{
	return a == BLK_ACCESS_IN ? "in" : a == BLK_ACCESS_OUT ? "out" : "inout";
}

/* The comment above the prototypes: what each pointer must hold. */
static void put_contract(FILE *f, const BlkKernel *k, const BlkArrayDesc *arrays,
                         const int64_t *sizes, const char *fn)
{
	fprintf(f, "/* Launches %s on stream (a CUstream; NULL: the default stream) in the\n"
	        " * calling thread's current CUDA context.  Device pointers to row-major\n"
	        " * contiguous arrays:\n", k->name);
	int n = 0;
	for (int p = 0; p < k->nparams; p++) {
		const BlkParam *pa = &k->params[p];
		if (pa->access == BLK_ACCESS_SCRATCH)
			continue;
		const BlkArrayDesc *ad = &arrays[n++];
		fprintf(f, " *   %s: %s %s[", pa->name, pa->prefetch ? "prefetch (in)" : access_name(pa->access),
		        blk_dtype_name(ad->dtype));
		for (int d = 0; d < ad->rank; d++)
			fprintf(f, "%s%lld", d ? ", " : "", (long long)ad->shape[d]);
		fprintf(f, "]\n");
	}
	fprintf(f, " * The sizes must be the ones compiled for:");
	for (int i = 0; i < k->nsizes; i++)
		fprintf(f, " %s=%lld", k->sizes[i], (long long)sizes[i]);
	fprintf(f, "%s.\n * Returns 0 once the kernel is enqueued, a CUresult from the driver, or\n"
	        " * one of the negative codes above; %s_error names any of them. */\n",
	        k->nsizes ? "" : " (none)", fn);
}

static void put_header_body(FILE *f, const BlkKernel *k, const BlkArrayDesc *arrays,
                            const int64_t *sizes, const char *fn)
{
	fprintf(f, "#include <stdint.h>\n\n#ifndef BLK_AOT_CODES\n#define BLK_AOT_CODES\n"
	        "enum {\n\tBLK_AOT_BAD_SIZES = -1,   /* sizes other than the compiled ones */\n"
	        "\tBLK_AOT_NO_DRIVER = -2,   /* libcuda.so.1 missing or unusable */\n"
	        "\tBLK_AOT_NO_ARCH = -3,     /* no PTX here runs on the device */\n"
	        "\tBLK_AOT_NO_CONTEXT = -4,  /* no current CUDA context */\n};\n#endif\n\n");
	put_contract(f, k, arrays, sizes, fn);
	fprintf(f, "int %s(", fn);
	put_params(f, k);
	fprintf(f, ");\n/* A message for a code %s returned. */\nconst char *%s_error(int code);\n",
	        fn, fn);
}

/* The driver's entry points, as the generated file declares them. */
static const char driver_part[] =
	"/* The CUDA driver, opened once; entry points through cuGetProcAddress_v2,\n"
	" * with cuda.h's types (a call through another type is undefined). */\n"
	"static struct {\n"
	"\tint tried, error;\n"
	"\tCUresult (*cuInit)(unsigned);\n"
	"\tCUresult (*cuCtxGetCurrent)(CUcontext *);\n"
	"\tCUresult (*cuCtxGetDevice)(CUdevice *);\n"
	"\tCUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);\n"
	"\tCUresult (*cuModuleLoadData)(CUmodule *, const void *);\n"
	"\tCUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);\n"
	"\tCUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);\n"
	"\tCUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,\n"
	"\t                           unsigned, unsigned, CUstream, void **, void **);\n"
	"\tCUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);\n"
	"\tCUresult (*cuGetErrorName)(CUresult, const char **);\n"
	"} drv;\n\n"
	"typedef CUresult (*GetProcFn)(const char *, void **, int, cuuint64_t,\n"
	"                              CUdriverProcAddressQueryResult *);\n\n"
	"static int resolve(GetProcFn gpa, const char *name, int version, void **fn)\n"
	"{\n"
	"\tCUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;\n"
	"\treturn gpa(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&\n"
	"\t       status == CU_GET_PROC_ADDRESS_SUCCESS && *fn;\n"
	"}\n\n"
"static int open_driver(void)\n"
	"{\n"
	"\tif (drv.tried)\n"
	"\t\treturn drv.error;\n"
	"\tdrv.tried = 1;\n"
	"\tdrv.error = BLK_AOT_NO_DRIVER;\n"
	"\tconst char *path = getenv(\"BLK_LIBCUDA\");\n"
	"\tvoid *lib = dlopen(path && *path ? path : \"libcuda.so.1\", RTLD_NOW | RTLD_LOCAL);\n"
	"\tGetProcFn gpa = NULL;\n"
	"\tif (lib)\n"
	"\t\t*(void **)&gpa = dlsym(lib, \"cuGetProcAddress_v2\");\n"
	"\tif (!gpa || !resolve(gpa, \"cuInit\", 2000, (void **)&drv.cuInit) ||\n"
	"\t    !resolve(gpa, \"cuCtxGetCurrent\", 4000, (void **)&drv.cuCtxGetCurrent) ||\n"
	"\t    !resolve(gpa, \"cuCtxGetDevice\", 2000, (void **)&drv.cuCtxGetDevice) ||\n"
	"\t    !resolve(gpa, \"cuDeviceGetAttribute\", 2000, (void **)&drv.cuDeviceGetAttribute) ||\n"
	"\t    !resolve(gpa, \"cuModuleLoadData\", 2000, (void **)&drv.cuModuleLoadData) ||\n"
	"\t    !resolve(gpa, \"cuModuleGetFunction\", 2000, (void **)&drv.cuModuleGetFunction) ||\n"
	"\t    !resolve(gpa, \"cuFuncSetAttribute\", 9000, (void **)&drv.cuFuncSetAttribute) ||\n"
	"\t    !resolve(gpa, \"cuLaunchKernel\", 4000, (void **)&drv.cuLaunchKernel) ||\n"
	"\t    !resolve(gpa, \"cuLaunchKernelEx\", 11060, (void **)&drv.cuLaunchKernelEx) ||\n"
	"\t    !resolve(gpa, \"cuGetErrorName\", 6000, (void **)&drv.cuGetErrorName) ||\n"
	"\t    drv.cuInit(0) != CUDA_SUCCESS)\n"
	"\t\treturn drv.error;\n"
	"\treturn drv.error = 0;\n"
	"}\n\n"
	"/* sm_XYa runs on exactly X.Y, sm_XY on X.Y or newer. */\n"
	"static int arch_fits(const char *arch, int major, int minor)\n"
	"{\n"
	"\tint want = atoi(arch + 3), have = major * 10 + minor;\n"
	"\treturn arch[strlen(arch) - 1] == 'a' ? have == want : have >= want;\n"
	"}\n\n";

static void put_variants(FILE *f, const Variant *v, int n)
{
	/* PTX is one literal per kernel, longer than ISO C's minimum limit
	 * (4095) that -Wpedantic checks; GCC and Clang have none. */
	fputs("#ifdef __GNUC__\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n\n", f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "static const char ptx_%d[] =\n", i);
		put_literal(f, v[i].c.ptx);
		fputs(";\n\n", f);
	}
	fputs("static const struct {\n\tconst char *arch, *ptx, *entry;\n"
	      "\tunsigned threads, smem, grid[3], cluster;\n} variants[] = {\n", f);
	for (int i = 0; i < n; i++) {
		const BlkLaunch *l = v[i].c.launch;
		unsigned g[3] = { 0, 0, 0 }; /* (fixed sizes: a constant grid, checked by blk_bind_sizes) */
		blk_launch_grid(l, NULL, g);
		fprintf(f, "\t{\"%s\", ptx_%d, \"%s\", %d, %lldu, {%u, %u, %u}, %d},\n", v[i].arch, i, v[i].c.entry,
		        l->threads, (long long)l->smem, g[0], g[1], g[2], l->cluster > 1 ? l->cluster : 1);
	}
	fputs("};\n\n", f);
}

static const char load_part[] =
	"/* The function for the current context: the first variant the device\n"
	" * runs, loaded once per context. */\n"
	"static CUcontext loaded_ctx;\n"
	"static CUfunction fn;\n"
	"static int variant;\n\n"
	"static int load_function(void)\n"
	"{\n"
	"\tCUcontext ctx = NULL;\n"
	"\tCUmodule mod = NULL;\n"
	"\tCUdevice dev = 0;\n"
	"\tint major = 0, minor = 0;\n"
	"\tCUresult r = drv.cuCtxGetCurrent(&ctx);\n"
	"\tif (r || !ctx)\n"
	"\t\treturn r ? (int)r : BLK_AOT_NO_CONTEXT;\n"
	"\tif (ctx == loaded_ctx)\n"
	"\t\treturn 0;\n"
	"\tif ((r = drv.cuCtxGetDevice(&dev)) ||\n"
	"\t    (r = drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) ||\n"
	"\t    (r = drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))\n"
	"\t\treturn (int)r;\n"
	"\tfor (variant = 0; variant < (int)(sizeof variants / sizeof variants[0]); variant++)\n"
	"\t\tif (arch_fits(variants[variant].arch, major, minor))\n"
	"\t\t\tbreak;\n"
	"\tif (variant == (int)(sizeof variants / sizeof variants[0]))\n"
	"\t\treturn BLK_AOT_NO_ARCH;\n"
	"\tif ((r = drv.cuModuleLoadData(&mod, variants[variant].ptx)) ||\n"
	"\t    (r = drv.cuModuleGetFunction(&fn, mod, variants[variant].entry)))\n"
	"\t\treturn (int)r;\n"
	"\tif (variants[variant].smem > 48 * 1024 &&\n"
	"\t    (r = drv.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,\n"
	"\t                                (int)variants[variant].smem)))\n"
	"\t\treturn (int)r;\n"
	"\tloaded_ctx = ctx;\n"
	"\treturn 0;\n"
	"}\n\n";

/* The launch function: the kernel arguments as the launch header lists
 * them -- pointers only, since an ahead-of-time kernel has fixed sizes
 * and no tensor maps (no_tma), the same for every arch's variant. */
static void put_launch(FILE *f, const BlkKernel *k, const BlkLaunch *l, const int64_t *sizes, const char *fn)
{
	fprintf(f, "int %s(", fn);
	put_params(f, k);
	fputs(")\n{\n\tif (", f);
	for (int i = 0; i < k->nsizes; i++)
		fprintf(f, "%s%s != %lld", i ? " || " : "", k->sizes[i], (long long)sizes[i]);
	fprintf(f, "%s)\n\t\treturn BLK_AOT_BAD_SIZES;\n", k->nsizes ? "" : "0");
	fputs("\tint r = open_driver();\n\tif (r || (r = load_function()))\n\t\treturn r;\n", f);
	fprintf(f, "\tunsigned long long ptrs[%d] = {", l->nargs > 0 ? l->nargs : 1);
	for (int j = 0; j < l->nargs; j++) {
		if (l->args[j].kind != BLK_ARG_PTR)
			blk_die("blkc: --emit=c: kernel %s takes a launch argument other than a pointer", k->name);
		fprintf(f, "%s(uintptr_t)%s", j ? ", " : "", k->params[l->args[j].param].name);
	}
	fprintf(f, "};\n\tvoid *args[%d];\n\tfor (int i = 0; i < %d; i++)\n\t\targs[i] = &ptrs[i];\n",
	        l->nargs > 0 ? l->nargs : 1, l->nargs);
	fputs("\tconst unsigned *g = variants[variant].grid;\n"
	      "\tif (!g[0] || !g[1] || !g[2])\n\t\treturn 0; /* an empty grid: nothing to do */\n"
	      "\tif (variants[variant].cluster > 1) { /* CTAs in clusters along x */\n"
	      "\t\tCUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};\n"
	      "\t\tat.value.clusterDim.x = variants[variant].cluster;\n"
	      "\t\tat.value.clusterDim.y = at.value.clusterDim.z = 1;\n"
	      "\t\tCUlaunchConfig cfg = {g[0], g[1], g[2], variants[variant].threads, 1, 1,\n"
	      "\t\t                      variants[variant].smem, (CUstream)stream, &at, 1};\n"
	      "\t\treturn (int)drv.cuLaunchKernelEx(&cfg, fn, args, NULL);\n\t}\n"
	      "\treturn (int)drv.cuLaunchKernel(fn, g[0], g[1], g[2], variants[variant].threads, 1, 1,\n"
	      "\t                               variants[variant].smem, (CUstream)stream, args, NULL);\n"
	      "}\n\n", f);
	fprintf(f, "const char *%s_error(int code)\n{\n\tconst char *name = NULL;\n"
	        "\tswitch (code) {\n\tcase 0: return \"ok\";\n"
	        "\tcase BLK_AOT_BAD_SIZES: return \"%s: sizes other than the compiled ones\";\n"
	        "\tcase BLK_AOT_NO_DRIVER: return \"%s: no usable CUDA driver (libcuda.so.1)\";\n"
	        "\tcase BLK_AOT_NO_ARCH: return \"%s: no PTX in this file runs on the device\";\n"
	        "\tcase BLK_AOT_NO_CONTEXT: return \"%s: no current CUDA context\";\n\t}\n"
	        "\tif (drv.cuGetErrorName && drv.cuGetErrorName((CUresult)code, &name) == CUDA_SUCCESS && name)\n"
	        "\t\treturn name;\n\treturn \"%s: a CUDA driver error\";\n}\n", fn, fn, fn, fn, fn, fn);
}

/* NAME.h for -o NAME.c; NULL when there is no -o or it does not end in .c. */
static char *header_path(const BlkcOptions *o)
{
	size_t n = o->out ? strlen(o->out) : 0;
	if (n < 3 || strcmp(o->out + n - 2, ".c") != 0)
		return NULL;
	char *h = strdup(o->out);
	if (h)
		h[n - 1] = 'h';
	return h;
}

static bool write_header(const char *path, const BlkKernel *k, const BlkArrayDesc *arrays,
                         const int64_t *sizes, const char *fn, BlkDiag *d)
{
	FILE *f = fopen(path, "w");
	BlkLoc none = {0};
	if (!f) {
		blk_error(d, none, "cannot write %s", path);
		return false;
	}
	fprintf(f, "/* Generated by blkc %s --emit=c: kernel %s, compiled ahead of time. */\n"
	        "#ifndef BLK_AOT_%s_H\n#define BLK_AOT_%s_H\n\n", blk_version(), k->name, k->name,
	        k->name);
	put_header_body(f, k, arrays, sizes, fn);
	fputs("\n#endif\n", f);
	bool ok = !ferror(f);
	ok = fclose(f) == 0 && ok;
	if (!ok)
		blk_error(d, none, "error writing %s", path);
	return ok;
}

static void put_source(FILE *f, const BlkcOptions *o, const BlkKernel *k, const Variant *v, int nv,
                       const BlkArrayDesc *arrays, const int64_t *sizes, const char *header,
                       const char *fn)
{
	fprintf(f, "/* Generated by blkc %s --emit=c from %s: kernel %s, compiled ahead of time\n"
	        " * for", blk_version(), o->file, k->name);
	for (int i = 0; i < k->nsizes; i++)
		fprintf(f, " %s=%lld", k->sizes[i], (long long)sizes[i]);
	for (int i = 0; i < o->ndefines; i++)
		fprintf(f, " -D %s=%s", o->defines[i].name, o->defines[i].value);
	fprintf(f, ", PTX for");
	for (int i = 0; i < nv; i++)
		fprintf(f, "%s %s", i ? "," : "", v[i].arch);
	fprintf(f, ".\n * Needs only the CUDA driver at run time (libcuda.so.1, or $BLK_LIBCUDA,\n"
	        " * opened at the first launch); building takes cuda.h (the types):\n"
	        " * cc -I/usr/local/cuda/include -c this file; link with -ldl.  Launch from\n"
	        " * one thread at a time. */\n#include <cuda.h>\n#include <dlfcn.h>\n"
	        "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n");
	if (header) {
		const char *base = strrchr(header, '/');
		fprintf(f, "#include \"%s\"\n\n", base ? base + 1 : header);
	} else {
		put_header_body(f, k, arrays, sizes, fn);
		fputc('\n', f);
	}
	fputs(driver_part, f);
	put_variants(f, v, nv);
	fputs(load_part, f);
	put_launch(f, k, v[0].c.launch, sizes, fn);
}

int blkc_emit_c(const BlkcOptions *o, BlkArena *a, BlkDiag *d, const BlkKernel *k)
{
	const char *arches[MAX_ARCHES];
	Variant v[MAX_ARCHES];
	int64_t sizes[BLK_MAX_SIZES];
	BlkArrayDesc arrays[BLK_MAX_PARAMS];
	int nv = split_arches(a, d, o->arch, arches), n = 0;
	if (nv == 0)
		return BLKC_ERROR;
	if (blk_kernel_multi_rank(k)) {
		blk_error(d, k->loc, "kernel %s: --emit=c compiles kernels of one GPU; this one runs across "
		          "ranks (symmetric params, my_rank or world): launch it through libblk", k->name);
		return BLKC_ERROR;
	}
	for (int i = 0; k->size_dyn && i < k->nsizes; i++)
		if (k->size_dyn[i] > 0) {
			blk_error(d, k->loc, "kernel %s: --emit=c compiles for fixed sizes, but `%s` is dynamic; "
			          "drop `dynamic (...)` for an ahead-of-time build, or launch it through libblk",
			          k->name, k->sizes[i]);
			return BLKC_ERROR;
		}
	for (int i = 0; i < nv; i++) {
		v[i].arch = arches[i];
		if (!blkc_lower_at_sizes(o, a, d, k, arches[i], sizes, arrays, &n, &v[i].c))
			return BLKC_ERROR;
	}
	char fn[128];
	snprintf(fn, sizeof fn, "blk_aot_%s", k->name);
	char *header = header_path(o);
	if (o->out && !header) /* said, not silently skipped: `-o x.h` wrote the C source there */
		fprintf(stderr, "blkc: warning: -o %s does not end in .c, so no header is written beside it "
		        "(-o NAME.c writes NAME.c and NAME.h)\n", o->out);
	FILE *f = NULL;
	bool ok = (!header || write_header(header, k, arrays, sizes, fn, d)) &&
	          (f = blkc_open_output(o, d)) != NULL;
	if (ok) {
		put_source(f, o, k, v, nv, arrays, sizes, header, fn);
		ok = blkc_close_output(f, o, d);
	}
	free(header);
	return ok ? BLKC_OK : BLKC_ERROR;
}
