"""blk.kernel: a .blk kernel called on arrays.

A Kernel is a source (a .blk path or text), the kernel's name and its
compile-time parameters.  A call matches arrays to the kernel's tensor
params (positionally, or by name), allocates the outputs not passed,
and either launches on the arrays' GPU (the C runtime binds the sizes,
specializes, compiles or finds the kernel in its caches, and launches) or,
in interpret mode, runs the CPU interpreter on host copies.
"""
import ctypes
import os
import sys
import threading

from . import _lib
from ._arrays import HOST, BlkError, CompileError, check_output, dtype_of, empty, from_array

_lock = threading.RLock()
_runtimes = {}  # device ordinal (HOST: offline) -> _Runtime


class _RuntimeLock:
    """A runtime's lock (re-entrant).  Entering it also destroys the
    programs whose finalizers found it taken (_Loaded.__del__)."""

    def __init__(self):
        self._lock = threading.RLock()
        self.orphans = []  # programs to destroy (list.append is atomic)

    def acquire(self, blocking=True):
        return self._lock.acquire(blocking)

    def release(self):
        self._lock.release()

    def __enter__(self):
        self._lock.acquire()
        while self.orphans:
            _lib.lib.blk_program_destroy(self.orphans.pop())
        return self

    def __exit__(self, *exc):
        self._lock.release()


class _Runtime:
    """One BlkRuntime (a GPU's primary context, or offline) and a lock:
    libblk's runtime is not to be used from two threads at once."""

    def __init__(self, device):
        err = ctypes.create_string_buffer(512)
        if device == HOST:
            arch = os.environ.get("BLK_ARCH") or None
            self.ptr = _lib.lib.blk_runtime_create_offline(arch and arch.encode(), err, 512)
        else:
            self.ptr = _lib.lib.blk_runtime_create(device, err, 512)
        if not self.ptr:
            raise BlkError(_lib.text(err.value))
        self.device = device
        self.lock = _RuntimeLock()

    def error(self, cls=BlkError):
        return cls(_lib.text(_lib.lib.blk_runtime_last_error(self.ptr)))

    @property
    def arch(self):
        return _lib.text(_lib.lib.blk_runtime_arch(self.ptr))


def runtime(device):
    with _lock:
        rt = _runtimes.get(device)
        if rt is None:
            rt = _runtimes[device] = _Runtime(device)
        return rt


def interpret_default():
    return os.environ.get("BLK_INTERPRET", "") not in ("", "0")


def _is_path(src):
    return "\n" not in src and (src.endswith(".blk") or os.path.exists(src))


class Param:
    """One tensor parameter: name, access ("in", "out", "inout"), dtype, rank,
    and symmetric: "" (a plain array), "symmetric" (a buffer on every rank)
    or "signal" (a symmetric array of i32 signals)."""

    __slots__ = ("name", "access", "dtype", "rank", "symmetric")

    def __init__(self, info):
        self.name = _lib.text(info.name)
        self.access = ("in", "out", "inout")[info.access]
        self.dtype = _lib.DTYPE_NAMES[info.dtype]
        self.rank = info.rank
        self.symmetric = ("", "symmetric", "signal")[info.symmetric]

    def __repr__(self):
        sym = f" {self.symmetric}" if self.symmetric else ""
        return f"Param({self.name}: {self.access}{sym} {self.dtype}, rank {self.rank})"


class _Loaded:
    """A program loaded in one runtime, and its kernel."""

    __slots__ = ("rt", "prog", "func")

    def __init__(self, rt, kernel, params=None):
        self.rt = rt
        defs, n = _lib.defines(kernel.params if params is None else params)
        with rt.lock:
            if kernel.path:
                self.prog = _lib.lib.blk_program_load(rt.ptr, _lib.cstr(kernel.path), defs, n)
            else:
                self.prog = _lib.lib.blk_program_load_source(
                    rt.ptr, kernel.source_name.encode(), _lib.cstr(kernel.source), defs, n)
            if not self.prog:
                raise rt.error(CompileError)
            self.func = _lib.lib.blk_program_kernel(
                self.prog, _lib.cstr(kernel.name) if kernel.name else None)
            if not self.func:
                err = rt.error(CompileError)
                _lib.lib.blk_program_destroy(self.prog)
                self.prog = None
                raise err

    def __del__(self):
        # The garbage collector runs this in whichever thread allocates at
        # the time -- also a thread that another, holding the runtime's lock
        # around a long call, waits for (the interpreter's Ctrl-C watcher,
        # whose start() waits for it to run): it must never block.  A
        # program whose runtime is busy goes to the lock's orphans, which
        # its next holder destroys.
        prog = getattr(self, "prog", None)
        if not prog or _lib is None or _lib.lib is None:
            return
        if self.rt.lock.acquire(blocking=False):
            try:
                _lib.lib.blk_program_destroy(prog)
            finally:
                self.rt.lock.release()
        else:
            self.rt.lock.orphans.append(prog)


