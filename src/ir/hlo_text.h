// The HLO text format as XLA prints it (JAX's as_hlo_text()): computations of instructions
// with their types, operands and raw attributes, and the small readers hlo_import.cc needs.
// Parsing only: what an instruction means is hlo_import.cc's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"
#include "support/status.h"

namespace mugraph::ir::hlo {

struct Instr {
  int line = 0;
  std::string name, opcode;
  bool root = false;
  std::string type;                   // as written: "f32[4,16]{1,0}", "(f32[2], f32[3])"
  std::vector<std::string> operands;  // names (a constant's literal: `literal`)
  std::string literal;
  std::map<std::string, std::string> attrs;  // raw values
};

struct Computation {
  std::string name;
  int line = 0;
  std::vector<Instr> instrs;
  const Instr* root() const {
    for (const Instr& i : instrs)
      if (i.root) return &i;
    return instrs.empty() ? nullptr : &instrs.back();
  }
};

struct Module {
  std::vector<Computation> comps;
  int entry = -1;
  const Computation* find(const std::string& name) const {
    for (const Computation& c : comps)
      if (c.name == name) return &c;
    return nullptr;
  }
};

struct HloType {
  std::string dtype;
  std::vector<int64_t> dims;
};

// The module's computations; errors name `source` and the line.
Result<Module> parse_module(std::string_view text, const std::string& source);

// Splits at `sep` outside (), [], {} and quotes; parts trimmed.
std::vector<std::string> split_top(std::string_view s, char sep);
// `s` trimmed, without a leading '%' (names may carry one).
std::string strip_percent(std::string s);
// "f32[4,16]{1,0}" -> element type and dims; nullopt for a tuple or a malformed type.
std::optional<HloType> array_type(const std::string& t);
// "{1,0}" or "{}" -> the ints.
std::optional<std::vector<int64_t>> int_list(const std::string& v);
// The simplest fraction equal to `x` as a double, if one fits in int64.
std::optional<Rational> exact_rational(double x);

}  // namespace mugraph::ir::hlo
