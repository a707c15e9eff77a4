#include "search/tune_chain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "ir/memory.h"
#include "opt/cost_model.h"
#include "support/rng.h"

namespace mugraph::search {

namespace {

using Key = std::tuple<int64_t, int64_t, int64_t>;  // (tm, th, tn)
Key key_of(const opt::ChainTiles& t) { return {t.m, t.h, t.n}; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Modeled {
  opt::ChainTiles tiles;
  ir::KernelGraph graph;
  double model_s = 0;
};

}  // namespace

Result<TuneResult> tune_chain(const ir::KernelGraph& program, const target::Target& t,
                              const TuneOptions& o, const MeasureBatch& measure) {
  const double start = now_s();
  if (o.population < 1 || o.measure_top < 1 || !(o.epsilon >= 0) || o.max_rounds < 1)
    return error("tune: population, measure_top and max_rounds must be >= 1 and epsilon >= 0");
  TuneResult r;
  MG_ASSIGN_OR_RETURN(r.chain, opt::find_chain(program));
  r.space = build_space(r.chain.dims, r.chain.elem_bytes, t.shared_memory_per_block);
  // The model of each tiling that lowers and fits the target's memory (the real check of the
  // lowered graph: the estimate of rule 4 has a margin).
  const ir::MemoryLimits limits{t.device_memory_bytes, t.shared_memory_per_block,
                                t.max_registers_per_thread};
  std::map<Key, Modeled> model;
  std::vector<opt::ChainTiles> valid;
  int64_t refused = 0, backend_refused = 0;
  std::string first_refusal, first_backend_refusal;
  for (const opt::ChainTiles& ct : r.space.tiles) {
    if (now_s() - start > o.time_limit_s && !valid.empty()) break;  // a huge space: rank what there is
    auto lowered = opt::tile_chain(program, ct);
    if (!lowered.ok()) {  // counted and named in the report; the other tilings go on
      if (refused++ == 0) first_refusal = ct.to_string() + ": " + lowered.status().message();
      continue;
    }
    ir::KernelGraph g = std::move(lowered).value();
    if (!ir::check_memory(g, limits).ok()) continue;
    if (o.accepts) {
      if (Status st = o.accepts(g); !st.ok()) {
        if (backend_refused++ == 0) first_backend_refusal = ct.to_string() + ": " + st.message();
        continue;
      }
    }
    const double s = opt::estimate(g, t).total_s;
    model[key_of(ct)] = Modeled{ct, std::move(g), s};
    valid.push_back(ct);
  }
  r.estimated = static_cast<int64_t>(valid.size());
  if (refused > 0)
    r.notes.push_back(std::to_string(refused) + " tiling(s) did not lower (first: " + first_refusal + ")");
  const std::string backend_note =
      backend_refused == 0 ? std::string()
                           : std::to_string(backend_refused) +
                                 " tiling(s) the backend's code generator refused (first: " +
                                 first_backend_refusal + ")";
  if (!backend_note.empty()) r.notes.push_back(backend_note);
  if (valid.size() < r.space.tiles.size() && now_s() - start > o.time_limit_s)
    r.notes.push_back("the time limit passed while the model ranked the space: " +
                      std::to_string(valid.size()) + " of " + std::to_string(r.space.tiles.size()) +
                      " tilings ranked");
  if (valid.empty())
    return error("tune: no tiling of the chain (", r.chain.dims.to_string(),
                 ") fits the target: ", r.space.counts.to_string(),
                 backend_note.empty() ? std::string() : "; " + backend_note);
  for (const opt::ChainTiles& ct : valid) {
    const Modeled& m = model.at(key_of(ct));
    if (r.model_best.graph.ops.empty() || m.model_s < r.model_best.model_s)
      r.model_best = TunedTiling{m.tiles, m.graph, m.model_s, -1, -1};
  }
  if (!measure) {
    r.stop_reason = "model only (nothing measured)";
    r.seconds = now_s() - start;
    return r;
  }
  // Each loop's allowed sizes, for mutation.
  std::set<int64_t> sizes[3];
  for (const opt::ChainTiles& ct : valid) sizes[0].insert(ct.m), sizes[1].insert(ct.h), sizes[2].insert(ct.n);
  std::set<Key> allowed;
  for (const opt::ChainTiles& ct : valid) allowed.insert(key_of(ct));

  Rng rng(o.seed);
  std::vector<opt::ChainTiles> population;
  if (static_cast<int>(valid.size()) <= o.population) {
    population = valid;
  } else {
    for (int i = 0; i < o.population; ++i) population.push_back(valid[rng.below(valid.size())]);
  }
  std::map<Key, int> measured_index;  // into r.measured
  double best_t = 0;
  bool have_best = false;
  for (int round = 0;; ++round) {
    r.rounds = round + 1;
    // Estimate and sort (distinct members; ties by tiles, so the order is deterministic).
    std::set<Key> seen;
    std::vector<const Modeled*> ranked;
    for (const opt::ChainTiles& ct : population)
      if (seen.insert(key_of(ct)).second) ranked.push_back(&model.at(key_of(ct)));
    std::sort(ranked.begin(), ranked.end(), [](const Modeled* a, const Modeled* b) {
      if (a->model_s != b->model_s) return a->model_s < b->model_s;
      return key_of(a->tiles) < key_of(b->tiles);
    });
    if (static_cast<int>(ranked.size()) > o.measure_top) ranked.resize(static_cast<size_t>(o.measure_top));
    std::vector<const ir::KernelGraph*> batch;
    std::vector<const Modeled*> fresh;
    for (const Modeled* m : ranked)
      if (!measured_index.count(key_of(m->tiles))) batch.push_back(&m->graph), fresh.push_back(m);
    if (!batch.empty()) {
      const double t0 = now_s();
      MG_ASSIGN_OR_RETURN(std::vector<double> times, measure(batch));
      r.measure_seconds += now_s() - t0;
      if (times.size() != batch.size()) return error("tune: the measurement returned ", times.size(),
                                                     " times for ", batch.size(), " kernels");
      for (size_t i = 0; i < fresh.size(); ++i) {
        measured_index[key_of(fresh[i]->tiles)] = static_cast<int>(r.measured.size());
        r.measured.push_back({fresh[i]->tiles, fresh[i]->graph, fresh[i]->model_s, times[i], round});
      }
    }
    double top1 = 0;
    bool any = false;
    for (const Modeled* m : ranked) {
      const double s = r.measured[static_cast<size_t>(measured_index.at(key_of(m->tiles)))].measured_s;
      if (!any || s < top1) top1 = s, any = true;
    }
    if (have_best && std::fabs(top1 - best_t) <= o.epsilon * best_t) {
      r.converged = true;
      r.stop_reason = "converged";
      break;
    }
    if (!have_best || top1 < best_t) best_t = top1, have_best = true;
    if (measured_index.size() == valid.size()) {
      r.stop_reason = "space exhausted";
      break;
    }
    if (round + 1 >= o.max_rounds) {
      r.stop_reason = "max rounds";
      break;
    }
    if (now_s() - start > o.time_limit_s) {
      r.stop_reason = "time limit";
      break;
    }
    // Next generation: weighted by 1 / estimate, one loop's tile mutated.
    std::vector<double> w;
    double total = 0;
    for (const opt::ChainTiles& ct : population) {
      w.push_back(1.0 / std::max(model.at(key_of(ct)).model_s, 1e-12));
      total += w.back();
    }
    std::vector<opt::ChainTiles> next;
    for (size_t i = 0; i < population.size(); ++i) {
      double x = rng.uniform01() * total;
      size_t pick = 0;
      while (pick + 1 < population.size() && x >= w[pick]) x -= w[pick], ++pick;
      opt::ChainTiles c = population[pick];
      const int loop = static_cast<int>(rng.below(3));
      std::vector<int64_t> options;
      for (int64_t s : sizes[loop]) {
        opt::ChainTiles m = c;
        (loop == 0 ? m.m : loop == 1 ? m.h : m.n) = s;
        if (s != (loop == 0 ? c.m : loop == 1 ? c.h : c.n) && allowed.count(key_of(m))) options.push_back(s);
      }
      if (!options.empty()) (loop == 0 ? c.m : loop == 1 ? c.h : c.n) = options[rng.below(options.size())];
      next.push_back(c);
    }
    population = std::move(next);
  }
  for (size_t i = 0; i < r.measured.size(); ++i)
    if (r.best < 0 || r.measured[i].measured_s < r.measured[static_cast<size_t>(r.best)].measured_s)
      r.best = static_cast<int>(i);
  std::vector<double> ms, ts;
  for (const TunedTiling& x : r.measured) ms.push_back(x.model_s), ts.push_back(x.measured_s);
  r.rank_correlation = opt::spearman(ms, ts);
  r.seconds = now_s() - start;
  return r;
}

std::string format_tune(const TuneResult& r) {
  std::ostringstream s;
  s << "chain: " << r.chain.dims.to_string() << (r.chain.softmax_like ? " (with row normalization)" : "")
    << "\n";
  s << "space: " << r.space.counts.to_string() << "; " << r.estimated
    << " fit the target's memory and its code generator\n";
  for (const std::string& n : r.notes) s << "note: " << n << "\n";
  s << std::setprecision(3);
  int round = -1;
  for (size_t i = 0; i < r.measured.size(); ++i) {
    const TunedTiling& x = r.measured[i];
    if (x.round != round) round = x.round, s << "round " << round + 1 << ":\n";
    s << "  " << (static_cast<int>(i) == r.best ? "* " : "  ") << x.tiles.to_string() << "  grid "
      << x.graph.ops[0].block->grid[0] << "x" << x.graph.ops[0].block->grid[1] << "x"
      << x.graph.ops[0].block->grid[2] << ", forloop " << x.graph.ops[0].block->forloop
      << "  model " << x.model_s * 1e6 << " us, measured " << x.measured_s * 1e6 << " us\n";
  }
  if (!r.measured.empty())
    s << "stopped: " << r.stop_reason << " after " << r.rounds << " round(s), " << r.measured.size()
    << " tilings measured of " << r.estimated << "; " << std::fixed << std::setprecision(2)
    << r.seconds << " s (" << r.measure_seconds << " s measuring)\n";
  if (r.measured.size() >= 2)
    s << "model vs measured rank correlation (Spearman, over the " << r.measured.size()
      << (static_cast<int64_t>(r.measured.size()) == r.estimated
              ? " measured tilings: the whole space): "
              : " measured tilings: the model's top picks, a narrow range): ")
      << r.rank_correlation << "\n";
  if (r.measured.empty())
    s << "model's best: " << r.model_best.tiles.to_string() << ", model " << r.model_best.model_s * 1e6
      << " us\n";
  return s.str();
}

}  // namespace mugraph::search
