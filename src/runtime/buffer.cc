#include "runtime/buffer.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace mugraph::runtime {
namespace {

// Storage offset of the logical row-major element `flat`.
int64_t offset_of(const ir::TensorType& t, int64_t flat) {
  int64_t off = 0;
  for (int d = t.shape.rank - 1; d >= 0; --d) {
    off += (flat % t.shape[d]) * t.layout.strides[static_cast<size_t>(d)];
    flat /= t.shape[d];
  }
  return off;
}

void put(char* base, ir::DType dt, int64_t i, float x) {
  switch (dt) {
    case ir::DType::kF32: reinterpret_cast<float*>(base)[i] = x; return;
    case ir::DType::kF16: reinterpret_cast<_Float16*>(base)[i] = static_cast<_Float16>(x); return;
    case ir::DType::kBF16: {
      uint32_t b = std::bit_cast<uint32_t>(x);
      b = std::isnan(x) ? (b >> 16) | 0x40u : (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
      reinterpret_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(b);
      return;
    }
  }
}

float get(const char* base, ir::DType dt, int64_t i) {
  switch (dt) {
    case ir::DType::kF32: return reinterpret_cast<const float*>(base)[i];
    case ir::DType::kF16: return static_cast<float>(reinterpret_cast<const _Float16*>(base)[i]);
    case ir::DType::kBF16:
      return std::bit_cast<float>(static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(base)[i])
                                  << 16);
  }
  return 0;
}

}  // namespace

Buffer::Buffer(const ir::TensorType& t) : type_(t), data_(nullptr, std::free) {
  int64_t max_off = 0;
  for (int d = 0; d < t.shape.rank; ++d)
    max_off += (t.shape[d] - 1) * t.layout.strides[static_cast<size_t>(d)];
  elements_ = max_off + 1;
  const int64_t bytes = (elements_ * ir::dtype_bytes(t.dtype) + 63) / 64 * 64;
  data_.reset(static_cast<char*>(std::aligned_alloc(64, static_cast<size_t>(bytes))));
  MG_CHECK(data_ != nullptr, "cannot allocate " << bytes << " bytes for a " << t.to_string());
}

// Row-major storage needs no index arithmetic per element (a weight matrix has 10^7-10^8 of
// them: the division per dimension took most of a second per buffer).
void Buffer::fill(const std::vector<float>& values) {
  MG_CHECK(static_cast<int64_t>(values.size()) == type_.shape.numel(), "fill: wrong count");
  const bool dense = type_.is_row_major();
  for (int64_t i = 0; i < type_.shape.numel(); ++i)
    put(data_.get(), type_.dtype, dense ? i : offset_of(type_, i), values[static_cast<size_t>(i)]);
}

std::vector<float> Buffer::values() const {
  std::vector<float> v(static_cast<size_t>(type_.shape.numel()));
  const bool dense = type_.is_row_major();
  for (int64_t i = 0; i < type_.shape.numel(); ++i)
    v[static_cast<size_t>(i)] = get(data_.get(), type_.dtype, dense ? i : offset_of(type_, i));
  return v;
}

void Buffer::poison() {
  for (int64_t i = 0; i < elements_; ++i)
    put(data_.get(), type_.dtype, i, std::numeric_limits<float>::quiet_NaN());
}

}  // namespace mugraph::runtime
