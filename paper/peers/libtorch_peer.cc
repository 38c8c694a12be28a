// libtorch's C++ API, the peer of the engine-overhead rows of paper/reproduce (protocol:
// paper/peers/common.py). Built against the headers and libraries inside the PyPI torch wheel by
// paper/peers/build_libtorch_peer.sh, outside Bazel (the wheel is not part of the offline build).
//
// Tasks (seconds per call, forward included, as ours):
//   tiny_graph ITERS            torch::autograd::grad({a * b}, {a, b}, {ones}) on 2x2 float32
//   scalar_chain LENGTH ITERS [HOOKED]
//                               grad({y.sum()}, {x}), y = x * 1.0001 LENGTH times, x of 4 elements;
//                               HOOKED=1: an identity hook on every intermediate y (Note
//                               [libtorch's cheapest identity hook])
//
//   libtorch_peer --threads N
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/version.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double seconds_per_call(int iters, const std::function<void()>& call) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

double tiny_graph(int iters) {
  const at::Tensor a = torch::rand({2, 2}, at::TensorOptions().requires_grad(true));
  const at::Tensor b = torch::rand({2, 2}, at::TensorOptions().requires_grad(true));
  const at::Tensor gradient = torch::ones({2, 2});
  return seconds_per_call(iters, [&] { torch::autograd::grad({a * b}, {a, b}, {gradient}); });
}

// Note [libtorch's cheapest identity hook]
// TensorBase::register_hook takes a function of the gradient returning a Tensor or void; a void
// one is wrapped to return an undefined tensor. CppFunctionTensorPreHook (torch/csrc/autograd/
// cpp_hook.cpp) keeps the gradient as it is when a hook returns an undefined tensor and skips
// check_single_result, the shape, dtype and device checks it runs on a returned gradient. So a
// void lambda, which neither copies the gradient's handle nor has it checked, is libtorch's
// cheapest identity, and the one ours is compared with (ours returns an undefined tensor too).
double scalar_chain(int length, int iters, bool hooked) {
  const at::Tensor x = torch::rand({4}, at::TensorOptions().requires_grad(true));
  return seconds_per_call(iters, [&] {
    at::Tensor y = x;
    for (int i = 0; i < length; ++i) {
      y = y * 1.0001;
      if (hooked) y.register_hook([](const at::Tensor&) {});
    }
    torch::autograd::grad({y.sum()}, {x});
  });
}

// "MKL 2024.2" / "OpenBLAS" / ..., from libtorch's own build configuration.
std::string blas_name() {
  const std::string config = at::show_config();
  const size_t at = config.find("BLAS_INFO=");
  std::string info = at == std::string::npos ? "" : config.substr(at + 10);
  info = info.substr(0, info.find_first_of(", \n"));
  if (info == "mkl") {
    const std::string marker = "Math Kernel Library Version ";
    const size_t v = config.find(marker);
    return v == std::string::npos
               ? "MKL"
               : "MKL " + config.substr(v + marker.size(),
                                        config.find_first_not_of("0123456789.", v + marker.size()) -
                                            v - marker.size());
  }
  if (info == "open") return "OpenBLAS";
  return info.empty() ? "no BLAS" : info;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  std::string field;
  while (std::getline(in, field, '\t')) fields.push_back(field);
  return fields;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--threads") threads = std::atoi(argv[i + 1]);
  }
  at::set_num_threads(threads);
  std::cout << "peer\tlibtorch " << TORCH_VERSION << " (C++ API, PyPI wheel), " << blas_name()
            << ", " << at::get_num_threads() << " intra-op threads" << std::endl;
  std::cout << "ready" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> f = split_tabs(line);
    if (f.empty() || f[0] == "quit") break;
    try {
      double value;
      if (f[0] == "tiny_graph" && f.size() == 2) {
        value = tiny_graph(std::stoi(f[1]));
      } else if (f[0] == "scalar_chain" && (f.size() == 3 || f.size() == 4)) {
        value = scalar_chain(std::stoi(f[1]), std::stoi(f[2]), f.size() == 4 && f[3] == "1");
      } else {
        throw std::runtime_error("unknown task or arguments: " + line);
      }
      std::printf("ok\t%.9g\n", value);
    } catch (const std::exception& e) {
      std::string message = e.what();
      for (char& c : message) c = (c == '\n' || c == '\t') ? ' ' : c;
      std::printf("error\t%s\n", message.substr(0, 500).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
