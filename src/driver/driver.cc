#include "driver/driver.h"

#include "expr/abstract.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "ir/builder.h"
#include "ir/json.h"
#include "ir/text.h"
#include "support/rng.h"
#include "verify/interface.h"
#include "verify/interpret.h"
#include "verify/overflow.h"
#include "verify/random_inputs.h"

namespace mugraph::driver {

Result<ir::KernelGraph> load_graph_file(const std::string& path) {
  // A directory opens as a stream on Linux and reads as nothing: say what it is instead of
  // parsing an empty program ("kernel graph has no inputs").
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error(path, ": is a directory, not a uGraph file");
  std::ifstream in(path);
  if (!in) return error(path, ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return error(path, ": cannot read file");
  const std::string text = ss.str();
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return error(path, text.empty() ? ": is empty" : ": holds only white space",
                 ", not a uGraph file");
  if (text[first] == '{') {
    auto g = ir::from_json(text);
    if (!g.ok()) return Status::error(path + ": " + g.status().message());
    return g;
  }
  auto g = ir::parse_graph(text);
  if (!g.ok()) return Status::error(path + ":" + g.status().message());
  return g;
}

ir::MemoryLimits memory_limits(const target::Target& t) {
  return {t.device_memory_bytes, t.shared_memory_per_block, t.max_registers_per_thread};
}

Status validate(const ir::KernelGraph& g, const target::Target& t) {
  return ir::check_memory(g, memory_limits(t)).with_context("target " + t.name + ": ");
}

Status check_interpretable(const ir::KernelGraph& g) {
  int64_t elements = 0;
  for (const ir::Tensor& t : g.tensors) elements += t.type.shape.numel();
  const int64_t need = elements * static_cast<int64_t>(sizeof(double));
  const int64_t have = target::local_cpu().device_memory_bytes / 2;
  if (need > have)
    return error("interpreting this graph needs ", need >> 20, " MiB of host memory for its tensors; ",
                 "this machine allows ", have >> 20, " MiB (half its RAM)");
  return ok_status();
}

namespace {

template <class T>
Result<std::vector<std::vector<double>>> run_as(const ir::KernelGraph& g,
                                                const std::vector<verify::HostTensor<double>>& in) {
  MG_ASSIGN_OR_RETURN(auto outs, verify::interpret<T>(g, verify::convert<T>(in)));
  std::vector<std::vector<double>> r;
  for (const auto& t : outs) r.emplace_back(t.data.begin(), t.data.end());
  return r;
}

// `inputs_as`'s random inputs from `seed` (verify/random_inputs.h: scaled by its roles and its
// own scales), which a comparison draws for both graphs.
std::vector<verify::HostTensor<double>> drawn_inputs(const ir::KernelGraph& inputs_as,
                                                     uint64_t seed) {
  Rng rng(seed);
  return verify::random_inputs(inputs_as, rng);
}

Result<std::vector<std::vector<double>>> run_values(
    const ir::KernelGraph& g, const std::vector<verify::HostTensor<double>>& inputs, Precision p) {
  MG_RETURN_IF_ERROR(check_interpretable(g));
  return p == Precision::kDouble ? run_as<double>(g, inputs) : run_as<float>(g, inputs);
}

OutputSummary summarize(const ir::Tensor& t, const std::vector<double>& v) {
  OutputSummary s;
  s.name = t.name;
  s.shape = t.type.shape;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double sum = 0, sq = 0;
  int64_t finite = 0;
  for (double x : v) {
    if (!std::isfinite(x)) {
      ++s.non_finite;
      continue;
    }
    ++finite;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    sum += x;
    sq += x * x;
  }
  if (finite > 0) {
    s.mean = sum / static_cast<double>(finite);
    s.rms = std::sqrt(sq / static_cast<double>(finite));
  }
  s.head.assign(v.begin(), v.begin() + static_cast<long>(std::min<size_t>(v.size(), 4)));
  return s;
}

}  // namespace

Result<std::vector<OutputSummary>> run_graph(const ir::KernelGraph& g, uint64_t seed, Precision p) {
  MG_RETURN_IF_ERROR(check_interpretable(g));  // before drawing inputs that may not fit
  MG_ASSIGN_OR_RETURN(auto values, run_values(g, drawn_inputs(g, seed), p));
  std::vector<OutputSummary> out;
  for (size_t i = 0; i < values.size(); ++i) out.push_back(summarize(g.tensor(g.outputs[i]), values[i]));
  return out;
}

OutputDiff diff_values(const std::string& name, const std::vector<double>& ref,
                       const std::vector<double>& got) {
  MG_CHECK(ref.size() == got.size(), "diff_values: " << ref.size() << " vs " << got.size());
  OutputDiff d;
  d.name = name;
  double scale = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    const double diff = std::fabs(ref[k] - got[k]);
    // NaN anywhere makes the comparison fail: max() would silently drop it.
    d.max_abs = std::isnan(diff) ? diff : std::max(d.max_abs, diff);
    scale = std::max(scale, std::fabs(ref[k]));
    if (std::isnan(d.max_abs)) break;
  }
  d.max_rel = std::isnan(d.max_abs) ? d.max_abs : scale > 0 ? d.max_abs / scale : d.max_abs;
  return d;
}

Result<std::vector<OutputDiff>> compare_graphs(const ir::KernelGraph& a, const ir::KernelGraph& b,
                                               uint64_t seed, Precision p) {
  MG_RETURN_IF_ERROR(verify::check_same_interface(a, b));
  MG_RETURN_IF_ERROR(check_interpretable(a));
  const auto inputs = drawn_inputs(a, seed);  // a's scales: b runs on exactly a's inputs
  MG_ASSIGN_OR_RETURN(auto va, run_values(a, inputs, p));
  MG_ASSIGN_OR_RETURN(auto vb, run_values(b, inputs, p));
  std::vector<OutputDiff> out;
  for (size_t i = 0; i < va.size(); ++i)
    out.push_back(diff_values(a.tensor(a.outputs[i]).name, va[i], vb[i]));
  return out;
}

Result<std::optional<verify::Overflow>> find_run_overflow(const ir::KernelGraph& g, uint64_t seed,
                                                          Precision p) {
  MG_RETURN_IF_ERROR(check_interpretable(g));
  return verify::find_overflow(g, drawn_inputs(g, seed), p == Precision::kDouble);
}

Status apply_input_scales(ir::KernelGraph& g, const std::vector<std::string>& specs) {
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return error("--input-scale '", spec, "': expected NAME=SCALE (e.g. W=0.02)");
    const std::string name = spec.substr(0, eq), value = spec.substr(eq + 1);
    double scale = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), scale);
    if (r.ec != std::errc() || r.ptr != value.data() + value.size() || !std::isfinite(scale) ||
        !(scale > 0))
      return error("--input-scale '", spec, "': the scale must be a finite number > 0, got '",
                   value, "'");
    MG_RETURN_IF_ERROR(
        ir::set_input_scale(g, name, scale).with_context("--input-scale '" + spec + "': "));
  }
  return ok_status();
}

