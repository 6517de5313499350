"""Every entry of every registry is built or loaded once, so a typo in a spec (a factory string, a prompt name, a
file name, a loader) fails here instead of on the first user who picks that entry.

The model families have their own every-entry matrix (``tests/models/test_families.py``: each family's tiny model
is built and run through the one backend); the other registries are here: backends, modes, protocols, tasks,
sources and HelpMeOut monitors.
"""

from __future__ import annotations

import importlib
import inspect
import json
import shutil

import pytest

from ego_adr.data import sources
from ego_adr.data.egoerrorvqa import load_samples
from ego_adr.data.sample import TASKS
from ego_adr.helpmeout.monitors.base import Monitor
from ego_adr.helpmeout.monitors.registry import MONITORS, build_monitor
from ego_adr.models.backends import BACKENDS
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.reasoning import prompts
from ego_adr.reasoning.modes import MODES
from ego_adr.reasoning.protocol import PROTOCOLS, resolve


@pytest.mark.parametrize("name", tuple(BACKENDS))
def test_every_backend_loader_is_importable_and_names_its_settings(name):
    spec = BACKENDS[name]
    params = inspect.signature(spec.load).parameters
    assert all(s in params or "kw" in params for s in spec.settings), spec.settings
    assert spec.default_batch_size >= 1 and spec.description
    assert spec.plans_memory or spec.memory_note  # --dry-run says who manages GPU memory


def test_the_hf_backend_loads_the_tiny_model(tiny_model_dir):
    model = BACKENDS["hf"].load(str(tiny_model_dir), device="cpu")
    assert model.backend == "hf" and model.fingerprint


def test_the_openai_backend_loads_without_a_server():
    model = BACKENDS["openai"].load("any-served-name", base_url="http://127.0.0.1:9/v1")
    assert model.backend == "openai" and model.model_id == "any-served-name"


def test_the_vllm_backend_module_imports_without_vllm():
    # the engine itself needs vLLM and CUDA (bench/GPU runs); its module must import on any machine
    assert importlib.import_module("ego_adr.models.vllm_engine").VLLMModel.backend == "vllm"


@pytest.mark.parametrize("mode", tuple(MODES))
def test_every_mode_answers_a_demo_sample(mode, demo_root, tmp_path):
    from ego_adr.reasoning.clips import decode_item
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
    from ego_adr.video.sampler import FrameSampler

    spec = MODES[mode]
    if spec.prompt:
        assert getattr(prompts, spec.prompt).version
    sample = load_samples(demo_root / "annotations", sources="demo", video_root=demo_root / "videos")[0]
    pipe = EgoADR(ScriptedModelDouble(), PipelineConfig(mode=mode, frames=4, max_new_tokens=8), cache_dir=tmp_path)
    with FrameSampler() as sampler:
        row = pipe.process([decode_item(sampler, sample, 4)])[0]
    # the scripted reply need not be an option (then the row is ``unparseable``), but every stage of the mode ran
    assert row["failure"] in (None, "unparseable") and row["answer"] is not None
    assert row["route"] in ((mode,) if not spec.routed else ("deep", "shallow"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol_resolves(protocol):
    settings = resolve(protocol)
    assert settings.max_new_tokens >= 1 and settings.sampling


@pytest.mark.parametrize("task", TASKS)
def test_every_task_loads_from_the_demo_set(task, demo_root):
    samples = load_samples(demo_root / "annotations", task, sources="demo")
    assert samples and {s.task for s in samples} == {task}


@pytest.mark.parametrize("name", tuple(sources.SOURCES))
@pytest.mark.parametrize("task", TASKS)
def test_every_source_loads_its_records(name, task, demo_root, shared_data, tmp_path):
    spec = sources.get(name)
    assert all(sources.get(a) is spec for a in spec.aliases)
    src = demo_root / "annotations" if name == "demo" else shared_data
    shutil.copy(src / "procedure.json", tmp_path / "procedure.json")
    records = json.loads((src / spec.files[task]).read_text())
    (tmp_path / spec.files[task]).write_text(json.dumps(records[:5]))  # a few records: the schema, not the size
    samples = load_samples(tmp_path, task, sources=name)
    assert samples and {s.source for s in samples} == {name}


@pytest.mark.parametrize("name", tuple(MONITORS))
def test_every_monitor_builds(name):
    spec = MONITORS[name]
    module, attr = spec.factory.split(":")
    factory = getattr(importlib.import_module(module), attr)
    assert issubclass(factory, Monitor)
    params = inspect.signature(factory).parameters
    assert all(k in params for k, _ in spec.kwargs), (spec.kwargs, list(params))  # a mistyped setting fails
    mon = build_monitor(name, model=ScriptedModelDouble() if spec.needs_model else None)
    assert isinstance(mon, factory) and mon.name == name and mon.reads == spec.reads
