// Hash combining for the hash-consed structures (expression pools, e-graphs).
#pragma once

#include <cstddef>

namespace mugraph {

// Folds `v` into the running hash `h` (the golden-ratio combiner: spreads small integers and
// pointers-as-integers across all bits, order-sensitive).
inline size_t hash_mix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

}  // namespace mugraph
