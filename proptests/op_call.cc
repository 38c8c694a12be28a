#include "proptests/op_call.h"

#include <stdexcept>
#include <string>

#include "ops/spec.h"

namespace ag::proptests {

Tensor call_unary(ops::OpId op, const Tensor& x) {
  const ops::OpSpec* spec = ops::find_op_spec(ops::op_name(op));
  if (spec == nullptr || spec->forward().call == nullptr) {
    throw std::logic_error(std::string("call_unary: no registered forward for ") +
                           ops::op_name(op));
  }
  const TensorList inputs{x};
  return spec->forward().call(ops::OpArgs(inputs, spec->forward().attrs));
}

}  // namespace ag::proptests
