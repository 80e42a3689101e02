"""A small pre-norm transformer trained with blk's kernels, and the same
model in plain torch as the reference.

    layer:  x = x + dropout(attn(rope(rmsnorm(x))))       causal, RoPE on q and k
            x = x + dropout(w2 @ swiglu(rmsnorm(x)))
    head:   loss = cross_entropy(rmsnorm(x) @ wout^T, targets)

Every kernel of blk's model is a blk kernel wrapped as a torch custom op
with its backward (`blk.torch.autograd`), so the model runs eagerly and
under `torch.compile(fullgraph=True)`; torch only reshapes (views) and
sums the two gradients of each residual stream.  The input embedding is
blk's lookup (examples/embedding.blk) into a frozen table: its gradient, a
scatter-add, is not among the kernels shown.

Activations are [M, D] matrices, M = batch * seq; attention's are
[B * H, S, Dh].  Parameters are one dict of tensors, shared by both models.
"""
import math
import os
from types import SimpleNamespace

import torch
import torch.nn.functional as F

import blk
import blk.torch
import blocks

HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.dirname(HERE)  # examples/


class Config(blocks.Config):
    @property
    def torch_dtype(self):
        return {"f32": torch.float32, "bf16": torch.bfloat16}[self.dtype]


# ---- parameters ------------------------------------------------------------------

def init_params(cfg, device, seed=0):
    """f32 parameters, scaled as usual (1/sqrt(fan-in); the projections into
    the residual stream smaller, by 1/sqrt(2 * layers)); cast them for a
    model with {k: v.to(dtype)}."""
    g = torch.Generator(device="cpu").manual_seed(seed)

    def lin(n, k, scale=1.0):
        return torch.randn(n, k, generator=g) * (scale / math.sqrt(k))

    D, F_, L = cfg.dim, cfg.ffn, cfg.layers
    res = 1 / math.sqrt(2 * L)
    p = {"emb": torch.randn(cfg.vocab, D, generator=g)}
    for i in range(L):
        p[f"{i}.attn_norm"] = 1 + 0.1 * torch.randn(D, generator=g)
        p[f"{i}.wqkv"] = lin(3 * D, D)
        p[f"{i}.wo"] = lin(D, D, res)
        p[f"{i}.mlp_norm"] = 1 + 0.1 * torch.randn(D, generator=g)
        p[f"{i}.w13"] = lin(2 * F_, D).view(2, F_, D)  # [W1; W3]: gate and up
        p[f"{i}.w2"] = lin(D, F_, res)
    p["final_norm"] = 1 + 0.1 * torch.randn(D, generator=g)
    p["wout"] = lin(cfg.vocab, D)
    return {k: v.to(device) for k, v in p.items()}


def trainable(params):
    return [k for k in params if k != "emb"]


def rope_tables(cfg, device):
    """cos and sin [S, Dh] (f32) on device (blocks.rope_tables)."""
    return tuple(torch.from_numpy(t).to(device) for t in blocks.rope_tables(cfg))


# ---- blk's ops -------------------------------------------------------------------

def kernel_params(cfg, device):
    """Block sizes per kernel (blocks.kernel_params) on this device."""
    return blocks.kernel_params(cfg, device.type == "cuda")


_ops = {}


def blk_ops(cfg, device):
    """The differentiable ops of blk's model for this config and device
    (made once: torch registers each op and its backward once)."""
    # what the kernels depend on (not the batch or sequence: shapes are the launch's)
    key = (cfg.dtype, cfg.heads, cfg.head_dim, cfg.p_drop, cfg.eps, device.type)
    if key not in _ops:
        _ops[key] = _make_ops(cfg, kernel_params(cfg, device), tag=len(_ops))
    return _ops[key]


