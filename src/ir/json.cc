#include "ir/json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include <nlohmann/json.hpp>

#include "ir/builder.h"

namespace mugraph::ir {
namespace {

using nlohmann::json;

json map_json(const DimMap& m) { return json::array({m[0], m[1], m[2]}); }

json attrs_json(OpKind op, const OpAttrs& a) {
  const unsigned bits = op_info(op).attrs;
  json j = json::object();
  if (bits & kAttrDim) j["dim"] = a.dim;
  if (bits & kAttrGroup) j["group"] = a.group;
  if (bits & kAttrTimes) j["times"] = a.times;
  if (bits & kAttrShape)
    j["shape"] = std::vector<int64_t>(a.shape.dims.begin(), a.shape.dims.begin() + a.shape.rank);
  if (bits & kAttrFactor) j["factor"] = {a.factor.num, a.factor.den};
  if (bits & kAttrPerm)
    j["perm"] = std::vector<int64_t>(a.perm.dims.begin(), a.perm.dims.begin() + a.perm.rank);
  return j;
}

template <class G>
std::vector<std::string> names(const G& g, const std::vector<TensorId>& ids) {
  std::vector<std::string> out;
  for (TensorId id : ids) out.push_back(g.tensors[static_cast<size_t>(id)].name);
  return out;
}

json thread_json(const BlockGraph& bg, const BlockNode& n) {
  const ThreadGraph& tg = *n.thread;
  json nodes = json::array();
  for (const ThreadGraph::Node& t : tg.nodes)
    nodes.push_back({{"op", op_name(t.op)}, {"inputs", names(tg, t.inputs)},
                     {"output", tg.tensors[static_cast<size_t>(t.output)].name},
                     {"attrs", attrs_json(t.op, t.attrs)}});
  return {{"kind", "thread_graph"}, {"inputs", names(bg, n.inputs)},
          {"outputs", names(bg, n.outputs)}, {"nodes", nodes},
          {"thread_outputs", names(tg, tg.outputs)}};
}

json block_node_json(const BlockGraph& bg, const BlockNode& n) {
  const std::string kind(block_node_name(n.kind));
  switch (n.kind) {
    case BlockNodeKind::kInputIterator:
      return {{"kind", kind}, {"input", n.input_index}, {"output", names(bg, n.outputs)[0]},
              {"imap", map_json(n.imap)}, {"fmap", n.fmap}};
    case BlockNodeKind::kCompute:
      return {{"kind", kind}, {"op", op_name(n.op)}, {"inputs", names(bg, n.inputs)},
              {"output", names(bg, n.outputs)[0]}, {"attrs", attrs_json(n.op, n.attrs)}};
    case BlockNodeKind::kThreadGraph:
      return thread_json(bg, n);
    case BlockNodeKind::kAccumulator:
      return {{"kind", kind}, {"input", names(bg, n.inputs)[0]},
              {"output", names(bg, n.outputs)[0]}, {"fmap", n.fmap}};
    case BlockNodeKind::kOutputSaver:
      return {{"kind", kind}, {"input", names(bg, n.inputs)[0]}, {"omap", map_json(n.omap)}};
  }
  MG_CHECK(false, "bad block node kind");
}

// ------------------------------------------------------------------ loading
//
// Every field is read through the helpers below, which check presence and type themselves:
// an error names the JSON path of the offending value ("ops[2].nodes[0].fmap: must be an
// integer, got a string", "version: required field is missing") and never carries the JSON
// library's exception text.

// Thrown inside the loader only, converted to a Status at the top as "PATH: MSG". `path` is
// relative to the level that catches the error ("" = that level); each level prefixes its own.
struct LoadError {
  std::string msg;
  std::string path;
};

// `e` seen from one level up: `at` is the key or "[i]" leading to where `e` was thrown.
LoadError within(const std::string& at, const LoadError& e) {
  if (e.path.empty()) return {e.msg, at};
  return {e.msg, at + (e.path[0] == '[' ? "" : ".") + e.path};
}

std::string at_index(size_t i) { return "[" + std::to_string(i) + "]"; }

void fail_if(const Status& s) {
  if (!s.ok()) throw LoadError{s.message(), ""};
}
template <class T>
T value_or_throw(Result<T> r) {
  fail_if(r.status());
  return std::move(r).value();
}

std::string describe(const json& v) {
  if (v.is_number_float()) return "a number with a fraction";
  if (v.is_number()) return "an integer";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  if (v.is_boolean()) return "a boolean";
  return "null";
}

void expect(bool ok, const char* what, const json& v) {
  if (!ok) throw LoadError{std::string("must be ") + what + ", got " + describe(v), ""};
}

const json& field(const json& obj, const char* key) {
  expect(obj.is_object(), "an object", obj);
  auto it = obj.find(key);
  if (it == obj.end()) throw LoadError{"required field is missing", key};
  return *it;
}

// read(obj[key]), with errors placed at `key`.
template <class F>
decltype(auto) read_field(const json& obj, const char* key, F read) {
  const json& v = field(obj, key);
  try {
    return read(v);
  } catch (const LoadError& e) {
    throw within(key, e);
  }
}

int64_t as_int(const json& v) {
  expect(v.is_number_integer(), "an integer", v);
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw LoadError{"integer out of range", ""};
  return v.get<int64_t>();
}

// An int field (dims, maps, indices): read as int64 and range-checked, because a plain
// conversion to int would silently truncate 2^32 + 1 to 1.
int small_int(const json& j) {
  const int64_t v = as_int(j);
  if (v < -(int64_t{1} << 30) || v > (int64_t{1} << 30))
    throw LoadError{"integer " + std::to_string(v) + " is out of range", ""};
  return static_cast<int>(v);
}

std::string as_string(const json& v) {
  expect(v.is_string(), "a string", v);
  return v.get<std::string>();
}

// `s` quoted for a message: printable ASCII as is, other bytes as \xNN (a NUL or a newline in a
// name would cut or break the message wherever it is shown).
std::string printable(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "'";
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) out += c;
    else out += std::string("\\x") + kHex[b >> 4] + kHex[b & 15];
  }
  return out + "'";
}

