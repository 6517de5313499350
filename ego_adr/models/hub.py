"""Is the Hugging Face hub reachable? Asked once, in about a second, before a model that is not in the local cache
is fetched.

Why: with no network, ``huggingface_hub`` retries every request with backoff (five retries, 1-8 s apart), so
``python -m ego_adr.run --model qwen2.5-vl`` on an empty cache spent 26-36 s before its one-line error (issue 28,
item 7), and the line then said "user mistake" (exit 2) for what is an outage (exit 3). One short request to the
endpoint first tells an unreachable hub apart in well under two seconds, and the command says so in one line:
exit 3, infrastructure (:class:`~ego_adr.errors.InfrastructureError`), nothing recorded.

The endpoint is ``$HF_ENDPOINT`` (the hub's own variable; default ``https://huggingface.co``), reached with
``httpx`` as the hub client would be (proxy variables included). Any HTTP answer, even an error status, means
reachable: only a failed connection, a failed name lookup or a timeout count as unreachable. Name lookups
cannot be given a timeout in Python, so the request runs on a daemon thread that is waited for at most
:data:`TIMEOUT_S`. The answer is kept for the process (a run that loads a model and two judges asks once).
"""

from __future__ import annotations

import os
import threading

from ego_adr.errors import InfrastructureError

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 1.5
_answers: dict[str, str | None] = {}  # endpoint -> None (reachable) or why not
_lock = threading.Lock()


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _ask(url: str, timeout: float) -> str | None:
    import httpx

    try:
        httpx.head(url, timeout=timeout, follow_redirects=False)
        return None
    except httpx.TimeoutException:
        return f"no answer within {timeout:g} s"
    except (httpx.TransportError, OSError) as e:
        cause = e.__cause__ or e.__context__ or e
        return " ".join(str(cause).split()) or type(e).__name__


def unreachable(timeout: float = TIMEOUT_S) -> str | None:
    """Why the hub endpoint cannot be reached (``None``: it answered), asked once per endpoint and process."""
    url = endpoint()
    with _lock:
        if url in _answers:
            return _answers[url]
    box: list[str | None] = []
    t = threading.Thread(target=lambda: box.append(_ask(url, timeout)), name="ego-adr-hub-check", daemon=True)
    t.start()
    t.join(timeout + 0.5)
    why = box[0] if box else f"no answer within {timeout:g} s (name lookup)"
    with _lock:
        _answers[url] = why
    return why


def require_reachable(repo_id: str) -> None:
    """Raise :class:`InfrastructureError` (exit 3) in one line when ``repo_id`` would have to be fetched from a
    hub that cannot be reached; the caller has already found it missing from the local cache."""
    why = unreachable()
    if why:
        raise InfrastructureError(
            f"{repo_id} is not in the local Hugging Face cache and the hub ({endpoint()}) cannot be reached ({why}): "
            "connect this machine, or download the model elsewhere (`hf download "
            f"{repo_id}`) and copy the cache here (or point HF_HOME at it), or pass a local model folder; "
            "HF_HUB_OFFLINE=1 skips this check")


def forget() -> None:
    """Drop the kept answers (tests; a long-lived server after the network came back)."""
    with _lock:
        _answers.clear()
