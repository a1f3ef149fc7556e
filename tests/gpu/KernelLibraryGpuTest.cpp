// The kernel library on the GPU against double-precision references (tests/KernelLibraryCases.h):
// every kernel, dtype and direction, odd sizes, padded strides, misaligned bases, extreme rows,
// the cluster path of long rows, and the dropout mask against Triton's tl.rand.
#include "GpuTestSupport.h"
#include "KernelLibraryCases.h"

#include "kernels/Autotuner.h"
#include "kernels/SoftmaxPlan.h"
#include "runtime/Memory.h"
#include "runtime/TuningRecord.h"

using namespace tritium;
using namespace tritium::testing::library;
using rt::DeviceBuffer;

namespace {

class KernelLibraryGpuTest : public tritium::testing::GpuStreamTest {};

const Dtype kDtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};

TEST_F(KernelLibraryGpuTest, VectorAdd) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes) {
    checkVectorAdd<DeviceBuffer>(stream().get(), sync, d, 1 << 20, 0);
    checkVectorAdd<DeviceBuffer>(stream().get(), sync, d, 1000003, size_t(kernels::dtypeBytes(d)));
  }
}

TEST_F(KernelLibraryGpuTest, DropoutMatchesTritonsMask) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes)
    checkDropout<DeviceBuffer>(stream().get(), sync, d, 1 << 20, 0.5, 1234);
  checkDropout<DeviceBuffer>(stream().get(), sync, Dtype::fp32, 1000003, 0.1, -7);
  checkDropout<DeviceBuffer>(stream().get(), sync, Dtype::bf16, 65537, 0.9, int64_t(1) << 40);
}

TEST_F(KernelLibraryGpuTest, LayerNorm) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes) {
    for (NormShape s : {NormShape{37, 1000, 1003}, NormShape{64, 512, 512},
                        NormShape{16, 4099, 4104}, NormShape{300, 128, 128}})
      checkNorm<DeviceBuffer>(stream().get(), sync, d, s, false, true,
                              size_t(kernels::dtypeBytes(d)));
  }
  checkNorm<DeviceBuffer>(stream().get(), sync, Dtype::fp32, {9, 33, 40}, false, false);
}

TEST_F(KernelLibraryGpuTest, RMSNorm) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes)
    for (NormShape s : {NormShape{37, 1000, 1003}, NormShape{64, 512, 512},
                        NormShape{16, 4099, 4104}, NormShape{300, 128, 128}})
      checkNorm<DeviceBuffer>(stream().get(), sync, d, s, true, false);
}

TEST_F(KernelLibraryGpuTest, NormsOfLongRowsUseClusters) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : {Dtype::fp32, Dtype::bf16}) {
    checkNorm<DeviceBuffer>(stream().get(), sync, d, {8, 20000, 20000}, false, true);
    checkNorm<DeviceBuffer>(stream().get(), sync, d, {8, 65536, 65536}, false, true);
    checkNorm<DeviceBuffer>(stream().get(), sync, d, {5, 70001, 70008}, true, false);
  }
}

