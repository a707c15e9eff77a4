// HLO import (issue 22): every module of tests/data/hlo (written by make_hlo.py with JAX) is
// imported and run by the float64 interpreter on the inputs JAX ran; its outputs must match
// JAX's f32 outputs. The modules the import must refuse fail with the expected reason and the
// source line. Hand-written modules cover the parser's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/hlo_import.h"
#include "ir/text.h"
#include "verify/interpret.h"

namespace mugraph::ir {
namespace {

namespace fs = std::filesystem;
using verify::HostTensor;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

HostTensor<double> tensor_of(const nlohmann::json& j) {
  Shape s;
  for (int64_t d : j.at("shape")) s[s.rank++] = d;
  if (s.rank == 0) s = Shape{1};
  HostTensor<double> t(s, 0.0);
  t.data = j.at("data").get<std::vector<double>>();
  return t;
}

std::vector<fs::path> cases() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(MUGRAPH_TEST_DATA_DIR) / "hlo"))
    if (e.path().extension() == ".hlo") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(HloImport, EveryModuleMatchesJaxOrIsRefusedWithItsReason) {
  const auto files = cases();
  ASSERT_GE(files.size(), 20u);
  int imported = 0;
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    const auto data = nlohmann::json::parse(read(fs::path(f).replace_extension(".json")));
    auto h = import_hlo(read(f), f.filename().string());
    if (data.contains("error")) {
      ASSERT_FALSE(h.ok()) << h->text;
      EXPECT_NE(h.status().message().find(data["error"].get<std::string>()), std::string::npos)
          << h.status().message();
      EXPECT_NE(h.status().message().find(f.filename().string() + ":"), std::string::npos)
          << "the error names no line: " << h.status().message();
      continue;
    }
    ASSERT_TRUE(h.ok()) << h.status().message();
    ++imported;
    EXPECT_EQ(parse_graph(print_graph(h->graph)).value(), h->graph);
    // The entry's parameters, in order, then the constants' inputs with their values.
    ASSERT_EQ(h->parameters.size(), data["inputs"].size());
    std::map<std::string, HostTensor<double>> bound;
    for (size_t k = 0; k < h->parameters.size(); ++k) bound[h->parameters[k]] = tensor_of(data["inputs"][k]);
    for (const auto& [name, v] : h->constants) bound[name] = HostTensor<double>(Shape{1}, v);
    verify::Tensors<double> inputs;
    for (TensorId id : h->graph.inputs) {
      auto it = bound.find(h->graph.tensor(id).name);
      ASSERT_NE(it, bound.end()) << "input " << h->graph.tensor(id).name << " is bound to nothing";
      ASSERT_EQ(it->second.shape, h->graph.tensor(id).type.shape) << h->graph.tensor(id).name;
      inputs.push_back(it->second);
    }
    auto outs = verify::interpret(h->graph, inputs);
    ASSERT_TRUE(outs.ok()) << outs.status().message();
    ASSERT_EQ(outs->size(), data["outputs"].size());
    for (size_t o = 0; o < outs->size(); ++o) {
      const HostTensor<double> want = tensor_of(data["outputs"][o]);
      const HostTensor<double>& got = (*outs)[o];
      ASSERT_EQ(got.data.size(), want.data.size()) << "output " << o;
      double num = 0, den = 0;
      for (size_t i = 0; i < got.data.size(); ++i) {
        num += (got.data[i] - want.data[i]) * (got.data[i] - want.data[i]);
        den += want.data[i] * want.data[i];
      }
      // JAX computed in f32 (and its values were written with 8 digits): ~1e-7 per op.
      EXPECT_LE(std::sqrt(num / den), 2e-5) << "output " << o << "\n" << h->text;
    }
  }
  EXPECT_GE(imported, 20);
}

