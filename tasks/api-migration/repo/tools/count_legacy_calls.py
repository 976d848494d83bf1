"""Counts the remaining uses of the deprecated shop.legacy.get_price in shop/ (the task's metric).

    python3 tools/count_legacy_calls.py     per-file counts on stderr, the total on the last line

A use is a call or any other reference (a callback, an alias assignment) found in the syntax tree,
so comments and strings never count, and aliases are followed: `from shop.legacy import get_price
as lookup`, `import shop.legacy as old`, `from shop import legacy`, `price = legacy.get_price`,
`getattr(legacy, "get_price")`. Imports themselves are not uses. shop/legacy.py (where get_price
lives) and shop/pricing.py are not scanned.
"""

import ast
import sys
from pathlib import Path

OLD = ("shop.legacy", "get_price")
NEW = ("shop.pricing", "price_of")
NOT_SCANNED = {"legacy.py", "pricing.py"}


class Uses:
    """The uses of function `name` of `module` in one parsed file of package `package`."""

    def __init__(self, tree, module, name, package="shop"):
        self.module, self.name = module, name
        self.parent, _, self.leaf = module.rpartition(".")
        self.package = package
        self.roots = {}  # local name -> the dotted module it stands for (import shop -> "shop")
        self.modules = set()  # local names bound to `module`
        self.functions = set()  # local names bound to the function
        self._imports(tree)
        self._assignments(tree)
        self.lines = self._count(tree)

    def _imports(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name == self.module:
                        self.modules.add(a.asname)
                    elif a.asname:
                        self.roots[a.asname] = a.name
                    else:  # `import a.b.c` binds `a`
                        top = a.name.split(".")[0]
                        self.roots[top] = top
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level == 1:  # relative, from a file of the package
                    source = f"{self.package}.{source}" if source else self.package
                elif node.level > 1:
                    continue
                for a in node.names:
                    if source == self.module and a.name in (self.name, "*"):
                        self.functions.add(a.asname or self.name)
                    elif source == self.parent and a.name == self.leaf:
                        self.modules.add(a.asname or self.leaf)
                    elif source == self.parent:
                        continue
                    elif f"{source}.{a.name}" == self.module:
                        self.modules.add(a.asname or a.name)

    def _assignments(self, tree):
        """Names assigned the function or the module (`price = legacy.get_price`), to a fixpoint."""
        changed = True
        while changed:
            changed = False
            for node in ast.walk(tree):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if not isinstance(t, ast.Name):
                            continue
                        if self.is_function(node.value) and t.id not in self.functions:
                            self.functions.add(t.id)
                            changed = True
                        elif self.is_module(node.value) and t.id not in self.modules:
                            self.modules.add(t.id)
                            changed = True

    def dotted(self, node):
        if isinstance(node, ast.Name):
            return self.roots.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def is_module(self, node):
        if isinstance(node, ast.Name) and node.id in self.modules:
            return True
        return self.dotted(node) == self.module

    def is_function(self, node):
        if isinstance(node, ast.Name):
            return isinstance(node.ctx, ast.Load) and node.id in self.functions
        if isinstance(node, ast.Attribute):
            return node.attr == self.name and self.is_module(node.value)
        if isinstance(node, ast.Call):  # getattr(legacy, "get_price")
            f = node.func
            return (
                isinstance(f, ast.Name)
                and f.id == "getattr"
                and len(node.args) >= 2
                and self.is_module(node.args[0])
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == self.name
            )
        return False

    def _count(self, tree):
        return sorted(n.lineno for n in ast.walk(tree) if self.is_function(n))


class Unparsable(ValueError):
    pass


def count(root, api=OLD):
    """{relative path: [line of each use]} over root/shop/**/*.py, files with no use left out.
    Raises Unparsable for a file that is not Python."""
    root = Path(root)
    found = {}
    for path in sorted((root / "shop").rglob("*.py")):
        if path.name in NOT_SCANNED and path.parent == root / "shop":
            continue
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        except (SyntaxError, UnicodeDecodeError, ValueError) as e:
            raise Unparsable(f"{rel} does not parse: {e}") from None
        lines = Uses(tree, *api).lines
        if lines:
            found[rel] = lines
    return found


def main():
    try:
        found = count(Path(__file__).resolve().parent.parent)
    except Unparsable as e:
        print(e, file=sys.stderr)
        return 1
    for rel, lines in found.items():
        print(f"{rel}: {len(lines)} (lines {', '.join(map(str, lines))})", file=sys.stderr)
    print(sum(len(v) for v in found.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