class Kernel:
    """A kernel of a .blk source with its compile-time parameters.

    `blk.kernel(src, name=None, interpret=None, **params)` makes one; calling
    it launches it (see `__call__`)."""

    def __init__(self, src, name=None, interpret=None, **params):
        if not isinstance(src, str):
            if not isinstance(src, (bytes, os.PathLike)):
                raise BlkError(f"blk.kernel: src is a {type(src).__name__}; pass a .blk path or "
                               "the source text")
            src = os.fsdecode(src)
        self.path = src if _is_path(src) else None
        if self.path is not None and os.path.isdir(self.path):
            raise BlkError(f"{self.path}: a directory, not a .blk file (pass a .blk path, or source text)")
        if self.path is not None and not os.path.isfile(self.path):
            raise BlkError(f"{self.path}: no such file (pass a .blk path, or source text)")
        if self.path is None and "\0" in src:
            raise BlkError(f"the source text has a NUL byte at offset {src.index(chr(0))}; blk "
                           "source is ASCII text without NULs")
        self.source = None if self.path else src
        self.source_name = "<string>"
        self.name = name
        self.params = dict(params)
        self.interpret = interpret
        self._loaded = {}
        self._auto_dtypes = {}  # dtype param given "auto" -> indices of the tensor params it types
        self._variants = {}     # the arrays' dtypes (one per auto dtype param) -> Kernel
        # Loading offline checks the source now, so errors surface here.
        try:
            info = self._load(HOST)
        except CompileError as e:
            info = self._load_dtypes_from_arrays(e)
        f = info.func
        self.name = _lib.text(_lib.lib.blk_func_name(f))
        n = _lib.lib.blk_func_num_tensors(f)
        self.tensor_params = []
        for i in range(n):
            pi = _lib.ParamInfo()
            _lib.lib.blk_func_param(f, i, ctypes.byref(pi))
            self.tensor_params.append(Param(pi))
        self.sizes = [_lib.text(_lib.lib.blk_func_size_name(f, i))
                      for i in range(_lib.lib.blk_func_num_sizes(f))]
        self.multi_rank = _lib.lib.blk_func_multi_rank(f) == 1
        for dparam, follows in self._auto_dtypes.items():
            for i in follows:
                self.tensor_params[i].dtype = dparam  # known per call, from the arrays
        self._index = {p.name: i for i, p in enumerate(self.tensor_params)}
        self._out_index = [i for i, p in enumerate(self.tensor_params) if p.access == "out"]

    def __repr__(self):
        where = self.path or "<string>"
        ps = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"blk.kernel({where!r}, name={self.name!r}{', ' + ps if ps else ''})"

    def with_params(self, **params):
        """The same kernel with more (or other) compile-time parameters."""
        k = Kernel(self.path or self.source, name=self.name, interpret=self.interpret,
                   **{**self.params, **params})
        return k

    def _load(self, device):
        loaded = self._loaded.get(device)
        if loaded is None:
            rt = runtime(device)
            with _lock:  # one program per device, whichever thread gets here first
                loaded = self._loaded.get(device)
                if loaded is None:
                    loaded = self._loaded[device] = _Loaded(rt, self)
        return loaded

    # ---- dtype params left to the arrays ("auto") -------------------------------

    def _probe(self, params):
        """The tensor params' dtypes when the source loads with these
        compile-time params, or None when it does not."""
        try:
            loaded = _Loaded(runtime(HOST), self, params)
        except CompileError:
            return None
        return _param_dtypes(loaded.func)

    def _load_dtypes_from_arrays(self, err):
        """The offline program of a kernel with "auto" params that libblk
        refused (err): those that take a dtype are left to the arrays.  Such
        a param is found by loading with a dtype in its place (an int param
        refuses one); the tensor params it types are those whose dtype
        follows it between two dtypes that load.  The program is loaded with
        stand-in dtypes: it gives the params' names, ranks and sizes."""
        autos = [k for k, v in self.params.items() if v == "auto"]
        plain = {k: v for k, v in self.params.items() if v != "auto"}
        standin = {}
        for name in autos:
            for dt in _lib.DTYPE_NAMES:
                if self._probe({**plain, name: dt}) is not None:
                    standin[name] = dt
                    break
        if not standin:
            raise err  # no "auto" here takes a dtype: libblk's message says what is wrong
        base = {**self.params, **standin}
        loaded = _Loaded(runtime(HOST), self, base)  # the source's own errors, if any
        kname = _lib.text(_lib.lib.blk_func_name(loaded.func))
        first = _param_dtypes(loaded.func)
        for name, dt in standin.items():
            for other in _lib.DTYPE_NAMES:
                dts = self._probe({**base, name: other}) if other != dt else None
                if dts is not None:
                    break
            else:
                raise BlkError(f"kernel {kname}: {name}='auto' leaves {name} to the arrays' dtype, "
                               f"but the source compiles only with {name}={dt} (each of its "
                               f"kernels is checked with it): give {name}={dt}")
            follows = [i for i, (a, b) in enumerate(zip(first, dts)) if a != b]
            if not follows:
                raise BlkError(f"kernel {kname}: {name}='auto' leaves {name} to the arrays' dtype, "
                               f"but no array param has dtype {name} (it is used only inside "
                               f"the kernel): give {name}= a dtype")
            self._auto_dtypes[name] = follows
        self._loaded[HOST] = loaded
        return loaded

    def _variant(self, slots):
        """The kernel whose "auto" dtype params have the dtypes of these
        arrays (self when none is "auto"), made once per dtype."""
        if not self._auto_dtypes:
            return self
        key = []
        for dparam, follows in self._auto_dtypes.items():
            dt = src = None
            for i in follows:
                if slots[i] is None:
                    continue
                d = _lib.DTYPE_NAMES[dtype_of(slots[i])]
                if dt is None:
                    dt, src = d, i
                elif d != dt:
                    names = self.tensor_params[src].name, self.tensor_params[i].name
                    raise BlkError(f"kernel {self.name}: {dparam}='auto' takes its dtype from the "
                                   f"arrays, and they disagree: {names[0]} is {dt}, {names[1]} is "
                                   f"{d} (both are {dparam})")
            if dt is None:
                names = ", ".join(self.tensor_params[i].name for i in follows)
                raise BlkError(f"kernel {self.name}: {dparam}='auto' takes its dtype from the "
                               f"arrays of dtype {dparam} ({names}), and none was given: pass "
                               f"one, or give {dparam}= a dtype")
            key.append(dt)
        key = tuple(key)
        k = self._variants.get(key)
        if k is None:
            with _lock:
                k = self._variants.get(key)
                if k is None:
                    k = self._variants[key] = self.with_params(**dict(zip(self._auto_dtypes, key)))
        return k

    # ---- matching arrays to params ------------------------------------------

    def _match(self, arrays, named):
        """One array (or None) per tensor param, from positions and names."""
        n = len(self.tensor_params)
        if not named and len(arrays) == n and all(a is not None for a in arrays):
            return arrays
        if len(arrays) > n:
            raise BlkError(f"kernel {self.name} takes {n} arrays "
                           f"({', '.join(p.name for p in self.tensor_params)}), got {len(arrays)}")
        slots = list(arrays) + [None] * (n - len(arrays))
        for key, value in named.items():
            i = self._index.get(key)
            if i is None:
                raise BlkError(f"kernel {self.name} has no array param {key!r} (it has "
                               f"{', '.join(p.name for p in self.tensor_params)})")
            if slots[i] is not None:
                raise BlkError(f"array {key!r} of kernel {self.name} given twice")
            slots[i] = value
        for p, a in zip(self.tensor_params, slots):
            if a is None and p.access != "out":
                raise BlkError(f"kernel {self.name}: missing array for {p.access} param {p.name!r}")
        return slots

    def _args(self, slots, func, rt, args=None):
        """Args for the given arrays (converted already when args is
        given), outputs allocated for the others."""
        if args is None:
            args = [from_array(a) if a is not None else None for a in slots]
        n = len(args)
        if None not in args:  # the common case, in one call
            ts = (_lib.Tensor * n)(*[a.tensor for a in args])
            missing = False
        else:
            ts = (_lib.Tensor * n)()
            missing = True
        for i, a in enumerate(args):
            if a is None:
                ts[i].rank = -1
            elif missing:
                ts[i] = a.tensor
            if a is not None and a.framework == "numpy":
                self._fix_bits16(i, a, ts)
        if missing:
            self._allocate(func, rt, args, ts)
        return args, ts

    def _allocate(self, func, rt, args, ts):
        given = next((a for a in args if a is not None), None)
        if given is None:
            raise BlkError(f"kernel {self.name}: no array given to take sizes from")
        with rt.lock:
            if not _lib.lib.blk_func_infer_shapes(func, ts, len(args)):
                raise rt.error()
        for i, a in enumerate(args):
            if a is None:
                shape = tuple(ts[i].shape[d] for d in range(ts[i].rank))
                want = ts[i].dtype
                args[i] = from_array(empty(given, want, shape))
                ts[i] = args[i].tensor
                ts[i].dtype = want  # bit patterns (uint8 for fp8 without ml_dtypes) are the param's

    def _fix_bits16(self, i, a, ts):
        # NumPy uint16 stands for the 16-bit float the param wants, uint8
        # for an fp8 one (NumPy has neither; ml_dtypes' arrays need no help).
        name = a.obj.dtype.name
        if name in ("uint16", "uint8"):
            want = _lib.DTYPE_NAMES.index(self.tensor_params[i].dtype)
            if want in ((_lib.F16, _lib.BF16) if name == "uint16" else (_lib.F8E4M3, _lib.F8E5M2)):
                ts[i].dtype = want

    def _outputs(self, args):
        outs = [args[i].obj for i in self._out_index]
        return outs[0] if len(outs) == 1 else tuple(outs) if outs else None

    # ---- calls ----------------------------------------------------------------

    def __call__(self, *arrays, stream=None, interpret=None, group=None, **named):
        """Runs the kernel.  Arrays go to the tensor params in order, or by
        name; outputs (`out` params) not given are allocated like the first
        array given and returned (one array, or a tuple).  On a GPU the
        launch is asynchronous, on `stream` (a torch/CuPy stream or a
        CUstream as int) or else the arrays' current stream.  interpret=True
        (or BLK_INTERPRET=1) runs the CPU interpreter instead.

        A kernel with symmetric or signal params runs on every rank of a
        torch.distributed group (`group`: a ProcessGroup or its name; the
        default group when None): each rank calls it with its own tensors,
        those of symmetric params from torch's symmetric memory
        (torch.distributed._symmetric_memory.empty), and blk exchanges
        their addresses (symm_mem.rendezvous) for the peer Refs.  In the
        interpreter such a call is a world of one rank; interpret_world
        runs several."""
        if interpret is None:
            interpret = self.interpret
        if interpret is None:
            interpret = interpret_default()
        slots = self._match(arrays, named)
        if _traced(slots):  # inside jax.jit and the like: an XLA custom call
            from .jax import call
            return call(self, *arrays, **named)
        k = self._variant(slots) if self._auto_dtypes else self
        if interpret:
            return k._interpret(slots)
        return k._launch(slots, stream, group)

    def _launch(self, slots, stream, group=None):
        if self._auto_dtypes:  # blk.autotune's winners come here straight
            return self._variant(slots)._launch(slots, stream, group)
        given = [from_array(a) if a is not None else None for a in slots]
        first = next(a for a in given if a is not None)
        device = first.device
        if device == HOST:
            raise BlkError(f"kernel {self.name}: the arrays are in host memory; pass GPU "
                           "arrays, or interpret=True to run in the interpreter")
        guard = _device_guard(first.framework, device)
        if guard is None:
            return self._launch_on(slots, stream, given, device, group)
        with guard:
            return self._launch_on(slots, stream, given, device, group)

    def _launch_on(self, slots, stream, given, device, group=None):
        loaded = self._loaded.get(device) or self._load(device)
        rt = loaded.rt
        args, ts = self._args(slots, loaded.func, rt, given)
        for a in args:
            if a.device != device:
                self._wrong_device(args, device)
        world = self._peers(args, ts, group)
        s = _stream_of(stream, args, device)
        with rt.lock:
            if world and not _lib.lib.blk_runtime_set_world(rt.ptr, *world):
                raise rt.error()
            ok = _lib.lib.blk_launch(loaded.func, ts, len(args), s)
            if ok and stream is None and args[0].framework == "jax":
                ok = _lib.lib.blk_stream_synchronize(rt.ptr, s)
            if not ok:
                raise rt.error()
        return self._outputs(args)

    def _peers(self, args, ts, group):
        """For symmetric params: each tensor's table of every rank's address
        (torch's symmetric memory), and (rank, world); for a kernel that only
        asks my_rank() or world(), the group's; None for a kernel of one GPU."""
        sym = [i for i, p in enumerate(self.tensor_params) if p.symmetric]
        if not sym:
            return _group_world(group, self.name) if self.multi_rank else None
        world = None
        for i in sym:
            p, a = self.tensor_params[i], args[i]
            if a.framework != "torch":
                raise BlkError(f"kernel {self.name}: {p.name} is {p.symmetric}: pass a torch tensor "
                               "from torch.distributed._symmetric_memory.empty")
            h = _rendezvous(a.obj, group, self.name, p.name)
            ts[i].peers = h.buffer_ptrs_dev
            if world is not None and world != (h.rank, h.world_size):
                raise BlkError(f"kernel {self.name}: {p.name}'s group differs from the others'")
            world = (h.rank, h.world_size)
        return world

    def interpret_world(self, ranks):
        """Runs the kernel in the interpreter as a world of len(ranks) ranks,
        one thread each: ranks[r] holds rank r's arrays, a list (in param
        order) or a dict (by name), as a call takes them.  Symmetric and
        signal params are plain arrays here: the interpreter reaches every
        rank's.  Returns each rank's outputs, as a call returns them; a
        deadlock between the ranks raises BlkError naming each wait."""
        if not ranks:
            raise BlkError(f"kernel {self.name}: interpret_world needs at least one rank")
        loaded = self._load(HOST)
        rt = loaded.rt
        per = []
        for r, given in enumerate(ranks):
            arrays, named = (given, {}) if isinstance(given, (list, tuple)) else ((), dict(given))
            slots = self._match(arrays, named)
            if self._auto_dtypes and r == 0:
                return self._variant(slots).interpret_world(ranks)
            host = [_to_host(a) for a in slots]
            for p, a in zip(self.tensor_params, slots):
                if a is not None and p.access != "in":
                    check_output(self.name, p.name, a)
            args, ts = self._args(host, loaded.func, rt)
            per.append((slots, args, ts))
        tps = (ctypes.POINTER(_lib.Tensor) * len(per))(
            *[ctypes.cast(ts, ctypes.POINTER(_lib.Tensor)) for _, _, ts in per])
        with rt.lock:
            sys.stdout.flush()
            if not _lib.lib.blk_interpret_world(loaded.func, len(per), tps, len(self.tensor_params)):
                raise rt.error()
        results = []
        for slots, args, _ in per:
            outs = []
            for orig, a, p in zip(slots, args, self.tensor_params):
                if orig is not None and a.obj is not orig and p.access != "in":
                    _copy_back(orig, a.obj)
                outs.append(orig if orig is not None else _like_first(a.obj, slots))
            results.append(self._outputs([_Obj(o) for o in outs]))
        return results

    def _wrong_device(self, args, device):
        for p, a in zip(self.tensor_params, args):
            if a.device != device:
                where = "the host" if a.device == HOST else "GPU %d" % a.device
                raise BlkError(f"kernel {self.name}: {p.name} is on {where}, "
                               f"the first array on GPU {device}")

    def compile(self, *arrays, **named):
        """Compiles for these arrays without launching (works without a GPU
        on host arrays: the arch is $BLK_ARCH, else sm_90a) and returns what
        it compiled to: a dict with ptx, entry, arch, threads, smem_bytes,
        grid and cached."""
        slots = self._match(arrays, named)
        if self._auto_dtypes:
            return self._variant(slots).compile(*slots)
        first = from_array(next(a for a in slots if a is not None))
        loaded = self._load(first.device)
        args, ts = self._args(slots, loaded.func, loaded.rt)
        info = _lib.CompiledInfo()
        with loaded.rt.lock:
            if not _lib.lib.blk_func_compile(loaded.func, ts, len(args), ctypes.byref(info)):
                raise loaded.rt.error(CompileError)
        return {"ptx": _lib.text(info.ptx), "entry": _lib.text(info.entry),
                "arch": _lib.text(info.arch), "threads": info.threads,
                "smem_bytes": info.smem_bytes, "grid": tuple(info.grid), "cached": info.cached,
                "config": _lib.text(info.config)}

    def search(self, *arrays, max=12, **named):
        """The search space for these arrays, ranked by blk's cost model: up
        to `max` configurations (dicts of compile-time parameters) of the int
        parameters this kernel leaves open and uses as sizes, and num_warps
        and num_stages, the best first; [] when nothing is open.  What
        blk.autotune times when given no configs.  Works without a GPU."""
        slots = self._match(arrays, named)
        if self._auto_dtypes:
            return self._variant(slots).search(*slots, max=max)
        if not isinstance(max, int) or max < 1:
            raise BlkError(f"kernel {self.name}: search(max={max!r}): max is how many "
                           "configurations to return, an int of 1 or more")
        max = min(max, 1 << 16)  # a C int, and more than any search space holds
        first = from_array(next(a for a in slots if a is not None))
        loaded = self._load(first.device)
        args, ts = self._args(slots, loaded.func, loaded.rt)
        out = (ctypes.c_char_p * max)()
        with loaded.rt.lock:
            n = _lib.lib.blk_func_search(loaded.func, ts, len(args), out, max)
            if n < 0:
                raise loaded.rt.error(CompileError)
        return [_parse_config(_lib.text(out[i])) for i in range(n)]

    def bind(self, *arrays, **named):
        """The launch sizes these arrays bind, as a dict {"M": 128, ...}
        (checked as a launch checks them)."""
        slots = self._match(arrays, named)
        if self._auto_dtypes:
            return self._variant(slots).bind(*slots)
        loaded = self._load(HOST)
        args, ts = self._args(slots, loaded.func, loaded.rt)
        values = (ctypes.c_int64 * max(len(self.sizes), 1))()
        with loaded.rt.lock:
            if not _lib.lib.blk_func_bind(loaded.func, ts, len(args), values):
                raise loaded.rt.error()
        return dict(zip(self.sizes, values))

    def cache_stats(self, device=0):
        """What the kernel's program on `device` (HOST = -1: the interpreter's
        and compile()'s offline runtime) did: {"compiles", "hits" (in
        memory), "disk_hits"}; for a kernel with "auto" dtypes, summed over
        the dtypes it was called with."""
        if self._auto_dtypes:
            stats = [k.cache_stats(device) for k in list(self._variants.values())]
            return {key: sum(st[key] for st in stats) for key in ("compiles", "hits", "disk_hits")}
        loaded = self._loaded.get(device)
        if loaded is None:
            return {"compiles": 0, "hits": 0, "disk_hits": 0}
        c, h = ctypes.c_uint(), ctypes.c_uint()
        _lib.lib.blk_program_cache_stats(loaded.prog, ctypes.byref(c), ctypes.byref(h))
        return {"compiles": c.value, "hits": h.value,
                "disk_hits": _lib.lib.blk_program_disk_hits(loaded.prog)}

    def _interpret(self, slots):
        """The interpreter on host copies: NumPy arrays are used in place,
        others (torch tensors, on any device) are copied to the host and the
        results copied back into the outputs."""
        host = [_to_host(a) for a in slots]
        for p, a in zip(self.tensor_params, slots):
            if a is not None and p.access != "in":
                check_output(self.name, p.name, a)
        loaded = self._load(HOST)
        rt = loaded.rt
        args, ts = self._args(host, loaded.func, rt)
        with rt.lock:
            sys.stdout.flush()
            if not _lib.interpret(rt.ptr, loaded.func, ts, len(args)):
                raise rt.error()
        outs = []
        for orig, a, p in zip(slots, args, self.tensor_params):
            if orig is not None and a.obj is not orig and p.access != "in":
                _copy_back(orig, a.obj)
            outs.append(orig if orig is not None else _like_first(a.obj, slots))
        return self._outputs([_Obj(o) for o in outs])


