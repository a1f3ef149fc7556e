// State shared by the GIR -> LLVM IR lowering, which is split by op family (elementwise, memory,
// reductions, control flow). Each block value becomes the LLVM values of the elements the
// current thread holds under its layout; a scalar becomes one (uniform) value.
#pragma once

#include "compiler/ir/IR.h"
#include "compiler/gpu/GpuPasses.h"
#include "compiler/ir/Layout.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium::codegen {

using Elements = std::vector<llvm::Value *>;

struct Lowering {
  Lowering(llvm::Module &m, const ir::Function &k, int numWarps, int ptxVersion, int sm)
      : mod(m), ctx(m.getContext()), b(ctx), kernel(k), numWarps(numWarps),
        ptxVersion(ptxVersion), sm(sm) {
    // Every floating-point op may contract into a fused multiply-add (Triton's default,
    // enable_fp_fusion), unless the kernel says fp_fusion = 0 (Specialization::fpFusion).
    if (k.intAttr("fp_fusion").value_or(1) != 0) {
      llvm::FastMathFlags f;
      f.setAllowContract(true);
      b.setFastMathFlags(f);
    }
  }

  llvm::Module &mod;
  llvm::LLVMContext &ctx;
  llvm::IRBuilder<> b;
  const ir::Function &kernel;
  int numWarps;
  int ptxVersion; // PTX ISA x 10: what instructions the lowering may use (st.async from 81)
  int sm;         // the architecture's number (90 for sm_90a too): griddepcontrol from 90
  llvm::Function *fn = nullptr;
  int programsPerCTA = 1; // warp-sized programs side by side in one CTA (programs_per_cta)
  llvm::Value *tid = nullptr;    // thread index in the program (the CTA, unless programsPerCTA > 1)
  llvm::Value *programSlot = nullptr; // which of the CTA's programs this thread runs (0 if one)
  llvm::Value *laneId = nullptr; // tid % 32
  llvm::Value *warpId = nullptr; // tid / 32
  // A kernel with a producer warp (gpu/SpecializeWarps.cpp, LowerWarpSpecialization.cpp): the
  // hardware's thread index; until the producer leaves for its loop, whether this thread is
  // in it (tid then counts it as warp 0's double), null after that and in other kernels.
  int producerWarps = 0;
  llvm::Value *hardwareTid = nullptr;
  llvm::Value *producer = nullptr;
  // Once the producer has left, CTA barriers count the compute warps alone.
  bool consumersOnly = false;
  // Compute warp groups that take alternate tiles of a persistent kernel's walk, each a
  // program of numWarps warps sharing the producer's ring ({compute_groups}, SpecializeWarps):
  // this thread's group, and how far group g's own shared buffers sit from group 0's
  // ({group_smem_shift}). tid then counts threads within the group.
  int computeGroups = 1;
  llvm::Value *computeGroup = nullptr;
  int64_t groupSmemShift = 0;
  // The tile walk's loop, its induction variable and its bounds as written, while it is
  // lowered in the compute groups: their turns at the ring (LowerWarpSpecialization.cpp).
  struct TileWalk {
    const ir::Op *loop = nullptr;
    llvm::Value *iv = nullptr, *lb = nullptr, *ub = nullptr, *step = nullptr;
  };
  std::optional<TileWalk> tileWalk;
  // The kernel has tensor_stores: thread 0 waits for TMA's reads of their buffers before each
  // CTA barrier (LowerTensorStore.cpp).
  bool tensorStores = false;
  // A ping-pong loop being lowered ({ping_pong}, LowerWarpSpecialization.cpp): the first and
  // last products whose issues a turn spans, this thread's warp group and the loop's iteration
  // count.
  struct PingPong {
    const ir::Op *firstDot = nullptr, *lastDot = nullptr;
    llvm::Value *group = nullptr, *iteration = nullptr;
  };
  std::optional<PingPong> pingPong;
  llvm::GlobalVariable *smem = nullptr; // dynamic shared memory, addrspace(3)
  llvm::Value *clusterBatch = nullptr;   // counts cluster exchange batches (LowerCluster.cpp)
  llvm::Value *reductionBank = nullptr;  // the same for the next cross-warp reduction
  // The generic (i64) address of each CUtensorMap parameter ({tensor_maps}, in order).
  std::vector<llvm::Value *> tensorMaps;

