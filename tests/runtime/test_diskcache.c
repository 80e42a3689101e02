/* test_diskcache.c - the disk cache of compiled kernels (runtime/diskcache.c)
 * without a GPU: offline runtimes compile, so misses, hits, what the key
 * covers, damaged entries (altered, truncated, foreign, another key's),
 * the size bound, the switches, and two processes filling one directory at
 * once.  Each test has a directory of its own under $TMPDIR. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "blk.h"
#include "runtime/rt.h"

static const char add_src[] =
	"kernel add[B = 128](\n"
	"    x: in  f32[N] block (B) index (i) -> (i),\n"
	"    z: out f32[N] block (B) index (i) -> (i),\n"
	") grid (cdiv(N, B)) {\n"
	"    z[...] = x[...] * 2.0;\n"
	"}\n";

static char dir[256];

static int make_dir(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/blk-diskcache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* What one fresh program did for one launch shape. */
typedef struct Outcome {
	bool ok;
	unsigned compiles, disk_hits;
	char ptx_head[64];
	unsigned threads, grid[3];
	size_t smem;
	bool cached;         /* BlkCompiledInfo.cached */
} Outcome;

/* A new runtime and program (empty in-memory caches) compiling add for n. */
static Outcome compile_once(const char *arch, const char *src, const char *def, int64_t n)
{
	Outcome o = {0};
	BlkRuntime *rt = blk_runtime_create_offline(arch, NULL, 0);
	assert_non_null(rt);
	assert_true(blk_runtime_set_cache_dir(rt, dir));
	BlkProgram *p = blk_program_load_source(rt, "add.blk", src, def ? &def : NULL, def ? 1 : 0);
	assert_non_null(p);
	BlkFunc *f = blk_program_kernel(p, NULL);
	/* never touched (compile only); 1 GiB apart, so they share no memory */
	BlkTensor t[2] = {blk_tensor_make((void *)0x10000000, BLK_DTYPE_F32, 1, &n),
	                  blk_tensor_make((void *)0x50000000, BLK_DTYPE_F32, 1, &n)};
	BlkCompiledInfo info;
	o.ok = blk_func_compile(f, t, 2, &info);
	if (!o.ok)
		print_message("%s\n", blk_runtime_last_error(rt));
	if (o.ok) {
		snprintf(o.ptx_head, sizeof o.ptx_head, "%s", info.ptx);
		o.threads = info.threads, o.smem = info.smem_bytes;
		o.cached = info.cached;
		memcpy(o.grid, info.grid, sizeof o.grid);
	}
	blk_program_cache_stats(p, &o.compiles, NULL);
	o.disk_hits = blk_program_disk_hits(p);
	blk_program_destroy(p);
	blk_runtime_destroy(rt);
	return o;
}

static int count_files(const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t l = strlen(e->d_name), s = strlen(suffix);
		n += l > s && strcmp(e->d_name + l - s, suffix) == 0;
	}
	if (d)
		closedir(d);
	return n;
}