def _make_ops(cfg, kp, tag):
    T = cfg.dtype

    def kernel(path, name=None, **params):
        return blk.kernel(path, name=name, T=T, **params)

    def op(path, name=None, **params):
        return blk.torch.op(kernel(path, name, **params))

    def fwd(path, name=None, **params):
        """A forward op, named for this set of ops: each op has one
        backward, and another config may share its kernel (the matmuls)."""
        k = kernel(path, name, **params)
        return blk.torch.op(k, name=f"tfm::{k.name}_{tag}")

    o = SimpleNamespace()
    tf = f"{HERE}/{{}}.blk"

    # Linear layer y = x @ W^T.  Backward: dx = dy @ W, dW = dy^T @ x.
    mm = op(f"{EX}/matmul.blk", **kp["mm"])

    def weight_grad(dy, x):
        """dW = dy^T @ x.  dy.T is a transposed view: blk copies its slabs
        as they lie (TMA through a transposed tensor map), at row-major
        speed."""
        return mm(dy.T, x)

    def linear_bwd(x, w, dy):
        return mm(dy, w), weight_grad(dy, x)

    o.linear = blk.torch.autograd(fwd(f"{EX}/matmul_nt.blk", **kp["mm"]), linear_bwd)

    # RMSNorm: dw is the column sum of the backward's partial sums.
    norm_bwd = op(tf.format("rmsnorm"), "rmsnorm_bwd", **kp["norm_bwd"])
    norm_dw = op(tf.format("rmsnorm"), "rmsnorm_dw", **kp["norm_dw"])

    def rmsnorm_bwd(x, w, rstd, dy, _drstd):
        dx, dwp = norm_bwd(x, w, rstd, dy)
        return dx, norm_dw(dwp)

    rmsnorm = blk.torch.autograd(
        fwd(tf.format("rmsnorm"), "rmsnorm_fwd", EPS=cfg.eps, **kp["norm"]),
        rmsnorm_bwd, save=["x", "w", "rstd"])
    o.rmsnorm = lambda x, w: rmsnorm(x, w)[0]

    # RoPE on q and k, fused with the split of qkv into heads.
    hp = dict(H=cfg.heads, D=cfg.head_dim, **kp["rope"])
    merge = op(tf.format("rope"), "rope_merge", **hp)

    def rope_bwd(cos, sin, dq, dk, dv):
        return merge(dq, dk, dv, cos, sin), None, None

    o.rope = blk.torch.autograd(fwd(tf.format("rope"), "rope_split", **hp), rope_bwd,
                                save=["cos", "sin"])

    # Causal flash attention writing the log-sum-exp, and its backward.
    src = f"{EX}/attention_bwd.blk"
    ap = dict(D=cfg.head_dim, CAUSAL=True)
    pre = op(src, "attention_bwd_preprocess", D=cfg.head_dim, **kp["pre"])
    dkdv = op(src, "attention_bwd_dkdv", **ap, **kp["dkdv"])
    dqk = op(src, "attention_bwd_dq", **ap, **kp["dq"])

    def attention_bwd(q, k, v, out, lse, do, _dlse):
        delta = pre(out, do)
        dk, dv = dkdv(q, k, v, do, lse, delta)
        return dqk(q, k, v, do, lse, delta), dk, dv

    attention = blk.torch.autograd(fwd(src, "attention_fwd_lse", **ap, **kp["attn_fwd"]),
                                   attention_bwd, save=["q", "k", "v", "o", "lse"])
    o.attention = lambda q, k, v: attention(q, k, v)[0]

    # [B, H, S, Dh] <-> [B, S, H, Dh]: the same copy both ways.
    swap = op(tf.format("heads"), **kp["heads"])
    o.merge_heads = blk.torch.autograd(fwd(tf.format("heads"), **kp["heads"]), swap, save=[])

    # SwiGLU: the backward writes dG and dU side by side, [M, 2, F], so that
    # dx and dW13 are one matmul each on it seen as [M, 2F].
    sw_bwd = op(tf.format("swiglu"), "swiglu_bwd", **kp["mm"])

    def swiglu_bwd(x, w, dh):
        dgu = sw_bwd(x, w, dh).flatten(1)
        return mm(dgu, w.flatten(0, 1)), weight_grad(dgu, x).view(w.shape)

    o.swiglu = blk.torch.autograd(fwd(tf.format("swiglu"), "swiglu_fwd", **kp["mm"]),
                                  swiglu_bwd)

    # The residual add with dropout on the branch (1-D: any shape, flattened).
    P = dict(P=cfg.p_drop, **kp["drop"])
    drop_bwd = op(f"{EX}/dropout.blk", "dropout_backward", **P)
    dropout_add = blk.torch.autograd(
        fwd(tf.format("dropout_add"), **P),
        lambda seed, dy: (None, dy, drop_bwd(seed, dy)), save=["seed"])
    o.dropout_add = lambda seed, res, x: dropout_add(seed, res.flatten(), x.flatten()).view(res.shape)
    # the mask alone, for the reference model: the elements of ones it keeps
    drop = op(f"{EX}/dropout.blk", "dropout", **P)
    o.dropout_mask = lambda seed, like: drop(seed, torch.ones_like(like).flatten()).view(like.shape) != 0

    # Cross-entropy per row, then the mean (whose backward is a kernel too).
    ce_bwd = op(tf.format("cross_entropy"), "ce_bwd", **kp["ce"])
    ce = blk.torch.autograd(
        fwd(tf.format("cross_entropy"), "ce_fwd", **kp["ce"]),
        lambda logits, target, lse, dloss, _dlse: (ce_bwd(logits, target, lse, dloss), None),
        save=["logits", "target", "lse"])
    mean = blk.torch.autograd(blk.kernel(tf.format("cross_entropy"), "mean_fwd"),
                              blk.kernel(tf.format("cross_entropy"), "mean_bwd"), save="x",
                              name=f"tfm::mean_{tag}")
    o.cross_entropy = lambda logits, target: mean(ce(logits, target)[0]).view(())

    o.embedding = op(f"{EX}/embedding.blk")
    return o


