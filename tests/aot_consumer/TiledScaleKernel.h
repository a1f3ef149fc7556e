// The AOT consumer's descriptor kernel, shared with the unit tests of the AOT launchers
// (tests/unit/AotTest.cpp): out = 2 x in over a rows x cols fp32 tensor; program p walks the
// rows of columns [p x BC, (p + 1) x BC) in BR-row tiles. On sm_90a its tiles are a TMA copy per
// ring stage and a TMA store, so its launchers encode two CUtensorMaps; TMA clips the last
// tiles at the tensor's edges.
#pragma once
#include "frontend/Tritium.h"

namespace tritium::aot_consumer {

inline void tiled_scale(dsl::Ptr out, dsl::Ptr in, dsl::Int rows, dsl::Int cols, int BR, int BC) {
  using namespace tritium::dsl;
  auto src = make_tensor_descriptor(in, {rows, cols}, {cols, 1}, {BR, BC});
  auto dst = make_tensor_descriptor(out, {rows, cols}, {cols, 1}, {BR, BC});
  for (auto r : range(0, rows, BR, 3))
    dst.store({r, program_id(0) * BC}, src.load({r, program_id(0) * BC}) * 2.0);
}

} // namespace tritium::aot_consumer
