#include "ir/json.h"

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
  if (bits & kAttrShape) j["shape"] = std::vector<int64_t>(a.shape.dims.begin(), a.shape.dims.begin() + a.shape.rank);
  if (bits & kAttrFactor) j["factor"] = {a.factor.num, a.factor.den};
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

// Thrown inside the loader only, converted to a Status at the top with the JSON path.
struct LoadError {
  std::string msg;
};

void fail_if(const Status& s) {
  if (!s.ok()) throw LoadError{s.message()};
}
template <class T>
T value_or_throw(Result<T> r) {
  fail_if(r.status());
  return std::move(r).value();
}

// An int field (dims, maps, indices): read as int64 and range-checked, because nlohmann's
// get<int>() would silently truncate 2^32 + 1 to 1.
int small_int(const json& j) {
  const auto v = j.get<int64_t>();
  if (v < -(int64_t{1} << 30) || v > (int64_t{1} << 30))
    throw LoadError{"integer " + std::to_string(v) + " is out of range"};
  return static_cast<int>(v);
}

template <class B>
TensorId lookup(const B& b, const std::string& name) {
  auto id = b.find(name);
  if (!id) throw LoadError{"unknown tensor '" + name + "'"};
  return *id;
}
template <class B>
std::vector<TensorId> lookup_all(const B& b, const json& arr) {
  std::vector<TensorId> ids;
  for (const json& n : arr) ids.push_back(lookup(b, n.get<std::string>()));
  return ids;
}

DimMap load_map(const json& j) {
  DimMap m;
  if (!j.is_array() || j.size() != 3) throw LoadError{"a map is a list of 3 ints (-1 = phi)"};
  for (size_t g = 0; g < 3; ++g) m.to[g] = small_int(j[g]);
  return m;
}

OpKind load_op(const json& j) {
  const std::string name = j.get<std::string>();
  auto op = parse_op(name);
  if (!op) throw LoadError{"unknown operator '" + name + "'"};
  return *op;
}

OpAttrs load_attrs(const json& j) {
  OpAttrs a;
  if (j.contains("dim")) a.dim = small_int(j["dim"]);
  if (j.contains("group")) a.group = j["group"].get<int64_t>();
  if (j.contains("times")) a.times = j["times"].get<int64_t>();
  if (j.contains("factor")) a.factor = {j["factor"].at(0).get<int64_t>(), j["factor"].at(1).get<int64_t>()};
  if (j.contains("shape")) {
    auto v = j["shape"].get<std::vector<int64_t>>();
    if (v.empty() || v.size() > kMaxRank) throw LoadError{"shape must have 1..4 dims"};
    a.shape.rank = static_cast<int>(v.size());
    for (int i = 0; i < a.shape.rank; ++i) a.shape[i] = v[static_cast<size_t>(i)];
  }
  return a;
}

void load_thread(BlockBuilder& bb, const json& j) {
  std::vector<TensorId> ins = lookup_all(bb, j.at("inputs"));
  ThreadBuilder tb(bb.tensors_of(ins));
  for (const json& t : j.at("nodes"))
    value_or_throw(tb.op(load_op(t.at("op")), lookup_all(tb, t.at("inputs")), load_attrs(t.at("attrs")),
                         t.at("output").get<std::string>()));
  for (TensorId id : lookup_all(tb, j.at("thread_outputs"))) fail_if(tb.output(id));
  auto tg = value_or_throw(std::move(tb).finish());
  value_or_throw(bb.thread_graph(ins, tg, j.at("outputs").get<std::vector<std::string>>()));
}

void load_block_node(BlockBuilder& bb, const json& n) {
  const std::string kind = n.at("kind").get<std::string>();
  if (kind == "input_iterator") {
    value_or_throw(bb.input_iterator(small_int(n.at("input")), load_map(n.at("imap")),
                                     small_int(n.at("fmap")), n.at("output").get<std::string>()));
  } else if (kind == "compute") {
    value_or_throw(bb.op(load_op(n.at("op")), lookup_all(bb, n.at("inputs")), load_attrs(n.at("attrs")),
                         n.at("output").get<std::string>()));
  } else if (kind == "thread_graph") {
    load_thread(bb, n);
  } else if (kind == "accumulator") {
    value_or_throw(bb.accumulator(lookup(bb, n.at("input").get<std::string>()), small_int(n.at("fmap")),
                                  n.at("output").get<std::string>()));
  } else if (kind == "output_saver") {
    fail_if(bb.output_saver(lookup(bb, n.at("input").get<std::string>()), load_map(n.at("omap"))));
  } else {
    throw LoadError{"unknown block node kind '" + kind + "'"};
  }
}

