"""The numbers Mickus, Grönroos & Attieh (ACL 2024) report, each with its place in the paper, for our tables to
print beside ours. One place for them: the tables, the README and the tests read them from here.
"""

from __future__ import annotations

SOURCE = "Mickus, Grönroos & Attieh, Isotropy, Clusters, and Classifiers, ACL 2024"

# Section 3.2 (text): Pearson r between IsoScore and silhouette; "Spearman's ρ are always below −0.998".
# Table 1: N. items (the examples: SNLI's 9,842 pairs) and N. params (distinct items × dim + classifier).
MAIN = {
    "polarity": {"model": "minilm", "pearson_r": -0.808, "n_items": 10_662, "n_params": 4_094_976},
    "snli": {"model": "minilm", "pearson_r": -0.878, "n_items": 9_842, "n_params": 4_987_395},
    "pos": {"model": "word2vec-222", "pearson_r": -0.947, "n_items": 11_462, "n_params": 4_341_004},
    "supersense": {"model": "word2vec-222", "pearson_r": -0.978, "n_items": 2_275, "n_params": 690_326},
}
MAIN_SPEARMAN_BELOW = -0.998
MAIN_SOURCE = {"pearson_r": "Sec. 3.2", "spearman_rho": "Sec. 3.2 (bound)", "sizes": "Table 1"}
# Section 3.2 on Figure 2b (the main tasks, 5 random initialisations): the standard deviations over seeds are
# "maximum at any step < 0.0054, on average < 0.0008" (of IsoScore and silhouette; bounds, not values).
MAIN_SEEDS = 5
MAIN_SPREAD_BELOW = {"max": 0.0054, "mean": 0.0008}
MAIN_SPREAD_SOURCE = "Sec. 3.2 (Fig. 2b)"

# Appendix A, Table 3: (Pearson r, Spearman ρ) per model × GLUE task; Table 2: N. items per task and N. params per
# model × task. The paper's "miniLM", "mpnet", "roberta" are our minilm, mpnet, distilroberta.
GLUE_CORRELATIONS = {
    ("minilm", "cola"): (-0.8829111906749023, -0.9999637615057959),
    ("minilm", "mnli"): (-0.852172363973776, -0.9993778413824672),
    ("minilm", "mrpc"): (-0.9397301613400671, -0.9966204648608807),
    ("minilm", "qnli"): (-0.9118757105341755, -0.9858763631325262),
    ("minilm", "qqp"): (-0.9288981122707859, -0.9966574199245969),
    ("minilm", "rte"): (-0.9264835492305701, -0.9998504276156709),
    ("minilm", "sst2"): (-0.8455079961211791, -0.9999659758546953),
    ("minilm", "wnli"): (-0.8968953620828243, -0.9998689680279302),
    ("mpnet", "cola"): (-0.8729893632432311, -0.9999845860806568),
    ("mpnet", "mnli"): (-0.8445848713306897, -0.9991953816319274),
    ("mpnet", "mrpc"): (-0.9245598135257743, -0.9996991280678591),
    ("mpnet", "qnli"): (-0.905056680426905, -0.9664952575496624),
    ("mpnet", "qqp"): (-0.9158306534991197, -0.9950410271346989),
    ("mpnet", "rte"): (-0.9134839115853709, -0.9998001456979615),
    ("mpnet", "sst2"): (-0.8386415443466193, -0.999948496324351),
    ("mpnet", "wnli"): (-0.8907657939361896, -0.9999409684534762),
    ("distilroberta", "cola"): (-0.8713710099760137, -0.9999853130664379),
    ("distilroberta", "mnli"): (-0.8386460784340887, -0.9991960828091486),
    ("distilroberta", "mrpc"): (-0.9188334195884037, -0.9984864900344953),
    ("distilroberta", "qnli"): (-0.8991804077004847, -0.9693823547296704),
    ("distilroberta", "qqp"): (-0.9111499171354784, -0.9942424446860518),
    ("distilroberta", "rte"): (-0.915152188097229, -0.999405234591852),
    ("distilroberta", "sst2"): (-0.8410313228652802, -0.9999453212631838),
    ("distilroberta", "wnli"): (-0.8902033477673262, -0.9999115232538537),
}
GLUE_ITEMS = {
    "cola": 8_551,
    "mnli": 392_702,
    "mrpc": 3_668,
    "qnli": 104_743,
    "qqp": 363_846,
    "rte": 2_490,
    "sst2": 67_349,
    "wnli": 635,
}
GLUE_PARAMS = {  # task: (minilm, mpnet, distilroberta)
    "cola": (3_277_058, 6_554_114, 6_554_114),
    "mnli": (199_380_483, 398_760_963, 398_760_963),
    "mrpc": (2_709_506, 5_419_010, 5_419_010),
    "qnli": (42_617_090, 85_234_178, 85_234_178),
    "qqp": (189_649_154, 379_298_306, 379_298_306),
    "rte": (1_738_370, 3_476_738, 3_476_738),
    "sst2": (25_720_322, 51_440_642, 51_440_642),
    "wnli": (356_738, 713_474, 713_474),
}
GLUE_MODELS = ("minilm", "mpnet", "distilroberta")
GLUE_SOURCE = {"correlations": "App. A, Table 3", "sizes": "App. A, Table 2"}
PAPER_STEPS = {"main": 1000, "glue": 250}

