// Assigned-variable detection for traced regions (Carry.h).
#include "frontend/Carry.h"

#include "compiler/support/Error.h"

#include <algorithm>

namespace tritium::dsl {

std::vector<LiveValues::Change> assignedVariables(const std::vector<LiveValues::Entry> &before,
                                                  const std::vector<Value *> &skip) {
  std::vector<LiveValues::Change> out;
  for (const LiveValues::Change &c : LiveValues::compare(before))
    if (c.after != c.before && std::find(skip.begin(), skip.end(), c.var) == skip.end())
      out.push_back(c);
  return out;
}

void checkUnambiguous(const std::vector<LiveValues::Change> &carried,
                      const std::vector<LiveValues::Entry> &before,
                      const std::vector<ir::Block *> &regions, const char *what,
                      const SourceLoc &loc) {
  for (const auto &c : carried) {
    bool sharedWithAnother = false;
    for (const auto &e : LiveValues::compare(before))
      sharedWithAnother = sharedWithAnother || (e.before == c.before && e.var != c.var);
    if (!sharedWithAnother)
      continue;
    bool used = false;
    for (ir::Block *r : regions)
      ir::walk(*r, [&](ir::Op &op) {
        for (ir::Value *v : op.operands())
          used = used || v == c.before;
      });
    if (used)
      userError(std::string("a variable assigned in this ") + what +
                    " held the same value as another variable before it, and the body reads "
                    "that value: tritium cannot tell which of the two it reads; give the other "
                    "variable its own value, or name the loop's variables with carry(...)",
                loc);
  }
}

ir::Value *yieldedValue(ir::Value *after, const std::vector<CarriedArgument> &carried,
                        const std::vector<LiveValues::Entry> &before, const char *what,
                        const SourceLoc &loc) {
  ir::Value *argument = nullptr;
  int carriers = 0; // carried variables that held `after` before the region
  for (const CarriedArgument &c : carried)
    if (c.before == after) {
      argument = c.argument;
      ++carriers;
    }
  if (carriers == 0)
    return after;
  int holders = 0; // every variable that held it, carried or not
  for (const auto &e : LiveValues::compare(before))
    holders += e.before == after;
  if (carriers > 1 || holders > 1)
    userError(std::string("a variable assigned in this ") + what +
                  " takes the value another variable held before it, and two variables held "
                  "that value: tritium cannot tell which one's current value it takes; give "
                  "them values of their own, or name the loop's variables with carry(...)",
              loc);
  return argument;
}

} // namespace tritium::dsl
