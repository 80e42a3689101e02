"""Every code block of the documents is run or checked, as written.

    python3 tests/docs/doc_examples.py --build BUILD [--python PY] [--cc 'CC FLAGS']
        [--sanitize] [--gpu] DOC.md...

Each fenced block carries, on the lines just before it, an HTML comment that
says how it is tested (invisible where the Markdown is rendered; it may span
lines).  A block without one fails the test, so a new example cannot go
untested.  The comment is `<!-- test: KIND [NEEDS...] [; OPTION: VALUE]... -->`
or one of the forms that take the rest of it verbatim (`skip:`, `kernel`,
`ir-kernel`, `python-output`).  Kinds:

  blk (compiled by `blkc --emit=ir`: the parser, the checker, the verifier)
    whole                      the block is a file of kernels
    kernel k(...) { @ }        the block replaces `@` in that kernel
  IR (`blkc --from-ir FILE --emit=ir`: parsed and verified)
    ir                         the block is a whole kernel
    ir-kernel TEMPLATE         the block replaces the line `@` of TEMPLATE
  C (the C compiler, -std=c11 -Wall -Wextra -Werror, against blk.h)
    c-decls                    declarations, compiled after `#include <blk.h>`
                               (a signature unlike the header's is an error);
                               option `include: FILE` includes FILE instead
    c-main                     statements run in main() after C_PRELUDE below
                               (a runtime on the stand-in driver's one GPU,
                               `rt`; matmul's f32 `tensors` a, b, c in its
                               memory; `stream`), linked against libblk;
                               option `stdout: REGEX` must match its output
  Python (a process per block, in the scratch directory below)
    python                     run after a prelude: `blk` imported, `a` and
                               `b` bf16 matrices (64x32, 32x48) as NumPy bit
                               patterns, in the interpreter (BLK_INTERPRET=1)
    python torch               the same with torch tensors on the CPU (still
                               interpreted), and `mm` (matmul, T="auto"),
                               `fn` (a call of it), `model` (a module calling
                               it) and `SRC` (kernels silu_fwd, silu_bwd)
    python gpu                 the torch prelude on CUDA, not interpreted
    python jax                 JAX on the CPU (JAX_PLATFORMS=cpu): `blk`,
                               `blk.jax`, `jax`, `jnp`, `a` and `b` bf16
                               JAX arrays (64x32, 32x48), `SRC` as above
    python-output CODE         the block is what the prelude then CODE print
    option `before: CODE`      Python run between the prelude and the block
  Shell (bash -e -o pipefail, in the scratch directory below)
    sh                         commands run; option `gpu: TEXT`: the lines
                               holding TEXT need a GPU (run only by --gpu)
    transcript                 `$ COMMAND` lines run; the other lines are its
                               output, numbers aside (any number matches);
                               option `ignore: REGEX`: lines it matches are
                               left out of the comparison on both sides
    paths                      not run: every relative path the commands name
                               exists (`build/` and `carry/build/` are BUILD)
  Other
    layout                     a source tree (`DIR/  what: FILE, FILE...`):
                               each folder and each file named (globs such as
                               `ir.[ch]`, `emit_*.c`) exists
    skip: REASON               not tested, and why

NEEDS words: `torch` (skipped where the Python has no torch), `jax` (where
it has no JAX), `gpu` (only
with --gpu), `python` (loads libblk into Python: skipped in a sanitized
build, whose libblk a plain Python cannot load; implied by the Python kinds).

The blocks of one document run in order in one scratch directory, which
holds links to the repository's top-level entries, `build` as a link to
BUILD, and files the commands name: `host.c` (tests/install/host.c),
`app.c` (a program over an ahead-of-time kernel, matmul_aot.h) and a
`blk.pc` for pkg-config describing the build tree.  Commands find `blkc`,
`cc` (the C compiler given, sanitizer flags included) and `python3` (the
Python given) first on PATH; BLK_CACHE=0 and, without --gpu, BLK_LIBCUDA is
the stand-in driver of the runtime's tests (device memory is host memory,
launches compute nothing), so launch paths run with no GPU.

--gpu runs only what needs a GPU (the blocks and `sh` lines marked `gpu`) on
the real driver; the run without it covers the rest.  On a GPU machine with
torch, from the repository root with carry/ from tools/pack-gpu.sh:

    python3 tests/docs/doc_examples.py --gpu --build carry/build docs/*.md README.md

(about 4 minutes on an H100, nearly all of it README's `blkc run` of a
4096^3 matmul checking the GPU's result in the interpreter).
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 400  # seconds a block may take (README's GPU line: see above)

FENCE = re.compile(r"^([ \t]*)```(\w*)[ \t]*$")

C_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(ROOT, "runtime/include")]

# The text around a c-main block; its names are the block's to use (the
# (void)s keep -Wall quiet about those it does not).
C_PRELUDE = r"""#include <blk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char err[512];
	BlkRuntime *rt = blk_runtime_create(0, err, sizeof err);
	if (!rt) {
		fprintf(stderr, "blk_runtime_create: %s\n", err);
		return 1;
	}
	int64_t sa[2] = {256, 64}, sb[2] = {64, 192}, sc[2] = {256, 192};
	void *a = NULL, *b = NULL, *c = NULL;
	if (!blk_mem_alloc(rt, 256 * 64 * 4, &a) || !blk_mem_alloc(rt, 64 * 192 * 4, &b) ||
	    !blk_mem_alloc(rt, 256 * 192 * 4, &c)) {
		fprintf(stderr, "blk_mem_alloc: %s\n", blk_runtime_last_error(rt));
		return 1;
	}
	BlkTensor tensors[3] = {blk_tensor_make(a, BLK_DTYPE_F32, 2, sa),
	                        blk_tensor_make(b, BLK_DTYPE_F32, 2, sb),
	                        blk_tensor_make(c, BLK_DTYPE_F32, 2, sc)};
	BlkStream stream = NULL;
	(void)tensors;
	(void)stream;
	{
"""
C_EPILOGUE = r"""
	}
	blk_mem_free(rt, a);
	blk_mem_free(rt, b);
	blk_mem_free(rt, c);
	blk_runtime_destroy(rt);
	return 0;
}
"""

# The Python blocks' preludes: PY_TORCH after `_DEVICE = 'cpu'` or 'cuda'.
PY_NUMPY = '''
import numpy as np
import blk

def _bf16(rows, cols):
    x = np.random.default_rng(rows).standard_normal((rows, cols), dtype=np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16)  # bf16 bits, as NumPy holds them

a, b = _bf16(64, 32), _bf16(32, 48)
'''
PY_TORCH = '''
import torch
import blk

a = torch.randn(64, 32, dtype=torch.bfloat16, device=_DEVICE)
b = torch.randn(32, 48, dtype=torch.bfloat16, device=_DEVICE)
mm = blk.kernel("examples/matmul.blk", T="auto")
fn = lambda: mm(a, b)

class _Model(torch.nn.Module):
    def forward(self, a, b):
        return mm(a, b)

model = _Model()
SRC = open("python/tests/silu.blk").read()  # kernels silu_fwd, silu_bwd
'''
PY_JAX = '''
import jax
import jax.numpy as jnp
import blk
import blk.jax

a = jax.random.normal(jax.random.PRNGKey(0), (64, 32)).astype(jnp.bfloat16)
b = jax.random.normal(jax.random.PRNGKey(1), (32, 48)).astype(jnp.bfloat16)
SRC = open("python/tests/silu.blk").read()  # kernels silu_fwd, silu_bwd
'''
# Runs the prelude, then the block compiled under the document's name with
# its own line numbers, so that a traceback points into the document.
PY_RUNNER = '''
import sys
g = {"__name__": "__main__"}
exec(compile(open(sys.argv[1]).read(), "<prelude>", "exec"), g)
exec(compile(open(sys.argv[2]).read(), sys.argv[3], "exec"), g)
'''

APP_C = r"""#include <stdio.h>
#include "matmul_aot.h"

