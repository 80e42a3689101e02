"""user_timing.py - what the user-method benchmarks (bench_layouts.py,
bench_configs.py) share: torch and triton or a clean exit, and the timing a
user takes (triton.testing.do_bench: L2 flushed before each call, median
of the calls)."""
import sys


def torch_or_exit(name):
    """torch, where it and triton are installed and a GPU is there; else a
    line saying why `name` is skipped, and exit status 0."""
    try:
        import torch
        import triton.testing  # noqa: F401
    except ImportError as e:
        print(f"{name}: skipped ({e})")
        sys.exit(0)
    if not torch.cuda.is_available():
        print(f"{name}: skipped (no GPU)")
        sys.exit(0)
    return torch


def bench(fn):
    """fn's median time in ms, L2 flushed before each call."""
    import triton.testing
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
