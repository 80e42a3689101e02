/* interp.h - the IR interpreter, the oracle for GPU results (interp.c).
 *
 * It runs a verified kernel of the tile level on the CPU, element by
 * element, with the semantics of docs/language.md.  Built on ir/ alone;
 * libblk's host API (runtime/host.c), blkc run and the GPU tests call it.
 */
#ifndef BLK_INTERP_API_H
#define BLK_INTERP_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"

/* Runs k over its whole grid on the CPU.  arrays/data: one per non-scratch
 * param in param order, data in the array's dtype (f16/bf16 as uint16_t,
 * bool as uint8_t).  Debug prints go to print_out (NULL: stdout).  Errors
 * (bad arguments, a failed check at run time) go to d; false if any. */
bool blk_interp_run(const BlkKernel *k, const BlkArrayDesc *arrays, void *const *data,
                    int narrays, FILE *print_out, BlkDiag *d);
/* The same, stopping with an "interrupted" error once *stop is set (by
 * another thread or a signal handler): it is read before each program and
 * each loop iteration, so a run of 2^31 steps can be cut short. */
bool blk_interp_run_until(const BlkKernel *k, const BlkArrayDesc *arrays, void *const *data,
                          int narrays, FILE *print_out, BlkDiag *d, const atomic_bool *stop);

/* A world of nranks ranks (docs/language.md, "Several GPUs"), one thread
 * each: arrays[r] and data[r] are rank r's arrays, as for blk_interp_run.
 * A symmetric param's array must have one shape, dtype and layout on every
 * rank; peer Refs reach the other ranks' arrays and signals pass between
 * them.  A deadlock (every rank still running waits for a signal no running
 * rank can send) is an error at each waiting signal_wait, not a hang.
 * nranks is 1 to BLK_INTERP_MAX_RANKS. */
#define BLK_INTERP_MAX_RANKS 64
bool blk_interp_run_world(const BlkKernel *k, int nranks, const BlkArrayDesc *const *arrays,
                          void *const *const *data, int narrays, FILE *print_out, BlkDiag *d,
                          const atomic_bool *stop);

#endif
