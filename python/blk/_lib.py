"""ctypes bindings of libblk's public C API (runtime/include/blk.h).

Only what the package uses is declared.  The library is found, in order:
$BLK_LIBRARY (a path), beside this file (a wheel or `pip install .` puts it
there), then the system's (`libblk.so.0`, as `meson install` puts it).
"""
import ctypes
import os

MAX_RANK = 4

# ORDER DTYPE: blk.h's BLK_DTYPE_*.
F32, F16, BF16, I32, BOOL, I8, U8, F8E4M3, F8E5M2, U32 = range(10)
DTYPE_NAMES = ("f32", "f16", "bf16", "i32", "bool", "i8", "u8", "f8e4m3", "f8e5m2", "u32")
ITEMSIZE = (4, 2, 2, 4, 1, 1, 1, 1, 1, 4)

# ORDER ACCESS: blk.h's BLK_PARAM_*.
PARAM_IN, PARAM_OUT, PARAM_INOUT = range(3)


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
        ("peers", ctypes.c_void_p),  # a symmetric param's device table of every rank's address
    ]


class ParamInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("access", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("symmetric", ctypes.c_int),
    ]


class CompiledInfo(ctypes.Structure):
    _fields_ = [
        ("entry", ctypes.c_char_p),
        ("ptx", ctypes.c_char_p),
        ("arch", ctypes.c_char_p),
        ("threads", ctypes.c_uint),
        ("smem_bytes", ctypes.c_size_t),
        ("grid", ctypes.c_uint * 3),
        ("cached", ctypes.c_bool),
        ("jit_log", ctypes.c_char_p),
        ("config", ctypes.c_char_p),
    ]


_P = ctypes.c_void_p
_B = ctypes.c_bool
_I = ctypes.c_int
_S = ctypes.c_char_p
_TP = ctypes.POINTER(Tensor)

# name: (restype, argtypes)
_SIGNATURES = {
    "blk_version": (_S, []),
    "blk_device_count": (_I, [_S, ctypes.c_size_t]),
    "blk_runtime_create": (_P, [_I, _S, ctypes.c_size_t]),
    "blk_runtime_create_offline": (_P, [_S, _S, ctypes.c_size_t]),
    "blk_runtime_destroy": (None, [_P]),
    "blk_runtime_last_error": (_S, [_P]),
    "blk_runtime_arch": (_S, [_P]),
    "blk_runtime_device_name": (_S, [_P]),
    "blk_runtime_cache_dir": (_S, [_P]),
    "blk_runtime_set_cache_dir": (_B, [_P, _S]),
    "blk_program_disk_hits": (ctypes.c_uint, [_P]),
    "blk_program_load": (_P, [_P, _S, ctypes.POINTER(_S), _I]),
    "blk_program_load_source": (_P, [_P, _S, _S, ctypes.POINTER(_S), _I]),
    "blk_program_destroy": (None, [_P]),
    "blk_program_cache_stats": (None, [_P, ctypes.POINTER(ctypes.c_uint),
                                       ctypes.POINTER(ctypes.c_uint)]),
    "blk_program_kernel": (_P, [_P, _S]),
    "blk_func_name": (_S, [_P]),
    "blk_func_num_tensors": (_I, [_P]),
    "blk_func_param": (_B, [_P, _I, ctypes.POINTER(ParamInfo)]),
    "blk_func_num_sizes": (_I, [_P]),
    "blk_func_size_name": (_S, [_P, _I]),
    "blk_func_bind": (_B, [_P, _TP, _I, ctypes.POINTER(ctypes.c_int64)]),
    "blk_func_infer_shapes": (_B, [_P, _TP, _I]),
    "blk_func_compile": (_B, [_P, _TP, _I, ctypes.POINTER(CompiledInfo)]),
    "blk_func_search": (_I, [_P, _TP, _I, ctypes.POINTER(ctypes.c_char_p), _I]),
    "blk_launch": (_B, [_P, _TP, _I, _P]),
    "blk_interpret": (_B, [_P, _TP, _I]),
    "blk_interpret_world": (_B, [_P, _I, ctypes.POINTER(_TP), _I]),
    "blk_runtime_set_world": (_B, [_P, _I, _I]),
    "blk_func_multi_rank": (_I, [_P]),
    "blk_xla_kernel": (ctypes.c_int64, [_S, _S, _S, ctypes.POINTER(_S), _I, _S, ctypes.c_size_t]),
    "blk_runtime_interrupt": (None, [_P]),
    "blk_stream_synchronize": (_B, [_P, _P]),
    "blk_timer_create": (_P, [_P]),
    "blk_timer_destroy": (None, [_P]),
    "blk_timer_start": (_B, [_P, _P]),
    "blk_timer_stop": (_B, [_P, _P]),
    "blk_timer_elapsed_ms": (_B, [_P, ctypes.POINTER(ctypes.c_float)]),
}


def _candidates():
    env = os.environ.get("BLK_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, n) for n in ("libblk.so.0", "libblk.so")] + ["libblk.so.0"]


def _open():
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        return lib
    raise ImportError("blk: cannot load libblk (set BLK_LIBRARY to its path):\n  "
                      + "\n  ".join(tried))


lib = _open()


def interpret(rt, func, ts, n):
    """blk_interpret, stoppable with Ctrl-C.  The call stays in this thread
    (a run must never outlive its call: it reads the caller's arrays and
    program).  While it runs, Python's signal handler writes each signal's
    number to a pipe (signal.set_wakeup_fd) that a watcher thread reads; at
    SIGINT the watcher calls blk_runtime_interrupt until the run returns,
    and the KeyboardInterrupt is raised here as usual.  Outside the main
    thread (which alone gets SIGINT) the call is a plain one."""
    import signal
    import threading
    try:
        r, w = os.pipe()
    except OSError:
        return bool(lib.blk_interpret(func, ts, n))
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        os.close(r)
        os.close(w)
        return bool(lib.blk_interpret(func, ts, n))
    done = threading.Event()

    def watch():
        try:
            while True:
                b = os.read(r, 1)
                if not b or b == b"\0":
                    return
                if b[0] == signal.SIGINT:
                    break
            while not done.wait(0.05):  # again and again: a run not yet begun clears it
                lib.blk_runtime_interrupt(rt)
        finally:
            os.close(r)

    threading.Thread(target=watch, name="blk-interrupt", daemon=True).start()
    try:
        return bool(lib.blk_interpret(func, ts, n))
    finally:
        done.set()
        signal.set_wakeup_fd(old)
        try:
            os.write(w, b"\0")
        except OSError:
            pass
        os.close(w)


def text(b):
    """A C string from libblk as str ("" for NULL)."""
    return b.decode("utf-8", "replace") if b else ""


def cstr(s):
    """s as a C string.  A NUL would end it early, the rest silently dropped
    (B="4\0junk" was B=4); surrogates, the bytes os.fsdecode could not
    decode, go back as those bytes (blk names a non-ASCII one)."""
    if "\0" in s:
        from ._arrays import BlkError
        raise BlkError(f"{s!r} has a NUL byte, which C would take as its end")
    return s.encode("utf-8", "surrogateescape")


def defines(params):
    """NAME=VALUE strings as a C array, and its length."""
    items = [cstr(f"{k}={_param_text(v)}") for k, v in params.items()]
    return (_S * max(len(items), 1))(*items), len(items)


def _param_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
