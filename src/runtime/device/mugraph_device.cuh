// The mugraph CUDA device library: the only header generated kernels include (codegen/cuda).
// Layered like CuTe: mg_arch.cuh (storage types, conversions, arch-guarded instruction
// wrappers) and mg_fragment.cuh (the WMMA fragment plan, plain C++ that host tests check) ->
// mg_tile.cuh (block-collective tile algorithms). The runtime embeds these files
// as text and writes them next to every generated source, so a JIT compile needs only nvcc.
#pragma once

#include <type_traits>

#include "mg_arch.cuh"
#include "mg_tile.cuh"
