// The interpreter's driver: the interpret-mode switch, the program loop over the grid, kernel
// arguments, structured control flow (for/yield), and the threads that run a cluster's
// programs together (interpreter/Cluster.h has their exchange). Every other op goes to the
// evaluator.
#include "interpreter/Cluster.h"
#include "interpreter/Evaluator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace tritium {

namespace {
// -1: not decided yet (read TRITIUM_INTERPRET on the next query); 0 or 1 after that. Launches
// ask on every call, so the environment is read once, not per launch.
std::atomic<int> gInterpret{-1};
} // namespace

void setInterpret(bool on) { gInterpret = on ? 1 : 0; }
void resetInterpret() { gInterpret = -1; }

bool interpreting() {
  int mode = gInterpret.load(std::memory_order_relaxed);
  if (mode < 0) {
    const char *env = std::getenv("TRITIUM_INTERPRET");
    mode = env && (!std::strcmp(env, "1") || !std::strcmp(env, "true") || !std::strcmp(env, "on"));
    gInterpret.store(mode, std::memory_order_relaxed);
  }
  return mode == 1;
}

namespace interpreter {

Machine::Machine(const ir::Function &f, int64_t g, const Options &o) : fn(f), grid(g), options(o) {
  auto slot = [&](const ir::Value *v) { slots.emplace(v, slots.size()); };
  for (auto &arg : fn.body().arguments())
    slot(arg.get());
  ir::walk(const_cast<ir::Block &>(fn.body()), [&](ir::Op &op) {
    for (auto &r : op.results())
      slot(r.get());
    for (unsigned r = 0; r < op.numRegions(); ++r)
      for (auto &arg : op.region(r)->arguments())
        slot(arg.get());
  });
  env.resize(slots.size());
}

namespace {

class Driver {
public:
  explicit Driver(Machine &m) : m_(m) {}

  void runProgram() { execBlock(m_.fn.body()); }

private:
  // Runs a block; returns its yield (null for the kernel's body).
  const ir::Op *execBlock(const ir::Block &block) {
    for (const auto &op : block.ops()) {
      switch (op->kind()) {
      case ir::OpKind::For:
        execFor(*op);
        break;
      case ir::OpKind::If:
        execIf(*op);
        break;
      case ir::OpKind::While:
        execWhile(*op);
        break;
      case ir::OpKind::Reduce:
        execReduce(*op);
        break;
      case ir::OpKind::Scan:
        execScan(*op);
        break;
      case ir::OpKind::Yield:
        return op.get();
      default:
        if (!evaluate(m_, *op))
          internalError(std::string("interpreter: no evaluation for '") + op->name() + "'");
      }
    }
    return nullptr;
  }

