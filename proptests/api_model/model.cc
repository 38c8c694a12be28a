// The model's tensor transitions: leaves, ops, views, in-place writes, requires_grad, .grad.
// Note [Model state] (model.h). Backward and grad live in autograd_rules.cc.
#include "proptests/api_model/model.h"

#include <algorithm>

#include "proptests/api_model/op_rules.h"

namespace ag::proptests {

namespace {
const char* const kUnreadable =
    "a view made under no_grad or by split/chunk/unbind, whose base or another view of its "
    "base has been modified inplace: its grad_fn cannot be read";
}  // namespace

bool Model::has(int name) const {
  auto it = handles_.find(name);
  return it != handles_.end() && !impls_[it->second].dead;
}

std::vector<int> Model::names() const {
  std::vector<int> out;
  for (const auto& [name, i] : handles_) {
    if (!impls_[i].dead) out.push_back(name);
  }
  return out;
}

std::vector<double> Model::values_of(int impl) const {
  const std::vector<double>& storage = storages_[impls_[impl].storage].values;
  std::vector<double> out;
  for (int64_t p : positions(layout(impl))) out.push_back(storage[p]);
  return out;
}

Strided Model::layout(int impl) const {
  const ImplState& t = impls_[impl];
  return {t.shape, t.strides, t.offset};
}

bool Model::root_overlaps(int impl) const {
  const int root = impls_[impl].view_base >= 0 ? impls_[impl].view_base : impl;
  std::vector<int64_t> p = positions(layout(root));
  std::sort(p.begin(), p.end());
  return std::adjacent_find(p.begin(), p.end()) != p.end();
}

std::vector<int64_t> Model::index_in_root(int view, int root) const {
  const std::vector<int64_t> at = positions(layout(root));
  std::map<int64_t, int64_t> element_at;
  for (size_t k = 0; k < at.size(); ++k) element_at.emplace(at[k], static_cast<int64_t>(k));
  std::vector<int64_t> out;
  for (int64_t p : positions(layout(view))) out.push_back(element_at.at(p));
  return out;
}

void Model::write(int impl, const std::vector<double>& values) {
  StorageState& storage = storages_[impls_[impl].storage];
  const std::vector<int64_t> at = positions(layout(impl));
  for (size_t k = 0; k < at.size(); ++k) storage.values[at[k]] = values[k];
}

bool Model::requires_grad(int i) const {
  const ImplState& t = impls_[i];
  // PyTorch: a differentiable view requires grad if it has a history or its base requires grad.
  if (t.view_base >= 0) return t.grad_fn.node >= 0 || requires_grad(t.view_base);
  return t.grad_fn.node >= 0 || t.leaf_requires_grad;
}

bool Model::is_leaf(int i) const {
  const ImplState& t = impls_[i];
  if (t.view_base >= 0 && version_of(i) != t.seen_version && regenerates(i)) {
    return false;  // its history is regenerated when looked at
  }
  return t.grad_fn.node < 0;
}

bool Model::regenerates(int i) const {
  const ImplState& t = impls_[i];
  return t.grad_fn.node >= 0 || requires_grad(t.view_base);
}

bool Model::has_views(int i) const {
  return std::any_of(impls_.begin(), impls_.end(),
                     [&](const ImplState& t) { return t.view_base == i; });
}

bool Model::unreadable(int i) const {
  const ImplState& t = impls_[i];
  return t.view_base >= 0 && t.made != Made::kViewOp && version_of(i) != t.seen_version &&
         regenerates(i);
}

bool Model::edgeless(int i) const {
  const ImplState& t = impls_[i];
  return t.view_base >= 0 && t.grad_fn.node < 0 && requires_grad(i) &&
         version_of(i) == t.seen_version;
}

bool Model::saved_while_not_requiring_grad(int i) const {
  for (int n = 0; n < program_.size(); ++n) {
    for (const SavedSlot& s : program_.node(n).saved) {
      if (s.leaf_impl == i && s.producer.node < 0) return true;
    }
  }
  return false;
}

template <typename Pred>
bool Model::reaches(const std::vector<int>& root_names, Pred pred) const {
  std::vector<int> stack;
  std::vector<char> seen(program_.size(), 0);
  for (int name : root_names) {
    const ImplState& t = impls_[impl_of(name)];
    int base = t.view_base >= 0 ? t.view_base : impl_of(name);
    for (int i : {impl_of(name), base}) {
      if (impls_[i].grad_fn.node >= 0) stack.push_back(impls_[i].grad_fn.node);
    }
  }
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (seen[n]) continue;
    seen[n] = 1;
    if (pred(program_.node(n))) return true;
    for (const auto& [i, e] : program_.edges(n)) stack.push_back(e.node);
  }
  return false;
}

bool Model::reaches_grad_node(const std::vector<int>& root_names) const {
  return reaches(root_names, [](const Node& n) { return n.kind == OpKind::kGrad; });
}

bool Model::reaches_scaled_unpack(const std::vector<int>& root_names) const {
  return reaches(root_names, [](const Node& n) { return n.saved_scale != 1.0; });
}

bool Model::reaches_retained(int root_name) const {
  std::set<int> nodes;
  for (const ImplState& t : impls_) {
    if (t.retains_grad && !t.dead) nodes.insert(t.grad_fn.node);
  }
  for (const auto& [id, h] : hooks_) {
    if (!h.removed) nodes.insert(h.edge.node);
  }
  std::vector<int> stack;
  std::vector<char> seen(program_.size(), 0);
  if (impls_[impl_of(root_name)].grad_fn.node >= 0) {
    stack.push_back(impls_[impl_of(root_name)].grad_fn.node);
  }
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (seen[n]) continue;
    seen[n] = 1;
    if (nodes.count(n)) return true;
    for (const auto& [i, e] : program_.edges(n)) stack.push_back(e.node);
  }
  return false;
}

