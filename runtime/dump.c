/* dump.c - $BLK_DUMP_DIR: every JIT compile's stages, on disk.
 *
 * With BLK_DUMP_DIR set, each specialization the runtime compiles (not the
 * ones found in a cache) leaves four files in that directory, named
 * KERNEL-HASH (HASH: of the compile cache's key, so one specialization
 * always gets one name):
 *   .key   the key: kernel, arch, every array's dtype, shape and strides
 *   .ir    the IR after every lowering pass (what blkc --dump-after=all prints)
 *   .ll    the LLVM IR
 *   .ptx   the PTX
 * Best effort: a directory that cannot be written costs the dumps, never
 * the compile.
 */
#include "rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool blk_dump_begin(BlkDump *dm, const char *kernel, const char *key, BlkLowerOptions *opt)
{
	const char *dir = getenv("BLK_DUMP_DIR");
	memset(dm, 0, sizeof *dm);
	if (!dir || !*dir || (mkdir(dir, 0755) != 0 && errno != EEXIST))
		return false;
	snprintf(dm->base, sizeof dm->base, "%s/%s-%016llx", dir, kernel,
	         (unsigned long long)blk_cache_hash(key));
	char path[4200];
	snprintf(path, sizeof path, "%s.key", dm->base);
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", key);
		fclose(f);
	}
	snprintf(path, sizeof path, "%s.ir", dm->base);
	dm->ir = fopen(path, "w");
	if (dm->ir) {
		opt->dump_after = "all";
		opt->dump_out = dm->ir;
	}
	opt->want_llvm = true;
	return true;
}

static void write_text(const char *base, const char *ext, const char *text)
{
	char path[4200];
	snprintf(path, sizeof path, "%s.%s", base, ext);
	FILE *f = text ? fopen(path, "w") : NULL;
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

void blk_dump_end(BlkDump *dm, const BlkCompiled *c, bool ok)
{
	if (dm->ir)
		fclose(dm->ir);
	dm->ir = NULL;
	if (!ok || !dm->base[0])
		return;
	write_text(dm->base, "ll", c->llvm_ir);
	write_text(dm->base, "ptx", c->ptx);
}
