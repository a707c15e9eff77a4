#include "verify/mutate_lines.h"

#include <sstream>

namespace mugraph::verify::lines {
namespace {

Line parse_line(const std::string& text) {
  Line l;
  const size_t indent = text.find_first_not_of(' ');
  l.depth = static_cast<int>(indent / 2);
  std::string body = text.substr(indent);
  if (const size_t hash = body.find('#'); hash != std::string::npos) {
    l.type = trim(body.substr(hash + 1));
    body = trim(body.substr(0, hash));
  }
  if (body.rfind("input ", 0) == 0 || body == "}") {
    l.op = body == "}" ? "}" : "input";
    l.raw = body;
    return l;
  }
  const size_t paren = body.find('(');
  if (body.rfind("output ", 0) == 0 && paren == std::string::npos) {
    l.op = "output";
    l.args = split_top(body.substr(7));
    return l;
  }
  const size_t eq = body.find(" = ");
  size_t start = 0;
  if (eq != std::string::npos && eq < paren) l.lhs = body.substr(0, eq), start = eq + 3;
  l.op = trim(body.substr(start, paren - start));
  l.args = split_top(body.substr(paren + 1, body.rfind(')') - paren - 1));
  l.opens = body.back() == '{';
  return l;
}

std::set<std::string> all_names(const Lines& ls) {
  std::set<std::string> out;
  for (const Line& l : ls) {
    for (const std::string& n : split_top(l.lhs)) out.insert(n);
    if (l.op == "input") out.insert(l.raw.substr(6, l.raw.find(" : ") - 6));
  }
  return out;
}

}  // namespace

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// Splits at the commas outside brackets: "a, imap={x:0, y:1}" -> {"a", "imap={x:0, y:1}"}.
std::vector<std::string> split_top(std::string_view s) {
  std::vector<std::string> out;
  int nest = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    const char c = i < s.size() ? s[i] : ',';
    if (c == '[' || c == '{' || c == '(') ++nest;
    if (c == ']' || c == '}' || c == ')') --nest;
    if (c != ',' || nest != 0) continue;
    if (std::string a = trim(s.substr(start, i - start)); !a.empty()) out.push_back(a);
    start = i + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

Lines parse_lines(const std::string& text) {
  Lines out;
  std::istringstream in(text);
  for (std::string s; std::getline(in, s);)
    if (s.find_first_not_of(' ') != std::string::npos) out.push_back(parse_line(s));
  return out;
}

std::string render(const Line& l) {
  std::string out(static_cast<size_t>(2 * l.depth), ' ');
  if (!l.raw.empty()) return out + l.raw;
  if (l.op == "output") return out + "output " + join(l.args);
  if (!l.lhs.empty()) out += l.lhs + " = ";
  return out + l.op + "(" + join(l.args) + ")" + (l.opens ? " {" : "");
}

std::string render(const Lines& ls) {
  std::string out;
  for (const Line& l : ls) out += render(l) + "\n";
  return out;
}

// Per line, the index of the header line that opens its scope (-1: the kernel graph). A header
// belongs to the outer scope, its closing "}" to the inner one.
std::vector<int> scopes(const Lines& ls) {
  std::vector<int> s(ls.size()), stack{-1};
  for (size_t i = 0; i < ls.size(); ++i) {
    s[i] = stack.back();
    if (ls[i].op == "}") stack.pop_back();
    if (ls[i].opens) stack.push_back(static_cast<int>(i));
  }
  return s;
}

int close_of(const Lines& ls, const std::vector<int>& sc, int h) {
  for (size_t j = static_cast<size_t>(h) + 1; j < ls.size(); ++j)
    if (ls[j].op == "}" && sc[j] == h) return static_cast<int>(j);
  return static_cast<int>(ls.size()) - 1;
}

bool is_attr(const std::string& a) { return a.find('=') != std::string::npos; }

std::vector<int> operand_positions(const Line& l) {
  std::vector<int> out;
  for (size_t k = 0; k < l.args.size(); ++k)
    if (!is_attr(l.args[k])) out.push_back(static_cast<int>(k));
  return out;
}

// The value of attribute `key` ("forloop"), or "" when absent.
std::string attr(const Line& l, const std::string& key) {
  for (const std::string& a : l.args)
    if (a.rfind(key + "=", 0) == 0) return a.substr(key.size() + 1);
  return "";
}
void set_attr(Line& l, const std::string& key, const std::string& value) {
  for (std::string& a : l.args)
    if (a.rfind(key + "=", 0) == 0) a = key + "=" + value;
}

bool single_lhs(const Line& l) { return !l.lhs.empty() && l.lhs.find(',') == std::string::npos; }

// A statement computing one tensor from operands: an op of the op table at any level.
bool is_compute(const Line& l) {
  static const std::set<std::string> kOther = {"input",         "output",       "}",
                                               "graph_defined", "thread_graph", "input_iterator",
                                               "accumulator",   "output_saver"};
  return single_lhs(l) && !l.opens && !kOther.count(l.op) && !operand_positions(l).empty();
}

// Splits "f16[2, 8], f16[2, 1]" into its types.
std::vector<std::string> split_types(const std::string& t) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at = t.find("], "); at != std::string::npos; at = t.find("], ", start)) {
    out.push_back(t.substr(start, at + 1 - start));
    start = at + 3;
  }
  out.push_back(t.substr(start));
  return out;
}