int Model::new_storage(std::vector<double> values) {
  storages_.push_back({std::move(values), 0});
  return static_cast<int>(storages_.size()) - 1;
}

int Model::new_impl(Dims shape, int storage) {
  ImplState t;
  t.strides = contiguous_layout(shape).strides;
  t.shape = std::move(shape);
  t.storage = storage;
  // Note [Model dual levels]: made by a call the model does not follow tangents through (a
  // backward, grad()) while tangents live; the calls that do set it.
  if (dual_live_ && any_tangent()) t.tangent_kind = Tangent::kUnknown;
  impls_.push_back(std::move(t));
  return num_impls() - 1;
}

int Model::new_alias(int of, const Strided& layout) {
  const int i = new_impl(layout.sizes, impls_[of].storage);
  impls_[i].strides = layout.strides;
  impls_[i].offset = layout.offset;
  impls_[i].layout_known = impls_[of].layout_known;
  return i;
}

int Model::new_view(int of, const Strided& layout, bool no_grad) {
  const int i = new_alias(of, layout);
  impls_[i].made = no_grad                     ? Made::kNoGrad
                   : impls_[of].view_base >= 0 ? impls_[of].made
                                               : Made::kViewOp;
  impls_[i].view_base = impls_[of].view_base >= 0 ? impls_[of].view_base : of;
  impls_[i].fw_base = impls_[of].fw_base >= 0 ? impls_[of].fw_base : of;
  impls_[i].seen_version = version_of(of);
  return i;
}

void Model::bind(int name, int impl) {
  handles_[name] = impl;
  reserve(name);
}

Ref Model::add_node(Node node) { return {program_.add(std::move(node)), 0}; }

void Model::refresh_view(int i) {
  const ImplState& t = impls_[i];
  if (t.view_base < 0 || version_of(i) == t.seen_version) return;
  if (!regenerates(i)) return;          // stays a leaf (and stale, until its base requires grad)
  if (t.made != Made::kViewOp) return;  // unreadable: Note [Model view kinds]
  Node n;
  n.kind = OpKind::kStridedView;
  n.attrs.shape = t.shape;
  n.attrs.index = std::make_shared<std::vector<int64_t>>(index_in_root(i, t.view_base));
  n.attrs.regenerated = true;
  n.inputs = {use_of(t.view_base, true)};
  const Ref history = add_node(std::move(n));
  impls_[i].grad_fn = history;
  impls_[i].seen_version = version_of(i);
}

Ref Model::edge(int i) {
  refresh_view(i);
  if (impls_[i].grad_fn.node >= 0) return impls_[i].grad_fn;
  if (impls_[i].accumulator < 0) {
    Node n;
    n.kind = OpKind::kLeaf;
    n.out_shapes = {impls_[i].shape};
    n.leaf_impl = i;
    impls_[i].accumulator = program_.add(std::move(n));
  }
  return {impls_[i].accumulator, 0};
}

Use Model::use_of(int i, bool track) {
  refresh_view(i);
  Use u;
  u.shape = impls_[i].shape;
  u.snapshot = values_of(i);
  u.tracked = track && requires_grad(i);
  if (u.tracked) u.ref = edge(i);
  if (dual_live_ && impls_[i].tangent_kind != Tangent::kNone) {  // Note [Tangents of gradients]
    u.tangent_level = dual_level_;
    u.tangent_unknown = impls_[i].tangent_kind == Tangent::kUnknown;
    u.tangent = impls_[i].tangent;
  }
  return u;
}

// Saves what the node's formulas need (Note [Guarded saves] in ops/spec.h: a slot is kept only
// if some formula using it belongs to an input that requires grad). `impls` are the operands'
// impls; a kFromResult slot lives in `result_storage`. Versions are read now, before any write.
void Model::add_saves(Node& node, const std::vector<int>& impls) {
  const OpRules rules = op_rules(node.kind, node.attrs);
  node.unpack_all = rules.unpack_all;
  uint32_t tracked = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].tracked) tracked |= 1u << i;
  }
  // Batched matmul: which operand PyTorch folds into a copy differs from the engine.
  bool certain = true;
  if (node.kind == OpKind::kMatmul && node.attrs.dim0 == 0) {
    const Dims &a = node.inputs[0].shape, &b = node.inputs[1].shape;
    certain = (a.size() <= 2 && b.size() <= 2) || b.size() <= 2 ||
              (a.size() >= 3 && b.size() >= 3 &&
               Dims(a.begin(), a.end() - 2) == Dims(b.begin(), b.end() - 2));
  }
  // Which operands the engine's matmul and linear reshape before saving them (ops/linalg.cc).
  auto viewed = [&](int source) {
    if (node.kind == OpKind::kLinear) return source == 0 && node.inputs[0].shape.size() != 2;
    if (node.kind != OpKind::kMatmul || node.attrs.dim0 != 0) return false;
    const size_t da = node.inputs[0].shape.size(), db = node.inputs[1].shape.size();
    if (da == 1 && db == 1) return false;
    return source == 0 ? !(da == 2 && db <= 2) : db != 2;
  };
  for (const SlotRule& rule : rules.slots) {
    if (!rules.unpack_all && (rule.used_by & tracked) == 0) continue;
    SavedSlot s;
    s.used_by = rule.used_by;
    s.certain = certain;
    if (rule.source >= 0) {
      const int impl = impls[rule.source];
      s.storage = impls_[impl].storage;
      s.version = version_of(impl);
      if (node.inputs[rule.source].tracked) s.producer = node.inputs[rule.source].ref;
      if (impls_[impl].grad_fn.node < 0) s.leaf_impl = impl;
      s.via_view = viewed(rule.source);
    } else if (rule.source == kFromResult) {
      s.storage = -2;  // filled in by the caller once the result has a storage
      s.producer = {program_.size(), 0};
    } else {  // kSelfBefore: a private clone, which keeps self's history
      if (node.inputs[0].tracked) s.producer = node.inputs[0].ref;
    }
    node.saved.push_back(s);
  }
  pack_saves(node);
}