  // for (iv = lb; iv < ub; iv += step), carried values through the body's arguments.
  void execFor(const ir::Op &op) {
    int64_t lb = m_.at(op.operand(0)).i[0], ub = m_.at(op.operand(1)).i[0];
    int64_t step = m_.at(op.operand(2)).i[0];
    ir::ScalarKind k = op.operand(0)->type().kind();
    // Slots hold u32 values zero-extended, so signed order is theirs; u64 flips the sign bit.
    auto before = [&](int64_t a, int64_t b) {
      constexpr uint64_t sign = uint64_t(1) << 63;
      return k == ir::ScalarKind::U64 ? (uint64_t(a) ^ sign) < (uint64_t(b) ^ sign) : a < b;
    };
    if (step <= 0 && before(lb, ub))
      userError("loop step is " + std::to_string(step) + " in program " + std::to_string(m_.pid) +
                    ": it must be positive, or the loop never ends",
                op.loc());
    const ir::Block &body = *op.body();
    std::vector<Tensor> carried;
    for (unsigned i = 3; i < op.numOperands(); ++i)
      carried.push_back(m_.at(op.operand(i)));
    for (int64_t iv = lb; before(iv, ub); iv = wrapTo(k, iv + step)) {
      m_.at(body.argument(0)).i.assign(1, iv);
      for (size_t c = 0; c < carried.size(); ++c)
        m_.at(body.argument(unsigned(c + 1))) = carried[c];
      const ir::Op *yield = execBlock(body);
      for (size_t c = 0; c < carried.size(); ++c)
        carried[c] = m_.at(yield->operand(unsigned(c)));
      if (iv + step > std::numeric_limits<int32_t>::max() && k == ir::ScalarKind::I32)
        break; // the i32 induction variable would wrap: the GPU's loop ends there too
      if (iv + step > int64_t(std::numeric_limits<uint32_t>::max()) && k == ir::ScalarKind::U32)
        break; // so would a u32 one
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      m_.at(op.result(i)) = carried[i];
  }

  // The taken branch runs; its yield gives the results.
  void execIf(const ir::Op &op) {
    bool taken = m_.at(op.operand(0)).i[0] != 0;
    const ir::Op *yield = execBlock(*op.region(taken ? 0 : 1));
    std::vector<Tensor> out;
    for (unsigned i = 0; i < op.numResults(); ++i)
      out.push_back(m_.at(yield->operand(i)));
    for (unsigned i = 0; i < op.numResults(); ++i)
      m_.at(op.result(i)) = std::move(out[i]);
  }

  // The condition region sees the carried values; while it yields true the body runs and
  // hands on the next ones. The GPU has no bound on iterations; neither has this.
  void execWhile(const ir::Op &op) {
    const ir::Block &cond = *op.region(0), &body = *op.region(1);
    std::vector<Tensor> carried;
    for (unsigned i = 0; i < op.numOperands(); ++i)
      carried.push_back(m_.at(op.operand(i)));
    for (;;) {
      for (size_t c = 0; c < carried.size(); ++c)
        m_.at(cond.argument(unsigned(c))) = carried[c];
      const ir::Op *check = execBlock(cond);
      if (!m_.at(check->operand(0)).i[0])
        break;
      for (size_t c = 0; c < carried.size(); ++c)
        m_.at(body.argument(unsigned(c))) = carried[c];
      const ir::Op *yield = execBlock(body);
      for (size_t c = 0; c < carried.size(); ++c)
        carried[c] = m_.at(yield->operand(unsigned(c)));
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      m_.at(op.result(i)) = carried[i];
  }

  // A general reduction: for each result element, the region folds the operands' elements along
  // the axis from the first to the last (the GPU combines in a tree: for floats the results may
  // differ by rounding).
  void execReduce(const ir::Op &op) {
    const ir::Type &t = op.operand(0)->type();
    const ir::Block &combine = *op.region(0);
    unsigned n = op.numOperands();
    int64_t axis = op.intAttr("axis");
    int64_t outer = 1, inner = 1, len = t.shape()[size_t(axis)];
    for (int d = 0; d < t.rank(); ++d)
      (d < axis ? outer : inner) *= d == axis ? 1 : t.shape()[size_t(d)];
    std::vector<Tensor> results(n);
    for (unsigned i = 0; i < n; ++i) {
      bool isFloat = op.operand(i)->type().isFloat();
      if (isFloat)
        results[i].f.resize(size_t(outer * inner));
      else
        results[i].i.resize(size_t(outer * inner));
    }
    auto element = [&](unsigned i, size_t at, Tensor &into) {
      const Tensor &src = m_.at(op.operand(i));
      if (op.operand(i)->type().isFloat())
        into.f.assign(1, src.f[at]);
      else
        into.i.assign(1, src.i[at]);
    };
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        std::vector<Tensor> acc(n);
        for (unsigned i = 0; i < n; ++i)
          element(i, size_t(o * len * inner + in), acc[i]);
        for (int64_t j = 1; j < len; ++j) {
          for (unsigned i = 0; i < n; ++i) {
            m_.at(combine.argument(i)) = acc[i];
            element(i, size_t((o * len + j) * inner + in), m_.at(combine.argument(i + n)));
          }
          const ir::Op *yield = execBlock(combine);
          for (unsigned i = 0; i < n; ++i)
            acc[i] = m_.at(yield->operand(i));
        }
        for (unsigned i = 0; i < n; ++i) {
          size_t at = size_t(o * inner + in);
          if (op.operand(i)->type().isFloat())
            results[i].f[at] = acc[i].f[0];
          else
            results[i].i[at] = acc[i].i[0];
        }
      }
    for (unsigned i = 0; i < n; ++i)
      m_.at(op.result(i)) = std::move(results[i]);
  }

  // An inclusive scan: along the axis, element j is combine(element j - 1's result, element j);
  // reversed ({reverse = 1}), combine(element j + 1's result, element j) from the last one.
  void execScan(const ir::Op &op) {
    const ir::Type &t = op.operand(0)->type();
    const ir::Block &combine = *op.region(0);
    unsigned n = op.numOperands();
    int64_t axis = op.intAttr("axis");
    int64_t outer = 1, inner = 1, len = t.shape()[size_t(axis)];
    for (int d = 0; d < t.rank(); ++d)
      (d < axis ? outer : inner) *= d == axis ? 1 : t.shape()[size_t(d)];
    std::vector<Tensor> results(n);
    for (unsigned i = 0; i < n; ++i)
      results[i] = m_.at(op.operand(i));
    auto element = [&](unsigned i, size_t at, Tensor &into) {
      if (op.operand(i)->type().isFloat())
        into.f.assign(1, results[i].f[at]);
      else
        into.i.assign(1, results[i].i[at]);
    };
    bool reverse = op.hasAttr("reverse") && op.intAttr("reverse");
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in)
        for (int64_t step = 1; step < len; ++step) {
          int64_t j = reverse ? len - 1 - step : step, before = reverse ? j + 1 : j - 1;
          size_t prev = size_t((o * len + before) * inner + in), at = size_t((o * len + j) * inner + in);
          for (unsigned i = 0; i < n; ++i) {
            element(i, prev, m_.at(combine.argument(i)));
            element(i, at, m_.at(combine.argument(i + n)));
          }
          const ir::Op *yield = execBlock(combine);
          for (unsigned i = 0; i < n; ++i) {
            const Tensor &v = m_.at(yield->operand(i));
            if (op.operand(i)->type().isFloat())
              results[i].f[at] = v.f[0];
            else
              results[i].i[at] = v.i[0];
          }
        }
    for (unsigned i = 0; i < n; ++i)
      m_.at(op.result(i)) = std::move(results[i]);
  }

