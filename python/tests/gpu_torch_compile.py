"""GPU tests of blk.torch and blk.testing, run on the device machine from
the repository root, with the build carried in carry/ (tools/pack-gpu.sh):

    BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python python3 python/tests/gpu_torch_compile.py

Ops on CUDA tensors against torch in f32, f16 and bf16 (T left to the
arrays), strided views; torch.compile(fullgraph=True) with the default
inductor backend, static and dynamic shapes (no recompile); CUDA graph
capture by hand (torch.cuda.graph) and through mode="reduce-overhead";
torch.export with Dims, saved and loaded; the autograd helper (a matmul
whose backward runs the forward's op on transposed views, a silu kernel
pair) against torch's autograd, eager and compiled; the per-dtype variants
of a kernel; blk.testing.do_bench against a plain event timing.  Prints
PASS/FAIL per check and "N passed, N failed"; exits 1 on any failure.
Test names as arguments run only those.
"""
import io
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
EX = os.path.join(ROOT, "examples")
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-gpu-compile-cache-"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import blk  # noqa: E402
import blk.testing  # noqa: E402
import blk.torch  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = torch.device("cuda", 0)
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f32": 2e-4, "f16": 2e-2, "bf16": 5e-2}
results = []

SILU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "silu.blk")


def check(name, got, want, tol):
    got, want = got.detach().double(), want.detach().double()
    ok = got.shape == want.shape
    err = ((got - want).abs() / (1 + want.abs())).max().item() if ok and want.numel() else 0.0
    ok = ok and err <= tol and torch.isfinite(got).all().item()
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}: max rel err {err:.2e} (tol {tol:.0e})"
          + ("" if got.shape == want.shape else f", shape {tuple(got.shape)} != {tuple(want.shape)}"))


