"""blk kernels in JAX programs: jax.jit, jax.grad, jax.vmap.

A kernel called on JAX tracers (inside `jax.jit`, `jax.vmap`, `jax.grad`,
`lax.scan` ...) becomes an XLA custom call of libblk's FFI handlers
(through `jax.ffi`): on the GPU, blk's launch on XLA's stream; on the CPU,
blk's interpreter on XLA's host buffers, so a jitted function runs with
`jax[cpu]` as well.  The call is functional, as JAX is: it takes the
arrays of the kernel's in and inout params and returns new arrays for its
out and inout params, in param order (one array, or a tuple).

    import blk, blk.jax, jax
    add = blk.kernel("examples/add.blk")
    f = jax.jit(lambda x, y: add(x, y) * 2)      # traced: an XLA custom call
    z = blk.jax.call(add, x, y)                  # the same call, eagerly

`blk.jax.custom_vjp(forward, backward)` pairs two kernels for `jax.grad`.
Importing this module imports JAX; `import blk` does not.
"""
import ctypes
import threading

import jax
import numpy as np

from . import _lib
from ._arrays import BlkError, _contiguous
from ._kernel import infer_shapes

__all__ = ["call", "custom_vjp", "TARGET"]

TARGET = "blk_kernel"  # the FFI target's name, on both platforms

_DTYPES = {"float32": _lib.F32, "float16": _lib.F16, "bfloat16": _lib.BF16, "int32": _lib.I32,
           "bool": _lib.BOOL, "int8": _lib.I8, "uint8": _lib.U8,
           "float8_e4m3fn": _lib.F8E4M3, "float8_e5m2": _lib.F8E5M2, "uint32": _lib.U32}
_JNP_NAMES = ("float32", "float16", "bfloat16", "int32", "bool", "int8", "uint8",
              "float8_e4m3fn", "float8_e5m2", "uint32")

_lock = threading.Lock()
_registered = False
_ids = {}  # (path, source, kernel, defines) -> blk_xla_kernel's id


def _register():
    """The handlers as FFI target TARGET, once: the interpreter on "cpu",
    the launch on "CUDA" (where this jaxlib has CUDA)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_lib.lib.blk_xla_handler_host),
                                    platform="cpu")
        try:
            jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(_lib.lib.blk_xla_handler_cuda),
                                        platform="CUDA")
        except Exception:  # a jaxlib without CUDA: calls run on the CPU only
            pass
        _registered = True


def dtype_of(x):
    """The blk dtype of a JAX array or tracer (from its dtype alone)."""
    name = np.dtype(x.dtype).name
    dt = _DTYPES.get(name)
    if dt is None:
        raise BlkError(f"blk has no dtype for JAX's {name} (it takes "
                       f"{', '.join(_DTYPES)})")
    return dt


def _kernel_id(k):
    """blk_xla_kernel's id for kernel k (its source, name and parameters)."""
    defs = tuple(f"{n}={_lib._param_text(v)}" for n, v in k.params.items())
    key = (k.path, k.source, k.name, defs)
    kid = _ids.get(key)
    if kid is None:
        arr = (ctypes.c_char_p * max(len(defs), 1))(*[_lib.cstr(d) for d in defs])
        err = ctypes.create_string_buffer(1024)
        kid = _lib.lib.blk_xla_kernel(k.path and _lib.cstr(k.path),
                                      k.source and _lib.cstr(k.source),
                                      _lib.cstr(k.name), arr, len(defs), err, 1024)
        if not kid:
            raise BlkError(_lib.text(err.value))
        _ids[key] = kid
    return kid


