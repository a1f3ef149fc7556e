// The autotuner's record of one (kernel, GPU, shape bucket) on disk: the winning plan and every
// candidate's time, as JSON. Read and written here, inside libtritium, so that the kernel
// library (kernels/Autotuner) needs no JSON library of its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tritium::rt {

// A plan as named integers, in the order given.
using NamedIntegers = std::vector<std::pair<std::string, int64_t>>;

struct TuningRecord {
  std::string kernel, bucket;
  NamedIntegers winner;
  // Each candidate's plan and its time; nullopt for a candidate that was rejected.
  std::vector<std::pair<NamedIntegers, std::optional<double>>> candidates;
};

// The record in `path`, or nullopt: when the file is absent (`why` left empty), or when it is
// not a record (`why` says what is wrong: not JSON, no winner, a field that is not an integer).
std::optional<TuningRecord> readTuningRecord(const std::filesystem::path &path, std::string *why);

// Writes the record through a temporary file and a rename (creating its folder). Returns "" or
// what failed.
std::string writeTuningRecord(const std::filesystem::path &path, const TuningRecord &record);

} // namespace tritium::rt
