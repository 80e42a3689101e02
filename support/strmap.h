/* strmap.h - a small string-keyed hash map for the IR printer and parser.
 *
 * Keys are borrowed (they must outlive the map); the table itself is
 * malloc'd because it lives only as long as one print or parse.
 */
#ifndef BLK_STRMAP_H
#define BLK_STRMAP_H

#include <stdlib.h>
#include <string.h>

#include "diag.h"

typedef struct BlkStrMap {
	size_t cap, n;
	const char **keys;
	void **vals;
} BlkStrMap;

static inline size_t blk_strmap_hash(const char *s)
{
	size_t h = 14695981039346656037u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static inline void blk_strmap_free(BlkStrMap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* The slot holding key, or the empty slot where it would go. */
static inline size_t blk_strmap_slot(const BlkStrMap *m, const char *key)
{
	size_t i = blk_strmap_hash(key) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static inline void *blk_strmap_get(const BlkStrMap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	size_t i = blk_strmap_slot(m, key);
	return m->keys[i] ? m->vals[i] : NULL;
}

static inline void blk_strmap_put(BlkStrMap *m, const char *key, void *val);

static inline void blk_strmap_rehash(BlkStrMap *m)
{
	BlkStrMap old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->n = 0;
	m->keys = calloc(m->cap, sizeof *m->keys);
	m->vals = calloc(m->cap, sizeof *m->vals);
	if (!m->keys || !m->vals)
		blk_die("out of memory");
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			blk_strmap_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
}

static inline void blk_strmap_put(BlkStrMap *m, const char *key, void *val)
{
	if ((m->n + 1) * 2 > m->cap)
		blk_strmap_rehash(m);
	size_t i = blk_strmap_slot(m, key);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
}

#endif