// The tensors a statement at line i may read: earlier definitions of its scope (kernel inputs,
// outputs of earlier statements) and, in a thread graph, the thread inputs.
std::vector<Named> visible(const Lines& ls, const std::vector<int>& sc, int i) {
  const int h = sc[static_cast<size_t>(i)];
  std::vector<Named> out;
  if (h >= 0 && ls[static_cast<size_t>(h)].op == "thread_graph") {
    const std::vector<Named> outer = visible(ls, sc, h);
    for (const std::string& a : ls[static_cast<size_t>(h)].args)
      for (const Named& n : outer)
        if (n.name == a) out.push_back(n);
  }
  for (int j = h + 1; j < i; ++j) {
    const Line& l = ls[static_cast<size_t>(j)];
    if (sc[static_cast<size_t>(j)] != h) continue;
    if (l.op == "input") {
      const size_t colon = l.raw.find(" : ");
      out.push_back({l.raw.substr(6, colon - 6), l.raw.substr(colon + 3)});
    } else if (!l.lhs.empty()) {
      const std::vector<std::string> names = split_top(l.lhs), types = split_types(l.type);
      for (size_t k = 0; k < names.size(); ++k)
        out.push_back({names[k], k < types.size() ? types[k] : ""});
    }
  }
  return out;
}

std::string type_of(const std::vector<Named>& v, const std::string& name) {
  for (const Named& n : v)
    if (n.name == name) return n.type;
  return "";
}

// The dims of a printed type "f16[4, 64]" (empty when unknown).
std::vector<int64_t> dims_of(const std::string& type) {
  std::vector<int64_t> out;
  const size_t b = type.find('['), e = type.find(']');
  if (b == std::string::npos || e == std::string::npos) return out;
  for (const std::string& d : split_top(type.substr(b + 1, e - b - 1)))
    out.push_back(std::stoll(d));
  return out;
}

std::string shape_text(const std::vector<int64_t>& d) {
  std::string out = "[";
  for (size_t k = 0; k < d.size(); ++k) out += (k ? ", " : "") + std::to_string(d[k]);
  return out + "]";
}

std::string fresh(const Lines& ls, const std::string& base) {
  const std::set<std::string> used = all_names(ls);
  for (int k = 0;; ++k)
    if (!used.count(base + "_m" + std::to_string(k))) return base + "_m" + std::to_string(k);
}

// Renames line i's (single) output n to a fresh name and inserts `n = op(fresh, attrs...)` right
// after the statement (after its closing brace when it opens a graph). Returns the new line.
int insert_after(Lines& ls, int i, const std::string& op, const std::vector<std::string>& attrs,
                 const std::string& type) {
  const std::vector<int> sc = scopes(ls);
  Line& l = ls[static_cast<size_t>(i)];
  const std::string name = l.lhs, renamed = fresh(ls, name);
  Line n;
  n.depth = l.depth;
  n.lhs = name;
  n.op = op;
  n.args = {renamed};
  n.args.insert(n.args.end(), attrs.begin(), attrs.end());
  n.type = type.empty() ? l.type : type;
  l.lhs = renamed;
  const int at = l.opens ? close_of(ls, sc, i) + 1 : i + 1;
  ls.insert(ls.begin() + at, n);
  return at;
}

// Replaces operand `from` by `to` after line i: in i's scope, and in graphs opened there until
// they define `from` themselves. Returns the number of replacements.
int substitute_after(Lines& ls, int i, const std::string& from, const std::string& to) {
  const std::vector<int> sc = scopes(ls);
  const int home = sc[static_cast<size_t>(i)];
  std::set<int> active{home};
  int count = 0;
  for (size_t j = static_cast<size_t>(i) + 1; j < ls.size(); ++j) {
    Line& l = ls[j];
    if (!active.count(sc[j])) continue;
    if (l.op == "}" && sc[j] == home) break;
    for (int k : operand_positions(l))
      if (l.args[static_cast<size_t>(k)] == from) l.args[static_cast<size_t>(k)] = to, ++count;
    if (sc[j] != home && l.lhs == from) active.erase(sc[j]);
    if (l.opens) active.insert(static_cast<int>(j));
  }
  return count;
}

// The operand positions reading `name` after line i in i's own scope (not graph headers, whose
// operands name tensors inside the graph too).
std::vector<std::pair<int, int>> uses_after(const Lines& ls, int i, const std::string& name) {
  const std::vector<int> sc = scopes(ls);
  std::vector<std::pair<int, int>> out;
  for (size_t j = size_t(i) + 1; j < ls.size(); ++j)
    if (sc[j] == sc[size_t(i)] && !ls[j].opens)
      for (int k : operand_positions(ls[j]))
        if (ls[j].args[size_t(k)] == name) out.push_back({int(j), k});
  return out;
}

}  // namespace mugraph::verify::lines