class _Obj:
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def _group_world(group, kernel):
    """(rank, world) of this process in a torch.distributed group (the
    default group when None)."""
    try:
        import torch.distributed as dist
    except ImportError as e:
        raise BlkError(f"kernel {kernel} asks my_rank() or world(): it needs torch.distributed: {e}")
    if not dist.is_initialized():
        raise BlkError(f"kernel {kernel} asks my_rank() or world(), but torch.distributed is not "
                       "initialized (dist.init_process_group first)")
    if isinstance(group, str):
        raise BlkError(f"kernel {kernel}: pass group= as a ProcessGroup for a kernel without "
                       "symmetric params")
    return dist.get_rank(group), dist.get_world_size(group)


def _rendezvous(t, group, kernel, param):
    """torch's symmetric-memory handle of t's allocation in group (a
    collective the first time: every rank's call of the kernel makes it)."""
    try:
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm
    except ImportError as e:
        raise BlkError(f"kernel {kernel}: {param} needs torch.distributed's symmetric memory: {e}")
    if group is None:
        if not dist.is_initialized():
            raise BlkError(f"kernel {kernel}: {param} is symmetric, but torch.distributed is not "
                           "initialized (dist.init_process_group first)")
        group = dist.group.WORLD
    name = group if isinstance(group, str) else group.group_name
    try:
        return symm.rendezvous(t, name)
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError and others
        raise BlkError(f"kernel {kernel}: {param}: torch's symmetric memory refused the tensor "
                       f"(allocate it with torch.distributed._symmetric_memory.empty and call "
                       f"enable_symm_mem_for_group for its group): {str(e).splitlines()[0]}")