  Machine &m_;
};

void bindArguments(Machine &m, const std::vector<Arg> &args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Value *arg = m.fn.body().argument(unsigned(i));
    Tensor &t = m.at(arg);
    if (arg->type().isFloat())
      t.f.assign(1, roundTo(arg->type().kind(), args[i].f));
    else
      t.i.assign(1, arg->type().isPtr() ? args[i].i : wrapTo(arg->type().kind(), args[i].i));
  }
}

// The first exception of a cluster's programs, to rethrow on the calling thread.
class FirstError {
public:
  void record(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_)
      first_ = std::move(e);
  }
  void rethrowIfAny() {
    if (first_)
      std::rethrow_exception(first_);
  }

private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

// One program of a running cluster, on its own thread. Whatever happens, it leaves the cluster,
// so that no peer waits for it forever.
void runClusterProgram(Machine &m, Cluster &cluster, int64_t rank, FirstError &error) {
  try {
    Driver(m).runProgram();
    cluster.leave(rank, false);
  } catch (const Cluster::PeerFailed &) {
    cluster.leave(rank, true); // the peer's own exception is the one reported
  } catch (...) {
    error.record(std::current_exception());
    cluster.leave(rank, true);
  }
}

// Runs every machine at once, one thread each, machine r as rank r of `group`; rethrows the first
// error. A thread that fails to start leaves its seat and those after it, so that no program
// waits for one that never began.
void runTogether(std::vector<std::unique_ptr<Machine>> &machines, Cluster &group) {
  FirstError error;
  std::vector<std::thread> threads;
  const auto n = int64_t(machines.size());
  try {
    for (int64_t rank = 0; rank < n; ++rank)
      threads.emplace_back(runClusterProgram, std::ref(*machines[size_t(rank)]), std::ref(group),
                           rank, std::ref(error));
  } catch (...) {
    error.record(std::current_exception());
    for (auto rank = int64_t(threads.size()); rank < n; ++rank)
      group.leave(rank, true);
  }
  for (std::thread &t : threads)
    t.join();
  error.rethrowIfAny();
}

// Clusters one after another; the programs of a cluster at the same time, one thread each, as
// the GPU runs them, so that cluster reductions can wait for each other.
void runClusters(const ir::Function &fn, int64_t grid, int64_t clusterSize,
                 const std::vector<Arg> &args, const Options &options) {
  std::vector<std::unique_ptr<Machine>> machines; // one per rank, reused by every cluster
  for (int64_t rank = 0; rank < clusterSize; ++rank) {
    machines.push_back(std::make_unique<Machine>(fn, grid, options));
    machines.back()->clusterSize = clusterSize;
    bindArguments(*machines.back(), args);
  }
  for (int64_t index = 0; index < grid / clusterSize; ++index) {
    Cluster cluster(index, clusterSize);
    for (int64_t rank = 0; rank < clusterSize; ++rank) {
      Machine &m = *machines[size_t(rank)];
      m.pid = index * clusterSize + rank;
      m.cluster = &cluster;
    }
    runTogether(machines, cluster);
  }
}

// A kernel that calls grid_sync: every program at once, one thread each, as a cooperative launch
// runs them, with one barrier shared by the grid.
void runWholeGrid(const ir::Function &fn, int64_t grid, const std::vector<Arg> &args,
                  const Options &options) {
  constexpr int64_t kMaxPrograms = 4096; // threads, each with its program's values
  if (grid > kMaxPrograms)
    throw UserError("interpreting '" + fn.name() + "': it calls grid_sync, so its " +
                    std::to_string(grid) +
                    " programs would run at once, a thread each; the "
                    "interpreter runs at most " +
                    std::to_string(kMaxPrograms));
  std::vector<std::unique_ptr<Machine>> machines;
  for (int64_t pid = 0; pid < grid; ++pid)
    machines.push_back(std::make_unique<Machine>(fn, grid, options));
  Cluster all(0, grid);
  for (int64_t pid = 0; pid < grid; ++pid) {
    Machine &m = *machines[size_t(pid)];
    bindArguments(m, args);
    m.pid = pid;
    m.wholeGrid = &all;
  }
  runTogether(machines, all);
}

} // namespace

