"""Whether the config class vLLM builds a checkpoint's ``hf_config`` from defines an attribute that the checkpoint's
``config.json`` does not hold: ``hf_config_override`` reads some MTP layer counts as ``getattr(hf_config, NAME,
default)`` (0.33.0 / 0.34.0 ``vllm/config/speculative.py`` ``qwen3_next_mtp``: ``getattr(hf_config,
"num_nextn_predict_layers", None)``), and a class attribute would answer where ``config.json`` is silent.

Which class: the release's own ``_CONFIG_REGISTRY`` (``vllm/transformers_utils/config.py``) when it names the
``model_type`` (0.24.0 ``qwen3_next="Qwen3NextConfig"`` at :121, class in ``vllm/transformers_utils/configs/qwen3_next.py``),
read from the release tree as data; else the transformers class the release's ``Requires-Dist: transformers`` admits,
answered only from :data:`TRANSFORMERS_CHECKED` (what was read in those transformers wheels) and only when every
minor release the requirement admits was checked. Nothing is imported.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Any

#: model_type -> (transformers class, the transformers releases whose source was read, the attributes it defines none
#: of in every one of them, neither in the class nor in ``PreTrainedConfig``: configuration_utils.py). Read from the
#: wheels (``transformers/models/qwen3_next/configuration_qwen3_next.py``: no ``num_nextn_predict_layers``, no
#: ``attribute_map``) on 2026-12-05.
TRANSFORMERS_CHECKED: dict[str, tuple[str, tuple[str, ...], frozenset[str]]] = {
    "qwen3_next": ("Qwen3NextConfig", ("5.16.1", "5.17.0", "5.18.0", "5.19.0", "5.20.2", "5.21.1", "5.22.2", "5.25.0"),
                   frozenset({"num_nextn_predict_layers"})),
}

CONFIG_REL = "vllm/transformers_utils/config.py"
CONFIGS_INIT_REL = "vllm/transformers_utils/configs/__init__.py"
_BASES = {"PretrainedConfig", "PreTrainedConfig"}


def _parse(sources: Any, rel: str) -> ast.Module | None:
    data = sources.get(rel) if sources is not None else None
    return parsed(data) if isinstance(data, bytes) and data else None


@lru_cache(maxsize=32)
def parsed(data: bytes) -> ast.Module | None:
    """``ast.parse`` of a release file's bytes, once per content (the trees are read, never changed); ``None`` when it
    does not parse."""
    try:
        return ast.parse(data.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, MemoryError, RecursionError):
        return None


def _assigned(tree: ast.Module, name: str) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def registry_class(sources: Any, model_type: str) -> tuple[str | None, str]:
    """The class name the release's ``_CONFIG_REGISTRY`` gives ``model_type`` (``LazyConfigDict(model_type="Class",
    ...)`` or a dict literal) and ``file:line`` of that entry; ``(None, why)`` when it names none or cannot be read."""
    tree = _parse(sources, CONFIG_REL)
    value = _assigned(tree, "_CONFIG_REGISTRY") if tree is not None else None
    if value is None:
        return None, f"{CONFIG_REL} has no readable _CONFIG_REGISTRY"
    pairs: list[tuple[Any, ast.expr]] = []
    if isinstance(value, ast.Call):
        pairs = [(k.arg, k.value) for k in value.keywords if k.arg]
        value = value.args[0] if value.args and isinstance(value.args[0], ast.Dict) else value
    if isinstance(value, ast.Dict):
        pairs += [(k.value, v) for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant)]
    for key, v in pairs:
        if key == model_type:
            name = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else v.id if isinstance(v, ast.Name) else None
            return name, f"{CONFIG_REL}:{v.lineno}"
    return None, f"_CONFIG_REGISTRY ({CONFIG_REL}) names no {model_type}"


def _class_module(sources: Any, cls: str) -> str | None:
    """The file of ``cls`` under ``vllm/transformers_utils/configs/`` (``_CLASS_TO_MODULE`` or ``from .mod import cls``)."""
    tree = _parse(sources, CONFIGS_INIT_REL)
    if tree is None:
        return None
    table = _assigned(tree, "_CLASS_TO_MODULE")
    if isinstance(table, ast.Dict):
        for k, v in zip(table.keys, table.values):
            if isinstance(k, ast.Constant) and k.value == cls and isinstance(v, ast.Constant) and isinstance(v.value, str):
                return v.value.replace(".", "/") + ".py"
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module and any(a.name == cls for a in node.names):
            return f"vllm/transformers_utils/configs/{node.module.replace('.', '/')}.py"
    return None


def _mentions(node: ast.AST, name: str) -> bool:
    """Whether ``name`` is a name, attribute, parameter or string operand anywhere in ``node`` (documentation strings,
    which are statements of their own, do not count)."""
    docs = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for n in ast.walk(node):
        if id(n) in docs:
            continue
        if isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.Attribute) and n.attr == name \
                or isinstance(n, ast.arg) and n.arg == name or isinstance(n, ast.Constant) and n.value == name:
            return True
    return False


def _own_class_defines(sources: Any, cls: str, name: str) -> tuple[bool | None, str]:
    rel = _class_module(sources, cls)
    tree = _parse(sources, rel) if rel else None
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree is not None else None
    if node is None:
        return None, f"the class {cls} was not found in the release's vllm/transformers_utils/configs"
    bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]
    if not bases or any(b not in _BASES for b in bases):
        return None, f"{cls} ({rel}:{node.lineno}) derives from {', '.join(bases) or 'nothing'}: its inherited attributes were not read"
    if _mentions(node, name):
        return True, f"{cls} ({rel}:{node.lineno}) names {name}"
    return False, f"the release's own {cls} ({rel}:{node.lineno}, a PretrainedConfig) does not define {name}"


def own_class_reads(sources: Any, model_type: Any, name: str) -> tuple[bool | None, str]:
    """Whether reading attribute ``name`` on the ``hf_config`` of a ``model_type`` checkpoint succeeds because the
    release's own config class (``_CONFIG_REGISTRY``, a ``PretrainedConfig``) defines it: a ``@property`` of that name
    in the class body (0.34.0 ``vllm/transformers_utils/configs/kimi_k3.py`` ``KimiK3Config.vocab_size`` returns
    ``self.text_config.vocab_size``) or an unconditional ``self.NAME = ...`` at the top level of its ``__init__``.
    ``(True, evidence)``, or ``(None, why)``: a transformers class, another base, or a conditional definition is not
    read here."""
    if not isinstance(model_type, str):
        return None, "the checkpoint's model_type is unknown"
    cls, where = registry_class(sources, model_type)
    rel = _class_module(sources, cls) if cls is not None else None
    tree = _parse(sources, rel) if rel else None
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree is not None else None
    if node is None:
        return None, where if cls is None else f"the class {cls} was not found in the release's vllm/transformers_utils/configs"
    bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]
    if not bases or any(b not in _BASES for b in bases):
        return None, f"{cls} ({rel}:{node.lineno}) derives from {', '.join(bases) or 'nothing'}"
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == name and any(
                isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
            return True, f"{cls}.{name} is a property ({rel}:{item.lineno})"
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            for st in item.body:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
                if any(isinstance(t, ast.Attribute) and t.attr == name and isinstance(t.value, ast.Name)
                       and t.value.id == "self" for t in targets):
                    return True, f"{cls}.__init__ sets self.{name} ({rel}:{st.lineno})"
    return None, f"{cls} ({rel}:{node.lineno}) defines no {name} property or unconditional assignment"


def _admitted_minors(requires: list[str] | None) -> set[tuple[int, int]] | None:
    """The (major, minor) releases of transformers the release's ``Requires-Dist`` admits (``None``: unbounded, no
    requirement or not read)."""
    for line in requires or []:
        minors = _minors_of(line)
        if minors is not False:
            return minors if isinstance(minors, set) else None
    return None


@lru_cache(maxsize=64)
def _minors_of(line: str) -> Any:
    """:func:`_admitted_minors` for one ``Requires-Dist`` line: ``False`` when it is not an unconditional transformers
    requirement, ``None`` when it admits a transformers 99, else the admitted (major, minor) pairs (4.x to 6.x)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import Version

    try:
        req = Requirement(line)
    except InvalidRequirement:
        return False
    if req.name.lower() != "transformers" or req.marker:
        return False
    if req.specifier.contains(Version("99.0.0")):
        return None
    return {(ma, mi) for ma in range(4, 7) for mi in range(80) for pa in range(6)
            if req.specifier.contains(Version(f"{ma}.{mi}.{pa}"), prereleases=False)}