# Where our setup departs from the paper's for a task (the data or vectors at hand offline).
DEPARTURES = {
    "pos-wordnet": "WordNet 3.0 POS sets (not CoDWoE); paper: task pos",
    ("supersense", "glove-50d"): "GloVe 6B 50d (not word2vec-222); frequency-ranked noun list (not Tikhonov et al.'s)",
    ("pos", "glove-50d"): "GloVe 6B 50d (not word2vec-222)",
    ("pos-wordnet", "glove-50d"): "WordNet 3.0 POS sets (not CoDWoE); GloVe 6B 50d (not word2vec-222)",
    "supersense-unambiguous": "nouns only, at most 2 supersenses, no stop words (not Tikhonov et al.'s list)",
    "minilm-words": "each word encoded alone by all-MiniLM-L6-v2, 384d (not word2vec-222)",
    "mpnet-words": "each word encoded alone by all-mpnet-base-v2, 768d (not word2vec-222)",
    "glove-50d": "GloVe 6B 50d (not word2vec-222)",
}


def main_row(task: str) -> dict | None:
    """The paper's row for a main task (``pos-wordnet`` is compared with the paper's ``pos``, the supersense
    variants with its supersense task)."""
    return MAIN.get({"pos-wordnet": "pos", "supersense-unambiguous": "supersense"}.get(task, task))


def glue_row(task: str, model: str) -> tuple[float, float] | None:
    return GLUE_CORRELATIONS.get((model, task.removeprefix("glue/")))


def glue_params(task: str, model: str) -> int | None:
    t = task.removeprefix("glue/")
    return GLUE_PARAMS[t][GLUE_MODELS.index(model)] if t in GLUE_PARAMS and model in GLUE_MODELS else None


def setup(task: str, model: str, steps: int) -> str:
    """ "as in the paper", or how this row's setup departs from it."""
    notes = []
    glue = task.startswith("glue/")
    if glue:
        if glue_row(task, model) is None:
            notes.append("not in the paper")
    else:
        row = main_row(task)
        if row is None:
            notes.append("not in the paper")
        elif (task, model) in DEPARTURES:
            notes.append(DEPARTURES[(task, model)])
        else:
            notes += [DEPARTURES[k] for k in (task, model) if k in DEPARTURES]
            if model != row["model"] and model not in DEPARTURES:
                notes.append(f"{model} (paper: {row['model']})")
    expected = PAPER_STEPS["glue" if glue else "main"]
    if steps != expected:
        notes.append(f"{steps} updates (paper: {expected})")
    return "; ".join(notes) or "as in the paper"
