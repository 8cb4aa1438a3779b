"""`pip install .` gives the package and the `consolidation` command, working outside the checkout."""

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "requirements.txt", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "consolidation", source / "consolidation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
                    str(source)], check=True, timeout=300)
    (built,) = out.glob("memory_consolidation-*.whl")
    return built


def test_the_wheel_holds_the_package_the_command_and_the_pinned_dependencies(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        metadata = archive.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert {"consolidation/cli.py", "consolidation/wsgi.py", "consolidation/gunicorn_conf.py",
            "consolidation/api/__init__.py", "consolidation/tasks/dedup.py"} <= names
    # The /docs page works offline: the page, its script and the vendored Swagger UI with its licence.
    assert {f"consolidation/api/static/{name}" for name in (
        "docs.html", "docs.js", "swagger-ui/swagger-ui-bundle.js", "swagger-ui/swagger-ui.css",
        "swagger-ui/LICENSE", "swagger-ui/NOTICE")} <= names
    assert not any(name.startswith(("tests/", "bench/")) for name in names)
    # The dashboard works from an installed package: its page and every static file it serves are inside.
    dashboard = ROOT / "consolidation" / "dashboard"
    shipped = {path.relative_to(ROOT).as_posix() for path in dashboard.rglob("*")
               if path.is_file() and "__pycache__" not in path.parts}
    assert {"consolidation/dashboard/templates/dashboard/index.html", "consolidation/dashboard/static/main.js",
            "consolidation/dashboard/static/vendor/chart.umd.min.js",
            "consolidation/dashboard/static/vendor/chart.js.LICENSE.md"} <= shipped <= names
    assert "consolidation = consolidation.cli:main" in entry_points
    pinned = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    for requirement in pinned:
        assert f"Requires-Dist: {requirement}" in metadata


def test_the_installed_command_runs_away_from_the_checkout(wheel, tmp_path):
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    python = str(target / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # The dependencies come from the test environment; the package itself only from the wheel.
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", str(wheel)],
                   check=True, timeout=300)
    away = tmp_path / "elsewhere"
    away.mkdir()
    shown = subprocess.run([str(target / "bin" / "consolidation"), "--help"], cwd=away, capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    for command in ("serve", "import", "consolidate"):
        assert command in shown.stdout
    where = subprocess.run([python, "-c", "import consolidation; print(consolidation.__file__)"], cwd=away,
                           capture_output=True, text=True, timeout=120)
    assert where.stdout.strip().startswith(str(site))
