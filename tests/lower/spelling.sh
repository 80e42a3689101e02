#!/bin/sh
# spelling.sh BLKC EXAMPLE.blk SPELLING.blk [--bound=BARRIERS,SMEM] [ARGS...]
# - two spellings of one kernel lower to the same code: the PTX of
# SPELLING.blk (a rewrite a user might write, tests/lower/spellings/) is
# byte for byte that of EXAMPLE.blk at the same sizes and defines (ARGS).
# Where the two differ, the diff and each one's barriers and shared bytes
# are printed.
#
# With --bound, the spelling is one the normal form does not (yet) make
# identical -- a rewrite that is not exact (a rounding policy would have to
# allow it) or that only orders independent ops differently -- and the test
# states how far apart the two may be: the spelling's PTX has at most
# BARRIERS more barriers and SMEM more bytes of shared memory than the
# example's (0,0: the same resources, other instructions or another order).
# Should it become identical, the test says so (and passes).
blkc="$1"; ex="$2"; sp="$3"; shift 3
bound=
case "$1" in --bound=*) bound=${1#--bound=}; shift ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$blkc" "$ex" --emit=ptx "$@" > "$tmp/ex.ptx" || exit 1
"$blkc" "$sp" --emit=ptx "$@" > "$tmp/sp.ptx" || exit 1
if cmp -s "$tmp/ex.ptx" "$tmp/sp.ptx"; then
	echo "$(basename "$sp") lowers as $(basename "$ex") does: $*${bound:+ (now identical: --bound can go)}"
	exit 0
fi
# barriers and shared bytes of one side's PTX and report
barriers() { grep -c 'bar.sync\|barrier.sync' "$tmp/$1.ptx"; }
smem() { f=$1; shift; "$blkc" --report "$f" "$@" 2>/dev/null | sed -n '1s/.* \([0-9]*\) bytes of shared memory.*/\1/p'; }
eb=$(barriers ex) sb=$(barriers sp)
es=$(smem "$ex" "$@") ss=$(smem "$sp" "$@")
if [ -n "$bound" ]; then
	db=${bound%,*} ds=${bound#*,}
	if [ "$sb" -le $((eb + db)) ] && [ "${ss:-0}" -le $((${es:-0} + ds)) ]; then
		echo "$(basename "$sp") within its bound of $(basename "$ex") (+$db barriers, +$ds shared bytes): $sb/$eb barriers, $ss/$es bytes: $*"
		exit 0
	fi
	echo "FAIL $(basename "$sp") $*: past its bound (+$db barriers, +$ds shared bytes)"
else
	echo "FAIL $(basename "$sp") $*: its PTX differs from $(basename "$ex")'s"
fi
printf '  ex: %s barriers, %s shared bytes\n  sp: %s barriers, %s shared bytes\n' "$eb" "$es" "$sb" "$ss"
diff "$tmp/ex.ptx" "$tmp/sp.ptx" | head -n 20
exit 1
