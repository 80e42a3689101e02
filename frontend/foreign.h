/* foreign.h - the module names of Pallas, Triton, JAX and numpy code
 * (`tl.arange`, `jnp.inf`, `pl.ds`), which blk writes bare: the parser and
 * the checker name the blk spelling when they meet one. */
#ifndef BLK_FRONTEND_FOREIGN_H
#define BLK_FRONTEND_FOREIGN_H

#include <stdbool.h>
#include <string.h>

static inline bool blk_foreign_module(const char *name)
{
	static const char *const modules[] = { "tl", "pl", "jnp", "np", "jax", "lax", "triton",
		                                   "pltpu", "plgpu", "math", "torch" };
	for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
		if (strcmp(modules[i], name) == 0)
			return true;
	return false;
}

#endif
