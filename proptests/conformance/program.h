#pragma once

// A conformance program: a straight-line list of statements over tensors v0, v1, ... (numbered in
// creation order), built from the op set, views, in-place ops, custom Functions and autograd
// calls. It is the one description that every engine runs: this engine through
// engine_runner.h, a foreign engine (PyTorch) through the script its adapter renders
// (foreign_engine.h). Both produce the same records (records.h), which are compared.
//
// The text form (to_text/parse_program) is what the committed corpus stores, one statement per
// line, e.g.
//     v0 = leaf [2,3] seed=17 requires_grad=1
//     v2 = mul v0 v1
//     v3 = view v2 [6]
//     add_ v3 v1 no_grad=0 ; flags v2
//     v4 = slice v2 dim=1 start=0 end=3 step=2
//     v5 v6 = split v0 size=1 dim=0 no_grad=1
//     detach_ v2 ; flags v3
//     mul_ v4 v1 no_grad=1 ; flags v2 v3
//     v5 v6 = custom Two v3 v1
//     v7 v8 = grad outputs=v6 inputs=v0,v3 grad_outputs=v1 retain_graph=1 create_graph=1
//     backward tensors=v5 grad_tensors=- inputs=v0,v0 retain_graph=- create_graph=0 ; grads v0 v1
//     hook v3 h=0 scale=0.5
//     remove_hook h=0
// After " ; " come the extra records the statement asks for: `flags` (requires_grad and is_leaf
// of the in-place target's aliases) and `grads` (the .grad of those values). An in-place op and
// detach_ record their target's state after them, as a result's.
//
// Note [Conformance hooks]
// Hooks (engine/hooks.h, Note [Hooks]) are statements: each registered hook has a program-wide
// number, h=K, which names it in the records of its firings and in remove_hook. Every hook logs
// what it is handed, one record line per firing in firing order ("sN fire hK ...", records.h),
// so the order and the values of the firings are compared; a hook that fires in one engine only
// is a mismatch, except where DEVIATIONS.md says PyTorch runs a node the engine does not
// (extra-executions: the single root's node, nodes reaching a requested sibling output) or that
// a node's edges differ (rebased-base-node-edges: a post-hook on the base of a write through a
// view). The generated programs have hooks only where asked for (hook_gen.h: corpus/hooks.txt,
// `fuzz --against pytorch --hooks`); programs/hooks/*.txt are hand-written ones. The statements,
// with their PyTorch spelling (torch_runtime.py's tensor_hook etc. log the firings):
//     hook v3 h=0 scale=1            h0 = v3.register_hook(tensor_hook(0, 1.0))  (logs, keeps)
//     hook v3 h=1 scale=-2           ... returns the gradient times -2
//     prehook v3 h=2                 h2 = v3.grad_fn.register_prehook(pre_hook(2))
//     posthook v3 h=3                h3 = v3.grad_fn.register_hook(post_hook(3))
//     post_accumulate_hook v0 h=4    h4 = v0.register_post_accumulate_grad_hook(...)
//     remove_hook h=1                h1.remove()
//     retain_grad v3                 v3.retain_grad()
//
// The view ops of ops/ops.h (select, slice with a step, narrow, permute, t, expand, unsqueeze,
// squeeze, diagonal, unfold, as_strided, alias, split, chunk, unbind, contiguous) are kViewOp
// statements named by the op list, their integer arguments named as in ops/ops.h, a list of
// sizes positional (expand, as_strided), `no_grad=1` when the view is made under no_grad:
//     v7 = select v2 dim=1 index=-1              v2[:, -1]
//     v8 = narrow v7 dim=0 start=1 length=2      v7.narrow(0, 1, 2)
//     v9 = permute v2 dims=[1,0]                 v2.permute([1, 0])
//     v10 = expand v0 [4,2,3]                    v0.expand([4, 2, 3])
//     v11 = as_strided v2 [2,2] stride=[1,2] offset=1
//     v12 v13 v14 = unbind v2 dim=1              v12, v13, v14 = v2.unbind(1)
//
// Note [Conformance forward mode]
// Dual levels, dual tensors and the function transforms (engine/forward_ad.h, Note [Forward
// mode]; engine/functional.h, Note [Transforms]) are statements too. A level is entered and
// exited by statements of its own (PyTorch refuses nested levels, so the generated programs have
// one at a time; a level still live at the end of a program is exited after it). unpack_dual
// records the tangent's values, or "none" where the tensor carries none. The generated ones
// (forward_gen.h: corpus/forward.txt) are ordinary generated programs whose leaves are made dual
// (later statements read the dual instead), so every statement the generator makes runs on duals;
// programs/forward/*.txt are hand-written ones. With their PyTorch spelling:
//     dual_level enter               fwAD.enter_dual_level()
//     dual_level exit                fwAD.exit_dual_level()
//     v5 = make_dual v2 v4           v5 = fwAD.make_dual(v2, v4)
//     v6 v7 = unpack_dual v5         v6, v7 = fwAD.unpack_dual(v5)
// A transform statement applies a torch.func transform to a function given as a body of pure ops
// (the op list's, in program.h's text form with ',' for ' ' and ';' between ops) over its
// arguments a0, a1, ... (the body's values continue the numbering; the last is the result), to
// the primals args[0..n) (detached: the transforms' own results are compared, not their history):
//     v9 v10 = func jvp n=1 v1 v2 body=sin,v0;sum,v1        out, tangent (args: primals, tangents)
//     v9 v10 = func vjp n=1 v1 v2 body=...                  out, grads (args: primals, cotangent)
//     v9 = func jacrev n=1 v1 body=...                      one Jacobian per primal (and jacfwd)
//     v9 = func hessian n=1 v1 body=...                     a scalar body's Hessian
//     v9 = func hvp n=1 v1 v2 body=...                      jvp(grad(f), (x,), (v,))[1]
// Three more run the same vjp or jvp through another of PyTorch's modes, for the mode check
// (mode_check.h, Note [PyTorch against itself]); this engine runs them as plain vjp and jvp:
//     v9 v10 = func eager_vjp n=1 v1 v2 body=...     torch.autograd.grad of f on fresh leaves
//     v9 v10 = func compiled_vjp n=1 v1 v2 body=...  the same of torch.compile(f, "aot_eager")
//     v9 v10 = func dual_jvp n=1 v1 v2 body=...      forward_ad: make_dual, f, unpack_dual

