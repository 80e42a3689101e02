/* diag.c - diagnostics with the source line and a caret. */
#include "diag.h"
#include "limits.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A call whose inlined body is being checked (blk_diag_push_call). */
typedef struct Call {
	BlkLoc loc;
	const char *name;
	struct Call *up;
} Call;

struct BlkDiag {
	BlkArena *arena;
	Call *calls, *free_calls; /* the innermost call; popped ones, for reuse */
	FILE *out;
	int max_errors;
	int errors;
	bool last_printed; /* notes follow their error's fate */
	const char *last_error;
};

BlkDiag *blk_diag_create(BlkArena *a, FILE *out, int max_errors)
{
	BlkDiag *d = BLK_NEW(a, BlkDiag);
	d->arena = a;
	d->out = out;
	d->max_errors = max_errors > 0 ? max_errors : 20;
	return d;
}

/* Prints the line loc points at, tabs kept so the caret lines up.  Bytes that
 * are not printable ASCII show as '?' so junk input cannot garble a terminal. */
static void print_source_line(FILE *out, BlkLoc loc)
{
	const char *p = loc.src->text, *end = p + loc.src->len;
	for (unsigned l = 1; l < loc.line && p < end; p++)
		if (*p == '\n')
			l++;
	const char *eol = p;
	while (eol < end && *eol != '\n')
		eol++;
	if (eol - p > 200)
		eol = p + 200;
	fputs("    ", out);
	for (const char *q = p; q < eol; q++) {
		unsigned char c = (unsigned char)*q;
		fputc(c == '\t' || (c >= 32 && c < 127) ? c : '?', out);
	}
	fputs("\n    ", out);
	for (unsigned i = 1; i < loc.col && p + i - 1 < eol; i++)
		fputc(p[i - 1] == '\t' ? '\t' : ' ', out);
	fputs("^\n", out);
}

static void report(BlkDiag *d, BlkSeverity sev, BlkLoc loc, const char *fmt, va_list ap)
{
	static const char *names[] = { "error", "warning", "note" };
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (sev == BLK_SEV_ERROR) {
		d->errors++;
		d->last_error = blk_arena_strdup(d->arena, msg);
		d->last_printed = d->errors <= d->max_errors;
		if (d->errors == d->max_errors + 1 && d->out)
			fprintf(d->out, "blk: too many errors, stopping\n");
	} else if (sev == BLK_SEV_WARNING) {
		d->last_printed = true;
	}
	if (!d->last_printed || !d->out)
		return;
	if (loc.src && loc.line)
		fprintf(d->out, "%s:%u:%u: %s: %s\n", loc.src->name, loc.line, loc.col, names[sev], msg);
	else
		fprintf(d->out, "blk: %s: %s\n", names[sev], msg);
	if (loc.src && loc.line)
		print_source_line(d->out, loc);
	for (const Call *c = sev == BLK_SEV_ERROR ? d->calls : NULL; c; c = c->up) {
		fprintf(d->out, "%s:%u:%u: note: in the call of `%s`\n", c->loc.src->name, c->loc.line,
		        c->loc.col, c->name);
		print_source_line(d->out, c->loc);
	}
}

void blk_diag_push_call(BlkDiag *d, BlkLoc call, const char *name)
{
	Call *c = d->free_calls ? d->free_calls : BLK_NEW(d->arena, Call);
	d->free_calls = c == d->free_calls ? c->up : d->free_calls;
	c->loc = call;
	c->name = name;
	c->up = d->calls;
	d->calls = c;
}

void blk_diag_pop_call(BlkDiag *d)
{
	Call *c = d->calls;
	d->calls = c->up;
	c->up = d->free_calls;
	d->free_calls = c;
}

#define DEFINE_REPORTER(fn, sev)                                 \
	void fn(BlkDiag *d, BlkLoc loc, const char *fmt, ...)    \
	{                                                        \
		va_list ap;                                      \
		va_start(ap, fmt);                               \
		report(d, sev, loc, fmt, ap);                    \
		va_end(ap);                                      \
	}
DEFINE_REPORTER(blk_error, BLK_SEV_ERROR)
DEFINE_REPORTER(blk_warning, BLK_SEV_WARNING)
DEFINE_REPORTER(blk_note, BLK_SEV_NOTE)

int blk_diag_error_count(const BlkDiag *d)
{
	return d->errors;
}

bool blk_diag_saturated(const BlkDiag *d)
{
	return d->errors >= d->max_errors;
}

const char *blk_diag_last_error(const BlkDiag *d)
{
	return d->last_error;
}

BlkSource *blk_source_from_string(BlkArena *a, const char *name, const char *text, size_t len)
{
	BlkSource *s = BLK_NEW(a, BlkSource);
	s->name = blk_arena_strdup(a, name);
	s->text = blk_arena_strndup(a, text, len);
	s->len = len;
	return s;
}

BlkSource *blk_source_read(BlkArena *a, BlkDiag *d, const char *path)
{
	BlkLoc none = { 0 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		blk_error(d, none, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t n;
	/* one byte past the limit is enough to know (/dev/zero never ends) */
	while (buf && len <= BLK_MAX_SOURCE_BYTES && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	bool bad = !buf || ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		blk_error(d, none, "cannot read %s", path);
		return NULL;
	}
	BlkSource *s = blk_source_from_string(a, path, buf, len);
	free(buf);
	return s;
}

/* A blk_guard's recovery point; the innermost one of the thread is top. */
typedef struct Trap {
	jmp_buf jb;
	char msg[512];
	struct Trap *prev;
} Trap;

static _Thread_local Trap *trap_top;

bool blk_guard(bool (*fn)(void *arg), void *arg, char *msg, size_t len)
{
	Trap t = { .prev = trap_top };
	volatile bool ok = false;
	if (len)
		msg[0] = '\0';
	trap_top = &t;
	if (setjmp(t.jb) == 0)
		ok = fn(arg);
	else if (len)
		snprintf(msg, len, "internal error: %s", t.msg);
	trap_top = t.prev;
	return ok;
}

void blk_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (trap_top) {
		Trap *t = trap_top;
		vsnprintf(t->msg, sizeof t->msg, fmt, ap);
		va_end(ap);
		trap_top = t->prev;
		longjmp(t->jb, 1);
	}
	fputs("blk: internal error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}