  int threads() const { return 32 * numWarps; } // per program
  int ctaThreads() const { return threads() * programsPerCTA * computeGroups; }
  // Thread 0 of the program's compute warps (not the producer warp's double of it); with
  // compute groups, of each group once they have split, of group 0 alone before, and of group
  // 0 alone where `wholeCta` (what the CTA does once: its ring's mbarriers).
  llvm::Value *isThreadZero(bool wholeCta = false);
  // The shared memory of the program's own buffers (not its ring's): `offset` bytes past the
  // base, in this compute group's copy. As a generic pointer and as a 32-bit shared address.
  llvm::Value *programSmemBase();
  llvm::Value *programSmem(int64_t offset);
  llvm::Value *programSharedAddress(llvm::Value *offset);

  // LLVM type of one element (pointers are global-memory pointers).
  llvm::Type *elementType(const ir::Type &t);
  llvm::Type *scalarType(ir::ScalarKind k);

  const Elements &get(const ir::Value *v) const;
  void set(const ir::Value *v, Elements e) { values[v] = std::move(e); }

  // How many elements of `v` this thread holds, and where each one sits in the block
  // (LayoutIndexing.cpp): one i32 coordinate per dimension; elementIndex for 1-D blocks.
  int64_t elementsPerThread(const ir::Value *v) const;
  std::vector<llvm::Value *> coordinates(const ir::Value *v, int64_t k);
  llvm::Value *elementIndex(const ir::Value *v, int64_t k);
  // The row-major index in `shape` of the given coordinates; rowMajorIndex(v, k) is that of
  // v's k-th element in its own shape.
  llvm::Value *rowMajorIndex(const std::vector<llvm::Value *> &coords,
                             const std::vector<int64_t> &shape);
  llvm::Value *rowMajorIndex(const ir::Value *v, int64_t k);
  // False for threads that hold a copy of an element another thread owns (blocks smaller than
  // the layout's tile, or sliced dimensions): stores must write each element once. Only the
  // root dimensions in `dims` are considered when given (a reduction along one dimension
  // must count each element of it once, but copies along others still need the result).
  // Null when every copy is unique.
  llvm::Value *ownsElement(const ir::Value *v, int64_t k, int rootDimOnly = -1);
  // This thread's lane and warp coordinates along a root dimension of v's layout.
  llvm::Value *laneCoordinate(const ir::LayoutMap &map, int rootDim);
  llvm::Value *warpCoordinate(const ir::LayoutMap &map, int rootDim);
  // The element's coordinate along root dim d before wrapping to the block's extent.
  llvm::Value *unwrappedCoordinate(const ir::LayoutMap &map, int rootDim, int64_t reg);

  // Emits `body` in a block that runs only where `cond` holds, then continues after it.
  template <typename F> void ifThen(llvm::Value *cond, const char *name, F body) {
    auto *then = llvm::BasicBlock::Create(ctx, name, fn);
    auto *done = llvm::BasicBlock::Create(ctx, std::string(name) + ".done", fn);
    b.CreateCondBr(cond, then, done);
    b.SetInsertPoint(then);
    body();
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }

  llvm::Value *intrinsic(unsigned id, llvm::ArrayRef<llvm::Type *> types,
                         llvm::ArrayRef<llvm::Value *> args);
  // The program's barrier (its compute group's, where there are groups), and the barrier of
  // every compute warp of the CTA.
  void barrier();
  void ctaBarrier();
  void syncComputeWarps(); // ctaBarrier's sync alone

