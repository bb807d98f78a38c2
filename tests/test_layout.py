"""The tree is the architecture: no import cycle between modules, no module takes another's ``_private``
names, rule modules hold declarations only, byte sources know no analyzer.

Every ``import`` / ``from ... import`` in ``mtp_audit/`` is read with ``ast`` (module level and inside
functions alike: a lazy import still ties two modules together). ``from pkg import name`` counts as an
edge to ``pkg.name`` when that is a module, else to ``pkg`` itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "mtp_audit"


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _edges(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """``[(imported module, names taken from it)]`` for one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("mtp_audit")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("mtp_audit"):
                continue
            plain = []
            for a in node.names:
                sub = f"{mod}.{a.name}"
                if sub in MODULES:
                    out.append((sub, []))
                else:
                    plain.append(a.name)
            if plain:
                out.append((mod, plain))
    return out


GRAPH = {m: _edges(m, p) for m, p in MODULES.items()}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in GRAPH.get(v, []):
            if w not in MODULES or w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in MODULES:
        if m not in index:
            visit(m)
    return out


def test_graph_is_read():
    # a sanity check that the reader sees real edges: the CLI renders through the formats package
    assert ("mtp_audit.formats", ["render"]) in GRAPH["mtp_audit.cli.emit"]
    assert len(MODULES) > 60


def test_no_import_cycle():
    assert _cycles() == []


def test_no_private_names_across_modules():
    bad = [(m, target, n) for m, edges in GRAPH.items() for target, names in edges for n in names
           if n.startswith("_") and not n.startswith("__") and target != m]
    assert bad == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.endswith(".rules") and m != "mtp_audit.report.rules"
                                          and m != "mtp_audit.cli.rules"))
def test_rule_modules_hold_declarations_only(module):
    """A rules module imports the report model (its questions too), the rule registry and fixture builders, never an analyzer
    (the examples run through ``<package>.examples``)."""
    allowed = ("mtp_audit.report", "mtp_audit.report.model", "mtp_audit.report.rules", "mtp_audit.report.questions", "mtp_audit.synth",
               "mtp_audit.synth.shards", "mtp_audit.synth.launch", "mtp_audit.synth.dumps", "mtp_audit.checkpoint.layouts", "mtp_audit.preflight.facts",
               "mtp_audit.checkpoint.gguf_rules", "mtp_audit.synth.gguf",
               "mtp_audit.compare.gguf_rules")
    assert [t for t, _ in GRAPH[module] if t not in allowed] == []
    pkg = module.rpartition(".")[0]
    # an engine's launch rules run their examples through the engine-neutral combiner (mtp_audit.launch.examples)
    import importlib

    from mtp_audit.report.rules import EXAMPLE_MODULES

    analyzers = {r.analyzer for r in importlib.import_module(module).RULES}
    examples = {EXAMPLE_MODULES.get(a, f"{pkg}.examples") for a in analyzers}
    assert examples <= set(MODULES)


#: Leaf modules any layer may use: they import nothing else of mtp_audit.
LEAVES = ("mtp_audit.errors", "mtp_audit.progress", "mtp_audit.known", "mtp_audit.readonly", "mtp_audit.valueclass")


def test_sources_know_no_analyzer():
    """Byte sources import only each other, the bounded-read helpers, the error type and the progress bar."""
    for m, edges in GRAPH.items():
        if m.startswith("mtp_audit.sources"):
            assert [t for t, _ in edges if not t.startswith(("mtp_audit.sources", *LEAVES))
                    and t != "mtp_audit"] == [], m


def test_leaves_import_nothing_of_ours():
    for m in LEAVES:
        assert [t for t, _ in GRAPH[m]] == [], m


#: Besides these, engines answer the checkpoint's typed heads evidence (mtp_audit.checkpoint.heads).
#: The preflight modules engines may use: the machine model, CUDA visibility, the kernel-check interface (its
#: check context, the parsed launch it holds, the capability matrix and the ELF cubin readers), and what the platform
#: checks off NVIDIA share (the platform and its device tables, the machine's gfx targets and NPU rows, the AMD FP4
#: path reader).
PREFLIGHT_SHARED = ("mtp_audit.preflight.facts", "mtp_audit.preflight.visible", "mtp_audit.preflight.kernels",
                    "mtp_audit.preflight.analyze", "mtp_audit.preflight.launch", "mtp_audit.preflight.matrix",
                    "mtp_audit.preflight.elf", "mtp_audit.preflight.platforms", "mtp_audit.preflight.vendors",
                    "mtp_audit.preflight.typed")
