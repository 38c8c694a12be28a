// The names of one graph's values, for Graph (Note [Value names] in ir.h).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ag::jit {

class Value;

// Which value holds which name. A name that is the decimal form of a number ("17", not "017")
// is kept as that number in a table indexed by it, so that the numbers given to unnamed values
// cost no string hashing; other names ("x", "grad_x") go in a string-keyed map.
class ValueNames {
 public:
  // Is `name` the canonical decimal form of a number? Sets `*number` if so.
  static bool isNumber(const std::string& name, uint64_t* number);

  Value* find(uint64_t number) const;
  Value* find(const std::string& name) const;
  void bind(uint64_t number, Value* v);
  void bind(const std::string& name, Value* v);  // a name that is not a number
  // Unbinds the name if `v` holds it.
  void unbind(uint64_t number, const Value* v);
  void unbind(const std::string& name, const Value* v);
  // The lowest number not bound yet, at or above every number this returned before.
  uint64_t freshNumber();

 private:
  void growDense(uint64_t min_size);

  // dense_[k] holds number k for every k < dense_.size(); larger numbers (a parsed "%99999999")
  // wait in sparse_ until the table grows past them.
  std::vector<Value*> dense_;
  std::unordered_map<uint64_t, Value*> sparse_;
  std::unordered_map<std::string, Value*> strings_;
  uint64_t next_fresh_ = 0;
};

}  // namespace ag::jit
