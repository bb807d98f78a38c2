"""The package can be published: ``python -m build`` makes an sdist and a wheel that ``twine check`` passes, the
wheel ships what the library needs at run time (data, schema, ``py.typed``, the stub), and the version comes from
one place (``mtp_audit.__version__``)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO


def test_the_version_has_one_source() -> None:
    import mtp_audit

    text = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'version = { attr = "mtp_audit.__version__" }' in text
    assert not re.search(r'^version\s*=\s*"', text, re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+", mtp_audit.__version__)


@pytest.mark.slow
@pytest.mark.network
def test_build_and_twine_check(tmp_path: Path) -> None:
    """Builds in an isolated environment (pip fetches setuptools from the index: a few MB)."""
    pytest.importorskip("build")
    pytest.importorskip("twine")
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path), str(REPO)], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0 and "Could not find a version that satisfies" in proc.stdout + proc.stderr:
        pytest.skip("the package index cannot be reached for the build requirements")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "deprecated" not in (proc.stdout + proc.stderr).lower()
    built = sorted(p.name for p in tmp_path.iterdir())
    import mtp_audit

    assert built == [f"mtp_audit-{mtp_audit.__version__}-py3-none-any.whl", f"mtp_audit-{mtp_audit.__version__}.tar.gz"]
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, tmp_path.iterdir())],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    names = set(zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist())
    for needed in ("mtp_audit/py.typed", "mtp_audit/__init__.pyi", "mtp_audit/data/matrix.json", "mtp_audit/data/gpus.json",
                   "mtp_audit/schema/report.schema.json", "mtp_audit/sources/pypi.py"):
        assert needed in names
    assert not [n for n in names if n.startswith(("tests/", "fixtures/"))]


@pytest.mark.slow
@pytest.mark.network
def test_the_readme_editable_install_is_seen_by_type_checkers(tmp_path: Path) -> None:
    """``pip install -e .`` (the README's install) writes a static ``.pth`` naming the checkout, which mypy reads,
    so ``mypy --strict`` run from another folder finds the package and its types (an import-hook finder, setuptools'
    default for a flat layout, is seen by the interpreter only)."""
    pytest.importorskip("mypy")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0 and "Could not find a version that satisfies" in proc.stdout + proc.stderr:
        pytest.skip("the package index cannot be reached for the build requirements")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    pth = [p.read_text().strip() for p in venv.glob("lib/python*/site-packages/__editable__*mtp_audit*.pth")]
    assert pth == [str(REPO)]
    script = tmp_path / "elsewhere" / "gate.py"
    script.parent.mkdir()
    script.write_text("import mtp_audit\n\nreport: mtp_audit.Report = mtp_audit.audit_checkpoint('ckpt')\nn: str = report.findings\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir", "/dev/null", "--python-executable", str(py), str(script)],
                          capture_output=True, text=True, cwd=script.parent, timeout=600)
    # the package is found (no import-not-found) and its types are real: the one error is the wrong annotation
    assert "import-not-found" not in proc.stdout and proc.stdout.count("error:") == 1, proc.stdout
    assert 'Incompatible types in assignment (expression has type "tuple[Finding, ...]"' in proc.stdout, proc.stdout
