"""Times the kernels of python/tests/heldout_more.blk against torch on a GPU,
after checking each against torch at the same (big, realistic) size.

From the repository root (heldout_more.blk at python/tests/, or HO_SRC=path):

    BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python python3 python/tests/gpu_heldout_more.py [filters...]

One line per kernel and config:
    TIME name | size | config | blk ms | torch ms | torch/blk | check
A kernel (or config) that fails to compile or to check prints FAIL/SKIP and
the rest go on.  Filters: substrings of kernel names (default: all).
Budget: about 4-6 minutes on an H100/H200 (do_bench defaults, 60-odd
benches, references computed once per family).
"""
import math
import os
import sys
import tempfile
import time
import traceback

os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-ho-cache-"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import blk  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = torch.device("cuda", 0)
BF = torch.bfloat16
SRC = os.environ.get("HO_SRC", os.path.join(os.getcwd(), "python", "tests", "heldout_more.blk"))
TOL = 2e-2          # max |got - want| / (1 + |want|), bf16 outputs
FILTERS = sys.argv[1:]
RESULTS = []        # (name, status)

try:
    import triton.testing
    bench = triton.testing.do_bench
    BENCH = "triton.testing.do_bench"
except Exception:                                     # no triton: blk's copy of it
    import blk.testing
    bench = blk.testing.do_bench
    BENCH = "blk.testing.do_bench"


def wanted(name):
    return not FILTERS or any(f in name for f in FILTERS)


def relerr(got, want):
    got, want = got.double(), want.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - want).abs() / (1 + want.abs())).max().item() if want.numel() else 0.0


def cfgname(cfg):
    return ",".join(f"{k}={v}" for k, v in cfg.items()) or "defaults"


def K(name, **params):
    return blk.kernel(SRC, name=name, **params)


def one(name, size, configs, make_call, checks, torch_ms, note=""):
    """configs: list of (label, params); the first is the header default (an
    empty dict) and later ones are tried when it is refused, or timed as
    extra lines when their label starts with '+'.  make_call(kern) -> a
    callable launching the kernel on preallocated arrays; checks(): a list
    of (what, got, want, tol) read after one launch."""
    if not wanted(name):
        return
    done_default = False
    for label, params in configs:
        extra = label.startswith("+")
        if done_default and not extra:
            continue
        tag = f"{name} | {size} | {cfgname(params)}"
        try:
            kern = K(name, T="bf16", **params)
            call = make_call(kern)
            call()
            torch.cuda.synchronize()
            errs = []
            ok = True
            for what, got, want, tol in checks():
                e = relerr(got, want)
                errs.append(f"{what} {e:.1e}")
                ok = ok and e <= tol
            status = "ok" if ok else "WRONG"
            ms = bench(call)
            tms = torch_ms() if callable(torch_ms) else torch_ms
            print(f"TIME {tag} | blk {ms:.4f} ms | torch {tms:.4f} ms | torch/blk {tms / ms:.3f} | "
                  f"check {status}: {'; '.join(errs)}{' | ' + note if note else ''}", flush=True)
            RESULTS.append((tag, status))
            if not extra:
                done_default = True
        except Exception as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f"FAIL {tag}: {type(e).__name__}: {msg}", flush=True)
            RESULTS.append((tag, "error"))
            torch.cuda.synchronize()


_TORCH_MS = {}


def tbench(key, fn):
    """torch's time, measured once per key"""
    if key not in _TORCH_MS:
        _TORCH_MS[key] = bench(fn)
    return _TORCH_MS[key]


# ----------------------------------------------------------------------------
# attention

def lse_ref(q, k, causal):
    """natural-log LSE of softmax(q k^T / sqrt(D)) per row, f32, one batch at a time"""
    B, H, S, D = q.shape
    out = torch.empty(B, H, S, device=DEV)
    mask = torch.ones(S, S, device=DEV, dtype=torch.bool).tril() if causal else None
    for b in range(B):
        s = (q[b].float() @ k[b].float().transpose(-1, -2)) / math.sqrt(D)
        if causal:
            s.masked_fill_(~mask, float("-inf"))
        out[b] = torch.logsumexp(s, -1)
        del s
    return out


