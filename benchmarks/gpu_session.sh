#!/usr/bin/env bash
# The GPU checks of docs/performance.md in one go, for a machine lent for a few minutes:
# the CUDA tests, bench_peer's G0 rows (best of three), gpu_rows, a batch taken apart with
# a torch profile, and the host synchronisations of a trace batch. Run from the checkout's
# root on the GPU machine (its python3 holding PyTorch with CUDA):
#
#     OUT=/some/folder bash benchmarks/gpu_session.sh
#
# Each step has its own time limit and writes its output to $OUT (default ./gpu-out); a
# step that fails or runs out of time does not stop the others. About 6 minutes on an H200.
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}

step() {  # step NAME SECONDS COMMAND...: the command's output in $OUT/NAME.txt
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    echo "$name: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/steps.txt"
}

{ nvidia-smi -L; $PY -c "import torch, numpy, fastdcyk; print(torch.__version__, numpy.__version__, fastdcyk.__version__)"; } >"$OUT/machine.txt" 2>&1

step tests 150 $PY -m pytest -q -p no:cacheprovider tests/engine/test_torch.py \
    tests/engine/test_width_order.py \
    -k "cuda or keep_their or reads_nothing or moved_to_the_host or width_step"

for d in 1024 2048; do
    step "peer_$d" 120 $PY benchmarks/bench_peer.py --device cuda --sizes 0 --builtin G0 \
        --variant trace --dim "$d" --lengths 5 10 20 --batches 32 --systems fastdcyk-torch \
        --cap 30 --rounds 3
done

step rows 150 $PY benchmarks/gpu_rows.py --device cuda --dims 1024 2048 6000 --count 16 --many 64

step parts 90 $PY benchmarks/gpu_batch_parts.py --device cuda --dims 1024 --lengths 5 10 20 \
    --json "$OUT/parts.json" --profile

# every synchronisation of a G0 batch's parse on the device, as torch reports it
step syncs 60 $PY - <<'EOF'
import sys, warnings
import torch
sys.path.insert(0, "benchmarks")
import fastdcyk as fd
from bench_peer import sentences

g = fd.Grammar.builtin("G0")
cb = fd.engine.default_codebook(g, 1024, 0, unitary=True)
sents = sentences(g, 5, 32)
kw = {"backend": "torch", "device": "cuda", "batch_size": 32, "variant": "trace"}
fd.dcyk_batch(g, sents, cb, **kw)
torch.cuda.synchronize()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.cuda.set_sync_debug_mode("warn")
    fd.dcyk_batch(g, sents, cb, **kw)
    torch.cuda.set_sync_debug_mode("default")
print(f"{len(caught)} synchronisations in one dcyk_batch call")
for w in caught:
    print(w.filename, w.lineno, str(w.message)[:120])
EOF
