// The embedded block-level DSL, as close to Triton's Python as C++ allows:
//
//   for (auto row : range(program_id(0), n_rows, num_programs(0), num_stages)) {
//     auto cols = arange(0, BLOCK_SIZE);
//     auto x = load(in + row * stride + cols, cols < n_cols, -INFINITY);
//     ...
//   }
//
// Every call records an op with the caller's std::source_location; mistakes throw
// tritium::UserError naming the caller's file:line.
#pragma once

#include "compiler/ir/IR.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tritium::dsl {

using Loc = std::source_location;

// An index of Value::operator(): `_` keeps a dimension, `None` inserts one of extent 1.
struct Index {
  bool newAxis;
};
inline constexpr Index _{false};
inline constexpr Index None{true};

// A traced value: a scalar or a block. Kernel parameters use the subtypes Ptr, Int and Float,
// which say what the launch must pass; the values themselves behave alike.
class Value {
public:
  // Every Value object is listed while it lives (LiveValues.h), so that loops and branches can
  // find the variables their bodies assigned and carry them, as Triton does by name.
  Value() { link(); }
  explicit Value(ir::Value *v); // belongs to the trace in progress (Tracer.cpp)
  Value(const Value &o) : v_(o.v_), trace_(o.trace_) { link(); }
  // A moved-from Value is empty, so that the copies the tracer passes along (parameters, return
  // values) are not taken for variables holding the same value.
  Value(Value &&o) noexcept : v_(o.v_), trace_(o.trace_) {
    o.v_ = nullptr;
    link();
  }
  Value &operator=(const Value &o) {
    v_ = o.v_;
    trace_ = o.trace_;
    return *this;
  }
  ~Value() { unlink(); }
  ir::Value *ir() const { return v_; }
  // ir() once the value is known to belong to the trace in progress: a value kept (in a static,
  // say) from an ended trace or another kernel's is a user error at `use`, raised before the
  // stale IR is touched.
  ir::Value *checked(const SourceLoc &use) const;
  const ir::Type &type(Loc loc = Loc::current()) const;
  // The element type's name ("fp32", "bf16", "i32"); for pointers the pointee's, as Triton's
  // ptr.dtype.element_ty: cast(y, output_ptr.dtype()) stores in the output's type.
  std::string dtype(Loc loc = Loc::current()) const;
  // Triton's x[:, None] and x[None, :]: x(_, None), x(None, _) (and three-index forms).
  Value operator()(Index a, Index b, Loc loc = Loc::current()) const;
  Value operator()(Index a, Index b, Index c, Loc loc = Loc::current()) const;

private:
  friend class Range;      // rebinds carried variables to the loop's arguments and results
  friend class LiveValues; // lists and rebinds live variables
  void link();
  void unlink();
  ir::Value *v_ = nullptr;
  Value *prev_ = nullptr, *next_ = nullptr;
  uint64_t serial_ = 0; // tells a variable from a later one at the same address
  uint64_t trace_ = 0;  // the serial of the Tracer that made it; 0: made outside any trace
};

// Several values handled together (a general reduce's operands, Philox's four words).
using Group = std::vector<Value>;

struct Ptr : Value { using Value::Value; };   // a pointer argument ("*fp32" in the signature)
struct Int : Value { using Value::Value; };   // an integer argument ("i32" or "i64")
struct Float : Value { using Value::Value; }; // a float argument ("fp32")

// An operand of an overloaded operator: a traced value or a C++ literal. Its constructor's
// default argument captures where the operator was written.
struct Operand {
  enum class Kind { Value, Int, Float } kind;
  ir::Value *value = nullptr;
  int64_t i = 0;
  double f = 0;
  SourceLoc loc;

  Operand(const Value &v, Loc l = Loc::current())
      : kind(Kind::Value), value(v.checked(l)), loc(l) {}
  Operand(int v, Loc l = Loc::current()) : kind(Kind::Int), i(v), loc(l) {}
  Operand(int64_t v, Loc l = Loc::current()) : kind(Kind::Int), i(v), loc(l) {}
  Operand(uint32_t v, Loc l = Loc::current()) : kind(Kind::Int), i(int64_t(v)), loc(l) {}
  Operand(long long v, Loc l = Loc::current()) : kind(Kind::Int), i(int64_t(v)), loc(l) {}
  Operand(unsigned long long v, Loc l = Loc::current())
      : kind(Kind::Int), i(int64_t(v)), loc(l) {}
  // u64 literals past 2^63 keep their bits (they take an unsigned partner's type).
  Operand(uint64_t v, Loc l = Loc::current()) : kind(Kind::Int), i(int64_t(v)), loc(l) {}
  Operand(double v, Loc l = Loc::current()) : kind(Kind::Float), f(v), loc(l) {}
  Operand(float v, Loc l = Loc::current()) : kind(Kind::Float), f(v), loc(l) {}
};

