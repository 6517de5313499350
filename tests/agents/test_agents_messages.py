"""The wire format shared with the public EgoErrorVQA evaluator (no server, no model)."""

from __future__ import annotations

import json

import pytest

from ego_adr.agents.messages import (
    MULTIPLE_CHOICE,
    OPEN_END,
    ProtocolError,
    green_message,
    mc_question,
    open_question,
    parse_green_message,
    parse_white_message,
    white_message,
)
from ego_adr.taxonomy import OPTIONS

PROC = 'Boil water. Put a tea bag in the cup. Pour the water "slowly" into the cup.'


def public_mc_text(path: str, step: str, start="12.5", end="20.0") -> str:
    """Built the way the public evaluator's f-string lays it out (guidance of its own, newline + 44 spaces)."""
    guidance = "\nYou are an expert evaluator.\n\n1. Wrong object\n   - Using an incorrect tool.\n\nInstructions:\n- ...\n"
    question = f"{guidance}\n\nTask Procedure: {PROC}\n\nCurrent Step: \"{step}\"\n\n"
    sep = "\n" + " " * 44
    return (f"<video_path>{path}</video_path>{sep}<question>{question}</question>{sep}"
            f"<start_ts>{start}</start_ts>{sep}<end_ts>{end}</end_ts>")


def test_public_multiple_choice_message_is_read():
    q = parse_white_message(public_mc_text("/v/a.mp4", "Pour the water into the cup"))
    assert q.kind == MULTIPLE_CHOICE
    assert q.video_path == "/v/a.mp4"
    assert (q.start, q.end) == (12.5, 20.0)
    assert q.procedure == PROC
    assert q.step == "Pour the water into the cup"


@pytest.mark.parametrize("start,end", [("-1", "-1"), ("-1.0", "-1.0"), ("", ""), ("-3661.033", "5")])
def test_negative_or_missing_times_mean_whole_video(start, end):
    q = parse_white_message(public_mc_text("/v/a.mp4", "x", start, end))
    assert q.start is None
    assert q.end == (5.0 if end == "5" else None)


def test_none_step_means_match_from_narration():
    q = parse_white_message(public_mc_text("/v/a.mp4", "None"))
    assert q.step is None


def test_open_ended_message_is_read():
    text = white_message("/v/b.mp4", open_question(PROC, "Did they pour slowly?"), None, 7.25)
    q = parse_white_message(text)
    assert q.kind == OPEN_END
    assert q.question == "Did they pour slowly?"
    assert q.procedure == PROC
    assert (q.start, q.end) == (None, 7.25)


def test_our_mc_question_round_trips_and_lists_every_option():
    text = white_message("/v/c.mp4", mc_question(PROC, None), 1.0, None)
    assert "<start_ts>1.0</start_ts>" in text and "<end_ts>-1.0</end_ts>" in text
    q = parse_white_message(text)
    assert (q.kind, q.step, q.procedure, q.end) == (MULTIPLE_CHOICE, None, PROC, None)
    for opt in OPTIONS:
        assert opt in text


@pytest.mark.parametrize("text", [
    "",
    "hello",
    "<question>Task Procedure: p\n\nCurrent Step: \"s\"</question>",  # no video
    "<video_path>/v/a.mp4</video_path><question>what?</question>",  # neither task
    "<video_path>/v/a.mp4</video_path><question>Task Procedure: p\n\nQuestion: q</question>"
    "<start_ts>soon</start_ts>",
    "<video_path></video_path><question>Task Procedure: p\n\nQuestion: q</question>",
])
def test_malformed_messages_raise(text):
    with pytest.raises(ProtocolError):
        parse_white_message(text)


def test_green_task_message():
    cfg = {"video_root": "/v", "json_root": "/j", "task_type": "multiple-choice", "datasets": ["epic-tent"]}
    url, parsed = parse_green_message(green_message("http://127.0.0.1:9002", cfg))
    assert url == "http://127.0.0.1:9002" and parsed == cfg
    with pytest.raises(ProtocolError):
        parse_green_message("<white_agent_url>ftp://x</white_agent_url><eval_config>{}</eval_config>")
    with pytest.raises(ProtocolError):
        parse_green_message("<white_agent_url>http://x</white_agent_url><eval_config>{nope</eval_config>")
    with pytest.raises(ProtocolError):
        parse_green_message("<white_agent_url>http://x</white_agent_url><eval_config>" + json.dumps([1])
                            + "</eval_config>")
