// Helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "driver/driver.h"
#include "ir/text.h"
#include "verify/verifier.h"

namespace mugraph::testing {

// softmax(Q K / 4) V over 64 keys without the max subtraction (the Lax form), small: 2 heads,
// 8 queries, head dim 16; and its FlashAttention kernel (a block per head and half of the rows,
// 8 key tiles of 8 in the loop, the division after the loop).
inline constexpr const char* kSmallAttention = R"(
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
QK = matmul(Q, K)
S = scale(QK, factor=1/4)
E = exp(S)
D = sum(E, dim=2, group=64)
P = div(E, D)
O = matmul(P, V)
output O
)";
inline constexpr const char* kSmallFlashAttention = R"(
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
O = graph_defined(Q, K, V, grid=[2, 2, 1], forloop=8) {
  q = input_iterator(Q, imap={x:0, y:1}, fmap=phi)
  k = input_iterator(K, imap={x:0}, fmap=2)
  v = input_iterator(V, imap={x:0}, fmap=1)
  qk = matmul(q, k)
  s = scale(qk, factor=1/4)
  e = exp(s)
  d = sum(e, dim=2, group=8)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  o = div(nacc, dacc)
  output_saver(o, omap={x:0, y:1})
}
output O
)";

// The verdict of certifying `g` against `program` (default options).
inline verify::VerdictKind certify_kind(const ir::KernelGraph& program, const ir::KernelGraph& g) {
  verify::VerifyOptions vo;
  vo.mode = verify::Mode::kCertify;
  return verify::check(program, g, vo).kind;
}

// Parses a program that the test expects to be valid.
inline ir::KernelGraph parse_ok(const std::string& text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\nin:\n" << text;
  if (!g.ok()) throw std::runtime_error(g.status().message());
  return std::move(g).value();
}

// The error message of a program that must fail to parse or validate.
inline std::string parse_error(const std::string& text) {
  auto g = ir::parse_graph(text);
  EXPECT_FALSE(g.ok()) << "expected an error for:\n" << text;
  return g.ok() ? std::string() : g.status().message();
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The example files, in a fixed order.
inline const std::vector<std::string>& example_names() {
  static const std::vector<std::string> names = {
      "rms_norm_matmul",      "rms_norm_matmul.fused", "gated_mlp",      "gated_mlp.fused",
      "gqa",                  "gqa.flash_attention",   "gqa.flash_decoding", "qknorm_attention",
      "lora",                 "lora.concat_matmul",    "ntrans"};
  return names;
}
inline std::string example_path(const std::string& name) {
  return std::string(MUGRAPH_EXAMPLES_DIR) + "/" + name + ".mu";
}

// Loads an example that the test expects to load.
inline ir::KernelGraph load_example(const std::string& name) {
  auto g = driver::load_graph_file(example_path(name));
  if (!g.ok()) throw std::runtime_error(g.status().message());
  return std::move(g).value();
}

}  // namespace mugraph::testing
