#!/usr/bin/env bash
# One command on a fresh Debian machine: install dependencies, build in Release,
# then run the main job on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh release
echo "== submoe info"
build/submoe info