def class_defines(sources: Any, requires: list[str] | None, model_type: Any, name: str) -> tuple[bool | None, str]:
    """Whether the class vLLM builds the ``hf_config`` of a ``model_type`` checkpoint from defines attribute ``name``
    (module docstring): ``(False, evidence)``, ``(True, evidence)`` or ``(None, why it is not decided)``."""
    if not isinstance(model_type, str):
        return None, "the checkpoint's model_type is unknown"
    cls, where = registry_class(sources, model_type)
    if cls is not None:
        return _own_class_defines(sources, cls, name)
    if "no readable" in where:
        return None, where
    known = TRANSFORMERS_CHECKED.get(model_type)
    if known is None:
        return None, f"{model_type} is built by a transformers class whose attributes mtp-audit has not read"
    tf_cls, versions, absent = known
    if name not in absent:
        return None, f"transformers {tf_cls}: {name} was not checked"
    minors = _admitted_minors(requires)
    if not _every_admitted_read(minors, versions):
        return None, (f"transformers {tf_cls} defines no {name} in {', '.join(versions)}, but this release's transformers "
                      "requirement admits releases not checked" + ("" if minors is not None else " (or was not read)"))
    return False, (f"transformers {tf_cls} defines no {name} in any release this vLLM admits (Requires-Dist "
                   f"transformers; read in {', '.join(versions)})")


