#!/bin/sh
# spelling.sh BLKC EXAMPLE.blk SPELLING.blk [ARGS...] - two spellings of one
# kernel lower to the same code: the PTX of SPELLING.blk (a rewrite a user
# might write, tests/lower/spellings/) is byte for byte that of EXAMPLE.blk
# at the same sizes and defines (ARGS).  Where the two differ, the diff
# and each one's barriers and shared bytes are printed.
blkc="$1"; ex="$2"; sp="$3"; shift 3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$blkc" "$ex" --emit=ptx "$@" > "$tmp/ex.ptx" || exit 1
"$blkc" "$sp" --emit=ptx "$@" > "$tmp/sp.ptx" || exit 1
if cmp -s "$tmp/ex.ptx" "$tmp/sp.ptx"; then
	echo "$(basename "$sp") lowers as $(basename "$ex") does: $*"
	exit 0
fi
echo "FAIL $(basename "$sp") $*: its PTX differs from $(basename "$ex")'s"
for f in ex sp; do
	printf '  %s: %s barriers, %s\n' "$f" "$(grep -c 'bar.sync\|barrier.sync' "$tmp/$f.ptx")" \
		"$("$blkc" --report "$( [ $f = ex ] && echo "$ex" || echo "$sp")" "$@" 2>/dev/null | head -n 1)"
done
diff "$tmp/ex.ptx" "$tmp/sp.ptx" | head -n 20
exit 1
