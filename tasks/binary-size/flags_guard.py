"""The binary-size task's guard (the generic evaluator runs it first; each line it prints is a
violation): every word of compile_flags.txt is a compiler option from an allow-list.

The flags are editable because choosing them is part of the task, but g++ options can also name
files and programs (-o, -B, -specs, -fplugin, -Wl,-T script, @file, -include, -x): with those a
candidate could link something other than its sources, or swap the tools the build uses. Allowed:
optimisation, code generation, warning and preprocessor-macro options, and linker options that
name no file.
"""

import re
import sys
from pathlib import Path

ALLOWED = re.compile(
    r"""-(
        O[0-3sgz]? | Ofast | g[0-3]? | s | static | static-libstdc\+\+ | static-libgcc
      | no-pie | pie | nostdlib | nostartfiles | nodefaultlibs
      | std=(c|gnu)\+\+[0-9a-z]+
      | [fm][a-z0-9][a-z0-9+_-]*(=[A-Za-z0-9_.,+-]+)?
      | W(?!l,|a,|p,)[a-z0-9][a-z0-9+_-]*(=[A-Za-z0-9_.-]+)?
      | Wl,[A-Za-z0-9_.=,-]+
      | D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_]*)? | U[A-Za-z_][A-Za-z0-9_]*
    )""",
    re.X,
)
DENIED = (
    "-fplugin",
    "-fprofile",
    "-fauto-profile",
    "-fcallgraph-info",
    "-fdump",
    "-Wl,-T",
    "-Wl,--script",
    "-Wl,--dynamic-linker",
    "-Wl,-rpath",
    "-Wl,--version-script",
)


def problems(text):
    out = []
    for word in text.split():
        if not ALLOWED.fullmatch(word) or word.startswith(DENIED):
            out.append(f"compile_flags.txt: {word!r} is not an allowed compiler option")
    return out


def main():
    path = Path("compile_flags.txt")
    if path.is_file():
        for line in problems(path.read_text(errors="replace")):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
