// Entry points of a library opened with dlopen (cuBLAS and cuBLASLt, cublas_matmul.h says why).
#pragma once

#include <dlfcn.h>

#include <string>

namespace ag::cuda {

// Sets `fn` to the symbol `name` of `lib`; when it is missing, appends the name to `missing`
// ("a, b"), so that one message lists every absent entry point.
template <typename Fn>
void resolve(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
}

}  // namespace ag::cuda