Result<verify::Verdict> verify_graphs(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                                      const verify::VerifyOptions& o) {
  MG_RETURN_IF_ERROR(check_interpretable(ref));
  MG_RETURN_IF_ERROR(check_interpretable(cand));
  return verify::check(ref, cand, o);
}

std::vector<TensorExpr> tensor_expressions(const ir::KernelGraph& g) {
  // Terms up to this many nodes as a tree print in full: a few hundred characters at most;
  // every example program's terms are far smaller (the largest, nTrans', ~230 characters).
  constexpr uint32_t kFullTreeNodes = 256;
  // Longer terms are cut after this many characters, so the output stays linear in the
  // program whatever its sharing (x_{i+1} = mul(x_i, x_i) has a tree of 2^(i+1) - 1 nodes).
  constexpr size_t kMaxChars = 2000;
  expr::ExprPool pool;
  const expr::GraphExprs ex = expr::abstract_expressions(g, pool);
  std::unordered_map<expr::Expr, std::string> named;  // earlier tensors' compound terms
  std::vector<TensorExpr> out;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const expr::Expr e = ex.tensors[t];
    if (!e) continue;
    if (e->size <= kFullTreeNodes)
      out.push_back({g.tensors[t].name, expr::to_string(e)});
    else
      out.push_back({g.tensors[t].name, expr::to_string_abbreviated(e, named, kMaxChars), true});
    if (e->arity() > 0) named.emplace(e, g.tensors[t].name);
  }
  return out;
}

Result<OracleReport> ask_oracle(const ir::KernelGraph& program,
                                const std::vector<std::string>& prefixes, expr::OracleMode mode) {
  expr::ExprPool pool;
  std::vector<expr::Expr> asked;
  for (const std::string& text : prefixes) {
    auto e = expr::parse_expr(pool, text);
    if (!e.ok()) return e.status().with_context("prefix '" + text + "': ");
    asked.push_back(*e);
  }
  expr::OracleOptions o;
  o.mode = mode;
  expr::Oracle oracle(pool, expr::abstract_expressions(program, pool).outputs, o);
  OracleReport r;
  for (size_t i = 0; i < asked.size(); ++i) r.answers.push_back({prefixes[i], oracle.may_lead_to(asked[i])});
  r.stats = oracle.stats();
  return r;
}

Result<search::SuperoptimizeResult> superoptimize(const ir::KernelGraph& program,
                                                  const search::SearchOptions& options) {
  MG_RETURN_IF_ERROR(validate(program, options.target));
  MG_RETURN_IF_ERROR(check_interpretable(program));
  return search::superoptimize(program, options);
}

bool hand_out_best(const search::SuperoptimizeResult& r, bool accept_unproved) {
  if (!r.best) return false;
  if (r.verified()) return true;
  return accept_unproved && r.certify_ran && verify::accepted(r.certified.kind);
}

