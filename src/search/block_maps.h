// Candidate maps of a block graph (Mirage §2): per input, every imap (grid dim -> data dim or
// phi) and fmap (data dim or phi) that divides its shape; per output, every omap.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace mugraph::search {

struct IterChoice {
  ir::DimMap imap;
  int fmap = ir::kReplica;
  ir::TensorType tile;  // one iteration's tile
};

// Every (imap, fmap) of an input of type `t` for `grid` and range `r`: distinct grid dims of
// size > 1 split distinct data dims they divide; the fmap dim must divide by r (r = 1: phi).
std::vector<IterChoice> iterator_choices(const ir::TensorType& t, const ir::Dim3& grid, int64_t r);

// Every omap of an output tile of type `t`: grid dims of size > 1 to distinct data dims.
std::vector<ir::DimMap> omap_choices(const ir::TensorType& t, const ir::Dim3& grid);

// The device tensor a saver writes from `tile` with `omap`.
ir::TensorType saved_type(const ir::TensorType& tile, const ir::DimMap& omap, const ir::Dim3& grid);

}  // namespace mugraph::search
