"""Suite-wide setup: one private cache folder per test session, so the embedded tiny model and demo set are
built once for the whole suite and nothing is written to the user's real cache.

Under pytest-xdist (README's ``-n 2 --dist loadfile``: whole files to each worker, so module fixtures are built
once) the controller makes the folder before it starts the workers, which inherit ``$EGO_ADR_CACHE`` and share
it: every build into it is atomic and done once (:func:`ego_adr.store.build_once`: a worker asking for the demo
set while the other builds it waits for that folder), and a test that must see what a run writes to the default cache points
``$EGO_ADR_CACHE`` at a folder of its own (tests/run/test_cache_and_limit.py).

The session's cache is its own even when the user exports ``$EGO_ADR_CACHE`` (their real cache: the suite used to
write into it), and the user's default cache is guarded too (issue 46, item 9): the controller points
``$XDG_CACHE_HOME`` -- where ``ego_adr.store.cache_root`` falls back to when ``$EGO_ADR_CACHE`` is not seen -- at
an empty folder of the session's, which every worker and subprocess inherits, and the session fails at its end if
anything was written under ``ego_adr/`` there: a code path that escapes ``$EGO_ADR_CACHE`` is named instead of
filling ``~/.cache/ego_adr``."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "egoerrorvqa"
_OWN_CACHE: str | None = None
_GUARD: str | None = None  # the session's stand-in for the user's cache root ($XDG_CACHE_HOME), checked at the end
GUARD_ENV = "EGO_ADR_TEST_CACHE_GUARD"  # set once by the outermost session; workers and subprocesses inherit it


def pytest_configure(config):
    global _OWN_CACHE, _GUARD
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep SLOWEST_FILES' order (below)
        config.option.loadscopereorder = False
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # README's test command runs two workers on CI's two cores: one intra-op thread each (and in the processes
        # they start), so the two do not fight over the cores with two threads apiece
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        # and the step-stream benchmarks' fits stay in the worker (--jobs defaults to the CPUs available: two
        # spawned processes per `--monitor all` would only add their start-up to two busy cores);
        # tests/online_mistakes/test_workers.py runs --jobs 2 itself
        os.environ.setdefault("EGO_ADR_JOBS", "1")
    if GUARD_ENV not in os.environ:
        # the outermost session (under xdist: the controller, before it starts the workers; a pytest that a test
        # starts inherits both folders): a cache of its own even when the user exports $EGO_ADR_CACHE, which is
        # then their real cache (issue 46: the suite filled it), and the guard of the user's default cache
        _OWN_CACHE = tempfile.mkdtemp(prefix="ego_adr_test_cache_")
        _GUARD = tempfile.mkdtemp(prefix="ego_adr_test_user_cache_")
        os.environ["EGO_ADR_CACHE"] = _OWN_CACHE
        os.environ[GUARD_ENV] = os.environ["XDG_CACHE_HOME"] = _GUARD


def escaped_writes(guard: str) -> list[str]:
    """What the suite wrote where ``ego_adr`` keeps the user's cache (the guard's ``ego_adr/``)."""
    root = os.path.join(guard, "ego_adr")
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


def pytest_sessionfinish(session, exitstatus):
    if _GUARD and not os.environ.get("PYTEST_XDIST_WORKER"):
        escaped = escaped_writes(_GUARD)
        if escaped:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            line = (f"the suite wrote {len(escaped)} file(s) into the user's cache, outside $EGO_ADR_CACHE: "
                    f"{', '.join(escaped[:10])}{' ...' if len(escaped) > 10 else ''}")
            if reporter is not None:
                reporter.write_line(f"ERROR {line}", red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    for folder in (_OWN_CACHE, _GUARD):
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    from ego_adr.models.tiny import ensure_tiny

    return ensure_tiny("qwen2.5-vl")


@pytest.fixture(scope="session")
def demo_root() -> Path:
    from ego_adr.video.demo import ensure_demo

    return ensure_demo()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED / "procedure.json").exists():
        pytest.skip(f"real annotations not found at {SHARED}; they are read from ../shared/egoerrorvqa")
    return SHARED


def _missing_environment(what: str, how: str = "bash scripts/test_envs.sh builds it") -> None:
    """A test environment of scripts/test_envs.sh (or of the test extra: ``how`` says) is missing: skip here, fail
    under ``CI=true`` (``.ci/run`` builds every one, so a test that needs one can never silently stop running
    there)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {what} is missing ({how})")
    pytest.skip(f"{what} is missing ({how})")


