"""GPU tests of the blk Python package inside a torch program, run on the
device machine from the repository root, with the build carried in carry/
(tools/pack-gpu.sh):

    BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python python3 python/tests/gpu_torch.py

Every example through the package against torch's own ops in f32, f16 and
bf16 at ragged sizes; strided (transposed, sliced) inputs; outputs passed
and allocated; a launch on a non-default torch stream (and stream=); a
second GPU when there is one; a CPU tensor refused; the interpreter on torch
tensors against the GPU; the autotuner with its results on disk; JAX and
CuPy arrays where installed; then kernels compiled ahead of time (carry/build/tests/aot/aot-test); then
the figures: a launch's host time from
Python beside the same launch from C (carry/build/tools/launch-cost), and a
new process's source-to-module time compiled vs read from the disk cache.
Ends with "N passed, N failed".  Test names as arguments run only those.
"""
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
EX = os.path.join(ROOT, "examples")
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-gpu-cache-"))
# JAX, where tried, must not take most of the GPU's memory from torch.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import blk  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = torch.device("cuda", 0)
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f32": 2e-4, "f16": 2e-2, "bf16": 5e-2}
results = []


def check(name, got, want, tol):
    got, want = got.double(), want.double()
    err = ((got - want).abs() / (1 + want.abs())).max().item() if want.numel() else 0.0
    ok = err <= tol and torch.isfinite(got).all().item()
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}: max rel err {err:.2e} (tol {tol:.0e})")


def case(fn):
    """A test: its exceptions count as a failure, reported by name."""
    def run():
        try:
            fn()
        except Exception as e:  # report and go on to the next test
            import traceback
            traceback.print_exc()
            results.append(False)
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
    run.__name__ = fn.__name__
    return run


def randn(*shape, t="f32", dev=DEV):
    return torch.randn(*shape, device=dev, dtype=DTYPES[t])


def f(x):
    return x.float()


@case
def test_examples():
    for t in ("f32", "f16", "bf16"):
        tol = TOL[t]
        x, y = randn(100003, t=t), randn(100003, t=t)
        check(f"add {t}", blk.kernel(f"{EX}/add.blk", T=t)(x, y), f(x) + f(y), tol)
        x = randn(1000, 1003, t=t)
        check(f"softmax {t}", blk.kernel(f"{EX}/softmax.blk", T=t)(x),
              torch.softmax(f(x), 1), tol)
        a, b = randn(515, 300, t=t), randn(300, 259, t=t)
        ref = f(a) @ f(b)
        for name in ("matmul", "matmul_acc"):
            check(f"{name} {t}", blk.kernel(f"{EX}/{name}.blk", T=t)(a, b), ref, tol)
        w = randn(259, 300, t=t)
        check(f"matmul_nt {t}", blk.kernel(f"{EX}/matmul_nt.blk", T=t)(a, w), f(a) @ f(w).T, tol)
        bias = randn(259, t=t)
        check(f"matmul_epilogue {t}", blk.kernel(f"{EX}/matmul_epilogue.blk", T=t)(a, b, bias),
              F.gelu(ref + f(bias), approximate="tanh"), tol)
        c = torch.zeros(515, 259, device=DEV)
        blk.kernel(f"{EX}/matmul_splitk.blk", T=t)(a, b, c)
        check(f"matmul_splitk {t}", c, ref, tol)
        ba, bb = randn(3, 130, 70, t=t), randn(3, 70, 90, t=t)
        check(f"bmm {t}", blk.kernel(f"{EX}/bmm.blk", T=t)(ba, bb), f(ba) @ f(bb), tol)
        x, w_, b_ = randn(257, 1024, t=t), randn(1024, t=t), randn(1024, t=t)
        check(f"layernorm {t}", blk.kernel(f"{EX}/layernorm.blk", T=t)(x, w_, b_),
              F.layer_norm(f(x), (1024,), f(w_), f(b_), 1e-5), tol)
        ms = (f(x) * f(x)).mean(1, keepdim=True)
        check(f"rmsnorm {t}", blk.kernel(f"{EX}/rmsnorm.blk", T=t)(x, w_),
              f(x) * torch.rsqrt(ms + 1e-6) * f(w_), tol)
        check(f"colsum {t}", blk.kernel(f"{EX}/colsum.blk", T=t)(x), f(x).sum(0), tol * 10)
        q, k, v = (randn(4, 300, 64, t=t) for _ in range(3))
        for causal in (False, True):
            att = blk.kernel(f"{EX}/attention.blk", T=t, CAUSAL=causal)
            check(f"attention {t} causal={causal}", att(q, k, v),
                  F.scaled_dot_product_attention(f(q), f(k), f(v), is_causal=causal), tol)