/* The path of the only entry in dir. */
static void only_entry(char *path, size_t len)
{
	DIR *d = opendir(dir);
	path[0] = '\0';
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t n = strlen(e->d_name); /* an entry, not a test's NAME.blkc.keep */
		if (n > 5 && strcmp(e->d_name + n - 5, ".blkc") == 0)
			snprintf(path, len, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	assert_true(path[0] != '\0');
}

static void assert_compiled(Outcome o)
{
	assert_true(o.ok);
	assert_int_equal(o.compiles, 1);
	assert_int_equal(o.disk_hits, 0);
	assert_false(o.cached);
}

static void assert_hit(Outcome o)
{
	assert_true(o.ok);
	assert_int_equal(o.compiles, 0);
	assert_int_equal(o.disk_hits, 1);
	assert_true(o.cached); /* a disk hit is a cache hit (compile()'s "cached") */
}

static void test_miss_then_hit(void **state)
{
	(void)state;
	Outcome a = compile_once("sm_90a", add_src, NULL, 1000);
	assert_compiled(a);
	assert_int_equal(count_files(".blkc"), 1);
	Outcome b = compile_once("sm_90a", add_src, NULL, 1000);
	assert_hit(b);
	assert_string_equal(a.ptx_head, b.ptx_head);
	/* the launch header read back: the same threads, bytes and grid */
	assert_int_equal(a.threads, b.threads);
	assert_int_equal(a.smem, b.smem);
	assert_memory_equal(a.grid, b.grid, sizeof a.grid);
	assert_int_equal(b.grid[0], 1000 / 128 + 1);
	assert_int_equal(count_files(".blkc"), 1);
	assert_int_equal(count_files(".tmp"), 0);
}

/* Shape, define, arch and source text each make another entry. */
static void test_key_covers(void **state)
{
	(void)state;
	assert_compiled(compile_once("sm_90a", add_src, NULL, 1000));
	assert_compiled(compile_once("sm_90a", add_src, NULL, 1001));
	assert_compiled(compile_once("sm_90a", add_src, "B=256", 1000));
	assert_compiled(compile_once("sm_80", add_src, NULL, 1000));
	char other[sizeof add_src + 16];
	snprintf(other, sizeof other, "// v2\n%s", add_src);
	assert_compiled(compile_once("sm_90a", other, NULL, 1000));
	assert_int_equal(count_files(".blkc"), 5);
	assert_hit(compile_once("sm_90a", add_src, "B=256", 1000));
}

static void rewrite(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[1 << 20];
	*len = fread(buf, 1, sizeof buf - 2, f);
	buf[*len] = '\0'; /* a string (tamper), room for one more byte (extra_bytes) */
	fclose(f);
	return buf;
}

/* A damaged entry is recompiled and replaced by a good one. */
static void damage_and_check(void (*damage)(const char *path))
{
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	char path[512];
	only_entry(path, sizeof path);
	damage(path);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	assert_hit(compile_once("sm_90a", add_src, NULL, 777));
}

static void flip_ptx_byte(const char *path)
{
	size_t len;
	char *data = slurp(path, &len);
	data[len - 10] ^= 0x20; /* inside the PTX: only the sum notices */
	rewrite(path, data, len);
}

static void truncate_half(const char *path)
{
	assert_int_equal(truncate(path, 100), 0);
}

static void empty_file(const char *path)
{
	rewrite(path, "", 0);
}

static void foreign_file(const char *path)
{
	rewrite(path, "not a blk cache entry\n", 22);
}

static void extra_bytes(const char *path)
{
	size_t len;
	char *data = slurp(path, &len);
	data[len] = 'x';
	rewrite(path, data, len + 1);
}

/* A launch header that does not parse, under a sum that matches (what
 * another build's header might be): a miss all the same. */
static void bad_launch(const char *path)
{
	size_t len;
	char *data = slurp(path, &len);
	char *at = strstr(data, "threads ");
	assert_non_null(at);
	at[3] = 'x';
	char *body = strchr(strstr(data, "sum "), '\n') + 1;
	uint64_t h = 1469598103934665603ull; /* FNV-1a 64, as diskcache.c */
	for (char *q = body; q < data + len; q++)
		h = (h ^ (unsigned char)*q) * 1099511628211ull;
	char sum[17];
	snprintf(sum, sizeof sum, "%016llx", (unsigned long long)h);
	memcpy(strstr(data, "sum ") + 4, sum, 16);
	rewrite(path, data, len);
}

static void test_altered(void **state) { (void)state; damage_and_check(flip_ptx_byte); }
static void test_truncated(void **state) { (void)state; damage_and_check(truncate_half); }
static void test_empty(void **state) { (void)state; damage_and_check(empty_file); }
static void test_foreign(void **state) { (void)state; damage_and_check(foreign_file); }
static void test_extra(void **state) { (void)state; damage_and_check(extra_bytes); }
static void test_bad_launch(void **state) { (void)state; damage_and_check(bad_launch); }

/* ---- tampering: edits under a recomputed sum ------------------------------- */

/* The sum line of an entry made to match its body again (FNV-1a 64, as
 * diskcache.c): what someone editing an entry on purpose would do. */
static void reseal(char *data, size_t len)
{
	char *body = strchr(strstr(data, "sum "), '\n') + 1;
	uint64_t h = 1469598103934665603ull;
	for (char *q = body; q < data + len; q++)
		h = (h ^ (unsigned char)*q) * 1099511628211ull;
	char sum[17];
	snprintf(sum, sizeof sum, "%016llx", (unsigned long long)h);
	memcpy(strstr(data, "sum ") + 4, sum, 16);
}

/* Replaces the first `from` in the entry at path by `to`, fixes the length
 * of the section it is in (launch or ptx) and reseals the sum: a well-formed
 * entry that says something else. */
static void tamper(const char *path, const char *from, const char *to)
{
	size_t len;
	char *data = slurp(path, &len);
	static char out[1 << 20];
	char *at = strstr(data, from), *ptx = strstr(data, "\nptx ");
	assert_non_null(at);
	assert_non_null(ptx);
	const char *word = at > ptx ? "\nptx " : "\nlaunch ";
	char *num = strstr(data, word) + strlen(word);
	long delta = (long)strlen(to) - (long)strlen(from);
	long n = strtol(num, NULL, 10) + delta;
	char *num_end = strchr(num, '\n');
	int w = snprintf(out, sizeof out, "%.*s%ld", (int)(num - data), data, n);
	w += snprintf(out + w, sizeof out - (size_t)w, "%.*s%s%s", (int)(at - num_end), num_end, to,
	              at + strlen(from));
	reseal(out, (size_t)w);
	rewrite(path, out, (size_t)w);
}

/* Each edit is a miss: the kernel is compiled again, its entry replaced. */
static void tamper_and_check(const char *from, const char *to)
{
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	char path[512];
	only_entry(path, sizeof path);
	tamper(path, from, to);
	Outcome o = compile_once("sm_90a", add_src, NULL, 777);
	if (o.compiles != 1)
		fail_msg("an entry with '%s' for '%s' was loaded", to, from);
	assert_compiled(o);
	assert_int_equal(o.threads, 128);
	assert_hit(compile_once("sm_90a", add_src, NULL, 777));
}

static void test_tampered_fields(void **state)
{
	(void)state;
	/* the helper itself: an edit that keeps the entry valid still loads */
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	char path[512];
	only_entry(path, sizeof path);
	tamper(path, "// Generated by LLVM", "// generated by LLVM");
	assert_hit(compile_once("sm_90a", add_src, NULL, 777));
	assert_int_equal(remove(path), 0);
	static const char *const edits[][2] = {
		{"threads 128 ", "threads 0 "},
		{"threads 128 ", "threads 4294967295 "},
		{"threads 128 ", "threads 2048 "},
		{"threads 128 ", "threads 100 "},
		{"smem 0 ", "smem 18446744073709551615 "},
		{"smem 0 ", "smem 300000 "},
		{"grid (7, 1, 1)", "grid (0, 1, 1)"},
		{"grid (7, 1, 1)", "grid (7, 70000, 1)"},
		{"isa 80", "isa 9999"},
		{"entry add\n", "entry evil\n"},
		{".entry add(", ".entry adx("},
		{".target sm_90a", ".target sm_80"},
		{"    arg ptr z strides (1) align 16\n", ""}, /* an argument the PTX still takes */
	};
	for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
		tamper_and_check(edits[i][0], edits[i][1]);
		assert_int_equal(remove(path), 0);
	}
}

