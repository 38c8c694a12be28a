#include <cuda_runtime.h>
#include <cstdio>
int main() {
  int n = -1;
  cudaError_t e = cudaGetDeviceCount(&n);
  std::printf("cudaGetDeviceCount: %s, n=%d\n", cudaGetErrorString(e), n);
  return 0;
}