/* Sizes other than those compiled for are refused before the driver is
 * touched. */
int main(void)
{
	int r = blk_aot_matmul(NULL, NULL, NULL, NULL, 1, 1, 1);
	printf("%s\n", blk_aot_matmul_error(r));
	return r == BLK_AOT_BAD_SIZES ? 0 : 1;
}
"""


class Block:
    def __init__(self, line, body, how):
        self.line, self.body, self.how = line, body, how
        self.name = f"line{line}"  # of its files in the scratch directory
        self.kind, self.needs, self.opts, self.arg = None, [], {}, None


def blocks(text):
    """Every fenced block: its fence's line, its text (dedented to the
    fence) and its test comment's text, None where it has none."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = m.group(1)
        how = None
        if i > 0 and lines[i - 1].rstrip().endswith("-->"):
            j = i - 1
            while j > 0 and "<!--" not in lines[j]:
                j -= 1
            c = re.match(r"\s*<!--\s*test:(.*)-->\s*$", "\n".join(lines[j:i]), re.S)
            if c:
                how = c.group(1).strip()
        k = i + 1
        while k < len(lines) and not re.match(r"^[ \t]*```[ \t]*$", lines[k]):
            k += 1
        body = "".join((ln[len(indent):] if ln.startswith(indent) else ln.lstrip()) + "\n"
                       for ln in lines[i + 1:k])
        yield Block(i + 1, body, how)
        i = k + 1


