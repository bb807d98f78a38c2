"""A lower bound of the ``max_model_len`` vLLM derives from a checkpoint's config (``_get_and_verify_max_len``,
``vllm/config/model.py``: 0.34.0 :2589, 0.33.0 :2545, 0.24.0 :2092), the counterpart of the upper bound of
:func:`mtp_audit.engines.vllm.launch.decide.max_len_bound`. With both, a ``max_model_len`` in the speculative config is
decided in both directions: above the upper bound the draft ``ModelConfig`` refuses it, at or below the lower bound it
takes it as given (and ``_maybe_override_draft_max_model_len`` compares it with the target's, 0.34.0
``speculative.py:1458-1471``).

The steps, each checked in the release's own source before it is used (a release whose code differs is "could not
tell"):

- ``derive_max_model_len_and_key`` (``vllm/transformers_utils/model_arch_config_convertor.py``, 0.34.0 :375-408, the
  only definition in that module): the least of the ``possible_keys`` (read from the release) that
  ``getattr(hf_text_config, key, None)`` finds, replaced by ``model_max_length`` when that is set; ``inf`` when none is;
- the values: config.json's, else the default of the config class vLLM builds (the release's own ``_CONFIG_REGISTRY``
  class read from the tree, or a transformers class from
  :data:`mtp_audit.engines.vllm.launch.config_class.TRANSFORMERS_LENGTH_DEFAULTS`:
  :func:`mtp_audit.engines.vllm.launch.config_class.length_defaults`);
- the sliding window only with ``disable_sliding_window`` (the draft ``ModelConfig`` leaves it ``False``), the
  tokenizer's ``model_max_length`` only for a pooling runner with ``position_embedding_type == "absolute"``,
  ``encoder_config`` only with a ``sentence_bert_config.json`` (then not decided);
- RoPE: ``derived *= scaling_factor`` with ``scaling_factor = rp.get("factor", 1.0)``: a factor of at least 1 (or
  null) never lowers it; where the release replaces the length by a YaRN ``original_max_position_embeddings``
  (0.24.0 :2166) that value counts as well.

Not decided (``None``): a composite config (its ``text_config``'s class is not read), a config class whose defaults
were not read, a factor below 1 or not a number, ``longrope``, a length that is not an integer.
"""

from __future__ import annotations

import ast
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_REL = "vllm/config/model.py"
CONVERTOR_REL = "vllm/transformers_utils/model_arch_config_convertor.py"
#: the assignments to ``derived_max_model_len`` in ``_get_and_verify_max_len`` that the bound follows (0.24.0-0.34.0)
_KNOWN_STEPS = {
    "derived_max_model_len, max_len_key = model_arch_config.derived_max_model_len_and_key",
    "derived_max_model_len = sliding_window",
    "derived_max_model_len = min(derived_max_model_len, tokenizer_model_max_length)",
    "derived_max_model_len = default_max_len",
    "derived_max_model_len *= scaling_factor",
    "derived_max_model_len = encoder_config['max_seq_length']",
}
_YARN_STEP = "derived_max_model_len = rp['original_max_position_embeddings']"
_FACTOR_STEPS = {"scaling_factor = 1.0", "scaling_factor = rp.get('factor', scaling_factor)"}
#: the keys of config.json that name a text sub-config (transformers ``get_text_config``)
_NESTED = ("text_config", "decoder", "generator", "text_encoder")


def _tree(sources: Any, rel: str) -> ast.Module | None:
    from mtp_audit.engines.vllm.launch.config_class import parsed

    data = sources.get(rel) if sources is not None else None
    return parsed(data) if isinstance(data, bytes) else None


