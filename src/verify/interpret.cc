#include "verify/interpret.h"

namespace mugraph::verify {

template Result<Tensors<double>> interpret(const ir::KernelGraph&, const Tensors<double>&);
template Result<Tensors<float>> interpret(const ir::KernelGraph&, const Tensors<float>&);

}  // namespace mugraph::verify
