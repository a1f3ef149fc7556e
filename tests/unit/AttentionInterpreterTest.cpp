// The library's attention forward in the interpreter (tests/AttentionCases.h): the twins of
// tests/gpu/AttentionGpuTest.cpp, on shapes small enough for the CPU.
#include "AttentionCases.h"

#include "interpreter/Interpreter.h"

using namespace tritium;
using namespace tritium::testing::attention;
using interpreter::HostBuffer;

namespace {

class AttentionInterpreterTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  std::function<void()> sync = [] {};
};

TEST_F(AttentionInterpreterTest, Forward) {
  checkAttention<HostBuffer>(nullptr, sync,
                             {.batch = 1, .heads = 4, .kvHeads = 2, .seqQ = 70, .seqKV = 90});
  checkAttention<HostBuffer>(nullptr, sync,
                             {.dtype = kernels::Dtype::fp16, .batch = 2, .heads = 2,
                              .kvHeads = 1, .seqQ = 33, .seqKV = 33, .causal = true,
                              .seqMajor = true});
  // More queries than keys: the first rows see no key and give zeros.
  checkAttention<HostBuffer>(nullptr, sync,
                             {.heads = 1, .kvHeads = 1, .seqQ = 40, .seqKV = 17, .headDim = 128,
                              .causal = true, .scale = 0.3f});
}

TEST_F(AttentionInterpreterTest, RefusesBadArguments) {
  kernels::AttentionArgs a{.o = this, .q = this, .k = this, .v = this, .heads = 6, .kvHeads = 4,
                           .seqQ = 8, .headDim = 64};
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("heads (6) must be a multiple of kv_heads (4)"),
              std::string::npos)
        << e.what();
  }
  a.kvHeads = 2;
  a.headDim = 96;
  try {
    kernels::attentionForward(a, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("head_dim must be 64 or 128, got 96"), std::string::npos)
        << e.what();
  }
}

} // namespace
