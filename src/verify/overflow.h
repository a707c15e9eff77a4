// When the program itself overflows: which of its tensors first leaves its format's range.
// Every check that runs the program in its own precision (the float check, optimize's measured
// runs) asks this before it blames a candidate for non-finite outputs: they are the program's
// doing, and the message names where they start.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "verify/interpret.h"

namespace mugraph::verify {

struct Overflow {
  std::string tensor;     // the first kernel tensor, in program order, with a non-finite entry
  std::string precision;  // where: its declared type ("f16"), or "float64"
  // "the program itself overflows in f16: 'H' is the first tensor (in program order) that is
  // not finite"
  std::string message() const;
};

// Runs `g` in its own precision (float32 arithmetic, every stored tensor rounded to its declared
// type: verify/arith.h), or in float64 with `float64`, on `inputs` and returns the first kernel
// tensor, in program order (inputs, then each op's outputs), that holds a NaN or an infinity;
// nullopt when every tensor is finite or the run fails. Cost: one interpretation of g.
std::optional<Overflow> find_overflow(const ir::KernelGraph& g, const Tensors<double>& inputs,
                                      bool float64 = false);

}  // namespace mugraph::verify
