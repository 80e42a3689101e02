"""Tests of the blk Python package without a GPU: interpret mode on NumPy
arrays (every example against a NumPy reference), arrays and their strides
and dtypes, errors, compile(), the disk cache across processes, and, under
the stand-in driver of tests/runtime (BLK_FAKE_CUDA: device memory is host
memory, launches compute nothing but take a made-up time), the GPU launch
path and the autotuner with its results on disk.

Runs under pytest, or alone: `python3 python/tests/test_blk.py` (prints
"N passed, N failed").  Needs BLK_LIBRARY (or an installed blk) and NumPy.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# BLK_TEST_INSTALLED=1: test the blk that `pip install .` installed, not python/.
if os.environ.get("BLK_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))
EX = os.path.join(ROOT, "examples")
# Each test process gets a cache directory of its own.
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-pytest-cache-"))
os.environ.pop("BLK_CACHE", None)
os.environ.pop("BLK_INTERPRET", None)

import blk  # noqa: E402
from blk import _arrays  # noqa: E402

rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def raises(exc, fn, *args, **kw):
    """The exception fn raised (failing if none, or another kind)."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def close(got, want, tol=1e-4):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = np.max(np.abs(got - want) / (1 + np.abs(want))) if want.size else 0.0
    assert err <= tol, f"max relative error {err} > {tol}"


def bf16_bits(x):
    """float32 -> bfloat16 bit patterns (round to nearest even) as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


# ---- every example in the interpreter against NumPy ----------------------------

def gelu(h):
    return 0.5 * h * (1 + np.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3)))


def attention_ref(q, k, v, causal):
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def layernorm_ref(x, w, b):
    m = x.mean(1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(1, keepdims=True) + 1e-5) * w + b


def softmax_ref(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


MM = dict(BM=16, BN=16, BK=16)


def test_add():
    x, y = rand(1000), rand(1000)
    close(blk.kernel(f"{EX}/add.blk")(x, y, interpret=True), x + y, 0)


def test_softmax():
    x = rand(13, 77)
    close(blk.kernel(f"{EX}/softmax.blk")(x, interpret=True), softmax_ref(x), 1e-5)


def test_matmuls():
    a, b = rand(33, 20), rand(20, 18)
    for name in ("matmul", "matmul_acc"):
        close(blk.kernel(f"{EX}/{name}.blk", **MM)(a, b, interpret=True), a @ b)
    bt = np.ascontiguousarray(b.T)
    close(blk.kernel(f"{EX}/matmul_nt.blk", **MM)(a, bt, interpret=True), a @ b)
    bias = rand(18)
    close(blk.kernel(f"{EX}/matmul_epilogue.blk", **MM)(a, b, bias, interpret=True),
          gelu(a @ b + bias))
    c = np.zeros((33, 18), np.float32)
    blk.kernel(f"{EX}/matmul_splitk.blk", S=3, **MM)(a, b, c, interpret=True)
    close(c, a @ b)


def test_out_read_after_store():
    """An `out` Ref read after the kernel stored to it: the JAX Pallas
    tutorial's matmul accumulating into its output over a seq K axis
    (heldout.blk's tpu_acc_out), at a ragged shape, against NumPy; and the
    read of an out Ref before any store refused with its fix."""
    k = blk.kernel(os.path.join(HERE, "heldout.blk"), name="tpu_acc_out", T="f32", BM=16, BN=16,
                   BK=8)
    a, b = rand(37, 29), rand(29, 21)
    close(k(a, b, interpret=True), a @ b)
    z = np.full((37, 21), np.nan, np.float32)  # given, it is written all the same
    k(a, b, z, interpret=True)
    close(z, a @ b)
    e = raises(blk.CompileError, blk.kernel,
               "kernel k(x: in f32[N], y: out f32[N]) {\n    y[...] += x[...];\n}\n")
    assert "cannot read `y` before the kernel stores to it" in str(e), str(e)
    assert "declare it `inout`" in str(e), str(e)


def test_triton_pointer_kernels():
    """heldout.blk's Triton-style matmuls (whole-array Refs, blocks read as
    outer products of iota offsets) at a ragged shape, against NumPy."""
    a, b, w = rand(37, 29), rand(29, 45), rand(45, 29)
    for name, args, ref in (("triton_mm_pointers", (a, b), a @ b),
                            ("triton_linear_pointers", (a, w), a @ w.T),
                            ("triton_mm_tutorial", (a, b), a @ b)):
        k = blk.kernel(os.path.join(HERE, "heldout.blk"), name=name, T="f32", BM=16, BN=16, BK=8)
        close(k(*args, interpret=True), ref)


def test_triton_conv_nhwc():
    """heldout.blk's Triton implicit-GEMM convolution (padding by a `where`
    on gathered rows, whose lowering drops it: canonicalize's bounds-mask)
    at a ragged shape, in the interpreter, against a NumPy convolution."""
    import numpy as np
    N, H, W, C, OC = 2, 5, 4, 6, 5
    x, w = rand(N, H, W, C), rand(OC, 3, 3, C)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((N, H, W, OC), np.float32)
    for r in range(3):
        for s in range(3):
            ref += xp[:, r:r + H, s:s + W, :] @ w[:, r, s, :].T
    k = blk.kernel(os.path.join(HERE, "heldout.blk"), name="tri_conv_nhwc", T="f32", BLOCK_M=16, BLOCK_N=8,
                   BLOCK_K=4)
    close(k(x, w, interpret=True), ref)


def test_pallas_causal_branches():
    """heldout.blk's Pallas causal attention kernels whose masked and plain
    steps are two branches (a when/else through a helper, and two whens
    on `run && edge` / `run && !edge` at a ragged S), in the interpreter
    against NumPy: the GPU lowering merges the branches (branches.c)."""
    def causal(q, k, v):
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v
    cfg = dict(T="f32", BQ=16, BK=16, D=16)
    q, k, v = (rand(2, 48, 3, 16) for _ in range(3))  # [B, S, H, D]
    t = lambda x: np.ascontiguousarray(np.swapaxes(x, 1, 2))
    got = blk.kernel(os.path.join(HERE, "heldout.blk"), name="tpu_flash_causal", **cfg)(q, k, v, interpret=True)
    close(got, np.swapaxes(causal(t(q), t(k), t(v)), 1, 2), 1e-5)
    q, k, v = (rand(2, 3, 45, 16) for _ in range(3))  # [B, H, S, D], S ragged
    got = blk.kernel(os.path.join(HERE, "heldout.blk"), name="tpu_flash_two_whens", **cfg)(q, k, v, interpret=True)
    close(got, causal(q, k, v), 1e-5)


def test_negative_indices_count_from_the_end():
    """x[-k] (k a constant) on a Ref is x[N - k], N a launch size or a
    constant (it read the fill, 0, on a launch size); loads and stores
    alike.  A run-time index is not wrapped."""
    src = ("kernel neg(x: in f32[N], c: in f32[8, M], y: out f32[7], z: out f32[N]) {\n"
           "    y[0] = x[-1];\n    y[1] = x[-3];\n    y[2] = c[-1, -1];\n    y[3] = c[-8, -2];\n"
           "    y[4] = x[ds(0, 4)][-1];\n    y[5] = x[-N];\n    y[6] = c[2 - 3, 0];\n"
           "    z[...] = x[...];\n    z[-2] = 100.0;\n}\n")
    x, c = rand(10), rand(8, 5)
    y, z = blk.kernel(src)(x, c, interpret=True)
    # x[-N] is no constant: a run-time index outside the dim reads the fill
    close(y, [x[-1], x[-3], c[-1, -1], c[-8, -2], x[3], 0, c[-1, 0]])
    want = x.copy()
    want[-2] = 100
    close(z, want)


def w4_pack(q):
    """GPTQ's packing of 4-bit values q [K, N] (K a multiple of 8): [K / 8, N]
    i32, value k % 8 of each word in bits 4 * (k % 8) up."""
    w = np.zeros((q.shape[0] // 8, q.shape[1]), np.uint32)
    for t in range(8):
        w |= q[t::8].astype(np.uint32) << (4 * t)
    return w.view(np.int32)


def test_matmul_w4a16():
    # ragged M and N, K of three groups of 16, blocks given and `auto`
    M, N, K, G = 19, 21, 48, 16
    x, q = rand(M, K), rng.integers(0, 16, (K, N))
    s = (rng.random((K // G, N)) * 0.1 + 0.01).astype(np.float32)
    want = x @ ((q - 8) * np.repeat(s, G, 0))
    for cfg in (dict(BM=8, BN=8, BK=16), dict(BM=16, BN=32, BK=32), {}):
        close(blk.kernel(f"{EX}/matmul_w4a16.blk", G=G, **cfg)(x, w4_pack(q), s, interpret=True), want)


def test_quant_spellings():
    # python/tests/quant.blk's int4 and int8 spellings in f32 (the GPU tests
    # run them in bf16/f16): GPTQ rows with a row of scales a step, plain
    # nibbles unpacked by interleave, i8 with zero points; ragged M and N
    Q = os.path.join(ROOT, "python", "tests", "quant.blk")
    M, N, K, G = 13, 21, 64, 32
    cfg = dict(T="f32", BM=8, BN=8, BK=16, num_warps=4, num_stages=2)
    x, q = rand(M, K), rng.integers(0, 16, (K, N))
    s = (rng.random((K // G, N)) * 0.1 + 0.01).astype(np.float32)
    want = x @ ((q - 8) * np.repeat(s, G, 0))
    close(blk.kernel(Q, name="w4_rowscale", G=G, **cfg)(x, w4_pack(q), s, interpret=True), want)
    qt = q.T
    u8 = (qt[:, 0::2] | (qt[:, 1::2] << 4)).astype(np.uint8)
    close(blk.kernel(Q, name="w4_u8", G=G, **cfg)(x, u8, np.ascontiguousarray(s.T), interpret=True), want)
    q8 = rng.integers(-128, 128, (K, N)).astype(np.int8)
    z = rng.integers(-3, 4, N).astype(np.int32)
    s8 = (rng.random(N) * 0.01).astype(np.float32)
    close(blk.kernel(Q, name="w8_zero", **cfg)(x, q8, z, s8, interpret=True),
          (x @ (q8.astype(np.int32) - z).astype(np.float32)) * s8)


def test_bmm():
    a, b = rand(3, 17, 9), rand(3, 9, 20)
    close(blk.kernel(f"{EX}/bmm.blk", **MM)(a, b, interpret=True), a @ b)


def test_norms_and_colsum():
    x, w, b = rand(5, 40), rand(40), rand(40)
    close(blk.kernel(f"{EX}/layernorm.blk")(x, w, b, interpret=True), layernorm_ref(x, w, b))
    close(blk.kernel(f"{EX}/rmsnorm.blk")(x, w, interpret=True),
          x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w)
    close(blk.kernel(f"{EX}/colsum.blk", BR=2, BC=8)(x, interpret=True), x.sum(0))


def test_attention():
    q, k, v = rand(2, 40, 16), rand(2, 40, 16), rand(2, 40, 16)
    for causal in (False, True):
        att = blk.kernel(f"{EX}/attention.blk", BQ=16, BK=16, D=16, CAUSAL=causal)
        close(att(q, k, v, interpret=True), attention_ref(q, k, v, causal), 1e-4)


def attention_grads_ref(q, k, v, do, causal):
    """Attention's forward (O, the log-sum-exp L) and its gradients, in f64."""
    q, k, v, do = (t.astype(np.float64) for t in (q, k, v, do))
    c = 1 / np.sqrt(q.shape[-1])
    s = q @ k.transpose(0, 2, 1) * c
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    p = np.exp(s - lse[..., None])
    o = p @ v
    dv = p.transpose(0, 2, 1) @ do
    dp = do @ v.transpose(0, 2, 1)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    return o, lse, ds @ k * c, ds.transpose(0, 2, 1) @ q * c, dv


