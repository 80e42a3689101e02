#!/bin/sh
# gpu-run.sh - the runtime's GPU batch, run on the device machine from the
# repository root with the build/ made on the CPU machine carried along
# (the device machine has no LLVM; libblk carries it).  About 8 min warm; a
# cold machine compiles every kernel once (gpu-examples once ran past 200 s).
#
#   tools/gpu-run.sh [blk-bench args...]
#
# Logs go to $OUT (if set) as nvidia-smi.txt, gpu-examples.txt, gpu-features.txt,
# test-runtime.txt, kernel-fuzz.txt, sanitizers.txt, matmul-host.txt, bench.txt (and bench.json,
# bench.png: tools/bench_json.py), bench-torch.txt; the bench tables (blk-bench's,
# then tools/bench_torch.py's torch reference rows) are printed last.
set -u
B=${BLK_BUILD:-build}
LOG=${OUT:-/tmp/blk-gpu-run}
mkdir -p "$LOG"
export BLK_EXAMPLES_DIR="$PWD/examples"

# cuBLAS for blk-bench: the CUDA toolkit's or the one inside PyTorch's wheels.
if [ -z "${BLK_CUBLAS:-}" ]; then
	d=$(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__)+"/lib")' 2>/dev/null)
	[ -z "$d" ] && d=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__)+"/lib")' 2>/dev/null)
	f=$(ls "$d"/libcublas.so* 2>/dev/null | grep -v Lt | head -n 1)
	[ -n "$f" ] && export BLK_CUBLAS="$f"
fi
echo "BLK_CUBLAS=${BLK_CUBLAS:-(system)}"

rc=0
nvidia-smi 2>&1 | tee "$LOG/nvidia-smi.txt" | head -n 15

echo "== gpu-examples"
timeout 300 "$B/tests/gpu/gpu-examples" > "$LOG/gpu-examples.txt" 2>&1
r=$?; [ $r -ne 0 ] && rc=1
# The whole table is in the log; here the failures (with the error line
# before each) and the summary.
grep -B 3 'FAIL' "$LOG/gpu-examples.txt" | head -n 60; tail -n 1 "$LOG/gpu-examples.txt"; echo "gpu-examples exit $r"

echo "== gpu-features"
timeout 240 "$B/tests/gpu/gpu-features" > "$LOG/gpu-features.txt" 2>&1
r=$?; [ $r -ne 0 ] && rc=1
# The whole table is in the log; here the failures and the summary.
grep -E 'FAIL' "$LOG/gpu-features.txt" | head -n 20; tail -n 2 "$LOG/gpu-features.txt"; echo "gpu-features exit $r"

echo "== runtime tests (the tuner on the GPU, a fake driver)"
timeout 120 env BLK_FAKE_CUDA="$PWD/$B/tests/runtime/libfakecuda.so" "$B/tests/runtime/test_runtime" \
	> "$LOG/test-runtime.txt" 2>&1
r=$?; [ $r -ne 0 ] && rc=1
grep -E 'PASSED|FAILED|SKIPPED' "$LOG/test-runtime.txt"; echo "test_runtime exit $r"

echo "== kernel-fuzz (random kernels, the GPU against the interpreter)"
# ${BLK_KFUZZ_SECONDS:-60} s of kernels from a seed that changes per run; a
# finding prints the kernel and the seed that reproduces it
if [ -x "$B/tests/fuzz/kernel-fuzz" ]; then
	timeout 180 "$B/tests/fuzz/kernel-fuzz" --gpu --no-ptxas --seed "${BLK_KFUZZ_SEED:-$(date +%s)}" \
		--seconds "${BLK_KFUZZ_SECONDS:-60}" > "$LOG/kernel-fuzz.txt" 2>&1
	r=$?; [ $r -ne 0 ] && rc=1
	grep -A 30 'FINDING' "$LOG/kernel-fuzz.txt" | head -n 60; tail -n 1 "$LOG/kernel-fuzz.txt"
	echo "kernel-fuzz exit $r"
fi

# compute-sanitizer on the kernel shapes whose synchronization is the most
# involved: warp-specialized (TMA and cp.async producers, two consumer
# warpgroups, ping-pong), two dots on one slab, attention.  synccheck's
# one known report is the K = 77 case (2-byte pieces: a producer thread
# arrives twice a phase, which tests/gpu/synccheck shows the tool misreads).
echo "== compute-sanitizer"
if command -v compute-sanitizer > /dev/null; then
	bf="-D T=bf16 -D BM=128 -D BN=128"
	for t in memcheck racecheck synccheck; do
		for k in "examples/matmul.blk M=512 N=512 K=256 $bf -D BK=64 -D num_warps=8" \
		         "examples/matmul_nt.blk M=300 N=260 K=130 $bf -D BK=64 -D num_warps=4 -D num_stages=3" \
		         "examples/matmul.blk M=2100 N=2200 K=136 $bf -D BK=64 -D num_warps=4 -D num_stages=5" \
		         "examples/swiglu.blk M=300 N=256 K=128 $bf -D BK=64 -D num_warps=8 -D num_stages=3" \
		         "examples/attention.blk BH=2 S=300 -D T=bf16 -D D=64 -D BQ=128 -D BK=64 -D num_warps=8 -D CAUSAL=true" \
		         "examples/matmul.blk M=300 N=200 K=77 $bf -D BK=16 -D num_warps=8"; do
			# shellcheck disable=SC2086
			n=$(timeout 120 compute-sanitizer --tool $t "$B/tools/blkc" run $k 2>&1 |
				sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p; s/.*RACECHECK SUMMARY: \([0-9]*\) hazard.*/\1/p' | head -n 1)
			echo "$t: ${n:-?} errors: $k"
		done
	done > "$LOG/sanitizers.txt" 2>&1
	cat "$LOG/sanitizers.txt"
fi

echo "== matmul-host"
host="$B/examples/host/matmul-host"
[ -x "$host" ] || host="$B/tools/matmul-host"
timeout 60 "$host" 1024 1024 1024 examples/matmul.blk > "$LOG/matmul-host.txt" 2>&1
r=$?; [ $r -ne 0 ] && rc=1
cat "$LOG/matmul-host.txt"; echo "matmul-host exit $r"

echo "== blk-bench"
timeout 330 "$B/tools/blk-bench" "$@" > "$LOG/bench.txt" 2> "$LOG/bench.err"
r=$?; [ $r -ne 0 ] && rc=1
tail -n 20 "$LOG/bench.err"
cat "$LOG/bench.txt"; echo "blk-bench exit $r"
# The same tables as JSON, and the matmul rows drawn (where matplotlib is).
python3 tools/bench_json.py "$LOG/bench.txt" -o "$LOG/bench.json" --png "$LOG/bench.png" &&
	echo "bench.json$( [ -f "$LOG/bench.png" ] && echo ', bench.png') in $LOG"

# torch's ops at the shapes of blk-bench's attention and norm rows.
echo "== bench_torch.py"
timeout 90 python3 tools/bench_torch.py > "$LOG/bench-torch.txt" 2>&1
r=$?; [ $r -ne 0 ] && rc=1
cat "$LOG/bench-torch.txt"; echo "bench_torch exit $r"
exit $rc
