// Tensor factories, clone, detach and device copies.
#include "engine/error.h"
#include "engine/memory/allocator.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/counter_rng.h"
#include "ops/in_layout.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/strided_loop.h"
#include "ops/trace_hook.h"
#include "ops/views.h"

namespace ag::ops {

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  for (int64_t d : shape) AG_CHECK(d >= 0, "full: negative dimension in shape ", to_string(shape));
  return backend_for(device).fill(shape, value, dtype, device);
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  Tensor out = full(shape, 0.0, dtype, device);
  out.mark_zeros(Tensor::Zeros::kAll);  // Note [Known zeros]
  return out;
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}

Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype,
                   Device device) {
  AG_CHECK(static_cast<int64_t>(values.size()) == numel(shape), "from_vector: ", values.size(),
           " values do not fill shape ", to_string(shape));
  Tensor host = Tensor::empty(shape, dtype, kCPU);
  dispatch_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (size_t i = 0; i < values.size(); ++i) host.data<T>()[i] = static_cast<T>(values[i]);
  });
  return device.is_cpu() ? host : to(host, device);
}

Tensor uniform(const Shape& shape, double low, double high, uint64_t seed, DType dtype,
               Device device) {
  std::vector<double> values(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = low + (high - low) * uniform_from_counter(seed, i);
  }
  return from_vector(values, shape, dtype, device);
}

namespace {
struct OfSelf {
  static constexpr Input self{0, "self"};
};

struct Clone : OfSelf {
  static const OpSpec spec;
};
const OpSpec Clone::spec{
    "clone", {{self, {}, [](const Ctx& c) { return c.grad(); }}}, unary_forward<clone>()};
const DeclareJvp clone_jvp{Clone::spec, jvp_linear};
// Note [Batching rules]: the op on all rows at once, as it reads no shape of its input.
const DeclareBatchedJvp clone_batched_jvp{Clone::spec, jvp_linear};

// The gradient goes back to the input's device.
struct To : OfSelf {
  static const OpSpec spec;
};
const OpSpec To::spec{
    "to",
    {{self, {}, [](const Ctx& c) { return to(c.grad(), c.attrs<DeviceAttrs>().device); }}},
    {AliasKind::kPure, DeviceAttrs{},
     [](const OpArgs& a) { return to(a[self], a.attrs<DeviceAttrs>().target); }}};
const DeclareJvp to_jvp{To::spec, jvp_linear};
const DeclareBatchedJvp to_batched_jvp{To::spec, jvp_linear};

// Ops without a derivative, for the JIT (Note [Op schema]): detach shares its input's storage.
const OpSpec Detach{"detach", {OfSelf::self}, {AliasKind::kView, NoAttrs(), [](const OpArgs& a) {
                                                 return detach(a.input(0));
                                               }}};
const OpSpec ZerosLike{"zeros_like", {OfSelf::self}, unary_forward<zeros_like>()};
const OpSpec OnesLike{"ones_like", {OfSelf::self}, unary_forward<ones_like>()};
}  // namespace

namespace {
// A copy of t recorded as clone: contiguous when `strides` is null, else with those strides (Note
// [Kernels run in the output's order], ops/in_layout.h).
Tensor clone_as(const Tensor& t, const Shape* strides) {
  check_defined("clone", t, "input");
  Backend& backend = backend_for(t.device());
  auto copy = [&](const Tensor& x) {
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    backend.copy(out, x);
    return out;
  };
  return record(Clone::spec, {&t}, strides ? run_in_layout(t.shape(), *strides, copy, t) : copy(t));
}
}  // namespace

// memory_format=preserve (Note [Output layout of elementwise ops], ops/output_layout.h).
Tensor clone(const Tensor& t) {
  if (!t.defined() || t.has_row_major_strides()) return clone_as(t, nullptr);
  const Shape strides = preserve_format_strides(layout_of(t));
  return clone_as(t, &strides);
}
Tensor contiguous_clone(const Tensor& t) { return clone_as(t, nullptr); }
Tensor clone_with_strides(const Tensor& t, const Shape& strides) { return clone_as(t, &strides); }

Tensor detach(const Tensor& a) {
  check_defined("detach", a, "input");
  Tensor out = a.detach();
  trace(Detach, {&a}, out);
  return out;
}

Tensor zeros_like(const Tensor& t) {
  Tensor out = zeros(t.shape(), t.dtype(), t.device());
  trace(ZerosLike, {&t}, out);
  return out;
}
Tensor ones_like(const Tensor& t) {
  Tensor out = ones(t.shape(), t.dtype(), t.device());
  trace(OnesLike, {&t}, out);
  return out;
}

Tensor to(const Tensor& t, Device device) {
  check_defined("to", t, "input");
  if (t.device() == device) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  // Staged through host memory: simple, and only used at the edges of a computation.
  std::vector<char> host(t.nbytes());
  allocator_for(t.device().type).copy_to_host(host.data(), t.raw_data(), host.size());
  allocator_for(device.type).copy_from_host(out.raw_data(), host.data(), host.size());
  return record(To::spec, {&t}, out, DeviceAttrs{t.device(), device});
}

}  // namespace ag::ops
