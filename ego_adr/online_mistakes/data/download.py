"""``python -m ego_adr.monitoring download --out DIR``: the benchmark files, from the public repositories at pinned
commits, checked and laid out as ``../shared/online-mistakes/`` (``dtgl/``, ``prego/``, ``sources/``: the datasets'
own annotation files, which the complete-trial benchmarks read).

What is fetched (``BASE/<owner>/<repo>/<commit>/<path>``, BASE ``https://raw.githubusercontent.com``):

- DTGL (fpv-iplab/Differentiable-Task-Graph-Learning @ 536aaa7, CC BY-NC 4.0): its licenses, the action dicts,
  the split files and the sha256 of its ``train.json`` / ``test.json`` (``train_hash``, ``test_hash``);
- Assembly101's mistake annotations (assembly-101/assembly101-mistake-detection @ 6f3a953): the ``annots/*.csv``
  of the recordings DTGL's splits name, and its ``LICENSE``;
- EPIC-Tent's action and error labels and its README (youngkyoonjang/EPIC_Tent2019 @ 1e784a9):
  ``Synchronised_action_label.txt``, ``Synchronised_error_label.txt``, ``README.md`` (the error codes);
- PREGO (aleflabo/PREGO @ 3078571, MIT): its license, context prompts and MiniRoad predictions;
- CaptainCook4D's annotations (CaptainCook4D/annotations @ a8a920a, MIT: ``annotation_json/``, ``data_splits/``,
  ``task_graphs/``, ``metadata/``, ``ANNOTATIONS.md``, ``LICENSE``) and DTGL's CaptainCook4D task-graph data
  (its ``data/captaincook4d/``), which :mod:`ego_adr.captaincook4d` reads.

Every file's sha256 is checked against the value pinned here (the CSVs as one manifest: the sha256 of their
``<name>.csv <sha256>`` lines, sorted); DTGL's json files are then *built* by :mod:`.convert` and must reproduce
DTGL's shipped hashes. Nothing is written to ``--out`` until every check has passed; then each file is moved into
place. An unreachable server or a file that is not the pinned one is an infrastructure failure (exit 3, one line,
nothing written); run again when the network is back.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from ego_adr.errors import InfrastructureError
from ego_adr.online_mistakes.data import convert
from ego_adr.store import check_writable_dir

RAW = "https://raw.githubusercontent.com"
DTGL = ("fpv-iplab/Differentiable-Task-Graph-Learning", "536aaa72fca6b4a16de7ffde05e3864466986aa4")
PREGO = ("aleflabo/PREGO", "3078571f6a827c763a4220e919c4d9b5b8adea07")
A101 = ("assembly-101/assembly101-mistake-detection", "6f3a953267ffb86cdeabf6751af05a75a011a4f8")
TENT = ("youngkyoonjang/EPIC_Tent2019", "1e784a97ca0a1669988a8ba05d0a73ad812a204a")
CC4D = ("CaptainCook4D/annotations", "a8a920a3293c4db27099a20ddbe3a3a9be1283e3")
#: where each dataset's own annotation files go (read by the complete-trial benchmarks, :mod:`.sources`,
#: and by :mod:`ego_adr.captaincook4d`)
SOURCES = {A101: "sources/assembly101-mistake-detection", TENT: "sources/EPIC_Tent2019",
           CC4D: "sources/CaptainCook4D-annotations"}
_CTX, _PRED = "step_anticipation/data/context_prompt", "step_anticipation/data/predictions"

#: (repository, path there, where it goes in the layout or None for a build input, sha256)
FILES: tuple[tuple[tuple[str, str], str, str | None, str], ...] = (
    (DTGL, "LICENSE", "dtgl/LICENSE", "415fd16df271b80ebaf040c37f0a3922cce08c23ac069b365a6ff2a26a6f8dfe"),
    (DTGL, "data/LICENSE.txt", "dtgl/DATA-LICENSE.txt",
     "0cf0cdd477d245de93184b3f6f5190d21e004a760a752ceb1e520ff2d8c338a4"),
    (DTGL, "data/assembly101/Assembly101-O_action_dict.json", "dtgl/assembly101/Assembly101-O_action_dict.json",
     "6da64292c86d1bf82af897e905737a765b9cb2fb330359a2f17362c186587894"),
    (DTGL, "data/assembly101/train_hash", "dtgl/assembly101/train_hash",
     "57d9f529e143d8ce2e4aac6b1b9ba5ef71e331769e6e8caf1f16ee5b095dbaa1"),
    (DTGL, "data/assembly101/test_hash", "dtgl/assembly101/test_hash",
     "720a08adb110ea7d369e0f851384650182687c3011dbb024169151fc60fd635e"),
    (DTGL, "data/assembly101/train_split.txt", None, "eeb71b2937b4760bd6c19aa03f16b1e6e3d0f6b501f7913e42150ee41170f7b5"),
    (DTGL, "data/assembly101/test_split.txt", None, "c3d58f138dce13d5c9cd5832048d97ce846daea41aab38fd080605b4ce4cc49b"),
    (DTGL, "data/epic-tent/EPIC-Tent-O_action_dict.json", "dtgl/epic-tent/EPIC-Tent-O_action_dict.json",
     "0a02f68bbd8c22b59e8c606f41c9400e5af4f33e3be4760721c0c55477c6bb78"),
    (DTGL, "data/epic-tent/train_hash", "dtgl/epic-tent/train_hash",
     "594212a9f75d5b5981f11a75b928384ae1d0b59a36b3bc7c4fc0d926bcf2226f"),
    (DTGL, "data/epic-tent/test_hash", "dtgl/epic-tent/test_hash",
     "b64513f746b51410b3e78a9e9eb04d3b3c83fce65523bd197f8b13926efbf680"),
    (DTGL, "data/epic-tent/train_split.json", None, "cf612e8684f8ef9b1f967dce84660be2887a0a0d104c63c72fbadedf0e4354c3"),
    (DTGL, "data/epic-tent/test_split.json", None, "6acaa959fc0b3877fad848d4913ea5cf122fb403047d61b638d6ec133981a3be"),
    (TENT, "Synchronised_action_label.txt", "sources/EPIC_Tent2019/Synchronised_action_label.txt",
     "3ab54c51fd76a05162fb6b5d293fb45fdddf5ae2ff527fb94653558b2f29a1e3"),
    (TENT, "Synchronised_error_label.txt", "sources/EPIC_Tent2019/Synchronised_error_label.txt",
     "0f4af8cc421aa869c295fd90b0bceb2470849adab3ad757bc71416878acca1fe"),
    (TENT, "README.md", "sources/EPIC_Tent2019/README.md",
     "555487492b9433025796330cc5cda815ed6a54c0ee3cdf81557fbe40f388e50a"),
    (A101, "LICENSE", "sources/assembly101-mistake-detection/LICENSE",
     "bc3c1803c94f2bda005a0b64cd3e953ea8fa546a386a75fefad26082ff87f864"),
    (PREGO, "LICENSE", "prego/LICENSE", "85c428d8757f059b9c16f4a1a0170c6643d4d253ad60ec9363a5013abd80d776"),
    (PREGO, f"{_CTX}/assembly_context_prompt_train.json", "prego/context_prompt/assembly_context_prompt_train.json",
     "1dbd4db16d2839cf187568139d67868852ef70c7cce1b47bb2be2f4a4ec5d013"),
    (PREGO, f"{_CTX}/context_prompt.json", "prego/context_prompt/context_prompt.json",
     "478644be27b5cd3ef4dbedceb1e0dc82d04b3c93d216f501f98ae5cddf5866e7"),
    (PREGO, f"{_CTX}/epictent_context_prompt_train.json", "prego/context_prompt/epictent_context_prompt_train.json",
     "900adabc3730c25e6a9b5bedfa81b18e006d75b9aab29f7d932f57382ff604b3"),
    (PREGO, f"{_PRED}/output_miniROAD_Assembly101-O.json", "prego/predictions/output_miniROAD_Assembly101-O.json",
     "9a44526ac565dc8a47e9ca002cdfa3397cda1ba71191d365e1bb0ed5837715ce"),
    (PREGO, f"{_PRED}/output_miniROAD_Epic-tent-O.json", "prego/predictions/output_miniROAD_Epic-tent-O.json",
     "7bd862319f19ee11e9a1357b5c5c03e406bc141a1470083ae3202dd06067ab2b"),
)
#: CaptainCook4D's files and DTGL's CaptainCook4D data, as ``sha256sum`` lines under a line naming their folder
_CC4D_SHA256 = """
./
d807139b26a726b2626f19743f731ab97fddc9c957fe932f5825bf1d67c8452f ANNOTATIONS.md
0cf0cdd477d245de93184b3f6f5190d21e004a760a752ceb1e520ff2d8c338a4 LICENSE
annotation_json/
8a77faf9f4dca1eb68e18fd0f3b25dd3635bbce4937755ac87bfb767999af53d activity_idx_step_idx.json
54d274416ab4ad5c78edb748c758de0a7374f5b7cb2b58f3434cde82529e131b complete_step_annotations.json
52a9c304a32bb7f01aebe0b9c28ed5b93ad291487ee4b15f6c057023e6cacc53 error_annotations.json
795d967f0955ad0ce7557688367c589b85e96dc927a01d4a1445ccd61556ce99 error_category_idx.json
264e06d06e7c33441368b013062363e487490765b6568551c0f34737549d2e13 recording_id_step_idx.json
c9f3050b7f7487bbcf5f798f22a232a1030c92b8825da26b2dc08c889bb182cf step_annotations.json
7ed55839dc515b20993cf04fdcb908dcaeb40f0d925c7a8bc09facaedc719e4f step_idx_description.json
data_splits/
8be510c34a2546a2d97e90d718138a0168333a339d42eeb0b33ef3c28b2a0f87 environment_data_split_combined.json
b5b1f134a62608b6722487544b31aed31b471adacb9431a3c03f25c58f0f3258 environment_data_split_normal.json
1ccb06b475871948946411205ace77e34081fa49f45fdd1ea62c24acdb42ea96 person_data_split_combined.json
bd1d0042163f8e1de4e419724c78a77ed2a0c62cddb5c1d7fc5b2ffe33698061 person_data_split_normal.json
7e5e53bf6a639dd32a4fe55a49fc52eb0fcf9f1308ea20438092652679628851 recipes_data_split_combined.json
7e5e53bf6a639dd32a4fe55a49fc52eb0fcf9f1308ea20438092652679628851 recipes_data_split_normal.json
83240f4c9da1d2eb248c4bacc01deb7ccb34071cbb5fa0358934fa5a0993d89b recordings_data_split_combined.json
aa6871e45cce8b72c88ba97550f846c5ccc472dedf693ea6da91e058ee0d539e recordings_data_split_normal.json
metadata/
a936f1c91abd865dfe61cb49b6a85f71951901ea860ad0b377e6608851772b71 average_segment_length.csv
51febe466df9d336eaca8c5a467475bc3909b9d597208861316be78f4dd50138 video_information.csv
task_graphs/
96cc982ee9f87de9cdd79ccdb9d7d9b2fe2882def2b0682084760aaa80dbfc6c blenderbananapancakes.json
33a6d4c5218f4c18a4fb964dae26e1fbaa56c640a7fc75a03f2855521a6fd0eb breakfastburritos.json
f369391732ee5c4bb69186086f7917c6d9b1602c23e273097f0d8505c8d9cef0 broccolistirfry.json
97271ae8a5532323abee7f50d0420a38a1cc42e0bc83408fd8cd4b7580bfb328 buttercorncup.json
de865497623d3134aaac5e0338d3634b51f6ab1c9daa0f700347c8f50574beb8 capresebruschetta.json
e171ccba4057ed084122242e45a637f90a70aaafce53e5b46e631725d52c80e9 cheesepimiento.json
dd07fc88b145f5930aa0f94c8d1d37adb073f28c05b4dbe50c209b8bdef6cb43 coffee.json
eb4b7d5ec22a5b15acadad28bd1db14d08f4a2bab86c3bcef0c0027b549cd5bc cucumberraita.json
4e62abeff58833d2693e84bdab6a39d8974ce41fbbee3e6f2d79836bf4d284a5 dressedupmeatballs.json
5c50b23d0580b2c4452caea58bc82fe4b45b760c8500dae505889f33198300a6 herbomeletwithfriedtomatoes.json
43581e60fa783dc5fb8541c013121abefd00cb186edfd54142fb215e355bf7b7 microwaveeggsandwich.json
4147418c0f0794855aaa54312aac2afb2ff4bc1e6ba5d4b48de3770eb5a6d92b microwavefrenchtoast.json
8943e25726ba600e82b8395272adca64583a0943a524cb9ad1a7eff44bbbd912 microwavemugpizza.json
60ac7eadb62b806d4012d915391d17497f8efed1a86e12383656472e70c3147c mugcake.json
d8ec7af8fc1c5632aa3c1d6eb4d37306f11b672ab47d90b3b31085a3364b3376 panfriedtofu.json
657b8a1a8f41305eeed944b21f18835ddc23be952bde7c833ad57960f3c7f5df pinwheels.json
b668706275f5afcc63e37825263f4bf834dcac4d170cd759488c82427276a419 ramen.json
c5386b2e15c4f5298b315c0ca4406903bd224b1ea95eab2d3ddf0ee4f5ab738a sautedmushrooms.json
2da72a2d0f683d3aa5b47eb0e8f85f5b08546843f1196418eafbdc2147ae9689 scrambledeggs.json
06fdf99acfb85378c923f4ac845fa87409c25b980a00d589a0295a274577038e spicedhotchocolate.json
7417b423054b266c04c8aae8352dea8adb5787b67842f5078c1954411fb1396f spicytunaavocadowraps.json
8e41558656484d0ad7b68c7cbbfeef07e0f16b5610fd55a8310bba1fa83fc527 tomatochutney.json
5aadd8668a3d9d281e8aeb900fc3bf62a39507670d0a0a2a2be8a32cf9e3833e tomatomozzarellasalad.json
e7470275f189647ce0feed10ab8bddf4110425613c0b1a9fd8a17b59296a6479 zoodles.json
"""
_DTGL_CC4D_SHA256 = """
ground_truth_task_graphs/
96cc982ee9f87de9cdd79ccdb9d7d9b2fe2882def2b0682084760aaa80dbfc6c blenderbananapancakes.json
33a6d4c5218f4c18a4fb964dae26e1fbaa56c640a7fc75a03f2855521a6fd0eb breakfastburritos.json
f369391732ee5c4bb69186086f7917c6d9b1602c23e273097f0d8505c8d9cef0 broccolistirfry.json
5c0727fa860743231048b59cc71fdae81a556d1d87a619620766aca54e7a93f1 buttercorncup.json
de865497623d3134aaac5e0338d3634b51f6ab1c9daa0f700347c8f50574beb8 capresebruschetta.json
e171ccba4057ed084122242e45a637f90a70aaafce53e5b46e631725d52c80e9 cheesepimiento.json
dd07fc88b145f5930aa0f94c8d1d37adb073f28c05b4dbe50c209b8bdef6cb43 coffee.json
eb4b7d5ec22a5b15acadad28bd1db14d08f4a2bab86c3bcef0c0027b549cd5bc cucumberraita.json
e24581f0d84cf2daa6042b3831669ffce3338e9756b2d836e086eb648f7821b5 dressedupmeatballs.json
5c50b23d0580b2c4452caea58bc82fe4b45b760c8500dae505889f33198300a6 herbomeletwithfriedtomatoes.json
43581e60fa783dc5fb8541c013121abefd00cb186edfd54142fb215e355bf7b7 microwaveeggsandwich.json
00f0455ae5eed2be21c9cd955caaebf9f6137e094a62124648359f96d5452c57 microwavefrenchtoast.json
8943e25726ba600e82b8395272adca64583a0943a524cb9ad1a7eff44bbbd912 microwavemugpizza.json
60ac7eadb62b806d4012d915391d17497f8efed1a86e12383656472e70c3147c mugcake.json
d8ec7af8fc1c5632aa3c1d6eb4d37306f11b672ab47d90b3b31085a3364b3376 panfriedtofu.json
90eca5600448a8f9c2ccca22f38a655f0cf6b1e273f6b6a9417c968dcc8e339a pinwheels.json
b668706275f5afcc63e37825263f4bf834dcac4d170cd759488c82427276a419 ramen.json
04d2a03a4626191b332acd74f2ac7a32e83e9a3f6d28efe7c9bbf9f5ea6f682f sautedmushrooms.json
2da72a2d0f683d3aa5b47eb0e8f85f5b08546843f1196418eafbdc2147ae9689 scrambledeggs.json
86dd464438dbad3fc38ea8d2c8ceb9095f5b7f7468eb441b2bffc179d219b59c spicedhotchocolate.json
7417b423054b266c04c8aae8352dea8adb5787b67842f5078c1954411fb1396f spicytunaavocadowraps.json
8e41558656484d0ad7b68c7cbbfeef07e0f16b5610fd55a8310bba1fa83fc527 tomatochutney.json
5aadd8668a3d9d281e8aeb900fc3bf62a39507670d0a0a2a2be8a32cf9e3833e tomatomozzarellasalad.json
e7470275f189647ce0feed10ab8bddf4110425613c0b1a9fd8a17b59296a6479 zoodles.json
./
712a78bf63dd1b2a11b2b7a2417f3429586c3d8bca47adf6d2adb630fa50f07e task_graph_generation_annotations.json
"""


def _manifest(text: str) -> dict[str, str]:
    """path -> sha256 of a manifest above (a line ending in ``/`` names the folder of the lines after it)."""
    out, folder = {}, ""
    for line in text.split("\n"):
        if line.endswith("/"):
            folder = "" if line == "./" else line
        elif line.strip():
            digest, name = line.split(" ", 1)
            out[folder + name] = digest
    return out


FILES += tuple((CC4D, p, f"{SOURCES[CC4D]}/{p}", h) for p, h in _manifest(_CC4D_SHA256).items())
FILES += tuple((DTGL, f"data/captaincook4d/{p}", f"dtgl/captaincook4d/{p}", h)
               for p, h in _manifest(_DTGL_CC4D_SHA256).items())
#: sha256 of the sorted "<name>.csv <sha256>" lines of the 317 Assembly101 CSVs DTGL's splits name
A101_MANIFEST = "5bb0ccaa26a17b7fb7baf227c2987aed9137879ad9e1e3066d18f201114f1a64"


@dataclass(frozen=True)
class Pins:
    """What the downloaded files must be (a test serving generated sources passes its own)."""

    files: dict = field(default_factory=lambda: {(r, p): h for r, p, _, h in FILES})
    a101_manifest: str = A101_MANIFEST

    def with_files(self, **changes) -> Pins:
        return replace(self, **changes)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fetch(base: str, repo: tuple[str, str], path: str, timeout: float) -> bytes:
    url = f"{base.rstrip('/')}/{repo[0]}/{repo[1]}/{path}"
    try:
        req = urllib.request.Request(url, headers={"User-Agent": "ego-adr-monitoring-download"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        raise InfrastructureError(f"{url}: HTTP {e.code} {e.reason}; nothing was written") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise InfrastructureError(f"cannot reach {base} ({reason}); nothing was written: run again with network "
                                  "access") from None


def _checked(data: bytes, expected: str, what: str) -> bytes:
    if sha256(data) != expected:
        raise InfrastructureError(f"{what}: sha256 {sha256(data)[:12]}... is not the pinned {expected[:12]}... (not "
                                  "the file of the pinned commit); nothing was written")
    return data


def fetch_all(base: str, pins: Pins, timeout: float = 60.0, workers: int = 8) -> dict:
    """Every pinned file and the Assembly101 CSVs, checked: ``{(repo, path): bytes}``."""
    keys = [(r, p) for r, p, _, _ in FILES]
    with ThreadPoolExecutor(workers) as pool:
        got = dict(zip(keys, pool.map(lambda k: _fetch(base, k[0], k[1], timeout), keys)))
        for (r, p), data in got.items():
            _checked(data, pins.files[(r, p)], f"{r[0]}/{p}")
        names = sorted({line.strip() for s in ("train", "test")
                        for line in got[(DTGL, f"data/assembly101/{s}_split.txt")].decode().splitlines()
                        if line.strip()})
        csvs = dict(zip(names, pool.map(lambda n: _fetch(base, A101, f"annots/{n}.csv", timeout), names)))
    manifest = "".join(f"{n}.csv {sha256(csvs[n])}\n" for n in names).encode()
    _checked(manifest, pins.a101_manifest, f"{A101[0]} annots/*.csv ({len(names)} files)")
    got.update({(A101, f"annots/{n}.csv"): data for n, data in csvs.items()})
    return got


def build(got: dict) -> dict[str, bytes]:
    """The layout: every pinned file with a place, and DTGL's json files built and checked against its hashes."""
    layout = {dest: got[(r, p)] for r, p, dest, _ in FILES if dest}
    layout.update({f"{SOURCES[A101]}/{p}": d for (r, p), d in got.items() if r == A101 and p.startswith("annots/")})
    csvs = {p[len("annots/"):-len(".csv")]: d.decode("utf-8") for (r, p), d in got.items() if r == A101}
    a_dict = json.loads(got[(DTGL, "data/assembly101/Assembly101-O_action_dict.json")])
    t_dict = json.loads(got[(DTGL, "data/epic-tent/EPIC-Tent-O_action_dict.json")])
    labels = got[(TENT, "Synchronised_action_label.txt")].decode("utf-8")
    for s in ("train", "test"):
        split = [x.strip() for x in got[(DTGL, f"data/assembly101/{s}_split.txt")].decode().splitlines() if x.strip()]
        layout[f"dtgl/assembly101/{s}.json"] = convert.dump(convert.assembly101(csvs, split, a_dict))
        tent_split = json.loads(got[(DTGL, f"data/epic-tent/{s}_split.json")])
        layout[f"dtgl/epic-tent/{s}.json"] = convert.dump(convert.epic_tent(labels, tent_split, t_dict))
    for d in ("assembly101", "epic-tent"):
        for s in ("train", "test"):
            shipped = layout[f"dtgl/{d}/{s}_hash"].decode().strip()
            _checked(layout[f"dtgl/{d}/{s}.json"], shipped, f"dtgl/{d}/{s}.json built from the sources (DTGL's "
                     f"{s}_hash)")
    return layout


def write_layout(out: Path, layout: dict[str, bytes]) -> None:
    """All files into a temporary folder inside ``out`` first, then each moved into place."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download.", dir=out))
    try:
        for rel, data in layout.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        for rel in layout:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / rel, out / rel)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def download(out: str | os.PathLike, base: str = RAW, pins: Pins | None = None, timeout: float = 60.0) -> list[str]:
    """Fetch, check, build and lay out the benchmark files in ``out``; the paths written (relative to ``out``)."""
    check_writable_dir(out, "--out")
    layout = build(fetch_all(base, pins or Pins(), timeout))
    write_layout(Path(out), layout)
    return sorted(layout)


def download_cli(out: str, base_url: str | None, timeout: float, quiet: bool) -> int:
    """``monitoring download``'s step-stream part: the files laid out in ``out``, said in one line."""
    files = download(out, base_url or RAW, timeout=timeout)
    if not quiet:
        print(f"{len(files)} files laid out in {out} (every fetched file's sha256 checked; "
              "dtgl/{assembly101,epic-tent}/{train,test}.json built and equal to DTGL's hashes)")
    return 0
