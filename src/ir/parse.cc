// Recursive-descent parser for the uGraph text format (grammar in ir/text.h). Syntax is checked
// here; every semantic rule is left to the builders, whose errors get the statement's line:col.
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <map>

#include "ir/builder.h"
#include "ir/composite.h"
#include "ir/lexer.h"
#include "ir/text.h"

namespace mugraph::ir {
namespace {

struct Value {
  enum Kind { kInt, kRational, kList, kMap, kPhi, kName } kind = kInt;
  int64_t i = 0;
  Rational r;
  std::vector<int64_t> list;
  DimMap map;
  std::string name;
};

struct Arg {
  std::string key;  // empty for a positional argument
  Value v;
  const Token* tok;
};

// `lhs... = callee(args...)`
struct Call {
  std::vector<std::string> lhs;
  std::string callee;
  const Token* tok;
  std::vector<std::string> positional;  // names
  std::map<std::string, Arg> kw;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> t) : toks_(std::move(t)) {}
  Result<KernelGraph> program();

 private:
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() { return toks_[std::min(pos_++, toks_.size() - 1)]; }
  bool at_punct(char c, size_t k = 0) const {
    return peek(k).kind == Token::kPunct && peek(k).text[0] == c;
  }
  bool at_ident(std::string_view s) const {
    return peek().kind == Token::kIdent && peek().text == s;
  }
  template <class... A>
  Status err(const Token& t, const A&... a) const {
    return error(t.where(), ": ", a...);
  }
  Status expect_punct(char c, const char* ctx) {
    if (!at_punct(c)) return err(peek(), "expected '", std::string(1, c), "' ", ctx, ", found ",
                                 peek().describe());
    next();
    return ok_status();
  }
  Result<std::string> expect_ident(const char* ctx) {
    if (peek().kind != Token::kIdent)
      return err(peek(), "expected ", ctx, ", found ", peek().describe());
    return next().text;
  }
  Result<int64_t> expect_int(const char* ctx) {
    if (peek().kind != Token::kInt)
      return err(peek(), "expected ", ctx, ", found ", peek().describe());
    return next().value;
  }

