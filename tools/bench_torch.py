#!/usr/bin/env python3
"""bench_torch.py - the torch ops a user would call for what blk-bench's
newer rows compute, timed the same way, printed as markdown tables:
scaled_dot_product_attention (bf16, BH=32, S=4096, D=64 and 128, causal and
not), layer_norm and rms_norm (bf16, 16384x4096), column sums
(x.sum(0), f32, 8192x8192), row prefix sums (x.cumsum(1), f32,
16384x4096), an embedding lookup (F.embedding, 65536 rows of 1024 f32
from 32768), with torch's own device-to-device copy as the
bandwidth yardstick, and a grouped (MoE) matmul (a torch.mm per group,
torch._grouped_mm where it exists, and one dense torch.mm of the same FLOPs),
an int8 matmul (torch._int_mm) and an fp8 one (torch._scaled_mm).

Method, as blk-bench's: warm-up, then the median of per-call CUDA-event
timings (reps shrink when one call is slow).  Attention TFLOP/s count
4*BH*S^2*D, half with the causal mask; bandwidth counts the bytes read and
written once.  Prints a line and exits 0 where there is no torch or no GPU.

    python3 tools/bench_torch.py [--budget-ms N]
"""
import argparse
import statistics
import sys

MAX_REPS, MIN_REPS, WARMUP = 20, 5, 3


def time_ms(torch, fn, budget_ms):
    """Median ms of per-call event timings after warm-up."""
    for _ in range(WARMUP):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    torch.cuda.synchronize()
    first = start.elapsed_time(stop)
    reps = MAX_REPS
    if first * MAX_REPS > budget_ms:
        reps = max(MIN_REPS, int(budget_ms / max(first, 1e-3)))
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times), reps