def attention(D, causal):
    B, H, S = 4, 16, 4096
    size = f"B{B} H{H} S{S} D{D} causal={causal} bf16"
    names = ("tri_attn_fwd_lse", "pl_attn_fwd_lse", "tri_attn_bwd_preprocess", "tri_attn_bwd_dkdv",
             "tri_attn_bwd_dq", "pl_attn_bwd_dkv", "pl_attn_bwd_dq", "tri_attn_bwd_fused_atomic")
    if not any(wanted(n) for n in names):
        return
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(B, H, S, D, device=DEV, dtype=BF) for _ in range(4))
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    o_t = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
    dq_t, dk_t, dv_t = torch.autograd.grad(o_t, (qg, kg, vg), do, retain_graph=True)
    o = o_t.detach()
    lse = lse_ref(q, k, causal)
    delta = (o.float() * do.float()).sum(-1)
    fwd_ms = lambda: tbench(("fwd", D, causal), lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    bwd_ms = lambda: tbench(("bwd", D, causal), lambda: torch.autograd.grad(o_t, (qg, kg, vg), do, retain_graph=True))
    scale = 1.0 / math.sqrt(D)
    bufo = torch.empty_like(q)
    bufl = torch.empty(B, H, S, device=DEV)
    bufl4 = torch.empty(B, H, S, 1, device=DEV)
    dqb, dkb, dvb = (torch.empty_like(q) for _ in range(3))
    lse4, delta4 = lse[..., None].contiguous(), delta[..., None].contiguous()
    BH = B * H

    # forward with LSE
    if True:
        one("tri_attn_fwd_lse", size, [("default", dict(HEAD_DIM=D, CAUSAL=causal)),
                                       ("fallback", dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=64, BLOCK_N=64, num_warps=4))],
            lambda kern: (lambda: kern(q, k, v, bufo, bufl)),
            lambda: [("o", bufo, o, TOL), ("lse", bufl, lse, 1e-3)], fwd_ms, "torch = SDPA forward")
        one("pl_attn_fwd_lse", size, [("default", dict(D=D, SM_SCALE=scale, CAUSAL=causal)),
                                      ("fallback", dict(D=D, SM_SCALE=scale, CAUSAL=causal, BQ=64, BK=64, num_warps=4))],
            lambda kern: (lambda: kern(q, k, v, bufo, bufl4)),
            lambda: [("o", bufo, o, TOL), ("lse", bufl4[..., 0], lse, 1e-3)], fwd_ms, "torch = SDPA forward")
    # backward, Triton's three kernels
    if not causal:
        bufd = torch.empty(BH, S, device=DEV)
        one("tri_attn_bwd_preprocess", size, [("default", dict(HEAD_DIM=D))],
            lambda kern: (lambda: kern(o.view(BH, S, D), do.view(BH, S, D), bufd)),
            lambda: [("delta", bufd.view(B, H, S), delta, 1e-3)],
            lambda: tbench(("delta", D), lambda: (o.float() * do.float()).sum(-1)),
            "torch = (o.float() * do.float()).sum(-1)")
    one("tri_attn_bwd_dkdv", size, [("default", dict(HEAD_DIM=D, CAUSAL=causal)),
                                    ("fallback", dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=32, BLOCK_N=64, num_warps=4))],
        lambda kern: (lambda: kern(q, k, v, do, lse, delta, dkb, dvb)),
        lambda: [("dk", dkb, dk_t, TOL), ("dv", dvb, dv_t, TOL)], bwd_ms, "torch = all of SDPA backward")
    one("tri_attn_bwd_dq", size, [("default", dict(HEAD_DIM=D, CAUSAL=causal)),
                                  ("fallback", dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=64, BLOCK_N=32, num_warps=4))],
        lambda kern: (lambda: kern(q, k, v, do, lse, delta, dqb)),
        lambda: [("dq", dqb, dq_t, TOL)], bwd_ms, "torch = all of SDPA backward")
    # backward, Pallas's two kernels
    one("pl_attn_bwd_dkv", size, [("default", dict(D=D, SM_SCALE=scale, CAUSAL=causal)),
                                  ("fallback", dict(D=D, SM_SCALE=scale, CAUSAL=causal, BQ=64, BK=64, num_warps=4)),
                                  ("fallback", dict(D=D, SM_SCALE=scale, CAUSAL=causal, BQ=32, BK=64, num_warps=4))],
        lambda kern: (lambda: kern(q, k, v, do, lse4, delta4, dkb, dvb)),
        lambda: [("dk", dkb, dk_t, TOL), ("dv", dvb, dv_t, TOL)], bwd_ms, "torch = all of SDPA backward")
    one("pl_attn_bwd_dq", size, [("default", dict(D=D, SM_SCALE=scale, CAUSAL=causal)),
                                 ("fallback", dict(D=D, SM_SCALE=scale, CAUSAL=causal, BQ=64, BK=64, num_warps=4))],
        lambda kern: (lambda: kern(q, k, v, o, do, lse4, dqb)),
        lambda: [("dq", dqb, dq_t, TOL)], bwd_ms, "torch = all of SDPA backward")
    # backward, one kernel with an atomic dQ (the zeroing of the f32 dQ is timed with it)
    dq32 = torch.zeros(BH, S, D, device=DEV)

    def fused(kern):
        def call():
            dq32.zero_()
            kern(q.view(BH, S, D), k.view(BH, S, D), v.view(BH, S, D), do.view(BH, S, D),
                 lse.view(BH, S), delta.view(BH, S), dq32, dkb.view(BH, S, D), dvb.view(BH, S, D))
        return call
    one("tri_attn_bwd_fused_atomic", size, [("default", dict(HEAD_DIM=D, CAUSAL=causal)),
                                            ("fallback", dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=32, BLOCK_N=64)),
                                            ("fallback", dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=32, BLOCK_N=32))],
        fused, lambda: [("dq", dq32.view(B, H, S, D), dq_t, TOL), ("dk", dkb, dk_t, TOL), ("dv", dvb, dv_t, TOL)],
        bwd_ms, "torch = all of SDPA backward")
    del qg, kg, vg, o_t
    torch.cuda.empty_cache()


