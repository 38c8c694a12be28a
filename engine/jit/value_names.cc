#include "engine/jit/value_names.h"

#include <algorithm>

namespace ag::jit {

bool ValueNames::isNumber(const std::string& name, uint64_t* number) {
  // At most 18 digits: always fits in uint64_t.
  if (name.empty() || name.size() > 18 || (name[0] == '0' && name.size() > 1)) return false;
  uint64_t n = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  *number = n;
  return true;
}

Value* ValueNames::find(uint64_t number) const {
  if (number < dense_.size()) return dense_[number];
  auto it = sparse_.find(number);
  return it == sparse_.end() ? nullptr : it->second;
}

Value* ValueNames::find(const std::string& name) const {
  uint64_t number = 0;
  if (isNumber(name, &number)) return find(number);
  auto it = strings_.find(name);
  return it == strings_.end() ? nullptr : it->second;
}

void ValueNames::growDense(uint64_t min_size) {
  dense_.resize(std::max<uint64_t>(min_size, 2 * dense_.size()), nullptr);
  for (auto it = sparse_.begin(); it != sparse_.end();) {
    if (it->first < dense_.size()) {
      dense_[it->first] = it->second;
      it = sparse_.erase(it);
    } else {
      ++it;
    }
  }
}

void ValueNames::bind(uint64_t number, Value* v) {
  // Grow the table for numbers near its end (the fresh ones, and inherited ones); keep far
  // ones out of it so that one large parsed number does not allocate a huge table.
  if (number >= dense_.size() && number < 2 * dense_.size() + 64) growDense(number + 1);
  if (number < dense_.size()) {
    dense_[number] = v;
  } else {
    sparse_[number] = v;
  }
}

void ValueNames::bind(const std::string& name, Value* v) { strings_[name] = v; }

void ValueNames::unbind(uint64_t number, const Value* v) {
  if (number < dense_.size()) {
    if (dense_[number] == v) dense_[number] = nullptr;
    return;
  }
  auto it = sparse_.find(number);
  if (it != sparse_.end() && it->second == v) sparse_.erase(it);
}

void ValueNames::unbind(const std::string& name, const Value* v) {
  auto it = strings_.find(name);
  if (it != strings_.end() && it->second == v) strings_.erase(it);
}

uint64_t ValueNames::freshNumber() {
  while (find(next_fresh_) != nullptr) ++next_fresh_;
  return next_fresh_++;
}

}  // namespace ag::jit
