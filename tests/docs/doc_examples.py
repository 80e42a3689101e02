"""Every code block of docs/language.md is checked by blkc, as written.

Each fenced block in the document carries, on the line before it, an HTML
comment that says how (invisible where the Markdown is rendered):

    <!-- test: whole -->                 the block is a file of kernels
    <!-- test: kernel k(...) { @ } -->    the block replaces `@` in a kernel
    <!-- test: skip: REASON -->           not a program (the grammar, a
                                          diagnostic, an excerpt with `...`)

A block without one fails the test, so a new example cannot go untested.
Each program is compiled to IR (`blkc --emit=ir`: the parser, the checker,
the verifier); any error fails it, with the block's line in the document.

    python3 tests/docs/doc_examples.py BLKC DOC.md
"""
import os
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"(?:<!--\s*test:(?P<how>.*?)-->\n)?```[a-z]*\n(?P<body>.*?)```", re.S)


def programs(text):
    """(line, program text or None for a skip, what) per fenced block."""
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("body"))
        how, body = m.group("how"), m.group("body")
        if how is None:
            yield line, None, "no <!-- test: ... --> comment before it"
            continue
        how = how.strip()
        if how.startswith("skip:"):
            continue
        if how == "whole":
            yield line, body, None
        elif "@" in how:
            yield line, how.replace("@", "\n" + body + "\n", 1), None
        else:
            yield line, None, f"unknown test comment {how!r}"


def main():
    blkc, doc = sys.argv[1], sys.argv[2]
    with open(doc) as f:
        text = f.read()
    bad = n = 0
    with tempfile.TemporaryDirectory() as d:
        for line, prog, why in programs(text):
            n += 1
            if prog is None:
                print(f"{doc}:{line}: {why}")
                bad += 1
                continue
            path = os.path.join(d, f"line{line}.blk")
            with open(path, "w") as f:
                f.write(prog)
            r = subprocess.run([blkc, "--emit=ir", path], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{doc}:{line}: the example does not compile:\n{r.stderr}")
                bad += 1
    print(f"{n - bad} of {n} examples of {doc} compile")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
