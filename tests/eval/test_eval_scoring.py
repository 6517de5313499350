"""The public scoring rule on hand-written replies (independent of the public code, which the parity tests run)."""

from __future__ import annotations

import pytest

from ego_adr.eval.mc import compute_mc_metrics
from ego_adr.eval.scoring import answer_of, clean_reply, score_row, strict_option

OM, WO = "Omission", "Wrong object"


def cell(answer, gt):
    o = score_row({"sample_id": "x", "source": "s", "ground_truth": gt, "answer": answer})
    return o["cell"], o["hit"]


@pytest.mark.parametrize("answer, gt, want", [
    ("Omission", [OM], ("tp", True)),
    ("  omission. ", [OM], ("tp", True)),             # whitespace, then punctuation, case
    ('"Omission"', [OM], ("tp", True)),
    ("Omission!?", [WO, OM], ("tp", True)),           # any ground-truth option counts
    ("**Omission**", [OM], ("fp", False)),            # markdown is other text: an uncredited error claim
    ("Answer: Omission", [OM], ("fp", False)),
    ("I think it is an omission.", [OM], ("fp", False)),
    ("B", [OM], ("fp", False)),
    ("", [OM], ("fp", False)),                        # an empty reply is an error claim, not "no answer"
    ("Wrong object", [OM], ("fp", False)),
    ("Wrong object", ["correct"], ("fp", False)),
    ("CORRECT!", ["correct"], ("tn", True)),
    ("correct", [OM], ("fn", False)),
    ("correct .", ["correct"], ("fp", False)),        # inner space survives the one-pass strip: not "correct"
    ("No error", ["correct"], ("fp", False)),
    (None, [OM], (None, False)),                      # no answer: in n, in no cell
])
def test_public_rule(answer, gt, want):
    assert cell(answer, gt) == want


def test_cleaning_is_one_pass_each():
    assert clean_reply(' \n"Wrong order."\t') == "Wrong order"
    assert clean_reply("correct .") == "correct "
    assert strict_option("wrong ORDER;") == "Wrong order" and strict_option("Wrong order\nbecause") is None


def test_old_files_are_read_by_what_each_method_sent():
    deep = {"mode": "deep", "route": "deep", "prediction": OM, "raw": "The answer is omission", "failure": None}
    direct = {"mode": "direct", "route": "direct", "prediction": OM, "raw": "The answer is omission",
              "failure": None}
    assert answer_of(deep) == (OM, "prediction (old file)")              # Ego-ADR's concluded option
    assert answer_of(direct)[0] == "The answer is omission"              # a baseline sent its raw reply
    assert answer_of({**deep, "prediction": None, "failure": "unparseable"})[0] == "The answer is omission"
    assert answer_of({**deep, "prediction": None, "failure": "video: file not found", "raw": None})[0] is None
    assert answer_of({"answer": None, "raw": "x"})[0] is None             # a new row is taken at its word


def test_accuracy_is_hits_over_n_as_the_public_correct_count():
    # a ground truth mixing correct with an error type (the released data never does): hit but FP
    rows = [{"sample_id": "m", "source": "s", "ground_truth": ["correct", OM], "answer": OM},
            {"sample_id": "n", "source": "s", "ground_truth": [OM], "answer": None, "failure": "timeout"}]
    o = compute_mc_metrics(rows, n_boot=20)["overall"]
    assert (o["tp"], o["fp"], o["tn"], o["fn"], o["n"]) == (0, 1, 0, 0, 2) and o["accuracy"] == 0.5