def attention_table(torch, budget_ms):
    """SDPA at blk-bench's attention shapes (q, k, v as [1, BH, S, D])."""
    F = torch.nn.functional
    print("| op | type | BH x S x D | causal | ms | TFLOP/s | reps |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    bh, s = 32, 4096
    for d in (64, 128):
        for causal in (False, True):
            gen = torch.Generator(device="cuda").manual_seed(d)
            q, k, v = (torch.rand((1, bh, s, d), device="cuda", generator=gen,
                                  dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
                       for _ in range(3))
            try:
                ms, reps = time_ms(torch, lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal), budget_ms)
            except RuntimeError as e:  # an unsupported shape or backend
                print(f"| sdpa | bf16 | {bh}x{s}x{d} | {'yes' if causal else 'no'} "
                      f"| failed: {str(e).splitlines()[0]} | | |")
                continue
            flops = 4.0 * bh * s * s * d * (0.5 if causal else 1.0)
            print(f"| sdpa | bf16 | {bh}x{s}x{d} | {'yes' if causal else 'no'} | {ms:.3f} "
                  f"| {flops / ms / 1e9:.1f} | {reps} |")
            del q, k, v


def bandwidth_table(torch, budget_ms):
    """Copy, layer_norm, rms_norm, column sums, cumsum, embedding: GB/s and % of the copy."""
    F = torch.nn.functional
    print("| op | size | ms | GB/s | of copy | reps |")
    print("| --- | --- | --- | --- | --- | --- |")
    n = 1 << 28  # 1 GiB of f32, as blk-bench's copy
    src = torch.empty(n, device="cuda", dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    ms, reps = time_ms(torch, lambda: dst.copy_(src), budget_ms)
    copy_gbs = 2.0 * n * 4 / ms / 1e6
    print(f"| D2D copy | 1 GiB | {ms:.3f} | {copy_gbs:.0f} | 100.0% | {reps} |")
    del src, dst

    def row(name, size, fn, nbytes):
        try:
            ms, reps = time_ms(torch, fn, budget_ms)
        except (RuntimeError, AttributeError) as e:
            print(f"| {name} | {size} | failed: {str(e).splitlines()[0]} | | | |")
            return
        gbs = nbytes / ms / 1e6
        print(f"| {name} | {size} | {ms:.3f} | {gbs:.0f} | {100 * gbs / copy_gbs:.1f}% | {reps} |")

    r, c = 16384, 4096
    x = torch.rand((r, c), device="cuda").mul_(2).sub_(1).to(torch.bfloat16)
    w = torch.rand(c, device="cuda").to(torch.bfloat16)
    b = torch.rand(c, device="cuda").to(torch.bfloat16)
    io = 2.0 * r * c * 2
    row("layer_norm", f"{r}x{c} bf16", lambda: F.layer_norm(x, (c,), w, b, eps=1e-5),
        io + 2 * c * 2)
    if hasattr(F, "rms_norm"):
        row("rms_norm", f"{r}x{c} bf16", lambda: F.rms_norm(x, (c,), w, eps=1e-6), io + c * 2)
    else:
        print(f"| rms_norm | {r}x{c} bf16 | n/a (torch {torch.__version__} has no rms_norm) | | | |")
    del x, w, b
    r = c = 8192
    x = torch.rand((r, c), device="cuda").mul_(2).sub_(1)
    row("sum(0)", f"{r}x{c} f32", lambda: x.sum(0), r * c * 4.0 + c * 4)
    del x
    r, c = 16384, 4096
    x = torch.rand((r, c), device="cuda").mul_(2).sub_(1)
    row("cumsum(1)", f"{r}x{c} f32", lambda: x.cumsum(1), 2.0 * r * c * 4)
    del x
    n, v, d = 65536, 32768, 1024
    table = torch.rand((v, d), device="cuda")
    ids = torch.randint(0, v, (n,), device="cuda", dtype=torch.int32)
    row("embedding", f"{n}x{d} of {v} rows f32", lambda: F.embedding(ids, table),
        2.0 * n * d * 4 + n * 4)


def grouped_table(torch, budget_ms):
    """A mixture-of-experts matmul at blk-bench's grouped_matmul shape: 8
    groups of ragged sizes, 16384 rows in all, K = N = 4096, bf16: a loop of
    torch.mm per group, torch._grouped_mm where this torch has it, and one
    dense torch.mm of all the rows (the same FLOPs, no grouping)."""
    sizes = [1933, 2917, 1101, 2500, 811, 3100, 1709, 2313]
    m, k, n = sum(sizes), 4096, 4096
    gen = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand((m, k), device="cuda", generator=gen).mul_(2).sub_(1).to(torch.bfloat16)
    w = torch.rand((len(sizes), k, n), device="cuda", generator=gen).mul_(2).sub_(1).to(torch.bfloat16)
    offs = torch.tensor(sizes, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
    bounds = [0] + offs.tolist()
    y = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)

    def loop():
        for g in range(len(sizes)):
            torch.mm(x[bounds[g]:bounds[g + 1]], w[g], out=y[bounds[g]:bounds[g + 1]])

    rows = [("torch.mm per group", "bf16", loop),
            ("dense torch.mm (all rows, one weight)", "bf16", lambda: torch.mm(x, w[0]))]
    if hasattr(torch, "_grouped_mm"):
        rows.insert(1, ("torch._grouped_mm", "bf16", lambda: torch._grouped_mm(x, w, offs=offs)))
    ops_table(torch, budget_ms, rows, f"{m}x{n}x{k}, 8 groups", 2.0 * m * n * k, "TFLOP/s")


def ops_table(torch, budget_ms, rows, size, ops, unit):
    """Rows (name, type, fn) of one size doing `ops` operations a call."""
    print(f"| op | type | size | ms | {unit} | reps |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, ty, fn in rows:
        try:
            ms, reps = time_ms(torch, fn, budget_ms)
        except (RuntimeError, TypeError) as e:
            print(f"| {name} | {ty} | {size} | failed: {str(e).splitlines()[0]} | | |")
            continue
        print(f"| {name} | {ty} | {size} | {ms:.3f} | {ops / ms / 1e9:.1f} | {reps} |")


def int8_table(torch, budget_ms):
    """A W8A8 linear layer's matmul at 4096^3: torch._int_mm (cuBLAS int8,
    i32 out) beside the bf16 torch.mm of the same shape."""
    m = k = n = 4096
    gen = torch.Generator(device="cuda").manual_seed(8)
    x = torch.randint(-128, 128, (m, k), device="cuda", generator=gen, dtype=torch.int8)
    w = torch.randint(-128, 128, (n, k), device="cuda", generator=gen, dtype=torch.int8)
    xb, wb = x.to(torch.bfloat16), w.to(torch.bfloat16)
    rows = [("torch.mm x @ w.T", "bf16", lambda: torch.mm(xb, wb.t()))]
    if hasattr(torch, "_int_mm"):
        rows.insert(0, ("torch._int_mm x @ w.T", "i8 -> i32", lambda: torch._int_mm(x, w.t())))
    ops_table(torch, budget_ms, rows, f"{m}x{n}x{k}", 2.0 * m * n * k, "TOP/s")


def fp8_table(torch, budget_ms):
    """An FP8 linear layer's matmul at 4096^3 and 8192^3: torch._scaled_mm
    (cuBLASLt, e4m3, per-row scales, bf16 out) as examples/matmul_fp8.blk
    computes it, with cuBLAS's promoted sums and with fast accumulation."""
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        print("torch has no _scaled_mm / float8_e4m3fn: skipped")
        return
    for m in (4096, 8192):
        gen = torch.Generator(device="cuda").manual_seed(9)
        x = torch.randn((m, m), device="cuda", generator=gen).to(torch.float8_e4m3fn)
        w = torch.randn((m, m), device="cuda", generator=gen).to(torch.float8_e4m3fn)
        sx = torch.rand((m, 1), device="cuda", generator=gen)
        sw = torch.rand((1, m), device="cuda", generator=gen)
        rows = [("torch._scaled_mm x @ w.T", "e4m3 -> bf16",
                 lambda: torch._scaled_mm(x, w.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)),
                # Hopper's fast fp8 accumulation, as blk's (no promotion to f32)
                ("torch._scaled_mm x @ w.T, use_fast_accum", "e4m3 -> bf16",
                 lambda: torch._scaled_mm(x, w.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16,
                                          use_fast_accum=True))]
        ops_table(torch, budget_ms, rows, f"{m}x{m}x{m}", 2.0 * m ** 3, "TFLOP/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget-ms", type=float, default=4000,
                    help="timing budget per row (reps shrink past it)")
    ap.add_argument("--attention-only", action="store_true",
                    help="the attention table alone (as blk-bench --attention-only)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("bench_torch: skipped: no torch")
        return 0
    if not torch.cuda.is_available():
        print("bench_torch: skipped: torch sees no GPU")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}\n")
    print("torch.nn.functional.scaled_dot_product_attention (default backend choice):\n")
    attention_table(torch, args.budget_ms)
    if args.attention_only:
        return 0
    print("\ntorch layer_norm, rms_norm, x.sum(0), x.cumsum(1) and F.embedding as bandwidth:\n")
    bandwidth_table(torch, args.budget_ms)
    print("\ngrouped (mixture-of-experts) matmul, as blk-bench's grouped_matmul row:\n")
    grouped_table(torch, args.budget_ms)
    print("\nint8 matmul (W8A8), as examples/matmul_int8.blk:\n")
    int8_table(torch, args.budget_ms)
    print("\nfp8 matmul, as examples/matmul_fp8.blk:\n")
    fp8_table(torch, args.budget_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
