#include "ir/hlo_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <set>
#include <sstream>

#include "ir/hlo_text.h"
#include "ir/text.h"

namespace mugraph::ir {
namespace {

using hlo::array_type;
using hlo::Computation;
using hlo::exact_rational;
using hlo::HloType;
using hlo::Instr;
using hlo::int_list;
using hlo::Module;
using hlo::split_top;
using hlo::strip_percent;

// ---- import ------------------------------------------------------------------------------------

struct Value {
  enum Kind { kTensor, kConst, kTuple, kRowMax } kind = kTensor;
  std::string name;    // the mugraph tensor (kTensor); the maxed tensor (kRowMax)
  Shape stored;        // the mugraph tensor's shape: `shape` with size-1 dims where broadcast
  std::vector<int64_t> shape;  // the HLO value's shape
  DType dtype = DType::kF32;
  double c = 0;               // kConst
  std::vector<Value> elems;   // kTuple
  // Softmax's max subtraction (see the header): 1 = x - max(x), 2 = exp of that or its sum.
  int shifted = 0;
  int max_id = -1;
  std::vector<int64_t> max_dims;  // kRowMax, and the shifted values'
};

class Importer {
 public:
  Importer(const Module& m, const std::string& source) : m_(m), source_(source) {}

  Result<HloImport> run() {
    const Computation& entry = m_.comps[static_cast<size_t>(m_.entry)];
    // Parameters first, in their number's order: the program's inputs.
    std::vector<const Instr*> params;
    for (const Instr& i : entry.instrs)
      if (i.opcode == "parameter") params.push_back(&i);
    std::map<std::string, Value> env;
    std::vector<std::pair<int64_t, const Instr*>> numbered;
    for (const Instr* p : params) {
      char* end = nullptr;
      const std::string lit = p->operands.empty() ? "" : p->operands[0];
      const long long k = std::strtoll(lit.c_str(), &end, 10);
      if (lit.empty() || *end != '\0') return fail(*p, "parameter needs its number");
      numbered.push_back({k, p});
    }
    std::sort(numbered.begin(), numbered.end());
    for (const auto& [k, p] : numbered) {
      MG_ASSIGN_OR_RETURN(Value v, parameter(*p));
      env[p->name] = v;
      out_.parameters.push_back(v.name);
    }
    MG_ASSIGN_OR_RETURN(Value root, eval(entry, env));
    std::vector<Value> outs = root.kind == Value::kTuple ? root.elems : std::vector<Value>{root};
    const Instr& at = *entry.root();
    std::vector<std::string> names;
    for (Value& o : outs) {
      if (o.kind == Value::kConst) return fail(at, "an output is a constant (mugraph programs output tensors)");
      if (o.kind == Value::kRowMax)
        return fail(at, "an output is a max reduction (mugraph has no max op: a max reduction is imported only as softmax's shift, which is dropped)");
      if (o.kind != Value::kTensor || o.shifted)
        return fail(at, "an output is part of a softmax's max subtraction");
      MG_ASSIGN_OR_RETURN(Value t, materialize(o, at));
      names.push_back(t.name);
    }
    // Only what the outputs need (a reshape folded into a later one leaves its line unused).
    std::set<std::string> live(names.begin(), names.end());
    std::vector<bool> keep(lines_.size(), false);
    for (size_t k = lines_.size(); k-- > 0;) {
      if (!live.count(lines_[k].name)) continue;
      keep[k] = true;
      for (const std::string& d : lines_[k].deps) live.insert(d);
    }
    std::string text;
    for (const std::string& l : inputs_) text += l + "\n";
    for (size_t k = 0; k < lines_.size(); ++k)
      if (keep[k]) text += lines_[k].name + " = " + lines_[k].call + "\n";
    for (const std::string& n : names) text += "output " + n + "\n";
    out_.text = text;
    auto g = parse_graph(text);
    if (!g.ok()) return Status::error(source_ + ": the imported program does not parse (a bug): " + g.status().message() + "\n" + text);
    out_.graph = std::move(g).value();
    return std::move(out_);
  }

