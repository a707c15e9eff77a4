#include "driver/optimize.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/text.h"
#include "search/lax_partition.h"

namespace mugraph::driver {
namespace {

namespace fs = std::filesystem;

Variant make_variant(std::string label, ir::KernelGraph g, const target::Target& t) {
  Variant v;
  v.label = std::move(label);
  v.cost = opt::estimate(g, t);
  v.graph = std::move(g);
  return v;
}

// Step 2: whole-program variants from the per-part candidates, top n by the model.
std::vector<Variant> make_variants(const ir::KernelGraph& program,
                                   const search::SuperoptimizeResult& s, const target::Target& t,
                                   int top_n) {
  const search::Partition& p = s.partition;
  const size_t parts = p.parts.size();
  std::vector<ir::KernelGraph> base;  // per part: its best candidate or itself, by the model
  for (size_t k = 0; k < parts; ++k) {
    const auto& cands = s.parts[k].candidates;
    const ir::KernelGraph& own = p.parts[k].program;
    const bool cand_wins = !cands.empty() && cands.front().model_seconds <
                                                 opt::estimate(own, t).total_s;
    base.push_back(cand_wins ? cands.front().graph : own);
  }
  auto label = [&](size_t k, size_t i) {
    return (parts > 1 ? "p" + std::to_string(k) + ":" : std::string()) + "cand" +
           std::to_string(i + 1);
  };
  std::vector<Variant> out;
  for (size_t k = 0; k < parts; ++k)
    for (size_t i = 0; i < s.parts[k].candidates.size() && static_cast<int>(i) < top_n; ++i) {
      std::vector<ir::KernelGraph> chosen = base;
      chosen[k] = s.parts[k].candidates[i].graph;
      out.push_back(make_variant(label(k, i), search::stitch(program, p, chosen), t));
      out.back().verdict = s.parts[k].candidates[i].verdict_text;
    }
  std::stable_sort(out.begin(), out.end(), [](const Variant& a, const Variant& b) {
    return a.cost.total_s < b.cost.total_s;
  });
  // One part's best candidate is the base of every other part's variants: drop repeats.
  std::vector<Variant> unique;
  for (Variant& v : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(),
                                  [&](const Variant& u) { return u.graph == v.graph; });
    if (!seen && static_cast<int>(unique.size()) < top_n) unique.push_back(std::move(v));
  }
  return unique;
}

// What step 3 needs from a backend: the program's error against the float64 interpreter (entry
// 0), and for entry i computing graph g: the median time on make_buffers(g, seed) and the
// outputs of that run.
struct Timed {
  double seconds = 0;
  std::vector<std::vector<float>> outputs;
};
struct Backend {
  std::function<Result<double>()> program_error;
  std::function<Result<Timed>(size_t, const ir::KernelGraph&)> time;
  double tolerance = 0;
  std::string device;
};

// Step 3: the program and the variants are entries 0..n of one module: check and time each.
Status measure(OptimizeReport& r, const Backend& be) {
  MG_ASSIGN_OR_RETURN(r.program_max_rel, be.program_error());
  MG_ASSIGN_OR_RETURN(const Timed ref, be.time(0, r.program.graph));
  r.program.seconds = ref.seconds;
  r.program.measured = true;
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    Variant& v = r.ranked[i];
    MG_ASSIGN_OR_RETURN(const Timed t, be.time(i + 1, v.graph));
    v.seconds = t.seconds;
    for (size_t k = 0; k < t.outputs.size(); ++k) {
      const OutputDiff d = diff_values(
          "", std::vector<double>(ref.outputs[k].begin(), ref.outputs[k].end()),
          std::vector<double>(t.outputs[k].begin(), t.outputs[k].end()));
      v.max_rel = std::isnan(d.max_rel) ? d.max_rel : std::max(v.max_rel, d.max_rel);
    }
    v.measured = !(v.max_rel > be.tolerance) && !std::isnan(v.max_rel);
    if (!v.measured)
      r.notes.push_back(v.label + ": generated code differs from the program's run (rel " +
                        std::to_string(v.max_rel) + " > " + std::to_string(be.tolerance) +
                        "): not chosen");
  }
  r.measured = true;
  r.device = be.device;
  std::vector<double> model, time;
  for (const Variant& v : r.ranked)
    if (v.measured) {
      model.push_back(v.cost.total_s);
      time.push_back(v.seconds);
    }
  r.spearman = opt::spearman(model, time);
  return {};
}

