// Terms with shared subterms (issue 19, item 5): a program whose every step uses the previous
// tensor twice, x_{i+1} = mul(x_i, x_i), has an abstract expression of i + 1 distinct nodes but
// a tree of 2^(i+1) - 1. Every walk over such a term (abstraction, e-graph insertion, lookup,
// extraction, Z3 translation, printing) must be linear in the distinct nodes: 40 steps used to
// take hours. Each test runs under a deadline, so that a regression fails instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "driver/driver.h"
#include "expr/abstract.h"
#include "expr/egraph.h"
#include "expr/oracle.h"
#include "expr/z3_oracle.h"
#include "test_util.h"

namespace mugraph::expr {
namespace {

// Ends the test process with a message when the scope runs longer than `seconds` (the
// exponential walks do not return for hours; everything here takes milliseconds).
class Deadline {
 public:
  explicit Deadline(int seconds)
      : thread_([this, seconds] {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) return;
          std::fprintf(stderr, "FAILED: still running after %d s: exponential in the tree?\n",
                       seconds);
          std::_Exit(1);
        }) {}
  ~Deadline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

constexpr int kSteps = 40;
// Generous for a slow or sanitized build: the tests below take milliseconds.
constexpr int kSeconds = 30;

// tests/data/shared_chain.mu: x_{i+1} = mul(x_i, x_i) for i < kSteps, output x_kSteps.
ir::KernelGraph program() {
  return testing::parse_ok(
      testing::read_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/shared_chain.mu"));
}

// x_0 and the chain's terms x_1 .. x_kSteps, x_{i+1} = mul(x_i, x_i).
std::vector<Expr> chain(ExprPool& pool) {
  std::vector<Expr> x = {pool.input("x0")};
  for (int i = 0; i < kSteps; ++i) x.push_back(pool.mul(x.back(), x.back()));
  return x;
}

TEST(SharedSubterms, AbstractExpressionsOfTheProgramAreOneNodePerStep) {
  Deadline deadline(kSeconds);
  const ir::KernelGraph g = program();
  ExprPool pool;
  const GraphExprs ex = abstract_expressions(g, pool);
  EXPECT_EQ(pool.size(), static_cast<size_t>(kSteps + 1));
  EXPECT_EQ(ex.outputs[0], chain(pool).back());
  EXPECT_EQ(ex.outputs[0]->size, uint32_t(1) << 31);  // the tree size saturates
}

TEST(SharedSubterms, EGraphAddLookupAndExtractAreLinear) {
  Deadline deadline(kSeconds);
  ExprPool pool;
  const std::vector<Expr> x = chain(pool);
  EGraph g;
  const ClassId top = g.add_expr(x.back());
  EXPECT_EQ(g.num_nodes(), static_cast<size_t>(kSteps + 1));
  EXPECT_EQ(g.lookup(x.back()), top);
  EXPECT_EQ(g.lookup(x[20]), g.add_expr(x[20]));
  EXPECT_EQ(g.lookup(pool.mul(x.back(), x.back())), std::nullopt);
  EXPECT_EQ(g.lookup(pool.mul(x.back(), pool.input("y"))), std::nullopt);
  // Tree sizes past 2^32 used to read as "no term" (the size counter overflowed).
  EXPECT_EQ(g.extract(top, pool), x.back());
}

TEST(SharedSubterms, OracleAnswersAndWitnesses) {
  Deadline deadline(kSeconds);
  ExprPool pool;
  const std::vector<Expr> x = chain(pool);
  OracleOptions o;
  o.limits.max_nodes = 20000;  // saturation of 40 nested products blows up: keep the test short
  o.z3_fallback_budget_s = 0;
  Oracle oracle(pool, {x.back()}, o);
  EXPECT_TRUE(oracle.may_lead_to(x[20]));
  const std::optional<Expr> w = oracle.witness(x[20]);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ((*w)->size, uint32_t(1) << 31);
}

TEST(SharedSubterms, Z3TranslatesTheDagOnce) {
  Deadline deadline(kSeconds);
  ExprPool pool;
  const std::vector<Expr> x = chain(pool);
  // A sum on top, so that the query's count splits walk the whole program term.
  const Expr program = pool.sum(4, x.back());
  Z3Oracle z3(2000);
  EXPECT_NE(z3.entails_subexpr(pool.sum(2, x.back()), {program}), Z3Answer::kNotProved);
}

TEST(SharedSubterms, PrintingAbbreviatesSharedSubtermsAndCuts) {
  Deadline deadline(kSeconds);
  ExprPool pool;
  const std::vector<Expr> x = chain(pool);
  const std::unordered_map<Expr, std::string> none;
  // Small terms print as to_string does.
  EXPECT_EQ(to_string_abbreviated(x[2], none, 100), to_string(x[2]));
  EXPECT_EQ(to_string_abbreviated(x[2], {{x[1], "x1"}}, 100), "mul(@x1, @x1)");
  // The top term is never replaced by its own name.
  EXPECT_EQ(to_string_abbreviated(x[1], {{x[1], "x1"}}, 100), "mul(x0, x0)");
  const std::string cut = to_string_abbreviated(x.back(), none, 200);
  EXPECT_EQ(cut.rfind("mul(mul(mul(", 0), 0u) << cut;
  EXPECT_LT(cut.size(), 300u);
  EXPECT_NE(cut.find(" ... (truncated: the term has at least 2^31 nodes as a tree)"),
            std::string::npos)
      << cut;
  // Exactly at the limit is not a cut.
  const std::string full = to_string(x[3]);
  EXPECT_EQ(to_string_abbreviated(x[3], none, full.size()), full);
}

TEST(SharedSubterms, CliExpressionsNameEarlierTensors) {
  Deadline deadline(kSeconds);
  const ir::KernelGraph g = program();
  const std::vector<driver::TensorExpr> t = driver::tensor_expressions(g);
  ASSERT_EQ(t.size(), static_cast<size_t>(kSteps + 1));
  EXPECT_EQ(t[1].expr, "mul(x0, x0)");
  EXPECT_FALSE(t[1].abbreviated);
  EXPECT_EQ(t.back().tensor, "x40");
  EXPECT_EQ(t.back().expr, "mul(@x39, @x39)");
  EXPECT_TRUE(t.back().abbreviated);
}

}  // namespace
}  // namespace mugraph::expr
