// The code every generated AOT source carries, in its anonymous namespace: loading an embedded
// kernel once per CUDA context (cubin first, PTX when the driver has no binary for the GPU),
// tritium's persistent grid, the launch, and the thread's last error message. Only cuda.h and
// the C++ standard library: the shipped program needs libcuda alone.
#pragma once

namespace tritium::aot {

// C++17 text, the same in every generated file (its own anonymous namespace keeps files apart).
const char *launcherRuntimeText();

} // namespace tritium::aot