  std::unordered_map<const ir::Value *, Elements> values;
  // Lowers a region's ops at the insertion point and returns its yield (set by the function
  // lowering, for ops whose regions are applied like functions: reduce's combine).
  std::function<const ir::Op *(const ir::Block &)> lowerRegion;
  // For each pipelined loop being lowered: the shared-memory stage this iteration reads, how
  // many iterations of this run of the loop came before it, and the induction variable and
  // bound of the iteration num_stages - 1 ahead (which a bulk ring copies into this stage as
  // soon as every thread has read it).
  struct RingPosition {
    llvm::Value *stage, *iteration, *aheadIv, *ub;
  };
  std::unordered_map<const ir::Op *, RingPosition> rings;
  // In the body of a loop that the warps split before ({warp_split}): the iterations that its
  // warp-specialized inner loop's ring ran in earlier iterations of it (the ring's stages and
  // parities count on from there; LowerWarpSpecialization.cpp).
  llvm::Value *ringBase = nullptr;
  // The stage buffer (this iteration's) of each ring-loaded tile that a dot reads straight from
  // the ring (gpu/FeedDotsFromRings.cpp), set when the load is lowered.
  std::unordered_map<const ir::Value *, llvm::Value *> ringTiles;
  // Ops not lowered: their values feed only what the rings do not read
  // (opsOnlyCopiesFeed, Pipelining.h).
  std::unordered_set<const ir::Op *> unlowered;
  // Results of wgmma dots committed and not yet waited for ({deferred_wait}): the block's
  // lowering waits for them before the first op that reads one, or holds a region, or ends
  // the block (waitForPendingWgmma).
  std::vector<const ir::Value *> pendingWgmma;
};

// The swizzled byte offset of a tile's element in shared memory (FeedDotsFromRings.cpp): the
// 16-byte chunk's index XORed with the row's index modulo 8 for rows of 128 bytes or more
// (TMA's SWIZZLE_128B for rows of 128 bytes), and for rows of 64 or 32 bytes with bits 7-8 or
// bit 7 of the offset (SWIZZLE_64B, SWIZZLE_32B: dotSwizzleBytes). `offset` (i32 or i64)
// counts bytes from the tile's start; rowBytes is a power of two.
llvm::Value *swizzledOffset(Lowering &l, llvm::Value *offset, int64_t rowBytes);

// The byte offset (i32) of element (row, col) of a 16-bit dot operand's tile [rows][cols] in
// shared memory, as rings and dot staging hold it and wgmma's descriptors read it: rows of at
// most 128 bytes row-major; wider rows cut into panels of 128 bytes of columns, each panel
// [rows][128 bytes] after the other (what TMA writes for a box 128 bytes wide); then swizzled
// (swizzledOffset). The rows sit in `order` (GpuPasses.h, RowOrder): as they are, as a
// wgmma dot's a wants them, or as a {byte_fragment_columns} dot's b.
llvm::Value *dotTileOffset(Lowering &l, llvm::Value *row, llvm::Value *col, int64_t rows,
                           int64_t cols, int elementBytes, RowOrder order);

