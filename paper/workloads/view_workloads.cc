#include "paper/workloads/view_workloads.h"

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"

namespace ag::paper {

std::vector<double> pattern_values(int64_t n, int64_t salt, double scale) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits =
        (static_cast<uint64_t>(i) * 2654435761u + static_cast<uint64_t>(salt)) % 4294967296u;
    v[static_cast<size_t>(i)] = (static_cast<double>(bits) / 4294967296.0 * 2 - 1) * scale;
  }
  return v;
}

Tensor pattern_tensor(const Shape& shape, int64_t salt, double scale) {
  return ops::from_vector(pattern_values(numel(shape), salt, scale), shape);
}

double gradient_checksum(const TensorList& grads) {
  double sum = 0;
  int64_t k = 0;
  for (const Tensor& g : grads) {
    for (const double v : g.to_vector()) sum += v * static_cast<double>(k++ % 7 + 1);
  }
  return sum;
}

RnnInputs make_rnn_inputs(const RnnConfig& c) {
  // Weights of 1/16: pre-activations of standard deviation about 0.6 at width 256, where tanh is
  // neither linear nor saturated.
  RnnInputs in{pattern_tensor({c.batch, c.steps, c.width}, 1, 1.0),
               pattern_tensor({c.width, c.width}, 2, 1.0 / 16),
               pattern_tensor({c.width, c.width}, 3, 1.0 / 16)};
  in.x.set_requires_grad(true);
  in.w.set_requires_grad(true);
  in.u.set_requires_grad(true);
  return in;
}

RnnForward rnn_forward(const RnnInputs& in, const RnnConfig& c) {
  const int64_t saved_before = counters().bytes_saved;
  Tensor h = ops::zeros({c.batch, c.width});
  Tensor out = ops::zeros({c.batch, c.steps, c.width});
  for (int t = 0; t < c.steps; ++t) {
    h = ops::tanh(ops::add(ops::mm(ops::select(in.x, 1, t), in.w), ops::mm(h, in.u)));
    Tensor slice = ops::select(out, 1, t);  // out[:, t] = h
    ops::copy_(slice, h);
  }
  return {out, counters().bytes_saved - saved_before};
}

TensorList rnn_step(const RnnInputs& in, const RnnConfig& c) {
  const Tensor out = rnn_forward(in, c).out;
  return grad({ops::sum(out)}, {in.x, in.w, in.u});
}

const char* join_name(JoinKind kind) {
  switch (kind) {
    case JoinKind::kCat:
      return "cat";
    case JoinKind::kStack:
      return "stack";
    case JoinKind::kSplitCat:
      return "split_cat";
    case JoinKind::kUnbindStack:
      return "unbind_stack";
  }
  return "";
}

std::string join_label(JoinKind kind, int slices, int width) {
  const std::string n = std::to_string(slices), w = std::to_string(width);
  switch (kind) {
    case JoinKind::kCat:
      return "cat of " + n + " [1, " + w + "] leaves";
    case JoinKind::kStack:
      return "stack of " + n + " [" + w + "] leaves";
    case JoinKind::kSplitCat:
      return "split(1) of [" + n + ", " + w + "], then cat";
    case JoinKind::kUnbindStack:
      return "unbind of [" + n + ", " + w + "], then stack";
  }
  return "";
}

JoinInputs make_join_inputs(JoinKind kind, const JoinConfig& c) {
  JoinInputs in;
  in.kind = kind;
  const std::vector<double> values = pattern_values(int64_t{c.slices} * c.width, 4, 1.0);
  if (kind == JoinKind::kCat || kind == JoinKind::kStack) {
    for (int i = 0; i < c.slices; ++i) {
      const auto row = values.begin() + static_cast<std::ptrdiff_t>(i) * c.width;
      const Shape shape = kind == JoinKind::kCat ? Shape{1, c.width} : Shape{c.width};
      in.inputs.push_back(ops::from_vector(std::vector<double>(row, row + c.width), shape));
    }
  } else {
    in.inputs.push_back(ops::from_vector(values, {c.slices, c.width}));
  }
  for (Tensor& t : in.inputs) t.set_requires_grad(true);
  in.weights = pattern_tensor({c.slices, c.width}, 5, 1.0);
  return in;
}

TensorList join_step(const JoinInputs& in) {
  Tensor y;
  switch (in.kind) {
    case JoinKind::kCat:
      y = ops::cat(in.inputs, 0);
      break;
    case JoinKind::kStack:
      y = ops::stack(in.inputs, 0);
      break;
    case JoinKind::kSplitCat:
      y = ops::cat(ops::split(in.inputs[0], 1, 0), 0);
      break;
    case JoinKind::kUnbindStack:
      y = ops::stack(ops::unbind(in.inputs[0], 0), 0);
      break;
  }
  return grad({y}, in.inputs, GradArgs().grad_outputs({in.weights}));
}

}  // namespace ag::paper
