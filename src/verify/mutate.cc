#include "verify/mutate.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ir/text.h"
#include "verify/finite_field.h"
#include "verify/interface.h"
#include "verify/mutate_lines.h"

namespace mugraph::verify {
namespace {

using namespace lines;

// ---- Random choices ----------------------------------------------------------------------------

bool chance(Rng& rng, double p) { return rng.uniform01() < p; }
template <class T> const T& pick(Rng& rng, const std::vector<T>& v) {
  MG_CHECK(!v.empty(), "pick from an empty list");
  return v[static_cast<size_t>(rng.below(v.size()))];
}
int randint(Rng& rng, int n) { return static_cast<int>(rng.below(static_cast<uint64_t>(n))); }

std::string where(int i) { return " (line " + std::to_string(i + 1) + ")"; }

// ---- Constants ---------------------------------------------------------------------------------

struct Frac {
  int64_t num = 1, den = 1;
};

constexpr int64_t kQ = static_cast<int64_t>(kDefaultQ);
constexpr int64_t kP = static_cast<int64_t>(kDefaultP);
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// Edge values for numerators and denominators: the field's moduli and their neighbours (a
// constant that vanishes mod p or mod q, or aliases another there), the int64 extremes, and
// ordinary small values.
const std::vector<int64_t> kEdgeNums = {
    0, 1, -1, 2, 3, -7, kQ, kQ + 1, 2 * kQ, kP, kP - 1, int64_t{1} << 62, kMax, kMin};
const std::vector<int64_t> kEdgeDens = {
    1, 2, 3, 64, int64_t{1} << 40, kQ, kQ + 1, kP, kP + 1, int64_t{1} << 62, kMax};

std::optional<Frac> make_frac(__int128 num, __int128 den) {
  if (den <= 0 || num < kMin || num > kMax || den > kMax) return std::nullopt;
  return Frac{static_cast<int64_t>(num), static_cast<int64_t>(den)};
}

std::optional<Frac> parse_factor(const std::string& v) {
  try {
    const size_t slash = v.find('/');
    if (slash == std::string::npos) return Frac{std::stoll(v), 1};
    return Frac{std::stoll(v.substr(0, slash)), std::stoll(v.substr(slash + 1))};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string factor_text(const Frac& f) {
  return f.den == 1 ? std::to_string(f.num) : std::to_string(f.num) + "/" + std::to_string(f.den);
}

Frac edge_factor(Rng& rng) { return {pick(rng, kEdgeNums), pick(rng, kEdgeDens)}; }

// Another value for a factor: nearby, the same value written differently, an edge value, or an
// alias (multiplied by q + 1 or p + 1, which is 1 mod q or mod p: equal there when the other
// field sees 0).
std::optional<Frac> changed_factor(const Frac& f, Rng& rng) {
  const __int128 n = f.num, d = f.den;
  switch (randint(rng, 9)) {
    case 0: return make_frac(-n, d);
    case 1: return make_frac(2 * n, d);
    case 2: return make_frac(n, 2 * d);
    case 3: return make_frac(n + 1, d);
    case 4: return make_frac(n, d + 1);
    case 5: {
      const int k = pick(rng, std::vector<int>{2, 3, 7});
      return make_frac(k * n, k * d);
    }
    case 6: return edge_factor(rng);
    case 7: return make_frac(n, d * (chance(rng, 0.5) ? kQ + 1 : kP + 1));
    default: return Frac{randint(rng, 17) - 8, 1 + randint(rng, 8)};
  }
}

Frac inserted_factor(Rng& rng) {
  static const std::vector<Frac> kPlain = {{1, 1}, {-1, 1}, {2, 1}, {1, 2}, {3, 4}, {1, 1}};
  return chance(rng, 0.7) ? pick(rng, kPlain) : edge_factor(rng);
}

bool can_insert_after(const Line& l) {
  return single_lhs(l) && l.op != "input" && l.op != "output" && l.op != "output_saver";
}

bool mutate_constant(Lines& ls, Rng& rng, std::string& what) {
  std::vector<std::pair<int, int>> factors;
  std::vector<int> inserts;
  for (size_t i = 0; i < ls.size(); ++i) {
    for (size_t k = 0; k < ls[i].args.size(); ++k)
      if (ls[i].args[k].rfind("factor=", 0) == 0) factors.push_back({int(i), int(k)});
    if (can_insert_after(ls[i])) inserts.push_back(static_cast<int>(i));
  }
  if (!factors.empty() && (inserts.empty() || chance(rng, 0.6))) {
    const auto [i, k] = pick(rng, factors);
    std::string& arg = ls[static_cast<size_t>(i)].args[static_cast<size_t>(k)];
    const auto old = parse_factor(arg.substr(7));
    const auto now = old ? changed_factor(*old, rng) : std::nullopt;
    if (!now) return false;
    what = arg + " -> factor=" + factor_text(*now) + where(i);
    arg = "factor=" + factor_text(*now);
    return true;
  }
  if (inserts.empty()) return false;
  const int i = pick(rng, inserts);
  const Frac c = inserted_factor(rng);
  const std::string name = ls[static_cast<size_t>(i)].lhs;
  const int at = insert_after(ls, i, "scale", {"factor=" + factor_text(c)});
  what = "scale(" + name + ", factor=" + factor_text(c) + ")" + where(i);
  const auto inverse =
      c.num < 0 ? make_frac(-__int128{c.den}, -__int128{c.num}) : make_frac(c.den, c.num);
  if (inverse && chance(rng, 0.4)) {
    insert_after(ls, at, "scale", {"factor=" + factor_text(*inverse)});
    what += " then factor=" + factor_text(*inverse);
  }
  return true;
}

// ---- Operand order, operands, op kinds ---------------------------------------------------------

bool mutate_operand_order(Lines& ls, Rng& rng, std::string& what) {
  // Weights: the order-sensitive ops the issue names first; add/mul/graph-defined inputs swap
  // into equivalent programs (controls for false rejections).
  static const std::vector<std::pair<std::string, int>> kWeight = {
      {"sub", 3},           {"div", 3}, {"matmul", 3}, {"concat", 2},
      {"concat_matmul", 2}, {"add", 1}, {"mul", 1},    {"graph_defined", 1}};
  std::vector<int> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    for (const auto& [op, w] : kWeight)
      if (ls[i].op == op && operand_positions(ls[i]).size() >= 2)
        sites.insert(sites.end(), static_cast<size_t>(w), static_cast<int>(i));
  if (sites.empty()) return false;
  const int i = pick(rng, sites);
  Line& l = ls[static_cast<size_t>(i)];
  const std::string before = render(l);
  const std::vector<int> ops = operand_positions(l);
  auto swap = [&](int a, int b) {
    std::swap(l.args[size_t(ops[size_t(a)])], l.args[size_t(ops[size_t(b)])]);
  };
  if (l.op == "concat_matmul") {
    const int v = randint(rng, 3);
    if (v != 1) swap(0, 1);
    if (v != 2) swap(2, 3);
  } else if (l.op == "graph_defined") {
    const int a = randint(rng, int(ops.size()));
    swap(a, (a + 1 + randint(rng, int(ops.size()) - 1)) % int(ops.size()));
  } else {
    swap(0, 1);
  }
  what = trim(before) + " -> " + trim(render(l)) + where(i);
  return true;
}

bool mutate_operand(Lines& ls, Rng& rng, std::string& what) {
  static const std::set<std::string> kSkip = {"graph_defined", "input_iterator", "thread_graph"};
  const std::vector<int> sc = scopes(ls);
  std::vector<std::pair<int, int>> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    if (!kSkip.count(ls[i].op))
      for (int k : operand_positions(ls[i])) sites.push_back({int(i), k});
  if (sites.empty()) return false;
  const auto [i, k] = pick(rng, sites);
  std::string& arg = ls[static_cast<size_t>(i)].args[static_cast<size_t>(k)];
  const std::vector<Named> names = visible(ls, sc, i);
  const std::string type = type_of(names, arg);
  std::vector<std::string> same, other;
  for (const Named& n : names)
    if (n.name != arg) (n.type == type ? same : other).push_back(n.name);
  const auto& from = !same.empty() && (other.empty() || chance(rng, 0.75)) ? same : other;
  if (from.empty()) return false;
  const std::string now = pick(rng, from);
  what = "operand " + arg + " -> " + now + " in " + trim(render(ls[size_t(i)])) + where(i);
  arg = now;
  return true;
}

bool mutate_op_kind(Lines& ls, Rng& rng, std::string& what) {
  static const std::vector<std::string> kUnary = {"exp", "square",     "sqrt", "silu",
                                                  "neg", "reciprocal", "relu", "gelu"};
  static const std::vector<std::string> kBinary = {"add", "sub", "mul", "div"};
  auto in = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  std::vector<int> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    if (in(kUnary, ls[i].op) || in(kBinary, ls[i].op)) sites.push_back(static_cast<int>(i));
  if (sites.empty()) return false;
  const int i = pick(rng, sites);
  Line& l = ls[static_cast<size_t>(i)];
  const auto& set = in(kUnary, l.op) ? kUnary : kBinary;
  std::string now = l.op;
  while (now == l.op) now = pick(rng, set);
  what = l.op + " -> " + now + " in " + trim(render(l)) + where(i);
  l.op = now;
  return true;
}

// ---- Maps, accumulators, loops -----------------------------------------------------------------

std::array<int, 3> parse_map(const std::string& v) {
  std::array<int, 3> m{ir::kReplica, ir::kReplica, ir::kReplica};
  for (const std::string& e : split_top(v.substr(1, v.size() - 2))) {
    const int g = e[0] - 'x';
    const std::string d = trim(e.substr(e.find(':') + 1));
    if (g >= 0 && g < 3) m[static_cast<size_t>(g)] = d == "phi" ? ir::kReplica : std::stoi(d);
  }
  return m;
}

std::string map_text(const std::array<int, 3>& m) {
  std::vector<std::string> parts;
  for (int g = 0; g < 3; ++g)
    if (m[size_t(g)] != ir::kReplica)
      parts.push_back(std::string(ir::kGridDimNames[g]) + ":" + ir::map_target_name(m[size_t(g)]));
  return "{" + join(parts) + "}";
}

int parse_dim(const std::string& v) { return v == "phi" ? ir::kReplica : std::stoi(v); }

// A data dim or phi other than `now`, for a tensor of rank `rank`.
int other_dim(Rng& rng, int rank, int now) {
  int d = now;
  while (d == now) d = randint(rng, rank + 1) - 1;
  return d;
}

std::vector<int64_t> grid_of(const Line& header) { return dims_of("t" + attr(header, "grid")); }

std::string mutated_map(const std::string& v, const std::vector<int64_t>& grid, int rank,
                        Rng& rng) {
  std::array<int, 3> m = parse_map(v);
  std::vector<int> split;
  for (int g = 0; g < 3; ++g)
    if (grid[size_t(g)] > 1) split.push_back(g);
  if (chance(rng, 0.3)) {
    const int a = randint(rng, 3), b = (a + 1 + randint(rng, 2)) % 3;
    std::swap(m[size_t(a)], m[size_t(b)]);
  } else {
    const int g = !split.empty() && chance(rng, 0.75) ? pick(rng, split) : randint(rng, 3);
    m[size_t(g)] = other_dim(rng, rank, m[size_t(g)]);
  }
  return map_text(m);
}

bool mutate_map(Lines& ls, Rng& rng, std::string& what) {
  const std::vector<int> sc = scopes(ls);
  std::vector<std::pair<int, std::string>> sites;
  for (size_t i = 0; i < ls.size(); ++i) {
    if (ls[i].op == "input_iterator")
      sites.push_back({int(i), "imap"}), sites.push_back({int(i), "fmap"});
    if (ls[i].op == "output_saver") sites.push_back({int(i), "omap"});
  }
  if (sites.empty()) return false;
  const auto [i, key] = pick(rng, sites);
  Line& l = ls[static_cast<size_t>(i)];
  const int h = sc[static_cast<size_t>(i)];
  const std::string tensor = l.args[0];
  const std::string type = l.op == "input_iterator" ? type_of(visible(ls, sc, h), tensor)
                                                    : type_of(visible(ls, sc, i), tensor);
  const int rank = static_cast<int>(dims_of(type).size());
  if (rank == 0) return false;
  const std::string old = attr(l, key);
  const std::string now = key == "fmap"
                              ? ir::map_target_name(other_dim(rng, rank, parse_dim(old)))
                              : mutated_map(old, grid_of(ls[static_cast<size_t>(h)]), rank, rng);
  if (now == old) return false;
  set_attr(l, key, now);
  what = key + "=" + old + " -> " + key + "=" + now + " in " + trim(render(l)) + where(i);
  return true;
}

bool mutate_accumulator(Lines& ls, Rng& rng, std::string& what) {
  const std::vector<int> sc = scopes(ls);
  std::vector<int> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].op == "accumulator" && single_lhs(ls[i])) sites.push_back(static_cast<int>(i));
  if (sites.empty()) return false;
  const int i = pick(rng, sites);
  Line& l = ls[static_cast<size_t>(i)];
  const std::string in_type = type_of(visible(ls, sc, i), l.args[0]);
  const int rank = static_cast<int>(dims_of(in_type).size());
  const std::vector<int64_t> out_dims = dims_of(l.type);
  if (rank == 0) return false;
  const std::string loop = attr(ls[static_cast<size_t>(sc[static_cast<size_t>(i)])], "forloop");
  const int old = parse_dim(attr(l, "fmap")), now = other_dim(rng, rank, old);
  set_attr(l, "fmap", ir::map_target_name(now));
  what = "accumulator " + l.lhs + ": fmap=" + ir::map_target_name(old) + " -> " +
         ir::map_target_name(now) + where(i);
  if (!chance(rng, 2.0 / 3)) return true;
  // Repair the shape: a concatenation has R times the entries of a sum along its dim.
  const std::string d = std::to_string(now == ir::kReplica ? old : now);
  if (old == ir::kReplica)
    insert_after(ls, i, "sum", {"dim=" + d, "group=" + loop});
  else if (now == ir::kReplica)
    insert_after(ls, i, "repeat", {"dim=" + d, "times=" + loop});
  else
    insert_after(ls, i, "reshape", {"shape=" + shape_text(out_dims)});
  what += ", shape repaired by " + ls[static_cast<size_t>(i) + 1].op;
  return true;
}

bool mutate_loop_range(Lines& ls, Rng& rng, std::string& what) {
  const std::vector<int> sc = scopes(ls);
  std::vector<int> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].op == "graph_defined") sites.push_back(static_cast<int>(i));
  if (sites.empty()) return false;
  const int h = pick(rng, sites);
  Line& l = ls[static_cast<size_t>(h)];
  const int64_t r = std::stoll(attr(l, "forloop"));
  std::vector<int64_t> options;
  for (int64_t v : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}, 2 * r, r / 2})
    if (v >= 1 && v != r && (v != r / 2 || r % 2 == 0)) options.push_back(v);
  const int64_t now = pick(rng, options);
  set_attr(l, "forloop", std::to_string(now));
  what = "forloop=" + std::to_string(r) + " -> " + std::to_string(now) + where(h);
  if (!chance(rng, 0.5)) return true;
  for (size_t j = size_t(h) + 1; j < ls.size() && sc[j] >= h; ++j) {
    if (ls[j].op != "sum" || sc[j] != h) continue;
    const int64_t g = std::stoll(attr(ls[j], "group"));
    if ((g * r) % now != 0) continue;
    set_attr(ls[j], "group", std::to_string(g * r / now));
    what += ", " + ls[j].lhs + " group " + std::to_string(g) + " -> " + std::to_string(g * r / now);
  }
  return true;
}