  Result<Value> value();
  // A number > 0 after `what=`: a decimal (0.02, 1e-3), an integer or a rational (1/64).
  Result<double> positive_number(const char* what);
  Result<DimMap> map_value();
  Result<std::vector<std::string>> name_list(const char* ctx);
  Result<Call> call(std::vector<std::string> lhs);
  Result<TensorType> tensor_type();
  Status kernel_stmt(KernelBuilder& kb);
  Status graph_defined(KernelBuilder& kb, const Call& c);
  Status composite(KernelBuilder& kb, const Call& c, const CompositeInfo& info);
  Status block_stmt(BlockBuilder& bb, const Call& header, std::map<std::string, int>& iterated);
  Status thread_graph(BlockBuilder& bb, const Call& c);
  Result<OpAttrs> op_attrs(OpKind op, const Call& c) const;
  template <class Builder>
  Result<std::vector<TensorId>> resolve(const Builder& b, const Call& c) const;
  Result<int> map_entry(const Arg& a, const char* what) const;
  // A dim-like integer: must fit in an int (no silent truncation of 2^32 + 1 to 1).
  Result<int> small_int(int64_t v, const Token& t, const char* what) const {
    if (v < -(int64_t{1} << 30) || v > (int64_t{1} << 30)) return err(t, what, " ", v, " is out of range");
    return static_cast<int>(v);
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const Token* first_op_ = nullptr;  // the first kernel op statement, once there is one
};

Result<DimMap> Parser::map_value() {
  DimMap m;
  bool seen[3] = {false, false, false};
  while (!at_punct('}')) {
    const Token& key = peek();
    MG_ASSIGN_OR_RETURN(std::string k, expect_ident("a grid dim x, y or z"));
    const int g = k == "x" ? 0 : k == "y" ? 1 : k == "z" ? 2 : -1;
    if (g < 0) return err(key, "expected a grid dim x, y or z, found '", k, "'");
    if (seen[g]) return err(key, "grid dim ", k, " appears twice in the map");
    seen[g] = true;
    MG_RETURN_IF_ERROR(expect_punct(':', "after grid dim in map"));
    if (at_ident("phi")) {
      next();
    } else {
      const Token& dt = peek();
      MG_ASSIGN_OR_RETURN(int64_t d, expect_int("a data dim or phi"));
      MG_ASSIGN_OR_RETURN(m.to[static_cast<size_t>(g)], small_int(d, dt, "data dim"));
    }
    if (!at_punct(',')) break;
    next();
  }
  MG_RETURN_IF_ERROR(expect_punct('}', "to close the map"));
  return m;
}

Result<double> Parser::positive_number(const char* what) {
  const Token& t = peek();
  double x = 0;
  if (t.kind == Token::kReal) {
    next();
    x = t.real;
  } else if (t.kind == Token::kInt) {
    MG_ASSIGN_OR_RETURN(Value v, value());
    x = v.kind == Value::kRational ? v.r.to_double() : static_cast<double>(v.i);
  } else {
    return err(t, "expected a number after '", what, "=' (0.02, 1/64, 1e-3), found ",
               t.describe());
  }
  if (!(std::isfinite(x) && x > 0)) return err(t, what, " must be a finite number > 0");
  return x;
}

// A decimal literal (0.125, -2.5e-3) as the exact rational it writes (reduced), or an error
// when it needs more than 18 digits or powers of ten beyond 10^18 (write a fraction then).
Result<Rational> exact_decimal(const Token& t) {
  const std::string& s = t.text;
  size_t i = 0;
  const bool neg = i < s.size() && s[i] == '-';
  if (neg) ++i;
  std::string digits;
  int64_t scale = 0;  // value = digits x 10^-scale
  bool frac = false;
  for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; ++i) {
    if (s[i] == '.') {
      frac = true;
      continue;
    }
    digits += s[i];
    scale += frac;
  }
  auto too_long = [&] {
    return error(t.where(), ": '", s, "' is not exact in 64-bit integers: a decimal factor takes at "
                 "most 18 significant digits and powers of ten within 10^-18..10^18");
  };
  if (i < s.size()) {
    const size_t e = i + 1 + (i + 1 < s.size() && s[i + 1] == '+');
    int64_t exp = 0;
    const auto res = std::from_chars(s.data() + e, s.data() + s.size(), exp);
    if (res.ec != std::errc() || res.ptr != s.data() + s.size() || exp > 18 || exp < -18)
      return too_long();
    scale -= exp;
  }
  const size_t first = digits.find_first_not_of('0');
  digits = first == std::string::npos ? "0" : digits.substr(first);
  if (digits.size() > 18 || scale > 18 || scale < -18) return too_long();
  int64_t num = std::stoll(digits), den = 1;
  for (int64_t k = 0; k < scale; ++k) den *= 10;
  for (int64_t k = 0; k < -scale; ++k) {
    if (num > std::numeric_limits<int64_t>::max() / 10) return too_long();
    num *= 10;
  }
  const int64_t g = std::gcd(num, den);
  if (g > 1) num /= g, den /= g;
  return Rational{neg ? -num : num, den};
}

Result<Value> Parser::value() {
  Value v;
  const Token& t = peek();
  if (t.kind == Token::kIdent) {
    next();
    v.kind = t.text == "phi" ? Value::kPhi : Value::kName;
    v.name = t.text;
  } else if (t.kind == Token::kInt) {
    next();
    v.i = t.value;
    if (at_punct('/')) {
      next();
      MG_ASSIGN_OR_RETURN(int64_t den, expect_int("a denominator after '/'"));
      v.kind = Value::kRational;
      v.r = {t.value, den};
    }
  } else if (t.kind == Token::kReal) {  // an exact decimal factor: 0.125, 1e-3
    next();
    MG_ASSIGN_OR_RETURN(v.r, exact_decimal(t));
    v.kind = Value::kRational;
  } else if (at_punct('[')) {
    next();
    v.kind = Value::kList;
    while (!at_punct(']')) {
      MG_ASSIGN_OR_RETURN(int64_t x, expect_int("an integer in the list"));
      v.list.push_back(x);
      if (!at_punct(',')) break;
      next();
    }
    MG_RETURN_IF_ERROR(expect_punct(']', "to close the list"));
  } else if (at_punct('{')) {
    next();
    v.kind = Value::kMap;
    MG_ASSIGN_OR_RETURN(v.map, map_value());
  } else {
    return err(t, "expected a value (name, integer, decimal, list, map or phi), found ", t.describe());
  }
  return v;
}

Result<std::vector<std::string>> Parser::name_list(const char* ctx) {
  std::vector<std::string> names;
  do {
    if (!names.empty()) next();
    MG_ASSIGN_OR_RETURN(std::string n, expect_ident(ctx));
    names.push_back(n);
  } while (at_punct(','));
  return names;
}

Result<Call> Parser::call(std::vector<std::string> lhs) {
  Call c;
  c.lhs = std::move(lhs);
  c.tok = &peek();
  MG_ASSIGN_OR_RETURN(c.callee, expect_ident("an operator name"));
  MG_RETURN_IF_ERROR(expect_punct('(', "after the operator name"));
  while (!at_punct(')')) {
    const Token* tok = &peek();
    if (tok->kind == Token::kIdent && at_punct('=', 1)) {
      next();
      next();
      MG_ASSIGN_OR_RETURN(Value v, value());
      if (c.kw.count(tok->text)) return err(*tok, "attribute '", tok->text, "' given twice");
      c.kw[tok->text] = Arg{tok->text, v, tok};
    } else {
      if (!c.kw.empty()) return err(*tok, "positional argument after attributes");
      MG_ASSIGN_OR_RETURN(std::string n, expect_ident("a tensor name or attr=value"));
      c.positional.push_back(n);
    }
    if (!at_punct(',')) break;
    next();
  }
  MG_RETURN_IF_ERROR(expect_punct(')', "to close the argument list"));
  return c;
}

Result<TensorType> Parser::tensor_type() {
  const Token& t = peek();
  MG_ASSIGN_OR_RETURN(std::string dt, expect_ident("a dtype (f16, bf16, f32)"));
  auto dtype = parse_dtype(dt);
  if (!dtype) return err(t, "unknown dtype '", dt, "' (expected f16, bf16 or f32)");
  if (!at_punct('[')) return err(peek(), "expected '[' before the shape, found ", peek().describe());
  MG_ASSIGN_OR_RETURN(Value v, value());
  if (v.list.empty() || v.list.size() > kMaxRank)
    return err(t, "a tensor has 1 to ", kMaxRank, " dims, got ", v.list.size());
  Shape s;
  s.rank = static_cast<int>(v.list.size());
  for (int i = 0; i < s.rank; ++i) s[i] = v.list[static_cast<size_t>(i)];
  TensorType type = TensorType::make(*dtype, s);
  // `strides = [...]`; `strides = op(...)` is the next statement, an op whose result is named
  // 'strides'.
  if (at_ident("strides") && at_punct('=', 1) && peek(2).kind != Token::kIdent) {
    next();
    MG_RETURN_IF_ERROR(expect_punct('=', "after 'strides'"));
    const Token& st = peek();
    MG_ASSIGN_OR_RETURN(Value sv, value());
    if (sv.kind != Value::kList || static_cast<int>(sv.list.size()) != s.rank)
      return err(st, "strides must be a list of ", s.rank, " integers");
    for (int i = 0; i < s.rank; ++i) type.layout.strides[static_cast<size_t>(i)] = sv.list[static_cast<size_t>(i)];
  }
  return type;
}

Result<OpAttrs> Parser::op_attrs(OpKind op, const Call& c) const {
  const OpInfo& info = op_info(op);
  OpAttrs a;
  struct Spec { unsigned bit; const char* key; Value::Kind kind; };
  static const Spec specs[] = {{kAttrDim, "dim", Value::kInt},
                               {kAttrGroup, "group", Value::kInt},
                               {kAttrTimes, "times", Value::kInt},
                               {kAttrShape, "shape", Value::kList},
                               {kAttrFactor, "factor", Value::kRational},
                               {kAttrPerm, "perm", Value::kList}};
  for (const auto& [key, arg] : c.kw) {
    bool known = false;
    for (const Spec& s : specs) known |= (info.attrs & s.bit) && key == s.key;
    if (!known) return err(*arg.tok, c.callee, " has no attribute '", key, "'");
  }
  for (const Spec& s : specs) {
    if (!(info.attrs & s.bit)) continue;
    auto it = c.kw.find(s.key);
    if (it == c.kw.end()) return err(*c.tok, c.callee, ": missing attribute '", s.key, "'");
    Value v = it->second.v;
    if (s.kind == Value::kRational && v.kind == Value::kInt) v.r = {v.i, 1}, v.kind = s.kind;
    if (v.kind != s.kind) return err(*it->second.tok, "attribute '", s.key, "' has the wrong kind of value");
    if (s.bit == kAttrDim) {
      MG_ASSIGN_OR_RETURN(a.dim, small_int(v.i, *it->second.tok, "dim"));
    }
    if (s.bit == kAttrGroup) a.group = v.i;
    if (s.bit == kAttrTimes) a.times = v.i;
    if (s.bit == kAttrFactor) a.factor = v.r;
    if (s.bit == kAttrShape) {
      if (v.list.empty() || v.list.size() > kMaxRank)
        return err(*it->second.tok, "shape must have 1 to ", kMaxRank, " dims");
      a.shape.rank = static_cast<int>(v.list.size());
      for (int i = 0; i < a.shape.rank; ++i) a.shape[i] = v.list[static_cast<size_t>(i)];
    }
    if (s.bit == kAttrPerm) {
      if (v.list.empty() || v.list.size() > kMaxRank)
        return err(*it->second.tok, "perm must have 1 to ", kMaxRank, " entries");
      a.perm.rank = static_cast<int>(v.list.size());
      for (int i = 0; i < a.perm.rank; ++i) a.perm[i] = v.list[static_cast<size_t>(i)];
    }
  }
  return a;
}

template <class Builder>
Result<std::vector<TensorId>> Parser::resolve(const Builder& b, const Call& c) const {
  std::vector<TensorId> ids;
  for (const std::string& n : c.positional) {
    auto id = b.find(n);
    if (!id) return err(*c.tok, c.callee, ": unknown tensor '", n, "'");
    ids.push_back(*id);
  }
  return ids;
}

Result<int> Parser::map_entry(const Arg& a, const char* what) const {
  if (a.v.kind == Value::kPhi) return kReplica;
  if (a.v.kind != Value::kInt) return err(*a.tok, what, " must be a data dim or phi");
  return small_int(a.v.i, *a.tok, what);
}

Status Parser::thread_graph(BlockBuilder& bb, const Call& c) {
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> ins, resolve(bb, c));
  if (!c.kw.empty()) return err(*c.kw.begin()->second.tok, "thread_graph takes no attributes");
  MG_RETURN_IF_ERROR(expect_punct('{', "to open the thread graph body"));
  ThreadBuilder tb(bb.tensors_of(ins));
  while (!at_ident("output") || at_punct('=', 1)) {  // `output = op(...)` names a result
    if (peek().kind == Token::kEnd || at_punct('}'))
      return err(peek(), "expected 'output' listing the thread graph's outputs");
    const Token& st = peek();
    MG_ASSIGN_OR_RETURN(std::vector<std::string> lhs, name_list("a tensor name"));
    if (lhs.size() != 1) return err(st, "a thread op has exactly one output");
    MG_RETURN_IF_ERROR(expect_punct('=', "after the result name"));
    MG_ASSIGN_OR_RETURN(Call tc, call(lhs));
    auto op = parse_op(tc.callee);
    if (!op) return err(*tc.tok, "unknown operator '", tc.callee, "'");
    MG_ASSIGN_OR_RETURN(std::vector<TensorId> tins, resolve(tb, tc));
    MG_ASSIGN_OR_RETURN(OpAttrs attrs, op_attrs(*op, tc));
    auto r = tb.op(*op, tins, attrs, lhs[0]);
    if (!r.ok()) return err(*tc.tok, r.status().message());
  }
  next();
  const Token& ot = peek();
  MG_ASSIGN_OR_RETURN(std::vector<std::string> outs, name_list("an output name"));
  for (const std::string& n : outs) {
    auto id = tb.find(n);
    if (!id) return err(ot, "thread graph output '", n, "' is not defined");
    MG_RETURN_IF_ERROR(tb.output(*id));
  }
  MG_RETURN_IF_ERROR(expect_punct('}', "to close the thread graph"));
  auto tg = std::move(tb).finish();
  if (!tg.ok()) return err(*c.tok, tg.status().message());
  auto r = bb.thread_graph(ins, *tg, c.lhs);
  return r.ok() ? ok_status() : err(*c.tok, r.status().message());
}

