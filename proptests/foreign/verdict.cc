#include "proptests/foreign/verdict.h"

#include <algorithm>
#include <cmath>

namespace ag::proptests {
namespace {

bool has_nan(const std::vector<double>& xs) {
  return std::any_of(xs.begin(), xs.end(), [](double x) { return std::isnan(x); });
}

struct Oracle {
  const char* name;
  const std::vector<double>* values;
  Closeness closeness;
};

Verdict undecided(std::string reason) { return {VerdictKind::kUndecided, std::move(reason)}; }

}  // namespace

bool Closeness::agree(double x, double y) const {
  if (x == y) return true;                                   // infinities of one sign
  if (!std::isfinite(x) || !std::isfinite(y)) return false;  // NaN, or infinities that differ
  return std::fabs(x - y) <= atol + rtol * std::max(std::fabs(x), std::fabs(y));
}

bool Closeness::agree(const std::vector<double>& x, const std::vector<double>& y) const {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!agree(x[i], y[i])) return false;
  }
  return true;
}

const char* verdict_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kEngineCandidate:
      return "engine-candidate";
    case VerdictKind::kPyTorchCandidate:
      return "pytorch-candidate";
    case VerdictKind::kUndecided:
      return "undecided";
  }
  return "?";
}

Verdict decide(const VerdictInput& in, const VerdictTolerances& tol) {
  if (in.has_random_op) return undecided("the program has a random op");
  const auto& fd = in.finite_differences;
  if (in.nan_appears || has_nan(in.ours) || has_nan(in.pytorch) ||
      (in.dual.available && has_nan(in.dual.values)) || (fd.available && has_nan(fd.values)) ||
      (in.forward_mode.available && has_nan(in.forward_mode.values))) {
    return undecided("a NaN appears");
  }
  if (fd.available && !fd.smooth) return undecided("a kink within the finite-difference step");
  std::vector<Oracle> oracles;
  if (in.dual.available) oracles.push_back({"dual numbers", &in.dual.values, tol.exact});
  if (fd.available) {
    oracles.push_back({"finite differences", &fd.values, tol.finite_differences});
  }
  if (in.forward_mode.available) {
    oracles.push_back({"forward mode", &in.forward_mode.values, tol.exact});
  }
  if (oracles.empty()) return undecided("no independent answer");
  for (size_t i = 0; i < oracles.size(); ++i) {
    for (size_t j = i + 1; j < oracles.size(); ++j) {
      // Two answers agree within the looser of their tolerances.
      const Closeness& c = oracles[i].closeness.rtol >= oracles[j].closeness.rtol
                               ? oracles[i].closeness
                               : oracles[j].closeness;
      if (!c.agree(*oracles[i].values, *oracles[j].values)) {
        return undecided(std::string(oracles[i].name) + " and " + oracles[j].name + " disagree");
      }
    }
  }
  if (tol.comparison.agree(in.ours, in.pytorch)) {
    return undecided("ours and pytorch agree within the comparison tolerance");
  }
  size_t ours_agree = 0, pytorch_agree = 0;
  std::string names;
  for (const Oracle& o : oracles) {
    ours_agree += o.closeness.agree(in.ours, *o.values) ? 1 : 0;
    pytorch_agree += o.closeness.agree(in.pytorch, *o.values) ? 1 : 0;
    names += (names.empty() ? "" : ", ") + std::string(o.name);
  }
  if (ours_agree == oracles.size() && pytorch_agree == 0) {
    return {VerdictKind::kPyTorchCandidate, "ours agrees with " + names + "; pytorch does not"};
  }
  if (pytorch_agree == oracles.size() && ours_agree == 0) {
    return {VerdictKind::kEngineCandidate, "pytorch agrees with " + names + "; ours does not"};
  }
  if (ours_agree > 0 && pytorch_agree > 0) {
    return undecided("both within the tolerance of " + names);
  }
  return undecided("neither agrees with every answer of " + names);
}

}  // namespace ag::proptests
