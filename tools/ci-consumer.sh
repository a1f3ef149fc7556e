#!/usr/bin/env bash
# CI: tritium as an installed library. Installs an already built tree (default build/, as
# tools/bootstrap.sh makes it) into a temporary prefix and checks it from outside the source
# tree, as a user would use it:
#   1. the installed files name no path of the source or build tree;
#   2. every installed header compiles, all in one translation unit, with pkg-config's flags;
#   3. tests/consumer, copied to a temporary folder, configured with only
#      CMAKE_PREFIX_PATH=<prefix> (find_package(tritium)), built and run (main.cpp through
#      tritium::tritium and tritium::kernels, capi.c through tritium::kernels_c);
#   4. find_package(tritium 0.0 / 0.2 / 1.0) refused (the version rule, SameMinorVersion);
#   5. the same main.cpp built with one g++ command line from `pkg-config --cflags --libs` and run;
#   6. consumer_aot: ahead-of-time kernels that the consumer's own generator wrote at build time
#      (tritium_add_aot_kernels), in a C program that needs libcuda and not libtritium.
# Neither build may see LLVM's headers, and neither program may link libLLVM or libcuda itself.
# Usage: tools/ci-consumer.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
start=$SECONDS
step() { echo "ci-consumer [$((SECONDS - start))s]: $*"; }
fail() { echo "ci-consumer: FAILED: $*" >&2; exit 1; }

step "installing $build into a temporary prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/tritium/frontend/Tritium.h include/tritium/kernels/Softmax.h bin/tritiumc \
         bin/tritium-opt; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
config="$(find "$prefix" -name tritiumConfig.cmake)"
[ -n "$config" ] || fail "tritiumConfig.cmake was not installed"
[ -e "$(dirname "$config")/tritiumConfigVersion.cmake" ] || fail "no tritiumConfigVersion.cmake"
pcdir="$(dirname "$(find "$prefix" -name tritium.pc)")"
[ -e "$pcdir/tritium-kernels.pc" ] || fail "no tritium-kernels.pc beside tritium.pc"
if grep -rlI -e "$src" -e "$build" "$prefix"; then
  fail "the installed files above name the source or build tree"
fi
if find "$prefix" -maxdepth 1 -type f | grep .; then
  fail "the device bundle's flat files above leaked into a normal install"
fi

step "the installed tools run"
"$prefix/bin/tritiumc" --emit=tir --n-cols=781 >"$work/softmax.tir"
"$prefix/bin/tritium-opt" --emit=ptx "$work/softmax.tir" >"$work/softmax.ptx"
grep -q '\.entry' "$work/softmax.ptx" || fail "tritium-opt --emit=ptx printed no kernel entry"

export PKG_CONFIG_PATH="$pcdir"
cflags="$(pkg-config --cflags tritium-kernels)"
libs="$(pkg-config --libs tritium-kernels)"
case "$cflags" in *llvm*) fail "pkg-config's flags name LLVM: $cflags" ;; esac

step "every installed header compiles with pkg-config's flags"
(cd "$prefix/include" && find tritium -name '*.h' | sort | sed 's/.*/#include <&>/') \
  >"$work/all_headers.cpp"
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
g++ -std=c++20 -fsyntax-only $cflags "$work/all_headers.cpp"

step "tests/consumer with find_package (CMAKE_PREFIX_PATH only)"
cp -r "$src/tests/consumer" "$work/consumer"
cmake -S "$work/consumer" -B "$work/consumer-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer-configure.log" \
  || { cat "$work/consumer-configure.log"; fail "configuring the consumer"; }
cmake --build "$work/consumer-build" >"$work/consumer-build.log" \
  || { cat "$work/consumer-build.log"; fail "building the consumer"; }
if grep -iE '^ *(FLAGS|INCLUDES|DEFINES) = .*llvm' "$work/consumer-build/build.ninja"; then
  fail "the consumer was compiled with LLVM's flags: tritium::tritium leaks them"
fi
# A program links libtritium from the prefix (not the build tree) and neither LLVM nor the driver.
check_needed() {
  if readelf -d "$1" | grep NEEDED | grep -E 'libLLVM|libcuda'; then
    fail "$1 links libLLVM or libcuda directly"
  fi
  # grep without -q reads all of ldd's output: with -q it may exit first, and under pipefail
  # ldd's SIGPIPE fails the check (a flaky CI run, 2026-11-27).
  ldd "$1" | grep "=> $prefix/.*libtritium.so" >/dev/null ||
    fail "$1 does not load the installed libtritium.so"
}
check_needed "$work/consumer-build/consumer"
"$work/consumer-build/consumer"
"$work/consumer-build/consumer_c"

step "consumer_aot (tritium_add_aot_kernels) needs libcuda, not libtritium"
aot="$work/consumer-build/consumer_aot"
[ -e "$work/consumer-build/consumer_aot_aot/scale.cpp" ] || fail "the AOT generator wrote no scale.cpp"
if readelf -d "$aot" | grep NEEDED | grep -E 'libtritium|libLLVM'; then
  fail "consumer_aot links tritium or LLVM"
fi
readelf -d "$aot" | grep NEEDED | grep 'libcuda\.so\.1' >/dev/null ||
  fail "consumer_aot does not link libcuda"
if ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
  "$aot"
else
  cuda_stub="$(dirname "$(grep -m1 -o '[^ ]*stubs/libcuda.so' "$work/consumer-build/build.ninja")")"
  mkdir "$work/driver-stub"
  ln -s "$cuda_stub/libcuda.so" "$work/driver-stub/libcuda.so.1"
  LD_LIBRARY_PATH="$work/driver-stub" "$aot"
fi

step "tritiumConfigVersion.cmake refuses other minor versions (SameMinorVersion)"
mkdir "$work/version"
cat >"$work/version/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(tritium_version_check LANGUAGES NONE)
foreach(wanted 0.0 0.2 1.0)
  find_package(tritium ${wanted} CONFIG QUIET)
  if(tritium_FOUND)
    message(FATAL_ERROR "find_package(tritium ${wanted}) accepted tritium ${tritium_VERSION}")
  endif()
endforeach()
EOF
cmake -S "$work/version" -B "$work/version-build" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/version.log" || { cat "$work/version.log"; fail "the version check"; }

step "the same main.cpp with pkg-config and g++"
# shellcheck disable=SC2086
g++ -std=c++20 -O1 "$work/consumer/main.cpp" -o "$work/consumer-pc" $cflags $libs \
  -Wl,-rpath,"$(pkg-config --variable=libdir tritium)"
check_needed "$work/consumer-pc"
"$work/consumer-pc"
step "done"