/* A section length (the number after `word`) set to `to`, the sum resealed:
 * lengths that wrap the reader's bounds arithmetic (2^64 - 1 + a newline
 * is 0) must be misses, not reads before or past the buffer. */
static void set_length(const char *path, const char *word, const char *to)
{
	size_t len;
	char *data = slurp(path, &len);
	static char out[1 << 20];
	char *num = strstr(data, word);
	assert_non_null(num);
	num += strlen(word);
	int w = snprintf(out, sizeof out, "%.*s%s%s", (int)(num - data), data, to, strchr(num, '\n'));
	reseal(out, (size_t)w);
	rewrite(path, out, (size_t)w);
}

static void test_wrapping_lengths(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"\nlaunch ", "18446744073709551615"}, {"\nlaunch ", "18446744073709551614"},
		{"\nptx ", "18446744073709551615"},    {"\nkey ", "18446744073709551615"},
		{"\nlaunch ", "99999999999"},
	};
	char path[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
		only_entry(path, sizeof path);
		set_length(path, cases[i][0], cases[i][1]);
		Outcome o = compile_once("sm_90a", add_src, NULL, 777);
		if (o.compiles != 1)
			fail_msg("an entry with %s%s was loaded", cases[i][0] + 1, cases[i][1]);
		assert_compiled(o);
		assert_int_equal(remove(path), 0);
	}
}

