"""blk.torch: blk kernels as PyTorch custom operators.

    import blk, blk.torch
    mm = blk.torch.op(blk.kernel("examples/matmul.blk", T="auto"), name="mylib::matmul")
    c = mm(a, b)    # eager, and inside torch.compile(fullgraph=True), torch.export, CUDA graphs

An op is a `torch.library` custom operator around one kernel: torch sees it
as one opaque call whose outputs' shapes and dtypes come from blk's own
rules (the sizes the inputs bind, the params' dtypes), so tracing runs no
kernel.  `autograd(forward, backward)` gives an op its backward.  This
module imports torch; `import blk` alone does not.  See docs/python.md.
"""
import hashlib
import os
import re
import threading

try:
    import torch
except ImportError as e:
    raise ImportError(f"blk.torch needs PyTorch (pip install torch): {e}") from e

from ._arrays import BlkError, _contiguous
from ._kernel import Kernel, infer_shapes

__all__ = ["op", "autograd", "Op"]

_lock = threading.Lock()
_ops = {}  # "namespace::name" -> Op: each name is registered with torch once

_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                 "i32": torch.int32, "bool": torch.bool, "i8": torch.int8, "u8": torch.uint8,
                 "f8e4m3": getattr(torch, "float8_e4m3fn", None),
                 "f8e5m2": getattr(torch, "float8_e5m2", None),
                 "u32": getattr(torch, "uint32", None)}


class Op:
    """A blk kernel registered as a torch custom op (see `op`).  Call it with
    the kernel's `in` and `inout` arrays, in order or by name; it returns
    what the op returns: the `out` arrays (and, unless inplace, the new
    values of the `inout` ones), one tensor, a tuple, or None."""

    def __init__(self, kernel, name, inplace, key):
        self.kernel = kernel
        self.name = name
        self.inplace = inplace
        self.backward = None  # set by autograd()
        self._key = key
        params = kernel.tensor_params
        self.inputs = [p.name for p in params if p.access != "out"]
        # What the op returns, in param order: outs, and inouts' new values
        # unless they are updated in place.
        self.returns = [p.name for p in params
                        if p.access == "out" or (p.access == "inout" and not inplace)]
        self._in_index = [i for i, p in enumerate(params) if p.access != "out"]
        args = ", ".join(f"Tensor{'(a%d!)' % i if inplace and params[j].access == 'inout' else ''} "
                         f"{params[j].name}" for i, j in enumerate(self._in_index))
        n = len(self.returns)
        rets = "()" if n == 0 else "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
        self.schema = f"({args}) -> {rets}"
        mutated = [p.name for p in params if inplace and p.access == "inout"]
        try:
            self._def = torch.library.custom_op(name, self._run, mutates_args=mutated,
                                                schema=self.schema)
        except Exception as e:  # noqa: BLE001 - torch raises RuntimeError, ValueError
            raise BlkError(f"blk.torch.op: torch refused to register {name!r} ({self.schema}): "
                           f"{str(e).splitlines()[0]} -- give another name") from None
        self._def.register_fake(self._fake)
        ns, opname = name.split("::")
        self.overload = getattr(getattr(torch.ops, ns), opname).default

    def __repr__(self):
        return f"blk.torch.op({self.kernel!r}, name={self.name!r}, inplace={self.inplace})"

    def __call__(self, *args, **named):
        if named or len(args) != len(self.inputs):
            args = self._by_name(args, named)
        return self.overload(*args)

    def _by_name(self, args, named):
        if len(args) > len(self.inputs):
            raise BlkError(f"op {self.name} takes {len(self.inputs)} inputs "
                           f"({', '.join(self.inputs)}), got {len(args)}")
        slots = list(args) + [None] * (len(self.inputs) - len(args))
        for key, value in named.items():
            if key not in self.inputs:
                raise BlkError(f"op {self.name} has no input {key!r} (its inputs: "
                               f"{', '.join(self.inputs)})")
            i = self.inputs.index(key)
            if slots[i] is not None:
                raise BlkError(f"op {self.name}: input {key!r} given twice")
            slots[i] = value
        missing = [n for n, a in zip(self.inputs, slots) if a is None]
        if missing:
            raise BlkError(f"op {self.name}: missing input {missing[0]!r}")
        return slots

    def _slots(self, args):
        """The kernel's arrays: the op's inputs at their params, None at the
        outs (allocated by the call)."""
        slots = [None] * len(self.kernel.tensor_params)
        for i, a in zip(self._in_index, args):
            slots[i] = a
        return slots

    def _result(self, slots, outs):
        """The op's return value from the kernel's outs and the inouts."""
        got, it = [], iter(outs)
        for p, a in zip(self.kernel.tensor_params, slots):
            if p.access == "out":
                got.append(next(it))
            elif p.access == "inout" and not self.inplace:
                got.append(a)
        return None if not got else got[0] if len(got) == 1 else tuple(got)

    def _run(self, *args):
        """The op on real tensors: the kernel's launch on a GPU, the
        interpreter on CPU tensors (or when the kernel says interpret)."""
        slots = self._slots(args)
        if not self.inplace:  # a functional op leaves its inputs as they were
            slots = [a.clone() if a is not None and p.access == "inout" else a
                     for p, a in zip(self.kernel.tensor_params, slots)]
        interpret = self.kernel.interpret
        if interpret is None and args[0].device.type != "cuda":
            interpret = True  # a CPU tensor: no GPU to launch on
        outs = self.kernel(*slots, interpret=interpret)
        outs = () if outs is None else outs if isinstance(outs, tuple) else (outs,)
        return self._result(slots, outs)

    def _fake(self, *args):
        """The op on torch's fake tensors (tracing): the outputs' shapes from
        the sizes the inputs bind, their dtypes from the params."""
        slots = self._slots(args)
        k = self.kernel._variant(slots)
        shapes = out_shapes(k, slots)
        dev = args[0].device
        outs = [torch.empty(shapes[i], dtype=_torch_dtype(k, p), device=dev)
                for i, p in enumerate(k.tensor_params) if p.access == "out"]
        if not self.inplace:
            slots = [a.clone() if a is not None and p.access == "inout" else a
                     for p, a in zip(k.tensor_params, slots)]
        return self._result(slots, outs)


