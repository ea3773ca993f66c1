#!/usr/bin/env bash
# Installs the Debian packages submoe needs (build tools and libraries).
# Idempotent; uses sudo when not root.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev   # tests, micro-benchmarks
  libcli11-dev nlohmann-json3-dev              # command line, JSON
  libopenblas-dev liblapack-dev                # BLAS/LAPACK for Hessians and Cholesky
  liburing-dev                                 # io_uring for the expert store
  libxxhash-dev                                # XXH3 checksums of artifacts
  libcpp-httplib-dev curl                      # HTTP server of `submoe serve`; curl for its CLI tests
  chromium chromium-driver python3-selenium    # the chat page's test in a real (headless) browser
  clang libclang-rt-dev                        # libFuzzer target and sanitizer runtime
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all Debian packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install_deps: installing ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
