"""bench_quant.py - quantized linear layers as a user measures them: the blk
package on torch tensors, do_bench with L2 flushed (median), each result
checked against torch first, the reference in the same process.

    BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python:tools python3 tools/bench_quant.py

Rows: examples/matmul_w4a16.blk (GPTQ's int4 packing) and
python/tests/quant.blk's spellings against a bf16 cuBLAS GEMM of the same
FLOPs (`x @ W`, W dequantized ahead) and against torch dequantizing then
multiplying; at decode sizes (M <= 16) the packed weights' bytes over the
time, GB/s.  Block-scaled fp8 against `torch._scaled_mm` with row-wise
scales (torch's block-wise path where it has one)."""
import os
import sys

from user_timing import bench, torch_or_exit

torch = torch_or_exit("bench_quant")
import blk  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "examples")
Q = os.path.join(ROOT, "python", "tests", "quant.blk")
DEV = "cuda"
G = 128


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / (b.float().abs().max() + 1e-6)).item()


def w4(M, N, K):
    x = torch.randn(M, K, device=DEV, dtype=torch.bfloat16)
    q = torch.randint(0, 16, (K, N), device=DEV, dtype=torch.int32)
    s = (torch.rand(K // G, N, device=DEV) * 0.02 + 0.01).to(torch.bfloat16)
    packed = torch.zeros(K // 8, N, device=DEV, dtype=torch.int32)
    for t in range(8):
        packed |= q[t::8] << (4 * t)
    qt = q.t().contiguous()
    u8 = (qt[:, 0::2] | (qt[:, 1::2] << 4)).to(torch.uint8)
    return x, q, s, packed, u8


def main():
    torch.manual_seed(0)
    rows, ok = [], True
    big = dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    dec = dict(BM=16, BN=64, BK=128, num_warps=4, num_stages=4)
    for (M, N, K) in ((4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 1024), (16, 4096, 4096),
                      (1, 14336, 4096)):
        x, q, s, packed, u8 = w4(M, N, K)
        wdeq = (q - 8).to(torch.bfloat16) * s.repeat_interleave(G, 0)
        want = x.float() @ wdeq.float()
        shifts = 4 * torch.arange(8, device=DEV)[None, :, None]
        ref_mm = bench(lambda: x @ wdeq)
        ref_deq = bench(lambda: x @ ((((packed[:, None, :] >> shifts) & 15).reshape(K, N) - 8).to(torch.bfloat16)
                                     * s.repeat_interleave(G, 0)))
        cands = [("matmul_w4a16 auto", blk.kernel(f"{EX}/matmul_w4a16.blk", T="bf16"), (x, packed, s)),
                 ("matmul_w4a16 given", blk.kernel(f"{EX}/matmul_w4a16.blk", T="bf16", **(dec if M <= 16 else big)),
                  (x, packed, s)),
                 ("w4_rowscale", blk.kernel(Q, name="w4_rowscale", **(dec if M <= 16 else big)),
                  (x, packed, s.float())),
                 ("w4_u8", blk.kernel(Q, name="w4_u8", **(dec if M <= 16 else big)),
                  (x, u8, s.float().t().contiguous()))]
        for name, k, args in cands:
            y = k(*args)
            err = rel(y, want)
            ok = ok and err < 2e-2
            ms = bench(lambda: k(*args))
            rows.append((name, f"{M}x{N}x{K}", ms, ref_mm / ms, ref_deq / ms, N * K / 2 / ms / 1e6, err))
            print(rows[-1], flush=True)
    for (M, N, K) in ((4096, 4096, 4096), (8192, 8192, 8192)):
        x = torch.randn(M, K, device=DEV).to(torch.float8_e4m3fn)
        w = torch.randn(N, K, device=DEV).to(torch.float8_e4m3fn)
        sx = torch.rand(M, K // 128, device=DEV) + 0.5
        sw = torch.rand(N // 128, K // 128, device=DEV) + 0.5
        want = (x.float() * sx.repeat_interleave(128, 1)) @ \
            (w.float() * sw.repeat_interleave(128, 0).repeat_interleave(128, 1)).t()
        one, onen = torch.ones(M, 1, device=DEV), torch.ones(1, N, device=DEV)
        ref = bench(lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=onen, out_dtype=torch.bfloat16))
        k = blk.kernel(Q, name="fp8_blockwise")
        y = k(x, w, sx, sw)
        err = rel(y, want)
        ok = ok and err < 2e-2
        ms = bench(lambda: k(x, w, sx, sw))
        rows.append(("fp8_blockwise", f"{M}x{N}x{K}", ms, ref / ms, float("nan"), 0.0, err))
        print(rows[-1], flush=True)
    print(f"\n{torch.cuda.get_device_name()}, blk {blk.__version__}, torch {torch.__version__}\n")
    print("| kernel | M×N×K | blk ms | ref GEMM/blk | torch deq+mm/blk | packed GB/s | max rel err |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, shape, ms, a, b, gbs, err in rows:
        print(f"| {name} | {shape} | {ms:.4f} | {a:.2f} | {b:.2f} | {gbs:.0f} | {err:.1e} |")
    print("(ref GEMM: bf16 cuBLAS `x @ W` for int4 rows; `_scaled_mm` row-wise fp8 for fp8 rows)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
