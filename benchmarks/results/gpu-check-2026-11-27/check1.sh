#!/usr/bin/env bash
# One device check (not committed): the many-cluster strips against the code before them, the paper-size step
# against one X.X^T, the CUDA metric tests, the metric benchmark's CUDA JSON (now with one X.X^T per case).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/.whl PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import torch, scipy, sklearn; print(torch.__version__, torch.version.cuda, scipy.__version__, sklearn.__version__)" | tee -a $OUT/gpu.txt
timeout 100 python3 - <<'PY' 2>&1 | tee $OUT/steps.log
import time, torch, numpy as np
import silhouette_old
from isoflow.metrics import encode_labels
from isoflow.metrics.silhouette import silhouette_tensor
from isoflow.metrics.isotropy import isoscore_tensor
from sklearn.metrics import silhouette_score
g = torch.Generator().manual_seed(0)
def timed(f, reps=15):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        torch.cuda.synchronize(); t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return sorted(ts)[reps // 2] * 1e3
for n, d, k in ((2_275, 50, 821), (8_000, 384, 821), (10_662, 384, 2), (20_000, 768, 3)):
    X = torch.nn.functional.normalize(torch.randn(n, d, generator=g) + 1.5 * torch.randn(d, generator=g), dim=1).cuda()
    y = torch.randint(0, k, (n,), generator=g).cuda()
    c = encode_labels(y, n, device=X.device)
    new = timed(lambda: (silhouette_tensor(X, c), isoscore_tensor(X)))
    old = timed(lambda: (silhouette_old.silhouette_tensor(X, c), isoscore_tensor(X)))
    xxt = timed(lambda: X @ X.T)
    s_new, s_old = float(silhouette_tensor(X, c)), float(silhouette_old.silhouette_tensor(X, c))
    ref = silhouette_score(X.double().cpu().numpy(), y.cpu().numpy()) if n <= 10_662 else float("nan")
    print(f"{n}x{d} k={k}: step now {new:.3f} ms, before {old:.3f} ms, one X.X^T {xxt:.3f} ms (now/X.X^T {new/xxt:.2f}); "
          f"sil now {s_new:.9f} before {s_old:.9f} sklearn(float64) {ref:.9f}")
PY
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_silhouette.py tests/test_isotropy.py tests/test_clusters.py tests/test_device_policy.py -k "cuda or device or gpu" 2>&1 | tail -4 | tee $OUT/tests.log
timeout 300 python3 benchmarks/metrics.py --device cuda --runs 3 --out $OUT/metrics-cuda.json 2>&1 | tail -12 | tee $OUT/bench.log
