#!/usr/bin/env python3
"""bench_training.py - the attention backward of examples/attention_bwd.blk
(the preprocess Delta = rowsum(dO * O), dK/dV over query blocks, dQ over key
blocks) against torch's SDPA backward, each backend, and the forward that
writes the log-sum-exp against the plain forward (examples/attention.blk),
measured as a user measures: the blk package on torch CUDA tensors, checked
against torch's autograd first, then triton.testing.do_bench (L2 flushed,
median) in the same process.

bf16, B4 H16 S4096, D 64 and 128, causal or not; blk at `auto` (every
block size and warp count chosen by the compiler) and at a fixed config.

    BLK_LIBRARY=build/libblk-private.so PYTHONPATH=python python3 tools/bench_training.py [EXAMPLES_DIR]

Prints one markdown table (ref ms / blk ms: above 1, blk is faster).
Needs torch and triton; exits 0 with a line where there is no GPU.
"""
import os
import sys

from user_timing import bench, torch_or_exit

torch = torch_or_exit("bench_training")

import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import blk  # noqa: E402

EX = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "examples")
AUTO = dict(BM="auto", BN="auto", num_warps="auto", num_stages="auto")
FIXED = {64: (dict(BM=128, BN=128, num_warps=8), dict(BM=128, BN=128, num_warps=8)),
         128: (dict(BM=64, BN=128, num_warps=8), dict(BM=128, BN=64, num_warps=8))}


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / (b.float().abs().max() + 1e-6)).item()


def main():
    src = f"{EX}/attention_bwd.blk"
    B, H, S = 4, 16, 4096
    rows, ok = [], True
    for D in (64, 128):
        for causal in (False, True):
            q, k, v, do = (torch.randn(B * H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            qr, kr, vr = (x.detach().clone().requires_grad_() for x in (q, k, v))
            o_r = F.scaled_dot_product_attention(qr[None], kr[None], vr[None], is_causal=causal)[0]
            want = torch.autograd.grad(o_r, (qr, kr, vr), do)
            # the forward that writes the LSE, against the plain one
            fwd = blk.kernel(src, name="attention_fwd_lse", T="bf16", D=D, CAUSAL=causal)
            plain = blk.kernel(f"{EX}/attention.blk", T="bf16", D=D, CAUSAL=causal)
            o, lse = fwd(q, k, v)
            ok = ok and rel(o, o_r) < 2e-2
            rows.append((f"fwd + LSE D{D}{' causal' if causal else ''}", "auto", bench(lambda: fwd(q, k, v)),
                         "attention.blk fwd", bench(lambda: plain(q, k, v)), rel(o, o_r)))
            pre = blk.kernel(src, name="attention_bwd_preprocess", T="bf16", D=D)
            refs = {}
            for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
                with sdpa_kernel(be):
                    ob = F.scaled_dot_product_attention(qr[None], kr[None], vr[None], is_causal=causal)[0]
                    refs[be.name] = bench(lambda: torch.autograd.grad(ob, (qr, kr, vr), do, retain_graph=True))
            for how, (kc, qc) in (("auto", (AUTO, AUTO)), ("fixed", FIXED[D])):
                dkdv = blk.kernel(src, name="attention_bwd_dkdv", T="bf16", D=D, CAUSAL=causal, **kc)
                dqk = blk.kernel(src, name="attention_bwd_dq", T="bf16", D=D, CAUSAL=causal, **qc)

                def step():
                    delta = pre(o, do)
                    dk, dv = dkdv(q, k, v, do, lse, delta)
                    return dqk(q, k, v, do, lse, delta), dk, dv
                got = step()
                err = max(rel(g, w) for g, w in zip(got, want))
                ok = ok and err < 3e-2
                ms = bench(step)
                for name, ref_ms in refs.items():
                    rows.append((f"bwd D{D}{' causal' if causal else ''}", how, ms, f"SDPA {name} bwd", ref_ms, err))
            for r in rows[-5:]:
                print(r, flush=True)
    print(f"\n{torch.cuda.get_device_name()}, blk {blk.__version__}, torch {torch.__version__}, "
          f"bf16 B{B} H{H} S{S}\n")
    print("| row | blk config | blk ms | ref | ref ms | ref/blk | max rel err |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, how, ms, ref, ref_ms, err in rows:
        print(f"| {name} | {how} | {ms:.4f} | {ref} | {ref_ms:.4f} | {ref_ms / ms:.2f} | {err:.1e} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
