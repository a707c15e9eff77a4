#include "driver/cpu_backend.h"

#include <algorithm>

#include <cmath>
#include <cstdlib>

#include "support/rng.h"
#include "verify/interpret.h"
#include "verify/overflow.h"
#include "verify/random_inputs.h"

namespace mugraph::driver {

std::string default_cache_dir(const std::string& backend) {
  if (const char* d = std::getenv("MUGRAPH_CACHE_DIR"); d != nullptr && *d != '\0')
    return std::string(d) + "/" + backend;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/mugraph/" + backend;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/mugraph/" + backend;
  return "/tmp/mugraph-cache/" + backend;
}

runtime::JitOptions default_jit_options() {
  runtime::JitOptions o;
  o.cache_dir = default_cache_dir();
  return o;
}

Result<std::unique_ptr<runtime::CpuModule>> compile_cpu(
    const std::vector<codegen::NamedGraph>& graphs, const runtime::JitOptions& jit) {
  const target::Target cpu = target::local_cpu();
  for (const codegen::NamedGraph& ng : graphs) {
    // The CPU's "shared memory" (L2) bounds nothing here: a block's buffers are ordinary
    // memory; only the structural validity matters.
    target::Target roomy = cpu;
    roomy.shared_memory_per_block = int64_t{1} << 40;
    if (Status s = validate(*ng.graph, roomy); !s.ok())
      return error("graph '", ng.name, "': ", s.message());
  }
  MG_ASSIGN_OR_RETURN(codegen::Module m, codegen::cpu::generate_cpu(graphs));
  return runtime::load_cpu_module(m, jit);
}

std::vector<const void*> CpuBuffers::in() const {
  std::vector<const void*> v;
  for (const runtime::Buffer& b : shared_inputs != nullptr ? *shared_inputs : inputs) v.push_back(b.data());
  return v;
}

std::vector<void*> CpuBuffers::out() {
  std::vector<void*> v;
  for (runtime::Buffer& b : outputs) v.push_back(b.data());
  return v;
}

CpuBuffers make_buffers(const ir::KernelGraph& g, uint64_t seed, const ir::KernelGraph* inputs_as) {
  Rng rng(seed);
  const std::vector<double> scales = verify::input_scales(inputs_as ? *inputs_as : g);
  CpuBuffers b;
  for (size_t i = 0; i < g.inputs.size(); ++i) {  // one input's doubles at a time
    const ir::TensorType& type = g.tensor(g.inputs[i]).type;
    const verify::HostTensor<double> values = verify::random_input(type.shape, scales[i], rng);
    b.inputs.emplace_back(type);
    b.inputs.back().fill(std::vector<float>(values.data.begin(), values.data.end()));
  }
  for (ir::TensorId id : g.outputs) {
    b.outputs.emplace_back(g.tensor(id).type);
    b.outputs.back().poison();
  }
  return b;
}

bool same_input_types(const ir::KernelGraph& a, const ir::KernelGraph& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (!(a.tensor(a.inputs[i]).type == b.tensor(b.inputs[i]).type)) return false;
  return true;
}

CpuBuffers make_buffers_like(const ir::KernelGraph& g, const CpuBuffers& drawn, uint64_t seed,
                             const ir::KernelGraph* inputs_as) {
  MG_CHECK(inputs_as != nullptr, "make_buffers_like: the inputs' graph (inputs_as) is needed");
  const std::vector<runtime::Buffer>& ins = drawn.shared_inputs != nullptr ? *drawn.shared_inputs : drawn.inputs;
  bool same = g.inputs.size() == ins.size();
  for (size_t i = 0; same && i < g.inputs.size(); ++i)
    same = g.tensor(g.inputs[i]).type == ins[i].type();
  if (!same) return make_buffers(g, seed, inputs_as);
  CpuBuffers b;
  b.shared_inputs = &ins;
  for (ir::TensorId id : g.outputs) {
    b.outputs.emplace_back(g.tensor(id).type);
    b.outputs.back().poison();
  }
  return b;
}

Result<RunReference> run_reference(const ir::KernelGraph& program, uint64_t seed,
                                   const std::vector<std::vector<float>>& program_run) {
  RunReference ref;
  auto finite = [](const auto& outputs) {
    for (const auto& o : outputs)
      for (auto x : o)
        if (!std::isfinite(x)) return false;
    return true;
  };
  for (const auto& o : program_run) ref.outputs.emplace_back(o.begin(), o.end());
  if (finite(program_run)) return ref;
  MG_RETURN_IF_ERROR(check_interpretable(program));
  const CpuBuffers b = make_buffers(program, seed);
  verify::Tensors<double> in;
  for (const runtime::Buffer& buf : b.inputs) {
    verify::HostTensor<double> t;
    t.shape = buf.type().shape;
    const std::vector<float> v = buf.values();
    t.data.assign(v.begin(), v.end());
    in.push_back(std::move(t));
  }
  const std::optional<verify::Overflow> o = verify::find_overflow(program, in);
  ref.note = o ? o->message()
               : "the program's own run has a non-finite output (its float32 interpretation "
                 "does not)";
  MG_ASSIGN_OR_RETURN(auto exact, verify::interpret<double>(program, in));
  ref.outputs.clear();
  for (const auto& t : exact) ref.outputs.push_back(t.data);
  ref.checkable = finite(ref.outputs);
  ref.note += ref.checkable ? ": variants are checked against its float64 interpretation instead"
                            : ", and its float64 interpretation is not finite either: no variant "
                              "can be checked on these inputs (scale them: --input-scale NAME=S, "
                              "or scale= on the input)";
  return ref;
}

std::string RunReference::differs(const std::string& label, double rel, double tolerance) const {
  if (note.empty())
    return label + ": generated code differs from the program's run (rel " + std::to_string(rel) +
           " > " + std::to_string(tolerance) + ")";
  if (!std::isfinite(rel))  // against a finite reference: the variant's run is not finite
    return label + ": its run is not finite either, as the program's own run is not (the "
                   "program overflows, not this variant's code)";
  return label + ": generated code differs from the float64 interpretation of the program (rel " +
         std::to_string(rel) + " > " + std::to_string(tolerance) + ")";
}

double max_rel_error(const std::vector<std::vector<double>>& want,
                     const std::vector<std::vector<float>>& got) {
  double m = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const OutputDiff d = diff_values("", want[k], std::vector<double>(got[k].begin(), got[k].end()));
    m = std::isnan(d.max_rel) ? d.max_rel : std::max(m, d.max_rel);
  }
  return m;
}

