// Launches with typed arguments (Kernel::launch, frontend/TypedArguments.h), in the
// interpreter: the signature Triton would infer (dtypes from the pointers' C++ types and tensor
// views, i32 or i64 by value, ":16" and ":1" marks), constexprs by name, one compile per
// specialization, results against a reference, and every mistake as a UserError naming the
// parameter.
#include "TypedLaunchCases.h"

#include "interpreter/Interpreter.h"
#include "interpreter/Memory.h"

using namespace tritium;
using namespace tritium::testing::typedlaunch;
using interpreter::HostBuffer;

namespace {

class TypedLaunchTest : public tritium::testing::CompilerTest {
protected:
  void SetUp() override { setInterpret(true); }
  void TearDown() override { resetInterpret(); }
  AxpyKernel k = axpyKernel();
};

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "no error";
}

TEST_F(TypedLaunchTest, InfersTritonsSignature) {
  HostBuffer x(4096), y(4096), out(4096);
  auto *xf = static_cast<float *>(x.data());
  auto *yi = static_cast<int8_t *>(y.data());
  Tensor yb = tensor(y.data(), "bf16", {1000});
  EXPECT_EQ(yb.stride(0), 1);
  auto sig = [&](std::initializer_list<Arg> args) {
    return k.specializationFor(args, {{"BLOCK", 256}}).signature;
  };
  float *o = static_cast<float *>(out.data());
  using V = std::vector<std::string>;
  EXPECT_EQ(sig({xf, yi, o, 1000, 2.0f}), (V{"*fp32:16", "*i8:16", "*fp32:16", "i32", "fp32"}));
  EXPECT_EQ(sig({xf + 1, yb, o, 1024, 2.0}), (V{"*fp32", "*bf16:16", "*fp32:16", "i32:16", "fp32"}));
  EXPECT_EQ(sig({xf, yb, o, int64_t(1), 0.5f}), (V{"*fp32:16", "*bf16:16", "*fp32:16", "i32:1", "fp32"}));
  EXPECT_EQ(sig({xf, yb, o, int64_t(1) << 40, 0.5f}),
            (V{"*fp32:16", "*bf16:16", "*fp32:16", "i64:16", "fp32"}));
  Specialization s = k.specializationFor({xf, yb, o, 7, 1.0f}, {{"BLOCK", 128}},
                                         {.numWarps = 8, .numStages = 3});
  EXPECT_EQ(s.constexprs, (std::vector<int64_t>{128}));
  EXPECT_EQ(s.numWarps, 8);
  EXPECT_EQ(s.numStages, 3);
}

TEST_F(TypedLaunchTest, RunsAndCompilesEachSpecializationOnce) {
  for (int64_t n : {1000, 1024})
    for (bool bf16 : {false, true})
      checkAxpy<HostBuffer>(k, nullptr, [] {}, n, bf16);
}

TEST_F(TypedLaunchTest, MistakesNameTheParameter) {
  HostBuffer b(1024);
  auto *p = static_cast<float *>(b.data());
  auto launch = [&](std::initializer_list<Arg> args, std::initializer_list<ConstexprArg> c) {
    return messageOf([&] { k.launch(1, nullptr, args, c); });
  };
  auto contains = [](const std::string &m, const std::string &needle) {
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  };
  contains(launch({p, p, p, 16}, {{"BLOCK", 64}}),
           "kernel 'axpy': takes 5 runtime arguments (x, y, out, n, scale), but 4 were given");
  contains(launch({p, 3, p, 16, 1.0f}, {{"BLOCK", 64}}),
           "argument 'y' is a pointer parameter, but an integer was given");
  contains(launch({p, p, p, p, 1.0f}, {{"BLOCK", 64}}),
           "argument 'n' is an integer parameter, but a pointer was given");
  contains(launch({p, p, p, 16, 2}, {{"BLOCK", 64}}),
           "argument 'scale' is a float parameter, but an integer was given (pass a float: 2.0f)");
  contains(launch({p, p, p, 16, 1.0f}, {}),
           "the compile-time parameter 'BLOCK' was not given ({\"BLOCK\", value})");
  contains(launch({p, p, p, 16, 1.0f}, {{"BLOCK", 64}, {"BLOK", 1}}),
           "kernel 'axpy': has no parameter 'BLOK'");
  contains(launch({p, p, p, 16, 1.0f}, {{"BLOCK", 64}, {"n", 16}}),
           "'n' is a runtime parameter: pass it among the arguments, not by name");
  contains(launch({p, p, p, 16, 1.0f}, {{"BLOCK", 64}, {"BLOCK", 32}}),
           "the compile-time parameter 'BLOCK' was given twice");
  contains(messageOf([&] { tensor(p, "float64", {4}); }), "tensor: unknown dtype 'float64'");
  contains(messageOf([&] { tensor(p, "fp32", {4, 4}, {1}); }),
           "tensor: 1 strides for a shape of 2 dimensions");
}

} // namespace
