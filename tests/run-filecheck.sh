#!/bin/sh
# run-filecheck.sh CHECKFILE CMD ARGS... - runs CMD and pipes its stdout to
# FileCheck CHECKFILE.  Fails if CMD fails or FileCheck does.  FileCheck is
# $FILECHECK, else FileCheck-19, else FileCheck.
set -u
if [ $# -lt 2 ]; then
	echo "usage: run-filecheck.sh CHECKFILE CMD ARGS..." >&2
	exit 2
fi
check=$1
shift
fc=${FILECHECK:-}
if [ -z "$fc" ]; then
	fc=$(command -v FileCheck-19 || command -v FileCheck || true)
fi
if [ -z "$fc" ]; then
	echo "run-filecheck.sh: FileCheck not found" >&2
	exit 77
fi
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" > "$out"
rc=$?
if [ $rc -ne 0 ]; then
	echo "run-filecheck.sh: '$*' failed with status $rc" >&2
	exit 1
fi
"$fc" --input-file="$out" "$check"