// The norm backwards captured in a CUDA graph give the direct launch's bits: column_sum follows
// the backward through a programmatic edge (it launches early and waits, griddep_wait) in the
// graph as on the stream. Short rows (the edge is what dominates there) and clustered long ones.
TEST_F(KernelLibraryGpuTest, NormBackwardsInACudaGraphMatchTheDirectLaunch) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = tritium::testing::freshSeed();
  std::mt19937 rng(seed);
  for (NormShape s : {NormShape{4096, 512, 512}, NormShape{300, 1000, 1000},
                      NormShape{8, 20000, 20000}}) {
    for (bool rms : {false, true}) {
      Dtype d = Dtype::bf16;
      size_t n = size_t(s.rows * s.cols), bytes = n * size_t(kernels::dtypeBytes(d));
      HostTensor x = randomTensor(d, n, rng), dy = randomTensor(d, n, rng),
                 w = randomTensor(d, size_t(s.cols), rng, 0.5, 1.0);
      auto px = place<DeviceBuffer>(x), pdy = place<DeviceBuffer>(dy), pw = place<DeviceBuffer>(w);
      Placed<DeviceBuffer> mean(size_t(s.rows) * 4, 0), rstd(size_t(s.rows) * 4, 0), y(bytes, 0);
      kernels::RowPlan plan = kernels::planNormBackward(s.cols, d);
      size_t wsBytes = rms ? kernels::rmsNormBackwardWorkspaceBytes(s.rows, s.cols, &plan)
                           : kernels::layerNormBackwardWorkspaceBytes(s.rows, s.cols, &plan);
      Placed<DeviceBuffer> ws(wsBytes, 0);
      kernels::layerNormForward(d, {.y = y.ptr(), .mean = mean.f32(), .rstd = rstd.f32(),
                                    .x = px.ptr(), .weight = pw.ptr(), .rows = s.rows,
                                    .cols = s.cols},
                                stream().get());
      auto backward = [&](Placed<DeviceBuffer> &dx, Placed<DeviceBuffer> &dw,
                          Placed<DeviceBuffer> &db) {
        if (rms)
          kernels::rmsNormBackward(d, {.dx = dx.ptr(), .dweight = dw.ptr(), .dy = pdy.ptr(),
                                       .x = px.ptr(), .weight = pw.ptr(), .rstd = rstd.f32(),
                                       .rows = s.rows, .cols = s.cols, .workspace = ws.ptr(),
                                       .workspaceBytes = wsBytes},
                                   stream().get(), &plan);
        else
          kernels::layerNormBackward(d, {.dx = dx.ptr(), .dweight = dw.ptr(), .dbias = db.ptr(),
                                         .dy = pdy.ptr(), .x = px.ptr(), .weight = pw.ptr(),
                                         .mean = mean.f32(), .rstd = rstd.f32(), .rows = s.rows,
                                         .cols = s.cols, .workspace = ws.ptr(),
                                         .workspaceBytes = wsBytes},
                                     stream().get(), &plan);
      };
      size_t gradBytes = size_t(s.cols) * size_t(kernels::dtypeBytes(d));
      Placed<DeviceBuffer> dx(bytes, 0), dw(gradBytes, 0), db(gradBytes, 0);
      backward(dx, dw, db);
      sync();
      Placed<DeviceBuffer> gdx(bytes, 0), gdw(gradBytes, 0), gdb(gradBytes, 0);
      rt::Graph graph = rt::Graph::capture(stream().get(), [&] { backward(gdx, gdw, gdb); });
      // Twice: the second replay's backward must not overwrite the workspace before the first
      // replay's column_sum has read it (they are ordered as any two graph launches).
      graph.launch(stream().get());
      graph.launch(stream().get());
      sync();
      std::string what = std::string(rms ? "rmsNorm" : "layerNorm") + " backward " +
                         std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                         " from a CUDA graph; seed " + std::to_string(seed);
      EXPECT_EQ(gdx.bytes(bytes), dx.bytes(bytes)) << what << ": dx differs";
      EXPECT_EQ(gdw.bytes(gradBytes), dw.bytes(gradBytes)) << what << ": dweight differs";
      if (!rms) {
        EXPECT_EQ(gdb.bytes(gradBytes), db.bytes(gradBytes)) << what << ": dbias differs";
      }
      std::vector<double> got = valuesOf(gdw, d, size_t(s.cols));
      EXPECT_TRUE(std::none_of(got.begin(), got.end(), [](double v) { return std::isnan(v); }))
          << what << ": dweight still holds poison";
    }
  }
}

