#include "proptests/api_model/command_util.h"

#include <cmath>
#include <sstream>

namespace ag::proptests {

std::string tname(int name) { return name < 0 ? "None" : "t" + std::to_string(name); }

std::string tlist(const std::vector<int>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + tname(names[i]);
  return s + "]";
}

std::string num(double x) {
  std::ostringstream os;
  os.precision(17);
  os << x;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos &&
      s.find("nan") == std::string::npos) {
    s += ".0";
  }
  return s;
}

std::string dims_py(const Dims& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int pick(const Model& m, const std::function<bool(int name)>& ok) {
  std::vector<int> candidates;
  for (int name : m.names()) {
    const int i = m.impl_of(name);
    if (!m.unreadable(i) && !m.edgeless(i) && ok(name)) candidates.push_back(name);
  }
  if (candidates.empty()) return -1;
  return *rc::gen::elementOf(candidates);
}

namespace {
int pick_among(const Model& m, const std::function<bool(int impl)>& ok) {
  std::vector<int> candidates;
  for (int name : m.names()) {
    if (ok(m.impl_of(name))) candidates.push_back(name);
  }
  if (candidates.empty()) return -1;
  return *rc::gen::elementOf(candidates);
}
}  // namespace

int pick_unreadable(const Model& m) {
  return pick_among(m, [&](int i) { return m.unreadable(i); });
}

int pick_edgeless(const Model& m) {
  return pick_among(m, [&](int i) { return m.edgeless(i); });
}

bool all_values(const Model& m, int name, const std::function<bool(double)>& ok) {
  for (double v : m.values_of(m.impl_of(name))) {
    if (!ok(v)) return false;
  }
  return true;
}

bool tame(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isfinite(v) || std::abs(v) > 1e4) return false;
  }
  return true;
}

}  // namespace ag::proptests