// Arithmetic and comparison with broadcasting of scalars over blocks; ints widen to i64 and to
// floats as Triton's rules do. Pointer + integer is address arithmetic in elements.
Value operator+(const Operand &a, const Operand &b);
Value operator-(const Operand &a, const Operand &b);
Value operator*(const Operand &a, const Operand &b);
Value operator/(const Operand &a, const Operand &b);
Value operator%(const Operand &a, const Operand &b);
Value operator-(const Operand &a);
Value operator<(const Operand &a, const Operand &b);
Value operator<=(const Operand &a, const Operand &b);
Value operator>(const Operand &a, const Operand &b);
Value operator>=(const Operand &a, const Operand &b);
Value operator==(const Operand &a, const Operand &b);
Value operator!=(const Operand &a, const Operand &b);
Value operator&(const Operand &a, const Operand &b);
Value operator|(const Operand &a, const Operand &b);
// Integers and masks: bitwise ^ and ~; shifts (>> is arithmetic for signed types, logical for
// unsigned; shifting by the width or more gives 0, or the sign); logical !, && and || on
// masks (elementwise, both sides evaluated: Triton's `not`, `and`, `or` on blocks).
Value operator^(const Operand &a, const Operand &b);
Value operator<<(const Operand &a, const Operand &b);
Value operator>>(const Operand &a, const Operand &b);
Value operator~(const Operand &a);
Value operator!(const Operand &a);
Value operator&&(const Operand &a, const Operand &b);
Value operator||(const Operand &a, const Operand &b);
// Promises to the compiler (Triton's tl.multiple_of, tl.max_contiguous), one value per
// dimension (or one for all): every element (the first of each run) is a multiple of it, and
// runs of that many consecutive values follow each other. They decide vector widths; a false
// promise is undefined behaviour on the GPU, as in Triton.
Value multiple_of(const Operand &x, const std::vector<int64_t> &values, Loc loc = Loc::current());
Value max_contiguous(const Operand &x, const std::vector<int64_t> &values,
                     Loc loc = Loc::current());
