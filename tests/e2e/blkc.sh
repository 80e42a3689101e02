#!/usr/bin/env bash
# blkc.sh - end-to-end tests of the blkc command line: every option, the exit
# status contract (0 ok, 1 diagnosed error, 2 bad usage, never a signal), the
# stages it prints, and `run --interpret` with .npy in and out.
#   blkc.sh BLKC SOURCE_ROOT
set -u
BLKC=$1
ROOT=$2
EX=$ROOT/examples
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
n=0

# expect STATUS PATTERN CMD...: runs CMD, checks its exit status and that
# PATTERN (a grep -E regex; empty: anything) appears in its stdout+stderr.
expect() {
	local want=$1 pat=$2
	shift 2
	n=$((n + 1))
	"$@" >"$T/out" 2>&1
	local rc=$?
	if [ "$rc" -ne "$want" ] || { [ -n "$pat" ] && ! grep -qE -e "$pat" "$T/out"; }; then
		fails=$((fails + 1))
		echo "FAIL: $* -> exit $rc (want $want), pattern '$pat'"
		sed 's/^/    /' "$T/out" | head -n 20
	fi
	if [ "$rc" -ge 128 ]; then
		fails=$((fails + 1))
		echo "FAIL: $* died of a signal ($rc)"
	fi
}

# usage
expect 0 'usage: blkc' "$BLKC" --help
for opt in --emit -D --kernel -o --arch --dump-after --report --interpret --seed --out-dir --no-check --iters --from-ir --pass; do
	expect 0 "$opt" "$BLKC" --help
done
expect 0 '^blkc [0-9]+\.[0-9]+\.[0-9]+$' "$BLKC" --version
expect 2 'no input file' "$BLKC"
expect 2 'a list of arches is for --emit=c' "$BLKC" --emit=ptx --arch=sm_90a,sm_80 "$EX/add.blk" N=10
expect 1 'needs its launch sizes' "$BLKC" --emit=c "$EX/add.blk"
expect 0 'int blk_aot_add\(void \*stream, void \*x, void \*y, void \*z, int64_t N\)' "$BLKC" --emit=c "$EX/add.blk" N=10
expect 0 '' "$BLKC" --emit=c --arch=sm_80,sm_90a -o "$T/k.c" "$EX/add.blk" N=10
expect 0 'BLK_AOT_BAD_SIZES' cat "$T/k.h"
expect 1 'cannot write' "$BLKC" --emit=c -o /nonexistent/dir/k.c "$EX/add.blk" N=10
expect 0 'does not end in .c, so no header is written' "$BLKC" --emit=c -o "$T/k.h" "$EX/add.blk" N=10
expect 1 '--arch=, names no arch' "$BLKC" --emit=c --arch=, -o "$T/k.c" "$EX/add.blk" N=10
expect 1 '--arch=sm_80,sm_80: sm_80 is given twice' "$BLKC" --emit=c --arch=sm_80,sm_80 -o "$T/k.c" "$EX/add.blk" N=10
expect 1 'more than 8 arches' "$BLKC" --emit=c --arch=sm_80,sm_86,sm_87,sm_89,sm_90,sm_90a,a,b,c -o "$T/k.c" "$EX/add.blk" N=10
expect 1 'compiles kernels of one GPU; this one runs across ranks' "$BLKC" --emit=c "$EX/allreduce.blk" N=4096 G2=4
expect 0 '' "$BLKC" --emit=ptx "$EX/allgather_matmul.blk" MS=256 K=512 N=384 RMS=512 RC=4 R=2
expect 0 'red.relaxed.sys.global.add.s32' "$BLKC" --emit=ptx "$EX/matmul_reduce_scatter.blk" M=512 K=512 N=384 MS=256 R=2 TT=6
expect 2 'unknown or incomplete option' "$BLKC" --bogus "$EX/add.blk"
expect 2 "unknown --emit stage 'x'" "$BLKC" --emit=x "$EX/add.blk"
expect 2 '-D wants NAME=VALUE' "$BLKC" -D BM "$EX/add.blk"
expect 2 'unexpected argument' "$BLKC" "$EX/add.blk" other.blk
expect 2 '--interpret only' "$BLKC" --interpret "$EX/add.blk"
expect 2 '--seed wants' "$BLKC" run --interpret --seed=-3 "$EX/add.blk" N=10
expect 2 '--iters wants' "$BLKC" run --iters=0 "$EX/add.blk" N=10
expect 2 'N is given twice' "$BLKC" --emit=ptx "$EX/add.blk" N=4 N=8
expect 2 '-D B is given twice' "$BLKC" -D B=64 -D B=128 "$EX/add.blk"
expect 2 "--dump-after: no pass named 'nosuchpass'" "$BLKC" --dump-after=nosuchpass "$EX/add.blk" N=4

