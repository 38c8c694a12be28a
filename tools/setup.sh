#!/usr/bin/env bash
# Installs (only) the missing Debian packages this project needs. Idempotent.
#   tools/setup.sh           build/test dependencies
#   tools/setup.sh --peers   additionally try PyTorch (CPU) for peer comparisons; never fatal
set -euo pipefail

PACKAGES=(
  bazel-bootstrap   # Bazel 4.2.3, used fully offline (see WORKSPACE)
  g++
  libeigen3-dev
  librapidcheck-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libtbb-dev          # oneTBB: the CPU kernels' parallel runtime
  clang-format
  valgrind
  qemu-user           # emulated AVX2-only / plain x86-64 CPUs for //ops/tests:avx2_cpu_test
  python3-matplotlib  # plots for paper/
)

peers=0
for arg in "$@"; do
  case "$arg" in
    --peers) peers=1 ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg (expected --peers)" >&2; exit 2 ;;
  esac
done

installed() {  # true when Debian package $1 is installed
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

if ! command -v dpkg-query >/dev/null; then
  echo "setup.sh: dpkg-query not found; this script supports Debian/Ubuntu only" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

apt_updated=0
apt_install() {  # apt_install PKG...: apt-get update (once) and install
  local sudo=()
  if [[ $EUID -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "setup.sh: need root (or passwordless sudo) to install: $*" >&2
      return 1
    fi
  fi
  if [[ $apt_updated -eq 0 ]]; then
    "${sudo[@]}" apt-get update -qq || { echo "setup.sh: apt-get update failed" >&2; return 1; }
    apt_updated=1
  fi
  local log
  log=$(mktemp)
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup.sh: apt-get install failed" >&2
    return 1
  fi
  rm -f "$log"
}

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup.sh: all ${#PACKAGES[@]} packages present"
else
  echo "setup.sh: installing: ${missing[*]}"
  if ! apt_install "${missing[@]}"; then
    echo "setup.sh: FAILED to install: ${missing[*]}" >&2
    exit 1
  fi
  for p in "${missing[@]}"; do
    installed "$p" || { echo "setup.sh: package still missing after install: $p" >&2; exit 1; }
  done
  echo "setup.sh: installed ${#missing[@]} package(s); all ${#PACKAGES[@]} present"
fi

# Debian's matplotlib lives in /usr/bin/python3's dist-packages; a pyenv/venv python3
# earlier on PATH does not see it.
if ! python3 -c 'import matplotlib' 2>/dev/null && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "setup.sh: note: matplotlib is importable from /usr/bin/python3, not from $(command -v python3); use /usr/bin/python3 for plots"
fi

# Optional peers (PyTorch CPU). Failures are reported, never fatal.
torch_version() {  # torch_version PYTHON: prints torch's version, fails when not importable
  "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null
}
if [[ $peers -eq 1 ]]; then
  py=$(command -v python3)
  if v=$(torch_version "$py"); then
    echo "setup.sh: peers: torch $v already importable from $py"
  elif v=$(torch_version /usr/bin/python3); then
    echo "setup.sh: peers: torch $v already importable from /usr/bin/python3"
  elif "$py" -m pip install -q --retries 1 --timeout 30 torch >/dev/null 2>&1 \
      && v=$(torch_version "$py"); then
    echo "setup.sh: peers: pip installed torch $v (PyPI wheel) for $py"
  elif apt_install python3-torch libopenblas0-pthread 2>/dev/null &&
      v=$(torch_version /usr/bin/python3); then
    echo "setup.sh: peers: pip failed; installed Debian python3-torch $v with OpenBLAS for /usr/bin/python3"
  else
    echo "setup.sh: peers: WARNING: could not install torch (pip and Debian python3-torch both failed);" \
      "peer comparisons unavailable" >&2
  fi
fi
exit 0
