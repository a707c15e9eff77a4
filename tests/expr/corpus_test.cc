// The e-graph fast path against the Z3 reference on a corpus of more than 10,000 distinct
// queries, collected by walking the prefixes of the paper's benchmark programs
// (search/prefix_walk.h). The two must agree on every query:
//   e-graph "keep"  -> Z3 proves the entailment (given the e-graph's witness term as a hint:
//                      E-matching alone cannot always invent the witness; we also count how
//                      many it proves unaided);
//   e-graph "prune" -> Z3 does not prove it (its instantiation saturates without a proof).
#include <gtest/gtest.h>

#include <thread>

#include "driver/driver.h"
#include "expr/abstract.h"
#include "expr/oracle.h"
#include "search/prefix_walk.h"
#include "test_util.h"

namespace mugraph::expr {
namespace {

struct Query {
  size_t program;
  Expr prefix;
  bool keep;         // the e-graph's answer
  Expr hint;         // witness for kept prefixes
  Z3Answer z3 = Z3Answer::kTimeout;         // unaided
  Z3Answer z3_hint = Z3Answer::kTimeout;    // with the witness (kept prefixes only)
};

TEST(OracleCorpus, EGraphAgreesWithZ3OnTenThousandQueries) {
  const char* programs[] = {"rms_norm_matmul", "gated_mlp", "gqa", "lora", "qknorm_attention"};
  ExprPool pool;
  std::vector<std::vector<Expr>> outputs;
  std::vector<Query> queries;
  for (const char* name : programs) {
    auto g = driver::load_graph_file(testing::example_path(name));
    ASSERT_TRUE(g.ok()) << g.status().message();
    outputs.push_back(abstract_expressions(*g, pool).outputs);
    Oracle oracle(pool, outputs.back());
    ASSERT_TRUE(oracle.stats().saturation.saturated) << name;
    const search::WalkResult walk = search::walk_prefixes(*g, pool, oracle);
    size_t kept = 0;
    for (Expr e : walk.queries) {
      const bool keep = *oracle.egraph_answer(e);
      Expr hint = keep ? *oracle.witness(e) : nullptr;
      queries.push_back({outputs.size() - 1, e, keep, hint});
      kept += keep;
    }
    std::printf("%-18s %5zu distinct queries, %4zu kept\n", name, walk.queries.size(), kept);
  }
  ASSERT_GE(queries.size(), 10000u);

  // Z3 on two threads, each with its own solver per program.
  const unsigned threads = 2;
  std::vector<std::thread> pool_threads;
  for (unsigned t = 0; t < threads; ++t)
    pool_threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<Z3Oracle>> z3;
      for (size_t p = 0; p < outputs.size(); ++p) z3.push_back(std::make_unique<Z3Oracle>());
      for (size_t i = t; i < queries.size(); i += threads) {
        Query& q = queries[i];
        q.z3 = z3[q.program]->entails_subexpr(q.prefix, outputs[q.program]);
        if (q.keep) q.z3_hint = z3[q.program]->entails_subexpr(q.prefix, outputs[q.program], q.hint);
      }
    });
  for (auto& th : pool_threads) th.join();

  size_t kept = 0, unaided = 0, timeouts = 0, disagree = 0;
  for (const Query& q : queries) {
    if (q.keep) {
      ++kept;
      unaided += q.z3 == Z3Answer::kProved;
      timeouts += q.z3_hint == Z3Answer::kTimeout;
      if (q.z3_hint == Z3Answer::kNotProved) {
        ++disagree;
        ADD_FAILURE() << "e-graph keeps, Z3 cannot prove: " << to_string(q.prefix);
      }
    } else {
      timeouts += q.z3 == Z3Answer::kTimeout;
      if (q.z3 == Z3Answer::kProved) {
        ++disagree;
        ADD_FAILURE() << "e-graph prunes, Z3 proves: " << to_string(q.prefix);
      }
    }
  }
  std::printf("%zu queries: %zu kept (Z3 proves %zu unaided, all with the witness), %zu pruned; "
              "%zu disagreements, %zu Z3 timeouts\n",
              queries.size(), kept, unaided, queries.size() - kept, disagree, timeouts);
  EXPECT_EQ(disagree, 0u);
  EXPECT_LE(timeouts, queries.size() / 100) << "Z3 timed out too often to call this a comparison";
}

}  // namespace
}  // namespace mugraph::expr
