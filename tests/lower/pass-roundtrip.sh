#!/bin/sh
# pass-roundtrip.sh BLKC FILE.blk [ARGS...] - nothing a pass hands the next
# lives outside the IR: each IR pass, run alone on the IR the pipeline
# printed before it (blkc --from-ir --pass), prints the IR the pipeline
# printed after it, byte for byte; and the backend run on the last pass's
# IR text (--from-ir --emit=ptx) gives the PTX the whole pipeline gives.
# ARGS are blkc's for FILE.blk (SIZE=VALUE, -D NAME=VALUE, --arch=ARCH);
# the arch goes to the --from-ir runs too, the sizes to specialize's.
blkc="$1"; file="$2"; shift 2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
sizes="" arch=""
for a in "$@"; do
	case "$a" in
	--arch=*) arch="$a" ;;
	-D) ;;
	*=*) case "$prev" in -D) ;; *) sizes="$sizes $a" ;; esac ;;
	esac
	prev="$a"
done
"$blkc" "$file" --emit=ptx "$@" > "$tmp/want.ptx" || exit 1
"$blkc" "$file" --dump-after=all "$@" > "$tmp/dump" 2>&1 || exit 1
# one file per pass: IR after PASS -> PASS.ir, in order in $tmp/order
awk -v dir="$tmp" '
	/^\/\/ ----- IR after / { f = dir "/" $5 ".ir"; print $5 > (dir "/order"); next }
	/^\/\/ ----- / { f = ""; next }
	f { print > f }' "$tmp/dump"
fail=0 prevpass=""
for p in $(cat "$tmp/order"); do
	if [ -n "$prevpass" ]; then
		given=""
		[ "$p" = specialize ] && given=$sizes # (the one pass that reads them)
		# shellcheck disable=SC2086
		if ! "$blkc" --from-ir "$tmp/$prevpass.ir" --pass="$p" $given $arch > "$tmp/got" 2> "$tmp/err"; then
			echo "FAIL $file $*: --pass=$p on the IR after $prevpass:"; cat "$tmp/err"; fail=1
		elif ! cmp -s "$tmp/got" "$tmp/$p.ir"; then
			echo "FAIL $file $*: --pass=$p from text differs from the pipeline's:"
			diff "$tmp/$p.ir" "$tmp/got" | head -20; fail=1
		fi
	fi
	prevpass=$p
done
# shellcheck disable=SC2086
if ! "$blkc" --from-ir "$tmp/$prevpass.ir" --emit=ptx $arch > "$tmp/got.ptx" 2> "$tmp/err"; then
	echo "FAIL $file $*: --emit=ptx on the IR after $prevpass:"; cat "$tmp/err"; fail=1
elif ! cmp -s "$tmp/got.ptx" "$tmp/want.ptx"; then
	echo "FAIL $file $*: the PTX from the IR after $prevpass differs:"
	diff "$tmp/want.ptx" "$tmp/got.ptx" | head -20; fail=1
fi
[ $fail -eq 0 ] && echo "$(wc -l < "$tmp/order") passes of $(basename "$file") $* run from text alike"
exit $fail
