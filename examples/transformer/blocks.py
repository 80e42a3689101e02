"""What the transformer's two trainings share, with neither torch nor JAX:
the model's shape (Config), its RoPE tables and its kernels' block sizes.
model.py (PyTorch) and jax_train.py (JAX) build on it.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Config:
    batch: int = 2
    seq: int = 32
    dim: int = 64
    heads: int = 2
    ffn: int = 128      # the SwiGLU's hidden width
    vocab: int = 128
    layers: int = 1
    p_drop: float = 0.1
    eps: float = 1e-6
    dtype: str = "f32"  # "f32" or "bf16": parameters and activations

    @property
    def head_dim(self):
        return self.dim // self.heads


def rope_tables(cfg):
    """cos and sin [S, Dh] (f32 NumPy arrays): position s, frequency
    10000^(-i / (Dh/2)) for i < Dh/2, repeated for the second half (the
    rotate-half form)."""
    half = cfg.head_dim // 2
    freq = 10000.0 ** (-np.arange(half, dtype=np.float64) / half)
    ang = np.arange(cfg.seq, dtype=np.float64)[:, None] * freq[None]
    ang = np.concatenate([ang, ang], 1)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def kernel_params(cfg, gpu):
    """Block sizes per kernel: the GPU's (for attention in bf16 the
    tensor-core configs measured fastest on an H200; `auto`, the cost
    model's choice, for the matmuls), or small ones for the interpreter
    (gpu false)."""
    if not gpu:
        mm = dict(BM=16, BN=16, BK=16, num_warps=4, num_stages=2)
        return dict(mm=mm, attn_fwd=dict(BQ=16, BK=16), dkdv=dict(BM=16, BN=16),
                    dq=dict(BM=16, BN=16), pre=dict(BR=16), rope=dict(BS=16), heads=dict(BQ=16),
                    norm=dict(BR=1), norm_bwd=dict(RP=8, RB=4), norm_dw=dict(BP=4, BC=32),
                    ce=dict(BR=4, BV=64), drop=dict(B=256))
    auto = dict(BM="auto", BN="auto", BK="auto", num_warps="auto", num_stages="auto")
    if cfg.dtype == "f32":  # the attention example's defaults fit f32 (CUDA cores)
        fwd, dkdv, dq = {}, {}, {}
    elif cfg.head_dim <= 64:
        dkdv, dq = dict(BM=128, BN=128, num_warps=8), dict(BM=128, BN=128, num_warps=8)
    else:
        dkdv, dq = dict(BM=64, BN=128, num_warps=8), dict(BM=128, BN=64, num_warps=8)
    if dq:
        fwd = dict(BQ=dq["BM"], BK=dq["BN"], num_warps=8)
    return dict(mm=auto, attn_fwd=fwd, dkdv=dkdv, dq=dq,
                pre=dict(BR=64), rope=dict(BS=64), heads=dict(BQ=64), norm=dict(BR=1),
                norm_bwd=dict(RP=32, RB=4), norm_dw=dict(BP=16, BC=64), ce=dict(BR=4, BV=1024),
                drop=dict(B=1024))