def parse(b):
    """Fills b.kind, b.needs, b.opts, b.arg from its comment; returns an
    error or None."""
    how = b.how
    if how is None:
        return "no <!-- test: ... --> comment before it"
    if how.startswith("skip:"):
        b.kind, b.arg = "skip", how[5:].strip()
        return None if b.arg else "skip: without a reason"
    if how == "whole" or (how.startswith("kernel") and "@" in how):
        b.kind, b.arg = "blk", how
        return None
    word = how.split(None, 1)[0]
    if word in ("ir-kernel", "python-output"):
        b.kind, b.arg = word, how[len(word):].strip("\n ")
        b.needs = ["python"] if word == "python-output" else []
        return None
    head, *opts = how.split(";")
    b.kind, *b.needs = head.split()
    for o in opts:
        name, _, value = o.partition(":")
        b.opts[name.strip()] = value.strip()
    if b.kind == "python":
        b.needs += ["python"] + (["torch"] if "gpu" in b.needs else [])  # the GPU prelude's torch
    if b.kind not in KINDS or b.kind in ("blk", "ir-kernel", "python-output"):
        return f"unknown test comment {how!r}"
    bad = [n for n in b.needs if n not in ("torch", "jax", "gpu", "python")]
    bad += [o for o in b.opts if o not in OPTIONS.get(b.kind, ())]
    return f"unknown need or option {bad[0]!r} for {b.kind}" if bad else None


class Doc:
    """One document's run: its scratch directory, the tools, the tally."""

    def __init__(self, args, name, scratch):
        self.args, self.name, self.dir = args, name, scratch
        self.env = dict(args.env, PATH=os.path.join(scratch, ".bin") + ":" + args.env.get("PATH", ""),
                        PKG_CONFIG_PATH=os.path.join(scratch, ".pc"))
        self.ran = self.checked = self.failed = 0
        self.left = {}  # why -> count

    def fail(self, b, what, out=""):
        out = out.strip()
        if len(out) > 3000:
            out = "...\n" + out[-3000:]
        print(f"{self.name}:{b.line}: {what}" + (f"\n{out}" if out else ""))
        self.failed += 1
        return False

    def leave(self, why):
        self.left[why] = self.left.get(why, 0) + 1

    def file(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, cmd, env=None):
        """(exit status, stdout, stderr) of cmd in the scratch directory; on a
        timeout its whole process group is killed."""
        p = subprocess.Popen(cmd, cwd=self.dir, env=env or self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=TIMEOUT)
            return p.returncode, out, err
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return -1, "", f"timed out after {TIMEOUT} s"


