"""The transformer of this folder in JAX: every kernel of its forward and
backward pass a blk kernel, the whole training step under `jax.jit`,
checked against the same model in plain JAX (jax.numpy, jax.nn).

    layer:  x = x + dropout(attn(rope(rmsnorm(x))))       causal, RoPE on q and k
            x = x + dropout(w2 @ swiglu(rmsnorm(x)))
    head:   loss = cross_entropy(rmsnorm(x) @ wout^T, targets)

Each op is a blk kernel paired with its backward kernels by
`blk.jax.custom_vjp`; called on tracers, a kernel is an XLA custom call
(on the CPU, blk's interpreter; on a GPU, blk's launch on XLA's stream).
The input embedding is blk's lookup into a frozen table, as in model.py.

    BLK_LIBRARY=build/libblk-private.so PYTHONPATH=python python3 examples/transformer/jax_train.py
    ... jax_train.py --dtype bf16 --batch 4 --seq 2048 --dim 1024 --heads 16 --ffn 2816 --vocab 32000

It prints PASS/FAIL per check (the loss and every gradient at each step,
blk's jitted step against plain JAX's), then on a GPU both steps' times,
and `N passed, N failed`; exit status 1 when a check failed.
"""
import argparse
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import blk
import blk.jax
from blocks import Config, kernel_params, rope_tables

HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.dirname(HERE)  # examples/


DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16}


def init_params(cfg, seed=0):
    """f32 parameters (1/sqrt(fan-in); the projections into the residual
    stream smaller, by 1/sqrt(2 * layers)), then cast to cfg's dtype."""
    rng = np.random.default_rng(seed)
    D, F, L = cfg.dim, cfg.ffn, cfg.layers
    res = 1 / math.sqrt(2 * L)

    def lin(n, k, scale=1.0):
        return rng.standard_normal((n, k)) * (scale / math.sqrt(k))

    p = {"emb": rng.standard_normal((cfg.vocab, D))}
    for i in range(L):
        p[f"{i}.attn_norm"] = 1 + 0.1 * rng.standard_normal(D)
        p[f"{i}.wqkv"] = lin(3 * D, D)
        p[f"{i}.wo"] = lin(D, D, res)
        p[f"{i}.mlp_norm"] = 1 + 0.1 * rng.standard_normal(D)
        p[f"{i}.w13"] = lin(2 * F, D).reshape(2, F, D)
        p[f"{i}.w2"] = lin(D, F, res)
    p["final_norm"] = 1 + 0.1 * rng.standard_normal(D)
    p["wout"] = lin(cfg.vocab, D)
    return {k: jnp.asarray(v, jnp.float32).astype(DTYPES[cfg.dtype]) for k, v in p.items()}


