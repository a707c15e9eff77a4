// A dense row-major tensor in host memory over any number type, with the tile operations the
// interpreter needs (take a chunk along a dim, write a tile at an offset).
#pragma once

#include <vector>

#include "ir/types.h"
#include "support/status.h"

namespace mugraph::verify {

template <class T>
struct HostTensor {
  ir::Shape shape;
  std::vector<T> data;

  HostTensor() = default;
  HostTensor(const ir::Shape& s, const T& fill) : shape(s), data(static_cast<size_t>(s.numel()), fill) {}
};

// Extents of a shape split around `dim`: outer (product before), n (shape[dim]), inner (after).
struct Split3 {
  int64_t outer = 1, n = 1, inner = 1;
};
inline Split3 split_at(const ir::Shape& s, int dim) {
  Split3 r;
  for (int i = 0; i < dim; ++i) r.outer *= s[i];
  r.n = s[dim];
  for (int i = dim + 1; i < s.rank; ++i) r.inner *= s[i];
  return r;
}

// Chunk `part` of `parts` equal chunks of `t` along `dim`.
template <class T>
HostTensor<T> take_chunk(const HostTensor<T>& t, int dim, int64_t part, int64_t parts) {
  MG_CHECK(dim >= 0 && dim < t.shape.rank && t.shape[dim] % parts == 0 && part < parts);
  const Split3 s = split_at(t.shape, dim);
  const int64_t len = s.n / parts;
  ir::Shape out_shape = t.shape;
  out_shape[dim] = len;
  HostTensor<T> out;
  out.shape = out_shape;
  out.data.reserve(static_cast<size_t>(out_shape.numel()));
  for (int64_t o = 0; o < s.outer; ++o) {
    const auto* src = t.data.data() + (o * s.n + part * len) * s.inner;
    out.data.insert(out.data.end(), src, src + len * s.inner);
  }
  return out;
}

// Writes `src` into `dst` with src's index 0 at `offset` (per dim).
template <class T>
void write_tile(HostTensor<T>& dst, const HostTensor<T>& src, const std::array<int64_t, 4>& offset) {
  const ir::Shape& d = dst.shape;
  const ir::Shape& s = src.shape;
  MG_CHECK(d.rank == s.rank);
  for (int i = 0; i < d.rank; ++i) MG_CHECK(offset[static_cast<size_t>(i)] + s[i] <= d[i]);
  // Copy contiguous rows of the last dim.
  const int last = s.rank - 1;
  const int64_t rows = s.numel() / s[last];
  std::array<int64_t, 4> idx{};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, dst_off = 0;
    for (int i = last - 1; i >= 0; --i) {
      idx[static_cast<size_t>(i)] = rem % s[i];
      rem /= s[i];
    }
    int64_t stride = d[last];
    dst_off = offset[static_cast<size_t>(last)];
    for (int i = last - 1; i >= 0; --i) {
      dst_off += (idx[static_cast<size_t>(i)] + offset[static_cast<size_t>(i)]) * stride;
      stride *= d[i];
    }
    std::copy(src.data.begin() + r * s[last], src.data.begin() + (r + 1) * s[last],
              dst.data.begin() + dst_off);
  }
}

}  // namespace mugraph::verify