// Every library kernel waits for the stream's previous kernel at entry and is launched to start
// while it finishes (Specialization::awaitPreviousKernel). A transformer-shaped chain of every
// kernel, each reading what the one before wrote, runs for several rounds with nothing between
// the calls, then from a captured CUDA graph (programmatic edges), and must give the bits of the
// same calls with the stream synchronized after each. Each round's dropout seed differs, so a
// kernel that read its input early would see the round before's values.
TEST_F(KernelLibraryGpuTest, KernelsChainedBackToBackMatchCallsOneAtATime) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = tritium::testing::freshSeed();
  std::mt19937 rng(seed);
  const Dtype d = Dtype::bf16;
  const int64_t M = 300, N = 1000, n = M * N;
  const int rounds = 6;
  const size_t e = size_t(kernels::dtypeBytes(d)), bytes = size_t(n) * e, vec = size_t(N) * e;
  HostTensor base = randomTensor(d, size_t(n), rng), resid = randomTensor(d, size_t(n), rng),
             w = randomTensor(d, size_t(N), rng, 0.5, 1.0), b = randomTensor(d, size_t(N), rng);
  std::vector<int64_t> targets(static_cast<size_t>(M));
  std::uniform_int_distribution<int64_t> pick(0, N - 1);
  for (auto &t : targets)
    t = pick(rng);
  targets[3] = -100; // an ignored row
  auto pBase = place<DeviceBuffer>(base), pResid = place<DeviceBuffer>(resid),
       pw = place<DeviceBuffer>(w), pb = place<DeviceBuffer>(b);
  Placed<DeviceBuffer> pt(size_t(M) * 8, 0);
  pt.upload(targets.data(), size_t(M) * 8);
  auto buffer = [&](size_t n) { return Placed<DeviceBuffer>(n, 0); };
  Placed<DeviceBuffer> X = buffer(bytes), H = buffer(bytes), Y = buffer(bytes), Z = buffer(bytes),
                       S = buffer(bytes), DS = buffer(bytes), DZ = buffer(bytes),
                       DY = buffer(bytes), DH = buffer(bytes), DX = buffer(bytes);
  Placed<DeviceBuffer> rstdR = buffer(size_t(M) * 4), mean = buffer(size_t(M) * 4),
                       rstdL = buffer(size_t(M) * 4), loss = buffer(size_t(M) * 4),
                       lse = buffer(size_t(M) * 4), stats = buffer(16);
  Placed<DeviceBuffer> dwL = buffer(vec), dbL = buffer(vec), dwR = buffer(vec);
  size_t wsBytes = std::max(kernels::layerNormBackwardWorkspaceBytes(M, N),
                            kernels::rmsNormBackwardWorkspaceBytes(M, N));
  Placed<DeviceBuffer> ws = buffer(wsBytes);
  kernels::SoftmaxPlan sf = kernels::planSoftmax(N, "bf16"),
                       sb = kernels::planSoftmaxBackward(N, "bf16");
  auto arg = [](const Placed<DeviceBuffer> &p) { return KernelArg::pointer(CUdeviceptr(p.ptr())); };
  // What each round keeps: the loss, dx and the weight gradients, copied out in stream order.
  struct Kept {
    const char *name;
    Placed<DeviceBuffer> *from;
    size_t bytes;
  };
  std::vector<Kept> kept = {{"loss", &loss, size_t(M) * 4},
                            {"dx", &DX, bytes},
                            {"layerNorm dweight", &dwL, vec},
                            {"layerNorm dbias", &dbL, vec},
                            {"rmsNorm dweight", &dwR, vec}};
  // One round: every call, each followed by `between` (a sync, or nothing).
  auto step = [&](int round, std::vector<Placed<DeviceBuffer>> &into,
                  const std::function<void()> &between) {
    CUstream st = stream().get();
    int64_t dropSeed = 1000 + round;
    std::function<void()> calls[] = {
        [&] { kernels::dropout(d, X.ptr(), pBase.ptr(), n, 0.25, dropSeed, st); },
        [&] { kernels::vectorAdd(d, H.ptr(), X.ptr(), pResid.ptr(), n, st); },
        [&] {
          kernels::rmsNormForward(d,
                                  {.y = Y.ptr(),
                                   .rstd = rstdR.f32(),
                                   .x = H.ptr(),
                                   .weight = pw.ptr(),
                                   .rows = M,
                                   .cols = N},
                                  st);
        },
        [&] {
          kernels::layerNormForward(d,
                                    {.y = Z.ptr(),
                                     .mean = mean.f32(),
                                     .rstd = rstdL.f32(),
                                     .x = Y.ptr(),
                                     .weight = pw.ptr(),
                                     .bias = pb.ptr(),
                                     .rows = M,
                                     .cols = N},
                                    st);
        },
        [&] {
          kernels::softmaxForward(sf, "bf16", arg(S), arg(Z), {M, N}, N, N, st);
        },
        [&] {
          kernels::crossEntropyForward(d,
                                       {.loss = loss.f32(),
                                        .lse = lse.f32(),
                                        .stats = stats.f32(),
                                        .logits = S.ptr(),
                                        .targets = pt.i64(),
                                        .rows = M,
                                        .vocab = N},
                                       st);
        },
        [&] {
          kernels::crossEntropyBackward(d,
                                        {.dlogits = DS.ptr(),
                                         .logits = S.ptr(),
                                         .targets = pt.i64(),
                                         .lse = lse.f32(),
                                         .stats = stats.f32(),
                                         .rows = M,
                                         .vocab = N},
                                        st);
        },
        [&] {
          kernels::softmaxBackward(sb, "bf16", arg(DZ), arg(S), arg(DS), {M, N}, N, N, N, st);
        },
        [&] {
          kernels::layerNormBackward(d,
                                     {.dx = DY.ptr(),
                                      .dweight = dwL.ptr(),
                                      .dbias = dbL.ptr(),
                                      .dy = DZ.ptr(),
                                      .x = Y.ptr(),
                                      .weight = pw.ptr(),
                                      .mean = mean.f32(),
                                      .rstd = rstdL.f32(),
                                      .rows = M,
                                      .cols = N,
                                      .workspace = ws.ptr(),
                                      .workspaceBytes = wsBytes},
                                     st);
        },
        [&] {
          kernels::rmsNormBackward(d,
                                   {.dx = DH.ptr(),
                                    .dweight = dwR.ptr(),
                                    .dy = DY.ptr(),
                                    .x = H.ptr(),
                                    .weight = pw.ptr(),
                                    .rstd = rstdR.f32(),
                                    .rows = M,
                                    .cols = N,
                                    .workspace = ws.ptr(),
                                    .workspaceBytes = wsBytes},
                                   st);
        },
        [&] { kernels::dropoutBackward(d, DX.ptr(), DH.ptr(), n, 0.25, dropSeed, st); },
    };
    for (const auto &call : calls) {
      call();
      between();
    }
    for (size_t k = 0; k < kept.size(); ++k)
      TRITIUM_CU(
          cuMemcpyDtoDAsync(CUdeviceptr(uintptr_t(into[k].ptr()) + size_t(round) * kept[k].bytes),
                            CUdeviceptr(kept[k].from->ptr()), kept[k].bytes, st));
  };
  auto outputs = [&] {
    std::vector<Placed<DeviceBuffer>> v;
    for (const Kept &k : kept)
      v.push_back(buffer(k.bytes * rounds));
    return v;
  };
  auto nothing = [] {};
  // One pass first: any tuning happens there, so every pass below runs the same plans.
  std::vector<Placed<DeviceBuffer>> warm = outputs(), alone = outputs(), chained = outputs(),
                                    graphed = outputs();
  step(0, warm, sync);
  for (int r = 0; r < rounds; ++r)
    step(r, alone, sync);
  for (int r = 0; r < rounds; ++r)
    step(r, chained, nothing);
  sync();
  rt::Graph graph = rt::Graph::capture(stream().get(), [&] {
    for (int r = 0; r < rounds; ++r)
      step(r, graphed, nothing);
  });
  graph.launch(stream().get());
  sync();
  for (size_t k = 0; k < kept.size(); ++k) {
    size_t all = kept[k].bytes * rounds;
    auto want = alone[k].bytes(all);
    EXPECT_EQ(chained[k].bytes(all), want)
        << kept[k].name << " differs when the calls run back to back; seed " << seed;
    EXPECT_EQ(graphed[k].bytes(all), want)
        << kept[k].name << " differs from a CUDA graph; seed " << seed;
    // The rounds differ from each other (else a stale read could not show).
    auto first = alone[k].bytes(kept[k].bytes);
    EXPECT_NE(std::vector<unsigned char>(want.end() - long(kept[k].bytes), want.end()), first)
        << kept[k].name;
  }
}