def imported_int(sources: Any, spec_text: str | None, name: str) -> tuple[int | None, str]:
    """A module-level integer constant that ``hf_config_override`` imports by name (0.34.0 ``speculative.py:930``:
    ``from vllm.model_executor.models.mimo_v2_mtp import _MIMO_V2_FLASH_NUM_MTP_LAYERS``, ``= 1`` at
    ``mimo_v2_mtp.py:54``), read from the release tree: ``(value, "NAME = value (file:line)")``, or ``(None, why)``."""
    try:
        tree = ast.parse(spec_text) if spec_text else None
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        tree = None
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module
            and n.module.startswith("vllm.") and any(a.name == name and a.asname is None for a in n.names)} if tree else set()
    if len(mods) != 1:
        return None, f"{name}: not imported from exactly one vllm module"
    rel = mods.pop().replace(".", "/") + ".py"
    mod = _parse(sources, rel)
    value = _assigned(mod, name) if mod is not None else None
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.value, f"{name} = {value.value} ({rel}:{value.lineno})"
    return None, f"{name}: not an integer constant of {rel}"


#: the attributes :func:`length_defaults` answers for: ``derive_max_model_len_and_key``'s ``possible_keys`` (0.24.0 to
#: 0.34.0 ``model_arch_config_convertor.py``) and ``position_embedding_type`` (``get_and_verify_max_len``)
LENGTH_KEYS = frozenset({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                         "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
                         "position_embedding_type"})
