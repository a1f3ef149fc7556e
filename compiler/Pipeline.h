// The compiler pipeline, stage by stage:
//   TIR -> verify -> CSE/DCE -> GIR (layouts, shared memory) -> LLVM IR -> optimized -> PTX
// Every stage's text is kept; TRITIUM_DUMP_DIR also writes each one as soon as it exists, so a
// failing compile still leaves the stages before the failure on disk.
#pragma once

#include "compiler/codegen/OptimizeLLVM.h"
#include "compiler/ir/IR.h"
#include "compiler/ir/Printer.h"

#include <optional>
#include <string>

namespace tritium {

enum class Stage { TIR, GIR, LLVM, PTX };
const char *stageName(Stage s); // "tir", "gir", "llvm", "ptx"
std::optional<Stage> parseStage(const std::string &name);

struct CompileOptions {
  std::string arch = "sm_90";
  int ptxVersion = 81; // PTX ISA x 10
  int numWarps = 4;
  int numStages = 1;
  int clusterSize = 1; // programs per thread-block cluster; must match the TIR's cluster_size
  // Warp-sized programs per CTA; must match the TIR's programs_per_cta (Specialization says more).
  int programsPerCTA = 1;
  // Shared memory one CTA may use (the pipelining ring's budget); 0: the architecture's limit.
  int64_t maxSharedBytes = 0;
  // Pipelined loads of whole contiguous rows as one bulk copy per stage, and tiles of tensor
  // descriptors as one TMA copy (sm_90 and later), where they qualify; false: one 16-byte
  // cp.async per thread and vector everywhere.
  bool bulkCopies = true;
  // tritium's LLVM passes or LLVM's O3 (TRITIUM_LLVM_PIPELINE, codegen/OptimizeLLVM.h).
  codegen::LLVMPipeline llvmPipeline = codegen::LLVMPipeline::Lean;
  // NVPTX's straight-line strength reduction in the back end (Specialization says when to turn
  // it off).
  bool strengthReduction = true;
};

// The most dynamic shared memory one CTA may use on `arch` (227 KiB on sm_90).
int64_t maxSharedBytesFor(const std::string &arch);
// Whether `options` lets the pipeliner use bulk copies: asked for, sm_90 or later, PTX ISA 8.0+.
bool bulkCopiesAllowed(const CompileOptions &options);

struct Artifacts {
  std::string tir;  // after TIR optimization, with source locations
  std::string gir;  // with layouts and shared memory
  std::string llvm; // after the LLVM optimization (codegen/OptimizeLLVM.h)
  std::string ptx;
  int64_t sharedBytes = 0;
  // The kernel waits for the one before it (griddep_wait on sm_90 and later): launch it with
  // programmatic stream serialization so that it may start early.
  bool waitsOnPriorKernel = false;
  // The kernel calls grid_sync: launch it cooperatively (every program resident at once), which
  // also gives it the driver's grid-barrier word.
  bool syncsGrid = false;
  // Warps the CTA runs past num_warps x programs: a producer warp that issues a
  // warp-specialized loop's copies (gpu/SpecializeWarps.cpp).
  int producerWarps = 0;
  // Compute warp groups of num_warps warps each that take alternate tiles of a persistent
  // kernel's walk (a tile loop's ping_pong, gpu/SpecializeWarps.cpp): the CTA runs this many
  // times num_warps compute warps.
  int computeGroups = 1;
  // The CUtensorMaps the launch encodes from the arguments and passes after them, as
  // ir::printTensorMaps writes them ("" when none: gpu/ChooseTensorMaps.cpp).
  std::string tensorMaps;

  const std::string &text(Stage s) const {
    return s == Stage::TIR ? tir : s == Stage::GIR ? gir : s == Stage::LLVM ? llvm : ptx;
  }
};

// Verifies the traced kernel and simplifies it; the result is the TIR that is cached and keyed.
void optimizeTIR(ir::Function &fn);

// Lowers optimized TIR down to `last`; later fields of the result stay empty. `print` shapes the
// tir and gir texts (tools print them without locations for FileCheck).
Artifacts compileTIR(ir::Function &fn, const CompileOptions &options, Stage last = Stage::PTX,
                     const ir::PrintOptions &print = {});

} // namespace tritium
