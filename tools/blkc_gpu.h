/* blkc_gpu.h - `blkc run` on the GPU, checked against the interpreter. */
#ifndef BLKC_GPU_H
#define BLKC_GPU_H

#include "blkc.h"
#include "tools/hostdata.h"

/* Runs k on GPU 0 with the host arrays as inputs, leaves the GPU's outputs
 * in host[], and (unless --no-check) compares them with the interpreter's
 * on the same inputs.  Prints the max relative error and the median time. */
bool blkc_run_gpu(const BlkcOptions *o, const BlkKernel *k, const int64_t *sizes,
                  const BlkArrayDesc *descs, BlkHostArray **host, int n, BlkDiag *d);

#endif