std::vector<codegen::NamedGraph> module_graphs(const OptimizeReport& r) {
  std::vector<codegen::NamedGraph> named{{"program", &r.program.graph}};
  for (size_t i = 0; i < r.ranked.size(); ++i)
    named.push_back({"v" + std::to_string(i), &r.ranked[i].graph});
  return named;
}

std::vector<std::vector<float>> values(const std::vector<runtime::Buffer>& bufs) {
  std::vector<std::vector<float>> v;
  for (const runtime::Buffer& b : bufs) v.push_back(b.values());
  return v;
}

Status measure_cpu(OptimizeReport& r, const OptimizeOptions& o) {
  MG_ASSIGN_OR_RETURN(auto mod, compile_cpu(module_graphs(r), o.jit));
  r.notes.push_back("JIT: " + std::string(mod->from_cache() ? "cache hit" : "compiled") + " in " +
                    std::to_string(mod->compile_seconds()) + " s (" + mod->path() + ")");
  Backend be;
  be.tolerance = cpu_tolerance(r.program.graph);
  be.device = "cpu";
  be.program_error = [&]() -> Result<double> {
    MG_ASSIGN_OR_RETURN(auto diffs, check_cpu(*mod, 0, r.program.graph, o.seed));
    double m = 0;
    for (const OutputDiff& d : diffs) m = std::max(m, d.max_rel);
    return m;
  };
  be.time = [&](size_t i, const ir::KernelGraph& g) -> Result<Timed> {
    CpuBuffers b = make_buffers(g, o.seed);
    Timed t;
    MG_ASSIGN_OR_RETURN(t.seconds, mod->time(i, b.in(), b.out(), o.runs));
    t.outputs = values(b.outputs);
    return t;
  };
  return measure(r, be);
}

Status measure_gpu(OptimizeReport& r, const OptimizeOptions& o,
                   const std::shared_ptr<runtime::CudaDevice>& dev) {
  MG_ASSIGN_OR_RETURN(auto mod, load_cuda(module_graphs(r), r.target, o.cuda_jit, dev));
  r.notes.push_back("measured on " + dev->name() + " (sm_" + std::to_string(dev->sm_arch()) +
                    "), CUDA events, median of " + std::to_string(o.runs) + " samples" +
                    (o.cuda_graphs ? ", launched as CUDA graphs" : ""));
  Backend be;
  be.tolerance = gpu_tolerance(r.program.graph);
  be.device = dev->name();
  be.program_error = [&]() -> Result<double> {
    MG_ASSIGN_OR_RETURN(auto diffs, check_gpu(*mod, 0, r.program.graph, o.seed, dev));
    double m = 0;
    for (const OutputDiff& d : diffs) m = std::max(m, d.max_rel);
    return m;
  };
  be.time = [&](size_t i, const ir::KernelGraph& g) -> Result<Timed> {
    MG_ASSIGN_OR_RETURN(GpuBuffers b, make_gpu_buffers(g, o.seed, dev));
    Timed t;
    MG_ASSIGN_OR_RETURN(t.seconds, mod->time(i, b.in(), b.out(), o.runs, o.cuda_graphs));
    MG_RETURN_IF_ERROR(b.download(*dev));
    t.outputs = values(b.host.outputs);
    return t;
  };
  return measure(r, be);
}

