// The interpreter's state while one program runs, shared by the driver (Interpreter.cpp: the
// program loop, clusters and control flow) and the evaluator of ops (Evaluator.cpp). Every SSA
// value has a dense slot holding its elements: floats as doubles rounded to the element type
// after every op, integers, masks and pointers as int64 wrapped to their width.
#pragma once

#include "interpreter/Interpreter.h"

#include <barrier>
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
  int64_t pid = 0;
  int64_t clusterSize = 1;    // the kernel's cluster_size attribute
  Cluster *cluster = nullptr; // the running cluster's shared state; null when clusterSize is 1
  const Options &options;
  MemoryView memory;
  std::unordered_map<const ir::Value *, size_t> slots;
  std::vector<Tensor> env;

  Tensor &at(const ir::Value *v) { return env[slots.at(v)]; }
};

// The programs of one cluster while they run at once, one thread each: the exchange behind
// cluster_max and cluster_sum (defined in Interpreter.cpp, which runs the threads), and the
// check that every program reaches the same reduction, which on the GPU would hang instead.
class Cluster {
public:
  struct Value {
    double f = 0;
    int64_t i = 0;
  };

  // Thrown in a program whose peer failed: that peer's exception is the one reported.
  struct PeerFailed {};

  Cluster(int64_t index, int64_t size);

  // Publishes program `rank`'s value for the cluster reduction `op` and, once every program of
  // the cluster has arrived, returns all their values in rank order. A UserError when a peer
  // reached another reduction or finished; PeerFailed when a peer failed.
  const std::vector<Value> &exchange(int64_t rank, const ir::Op &op, Value mine);

  // Program `rank` leaves the cluster, finished or failed: peers stop waiting for it. Called
  // once per program, whatever happened (a no-op when exchange already let it go).
  void leave(int64_t rank, bool failed);

private:
  enum class State { Running, AtReduction, Finished, Failed };
  struct Seat {
    State state = State::Running;
    const ir::Op *op = nullptr; // the reduction it waits in
    Value value;
  };

  // Why the seats (read after every present program arrived) disagree; nothing when they agree.
  std::optional<UserError> mismatch() const;
  std::string describe(int64_t rank) const;

  int64_t index_, size_;
  std::vector<Seat> seats_;                // written by their own program before it arrives
  std::vector<char> dropped_;              // each program's own flag: it left the barrier
  std::vector<std::vector<Value>> copies_; // each program's copy of the values it got
  std::barrier<> barrier_;
};

// Evaluates one op that is not control flow; false when `op` is not one it knows.
bool evaluate(Machine &m, const ir::Op &op);

// Element rounding and wrapping to a scalar kind.
double roundTo(ir::ScalarKind k, double x);
int64_t wrapTo(ir::ScalarKind k, int64_t x);

} // namespace tritium::interpreter
