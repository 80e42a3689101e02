"""Tests of blk inside JAX programs on the CPU (jax[cpu]): kernels called on
tracers become XLA custom calls whose handler runs blk's interpreter --
jax.jit, jax.vmap, lax.scan, jax.grad through blk.jax.custom_vjp -- each
against jax.numpy; the errors; and runtime/xla_ffi.h's ABI against XLA's
own header (tests/runtime/test_xla_abi.c, compiled here).

Runs alone: `python3 python/tests/test_jax.py` (prints "N passed, N
failed").  Without JAX it says so and exits 77 (meson's "skipped"),
unless BLK_TEST_JAX=1 (as tools/test.sh sets after installing jax[cpu]),
where that is a failure.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.environ.get("BLK_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))
EX = os.path.join(ROOT, "examples")
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-jax-cache-"))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
except ImportError as e:
    if os.environ.get("BLK_TEST_JAX") == "1":
        raise
    print(f"skip: no JAX ({e})")
    sys.exit(77)

import blk  # noqa: E402
import blk.jax  # noqa: E402

jax.config.update("jax_enable_x64", False)
jax.config.update("jax_default_matmul_precision", "highest")  # the references in f32 on GPUs
key = jax.random.PRNGKey(0)


def rand(*shape, dtype=jnp.float32, seed=0):
    return jax.random.normal(jax.random.fold_in(key, seed), shape, jnp.float32).astype(dtype)


def close(got, want, tol=1e-5):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    err = np.max(np.abs(got - want) / (1 + np.abs(want))) if want.size else 0.0
    assert err <= tol, f"max relative error {err} > {tol}"


def raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


SCALE = """
kernel scale[B = 32](x: in f32[N] block (B) index (i) -> (i),
                     acc: inout f32[N] block (B) index (i) -> (i),
                     y: out f32[N] block (B) index (i) -> (i)) grid (cdiv(N, B)) {
    y[...] = x[...] * 2.0;
    acc[...] = acc[...] + x[...];
}
"""

SILU = """
kernel silu_fwd[T = f32, B = 64](x: in T[N] block (B) index (i) -> (i),
                                 y: out T[N] block (B) index (i) -> (i)) grid (cdiv(N, B)) {
    let v = x[...].astype(f32);
    y[...] = (v / (1.0 + exp(-v))).astype(T);
}
kernel silu_bwd[T = f32, B = 64](x: in T[N] block (B) index (i) -> (i),
                                 dy: in T[N] block (B) index (i) -> (i),
                                 dx: out T[N] block (B) index (i) -> (i)) grid (cdiv(N, B)) {
    let v = x[...].astype(f32);
    let s = 1.0 / (1.0 + exp(-v));
    dx[...] = (dy[...].astype(f32) * s * (1.0 + v * (1.0 - s))).astype(T);
}
"""


def test_abi_matches_xla_header():
    """runtime/xla_ffi.h against jaxlib's xla/ffi/api/c_api.h: the test is
    that it compiles (static assertions); it prints the API version."""
    src = os.path.join(ROOT, "tests", "runtime", "test_xla_abi.c")
    if not os.path.exists(src):
        print("  (no source tree here: the ABI check runs from a checkout)")
        return
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        print(f"  (no C compiler {cc!r} here: the ABI check needs one)")
        return
    inc = jax.ffi.include_dir()
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "abi")
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", inc, "-I", ROOT, src,
                            "-o", exe], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    print("  " + out.strip())


def test_jit_add_and_matmul():
    add = blk.kernel(os.path.join(EX, "add.blk"))
    x, y = rand(1000), rand(1000, seed=1)
    close(jax.jit(lambda a, b: add(a, b) * 2)(x, y), (x + y) * 2)
    mm = blk.kernel(os.path.join(EX, "matmul.blk"), T="auto", BM=16, BN=16, BK=16)
    a, b = rand(33, 20), rand(20, 17, seed=1)
    close(jax.jit(mm)(a, b), a @ b, 1e-5)
    c16 = jax.jit(mm)(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16))
    assert c16.dtype == jnp.bfloat16
    ref = a.astype(jnp.bfloat16).astype(jnp.float32) @ b.astype(jnp.bfloat16).astype(jnp.float32)
    close(c16.astype(jnp.float32), ref, 2e-2)
    # a jitted function of several calls, and the same kernel at another shape
    f = jax.jit(lambda a, b: mm(mm(a, b), b.T[:17, :17]))
    a2 = rand(40, 20, seed=3)
    close(f(a2, b), (a2 @ b) @ b.T[:17, :17], 1e-4)


def test_examples_under_jit():
    ln = blk.kernel(os.path.join(EX, "layernorm.blk"), T="auto")
    x, w, b = rand(7, 300), rand(300, seed=1), rand(300, seed=2)
    mean = x.mean(1, keepdims=True)
    ref = (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5) * w + b
    close(jax.jit(ln)(x, w, b), ref, 1e-4)
    sm = blk.kernel(os.path.join(EX, "softmax.blk"), T="auto")
    x = rand(5, 77)
    close(jax.jit(sm)(x), jax.nn.softmax(x, axis=1), 1e-5)


def test_inout_is_functional():
    sc = blk.kernel(SCALE)
    x, acc = rand(100), rand(100, seed=1)
    acc0 = np.asarray(acc).copy()
    new_acc, y = jax.jit(sc)(x, acc)  # results: inout then out, in param order
    close(y, 2 * x)
    close(new_acc, acc0 + np.asarray(x))
    close(acc, acc0)  # the operand is as it was
    # donated: XLA may alias the result with the operand
    f = jax.jit(lambda x, a: sc(x, a)[0], donate_argnums=1)
    close(f(x, jnp.asarray(acc0)), acc0 + np.asarray(x))
    got = blk.jax.call(sc, x, acc)  # eager, the same call
    close(got[0], acc0 + np.asarray(x))


def test_vmap_and_scan():
    mm = blk.kernel(os.path.join(EX, "matmul.blk"), T="auto", BM=16, BN=16, BK=16)
    a, b = rand(3, 20, 12), rand(12, 9, seed=1)
    close(jax.vmap(mm, in_axes=(0, None))(a, b), a @ b, 1e-5)
    add = blk.kernel(os.path.join(EX, "add.blk"))

    def step(c, x):
        return add(c, x), None
    xs = rand(6, 50, seed=2)
    out, _ = jax.jit(lambda xs: jax.lax.scan(step, jnp.zeros(50), xs))(xs)
    close(out, xs.sum(0), 1e-5)


def test_grad_through_custom_vjp():
    fwd = blk.kernel(SILU, name="silu_fwd", T="auto")
    bwd = blk.kernel(SILU, name="silu_bwd", T="auto")
    silu = blk.jax.custom_vjp(fwd, bwd, save="x")
    x = rand(300)
    close(silu(x), jax.nn.silu(x), 1e-6)
    loss = lambda f: lambda x: (f(x) ** 2).sum()  # noqa: E731
    close(jax.grad(loss(silu))(x), jax.grad(loss(jax.nn.silu))(x), 1e-5)
    close(jax.jit(jax.grad(loss(silu)))(x), jax.grad(loss(jax.nn.silu))(x), 1e-5)
    # a backward written in JAX, saving the output
    silu2 = blk.jax.custom_vjp(fwd, lambda x, y, dy: dy * (y / x + y * (1 - y / x)),
                               save=["x", "y"])
    close(jax.grad(loss(silu2))(x + 3.0), jax.grad(loss(jax.nn.silu))(x + 3.0), 1e-4)
    # two inputs: grads of both, one of them None (zero)
    add = blk.kernel(os.path.join(EX, "add.blk"))
    f = blk.jax.custom_vjp(add, lambda g: (g, None), save=[])
    gx, gy = jax.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, x)
    close(gx, np.ones(300))
    close(gy, np.zeros(300))


def test_errors():
    add = blk.kernel(os.path.join(EX, "add.blk"))
    x = rand(10)
    e = raises(blk.BlkError, jax.jit(lambda a: add(a, a, a)), x)
    assert "z is an out param; in JAX blk returns it as a new array" in str(e), str(e)
    e = raises(blk.BlkError, jax.jit(lambda a: add(a, np.zeros(10, np.float32))), x)
    assert "y is a ndarray; a JAX call takes JAX arrays" in str(e), str(e)
    e = raises(blk.BlkError, jax.jit(lambda a: add(a, a[:5])), x)
    assert "N" in str(e), str(e)
    e = raises(blk.BlkError, jax.jit(lambda a: add(a, a.astype(jnp.int32))), x)
    assert "i32" in str(e) or "dtype" in str(e), str(e)
    e = raises(blk.BlkError, jax.jit(lambda a: add(a)), x)
    assert "missing array for in param 'y'" in str(e), str(e)
    none = blk.kernel("kernel nothing(x: in f32[N] block (N) index (i) -> (0)) grid (1) {\n"
                      "    let v = x[...];\n}\n")
    e = raises(blk.BlkError, jax.jit(lambda a: none(a)), x)
    assert "has no out or inout param" in str(e), str(e)
    e = raises(blk.BlkError, blk.jax.custom_vjp, add, add, save="w")
    assert "save names 'w', which is no param of kernel add" in str(e), str(e)
    f = blk.jax.custom_vjp(add, lambda g: (g,), save=[])
    e = raises(blk.BlkError, jax.grad(lambda a: f(a, a).sum()), x)
    assert "returned 1 gradients; the forward takes 2 inputs (x, y)" in str(e), str(e)
    e = raises(blk.BlkError, f, x)
    assert "takes 2 arrays (x, y), got 1" in str(e), str(e)
    e = raises(blk.BlkError, blk.jax.dtype_of, jnp.zeros(2, jnp.int16))
    assert "blk has no dtype for JAX's int16" in str(e), str(e)


def test_transformer_example():
    """examples/transformer/jax_train.py: a training step under jax.jit with
    every kernel blk's, its loss and gradients against plain JAX (f32; bf16
    with two layers and ragged sizes)."""
    script = os.path.join(EX, "transformer", "jax_train.py")
    if not os.path.exists(script):
        print("  (no examples/ here: the example runs from a checkout)")
        return
    for args in ([], ["--dtype", "bf16", "--layers", "2", "--seq", "40", "--vocab", "100"]):
        r = subprocess.run([sys.executable, script, "--steps", "2"] + args, capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        print("  " + r.stdout.strip().replace("\n", "\n  "))
        assert r.returncode == 0 and "2 passed, 0 failed" in r.stdout, r.stderr[-2000:]


def test_import_blk_leaves_jax_out():
    code = ("import os, sys; os.environ.get('BLK_TEST_INSTALLED') == '1' or "
            "sys.path.insert(0, sys.argv[1]); import blk; print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python")],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False", out


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