def call(kernel, *arrays, **named):
    """Kernel `kernel` as a functional JAX operation (an XLA custom call):
    arrays for its in and inout params, by position or by name; returns
    new arrays for its out and inout params, in param order (one, or a
    tuple).  Works on concrete arrays and on tracers alike."""
    slots = kernel._match(arrays, named)
    for p, a in zip(kernel.tensor_params, slots):
        if p.access == "out" and a is not None:
            raise BlkError(f"kernel {kernel.name}: {p.name} is an out param; in JAX blk returns "
                           "it as a new array: do not pass one")
    for p, a in zip(kernel.tensor_params, slots):
        if a is not None and not isinstance(a, (jax.Array, jax.core.Tracer)):
            raise BlkError(f"kernel {kernel.name}: {p.name} is a {type(a).__name__}; a JAX "
                           "call takes JAX arrays (jax.numpy.asarray converts)")
    k = kernel._variant(slots) if kernel._auto_dtypes else kernel
    if any(p.symmetric for p in k.tensor_params) or k.multi_rank:
        raise BlkError(f"kernel {k.name} spans GPUs (symmetric, signal or rank params); "
                       "JAX calls run one GPU's kernels")
    dims = [None if a is None else tuple(int(d) for d in a.shape) for a in slots]
    shapes = infer_shapes(k, slots, [None if d is None else (d, _contiguous(d)) for d in dims],
                          check=True)
    results, operands, aliases = [], [], {}
    for i, (p, a) in enumerate(zip(k.tensor_params, slots)):
        if p.access != "out":
            operands.append(a)
        if p.access != "in":
            if p.access == "inout":
                aliases[len(operands) - 1] = len(results)
            dt = getattr(jax.numpy, _JNP_NAMES[_lib.DTYPE_NAMES.index(p.dtype)])
            results.append(jax.ShapeDtypeStruct(shapes[i], dt))
    if not results:
        raise BlkError(f"kernel {k.name} has no out or inout param: a JAX call of it would "
                       "compute nothing")
    _register()
    f = jax.ffi.ffi_call(TARGET, results, input_output_aliases=aliases or None,
                         vmap_method="sequential")
    outs = f(*operands, blk_kernel=np.int64(_kernel_id(k)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def custom_vjp(forward, backward, save=None):
    """A function of JAX arrays that runs kernel `forward` (as `call` does)
    and that `jax.grad` differentiates with `backward`.

    - `save`: a name or a list of names of the forward's params the
      backward needs, in that order; an in or inout name saves the array
      passed in, an out name the array returned.  Default: the inputs.
    - `backward(*saved, *grads)`, one grad per forward result (out and inout
      params, in param order), returns one gradient per forward input (in and
      inout params), None for one with none.  A blk kernel (its results are
      the gradients) or any function of JAX arrays.

    The function takes the forward's inputs by position."""
    params = forward.tensor_params
    inputs = [i for i, p in enumerate(params) if p.access != "out"]
    outputs = [i for i, p in enumerate(params) if p.access != "in"]
    names = [params[i].name for i in inputs] if save is None else \
        [save] if isinstance(save, str) else list(save)
    where = []
    for name in names:
        i = forward._index.get(name)
        if i is None:
            raise BlkError(f"custom_vjp: save names {name!r}, which is no param of kernel "
                           f"{forward.name} (it has {', '.join(p.name for p in params)})")
        where.append(("in", inputs.index(i)) if params[i].access != "out"
                     else ("out", outputs.index(i)))
    ins = ", ".join(params[i].name for i in inputs)

    def run(args):
        if len(args) != len(inputs):
            raise BlkError(f"kernel {forward.name} takes {len(inputs)} arrays ({ins}), "
                           f"got {len(args)}")
        outs = call(forward, *args)
        return outs, outs if isinstance(outs, tuple) else (outs,)

    @jax.custom_vjp
    def fn(*args):
        return run(args)[0]

    def fwd(*args):
        outs, tup = run(args)
        saved = tuple(args[j] if kind == "in" else tup[j] for kind, j in where)
        return outs, saved

    def bwd(saved, grads):
        grads = grads if isinstance(grads, tuple) else (grads,)
        got = call(backward, *saved, *grads) if hasattr(backward, "tensor_params") \
            else backward(*saved, *grads)
        got = got if isinstance(got, tuple) else (got,)
        if len(got) != len(inputs):
            raise BlkError(f"the backward of kernel {forward.name} returned {len(got)} "
                           f"gradients; the forward takes {len(inputs)} inputs ({ins}): return "
                           "one per input, None for an input with none")
        return got

    fn.defvjp(fwd, bwd)
    return fn
