"""Arrays from the frameworks, seen as blk tensors.

Each array becomes an `Arg`: a `_lib.Tensor` (pointer, dtype, shape, strides
in elements) plus where it lives.  Nothing here imports torch, CuPy or JAX:
an array is recognised by what it offers (torch's own attributes, then
`__cuda_array_interface__`, then DLPack), and a framework's module is only
reached through `sys.modules` once one of its arrays has been passed in.
"""
import ctypes
import sys

from . import _lib

HOST = -1  # Arg.device of an array in host memory


class BlkError(RuntimeError):
    """An error from blk: the message is blk's own (file:line:col and a caret
    for errors in a .blk source)."""


class CompileError(BlkError):
    """A .blk source that does not compile, or not for these arrays."""


class Arg:
    """One array passed to a kernel."""

    __slots__ = ("obj", "tensor", "device", "framework", "keep")

    def __init__(self, obj, tensor, device, framework, keep=None):
        self.obj = obj
        self.tensor = tensor
        self.device = device        # CUDA ordinal, or HOST
        self.framework = framework  # "torch", "cupy", "jax", "numpy", "cai", "dlpack"
        self.keep = keep            # what must live as long as the pointer is used


def _module(obj):
    return type(obj).__module__.split(".")[0]


def _make(ptr, dtype, shape, strides):
    n = len(shape)
    if n > _lib.MAX_RANK:
        raise BlkError(f"an array of rank {n}: blk takes rank 0..{_lib.MAX_RANK}")
    t = _lib.Tensor(ptr or None, dtype, n)
    t.shape[:n] = shape
    t.strides[:n] = strides
    return t


def _contiguous(shape):
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