void run(const ir::Function &fn, int64_t grid, const std::vector<Arg> &args,
         const Options &options) {
  run(fn, {grid, 1, 1}, args, options);
}

void run(const ir::Function &fn, std::array<int64_t, 3> grid3, const std::vector<Arg> &args,
         const Options &options) {
  int64_t grid = grid3[0];
  if (grid3[1] < 1 || grid3[2] < 1)
    throw UserError("interpreting '" + fn.name() + "': the grid must have at least one program "
                    "along y and z");
  const ir::Block &body = fn.body();
  if (args.size() != body.arguments().size())
    throw UserError("interpreting '" + fn.name() + "': expected " +
                    std::to_string(body.arguments().size()) + " arguments but got " +
                    std::to_string(args.size()));
  if (grid < 1)
    throw UserError("interpreting '" + fn.name() + "': the grid must have at least one program");
  int64_t clusterSize = fn.intAttr("cluster_size").value_or(1);
  if (clusterSize < 1)
    throw UserError("interpreting '" + fn.name() + "': cluster size " +
                    std::to_string(clusterSize) + " is not positive");
  if (grid % clusterSize != 0)
    throw UserError("interpreting '" + fn.name() + "': the grid of " + std::to_string(grid) +
                    " programs is not a multiple of the cluster size " +
                    std::to_string(clusterSize));
  // PTX runs on the GPU only; said before any program runs, whichever branch holds the asm.
  if (const ir::Op *asmOp = ir::findFirst(fn.body(), ir::OpKind::InlineAsm))
    userError("interpreting '" + fn.name() + "': inline_asm_elementwise runs PTX, which only a "
              "GPU can run; the interpreter cannot run this kernel (run it on a GPU, or keep "
              "the asm behind a C++ switch the interpreted specialization leaves off)",
              asmOp->loc());
  if (ir::findFirst(fn.body(), ir::OpKind::GridSync)) {
    if (clusterSize > 1 || grid3[1] != 1 || grid3[2] != 1)
      throw UserError("interpreting '" + fn.name() +
                      "': the interpreter runs grid_sync in 1-D "
                      "grids without clusters");
    runWholeGrid(fn, grid, args, options);
  } else if (clusterSize > 1) {
    if (grid3[1] != 1 || grid3[2] != 1)
      throw UserError("interpreting '" + fn.name() + "': thread-block clusters take a 1-D grid");
    runClusters(fn, grid, clusterSize, args, options);
  } else {
    Machine m(fn, grid, options);
    m.gridY = grid3[1];
    m.gridZ = grid3[2];
    bindArguments(m, args);
    Driver d(m);
    for (m.pidZ = 0; m.pidZ < grid3[2]; ++m.pidZ)
      for (m.pidY = 0; m.pidY < grid3[1]; ++m.pidY)
        for (m.pid = 0; m.pid < grid; ++m.pid)
          d.runProgram();
  }
  if (options.printTo)
    std::fflush(options.printTo);
}

int64_t defaultGrid(int64_t rows) {
  int64_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::max<int64_t>(1, std::min(rows, 4 * cpus));
}

} // namespace interpreter
} // namespace tritium