@case
def test_training_examples():
    """examples/attention_bwd.blk (forward with the log-sum-exp, the
    backward's three kernels) against torch's autograd through SDPA, and
    examples/swiglu.blk, and examples/conv2d.blk against cuDNN, at ragged
    sizes, at the examples' defaults and at the tensor-core configs a user
    picks."""
    src = f"{EX}/attention_bwd.blk"
    big = dict(BM=128, BN=128, num_warps=8)
    for t, D, causal, cfg, qcfg in (("f32", 64, False, {}, {}), ("bf16", 64, False, {}, {}), ("bf16", 64, True, {}, {}),
                                    ("f16", 128, True, {}, {}), ("bf16", 64, False, big, big),
                                    ("bf16", 128, True, dict(BM=64, BN=128, num_warps=8),
                                     dict(BM=128, BN=64, num_warps=8))):
        tol = TOL[t] * 2
        q, k, v, do = (randn(6, 333, D, t=t) for _ in range(4))
        qr, kr, vr = (f(x).requires_grad_() for x in (q, k, v))
        o_r = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
        dq_r, dk_r, dv_r = torch.autograd.grad(o_r, (qr, kr, vr), f(do))
        fcfg = {"BQ": qcfg["BM"], "BK": qcfg["BN"], "num_warps": qcfg["num_warps"]} if qcfg else {}
        o, lse = blk.kernel(src, name="attention_fwd_lse", T=t, D=D, CAUSAL=causal, **fcfg)(q, k, v)
        what = f"{t} D={D} causal={causal} {cfg or 'defaults'}"
        check(f"attention_fwd_lse {what}", o, o_r, tol)
        delta = blk.kernel(src, name="attention_bwd_preprocess", T=t, D=D)(o, do)
        dk, dv = blk.kernel(src, name="attention_bwd_dkdv", T=t, D=D, CAUSAL=causal, **cfg)(q, k, v, do, lse, delta)
        dq = blk.kernel(src, name="attention_bwd_dq", T=t, D=D, CAUSAL=causal, **qcfg)(q, k, v, do, lse, delta)
        check(f"attention_bwd dq {what}", dq, dq_r, tol)
        check(f"attention_bwd dk {what}", dk, dk_r, tol)
        check(f"attention_bwd dv {what}", dv, dv_r, tol)
    # grouped-query heads: 8 query heads on 2 key/value heads; dK, dV per
    # query head, summed over each group of 4
    q, do = randn(8, 333, 64, t="bf16"), randn(8, 333, 64, t="bf16")
    k, v = randn(2, 333, 64, t="bf16"), randn(2, 333, 64, t="bf16")
    qr, kr, vr = (f(x)[None].requires_grad_() for x in (q, k, v))
    o_r = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True, enable_gqa=True)
    dq_r, dk_r, dv_r = torch.autograd.grad(o_r, (qr, kr, vr), f(do)[None])
    b = dict(T="bf16", D=64, G=4, CAUSAL=True)
    o, lse = blk.kernel(src, name="attention_fwd_lse", **b)(q, k, v)
    check("attention_fwd_lse GQA", o, o_r[0], TOL["bf16"] * 2)
    delta = blk.kernel(src, name="attention_bwd_preprocess", T="bf16", D=64)(o, do)
    dk, dv = blk.kernel(src, name="attention_bwd_dkdv", **b)(q, k, v, do, lse, delta)
    dq = blk.kernel(src, name="attention_bwd_dq", **b)(q, k, v, do, lse, delta)
    check("attention_bwd dq GQA", dq, dq_r[0], TOL["bf16"] * 2)
    check("attention_bwd dk GQA", f(dk).reshape(2, 4, 333, 64).sum(1), dk_r[0], TOL["bf16"] * 2)
    check("attention_bwd dv GQA", f(dv).reshape(2, 4, 333, 64).sum(1), dv_r[0], TOL["bf16"] * 2)
    for t in ("f32", "bf16"):
        x, w1, w3 = randn(517, 300, t=t) * 0.5, randn(1030, 300, t=t) * 0.1, randn(1030, 300, t=t) * 0.1
        ref = F.silu(f(x) @ f(w1).T) * (f(x) @ f(w3).T)
        check(f"swiglu {t} auto", blk.kernel(f"{EX}/swiglu.blk", T=t)(x, w1, w3), ref, TOL[t])
        cfg = dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4)
        check(f"swiglu {t} {cfg}", blk.kernel(f"{EX}/swiglu.blk", T=t, **cfg)(x, w1, w3), ref, TOL[t])
    # examples/conv2d.blk against cuDNN's F.conv2d (channels_last), ragged
    # channels and pixels, `auto` and a config given
    for t, (n, h, w_, c, oc), cfg in (("bf16", (3, 13, 17, 40, 72), {}), ("f16", (2, 28, 28, 64, 136), {}),
                                      ("f32", (2, 9, 7, 24, 40), {}),
                                      ("bf16", (4, 14, 14, 256, 256), dict(BM=128, BN=128, BK=64, num_warps=8))):
        x = randn(n, c, h, w_, t=t).to(memory_format=torch.channels_last)
        wt = (randn(oc, c, 3, 3, t=t) * (1.0 / (3 * c ** 0.5))).to(memory_format=torch.channels_last)
        ref = F.conv2d(x.double(), wt.double(), padding=1).permute(0, 2, 3, 1).reshape(n * h * w_, oc).float()
        xk = x.permute(0, 2, 3, 1).contiguous()
        wk = wt.permute(2, 3, 1, 0).reshape(9 * c, oc).contiguous()
        check(f"conv2d {t} {n}x{h}x{w_}x{c}->{oc} {cfg or 'auto'}",
              blk.kernel(f"{EX}/conv2d.blk", T=t, **cfg)(xk, wk), ref, TOL[t] * 2)


