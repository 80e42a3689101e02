"""blk.autotune: the fastest of candidate configurations, per key, kept on disk.

    mm = blk.autotune("examples/matmul.blk",
                      configs=[dict(BM=64, BN=64, BK=32, num_warps=4),
                               dict(BM=128, BN=128, BK=32, num_warps=8)],
                      key=["M", "N", "K"], T="bf16")
    c = mm(a, b)

The first call with a new key (the values of the named sizes, the arrays'
dtypes, the GPU's arch) times every candidate on the call's own arrays,
on its stream, with CUDA events (`warmup` launches, then the median of
`reps`), keeps the fastest, and writes the result to the cache directory
(`tune/` under blk's disk cache): a later process with the same kernel,
configs and key launches the winner at once.  Candidates that do not
compile or that the GPU refuses are skipped with the reason in `results`.
Every candidate writes the outputs while timed, so a kernel that reads its
outputs (inout) should be tuned on scratch copies.

Without `configs` (`blk.autotune("examples/matmul.blk", T="bf16")`), each
new key's candidates are blk's own search space for its arrays
(`Kernel.search`): the int parameters the kernel uses as sizes and leaves
open, and num_warps and num_stages, ranked by the cost model, the best
`search` of them timed.

In interpret mode nothing is timed: the first candidate runs (without
configs: the kernel as given, its `auto` parameters at their stand-ins).
"""
import ctypes
import hashlib
import json
import stat
import os
import statistics
import sys
import tempfile
import time

from . import _lib
from ._arrays import HOST, BlkError, from_array
from ._kernel import Kernel, _device_guard, _stream_of, interpret_default, runtime


def cache_dir():
    """blk's disk cache directory ($BLK_CACHE_DIR, else $XDG_CACHE_HOME/blk,
    else ~/.cache/blk), or None when BLK_CACHE=0: the rule of libblk's
    blk_runtime_cache_dir, read from the environment at each call."""
    env = os.environ
    if env.get("BLK_CACHE") == "0":
        return None
    if env.get("BLK_CACHE_DIR"):
        return env["BLK_CACHE_DIR"]
    if env.get("XDG_CACHE_HOME"):
        return os.path.join(env["XDG_CACHE_HOME"], "blk")
    return os.path.join(env["HOME"], ".cache", "blk") if env.get("HOME") else None


# Winners remembered per call signature, at most this many (then forgotten
# and found again through the key): a tuned call costs what a plain call does.
_MAX_WINNERS = 4096


def _signature(slots):
    """What decides a call's tuning key, read cheaply: each array's type,
    shape and dtype (the key's sizes come from the shapes), and the first
    array's device (a launch needs every array on it).  None when it cannot
    be read: the call takes the full path."""
    try:
        first = next(a for a in slots if a is not None)
        d = getattr(first, "device", None)
        sig = [None if callable(d) else d]
        for a in slots:
            sig.append(None if a is None else (type(a), a.shape, a.dtype))
        return tuple(sig)
    except (AttributeError, StopIteration):
        return None


