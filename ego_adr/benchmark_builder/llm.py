"""The model that writes procedures and QA pairs: Qwen2.5-7B-Instruct by default (paper Section 3.3), text only,
greedy, 300 new tokens (Appendix A), behind the stage cache so that a rebuild never pays twice for one call and an
outage (never cached) is asked again by the next run."""

from __future__ import annotations

from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.models.base import GenerationConfig
from ego_adr.models.cache import CachedModel, StageCache
from ego_adr.store import cache_root

DEFAULT_MODEL = "qwen2.5-7b"  # Qwen/Qwen2.5-7B-Instruct, Section 3.3
TINY = "tiny"  # a tiny random text Qwen2 built offline (tests, CI): its text is random
GENERATION = GenerationConfig(max_new_tokens=300, do_sample=False)  # Appendix A
# The labelling pass (Section 3.3) answers with one or two error-type names: greedy as Appendix A; 32 new tokens
# is our choice (the paper gives no budget for it): a few names, one per line, and room for a bullet each
LABEL_GENERATION = GenerationConfig(max_new_tokens=32, do_sample=False)


def model_name(name: str | None) -> str:
    """``tiny`` is the tiny *text* model (the build is text only); anything else goes to the model registry."""
    name = name or DEFAULT_MODEL
    return "tiny-qwen2" if name == TINY else name


def load_generator(
    name: str | None, device: str | None = None, cache_dir: str | Path | None = None, model=None
) -> CachedModel:
    """The generator behind the stage cache. ``model``: an already built model (library use, test doubles)."""
    if model is None:
        from ego_adr.models.hf import HFVideoLM  # text requests take its causal-LM path (no frames are sent)
        from ego_adr.models.registry import resolve

        resolved = model_name(name)
        try:
            path, spec = resolve(resolved)
            model = HFVideoLM(
                path, spec=spec, device=device or ("cpu" if "tiny" in resolved else "auto"), batch_size=8
            )
        except (OSError, ValueError) as e:  # an unknown model, or weights not in the cache while offline
            raise UserError(f"cannot load the generator --model {name!r}: {str(e).splitlines()[0]}") from None
    cache = StageCache(Path(cache_dir) if cache_dir else cache_root())
    return CachedModel(model, cache)