def release_steps(sources: Any) -> tuple[dict[str, Any] | None, str]:
    """What the release's ``_get_and_verify_max_len`` and ``derive_max_model_len_and_key`` do, read from its tree:
    ``({"keys": [...], "yarn_original": bool, "unscaled": RoPE types}, evidence)``, or ``(None, why)`` when either
    differs from the steps this module follows (module docstring). Read once per pair of file contents."""
    model_data = sources.get(MODEL_REL) if sources is not None else None
    conv_data = sources.get(CONVERTOR_REL) if sources is not None else None
    if not isinstance(model_data, bytes) or not isinstance(conv_data, bytes):
        return None, f"{MODEL_REL} or {CONVERTOR_REL} was not read"
    return _steps_of(model_data, conv_data)


@lru_cache(maxsize=16)
def _steps_of(model_data: bytes, conv_data: bytes) -> tuple[dict[str, Any] | None, str]:
    sources = {MODEL_REL: model_data, CONVERTOR_REL: conv_data}
    model = _tree(sources, MODEL_REL)
    fn = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "_get_and_verify_max_len"), None) \
        if model is not None else None
    if fn is None:
        return None, f"{MODEL_REL} has no readable _get_and_verify_max_len"
    steps = _assignments(fn, "derived_max_model_len")
    if not steps or any(s not in _KNOWN_STEPS | {_YARN_STEP} for s in steps):
        return None, f"{MODEL_REL}:{fn.lineno} _get_and_verify_max_len sets the length in a way not followed here"
    if any(s not in _FACTOR_STEPS for s in _assignments(fn, "scaling_factor")):
        return None, f"{MODEL_REL}:{fn.lineno} takes the RoPE scaling factor from elsewhere"
    if "max_model_len > derived_max_model_len" not in ast.unparse(fn):
        return None, f"{MODEL_REL}:{fn.lineno} does not compare max_model_len with the derived length"
    keys, why = _possible_keys(sources)
    if keys is None:
        return None, why
    return {"keys": keys, "yarn_original": _YARN_STEP in steps, "unscaled": _unscaled_types(fn)}, f"{MODEL_REL}:{fn.lineno}; {why}"


def _unscaled_types(fn: ast.FunctionDef) -> frozenset[str] | None:
    """The RoPE types whose ``factor`` the release does not apply (``if rope_type not in ("su", "longrope", ...)``:
    0.34.0 ``vllm/config/model.py:2661``); ``None`` when that test is not found once."""
    found = [n.comparators[0] for n in ast.walk(fn) if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name)
             and n.left.id == "rope_type" and len(n.ops) == 1 and isinstance(n.ops[0], ast.NotIn)
             and isinstance(n.comparators[0], ast.Tuple)]
    elts = found[0].elts if len(found) == 1 and isinstance(found[0], ast.Tuple) else []
    names = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return frozenset(names) if names and len(names) == len(elts) else None


def _assignments(fn: ast.FunctionDef, name: str) -> list[str]:
    out = []
    for n in ast.walk(fn):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
        if any(name in {x.id for x in ast.walk(t) if isinstance(x, ast.Name)} for t in targets):
            out.append(ast.unparse(n))
    return out


def convertor_overrides(sources: Any, model_types: list[Any]) -> str | None:
    """Why the convertor class vLLM picks for one of ``model_types`` (``MODEL_ARCH_CONFIG_CONVERTORS.get(model_type,
    ModelArchConfigConvertorBase)``, 0.34.0 ``vllm/config/model.py:1050``) does not use the base
    ``derive_max_model_len_and_key`` (0.34.0 ``MossAudioModelArchConfigConvertor`` reads its language config), or
    ``None`` when each uses the base rule."""
    tree = _tree(sources, CONVERTOR_REL)
    if tree is None:
        return f"{CONVERTOR_REL} was not read"
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    table = next((n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict)
                  and "MODEL_ARCH_CONFIG_CONVERTORS" in ast.unparse(n.targets[0] if isinstance(n, ast.Assign) else n.target)), None)
    if table is None:
        return f"{CONVERTOR_REL} has no readable MODEL_ARCH_CONFIG_CONVERTORS"
    names = {k.value: v.id for k, v in zip(table.keys, table.values) if isinstance(k, ast.Constant) and isinstance(v, ast.Name)}
    for mt in model_types:
        if not isinstance(mt, str):
            return "a model_type is unknown"
        name, depth = names.get(mt, "ModelArchConfigConvertorBase"), 0
        while name != "ModelArchConfigConvertorBase" and depth < 8:
            node = classes.get(name)
            if node is None or len(node.bases) != 1 or not isinstance(node.bases[0], ast.Name):
                return f"{name} (model_type {mt}) was not read"
            if any(isinstance(f, ast.FunctionDef) and f.name == "derive_max_model_len_and_key" for f in node.body):
                return f"{name} ({CONVERTOR_REL}:{node.lineno}, model_type {mt}) derives the length its own way"
            name, depth = node.bases[0].id, depth + 1
    return None


