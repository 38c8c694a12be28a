#!/usr/bin/env bash
# Installs the peers that paper/reproduce measures beside our engine into one venv:
#   - PyTorch, newest from PyPI. Its wheel also carries libtorch's C++ headers and libraries
#     (torch/include, torch/lib), which the C++ peer is built against (paper/peers/
#     build_libtorch_peer.sh, run here once so that reproduce finds it built);
#   - JAX (CPU), newest from PyPI.
# The venv lives in the peers' folder: $AG_PEERS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/
# autograd-peers (paper/peers/README.md; reproduce looks there by the same rule). Each package gets
# three tries with long timeouts (torch with its CUDA libraries is about 4 GB from PyPI; about a
# minute here); the log is install.log in that folder. Exits 1 when a peer is missing in the end.
# `tools/setup.sh --peers` runs this and never fails because of it.
set -uo pipefail

dir="${AG_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autograd-peers}"
venv="$dir/venv"
log="$dir/install.log"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$dir" || exit 1
echo "install_peers: venv $venv (log: $log)"

if [[ ! -x "$venv/bin/python" ]]; then
  base="$(command -v python3 || echo /usr/bin/python3)"
  if ! "$base" -m venv "$venv" >>"$log" 2>&1; then
    echo "install_peers: could not create a venv with $base (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
fi

pip_install() {  # pip_install PACKAGE...: three tries, long timeouts, newest versions
  local attempt
  for attempt in 1 2 3; do
    if "$venv/bin/python" -m pip install --upgrade --timeout 180 --retries 10 \
        --disable-pip-version-check "$@" >>"$log" 2>&1; then
      return 0
    fi
    echo "install_peers: pip install $* failed (try $attempt of 3)" >&2
    sleep $((attempt * 5))
  done
  return 1
}

version_of() {  # version_of MODULE: prints MODULE.__version__ as the venv's python imports it
  "$venv/bin/python" -c "import $1; print($1.__version__)" 2>/dev/null
}

status=0
start=$SECONDS
if pip_install numpy torch && v=$(version_of torch); then
  echo "install_peers: torch $v ($((SECONDS - start)) s)"
else
  echo "install_peers: torch NOT installed (see $log)" >&2
  status=1
fi
start=$SECONDS
if pip_install "jax[cpu]" && v=$(version_of jax); then
  echo "install_peers: jax $v ($((SECONDS - start)) s)"
else
  echo "install_peers: jax NOT installed (see $log)" >&2
  status=1
fi
if [[ $status -eq 0 || -n "$(version_of torch)" ]]; then
  if binary=$("$repo/paper/peers/build_libtorch_peer.sh" "$venv/bin/python"); then
    echo "install_peers: libtorch C++ peer built: $binary"
  else
    echo "install_peers: libtorch C++ peer NOT built (see above)" >&2
    status=1
  fi
fi
exit $status
