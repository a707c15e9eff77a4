// The public C++ API: load a uGraph from a file, validate it against a target, run it on seeded
// random inputs, compare two uGraphs. The CLI (tools/mugraph.cc) is a thin layer over this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "expr/oracle.h"
#include "ir/graph.h"
#include "ir/memory.h"
#include "search/search.h"
#include "target/target.h"
#include "verify/overflow.h"
#include "verify/verifier.h"

namespace mugraph::driver {

// Reads a uGraph: JSON if the file starts with '{', the text format otherwise. Errors are
// prefixed with the path ("examples/x.mu:3:7: ...").
Result<ir::KernelGraph> load_graph_file(const std::string& path);

ir::MemoryLimits memory_limits(const target::Target& t);

// Full validity (Mirage Def. 2.1): the builders already checked shapes, maps and paths; this
// adds the memory limits of `t`.
Status validate(const ir::KernelGraph& g, const target::Target& t);

enum class Precision { kDouble, kFloat };

// Ok iff interpreting `g` fits in this machine's memory: every kernel tensor, held as 8-byte
// numbers, within half the physical RAM (the block-level tiles are small next to them). The
// error gives the bytes needed, instead of an out-of-memory crash mid-run.
Status check_interpretable(const ir::KernelGraph& g);

struct OutputSummary {
  std::string name;
  ir::Shape shape;
  double min = 0, max = 0, mean = 0, rms = 0;
  std::vector<double> head;  // first few values
  int64_t non_finite = 0;    // NaN or Inf entries
};

// Interprets `g` on random inputs drawn from `seed`: uniform, weights in +-1/sqrt(fan-in),
// activations in [-1, 1), or as the program's `scale=` says (verify/random_inputs.h).
Result<std::vector<OutputSummary>> run_graph(const ir::KernelGraph& g, uint64_t seed,
                                             Precision p);

struct OutputDiff {
  std::string name;
  double max_abs = 0;  // max_i |a_i - b_i|
  double max_rel = 0;  // max_abs / max_i |a_i| (normwise: no blow-up at entries near zero)
};

// The difference of `got` from the reference values `ref` (same length); NaN in either gives
// max_abs = max_rel = NaN, which fails every tolerance.
OutputDiff diff_values(const std::string& name, const std::vector<double>& ref,
                       const std::vector<double>& got);

// Interprets `a` and `b` on the same random inputs, drawn as for `a` (run_graph), the reference.
// The graphs must have the same inputs (names, dtypes, shapes, in order) and the same number of
// outputs with equal shapes.
Result<std::vector<OutputDiff>> compare_graphs(const ir::KernelGraph& a, const ir::KernelGraph& b,
                                               uint64_t seed, Precision p);

// Where `g`, run as run_graph(g, seed, p) runs it (kFloat: in its own precision; kDouble: in
// float64), first becomes non-finite: the first tensor in program order; nullopt when every
// tensor is finite. What `run` and `compare` say instead of blaming a candidate when the
// program's own outputs are not finite.
Result<std::optional<verify::Overflow>> find_run_overflow(const ir::KernelGraph& g, uint64_t seed,
                                                          Precision p);

// Applies `--input-scale NAME=SCALE` flags to `g` (ir::set_input_scale): a scale > 0 (0.02,
// 1e-3) for the random values of input NAME, over the role's default and the program's own
// `scale=`. Errors name the flag: no '=', a bad or non-positive number, an unknown input (the
// message lists the inputs).
Status apply_input_scales(ir::KernelGraph& g, const std::vector<std::string>& specs);

// Checks that `cand` computes what `ref` computes (verify/verifier.h: screen or certify), after
// making sure both fit in this machine's memory.
Result<verify::Verdict> verify_graphs(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                                      const verify::VerifyOptions& o);

// The abstract expression (expr/abstract.h) of every kernel tensor of `g`, in tensor order.
// A term with a large tree (shared subterms make it exponential in the program's length) is
// printed with `@name` for a subterm that is an earlier tensor's term, and cut at a few
// thousand characters (expr::to_string_abbreviated); `abbreviated` says it was.
struct TensorExpr {
  std::string tensor;
  std::string expr;
  bool abbreviated = false;
};
std::vector<TensorExpr> tensor_expressions(const ir::KernelGraph& g);

// Asks the pruning oracle (expr/oracle.h), built for `program`'s outputs, about each prefix
// given in the expression text form. Errors name the prefix that does not parse.
struct PrefixAnswer {
  std::string prefix;
  bool keep = false;
};
struct OracleReport {
  std::vector<PrefixAnswer> answers;
  expr::OracleStats stats;
};
Result<OracleReport> ask_oracle(const ir::KernelGraph& program,
                                const std::vector<std::string>& prefixes, expr::OracleMode mode);

// The superoptimizer (search/search.h): validates `program` against options.target, then
// partitions, searches, stitches and certifies.
Result<search::SuperoptimizeResult> superoptimize(const ir::KernelGraph& program,
                                                  const search::SearchOptions& options);

// Whether a search's best uGraph may be handed out: VERIFIED always; PASSED or UNPROVED (the
// float check passed, no proof) only with the user's opt-in (--accept-unproved); a rejected
// one never.
bool hand_out_best(const search::SuperoptimizeResult& r, bool accept_unproved);

// The loud line of a search whose best uGraph is not VERIFIED (empty when it is).
std::string not_verified_line(const search::SuperoptimizeResult& r, bool accept_unproved);

// Writes a search's results under `dir` (created if needed): per Lax part k and candidate i,
// part<k>/cand<i>.mu and .json (best first), each with its verdict in its header (a "# verdict:"
// comment; a "verdict" key in JSON); best.mu / best.json (the stitched answer, with the certify
// verdict in its header) only when hand_out_best says so; summary.txt (the summary table of
// every part and the certify verdict). Returns the summary text.
Result<std::string> write_search_results(const search::SuperoptimizeResult& r,
                                         const ir::KernelGraph& program, const std::string& dir,
                                         bool accept_unproved = false);

// A uGraph's text with a "# verdict: ..." header line (what every written candidate carries).
std::string text_with_verdict(const ir::KernelGraph& g, const std::string& verdict);

// The summary text alone (what write_search_results puts in summary.txt).
std::string search_summary(const search::SuperoptimizeResult& r, const ir::KernelGraph& program);

}  // namespace mugraph::driver
