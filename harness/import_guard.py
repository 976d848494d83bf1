"""Import-time enforcement of the banned-module rule inside the evaluation child.

A meta-path finder at the front of ``sys.meta_path`` refuses any import of a banned module when
candidate code is on the call stack (whatever route got there: ``import``, ``importlib``,
``__import__``, ``exec`` of a string). Each refusal is recorded, so a candidate that swallows the
ImportError is still reported.

The harness itself may import a banned library for the baseline (``trusted_import``). That library
is then moved out of ``sys.modules`` into a private stash, so a later ``import fla`` from candidate
code goes through the finder again (and is refused), while the library's own lazy imports, made
with no candidate frame on the stack, are served from the stash.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path


class _StashLoader(importlib.abc.Loader):
    def __init__(self, module):
        self._module = module

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        return None


class ImportGuard(importlib.abc.MetaPathFinder):
    def __init__(self, banned: tuple[str, ...], candidate_dir: Path):
        self.banned = tuple(banned)
        self.candidate_dir = str(Path(candidate_dir).resolve())
        self.blocked: list[str] = []
        self._stash: dict[str, object] = {}

    # -- the finder -------------------------------------------------------------------------
    def _is_banned(self, fullname: str) -> bool:
        top = fullname.split(".", 1)[0]
        return top in self.banned or top == "harness" or fullname.startswith("marathon_task_")

    def _candidate_frame(self):
        f = sys._getframe(2)
        while f is not None:
            fn = f.f_code.co_filename
            if fn.startswith(self.candidate_dir) or fn in ("<string>", "<stdin>"):
                return f
            f = f.f_back
        return None

    def find_spec(self, fullname, path=None, target=None):
        if not self._is_banned(fullname):
            return None
        frame = self._candidate_frame()
        if frame is not None:
            where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
            self.blocked.append(f"import of '{fullname}' refused at run time ({where})")
            raise ImportError(f"marathon: import of '{fullname}' is not allowed in a candidate (banned module)")
        if fullname in self._stash:
            return importlib.util.spec_from_loader(fullname, _StashLoader(self._stash[fullname]))
        return None

    # -- harness side -----------------------------------------------------------------------
    def install(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def hide(self) -> None:
        """Move every banned module out of sys.modules into the stash."""
        for name in list(sys.modules):
            if self._is_banned(name) and not name.startswith(("harness", "marathon_task_")):
                self._stash[name] = sys.modules.pop(name)

    def trusted_import(self, name: str):
        """Import a banned module for the harness's own use (the baseline), then hide it again."""
        try:
            mod = importlib.import_module(name)
        finally:
            self.hide()
        return mod
