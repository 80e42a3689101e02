"""blk: GPU kernels written over blocks, called on PyTorch, CuPy or JAX arrays.

    import blk
    matmul = blk.kernel("examples/matmul.blk", T="bf16", BM=128, BN=128)
    c = matmul(a, b)                 # c allocated like a, on a's GPU and stream
    matmul(a, b, c)                  # or written into c
    c = matmul(a, b, interpret=True) # the CPU interpreter (NumPy arrays work too)

See docs/python.md.  Importing blk loads libblk (ctypes) and nothing else:
no compiler, no torch, JAX or CuPy.  blk.torch (kernels as torch custom ops:
torch.compile, torch.export, CUDA graphs, autograd) and blk.testing
(do_bench) use torch, and are imported only when asked for.
"""
from . import _lib
from ._arrays import BlkError, CompileError
from ._kernel import Kernel, Param, kernel
from ._tune import Autotuned, autotune, cache_dir

__version__ = _lib.text(_lib.lib.blk_version())

__all__ = ["kernel", "autotune", "Kernel", "Autotuned", "Param", "BlkError", "CompileError",
           "cache_dir", "device_count", "__version__"]


def device_count():
    """GPUs the CUDA driver sees (0 without a driver or GPU)."""
    import ctypes
    err = ctypes.create_string_buffer(256)
    n = _lib.lib.blk_device_count(err, 256)
    if n < 0:
        raise BlkError(_lib.text(err.value))
    return n
