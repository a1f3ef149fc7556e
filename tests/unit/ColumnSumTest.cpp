// The tiles column_sum adds per step: all of up to 512 partial sums in one step (each step is a
// round trip to memory), at most 4096 values per program, strips of at least 8 columns (one
// 32-byte sector of fp32 per part), and the strips of short rows still spread over many programs.
#include "kernels/ColumnSum.h"

#include <gtest/gtest.h>

#include <bit>

using namespace tritium::kernels;

TEST(ColumnSumTile, UpTo512PartsTakeOneStep) {
  for (int64_t arrays : {1, 2})
    for (int64_t cols : {1, 7, 512, 1000, 2048, 8192, 16384, 65536, 262144})
      for (int64_t parts : {1, 2, 3, 100, 128, 132, 133, 256, 264, 500, 512}) {
        ColumnSumTile t = columnSumTile(parts, cols, arrays);
        SCOPED_TRACE("parts " + std::to_string(parts) + " cols " + std::to_string(cols) +
                     " arrays " + std::to_string(arrays));
        EXPECT_GE(t.parts, parts);
        EXPECT_LE(t.parts * t.cols, 4096);
        EXPECT_GE(t.cols, 8);
        EXPECT_TRUE(std::has_single_bit(uint64_t(t.parts)));
        EXPECT_TRUE(std::has_single_bit(uint64_t(t.cols)));
      }
}

TEST(ColumnSumTile, MorePartsTakeTilesOfAtMost4096Values) {
  for (int64_t parts : {513, 1000, 1056, 4096}) {
    ColumnSumTile t = columnSumTile(parts, 8192, 1);
    EXPECT_LE(t.parts * t.cols, 4096) << parts;
    EXPECT_GE(t.parts, 128) << parts; // a few steps, not hundreds
  }
}

// The case that took two steps before: 132 parts (one per SM of an H200) of 8192 fp32 columns.
TEST(ColumnSumTile, OnePartPerSmOfAnH200) {
  ColumnSumTile t = columnSumTile(132, 8192, 1);
  EXPECT_EQ(t.parts, 256);
  EXPECT_EQ(t.cols, 16);
}

// Short rows keep narrow strips, so that 512 columns of LayerNorm's two arrays still spread
// over 64 programs per array.
TEST(ColumnSumTile, ShortRowsSpreadOverManyPrograms) {
  ColumnSumTile t = columnSumTile(512, 512, 2);
  EXPECT_EQ(t.cols, 8);
  EXPECT_EQ(512 / t.cols, 64);
}
