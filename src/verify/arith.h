// Number types for the interpreter. The interpreter needs +, -, *, / on T and the functions of
// Arith<T> below; a new number type (the finite field of the verifier) specializes Arith.
#pragma once

#include <cmath>
#include <cstdint>

namespace mugraph::verify {

template <class T>
struct Arith;

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

template <>
struct Arith<double> : RealArith<double> {};
template <>
struct Arith<float> : RealArith<float> {};

}  // namespace mugraph::verify
