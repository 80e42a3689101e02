/* dump.c - frontend-dump tokens|ast FILE: the token or AST dump of a file,
 * for the golden FileCheck tests (until blkc --emit=tokens|ast exists).
 * Exit status 1 when a diagnostic was reported. */
#include <stdio.h>
#include <string.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "tokens") != 0 && strcmp(argv[1], "ast") != 0)) {
		fprintf(stderr, "usage: frontend-dump tokens|ast FILE\n");
		return 2;
	}
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, stderr, 0);
	BlkSource *src = blk_source_read(a, d, argv[2]);
	bool ok = false;
	if (src && strcmp(argv[1], "tokens") == 0) {
		ok = blk_lex_dump(stdout, src, d);
	} else if (src) {
		BlkAstFile *f = blk_parse(a, d, src);
		if (f)
			blk_ast_print(stdout, f);
		ok = f != NULL;
	}
	blk_arena_destroy(a);
	return ok ? 0 : 1;
}
