#include "proptests/foreign/mode_verdict.h"

#include <algorithm>
#include <cmath>

namespace ag::proptests {
namespace {

bool finite(const std::vector<double>& xs) {
  for (double x : xs) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

bool agree(const Closeness& tolerance, double scale, const std::vector<double>& x,
           const std::vector<double>& y) {
  return Closeness{tolerance.rtol, tolerance.atol * std::max(1.0, scale)}.agree(x, y);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Closeness mode_tolerance(bool float32) {
  return float32 ? Closeness{1e-4, 1e-5} : Closeness{1e-9, 1e-12};
}

const char* mode_verdict_name(ModeVerdictKind kind) {
  switch (kind) {
    case ModeVerdictKind::kConsistent:
      return "consistent";
    case ModeVerdictKind::kInconsistent:
      return "inconsistent";
    case ModeVerdictKind::kUndecided:
      return "undecided";
  }
  return "?";
}

ModeVerdict decide_modes(const ModeCheckInput& in, const Closeness& tolerance) {
  ModeVerdict v;
  if (in.has_random_op) {
    v.reason = "a random op in the function";
    return v;
  }
  for (const ModeQuantity& q : in.quantities) {
    bool ok = !q.engine.available || finite(q.engine.values);
    for (const ModeAnswer& a : q.answers) ok = ok && finite(a.values);
    if (!ok) {
      v.reason = "a NaN or an infinity in " + q.name;
      return v;
    }
  }
  const ModeQuantity* first_disagreement = nullptr;
  int compared = 0;
  for (const ModeQuantity& q : in.quantities) {
    if (q.answers.size() < 2) continue;
    ++compared;
    for (size_t i = 0; i < q.answers.size() && !first_disagreement; ++i) {
      for (size_t j = i + 1; j < q.answers.size(); ++j) {
        if (!agree(tolerance, q.scale, q.answers[i].values, q.answers[j].values)) {
          first_disagreement = &q;
          break;
        }
      }
    }
    if (first_disagreement) break;
  }
  if (compared == 0) {
    v.reason = "fewer than two modes answered every quantity";
    return v;
  }
  if (!first_disagreement) {
    v.kind = ModeVerdictKind::kConsistent;
    v.reason = std::to_string(compared) + " quantities agree in every mode";
    return v;
  }
  const ModeQuantity& q = *first_disagreement;
  if (!in.smooth) {
    v.reason = "the modes disagree on " + q.name + " at a kink";
    return v;
  }
  v.kind = ModeVerdictKind::kInconsistent;
  v.quantity = q.name;
  for (const ModeAnswer& a : q.answers) {
    (agree(tolerance, q.scale, q.answers[0].values, a.values) ? v.agreeing : v.disagreeing)
        .push_back(a.mode);
    if (q.engine.available && agree(tolerance, q.scale, q.engine.values, a.values)) {
      v.agree_with_engine.push_back(a.mode);
    }
  }
  v.reason =
      q.name + ": " + joined(v.agreeing) + " against " + joined(v.disagreeing) +
      (!q.engine.available           ? "; no engine answer"
       : v.agree_with_engine.empty() ? "; the engine agrees with none"
                                     : "; the engine agrees with " + joined(v.agree_with_engine));
  return v;
}

}  // namespace ag::proptests
