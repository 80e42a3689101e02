#!/bin/sh
# run.sh [SECONDS] - builds the frontend with libFuzzer + ASan + UBSan into a
# temp dir and fuzzes it for SECONDS (default 60).  Exits non-zero on a
# crash, leak or timeout; the reproducer is left in $BLK_FUZZ_ARTIFACTS
# (default build-fuzz/artifacts, git-ignored).
#
#   BLK_FUZZ_FULL=1 tests/fuzz/run.sh 300   fuzz the whole frontend
#                                           (blk_compile_source), not just
#                                           the parser
#   BLK_FUZZ_SRCS="frontend/check.c ..."    extra sources the full build needs
#                                           (default: every .c in frontend/ and ir/)
set -eu
secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC_FUZZ:-clang-19}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
artifacts=${BLK_FUZZ_ARTIFACTS:-$root/build-fuzz/artifacts}
mkdir -p "$artifacts" "$tmp/corpus"

re2c -W --no-generation-date -o "$tmp/lexer.c" "$root/frontend/lexer.re"

defs=""
if [ -n "${BLK_FUZZ_FULL:-}" ]; then
	defs="-DBLK_FUZZ_FULL"
	srcs=${BLK_FUZZ_SRCS:-$(ls "$root"/frontend/*.c "$root"/ir/*.c "$root"/support/*.c)}
else
	srcs="$root/frontend/parse.c $root/frontend/ast.c $root/support/arena.c $root/support/diag.c"
fi
# shellcheck disable=SC2086
$cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L $defs -I"$root" \
	"$root/tests/fuzz/fuzz_frontend.c" "$tmp/lexer.c" $srcs -lm -o "$tmp/fuzz_frontend"

# Seeds: the examples and the bad-input corpus.
for f in "$root"/examples/*.blk "$root"/tests/frontend/bad/*.blk; do
	cp "$f" "$tmp/corpus/"
done

dict="$tmp/blk.dict"
for w in kernel in out inout scratch block index grid seq let when else scoped print \
	fori_loop None true false inf nan f32 f16 bf16 i32 bool ds at astype T fn associative_scan '|' \
	'->' '...' '~/' '==' '!=' '<=' '>=' '&&' '||' '/*' '*/' '//'; do
	printf '"%s"\n' "$w" >> "$dict"
done

"$tmp/fuzz_frontend" "$tmp/corpus" -dict="$dict" -max_len=4096 -timeout=5 \
	-rss_limit_mb=2048 -max_total_time="$secs" -print_final_stats=1 \
	-artifact_prefix="$artifacts/"