def test_attention_backward():
    """examples/attention_bwd.blk's four kernels, ragged S, causal or not."""
    src = f"{EX}/attention_bwd.blk"
    q, k, v, do = rand(2, 40, 16), rand(2, 40, 16), rand(2, 40, 16), rand(2, 40, 16)
    for causal in (False, True):
        o_r, lse_r, dq_r, dk_r, dv_r = attention_grads_ref(q, k, v, do, causal)
        b = dict(D=16, CAUSAL=causal)
        o, lse = blk.kernel(src, name="attention_fwd_lse", BQ=16, BK=16, **b)(q, k, v, interpret=True)
        close(o, o_r, 1e-4)
        close(lse, lse_r, 1e-4)
        delta = blk.kernel(src, name="attention_bwd_preprocess", BR=16, D=16)(o, do, interpret=True)
        close(delta, (o_r * do).sum(-1), 1e-4)
        dk, dv = blk.kernel(src, name="attention_bwd_dkdv", BM=16, BN=8, **b)(q, k, v, do, lse, delta,
                                                                             interpret=True)
        close(dk, dk_r, 1e-4)
        close(dv, dv_r, 1e-4)
        dq = blk.kernel(src, name="attention_bwd_dq", BM=8, BN=16, **b)(q, k, v, do, lse, delta, interpret=True)
        close(dq, dq_r, 1e-4)
    # grouped-query heads: 4 query heads on 2 key/value heads (G = 2); dK and
    # dV per query head, summed over each group
    q, do = rand(4, 40, 16), rand(4, 40, 16)
    kg, vg = rand(2, 40, 16), rand(2, 40, 16)
    o_r, lse_r, dq_r, dk_r, dv_r = attention_grads_ref(q, np.repeat(kg, 2, 0), np.repeat(vg, 2, 0), do, True)
    b = dict(D=16, G=2, CAUSAL=True)
    o, lse = blk.kernel(src, name="attention_fwd_lse", BQ=16, BK=16, **b)(q, kg, vg, interpret=True)
    close(o, o_r, 1e-4)
    delta = blk.kernel(src, name="attention_bwd_preprocess", BR=16, D=16)(o, do, interpret=True)
    dk, dv = blk.kernel(src, name="attention_bwd_dkdv", BM=16, BN=8, **b)(q, kg, vg, do, lse, delta, interpret=True)
    close(dk.reshape(2, 2, 40, 16).sum(1), dk_r.reshape(2, 2, 40, 16).sum(1), 1e-4)
    close(dv.reshape(2, 2, 40, 16).sum(1), dv_r.reshape(2, 2, 40, 16).sum(1), 1e-4)
    dq = blk.kernel(src, name="attention_bwd_dq", BM=8, BN=16, **b)(q, kg, vg, do, lse, delta, interpret=True)
    close(dq, dq_r, 1e-4)


