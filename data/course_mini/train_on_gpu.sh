#!/usr/bin/env bash
# The one GPU run that made data/course_mini/model.safetensors: bash data/course_mini/train_on_gpu.sh
# (writes into $OUT: the dev-best fp16 weights, config.json, train_log.jsonl, run.json, stdout.log).
cd "$(dirname "$0")/../.." || exit 3  # the repository root (or its carried copy)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 COURSE_CACHE=/tmp/course-cache HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=true
nvidia-smi -L; nproc
python3 -c "import torch, transformers, tokenizers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)"
set -o pipefail
python3 -m helpers.mini.compute train --out "$OUT" --state /tmp/state --device cuda --minutes 6.2 \
    --max-seconds 385 --workers 16 --pool 1048576 --dev-pairs 4096 --eval-seconds 20 --log-every 100 \
    --save-seconds 100000 2>&1 | tee "$OUT/stdout.log"
rc=$?
left=$((450 - SECONDS))
if [ $rc -ne 0 ] && [ $left -gt 120 ]; then
    echo "first try failed (rc $rc) with ${left}s left: retry with eager attention and batch 512" | tee -a "$OUT/stdout.log"
    [ -f "$OUT/train_log.jsonl" ] && mv "$OUT/train_log.jsonl" "$OUT/failed_log.jsonl"
    rm -f "$OUT/model.safetensors" "$OUT/config.json" "$OUT/run.json"
    mins=$(python3 -c "print(round(($left - 75) / 60, 2))")
    COURSE_MINI_TRAIN_ATTN=eager python3 -m helpers.mini.compute train --out "$OUT" --state /tmp/state2 \
        --device cuda --minutes "$mins" --max-seconds $((left - 70)) --workers 16 --pool 524288 --dev-pairs 4096 \
        --batch-size 512 --eval-seconds 20 --log-every 100 --save-seconds 100000 2>&1 | tee -a "$OUT/stdout.log"
    rc=$?
fi
ls -la "$OUT"
exit $rc