TEST(HloImport, SoftmaxIsTheLaxFormAndSaysSo) {
  const fs::path f = fs::path(MUGRAPH_TEST_DATA_DIR) / "hlo" / "attention.hlo";
  auto h = import_hlo(read(f), "attention.hlo");
  ASSERT_TRUE(h.ok()) << h.status().message();
  ASSERT_EQ(h->notes.size(), 1u);
  EXPECT_NE(h->notes[0].find("softmax imported without its max subtraction"), std::string::npos);
  // exp(x) / sum(exp(x)): one exp, one sum, one div, two matmuls, nothing of the max.
  EXPECT_NE(h->text.find("= exp("), std::string::npos) << h->text;
  EXPECT_EQ(h->text.find("max"), std::string::npos) << h->text;
  EXPECT_TRUE(h->constants.empty());
}

// A module written by hand: the entry and the error each line gets.
std::string module(const std::string& body) {
  return "HloModule m\n\nENTRY main {\n" + body + "}\n";
}

TEST(HloImport, ErrorsNameTheLineTheInstructionAndTheReason) {
  struct Case {
    std::string text, want;
  };
  const std::vector<Case> cases = {
      {module("  p = f32[4]{0} parameter(0)\n  ROOT s = f32[4]{0} sine(p)\n"),
       "m.hlo:5: s = sine(...): opcode 'sine' is not supported by mugraph's HLO import"},
      {module("  p = f32[4]{0} parameter(0)\n  c = f32[4]{0} constant({1, 2, 3, 4})\n"
              "  ROOT a = f32[4]{0} add(p, c)\n"),
       "m.hlo:5: c = constant(...): a non-scalar constant"},
      {module("  p = f32[4]{0} parameter(0)\n  ROOT a = f32[4]{0} add(p, q)\n"),
       "m.hlo:5: a = add(...): operand 'q' is not defined before it"},
      {module("  p = f32[4]{0} parameter(0)\n  ROOT c = f16[4]{0} convert(p)\n"),
       "converts f32 to f16"},
      {module("  p = f32[4]{0} parameter(0)\n  ROOT a = f32[4]{0} add(p, p\n"),
       "m.hlo:5: a: unbalanced operand list"},
      {"HloModule m\nENTRY main {\n  p = f32[4]{0} parameter(0)\n", "m.hlo:3: the computation 'main' is not closed"},
      {module("  p = f32[] parameter(0)\n  ROOT e = f32[] exponential(p)\n"), "a scalar parameter"},
      {module("  p = f32[2,3]{1,0} parameter(0)\n  q = f32[4,3]{1,0} parameter(1)\n"
              "  ROOT d = f32[2,4]{1,0} dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"),
       "contracting sizes differ"},
  };
  for (const Case& c : cases) {
    auto h = import_hlo(c.text, "m.hlo");
    ASSERT_FALSE(h.ok()) << c.text;
    EXPECT_NE(h.status().message().find(c.want), std::string::npos) << h.status().message();
  }
}

TEST(HloImport, ConstantsFoldIntoScalesOrBecomeBoundInputs) {
  auto h = import_hlo(module("  p = f32[4]{0} parameter(0)\n  c = f32[] constant(0.125)\n"
                             "  b = f32[4]{0} broadcast(c), dimensions={}\n"
                             "  m = f32[4]{0} multiply(p, b)\n  e = f32[] constant(1e-06)\n"
                             "  f = f32[4]{0} broadcast(e), dimensions={}\n"
                             "  ROOT a = f32[4]{0} add(m, f)\n"),
                      "m.hlo");
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_NE(h->text.find("scale(p, factor=1/8)"), std::string::npos) << h->text;
  ASSERT_EQ(h->constants.size(), 1u);
  EXPECT_EQ(h->constants.begin()->second, 1e-06);
  EXPECT_NE(h->text.find("input " + h->constants.begin()->first + " : f32[1]"), std::string::npos) << h->text;
}

}  // namespace
}  // namespace mugraph::ir