// A tensor name, which the text format must be able to print and read back: the lexer's
// identifier rule (ir/lexer.cc), an ASCII letter or '_', then letters, digits, '_' and '.'.
std::string as_name(const json& v) {
  std::string name = as_string(v);
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  bool ok = !name.empty() && letter(name[0]);
  for (const char c : name) ok = ok && (letter(c) || (c >= '0' && c <= '9') || c == '.');
  if (!ok)
    throw LoadError{"not a tensor name of the text format: " + printable(name) +
                        " (a letter or '_', then letters, digits, '_' or '.')",
                    ""};
  return name;
}

const json& as_list(const json& v) {
  expect(v.is_array(), "a list", v);
  return v;
}

template <class T>
std::vector<T> as_list_of(const json& v, T (*read)(const json&)) {
  std::vector<T> out;
  for (size_t i = 0; i < as_list(v).size(); ++i) {
    try {
      out.push_back(read(v[i]));
    } catch (const LoadError& e) {
      throw within(at_index(i), e);
    }
  }
  return out;
}
std::vector<int64_t> as_ints(const json& v) { return as_list_of(v, as_int); }
std::vector<std::string> as_strings(const json& v) { return as_list_of(v, as_string); }
std::vector<std::string> as_names(const json& v) { return as_list_of(v, as_name); }

int64_t int_field(const json& obj, const char* key) { return read_field(obj, key, as_int); }
int small_int_field(const json& obj, const char* key) { return read_field(obj, key, small_int); }
std::string string_field(const json& obj, const char* key) {
  return read_field(obj, key, as_string);
}
std::vector<int64_t> ints_field(const json& obj, const char* key) {
  return read_field(obj, key, as_ints);
}
std::vector<std::string> strings_field(const json& obj, const char* key) {
  return read_field(obj, key, as_strings);
}
// The names of tensors being defined (references are checked by lookup()).
std::string name_field(const json& obj, const char* key) { return read_field(obj, key, as_name); }
std::vector<std::string> names_field(const json& obj, const char* key) {
  return read_field(obj, key, as_names);
}
const json& list_field(const json& obj, const char* key) {
  return read_field(obj, key, [](const json& v) -> const json& { return as_list(v); });
}

template <class B>
TensorId lookup(const B& b, const std::string& name) {
  auto id = b.find(name);
  if (!id) throw LoadError{"unknown tensor " + printable(name), ""};
  return *id;
}
// The tensors named by the list obj[key].
template <class B>
std::vector<TensorId> lookup_all(const B& b, const json& obj, const char* key) {
  const std::vector<std::string> names = strings_field(obj, key);
  std::vector<TensorId> ids;
  for (size_t i = 0; i < names.size(); ++i) {
    try {
      ids.push_back(lookup(b, names[i]));
    } catch (const LoadError& e) {
      throw within(key + at_index(i), e);
    }
  }
  return ids;
}