def setup_scratch(args, d):
    """The scratch directory: the repository's entries as links, build as
    BUILD, the files commands name, and .bin with blkc, cc and python3."""
    for e in os.listdir(ROOT):
        if not (e.startswith(".") or e.startswith("build") or e == "carry"):
            os.symlink(os.path.join(ROOT, e), os.path.join(d, e))
    os.symlink(args.build, os.path.join(d, "build"))
    shutil.copy(os.path.join(ROOT, "tests/install/host.c"), os.path.join(d, "host.c"))
    with open(os.path.join(d, "app.c"), "w") as f:
        f.write(APP_C)
    os.mkdir(os.path.join(d, ".pc"))
    with open(os.path.join(d, ".pc/blk.pc"), "w") as f:
        f.write(f"Name: blk\nDescription: the build tree\nVersion: 0.1.0\n"
                f"Libs: -L{args.build} -lblk -Wl,-rpath,{args.build}\n"
                f"Cflags: -I{ROOT}/runtime/include\n")
    os.mkdir(os.path.join(d, ".bin"))
    os.symlink(args.blkc, os.path.join(d, ".bin/blkc"))
    if args.python:
        os.symlink(args.python, os.path.join(d, ".bin/python3"))
    if args.cc:
        with open(os.path.join(d, ".bin/cc"), "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(args.cc) + ' "$@"\n')
        os.chmod(os.path.join(d, ".bin/cc"), 0o755)


def not_here(args, b, gpu_lines):
    """Why b does not run in this run, or None."""
    if args.gpu and "gpu" not in b.needs and not gpu_lines:
        return "runs without --gpu"
    if "gpu" in b.needs and not args.gpu:
        return "needs a GPU (--gpu runs it)"
    if "python" in b.needs:
        if args.sanitize:
            return "loads libblk into Python, which a sanitized build cannot"
        if not args.python_ok:
            return "no Python with NumPy"
    if "torch" in b.needs and not has_torch(args):
        return "needs torch"
    if "jax" in b.needs and not has_jax(args):
        return "needs JAX"
    if b.kind in ("c-decls", "c-main") and not args.cc:
        return "no C compiler"
    if b.kind == "c-main" and not args.lib:
        return "no libblk in BUILD"
    if b.kind == "c-main" and not args.gpu and not args.fake:
        return "no stand-in driver in BUILD"
    return None


def has_torch(args):
    if args.torch is None:
        r = subprocess.run([args.python, "-c", "import torch"], capture_output=True)
        args.torch = r.returncode == 0
    return args.torch


def has_jax(args):
    if args.jax is None:
        r = subprocess.run([args.python, "-c", "import jax"], capture_output=True)
        args.jax = r.returncode == 0
    return args.jax


def numbers_free(line):
    """A regex of the line with any number in place of each number."""
    parts = re.split(r"\d+(?:\.\d+)?", line.rstrip())
    return "".join(re.escape(p) + ("" if i == len(parts) - 1 else r"\d+(?:\.\d+)?")
                   for i, p in enumerate(parts))


def path_tokens(body):
    """The relative paths a block of commands names (comments aside)."""
    for line in body.splitlines():
        for tok in line.split("#", 1)[0].split():
            tok = tok.rsplit("=", 1)[-1].strip("'\"`;,()")
            if re.fullmatch(r"[\w.+-]+(?:/[\w.+-]+)+/?", tok) and not tok.startswith("."):
                yield tok


def layout_missing(body):
    """The folders and files of a source-tree listing that do not exist."""
    stack = []  # (indent, folder)
    folder = None
    for line in body.splitlines():
        m = re.match(r"^( *)([\w.-]+/)\s+(.*)$", line)
        if m:
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            folder = os.path.join(stack[-1][1] if stack else "", m.group(2))
            stack.append((indent, folder))
            if not os.path.isdir(os.path.join(ROOT, folder)):
                yield folder
            text = m.group(3)
        else:
            text = line
        if folder is None:
            continue
        text = re.sub(r"`", "", text)
        files = re.findall(r"(?<![\w./-])([A-Za-z_][\w*\[\]]*(?:/[\w*\[\]]+)*\.(?:\[ch\]|[A-Za-z]+))(?![\w(])",
                           text)
        for f in files:
            if not glob.glob(os.path.join(ROOT, folder, f)):
                yield os.path.join(folder, f)
        for sub in re.findall(r"(?<![\w./-])([\w-]+/)(?![\w])", re.sub(r"\S+\.\S+", "", text)):
            if not os.path.isdir(os.path.join(ROOT, folder, sub)):
                yield os.path.join(folder, sub)


def check_blk(doc, b):
    prog = b.body if b.arg == "whole" else b.arg.replace("@", "\n" + b.body + "\n", 1)
    rc, _, err = doc.run([doc.args.blkc, "--emit=ir", doc.file(b.name + ".blk", prog)])
    return rc == 0 or doc.fail(b, "the example does not compile:", err)


def check_ir(doc, b):
    prog = b.body
    if b.kind == "ir-kernel":
        prog = re.sub(r"^[ \t]*@[ \t]*$", lambda _: b.body.rstrip("\n"), b.arg, count=1, flags=re.M)
    rc, _, err = doc.run([doc.args.blkc, "--from-ir", doc.file(b.name + ".ir", prog), "--emit=ir"])
    return rc == 0 or doc.fail(b, "the IR does not parse and verify:", err)


def check_c_decls(doc, b):
    inc = b.opts.get("include")
    src = (f'#include "{inc}"\n' if inc else "#include <blk.h>\n") + f'#line {b.line + 1} "{doc.name}"\n' + b.body
    rc, out, err = doc.run(doc.args.cc + C_FLAGS + ["-fsyntax-only", "-I", doc.dir, doc.file(b.name + ".c", src)])
    return rc == 0 or doc.fail(b, "the declarations do not compile against the header:", out + err)


def check_c_main(doc, b):
    a = doc.args
    src = C_PRELUDE + f'#line {b.line + 1} "{doc.name}"\n' + b.body + C_EPILOGUE
    exe = os.path.join(doc.dir, b.name)
    rc, out, err = doc.run(a.cc + C_FLAGS + [doc.file(b.name + ".c", src), "-o", exe, a.lib,
                                             "-Wl,-rpath," + os.path.dirname(a.lib)])
    if rc != 0:
        return doc.fail(b, "the example does not compile:", out + err)
    rc, out, err = doc.run([exe])
    if rc != 0:
        return doc.fail(b, f"the example exits with {rc}:", out + err)
    want = b.opts.get("stdout")
    return not want or re.search(want, out, re.M) or doc.fail(b, f"its output does not match {want!r}:", out)


def check_python(doc, b):
    env = dict(doc.env)
    gpu = "gpu" in b.needs
    if gpu:
        prelude = "_DEVICE = 'cuda'\n" + PY_TORCH
    else:
        env["BLK_INTERPRET"] = "1"
        prelude = "_DEVICE = 'cpu'\n" + PY_TORCH if "torch" in b.needs else PY_NUMPY
    if "jax" in b.needs:
        env["JAX_PLATFORMS"] = "cpu"
        prelude = PY_JAX
    prelude += b.opts.get("before", "") + "\n"
    code = b.arg + "\n" if b.kind == "python-output" else "\n" * b.line + b.body
    rc, out, err = doc.run([doc.args.python, "-c", PY_RUNNER, doc.file(b.name + "-prelude.py", prelude),
                            doc.file(b.name + ".py", code), doc.name], env=env)
    if rc != 0:
        return doc.fail(b, f"the example fails (exit {rc}):", out + err)
    if b.kind == "python-output" and out.rstrip("\n") != b.body.rstrip("\n"):
        return doc.fail(b, "the block is not what its code prints; it prints:", out)
    return True


def check_sh(doc, b):
    # a line that needs a GPU runs only with --gpu, and then alone
    gpu = b.opts.get("gpu")
    lines = [ln if (gpu is None or (gpu in ln) == doc.args.gpu) else ":" for ln in b.body.splitlines()]
    trap = "trap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n"
    rc, out, err = doc.run(["bash", "-eo", "pipefail", doc.file(b.name + ".sh", trap + "\n".join(lines) + "\n")])
    return rc == 0 or doc.fail(b, f"the commands fail (exit {rc}):", err or out)


def check_transcript(doc, b):
    ignore = b.opts.get("ignore")
    cmds = [ln[2:] for ln in b.body.splitlines() if ln.startswith("$ ")]
    want = [ln for ln in b.body.splitlines() if not ln.startswith("$ ")]
    rc, out, err = doc.run(["bash", "-eo", "pipefail", "-c", "\n".join(cmds) + "\n"])
    if rc != 0:
        return doc.fail(b, f"the command fails (exit {rc}):", out + err)
    got = (out + err).splitlines()
    keep = [ln for ln in want if not (ignore and re.search(ignore, ln))]
    have = [ln for ln in got if not (ignore and re.search(ignore, ln))]
    bad = next((w for w, h in zip(keep, have) if not re.fullmatch(numbers_free(w), h.rstrip())),
               None if len(keep) == len(have) else f"{len(keep)} lines (it has {len(have)})")
    return bad is None or doc.fail(b, f"the output differs from the block (numbers aside) at {bad!r}; it is:",
                                   "\n".join(got))


def check_paths(doc, b):
    missing = []
    for p in path_tokens(b.body):
        pre = next((pre for pre in ("carry/build/", "build/") if p.startswith(pre)), None)
        if not os.path.exists(os.path.join(doc.args.build, p[len(pre):]) if pre else os.path.join(ROOT, p)):
            missing.append(p)
    return not missing or doc.fail(b, "names what does not exist: " + ", ".join(missing))


def check_layout(doc, b):
    missing = list(layout_missing(b.body))
    return not missing or doc.fail(b, "names what does not exist: " + ", ".join(missing))


# kind -> (its check, whether it runs the example or only checks it)
KINDS = {
    "blk": (check_blk, False), "ir": (check_ir, False), "ir-kernel": (check_ir, False),
    "c-decls": (check_c_decls, False), "c-main": (check_c_main, True),
    "python": (check_python, True), "python-output": (check_python, True),
    "sh": (check_sh, True), "transcript": (check_transcript, True),
    "paths": (check_paths, False), "layout": (check_layout, False),
}
OPTIONS = {"c-decls": {"include"}, "c-main": {"stdout"}, "python": {"before"}, "sh": {"gpu"},
           "transcript": {"ignore"}}


def test_doc(args, path):
    name = os.path.relpath(os.path.abspath(path), ROOT)
    with open(path) as f:
        text = f.read()
    with tempfile.TemporaryDirectory(prefix="blk-docs-") as d:
        setup_scratch(args, d)
        doc = Doc(args, name, d)
        n = 0
        for b in blocks(text):
            n += 1
            err = parse(b)
            if err:
                doc.fail(b, err)
                continue
            if b.kind == "skip":
                doc.leave("skip: " + b.arg)
                continue
            gpu_lines = b.kind == "sh" and "gpu" in b.opts and any(
                b.opts["gpu"] in ln for ln in b.body.splitlines())
            why = not_here(args, b, gpu_lines)
            if why:
                doc.leave(why)
                continue
            check, runs = KINDS[b.kind]
            if check(doc, b):
                if runs:
                    doc.ran += 1
                else:
                    doc.checked += 1
                if gpu_lines and not args.gpu:
                    doc.leave(f"lines with {b.opts['gpu']!r} need a GPU (--gpu runs them)")
    parts = [f"{doc.ran} run", f"{doc.checked} checked"]
    if doc.failed:
        parts.append(f"{doc.failed} FAILED")
    print(f"{name}: {n} block{'' if n == 1 else 's'}: " + ", ".join(parts))
    for why, k in doc.left.items():
        print(f"  {k} not run: {why}")
    return doc.failed == 0 and n > 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True, help="the build directory (blkc, libblk, the stand-in driver)")
    p.add_argument("--python", default=sys.executable, help="the Python for the Python blocks")
    p.add_argument("--cc", help="the C compiler and its flags, as one word list (default: cc)")
    p.add_argument("--sanitize", action="store_true", help="BUILD is sanitized (no Python blocks)")
    p.add_argument("--gpu", action="store_true", help="run the blocks that need a GPU")
    p.add_argument("docs", nargs="+")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    args.blkc = os.path.join(args.build, "tools/blkc")
    if not os.access(args.blkc, os.X_OK):
        print(f"skipped: no blkc in {args.build}")
        return 77
    args.lib = next((os.path.join(args.build, f) for f in ("libblk.so.0", "libblk-private.so")
                     if os.path.exists(os.path.join(args.build, f))), None)
    fake = os.path.join(args.build, "tests/runtime/libfakecuda.so")
    args.fake = fake if os.path.exists(fake) else None
    args.cc = shlex.split(args.cc or "cc")
    # by its path: `cc` on the blocks' PATH is a wrapper that runs args.cc
    args.cc = [shutil.which(args.cc[0])] + args.cc[1:] if shutil.which(args.cc[0]) else []
    # the interpreter itself, not a launcher (pyenv's shims) a changed
    # environment may confuse; None where it cannot run
    r = subprocess.run([args.python, "-c", "import sys; print(sys.executable)"],
                       capture_output=True, text=True) if shutil.which(args.python) else None
    args.python = r.stdout.strip() if r and r.returncode == 0 else None
    args.python_ok = bool(args.lib and args.python) and subprocess.run(
        [args.python, "-c", "import numpy"], capture_output=True).returncode == 0
    args.torch = args.jax = None
    env = dict(os.environ, BLK_CACHE="0", PYTHONPATH=os.path.join(ROOT, "python"),
               BLK_LIBRARY=args.lib or "")
    env.pop("BLK_INTERPRET", None)
    if args.gpu:
        env.pop("BLK_LIBCUDA", None)
    elif args.fake:
        env["BLK_LIBCUDA"] = args.fake
    args.env = env
    ok = all([test_doc(args, d) for d in args.docs])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
