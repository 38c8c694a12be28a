#!/usr/bin/env bash
# Builds the CUDA tests and the hessian benchmark as standalone executables (bazel -c opt,
# statically linked, stripped) and copies them into gpu_bin/ with a run_all.sh, for a GPU
# machine that has no Bazel. See cuda/README.md.
#   tools/build_gpu_bundle.sh [extra bazel build flags...]
# Environment: BAZEL (default: bazel).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bazel=${BAZEL:-bazel}
out=gpu_bin
tests=(runtime_test plan_test allocator_test kernels_test matmul_test autograd_test dropout2d_memory_test
       zero_product_test graph_test)

targets=(//paper:hessian_bench)
for t in "${tests[@]}"; do targets+=("//cuda/tests:$t"); done

# The CPU kernels pick their instruction set at run time (ops/cpu/isa.h); --define=ag_isa=avx2
# leaves the AVX-512 copy out of these binaries all the same. The binaries look for oneTBB's
# shared library (the CPU kernels' parallel runtime; Debian ships no static one) beside themselves.
link_flags=(--define=ag_isa=avx2 --linkopt='-Wl,-rpath,$ORIGIN')
"$bazel" build -c opt "${link_flags[@]}" --strip=always "$@" "${targets[@]}"

# Stub binaries would only report "built without CUDA": refuse to bundle them.
defs="$("$bazel" info output_base)/external/cuda_config/defs.bzl"
if ! grep -q "^CUDA_AVAILABLE = True" "$defs"; then
  echo "build_gpu_bundle.sh: this build has no CUDA ($(grep CUDA_REASON "$defs"))" >&2
  exit 1
fi

bin="$("$bazel" info -c opt "${link_flags[@]}" bazel-bin)"
rm -rf "$out"
mkdir -p "$out"
cp "$bin/paper/hessian_bench" "$out/"
for t in "${tests[@]}"; do cp "$bin/cuda/tests/$t" "$out/"; done
tbb=$(ldd "$out/hessian_bench" | awk '$1 ~ /^libtbb\.so/ { print $3 }')
if [[ -z "$tbb" || ! -f "$tbb" ]]; then
  echo "build_gpu_bundle.sh: cannot find the oneTBB library hessian_bench links" >&2
  exit 1
fi
cp "$tbb" "$out/"
chmod u+w "$out"/*
# The PyTorch peer of the benchmark, run beside ours where the GPU machine has torch.
mkdir -p "$out/peers"
cp paper/peers/common.py paper/peers/hessian.py "$out/peers/"
cp tools/ncu_summary.py "$out/"

# Self-contained: only the C/C++ runtime may be loaded dynamically, and oneTBB from gpu_bin/ itself
# (the driver's libcuda and cuBLAS are opened at run time with dlopen).
allowed='linux-vdso|libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libdl\.so|libpthread|librt\.so'
here=$(cd "$out" && pwd)
for f in "$out"/*_test "$out"/hessian_bench; do
  extra=$(ldd "$f" | grep -vE "$allowed" | grep -vE "^\s*libtbb\.so\.[0-9]+ => $here/" || true)
  if [[ -n "$extra" ]]; then
    echo "build_gpu_bundle.sh: $f needs more shared libraries than libc/libstdc++:" >&2
    echo "$extra" >&2
    exit 1
  fi
done

cat > "$out/run_all.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the CUDA tests, then the hessian benchmark (ReLU, the published workload, and Tanh; eager
# and captured), then its PyTorch peers on the same GPU when python3 has a CUDA-enabled torch
# (eager autograd and torch.compile; same batch, same protocol), so that ours and PyTorch's times
# come from one run.
# Arguments go to both benchmark runs, e.g. ./run_all.sh --reps 50
# Exit status: 0 all passed, 1 a failure, 2 no usable GPU (everything that needs one skipped).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# cuBLAS is opened at run time (libcublas.so.13). Where the loader cannot find it (a pip
# nvidia-cublas wheel, say), point AG_CUBLAS_PATH at it; without it the builtin GEMM runs.
if [[ -z "${AG_CUBLAS_PATH:-}" ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13 '; then
  lib=$(find /usr/local /opt /usr/lib /root -name 'libcublas.so.13' 2>/dev/null | head -n 1)
  if [[ -n "$lib" ]]; then export AG_CUBLAS_PATH="$lib"; fi
fi
echo "AG_CUBLAS_PATH=${AG_CUBLAS_PATH:-<loader search>}"

# The benchmark figures, as paper/results/cuda/*.tsv rows (copy the file there to keep them).
tsv=${AG_TSV:-hessian_results.tsv}
echo "figures: $tsv"

status=0
for t in ./*_test; do
  echo "=== $t"
  timeout 600 "$t" || status=1
done
echo "=== hessian_bench (ReLU)"
log=$(mktemp)
./hessian_bench --tsv "$tsv" "$@" | tee "$log" || status=1
echo "=== hessian_bench (Tanh)"
./hessian_bench --tanh --tsv "$tsv" "$@" || status=1
echo "=== PyTorch peer (peers/hessian.py --device cuda)"
python3 peers/hessian.py --device cuda --compile --tsv "$tsv" ||
  echo "run_all.sh: no PyTorch peer on this machine"
if grep -q "skipped:" "$log"; then
  echo "run_all.sh: NO USABLE GPU: the GPU tests and the benchmark were skipped"
  status=2
elif [[ $status -eq 0 ]]; then
  echo "run_all.sh: all passed"
else
  echo "run_all.sh: FAILED"
fi
rm -f "$log"
exit $status
RUN
chmod +x "$out/run_all.sh"

echo "gpu_bin/ is ready:"
ls -l "$out"