 private:
  Status fail(const Instr& i, const std::string& why) const {
    return Status::error(source_ + ":" + std::to_string(i.line) + ": " + i.name + " = " + i.opcode +
                         "(...): " + why);
  }

  std::string fresh(const std::string& hint) {
    std::string s;
    for (char c : hint) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "t_" + s;
    std::string n = s;
    for (int k = 2; used_.count(n); ++k) n = s + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }

  static Shape to_shape(const std::vector<int64_t>& d) {
    Shape s;
    s.rank = static_cast<int>(d.size());
    for (size_t i = 0; i < d.size(); ++i) s[static_cast<int>(i)] = d[i];
    return s;
  }
  static std::string dims_text(const std::vector<int64_t>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "]";
  }

  Result<HloType> type_of(const Instr& i) const {
    auto t = array_type(i.type);
    if (!t) return fail(i, "type '" + i.type + "' is not an array type");
    if (t->dims.size() > static_cast<size_t>(kMaxRank))
      return fail(i, "rank " + std::to_string(t->dims.size()) + " is above mugraph's " + std::to_string(kMaxRank));
    return *t;
  }
  Result<DType> dtype_of(const Instr& i, const std::string& name) const {
    if (auto d = parse_dtype(name)) return *d;
    return fail(i, "element type " + name + " (mugraph holds f32, f16 and bf16)");
  }

  // A tensor value named `name` computed by `line` ("name = op(...)").
  Value tensor(const std::string& name, const std::vector<int64_t>& shape, DType dt) {
    Value v;
    v.name = name;
    v.shape = shape;
    v.stored = to_shape(shape.empty() ? std::vector<int64_t>{1} : shape);
    v.dtype = dt;
    return v;
  }

  // Emits "NAME = OP(ARGS)" with a fresh name; the value has `stored` as its mugraph shape.
  Value emit(const std::string& hint, const std::string& call, const Shape& stored,
             const std::vector<int64_t>& shape, DType dt) {
    const std::string n = fresh(hint);
    Line l{n, call, {}};
    const size_t open = call.find('('), close = call.rfind(')');
    for (const std::string& a : split_top(call.substr(open + 1, close - open - 1), ','))
      if (a.find('=') == std::string::npos) l.deps.push_back(a);
    lines_.push_back(std::move(l));
    Value v;
    v.name = n, v.stored = stored, v.shape = shape, v.dtype = dt;
    return v;
  }

  // `v` reshaped to `want` (mugraph dims): a reshape of a reshape reads the first one's input,
  // and a reshape back to that input's shape is the input itself.
  Value reshape_to(const Value& v, const std::vector<int64_t>& want, const std::string& hint,
                   const std::vector<int64_t>& shape) {
    std::string src = v.name;
    Shape src_shape = v.stored;
    if (auto it = reshaped_.find(v.name); it != reshaped_.end()) src = it->second.first, src_shape = it->second.second;
    Value r;
    if (to_shape(want) == src_shape) {
      r = v;
      r.name = src, r.stored = src_shape;
    } else if (to_shape(want) == v.stored) {
      r = v;
    } else {
      r = emit(hint, "reshape(" + src + ", shape=" + dims_text(want) + ")", to_shape(want), shape, v.dtype);
      reshaped_[r.name] = {src, src_shape};
    }
    r.shape = shape;
    r.shifted = v.shifted, r.max_id = v.max_id, r.max_dims = v.max_dims;
    return r;
  }

  Result<Value> parameter(const Instr& p) {
    MG_ASSIGN_OR_RETURN(HloType t, type_of(p));
    MG_ASSIGN_OR_RETURN(DType dt, dtype_of(p, t.dtype));
    if (t.dims.empty()) return fail(p, "a scalar parameter (mugraph inputs are tensors of rank >= 1)");
    const std::string n = fresh(p.name);
    inputs_.push_back("input " + n + " : " + std::string(dtype_name(dt)) + dims_text(t.dims));
    return tensor(n, t.dims, dt);
  }

