// The algebraic-simplification pass in dry mode (HloEnv's AlgebraicSimplifier, as data): a
// table of rewrite rules over kernel ops, each `name: lhs => rhs` in the op text form with
// ?variables standing for any tensor, and a one-line law. A match of a rule's left side at an
// op of a state (every op of the match but the root read only inside the match, none of them a
// program output) becomes an alternative node: the matched ops (keep) or the right side built
// on the same tensors. A right side that does not build (shapes, dtypes) or does not give the
// root's exact type is no option; every option built is certified against the ops it replaces
// (the finite-field verifier), and only VERIFIED ones are proposed: a rule whose side condition
// the shapes do not meet (a divisor that is not a row factor) is refused by the proof, never
// applied. The table is tested rule by rule (tests/rewrite/rewrite_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rewrite/alt_graph.h"

namespace mugraph::rewrite {

struct SimplifyRule {
  std::string_view name;
  std::string_view lhs, rhs;  // "mul(?x, reciprocal(?y))", "div(?x, ?y)"
  std::string_view law;       // "x (1/y) = x / y"
};

const std::vector<SimplifyRule>& simplify_rules();

// Certify's verdicts by (region hash, replacement hash): "VERIFIED (certify): ..." or "" (not
// proven), so that a match met again (another state, another strategy) is not certified again.
using SimplifyProofs = std::map<std::pair<uint64_t, uint64_t>, std::string>;

// One node per match (in root op order, then rule order) with its VERIFIED option. Errors: a
// malformed rule (a bug in the table: the message names it).
Result<std::vector<AltNode>> simplify_alternatives(const ir::KernelGraph& g,
                                                   SimplifyProofs* proofs = nullptr);

}  // namespace mugraph::rewrite
