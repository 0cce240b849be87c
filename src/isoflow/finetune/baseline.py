"""The bag-of-words baseline every fine-tuning table carries: TF-IDF features and a logistic regression, trained on the
runs' training examples and scored on the runs' held-out examples (the same :func:`~isoflow.finetune.data.splits`).

A model that scores below it has not learned what word counts learn, and a verdict about a regulariser on such a model
says little. Features: word unigrams and bigrams, sublinear term frequency (scikit-learn's ``TfidfVectorizer``; a
pair's two texts joined by a separator that is no word). The inverse regularisation ``C`` is chosen from
:data:`C_GRID` by the task's metric on the validation split when the runs have one, else by 5-fold stratified
cross-validation on the training examples; the held-out set is read once, to report.
"""

from __future__ import annotations

import numpy as np

from .data import Examples

C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
PAIR_SEPARATOR = " ||| "


def _texts(ex: Examples) -> list[str]:
    return ex.a if not ex.pair else [f"{a}{PAIR_SEPARATOR}{b}" for a, b in zip(ex.a, ex.b)]


def _model(C: float):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression(C=C, max_iter=5000))


def bag_of_words(
    task: str, train: Examples, heldout: Examples, validation: Examples | None = None, *, grid=C_GRID
) -> dict:
    """Choose ``C`` (module docstring), fit on ``train``, score ``heldout``: the chosen C, every C's selection score,
    how it was chosen, the held-out metric and accuracy, and the held-out predictions (paired tests use them)."""
    from sklearn.model_selection import StratifiedKFold

    from .train import _task_metric

    X, y = _texts(train), train.y
    scores = {}
    for C in grid:
        if validation is not None:
            pred = _model(C).fit(X, y).predict(_texts(validation))
            scores[C] = _task_metric(task, validation.y, pred)[1]
        else:
            folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
            values = []
            for fit, check in folds.split(X, y):
                model = _model(C).fit([X[i] for i in fit], y[fit])
                values.append(_task_metric(task, y[check], model.predict([X[i] for i in check]))[1])
            scores[C] = float(np.mean(values))
    best = max(grid, key=lambda C: (scores[C], -C))  # ties: the stronger regularisation
    model = _model(best).fit(X, y)
    pred = model.predict(_texts(heldout))
    name, value = _task_metric(task, heldout.y, pred)
    return {
        "baseline": "tf-idf + logistic regression",
        "C": best,
        "selection": "validation split" if validation is not None else "5-fold cross-validation on the training data",
        "selection_scores": {f"{C:g}": v for C, v in scores.items()},
        "metric_name": name,
        "metric": value,
        "accuracy": float((pred == heldout.y).mean()),
        "features": int(len(model[0].vocabulary_)),
        "n_train": len(train),
        "n_validation": len(validation) if validation is not None else 0,
        "n_heldout": len(heldout),
        "predictions": pred.astype(int).tolist(),
        "heldout_labels": heldout.y.astype(int).tolist(),
    }
