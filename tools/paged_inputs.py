#!/usr/bin/env python3
"""paged_inputs.py OUTDIR B MP KVH G PS D [seed] - .npy inputs for
examples/paged_attention.blk (T=f16): every sequence full length
(MP * PS positions) on its own pages, the pages shuffled over the cache.
Also times torch's scaled_dot_product_attention on the same keys and
values laid out contiguously (decode: one query per head, grouped-query),
the yardstick a user without a paged kernel would reach for."""
import os
import sys

import numpy as np


def main():
    out, b, mp, kvh, g, ps, d = sys.argv[1], *map(int, sys.argv[2:8])
    seed = int(sys.argv[8]) if len(sys.argv) > 8 else 0
    rng = np.random.default_rng(seed)
    np_ = b * mp
    os.makedirs(out, exist_ok=True)
    perm = rng.permutation(np_).astype(np.int32).reshape(b, mp)
    np.save(f"{out}/tables.npy", perm)
    np.save(f"{out}/lens.npy", np.full(b, mp * ps, np.int32))
    q = rng.uniform(-1, 1, (b, kvh, g, d)).astype(np.float16)
    k = rng.uniform(-1, 1, (kvh, np_, ps, d)).astype(np.float16)
    v = rng.uniform(-1, 1, (kvh, np_, ps, d)).astype(np.float16)
    for n, a in (("q", q), ("k", k), ("v", v)):
        np.save(f"{out}/{n}.npy", a)
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    F = torch.nn.functional
    s = mp * ps
    kc = torch.from_numpy(k).cuda()[:, perm.reshape(-1)].reshape(kvh, b, s, d).transpose(0, 1).contiguous()
    vc = torch.from_numpy(v).cuda()[:, perm.reshape(-1)].reshape(kvh, b, s, d).transpose(0, 1).contiguous()
    qt = torch.from_numpy(q).cuda().reshape(b, kvh * g, 1, d)
    fn = lambda: F.scaled_dot_product_attention(qt, kc, vc, enable_gqa=True)
    for _ in range(3):
        fn()
    ts = []
    for _ in range(20):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1))
    ms = sorted(ts)[10]
    gbs = 2.0 * kc.numel() * 2 / ms / 1e6
    print(f"torch sdpa (contiguous K/V, enable_gqa) {b}x{kvh * g}x1x{d} over {s} keys: "
          f"{ms:.4f} ms, {gbs:.0f} GB/s of K and V")


if __name__ == "__main__":
    main()
