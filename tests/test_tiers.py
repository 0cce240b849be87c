"""The package's tiers (docs/architecture.md): core (metrics, I-STAR, settings, records, atomic I/O, fetch,
provenance) <- inputs (datasets, corpora, models) <- sections (one package each) <- the CLI, publishing and the section
registry. Nothing imports upward (import-linter's contract in pyproject.toml), and no module changes another's state
when it is imported."""

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src/isoflow"


def test_nothing_imports_from_a_tier_above_it():
    p = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "1 kept, 0 broken" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]


def tiers_missing(root: Path = ROOT) -> tuple[set[str], set[str]]:
    """(top-level modules of ``root``'s package the contract does not name, names of the contract's no module holds)."""
    import tomllib

    contract = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    named = {m.strip() for layer in contract["layers"] for m in layer.replace("|", ":").split(":")}
    src = root / "src/isoflow"
    present = {p.stem for p in src.glob("*.py") if p.stem not in ("__init__", "__main__")}
    present |= {p.parent.name for p in src.glob("*/__init__.py")}
    return present - named, named - present


def test_every_module_has_a_tier():
    """A top-level module or package the contract does not name would import anything unchecked: each is in a tier
    (a section's own package through scripts/generate.py: tests/test_workflow.py's toy section)."""
    assert tiers_missing() == (set(), set())


def _load_time_statements(body):
    """The statements a module runs when it is imported: its top level, into if/try/with blocks, not into functions
    or classes (a class body runs too, but sets its own names)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _load_time_statements(getattr(node, field, []) or [])


def _imported_names(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def state_changed_on_import(source: str) -> list[str]:
    """Load-time statements that set an attribute of an imported module (``module.x = ...``) or call setattr."""
    tree = ast.parse(source)
    modules = _imported_names(tree)
    found = []
    for node in _load_time_statements(tree.body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in modules:
                found.append(ast.unparse(t))
        for call in ast.walk(node) if isinstance(node, ast.Expr) else []:
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "setattr":
                found.append(ast.unparse(call))
    return found


def test_the_check_sees_a_module_setting_anothers_state():
    setting = "from . import policy\n\ndef f(): pass\n\npolicy.measure = f\n"
    assert state_changed_on_import(setting) == ["policy.measure"]
    assert state_changed_on_import("import torch\nif True:\n    setattr(torch, 'x', 1)\n") == ["setattr(torch, 'x', 1)"]
    assert state_changed_on_import("from . import policy\n\ndef f():\n    policy.measure = 1\n") == []


def test_no_module_changes_anothers_state_when_imported():
    found = {str(f.relative_to(SRC)): state_changed_on_import(f.read_text()) for f in sorted(SRC.rglob("*.py"))}
    found = {f: hits for f, hits in found.items() if hits}
    assert not found, found


def test_the_library_holds_no_snakemake():
    """The rules call the library through its CLI; the library never imports the workflow engine."""
    found = [
        str(f.relative_to(SRC))
        for f in sorted(SRC.rglob("*.py"))
        if "snakemake" in {n.split(".")[0] for n in _module_names(ast.parse(f.read_text()))}
    ]
    assert not found, found


def _module_names(tree) -> list[str]:
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0]
    return names + [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]


def test_the_sections_import_none_of_each_other():
    """The contract's sections tier is independent ('|': a section shares code only through the tiers below) and is
    what scripts/generate.py writes from the registry: every section's package, and nothing else."""
    import tomllib

    from isoflow.publishing.contract import render

    text = (ROOT / "pyproject.toml").read_text()
    assert text == render(text), "pyproject.toml's sections tier is stale: run python scripts/generate.py"
    contract = tomllib.loads(text)["tool"]["importlinter"]["contracts"][0]
    (sections,) = [layer for layer in contract["layers"] if "finetune" in layer.split()]
    assert ":" not in sections and [s.strip() for s in sections.split("|")] == [
        "optimize",
        "layers",
        "finetune",
        "stability",
        "pretrain",
        "dynamics",
    ]


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its file (inside functions too: an import made when a
    function runs is a dependency all the same), relative imports resolved; ``from package import name`` is an edge
    to the submodule where ``name`` is one."""

    def dotted(p: Path) -> str:
        parts = list(p.relative_to(src.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {dotted(p): p for p in src.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    found |= {f"{target}.{a.name}"} if f"{target}.{a.name}" in modules else {target} & modules.keys()
        graph[name] = found - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root), on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w), on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on.discard(w), component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_circle_finder_sees_a_circle_closed_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text("def g():\n    from .a import f\n    return f\n")
    (package / "c.py").write_text("from . import a\n")
    assert circles(import_graph(package)) == [{"pkg.a", "pkg.b"}]


def test_no_import_circle():
    """No modules import each other in a loop, through imports at the top or inside functions (which hide a
    dependency rather than place it)."""
    assert circles(import_graph()) == []