// ---- Dropped and duplicated ops, output order --------------------------------------------------

bool mutate_drop(Lines& ls, Rng& rng, std::string& what) {
  std::vector<int> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    if (is_compute(ls[i]) || (ls[i].op == "accumulator" && single_lhs(ls[i])))
      sites.push_back(static_cast<int>(i));
  if (sites.empty()) return false;
  const int i = pick(rng, sites);
  const Line l = ls[static_cast<size_t>(i)];
  const std::string by = l.args[size_t(pick(rng, operand_positions(l)))];
  const int uses = substitute_after(ls, i, l.lhs, by);
  ls.erase(ls.begin() + i);
  what = "dropped " + trim(render(l)) + ", " + std::to_string(uses) + " uses read " + by + where(i);
  return true;
}

bool mutate_duplicate(Lines& ls, Rng& rng, std::string& what) {
  std::vector<int> sites;
  for (size_t i = 0; i < ls.size(); ++i)
    if (is_compute(ls[i])) sites.push_back(static_cast<int>(i));
  if (sites.empty()) return false;
  const int i = pick(rng, sites);
  const Line l = ls[static_cast<size_t>(i)];
  const int variant = randint(rng, 3);
  if (variant == 0) {  // chained: n = op(op(a, ...), ...)
    const int k = pick(rng, operand_positions(l));
    const int at = insert_after(ls, i, l.op, {});
    Line& n = ls[static_cast<size_t>(at)];
    const std::string inner = n.args[0];
    n.args = l.args;
    n.args[size_t(k)] = inner;
    what = "applied twice: " + trim(render(l)) + ", operand " + std::to_string(k) + where(i);
    return true;
  }
  Line copy = l;
  copy.lhs = fresh(ls, l.lhs);
  const auto uses = uses_after(ls, i, l.lhs);
  if (variant == 1 || uses.empty()) {  // a dead copy
    ls.insert(ls.begin() + i, copy);
    what = "dead copy " + copy.lhs + " of " + trim(render(l)) + where(i);
    return true;
  }
  const auto [j, k] = pick(rng, uses);  // a copy feeding one use
  ls[size_t(j)].args[size_t(k)] = copy.lhs;
  ls.insert(ls.begin() + i + 1, copy);
  what = "copy " + copy.lhs + " of " + trim(render(l)) + " read at line " + std::to_string(j + 1);
  return true;
}