  // A constant used as a tensor: a one-element input with its recorded value.
  Value constant_input(double c, DType dt) {
    for (const auto& [name, v] : out_.constants)
      if (v == c && const_types_.at(name) == dt) return tensor(name, {1}, dt);
    const std::string n = fresh("c" + std::to_string(out_.constants.size()));
    inputs_.push_back("input " + n + " : " + std::string(dtype_name(dt)) + "[1]");
    out_.constants[n] = c;
    const_types_[n] = dt;
    Value v = tensor(n, {1}, dt);
    v.shape = {};  // a scalar broadcast anywhere
    return v;
  }

  // `v` with its broadcast dims made real (repeat), shape == its HLO shape (a scalar: [1]).
  Result<Value> materialize(Value v, const Instr& at) {
    if (v.kind == Value::kConst) {
      Value c = constant_input(v.c, v.dtype);
      c.shape = v.shape;
      v = c;
    }
    if (v.kind != Value::kTensor) return fail(at, "expected a tensor operand");
    const Value tags = v;
    const std::vector<int64_t> want = v.shape.empty() ? std::vector<int64_t>{1} : v.shape;
    if (v.stored.rank != static_cast<int>(want.size())) {  // right-aligned, as broadcasting
      if (v.stored.rank > static_cast<int>(want.size())) return fail(at, "an operand of higher rank than its value (a bug)");
      std::vector<int64_t> s(want.size(), 1);
      for (int d = 0; d < v.stored.rank; ++d) s[want.size() - static_cast<size_t>(v.stored.rank) + static_cast<size_t>(d)] = v.stored[d];
      v = reshape_to(v, s, v.name + "_r", v.shape);
    }
    for (int d = 0; d < v.stored.rank; ++d) {
      const int64_t w = want[static_cast<size_t>(d)];
      if (v.stored[d] == w) continue;
      if (v.stored[d] != 1) return fail(at, "an operand whose shape does not broadcast to its value's (a bug)");
      Shape s = v.stored;
      s[d] = w;
      v = emit(v.name + "_b", "repeat(" + v.name + ", dim=" + std::to_string(d) + ", times=" + std::to_string(w) + ")", s, v.shape, v.dtype);
    }
    v.shifted = tags.shifted, v.max_id = tags.max_id, v.max_dims = tags.max_dims;
    return v;
  }

  Result<Value> operand(const Instr& i, size_t k, std::map<std::string, Value>& env) {
    if (k >= i.operands.size()) return fail(i, "expects more operands");
    auto it = env.find(i.operands[k]);
    if (it == env.end()) return fail(i, "operand '" + i.operands[k] + "' is not defined before it");
    return it->second;
  }

  static bool plain(const Value& v) { return v.kind == Value::kTensor && v.shifted == 0; }

  Result<Value> eval(const Computation& comp, std::map<std::string, Value> env) {
    for (const Instr& i : comp.instrs) {
      if (i.opcode == "parameter") {
        if (!env.count(i.name)) return fail(i, "parameter of a computation called without it");
        continue;
      }
      MG_ASSIGN_OR_RETURN(Value v, instruction(i, env));
      env[i.name] = std::move(v);
    }
    const Instr* r = comp.root();
    if (r == nullptr) return Status::error(source_ + ":" + std::to_string(comp.line) + ": computation '" + comp.name + "' is empty");
    return env.at(r->name);
  }

  Result<Value> unary(const Instr& i, const Value& x, const std::string& op) {
    if (!plain(x) && !(op == "exp" && x.shifted == 1))
      return fail(i, "uses a softmax's max-shifted value other than in its normalization");
    Value v = emit(i.name, op + "(" + x.name + ")", x.stored, x.shape, x.dtype);
    if (op == "exp" && x.shifted == 1) v.shifted = 2, v.max_id = x.max_id, v.max_dims = x.max_dims;
    return v;
  }

  Result<Value> scaled(const Instr& i, const Value& x, double c) {
    if (!plain(x)) return fail(i, "scales a softmax's max-shifted value");
    auto r = exact_rational(c);
    if (!r) return fail(i, "the factor " + std::to_string(c) + " is not a ratio of 64-bit integers");
    if (r->den < 0) r->num = -r->num, r->den = -r->den;
    return emit(i.name, "scale(" + x.name + ", factor=" + r->to_string() + ")", x.stored, x.shape, x.dtype);
  }

