// The operator table: every compute operator of every IR level, declared once.
//
// Each row: enum, text name, arity, attributes it takes, class (which decides shape inference
// and interpreter semantics), its role in the Lax fragment (Mirage §5: multilinear ops, division
// and exp are provably checkable over finite fields), and the levels it may appear at
// (K = kernel graph as a predefined kernel, B = block graph, T = thread graph).
// The enum, names, text format, JSON and per-level legality are all derived from this table;
// switches over OpKind have no `default:` so -Werror=switch lists every place a new row needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"

namespace mugraph::ir {

// Attribute kinds, a bitmask per op row.
enum AttrBits : unsigned {
  kAttrNone = 0,
  kAttrDim = 1u << 0,     // int: the data dimension the op works along
  kAttrGroup = 1u << 1,   // int: sum every `group` consecutive elements along `dim`
  kAttrTimes = 1u << 2,   // int: repeat count along `dim`
  kAttrShape = 1u << 3,   // shape: reshape target
  kAttrFactor = 1u << 4,  // rational: scale factor
  kAttrPerm = 1u << 5,    // list: a permutation of the input's dims (transpose)
};

// Each attribute's key in the text format, JSON and the Python builder.
struct AttrKey {
  unsigned bit;
  const char* key;
};
inline constexpr AttrKey kAttrKeys[] = {{kAttrDim, "dim"},     {kAttrGroup, "group"},
                                        {kAttrTimes, "times"}, {kAttrShape, "shape"},
                                        {kAttrFactor, "factor"}, {kAttrPerm, "perm"}};

enum class OpClass {
  kUnary,         // element-wise, one input
  kBinary,        // element-wise, two inputs, broadcasting along size-1 dims (numpy rules)
  kMatmul,        // a[..., m, k] x b[..., k, n], leading dims batched (broadcast)
  kConcatMatmul,  // (W || X) x (Y || Z) = W Y + X Z
  kSum,           // sum(dim, group)
  kRepeat,        // repeat(dim, times): tile the tensor `times` times along dim
  kReshape,       // reshape(shape): same elements in row-major order
  kConcat,        // concat(dim): two inputs joined along dim
  kTranspose,     // transpose(perm): out[i0, .., i{r-1}] = in[j] with j[perm[d]] = i[d]
};

// Role in the Lax fragment (Mirage §5.1, used by the verifier).
enum class LaxRole {
  kMultilinear,  // linear in each input: add, matmul, sum, data movement, mul, scale...
  kDivision,     // div, reciprocal
  kExp,          // contains one exp on every path through it (exp, silu)
  kPower,        // sqrt/square: handled as multiplicative power maps
  kNonLax,       // relu, gelu: outside the fragment, float check only
};

enum LevelBits : unsigned { kLevelK = 1u, kLevelB = 2u, kLevelT = 4u };
inline constexpr unsigned kKB = kLevelK | kLevelB;
inline constexpr unsigned kKBT = kLevelK | kLevelB | kLevelT;

// clang-format off
//      enum            name             arity attrs                      class                   lax                    levels
#define MUGRAPH_OPS(X) \
  X(kMatmul,       "matmul",        2, kAttrNone,               OpClass::kMatmul,       LaxRole::kMultilinear, kKB)  \
  X(kConcatMatmul, "concat_matmul", 4, kAttrNone,               OpClass::kConcatMatmul, LaxRole::kMultilinear, kKB)  \
  X(kExp,          "exp",           1, kAttrNone,               OpClass::kUnary,        LaxRole::kExp,         kKBT) \
  X(kSquare,       "square",        1, kAttrNone,               OpClass::kUnary,        LaxRole::kPower,       kKBT) \
  X(kSqrt,         "sqrt",          1, kAttrNone,               OpClass::kUnary,        LaxRole::kPower,       kKBT) \
  X(kSilu,         "silu",          1, kAttrNone,               OpClass::kUnary,        LaxRole::kExp,         kKBT) \
  X(kRelu,         "relu",          1, kAttrNone,               OpClass::kUnary,        LaxRole::kNonLax,      kKBT) \
  X(kGelu,         "gelu",          1, kAttrNone,               OpClass::kUnary,        LaxRole::kNonLax,      kKBT) \
  X(kNeg,          "neg",           1, kAttrNone,               OpClass::kUnary,        LaxRole::kMultilinear, kKBT) \
  X(kReciprocal,   "reciprocal",    1, kAttrNone,               OpClass::kUnary,        LaxRole::kDivision,    kKBT) \
  X(kScale,        "scale",         1, kAttrFactor,             OpClass::kUnary,        LaxRole::kMultilinear, kKBT) \
  X(kAdd,          "add",           2, kAttrNone,               OpClass::kBinary,       LaxRole::kMultilinear, kKBT) \
  X(kSub,          "sub",           2, kAttrNone,               OpClass::kBinary,       LaxRole::kMultilinear, kKBT) \
  X(kMul,          "mul",           2, kAttrNone,               OpClass::kBinary,       LaxRole::kMultilinear, kKBT) \
  X(kDiv,          "div",           2, kAttrNone,               OpClass::kBinary,       LaxRole::kDivision,    kKBT) \
  X(kSum,          "sum",           1, kAttrDim | kAttrGroup,   OpClass::kSum,          LaxRole::kMultilinear, kKB)  \
  X(kRepeat,       "repeat",        1, kAttrDim | kAttrTimes,   OpClass::kRepeat,       LaxRole::kMultilinear, kKB)  \
  X(kReshape,      "reshape",       1, kAttrShape,              OpClass::kReshape,      LaxRole::kMultilinear, kKB)  \
  X(kConcat,       "concat",        2, kAttrDim,                OpClass::kConcat,       LaxRole::kMultilinear, kKB)  \
  X(kTranspose,    "transpose",     1, kAttrPerm,               OpClass::kTranspose,    LaxRole::kMultilinear, kLevelK)
// clang-format on

enum class OpKind {
#define MG_OP_ENUM(e, name, arity, attrs, cls, lax, levels) e,
  MUGRAPH_OPS(MG_OP_ENUM)
#undef MG_OP_ENUM
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int arity;
  unsigned attrs;  // AttrBits
  OpClass cls;
  LaxRole lax;
  unsigned levels;  // LevelBits
};

// The table MUGRAPH_OPS declares, indexed by OpKind (constexpr: op_info is in every inner loop).
inline constexpr OpInfo kOpTable[] = {
#define MG_OP_INFO(e, name, arity, attrs, cls, lax, levels) \
  OpInfo{OpKind::e, name, arity, attrs, cls, lax, levels},
    MUGRAPH_OPS(MG_OP_INFO)
#undef MG_OP_INFO
};
inline const OpInfo& op_info(OpKind k) { return kOpTable[static_cast<size_t>(k)]; }
const std::vector<OpInfo>& all_ops();
std::optional<OpKind> parse_op(std::string_view name);
inline std::string_view op_name(OpKind k) { return op_info(k).name; }
inline bool is_elementwise(OpKind k) {
  const OpClass c = op_info(k).cls;
  return c == OpClass::kUnary || c == OpClass::kBinary;
}

// Attribute values; only the fields named by the op's AttrBits are meaningful.
struct OpAttrs {
  int dim = 0;
  int64_t group = 1;
  int64_t times = 1;
  Shape shape;
  Rational factor;
  Shape perm;  // transpose: output dim d is input dim perm[d] (a permutation of 0..rank-1)
  bool operator==(const OpAttrs& o) const {
    return dim == o.dim && group == o.group && times == o.times && shape == o.shape &&
           factor == o.factor && perm == o.perm;
  }
};

// Infers the output type of `kind` applied to `inputs` (row-major layout), or explains why the
// inputs do not match the operator's specification. The message names the operator, the
// offending input (by position) and the shapes involved.
Result<TensorType> infer_type(OpKind kind, const OpAttrs& attrs,
                              const std::vector<TensorType>& inputs);

// Numpy-style broadcast of two shapes (right-aligned; each dim equal or 1), if compatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace mugraph::ir