_TF_READ = ("5.16.1", "5.17.0", "5.18.0", "5.19.0", "5.20.2", "5.21.1", "5.22.2", "5.25.0")
#: model_type -> (transformers class, the releases read, {length attribute: its default} for the attributes of
#: :data:`LENGTH_KEYS` the class defines). Read in the wheels on 2026-12-05 (``transformers/models/X/configuration_X.py``
#: and ``configuration_utils.py``; 5.25.0, the one vLLM 0.24.0's environment installs, read the same way: the fields at
#: ``configuration_deepseek_v3.py:105``, ``deepseek_v4`` :139, ``glm_moe_dsa`` :109, ``minimax_m2`` :79,
#: ``mimo_v2_flash`` :81, ``mixtral`` :71, ``nemotron_h`` :110, ``qwen3_moe`` :84, ``qwen3_next`` :95, and
#: ``RotaryEmbeddingConfigMixin`` / ``integrations/heterogeneity`` as in 5.22.2): each class derives from ``PreTrainedConfig`` alone, defines
#: ``max_position_embeddings`` as a dataclass field with a literal default and no other length attribute, no
#: ``attribute_map`` entry names one, no string ``"factor"`` or ``"original_max_position_embeddings"`` appears in it (its
#: RoPE defaults add no scaling factor), and ``PreTrainedConfig`` names none of them, in every release listed.
TRANSFORMERS_LENGTH_DEFAULTS: dict[str, tuple[str, tuple[str, ...], dict[str, int]]] = {
    "deepseek_v3": ("DeepseekV3Config", _TF_READ, {"max_position_embeddings": 4096}),
    "deepseek_v4": ("DeepseekV4Config", _TF_READ, {"max_position_embeddings": 1048576}),
    "glm_moe_dsa": ("GlmMoeDsaConfig", _TF_READ, {"max_position_embeddings": 202752}),
    "minimax_m2": ("MiniMaxM2Config", _TF_READ, {"max_position_embeddings": 196608}),
    "mimo_v2_flash": ("MiMoV2FlashConfig", _TF_READ, {"max_position_embeddings": 131072}),
    "mixtral": ("MixtralConfig", _TF_READ, {"max_position_embeddings": 4096 * 32}),
    "nemotron_h": ("NemotronHConfig", _TF_READ, {"max_position_embeddings": 4096}),
    "qwen3_moe": ("Qwen3MoeConfig", _TF_READ, {"max_position_embeddings": 32768}),
    "qwen3_next": ("Qwen3NextConfig", _TF_READ, {"max_position_embeddings": 32768}),
}


def length_defaults(sources: Any, requires: list[str] | None, model_type: Any, keys: list[str],
                    machine_tf: tuple[str, str] | None = None) -> tuple[dict[str, Any] | None, str]:
    """The defaults the config class vLLM builds a ``model_type`` checkpoint's ``hf_config`` from gives the length
    attributes ``keys`` when config.json leaves them out: ``({key: default}, evidence)`` for the keys the class defines
    (a key it does not define is absent), or ``(None, why)`` when that is not decided. The release's own class is read
    from its tree (:func:`_own_length_defaults`); a transformers class only from :data:`TRANSFORMERS_LENGTH_DEFAULTS`
    and only when every minor release the release's ``Requires-Dist: transformers`` admits was read, or when the
    serving machine's transformers is known exactly (``machine_tf``: ``(version, where it was seen)``, from
    :func:`machine_transformers`) and is one of the releases read."""
    if not isinstance(model_type, str):
        return None, "the checkpoint's model_type is unknown"
    if any(k not in LENGTH_KEYS for k in keys):
        return None, f"length keys not read in any config class: {sorted(set(keys) - LENGTH_KEYS)}"
    cls, where = registry_class(sources, model_type)
    if cls is not None:
        return _own_length_defaults(sources, cls, keys)
    if "no readable" in where:
        return None, where
    known = TRANSFORMERS_LENGTH_DEFAULTS.get(model_type)
    if known is None:
        return None, f"{model_type} is built by a transformers class whose length defaults mtp-audit has not read"
    tf_cls, versions, defaults = known
    values = ", ".join(f"{k}={v}" for k, v in defaults.items())
    picked = {k: v for k, v in defaults.items() if k in keys}
    if _every_admitted_read(_admitted_minors(requires), versions):
        return picked, f"transformers {tf_cls} ({values}; read in every admitted release)"
    if machine_tf is not None and _same_release(machine_tf[0], versions):
        return picked, f"transformers {tf_cls} ({values}; read in {machine_tf[0]}, installed on the machine [{machine_tf[1]}])"
    seen = (f"; the machine's transformers {machine_tf[0]} was not read" if machine_tf is not None else "")
    return None, (f"transformers {tf_cls}'s length defaults were read in {versions[0]} to {versions[-1]}, but this "
                  f"release's transformers requirement admits releases not read{seen}")