def _byte_strides(strides, itemsize, shape):
    if strides is None:
        return _contiguous(shape)
    if any(s % itemsize for s in strides):
        raise BlkError(f"strides {tuple(strides)} (bytes) are not a whole number of "
                       f"{itemsize}-byte elements")
    return tuple(s // itemsize for s in strides)


# ---- torch ---------------------------------------------------------------

_TORCH_NAMES = {"float32": _lib.F32, "float16": _lib.F16, "bfloat16": _lib.BF16,
                "int32": _lib.I32, "bool": _lib.BOOL, "int8": _lib.I8, "uint8": _lib.U8,
                "float8_e4m3fn": _lib.F8E4M3, "float8_e5m2": _lib.F8E5M2,
                "uint32": _lib.U32}  # torch.uint32: torch 2.3 and later
_torch_dtypes = {}  # torch dtype object -> blk dtype, filled on first use


def _torch_dtype(dt):
    if not _torch_dtypes:
        torch = sys.modules["torch"]
        _torch_dtypes.update({getattr(torch, n): v for n, v in _TORCH_NAMES.items()
                              if hasattr(torch, n)})
    v = _torch_dtypes.get(dt)
    if v is None:
        raise BlkError(f"torch dtype {dt} has no blk dtype (f32 f16 bf16 i32 i8 u8 u32 bool; "
                       "float8_e4m3fn and float8_e5m2 are f8e4m3 and f8e5m2)")
    return v


def _from_torch(x):
    dev = x.get_device()  # the CUDA ordinal, -1 on the CPU
    return Arg(x, _make(x.data_ptr(), _torch_dtype(x.dtype), x.shape, x.stride()),
               dev if dev >= 0 else HOST, "torch")


# ---- __cuda_array_interface__ ----------------------------------------------

_TYPESTR = {"<f4": _lib.F32, "<f2": _lib.F16, "<i4": _lib.I32, "|b1": _lib.BOOL,
            "|i1": _lib.I8, "|u1": _lib.U8, "<u4": _lib.U32}


def _dlpack_device(x):
    try:
        kind, ordinal = x.__dlpack_device__()
    except Exception:  # not offered: the current device is the best guess
        return 0
    return int(ordinal)


def _from_cai(x):
    fw = _module(x)
    if fw in ("jax", "jaxlib"):
        x.block_until_ready()  # its pointer is read now; JAX may still be writing it
    try:
        cai = x.__cuda_array_interface__
    except AttributeError:  # the type offers it, this array not (JAX on the CPU)
        if hasattr(x, "__dlpack__"):
            return _from_dlpack(x)
        raise BlkError(f"a {type(x).__name__} without __cuda_array_interface__: pass a GPU "
                       "array, or a NumPy array in interpret mode") from None
    dt = _TYPESTR.get(cai["typestr"])
    if dt is None and hasattr(x, "__dlpack__"):
        return _from_dlpack(x)  # bf16 (JAX) has no typestr; DLPack has it
    if dt is None:
        raise BlkError(f"array type {cai['typestr']!r} has no blk dtype (f32 f16 i32 i8 u8 u32 bool; "
                       "bf16 through DLPack or torch)")
    shape = tuple(cai["shape"])
    strides = _byte_strides(cai.get("strides"), _lib.ITEMSIZE[dt], shape)
    fw = fw if fw in ("cupy", "jax", "jaxlib") else "cai"
    return Arg(x, _make(cai["data"][0], dt, shape, strides), _dlpack_device(x),
               "jax" if fw == "jaxlib" else fw)


# ---- DLPack ------------------------------------------------------------------

class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_CUDA = 1, 2
# (type code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
_DL_DTYPES = {(2, 32): _lib.F32, (2, 16): _lib.F16, (4, 16): _lib.BF16, (0, 32): _lib.I32,
              (6, 8): _lib.BOOL, (0, 8): _lib.I8, (1, 8): _lib.U8, (1, 32): _lib.U32}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(x):
    if _module(x) in ("jax", "jaxlib"):
        x.block_until_ready()
    capsule = x.__dlpack__()
    # Not consumed (the name stays "dltensor"): the capsule's destructor
    # releases the producer's reference when `keep` goes.
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    dt = _DL_DTYPES.get((t.code, t.bits))
    if dt is None or t.lanes != 1:
        raise BlkError(f"DLPack dtype (code {t.code}, {t.bits} bits) has no blk dtype")
    if t.device_type not in (_DL_CPU, _DL_CUDA):
        raise BlkError(f"DLPack device type {t.device_type}: blk takes CUDA (or host) arrays")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = (tuple(t.strides[i] for i in range(t.ndim)) if t.strides
               else _contiguous(shape))
    dev = t.device_id if t.device_type == _DL_CUDA else HOST
    fw = _module(x)
    return Arg(x, _make(t.data + t.byte_offset, dt, shape, strides), dev,
               "jax" if fw in ("jax", "jaxlib") else "dlpack", keep=capsule)


# ---- NumPy -------------------------------------------------------------------

_NUMPY_DTYPES = {"float32": _lib.F32, "float16": _lib.F16, "bfloat16": _lib.BF16,
                 "int32": _lib.I32, "bool": _lib.BOOL, "int8": _lib.I8, "uint8": _lib.U8,
                 "float8_e4m3fn": _lib.F8E4M3, "float8_e5m2": _lib.F8E5M2,  # ml_dtypes' names
                 "uint32": _lib.U32}


def _from_numpy(x):
    import numpy as np
    if isinstance(x, np.generic):  # a NumPy scalar: a 0-d array (read only)
        x = np.asarray(x)
    if not x.dtype.isnative:  # big-endian: blk reads native order; outputs refuse it (check_output)
        x = x.astype(x.dtype.newbyteorder("="))
    dt = _NUMPY_DTYPES.get(x.dtype.name)
    if dt is None and x.dtype.name == "uint16":
        dt = _lib.BF16  # 16-bit patterns: the param's dtype (f16 or bf16) decides
    if dt is None:
        raise BlkError(f"NumPy dtype {x.dtype} has no blk dtype (float32 float16 int32 int8 uint8 uint32 bool; "
                       "bf16 as ml_dtypes.bfloat16 or uint16 bits)")
    strides = _byte_strides(x.strides, x.itemsize, x.shape)
    return Arg(x, _make(x.ctypes.data, dt, x.shape, strides), HOST, "numpy")


def check_output(kernel, param, x):
    """A host array blk will write (interpret mode) must take the writes:
    a read-only array (writeable=False, a memmap opened "r", a view of
    bytes) would fault or be changed behind its owner's back, and a
    big-endian array or a NumPy scalar would be written through a copy.
    Anything but NumPy and torch is refused before the run: the interpreter
    would write its buffer (a memoryview of immutable bytes too) and only
    then find it cannot copy the results back."""
    where = f"kernel {kernel}: output {param}"
    if _module(x) == "torch":
        return
    if _module(x) != "numpy":
        raise BlkError(f"{where} is a {type(x).__name__}, which interpret mode cannot write "
                       "back into: pass NumPy arrays or torch tensors")
    import numpy as np
    if isinstance(x, np.generic):
        raise BlkError(f"{where} is a NumPy scalar, which cannot be written: pass an array")
    if not x.flags.writeable:
        raise BlkError(f"{where} is read-only (writeable=False, a memmap opened 'r', or a "
                       "view of bytes): pass a writable array")
    if not x.dtype.isnative:
        raise BlkError(f"{where} is {x.dtype.str} (byte order not native): pass "
                       f"x.astype(x.dtype.newbyteorder('=')) and convert back")


def from_array(x):
    """The Arg of an array from any of the frameworks blk knows."""
    cls = type(x)
    conv = _by_type.get(cls)
    if conv is None:
        conv = _by_type[cls] = _converter(cls)
    return conv(x)


_by_type = {}  # array type -> its converter, found once per type


def dtype_of(x):
    """The blk dtype of an array.  A torch or JAX array's is read from its
    dtype alone: torch's fake tensors (torch.compile's tracing) and JAX's
    tracers (jax.jit's) have no data."""
    mod = _module(x)
    if mod == "torch" and hasattr(x, "data_ptr"):
        return _torch_dtype(x.dtype)
    if mod == "jax":  # tracers (jax.jit) have no data either
        from .jax import dtype_of as jax_dtype
        return jax_dtype(x)
    return from_array(x).tensor.dtype


def _converter(cls):
    mod = cls.__module__.split(".")[0]
    if mod == "numpy":
        return _from_numpy
    if mod == "torch" and hasattr(cls, "data_ptr"):
        return _from_torch
    # Looked up on the type: a property is not evaluated twice per call.
    if hasattr(cls, "__cuda_array_interface__"):
        return _from_cai
    if hasattr(cls, "__dlpack__"):
        return _from_dlpack
    return _probe


def _probe(x):
    """An array whose type says nothing: the interfaces may be on the object."""
    if hasattr(x, "__cuda_array_interface__"):
        return _from_cai(x)
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(x)
    raise BlkError(f"a {type(x).__name__} is not an array blk can use: pass a torch tensor, "
                   "an array with __cuda_array_interface__ or __dlpack__ (CuPy, JAX), "
                   "or a NumPy array (interpret mode)")


# ---- allocation of outputs -----------------------------------------------------

_NP_NAMES = ("float32", "float16", None, "int32", "bool", "int8", "uint8", None, None, "uint32")
_ML_NAMES = {_lib.BF16: ("bfloat16", "uint16"), _lib.F8E4M3: ("float8_e4m3fn", "uint8"),
             _lib.F8E5M2: ("float8_e5m2", "uint8")}


def numpy_dtype(dt):
    import numpy as np
    if dt in _ML_NAMES:  # ml_dtypes' type where it is installed, else the bit patterns
        name, bits = _ML_NAMES[dt]
        try:
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, name))
        except ImportError:
            return np.dtype(bits)
    return np.dtype(_NP_NAMES[dt])


