"""Adding a backend takes its own module and one spec, and every entry point then offers it.

Inside the package that is a module in ``models/`` plus a line in ``models/backends.py``; here it is one module
outside the package (a model class and a ``register(BackendSpec(...))`` call), named in ``$EGO_ADR_PLUGINS``, so
the test touches no file of the package. A fresh interpreter imports it, as a user's command would: the run
(``--backend`` choices, validation, a whole run of the demo set), ``check``, ``stream`` and the white agent all
reach the new backend through the registry, with no list of names to edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

PLUGIN = textwrap.dedent('''
    """A backend kept outside ego_adr: the scripted model double under the name "scripted"."""
    from ego_adr.models.backends import BackendSpec, register
    from ego_adr.models.doubles import ScriptedModelDouble


    class Scripted(ScriptedModelDouble):
        backend = "scripted"


    def load(name, **settings):
        model = Scripted(fingerprint=f"scripted-{name}")
        model.model_id = name
        model.settings = settings
        return model


    register(BackendSpec("scripted", "a scripted model (test plugin)", load, default_batch_size=2,
                         any_model_name=True, memory_note="nothing to plan"))
''')

PROBE = textwrap.dedent('''
    import json, sys
    from ego_adr.agents.white import build_parser as white_parser, load_agent_model
    from ego_adr.check.__main__ import parser as check_parser
    from ego_adr.check.core import load_model as check_model
    from ego_adr.run.cli import build_parser as run_parser, main as run_main
    from ego_adr.stream.cli import build_parser as stream_parser, pipeline_choice
    from ego_adr.stream.common import load_pipeline

    out, cache = sys.argv[1], sys.argv[2]
    seen = {}
    run_parser().parse_args(["--backend", "scripted"])
    seen["run"] = run_main(["--backend", "scripted", "--model", "any-name", "--mode", "shallow", "--limit", "2",
                            "--output-dir", out, "--cache-dir", cache, "--quiet"])
    check_parser().parse_args(["--backend", "scripted"])
    model, _ = check_model("any-name", "cpu", "scripted", 8, cache)
    seen["check"] = [model.backend, model.model_id]
    args = stream_parser().parse_args(["--backend", "scripted", "--model", "any-name", "--mode", "shallow",
                                       "--cache-dir", cache])
    pipe, model, _ = load_pipeline(pipeline_choice(args))
    seen["stream"] = [model.backend, pipe.route]
    white_parser().parse_args(["--model", "any-name", "--backend", "scripted", "--video-root", cache])
    seen["white"] = load_agent_model("any-name", backend="scripted", cache_dir=cache).backend
    print(json.dumps(seen))
''')


@pytest.mark.slow  # a fresh interpreter and a (short) run of the demo set
def test_a_backend_from_one_module_reaches_every_entry_point(tmp_path):
    (tmp_path / "scripted_backend.py").write_text(PLUGIN)
    env = dict(os.environ, EGO_ADR_PLUGINS="scripted_backend",
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out, cache = tmp_path / "run", tmp_path / "cache"
    r = subprocess.run([sys.executable, "-c", PROBE, str(out), str(cache)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {"run": 0, "check": ["scripted", "any-name"], "stream": ["scripted", "shallow"],
                    "white": "scripted"}
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["backend"] == "scripted" and run["config"]["batch_size"] == 2  # the spec's default
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r.get("failure") is None for r in rows)


def test_an_unknown_backend_is_refused_by_the_parsers():
    from ego_adr.check.__main__ import parser as check_parser
    from ego_adr.run.cli import build_parser as run_parser

    for parser in (run_parser(), check_parser()):
        with pytest.raises(SystemExit):
            parser.parse_args(["--backend", "no-such-backend"])
