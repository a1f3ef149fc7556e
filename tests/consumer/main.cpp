// A user's program against an installed tritium (tests/consumer, built by tools/ci-consumer.sh):
// defines a small kernel in the DSL, compiles it to PTX, runs it on a GPU when there is one and
// in tritium's CPU interpreter when there is not, checks the result, and calls one kernel of the
// library with a wrong argument to see its check. Exits 0 when everything held.
#include <tritium/frontend/Tritium.h>
#include <tritium/kernels/Elementwise.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace tritium;
using namespace tritium::dsl;

namespace {

// Each program scales and shifts BLOCK elements (out = x * a + 1) and writes their sum.
void scaleShift(Ptr out, Ptr sums, Ptr x, Int n, Float a, int BLOCK) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  auto y = load(x + offs, mask, 0.0) * a + 1.0;
  store(out + offs, y, mask);
  store(sums + program_id(0), sum(where(mask, y, 0.0), 0));
}

int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += ok ? 0 : 1;
}

// Runs the kernel on `Buffer` (rt::DeviceBuffer or interpreter::HostBuffer) and checks it.
template <typename Buffer> void runAndCheck(CompiledKernel &k, int block, CUstream stream) {
  const int n = 1000;
  const float a = 0.5f;
  const int64_t programs = (n + block - 1) / block;
  std::vector<float> x(n), out(n), sums(programs);
  for (int i = 0; i < n; ++i)
    x[i] = float(i % 17) - 8.0f;
  Buffer dx(n * sizeof(float)), dout(n * sizeof(float)), dsums(programs * sizeof(float));
  dx.upload(x.data(), x.size() * sizeof(float));
  k.launch(programs, stream, {dout, dsums, dx, n, a});
  dout.download(out.data(), out.size() * sizeof(float));
  dsums.download(sums.data(), sums.size() * sizeof(float));
  bool ok = true;
  std::vector<double> want(programs, 0.0);
  for (int i = 0; i < n; ++i) {
    ok = ok && out[i] == x[i] * a + 1.0f;
    want[i / block] += double(x[i]) * a + 1.0;
  }
  for (int64_t p = 0; p < programs; ++p)
    ok = ok && std::fabs(sums[p] - want[p]) <= 1e-4 * (1.0 + std::fabs(want[p]));
  expect(ok, "out = x * a + 1 and the per-program sums match the reference");
}

} // namespace

int main() {
  try {
    std::printf("tritium consumer\n");
    auto kernel = tritium::kernel("scale_shift", scaleShift, {"out", "sums", "x", "n", "a", "BLOCK"});
    const int block = 256;
    CompiledKernel &k = kernel.compile(
        {.signature = {"*fp32", "*fp32", "*fp32", "i32", "fp32"}, .constexprs = {block}});
    const std::string &ptx = k.artifacts().ptx;
    expect(ptx.find(".entry scale_shift") != std::string::npos,
           "compiled to PTX with the kernel's entry (" + std::to_string(ptx.size()) + " bytes)");

    std::string why;
    if (!interpreting() && rt::Driver::available(&why)) {
      std::printf("running on the GPU\n");
      rt::Stream stream;
      runAndCheck<rt::DeviceBuffer>(k, block, stream.get());
    } else {
      if (!interpreting())
        std::printf("no usable GPU (%s): not launched; running in the interpreter instead\n",
                    why.c_str());
      setInterpret(true);
      runAndCheck<interpreter::HostBuffer>(k, block, nullptr);
    }

    // The kernel library checks its arguments before compiling or launching anything.
    float b = 0;
    try {
      kernels::vectorAdd(kernels::Dtype::fp32, nullptr, &b, &b, 1, nullptr);
      expect(false, "vectorAdd with a null output throws");
    } catch (const UserError &e) {
      std::string message = e.what();
      expect(message.find("vectorAdd: out is null") != std::string::npos,
             "vectorAdd with a null output throws: " + message);
    }
  } catch (const std::exception &e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  std::printf(failures ? "%d check(s) FAILED\n" : "all checks passed\n", failures);
  return failures ? 1 : 0;
}
