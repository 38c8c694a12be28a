#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ag {

// Every user-facing failure of the engine and the ops is an ag::Error whose message names the op
// and the shapes involved. Throwing never leaves a graph half-modified (see each throw site).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str());
}

// AG_CHECK(cond, "op: message ", shape) throws ag::Error with the concatenated message.
#define AG_CHECK(cond, ...)               \
  do {                                    \
    if (!(cond)) ::ag::fail(__VA_ARGS__); \
  } while (0)

}  // namespace ag
