/* arena.c - chunked bump allocator.  Large requests get a chunk of their own. */
#include "arena.h"
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK_SIZE = 64 * 1024, ALIGN = 16 };

typedef struct Chunk {
	struct Chunk *next;
	size_t cap, used;
	_Alignas(16) unsigned char data[];
} Chunk;

struct BlkArena {
	Chunk *head;
	size_t total;
};

BlkArena *blk_arena_create(void)
{
	BlkArena *a = calloc(1, sizeof *a);
	if (!a)
		blk_die("out of memory");
	return a;
}

void blk_arena_destroy(BlkArena *a)
{
	if (!a)
		return;
	for (Chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

static Chunk *new_chunk(BlkArena *a, size_t cap)
{
	Chunk *c = malloc(sizeof *c + cap);
	if (!c)
		blk_die("out of memory (arena chunk of %zu bytes)", cap);
	c->cap = cap;
	c->used = 0;
	c->next = a->head;
	a->head = c;
	return c;
}

void *blk_arena_alloc(BlkArena *a, size_t size)
{
	size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (size == 0)
		size = ALIGN;
	Chunk *c = a->head;
	if (!c || c->cap - c->used < size) {
		/* Oversized requests get their own chunk behind the current one,
		 * so the current chunk's free tail stays usable. */
		if (size > CHUNK_SIZE / 4 && c) {
			Chunk *big = new_chunk(a, size);
			a->head = big->next;
			big->next = a->head->next;
			a->head->next = big;
			c = big;
		} else {
			c = new_chunk(a, size > CHUNK_SIZE ? size : CHUNK_SIZE);
		}
	}
	void *p = c->data + c->used;
	c->used += size;
	a->total += size;
	memset(p, 0, size);
	return p;
}

char *blk_arena_strndup(BlkArena *a, const char *s, size_t n)
{
	char *p = blk_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *blk_arena_strdup(BlkArena *a, const char *s)
{
	return blk_arena_strndup(a, s, strlen(s));
}

FILE *blk_arena_stream_open(BlkArenaStream *s)
{
	s->buf = NULL;
	s->len = 0;
	s->f = open_memstream(&s->buf, &s->len);
	if (!s->f)
		blk_die("open_memstream failed");
	return s->f;
}

char *blk_arena_stream_close(BlkArenaStream *s, BlkArena *a)
{
	fclose(s->f);
	char *r = blk_arena_strndup(a, s->buf, s->len);
	free(s->buf);
	return r;
}

char *blk_arena_printf(BlkArena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		blk_die("bad format string");
	char *p = blk_arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void *blk_arena_grow(BlkArena *a, void *old, size_t n, size_t new_n, size_t elem)
{
	void *p = blk_arena_alloc(a, new_n * elem);
	if (n && old)
		memcpy(p, old, n * elem);
	return p;
}

size_t blk_arena_used(const BlkArena *a)
{
	return a->total;
}