// Triton's tl.assume: a condition (a mask or a block of them) the kernel promises holds. It is
// checked to be one and otherwise ignored (nothing is recorded); a false one is no error.
void assume(const Operand &cond, Loc loc = Loc::current());
// Integer helpers: ceil(a / b) for positive values; the high half of the unsigned product of
// 32- or 64-bit integers; the same bits as another type of the same width.
Value cdiv(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value umulhi(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value bitcast(const Operand &x, struct DType dtype, Loc loc = Loc::current());

// Grid.
Value program_id(int axis, Loc loc = Loc::current());
Value num_programs(int axis, Loc loc = Loc::current());

// Thread-block clusters (Hopper; Specialization::clusterSize > 1): consecutive programs form a
// cluster that runs at once and reduces scalars across its programs through distributed
// shared memory, so one row can be split over several SMs:
//
//   auto cluster = program_id(0) / cluster_size();
//   for (auto row : range(cluster, n_rows, num_programs(0) / cluster_size())) {
//     auto cols = cluster_rank() * BLOCK + arange(0, BLOCK);   // this program's part
//     auto m = cluster_max(max(x, 0));                          // the whole row's maximum
//
// cluster_max and cluster_sum are barriers: every program of the cluster must reach each of
// them the same number of times. Without clusters they return their input. Given a block, they
// combine the programs' blocks element by element (every program gets the same bits); a block's
// exchange must sit at the kernel's top level, where every program reaches it once.
Value cluster_rank(Loc loc = Loc::current()); // 0 .. cluster_size() - 1
Value cluster_size(Loc loc = Loc::current()); // the specialization's cluster size (a constant)
Value cluster_max(const Operand &x, Loc loc = Loc::current());
Value cluster_sum(const Operand &x, Loc loc = Loc::current());
// Every program's x, as a block of bit_ceil(cluster_size()) elements in rank order; lanes past
// cluster_size() hold `other`. Adjacent cluster ops that do not use each other's results share
// one barrier: gathering a row's partial max and sum together costs one exchange, not two.
Value cluster_gather(const Operand &x, const Operand &other, Loc loc = Loc::current());

// Element types, as Triton's tl.float32 ...: DType values, or their names as strings ("fp32",
// "float32", "bf16", "i32", "u32", "fp8e4m3", ...); an unknown name is a UserError listing the
// valid ones. fp8 is a storage type: load, store and cast it; arithmetic computes in f32.
struct DType {
  ir::ScalarKind kind;
  constexpr DType(ir::ScalarKind k) : kind(k) {}
  DType(const char *name, Loc loc = Loc::current());
  DType(const std::string &name, Loc loc = Loc::current()) : DType(name.c_str(), loc) {}
};
inline constexpr DType float32{ir::ScalarKind::F32}, float16{ir::ScalarKind::F16},
    bfloat16{ir::ScalarKind::BF16}, float8e4m3{ir::ScalarKind::F8E4M3},
    float8e5m2{ir::ScalarKind::F8E5M2}, int1{ir::ScalarKind::I1}, int8{ir::ScalarKind::I8},
    int16{ir::ScalarKind::I16}, int32{ir::ScalarKind::I32}, int64{ir::ScalarKind::I64},
    uint8{ir::ScalarKind::U8}, uint16{ir::ScalarKind::U16}, uint32{ir::ScalarKind::U32},
    uint64{ir::ScalarKind::U64};

// Blocks. A 1-D size end - start is a power of two, or a multiple of 32 x num_warps (the same
// number of elements in every thread); blocks of rank 2 and 3 have power-of-two dimensions.
Value arange(int64_t start, int64_t end, Loc loc = Loc::current());
Value full(int64_t size, const Operand &value, Loc loc = Loc::current());
Value full(const std::vector<int64_t> &shape, const Operand &value, DType dtype,
           Loc loc = Loc::current());
Value zeros(const std::vector<int64_t> &shape, DType dtype, Loc loc = Loc::current());

// Shapes, as Triton's. x(_, None) is x[:, None] and x(None, _) is x[None, :]: each `_` keeps
// one of x's dimensions, each `None` inserts a dimension of 1 (Value::operator()).
Value expand_dims(const Operand &x, int axis, Loc loc = Loc::current());
Value broadcast_to(const Operand &x, const std::vector<int64_t> &shape, Loc loc = Loc::current());
Value reshape(const Operand &x, const std::vector<int64_t> &shape, Loc loc = Loc::current());
Value permute(const Operand &x, const std::vector<int> &dims, Loc loc = Loc::current());
Value trans(const Operand &x, Loc loc = Loc::current()); // permute(x, {1, 0}) for 2-D blocks
// Triton's tl.join and tl.split: join(a, b) stacks two blocks of one shape (they broadcast, and
// must have one element type) along a new last dimension of 2, a at [..., 0] and b at
// [..., 1]; split(x) takes a block whose last dimension is 2 apart again (a block<2> gives
// two scalars). auto [even, odd] = split(reshape(x, {n / 2, 2}));
Value join(const Operand &a, const Operand &b, Loc loc = Loc::current());
std::pair<Value, Value> split(const Operand &x, Loc loc = Loc::current());
// Triton's tl.interleave: a and b (one shape) interleaved along their last dimension,
// a[..., 0], b[..., 0], a[..., 1], ... (join, then the last two dimensions merged).
Value interleave(const Operand &a, const Operand &b, Loc loc = Loc::current());
// Triton's tl.ravel: the block's elements in row-major order as a 1-D block.
Value ravel(const Operand &x, Loc loc = Loc::current());
// Triton's tl.swizzle2d: the index (i, j) of a size_i x size_j grid taken row-major becomes
// column-major within groups of size_g rows (the tutorial matmul's grouped tile order):
// auto [pm, pn] = swizzle2d(i, j, size_i, size_j, GROUP_M). Scalars or blocks of integers.
std::pair<Value, Value> swizzle2d(const Operand &i, const Operand &j, const Operand &size_i,
                                  const Operand &size_j, const Operand &size_g,
                                  Loc loc = Loc::current());
// Triton's tl.cat: a and b (one shape and element type, power-of-two dimensions) concatenated
// along `dim`, a first. With can_reorder the elements may come in another order (cheaper: no
// transposition), for results only reduced or stored where the order does not matter.
Value cat(const Operand &a, const Operand &b, bool can_reorder = false, int dim = 0,
          Loc loc = Loc::current());

// Triton's tl.flip, tl.sort and tl.topk, along any dimension of a block (negative counts from
// the end) whose extent is a power of two: bitonic networks in registers (frontend/Sort.cpp).
// flip reverses the order; sort orders ascending (descending when asked), ties and NaNs kept
// as elements (the result is a permutation; where NaNs land is unspecified); topk gives the k
// largest elements (k a power of two), largest first, the dimension's extent becoming k.
// Integers and fp32, fp16, bf16 (flip also masks). Each of a network's log2(n)(log2(n)+1)/2
// steps stages its block in shared memory of its own on the GPU: networks of a few hundred
// elements per kernel.
Value flip(const Operand &x, int dim = -1, Loc loc = Loc::current());
Value sort(const Operand &x, int dim = -1, bool descending = false, Loc loc = Loc::current());
Value topk(const Operand &x, int64_t k, int dim = -1, Loc loc = Loc::current());

// Triton's tl.gather: out[i][j] = x[index[i][j]][j] (axis 0) or x[i][index[i][j]] (axis 1), a
// block shaped as index (of rank 1 or 2, its other dimension x's). It compares every index
// with every position along the axis (index elements x extent, at most 256 per thread): for
// small blocks. An index out of range gives 0 (all bits clear).
Value gather(const Operand &x, const Operand &index, int axis, Loc loc = Loc::current());
// Triton's tl.histogram: counts (i32) of a 1-D integer block's values in bins 0 .. num_bins -
// 1 (a power of two); values outside them, and those where `mask` is false, are not counted.
// It compares every element with every bin: O(size x num_bins) work.
Value histogram(const Operand &x, int64_t num_bins, Loc loc = Loc::current());
Value histogram(const Operand &x, int64_t num_bins, const Operand &mask, Loc loc = Loc::current());

// Matrix products on the tensor cores, as Triton's tl.dot: a [M, K] x b [K, N] (or batched
// [B, M, K] x [B, K, N]), plus acc when given, in acc's type; M, N and K are powers of two of
// at least 16. fp16 and bf16 operands accumulate in fp32 (fp16 also in fp16), fp8 (e4m3,
// e5m2) in fp32, 8-bit integers in i32; fp32 operands go through tf32 by default
// (DotOptions::input_precision "tf32x3" is three tf32 products, about fp32's accuracy; "ieee"
// plain fp32 fmas). out_dtype picks the accumulator when no acc is given. trans(b) as an
// operand is free of charge: the operands are staged in shared memory in the order the
// tensor cores read.
//
//   auto acc = zeros({BM, BN}, float32);
//   for (auto k : range(0, cdiv(K, BK))) { ...; acc = dot(a, b, acc); }
struct DotOptions {
  std::string input_precision = "tf32"; // fp32 operands: "tf32", "tf32x3" or "ieee"
  std::string out_dtype = "";           // without acc: "fp32" (the default), "fp16", "i32"
  // fp8 operands on Hopper's wgmma, which sums products with fewer bits than fp32: 0 sums the
  // whole product so (fast, Triton's default); N (a multiple of 32, at most K) adds the partial
  // sum into the fp32 accumulator every N elements of K.
  int64_t max_num_imprecise_acc = 0;
};
Value dot(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value dot(const Operand &a, const Operand &b, const Operand &acc, Loc loc = Loc::current());
Value dot(const Operand &a, const Operand &b, const Operand &acc, const DotOptions &options,
          Loc loc = Loc::current());
Value dot(const Operand &a, const Operand &b, const DotOptions &options, Loc loc = Loc::current());
// Triton's tl.dot_scaled: acc + (a x 2^(a_scale - 127)) x (b x 2^(b_scale - 127)) for
// microscaling operands. Formats: "e2m1" (uint8, two fp4 values a byte along K, the first in
// the low nibble: a [M, K / 2], b [K / 2, N]), "e4m3", "e5m2", "bf16", "fp16"; scales (none,
// or e8m0 uint8 blocks: a_scale [M, K / 32], b_scale [N, K / 32]) multiply groups of 32
// along K. On Hopper, the operands are upcast to bf16 (fp16 when both are) for dot.
Value dot_scaled(const Operand &a, const std::optional<Value> &a_scale,
                 const std::string &a_format, const Operand &b,
                 const std::optional<Value> &b_scale, const std::string &b_format,
                 const std::optional<Value> &acc = std::nullopt, Loc loc = Loc::current());

// Cache hints of a load or store (Triton's cache_modifier and eviction_policy); they change
// how the data moves through the caches, never the results. Cache: PTX's cache operators
// (loads: ca, cg, cs, lu, cv; stores: wb, cg, cs, wt; none: the hardware's default). Evict:
// the priority of the lines in L2 (and in L1 when no cache operator is given).
//
//   load(p, m, 0.0, {.cache = Cache::cg, .evict = Evict::first})
//   store(p, y, m, {.cache = Cache::cs})
enum class Cache { none, ca, cg, cs, lu, cv, wb, wt };
enum class Evict { normal, first, last };
struct CacheHints {
  Cache cache = Cache::none;
  Evict evict = Evict::normal;
};

// Memory. Masked-off lanes of a load give `other`; masked-off lanes of a store write nothing.
Value load(const Operand &ptrs, Loc loc = Loc::current());
Value load(const Operand &ptrs, CacheHints hints, Loc loc = Loc::current());
Value load(const Operand &ptrs, const Operand &mask, const Operand &other = 0.0,
           CacheHints hints = {}, Loc loc = Loc::current());
void store(const Operand &ptrs, const Operand &value, Loc loc = Loc::current());
void store(const Operand &ptrs, const Operand &value, CacheHints hints, Loc loc = Loc::current());
void store(const Operand &ptrs, const Operand &value, const Operand &mask, CacheHints hints = {},
           Loc loc = Loc::current());

// Tensor descriptors, as Triton 3's tl.make_tensor_descriptor: a row-major tensor in global
// memory (its base pointer, shape and strides in elements; the last stride the literal 1) read
// and written a tile of block_shape at a time, at element offsets. Elements outside the
// tensor load as zero and are not stored; offsets may be negative or run past the end.
//
//   auto a_desc = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
//   for (auto k : range(0, K, BK, 4))
//     acc = dot(a_desc.load({pid_m * BM, k}), b_desc.load({k, pid_n * BN}), acc);
//   c_desc.store({pid_m * BM, pid_n * BN}, cast(acc, "bf16"));
//
// On Hopper (sm_90a) a 2-D tile that a pipelined range loop loads becomes one TMA copy
// (cp.async.bulk.tensor) per stage, issued by one thread, and a 2-D tile stored (or added)
// becomes a TMA store (or reduction) from a staging buffer, when the descriptor's base, shape
// and strides are kernel arguments or constants and TMA can take them (docs/DSL.md, "Tensor
// descriptors"); otherwise the tile is moved element by element, and the results are the same.
//
// In a kernel whose programs form thread-block clusters (Specialization::clusterSize), a tile
// that every program of a cluster loads at the same offsets may be loaded once for all of them:
// `desc.load(offsets, multicast)`. In a warp-specialized ring (range(...).warp_specialize())
// on Hopper, each program's TMA then reads 1/C of the tile and multicasts it into all C
// programs' shared memory, which cuts the tile's reads from L2 C-fold (a matmul's pair of
// programs on neighbouring row tiles shares B's tile). Every program of the cluster must make
// the same multicast loads, with the same offsets, the same number of times: the interpreter
// checks it (on the GPU a mismatch gives wrong tiles or hangs). Elsewhere the load is an
// ordinary one, with the same results (docs/DSL.md, "Thread-block clusters").
struct MulticastTag {};
inline constexpr MulticastTag multicast{};

class TensorDescriptor {
public:
  Value load(const std::vector<Operand> &offsets, Loc loc = Loc::current()) const;
  Value load(const std::vector<Operand> &offsets, MulticastTag, Loc loc = Loc::current()) const;
  void store(const std::vector<Operand> &offsets, const Operand &value,
             Loc loc = Loc::current()) const;
  // Triton's desc.atomic_add (and min, max, and, or, xor): the tile combined into the tensor
  // element by element (relaxed, gpu scope), nothing outside it touched, no old values.
  // Where the GPU passes can, a TMA reduction does it.
  void atomic_add(const std::vector<Operand> &offsets, const Operand &value,
                  Loc loc = Loc::current()) const;
  void atomic_min(const std::vector<Operand> &offsets, const Operand &value,
                  Loc loc = Loc::current()) const;
  void atomic_max(const std::vector<Operand> &offsets, const Operand &value,
                  Loc loc = Loc::current()) const;
  void atomic_and(const std::vector<Operand> &offsets, const Operand &value,
                  Loc loc = Loc::current()) const;
  void atomic_or(const std::vector<Operand> &offsets, const Operand &value,
                 Loc loc = Loc::current()) const;
  void atomic_xor(const std::vector<Operand> &offsets, const Operand &value,
                  Loc loc = Loc::current()) const;
  const std::vector<int64_t> &block_shape() const { return block_; }

private:
  friend TensorDescriptor make_tensor_descriptor(const Operand &, const std::vector<Operand> &,
                                                 const std::vector<Operand> &,
                                                 const std::vector<int64_t> &, Loc);
  std::pair<Value, Value> tile(const std::vector<ir::Value *> &offsets, Loc loc) const;
  std::vector<ir::Value *> offsetValues(const std::vector<Operand> &offsets, const char *what,
                                        Loc loc) const;
  // The tile's pointers, mask and offsets (i64 scalars) for a store or atomic named `what`,
  // checking that a block `value` has the descriptor's block shape.
  struct WrittenTile {
    Value ptrs, mask;
    std::vector<ir::Value *> offsets;
  };
  WrittenTile writtenTile(const std::vector<Operand> &offsets, const Operand &value,
                          const std::string &what, Loc loc) const;
  // Appends the descriptor's scalars and the tile's offsets to a traced load, store or atomic.
  void attach(ir::Op *op, const std::vector<ir::Value *> &offsets, const SourceLoc &loc) const;
  Value base_;
  std::vector<Value> shape_, strides_; // i64 scalars
  std::vector<int64_t> block_;
};
TensorDescriptor make_tensor_descriptor(const Operand &base, const std::vector<Operand> &shape,
                                        const std::vector<Operand> &strides,
                                        const std::vector<int64_t> &block_shape,
                                        Loc loc = Loc::current());

// Block pointers, as Triton's tl.make_block_ptr / tl.advance: a tile of block_shape at element
// offsets into a tensor of `shape` with any `strides` (`order` lists the dimensions from the
// fastest-varying in memory, as Triton's does). load(bp, boundary_check, padding) masks the
// dimensions listed in boundary_check (elements outside the tensor read as zero, or NaN with
// Padding::nan); the others are read unchecked, as Triton's. advance() returns the pointer moved
// by some elements along each dimension; a block pointer assigned in a loop is carried as any
// variable is.
//
//   auto a_bp = make_block_ptr(a, {M, K}, {K, 1}, {pid_m * BM, 0}, {BM, BK}, {1, 0});
//   for (auto k : range(0, K, BK)) {
//     acc = dot(load(a_bp, {0, 1}), load(b_bp, {0, 1}), acc);
//     a_bp = advance(a_bp, {0, BK});
//     b_bp = advance(b_bp, {BK, 0});
//   }
enum class Padding { zero, nan };
class BlockPointer {
public:
  BlockPointer() = default;
  BlockPointer(const BlockPointer &) = default;
  // Assignment keeps this pointer's Value objects and rebinds them, as `v = w` does for a
  // Value: a loop sees the variable's offsets change and carries them (a moved-in vector
  // would hand it other Value objects, and the loop would see none of its own change).
  BlockPointer &operator=(const BlockPointer &o);
  const std::vector<int64_t> &block_shape() const { return block_; }
  const std::vector<int64_t> &order() const { return order_; }

private:
  friend BlockPointer make_block_ptr(const Operand &, const std::vector<Operand> &,
                                     const std::vector<Operand> &, const std::vector<Operand> &,
                                     const std::vector<int64_t> &, const std::vector<int64_t> &,
                                     Loc);
  friend BlockPointer advance(const BlockPointer &, const std::vector<Operand> &, Loc);
  friend Value load(const BlockPointer &, const std::vector<int64_t> &, Padding, Loc);
  friend void store(const BlockPointer &, const Operand &, const std::vector<int64_t> &, Loc);
  std::pair<Value, Value> tile(const std::vector<int64_t> &boundaryCheck, const char *what,
                               Loc loc) const;
  Value base_;
  std::vector<Value> shape_, strides_, offsets_; // i64 scalars
  std::vector<int64_t> block_, order_;
};
BlockPointer make_block_ptr(const Operand &base, const std::vector<Operand> &shape,
                            const std::vector<Operand> &strides,
                            const std::vector<Operand> &offsets,
                            const std::vector<int64_t> &block_shape,
                            const std::vector<int64_t> &order, Loc loc = Loc::current());
BlockPointer advance(const BlockPointer &bp, const std::vector<Operand> &offsets,
                     Loc loc = Loc::current());
Value load(const BlockPointer &bp, const std::vector<int64_t> &boundary_check = {},
           Padding padding = Padding::zero, Loc loc = Loc::current());
void store(const BlockPointer &bp, const Operand &value,
           const std::vector<int64_t> &boundary_check = {}, Loc loc = Loc::current());

// Random numbers, bit for bit those of Triton 3.6's tl.randint / randint4x / rand / randn for
// the same seed and offsets (frontend/Random.cpp): Philox 4x32 (10 rounds by default) keyed by
// the seed with the offsets as the counter. Offsets are 32- or 64-bit integers (a block or a
// scalar); rand gives floats in [0, 1), randn standard normals (Box-Muller, as Triton's).
Group philox4x32(const Operand &c0, const Operand &c1, const Operand &c2, const Operand &c3,
                 const Operand &k0, const Operand &k1, int n_rounds = 10,
                 Loc loc = Loc::current());
Group randint4x(const Operand &seed, const Operand &offset, int n_rounds = 10,
                Loc loc = Loc::current());
Value randint(const Operand &seed, const Operand &offset, int n_rounds = 10,
              Loc loc = Loc::current());
Value uint_to_uniform_float(const Operand &x, Loc loc = Loc::current());
// What uint_to_uniform_float multiplies a 32-bit word, folded onto [0, 2^31), by (as fp32).
inline constexpr double kUniformScale32 = 4.6566127342e-10;
Value rand(const Operand &seed, const Operand &offset, int n_rounds = 10, Loc loc = Loc::current());
Group rand4x(const Operand &seed, const Operand &offset, int n_rounds = 10,
             Loc loc = Loc::current());
Value randn(const Operand &seed, const Operand &offset, int n_rounds = 10, Loc loc = Loc::current());

// Atomics on global memory (Triton's tl.atomic_*): each element of a block once, masked-off
// lanes untouched; they give the old values (0 where masked off). `sem` is relaxed, acquire,
// release or acq_rel (the default); `scope` gpu (the default), cta or sys. Types: add takes
// i32, u32, i64, u64, fp32, fp16 and bf16; max and min i32, u32, i64, u64 and fp32; and, or
// and xor integers; xchg and cas 32- and 64-bit integers and fp32.
#define TRITIUM_DECLARE_ATOMIC(name)                                                              \
  Value name(const Operand &ptr, const Operand &val, Loc loc = Loc::current());                  \
  Value name(const Operand &ptr, const Operand &val, const Operand &mask,                        \
             const std::string &sem = "acq_rel", const std::string &scope = "gpu",               \
             Loc loc = Loc::current());
TRITIUM_DECLARE_ATOMIC(atomic_add)
TRITIUM_DECLARE_ATOMIC(atomic_max)
TRITIUM_DECLARE_ATOMIC(atomic_min)
TRITIUM_DECLARE_ATOMIC(atomic_and)
TRITIUM_DECLARE_ATOMIC(atomic_or)
TRITIUM_DECLARE_ATOMIC(atomic_xor)
TRITIUM_DECLARE_ATOMIC(atomic_xchg)
#undef TRITIUM_DECLARE_ATOMIC
// Where *ptr == cmp, stores val; gives the old value.
Value atomic_cas(const Operand &ptr, const Operand &cmp, const Operand &val,
                 const std::string &sem = "acq_rel", const std::string &scope = "gpu",
                 Loc loc = Loc::current());
// Every thread of the program waits here (Triton's tl.debug_barrier).
void debug_barrier(Loc loc = Loc::current());

// Programmatic dependent launch (Hopper; Triton's gdc_wait and gdc_launch_dependents). A kernel
// that calls griddep_wait() is launched so that it may start while the kernel before it in the
// stream is still running: its programs run the code before the wait (loads of data that
// kernel does not write, set-up) early, and griddep_wait() holds them until that kernel has
// finished and its writes are visible. Call it at the kernel's top level, before the first
// access to memory the earlier kernel reads or writes. griddep_launch_dependents() tells the
// stream's next kernel that it may start launching once every program of this one has called
// it (or exited); it is only a hint, since that kernel still waits for this one to finish.
// Below sm_90 both do nothing and the launch is an ordinary one.
void griddep_wait(Loc loc = Loc::current());
void griddep_launch_dependents(Loc loc = Loc::current());

// A barrier across the whole grid (CUDA's cooperative-groups grid.sync()): no program goes on
// until every program has reached it, and what each wrote before it is then visible to all. A
// kernel that calls it is launched cooperatively: every program must be resident at once (a
// grid of at most CompiledKernel::persistentGrid's programs), or the launch fails with an error
// saying so. Call it at the kernel's top level. The interpreter runs such a kernel's programs
// at once, a thread each.
void grid_sync(Loc loc = Loc::current());

// Checks on the device (Triton's tl.device_assert): where `cond` is false the kernel stops and
// reports `message` with this call's file:line (the interpreter raises a UserError there).
void device_assert(const Operand &cond, const std::string &message = "",
                   Loc loc = Loc::current());
// Checks and prints at trace time (Triton's tl.static_assert, tl.static_print): a false
// condition is a UserError at this call; static_print writes the values' types (and the
// numbers given) to stderr as the kernel is traced.
void static_assert_(bool cond, const std::string &message = "", Loc loc = Loc::current());
void static_print(const std::string &prefix, std::initializer_list<Operand> values,
                  Loc loc = Loc::current());

// Debugging: prints `prefix` and each element of `value` with the program id and the element's
// index (Triton's device_print), in the interpreter and on the GPU (vprintf).
void print(const std::string &prefix, const Operand &value, Loc loc = Loc::current());

// Reductions over an axis (Triton's tl.max / tl.min / tl.sum); a negative axis counts from the
// last. The axis disappears from the shape; a 1-D block reduces to a scalar.
Value max(const Operand &x, int axis, Loc loc = Loc::current());
Value min(const Operand &x, int axis, Loc loc = Loc::current());
Value sum(const Operand &x, int axis, Loc loc = Loc::current());
// The index of the largest (smallest) element along the axis, i32, the first on ties.
Value argmax(const Operand &x, int axis, Loc loc = Loc::current());
Value argmin(const Operand &x, int axis, Loc loc = Loc::current());
Value xor_sum(const Operand &x, int axis, Loc loc = Loc::current()); // integers
// Triton's tl.reduce: `combine` takes two scalars (an accumulated one, another) and gives the
// combined one; it must be associative and commutative. It is traced once, with scalars.
Value reduce(const Operand &x, int axis, const std::function<Value(Value, Value)> &combine,
             Loc loc = Loc::current());
// Several blocks of one shape reduced together (argmax's value and index): combine takes the
// accumulated group and another and gives the combined group.
Group reduce(const Group &xs, int axis, const std::function<Group(const Group &, const Group &)> &combine,
             Loc loc = Loc::current());
// Inclusive scans along an axis (Triton's tl.cumsum, tl.cumprod, tl.associative_scan): element
// i is the combination of elements 0 .. i; the shape is kept. combine must be associative; it
// takes the accumulated elements first. With `reverse` (Triton's reverse=True) element i is the
// combination of elements i .. n-1, accumulated from the end.
Value cumsum(const Operand &x, int axis, bool reverse = false, Loc loc = Loc::current());
Value cumprod(const Operand &x, int axis, bool reverse = false, Loc loc = Loc::current());
Value associative_scan(const Operand &x, int axis, const std::function<Value(Value, Value)> &combine,
                       bool reverse = false, Loc loc = Loc::current());
Group associative_scan(const Group &xs, int axis,
                       const std::function<Group(const Group &, const Group &)> &combine,
                       bool reverse = false, Loc loc = Loc::current());

// Elementwise math on floats (16-bit floats compute in f32, as Triton does); docs/DSL.md gives
// each function's accuracy. abs also takes integers.
Value exp(const Operand &x, Loc loc = Loc::current());
Value exp2(const Operand &x, Loc loc = Loc::current());
Value log(const Operand &x, Loc loc = Loc::current());
Value log2(const Operand &x, Loc loc = Loc::current());
Value sqrt(const Operand &x, Loc loc = Loc::current());    // fast (sqrt.approx)
Value sqrt_rn(const Operand &x, Loc loc = Loc::current()); // correctly rounded
Value rsqrt(const Operand &x, Loc loc = Loc::current());
Value abs(const Operand &x, Loc loc = Loc::current());
Value sin(const Operand &x, Loc loc = Loc::current());
Value cos(const Operand &x, Loc loc = Loc::current());
Value tanh(const Operand &x, Loc loc = Loc::current());
Value sigmoid(const Operand &x, Loc loc = Loc::current());
Value erf(const Operand &x, Loc loc = Loc::current());
Value log1p(const Operand &x, Loc loc = Loc::current()); // log(1 + x), accurate near 0
Value expm1(const Operand &x, Loc loc = Loc::current()); // exp(x) - 1, accurate near 0
Value floor(const Operand &x, Loc loc = Loc::current());
Value ceil(const Operand &x, Loc loc = Loc::current());
// CUDA libdevice's (Triton's tl.extra.libdevice), but trunc, rint (ties to even) and copysign,
// which are exact instructions.
Value tan(const Operand &x, Loc loc = Loc::current());
Value asin(const Operand &x, Loc loc = Loc::current());
Value acos(const Operand &x, Loc loc = Loc::current());
Value atan(const Operand &x, Loc loc = Loc::current());
Value sinh(const Operand &x, Loc loc = Loc::current());
Value cosh(const Operand &x, Loc loc = Loc::current());
Value asinh(const Operand &x, Loc loc = Loc::current());
Value acosh(const Operand &x, Loc loc = Loc::current());
Value atanh(const Operand &x, Loc loc = Loc::current());
Value cbrt(const Operand &x, Loc loc = Loc::current());
Value log10(const Operand &x, Loc loc = Loc::current());
Value erfc(const Operand &x, Loc loc = Loc::current());
Value erfinv(const Operand &x, Loc loc = Loc::current());
Value trunc(const Operand &x, Loc loc = Loc::current());
Value rint(const Operand &x, Loc loc = Loc::current());
Value round(const Operand &x, Loc loc = Loc::current());
Value atan2(const Operand &x, const Operand &y, Loc loc = Loc::current());
Value hypot(const Operand &x, const Operand &y, Loc loc = Loc::current());
Value fmod(const Operand &x, const Operand &y, Loc loc = Loc::current());
Value copysign(const Operand &x, const Operand &y, Loc loc = Loc::current());
Value fma(const Operand &x, const Operand &y, const Operand &z, Loc loc = Loc::current());
Value pow(const Operand &x, const Operand &y, Loc loc = Loc::current());
Value div_rn(const Operand &x, const Operand &y, Loc loc = Loc::current());
// min(max(x, lo), hi): NaN in x propagates, as Triton's clamp.
Value clamp(const Operand &x, const Operand &lo, const Operand &hi, Loc loc = Loc::current());
Value maximum(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value minimum(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value where(const Operand &cond, const Operand &a, const Operand &b, Loc loc = Loc::current());
// Converts to another element type (float32 or "fp32", ...), keeping the shape.
Value cast(const Operand &x, DType dtype, Loc loc = Loc::current());

// Triton's tl.inline_asm_elementwise: PTX run element by element over `args` (blocks and
// scalars broadcast to one shape; literals are i32 or f32 scalars), giving a block of `dtype`,
// or one per dtype. Each asm call takes `pack` elements (a power of two) of every argument and
// result: narrow ones packed into 32-bit registers, 8-bit ones four to a register, 16-bit ones
// two. `constraints` lists the outputs' registers then the inputs' ("=r,r,r"), named $0, $1 ...
// in the asm. An asm that is not `is_pure` is never removed, merged or moved out of loops. The
// GPU runs it; the interpreter cannot (a UserError at this line).
Value inline_asm_elementwise(const std::string &asm_text, const std::string &constraints,
                             const std::vector<Operand> &args, DType dtype, bool is_pure, int pack,
                             Loc loc = Loc::current());
Group inline_asm_elementwise(const std::string &asm_text, const std::string &constraints,
                             const std::vector<Operand> &args, const std::vector<DType> &dtypes,
                             bool is_pure, int pack, Loc loc = Loc::current());

// range(start, end, step, num_stages): a device loop, written as a C++ range-for whose body is
// traced once. `break` and `return` inside it are not supported (the trace reports them).
//
// Variables declared before the loop and assigned in its body (the online softmax's running
// max and sum) are carried, as in Triton: inside the body they hold the value of the current
// iteration, after the loop the value of the last one:
//
//   auto m = full(1, -INFINITY)...; auto d = ...;
//   for (auto k : range(0, n, BLOCK)) { ...; m = m_new; d = d_new; }
//
// carry(m, d) may still name them (needed only when two variables held one value before the
// loop, which tritium cannot tell apart). A carried variable must keep its type and shape. A
// value made inside a loop body and used after the loop without being carried is reported at
// the use.
class Range {
public:
  class Iterator {
  public:
    explicit Iterator(Range *r) : r_(r) {}
    Value operator*() const;
    Iterator &operator++();
    bool operator!=(const Iterator &) const;

  private:
    Range *r_;
  };

  Range(const Operand &start, const Operand &end, const Operand &step, int numStages, Loc loc);
  ~Range() noexcept;
  Range(const Range &) = delete;
  Range &operator=(const Range &) = delete;
  Range(Range &&other) noexcept;
  Range &operator=(Range &&) = delete;

  // Names the loop-carried variables (before the loop starts).
  template <typename... Vs> Range carry(Vs &...vars) && {
    static_assert((std::is_base_of_v<Value, Vs> && ...), "carry() takes tritium values");
    (addCarried(&vars), ...);
    return std::move(*this);
  }

  // Triton's `tl.range(..., warp_specialize=True)`: one more warp issues the loop's tile
  // copies (TMA), running ahead of the compute warps, which then meet at no CTA barrier per
  // iteration (gpu/SpecializeWarps.cpp). It applies where every tile of the loop's ring is
  // copied by TMA and the loop sits at the kernel's top level after code that only computes
  // and reads; elsewhere the loop keeps its plain ring, and the GIR dump says why
  // ({warp_specialize_skipped}). A hint: the results are the same either way.
  Range warp_specialize(bool on = true) &&;
  // With warp specialization and two compute warp groups, the groups take turns at the loop's
  // tensor-core products (FlashAttention-3's "ping-pong"): a turn spans the issues of the
  // products at the body's head, from the first up to the last one issued before anything
  // reads a product's result (group g waits for its turn before them and hands it on right
  // after), so that one group's products queue behind the other's and its softmax runs under
  // them. Asks for warp_specialize too;
  // applies where the body runs two or more wgmma products and nothing in it meets at a CTA
  // barrier (GIR: {ping_pong}, or {ping_pong_skipped = "reason"}). On a persistent kernel's
  // tile walk around a warp-specialized loop (num_warps 4): two compute warp groups take
  // alternate iterations, each with its own tile, from the one producer's ring.
  Range ping_pong(bool on = true) &&;
  // hoist_invariants(false): LLVM's loop-invariant code motion leaves this loop alone (TIR:
  // {no_hoist}), so what its body computes from values made outside it is computed in each
  // iteration. For a persistent kernel's walk over its tiles: hoisted out of the walk, a
  // tile's per-thread rows and addresses stay live across the tile's inner loop, where the
  // registers are scarcest (the attention forward's walk spilled 156 bytes at head_dim 128
  // with them). Loops inside it are LLVM's as before. A hint: the results are the same.
  Range hoist_invariants(bool on = true) &&;

  Iterator begin();
  Iterator end() { return Iterator(this); }

private:
  friend class Iterator;
  void addCarried(Value *v);
  void close();
  std::vector<Value *> carried_;
  std::shared_ptr<const void> before_; // the live variables when the body opened (Carry.h)
  ir::Value *start_, *end_, *step_;
  int numStages_;
  bool warpSpecialize_ = false, pingPong_ = false, hoist_ = true;
  SourceLoc loc_;
  ir::Op *loop_ = nullptr;
  ir::Block *outer_ = nullptr;
  bool open_ = false;
  bool done_ = false;
  int uncaught_ = 0;
};

// Structured control flow on runtime scalars, as Triton's `if` and `while` on scalars: each
// region is traced once. Variables declared before and assigned inside flow out of if_ (the
// taken branch's value) and are carried by while_ (and by range), without being named:
//
//   auto y = x;
//   if_(n > 0, [&] { y = x * 2; }, [&] { y = -x; });
//   auto i = full... ; while_([&] { return i < n; }, [&] { i = i + 1; });
//
// A variable must keep its type and shape on every path. A block condition is a mistake
// (every thread takes the same branch): use where() for blocks.
void if_(const Operand &cond, const std::function<void()> &then,
         const std::function<void()> &otherwise = {}, Loc loc = Loc::current());
void while_(const std::function<Value()> &cond, const std::function<void()> &body,
            Loc loc = Loc::current());

// Triton's tl.static_range: a loop unrolled at trace time (a plain C++ loop does the same).
inline std::vector<int64_t> static_range(int64_t start, int64_t end, int64_t step = 1) {
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step)
    out.push_back(i);
  return out;
}
inline std::vector<int64_t> static_range(int64_t end) { return static_range(0, end); }

Range range(const Operand &start, const Operand &end, const Operand &step = 1,
            int num_stages = 0, Loc loc = Loc::current()); // 0: the kernel's num_stages

} // namespace tritium::dsl