DimMap load_map(const json& obj, const char* key) {
  const std::vector<int64_t> v = read_field(obj, key, [](const json& j) {
    if (!j.is_array() || j.size() != 3)
      throw LoadError{"a map is a list of 3 ints (-1 = phi), got " +
                          (j.is_array() ? std::to_string(j.size()) + " entries" : describe(j)),
                      ""};
    return as_list_of(j, +[](const json& x) -> int64_t { return small_int(x); });
  });
  DimMap m;
  for (size_t g = 0; g < 3; ++g) m.to[g] = static_cast<int>(v[g]);
  return m;
}

OpKind load_op(const json& obj) {
  const std::string name = string_field(obj, "op");
  auto op = parse_op(name);
  if (!op) throw LoadError{"unknown operator " + printable(name), ""};
  return *op;
}

// Exactly the attributes `op` takes, as in the text format: one it does not take would be
// dropped by the printers (so the graph would not round-trip), one it lacks would default.
// Errors are placed at the "attrs" object (a key, which may be any string, is no path).
OpAttrs load_attrs(OpKind op, const json& j) {
  expect(j.is_object(), "an object", j);
  const unsigned bits = op_info(op).attrs;
  const std::string name(op_name(op));
  for (const auto& item : j.items()) {
    bool takes = false;
    for (const AttrKey& a : kAttrKeys) takes |= (bits & a.bit) && item.key() == a.key;
    if (!takes) throw LoadError{name + " has no attribute " + printable(item.key()), ""};
  }
  for (const AttrKey& a : kAttrKeys)
    if ((bits & a.bit) && !j.contains(a.key))
      throw LoadError{name + ": missing attribute '" + a.key + "'", ""};
  OpAttrs a;
  if (j.contains("dim")) a.dim = small_int_field(j, "dim");
  if (j.contains("group")) a.group = int_field(j, "group");
  if (j.contains("times")) a.times = int_field(j, "times");
  if (j.contains("factor")) {
    const auto f = ints_field(j, "factor");
    if (f.size() != 2) throw LoadError{"must be [numerator, denominator]", "factor"};
    a.factor = {f[0], f[1]};
  }
  if (j.contains("shape")) {
    auto v = ints_field(j, "shape");
    if (v.empty() || v.size() > kMaxRank) throw LoadError{"shape must have 1..4 dims", "shape"};
    a.shape.rank = static_cast<int>(v.size());
    for (int i = 0; i < a.shape.rank; ++i) a.shape[i] = v[static_cast<size_t>(i)];
  }
  if (j.contains("perm")) {
    auto v = ints_field(j, "perm");
    if (v.empty() || v.size() > kMaxRank) throw LoadError{"perm must have 1..4 entries", "perm"};
    a.perm.rank = static_cast<int>(v.size());
    for (int i = 0; i < a.perm.rank; ++i) a.perm[i] = v[static_cast<size_t>(i)];
  }
  return a;
}
OpAttrs attrs_field(const json& obj, OpKind op) {
  return read_field(obj, "attrs", [op](const json& j) { return load_attrs(op, j); });
}

// Runs load(list[i]) for each element of obj[key], errors placed at "key[i]".
template <class F>
void for_each_in(const json& obj, const char* key, F load) {
  const json& list = list_field(obj, key);
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      load(list[i]);
    } catch (const LoadError& e) {
      throw within(key + at_index(i), e);
    }
  }
}

// Marks each tensor named by obj[key] as an output with `mark`, errors placed at "key[i]".
template <class B, class F>
void outputs_field(const B& b, const json& obj, const char* key, F mark) {
  const std::vector<TensorId> ids = lookup_all(b, obj, key);
  for (size_t i = 0; i < ids.size(); ++i) {
    try {
      fail_if(mark(ids[i]));
    } catch (const LoadError& e) {
      throw within(key + at_index(i), e);
    }
  }
}

void load_thread(BlockBuilder& bb, const json& j) {
  std::vector<TensorId> ins = lookup_all(bb, j, "inputs");
  ThreadBuilder tb(bb.tensors_of(ins));
  for_each_in(j, "nodes", [&](const json& t) {
    const OpKind op = load_op(t);
    value_or_throw(tb.op(op, lookup_all(tb, t, "inputs"), attrs_field(t, op),
                         name_field(t, "output")));
  });
  outputs_field(tb, j, "thread_outputs", [&](TensorId id) { return tb.output(id); });
  auto tg = value_or_throw(std::move(tb).finish());
  value_or_throw(bb.thread_graph(ins, tg, names_field(j, "outputs")));
}

