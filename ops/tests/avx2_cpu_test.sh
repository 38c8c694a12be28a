#!/usr/bin/env bash
# Runs the CPU kernel test (cpu_isa_test) on emulated CPUs (QEMU's user mode, Debian's qemu-user): a Haswell
# (AVX2, no AVX-512), where the ops must pick the AVX2 kernels, and a plain x86-64 (qemu64: SSE2,
# no AVX), where they must pick the baseline ones. Any AVX-512 instruction executed there, in the
# kernels or anywhere else in the binary, is an illegal instruction. See Note [Kernel instruction
# sets] in ops/cpu/isa.h. Then the AVX2-forced kernel test on the plain x86-64, which must skip
# its tests cleanly (forced_isa_environment.cc), not fail or crash.
#   avx2_cpu_test.sh CPU_ISA_TEST FORCED_AVX2_TEST
set -euo pipefail

binary=$1
forced_avx2=$2
# Sanitizer builds are about memory and threads, not instruction sets, and too slow to emulate.
if ldd "$binary" | grep -qE 'lib(t|a)san\.so'; then
  echo "skipped: a sanitizer build (the default build runs this test)"
  exit 0
fi
if ! command -v qemu-x86_64 >/dev/null; then
  echo "FAIL: qemu-x86_64 not found (tools/setup.sh installs qemu-user)"
  exit 1
fi
status=0
for cpu_isa in Haswell:avx2 qemu64:baseline; do
  cpu=${cpu_isa%%:*}
  isa=${cpu_isa#*:}
  echo "=== emulated CPU $cpu: expecting the $isa kernels"
  # TCG warns about host-only CPUID bits it cannot emulate; they do not matter here.
  if AG_EXPECT_CPU_ISA=$isa qemu-x86_64 -cpu "$cpu" "$binary" 2> >(grep -v "TCG doesn't support" >&2); then
    echo "ok: $cpu"
  else
    echo "FAIL: the tests failed (or crashed) on an emulated $cpu"
    status=1
  fi
done
echo "=== emulated CPU qemu64 with AG_CPU_ISA=avx2: expecting every test skipped"
if out=$(AG_CPU_ISA=avx2 qemu-x86_64 -cpu qemu64 "$forced_avx2" 2>&1) &&
  grep -q "this CPU cannot run avx2 instructions" <<<"$out" && ! grep -q "^\[       OK \]" <<<"$out"; then
  echo "ok: skipped"
else
  echo "FAIL: the AVX2-forced tests did not skip cleanly on a CPU without AVX2:"
  echo "$out" | grep -v "TCG doesn't support" | tail -20
  status=1
fi
exit $status