#: The typed answers analyzers hand each other (:mod:`mtp_audit.checkpoint.typed`, :mod:`mtp_audit.preflight.typed`).
TYPED_ANSWERS = ("mtp_audit.checkpoint.typed", "mtp_audit.checkpoint.typed_gguf", "mtp_audit.preflight.typed")


def test_analyzers_reach_each_other_through_public_packages():
    """An analyzer package imports another analyzer only through that package's public entry point
    (``mtp_audit.checkpoint``, ``mtp_audit.preflight``, ``mtp_audit.engines.sglang``), or its rules."""
    analyzers = ("mtp_audit.checkpoint", "mtp_audit.compare", "mtp_audit.preflight", "mtp_audit.engines.sglang",
                 "mtp_audit.engines.vllm")
    bad = []
    for m, edges in GRAPH.items():
        own = next((a for a in analyzers if m == a or m.startswith(a + ".")), None)
        if own is None:
            continue
        for t, _ in edges:
            other = next((a for a in analyzers if t == a or t.startswith(a + ".")), None)
            # besides rules and layouts, the machine's data model (preflight.facts) and the CUDA device visibility
            # functions over it (preflight.visible) are shared: engines' launch checks read the GPUs through them;
            # an engine's FP4 kernel checks (engines/<engine>/kernels.py) implement the preflight's KernelChecks
            # over its check context, with its capability matrix and ELF readers; the typed answers are shared too
            if other and other != own and t != other and not t.endswith((".rules", ".layouts")) \
                    and t not in PREFLIGHT_SHARED and t not in TYPED_ANSWERS and t != "mtp_audit.checkpoint.heads":
                bad.append((m, t))
    assert bad == []


ENGINE_PACKAGES = sorted({m.split(".")[2] for m in MODULES if m.startswith("mtp_audit.engines.") and m.count(".") >= 3
                          and (PKG / "engines" / m.split(".")[2]).is_dir()} - {"code"})


def _engine_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["mtp_audit", "engines"] and parts[2] in ENGINE_PACKAGES else (
        parts[2] if len(parts) == 3 and parts[:2] == ["mtp_audit", "engines"] and parts[2] in ENGINE_PACKAGES else None)


def test_engines_import_nothing_from_launch():
    """An engine answers questions; the combiner (mtp_audit.launch) asks them: never the other way round."""
    bad = [(m, t) for m, edges in GRAPH.items() if m.startswith("mtp_audit.engines") for t, _ in edges
           if t == "mtp_audit.launch" or t.startswith("mtp_audit.launch.")]
    assert bad == []


def test_no_engine_imports_another():
    """Shared engine code lives in mtp_audit/engines/ (base, registry, argv, outcome, parallel) or engines/code/."""
    assert len(ENGINE_PACKAGES) >= 2
    bad = []
    for m, edges in GRAPH.items():
        own = _engine_of(m)
        if own is None:
            continue
        bad += [(m, t) for t, _ in edges if _engine_of(t) not in (None, own)]
    assert bad == []


def test_shared_engine_code_imports_no_engine():
    """``engines/code`` and the shared engine modules know no engine (the registry is the one place that lists them)."""
    shared = [m for m in MODULES if m.startswith("mtp_audit.engines") and _engine_of(m) is None
              and m != "mtp_audit.engines.registry"]
    bad = [(m, t) for m in shared for t, _ in GRAPH[m] if _engine_of(t) is not None]
    assert bad == []


def test_launch_names_no_engine():
    """The combiner picks engines through the registry; no engine package is imported by mtp_audit.launch."""
    bad = [(m, t) for m, edges in GRAPH.items() if m == "mtp_audit.launch" or m.startswith("mtp_audit.launch.")
           for t, _ in edges if _engine_of(t) is not None]
    assert bad == []


def test_runtime_names_no_engine():
    """``mtp-audit log`` reads each engine through the dialects the registry lends (engines/<engine>/logdialect.py);
    no module of mtp_audit.runtime imports a particular engine package."""
    bad = [(m, t) for m, edges in GRAPH.items() if m.startswith("mtp_audit.runtime") for t, _ in edges
           if _engine_of(t) is not None]
    assert bad == []