bool mutate_output_order(Lines& ls, Rng& rng, std::string& what) {
  const std::vector<int> sc = scopes(ls);
  // Sites: (line, arg) lists whose entries may be swapped; savers swap whole lines.
  std::vector<std::vector<std::pair<int, int>>> sites;
  std::vector<std::pair<int, int>> kernel_outputs;
  std::map<int, std::vector<std::pair<int, int>>> savers;
  for (size_t i = 0; i < ls.size(); ++i) {
    const Line& l = ls[i];
    if (l.op == "output" && sc[i] < 0)
      for (size_t k = 0; k < l.args.size(); ++k) kernel_outputs.push_back({int(i), int(k)});
    if (l.op == "output" && sc[i] >= 0 && l.args.size() >= 2)
      sites.push_back({{int(i), 0}, {int(i), 1}});
    if (l.op == "output_saver") savers[sc[i]].push_back({int(i), -1});
    if (l.op == "graph_defined" && split_top(l.lhs).size() >= 2) sites.push_back({{int(i), -2}});
  }
  if (kernel_outputs.size() >= 2) sites.push_back(kernel_outputs);
  for (const auto& [h, s] : savers)
    if (s.size() >= 2) sites.push_back(s);
  if (sites.empty()) return false;
  const auto& site = pick(rng, sites);
  if (site.size() == 1) {  // the names of a graph-defined op's outputs
    Line& l = ls[size_t(site[0].first)];
    std::vector<std::string> names = split_top(l.lhs), types = split_types(l.type);
    const int a = randint(rng, int(names.size())), b = (a + 1) % int(names.size());
    std::swap(names[size_t(a)], names[size_t(b)]);
    if (types.size() == names.size()) std::swap(types[size_t(a)], types[size_t(b)]);
    what = "outputs " + l.lhs + " -> " + join(names) + where(site[0].first);
    l.lhs = join(names);
    l.type = join(types);
    return true;
  }
  const int a = randint(rng, int(site.size()));
  const int b = (a + 1 + randint(rng, int(site.size()) - 1)) % int(site.size());
  const auto [la, ka] = site[size_t(a)];
  const auto [lb, kb] = site[size_t(b)];
  if (ka < 0) {
    std::swap(ls[size_t(la)], ls[size_t(lb)]);
    what =
        "savers at lines " + std::to_string(la + 1) + " and " + std::to_string(lb + 1) + " swapped";
  } else {
    std::swap(ls[size_t(la)].args[size_t(ka)], ls[size_t(lb)].args[size_t(kb)]);
    what = "outputs " + ls[size_t(lb)].args[size_t(kb)] + " and " +
           ls[size_t(la)].args[size_t(ka)] + " swapped" + where(la);
  }
  return true;
}

