// The passes that turn TIR into GIR: layouts on every block value and shared-memory buffers.
#pragma once

#include "compiler/ir/IR.h"
#include "compiler/ir/Layout.h"
#include "compiler/ir/TensorMap.h"

namespace tritium {

// Elements one thread may hold of one block before a kernel is refused (Triton would run out of
// registers or spill far past this).
inline constexpr int64_t kMaxElementsPerThread = 256;

// Gives every block value a blocked layout over 32 x numWarps threads: contiguous runs of up to
// 16 bytes per thread, the tile repeated to cover larger blocks, threads wrapping (replicated
// elements) for blocks smaller than the CTA.
void assignLayouts(ir::Function &fn, int numWarps);

// Marks each dot that runs on Hopper's warp-group wgmma with {wgmma = 1}
// (ChooseDotInstructions.cpp): on sm_90a, for the shapes and types that suit warp groups.
// Runs before assignLayouts, which gives such dots their warp groups.
void chooseDotInstructions(ir::Function &fn, const std::string &arch, int numWarps);

// Marks each wgmma dot whose result, through elementwise ops alone, becomes the 8-bit a of
// another wgmma dot (fp8 attention's scores, cast to e4m3 as P) with {byte_fragment_columns}
// (ByteFragmentColumns.cpp): its b's rows are permuted within each 16 so that a thread's
// accumulator holds the columns the 8-bit fragment wants. Runs after chooseDotInstructions,
// before assignLayouts.
void chooseByteFragmentColumns(ir::Function &fn);

// The layout of dot's accumulator [.., M, N] (DotLayout.cpp): a blocked layout whose threads
// hold the tensor cores' accumulator fragments, so that the epilogue (casts, stores,
// reductions) treats it as any other block. With `warpGroups` (a wgmma dot) every warp lies
// along M, so that each four consecutive warps own whole 64-row slices.
ir::Layout dotAccumulatorLayout(const std::vector<int64_t> &shape, int numWarps,
                                bool warpGroups = false);

// The layout of `dot`'s accumulator: dotAccumulatorLayout, or, for a dot marked
// {byte_fragment_columns}, dotByteFragmentLayout.
ir::Layout dotAccumulatorLayout(const ir::Op &dot, int numWarps);

// The layout of a wgmma dot's 8-bit a operand [M, K] as its register fragment holds it: per
// 16 columns, columns 4c .. 4c + 3 in lane c of each quad, rows 2g and 2g + 1 (blocked, 2 x 4
// elements a thread, 8 x 4 lanes a warp, the warps along M).
ir::Layout dotByteFragmentLayout(int numWarps);

// How a dot operand's tile sits in shared memory along its rows (a load's {permute_rows}).
enum class RowOrder : int64_t {
  AsIs = 0,
  // A wgmma's a: row 2j + h of each 16 at j + 8h, where wgmma leaves fragment row j + 8h, so
  // that the accumulator's thread holds rows 2g and 2g + 1 (dotAccumulatorLayout).
  WgmmaA = 1,
  // A {byte_fragment_columns} dot's b ([N, K], K-major): row 4c + 2j + h of each 16 at
  // 8j + 2c + h, where wgmma leaves accumulator column 8j + 2c + h in lane c, so that lane c
  // holds columns 4c .. 4c + 3 (dotByteFragmentLayout).
  ByteFragmentColumns = 2,
};
RowOrder rowOrderOf(const ir::Op &load);
// The row order in which `dot`'s operand `operand` (0: a, 1: b) sits in shared memory.
RowOrder dotOperandRowOrder(const ir::Op &dot, unsigned operand);

// Whether dot's operands sit in shared memory as swizzled tiles (16-bit operands, and every
// wgmma dot's): a as [batch][M][K], b as [batch][K][N] or, K-major, [batch][N][K]
// (codegen dotTileOffset). Otherwise they are staged padded (dotStagedRow).
bool dotStagesSwizzled(const ir::Op &dot);

// The swizzle span of a swizzled tile whose rows hold `rowBytes` (its contiguous dimension):
// 128 for whole 128-byte panels, 64 or 32 for rows that short (TMA's SWIZZLE_64B and
// SWIZZLE_32B, wgmma's 64- and 32-byte layouts), 0 for any other.
inline int64_t dotSwizzleBytes(int64_t rowBytes) {
  return rowBytes > 0 && rowBytes % 128 == 0 ? 128 : rowBytes == 64 || rowBytes == 32 ? rowBytes : 0;
}

// Where dot stages its operands in shared memory (LowerDot.cpp): a as [batch][M][K + pad], b
// transposed as [batch][N][K + pad], each row padded by 16 bytes so that the fragment loads of
// eight rows hit 32 different banks. Elements of one row of the staged operand, pad included.
int64_t dotStagedRow(int64_t K, int bytes);

// Bytes a general reduce's partial, or an element of a cluster reduction of a block, of type `t`
// takes in shared memory (at least 4: 16-bit values travel as 32).
int64_t reduceSlotBytes(const ir::Type &t);

// Slots per bank of a scan's shared buffer of warp totals, [line][rep][warp] (LowerScan.cpp),
// each of reduceSlotBytes per component, two banks: 0 when at most one warp lies along the axis
// (the totals then move by shuffles).
int64_t scanTotalSlots(const ir::Op &scan);

// Elements in each program's strip of a cluster reduction of a block (reduceSlotBytes each):
// ceil(n / clusterSize), rounded up to a multiple of 4 so that a strip is whole 16-byte copies.
int64_t clusterBlockStrip(const ir::Type &t, int64_t clusterSize);

// Elements of a block staged in shared memory by convert_layout, reshape and trans: the block in
// row-major order with one padding element after each row of 32 or more (stagedIndex).
int64_t stagedElements(const ir::Type &t);

// Gives each op that needs shared memory (cross-warp reductions) an offset ("smem_offset") and
// records the kernel's total in the "shared_bytes" function attribute. A total above
// `maxSharedBytes` (when not 0) is a UserError at the op with the largest buffer, saying what
// to change.
void allocateSharedMemory(ir::Function &fn, int numWarps, int64_t maxSharedBytes = 0);
// After the rings and the staging that feedDotsFromRings adds: a kernel past
// `maxSharedBytes` is a UserError at the first op whose buffer lies past the limit, saying
// what to change.
void checkSharedMemoryFits(ir::Function &fn, int64_t maxSharedBytes);

// Marks each wgmma dot whose 16-bit a operand already sits in registers as the instruction's
// register form wants it (the layout of a wgmma accumulator of its shape: attention's P) with
// {a_regs} (KeepDotOperandsInRegisters.cpp): a then needs no staging buffer. Runs after
// assignLayouts, before allocateSharedMemory.
void keepDotOperandsInRegisters(ir::Function &fn, int numWarps);

// Moves pure ops whose operands come from outside the body of a pipelined `for` (num_stages
// >= 2) out of it, to before the loop (HoistLoopInvariants.cpp): invariant layout conversions
// run once, not every iteration, and stay out of the loads' slices.
void hoistLoopInvariants(ir::Function &fn);

// Gives each block load and store a "vec" attribute: elements per thread per instruction, from
// the axis analysis (contiguity, alignment, mask constancy) and the layout.
void chooseVectorWidths(ir::Function &fn);

// Gives each elementwise block op whose value is constant over aligned runs of a thread's
// elements (masks of whole vectors) a "constancy" attribute: the run length the lowering may
// compute once.
void markConstantRuns(ir::Function &fn);

// Plans software pipelining of loads in `for` loops with num_stages >= 2 (see
// PipelineLoads.cpp), within `maxSharedBytes` of shared memory per CTA: bulk copies (TMA, sm_90)
// where `bulkCopies` allows and the loads read whole contiguous rows, else cp.async per thread.
void pipelineLoads(ir::Function &fn, int numWarps, int64_t maxSharedBytes, bool bulkCopies);

// Lets dot read 16-bit tiles that a cp.async ring of its loop brings in straight from the ring
// (FeedDotsFromRings.cpp): {swizzle = 128} and {dot_only} on such loads, {ring_a}/{ring_b} on
// the dot; {permute_rows} and {async_proxy} on the loads of a wgmma dot. Operands that no ring
// brings in get their staging buffers here if allocateSharedMemory left them out.
void feedDotsFromRings(ir::Function &fn);

// Lets TMA copy the 2-D tiles of tensor descriptors that cp.async rings bring in
// (ChooseTensorMaps.cpp), where `allowed` (sm_90 and PTX 8.0 or later, and the launch encodes
// tensor maps) and TMA can take the descriptor: {tensor_map = i} on such loads, the recipes in
// the kernel's {tensor_maps}, {tensor_barriers} on their loops (one mbarrier per stage, within
// `maxSharedBytes`).
void chooseTensorMaps(ir::Function &fn, bool allowed, int64_t maxSharedBytes);

// The CUtensorMap recipe of a 2-D `tile` at the tensor descriptor of `op` (a load, store or
// atomic traced from one: TensorMap.h), boxed in panels of `span` bytes of columns with that
// swizzle (dotSwizzleBytes of the tile's row; 0: the whole row, unswizzled), or nullopt where
// TMA cannot take the descriptor: its base must be a pointer argument specialized as 16-byte
// aligned, its shape and row stride arguments or constants, the row stride a multiple of 16
// bytes, and the box at most 256 x 256 with rows of a multiple of 16 bytes.
std::optional<ir::TensorMapRecipe> tensorTileRecipe(const ir::Function &fn, const ir::Op &op,
                                                    const ir::Type &tile, int64_t span);

// Lets TMA write the 2-D tiles that tensor descriptors store or combine (ChooseTensorStores.cpp,
// on TIR before layout assignment), where `allowed` and TMA can take the descriptor (and, for
// an atomic, has its reduction): such a store or atomic becomes a tensor_store (Ops.def), which
// anchors no layout, its recipe added to {tensor_maps}.
void chooseTensorStores(ir::Function &fn, bool allowed);

// Gives a loop asking for warp specialization ({warp_specialize}, the DSL's
// range(...).warp_specialize()) a producer warp group that issues its ring's TMA copies
// (SpecializeWarps.cpp): {warp_specialized, empty_barriers} on the loop, {producer_warps}
// and {producer_registers, compute_registers} (setmaxnreg, on `arch`s ending in "a") on the
// kernel, within `maxSharedBytes`; or {warp_specialize_skipped = reason}.
void specializeWarps(ir::Function &fn, const std::string &arch, int numWarps,
                     int64_t maxSharedBytes);

// Lets the TMA copies of tiles loaded with `desc.load(offsets, multicast)` in a
// warp-specialized ring of a clustered kernel be multicast (ChooseMulticastCopies.cpp): each
// program copies 1/C of the tile into all C programs of its cluster. {multicast_copies = C}
// on such loads, their recipes' boxes the slice; {multicast_skipped = reason} where not.
void chooseMulticastCopies(ir::Function &fn);

// Whether dot operand `i` (0: a, 1: b) is a load of the dot's own pipelined loop, which
// feedDotsFromRings will likely let the dot read in place: allocateSharedMemory then leaves
// its staging buffer out.
bool dotOperandMayComeFromRing(const ir::Op &dot, unsigned i);
// Gives dot operand `i` its staging buffer ({smem_offset} for a, {smem_b} for b) at the first
// kDotTileAlignment boundary from `offset`; returns the buffer's end.
int64_t allocateDotStaging(ir::Op &dot, unsigned i, int64_t offset);
// Gives a convert_layout, reshape or trans its staging buffer ({smem_offset}, stagedElements of
// its result) at the first 16-byte boundary from `offset`; returns the buffer's end.
int64_t allocateStagedBlock(ir::Op &op, int64_t offset);
// The bytes of those buffers: a dot's operand `i`, and a convert_layout's, reshape's or trans's
// block.
int64_t dotStagingBytes(const ir::Op &dot, unsigned i);
int64_t stagedBlockBytes(const ir::Op &op);
// A tensor_store's staging buffer: its tile, unpadded (LowerTensorStore.cpp).
int64_t tensorStoreStagingBytes(const ir::Op &store);

// Where dot staging buffers and the rings that dots read start: a multiple of 1024 bytes, the
// span of one SWIZZLE_128B pattern, which wgmma applies to the address bits themselves.
inline constexpr int64_t kDotTileAlignment = 1024;

} // namespace tritium