# input errors
expect 1 'cannot open .*missing.blk' "$BLKC" "$T/missing.blk"
printf 'kernel k(x: in f32[N]) {\n    let y = x[...] +;\n}\n' >"$T/syntax.blk"
expect 1 'syntax.blk:2:21: error: ' "$BLKC" "$T/syntax.blk"
printf '\x00\xff\x80junk' >"$T/junk.blk"
expect 1 'error' "$BLKC" "$T/junk.blk"
expect 1 '/dev/zero is larger than 16777216 bytes, the limit of a source' "$BLKC" /dev/zero
expect 1 "compile-time parameter named .NOPE" "$BLKC" -D NOPE=3 "$EX/add.blk"
expect 1 "no kernel named 'nope'" "$BLKC" --kernel=nope "$EX/add.blk" --emit=ir

# integer division by zero is defined (0), so LLVM may not drop the stores
printf 'kernel k(x: in i32[N] block (8) index (i) -> (cdiv(i, N - 20)), y: out i32[N] block (8) index (i) -> (i %% (N - 20))) grid (cdiv(N, 8)) {\n    y[...] = x[...] ~/ (N - 20) + program_id(0) %% 0;\n}\n' >"$T/div0.blk"
expect 0 "st.global" "$BLKC" --emit=ptx "$T/div0.blk" N=20

# limits: a tile too large for registers is refused before LLVM and ptxas
expect 1 'softmax.blk:9:14: error: kernel softmax: a tile of f32\[4, 100000\] needs 4096 registers per thread over 128 threads; the limit is 512: use smaller blocks' \
	"$BLKC" --emit=ptx "$EX/softmax.blk" R=1024 C=100000

# helpers: an error in a helper's body points into the helper, with a note
# at each call being inlined, innermost first; a helper and a scan run
printf 'fn inner(x) {\n    exp(x)\n}\nfn outer(x) { inner(x) * 2 }\nkernel k(x: in i32[N], y: out i32[N]) {\n    y[...] = outer(x[...]);\n}\n' >"$T/fn.blk"
expect 1 'fn.blk:2:5: error: `exp` needs a float operand, got i32\[N\]' "$BLKC" "$T/fn.blk"
expect 1 'fn.blk:4:15: note: in the call of `inner`' "$BLKC" "$T/fn.blk"
expect 1 'fn.blk:6:14: note: in the call of `outer`' "$BLKC" "$T/fn.blk"
printf 'fn f(x) { g(x) }\nfn g(x) { f(x) }\nkernel k(x: in f32[N], y: out f32[N]) {\n    y[...] = f(x[...]) + softcap(x[...]);\n}\n' >"$T/rec.blk"
expect 1 'rec.blk:2:11: error: helper `f` calls itself through `g`; helpers are inlined, so they cannot recurse' "$BLKC" "$T/rec.blk"
expect 1 'rec.blk:4:26: error: unknown function `softcap`' "$BLKC" "$T/rec.blk"
printf 'fn lin(a, b) { a * 0.5 + b }\nkernel k(x: in f32[N], y: out f32[N]) {\n    y[...] = associative_scan(lin, x[...]);\n}\n' >"$T/scan.blk"
expect 0 'scan %0 \{axis = 0\} : f32\[N\]' "$BLKC" --emit=ir "$T/scan.blk"
expect 0 'kernel k ran in the interpreter' "$BLKC" run --interpret --out-dir="$T" "$T/scan.blk" N=100
expect 0 'add.rn.f32' "$BLKC" --emit=ptx "$T/scan.blk" N=100
expect 0 'bar.sync' "$BLKC" --emit=ptx "$T/scan.blk" N=1000

