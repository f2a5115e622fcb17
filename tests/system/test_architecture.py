"""The package's import graph: one architecture a newcomer can read.

Every module of ``src/dptree`` is parsed (``ast``, nothing is imported) and each ``import`` of a
dptree module, at module level or inside a function, is an edge. The test fails on

* any import cycle between dptree modules, inside a package or across packages (a lazy import
  inside a function counts: it hides a cycle, it does not remove it; an import under
  ``if TYPE_CHECKING:`` does not: it is never executed and only names a type for an annotation),
* any cycle between modules that appears when annotation-only imports and lookups of a release
  class by its kind (``release_class("range_tree")``, a dependency written as a string) count as
  edges too, and
* any import from a lower stage to a higher one, in the order of :data:`STAGES` (lowest first):
  the data stage never imports the range tree, a release never imports the command line, ...

The package root ``dptree/__init__.py`` is the public facade that re-exports every stage; it is
not a stage, and ``from dptree import __version__`` (the one version string) is not an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "dptree"

#: stages, lowest first: a module may import its own stage and lower ones only
STAGES: tuple[tuple[str, ...], ...] = (
    ("errors", "_validation"),
    ("noise",),
    ("privacy",),
    ("data",),
    ("estimation",),
    ("io",),
    ("partitions",),
    ("rangetree", "hierarchy", "interior", "sparsetree", "spatial", "stream"),
    ("quantiles",),
    ("reporting",),
    ("cli", "__main__"),  # python -m dptree runs the command line
    ("testing",),
)


def module_names(src: Path = SRC) -> dict[str, Path]:
    """{dotted module name: file} of every module of the package (package ``__init__`` files are
    named after their package)."""
    out: dict[str, Path] = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The most specific known module that ``name`` (a module or a name inside one) refers to."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, modules: dict[str, Path], *, annotations: bool = False) -> set[str]:
    """The dptree modules ``module`` imports anywhere in its source (the root facade excluded);
    with ``annotations``, imports under ``if TYPE_CHECKING:`` too."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = set() if annotations else {
        id(n) for block in ast.walk(tree) if _is_type_checking(block)
        for stmt in block.body for n in ast.walk(stmt)}  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # "from pkg import sub" imports the submodule pkg.sub when there is one
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            if target != ROOT and not target.startswith(ROOT + "."):
                continue
            resolved = _resolve(target, modules)
            if resolved and resolved not in (ROOT, module):
                found.add(resolved)
    return found


def _is_type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def release_kinds(modules: dict[str, Path]) -> dict[str, str]:
    """{kind: the module whose class declares ``KIND = "kind"``} (the release classes)."""
    out: dict[str, str] = {}
    for module, path in modules.items():
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for stmt in cls.body if isinstance(cls, ast.ClassDef) else ():
                target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
                    stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
                value = getattr(stmt, "value", None)
                if (isinstance(target, ast.Name) and target.id == "KIND" and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)):
                    out[value.value] = module
    return out


