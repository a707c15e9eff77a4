#include "ir/hlo_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace mugraph::ir::hlo {

static std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::string strip_percent(std::string s) {
  s = trim(s);
  if (!s.empty() && s[0] == '%') s.erase(0, 1);
  return s;
}

// Splits at `sep` outside (), [], {} and quotes.
std::vector<std::string> split_top(std::string_view s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' && (i == 0 || s[i - 1] != '\\')) quoted = !quoted;
    if (quoted) continue;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  const std::string last = trim(s.substr(start));
  if (!last.empty() || !out.empty()) out.push_back(last);
  return out;
}

// The index of the bracket closing the one at `open`, or npos.
static size_t closing(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++depth;
    if (s[i] == ')' || s[i] == ']' || s[i] == '}')
      if (--depth == 0) return i;
  }
  return std::string_view::npos;
}


Result<Module> parse_module(std::string_view text, const std::string& source) {
  Module m;
  std::istringstream in{std::string(text)};
  std::string raw;
  int line = 0;
  Computation* cur = nullptr;
  auto fail = [&](const std::string& why) {
    return Status::error(source + ":" + std::to_string(line) + ": " + why);
  };
  while (std::getline(in, raw)) {
    ++line;
    std::string s = trim(raw);
    if (const size_t c = s.find("//"); c == 0) continue;
    if (s.empty() || s.rfind("HloModule", 0) == 0) continue;
    if (s == "}") {
      if (cur == nullptr) return fail("'}' outside a computation");
      cur = nullptr;
      continue;
    }
    if (cur == nullptr) {  // "[ENTRY] name [(params) -> type] {"
      if (s.back() != '{') return fail("expected a computation header 'NAME {', got: " + s);
      bool entry = false;
      if (s.rfind("ENTRY ", 0) == 0) entry = true, s = trim(s.substr(6));
      std::string name = s.substr(0, s.find_first_of(" ({"));
      m.comps.push_back(Computation{strip_percent(name), line, {}});
      if (entry) {
        if (m.entry >= 0) return fail("a second ENTRY computation");
        m.entry = static_cast<int>(m.comps.size()) - 1;
      }
      cur = &m.comps.back();
      continue;
    }
    // "[ROOT] name = type opcode(operands), attr=value, ..."
    Instr ins;
    ins.line = line;
    if (s.rfind("ROOT ", 0) == 0) ins.root = true, s = trim(s.substr(5));
    const size_t eq = s.find(" = ");
    if (eq == std::string::npos) return fail("expected 'NAME = TYPE OPCODE(...)', got: " + s);
    ins.name = strip_percent(s.substr(0, eq));
    std::string rest = trim(s.substr(eq + 3));
    size_t type_end = 0;
    if (!rest.empty() && rest[0] == '(') {
      type_end = closing(rest, 0);
      if (type_end == std::string::npos) return fail(ins.name + ": unbalanced tuple type");
      ++type_end;
    } else {
      type_end = rest.find(' ');
    }
    if (type_end == std::string::npos) return fail(ins.name + ": no opcode after the type");
    ins.type = trim(rest.substr(0, type_end));
    rest = trim(rest.substr(type_end));
    const size_t open = rest.find('(');
    if (open == std::string::npos) return fail(ins.name + ": expected OPCODE(...)");
    ins.opcode = trim(rest.substr(0, open));
    const size_t close = closing(rest, open);
    if (close == std::string::npos) return fail(ins.name + ": unbalanced operand list");
    const std::string args = rest.substr(open + 1, close - open - 1);
    if (ins.opcode == "constant") {
      ins.literal = trim(args);
    } else {
      for (const std::string& a : split_top(args, ',')) {
        if (a.empty()) continue;
        // An operand may carry its type before its name ("f32[4]{0} %x").
        const size_t sp = a.find_last_of(' ');
        ins.operands.push_back(strip_percent(sp == std::string::npos ? a : a.substr(sp + 1)));
      }
    }
    std::string tail = trim(rest.substr(close + 1));
    if (!tail.empty() && tail[0] == ',') tail = tail.substr(1);
    for (const std::string& kv : split_top(tail, ',')) {
      if (kv.empty()) continue;
      const size_t e = kv.find('=');
      if (e == std::string::npos) continue;
      ins.attrs[trim(kv.substr(0, e))] = trim(kv.substr(e + 1));
    }
    cur->instrs.push_back(std::move(ins));
  }
  if (cur != nullptr) return fail("the computation '" + cur->name + "' is not closed");
  if (m.comps.empty()) return Status::error(source + ": no computation");
  if (m.entry < 0) m.entry = static_cast<int>(m.comps.size()) - 1;  // XLA's convention
  return m;
}

std::optional<HloType> array_type(const std::string& t) {
  const size_t open = t.find('[');
  if (open == std::string::npos || t[0] == '(') return std::nullopt;
  const size_t close = t.find(']', open);
  if (close == std::string::npos) return std::nullopt;
  HloType h;
  h.dtype = t.substr(0, open);
  for (const std::string& d : split_top(t.substr(open + 1, close - open - 1), ',')) {
    if (d.empty()) continue;
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str(), &end, 10);
    if (end == d.c_str() || *end != '\0' || v < 0) return std::nullopt;
    h.dims.push_back(v);
  }
  return h;
}

// "{1,0}" or "{}" -> ints.
std::optional<std::vector<int64_t>> int_list(const std::string& v) {
  std::string s = trim(v);
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return std::nullopt;
  std::vector<int64_t> out;
  for (const std::string& d : split_top(s.substr(1, s.size() - 2), ',')) {
    if (d.empty()) continue;
    char* end = nullptr;
    const long long x = std::strtoll(d.c_str(), &end, 10);
    if (end == d.c_str() || *end != '\0') return std::nullopt;
    out.push_back(x);
  }
  return out;
}

// The simplest fraction equal to `x` as a double (continued fractions), if one fits in int64.
std::optional<Rational> exact_rational(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  if (x == std::floor(x) && std::fabs(x) < 9e15) return Rational{static_cast<int64_t>(x), 1};
  const double ax = std::fabs(x);
  long double h0 = 0, h1 = 1, k0 = 1, k1 = 0, r = ax;
  for (int i = 0; i < 64; ++i) {
    const long double a = std::floor(r);
    const long double h2 = a * h1 + h0, k2 = a * k1 + k0;
    if (h2 > 9e15L || k2 > 9e15L) break;
    h0 = h1, h1 = h2, k0 = k1, k1 = k2;
    if (static_cast<double>(h1 / k1) == ax)
      return Rational{static_cast<int64_t>(x < 0 ? -h1 : h1), static_cast<int64_t>(k1)};
    if (r - a == 0) break;
    r = 1 / (r - a);
  }
  return std::nullopt;
}

}  // namespace mugraph::ir::hlo