TEST_F(KernelLibraryGpuTest, NormGradientsByFiniteDifferences) {
  SKIP_WITHOUT_GPU();
  checkNormFiniteDifferences<DeviceBuffer>(stream().get(), sync, false);
  checkNormFiniteDifferences<DeviceBuffer>(stream().get(), sync, true);
}

TEST_F(KernelLibraryGpuTest, CrossEntropyGradientsByFiniteDifferences) {
  SKIP_WITHOUT_GPU();
  checkCrossEntropyFiniteDifferences<DeviceBuffer>(stream().get(), sync, 0.0f);
  checkCrossEntropyFiniteDifferences<DeviceBuffer>(stream().get(), sync, 0.1f);
}

TEST_F(KernelLibraryGpuTest, CrossEntropy) {
  SKIP_WITHOUT_GPU();
  for (Dtype d : kDtypes) {
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, d, {64, 32000, 32000, 0.0f, false});
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, d, {17, 50257, 50264, 0.1f, true});
    // Packed rows on 16-byte boundaries, which the planner's backward reads flat (fp32 only the
    // second, ending mid-vector).
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, d, {64, 32000, 32000, 0.1f, false, true});
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, d, {21, 50257, 50257, 0.0f, true, true});
  }
  checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16,
                                  {8, 256000, 256000, 0.0f, false});
}