  Result<Value> binary(const Instr& i, const std::string& op, Value a, Value b) {
    const bool ca = a.kind == Value::kConst, cb = b.kind == Value::kConst;
    const std::vector<int64_t> shape = ca ? b.shape : a.shape;
    if (ca && cb) {
      Value v = a;
      v.c = op == "add" ? a.c + b.c : op == "sub" ? a.c - b.c : op == "mul" ? a.c * b.c : a.c / b.c;
      return v;
    }
    if (op == "mul" && (ca || cb)) return scaled(i, ca ? b : a, ca ? a.c : b.c);
    if (op == "div" && cb) return scaled(i, a, 1.0 / b.c);
    if (op == "div" && ca) {
      if (!plain(b)) return fail(i, "divides by a softmax's max-shifted value");
      Value r = emit(i.name + "_inv", "reciprocal(" + b.name + ")", b.stored, b.shape, b.dtype);
      return a.c == 1.0 ? r : scaled(i, r, a.c);
    }
    if ((op == "add" || op == "sub") && cb && b.c == 0.0) return a;
    if (op == "add" && ca && a.c == 0.0) return b;
    if (op == "sub" && ca && a.c == 0.0) return unary(i, b, "neg");
    if (ca) a = constant_input(a.c, b.dtype);
    if (cb) b = constant_input(b.c, a.dtype);
    if (a.kind != Value::kTensor || b.kind != Value::kTensor) return fail(i, "expects tensor operands");
    // Softmax: exp(x - m) / sum(exp(x - m)) -> exp(x) / sum(exp(x)).
    if (op == "div" && a.shifted == 2 && b.shifted == 2 && a.max_id == b.max_id) {
      Shape s = broadcast_shapes(a.stored, b.stored).value_or(a.stored);
      out_.notes.push_back(source_ + ":" + std::to_string(i.line) + ": " + i.name +
                           ": softmax imported without its max subtraction (exp(x) / sum(exp(x)), "
                           "equal in exact arithmetic; large logits overflow)");
      return emit(i.name, "div(" + a.name + ", " + b.name + ")", s, shape, a.dtype);
    }
    if (!plain(a) || !plain(b)) return fail(i, "uses a softmax's max-shifted value other than in its normalization");
    if (a.dtype != b.dtype) return fail(i, "operands of types " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
    auto s = broadcast_shapes(a.stored, b.stored);
    if (!s) return fail(i, "operand shapes do not broadcast");
    return emit(i.name, op + "(" + a.name + ", " + b.name + ")", *s, shape, a.dtype);
  }

  Result<Value> instruction(const Instr& i, std::map<std::string, Value>& env) {
    const std::string& op = i.opcode;
    auto arg = [&](size_t k) { return operand(i, k, env); };
    if (op == "constant") {
      MG_ASSIGN_OR_RETURN(HloType t, type_of(i));
      if (!t.dims.empty()) return fail(i, "a non-scalar constant (mugraph has no constant tensors)");
      MG_ASSIGN_OR_RETURN(DType dt, dtype_of(i, t.dtype));
      Value v;
      v.kind = Value::kConst;
      v.dtype = dt;
      const std::string lit = i.literal;
      if (lit == "inf") v.c = INFINITY;
      else if (lit == "-inf") v.c = -INFINITY;
      else {
        char* end = nullptr;
        v.c = std::strtod(lit.c_str(), &end);
        if (end == lit.c_str() || *end != '\0') return fail(i, "constant literal '" + lit + "'");
      }
      return v;
    }
    if (op == "tuple") {
      Value v;
      v.kind = Value::kTuple;
      for (size_t k = 0; k < i.operands.size(); ++k) {
        MG_ASSIGN_OR_RETURN(Value e, arg(k));
        v.elems.push_back(e);
      }
      return v;
    }
    if (op == "get-tuple-element") {
      MG_ASSIGN_OR_RETURN(Value t, arg(0));
      auto it = i.attrs.find("index");
      if (t.kind != Value::kTuple || it == i.attrs.end()) return fail(i, "expects a tuple and index=");
      const long long k = std::strtoll(it->second.c_str(), nullptr, 10);
      if (k < 0 || k >= static_cast<long long>(t.elems.size())) return fail(i, "index out of range");
      return t.elems[static_cast<size_t>(k)];
    }
    if (op == "call") {
      auto it = i.attrs.find("to_apply");
      const Computation* c = it == i.attrs.end() ? nullptr : m_.find(strip_percent(it->second));
      if (c == nullptr) return fail(i, "calls an unknown computation");
      if (++depth_ > 64) return fail(i, "calls nest deeper than 64");
      std::map<std::string, Value> inner;
      for (const Instr& p : c->instrs) {
        if (p.opcode != "parameter") continue;
        const long long k = std::strtoll(p.operands.empty() ? "-1" : p.operands[0].c_str(), nullptr, 10);
        if (k < 0 || k >= static_cast<long long>(i.operands.size())) return fail(p, "parameter number out of range of the call");
        MG_ASSIGN_OR_RETURN(Value a, arg(static_cast<size_t>(k)));
        inner[p.name] = a;
      }
      auto r = eval(*c, inner);
      --depth_;
      return r;
    }
    MG_ASSIGN_OR_RETURN(HloType t, type_of(i));
    MG_ASSIGN_OR_RETURN(DType dt, dtype_of(i, t.dtype));
    auto with_shape = [&](Value v) {
      v.shape = t.dims;
      return v;
    };
    static const std::map<std::string, std::string> kBinary = {
        {"add", "add"}, {"subtract", "sub"}, {"multiply", "mul"}, {"divide", "div"}};
    if (auto b = kBinary.find(op); b != kBinary.end()) {
      MG_ASSIGN_OR_RETURN(Value a, arg(0));
      MG_ASSIGN_OR_RETURN(Value c, arg(1));
      if (op == "subtract" && c.kind == Value::kRowMax) {  // x - max(x): softmax's shift
        if (!plain(a) || a.name != c.name) return fail(i, "subtracts a max reduction from another tensor than the one it reduced");
        Value v = a;
        v.shifted = 1, v.max_id = next_max_++, v.max_dims = c.max_dims;
        return with_shape(v);
      }
      if (a.kind == Value::kRowMax || c.kind == Value::kRowMax)
        return fail(i, "uses a max reduction other than as softmax's shift (mugraph has no max)");
      return binary(i, b->second, a, c);
    }
    static const std::map<std::string, std::string> kUnary = {
        {"negate", "neg"}, {"exponential", "exp"}, {"sqrt", "sqrt"}};
    if (auto u = kUnary.find(op); u != kUnary.end()) {
      MG_ASSIGN_OR_RETURN(Value x, arg(0));
      if (x.kind == Value::kConst) {
        x.c = op == "negate" ? -x.c : op == "sqrt" ? std::sqrt(x.c) : std::exp(x.c);
        return x;
      }
      if (x.kind != Value::kTensor) return fail(i, "expects a tensor");
      return unary(i, x, u->second);
    }
    if (op == "rsqrt" || op == "logistic" || op == "tanh") {
      MG_ASSIGN_OR_RETURN(Value x, arg(0));
      if (x.kind != Value::kTensor || !plain(x)) return fail(i, "expects a tensor");
      if (op == "rsqrt") {
        MG_ASSIGN_OR_RETURN(Value s, unary(i, x, "sqrt"));
        return unary(i, s, "reciprocal");
      }
      const Value one = constant_input(1.0, x.dtype);
      Value arg2 = x;
      if (op == "tanh") {
        MG_ASSIGN_OR_RETURN(arg2, scaled(i, x, -2.0));
      } else {
        MG_ASSIGN_OR_RETURN(arg2, unary(i, x, "neg"));
      }
      MG_ASSIGN_OR_RETURN(Value e, unary(i, arg2, "exp"));
      Value den = emit(i.name + "_den", "add(" + one.name + ", " + e.name + ")", e.stored, e.shape, e.dtype);
      if (op == "logistic") return unary(i, den, "reciprocal");
      Value num = emit(i.name + "_num", "sub(" + one.name + ", " + e.name + ")", e.stored, e.shape, e.dtype);
      return emit(i.name, "div(" + num.name + ", " + den.name + ")", e.stored, e.shape, e.dtype);
    }
    if (op == "maximum") {
      MG_ASSIGN_OR_RETURN(Value a, arg(0));
      MG_ASSIGN_OR_RETURN(Value b, arg(1));
      if (a.kind == Value::kConst) std::swap(a, b);
      if (a.kind == Value::kRowMax && b.kind == Value::kConst && b.c == -INFINITY) return a;
      if (a.kind == Value::kTensor && b.kind == Value::kConst && b.c == 0.0) {
        if (!plain(a)) return fail(i, "relu of a softmax's max-shifted value");
        return emit(i.name, "relu(" + a.name + ")", a.stored, a.shape, a.dtype);
      }
      return fail(i, "maximum other than with 0 (relu): mugraph has no max");
    }
    if (op == "convert") {
      MG_ASSIGN_OR_RETURN(Value x, arg(0));
      if (x.kind == Value::kConst) {
        x.dtype = dt;
        return x;
      }
      if (x.dtype != dt)
        return fail(i, "converts " + std::string(dtype_name(x.dtype)) + " to " + std::string(dtype_name(dt)) +
                           " (mugraph has no type conversion op yet)");
      return x;
    }
    if (op == "broadcast") {
      MG_ASSIGN_OR_RETURN(Value x, arg(0));
      auto dims = int_list(i.attrs.count("dimensions") ? i.attrs.at("dimensions") : "{}");
      if (!dims) return fail(i, "expects dimensions={...}");
      if (x.kind == Value::kConst) return x;
      if (x.kind == Value::kRowMax) return with_shape(x);
      if (x.kind != Value::kTensor) return fail(i, "expects a tensor");
      if (dims->size() != x.shape.size()) return fail(i, "dimensions= has not one entry per operand dim");
      // Operand dim k goes to output dim dims[k]: order them, then give the output's rank with
      // size-1 dims where the operand has none (numpy broadcasting does the rest).
      std::vector<int64_t> order(dims->size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return (*dims)[static_cast<size_t>(p)] < (*dims)[static_cast<size_t>(q)]; });
      MG_ASSIGN_OR_RETURN(Value m, materialize(x, i));
      bool identity = true;
      for (size_t k = 0; k < order.size(); ++k) identity &= order[k] == static_cast<int64_t>(k);
      if (!identity && x.shape.size() > 1) {
        m = emit(i.name + "_t", "transpose(" + m.name + ", perm=" + dims_text(order) + ")",
                 [&] { Shape s = m.stored; for (size_t k = 0; k < order.size(); ++k) s[static_cast<int>(k)] = m.stored[static_cast<int>(order[k])]; return s; }(),
                 m.shape, m.dtype);
      }
      std::vector<int64_t> stored(t.dims.size(), 1);
      for (size_t k = 0; k < dims->size(); ++k) {
        const int64_t od = (*dims)[k];
        if (od < 0 || od >= static_cast<int64_t>(t.dims.size())) return fail(i, "dimensions= out of range");
        stored[static_cast<size_t>(od)] = x.shape[k];
      }
      if (t.dims.empty()) return with_shape(m);
      m.shifted = x.shifted, m.max_id = x.max_id, m.max_dims = x.max_dims;
      return reshape_to(m, stored, i.name, t.dims);
    }
    if (op == "reshape" || op == "transpose") {
      MG_ASSIGN_OR_RETURN(Value x, arg(0));
      if (x.kind == Value::kConst) return x;
      if (x.kind == Value::kRowMax) return with_shape(x);
      MG_ASSIGN_OR_RETURN(Value m, materialize(x, i));
      Value v = m;
      if (op == "reshape") {
        m.shifted = x.shifted, m.max_id = x.max_id, m.max_dims = x.max_dims;
        return reshape_to(m, t.dims.empty() ? std::vector<int64_t>{1} : t.dims, i.name, t.dims);
      } else {
        auto perm = int_list(i.attrs.count("dimensions") ? i.attrs.at("dimensions") : "");
        if (!perm) return fail(i, "expects dimensions={...}");
        v = emit(i.name, "transpose(" + m.name + ", perm=" + dims_text(*perm) + ")", to_shape(t.dims), t.dims, m.dtype);
      }
      v.shifted = x.shifted, v.max_id = x.max_id, v.max_dims = x.max_dims;
      return with_shape(v);
    }
    if (op == "reduce") {
      if (i.operands.size() != 2) return fail(i, "a variadic reduce (one operand and one init value are supported)");
      MG_ASSIGN_OR_RETURN(Value x, arg(0));
      MG_ASSIGN_OR_RETURN(Value init, arg(1));
      auto dims = int_list(i.attrs.count("dimensions") ? i.attrs.at("dimensions") : "");
      auto it = i.attrs.find("to_apply");
      const Computation* c = it == i.attrs.end() ? nullptr : m_.find(strip_percent(it->second));
      if (!dims || c == nullptr) return fail(i, "expects dimensions={...} and to_apply=");
      const Instr* body = c->root();
      const std::string kind = body ? body->opcode : "";
      if (init.kind != Value::kConst) return fail(i, "the init value is not a constant");
      std::sort(dims->begin(), dims->end());
      if (kind == "maximum" && init.c == -INFINITY) {  // softmax's max: kept symbolic
        if (!plain(x)) return fail(i, "a max of a softmax's shifted value");
        MG_ASSIGN_OR_RETURN(Value m, materialize(x, i));
        Value v;
        v.kind = Value::kRowMax, v.name = m.name, v.max_dims = *dims, v.dtype = m.dtype;
        return with_shape(v);
      }
      if (kind != "add" || init.c != 0.0)
        return fail(i, "reduce with '" + kind + "' from " + std::to_string(init.c) +
                           " (mugraph sums: an add computation from 0)");
      if (x.kind != Value::kTensor) return fail(i, "expects a tensor");
      if (x.shifted == 1) return fail(i, "sums a softmax's shifted logits");
      if (x.shifted == 2 && *dims != x.max_dims) return fail(i, "sums a softmax's exponentials over other dims than its max");
      MG_ASSIGN_OR_RETURN(Value v, materialize(x, i));
      const int shifted = x.shifted, max_id = x.max_id;
      for (int64_t d : *dims) {
        if (d < 0 || d >= v.stored.rank) return fail(i, "dimensions= out of range");
        Shape s = v.stored;
        s[static_cast<int>(d)] = 1;
        v = emit(i.name + "_s", "sum(" + v.name + ", dim=" + std::to_string(d) + ", group=" + std::to_string(v.stored[static_cast<int>(d)]) + ")", s, v.shape, v.dtype);
      }
      v = reshape_to(v, t.dims.empty() ? std::vector<int64_t>{1} : t.dims, i.name, t.dims);
      v.shifted = shifted, v.max_id = max_id, v.max_dims = *dims;
      return v;
    }
    if (op == "dot") return dot(i, env, t, dt);
    return fail(i, "opcode '" + op + "' is not supported by mugraph's HLO import");
  }

