// mugraph._mugraph: the C++ driver for Python (pybind11). Thin: each function calls the driver
// and turns a Status into mugraph.Error; the Pythonic API (builder, tensors) is python/mugraph.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <exception>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <sstream>

#include "driver/cpu_backend.h"
#include "driver/cuda_backend.h"
#include "driver/driver.h"
#include "driver/model.h"
#include "driver/optimize.h"
#include "driver/progress.h"
#include "driver/result_cache.h"
#include "driver/version.h"
#include "ir/canonical.h"
#include "ir/composite.h"
#include "ir/hlo_import.h"
#include "ir/json.h"
#include "ir/ops.h"
#include "ir/text.h"
#include "runtime/cpu_jit.h"
#include "runtime/cuda_jit.h"
#include "search/plan.h"
#include "target/target.h"

namespace py = pybind11;
using namespace mugraph;

namespace {

PyObject* g_error = nullptr;  // mugraph.Error (a ValueError)

[[noreturn]] void raise(const std::string& message) {
  PyErr_SetString(g_error, message.c_str());
  throw py::error_already_set();
}

template <typename T>
T value_or_raise(Result<T> r) {
  if (!r.ok()) raise(r.status().message());
  return std::move(r).value();
}

void ok_or_raise(const Status& s) {
  if (!s.ok()) raise(s.message());
}

target::Target find_target_or_raise(const std::string& name) {
  return value_or_raise(target::find_target(name));
}

py::tuple dims(const ir::Shape& s) {
  py::tuple t(static_cast<size_t>(s.rank));
  for (int i = 0; i < s.rank; ++i) t[static_cast<size_t>(i)] = s[i];
  return t;
}

// One tensor of a graph's interface: (name, dtype, shape, strides in elements).
py::tuple interface_entry(const ir::KernelGraph& g, ir::TensorId id) {
  const ir::Tensor& t = g.tensor(id);
  py::tuple strides(static_cast<size_t>(t.type.shape.rank));
  for (int i = 0; i < t.type.shape.rank; ++i)
    strides[static_cast<size_t>(i)] = t.type.layout.strides[static_cast<size_t>(i)];
  return py::make_tuple(t.name, std::string(ir::dtype_name(t.type.dtype)), dims(t.type.shape),
                        strides);
}

// What optimize handed out, fresh or from the result cache.
struct Optimized {
  ir::KernelGraph best;
  std::string chosen, verdict, report, source, cache_note, target;
  double speedup = 1;
  bool measured = false, from_cache = false, verified = false;
};

Optimized from_files(const std::vector<std::pair<std::string, std::string>>& files) {
  Optimized out;
  for (const auto& [name, text] : files) {
    if (name == "best.mu") out.best = value_or_raise(ir::parse_graph(text));
    if (name == "report.txt") out.report = text;
    if (name == "best_cpu.cc" || name == "best.cu") out.source = text;
  }
  return out;
}

constexpr const char* kSpaceOptions[] = {"max_kernel_ops", "max_block_ops", "max_graph_defined",
                                        "max_block_outputs", "max_kernel_op_inputs", "grid_sizes",
                                        "min_blocks", "max_blocks", "max_grid_dims", "forloop"};

// One search option from a keyword argument (the CLI's flag, without the dashes); an unknown
// one is a TypeError naming it; a value of the wrong type throws py::cast_error.
void apply_one(search::SearchOptions& s, const std::string& key, const py::handle& v) {
  if (key == "max_kernel_ops") s.max_kernel_ops = py::cast<int>(v);
  else if (key == "max_block_ops") s.max_block_ops = py::cast<int>(v);
  else if (key == "max_graph_defined") s.max_graph_defined_ops = py::cast<int>(v);
  else if (key == "max_block_outputs") s.max_block_outputs = py::cast<int>(v);
  else if (key == "max_kernel_op_inputs") s.max_kernel_op_inputs = py::cast<int>(v);
  else if (key == "grid_sizes") s.grid_sizes = py::cast<std::vector<int64_t>>(v);
  else if (key == "min_blocks") s.min_blocks = py::cast<int64_t>(v);
  else if (key == "max_blocks") s.max_blocks = py::cast<int64_t>(v);
  else if (key == "max_grid_dims") s.max_grid_dims = py::cast<int>(v);
  else if (key == "forloop") s.forloop_ranges = py::cast<std::vector<int64_t>>(v);
  else if (key == "threads") s.threads = py::cast<int>(v);
  else if (key == "seed") s.seed = py::cast<uint64_t>(v);
  else {
    std::string known;
    for (const char* n : kSpaceOptions) known += std::string(n) + ", ";
    PyErr_SetString(PyExc_TypeError, ("superoptimize(): unknown option '" + key +
                                      "' (search options: " + known + "threads, seed)")
                                         .c_str());
    throw py::error_already_set();
  }
}

// Search options from keyword arguments. Given no space option, the space is planned from the
// program (as the CLI does).
void apply_search_kwargs(search::SearchOptions& s, const py::dict& kw) {
  bool space = false;
  for (auto [k, v] : kw) {
    const std::string key = py::cast<std::string>(k);
    try {
      apply_one(s, key, v);
    } catch (const py::cast_error&) {
      PyErr_SetString(PyExc_TypeError, ("superoptimize(): option '" + key + "': " +
                                        std::string(py::str(py::type::of(v).attr("__name__"))) +
                                        " is not of the expected type (an int, or a list of "
                                        "ints for grid_sizes and forloop)").c_str());
      throw py::error_already_set();
    }
    for (const char* n : kSpaceOptions) space |= key == n;
  }
  if (!space) s.plan = true;
}

Optimized optimize(const ir::KernelGraph& program, const std::string& target_name,
                   double time_budget, int top, int runs, bool accept_unproved, bool use_cache,
                   const std::string& name, bool progress, const py::dict& kw) {
  driver::OptimizeOptions o;
  if (progress) o.search.progress = driver::terminal_progress();
  o.search.target = find_target_or_raise(target_name);
  o.search.min_blocks = search::default_min_blocks(o.search.target);
  apply_search_kwargs(o.search, kw);
  o.search.time_budget_s = time_budget > 0 ? time_budget
                           : o.search.plan ? search::kPlannedBudgetSeconds
                                           : 0;
  o.top_n = top;
  o.runs = runs;
  o.seed = 1;
  o.accept_unproved = accept_unproved;
  ok_or_raise(driver::validate(program, o.search.target));
  std::optional<driver::ResultCache> cache;
  std::string note;
  if (use_cache) {
    auto c = driver::ResultCache::open(driver::default_result_cache_path());
    if (c.ok())
      cache = std::move(c).value();
    else
      note = "result cache: " + c.status().message() + "; searched without it";
  }
  if (cache) {
    std::string why;
    auto hit = driver::cache_lookup(*cache, program, o, &why);
    if (!hit.ok()) {
      note = "result cache: " + hit.status().message() + "; searched without it";
    } else if (hit->has_value()) {
      const driver::CacheEntry& e = **hit;
      Optimized out = from_files(e.files);
      out.chosen = e.chosen;
      out.verdict = e.verdict;
      out.speedup = e.speedup;
      out.measured = !e.device.empty();
      out.from_cache = true;
      out.verified = e.verdict == "VERIFIED" || e.chosen == "program";
      out.target = e.target;
      out.cache_note = "from the result cache (" + cache->path() + ", key " +
                       e.key.substr(0, 12) + ", stored by mugraph " + e.version + ")";
      return out;
    } else if (!why.empty()) {
      note = "result cache: " + why + "; searched again";
    }
  }
  // The search runs on a thread of its own while this one, the caller's, watches for Ctrl-C
  // (Python runs signal handlers only here): a KeyboardInterrupt stops the search cleanly
  // through its cancel flag, and is raised once it has (nothing is cached).
  std::atomic<bool> cancel{false};
  o.search.cancel = &cancel;
  Result<driver::OptimizeReport> r = error("optimize did not run");
  std::optional<py::error_already_set> interrupted;
  std::exception_ptr thrown;  // an internal error of the search, raised here as before
  {
    py::gil_scoped_release release;
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    std::thread worker([&] {
      try {
        r = driver::optimize(program, o);
      } catch (...) {
        thrown = std::current_exception();
      }
      driver::end_progress();
      finished.set_value();
    });
    struct Join {  // the worker is joined on every way out of this block
      std::thread& t;
      std::atomic<bool>& cancel;
      ~Join() {
        cancel = true;
        if (t.joinable()) t.join();
      }
    } join{worker, cancel};
    while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() == 0) continue;
      if (interrupted) {
        PyErr_Clear();  // a second Ctrl-C while the search stops: the first is raised
        continue;
      }
      interrupted.emplace();  // takes the pending exception (KeyboardInterrupt)
      cancel = true;
    }
  }
  if (interrupted) throw *interrupted;
  if (thrown) std::rethrow_exception(thrown);
  const driver::OptimizeReport report = value_or_raise(std::move(r));
  Optimized out = from_files(driver::optimize_files(report, program));
  out.chosen = report.chosen().label;
  out.speedup = !report.measured ? 0.0 : report.best < 0 ? 1.0 : report.chosen().speedup;
  out.measured = report.measured;
  out.verdict = report.best < 0 ? "the program itself"
                                : std::string(verify::verdict_name(report.certified.kind));
  out.verified = report.best < 0 || report.certified.kind == verify::VerdictKind::kVerified;
  out.target = report.target.name;
  if (cache) {
    auto e = driver::make_cache_entry(report, program, o, name);
    if (e.ok()) {
      if (Status s = cache->put(*e); !s.ok())
        note = "result cache: " + s.message() + "; the result is not cached";
    } else {
      note = "result cache: " + e.status().message();
    }
  }
  out.cache_note = note;
  return out;
}

