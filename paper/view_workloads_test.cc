// Issue 44's workloads (paper/workloads/view_workloads.h) at small sizes: the RNN's gradients
// against backpropagation through time written out in double, its saved bytes against PyTorch's
// rule for what each op saves, and the joins' gradients against the rows of G they must be.
#include "paper/workloads/view_workloads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/counters.h"

namespace ag::paper {
namespace {

// The RNN forward and backward in double, from the same inputs: h_t = tanh(x_t W + h_{t-1} U),
// loss = sum of every h_t; dh_t = 1 + dp_{t+1} U^T, dp_t = dh_t (1 - h_t^2), dW += x_t^T dp_t,
// dU += h_{t-1}^T dp_t, dx_t = dp_t W^T.
struct Reference {
  std::vector<double> dx, dw, du;
};
Reference backprop_through_time(const RnnConfig& c, const std::vector<double>& x,
                                const std::vector<double>& w, const std::vector<double>& u) {
  const int B = c.batch, T = c.steps, N = c.width;
  auto X = [&](int b, int t, int i) { return x[(static_cast<size_t>(b) * T + t) * N + i]; };
  std::vector<std::vector<double>> h(T + 1, std::vector<double>(static_cast<size_t>(B) * N, 0.0));
  for (int t = 0; t < T; ++t) {
    for (int b = 0; b < B; ++b) {
      for (int j = 0; j < N; ++j) {
        double p = 0;
        for (int i = 0; i < N; ++i) p += X(b, t, i) * w[i * N + j] + h[t][b * N + i] * u[i * N + j];
        h[t + 1][b * N + j] = std::tanh(p);
      }
    }
  }
  Reference r{std::vector<double>(x.size(), 0.0), std::vector<double>(w.size(), 0.0),
              std::vector<double>(u.size(), 0.0)};
  std::vector<double> next_dp(static_cast<size_t>(B) * N, 0.0);  // dp_{t+1}
  for (int t = T - 1; t >= 0; --t) {
    std::vector<double> dp(static_cast<size_t>(B) * N);
    for (int b = 0; b < B; ++b) {
      for (int j = 0; j < N; ++j) {
        double dh = 1;  // out.sum()
        for (int k = 0; k < N; ++k) dh += next_dp[b * N + k] * u[j * N + k];
        const double ht = h[t + 1][b * N + j];
        dp[b * N + j] = dh * (1 - ht * ht);
      }
    }
    for (int b = 0; b < B; ++b) {
      for (int i = 0; i < N; ++i) {
        for (int j = 0; j < N; ++j) {
          r.dw[i * N + j] += X(b, t, i) * dp[b * N + j];
          r.du[i * N + j] += h[t][b * N + i] * dp[b * N + j];
          r.dx[(static_cast<size_t>(b) * T + t) * N + i] += dp[b * N + j] * w[i * N + j];
        }
      }
    }
    next_dp = dp;
  }
  return r;
}

void expect_close(const Tensor& actual, const std::vector<double>& expected, const char* what) {
  const std::vector<double> a = actual.to_vector();
  ASSERT_EQ(a.size(), expected.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_NEAR(a[k], expected[k], 1e-5 * (1 + std::fabs(expected[k]))) << what << "[" << k << "]";
  }
}

TEST(ViewWorkloads, RnnGradientsMatchBackpropagationThroughTime) {
  const RnnConfig c{3, 5, 4};
  const RnnInputs in = make_rnn_inputs(c);
  reset_counters();
  const TensorList g = rnn_step(in, c);
  // Note [Formulas in the incoming gradient] (ops/spec.h): every write but the first (whose base,
  // zeros, needs no gradient) has a CopySlices formula for its base. The last write's, the first
  // to run, receives sum's gradient, an expand of the scalar (stride 0, as PyTorch's), which it
  // cannot zero a step of in place: it copies it into the one [batch, steps, width] gradient of
  // the backward, and every earlier write's formula zeroes its step in that tensor. Note [View
  // gradients into a waiting sum] (ops/view_ops.cc): every x[:, t] but the first to arrive adds
  // into x's gradient, and every out[:, t] written after the first adds copy_'s zeros into the
  // gradient of out's earlier history.
  EXPECT_EQ(counters().formula_count("copy_slices:base"), c.steps - 1);
  EXPECT_EQ(counters().formulas_in_place, c.steps - 2);
  EXPECT_EQ(counters().fused_sums, 2 * (c.steps - 1));
  ASSERT_EQ(g.size(), 3u);
  const Reference r =
      backprop_through_time(c, in.x.to_vector(), in.w.to_vector(), in.u.to_vector());
  expect_close(g[0], r.dx, "dx");
  expect_close(g[1], r.dw, "dW");
  expect_close(g[2], r.du, "dU");
}

// What PyTorch's forward saves, op by op, each save counted (the peer's saved_tensors_hooks sum
// at the paper's size is this formula's 83,623,936 B): mm(x[:, t], W) saves both operands, as
// both require grad; mm(h, U) saves h for U's gradient, and U for h's from the second step on (h
// is a constant zeros at the first); tanh saves its result. select, copy_ and CopySlices save no
// tensor.
TEST(ViewWorkloads, RnnSavesWhatPyTorchSaves) {
  for (const RnnConfig& c : {RnnConfig{3, 5, 4}, RnnConfig{8, 16, 32}}) {
    const RnnInputs in = make_rnn_inputs(c);
    const int64_t B = c.batch, T = c.steps, N = c.width;
    const int64_t floats = T * (B * N + N * N) + T * B * N + (T - 1) * N * N + T * B * N;
    EXPECT_EQ(rnn_forward(in, c).bytes_saved, floats * 4);
  }
  const int64_t paper = 64 * (2 * 65536) + 64 * 65536 + 63 * 65536 + 64 * 65536;
  EXPECT_EQ(paper * 4, 83623936);
}

// Every join's gradient for a slice is that slice's rows of G, exactly.
TEST(ViewWorkloads, JoinGradientsAreTheSlicesOfG) {
  const JoinConfig c{7, 3};
  for (const JoinKind kind : kJoinKinds) {
    SCOPED_TRACE(join_name(kind));
    const JoinInputs in = make_join_inputs(kind, c);
    const TensorList g = join_step(in);
    const std::vector<double> weights = in.weights.to_vector();
    if (kind == JoinKind::kCat || kind == JoinKind::kStack) {
      ASSERT_EQ(g.size(), 7u);
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_EQ(g[i].shape(), in.inputs[i].shape());
        EXPECT_EQ(g[i].to_vector(),
                  std::vector<double>(weights.begin() + 3 * i, weights.begin() + 3 * i + 3));
      }
    } else {
      ASSERT_EQ(g.size(), 1u);
      EXPECT_EQ(g[0].shape(), (Shape{7, 3}));
      EXPECT_EQ(g[0].to_vector(), weights);
    }
    EXPECT_EQ(gradient_checksum(g), gradient_checksum({in.weights}));
  }
}

// The inputs are the peer's (torch_peer.py's pattern()): spot values of the closed form.
TEST(ViewWorkloads, PatternValues) {
  const std::vector<double> v = pattern_values(3, 1, 1.0);
  EXPECT_EQ(v[0], 1.0 / 4294967296.0 * 2 - 1);
  EXPECT_EQ(v[1], (2654435762.0 / 4294967296.0) * 2 - 1);
  EXPECT_EQ(v[2],
            (static_cast<double>((2 * 2654435761ull + 1) % 4294967296ull) / 4294967296.0) * 2 - 1);
}

}  // namespace
}  // namespace ag::paper