// The text form names an iterated input by its tensor and gives the k-th iterator of a tensor
// passed more than once its k-th occurrence among the op's inputs, so it can only express
// iterators that take the occurrences in order. `seen` counts each tensor's iterators so far;
// input #j (`ins[j]`) has just been given its iterator.
void check_iterator_order(const std::vector<TensorId>& ins, int j,
                          std::map<TensorId, int>& seen) {
  int k = seen[ins[static_cast<size_t>(j)]]++;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i] != ins[static_cast<size_t>(j)] || k-- > 0) continue;
    if (static_cast<int>(i) != j)
      throw LoadError{"input #" + std::to_string(j) + " is iterated before input #" +
                          std::to_string(i) + ", the same tensor: iterators of a tensor passed "
                          "more than once must take its occurrences in order",
                      "input"};
    return;
  }
}

void load_block_node(BlockBuilder& bb, const json& n, const std::vector<TensorId>& ins,
                     std::map<TensorId, int>& iterated) {
  const std::string kind = string_field(n, "kind");
  if (kind == "input_iterator") {
    const int j = small_int_field(n, "input");
    value_or_throw(bb.input_iterator(j, load_map(n, "imap"), small_int_field(n, "fmap"),
                                     name_field(n, "output")));
    check_iterator_order(ins, j, iterated);  // j is valid: the builder took it
  } else if (kind == "compute") {
    const OpKind op = load_op(n);
    value_or_throw(bb.op(op, lookup_all(bb, n, "inputs"), attrs_field(n, op),
                         name_field(n, "output")));
  } else if (kind == "thread_graph") {
    load_thread(bb, n);
  } else if (kind == "accumulator") {
    value_or_throw(bb.accumulator(lookup(bb, string_field(n, "input")),
                                  small_int_field(n, "fmap"), name_field(n, "output")));
  } else if (kind == "output_saver") {
    fail_if(bb.output_saver(lookup(bb, string_field(n, "input")), load_map(n, "omap")));
  } else {
    throw LoadError{"unknown block node kind " + printable(kind), ""};
  }
}

void load_graph_defined(KernelBuilder& kb, const json& op) {
  std::vector<TensorId> ins = lookup_all(kb, op, "inputs");
  std::vector<TensorType> types;
  for (TensorId id : ins) types.push_back(kb.graph().tensor(id).type);
  const auto grid = ints_field(op, "grid");
  if (grid.size() != 3) throw LoadError{"grid must have 3 entries", "grid"};
  BlockBuilder bb = value_or_throw(
      BlockBuilder::make(types, Dim3{{grid[0], grid[1], grid[2]}}, int_field(op, "forloop")));
  std::map<TensorId, int> iterated;
  for_each_in(op, "nodes", [&](const json& n) { load_block_node(bb, n, ins, iterated); });
  auto block = value_or_throw(std::move(bb).finish());
  value_or_throw(kb.graph_defined(ins, block, names_field(op, "outputs")));
}

void load_input(KernelBuilder& kb, const json& in) {
  const std::string name = name_field(in, "name");
  auto dims = ints_field(in, "shape");
  if (dims.empty() || dims.size() > kMaxRank) throw LoadError{"must have 1..4 dims", "shape"};
  Shape s;
  s.rank = static_cast<int>(dims.size());
  for (int i = 0; i < s.rank; ++i) s[i] = dims[static_cast<size_t>(i)];
  auto dt = parse_dtype(string_field(in, "dtype"));
  if (!dt) throw LoadError{"unknown dtype in input '" + name + "'", "dtype"};
  TensorType t = TensorType::make(*dt, s);
  if (in.contains("strides")) {
    auto st = ints_field(in, "strides");
    if (st.size() != dims.size()) throw LoadError{"strides and shape differ in length", "strides"};
    for (size_t i = 0; i < st.size(); ++i) t.layout.strides[i] = st[i];
  }
  double scale = 0;
  if (in.contains("scale")) {
    const json& s = in["scale"];
    if (!s.is_number() || !(s.get<double>() > 0) || !std::isfinite(s.get<double>()))
      throw LoadError{"scale of input '" + name + "' must be a finite number > 0", "scale"};
    scale = s.get<double>();
  }
  value_or_throw(kb.input(name, t, scale));
}

