"""The kernels of heldout_more.blk -- written as Triton and Pallas authors
write them, not from blk's examples: attention backward (three kernels,
and one with atomics), forwards that write LSE, GQA, SwiGLU with one or two
weights, convolutions NHWC and NCHW, norms and softmax over column chunks,
cross-entropy, column sums, int8 quantization -- in the interpreter at
ragged shapes, f32 and bf16, against NumPy in float64.  (gpu_heldout_more.py
checks and times them on a GPU beside torch.)

  BLK_LIBRARY=build/libblk.so.0 PYTHONPATH=python python3 python/tests/test_heldout_more.py [case...]
"""
import os, sys, tempfile, time, traceback
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("BLK_TEST_INSTALLED") != "1":  # the blk `pip install .` installed, else python/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-pytest-cache-"))
import blk  # noqa: E402

SRC = os.path.join(HERE, "heldout_more.blk")
rng = np.random.default_rng(0)
RESULTS = []


def to_bf16(a):
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bf16(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def inp(shape, t, scale=1.0):
    """(array passed to blk, float64 value it holds)"""
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    if t == "bf16":
        b = to_bf16(a)
        return b, from_bf16(b).astype(np.float64)
    return a, a.astype(np.float64)


def val(x, t):
    x = np.asarray(x)
    if x.dtype == np.uint16:
        return from_bf16(x).astype(np.float64)
    return x.astype(np.float64)


def err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.max(np.abs(got - want) / (1 + np.abs(want)))) if want.size else 0.0


def check(name, got, want, tol):
    e = err(got, want)
    ok = e <= tol
    RESULTS.append((name, ok, e))
    print(f"{'PASS' if ok else 'FAIL'} {name}: max rel err {e:.2e} (tol {tol:.0e})", flush=True)


def K(name, **p):
    return blk.kernel(SRC, name=name, interpret=True, **p)


TOL = {"f32": 2e-4, "bf16": 2.5e-2}
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


# ---------------------------------------------------------------- attention refs
def attn_ref(q, k, v, causal):
    """q,k,v [..., S, D] float64 -> o, lse"""
    D = q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(D)
    if causal:
        S = q.shape[-2]
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(-1, keepdims=True)
    return (e / l) @ v, (m + np.log(l))[..., 0]


def attn_bwd_ref(q, k, v, do, causal):
    D = q.shape[-1]
    sc = 1 / np.sqrt(D)
    o, lse = attn_ref(q, k, v, causal)
    p = np.exp(q @ np.swapaxes(k, -1, -2) * sc - lse[..., None])
    if causal:
        S = q.shape[-2]
        p = np.where(np.tril(np.ones((S, S), bool)), p, 0.0)
    dv = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    delta = (o * do).sum(-1)
    ds = p * (dp - delta[..., None])
    dq = ds @ k * sc
    dk = np.swapaxes(ds, -1, -2) @ q * sc
    return o, lse, delta, dq, dk, dv


