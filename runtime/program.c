/* program.c - programs, kernels, launch checks, specialization, launches.
 *
 * A launch goes: tensors -> array descriptors -> blk_bind_sizes (checks
 * count, dtype, rank and shape; nothing has touched the GPU yet) -> cache
 * key -> blk_lower_kernel on a miss -> module load on first use -> launch.
 */
#include "rt.h"
#include "auto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool blk_rt_capture_open(BlkRuntime *rt, BlkCapture *c, BlkArena *a)
{
	memset(c, 0, sizeof *c);
	c->f = open_memstream(&c->text, &c->len);
	if (!c->f)
		return blk_rt_error(rt, "out of memory");
	c->d = blk_diag_create(a, c->f, 20);
	return true;
}

void blk_rt_capture_close(BlkRuntime *rt, BlkCapture *c, bool failed, const char *what)
{
	fclose(c->f);
	if (failed) {
		size_t n = c->len;
		while (n && c->text[n - 1] == '\n')
			n--;
		const char *last = blk_diag_last_error(c->d);
		const char *sep = what ? ": " : "";
		what = what ? what : "";
		if (n)
			blk_rt_error(rt, "%s%s%.*s", what, sep, (int)n, c->text);
		else
			blk_rt_error(rt, "%s%s%s", what, sep, last ? last : "failed with no message");
	}
	free(c->text);
}

/* ---- loading ----------------------------------------------------------- */

static bool parse_defines(BlkRuntime *rt, BlkArena *a, const char *const *defs, int n,
                          BlkDefine *out)
{
	for (int i = 0; i < n; i++) {
		const char *eq = defs[i] ? strchr(defs[i], '=') : NULL;
		if (!eq || eq == defs[i])
			return blk_rt_error(rt, "define '%s' is not NAME=VALUE", defs[i] ? defs[i] : "(null)");
		out[i].name = blk_arena_strndup(a, defs[i], (size_t)(eq - defs[i]));
		out[i].value = blk_arena_strdup(a, eq + 1);
	}
	return true;
}

static int count_tensors(const BlkKernel *k)
{
	int n = 0;
	for (int i = 0; i < k->nparams; i++)
		n += k->params[i].access != BLK_ACCESS_SCRATCH;
	return n;
}

static bool make_funcs(BlkProgram *p)
{
	BlkFunc **tail = &p->funcs;
	for (BlkKernel *k = p->module->first; k; k = k->next) {
		BlkFunc *f = calloc(1, sizeof *f);
		if (!f)
			return blk_rt_error(p->rt, "out of memory");
		f->tag = BLK_TAG_FUNC;
		f->prog = p;
		f->kernel = k;
		f->has_auto = blk_auto_any(k);
		f->ntensors = count_tensors(k);
		*tail = f; /* linked first: blk_program_destroy frees what is made below */
		tail = &f->next;
		/* a launch's sizes and their class (dynamic sizes); the last one's sizes */
		size_t ns = (size_t)k->nsizes + 1, na = (size_t)f->ntensors + 1;
		f->spec_sizes = calloc(ns, sizeof *f->spec_sizes);
		f->spec_csizes = calloc(ns, sizeof *f->spec_csizes);
		f->spec_carrays = calloc(na, sizeof *f->spec_carrays);
		f->last_sizes = calloc(ns, sizeof *f->last_sizes);
		if (!f->spec_sizes || !f->spec_csizes || !f->spec_carrays || !f->last_sizes)
			return blk_rt_error(p->rt, "out of memory");
	}
	return true;
}

/* The compiler's work for a load, run under blk_guard. */
typedef struct LoadJob {
	BlkProgram *p;
	BlkDiag *d;
	const char *path, *name, *source;
	const BlkDefine *defs;
	int ndefs;
	const BlkSource *src; /* out */
} LoadJob;

static bool load_job(void *arg)
{
	LoadJob *j = arg;
	BlkProgram *p = j->p;
	const BlkSource *src = j->path ? blk_source_read(p->arena, j->d, j->path)
	                               : blk_source_from_string(p->arena, j->name, j->source,
	                                                        strlen(j->source));
	j->src = src;
	if (src)
		p->module = blk_compile_source(p->arena, j->d, src, j->defs, j->ndefs);
	return p->module != NULL;
}

