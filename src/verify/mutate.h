// Seeded random mutations of uGraphs: the generator of the verifier's differential fuzzer
// (issue 19). driver/fuzz_verifier.h runs its trials against the float64 interpreter;
// bench/verify_fuzz.cc and tests/verify/fuzz_verifier_test.cc drive it.
//
// CONTRACT. make_trial(seeds, kind, seed, index) returns one (reference, candidate) pair built
// from a seed pair (a program and one of its hand-written forms, or the program itself):
//   1. sometimes (kSharedConstantRate) one scale constant that the reference and the candidate
//      share is replaced in both by an edge value (0, 2^31 - 1, p, 2^62, INT64_MIN, ...), so that
//      references with huge constants exist and the candidate's mutations can alias them;
//   2. the candidate gets one mutation of `kind` (the trial's kind: callers spread trials evenly
//      over the kinds) and sometimes (kSecondMutationRate) a second one of a random kind.
// Mutations edit the canonical text form (ir::print_graph) line by line, and the result is
// parsed back: a mutant is exactly as valid as the parser and the builders say. `status` is an
// error when the text does not parse, when the graph exceeds kFuzzMemoryLimits, or when the
// candidate's inputs or its multiset of output shapes differ from the reference's (the
// verifier's interface). An invalid mutant is counted (invalid_mutants) and another one drawn;
// after 4 the trial is invalid, counted by the caller and never compared. `no_site` says
// that no seed pair had a place for the kind. Nothing here says whether a pair is equivalent:
// many mutants are (operands of add swapped, scale(1) inserted, a loop split differently), and
// the caller's ground truth decides.
// Deterministic: a trial depends only on (seeds, kind, seed, index), never on other trials, so
// trials may run in any order on any number of threads. Cost: one print and a few parses
// (microseconds for the seed corpus).
//
// Seed pairs come from a directory (load_seed_pairs): every `NAME.mu` is a reference, paired
// with itself and with every `NAME.<form>.mu` (tests/data/fuzz/seeds/ holds small versions of
// the catalog's programs and of the examples with their hand-optimized forms).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/memory.h"
#include "support/rng.h"

namespace mugraph::verify {

// clang-format off
//  enum            name             what the mutation does
#define MUGRAPH_MUTATIONS(X)                                                                   \
  X(kConstant,     "constant",      "scale factor changed; scale(c) or c then 1/c inserted")   \
  X(kOperandOrder, "operand-order", "operands of sub/div/matmul/add/mul/concat(s) swapped")    \
  X(kMap,          "map",           "an imap or omap entry, or an iterator's fmap, changed")   \
  X(kAccumulator,  "accumulator",   "accumulator fmap: sum <-> concatenation, shape repaired") \
  X(kLoopRange,    "loop-range",    "for-loop range changed, in-loop sum groups rescaled")     \
  X(kDropOp,       "drop-op",       "an op removed, its output replaced by an operand")        \
  X(kDuplicateOp,  "duplicate-op",  "an op applied twice, or copied (dead or one use)")        \
  X(kOutputOrder,  "output-order",  "two outputs swapped (kernel, saver or thread graph)")     \
  X(kOperand,      "operand",       "an operand replaced by another tensor in scope")          \
  X(kOpKind,       "op-kind",       "an element-wise op replaced by another of its arity")
// clang-format on

enum class MutationKind {
#define MG_MUTATION_ENUM(e, name, what) e,
  MUGRAPH_MUTATIONS(MG_MUTATION_ENUM)
#undef MG_MUTATION_ENUM
};

std::string_view mutation_name(MutationKind k);
std::string_view mutation_description(MutationKind k);
const std::vector<MutationKind>& all_mutations();

// Of trials, how many first change a constant shared by both programs (step 1 above), and how
// many get a second mutation: often enough that stacked edits (a swapped output plus a swapped
// operand) are common, rare enough that each kind's row mostly measures that kind.
inline constexpr double kSharedConstantRate = 0.2;
inline constexpr double kSecondMutationRate = 0.25;

// Memory limits a mutant must fit: an H100's (80 GiB, 227 KiB of shared memory per block, 255
// registers), so that a fuzzed pair is a uGraph the search could have produced for that target.
inline constexpr ir::MemoryLimits kFuzzMemoryLimits{int64_t{80} << 30, 227 << 10, 255};

// A reference program and a form of it to mutate, both in canonical text.
struct SeedPair {
  std::string name;  // "rms_matmul -> rms_matmul.fused"
  std::string ref, base;
};

// Every NAME.mu under `dir` paired with itself and with each NAME.<form>.mu, in name order.
// Fails on a file that does not parse, or when there is none.
Result<std::vector<SeedPair>> load_seed_pairs(const std::string& dir);

// One random mutation of kind `k` of the canonical text `text`; nullopt when the program has no
// place for it. `what` (if given) receives a one-line description of the edit. The result may
// be invalid (make_trial parses it).
std::optional<std::string> mutate_text(const std::string& text, MutationKind k, Rng& rng,
                                       std::string* what = nullptr);

struct Trial {
  uint64_t index = 0;
  MutationKind kind = MutationKind::kConstant;  // the first mutation's kind
  std::string seed_name;
  std::vector<std::string> edits;  // in order: "ref+cand: ...", "cand: ..."
  std::string ref_text, cand_text;
  bool no_site = false;
  int invalid_mutants = 0;    // drawn and discarded; the trial is invalid after 4
  Status status;              // ok: a valid pair with the reference's interface
  ir::KernelGraph ref, cand;  // when status is ok
};

Trial make_trial(const std::vector<SeedPair>& seeds, MutationKind kind, uint64_t seed,
                 uint64_t index);

}  // namespace mugraph::verify
