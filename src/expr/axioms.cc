#include "expr/axioms.h"

#include <algorithm>

#include "expr/term_syntax.h"

namespace mugraph::expr {
namespace {

struct Row {
  std::string_view name, lhs, rhs, comment;
};

// Table 2, in its order.
constexpr Row kRows[] = {
    {"add-comm", "add(?x, ?y)", "add(?y, ?x)", "x + y = y + x"},
    {"mul-comm", "mul(?x, ?y)", "mul(?y, ?x)", "x * y = y * x"},
    {"add-assoc", "add(?x, add(?y, ?z))", "add(add(?x, ?y), ?z)", "x + (y + z) = (x + y) + z"},
    {"mul-assoc", "mul(?x, mul(?y, ?z))", "mul(mul(?x, ?y), ?z)", "x * (y * z) = (x * y) * z"},
    {"mul-add", "add(mul(?x, ?z), mul(?y, ?z))", "mul(add(?x, ?y), ?z)", "xz + yz = (x + y)z"},
    {"div-add", "add(div(?x, ?z), div(?y, ?z))", "div(add(?x, ?y), ?z)", "x/z + y/z = (x + y)/z"},
    {"mul-div", "mul(?x, div(?y, ?z))", "div(mul(?x, ?y), ?z)", "x (y/z) = (xy)/z"},
    {"div-div", "div(div(?x, ?y), ?z)", "div(?x, mul(?y, ?z))", "(x/y)/z = x/(yz)"},
    {"sum-one", "sum(1, ?x)", "?x", "a sum of one term is the term"},
    {"sum-sum", "sum(?i, sum(?j, ?x))", "sum(?i*?j, ?x)", "sum_i sum_j x = sum_{ij} x"},
    {"sum-add", "sum(?i, add(?x, ?y))", "add(sum(?i, ?x), sum(?i, ?y))", "sum (x + y) = sum x + sum y"},
    {"sum-mul", "sum(?i, mul(?x, ?y))", "mul(sum(?i, ?x), ?y)", "sum (x y) = (sum x) y"},
    {"sum-div", "sum(?i, div(?x, ?y))", "div(sum(?i, ?x), ?y)", "sum (x / y) = (sum x) / y"},
    {"exp-add", "mul(exp(?x), exp(?y))", "exp(add(?x, ?y))", "e^x e^y = e^(x + y)"},
    {"sqrt-mul", "mul(sqrt(?x), sqrt(?y))", "sqrt(mul(?x, ?y))", "sqrt(x) sqrt(y) = sqrt(xy)"},
};

int var_index(std::vector<std::string>& vars, const std::string& name) {
  auto it = std::find(vars.begin(), vars.end(), name);
  if (it != vars.end()) return static_cast<int>(it - vars.begin());
  vars.push_back(name);
  return static_cast<int>(vars.size()) - 1;
}

Result<CountPattern> count_pattern(const TermSyntax& t, std::vector<std::string>& int_vars) {
  CountPattern c;
  const std::string& w = t.word;
  if (t.call) return error("column ", t.column, ": a sum count cannot be a call");
  if (auto star = w.find('*'); star != std::string::npos) {
    const std::string a = w.substr(0, star), b = w.substr(star + 1);
    if (a.size() < 2 || b.size() < 2 || a[0] != '?' || b[0] != '?')
      return error("column ", t.column, ": a count product must be ?a*?b, got '", w, "'");
    c.form = CountPattern::Form::kProduct;
    c.v1 = var_index(int_vars, a);
    c.v2 = var_index(int_vars, b);
  } else if (w[0] == '?') {
    c.form = CountPattern::Form::kVar;
    c.v1 = var_index(int_vars, w);
  } else {
    if (w.find_first_not_of("0123456789") != std::string::npos || w.size() > 15 || std::stoll(w) < 1)
      return error("column ", t.column, ": bad sum count '", w, "'");
    c.literal = std::stoll(w);
  }
  return c;
}

Result<Pattern> from_syntax(const TermSyntax& t, std::vector<std::string>& term_vars,
                            std::vector<std::string>& int_vars) {
  Pattern p;
  if (!t.call) {
    if (t.word[0] == '?') {
      p.is_var = true;
      p.var = var_index(term_vars, t.word);
      return p;
    }
    if (t.word != "one") return error("column ", t.column, ": patterns have no inputs ('", t.word, "')");
    p.kind = ExprKind::kOne;
    return p;
  }
  size_t first = 0;
  if (t.word == "sum") {
    if (t.args.size() != 2) return error("column ", t.column, ": sum takes (count, term)");
    MG_ASSIGN_OR_RETURN(p.count, count_pattern(t.args[0], int_vars));
    first = 1;
  }
  for (size_t i = first; i < t.args.size(); ++i) {
    MG_ASSIGN_OR_RETURN(Pattern a, from_syntax(t.args[i], term_vars, int_vars));
    p.args.push_back(std::move(a));
  }
  if (auto kind = compound_kind(t.word)) {
    if (static_cast<int>(p.args.size()) != kind_arity(*kind))
      return error("column ", t.column, ": ", t.word, " takes ", kind_arity(*kind), " argument(s)");
    p.kind = *kind;
    return p;
  }
  auto op = ir::parse_op(t.word);
  if (!op || !is_opaque_op(*op) || ir::op_info(*op).arity != static_cast<int>(p.args.size()))
    return error("column ", t.column, ": unknown operator '", t.word, "'");
  p.kind = ExprKind::kApply;
  p.op = static_cast<int64_t>(*op);
  return p;
}

void collect_vars(const Pattern& p, std::vector<bool>& terms, std::vector<bool>& ints,
                  bool& product) {
  if (p.is_var) {
    terms[static_cast<size_t>(p.var)] = true;
    return;
  }
  if (p.kind == ExprKind::kSum) {
    if (p.count.form == CountPattern::Form::kProduct) product = true;
    if (p.count.v1 >= 0) ints[static_cast<size_t>(p.count.v1)] = true;
    if (p.count.v2 >= 0) ints[static_cast<size_t>(p.count.v2)] = true;
  }
  for (const Pattern& a : p.args) collect_vars(a, terms, ints, product);
}

}  // namespace

Result<Pattern> parse_pattern(std::string_view text, std::vector<std::string>& term_vars,
                              std::vector<std::string>& int_vars) {
  MG_ASSIGN_OR_RETURN(TermSyntax t, read_term(text));
  return from_syntax(t, term_vars, int_vars);
}

bool usable_as_trigger(const Pattern& p, const Axiom& ax) {
  if (p.is_var) return false;
  std::vector<bool> terms(ax.term_vars.size()), ints(ax.int_vars.size());
  bool product = false;
  collect_vars(p, terms, ints, product);
  return !product && std::all_of(terms.begin(), terms.end(), [](bool b) { return b; }) &&
         std::all_of(ints.begin(), ints.end(), [](bool b) { return b; });
}

const std::vector<Axiom>& equivalence_axioms() {
  static const std::vector<Axiom> kAxioms = [] {
    std::vector<Axiom> out;
    for (const Row& r : kRows) {
      Axiom ax{r.name, r.lhs, r.rhs, r.comment, {}, {}, {}, {}};
      auto l = parse_pattern(r.lhs, ax.term_vars, ax.int_vars);
      MG_CHECK(l.ok(), r.name << ": " << l.status().message());
      auto rr = parse_pattern(r.rhs, ax.term_vars, ax.int_vars);
      MG_CHECK(rr.ok(), r.name << ": " << rr.status().message());
      ax.lhs_pattern = *l;
      ax.rhs_pattern = *rr;
      out.push_back(std::move(ax));
    }
    return out;
  }();
  return kAxioms;
}

}  // namespace mugraph::expr
