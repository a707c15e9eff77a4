#include "rewrite/simplify.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

#include "ir/builder.h"
#include "ir/canonical.h"
#include "verify/verifier.h"

namespace mugraph::rewrite {

const std::vector<SimplifyRule>& simplify_rules() {
  static const std::vector<SimplifyRule> rules = {
      {"mul-recip", "mul(?x, reciprocal(?y))", "div(?x, ?y)", "x (1/y) = x / y"},
      {"recip-mul", "mul(reciprocal(?y), ?x)", "div(?x, ?y)", "(1/y) x = x / y"},
      {"div-div", "div(div(?x, ?y), ?z)", "div(?x, mul(?y, ?z))", "(x/y)/z = x/(yz)"},
      {"mul-div", "mul(?x, div(?y, ?z))", "div(mul(?x, ?y), ?z)", "x (y/z) = (xy)/z"},
      {"div-matmul", "div(matmul(?x, ?w), ?d)", "matmul(div(?x, ?d), ?w)",
       "(x W)/d = (x/d) W for a row factor d"},
      {"matmul-div", "matmul(div(?x, ?d), ?w)", "div(matmul(?x, ?w), ?d)",
       "(x/d) W = (x W)/d for a row factor d"},
      {"div-recip", "div(?x, reciprocal(?y))", "mul(?x, ?y)", "x / (1/y) = x y"},
      {"recip-div", "reciprocal(div(?x, ?y))", "div(?y, ?x)", "1 / (x/y) = y / x"},
  };
  return rules;
}

namespace {

// A pattern: a ?variable or op(args).
struct Pat {
  int var = -1;  // >= 0: a variable
  ir::OpKind op = ir::OpKind::kAdd;
  std::vector<Pat> args;
};

struct Parser {
  std::string_view s;
  size_t i = 0;
  std::map<std::string, int>& vars;
  bool may_add;

  void skip() {
    while (i < s.size() && s[i] == ' ') ++i;
  }
  std::string word() {
    skip();
    size_t b = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    return std::string(s.substr(b, i - b));
  }
  Result<Pat> parse() {
    skip();
    if (i < s.size() && s[i] == '?') {
      ++i;
      const std::string v = word();
      auto it = vars.find(v);
      if (it == vars.end()) {
        if (!may_add) return error("right side uses ?", v, ", which the left side does not bind");
        it = vars.emplace(v, static_cast<int>(vars.size())).first;
      }
      return Pat{it->second, {}, {}};
    }
    const std::string name = word();
    const auto op = ir::parse_op(name);
    if (!op) return error("unknown op '", name, "'");
    skip();
    if (i >= s.size() || s[i] != '(') return error("expected '(' after ", name);
    ++i;
    Pat p{-1, *op, {}};
    while (true) {
      MG_ASSIGN_OR_RETURN(Pat a, parse());
      p.args.push_back(std::move(a));
      skip();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == ')') {
        ++i;
        break;
      }
      return error("expected ',' or ')' at ", i);
    }
    if (static_cast<int>(p.args.size()) != ir::op_info(*op).arity)
      return error(name, " takes ", ir::op_info(*op).arity, " inputs, the pattern gives ", p.args.size());
    return p;
  }
};

struct Compiled {
  const SimplifyRule* rule;
  Pat lhs, rhs;
  int vars = 0;
};

Result<std::vector<Compiled>> compiled_rules() {
  std::vector<Compiled> out;
  for (const SimplifyRule& r : simplify_rules()) {
    std::map<std::string, int> vars;
    Parser l{r.lhs, 0, vars, true};
    auto lhs = l.parse();
    if (!lhs.ok()) return error("simplify rule ", r.name, ": ", lhs.status().message());
    Parser rp{r.rhs, 0, vars, false};
    auto rhs = rp.parse();
    if (!rhs.ok()) return error("simplify rule ", r.name, ": ", rhs.status().message());
    out.push_back({&r, std::move(*lhs), std::move(*rhs), static_cast<int>(vars.size())});
  }
  return out;
}

struct Matcher {
  const ir::KernelGraph& g;
  const std::vector<int>& producer;
  std::vector<ir::TensorId> bound;
  std::vector<int> ops;

