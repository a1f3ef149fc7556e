// The interpreter's floats in doubles (interpreter/FloatBits.h): every NaN of a 16- or 32-bit
// kind, signalling ones and payloads included, comes back bit for bit; other values round to
// nearest even, as the GPU's conversions do.
#include "interpreter/FloatBits.h"

#include <gtest/gtest.h>

using namespace tritium;
using interpreter::floatFromBits;
using interpreter::floatToBits;
using ir::ScalarKind;

TEST(FloatBitsTest, NaNsKeepEveryBit) {
  struct Case {
    ScalarKind kind;
    uint64_t bits;
  };
  for (Case c : {Case{ScalarKind::F32, 0x7f800001u}, Case{ScalarKind::F32, 0xff800001u},
                 Case{ScalarKind::F32, 0x7fc12345u}, Case{ScalarKind::F32, 0x7fbfffffu},
                 Case{ScalarKind::F16, 0x7c01u}, Case{ScalarKind::F16, 0xfd55u},
                 Case{ScalarKind::F16, 0x7e00u}, Case{ScalarKind::BF16, 0x7f81u},
                 Case{ScalarKind::BF16, 0xffc1u}}) {
    double x = floatFromBits(c.kind, c.bits);
    EXPECT_TRUE(std::isnan(x)) << std::hex << c.bits;
    EXPECT_EQ(floatToBits(c.kind, x), c.bits) << std::hex << c.bits;
  }
}

TEST(FloatBitsTest, OtherValuesRoundAsTheHardwareDoes) {
  EXPECT_EQ(floatToBits(ScalarKind::F32, 1.0), 0x3f800000u);
  EXPECT_EQ(floatToBits(ScalarKind::F16, -2.0), 0xc000u);
  EXPECT_EQ(floatToBits(ScalarKind::BF16, 1.0 + 1.0 / 256), 0x3f80u); // a tie: to even
  EXPECT_EQ(floatToBits(ScalarKind::BF16, 1.0 + 3.0 / 256), 0x3f82u); // a tie: to even (up)
  EXPECT_EQ(floatFromBits(ScalarKind::BF16, 0x3f82u), 1.015625);
  EXPECT_EQ(floatFromBits(ScalarKind::F16, 0x3c00u), 1.0);
  EXPECT_TRUE(std::isinf(floatFromBits(ScalarKind::F32, 0x7f800000u)));
  // A double NaN whose payload lies below f16's mantissa becomes the quiet NaN, not infinity.
  EXPECT_EQ(floatToBits(ScalarKind::F16, std::bit_cast<double>(uint64_t(0x7ff0000000000001))),
            0x7e00u);
}