@case
def attn_bwd():
    for t in ("f32", "bf16"):
        for causal in (False, True):
            Z, H, S, D = 1, 2, 200, 64
            q, qv = inp((Z, H, S, D), t); k, kv = inp((Z, H, S, D), t); v, vv = inp((Z, H, S, D), t)
            do, dov = inp((Z, H, S, D), t)
            o, lse, delta, dq, dk, dv = attn_bwd_ref(qv, kv, vv, dov, causal)
            # inputs derived from the reference, in the kernel's dtype
            o_in = o.astype(np.float32) if t == "f32" else to_bf16(o)
            o_inv = val(o_in, t)
            delta_in = (o_inv * dov).sum(-1).astype(np.float32)
            lse_in = lse.astype(np.float32)
            tol = TOL[t]
            tag = f"{t} Z{Z}H{H}S{S}D{D} causal={causal}"
            if not causal:
                dl = K("tri_attn_bwd_preprocess", T=t)(o_in.reshape(Z * H, S, D), do.reshape(Z * H, S, D))
                check(f"tri_attn_bwd_preprocess {tag}", dl.reshape(Z, H, S), (o_inv * dov).sum(-1), 1e-4)
            for cfg in ({}, dict(BLOCK_M=32, BLOCK_N=64, num_warps=4)):
                dkk, dvv = K("tri_attn_bwd_dkdv", T=t, CAUSAL=causal, **cfg)(q, k, v, do, lse_in, delta_in)
                check(f"tri_attn_bwd_dkdv dk {tag} {cfg}", val(dkk, t), dk, tol)
                check(f"tri_attn_bwd_dkdv dv {tag} {cfg}", val(dvv, t), dv, tol)
                cfg2 = {"BLOCK_M": cfg.get("BLOCK_N", 128), "BLOCK_N": cfg.get("BLOCK_M", 64)} if cfg else {}
                dqq = K("tri_attn_bwd_dq", T=t, CAUSAL=causal, **cfg2)(q, k, v, do, lse_in, delta_in)
                check(f"tri_attn_bwd_dq {tag} {cfg2}", val(dqq, t), dq, tol)
            lse4 = lse_in[..., None].copy()
            dl4 = delta_in[..., None].copy()
            for cfg in ({}, dict(BQ=64, BK=128), dict(BQ=128, BK=64)):
                dkk, dvv = K("pl_attn_bwd_dkv", T=t, CAUSAL=causal, SM_SCALE=1 / np.sqrt(D), **cfg)(q, k, v, do, lse4, dl4)
                check(f"pl_attn_bwd_dkv dk {tag} {cfg}", val(dkk, t), dk, tol)
                check(f"pl_attn_bwd_dkv dv {tag} {cfg}", val(dvv, t), dv, tol)
                dqq = K("pl_attn_bwd_dq", T=t, CAUSAL=causal, SM_SCALE=1 / np.sqrt(D), **cfg)(q, k, v, o_in, do, lse4)
                check(f"pl_attn_bwd_dq {tag} {cfg}", val(dqq, t), dq, tol)
            BH = Z * H
            for cfg in ({}, dict(BLOCK_M=32, BLOCK_N=64)):
                dqbuf = np.zeros((BH, S, D), np.float32)
                dkk, dvv = K("tri_attn_bwd_fused_atomic", T=t, CAUSAL=causal, **cfg)(
                    q.reshape(BH, S, D), k.reshape(BH, S, D), v.reshape(BH, S, D), do.reshape(BH, S, D),
                    lse_in.reshape(BH, S), delta_in.reshape(BH, S), dqbuf)
                check(f"tri_attn_bwd_fused_atomic dq {tag} {cfg}", dqbuf.reshape(Z, H, S, D), dq, tol)
                check(f"tri_attn_bwd_fused_atomic dk {tag} {cfg}", val(dkk, t).reshape(Z, H, S, D), dk, tol)
                check(f"tri_attn_bwd_fused_atomic dv {tag} {cfg}", val(dvv, t).reshape(Z, H, S, D), dv, tol)


@case
def attn_fwd():
    for t in ("f32", "bf16"):
        for causal in (False, True):
            Z, H, S, D = 1, 2, 200, 64
            q, qv = inp((Z, H, S, D), t); k, kv = inp((Z, H, S, D), t); v, vv = inp((Z, H, S, D), t)
            o, lse = attn_ref(qv, kv, vv, causal)
            tag = f"{t} Z{Z}H{H}S{S}D{D} causal={causal}"
            for cfg in ({}, dict(BLOCK_M=64, BLOCK_N=32, num_warps=4)):
                oo, ll = K("tri_attn_fwd_lse", T=t, CAUSAL=causal, **cfg)(q, k, v)
                check(f"tri_attn_fwd_lse o {tag} {cfg}", val(oo, t), o, TOL[t])
                check(f"tri_attn_fwd_lse lse {tag} {cfg}", ll, lse, 1e-4)
            for cfg in ({}, dict(BQ=64, BK=128)):
                oo, ll = K("pl_attn_fwd_lse", T=t, CAUSAL=causal, SM_SCALE=1 / np.sqrt(D), **cfg)(q, k, v)
                check(f"pl_attn_fwd_lse o {tag} {cfg}", val(oo, t), o, TOL[t])
                check(f"pl_attn_fwd_lse lse {tag} {cfg}", ll[..., 0], lse, 1e-4)
    for t in ("f32", "bf16"):
        B, HQ, HKV, S, D = 1, 8, 2, 150, 128
        q, qv = inp((B, HQ, S, D), t); k, kv = inp((B, HKV, S, D), t); v, vv = inp((B, HKV, S, D), t)
        o, _ = attn_ref(qv, np.repeat(kv, 4, axis=1), np.repeat(vv, 4, axis=1), False)
        oo = K("pl_gqa_fwd", T=t)(q, k, v)
        check(f"pl_gqa_fwd {t} B{B}HQ{HQ}HKV{HKV}S{S}D{D}", val(oo, t), o, TOL[t])
        for causal in (False, True):
            qs, ks, vs = (np.ascontiguousarray(np.swapaxes(a, 1, 2)) for a in (q, k, v))
            o, _ = attn_ref(qv, np.repeat(kv, 4, axis=1), np.repeat(vv, 4, axis=1), causal)
            oo = K("tri_gqa_fwd", T=t, CAUSAL=causal)(qs, ks, vs)
            check(f"tri_gqa_fwd {t} B{B}S{S}HQ{HQ}HKV{HKV}D{D} causal={causal}", np.swapaxes(val(oo, t), 1, 2), o, TOL[t])