class Ops:
    """blk's differentiable ops for one config: kernels paired with their
    backwards by blk.jax.custom_vjp."""

    def __init__(self, cfg, kp):
        T = cfg.dtype
        tf = f"{HERE}/{{}}.blk"

        def k(path, name=None, **params):
            return blk.kernel(path, name=name, T=T, **params)

        mm = k(f"{EX}/matmul.blk", **kp["mm"])
        call = blk.jax.call

        def linear_bwd(x, w, dy):  # y = x @ W^T: dx = dy @ W, dW = dy^T @ x
            return call(mm, dy, w), call(mm, dy.T, x)

        self.linear = blk.jax.custom_vjp(k(f"{EX}/matmul_nt.blk", **kp["mm"]), linear_bwd)

        norm_bwd = k(tf.format("rmsnorm"), "rmsnorm_bwd", **kp["norm_bwd"])
        norm_dw = k(tf.format("rmsnorm"), "rmsnorm_dw", **kp["norm_dw"])

        def rmsnorm_bwd(x, w, rstd, dy, _drstd):
            dx, dwp = call(norm_bwd, x, w, rstd, dy)
            return dx, call(norm_dw, dwp)

        rmsnorm = blk.jax.custom_vjp(
            k(tf.format("rmsnorm"), "rmsnorm_fwd", EPS=cfg.eps, **kp["norm"]), rmsnorm_bwd,
            save=["x", "w", "rstd"])
        self.rmsnorm = lambda x, w: rmsnorm(x, w)[0]

        hp = dict(H=cfg.heads, D=cfg.head_dim, **kp["rope"])
        merge = k(tf.format("rope"), "rope_merge", **hp)
        self.rope = blk.jax.custom_vjp(
            k(tf.format("rope"), "rope_split", **hp),
            lambda cos, sin, dq, dk, dv: (call(merge, dq, dk, dv, cos, sin), None, None),
            save=["cos", "sin"])

        src = f"{EX}/attention_bwd.blk"
        ap = dict(D=cfg.head_dim, CAUSAL=True)
        pre = k(src, "attention_bwd_preprocess", D=cfg.head_dim, **kp["pre"])
        dkdv = k(src, "attention_bwd_dkdv", **ap, **kp["dkdv"])
        dqk = k(src, "attention_bwd_dq", **ap, **kp["dq"])

        def attention_bwd(q, kk, v, o, lse, do, _dlse):
            delta = call(pre, o, do)
            dk, dv = call(dkdv, q, kk, v, do, lse, delta)
            return call(dqk, q, kk, v, do, lse, delta), dk, dv

        attention = blk.jax.custom_vjp(k(src, "attention_fwd_lse", **ap, **kp["attn_fwd"]),
                                       attention_bwd, save=["q", "k", "v", "o", "lse"])
        self.attention = lambda q, kk, v: attention(q, kk, v)[0]

        swap = k(tf.format("heads"), **kp["heads"])
        self.merge_heads = blk.jax.custom_vjp(swap, lambda dy: (call(swap, dy),), save=[])

        sw_bwd = k(tf.format("swiglu"), "swiglu_bwd", **kp["mm"])

        def swiglu_bwd(x, w, dh):
            dgu = call(sw_bwd, x, w, dh).reshape(x.shape[0], -1)
            return call(mm, dgu, w.reshape(-1, w.shape[2])), call(mm, dgu.T, x).reshape(w.shape)

        self.swiglu = blk.jax.custom_vjp(k(tf.format("swiglu"), "swiglu_fwd", **kp["mm"]),
                                         swiglu_bwd)

        P = dict(P=cfg.p_drop, **kp["drop"])
        drop_bwd = k(f"{EX}/dropout.blk", "dropout_backward", **P)
        dropout_add = blk.jax.custom_vjp(
            k(tf.format("dropout_add"), **P),
            lambda seed, dy: (None, dy, call(drop_bwd, seed, dy)), save=["seed"])
        self.dropout_add = lambda seed, res, x: dropout_add(
            seed, res.reshape(-1), x.reshape(-1)).reshape(res.shape)
        drop = k(f"{EX}/dropout.blk", "dropout", **P)
        self.dropout_mask = lambda seed, like: call(
            drop, seed, jnp.ones(like.size, like.dtype)).reshape(like.shape) != 0

        ce_bwd = k(tf.format("cross_entropy"), "ce_bwd", **kp["ce"])
        ce = blk.jax.custom_vjp(
            k(tf.format("cross_entropy"), "ce_fwd", **kp["ce"]),
            lambda logits, target, lse, dloss, _dlse: (call(ce_bwd, logits, target, lse, dloss),
                                                       None),
            save=["logits", "target", "lse"])
        mean = blk.jax.custom_vjp(blk.kernel(tf.format("cross_entropy"), "mean_fwd"),
                                  blk.kernel(tf.format("cross_entropy"), "mean_bwd"), save="x")
        self.cross_entropy = lambda logits, target: mean(ce(logits, target)[0]).reshape(())
        self.embedding = k(f"{EX}/embedding.blk")


def blk_loss(o, p, emb, tokens, targets, seeds, cos, sin, cfg):
    """The mean loss with blk's kernels; p: the trainable parameters, emb
    the frozen table; seeds: i32 [2 * layers], one per residual branch."""
    B, S, D, H, Dh = cfg.batch, cfg.seq, cfg.dim, cfg.heads, cfg.head_dim
    x = o.embedding(tokens.reshape(-1), emb)
    for i in range(cfg.layers):
        h = o.rmsnorm(x, p[f"{i}.attn_norm"])
        qkv = o.linear(h, p[f"{i}.wqkv"]).reshape(B, S, 3 * H, Dh)
        q, k, v = (t.reshape(B * H, S, Dh) for t in o.rope(qkv, cos, sin))
        a = o.merge_heads(o.attention(q, k, v).reshape(B, H, S, Dh)).reshape(B * S, D)
        x = o.dropout_add(seeds[2 * i:2 * i + 1], x, o.linear(a, p[f"{i}.wo"]))
        h = o.rmsnorm(x, p[f"{i}.mlp_norm"])
        y = o.linear(o.swiglu(h, p[f"{i}.w13"]), p[f"{i}.w2"])
        x = o.dropout_add(seeds[2 * i + 1:2 * i + 2], x, y)
    logits = o.linear(o.rmsnorm(x, p["final_norm"]), p["wout"])
    return o.cross_entropy(logits, targets.reshape(-1))


