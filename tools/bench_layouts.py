#!/usr/bin/env python3
"""bench_layouts.py - matmul.blk on operands as a training step hands them
over, against torch.matmul (cuBLAS) on the same tensors, measured as a user
measures: the blk package on torch CUDA tensors, outputs preallocated,
checked against torch first, then triton.testing.do_bench (L2 flushed,
median) for both in the same process.

Rows (bf16): the weight gradient dW = dy.T @ x (A a transposed view), the
input gradient dx = dy @ W (both row-major), the forward x @ W.T through
matmul.blk (B a transposed view), and both operands transposed; each at a
fixed config (128x256x64, 8 warps, 3 stages), through blk.autotune with
no configs (blk's own search space), and at a config a Triton user writes
by habit (128x128x32, 4 warps, 3 stages: several programs an SM, each
pipelining its own cp.async copies).  Then bmm.blk against torch.bmm on
batches of [B, M, K] x [B, K, N], row-major and with A's matrices
transposed.

    BLK_LIBRARY=build/libblk-private.so PYTHONPATH=python python3 tools/bench_layouts.py [EXAMPLES_DIR]

ONLY=bmm (or a comma list of row names' starts: dW, dx, x, A, bmm) runs
those rows alone.  Prints one markdown table (ratio = cuBLAS ms / blk ms: above 1, blk is
faster).  Needs torch and triton; exits 0 with a line where there is no GPU.
"""
import os
import sys

from user_timing import bench, torch_or_exit

torch = torch_or_exit("bench_layouts")

import blk  # noqa: E402

EX = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "examples")
FIXED = dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=3)
HABIT = dict(BM=128, BN=128, BK=32, num_warps=4, num_stages=3)  # a Triton user's habit: the plain pipeline
dev = torch.device("cuda")
ONLY = [w for w in os.environ.get("ONLY", "").split(",") if w]


def want(name):
    return not ONLY or any(name.startswith(w) for w in ONLY)


def operands(layout, M, N, K):
    """A [M, K] and B [K, N] as the layout says ("T": a transposed view)."""
    a = torch.randn(K, M, device=dev, dtype=torch.bfloat16).T if layout[0] == "T" else \
        torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    b = torch.randn(N, K, device=dev, dtype=torch.bfloat16).T if layout[1] == "T" else \
        torch.randn(K, N, device=dev, dtype=torch.bfloat16)
    return a, b


def main():
    rows = []
    cases = (("dW = dy.T @ x", "TN", 1024, 3072, 8192), ("dW = dy.T @ x", "TN", 4096, 4096, 8192),
             ("dW = dy.T @ x", "TN", 4096, 14336, 8192),
             ("dx = dy @ W", "NN", 8192, 1024, 3072), ("x @ W.T", "NT", 8192, 3072, 1024),
             ("x @ W.T", "NT", 4096, 4096, 4096), ("A.T @ B.T", "TT", 4096, 4096, 4096))
    fixed = blk.kernel(f"{EX}/matmul.blk", T="bf16", **FIXED)
    habit = blk.kernel(f"{EX}/matmul.blk", T="bf16", **HABIT)
    tuned = blk.autotune(f"{EX}/matmul.blk", key=["M", "N", "K"], T="bf16")
    for name, layout, M, N, K in cases:
        if not want(name):
            continue
        a, b = operands(layout, M, N, K)
        c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        ref = torch.matmul(a, b)
        ref_ms = bench(lambda: torch.matmul(a, b))
        for how, k in (("fixed", fixed), ("autotune", tuned), ("128x128x32 w4 s3", habit)):
            k(a, b, c)
            torch.cuda.synchronize()
            err = ((c.float() - ref.float()).abs().max() / (ref.float().abs().max() + 1e-6)).item()
            ms = bench(lambda: k(a, b, c))
            note = f"best {tuned.best(a, b)}" if how == "autotune" else ""
            rows.append((name, layout, f"{M}x{N}x{K}", how, ms, ref_ms, err, note))
            print(rows[-1], flush=True)
    bmm_fixed = blk.kernel(f"{EX}/bmm.blk", T="bf16", **FIXED)
    bmm_tuned = blk.autotune(f"{EX}/bmm.blk", key=["Bt", "M", "N", "K"], T="bf16")
    for layout, B, M, N, K in (("NN", 32, 1024, 1024, 1024), ("NN", 8, 4096, 4096, 512),
                               ("TN", 32, 1024, 1024, 1024)):
        if not want("bmm"):
            break
        a = torch.randn(B, K, M, device=dev, dtype=torch.bfloat16).transpose(1, 2) if layout[0] == "T" else \
            torch.randn(B, M, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(B, K, N, device=dev, dtype=torch.bfloat16)
        c = torch.empty(B, M, N, device=dev, dtype=torch.bfloat16)
        ref = torch.bmm(a, b)
        ref_ms = bench(lambda: torch.bmm(a, b))
        for how, k in (("fixed", bmm_fixed), ("autotune", bmm_tuned)):
            k(a, b, c)
            torch.cuda.synchronize()
            err = ((c.float() - ref.float()).abs().max() / (ref.float().abs().max() + 1e-6)).item()
            ms = bench(lambda: k(a, b, c))
            note = f"best {bmm_tuned.best(a, b)}" if how == "autotune" else ""
            rows.append(("bmm", layout, f"{B}x{M}x{N}x{K}", how, ms, ref_ms, err, note))
            print(rows[-1], flush=True)
    print(f"\n{torch.cuda.get_device_name()}, blk {blk.__version__}, torch {torch.__version__}\n")
    print("| row | layout | (B x) MxNxK | blk config | blk ms | cuBLAS ms | cuBLAS/blk | max rel err | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, layout, shape, how, ms, ref_ms, err, note in rows:
        print(f"| {name} | {layout} | {shape} | {how} | {ms:.4f} | {ref_ms:.4f} | {ref_ms / ms:.3f} | {err:.1e} | {note} |")
    return 0 if all(r[6] < 2e-2 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