def infer_shapes(k, given, values, check):
    """Every param's shape, blk's for the outs, when the given arrays'
    dims are `values` (values[i]: param i's (shape, strides), None for an
    out) -- for frameworks that trace without data (torch's fake tensors,
    JAX's tracers).  With check, the whole launch check too (dtypes, ranks,
    strides), on stand-in addresses."""
    n = len(k.tensor_params)
    ts = (_lib.Tensor * n)()
    for i, v in enumerate(values):
        if v is None:
            ts[i].rank = -1
            continue
        shape, strides = v
        if len(shape) > _lib.MAX_RANK:
            raise BlkError(f"kernel {k.name}: {k.tensor_params[i].name} has rank {len(shape)}; "
                           f"blk takes arrays of rank {_lib.MAX_RANK} at most")
        ts[i].dtype = dtype_of(given[i])
        ts[i].rank = len(shape)
        ts[i].shape[:len(shape)] = shape
        ts[i].strides[:len(shape)] = strides
    loaded = k._load(HOST)
    rt = loaded.rt
    with rt.lock:
        if not _lib.lib.blk_func_infer_shapes(loaded.func, ts, n):
            raise rt.error()
        if check:
            # Launch-time checks read the addresses (NULL is refused) but
            # nothing at them: each tensor gets a stand-in far from the others.
            for i in range(n):
                ts[i].data = (i + 1) << 40
            values_out = (ctypes.c_int64 * max(len(k.sizes), 1))()
            if not _lib.lib.blk_func_bind(loaded.func, ts, n, values_out):
                raise rt.error()
    return [tuple(ts[i].shape[d] for d in range(ts[i].rank)) for i in range(n)]