void Model::kill_storage(int storage) {
  storages_[storage].unknown = true;
  for (ImplState& t : impls_) {
    if (t.storage == storage) t.dead = true;
  }
}

Outcome Model::leaf(int name, const Dims& shape, const std::vector<double>& values, bool rg) {
  const int i = new_impl(shape, new_storage(values));
  set_no_tangent(i);
  impls_[i].leaf_requires_grad = rg;
  bind(name, i);
  return {};
}

namespace {

// Whether the engine accepts these operand shapes (otherwise it must raise ag::Error).
bool shapes_valid(OpKind kind, const OpAttrs& attrs, const std::vector<Dims>& s) {
  Dims out;
  switch (kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
      return broadcast_dims(s[0], s[1], &out);
    case OpKind::kMatmul:
      if (attrs.dim0 == 1) return s[0].size() == 2 && s[1].size() == 2 && s[0][1] == s[1][0];
      if (attrs.dim0 == 2) {
        return s[0].size() == 3 && s[1].size() == 3 && s[0][0] == s[1][0] && s[0][2] == s[1][1];
      }
      return matmul_dims(s[0], s[1], &out);
    case OpKind::kLinear:
      return s[1].size() == 2 && !s[0].empty() && s[0].back() == s[1][1] &&
             (s.size() < 3 || s[2] == Dims{s[1][0]});
    default:
      return true;
  }
}

// The strides PyTorch gives op `kind`'s result over operands laid out as `in` (Note [Model
// output layouts], layouts.h).
Dims result_strides(OpKind kind, const Dims& shape, const std::vector<Strided>& in) {
  if (unary_traits(kind) || kind == OpKind::kPowScalar) return elementwise_strides(shape, {in[0]});
  switch (kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
      return elementwise_strides(shape, {in[0], in[1]});
    case OpKind::kAddScalar:  // x + s and x * s take s as a 0-d operand
    case OpKind::kMulScalar:
      return elementwise_strides(shape, {in[0], Strided{}});
    case OpKind::kClone:
      return preserve_strides(in[0]);
    case OpKind::kCustomMul:  // the Functions' forwards: p * q (and p + q)
    case OpKind::kCustomTwo:
      return elementwise_strides(shape, {in[0], in[1]});
    default:
      return contiguous_layout(shape).strides;
  }
}

// A new storage holding `values` (row-major) at the positions of `layout` (dense).
std::vector<double> laid_out(const std::vector<double>& values, const Strided& layout) {
  std::vector<double> storage(values.size());
  const std::vector<int64_t> at = positions(layout);
  for (size_t k = 0; k < values.size(); ++k) storage[static_cast<size_t>(at[k])] = values[k];
  return storage;
}

}  // namespace

std::vector<Val<double>> Model::preview(OpKind kind, const OpAttrs& attrs,
                                        const std::vector<int>& operands) const {
  std::vector<Use> uses;
  std::vector<Dims> shapes;
  for (int o : operands) {
    Use u;
    u.shape = shape(o);
    u.snapshot = values_of(impl_of(o));
    shapes.push_back(u.shape);
    uses.push_back(std::move(u));
  }
  if (!shapes_valid(kind, attrs, shapes)) return {};
  return ApiProgram::forward(kind, attrs, uses);
}

Outcome Model::op(int name, OpKind kind, const OpAttrs& attrs, const std::vector<int>& operands) {
  reserve(name);  // a call that raises still spends its name
  std::vector<Dims> shapes;
  for (int o : operands) shapes.push_back(shape(o));
  if (!shapes_valid(kind, attrs, shapes)) return Outcome::raise("shapes do not match");
  for (int o : operands) {
    if (unreadable(impl_of(o))) return Outcome::raise(kUnreadable);
  }
  Node n;
  n.kind = kind;
  n.attrs = attrs;
  std::vector<int> impls;
  bool tracked_any = false;
  for (int o : operands) {
    impls.push_back(impl_of(o));
    n.inputs.push_back(use_of(impl_of(o), true));
    tracked_any = tracked_any || n.inputs.back().tracked;
  }
  std::vector<Val<double>> out = ApiProgram::forward(kind, attrs, n.inputs);
  std::vector<Strided> layouts;
  for (int i : impls) layouts.push_back(layout(i));
  const Strided at{out[0].shape, result_strides(kind, out[0].shape, layouts), 0};
  const int storage = new_storage(laid_out(out[0].v, at));
  // PyTorch's matmul and linear end in in-place reshapes of their result for some shapes.
  storages_[storage].version_from_zero = kind != OpKind::kMatmul && kind != OpKind::kLinear;
  const int result = new_impl(out[0].shape, storage);
  impls_[result].strides = at.strides;
  if (tracked_any) {
    add_saves(n, impls);
    for (SavedSlot& s : n.saved) {
      if (s.storage == -2) s.storage = storage;
    }
    impls_[result].grad_fn = add_node(std::move(n));
  }
  op_tangents({result}, kind, attrs, impls);
  bind(name, result);
  return {};
}