// ---- Trials ------------------------------------------------------------------------------------

std::optional<std::string> canonical(const std::string& text) {
  auto g = ir::parse_graph(text);
  if (!g.ok()) return std::nullopt;
  return ir::print_graph(*g);
}

// Replaces one scale constant that both texts contain by an edge value, in both.
void share_constant(std::string& ref, std::string& cand, Rng& rng,
                    std::vector<std::string>& edits) {
  std::vector<std::string> tokens;
  for (size_t at = ref.find("factor="); at != std::string::npos; at = ref.find("factor=", at + 1))
    tokens.push_back(ref.substr(at, ref.find_first_of(",)", at) - at));
  if (tokens.empty()) return;
  const std::string tok = pick(rng, tokens);
  if (cand.find(tok + ")") == std::string::npos && cand.find(tok + ",") == std::string::npos)
    return;
  const std::string now = "factor=" + factor_text(edge_factor(rng));
  for (std::string* s : {&ref, &cand})
    for (const char* end : {")", ","})
      for (size_t at = s->find(tok + end); at != std::string::npos; at = s->find(tok + end, at + 1))
        s->replace(at, tok.size(), now);
  edits.push_back("ref+cand: " + tok + " -> " + now);
}

Status check_pair(Trial& t) {
  auto ref = ir::parse_graph(t.ref_text);
  if (!ref.ok()) return ref.status().with_context("reference: ");
  auto cand = ir::parse_graph(t.cand_text);
  if (!cand.ok()) return cand.status();
  MG_RETURN_IF_ERROR(ir::check_memory(*cand, kFuzzMemoryLimits));
  MG_RETURN_IF_ERROR(check_same_inputs(*ref, *cand));
  MG_RETURN_IF_ERROR(check_output_shapes(*ref, *cand));
  t.ref = std::move(ref).value();
  t.cand = std::move(cand).value();
  return ok_status();
}

