#include "search/tiling.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

namespace mugraph::search {

using opt::ChainDims;

namespace {

char loop_char(ChainLoop l) {
  switch (l) {
    case ChainLoop::kM: return 'm';
    case ChainLoop::kN: return 'n';
    case ChainLoop::kK: return 'k';
    case ChainLoop::kH: return 'h';
  }
  return '?';
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// A statement's trips per block: the loops around its natural place, outermost first, each
// with its extent and whether it indexes the statement's tensor. The statement moves out to
// just inside the innermost indexing loop of extent > 1 (hoisting), so it runs once per
// iteration of that loop and of every loop around it.
struct PathLoop {
  int64_t extent;
  bool indexes;
};
int64_t trips(const std::vector<PathLoop>& path) {
  int64_t innermost = -1;
  for (size_t i = 0; i < path.size(); ++i)
    if (path[i].indexes && path[i].extent > 1) innermost = static_cast<int64_t>(i);
  int64_t t = 1;
  for (int64_t i = 0; i <= innermost; ++i) t *= path[static_cast<size_t>(i)].extent;
  return t;
}

}  // namespace

std::string TilingExpr::to_string() const {
  std::string s;
  if (!flat) {
    for (ChainLoop l : order) s += loop_char(l);
    return s;
  }
  s += loop_char(order[0]);
  s += loop_char(order[1]);
  return s + "(k,h)";
}

std::vector<TilingExpr> tiling_expressions() {
  std::vector<TilingExpr> out;
  std::array<ChainLoop, 4> p{ChainLoop::kM, ChainLoop::kN, ChainLoop::kK, ChainLoop::kH};
  do {
    TilingExpr e;
    e.order = p;
    out.push_back(e);
  } while (std::next_permutation(p.begin(), p.end()));
  for (auto outer : {std::array<ChainLoop, 4>{ChainLoop::kM, ChainLoop::kN, ChainLoop::kK, ChainLoop::kH},
                     std::array<ChainLoop, 4>{ChainLoop::kN, ChainLoop::kM, ChainLoop::kK, ChainLoop::kH}}) {
    TilingExpr e;
    e.flat = true;
    e.order = outer;
    out.push_back(e);
  }
  return out;
}

std::string sub_expression(const TilingExpr& e) {
  if (e.flat) return "n(k,h)";  // m moves out past n and is bound; h runs after k inside n
  std::string s;
  for (ChainLoop l : e.order)
    if (l == ChainLoop::kN || l == ChainLoop::kK) s += loop_char(l);
  return s;
}

bool caches_partial_tiles(const std::string& sub) { return sub == "kn"; }

std::string Tiles::to_string() const {
  std::ostringstream s;
  s << "tm " << m << ", tn " << n << ", tk " << k << ", th " << h;
  return s.str();
}

bool padding_ok(int64_t dim, int64_t tile) {
  if (dim % tile == 0) return true;
  if (is_power_of_two(dim)) return false;
  const int64_t padded = ceil_div(dim, tile) * tile;
  return static_cast<double>(padded - dim) < 0.05 * static_cast<double>(dim);
}

std::vector<int64_t> tile_options(int64_t dim) {
  std::vector<int64_t> out;
  for (int64_t t = 16; t < dim; t += 16) out.push_back(t);
  out.push_back(dim);
  return out;
}

int64_t shared_memory_estimate(const std::string& sub, const ChainDims& d, const Tiles& t,
                               int elem_bytes) {
  const int64_t c = caches_partial_tiles(sub) ? t.m * d.n : t.m * t.n;
  const int64_t e = sub == "n(k,h)" ? t.m * d.h : t.m * t.h;
  return (t.m * t.k + t.k * t.n + c + t.n * t.h + e) * elem_bytes;
}

Analysis analyze(const std::string& sub, const ChainDims& d, const Tiles& t, int elem_bytes) {
  const int64_t en = ceil_div(d.n, t.n), ek = ceil_div(d.k, t.k), eh = ceil_div(d.h, t.h);
  const bool flat = sub == "n(k,h)";
  Analysis a;
  a.blocks = d.batch * ceil_div(d.m, t.m) * (flat ? 1 : eh);
  // Paths of loops around each statement's natural place (m and, unless flat, h are bound).
  std::vector<PathLoop> pa, pb, pd;
  if (sub == "kn") {
    pa = {{ek, true}, {en, false}};
    pb = {{ek, true}, {en, true}};
    pd = {{en, true}};  // the second n loop, after the k loop has completed the C tiles
  } else {
    pa = {{en, false}, {ek, true}};
    pb = {{en, true}, {ek, true}};
    pd = flat ? std::vector<PathLoop>{{en, true}, {eh, true}} : std::vector<PathLoop>{{en, true}};
  }
  a.accesses = {{"A", t.m * t.k, trips(pa)},
                {"B", t.k * t.n, trips(pb)},
                {"D", t.n * t.h, trips(pd)},
                {"E", flat ? t.m * d.h : t.m * t.h, 1}};
  for (const Access& x : a.accesses) a.bytes += x.tile_elems * x.trips * elem_bytes * a.blocks;
  const double cc = 2.0 * static_cast<double>(t.m * t.n * t.k) * static_cast<double>(en * ek);
  const double ce = 2.0 * static_cast<double>(t.m * t.n * t.h) * static_cast<double>(en * (flat ? eh : 1));
  a.flops = (cc + ce) * static_cast<double>(a.blocks);
  return a;
}

bool lowers_to_ugraph(const std::string& sub, const ChainDims& d, const Tiles& t) {
  if (sub == "kn") return false;
  if (t.k != d.k) return false;  // the k loop would be a second loop (or feed post-loop ops)
  return d.m % t.m == 0 && d.n % t.n == 0 && (sub == "n(k,h)" || d.h % t.h == 0);
}

opt::ChainTiles ugraph_tiles(const std::string& sub, const ChainDims& d, const Tiles& t) {
  return {t.m, sub == "n(k,h)" ? d.h : t.h, t.n};
}

std::string SpaceCounts::to_string() const {
  std::ostringstream s;
  s << expressions << " tiling expressions (" << after_rule1 << " after rule 1, " << after_rule2
    << " after rule 2); " << candidates << " candidates with tiles, " << after_rule1_2
    << " after rules 1-2, " << after_rule3 << " after rule 3 (padding), " << after_rule4
    << " after rule 4 (shared memory), of which " << nested_loops
    << " need a k loop beside the n loop or padding (not one uGraph block graph) and "
    << after_rule4 - nested_loops << " lower to " << lowerable
    << " distinct uGraph tilings (several give one uGraph: n(k,h) holds all of H whatever its th, as nk does with th = H)";
  return s.str();
}

Space build_space(const ChainDims& d, int elem_bytes, int64_t shared_memory_bytes) {
  Space sp;
  SpaceCounts& c = sp.counts;
  const std::vector<TilingExpr> exprs = tiling_expressions();
  std::vector<std::string> subs;
  for (const TilingExpr& e : exprs) subs.push_back(sub_expression(e));
  std::set<std::string> distinct(subs.begin(), subs.end());
  c.expressions = static_cast<int64_t>(exprs.size());
  c.after_rule1 = static_cast<int64_t>(distinct.size());
  std::vector<std::string> kept;
  for (const std::string& s : distinct)
    if (!caches_partial_tiles(s)) kept.push_back(s);
  c.after_rule2 = static_cast<int64_t>(kept.size());
  const auto om = tile_options(d.m), on = tile_options(d.n), ok = tile_options(d.k),
             oh = tile_options(d.h);
  const int64_t per_expr = static_cast<int64_t>(om.size() * on.size() * ok.size() * oh.size());
  c.candidates = c.expressions * per_expr;
  c.after_rule1_2 = c.after_rule2 * per_expr;
  std::set<std::tuple<int64_t, int64_t, int64_t>> lowered;
  const double limit = 1.2 * static_cast<double>(shared_memory_bytes);
  // Rule 3 is per dim; rule 4's estimate grows with tk, so for given tm, tn, th the tiles of k
  // that pass it are a prefix of the sorted options (counted without a loop over tk: a chain of
  // 4096-wide dims has 8.6e9 candidates).
  auto passing = [](const std::vector<int64_t>& opts, int64_t dim) {
    std::vector<int64_t> out;
    for (int64_t t : opts)
      if (padding_ok(dim, t)) out.push_back(t);
    return out;
  };
  const auto pm = passing(om, d.m), pn = passing(on, d.n), pk = passing(ok, d.k), ph = passing(oh, d.h);
  for (const std::string& sub : kept) {
    c.after_rule3 += static_cast<int64_t>(pm.size() * pn.size() * pk.size() * ph.size());
    for (int64_t tm : pm)
      for (int64_t tn : pn)
        for (int64_t th : ph) {
          auto fits = [&](int64_t tk) {
            return static_cast<double>(shared_memory_estimate(sub, d, Tiles{tm, tn, tk, th}, elem_bytes)) <= limit;
          };
          const int64_t kept_k = std::partition_point(pk.begin(), pk.end(), fits) - pk.begin();
          c.after_rule4 += kept_k;
          const Tiles whole_k{tm, tn, d.k, th};
          const bool lowers = fits(d.k) && lowers_to_ugraph(sub, d, whole_k);
          c.nested_loops += kept_k - (lowers ? 1 : 0);
          if (lowers) {
            const opt::ChainTiles u = ugraph_tiles(sub, d, whole_k);
            lowered.insert({u.m, u.h, u.n});
          }
        }
  }
  for (auto [m, h, n] : lowered) sp.tiles.push_back({m, h, n});
  c.lowerable = static_cast<int64_t>(sp.tiles.size());
  return sp;
}

}  // namespace mugraph::search