Outcome Model::view(int name, int of, const Dims& shape, bool spelled_view) {
  reserve(name);
  const int base = impl_of(of);
  if (count(shape) != count(impls_[base].shape)) return Outcome::raise("reshape: wrong size");
  if (unreadable(base)) return Outcome::raise(kUnreadable);
  const std::optional<Dims> strides = reshape_strides(layout(base), shape);
  if (!strides && spelled_view) {
    return Outcome::raise("view size is not compatible with input tensor's size and stride");
  }
  if (!strides) {  // reshape copies: a new tensor (PyTorch's _unsafe_view of a clone)
    Node n;
    n.kind = OpKind::kReshape;
    n.attrs.shape = shape;
    n.inputs = {use_of(base, true)};
    const int i = new_impl(shape, new_storage(values_of(base)));
    if (n.inputs[0].tracked) impls_[i].grad_fn = add_node(std::move(n));
    copy_tangent(i, base);
    new_tangent_family(i);  // a copy of the tangent too
    bind(name, i);
    return {};
  }
  Use u = use_of(base, true);
  const int i = new_view(base, {shape, *strides, impls_[base].offset});
  if (u.tracked) {
    Node n;
    n.kind = OpKind::kReshape;
    n.attrs.shape = shape;
    n.inputs = {std::move(u)};
    impls_[i].grad_fn = add_node(std::move(n));
  }
  copy_tangent(i, base);
  bind(name, i);
  return {};
}

Outcome Model::view_op(int name, int of, const ViewCall& call, bool no_grad) {
  reserve(name);
  const int base = impl_of(of);
  const ViewResult made = apply_view(layout(base), call);
  if (!made.layout) return Outcome::raise(made.error);
  if (!no_grad && unreadable(base)) return Outcome::raise(kUnreadable);
  Use u = use_of(base, !no_grad);
  const int i = new_view(base, *made.layout, no_grad);
  if (u.tracked) {
    Node n;
    n.kind = OpKind::kStridedView;
    n.attrs.shape = made.layout->sizes;
    // The elements of the input it reads: the same view of the input's own elements.
    n.attrs.index = std::make_shared<std::vector<int64_t>>(
        positions(*apply_view(contiguous_layout(impls_[base].shape), call).layout));
    n.inputs = {std::move(u)};
    impls_[i].grad_fn = add_node(std::move(n));
  }
  view_tangent(i, base);
  bind(name, i);
  return {};
}

Outcome Model::multi_view(const std::vector<int>& names, int of, const MultiCall& call,
                          bool no_grad) {
  for (int name : names) reserve(name);
  const int base = impl_of(of);
  const std::optional<std::vector<ViewCall>> parts = multi_parts(impls_[base].shape, call);
  if (!parts) return Outcome::raise("split/chunk/unbind: invalid arguments");
  if (!no_grad && unreadable(base)) return Outcome::raise(kUnreadable);
  Use u = use_of(base, !no_grad);
  std::vector<int> outs;
  auto parts_of_node = std::make_shared<std::vector<std::pair<Dims, std::vector<int64_t>>>>();
  for (const ViewCall& part : *parts) {
    const Strided at = *apply_view(layout(base), part).layout;
    const int i = new_view(base, at, no_grad);
    if (!no_grad) impls_[i].made = Made::kMultiOutput;
    outs.push_back(i);
    parts_of_node->emplace_back(
        at.sizes, positions(*apply_view(contiguous_layout(impls_[base].shape), part).layout));
  }
  if (u.tracked) {  // PyTorch's SplitBackward0 / UnbindBackward0: one output per view
    Node n;
    n.kind = OpKind::kSplit;
    n.attrs.parts = std::move(parts_of_node);
    n.inputs = {std::move(u)};
    const int node = program_.add(std::move(n));
    for (size_t k = 0; k < outs.size(); ++k) {
      impls_[outs[k]].grad_fn = {node, static_cast<int>(k)};
    }
  }
  for (int i : outs) view_tangent(i, base);
  for (size_t k = 0; k < outs.size(); ++k) bind(names[k], outs[k]);
  return {};
}

Outcome Model::alias(int name, int of) {
  bind(name, impl_of(of));
  return {};
}

Outcome Model::detach(int name, int of) {
  const int i = impl_of(of);
  const int d = new_alias(i, layout(i));
  set_no_tangent(d);  // detach() drops the tangent (Note [Model dual levels])
  bind(name, d);
  return {};
}

// PyTorch's refusals of in-place writes whose operands overlap in memory (TensorIterator's
// checks; copy_ of a tensor onto the same elements returns before them).
const char* Model::overlap_error(OpKind kind, int a, int b) const {
  const bool same_storage = impls_[a].storage == impls_[b].storage;
  if (kind == OpKind::kCopyInplace && same_storage && layout(a) == layout(b)) return nullptr;
  if (has_internal_overlap(layout(a))) {
    return "unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location";
  }
  if (!same_storage || a == b) return nullptr;
  const Strided sa = layout(a), sb = layout(b);
  if (overlap(sa, sb) != Overlap::kPartial) return nullptr;
  return "unsupported operation: some elements of the input tensor and the written-to tensor "
         "refer to a single memory location";
}

