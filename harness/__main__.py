"""``python -m harness ...`` or ``python path/to/harness/__main__.py ...`` (the task's evaluator command)."""

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from harness.cli import main
else:
    from .cli import main

if __name__ == "__main__":
    sys.exit(main())
