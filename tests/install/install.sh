#!/usr/bin/env bash
# install.sh - `meson install` into a temporary DESTDIR, then uses the tree
# as a user would: the files are there, libblk.so.0 exports exactly the
# BLK_API functions of the installed blk.h, the installed blkc runs (it finds
# its library through its run path), and a C program builds with
# `cc host.c $(pkg-config --cflags --libs blk)` and runs (interpreter, no GPU).
#   install.sh BUILD_DIR SOURCE_ROOT [sanitized]
# Under sanitizers the C program is not built (a plain cc program cannot
# load an instrumented libblk); the rest still runs.
set -euo pipefail
build=$1 root=$2 sanitized=${3:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$build" --destdir "$T/dest" --no-rebuild --quiet >"$T/log" 2>&1 ||
	{ cat "$T/log"; fail "meson install"; }

# 1. the files
one() { find "$T/dest" -path "$1" | head -n 1; }
blkc=$(one '*/bin/blkc')
header=$(one '*/include/blk.h')
pc=$(one '*/pkgconfig/blk.pc')
lib=$(one '*/libblk.so.0')
for v in blkc header pc lib; do
	[ -n "${!v}" ] || fail "no $v in the install tree"
done
[ -L "$(dirname "$lib")/libblk.so" ] || fail "no libblk.so link for -lblk"
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[ "$soname" = libblk.so.0 ] || fail "soname is '$soname', want libblk.so.0"

# 2. exactly the public API exported
grep -A1 '^BLK_API' "$header" | grep -o 'blk_[a-z0-9_]*(' | tr -d '(' | sort -u >"$T/api"
nm -D --defined-only "$lib" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort -u >"$T/exported"
diff -u "$T/api" "$T/exported" >"$T/diff" ||
	{ cat "$T/diff"; fail "libblk.so.0 exports other than blk.h's BLK_API functions (- header, + library)"; }
echo "ok: $(wc -l <"$T/api") functions exported, the same as blk.h declares"

# 3. blkc from the install tree
env -u LD_LIBRARY_PATH "$blkc" --version | grep -q '^blkc [0-9]' || fail "installed blkc --version"
(cd "$T" && env -u LD_LIBRARY_PATH "$blkc" run --interpret "$root/examples/add.blk" N=100 \
	--out-dir="$T" >/dev/null) || fail "installed blkc run --interpret"
[ -f "$T/z.npy" ] || fail "installed blkc wrote no z.npy"
echo "ok: the installed blkc runs"

# 4. a C program through pkg-config
if [ -n "$sanitized" ]; then
	echo "skip: the C program (sanitized build)"
	exit 0
fi
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$T/dest" pkg-config --cflags --libs blk)
cc -std=c11 -Wall -Werror "$root/tests/install/host.c" $flags -o "$T/host" ||
	fail "cc host.c $flags"
LD_LIBRARY_PATH=$(dirname "$lib") "$T/host" || fail "the installed C program"
