/* arena.h - one bump allocator per compilation, freed at once.
 *
 * Everything a compilation makes (tokens, AST, IR, symbolic sizes, strings)
 * lives in one BlkArena; blk_arena_destroy frees it all.  Allocation never
 * fails: running out of memory is fatal (blk_die).
 */
#ifndef BLK_ARENA_H
#define BLK_ARENA_H

#include <stddef.h>
#include <stdio.h>

typedef struct BlkArena BlkArena;

BlkArena *blk_arena_create(void);
void blk_arena_destroy(BlkArena *a); /* accepts NULL */

/* Zeroed memory aligned to 16 bytes. */
void *blk_arena_alloc(BlkArena *a, size_t size);
/* Copy of s[0..n) with a terminating NUL. */
char *blk_arena_strndup(BlkArena *a, const char *s, size_t n);
char *blk_arena_strdup(BlkArena *a, const char *s);
char *blk_arena_printf(BlkArena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Text printed by a FILE * printer (blk_type_print, blk_sym_print, ...) as an
 * arena string:
 *     BlkArenaStream s;
 *     blk_type_print(blk_arena_stream_open(&s), t);
 *     return blk_arena_stream_close(&s, a);  */
typedef struct BlkArenaStream {
	FILE *f;
	char *buf;
	size_t len;
} BlkArenaStream;
FILE *blk_arena_stream_open(BlkArenaStream *s);
char *blk_arena_stream_close(BlkArenaStream *s, BlkArena *a);
/* Grow an arena array: returns a new block of new_n elements holding the old
 * n elements (the old block is abandoned to the arena). */
void *blk_arena_grow(BlkArena *a, void *old, size_t n, size_t new_n,
                     size_t elem);
/* Bytes handed out so far (for reports and tests). */
size_t blk_arena_used(const BlkArena *a);

#define BLK_NEW(arena, T) ((T *)blk_arena_alloc((arena), sizeof(T)))
#define BLK_NEW_N(arena, T, n) ((T *)blk_arena_alloc((arena), sizeof(T) * (size_t)(n)))

#endif