def _possible_keys(sources: Any) -> tuple[list[str] | None, str]:
    tree = _tree(sources, CONVERTOR_REL)
    base = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelArchConfigConvertorBase"), None) \
        if tree is not None else None
    fns = [n for n in base.body if isinstance(n, ast.FunctionDef) and n.name == "derive_max_model_len_and_key"] \
        if base is not None else []
    if len(fns) != 1:
        return None, f"{CONVERTOR_REL}: ModelArchConfigConvertorBase.derive_max_model_len_and_key was not found"
    fn = fns[0]
    lists = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
             and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "possible_keys" and isinstance(n.value, ast.List)]
    keys = [e.value for e in lists[0].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)] if len(lists) == 1 else []
    text = ast.unparse(fn)
    if not keys or len(keys) != len(lists[0].elts) or "min(derived_max_model_len, max_len)" not in text \
            or "getattr(self.hf_text_config, 'model_max_length', None)" not in text:
        return None, f"{CONVERTOR_REL}:{fn.lineno} derive_max_model_len_and_key is not the least-of-keys rule followed here"
    return keys, f"{CONVERTOR_REL}:{fn.lineno} (keys {', '.join(keys)})"


def length_floor(view: Any, model: Any, cwd: Any, *, target: bool = False, model_type: Any = None,
                 machine_tf: tuple[str, str] | None = None) -> tuple[float | None, str]:
    """A lower bound of the length ``_get_and_verify_max_len`` derives for checkpoint ``model`` before any
    ``max_model_len`` is compared with it (``math.inf``: no length key at all, so a given ``max_model_len`` is taken
    as is), or ``(None, why)`` (module docstring). ``target``: the served model's own ``ModelConfig`` (no value given),
    whose default is ``int(derived)``, 2048 when no key is found (0.34.0 ``model.py:2623-2640``). ``model_type``: the
    draft's after ``hf_config_override`` (which picks the convertor class), when it differs from config.json's.
    ``machine_tf``: the serving machine's transformers, ``(version, where seen)`` when known exactly, which decides a
    transformers class's defaults (:func:`mtp_audit.engines.vllm.launch.config_class.length_defaults`)."""
    from mtp_audit.engines.vllm.launch.attn_launch import model_config_json
    from mtp_audit.engines.vllm.launch.config_class import length_defaults

    steps, why = release_steps(getattr(view, "sources", None))
    if steps is None:
        return None, why
    if not isinstance(model, str):
        return None, "the model is not a path"
    folder = Path(model).expanduser()
    if (folder if folder.is_absolute() else Path(cwd) / folder).joinpath("sentence_bert_config.json").exists():
        return None, "a sentence_bert_config.json sets the length (encoder_config)"
    cfg, problem = model_config_json(model, cwd)
    if not isinstance(cfg, dict):
        return None, problem or "config.json was not read"
    if any(k in cfg for k in _NESTED):
        return None, "a composite config: the length keys of its text config's class were not read"
    other = convertor_overrides(getattr(view, "sources", None), [cfg.get("model_type"), *([model_type] if model_type else [])])
    if other is not None:
        return None, other
    defaults, why = length_defaults(getattr(view, "sources", None), getattr(view, "requires", None), cfg.get("model_type"),
                                    [*steps["keys"], "position_embedding_type"], machine_tf)
    if defaults is None:
        return None, why
    if target and (cfg.get("position_embedding_type", defaults.get("position_embedding_type")) == "absolute"):
        return None, "position_embedding_type 'absolute': a pooling runner would read the tokenizer's model_max_length"
    derived = _least_key(cfg, defaults, steps["keys"])
    if derived is None:
        return None, "a length key is not an integer"
    rope, why_rope = _rope_floor(cfg, steps["yarn_original"])
    if rope is None:
        return None, why_rope
    floor = min(derived, rope)
    if target and floor == math.inf:
        floor = 2048
    return floor, f"the least length key of config.json and the class defaults ({why}), RoPE: {why_rope}"


