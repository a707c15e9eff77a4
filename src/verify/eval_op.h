// Semantics of every operator of the op table (ir/ops.h) on whole host tensors, generic over the
// number type. This is the single source of op semantics: the kernel level, the block level
// (on tiles) and thread graphs all call eval_op.
#pragma once

#include <array>
#include <vector>

#include "ir/ops.h"
#include "support/deadline.h"
#include "verify/arith.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {
namespace detail {

// Strides of `in` viewed in the broadcast shape `out` (right-aligned; size-1 dims get stride 0).
inline std::array<int64_t, 4> broadcast_strides(const ir::Shape& in, const ir::Shape& out) {
  std::array<int64_t, 4> st{};
  int64_t stride = 1;
  for (int i = in.rank - 1; i >= 0; --i) {
    const int o = out.rank - in.rank + i;
    st[static_cast<size_t>(o)] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return st;
}

// Calls f(out_linear_index, offsets...) for every index of `out`, where offsets[k] is the
// linear offset into the k-th broadcast operand.
template <size_t K, class F>
void for_each_broadcast(const ir::Shape& out, const std::array<std::array<int64_t, 4>, K>& st, F f) {
  std::array<int64_t, 4> idx{};
  const int64_t n = out.numel();
  std::array<int64_t, K> off{};
  for (int64_t lin = 0; lin < n; ++lin) {
    f(lin, off);
    for (int d = out.rank - 1; d >= 0; --d) {  // increment the multi-index
      const auto ud = static_cast<size_t>(d);
      ++idx[ud];
      for (size_t k = 0; k < K; ++k) off[k] += st[k][ud];
      if (idx[ud] < out[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= st[k][ud] * idx[ud];
      idx[ud] = 0;
    }
  }
}

// Calls f(out_linear_index, offsets, len, steps) for every run of `out`'s last dimension: the
// run's first entry at out_linear_index, operand k's at offsets[k], its next entries steps[k]
// apart (0: broadcast along the run, or its stride).
template <size_t K, class F>
void for_each_run(const ir::Shape& out, const std::array<std::array<int64_t, 4>, K>& st, F f) {
  if (out.rank == 0) {
    f(int64_t{0}, std::array<int64_t, K>{}, int64_t{1}, std::array<int64_t, K>{});
    return;
  }
  const int last = out.rank - 1;
  ir::Shape rows = out;
  rows[last] = 1;
  std::array<int64_t, K> steps{};
  for (size_t k = 0; k < K; ++k) steps[k] = st[k][static_cast<size_t>(last)];
  const int64_t len = out[last];
  if (len == 0) return;
  for_each_broadcast<K>(rows, st, [&](int64_t r, const std::array<int64_t, K>& off) { f(r * len, off, len, steps); });
}

template <class T>
T unary(ir::OpKind op, const ir::OpAttrs& a, const T& x) {
  using A = Arith<T>;
  switch (op) {
    case ir::OpKind::kExp: return A::exp(x);
    case ir::OpKind::kSquare: return x * x;
    case ir::OpKind::kSqrt: return A::sqrt(x);
    case ir::OpKind::kSilu: return A::silu(x);
    case ir::OpKind::kRelu: return A::relu(x);
    case ir::OpKind::kGelu: return A::gelu(x);
    case ir::OpKind::kNeg: return A::zero() - x;
    case ir::OpKind::kReciprocal: return A::from_rational(1, 1) / x;
    case ir::OpKind::kScale: return x * A::from_rational(a.factor.num, a.factor.den);
    default: break;
  }
  MG_CHECK(false, "not a unary op: " << ir::op_name(op));
}

template <class T>
T binary(ir::OpKind op, const T& x, const T& y) {
  switch (op) {
    case ir::OpKind::kAdd: return x + y;
    case ir::OpKind::kSub: return x - y;
    case ir::OpKind::kMul: return x * y;
    case ir::OpKind::kDiv: return x / y;
    default: break;
  }
  MG_CHECK(false, "not a binary op: " << ir::op_name(op));
}

// out += a b for row-major m x k and k x n blocks: the generic loop (number types with a faster
// one, like the finite field, overload matmul_block in their own namespace).
template <class T>
void matmul_block(const T* pa, const T* pb, T* po, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      if (p == 0) check_deadline();  // per row: a model-size matmul takes seconds
      const T av = pa[i * k + p];
      for (int64_t j = 0; j < n; ++j) po[i * n + j] = po[i * n + j] + av * pb[p * n + j];
    }
}

// out[..., m, n] += a[..., m, k] * b[..., k, n] with batch dims broadcast.
template <class T>
void matmul_acc(const HostTensor<T>& a, const HostTensor<T>& b, HostTensor<T>& out) {
  const ir::Shape& os = out.shape;
  const int64_t m = os[os.rank - 2], n = os[os.rank - 1], k = a.shape[a.shape.rank - 1];
  ir::Shape batch, ab, bb;
  batch.rank = os.rank - 2;
  ab.rank = a.shape.rank - 2;
  bb.rank = b.shape.rank - 2;
  for (int i = 0; i < batch.rank; ++i) batch[i] = os[i];
  for (int i = 0; i < ab.rank; ++i) ab[i] = a.shape[i];
  for (int i = 0; i < bb.rank; ++i) bb[i] = b.shape[i];
  if (batch.rank == 0) batch = ir::Shape{1};
  if (ab.rank == 0) ab = ir::Shape{1};
  if (bb.rank == 0) bb = ir::Shape{1};
  const std::array<std::array<int64_t, 4>, 2> st = {broadcast_strides(ab, batch),
                                                    broadcast_strides(bb, batch)};
  for_each_broadcast<2>(batch, st, [&](int64_t bi, const std::array<int64_t, 2>& off) {
    const T* pa = a.data.data() + off[0] * m * k;
    const T* pb = b.data.data() + off[1] * k * n;
    T* po = out.data.data() + bi * m * n;
    matmul_block(pa, pb, po, m, k, n);
  });
}

}  // namespace detail

// Applies `op` to `in`; `out_shape` comes from ir::infer_type (the caller has validated shapes).
template <class T>
HostTensor<T> eval_op(ir::OpKind op, const ir::OpAttrs& at, const std::vector<const HostTensor<T>*>& in,
                      const ir::Shape& out_shape) {
  HostTensor<T> out(out_shape, Arith<T>::zero());
  const HostTensor<T>& a = *in[0];
  switch (ir::op_info(op).cls) {
    case ir::OpClass::kUnary:
      if constexpr (requires(std::vector<T>& v) { Arith<T>::sqrt_all(v); }) {
        if (op == ir::OpKind::kSqrt) {  // all roots at once (Arith<FF>: interleaved powers)
          out.data = a.data;
          Arith<T>::sqrt_all(out.data);
          return out;
        }
      }
      if (op == ir::OpKind::kScale && !a.data.empty()) {  // the factor once (a field division)
        const T c = Arith<T>::from_rational(at.factor.num, at.factor.den);
        for (size_t i = 0; i < a.data.size(); ++i) {
          if ((i & 0xffff) == 0) check_deadline();
          out.data[i] = a.data[i] * c;
        }
        return out;
      }
      for (size_t i = 0; i < a.data.size(); ++i) {
        if ((i & 0xffff) == 0) check_deadline();  // per 64K entries: model-size tensors
        out.data[i] = detail::unary(op, at, a.data[i]);
      }
      return out;
    case ir::OpClass::kBinary: {
      const std::array<std::array<int64_t, 4>, 2> st = {
          detail::broadcast_strides(a.shape, out_shape), detail::broadcast_strides(in[1]->shape, out_shape)};
      const HostTensor<T>& b = *in[1];
      if constexpr (requires(std::vector<T>& v) { Arith<T>::invert_all(v); }) {
        if (op == ir::OpKind::kDiv) {  // exact division: all inverses at once, then multiply
          std::vector<T> inv = b.data;
          Arith<T>::invert_all(inv);
          detail::for_each_run<2>(out_shape, st, [&](int64_t i, const std::array<int64_t, 2>& o, int64_t len,
                                                     const std::array<int64_t, 2>& step) {
            if ((i & 0xffff) < len) check_deadline();
            Arith<T>::times_inverse_run(a.data.data() + o[0], step[0], inv.data() + o[1], step[1],
                                        out.data.data() + i, len);
          });
          return out;
        }
      }
      detail::for_each_broadcast<2>(out_shape, st, [&](int64_t i, const std::array<int64_t, 2>& o) {
        if ((i & 0xffff) == 0) check_deadline();
        out.data[static_cast<size_t>(i)] = detail::binary(op, a.data[static_cast<size_t>(o[0])], b.data[static_cast<size_t>(o[1])]);
      });
      return out;
    }
    case ir::OpClass::kMatmul:
      detail::matmul_acc(a, *in[1], out);
      return out;
    case ir::OpClass::kConcatMatmul:  // (W || X) x (Y || Z) = W Y + X Z
      detail::matmul_acc(a, *in[2], out);
      detail::matmul_acc(*in[1], *in[3], out);
      return out;
    case ir::OpClass::kSum: {
      const Split3 s = split_at(a.shape, at.dim);
      const int64_t nout = s.n / at.group;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t j = 0; j < nout; ++j)
          for (int64_t t = 0; t < at.group; ++t)
            for (int64_t q = 0; q < s.inner; ++q) {
              T& dst = out.data[static_cast<size_t>((o * nout + j) * s.inner + q)];
              add_into(dst, a.data[static_cast<size_t>((o * s.n + j * at.group + t) * s.inner + q)]);
            }
      for (T& x : out.data) finish_sum(x);
      return out;
    }
    case ir::OpClass::kRepeat: {
      const Split3 s = split_at(a.shape, at.dim);
      const int64_t nout = s.n * at.times;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t j = 0; j < nout; ++j)
          for (int64_t q = 0; q < s.inner; ++q)
            out.data[static_cast<size_t>((o * nout + j) * s.inner + q)] =
                a.data[static_cast<size_t>((o * s.n + j % s.n) * s.inner + q)];
      return out;
    }
    case ir::OpClass::kReshape:
      out.data = a.data;
      return out;
    case ir::OpClass::kTranspose: {
      // Output element i (row-major in out_shape) reads the input at the index whose dim
      // perm[d] is i's index d: walk i with the input's strides permuted.
      const int r = out_shape.rank;
      std::array<int64_t, ir::kMaxRank> in_stride{}, step{}, idx{};
      int64_t s = 1;
      for (int d = r - 1; d >= 0; --d) in_stride[static_cast<size_t>(d)] = s, s *= a.shape[d];
      for (int d = 0; d < r; ++d) step[static_cast<size_t>(d)] = in_stride[static_cast<size_t>(at.perm[d])];
      int64_t src = 0;
      for (size_t i = 0; i < out.data.size(); ++i) {
        if ((i & 0xffff) == 0) check_deadline();
        out.data[i] = a.data[static_cast<size_t>(src)];
        for (int d = r - 1; d >= 0; --d) {  // next row-major output index
          const size_t u = static_cast<size_t>(d);
          src += step[u];
          if (++idx[u] < out_shape[d]) break;
          src -= step[u] * idx[u];
          idx[u] = 0;
        }
      }
      return out;
    }
    case ir::OpClass::kConcat: {
      const HostTensor<T>& b = *in[1];
      const Split3 sa = split_at(a.shape, at.dim), sb = split_at(b.shape, at.dim);
      out.data.clear();
      for (int64_t o = 0; o < sa.outer; ++o) {
        const auto* pa = a.data.data() + o * sa.n * sa.inner;
        const auto* pb = b.data.data() + o * sb.n * sb.inner;
        out.data.insert(out.data.end(), pa, pa + sa.n * sa.inner);
        out.data.insert(out.data.end(), pb, pb + sb.n * sb.inner);
      }
      return out;
    }
  }
  MG_CHECK(false, "bad op class");
}

}  // namespace mugraph::verify
