// The emitter core shared by the code generators (cpu/, and cuda/ to come): an indenting source
// writer, tensors as code sees them (Operand: pointer, storage type, logical shape, element
// strides, base offset), index arithmetic with broadcasting, literals and identifiers, and the
// Module a generator returns. Backends add their per-op emit tables on top.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace mugraph::codegen {

// Builds indented source text line by line. open("for (...)") writes "for (...) {" and indents;
// close() dedents and writes "}".
class Writer {
 public:
  void line(std::string_view text);
  void open(std::string_view head);
  void close(std::string_view tail = "}");
  void blank() { out_ += '\n'; }
  // Each line of a multi-line text at the current indentation (empty lines stay empty).
  void text(std::string_view lines);
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int indent_ = 0;
};

// A tensor as generated code addresses it: element (i_0, ..., i_{r-1}) of the logical shape
// lives at ptr[base + sum_d i_d * strides[d]].
struct Operand {
  std::string ptr;   // a pointer variable of the storage type
  ir::DType dtype = ir::DType::kF32;
  ir::Shape shape;
  std::array<int64_t, ir::kMaxRank> strides{};
  std::string base = "0";  // an integer expression (may name loop variables)
};

// A device tensor with its layout's strides.
Operand device_operand(const std::string& ptr, const ir::TensorType& t);
// A dense row-major f32 buffer (block tensors: shared memory / local buffers).
Operand local_operand(const std::string& ptr, const ir::Shape& s);
// `o` restricted to the box starting at `offset` (integer expressions per dim) with shape `s`.
Operand sub_view(const Operand& o, const ir::Shape& s, const std::vector<std::string>& offset);
// `o` with its dims reordered: dim d of the view is dim perm[d] of o (transpose's input as
// its output sees it: a transpose is a copy from this view).
Operand permuted_view(const Operand& o, const ir::Shape& perm);

// Per-dim index expressions into `o` when a loop with variables `vars` runs over `loop`
// (o's shape right-aligned against loop; a size-1 dim of o under a larger loop dim is
// broadcast: index "0").
std::vector<std::string> broadcast_index(const Operand& o, const ir::Shape& loop,
                                         const std::vector<std::string>& vars);
// The element offset "base + i0*s0 + ..." of `o` at per-dim indices `idx` (terms with a zero
// index or stride are left out; constants folded where trivial).
std::string element(const Operand& o, const std::vector<std::string>& idx);

// "a * b" of two integer expressions with the trivial cases folded ("0", "1").
std::string mul_expr(const std::string& a, int64_t b);
std::string add_expr(const std::string& a, const std::string& b);

// A float literal that reads back to exactly `x` as a float ("0.000244140625f").
std::string float_literal(double x);
// A C identifier made from a tensor name (letters, digits, '_'; never starting with a digit).
std::string identifier(std::string_view name);
// The C++ spelling of a storage type in the device library ("float", "mg::f16", "mg::bf16").
std::string storage_type(ir::DType t);

// Where a block's chunk of a device tensor of shape `s` starts, per dim, for an imap or omap:
// grid dim g mapped to data dim d starts at b_g * (s[d] / grid[g]), with b_x, b_y, b_z named
// "bx", "by", "bz" in generated code.
std::vector<std::string> block_offsets(const ir::DimMap& map, const ir::Shape& s,
                                       const ir::Dim3& grid);

// One output of a thread graph as a single expression: `inputs` are the positions (in
// tg.inputs) it depends on, and value(x) composes the chain given their expressions x (in that
// order), each node through `scalar` (a backend's element-wise table).
using ScalarFn = std::function<std::string(ir::OpKind, const ir::OpAttrs&,
                                           const std::vector<std::string>&)>;
struct ThreadOutput {
  std::vector<size_t> inputs;
  std::function<std::string(const std::vector<std::string>&)> value;
};
ThreadOutput thread_output(const ir::ThreadGraph& tg, size_t output, const ScalarFn& scalar);