Outcome Model::inplace(OpKind kind, int self, int other, bool no_grad) {
  const int a = impl_of(self), b = impl_of(other);
  if (!broadcasts_to(impls_[b].shape, impls_[a].shape)) {
    return Outcome::raise("the other operand does not broadcast to self's shape");
  }
  const int base = impls_[a].view_base;
  // Note [Model view kinds]: a recorded write reads self's and other's grad_fn.
  if (!no_grad && (unreadable(a) || unreadable(b))) return Outcome::raise(kUnreadable);
  if (!no_grad && base >= 0 && impls_[a].made != Made::kViewOp &&
      (requires_grad(a) || requires_grad(b))) {
    return Outcome::raise(impls_[a].made == Made::kNoGrad
                              ? "A view was created in no_grad mode and is being modified "
                                "inplace with grad mode enabled"
                              : "is a view and is being modified inplace. This view is the "
                                "output of a function that returns multiple views");
  }
  if (!no_grad && is_leaf(a) && requires_grad(a)) {
    return Outcome::raise("a leaf Variable that requires grad is being used in an in-place op");
  }
  if (!no_grad && base >= 0 && is_leaf(base) && requires_grad(base)) {
    return Outcome::raise("a view of a leaf Variable that requires grad is used in an in-place op");
  }
  if (const char* refused = overlap_error(kind, a, b)) return Outcome::raise(refused);
  const bool record = !no_grad && (requires_grad(a) || requires_grad(b));
  // Everything the node records is read before the write.
  Node n;
  n.kind = base >= 0 ? OpKind::kInplaceOnView : kind;
  n.attrs.inner = kind;
  n.attrs.shape = impls_[a].shape;
  if (base >= 0) {  // which elements of the base the view reads, and which it writes
    n.attrs.index = std::make_shared<std::vector<int64_t>>(index_in_root(a, base));
    auto from = std::make_shared<std::vector<int64_t>>(count(impls_[base].shape), -1);
    for (size_t k = 0; k < n.attrs.index->size(); ++k) {
      (*from)[(*n.attrs.index)[k]] = static_cast<int64_t>(k);
    }
    n.attrs.written_from = std::move(from);
  }
  Use self_use = use_of(a, false);
  if (record) {
    n.inputs = {use_of(base >= 0 ? base : a, true), use_of(b, true)};
    add_saves(n, {base >= 0 ? base : a, b});
    // The formulas read the view's old value, with the view's tangent (Note [Tangents of
    // gradients]): the base's elements it reads carry that, the others are never read.
    if (base >= 0) {
      Use& u = n.inputs[0];
      u.tangent_level = self_use.tangent_level;
      u.tangent_unknown = self_use.tangent_unknown;
      u.tangent.clear();
      if (u.tangent_level > 0 && !u.tangent_unknown) {
        u.tangent.assign(u.snapshot.size(), 0.0);
        for (size_t k = 0; k < n.attrs.index->size(); ++k) {
          u.tangent[(*n.attrs.index)[k]] = self_use.tangent[k];
        }
      }
    }
  }
  Use other_use = use_of(b, false);
  Outcome done;
  if (const char* event = inplace_tangent(kind, a, b, self_use, other_use)) {
    done.events.insert(event);
  }
  write(a, ApiProgram::forward(kind, {}, {self_use, other_use})[0].v);
  ++storages_[impls_[a].storage].version;
  if (!record) return done;  // a view written without a record regenerates when next used
  if (base < 0) {
    impls_[a].grad_fn = add_node(std::move(n));
    return done;
  }
  // CopySlices: the base's history absorbs the write; the view becomes a view of that, reading
  // the same elements of it.
  Node v;
  v.attrs.index = n.attrs.index;
  impls_[base].grad_fn = add_node(std::move(n));
  v.kind = OpKind::kStridedView;
  v.attrs.shape = impls_[a].shape;
  v.attrs.regenerated = true;
  v.inputs = {use_of(base, true)};
  impls_[a].grad_fn = add_node(std::move(v));
  impls_[a].seen_version = version_of(a);
  return done;
}

Outcome Model::custom(OpKind kind, const std::vector<int>& out_names, int p, int q) {
  Node n;
  n.kind = kind;
  n.inputs = {use_of(impl_of(p), true), use_of(impl_of(q), true)};
  const bool tracked_any = n.inputs[0].tracked || n.inputs[1].tracked;
  std::vector<Val<double>> out = ApiProgram::forward(kind, {}, n.inputs);
  std::vector<int> results;
  for (const Val<double>& v : out) {
    const Strided at{v.shape,
                     result_strides(kind, v.shape, {layout(impl_of(p)), layout(impl_of(q))}), 0};
    results.push_back(new_impl(v.shape, new_storage(laid_out(v.v, at))));
    impls_[results.back()].strides = at.strides;
  }
  if (tracked_any) {
    add_saves(n, {impl_of(p), impl_of(q)});
    const int node = program_.add(std::move(n));
    for (size_t k = 0; k < results.size(); ++k) {
      impls_[results[k]].grad_fn = {node, static_cast<int>(k)};
    }
  }
  // The generator gives a custom Function no operand with a tangent (it has no jvp).
  for (int r : results) {
    set_no_tangent(r);
    if (impls_[impl_of(p)].tangent_kind != Tangent::kNone ||
        impls_[impl_of(q)].tangent_kind != Tangent::kNone) {
      impls_[r].tangent_kind = Tangent::kUnknown;
    }
  }
  for (size_t k = 0; k < results.size(); ++k) bind(out_names[k], results[k]);
  return {};
}

