#include "runtime/TuningRecord.h"

#include "runtime/Cache.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace tritium::rt {

namespace {

llvm::json::Object toJson(const NamedIntegers &fields) {
  llvm::json::Object o;
  for (const auto &[name, value] : fields)
    o[name] = value;
  return o;
}

// The object's fields as integers, or nullopt with `why` set.
std::optional<NamedIntegers> integers(const llvm::json::Object &o, std::string *why) {
  NamedIntegers out;
  for (const auto &[name, value] : o) {
    std::optional<int64_t> v = value.getAsInteger();
    if (!v) {
      *why = "field '" + name.str() + "' is not an integer";
      return std::nullopt;
    }
    out.emplace_back(name.str(), *v);
  }
  return out;
}

} // namespace

std::optional<TuningRecord> readTuningRecord(const std::filesystem::path &path, std::string *why) {
  why->clear();
  std::optional<std::string> text = readFile(path);
  if (!text)
    return std::nullopt;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*text);
  if (!parsed) {
    *why = "not JSON: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o) {
    *why = "not a JSON object";
    return std::nullopt;
  }
  TuningRecord r;
  r.kernel = o->getString("kernel").value_or("").str();
  r.bucket = o->getString("bucket").value_or("").str();
  const llvm::json::Object *winner = o->getObject("winner");
  if (!winner) {
    *why = "no winner";
    return std::nullopt;
  }
  std::optional<NamedIntegers> w = integers(*winner, why);
  if (!w) {
    *why = "winner " + *why;
    return std::nullopt;
  }
  r.winner = std::move(*w);
  if (const llvm::json::Array *all = o->getArray("candidates"))
    for (const llvm::json::Value &c : *all) {
      const llvm::json::Object *co = c.getAsObject();
      const llvm::json::Object *plan = co ? co->getObject("plan") : nullptr;
      std::string ignored;
      std::optional<NamedIntegers> fields = plan ? integers(*plan, &ignored) : std::nullopt;
      if (fields)
        r.candidates.emplace_back(std::move(*fields), co->getNumber("time"));
    }
  return r;
}

std::string writeTuningRecord(const std::filesystem::path &path, const TuningRecord &r) {
  llvm::json::Array timed;
  for (const auto &[plan, time] : r.candidates) {
    llvm::json::Object c{{"plan", toJson(plan)}};
    if (time)
      c["time"] = *time;
    else
      c["rejected"] = true;
    timed.push_back(std::move(c));
  }
  llvm::json::Object record{{"kernel", r.kernel},
                            {"bucket", r.bucket},
                            {"winner", toJson(r.winner)},
                            {"candidates", std::move(timed)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(record))) << "\n";
  os.flush();
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return "cannot create " + path.parent_path().string() + ": " + ec.message();
  return writeFileAtomically(path.parent_path(), path.filename().string(), text);
}

} // namespace tritium::rt