def jax_loss(p, emb, tokens, targets, masks, cos, sin, cfg):
    """The same model in plain JAX, with the dropout masks blk draws."""
    B, S, D, H, Dh = cfg.batch, cfg.seq, cfg.dim, cfg.heads, cfg.head_dim
    dt = DTYPES[cfg.dtype]

    def rmsnorm(x, w):
        xf = x.astype(jnp.float32)
        r = jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + cfg.eps)
        return (xf * r * w.astype(jnp.float32)).astype(dt)

    def rope(x):
        x = x.astype(jnp.float32)
        x1, x2 = jnp.split(x, 2, -1)
        return (x * cos + jnp.concatenate([-x2, x1], -1) * sin).astype(dt)

    def drop(x, i):
        return jnp.where(masks[i], x / (1 - cfg.p_drop), 0).astype(dt)

    x = emb[tokens.reshape(-1)]
    for i in range(cfg.layers):
        h = rmsnorm(x, p[f"{i}.attn_norm"])
        q, k, v = (h @ p[f"{i}.wqkv"].T).reshape(B, S, 3, H, Dh).transpose(2, 0, 3, 1, 4)
        s = jnp.einsum("bhqd,bhkd->bhqk", rope(q), rope(k)).astype(jnp.float32) / math.sqrt(Dh)
        s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), s, -jnp.inf)
        a = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1).astype(dt), v)
        x = x + drop(a.transpose(0, 2, 1, 3).reshape(B * S, D) @ p[f"{i}.wo"].T, 2 * i)
        h = rmsnorm(x, p[f"{i}.mlp_norm"])
        w1, w3 = p[f"{i}.w13"]
        x = x + drop((jax.nn.silu(h @ w1.T) * (h @ w3.T)) @ p[f"{i}.w2"].T, 2 * i + 1)
    logits = (rmsnorm(x, p["final_norm"]) @ p["wout"].T).astype(jnp.float32)
    lse = jax.nn.logsumexp(logits, -1)
    return jnp.mean(lse - jnp.take_along_axis(logits, targets.reshape(-1, 1), 1)[:, 0])


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-12))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, v in vars(Config()).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(v), default=v)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="every check's error at every step")
    a = ap.parse_args()
    cfg = Config(**{k: getattr(a, k) for k in vars(Config())})
    gpu = jax.default_backend() == "gpu"
    if gpu:
        jax.config.update("jax_default_matmul_precision", "highest")
    print(f"{cfg} on {jax.devices()[0]}")
    ops = Ops(cfg, kernel_params(cfg, gpu))
    params = init_params(cfg)
    emb = params.pop("emb")
    cos, sin = (jnp.asarray(t) for t in rope_tables(cfg))
    rng = np.random.default_rng(1)
    tokens = jnp.asarray(rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq)), jnp.int32)
    targets = jnp.asarray(rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq)), jnp.int32)
    M = cfg.batch * cfg.seq

    def sgd(p, g):
        return {k: (p[k].astype(jnp.float32) - a.lr * g[k].astype(jnp.float32)).astype(p[k].dtype)
                for k in p}

    @jax.jit
    def blk_step(p, seeds):
        loss, g = jax.value_and_grad(blk_loss, argnums=1)(ops, p, emb, tokens, targets, seeds,
                                                           cos, sin, cfg)
        return loss, g, sgd(p, g)

    @jax.jit
    def jax_step(p, masks):
        loss, g = jax.value_and_grad(jax_loss)(p, emb, tokens, targets, masks, cos, sin, cfg)
        return loss, g, sgd(p, g)

    # tolerances: f32 compares summation orders; bf16 two models' roundings
    tol_loss, tol_grad = (2e-4, 2e-3) if cfg.dtype == "f32" else (1e-2, 5e-2)
    passed = failed = 0
    pb = pj = params
    for step in range(a.steps):
        seeds = jnp.arange(2 * cfg.layers, dtype=jnp.int32) + 100 * step
        like = jnp.zeros((M, cfg.dim), DTYPES[cfg.dtype])
        masks = [ops.dropout_mask(seeds[i:i + 1], like) for i in range(2 * cfg.layers)]
        lb, gb, pb_next = blk_step(pb, seeds)
        lj, gj, pj_next = jax_step(pj, masks)
        checks = [("loss", rel_err(lb, lj), tol_loss)]
        checks += [(f"d{k}", rel_err(gb[k], gj[k]), tol_grad) for k in sorted(gb)]
        worst = max(checks, key=lambda c: c[1] / c[2])
        ok = all(e <= t for _, e, t in checks)
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'} step {step}: loss blk {float(lb):.5f} jax {float(lj):.5f}; "
              f"{len(checks) - 1} gradients, the farthest {worst[0]} at {worst[1]:.1e} "
              f"(tolerance {worst[2]:.0e})")
        for name, e, t in checks:
            if e > t or a.verbose:
                print(f"  {name}: {e:.2e} {'>' if e > t else '<='} {t:.0e}")
        pb, pj = pb_next, pj_next
    if gpu and not a.no_bench:
        seeds = jnp.arange(2 * cfg.layers, dtype=jnp.int32)
        like = jnp.zeros((M, cfg.dim), DTYPES[cfg.dtype])
        masks = [ops.dropout_mask(seeds[i:i + 1], like) for i in range(2 * cfg.layers)]
        for name, f, arg in (("blk", blk_step, seeds), ("jax", jax_step, masks)):
            jax.block_until_ready(f(params, arg))
            ts = []
            for _ in range(5):
                t = time.perf_counter()
                jax.block_until_ready(f(params, arg))
                ts.append((time.perf_counter() - t) * 1e3)
            print(f"  step under jax.jit, {name}'s kernels: {sorted(ts)[2]:.2f} ms (median of 5)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