def blk_loss(o, p, tokens, targets, seeds, cos, sin, cfg):
    """The model's mean loss with blk's kernels: o = blk_ops(cfg, device)
    (made outside torch.compile: making ops registers them with torch);
    tokens and targets: i32 [B, S]; seeds: i32 [2 * layers], one dropout
    seed per residual branch."""
    B, S, D, H, Dh = cfg.batch, cfg.seq, cfg.dim, cfg.heads, cfg.head_dim
    x = o.embedding(tokens.flatten(), p["emb"])                     # [M, D]
    for i in range(cfg.layers):
        h = o.rmsnorm(x, p[f"{i}.attn_norm"])
        qkv = o.linear(h, p[f"{i}.wqkv"]).view(B, S, 3 * H, Dh)
        q, k, v = (t.view(B * H, S, Dh) for t in o.rope(qkv, cos, sin))
        a = o.merge_heads(o.attention(q, k, v).view(B, H, S, Dh)).view(B * S, D)
        x = o.dropout_add(seeds[2 * i:2 * i + 1], x, o.linear(a, p[f"{i}.wo"]))
        h = o.rmsnorm(x, p[f"{i}.mlp_norm"])
        y = o.linear(o.swiglu(h, p[f"{i}.w13"]), p[f"{i}.w2"])
        x = o.dropout_add(seeds[2 * i + 1:2 * i + 2], x, y)
    logits = o.linear(o.rmsnorm(x, p["final_norm"]), p["wout"])
    return o.cross_entropy(logits, targets.flatten())


# ---- the reference, in plain torch ------------------------------------------------

def torch_loss(p, tokens, targets, masks, cos, sin, cfg):
    """The same model in torch.  masks: one bool mask [M, D] per residual
    branch (the elements kept), as blk's dropout draws them for the
    comparison; or None for torch's own dropout (F.dropout, for timing)."""
    B, S, D, H, Dh = cfg.batch, cfg.seq, cfg.dim, cfg.heads, cfg.head_dim
    dt = p["wout"].dtype

    def drop(x, i):
        if masks is None:
            return F.dropout(x, cfg.p_drop, training=True)
        return torch.where(masks[i], x / (1 - cfg.p_drop), 0)

    def rope(x):  # x: [B, H, S, Dh]; computed in f32 like the kernel
        x = x.float()
        x1, x2 = x.chunk(2, -1)
        return (x * cos + torch.cat([-x2, x1], -1) * sin).to(dt)

    x = F.embedding(tokens.flatten().long(), p["emb"])
    for i in range(cfg.layers):
        h = F.rms_norm(x, (D,), p[f"{i}.attn_norm"], cfg.eps)
        q, k, v = (h @ p[f"{i}.wqkv"].T).view(B, S, 3, H, Dh).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
        x = x + drop(a.transpose(1, 2).reshape(B * S, D) @ p[f"{i}.wo"].T, 2 * i)
        h = F.rms_norm(x, (D,), p[f"{i}.mlp_norm"], cfg.eps)
        w1, w3 = p[f"{i}.w13"]
        x = x + drop((F.silu(h @ w1.T) * (h @ w3.T)) @ p[f"{i}.w2"].T, 2 * i + 1)
    logits = F.rms_norm(x, (D,), p["final_norm"], cfg.eps) @ p["wout"].T
    return F.cross_entropy(logits.float(), targets.flatten().long())
