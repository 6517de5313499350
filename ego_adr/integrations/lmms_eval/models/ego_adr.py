"""Ego-ADR as an lmms-eval model: ``--model ego_adr --model_args pretrained=<any VLM ego_adr loads>,mode=auto``.

Why a model and not a task: in lmms-eval a method is a model. This one runs the whole method of
:class:`ego_adr.reasoning.pipeline.EgoADR` -- the text-only probe and its route (``mode=auto``), the procedure
bank, key-step matching, narration and classification (or ``mode=direct|cot|deep|shallow``) -- on the task's own
clip (:func:`ego_adr.integrations.lmms_eval.docs.item_of`: the same frames every other lmms-eval model is given,
with their timing), with the model loaded and cached exactly as ``ego_adr.run`` loads it
(:func:`ego_adr.run.common.load_vlm`: the stage cache, so a rerun or another task asks nothing twice). Its reply
is what the method puts on the wire (``answer``); the whole predictions row (stages, matched step, narration,
frames, timings, failure and its kind) goes to lmms-eval's per-sample log as ``ego_adr_evidence``.

``model_args``: ``pretrained`` (alias, hub id or folder; none = the embedded tiny model), ``mode`` (the
:data:`ego_adr.reasoning.modes.MODES`), ``backend``, ``device``, ``dtype``, ``cache_dir``, ``bank_model``,
``max_new_tokens`` (Ego-ADR's stages keep the paper's 256 unless given), ``gpu_memory``. lmms-eval's
``--batch_size`` is the pipeline's batch (each stage sees one batch). Only the egoerrorvqa tasks can be run: the
method needs a procedure, a step and a clip, which other tasks' documents do not carry.
"""

from __future__ import annotations

from dataclasses import replace

from lmms_eval.api.model import lmms
from tqdm import tqdm

from ego_adr.errors import EgoADRError, UserError
from ego_adr.integrations.lmms_eval import docs as D
from ego_adr.integrations.lmms_eval.config import run_config
from ego_adr.integrations.lmms_eval.results import EVIDENCE

__all__ = ["EgoADRModel", "run_config"]


class EgoADRModel(lmms):
    is_simple = True  # it reads the task's documents (self.task_dict), not messages

    def __init__(
        self,
        pretrained: str | None = None,
        mode: str = "auto",
        batch_size=1,
        device: str = "auto",
        backend: str = "hf",
        dtype: str | None = None,
        cache_dir: str | None = None,
        bank_model: str | None = None,
        max_new_tokens=None,
        gpu_memory: str | None = None,
        max_batch_size=None,
        **unknown,
    ) -> None:
        super().__init__()
        try:
            self._setup(pretrained, mode, batch_size, device, backend, dtype, cache_dir, bank_model,
                        max_new_tokens, gpu_memory, unknown)
        except EgoADRError as e:  # lmms-eval would print a traceback and exit 0 (config.py says why)
            import sys

            from ego_adr.errors import one_line

            print(f"error: --model ego_adr: {one_line(e)}", file=sys.stderr, flush=True)
            raise SystemExit(e.exit_code) from None

    def _setup(self, pretrained, mode, batch_size, device, backend, dtype, cache_dir, bank_model, max_new_tokens,
               gpu_memory, unknown) -> None:
        if unknown:
            from ego_adr.integrations.lmms_eval.config import MODEL_ARGS

            raise UserError(f"unknown model_args {sorted(unknown)}; known: {', '.join(MODEL_ARGS)}")
        from ego_adr.reasoning.bank_model import bank_setup
        from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
        from ego_adr.run.checks import check_model_name
        from ego_adr.run.common import load_vlm, pipeline_fields

        self.cfg = cfg = run_config(
            pretrained,
            mode,
            backend,
            device,
            dtype,
            cache_dir,
            bank_model,
            max_new_tokens,
            gpu_memory,
            batch_size,
        )
        check_model_name(cfg.model, cfg.backend)  # before lmms-eval's first document, in one line
        bank_fields, bank_arg, self.bank_name = bank_setup(
            cfg.bank_model, cfg.model, False, lambda name: load_vlm(replace(cfg, model=name))
        )
        pcfg = PipelineConfig(
            mode=cfg.mode,
            frames=cfg.frames,
            seed=cfg.seed,
            **{"bank_builder": cfg.bank_builder, **bank_fields},
            **pipeline_fields(cfg),
        )
        self.vlm = load_vlm(cfg)
        self.pipe = EgoADR(self.vlm, pcfg, cache_dir=cfg.resolved_cache_dir(), bank_model=bank_arg)

    @property
    def batch_size(self) -> int:
        return self.cfg.batch_size

    def _doc(self, request):
        _ctx, _gen, _visual, doc_id, task, split = request.args
        doc = self.task_dict[task][split][doc_id]
        if not D.is_ours(doc):
            raise UserError(
                f"--model ego_adr runs the egoerrorvqa tasks only; task {task!r} is not one of them"
            )
        return doc

    def generate_until(self, requests) -> list[str]:
        docs = [self._doc(r) for r in requests]
        replies: list[str] = []
        bar = tqdm(total=len(docs), desc=f"ego_adr {self.pipe.route}", disable=self.rank != 0)
        chunk: list[dict] = []
        for doc in docs + [None]:  # one batch holds one kind (requests of several tasks come in one list)
            if chunk and (doc is None or len(chunk) == self.batch_size or doc["kind"] != chunk[0]["kind"]):
                replies += self._answer(chunk)
                bar.update(len(chunk))
                chunk = []
            if doc is not None:
                chunk.append(doc)
        bar.close()
        return replies

    def _answer(self, chunk: list[dict]) -> list[str]:
        from ego_adr.run.failures import mark

        items = [D.item_of(doc) for doc in chunk]
        if chunk[0]["kind"] == D.MC:
            rows = [mark(r) for r in self.pipe.process(items)]
            keys = [(d["lmms_task"], d["sample_id"]) for d in chunk]
        else:
            outs = self.pipe.answer_open(items, [d["qa_question"] for d in chunk])
            rows = [
                {
                    "sample_id": d["sample_id"],
                    "qa_index": d["qa_index"],
                    "route": "open-end",
                    **o,
                    "failure": o["failure"] if o["failure"] != "empty answer" else None,
                }
                for d, o in zip(chunk, outs)
            ]
            keys = [(d["lmms_task"], f"{d['sample_id']}#{d['qa_index']}") for d in chunk]
        for key, row in zip(keys, rows):
            row["model_fingerprint"] = self.vlm.fingerprint
            EVIDENCE[key] = row
        return [r.get("answer") or "" for r in rows]

    def loglikelihood(self, requests):
        raise NotImplementedError(
            "--model ego_adr generates answers (generate_until); it has no loglikelihood"
        )

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("--model ego_adr answers in one round (generate_until)")
