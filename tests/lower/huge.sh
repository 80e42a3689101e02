#!/bin/sh
# huge.sh BLKC - a huge kernel (lower/lower_int.h, BLK_HUGE_KERNEL_OPS:
# thousands of unrolled stores or `when`s) takes the linear path: guarded
# stores become predicated PTX stores of every width (emit_memory.c), its
# straight line is cut into blocks of bounded size (emit_llvm.c), and no
# barrier follows another with nothing in between.  The same kernels at
# a tenth of the size take the ordinary path (a branch around each store).
# Where ptxas is installed, every PTX is assembled too.
set -u
blkc=$1
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# scalar STORES of T (a transit extract each): y[i] = v[i] + i
stores() { # n T
	awk -v n="$1" -v t="$2" 'BEGIN {
		printf "kernel many(x: in %s[N] block (N) index (i) -> (0),\n", t
		printf "            y: out %s[N] block (N) index (i) -> (0)) grid (1) {\n    let v = x[...];\n", t
		for (i = 0; i < n; i++) printf "    y[%d] = v[%d] + %d;\n", i % 64, i % 64, i % 7
		print "}" }'
}
# `when`s storing a whole block of T (the store's owner threads guarded)
whens() { # n T
	awk -v n="$1" -v t="$2" 'BEGIN {
		printf "kernel many(x: in %s[N] block (N) index (i) -> (0),\n", t
		printf "            y: out %s[N] block (N) index (i) -> (0)) grid (4) {\n", t
		for (i = 0; i < n; i++) printf "    when program_id(0) == %d { y[...] = x[...] + %d; }\n", i % 4, i % 7
		print "}" }'
}
# bool outputs: a comparison stored (one byte an element)
flags() { # n
	awk -v n="$1" 'BEGIN {
		print "kernel many(x: in f32[N] block (N) index (i) -> (0),"
		print "            y: out bool[N] block (N) index (i) -> (0)) grid (4) {"
		for (i = 0; i < n; i++) printf "    when program_id(0) == %d { y[...] = x[...] > %d.0; }\n", i % 4, i % 7
		print "}" }'
}

# check NAME PTX PATTERN...: every grep -E pattern occurs in PTX
check() {
	name=$1 f=$2
	shift 2
	for pat in "$@"; do
		if ! grep -qE -e "$pat" "$f"; then
			echo "FAIL $name: no '$pat'"
			fail=1
		fi
	done
}

# lower NAME N SIZE GEN ARGS...: the PTX of GEN ARGS at N=SIZE in $tmp/NAME.ptx
lower() {
	name=$1 size=$2
	shift 2
	"$@" > "$tmp/$name.blk"
	if ! "$blkc" --emit=ptx --arch=sm_90a "$tmp/$name.blk" N="$size" -o "$tmp/$name.ptx" 2> "$tmp/err"; then
		echo "FAIL $name: blkc"
		cat "$tmp/err"
		fail=1
		return 1
	fi
	# two barriers in a row order nothing the first did not
	if awk '/bar\.sync|barrier\.sync/ { if (prev ~ /bar\.sync|barrier\.sync/) { bad = 1 } }
	        { prev = $0 } END { exit !bad }' "$tmp/$name.ptx"; then
		echo "FAIL $name: a barrier right after a barrier"
		fail=1
	fi
	if [ -x "$ptxas" ] && ! "$ptxas" -arch=sm_90a "$tmp/$name.ptx" -o "$tmp/$name.cubin" 2> "$tmp/err"; then
		echo "FAIL $name: ptxas"
		head -n 5 "$tmp/err"
		fail=1
	fi
	return 0
}

# Huge: predicated stores, global and shared (the transit), each width.
P='@%p[0-9]+ st'
lower stores-f32 64 stores 1500 f32 && check stores-f32 "$tmp/stores-f32.ptx" \
	"$P\.global\.b32 \[%rd[0-9]+\], %f" "$P\.shared\.v4\.b32 "
lower stores-f16 64 stores 1500 f16 && check stores-f16 "$tmp/stores-f16.ptx" \
	"$P\.global\.b16 " "$P\.shared\.(v4\.b32|b64) "
lower stores-i8 64 stores 1500 i8 && check stores-i8 "$tmp/stores-i8.ptx" "$P\.global\.b8 "
lower whens-f32 64 whens 1200 f32 && check whens-f32 "$tmp/whens-f32.ptx" "$P\.global\.v4\.b32 "
lower whens-bf16 64 whens 1200 bf16 && check whens-bf16 "$tmp/whens-bf16.ptx" "$P\.global\.(v4\.b32|b64) "
lower whens-i32-ragged 61 whens 1200 i32 && check whens-i32-ragged "$tmp/whens-i32-ragged.ptx" "$P\.global\.(v4\.b32|b32) "
lower flags 64 flags 1200 && check flags "$tmp/flags.ptx" "$P\.global\.b(8|16|32) "
# No straight line longer than the blocks it is cut into: the stores of
# stores-f32 are 9000 ops without a branch, yet come in many blocks.
blocks=$(grep -cE '^\$L__BB' "$tmp/stores-f32.ptx")
if [ "$blocks" -lt 20 ]; then
	echo "FAIL stores-f32: $blocks blocks for 9000 straight-line ops"
	fail=1
fi

# Ordinary size: a branch around each guarded store, no predicated ones.
lower small-stores 64 stores 150 f32
lower small-whens 64 whens 120 f32
for k in small-stores small-whens; do
	if grep -qE "$P" "$tmp/$k.ptx"; then
		echo "FAIL $k: predicated stores in a kernel of ordinary size"
		fail=1
	fi
done
exit $fail
