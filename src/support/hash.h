// Hash combining for the hash-consed structures (expression pools, e-graphs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mugraph {

// Folds `v` into the running hash `h` (the golden-ratio combiner: spreads small integers and
// pointers-as-integers across all bits, order-sensitive).
inline size_t hash_mix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

// A full-avalanche finish for a running hash (SplitMix64's finalizer): every input bit moves
// about half of the output bits, as open-addressing tables (absl's) need of both ends.
inline size_t hash_finish(size_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// 64-bit FNV-1a of a byte string: stable across runs and builds (std::hash is not), so it can
// name files, e.g. the compiled-kernel cache entries.
inline uint64_t fnv1a64(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace mugraph
