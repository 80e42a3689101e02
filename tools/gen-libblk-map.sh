#!/usr/bin/env bash
# gen-libblk-map.sh - rewrites runtime/libblk.map from the BLK_API functions
# of runtime/include/blk.h (run after adding one; tests/install checks that
# the two agree).
set -euo pipefail
cd "$(dirname "$0")/.."
names=$(grep -A1 '^BLK_API' runtime/include/blk.h | grep -o 'blk_[a-z0-9_]*(' | tr -d '(' | sort -u)
{
	echo "/* libblk.map - the symbols libblk.so exports: exactly the BLK_API functions"
	echo " * of blk.h (tests/install/install.sh compares the two; tools/gen-libblk-map.sh"
	echo " * writes this file).  Everything else, blk's internals and LLVM, stays local. */"
	echo "BLK_0 {"
	echo "global:"
	for n in $names; do printf '\t%s;\n' "$n"; done
	echo "local:"
	printf '\t*;\n'
	echo "};"
} >runtime/libblk.map