def gqa():
    B, HQ, HKV, S, D = 4, 32, 8, 4096, 128
    if not (wanted("pl_gqa_fwd") or wanted("tri_gqa_fwd")):
        return
    torch.manual_seed(1)
    q = torch.randn(B, HQ, S, D, device=DEV, dtype=BF)
    k, v = (torch.randn(B, HKV, S, D, device=DEV, dtype=BF) for _ in range(2))
    kr, vr = k.repeat_interleave(HQ // HKV, 1), v.repeat_interleave(HQ // HKV, 1)
    qs, ks, vs = (x.transpose(1, 2).contiguous() for x in (q, k, v))          # [B, S, H, D]
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)
        try:
            F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            tfn, tnote = (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)), \
                "torch = SDPA enable_gqa=True"
        except TypeError:
            tfn, tnote = (lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)), \
                "torch = SDPA on repeat_interleave'd K/V (repeat not timed)"
        tms = lambda: tbench(("gqa", causal), tfn)
        size = f"B{B} HQ{HQ} HKV{HKV} S{S} D{D} causal={causal} bf16"
        if not causal:
            bo = torch.empty_like(q)
            one("pl_gqa_fwd", size, [("default", {}), ("fallback", dict(BQ=64, BK=64, num_warps=4))],
                lambda kern: (lambda: kern(q, k, v, bo)), lambda: [("o", bo, ref, TOL)], tms, tnote)
        bs = torch.empty_like(qs)
        one("tri_gqa_fwd", size, [("default", dict(CAUSAL=causal)), ("fallback", dict(CAUSAL=causal, BLOCK_M=64, num_warps=4))],
            lambda kern: (lambda: kern(qs, ks, vs, bs)), lambda: [("o", bs.transpose(1, 2), ref, TOL)], tms, tnote)


# ----------------------------------------------------------------------------
# SwiGLU

