"""blk.testing: timing GPU work as Triton's do_bench does.

    import blk.testing
    ms = blk.testing.do_bench(lambda: matmul(a, b))               # the median, in ms
    p20, p50, p80 = blk.testing.do_bench(fn, quantiles=[0.2, 0.5, 0.8])

torch is imported when do_bench is called, not before.  See docs/python.md.
"""
from ._arrays import BlkError

__all__ = ["do_bench"]

_MODES = ("median", "mean", "min", "max", "all")
_FLUSH_BYTES = 256 << 20  # written before every timed call: more than any GPU's L2


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="median"):
    """Times fn() on torch's current CUDA device and stream.

    warmup and rep are budgets in milliseconds: five calls estimate one
    call's time, then fn runs warmup / estimate times untimed and rep /
    estimate times timed (at least once each).  Before every timed call the
    L2 cache is flushed (a 256 MB buffer is written) and the tensors of
    grad_to_none get .grad = None; each call is timed alone with a pair of
    CUDA events.  Returns the median in ms, or with quantiles (a list of
    numbers in [0, 1]) the list of those quantiles; return_mode picks
    another summary: "mean", "min", "max" or "all" (every time, a list)."""
    _check_args(warmup, rep, quantiles, return_mode)
    try:
        import torch
    except ImportError as e:
        raise BlkError(f"do_bench times with PyTorch's CUDA events, and torch is not "
                       f"installed (pip install torch): {e}") from None
    if not torch.cuda.is_available():
        raise BlkError("do_bench times on a CUDA GPU, and torch sees none "
                       "(torch.cuda.is_available() is False)")
    cache = torch.empty(_FLUSH_BYTES, dtype=torch.int8, device="cuda")

    def event():
        return torch.cuda.Event(enable_timing=True)

    times = _bench(fn, warmup, rep, grad_to_none, cache.zero_, event, torch.cuda.synchronize)
    return summarize(times, quantiles, return_mode)


def _check_args(warmup, rep, quantiles, return_mode):
    if not warmup >= 0 or not rep > 0:
        raise BlkError(f"do_bench: warmup={warmup!r} and rep={rep!r} are budgets in ms: "
                       "warmup >= 0, rep > 0")
    if quantiles is not None and not all(0 <= q <= 1 for q in quantiles):
        raise BlkError(f"do_bench: quantiles={list(quantiles)!r} must lie in [0, 1]")
    if return_mode not in _MODES:
        raise BlkError(f"do_bench: return_mode={return_mode!r} is none of {', '.join(_MODES)}")


def _bench(fn, warmup, rep, grad_to_none, flush, event, synchronize):
    """The timed loop, apart from torch (tests give it stand-in events):
    the time of each of the timed calls, in ms."""
    fn()
    synchronize()
    start, end = event(), event()
    start.record()
    for _ in range(5):
        flush()
        fn()
    end.record()
    synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate))
    n_rep = max(1, int(rep / estimate))
    for _ in range(n_warmup):
        fn()
    starts = [event() for _ in range(n_rep)]
    ends = [event() for _ in range(n_rep)]
    for i in range(n_rep):
        for x in grad_to_none or ():
            x.grad = None
        flush()
        starts[i].record()
        fn()
        ends[i].record()
    synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def summarize(times, quantiles=None, return_mode="median"):
    """The summary do_bench returns of a list of times (see do_bench)."""
    if not times:
        raise BlkError("do_bench: no times to summarize")
    xs = sorted(times)
    if quantiles is not None:
        return [_quantile(xs, q) for q in quantiles]
    if return_mode == "all":
        return list(times)
    if return_mode == "mean":
        return sum(xs) / len(xs)
    if return_mode == "min":
        return xs[0]
    if return_mode == "max":
        return xs[-1]
    return _quantile(xs, 0.5)


def _quantile(xs, q):
    """The q-quantile of sorted xs, linear between the two nearest (as
    torch.quantile and NumPy's default)."""
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
