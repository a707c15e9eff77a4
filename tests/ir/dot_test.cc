// DOT export: block graphs as clusters inside their kernel op, balanced and complete.
#include <algorithm>

#include "ir/dot.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Dot, BlockGraphsAreClustersWithEveryNode) {
  KernelGraph g = parse_ok(read_file(example_path("gqa.flash_decoding")));
  const std::string dot = to_dot(g);
  EXPECT_EQ(dot.rfind("digraph ugraph {", 0), 0u);
  EXPECT_EQ(count(dot, "{"), count(dot, "}"));
  // Two graph-defined ops, each a cluster with a nested for-loop cluster.
  EXPECT_EQ(count(dot, "subgraph cluster_"), 4u);
  EXPECT_EQ(count(dot, "label=\"graph_defined grid=[2,8,2] forloop=8\""), 1u);
  size_t block_nodes = 0;
  for (const KernelOp& op : g.ops) block_nodes += op.block->nodes.size();
  EXPECT_EQ(count(dot, "[label=\"iter ") + count(dot, "[label=\"accum ") +
                count(dot, "[label=\"save ") + count(dot, "[label=\"matmul") +
                count(dot, "[label=\"exp") + count(dot, "[label=\"sum") +
                count(dot, "[label=\"reshape") + count(dot, "[label=\"div") + count(dot, "[label=\"scale"),
            block_nodes);
  // Every kernel tensor is a node.
  for (size_t t = 0; t < g.tensors.size(); ++t)
    EXPECT_NE(dot.find("  t" + std::to_string(t) + " [shape=ellipse"), std::string::npos);
}

TEST(Dot, ThreadGraphsListTheirOps) {
  const std::string dot = to_dot(parse_ok(read_file(example_path("gated_mlp.fused"))));
  EXPECT_NE(dot.find("thread graph:\\nsilu\\nmul"), std::string::npos);
}

}  // namespace
}  // namespace mugraph::ir