#: The longest a function may be, ``def`` line to last line, docstring included: longer ones are several named steps.
MAX_FUNCTION_LINES = 80


def test_no_function_over_80_lines():
    """Every function in mtp_audit/ reads as named steps; rule tables and generated data are module-level data, not
    functions, so nothing is exempt."""
    long = []
    for m, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{m}.{node.name}: {n} lines")
    assert long == []


def test_code_names_behaviour_not_issue_numbers():
    """Docstrings and comments name the behaviour ("the NEXTN -> EAGLE alias"), never a tracker entry of this
    project ("issue 11"); engines' own issue and PR numbers (``vllm#55323``, ``PR #27736``) are sources and stay."""
    import re

    ours = re.compile(r"\bissues? \d+\b", re.IGNORECASE)
    bad = [f"{m}:{i}" for m, path in MODULES.items()
           for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if ours.search(line)]
    assert bad == []


#: The analyzers: what a checkpoint holds, what a machine is, what a log says, how two checkpoints compare, and the
#: launch combiner. None of them imports a particular engine: engines answer through their hooks, reached by id
#: through the registry (which lists them and imports one only when asked).
ANALYZER_PACKAGES = ("mtp_audit.checkpoint", "mtp_audit.preflight", "mtp_audit.runtime", "mtp_audit.compare",
                     "mtp_audit.launch")

#: Imports of a particular engine still made by an analyzer, each with the reason it has not moved yet. The list
#: may only shrink.
ENGINE_IMPORTS_LEFT: set[tuple[str, str]] = set()


def test_analyzers_import_no_particular_engine():
    found = {(m, t) for m, edges in GRAPH.items() if m.startswith(ANALYZER_PACKAGES) for t, _ in edges
             if _engine_of(t) is not None}
    assert found - ENGINE_IMPORTS_LEFT == set()
    assert ENGINE_IMPORTS_LEFT - found == set(), "an import moved out: drop it from ENGINE_IMPORTS_LEFT"


#: Readers of what users paste (environment dumps, prose): they must know the words engines print, so they are not
#: counted below.
PASTE_READERS = ("mtp_audit.preflight.envdump", "mtp_audit.preflight.freeform", "mtp_audit.preflight.freeform_vendors",
                 "mtp_audit.preflight.vendor_dumps")
_ENGINE_WORDS = {"sglang", "vllm", "llamacpp", "llama.cpp", "trtllm", "tensorrt-llm", "tensorrt_llm", "llama-cpp"}
_ENGINE_NAME = ("sglang", "vllm", "llamacpp", "llama_cpp", "trtllm", "tensorrt")

#: Engine-specific names (string constants equal to an engine id, identifiers naming an engine) still held by the
#: analyzers outside engines/ and cli/. The goal is at most 40; this bound may only go down as knowledge moves into
#: the engine packages behind their hooks (430 before the kernels, heads, launch-syntax and log-dialect hooks, 215
#: after them; 165 once the metrics samples moved into the log dialects and the log analyzer named engines only by
#: the registry's ids; 140 once the engines' platform checks off NVIDIA and FP4 quantization names moved behind
#: ``KernelChecks.platform_checks`` and ``fp4_formats``; 98 once the launch combiner took release targets by
#: engine id and the checkpoint's engine knowledge moved behind the list_overrides and quantization_method hooks; 6 once the preflight's own modules lost theirs: rules,
#: engine facts, engine choice, distributions).
MAX_ENGINE_NAMES_IN_ANALYZERS = 6


def _engine_names(path: Path) -> int:
    n = 0
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in _ENGINE_WORDS:
            n += 1
        else:
            name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                    else node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                    else node.arg if isinstance(node, ast.arg) else "")
            n += any(w in name.lower() for w in _ENGINE_NAME)
    return n


def test_engine_knowledge_stays_in_the_engine_packages():
    counted = {m: _engine_names(p) for m, p in MODULES.items()
               if m.startswith(ANALYZER_PACKAGES) and m not in PASTE_READERS}
    assert sum(counted.values()) <= MAX_ENGINE_NAMES_IN_ANALYZERS, sorted(counted.items(), key=lambda kv: -kv[1])[:10]


