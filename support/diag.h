/* diag.h - source locations and diagnostics.
 *
 * User errors (a bad .blk file, a bad launch) are reported through a BlkDiag:
 *     file:line:col: error: message
 *         the source line
 *              ^
 * and compilation goes on where that is sensible, so one run shows several
 * errors.  Internal bugs take the other path, blk_die: in a tool it aborts;
 * under blk_guard (what libblk's entry points run the compiler in) it
 * unwinds to the guard, which returns the message, so the library never
 * takes its host down.
 */
#ifndef BLK_DIAG_H
#define BLK_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "arena.h"

/* A file's text; locations point into it to print the offending line. */
typedef struct BlkSource {
	const char *name; /* as given on the command line, or "<string>" */
	const char *text; /* NUL-terminated copy (NULs inside are allowed) */
	size_t len;
} BlkSource;

/* line and col count from 1; line 0 means "no location". */
typedef struct BlkLoc {
	const BlkSource *src;
	unsigned line, col;
} BlkLoc;

typedef enum { BLK_SEV_ERROR, BLK_SEV_WARNING, BLK_SEV_NOTE } BlkSeverity;

typedef struct BlkDiag BlkDiag;

/* out: where messages go (stderr in tools, a memstream in tests); max_errors:
 * after that many errors further errors are counted but not printed (0 = 20). */
BlkDiag *blk_diag_create(BlkArena *a, FILE *out, int max_errors);
void blk_error(BlkDiag *d, BlkLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void blk_warning(BlkDiag *d, BlkLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A note attaches to the error before it. */
void blk_note(BlkDiag *d, BlkLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* While the body of a helper is checked for one of its calls, every error
 * is followed by a note at each call being inlined, innermost first:
 * `FILE:L:C: note: in the call of `name``.  Pushes and pops nest. */
void blk_diag_push_call(BlkDiag *d, BlkLoc call, const char *name);
void blk_diag_pop_call(BlkDiag *d);
int blk_diag_error_count(const BlkDiag *d);
/* True once max_errors were reported: passes may stop early. */
bool blk_diag_saturated(const BlkDiag *d);
/* The last error's message text (without location), for tests; NULL if none. */
const char *blk_diag_last_error(const BlkDiag *d);

/* Reads a whole file into the arena.  On failure returns NULL and reports
 * "cannot open FILE: reason" through d (no location). */
BlkSource *blk_source_read(BlkArena *a, BlkDiag *d, const char *path);
BlkSource *blk_source_from_string(BlkArena *a, const char *name,
                                  const char *text, size_t len);

/* Internal compiler errors: under a blk_guard of this thread, unwind to it
 * with the message; else print "blk: internal error: ..." and abort(). */
_Noreturn void blk_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs fn(arg) so that a blk_die inside it returns here: fn's result, or
 * false with "internal error: ..." in msg (msg is "" when fn returned).
 * Guards nest.  What the unwound work allocated outside its arenas leaks,
 * and an LLVM context it held: the price of not aborting on a bug. */
bool blk_guard(bool (*fn)(void *arg), void *arg, char *msg, size_t len);
#define BLK_ASSERT(c) ((c) ? (void)0 : blk_die("%s:%d: assertion failed: %s", __FILE__, __LINE__, #c))

#endif