// Steps 4 and 5: the variants faster than the program, fastest first, certified until one may
// be handed out.
void choose_and_certify(const ir::KernelGraph& program, const OptimizeOptions& o,
                        OptimizeReport& r) {
  std::vector<size_t> order;
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const Variant& v = r.ranked[i];
    if (r.measured ? v.measured && v.seconds < r.program.seconds
                   : v.cost.total_s < r.program.cost.total_s)
      order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return r.measured ? r.ranked[a].seconds < r.ranked[b].seconds
                      : r.ranked[a].cost.total_s < r.ranked[b].cost.total_s;
  });
  if (order.empty()) r.notes.push_back("no variant beats the program as written; it is kept");
  verify::VerifyOptions vo = o.certify;
  vo.mode = verify::Mode::kCertify;
  int tries = 0;
  for (size_t i : order) {
    if (tries++ >= o.certify_tries) {
      r.notes.push_back("certified " + std::to_string(o.certify_tries) +
                        " variants (certify_tries); slower ones were not tried");
      break;
    }
    Variant& v = r.ranked[i];
    const verify::Verdict c = verify::check(program, v.graph, vo);
    v.verdict = std::string(verify::verdict_name(c.kind)) + " (certify): " + c.summary;
    const bool take = c.kind == verify::VerdictKind::kVerified ||
                      (o.accept_unproved && verify::accepted(c.kind));
    if (take) {
      r.best = static_cast<int>(i);
      r.certified = c;
      r.certify_ran = true;
      break;
    }
    const std::string kind(verify::verdict_name(c.kind));
    if (verify::accepted(c.kind)) {
      if (r.not_verified.empty())
        r.not_verified = "NOT VERIFIED: the faster variant " + v.label + " is " + kind + " (" +
                         c.summary + "); not handed out: rerun with --accept-unproved to take it";
    } else {
      r.notes.push_back(v.label + " rejected by certify (" + kind + "): " + c.summary);
    }
  }
  if (r.best < 0 && !order.empty())
    r.notes.push_back("no faster variant could be handed out; the program as written is kept");
}

}  // namespace

Result<OptimizeReport> optimize(const ir::KernelGraph& program, const OptimizeOptions& o) {
  OptimizeReport r;
  r.target = o.search.target;
  MG_RETURN_IF_ERROR(validate(program, r.target));
  search::SearchOptions so = o.search;
  so.certify = false;  // the chosen variant is certified in step 5
  MG_ASSIGN_OR_RETURN(r.search, driver::superoptimize(program, so));
  r.program = make_variant("program", program, r.target);
  r.ranked = make_variants(program, r.search, r.target, o.top_n);
  std::shared_ptr<runtime::CudaDevice> gpu;
  if (r.target.kind == target::Kind::kCpu) {
    MG_RETURN_IF_ERROR(measure_cpu(r, o));
  } else if (auto dev = runtime::open_cuda_device(0); dev.ok()) {
    gpu = dev.value();
    MG_RETURN_IF_ERROR(measure_gpu(r, o, gpu));
  } else {
    r.notes.push_back("target " + r.target.name + ": " + dev.status().message() +
                      "; variants are ranked by the cost model only, nothing was measured");
  }
  choose_and_certify(program, o, r);
  const codegen::NamedGraph ng{"best", &r.chosen().graph};
  if (r.target.kind == target::Kind::kCpu) {
    MG_ASSIGN_OR_RETURN(codegen::Module m, codegen::cpu::generate_cpu({ng}));
    r.best_source = m.source;
  } else {
    MG_ASSIGN_OR_RETURN(codegen::Module m, generate_cuda({ng}, r.target));
    r.best_source = m.source;
    if (!gpu) {
      // Nothing ran, but the kernel handed out must at least compile.
      if (auto so = runtime::compile_cuda(m, o.cuda_jit); so.ok())
        r.notes.push_back("best.cu compiled with nvcc for sm_80 and sm_90");
      else
        r.notes.push_back("best.cu was not compiled: " + so.status().message());
    }
  }
  return r;
}

