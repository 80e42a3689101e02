"""Trains model.py's transformer for a few steps with blk's kernels, eagerly
and under torch.compile(fullgraph=True), beside the same model in torch,
and checks every step's loss and every parameter's gradient; on a GPU,
then times a training step four ways.

    BLK_LIBRARY=build/libblk-private.so PYTHONPATH=python python3 examples/transformer/train.py
    ... train.py --dtype bf16 --batch 4 --seq 2048 --dim 1024 --heads 16 --ffn 2816 --vocab 32000

The four models start from the same f32 parameters: torch in f32 (the
truth), torch in --dtype, blk eager and blk compiled in --dtype; each takes
its own SGD steps, with the same dropout masks (the reference applies the
mask blk's dropout kernel draws from the step's seed).  A quantity (a
loss, a parameter's gradient) passes where blk's relative error from the
truth, |blk - f32| / |f32| over the whole tensor, is at most
2 * (torch's, in the same dtype) + FLOOR: blk may be as inexact as torch's
own kernels in that dtype, with room for rounding in other places.  In f32
the torch model is the truth, and only FLOOR bounds blk.  Ends with
"N passed, N failed"; the exit status is 1 if any check failed.
"""
import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import blk.testing  # noqa: E402
import model  # noqa: E402
from model import Config  # noqa: E402

FLOOR = {"f32": 1e-4, "bf16": 5e-3}


def rel_err(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def data(cfg, device, seed=1):
    g = torch.Generator(device="cpu").manual_seed(seed)
    tokens = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq), generator=g, dtype=torch.int32)
    targets = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq), generator=g, dtype=torch.int32)
    return tokens.to(device), targets.to(device)


def copy_params(p32, dtype):
    return {k: v.to(dtype).clone().requires_grad_(k != "emb") for k, v in p32.items()}


def sgd(params, lr):
    with torch.no_grad():
        for k in model.trainable(params):
            params[k] -= lr * params[k].grad
            params[k].grad = None


def check_training(cfg, device, steps, lr, backend, checks, verbose=False):
    """Trains the four models in lockstep, comparing each step."""
    dt = cfg.torch_dtype
    ops = model.blk_ops(cfg, device)
    cos, sin = model.rope_tables(cfg, device)
    tokens, targets = data(cfg, device)
    p32 = model.init_params(cfg, device)

    def blk_fn(p, seeds):
        return model.blk_loss(ops, p, tokens, targets, seeds, cos, sin, cfg)

    runs = {"blk eager": blk_fn,
            "blk compiled": torch.compile(blk_fn, fullgraph=True, backend=backend)}
    truth = copy_params(p32, torch.float32)
    ref = copy_params(p32, dt) if cfg.dtype != "f32" else None
    ps = {name: copy_params(p32, dt) for name in runs}
    M, D = cfg.batch * cfg.seq, cfg.dim
    floor = FLOOR[cfg.dtype]
    print(f"{'step':>4}  {'torch f32':>10}  {'torch ' + cfg.dtype:>10}  "
          + "  ".join(f"{n:>12}" for n in runs))
    for step in range(steps):
        seeds = torch.arange(2 * cfg.layers, dtype=torch.int32, device=device) + 1000 * step
        masks = [ops.dropout_mask(seeds[j:j + 1], torch.empty(M, D, dtype=dt, device=device))
                 for j in range(2 * cfg.layers)]
        want = model.torch_loss(truth, tokens, targets, masks, cos, sin, cfg)
        want.backward()
        if ref is not None:
            base = model.torch_loss(ref, tokens, targets, masks, cos, sin, cfg)
            base.backward()
        losses = {}
        for name, fn in runs.items():
            losses[name] = fn(ps[name], seeds)
            losses[name].backward()
        print(f"{step:>4}  {want.item():>10.5f}  {(base if ref else want).item():>10.5f}  "
              + "  ".join(f"{losses[n].item():>12.5f}" for n in runs), flush=True)
        for name in runs:
            # (quantity, blk's error, torch's error) for the loss and each gradient
            rows = [("loss", rel_err(losses[name], want), rel_err(base, want) if ref else 0.0)]
            for k in model.trainable(truth):
                rows.append((k, rel_err(ps[name][k].grad, truth[k].grad),
                             rel_err(ref[k].grad, truth[k].grad) if ref else 0.0))
            allowed = [2 * t + floor for _, _, t in rows]
            bad = [(r, a) for r, a in zip(rows, allowed) if not r[1] <= a]
            (k, e, t), a = max(zip(rows, allowed), key=lambda ra: ra[0][1] / ra[1])
            detail = (f"loss err {rows[0][1]:.1e} (torch {rows[0][2]:.1e}); nearest its bound: "
                      f"{k} err {e:.1e} (torch {t:.1e}, allowed {a:.1e})")
            if bad:
                detail += "; over: " + ", ".join(f"{k} {e:.1e} > {a:.1e}" for (k, e, _), a in bad)
            if verbose:
                detail += "".join(f"\n    {k:<14} err {e:.2e}  torch {t:.2e}" for k, e, t in rows)
            checks(f"{name} step {step}", not bad, detail)
        for p in [truth, ref, *ps.values()]:
            if p is not None:
                sgd(p, lr)


