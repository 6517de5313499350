"""How a clip travels over the chat-completions wire: the frames note, the picture encoding, the transfer presets.

Why one module for both ends: the client (:class:`~ego_adr.models.openai_api.OpenAIChatModel`) writes what the
server (:mod:`ego_adr.models.serve`) reads back, and the two must not drift. Video is not part of the OpenAI
format, so a :class:`~ego_adr.models.base.Frames` clip is a short text note ("The following N frames are
sampled uniformly from the video clip at X frames per second.") followed by N ``image_url`` parts.

**Frame transfer** (issue 28, item 3): how the pictures are encoded is a named setting, never silent, because it
decides whether a served model sees what a local one sees.

- ``lossless``: PNG at the decoded size. The served model gets exactly the local call's pixels, and the note
  carries the frame rate exactly (a float's shortest exact form), so ``ego_adr.models.serve`` answers like the
  local model (``tests/models/test_served_equals_local.py``). The default for a loopback ``--base-url`` (our
  own server, a local vLLM), where bandwidth costs nothing.
- ``jpeg-512``: JPEG quality 85, longer side at most 512 px, ``detail: low``: the economical choice for hosted
  APIs, which bill and tile per pixel (512 keeps "low" detail at its one-tile price). The default for any other
  ``--base-url``. A model behind it sees other pixels than a local one, so its answers can differ.

Float frames (the public white agent's qwen-vl-utils resize under ``--protocol public``) travel as their uint8
levels (:meth:`Frames.as_uint8`, no level is lost), but a processor that resizes them again gets uint8 where the
local call passed floats (docs/stack-notes.md): under ``--protocol public`` even ``lossless`` is not identical.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

import numpy as np

from .base import BadRequest, Frames, Message

#: The note placed before a clip's frames; :func:`parse_frames_note` reads it back.
_NOTE_RE = re.compile(
    r"^The following (\d+) frames? (?:are|is) sampled uniformly from the video clip at ([0-9.eE+-]+) frames per "
    r"second\.$"
)


@dataclass(frozen=True)
class Transfer:
    """One way of putting frames on the wire (see the module docstring)."""

    name: str
    image_format: str  # "png" | "jpeg"
    max_side: int | None  # longer side in pixels; None = the decoded size
    detail: str | None  # the OpenAI "detail" hint, None = not sent
    quality: int = 85  # JPEG only
    exact_fps: bool = False  # the note states the rate exactly (the server rebuilds the clip from it)

    def describe(self) -> str:
        size = f"longer side <= {self.max_side} px" if self.max_side else "decoded size"
        fmt = f"JPEG q{self.quality}" if self.image_format == "jpeg" else self.image_format.upper()
        return f"{self.name} ({fmt}, {size}" + (f", detail {self.detail})" if self.detail else ")")


TRANSFERS: dict[str, Transfer] = {t.name: t for t in (
    Transfer("lossless", "png", None, None, exact_fps=True),
    Transfer("jpeg-512", "jpeg", 512, "low", 85),
)}
LOCAL_DEFAULT, REMOTE_DEFAULT = "lossless", "jpeg-512"


def default_transfer(loopback: bool) -> str:
    """``lossless`` to an endpoint on this machine, ``jpeg-512`` to any other (see the module docstring)."""
    return LOCAL_DEFAULT if loopback else REMOTE_DEFAULT


def frames_note(n: int, fps: float, exact: bool = False) -> str:
    """The note before a clip's frames; ``exact`` writes the rate as the float's shortest exact form (``repr``),
    so the server's temporal positions use the very rate the local call uses, else to four digits."""
    rate = repr(float(fps)) if exact and float(f"{fps:.4g}") != fps else f"{fps:.4g}"
    return f"The following {n} frames are sampled uniformly from the video clip at {rate} frames per second."


def parse_frames_note(text: str) -> tuple[int, float] | None:
    """``(n_frames, fps)`` when ``text`` is exactly a note written by :func:`frames_note`, else None."""
    m = _NOTE_RE.match(text.strip())
    if not m:
        return None
    try:
        return int(m.group(1)), float(m.group(2))
    except ValueError:
        return None


