// The cluster exchange of the interpreter (Cluster.h).
#include "interpreter/Cluster.h"

#include <algorithm>

namespace tritium::interpreter {

// --- clusters ---------------------------------------------------------------------------------
//
// Each reduction is two barrier phases: every present program publishes its seat and arrives
// (A); all read every seat; all arrive again (B) before any may publish the next one. A program
// that leaves (finished, failed, or refusing a mismatch) drops out of the barrier instead, so the
// others never wait for it. Seats are written only before A and read only between A and B, and
// the barrier orders the two, so they need no lock.

Cluster::Cluster(int64_t index, int64_t size)
    : index_(index), size_(size), seats_(size_t(size)), dropped_(size_t(size)),
      copies_(size_t(size)), barrier_(size) {}

const std::vector<Cluster::Value> &Cluster::exchange(int64_t rank, const ir::Op &op, Value mine) {
  seats_[size_t(rank)] = {State::AtReduction, &op, std::move(mine)};
  barrier_.arrive_and_wait(); // A
  // Every present program sees the same seats, so all of them decide alike.
  bool peerFailed = std::any_of(seats_.begin(), seats_.end(),
                                [](const Seat &s) { return s.state == State::Failed; });
  std::optional<UserError> error = peerFailed ? std::nullopt : mismatch();
  if (peerFailed || error) {
    // Leave without touching the seats: peers may still be reading them.
    dropped_[size_t(rank)] = 1;
    barrier_.arrive_and_drop();
    if (peerFailed)
      throw PeerFailed{};
    throw *error;
  }
  std::vector<Value> &copy = copies_[size_t(rank)];
  copy.resize(size_t(size_));
  for (size_t r = 0; r < seats_.size(); ++r)
    copy[r] = seats_[r].value;
  barrier_.arrive_and_wait(); // B: the seats may be published again
  return copy;
}

void Cluster::leave(int64_t rank, bool failed) {
  if (dropped_[size_t(rank)])
    return;
  seats_[size_t(rank)] = {failed ? State::Failed : State::Finished, nullptr, {}};
  dropped_[size_t(rank)] = 1;
  barrier_.arrive_and_drop();
}

std::string Cluster::describe(int64_t rank) const {
  return "program " + std::to_string(index_ * size_ + rank) + " (rank " + std::to_string(rank) +
         " of cluster " + std::to_string(index_) + ")";
}

// The first program at a reduction against the first program elsewhere: every program that
// decides builds the same message, so the reported error does not depend on thread timing.
std::optional<UserError> Cluster::mismatch() const {
  size_t at = 0;
  while (seats_[at].state != State::AtReduction)
    ++at; // the caller itself is at a reduction
  const ir::Op &op = *seats_[at].op;
  for (size_t r = 0; r < seats_.size(); ++r) {
    const Seat &other = seats_[r];
    if (other.state == State::AtReduction && other.op == &op)
      continue;
    std::string elsewhere = other.state == State::Finished
                                ? "finished without reaching it"
                                : "reached " + std::string(other.op->name()) + " at " +
                                      other.op->loc().str() + " instead";
    return UserError(std::string(op.name()) + ": " + describe(int64_t(at)) + " reached it but " +
                         describe(int64_t(r)) + " " + elsewhere +
                         " (every program of a cluster must reach each cluster reduction and "
                         "multicast load the same number of times and in the same order; on "
                         "the GPU this hangs)",
                     op.loc());
  }
  return std::nullopt;
}

} // namespace tritium::interpreter
