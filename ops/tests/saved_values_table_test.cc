// Note [Guarded saves], checked by a table written by hand: for every op and every pattern of
// requires_grad over its inputs, exactly which values are saved ("op:slot" keys) and how many
// bytes they take. The expectations are derived from the derivative formulas on paper (mm's grad
// for mat1 needs mat2 only, etc.), not from the spec, so a wrong guard or a wrong slot fails here.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/options.h"
#include "ops/ops.h"

namespace ag {
namespace {

using Fn = std::function<Tensor(const TensorList&)>;

struct Row {
  std::string name;
  std::vector<Shape> shapes;  // float32 inputs, one per differentiable argument
  Fn fn;
  // Elements of each value the op (or its internal ops) may save, keyed "op:slot".
  std::map<std::string, int64_t> slot_numel;
  // Pattern of requires_grad ("TF" = first input requires grad) -> saved keys. Every pattern
  // must be listed.
  std::map<std::string, std::set<std::string>> saved;
};

const std::vector<int64_t> kTargets = {2, 0};  // cross_entropy / nll_loss targets for [2, 3] inputs

Tensor in(const TensorList& t, size_t i) { return t[i]; }
// In-place ops write into a fresh copy of input 0 (a non-leaf when it requires grad).
Tensor fresh(const Tensor& t) { return ops::clone(t); }

std::vector<Row> table() {
  const Shape m23 = {2, 3}, v3 = {3};
  return {
      {"add",
       {m23, v3},
       [](const TensorList& t) { return ops::add(in(t, 0), in(t, 1)); },
       {},
       {{"FF", {}}, {"TF", {}}, {"FT", {}}, {"TT", {}}}},
      {"sub",
       {m23, v3},
       [](const TensorList& t) { return ops::sub(in(t, 0), in(t, 1)); },
       {},
       {{"FF", {}}, {"TF", {}}, {"FT", {}}, {"TT", {}}}},
      {"mul",
       {m23, v3},
       [](const TensorList& t) { return ops::mul(in(t, 0), in(t, 1)); },
       {{"mul:self", 6}, {"mul:other", 3}},
       {{"FF", {}},
        {"TF", {"mul:other"}},
        {"FT", {"mul:self"}},
        {"TT", {"mul:self", "mul:other"}}}},
      {"div",
       {m23, v3},
       [](const TensorList& t) { return ops::div(in(t, 0), in(t, 1)); },
       {{"div:self", 6}, {"div:other", 3}},
       {{"FF", {}},
        {"TF", {"div:other"}},
        {"FT", {"div:self", "div:other"}},
        {"TT", {"div:self", "div:other"}}}},
      {"pow",
       {m23, v3},
       [](const TensorList& t) { return ops::pow(in(t, 0), in(t, 1)); },
       {{"pow:self", 6}, {"pow:exponent", 3}, {"pow:result", 6}},
       {{"FF", {}},
        {"TF", {"pow:self", "pow:exponent"}},
        // The exponent's gradient selects on the exponent too, as PyTorch's pow_backward_exponent
        // (Note [pow's gradients select] in ops/elementwise.cc).
        {"FT", {"pow:self", "pow:exponent", "pow:result"}},
        {"TT", {"pow:self", "pow:exponent", "pow:result"}}}},
      {"add_scalar",
       {m23},
       [](const TensorList& t) { return ops::add(in(t, 0), 2.0); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"mul_scalar",
       {m23},
       [](const TensorList& t) { return ops::mul(in(t, 0), 2.0); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"pow_scalar",
       {m23},
       [](const TensorList& t) { return ops::pow(in(t, 0), 3.0); },
       {{"pow_scalar:self", 6}},
       {{"F", {}}, {"T", {"pow_scalar:self"}}}},
      {"neg",
       {m23},
       [](const TensorList& t) { return ops::neg(in(t, 0)); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"exp",
       {m23},
       [](const TensorList& t) { return ops::exp(in(t, 0)); },
       {{"exp:result", 6}},
       {{"F", {}}, {"T", {"exp:result"}}}},
      {"log",
       {m23},
       [](const TensorList& t) { return ops::log(in(t, 0)); },
       {{"log:self", 6}},
       {{"F", {}}, {"T", {"log:self"}}}},
      {"tanh",
       {m23},
       [](const TensorList& t) { return ops::tanh(in(t, 0)); },
       {{"tanh:result", 6}},
       {{"F", {}}, {"T", {"tanh:result"}}}},
      {"sigmoid",
       {m23},
       [](const TensorList& t) { return ops::sigmoid(in(t, 0)); },
       {{"sigmoid:result", 6}},
       {{"F", {}}, {"T", {"sigmoid:result"}}}},
      {"relu",
       {m23},
       [](const TensorList& t) { return ops::relu(in(t, 0)); },
       {{"relu:result", 6}},
       {{"F", {}}, {"T", {"relu:result"}}}},
      {"threshold_backward",
       {m23, m23},
       [](const TensorList& t) { return ops::threshold_backward(in(t, 0), in(t, 1)); },
       {{"threshold_backward:result", 6}},
       {{"FF", {}},
        {"TF", {"threshold_backward:result"}},
        {"FT", {}},
        {"TT", {"threshold_backward:result"}}}},
      {"tanh_backward",
       {m23, m23},
       [](const TensorList& t) { return ops::tanh_backward(in(t, 0), in(t, 1)); },
       {{"tanh_backward:grad", 6}, {"tanh_backward:result", 6}},
       {{"FF", {}},
        {"TF", {"tanh_backward:result"}},
        {"FT", {"tanh_backward:grad", "tanh_backward:result"}},
        {"TT", {"tanh_backward:grad", "tanh_backward:result"}}}},
      {"sigmoid_backward",
       {m23, m23},
       [](const TensorList& t) { return ops::sigmoid_backward(in(t, 0), in(t, 1)); },
       {{"sigmoid_backward:grad", 6}, {"sigmoid_backward:result", 6}},
       {{"FF", {}},
        {"TF", {"sigmoid_backward:result"}},
        {"FT", {"sigmoid_backward:grad", "sigmoid_backward:result"}},
        {"TT", {"sigmoid_backward:grad", "sigmoid_backward:result"}}}},
      {"sum",
       {m23},
       [](const TensorList& t) { return ops::sum(in(t, 0)); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"sum_dim",
       {m23},
       [](const TensorList& t) { return ops::sum(in(t, 0), 1); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"mean",
       {m23},
       [](const TensorList& t) { return ops::mean(in(t, 0)); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"mean_dim",
       {m23},
       [](const TensorList& t) { return ops::mean(in(t, 0), 0, true); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"sum_to",
       {m23},
       [](const TensorList& t) {
         return ops::sum_to(in(t, 0), {1, 3});
       },
       {},
       {{"F", {}}, {"T", {}}}},
      {"broadcast_to",
       {v3},
       [](const TensorList& t) {
         return ops::broadcast_to(in(t, 0), {2, 3});
       },
       {},
       {{"F", {}}, {"T", {}}}},
      {"reshape",
       {m23},
       [](const TensorList& t) {
         return ops::reshape(in(t, 0), {3, -1});
       },
       {},
       {{"F", {}}, {"T", {}}}},
      {"view",
       {m23},
       [](const TensorList& t) { return ops::view(in(t, 0), {6}); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"transpose",
       {m23},
       [](const TensorList& t) { return ops::transpose(in(t, 0), 0, 1); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"clone",
       {m23},
       [](const TensorList& t) { return ops::clone(in(t, 0)); },
       {},
       {{"F", {}}, {"T", {}}}},
      {"detach",
       {m23},
       [](const TensorList& t) { return ops::detach(in(t, 0)); },
       {},
       {{"F", {}}, {"T", {}}}},
      // The seed's caveat: mm's gradient for mat1 must not need mat1 (nor mat2's need mat2).
      {"mm",
       {{2, 3}, {3, 4}},
       [](const TensorList& t) { return ops::mm(in(t, 0), in(t, 1)); },
       {{"mm:self", 6}, {"mm:mat2", 12}},
       {{"FF", {}}, {"TF", {"mm:mat2"}}, {"FT", {"mm:self"}}, {"TT", {"mm:self", "mm:mat2"}}}},
      {"matmul",
       {{2, 3}, {3, 4}},
       [](const TensorList& t) { return ops::matmul(in(t, 0), in(t, 1)); },
       {{"mm:self", 6}, {"mm:mat2", 12}},
       {{"FF", {}}, {"TF", {"mm:mat2"}}, {"FT", {"mm:self"}}, {"TT", {"mm:self", "mm:mat2"}}}},
      {"bmm",
       {{2, 2, 3}, {2, 3, 4}},
       [](const TensorList& t) { return ops::bmm(in(t, 0), in(t, 1)); },
       {{"bmm:self", 12}, {"bmm:mat2", 24}},
       {{"FF", {}}, {"TF", {"bmm:mat2"}}, {"FT", {"bmm:self"}}, {"TT", {"bmm:self", "bmm:mat2"}}}},
      {"addmm",
       {{4}, {2, 3}, {3, 4}},
       [](const TensorList& t) { return ops::addmm(in(t, 0), in(t, 1), in(t, 2)); },
       {{"addmm:mat1", 6}, {"addmm:mat2", 12}},
       {{"FFF", {}},
        {"TFF", {}},
        {"FTF", {"addmm:mat2"}},
        {"FFT", {"addmm:mat1"}},
        {"TTF", {"addmm:mat2"}},
        {"TFT", {"addmm:mat1"}},
        {"FTT", {"addmm:mat1", "addmm:mat2"}},
        {"TTT", {"addmm:mat1", "addmm:mat2"}}}},
      {"linear",
       {{2, 3}, {4, 3}, {4}},
       [](const TensorList& t) { return ops::linear(in(t, 0), in(t, 1), in(t, 2)); },
       {{"linear:input", 6}, {"linear:weight", 12}},
       {{"FFF", {}},
        {"TFF", {"linear:weight"}},
        {"FTF", {"linear:input"}},
        {"FFT", {}},
        {"TTF", {"linear:input", "linear:weight"}},
        {"TFT", {"linear:weight"}},
        {"FTT", {"linear:input"}},
        {"TTT", {"linear:input", "linear:weight"}}}},
      {"linear_no_bias",
       {{2, 3}, {4, 3}},
       [](const TensorList& t) { return ops::linear(in(t, 0), in(t, 1)); },
       {{"linear:input", 6}, {"linear:weight", 12}},
       {{"FF", {}},
        {"TF", {"linear:weight"}},
        {"FT", {"linear:input"}},
        {"TT", {"linear:input", "linear:weight"}}}},
      {"log_softmax",
       {m23},
       [](const TensorList& t) { return ops::log_softmax(in(t, 0), 1); },
       {{"log_softmax:result", 6}},
       {{"F", {}}, {"T", {"log_softmax:result"}}}},
      // nll_loss keeps its input only for its gradient's edge to it (the gradient of the
      // gradient is zero, as in PyTorch); in cross_entropy that is log_softmax's saved result.
      {"nll_loss",
       {m23},
       [](const TensorList& t) { return ops::nll_loss(in(t, 0), kTargets); },
       {{"nll_loss:self", 6}},
       {{"F", {}}, {"T", {"nll_loss:self"}}}},
      {"cross_entropy",
       {m23},
       [](const TensorList& t) { return ops::cross_entropy(in(t, 0), kTargets); },
       {{"log_softmax:result", 6}, {"nll_loss:self", 6}},
       {{"F", {}}, {"T", {"log_softmax:result", "nll_loss:self"}}}},
      // Dropout is a mask multiply: the mask is kept, the input never.
      {"dropout",
       {m23},
       [](const TensorList& t) { return ops::dropout(in(t, 0), 0.5, true, 3); },
       {{"mul:self", 6}, {"mul:other", 6}},
       {{"F", {}}, {"T", {"mul:other"}}}},
      {"dropout2d",
       {{2, 3, 4}},
       [](const TensorList& t) { return ops::dropout2d(in(t, 0), 0.5, true, 3); },
       {{"mul:self", 24}, {"mul:other", 6}},
       {{"F", {}}, {"T", {"mul:other"}}}},
      {"add_",
       {m23, v3},
       [](const TensorList& t) {
         Tensor a = fresh(in(t, 0));
         return ops::add_(a, in(t, 1));
       },
       {},
       {{"FF", {}}, {"TF", {}}, {"FT", {}}, {"TT", {}}}},
      {"mul_",
       {m23, v3},
       [](const TensorList& t) {
         Tensor a = fresh(in(t, 0));
         return ops::mul_(a, in(t, 1));
       },
       {{"mul_:self", 6}, {"mul_:other", 3}},
       {{"FF", {}},
        {"TF", {"mul_:other"}},
        {"FT", {"mul_:self"}},
        {"TT", {"mul_:self", "mul_:other"}}}},
      {"copy_",
       {m23, v3},
       [](const TensorList& t) {
         Tensor a = fresh(in(t, 0));
         return ops::copy_(a, in(t, 1));
       },
       {},
       {{"FF", {}}, {"TF", {}}, {"FT", {}}, {"TT", {}}}},
  };
}

TensorList make_inputs(const Row& row, const std::string& pattern) {
  TensorList inputs;
  for (size_t i = 0; i < row.shapes.size(); ++i) {
    // Positive values keep log and pow defined.
    Tensor t = ops::uniform(row.shapes[i], 0.5, 1.5, /*seed=*/i + 1);
    t.set_requires_grad(pattern[i] == 'T');
    inputs.push_back(t);
  }
  return inputs;
}

std::vector<std::string> all_patterns(size_t n) {
  std::vector<std::string> out;
  for (size_t bits = 0; bits < (size_t{1} << n); ++bits) {
    std::string p;
    for (size_t i = 0; i < n; ++i) p += (bits >> i & 1) ? 'T' : 'F';
    out.push_back(p);
  }
  return out;
}

std::set<std::string> saved_keys() {
  std::set<std::string> keys;
  for (const auto& [key, count] : counters().save_counts()) {
    EXPECT_EQ(count, 1) << key << " saved more than once";
    keys.insert(key);
  }
  return keys;
}

int64_t bytes_of(const Row& row, const std::set<std::string>& keys) {
  int64_t total = 0;
  for (const std::string& k : keys) total += row.slot_numel.at(k) * 4;  // float32
  return total;
}

// Runs the row with `pattern` and checks the saved keys and bytes against `expected`.
void check(const Row& row, const std::string& pattern, const std::set<std::string>& expected) {
  SCOPED_TRACE(row.name + " requires_grad=" + pattern +
               " guard_saves=" + (current_options().guard_saves ? "on" : "off"));
  TensorList inputs = make_inputs(row, pattern);
  reset_counters();
  Tensor out = row.fn(inputs);
  EXPECT_EQ(saved_keys(), expected);
  EXPECT_EQ(counters().bytes_saved, bytes_of(row, expected));
  const bool any = pattern.find('T') != std::string::npos && row.name != "detach";
  EXPECT_EQ(out.requires_grad(), any);
}

TEST(SavedValuesTable, EveryPatternIsListed) {
  for (const Row& row : table()) {
    for (const std::string& p : all_patterns(row.shapes.size())) {
      EXPECT_EQ(row.saved.count(p), 1u) << row.name << " lacks pattern " << p;
    }
    EXPECT_EQ(row.saved.size(), size_t{1} << row.shapes.size()) << row.name;
  }
}

TEST(SavedValuesTable, GuardedSavesKeepExactlyWhatTheFormulasNeed) {
  for (const Row& row : table()) {
    for (const auto& [pattern, expected] : row.saved) check(row, pattern, expected);
  }
}

// With guard_saves off (the "before"), every slot of every node is saved whenever a node is built.
TEST(SavedValuesTable, WithoutGuardsEverySlotIsSaved) {
  EngineOptions options;
  options.guard_saves = false;
  OptionsGuard before(options);
  for (const Row& row : table()) {
    std::set<std::string> all;
    for (const auto& [key, numel] : row.slot_numel) all.insert(key);
    for (const auto& [pattern, unused] : row.saved) {
      const bool any = pattern.find('T') != std::string::npos && row.name != "detach";
      check(row, pattern, any ? all : std::set<std::string>{});
    }
  }
}

// The saved values are what the formulas need: the gradients agree with guards on and off.
TEST(SavedValuesTable, GuardsDoNotChangeGradients) {
  for (const Row& row : table()) {
    if (row.name == "detach") continue;
    const std::string pattern(row.shapes.size(), 'T');
    std::vector<std::vector<double>> grads[2];
    for (bool on : {false, true}) {
      EngineOptions options;
      options.guard_saves = on;
      OptionsGuard guard(options);
      TensorList inputs = make_inputs(row, pattern);
      Tensor out = ops::sum(row.fn(inputs));
      TensorList g = grad({out}, inputs);
      for (const Tensor& t : g) grads[on].push_back(t.to_vector());
    }
    EXPECT_EQ(grads[0], grads[1]) << row.name;
  }
}

}  // namespace
}  // namespace ag