#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory/shape.h"
#include "proptests/ops/composition.h"

namespace ag::proptests {

enum class StmtKind {
  kLeaf,             // v = uniform(-1, 1) values of `shape` from `seed`, float64
  kOp,               // v = an op of the op set: composition's Instr (its args are value ids)
  kView,             // v = view(args[0], shape)
  kViewOp,           // results = a view op `view_op` of args[0] (ints, shape, strides), no_grad
                     // when `flag`
  kDetach,           // v = args[0].detach()
  kDetachInplace,    // args[0].detach_(): a leaf that does not require grad; a view raises
  kInplace,          // args[0].add_/mul_/copy_(args[1]), under no_grad when `flag`
  kSetRequiresGrad,  // args[0].requires_grad_(flag)
  kCustom,           // results = custom Function `custom`(args)
  kGrad,             // results = grad(outputs, inputs, grad_outputs, ...)
  kBackward,         // backward(outputs, grad_outputs, inputs=inputs, ...)
  kReadGrad,         // v = args[0].grad (may be none)
  kSetGrad,          // args[0].grad = args[1], or none when args has one element
  kHook,             // hook `hook` (`hook_kind`) on args[0] (Note [Conformance hooks])
  kRemoveHook,       // the handle of hook `hook`.remove()
  kRetainGrad,       // args[0].retain_grad()
  kDualLevel,        // enter (flag) or exit a dual level (Note [Conformance forward mode])
  kMakeDual,         // v = make_dual(args[0], args[1])
  kUnpackDual,       // primal, tangent = unpack_dual(args[0])
  kTransform,        // results = a torch.func transform `transform` of `body` at args
};

// What a kTransform statement applies (Note [Conformance forward mode]).
enum class TransformKind {
  kJvp,
  kVjp,
  kJacrev,
  kJacfwd,
  kHessian,
  kHvp,
  kEagerVjp,     // vjp through torch.autograd.grad
  kCompiledVjp,  // vjp through torch.compile(f, backend="aot_eager") and torch.autograd.grad
  kDualJvp,      // jvp through torch.autograd.forward_ad
};

// What a kHook statement registers (Note [Conformance hooks]).
enum class HookKind {
  kTensor,          // args[0].register_hook: logs the gradient, returns it times `scale` (1: None)
  kPre,             // args[0].grad_fn.register_prehook: logs grad_outputs
  kPost,            // args[0].grad_fn.register_hook: logs grad_inputs and grad_outputs
  kPostAccumulate,  // args[0].register_post_accumulate_grad_hook: logs the leaf's .grad
};

enum class InplaceKind { kAdd, kMul, kCopy };

// The view ops of a kViewOp statement (ops/ops.h, in its order), with what their arguments are:
// `ints` in the order of view_int_names(), `shape` the sizes of expand and as_strided, `strides`
// as_strided's.
enum class ViewOp {
  kSelect,      // dim index
  kSlice,       // dim start end step
  kNarrow,      // dim start length
  kPermute,     // dims (in `shape`)
  kT,           //
  kExpand,      // sizes (in `shape`)
  kUnsqueeze,   // dim
  kSqueeze,     // [dim]: every dim of size 1 when absent
  kDiagonal,    // offset dim1 dim2
  kUnfold,      // dim size step
  kAsStrided,   // sizes (`shape`), strides, offset
  kAlias,       //
  kSplit,       // size dim: several results
  kChunk,       // chunks dim: several results
  kUnbind,      // dim: several results
  kContiguous,  //
};
inline constexpr int kNumViewOps = static_cast<int>(ViewOp::kContiguous) + 1;

// The custom Functions (custom_functions.h; torch_runtime.py has the same three).
enum class CustomKind {
  kMul,    // a * b                                  (the seed's Mul, issue 56500)
  kTwo,    // (a * b, a + b): two outputs
  kSplit,  // (2 * a, -a): the second marked non-differentiable
};

struct Stmt {
  StmtKind kind = StmtKind::kLeaf;
  std::vector<int> results;  // value ids this statement creates
  std::vector<int> args;     // operands (see StmtKind)

