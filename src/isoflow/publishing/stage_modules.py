"""Which isoflow source files each DVC stage's commands import: the import closure of the CLI command modules its rules
call.

Static (read with ``ast``, every ``import`` inside functions included, so the lists are a safe superset): a stage
must depend on every file listed, or a change to that code would not make ``dvc status`` report it. The test
``tests/test_dvc.py::test_stage_dependencies_cover_every_imported_module`` checks dvc.yaml against this; print the
lists with ``python -m isoflow.publishing.stage_modules``."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]  # src/
PACKAGE = SRC / "isoflow"

# DVC stage -> the `isoflow` subcommands its rules run: the shared data stages, one per section that makes runs (its
# run commands) and the report (every section's report commands); isoflow.sections is the registry.
from .. import sections  # noqa: E402
from ..sections import SECTIONS  # noqa: E402


def stage_commands() -> dict[str, list[str]]:
    """DVC stage -> its `isoflow` commands, from the registry as it is now."""
    return {
        "prepare": ["prepare"],
        "encode": ["encode"],
        **{s.name: list(s.run_commands) for s in SECTIONS.values() if s.run_rules},
        "report": sorted({c for s in SECTIONS.values() for c in s.report_commands}),
    }


def _module_file(name: str) -> Path | None:
    """The file of an ``isoflow...`` module (package: its __init__.py), or None if it is not ours."""
    if not name.startswith("isoflow"):
        return None
    path = SRC.joinpath(*name.split("."))
    if path.is_dir():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Absolute names of the modules a parsed module imports (anywhere in it), resolving relative imports."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            found.update(f"{prefix}.{alias.name}" for alias in node.names)  # `from . import x` may import a module x
    return found


def closure(start: set[str], shallow: frozenset[str] = frozenset({"isoflow.cli"})) -> set[Path]:
    """Every isoflow file reachable through imports from the modules ``start`` (and their parent packages).
    ``shallow`` modules count as files but are not followed (the CLI package: each stage runs one command's module,
    which the caller passes in ``start``)."""
    todo, seen = list(start), set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            continue
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b first
        files.add(path)
        if name not in shallow:
            todo += _imports(ast.parse(path.read_text()), name, path.name == "__init__.py")
    return files


def command_module(command: str) -> str:
    """The module of ``isoflow <command>``: ``isoflow.cli.<command with _ for ->``, or its section's own package's
    (isoflow.sections: ``commands_package``)."""
    owners = [s for s in SECTIONS.values() if command in s.commands]
    name = owners[0].command_module(command) if owners else sections.command_module(command)
    if _module_file(name) is None:
        raise KeyError(f"no module {name} for the command {command!r}")
    return name


def stage_files(stage: str) -> set[Path]:
    """The stage's commands' modules and everything they import, the CLI package (which only builds the parser from
    every command's module: those of other commands are not followed) and its shared options."""
    return closure(
        {command_module(c) for c in stage_commands()[stage]} | {"isoflow", "isoflow.cli", "isoflow.cli.options"}
    )


def dep_entries(stage: str) -> list[str]:
    """The stage's source files as dvc.yaml deps: a package directory where every file of it is needed."""
    files = stage_files(stage)
    entries = set()
    for path in files:
        package = path.parent
        if package != PACKAGE and set(package.glob("*.py")) <= files:
            entries.add(str(package.relative_to(SRC.parent)))
        else:
            entries.add(str(path.relative_to(SRC.parent)))
    return sorted(entries)


def covered(path: Path, deps: list[str]) -> bool:
    rel = str(path.relative_to(SRC.parent))
    return any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in deps)


def main() -> int:
    for stage in stage_commands():
        print(f"{stage}:")
        for entry in dep_entries(stage):
            print(f"  - {entry}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
