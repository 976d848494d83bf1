"""marathon's kernel evaluation harness: correctness, timing, rules and profiling for GPU kernel tasks.

One command line (``python -m harness``, see harness/cli.py) is the evaluator of every kernel task.
"""

# Bump when a verdict or a score could change for the same candidate (tasks' evaluator.version too).
EVALUATOR_VERSION = "1"
