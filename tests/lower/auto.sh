#!/bin/sh
# auto.sh BLKC FILE.blk [ARGS...] - the cost model's choice for `auto`
# parameters (ARGS give sizes and -D NAME=auto) is what blkc compiles: its
# PTX is byte for byte that of the same kernel with the chosen values given
# as -D, and the choice is noted on stderr.
blkc="$1"; src="$2"; shift 2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$blkc" "$src" --emit=ptx "$@" > "$tmp/auto.ptx" 2> "$tmp/err" || { cat "$tmp/err"; exit 1; }
chosen=$(sed -n 's/^blkc: kernel [^ ]*: auto chose \([^ ]*\) .*/\1/p' "$tmp/err")
[ -n "$chosen" ] || { echo "FAIL: no choice noted on stderr:"; cat "$tmp/err"; exit 1; }
# the same arguments, each `-D NAME=auto` left out, the chosen values given
args=""
skip=0
for a in "$@"; do
	if [ "$a" = "-D" ]; then skip=1; continue; fi
	if [ $skip = 1 ]; then
		skip=0
		case "$a" in *=auto) continue ;; esac
		args="$args -D $a"
		continue
	fi
	args="$args $a"
done
for v in $(echo "$chosen" | tr ',' ' '); do args="$args -D $v"; done
"$blkc" "$src" --emit=ptx $args > "$tmp/given.ptx" 2> "$tmp/err2" || { cat "$tmp/err2"; exit 1; }
if ! cmp -s "$tmp/auto.ptx" "$tmp/given.ptx"; then
	echo "FAIL: the PTX with auto differs from the PTX with $chosen given"
	exit 1
fi
echo "$(basename "$src"): auto chose $chosen"