/* A FIFO where the entry should be: the compile neither blocks on it nor
 * reads it, and the new entry replaces it.  (alarm: a hang fails.) */
static void test_fifo_entry(void **state)
{
	(void)state;
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	char path[512];
	only_entry(path, sizeof path);
	assert_int_equal(remove(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(60);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	alarm(0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_hit(compile_once("sm_90a", add_src, NULL, 777));
}

/* A directory the cache makes is 0700 and its entries 0600 (they hold the
 * kernel's source); a directory others may write is not used at all, and
 * an entry another user owns is not read. */
static void test_permissions(void **state)
{
	(void)state;
	char saved[sizeof dir], path[512];
	memcpy(saved, dir, sizeof dir);
	snprintf(dir, sizeof dir, "%.200s/made/by/blk", saved);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	only_entry(path, sizeof path);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_hit(compile_once("sm_90a", add_src, NULL, 777));
	assert_int_equal(chmod(dir, 0777), 0);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777)); /* not read */
	assert_int_equal(remove(path), 0);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	assert_int_equal(count_files(".blkc"), 0);                   /* nor written */
	assert_int_equal(chmod(dir, 0700), 0);
	if (geteuid() == 0) { /* root can give the entry away */
		assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
		only_entry(path, sizeof path);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_compiled(compile_once("sm_90a", add_src, NULL, 777));
	}
	memcpy(dir, saved, sizeof dir);
}

/* A whole, valid entry of another key under this key's name (a hash
 * collision, or a file copied by hand) is a miss, not that kernel. */
static void test_other_key(void **state)
{
	(void)state;
	assert_compiled(compile_once("sm_90a", add_src, NULL, 64));
	char first[512], second[512], cmd[1200];
	only_entry(first, sizeof first);
	snprintf(cmd, sizeof cmd, "mv '%s' '%s.keep'", first, first);
	assert_int_equal(system(cmd), 0);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 65));
	only_entry(second, sizeof second);
	snprintf(cmd, sizeof cmd, "mv '%s.keep' '%s'", first, second);
	assert_int_equal(system(cmd), 0);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 65));
}

