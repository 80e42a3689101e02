/* progress.h - one line on stderr, rewritten in place, for work that runs
 * long: the interpreter (programs done) and the tuner (candidates timed).
 *
 * Shown only where someone watches -- stderr is a terminal, or
 * BLK_PROGRESS=1 (BLK_PROGRESS=0 silences it) -- and only once the work has
 * taken BLK_PROGRESS_AFTER seconds, then at most every BLK_PROGRESS_EVERY.
 * blk_progress_due reads the clock once every `every` calls, so a call in a
 * hot loop costs a counter. */
#ifndef BLK_SUPPORT_PROGRESS_H
#define BLK_SUPPORT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#define BLK_PROGRESS_AFTER 2.0
#define BLK_PROGRESS_EVERY 0.5

typedef struct BlkProgress {
	bool on, shown;
	uint32_t every, calls;
	double t0, last; /* seconds: the start, the last line */
} BlkProgress;

/* Starts the clock; `every`: calls of blk_progress_due per clock read. */
void blk_progress_start(BlkProgress *p, uint32_t every);
/* Whether a line is due now (then the caller prints it with blk_progress_line). */
bool blk_progress_due(BlkProgress *p);
/* Seconds since the start. */
double blk_progress_elapsed(const BlkProgress *p);
/* Rewrites the line: "\r" + the text + clear to the end of the line. */
void blk_progress_line(BlkProgress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the line with a newline, if one was shown. */
void blk_progress_end(BlkProgress *p);

#endif
