"""Every entry of every registry is built or loaded once, so a typo in a spec (a factory string, a prompt name, a
file name, a loader) fails here instead of on the first user who picks that entry.

The model families have their own every-entry matrix (``tests/models/test_families.py``: each family's tiny model
is built and run through the one backend); the other registries are here: backends, modes, protocols, tasks,
sources and HelpMeOut monitors. Every registry is the one shared type (``ego_adr/registry.py``, issue 37 item 4):
the same lookup, the same one-line answer to an unknown name, the same refusal of a name used twice.
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


def _registries():
    from ego_adr.__main__ import ENTRY_POINTS
    from ego_adr.helpmeout.monitors.registry import REGISTRY as HELPMEOUT
    from ego_adr.models.backends import REGISTRY as BACKEND_REGISTRY
    from ego_adr.models.families import REGISTRY as FAMILY_REGISTRY
    from ego_adr.models.registry import ALIASES
    from ego_adr.monitoring.benchmarks import BENCHMARKS
    from ego_adr.online_mistakes.data.complete import COMPLETE, CORRECTIONS
    from ego_adr.online_mistakes.data.cut import BENCHMARKS as CUT
    from ego_adr.online_mistakes.data.cut import STREAMS
    from ego_adr.online_mistakes.registry import REGISTRY as STEP_STREAMS
    from ego_adr.reasoning.config import NARRATION_SOURCES
    from ego_adr.reasoning.modes import REGISTRY as MODE_REGISTRY
    from ego_adr.reasoning.protocol import PRESETS
    from ego_adr.stream.registry import REGISTRY as VIDEO_STREAM

    return {"sources": sources.REGISTRY, "backends": BACKEND_REGISTRY, "families": FAMILY_REGISTRY,
            "modes": MODE_REGISTRY, "protocols": PRESETS, "helpmeout monitors": HELPMEOUT,
            "stream monitors": VIDEO_STREAM, "step-stream monitors": STEP_STREAMS, "entry points": ENTRY_POINTS,
            "online benchmarks": BENCHMARKS, "model aliases": ALIASES, "narration sources": NARRATION_SOURCES,
            "cut step-stream data": CUT, "complete-trial data": COMPLETE, "step streams": STREAMS,
            "corrections rules": CORRECTIONS}


REGISTRIES = tuple(_registries())


@pytest.mark.parametrize("which", REGISTRIES)
def test_every_registry_is_the_shared_type_and_refuses_an_unknown_name_in_one_line(which):
    from ego_adr.errors import UserError
    from ego_adr.registry import Registry, UnknownName

    reg = _registries()[which]
    assert isinstance(reg, Registry) and len(reg) == len(reg.names()) >= 2
    first = reg.names()[0]
    assert first in reg and reg.get(first) is reg.specs[first] and next(iter(reg)) is reg.specs[first]
    with pytest.raises(UnknownName) as e:
        reg.get("no-such-entry-h37b")
    assert isinstance(e.value, UserError) and isinstance(e.value, KeyError)  # exit 2; dict-style callers too
    msg = str(e.value)
    assert "\n" not in msg and "'no-such-entry-h37b'" in msg and "choose one of" in msg
    assert all(n in msg for n in reg.names())  # every choice, in order
    assert "no-such-entry-h37b" not in reg and reg.find("no-such-entry-h37b") is None
    assert all(reg.help_of(s) for s in reg if which != "entry points")  # every entry says what it is


def test_the_shared_registry_keeps_order_resolves_aliases_and_refuses_a_name_twice():
    from dataclasses import dataclass

    from ego_adr.registry import Registry

    @dataclass(frozen=True)
    class Spec:
        name: str
        description: str
        aliases: tuple[str, ...] = ()

    reg = Registry("widget", (Spec("b-one", "second letter", ("B1",)), Spec("a-two", "first letter")),
                   normalise=lambda n: n.strip().lower().replace("_", "-"))
    assert reg.names() == ["b-one", "a-two"]  # registration order, not sorted
    assert reg.get(" b1 ").name == "b-one" and reg.get("A_TWO").name == "a-two"
    with pytest.raises(ValueError, match="already used by widget 'b-one'"):
        reg.register(Spec("c-three", "taken alias", ("b1",)))
    with pytest.raises(ValueError, match="already used"):
        reg.register(Spec("a-two", "again"))
    reg.register(Spec("a-two", "replaced", ("a2",)), replace=True)
    assert reg.get("a2").description == "replaced" and reg.names() == ["b-one", "a-two"]
    assert reg.help() == "b-one: second letter; a-two: replaced"
    assert reg.table().splitlines() == ["  b-one  second letter", "  a-two  replaced"]


def test_a_plugin_module_registers_before_the_first_lookup(tmp_path, monkeypatch):
    """``$EGO_ADR_PLUGINS`` is read by the shared loader (it lived in data/sources/ and served the backends too):
    a module named there is imported once, before any registry made with ``plugins=True`` answers."""
    import sys

    from ego_adr import registry
    from ego_adr.registry import PluginError, Registry

    holder = Registry("gadget", (), plugins=True)
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setitem(sys.modules, "h37b_holder", type(sys)("h37b_holder"))
    sys.modules["h37b_holder"].REG = holder
    (tmp_path / "h37b_gadget.py").write_text(
        "from types import SimpleNamespace\nimport h37b_holder\n"
        "h37b_holder.REG.register(SimpleNamespace(name='gizmo', description='from a plugin'))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("EGO_ADR_PLUGINS", "h37b_gadget")
    monkeypatch.delitem(sys.modules, "h37b_gadget", raising=False)
    assert holder.names() == ["gizmo"] and holder.get("gizmo").description == "from a plugin"
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setenv("EGO_ADR_PLUGINS", "h37b_no_such_module")
    with pytest.raises(PluginError, match="EGO_ADR_PLUGINS names 'h37b_no_such_module'"):
        holder.names()
