#!/usr/bin/env python3
"""bench_configs.py - blk's matmul at the block configs a Triton user writes
by habit, against cuBLAS in the same process, measured as a user measures:
the blk package on torch CUDA tensors, outputs preallocated, each result
checked against torch first, then triton.testing.do_bench (L2 flushed,
median).  Rows: x @ W.T (matmul_nt.blk) and x @ W (matmul.blk), bf16, at
each config of the habit list that issue 25 measured Triton's tutorial
kernel at (64x64x32 on 4 warps, 2 stages, to 256x128x64 on 8 warps).

    BLK_LIBRARY=build/libblk-private.so PYTHONPATH=python python3 tools/bench_configs.py [EXAMPLES_DIR] [M,N,K]

Prints one markdown table (cuBLAS ms / blk ms: above 1, blk is faster).
Needs torch and triton; exits 0 with a line where there is no GPU.
"""
import os
import sys

from user_timing import bench, torch_or_exit

torch = torch_or_exit("bench_configs")

import blk  # noqa: E402

HABITS = ((64, 64, 32, 4, 2), (64, 64, 32, 4, 3), (128, 128, 32, 4, 3), (128, 128, 32, 8, 3),
          (128, 128, 64, 4, 4), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 128, 32, 4, 4),
          (128, 64, 32, 4, 4), (256, 128, 64, 8, 3))



def main():
    ex = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "examples")
    M, N, K = (int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "4096,4096,4096").split(","))
    dev = torch.device("cuda")
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    w_nk = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
    w_kn = w_nk.T.contiguous()
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    ref = (x.float() @ w_kn.float())
    cub = {"nt": bench(lambda: x @ w_nk.T), "nn": bench(lambda: x @ w_kn)}
    rows, ok = [], True
    for cfg in HABITS:
        kw = dict(zip(("BM", "BN", "BK", "num_warps", "num_stages"), cfg))
        out = []
        for kind, src, w in (("nt", "matmul_nt", w_nk), ("nn", "matmul", w_kn)):
            k = blk.kernel(f"{ex}/{src}.blk", T="bf16", **kw)
            k(x, w, c)
            torch.cuda.synchronize()
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            ok = ok and err < 2e-2
            out.append((bench(lambda: k(x, w, c)), err))
        rows.append((cfg, out))
        print(cfg, out, flush=True)
    print(f"\n{torch.cuda.get_device_name()}, blk {blk.__version__}, bf16 {M}x{N}x{K}; "
          f"cuBLAS x @ W.T {cub['nt']:.4f} ms, x @ W {cub['nn']:.4f} ms\n")
    print("| BM×BN×BK, warps, stages | x @ W.T ms | cuBLAS/blk | x @ W ms | cuBLAS/blk |")
    print("| --- | --- | --- | --- | --- |")
    for cfg, ((nt, _), (nn, _)) in rows:
        print(f"| {cfg[0]}×{cfg[1]}×{cfg[2]}, {cfg[3]}, {cfg[4]} | {nt:.4f} | {cub['nt'] / nt:.2f} | "
              f"{nn:.4f} | {cub['nn'] / nn:.2f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