// The whole thread graph as statements, each node once: given the expressions of all of
// tg.inputs (in order), `lines` bind every node to a local `const float v<id>` and `outputs`
// names the value of each of tg.outputs. For one loop writing several outputs of one shape.
struct ThreadBody {
  std::vector<std::string> lines, outputs;
};
ThreadBody thread_body(const ir::ThreadGraph& tg, const ScalarFn& scalar,
                       const std::vector<std::string>& inputs);

// How an entry binds the device tensors of a kernel graph: each tensor comes from an input
// slot, an output slot, or the workspace at a 256-byte aligned offset; an output that is also
// an input, or appears twice, is copied into its slot at the end.
struct EntryBinding {
  enum class From { kInput, kOutput, kWorkspace };
  struct Source {
    From from = From::kWorkspace;
    int64_t index = 0;  // slot, or workspace byte offset
  };
  std::vector<Source> tensors;         // per device tensor
  std::vector<size_t> copied_outputs;  // output slots filled by a copy at the end
  int64_t workspace_bytes = 0;
};
EntryBinding bind_entry(const ir::KernelGraph& g);

// The device tensors a kernel op touches, each once (an op may read one tensor twice, e.g.
// concat_matmul(X, X, A, B)), inputs first; `second` is true for outputs.
std::vector<std::pair<ir::TensorId, bool>> op_tensors(const ir::KernelOp& op);

// Device tensors are "d_<name>" in generated code, block tensors "s_<name>": names from the two
// levels never collide.
std::string device_name(const ir::Tensor& t);
std::string shared_name(const ir::Tensor& t);
// A kernel op's function parameters ("const T* <restrict> d_X, ..., T* <restrict> d_Y", from
// op_tensors) and the matching argument list.
std::string op_params(const ir::KernelGraph& g, const ir::KernelOp& op, std::string_view restrict_kw);
std::string op_args(const ir::KernelGraph& g, const ir::KernelOp& op);
// The entry's declaration of every device tensor's pointer, per bind_entry (inputs const):
// "const float* const d_X = static_cast<const float*>(in[0]);", one line each. The entry names
// its parameters `in`, `out` and (a char*) `ws`.
void emit_bindings(Writer& w, const ir::KernelGraph& g, const EntryBinding& b);

// A graph to generate under a name; the name becomes the entry symbol
// "mg_entry_<identifier(name)>" and must be unique per module.
struct NamedGraph {
  std::string name;
  const ir::KernelGraph* graph = nullptr;
};

// Generated source plus what the runtime needs to call it: one entry point per graph (the
// signature is the backend's: see generate_cpu.h, generate_cuda.h).
struct Module {
  struct Entry {
    std::string symbol;
    int64_t workspace_bytes = 0;  // intermediate device tensors
    int num_inputs = 0, num_outputs = 0;
  };
  std::string source;
  std::vector<Entry> entries;
};

// Ok iff `in` and `out` pointers match the entry's inputs and outputs; the error names the entry.
Status check_entry_args(const Module::Entry& e, size_t in, size_t out);

// The spelling of the math functions element-wise ops need, per backend.
struct MathNames {
  std::string exp, sqrt, erf, max;  // e.g. "std::exp" / "expf"
};
// The f32 expression of element-wise op `k` on f32 expressions `x` (its arity): the one
// element-wise table of the generators (no default: a new op row fails to compile until it is
// spelled here).
std::string scalar_expr(ir::OpKind k, const ir::OpAttrs& a, const std::vector<std::string>& x,
                        const MathNames& math);

// Drives a generator over a module's graphs: rejects names that collide after identifier() and
// graphs without outputs (errors prefixed "codegen/<backend>"), and for each graph writes a
// banner, calls op(w, g, k, "<name>_op<k>") for every kernel op inside an anonymous namespace,
// then appends entry(w, g, name) to m.entries.
using OpEmitter =
    std::function<Status(Writer&, const ir::KernelGraph&, size_t, const std::string&)>;
using EntryEmitter =
    std::function<Module::Entry(Writer&, const ir::KernelGraph&, const std::string&)>;
Status emit_graphs(Writer& w, Module& m, const std::vector<NamedGraph>& graphs,
                   std::string_view backend, const OpEmitter& op, const EntryEmitter& entry);

}  // namespace mugraph::codegen