def swiglu():
    M, N, Kd = 4096, 14336, 4096
    if not any(wanted(n) for n in ("tri_swiglu", "pl_swiglu_w13")):
        return
    size = f"M{M} N{N} K{Kd} bf16"
    torch.manual_seed(2)
    x = torch.randn(M, Kd, device=DEV, dtype=BF)
    w1 = (torch.randn(N, Kd, device=DEV) * 0.02).to(BF)
    w3 = (torch.randn(N, Kd, device=DEV) * 0.02).to(BF)
    w13 = torch.cat([w1, w3], 0)
    ref = F.silu(x @ w1.T) * (x @ w3.T)
    tms = lambda: tbench("swiglu", lambda: F.silu(x @ w1.T) * (x @ w3.T))
    note = "torch = F.silu(x @ W1.T) * (x @ W3.T)"
    h = torch.empty(M, N, device=DEV, dtype=BF)
    one("tri_swiglu", size, [("default", {}), ("fallback", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4))],
        lambda kern: (lambda: kern(x, w1, w3, h)), lambda: [("h", h, ref, TOL)], tms, note)
    one("tri_swiglu_w13", size, [("default", {}), ("fallback", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4))],
        lambda kern: (lambda: kern(x, w13, h)), lambda: [("h", h, ref, TOL)], tms, note)
    one("pl_swiglu_w13", size, [("default", {}), ("fallback", dict(BM=64, BN=128, BK=64, num_warps=4))],
        lambda kern: (lambda: kern(x, w13, w13, h)), lambda: [("h", h, ref, TOL)], tms,
        note + " (w13 passed twice)")
    del w1, w3, w13
    torch.cuda.empty_cache()


# ----------------------------------------------------------------------------
# conv2d 3x3

def conv():
    N, C, H, W, OC = 32, 64, 56, 56, 64
    if not any(wanted(n) for n in ("tri_conv_nhwc", "tri_conv_nchw", "pl_conv_nhwc_taps")):
        return
    torch.manual_seed(3)
    x = torch.randn(N, C, H, W, device=DEV, dtype=BF)
    w = (torch.randn(OC, C, 3, 3, device=DEV) * 0.05).to(BF)
    x_cl, w_cl = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    ref = F.conv2d(x_cl, w_cl, padding=1)
    t_cl = lambda: tbench("conv_cl", lambda: F.conv2d(x_cl, w_cl, padding=1))
    t_nchw = lambda: tbench("conv_nchw", lambda: F.conv2d(x, w, padding=1))
    size = f"N{N} C{C} H{H} W{W} OC{OC} 3x3 pad1 bf16"
    x_nhwc = x_cl.permute(0, 2, 3, 1)          # a view: contiguous NHWC
    w_ohwc = w_cl.permute(0, 2, 3, 1)          # [OC, 3, 3, C], contiguous
    y = torch.empty(N, H, W, OC, device=DEV, dtype=BF)
    one("tri_conv_nhwc", size, [("default", {}), ("fallback", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32))],
        lambda kern: (lambda: kern(x_nhwc, w_ohwc, y)), lambda: [("y", y.permute(0, 3, 1, 2), ref, TOL)], t_cl,
        "torch = F.conv2d channels_last")
    y2 = torch.empty(N, OC, H, W, device=DEV, dtype=BF)
    one("tri_conv_nchw", size, [("default", {}), ("fallback", dict(BLOCK_OC=32, BLOCK_P=64, BLOCK_K=32))],
        lambda kern: (lambda: kern(x, w, y2)), lambda: [("y", y2, ref, TOL)], t_nchw,
        "torch = F.conv2d NCHW (contiguous)")
    xp = F.pad(x_nhwc, (0, 0, 1, 1, 1, 1)).contiguous()     # [N, H+2, W+2, C]
    w_rsco = w.permute(2, 3, 1, 0).contiguous()             # [3, 3, C, OC]
    one("pl_conv_nhwc_taps", size, [("default", {}), ("+BH=4", dict(BH=4))],
        lambda kern: (lambda: kern(xp, w_rsco, y)), lambda: [("y", y.permute(0, 3, 1, 2), ref, TOL)], t_cl,
        "torch = F.conv2d channels_last; the jnp.pad of the input not timed")


