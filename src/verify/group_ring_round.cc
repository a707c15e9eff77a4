#include "verify/group_ring_round.h"

#include <algorithm>
#include <optional>

#include "verify/field_eval.h"
#include "verify/finite_field.h"

namespace mugraph::verify {
namespace {

// Boxes of output shape s covering every entry once: `rows` rows (dim rank - 2, adapted to the
// terms seen: f returns the next count, 0 to stop) times at most kChunkColumns columns of the
// last dim (a wide output, e.g. an MLP's 14336 columns, would otherwise demand whole weight
// matrices per chunk), per index of the leading dims.
constexpr int64_t kChunkColumns = 512;
template <class F>
void for_each_chunk(const ir::Shape& s, F f) {
  const int r = s.rank;
  const int64_t cols = s[r - 1], nrows = r >= 2 ? s[r - 2] : 1;
  int64_t lead = 1;
  for (int d = 0; d < r - 2; ++d) lead *= s[d];
  int64_t rows = 1;
  for (int64_t l = 0; l < lead; ++l)
    for (int64_t j0 = 0; j0 < cols; j0 += kChunkColumns) {
      Box b;
      b.rank = r;
      int64_t rem = l;
      for (int d = r - 3; d >= 0; --d) b.idx[d] = {rem % s[d]}, rem /= s[d];
      for (int64_t j = j0; j < std::min(cols, j0 + kChunkColumns); ++j) b.idx[r - 1].push_back(j);
      for (int64_t i0 = 0; i0 < nrows;) {
        const int64_t i1 = std::min(nrows, i0 + rows);
        if (r >= 2) {
          b.idx[r - 2].clear();
          for (int64_t i = i0; i < i1; ++i) b.idx[r - 2].push_back(i);
        }
        const int64_t next = f(b, i1 - i0);
        if (next <= 0) return;
        rows = next;
        i0 = i1;
      }
    }
}

}  // namespace

GrRound group_ring_round(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                         const std::vector<int>& perm, Rng& rng, int threads) {
  const FieldParams f = random_group_ring_params(rng);
  FieldContext ctx(f, 0, SqrtMode::kFreshVariable, rng.next_u64());
  FieldScope scope(ctx);
  const uint64_t key = rng.next_u64();  // inputs, hashed per chunk (never all held at once)
  GrRound r;
  auto problem = [&]() {
    if (!ctx.invalid.empty()) {
      r.fallback = true;
      r.detail = ctx.invalid;
      return true;
    }
    if (ctx.zero_divisor) {
      r.outcome = FieldOutcome::kInconclusive;
      r.detail = "a divisor vanished";
      return true;
    }
    return false;
  };
  constexpr double kTermsPerChunk = double{1 << 24};  // ~256 MB of terms per program
  for (size_t i = 0; i < ref.outputs.size() && r.outcome == FieldOutcome::kEqual && !r.fallback; ++i) {
    const auto j = static_cast<size_t>(perm[i]);
    for_each_chunk(ref.tensor(ref.outputs[i]).type.shape, [&](const Box& box, int64_t rows) -> int64_t {
      std::vector<std::optional<Box>> wr(ref.outputs.size()), wc(cand.outputs.size());
      wr[i] = box;
      wc[j] = box;
      // The two programs on two threads (and a graph-defined kernel's blocks on more): a chunk
      // rarely spans two blocks, so that alone would leave a core idle.
      std::vector<std::optional<BoxTensorT<GR>>> a, b;
      parallel_in_field(threads == 1 ? 1 : 2, [&](size_t t) {
        if (t == 0) a = eval_group_ring(ref, wr, key, threads);
        if (t == 1 || (threads == 1 && ctx.invalid.empty() && !ctx.zero_divisor))
          b = eval_group_ring(cand, wc, key, threads);
      });
      if (problem()) return 0;
      const HostTensor<GR> x = gather(*a[i], box), y = gather(*b[j], box);
      DenCache cache;
      double terms = 0;
      for (size_t e = 0; e < x.data.size(); ++e) {
        bool too_large = false;
        const bool agree = group_ring_agree(x.data[e], y.data[e], cache, &too_large);
        if (too_large) {
          r.fallback = true;
          r.detail = kGroupRingTooLarge;
          return 0;
        }
        if (!agree) {
          r.outcome = FieldOutcome::kDifferent;
          r.detail = "output '" + ref.tensor(ref.outputs[i]).name + "' entry " +
                     index_text(box, static_cast<int64_t>(e)) + " differs" +
                     (ref.outputs.size() > 1 ? " from candidate output '" +
                                                   cand.tensor(cand.outputs[j]).name + "'"
                                             : std::string());
          return 0;
        }
        const GrBound g = group_ring_bound(x.data[e], y.data[e]);
        if (!(g.epsilon <= r.worst.epsilon)) r.worst = g;  // never NaN (group_ring_bound)
        terms += static_cast<double>(x.data[e].num ? x.data[e].num->size() : 1) +
                 static_cast<double>(y.data[e].num ? y.data[e].num->size() : 1);
      }
      r.compared += box.numel();
      const double per_row = std::max(1.0, terms / static_cast<double>(rows));
      return static_cast<int64_t>(std::max(1.0, std::min(1e9, kTermsPerChunk / per_row)));
    });
  }
  return r;
}

// An estimate of what a group-ring round holds at once: the first chunk of each output (one
// row, up to kChunkColumns columns) evaluated on demand in both programs, at sizeof(GR) plus
// the fast path's field copies per entry, plus the polynomial terms a chunk may reach (2^24 per program, group_ring_round).
int64_t group_ring_memory_bytes(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                                const std::vector<int>& perm) {
  int64_t most = 0;
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    const ir::Shape& s = ref.tensor(ref.outputs[i]).type.shape;
    Box b;
    b.rank = s.rank;
    for (int d = 0; d < s.rank; ++d) b.idx[d] = {0};
    b.idx[s.rank - 1].clear();
    for (int64_t j = 0; j < std::min<int64_t>(s[s.rank - 1], kChunkColumns); ++j) b.idx[s.rank - 1].push_back(j);
    std::vector<std::optional<Box>> wr(ref.outputs.size()), wc(cand.outputs.size());
    wr[i] = b;
    wc[static_cast<size_t>(perm[i])] = b;
    // Both programs at once (group_ring_round evaluates them on two threads).
    most = std::max(most, demanded_peak_entries(ref, wr) + demanded_peak_entries(cand, wc) +
                              b.numel());
  }
  // Per entry: the value, and the field copies of its fast matmul path (group_ring.cc).
  return most * static_cast<int64_t>(sizeof(GR) + sizeof(FF) + 16) +
         2 * (int64_t{1} << 24) * static_cast<int64_t>(sizeof(Term));
}

}  // namespace mugraph::verify
