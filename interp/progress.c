/* progress.c - a long interpreter run says how far it has got.
 *
 * A 4096³ matmul interprets for minutes; silence looks like a hang.  After
 * PROGRESS_AFTER seconds the run prints one line to stderr and rewrites it
 * in place every PROGRESS_EVERY seconds ("program 1234 of 4096 (30 %)"),
 * then ends it with a newline.  Only where someone watches: stderr is a
 * terminal, or BLK_PROGRESS=1; BLK_PROGRESS=0 silences it.  The clock is
 * read once every CLOCK_TICKS ticks, so a tick costs a counter. */
#include "interp_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { CLOCK_TICKS = 256 };
static const double PROGRESS_AFTER = 2.0, PROGRESS_EVERY = 0.5;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool wanted(void)
{
	const char *e = getenv("BLK_PROGRESS");
	if (e && *e)
		return strcmp(e, "0") != 0;
	return isatty(STDERR_FILENO) == 1;
}

void blk_iprogress_start(BlkIProgress *p, const char *name, int64_t programs)
{
	*p = (BlkIProgress){ .on = wanted(), .name = name, .total = programs };
	if (p->on)
		p->t0 = p->last = now_s();
}

void blk_iprogress_tick(BlkIProgress *p, int64_t done)
{
	if (!p->on || ++p->ticks % CLOCK_TICKS != 0)
		return;
	double t = now_s();
	if (t - p->t0 < PROGRESS_AFTER || (p->shown && t - p->last < PROGRESS_EVERY))
		return;
	p->last = t;
	p->shown = true;
	fprintf(stderr, "\rblk: interpreting %s: program %" PRId64 " of %" PRId64 " (%d %%), %.0f s\033[K",
	        p->name, done + 1, p->total, (int)(100.0 * (double)done / (double)(p->total ? p->total : 1)), t - p->t0);
	fflush(stderr);
}

void blk_iprogress_end(BlkIProgress *p)
{
	if (p->shown)
		fputc('\n', stderr);
	p->shown = false;
}