int calls_per_sample(double call_s, double sample_s) {
  return static_cast<int>(std::clamp(std::ceil(sample_s / std::max(call_s, 1e-9)), 1.0, 1000.0));
}

double cpu_tolerance(const ir::KernelGraph& g) {
  bool f16 = false, bf16 = false;
  auto see = [&](ir::DType t) {
    f16 |= t == ir::DType::kF16;
    bf16 |= t == ir::DType::kBF16;
  };
  for (const ir::Tensor& t : g.tensors) see(t.type.dtype);
  for (const ir::KernelOp& op : g.ops)
    if (op.graph_defined)
      for (const ir::Tensor& t : op.block->tensors) see(t.type.dtype);
  return bf16 ? 5e-2 : f16 ? 1e-2 : 1e-4;
}

Result<std::vector<OutputDiff>> diff_against_interpreter(const ir::KernelGraph& g,
                                                         const std::vector<runtime::Buffer>& inputs,
                                                         const std::vector<runtime::Buffer>& outputs) {
  verify::Tensors<double> ref_in;
  for (const runtime::Buffer& in : inputs) {
    verify::HostTensor<double> t;
    t.shape = in.type().shape;
    const std::vector<float> v = in.values();
    t.data.assign(v.begin(), v.end());
    ref_in.push_back(std::move(t));
  }
  MG_ASSIGN_OR_RETURN(auto ref, verify::interpret(g, ref_in));
  std::vector<OutputDiff> diffs;
  for (size_t i = 0; i < ref.size(); ++i) {
    const std::vector<float> got = outputs[i].values();
    diffs.push_back(diff_values(g.tensor(g.outputs[i]).name, ref[i].data,
                                std::vector<double>(got.begin(), got.end())));
  }
  return diffs;
}

Result<std::vector<OutputDiff>> check_cpu(runtime::CpuModule& m, size_t index,
                                          const ir::KernelGraph& g, uint64_t seed) {
  MG_RETURN_IF_ERROR(check_interpretable(g));
  CpuBuffers b = make_buffers(g, seed);
  MG_RETURN_IF_ERROR(m.run(index, b.in(), b.out()));
  return diff_against_interpreter(g, b.inputs, b.outputs);
}

}  // namespace mugraph::driver
