"""Test files mirror the package: ``tests/test_<module>[_<aspect>].py`` tests ``kvswitch/<module>``,
``tests/<package>/test_<module>[_<aspect>].py`` tests ``kvswitch/<package>/<module>`` (the package's
own name stands for its ``__init__`` and for the package as a whole), ``tests/gui/…`` the tray app
(``gui/``). A test that is about no one module (the project itself, a promise kept across modules,
the real clients end to end) is listed below with what it is about."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT

CROSS_CUTTING: dict[str, str] = {
    # the project as a whole
    "test_docs_clients.py": "the clients page matches the kinds",
    "test_docs_examples.py": "every example in the docs runs as written",
    "test_docs_pages.py": "the docs' links, module map and pages",
    "test_internal_refs.py": "no user-facing text cites internal numbering",
    "test_layering.py": "the import contracts and the library's rules",
    "test_layout.py": "this file: tests mirror the package",
    "test_packaging.py": "the wheel and the sdist",
    "test_precommit.py": "the pre-commit hook offered, and the repository's own hooks",
    "test_public_api.py": "`import kvswitch`: the facade, its errors, py.typed",
    "test_quickstart.py": "the quickstart page, run",
    "test_schemas_fresh.py": "the committed schemas equal the generated ones",
    "test_style.py": "ruff, its formatter and mypy over the tree",
    # promises kept across modules
    "test_crash.py": "crash safety: a switch killed at random moments (transaction, io)",
    "test_races.py": "no save lost between concurrent kvswitch processes and editors (io, transaction, locks)",
    "test_stress_saves.py": "the write promise under an editor saving every few milliseconds (io, switching)",
    "test_no_key_leaks.py": "no key in any output, log, diff or report, whoever echoes it",
    "test_fuzz.py": "hostile and random files through parsing, lint and switching",
    "test_fuzz_cli.py": "hostile and random input through the command line",
    "test_changed_outside.py": "a file changed outside kvswitch, over every way kvswitch writes",
    "test_mode_urls.py": "one URL per mode, through clients, the probe and doctor",
    "test_profile_headers.py": "a profile's headers through profile use, switch, drift and edit",
    "test_library_zh.py": "the library's messages in Chinese",
    "cli/test_first_day.py": "a new user's first day over init, lint, client and advise",
    "cli/test_input_validation_cli.py": "bad values refused alike by every command",
    "cli/test_json_run.py": "the JSON envelope of the commands that run things",
    "cli/test_json_state.py": "the JSON envelope of the commands that report state",
    "cli/test_lean_commands.py": "what switch, status and lint import",
    "cli/test_output_schema.py": "every command's JSON against schemas/kvswitch-output.schema.json",
    "cli/test_usage.py": "usage and exit codes of every command",
    "cli/test_zh_run.py": "the commands that run things, in Chinese",
    "cli/test_zh_state.py": "the commands that report state, in Chinese",
    "formats/test_switch_round_trip.py": "switches through both formats' editors, byte for byte",
    "kinds/test_detect.py": "kvswitch/kinds/__init__.py: detect_kind over every kind",
    "kinds/test_registry.py": "kvswitch/kinds/__init__.py: the registry over every kind",
    "kinds/test_hostile_files.py": "every real client's kind against files written by someone else",
    "lab/test_probe_llama.py": "the probe against the lab's real llama.cpp servers",
    "gui/test_client_menus.py": "the tray's client submenus (tray, jobs, clients)",
    "gui/test_first_run.py": "the tray's first run with no profile",
    "gui/test_glyphs.py": "Chinese glyphs drawn, not boxes",
    "gui/test_mnemonics.py": "a keyboard mnemonic on every menu item and dialog",
    "gui/test_real_tray.py": "the tray app on a real X display and tray host",
    "gui/test_real_tray_autostart.py": "launch at login from the real tray",
    "gui/test_real_tray_clients.py": "one client switched alone from the real tray",
    "gui/test_real_tray_gateway.py": "the gateway started from the real tray",
    "gui/test_sni_tray.py": "the StatusNotifierItem path with a real host",
}
"""Tests about no one module, with what each is about."""

WHOLE_FOLDERS = {"realclients": "the real coding clients end to end (installed from npm, offline)"}
"""Test folders that mirror no package, with what they hold."""


def _modules(package: Path) -> set[str]:
    """The names a test may start with in ``package``'s folder: its modules and subpackages,
    ``package`` (the package as a whole) and ``package`` as ``__init__``."""
    names = {package.name, "package"}
    for p in package.iterdir():
        if p.suffix == ".py" and p.name != "__init__.py":
            names.add(p.stem)
        elif p.is_dir() and (p / "__init__.py").exists():
            names.add(p.name)
    return names


def _package_of(folder: str) -> Path | None:
    if folder == "":
        return ROOT / "kvswitch"
    if folder == "gui":
        return ROOT / "gui"
    candidate = ROOT / "kvswitch" / folder
    return candidate if (candidate / "__init__.py").exists() else None


def misplaced(tests: Path = ROOT / "tests") -> list[str]:
    """Test files that mirror no module and are not listed as cross-cutting."""
    found = []
    for test in sorted(tests.rglob("test_*.py")):
        rel = test.relative_to(tests)
        folder = "/".join(rel.parts[:-1])
        if rel.as_posix() in CROSS_CUTTING or rel.parts[0] in WHOLE_FOLDERS or "node_modules" in rel.parts:
            continue
        package = _package_of(folder)
        stem = test.stem.removeprefix("test_")
        if package is None or not any(stem == m or stem.startswith(m + "_") for m in _modules(package)):
            found.append(rel.as_posix())
    return found


def test_every_test_file_mirrors_a_module_or_says_what_it_is_about() -> None:
    assert misplaced() == []


def test_the_list_names_only_files_that_exist_and_do_not_mirror() -> None:
    for name in CROSS_CUTTING:
        assert (ROOT / "tests" / name).is_file(), f"{name} is listed but gone"


def test_a_stray_test_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "probe").mkdir()
    (tmp_path / "test_io.py").write_text("")
    (tmp_path / "probe" / "test_runner_routes.py").write_text("")
    (tmp_path / "probe" / "test_somewhere_else.py").write_text("")
    (tmp_path / "test_nothing_here.py").write_text("")
    assert misplaced(tmp_path) == ["probe/test_somewhere_else.py", "test_nothing_here.py"]
