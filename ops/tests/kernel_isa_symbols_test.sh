#!/usr/bin/env bash
# Each instruction set's copy of the CPU kernels must define no symbol that another copy, or the
# rest of the library, could also define: the linker keeps one definition of such a (weak) symbol
# for the whole program, and a copy built for AVX-512 standing in for everyone else's would crash
# an AVX2-only CPU. So every global symbol a copy defines must sit in its own namespaces
# (ag::ops::cpu_<isa>, Eigen_<isa>). See Note [Kernel instruction sets] in ops/cpu/isa.h.
#   kernel_isa_symbols_test.sh LIBRARY...   (the //engine:cpu_kernels_* outputs; archives checked)
set -euo pipefail

checked=0
status=0
for lib in "$@"; do
  case "$lib" in
    *.a | *.lo) ;;
    *) continue ;;
  esac
  name=$(basename "$lib")
  isa=${name#libcpu_kernels_}
  isa=${isa%%.*}
  # Global definitions only (nm's upper-case types, and u for unique globals); local ones (t, d,
  # b, r) cannot be shared.
  symbols=$(nm -C --defined-only "$lib" | awk '$2 ~ /^[A-Zu]$/ { $1 = ""; $2 = ""; print substr($0, 3) }')
  if ! grep -q "^ag::ops::cpu_${isa}::kernels()$" <<<"$symbols"; then
    echo "FAIL: $name does not define ag::ops::cpu_${isa}::kernels(); is it a kernels copy?"
    status=1
    continue
  fi
  # DW.ref.__gxx_personality_v0 is one pointer to the C++ runtime, the same in every object.
  stray=$(grep -v -e "^ag::ops::cpu_${isa}::" -e "Eigen_${isa}::" \
    -e "^DW\.ref\.__gxx_personality_v0$" <<<"$symbols" || true)
  if [[ -n "$stray" ]]; then
    echo "FAIL: $name ($isa) defines global symbols outside its namespaces:"
    echo "$stray" | head -n 40
    status=1
  else
    echo "ok: $name: $(wc -l <<<"$symbols") global symbols, all in ag::ops::cpu_${isa} or Eigen_${isa}"
  fi
  checked=$((checked + 1))
done
if [[ $checked -eq 0 ]]; then
  echo "FAIL: no kernel archive among the arguments: $*"
  exit 1
fi
exit $status
