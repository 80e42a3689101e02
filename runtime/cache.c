/* cache.c - the compile cache: one entry per specialization of a kernel.
 *
 * blk_lower_kernel specializes on every size, stride and dtype, so the key
 * holds all of them (in text: readable in a debugger and trivially exact),
 * plus the kernel and the target arch.  Data pointers are not part of it:
 * the same specialization serves any buffers of that layout.
 */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends printf output to a growing malloc'ed string. */
typedef struct KeyBuf {
	char *s;
	size_t len, cap;
	bool failed;
} KeyBuf;

static void __attribute__((format(printf, 2, 3))) key_add(KeyBuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->failed || n < 0)
		return;
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->failed = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static const char *dtype_name(BlkDType t)
{
	static const char *const names[] = {
#define X(e, n, b) n,
		BLK_DTYPES(X)
#undef X
	};
	return (unsigned)t < BLK_NUM_DTYPES ? names[t] : "?";
}

/* "matmul@sm_90a(f32[256,64:64,1], ...)": dtype, shape, then strides (and
 * "@8" for data aligned to fewer than 16 bytes). */
char *blk_cache_key(const char *kernel, const char *arch, const BlkArrayDesc *arrays, int n)
{
	KeyBuf b = {0};
	key_add(&b, "%s@%s(", kernel, arch);
	for (int i = 0; i < n; i++) {
		const BlkArrayDesc *a = &arrays[i];
		key_add(&b, "%s%s[", i ? "," : "", dtype_name(a->dtype));
		for (int d = 0; d < a->rank; d++)
			key_add(&b, "%s%lld", d ? "," : "", (long long)a->shape[d]);
		key_add(&b, ":");
		for (int d = 0; d < a->rank; d++)
			key_add(&b, "%s%lld", d ? "," : "", (long long)a->strides[d]);
		if (a->align > 0 && a->align < 16) /* data not 16-byte aligned */
			key_add(&b, "@%d", a->align);
		key_add(&b, "]");
	}
	key_add(&b, ")");
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* FNV-1a: only to skip most string compares. */
uint64_t blk_cache_hash(const char *key)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

BlkCacheEntry *blk_cache_find(BlkCache *c, const char *key)
{
	uint64_t h = blk_cache_hash(key);
	for (BlkCacheEntry *e = c->first; e; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

BlkCacheEntry *blk_cache_insert(BlkCache *c, char *key, BlkArena *arena,
                                const BlkCompiled *compiled)
{
	BlkCacheEntry *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->key = key;
	e->hash = blk_cache_hash(key);
	e->arena = arena;
	e->compiled = *compiled;
	e->next = c->first;
	c->first = e;
	return e;
}

void blk_cache_clear(BlkCache *c, const BlkDriver *drv)
{
	BlkCacheEntry *next;
	for (BlkCacheEntry *e = c->first; e; e = next) {
		next = e->next;
		if (drv && e->module)
			drv->cuModuleUnload(e->module);
		blk_arena_destroy(e->arena);
		free(e->jit_log);
		free(e->key);
		free(e);
	}
	c->first = NULL;
}
