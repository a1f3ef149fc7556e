// The interpreter's state while one program runs, shared by the driver (Interpreter.cpp: the
// program loop, clusters and control flow) and the evaluator of ops (Evaluator.cpp). Every SSA
// value has a dense slot holding its elements: floats as doubles rounded to the element type
// after every op, integers, masks and pointers as int64 wrapped to their width.
#pragma once

#include "interpreter/Interpreter.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace tritium::interpreter {

struct Tensor {
  std::vector<double> f;  // float elements
  std::vector<int64_t> i; // integer, mask and pointer elements
};

class Cluster;

// One program's state. With clusters, each program of a running cluster has its own Machine on
// its own thread; what they share is read-only (fn, options) or the Cluster.
struct Machine {
  Machine(const ir::Function &fn, int64_t grid, const Options &options);

  const ir::Function &fn;
  int64_t grid;
  int64_t pid = 0;                 // along x (program_id(0))
  int64_t pidY = 0, pidZ = 0;       // along y and z
  int64_t gridY = 1, gridZ = 1;
  int64_t clusterSize = 1;    // the kernel's cluster_size attribute
  Cluster *cluster = nullptr; // the running cluster's shared state; null when clusterSize is 1
  Cluster *wholeGrid = nullptr; // grid_sync's barrier: every program of the grid runs at once
  const Options &options;
  MemoryView memory;
  std::unordered_map<const ir::Value *, size_t> slots;
  std::vector<Tensor> env;

  Tensor &at(const ir::Value *v) { return env[slots.at(v)]; }
};

// Evaluates one op that is not control flow; false when `op` is not one it knows.
bool evaluate(Machine &m, const ir::Op &op);

// dot: acc + a x b (Dot.cpp).
bool evaluateDot(Machine &m, const ir::Op &op);

// Element rounding and wrapping to a scalar kind.
double roundTo(ir::ScalarKind k, double x);
int64_t wrapTo(ir::ScalarKind k, int64_t x);

} // namespace tritium::interpreter
