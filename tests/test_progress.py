"""Progress lines for log files (Snakemake, SLURM): written by count, never by timer."""

from __future__ import annotations

import io

from isoflow.progress import LineProgress, progress_bar


def lines(buf: io.StringIO) -> list[str]:
    return buf.getvalue().splitlines()


def test_a_line_per_tenth_with_the_latest_values():
    buf = io.StringIO()
    bar = LineProgress(1000, "polarity x minilm seed 0", "upd", stream=buf)
    for step in range(1, 1001):
        bar.set_postfix(loss=f"{1 / step:.4f}", refresh=False)
        bar.update(1)
    bar.close()  # everything already written: no repeated last line
    out = lines(buf)
    assert out[0] == "polarity x minilm seed 0: started, 1000 upd"
    assert len(out) == 11
    assert [line.split(": ")[1].split(" ")[0] for line in out[1:]] == [f"{k}/1000" for k in range(100, 1001, 100)]
    assert out[1].endswith("loss=0.0100") and "(10%)" in out[1]
    assert out[-1].endswith("loss=0.0010") and "(100%)" in out[-1]


def test_small_totals_and_big_strides():
    buf = io.StringIO()
    bar = LineProgress(7, "layers", "layer", stream=buf)
    for _ in range(7):
        bar.update(1)
    assert len(lines(buf)) == 1 + 7  # fewer than ten units: a line each
    buf = io.StringIO()
    bar = LineProgress(100, "encoding", "sent", stream=buf)
    bar.update(64)  # one batch crosses six tenths: one line, and the next is due at 70
    bar.update(36)
    assert [line.split(": ")[1].split(" ")[0] for line in lines(buf)[1:]] == ["64/100", "100/100"]


def test_a_run_stopped_early_says_where():
    buf = io.StringIO()
    bar = LineProgress(1000, "snli", "upd", stream=buf)
    for _ in range(250):
        bar.update(1)
    bar.close()
    assert lines(buf)[-1].startswith("snli: 250/1000 upd (25%)")


def test_choice_of_reporter(capsys):
    assert progress_bar(False, 10, "x", "upd") is None
    bar = progress_bar(None, 10, "x", "upd")  # pytest's captured stderr is not a terminal
    assert isinstance(bar, LineProgress)
    bar.update(10)
    assert capsys.readouterr().err.splitlines()[-1].startswith("x: 10/10 upd (100%)")
