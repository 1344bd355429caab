"""Recognising trainer calls in a script being evaluated: `python3 -m verl.<module> ...` (also `torchrun`,
a versioned or absolute interpreter, one named through a variable (`"${CONDA_BIN}python"`, `$PYTHON -m ...`),
interpreter options before `-m` with their values, and a launcher held in an array), and a wrapper entry module
given Hydra overrides (`python3 -m recipe.dapo.main_dapo data.x=1`, `python3 train.py trainer.y=2`: the script's
own module, whose `@hydra.main` the reader finds), with Hydra's `--config-name`/`-cn` and `--config-path`/`-cp`
taken out of the overrides; and the first other command that runs Ascend software, for the device the variant runs
on."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...core.command import DeviceSignal, EnvVar
from ...core.diagnostics import Location
from .device_signals import ascend_command
from .interpreter import PASSTHROUGH_FIELD, Interpreter
from .markers import after_markers

_PYTHON = re.compile(r"^(python(\d+(\.\d+)?)?|torchrun)$")
# An argument Hydra reads: an override (`data.train_files=x`, `+a.b=1`, `~a.b`, `seed=1`) or a config option. A
# module that is not verl's is a trainer call only when given one: `python3 -m examples.prep --out x` is not.
_HYDRA_ARGUMENT = re.compile(
    r"(?:\+\+|\+|~)?[A-Za-z_][\w-]*(?:\.[\w-]+)*(?:@[\w.]+)?="  # sets a key
    r"|~[A-Za-z_][\w-]*(?:\.[\w-]+)*$"  # deletes one
    r"|(?:--config-(?:name|path)|-c[np])(?:=|$)"
)
# The same as the script's text shows it, for `watches`: a Python or torchrun command (also ending a quoted word or
# a variable's name: `"${CONDA_BIN}python"`, `$PYTHON`) and a dotted override, a config option or an array's
# elements (`"${ARGS[@]}"`) in the same statement.
_PYTHON_TEXT = re.compile(rb"\b(?:(?i:python)[\d.]*|torchrun)[\"'}]?\s")
_HYDRA_TEXT = re.compile(rb"(?:^|[\s\"'(])[+~]{0,2}[A-Za-z_][\w-]*\.[\w.-]*=|--config-(?:name|path)\b|\[[@*]\]\}")


@dataclass(slots=True)
class TrainerCall:
    """One trainer invocation found while evaluating a variant."""

    node_loc: Location
    module: str  # `verl.trainer.main_ppo`, a wrapper's `recipe.dapo.main_dapo`, or a file's path as written
    config_name: str | None
    config_path: str | None
    args: list[tuple[str, Location]]
    env: dict[str, EnvVar]
    passthrough: Location | None
    is_file: bool = False  # `module` is a file run as `python3 path/to/train.py`
    cwd: str | None = None  # the directory the script `cd`s into before the call (`Interpreter.cwd`)
    # The words before the module or file: a launcher's (`uv run --frozen`), the interpreter, its options
    launch: tuple[str, ...] = ()
    loop: tuple[tuple[str, str], ...] = ()  # the loops' variables around the call, with their values this round


class TrainerCallFinder(Interpreter):
    """Evaluates one variant of a script and records the verl trainer calls it makes."""

    @staticmethod
    def watches(text: bytes) -> bool:
        return b"verl." in text or bool(_PYTHON_TEXT.search(text) and _HYDRA_TEXT.search(text))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.trainers: list[TrainerCall] = []
        self.ascend_command: DeviceSignal | None = None  # the first other command that runs Ascend software

    def command(self, n) -> None:
        called = len(self.trainers)
        super().command(n)
        if self.ascend_command is None and len(self.trainers) == called:
            self.ascend_command = ascend_command(self, n)

    def on_command(self, n, fields, assignments, passthrough) -> None:
        for i, (f, _) in enumerate(fields):
            call = self._call(f, fields[i + 1 :])
            if call is None:
                continue
            # `-- python3 -m verl...` after a cut `ray job submit ... \` never runs; it is checked as if it ran, and
            # SH005 says so (`script._broken_continuations`)
            module, args, is_file, options = call
            launch = tuple(text for text, _ in fields[: i + 1 + options])
            self._trainer(n, module, args, assignments, passthrough, is_file, launch)
            return

    def _call(self, word: str, rest: list[tuple[str, Location]]) -> tuple[str, list, bool, int] | None:
        """(the module or file, its arguments, whether it is a file, how many interpreter options come before it)
        where `word` is an interpreter that `rest` makes a trainer call; None where it makes none."""
        base = self._interpreter(word)
        if base is None:
            return None
        j = 0
        while j < len(rest) and rest[j][0].startswith("-") and rest[j][0] not in ("-m", "--module"):
            j += 2 if _takes_value(base, rest[j][0]) else 1  # interpreter options (-u, -X dev, --nnodes 2)
        if j + 1 < len(rest) and rest[j][0] in ("-m", "--module"):
            module, args = rest[j + 1][0], rest[j + 2 :]
            if module.startswith("verl.") or _hydra_arguments(args):
                return module, args, False, j
        elif j < len(rest) and rest[j][0].endswith(".py") and _hydra_arguments(rest[j + 1 :]):
            return rest[j][0], rest[j + 1 :], True, j
        return None

    def _interpreter(self, word: str) -> str | None:
        """The interpreter a word names (`python3`, `torchrun`), also through a path (`/usr/bin/python3`) or after a
        part of unknown value (`${CONDA_BIN}python3`); "python" for a word that ends in a part of unknown value
        (`$PYTHON`), which only Python's `-m MODULE` or `FILE.py` after it makes a trainer call; None for any other
        word."""
        tail = after_markers(word, self.marks)
        base = (word if tail is None else tail).rsplit("/", 1)[-1]
        if _PYTHON.match(base):
            return base
        return "python" if tail == "" else None

    def _trainer(self, n, module, args, assignments, passthrough, is_file, launch) -> None:
        config_name = config_path = None
        out = []
        k = 0
        while k < len(args):
            text, loc = args[k]
            if text == PASSTHROUGH_FIELD:
                k += 1
                continue
            for flag, short in (("--config-name", "-cn"), ("--config-path", "-cp")):
                if text in (flag, short) and k + 1 < len(args):
                    value = args[k + 1][0]
                    k += 1
                    break
                if text.startswith(flag + "="):
                    value = text.split("=", 1)[1]
                    break
            else:
                flag = None
            if flag == "--config-name":
                config_name = value.removesuffix(".yaml")
            elif flag == "--config-path":
                config_path = value
            else:
                out.append((text, loc))
            k += 1
        # the command's own prefix assignments win over exported variables of the same name
        env = {name: EnvVar(name, value, loc) for name, (value, loc) in {**self.exported, **assignments}.items()}
        loop = tuple((name, value) for name in self.loop_variables if isinstance(value := self.vars.get(name), str))
        self.trainers.append(
            TrainerCall(
                self.loc(n), module, config_name, config_path, out, env, passthrough, is_file, self.cwd, launch, loop
            )
        )


def _hydra_arguments(args: list[tuple[str, Location]]) -> bool:
    return any(_HYDRA_ARGUMENT.match(text) for text, _ in args)


# Options written apart from their value (`python3 -X faulthandler -m ...`, `torchrun --nnodes 2 -m ...`): Python's
# that take one, and every long option of torchrun but its flags.
_PYTHON_VALUE_OPTIONS = frozenset(("-X", "-W", "--check-hash-based-pycs"))
_TORCHRUN_FLAGS = frozenset(("--standalone", "--no-python", "--no_python", "--run-path", "--run_path"))


def _takes_value(interpreter: str, option: str) -> bool:
    if interpreter == "torchrun":
        return option.startswith("--") and "=" not in option and option not in _TORCHRUN_FLAGS
    return option in _PYTHON_VALUE_OPTIONS