def check_dropout(cfg, device, checks):
    """The mask is a function of the seed: the same seed gives the same
    mask, another seed another one, and about 1 - p of the elements stay."""
    ops = model.blk_ops(cfg, device)
    like = torch.empty(cfg.batch * cfg.seq, cfg.dim, dtype=cfg.torch_dtype, device=device)
    s = torch.tensor([7], dtype=torch.int32, device=device)
    a, b, c = ops.dropout_mask(s, like), ops.dropout_mask(s, like), ops.dropout_mask(s + 1, like)
    n = like.numel()
    kept = a.float().mean().item()
    sigma = (cfg.p_drop * (1 - cfg.p_drop) / n) ** 0.5
    checks("dropout: one seed, one mask", torch.equal(a, b), "two draws of seed 7 are equal")
    checks("dropout: another seed, another mask", not torch.equal(a, c),
           f"seeds 7 and 8 differ in {(a != c).float().mean().item():.3f} of the elements")
    checks("dropout: the rate", abs(kept - (1 - cfg.p_drop)) <= 6 * sigma + 1e-6,
           f"kept {kept:.4f}, expected {1 - cfg.p_drop:.4f} +- {6 * sigma:.4f}")


def bench(cfg, device, lr):
    """Milliseconds per training step (forward, backward, SGD update) of
    blk's model and torch's, eager and compiled (inductor)."""
    dt = cfg.torch_dtype
    ops = model.blk_ops(cfg, device)
    cos, sin = model.rope_tables(cfg, device)
    tokens, targets = data(cfg, device)
    p32 = model.init_params(cfg, device)
    seeds = torch.arange(2 * cfg.layers, dtype=torch.int32, device=device)

    def blk_fn(p):
        return model.blk_loss(ops, p, tokens, targets, seeds, cos, sin, cfg)

    def torch_fn(p):
        return model.torch_loss(p, tokens, targets, None, cos, sin, cfg)

    variants = {"blk, torch.compile(fullgraph=True)": torch.compile(blk_fn, fullgraph=True),
                "blk, eager": blk_fn,
                "torch, eager": torch_fn,
                "torch, torch.compile": torch.compile(torch_fn)}
    times = {}
    for name, fn in variants.items():
        p = copy_params(p32, dt)
        params = [p[k] for k in model.trainable(p)]
        opt = torch.optim.SGD(params, lr=lr, foreach=True)

        def step():
            fn(p).backward()
            opt.step()

        try:
            t0 = time.time()
            step()  # compiles (torch.compile's graphs; blk's kernels at their first launch)
            torch.cuda.synchronize()
            first = time.time() - t0
            times[name] = blk.testing.do_bench(step, warmup=100, rep=500, grad_to_none=params)
        except Exception as e:  # a variant that fails is reported, not fatal
            print(f"  {name:<36} failed: {str(e).splitlines()[0][:200]}", flush=True)
            continue
        print(f"  {name:<36} {times[name]:8.3f} ms   (first step {first:.1f} s)", flush=True)
    return times


def parse(argv=None):
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    d = Config()
    a.add_argument("--batch", type=int, default=d.batch)
    a.add_argument("--seq", type=int, default=d.seq)
    a.add_argument("--dim", type=int, default=d.dim)
    a.add_argument("--heads", type=int, default=d.heads)
    a.add_argument("--ffn", type=int, default=d.ffn)
    a.add_argument("--vocab", type=int, default=d.vocab)
    a.add_argument("--layers", type=int, default=d.layers)
    a.add_argument("--p-drop", type=float, default=d.p_drop)
    a.add_argument("--dtype", choices=["f32", "bf16"], default=d.dtype)
    a.add_argument("--steps", type=int, default=5)
    a.add_argument("--lr", type=float, default=0.1)
    a.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a.add_argument("--backend", default=None,
                   help="torch.compile's backend for the check (default: inductor on a GPU, "
                        "aot_eager on the CPU)")
    a.add_argument("--verbose", action="store_true", help="every gradient's error, every step")
    a.add_argument("--no-check", action="store_true", help="only time (GPU)")
    a.add_argument("--no-bench", action="store_true", help="only check")
    return a.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    cfg = Config(batch=args.batch, seq=args.seq, dim=args.dim, heads=args.heads, ffn=args.ffn,
                 vocab=args.vocab, layers=args.layers, p_drop=args.p_drop, dtype=args.dtype)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 truth is f32
    torch.backends.cudnn.allow_tf32 = False
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (blk's interpreter)"
    print(f"{cfg}, on {where}")
    checks = Checks()
    if not args.no_check:
        backend = args.backend or ("inductor" if device.type == "cuda" else "aot_eager")
        check_dropout(cfg, device, checks)
        check_training(cfg, device, args.steps, args.lr, backend, checks, args.verbose)
    if device.type == "cuda" and not args.no_bench:
        print(f"step time (forward + backward + SGD), tokens per step {cfg.batch * cfg.seq}:")
        bench(cfg, device, args.lr)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