# a file of many kernels and no -k: the first few named, then a count (all
# 4000 were notes: 12,000 lines)
for i in $(seq 20); do printf 'kernel k%d(x: in f32[N], y: out f32[N]) {\n    y[...] = x[...];\n}\n' "$i"; done >"$T/many.blk"
expect 1 'many.blk has 20 kernels; choose one with --kernel' "$BLKC" --emit=ptx "$T/many.blk" N=10
expect 1 'note: and 12 more kernels' "$BLKC" --emit=ptx "$T/many.blk" N=10

# stages
expect 0 "^8:1 KERNEL 'kernel'" "$BLKC" --emit=tokens "$EX/matmul.blk"
expect 0 '\(kernel matmul' "$BLKC" --emit=ast "$EX/matmul.blk"
expect 0 'kernel @matmul' "$BLKC" --emit=ir "$EX/matmul.blk"
expect 0 'block \[128, K\]' "$BLKC" --emit=ir -D BM=128 "$EX/matmul.blk"
expect 0 'bf16\[M, K\]' "$BLKC" --emit=ir -D T=bf16 "$EX/matmul.blk"
# a kernel named that is not there is an error in a plain check too
expect 1 "no kernel named 'nope' in" "$BLKC" -k nope "$EX/add.blk"
: >"$T/empty.blk"
expect 1 'empty.blk has no kernel' "$BLKC" run --interpret "$T/empty.blk" N=10
expect 1 "no kernel named 'nope' in" "$BLKC" -k nope --emit=ir "$EX/add.blk"
# a block whose size only the launch fixes, past the tile limit: an error,
# not an endless loop in the layouts
printf 'kernel k(x: in f32[N] block (N), y: out f32[N] block (N)) {\n    y[...] = exp(x[...]);\n}\n' > "$T/bigblock.blk"
expect 1 'at these sizes this value is a tile of f32\[1073741825\], more than 4194304 elements' timeout 60 "$BLKC" --emit=ptx "$T/bigblock.blk" N=1073741825
expect 1 'needs its launch sizes: give M=... K=... N=...' "$BLKC" --emit=ptx "$EX/matmul.blk"
# a dim the sizes make negative is named, with what it came to
printf 'kernel k(x: in f32[N - 8] block (8), y: out f32[N - 8] block (8)) grid (1) {\n    y[...] = x[...];\n}\n' > "$T/negdim.blk"
expect 1 "dim 0 of 'x', N - 8, is -4 at the given sizes: an array's dims are 0 or more" "$BLKC" --emit=ptx "$T/negdim.blk" N=4
expect 1 "'Q' is not a launch size" "$BLKC" --emit=ptx "$EX/matmul.blk" M=8 N=8 K=8 Q=3
expect 0 '\.entry' "$BLKC" --emit=ptx "$EX/matmul.blk" M=130 N=70 K=33
expect 0 'ptx_kernel' "$BLKC" --emit=llvm "$EX/add.blk" N=1000
expect 0 '' "$BLKC" --emit=ptx "$EX/add.blk" N=1000 -o "$T/add.ptx"
expect 0 '\.target sm_90a' cat "$T/add.ptx"
expect 0 '\.target sm_80' "$BLKC" --emit=ptx --arch=sm_80 "$EX/add.blk" N=1000
expect 1 'sm_80' "$BLKC" --emit=ptx --arch=sm_99 "$EX/add.blk" N=1000
expect 0 'IR after specialize' "$BLKC" --dump-after=specialize "$EX/softmax.blk" R=13 C=77
expect 2 "no pass named 'nosuch'" "$BLKC" --dump-after=nosuch "$EX/softmax.blk" R=13 C=77

# --from-ir: IR text in, one pass run alone
"$BLKC" --emit=ir "$EX/softmax.blk" >"$T/softmax.ir" 2>&1
expect 0 'kernel @softmax' "$BLKC" --from-ir "$T/softmax.ir"
expect 0 'reduce_max %v \{axis = 1\} : f32\[BR\]|reduce_max' "$BLKC" --from-ir "$T/softmax.ir"
expect 1 'pass specialize needs the launch sizes' "$BLKC" --from-ir --pass=specialize "$T/softmax.ir"
expect 0 'grid \(4\)' "$BLKC" --from-ir --pass=specialize "$T/softmax.ir" R=13 C=77
expect 1 "no IR pass named 'ptx'" "$BLKC" --from-ir --pass=ptx "$T/softmax.ir"
# a pass on IR that lacks what it needs says which pass to run first
"$BLKC" --emit=ir -D T=bf16 "$EX/matmul.blk" >"$T/matmul.ir" 2>&1
"$BLKC" --dump-after=specialize -D T=bf16 "$EX/matmul.blk" M=256 N=256 K=256 2>&1 >/dev/null | sed 1d >"$T/spec.ir"
expect 1 'pass pipeline needs every dot.s engine: run --pass=dot-engine on it first' \
	"$BLKC" --from-ir --pass=pipeline "$T/spec.ir"
