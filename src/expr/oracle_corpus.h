// The oracle corpus: oracle queries collected by walking the prefixes of programs
// (prefix_walk.h), answered by the e-graph fast path and checked against the Z3 reference.
// Used by the corpus test (a strided sample, within CI time) and bench/oracle_corpus (all of it).
//
// Agreement rules: an e-graph "keep" must be proved by Z3 given the e-graph's witness term as a
// hint (E-matching alone cannot always invent the witness; unaided proofs are counted too); an
// e-graph "prune" must not be proved by Z3 unaided. A Z3 timeout decides nothing and is counted.
#pragma once

#include <string>
#include <vector>

#include "expr/oracle.h"
#include "ir/graph.h"
#include "expr/prefix_walk.h"

namespace mugraph::expr {

struct CorpusProgram {
  std::string name;
  ir::KernelGraph graph;
  WalkOptions walk;
};

struct CorpusOptions {
  size_t stride = 1;       // check every stride-th query (1 = all)
  unsigned threads = 2;    // Z3 solvers run in parallel, one per thread and program
  unsigned z3_timeout_ms = 500;
};

struct CorpusReport {
  size_t queries = 0;   // distinct queries collected
  size_t checked = 0;   // compared with Z3
  size_t kept = 0, pruned = 0;   // e-graph answers among the checked
  size_t proved_hint = 0;        // kept ones Z3 proves given the witness
  size_t proved_unaided = 0;     // kept ones Z3 proves without it
  size_t disagreements = 0;
  size_t timeouts = 0;
  double egraph_seconds = 0, z3_seconds = 0;
  std::vector<std::string> per_program;  // one summary line each
  std::vector<std::string> disagreeing;  // the prefixes, with what each side said
  std::string to_string() const;
};

// The walk used for the corpus of one paper program: the small programs are walked deeper, so
// that each contributes what it has (about 12,000 distinct queries over RMSNorm+MatMul, LoRA,
// GatedMLP and GQA).
WalkOptions corpus_walk_options(const std::string& program);

CorpusReport check_oracle_corpus(std::vector<CorpusProgram> programs, const CorpusOptions& o);

}  // namespace mugraph::expr