void load_graph_defined(KernelBuilder& kb, const json& op, const std::string& path) {
  std::vector<TensorId> ins = lookup_all(kb, op.at("inputs"));
  std::vector<TensorType> types;
  for (TensorId id : ins) types.push_back(kb.graph().tensor(id).type);
  const auto grid = op.at("grid").get<std::vector<int64_t>>();
  if (grid.size() != 3) throw LoadError{"grid must have 3 entries"};
  BlockBuilder bb = value_or_throw(
      BlockBuilder::make(types, Dim3{{grid[0], grid[1], grid[2]}}, op.at("forloop").get<int64_t>()));
  const json& nodes = op.at("nodes");
  for (size_t i = 0; i < nodes.size(); ++i) {
    try {
      load_block_node(bb, nodes[i]);
    } catch (const LoadError& e) {
      throw LoadError{path + ".nodes[" + std::to_string(i) + "]: " + e.msg};
    }
  }
  auto block = value_or_throw(std::move(bb).finish());
  value_or_throw(kb.graph_defined(ins, block, op.at("outputs").get<std::vector<std::string>>()));
}

KernelGraph load(const json& j) {
  if (!j.is_object() || j.value("format", "") != kJsonFormat)
    throw LoadError{std::string("not a uGraph file (expected \"format\": \"") + kJsonFormat + "\")"};
  const auto version = j.at("version").get<int64_t>();
  if (version != kJsonVersion)
    throw LoadError{"unsupported format version " + std::to_string(version) +
                    " (this mugraph reads version " + std::to_string(kJsonVersion) + ")"};
  KernelBuilder kb;
  for (const json& in : j.at("inputs")) {
    auto dims = in.at("shape").get<std::vector<int64_t>>();
    if (dims.empty() || dims.size() > kMaxRank) throw LoadError{"input shape must have 1..4 dims"};
    Shape s;
    s.rank = static_cast<int>(dims.size());
    for (int i = 0; i < s.rank; ++i) s[i] = dims[static_cast<size_t>(i)];
    auto dt = parse_dtype(in.at("dtype").get<std::string>());
    if (!dt) throw LoadError{"unknown dtype in input '" + in.at("name").get<std::string>() + "'"};
    TensorType t = TensorType::make(*dt, s);
    if (in.contains("strides")) {
      auto st = in["strides"].get<std::vector<int64_t>>();
      if (st.size() != dims.size()) throw LoadError{"strides and shape differ in length"};
      for (size_t i = 0; i < st.size(); ++i) t.layout.strides[i] = st[i];
    }
    value_or_throw(kb.input(in.at("name").get<std::string>(), t));
  }
  const json& ops = j.at("ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = "ops[" + std::to_string(i) + "]";
    try {
      const json& op = ops[i];
      if (op.at("op").get<std::string>() == "graph_defined") {
        load_graph_defined(kb, op, path);
      } else {
        value_or_throw(kb.op(load_op(op.at("op")), lookup_all(kb, op.at("inputs")),
                             load_attrs(op.at("attrs")), op.at("output").get<std::string>()));
      }
    } catch (const LoadError& e) {
      throw LoadError{e.msg.rfind(path, 0) == 0 ? e.msg : path + ": " + e.msg};
    }
  }
  for (TensorId id : lookup_all(kb, j.at("outputs"))) fail_if(kb.output(id));
  return value_or_throw(std::move(kb).finish());
}

}  // namespace

std::string to_json(const KernelGraph& g, int indent) {
  json j = {{"format", kJsonFormat}, {"version", kJsonVersion}};
  json inputs = json::array();
  for (TensorId id : g.inputs) {
    const Tensor& t = g.tensor(id);
    json in = {{"name", t.name}, {"dtype", dtype_name(t.type.dtype)},
               {"shape", std::vector<int64_t>(t.type.shape.dims.begin(), t.type.shape.dims.begin() + t.type.shape.rank)}};
    if (!t.type.is_row_major())
      in["strides"] = std::vector<int64_t>(t.type.layout.strides.begin(),
                                           t.type.layout.strides.begin() + t.type.shape.rank);
    inputs.push_back(in);
  }
  json ops = json::array();
  for (const KernelOp& op : g.ops) {
    if (!op.graph_defined) {
      ops.push_back({{"op", op_name(op.op)}, {"inputs", names(g, op.inputs)},
                     {"output", g.tensor(op.outputs[0]).name}, {"attrs", attrs_json(op.op, op.attrs)}});
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
  try {
    return load(json::parse(text));
  } catch (const LoadError& e) {
    return error("JSON: ", e.msg);
  } catch (const json::exception& e) {
    // nlohmann's messages name the offending key, type or byte position.
    return error("JSON: ", e.what());
  }
}

}  // namespace mugraph::ir