Status Parser::block_stmt(BlockBuilder& bb, const Call& header,
                          std::map<std::string, int>& iterated) {
  const Token& st = peek();
  std::vector<std::string> lhs;
  if (!(at_ident("output_saver") && at_punct('(', 1))) {
    MG_ASSIGN_OR_RETURN(lhs, name_list("a tensor name"));
    MG_RETURN_IF_ERROR(expect_punct('=', "after the result names"));
  }
  MG_ASSIGN_OR_RETURN(Call c, call(lhs));
  if (c.callee == "thread_graph") return thread_graph(bb, c);
  if (lhs.size() > 1) return err(st, c.callee, " has exactly one output");
  auto fail = [&](const Status& s) { return s.ok() ? s : err(*c.tok, s.message()); };
  auto kw = [&](const char* key) -> Result<const Arg*> {
    auto it = c.kw.find(key);
    if (it == c.kw.end()) return err(*c.tok, c.callee, ": missing attribute '", key, "'");
    return &it->second;
  };
  auto expect_shape = [&](size_t n_pos, size_t n_kw) -> Status {
    if (c.positional.size() != n_pos || c.kw.size() != n_kw)
      return err(*c.tok, c.callee, " takes ", n_pos, " tensor(s) and ", n_kw, " attribute(s)");
    return ok_status();
  };
  if (c.callee == "input_iterator") {
    MG_RETURN_IF_ERROR(expect_shape(1, 2));
    const std::string& kname = c.positional[0];
    // The k-th iterator naming a tensor takes its k-th occurrence among the op's inputs.
    int seen = iterated[kname]++, index = -1;
    for (size_t i = 0; i < header.positional.size() && index < 0; ++i)
      if (header.positional[i] == kname && seen-- == 0) index = static_cast<int>(i);
    if (index < 0)
      return err(*c.tok, "input_iterator: '", kname, "' is not an input of this graph_defined op",
                 " (or has no occurrence left to iterate)");
    MG_ASSIGN_OR_RETURN(const Arg* im, kw("imap"));
    MG_ASSIGN_OR_RETURN(const Arg* fm, kw("fmap"));
    if (im->v.kind != Value::kMap) return err(*im->tok, "imap must be a map like {x:0}");
    MG_ASSIGN_OR_RETURN(int f, map_entry(*fm, "fmap"));
    return fail(bb.input_iterator(index, im->v.map, f, lhs[0]).status());
  }
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> ins, resolve(bb, c));
  if (c.callee == "accumulator") {
    MG_RETURN_IF_ERROR(expect_shape(1, 1));
    MG_ASSIGN_OR_RETURN(const Arg* fm, kw("fmap"));
    MG_ASSIGN_OR_RETURN(int f, map_entry(*fm, "fmap"));
    return fail(bb.accumulator(ins[0], f, lhs[0]).status());
  }
  if (c.callee == "output_saver") {
    MG_RETURN_IF_ERROR(expect_shape(1, 1));
    MG_ASSIGN_OR_RETURN(const Arg* om, kw("omap"));
    if (om->v.kind != Value::kMap) return err(*om->tok, "omap must be a map like {x:1}");
    return fail(bb.output_saver(ins[0], om->v.map));
  }
  auto op = parse_op(c.callee);
  if (!op) return err(*c.tok, "unknown block operator '", c.callee, "'");
  MG_ASSIGN_OR_RETURN(OpAttrs attrs, op_attrs(*op, c));
  return fail(bb.op(*op, ins, attrs, lhs[0]).status());
}

