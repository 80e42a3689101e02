/* ptrmap.c - the pointer -> pointer hash map (ptrmap.h). */
#include "ptrmap.h"
#include "diag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t pmap_hash(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static void *table(BlkArena *a, size_t n, size_t size)
{
	if (a)
		return blk_arena_alloc(a, n * size);
	void *p = calloc(n, size);
	if (!p)
		blk_die("out of memory");
	return p;
}

static void pmap_grow(BlkArena *a, BlkPtrMap *m)
{
	BlkPtrMap old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->n = 0;
	m->keys = table(a, m->cap, sizeof *m->keys);
	m->vals = table(a, m->cap, sizeof *m->vals);
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			blk_pmap_put(a, m, old.keys[i], old.vals[i]);
	if (!a)
		blk_pmap_free(&old);
}

void blk_pmap_put(BlkArena *a, BlkPtrMap *m, const void *k, void *v)
{
	if ((m->n + 1) * 2 > m->cap)
		pmap_grow(a, m);
	size_t h = pmap_hash(k, m->cap);
	while (m->keys[h] && m->keys[h] != k)
		h = (h + 1) & (m->cap - 1);
	if (!m->keys[h])
		m->n++;
	m->keys[h] = k;
	m->vals[h] = v;
}

void *blk_pmap_get(const BlkPtrMap *m, const void *k)
{
	if (!m->cap)
		return NULL;
	for (size_t h = pmap_hash(k, m->cap); m->keys[h]; h = (h + 1) & (m->cap - 1))
		if (m->keys[h] == k)
			return m->vals[h];
	return NULL;
}

void blk_pmap_free(BlkPtrMap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}