def empty(like, dtype, shape):
    """A new array of the framework and device of `like`."""
    fw = like.framework
    if fw == "numpy" or like.device == HOST and fw != "torch":
        import numpy as np
        try:
            return np.empty(shape, numpy_dtype(dtype))
        except (MemoryError, ValueError) as e:  # ValueError: past NumPy's limit
            raise BlkError(f"cannot allocate an output of shape {tuple(shape)} "
                           f"({_lib.DTYPE_NAMES[dtype]}): {e}") from None
    if fw == "torch":
        torch = sys.modules["torch"]
        tdt = getattr(torch, ("float32", "float16", "bfloat16", "int32", "bool", "int8",
                              "uint8", "float8_e4m3fn", "float8_e5m2", "uint32")[dtype])
        return torch.empty(shape, dtype=tdt, device=like.obj.device)
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        if _NP_NAMES[dtype] is None:
            raise BlkError(f"CuPy has no {_lib.DTYPE_NAMES[dtype]}: pass the output array")
        with cupy.cuda.Device(like.device):
            return cupy.empty(shape, _NP_NAMES[dtype])
    if fw == "jax":
        if dtype in (_lib.F8E4M3, _lib.F8E5M2):  # DLPack here carries no fp8 code
            raise BlkError(f"blk takes fp8 ({_lib.DTYPE_NAMES[dtype]}) from torch or NumPy, not JAX")
        jax = sys.modules["jax"]
        jdt = getattr(jax.numpy, ("float32", "float16", "bfloat16", "int32", "bool_", "int8",
                                  "uint8", None, None, "uint32")[dtype])
        dev = [d for d in jax.devices() if d.id == like.device or len(jax.devices()) == 1][0]
        # A fresh buffer no JAX computation refers to; blk writes it once.
        return jax.device_put(jax.numpy.zeros(shape, jdt), dev).block_until_ready()
    raise BlkError(f"cannot allocate an output like a {type(like.obj).__name__}: pass it")