expect 1 'pass tile needs constant shapes: run --pass=specialize on it first' \
	"$BLKC" --from-ir --pass=tile "$T/matmul.ir"
for p in dot-stage mma-steps; do
	expect 1 "pass $p needs every dot.s engine: run --pass=dot-engine on it first" \
		"$BLKC" --from-ir --pass=$p "$T/spec.ir"
done
expect 2 'needs --from-ir' "$BLKC" --pass=tile "$EX/softmax.blk"
expect 2 'from-ir takes only' "$BLKC" --from-ir --emit=c "$T/softmax.ir"
"$BLKC" --dump-after=blockspec "$EX/softmax.blk" R=13 C=77 2>&1 >/dev/null | sed 1d >"$T/bs.ir"
# --from-ir --emit=llvm|ptx: the backend on the IR smem-plan leaves, and a
# clear error for IR that is not there yet
expect 1 'pass emit-llvm needs constant shapes: run --pass=specialize on it first' \
	"$BLKC" --from-ir --emit=ptx "$T/softmax.ir"
expect 1 'not ready for emission: a tile without a layout: run the passes up to tile' \
	"$BLKC" --from-ir --emit=ptx "$T/bs.ir"
"$BLKC" --dump-after=tile "$EX/matmul.blk" M=256 N=256 K=256 2>&1 >/dev/null | sed 1d >"$T/tile.ir"
expect 1 'a shared buffer without an offset: run --pass=smem-plan on it first' \
	"$BLKC" --from-ir --emit=ptx "$T/tile.ir"
"$BLKC" --dump-after=smem-plan "$EX/softmax.blk" R=13 C=77 2>&1 >/dev/null | sed 1d >"$T/smem.ir"
expect 0 '\.entry softmax' "$BLKC" --from-ir --emit=ptx "$T/smem.ir"
expect 0 'define ptx_kernel void @softmax|define void @softmax' "$BLKC" --from-ir --emit=llvm "$T/smem.ir"
expect 1 "softmax.blk:1:1: error: unexpected character '/'" "$BLKC" --from-ir "$EX/softmax.blk"
expect 0 'slice<spt=\[1\], thr=\[4\], tsh=\[5\]>' "$BLKC" --from-ir --pass=tile "$T/bs.ir"
"$BLKC" --from-ir --pass=tile "$T/bs.ir" -o "$T/tiled.ir" >/dev/null 2>&1
expect 0 'kernel @softmax' "$BLKC" --from-ir "$T/tiled.ir"
expect 0 'threads per program' "$BLKC" --report "$EX/matmul.blk" M=256 N=256 K=256
# a bf16 dot that falls to the SIMT path (N = 192 fits neither wgmma nor mma here) says so, and why
expect 0 'runs on the SIMT fma path \(not tensor cores\): wgmma: .*N a power of two' "$BLKC" --report \
	"$EX/matmul_nt.blk" M=3000 N=5000 K=1000 -D T=bf16 -D BM=128 -D BN=192 -D BK=64 -D num_warps=8 -D num_stages=4
expect 0 'engine = "fma", fallback = "wgmma: ' "$BLKC" --report --dump-after=dot-engine "$EX/matmul_nt.blk" \
	M=3000 N=5000 K=1000 -D T=bf16 -D BM=128 -D BN=192 -D BK=64 -D num_warps=8 -D num_stages=4
# a matmul whose tiles run in CTA pairs says so
expect 0 'clusters of 2 CTAs' "$BLKC" --report "$EX/matmul_nt.blk" M=3000 N=5000 K=1000 -D T=bf16 -D BM=128 \
	-D BN=256 -D BK=64 -D num_warps=8 -D num_stages=4
