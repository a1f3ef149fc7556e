#include "runtime/TensorMap.h"

#include "runtime/Driver.h"

namespace tritium::rt {

std::optional<TensorMapType> tensorMapType(ir::ScalarKind k) {
#define TRITIUM_TMA_TYPE(t) TensorMapType{CU_TENSOR_MAP_DATA_TYPE_##t, "CU_TENSOR_MAP_DATA_TYPE_" #t}
  switch (k) {
  case ir::ScalarKind::F32: return TRITIUM_TMA_TYPE(FLOAT32);
  case ir::ScalarKind::F16: return TRITIUM_TMA_TYPE(FLOAT16);
  case ir::ScalarKind::BF16: return TRITIUM_TMA_TYPE(BFLOAT16);
  case ir::ScalarKind::I32: return TRITIUM_TMA_TYPE(INT32);
  case ir::ScalarKind::U32: return TRITIUM_TMA_TYPE(UINT32);
  case ir::ScalarKind::I64: return TRITIUM_TMA_TYPE(INT64);
  case ir::ScalarKind::U64: return TRITIUM_TMA_TYPE(UINT64);
  case ir::ScalarKind::I16: case ir::ScalarKind::U16: return TRITIUM_TMA_TYPE(UINT16);
  case ir::ScalarKind::I8: case ir::ScalarKind::U8: case ir::ScalarKind::F8E4M3:
  case ir::ScalarKind::F8E5M2:
    return TRITIUM_TMA_TYPE(UINT8); // the bytes move as they are
  default:
    return std::nullopt;
  }
#undef TRITIUM_TMA_TYPE
}

std::string encodeTensorMap(const ir::TensorMapRecipe &r, const std::function<int64_t(int)> &arg,
                            const std::function<std::string(int)> &argName, CUtensorMap *out) {
  std::optional<TensorMapType> type = tensorMapType(r.dtype);
  if (!type)
    return "a tensor descriptor of " + ir::dtypeName(r.dtype) + " has no TMA element type";
  auto value = [&](const ir::TensorMapTerm &t) {
    return (t.arg < 0 ? 1 : arg(t.arg)) * t.scale / t.divisor;
  };
  auto blame = [&](const ir::TensorMapTerm &t) {
    return t.arg < 0 ? std::string("a constant") : "argument '" + argName(t.arg) + "'";
  };
  int64_t base = arg(r.baseArg);
  if (base % 16 != 0)
    return "argument '" + argName(r.baseArg) + "', a tensor descriptor's base, is not 16-byte "
           "aligned, which TMA requires";
  size_t rank = r.dims.size();
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], elementStrides[5];
  for (size_t i = 0; i < rank; ++i) {
    int64_t d = value(r.dims[i]);
    if (d < 1 || d > (int64_t(1) << 32))
      return "a tensor descriptor's shape (" + blame(r.dims[i]) + ") gives " +
             std::to_string(d) + " elements along a dimension; TMA takes 1 to 2^32";
    dims[i] = cuuint64_t(d);
    box[i] = cuuint32_t(r.box[i]);
    elementStrides[i] = 1;
  }
  for (size_t i = 0; i + 1 < rank; ++i) {
    int64_t s = value(r.strides[i]);
    if (s < 16 || s % 16 != 0 || s >= (int64_t(1) << 40))
      return "a tensor descriptor's stride (" + blame(r.strides[i]) + ") is " +
             std::to_string(s) + " bytes; TMA takes multiples of 16 below 2^40";
    strides[i] = cuuint64_t(s);
  }
  CUtensorMapSwizzle swizzle = r.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                               : r.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : r.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                 : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUresult res = Driver::get().cuTensorMapEncodeTiled(
      out, type->type, cuuint32_t(rank), reinterpret_cast<void *>(base), dims, strides, box,
      elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (res != CUDA_SUCCESS)
    return "cuTensorMapEncodeTiled refused the tensor descriptor '" + r.str() + "': " +
           describe(res);
  return "";
}

} // namespace tritium::rt