def test_transformer_kernels():
    """examples/transformer/'s kernels (the training example's RMSNorm,
    RoPE, head swap, transpose, SwiGLU, cross-entropy and residual dropout,
    each with its backward) against NumPy at ragged sizes."""
    tf = f"{EX}/transformer"
    # RMSNorm: y, rstd; dx and dw's partial sums, then their sum
    R, C = 37, 48
    x, w, dy = rand(R, C), rand(C), rand(R, C)
    r = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(1) + 1e-6)
    y, rstd = blk.kernel(f"{tf}/rmsnorm.blk", name="rmsnorm_fwd", BR=2)(x, w, interpret=True)
    close(y, x * r[:, None] * w)
    close(rstd, r)
    dx, dwp = blk.kernel(f"{tf}/rmsnorm.blk", name="rmsnorm_bwd", RP=8, RB=4)(x, w, rstd, dy, interpret=True)
    g = dy * w
    close(dx, r[:, None] * (g - x * r[:, None] ** 2 * (g * x).mean(1, keepdims=True)))
    assert dwp.shape == (5, C)
    dw = blk.kernel(f"{tf}/rmsnorm.blk", name="rmsnorm_dw", BP=2, BC=16)(dwp, interpret=True)
    close(dw, (dy * x * r[:, None]).sum(0))
    # RoPE fused with the split into heads, and back
    B, S, H, D = 2, 13, 3, 8
    qkv, dq, dk, dv = rand(B, S, 3 * H, D), rand(B, H, S, D), rand(B, H, S, D), rand(B, H, S, D)
    ang = np.arange(S)[:, None] * 10000.0 ** (-np.arange(D // 2) / (D // 2))
    cos = np.cos(np.concatenate([ang, ang], 1)).astype(np.float32)
    sin = np.sin(np.concatenate([ang, ang], 1)).astype(np.float32)

    def rot(x, sign=1):  # the rotation by +-angle: the backward is sign -1
        x1, x2 = x[..., :D // 2], x[..., D // 2:]
        return x * cos + sign * np.concatenate([-x2, x1], -1) * sin

    heads = qkv.reshape(B, S, 3, H, D).transpose(2, 0, 3, 1, 4)   # [3, B, H, S, D]
    q, k, v = blk.kernel(f"{tf}/rope.blk", name="rope_split", H=H, D=D, BS=4)(qkv, cos, sin, interpret=True)
    close(q, rot(heads[0]))
    close(k, rot(heads[1]))
    close(v, heads[2], 0)
    dqkv = blk.kernel(f"{tf}/rope.blk", name="rope_merge", H=H, D=D, BS=4)(dq, dk, dv, cos, sin, interpret=True)
    close(dqkv, np.stack([rot(dq, -1), rot(dk, -1), dv]).transpose(1, 3, 0, 2, 4).reshape(B, S, 3 * H, D))
    x = rand(2, 3, 13, 8)
    close(blk.kernel(f"{tf}/heads.blk", BQ=4)(x, interpret=True), x.transpose(0, 2, 1, 3), 0)
    # SwiGLU with the stacked weight [W1; W3], and its backward
    M, K, N = 19, 24, 20
    x, w, dh = rand(M, K), rand(2, N, K) * 0.3, rand(M, N)
    gg, uu = x @ w[0].T, x @ w[1].T
    sg = 1 / (1 + np.exp(-gg))
    cfg = dict(BM=8, BN=8, BK=8, num_warps=4, num_stages=2)
    close(blk.kernel(f"{tf}/swiglu.blk", name="swiglu_fwd", **cfg)(x, w, interpret=True), gg * sg * uu)
    dgu = blk.kernel(f"{tf}/swiglu.blk", name="swiglu_bwd", **cfg)(x, w, dh, interpret=True)
    close(dgu[:, 0], dh * uu * sg * (1 + gg * (1 - sg)))
    close(dgu[:, 1], dh * gg * sg)
    # cross-entropy: per row over a vocabulary of several chunks, then the mean
    M, V = 11, 50
    lg, tg, dl = rand(M, V) * 3, rng.integers(0, V, M).astype(np.int32), rand(M)
    lse_r = np.log(np.exp(lg.astype(np.float64)).sum(1))
    src = f"{tf}/cross_entropy.blk"
    loss, lse = blk.kernel(src, name="ce_fwd", BR=4, BV=16)(lg, tg, interpret=True)
    close(lse, lse_r)
    close(loss, lse_r - lg[np.arange(M), tg])
    p = np.exp(lg - lse_r[:, None])
    p[np.arange(M), tg] -= 1
    close(blk.kernel(src, name="ce_bwd", BR=4, BV=16)(lg, tg, lse, dl, interpret=True), p * dl[:, None])
    close(blk.kernel(src, name="mean_fwd", B=4)(loss, interpret=True), [loss.mean()])
    dy = np.array([2.0], np.float32)
    close(blk.kernel(src, name="mean_bwd", B=4)(loss, dy, interpret=True), np.full(M, 2.0 / M))
    # the residual add with dropout draws examples/dropout.blk's mask
    res, x, seed = rand(300), rand(300), np.array([7], np.int32)
    y = blk.kernel(f"{tf}/dropout_add.blk", B=64, P=0.25)(seed, res, x, interpret=True)
    close(y, res + blk.kernel(f"{EX}/dropout.blk", name="dropout", B=128, P=0.25)(seed, x, interpret=True))


# ---- arrays -------------------------------------------------------------------

def test_outputs_given_named_and_returned():
    add = blk.kernel(f"{EX}/add.blk")
    x, y, z = rand(10), rand(10), np.zeros(10, np.float32)
    assert add(x, y, z, interpret=True) is z
    close(z, x + y, 0)
    z2 = np.zeros(10, np.float32)
    assert add(y=y, x=x, z=z2, interpret=True) is z2
    close(z2, x + y, 0)
    out = add(x, y=y, interpret=True)
    assert out.shape == (10,) and out.dtype == np.float32


def test_strides_respected():
    mm = blk.kernel(f"{EX}/matmul.blk", **MM)
    big = rand(40, 30)
    a = big[1:34:1, ::2]      # a strided view, not copied
    b = rand(20, 15).T        # column-major
    assert not a.flags.c_contiguous and not b.flags.c_contiguous
    close(mm(a, b, interpret=True), a @ b)
    x = rand(50)
    close(blk.kernel(f"{EX}/add.blk")(x[::5], x[1::5], interpret=True), x[::5] + x[1::5], 0)


def test_dtypes():
    add16 = blk.kernel(f"{EX}/add.blk", T="f16")
    x, y = rand(64, dtype=np.float16), rand(64, dtype=np.float16)
    close(add16(x, y, interpret=True), x.astype(np.float32) + y, 1e-3)
    addbf = blk.kernel(f"{EX}/add.blk", T="bf16")
    xf, yf = rand(64), rand(64)
    z = addbf(bf16_bits(xf), bf16_bits(yf), interpret=True)
    assert z.dtype.itemsize == 2
    close(bf16_value(z.view(np.uint16)), bf16_value(bf16_bits(xf)) + bf16_value(bf16_bits(yf)),
          1e-2)
    addi = blk.kernel(f"{EX}/add.blk", T="i32")
    xi = np.arange(10, dtype=np.int32)
    assert (addi(xi, xi, interpret=True) == 2 * xi).all()
    e = raises(blk.BlkError, blk.kernel(f"{EX}/add.blk"), xi, xi, interpret=True)
    assert "launch of add" in str(e) and "i32" in str(e), e
    e = raises(blk.BlkError, blk.kernel(f"{EX}/add.blk"), np.zeros(3), np.zeros(3),
               interpret=True)
    assert "NumPy dtype float64 has no blk dtype" in str(e)


def test_int8_dtypes():
    """i8 and u8 arrays go in and come out as NumPy int8/uint8; the
    arithmetic wraps as NumPy's does."""
    addi8 = blk.kernel(f"{EX}/add.blk", T="i8")
    x = np.arange(-128, 128, dtype=np.int8)
    z = addi8(x, x[::-1].copy(), interpret=True)
    assert z.dtype == np.int8 and (z == (x + x[::-1])).all()
    addu8 = blk.kernel(f"{EX}/add.blk", T="u8")
    u = np.arange(256, dtype=np.uint8)
    z = addu8(u, u, interpret=True)
    assert z.dtype == np.uint8 and (z == u + u).all()
    e = raises(blk.BlkError, addi8, u, u, interpret=True)
    assert "launch of add" in str(e) and "u8" in str(e), e


U32_SRC = """
kernel u32k(x: in u32[N], y: in u32[N], h: out u32[N], q: out u32[N], lt: out bool[N], w: out u32[N]) {
    h[...] = x[...] >> 28;
    q[...] = x[...] ~/ y[...];
    lt[...] = x[...] < y[...];
    w[...] = randint(7, iota(N)).astype(u32);
}
"""


def test_u32_dtype():
    """u32 arrays go in and come out as NumPy uint32: >> is logical, ~/ and
    < unsigned, the top bit a value bit; randint's i32 words as u32 are
    Triton's uint32 words."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "u32.blk")
        with open(src, "w") as f:
            f.write(U32_SRC)
        x = np.array([0, 1, 2**31, 2**32 - 1, 3000000000, 12345], np.uint32)
        y = np.array([0, 2, 2**31 - 1, 7, 4000000000, 5], np.uint32)
        h, q, lt, w = blk.kernel(src, name="u32k")(x, y, interpret=True)
    assert h.dtype == np.uint32 and (h == x >> 28).all()
    assert (q == np.where(y == 0, 0, x // np.maximum(y, 1))).all()
    assert (lt == (x < y)).all()
    assert w.dtype == np.uint32 and w[0] == 0xF4607A2D  # Philox4x32-10 of (0, 0, 0, 0) under (7, 0)


FP8_SRC = """
kernel q8[T = f8e4m3](x: in f32[N], q: out T[N], back: out f32[N]) {
    let q8 = x[...].astype(T);
    q[...] = q8;
    back[...] = q8.astype(f32);
}
kernel mm8(a: in f8e4m3[M, K], w: in f8e5m2[N, K], y: out f32[M, N]) {
    y[...] = dot(a[...], w[...].T);
}
"""


def fp8_value(bits, mb, bias):
    """The value of fp8 codes (uint8) of a format with mb mantissa bits."""
    b = bits.astype(np.int64)
    e, m = (b & 0x7F) >> mb, b & ((1 << mb) - 1)
    v = np.where(e == 0, m * 2.0 ** (1 - bias - mb), (m + (1 << mb)) * 2.0 ** (e - bias - mb))
    return np.where(b & 0x80, -v, v)


def test_fp8_dtypes():
    """f8e4m3 and f8e5m2 travel through NumPy as uint8 bits (or ml_dtypes'
    float8 where installed): a quantize that saturates, and a mixed-format
    dot fed uint8 arrays."""
    src = os.path.join(tempfile.mkdtemp(), "fp8.blk")
    with open(src, "w") as f:
        f.write(FP8_SRC)
    x = np.array([0.0, 1.0, -1.5, 0.3, 448.0, 1e6, -1e6, 2.0 ** -9, 2.0 ** -10], dtype=np.float32)
    for t, mb, bias, top in (("f8e4m3", 3, 7, 448.0), ("f8e5m2", 2, 15, 57344.0)):
        q, back = blk.kernel(src, name="q8", T=t)(x, interpret=True)
        bits = q.view(np.uint8) if q.dtype != np.uint8 else q
        assert (fp8_value(bits, mb, bias) == back).all(), (t, bits, back)
        assert back[5] == top and back[6] == -top, back  # saturated
    mm = blk.kernel(src, name="mm8")
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (5, 7), dtype=np.uint8) & 0x77  # finite codes
    w = rng.integers(0, 256, (4, 7), dtype=np.uint8) & 0x6F
    y = mm(a, w, interpret=True)
    want = fp8_value(a, 3, 7) @ fp8_value(w, 2, 15).T
    assert np.allclose(y, want, rtol=1e-6), (y, want)


def test_grouped_matmul_prefetch():
    """Scalar prefetch: examples/grouped_matmul.blk over a work list built
    from ragged group sizes (one empty), against NumPy per group."""
    bm, sizes, k, n = 16, [5, 0, 40, 21], 24, 40
    m, g = sum(sizes), len(sizes)
    work, lo = [], 0
    for q, s in enumerate(sizes):
        work += [(b, q, lo, lo + s) for b in range(lo // bm, (lo + s - 1) // bm + 1)] if s else []
        lo += s
    work += [(0, 0, 0, 0)] * 2  # padding items write nothing
    x, w = rand(m, k), rand(g, k, n)
    gmm = blk.kernel(f"{EX}/grouped_matmul.blk", T="f32", BM=bm, BN=16, BK=8)
    y = gmm(np.array(work, np.int32), x, w, interpret=True)
    ref = np.concatenate([x[o:o + s] @ w[q] for q, (o, s) in
                          enumerate(zip(np.cumsum([0] + sizes[:-1]), sizes))])
    close(y, ref, 1e-5)


def test_dynamic_sizes_one_compile_per_class():
    """`dynamic (M, N, K)`: offline compiles over seven batch sizes give one
    kernel per class of M (1 compiled in; neither 16 nor BM = 64 dividing
    it; a multiple of 64), each with the grid of its own sizes; the
    interpreter's result is the same at every M."""
    mm = blk.kernel(f"{EX}/matmul_dynamic.blk", T="f32")
    for m in (1, 3, 17, 64, 100, 128, 192):
        a, b = np.zeros((m, 96), np.float32), np.zeros((80, 96), np.float32)
        assert mm.compile(a, b)["grid"] == ((m + 63) // 64, 2, 1)
    assert mm.cache_stats(-1)["compiles"] == 3
    for m in (1, 37):
        a, b = rand(m, 40), rand(24, 40)
        close(mm(a, b, interpret=True), a @ b.T, 1e-5)


def test_dlpack_and_cai_adapters():
    x = rand(6, 8)[:, ::2]

    class OnlyDLPack:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

    arg = _arrays.from_array(OnlyDLPack(x))
    assert arg.device == _arrays.HOST and arg.framework == "dlpack"
    assert arg.tensor.data == x.ctypes.data
    assert list(arg.tensor.shape[:2]) == [6, 4] and list(arg.tensor.strides[:2]) == [8, 2]
    cai = _arrays.from_array(FakeCuda(x))
    assert cai.device == 0 and list(cai.tensor.strides[:2]) == [8, 2]
    e = raises(blk.BlkError, _arrays.from_array, object())
    assert "not an array blk can use" in str(e)
    e = raises(blk.BlkError, _arrays.from_array, np.zeros((1,) * 5, np.float32))
    assert "rank 5" in str(e)


# ---- errors -------------------------------------------------------------------

def test_compile_error_has_location_and_caret():
    e = raises(blk.CompileError, blk.kernel, "kernel k(x: in f32[N]) {\n    x[...] = ;\n}\n")
    msg = str(e)
    assert "<string>:2:14: error:" in msg, msg
    assert msg.splitlines()[-1].strip() == "^", msg
    with tempfile.NamedTemporaryFile("w", suffix=".blk", delete=False) as f:
        f.write("kernel k(x: in f32[N]) {\n    x[...] = nope;\n}\n")
    e = raises(blk.CompileError, blk.kernel, f.name)
    assert f"{f.name}:2:14: error:" in str(e), str(e)
    os.unlink(f.name)
    e = raises(blk.CompileError, blk.kernel, f"{EX}/add.blk", NOPE=3)
    assert "NOPE" in str(e)
    e = raises(blk.CompileError, blk.kernel, f"{EX}/add.blk", name="sub")
    assert "no kernel named 'sub'" in str(e)
    e = raises(blk.BlkError, blk.kernel, "/nonexistent/x.blk")
    assert not isinstance(e, blk.CompileError), e  # nothing was compiled
    assert "/nonexistent/x.blk: no such file" in str(e), str(e)


def test_call_errors():
    add = blk.kernel(f"{EX}/add.blk")
    x = rand(8)
    e = raises(blk.BlkError, add, x, interpret=True)
    assert "missing array for in param 'y'" in str(e)
    e = raises(blk.BlkError, add, x, None, rand(8), interpret=True)  # all three, one None
    assert "missing array for in param 'y'" in str(e)
    e = raises(blk.BlkError, add, x, x, x, x, interpret=True)
    assert "takes 3 arrays (x, y, z), got 4" in str(e)
    e = raises(blk.BlkError, add, x, x, w=x, interpret=True)
    assert "no array param 'w'" in str(e)
    e = raises(blk.BlkError, add, x, x, x=x, interpret=True)
    assert "'x' of kernel add given twice" in str(e)
    e = raises(blk.BlkError, add, x, rand(9), interpret=True)
    assert "launch of add" in str(e)
    e = raises(blk.BlkError, add, x, x)
    assert "interpret=True" in str(e)
    mm = blk.kernel(f"{EX}/matmul.blk")
    e = raises(blk.BlkError, mm, rand(4, 5), rand(6, 7), interpret=True)
    assert "launch of matmul" in str(e)


def test_outputs_that_cannot_be_written():
    """Read-only, big-endian and scalar outputs are refused before the
    interpreter writes (a read-only memmap used to kill the process)."""
    add = blk.kernel(f"{EX}/add.blk")
    x = rand(8)
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    e = raises(blk.BlkError, add, x, x, ro, interpret=True)
    assert "kernel add: output z is read-only" in str(e), str(e)
    assert not ro.any()
    frozen = np.frombuffer(bytes(32), np.float32)  # a view of immutable bytes
    raises(blk.BlkError, add, x, x, frozen, interpret=True)
    assert bytes(frozen.tobytes()) == bytes(32)
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(bytes(32))
        f.flush()
        mm = np.memmap(f.name, np.float32, mode="r", shape=(8,))
        e = raises(blk.BlkError, add, x, x, mm, interpret=True)
        assert "read-only" in str(e)
    e = raises(blk.BlkError, add, x, x, np.zeros(8, ">f4"), interpret=True)
    assert "byte order not native" in str(e), str(e)
    raises(blk.BlkError, add, x, x, np.float32(0), interpret=True)
    # Not NumPy or torch: refused before the run, not after it wrote them
    # (a memoryview of immutable bytes was changed, then an error raised).
    add8 = blk.kernel(f"{EX}/add.blk", T="u8")
    ones = np.ones(8, np.uint8)
    b = bytes(8)
    e = raises(blk.BlkError, add8, ones, ones, memoryview(b), interpret=True)
    assert "output z is a memoryview, which interpret mode cannot write back into" in str(e), str(e)
    assert b == bytes(8)
    ba = bytearray(8)
    raises(blk.BlkError, add8, ones, ones, ba, interpret=True)
    assert ba == bytearray(8)


def test_outputs_past_the_limits():
    """An output sized past a dim's limit, or past memory, is a BlkError
    before anything is allocated (a 2^40 broadcast input allocated a 4 TB
    output; NumPy's MemoryError and ValueError leaked through)."""
    add = blk.kernel(f"{EX}/add.blk")
    wide = np.broadcast_to(np.float32(1), (1 << 40,))
    e = raises(blk.BlkError, add, wide, wide, interpret=True)
    assert "size N = 1099511627776 (from x) does not fit in i32" in str(e), str(e)
    k = blk.kernel("kernel k(x: in f32[N], y: out f32[4 * N]) grid (1) { y[0] = x[0]; }")
    e = raises(blk.BlkError, k, np.broadcast_to(np.float32(1), (1 << 30,)), interpret=True)
    assert "dim 0 of y (4 * N) would be 4294967296, past 2^31 - 1" in str(e), str(e)
    k = blk.kernel("kernel k(x: in f32[N], y: out f32[N, N, N, N]) grid (1) { y[0, 0, 0, 0] = x[0]; }")
    e = raises(blk.BlkError, k, np.broadcast_to(np.float32(1), (1 << 20,)), interpret=True)
    assert "cannot allocate an output of shape (1048576, 1048576, 1048576, 1048576) (f32)" in str(e), str(e)
    e = raises(blk.BlkError, add.search, rand(8), rand(8), max=-1)
    assert "search(max=-1): max is how many configurations to return" in str(e), str(e)
    assert add.search(rand(8), rand(8), max=1 << 40)  # capped, not a 2^40-entry array


def test_big_endian_and_scalar_inputs():
    add = blk.kernel(f"{EX}/add.blk")
    x, y = rand(8), rand(8)
    z = add(x.astype(">f4"), y.astype(">f4"), interpret=True)
    close(z, x + y)
    e = raises(blk.BlkError, add, np.float32(1), np.float32(2), interpret=True)
    assert "rank 0 but the kernel expects rank 1" in str(e), str(e)


def test_autotune_on_numpy_arrays():
    mm = blk.autotune(f"{EX}/matmul.blk", configs=[dict(BM=32), dict(BM=64)], key=["M", "N", "K"])
    a, b = rand(64, 16), rand(16, 32)
    assert mm.key_of(a, b).startswith("M=64,N=32,K=16;")
    assert mm.best(a, b) is None
    close(mm(a, b, interpret=True), a @ b)
    e = raises(blk.BlkError, mm, a, b)  # not a GPU array: a BlkError, no ValueError
    assert "host memory" in str(e), str(e)
    # arguments named when wrong (reps=0 was a StatisticsError at the call,
    # key="MN" the sizes M and N, configs=["BM=64"] a ValueError)
    for kw, said in ((dict(reps=0), "reps=0: give an int of 1 or more"),
                     (dict(warmup=-1), "warmup=-1: give an int of 0 or more"),
                     (dict(search=0), "search=0: give an int of 1 or more"),
                     (dict(key="MN"), "key='MN': give a list of size names"),
                     (dict(configs=["BM=64"]), "configs=['BM=64']: give a list of dicts")):
        e = raises(blk.BlkError, blk.autotune, f"{EX}/matmul.blk", **kw)
        assert said in str(e), str(e)


def test_source_mistakes():
    """A directory for a path, and NUL bytes in source text, are named as
    such (a directory was "no such file"; text after a NUL was dropped)."""
    d = tempfile.mkdtemp(prefix="blk-dir-")
    e = raises(blk.BlkError, blk.kernel, d + "/")
    assert "a directory, not a .blk file" in str(e), str(e)
    e = raises(blk.BlkError, blk.kernel, "kernel k(x: in f32[4], y: out f32[4]) { y[...] = x[...]; }\0junk")
    assert "NUL byte at offset 58" in str(e), str(e)
    os.rmdir(d)
    # NUL in a parameter, a kernel name: named (B="4\0junk" was B=4)
    e = raises(blk.BlkError, blk.kernel, f"{EX}/add.blk", B="4\0junk")
    assert "has a NUL byte" in str(e), str(e)
    raises(blk.BlkError, blk.kernel, f"{EX}/add.blk", name="add\0junk")
    # undecodable bytes (os.fsdecode's surrogates) reach blk, which names
    # them (a UnicodeEncodeError escaped); bytes and paths are sources too
    e = raises(blk.CompileError, blk.kernel, "kernel \udc80\n")
    assert "invalid character 0x80" in str(e), str(e)
    assert blk.kernel(os.fsencode(f"{EX}/add.blk")).name == "add"
    e = raises(blk.BlkError, blk.kernel, 3)
    assert "src is a int; pass a .blk path or the source text" in str(e), str(e)


def test_autotune_interpret_and_damaged_results():
    """interpret=True given to autotune runs the first candidate in the
    interpreter (nothing timed); a FIFO or a deeply nested file where the
    results are kept is ignored, neither blocking nor raising."""
    args = dict(configs=[dict(BM=32), dict(BM=64)], key=["M", "N", "K"])
    mm = blk.autotune(f"{EX}/matmul.blk", interpret=True, **args)
    a, b = rand(64, 16), rand(16, 32)
    close(mm(a, b), a @ b)
    path = mm._file
    assert path, "a results file needs BLK_CACHE_DIR"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    os.mkfifo(path)
    signal.alarm(30)  # a hang fails the test
    try:
        assert blk.autotune(f"{EX}/matmul.blk", **args).results == {}
    finally:
        signal.alarm(0)
        os.remove(path)
    with open(path, "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    assert blk.autotune(f"{EX}/matmul.blk", **args).results == {}
    os.remove(path)


class _JaxCpuArray:
    """What a JAX array on the CPU offers: the type has the CUDA interface
    (a property that fails for this array), DLPack on the host."""

    def __init__(self, a):
        self.a, self.shape, self.dtype = a, a.shape, a.dtype

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("not on a GPU")

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __array__(self, dtype=None):
        return self.a

    def block_until_ready(self):
        return self


_JaxCpuArray.__module__ = "jaxlib.xla_extension"


def test_jax_cpu_arrays():
    add = blk.kernel(f"{EX}/add.blk")
    x, y = rand(8), rand(8)
    e = raises(blk.BlkError, add, _JaxCpuArray(x), _JaxCpuArray(y))
    assert "host memory" in str(e), str(e)
    close(add(_JaxCpuArray(x), _JaxCpuArray(y), interpret=True), x + y)
    mm = blk.autotune(f"{EX}/add.blk", configs=[dict(B=64)])
    assert mm.key_of(_JaxCpuArray(x), _JaxCpuArray(y)).startswith("N=8;")


def test_ctrl_c_stops_the_interpreter():
    """A loop of 2^31 steps in interpret mode stops at Ctrl-C (here
    interrupt_main) with KeyboardInterrupt; the kernel runs again after."""
    import _thread
    import signal
    import threading
    spin = blk.kernel("kernel spin(y: out f32[N] block (N) index (i) -> (0)) grid (1) {\n"
                      "    y[...] = fori_loop(0, 2147483647, zeros((N,), f32)) |k, acc| { acc + 1.0 };\n"
                      "}\n")
    # Python's own SIGINT handler, even where the shell that started this
    # process ignores SIGINT (a script's background job: `cmd &`), which
    # makes interrupt_main do nothing
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.2, _thread.interrupt_main).start()
        t0 = time.perf_counter()
        raises(KeyboardInterrupt, spin, np.zeros(4, np.float32), interpret=True)
        assert time.perf_counter() - t0 < 30
    finally:
        signal.signal(signal.SIGINT, old)
    add = blk.kernel(f"{EX}/add.blk")
    close(add(np.ones(4, np.float32), np.ones(4, np.float32), interpret=True), np.full(4, 2.0))


def test_threads():
    """One kernel called from four threads at once (libblk's runtime is used
    by one thread at a time: the package's locks see to it)."""
    import threading
    add = blk.kernel(f"{EX}/add.blk", B=64)
    errors = []

    def work(seed):
        try:
            x = np.full(777, seed, np.float32)
            for _ in range(20):
                close(add(x, x, interpret=True), 2 * x, 0)
        except Exception as e:  # collected, re-raised below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_interpret_env():
    add = blk.kernel(f"{EX}/add.blk")
    x = rand(8)
    os.environ["BLK_INTERPRET"] = "1"
    try:
        close(add(x, x), 2 * x, 0)
    finally:
        del os.environ["BLK_INTERPRET"]


def test_kernel_info_compile_bind():
    mm = blk.kernel(f"{EX}/matmul.blk", T="bf16", BM=32)
    assert [(p.name, p.access, p.dtype, p.rank) for p in mm.tensor_params] == \
        [("a", "in", "bf16", 2), ("b", "in", "bf16", 2), ("c", "out", "bf16", 2)]
    assert mm.sizes == ["M", "K", "N"]
    a, b = np.zeros((64, 32), np.uint16), np.zeros((32, 48), np.uint16)
    assert mm.bind(a, b) == {"M": 64, "K": 32, "N": 48}
    info = mm.compile(a, b)
    assert info["arch"] == "sm_90a" and ".entry" in info["ptx"] and info["grid"] == (2, 1, 1)
    assert "matmul" in repr(mm) and "BM=32" in repr(mm)


def test_auto_params_chosen_per_shape():
    # BM/BN/BK/num_warps/num_stages left to the cost model: each shape gets
    # its own choice (compile()'s "config"), and the interpreter's result
    # does not depend on it
    mm = blk.kernel(f"{EX}/matmul.blk", T="f16", BM="auto", BN="auto", BK="auto",
                    num_warps="auto", num_stages="auto")
    big = mm.compile(np.zeros((4096, 4096), np.float16), np.zeros((4096, 4096), np.float16))
    skinny = mm.compile(np.zeros((64, 8192), np.float16), np.zeros((8192, 8192), np.float16))
    for info in (big, skinny):
        names = [kv.split("=")[0] for kv in info["config"].split(",")]
        assert names == ["BM", "BN", "BK", "num_warps", "num_stages"], info["config"]
    assert big["config"] != skinny["config"]
    rng = np.random.default_rng(3)
    a = rng.standard_normal((37, 20)).astype(np.float16)
    b = rng.standard_normal((20, 29)).astype(np.float16)
    close(mm(a, b, interpret=True).astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), 2e-2)
    plain = blk.kernel(f"{EX}/matmul.blk", T="f16")
    assert plain.compile(a, b)["config"] == ""
    # an int and a dtype left to the call: the model's block, the arrays' T
    both = blk.kernel(f"{EX}/matmul.blk", T="auto", BM="auto")
    assert both.compile(a, b)["config"].startswith("BM=")
    e = raises(blk.CompileError, blk.kernel, f"{EX}/matmul.blk", T="auto", BM="f32")
    assert "`BM` is an int parameter" in str(e)


# A kernel of one dtype T; one whose out is f32 whatever x's T; one whose
# T types its output alone; one whose dtype param types no array; one that
# compiles with f32 alone.
DTYPES_SRC = """
kernel scale[T = f32, B = 64](
    x: in  T[N] block (B) index (i) -> (i),
    y: out T[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = (x[...].astype(f32) * 2.0).astype(T);
}

kernel widen[T = f32, B = 64](
    x: in  T[N] block (B) index (i) -> (i),
    w: in  T[N] block (B) index (i) -> (i),
    y: out f32[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = x[...].astype(f32) + w[...].astype(f32);
}

kernel narrow[T = f32, B = 64](
    x: in  f32[N] block (B) index (i) -> (i),
    y: out T[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = x[...].astype(T);
}

kernel inside[A = f32, B = 64](
    x: in  f32[N] block (B) index (i) -> (i),
    y: out f32[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = x[...].astype(A).astype(f32);
}
"""
# (Its own source: the defines apply to every kernel of a source.)
ONLY_F32_SRC = """
kernel only_f32[T = f32, B = 64](
    x: in  T[N] block (B) index (i) -> (i),
    y: out f32[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    y[...] = x[...];
}
"""


def test_dtype_from_arrays():
    # T="auto": the arrays' dtype, one compiled variant per dtype
    k = blk.kernel(DTYPES_SRC, name="scale", T="auto")
    assert [p.dtype for p in k.tensor_params] == ["T", "T"]
    x = rand(300)
    for dt in (np.float32, np.float16, np.int32):
        xs = (x * 10).astype(dt)
        y = k(xs, interpret=True)
        assert y.dtype == dt
        close(y, (xs.astype(np.float32) * 2).astype(dt), 1e-3)
    assert sorted(k._variants) == [("f16",), ("f32",), ("i32",)]
    assert k(x, interpret=True).dtype == np.float32 and len(k._variants) == 3  # cached
    # bf16 as uint16 bit patterns is bf16
    bits = bf16_bits(x)
    close(bf16_value(k(bits, interpret=True)), 2 * bf16_value(bits), 0)
    # a given output's dtype decides too, and must agree
    out = np.zeros(300, np.float16)
    k(x.astype(np.float16), out, interpret=True)
    close(out, 2 * x.astype(np.float16), 1e-3)
    e = raises(blk.BlkError, k, x, out, interpret=True)
    assert "T='auto' takes its dtype from the arrays, and they disagree: x is f32, y is f16" in str(e)
    # compile, bind and the other methods take the variant too
    assert k.bind(x.astype(np.float16)) == {"N": 300}
    assert k.compile(x.astype(np.float16))["entry"]
    # an f32 output whatever T is: only x and w follow T
    w = blk.kernel(DTYPES_SRC, name="widen", T="auto")
    assert [p.dtype for p in w.tensor_params] == ["T", "T", "f32"]
    got = w(x.astype(np.float16), x.astype(np.float16), interpret=True)
    assert got.dtype == np.float32
    e = raises(blk.BlkError, w, x, x.astype(np.float16), interpret=True)
    assert "x is f32, w is f16 (both are T)" in str(e)
    # with_params keeps T left to the arrays; a T given is fixed again
    assert k.with_params(B=32)(x.astype(np.float16), interpret=True).dtype == np.float16
    fixed = k.with_params(T="f16")
    assert fixed.tensor_params[0].dtype == "f16"
    e = raises(blk.BlkError, fixed, x, interpret=True)
    assert "launch of scale" in str(e)
    # errors
    e = raises(blk.BlkError, blk.kernel, DTYPES_SRC, name="inside", A="auto")
    assert "A='auto' leaves A to the arrays' dtype, but no array param has dtype A" in str(e)
    e = raises(blk.BlkError, blk.kernel, ONLY_F32_SRC, T="auto")
    assert "compiles only with T=f32 (each of its kernels is checked with it): give T=f32" in str(e)
    # T typing the output alone: the output given decides
    n = blk.kernel(DTYPES_SRC, name="narrow", T="auto")
    n(x, out, interpret=True)
    close(out, x.astype(np.float16), 0)
    e = raises(blk.BlkError, n, x, interpret=True)
    assert ("T='auto' takes its dtype from the arrays of dtype T (y), and none was given: "
            "pass one, or give T= a dtype") in str(e)
    e = raises(blk.CompileError, blk.kernel, DTYPES_SRC, name="scale", Q="auto")
    assert "no kernel has a compile-time parameter named `Q`" in str(e)


def test_search_space_ranked_by_the_model():
    # no configs: the parameters the kernel uses as sizes and leaves open,
    # and num_warps/num_stages, ranked for the arrays; a define closes one
    mm = blk.kernel(f"{EX}/matmul.blk", T="f16")
    a, b = np.zeros((2048, 2048), np.float16), np.zeros((2048, 2048), np.float16)
    space = mm.search(a, b, max=5)
    assert 1 <= len(space) <= 5
    assert all(set(c) == {"BM", "BN", "BK", "num_warps", "num_stages"} for c in space), space
    assert len({tuple(sorted(c.items())) for c in space}) == len(space)
    fixed = blk.kernel(f"{EX}/matmul.blk", T="f16", BK=64, num_warps=8).search(a, b, max=3)
    assert all(set(c) == {"BM", "BN", "num_stages"} for c in fixed), fixed
    add = blk.kernel(f"{EX}/add.blk")
    x = np.zeros(100000, np.float32)
    assert {"B"} <= set(add.search(x, x, max=2)[0])
    # interpret mode runs the kernel as given: no timing, no search
    t = blk.autotune(f"{EX}/add.blk")
    close(t(x + 1, x + 2, interpret=True), x + 3, 0)


# ---- the disk cache across processes ----------------------------------------------

CHILD = r"""
import os, sys, time
if os.environ.get("BLK_TEST_INSTALLED") != "1":
    sys.path.insert(0, sys.argv[1])
import numpy as np, blk
t0 = time.perf_counter()
k = blk.kernel(sys.argv[2] + "/matmul.blk", BM=32, BN=32)
info = k.compile(np.zeros((256, 128), np.float32), np.zeros((128, 256), np.float32))
ms = (time.perf_counter() - t0) * 1e3
s = k.cache_stats(-1)
print(s["compiles"], s["disk_hits"], "%.3f" % ms, int(info["cached"]))
"""


def child(env=None):
    out = subprocess.run([sys.executable, "-c", CHILD, os.path.join(ROOT, "python"), EX],
                         capture_output=True, text=True, env={**os.environ, **(env or {})},
                         check=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2]), int(out[3])


def test_disk_cache_second_process_skips_compiler():
    d = tempfile.mkdtemp(prefix="blk-cache-")
    cold = child({"BLK_CACHE_DIR": d})
    warm = child({"BLK_CACHE_DIR": d})
    assert cold[:2] == (1, 0) and warm[:2] == (0, 1), (cold, warm)
    assert cold[3] == 0 and warm[3] == 1, (cold, warm)  # compile()'s "cached" on a disk hit
    print(f"  source -> PTX in a new process: compiled {cold[2]:.1f} ms, "
          f"from the disk cache {warm[2]:.2f} ms")
    off = child({"BLK_CACHE_DIR": d, "BLK_CACHE": "0"})
    assert off[:2] == (1, 0)


def test_disk_cache_two_processes_at_once():
    d = tempfile.mkdtemp(prefix="blk-cache-")
    env = {**os.environ, "BLK_CACHE_DIR": d}
    args = [sys.executable, "-c", CHILD, os.path.join(ROOT, "python"), EX]
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE) for _ in range(2)]
    assert all(p.wait() == 0 for p in procs)
    assert [f for f in os.listdir(d) if ".tmp" in f] == []
    assert child({"BLK_CACHE_DIR": d})[:2] == (0, 1)


