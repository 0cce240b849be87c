#!/usr/bin/env bash
# The GPU path's device check, one call on a lent GPU (at most 9 minutes of its 15; docs/performance.md, "GPU benchmark").
#
#   bash benchmarks/gpu_check.sh prepare   # here, once per session: the two reference packages the GPU machine lacks,
#                                          # as wheels in .whl/ (ignored by git), for its Python 3.12
#   bash benchmarks/gpu_check.sh           # there, through the device tool: run(command="bash benchmarks/gpu_check.sh",
#                                          # carry=[".whl"], timeout_s=600)
#   OUT=/tmp/x bash benchmarks/gpu_check.sh dry   # here, on the CPU: every step on a tiny case, saying what it skipped
#                                                 # (the test suite runs it, so a lent GPU never meets a broken script)
#   bash benchmarks/gpu_check.sh large     # there, a call of its own (about 7 minutes): every layer of a random
#                                          # Llama-3.2-1B shape in bf16 over 20,000 tokens (benchmarks/large_layers.py),
#                                          # then its estimate (benchmarks/layer_estimate.py)
#
# There it writes under $OUT: gpu.txt (the GPU, driver, versions), tests.log (the CUDA metric and device tests),
# metric-step-cuda.json and .log (benchmarks/metric_step_device.py: the step against one X·Xᵀ, strips against square
# blocks, kernel launches) and metrics-cuda.json and .log (benchmarks/metrics.py --device cuda against the reference
# on the machine's CPU); `large`: large-layers-cuda.json and .log (tokens/s, each layer's seconds, peak host and GPU
# memory) and layer-estimate-cuda.json and .log (`isoflow layers --estimate` of that run against it). Copy the JSONs to benchmarks/results/ and say in docs/performance.md what they show.
set -o pipefail
WHEELS=(IsoScore==2.0.1 scikit-dimension==0.5.0)

if [[ "${1:-}" == prepare ]]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
    exec python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform any -d .whl "${WHEELS[@]}"
fi

: "${OUT:?run on the device machine, where \$OUT is set (or set it to a folder for a dry run)}"
DEVICE=cuda TINY=() STEP_TIMEOUT=100 METRICS_TIMEOUT=330 TESTS=()
LARGE=(--shape llama-3.2-1b --dtype bfloat16 --tokens 20000 --sample-cap 5000)
if [[ "${1:-}" == dry ]]; then
    LARGE=(--shape tiny-llama --dtype bfloat16 --tokens 1000 --sample-cap 300)
    # the device tests' CPU cases are the suite's own: collected here (the selection is checked), not run twice
    DEVICE=cpu TINY=(--tiny) STEP_TIMEOUT=300 METRICS_TIMEOUT=300 TESTS=(--collect-only)
    echo "dry run on the CPU: skipped (GPU only): nvidia-smi, the CUDA parametrisations of the tests (collected, not" \
        "run); the benchmarks run on their tiny case with --device cpu" | tee "$OUT/skipped.txt"
fi
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
large() {
    timeout 420 python3 benchmarks/large_layers.py --device $DEVICE "${LARGE[@]}" --out "$OUT/large-layers-$DEVICE.json" \
        2>&1 | tail -5 | tee "$OUT/large-layers-$DEVICE.log"
    # `isoflow layers --estimate` of that run, on this machine's device (benchmarks/layer_estimate.py)
    timeout 150 python3 benchmarks/layer_estimate.py --check "$OUT/large-layers-$DEVICE.json" \
        --out "$OUT/layer-estimate-$DEVICE.json" 2>&1 | tail -2 | tee "$OUT/layer-estimate-$DEVICE.log"
}
if [[ "${1:-}" == large ]]; then
    large
    exit
fi
{
    [[ $DEVICE == cuda ]] && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, sklearn; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'sklearn', sklearn.__version__)"
} 2>&1 | tee "$OUT/gpu.txt"
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_silhouette.py tests/test_isotropy.py \
    tests/test_clusters.py tests/test_device_policy.py -k "cuda or device or gpu" "${TESTS[@]}" 2>&1 | tail -5 \
    | tee "$OUT/tests.log"
timeout $STEP_TIMEOUT python3 benchmarks/metric_step_device.py --device $DEVICE "${TINY[@]}" \
    --out "$OUT/metric-step-$DEVICE.json" 2>&1 | tee "$OUT/metric-step-$DEVICE.log"
timeout $METRICS_TIMEOUT python3 benchmarks/metrics.py --device $DEVICE --runs 1 "${TINY[@]}" \
    --out "$OUT/metrics-$DEVICE.json" 2>&1 | tail -14 | tee "$OUT/metrics-$DEVICE.log"
if [[ "${1:-}" == dry ]]; then large; fi  # the large step's own call is `large`; dry, it runs here too
