"""The penalty's points diagnosis (isoflow.finetune.points_diagnosis, `isoflow points-diagnosis`): each recipe's
IsoScore*, dimensions, top-direction share and pull at the pretrained model, the rule that picks a recipe, and the
table and figure."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from isoflow.cli import main
from isoflow.datasets import prepare, read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.finetune.points_diagnosis import BERT_ISOSCORE, FLOOR, REFERENCE_PULL, choose_recipe
from isoflow.finetune.points_report import PANELS, legend_handles


@pytest.fixture(scope="module")
def polarity_64(tmp_path_factory, shared_mirror):
    data = tmp_path_factory.mktemp("data")
    full = read_task(prepare("polarity", data_dir=data, mirror=shared_mirror, progress=False))
    texts, labels = full.items["text"].tolist(), full.examples["label"].tolist()
    write_task(build_task("polarity-64", texts[:32] + texts[-32:], labels[:32] + labels[-32:]), data / "tasks/p64")
    return data


def row(iota: float, pull: float) -> dict:
    return {"isoscore_star": iota, "pull": pull}


def test_the_rule_picks_the_recipe_closest_to_berts_among_those_off_the_floor_with_pull():
    bert = float(np.sqrt(BERT_ISOSCORE[0] * BERT_ISOSCORE[1]))
    measured = {
        "tokens-all-layers": row(1.5e-5, 2.4e-5),  # on the floor, no pull: SmolLM2 as published
        "tokens-all-layers-skip-first": row(0.9 * FLOOR, 1.0),  # just under the floor
        "tokens-all-layers-rms-centred": row(bert * 3, 0.1),
        "tokens-all-layers-rms-centred-skip-first": row(bert / 2, 0.1),  # closer on a log scale (2x against 3x)
        "pooled": row(bert, 1.0),  # not a token recipe
    }
    assert choose_recipe(measured) == "tokens-all-layers-rms-centred-skip-first"
    measured["tokens-all-layers-rms-centred-skip-first"]["pull"] = REFERENCE_PULL / 101  # needs |lambda| > 100
    assert choose_recipe(measured) == "tokens-all-layers-rms-centred"
    assert choose_recipe({"tokens-all-layers": row(1e-5, 1.0), "pooled": row(0.1, 1.0)}) is None


def test_the_diagnosis_on_a_tiny_causal_lm_measures_every_recipe(polarity_64, tiny_gpt2, tmp_path, capsys):
    """Through the command line: the JSON's numbers hold together (dimensions from IsoScore*, the pull the ratio of
    the norms, the top share a fraction), the rule's pick is recorded, the table and the figure are written."""
    out = tmp_path / "istar-points"
    code = main(
        ["points-diagnosis", "--models", str(tiny_gpt2), "--task", "polarity-64", "--task-dir",
         str(polarity_64 / "tasks/p64"), "--batches", "1", "--data-dir", str(polarity_64), "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    result = json.loads((out / "points_diagnosis.json").read_text())
    (model,) = result["models"].values()
    assert result["batches_of_32"] == 1 and result["rule"].startswith("Rule fixed before any training")
    assert len(model["recipes"]) == 6 and model["dim"] == 32 and model["pooling"] == "last"
    for m in model["recipes"].values():
        assert m["dimensions"] == pytest.approx(m["isoscore_star"] * 31 + 1)
        assert 0 < m["top_share"] <= 1 and 0 <= m["isoscore_star"] <= 1 and m["task_grad_norm"] > 0
        assert m["pull"] == pytest.approx(m["penalty_grad_norm"] / m["task_grad_norm"], rel=1e-12)  # one batch
    tokens = model["recipes"]["tokens-all-layers"]["points_per_batch"]
    assert model["recipes"]["tokens-all-layers-skip-first"]["points_per_batch"] == tokens - 2 * 32  # 2 layers
    assert model["chosen"] == choose_recipe(model["recipes"])
    for path in ("tables/points_diagnosis.md", "tables/points_diagnosis.csv", "figures/points_diagnosis.png"):
        assert (out / path).is_file()
    assert "Rule fixed before any training" in (out / "tables/points_diagnosis.md").read_text()
    # `make redraw`: the table and figure again from the JSON alone, nothing measured (no --models); the same table.
    table = (out / "tables/points_diagnosis.csv").read_text()
    for path in ("tables/points_diagnosis.md", "tables/points_diagnosis.csv", "figures/points_diagnosis.png"):
        (out / path).unlink()
    measured = (out / "points_diagnosis.json").read_bytes()
    assert main(["points-diagnosis", "--report-only", "--out", str(out), "--quiet"]) == 0
    assert (out / "tables/points_diagnosis.csv").read_text() == table and (
        out / "figures/points_diagnosis.png"
    ).is_file()
    assert (out / "points_diagnosis.json").read_bytes() == measured
    assert main(["points-diagnosis", "--out", str(out), "--quiet"]) == 2  # neither: one line, nothing written
    assert "needs --models" in capsys.readouterr().err


def test_the_figures_key_names_each_model_and_writes_lambda_as_the_other_figures_do():
    labels = [h.get_label() for h in legend_handles(["minilm", "smollm2-135m"])]
    assert labels[:2] == ["minilm", "smollm2-135m"]
    assert f"MiniLM's pull at λ = 1 ({REFERENCE_PULL})" in labels and "reachable with |λ| ≤ 100" in labels
    assert not [text for text in labels + list(PANELS.values()) if "lambda" in text]


def test_a_recipe_normed_per_layer_lifts_a_pre_norm_stack_off_the_floor():
    """Layers of growing scale and a massive first position (what a pre-norm LM's residual stream looks like) pin
    IsoScore* of the pooled layers near 0; RMS-norming and centring each layer, without the first position, gives
    back the within-layer isotropy."""
    from isoflow.istar import IStarLoss, penalty_points

    g = torch.Generator().manual_seed(0)
    states = []
    for layer in range(6):
        h = torch.randn(8, 12, 16, generator=g)
        h[:, :, layer % 16] += 4.0 * 3**layer  # each layer offset along its own direction, growing with depth
        h[:, 0] = 1e4 * torch.ones(16)  # an attention sink: nearly constant and massive
        states.append(h)
    mask = torch.ones(8, 12, dtype=torch.long)
    iota = {}
    for recipe in ("tokens-all-layers", "tokens-all-layers-rms-centred-skip-first"):
        points = penalty_points(recipe, states, mask)
        iota[recipe] = float(IStarLoss(1.0, 0.0).isoscore_star(points))
    assert iota["tokens-all-layers"] < 0.01 and iota["tokens-all-layers-rms-centred-skip-first"] > 0.5


def test_lambda_from_a_pull_reproduces_the_pull(tiny_gpt2):
    """|λ| from a pull of 0.3: the penalty at that λ, its Σ_S from the batch, differentiated here by hand against the
    task loss of the same seeded head, pulls 0.3 times as hard (one batch: the median is that batch's ratio)."""
    from isoflow.finetune.data import Examples
    from isoflow.finetune.model import ClassificationHead, SentenceEncoder
    from isoflow.finetune.points_diagnosis import PULL_SEED, lambda_for_pull
    from isoflow.istar import IStarLoss, penalty_points
    from isoflow.models.local import load_hf

    encoder = SentenceEncoder.from_transformer(*load_hf(str(tiny_gpt2), "cpu"))
    words = ["good film", "bad plot", "a fine cast", "dull and long"] * 8
    examples = Examples(a=words, b=None, y=np.arange(32) % 2, label_names=["neg", "pos"])
    recipe = "tokens-all-layers-rms-centred-skip-first"
    got = lambda_for_pull(encoder, examples, recipe, 0.3, batches=1)
    assert got["istar_pull"] == 0.3 and got["batches"] == 1

    torch.manual_seed(PULL_SEED)
    head = ClassificationHead(encoder.dim, 2, dropout=0.0)
    order = np.random.default_rng(PULL_SEED).permutation(32)
    encoder.eval()
    pooled, states, mask = encoder(encoder.tokenize([words[i] for i in order], None, "cpu"), hidden_states=True)
    points = penalty_points(recipe, states, mask)
    penalty = IStarLoss(got["lambda"], 0.2)
    penalty.update_reference(points.detach())
    params = [p for p in encoder.parameters() if p.requires_grad]
    task = torch.nn.functional.cross_entropy(head(pooled), torch.as_tensor(examples.y[order]))

    def norm(f):
        grads = torch.autograd.grad(f, params, retain_graph=True, allow_unused=True)
        return torch.sqrt(sum((g.double() ** 2).sum() for g in grads if g is not None))

    norms = [norm(penalty(points)), norm(task)]
    assert float(norms[0] / norms[1]) == pytest.approx(0.3, rel=1e-4)


def test_a_run_with_a_pull_trains_at_the_lambda_it_implies(polarity_64, tiny_gpt2, tmp_path):
    """`istar_pull`: λ in units of λ*; the record names the pull asked, λ* and the λ that trained; one λ* for every
    seed; a pull with CosReg is refused before any work."""
    from isoflow.finetune.run import run_finetune

    common = dict(
        data_dir=polarity_64, task_path=polarity_64 / "tasks/p64", results=tmp_path, device="cpu", progress=False,
        epochs=1, batch_size=16, max_heldout=16, validation_fraction=0.0, shrinkage_points=500,
        points="tokens-all-layers-skip-first", istar_pull=0.05,
    )  # fmt: skip
    records = [
        json.loads(run_finetune("polarity-64", str(tiny_gpt2), seed, istar_lambda=lam, **common)[1].read_text())
        for seed, lam in ((0, -1.0), (1, -1.0), (0, 0.5))
    ]
    chosen = [r["istar_lambda_from_pull"] for r in records]
    assert chosen[0]["lambda"] == chosen[1]["lambda"] == chosen[2]["lambda"] > 0 and chosen[0]["istar_pull"] == 0.05
    assert chosen[0]["istar_lambda"] == -chosen[0]["lambda"] and chosen[2]["istar_lambda"] == 0.5 * chosen[0]["lambda"]
    assert records[0]["settings"]["istar_pull"] == 0.05 and records[0]["settings"]["istar_lambda"] == -1.0
    assert "istar_lambda_from_pull" not in json.loads(
        run_finetune("polarity-64", str(tiny_gpt2), 0, istar_lambda=0.0, **common)[1].read_text()
    )  # λ = 0: the plain run, nothing measured
    with pytest.raises(ValueError, match="istar_pull sets I-STAR's lambda"):
        run_finetune("polarity-64", str(tiny_gpt2), 0, reg="cosreg", cosreg_weight=1.0, **common)
