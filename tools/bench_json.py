#!/usr/bin/env python3
"""bench_json.py - blk-bench's tables as JSON, and its matmul rows as a PNG.

    tools/bench_json.py bench.txt -o bench.json [--png bench.png]

blk-bench prints Markdown tables (tools/gpu-run.sh keeps them in bench.txt).
Every table becomes a list of rows keyed by the header's column names, with
numbers as numbers ("3.435" -> 3.435, "4096³" -> 4096, "102%" -> 102.0);
the JSON also holds the `device:` line.  With --png, the rows whose op
starts with "matmul" are drawn as TFLOP/s against size, blk beside cuBLAS,
one line per dtype (needs matplotlib; without it the JSON is still written
and the script says why there is no picture).
"""
import argparse
import json
import re
import sys

NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$")


def value(cell):
    """A cell as a number when it is one (a trailing ³ or % dropped)."""
    text = cell.strip()
    bare = text.rstrip("³%").replace("^", "e") if text[:1].isdigit() else text
    return float(bare) if NUMBER.match(bare) else text


def tables(text):
    """Every Markdown table of text: a list of dicts per table."""
    out, header, rows = [], None, []
    for line in text.splitlines() + [""]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            if header and rows:
                out.append(rows)
            header, rows = None, []
        elif header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            rows.append({h: value(c) for h, c in zip(header, cells)})
    return out


def parse(text):
    device = next((line[len("device:"):].strip() for line in text.splitlines()
                   if line.startswith("device:")), None)
    return {"device": device, "tables": tables(text)}


def plot(data, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_json: no matplotlib, no PNG (pip install matplotlib)", file=sys.stderr)
        return False
    rows = [r for t in data["tables"] for r in t
            if str(r.get("op", "")).startswith("matmul") and "blk TFLOP/s" in r]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for dt in sorted({r["type"] for r in rows}):
        mine = sorted((r for r in rows if r["type"] == dt and r["op"] == "matmul"),
                      key=lambda r: r["size"])
        if not mine:
            continue
        sizes = [r["size"] for r in mine]
        line, = ax.plot(sizes, [r["blk TFLOP/s"] for r in mine], "o-", label=f"blk {dt}")
        ax.plot(sizes, [r["cuBLAS TFLOP/s"] for r in mine], "s--", color=line.get_color(),
                label=f"cuBLAS {dt}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"matmul: blk vs cuBLAS ({data['device'] or 'unknown device'})", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", help="blk-bench's output")
    ap.add_argument("-o", "--output", required=True, help="the JSON to write")
    ap.add_argument("--png", help="the matmul picture to write")
    args = ap.parse_args(argv)
    with open(args.input, encoding="utf-8") as f:
        data = parse(f.read())
    if not data["tables"]:
        print(f"bench_json: no table in {args.input}", file=sys.stderr)
        return 1
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    if args.png and not plot(data, args.png):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
