"""The downloader and our converter of DTGL's annotation scripts, without the network: the converter rebuilds
DTGL's json files from source annotations made here (their sha256 must be DTGL's shipped hashes), and the
downloader fetches, checks and lays out a copy of the public repositories served on loopback.

The sources are rebuilt from DTGL's published json: Assembly101 CSVs and EPIC-Tent's label file (with the lines
DTGL's fixes drop and relabel planted), such that DTGL's rules turn them back into the very same json, bytes whose
sha256 is DTGL's shipped ``*_hash``."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from functools import partial
from pathlib import Path

import pytest

from ego_adr.online_mistakes.data import convert
from ego_adr.online_mistakes.data import download as dl

TENT_HEADER = ("subject_id,str_GoPro_ts,end_GoPro_ts,str_GoPro_frame,end_GoPro_frame,str_SMI_w_ts,end_SMI_w_ts,"
               "str_SMI_w_frame,end_SMI_w_frame,str_SMI_wo_ts,end_SMI_wo_ts,str_SMI_wo_frame,end_SMI_wo_frame,"
               "action_label\n")


def _load(root: Path, d: str, s: str) -> dict:
    return json.loads((root / "dtgl" / d / f"{s}.json").read_text())["annotations"]


def assembly101_sources(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """``{recording: csv text}`` (plus one recording no split names) and the split files' texts."""
    csvs, splits = {}, {}
    for s in ("train", "test"):
        anns = _load(root, "assembly101", s)
        splits[s] = "".join(f"{v}\n" for v in reversed(list(anns)))  # any order: the converter sorts
        for video, ann in anns.items():
            lines = []
            for seg in ann["segments"]:
                verb, this = seg["step_name"].split("-", 1)
                if seg["step_name"] == "attach-figurine":
                    verb = "position"  # the source's name for it
                label = "mistake" if seg["has_errors"] else "correct"
                lines.append(f"{seg['start_time']},{seg['end_time']},{verb},{this.replace('_', ' ')},base,{label},\n")
            if ann["segments"][-1]["has_errors"]:
                lines.append("99999,99999,detach,wheel,chassis,correction,after the mistake\n")  # never read
            csvs[video] = "".join(lines)
    csvs["nusar-2021_action_both_9999-z00_9999_user_id_2021-01-01_000000"] = "1,2,attach,wheel,chassis,correct,\n"
    return csvs, splits


def _code(ms: int) -> str:
    if ms == -3661001:
        return "-1:-1:-1:-1"  # the label file's "no GoPro time"
    assert ms >= 0, ms
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}:{ms % 1000}"


def _row(subject: str, start: int, end: int, label: int) -> str:
    return f"{subject},{_code(start)},{_code(end)},0,0,x,x,0,0,x,x,0,0,{label}\n"


def tent_sources(root: Path) -> tuple[str, dict[str, str]]:
    """The label file's text and the split files' texts."""
    from ego_adr.online_mistakes.data.convert import TENT_DROP, TENT_RELABEL

    real, splits = [], {}
    for s in ("train", "test"):
        anns = _load(root, "epic-tent", s)
        splits[s] = json.dumps({v: len(a["segments"]) for v, a in anns.items()}, indent=4)
        for video, ann in anns.items():
            subject = video.split("_")[-1]
            for i, seg in enumerate(ann["segments"]):
                if i == 1:  # one segment in two rows of the same action: DTGL merges them into one
                    real.append(_row(subject, seg["start_time"], seg["start_time"] + 1, seg["step_id"]))
                real.append(_row(subject, seg["start_time"], seg["end_time"], seg["step_id"]))
            if ann["segments"][-1]["has_errors"]:  # the next new action is what marks the cut
                real.append(_row(subject, 0, 0, (ann["segments"][-1]["step_id"] + 1) % 12))
    lines, k = [TENT_HEADER], 0
    while len(lines) <= max(TENT_RELABEL) or k < len(real):
        i = len(lines)
        if i in TENT_DROP:  # a row of the subject that comes next, with an action of its own: dropped by DTGL
            lines.append(_row(real[min(k, len(real) - 1)].split(",")[0], 0, 0, 11))
        elif i in TENT_RELABEL:  # a subject no split names: relabelled by DTGL, read by nobody
            lines.append(_row("29", 0, 0, 7))
        elif k < len(real):
            lines.append(real[k])
            k += 1
        else:
            lines.append(_row("29", 0, 0, 3))
    return "".join(lines), splits


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _action_dict(root, d):
    name = "Assembly101-O_action_dict.json" if d == "assembly101" else "EPIC-Tent-O_action_dict.json"
    return json.loads((root / "dtgl" / d / name).read_text())


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_converter_reproduces_dtgls_shipped_hashes(online_root, split):
    csvs, a_splits = assembly101_sources(online_root)
    names = a_splits[split].split()
    built = convert.dump(convert.assembly101(csvs, names, _action_dict(online_root, "assembly101")))
    assert _sha(built) == (online_root / "dtgl" / "assembly101" / f"{split}_hash").read_text().strip()
    labels, t_splits = tent_sources(online_root)
    built = convert.dump(convert.epic_tent(labels, json.loads(t_splits[split]), _action_dict(online_root, "epic-tent")))
    assert _sha(built) == (online_root / "dtgl" / "epic-tent" / f"{split}_hash").read_text().strip()


