"""bench_jax.py - blk kernels inside jax.jit beside the JAX a user would
write instead, in the same process on one GPU: each function jitted,
checked against the other first, warmed, then timed as JAX users time it
(20 calls, then block_until_ready; the median of 5 such rounds, ms per
call).  Rows: matmul (bf16, `auto` configs) at square and ragged shapes,
layernorm, softmax, and causal-free attention against
jax.nn.dot_product_attention's cuDNN path; and one eager call on concrete
JAX arrays (blk's DLPack path, which waits for the launch).

    XLA_PYTHON_CLIENT_PREALLOCATE=false BLK_LIBRARY=carry/build/libblk-private.so \
        PYTHONPATH=python python3 tools/bench_jax.py
"""
import statistics
import time

import jax
import jax.numpy as jnp

import blk
import blk.jax  # noqa: F401


def bench(f, *args, n=20):
    """ms per call: n calls then block_until_ready, the median of 5 rounds."""
    jax.block_until_ready(f(*args))
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            out = f(*args)
        jax.block_until_ready(out)
        rounds.append((time.perf_counter() - t) / n * 1e3)
    return statistics.median(rounds)


def row(name, fb, fr, args, tol):
    """blk's jitted function fb beside JAX's fr: checked, then timed."""
    got = fb(*args).astype(jnp.float32)
    want = fr(*args).astype(jnp.float32)
    err = float(jnp.max(jnp.abs(got - want)) / (1 + jnp.max(jnp.abs(want))))
    tb, tr = bench(fb, *args), bench(fr, *args)
    print(f"{name:36s} blk {tb:8.4f} ms  jax {tr:8.4f} ms  jax/blk {tr / tb:5.2f}  "
          f"err {err:.1e} {'ok' if err < tol else 'WRONG'}", flush=True)


def rand(*shape, seed=0):
    key = jax.random.fold_in(jax.random.PRNGKey(0), seed)
    return jax.random.normal(key, shape, jnp.float32).astype(jnp.bfloat16)


def layernorm(x, w, b):
    xf = x.astype(jnp.float32)
    m = xf.mean(1, keepdims=True)
    v = ((xf - m) ** 2).mean(1, keepdims=True)
    y = (xf - m) * jax.lax.rsqrt(v + 1e-5) * w.astype(jnp.float32) + b.astype(jnp.float32)
    return y.astype(x.dtype)


def attention(q, k, v):
    q, k, v = (t[:, :, None, :] for t in (q, k, v))
    return jax.nn.dot_product_attention(q, k, v, implementation="cudnn")[:, :, 0, :]


def main():
    print(jax.devices()[0].device_kind, "jax", jax.__version__)
    auto = dict(BM="auto", BN="auto", BK="auto", num_warps="auto", num_stages="auto")
    mm = blk.kernel("examples/matmul.blk", T="auto", **auto)
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 1000)):
        row(f"matmul bf16 {M}x{N}x{K}", jax.jit(mm), jax.jit(jnp.matmul),
            (rand(M, K), rand(K, N, seed=1)), 2e-2)
    a, b = rand(4096, 4096), rand(4096, 4096, seed=1)
    print(f"{'matmul 4096^3, eager (not jitted)':36s} blk {bench(mm, a, b):8.4f} ms")
    x = rand(8192, 4096)
    ln = blk.kernel("examples/layernorm.blk", T="auto", BR="auto", num_warps="auto")
    row("layernorm bf16 8192x4096", jax.jit(ln), jax.jit(layernorm),
        (x, rand(4096, seed=1), rand(4096, seed=2)), 2e-2)
    sm = blk.kernel("examples/softmax.blk", T="auto", BR="auto", num_warps="auto")
    row("softmax bf16 8192x4096", jax.jit(sm),
        jax.jit(lambda x: jax.nn.softmax(x.astype(jnp.float32), axis=1).astype(x.dtype)), (x,),
        2e-2)
    at = blk.kernel("examples/attention.blk", T="auto", D=128, BQ="auto", BK="auto",
                    num_warps="auto", num_stages="auto")
    row("attention bf16 32x4096x128", jax.jit(at), jax.jit(attention),
        (rand(32, 4096, 128), rand(32, 4096, 128, seed=1), rand(32, 4096, 128, seed=2)), 3e-2)


if __name__ == "__main__":
    main()
