#!/usr/bin/env bash
# Create (or update) the Python environment for submoe's tools/ scripts at ./.venv-tools
# (repository root) from tools/requirements.txt. Idempotent: a second run only checks.
#
#   tools/setup_python_env.sh            # create/update, then self-check (import torch etc.)
#   tools/setup_python_env.sh --force    # reinstall every pinned package
#   tools/setup_python_env.sh --with-v5  # also .venv-tools/v5 (transformers 5.x, optional;
#                                        # used by make_hf_fixtures.py --v5-python)
#   PYTHON=python3.11 tools/setup_python_env.sh
#
# Then run tools with .venv-tools/bin/python tools/<script>.py --help
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-tools"
REQ="$ROOT/tools/requirements.txt"
REQ_FALLBACK="$ROOT/tools/requirements-cuda-fallback.txt"
PYTHON="${PYTHON:-python3}"
REQ_V5="$ROOT/tools/requirements-v5.txt"
FORCE=0
WITH_V5=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --with-v5) WITH_V5=1 ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "error: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found" >&2; exit 1; }
"$PYTHON" - <<'EOF' || { echo "error: Python >= 3.10 required" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)
EOF

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv at $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"

STAMP="$VENV/.requirements.sha256"
WANT="$(cat "$REQ" "$REQ_FALLBACK" | sha256sum | cut -d' ' -f1)"
if [[ $FORCE == 1 || ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  echo "installing $REQ (no dependency resolution: everything is pinned)"
  pip_args=(install --no-deps --disable-pip-version-check -q -r "$REQ")
  [[ $FORCE == 1 ]] && pip_args+=(--force-reinstall)
  "$PY" -m pip "${pip_args[@]}"
  rm -f "$STAMP"
fi

check() {
  "$PY" - <<'EOF'
import torch, transformers, tokenizers, safetensors, numpy
torch.set_num_threads(1)
from transformers import (MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM,
                          OlmoeForCausalLM)
x = torch.ones(2, 2) @ torch.ones(2, 2)
assert float(x.sum()) == 8.0
print(f"ok: torch {torch.__version__}, transformers {transformers.__version__}, "
      f"tokenizers {tokenizers.__version__}, safetensors {safetensors.__version__}, "
      f"numpy {numpy.__version__}")
EOF
}

if ! check 2>"$VENV/.check.err"; then
  if grep -q -E "lib(cudart|cublas|cudnn|cufft|cusolver|cusparse|nvrtc|nvJitLink|cupti|curand)" \
      "$VENV/.check.err"; then
    echo "torch cannot find the CUDA 13 runtime libraries on this machine;"
    echo "installing the CUDA wheels from $REQ_FALLBACK (several GB)"
    "$PY" -m pip install --no-deps --disable-pip-version-check -q -r "$REQ_FALLBACK"
    check
  else
    cat "$VENV/.check.err" >&2
    echo "error: the tools environment does not import (see above)" >&2
    exit 1
  fi
fi
echo "$WANT" > "$STAMP"
echo "tools environment ready: $VENV"

if [[ $WITH_V5 == 1 ]]; then
  V5="$VENV/v5"
  [[ -x "$V5/bin/python" ]] || { echo "creating venv at $V5"; "$PYTHON" -m venv "$V5"; }
  SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  SITE5="$("$V5/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  # torch (and anything not pinned in requirements-v5.txt) comes from the main tools venv
  echo "$SITE" > "$SITE5/zz_submoe_tools.pth"
  STAMP5="$V5/.requirements.sha256"
  WANT5="$(sha256sum "$REQ_V5" | cut -d' ' -f1)"
  if [[ $FORCE == 1 || ! -f "$STAMP5" || "$(cat "$STAMP5")" != "$WANT5" ]]; then
    echo "installing $REQ_V5 into $V5"
    "$V5/bin/python" -m pip install --no-deps --disable-pip-version-check -q -r "$REQ_V5"
  fi
  "$V5/bin/python" -c 'import torch, transformers; assert transformers.__version__.startswith("5."); print("ok: v5 env, transformers", transformers.__version__, "torch", torch.__version__)'
  echo "$WANT5" > "$STAMP5"
fi