@pytest.fixture(scope="session")
def missing_environment():
    """:func:`_missing_environment`, for the tests whose environment is a folder under ``.ci/``."""
    return _missing_environment


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium driven by Playwright's Python package (the pages' browser tests, issue 21).

    Module scope, not session: Playwright's sync API keeps an event loop running in this thread while it is
    open, and a later test's ``asyncio.run`` would fail on it.

    Skips only outside CI: with ``CI=true`` a missing chromium or playwright is a failure, so the browser tests
    can never silently stop running there (``.ci/run`` installs both)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if exe is None or sync_playwright is None:
        what = "chromium (apt-get install chromium)" if exe is None else "playwright (pip install playwright)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true but {what} is missing: the browser tests must run in CI")
        pytest.skip(f"{what} is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


# The order in which README's test command (``-n 2 --dist loadfile``) hands whole files to its two workers: the
# longest first, so that neither worker is left alone with a long one at the end (longest-first is what keeps two
# queues even), each file's seconds from the README line's --durations on this 2-core machine (2026-12-06, idle);
# the files not named here (none over 12 s) follow in collection order. pytest-xdist would otherwise reorder the
# files by their number of tests (its --loadscope-reorder, on by default since 3.6), which put the slow files of few
# tests last: pytest_configure turns that off. One constraint: the session's `--monitor all` folder (``tent_all``,
# about 45 s to build) is built by the first file, and the next three, which the workers take before any other,
# do not read it, so that no worker waits for the other's build.
SLOWEST_FILES = (
    "tests/monitoring/test_steps_cli.py",  # 45 s, builds tent_all
    "tests/real_models/test_real_text_paths.py",  # 79
    "tests/run/test_launch_ray.py",  # 61
    "tests/test_public_runtime.py",  # 41
    "tests/online_mistakes/test_selection.py",  # 35 after tent_all
    "tests/integrations/test_lmms_eval_cli.py",  # 47
    "tests/real_models/test_likelihood.py",  # 46
    "tests/agents/test_white_soak.py",  # 45
    "tests/agents/test_public_white_replies.py",  # 38
    "tests/integrations/test_lmms_eval_scripted.py",  # 38
    "tests/online_mistakes/test_workers.py",  # 36
    "tests/real_models/test_scoring.py",  # 26
    "tests/real_models/test_llamacpp_backend.py",  # 26
    "tests/real_models/test_prego_lm.py",  # 23
    "tests/online_mistakes/test_stacked_monitor.py",  # 16
    "tests/models/test_families.py",  # 14
    "tests/reasoning/test_cot_budget.py",  # 13
    "tests/eval/test_browser.py",  # 13
    "tests/run/test_run_e2e.py",  # 13
    "tests/helpmeout/test_helpmeout_benchmark.py",  # 11
    "tests/monitoring/test_same_steps.py",  # 11
    "tests/reasoning/test_pipeline_routes.py",  # 11
    "tests/run/test_user_mistakes.py",  # 10
    "tests/run/test_retry_failed.py",  # 10
    "tests/data/test_extra_source.py",  # 9
    "tests/run/test_failures.py",  # 9
    "tests/run/test_experiments.py",  # 9
    "tests/agents/test_refusal_log.py",  # 8
    "tests/test_docs_tables.py",  # 8
    "tests/run/test_run_kill.py",  # 8
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep order


@pytest.fixture(autouse=True, scope="module")
def _the_path_is_left_as_found():
    """A test file that puts a folder on ``sys.path`` takes it away again: left there, what the worker's later
    files import changed under them (``.ci/public-runtime``'s qwen-vl-utils, appended by one file, changed the
    library versions every run records, and with them the step streams' fold-cache keys: issue 46)."""
    before = list(sys.path)
    yield
    added = [p for p in sys.path if p not in before]
    if added:
        sys.path[:] = before
        pytest.fail(f"this file left {added} on sys.path (remove it in the fixture that adds it)")


# -- the step-stream benchmarks (tests/online_mistakes/, and tests/monitoring/'s command tests on their data): the
# data root (``../shared/online-mistakes`` next to the checkout, or ``$EGO_ADR_ONLINE_MISTAKES`` for a checkout
# elsewhere, e.g. a git worktree), the command line in-process, and one shared ``--monitor all`` run
SEEDS = "1"  # the outer-fold seed of tent_all's nested selection (one: each seed is a whole nested selection)
#: the GRU and transformer capacity grid of tent_all's one-class monitors (``seq2seq-oneclass``, ``sgt-oneclass`` and
#: the ``stacked`` monitor's GRU): two hidden sizes and two held-out checks instead of the default (32, 64) and up to
#: 16 epochs. No test reads a number that needs the full grid (they check identities, bytes, the selection's
#: records and the metrics against the per-step files), and the search itself -- two sizes compared, the best
#: epoch kept -- still runs. The command alone: 65 s on the default grid, 39 s on this one (twice a session)
SMALL_GRID = ("--monitor-option", "hidden=8,16", "--monitor-option", "max_epochs=4")
STEP_STREAMS = Path(__file__).resolve().parents[1].parent / "shared" / "online-mistakes"


def step_streams_root() -> Path:
    return Path(os.environ.get("EGO_ADR_ONLINE_MISTAKES") or STEP_STREAMS)


@pytest.fixture(scope="session")
def online_root() -> Path:
    root = step_streams_root()
    if not (root / "dtgl" / "assembly101" / "test.json").is_file():
        pytest.skip(f"the step-stream benchmark files are not at {root} (../shared/online-mistakes, or set "
                    "EGO_ADR_ONLINE_MISTAKES); `python -m ego_adr.monitoring download --out DIR` fetches them")
    return root


@pytest.fixture
def cli(capsys):
    """``python -m ego_adr.monitoring ARGS`` in this process: (exit code, stdout, stderr)."""
    from ego_adr.monitoring.__main__ import main

    def call(*argv) -> tuple[int, str, str]:
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:  # argparse's own exits
            code = e.code if isinstance(e.code, int) else 2
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


@pytest.fixture(scope="session")
def tent_all_seeds() -> str:
    """The ``--selection-seeds`` of :func:`tent_all`."""
    return SEEDS


@pytest.fixture(scope="session")
def tent_all_args() -> tuple[str, ...]:
    """What :func:`tent_all`'s command adds to ``--monitor all`` (a run that is to read its folds or folders back
    gives the same): its selection seed and the small capacity grid (:data:`SMALL_GRID`)."""
    return ("--selection-seeds", SEEDS, *SMALL_GRID)


@pytest.fixture(scope="session")
def tent_all(online_root) -> Path:
    """``evaluate --monitor all`` on EPIC-Tent-O's oracle stream, run once for every test that reads it (the
    learned monitors' fits and the nested selection take tens of seconds), into the session's cache folder, which
    both xdist workers share (:func:`ego_adr.store.build_once`: a worker that asks while the other builds it waits,
and :data:`SLOWEST_FILES` has the first file build it while the other worker has other work);
    read only. Its nested selection runs the outer-fold seed :data:`SEEDS` alone (the default five cost five times
    as much; ``test_selection.py`` checks the choice over several seeds on a few cheap monitors), its one-class
    monitors search the small grid :data:`SMALL_GRID`."""
    from ego_adr.monitoring.__main__ import main
    from ego_adr.store import build_once, cache_root

    def build(out: Path) -> None:
        assert main(["evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", "all",
                     "--data-root", str(online_root), "--out", str(out), "--selection-seeds", SEEDS, *SMALL_GRID,
                     "--quiet"]) == 0

    return build_once(cache_root() / "tests" / "tent-all", build, lambda p: (p / "summary.json").is_file())
