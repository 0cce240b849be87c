#!/usr/bin/env bash
# Third device check (not committed): IsoScore's float32 scatter matrix as batched chunk products against the loop
# of chunks before it, and the whole metric step against one X.X^T, on the GPU.
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
timeout 90 python3 - <<'PY' 2>&1 | tee $OUT/isoscore.log
import time, torch
from isoflow.metrics import encode_labels
from isoflow.metrics.isotropy import isoscore_tensor, _centred_rescaled
from isoflow.metrics.silhouette import silhouette_tensor
def before(X):  # the loop of chunks this replaces
    xc, _ = _centred_rescaled(X)
    G = torch.zeros(xc.shape[1], xc.shape[1], dtype=torch.float64, device=xc.device)
    for i0 in range(0, xc.shape[0], 1024):
        c = xc[i0 : i0 + 1024]
        G = G + (c.T @ c).to(torch.float64)
    return (torch.trace(G) ** 2 / (G * G).sum() - 1.0) / (xc.shape[1] - 1)
def timed(f, reps=25):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        torch.cuda.synchronize(); t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return sorted(ts)[reps // 2] * 1e3
g = torch.Generator().manual_seed(0)
for n, d, k in ((2_275, 50, 821), (10_662, 384, 2), (20_000, 768, 3)):
    X = torch.nn.functional.normalize(torch.randn(n, d, generator=g) + 1.5 * torch.randn(d, generator=g), dim=1).cuda()
    c = encode_labels(torch.randint(0, k, (n,), generator=g).cuda(), n, device=X.device)
    new, old = timed(lambda: isoscore_tensor(X)), timed(lambda: before(X))
    step, xxt = timed(lambda: (silhouette_tensor(X, c), isoscore_tensor(X))), timed(lambda: X @ X.T)
    diff = abs(float(isoscore_tensor(X)) - float(before(X)))
    print(f"{n}x{d} k={k}: IsoScore now {new:.3f} ms, before {old:.3f} ms (|diff| {diff:.1e}); step {step:.3f} ms, one X.X^T {xxt:.3f} ms ({step / xxt:.2f}x)")
PY
