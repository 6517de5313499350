"""Download the EgoErrorVQA annotation files (``data/json/*.json`` of the public release) into one folder, and
the public evaluator's source beside them.

Usage::

    python scripts/download_annotations.py --out data/egoerrorvqa            # from the ``main`` branch
    python scripts/download_annotations.py --out data/egoerrorvqa --ref <commit-or-tag>

The release lives in the public GitHub repository ``z1oong/EgoErrorVQA`` (Apache-2.0); files are fetched from
its raw-content URL. ``--base-url`` points elsewhere (a mirror, a fork, a local ``file://`` copy). Each file is
checked to be JSON before it replaces anything, so an interrupted or HTML error download never leaves a
corrupt file behind. Nothing is fetched at import time; the tests never run this script.

The same repository's evaluator source (``src/green_agent/agent.py`` and the files beside it) goes to
``OUT/public-evaluator/``: our green agent reads the public question guidance from it at run time, so it asks
exactly what the public green agent asks without this project shipping that prose. Each file is checked to parse
as Python/TOML before it replaces anything. ``--no-source`` skips it; ``--source-base-url`` points elsewhere.

Exit status, as every ego_adr command: 0 done; 2 a mistake (a ``--ref`` or URL that serves no such file: HTTP
4xx, or a file that is not what it should be); 3 infrastructure (no network, the host cannot be reached or does
not answer, HTTP 5xx/429): one line, and the first unreachable file stops the rest (the others would fail the
same way, ``--timeout`` seconds each). Nothing is written unless a file arrives whole; ``--out`` is created then.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

REPOSITORY = "z1oong/EgoErrorVQA"
EXIT_USER, EXIT_INFRASTRUCTURE = 2, 3  # ego_adr.errors' codes (kept literal: the script runs without the package)


class Unreachable(RuntimeError):
    """The host cannot be reached (exit 3): stop at the first file."""
DEFAULT_BASE_URL = "https://raw.githubusercontent.com/{repo}/{ref}/data/json"

# Same names as ego_adr.data.egoerrorvqa.ANNOTATION_FILES (kept literal so the script runs without the package).
FILES = (
    "captaincook4d_answer.json",
    "assembly101_answers.json",
    "egooops_answer.json",
    "epic_tent_answer_sec.json",
    "captaincook4d_qa_pairs_updated.json",
    "assembly101_qa_pairs_updated.json",
    "egooops_qa_pair.json",
    "epic_tent_qa_pair.json",
    "procedure.json",
)


DEFAULT_SOURCE_URL = "https://raw.githubusercontent.com/{repo}/{ref}"
SOURCE_DIR = "public-evaluator"
SOURCE_FILES = (
    "src/green_agent/agent.py",
    "src/green_agent/egoerrorvqa_green_agent.toml",
    "src/white_agent/agent.py",
    "src/my_util/my_a2a.py",
    "src/launcher.py",
    "main.py",
)


def fetch(url: str, timeout: float) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "ego-adr-download-annotations"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read()


def _get(url: str, timeout: float) -> bytes:
    """The file at ``url``; :class:`Unreachable` for no connection, a timeout or a server failure (5xx, 429),
    :class:`urllib.error.HTTPError` for any other HTTP refusal (the URL or ``--ref`` is wrong)."""
    try:
        return fetch(url, timeout)
    except urllib.error.HTTPError as e:
        if e.code >= 500 or e.code == 429:
            raise Unreachable(f"{url}: HTTP {e.code} {e.reason}") from None
        raise
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        if url.startswith("file:"):  # a local copy without that file: a wrong --base-url, not an outage
            raise urllib.error.HTTPError(url, 404, f"no such file ({getattr(e, 'reason', e)})", None, None) from None
        raise Unreachable(f"{url}: {getattr(e, 'reason', e)}") from None


def _write(target: Path, payload: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".part")
    tmp.write_bytes(payload)
    tmp.replace(target)


def download(out: Path, base_url: str, force: bool = False, timeout: float = 60.0) -> list[tuple[str, str]]:
    """Fetch every file into ``out``; returns (file, status) rows. Raises :class:`Unreachable` at the first file
    the host does not serve for want of a connection, RuntimeError listing the files it refused."""
    rows: list[tuple[str, str]] = []
    failures: list[str] = []
    for name in FILES:
        target = out / name
        if target.is_file() and not force:
            rows.append((name, "kept (exists; --force to replace)"))
            continue
        url = f"{base_url.rstrip('/')}/{name}"
        try:
            payload = _get(url, timeout)
            data = json.loads(payload.decode("utf-8"))
        except urllib.error.HTTPError as e:
            failures.append(f"{url}: HTTP {e.code} {e.reason}")
            continue
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            failures.append(f"{url}: not JSON ({e})")
            continue
        _write(target, payload)
        size = f"{len(data)} records" if isinstance(data, list) else f"{len(data)} entries"
        rows.append((name, f"downloaded, {size}"))
    if failures:
        more = f" and {len(failures) - 1} more" if len(failures) > 1 else ""
        raise RuntimeError(f"could not download {failures[0]}{more}; check --ref (branch, tag or commit) and "
                           f"--base-url (default {DEFAULT_BASE_URL.format(repo=REPOSITORY, ref='<ref>')})")
    return rows


def _check_source(name: str, payload: bytes) -> None:
    """Raise ValueError unless ``payload`` is what ``name`` should be (Python or TOML that parses)."""
    import ast

    import tomllib

    text = payload.decode("utf-8")
    if name.endswith(".py"):
        ast.parse(text, filename=name)
    elif name.endswith(".toml"):
        tomllib.loads(text)


def download_source(out: Path, base_url: str, force: bool = False, timeout: float = 60.0) -> list[tuple[str, str]]:
    """Fetch the public evaluator's source files into ``out/public-evaluator``; RuntimeError lists failures."""
    rows: list[tuple[str, str]] = []
    failures: list[str] = []
    for name in SOURCE_FILES:
        target = out / SOURCE_DIR / name
        label = f"{SOURCE_DIR}/{name}"
        if target.is_file() and not force:
            rows.append((label, "kept (exists; --force to replace)"))
            continue
        url = f"{base_url.rstrip('/')}/{name}"
        try:
            payload = _get(url, timeout)
            _check_source(name, payload)
        except urllib.error.HTTPError as e:
            failures.append(f"{url}: HTTP {e.code} {e.reason}")
            continue
        except (UnicodeDecodeError, SyntaxError, ValueError) as e:
            failures.append(f"{url}: not the expected source file ({e})")
            continue
        _write(target, payload)
        rows.append((label, f"downloaded, {len(payload)} bytes"))
    if failures:
        more = f" and {len(failures) - 1} more" if len(failures) > 1 else ""
        raise RuntimeError(f"could not download the public evaluator's source {failures[0]}{more}; check --ref and "
                           f"--source-base-url (default {DEFAULT_SOURCE_URL.format(repo=REPOSITORY, ref='<ref>')}), "
                           "or pass --no-source")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="folder to write the JSON files into (created)")
    p.add_argument("--ref", default="main", help="branch, tag or commit of the repository (default: main)")
    p.add_argument("--repo", default=REPOSITORY, help=f"GitHub owner/name (default: {REPOSITORY})")
    p.add_argument("--base-url", default=None,
                   help="URL of the folder holding the files; overrides --repo/--ref "
                        f"(default: {DEFAULT_BASE_URL})")
    p.add_argument("--force", action="store_true", help="replace files that already exist")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per file (default: 60)")
    p.add_argument("--no-source", action="store_true",
                   help=f"do not fetch the public evaluator's source into OUT/{SOURCE_DIR} (the green agent's "
                        "public question wording reads its guidance text from there)")
    p.add_argument("--source-base-url", default=None,
                   help=f"URL of the repository root for the source files (default: {DEFAULT_SOURCE_URL})")
    args = p.parse_args(argv)
    base = args.base_url or DEFAULT_BASE_URL.format(repo=args.repo, ref=args.ref)
    try:
        rows = download(args.out, base, force=args.force, timeout=args.timeout)
        if not args.no_source:
            src_base = args.source_base_url or DEFAULT_SOURCE_URL.format(repo=args.repo, ref=args.ref)
            rows += download_source(args.out, src_base, force=args.force, timeout=args.timeout)
    except Unreachable as e:
        print(f"error: cannot reach {e}: check the network (or --base-url / --source-base-url) and rerun; "
              "files already here are kept", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER
    width = max(len(n) for n, _ in rows)
    for name, status in rows:
        print(f"{name:<{width}}  {status}")
    print(f"\n{len(rows)} files in {args.out}; use --data-root {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
