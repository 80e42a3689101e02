#!/bin/sh
# pass-ir.sh BLKC FILECHECK FILE.ir - the per-pass tests written as IR text.
#
# FILE.ir starts with "; RUN: blkc ARGS" (ARGS as `blkc --from-ir CASE`
# takes them: --pass=NAME, -k, SIZE=VALUE).  Cases are split at lines
# "; -----".  A case with "; ERROR: TEXT" lines must fail (exit 1) with
# each TEXT on a line of blkc's errors; any other case must succeed and
# its output match the case's "; CHECK..." lines under FileCheck.
blkc="$1"; fc="$2"; file="$3"
head -n 1 "$file" | grep -q '^; RUN: blkc' || { echo "$file: no '; RUN: blkc' first line"; exit 1; }
args=$(sed -n '1s/^; RUN: blkc *//p' "$file")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" 'BEGIN { n = 1 } /^; -----/ { n++; next } { print > (dir "/case" n ".ir") }' "$file"
fail=0
for c in "$tmp"/case*.ir; do
	name="$(basename "$file"):$(basename "$c" .ir)"
	# shellcheck disable=SC2086
	"$blkc" --from-ir "$c" $args > "$tmp/out" 2> "$tmp/err"; rc=$?
	if grep -q '^; ERROR: ' "$c"; then
		[ $rc -eq 1 ] || { echo "FAIL $name: exit $rc, expected 1"; fail=1; continue; }
		sed -n 's/^; ERROR: //p' "$c" | while IFS= read -r want; do
			grep -qF -- "$want" "$tmp/err" || { echo "FAIL $name: no error '$want' in:"; cat "$tmp/err"; exit 1; }
		done || fail=1
	elif [ $rc -ne 0 ]; then
		echo "FAIL $name: exit $rc"; cat "$tmp/err"; fail=1
	elif ! "$fc" "$c" < "$tmp/out"; then
		echo "FAIL $name: FileCheck"; fail=1
	fi
done
[ $fail -eq 0 ] && echo "all cases of $(basename "$file") pass"
exit $fail