def silu(x):
    return x / (1 + np.exp(-x))


@case
def swiglu():
    for t in ("f32", "bf16"):
        M, N, Kd = 150, 200, 130
        x, xv = inp((M, Kd), t, 0.5); w1, w1v = inp((N, Kd), t, 0.1); w3, w3v = inp((N, Kd), t, 0.1)
        ref = silu(xv @ w1v.T) * (xv @ w3v.T)
        check(f"tri_swiglu {t} {M}x{N}x{Kd}", val(K("tri_swiglu", T=t)(x, w1, w3), t), ref, TOL[t])
        check(f"tri_swiglu {t} {M}x{N}x{Kd} 64x64x32", val(K("tri_swiglu", T=t, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)(x, w1, w3), t), ref, TOL[t])
        w13 = np.concatenate([w1, w3], 0)
        yo = np.zeros((M, N), x.dtype)
        K("tri_swiglu_w13", T=t)(x, w13, yo)
        check(f"tri_swiglu_w13 {t} {M}x{N}x{Kd}", val(yo, t), ref, TOL[t])
        # Pallas version: N a multiple of BN
        N2 = 192
        w1b, w1bv = inp((N2, Kd), t, 0.1); w3b, w3bv = inp((N2, Kd), t, 0.1)
        ref2 = silu(xv @ w1bv.T) * (xv @ w3bv.T)
        w13b = np.concatenate([w1b, w3b], 0)
        yo = np.zeros((M, N2), x.dtype)
        K("pl_swiglu_w13", T=t, BN=64)(x, w13b, w13b, yo)
        check(f"pl_swiglu_w13 {t} {M}x{N2}x{Kd} BN=64", val(yo, t), ref2, TOL[t])


def conv_ref_nchw(x, w):
    """x [N, C, H, W], w [OC, C, 3, 3] -> [N, OC, H, W], pad 1"""
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((N, w.shape[0], H, W))
    for r in range(3):
        for s in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, r:r + H, s:s + W], w[:, :, r, s])
    return y


@case
def conv():
    for t in ("f32", "bf16"):
        N, C, H, W, OC = 2, 20, 9, 7, 24
        x, xv = inp((N, C, H, W), t); w, wv = inp((OC, C, 3, 3), t, 0.2)
        ref = conv_ref_nchw(xv, wv)
        tag = f"{t} N{N}C{C}H{H}W{W}OC{OC}"
        xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1)); wh = np.ascontiguousarray(w.transpose(0, 2, 3, 1))
        for cfg in ({}, dict(BLOCK_M=32, BLOCK_N=16, BLOCK_K=16)):
            y = K("tri_conv_nhwc", T=t, **cfg)(xh, wh)
            check(f"tri_conv_nhwc {tag} {cfg}", val(y, t).transpose(0, 3, 1, 2), ref, TOL[t])
        for cfg in ({}, dict(BLOCK_OC=16, BLOCK_P=32, BLOCK_K=16)):
            y = K("tri_conv_nchw", T=t, **cfg)(x, w)
            check(f"tri_conv_nchw {tag} {cfg}", val(y, t), ref, TOL[t])
        xp = np.ascontiguousarray(np.pad(xh, ((0, 0), (1, 1), (1, 1), (0, 0))))
        wt = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
        y = np.zeros((N, H, W, OC), x.dtype)
        K("pl_conv_nhwc_taps", T=t)(xp, wt, y)
        check(f"pl_conv_nhwc_taps {tag}", val(y, t).transpose(0, 3, 1, 2), ref, TOL[t])