expect 0 'occupancy on H100/H200 \(sm_90\): [0-9]+ programs? per SM, limited by' "$BLKC" --report "$EX/matmul.blk" M=256 N=256 K=256
expect 0 'waves: 16 programs over 132 SMs' "$BLKC" --report "$EX/matmul.blk" M=256 N=256 K=256
expect 0 'traffic: at least 0.786 MB' "$BLKC" --report "$EX/matmul.blk" M=256 N=256 K=256
expect 0 'memory roofline: 0.23 us on H100' "$BLKC" --report "$EX/matmul.blk" M=256 N=256 K=256
expect 0 'occupancy on A100 \(sm_80\)' "$BLKC" --report --arch=sm_80 "$EX/add.blk" N=4096
expect 0 'no dot' "$BLKC" --report "$EX/add.blk" N=4096
expect 0 'dot FLOPs: 137.4 G; arithmetic intensity 1365.3 FLOP/byte' "$BLKC" --report -D T=bf16 "$EX/matmul.blk" M=4096 N=4096 K=4096
expect 0 'bound on H100: compute' "$BLKC" --report -D T=bf16 "$EX/matmul.blk" M=4096 N=4096 K=4096
expect 0 'dot FLOPs: 0.03355 G' "$BLKC" --report "$EX/matmul_acc.blk" M=256 N=256 K=256
expect 0 'dot FLOPs: unknown' "$BLKC" --report -D CAUSAL=true "$EX/attention.blk" BH=2 S=256
expect 1 'cannot write' "$BLKC" --emit=ir "$EX/add.blk" -o "$T/no/such/dir/x.ir"

# a grid of four parallel axes: the third and fourth share CUDA z
cat >"$T/g4.blk" <<'G4'
kernel g4(o: out i32[A, B, C, D] block (1, 1, 1, 1) index (a, b, c, d) -> (a, b, c, d)) grid (A, B, C, D) {
    o[0, 0, 0, 0] = program_id(3);
}
G4
expect 0 'grid \(2, 3, 35\)' "$BLKC" --report "$T/g4.blk" A=2 B=3 C=5 D=7
expect 1 'kernel g4: grid axis 3 \(70000 programs with the axes it shares CUDA z with\) exceeds the CUDA grid limits' \
	"$BLKC" --emit=ptx "$T/g4.blk" A=2 B=3 C=7 D=10000

# run in the interpreter, .npy out and back in
expect 0 'z: f32\[1000\] -> ' "$BLKC" run --interpret "$EX/add.blk" N=1000 --out-dir="$T"
expect 0 '' test -s "$T/z.npy"
expect 0 'NUMPY' head -c 8 "$T/z.npy"
cp "$T/z.npy" "$T/in.npy"
expect 0 'z: f32\[1000\]' "$BLKC" run --interpret "$EX/add.blk" x="$T/in.npy" y="$T/in.npy" --out-dir="$T"
# a missing --out-dir is made, with the directories above it
expect 0 "z: f32\\[10\\] -> $T/new/sub/dir/z\\.npy" "$BLKC" run --interpret "$EX/add.blk" N=10 --out-dir="$T/new/sub/dir"
[ -f "$T/new/sub/dir/z.npy" ] || { fails=$((fails + 1)); echo "FAIL: --out-dir=$T/new/sub/dir: no z.npy"; }
: > "$T/plain"
expect 1 'the output directory .*/plain is not a directory' "$BLKC" run --interpret "$EX/add.blk" N=10 --out-dir="$T/plain"
expect 1 'cannot make the output directory .*/plain/dir: Not a directory' "$BLKC" run --interpret "$EX/add.blk" N=10 --out-dir="$T/plain/dir"
if grep -q ' -> \|ran in the interpreter' "$T/out"; then
	fails=$((fails + 1))
	echo "FAIL: run with an unwritable --out-dir still ran (or says it wrote an output)"
fi
expect 2 '--out-dir wants a directory' "$BLKC" run --interpret "$EX/add.blk" N=10 --out-dir=
# a rank-0 .npy (numpy.save of a scalar): 10 bytes of magic and length, a
# 118-byte header, one f32
hdr="{'descr': '<f4', 'fortran_order': False, 'shape': (), }"
{ printf '\223NUMPY\001\000\166\000'; printf '%-117s\n' "$hdr"; printf '\000\000\100\100'; } >"$T/s0.npy"
expect 1 's0.npy: an array of rank 0, but x of kernel .add. has rank 1' \
	"$BLKC" run --interpret "$EX/add.blk" x="$T/s0.npy" y="$T/s0.npy"
