"""Subprocess side of ``test_public_white_replies.py`` (not a test module): runs one side and writes, per model
call, the processor's inputs and outputs (dtype, shape, sha256 of the bytes) and the reply.

    python public_white_runner.py public PUBLIC_ROOT JOB.json OUT.json SCRATCH
    python public_white_runner.py ours OUT.json [TINY_DIR] -- <python -m ego_adr.run arguments>

``public``: the public green agent's multiple-choice loop (``src/green_agent/agent.py``) sends its messages to
the public white agent's executor (``src/white_agent/agent.py``), both imported unmodified from PUBLIC_ROOT.
Stood in for: the A2A transport between them (the message text goes to ``execute`` directly and the reply comes
back as the 0.3 response type), the tag parser ``src.my_util.parse_tags`` (not in the public checkout; it strips
each tag's content, as docs/protocol.md assumes), and the green agent's results folder under the authors' home
(redirected to SCRATCH). The executor's processor is wrapped by a spy that records what goes in and out.

``ours``: ``python -m ego_adr.run`` itself (``runpy``), with a spy on the HF backend's processor call; with
TINY_DIR, ``python -m ego_adr.models.tiny TINY_DIR`` first, in the same process (a torch start less).

Both sides run torch on one intra-op thread (our backend's setting for tiny CPU models): a different thread
count may sum in another order and change bf16 logits.
"""

from __future__ import annotations

import hashlib
import json
import sys


def tensor_record(value) -> dict:
    import numpy as np
    import torch

    if torch.is_tensor(value):
        arr = value.detach().cpu().contiguous()
        raw = arr.view(torch.uint8).numpy().tobytes() if arr.dtype == torch.bfloat16 else arr.numpy().tobytes()
        return {"dtype": str(arr.dtype), "shape": list(arr.shape), "sha256": hashlib.sha256(raw).hexdigest()}
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        return {"dtype": str(arr.dtype), "shape": list(arr.shape), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}
    return {"value": json.loads(json.dumps(value, default=str))}


def call_record(text: str, videos, output) -> dict:
    """One processor call: the prompt text, the videos handed over, every output tensor, the token ids."""
    return {"text": text, "videos": [tensor_record(v) for v in videos or []],
            "outputs": {k: tensor_record(v) for k, v in sorted(output.items())},
            "input_ids": output["input_ids"][0].tolist()}


def run_public(public_root: str, job_path: str, out_path: str, scratch: str) -> None:
    import asyncio
    import re

    import torch
    from public_stand_ins import install_my_util, load_public, redirect_results  # beside this script

    torch.set_num_threads(1)
    job = json.load(open(job_path))
    calls: list[dict] = []

    def parse_tags(text: str) -> dict:
        return {m.group(1): m.group(2).strip() for m in re.finditer(r"<(\w+)>(.*?)</\1>", text, re.S)}

    holder: dict = {}

    class Http:
        async def aclose(self):
            pass

    async def create_a2a_client(url):
        return object(), Http()

    class Context:  # the two RequestContext members the executor reads
        def __init__(self, text):
            self.text, self.context_id = text, "ctx"

        def get_user_input(self):
            return self.text

    class Queue:
        def __init__(self):
            self.events = []

        async def enqueue_event(self, event):
            self.events.append(event)

    async def send_message_with_client(client, message, task_id=None, context_id=None):
        from a2a.types import SendMessageResponse, SendMessageSuccessResponse

        queue = Queue()
        await holder["executor"].execute(Context(message), queue)
        tags = parse_tags(message)
        reply = queue.events[-1]
        calls[-1].update(video_path=tags.get("video_path"), start_ts=tags.get("start_ts"),
                         end_ts=tags.get("end_ts"), reply=reply.parts[0].root.text)
        return SendMessageResponse(root=SendMessageSuccessResponse(id="1", result=reply))

    install_my_util(create_a2a_client, send_message_with_client, parse_tags)
    white = load_public(public_root, "public_white", "src/white_agent/agent.py")
    green = load_public(public_root, "public_green", "src/green_agent/agent.py")
    executor = white.Qwen25VLWhiteAgentExecutor(job["model"], device="cpu")

    class ProcessorSpy:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def __call__(self, **kw):
            out = self._inner(**kw)
            calls.append(call_record(kw["text"][0], kw.get("videos"), out))
            return out

    executor.processor = ProcessorSpy(executor.processor)
    holder["executor"] = executor
    redirect_results(green, scratch)
    asyncio.run(green.evaluate_with_white_agent_multiple_choice("http://in-process", job["config"]))
    json.dump({"calls": calls, "torch_threads": torch.get_num_threads()}, open(out_path, "w"))


def run_ours(out_path: str, argv: list[str]) -> None:
    import runpy

    import torch

    from ego_adr.models import hf

    calls: list[dict] = []
    encode, generate = hf.HFVideoLM._encode, hf.HFVideoLM._generate_batch

    def encode_spy(self, items):
        out = encode(self, items)
        if items and getattr(items[0], "videos", None):
            text = self.processor.apply_chat_template(items[0].conversation, tokenize=False,
                                                      add_generation_prompt=True)
            calls.append(call_record(text, items[0].videos, out))
        return out

    def generate_spy(self, items, max_new_tokens):
        texts = generate(self, items, max_new_tokens)
        if items and getattr(items[0], "videos", None):
            calls[-1]["reply"] = texts[0]
        return texts

    hf.HFVideoLM._encode, hf.HFVideoLM._generate_batch = encode_spy, generate_spy
    sys.argv = ["python -m ego_adr.run", *argv]
    code = 0
    try:
        runpy.run_module("ego_adr.run", run_name="__main__")
    except SystemExit as e:
        code = e.code or 0
    json.dump({"calls": calls, "exit": code, "torch_threads": torch.get_num_threads()}, open(out_path, "w"))


if __name__ == "__main__":
    if sys.argv[1] == "public":
        run_public(*sys.argv[2:6])
    else:
        cut = sys.argv.index("--")
        for folder in sys.argv[3:cut]:  # TINY_DIR: the tiny model built first, in this process (one start less)
            from ego_adr.models.tiny import main as build_tiny

            assert build_tiny([folder]) == 0
        run_ours(sys.argv[2], sys.argv[cut + 1:])