// The backward's long rows in runs of blocks, a program each (CrossEntropyPlan::rowParts):
// runs of unequal length, whole blocks and a tail, peeled heads, in place.
TEST_F(KernelLibraryGpuTest, CrossEntropyRowsInRuns) {
  SKIP_WITHOUT_GPU();
  for (int parts : {3, 8}) {
    kernels::CrossEntropyPlan p{
        .block = 4096, .numWarps = 8, .numStages = 3, .persistent = false, .rowParts = parts};
    SCOPED_TRACE("runs " + std::to_string(parts));
    checkCrossEntropyCases<DeviceBuffer>(stream().get(), sync,
                                         {{Dtype::bf16, {40, 128256, 128256, 0.1f, false}},
                                          {Dtype::fp32, {9, 256000, 256000, 0.0f, true, true}},
                                          {Dtype::fp16, {17, 50257, 50264, 0.1f, false, true}},
                                          {Dtype::bf16, {11, 50257, 50257, 0.0f, true, true}}},
                                         &p);
  }
}

// The backward over packed rows read flat (CrossEntropyPlan::flat): chunks that straddle rows,
// vocabularies that end mid-vector, the last chunk partial, in place, both grids.
TEST_F(KernelLibraryGpuTest, CrossEntropyFlat) {
  SKIP_WITHOUT_GPU();
  for (kernels::CrossEntropyPlan p :
       {kernels::CrossEntropyPlan{.block = 4096, .numWarps = 8, .numStages = 3, .flat = true},
        kernels::CrossEntropyPlan{
            .block = 2048, .numWarps = 4, .numStages = 1, .persistent = false, .flat = true}}) {
    SCOPED_TRACE(kernels::describe(p.fields()));
    checkCrossEntropyCases<DeviceBuffer>(stream().get(), sync,
                                         {{Dtype::bf16, {40, 128256, 128256, 0.1f, false, true}},
                                          {Dtype::fp32, {9, 50257, 50257, 0.0f, true, true}},
                                          {Dtype::fp16, {17, 32000, 32000, 0.1f, false, true}},
                                          {Dtype::bf16, {11, 4097, 4097, 0.0f, true, true}}},
                                         &p);
  }
}