/* Reads (path) or wraps (source) the text, then runs the frontend. */
static BlkProgram *load(BlkRuntime *rt, const char *path, const char *name, const char *source,
                        const char *const *defines, int ndefines)
{
	if (!blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_program_load"))
		return NULL;
	if (!blk_rt_count_ok(rt, "blk_program_load", "defines", ndefines, defines))
		return NULL;
	BlkProgram *p = calloc(1, sizeof *p);
	if (!p) {
		blk_rt_error(rt, "out of memory");
		return NULL;
	}
	p->tag = BLK_TAG_PROGRAM;
	p->rt = rt;
	p->arena = blk_arena_create();
	BlkDefine *defs = BLK_NEW_N(p->arena, BlkDefine, ndefines > 0 ? ndefines : 1);
	BlkCapture c;
	if (!parse_defines(rt, p->arena, defines, ndefines, defs) || !blk_rt_capture_open(rt, &c, p->arena)) {
		blk_program_destroy(p);
		return NULL;
	}
	LoadJob j = { p, c.d, path, name, source, defs, ndefines, NULL };
	char bug[600];
	bool ok = blk_guard(load_job, &j, bug, sizeof bug) && blk_diag_error_count(c.d) == 0;
	if (ok) { /* the disk cache's key covers the source and the defines */
		p->source = j.src->text;
		p->source_len = j.src->len;
		p->defines = defs;
		p->ndefines = ndefines;
	}
	blk_rt_capture_close(rt, &c, !ok, NULL); /* diagnostics carry file:line:col */
	if (bug[0])
		blk_rt_error(rt, "loading %s: %s", path ? path : name, bug);
	if (!ok || !make_funcs(p)) {
		blk_program_destroy(p);
		return NULL;
	}
	return p;
}

/* load() under a guard: an arena out of memory before the compiler's own
 * guard fails the call instead of aborting. */
typedef struct LoadCall {
	BlkRuntime *rt;
	const char *path, *name, *source;
	const char *const *defines;
	int ndefines;
	BlkProgram *p;
} LoadCall;

static bool load_call(void *arg)
{
	LoadCall *l = arg;
	l->p = load(l->rt, l->path, l->name, l->source, l->defines, l->ndefines);
	return l->p != NULL;
}

static BlkProgram *load_guarded(BlkRuntime *rt, const char *path, const char *name,
                                const char *source, const char *const *defines, int ndefines)
{
	LoadCall l = { rt, path, name, source, defines, ndefines, NULL };
	blk_rt_guard(rt, "blk_program_load", load_call, &l);
	return l.p;
}

BlkProgram *blk_program_load(BlkRuntime *rt, const char *path, const char *const *defines,
                             int ndefines)
{
	if (!path) {
		blk_rt_error(rt, "blk_program_load: path is NULL");
		return NULL;
	}
	return load_guarded(rt, path, NULL, NULL, defines, ndefines);
}

BlkProgram *blk_program_load_source(BlkRuntime *rt, const char *name, const char *source,
                                    const char *const *defines, int ndefines)
{
	if (!source) {
		blk_rt_error(rt, "blk_program_load_source: source is NULL");
		return NULL;
	}
	return load_guarded(rt, NULL, name ? name : "<string>", source, defines, ndefines);
}

void blk_program_destroy(BlkProgram *p)
{
	if (!p || !blk_handle_ok(p, BLK_TAG_PROGRAM, "blk_program_destroy"))
		return;
	/* Modules exist only if the runtime has a device; unload them in its
	 * context. */
	const BlkDriver *drv = blk_handle_ok(p->rt, BLK_TAG_RUNTIME, "blk_program_destroy") && p->rt->drv &&
	                       blk_rt_enter(p->rt, "blk_program_destroy") ? p->rt->drv : NULL;
	BlkFunc *next;
	for (BlkFunc *f = p->funcs; f; f = next) {
		next = f->next;
		blk_cache_clear(&f->cache, drv);
		free(f->last_arrays);
		free(f->spec_sizes), free(f->spec_csizes), free(f->spec_carrays);
		free(f->last_sizes);
		blk_handle_retire(f);
	}
	blk_arena_destroy(p->arena);
	blk_handle_retire(p);
}

unsigned blk_program_disk_hits(const BlkProgram *p)
{
	unsigned n = 0;
	if (!blk_handle_ok(p, BLK_TAG_PROGRAM, "blk_program_disk_hits"))
		return 0;
	for (const BlkFunc *f = p->funcs; f; f = f->next)
		n += f->cache.disk_hits;
	return n;
}

void blk_program_cache_stats(const BlkProgram *p, unsigned *compiles, unsigned *hits)
{
	unsigned c = 0, h = 0;
	bool ok = blk_handle_ok(p, BLK_TAG_PROGRAM, "blk_program_cache_stats");
	for (const BlkFunc *f = ok ? p->funcs : NULL; f; f = f->next) {
		c += f->cache.compiles;
		h += f->cache.hits;
	}
	if (compiles)
		*compiles = c;
	if (hits)
		*hits = h;
}

/* ---- kernels ----------------------------------------------------------- */

static void list_kernels(const BlkProgram *p, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (const BlkFunc *f = p->funcs; f && used < len; f = f->next) {
		int n = snprintf(buf + used, len - used, "%s'%s'", used ? ", " : "", f->kernel->name);
		used += n > 0 ? (size_t)n : 0;
	}
}

BlkFunc *blk_program_kernel(BlkProgram *p, const char *name)
{
	if (!blk_handle_ok(p, BLK_TAG_PROGRAM, "blk_program_kernel"))
		return NULL;
	BlkFunc *only = p->funcs && !p->funcs->next ? p->funcs : NULL;
	if (!name && only)
		return only;
	for (BlkFunc *f = p->funcs; name && f; f = f->next)
		if (strcmp(f->kernel->name, name) == 0)
			return f;
	char names[512];
	list_kernels(p, names, sizeof names);
	if (!name && !p->funcs)
		blk_rt_error(p->rt, "the program has no kernel: a .blk source holds `kernel NAME(...) { ... }`");
	else if (!name)
		blk_rt_error(p->rt, "the program has several kernels (%s): name one", names);
	else
		blk_rt_error(p->rt, "no kernel named '%s' in the program (it has %s)", name,
		             names[0] ? names : "none");
	return NULL;
}

const char *blk_func_name(const BlkFunc *f)
{
	return blk_rt_func_ok(f, "blk_func_name") ? f->kernel->name : "";
}

int blk_func_num_tensors(const BlkFunc *f)
{
	return blk_rt_func_ok(f, "blk_func_num_tensors") ? f->ntensors : -1;
}

bool blk_rt_func_ok(const BlkFunc *f, const char *what)
{
	return blk_handle_ok(f, BLK_TAG_FUNC, what) && blk_handle_ok(f->prog->rt, BLK_TAG_RUNTIME, what);
}

/* ---- checking ---------------------------------------------------------- */

/* The name of the param tensor i is passed for, for messages. */
static const char *tensor_param_name(const BlkKernel *k, int i)
{
	for (int p = 0; p < k->nparams; p++)
		if (k->params[p].access != BLK_ACCESS_SCRATCH && i-- == 0)
			return k->params[p].name;
	return "(extra)";
}

/* What tensor t's data pointer is aligned to, up to 16 bytes. */
static int data_align(const BlkTensor *t)
{
	int a = 16;
	while (a > 1 && (uintptr_t)t->data % (uintptr_t)a)
		a /= 2;
	return a;
}

static bool tensor_to_array(BlkRuntime *rt, const BlkKernel *k, int i, const BlkTensor *t,
                            BlkArrayDesc *a)
{
	const char *pn = tensor_param_name(k, i);
	if (t->dtype < 0 || t->dtype >= BLK_NUM_DTYPES)
		return blk_rt_error(rt, "launch of %s: tensor %d (%s): dtype %d is not a BLK_DTYPE_*",
		                    k->name, i, pn, t->dtype);
	if (t->rank < 0 || t->rank > BLK_MAX_RANK)
		return blk_rt_error(rt, "launch of %s: tensor %d (%s): rank %d is outside 0..%d", k->name,
		                    i, pn, t->rank, BLK_MAX_RANK);
	memset(a, 0, sizeof *a);
	a->dtype = (BlkDType)t->dtype;
	a->rank = t->rank;
	for (int d = 0; d < t->rank; d++) {
		if (t->shape[d] < 0)
			return blk_rt_error(rt, "launch of %s: tensor %d (%s): negative extent %lld in dim %d",
			                    k->name, i, pn, (long long)t->shape[d], d);
		a->shape[d] = t->shape[d];
		a->strides[d] = t->strides[d];
	}
	if (!t->data && blk_tensor_numel(t) > 0)
		return blk_rt_error(rt, "launch of %s: tensor %d (%s): data is NULL", k->name, i, pn);
	/* a slice may start anywhere: what the pointer is aligned to, up to the
	 * 16 bytes the code would use, is compiled in (a kernel per alignment) */
	a->align = data_align(t);
	return true;
}

typedef struct BindJob {
	const BlkKernel *k;
	const BlkArrayDesc *arrays;
	int n;
	int64_t *sizes;
	BlkDiag *d;
} BindJob;

static bool bind_job(void *arg)
{
	BindJob *j = arg;
	return blk_bind_sizes(j->k, j->arrays, j->n, j->sizes, j->d);
}

/* Array descriptors and bound sizes for a launch of f on t[n]; errors
 * (from blk_bind_sizes among others) become the runtime's error. */
bool blk_rt_bind(BlkFunc *f, const BlkTensor *t, int n, BlkArrayDesc *arrays, int64_t *sizes)
{
	BlkRuntime *rt = f->prog->rt;
	const BlkKernel *k = f->kernel;
	if (n != f->ntensors)
		return blk_rt_error(rt, "launch of %s: expected %d arrays, got %d", k->name, f->ntensors, n);
	if (n > 0 && !t)
		return blk_rt_error(rt, "launch of %s: tensors is NULL", k->name);
	for (int i = 0; i < n; i++)
		if (!tensor_to_array(rt, k, i, &t[i], &arrays[i]))
			return false;
	BlkArena *a = blk_arena_create();
	BlkCapture c;
	bool ok = blk_rt_capture_open(rt, &c, a);
	if (ok) {
		/* blk_bind_sizes's messages start "launch of KERNEL: ". */
		BindJob j = { k, arrays, n, sizes, c.d };
		char bug[600];
		ok = blk_guard(bind_job, &j, bug, sizeof bug) && !blk_diag_error_count(c.d);
		blk_rt_capture_close(rt, &c, !ok, NULL);
		if (bug[0])
			blk_rt_error(rt, "launch of %s: %s", k->name, bug);
		ok = ok && blk_rt_check_memory(rt, k, t, n);
	}
	blk_arena_destroy(a);
	return ok;
}

/* Scratch for one launch: arrays and sizes. */
typedef struct LaunchArgs {
	BlkArrayDesc *arrays;
	int64_t *sizes;
} LaunchArgs;

static bool args_alloc(BlkRuntime *rt, const BlkKernel *k, int n, LaunchArgs *la)
{
	*la = (LaunchArgs){ 0 }; /* args_free follows a refusal too */
	int want = 0;
	for (int p = 0; p < k->nparams; p++)
		want += k->params[p].access != BLK_ACCESS_SCRATCH;
	if (n != want) /* before sizing anything by n (INT_MAX was an out-of-memory) */
		return blk_rt_error(rt, "launch of %s: expected %d arrays, got %d", k->name, want, n);
	la->arrays = calloc((size_t)(n > 0 ? n : 1), sizeof *la->arrays);
	la->sizes = calloc((size_t)k->nsizes + 1, sizeof *la->sizes);
	if (!la->arrays || !la->sizes)
		return blk_rt_error(rt, "out of memory");
	return true;
}

static void args_free(LaunchArgs *la)
{
	free(la->arrays);
	free(la->sizes);
}

typedef struct CheckCall {
	BlkFunc *f;
	const BlkTensor *t;
	int n;
} CheckCall;

static bool check_call(void *arg)
{
	CheckCall *c = arg;
	LaunchArgs la = { 0 };
	bool ok = args_alloc(c->f->prog->rt, c->f->kernel, c->n, &la) &&
	          blk_rt_bind(c->f, c->t, c->n, la.arrays, la.sizes);
	args_free(&la);
	return ok;
}

bool blk_func_check(BlkFunc *f, const BlkTensor *tensors, int ntensors)
{
	CheckCall c = { f, tensors, ntensors };
	return blk_rt_func_ok(f, "blk_func_check") &&
	       blk_rt_guard(f->prog->rt, f->kernel->name, check_call, &c);
}

/* ---- specialization ---------------------------------------------------- */

typedef struct LowerJob {
	BlkArena *a;
	BlkDiag *d;
	const BlkKernel *k;
	const LaunchArgs *la;
	const BlkLowerOptions *opt;
	BlkCompiled *out;
} LowerJob;

static bool lower_job(void *arg)
{
	LowerJob *j = arg;
	return blk_lower_kernel(j->a, j->d, j->k, j->la->sizes, j->la->arrays, j->opt, j->out);
}

/* The kernel to lower for this launch: f's, or with `auto` parameters the
 * one the cost model chose (compiled into a; its values in *config). */
typedef struct ChooseJob {
	BlkFunc *f;
	const LaunchArgs *la;
	BlkArena *a;
	BlkDiag *d;
	const BlkKernel *k;   /* out */
	const char *config;   /* out */
} ChooseJob;

static bool choose_job(void *arg)
{
	ChooseJob *j = arg;
	BlkRuntime *rt = j->f->prog->rt;
	const BlkKernel *k = j->f->kernel;
	BlkLowerOptions opt = {.arch = rt->arch, .num_sms = rt->sms};
	BlkAutoChoice ch;
	BlkModule *m = blk_auto_choose(j->a, j->d, k->loc.src, j->f->prog->defines,
	                               j->f->prog->ndefines, k, j->la->sizes, j->la->arrays, &opt, &ch);
	for (const BlkKernel *c = m ? m->first : NULL; c; c = c->next)
		if (strcmp(c->name, k->name) == 0)
			j->k = c;
	j->config = blk_arena_strdup(j->a, ch.text);
	return j->k != NULL;
}

static const BlkKernel *kernel_for(BlkFunc *f, const LaunchArgs *la, BlkArena *a, BlkDiag *d,
                                   const char **config, char *bug, size_t buglen)
{
	*config = "";
	if (!f->has_auto)
		return f->kernel;
	ChooseJob j = { f, la, a, d, NULL, "" };
	bool ok = blk_guard(choose_job, &j, bug, buglen) && !blk_diag_error_count(d);
	*config = j.config;
	return ok ? j.k : NULL;
}

/* The specialization from the disk cache, else compiled (under blk_guard:
 * a compiler bug is the runtime's error, in *bug) and stored. */
static bool lower_or_load(BlkFunc *f, const LaunchArgs *la, const char *key, BlkArena *a,
                          BlkDiag *d, BlkCompiled *out, const char **config, char *bug,
                          size_t buglen)
{
	BlkRuntime *rt = f->prog->rt;
	const BlkKernel *kernel = kernel_for(f, la, a, d, config, bug, buglen);
	if (!kernel)
		return false;
	/* the disk key names the chosen values: a later model may choose others */
	char *akey = f->has_auto ? blk_arena_printf(a, "%s auto %s", key, *config) : NULL;
	size_t klen = 0;
	char *dkey = rt->cache_dir ? blk_disk_key(rt, f->prog, akey ? akey : key, &klen) : NULL;
	if (dkey && blk_disk_load(rt, dkey, klen, f->kernel, a, out)) {
		f->cache.disk_hits++;
		free(dkey);
		return true;
	}
	BlkLowerOptions opt = {.arch = rt->arch, .num_sms = rt->sms};
	BlkDump dump;
	bool dumping = blk_dump_begin(&dump, f->kernel->name, key, &opt);
	memset(out, 0, sizeof *out);
	LowerJob j = { a, d, kernel, la, &opt, out };
	bool ok = blk_guard(lower_job, &j, bug, buglen) && !blk_diag_error_count(d) && out->ptx &&
	          out->entry;
	if (dumping)
		blk_dump_end(&dump, out, ok);
	if (ok)
		f->cache.compiles++;
	if (ok && dkey)
		blk_disk_store(rt, dkey, klen, f->kernel, out);
	free(dkey);
	return ok;
}

static BlkCacheEntry *compile(BlkFunc *f, const LaunchArgs *la, char *key)
{
	BlkRuntime *rt = f->prog->rt;
	BlkArena *a = blk_arena_create();
	BlkCapture c;
	if (!blk_rt_capture_open(rt, &c, a)) {
		blk_arena_destroy(a);
		free(key);
		return NULL;
	}
	BlkCompiled out;
	char bug[600] = "";
	const char *config = "";
	bool ok = lower_or_load(f, la, key, a, c.d, &out, &config, bug, sizeof bug);
	char what[256];
	snprintf(what, sizeof what, "compiling '%s' for %s", f->kernel->name, rt->arch);
	blk_rt_capture_close(rt, &c, !ok, what);
	if (bug[0])
		blk_rt_error(rt, "%s: %s", what, bug);
	BlkCacheEntry *e = ok ? blk_cache_insert(&f->cache, key, a, &out) : NULL;
	if (e)
		e->config = config;
	if (!e) {
		if (ok)
			blk_rt_error(rt, "out of memory");
		blk_arena_destroy(a);
		free(key);
	}
	return e;
}

/* The launch's class (ir.h blk_dynamic_class) into f->spec_*; the cache
 * key of a kernel with dynamic sizes is the class's, sizes included. */
static char *class_key(BlkFunc *f, const LaunchArgs *la, int n)
{
	const BlkKernel *k = f->kernel;
	BlkRuntime *rt = f->prog->rt;
	size_t ns = (size_t)k->nsizes + 1;
	memcpy(f->spec_sizes, la->sizes, sizeof *la->sizes * (size_t)k->nsizes);
	if (!blk_dynamic_class(k, la->sizes, la->arrays, n, f->spec_csizes, f->spec_carrays))
		return blk_cache_key(k->name, rt->arch, la->arrays, n);
	char *key = blk_cache_key(k->name, rt->arch, f->spec_carrays, n);
	size_t len = key ? strlen(key) : 0, cap = len + 24 * ns + 8;
	char *full = key ? realloc(key, cap) : NULL;
	if (!full) {
		free(key);
		return NULL;
	}
	len += (size_t)snprintf(full + len, cap - len, " sizes");
	for (int i = 0; i < k->nsizes; i++)
		len += (size_t)snprintf(full + len, cap - len, " %lld", (long long)f->spec_csizes[i]);
	return full;
}

/* The cached specialization for these tensors, compiled on a miss. */
static BlkCacheEntry *specialize(BlkFunc *f, const BlkTensor *t, int n, bool *cached)
{
	BlkRuntime *rt = f->prog->rt;
	LaunchArgs la;
	BlkCacheEntry *e = NULL;
	if (args_alloc(rt, f->kernel, n, &la) && blk_rt_bind(f, t, n, la.arrays, la.sizes)) {
		char *key = class_key(f, &la, n);
		e = key ? blk_cache_find(&f->cache, key) : NULL;
		*cached = e != NULL;
		if (e) {
			f->cache.hits++;
			free(key);
		} else if (key) {
			unsigned disk_hits = f->cache.disk_hits;
			e = compile(f, &la, key);
			*cached = e && f->cache.disk_hits != disk_hits; /* read from the disk cache */
		} else {
			blk_rt_error(rt, "out of memory");
		}
	}
	args_free(&la);
	return e;
}

/* specialize() under a guard (see load_guarded). */
typedef struct SpecCall {
	BlkFunc *f;
	const BlkTensor *t;
	int n;
	bool cached;
	BlkCacheEntry *e;
} SpecCall;

static bool spec_call(void *arg)
{
	SpecCall *s = arg;
	s->e = specialize(s->f, s->t, s->n, &s->cached);
	return s->e != NULL;
}

static BlkCacheEntry *specialize_guarded(BlkFunc *f, const BlkTensor *t, int n, bool *cached)
{
	SpecCall s = { f, t, n, false, NULL };
	blk_rt_guard(f->prog->rt, f->kernel->name, spec_call, &s);
	*cached = s.cached;
	return s.e;
}

static void fill_info(const BlkFunc *f, const BlkCacheEntry *e, bool cached, BlkCompiledInfo *info)
{
	const BlkRuntime *rt = f->prog->rt;
	if (!info)
		return;
	info->entry = e->compiled.entry;
	info->ptx = e->compiled.ptx;
	info->arch = rt->arch;
	info->threads = (unsigned)e->compiled.launch->threads;
	info->smem_bytes = (size_t)e->compiled.launch->smem;
	/* the grid these tensors launch (a dynamic one: from their sizes) */
	BlkSymEnv env = { f->kernel->nsizes, f->kernel->sizes, f->spec_sizes };
	if (!blk_launch_grid(e->compiled.launch, &env, info->grid))
		memset(info->grid, 0, sizeof info->grid);
	info->cached = cached;
	info->jit_log = e->jit_log;
	info->config = e->config ? e->config : "";
}

bool blk_func_compile(BlkFunc *f, const BlkTensor *tensors, int ntensors, BlkCompiledInfo *info)
{
	bool cached = false;
	if (!blk_rt_func_ok(f, "blk_func_compile"))
		return false;
	BlkCacheEntry *e = specialize_guarded(f, tensors, ntensors, &cached);
	if (e)
		fill_info(f, e, cached, info);
	return e != NULL;
}

/* ---- the search space ---------------------------------------------------- */

typedef struct SearchCall {
	BlkFunc *f;
	const BlkTensor *t;
	int n;
	const char **configs;
	int max;
	BlkDiag *d;
	int got;     /* out */
} SearchCall;

static bool search_call(void *arg)
{
	SearchCall *c = arg;
	BlkProgram *p = c->f->prog;
	const BlkKernel *k = c->f->kernel;
	BlkLowerOptions opt = {.arch = p->rt->arch, .num_sms = p->rt->sms};
	BlkAutoSpace sp;
	LaunchArgs la = { 0 };
	BlkAutoPoint *pts = calloc((size_t)c->max, sizeof *pts);
	bool ok = pts && args_alloc(p->rt, k, c->n, &la) && blk_rt_bind(c->f, c->t, c->n, la.arrays, la.sizes);
	c->got = 0;
	if (ok && blk_auto_space(k, true, p->defines, p->ndefines, &sp)) {
		c->got = blk_auto_rank(k->loc.src, p->defines, p->ndefines, k, &sp, la.sizes, la.arrays,
		                       &opt, c->d, pts, c->max, NULL);
		for (int i = 0; i < c->got; i++) {
			char buf[256];
			blk_auto_point_text(&sp, &pts[i], buf, sizeof buf);
			c->configs[i] = blk_arena_strdup(p->arena, buf);
		}
		ok = c->got > 0;
	}
	if (!pts)
		blk_rt_error(p->rt, "out of memory");
	args_free(&la);
	free(pts);
	return ok;
}

int blk_func_search(BlkFunc *f, const BlkTensor *tensors, int ntensors, const char **configs, int max)
{
	if (!blk_rt_func_ok(f, "blk_func_search"))
		return -1;
	BlkRuntime *rt = f->prog->rt;
	if (!configs) {
		blk_rt_error(rt, "blk_func_search: configs is NULL");
		return -1;
	}
	if (max < 1) {
		blk_rt_error(rt, "blk_func_search: max is %d; it is the number of configurations wanted, 1 or more",
		             max);
		return -1;
	}
	BlkArena *a = blk_arena_create();
	BlkCapture cap;
	if (!blk_rt_capture_open(rt, &cap, a)) {
		blk_arena_destroy(a);
		return -1;
	}
	SearchCall c = { f, tensors, ntensors, configs, max, cap.d, 0 };
	bool ok = blk_rt_guard(rt, f->kernel->name, search_call, &c);
	blk_rt_capture_close(rt, &cap, !ok && blk_diag_error_count(cap.d) > 0, NULL);
	blk_arena_destroy(a);
	return ok ? c.got : -1;
}

/* ---- loading and launching --------------------------------------------- */

enum { JIT_LOG_BYTES = 16384, STATIC_SMEM_LIMIT = 48 * 1024 };

static bool load_module(BlkRuntime *rt, BlkCacheEntry *e)
{
	char *info = calloc(1, JIT_LOG_BYTES), *error = calloc(1, JIT_LOG_BYTES);
	if (!info || !error) {
		free(info);
		free(error);
		return blk_rt_error(rt, "out of memory");
	}
	CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
	                       CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
	                       CU_JIT_LOG_VERBOSE};
	void *vals[] = {info, (void *)(uintptr_t)JIT_LOG_BYTES, error,
	                (void *)(uintptr_t)JIT_LOG_BYTES, (void *)(uintptr_t)1};
	CUresult r = rt->drv->cuModuleLoadDataEx(&e->module, e->compiled.ptx,
	                                         sizeof opts / sizeof opts[0], opts, vals);
	if (r != CUDA_SUCCESS) {
		char head[512];
		blk_driver_format(rt->drv, r, "cuModuleLoadDataEx", head, sizeof head);
		e->module = NULL;
		blk_rt_error(rt, "%s\nJIT error log for '%s':\n%s", head, e->compiled.entry,
		             error[0] ? error : "(empty)");
	} else {
		e->jit_log = info;
		info = NULL;
	}
	free(info);
	free(error);
	return r == CUDA_SUCCESS;
}

