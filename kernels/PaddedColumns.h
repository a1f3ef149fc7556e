// A head dim that is not a power of two runs in blocks of the next power of two (a block's
// extent is one): the attention kernels (forward, backward, decode) cut the extra columns from
// their loads' and stores' masks with this (DSL, traced into each kernel).
#pragma once

#include "frontend/DSL.h"

namespace tritium::kernels {

// `rows_ok` ([rows, 1]) over the D columns `rd` (arange(0, D)), the columns from HD on cut;
// as given when D is HD.
inline dsl::Value paddedColumns(const dsl::Value &rows_ok, const dsl::Value &rd, int D, int HD) {
  using namespace dsl;
  return HD < D ? rows_ok & (rd < HD)(None, _) : rows_ok;
}

} // namespace tritium::kernels
