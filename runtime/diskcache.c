/* diskcache.c - compiled kernels and tuner results kept on disk across
 * processes.
 *
 * A specialization's PTX and launch shape (NAME.blkc), or a tuner's choice
 * for one signature (NAME.blkt, tuner.c), are written to one file in the
 * cache directory ($BLK_CACHE_DIR, else $XDG_CACHE_HOME/blk, else
 * ~/.cache/blk; BLK_CACHE=0 turns it off).  The key is everything that
 * decides the output: blk's version and the build of the library (its
 * file's size and modification time: a rebuilt compiler never reads the
 * old one's kernels, whose ABI may differ), the arch, the in-memory cache
 * key (kernel, dtypes, shapes, strides or their class), the defines and
 * the source text.  The
 * file is named by a hash of the key and holds the key itself, so a hash
 * collision is a miss, never a wrong kernel.
 *
 * An entry:
 *
 *     blk-cache 1\n
 *     sum HHHHHHHHHHHHHHHH\n     FNV-1a 64 of every byte after this line
 *     key N\n<N bytes>\n
 *     the payload, to the end of the file; a compiled kernel's is
 *     entry NAME\n launch N\n<N bytes>\n ptx N\n<N bytes>
 *   the launch header as the IR prints it (grid, threads, shared bytes,
 *   the argument list; ir.h BlkLaunch), parsed back for the kernel.
 *
 * Reads check all of it: a truncated, altered or foreign file is a miss,
 * and the recompiled entry replaces it.  Nothing read is trusted: only
 * regular files of ours (owner, our own names) are opened, without
 * blocking and up to a size, and every launch field is range-checked
 * against what the compiler can produce (launch_plausible).  The sum
 * catches damage, not intent: whoever can write the directory can write
 * a consistent entry, so the directory is made 0700, entries 0600, and a
 * directory another user owns or may write is not used.  Writes go to a temporary file in
 * the same directory, renamed over the entry: a reader sees the old file
 * or the new one, never a part, and two processes compiling the same
 * kernel at once each rename a whole entry.  After a write the directory
 * is trimmed, oldest first (hits refresh an entry's time), to 3/4 of its
 * bound ($BLK_CACHE_MAX_MB, default 512).
 */
#define _GNU_SOURCE /* dladdr */
#include "rt.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ENTRY_BYTES = 64 << 20, DEFAULT_MAX_MB = 512 };

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static const uint64_t FNV_START = 1469598103934665603ull;

/* ---- the directory ------------------------------------------------------ */

/* mkdir -p; true if dir exists afterwards. */
static bool make_dirs(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0700);
		*p = '/';
	}
	return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

/* A directory only this user can change: anyone else who can write it can
 * plant entries (with a correct sum) that this process would run. */