class Autotuned:
    """A kernel with candidate configurations; call it like a Kernel."""

    def __init__(self, src, configs=None, key=None, name=None, warmup=2, reps=10, search=12,
                 **params):
        if configs is not None and not configs:
            raise BlkError("autotune needs at least one configuration (or none given at all: "
                           "blk's own search space)")
        _check_args(configs, key, warmup, reps, search)
        self.derived = configs is None  # per key: the model's best `search` of the space
        self.search = search
        self.configs = [] if self.derived else [dict(c) for c in configs]
        self.base = Kernel(src, name=name, **params)
        if any(p.symmetric == "signal" for p in self.base.tensor_params):
            raise BlkError(f"autotune: kernel {self.base.name} signals other ranks (signal "
                           "params): one rank's timed launches would wait for the others; "
                           "give its parameters values, or `auto` (the cost model's choice, the "
                           "same on every rank)")
        self.kernels = [None] * len(self.configs)
        unknown = [k for k in (key or []) if k not in self.base.sizes]
        if unknown:
            raise BlkError(f"autotune key {unknown} names no size of kernel {self.base.name} "
                           f"(its sizes: {', '.join(self.base.sizes) or 'none'})")
        self.key = list(key) if key is not None else list(self.base.sizes)
        self.warmup, self.reps = warmup, reps
        self.results = {}  # key string -> {"config": i, "params": {...}, "ms": ..., "timings": [...]}
        self._winners = {}  # call signature -> the winning Kernel (_signature)
        self._file = self._results_file()
        self._read()

    # ---- identity and persistence ------------------------------------------------

    def _results_file(self):
        d = cache_dir()
        if not d:
            return None
        b = self.base
        text = b.source if b.path is None else open(b.path, encoding="utf-8",
                                                       errors="replace").read()
        ident = json.dumps([_lib.text(_lib.lib.blk_version()), text, b.name,
                            sorted(b.params.items(), key=str),
                            "derived" if self.derived else
                            [sorted(c.items(), key=str) for c in self.configs],
                            self.key, self.warmup, self.reps], default=str)
        return os.path.join(d, "tune", hashlib.sha256(ident.encode()).hexdigest() + ".json")

    def _read(self):
        if not self._file:
            return
        try:
            # a regular file only, opened without blocking (a FIFO put in
            # its place must not hang the constructor), of a sane size
            fd = os.open(self._file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > (64 << 20):
                    return
                data = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return  # none yet, or damaged (deeply nested too): tuned again and rewritten
        if isinstance(data, dict):
            for k, v in data.items():
                if self.derived and isinstance(v, dict) and isinstance(v.get("params"), dict):
                    v = dict(v, config=self._add_config(v["params"]))
                if isinstance(v, dict) and isinstance(v.get("config"), int) \
                        and 0 <= v["config"] < len(self.configs):
                    self.results.setdefault(k, v)

    def _add_config(self, params):
        """The index of params among the configs, appended if new."""
        params = dict(params)
        if params not in self.configs:
            self.configs.append(params)
            self.kernels.append(None)
        return self.configs.index(params)

    def _write(self):
        if not self._file:
            return
        d = os.path.dirname(self._file)
        try:
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".tune.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.results, f, indent=1, sort_keys=True)
            os.replace(tmp, self._file)  # whole or not at all, for every reader
        except OSError:
            pass  # a cache that cannot be written only costs a tuning run

    # ---- calls -----------------------------------------------------------------

    def kernel(self, i):
        """Candidate i as a Kernel."""
        if self.kernels[i] is None:
            self.kernels[i] = self.base.with_params(**self.configs[i])
        return self.kernels[i]

    def key_of(self, *arrays, **named):
        """The tuning key of a call: the key sizes, the dtypes, the arch."""
        slots = self.base._match(arrays, named)
        if any(a is None for a in slots):  # `None in` compares arrays elementwise
            slots = self._with_outputs(slots)
        sizes = self.base.bind(*slots)
        dev = from_array(slots[0]).device
        arch = runtime(dev).arch if dev != HOST else "host"
        dts = ",".join(p.dtype for p in self.base._variant(slots).tensor_params)
        return ",".join(f"{k}={sizes[k]}" for k in self.key) + f";{dts};{arch}"

    def _with_outputs(self, slots):
        """The arrays with the outputs not given allocated."""
        b = self.base._variant(slots)  # "auto" dtypes: the one of these arrays
        loaded = b._load(from_array(next(a for a in slots if a is not None)).device)
        args, _ = b._args(slots, loaded.func, loaded.rt)
        return [a.obj for a in args]

    def best(self, *arrays, **named):
        """The winning configuration for these arrays' key, or None if that
        key has not been tuned."""
        r = self.results.get(self.key_of(*arrays, **named))
        return dict(self.configs[r["config"]]) if r else None

    def __call__(self, *arrays, stream=None, interpret=None, **named):
        if interpret is None:  # as Kernel: the constructor's interpret=, then BLK_INTERPRET
            interpret = self.base.interpret
        if interpret is None:
            interpret = interpret_default()
        if interpret:
            k = self.base if self.derived else self.kernel(0)
            return k(*arrays, interpret=True, **named)
        given = self.base._match(arrays, named)
        sig = _signature(given)
        try:
            k = self._winners.get(sig) if sig is not None else None
        except TypeError:  # an unhashable shape or dtype
            k = sig = None
        if k is None:
            k = self._winner(given, stream)
            if sig is not None:
                if len(self._winners) >= _MAX_WINNERS:
                    self._winners.clear()
                self._winners[sig] = k
        return k._launch(given, stream)

    def _winner(self, given, stream):
        """The winning candidate for these arrays' key, tuned first if the
        key is new (on the arrays, outputs allocated where not given)."""
        slots = self._with_outputs(given)
        key = self.key_of(*slots)
        r = self.results.get(key)
        if r is None:
            first = from_array(slots[0])
            guard = _device_guard(first.framework, first.device)
            if guard is None:
                r = self._tune(slots, stream)
            else:
                with guard:
                    r = self._tune(slots, stream)
            self.results[key] = r
            self._write()
        return self.kernel(r["config"])

    def _candidates(self, slots):
        """The configs timed for these arrays: all given, or the search's."""
        if not self.derived:
            return list(range(len(self.configs)))
        found = self.base.search(*slots, max=self.search)
        if not found:
            raise BlkError(f"autotune: kernel {self.base.name} leaves no int parameter used as a "
                           "size, nor num_warps or num_stages, open to search; give configs")
        return [self._add_config(c) for c in found]

    def _tune(self, slots, stream):
        cands = self._candidates(slots)
        timings, notes = [None] * len(self.configs), {}
        report = _Report(self.base.name, len(cands))
        for n, i in enumerate(cands):
            try:
                timings[i] = self._time(self.kernel(i), slots, stream)
            except BlkError as e:  # CompileError included
                notes[str(i)] = str(e).splitlines()[0]
            report.candidate(n + 1, self.configs[i], timings[i], notes.get(str(i)))
        report.done()
        timed = [i for i, t in enumerate(timings) if t is not None]
        if not timed:
            raise BlkError("autotune: no candidate ran:\n" + "\n".join(
                f"  [{i}] {self.configs[int(i)]}: {n}" for i, n in notes.items()))
        best = min(timed, key=lambda i: timings[i])
        return {"config": best, "params": self.configs[best], "ms": timings[best],
                "timings": timings, "skipped": notes}

    def _time(self, k, slots, stream):
        for _ in range(self.warmup):
            k(*slots, stream=stream)
        dev = from_array(slots[0]).device
        rt = runtime(dev)
        s = _stream_of(stream, [from_array(a) for a in slots], dev)
        timer = _lib.lib.blk_timer_create(rt.ptr)
        if not timer:
            raise rt.error()
        busy = _busy_gpu(slots, stream)
        try:
            ms, out = [], ctypes.c_float()
            for _ in range(self.reps):
                busy()
                with rt.lock:
                    if not _lib.lib.blk_timer_start(timer, s):
                        raise rt.error()
                k(*slots, stream=stream)
                with rt.lock:
                    if not (_lib.lib.blk_timer_stop(timer, s)
                            and _lib.lib.blk_timer_elapsed_ms(timer, ctypes.byref(out))):
                        raise rt.error()
                ms.append(out.value)
        finally:
            _lib.lib.blk_timer_destroy(timer)
        return statistics.median(ms)


class _Report:
    """What a tune says while it runs, on stderr: with BLK_TUNE_LOG=1 a line
    per candidate (its config and median, or why it was skipped) and the
    winner, as the C tuner's log; otherwise, on a terminal, one progress
    line rewritten in place once the tune has taken PROGRESS_AFTER seconds
    (BLK_PROGRESS=0 silences it, =1 shows it off a terminal too)."""

    PROGRESS_AFTER = 2.0

    def __init__(self, name, total):
        self.name, self.total, self.t0 = name, total, time.monotonic()
        self.best, self.shown = None, False
        log = os.environ.get("BLK_TUNE_LOG", "")
        self.log = log not in ("", "0")
        progress = os.environ.get("BLK_PROGRESS", "")
        self.progress = not self.log and (progress not in ("", "0") or
                                          (progress == "" and _isatty(sys.stderr)))

    def candidate(self, n, config, ms, skipped):
        if ms is not None and (self.best is None or ms < self.best[0]):
            self.best = (ms, config)
        if self.log:
            what = f"{ms:.4f} ms" if ms is not None else f"skipped: {skipped}"
            print(f"blk.autotune {self.name}: [{n}/{self.total}] {_config_text(config)}: {what}",
                  file=sys.stderr, flush=True)
        elif self.progress and time.monotonic() - self.t0 >= self.PROGRESS_AFTER:
            best = (f", best {self.best[0]:.4f} ms ({_config_text(self.best[1])})"
                    if self.best else "")
            print(f"\rblk.autotune {self.name}: {n}/{self.total} candidates, "
                  f"{time.monotonic() - self.t0:.1f} s{best}\033[K", end="", file=sys.stderr,
                  flush=True)
            self.shown = True

    def done(self):
        if self.log and self.best is not None:
            print(f"blk.autotune {self.name}: best {_config_text(self.best[1])}, "
                  f"{self.best[0]:.4f} ms", file=sys.stderr, flush=True)
        if self.shown:
            print(file=sys.stderr, flush=True)


def _check_args(configs, key, warmup, reps, search):
    """autotune's arguments, each named when wrong (reps=0 was a
    StatisticsError at the first call, key="MN" the sizes M and N, a config
    given as "BM=64" a ValueError)."""
    if configs is not None and (not isinstance(configs, (list, tuple)) or not all(
            isinstance(c, dict) and all(isinstance(n, str) for n in c) for c in configs)):
        raise BlkError(f"autotune: configs={configs!r}: give a list of dicts, as "
                       "[dict(BM=64, num_warps=4), dict(BM=128, num_warps=8)]")
    if key is not None and (not isinstance(key, (list, tuple)) or
                            not all(isinstance(n, str) for n in key)):
        raise BlkError(f"autotune: key={key!r}: give a list of size names, as key=[\"M\", \"N\"]")
    for name, v, least in (("warmup", warmup, 0), ("reps", reps, 1), ("search", search, 1)):
        if not isinstance(v, int) or isinstance(v, bool) or v < least:
            raise BlkError(f"autotune: {name}={v!r}: give an int of {least} or more")


def _isatty(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _config_text(config):
    return ",".join(f"{k}={v}" for k, v in config.items())


def _busy_gpu(slots, stream):
    """Something that keeps the GPU busy for a while on the timed stream,
    so that the host's launch of the timed kernel is queued before the GPU
    reaches it: the events then time the kernel, not the gap a Python call
    leaves (20 us, more than a small kernel takes; run 138 picked a config
    at 0.44 of the best at 1024^3 so).  PyTorch's spin kernel on its current
    stream where the arrays are torch's and no other stream is given;
    else nothing."""
    first = from_array(slots[0])
    if first.framework == "torch" and stream is None:
        import torch  # the arrays are torch's: it is loaded already
        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is not None:
            return lambda: sleep(_SPIN_CYCLES)
    return lambda: None


# ~0.1 ms at Hopper's clocks: longer than a Python launch takes
_SPIN_CYCLES = 200_000


def autotune(src, configs=None, key=None, name=None, warmup=2, reps=10, search=12, **params):
    """A kernel tuned over `configs` (dicts of compile-time parameters; None:
    blk's search space, its best `search` by the cost model) per `key`
    (names of launch sizes; default all of them).  See the module doc."""
    return Autotuned(src, configs, key=key, name=name, warmup=warmup, reps=reps, search=search,
                     **params)