// Tries for a trial: a kind without a place in the chosen seed pair draws another pair, an
// invalid mutant another mutant (most invalid ones are shape errors a parse finds in
// microseconds, while a valid pair costs milliseconds to judge).
constexpr int kSeedAttempts = 64;
constexpr int kValidAttempts = 4;

}  // namespace

std::string_view mutation_name(MutationKind k) {
  switch (k) {
#define MG_MUTATION_NAME(e, name, what)                                                            \
  case MutationKind::e: return name;
    MUGRAPH_MUTATIONS(MG_MUTATION_NAME)
#undef MG_MUTATION_NAME
  }
  return "?";
}

std::string_view mutation_description(MutationKind k) {
  switch (k) {
#define MG_MUTATION_WHAT(e, name, what)                                                            \
  case MutationKind::e: return what;
    MUGRAPH_MUTATIONS(MG_MUTATION_WHAT)
#undef MG_MUTATION_WHAT
  }
  return "?";
}

const std::vector<MutationKind>& all_mutations() {
  static const std::vector<MutationKind> kAll = {
#define MG_MUTATION_LIST(e, name, what) MutationKind::e,
      MUGRAPH_MUTATIONS(MG_MUTATION_LIST)
#undef MG_MUTATION_LIST
  };
  return kAll;
}

