"""``--model ego_adr`` for lmms-eval: where lmms-eval finds it.

Two ways, both lmms-eval's own: the ``lmms_eval.models`` entry-point group (``pyproject.toml`` points it at
:func:`manifests`, lmms-eval calls it) and ``LMMS_EVAL_PLUGINS=ego_adr.integrations.lmms_eval``, for which
lmms-eval reads :data:`AVAILABLE_MODELS` here and imports ``<this package>.ego_adr.EgoADRModel``. Importing this
package needs no lmms-eval; :func:`manifests` and the model module do.
"""

from __future__ import annotations

MODEL_ID = "ego_adr"
CLASS_PATH = "ego_adr.integrations.lmms_eval.models.ego_adr.EgoADRModel"
AVAILABLE_MODELS = {MODEL_ID: "EgoADRModel"}  # LMMS_EVAL_PLUGINS: model name -> class in models/<name>.py


def manifests():
    """The entry point's payload: one lmms-eval ``ModelManifest`` (a simple model: it reads the documents)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id=MODEL_ID, simple_class_path=CLASS_PATH, aliases=("ego-adr",))]