/* Module, function, and the opt-in for dynamic shared memory over 48 KB. */
static bool load_entry(BlkRuntime *rt, BlkCacheEntry *e)
{
	if (e->fn)
		return true;
	size_t smem = (size_t)e->compiled.launch->smem;
	if (smem > (size_t)rt->smem_optin)
		return blk_rt_error(rt, "kernel '%s' needs %zu bytes of shared memory; this GPU allows %d",
		                    e->compiled.entry, smem, rt->smem_optin);
	if (!e->module && !load_module(rt, e))
		return false;
	CUfunction fn = NULL;
	if (!blk_rt_check(rt, rt->drv->cuModuleGetFunction(&fn, e->module, e->compiled.entry),
	                  "cuModuleGetFunction"))
		return false;
	if (smem > STATIC_SMEM_LIMIT &&
	    !blk_rt_check(rt, rt->drv->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
	                                                  (int)smem), "cuFuncSetAttribute"))
		return false;
	e->fn = fn;
	return true;
}

static bool check_threads(BlkRuntime *rt, const BlkCompiled *c)
{
	int n = c->launch->threads;
	if (n <= 0 || n > 1024)
		return blk_rt_error(rt, "kernel '%s': %d threads per CTA is outside 1..1024", c->entry, n);
	return true;
}

