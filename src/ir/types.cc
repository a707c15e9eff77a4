#include "ir/types.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace mugraph::ir {

std::string_view dtype_name(DType t) {
  switch (t) {
#define MG_DTYPE_NAME(e, name, bytes) \
  case DType::e:                      \
    return name;
    MUGRAPH_DTYPES(MG_DTYPE_NAME)
#undef MG_DTYPE_NAME
  }
  MG_CHECK(false, "bad dtype");
}

int dtype_bytes(DType t) {
  switch (t) {
#define MG_DTYPE_BYTES(e, name, bytes) \
  case DType::e:                       \
    return bytes;
    MUGRAPH_DTYPES(MG_DTYPE_BYTES)
#undef MG_DTYPE_BYTES
  }
  MG_CHECK(false, "bad dtype");
}

std::optional<DType> parse_dtype(std::string_view s) {
#define MG_DTYPE_PARSE(e, name, bytes) \
  if (s == name) return DType::e;
  MUGRAPH_DTYPES(MG_DTYPE_PARSE)
#undef MG_DTYPE_PARSE
  return std::nullopt;
}

Shape::Shape(std::initializer_list<int64_t> d) {
  MG_CHECK(d.size() <= kMaxRank, "rank " << d.size());
  rank = static_cast<int>(d.size());
  std::copy(d.begin(), d.end(), dims.begin());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  return rank == o.rank && std::equal(dims.begin(), dims.begin() + rank, o.dims.begin());
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < rank; ++i) os << (i ? ", " : "") << (*this)[i];
  os << "]";
  return os.str();
}

Result<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxElements)
    return error(a, " x ", b, " exceeds the size limit of ", kMaxElements, " elements");
  return r;
}

Status check_shape(const Shape& s) {
  int64_t n = 1;
  for (int i = 0; i < s.rank; ++i) {
    if (s[i] < 1) return error("shape ", s.to_string(), " has dim ", i, " < 1");
    int64_t m = 0;  // as checked_mul, without a Result per dim (the search calls this per tried op)
    if (__builtin_mul_overflow(n, s[i], &m) || m > kMaxElements)
      return error("shape ", s.to_string(), " has more than ", kMaxElements, " elements");
    n = m;
  }
  return ok_status();
}

Layout row_major(const Shape& s) {
  Layout l;
  int64_t stride = 1;
  for (int i = s.rank - 1; i >= 0; --i) {
    l.strides[static_cast<size_t>(i)] = stride;
    // Wrapping multiply: the parsers build a type before check_shape rejects huge or negative
    // dims (f16[128, -9223372036854775808] overflowed here, found by bench/parse_fuzz under
    // UBSan); the strides of such a shape are never used.
    stride = static_cast<int64_t>(static_cast<uint64_t>(stride) * static_cast<uint64_t>(s[i]));
  }
  return l;
}

Status check_layout(const Shape& s, const Layout& l) {
  // Dense and non-overlapping: ordering the dims by stride, each stride equals the product of
  // the extents of the dims inside it (size-1 dims may sit anywhere).
  std::array<int, kMaxRank> order{};
  std::iota(order.begin(), order.begin() + s.rank, 0);
  std::stable_sort(order.begin(), order.begin() + s.rank,
                   [&](int a, int b) { return l.strides[a] < l.strides[b]; });
  int64_t expect = 1;
  for (int k = 0; k < s.rank; ++k) {
    const int d = order[static_cast<size_t>(k)];
    if (s[d] == 1) continue;
    if (l.strides[static_cast<size_t>(d)] != expect) {
      std::ostringstream os;
      os << "strides [";
      for (int i = 0; i < s.rank; ++i) os << (i ? ", " : "") << l.strides[static_cast<size_t>(i)];
      os << "] are not a dense layout of shape " << s.to_string();
      return Status::error(os.str());
    }
    expect *= s[d];
  }
  return ok_status();
}

std::string TensorType::to_string() const {
  std::string out = std::string(dtype_name(dtype)) + shape.to_string();
  if (!is_row_major()) {
    out += " strides=[";
    for (int i = 0; i < shape.rank; ++i)
      out += (i ? ", " : "") + std::to_string(layout.strides[static_cast<size_t>(i)]);
    out += "]";
  }
  return out;
}

std::string Rational::to_string() const {
  return den == 1 ? std::to_string(num) : std::to_string(num) + "/" + std::to_string(den);
}

std::string DimMap::to_string() const {
  std::string out = "{";
  bool first = true;
  for (int g = 0; g < 3; ++g) {
    if (to[static_cast<size_t>(g)] == kReplica) continue;
    out += (first ? "" : ", ") + std::string(kGridDimNames[g]) + ":" +
           std::to_string(to[static_cast<size_t>(g)]);
    first = false;
  }
  return out + "}";
}

}  // namespace mugraph::ir