def _every_admitted_read(minors: set[tuple[int, int]] | None, versions: tuple[str, ...]) -> bool:
    """Whether every ``(major, minor)`` transformers release the requirement admits (``minors``, from
    :func:`_admitted_minors`; ``None``: not read) is among the releases read, ``versions``."""
    return minors is not None and minors <= {tuple(int(x) for x in v.split(".")[:2]) for v in versions}


def _same_release(version: str, versions: tuple[str, ...]) -> bool:
    """Whether ``version`` (the machine's) is one of the releases read, ``versions`` (PEP 440 equality: ``5.25`` is
    ``5.25.0``; a local tag, a dev or post release is another release); ``False`` for a version PEP 440 cannot read."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return any(v == Version(r) for r in versions)


def machine_transformers(machine: Any) -> tuple[str, str] | None:
    """The serving machine's transformers as ``(version, where it was seen)`` when known exactly (the preflight's
    :class:`~mtp_audit.preflight.typed.MachineAnswer` ``packages``: ``importlib.metadata``, a pip list / pip freeze dump),
    else ``None`` (no machine facts, not recorded, not installed)."""
    from mtp_audit.engines.vllm.distributions import TRANSFORMERS

    k = getattr(machine, "packages", {}).get(TRANSFORMERS) if machine is not None else None
    if k is None or k.extent != "exact" or not isinstance(k.value, str):
        return None
    return k.value, str(k.source)


def _own_length_defaults(sources: Any, cls: str, keys: list[str]) -> tuple[dict[str, Any] | None, str]:
    """:func:`length_defaults` for the release's own class ``cls`` (``vllm/transformers_utils/configs/``): a key it
    names only as an ``__init__`` parameter with a literal default stored by an unconditional ``self.KEY = KEY`` has
    that default; a key it does not name is absent; any other use of a key, or a RoPE ``"factor"`` /
    ``"original_max_position_embeddings"`` it could set, is not decided."""
    rel = _class_module(sources, cls)
    tree = _parse(sources, rel) if rel else None
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree is not None else None
    if node is None:
        return None, f"the class {cls} was not found in the release's vllm/transformers_utils/configs"
    bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]
    if not bases or any(b not in _BASES for b in bases):
        return None, f"{cls} ({rel}:{node.lineno}) derives from {', '.join(bases) or 'nothing'}"
    if _mentions(node, "factor") or _mentions(node, "original_max_position_embeddings"):
        return None, f"{cls} ({rel}:{node.lineno}) may set a RoPE factor"
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    out: dict[str, Any] = {}
    for key in keys:
        if not _mentions(node, key):
            continue
        value = _plain_init_default(init, key) if init is not None else None
        if value is None or sum(1 for _ in _uses(node, key)) != 3:
            return None, f"{cls} ({rel}:{node.lineno}) sets {key} in a way not read here"
        out[key] = value[0]
    return out, f"the release's own {cls} ({rel}:{node.lineno}: {', '.join(f'{k}={v}' for k, v in out.items()) or 'no length key'})"


def _uses(node: ast.AST, name: str) -> Any:
    docs = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for n in ast.walk(node):
        if id(n) not in docs and (isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.Attribute) and n.attr == name
                                  or isinstance(n, ast.arg) and n.arg == name or isinstance(n, ast.Constant) and n.value == name):
            yield n


def _plain_init_default(init: ast.FunctionDef, key: str) -> tuple[Any] | None:
    """``(default,)`` when ``__init__`` takes ``key`` with a literal int/None default and stores it with a top-level
    ``self.key = key`` (three uses in all: the parameter, the attribute, the name); else ``None``."""
    args = init.args.args + init.args.kwonlyargs
    defaults = [None] * (len(init.args.args) - len(init.args.defaults)) + list(init.args.defaults) + list(init.args.kw_defaults)
    for a, d in zip(args, defaults):
        if a.arg == key and isinstance(d, ast.Constant) and (d.value is None or type(d.value) is int):
            stored = any(isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Attribute)
                         and st.targets[0].attr == key and isinstance(st.targets[0].value, ast.Name)
                         and st.targets[0].value.id == "self" and isinstance(st.value, ast.Name) and st.value.id == key
                         for st in init.body)
            return (d.value,) if stored else None
    return None