Outcome Model::set_requires_grad(int name, bool rg) {
  const int i = impl_of(name);
  if (!is_leaf(i)) {
    if (rg) return {};  // it does already: a no-op
    return Outcome::raise("you can only change requires_grad flags of leaf variables");
  }
  impls_[i].leaf_requires_grad = rg;
  return {};
}

Outcome Model::retain_grad(int name) {
  const int i = impl_of(name);
  if (!requires_grad(i))
    return Outcome::raise("can't retain_grad on Tensor that has requires_grad=False");
  retain(i);
  return {};
}

Outcome Model::register_hook(int id, int name, double factor) {
  next_hook_ = std::max(next_hook_, id + 1);
  const int i = impl_of(name);
  if (!requires_grad(i))
    return Outcome::raise("cannot register a hook on a tensor that doesn't require gradient");
  hooks_[id] = {i, edge(i), factor};  // edge(): a stale view's history regenerated first
  return {};
}

Outcome Model::register_node_hook(int id, int name, HookKind kind, double factor) {
  next_hook_ = std::max(next_hook_, id + 1);
  const int i = impl_of(name);
  // The generator picks a tensor with a grad_fn (node_hooks_allowed); reading it regenerates a
  // stale view's history first.
  hooks_[id] = {i, {edge(i).node, 0}, factor, false, kind};
  return {};
}

Outcome Model::register_post_accumulate_grad_hook(int id, int name) {
  next_hook_ = std::max(next_hook_, id + 1);
  const int i = impl_of(name);
  if (!requires_grad(i))
    return Outcome::raise("cannot register a hook on a tensor that doesn't require gradient");
  if (!is_leaf(i))
    return Outcome::raise("post accumulate grad hooks cannot be registered on non-leaf tensors");
  hooks_[id] = {i, edge(i), 1.0, false, HookKind::kPostAccumulate};
  return {};
}

bool Model::node_hooks_allowed(int i) const {
  const ImplState& t = impls_[i];
  if (t.dead || unreadable(i) || edgeless(i) || !requires_grad(i)) return false;
  if (t.view_base >= 0 && version_of(i) != t.seen_version && regenerates(i)) {
    return true;  // reading grad_fn regenerates it: a view node (refresh_view)
  }
  if (t.grad_fn.node < 0) return false;
  // The engine records mean as sum then mul by 1/n (ops/reduce.cc): its grad_fn is the mul's
  // node, where PyTorch's is one MeanBackward node (README.md).
  const OpKind kind = program_.node(t.grad_fn.node).kind;
  if (kind == OpKind::kInplaceOnView && sem_.written_base_is_not_copy_slices) return false;
  return kind != OpKind::kMatmul && kind != OpKind::kLinear && kind != OpKind::kGrad &&
         kind != OpKind::kMean && kind != OpKind::kMeanDim;
}

bool Model::runs_before(int a, int b) const {
  const HookState &x = hooks_.at(a), &y = hooks_.at(b);
  if (a == b || x.edge.node != y.edge.node) return false;
  auto phase = [](HookKind k) { return k == HookKind::kTensor ? 0 : k == HookKind::kPre ? 1 : 2; };
  if (phase(x.kind) != phase(y.kind)) return phase(x.kind) < phase(y.kind);
  return a < b && (x.kind != HookKind::kTensor || x.edge == y.edge);
}

Outcome Model::remove_hook(int id) {
  hooks_.at(id).removed = true;  // a second remove() does nothing
  return {};
}

bool Model::has_hooks(int impl) const {
  for (const auto& [id, h] : hooks_) {
    if (!h.removed && h.impl == impl) return true;
  }
  return false;
}

Outcome Model::set_grad(int name, int value) {
  const int i = impl_of(name);
  if (value < 0) {
    impls_[i].grad = -1;
    return {};
  }
  if (shape(value) != impls_[i].shape) return Outcome::raise("assigned grad has a different size");
  if (impl_of(value) == i) {
    return Outcome::raise("can't assign Variable as its own grad");
  }
  impls_[i].grad = impl_of(value);
  return {};
}

Outcome Model::take_grad(int name, int of) {
  bind(name, impls_[impl_of(of)].grad);
  return {};
}

// ---- Note [Model dual levels] -------------------------------------------------------------

bool Model::any_tangent() const {
  for (const ImplState& t : impls_) {
    if (t.tangent_kind != Tangent::kNone) return true;
  }
  return false;
}

bool Model::dual_storage(int impl) const {
  for (const ImplState& t : impls_) {
    if (t.storage == impls_[impl].storage && t.tangent_kind != Tangent::kNone) return true;
  }
  return false;
}

void Model::set_no_tangent(int impl) {
  impls_[impl].tangent_kind = Tangent::kNone;
  impls_[impl].tangent.clear();
  impls_[impl].tangent_family = -1;
}

void Model::new_tangent_family(int impl) {
  impls_[impl].tangent_family =
      impls_[impl].tangent_kind == Tangent::kKnown ? next_tangent_family_++ : -1;
}

void Model::copy_tangent(int to, int from) {
  impls_[to].tangent_kind = impls_[from].tangent_kind;
  impls_[to].tangent = impls_[from].tangent;  // row-major: a reshape keeps the order
  impls_[to].tangent_family = impls_[from].tangent_family;
}