Result<std::vector<SeedPair>> load_seed_pairs(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::map<std::string, std::string> texts;  // stem -> canonical text, in name order
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".mu") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    auto g = ir::parse_graph(ss.str());
    if (!g.ok()) return error(e.path().string(), ":", g.status().message());
    texts[e.path().stem().string()] = ir::print_graph(*g);
  }
  if (ec) return error(dir, ": ", ec.message());
  std::vector<SeedPair> out;
  for (const auto& [stem, text] : texts) {
    if (stem.find('.') != std::string::npos) continue;
    for (const auto& [form, base] : texts)
      if (form == stem || form.rfind(stem + ".", 0) == 0)
        out.push_back({stem + " -> " + form, text, base});
  }
  if (out.empty()) return error(dir, ": no seed programs (NAME.mu)");
  return out;
}

std::optional<std::string> mutate_text(const std::string& text, MutationKind k, Rng& rng,
                                       std::string* what) {
  Lines ls = parse_lines(text);
  std::string w;
  bool done = false;
  switch (k) {
    case MutationKind::kConstant: done = mutate_constant(ls, rng, w); break;
    case MutationKind::kOperandOrder: done = mutate_operand_order(ls, rng, w); break;
    case MutationKind::kMap: done = mutate_map(ls, rng, w); break;
    case MutationKind::kAccumulator: done = mutate_accumulator(ls, rng, w); break;
    case MutationKind::kLoopRange: done = mutate_loop_range(ls, rng, w); break;
    case MutationKind::kDropOp: done = mutate_drop(ls, rng, w); break;
    case MutationKind::kDuplicateOp: done = mutate_duplicate(ls, rng, w); break;
    case MutationKind::kOutputOrder: done = mutate_output_order(ls, rng, w); break;
    case MutationKind::kOperand: done = mutate_operand(ls, rng, w); break;
    case MutationKind::kOpKind: done = mutate_op_kind(ls, rng, w); break;
  }
  if (!done) return std::nullopt;
  std::string out = render(ls);
  if (out == render(parse_lines(text))) return std::nullopt;
  if (what) *what = w;
  return out;
}