@case
def test_new_examples():
    """The examples of the language issue on torch tensors: scans, gathers,
    scalar prefetch (grouped matmul, paged attention), 8-bit integers."""
    for t in ("f32", "bf16"):
        tol = TOL[t]
        x = randn(37, 3001, t=t)
        check(f"cumsum {t}", blk.kernel(f"{EX}/cumsum.blk", T=t)(x), f(x).cumsum(1), tol * 20)
        table = randn(500, 300, t=t)
        ids = torch.randint(0, 500, (77,), device=DEV, dtype=torch.int32)
        check(f"embedding {t}", blk.kernel(f"{EX}/embedding.blk", T=t)(ids, table),
              f(table)[ids.long()], 0)
        sizes, bm = [70, 0, 301, 5, 129], 128
        m, k, n = sum(sizes), 136, 200
        work, lo = [], 0
        for g, s in enumerate(sizes):
            work += [(b, g, lo, lo + s) for b in range(lo // bm, (lo + s - 1) // bm + 1)] if s else []
            lo += s
        work += [(0, 0, 0, 0)] * (len(sizes) - 1)  # padded to cdiv(M, BM) + G - 1 items
        xg, wg = randn(m, k, t=t), randn(len(sizes), k, n, t=t)
        y = blk.kernel(f"{EX}/grouped_matmul.blk", T=t)(
            torch.tensor(work, device=DEV, dtype=torch.int32), xg, wg)
        offs = [0] + list(torch.tensor(sizes).cumsum(0))
        ref = torch.cat([f(xg[offs[g]:offs[g + 1]]) @ f(wg[g]) for g in range(len(sizes))])
        check(f"grouped_matmul {t}", y, ref, tol)
    xq = torch.randint(-128, 128, (130, 77), device=DEV, dtype=torch.int8)
    wq = torch.randint(-128, 128, (70, 77), device=DEV, dtype=torch.int8)
    sx, sw = torch.rand(130, device=DEV), torch.rand(70, device=DEV)
    ref = (xq.double() @ wq.double().T) * sx.double()[:, None] * sw.double()[None, :]
    check("matmul_int8", blk.kernel(f"{EX}/matmul_int8.blk")(xq, wq, sx, sw), ref, 1e-6)
    b, mp, kvh, g, ps, d = 3, 5, 2, 8, 16, 128
    tables = torch.randperm(b * mp, device=DEV, dtype=torch.int32).reshape(b, mp)
    lens = torch.tensor([80, 0, 33], device=DEV, dtype=torch.int32)
    q = randn(b, kvh, g, d, t="bf16")
    kc, vc = randn(kvh, b * mp, ps, d, t="bf16"), randn(kvh, b * mp, ps, d, t="bf16")
    o = blk.kernel(f"{EX}/paged_attention.blk", name="paged_attention")(tables, lens, q, kc, vc)
    for s in range(b):
        ln = int(lens[s])
        if ln == 0:
            check(f"paged_attention seq {s} (empty)", o[s], torch.zeros_like(f(o[s])), 0)
            continue
        pages = tables[s, :(ln + ps - 1) // ps].long()
        ks = f(kc[:, pages].reshape(kvh, -1, d)[:, :ln])  # [kvh, ln, d]
        vs = f(vc[:, pages].reshape(kvh, -1, d)[:, :ln])
        ref = F.scaled_dot_product_attention(f(q[s]), ks, vs)  # the g rows share their KV head
        check(f"paged_attention seq {s}", o[s], ref, TOL["bf16"])


FP8_SRC = """
kernel quant[T = f8e4m3, B = 256](x: in f32[N] block (B) index (i) -> (i),
                                  q: out T[N] block (B) index (i) -> (i)) grid (cdiv(N, B)) {
    q[...] = x[...].astype(T);
}
"""


@case
def test_fp8():
    """torch.float8_e4m3fn / float8_e5m2 tensors in and out: blk's
    conversion against torch's (in range: torch gives NaN past the largest
    finite value where blk saturates), and examples/matmul_fp8.blk on
    wgmma (the default config and the tuned one, ragged)."""
    src = os.path.join(tempfile.mkdtemp(), "fp8.blk")
    with open(src, "w") as f:
        f.write(FP8_SRC)
    for t, tt, top in (("f8e4m3", torch.float8_e4m3fn, 448.0), ("f8e5m2", torch.float8_e5m2, 57344.0)):
        x = torch.randn(100003, device=DEV) * torch.exp2(torch.randint(-14, 14, (100003,), device=DEV))
        x = x.clamp(-top, top)
        q = blk.kernel(src, name="quant", T=t)(x)
        assert q.dtype == tt, q.dtype
        differ = (q.view(torch.uint8) != x.to(tt).view(torch.uint8)).sum().item()
        check(f"astype({t}): codes unlike torch's", torch.tensor(float(differ)), torch.tensor(0.0), 0)
        a = torch.randn(300, 333, device=DEV).to(tt)
        w = torch.randn(200, 333, device=DEV).to(tt)
        sx, sw = torch.rand(300, device=DEV), torch.rand(200, device=DEV)
        ref = (a.double() @ w.double().T) * sx.double()[:, None] * sw.double()[None, :]
        for cfg in ({}, {"BM": 128, "BN": 256, "BK": 128, "num_warps": 8, "num_stages": 4}):
            y = blk.kernel(f"{EX}/matmul_fp8.blk", T=t, OUT="f32", **cfg)(a, w, sx, sw)
            # Hopper's fp8 sums keep about 14 bits a k32 step (blk, like
            # Triton's default, does not promote them to f32 every slab)
            check(f"matmul_fp8 {t} {cfg or 'default'}", y, ref, 2e-2)


def w4_pack(q):
    """GPTQ's packing of 4-bit values q [K, N] (int32, K a multiple of 8)."""
    w = torch.zeros(q.shape[0] // 8, q.shape[1], dtype=torch.int32, device=q.device)
    for t in range(8):
        w |= q[t::8] << (4 * t)
    return w


@case
def test_quantized():
    """examples/matmul_w4a16.blk and python/tests/quant.blk's spellings
    (int4 unpacked on the way in, i8 with zero points, block-scaled fp8)
    against torch at ragged sizes, `auto` and given blocks."""
    Q = os.path.join(ROOT, "python", "tests", "quant.blk")
    cfgs = [{}, dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
            dict(BM=64, BN=128, BK=32, num_warps=4, num_stages=4),
            dict(BM=16, BN=64, BK=128, num_warps=4, num_stages=4)]
    for t in ("bf16", "f16"):
        for (M, N, K) in ((300, 260, 384), (16, 1000, 1024), (1, 333, 256), (1000, 1200, 2048)):
            G = 128
            x = randn(M, K, t=t)
            q = torch.randint(0, 16, (K, N), device=DEV, dtype=torch.int32)
            sc = torch.rand(K // G, N, device=DEV) * 0.02 + 0.01
            w = (q - 8).float() * sc.repeat_interleave(G, 0)
            ref = (x.float() @ w).to(DTYPES[t])
            for cfg in cfgs:
                k = blk.kernel(f"{EX}/matmul_w4a16.blk", T=t, G=G, **cfg)
                check(f"matmul_w4a16 {t} {M}x{N}x{K} {cfg or 'auto'}", k(x, w4_pack(q), sc.to(DTYPES[t])),
                      x.float() @ ((q - 8).float() * sc.to(DTYPES[t]).float().repeat_interleave(G, 0)), TOL[t])
            for cfg in cfgs[1:]:
                check(f"w4_rowscale {t} {M}x{N}x{K} {cfg}",
                      blk.kernel(Q, name="w4_rowscale", T=t, G=G, **cfg)(x, w4_pack(q), sc), ref, TOL[t])
                qt = q.t().contiguous()
                u8 = (qt[:, 0::2] | (qt[:, 1::2] << 4)).to(torch.uint8)
                check(f"w4_u8 {t} {M}x{N}x{K} {cfg}",
                      blk.kernel(Q, name="w4_u8", T=t, G=G, **cfg)(x, u8, sc.t().contiguous()), ref, TOL[t])
                q8 = torch.randint(-128, 128, (K, N), device=DEV, dtype=torch.int8)
                z = torch.randint(-3, 4, (N,), device=DEV, dtype=torch.int32)
                s8 = torch.rand(N, device=DEV) * 0.01
                check(f"w8_zero {t} {M}x{N}x{K} {cfg}",
                      blk.kernel(Q, name="w8_zero", T=t, **cfg)(x, q8, z, s8),
                      x.float() @ ((q8.int() - z).float()) * s8, TOL[t])
    if hasattr(torch, "float8_e4m3fn"):
        for (M, N, K) in ((300, 260, 384), (1000, 1200, 2048), (128, 256, 128)):
            x8 = randn(M, K).to(torch.float8_e4m3fn)
            w8 = randn(N, K).to(torch.float8_e4m3fn)
            sx = torch.rand(M, (K + 127) // 128, device=DEV) + 0.5
            sw = torch.rand((N + 127) // 128, (K + 127) // 128, device=DEV) + 0.5
            want = (x8.float() * sx.repeat_interleave(128, 1)[:, :K]) @ \
                (w8.float() * sw.repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]).t()
            for cfg in (dict(BM=128, BN=128, num_warps=8), dict(BM=64, BN=128, num_warps=4)):
                check(f"fp8_blockwise {M}x{N}x{K} {cfg}",
                      blk.kernel(Q, name="fp8_blockwise", **cfg)(x8, w8, sx, sw), want, 5e-2)


@case
def test_strides_and_outputs():
    mm = blk.kernel(f"{EX}/matmul.blk")
    big = randn(600, 400)
    a = big[3:518, 10:310]          # a sliced view
    b = randn(259, 300).T           # column-major
    assert not a.is_contiguous() and not b.is_contiguous()
    check("matmul strided", mm(a, b), a @ b, TOL["f32"])
    c = torch.empty(515, 259, device=DEV)
    assert mm(a, b, c) is c
    check("matmul into c", c, a @ b, TOL["f32"])
    c2 = torch.empty(515, 518, device=DEV)[:, ::2]  # a strided output
    mm(a=a, b=b, c=c2)
    check("matmul into a strided c", c2, a @ b, TOL["f32"])


@case
def test_transposed_operands():
    """Operands passed as transposed views (`dy.T`, `w.T`: contiguous along
    their first dim), the way a backward pass hands them over: matmul,
    matmul_nt and matmul_dynamic at several configs, each operand either
    way, 16-bit (TMA copies such a slab as it lies, its slot transposed,
    wgmma reading it MN-major; the plain pipeline's cp.async along the
    contiguous dim at the small habitual configs) and f32; ragged sizes,
    and a leading dim whose rows are not 16 bytes apart (no TMA: pieces of
    one element)."""
    configs = ({}, dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=4),
               dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=3),
               dict(BM=64, BN=128, BK=64, num_warps=4, num_stages=4),
               dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=3),
               dict(BM=64, BN=64, BK=32, num_warps=4, num_stages=3),
               dict(BM=128, BN=128, BK=32, num_warps=4, num_stages=3))
    for t in ("bf16", "f16", "f32"):
        for M, N, K in ((512, 384, 256), (1000, 264, 520), (515, 259, 300)):
            a, b = randn(M, K, t=t), randn(K, N, t=t)
            at, bt = a.T.contiguous().T, b.T.contiguous().T  # same values, transposed storage
            ref = f(a) @ f(b)
            for cfg in configs if t != "f32" else configs[:2] + configs[-2:]:
                mm = blk.kernel(f"{EX}/matmul.blk", T=t, **cfg)
                for name, x, y in (("A.T", at, b), ("B.T", a, bt), ("both", at, bt)):
                    check(f"matmul {t} {M}x{N}x{K} {name} {cfg or 'default'}", mm(x, y), ref, TOL[t])
            nt = blk.kernel(f"{EX}/matmul_nt.blk", T=t, **configs[1])
            w = b.T.contiguous()
            check(f"matmul_nt {t} {M}x{N}x{K} A.T", nt(at, w), ref, TOL[t])
            check(f"matmul_nt {t} {M}x{N}x{K} W.T", nt(a, w.T.contiguous().T), ref, TOL[t])
    dyn = blk.kernel(f"{EX}/matmul_dynamic.blk", T="bf16")
    for m in (64, 1000, 1024):
        x, w = randn(m, 256, t="bf16"), randn(384, 256, t="bf16")
        check(f"matmul_dynamic M={m} x.T", dyn(x.T.contiguous().T, w), f(x) @ f(w).T, TOL["bf16"])
        check(f"matmul_dynamic M={m} w.T", dyn(x, w.T.contiguous().T), f(x) @ f(w).T, TOL["bf16"])


@case
def test_coarsen():
    """Small blocks at sizes with programs enough to merge (lower/passes/
    coarsen.c: 64-wide blocks of a tensor-core dot run as 128-wide tiles):
    the examples and user spellings at the habitual configs, NN, NT,
    transposed views, batched, an epilogue, split-K, SwiGLU, attention
    (non-causal: merged; causal: not), fp8, ragged sizes where only one
    axis merges (an odd count of blocks on the other)."""
    cfgs = (dict(BM=64, BN=64, BK=32, num_warps=4, num_stages=2),
            dict(BM=64, BN=64, BK=32, num_warps=4, num_stages=3),
            dict(BM=64, BN=128, BK=32, num_warps=4, num_stages=4),
            dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4),
            dict(BM=64, BN=64, BK=64, num_warps=8, num_stages=3))
    for t in ("bf16", "f16"):
        for M, N, K in ((2048, 2048, 256), (2000, 1984, 300), (1000, 4096, 520)):
            a, b = randn(M, K, t=t), randn(K, N, t=t)
            ref = f(a) @ f(b)
            w = b.T.contiguous()
            for cfg in cfgs:
                mm = blk.kernel(f"{EX}/matmul.blk", T=t, **cfg)
                check(f"coarsen matmul {t} {M}x{N}x{K} {cfg}", mm(a, b), ref, TOL[t])
                check(f"coarsen matmul {t} {M}x{N}x{K} A.T {cfg}", mm(a.T.contiguous().T, b), ref, TOL[t])
                nt = blk.kernel(f"{EX}/matmul_nt.blk", T=t, **cfg)
                check(f"coarsen matmul_nt {t} {M}x{N}x{K} {cfg}", nt(a, w), ref, TOL[t])
            bias = randn(N, t=t)
            ep = blk.kernel(f"{EX}/matmul_epilogue.blk", T=t, **cfgs[0])
            check(f"coarsen matmul_epilogue {t} {M}x{N}x{K}", ep(a, b, bias),
                  F.gelu(ref + f(bias), approximate="tanh"), TOL[t])
            c = torch.zeros(M, N, device=DEV)
            blk.kernel(f"{EX}/matmul_splitk.blk", T=t, S=2, **cfgs[1])(a, b, c)
            check(f"coarsen matmul_splitk {t} {M}x{N}x{K}", c, ref, TOL[t])
            src = os.path.join(ROOT, "python", "tests", "spellings.blk")
            fb = torch.randn(N, device=DEV)
            y = blk.kernel(src, name="nt2", T=t)(a, w, fb)
            check(f"coarsen nt2 (grid N first, .T, bias[None, :]) {t} {M}x{N}x{K}", y,
                  torch.relu(ref + fb[None, :]), TOL[t])
            s = torch.rand(M, 1, device=DEV)
            y = blk.kernel(src, name="rowscale", T=t)(a, b, s)
            check(f"coarsen rowscale ([BM, 1] scale) {t} {M}x{N}x{K}", y, ref * s, TOL[t])
        ba, bb = randn(4, 1024, 256, t=t), randn(4, 256, 768, t=t)
        check(f"coarsen bmm {t}", blk.kernel(f"{EX}/bmm.blk", T=t, **cfgs[0])(ba, bb), f(ba) @ f(bb), TOL[t])
        x, w1, w3 = randn(2048, 512, t=t) * 0.5, randn(2048, 512, t=t) * 0.1, randn(2048, 512, t=t) * 0.1
        ref = F.silu(f(x) @ f(w1).T) * (f(x) @ f(w3).T)
        check(f"coarsen swiglu {t}", blk.kernel(f"{EX}/swiglu.blk", T=t, **cfgs[1])(x, w1, w3), ref, TOL[t])
        for D in (64, 128):
            q, k, v = (randn(32, 1024, D, t=t) for _ in range(3))
            for causal in (False, True):
                att = blk.kernel(f"{EX}/attention.blk", T=t, D=D, CAUSAL=causal)
                check(f"coarsen attention {t} D={D} causal={causal}", att(q, k, v),
                      F.scaled_dot_product_attention(f(q), f(k), f(v), is_causal=causal), TOL[t])
    a = torch.randn(2048, 512, device=DEV).to(torch.float8_e4m3fn)
    w = torch.randn(1536, 512, device=DEV).to(torch.float8_e4m3fn)
    sx, sw = torch.rand(2048, device=DEV), torch.rand(1536, device=DEV)
    ref = (a.double() @ w.double().T) * sx.double()[:, None] * sw.double()[None, :]
    y = blk.kernel(f"{EX}/matmul_fp8.blk", T="f8e4m3", OUT="f32")(a, w, sx, sw)
    # Hopper's fp8 sums keep about 14 bits a k32 step (test_fp8): at K = 512,
    # 16 steps, 2.3e-2 was seen (run 195)
    check("coarsen matmul_fp8", y, ref, 3e-2)


@case
def test_huge_kernels():
    """Kernels of thousands of unrolled stores and `when`s (lower/lower_int.h,
    BLK_HUGE_KERNEL_OPS) take the linear path, whose guarded stores are
    predicated PTX stores of every width (emit_memory.c): scalar stores
    through a transit extract, block stores masked at a ragged edge, bool
    outputs."""
    n = 1500
    for t, tt in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16),
                  ("i32", torch.int32), ("i8", torch.int8)):
        body = "".join(f"    y[{i % 64}] = v[{i % 64}] + {i % 7};\n" for i in range(n))
        src = (f"kernel stores(x: in {t}[N] block (N) index (i) -> (0),\n"
               f"               y: out {t}[N] block (N) index (i) -> (0)) grid (1) {{\n"
               f"    let v = x[...];\n{body}}}\n")
        x = (torch.randn(64, device=DEV) * 20).to(tt)
        last = torch.tensor([(j + 64 * ((n - 1 - j) // 64)) % 7 for j in range(64)], device=DEV)
        check(f"huge stores {t}", blk.kernel(src)(x).double(), (x.double() + last).to(tt).double(), 0)
    for t, tt in (("f32", torch.float32), ("bf16", torch.bfloat16), ("i32", torch.int32)):
        body = "".join(f"    when program_id(0) == {i % 4} {{ y[...] = x[...] + {i % 7}; }}\n" for i in range(1200))
        src = (f"kernel whens(x: in {t}[N] block (64) index (i) -> (i),\n"
               f"             y: out {t}[N] block (64) index (i) -> (i)) grid (4) {{\n{body}}}\n")
        k = blk.kernel(src)
        for N in (256, 250):
            x = (torch.randn(N, device=DEV) * 20).to(tt)
            last = torch.tensor([(1196 + b) % 7 for b in range(4)], device=DEV).repeat_interleave(64)[:N]
            y = torch.full((N,), 7, device=DEV, dtype=tt)
            k(x, y)
            check(f"huge whens {t} N={N}", y.double(), (x.double() + last).to(tt).double(), 0)
    body = "".join(f"    when program_id(0) == {i % 4} {{ y[...] = x[...] > {i % 7}.0; }}\n" for i in range(1200))
    src = ("kernel flags(x: in f32[N] block (64) index (i) -> (i),\n"
           "             y: out bool[N] block (64) index (i) -> (i)) grid (4) {\n" + body + "}\n")
    x = torch.randn(250, device=DEV) * 8
    last = torch.tensor([(1196 + b) % 7 for b in range(4)], device=DEV).repeat_interleave(64)[:250]
    y = torch.zeros(250, device=DEV, dtype=torch.bool)
    blk.kernel(src)(x, y)
    check("huge whens bool N=250", y.double(), (x > last).double(), 0)


@case
def test_pallas_seq():
    """Pallas's TPU spellings (lower/passes/seq_loop.c): K a seq grid axis
    with the sum in scratch (matmul_acc.blk, and x @ W.T with a bias on
    the last step), and flash attention with the key blocks a seq axis
    and its statistics in scratch; ragged sizes, f16 and bf16."""
    src = os.path.join(ROOT, "python", "tests", "spellings.blk")
    cfgs = ({}, dict(BM=64, BN=64, BK=32, num_warps=4), dict(BM=64, BN=128, BK=32, num_warps=4))
    for t in ("bf16", "f16"):
        for M, N, K in ((2048, 2048, 256), (2000, 1984, 300), (1000, 4096, 520), (130, 70, 33)):
            a, b = randn(M, K, t=t), randn(K, N, t=t)
            ref = f(a) @ f(b)
            w = b.T.contiguous()
            fb = torch.randn(N, device=DEV)
            for cfg in cfgs:
                y = blk.kernel(src, name="pallas_nt", T=t, **cfg)(a, w, fb)
                check(f"pallas_nt {t} {M}x{N}x{K} {cfg}", y, ref + fb[None, :], TOL[t])
                y = blk.kernel(f"{EX}/matmul_acc.blk", T=t, **{k: v for k, v in cfg.items() if k[0] == "B"})(a, b)
                check(f"matmul_acc {t} {M}x{N}x{K} {cfg}", y, ref, TOL[t])
        for BH, S, D, cfg in ((32, 1024, 64, {}), (8, 1024, 128, {}), (4, 320, 64, dict(BQ=64, BK=64, num_warps=4))):
            q, k, v = (randn(BH, S, D, t=t) for _ in range(3))
            o = blk.kernel(src, name="pallas_attn", T=t, D=D, **cfg)(q, k, v)
            check(f"pallas_attn {t} {BH}x{S}x{D} {cfg}", o, F.scaled_dot_product_attention(f(q), f(k), f(v)), TOL[t])
            o = blk.kernel(src, name="pallas_causal", T=t, D=D, **cfg)(q, k, v)
            check(f"pallas_causal {t} {BH}x{S}x{D} {cfg}", o,
                  F.scaled_dot_product_attention(f(q), f(k), f(v), is_causal=True), TOL[t])


@case
def test_dynamic_sizes():
    """matmul_dynamic (`dynamic (M, N, K)`) on torch tensors over a sweep of
    batch sizes, strided views among them: each result against torch, and
    one compile per class of M (1; neither 16 nor BM = 64 dividing it; 16;
    64) however many values, and one for the strided view."""
    mm = blk.kernel(f"{EX}/matmul_dynamic.blk", T="bf16")
    w = randn(384, 256, t="bf16")
    for m in (1, 7, 16, 32, 64, 100, 128, 333, 1000, 1024):
        x = randn(m, 256, t="bf16")
        check(f"matmul_dynamic M={m}", mm(x, w), f(x) @ f(w).T, TOL["bf16"])
    big = randn(300, 512, t="bf16")
    check("matmul_dynamic strided x", mm(big[:, 7:263], w), f(big[:, 7:263]) @ f(w).T, TOL["bf16"])
    s = mm.cache_stats(0)
    print(f"  matmul_dynamic: {s['compiles']} compiles for 11 launches")
    assert s["compiles"] <= 5, s


@case
def test_stream():
    mm = blk.kernel(f"{EX}/matmul.blk", T="bf16")
    seen = []
    launch = blk._lib.lib.blk_launch

    def spy(func, ts, n, stream):
        seen.append(stream)
        return launch(func, ts, n, stream)
    blk._lib.lib.blk_launch = spy
    try:
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            # Produced, used and consumed on s, with no synchronization in
            # between: right only if blk launched on s.
            a = randn(2048, 2048, t="bf16")
            for _ in range(4):
                a = (a @ a.T) / 64
            b = randn(2048, 512, t="bf16")
            c = mm(a, b)
            d = c.float().sum()
        s.synchronize()
        assert seen[-1] == s.cuda_stream, (seen, s.cuda_stream)
        check("matmul on a non-default stream", d, (f(a) @ f(b)).sum(), 5e-2)
        s2 = torch.cuda.Stream()
        s2.wait_stream(torch.cuda.current_stream())
        c3 = mm(a, b, stream=s2)
        assert seen[-1] == s2.cuda_stream
        s2.synchronize()
        check("matmul with stream=", c3, f(a) @ f(b), TOL["bf16"])
    finally:
        blk._lib.lib.blk_launch = launch


@case
def test_second_gpu():
    if torch.cuda.device_count() < 2:
        print("skip: one GPU")
        return
    d1 = torch.device("cuda", 1)
    x, y = randn(5000, dev=d1), randn(5000, dev=d1)
    add = blk.kernel(f"{EX}/add.blk")
    assert torch.cuda.current_device() == 0
    z = add(x, y)
    assert z.device == d1
    # blk switched contexts for the launch; torch's current device is as it was.
    assert torch.cuda.current_device() == 0
    assert torch.empty(1, device="cuda").device.index == 0
    check("add on GPU 1", z, x + y, 0)
    try:
        add(x, randn(5000))
        raise AssertionError("mixed devices not refused")
    except blk.BlkError as e:
        assert "GPU 0" in str(e) and "GPU 1" in str(e), e


@case
def test_errors():
    add = blk.kernel(f"{EX}/add.blk")
    for bad, want in (((randn(10), randn(10, t="f16")), "launch of add"),
                      ((randn(10), torch.randn(10)), "is on the host"),
                      ((randn(10), randn(11)), "launch of add")):
        try:
            add(*bad)
            raise AssertionError(f"{want}: not refused")
        except blk.BlkError as e:
            assert want in str(e), e
    results.append(True)
    print("PASS errors")


@case
def test_interpret_on_torch():
    sm = blk.kernel(f"{EX}/softmax.blk", T="bf16")
    x = randn(37, 300, t="bf16")
    check("softmax bf16 interpreter vs GPU", sm(x, interpret=True), sm(x), 1e-2)


@case
def test_autotune():
    d = tempfile.mkdtemp(prefix="blk-tune-")
    os.environ["BLK_CACHE_DIR"] = d
    os.environ.pop("BLK_CACHE", None)  # the disk cache on, even where the caller turned it off
    configs = [dict(BM=64, BN=64, BK=32, num_warps=4), dict(BM=128, BN=128, BK=32, num_warps=8),
               dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=3)]
    mm = blk.autotune(f"{EX}/matmul.blk", configs=configs, key=["M", "N", "K"], T="bf16")
    a, b = randn(2048, 2048, t="bf16"), randn(2048, 2048, t="bf16")
    c = mm(a, b)
    check("autotuned matmul", c, f(a) @ f(b), TOL["bf16"])
    (r,) = mm.results.values()
    print(f"  tuned: {r['params']} {r['ms']:.4f} ms; timings {r['timings']}")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import blk, torch\n"
            "mm = blk.autotune(sys.argv[2], configs=eval(sys.argv[3]), key=['M','N','K'], T='bf16')\n"
            "mm._tune = None\n"  # would fail if called
            "a = torch.randn(2048, 2048, device='cuda', dtype=torch.bfloat16)\n"
            "mm(a, a); print(mm.best(a, a))")
    out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python"),
                          f"{EX}/matmul.blk", repr(configs)], capture_output=True, text=True)
    ok = out.returncode == 0 and out.stdout.strip() == str(r["params"])
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} a second process takes the tuned config from disk "
          f"{out.stdout.strip()} {out.stderr[-300:]}")


