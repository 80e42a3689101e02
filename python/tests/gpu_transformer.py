"""GPU test of examples/transformer/: the transformer trained with blk's
kernels (RMSNorm, RoPE, causal attention, SwiGLU, cross-entropy, dropout,
and their backwards, as torch custom ops), eagerly and under
torch.compile(fullgraph=True) with inductor, checked at every step against
the same model in torch: the loss and every parameter's gradient (the
rule is train.py's: blk's error from torch in f32 at most twice torch's own
in the same dtype, plus a floor).  Run on the device machine from the
repository root, with the build carried in carry/ (tools/pack-gpu.sh):

    BLK_LIBRARY=carry/build/libblk-private.so PYTHONPATH=python python3 python/tests/gpu_transformer.py

Three shapes: f32 (2 layers), bf16 with 64-wide heads and ragged sizes
(S and V no multiple of any block), bf16 with 128-wide heads.
BLK_TRANSFORMER_BENCH=1 adds the step times at a realistic size (train.py's
table).  Ends with "N passed, N failed".
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "transformer"))
os.environ.setdefault("BLK_CACHE_DIR", tempfile.mkdtemp(prefix="blk-gpu-cache-"))

import torch  # noqa: E402

import train  # noqa: E402
from model import Config  # noqa: E402

CASES = [
    Config(batch=2, seq=256, dim=256, heads=4, ffn=512, vocab=1000, layers=2, dtype="f32"),
    Config(batch=2, seq=1000, dim=512, heads=8, ffn=1376, vocab=5003, layers=2, dtype="bf16"),
    Config(batch=2, seq=512, dim=512, heads=4, ffn=1024, vocab=2048, layers=1, dtype="bf16"),
]
BENCH = Config(batch=4, seq=2048, dim=1024, heads=16, ffn=2816, vocab=32000, layers=1, dtype="bf16")


def main():
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"on {torch.cuda.get_device_name(device)}")
    checks = train.Checks()
    for cfg in CASES:
        print(f"== {cfg}", flush=True)
        try:
            train.check_dropout(cfg, device, checks)
            train.check_training(cfg, device, steps=3, lr=0.1, backend="inductor", checks=checks)
        except Exception as e:  # report it and go on with the next shape
            import traceback
            traceback.print_exc()
            checks(f"{cfg.dtype} {cfg.batch}x{cfg.seq}x{cfg.dim} ran", False, repr(e))
    if os.environ.get("BLK_TRANSFORMER_BENCH") == "1":
        print(f"== step time (forward + backward + SGD), {BENCH}", flush=True)
        train.bench(BENCH, device, lr=0.1)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
