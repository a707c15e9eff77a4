// Helpers shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "driver/driver.h"
#include "ir/text.h"

namespace mugraph::testing {

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
