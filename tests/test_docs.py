"""The user documentation (README.md, docs/*.md) says what is true of this repository: every relative link and
every repository path it names exists, nothing points outside the repository or at development notes, and every
quoted command whose output states an exit code exits with that code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO, cache_dir

from mtp_audit.cli.main import main

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: Backticked repository paths (first segment one of ours), with an optional ``:line`` suffix.
REPO_PATH = re.compile(r"`((?:mtp_audit|tests|fixtures|docs|benchmarks|\.ci)/[^`\s:*<>]+)(?::[\d-]+)?`")


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(REPO).as_posix() for p in paths]


@pytest.mark.parametrize("doc", DOCS, ids=_ids(DOCS))
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    bad = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        if REPO.resolve() not in path.parents and path != REPO.resolve():
            bad.append(f"{target}: outside the repository")
        elif not path.exists():
            bad.append(f"{target}: no such file")
    assert bad == []


@pytest.mark.parametrize("doc", DOCS, ids=_ids(DOCS))
def test_named_repository_files_exist(doc: Path) -> None:
    missing = [p for p in REPO_PATH.findall(doc.read_text()) if not (REPO / p.rstrip("/.,")).exists()]
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=_ids(DOCS))
def test_written_for_users(doc: Path) -> None:
    text = doc.read_text()
    for pattern in (r"\.\./shared/", r"notes? for the lead", r"\bthe lead\b", r"\bissue \d+\b", r"/work/"):
        assert not re.search(pattern, text, re.I), f"{doc.name}: {pattern}"


def _console_commands() -> list[tuple[str, int, list[str], int]]:
    """``(doc, line, argv, exit code)`` for each ``$ mtp-audit ...`` in a console block whose output's first
    line ends with ``(exit N)`` or is followed by ``$ echo $?`` and N."""
    out = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("$ mtp-audit "):
                continue
            cmd, j = line[2:], i
            while cmd.endswith("\\"):
                j += 1
                cmd = cmd[:-1] + " " + lines[j].strip()
            rest = lines[j + 1:j + 6]
            code = None
            if rest and (m := re.search(r"\(exit (\d)(?:;[^)]*)?\)$", rest[0])):
                code = int(m.group(1))
            for k, r in enumerate(rest[:-1]):
                if r.strip() == "$ echo $?" and rest[k + 1].strip().isdigit():
                    code = int(rest[k + 1])
            if code is not None:
                out.append((doc.relative_to(REPO).as_posix(), i + 1, shlex.split(cmd)[1:], code))
    return out


COMMANDS = _console_commands()


#: ``--sglang`` / ``--vllm`` followed by a release version: the CLI fetches that release's members from PyPI.
_RELEASE_OPTIONS = {"--sglang": "sglang", "--compare-sglang": "sglang", "--vllm": "vllm"}


def _release(package: str, version: str) -> str:
    """The members of ``package==version`` the analyzers read, fetched once with range requests into the test cache
    (:func:`mtp_audit.sources.pypi.release_wheel`; vLLM 0.33.0: about 13.4 MB of its 400 MB wheel); skips offline."""
    from mtp_audit.sources.pypi import IndexUnavailable, release_wheel

    try:
        return str(release_wheel(package, version, cache_dir=cache_dir()))
    except IndexUnavailable as exc:
        pytest.skip(f"cannot fetch {package} {version}: {exc}")


def _local(argv: list[str]) -> list[str]:
    """``argv`` with each wheel name and each release version replaced by a local file: an sglang wheel downloaded
    into the test cache (:func:`conftest.sglang_wheel`), a vLLM wheel's members fetched into it (:func:`_release`)."""
    from conftest import sglang_wheel

    from mtp_audit.sources.pypi import is_version

    out: list[str] = []
    for i, tok in enumerate(argv):
        package = _RELEASE_OPTIONS.get(argv[i - 1]) if i else None
        if package and not Path(tok).exists() and is_version(tok):
            tok = _release(package, tok)
        elif tok.endswith(".whl") and not Path(tok).exists():
            name, version = tok.split("-")[:2]
            tok = str(sglang_wheel(version)) if name == "sglang" else _release(name, version)
        out.append(tok)
    return out


def test_the_docs_quote_commands_with_exit_codes() -> None:
    assert len(COMMANDS) >= 5, COMMANDS


@pytest.mark.network
@pytest.mark.parametrize("doc, line, argv, code", COMMANDS, ids=[f"{d}:{n}" for d, n, _, _ in COMMANDS])
def test_quoted_command_exits_as_documented(doc: str, line: int, argv: list[str], code: int,
                                            monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    local = _local(argv)
    missing = [t for t in local if "/" in t and not t.startswith("-") and not Path(t).exists() and t.startswith(("fixtures", "./"))]
    if missing:
        pytest.skip(f"{doc}:{line}: names {missing[0]}, which is an example of the user's own file")
    assert main(local) == code, capsys.readouterr().out[-2000:]