def registry_lookups(path: Path, kinds: dict[str, str]) -> set[str]:
    """The modules whose release class ``path`` looks up by its kind: ``release_class("kind")``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "release_class" and node.args[0].value in kinds:
                found.add(kinds[node.args[0].value])
    return found


def import_graph(src: Path = SRC, *, annotations: bool = False, registry: bool = False) -> dict[str, set[str]]:
    """{module: the dptree modules it imports}; ``annotations``: imports under ``if TYPE_CHECKING:``
    count; ``registry``: so does a lookup of a release class by its kind (:func:`registry_lookups`)."""
    modules = module_names(src)
    kinds = release_kinds(modules) if registry else {}
    return {m: (imports_of(m, p, modules, annotations=annotations) | registry_lookups(p, kinds)) - {m}
            for m, p in modules.items() if m != ROOT}


def stage_of(module: str) -> int:
    top = module.split(".")[1]
    for i, names in enumerate(STAGES):
        if top in names:
            return i
    raise AssertionError(f"{module}: its package {top!r} has no stage in STAGES; add it there")


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module."""
    return [_cycle_in(comp, graph) for comp in strongly_connected(graph)]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, each sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def _cycle_in(comp: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A readable cycle a -> b -> ... -> a inside one strongly connected component."""
    members = set(comp)
    start = comp[0]
    path = [start]
    seen = {start}
    while True:
        nxt = sorted(graph[path[-1]] & members)
        back = [w for w in nxt if w == start]
        if back and len(path) > 1:
            return path + [start]
        fresh = [w for w in nxt if w not in seen]
        step = fresh[0] if fresh else nxt[0]
        if step in seen:
            return path[path.index(step):] + [step]
        path.append(step)
        seen.add(step)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{a} (stage {stage_of(a)}) imports {b} (stage {stage_of(b)})"
        for a, targets in graph.items()
        for b in targets
        if stage_of(b) > stage_of(a)
    )


# --------------------------------------------------------------------------- the package


def test_every_package_has_a_stage() -> None:
    for module in import_graph():
        stage_of(module)


def test_no_import_cycles() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_cycle_through_annotations_or_the_release_registry() -> None:
    """A module that names a type of a module importing it, or reaches a release class by its
    kind, still depends on it: such cycles between modules are refused, inside a package too."""
    cycles = find_cycles(import_graph(annotations=True, registry=True))
    assert not cycles, "cycles through annotations or the release registry:\n" + "\n".join(
        " -> ".join(c) for c in cycles)


def test_no_import_from_a_lower_stage_to_a_higher_one() -> None:
    bad = upward_imports(import_graph())
    assert not bad, "imports against the stage order:\n" + "\n".join(bad)


def test_the_data_stage_never_imports_a_product() -> None:
    graph = import_graph()
    for module, targets in graph.items():
        if module.startswith("dptree.data"):
            assert all(stage_of(t) <= stage_of(module) for t in targets), (module, targets)


# --------------------------------------------------------------------------- the checker itself


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        path = tmp_path / ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_checker_finds_a_planted_cycle(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "data/__init__.py": "",
        "data/a.py": "from dptree.data.b import x\n",
        "data/b.py": "def f():\n    from dptree.data import c\n",  # a lazy import counts
        "data/c.py": "from . import a\n",  # so does a relative one
        "data/d.py": "import dptree.data.a\n",
        "data/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dptree.data.a import x\n",
    })
    graph = import_graph(src)
    assert graph["dptree.data.c"] == {"dptree.data.a"}
    assert graph["dptree.data.e"] == set()  # an annotation-only import is never executed
    (cycle,) = find_cycles(graph)
    assert cycle[0] == cycle[-1] and set(cycle) == {"dptree.data.a", "dptree.data.b", "dptree.data.c"}


def test_the_checker_counts_annotations_and_registry_lookups_on_request(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "sparse/__init__.py": "",
        "sparse/release.py": "from dptree.sparse.document import write\nclass Tree:\n    KIND: str = 'tree'\n",
        "sparse/document.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from dptree.sparse.release import Tree\n",
        "sparse/plan.py": "from dptree.io.contract import release_class\n"
                          "def release():\n    return release_class('tree')\n",
        "sparse/api.py": "from dptree.sparse import plan, release\n",
    })
    assert find_cycles(import_graph(src)) == []
    assert import_graph(src, registry=True)["dptree.sparse.plan"] == {"dptree.sparse.release"}
    (cycle,) = find_cycles(import_graph(src, annotations=True))
    assert set(cycle) == {"dptree.sparse.release", "dptree.sparse.document"}
    (comp,) = strongly_connected(import_graph(src, annotations=True, registry=True))
    assert comp == ["dptree.sparse.document", "dptree.sparse.release"]


def test_the_checker_finds_a_planted_upward_import(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "errors.py": "",
        "data/__init__.py": "",
        "data/histograms.py": "from dptree.errors import DataError\n"
                              "def f():\n    from dptree.rangetree.groupby import g\n",
        "rangetree/__init__.py": "",
        "rangetree/groupby.py": "from dptree.data.histograms import f\nfrom dptree import __version__\n",
    })
    graph = import_graph(src)
    assert upward_imports(graph) == ["dptree.data.histograms (stage 3) imports dptree.rangetree.groupby (stage 7)"]
    assert find_cycles(graph)  # and the two modules form a cycle
    assert graph["dptree.rangetree.groupby"] == {"dptree.data.histograms"}  # the root facade is no edge


def test_the_checker_refuses_a_package_without_a_stage(tmp_path: Path) -> None:
    graph = import_graph(_tree(tmp_path, {"plugins/__init__.py": "", "plugins/x.py": ""}))
    with pytest.raises(AssertionError, match="no stage"):
        for module in graph:
            stage_of(module)


#: the size above which a module is a grab-bag to split along its own sections
MAX_MODULE_LINES = 500


def test_no_module_is_a_grab_bag() -> None:
    long = {m: n for m, p in module_names().items() if (n := len(p.read_text(encoding="utf-8").splitlines()))
            > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