Status Parser::graph_defined(KernelBuilder& kb, const Call& c) {
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> ins, resolve(kb, c));
  Dim3 grid;
  int64_t forloop = 1;
  for (const auto& [key, arg] : c.kw) {
    if (key == "grid") {
      if (arg.v.kind != Value::kList || arg.v.list.empty() || arg.v.list.size() > 3)
        return err(*arg.tok, "grid must be a list of 1 to 3 integers, like [128, 1, 1]");
      for (size_t g = 0; g < arg.v.list.size(); ++g) grid.d[g] = arg.v.list[g];
    } else if (key == "forloop") {
      if (arg.v.kind != Value::kInt) return err(*arg.tok, "forloop must be an integer");
      forloop = arg.v.i;
    } else {
      return err(*arg.tok, "graph_defined has no attribute '", key, "' (grid, forloop)");
    }
  }
  std::vector<TensorType> types;
  for (TensorId id : ins) types.push_back(kb.graph().tensor(id).type);
  auto bbr = BlockBuilder::make(types, grid, forloop);
  if (!bbr.ok()) return err(*c.tok, bbr.status().message());
  BlockBuilder bb = std::move(bbr).value();
  MG_RETURN_IF_ERROR(expect_punct('{', "to open the block graph body"));
  std::map<std::string, int> iterated;
  while (!at_punct('}')) {
    if (peek().kind == Token::kEnd) return err(peek(), "expected '}' to close the block graph");
    MG_RETURN_IF_ERROR(block_stmt(bb, c, iterated));
  }
  const Token& close = next();
  auto block = std::move(bb).finish();
  if (!block.ok()) return err(close, block.status().message());
  auto r = kb.graph_defined(ins, *block, c.lhs);
  return r.ok() ? ok_status() : err(*c.tok, r.status().message());
}

