#pragma once

// Forward-mode dual numbers, nestable: Dual<double> carries one derivative, Dual<Dual<double>>
// a second one, and so on. The API model computes every expected gradient with them, directly
// from the chain rule of each op's definition, so the expectations share no code and no
// algorithm with the engine's reverse mode (Note [Expected gradients] in program.h).

#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace ag::proptests {

template <typename T>
struct Dual {
  T v{};  // value
  T d{};  // derivative along the seeded direction
  Dual() = default;
  Dual(double x) : v(x), d(0.0) {}  // NOLINT: constants lift implicitly
  Dual(T value, T derivative) : v(value), d(derivative) {}
};

// How many Dual levels a scalar type nests (double: 0).
template <typename T>
struct DualDepth {
  static constexpr int value = 0;
};
template <typename T>
struct DualDepth<Dual<T>> {
  static constexpr int value = 1 + DualDepth<T>::value;
};

inline double primal(double x) { return x; }
template <typename T>
double primal(const Dual<T>& x) {
  return primal(x.v);
}

template <typename T>
Dual<T> operator+(const Dual<T>& a, const Dual<T>& b) {
  return {a.v + b.v, a.d + b.d};
}
template <typename T>
Dual<T> operator-(const Dual<T>& a, const Dual<T>& b) {
  return {a.v - b.v, a.d - b.d};
}
template <typename T>
Dual<T> operator-(const Dual<T>& a) {
  return {-a.v, -a.d};
}
template <typename T>
Dual<T> operator*(const Dual<T>& a, const Dual<T>& b) {
  return {a.v * b.v, a.d * b.v + a.v * b.d};
}
template <typename T>
Dual<T> operator/(const Dual<T>& a, const Dual<T>& b) {
  return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)};
}
template <typename T>
Dual<T>& operator+=(Dual<T>& a, const Dual<T>& b) {
  return a = a + b;
}

// Elementary functions on plain doubles and on duals, by the chain rule.
inline double exp_of(double x) { return std::exp(x); }
inline double log_of(double x) { return std::log(x); }
inline double tanh_of(double x) { return std::tanh(x); }
inline double pow_of(double x, double e) { return std::pow(x, e); }

template <typename T>
Dual<T> exp_of(const Dual<T>& x) {
  T e = exp_of(x.v);
  return {e, e * x.d};
}
template <typename T>
Dual<T> log_of(const Dual<T>& x) {
  return {log_of(x.v), x.d / x.v};
}
template <typename T>
Dual<T> tanh_of(const Dual<T>& x) {
  T t = tanh_of(x.v);
  return {t, (T(1.0) - t * t) * x.d};
}
// d/dx x^e = e x^(e-1); PyTorch defines the derivative of x^0 as 0 everywhere.
template <typename T>
Dual<T> pow_of(const Dual<T>& x, double e) {
  if (e == 0.0) return {T(1.0), T(0.0)};
  return {pow_of(x.v, e), T(e) * pow_of(x.v, e - 1.0) * x.d};
}

template <typename T>
T sigmoid_of(const T& x) {
  return T(1.0) / (T(1.0) + exp_of(-x));
}
// relu's derivative is 1 where the input is positive and 0 elsewhere (0 at 0, like PyTorch's
// threshold_backward on the result).
template <typename T>
T relu_of(const T& x) {
  return primal(x) > 0 ? x : T(0.0) * x;
}

// A function at any Dual level from its value and derivatives at a point: d[0] is the function,
// d[1] its derivative, d[2] its second derivative (an elementwise unary op's row, Note [Op
// traits], proptests/op_traits.h). Level k of a Dual needs derivative k, so rows with two
// derivatives serve Dual<Dual<double>>, the deepest the model evaluates (ApiProgram::kMaxDepth).
template <int K, typename Fn, size_t N>
double taylor(const Fn (&d)[N], double x) {
  static_assert(K < static_cast<int>(N));
  return d[K](x);
}
template <int K, typename Fn, size_t N, typename T>
Dual<T> taylor(const Fn (&d)[N], const Dual<T>& x) {
  if constexpr (K + 1 < static_cast<int>(N)) {
    return {taylor<K>(d, x.v), taylor<K + 1>(d, x.v) * x.d};
  } else {
    throw std::logic_error("taylor: a Dual level deeper than the row's derivatives");
  }
}

// Note [Derivatives read from the result]
// exp, tanh, sigmoid and relu compute their gradient from their saved *result* y (dy = h(y) dx,
// e.g. h(y) = y for exp), as PyTorch's formulas do. Mathematically the same, except when y's
// node itself is perturbed by `delta` (a gradient with respect to that interior tensor, of a
// create_graph gradient that read y): then the formula reads y + delta. So these ops are
// evaluated as y = f(x) + delta with derivative h(y + delta) dx, at every Dual level.
template <typename F, typename H>
double from_result(double x, double delta, F f, H) {
  return f(x) + delta;
}
template <typename T, typename F, typename H>
Dual<T> from_result(const Dual<T>& x, const Dual<T>& delta, F f, H h) {
  const T y = from_result(x.v, delta.v, f, h);
  return {y, h(y) * x.d + delta.d};
}

}  // namespace ag::proptests
