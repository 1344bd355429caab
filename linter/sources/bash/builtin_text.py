"""The text the shell builtins the interpreter follows work on: a builtin's `-x` options, what `read`'s last name
gets from a line, and `printf`'s formatting of the conversions it evaluates. Pure string functions."""

from __future__ import annotations

import re

from .words import ansi_c


def builtin_options(words: list[str], takes_value: str) -> tuple[dict[str, str], list[str]]:
    """A builtin's `-x` options (those in `takes_value` with their value) and its other words."""
    options: dict[str, str] = {}
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        for j, flag in enumerate(words[i][1:]):
            if flag in takes_value:
                rest = words[i][j + 2 :]
                options[flag] = rest if rest else (words[i + 1] if i + 1 < len(words) else "")
                i += 0 if rest else 1
                break
            options[flag] = ""
        i += 1
    return options, words[i + (i < len(words) and words[i] == "--") :]


def rest_of_line(line: str, skip: int, ifs: str) -> str:
    """What `read`'s last name gets: the line after the first `skip` fields and their separators, without IFS white
    space at its ends."""
    white = "".join(c for c in ifs if c in " \t\n")
    i = len(line) - len(line.lstrip(white))
    for _ in range(skip):
        while i < len(line) and line[i] not in ifs:
            i += 1
        while i < len(line) and line[i] in white:
            i += 1
        if i < len(line) and line[i] in ifs:
            i += 1
        while i < len(line) and line[i] in white:
            i += 1
    return line[i:].rstrip(white)


_PRINTF = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d*)(?:\.(?P<precision>\d+))?(?P<conv>[sdiqb%])")


def printf_text(fmt: str, args: list[str]) -> str | None:
    """`printf FORMAT ARGS...` for `%s`, `%d`, `%i` and `%%` with flags and widths, the format reused while
    arguments remain, as bash does; None for any other conversion or a non-number for `%d`."""
    fmt = ansi_c(fmt)
    out, rest = [], list(args)
    while True:
        pos, used = 0, 0
        for m in _PRINTF.finditer(fmt):
            out.append(fmt[pos : m.start()])
            pos = m.end()
            conv = m["conv"]
            if conv == "%":
                out.append("%")
                continue
            if conv in "qb":
                return None
            arg = rest.pop(0) if rest else ""
            used += 1
            spec = f"%{m['flags']}{m['width']}{'.' + m['precision'] if m['precision'] else ''}"
            if conv == "s":
                out.append((spec + "s") % arg)
            else:
                try:
                    out.append((spec + "d") % (int(arg, 0) if arg else 0))
                except ValueError:
                    return None
        out.append(fmt[pos:])
        if not rest or not used:
            return "".join(out)
