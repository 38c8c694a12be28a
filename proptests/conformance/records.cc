#include "proptests/conformance/records.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "proptests/conformance/text.h"

namespace ag::proptests {

std::string Records::text() const {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

Records Records::parse(const std::string& text) {
  Records r;
  for (const std::string& l : split(text, '\n')) {
    if (!trim(l).empty()) r.lines.push_back(trim(l));
  }
  return r;
}

std::string error_kind(const std::string& message) {
  if (message.find("backward through the graph a second time") != std::string::npos) {
    return " freed";
  }
  if (message.find("modified by an in") != std::string::npos)
    return " version";  // in-place, inplace
  return "";
}

Digest digest(const std::vector<double>& values) {
  Digest g;
  g.n = static_cast<int64_t>(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    // Kept as separate roundings (this file is built with -ffp-contract=off), as Python does.
    const double w = 1.0 + std::fmod(static_cast<double>(i) * 0.6180339887498949, 1.0);
    const double x = values[i] * w;
    const double ax = std::fabs(values[i]) * w;
    g.d += x;
    g.a += ax;
  }
  return g;
}

std::optional<ValueLine> parse_value_line(const std::string& line) {
  const std::vector<std::string> f = split(line, ' ');
  if (f.size() < 2 || f[0].size() < 2 || f[0][0] != 's' || f[1].size() < 2 || f[1][0] != 'v') {
    return std::nullopt;
  }
  ValueLine out;
  try {
    out.stmt = std::stoul(f[0].substr(1));
    out.value = std::stoi(f[1].substr(1));
    size_t i = 2;
    while (i < f.size() && f[i] != "=") ++i;
    if (i == f.size()) return std::nullopt;
    for (++i; i < f.size(); ++i) out.values.push_back(parse_double(f[i]));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

namespace {

// "d=1.5" -> ("d=", "1.5"); a plain number -> ("", it).
std::pair<std::string, std::string> split_key(const std::string& token) {
  const size_t eq = token.find('=');
  if (eq == std::string::npos) return {"", token};
  return {token.substr(0, eq + 1), token.substr(eq + 1)};
}

bool is_number(const std::string& s, double* out) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s == "nan" ||
                     s == "inf")) {
    return false;
  }
  try {
    *out = parse_double(s);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool same_bits(double x, double y) {
  return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof(double)) == 0;
}

}  // namespace

bool lines_agree(const std::string& expected, const std::string& actual, const Tolerance& tol,
                 NumberStats& stats) {
  NumberStats c;  // added to `stats` only when the lines agree
  const std::vector<std::string> e = split(expected, ' '), a = split(actual, ' ');
  if (e.size() != a.size()) return false;
  // The scale of a digest's `d` is the `a` that follows it.
  double digest_scale = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i] == a[i]) {
      double x;
      const auto [key, num] = split_key(e[i]);
      if (is_number(num, &x) && (key.empty() || key == "d=" || key == "a=")) {
        ++c.numbers;
        ++c.bitwise;
      }
      continue;
    }
    const auto [ke, ne] = split_key(e[i]);
    const auto [ka, na] = split_key(a[i]);
    double x, y;
    if (ke != ka || !is_number(ne, &x) || !is_number(na, &y)) return false;
    if (!(ke.empty() || ke == "d=" || ke == "a=")) return false;  // counts, flags: exact
    ++c.numbers;
    if (same_bits(x, y)) {
      ++c.bitwise;
      continue;
    }
    if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) return false;
    double scale = std::max(std::fabs(x), std::fabs(y));
    double atol = tol.atol;
    if (ke == "d=" || ke == "a=") {
      // A digest "d=D a=A n=N": its n values, each within atol, move it by less than 2 n atol
      // (weights w_i < 2); d's scale is a.
      double ax = 0, n = 1;
      const size_t a_at = ke == "d=" ? i + 1 : i;
      if (ke == "d=" && i + 1 < e.size() && is_number(split_key(e[i + 1]).second, &ax)) {
        digest_scale = ax;
      }
      if (a_at + 1 < e.size() && split_key(e[a_at + 1]).first == "n=") {
        is_number(split_key(e[a_at + 1]).second, &n);
      }
      if (ke == "d=") scale = std::max(scale, digest_scale);
      atol = 2 * std::max(n, 1.0) * tol.atol;
    }
    const double err = std::fabs(x - y) / (atol + tol.rtol * scale);
    c.max_error = std::max(c.max_error, err);
    if (err > 1.0) return false;
  }
  stats.numbers += c.numbers;
  stats.bitwise += c.bitwise;
  stats.max_error = std::max(stats.max_error, c.max_error);
  return true;
}

}  // namespace ag::proptests
