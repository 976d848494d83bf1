"""Static rules over a candidate's Python source, checked before any of it runs.

The checker walks the AST of every ``.py`` file in the candidate folder and reports:

- ``banned_import``: an import (``import x``, ``from x import y``, ``importlib.import_module("x")``,
  ``__import__("x")``) of a banned module, or a string constant that names one (the usual way to
  smuggle a name into ``getattr`` / ``sys.modules`` tricks);
- ``dynamic_import``: an import whose module name is computed at run time, or use of the import
  machinery itself (``__import__``, ``importlib``, ``imp``, ``runpy``, ``builtins``/``__builtins__``,
  ``sys.modules``, ``pkgutil``, ``zipimport``);
- ``dynamic_code``: ``exec``/``eval``/``compile`` (code from strings cannot be checked);
- ``introspection``: ``gc``, ``inspect``, ``sys._getframe`` and frame attributes: ways to reach the
  harness's own objects (the reference, its timers) from inside the candidate.

Pure functions: source text in, violations out.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

# Modules whose use means the candidate reaches into the import system or the interpreter.
IMPORT_MACHINERY = ("importlib", "imp", "runpy", "builtins", "pkgutil", "zipimport")
INTROSPECTION_MODULES = ("gc", "inspect", "traceback")
INTROSPECTION_ATTRS = ("_getframe", "f_back", "f_globals", "f_locals", "gi_frame", "tb_frame")
DYNAMIC_CODE_CALLS = ("exec", "eval", "compile")
# Modules of the harness itself and the task's reference: never the candidate's business.
HARNESS_MODULES = ("harness", "marathon_task_reference")


@dataclasses.dataclass(frozen=True)
class Violation:
    rule: str
    reason: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "reason": self.reason}


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def _names_banned(text: str, banned: tuple[str, ...]) -> str | None:
    """The banned module a string names ("fla", "fla.ops.kda", "fla/ops"), if any."""
    t = text.strip()
    for b in banned:
        if re.fullmatch(rf"{re.escape(b)}([./][A-Za-z0-9_./]*)?", t):
            return b
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str, banned: tuple[str, ...]):
        self.path = path
        self.banned = banned
        self.out: list[Violation] = []

    def _add(self, node: ast.AST, rule: str, reason: str) -> None:
        self.out.append(Violation(rule, f"{self.path}:{getattr(node, 'lineno', 0)}: {reason}"))

    def _check_module(self, node: ast.AST, name: str, how: str) -> None:
        top = _top(name)
        if top in self.banned:
            self._add(node, "banned_import", f"{how} of '{name}': third-party kernel libraries are banned")
        elif top in HARNESS_MODULES or name.startswith("marathon_task_"):
            self._add(node, "banned_import", f"{how} of '{name}': the harness and reference are off limits")
        elif top in IMPORT_MACHINERY:
            self._add(node, "dynamic_import", f"{how} of '{name}': the import machinery is off limits")
        elif top in INTROSPECTION_MODULES:
            self._add(node, "introspection", f"{how} of '{name}': introspection can reach the harness")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name, "import")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._check_module(node, node.module, "from-import")
            if node.module == "sys":
                for alias in node.names:
                    if alias.name == "modules":
                        self._add(node, "dynamic_import", "'from sys import modules' is off limits")
                    if alias.name in INTROSPECTION_ATTRS:
                        self._add(node, "introspection", f"'from sys import {alias.name}'")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        fname = None
        if isinstance(func, ast.Name):
            fname = func.id
        elif isinstance(func, ast.Attribute):
            fname = func.attr
        if fname in ("import_module", "__import__", "find_spec", "load_module", "spec_from_file_location"):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._check_module(node, arg.value, f"{fname}()")
            self._add(node, "dynamic_import", f"{fname}() call: imports must be plain import statements")
        if isinstance(func, ast.Name) and func.id in DYNAMIC_CODE_CALLS:
            self._add(node, "dynamic_code", f"{func.id}() call: code built from strings is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__import__", "__builtins__", "__loader__", "__spec__"):
            self._add(node, "dynamic_import", f"use of '{node.id}'")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("__import__", "__builtins__", "__loader__", "__spec__"):
            self._add(node, "dynamic_import", f"use of '.{node.attr}'")
        if node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
            self._add(node, "dynamic_import", "use of 'sys.modules'")
        if node.attr in INTROSPECTION_ATTRS:
            self._add(node, "introspection", f"use of '.{node.attr}'")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            hit = _names_banned(node.value, self.banned)
            if hit:
                self._add(node, "banned_import", f"string {node.value!r} names banned module '{hit}'")
        self.generic_visit(node)


def check_source(source: str, path: str, banned: tuple[str, ...]) -> list[Violation]:
    """Violations in one file's source; a syntax error is reported as such (rule ``syntax``)."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        return [Violation("syntax", f"{path}:{e.lineno}: {e.msg}")]
    v = _Visitor(path, tuple(banned))
    v.visit(tree)
    # One violation per (rule, line) is enough for the reader.
    seen, out = set(), []
    for x in v.out:
        if (x.rule, x.reason) not in seen:
            seen.add((x.rule, x.reason))
            out.append(x)
    return out


def check_dir(candidate_dir: Path, banned: tuple[str, ...]) -> list[Violation]:
    """Violations over every .py file under the candidate folder (sorted, relative paths)."""
    out: list[Violation] = []
    root = Path(candidate_dir)
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(root).parts):
            continue
        try:
            src = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            out.append(Violation("unreadable", f"{rel}: {e}"))
            continue
        out.extend(check_source(src, rel, banned))
    return out
