#!/bin/sh
# filecheck.sh FILECHECK CHECKFILE PREFIX -- lower-dump args...
fc="$1"; chk="$2"; pfx="$3"; shift 4
"$@" > out.$$ || { rm -f out.$$; exit 1; }
"$fc" --check-prefix="$pfx" "$chk" < out.$$; rc=$?
rm -f out.$$; exit $rc