void Model::view_tangent(int view, int of) {
  if (impls_[of].tangent_kind != Tangent::kKnown) {
    copy_tangent(view, of);
    return;
  }
  // The view reads of's tangent as it reads of's elements: element by memory position.
  std::map<int64_t, double> at;
  const std::vector<int64_t> from = positions(layout(of));
  for (size_t k = 0; k < from.size(); ++k) at.emplace(from[k], impls_[of].tangent[k]);
  std::vector<double> t;
  for (int64_t p : positions(layout(view))) t.push_back(at.at(p));
  impls_[view].tangent_kind = Tangent::kKnown;
  impls_[view].tangent = std::move(t);
  impls_[view].tangent_family = impls_[of].tangent_family;
}

void Model::op_tangents(const std::vector<int>& results, OpKind kind, const OpAttrs& attrs,
                        const std::vector<int>& operand_impls) {
  Tangent kind_out = Tangent::kNone;
  std::vector<Use> uses;
  std::vector<std::vector<double>> tangents;
  for (int o : operand_impls) {
    const ImplState& t = impls_[o];
    if (t.tangent_kind == Tangent::kUnknown) kind_out = Tangent::kUnknown;
    if (t.tangent_kind == Tangent::kKnown && kind_out == Tangent::kNone) kind_out = Tangent::kKnown;
    Use u;
    u.shape = t.shape;
    u.snapshot = values_of(o);
    uses.push_back(std::move(u));
    tangents.push_back(t.tangent_kind == Tangent::kKnown ? t.tangent : std::vector<double>());
  }
  for (int r : results) set_no_tangent(r);
  if (kind_out == Tangent::kNone) return;
  if (kind_out == Tangent::kUnknown) {
    for (int r : results) impls_[r].tangent_kind = Tangent::kUnknown;
    return;
  }
  // But values_of() reads the operands after the op; op() writes none of them.
  const std::vector<std::vector<double>> out = ApiProgram::jvp(kind, attrs, uses, tangents);
  for (size_t k = 0; k < results.size(); ++k) {
    impls_[results[k]].tangent_kind = Tangent::kKnown;
    impls_[results[k]].tangent = out[k];
    new_tangent_family(results[k]);
  }
}

const char* Model::inplace_tangent(OpKind kind, int a, int b, const Use& self_use,
                                   const Use& other_use) {
  const Tangent ta = impls_[a].tangent_kind, tb = impls_[b].tangent_kind;
  if (!dual_live_ || (ta == Tangent::kNone && tb == Tangent::kNone)) return nullptr;
  const int storage = impls_[a].storage;
  bool unknown = ta == Tangent::kUnknown || tb == Tangent::kUnknown;
  for (const ImplState& t : impls_) {
    unknown = unknown || (t.storage == storage && t.tangent_kind == Tangent::kUnknown);
  }
  if (unknown) {
    unknown_tangents_on(storage);
    return "forward: in-place, tangents unknown";
  }
  auto known = [](const ImplState& t) {
    return t.tangent_kind == Tangent::kKnown ? t.tangent : std::vector<double>();
  };
  std::vector<double> written =
      ApiProgram::jvp(kind, {}, {self_use, other_use}, {known(impls_[a]), known(impls_[b])})[0];
  if (kind == OpKind::kMulInplace && !sem_.inplace_mul_tangent_reads_other_before_write &&
      impls_[b].storage == storage) {
    // PyTorch's t_self * other + self * t_other reads `other` after the write.
    std::map<int64_t, double> after;
    const std::vector<double> values = ApiProgram::forward(kind, {}, {self_use, other_use})[0].v;
    const std::vector<int64_t> at_a = positions(layout(a));
    for (size_t k = 0; k < at_a.size(); ++k) after[at_a[k]] = values[k];
    Use other_after = other_use;
    const std::vector<int64_t> at_b = positions(layout(b));
    for (size_t k = 0; k < at_b.size(); ++k) {
      if (after.count(at_b[k])) other_after.snapshot[k] = after[at_b[k]];
    }
    const std::vector<double> none;
    const std::vector<double> by_self =
        ApiProgram::jvp(kind, {}, {self_use, other_after}, {known(impls_[a]), none})[0];
    const std::vector<double> by_other =
        ApiProgram::jvp(kind, {}, {self_use, other_use}, {none, known(impls_[b])})[0];
    for (size_t k = 0; k < written.size(); ++k) written[k] = by_self[k] + by_other[k];
  }
  if (ta == Tangent::kNone) {  // the forward base and its views get a zero tangent first
    const int root = impls_[a].fw_base >= 0 ? impls_[a].fw_base : a;
    const int family = next_tangent_family_++;
    for (int j = 0; j < num_impls(); ++j) {
      if (j != root && impls_[j].fw_base != root) continue;
      impls_[j].tangent_kind = Tangent::kKnown;
      impls_[j].tangent.assign(static_cast<size_t>(count(impls_[j].shape)), 0.0);
      impls_[j].tangent_family = family;
    }
  }
  // Every member of self's family sees the elements self wrote (by memory position).
  std::map<int64_t, double> at;
  const std::vector<int64_t> where = positions(layout(a));
  for (size_t k = 0; k < where.size(); ++k) at[where[k]] = written[k];
  const int family = impls_[a].tangent_family;
  int others = 0;
  for (int j = 0; j < num_impls(); ++j) {
    if (impls_[j].tangent_family != family || j == a) continue;
    const std::vector<int64_t> mine = positions(layout(j));
    for (size_t k = 0; k < mine.size(); ++k) {
      const auto it = at.find(mine[k]);
      if (it != at.end()) impls_[j].tangent[k] = it->second;
    }
    ++others;
  }
  impls_[a].tangent = written;
  if (ta == Tangent::kNone) {
    return impls_[a].fw_base >= 0 ? "forward: in-place gives a view's base a tangent"
                                  : "forward: in-place gives self a tangent";
  }
  return others > 0 ? "forward: in-place updates a shared tangent"
                    : "forward: in-place updates self's tangent";
}