KernelGraph load(const json& j) {
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (!j.is_object() || format == j.end() || *format != kJsonFormat)
    throw LoadError{std::string("not a uGraph file (expected \"format\": \"") + kJsonFormat + "\")",
                    "format"};
  const int64_t version = int_field(j, "version");
  if (version != kJsonVersion)
    throw LoadError{"unsupported format version " + std::to_string(version) +
                        " (this mugraph reads version " + std::to_string(kJsonVersion) + ")",
                    "version"};
  KernelBuilder kb;
  for_each_in(j, "inputs", [&](const json& in) { load_input(kb, in); });
  for_each_in(j, "ops", [&](const json& op) {
    if (string_field(op, "op") == "graph_defined") {
      load_graph_defined(kb, op);
      return;
    }
    const OpKind kind = load_op(op);
    value_or_throw(kb.op(kind, lookup_all(kb, op, "inputs"), attrs_field(op, kind),
                         name_field(op, "output")));
  });
  outputs_field(kb, j, "outputs", [&](TensorId id) { return kb.output(id); });
  // finish() only checks that there are inputs and outputs: place its error at the empty list.
  const char* const empty = kb.graph().inputs.empty() ? "inputs" : "outputs";
  try {
    return value_or_throw(std::move(kb).finish());
  } catch (const LoadError& e) {
    throw within(empty, e);
  }
}

// nlohmann reports a number too large for a double (out_of_range.406) without a position,
// though its parser passes one to the SAX handler: this handler, run over the text again after
// such an error, keeps it (the byte offset just past the offending token).
struct ErrorPosition final : json::json_sax_t {
  size_t end = 0;
  std::string token;
  bool found = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t) override { return true; }
  bool number_unsigned(json::number_unsigned_t) override { return true; }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool string(json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool start_object(size_t) override { return true; }
  bool key(json::string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(size_t at, const std::string& last_token, const json::exception&) override {
    end = at, token = last_token, found = true;
    return false;
  }
};

// "line L, column C" (1-based, columns in bytes as nlohmann counts them) of byte `at`.
std::string line_column(const std::string& text, size_t at) {
  at = std::min(at, text.size());
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
  const size_t nl = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const size_t col = at - (nl == std::string::npos ? 0 : nl + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string untagged(const json::exception& e) {
  std::string msg = e.what();
  if (msg.rfind("[json.exception.", 0) == 0 && msg.find("] ") != std::string::npos)
    msg = msg.substr(msg.find("] ") + 2);
  return msg;
}

}  // namespace

std::string to_json(const KernelGraph& g, int indent) {
  json j = {{"format", kJsonFormat}, {"version", kJsonVersion}};
  json inputs = json::array();
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& t = g.tensor(g.inputs[i]);
    json in = {{"name", t.name}, {"dtype", dtype_name(t.type.dtype)},
               {"shape", std::vector<int64_t>(t.type.shape.dims.begin(),
                                              t.type.shape.dims.begin() + t.type.shape.rank)}};
    if (!t.type.is_row_major())
      in["strides"] = std::vector<int64_t>(t.type.layout.strides.begin(),
                                           t.type.layout.strides.begin() + t.type.shape.rank);
    if (g.input_scale(i) != 0) in["scale"] = g.input_scale(i);
    inputs.push_back(in);
  }
  json ops = json::array();
  for (const KernelOp& op : g.ops) {
    if (!op.graph_defined) {
      ops.push_back({{"op", op_name(op.op)}, {"inputs", names(g, op.inputs)},
                     {"output", g.tensor(op.outputs[0]).name},
                     {"attrs", attrs_json(op.op, op.attrs)}});
      continue;
    }
    const BlockGraph& bg = *op.block;
    json nodes = json::array();
    for (const BlockNode& n : bg.nodes) nodes.push_back(block_node_json(bg, n));
    ops.push_back({{"op", "graph_defined"}, {"inputs", names(g, op.inputs)},
                   {"outputs", names(g, op.outputs)},
                   {"grid", {bg.grid[0], bg.grid[1], bg.grid[2]}}, {"forloop", bg.forloop},
                   {"nodes", nodes}});
  }
  j["inputs"] = inputs;
  j["ops"] = ops;
  j["outputs"] = names(g, g.outputs);
  return j.dump(indent);
}

Result<KernelGraph> from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return error("JSON: ", untagged(e));  // syntax errors: nlohmann gives the line and column
  } catch (const json::exception& e) {
    // A number too large for a double (out_of_range.406): nlohmann gives no position.
    ErrorPosition where;
    json::sax_parse(text, &where);
    if (!where.found) return error("JSON: ", untagged(e));
    const std::string what =
        e.id == 406 ? "number " + printable(where.token) + " is out of range" : untagged(e);
    const size_t start = where.end - std::min(where.end, where.token.size());
    return error("JSON: parse error at ", line_column(text, start), ": ", what);
  }
  try {
    return load(j);
  } catch (const LoadError& e) {
    return error("JSON: ", e.path.empty() ? "" : e.path + ": ", e.msg);
  } catch (const json::exception& e) {
    // The loader checks every field itself, so this is a bug in it; still an error, not a crash.
    return error("JSON: ", untagged(e));
  }
}

}  // namespace mugraph::ir
