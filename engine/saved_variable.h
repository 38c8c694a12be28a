#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/node.h"
#include "engine/tensor.h"

namespace ag {

// A tensor saved by a forward op for its backward. Two rules:
// - Version check: unpack() throws if the tensor was modified in place after it was saved.
// - No cycles: an op's own output is stored without its grad_fn (the output's grad_fn is the
//   very node that owns this SavedVariable); unpack() re-attaches the owner.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& tensor, bool is_output);

  // `owner` is the node that saved it (a saved output gets it back as grad_fn). `slot`, with
  // `index` if not -1, names the value in error messages ("other", "saved_tensors[1]"); the
  // messages are only built when they are thrown.
  Tensor unpack(const Node& owner, const char* slot, int index = -1) const;
  void release();
  bool defined() const { return data_.defined(); }
  bool released() const { return released_; }
  size_t nbytes() const { return data_.defined() ? data_.nbytes() : 0; }
  // The entry describe_graph() shows for this value, under `name`.
  Node::SavedValue describe_as(std::string name) const;

 private:
  Tensor data_;
  bool is_output_ = false;
  bool requires_grad_ = false;
  uint32_t output_nr_ = 0;
  uint32_t saved_version_ = 0;
  bool released_ = false;
  Shape saved_shape_;  // kept after release for error messages
};

}  // namespace ag