/* Tensor map g (ir.h BlkLaunchArg) over array x: 2-D to 5-D, boxes of
 * box[0] along the last dim and box[1] along dim g->rows (rank - 2 but for
 * a block squeezing the dims between), one deep along every other dim,
 * innermost dim first (the last; the second-last for a `trans` map, the
 * array a transposed view that the kernel was compiled for), zeros out of
 * bounds. */
static bool encode_tmap(BlkRuntime *rt, const BlkCompiled *c, const BlkLaunchArg *g, const BlkTensor *x,
                        CUtensorMap *map)
{
	if (x->rank < 2 || x->rank > 5 || (g->trans && x->rank > 3) || g->rows < 0 || g->rows > x->rank - 2)
		return blk_rt_error(rt, "kernel '%s': a tensor map over an array of rank %d", c->entry, x->rank);
	int es = blk_tensor_elem_size(x->dtype), R = x->rank;
	CUtensorMapDataType dt = x->dtype == BLK_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	                         : x->dtype == BLK_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
	                         : es == 1                   ? CU_TENSOR_MAP_DATA_TYPE_UINT8 /* bytes as they are */
	                                                     : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	CUtensorMapSwizzle sw = g->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
	                        : g->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
	cuuint64_t dims[5], strides[4];
	cuuint32_t box[5], one[5] = { 1, 1, 1, 1, 1 };
	for (int d = 0; d < R; d++) { /* an empty dim (nothing is read) still needs a valid map */
		int ad = g->trans && d < 2 ? R - 2 + d : R - 1 - d; /* the array's dim */
		dims[d] = x->shape[ad] > 0 ? (cuuint64_t)x->shape[ad] : 1;
		box[d] = d == 0 ? (cuuint32_t)g->box[0] : (g->trans ? d == 1 : ad == g->rows) ? (cuuint32_t)g->box[1] : 1;
		if (d > 0)
			strides[d - 1] = (x->strides[ad] > 0 ? (cuuint64_t)x->strides[ad]
			                  : d == 1 ? dims[0] : strides[d - 2] / (cuuint64_t)es * dims[d - 1]) *
			                 (cuuint64_t)es;
	}
	return blk_rt_check(rt, rt->drv->cuTensorMapEncodeTiled(map, dt, (cuuint32_t)R, x->data, dims, strides, box,
	                                                        one, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
	                                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
	                                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
	                    "cuTensorMapEncodeTiled");
}

/* The kernel's arguments, as its launch header lists them: t[i] is array
 * param i's tensor; each argument's value is written to vals[j] (8 bytes
 * a scalar, one CUtensorMap a map) and args[j] points at it. */
typedef union ArgVal {
	CUdeviceptr ptr;
	int32_t size;
	int64_t stride;
	CUtensorMap map;
} ArgVal;

static bool pack_arg(BlkRuntime *rt, const BlkFunc *f, const BlkCompiled *c, const BlkLaunchArg *g,
                     const BlkTensor *t, const int64_t *sizes, ArgVal *v)
{
	const BlkKernel *k = f->kernel;
	const BlkTensor *x = g->kind == BLK_ARG_SIZE || g->kind >= BLK_ARG_RANK ? NULL
	                     : &t[blk_kernel_array_index(k, g->param)];
	switch (g->kind) {
	case BLK_ARG_PEERS:
		v->ptr = (CUdeviceptr)(uintptr_t)x->peers;
		return x->peers ? true : blk_rt_error(rt, "kernel '%s': symmetric parameter '%s' needs its peers "
		                                      "(BlkTensor.peers: a device array of every rank's address "
		                                      "of the buffer)", k->name, k->params[g->param].name);
	case BLK_ARG_RANK: v->size = rt->rank; return true;
	case BLK_ARG_WORLD: v->size = rt->world; return true;
	case BLK_ARG_TIMEOUT: v->stride = rt->signal_timeout_ns; return true;
	case BLK_ARG_PTR: v->ptr = (CUdeviceptr)(uintptr_t)x->data; return true;
	case BLK_ARG_TMAP: return encode_tmap(rt, c, g, x, &v->map);
	case BLK_ARG_STRIDE: v->stride = x->strides[g->dim]; return true;
	case BLK_ARG_SIZE:
		for (int i = 0; i < k->nsizes; i++)
			if (strcmp(k->sizes[i], g->size) == 0) {
				v->size = (int32_t)sizes[i];
				return true;
			}
		return blk_rt_error(rt, "kernel '%s': its launch takes a size %s it does not have", c->entry, g->size);
	}
	return false;
}

static bool enqueue(BlkRuntime *rt, const BlkFunc *f, const BlkCacheEntry *e, const BlkTensor *t,
                    BlkStream s, const int64_t *sizes)
{
	const BlkCompiled *c = &e->compiled;
	const BlkLaunch *l = c->launch;
	BlkSymEnv env = { f->kernel->nsizes, f->kernel->sizes, sizes };
	unsigned grid[3];
	if (!blk_launch_grid(l, &env, grid))
		return blk_rt_error(rt, "launch of %s: its grid exceeds CUDA's limits at these sizes", f->kernel->name);
	if (!grid[0] || !grid[1] || !grid[2])
		return true; /* an empty grid (a zero size) has nothing to do */
	/* (a CUtensorMap is 64-byte aligned, as the driver encodes it) */
	ArgVal *vals = aligned_alloc(_Alignof(ArgVal), sizeof *vals * ((size_t)l->nargs + 1));
	void **args = calloc((size_t)l->nargs + 1, sizeof *args);
	bool ok = vals && args ? true : blk_rt_error(rt, "out of memory");
	for (int j = 0; ok && j < l->nargs; j++) {
		args[j] = &vals[j];
		ok = pack_arg(rt, f, c, &l->args[j], t, sizes, &vals[j]);
	}
	if (ok && l->cluster > 1) { /* CTAs in clusters along x (TMA multicast between them) */
		CUlaunchAttribute at = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
		at.value.clusterDim.x = (unsigned)l->cluster, at.value.clusterDim.y = at.value.clusterDim.z = 1;
		CUlaunchConfig cfg = { .gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
		                       .blockDimX = (unsigned)l->threads, .blockDimY = 1, .blockDimZ = 1,
		                       .sharedMemBytes = (unsigned)l->smem, .hStream = (CUstream)s,
		                       .attrs = &at, .numAttrs = 1 };
		ok = blk_rt_check(rt, rt->drv->cuLaunchKernelEx(&cfg, e->fn, args, NULL), "cuLaunchKernelEx");
	} else if (ok)
		ok = blk_rt_check(rt, rt->drv->cuLaunchKernel(e->fn, grid[0], grid[1], grid[2], (unsigned)l->threads, 1, 1,
		                                              (unsigned)l->smem, (CUstream)s, args, NULL),
		                  "cuLaunchKernel");
	free(vals);
	free(args);
	return ok;
}

/* f's last specialization, if t[n] have its tensors' layouts (and pass
 * the per-launch checks: pointers change from launch to launch). */
static BlkCacheEntry *same_as_last(BlkFunc *f, const BlkTensor *t, int n)
{
	if (!f->last || n != f->ntensors || (n > 0 && !t))
		return NULL;
	for (int i = 0; i < n; i++) {
		const BlkArrayDesc *a = &f->last_arrays[i];
		if ((int)a->dtype != t[i].dtype || a->rank != t[i].rank || a->align != data_align(&t[i]) ||
		    (!t[i].data && blk_tensor_numel(&t[i]) > 0))
			return NULL;
		for (int d = 0; d < a->rank; d++)
			if (a->shape[d] != t[i].shape[d] || a->strides[d] != t[i].strides[d])
				return NULL;
	}
	return blk_rt_check_memory(f->prog->rt, f->kernel, t, n) ? f->last : NULL;
}

static void remember(BlkFunc *f, BlkCacheEntry *e, const BlkTensor *t, int n)
{
	size_t ns = (size_t)f->kernel->nsizes + 1, na = (size_t)(n > 0 ? n : 1);
	if (!f->last_arrays)
		f->last_arrays = calloc(na, sizeof *f->last_arrays);
	if (!f->last_arrays || n != f->ntensors) {
		f->last = NULL;
		return;
	}
	memcpy(f->last_sizes, f->spec_sizes, ns * sizeof *f->last_sizes);
	for (int i = 0; i < n; i++) {
		BlkArrayDesc *a = &f->last_arrays[i];
		memset(a, 0, sizeof *a);
		a->dtype = (BlkDType)t[i].dtype;
		a->rank = t[i].rank;
		for (int d = 0; d < t[i].rank && d < BLK_MAX_RANK; d++)
			a->shape[d] = t[i].shape[d], a->strides[d] = t[i].strides[d];
		a->align = data_align(&t[i]);
	}
	f->last = e;
}

bool blk_launch(BlkFunc *f, const BlkTensor *tensors, int ntensors, BlkStream stream)
{
	if (!blk_rt_func_ok(f, "blk_launch"))
		return false;
	BlkRuntime *rt = f->prog->rt;
	bool cached = false;
	BlkCacheEntry *e = same_as_last(f, tensors, ntensors);
	const int64_t *sizes = f->last_sizes;
	if (e)
		f->cache.hits++;
	else {
		e = specialize_guarded(f, tensors, ntensors, &cached);
		sizes = f->spec_sizes;
		if (e)
			remember(f, e, tensors, ntensors);
	}
	if (!e || !blk_rt_enter(rt, "blk_launch") || !check_threads(rt, &e->compiled) ||
	    !load_entry(rt, e))
		return false;
	return enqueue(rt, f, e, tensors, stream, sizes);
}
