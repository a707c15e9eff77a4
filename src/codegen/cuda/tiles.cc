#include "codegen/cuda/tiles.h"

#include <algorithm>

namespace mugraph::codegen::cuda {

int block_threads(const ir::BlockGraph& bg) {
  int64_t largest = 0;
  for (const ir::Tensor& t : bg.tensors) largest = std::max(largest, t.type.shape.numel());
  return largest >= 4096 ? 256 : 128;
}

int64_t extent(const ir::Shape& s, const ir::Layout& l) {
  int64_t e = 1;
  for (int d = 0; d < s.rank; ++d) e += (s[d] - 1) * l.strides[static_cast<size_t>(d)];
  return e;
}

ir::Layout pad_rows(const ir::Shape& s, const ir::Layout& l, int64_t elem_bytes) {
  std::vector<int> order;
  for (int d = 0; d < s.rank; ++d)
    if (s[d] > 1) order.push_back(d);
  if (order.size() < 2) return l;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return l.strides[static_cast<size_t>(a)] < l.strides[static_cast<size_t>(b)];
  });
  const auto inner = static_cast<size_t>(order[0]);
  const int64_t row_bytes = s[order[0]] * elem_bytes;
  if (l.strides[inner] != 1 || row_bytes % 16 != 0 || (row_bytes / 16) % 2 != 0) return l;
  ir::Layout p = l;
  p.strides[static_cast<size_t>(order[1])] = s[order[0]] + 16 / elem_bytes;
  for (size_t k = 2; k < order.size(); ++k)
    p.strides[static_cast<size_t>(order[k])] =
        p.strides[static_cast<size_t>(order[k - 1])] * s[order[k - 1]];
  return p;
}

std::optional<Rows> rows_of(const ir::Shape& tile, const Operand& a, const Operand& b,
                            int64_t vec, bool both_aligned) {
  const int rank = tile.rank;
  Rows r;
  for (int k = 0; k < rank; ++k)
    if (a.strides[static_cast<size_t>(k)] == 1 && tile[k] > 1) r.inner = k;
  if (r.inner < 0 || b.strides[static_cast<size_t>(r.inner)] != 1 || tile[r.inner] % vec != 0)
    return std::nullopt;
  for (int k = 0; k < rank; ++k)
    if (k != r.inner && tile[k] > 1 &&
        (a.strides[static_cast<size_t>(k)] % vec != 0 ||
         (both_aligned && b.strides[static_cast<size_t>(k)] % vec != 0)))
      return std::nullopt;
  r.idx.assign(static_cast<size_t>(rank), "0");
  int outer = -1;
  for (int k = 0; k < rank && outer < 0; ++k)
    if (k != r.inner && tile[k] > 1) outer = k;
  for (int k = rank - 1; k >= 0; --k) {
    if (k == r.inner || tile[k] == 1) continue;
    std::string e = r.rows == 1 ? "r" : "(r / " + std::to_string(r.rows) + ")";
    if (k != outer) e = "(" + e + " % " + std::to_string(tile[k]) + ")";
    r.idx[static_cast<size_t>(k)] = e;
    r.rows *= tile[k];
  }
  return r;
}

int wmma_fragments_per_warp(int tm, int tn, int warps) {
  constexpr int kGroups[3][2] = {{2, 4}, {2, 2}, {1, 2}};
  int rm = 1, rn = 1;
  for (const auto& g : kGroups)
    if (tm % g[0] == 0 && tn % g[1] == 0 && (tm / g[0]) * (tn / g[1]) >= warps) {
      rm = g[0];
      rn = g[1];
      break;
    }
  const int groups = (tm / rm) * (tn / rn);
  return (groups + warps - 1) / warps * rm * rn;
}

}  // namespace mugraph::codegen::cuda