# ----------------------------------------------------------------------------
# norms, softmax, cross-entropy, colsum, quantization

def rows():
    M, Nn = 16384, 4096
    torch.manual_seed(4)
    x = torch.randn(M, Nn, device=DEV, dtype=BF) * 2 + 0.5
    x = x.to(BF)
    w = torch.randn(Nn, device=DEV, dtype=BF)
    b = torch.randn(Nn, device=DEV, dtype=BF)
    size = f"{M}x{Nn} bf16"
    xf = x.float()
    y = torch.empty_like(x)
    if wanted("tri_layernorm"):
        ref = F.layer_norm(xf, (Nn,), w.float(), b.float(), 1e-5)
        mean, rstd = xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5)
        mb, rb = torch.empty(M, device=DEV), torch.empty(M, device=DEV)
        one("tri_layernorm", size, [("default", {}), ("+BLOCK_SIZE=4096", dict(BLOCK_SIZE=4096))],
            lambda kern: (lambda: kern(x, w, b, y, mb, rb)),
            lambda: [("y", y, ref, TOL), ("mean", mb, mean, 1e-4), ("rstd", rb, rstd, 1e-4)],
            lambda: tbench("ln", lambda: F.layer_norm(x, (Nn,), w, b, 1e-5)), "torch = F.layer_norm")
    if wanted("pl_rmsnorm"):
        ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
        if hasattr(F, "rms_norm"):
            tfn, tn = (lambda: F.rms_norm(x, (Nn,), w, 1e-6)), "torch = F.rms_norm"
        else:
            tfn, tn = (lambda: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
                                * w.float()).to(BF)), "torch = eager rmsnorm formula"
        one("pl_rmsnorm", size, [("default", {}), ("+BR=2", dict(BR=2)), ("+BR=1", dict(BR=1))],
            lambda kern: (lambda: kern(x, w[None, :], y)), lambda: [("y", y, ref, TOL)],
            lambda: tbench("rms", tfn), tn)
    if wanted("tri_softmax_online"):
        ref = torch.softmax(xf, -1)
        one("tri_softmax_online", size, [("default", {}), ("+BLOCK_N=4096", dict(BLOCK_N=4096, num_warps=8))],
            lambda kern: (lambda: kern(x, y)), lambda: [("y", y, ref, 2e-3)],
            lambda: tbench("softmax", lambda: torch.softmax(x, -1)), "torch = torch.softmax")
    if wanted("tri_colsum") or wanted("pl_colsum"):
        ref = xf.sum(0)
        s = torch.empty(Nn, device=DEV)
        tcs = lambda: tbench("colsum", lambda: x.sum(0))
        one("tri_colsum", size, [("default", {}), ("+BLOCK_N=32", dict(BLOCK_N=32, BLOCK_M=256))],
            lambda kern: (lambda: kern(x, s)), lambda: [("s", s, ref, 1e-4)], tcs, "torch = x.sum(0) (bf16 out)")
        s1 = torch.empty(1, Nn, device=DEV)
        one("pl_colsum", size, [("default", {}), ("+BC=32", dict(BC=32, BR=512))],
            lambda kern: (lambda: kern(x, s1)), lambda: [("s", s1[0], ref, 1e-4)], tcs, "torch = x.sum(0) (bf16 out)")
    if wanted("quant_int8"):
        amax = xf.abs().amax(-1, keepdim=True)
        sc = amax / 127
        v = xf / sc  # ties away from zero, as the kernels round
        qref = (torch.sign(v) * torch.floor(v.abs() + 0.5)).clamp(-127, 127)

        def tq():
            a = x.float().abs().amax(-1, keepdim=True)
            s_ = a / 127
            return torch.round(x.float() / s_).clamp(-127, 127).to(torch.int8), s_
        q8 = torch.empty(M, Nn, device=DEV, dtype=torch.int8)
        s2 = torch.empty(M, 1, device=DEV)
        s3 = torch.empty(M, device=DEV)

        def qchecks(sv):
            def f():
                d = (q8.float() - qref).abs()
                # the kernels compute v as x * (127 / amax) or x / scale: allow 1 on a few
                bad = torch.tensor(float((d > 1).sum() > 0) + float((d > 0).float().mean() > 1e-3), device=DEV)
                return [("q(>1 or >0.1% off)", bad, torch.zeros((), device=DEV), 0.0),
                        ("scale", sv().reshape(M, 1), sc, 1e-6)]
            return f
        one("pl_quant_int8", size, [("default", {}), ("+BR=4", dict(BR=4)), ("+BR=1", dict(BR=1))],
            lambda kern: (lambda: kern(x, q8, s2)), qchecks(lambda: s2), lambda: tbench("quant", tq),
            "torch = eager absmax/round/clamp/int8")
        one("tri_quant_int8", size, [("default", {}), ("+BLOCK=4096", dict(BLOCK=4096, num_warps=8))],
            lambda kern: (lambda: kern(x, q8, s3)), qchecks(lambda: s3), lambda: tbench("quant", tq),
            "torch = eager absmax/round/clamp/int8")
    del x, xf
    torch.cuda.empty_cache()


