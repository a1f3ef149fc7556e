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
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

namespace tritium::dsl {

using Loc = std::source_location;

// A traced value: a scalar or a block. Kernel parameters use the subtypes Ptr, Int and Float,
// which say what the launch must pass; the values themselves behave alike.
class Value {
public:
  Value() = default;
  explicit Value(ir::Value *v); // belongs to the trace in progress (Tracer.cpp)
  ir::Value *ir() const { return v_; }
  // ir() once the value is known to belong to the trace in progress: a value kept (in a static,
  // say) from an ended trace or another kernel's is a user error at `use`, raised before the
  // stale IR is touched.
  ir::Value *checked(const SourceLoc &use) const;
  const ir::Type &type(Loc loc = Loc::current()) const;
  // The element type's name ("fp32", "bf16", "i32"); for pointers the pointee's, as Triton's
  // ptr.dtype.element_ty: cast(y, output_ptr.dtype()) stores in the output's type.
  std::string dtype(Loc loc = Loc::current()) const;

private:
  friend class Range; // rebinds carried variables to the loop's arguments and results
  ir::Value *v_ = nullptr;
  uint64_t trace_ = 0; // the serial of the Tracer that made it; 0: made outside any trace
};

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
// them the same number of times. Without clusters they return their input.
Value cluster_rank(Loc loc = Loc::current()); // 0 .. cluster_size() - 1
Value cluster_size(Loc loc = Loc::current()); // the specialization's cluster size (a constant)
Value cluster_max(const Operand &x, Loc loc = Loc::current());
Value cluster_sum(const Operand &x, Loc loc = Loc::current());
// Every program's x, as a block of bit_ceil(cluster_size()) elements in rank order; lanes past
// cluster_size() hold `other`. Adjacent cluster ops that do not use each other's results share
// one barrier: gathering a row's partial max and sum together costs one exchange, not two.
Value cluster_gather(const Operand &x, const Operand &other, Loc loc = Loc::current());

// Blocks. The size end - start is a power of two, or a multiple of 32 x num_warps (the same
// number of elements in every thread).
Value arange(int64_t start, int64_t end, Loc loc = Loc::current());
Value full(int64_t size, const Operand &value, Loc loc = Loc::current());

// Memory. Masked-off lanes of a load give `other`; masked-off lanes of a store write nothing.
Value load(const Operand &ptrs, Loc loc = Loc::current());
Value load(const Operand &ptrs, const Operand &mask, const Operand &other = 0.0,
           Loc loc = Loc::current());
void store(const Operand &ptrs, const Operand &value, Loc loc = Loc::current());
void store(const Operand &ptrs, const Operand &value, const Operand &mask,
           Loc loc = Loc::current());

// Debugging: prints `prefix` and each element of `value` with the program id and the element's
// index (Triton's device_print), in the interpreter and on the GPU (vprintf).
void print(const std::string &prefix, const Operand &value, Loc loc = Loc::current());

// Reductions over an axis (Triton's tl.max / tl.sum).
Value max(const Operand &x, int axis, Loc loc = Loc::current());
Value sum(const Operand &x, int axis, Loc loc = Loc::current());

// Elementwise math.
Value exp(const Operand &x, Loc loc = Loc::current());
Value maximum(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value minimum(const Operand &a, const Operand &b, Loc loc = Loc::current());
Value where(const Operand &cond, const Operand &a, const Operand &b, Loc loc = Loc::current());
// Converts to "fp32", "fp16", "bf16", "i32", "i64" or "i1", keeping the shape.
Value cast(const Operand &x, const std::string &dtype, Loc loc = Loc::current());

// range(start, end, step, num_stages): a device loop, written as a C++ range-for whose body is
// traced once. `break` and `return` inside it are not supported (the trace reports them).
//
// Variables updated by the loop (the online softmax's running max and sum) are named with
// carry(); inside the body they hold the value of the current iteration, after the loop the
// value of the last one:
//
//   auto m = full(1, -INFINITY)...; auto d = ...;
//   for (auto k : range(0, n, BLOCK).carry(m, d)) { ...; m = m_new; d = d_new; }
//
// A carried variable must keep its type and shape. A value made inside a loop body and used
// after the loop without being carried is reported at the use.
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

  Iterator begin();
  Iterator end() { return Iterator(this); }

private:
  friend class Iterator;
  void addCarried(Value *v);
  void close();
  std::vector<Value *> carried_;
  ir::Value *start_, *end_, *step_;
  int numStages_;
  SourceLoc loc_;
  ir::Op *loop_ = nullptr;
  ir::Block *outer_ = nullptr;
  bool open_ = false;
  bool done_ = false;
  int uncaught_ = 0;
};

Range range(const Operand &start, const Operand &end, const Operand &step = 1,
            int num_stages = 0, Loc loc = Loc::current()); // 0: the kernel's num_stages

} // namespace tritium::dsl
