"""Exact f32 matmul: blk against torch.matmul (cuBLAS, TF32 off) in one process.

blk-bench times cuBLAS through its own cublasGemmEx call; a user of torch
would call torch.matmul, whose cuBLAS path (and the card's clock at that
moment) may differ.  This times both on the same torch tensors, in
alternating rounds of `--calls` back-to-back launches, and prints the
median time a call of each and their ratio.  Results are checked first
(blk's exact FMAs against torch's, relative Frobenius error).

  BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python \
      python3 tools/bench_f32.py [--sizes 2048,4096,8192] [--config BM=128,...]
"""
import argparse
import os
import statistics
import sys

import torch

import blk

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.environ.get("BLK_EXAMPLES_DIR", os.path.join(HERE, "..", "examples"))


def per_call_ms(fn, calls):
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(calls):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2048,4096,8192")
    ap.add_argument("--config", default="BM=128,BN=256,BK=32,num_warps=8,num_stages=3")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=5)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    cfg = {k: int(v) for k, v in (kv.split("=") for kv in a.config.split(","))}
    mm = blk.kernel(os.path.join(EXAMPLES, "matmul.blk"), T="f32", **cfg)
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  blk {a.config}")
    print("| size | blk ms | torch.matmul ms | blk / torch | rel. error |")
    print("| --- | --- | --- | --- | --- |")
    ok = True
    for n in (int(s) for s in a.sizes.split(",")):
        x = torch.randn(n, n, device="cuda")
        y = torch.randn(n, n, device="cuda")
        want = x @ y
        got = mm(x, y)
        err = ((got - want).norm() / want.norm()).item()
        if not err < 1e-5:
            print(f"| {n}³ | result differs from torch: {err:.2e} |")
            ok = False
            continue
        out = torch.empty_like(want)
        tb, tt = [], []
        for _ in range(a.rounds):
            tb.append(per_call_ms(lambda: mm(x, y), a.calls))
            tt.append(per_call_ms(lambda: torch.matmul(x, y, out=out), a.calls))
        b, t = statistics.median(tb), statistics.median(tt)
        print(f"| {n}³ | {b:.3f} | {t:.3f} | {t / b:.2f} | {err:.1e} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
