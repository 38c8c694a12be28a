#!/usr/bin/env bash
# Installs (only) the missing Debian packages this project needs. Idempotent.
#   tools/setup.sh           build/test dependencies
#   tools/setup.sh --peers   additionally install PyTorch and JAX into the peers' venv (paper/peers/
#                            README.md); never fatal
#   tools/setup.sh --remote  additionally PostgreSQL, for tools/remote_campaign.sh's loopback cluster
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
    --remote) PACKAGES+=(postgresql) ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg (expected --peers or --remote)" >&2; exit 2 ;;
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

# Optional peers: PyTorch and JAX (CPU), newest from PyPI, in a venv under a cache folder that
# paper/reproduce finds by the same rule (paper/peers/README.md). Failures are reported, never fatal.
if [[ $peers -eq 1 ]]; then
  "$(dirname "${BASH_SOURCE[0]}")/install_peers.sh" || echo "setup.sh: peers: WARNING: peer install incomplete (see above);" \
    "reproduce runs without the missing peers" >&2
fi
exit 0
