// Number types for the interpreter. The interpreter needs +, -, *, / on T and the functions of
// Arith<T> below; a new number type (the finite field of the verifier) specializes Arith.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "ir/types.h"

namespace mugraph::verify {

template <class T>
struct Arith;

// x rounded (to nearest, ties to even) to what a tensor of type `dt` stores: the float run of
// the verifier's float check emulates f16/bf16 storage this way (compute stays in float, as on
// GPUs, where half tensors are loaded to float registers and rounded when written back).
//
// f16 rounds on the float's bits (as bf16 below) rather than through a _Float16 cast: without
// F16C code generation GCC calls libgcc's __truncsfhf2 for the cast, and the float check of a
// large f16 program spent over half its time there. The result is the cast's, bit for bit,
// but for NaNs, which stay NaNs (their payloads kept; tests/verify/interpret_test.cc compares
// the two around every half-precision value).
inline float round_to_f16(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x);
  const uint32_t sign = b & 0x80000000u, a = b & 0x7fffffffu;
  if (a >= 0x477ff000u)  // |x| >= 65520 (rounds to infinity), infinity or NaN
    return a > 0x7f800000u ? x : std::bit_cast<float>(sign | 0x7f800000u);
  if (a < 0x38800000u) {  // |x| < 2^-14: half subnormals, multiples of 2^-24
    // Floats in [0.5, 1) are 2^-24 apart: the sum rounds |x| to that grid (to nearest, ties
    // to even) and the difference is exact.
    const volatile float half = 0.5f;  // kept from folding (x + 0.5) - 0.5 into x
    const float r = (std::bit_cast<float>(a) + half) - half;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(r));
  }
  // Normal halves keep 10 of the float's 23 fraction bits: round off 13, ties to even.
  return std::bit_cast<float>(sign | ((a + 0x0fffu + ((a >> 13) & 1u)) & 0xffffe000u));
}

inline float round_to_storage(float x, ir::DType dt) {
  switch (dt) {
    case ir::DType::kF32: return x;
    case ir::DType::kF16: return round_to_f16(x);
    case ir::DType::kBF16: {
      if (std::isnan(x)) return x;
      uint32_t b = std::bit_cast<uint32_t>(x);
      b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
      return std::bit_cast<float>(b);
    }
  }
  return x;
}

// acc += x. A number type whose sums are expensive to build one term at a time (the group
// ring's polynomials) provides Arith<T>::add_into and finish_sum; finish_sum must run on every
// accumulated value before it is read.
template <class T>
void add_into(T& acc, const T& x) {
  if constexpr (requires { Arith<T>::add_into(acc, x); })
    Arith<T>::add_into(acc, x);
  else
    acc = acc + x;
}
template <class T>
void finish_sum(T& acc) {
  if constexpr (requires { Arith<T>::finish_sum(acc); }) Arith<T>::finish_sum(acc);
}

// Real arithmetic in double or float. The element-wise functions are the IR's definitions:
// silu(x) = x / (1 + exp(-x)); gelu(x) = x * Phi(x) with the exact normal CDF (erf form).
template <class F>
struct RealArith {
  static F zero() { return F(0); }
  static F from_rational(int64_t num, int64_t den) {
    return static_cast<F>(static_cast<double>(num) / static_cast<double>(den));
  }
  static F exp(F x) { return std::exp(x); }
  static F sqrt(F x) { return std::sqrt(x); }
  static F silu(F x) { return x / (F(1) + std::exp(-x)); }
  static F relu(F x) { return x > F(0) ? x : F(0); }
  static F gelu(F x) { return F(0.5) * x * (F(1) + std::erf(x / std::sqrt(F(2)))); }
};

// store(x, dt): the value a stored tensor of type dt holds. The float64 reference and the
// finite field keep every value exact; float32 rounds half-typed tensors (see above).
template <>
struct Arith<double> : RealArith<double> {
  static constexpr bool kRoundsStorage = false;
  static double store(double x, ir::DType) { return x; }
};
template <>
struct Arith<float> : RealArith<float> {
  static constexpr bool kRoundsStorage = true;
  static float store(float x, ir::DType dt) { return round_to_storage(x, dt); }
};

}  // namespace mugraph::verify