#: ``(facts or {}).get(...)``: an analyzer's answer read back as an untyped dict, each reader guessing its shape. They
#: give way to the typed answers (:mod:`mtp_audit.known`, the checkpoint's and the machine's answers); this bound may
#: only go down (72 before the typed answers were started, 85 when this check was added, 41 once SGLang, TensorRT-LLM,
#: llama.cpp and the shared engine code read the typed answers, 28 once vLLM read its release's facts through
#: VllmRelease, 11 once its launch read the checkpoint's and the machine's typed answers too; the goal is 20).
MAX_UNTYPED_FACT_READS = 11
_UNTYPED_READ = re.compile(r"\([a-z_.]* or \{\}\)\.get\(")


def test_answers_are_not_read_back_as_untyped_dicts():
    counted = {m: len(_UNTYPED_READ.findall(p.read_text(encoding="utf-8"))) for m, p in MODULES.items()}
    assert sum(counted.values()) <= MAX_UNTYPED_FACT_READS, sorted(counted.items(), key=lambda kv: -kv[1])[:10]


#: Modules that read text someone else wrote (the paste readers above): not counted below; neither is the
#: ``.message`` of an exception (``raised.message``, ``exc.message``: an engine's replayed exception, click's usage
#: error), which is the words of the code that raised it, not a finding's or a gap's.
MESSAGE_READERS = PASTE_READERS
_EXCEPTION_NAMES = {"raised", "exc"}
#: Text tests on a ``.message`` (``"x" in g.message``, ``f.message.startswith(...)``, ``PATTERN.search(f.message)``):
#: a decision taken by reading an analyzer's own words, which a consumer must make by a typed field instead (a
#: finding's or gap's ``question``, a gap's ``why_open``, a rule id, the evidence). This bound may only go down (20 when
#: this check was added, one of them an exception's message; 14 once ``--no-machine`` scoped gaps by ``why_open``, the vLLM V1-runner note was dropped by
#: its gap, SGLang's draft gaps were worded by where they come from, SGLang's noted unresolved choices were counted by
#: their flag and its release torch pin (MTP209) was told by its evidence; 12 once vLLM's pydantic refusal was a flag of
#: the launch; 11 once SGLang's hook MTP300 was told by its evidence; 10 once vLLM's fact-step gaps that the replay
#: answers were recorded as such; 8 once a compared SGLang launch counted the rewrites that apply from the diff's own
#: answer; 2 once the SGLang upgrade's summary lines sorted its findings by what they concern, not by their words).
#: Left: to render a gap, whether its message already names its path.
MAX_MESSAGE_TEXT_TESTS = 2
_TEXT_METHODS = {"startswith", "endswith", "find", "rfind", "index", "rindex", "split", "rsplit", "partition",
                 "rpartition", "count", "replace", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn"}


def _is_message(node: ast.AST) -> bool:
    """Whether ``node`` is ``X.message`` of something not named as an exception (:data:`_EXCEPTION_NAMES`)."""
    if not (isinstance(node, ast.Attribute) and node.attr == "message"):
        return False
    owner = node.value
    name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return name not in _EXCEPTION_NAMES


def _message_text_tests(path: Path) -> list[int]:
    """Lines of ``path`` that test a ``.message`` as text: ``in`` / ``not in`` with a ``.message`` on either side, a
    string method called on one, or a pattern method given one."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
            hit = any(_is_message(x) for x in (node.left, *node.comparators))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _TEXT_METHODS:
            hit = _is_message(node.func.value) or any(_is_message(a) for a in node.args)
        else:
            hit = False
        lines += [node.lineno] if hit else []
    return lines


def test_message_text_tests_are_counted(tmp_path: Path) -> None:
    """The counter sees each form it looks for, and not a message used whole (compared, listed, joined)."""
    probe = tmp_path / "probe.py"
    probe.write_text('a = "not examined" in g.message\nb = f.message.startswith("x")\nc = RX.search(f.message)\n'
                     'd = g.message not in seen\ne = f.message == "x"\nf = [g.message for g in gaps]\n'
                     'g = "Error" in res.raised.message\nh = exc.message.startswith("No such")\n', encoding="utf-8")
    assert _message_text_tests(probe) == [1, 2, 3, 4]


def test_decisions_do_not_read_messages_as_text() -> None:
    counted = {m: _message_text_tests(p) for m, p in MODULES.items() if m not in MESSAGE_READERS}
    assert sum(len(v) for v in counted.values()) <= MAX_MESSAGE_TEXT_TESTS, {m: v for m, v in counted.items() if v}