def test_dtgls_line_fixes_are_applied_before_the_rows_are_read():
    lines = ["subject_id,x,action_label\n"] + [f"1,{i},9\n" for i in range(1, 1001)]
    rows = convert.tent_rows("".join(lines))
    assert len(rows) == 1000 - len(convert.TENT_DROP)
    by_x = {r["x"]: r["action_label"] for r in rows}
    assert by_x["43"] == "0" and by_x["197"] == "5" and by_x["995"] == "4" and by_x["44"] == "9"
    assert not {"1", "6", "195"} & set(by_x) and "7" in by_x


def _remote(online_root: Path, base: Path) -> dl.Pins:
    """The four repositories at their pinned commits under ``base`` as raw-file paths: the real files where
    ../shared holds them, the sources made here otherwise; the pins of what was made."""
    def put(repo, path, data: bytes) -> None:
        f = base / repo[0] / repo[1] / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)

    for repo, path, dest, _ in dl.FILES:
        if dest:
            put(repo, path, (online_root / dest).read_bytes())
    csvs, a_splits = assembly101_sources(online_root)
    labels, t_splits = tent_sources(online_root)
    made = {(dl.TENT, "Synchronised_action_label.txt"): labels.encode()}
    for s in ("train", "test"):
        made[(dl.DTGL, f"data/assembly101/{s}_split.txt")] = a_splits[s].encode()
        made[(dl.DTGL, f"data/epic-tent/{s}_split.json")] = t_splits[s].encode()
    for (repo, path), data in made.items():
        put(repo, path, data)
    for name, text in csvs.items():
        put(dl.A101, f"annots/{name}.csv", text.encode())
    names = sorted({n for s in a_splits.values() for n in s.split()})
    manifest = "".join(f"{n}.csv {_sha(csvs[n].encode())}\n" for n in names).encode()
    return dl.Pins().with_files(files={**dl.Pins().files, **{k: _sha(v) for k, v in made.items()}},
                                a101_manifest=_sha(manifest))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "remote"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_the_downloader_lays_out_the_shared_files_from_a_served_copy(online_root, server, tmp_path):
    root, url = server
    pins = _remote(online_root, root)
    out = tmp_path / "data"
    written = dl.download(out, url, pins=pins, timeout=10)
    csvs = [r for r in written if r.startswith(f"{dl.SOURCES[dl.A101]}/annots/")]
    assert len(written) - len(csvs) == 90 and len(csvs) == 317  # 86 files as published (68 CaptainCook4D), 4 built
    for rel in written:
        repo = next((r for r, d in dl.SOURCES.items() if rel.startswith(d + "/")), None)
        served = root / repo[0] / repo[1] / rel[len(dl.SOURCES[repo]) + 1:] if repo else online_root / rel
        assert (out / rel).read_bytes() == served.read_bytes(), rel  # the sources as served (some made here)
        if repo and "annots/" not in rel and not rel.endswith("action_label.txt"):
            assert served.read_bytes() == (online_root / rel).read_bytes(), rel
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(written)


def test_a_file_that_is_not_the_pinned_one_is_exit_3_and_nothing_is_written(online_root, server, tmp_path, cli):
    root, url = server
    pins = _remote(online_root, root)
    f = root / dl.PREGO[0] / dl.PREGO[1] / "step_anticipation/data/predictions/output_miniROAD_Epic-tent-O.json"
    f.write_bytes(f.read_bytes().replace(b"4", b"5", 1))
    with pytest.raises(dl.InfrastructureError, match="output_miniROAD_Epic-tent-O.json: sha256"):
        dl.download(tmp_path / "data", url, pins=pins, timeout=10)
    assert not (tmp_path / "data").exists()
    # the command, with the real pins: the sources made here are not the pinned files either
    code, _, err = cli("download", "--out", tmp_path / "data", "--base-url", url, "--quiet")
    assert code == 3 and len(err.strip().splitlines()) == 1 and "nothing was written" in err
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.json"))


def test_offline_is_exit_3_in_one_line(tmp_path, cli):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = cli("download", "--out", tmp_path / "data", "--base-url", f"http://127.0.0.1:{port}",
                       "--timeout", "5")
    assert code == 3 and len(err.strip().splitlines()) == 1 and "cannot reach" in err and "nothing" in err, err
    assert not (tmp_path / "data").exists()


def test_an_output_that_is_a_file_is_exit_2(tmp_path, cli):
    (tmp_path / "f").write_text("x")
    code, _, err = cli("download", "--out", tmp_path / "f")
    assert code == 2 and "is a file" in err