std::string not_verified_line(const search::SuperoptimizeResult& r, bool accept_unproved) {
  if (!r.best || r.verified()) return "";
  if (!r.certify_ran) return "";  // certify is the caller's (optimize certifies its variants)
  const std::string kind(verify::verdict_name(r.certified.kind));
  if (r.certified.cut == "memory budget")
    return "NOT VERIFIED: certify of the best uGraph did not run (" + r.certified.summary +
           "); nothing handed out: rerun with a larger --memory-budget";
  if (!r.certified.cut.empty())
    return "NOT VERIFIED: certify of the best uGraph was cut (" + r.certified.summary +
           "); nothing handed out: give the command more time (--time-budget)";
  if (!verify::accepted(r.certified.kind))
    return "NOT VERIFIED: certify rejected the best uGraph (" + kind + "); nothing handed out";
  return "NOT VERIFIED: the best uGraph is " + kind + " (" + r.certified.summary + "); " +
         (accept_unproved ? "handed out anyway (--accept-unproved)"
                          : "not handed out: rerun with --accept-unproved to take it");
}

std::string text_with_verdict(const ir::KernelGraph& g, const std::string& verdict) {
  std::string one_line = verdict;
  for (char& c : one_line)
    if (c == '\n' || c == '\r') c = ' ';
  return "# verdict: " + one_line + "\n" + ir::print_graph(g);
}

std::string search_summary(const search::SuperoptimizeResult& r, const ir::KernelGraph& program) {
  std::ostringstream os;
  os << "Lax parts: " << r.partition.parts.size() << ", non-Lax ops kept: "
     << r.partition.kept_ops.size() << "; " << r.seconds << " s\n";
  for (size_t k = 0; k < r.parts.size(); ++k) {
    os << "\n== part " << k << " (" << r.partition.parts[k].program.ops.size() << " ops): "
       << r.parts[k].candidates.size() << " candidates passed the screen\n"
       << search::summary_table(r.parts[k]);
  }
  for (const std::string& why : r.certify_rejected)
    os << "certify rejected " << why << "; the next candidate was tried\n";
  if (r.certify_ran)
    os << "\n== best: " << verify::verdict_name(r.certified.kind) << " - "
       << r.certified.summary << "\n";
  else if (!r.best)
    os << "\n== no uGraph for the whole program\n";
  if (!r.budget_note.empty()) os << r.budget_note << "\n";
  if (!r.memory_note.empty()) os << r.memory_note << "\n";
  (void)program;
  return os.str();
}

Result<std::string> write_search_results(const search::SuperoptimizeResult& r,
                                         const ir::KernelGraph& program, const std::string& dir,
                                         bool accept_unproved) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("cannot create directory '", dir, "': ", ec.message());
  auto write = [&](const fs::path& p, const std::string& text) -> Status {
    std::ofstream f(p);
    f << text;
    f.close();
    if (!f) return error("cannot write '", p.string(), "'");
    return ok_status();
  };
  auto json_with = [](const ir::KernelGraph& g, const std::string& verdict) {
    nlohmann::json j = nlohmann::json::parse(ir::to_json(g));
    j["verdict"] = verdict;
    return j.dump(1) + "\n";
  };
  // Files of an earlier run in the same directory must not outlive this one's verdicts.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("part", 0) == 0 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos)
      fs::remove_all(e.path(), ec);
  }
  for (size_t k = 0; k < r.parts.size(); ++k) {
    const fs::path part = fs::path(dir) / ("part" + std::to_string(k));
    fs::create_directories(part, ec);
    if (ec) return error("cannot create directory '", part.string(), "': ", ec.message());
    const auto& cands = r.parts[k].candidates;
    for (size_t i = 0; i < cands.size(); ++i) {
      const std::string stem = "cand" + std::to_string(i + 1);
      MG_RETURN_IF_ERROR(write(part / (stem + ".mu"),
                               text_with_verdict(cands[i].graph, cands[i].verdict_text)));
      MG_RETURN_IF_ERROR(
          write(part / (stem + ".json"), json_with(cands[i].graph, cands[i].verdict_text)));
    }
  }
  // A best.mu of an earlier run in the same directory must not outlive this one's verdict.
  for (const char* stale : {"best.mu", "best.json"})
    if (fs::exists(fs::path(dir) / stale) && !fs::remove(fs::path(dir) / stale, ec))
      return error("cannot remove the earlier '", (fs::path(dir) / stale).string(), "'");
  if (hand_out_best(r, accept_unproved)) {
    const std::string verdict = std::string(verify::verdict_name(r.certified.kind)) +
                                (r.program_itself ? std::string(": ") : " (certify): ") +
                                r.certified.summary;
    MG_RETURN_IF_ERROR(write(fs::path(dir) / "best.mu", text_with_verdict(*r.best, verdict)));
    MG_RETURN_IF_ERROR(write(fs::path(dir) / "best.json", json_with(*r.best, verdict)));
  }
  std::string summary = search_summary(r, program);
  if (const std::string loud = not_verified_line(r, accept_unproved); !loud.empty())
    summary += loud + "\n";
  MG_RETURN_IF_ERROR(write(fs::path(dir) / "summary.txt", summary));
  return summary;
}

}  // namespace mugraph::driver
