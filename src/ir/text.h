// The uGraph text format: programs, examples, golden tests and bug reports.
//
//   # comment
//   input X : f16[16, 4096]                      # optional: strides=[1, 16]
//   input W : f16[4096, 4096]                    # optional: scale=0.02 (random inputs' scale)
//   S = sum(X, dim=1, group=4096)                # predefined op: name(inputs..., attr=value...)
//   Y = scale(S, factor=1/4096)
//   Z, Q = graph_defined(X, W, grid=[128, 1, 1], forloop=64) {
//     x = input_iterator(X, imap={}, fmap=1)     # imap: grid dim -> data dim, unlisted = phi
//     w = input_iterator(W, imap={x:1}, fmap=0)  # fmap: data dim or phi
//     m = matmul(x, w)
//     a = accumulator(m, fmap=phi)               # phi: sum over iterations; d: concat along d
//     e, f = thread_graph(a) {                   # element-wise ops over registers
//       e = exp(a)
//       f = neg(e)
//       output e, f
//     }
//     output_saver(e, omap={x:1})                # i-th saver defines the op's i-th output
//     output_saver(f, omap={x:1})
//   }
//   output Z, Q
//
// At kernel level, the composites of ir/composite.h (rms_norm(X, dim=1), softmax(X, dim=1),
// attention(Q, K, V)) expand into table ops when parsed; the printer writes the expanded ops.
// Attribute values: integers, rationals (1/4096), int lists ([2, 8]), maps ({x:1, y:0}), phi.
// An input's `scale=` (after its type and strides) takes a number > 0: a decimal (0.02, 1e-3),
// an integer or a rational; it sets how large that input's random values are in run, compare,
// the float check and optimize's measured runs (verify/random_inputs.h), not what it computes.
// Names are scoped per graph: inside a block graph, input_iterator names a kernel tensor among the
// op's inputs (the k-th iterator naming a tensor passed twice takes its k-th occurrence); all
// other names refer to block tensors. print_graph output parses back to an equal graph.
#pragma once

#include <string>

#include "ir/graph.h"

namespace mugraph::ir {

// Parses a whole uGraph. Errors read "LINE:COL: what was expected / what is wrong".
Result<KernelGraph> parse_graph(const std::string& text);

// Canonical text form of `g`.
std::string print_graph(const KernelGraph& g);

}  // namespace mugraph::ir
