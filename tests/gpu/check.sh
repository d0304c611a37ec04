#!/usr/bin/env bash
# The GPU check, for a machine with a CUDA GPU (under 8 minutes): `bash tests/gpu/check.sh`.
#
#   1. the CUDA test subset (tests/gpu/test_cuda.py and tests/test_precision.py): explicit == fused attention on
#      CUDA in float32 and under bfloat16 autocast, KV cache == recompute, a checkpoint round trip that resumes
#      exactly, the non-finite guard, out-of-memory advice, bf16 by default;
#   2. python -m tinygpt.bench.gpu: the gpu preset (nanoGPT's baby GPT) with live capture vs the nanoGPT-style
#      yardstick on the same GPU, and 1 / 4 / 16 concurrent learner runs on the one GPU.
#
# Results (JSON, test log, nvidia-smi) go to $OUT, or test-output/gpu. Python: $PY, else .venv/bin/python if it
# has a CUDA torch, else python3 (whose torch must be a CUDA build; requirements.txt is installed around it).
# The corpus: $TINYGPT_SHAKESPEARE, else ../shared/data/tinyshakespeare.txt or shared/data/tinyshakespeare.txt
# (a GPU machine without internet cannot download it).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-test-output/gpu}"
mkdir -p "$OUT"

if [ -z "${PY:-}" ]; then
    PY=python3
    if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
        PY=.venv/bin/python
    fi
fi
"$PY" -c "import streamlit, safetensors, pytest" 2>/dev/null || "$PY" -m pip install -q -r requirements.txt pytest
for candidate in "${TINYGPT_SHAKESPEARE:-}" ../shared/data/tinyshakespeare.txt shared/data/tinyshakespeare.txt; do
    if [ -n "$candidate" ] && [ -f "$candidate" ]; then
        export TINYGPT_SHAKESPEARE="$(realpath "$candidate")"
        break
    fi
done

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
"$PY" -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())" | tee "$OUT/torch.txt"
timeout 150 "$PY" -m pytest -q -p no:cacheprovider tests/gpu tests/test_precision.py -rs 2>&1 | tee "$OUT/cuda-tests.txt"
tests_rc=${PIPESTATUS[0]}
timeout 330 "$PY" -m tinygpt.bench.gpu --out "$OUT" --seconds 90 2>&1 | tee "$OUT/bench.txt"
bench_rc=${PIPESTATUS[0]}
echo "cuda tests rc=$tests_rc, bench rc=$bench_rc" | tee "$OUT/summary.txt"
[ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ]
