/* fuzz_frontend.c - libFuzzer harness: bytes -> blk_parse, or with
 * BLK_FUZZ_FULL the whole frontend (blk_compile_source).  Diagnostics go to
 * /dev/null (printing them is exercised too: the caret line reads the
 * source); each input gets a fresh arena, destroyed after, so a leak is a
 * bug in the frontend.  Built and run by tests/fuzz/run.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frontend/frontend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null_out;
	if (!null_out)
		null_out = fopen("/dev/null", "w");
	BlkArena *a = blk_arena_create();
	BlkDiag *d = blk_diag_create(a, null_out, 0);
	BlkSource *src = blk_source_from_string(a, "fuzz.blk", (const char *)data, size);
#ifdef BLK_FUZZ_FULL
	blk_compile_source(a, d, src, NULL, 0);
#else
	struct BlkAstFile *f = blk_parse(a, d, src);
	if (f)
		blk_ast_print(null_out, f);
#endif
	blk_arena_destroy(a);
	return 0;
}