// The autotuner may pick any candidate, so each must compute the right thing: every plan it
// times, launched as the given plan, against the double references.
TEST_F(KernelLibraryGpuTest, EveryCandidatePlanIsCorrect) {
  SKIP_WITHOUT_GPU();
  for (NormShape s :
       {NormShape{37, 1000, 1003}, NormShape{300, 128, 128}, NormShape{8, 65536, 65536},
        NormShape{29, 5000, 5000}, // 5000: blocks of 5120 and 6144 columns too
        NormShape{37, 512, 520},   // tiles of rows through rings, the last tile part empty
        NormShape{19, 1024, 1032},
        NormShape{37, 3000, 3008}}) { // forwards in tiles of 2 rows of 4096, the last part empty
    std::vector<kernels::RowPlan> plans = kernels::normCandidates(s.cols, Dtype::bf16, false);
    for (const kernels::RowPlan &p : kernels::normCandidates(s.cols, Dtype::bf16, true))
      plans.push_back(p);
    for (const kernels::RowPlan &p : plans) {
      SCOPED_TRACE(p.str());
      checkNorm<DeviceBuffer>(stream().get(), sync, Dtype::bf16, s, false, true, 0, &p);
      checkNorm<DeviceBuffer>(stream().get(), sync, Dtype::fp32, s, true, false, 0, &p);
    }
  }
  for (const kernels::CrossEntropyPlan &p : kernels::crossEntropyCandidates(32000, Dtype::bf16)) {
    SCOPED_TRACE("cross-entropy " + kernels::describe(p.fields()));
    if (p.flat) { // packed rows only
      checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16,
                                      {33, 32000, 32000, 0.1f, false, true}, &p);
      checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::fp32,
                                      {9, 50257, 50257, 0.1f, true, true}, &p);
      continue;
    }
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16,
                                    {33, 32000, 32008, 0.1f, false}, &p);
    // Rows that start anywhere: the backward peels each row's head (fp16: 8-element vectors).
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::fp16,
                                    {19, 3001, 3001, 0.0f, false, true}, &p);
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::fp32,
                                    {9, 50257, 50257, 0.1f, true, true}, &p);
    // Rows on 16-byte boundaries whose vocabulary ends mid-vector: whole blocks, then a tail.
    checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16,
                                    {7, 3001, 3008, 0.1f, false, true}, &p);
  }
  for (const kernels::ElementwisePlan &p :
       kernels::elementwiseCandidates(1000003, Dtype::fp16, kernels::ElementwiseKind::Add)) {
    SCOPED_TRACE("vector add block " + std::to_string(p.block));
    checkVectorAdd<DeviceBuffer>(stream().get(), sync, Dtype::fp16, 1000003, 2, &p);
  }
  // Dropout's own candidates (its planner's plan first), the last block partial.
  for (const kernels::ElementwisePlan &p : kernels::elementwiseCandidates(
           (1 << 22) + 3, Dtype::fp16, kernels::ElementwiseKind::Dropout)) {
    SCOPED_TRACE("dropout block " + std::to_string(p.block) + " warps " +
                 std::to_string(p.numWarps) + " min CTAs per SM " +
                 std::to_string(p.minBlocksPerSM));
    checkDropout<DeviceBuffer>(stream().get(), sync, Dtype::fp16, (1 << 22) + 3, 0.3, 99, &p);
  }
}

