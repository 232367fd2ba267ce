"""What ships: the wheel holds every data file the program reads (catalogue, translations,
icons, schemas, presets) and no package-data pattern matches nothing; the sdist holds every
tracked file, so its tests run; the metadata names the project's homes and publishes no
development extra."""

from __future__ import annotations

import email
import fnmatch
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tool

pytestmark = pytest.mark.slow

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE_DIRS = {"kvswitch": "kvswitch", "kvswitch.schemas": "kvswitch/schemas", "kvswitch_gui": "kvswitch_gui"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """A wheel and an sdist built (isolated, as a user's pip would) from the tracked files."""
    require_tool("git")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [f for f in tracked.decode().split("\0") if f and (ROOT / f).is_file()]
    src = tmp_path_factory.mktemp("src") / "kvswitch"
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    out = src.parent / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return wheel, sdist, files


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def test_every_package_data_pattern_matches_a_shipped_file(built: tuple[Path, Path, list[str]]) -> None:
    names = _wheel_names(built[0])
    for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items():
        for pattern in patterns:
            full = f"{PACKAGE_DIRS[package]}/{pattern}".replace("**/", "*")
            assert any(fnmatch.fnmatch(n, full) for n in names), f"{package}: {pattern} ships nothing"


@pytest.mark.parametrize(
    "needed",
    [
        "kvswitch/py.typed",
        "kvswitch/presets.toml",
        "kvswitch/locale/zh_CN/LC_MESSAGES/kvswitch.mo",
        "kvswitch/schemas/kvswitch-config.schema.json",
        "kvswitch/schemas/kvswitch-output.schema.json",
        "kvswitch_gui/resources/i18n/kvswitch_zh_CN.qm",
        "kvswitch_gui/launch.py",
    ],
)
def test_the_wheel_holds_what_the_program_reads(built: tuple[Path, Path, list[str]], needed: str) -> None:
    assert needed in _wheel_names(built[0])


def test_the_wheel_ships_every_schema_and_icon_in_the_tree(built: tuple[Path, Path, list[str]]) -> None:
    names = set(_wheel_names(built[0]))
    for schema in (ROOT / "schemas").glob("*.json"):
        assert f"kvswitch/schemas/{schema.name}" in names
    for icon in (ROOT / "gui" / "resources" / "icons").rglob("*"):
        if icon.suffix in {".svg", ".png"}:
            assert f"kvswitch_gui/{icon.relative_to(ROOT / 'gui').as_posix()}" in names


def test_the_wheel_ships_every_module_in_the_tree(built: tuple[Path, Path, list[str]]) -> None:
    """Every tracked module of the library and the GUI (``packages`` in pyproject is an explicit list:
    a new subpackage missing from it would be left out of the wheel without a word)."""
    names = set(_wheel_names(built[0]))
    _, _, files = built
    modules = [f for f in files if f.endswith(".py") and f.split("/")[0] in ("kvswitch", "gui")]
    shipped = {f if f.startswith("kvswitch/") else "kvswitch_gui/" + f.removeprefix("gui/") for f in modules}
    assert sorted(shipped - names) == []


def test_the_sdist_holds_every_tracked_file(built: tuple[Path, Path, list[str]]) -> None:
    _, sdist, files = built
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        inside = {n.removeprefix(top + "/") for n in tar.getnames()}
    missing = [f for f in files if f not in inside]
    assert missing == []


def test_the_metadata_names_homes_and_publishes_no_development_extra(built: tuple[Path, Path, list[str]]) -> None:
    with zipfile.ZipFile(built[0]) as z:
        [meta] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        message = email.message_from_bytes(z.read(meta))
        entry_points = z.read(meta.replace("METADATA", "entry_points.txt")).decode()
    urls = dict(u.split(", ", 1) for u in message.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert "test" not in (message.get_all("Provides-Extra") or [])
    assert {"gui", "lab", "gpu"} <= set(message.get_all("Provides-Extra"))
    classifiers = message.get_all("Classifier")
    assert "Natural Language :: Chinese (Simplified)" in classifiers and "Typing :: Typed" in classifiers
    assert "kvswitch-tray = kvswitch_gui.launch:main" in entry_points