def _torch_dtype(k, p):
    dt = _TORCH_DTYPES.get(p.dtype)
    if dt is None:
        raise BlkError(f"op of kernel {k.name}: {p.name} is {p.dtype}, which this torch "
                       f"({torch.__version__}) has no dtype for")
    return dt


# ---- output shapes from blk's rules, symbolic sizes included ---------------------

def _hint(d):
    """The value a (possibly symbolic) dim has in the traced example."""
    if isinstance(d, int):
        return d
    h = d.node.hint
    return int(h) if h is not None else int(d)  # none (data-dependent): torch says why


def out_shapes(k, slots):
    """The shape of each out param (None for the others) when kernel k runs
    on the given arrays (None at the outs): torch tensors whose dims may be
    symbolic (torch.compile's dynamic shapes, torch.export's Dims).

    blk computes shapes from plain values: first each dim's value in the
    traced example (and the launch's checks on them).  A symbolic out dim is
    then named by probing: the symbols are moved and blk asked again.  A
    symbol that cannot move alone is tied by a size to others of its value
    (export names a's K and b's K apart), and moves with them.  With each
    such class moved by its own distance, an out dim that moved exactly as
    an input dim did is that dim, one that did not move is a constant.
    Where that fails (an out dim that is an expression of sizes, a symbol
    tied to a constant), the symbols are specialized -- torch guards on
    their values -- and the plain shapes used."""
    dims = [None if a is None else (list(a.shape), list(a.stride())) for a in slots]
    symbolic = [d for v in dims if v for d in v[0] + v[1] if not isinstance(d, int)]
    plain = [None if v is None else ([_hint(d) for d in v[0]], [_hint(d) for d in v[1]])
             for v in dims]
    base = infer_shapes(k, slots, plain, check=True)
    outs = [i for i, p in enumerate(k.tensor_params) if p.access == "out"]
    shapes = [None] * len(slots)
    named = _symbolic_outs(k, slots, dims, symbolic, base, outs) if symbolic else None
    for i in outs:
        shapes[i] = named[i] if named else base[i]
    if symbolic and not named:
        for d in symbolic:
            int(d)  # torch guards on this value from here on
    return shapes


