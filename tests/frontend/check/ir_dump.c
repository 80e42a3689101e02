/* ir_dump.c - `ir-dump FILE [-D NAME=VALUE]...`: runs the whole frontend
 * (blk_compile_source) and prints the module's IR, for the golden tests.
 * Exits 1 with the diagnostics on stderr if the file does not compile. */
#include <stdio.h>
#include <string.h>

#include "frontend/frontend.h"

int main(int argc, char **argv)
{
	BlkDefine defs[64];
	int ndefs = 0;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "-D") == 0 && i + 1 < argc)
			arg = argv[++i];
		else if (strncmp(arg, "-D", 2) == 0)
			arg += 2;
		else {
			path = arg;
			continue;
		}
		char *eq = strchr(arg, '=');
		if (!eq || ndefs == 64) {
			fprintf(stderr, "ir-dump: bad define '%s'\n", arg);
			return 2;
		}
		*eq = '\0';
		defs[ndefs++] = (BlkDefine){ arg, eq + 1 };
	}
	if (!path) {
		fprintf(stderr, "usage: ir-dump FILE [-D NAME=VALUE]...\n");
		return 2;
	}
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 0);
	BlkSource *src = blk_source_read(a, d, path);
	BlkModule *m = src ? blk_compile_source(a, d, src, defs, ndefs) : NULL;
	if (m)
		blk_ir_print_module(stdout, m);
	blk_arena_destroy(a);
	return m ? 0 : 1;
}
