// Value types of the IR: element types, shapes (rank <= 4), layouts and exact rational constants.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "support/status.h"

namespace mugraph::ir {

// Element types a tensor may be stored in. One row per type: name, bytes per element.
#define MUGRAPH_DTYPES(X) \
  X(kF16, "f16", 2)       \
  X(kBF16, "bf16", 2)     \
  X(kF32, "f32", 4)

enum class DType {
#define MG_DTYPE_ENUM(e, name, bytes) e,
  MUGRAPH_DTYPES(MG_DTYPE_ENUM)
#undef MG_DTYPE_ENUM
};

std::string_view dtype_name(DType t);
int dtype_bytes(DType t);
std::optional<DType> parse_dtype(std::string_view s);

inline constexpr int kMaxRank = 4;

// A tensor shape of rank 1..4 (rank 0 is used only for "not yet set").
struct Shape {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims[static_cast<size_t>(i)]; }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  std::string to_string() const;  // "[16, 4096]"
};

// Physical layout of a device tensor: the stride (in elements) of each dimension. The layout is a
// storage attribute only: every operator is defined on logical indices, so two tensors with equal
// values and different layouts are equal. A valid layout is dense and non-overlapping, i.e. a
// permutation of the row-major strides of some dimension order.
struct Layout {
  std::array<int64_t, kMaxRank> strides{};
  bool operator==(const Layout& o) const { return strides == o.strides; }
};

// Largest tensor mugraph accepts: 2^40 elements (2 TiB in f16, beyond any device memory), so
// every size computation, including times a grid or a loop range, stays far from int64 overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// Ok iff every dim is >= 1 and the element count is at most kMaxElements.
Status check_shape(const Shape& s);
// a * b, or an error if the product exceeds kMaxElements (a, b >= 0).
Result<int64_t> checked_mul(int64_t a, int64_t b);

Layout row_major(const Shape& s);
// Ok iff `l` is a dense, non-overlapping layout of `s`.
Status check_layout(const Shape& s, const Layout& l);

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  Layout layout;  // row_major(shape) unless given

  static TensorType make(DType dt, Shape s) { return {dt, s, row_major(s)}; }
  bool is_row_major() const { return layout == row_major(shape); }
  int64_t bytes() const { return shape.numel() * dtype_bytes(dtype); }
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && shape == o.shape && layout == o.layout;
  }
  std::string to_string() const;  // "f16[16, 4096]" (+ " strides=[...]" when not row-major)
};

// An exact rational constant num/den (den > 0), used by `scale`. Exact so that the finite-field
// verifier can interpret it as num * den^-1 without rounding.
struct Rational {
  int64_t num = 1;
  int64_t den = 1;
  double to_double() const { return static_cast<double>(num) / static_cast<double>(den); }
  bool operator==(const Rational& o) const { return num == o.num && den == o.den; }
  std::string to_string() const;  // "1/4096", or "3" when den == 1
};

// Grid dimensions of a block graph (x, y, z), each >= 1.
struct Dim3 {
  std::array<int64_t, 3> d{1, 1, 1};
  int64_t operator[](int i) const { return d[static_cast<size_t>(i)]; }
  int64_t count() const { return d[0] * d[1] * d[2]; }
  bool operator==(const Dim3& o) const { return d == o.d; }
};

inline constexpr int kReplica = -1;  // the replica dimension phi of imap/omap/fmap
inline constexpr const char* kGridDimNames[3] = {"x", "y", "z"};

// A data dim of a map, or "phi" for kReplica.
inline std::string map_target_name(int d) { return d == kReplica ? "phi" : std::to_string(d); }

// imap / omap: for each grid dimension x, y, z, the data dimension it partitions, or kReplica.
struct DimMap {
  std::array<int, 3> to{kReplica, kReplica, kReplica};
  int operator[](int g) const { return to[static_cast<size_t>(g)]; }
  bool operator==(const DimMap& o) const { return to == o.to; }
  std::string to_string() const;  // "{x:1, y:phi}" listing only mapped grid dims: "{x:1}"
};

}  // namespace mugraph::ir
