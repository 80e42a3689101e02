"""Tests of blk.torch and blk.testing on the CPU, with torch installed (CI
has none: the file then skips, exit 77 alone, a skip under pytest).  CPU
tensors run in the interpreter, so everything but the GPU launch is
exercised: ops eager and through torch's own op checks (torch.library.
opcheck), torch.compile(fullgraph=True) with the eager, aot_eager and
inductor backends, static and dynamic shapes, torch.export with Dims, the
autograd helper (function and kernel backwards, under torch.compile too),
dtypes from the arrays, do_bench's loop with stand-in events, and every
error.  The GPU side is python/tests/gpu_torch_compile.py.

    BLK_LIBRARY=build/libblk-private.so PYTHONPATH=python python3 python/tests/test_torch.py
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.environ.get("BLK_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))
EX = os.path.join(ROOT, "examples")
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-torch-test-cache-"))
os.environ.pop("BLK_INTERPRET", None)

try:
    import torch
except ImportError:
    torch = None
if torch is None and __name__ != "__main__":
    import pytest
    pytest.skip("torch is not installed", allow_module_level=True)

if torch is not None:
    import blk  # noqa: E402
    import blk.testing  # noqa: E402
    import blk.torch  # noqa: E402

MM = dict(BM=16, BN=16, BK=16)

# silu and its backward, a kernel pair (silu.blk); `dup` has outs whose
# shapes are an expression of a size (N + 1) and a constant (4).
SILU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "silu.blk")
PAD = """
kernel pad1[B = 64](
    x: in  f32[N] block (B) index (i) -> (i),
    y: out f32[N + 1] block (B) index (i) -> (i),
    s: out f32[4] block (4) index (i) -> (0),
) grid (cdiv(N + 1, B)) {
    y[...] = x[...] + 1.0;
    s[...] = zeros((4,), f32) + 3.0;
}
"""
RANKED = """
kernel ranked(x: in i32[N] block (N) index () -> (0), y: out i32[N] block (N) index () -> (0)) {
    y[...] = x[...] + my_rank();
}
"""
NARROW = """
kernel narrow[T = f32, B = 64](
    x: in  f32[N] block (B) index (i) -> (i),
    y: out T[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = x[...].astype(T);
}
"""
NO_INPUT = """
kernel fill(y: out f32[8] block (8) index () -> (0)) {
    y[...] = zeros((8,), f32) + 1.0;
}
"""


def raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def close(got, want, tol=1e-5):
    got, want = got.detach().double(), want.detach().double()
    err = ((got - want).abs() / (1 + want.abs())).max().item() if want.numel() else 0.0
    assert err <= tol, f"max relative error {err} > {tol}"


def _ops():
    """The ops of the tests, made once (each name is registered once per process)."""
    if not _made:
        mmk = blk.kernel(f"{EX}/matmul.blk", T="auto", **MM)
        _made["mm"] = blk.torch.op(mmk, name="blktest::matmul")
        sk = blk.kernel(f"{EX}/matmul_splitk.blk", T="auto", S=2, **MM)
        _made["splitk"] = blk.torch.op(sk, name="blktest::splitk")
        _made["splitk_"] = blk.torch.op(sk, name="blktest::splitk_", inplace=True)
        _made["pad"] = blk.torch.op(blk.kernel(PAD), name="blktest::pad1")
    return _made


_made = {}


def frames():
    """Dynamo's count of frames compiled so far (a recompile adds one)."""
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


# ---- ops, eager ------------------------------------------------------------------

def test_op_eager_dtypes_strides():
    mm = _ops()["mm"]
    assert mm.schema == "(Tensor a, Tensor b) -> Tensor"
    assert mm.inputs == ["a", "b"] and mm.returns == ["c"]
    a, b = torch.randn(33, 20), torch.randn(20, 18)
    close(mm(a, b), a @ b)
    close(mm(a, b=b), a @ b)
    for dt, tol in ((torch.float16, 2e-2), (torch.bfloat16, 5e-2)):
        c = mm(a.to(dt), b.to(dt))
        assert c.dtype == dt
        close(c.float(), a.to(dt).float() @ b.to(dt).float(), tol)
    bt = torch.randn(18, 20).T  # a transposed view, used in place
    close(mm(a, bt), a @ bt)
    close(mm(a[::2], b[:, 3:]), a[::2] @ b[:, 3:])
    assert isinstance(mm.overload, torch._ops.OpOverload)
    close(torch.ops.blktest.matmul(a, b), a @ b)


def test_opcheck():
    """torch's own checks of a custom op: schema, fake vs real (shapes,
    strides, dtypes), autograd registration, AOT dispatch with dynamic shapes."""
    ops = _ops()
    a, b = torch.randn(33, 20), torch.randn(20, 18)
    c = torch.zeros(33, 18)
    cases = [(ops["mm"], (a, b)), (ops["mm"], (a.half(), b.T.contiguous().T.half())),
             (ops["splitk"], (a, b, c)), (ops["splitk_"], (a, b, c.clone())),
             (ops["pad"], (torch.randn(100),))]
    for o, args in cases:
        got = torch.library.opcheck(o.overload, args)
        assert all(v == "SUCCESS" for v in got.values()), (o.name, got)


def test_inout_functional_and_inplace():
    ops = _ops()
    a, b = torch.randn(33, 20), torch.randn(20, 18)
    c = torch.ones(33, 18)
    assert ops["splitk"].schema == "(Tensor a, Tensor b, Tensor c) -> Tensor"
    r = ops["splitk"](a, b, c)
    close(r, a @ b + 1)
    assert (c == 1).all()  # functional: the input is as it was
    assert ops["splitk_"].schema == "(Tensor a, Tensor b, Tensor(a2!) c) -> ()"
    assert ops["splitk_"](a, b, c) is None
    close(c, a @ b + 1)


def test_out_shape_expressions():
    pad = _ops()["pad"]
    x = torch.randn(100)
    y, s = pad(x)
    assert y.shape == (101,) and s.shape == (4,)
    close(y[:100], x + 1)
    assert y[100] == 1 and (s == 3).all()


def test_op_registry_and_errors():
    ops = _ops()
    mmk = blk.kernel(f"{EX}/matmul.blk", T="auto", **MM)
    assert blk.torch.op(mmk, name="blktest::matmul") is ops["mm"]  # an equal kernel: the same op
    assert blk.torch.op(mmk) is blk.torch.op(blk.kernel(f"{EX}/matmul.blk", T="auto", **MM))
    assert blk.torch.op(mmk).name.startswith("blk::matmul_")
    other = blk.kernel(f"{EX}/matmul.blk", T="auto", BM=32)
    e = raises(blk.BlkError, blk.torch.op, other, name="blktest::matmul")
    assert "blktest::matmul is already the op of blk.kernel(" in str(e)
    assert "give this kernel another name" in str(e)
    e = raises(blk.BlkError, blk.torch.op, mmk, name="blktest::matmul", inplace=True)
    assert "inplace=False" in str(e)
    for bad in ("matmul", "a::b::c", "my lib::mm", 3):
        e = raises(blk.BlkError, blk.torch.op, mmk, name=bad)
        assert "is not 'namespace::name'" in str(e)
    # a name torch has already, not from blk
    torch.library.define("blktest_other::taken", "(Tensor x) -> Tensor")
    e = raises(blk.BlkError, blk.torch.op, mmk, name="blktest_other::taken")
    assert "torch refused to register 'blktest_other::taken'" in str(e)
    e = raises(blk.BlkError, blk.torch.op, f"{EX}/matmul.blk")
    assert "takes a blk.kernel(...), not a str" in str(e)
    tuned = blk.autotune(f"{EX}/matmul.blk", configs=[MM])
    e = raises(blk.BlkError, blk.torch.op, tuned)
    assert "an autotuned kernel times its candidates" in str(e)
    e = raises(blk.BlkError, blk.torch.op, blk.kernel(RANKED))
    assert "runs across ranks" in str(e)
    e = raises(blk.BlkError, blk.torch.op, blk.kernel(NO_INPUT))
    assert "takes no in or inout array" in str(e)
    e = raises(blk.BlkError, blk.torch.op, blk.kernel(NARROW, T="auto"))
    assert ("T='auto' types only outputs of kernel narrow (y), which the op allocates: "
            "give T= a dtype") in str(e)
    mm = ops["mm"]
    a, b = torch.randn(8, 4), torch.randn(4, 6)
    e = raises(blk.BlkError, mm, a, x=b)
    assert "op blktest::matmul has no input 'x' (its inputs: a, b)" in str(e)
    e = raises(blk.BlkError, mm, a)
    assert "op blktest::matmul: missing input 'b'" in str(e)
    e = raises(blk.BlkError, mm, a, b, b)
    assert "op blktest::matmul takes 2 inputs (a, b), got 3" in str(e)
    e = raises(blk.BlkError, mm, a, b, a=a)
    assert "op blktest::matmul: input 'a' given twice" in str(e)
    e = raises(blk.BlkError, mm, a, torch.randn(5, 6))  # sizes: blk's own check
    assert "launch of matmul" in str(e)
    e = raises(blk.BlkError, mm, a, b.half())  # T from the arrays: they disagree
    assert "a is f32, b is f16" in str(e)


# ---- torch.compile and torch.export ---------------------------------------------------

def test_compile_fullgraph_backends():
    mm = _ops()["mm"]

    def f(x, y):
        return torch.relu(mm(x, y)) * 2 + 1

    a, b = torch.randn(33, 20), torch.randn(20, 18)
    for backend in ("eager", "aot_eager", "inductor"):
        torch._dynamo.reset()
        t = time.perf_counter()
        close(torch.compile(f, fullgraph=True, backend=backend)(a, b), f(a, b))
        print(f"  {backend}: {time.perf_counter() - t:.1f} s")


def test_compile_dynamic_shapes_no_recompile():
    """dynamic=True: the op's output shape is symbolic (M, N of the inputs),
    so new sizes run the same graph; a size blk ties (K) and an out dim that
    is an expression (N + 1) too."""
    ops = _ops()
    mm, pad = ops["mm"], ops["pad"]
    torch._dynamo.reset()
    f = torch.compile(lambda x, y: mm(x, y) + 1, fullgraph=True, dynamic=True,
                      backend="aot_eager")
    n0 = frames()
    for m, k, n in ((33, 20, 18), (40, 24, 30), (7, 5, 64)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        got = f(a, b)
        assert got.shape == (m, n)
        close(got, a @ b + 1)
    assert frames() - n0 == 1, "recompiled for a new shape"
    # an out shape blk computes as an expression of a size: guarded on the
    # sizes (a recompile per size), still right
    g = torch.compile(lambda x: pad(x)[0] * 2, fullgraph=True, dynamic=True, backend="aot_eager")
    for n in (100, 37):
        x = torch.randn(n)
        got = g(x)
        assert got.shape == (n + 1,)
        close(got[:n], (x + 1) * 2)
    # a mismatch is blk's error at trace time
    e = raises(Exception, f, torch.randn(8, 4), torch.randn(5, 6))
    assert "launch of matmul" in str(e), str(e)


def test_export():
    mm = _ops()["mm"]

    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(mm(x, y))

    a, b = torch.randn(33, 20), torch.randn(20, 18)
    ep = torch.export.export(M(), (a, b))
    assert "blktest.matmul" in str(ep.graph)
    close(ep.module()(a, b), torch.relu(a @ b))
    # dims named by the caller: a's K and b's K are two symbols blk ties
    Mdim, Kdim, Ndim = (torch.export.Dim(n) for n in "MKN")
    ep = torch.export.export(M(), (a, b), dynamic_shapes=({0: Mdim, 1: Kdim}, {0: Kdim, 1: Ndim}))
    out = [n for n in ep.graph.nodes if n.op == "call_function" and "matmul" in str(n.target)]
    shape = out[0].meta["val"].shape
    assert all(not isinstance(d, int) for d in shape), shape
    a2, b2 = torch.randn(40, 24), torch.randn(24, 30)
    close(ep.module()(a2, b2), torch.relu(a2 @ b2))
    import io
    buf = io.BytesIO()  # saved and loaded: the op is found again by its name
    torch.export.save(ep, buf)
    buf.seek(0)
    close(torch.export.load(buf).module()(a2, b2), torch.relu(a2 @ b2))
    # two sizes of one value, each tying two symbols (Bt and K, both 8)
    bmm = blk.torch.op(blk.kernel(f"{EX}/bmm.blk", **MM), name="blktest::bmm")

    class B(torch.nn.Module):
        def forward(self, x, y):
            return bmm(x, y)

    Bt, Mdim, Kdim, Ndim = (torch.export.Dim(n) for n in ("Bt", "M", "K", "N"))
    a, b = torch.randn(8, 20, 8), torch.randn(8, 8, 12)
    ep = torch.export.export(B(), (a, b), dynamic_shapes=({0: Bt, 1: Mdim, 2: Kdim},
                                                          {0: Bt, 1: Kdim, 2: Ndim}))
    a2, b2 = torch.randn(3, 17, 9), torch.randn(3, 9, 21)
    close(ep.module()(a2, b2), a2 @ b2)


# ---- autograd -----------------------------------------------------------------------------

def _matmul_autograd():
    if "mm_grad" not in _made:
        mmk = blk.kernel(f"{EX}/matmul.blk", T="auto", **MM)
        mm = blk.torch.op(mmk, name="blktest::matmul_g")

        def backward(a, b, dc):  # dA = dC B^T, dB = A^T dC, on strided views
            return mm(dc, b.T), mm(a.T, dc)

        _made["mm_grad"] = blk.torch.autograd(mm, backward)
        silu = blk.kernel(SILU, name="silu_fwd", T="auto")
        silu_bwd = blk.kernel(SILU, name="silu_bwd", T="auto")
        _made["silu"] = blk.torch.autograd(silu, silu_bwd, save="x", name="blktest::silu")
    return _made["mm_grad"], _made["silu"]


def _grads(fn, *xs):
    xs = [x.detach().clone().requires_grad_() for x in xs]
    out = fn(*xs)
    (out * out).sum().backward()
    return out.detach(), [x.grad for x in xs]


def test_autograd_function_backward():
    mm, _ = _matmul_autograd()
    a, b = torch.randn(33, 20), torch.randn(20, 18)
    got, ga = _grads(mm, a, b)
    want, gw = _grads(torch.matmul, a, b)
    close(got, want)
    for g, w in zip(ga, gw):
        close(g, w, 1e-4)
    # compiled, the backward's ops traced too
    torch._dynamo.reset()
    f = torch.compile(lambda x, y: mm(x, y), fullgraph=True, backend="aot_eager")
    got, gc = _grads(f, a, b)
    for g, w in zip(gc, gw):
        close(g, w, 1e-4)
    # only one input needing a gradient
    x = a.clone().requires_grad_()
    mm(x, b).sum().backward()
    close(x.grad, torch.ones(33, 18) @ b.T, 1e-4)
    got = torch.library.opcheck(mm.overload, (a.requires_grad_(), b))
    assert all(v == "SUCCESS" for v in got.values()), got


def test_autograd_kernel_backward():
    _, silu = _matmul_autograd()
    assert silu.name == "blktest::silu"
    x = torch.randn(1000)
    got, (g,) = _grads(silu, x)
    want, (w,) = _grads(torch.nn.functional.silu, x)
    close(got, want)
    close(g, w, 1e-5)
    for dt in (torch.float16, torch.bfloat16):  # T from the arrays, forward and backward
        got, (g,) = _grads(silu, x.to(dt))
        assert got.dtype == dt and g.dtype == dt
        want, (w,) = _grads(torch.nn.functional.silu, x.to(dt).float())
        close(g.float(), w, 5e-2)
    torch._dynamo.reset()
    f = torch.compile(lambda v: silu(v) * 2, fullgraph=True, backend="aot_eager")
    got, (g,) = _grads(f, x)
    want, (w,) = _grads(lambda v: torch.nn.functional.silu(v) * 2, x)
    close(g, w, 1e-5)
    # torch's gradcheck in f32 (blk has no f64): loose tolerances
    import warnings
    xs = torch.randn(64).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not of double precision": known, hence the tolerances
        assert torch.autograd.gradcheck(silu, (xs,), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_autograd_saves_outputs_and_errors():
    # the backward of exp-like maps wants the output: save names an out param
    src = """
kernel twice[T = f32, B = 64](
    x: in  T[N] block (B) index (i) -> (i),
    y: out T[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = x[...] * 2.0;
}
"""
    k = blk.kernel(src, T="auto")
    seen = []

    def backward(y, dy):
        seen.append(y.detach().clone())
        return dy * 2

    tw = blk.torch.autograd(k, backward, save=["y"], name="blktest::twice")
    x = torch.randn(100)
    got, (g,) = _grads(tw, x)
    close(seen[0], 2 * x)
    close(g, 8 * x)
    # the same backward again: the same op; another one: an error
    assert blk.torch.autograd(tw, backward, save=["y"]) is tw
    e = raises(blk.BlkError, blk.torch.autograd, tw, lambda y, dy: dy, save=["y"])
    assert "has another backward already" in str(e)
    e = raises(blk.BlkError, blk.torch.autograd, tw, backward, name="blktest::x")
    assert "names the op made of a kernel" in str(e)
    e = raises(blk.BlkError, blk.torch.autograd, k, backward, save=["z"], name="blktest::tw2")
    assert "save names 'z', which is no param of kernel twice (its params: x, y)" in str(e)
    e = raises(blk.BlkError, blk.torch.autograd, k, "nope", name="blktest::tw3")
    assert "backward must be a blk.kernel, an Op or a function, not a str" in str(e)
    # a backward kernel of the wrong arity
    silu_bwd = blk.kernel(SILU, name="silu_bwd", T="auto")
    e = raises(blk.BlkError, blk.torch.autograd, k, silu_bwd, save=[], name="blktest::tw4")
    assert "it must take the 0 saved () then 1 grads (of y), and return 1 grads (of x)" in str(e)
    # an inplace forward, an inplace backward
    e = raises(blk.BlkError, blk.torch.autograd, _ops()["splitk_"], backward)
    assert "updates its inout arrays in place" in str(e)
    e = raises(blk.BlkError, blk.torch.autograd, k, _ops()["splitk_"], name="blktest::tw5")
    assert "the backward op blktest::splitk_ updates its inout arrays in place" in str(e)
    # a backward returning the wrong count: said when it runs
    bad = blk.torch.autograd(blk.kernel(src, T="auto", B=32), lambda x, dy: (dy, dy),
                             name="blktest::tw6")
    y = bad(x.clone().requires_grad_())
    e = raises(blk.BlkError, y.sum().backward)
    assert ("the backward of blktest::tw6 returned 2 gradients; the forward takes 1 inputs (x): "
            "return one per input, None for an input with none") in str(e)


# ---- blk.testing.do_bench ---------------------------------------------------------------

class _Event:
    """A stand-in CUDA event: record() reads a clock that each call of the
    benched function moves by 2 ms and each flush by 0.5 ms."""
    clock = [0.0]

    def record(self):
        self.t = self.clock[0]

    def elapsed_time(self, other):
        return other.t - self.t


def test_do_bench_loop():
    calls, flushes = [], []
    clock = _Event.clock

    def fn():
        calls.append(1)
        clock[0] += 2.0

    def flush():
        flushes.append(1)
        clock[0] += 0.5

    x = torch.zeros(3, requires_grad=True)
    x.grad = torch.ones(3)
    times = blk.testing._bench(fn, 25, 100, [x], flush, _Event, lambda: None)
    # one call, 5 estimating (2.5 ms each with the flush), 10 warmup, 40 timed
    assert len(times) == 40 and all(t == 2.0 for t in times)
    assert len(calls) == 1 + 5 + 10 + 40 and len(flushes) == 5 + 40
    assert x.grad is None
    s = blk.testing.summarize
    xs = [4.0, 1.0, 3.0, 2.0]
    assert s(xs) == 2.5 and s(xs, return_mode="mean") == 2.5
    assert s(xs, return_mode="min") == 1.0 and s(xs, return_mode="max") == 4.0
    assert s(xs, return_mode="all") == xs
    assert s(xs, quantiles=[0, 0.5, 1]) == [1.0, 2.5, 4.0]
    assert abs(s(xs, quantiles=[0.2])[0] - 1.6) < 1e-12


def test_do_bench_errors():
    for kw, msg in ((dict(rep=0), "rep > 0"), (dict(warmup=-1), "warmup >= 0"),
                    (dict(quantiles=[0.5, 2]), "must lie in [0, 1]"),
                    (dict(return_mode="p99"), "is none of median, mean, min, max, all")):
        e = raises(blk.BlkError, blk.testing.do_bench, lambda: None, **kw)
        assert msg in str(e), e
    e = raises(blk.BlkError, blk.testing.summarize, [])
    assert "no times" in str(e)
    if not torch.cuda.is_available():
        e = raises(blk.BlkError, blk.testing.do_bench, lambda: None)
        assert "torch sees none" in str(e)


def test_import_blk_imports_no_torch():
    import subprocess
    code = ("import os, sys; os.environ.get('BLK_TEST_INSTALLED') == '1' or "
            "sys.path.insert(0, sys.argv[1]); import blk, blk.testing; "
            "print('torch' in sys.modules); import blk.torch; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"], out


def main():
    if torch is None:
        print("skipped: torch is not installed")
        return 77  # meson's skip
    print(f"torch {torch.__version__}, blk {blk.__version__}")
    only = sys.argv[1:]
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)
             and (not only or n in only)]
    failed = 0
    for name, fn in tests:
        t0 = time.perf_counter()
        try:
            fn()
            print(f"PASS {name} ({(time.perf_counter() - t0) * 1e3:.0f} ms)")
        except Exception as e:  # report every failure, then the count
            failed += 1
            import traceback
            traceback.print_exc()
            print(f"FAIL {name}: {e}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
