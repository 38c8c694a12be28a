// Note [Model saved-tensor hooks] (model.h): the scopes, what their pack sees, and which
// storages a keeping pack holds.
#include "proptests/api_model/model.h"

namespace ag::proptests {

Outcome Model::open_saved_hooks(PackKind pack, double unpack_scale) {
  SavedHooksScope scope;
  scope.pack = pack;
  scope.unpack_scale = unpack_scale;
  open_scopes_.push_back(static_cast<int>(scopes_.size()));
  scopes_.push_back(scope);
  return {};
}

Outcome Model::close_saved_hooks() {
  scopes_[open_scopes_.back()].open = false;
  open_scopes_.pop_back();
  return {};
}

// Each saved slot is packed once, when the op records it (a slot add_saves guarded away is
// never packed). A clone is a private copy: later writes to the original do not reach it.
void Model::pack_saves(Node& node) {
  if (open_scopes_.empty() || node.saved.empty()) return;
  const int id = open_scopes_.back();
  SavedHooksScope& scope = scopes_[id];
  scope.packs += static_cast<int>(node.saved.size());
  node.saved_scale = scope.unpack_scale;
  for (SavedSlot& s : node.saved) {
    s.packed_by = id;
    if (scope.pack == PackKind::kClone) s.storage = -1;
  }
}

bool Model::kept_by_pack(int impl) const {
  const int storage = impls_[impl].storage;
  for (int n = 0; n < program_.size(); ++n) {
    if (program_.released(n) == Released::kYes) continue;
    for (const SavedSlot& s : program_.node(n).saved) {
      if (s.packed_by >= 0 && s.storage == storage) return true;
    }
  }
  return false;
}

bool Model::grad_kept_by_pack() const {
  for (const ImplState& t : impls_) {
    if (t.grad >= 0 && !t.dead && kept_by_pack(t.grad)) return true;
  }
  return false;
}

}  // namespace ag::proptests
