// The GPU targets tritium compiles for: which architectures and PTX ISA versions it accepts, in
// one place, so that specializations, tritiumc, tritium-opt and the PTX emitter refuse the same
// inputs with the same words (docs/LIMITS.md).
#pragma once

#include <string>
#include <vector>

namespace tritium {

// Ampere, Ada and Hopper: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a. LLVM 22 knows older and
// newer ones (sm_70, sm_100, sm_120, ...), but tritium's instruction choices (cp.async, TMA,
// clusters) and shared-memory limits are modelled for these only.
const std::vector<std::string> &supportedArchs();
// PTX ISA versions x 10 that LLVM 22's NVPTX backend emits and every supported architecture
// takes: 78, 80 to 88, and 90.
const std::vector<int> &supportedPtxVersions();

// The architecture's number: 90 for sm_90 and sm_90a, 0 for a name not of the form sm_NN.
int smNumber(const std::string &arch);

// Empty when `arch` is supported, else the complaint ("unknown GPU architecture 'sm_1'; ...").
std::string checkArch(const std::string &arch);
// Empty when `ptxVersion` is supported and new enough for `arch` (sm_90a needs 80), else the
// complaint.
std::string checkPtxVersion(int ptxVersion, const std::string &arch);

} // namespace tritium