std::string format_report(const OptimizeReport& r, const ir::KernelGraph& program) {
  std::ostringstream os;
  size_t cands = 0;
  for (const search::SearchResult& p : r.search.parts) cands += p.candidates.size();
  os << "== mugraph optimize, target " << r.target.name << " (" << r.target.sm_count
     << (r.target.kind == target::Kind::kCpu ? " cores" : " SMs") << ")\n"
     << "search: " << search::stop_reason_name(r.search.stop_reason) << ", " << cands
     << " candidates passed the screen in " << r.search.parts.size() << " Lax part(s), " << std::fixed
     << std::setprecision(1) << r.search.seconds << " s\n";
  os << "\n variant        kernels  model-us  measured-us  vs-program  max-rel-err\n";
  auto row = [&](const Variant& v, bool chosen) {
    os << (chosen ? "*" : " ") << std::left << std::setw(14) << v.label << std::right
       << std::setw(8) << v.graph.ops.size() << std::setw(10) << std::setprecision(1)
       << v.cost.total_s * 1e6;
    if (v.measured || (&v == &r.program && r.measured))
      os << std::setw(13) << std::setprecision(1) << v.seconds * 1e6 << std::setw(11)
         << std::setprecision(2) << r.program.seconds / v.seconds << "x" << std::setw(13)
         << std::scientific << std::setprecision(1) << (&v == &r.program ? r.program_max_rel : v.max_rel)
         << std::fixed;
    os << "\n";
  };
  row(r.program, r.best < 0);
  for (size_t i = 0; i < r.ranked.size(); ++i) row(r.ranked[i], static_cast<int>(i) == r.best);
  os << "(program max-rel-err: its " << (r.target.kind == target::Kind::kCpu ? "CPU" : "GPU")
     << " run vs the float64 interpreter; variants: vs the program's run)\n";
  if (r.measured)
    os << "rank correlation, model vs measured (Spearman, " << r.ranked.size()
       << " variants): " << std::setprecision(2) << r.spearman << "\n";
  const Variant& c = r.chosen();
  os << "\nchosen: " << c.label;
  if (r.measured) os << ", " << std::setprecision(2) << r.program.seconds / c.seconds
                     << "x the program as written";
  os << "\n";
  if (r.certify_ran) os << "certify: " << verify::format_verdict(r.certified, program, c.graph);
  if (r.best < 0) os << "verdict: the program itself (nothing to prove)\n";
  for (const std::string& n : r.notes) os << "note: " << n << "\n";
  if (!r.not_verified.empty() && !(r.certify_ran && r.certified.kind != verify::VerdictKind::kVerified))
    os << r.not_verified << "\n";
  if (r.certify_ran && r.certified.kind != verify::VerdictKind::kVerified)
    os << "NOT VERIFIED: the chosen variant " << c.label << " is "
       << verify::verdict_name(r.certified.kind) << ", handed out because of --accept-unproved\n";
  return os.str();
}

Status write_optimize_results(const OptimizeReport& r, const ir::KernelGraph& program,
                              const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("cannot create '", dir, "': ", ec.message());
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    std::ofstream f(fs::path(dir) / name);
    if (!(f << text)) return error("cannot write '", (fs::path(dir) / name).string(), "'");
    return {};
  };
  const std::string verdict =
      r.best < 0 ? "the program itself (nothing to prove)"
                 : std::string(verify::verdict_name(r.certified.kind)) + " (certify): " +
                       r.certified.summary;
  MG_RETURN_IF_ERROR(write("best.mu", text_with_verdict(r.chosen().graph, verdict)));
  nlohmann::json best = nlohmann::json::parse(ir::to_json(r.chosen().graph));
  best["verdict"] = verdict;
  MG_RETURN_IF_ERROR(write("best.json", best.dump(1) + "\n"));
  if (!r.best_source.empty())
    MG_RETURN_IF_ERROR(write(r.target.kind == target::Kind::kCpu ? "best_cpu.cc" : "best.cu",
                             r.best_source));
  MG_RETURN_IF_ERROR(write("report.txt", format_report(r, program)));
  // The numbers of the report for scripts (bench/cpu).
  nlohmann::json j;
  j["target"] = r.target.name;
  j["search_seconds"] = r.search.seconds;
  j["search_stop"] = std::string(search::stop_reason_name(r.search.stop_reason));
  j["measured"] = r.measured;
  j["chosen"] = r.chosen().label;
  // The chosen graph's device traffic and FLOPs by the cost model's counts: achieved
  // bandwidth / FLOP rate = these over the measured time (bench/gpu).
  j["chosen_bytes"] = r.chosen().cost.bytes;
  j["chosen_flops"] = r.chosen().cost.flops;
  j["device"] = r.device;
  j["program"] = {{"model_s", r.program.cost.total_s}, {"measured_s", r.program.seconds},
                  {"max_rel", r.program_max_rel}};
  for (const Variant& v : r.ranked)
    j["variants"].push_back({{"label", v.label}, {"kernels", v.graph.ops.size()},
                             {"model_s", v.cost.total_s}, {"measured_s", v.seconds},
                             {"measured", v.measured}, {"max_rel", v.max_rel},
                             {"verdict", v.verdict}});
  j["spearman"] = r.spearman;
  j["certified"] = r.certify_ran ? std::string(verify::verdict_name(r.certified.kind)) : "";
  j["not_verified"] = r.not_verified;
  MG_RETURN_IF_ERROR(write("report.json", j.dump(2) + "\n"));
  return write_search_results(r.search, program, (fs::path(dir) / "search").string()).status();
}

}  // namespace mugraph::driver