Status Parser::composite(KernelBuilder& kb, const Call& c, const CompositeInfo& info) {
  if (c.lhs.size() != 1) return err(*c.tok, c.callee, " has exactly one output");
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> ins, resolve(kb, c));
  int dim = 0;
  for (const auto& [key, arg] : c.kw) {
    if (!(info.takes_dim && key == "dim")) return err(*arg.tok, c.callee, " has no attribute '", key, "'");
    if (arg.v.kind != Value::kInt) return err(*arg.tok, "dim must be an integer");
    MG_ASSIGN_OR_RETURN(dim, small_int(arg.v.i, *arg.tok, "dim"));
  }
  if (info.takes_dim && !c.kw.count("dim")) return err(*c.tok, c.callee, ": missing attribute 'dim'");
  auto r = build_composite(kb, c.callee, ins, dim, c.lhs[0]);
  return r.ok() ? ok_status() : err(*c.tok, r.status().message());
}

Status Parser::kernel_stmt(KernelBuilder& kb) {
  const Token& st = peek();
  if (at_ident("input") && peek(1).kind == Token::kIdent) {
    next();
    MG_ASSIGN_OR_RETURN(std::string name, expect_ident("an input name"));
    // The printer lists inputs first, and tensors are numbered in definition order: a late
    // input would print back as a different graph.
    if (first_op_ != nullptr)
      return err(st, "input '", name, "' follows an op (at ", first_op_->where(),
                 "): inputs must come before ops");
    MG_RETURN_IF_ERROR(expect_punct(':', "after the input name"));
    MG_ASSIGN_OR_RETURN(TensorType type, tensor_type());
    double scale = 0;
    // `scale = 0.02`; `scale = op(...)` is the next statement, an op whose result is named
    // 'scale'.
    if (at_ident("scale") && at_punct('=', 1) && peek(2).kind != Token::kIdent) {
      next();
      next();
      MG_ASSIGN_OR_RETURN(scale, positive_number("scale"));
    }
    auto r = kb.input(name, type, scale);
    return r.ok() ? ok_status() : err(st, r.status().message());
  }
  if (at_ident("output") && peek(1).kind == Token::kIdent) {
    next();
    MG_ASSIGN_OR_RETURN(std::vector<std::string> names, name_list("an output name"));
    for (const std::string& n : names) {
      auto id = kb.find(n);
      if (!id) return err(st, "output '", n, "' is not defined");
      auto s = kb.output(*id);
      if (!s.ok()) return err(st, s.message());
    }
    return ok_status();
  }
  if (first_op_ == nullptr) first_op_ = &st;
  MG_ASSIGN_OR_RETURN(std::vector<std::string> lhs, name_list("a statement (input, output or NAME = op(...))"));
  MG_RETURN_IF_ERROR(expect_punct('=', "after the result names"));
  MG_ASSIGN_OR_RETURN(Call c, call(lhs));
  if (c.callee == "graph_defined") return graph_defined(kb, c);
  if (auto comp = find_composite(c.callee)) return composite(kb, c, *comp);
  auto op = parse_op(c.callee);
  if (!op) return err(*c.tok, "unknown operator '", c.callee, "'");
  if (lhs.size() != 1) return err(st, c.callee, " has exactly one output");
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> ins, resolve(kb, c));
  MG_ASSIGN_OR_RETURN(OpAttrs attrs, op_attrs(*op, c));
  auto r = kb.op(*op, ins, attrs, lhs[0]);
  return r.ok() ? ok_status() : err(*c.tok, r.status().message());
}

Result<KernelGraph> Parser::program() {
  KernelBuilder kb;
  while (peek().kind != Token::kEnd) MG_RETURN_IF_ERROR(kernel_stmt(kb));
  auto g = std::move(kb).finish();
  if (!g.ok()) return err(peek(), g.status().message());
  return g;
}

}  // namespace

Result<KernelGraph> parse_graph(const std::string& text) {
  MG_ASSIGN_OR_RETURN(std::vector<Token> toks, lex(text));
  return Parser(std::move(toks)).program();
}

}  // namespace mugraph::ir
