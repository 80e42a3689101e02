/* frontend.h - .blk source to IR: lex, parse, check, lower, verify. */
#ifndef BLK_FRONTEND_H
#define BLK_FRONTEND_H

#include <stdio.h>

#include "ir/ir.h"

struct BlkAstFile; /* frontend/ast.h */

/* A compile-time parameter override, as given by `blkc -D NAME=VALUE` or the
 * runtime.  value is source text: "128", "1.5", "true", "bf16". */
typedef struct BlkDefine {
	const char *name;
	const char *value;
} BlkDefine;

/* Prints one token per line ("LINE:COL KIND 'text'"); false on a lexical error. */
bool blk_lex_dump(FILE *out, const BlkSource *src, BlkDiag *d);
/* NULL if there were syntax errors (all reported through d). */
struct BlkAstFile *blk_parse(BlkArena *a, BlkDiag *d, const BlkSource *src);
void blk_ast_print(FILE *out, const struct BlkAstFile *f);

/* The whole frontend: parse, apply defines, check, lower to IR and verify.
 * A define that names no compile-time parameter of any kernel is an error.
 * Returns NULL if any error was reported. */
BlkModule *blk_compile_source(BlkArena *a, BlkDiag *d, const BlkSource *src,
                              const BlkDefine *defines, int ndefines);

#endif
