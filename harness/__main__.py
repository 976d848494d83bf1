"""``python -m harness ...`` or ``python path/to/harness/__main__.py ...`` (the task's evaluator command)."""

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script, Python put this folder first on the path, where its modules (profile.py,
    # timing.py) would shadow the standard library's for every later import: the package root instead.
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p and str(Path(p).resolve()) != here]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from harness.cli import main
else:
    from .cli import main

if __name__ == "__main__":
    sys.exit(main())
