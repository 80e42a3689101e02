/* handle.c - the tags that make a bad handle an error instead of a crash.
 *
 * Every public handle (runtime, program, kernel, tuner, timer) starts with
 * a tag naming its kind, set when it is made and checked by every entry
 * point.  Destroying a handle clears the tag and, instead of freeing the
 * shell at once, parks it in a bounded quarantine: a call with a handle
 * destroyed a moment ago (double destroy, use after destroy) reads a
 * cleared tag in memory that is still ours, and fails with a message.
 * The quarantine frees the oldest shell once it holds QUARANTINE of them,
 * so memory stays bounded; only a handle destroyed that long ago is
 * beyond what the tag can catch.
 */
#include "rt.h"

#include <stdatomic.h>
#include <stdlib.h>

enum { QUARANTINE = 1024 };

static void *graveyard[QUARANTINE];
static unsigned next_grave;
static atomic_flag grave_lock = ATOMIC_FLAG_INIT;

static const char *kind_name(uint32_t tag)
{
	switch (tag) {
	case BLK_TAG_RUNTIME: return "runtime";
	case BLK_TAG_PROGRAM: return "program";
	case BLK_TAG_FUNC: return "kernel";
	case BLK_TAG_TUNER: return "tuner";
	case BLK_TAG_TIMER: return "timer";
	case BLK_TAG_SYMMETRIC: return "symmetric buffer";
	}
	return "handle";
}

bool blk_handle_ok(const void *h, uint32_t tag, const char *what)
{
	if (!h)
		return blk_rt_error(NULL, "%s: the %s is NULL", what, kind_name(tag));
	if (*(const uint32_t *)h != tag)
		return blk_rt_error(NULL, "%s: the %s was destroyed (or is not a %s made by blk)", what,
		                    kind_name(tag), kind_name(tag));
	return true;
}

void blk_handle_retire(void *h)
{
	if (!h)
		return;
	*(uint32_t *)h = 0;
	while (atomic_flag_test_and_set_explicit(&grave_lock, memory_order_acquire))
		;
	void *oldest = graveyard[next_grave];
	graveyard[next_grave] = h;
	next_grave = (next_grave + 1) % QUARANTINE;
	atomic_flag_clear_explicit(&grave_lock, memory_order_release);
	free(oldest);
}