Trial make_trial(const std::vector<SeedPair>& seeds, MutationKind kind, uint64_t seed,
                 uint64_t index) {
  Trial t;
  t.index = index;
  t.kind = kind;
  Rng rng(Rng(seed).next_u64() + index);
  for (int attempt = 0; attempt < kSeedAttempts; ++attempt) {
    const SeedPair& sp = pick(rng, seeds);
    std::string ref = sp.ref, cand = sp.base, what;
    std::vector<std::string> edits;
    if (chance(rng, kSharedConstantRate)) share_constant(ref, cand, rng, edits);
    const auto m = mutate_text(cand, kind, rng, &what);
    if (!m) continue;
    edits.push_back("cand: " + what);
    cand = *m;
    if (chance(rng, kSecondMutationRate)) {
      const MutationKind k2 = pick(rng, all_mutations());
      const auto c = canonical(cand);
      const auto m2 = c ? mutate_text(*c, k2, rng, &what) : std::nullopt;
      if (m2) cand = *m2, edits.push_back("cand, " + std::string(mutation_name(k2)) + ": " + what);
    }
    t.seed_name = sp.name;
    t.edits = std::move(edits);
    t.ref_text = ref;
    t.cand_text = cand;
    t.status = check_pair(t);
    if (t.status.ok() || ++t.invalid_mutants == kValidAttempts) return t;
  }
  t.no_site = t.invalid_mutants == 0;
  if (t.no_site)
    t.status = error("no seed pair has a place for a ", mutation_name(kind), " mutation");
  return t;
}

}  // namespace mugraph::verify