def encode_frame(frame, *, max_side: int | None = 512, image_format: str = "jpeg", quality: int = 85) -> str:
    """RGB uint8 ``(H, W, 3)`` -> ``data:`` URL, downscaled (INTER_AREA) so the longer side is at most
    ``max_side`` (``None``: as it is)."""
    import cv2

    h, w = frame.shape[:2]
    if max_side and max(h, w) > max_side:
        scale = max_side / max(h, w)
        frame = cv2.resize(
            frame, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
        )
    bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)
    if image_format == "png":
        ok, buf = cv2.imencode(".png", bgr)
        mime = "image/png"
    elif image_format == "jpeg":
        ok, buf = cv2.imencode(".jpg", bgr, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
        mime = "image/jpeg"
    else:
        raise ValueError(f"image_format must be 'jpeg' or 'png', got {image_format!r}")
    if not ok:
        raise ValueError(f"could not encode a frame of shape {frame.shape} as {image_format}")
    return f"data:{mime};base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def decode_image(url: str) -> np.ndarray:
    """``data:image/...;base64,...`` -> RGB uint8 (H, W, 3). Remote URLs are refused: the server never fetches."""
    import cv2

    if not url.startswith("data:"):
        raise BadRequest("only data: URLs are accepted for image_url (this server does not download)")
    try:
        header, b64 = url.split(",", 1)
        raw = base64.b64decode(b64, validate=False)
    except Exception as e:
        raise BadRequest(f"malformed data URL: {e}") from e
    if ";base64" not in header:
        raise BadRequest("image data URLs must be base64-encoded")
    img = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        raise BadRequest("could not decode an image_url")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def to_openai_messages(
    messages: list[Message],
    *,
    max_side: int | None = 512,
    image_detail: str | None = "low",
    image_format: str = "jpeg",
    quality: int = 85,
    exact_fps: bool = False,
) -> list[dict]:
    """Our messages -> chat-completions messages. A message with one text part is sent as a plain string (some
    servers reject part lists in system messages); anything else as a list of parts."""
    out = []
    for m in messages:
        parts: list[dict] = []
        for p in m.content:
            if isinstance(p, str):
                parts.append({"type": "text", "text": p})
            elif isinstance(p, Frames):
                parts.append({"type": "text", "text": frames_note(p.num_frames, p.fps, exact=exact_fps)})
                for frame in p.as_uint8():
                    image_url = {"url": encode_frame(frame, max_side=max_side, image_format=image_format,
                                                     quality=quality)}
                    if image_detail:
                        image_url["detail"] = image_detail
                    parts.append({"type": "image_url", "image_url": image_url})
            else:
                raise TypeError(f"unsupported message part {type(p).__name__}")
        if len(parts) == 1 and parts[0]["type"] == "text":
            out.append({"role": m.role, "content": parts[0]["text"]})
        else:
            out.append({"role": m.role, "content": parts})
    return out


PRESET = object()  # "take it from the transfer preset" for the single settings of resolve_transfer


def resolve_transfer(name: str | None, loopback: bool, *, image_format=PRESET, max_side=PRESET, detail=PRESET,
                     quality=PRESET) -> Transfer:
    """The transfer a client uses: the preset ``name`` (default: :func:`default_transfer`), with any single
    setting given explicitly replacing the preset's. Settings equal to a preset's are that preset; any other
    mix is named after what it does (e.g. ``custom-jpeg-32-q85-low``), never passed off as a preset."""
    name = name or default_transfer(loopback)
    if name not in TRANSFERS:
        raise ValueError(f"frame_transfer must be one of {', '.join(TRANSFERS)}, got {name!r}")
    base = TRANSFERS[name]
    given = {k: v for k, v in {"image_format": image_format, "max_side": max_side, "detail": detail,
                               "quality": quality}.items() if v is not PRESET}
    if not given:
        return base
    if given.get("image_format", base.image_format) not in ("jpeg", "png"):
        raise ValueError(f"image_format must be 'jpeg' or 'png', got {given['image_format']!r}")
    t = Transfer("custom", **{**{"image_format": base.image_format, "max_side": base.max_side,
                                 "detail": base.detail, "quality": base.quality}, **given})
    key = (t.image_format, t.max_side, t.detail, t.quality if t.image_format == "jpeg" else None)
    for p in TRANSFERS.values():
        if key == (p.image_format, p.max_side, p.detail, p.quality if p.image_format == "jpeg" else None):
            return p
    label = f"custom-{t.image_format}-{t.max_side or 'full'}"
    label += f"-q{t.quality}" if t.image_format == "jpeg" else ""
    return Transfer(label + (f"-{t.detail}" if t.detail else ""), t.image_format, t.max_side, t.detail, t.quality)


def transfer_note(described: str | None) -> str | None:
    """The report's note on a run whose frames went over HTTP (``described``: :meth:`Transfer.describe`)."""
    if not described:
        return None
    if described.startswith("lossless"):
        return (f"Frames reached the model over HTTP as {described}: the pixels and frame rate of a local call "
                "(a served ego_adr model answers as the local one).")
    return (f"Frames reached the model over HTTP as {described}: not the pixels a local call passes, so a served "
            "model's answers can differ from the same model run locally (--frame-transfer lossless sends those).")