// Integer addresses from Python as the pointers an entry takes, one per input / output of `g`.
std::pair<std::vector<const void*>, std::vector<void*>> pointers(
    const std::string& what, const ir::KernelGraph& g, const std::vector<uintptr_t>& in,
    const std::vector<uintptr_t>& out) {
  if (in.size() != g.inputs.size() || out.size() != g.outputs.size())
    raise(what + ": expected " + std::to_string(g.inputs.size()) + " inputs and " +
          std::to_string(g.outputs.size()) + " outputs");
  std::vector<const void*> i(in.size());
  std::vector<void*> o(out.size());
  for (size_t k = 0; k < in.size(); ++k) i[k] = reinterpret_cast<const void*>(in[k]);
  for (size_t k = 0; k < out.size(); ++k) o[k] = reinterpret_cast<void*>(out[k]);
  return {std::move(i), std::move(o)};
}

// A uGraph compiled for the CPU (the JIT, cached on disk), run on raw buffers.
class CpuKernel {
 public:
  explicit CpuKernel(const ir::KernelGraph& g) : g_(g) {
    Result<std::unique_ptr<runtime::CpuModule>> m = [&] {
      py::gil_scoped_release release;  // the JIT compile can take seconds
      return driver::compile_cpu({{"graph", &g_}}, driver::default_jit_options());
    }();
    module_ = value_or_raise(std::move(m));
  }
  // Pointers as integers, in the graph's input / output order; the caller checked shapes,
  // dtypes and layouts (python/mugraph/_result.py). One call at a time: the module's
  // workspace is shared (a mutex, since the GIL is released while it runs).
  void run(const std::vector<uintptr_t>& in, const std::vector<uintptr_t>& out) {
    const auto [i, o] = pointers("CpuKernel.run", g_, in, out);
    Status s;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      s = module_->run(0, i, o);
    }
    ok_or_raise(s);
  }

 private:
  ir::KernelGraph g_;
  std::unique_ptr<runtime::CpuModule> module_;
  std::mutex mu_;
};