# .npy input is read no further than it announces, within bounds
expect 1 '/dev/zero: not a .npy file' "$BLKC" run --interpret "$EX/add.blk" x=/dev/zero y=/dev/zero
hdr="{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }"
{ printf '\223NUMPY\001\000\166\000'; printf '%-117s\n' "$hdr"; } >"$T/huge.npy"
expect 1 'huge.npy: the array is larger than 4294967296 bytes' \
	"$BLKC" run --interpret "$EX/add.blk" x="$T/huge.npy" y="$T/huge.npy"
printf '\223NUMPY\002\000\000\000\020\000' >"$T/bighdr.npy"
expect 1 'bighdr.npy: a .npy header of 1048576 bytes; blk reads headers up to 65536' \
	"$BLKC" run --interpret "$EX/add.blk" x="$T/bighdr.npy" y="$T/bighdr.npy"
expect 1 "'a' is too large to allocate \\(blkc run makes arrays of up to 4294967296 bytes\\)" \
	"$BLKC" run --interpret "$EX/matmul.blk" M=100000 N=100000 K=100000
expect 1 "size N of kernel 'add' is unknown" "$BLKC" run --interpret "$EX/add.blk"
expect 1 "'z' is an output" "$BLKC" run --interpret "$EX/add.blk" z="$T/in.npy"
expect 1 'has shape|shape' "$BLKC" run --interpret "$EX/add.blk" N=999 x="$T/in.npy"
expect 1 'cannot open|No such file' "$BLKC" run --interpret "$EX/add.blk" x="$T/nothing.npy"
printf 'not a numpy file' >"$T/bad.npy"
expect 1 'bad.npy' "$BLKC" run --interpret "$EX/add.blk" x="$T/bad.npy" y="$T/bad.npy"
expect 0 'y: f16\[13, 77\]' "$BLKC" run --interpret -D T=f16 "$EX/softmax.blk" R=13 C=77 --out-dir="$T"
expect 0 'c: bf16\[130, 70\]' "$BLKC" run --interpret -D T=bf16 "$EX/matmul_acc.blk" M=130 N=70 K=33 --out-dir="$T"
# an output that is NaN was written: no "never written" (the poison is not
# the NaN a kernel makes)
cat >"$T/nan.blk" <<'NAN'
kernel mknan[T = f16](x: in f32[N] block (N) index (i) -> (0), y: out T[N] block (N) index (i) -> (0)) grid (1) {
    y[...] = (x[...] * 0.0 + nan).astype(T);
}
NAN
for t in f32 f16 bf16; do
	expect 0 "y: $t\\[8\\] -> [^ ]*y\\.npy\$" "$BLKC" run --interpret -D T=$t "$T/nan.blk" N=8 --out-dir="$T"
done
# a run past two seconds says how far it is (BLK_PROGRESS=1: off a terminal
# too), one line rewritten in place; BLK_PROGRESS=0 and a pipe say nothing
cat >"$T/slow.blk" <<'SLOW'
kernel slow(x: in f32[N] block (64) index (i) -> (i), y: out f32[N] block (64) index (i) -> (i)) grid (cdiv(N, 64)) {
    y[...] = fori_loop(0, 16000, x[...]) |k, acc| { acc * 0.5 + 1.0 };
}
SLOW
expect 0 $'\rblk: interpreting slow: program [0-9]+ of 400 \([0-9]+ %\), [0-9]+ s' \
	env BLK_PROGRESS=1 "$BLKC" run --interpret "$T/slow.blk" N=25600 --out-dir="$T"
expect 0 "kernel slow ran" env BLK_PROGRESS=0 "$BLKC" run --interpret "$T/slow.blk" N=25600 --out-dir="$T"
if grep -q 'interpreting slow' "$T/out"; then
	fails=$((fails + 1)); echo "FAIL: BLK_PROGRESS=0 printed progress"
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
	expect 1 'cannot run on the GPU: no CUDA driver' "$BLKC" run "$EX/add.blk" N=10 --out-dir="$T"
fi

echo "$((n - fails)) of $n checks passed"
[ "$fails" -eq 0 ]
