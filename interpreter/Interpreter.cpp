// The interpreter's driver: the interpret-mode switch, the program loop over the grid, kernel
// arguments, and structured control flow (for/yield). Every other op goes to the evaluator.
#include "interpreter/Evaluator.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
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
    if (op.body())
      for (auto &arg : op.body()->arguments())
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
    if (step <= 0 && lb < ub)
      userError("loop step is " + std::to_string(step) + " in program " + std::to_string(m_.pid) +
                    ": it must be positive, or the loop never ends",
                op.loc());
    const ir::Block &body = *op.body();
    std::vector<Tensor> carried;
    for (unsigned i = 3; i < op.numOperands(); ++i)
      carried.push_back(m_.at(op.operand(i)));
    for (int64_t iv = lb; iv < ub; iv = wrapTo(k, iv + step)) {
      m_.at(body.argument(0)).i.assign(1, iv);
      for (size_t c = 0; c < carried.size(); ++c)
        m_.at(body.argument(unsigned(c + 1))) = carried[c];
      const ir::Op *yield = execBlock(body);
      for (size_t c = 0; c < carried.size(); ++c)
        carried[c] = m_.at(yield->operand(unsigned(c)));
      if (iv + step > std::numeric_limits<int32_t>::max() && k == ir::ScalarKind::I32)
        break; // the i32 induction variable would wrap: the GPU's loop ends there too
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      m_.at(op.result(i)) = carried[i];
  }

  Machine &m_;
};

} // namespace

void run(const ir::Function &fn, int64_t grid, const std::vector<Arg> &args,
         const Options &options) {
  const ir::Block &body = fn.body();
  if (args.size() != body.arguments().size())
    throw UserError("interpreting '" + fn.name() + "': expected " +
                    std::to_string(body.arguments().size()) + " arguments but got " +
                    std::to_string(args.size()));
  if (grid < 1)
    throw UserError("interpreting '" + fn.name() + "': the grid must have at least one program");
  Machine m(fn, grid, options);
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Value *arg = body.argument(unsigned(i));
    Tensor &t = m.at(arg);
    if (arg->type().isFloat())
      t.f.assign(1, roundTo(arg->type().kind(), args[i].f));
    else
      t.i.assign(1, arg->type().isPtr() ? args[i].i : wrapTo(arg->type().kind(), args[i].i));
  }
  Driver d(m);
  for (m.pid = 0; m.pid < grid; ++m.pid)
    d.runProgram();
  if (options.printTo)
    std::fflush(options.printTo);
}

int64_t defaultGrid(int64_t rows) {
  int64_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::max<int64_t>(1, std::min(rows, 4 * cpus));
}

} // namespace interpreter
} // namespace tritium