static bool dir_is_ours(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static char *default_dir(void)
{
	const char *env = getenv("BLK_CACHE");
	if (env && strcmp(env, "0") == 0)
		return NULL;
	const char *dir = getenv("BLK_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char buf[4096];
	if (dir && *dir)
		snprintf(buf, sizeof buf, "%s", dir);
	else if (xdg && *xdg)
		snprintf(buf, sizeof buf, "%s/blk", xdg);
	else if (home && *home)
		snprintf(buf, sizeof buf, "%s/.cache/blk", home);
	else
		return NULL;
	return strdup(buf);
}

void blk_disk_init(BlkRuntime *rt)
{
	rt->cache_dir = default_dir();
}

bool blk_runtime_set_cache_dir(BlkRuntime *rt, const char *dir)
{
	if (!blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_runtime_set_cache_dir"))
		return false;
	char *copy = dir && *dir ? strdup(dir) : NULL;
	if (dir && *dir && !copy)
		return blk_rt_error(rt, "out of memory");
	free(rt->cache_dir);
	rt->cache_dir = copy;
	return true;
}

const char *blk_runtime_cache_dir(const BlkRuntime *rt)
{
	return blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_runtime_cache_dir") ? rt->cache_dir : NULL;
}

/* ---- keys ----------------------------------------------------------------- */

/* The library (or program) holding this code, as size and modification
 * time: dladdr of an object of ours names its file. */
static const char here = 1;

static void build_id(char *out, size_t n)
{
	Dl_info info;
	struct stat st;
	if (dladdr(&here, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
		snprintf(out, n, "%lld.%lld.%ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		         (long)st.st_mtim.tv_nsec);
	else
		snprintf(out, n, "unknown");
}

char *blk_disk_key(const BlkRuntime *rt, const BlkProgram *p, const char *mem_key, size_t *len)
{
	char *text = NULL, build[96];
	build_id(build, sizeof build);
	FILE *f = open_memstream(&text, len);
	if (!f)
		return NULL;
	fprintf(f, "blk %s\nbuild %s\narch %s\nsms %d\nkernel %s\ndefines %d\n", BLK_VERSION, build, rt->arch,
	        rt->sms, mem_key, p->ndefines);
	for (int i = 0; i < p->ndefines; i++)
		fprintf(f, "%s=%s\n", p->defines[i].name, p->defines[i].value);
	fprintf(f, "source %zu\n", p->source_len);
	fwrite(p->source, 1, p->source_len, f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static void entry_path(const BlkRuntime *rt, const char *kind, const char *key, size_t len,
                       char *path, size_t n)
{
	snprintf(path, n, "%s/%016llx.%s", rt->cache_dir,
	         (unsigned long long)fnv(FNV_START, key, len), kind);
}

/* ---- reading -------------------------------------------------------------- */

/* The whole file, if it is a regular file of ours of at most
 * MAX_ENTRY_BYTES.  O_NONBLOCK: a FIFO or device in an entry's place must
 * not block the open (it is then refused by its type); no symlinks. */
static char *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	struct stat st;
	char *buf = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 0 &&
	    st.st_size <= MAX_ENTRY_BYTES && (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t got = read(fd, buf, (size_t)st.st_size);
		if (got != st.st_size) {
			free(buf);
			buf = NULL;
		} else {
			buf[got] = '\0';
			*len = (size_t)got;
		}
	}
	close(fd);
	return buf;
}

/* "WORD N\n": the number after the expected word. */
unsigned long long blk_disk_take_num(BlkDiskReader *r, const char *word)
{
	size_t wl = strlen(word);
	char *end;
	if (r->bad || (size_t)(r->end - r->p) < wl + 2 || memcmp(r->p, word, wl) != 0 ||
	    r->p[wl] != ' ') {
		r->bad = true;
		return 0;
	}
	errno = 0;
	unsigned long long v = strtoull(r->p + wl + 1, &end, 10);
	if (errno || end >= r->end || *end != '\n' || end == r->p + wl + 1)
		r->bad = true;
	r->p = end + 1;
	return v;
}

/* n raw bytes, then a newline unless it is the end. */
static const char *take_bytes(BlkDiskReader *r, size_t n, bool newline)
{
	const char *s = r->p;
	size_t left = (size_t)(r->end - r->p);
	/* n is read from the file: n + newline must not wrap (2^64 - 1) */
	if (r->bad || n > left || left - n < (size_t)newline || (newline && s[n] != '\n')) {
		r->bad = true;
		return NULL;
	}
	r->p += n + newline;
	return s;
}

/* "entry NAME\n": the name, arena-copied. */
static const char *take_name(BlkDiskReader *r, BlkArena *a)
{
	const char *nl = r->bad ? NULL : memchr(r->p, '\n', (size_t)(r->end - r->p));
	if (!nl || strncmp(r->p, "entry ", 6) != 0 || nl == r->p + 6) {
		r->bad = true;
		return NULL;
	}
	const char *name = blk_arena_strndup(a, r->p + 6, (size_t)(nl - r->p - 6));
	r->p = nl + 1;
	return name;
}

/* Checks the header and the sum; r is left after the sum line. */
static bool check_sum(BlkDiskReader *r)
{
	static const char magic[] = "blk-cache 1\nsum ";
	size_t ml = sizeof magic - 1;
	if ((size_t)(r->end - r->p) < ml + 17 || memcmp(r->p, magic, ml) != 0 || r->p[ml + 16] != '\n')
		return false;
	char hex[17];
	memcpy(hex, r->p + ml, 16);
	hex[16] = '\0';
	char *end;
	unsigned long long sum = strtoull(hex, &end, 16);
	r->p += ml + 17;
	return *end == '\0' && sum == fnv(FNV_START, r->p, (size_t)(r->end - r->p));
}

/* The header, the sum and the key; r is left at the payload. */
static bool check_entry(BlkDiskReader *r, const char *key, size_t klen)
{
	if (!check_sum(r))
		return false;
	size_t n = (size_t)blk_disk_take_num(r, "key");
	const char *k = take_bytes(r, n, true);
	return !r->bad && n == klen && memcmp(k, key, klen) == 0;
}

char *blk_disk_read(const BlkRuntime *rt, const char *kind, const char *key, size_t klen,
                    BlkDiskReader *payload)
{
	char path[4352];
	size_t len = 0;
	if (!rt->cache_dir || !dir_is_ours(rt->cache_dir))
		return NULL;
	entry_path(rt, kind, key, klen, path, sizeof path);
	char *buf = read_all(path, &len);
	if (!buf)
		return NULL;
	*payload = (BlkDiskReader){.p = buf, .end = buf + len};
	if (!check_entry(payload, key, klen)) {
		free(buf);
		return NULL;
	}
	utimensat(AT_FDCWD, path, NULL, 0); /* recently used: evicted last */
	return buf;
}

/* The launch header, as the IR prints it (ir.h blk_launch_print): parsed
 * back for kernel k, NULL if it does not parse (a foreign entry: a miss). */
static const BlkLaunch *take_launch(BlkDiskReader *r, BlkArena *a, const BlkKernel *k)
{
	size_t n = (size_t)blk_disk_take_num(r, "launch");
	const char *text = take_bytes(r, n, true);
	if (r->bad)
		return NULL;
	BlkSource *src = blk_source_from_string(a, "<disk cache>", text, n);
	return blk_launch_parse(a, blk_diag_create(a, NULL, 1), k, src); /* (silent) */
}

/* A constant grid extent the compiler can make: 1 up to CUDA's limit (an
 * empty launch's 0 is recompiled rather than trusted: it skips the launch). */
static bool extent_plausible(const BlkSym *s, int64_t max)
{
	int64_t v;
	return !s || !blk_sym_is_const(s, &v) || (v >= 1 && v <= max);
}

/* Every launch field within what the compiler produces (ir/verify_gpu.c
 * blk_verify_launch, smem-plan's bound): an entry whose sum was recomputed
 * after editing cannot ask for 0 threads or 2^64 bytes of shared memory. */
static bool launch_plausible(const BlkLaunch *l)
{
	static const int64_t max_extent[3] = { INT32_MAX, 65535, 65535 };
	bool ok = l->threads >= 32 && l->threads <= 1024 && l->threads % 32 == 0 && l->smem >= 0 &&
	          l->smem <= BLK_LOWER_MAX_SMEM && l->isa >= 60 && l->isa <= 200 && l->persist >= 0 &&
	          l->cluster >= 0 && l->cluster <= 8 && blk_launch_cluster_fits(l) &&
	          l->nargs >= 0;
	for (int i = 0; ok && i < 3; i++)
		ok = extent_plausible(l->grid[i], max_extent[i]);
	return ok;
}

/* The PTX defines entry for the runtime's arch, taking as many params as
 * the launch passes arguments (one each: an entry whose launch lost or
 * gained an argument under a resealed sum would hand the kernel garbage):
 * a foreign or edited file is a miss. */
static bool ptx_plausible(const char *ptx, const char *entry, const char *arch, int nargs)
{
	char want[160];
	snprintf(want, sizeof want, ".entry %s(", entry);
	const char *target = strstr(ptx, ".target "), *at = strstr(ptx, want);
	size_t al = strlen(arch);
	if (!at || !target || strncmp(target + 8, arch, al) != 0 ||
	    (target[8 + al] != '\n' && target[8 + al] != ',' && target[8 + al] != ' '))
		return false;
	const char *end = strchr(at + strlen(want), ')');
	int params = 0;
	for (const char *p = at; end && (p = strstr(p + 1, ".param ")) && p < end;)
		params++;
	return end && params == nargs;
}

static bool parse_compiled(BlkDiskReader *r, BlkArena *a, const BlkKernel *k, const char *arch,
                           BlkCompiled *out)
{
	out->entry = take_name(r, a);
	out->launch = take_launch(r, a, k);
	if (!out->launch || strcmp(out->entry, k->name) != 0 || !launch_plausible(out->launch))
		return false;
	size_t n = (size_t)blk_disk_take_num(r, "ptx");
	const char *ptx = take_bytes(r, n, false);
	if (r->bad || r->p != r->end || memchr(ptx, '\0', n))
		return false;
	out->ptx = blk_arena_strndup(a, ptx, n);
	return ptx_plausible(out->ptx, out->entry, arch, out->launch->nargs);
}

bool blk_disk_load(const BlkRuntime *rt, const char *key, size_t klen, const BlkKernel *k, BlkArena *a,
                   BlkCompiled *out)
{
	BlkDiskReader r;
	char *buf = blk_disk_read(rt, "blkc", key, klen, &r);
	memset(out, 0, sizeof *out);
	bool ok = buf && parse_compiled(&r, a, k, rt->arch, out);
	free(buf);
	return ok;
}

/* ---- writing -------------------------------------------------------------- */

static char *format_entry(const char *key, size_t klen, const char *payload, size_t plen,
                          size_t *len)
{
	char *body = NULL, *all = NULL;
	size_t blen = 0, alen = 0;
	FILE *f = open_memstream(&body, &blen);
	if (!f)
		return NULL;
	fprintf(f, "key %zu\n", klen);
	fwrite(key, 1, klen, f);
	fputc('\n', f);
	fwrite(payload, 1, plen, f);
	if (fclose(f) != 0 || !(f = open_memstream(&all, &alen))) {
		free(body);
		return NULL;
	}
	fprintf(f, "blk-cache 1\nsum %016llx\n", (unsigned long long)fnv(FNV_START, body, blen));
	fwrite(body, 1, blen, f);
	bool ok = fclose(f) == 0;
	free(body);
	*len = alen;
	if (!ok) {
		free(all);
		return NULL;
	}
	return all;
}

/* Writes data to path through a temporary file and a rename. */
static bool write_atomic(const char *path, const char *data, size_t len)
{
	static atomic_uint counter; /* the tuner's compile threads write at once */
	char tmp[4400];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return false;
	bool ok = write(fd, data, len) == (ssize_t)len;
	ok = close(fd) == 0 && ok;
	ok = ok && rename(tmp, path) == 0;
	if (!ok)
		unlink(tmp);
	return ok;
}

void blk_disk_write(const BlkRuntime *rt, const char *kind, const char *key, size_t klen,
                    const char *payload, size_t plen)
{
	char path[4352], dir[4096];
	size_t len = 0;
	if (!rt->cache_dir)
		return;
	snprintf(dir, sizeof dir, "%s", rt->cache_dir);
	bool usable = make_dirs(dir) && dir_is_ours(dir);
	char *data = usable ? format_entry(key, klen, payload, plen, &len) : NULL;
	entry_path(rt, kind, key, klen, path, sizeof path);
	/* Best effort: a cache that cannot be written only costs a compile. */
	if (data && write_atomic(path, data, len))
		blk_disk_trim(rt->cache_dir, blk_disk_max_bytes());
	free(data);
}

void blk_disk_store(const BlkRuntime *rt, const char *key, size_t klen, const BlkKernel *k, const BlkCompiled *c)
{
	char *payload = NULL;
	size_t plen = 0;
	FILE *f = open_memstream(&payload, &plen);
	if (!f)
		return;
	char *launch = NULL;
	size_t llen = 0;
	FILE *lf = open_memstream(&launch, &llen);
	if (!lf) {
		fclose(f);
		free(payload);
		return;
	}
	blk_launch_print(lf, c->launch, k);
	fclose(lf);
	fprintf(f, "entry %s\nlaunch %zu\n%s\n", c->entry, llen, launch);
	free(launch);
	fprintf(f, "ptx %zu\n%s", strlen(c->ptx), c->ptx);
	if (fclose(f) == 0)
		blk_disk_write(rt, "blkc", key, klen, payload, plen);
	free(payload);
}

/* ---- the bound -------------------------------------------------------------- */

uint64_t blk_disk_max_bytes(void)
{
	static atomic_bool told; /* a bad value is named once a process */
	const char *env = getenv("BLK_CACHE_MAX_MB");
	char *end;
	unsigned long long mb = env && *env ? strtoull(env, &end, 10) : 0;
	if (env && *env && (*end || mb == 0 || *env == '-') && !atomic_exchange(&told, true))
		fprintf(stderr, "blk: $BLK_CACHE_MAX_MB='%s' is not a whole number of megabytes above 0; the disk "
		        "cache keeps its default bound, %d MB\n", env, DEFAULT_MAX_MB);
	if (!env || !*env || *end || mb == 0 || *env == '-')
		mb = DEFAULT_MAX_MB;
	return mb > UINT64_MAX >> 20 ? UINT64_MAX : (uint64_t)mb << 20; /* 2^44 MB: no bound, not 0 */
}

enum { NAME_ENTRY = 1, NAME_TEMP = 2 };

/* Whether a file name is one this cache writes: HASH.blkc or HASH.blkt
 * (16 hex digits), or a temporary HASH.KIND.tmp.PID.N of write_atomic.
 * Trimming touches nothing else (a user's settings.blkcfg stays). */
static int own_name(const char *s)
{
	for (int i = 0; i < 16; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return 0;
	if (strncmp(s + 16, ".blkc", 5) != 0 && strncmp(s + 16, ".blkt", 5) != 0)
		return 0;
	const char *rest = s + 21;
	if (!*rest)
		return NAME_ENTRY;
	if (strncmp(rest, ".tmp.", 5) != 0)
		return 0;
	int dots = 0;
	for (rest += 5; *rest; rest++) {
		if (*rest == '.')
			dots++;
		else if (*rest < '0' || *rest > '9')
			return 0;
	}
	return dots == 1 ? NAME_TEMP : 0;
}

typedef struct Item {
	char *path;
	uint64_t bytes;
	time_t mtime;
} Item;

static int older_first(const void *x, const void *y)
{
	const Item *a = x, *b = y;
	return (a->mtime > b->mtime) - (a->mtime < b->mtime);
}

/* The entries of dir (and stale temporaries, removed on the way). */
static Item *list_entries(const char *dir, int *n, uint64_t *total)
{
	DIR *d = opendir(dir);
	Item *items = NULL;
	int cap = 0;
	*n = 0;
	*total = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		char path[4352];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int name = own_name(e->d_name);
		if (!name || lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (name == NAME_TEMP) {
			if (st.st_mtime < time(NULL) - 3600) /* a writer that died */
				unlink(path);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			Item *grown = realloc(items, sizeof *items * (size_t)cap);
			if (!grown)
				break;
			items = grown;
		}
		items[*n] = (Item){strdup(path), (uint64_t)st.st_size, st.st_mtime};
		*total += (uint64_t)st.st_size;
		(*n)++;
	}
	if (d)
		closedir(d);
	return items;
}

void blk_disk_trim(const char *dir, uint64_t max_bytes)
{
	int n;
	uint64_t total;
	Item *items = list_entries(dir, &n, &total);
	if (total > max_bytes) {
		qsort(items, (size_t)n, sizeof *items, older_first);
		for (int i = 0; i < n && total > max_bytes / 4 * 3; i++)
			if (items[i].path && unlink(items[i].path) == 0)
				total -= items[i].bytes;
	}
	for (int i = 0; i < n; i++)
		free(items[i].path);
	free(items);
}
