"""``python scripts/bench_models.py --real ALIAS``: a real LM's CPU tokens/s on llama.cpp itself, on our OpenAI
backend against llama.cpp's server, and on our HF backend (the GGUF dequantised by transformers); what each path
costs is in bench_models.py's docstring. Writes the ``models-real`` block of docs/real_models.md."""

from __future__ import annotations

import os
import time

import docs_tables

PROMPTS = ["Describe how to boil pasta.", "List the steps to assemble a tent.", "What can go wrong when frying an egg?",
           "Explain how to change a bicycle tyre.", "How do you make a cup of tea?", "Name three kitchen tools.",
           "Why should you wash your hands before cooking?", "How do you tie a shoelace?"]


def _prompts(n: int) -> list[str]:
    return [PROMPTS[i % len(PROMPTS)] + (f" (variant {i // len(PROMPTS)})" if i >= len(PROMPTS) else "")
            for i in range(n)]


def _llamacpp(gguf, alias: str, prompts: list[str], new_tokens: int) -> tuple[list[int], dict]:
    from ego_adr.models.llamacpp import LlamaCppServer

    with LlamaCppServer(gguf, alias) as srv:
        srv.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0})  # warm-up
        n_gen, gen_ms, n_prompt, prompt_ms, t0 = [], 0.0, 0, 0.0, time.perf_counter()
        for p in prompts:
            r = srv.chat({"messages": [{"role": "user", "content": p}], "max_tokens": new_tokens, "temperature": 0,
                          "cache_prompt": False})
            n_gen.append(int(r["usage"]["completion_tokens"]))
            t = r.get("timings") or {}
            gen_ms += float(t.get("predicted_ms", 0.0))
            n_prompt += int(t.get("prompt_n", 0))
            prompt_ms += float(t.get("prompt_ms", 0.0))
        wall = time.perf_counter() - t0
    return n_gen, {"wall": wall, "gen_tps": sum(n_gen) / (gen_ms / 1000) if gen_ms else float("nan"),
                   "prompt_tps": n_prompt / (prompt_ms / 1000) if prompt_ms else float("nan")}


def _openai(gguf, alias: str, prompts: list[str], new_tokens: int) -> tuple[float, list[str]]:
    from ego_adr.models import GenerationConfig, Message, Request
    from ego_adr.models.llamacpp import LlamaCppServer
    from ego_adr.models.openai_api import OpenAIChatModel

    with LlamaCppServer(gguf, alias) as srv:
        model = OpenAIChatModel(alias, base_url=srv.base_url, concurrency=1)
        model.check_served()
        model.generate([Request([Message.user("Hi")], GenerationConfig(max_new_tokens=4))])  # warm-up
        t0 = time.perf_counter()
        out = [model.generate([Request([Message.user(p)], GenerationConfig(max_new_tokens=new_tokens))])[0]
               for p in prompts]
        wall = time.perf_counter() - t0
        model.close()
    return wall, [g.text or "" for g in out]


def _hf(alias: str, prompts: list[str], new_tokens: int) -> tuple[float, float, int]:
    from ego_adr.models import GenerationConfig, Message, Request, load_model

    t0 = time.perf_counter()
    model = load_model(alias, backend="hf", device="cpu")
    load_s = time.perf_counter() - t0
    model.generate([Request([Message.user("Hi")], GenerationConfig(max_new_tokens=4))])  # warm-up
    t0 = time.perf_counter()
    out = [model.generate([Request([Message.user(p)], GenerationConfig(max_new_tokens=new_tokens))])[0]
           for p in prompts]
    wall = time.perf_counter() - t0
    tokens = sum(len(model.tokenizer(g.text or "", add_special_tokens=False)["input_ids"]) for g in out)
    return wall, load_s, tokens


def main(a) -> None:
    docs_tables.check(a, ["models-real"])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from ego_adr.models.packaged import locate

    gguf, prompts, n = locate(a.real), _prompts(a.samples), a.new_tokens
    n_gen, cpp = _llamacpp(gguf, a.real, prompts, n)
    api_wall, api_texts = _openai(gguf, a.real, prompts, n)
    hf_wall, hf_load, hf_tokens = _hf(a.real, prompts, n)
    total = sum(n_gen)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    with docs_tables.Printed() as table:
        print(f"{a.real} ({gguf.name}), {len(prompts)} chat prompts one at a time, greedy, at most {n} new tokens; "
              f"{os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}, llama.cpp threads 2; load average "
              f"{load} when it started\n")
        print("| path | generated tokens | seconds | tokens/s | note |")
        print("|---|---:|---:|---:|---|")
        print(f"| llama.cpp itself (its server, one bare HTTP request each) | {total} | {cpp['wall']:.1f} | "
              f"{total / cpp['wall']:.1f} | its own timings: {cpp['gen_tps']:.1f} tokens/s generating, "
              f"{cpp['prompt_tps']:.1f} prompt tokens/s |")
        print(f"| our OpenAI backend -> llama.cpp server | {total} | {api_wall:.1f} | {total / api_wall:.1f} | "
              f"HTTP + our client; tokens as counted by the server |")
        print(f"| our HF backend (GGUF -> fp32 in transformers) | {hf_tokens} | {hf_wall:.1f} | "
              f"{hf_tokens / hf_wall:.1f} | load {hf_load:.1f} s (dequantising) |")
        print(f"\nOpenAI backend / llama.cpp: {cpp['wall'] / api_wall:.2f} of its speed; HF backend / llama.cpp: "
              f"{(hf_tokens / hf_wall) / (total / cpp['wall']):.2f}.")
    del api_texts
    docs_tables.publish(a, {"models-real": table.text})