// A uGraph compiled for a GPU target with nvcc (cached on disk) for one compute capability, run
// on device pointers and a stream the caller owns: PyTorch's current stream and its allocator
// (python/mugraph/_result.py). Needs no GPU to construct; run() needs the caller's device.
class CudaKernel {
 public:
  CudaKernel(const ir::KernelGraph& g, const std::string& target, int arch) : g_(g) {
    const target::Target t = find_target_or_raise(target);
    Result<std::unique_ptr<runtime::CudaLibrary>> lib = [&]() -> Result<std::unique_ptr<runtime::CudaLibrary>> {
      py::gil_scoped_release release;  // nvcc takes seconds
      MG_ASSIGN_OR_RETURN(codegen::Module m, driver::generate_cuda({{"graph", &g_}}, t));
      runtime::CudaJitOptions jit = driver::default_cuda_jit_options();
      jit.archs = {arch};
      MG_ASSIGN_OR_RETURN(std::string path, runtime::compile_cuda(m, jit));
      return runtime::CudaLibrary::open(path, m);
    }();
    lib_ = value_or_raise(std::move(lib));
  }
  int64_t workspace_bytes() const { return lib_->module().entries.at(0).workspace_bytes; }
  // Device pointers as integers, in the graph's input / output order (checked by the caller),
  // a workspace of workspace_bytes(), the cudaStream_t and the device they belong to. Enqueues
  // the kernels and returns; launch errors raise.
  void run(const std::vector<uintptr_t>& in, const std::vector<uintptr_t>& out, uintptr_t workspace,
           uintptr_t stream, int device) {
    const auto [i, o] = pointers("CudaKernel.run", g_, in, out);
    Status s;
    {
      py::gil_scoped_release release;
      // One enqueue at a time: the module binds its cuBLAS handle to the caller's stream.
      std::lock_guard<std::mutex> lock(mu_);
      s = lib_->set_device(device);
      if (s.ok())
        s = lib_->run(0, i, o, reinterpret_cast<void*>(workspace), reinterpret_cast<void*>(stream));
    }
    ok_or_raise(s);
  }

