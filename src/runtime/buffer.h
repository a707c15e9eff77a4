// Host-side device buffers for the CPU backend: a tensor's bytes in its storage type (f16 /
// bf16 / f32) and layout, 64-byte aligned, with conversion from and to f32 values in logical
// row-major order (what the interpreter and the tests use).
#pragma once

#include <memory>
#include <vector>

#include "ir/types.h"

namespace mugraph::runtime {

class Buffer {
 public:
  explicit Buffer(const ir::TensorType& t);
  const ir::TensorType& type() const { return type_; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  // Bytes of storage (1 + the layout's largest offset, in elements, times the element size).
  size_t bytes() const { return static_cast<size_t>(elements_ * ir::dtype_bytes(type_.dtype)); }

  // Stores `values` (row-major logical order, numel of them), rounding to the storage type
  // (nearest, ties to even: what verify/arith.h's round_to_storage does).
  void fill(const std::vector<float>& values);
  // The stored values as f32, in row-major logical order.
  std::vector<float> values() const;
  // Every storage element (layout gaps included) set to NaN, so that an element a kernel
  // never writes is caught by any comparison.
  void poison();

 private:
  ir::TensorType type_;
  int64_t elements_ = 0;  // storage elements: 1 + max offset of the layout
  std::unique_ptr<char, void (*)(void*)> data_;
};

}  // namespace mugraph::runtime