# ---- the GPU path under the stand-in driver ---------------------------------------

class FakeCuda:
    """A NumPy array posing as device memory (__cuda_array_interface__):
    under the stand-in driver device pointers are host pointers."""

    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.a.shape, "typestr": self.a.dtype.str,
                "data": (self.a.ctypes.data, False), "version": 3,
                "strides": None if self.a.flags.c_contiguous else self.a.strides}

    def __dlpack_device__(self):
        return (2, 0)

    shape = property(lambda self: self.a.shape)  # as real arrays have (autotune's call signature)
    dtype = property(lambda self: self.a.dtype)


def fake_driver():
    path = os.environ.get("BLK_FAKE_CUDA")
    if not path or not os.path.exists(path):
        return False
    os.environ["BLK_LIBCUDA"] = path
    return True


def test_fake_gpu_launch():
    if not fake_driver():
        print("  skipped: no BLK_FAKE_CUDA")
        return
    add = blk.kernel(f"{EX}/add.blk")
    x, y, z = (FakeCuda(np.zeros(1000, np.float32)) for _ in range(3))
    assert add(x, y, z) is z
    assert add(x, y, z, stream=0) is z

    class Stream:
        cuda_stream = 0
    add(x, y, z, stream=Stream())
    assert add.cache_stats(0)["compiles"] == 1 and add.cache_stats(0)["hits"] == 2
    e = raises(blk.BlkError, add, x, y)  # a FakeCuda output cannot be allocated
    assert "cannot allocate an output" in str(e)
    e = raises(blk.BlkError, add, x, np.zeros(1000, np.float32), z)
    assert "y is on the host" in str(e)
    e = raises(blk.BlkError, add, x, FakeCuda(np.zeros(1000, np.float64)), z)
    assert "has no blk dtype" in str(e)