@case
def test_jax_cupy():
    try:
        import jax
        import jax.numpy as jnp
        if jax.devices()[0].platform != "gpu":
            raise ImportError("JAX without a GPU")
        x = jnp.arange(1000, dtype=jnp.float32)
        z = blk.kernel(f"{EX}/add.blk")(x, x)
        ok = bool(jnp.allclose(z, 2 * x))
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} add on JAX arrays ({type(z).__name__})")
    except ImportError:
        print("skip: no JAX")
    try:
        import cupy
        x = cupy.arange(1000, dtype=cupy.float32)
        z = blk.kernel(f"{EX}/add.blk")(x, x)
        ok = bool(cupy.allclose(z, 2 * x))
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} add on CuPy arrays")
    except ImportError:
        print("skip: no CuPy")


@case
def test_arrays_past_2g_elements():
    """Arrays of more than 2^31 elements (each dim below 2^31): 64-bit
    addresses.  u8 [65536, 32769] in and out (2 GiB each), the last rows'
    elements checked, and a bf16 [2^16, 2^15 + 8] row sum."""
    src = ("kernel inc[BR = 16, BC = 1024](x: in u8[R, C] block (BR, BC) index (i, j) -> (i, j),\n"
           "    y: out u8[R, C] block (BR, BC) index (i, j) -> (i, j)) grid (cdiv(R, BR), cdiv(C, BC)) {\n"
           "    y[...] = x[...] + 1;\n}\n")
    R, C = 65536, 32769
    x = torch.randint(0, 250, (R, C), dtype=torch.uint8, device=DEV)
    y = blk.kernel(src)(x)
    for rows in (slice(0, 2), slice(R // 2, R // 2 + 2), slice(R - 2, R)):
        ok = torch.equal(y[rows], x[rows] + 1)
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} u8 [{R}, {C}] + 1, rows {rows.start}..{rows.stop - 1}")
    del x, y
    rs = ("kernel rowsum[BR = 1, num_warps = 8](x: in bf16[R, C] block (BR, C) index (i) -> (i, 0),\n"
          "    s: out f32[R] block (BR) index (i) -> (i)) grid (cdiv(R, BR)) {\n"
          "    s[...] = sum(x[...].astype(f32), axis = 1);\n}\n")
    x = torch.randn(R, 32776, dtype=torch.bfloat16, device=DEV)
    check("bf16 [65536, 32776] row sums", blk.kernel(rs)(x), x.float().sum(1), 1e-3)


@case
def test_aot():
    """Kernels compiled ahead of time (blkc --emit=c, built into aot-test on
    the CPU machine): launched here with only the driver, against the
    interpreter."""
    tool = os.path.join(ROOT, "carry", "build", "tests", "aot", "aot-test")
    if not os.path.exists(tool):
        print("skip: no carry/build/tests/aot/aot-test (tools/pack-gpu.sh)")
        return
    out = subprocess.run([tool], capture_output=True, text=True,
                         env={**os.environ, "BLK_EXAMPLES_DIR": EX})
    print("  " + out.stdout.strip().replace("\n", "\n  "))
    ok = out.returncode == 0 and "skip" not in out.stdout
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} AOT add and matmul on the GPU {out.stderr[-300:]}")


