"""Every prompt the project sends to a model, in one place, each with a name and a version.

The name and version go into the stage-cache key and into every predictions row, so changing a prompt's text
must bump its version: a run then never reuses outputs produced by the old text. The paper's prompt figures
did not survive text extraction; these prompts follow what Sections 5.2, Appendix C, G and H say they contain
(procedure, action label, error definitions, 256 new tokens, greedy) and are our own wording.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from ego_adr.taxonomy import OPTIONS, definitions_block


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    template: str

    @property
    def fields(self) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(self.template) if f}

    def render(self, **fields: object) -> str:
        missing = self.fields - set(fields)
        if missing:
            raise KeyError(f"prompt {self.name} needs fields {sorted(missing)}")
        return self.template.format(**fields)

    def meta(self, stage: str) -> dict:
        return {"stage": stage, "prompt": self.name, "prompt_version": self.version}


OPTION_LIST = ", ".join(f'"{o}"' for o in OPTIONS)
DEFINITIONS = definitions_block(include_correct=False)

# --- text-only probe (Appendix G) -------------------------------------------------------------------------
PROBE_TEXT = Prompt(
    "probe_text_only",
    "1",
    "In one or two sentences, explain why the order of steps matters when following a cooking recipe.",
)
# Appendix G's question is the first sentence; the format line after it is ours (named in every auto report).
PROBE_FORMAT_LINE = "Reply on one line in the form STEP:<number> RESULT:<value>."
PROBE_STEP_FORMULA = Prompt(
    "probe_step_formula",
    "1",
    "Answer STEP:{step}, and compute the formula {formula}. " + PROBE_FORMAT_LINE,
)

# --- procedure bank (deep mode, Section 5.2) ----------------------------------------------------------------
BANK_BUILD = Prompt(
    "bank_build",
    "2",
    "Split the following task procedure into its individual steps, in order. Write one step per line as\n"
    "<number>. <step> [objects: <object or tool>, <object or tool>]\n"
    "Keep the wording close to the procedure and list only the objects and tools the step uses. "
    "After the last step write a line with only END.\n\n"
    "Task procedure: {procedure}",
)

# --- key-step match (deep mode: the model picks the step, text only) ------------------------------------
MATCH_SELECT = Prompt(
    "match_select",
    "1",
    "Here are the numbered steps of a task:\n{steps}\n\n"
    'The person is now doing: "{action}".\n'
    "Which step is this? Answer with the step number only.",
)

# --- video narration (Section 5.2) ----------------------------------------------------------------------
# The narrator sees the same context as the classifier: the annotated action beside the matched previous /
# current / next steps (Section 5.2), or the whole procedure without matching.
NARRATE_DEEP = Prompt(
    "narrate_deep",
    "2",
    "These are frames from an egocentric video of a person doing a task.\n{context}\n\n"
    "Describe in detail what the person actually does in the video: which objects and tools they handle, each "
    "action in order, how it is done, and anything unusual, missing, extra or out of place. Describe only what "
    "you see; do not judge whether it is an error.",
)
NARRATE_SHALLOW = Prompt(
    "narrate_shallow",
    "2",
    "These are frames from an egocentric video of a person doing a task.\n{context}\n\n"
    "Describe the video in exactly three lines:\n"
    "Object/Tool: <the object or tool the person uses>\n"
    "Action: <the action the person performs>\n"
    "Anomaly: <any anomalous event (wrong object, wrong action, wrong order, skipped step, extra action, "
    "correction, equipment failure), or none>",
)

# --- error classification (deep mode, text only) ---------------------------------------------------------
CLASSIFY_DEEP = Prompt(
    "classify_deep",
    "1",
    "You check whether a person made a procedural error.\n\n"
    "{context}\n\n"
    "Description of what the person did in the video:\n{narration}\n\n"
    "Error types:\n{definitions}\n\n"
    "Compare the description with the current step and its context. If the step was done correctly, answer "
    "\"correct\"; otherwise answer with the single error type that fits best. Answer with exactly one of: "
    "{options}.",
)
# Table 6, "Match without Narration": the matched context replaces the full procedure, but the model judges
# straight from the frames instead of from its own narration.
CLASSIFY_FRAMES = Prompt(
    "classify_frames",
    "1",
    "These are frames from an egocentric video of a person doing a procedural task.\n\n"
    "{context}\n\n"
    "Error types:\n{definitions}\n\n"
    "Did the person make an error in the current step? If the step was done correctly, answer \"correct\"; "
    "otherwise answer with the single error type that fits best. Answer with exactly one of: {options}.",
)
# The step context shown to the narrator and the classifier: the annotated action kept beside the matched
# steps (Section 5.2 prunes the procedure to them) or, without key-step matching, the whole procedure.
CONTEXT_MATCHED = Prompt(
    "context_matched",
    "2",
    "Annotated action (what the person is said to be doing): {action}\n"
    "Previous step: {previous}\nCurrent step (matched in the procedure): {step}\nNext step: {next}",
)
# Deep decoupling (Appendix G): matching also yields the matched step's expected objects/tools (from the
# procedure bank) and a confidence signal for the classification; both reach the narrator and the classifier.
CONTEXT_MATCHED_DEEP = Prompt(
    "context_matched_deep",
    "1",
    "Annotated action (what the person is said to be doing): {action}\n"
    "Previous step: {previous}\nCurrent step (matched in the procedure): {step}\nNext step: {next}\n"
    "Objects and tools the current step expects: {objects}\n"
    "Match confidence: {confidence}",
)
CONTEXT_FULL = Prompt(
    "context_full",
    "1",
    "Task procedure: {procedure}\nCurrent step (what the person should do now): {step}",
)

# --- one-pass baselines (the public evaluator's question; Appendix C) --------------------------------------
_ONE_PASS_QUESTION = (
    "You are watching an egocentric video of a person doing a procedural task. Decide whether the person made "
    "an error in the current step and, if so, which type.\n"
    "Error types:\n{definitions}\n\n"
    "Task Procedure: {procedure}\n"
    'Current Step: "{step}"\n\n'
)
DIRECT = Prompt(
    "direct_mc",
    "1",
    _ONE_PASS_QUESTION + "Answer with exactly one of: {options}.",
)
# CoT (Table 5's baseline; its prompt figure did not survive extraction). Its answer is the option on its final
# "Answer:" line, read by the method (reasoning/answers.final_line_answer). v2: that extraction (v1 sent the
# whole reasoning as the answer, which the strict scorer reads as prose).
COT_INSTRUCTION = ("Let's think step by step: first describe what the person does, then compare it with the "
                   "current step. End with a last line of the form \"Answer: <option>\", where <option> is "
                   "exactly one of: {options}.")
COT = Prompt(
    "cot_mc",
    "2",
    _ONE_PASS_QUESTION + COT_INSTRUCTION,
)

# --- the public evaluator's question (protocol option question=public). Only the way the public green agent
# joins its blocks is restated here; its guidance text is read at run time from the public source
# (reasoning/public_text.py) and never stored in this project. The white agent strips the tag content.
PUBLIC_MC = Prompt(
    "public_mc",
    "1",
    '{guidance}\n\nTask Procedure: {procedure}\n\nCurrent Step: "{step}"\n\n',
)
# CoT under question=public: the public question with its closing instructions ("output ONLY ...") replaced by
# the CoT instruction (reasoning/public_text.public_cot_question); the error definitions stay the public ones.
PUBLIC_COT = Prompt(
    "public_cot",
    "1",
    '{definitions}\n\nTask Procedure: {procedure}\n\nCurrent Step: "{step}"\n\n' + COT_INSTRUCTION,
)

# --- open-ended VQA (Section 3.2) ----------------------------------------------------------------------
OPEN_END = Prompt(
    "open_end_answer",
    "1",
    "Task Procedure: {procedure}\n\nQuestion: {question}",
)

# --- LLM judge (Section 3.4, Appendix H) --------------------------------------------------------------
JUDGE = Prompt(
    "judge_similarity",
    "1",
    "You compare a model's answer with the reference answer to a question about a video of a procedural task. "
    "Rate only how similar in meaning the answer is to the reference; do not solve the question yourself.\n\n"
    "Scale: 5 = perfect match, 4 = minor error, 3 = partially correct, 2 = mostly wrong, 1 = wrong, "
    "0 = no response.\n\n"
    "Question: {question}\n"
    "Reference answer: {reference}\n"
    "Model answer: {answer}\n\n"
    'Reply with JSON only: {{"score": <0-5>, "reason": "<one sentence>"}}',
)

# --- HelpMeOut streaming monitor, deep mode (ego_adr.helpmeout.monitors.egoadr_privileged) --------------------
HELPMEOUT_CLASSIFY_PROMPT = Prompt(
    name="helpmeout_classify",
    version="v1",
    template=(
        "You monitor a person carrying out a household task, one symbolic action at a time.\n"
        "Task: {task}\n"
        "Procedure (subgoal blocks):\n{procedure}\n\n"
        "Actions so far (PDDL notation, oldest first):\n{history}\n\n"
        "Current action: {action}\n"
        "It best matches procedure block: {block}\n"
        "Why it was flagged: {evidence}\n\n"
        "Which error category does the current action show? Categories:\n{categories}\n\n"
        "Answer with one line: Category: <one category name>"
    ),
)

ALL: tuple[Prompt, ...] = (
    PROBE_TEXT,
    PROBE_STEP_FORMULA,
    BANK_BUILD,
    MATCH_SELECT,
    NARRATE_DEEP,
    NARRATE_SHALLOW,
    CLASSIFY_DEEP,
    CLASSIFY_FRAMES,
    CONTEXT_MATCHED,
    CONTEXT_MATCHED_DEEP,
    CONTEXT_FULL,
    DIRECT,
    COT,
    PUBLIC_MC,
    PUBLIC_COT,
    OPEN_END,
    JUDGE,
    HELPMEOUT_CLASSIFY_PROMPT,
)
VERSIONS = {p.name: p.version for p in ALL}

# --- HelpMeOut: the LLM-prompting monitor (ego_adr.helpmeout.monitors.llm) -------------------------------------
# The paper's input (HelpMeOut Figure 1c: task name, initial scene, action prefix in PDDL) and output (error
# probability, onset step, error type); one call per observed step, on the prefix up to that step.
HELPMEOUT_MONITOR_PROMPT = Prompt(
    name="helpmeout_llm_monitor",
    version="v1",
    template=(
        "You monitor a person carrying out a household task, observed one symbolic action at a time.\n"
        "Task: {task}\n"
        "Initial scene (PDDL facts):\n{scene}\n\n"
        "Actions so far (step: action in PDDL; (task-end) means the person says they are done):\n{prefix}\n\n"
        "Has the person made an error so far? Error types: {categories}.\n"
        "Reply with exactly three lines:\n"
        "error_probability: <a number from 0 to 1>\n"
        "onset_step: <the step number of the first wrong action, or none>\n"
        "error_type: <one error type, or none>"
    ),
)
ALL = ALL + (HELPMEOUT_MONITOR_PROMPT,)
VERSIONS = {p.name: p.version for p in ALL}

# --- building a benchmark (python -m ego_adr.data build; paper Section 3.3, Appendix A) -----------------------------
# The paper's generation prompts did not survive text extraction; Appendix A says what the message holds (the step
# description, the erroneous action and an explanation of the error and its cause), that two or three diverse
# pairs are asked for per step segment, and Section 3.3 that questions about correct steps may be deliberately
# misleading. Generation is text only, greedy, 300 new tokens (Appendix A). Our own wording.
BUILD_PROCEDURE = Prompt(
    name="build_procedure",
    version="1",
    template=(
        "These are the annotated steps of the task \"{task}\", in the order people carry them out:\n{steps}\n\n"
        "Condense them into a concise procedure: one paragraph of plain sentences that a person could follow to "
        "complete the task, keeping every step and its order and the objects and tools each step uses. Write only "
        "the paragraph."
    ),
)
_QA_HEAD = (
    "You write questions for a benchmark that tests whether an assistant understands procedural errors in "
    "egocentric videos. The questions are asked in the first person, by the person in the video.\n\n"
    "Task: {task}\nProcedure: {procedure}\nStep of this video segment: {step}\n"
)
_QA_TAIL = (
    "Each question targets this specific step (the tools used, the amounts, the order, how it was done). Each "
    "answer is one or two sentences, in the first person, and true to the annotation. Reply with JSON only: "
    '[{{"question": "...", "answer": "..."}}, ...]'
)
BUILD_QA_ERROR = Prompt(
    name="build_qa_error",
    version="1",
    template=(
        _QA_HEAD + "What went wrong (error type): {labels}\nError description: {description}\n\n"
        "Write two or three different question-answer pairs about this step and its error: what was done wrong, "
        "why it is wrong, and what should have been done. " + _QA_TAIL
    ),
)
# v2: no misleading question asked for (Section 3.3: the final annotator writes those; the LLM's are
# BUILD_QA_CORRECT_MISLEADING below, behind ``data build --llm-misleading``)
BUILD_QA_CORRECT = Prompt(
    name="build_qa_correct",
    version="2",
    template=(
        _QA_HEAD + "The step was carried out correctly.\n\n"
        "Write two or three different question-answer pairs about this step: how it was done, with what, and in "
        "which order. " + _QA_TAIL
    ),
)
ALL = ALL + (BUILD_PROCEDURE, BUILD_QA_ERROR, BUILD_QA_CORRECT)
VERSIONS = {p.name: p.version for p in ALL}

# --- building a benchmark, second block: labelling and the LLM's misleading questions (data build) ----------------
# Section 3.3: "Qwen2.5-7B-Instruct first labels each procedural step by task type and existing annotations":
# a row whose label is neither one of our options nor mapped gets its error type(s) from the LLM (text only,
# greedy; ego_adr.benchmark_builder.labelling). The misleading questions about correct steps are the final annotator's in the
# paper; ``--llm-misleading`` asks the LLM for them instead (the build_qa_correct v1 text, renamed). Our wording.
BUILD_LABEL = Prompt(
    name="build_label",
    version="1",
    template=(
        "You label procedural errors for a benchmark of egocentric videos. A person was carrying out the task "
        "\"{task}\"; the step was: {step}\nThe annotation marks this step as an error. Its own label(s): "
        "{own}\nWhat went wrong, as annotated: {description}\n\nError types:\n{definitions}\n\n"
        "Which error type or types is this? Reply with the type names only, one per line, written exactly as "
        "in the list."
    ),
)
BUILD_QA_CORRECT_MISLEADING = Prompt(
    name="build_qa_correct_misleading",
    version="1",
    template=(
        _QA_HEAD + "The step was carried out correctly.\n\n"
        "Write two or three different question-answer pairs about this step. At least one question must be "
        "deliberately misleading: it suggests an error that did not happen (for example \"Did I use the wrong "
        "tool when I ...?\"), and its answer says that the step was done correctly. " + _QA_TAIL
    ),
)
ALL = ALL + (BUILD_LABEL, BUILD_QA_CORRECT_MISLEADING)
VERSIONS = {p.name: p.version for p in ALL}

# --- PREGO's next-step anticipation on the step streams (python -m ego_adr.monitoring evaluate --monitor prego) -----
# PREGO (Flaborea et al., CVPR 2024, Sec. 3.2; aleflabo/PREGO step_anticipation/src/models/llama_meta.py) asks an
# LLM, in context, for the next symbol of a numeric sequence: the training sequences as solved examples (each its
# steps but the last as the input, the last as the next symbol), then the observed prefix. The field labels
# ("Sequence type", "Input Sequence", "Next Symbol", "---" between examples, -1 as the start symbol) are the method's
# format, kept so that a model sees what PREGO's saw; the examples and the prefix are filled in by
# ego_adr.online_mistakes.monitors.prego.
PREGO_NEXT_STEP = Prompt(
    name="prego_next_step",
    version="1",
    template="{examples}{header}Input Sequence:\n {prefix}\nNext Symbol:\n",
)
ALL = ALL + (PREGO_NEXT_STEP,)
VERSIONS = {p.name: p.version for p in ALL}