def length_exact(view: Any, model: Any, cwd: Any, model_type: Any = None,
                 machine_tf: tuple[str, str] | None = None) -> tuple[float | None, str]:
    """The length ``_get_and_verify_max_len`` derives for a draft ``model`` exactly, where :func:`length_floor` is
    decided and no RoPE step can change it: every config.json dict with a ``factor`` names a RoPE type whose factor the
    release does not apply (0.34.0 ``model.py:2661``: ``yarn`` among them; 0.24.0 applies it to ``yarn``) and the
    release has no YaRN ``original_max_position_embeddings`` step for it (the config class adds no factor:
    :func:`mtp_audit.engines.vllm.launch.config_class.length_defaults`; ``machine_tf`` as there). ``(None, why)``
    otherwise."""
    floor, why = length_floor(view, model, cwd, model_type=model_type, machine_tf=machine_tf)
    steps, _ = release_steps(getattr(view, "sources", None))
    if floor is None or steps is None or steps["unscaled"] is None:
        return None, why
    from mtp_audit.engines.vllm.launch.attn_launch import model_config_json

    cfg, _problem = model_config_json(model, cwd)
    for d in _dicts(cfg):
        kind = d.get("rope_type", d.get("type"))
        if steps["yarn_original"] and kind == "yarn" or "factor" in d and kind not in steps["unscaled"]:
            return None, f"a RoPE {kind!r} factor may scale the length"
    return floor, why


def _least_key(cfg: dict[str, Any], defaults: dict[str, Any], keys: list[str]) -> float | None:
    """``derive_max_model_len_and_key`` on config.json values over the class defaults (``None``: a value that is not an
    integer)."""
    def value(key: str) -> Any:
        return cfg[key] if key in cfg else defaults.get(key)

    found = [value(k) for k in keys if value(k) is not None]
    mml = value("model_max_length")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in [*found, *([mml] if mml else [])]):
        return None
    return mml if mml else min(found, default=math.inf)


def _rope_floor(cfg: dict[str, Any], yarn_original: bool) -> tuple[float | None, str]:
    """What RoPE scaling can lower the length to: ``math.inf`` when every ``factor`` of config.json is null or at least
    1 (multiplying never lowers it), or the least YaRN ``original_max_position_embeddings`` where the release uses it;
    ``None`` for ``longrope``, a factor below 1 or not a number, or a YaRN dict without that key."""
    floor: float = math.inf
    for d in _dicts(cfg):
        kind = d.get("rope_type", d.get("type"))
        if kind == "longrope":
            return None, "longrope (the default length is original_max_position_embeddings)"
        f = d.get("factor")
        if f is not None and (isinstance(f, bool) or not isinstance(f, (int, float)) or f < 1):
            return None, f"a RoPE factor {f!r} is not a number of at least 1"
        if yarn_original and kind == "yarn":
            orig = d.get("original_max_position_embeddings")
            if isinstance(orig, bool) or not isinstance(orig, int):
                return None, "a YaRN RoPE without an integer original_max_position_embeddings"
            floor = min(floor, orig)
    return floor, "every factor is at least 1" + (f"; YaRN original length {floor}" if floor != math.inf else "")


def _dicts(x: Any) -> Any:
    if isinstance(x, dict):
        yield x
        for v in x.values():
            yield from _dicts(v)
    elif isinstance(x, list):
        for v in x:
            yield from _dicts(v)
