#include "search/block_maps.h"

namespace mugraph::search {

// Every (imap, fmap) of an input of type `t` for `grid` and range `r`.
std::vector<IterChoice> iterator_choices(const ir::TensorType& t, const ir::Dim3& grid, int64_t r) {
  std::vector<IterChoice> out;
  std::vector<ir::DimMap> imaps{ir::DimMap{}};
  for (int g = 0; g < 3; ++g) {
    if (grid[g] == 1) continue;
    std::vector<ir::DimMap> next;
    for (const ir::DimMap& m : imaps) {
      next.push_back(m);  // phi
      for (int d = 0; d < t.shape.rank; ++d) {
        bool used = false;
        for (int h = 0; h < g; ++h) used |= m[h] == d;
        if (used || t.shape[d] % grid[g] != 0) continue;
        ir::DimMap m2 = m;
        m2.to[static_cast<size_t>(g)] = d;
        next.push_back(m2);
      }
    }
    imaps = std::move(next);
  }
  for (const ir::DimMap& m : imaps) {
    ir::Shape block = t.shape;
    for (int g = 0; g < 3; ++g)
      if (m[g] != ir::kReplica) block[m[g]] /= grid[g];
    out.push_back({m, ir::kReplica, ir::TensorType::make(t.dtype, block)});
    if (r == 1) continue;
    for (int d = 0; d < block.rank; ++d) {
      if (block[d] % r != 0) continue;
      ir::Shape tile = block;
      tile[d] /= r;
      out.push_back({m, d, ir::TensorType::make(t.dtype, tile)});
    }
  }
  return out;
}

// Every omap of an output tile of type `t`: grid dims of size > 1 to distinct data dims.
std::vector<ir::DimMap> omap_choices(const ir::TensorType& t, const ir::Dim3& grid) {
  std::vector<ir::DimMap> maps{ir::DimMap{}};
  for (int g = 0; g < 3; ++g) {
    if (grid[g] == 1) continue;
    std::vector<ir::DimMap> next;
    for (const ir::DimMap& m : maps)
      for (int d = 0; d < t.shape.rank; ++d) {
        bool used = false;
        for (int h = 0; h < g; ++h) used |= m[h] == d;
        if (used) continue;
        ir::DimMap m2 = m;
        m2.to[static_cast<size_t>(g)] = d;
        next.push_back(m2);
      }
    maps = std::move(next);
  }
  return maps;
}

ir::TensorType saved_type(const ir::TensorType& tile, const ir::DimMap& omap, const ir::Dim3& grid) {
  ir::Shape s = tile.shape;
  for (int g = 0; g < 3; ++g)
    if (omap[g] != ir::kReplica) s[omap[g]] *= grid[g];
  return ir::TensorType::make(tile.dtype, s);
}

}  // namespace mugraph::search
