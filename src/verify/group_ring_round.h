// One group-ring round of the certify mode (THE GROUP-RING TEST in verifier.h): both programs
// evaluated over Z_p[Z_q] on every output entry, a chunk of rows at a time (demand-driven, so a
// chunk never holds whole weight matrices), entries compared as rational functions, and the
// per-entry bound of the worst entry kept. verifier.cc decides how many rounds run and what
// their outcome means; this file only runs one and estimates its memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/rng.h"
#include "verify/field_test.h"
#include "verify/group_ring.h"

namespace mugraph::verify {

// What a round found: equal, a differing entry (detail names it), a vanished denominator
// (inconclusive), or that the group ring cannot evaluate these programs (fallback).
struct GrRound {
  FieldOutcome outcome = FieldOutcome::kEqual;
  std::string detail;
  int64_t compared = 0;
  GrBound worst;        // the entry with the largest per-test bound
  bool fallback = false;  // the group ring cannot evaluate these programs (detail says why)
};

// One round: fresh group-ring parameters and inputs drawn from `rng`; ref's output i is compared
// with cand's output perm[i]; the programs run on two threads unless `threads` is 1.
GrRound group_ring_round(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                         const std::vector<int>& perm, Rng& rng, int threads);

// An estimate of the bytes a round holds at once (its first chunks, both programs, and the
// polynomial terms a chunk may reach).
int64_t group_ring_memory_bytes(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                                const std::vector<int>& perm);

}  // namespace mugraph::verify
