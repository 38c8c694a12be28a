#include "proptests/api_model/values.h"

#include <algorithm>
#include <sstream>

namespace ag::proptests {

int64_t count(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string dims_str(const Dims& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

bool broadcast_dims(const Dims& a, const Dims& b, Dims* out) {
  const size_t rank = std::max(a.size(), b.size());
  Dims result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    result[i] = da == 1 ? db : da;
  }
  *out = result;
  return true;
}

bool broadcasts_to(const Dims& from, const Dims& to) {
  Dims out;
  return from.size() <= to.size() && broadcast_dims(from, to, &out) && out == to;
}

bool matmul_dims(const Dims& a, const Dims& b, Dims* out) {
  if (a.empty() || b.empty()) return false;
  Dims sa = a, sb = b;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  if (sa.back() != sb[sb.size() - 2]) return false;
  Dims batch;
  if (!broadcast_dims(Dims(sa.begin(), sa.end() - 2), Dims(sb.begin(), sb.end() - 2), &batch)) {
    return false;
  }
  Dims result = batch;
  if (a.size() > 1) result.push_back(sa[sa.size() - 2]);
  if (b.size() > 1) result.push_back(sb.back());
  *out = result;
  return true;
}

int64_t broadcast_source(const Dims& shape, const Dims& out, int64_t out_index) {
  int64_t source = 0, stride = 1;
  const size_t offset = out.size() - shape.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coordinate = out_index % out[d];
    out_index /= out[d];
    if (d >= offset) {
      const int64_t size = shape[d - offset];
      if (size != 1) source += coordinate * stride;
      stride *= size;
    }
  }
  return source;
}

}  // namespace ag::proptests
