/* auto.h - values for `auto` compile-time parameters, chosen by the cost
 * model (lower/cost.c) for one launch; and the search space the tuner
 * times when it is given no candidates.  Used by the runtime and blkc. */
#ifndef BLK_AUTO_H
#define BLK_AUTO_H

#include "frontend/frontend.h"
#include "lower/lower.h"

enum { BLK_AUTO_MAX_PARAMS = 8, BLK_AUTO_MAX_VALUES = 13 };

/* One parameter of the space and the values it may take. */
typedef struct BlkAutoParam {
	const char *name;
	int n;
	int64_t v[BLK_AUTO_MAX_VALUES];
	bool sized;  /* a size (block dims, tile shapes): the first round enumerates it */
} BlkAutoParam;

typedef struct BlkAutoSpace {
	int n;
	BlkAutoParam p[BLK_AUTO_MAX_PARAMS];
} BlkAutoSpace;

/* One point of the space, ranked. */
typedef struct BlkAutoPoint {
	int64_t v[BLK_AUTO_MAX_PARAMS]; /* per space param */
	double us;                      /* the model's estimate */
	double busy_us;                 /* its compute and memory bounds summed: breaks ties */
	int regs;                       /* registers a thread: breaks what ties remain */
} BlkAutoPoint;

/* The choice for one launch. */
typedef struct BlkAutoChoice {
	char text[256];   /* "BM=128,BN=256,BK=64,num_warps=8,num_stages=3" */
	BlkCost cost;     /* the model's estimate of it, lowered through every IR pass */
	int ranked;       /* points the first round ranked (tile level, resources guessed) */
	int lowered;      /* finalists the second round lowered */
} BlkAutoChoice;

/* k has a parameter still `auto`. */
bool blk_auto_any(const BlkKernel *k);

/* The space of k's parameters: every `auto` one; with every_int, also
 * every int parameter not named in fixed[nfixed] that the kernel uses as
 * a size, and num_warps and num_stages (the tuner's search when it has no
 * candidates).  False (nothing to search) when the space is empty. */
bool blk_auto_space(const BlkKernel *k, bool every_int, const BlkDefine *fixed, int nfixed,
                    BlkAutoSpace *out);

/* Ranks the space for one launch of kernel k (compiled from src with
 * defs): the best npoints points by the model, cheapest first, in pts;
 * returns how many (0, with the first point's error in d, when none
 * lowers). */
int blk_auto_rank(const BlkSource *src, const BlkDefine *defs, int ndefs, const BlkKernel *k,
                  const BlkAutoSpace *sp, const int64_t *sizes, const BlkArrayDesc *arrays,
                  const BlkLowerOptions *opt, BlkDiag *d, BlkAutoPoint *pts, int npoints,
                  BlkAutoChoice *info);

/* The defines of point pt: defs without the space's names, then the
 * point's values; into a (count in *n). */
BlkDefine *blk_auto_defines(BlkArena *a, const BlkDefine *defs, int ndefs, const BlkAutoSpace *sp,
                            const BlkAutoPoint *pt, int *n);

/* "NAME=V,NAME=V" for point pt, into buf. */
void blk_auto_point_text(const BlkAutoSpace *sp, const BlkAutoPoint *pt, char *buf, size_t len);

/* Chooses k's `auto` values for these sizes and returns the module
 * compiled with them, in a, which holds a kernel of k's name (NULL, the
 * error in d, when no value lowers). */
BlkModule *blk_auto_choose(BlkArena *a, BlkDiag *d, const BlkSource *src,
                                 const BlkDefine *defs, int ndefs, const BlkKernel *k,
                                 const int64_t *sizes, const BlkArrayDesc *arrays,
                                 const BlkLowerOptions *opt, BlkAutoChoice *out);

#endif
