// The e-graph fast path against the Z3 reference (expr/oracle_corpus.h) on the queries met
// while walking the prefixes of the paper's programs. The full corpus (more than 10,000
// distinct queries) is checked by bench/oracle_corpus, which takes tens of minutes of Z3 time
// (bench/results/oracle.md); this test checks every 8th query, within CI time.
#include <gtest/gtest.h>

#include "driver/driver.h"
#include "expr/oracle_corpus.h"
#include "test_util.h"

namespace mugraph::expr {
namespace {

TEST(OracleCorpus, EGraphAgreesWithZ3) {
  std::vector<CorpusProgram> programs;
  for (const char* name : {"rms_norm_matmul", "lora", "gated_mlp", "gqa"}) {
    auto g = driver::load_graph_file(testing::example_path(name));
    ASSERT_TRUE(g.ok()) << g.status().message();
    programs.push_back({name, *g, corpus_walk_options(name)});
  }
  CorpusOptions o;
  o.stride = 8;
  const CorpusReport r = check_oracle_corpus(programs, o);
  std::printf("%s\n", r.to_string().c_str());
  EXPECT_GE(r.queries, 10000u);
  EXPECT_GE(r.checked, r.queries / 8);
  EXPECT_EQ(r.disagreements, 0u);
  EXPECT_GT(r.kept, 0u);
  EXPECT_GT(r.pruned, 0u);
}

}  // namespace
}  // namespace mugraph::expr
