#!/bin/sh
# run.sh - issue 28's synccheck question on the smallest kernel: does
# compute-sanitizer's synccheck accept a producer thread that arrives on an
# mbarrier twice a phase (cp.async.mbarrier.arrive, which does not count,
# then mbarrier.arrive, which does)?  blk emits that pair only where a
# producer's copies store pieces too narrow for cp.async (a plain arrive
# must release them); elsewhere one cp.async.mbarrier.arrive.noinc.
#   run.sh build DIR   on a machine with nvcc (CUDA 12.3 or later): DIR gets
#                      pair0.ptx, pair1.ptx (PTX ISA 8.0) and run_arrive
#   run.sh check DIR   on the GPU machine: both kernels plainly (their sums
#                      must be right), then both under synccheck
set -eu
here=$(dirname "$0")
case "${1:-}" in
build)
	out=$2; mkdir -p "$out"
	for p in 0 1; do
		nvcc -arch=sm_90a -ptx -DPAIR=$p -o "$out/pair$p.ptx" "$here/arrive_pair.cu"
		sed -i 's/^\.version 9\..*/.version 8.0/' "$out/pair$p.ptx" # nothing past 8.0 in it
	done
	cuda=$(dirname "$(dirname "$(command -v nvcc)")")
	cc -O1 -I"$cuda/include" -o "$out/run_arrive" "$here/run_arrive.c" -L"$cuda/lib64/stubs" -lcuda
	;;
check)
	dir=$2
	for p in 0 1; do
		"$dir/run_arrive" "$dir/pair$p.ptx"
		echo "synccheck, PAIR=$p:"
		compute-sanitizer --tool synccheck --print-limit 2 "$dir/run_arrive" "$dir/pair$p.ptx" 2>&1 |
			grep -E "Barrier error|by thread|ERROR SUMMARY|sums wrong" | head -n 6
	done
	;;
*)
	echo "usage: run.sh build DIR | check DIR" >&2; exit 2 ;;
esac
