#!/usr/bin/env bash
# docs-in-step.sh - the documents say what the code does: every function of
# blk.h appears in docs/runtime.md's reference with the header's own
# signature (whitespace aside), and docs/language.md's keyword list is the
# lexer's (frontend/lex.h).
#   docs-in-step.sh SOURCE_ROOT
set -euo pipefail
root=$1
decls() {
	awk '/^BLK_API/ { d = ""; on = 1 }
	     on { d = d " " $0 }
	     on && /\);/ { sub(/^ *BLK_API */, "", d); gsub(/[ \t]+/, " ", d); gsub(/\( /, "(", d); print d; on = 0 }' \
		"$root/runtime/include/blk.h"
}
doc=$(tr -s ' \t\n' ' ' <"$root/docs/runtime.md" | sed 's/( /(/g')
n=0 missing=0
while IFS= read -r d; do
	n=$((n + 1))
	if ! grep -qF -- "$d" <<<"$doc"; then
		echo "docs/runtime.md lacks: $d"
		missing=$((missing + 1))
	fi
done < <(decls)
echo "$((n - missing)) of $n signatures of blk.h in docs/runtime.md"

# the keyword bullet of docs/language.md, as words, against lex.h's spellings
lexed=$(sed -n '/keywords (BLK_TOK_KERNEL/,/X(BOOL,/p' "$root/frontend/lex.h" |
	grep -o 'X([A-Z0-9_]*, "[A-Z0-9_]*", "[^"]*")' | sed 's/.*, "\([^"]*\)")/\1/' | sort)
listed=$(sed -n '/^- Keywords:/,/^- [A-Z]/p' "$root/docs/language.md" | sed '$d' | tr '\n' ' ' |
	sed 's/Builtin functions.*//' | grep -o '`[^`]*`' | tr -d '`' | tr ' ' '\n' | grep . | sort)
kw_ok=1
if [ "$lexed" != "$listed" ]; then
	kw_ok=0
	echo "docs/language.md's keywords differ from frontend/lex.h's:"
	diff <(echo "$lexed") <(echo "$listed") | grep '^[<>]' | sed 's/^</  only in lex.h:/; s/^>/  only in the docs:/'
fi
[ "$n" -gt 50 ] && [ "$missing" -eq 0 ] && [ "$kw_ok" -eq 1 ]