ApiProgram::GradTangent Model::grad_tangent(const GradDef& def) const {
  if (dual_live_) return program_.vjp_tangent(def, dual_level_);
  ApiProgram::GradTangent none;
  none.known = true;
  return none;
}

const char* Model::set_grad_tangent(int impl, const GradDef& def) {
  if (!dual_live_) return nullptr;
  const ApiProgram::GradTangent t = grad_tangent(def);
  set_tangent(impl, t);
  if (!t.known) return "forward over reverse: gradient's tangent unknown";
  return t.defined ? "forward over reverse: gradient's tangent"
                   : "forward over reverse: gradient without a tangent";
}

void Model::set_tangent(int impl, const ApiProgram::GradTangent& t) {
  set_no_tangent(impl);
  if (!dual_live_) return;
  if (!t.known) {
    impls_[impl].tangent_kind = Tangent::kUnknown;
  } else if (t.defined) {
    impls_[impl].tangent_kind = Tangent::kKnown;
    impls_[impl].tangent = t.values;
    new_tangent_family(impl);
  }
}

void Model::sum_tangent(int to, int old, const ApiProgram::GradTangent& g) {
  if (!dual_live_) return;
  const ImplState& o = impls_[old];
  ApiProgram::GradTangent sum;
  sum.known = g.known && o.tangent_kind != Tangent::kUnknown;
  sum.defined = g.defined || o.tangent_kind == Tangent::kKnown;
  if (sum.known && sum.defined) {
    sum.values =
        o.tangent_kind == Tangent::kKnown ? o.tangent : std::vector<double>(g.values.size(), 0.0);
    for (size_t k = 0; k < g.values.size(); ++k) sum.values[k] += g.values[k];
  }
  if (to != old) return set_tangent(to, sum);
  // In place: a tangent that stays as it is, or one that the tensors sharing its storage (views
  // of it, or what it views) would see in part: those the model does not follow.
  if (g.known && !g.defined) return;
  bool shared = false;
  for (int j = 0; j < num_impls(); ++j) {
    shared = shared || (j != old && impls_[j].storage == o.storage);
  }
  if (!shared) return set_tangent(old, sum);
  unknown_tangents_on(o.storage);
}

void Model::unknown_tangents_on(int storage) {
  for (int j = 0; j < num_impls(); ++j) {
    if (impls_[j].storage != storage) continue;
    set_no_tangent(j);
    impls_[j].tangent_kind = Tangent::kUnknown;
  }
}

Outcome Model::enter_dual_level() {
  if (dual_live_) return Outcome::raise("Nested forward mode AD is not supported at the moment");
  dual_live_ = true;
  ++dual_level_;
  return {};
}

Outcome Model::exit_dual_level() {
  if (!dual_live_) return Outcome::raise("Dual level must be a positive number");
  dual_live_ = false;
  for (int i = 0; i < num_impls(); ++i) set_no_tangent(i);
  return {};
}

Outcome Model::make_dual(int name, int of, const Dims& tangent_shape,
                         const std::vector<double>& tangent) {
  reserve(name);
  if (!dual_live_) {
    return Outcome::raise("Trying to create a dual Tensor for forward AD but no level exists");
  }
  const int base = impl_of(of);
  if (tangent_shape != impls_[base].shape) {
    return Outcome::raise("Trying to set a forward gradient that has a different size");
  }
  if (impls_[base].tangent_kind != Tangent::kNone) {
    return Outcome::raise(
        "Making a dual Tensor based on a Tensor that already has a forward gradient");
  }
  // PyTorch copies a tangent whose layout is not the primal's into the primal's strides, which
  // an expanded primal refuses (the model's tangents are always fresh contiguous tensors).
  if (has_internal_overlap(layout(base))) {
    return Outcome::raise(
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location");
  }
  // PyTorch's _make_dual: a view of the primal (ViewBackward0 where it requires grad).
  const Dims shape = impls_[base].shape;  // a copy: view() adds impls
  Outcome out = view(name, of, shape, true);
  if (out.expect != Expect::kOk) return out;
  const int i = impl_of(name);
  // An alias: the primal's strides too (a view's computed strides may differ at size-1 dims,
  // which PyTorch's overlap check of an in-place op between the two compares).
  impls_[i].strides = impls_[base].strides;
  impls_[i].tangent_kind = Tangent::kKnown;
  impls_[i].tangent = tangent;
  new_tangent_family(i);
  impls_[i].fw_base = -1;  // its views read its tangent, not its primal's (not a forward view)
  out.events.insert("forward: make_dual");
  return out;
}

Outcome Model::unpack_dual(int name) const {
  Outcome out;
  const ImplState& t = impls_[impl_of(name)];
  out.tangent_checked = t.tangent_kind != Tangent::kUnknown;
  if (dual_live_ && t.tangent_kind == Tangent::kKnown) {
    out.tangent.defined = true;
    out.tangent.grad = t.tangent;
  }
  if (out.tangent_checked) {
    out.events.insert(out.tangent.defined ? "forward: tangent compared" : "forward: None compared");
  }
  return out;
}

}  // namespace ag::proptests
