// Note [View chains]
// A property over random chains of view ops with an in-place write at the end, checked against
// a model that has no strides at all: a view there is an array of base-element indices (for each
// of its elements in row-major order, the element of its base it reads), and each view op maps
// that array as the op maps values (a select takes a sub-array, a permute permutes it, an expand
// repeats it), written here from the ops' definitions, not from ops/view_layout. The model runs
// the same program on plain float64 arrays: the write goes to the base elements its view's
// indices name, and a view read later (also one made before the write: a stale sibling, whose
// history the engine regenerates) reads the base at its indices. The engine must give the
// model's values exactly (the arithmetic is the same), its gradients must match central finite
// differences of the model's program (which has no views, so no CopySlices, no regenerated
// views, no view gradients), and the writes PyTorch refuses (into a view that reads an element
// twice) must raise and change nothing. Chains are drawn as (kind, arguments) steps read modulo
// the current shape, so every chain is valid and shrinks to a valid chain.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/error.h"
#include "ops/ops.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

using Dims = std::vector<int64_t>;

// A view in the model: its shape, and for each element (row-major) the base element it reads.
struct IndexView {
  Dims shape;
  std::vector<int64_t> at;
};

int64_t count(const Dims& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// The view of `in` with `shape` whose element at index `out` is in's element at source(out).
IndexView gather(const IndexView& in, const Dims& shape,
                 const std::function<Dims(const Dims&)>& source) {
  IndexView v{shape, {}};
  Dims index(shape.size(), 0);
  for (int64_t i = 0; i < count(shape); ++i) {
    const Dims from = source(index);
    int64_t flat = 0;
    for (size_t d = 0; d < from.size(); ++d) flat = flat * in.shape[d] + from[d];
    v.at.push_back(in.at[static_cast<size_t>(flat)]);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return v;
}

// One step of a chain: a kind and three arguments, read modulo the current shape.
struct Step {
  int kind;
  int64_t a, b, c;
};
void showValue(const Step& s, std::ostream& os) {
  os << "{kind " << s.kind << ", " << s.a << ", " << s.b << ", " << s.c << "}";
}
enum Kind {
  kTranspose,
  kPermute,
  kSelect,
  kSlice,
  kExpand,
  kUnsqueeze,
  kSqueeze,
  kDiagonal,
  kUnfold,
  kReshape,
  kKinds
};
const char* const kKindNames[] = {"transpose", "permute", "select",   "slice",  "expand",
                                  "unsqueeze", "squeeze", "diagonal", "unfold", "reshape"};

// Applies `step` to the engine's tensor and the model's view alike; returns false (applying
// nothing) where the step does not fit the shape, and appends the call to `log`.
bool apply(const Step& s, Tensor* t, IndexView* v, std::string* log) {
  const Dims& shape = v->shape;
  const auto n = static_cast<int64_t>(shape.size());
  auto dim_of = [&](int64_t x) { return x % n; };
  auto note = [&](const std::string& call) { *log += std::string(" .") + call; };
  switch (s.kind) {
    case kTranspose: {
      if (n < 2) return false;
      const int64_t d0 = dim_of(s.a), d1 = dim_of(s.b);
      *t = ops::transpose(*t, d0, d1);
      Dims out = shape;
      std::swap(out[d0], out[d1]);
      *v = gather(*v, out, [&](Dims i) {
        std::swap(i[d0], i[d1]);
        return i;
      });
      note("transpose(" + std::to_string(d0) + "," + std::to_string(d1) + ")");
      return true;
    }
    case kPermute: {
      if (n < 2) return false;
      Dims order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::rotate(order.begin(), order.begin() + dim_of(s.a), order.end());
      *t = ops::permute(*t, order);
      Dims out(order.size());
      for (size_t i = 0; i < order.size(); ++i) out[i] = shape[order[i]];
      *v = gather(*v, out, [&](const Dims& i) {
        Dims in(i.size());
        for (size_t k = 0; k < order.size(); ++k) in[order[k]] = i[k];
        return in;
      });
      note("permute(rotate " + std::to_string(dim_of(s.a)) + ")");
      return true;
    }
    case kSelect: {
      if (n < 1) return false;
      const int64_t d = dim_of(s.a);
      if (shape[d] == 0) return false;
      const int64_t index = s.b % shape[d];
      *t = ops::select(*t, d, index);
      Dims out = shape;
      out.erase(out.begin() + d);
      *v = gather(*v, out, [&](Dims i) {
        i.insert(i.begin() + d, index);
        return i;
      });
      note("select(" + std::to_string(d) + "," + std::to_string(index) + ")");
      return true;
    }
    case kSlice: {
      if (n < 1) return false;
      const int64_t d = dim_of(s.a);
      const int64_t start = shape[d] == 0 ? 0 : s.b % shape[d], step = 1 + s.c % 3;
      *t = ops::slice(*t, d, start, shape[d], step);
      Dims out = shape;
      out[d] = (shape[d] - start + step - 1) / step;
      *v = gather(*v, out, [&](Dims i) {
        i[d] = start + i[d] * step;
        return i;
      });
      note("slice(" + std::to_string(d) + "," + std::to_string(start) + ",:," +
           std::to_string(step) + ")");
      return true;
    }
    case kExpand: {
      // A size-1 dim grows to 2 or 3, and maybe a leading dim is added.
      Dims out = shape;
      bool changed = false;
      for (int64_t d = 0; d < n; ++d) {
        if (shape[d] == 1 && (s.a >> d) % 2 == 1) out[d] = 2 + s.b % 2, changed = true;
      }
      const bool lead = s.c % 2 == 1 || !changed;
      if (lead) out.insert(out.begin(), 2);
      *t = ops::expand(*t, out);
      *v = gather(*v, out, [&](const Dims& i) {
        Dims in(i.begin() + (lead ? 1 : 0), i.end());
        for (int64_t d = 0; d < n; ++d) in[d] = shape[d] == 1 ? 0 : in[d];
        return in;
      });
      note("expand(...)");
      return true;
    }
    case kUnsqueeze: {
      if (n >= 4) return false;
      const int64_t d = s.a % (n + 1);
      *t = ops::unsqueeze(*t, d);
      Dims out = shape;
      out.insert(out.begin() + d, 1);
      *v = gather(*v, out, [&](Dims i) {
        i.erase(i.begin() + d);
        return i;
      });
      note("unsqueeze(" + std::to_string(d) + ")");
      return true;
    }
    case kSqueeze: {
      if (n < 1) return false;
      const int64_t d = dim_of(s.a);
      if (shape[d] != 1) return false;
      *t = ops::squeeze(*t, d);
      Dims out = shape;
      out.erase(out.begin() + d);
      *v = gather(*v, out, [&](Dims i) {
        i.insert(i.begin() + d, 0);
        return i;
      });
      note("squeeze(" + std::to_string(d) + ")");
      return true;
    }
    case kDiagonal: {
      if (n < 2) return false;
      const int64_t d1 = dim_of(s.a), d2 = dim_of(s.a + 1 + s.b % (n - 1));
      const int64_t offset = s.c % 3 - 1;
      *t = ops::diagonal(*t, offset, d1, d2);
      const int64_t len =
          std::max<int64_t>(0, offset >= 0 ? std::min(shape[d1], shape[d2] - offset)
                                           : std::min(shape[d1] + offset, shape[d2]));
      Dims out;
      for (int64_t d = 0; d < n; ++d) {
        if (d != d1 && d != d2) out.push_back(shape[d]);
      }
      out.push_back(len);
      *v = gather(*v, out, [&](const Dims& i) {
        Dims in;
        size_t k = 0;
        for (int64_t d = 0; d < n; ++d) {
          if (d == d1) {
            in.push_back(i.back() + (offset < 0 ? -offset : 0));
          } else if (d == d2) {
            in.push_back(i.back() + (offset > 0 ? offset : 0));
          } else {
            in.push_back(i[k++]);
          }
        }
        return in;
      });
      note("diagonal(" + std::to_string(offset) + "," + std::to_string(d1) + "," +
           std::to_string(d2) + ")");
      return true;
    }
    case kUnfold: {
      if (n < 1 || n >= 4) return false;
      const int64_t d = dim_of(s.a);
      if (shape[d] == 0) return false;
      const int64_t size = 1 + s.b % shape[d], step = 1 + s.c % 2;
      *t = ops::unfold(*t, d, size, step);
      Dims out = shape;
      out[d] = (shape[d] - size) / step + 1;
      out.push_back(size);
      *v = gather(*v, out, [&](Dims i) {
        const int64_t within = i.back();
        i.pop_back();
        i[d] = i[d] * step + within;
        return i;
      });
      note("unfold(" + std::to_string(d) + "," + std::to_string(size) + "," + std::to_string(step) +
           ")");
      return true;
    }
    case kReshape: {
      // Only where the model's view reads a run of the base in order, where reshape is a view
      // by any rule: flatten, or split the first dim's elements in two.
      for (size_t i = 1; i < v->at.size(); ++i) {
        if (v->at[i] != v->at[0] + static_cast<int64_t>(i)) return false;
      }
      const int64_t total = count(shape);
      Dims out = total % 2 == 0 && s.a % 2 == 0 ? Dims{2, total / 2} : Dims{total};
      *t = ops::reshape(*t, out);
      v->shape = out;
      note("reshape(" + std::to_string(out.size()) + "-D)");
      return true;
    }
  }
  return false;
}

// The values of `count` elements, deterministic in `seed`, small integers over 4 plus 1/8: exact
// in float64 products and sums of a few of them.
std::vector<double> values(int64_t n, int64_t seed) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<double>((i * 7 + seed * 3) % 9 - 4) / 4 + 0.125;
  return out;
}

enum Write { kMul, kAdd, kCopy, kWrites };

// The model's program: base = x * 1; write z into the base at `view`; the loss reads the base, the
// view and the sibling through their indices with weights.
double model_loss(const std::vector<double>& x, const std::vector<double>& z, Write write,
                  const IndexView& view, const IndexView& sibling, std::vector<double>* base_out) {
  std::vector<double> base = x;
  for (size_t i = 0; i < view.at.size(); ++i) {
    double& e = base[static_cast<size_t>(view.at[i])];
    e = write == kMul ? e * z[i] : write == kAdd ? e + z[i] : z[i];
  }
  const std::vector<double> wb = values(static_cast<int64_t>(base.size()), 11);
  const std::vector<double> wv = values(static_cast<int64_t>(view.at.size()), 12);
  const std::vector<double> ws = values(static_cast<int64_t>(sibling.at.size()), 13);
  double loss = 0;
  for (size_t i = 0; i < base.size(); ++i) loss += base[i] * wb[i];
  for (size_t i = 0; i < view.at.size(); ++i) loss += base[view.at[i]] * base[view.at[i]] * wv[i];
  for (size_t i = 0; i < sibling.at.size(); ++i) loss += base[sibling.at[i]] * ws[i];
  if (base_out) *base_out = base;
  return loss;
}

std::vector<double> finite_differences(std::vector<double> at,
                                       const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> out(at.size());
  for (size_t i = 0; i < at.size(); ++i) {
    const double keep = at[i], h = 1e-4;
    at[i] = keep + h;
    const double up = f(at);
    at[i] = keep - h;
    const double down = f(at);
    at[i] = keep;
    out[i] = (up - down) / (2 * h);  // exact for the model's loss, a quadratic in each input
  }
  return out;
}

std::vector<Step> draw_chain(int min_steps, int max_steps) {
  return *rc::gen::container<std::vector<Step>>(
      static_cast<size_t>(*rc::gen::inRange(min_steps, max_steps + 1)),
      rc::gen::construct<Step>(rc::gen::inRange(0, static_cast<int>(kKinds)),
                               rc::gen::inRange<int64_t>(0, 12), rc::gen::inRange<int64_t>(0, 12),
                               rc::gen::inRange<int64_t>(0, 12)));
}

AG_PROPERTY(ViewChains, WritesThroughViewsMatchAModelWithoutStrides) {
  const Dims shape = *rc::gen::container<Dims>(static_cast<size_t>(*rc::gen::inRange(1, 4)),
                                               rc::gen::inRange<int64_t>(1, 4));
  const std::vector<Step> chain = draw_chain(1, 5), sibling_chain = draw_chain(0, 3);
  const Write write = static_cast<Write>(*rc::gen::inRange(0, static_cast<int>(kWrites)));
  const bool z_requires_grad = *rc::gen::arbitrary<bool>();

  const std::vector<double> x_values = values(count(shape), 1);
  Tensor x = ops::from_vector(x_values, shape, DType::kFloat64);
  x.set_requires_grad(true);
  Tensor base = ops::mul(x, 1.0);
  IndexView root{shape, std::vector<int64_t>(static_cast<size_t>(count(shape)))};
  std::iota(root.at.begin(), root.at.end(), 0);

  std::string log = "base";
  Tensor sibling = base;
  IndexView sibling_model = root;
  for (const Step& s : sibling_chain) apply(s, &sibling, &sibling_model, &log);
  log += "   |   view: base";
  Tensor view = base;
  IndexView view_model = root;
  for (const Step& s : chain) apply(s, &view, &view_model, &log);
  RC_TAG(std::to_string(chain.size()) + " steps");

  const std::vector<double> z_values = values(count(view_model.shape), 2);
  Tensor z = ops::from_vector(z_values, view_model.shape, DType::kFloat64);
  z.set_requires_grad(z_requires_grad);
  const char* const write_names[] = {"mul_", "add_", "copy_"};
  log += std::string("  then ") + write_names[write];
  RC_LOG() << log << "\n";

  // A view that reads an element twice through a stride of 0 (an expand) cannot be written, as
  // in PyTorch; other overlapping views (unfold's windows) are not written by this property.
  const std::set<int64_t> distinct(view_model.at.begin(), view_model.at.end());
  bool zero_stride = false;
  for (int64_t d = 0; d < view.dim(); ++d)
    zero_stride |= view.shape()[d] > 1 && view.stride(d) == 0;
  if (distinct.size() != view_model.at.size()) {
    if (!zero_stride) return;  // overlapping windows: PyTorch does not refuse, and order matters
    const std::vector<double> before = base.to_vector();
    RC_ASSERT_THROWS_AS(ops::mul_(view, z), Error);
    RC_ASSERT(base.to_vector() == before);
    return;
  }
  switch (write) {
    case kMul:
      ops::mul_(view, z);
      break;
    case kAdd:
      ops::add_(view, z);
      break;
    default:
      ops::copy_(view, z);
      break;
  }

  std::vector<double> model_base;
  model_loss(x_values, z_values, write, view_model, sibling_model, &model_base);
  RC_ASSERT(base.to_vector() == model_base);
  std::vector<double> expected_view, expected_sibling;
  for (int64_t i : view_model.at) expected_view.push_back(model_base[i]);
  for (int64_t i : sibling_model.at) expected_sibling.push_back(model_base[i]);
  RC_ASSERT(view.to_vector() == expected_view);
  RC_ASSERT(sibling.to_vector() == expected_sibling);

  auto weights = [](const Tensor& t, int64_t seed) {
    return ops::from_vector(values(t.numel(), seed), t.shape(), DType::kFloat64);
  };
  Tensor loss = ops::sum(ops::mul(base, weights(base, 11)));
  loss = ops::add(loss, ops::sum(ops::mul(ops::mul(view, view), weights(view, 12))));
  loss = ops::add(loss, ops::sum(ops::mul(sibling, weights(sibling, 13))));
  const bool z_used = z_requires_grad;
  TensorList inputs = {x};
  if (z_used) inputs.push_back(z);
  const TensorList g = grad({loss}, inputs, GradArgs().allow_unused());

  auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::abs(a[i] - b[i]) > 1e-6 * (1 + std::abs(b[i]))) return false;
    }
    return true;
  };
  const std::vector<double> dx = finite_differences(x_values, [&](const std::vector<double>& xs) {
    return model_loss(xs, z_values, write, view_model, sibling_model, nullptr);
  });
  const std::vector<double> got_dx =
      g[0].defined() ? g[0].to_vector() : std::vector<double>(dx.size(), 0.0);
  RC_ASSERT(close(got_dx, dx));
  if (z_used) {
    const std::vector<double> dz = finite_differences(z_values, [&](const std::vector<double>& zs) {
      return model_loss(x_values, zs, write, view_model, sibling_model, nullptr);
    });
    const std::vector<double> got_dz =
        g[1].defined() ? g[1].to_vector() : std::vector<double>(dz.size(), 0.0);
    RC_ASSERT(close(got_dz, dz));
  }
}

}  // namespace
}  // namespace ag::proptests
