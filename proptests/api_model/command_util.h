#pragma once

// Helpers shared by the API state machine's commands: picking handles, printing PyTorch.

#include <rapidcheck.h>

#include <functional>
#include <string>
#include <vector>

#include "proptests/api_model/model.h"

namespace ag::proptests {

// "t7"; "None" for -1.
std::string tname(int name);
// "[t1, t2]"
std::string tlist(const std::vector<int>& names);
// A double as Python reads it back exactly enough ("0.125", "-1.5").
std::string num(double x);
std::string dims_py(const Dims& shape);  // "(2, 3)", "(4,)", "()"

// A name no earlier call used (a call that raised still spent its name).
inline bool fresh(const Model& m, int name) { return name >= m.next_name(); }

// A random usable handle satisfying `ok` (inside rc::gen::exec), or -1 when there is none. It
// is never a view whose grad_fn cannot be read, nor one made under no_grad without an edge (Note
// [Model view kinds]): the commands that take those pick them themselves.
int pick(const Model& m, const std::function<bool(int name)>& ok);
int pick_unreadable(const Model& m);
int pick_edgeless(const Model& m);
inline int pick_any(const Model& m) {
  return pick(m, [](int) { return true; });
}

// Whether every element of the handle's value satisfies `ok`.
bool all_values(const Model& m, int name, const std::function<bool(double)>& ok);

// Whether `values` are finite and small enough that later ops stay well conditioned.
bool tame(const std::vector<double>& values);

}  // namespace ag::proptests
