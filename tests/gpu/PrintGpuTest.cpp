// print() on the GPU: vprintf output of a small kernel, captured from stdout, has one line per
// element with the program id, the element index and the value.
#include "frontend/Tritium.h"

#include "GpuTestSupport.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

using namespace tritium;
using namespace tritium::dsl;

namespace {

void printKernel(Ptr x, int BLOCK) {
  auto offs = arange(0, BLOCK);
  print("x =", load(x + offs) + program_id(0));
}

class PrintGpuTest : public tritium::testing::CompilerTest {};

TEST_F(PrintGpuTest, EveryElementOfEveryProgramIsPrinted) {
  SKIP_WITHOUT_GPU();
  auto k = kernel("print_kernel", printKernel, {"x", "BLOCK"});
  CompiledKernel &c = k.compile({.signature = {"*i32"}, .constexprs = {8}, .numWarps = 1});
  std::vector<int32_t> host = {10, 11, 12, 13, 14, 15, 16, 17};
  rt::DeviceBuffer x(host.size() * 4);
  x.upload(host.data(), host.size() * 4);
  rt::Stream s;
  fflush(stdout);
  ::testing::internal::CaptureStdout();
  c.launch(2, s.get(), {x});
  s.sync();
  fflush(stdout);
  std::string out = ::testing::internal::GetCapturedStdout();
  std::set<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    lines.insert(line);
  for (int pid = 0; pid < 2; ++pid)
    for (int i = 0; i < 8; ++i) {
      std::string expected = "pid (" + std::to_string(pid) + ") idx (" + std::to_string(i) +
                             ") x = " + std::to_string(10 + i + pid);
      EXPECT_TRUE(lines.count(expected)) << "missing '" << expected << "' in:\n" << out;
    }
}

} // namespace
