#pragma once

#include <initializer_list>

#include "engine/tensor.h"
#include "ops/slots.h"

namespace ag::ops {

class OpSpec;  // ops/spec.h

// Note [Tracing hook]
// engine/jit's tracer records ops as they run (torch.jit.trace). Every op reports itself here:
// record() for ops that may build a node, trace() for the others (in-place ops, after their
// write; ops without a derivative). When no trace is active this costs one thread-local load.
// Ops that an op calls for its own bookkeeping (a view's history, mul_'s copy of self) run
// under a TracePause, so that a trace holds only what the program called.
class TraceHook {
 public:
  virtual ~TraceHook() = default;
  // `spec` applied to `inputs` (one per input of the spec; undefined for an absent optional
  // input) returned `result`: for an in-place op, the written input after the write.
  virtual void record_op(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                         const Tensor& result, const OpAttrs& attrs) = 0;
  // Whether backward()/grad() may run under this trace, their formulas' ops recorded as the
  // program's own (Note [Tracing gradients], engine/jit/tracer.h).
  virtual bool records_gradients() const { return false; }
};
namespace detail {
inline thread_local TraceHook* trace_hook = nullptr;  // constant-initialized: one TLS load
}  // namespace detail
inline TraceHook* trace_hook() { return detail::trace_hook; }

// Sets the hook (or none) for its lifetime on this thread.
class TraceHookGuard {
 public:
  explicit TraceHookGuard(TraceHook* hook) : previous_(detail::trace_hook) {
    detail::trace_hook = hook;
  }
  ~TraceHookGuard() { detail::trace_hook = previous_; }
  TraceHookGuard(const TraceHookGuard&) = delete;
  TraceHookGuard& operator=(const TraceHookGuard&) = delete;

 private:
  TraceHook* previous_;
};
struct TracePause : TraceHookGuard {
  TracePause() : TraceHookGuard(nullptr) {}
};
// Pauses a forward trace only. Under a trace of gradients (Note [Tracing gradients],
// engine/jit/tracer.h) an op's copy that its formulas read (mul_'s self before the write) is part
// of what the trace must recompute, so it is recorded.
struct ForwardTracePause : TraceHookGuard {
  ForwardTracePause()
      : TraceHookGuard(trace_hook() != nullptr && trace_hook()->records_gradients() ? trace_hook()
                                                                                    : nullptr) {}
};

// Reports an op that builds no node through record() to an active trace.
inline void trace(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                  const Tensor& result, const OpAttrs& attrs = NoAttrs()) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, attrs);
}

}  // namespace ag::ops
