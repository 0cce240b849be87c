#!/usr/bin/env bash
# Second device check (not committed): where the many-cluster step's time goes on the GPU (silhouette alone,
# IsoScore alone, kernel counts), then the metric benchmark with one run per side, written to metrics-cuda.json.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/.whl PYTHONUNBUFFERED=1
timeout 60 python3 - <<'PY' 2>&1 | tee $OUT/split.log
import time, torch
from torch.profiler import profile, ProfilerActivity
from isoflow.metrics import encode_labels
from isoflow.metrics.silhouette import silhouette_tensor
from isoflow.metrics.isotropy import isoscore_tensor
g = torch.Generator().manual_seed(0)
def timed(f, reps=15):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        torch.cuda.synchronize(); t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return sorted(ts)[reps // 2] * 1e3
for n, d, k in ((2_275, 50, 821), (10_662, 384, 2)):
    X = torch.nn.functional.normalize(torch.randn(n, d, generator=g) + 1.5 * torch.randn(d, generator=g), dim=1).cuda()
    y = torch.randint(0, k, (n,), generator=g).cuda()
    c = encode_labels(y, n, device=X.device)
    print(f"{n}x{d} k={k}: silhouette {timed(lambda: silhouette_tensor(X, c)):.3f} ms, isoscore {timed(lambda: isoscore_tensor(X)):.3f} ms")
    for name, f in (("silhouette", lambda: silhouette_tensor(X, c)), ("isoscore", lambda: isoscore_tensor(X))):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            f(); torch.cuda.synchronize()
        print(name); print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=8, max_name_column_width=40))
PY
timeout 320 python3 benchmarks/metrics.py --device cuda --runs 1 --out $OUT/metrics-cuda.json 2>&1 | tail -12 | tee $OUT/bench.log
