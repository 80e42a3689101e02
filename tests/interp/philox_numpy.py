"""philox_numpy.py BLKC - blk's random numbers against an independent NumPy
Philox4x32-10, written from the algorithm's description (docs/language.md),
not from blk's C.

1. Random123's known answers for philox4x32_10 (counter 0 / key 0, all ones,
   the digits of pi) from this file's own Philox.
2. A kernel run by `blkc run --interpret`: philox's four words, randint,
   randint4x and rand bit for bit against this file's; randn within 1e-6 of
   Box-Muller in float64 on the same uniforms (the f32 log and cos round).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85


def philox(k0, k1, c0, c1, c2, c3, rounds=10):
    """Philox4x32 of uint32 arrays under the key (k0, k1): a round takes the
    64-bit products M0 c0 and M1 c2 and crosses their halves."""
    u64 = np.uint64
    c = [np.asarray(x, dtype=np.uint32).astype(u64) for x in (c0, c1, c2, c3)]
    k0, k1 = u64(k0), u64(k1)
    mask = u64(0xFFFFFFFF)
    for _ in range(rounds):
        p0 = u64(M0) * c[0]
        p1 = u64(M1) * c[2]
        c = [(p1 >> u64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> u64(32)) ^ c[3] ^ k1, p0 & mask]
        k0 = (k0 + u64(W0)) & mask
        k1 = (k1 + u64(W1)) & mask
    return [x.astype(np.uint32) for x in c]


def uniform(w):
    """A word as float32 in [0, 1): as int32, ~x for negative x, times
    (1 - 2^-24) 2^-31, each step rounded as float32."""
    x = w.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(2.0**-31 * (1 - 2.0**-24))


def known_answers():
    kat = [
        ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]
    for key, ctr, want in kat:
        got = tuple(int(x) for x in philox(*key, *ctr))
        assert got == want, f"philox4x32_10 {key} {ctr}: {got} != {want}"


KERNEL = """
kernel k[B = 256](
    s: in i32[1],
    c: in i32[N] block (B) index (i) -> (i),
    p0: out i32[N] block (B) index (i) -> (i), p1: out i32[N] block (B) index (i) -> (i),
    p2: out i32[N] block (B) index (i) -> (i), p3: out i32[N] block (B) index (i) -> (i),
    w: out i32[N] block (B) index (i) -> (i), v: out i32[N] block (B) index (i) -> (i),
    u: out f32[N] block (B) index (i) -> (i), g: out f32[N] block (B) index (i) -> (i),
) grid (cdiv(N, B)) {
    let off = program_id(0) * B + iota(B);
    let (a, b, d, e) = philox(s[0], off, c[...], off * 7, -1);
    p0[...] = a;
    p1[...] = b;
    p2[...] = d;
    p3[...] = e;
    w[...] = randint(s[0], off);
    let (x, y, z, t) = randint4x(s[0], off);
    v[...] = y;
    u[...] = rand(s[0], off);
    g[...] = randn(s[0], off);
}
"""


def run_kernel(blkc, seed, n):
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(7)
        c = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        np.save(os.path.join(d, "s.npy"), np.array([seed], dtype=np.int32))
        np.save(os.path.join(d, "c.npy"), c)
        with open(os.path.join(d, "k.blk"), "w") as f:
            f.write(KERNEL)
        subprocess.run([blkc, "run", "--interpret", os.path.join(d, "k.blk"), f"N={n}",
                        f"s={d}/s.npy", f"c={d}/c.npy", f"--out-dir={d}"],
                       check=True, stdout=subprocess.DEVNULL)
        out = {k: np.load(os.path.join(d, k + ".npy")) for k in ("p0", "p1", "p2", "p3", "w", "v", "u", "g")}
        return c, out


def check_kernel(blkc, seed, n=1000):
    c, out = run_kernel(blkc, seed, n)
    off = np.arange(n, dtype=np.uint32)
    k0 = seed & 0xFFFFFFFF
    k1 = 0xFFFFFFFF if seed < 0 else 0  # the seed sign-extended to 64 bits
    with np.errstate(over="ignore"):
        words = philox(k0, k1, off, c.view(np.uint32), off * np.uint32(7), np.full(n, 0xFFFFFFFF, np.uint32))
        zero = np.zeros(n, np.uint32)
        r = philox(k0, k1, off, zero, zero, zero)
    for i, name in enumerate(("p0", "p1", "p2", "p3")):
        assert np.array_equal(out[name].view(np.uint32), words[i]), f"seed {seed}: philox word {i}"
    assert np.array_equal(out["w"].view(np.uint32), r[0]), f"seed {seed}: randint"
    assert np.array_equal(out["v"].view(np.uint32), r[1]), f"seed {seed}: randint4x's second word"
    u1, u2 = uniform(r[0]), uniform(r[1])
    assert np.array_equal(out["u"].view(np.uint32), u1.view(np.uint32)), f"seed {seed}: rand"
    assert u1.min() >= 0 and u1.max() < 1
    u1 = np.maximum(u1, np.float32(1e-7)).astype(np.float64)
    want = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2.astype(np.float64))
    err = np.abs(out["g"] - want) / np.maximum(1, np.abs(want))
    assert err.max() < 1e-6, f"seed {seed}: randn off by {err.max()}"


def main():
    known_answers()
    for seed in (0, 42, -7, 2**31 - 1):
        check_kernel(sys.argv[1], seed)
    print("philox-numpy: known answers and 4 seeds agree")


if __name__ == "__main__":
    main()
