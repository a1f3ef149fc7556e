// Warming the driver's PTX JIT while tritium's own compiler runs. The first PTX a process hands
// the driver pays for loading and starting its JIT compiler (docs/notes/compile-time.md)
// on top of compiling the kernel. A cache miss starts a tiny PTX compile on a background thread
// before lowering through LLVM, so that start-up overlaps tritium's own work instead of
// following it.
#pragma once

namespace tritium::rt {

// Starts the warm-up once per process, for PTX ISA `ptxVersion` (x 10). Does nothing when there
// is no usable driver or when TRITIUM_JIT_WARMUP=0. Never throws: a failed warm-up only means
// the first real JIT pays the start-up itself, and reports its own errors.
void startJitWarmUp(int ptxVersion);

// Waits until a started warm-up has finished (at once when none was started), so that the
// first real JIT does not run beside it.
void waitForJitWarmUp();

} // namespace tritium::rt
