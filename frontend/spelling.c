/* spelling.c - the blk spelling of what Pallas, Triton, JAX and numpy
 * users write by habit, for the checker's messages about unknown names,
 * functions, attributes and methods: `tl.arange(0, B)` gets "write
 * `iota(n)`" rather than a bare "unknown".  Only spellings blk refuses are
 * listed; one blk itself accepts never reaches here.
 */
#include <string.h>

#include "frontend/check_impl.h"
#include "frontend/foreign.h"

static const struct {
	const char *foreign, *blk;
} spellings[] = {
	{ "arange", "iota(n)" },
	{ "maximum", "max(a, b)" },
	{ "clip", "clamp(x, lo, hi)" },
	{ "swish", "silu(x)" },
	{ "cat", "concatenate((a, b), axis = k)" },
	{ "join", "stack((a, b), axis = -1)" },
	{ "minimum", "min(a, b)" },
	{ "matmul", "dot(a, b) or a @ b" },
	{ "power", "x ** y or pow(x, y)" },
	{ "store", "r[...] = v (or r.at[...] for a part)" },
	{ "dslice", "ds(start, size)" },
	{ "run_scoped", "scoped (name: dtype[shape]) { ... }" },
	{ "broadcast_to", "nothing: operands broadcast as NumPy's" },
	{ "newaxis", "None in an index: x[:, None]" },
	{ "mean", "sum(x, axis = k) / n" },
	{ "associative_scan", "cumsum, cumprod, cummax or cummin(x, axis = k)" },
	{ "cumulative_sum", "cumsum(x, axis = k)" },
	{ "cumulative_prod", "cumprod(x, axis = k)" },
	{ "float32", "f32" },
	{ "float16", "f16" },
	{ "bfloat16", "bf16" },
	{ "int32", "i32" },
	{ "int8", "i8" },
	{ "uint8", "u8" },
	{ "uint32", "u32" },
	{ "float8_e4m3fn", "f8e4m3" },
	{ "float8e4nv", "f8e4m3" },
	{ "float8_e5m2", "f8e5m2" },
	{ "float8e5", "f8e5m2" },
	{ "bool_", "bool" },
	{ "cast", "x.astype(T)" },
	{ "to", "x.astype(T)" },
	{ "trans", "x.T or transpose(x)" },
	{ "True", "true" },
	{ "False", "false" },
	{ "broadcasted_iota", "iota(n)[:, None] or iota(n)[None, :] (iota is 1-D; it broadcasts)" },
	{ "multiple_of", "nothing: blk sees which accesses are contiguous and aligned" },
	{ "max_contiguous", "nothing: blk sees which accesses are contiguous and aligned" },
	{ "next_power_of_2", "a compile-time parameter (BLOCK = 1024, or BLOCK = auto)" },
	{ "reduce", "sum, max, min, argmax(x, axis = k) or associative_scan(fn, x, axis = k)" },
	{ "zeros_like", "zeros((BM, BN), T): the shape as a tuple of dims" },
	{ "dot_general", "dot(a, b) with transpose(...) for the contracted dims" },
	{ "einsum", "dot(a, b) (batched: a 3-D dot) with transpose(...)" },
};


const char *blk_ck_spelling(Ck *c, const char *name)
{
	for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
		if (strcmp(spellings[i].foreign, name) == 0)
			return spellings[i].blk;
	if (blk_ck_is_builtin(name))
		return blk_arena_printf(c->a, "%s(...)", name);
	return NULL;
}

bool blk_ck_foreign_module(const char *name)
{
	return blk_foreign_module(name);
}

/* `mod.name` where mod is a foreign module nothing in scope names. */
bool blk_ck_foreign_qualified(Ck *c, const BlkAstExpr *recv, const char *name, BlkLoc loc)
{
	if (recv->kind != BLK_AST_NAME || !blk_ck_foreign_module(recv->name) || blk_ck_lookup(c, recv->name))
		return false;
	const char *blk = blk_ck_spelling(c, name);
	if (blk)
		blk_error(c->d, loc, "`%s.%s` is not blk; write `%s`", recv->name, name, blk);
	else
		blk_error(c->d, loc, "`%s.%s` is not blk, which has no modules: builtins are called bare, as `exp(x)`",
		          recv->name, name);
	return true;
}