def cross_entropy():
    M, V = 8192, 32000
    if not (wanted("tri_cross_entropy") or wanted("pl_cross_entropy")):
        return
    torch.manual_seed(5)
    logits = (torch.randn(M, V, device=DEV) * 3).to(BF)
    lab64 = torch.randint(0, V, (M,), device=DEV)
    lab64[::97] = -100
    lab = lab64.to(torch.int32)
    ref = F.cross_entropy(logits.float(), lab64, reduction="none", ignore_index=-100)
    lse = torch.logsumexp(logits.float(), -1)
    tms = lambda: tbench("ce", lambda: F.cross_entropy(logits, lab64, reduction="none"))
    size = f"M{M} V{V} bf16"
    loss, lo = torch.empty(M, device=DEV), torch.empty(M, device=DEV)
    one("tri_cross_entropy", size, [("default", {}), ("+BLOCK_V=8192", dict(BLOCK_V=8192, num_warps=16))],
        lambda kern: (lambda: kern(logits, lab, loss, lo)),
        lambda: [("loss", loss, ref, 1e-3), ("lse", lo, lse, 1e-3)], tms,
        "torch = F.cross_entropy(reduction='none') on bf16 logits")
    lab_pos = lab64.clamp(min=0)
    ref2 = F.cross_entropy(logits.float(), lab_pos, reduction="none")
    lab2 = lab_pos.to(torch.int32)[:, None].contiguous()
    loss2 = torch.empty(M, 1, device=DEV)
    one("pl_cross_entropy", size, [("default", {}), ("+BR=4", dict(BR=4, BV=4096))],
        lambda kern: (lambda: kern(logits, lab2, loss2)), lambda: [("loss", loss2[:, 0], ref2, 1e-3)], tms,
        "torch = F.cross_entropy(reduction='none') on bf16 logits")


def main():
    print(f"blk {getattr(blk, '__version__', '?')}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"timing with {BENCH}; source {SRC}", flush=True)
    t0 = time.time()
    steps = [("attention D64", lambda: attention(64, False)), ("attention D64 causal", lambda: attention(64, True)),
             ("attention D128", lambda: attention(128, False)), ("attention D128 causal", lambda: attention(128, True)),
             ("gqa", gqa), ("swiglu", swiglu), ("conv", conv), ("rows", rows), ("cross_entropy", cross_entropy)]
    for label, fn in steps:
        t1 = time.time()
        print(f"== {label}", flush=True)
        try:
            fn()
        except Exception as e:
            traceback.print_exc()
            print(f"FAIL {label}: {type(e).__name__}: {e}", flush=True)
            RESULTS.append((label, "error"))
        torch.cuda.synchronize()
        print(f"   ({time.time() - t1:.1f} s)", flush=True)
    bad = [r for r in RESULTS if r[1] != "ok"]
    print(f"{len(RESULTS) - len(bad)} ok, {len(bad)} not ok ({time.time() - t0:.0f} s)")
    for tag, st in bad:
        print(f"  {st}: {tag}")


if __name__ == "__main__":
    main()
