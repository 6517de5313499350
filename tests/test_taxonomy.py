"""Option normalisation: free model output -> one exact option string, or None (never a silent 'correct')."""

import pytest

from ego_adr.taxonomy import CORRECT, OPTIONS, canonical, normalize_option


@pytest.mark.parametrize("opt", OPTIONS)
def test_exact_options_roundtrip_in_any_case(opt):
    assert normalize_option(opt) == opt
    assert normalize_option(opt.upper() + ".") == opt
    assert normalize_option(f'  "{opt.lower()}"  ') == opt


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Answer: Wrong order", "Wrong order"),
        ("The error type is: omission.", "Omission"),
        ("**Wrong Object**", "Wrong object"),
        ("Final answer - Unintended and unnecessary action", "Unintended and unnecessary action"),
        ("The person used a fork instead of a spoon, so this is a wrong object error.", "Wrong object"),
        ("The person skipped the step of adding salt.", "Omission"),
        ("There is no error in this clip.", CORRECT),
        ("The step was performed correctly.", CORRECT),
        ("Correct wrong action", "Correct wrong action"),  # must not be read as 'correct' or 'Wrong action'
        ("wrong_action", "Wrong action"),
        ("The tent pole broke: equipment failure", "Equipment failure"),
        ("First I describe... the person adds sugar before milk.\nAnswer: Wrong order", "Wrong order"),
        ("B", "Wrong object"),  # a lone letter in the order of OPTIONS (A = correct)
    ],
)
def test_free_text_maps_to_one_option(text, expected):
    assert normalize_option(text) == expected


@pytest.mark.parametrize(
    "text",
    [None, "", "   ", "banana tokenizer sky", "It is either wrong order or omission, hard to say.",
     "The action is not correct"],
)
def test_unmappable_output_is_unparseable_not_correct(text):
    assert normalize_option(text) is None


def test_canonical_rejects_unknown_labels():
    assert canonical("wrong ORDER") == "Wrong order"
    with pytest.raises(ValueError, match="unknown EgoErrorVQA option"):
        canonical("Spilled milk")
