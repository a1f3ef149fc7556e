// See Cumsum.h. Reduce then scan reads the input twice and writes the output once: at best
// two thirds of a copy's speed. A single pass (each block waiting on its predecessors' published
// sums, CUB's decoupled look-back) reads it once; it needs a spin on flags across programs
// that the interpreter cannot check, and has not been written.
#include "kernels/Cumsum.h"

#include "frontend/DSL.h"
#include "frontend/Kernel.h"
#include "kernels/Arguments.h"
#include "runtime/Device.h"

#include <string>

namespace tritium::kernels {

using namespace tritium::dsl;

namespace {

constexpr int kBlock = 4096; // elements a program scans: 32 a thread on 4 warps
constexpr int kChunk = 1024; // block sums the single program scans a step

// The sum type: fp32 for floats, i32 for i32.
Value accumulate(Value x, bool exact) { return exact ? x : cast(x, float32); }

// sums[pid] = x[pid * BLOCK ...] summed.
void cumsum_block_sums(Ptr sums, Ptr x, Int n, int BLOCK, int EXACT) {
  auto i = cast(program_id(0), int64) * BLOCK + arange(0, BLOCK);
  auto v = accumulate(load(x + i, i < n, 0), EXACT);
  store(sums + program_id(0), sum(v, 0));
}

// sums[b] = sums[0] + ... + sums[b - 1] (exclusive), in place, CHUNK sums a step.
void cumsum_scan_sums(Ptr sums, Int blocks, int CHUNK, int EXACT) {
  Value carry = EXACT ? Value(cast(0, int32)) : Value(cast(0.0, float32));
  for (auto c : range(0, blocks, CHUNK)) {
    auto b = c + arange(0, CHUNK);
    auto s = load(sums + b, b < blocks, 0);
    auto inclusive = cumsum(s, 0);
    store(sums + b, inclusive - s + carry, b < blocks);
    carry = carry + sum(s, 0);
  }
}

// out[pid * BLOCK ...] = the block's scan plus its prefix sums[pid].
void cumsum_blocks(Ptr out, Ptr x, Ptr sums, Int n, int BLOCK, int EXACT) {
  auto i = cast(program_id(0), int64) * BLOCK + arange(0, BLOCK);
  auto v = accumulate(load(x + i, i < n, 0), EXACT);
  auto y = cumsum(v, 0) + load(sums + program_id(0));
  store(out + i, cast(y, out.dtype()), i < n);
}

Kernel &blockSumsKernel() {
  static auto k = kernel("cumsum_block_sums", cumsum_block_sums, {"sums", "x", "n", "BLOCK", "EXACT"});
  return k;
}
Kernel &scanSumsKernel() {
  static auto k = kernel("cumsum_scan_sums", cumsum_scan_sums, {"sums", "blocks", "CHUNK", "EXACT"});
  return k;
}
Kernel &blocksKernel() {
  static auto k =
      kernel("cumsum_blocks", cumsum_blocks, {"out", "x", "sums", "n", "BLOCK", "EXACT"});
  return k;
}

int64_t blocksOf(int64_t n) { return (n + kBlock - 1) / kBlock; }

} // namespace

int64_t cumsumWorkspaceBytes(int64_t n) { return blocksOf(n < 0 ? 0 : n) * 4; }

void cumsum(Dtype dtype, void *out, const void *x, int64_t n, void *workspace,
            int64_t workspaceBytes, CUstream stream) {
  Arguments args("cumsum");
  if (!isFloatStorage(dtype) && dtype != Dtype::int32)
    args.fail("dtype must be fp32, fp16, bf16 or int32, got " + dtypeName(dtype));
  KernelArg o = args.pointer("out", out), in = args.pointer("x", x);
  args.atLeast("n", n, 0);
  if (n == 0)
    return;
  KernelArg ws = args.pointer("workspace", workspace);
  int64_t need = cumsumWorkspaceBytes(n);
  if (workspaceBytes < need)
    args.fail("workspaceBytes is " + std::to_string(workspaceBytes) + ", but this call needs " +
              std::to_string(need) + " (cumsumWorkspaceBytes)");
  bool exact = dtype == Dtype::int32;
  std::string t = "*" + dtypeName(dtype), s = exact ? "*i32" : "*fp32";
  int64_t blocks = blocksOf(n);
  auto launch = [&](Kernel &k, Specialization spec, int64_t grid,
                    std::initializer_list<KernelArg> launchArgs) {
    spec.awaitPreviousKernel = true;
    k.compile(spec.specializedFor(launchArgs)).launch(grid, stream, launchArgs);
  };
  launch(blockSumsKernel(),
         {.signature = {s, t, "i64"}, .constexprs = {kBlock, exact ? 1 : 0}, .numWarps = 4},
         blocks, {ws, in, n});
  launch(scanSumsKernel(),
         {.signature = {s, "i64"}, .constexprs = {kChunk, exact ? 1 : 0}, .numWarps = 4}, 1,
         {ws, blocks});
  launch(blocksKernel(),
         {.signature = {t, t, s, "i64"}, .constexprs = {kBlock, exact ? 1 : 0}, .numWarps = 4},
         blocks, {o, in, ws, n});
}

} // namespace tritium::kernels
