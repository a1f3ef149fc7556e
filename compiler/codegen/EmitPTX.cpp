// The NVPTX back end, initialised once per process: target machine for the requested
// architecture and PTX version, the IR optimization (OptimizeLLVM.cpp), then code generation and
// assembly printing.
#include "compiler/codegen/EmitPTX.h"
#include "compiler/codegen/LinkLibdevice.h"
#include "compiler/codegen/OptimizeLLVM.h"

#include "compiler/support/Error.h"
#include "compiler/support/Log.h"

#include <llvm/ADT/ScopeExit.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/OptBisect.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include <chrono>
#include <mutex>

namespace tritium::codegen {

static const llvm::Target &nvptxTarget(const llvm::Triple &triple) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    internalError("NVPTX target unavailable in this LLVM: " + err);
  return *t;
}

std::string emitPTX(llvm::Module &mod, const TargetOptions &target, std::string *optimizedIR) {
  using Clock = std::chrono::steady_clock;
  auto us = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
  };
  auto t0 = Clock::now();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  const llvm::Target &t = nvptxTarget(triple);
  // Asked of a known CPU, so LLVM does not print its own warning about an unknown one.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t.createMCSubtargetInfo(triple, "sm_90", ""));
  if (!sti->isCPUStringValid(target.arch))
    throw UserError("unknown GPU architecture '" + target.arch +
                    "' (expected e.g. sm_80, sm_90)");
  std::string features = "+ptx" + std::to_string(target.ptxVersion);
  // Code generation at Default, not Aggressive: NVPTX then cleans up after its address
  // strength reduction with EarlyCSE instead of GVN, which gave the same PTX on every library
  // kernel compared, 5-10% sooner (ptxas does the register allocation and scheduling).
  std::unique_ptr<llvm::TargetMachine> tm(
      t.createTargetMachine(triple, target.arch, features, llvm::TargetOptions(), std::nullopt,
                            std::nullopt, llvm::CodeGenOptLevel::Default));
  mod.setTargetTriple(triple);
  mod.setDataLayout(tm->createDataLayout());
  linkLibdevice(mod);

  auto t1 = Clock::now();
  optimizeLLVM(mod, *tm, target.pipeline);
  auto t2 = Clock::now();
  if (optimizedIR) {
    optimizedIR->clear();
    llvm::raw_string_ostream os(*optimizedIR);
    mod.print(os, nullptr);
  }

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  // The back end's passes ask the context's gate whether to run (by their argument names);
  // this one turns the strength reduction away for the module's code generation only, the
  // context's own gate back however it ends.
  struct WithoutStrengthReduction : llvm::OptPassGate {
    bool shouldRunPass(llvm::StringRef pass, llvm::StringRef) const override {
      return pass != "slsr";
    }
    bool isEnabled() const override { return true; }
  } gate;
  llvm::LLVMContext &context = mod.getContext();
  llvm::scope_exit restore(
      [&context, &previous = context.getOptPassGate()] { context.setOptPassGate(previous); });
  if (!target.strengthReduction)
    context.setOptPassGate(gate);
  llvm::legacy::PassManager pm;
  // No verifier runs here: the lowering verified the module, and LLVM's passes keep it valid.
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile,
                              /*DisableVerify=*/true))
    internalError("the NVPTX target cannot emit assembly");
  pm.run(mod);
  log().debug("NVPTX: target machine {} us, {} pipeline {} us, code generation {} us", us(t0, t1),
              llvmPipelineName(target.pipeline), us(t1, t2), us(t2, Clock::now()));
  return std::string(ptx.str());
}

} // namespace tritium::codegen
