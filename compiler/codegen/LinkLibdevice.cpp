// CUDA's libdevice (the math library nvcc links, from the toolkit's nvvm/libdevice) is built
// into libtritium at build time, so a GPU machine needs no toolkit. A module that calls
// __nv_* functions gets just those read (lazily) and linked in, then internalized, so the
// optimizer inlines them and drops the rest; libdevice's __nvvm_reflect queries are answered
// by NVPTX's NVVMReflect pass.
#include "compiler/codegen/LinkLibdevice.h"

#include "compiler/support/Error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>

#ifdef TRITIUM_LIBDEVICE
// The bitcode, embedded by the assembler (the path is set by CMake).
asm(".section .rodata\n"
    ".balign 16\n"
    ".globl tritium_libdevice_begin\n"
    "tritium_libdevice_begin:\n"
    ".incbin \"" TRITIUM_LIBDEVICE "\"\n"
    ".globl tritium_libdevice_end\n"
    "tritium_libdevice_end:\n"
    ".previous\n");
extern "C" const char tritium_libdevice_begin[], tritium_libdevice_end[];
#endif

namespace tritium::codegen {

void linkLibdevice(llvm::Module &mod) {
  std::vector<std::string> wanted;
  for (const llvm::Function &f : mod)
    if (f.isDeclaration() && f.getName().starts_with("__nv_"))
      wanted.push_back(f.getName().str());
  if (wanted.empty())
    return;
#ifndef TRITIUM_LIBDEVICE
  throw UserError("'" + wanted[0] + "' needs CUDA's libdevice, which this build of tritium does "
                  "not have (CMake did not find nvvm/libdevice/libdevice.10.bc under "
                  "CUDA_TOOLKIT_ROOT)");
#else
  llvm::MemoryBufferRef buffer(
      llvm::StringRef(tritium_libdevice_begin,
                      size_t(tritium_libdevice_end - tritium_libdevice_begin)),
      "libdevice.10.bc");
  // Lazily: only the functions the link needs are read from the 460 KB of bitcode.
  auto lib = llvm::getLazyBitcodeModule(buffer, mod.getContext());
  if (!lib)
    internalError("cannot read the embedded libdevice: " + llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(mod.getTargetTriple());
  (*lib)->setDataLayout(mod.getDataLayout());
  if (llvm::Linker::linkModules(mod, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    internalError("linking libdevice failed");
  // Only the kernel stays visible: the library's functions may be inlined and removed.
  for (llvm::Function &f : mod)
    if (!f.isDeclaration() && f.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &g : mod.globals())
    if (!g.isDeclaration() && g.getName() != "global_smem")
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
#endif
}

} // namespace tritium::codegen