TEST_F(KernelLibraryGpuTest, NormsReadingTheWeightsEachRowAreCorrect) {
  SKIP_WITHOUT_GPU();
  checkNormsReadingTheWeightsEachRow<DeviceBuffer>(stream().get(), sync, NormShape{37, 9000, 9016});
  checkNormsReadingTheWeightsEachRow<DeviceBuffer>(stream().get(), sync,
                                                   NormShape{8, 16384, 16384});
}

// Rows on 16-byte boundaries and peeled rows of one vocabulary compile to different kernels, so
// each is tuned and recorded under its own bucket: a stride of 32008 bf16 columns once took the
// winner of 32000's aligned rows and ran at half the speed.
TEST_F(KernelLibraryGpuTest, CrossEntropyTunesAlignedAndPeeledRowsApart) {
  SKIP_WITHOUT_GPU();
  kernels::setAutotune(true);
  checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16,
                                  {64, 3008, 3008, 0.0f, false, true});
  checkCrossEntropy<DeviceBuffer>(stream().get(), sync, Dtype::bf16,
                                  {64, 3008, 3012, 0.0f, false, true});
  kernels::resetAutotune();
  // The first rows are packed too: the backward records them apart from padded aligned rows.
  for (const char *kernel : {"cross_entropy_forward", "cross_entropy_backward"})
    for (std::string layout : {"", "-peeled"}) {
      if (layout.empty() && std::string(kernel) == "cross_entropy_backward")
        layout = "-packed";
      kernels::TuningKey key{kernel, "bf16-vocab4096-rows64" + layout};
      std::filesystem::path record = kernels::Autotuner::forCurrentDevice().recordPath(key);
      EXPECT_TRUE(std::filesystem::exists(record)) << record;
    }
}

// Tuning on: the first call of a shape times the candidates and records the winner under the
// cache root; the record names one of the candidates and the results are right.
TEST_F(KernelLibraryGpuTest, AutotunerRecordsTheWinnerBesideTheCache) {
  SKIP_WITHOUT_GPU();
  kernels::setAutotune(true);
  NormShape s{77, 3001, 3001};
  checkNorm<DeviceBuffer>(stream().get(), sync, Dtype::fp16, s, true, false);
  kernels::resetAutotune();
  for (const char *kernel : {"rms_norm_forward", "rms_norm_backward"}) {
    // Rows of 3001 fp16 columns start off 16-byte boundaries: their own bucket.
    kernels::TuningKey key{kernel, kernels::rowBucket(Dtype::fp16, s.rows, s.cols, false)};
    EXPECT_EQ(key.bucket, "fp16-cols4096-rows128-unaligned");
    std::filesystem::path record = kernels::Autotuner::forCurrentDevice().recordPath(key);
    ASSERT_TRUE(std::filesystem::exists(record)) << record;
    EXPECT_EQ(record.string().rfind(cacheDir().string(), 0), 0u) << record;
    std::string why;
    std::optional<rt::TuningRecord> parsed = rt::readTuningRecord(record, &why);
    ASSERT_TRUE(parsed) << record << ": " << why;
    bool backward = std::string(kernel) == "rms_norm_backward";
    EXPECT_EQ(parsed->candidates.size(),
              kernels::normCandidates(s.cols, Dtype::fp16, backward).size());
    std::vector<kernels::PlanFields> fields;
    for (const auto &p : kernels::normCandidates(s.cols, Dtype::fp16, backward))
      fields.push_back(p.fields());
    kernels::Autotuner fresh(cacheDir() / "autotune" / TRITIUM_VERSION,
                             record.parent_path().parent_path().filename().string());
    EXPECT_TRUE(fresh.recorded(key, fields)) << record;
  }
  // A second call of the same shape takes the recorded winner (no tuning) and is right.
  checkNorm<DeviceBuffer>(stream().get(), sync, Dtype::fp16, s, true, false);
}

} // namespace
