#include "expr/oracle_corpus.h"

#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include "expr/abstract.h"

namespace mugraph::expr {
namespace {

struct Query {
  size_t program;
  expr::Expr prefix;
  bool keep;
  expr::Expr hint;
  expr::Z3Answer z3 = expr::Z3Answer::kTimeout;
  expr::Z3Answer z3_hint = expr::Z3Answer::kTimeout;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string CorpusReport::to_string() const {
  std::ostringstream os;
  for (const std::string& l : per_program) os << l << "\n";
  os << queries << " distinct queries, " << checked << " checked against Z3: " << kept
     << " kept by the e-graph (Z3 proves " << proved_hint << " given the witness, "
     << proved_unaided << " unaided), " << pruned << " pruned; " << disagreements << " disagreements, " << timeouts
     << " Z3 timeouts; e-graph " << egraph_seconds << " s, Z3 " << z3_seconds << " s";
  for (const std::string& d : disagreeing) os << "\n  " << d;
  return os.str();
}

WalkOptions corpus_walk_options(const std::string& program) {
  WalkOptions w;
  if (program == "rms_norm_matmul") {
    w.max_queries_per_context = 600;
  } else {
    w.depth = 4;
    w.max_queries_per_context = 1000;
  }
  return w;
}

CorpusReport check_oracle_corpus(std::vector<CorpusProgram> programs, const CorpusOptions& o) {
  CorpusReport r;
  expr::ExprPool pool;
  std::vector<std::vector<expr::Expr>> outputs;
  std::vector<Query> queries;
  for (const CorpusProgram& p : programs) {
    outputs.push_back(expr::abstract_expressions(p.graph, pool).outputs);
    expr::Oracle oracle(pool, outputs.back());
    const WalkResult walk = walk_prefixes(p.graph, pool, oracle, p.walk);
    r.queries += walk.queries.size();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < walk.queries.size(); i += o.stride) {
      expr::Expr e = walk.queries[i];
      auto answer = oracle.egraph_answer(e);
      MG_CHECK(answer.has_value(), p.name << ": corpus programs must saturate");
      queries.push_back({outputs.size() - 1, e, *answer, *answer ? *oracle.witness(e) : nullptr});
    }
    r.egraph_seconds += seconds_since(t0);
    std::ostringstream line;
    line << p.name << ": " << walk.queries.size() << " distinct queries, " << walk.kept
         << " kept; e-graph " << oracle.stats().saturation.nodes << " nodes, saturated in "
         << oracle.stats().saturate_seconds << " s";
    r.per_program.push_back(line.str());
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < o.threads; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<expr::Z3Oracle>> z3;
      for (size_t p = 0; p < outputs.size(); ++p)
        z3.push_back(std::make_unique<expr::Z3Oracle>(o.z3_timeout_ms));
      for (size_t i = t; i < queries.size(); i += o.threads) {
        Query& q = queries[i];
        q.z3 = z3[q.program]->entails_subexpr(q.prefix, outputs[q.program]);
        if (q.keep) q.z3_hint = z3[q.program]->entails_subexpr(q.prefix, outputs[q.program], q.hint);
      }
    });
  for (std::thread& t : threads) t.join();
  r.z3_seconds = seconds_since(t0);
  for (const Query& q : queries) {
    ++r.checked;
    const expr::Z3Answer decisive = q.keep ? q.z3_hint : q.z3;
    if (decisive == expr::Z3Answer::kTimeout) ++r.timeouts;
    if (q.keep) {
      ++r.kept;
      r.proved_unaided += q.z3 == expr::Z3Answer::kProved;
      r.proved_hint += q.z3_hint == expr::Z3Answer::kProved;
    } else {
      ++r.pruned;
    }
    const bool disagree = q.keep ? decisive == expr::Z3Answer::kNotProved
                                 : decisive == expr::Z3Answer::kProved;
    if (disagree) {
      ++r.disagreements;
      r.disagreeing.push_back(programs[q.program].name + ": " + expr::to_string(q.prefix) +
                              (q.keep ? " (e-graph keeps, Z3 cannot prove it)"
                                      : " (e-graph prunes, Z3 proves it)"));
    }
  }
  return r;
}

}  // namespace mugraph::expr