  Result<Value> dot(const Instr& i, std::map<std::string, Value>& env, const HloType& t, DType dt) {
    MG_ASSIGN_OR_RETURN(Value a0, operand(i, 0, env));
    MG_ASSIGN_OR_RETURN(Value b0, operand(i, 1, env));
    if (!plain(a0) || !plain(b0)) return fail(i, "a dot of a constant or of a softmax's shifted value");
    MG_ASSIGN_OR_RETURN(Value a, materialize(a0, i));
    MG_ASSIGN_OR_RETURN(Value b, materialize(b0, i));
    auto dims = [&](const char* key) {
      auto it = i.attrs.find(key);
      return it == i.attrs.end() ? std::optional<std::vector<int64_t>>(std::vector<int64_t>{}) : int_list(it->second);
    };
    auto lb = dims("lhs_batch_dims"), lc = dims("lhs_contracting_dims");
    auto rb = dims("rhs_batch_dims"), rc = dims("rhs_contracting_dims");
    if (!lb || !lc || !rb || !rc || lb->size() != rb->size() || lc->size() != rc->size())
      return fail(i, "batch / contracting dims do not pair up");
    if (a.dtype != b.dtype) return fail(i, "operands of different types");
    // lhs -> [batch, free, contract], rhs -> [batch, contract, free]; each group merged into one
    // dim by a reshape, then one batched matmul, then the HLO result's shape.
    auto arrange = [&](const Value& v, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract,
                       bool lhs, int64_t* free_size, int64_t* k_size) -> Result<Value> {
      std::vector<int64_t> free;
      for (int64_t d = 0; d < v.stored.rank; ++d)
        if (std::find(batch.begin(), batch.end(), d) == batch.end() && std::find(contract.begin(), contract.end(), d) == contract.end())
          free.push_back(d);
      std::vector<int64_t> perm = batch;
      const auto& second = lhs ? free : contract;
      const auto& third = lhs ? contract : free;
      perm.insert(perm.end(), second.begin(), second.end());
      perm.insert(perm.end(), third.begin(), third.end());
      auto size = [&](const std::vector<int64_t>& ds) {
        int64_t n = 1;
        for (int64_t d : ds) n *= v.stored[static_cast<int>(d)];
        return n;
      };
      *free_size = size(free), *k_size = size(contract);
      Value w = v;
      bool identity = true;
      for (size_t k = 0; k < perm.size(); ++k) identity &= perm[k] == static_cast<int64_t>(k);
      if (!identity) {
        Shape s;
        s.rank = v.stored.rank;
        for (size_t k = 0; k < perm.size(); ++k) s[static_cast<int>(k)] = v.stored[static_cast<int>(perm[k])];
        w = emit(i.name + (lhs ? "_lhs" : "_rhs"), "transpose(" + v.name + ", perm=" + dims_text(perm) + ")", s, {}, v.dtype);
      }
      std::vector<int64_t> want;
      for (int64_t d : batch) want.push_back(v.stored[static_cast<int>(d)]);
      want.push_back(lhs ? *free_size : *k_size);
      want.push_back(lhs ? *k_size : *free_size);
      if (want.size() > static_cast<size_t>(kMaxRank)) return fail(i, "too many batch dims");
      if (!(to_shape(want) == w.stored))
        w = emit(i.name + (lhs ? "_lhs" : "_rhs"), "reshape(" + w.name + ", shape=" + dims_text(want) + ")", to_shape(want), {}, v.dtype);
      return w;
    };
    int64_t m = 0, k1 = 0, n = 0, k2 = 0;
    MG_ASSIGN_OR_RETURN(Value l, arrange(a, *lb, *lc, true, &m, &k1));
    MG_ASSIGN_OR_RETURN(Value r, arrange(b, *rb, *rc, false, &n, &k2));
    if (k1 != k2) return fail(i, "contracting sizes differ");
    Shape s = l.stored;
    s[s.rank - 1] = n;
    Value v = emit(i.name + (t.dims.size() == static_cast<size_t>(s.rank) ? "" : "_mm"), "matmul(" + l.name + ", " + r.name + ")", s, t.dims, dt);
    const std::vector<int64_t> want = t.dims.empty() ? std::vector<int64_t>{1} : t.dims;
    if (!(to_shape(want) == s))
      v = emit(i.name, "reshape(" + v.name + ", shape=" + dims_text(want) + ")", to_shape(want), t.dims, dt);
    return v;
  }

  const Module& m_;
  std::string source_;
  HloImport out_;
  struct Line {
    std::string name, call;
    std::vector<std::string> deps;
  };
  std::vector<std::string> inputs_;
  std::vector<Line> lines_;
  std::map<std::string, std::pair<std::string, Shape>> reshaped_;  // reshape -> its input
  std::set<std::string> used_;
  std::map<std::string, DType> const_types_;
  int next_max_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<HloImport> import_hlo(std::string_view text, const std::string& source) {
  MG_ASSIGN_OR_RETURN(Module m, hlo::parse_module(text, source));
  return Importer(m, source).run();
}

}  // namespace mugraph::ir
