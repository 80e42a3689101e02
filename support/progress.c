/* progress.c - the progress line of long work (progress.h). */
#include "support/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* BLK_PROGRESS=0: never; any other value: always; unset: on a terminal. */
static bool wanted(void)
{
	const char *e = getenv("BLK_PROGRESS");
	if (e && *e)
		return strcmp(e, "0") != 0;
	return isatty(STDERR_FILENO) == 1;
}

void blk_progress_start(BlkProgress *p, uint32_t every)
{
	*p = (BlkProgress){ .on = wanted(), .every = every ? every : 1 };
	if (p->on)
		p->t0 = p->last = now_s();
}

bool blk_progress_due(BlkProgress *p)
{
	if (!p->on || ++p->calls % p->every != 0)
		return false;
	double t = now_s();
	if (t - p->t0 < BLK_PROGRESS_AFTER || (p->shown && t - p->last < BLK_PROGRESS_EVERY))
		return false;
	p->last = t;
	return true;
}

double blk_progress_elapsed(const BlkProgress *p)
{
	return p->on ? now_s() - p->t0 : 0;
}

void blk_progress_line(BlkProgress *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputc('\r', stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\033[K", stderr);
	fflush(stderr);
	va_end(ap);
	p->shown = true;
}

void blk_progress_end(BlkProgress *p)
{
	if (p->shown)
		fputc('\n', stderr);
	p->shown = false;
}