@case
def norms():
    for t in ("f32", "bf16"):
        M, Nn = 37, 2500
        x, xv = inp((M, Nn), t, 2.0); x = x if t == "bf16" else x + np.float32(0.5)
        xv = val(x, t)
        w, wv = inp((Nn,), t); b, bv = inp((Nn,), t)
        mean = xv.mean(1); var = xv.var(1); rstd = 1 / np.sqrt(var + 1e-5)
        ref = (xv - mean[:, None]) * rstd[:, None] * wv + bv
        y, mm, rr = K("tri_layernorm", T=t)(x, w, b)
        check(f"tri_layernorm y {t} {M}x{Nn}", val(y, t), ref, TOL[t])
        check(f"tri_layernorm mean {t}", mm, mean, 1e-5)
        check(f"tri_layernorm rstd {t}", rr, rstd, 1e-5)
        R, C = 37, 1000
        x, xv = inp((R, C), t); w, wv = inp((1, C), t)
        ref = xv / np.sqrt((xv * xv).mean(1, keepdims=True) + 1e-6) * wv
        check(f"pl_rmsnorm {t} {R}x{C}", val(K("pl_rmsnorm", T=t)(x, w), t), ref, TOL[t])
        x, xv = inp((M, Nn), t, 3.0)
        e = np.exp(xv - xv.max(1, keepdims=True)); ref = e / e.sum(1, keepdims=True)
        check(f"tri_softmax_online {t} {M}x{Nn}", val(K("tri_softmax_online", T=t)(x), t), ref, TOL[t] / 10)
        V = 5000
        lg, lgv = inp((M, V), t, 3.0)
        lab = rng.integers(0, V, M).astype(np.int32); lab[3] = -100
        lse = np.log(np.exp(lgv - lgv.max(1, keepdims=True)).sum(1)) + lgv.max(1)
        ref = np.where(lab == -100, 0.0, lse - lgv[np.arange(M), np.clip(lab, 0, None)])
        loss, lo = K("tri_cross_entropy", T=t)(lg, lab)
        check(f"tri_cross_entropy loss {t} {M}x{V}", loss, ref, 1e-4)
        check(f"tri_cross_entropy lse {t} {M}x{V}", lo, lse, 1e-4)
        lab2 = rng.integers(0, V, (M, 1)).astype(np.int32)
        ref2 = lse - lgv[np.arange(M), lab2[:, 0]]
        check(f"pl_cross_entropy {t} {M}x{V}", K("pl_cross_entropy", T=t)(lg, lab2)[:, 0], ref2, 1e-4)


@case
def reduce_quant():
    for t in ("f32", "bf16"):
        M, Nn = 300, 333
        x, xv = inp((M, Nn), t)
        check(f"tri_colsum {t} {M}x{Nn}", K("tri_colsum", T=t)(x), xv.sum(0), 1e-4)
        check(f"pl_colsum {t} {M}x{Nn}", K("pl_colsum", T=t)(x)[0], xv.sum(0), 1e-4)
        check(f"pl_colsum {t} {M}x{Nn} BR=64 BC=128", K("pl_colsum", T=t, BR=64, BC=128)(x)[0], xv.sum(0), 1e-4)
        R, C = 37, 1000
        x, xv = inp((R, C), t); x2 = x.copy(); x2[5] = 0; xv = val(x2, t)
        amax = np.abs(xv).max(1, keepdims=True)
        sc = np.where(amax > 0, amax / 127, 1.0)
        x32 = xv.astype(np.float32); a32 = np.abs(x32).max(1, keepdims=True)
        for name in ("pl_quant_int8", "tri_quant_int8"):
            # the kernels' own f32 arithmetic, rounded half away from zero
            if name == "pl_quant_int8":
                v = x32 / np.where(a32 > 0, a32 / np.float32(127), np.float32(1))
            else:
                v = x32 * (np.float32(127) / np.maximum(a32, np.float32(1e-10)))
            v = v.astype(np.float64)
            qref = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -127, 127)
            q, s = K(name, T=t)(x2)
            s = s.reshape(R, 1)
            if name == "tri_quant_int8":
                s = np.where(amax > 0, s, 1.0)
            qd = q.astype(np.float64)
            mism = int((qd != qref).sum())
            ok = np.max(np.abs(qd - qref)) <= 1 and mism <= 5 and err(s, sc) < 1e-6
            RESULTS.append((name, ok, mism))
            print(f"{'PASS' if ok else 'FAIL'} {name} {t} {R}x{C}: q mismatches {mism} (max |dq| {np.max(np.abs(qd - qref)):.0f}), scale err {err(s, sc):.1e}", flush=True)


def main():
    only = sys.argv[1:]
    for c in CASES:
        if only and c.__name__ not in only:
            continue
        t0 = time.time()
        print(f"== {c.__name__}", flush=True)
        try:
            c()
        except Exception as e:
            traceback.print_exc()
            RESULTS.append((c.__name__, False, str(e)))
            print(f"FAIL {c.__name__}: {type(e).__name__}: {e}", flush=True)
        print(f"   ({time.time() - t0:.1f} s)", flush=True)
    bad = [r for r in RESULTS if not r[1]]
    print(f"{len(RESULTS) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