  bool match(const Pat& p, ir::TensorId t) {
    if (p.var >= 0) {
      ir::TensorId& b = bound[static_cast<size_t>(p.var)];
      if (b >= 0 && b != t) return false;
      b = t;
      return true;
    }
    const int i = producer[static_cast<size_t>(t)];
    if (i < 0) return false;
    const ir::KernelOp& op = g.ops[static_cast<size_t>(i)];
    if (op.graph_defined || op.op != p.op || !(op.attrs == ir::OpAttrs{})) return false;
    if (op.inputs.size() != p.args.size()) return false;
    ops.push_back(i);
    for (size_t k = 0; k < p.args.size(); ++k)
      if (!match(p.args[k], op.inputs[k])) return false;
    return true;
  }
};

Result<ir::TensorId> build(ir::KernelBuilder& kb, const Pat& p, const std::vector<ir::TensorId>& vars) {
  if (p.var >= 0) return vars[static_cast<size_t>(p.var)];
  std::vector<ir::TensorId> ins;
  for (const Pat& a : p.args) {
    MG_ASSIGN_OR_RETURN(ir::TensorId t, build(kb, a, vars));
    ins.push_back(t);
  }
  return kb.op(p.op, ins);
}

// The right side on the region's inputs, or nothing when it does not build to the root's type.
std::optional<ir::KernelGraph> replacement(const Region& r, const Compiled& c,
                                           const std::vector<ir::TensorId>& bound) {
  ir::KernelBuilder kb;
  std::map<ir::TensorId, ir::TensorId> id;
  const ir::KernelGraph& p = r.program;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const ir::Tensor& t = p.tensor(p.inputs[i]);
    auto made = kb.input(t.name, t.type, p.input_scale(i));
    if (!made.ok()) return std::nullopt;
    id[r.inputs[i]] = *made;
  }
  std::vector<ir::TensorId> vars;
  for (ir::TensorId t : bound) vars.push_back(id.at(t));
  auto out = build(kb, c.rhs, vars);
  if (!out.ok() || !(kb.graph().tensor(*out).type == p.tensor(p.outputs[0]).type)) return std::nullopt;
  if (!kb.output(*out).ok()) return std::nullopt;
  auto g = std::move(kb).finish();
  if (!g.ok()) return std::nullopt;
  return std::move(*g);
}

}  // namespace

Result<std::vector<AltNode>> simplify_alternatives(const ir::KernelGraph& g, SimplifyProofs* proofs) {
  MG_ASSIGN_OR_RETURN(std::vector<Compiled> rules, compiled_rules());
  std::vector<int> producer(g.tensors.size(), -1), uses(g.tensors.size(), 0);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    for (ir::TensorId t : g.ops[i].outputs) producer[static_cast<size_t>(t)] = static_cast<int>(i);
    for (ir::TensorId t : g.ops[i].inputs) ++uses[static_cast<size_t>(t)];
  }
  for (ir::TensorId t : g.outputs) uses[static_cast<size_t>(t)] += 1 << 20;  // never internal
  std::vector<AltNode> nodes;
  for (size_t root = 0; root < g.ops.size(); ++root) {
    if (g.ops[root].graph_defined) continue;
    for (const Compiled& c : rules) {
      Matcher m{g, producer, std::vector<ir::TensorId>(static_cast<size_t>(c.vars), -1), {}};
      if (!m.match(c.lhs, g.ops[root].outputs[0])) continue;
      std::sort(m.ops.begin(), m.ops.end());
      if (std::adjacent_find(m.ops.begin(), m.ops.end()) != m.ops.end()) continue;
      bool internal_ok = true;
      for (int i : m.ops)
        if (i != static_cast<int>(root) && uses[static_cast<size_t>(g.ops[static_cast<size_t>(i)].outputs[0])] != 1)
          internal_ok = false;
      if (!internal_ok || !is_convex(g, m.ops)) continue;
      MG_ASSIGN_OR_RETURN(Region r, make_region(g, m.ops));
      if (r.outputs.size() != 1) continue;
      std::optional<ir::KernelGraph> rep = replacement(r, c, m.bound);
      if (!rep) continue;
      const std::pair<uint64_t, uint64_t> key{ir::canonical_hash(r.program), ir::canonical_hash(*rep)};
      std::string verdict;
      if (proofs && proofs->count(key)) {
        verdict = proofs->at(key);
      } else {
        verify::VerifyOptions vo;
        vo.mode = verify::Mode::kCertify;
        const verify::Verdict v = verify::check(r.program, *rep, vo);
        verdict = v.kind == verify::VerdictKind::kVerified ? "VERIFIED (certify): " + v.summary : "";
        if (proofs) (*proofs)[key] = verdict;
      }
      if (verdict.empty()) continue;
      nodes.push_back({"simplify", std::move(r), {{std::string(c.rule->name), std::move(*rep), verdict, 0}}});
    }
  }
  return nodes;
}

}  // namespace mugraph::rewrite