def _symbolic_outs(k, slots, dims, symbolic, base, outs):
    """{out param: shape of SymInts and ints}, or None when the probes
    cannot name every out dim (see out_shapes)."""
    try:
        syms = {}
        for d in symbolic:
            for sym in d.node.expr.free_symbols:
                syms.setdefault(sym, None)
        env = symbolic[0].node.shape_env
        vals = getattr(env, "backed_var_to_val", None)
        if vals is None:
            vals = env.var_to_val
        hint = {sym: int(vals[sym]) for sym in syms}
    except Exception:  # noqa: BLE001 - another torch's internals, or data-dependent sizes
        return None

    def probe(move):
        """(input shapes, out shapes) with each symbol at its value +
        move.get(symbol, 0); None where blk refuses those shapes."""
        at = {sym: hint[sym] + move.get(sym, 0) for sym in syms}
        moved = [None if v is None else
                 [d if isinstance(d, int) else int(d.node.expr.xreplace(at)) for d in v[0]]
                 for v in dims]
        try:
            return moved, infer_shapes(k, slots, [None if m is None else (m, _contiguous(m))
                                            for m in moved], check=False)
        except BlkError:
            return None

    step = 1009  # far from any example's value: an out dim cannot move so by chance
    classes = [[sym] for sym in syms if probe({sym: step})]
    tied = [sym for sym in syms if not any(sym in c for c in classes)]
    for h in sorted({hint[sym] for sym in tied}):
        group = [sym for sym in tied if hint[sym] == h]
        if len(group) == 1 or not probe({sym: step for sym in group}):
            return None  # tied to a constant, or to an expression: no symbolic answer
        classes += _split(group, probe, step)
    got = probe({sym: step * (j + 1) for j, c in enumerate(classes) for sym in c})
    if got is None:
        return None
    moved, pert = got
    inputs = {}  # (value in the example, value moved) -> an input dim with those
    for v, m in zip(dims, moved):
        if v is not None:
            for d, dm in zip(v[0], m):
                inputs.setdefault((_hint(d), dm), d)
    named = {}
    for i in outs:
        shape = []
        for b, p in zip(base[i], pert[i]):
            d = b if b == p else inputs.get((b, p))
            if d is None:
                return None
            shape.append(d)
        named[i] = tuple(shape)
    return named


def _split(group, probe, step):
    """The classes of symbols (of one value) that blk's sizes tie together,
    none of which moves alone: one class, unless pairs of them move (two
    sizes of the same value, each tying two symbols)."""
    if len(group) < 4:
        return [group]  # two or three symbols none of which moves alone: one class
    left, classes = list(group), []
    while left:
        s = left.pop(0)
        mate = next((t for t in left if probe({s: step, t: step})), None)
        if mate is None:
            # a larger class: all moved together; an out dim of one of its
            # sizes may then take another's symbol of the same value (blk
            # checks at the launch that they agree)
            return [group]
        left.remove(mate)
        classes.append([s, mate])
    return classes


# ---- making ops ---------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*")


def _identity(kernel, inplace):
    """What makes two kernels the same op: source, kernel, params, mode."""
    where = os.path.abspath(kernel.path) if kernel.path else kernel.source
    params = sorted((k, str(v)) for k, v in kernel.params.items())
    return (where, kernel.name, tuple(params), bool(inplace), kernel.interpret)


def op(kernel, name=None, inplace=False):
    """The kernel as a torch custom op named `name` ("namespace::name";
    default "blk::<kernel>_<hash of source and params>").

    The op's inputs are the kernel's `in` and `inout` params, in order; its
    outputs are allocated by the op (shapes from the sizes the inputs bind,
    dtypes from the params).  inplace=False (default): a pure function,
    `inout` arrays are copied and their new values returned after the outs;
    inplace=True: `inout` arrays are updated in place (the op declares them
    mutated) and only the outs are returned.  The kernel's compile-time params
    are the op's; a kernel made with a dtype param "auto" specializes per
    the inputs' dtypes.  CPU tensors run in the interpreter.

    One name, one op: asking again with the same kernel (source, params) and
    mode returns the same Op; another kernel under a taken name is an error."""
    if not isinstance(kernel, Kernel):
        raise BlkError(f"blk.torch.op takes a blk.kernel(...), not a {type(kernel).__name__}"
                       + (" (an autotuned kernel times its candidates, which a traced graph "
                          "cannot do: make the op of blk.kernel with the winner's params, "
                          "mm.best(...))" if type(kernel).__name__ == "Autotuned" else ""))
    if kernel.multi_rank:
        raise BlkError(f"blk.torch.op: kernel {kernel.name} runs across ranks (symmetric or "
                       "signal params, my_rank() or world()): call the kernel itself")
    if not any(p.access != "out" for p in kernel.tensor_params):
        raise BlkError(f"blk.torch.op: kernel {kernel.name} takes no in or inout array, which "
                       "an op needs (its outputs' device and sizes come from the inputs)")
    for dparam, follows in kernel._auto_dtypes.items():
        if all(kernel.tensor_params[i].access == "out" for i in follows):
            outs = ", ".join(kernel.tensor_params[i].name for i in follows)
            raise BlkError(f"blk.torch.op: {dparam}='auto' types only outputs of kernel "
                           f"{kernel.name} ({outs}), which the op allocates: give {dparam}= "
                           "a dtype")
    key = _identity(kernel, inplace)
    if name is None:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
        name = f"blk::{kernel.name}_{digest}"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BlkError(f"blk.torch.op: name {name!r} is not 'namespace::name' (identifiers, "
                       "e.g. 'mylib::matmul')")
    with _lock:
        got = _ops.get(name)
        if got is not None:
            if got._key != key:
                raise BlkError(f"blk.torch.op: {name} is already the op of {got.kernel!r} "
                               f"(inplace={got.inplace}): give this kernel another name")
            return got
        got = _ops[name] = Op(kernel, name, inplace, key)
        return got


