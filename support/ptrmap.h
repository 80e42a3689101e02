/* ptrmap.h - a pointer -> pointer hash map (open addressing, linear
 * probing), the one map keyed by pointers that every stage uses: the
 * checker's notes per AST node, the verifier's visible values, the
 * interpreter's value -> slot, lower/'s values to values and layouts.
 *
 * Keys are borrowed and never NULL.  A value stored as NULL reads back
 * like an absent key, so a map of small integers stores them offset by
 * one (or as states where 0 means absent).  The table grows from the
 * arena passed to blk_pmap_put and is freed with it; a map filled with a
 * NULL arena lives in malloc'd memory instead (for a table that is
 * rebuilt often on a long-lived arena) and is released by blk_pmap_free.
 * Nothing iterates a map: the order of its slots is no one's business.
 */
#ifndef BLK_PTRMAP_H
#define BLK_PTRMAP_H

#include <stddef.h>

#include "arena.h"

typedef struct BlkPtrMap {
	size_t cap, n;
	const void **keys;
	void **vals;
} BlkPtrMap;

/* m[k] = v.  a: where the table grows (NULL: malloc, see above; one map
 * always uses the same). */
void blk_pmap_put(BlkArena *a, BlkPtrMap *m, const void *k, void *v);
/* m[k], or NULL if k was never put. */
void *blk_pmap_get(const BlkPtrMap *m, const void *k);
/* Frees the table of a map filled with a NULL arena; m is empty after. */
void blk_pmap_free(BlkPtrMap *m);

#endif