class _FakeTorchDevice:
    def __init__(self, index):
        self.index, self.type = index, "cuda"


def fake_torch_module():
    """Just enough of torch for blk's torch path: dtypes, tensors whose
    memory is host memory (as the stand-in driver's device memory is),
    torch.empty, the current device and stream."""
    import contextlib
    import types
    torch = types.ModuleType("torch")
    names = {"float32": np.float32, "float16": np.float16, "int32": np.int32}
    for n in names:
        setattr(torch, n, "torch." + n)
    torch.bfloat16, torch.bool = "torch.bfloat16", "torch.bool"

    class Tensor:
        def __init__(self, a, dtype):
            self.a, self.dtype = a, dtype

        shape = property(lambda self: self.a.shape)
        device = property(lambda self: _FakeTorchDevice(0))

        def data_ptr(self):
            return self.a.ctypes.data

        def stride(self):
            return tuple(s // self.a.itemsize for s in self.a.strides)

        def get_device(self):
            return 0
    Tensor.__module__ = "torch"
    torch.Tensor = Tensor
    torch.empty = lambda shape, dtype, device: Tensor(
        np.zeros(shape, names[dtype.split(".")[1]]), dtype)
    torch.streams = []
    torch.cuda = types.SimpleNamespace(current_device=lambda: 0,
                                       device=lambda d: contextlib.nullcontext())
    torch._C = types.SimpleNamespace(
        _cuda_getCurrentRawStream=lambda d: torch.streams.append(d) or 0)
    return torch


def test_fake_torch_launch():
    """The torch path (no torch here): dtypes, outputs made with
    torch.empty, torch's current stream asked for the arrays' device."""
    if not fake_driver():
        print("  skipped: no BLK_FAKE_CUDA")
        return
    torch = fake_torch_module()
    sys.modules["torch"] = torch
    _arrays._by_type.clear()
    _arrays._torch_dtypes.clear()
    try:
        x = torch.Tensor(np.zeros((64, 32), np.float32), torch.float32)
        y = torch.Tensor(np.zeros((32, 48), np.float32)[:, ::2], torch.float32)
        c = blk.kernel(f"{EX}/matmul.blk")(x, y)
        assert isinstance(c, torch.Tensor) and c.shape == (64, 24) and c.dtype == torch.float32
        assert torch.streams == [0]
        h = torch.Tensor(np.zeros((64, 32), np.float16), torch.float16)
        e = raises(blk.BlkError, blk.kernel(f"{EX}/matmul.blk"), h, y)
        assert "launch of matmul" in str(e)
        odd = torch.Tensor(np.zeros(3, np.int8), "torch.int8")
        e = raises(blk.BlkError, blk.kernel(f"{EX}/add.blk"), odd, odd)
        assert "torch dtype torch.int8 has no blk dtype" in str(e)
    finally:
        del sys.modules["torch"]
        _arrays._by_type.clear()
        _arrays._torch_dtypes.clear()


CONFIGS = [dict(BM=64, BN=64, BK=32, num_warps=4),     # 4 CTAs at 128^2: slow
           dict(BM=16, BN=16, BK=16, num_warps=1),     # 64 CTAs: the fastest
           dict(BM=256, BN=256, BK=32, num_warps=16),  # refused: over 384 threads
           dict(BM=32, BN=32, BK=16, NOPE=1)]          # does not compile


def fake_mm():
    return [FakeCuda(np.zeros(s, np.float32)) for s in ((128, 64), (64, 128), (128, 128))]


TUNE_CHILD = r"""
import os, sys
if os.environ.get("BLK_TEST_INSTALLED") != "1":
    sys.path.insert(0, sys.argv[1])
import numpy as np, blk
sys.path.insert(0, sys.argv[3])
import test_blk as t
tuned = blk.autotune(sys.argv[2] + "/matmul.blk", configs=t.CONFIGS, key=["M", "N"], reps=3)
def no_tuning(*a):
    raise SystemExit("tuned again")
tuned._tune = no_tuning
a, b, c = t.fake_mm()
tuned(a, b, c)
print(tuned.best(a, b, c))
"""


def test_fake_gpu_autotune():
    if not fake_driver():
        print("  skipped: no BLK_FAKE_CUDA")
        return
    d = tempfile.mkdtemp(prefix="blk-tune-")
    os.environ["BLK_CACHE_DIR"] = d
    try:
        tuned = blk.autotune(f"{EX}/matmul.blk", configs=CONFIGS, key=["M", "N"], reps=3)
        a, b, c = fake_mm()
        assert tuned.best(a, b, c) is None
        assert tuned(a, b, c) is c
        assert tuned.best(a, b, c) == CONFIGS[1]
        (r,) = tuned.results.values()
        assert r["timings"][1] < r["timings"][0] and r["timings"][2] is None
        assert "OUT_OF_RESOURCES" in r["skipped"]["2"] and "NOPE" in r["skipped"]["3"]
        # A later call of the same signature (types, shapes, dtypes, device)
        # launches the winner straight away: no key, no tuning.
        def slow(*args, **kw):
            raise AssertionError("a tuned call took the slow path")
        tuned.key_of = slow
        assert tuned(a, b, c) is c
        del tuned.key_of
        # a new shape is a new signature: its key found, and tuned, as before
        a2, b2, c2 = [FakeCuda(np.zeros(s, np.float32)) for s in ((64, 64), (64, 128), (64, 128))]
        assert tuned(a2, b2, c2) is c2 and len(tuned.results) == 2
        files = os.listdir(os.path.join(d, "tune"))
        assert len(files) == 1 and files[0].endswith(".json")
        # Another process reads the result instead of tuning.
        out = subprocess.run([sys.executable, "-c", TUNE_CHILD, os.path.join(ROOT, "python"),
                              EX, HERE], capture_output=True, text=True, check=True,
                             env={**os.environ})
        assert out.stdout.strip() == str(CONFIGS[1]), out
        # A damaged results file is tuned again and rewritten.
        path = os.path.join(d, "tune", files[0])
        with open(path, "w") as f:
            f.write("{ truncated")
        again = blk.autotune(f"{EX}/matmul.blk", configs=CONFIGS, key=["M", "N"], reps=3)
        assert again.results == {}
        again(a, b, c)
        with open(path) as f:
            assert len(json.load(f)) == 1
        e = raises(blk.BlkError, blk.autotune, f"{EX}/matmul.blk", configs=CONFIGS, key=["Q"])
        assert "names no size" in str(e)
        e = raises(blk.BlkError, blk.autotune(f"{EX}/matmul.blk", configs=CONFIGS[2:]), a, b, c)
        assert "no candidate ran" in str(e)
        # interpret mode runs the first candidate, untimed
        an, bn = rand(20, 10), rand(10, 12)
        close(tuned(an, bn, interpret=True), an @ bn)
        # T left to the arrays: each dtype is a key of its own
        auto = blk.autotune(f"{EX}/matmul.blk", configs=CONFIGS[:2], key=["M", "N"], reps=3,
                            T="auto")
        h = [FakeCuda(np.zeros(s, np.float16)) for s in ((128, 64), (64, 128), (128, 128))]
        assert auto(a, b, c) is c and auto(*h) is h[2]
        assert sorted(k.split(";")[1] for k in auto.results) == ["f16,f16,f16", "f32,f32,f32"]
    finally:
        os.environ.pop("BLK_LIBCUDA", None)


def test_fake_gpu_autotune_log():
    """BLK_TUNE_LOG=1: a line per candidate and the winner on stderr;
    BLK_PROGRESS=1: one progress line rewritten in place (after
    PROGRESS_AFTER seconds, 0 here), ended by a newline."""
    if not fake_driver():
        print("  skipped: no BLK_FAKE_CUDA")
        return
    import io
    from blk import _tune
    saved = {k: os.environ.get(k) for k in ("BLK_CACHE_DIR", "BLK_TUNE_LOG", "BLK_PROGRESS")}
    after, err = _tune._Report.PROGRESS_AFTER, sys.stderr
    try:
        for env, want in (({"BLK_TUNE_LOG": "1"}, "log"), ({"BLK_PROGRESS": "1"}, "progress"),
                          ({"BLK_PROGRESS": "0"}, "quiet")):
            os.environ["BLK_CACHE_DIR"] = tempfile.mkdtemp(prefix="blk-tunelog-")
            for k in ("BLK_TUNE_LOG", "BLK_PROGRESS"):
                os.environ.pop(k, None)
            os.environ.update(env)
            _tune._Report.PROGRESS_AFTER = 0
            sys.stderr = io.StringIO()
            tuned = blk.autotune(f"{EX}/matmul.blk", configs=CONFIGS, key=["M", "N"], reps=3)
            tuned(*fake_mm())
            text, sys.stderr = sys.stderr.getvalue(), err
            if want == "log":
                lines = text.splitlines()
                assert len(lines) == 5, text
                assert lines[0].startswith("blk.autotune matmul: [1/4] BM=64,BN=64,BK=32,num_warps=4: ")
                assert lines[0].endswith(" ms") and "skipped: " in lines[2] and "NOPE" in lines[3]
                assert lines[4].startswith("blk.autotune matmul: best BM=16,BN=16,BK=16,num_warps=1, ")
            elif want == "progress":
                assert text.startswith("\rblk.autotune matmul: 1/4 candidates, ") and text.endswith("\n")
                assert "\rblk.autotune matmul: 4/4 candidates, " in text and text.count("\n") == 1
                assert "best " in text, text
            else:
                assert text == "", text
    finally:
        sys.stderr, _tune._Report.PROGRESS_AFTER = err, after
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        os.environ.pop("BLK_LIBCUDA", None)


def test_fake_gpu_autotune_search():
    # no configs: each key's candidates are the model's best `search`
    # configurations of the kernel's open parameters, timed; the winner
    # is kept on disk by its parameters and found again by another tuner
    if not fake_driver():
        print("  skipped: no BLK_FAKE_CUDA")
        return
    d = tempfile.mkdtemp(prefix="blk-search-")
    os.environ["BLK_CACHE_DIR"] = d
    try:
        tuned = blk.autotune(f"{EX}/matmul.blk", key=["M", "N"], reps=3, search=4)
        a, b, c = fake_mm()
        assert tuned(a, b, c) is c
        (r,) = tuned.results.values()
        timed = [t for t in r["timings"] if t is not None]
        assert 1 <= len(timed) <= 4 and len(tuned.configs) <= 4
        best = tuned.best(a, b, c)
        assert set(best) == {"BM", "BN", "BK", "num_warps", "num_stages"}, best
        assert best in tuned.base.search(a, b, c, max=4)
        again = blk.autotune(f"{EX}/matmul.blk", key=["M", "N"], reps=3, search=4)
        def no_tuning(*args):
            raise AssertionError("tuned again")
        again._tune = no_tuning
        assert again(a, b, c) is c and again.best(a, b, c) == best
    finally:
        os.environ.pop("BLK_LIBCUDA", None)


BENCH_SAMPLE = """device: NVIDIA H200 (sm_90a, driver 13.0)

| op | type | size | blk ms | blk TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | blk/cuBLAS |
| --- | --- | --- | --- | --- | --- | --- | --- |
| matmul | bf16 | 4096³ | 3.435 | 40.0 | 0.179 | 767.2 | 0.05 |

| op | size | ms | GB/s | of copy |
| --- | --- | --- | --- | --- |
| add | 2^28 f32 | 0.744 | 4327 | 102% |
"""


WORLD_ALL_GATHER = """
kernel ag(x: in f32[S], ag: inout symmetric f32[R, S], o: out f32[R, S], flags: signal[R]) {
    let me = my_rank();
    fori_loop(0, world()) |p| {
        ag.on(p)[me, :] = x[...];
        signal_add(flags.on(p).at[me], 1);
    };
    fori_loop(0, world()) |p| { signal_wait(flags.at[p], 1); };
    o[...] = ag[...] * 2.0;
}
"""


def test_interpret_world():
    k = blk.kernel(WORLD_ALL_GATHER)
    assert [p.symmetric for p in k.tensor_params] == ["", "symmetric", "", "signal"]
    for n in (1, 3):
        xs = [rand(5) for _ in range(n)]
        ags = [np.zeros((n, 5), np.float32) for _ in range(n)]
        flags = [np.zeros(n, np.int32) for _ in range(n)]
        outs = k.interpret_world([[xs[r], ags[r], None, flags[r]] for r in range(n)])
        assert len(outs) == n
        for r in range(n):
            close(outs[r], 2 * np.stack(xs))
            close(ags[r], np.stack(xs))
            assert not flags[r].any()  # every wait took its signal
    # by name, and a deadlock: nobody signals
    k2 = blk.kernel("kernel w(y: out i32[1], s: signal[1]) { signal_wait(s.at[0], 1); y[0] = 1; }")
    e = raises(blk.BlkError, k2.interpret_world,
               [{"y": np.zeros(1, np.int32), "s": np.zeros(1, np.int32)} for _ in range(2)])
    assert "deadlock" in str(e) and "(rank 1)" in str(e), str(e)
    # a plain call is a world of one rank
    k3 = blk.kernel("kernel r(y: out i32[1]) { y[0] = my_rank() * 10 + world(); }")
    assert k3(np.zeros(1, np.int32), interpret=True)[0] == 1
    assert [int(o[0]) for o in k3.interpret_world([[np.zeros(1, np.int32)] for _ in range(3)])] == [3, 13, 23]
    e = raises(blk.BlkError, k.interpret_world, [])
    assert "at least one rank" in str(e)
    e = raises(blk.BlkError, blk.autotune, WORLD_ALL_GATHER, configs=[{}])
    assert "signals other ranks" in str(e)
    assert k.multi_rank and k3.multi_rank
    assert not blk.kernel("kernel p(y: out i32[1]) { y[0] = 1; }").multi_rank


def test_world_pull_matmul():
    """A dot reading its A rows from the rank that owns them (a peer Ref in
    the K loop), in a world of 2 ranks, f32, against NumPy."""
    src = open(os.path.join(HERE, "gpu_world.py")).read()
    text = src.split('PULL_MATMUL = """')[1].split('"""')[0]
    k = blk.kernel(text, T="f32", BM=16, BN=16, BK=16)
    R, MS, K, N = 2, 32, 48, 40
    a = [rand(MS, K) for _ in range(R)]
    b = [rand(K, N) for _ in range(R)]
    bars = [np.zeros((R * MS // 16) * 3, np.int32) for _ in range(R)]
    cs = [np.zeros((R * MS, N), np.float32) for _ in range(R)]  # (its rows are no input's)
    k.interpret_world([[a[r], b[r], cs[r], bars[r]] for r in range(R)])
    full = np.concatenate(a)
    for r in range(R):
        close(cs[r], full @ b[r], 1e-4)
        assert not bars[r].any()


def test_world_examples():
    """The examples of several ranks in a world of 2 and 3 ranks, f32 with
    small blocks, against NumPy; their signals are back at 0 after."""
    small = dict(T="f32", BM=16, BN=16, BK=16)
    for R in (2, 3):
        # all-gather + matmul: every rank's c = (all shards) @ its own b
        MS, K, N = 32, 48, 40
        k = blk.kernel(f"{EX}/allgather_matmul.blk", CK=16, NC=1, **small)
        a = [rand(MS, K) for _ in range(R)]
        b = [rand(K, N) for _ in range(R)]
        ag = [np.zeros((R * MS, K), np.float32) for _ in range(R)]
        ready = [np.zeros(R * MS // 16, np.int32) for _ in range(R)]
        started = [np.zeros(R, np.int32) for _ in range(R)]
        outs = k.interpret_world([[a[r], b[r], ag[r], None, ready[r], started[r]] for r in range(R)])
        full = np.concatenate(a)
        for r in range(R):
            close(ag[r], full, 0)
            close(outs[r], full @ b[r], 1e-4)
            assert not ready[r].any() and not started[r].any()
        # matmul + reduce-scatter: rank s's c = rows s of the sum of a @ b
        MS, K, N = 32, 24, 40
        k = blk.kernel(f"{EX}/matmul_reduce_scatter.blk", **small)
        a = [rand(R * MS, K) for _ in range(R)]
        b = [rand(K, N) for _ in range(R)]
        stage = [np.zeros((R, MS, N), np.float32) for _ in range(R)]
        arrived = [np.zeros(2 * 3, np.int32) for _ in range(R)]
        started = [np.zeros(R, np.int32) for _ in range(R)]
        outs = k.interpret_world([[a[r], b[r], stage[r], None, arrived[r], started[r]]
                                  for r in range(R)])
        total = sum(a[r] @ b[r] for r in range(R))
        for r in range(R):
            close(outs[r], total[r * MS:(r + 1) * MS], 1e-4)
            assert not arrived[r].any() and not started[r].any()
        # all-reduce
        k = blk.kernel(f"{EX}/allreduce.blk", T="f32", BN=256)
        xs = [rand(1000) for _ in range(R)]
        bars = [np.zeros(8, np.int32) for _ in range(R)]
        ys = [np.zeros(1000, np.float32) for _ in range(R)]
        k.interpret_world([[xs[r], ys[r], bars[r]] for r in range(R)])
        for r in range(R):
            close(ys[r], sum(xs), 1e-5)
            assert not bars[r].any()


def test_finalizer_never_blocks():
    """A kernel's program finalized in a thread while another holds the
    runtime's lock (the garbage collector runs finalizers in whichever
    thread allocates: in CI, the Ctrl-C watcher thread that the holder was
    starting, and the two waited for each other) is left for the lock's
    next holder to destroy, not waited for."""
    import threading
    from blk import _kernel
    k = blk.kernel(f"{EX}/add.blk")
    loaded = k._loaded[_arrays.HOST]
    rt = loaded.rt
    with rt.lock:
        t = threading.Thread(target=loaded.__del__)
        t.start()
        t.join(10)
        assert not t.is_alive(), "the finalizer waited for the runtime's lock"
        assert loaded.prog in rt.lock.orphans
    loaded.prog = None  # destroyed below; the real finalizer must not do it again
    with rt.lock:
        assert not rt.lock.orphans
    x = rand(10)
    close(blk.kernel(f"{EX}/add.blk")(x, x, interpret=True), 2 * x)


def test_bench_json():
    """tools/bench_json.py: blk-bench's tables as JSON."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_json
    data = bench_json.parse(BENCH_SAMPLE)
    assert data["device"] == "NVIDIA H200 (sm_90a, driver 13.0)"
    mm, bw = data["tables"]
    assert mm == [{"op": "matmul", "type": "bf16", "size": 4096.0, "blk ms": 3.435,
                   "blk TFLOP/s": 40.0, "cuBLAS ms": 0.179, "cuBLAS TFLOP/s": 767.2,
                   "blk/cuBLAS": 0.05}]
    assert bw[0]["size"] == "2^28 f32" and bw[0]["of copy"] == 102.0
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "bench.txt"), "w") as f:
        f.write(BENCH_SAMPLE)
    assert bench_json.main([os.path.join(d, "bench.txt"), "-o", os.path.join(d, "b.json")]) == 0
    with open(os.path.join(d, "b.json")) as f:
        assert json.load(f) == data
    with open(os.path.join(d, "empty.txt"), "w") as f:
        f.write("no tables\n")
    assert bench_json.main([os.path.join(d, "empty.txt"), "-o", os.path.join(d, "c.json")]) == 1


def test_import_is_fast():
    code = ("import os, time, sys; t = time.perf_counter(); "
            "os.environ.get('BLK_TEST_INSTALLED') == '1' or sys.path.insert(0, sys.argv[1]); "
            "import blk; print((time.perf_counter() - t) * 1e3)")
    ms = float(subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python")],
                              capture_output=True, text=True, check=True).stdout)
    print(f"  import blk: {ms:.1f} ms")
    assert ms < 1000
    for mod in ("torch", "jax", "cupy"):
        assert mod not in sys.modules or mod in os.environ.get("BLK_TEST_ALLOW", "")


def test_torch_submodules_without_torch():
    """blk.torch and blk.testing.do_bench say that they need torch (a child
    process where `import torch` fails, whether or not torch is here)."""
    code = ("import os, sys; os.environ.get('BLK_TEST_INSTALLED') == '1' or "
            "sys.path.insert(0, sys.argv[1]); sys.modules['torch'] = None; import blk.testing\n"
            "try:\n    blk.testing.do_bench(lambda: None)\nexcept blk.BlkError as e:\n    print(e)\n"
            "try:\n    import blk.torch\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python")],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("do_bench times with PyTorch's CUDA events, and torch is not "
                             "installed (pip install torch)"), out
    assert out[1].startswith("blk.torch needs PyTorch (pip install torch)"), out


def test_which_blk():
    where = os.path.dirname(blk.__file__)
    print(f"  blk {blk.__version__} from {where}")
    if os.environ.get("BLK_TEST_INSTALLED") == "1":
        assert not where.startswith(os.path.join(ROOT, "python"))


def main():
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
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
