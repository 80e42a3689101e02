/* test_examples.c - every example through the frontend, then
 * print -> parse -> print: the two texts must be equal and both modules
 * must verify.  Usage: test_examples FILE.blk... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

static char *module_text(const BlkModule *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	blk_ir_print_module(f, m);
	fclose(f);
	return buf;
}

static bool roundtrip(const char *path)
{
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 0);
	BlkSource *src = blk_source_read(a, d, path);
	BlkModule *m = src ? blk_compile_source(a, d, src, NULL, 0) : NULL;
	bool ok = false;
	if (m && blk_ir_verify(m, d, "frontend")) {
		char *s1 = module_text(m);
		BlkSource *ir = blk_source_from_string(a, path, s1, strlen(s1));
		BlkModule *m2 = blk_ir_parse(a, d, ir);
		char *s2 = m2 && blk_ir_verify(m2, d, "parse") ? module_text(m2) : NULL;
		ok = s2 && strcmp(s1, s2) == 0;
		if (!ok)
			fprintf(stderr, "%s: round trip differs:\n--- printed\n%s--- reparsed\n%s", path, s1,
			        s2 ? s2 : "(none)\n");
		free(s1);
		free(s2);
	}
	blk_arena_destroy(a);
	printf("%s %s\n", ok ? "ok" : "FAIL", path);
	return ok;
}

int main(int argc, char **argv)
{
	int bad = 0;
	for (int i = 1; i < argc; i++)
		bad += !roundtrip(argv[i]);
	return bad ? 1 : 0;
}