 private:
  ir::KernelGraph g_;
  std::unique_ptr<runtime::CudaLibrary> lib_;
  std::mutex mu_;
};

}  // namespace

// mugraph.Env: the graph-rewrite environment (driver/model.h's session, one environment).
struct PyEnv {
  std::unique_ptr<driver::ModelSession> session;
  std::unique_ptr<rewrite::Env> env;
};

py::dict alt_node_dict(const ir::KernelGraph& g, const rewrite::AltNode& n) {
  py::dict d;
  d["pass"] = n.pass;
  d["ops"] = n.region.ops;
  py::list ins, outs, options;
  for (ir::TensorId t : n.region.inputs) ins.append(g.tensor(t).name);
  for (ir::TensorId t : n.region.outputs) outs.append(g.tensor(t).name);
  for (const rewrite::Option& o : n.options) {
    py::dict x;
    x["label"] = o.label;
    x["graph"] = o.graph;
    x["verdict"] = o.verdict;
    x["model_seconds"] = o.model_s;
    options.append(x);
  }
  d["inputs"] = ins;
  d["outputs"] = outs;
  d["region"] = n.region.program;
  d["options"] = options;
  return d;
}

PYBIND11_MODULE(_mugraph, m) {
  m.doc() = "mugraph's C++ driver (use the mugraph package, not this module)";
  runtime::init_openmp();  // at import, before this package starts threads (see cpu_jit.h)
  g_error = PyErr_NewException("mugraph.Error", PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(g_error);

  m.def("version", [] { return std::string(driver::version()); });
  m.def("targets", [] { return target::target_names(); });
  m.def("ops", [] {
    py::list out;
    for (const ir::OpInfo& op : ir::kOpTable) {
      if ((op.levels & ir::kLevelK) == 0) continue;
      py::list attrs;
      for (const ir::AttrKey& k : ir::kAttrKeys)
        if (op.attrs & k.bit) attrs.append(k.key);
      out.append(py::make_tuple(std::string(op.name), op.arity, attrs));
    }
    return out;
  });
  m.def("composites", [] {
    py::list out;
    for (const ir::CompositeInfo& c : ir::composites()) {
      py::list attrs;
      if (c.takes_dim) attrs.append("dim");
      out.append(py::make_tuple(std::string(c.name), c.arity, attrs));
    }
    return out;
  });

  py::class_<ir::KernelGraph>(m, "KernelGraph")
      .def("text", [](const ir::KernelGraph& g) { return ir::print_graph(g); })
      .def("json", [](const ir::KernelGraph& g) { return ir::to_json(g); })
      .def("inputs",
           [](const ir::KernelGraph& g) {
             py::list l;
             for (ir::TensorId t : g.inputs) l.append(interface_entry(g, t));
             return l;
           })
      .def("outputs",
           [](const ir::KernelGraph& g) {
             py::list l;
             for (ir::TensorId t : g.outputs) l.append(interface_entry(g, t));
             return l;
           })
      .def("kernels", [](const ir::KernelGraph& g) { return g.ops.size(); })
      .def("canonical_hash", [](const ir::KernelGraph& g) { return ir::canonical_hash(g); })
      .def("check",
           [](const ir::KernelGraph& g, const std::string& target) {
             ok_or_raise(driver::validate(g, find_target_or_raise(target)));
           },
           py::arg("target") = "cpu")
      .def("__eq__", [](const ir::KernelGraph& a, const ir::KernelGraph& b) { return a == b; });

  m.def("parse", [](const std::string& text, const std::string& source) {
    auto g = ir::parse_graph(text);
    if (!g.ok()) raise(source + ":" + g.status().message());
    return std::move(g).value();
  });
  m.def("load", [](const std::string& path) {
    return value_or_raise(driver::load_graph_file(path));
  });

  py::class_<verify::Verdict>(m, "Verdict")
      .def_property_readonly("kind",
                             [](const verify::Verdict& v) { return std::string(verify::verdict_name(v.kind)); })
      .def_readonly("summary", &verify::Verdict::summary)
      .def_property_readonly("verified",
                             [](const verify::Verdict& v) { return v.kind == verify::VerdictKind::kVerified; })
      .def_property_readonly("accepted",
                             [](const verify::Verdict& v) { return verify::accepted(v.kind); })
      .def_property_readonly("delta", [](const verify::Verdict& v) -> py::object {
        if (v.delta_achieved < 0) return py::none();
        return py::float_(v.delta_achieved);
      })
      .def_readonly("tests", &verify::Verdict::tests)
      .def_readonly("lax", &verify::Verdict::lax)
      .def_readonly("difference", &verify::Verdict::difference)
      .def_readonly("seconds", &verify::Verdict::seconds)
      .def("__repr__", [](const verify::Verdict& v) {
        return "<Verdict " + std::string(verify::verdict_name(v.kind)) + ": " + v.summary + ">";
      });
  m.def(
      "verify",
      [](const ir::KernelGraph& ref, const ir::KernelGraph& cand, double delta, uint64_t seed,
         bool screen) {
        verify::VerifyOptions o;
        o.mode = screen ? verify::Mode::kScreen : verify::Mode::kCertify;
        o.delta = delta;
        o.seed = seed;
        Result<verify::Verdict> v = [&] {
          py::gil_scoped_release release;
          return driver::verify_graphs(ref, cand, o);
        }();
        return value_or_raise(std::move(v));
      },
      py::arg("ref"), py::arg("cand"), py::arg("delta"), py::arg("seed"), py::arg("screen"));

  m.def("check_search_options", [](const py::dict& kw) {
    search::SearchOptions s;
    apply_search_kwargs(s, kw);  // raises as superoptimize would
  });
  py::class_<Optimized>(m, "Optimized")
      .def_readonly("best", &Optimized::best)
      .def_readonly("chosen", &Optimized::chosen)
      .def_readonly("verdict", &Optimized::verdict)
      .def_readonly("verified", &Optimized::verified)
      .def_readonly("report", &Optimized::report)
      .def_readonly("source", &Optimized::source)
      .def_readonly("speedup", &Optimized::speedup)
      .def_readonly("measured", &Optimized::measured)
      .def_readonly("from_cache", &Optimized::from_cache)
      .def_readonly("cache_note", &Optimized::cache_note)
      .def_readonly("target", &Optimized::target);
  m.def("optimize", &optimize, py::arg("program"), py::arg("target"), py::arg("time_budget"),
        py::arg("top"), py::arg("runs"), py::arg("accept_unproved"), py::arg("cache"),
        py::arg("name"), py::arg("progress"), py::arg("options"));

  m.def("import_hlo", [](const std::string& path) {
    std::ifstream f(path);
    if (!f) raise("cannot read " + path);
    std::stringstream text;
    text << f.rdbuf();
    return value_or_raise(ir::import_hlo(text.str(), path)).graph;
  });
  py::class_<PyEnv>(m, "Env")
      .def(py::init([](const ir::KernelGraph& program, const std::string& target,
                       const std::string& oracle, double region_budget, double search_budget,
                       int max_region_ops, int options, int runs, uint64_t seed, bool simplify) {
             driver::ModelOptions o;
             o.search.target = find_target_or_raise(target);
             o.search.min_blocks = search::default_min_blocks(o.search.target);
             o.search.seed = seed;
             o.oracle = oracle;
             o.region_budget_s = region_budget;
             o.search_budget_s = search_budget;
             o.fusion.max_ops = max_region_ops;
             o.options_per_region = options;
             o.runs = runs;
             o.seed = seed + 1;
             o.strategy.seed = seed + 1;
             o.simplify = simplify;
             ok_or_raise(driver::validate(program, o.search.target));
             auto e = std::make_unique<PyEnv>();
             e->session = value_or_raise(driver::ModelSession::make(program, o));
             e->env = std::make_unique<rewrite::Env>(e->session->env());
             return e;
           }),
           py::arg("program"), py::arg("target"), py::arg("oracle"), py::arg("region_budget"),
           py::arg("search_budget"), py::arg("max_region_ops"), py::arg("options"),
           py::arg("runs"), py::arg("seed"), py::arg("simplify"))
      .def_property_readonly("state", [](const PyEnv& e) { return e.env->state(); })
      .def("dag_hash", [](const PyEnv& e) { return e.env->dag_hash(); })
      .def("get_alternatives",
           [](PyEnv& e) {
             Result<const std::vector<rewrite::AltNode>*> n = [&] {
               py::gil_scoped_release release;
               return e.env->get_alternatives();
             }();
             const std::vector<rewrite::AltNode>* nodes = value_or_raise(std::move(n));
             py::list l;
             for (const rewrite::AltNode& x : *nodes) l.append(alt_node_dict(e.env->state(), x));
             return l;
           })
      .def("apply",
           [](PyEnv& e, const std::vector<int>& actions) {
             Result<rewrite::Applied> a = [&] {
               py::gil_scoped_release release;
               return e.env->apply(actions);
             }();
             rewrite::Applied x = value_or_raise(std::move(a));
             py::dict d;
             d["actions"] = x.actions;
             d["rejected"] = x.rejected;
             d["pruned_ops"] = x.pruned_ops;
             return d;
           })
      .def("evaluate",
           [](PyEnv& e) {
             Result<double> t = [&] {
               py::gil_scoped_release release;
               return e.env->evaluate();
             }();
             return value_or_raise(std::move(t));
           })
      .def("reset", [](PyEnv& e) { e.env = std::make_unique<rewrite::Env>(e.session->env()); })
      .def("run_strategy",
           [](PyEnv& e, const std::string& name) {
             rewrite::Env env = e.session->env();
             Result<rewrite::StrategyResult> r = [&] {
               py::gil_scoped_release release;
               return rewrite::run_strategy(name, env, e.session->strategy_options());
             }();
             rewrite::StrategyResult x = value_or_raise(std::move(r));
             py::dict d;
             d["strategy"] = x.strategy;
             d["best"] = x.best;
             d["best_seconds"] = x.best_s;
             d["start_seconds"] = x.start_s;
             py::list decisions;
             for (const rewrite::Decision& k : x.decisions) {
               py::dict y;
               y["actions"] = k.actions;
               y["rejected"] = k.rejected;
               y["taken"] = k.taken;
               y["verdicts"] = k.verdicts;
               y["hash"] = k.hash;
               y["seconds"] = k.seconds;
               decisions.append(y);
             }
             d["decisions"] = decisions;
             d["evaluations"] = x.stats.evaluations;
             d["seconds"] = x.seconds;
             return d;
           })
      .def_property_readonly("oracle", [](const PyEnv& e) { return e.session->oracle_text(); });

  py::class_<CpuKernel>(m, "CpuKernel")
      .def(py::init<const ir::KernelGraph&>())
      .def("run", &CpuKernel::run);
  py::class_<CudaKernel>(m, "CudaKernel")
      .def(py::init<const ir::KernelGraph&, const std::string&, int>())
      .def("workspace_bytes", &CudaKernel::workspace_bytes)
      .def("run", &CudaKernel::run);
}