def expect(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")


def case(fn):
    """A test: its exceptions count as a failure, reported by name."""
    def run():
        try:
            fn()
        except Exception as e:  # report and go on to the next test
            import traceback
            traceback.print_exc()
            results.append(False)
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    run.__name__ = fn.__name__
    return run


def randn(*shape, t="f32"):
    return torch.randn(*shape, device=DEV, dtype=DTYPES[t])


def f(x):
    return x.float()


_ops = {}


def ops():
    """The ops, made once (one registration per name and process)."""
    if not _ops:
        mmk = blk.kernel(f"{EX}/matmul.blk", T="auto")
        _ops["mmk"] = mmk
        _ops["mm"] = blk.torch.op(mmk, name="blkgpu::matmul")
        sk = blk.kernel(f"{EX}/matmul_splitk.blk", T="auto")
        _ops["splitk"] = blk.torch.op(sk, name="blkgpu::splitk")
        _ops["splitk_"] = blk.torch.op(sk, name="blkgpu::splitk_", inplace=True)
        mmg = blk.torch.op(blk.kernel(f"{EX}/matmul.blk", T="auto"), name="blkgpu::matmul_g")

        def mm_backward(a, b, dc):  # dA = dC B^T, dB = A^T dC: the same op on strided views
            return mmg(dc, b.T), mmg(a.T, dc)

        _ops["mm_grad"] = blk.torch.autograd(mmg, mm_backward)
        _ops["silu"] = blk.torch.autograd(blk.kernel(SILU, name="silu_fwd", T="auto", B=1024),
                                          blk.kernel(SILU, name="silu_bwd", T="auto", B=1024),
                                          save="x", name="blkgpu::silu")
    return _ops


def frames():
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


@case
def test_op_dtypes_and_strides():
    """One op, every dtype: the kernel's T from the arrays, a variant each."""
    mm = ops()["mm"]
    for t in ("f32", "f16", "bf16"):
        a, b = randn(515, 300, t=t), randn(300, 259, t=t)
        c = mm(a, b)
        expect(f"op matmul {t} dtype", c.dtype == DTYPES[t], str(c.dtype))
        check(f"op matmul {t}", c, f(a) @ f(b), TOL[t])
        big = randn(600, 400, t=t)
        sa, sb = big[3:518, 10:310], randn(259, 300, t=t).T  # a slice, a column-major view
        check(f"op matmul {t} strided", mm(sa, sb), f(sa) @ f(sb), TOL[t])
    variants = sorted(ops()["mmk"]._variants)
    expect("one variant per dtype", variants == [("bf16",), ("f16",), ("f32",)], str(variants))
    a, b = randn(515, 300), randn(300, 259)
    c = torch.ones(515, 259, device=DEV)
    check("op splitk functional", ops()["splitk"](a, b, c), f(a) @ f(b) + 1, TOL["f32"])
    expect("op splitk functional leaves c", bool((c == 1).all()))
    ops()["splitk_"](a, b, c)
    check("op splitk inplace", c, f(a) @ f(b) + 1, TOL["f32"])


@case
def test_compile_inductor():
    mm = ops()["mm"]

    def fn(x, y, bias):
        return torch.relu(mm(x, y) + bias) * 2

    for t in ("f32", "bf16"):
        torch._dynamo.reset()
        a, b, bias = randn(515, 300, t=t), randn(300, 259, t=t), randn(259, t=t)
        t0 = time.perf_counter()
        cf = torch.compile(fn, fullgraph=True)
        got = cf(a, b, bias)
        print(f"  compile + first call {t}: {time.perf_counter() - t0:.1f} s")
        check(f"inductor fullgraph {t} vs eager", got, fn(a, b, bias), 1e-2 if t == "bf16" else 1e-5)
        check(f"inductor fullgraph {t} vs torch", got,
              torch.relu(f(a) @ f(b) + f(bias)) * 2, TOL[t] * 4)
    # dynamic shapes: one graph for every shape
    torch._dynamo.reset()
    cf = torch.compile(fn, fullgraph=True, dynamic=True)
    n0 = frames()
    for m, k, n in ((515, 300, 259), (128, 64, 96), (1000, 200, 17)):
        a, b, bias = randn(m, k), randn(k, n), randn(n)
        check(f"inductor dynamic {m}x{k}x{n}", cf(a, b, bias), torch.relu(a @ b + bias) * 2,
              TOL["f32"] * 4)
    expect("inductor dynamic: no recompile", frames() - n0 == 1, f"{frames() - n0} graphs")
    # the inplace op under compile
    torch._dynamo.reset()
    sk = ops()["splitk_"]

    def acc(x, y, c):
        sk(x, y, c)
        return c * 2

    a, b = randn(515, 300), randn(300, 259)
    c = torch.zeros(515, 259, device=DEV)
    got = torch.compile(acc, fullgraph=True)(a, b, c)
    check("inductor inplace splitk: c updated", c, a @ b, TOL["f32"])
    check("inductor inplace splitk: result", got, 2 * (a @ b), TOL["f32"])


@case
def test_cuda_graph_capture():
    mm = ops()["mm"]
    a, b = randn(515, 300, t="bf16"), randn(300, 259, t="bf16")
    mm(a, b)  # compiled and loaded outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        mm(a, b)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        c = mm(a, b)
        d = torch.relu(c)
    for i in range(3):  # new data in the captured inputs, replayed
        a.copy_(randn(515, 300, t="bf16"))
        b.copy_(randn(300, 259, t="bf16"))
        g.replay()
        torch.cuda.synchronize()
        check(f"cuda graph replay {i}", d, torch.relu(f(a) @ f(b)), TOL["bf16"])
    # an inplace op in a graph: c zeroed and accumulated at each replay
    sk = ops()["splitk_"]
    acc = torch.zeros(515, 259, device=DEV)
    af, bf = randn(515, 300), randn(300, 259)
    sk(af, bf, acc)
    torch.cuda.synchronize()
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        acc.zero_()
        sk(af, bf, acc)
    af.copy_(randn(515, 300))
    g2.replay()
    torch.cuda.synchronize()
    check("cuda graph inplace splitk", acc, af @ bf, TOL["f32"])
    # torch.compile's CUDA graphs
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    cf = torch.compile(lambda x, y: torch.relu(mm(x, y)), mode="reduce-overhead", fullgraph=True)
    for i in range(4):
        x, y = randn(515, 300, t="bf16"), randn(300, 259, t="bf16")
        got = cf(x, y).clone()
        check(f"reduce-overhead call {i}", got, torch.relu(f(x) @ f(y)), TOL["bf16"])
    skips = dict(counters["inductor"])
    skipped = {k: v for k, v in skips.items() if "cudagraph_skip" in k}
    expect("reduce-overhead used CUDA graphs", not skipped, str(skipped))


@case
def test_export():
    mm = ops()["mm"]

    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(mm(x, y))

    a, b = randn(515, 300, t="bf16"), randn(300, 259, t="bf16")
    Md, Kd, Nd = (torch.export.Dim(n, max=8192) for n in "MKN")
    ep = torch.export.export(M(), (a, b), dynamic_shapes=({0: Md, 1: Kd}, {0: Kd, 1: Nd}))
    expect("export: the op in the graph", "blkgpu.matmul" in str(ep.graph))
    check("export run", ep.module()(a, b), torch.relu(f(a) @ f(b)), TOL["bf16"])
    a2, b2 = randn(130, 64, t="bf16"), randn(64, 1000, t="bf16")
    check("export run, other shapes", ep.module()(a2, b2), torch.relu(f(a2) @ f(b2)), TOL["bf16"])
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    ep2 = torch.export.load(buf)
    check("export saved and loaded", ep2.module()(a2, b2), torch.relu(f(a2) @ f(b2)), TOL["bf16"])


def _grads(fn, xs, g):
    xs = [x.detach().clone().requires_grad_() for x in xs]
    out = fn(*xs)
    out.backward(g)
    return out.detach(), [x.grad for x in xs]


@case
def test_autograd_matmul():
    mm = ops()["mm_grad"]
    for t in ("f32", "bf16"):
        a, b, g = randn(515, 300, t=t), randn(300, 259, t=t), randn(515, 259, t=t)
        got, (ga, gb) = _grads(mm, (a, b), g)
        want, (wa, wb) = _grads(torch.matmul, (f(a), f(b)), f(g))
        check(f"autograd matmul {t} forward", got, want, TOL[t])
        check(f"autograd matmul {t} dA", ga, wa, TOL[t])
        check(f"autograd matmul {t} dB", gb, wb, TOL[t])
        torch._dynamo.reset()
        cf = torch.compile(lambda x, y: mm(x, y) * 2, fullgraph=True)
        _, (ca, cb) = _grads(cf, (a, b), g)
        check(f"autograd matmul {t} compiled dA", ca, 2 * wa, TOL[t])
        check(f"autograd matmul {t} compiled dB", cb, 2 * wb, TOL[t])


@case
def test_autograd_silu():
    silu = ops()["silu"]
    for t in ("f32", "f16", "bf16"):
        x, g = randn(100003, t=t), randn(100003, t=t)
        got, (gx,) = _grads(silu, (x,), g)
        want, (wx,) = _grads(F.silu, (f(x),), f(g))
        expect(f"autograd silu {t} dtypes", got.dtype == gx.dtype == DTYPES[t])
        check(f"autograd silu {t} forward", got, want, TOL[t])
        check(f"autograd silu {t} dx", gx, wx, TOL[t])
    torch._dynamo.reset()
    cf = torch.compile(lambda v: silu(v) * v, fullgraph=True)
    x, g = randn(4097), randn(4097)
    _, (cx,) = _grads(cf, (x,), g)
    _, (wx,) = _grads(lambda v: F.silu(v) * v, (x,), g)
    check("autograd silu compiled", cx, wx, TOL["f32"])


@case
def test_dtype_from_arrays_kernel():
    add = blk.kernel(f"{EX}/add.blk", T="auto")
    for t in ("f32", "f16", "bf16"):
        x, y = randn(100003, t=t), randn(100003, t=t)
        z = add(x, y)
        expect(f"add T=auto {t} dtype", z.dtype == DTYPES[t])
        check(f"add T=auto {t}", z, f(x) + f(y), TOL[t])
    expect("add: a variant per dtype", len(add._variants) == 3, str(sorted(add._variants)))
    try:
        add(randn(10), randn(10, t="f16"))
        expect("add: arrays that disagree refused", False)
    except blk.BlkError as e:
        expect("add: arrays that disagree refused", "they disagree" in str(e), str(e))


@case
def test_do_bench():
    a, b = randn(4096, 4096, t="bf16"), randn(4096, 4096, t="bf16")
    fn = lambda: torch.matmul(a, b)  # noqa: E731
    ms = blk.testing.do_bench(fn)
    q = blk.testing.do_bench(fn, quantiles=[0.2, 0.5, 0.8])
    expect("do_bench median > 0", ms > 0, f"{ms:.4f} ms")
    expect("do_bench quantiles ordered", q[0] <= q[1] <= q[2], str(q))
    # a plain events timing, no flush: within a factor of 2 of the median
    for _ in range(10):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(50):
        fn()
    e.record()
    torch.cuda.synchronize()
    plain = s.elapsed_time(e) / 50
    expect("do_bench close to a plain timing", 0.5 < ms / plain < 2.0,
           f"do_bench {ms:.4f} ms, plain {plain:.4f} ms")
    tflops = 2 * 4096 ** 3 / ms / 1e9
    print(f"  torch.matmul bf16 4096^3: {ms:.3f} ms, {tflops:.0f} TFLOP/s")
    mm = ops()["mm"]
    mm(a, b)
    ms_blk = blk.testing.do_bench(lambda: mm(a, b))
    k = ops()["mmk"]
    ms_k = blk.testing.do_bench(lambda: k(a, b))
    print(f"  blk matmul op bf16 4096^3 (default blocks): {ms_blk:.3f} ms; the kernel called "
          f"directly: {ms_k:.3f} ms")
    small = randn(64, 64, t="bf16")
    mm(small, small)
    t0 = time.perf_counter()
    for _ in range(200):
        mm(small, small)
    t_op = (time.perf_counter() - t0) / 200 * 1e6
    k(small, small)
    t0 = time.perf_counter()
    for _ in range(200):
        k(small, small)
    t_k = (time.perf_counter() - t0) / 200 * 1e6
    torch.cuda.synchronize()
    print(f"  host time per call, 64^3: op {t_op:.1f} us, kernel {t_k:.1f} us")
    allms = blk.testing.do_bench(fn, rep=20, return_mode="all")
    expect("do_bench return_mode=all", isinstance(allms, list) and len(allms) >= 1,
           f"{len(allms)} times")


def main():
    print(f"blk {blk.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    only = sys.argv[1:]
    for t in (test_op_dtypes_and_strides, test_compile_inductor, test_cuda_graph_capture,
              test_export, test_autograd_matmul, test_autograd_silu,
              test_dtype_from_arrays_kernel, test_do_bench):
        if only and t.__name__ not in only:
            continue
        print(f"== {t.__name__}")
        t()
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
