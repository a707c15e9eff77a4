#include "verify/interpret.h"

#include "verify/finite_field.h"

namespace mugraph::verify {

template Result<Tensors<double>> interpret(const ir::KernelGraph&, const Tensors<double>&);
template Result<Tensors<float>> interpret(const ir::KernelGraph&, const Tensors<float>&);
template Result<Tensors<FF>> interpret(const ir::KernelGraph&, const Tensors<FF>&);

}  // namespace mugraph::verify
