#!/usr/bin/env bash
# CI's second build: tritium under AddressSanitizer and UndefinedBehaviorSanitizer (clang 22, in
# build-asan), the unit and lit tests run there, then the libFuzzer target of the text parser and
# tritium-opt's pipeline for TRITIUM_FUZZ_SECONDS (default 60), seeded from tests/lit, the seed
# corpus in tests/fuzz/corpus (every op) and the saved findings in tests/fuzz/regressions. Any
# sanitizer report or fuzzer finding fails. .ci/run calls it after the first build's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS="${TRITIUM_FUZZ_SECONDS:-60}"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
# clang 22 (bookworm-security, as LLVM 22 is) brings libFuzzer and the sanitizer runtimes.
if ! command -v clang++-22 >/dev/null || [ ! -d /usr/lib/llvm-22/lib/clang/22/lib/linux ]; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends clang-22 libclang-rt-22-dev
fi

start=$(date +%s)
# -O1, as sanitizer builds usually are: the build takes much less time than at -O3 and the tests
# spend theirs in LLVM (not instrumented) anyway.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++-22 -DTRITIUM_SANITIZE=ON -DTRITIUM_FUZZ=ON
# aot_consumer (ctest runs it too) exists where the CUDA toolkit has its driver stub.
aot_target="$(cmake --build build-asan --target help | grep -o '^aot_consumer' || true)"
cmake --build build-asan --target tritium_tests tritiumc tritium-opt fuzz_tritium_opt $aot_target
echo "ci-sanitizers: build took $(( $(date +%s) - start )) s"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
export TRITIUM_CACHE_DIR="$(mktemp -d)" # none of the first build's cache entries
start=$(date +%s)
ctest --test-dir build-asan --output-on-failure -j2
echo "ci-sanitizers: tests took $(( $(date +%s) - start )) s"

corpus="$(mktemp -d)"
artifacts="${TRITIUM_FUZZ_ARTIFACTS:-$(mktemp -d)}"
cp tests/lit/*.tir tests/fuzz/corpus/* tests/fuzz/regressions/* "$corpus"/
start=$(date +%s)
echo "ci-sanitizers: fuzzing for ${FUZZ_SECONDS} s (findings go to $artifacts)"
build-asan/tests/fuzz/fuzz_tritium_opt -max_total_time="$FUZZ_SECONDS" -max_len=8192 \
  -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 -dict=tests/fuzz/tir.dict \
  -artifact_prefix="$artifacts/" "$corpus"
echo "ci-sanitizers: fuzzing took $(( $(date +%s) - start )) s"