@case
def test_figures():
    add = blk.kernel(f"{EX}/add.blk")
    x, y, z = randn(1 << 20), randn(1 << 20), torch.empty(1 << 20, device=DEV)
    add(x, y, z)
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(5000):
            add(x, y, z)
        per.append((time.perf_counter() - t0) / 5000 * 1e6)
        torch.cuda.synchronize()
    print(f"  Python launch host time (torch tensors, cached kernel): "
          f"median {sorted(per)[2]:.2f} us per launch")
    tool = os.path.join(ROOT, "carry", "build", "tools", "launch-cost")
    if os.path.exists(tool):
        d = tempfile.mkdtemp(prefix="blk-cost-")
        for run in ("first process", "second process"):
            out = subprocess.run([tool, EX], capture_output=True, text=True,
                                 env={**os.environ, "BLK_CACHE_DIR": d})
            print(f"  launch-cost, {run}:\n    " + out.stdout.strip().replace("\n", "\n    "))
    # Source to PTX in a new process: the frontend (twice: the kernel's
    # offline check and the device's program), binding, then the compiler
    # or the disk cache; the runtime (CUDA context) is made before timing.
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); t0 = time.perf_counter()\n"
            "import blk; t1 = time.perf_counter(); import torch\n"
            "a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16)\n"
            "blk._kernel.runtime(0)\n"
            "t2 = time.perf_counter()\n"
            "mm = blk.kernel(sys.argv[2], T='bf16', BM=128, BN=128, BK=32, num_warps=8)\n"
            "mm.compile(a, a); t3 = time.perf_counter()\n"
            "print('%.3f ms source to PTX %s; import blk %.1f ms' % ((t3 - t2) * 1e3, "
            "mm.cache_stats(0), (t1 - t0) * 1e3))")
    d = tempfile.mkdtemp(prefix="blk-disk-")
    for run in ("cold", "warm"):
        out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python"),
                              f"{EX}/matmul.blk"], capture_output=True, text=True,
                             env={**os.environ, "BLK_CACHE_DIR": d})
        print(f"  new process, matmul bf16 4096^3, {run} disk cache: {out.stdout.strip()} "
              f"{out.stderr[-300:]}")
    results.append(True)


def main():
    print(f"blk {blk.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"{torch.cuda.device_count()} GPU(s)")
    only = sys.argv[1:]  # test names to run, else all
    for t in (test_examples, test_training_examples, test_new_examples, test_fp8, test_quantized, test_strides_and_outputs, test_transposed_operands,
              test_coarsen, test_pallas_seq, test_huge_kernels, test_dynamic_sizes,
              test_stream,
              test_second_gpu, test_errors, test_interpret_on_torch, test_autotune, test_jax_cupy,
              test_arrays_past_2g_elements,
              test_aot, test_figures):
        if only and t.__name__ not in only:
            continue
        print(f"== {t.__name__}")
        t()
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