static void set_age(const char *name, time_t age)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (int i = 0; i < 1000; i++)
		fputc('x', f);
	fclose(f);
	struct timespec ts[2] = {{.tv_sec = time(NULL) - age}, {.tv_sec = time(NULL) - age}};
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool exists(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Over the bound, the oldest go first, down to 3/4 of it; stale
 * temporaries of dead writers go too, fresh ones stay.  Files not named as
 * the cache names its own stay whatever their age. */
#define NAME(c) "000000000000000" c ".blkc"
static void test_trim(void **state)
{
	(void)state;
	set_age(NAME("a"), 400);
	set_age(NAME("b"), 300);
	set_age(NAME("c"), 200);
	set_age(NAME("d"), 100);
	set_age(NAME("e") ".tmp.1.0", 7200);
	set_age(NAME("f") ".tmp.1.0", 10);
	set_age("settings.blkcfg", 9000);    /* a user's file: never ours to delete */
	set_age("a.blkc", 9000);             /* not a hash */
	set_age(NAME("g") ".tmp.x", 9000);   /* not our temporary */
	blk_disk_trim(dir, 4000); /* 4000 bytes: nothing over */
	assert_true(exists(NAME("a")));
	assert_false(exists(NAME("e") ".tmp.1.0"));
	assert_true(exists(NAME("f") ".tmp.1.0"));
	blk_disk_trim(dir, 3500); /* down to 2625: two go */
	assert_false(exists(NAME("a")));
	assert_false(exists(NAME("b")));
	assert_true(exists(NAME("c")));
	assert_true(exists(NAME("d")));
	blk_disk_trim(dir, 1); /* every entry goes, nothing else */
	assert_false(exists(NAME("d")));
	assert_true(exists("settings.blkcfg"));
	assert_true(exists("a.blkc"));
	assert_true(exists(NAME("g") ".tmp.x"));
	setenv("BLK_CACHE_MAX_MB", "3", 1);
	assert_int_equal(blk_disk_max_bytes(), 3u << 20);
	setenv("BLK_CACHE_MAX_MB", "lots", 1);
	{ /* named on stderr, once */
		char path[] = "/tmp/blk-stderr-XXXXXX";
		int fd = mkstemp(path), saved = dup(2);
		assert_true(fd >= 0 && saved >= 0);
		fflush(stderr);
		dup2(fd, 2);
		assert_int_equal(blk_disk_max_bytes(), 512u << 20);
		assert_int_equal(blk_disk_max_bytes(), 512u << 20);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		char buf[512] = { 0 };
		assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
		close(fd);
		unlink(path);
		assert_string_equal(buf, "blk: $BLK_CACHE_MAX_MB='lots' is not a whole number of megabytes above 0; "
		                         "the disk cache keeps its default bound, 512 MB\n");
	}
	setenv("BLK_CACHE_MAX_MB", "17592186044416", 1); /* 2^44 MB: 2^64 bytes, no bound (it wrapped to 0) */
	assert_true(blk_disk_max_bytes() == UINT64_MAX);
	setenv("BLK_CACHE_MAX_MB", "-1", 1);
	assert_int_equal(blk_disk_max_bytes(), 512u << 20);
	unsetenv("BLK_CACHE_MAX_MB");
}
#undef NAME

static void test_switches(void **state)
{
	(void)state;
	setenv("BLK_CACHE_DIR", dir, 1);
	unsetenv("BLK_CACHE");
	BlkRuntime *rt = blk_runtime_create_offline(NULL, NULL, 0);
	assert_string_equal(blk_runtime_cache_dir(rt), dir);
	assert_true(blk_runtime_set_cache_dir(rt, NULL));
	assert_null(blk_runtime_cache_dir(rt));
	assert_true(blk_runtime_set_cache_dir(rt, ""));
	assert_null(blk_runtime_cache_dir(rt));
	blk_runtime_destroy(rt);
	setenv("BLK_CACHE", "0", 1);
	rt = blk_runtime_create_offline(NULL, NULL, 0);
	assert_null(blk_runtime_cache_dir(rt));
	blk_runtime_destroy(rt);
	unsetenv("BLK_CACHE");
	unsetenv("BLK_CACHE_DIR");
	setenv("HOME", "/home/someone", 1);
	unsetenv("XDG_CACHE_HOME");
	rt = blk_runtime_create_offline(NULL, NULL, 0);
	assert_string_equal(blk_runtime_cache_dir(rt), "/home/someone/.cache/blk");
	blk_runtime_destroy(rt);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	rt = blk_runtime_create_offline(NULL, NULL, 0);
	assert_string_equal(blk_runtime_cache_dir(rt), "/xdg/blk");
	blk_runtime_destroy(rt);
	setenv("BLK_CACHE", "0", 1);
}

/* A directory that cannot be made costs the cache, not the compile. */
static void test_unwritable(void **state)
{
	(void)state;
	char saved[256];
	snprintf(saved, sizeof saved, "%s", dir);
	snprintf(dir, sizeof dir, "/proc/blk-no-such/cache");
	assert_compiled(compile_once("sm_90a", add_src, NULL, 1000));
	assert_compiled(compile_once("sm_90a", add_src, NULL, 1000));
	snprintf(dir, sizeof dir, "%s", saved);
}

/* Two processes compile the same 12 shapes at once, in opposite orders:
 * afterwards every entry is whole (a fresh program hits each one) and no
 * temporary is left. */
static void test_two_processes(void **state)
{
	(void)state;
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			for (int i = 0; i < 12; i++) {
				Outcome o = compile_once("sm_90a", add_src, NULL, 100 + (k ? i : 11 - i));
				if (!o.ok)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		int status;
		assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(count_files(".blkc"), 12);
	assert_int_equal(count_files(".tmp"), 0);
	for (int i = 0; i < 12; i++)
		assert_hit(compile_once("sm_90a", add_src, NULL, 100 + i));
}

/* ---- the tuner's choices ------------------------------------------------ */

#ifndef BLK_FAKE_CUDA
#define BLK_FAKE_CUDA "libfakecuda.so"
#endif

/* Launches so far under the stand-in driver. */
static int (*fake_launches)(void);

/* A tuner over two block sizes of add, on the stand-in driver (launches
 * take 1 + 64/CTAs ms: B=32 wins); how many launches its first call made. */
static int tune_once(BlkRuntime *rt, const char *configs, int reps, BlkTunerResult *r)
{
	BlkTuner *t = blk_tuner_create(rt, NULL, add_src, NULL, NULL, 0);
	assert_non_null(t);
	char copy[128];
	snprintf(copy, sizeof copy, "%s", configs);
	for (char *c = strtok(copy, ";"); c; c = strtok(NULL, ";"))
		assert_true(blk_tuner_add_config_text(t, c));
	blk_tuner_set_timing(t, 1, reps);
	int64_t n = 4096;
	void *x = NULL, *z = NULL;
	assert_true(blk_mem_alloc(rt, 4 * 4096, &x) && blk_mem_alloc(rt, 4 * 4096, &z));
	BlkTensor ts[2] = {blk_tensor_make(x, BLK_DTYPE_F32, 1, &n), blk_tensor_make(z, BLK_DTYPE_F32, 1, &n)};
	int before = fake_launches();
	if (!blk_tuner_launch(t, ts, 2, NULL))
		fail_msg("%s\n%s", blk_runtime_last_error(rt), blk_tuner_log(t));
	int made = fake_launches() - before;
	assert_true(blk_tuner_best(t, ts, 2, r));
	blk_mem_free(rt, x);
	blk_mem_free(rt, z);
	blk_tuner_destroy(t);
	return made;
}

static void test_tuner_results(void **state)
{
	(void)state;
	const char *fake = getenv("BLK_FAKE_CUDA") ? getenv("BLK_FAKE_CUDA") : BLK_FAKE_CUDA;
	void *lib = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(lib);
	*(void **)&fake_launches = dlsym(lib, "fake_cuda_launches");
	setenv("BLK_LIBCUDA", fake, 1);
	BlkRuntime *rt = blk_runtime_create(0, NULL, 0);
	unsetenv("BLK_LIBCUDA");
	assert_non_null(rt);
	assert_true(blk_runtime_set_cache_dir(rt, dir));
	BlkTunerResult r;
	/* Two candidates x (1 warm-up + 2 timed), then the winner. */
	assert_int_equal(tune_once(rt, "B=128;B=32", 2, &r), 7);
	assert_int_equal(r.config, 1);
	assert_int_equal(count_files(".blkt"), 1);
	/* Another tuner takes the choice from disk: only the winner runs. */
	assert_int_equal(tune_once(rt, "B=128;B=32", 2, &r), 1);
	assert_int_equal(r.config, 1);
	assert_int_equal(r.timed, 2);
	assert_float_equal(r.ms, 1.0 + 64.0 / 128, 1e-4);
	/* Other candidates or other timing settings are another question. */
	assert_int_equal(tune_once(rt, "B=32;B=128", 2, &r), 7);
	assert_int_equal(r.config, 0);
	assert_int_equal(tune_once(rt, "B=128;B=32", 3, &r), 9);
	assert_int_equal(count_files(".blkt"), 3);
	/* A damaged choice is tuned again and replaced. */
	char cmd[600];
	snprintf(cmd, sizeof cmd, "for f in '%s'/*.blkt; do truncate -s 40 \"$f\"; done", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tune_once(rt, "B=128;B=32", 2, &r), 7);
	assert_int_equal(tune_once(rt, "B=128;B=32", 2, &r), 1);
	blk_runtime_destroy(rt);
	dlclose(lib);
}

/* $BLK_DUMP_DIR: a compile leaves the key, the passes' IR, LLVM IR and
 * PTX; a disk-cache hit compiles nothing and dumps nothing. */
static void test_dump_dir(void **state)
{
	(void)state;
	char dumps[300];
	snprintf(dumps, sizeof dumps, "%s/dumps", dir);
	setenv("BLK_DUMP_DIR", dumps, 1);
	assert_compiled(compile_once("sm_90a", add_src, NULL, 300));
	char pattern[400], cmd[2000];
	snprintf(pattern, sizeof pattern, "%s/add-*", dumps);
	const char *exts[] = {"key", "ir", "ll", "ptx"};
	for (int i = 0; i < 4; i++) {
		snprintf(cmd, sizeof cmd, "test -s %s.%s", pattern, exts[i]);
		if (system(cmd) != 0)
			fail_msg("no %s.%s", pattern, exts[i]);
	}
	snprintf(cmd, sizeof cmd, "grep -q 'add@sm_90a(f32\\[300:1\\]' %s.key && "
	         "grep -q '.entry' %s.ptx && grep -q 'define' %s.ll && grep -q 'after' %s.ir",
	         pattern, pattern, pattern, pattern);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "rm -r '%s'", dumps);
	assert_int_equal(system(cmd), 0);
	assert_hit(compile_once("sm_90a", add_src, NULL, 300));
	assert_int_equal(access(dumps, F_OK), -1);
	unsetenv("BLK_DUMP_DIR");
}

/* Not a test of speed (that is docs/python.md's measurement), but the
 * number is printed: source to a ready specialization, warm. */
static void test_warm_time(void **state)
{
	(void)state;
	assert_compiled(compile_once("sm_90a", add_src, NULL, 4096));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 20; i++)
		assert_hit(compile_once("sm_90a", add_src, NULL, 4096));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / 20;
	printf("warm disk hit, source to PTX (runtime, program, kernel, compile): %.3f ms\n", ms);
}

#define T(f) cmocka_unit_test_setup_teardown(f, make_dir, remove_dir)

int main(void)
{
	setenv("BLK_CACHE", "0", 1); /* runtimes get a directory only from the tests */
	const struct CMUnitTest tests[] = {
		T(test_miss_then_hit), T(test_key_covers), T(test_altered), T(test_truncated),
		T(test_empty), T(test_foreign), T(test_extra), T(test_bad_launch), T(test_other_key), T(test_trim),
		T(test_switches), T(test_unwritable), T(test_two_processes), T(test_warm_time),
		T(test_tuner_results), T(test_dump_dir), T(test_tampered_fields), T(test_wrapping_lengths), T(test_fifo_entry),
		T(test_permissions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