  // kLeaf, kView; kViewOp: permute's dims, expand's and as_strided's sizes
  Shape shape;
  uint64_t seed = 0;
  // kLeaf, kSetRequiresGrad: requires_grad; kInplace, kViewOp: under no_grad
  bool flag = false;
  ViewOp view_op = ViewOp::kAlias;  // kViewOp
  std::vector<int64_t> ints;        // kViewOp: its integer arguments (view_int_names)
  Shape strides;                    // kViewOp: as_strided's
  proptests::Instr instr;           // kOp
  InplaceKind inplace = InplaceKind::kAdd;
  CustomKind custom = CustomKind::kMul;

  // kGrad, kBackward. grad_outputs: one per output, -1 = none (implicit ones).
  std::vector<int> outputs, inputs, grad_outputs;
  int retain_graph = -1;  // -1: the default (= create_graph)
  bool create_graph = false;
  bool allow_unused = false;

  // kHook, kRemoveHook: the hook's number; kHook: what it is, and a tensor hook's factor.
  int hook = -1;
  HookKind hook_kind = HookKind::kTensor;
  double scale = 1.0;

  // kTransform: the transform, the number of primals (the first args) and the function's body,
  // whose instructions' args number the function's arguments, then the body's own values.
  TransformKind transform = TransformKind::kJvp;
  int num_primals = 0;
  std::vector<proptests::Instr> body;

  // Extra records after the statement.
  std::vector<int> record_flags;  // requires_grad/is_leaf of these values
  std::vector<int> record_grads;  // .grad of these values
};

struct ConformanceProgram {
  std::vector<Stmt> stmts;
  int num_values = 0;
};

// Ops are named in the text form and the records by proptests::op_name(): the op list's names.
const char* inplace_name(InplaceKind kind);
// A view op's name (the op list's) and the names of its integer arguments, in `ints`' order.
const char* view_op_name(ViewOp op);
std::vector<const char*> view_int_names(ViewOp op);
ops::OpId view_op_id(ViewOp op);
const char* custom_name(CustomKind kind);
const char* hook_kind_name(HookKind kind);       // the text form's head: hook, prehook, ...
const char* transform_name(TransformKind kind);  // jvp, vjp, jacrev, jacfwd, hessian, hvp, ...
// The number of results of a transform statement with `num_primals` primals.
int num_results(TransformKind kind, int num_primals);
int num_results(CustomKind kind);
// Whether the statement's results are views of args[0]: kView, and kViewOp but contiguous (a copy
// unless its input is contiguous already, when it returns the input itself).
bool makes_views(const Stmt& stmt);
// What a program does with the view ops, for the corpus' counts (corpus_test, export): whether it
// makes a view op's result, a partial one (select, slice, narrow, diagonal, unfold, as_strided,
// split, chunk, unbind: not every element of the input), and whether an in-place op writes into
// such a result or into the memory it views (through the base, or another view).
struct ViewUse {
  bool views = false;
  bool partial_views = false;
  bool writes_through_views = false;
};
ViewUse view_use(const ConformanceProgram& program);
// Whether the statement's results are recorded with their values (all but leaves, whose values
// are the program's input).
bool records_values(const Stmt& stmt);
// Whether the statement's target args[0] is recorded after it, as a result is: an in-place op's
// and detach_'s.
bool records_target(const Stmt& stmt);
// The value ids a statement reads; it is skipped when one of them is missing.
std::vector<int> reads(const Stmt& stmt);

std::string to_text(const Stmt& stmt);
std::string to_text(const ConformanceProgram& program);
// Throws std::runtime_error naming the line on malformed text.
ConformanceProgram parse_program(const std::string& text);

}  // namespace ag::proptests
