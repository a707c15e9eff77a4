#include "expr/oracle.h"

#include <chrono>
#include <sstream>

namespace mugraph::expr {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string OracleStats::to_string() const {
  std::ostringstream os;
  os << "oracle: " << queries << " queries, " << cache_hits << " cache hits, " << kept
     << " kept, " << pruned << " pruned; e-graph " << egraph_answers << " answers in "
     << egraph_seconds << " s, Z3 " << z3_answers << " answers (" << z3_timeouts
     << " timeouts) in " << z3_seconds << " s";
  if (disagreements) os << ", " << disagreements << " disagreements";
  if (pruned_unproven)
    os << ", " << pruned_unproven << " pruned unproven (not in the unsaturated e-graph)";
  if (saturation.iterations == 0) {
    os << "\ne-graph: not used";
    return os.str();
  }
  os << "\ne-graph: " << saturation.stop_reason << " after " << saturation.iterations
     << " iterations, " << saturation.nodes << " nodes, " << saturation.classes << " classes, "
     << saturate_seconds << " s";
  if (first_attempt.iterations > 0)
    os << " (rebuilt after the first attempt stopped: " << first_attempt.stop_reason << " after "
       << first_attempt.iterations << " iterations, " << first_attempt.nodes << " nodes)";
  return os.str();
}

Oracle::Oracle(ExprPool& pool, std::vector<Expr> program, OracleOptions options)
    : pool_(pool), program_(std::move(program)), options_(options) {
  MG_CHECK(!program_.empty(), "oracle without program outputs");
  if (options_.mode == OracleMode::kZ3) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto build = [&](const SaturationLimits& limits) {
    egraph_ = EGraph();
    roots_.clear();
    for (Expr e : program_) roots_.push_back(egraph_.add_expr(e));
    stats_.saturation = saturate(egraph_, equivalence_axioms(), limits);
  };
  build(options_.limits);
  if (!stats_.saturation.saturated && options_.unsaturated_rounds > 0 &&
      stats_.saturation.iterations > options_.unsaturated_rounds) {
    stats_.first_attempt = stats_.saturation;
    SaturationLimits bounded = options_.limits;
    bounded.max_iterations = options_.unsaturated_rounds;
    build(bounded);
  }
  for (ClassId& r : roots_) r = egraph_.find(r);
  reachable_ = egraph_.reachable_from(roots_);
  if (stats_.saturation.saturated) steps_ = egraph_.steps_to(roots_);
  stats_.saturate_seconds = seconds_since(t0);
}

Oracle::~Oracle() = default;

std::optional<bool> Oracle::egraph_answer(Expr prefix) const {
  MG_CHECK(options_.mode != OracleMode::kZ3, "no e-graph in Z3 mode");
  if (auto c = egraph_.lookup(prefix); c && reachable_[*c]) return true;
  if (stats_.saturation.saturated) return false;
  return std::nullopt;
}

std::optional<bool> Oracle::equals_output(Expr e, size_t i) const {
  MG_CHECK(i < program_.size(), "program output " << i << " out of range");
  return equivalent(e, program_[i]);
}

std::optional<bool> Oracle::equivalent(Expr a, Expr b) const {
  if (a == b) return true;
  if (options_.mode == OracleMode::kZ3) return std::nullopt;
  auto ca = egraph_.lookup(a), cb = egraph_.lookup(b);
  if (ca && cb) return egraph_.find(*ca) == egraph_.find(*cb);
  if ((ca || cb) && stats_.saturation.saturated) return false;
  return std::nullopt;
}

std::optional<int> Oracle::steps_to_output(Expr e) const {
  if (steps_.empty()) return std::nullopt;
  auto c = egraph_.lookup(e);
  if (!c || steps_[*c] == UINT32_MAX) return std::nullopt;
  return static_cast<int>(steps_[*c]);
}

std::optional<Expr> Oracle::witness(Expr prefix) const {
  for (ClassId r : roots_)
    if (auto w = egraph_.witness(r, prefix, pool_)) return w;
  return std::nullopt;
}

Z3Answer Oracle::z3_answer(Expr prefix, bool use_witness) {
  if (!z3_) z3_ = std::make_unique<Z3Oracle>(options_.z3_timeout_ms);
  std::optional<Expr> hint;
  if (use_witness && options_.mode != OracleMode::kZ3) hint = witness(prefix);
  return z3_->entails_subexpr(prefix, program_, hint.value_or(nullptr));
}

bool Oracle::decide(Expr prefix) {
  std::optional<bool> eg;
  if (options_.mode != OracleMode::kZ3) {
    const auto t0 = std::chrono::steady_clock::now();
    eg = egraph_answer(prefix);
    stats_.egraph_seconds += seconds_since(t0);
    if (eg && options_.mode == OracleMode::kEGraph) {
      ++stats_.egraph_answers;
      return *eg;
    }
    if (!eg && options_.mode == OracleMode::kEGraph &&
        stats_.z3_seconds >= options_.z3_fallback_budget_s) {
      ++stats_.pruned_unproven;
      return false;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Z3Answer z = z3_answer(prefix);
  stats_.z3_seconds += seconds_since(t0);
  ++stats_.z3_answers;
  if (z == Z3Answer::kTimeout) ++stats_.z3_timeouts;
  // A timeout keeps the prefix: pruning must never discard what it could not rule out.
  const bool z3_keep = z != Z3Answer::kNotProved;
  if (options_.mode == OracleMode::kCrossCheck && eg) {
    ++stats_.egraph_answers;
    if (*eg != z3_keep) ++stats_.disagreements;
    return *eg || z3_keep;
  }
  return z3_keep;
}

bool Oracle::may_lead_to(Expr prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.queries;
  if (auto it = cache_.find(prefix); it != cache_.end()) {
    ++stats_.cache_hits;
    return it->second;
  }
  const bool keep = decide(prefix);
  cache_.emplace(prefix, keep);
  ++(keep ? stats_.kept : stats_.pruned);
  return keep;
}

OracleStats Oracle::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool may_lead_to(ExprPool& pool, Expr prefix, Expr program, OracleOptions options) {
  Oracle oracle(pool, {program}, options);
  return oracle.may_lead_to(prefix);
}

}  // namespace mugraph::expr