def _traced(slots):
    """Whether a JAX tracer is among the arrays (checked on JAX's types
    only: a torch call pays a string test)."""
    for a in slots:
        if a is not None and type(a).__module__.startswith("jax"):
            jax = sys.modules.get("jax")  # an array of jaxlib's alone is no tracer
            return jax is not None and any(isinstance(b, jax.core.Tracer) for b in slots)
    return False


def _device_guard(framework, device):
    """The framework's own "current device" scope for a launch on another
    GPU than its current one, or None.  libblk makes the device's primary
    context current; torch (and CuPy) take their current device from the
    current context, so without the scope a launch on GPU 1 would move the
    caller's next allocations there.  The scope restores theirs after."""
    if framework == "torch":
        torch = sys.modules["torch"]
        return torch.cuda.device(device) if torch.cuda.current_device() != device else None
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        return cupy.cuda.Device(device) if cupy.cuda.runtime.getDevice() != device else None
    return None


def _torch_stream(device):
    """torch's current stream on device as a CUstream.  The raw query (what
    Triton's launcher uses) skips making a Stream object per launch."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device) if raw else torch.cuda.current_stream(device).cuda_stream


def _stream_of(stream, args, device):
    """The CUstream of a launch: the one given, else torch's or CuPy's
    current stream for their arrays, else the default stream."""
    if stream is not None:
        for attr in ("cuda_stream", "ptr"):
            if hasattr(stream, attr):
                return getattr(stream, attr)
        return int(stream)
    fw = args[0].framework
    if fw == "torch":
        return _torch_stream(device)
    if fw == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    # Anything else (JAX: it orders its work on streams unseen here) goes on
    # the default stream, and a JAX launch is waited for (_launch).
    return None


def _to_host(x):
    if x is None or _module_name(x) == "numpy":
        return x
    if _module_name(x) == "torch":
        t = x.detach()
        if str(t.dtype) == "torch.bfloat16":
            torch = sys.modules["torch"]
            return t.view(torch.int16).cpu().numpy().view("uint16")
        return t.cpu().numpy()
    if hasattr(x, "get"):  # CuPy
        return x.get()
    import numpy as np
    return np.asarray(x)


def _copy_back(dst, host):
    if _module_name(dst) == "torch":
        torch = sys.modules["torch"]
        bits = host.dtype.name in ("uint16", "bfloat16")
        src = torch.from_numpy(host.view("int16") if bits else host)
        if str(dst.dtype) == "torch.bfloat16":
            dst.view(torch.int16).copy_(src)
        else:
            dst.copy_(src)
    else:
        raise BlkError(f"interpret mode cannot write back into a {type(dst).__name__}: "
                       "pass NumPy arrays or torch tensors")


def _like_first(host_out, slots):
    """An interpreted output for a caller who passed torch tensors is a
    torch tensor on their device; for NumPy callers, the NumPy array."""
    first = next(a for a in slots if a is not None)
    if _module_name(first) != "torch":
        return host_out
    torch = sys.modules["torch"]
    if host_out.dtype.name in ("uint16", "bfloat16"):
        return torch.from_numpy(host_out.view("int16")).view(torch.bfloat16).to(first.device)
    return torch.from_numpy(host_out).to(first.device)


def _param_dtypes(func):
    """A loaded kernel's tensor params' dtypes (blk.h codes)."""
    dts = []
    for i in range(_lib.lib.blk_func_num_tensors(func)):
        pi = _lib.ParamInfo()
        _lib.lib.blk_func_param(func, i, ctypes.byref(pi))
        dts.append(pi.dtype)
    return dts


def _module_name(x):
    return type(x).__module__.split(".")[0]


def _parse_config(text):
    """"BM=128,num_warps=8" as {"BM": 128, "num_warps": 8} (the search's ints)."""
    return {k: int(v) for k, v in (kv.split("=", 1) for kv in text.split(","))}


def kernel(src, name=None, interpret=None, **params):
    """A kernel of a .blk file (a path) or source text, with compile-time
    parameters: `blk.kernel("examples/matmul.blk", T="bf16", BM=128)`."""
    return Kernel(src, name=name, interpret=interpret, **params)