// One entry per op family; each handles the kinds it knows and returns false otherwise.
bool lowerElementwise(Lowering &l, const ir::Op &op);
bool lowerMemory(Lowering &l, const ir::Op &op);
// The L2 eviction policy register (createpolicy) of a load's or store's {evict} hint, or null
// when it has none (LowerMemory.cpp).
llvm::Value *cachePolicy(Lowering &l, const ir::Op &op);
bool lowerReduction(Lowering &l, const ir::Op &op);
bool lowerShapes(Lowering &l, const ir::Op &op); // expand_dims, broadcast, layout conversions
bool lowerMath(Lowering &l, const ir::Op &op);   // the math op's functions
bool lowerAtomic(Lowering &l, const ir::Op &op); // atomic_rmw, atomic_cas, barrier
bool lowerGeneralReduce(Lowering &l, const ir::Op &op); // reduce with a combine region
bool lowerScan(Lowering &l, const ir::Op &op);           // scan with a combine region
bool lowerInlineAsm(Lowering &l, const ir::Op &op);      // inline_asm
bool lowerDot(Lowering &l, const ir::Op &op);            // dot on the tensor cores
bool lowerTensorStore(Lowering &l, const ir::Op &op);    // tensor_store: TMA stores
// Thread 0 waits until TMA has read the staging buffers of its tensor_stores (before a CTA
// barrier), or until their writes are done (before the kernel exits): LowerTensorStore.cpp.
void waitForTensorStoreReads(Lowering &l);
void waitForTensorStores(Lowering &l);
// Thread 0 (the TMA stores' issuer) waits for their writes and fences them for the generic
// proxy, so that a release after it publishes them.
void completeTensorStores(Lowering &l);
// wgmma.wait_group N with the accumulators passing through it (LowerDot.cpp): the values it
// returns are the ones to read, so that no read of them moves above the wait. N groups (the
// newest ones, whose accumulators are not passed) may stay in flight.
Elements wgmmaWait(Lowering &l, const Elements &acc, int64_t inFlight = 0);
// Waits for the pending dots' groups up to the newest of `needed` (all of them when `needed`
// is empty), their accumulators passing through the wait; newer groups stay in flight
// (wgmma.wait_group N: groups complete in the order they were committed).
void waitForPendingWgmma(Lowering &l, const std::vector<const ir::Value *> &needed = {});
// What `op` needs of the products in flight (`pending`): the ones that it or an op nested in it
// reads, and whether a wgmma product is nested in it (issuing one waits for all before it).
struct PendingReads {
  std::vector<const ir::Value *> read;
  bool nestedProduct = false;
  bool any() const { return nestedProduct || !read.empty(); }
};
PendingReads pendingReadsOf(const ir::Op &op, const std::vector<const ir::Value *> &pending);
// shfl.sync of any element type (Shuffle.cpp): from the lane `laneOrDelta` away by xor, below,
// above, or from lane `laneOrDelta` itself; lanes whose source would leave the warp keep their
// own value (up and down).
enum class Shuffle { Xor, Up, Down, Index };
llvm::Value *shuffle(Lowering &l, llvm::Value *v, Shuffle mode, llvm::Value *laneOrDelta);
// shfl.sync.bfly between lanes `offset` apart.
llvm::Value *shuffleXor(Lowering &l, llvm::Value *v, int offset);
bool lowerPrint(Lowering &l, const ir::Op &op); // print through vprintf
bool lowerAssume(Lowering &l, const ir::Op &op); // llvm.assume
bool lowerCluster(Lowering &l, const ir::Op &op); // cluster_rank
bool lowerGridDependency(Lowering &l, const ir::Op &op); // griddep_wait, _launch_dependents
bool lowerGridSync(Lowering &l, const ir::Op &op);       // grid_sync
// cluster_max, cluster_sum and cluster_gather: a batch of adjacent exchanges, none using
// another's result, shares one cluster barrier.
bool isClusterExchange(const ir::Op &op);
void lowerClusterExchanges(Lowering &l, const std::vector<const ir::Op *> &batch);
// cluster_max and cluster_sum of blocks, at the kernel's top level: a batch of adjacent ones
// (LowerClusterBlocks.cpp); clusterBlockEntry sets up one's mbarriers in the kernel's entry.
bool isClusterBlockExchange(const ir::Op &op);
void lowerClusterBlockExchanges(Lowering &l, const std::vector<const ir::Op *> &batch);
void clusterBlockEntry(Lowering &l, const ir::Op &op);

// Thread-block clusters: the kernel's cluster size, and the barrier and bank counter its entry
// sets up for cluster reductions (LowerCluster.cpp).
int64_t clusterSize(const ir::Function &fn);
void clusterEntry(Lowering &l);
// Two programs' values of a cluster_sum or cluster_max (`op`), as its reduction combines them.
llvm::Value *combineInCluster(Lowering &l, const ir::Op &op, bool isFloat, llvm::Value *x,
                              llvm::Value *y);

// Builds the LLVM module for a GIR kernel (control flow and dispatch live here).
std::unique_ptr<llvm::Module> lowerToLLVM(const ir::Function &kernel, llvm::LLVMContext &ctx,
                                          int numWarps, int ptxVersion, int sm);

} // namespace tritium::codegen
