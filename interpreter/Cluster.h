// The programs of one cluster while the interpreter runs them at once, one thread each: the
// exchange behind cluster_max, cluster_sum and cluster_gather, and the check that every program
// reaches the same exchange, which on the GPU would hang instead.
#pragma once

#include "compiler/ir/IR.h"

#include <barrier>
#include <optional>
#include <string>
#include <vector>

namespace tritium::interpreter {

// The programs of one cluster while they run at once, one thread each: the exchange behind
// cluster_max and cluster_sum of scalars and blocks (Interpreter.cpp runs the threads), and the
// check that every program reaches the same reduction, which on the GPU would hang instead.
class Cluster {
public:
  struct Value { // a program's scalar (one element) or block (row-major), floats or integers
    std::vector<double> f;
    std::vector<int64_t> i;
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

} // namespace tritium::interpreter