# ---- autograd ---------------------------------------------------------------------------

def autograd(forward, backward, save=None, name=None):
    """Gives an op a backward, and returns the op (differentiable from then
    on, eager and under torch.compile).

    forward: an Op, or a blk.kernel (made an op, named `name`), not inplace.
    save: names of the forward's params (in, inout or out) the backward
      needs; default: its inputs.  Saved in that order.
    backward: called as backward(*saved, *grads), grads one per forward
      output (in the op's return order); returns one gradient per forward
      input (None for an input with none).  A blk.kernel (made an op) or an
      Op: its inputs are the saved tensors then the grads, its outputs the
      gradients; or a function of ops and torch calls (under torch.compile
      it is traced, so its blk kernels must be ops)."""
    if isinstance(forward, Op) and name is not None:
        raise BlkError(f"blk.torch.autograd: name={name!r} names the op made of a kernel; "
                       f"the forward is op {forward.name} already")
    fwd = forward if isinstance(forward, Op) else op(forward, name=name)
    if fwd.inplace:
        raise BlkError(f"blk.torch.autograd: op {fwd.name} updates its inout arrays in place: "
                       "make it with inplace=False (its inouts' new values are returned)")
    params = {p.name: p for p in fwd.kernel.tensor_params}
    save = list(fwd.inputs if save is None else ([save] if isinstance(save, str) else save))
    for s in save:
        if s not in params:
            raise BlkError(f"blk.torch.autograd: save names {s!r}, which is no param of kernel "
                           f"{fwd.kernel.name} (its params: {', '.join(params)})")
    # An in or inout param saves the array passed in, an out the one returned.
    where = [("out", fwd.returns.index(s)) if params[s].access == "out" else
             ("in", fwd.inputs.index(s)) for s in save]
    bwd = op(backward) if isinstance(backward, Kernel) else backward
    if isinstance(bwd, Op):
        if bwd.inplace:
            raise BlkError(f"blk.torch.autograd: the backward op {bwd.name} updates its inout "
                           "arrays in place (the saved tensors): make it with inplace=False")
        want = len(save) + len(fwd.returns)
        if len(bwd.inputs) != want or len(bwd.returns) != len(fwd.inputs):
            raise BlkError(
                f"blk.torch.autograd: the backward kernel {bwd.kernel.name} takes "
                f"{len(bwd.inputs)} arrays and returns {len(bwd.returns)}; it must take the "
                f"{len(save)} saved ({', '.join(save)}) then {len(fwd.returns)} grads (of "
                f"{', '.join(fwd.returns)}), and return {len(fwd.inputs)} grads (of "
                f"{', '.join(fwd.inputs)})")
    elif not callable(bwd):
        raise BlkError(f"blk.torch.autograd: backward must be a blk.kernel, an Op or a function, "
                       f"not a {type(bwd).__name__}")
    # the same backward again (an equal kernel, the same op or function) is no change
    same = (bwd.name if isinstance(bwd, Op) else bwd, tuple(save))
    with _lock:
        if fwd.backward is not None:
            if fwd.backward == same:
                return fwd
            raise BlkError(f"blk.torch.autograd: op {fwd.name} has another backward already: "
                           "make the forward op under another name")
        fwd.backward = same
    n_in = len(fwd.inputs)

    def setup_context(ctx, inputs, output):
        outs = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*[inputs[i] if w == "in" else outs[i] for w, i in where])

    def run_backward(ctx, *grads):
        got = bwd(*ctx.saved_tensors, *grads)
        got = got if isinstance(got, (tuple, list)) else (got,)
        if len(got) != n_in:
            raise BlkError(f"blk.torch.autograd: the backward of {fwd.name} returned {len(got)} "
                           f"gradients; the forward takes {n_in} inputs ({', '.join(fwd.inputs)}): "
                           "return one per input, None for an input with none")
        return tuple(got)

    fwd._def.register_autograd(run_backward, setup_context=setup_context)
    return fwd
