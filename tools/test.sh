#!/usr/bin/env bash
# test.sh - builds blk and runs every test: the suite, the suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, a bounded fuzz run of the
# frontend and one of the differential kernel fuzzer (tests/fuzz/kernel_fuzz.c),
# and the Python package installed by pip.  This is README's test command and
# what CI runs.
#   tools/test.sh            everything
#   BLK_FUZZ_SECONDS=N       fuzz for N seconds (default 120; 0 skips)
#   BLK_SKIP_SANITIZE=1      skip the sanitizer build
#   BLK_SKIP_PIP=1           skip `pip install .` and the Python tests against it
# (The Python tests against the build tree run in the suite: `meson test`.)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh

jobs=$(nproc)
step() { printf '\n=== %s\n' "$*"; }

step "build and test (build/)"
[ -d build ] || meson setup build
meson test -C build --num-processes "$jobs" --print-errorlogs

if [ "${BLK_SKIP_SANITIZE:-0}" != 1 ]; then
	step "build and test under ASan + UBSan (build-sanitize/)"
	[ -d build-sanitize ] || CC=clang-19 CXX=clang++-19 meson setup build-sanitize \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-sanitize --num-processes "$jobs" --print-errorlogs \
		--timeout-multiplier 4
fi

if [ "${BLK_SKIP_PIP:-0}" != 1 ]; then
	step "pip install . into a venv, the Python tests against the installed package"
	rm -rf build-venv
	/usr/bin/python3 -m venv --system-site-packages build-venv 2>/dev/null ||
		python3 -m venv --system-site-packages build-venv
	build-venv/bin/pip install -q .
	(cd build-venv && env -u BLK_LIBRARY BLK_TEST_INSTALLED=1 \
		BLK_FAKE_CUDA="$PWD/../build/tests/runtime/libfakecuda.so" \
		bin/python ../python/tests/test_blk.py)
	step "jax.jit on the CPU: the installed package's XLA handlers (jax[cpu] into the venv)"
	build-venv/bin/pip install -q 'jax[cpu]==0.10.2'
	(cd build-venv && env -u BLK_LIBRARY BLK_TEST_INSTALLED=1 BLK_TEST_JAX=1 \
		bin/python ../python/tests/test_jax.py)
	build-venv/bin/python tests/docs/doc_examples.py --build build --python build-venv/bin/python \
		docs/python.md
fi

secs=${BLK_FUZZ_SECONDS:-120}
if [ "$secs" -gt 0 ]; then
	step "fuzz the frontend for ${secs}s"
	BLK_FUZZ_FULL=1 tests/fuzz/run.sh "$secs"
	step "differential fuzz of well-typed kernels for ${secs}s (build-sanitize/)"
	# random kernels through the frontend, the interpreter, the lowering and
	# ptxas, under ASan + UBSan; the seed changes per run, and a finding
	# prints the kernel and the seed that reproduces it
	seed=${BLK_KFUZZ_SEED:-$(date +%s)}
	bin=build-sanitize/tests/fuzz/kernel-fuzz
	[ -x "$bin" ] || bin=build/tests/fuzz/kernel-fuzz
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$bin" --seed "$seed" --seconds "$secs"
fi
step "all tests passed"
