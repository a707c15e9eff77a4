// MCFuser's search space for a two-matmul chain (seed 002, §III): tiling expressions over the
// chain's cross-tile loops, the DAG analysis that hoists memory accesses out of loops of extent
// 1, and pruning rules 1-4. The chain C = A B (loops m, n, k), E = C D (loops m, n, h) is the
// one opt/tile_chain.h lowers.
//
// Expressions. Deep: the 24 orders of the four loops, perfectly nested ("mhnk": m outermost).
// Flat: "mn(k,h)" and "nm(k,h)": inside m and n, a k loop computing the C tile, then an h loop
// using it.
//
// Rule 1 (dedup): E's spatial loops m and h are bound to blockIdx where they can be moved
// outward (every loop of a deep expression can; in a flat one, only m: h runs after k inside
// n). What a block runs is the sub-expression of the rest: "nk" or "kn" for deep expressions,
// "n(k,h)" for flat ones. Expressions with one sub-expression are one candidate. (The paper
// reports 26 -> 5 -> 3 for rules 1 and 2 without spelling out its count; this one gives
// 26 -> 3 -> 2.)
// Rule 2: a sub-expression whose reduction loop k encloses n ("kn") must keep a partial C tile
// for every n tile (N / tn of them) in shared memory: pruned.
// Rule 3 (padding): a tile that does not divide its dim pads the last tile; refused when the
// dim is a power of 2, else allowed while the padding is under 5% of the dim.
// Rule 4 (shared memory): eq. (1), the sum over the tiles a block holds of their sizes (A tm x
// tk, B tk x tn, C tm x tn (tm x N for "kn"), D tn x th, E tm x th (tm x H for "n(k,h)")),
// in bytes of the chain's element type; pruned when above 1.2 x the target's shared memory
// per block (the paper's margin for the estimate's error).
// Tiles: multiples of 16 up to the dim (tensor cores' minimum), and the dim itself.
//
// Hoisting (analyze): each load is placed in the innermost loop (of extent > 1) that indexes
// its tensor and counts the trips of every loop around that place; loops of extent 1 are gone
// (their index is 0), so a load moves out past them: with tk = K, A is loaded once per block,
// not once per (n, k) iteration. The store of E is at block level. Traffic (eq. 3) is each
// tile's bytes times its trips, over all blocks; FLOPs (eq. 4) likewise for the two matmuls.
//
// Lowering. A uGraph block graph has one for-loop, and iterators cannot feed post-loop ops:
// the sub-expressions it holds are those with at most one loop of extent > 1 per block, that
// loop being n (tk = K): grid (batch, M/tm, H/th), for-loop N/tn (opt::tile_chain). For
// "n(k,h)" the block holds all of H (th = H in the uGraph). Other candidates are counted as
// "needs nested loops", and padded tiles as "padded" (a grid cuts a dim into equal chunks).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "opt/tile_chain.h"

namespace mugraph::search {

enum class ChainLoop { kM, kN, kK, kH };

struct TilingExpr {
  bool flat = false;
  // Deep: the four loops, outermost first. Flat: order[0], order[1] are m and n (either
  // order); k then h run in sequence inside them.
  std::array<ChainLoop, 4> order{};
  std::string to_string() const;  // "mhnk", "mn(k,h)"
};

// The 26 expressions: 24 deep (lexicographic in m, n, k, h), then mn(k,h), nm(k,h).
std::vector<TilingExpr> tiling_expressions();

// Rule 1's sub-expression: "nk", "kn" or "n(k,h)".
std::string sub_expression(const TilingExpr& e);
// Rule 2.
bool caches_partial_tiles(const std::string& sub);

struct Tiles {
  int64_t m = 0, n = 0, k = 0, h = 0;
  std::string to_string() const;  // "tm 64, tn 128, tk 64, th 64"
};

// Rule 3.
bool padding_ok(int64_t dim, int64_t tile);
// The tile sizes considered for a dim: multiples of 16 below it, and the dim.
std::vector<int64_t> tile_options(int64_t dim);
// Rule 4's estimate, eq. (1), in bytes.
int64_t shared_memory_estimate(const std::string& sub, const opt::ChainDims& d, const Tiles& t,
                               int elem_bytes);

// The hoisting analysis of one candidate.
struct Access {
  std::string tensor;  // "A", "B", "D", "E"
  int64_t tile_elems = 0;
  int64_t trips = 0;   // per block, after hoisting
};
struct Analysis {
  int64_t blocks = 0;
  std::vector<Access> accesses;
  int64_t bytes = 0;   // eq. (3)'s numerator: sum of tile bytes x trips x blocks
  double flops = 0;    // eq. (4)'s numerator
};
Analysis analyze(const std::string& sub, const opt::ChainDims& d, const Tiles& t, int elem_bytes);

// Whether a candidate lowers to one uGraph block graph, and the tiles it lowers with.
bool lowers_to_ugraph(const std::string& sub, const opt::ChainDims& d, const Tiles& t);
opt::ChainTiles ugraph_tiles(const std::string& sub, const opt::ChainDims& d, const Tiles& t);

// The space and how each rule cut it (counts of (expression, tiles) candidates).
struct SpaceCounts {
  int64_t expressions = 0, after_rule1 = 0, after_rule2 = 0;  // expressions
  int64_t candidates = 0;      // expressions x tile options
  int64_t after_rule1_2 = 0;   // candidates of the sub-expressions kept by rules 1-2
  int64_t after_rule3 = 0, after_rule4 = 0;
  int64_t nested_loops = 0;    // kept by rules 1-4 but not one block graph
  int64_t lowerable = 0;       // distinct uGraph tiles
  std::string to_string() const;
};

struct Space {
  SpaceCounts counts;
  std::vector<opt::ChainTiles> tiles;  // distinct lowerable tiles, sorted (tm, th, tn)
};

// Precondition: d's dims are >= 1. `shared_memory_bytes`: the target's per-block limit.
Space build_space(const opt::ChainDims& d, int elem_bytes, int64_t shared_memory_bytes);

}  // namespace mugraph::search
