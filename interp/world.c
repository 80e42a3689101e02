/* world.c - the interpreter's world of ranks: signals across them, and
 * deadlock found rather than waited for.
 *
 * Each rank runs on its own thread (interp.c starts them).  Everything the
 * ranks share that the kernel synchronises through, the signal counters and
 * the atomics, is touched under one mutex, which also gives the release and
 * acquire order that docs/language.md promises: what a rank wrote before a
 * signal is seen by the rank whose wait that signal ends.
 *
 * A waiting rank sleeps until a signal changes some counter.  Deadlock is
 * exact, not a timeout: the world is stuck when every rank still running
 * is waiting and no signal came since each of them last looked, because
 * only a running rank can signal.  Counters change only under the mutex,
 * and every change starts a new generation, so "blocked" counts the ranks
 * that have seen the current generation and still wait.
 */
#include "interp/interp_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct BlkIWorld {
	int n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned gen;     /* bumped by every change of a counter */
	int blocked;      /* ranks waiting in this generation */
	int done;         /* ranks that finished (or failed) */
	bool stuck;       /* a deadlock was found */
	bool aborted;     /* a rank failed: the others stop at their next wait */
	pthread_mutex_t diag; /* one rank at a time reports an error or prints */
};

BlkIWorld *blk_iworld_create(int n)
{
	BlkIWorld *w = calloc(1, sizeof *w);
	if (!w)
		blk_die("out of memory");
	w->n = n;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_mutex_init(&w->diag, NULL);
	return w;
}

void blk_iworld_destroy(BlkIWorld *w)
{
	if (!w)
		return;
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->diag);
	free(w);
}

int blk_iworld_size(const BlkIWorld *w)
{
	return w->n;
}

void blk_iworld_lock(BlkIWorld *w)
{
	pthread_mutex_lock(&w->mu);
}

void blk_iworld_unlock(BlkIWorld *w)
{
	pthread_mutex_unlock(&w->mu);
}

void blk_iworld_diag_lock(BlkIWorld *w)
{
	pthread_mutex_lock(&w->diag);
}

void blk_iworld_diag_unlock(BlkIWorld *w)
{
	pthread_mutex_unlock(&w->diag);
}

/* Under mu: a counter changed, so every waiter looks again. */
static void changed(BlkIWorld *w)
{
	w->gen++;
	w->blocked = 0;
	pthread_cond_broadcast(&w->cv);
}

/* Under mu: stuck when nobody left running can signal. */
static bool is_stuck(const BlkIWorld *w)
{
	return w->blocked > 0 && w->blocked + w->done == w->n;
}

void blk_iworld_signal(BlkIWorld *w, int32_t *counter, bool set, int32_t v)
{
	pthread_mutex_lock(&w->mu);
	/* two's complement wrap, as on the GPU */
	*counter = set ? v : (int32_t)((uint32_t)*counter + (uint32_t)v);
	changed(w);
	pthread_mutex_unlock(&w->mu);
}

BlkIWait blk_iworld_wait(BlkIWorld *w, int32_t *counter, int32_t v, const atomic_bool *stop,
                         int32_t *seen)
{
	BlkIWait r = BLK_IWAIT_OK;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		*seen = *counter;
		if (*counter >= v) {
			*counter = (int32_t)((uint32_t)*counter - (uint32_t)v);
			break;
		}
		if (w->stuck) { /* before aborted: the ranks that found it finished failed */
			r = BLK_IWAIT_DEADLOCK;
			break;
		}
		if (w->aborted || (stop && atomic_load(stop))) {
			r = BLK_IWAIT_ABORTED;
			break;
		}
		w->blocked++;
		if (is_stuck(w)) {
			w->stuck = true;
			pthread_cond_broadcast(&w->cv);
			r = BLK_IWAIT_DEADLOCK;
			break;
		}
		unsigned g = w->gen;
		while (g == w->gen && !w->stuck && !w->aborted && !(stop && atomic_load(stop))) {
			/* a timed wait: the stop flag is set from a signal handler,
			 * which cannot wake a condition variable */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L)
				ts.tv_sec++, ts.tv_nsec -= 1000000000L;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		}
		if (g == w->gen)
			w->blocked--; /* woken by stuck, abort or stop: not a new generation */
	}
	pthread_mutex_unlock(&w->mu);
	return r;
}

void blk_iworld_finish(BlkIWorld *w, bool failed)
{
	pthread_mutex_lock(&w->mu);
	w->done++;
	if (failed) /* the waiters stop without blaming a deadlock on it */
		w->aborted = true;
	else if (is_stuck(w))
		w->stuck = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}
