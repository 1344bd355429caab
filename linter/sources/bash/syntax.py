"""Whether bash itself rejects a script: a recogniser of bash's grammar, the judge of SH002.

tree-sitter-bash gives the tree the interpreter evaluates, but it reports errors where bash has none
(`${V:-['a','b']}`, `case x in esac`, `(( ))`, a redirection alone, `$"..."` in `${...}`), so its ERROR nodes do
not say that a script is invalid. This recogniser follows bash's own parser (`parse.y`) as far as `bash -n` checks:
quoting (`'`, `"`, `$'...'`, backslashes, line continuations), `$(...)` (whose commands bash parses too), `${...}`,
`$((...))`, backquotes, here-documents, arrays, and the grammar of lists, pipelines, compound commands (`if`,
`case`, `for`, `select`, `while`, `until`, `{ }`, `( )`, `(( ))`, `[[ ]]`) and function definitions. It reports
the first error bash would stop at, and only what bash surely rejects: what it does not model (the inside of
`[[ ]]` and `(( ))`, extended globs, an identifier's validity) it accepts. `tests/test_bash_property.py` holds it to
`bash -n` over generated scripts and verl's own.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class SyntaxProblem(NamedTuple):
    """Where bash stops: at `offset` (a character index), on an unexpected token or at the end of the text while
    a construct is still open (`missing` is what would close it)."""

    offset: int
    unexpected: str | None  # the token bash did not expect there (`fi`, `)`, `;;`, `newline`)
    missing: str | None  # what the text ended without (`fi`, `done`, `"`, `)`)


class _Reject(Exception):
    def __init__(self, problem: SyntaxProblem):
        super().__init__(problem)
        self.problem = problem


class _GiveUp(Exception):
    """Nested deeper than the recogniser follows: it says nothing about the script."""


MAX_DEPTH = 150
_BLANK = " \t"
_METACHARS = set(" \t\n|&;()<>")
_RESERVED = {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done"}
_RESERVED |= {"function", "{", "}", "!", "[[", "time", "coproc"}
# A list ends before these (in command position); the construct that opened it says which one it needs.
_ENDS_LIST = {"then", "else", "elif", "fi", "do", "done", "esac", "}"}
_OPERATORS = ("&&", "||", ";;&", ";;", ";&", ";", "&", "|&", "|", "(", ")")
_OPERATOR_START = set("&|;()<>{0123456789")  # what an operator or a redirection can start with
_REDIRECTION = re.compile(r"(?:\d+|\{[A-Za-z_]\w*\})?(?:<<<|<<-|<<|<>|<&|>&|>>|>\||&>>|&>|<|>)")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
_EXTGLOB = set("@!+*?")
_DECLARATIONS = {"declare", "typeset", "local", "export", "readonly"}
_COMPOUND_STARTS = {"{", "if", "case", "for", "select", "while", "until", "[["}
# What `word_end` looks at in a word (quotes, escapes, expansions, `(` and the metacharacters): a run of anything else
# is passed over at once.
_SPECIAL_IN_WORD = frozenset("\\'\"`$<>(") | _METACHARS
_ORDINARY_RUN = re.compile(r"[^\\'\"`$<>()|&; \t\n]+")


class _Token(NamedTuple):
    kind: str  # "word", "op" (an operator or a newline), "redir" or "eof"
    text: str
    start: int
    end: int
    quoted: bool = False  # a word with a quote or escape in it is never a reserved word


def syntax_problem(text: str) -> SyntaxProblem | None:
    """The first syntax error bash reports on the script, or None when bash parses it (or it nests deeper than
    `MAX_DEPTH`, where nothing is said)."""
    parser = _Parser(text)
    try:
        parser.program()
    except _Reject as exc:
        return exc.problem
    except (_GiveUp, RecursionError):
        return None
    return None


class _Parser:
    def __init__(self, text: str):
        self.s = text
        self.pos = 0
        self.depth = 0
        self.heredocs: list[tuple[str, bool]] = []  # delimiters still to read after the next line break (tabs?)
        self.peeked: _Token | None = None
        self.open: list[str] = []  # what closes each construct open here, innermost last
        # whether `NAME=(` starts an array here: in an assignment before a command's name, or in an argument of a
        # declaration builtin (`declare -a A=(...)`); elsewhere bash rejects the `(`
        self.arrays = True

    # ------------------------------------------------------------------ errors
    def unexpected(self, tok: _Token):
        if tok.text == "(" and self.s.startswith("((", tok.start):
            raise _GiveUp()  # bash may read `((` on as arithmetic, to a `))` much further on
        if tok.kind == "eof":
            raise _Reject(SyntaxProblem(tok.start, None, self.open[-1] if self.open else None))
        shown = "newline" if tok.text == "\n" else tok.text
        raise _Reject(SyntaxProblem(tok.start, shown, None))

    def missing(self, what: str, offset: int | None = None):
        raise _Reject(SyntaxProblem(len(self.s) if offset is None else offset, None, what))

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _GiveUp()

    # ------------------------------------------------------------------ lexer
    def skip_blanks(self) -> None:
        s, i = self.s, self.pos
        while i < len(s):
            if s[i] in _BLANK:
                i += 1
            elif s.startswith("\\\n", i):
                i += 2
            elif s[i] == "#" and (i == 0 or s[i - 1] in _METACHARS):
                nl = s.find("\n", i)
                i = len(s) if nl < 0 else nl
            else:
                break
        self.pos = i

    def peek(self) -> _Token:
        if self.peeked is None:
            self.peeked = self.lex()
        return self.peeked

    def next(self) -> _Token:
        tok = self.peek()
        self.peeked = None
        return tok

    def lex(self) -> _Token:
        self.skip_blanks()
        s, i = self.s, self.pos
        if i >= len(s):
            return _Token("eof", "", i, i)
        if s[i] == "\n":
            self.pos = i + 1
            self.read_heredocs()
            return _Token("op", "\n", i, i + 1)
        if s[i] in _OPERATOR_START:
            m = _REDIRECTION.match(s, i)
            if m and not (s[i] in "<>" and s.startswith("(", m.end()) and m.end() == i + 1):
                self.pos = m.end()
                return _Token("redir", m.group(), i, m.end())
            for op in _OPERATORS:
                if s.startswith(op, i):
                    self.pos = i + len(op)
                    return _Token("op", op, i, i + len(op))
        end, quoted = self.word_end(i)
        self.pos = end
        return _Token("word", s[i:end].replace("\\\n", ""), i, end, quoted)

    def word_end(self, i: int) -> tuple[int, bool]:
        """Where the word starting at `i` ends, and whether any of it is quoted or escaped."""
        s = self.s
        quoted = False
        start = i
        while i < len(s):
            c = s[i]
            if c not in _SPECIAL_IN_WORD:
                i = _ORDINARY_RUN.match(s, i).end()
            elif c == "\\":
                if i + 1 >= len(s):
                    return i + 1, True
                quoted = quoted or s[i + 1] != "\n"  # a line continuation is no quoting: `i\<newline>n` is `in`
                i += 2
            elif c == "'":
                i = self.closing_quote(i)
                quoted = True
            elif c == '"':
                i = self.double_quoted(i)
                quoted = True
            elif c == "`":
                i = self.backquoted(i)
            elif c == "$" and i + 1 < len(s):
                i = self.dollar(i)
            elif c in "<>" and s.startswith("(", i + 1):  # process substitution: bash matches it as text
                try:
                    i = self.balanced(i + 1, "(", ")", multiline=True)
                except _Reject:
                    raise _GiveUp() from None
            elif c == "(" and i > start and s[i - 1] in _EXTGLOB:
                i = self.balanced(i, "(", ")")
            elif c == "(" and self.arrays and i > start and s[i - 1] == "=" and _ASSIGNMENT.fullmatch(s, start, i):
                i = self.array(i)
            elif c in _METACHARS:
                break
            else:
                i += 1
        return i, quoted

    def quoted_end(self, i: int) -> int:
        """The end of the one quoted or expanded part at `i` (a quote, a backquote, a `$` form or an escape)."""
        c = self.s[i]
        if c == "\\":
            return i + 2
        if c == "'":
            return self.closing_quote(i)
        if c == '"':
            return self.double_quoted(i)
        if c == "`":
            return self.backquoted(i)
        return self.dollar(i) if i + 1 < len(self.s) else i + 1

    def closing_quote(self, i: int) -> int:
        end = self.s.find("'", i + 1)
        if end < 0:
            self.missing("'", i)
        return end + 1

    def double_quoted(self, i: int) -> int:
        s = self.s
        j = i + 1
        while j < len(s):
            c = s[j]
            if c == '"':
                return j + 1
            if c == "\\":
                j += 2
            elif c == "`":
                j = self.backquoted(j)
            elif c == "$" and j + 1 < len(s):
                j = self.dollar(j, in_quotes=True)
            else:
                j += 1
        self.missing('"', i)
        return j

    def backquoted(self, i: int) -> int:
        s = self.s
        j = i + 1
        while j < len(s):
            if s[j] == "\\":
                j += 2
            elif s[j] == "`":
                return j + 1
            else:
                j += 1
        self.missing("`", i)
        return j

    def dollar(self, i: int, in_quotes: bool = False) -> int:
        """The end of the expansion at `$`: `$(...)`, `$((...))`, `${...}`, `$'...'`, `$"..."`, or a plain `$`."""
        s = self.s
        nxt = s[i + 1]
        if nxt in "$#?!-@*0123456789":  # a special parameter: `$$(` is the shell's pid, then `(`
            return i + 2
        if nxt == "(":
            if s.startswith("((", i + 1):
                end = self.arithmetic_end(i + 1)
                if end is None:  # `$((` whose parentheses do not close with `))`: bash's reading is not followed
                    raise _GiveUp()
                return end
            return self.subshell_text(i + 1)
        if nxt == "{":
            return self.braced(i + 1, in_quotes)
        if nxt == "'" and not in_quotes:
            j = i + 2
            while j < len(s):
                if s[j] == "\\":
                    j += 2
                elif s[j] == "'":
                    return j + 1
                else:
                    j += 1
            self.missing("'", i)
        if nxt == '"' and not in_quotes:
            return self.double_quoted(i + 1)
        return i + 1

    def arithmetic_end(self, i: int) -> int | None:
        """`((...))` from its first `(`: the end after `))`, or None when the parentheses close otherwise (then it
        is a subshell in a subshell, as bash decides)."""
        s = self.s
        depth = 0
        j = i
        while j < len(s):
            c = s[j]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 1:
                    return j + 2 if s.startswith(")", j + 1) else None
            elif c in "'\"\\":  # quotes and escapes; not `${`, which bash does not match inside `((`
                try:
                    j = self.quoted_end(j)
                except _Reject:  # bash matches the parentheses of `((` without reading every quote inside
                    raise _GiveUp() from None
                continue
            j += 1
        return None

    def subshell_text(self, i: int) -> int:
        """`(` at `i` opens commands up to the matching `)`: parsed as bash parses `$(...)`."""
        self.enter()
        saved_pos, saved_peek, saved_heredocs = self.pos, self.peeked, self.heredocs
        self.pos, self.peeked, self.heredocs = i + 1, None, []
        self.command_list(until=(")",), may_be_empty=True)
        tok = self.next()
        if tok.text != ")":
            if tok.kind == "eof":
                self.missing(")", i)
            self.unexpected(tok)
        end = self.pos
        # a here-document started inside and not read there is read after the next line break outside
        self.pos, self.peeked, self.heredocs = saved_pos, saved_peek, saved_heredocs + self.heredocs
        self.depth -= 1
        return end

    def braced(self, i: int, in_quotes: bool) -> int:
        """`${...}` from its `{`: to the matching `}`, past quotes and nested expansions."""
        s = self.s
        j = i + 1
        while j < len(s):
            c = s[j]
            if c == "}":
                return j + 1
            if c == "\\":
                j += 2
            elif c == "'":  # a quote inside `${...}` even within double quotes: bash (not in POSIX mode) matches it
                j = self.closing_quote(j)
            elif c == '"':
                j = self.double_quoted(j)
            elif c == "`":
                j = self.backquoted(j)
            elif c == "$" and j + 1 < len(s):
                j = self.dollar(j, in_quotes)
            else:
                j += 1
        self.missing("}", i - 1)
        return j

    def balanced(self, i: int, opening: str, closing: str, multiline: bool = False) -> int:
        s = self.s
        depth = 0
        j = i
        while j < len(s):
            c = s[j]
            if c == opening:
                depth += 1
            elif c == closing:
                depth -= 1
                if depth == 0:
                    return j + 1
            elif c in "'\"`$\\":
                j = self.quoted_end(j)
                continue
            elif c == "\n" and not multiline:
                break
            j += 1
        self.missing(closing, i)
        return j

    def array(self, i: int) -> int:
        """`NAME=(...)` from its `(`: words (one that starts with `[` is read to its `]` first, as a subscript:
        `[k>1]=v`), line breaks and comments up to `)`."""
        saved_peek = self.peeked
        self.pos, self.peeked = i + 1, None
        while True:
            self.skip_blanks()
            if self.s.startswith("[", self.pos):
                close = self.s.find("]", self.pos)
                newline = self.s.find("\n", self.pos)
                if close > 0 and (newline < 0 or close < newline):
                    self.pos = self.word_end(close + 1)[0]
                    continue
            tok = self.next()
            if tok.kind == "word" or tok.text == "\n":
                continue
            if tok.text == ")":
                end = self.pos
                self.peeked = saved_peek
                return end
            if tok.kind == "eof":
                self.missing(")", i)
            self.unexpected(tok)

    def read_heredocs(self) -> None:
        """After a line break: the bodies of the here-documents started on the line (bash only warns when one runs
        to the end of the text)."""
        s = self.s
        for delimiter, strip_tabs in self.heredocs:
            i = self.pos
            while i < len(s):
                nl = s.find("\n", i)
                end = len(s) if nl < 0 else nl
                line = s[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
            self.pos = min(i, len(s))
        self.heredocs = []

    # ------------------------------------------------------------------ grammar
    def program(self) -> None:
        self.command_list(until=(), may_be_empty=True)
        tok = self.next()
        if tok.kind != "eof":
            self.unexpected(tok)

    def skip_newlines(self) -> None:
        while self.peek().text == "\n" and self.peek().kind == "op":
            self.next()

    def ends_list(self, tok: _Token, until: tuple[str, ...]) -> bool:
        if tok.kind == "eof":
            return True
        if tok.kind == "op":
            return tok.text in until or tok.text in (")", ";;", ";&", ";;&")
        return tok.kind == "word" and not tok.quoted and tok.text in _ENDS_LIST

    def command_list(self, until: tuple[str, ...], may_be_empty: bool = False) -> None:
        """Commands separated by `;`, `&` or line breaks, up to (not past) a token in `until`, a reserved word that
        ends a list, `)`, a `case` terminator or the end; bash requires at least one unless `may_be_empty`."""
        self.skip_newlines()
        count = 0
        while not self.ends_list(self.peek(), until):
            self.and_or()
            count += 1
            tok = self.peek()
            if tok.kind == "op" and tok.text in (";", "&", "\n"):
                self.next()
                self.skip_newlines()
            elif not self.ends_list(tok, until):
                self.unexpected(tok)
        if not count and not may_be_empty:
            self.unexpected(self.peek())

    def and_or(self) -> None:
        self.pipeline()
        while self.peek().kind == "op" and self.peek().text in ("&&", "||"):
            self.next()
            self.skip_newlines()
            self.pipeline()

    def pipeline(self) -> None:
        tok = self.peek()
        if tok.kind == "word" and not tok.quoted and tok.text == "time":
            self.next()
            if self.peek().kind == "word" and self.peek().text == "-p":
                self.next()
        while self.peek().kind == "word" and not self.peek().quoted and self.peek().text == "!":
            self.next()
        self.command()
        while self.peek().kind == "op" and self.peek().text in ("|", "|&"):
            self.next()
            self.skip_newlines()
            self.command()

    def command(self) -> None:
        self.enter()
        tok = self.peek()
        word = tok.text if tok.kind == "word" and not tok.quoted else None
        compound = {
            "if": self.if_,
            "case": self.case,
            "for": self.for_,
            "select": self.for_,
            "while": self.while_,
            "until": self.while_,
            "{": self.group,
            "[[": self.conditional,
            "function": self.function,
            "coproc": self.coproc,
        }.get(word)
        if compound is not None:
            compound()
            self.redirections()
        elif tok.kind == "op" and tok.text == "(":
            self.subshell()
            self.redirections()
        elif word in _RESERVED or tok.kind == "eof" or (tok.kind == "op" and tok.text != "\n"):
            self.unexpected(tok)
        elif tok.kind == "op":  # a line break where a command must follow (`a |` then the end)
            self.unexpected(tok)
        else:
            self.simple_command()
        self.depth -= 1

    def redirections(self) -> None:
        while self.peek().kind == "redir":
            self.redirection()

    def redirection(self) -> None:
        op = self.next()
        target = self.next()
        if target.kind != "word":
            self.unexpected(target)
        if op.text.endswith(("<<", "<<-")) and not op.text.endswith("<<<"):
            delimiter = re.sub(r"\\(.)|['\"]", lambda m: m.group(1) or "", target.text)
            self.heredocs.append((delimiter, op.text.endswith("-")))

    def simple_command(self) -> None:
        first = True
        try:
            while True:
                tok = self.peek()
                if tok.kind == "redir":
                    self.redirection()
                elif tok.kind == "word":
                    self.next()
                    if first and not _ASSIGNMENT.match(tok.text):  # the command's name
                        self.arrays = tok.text in _DECLARATIONS
                        if self.peek().kind == "op" and self.peek().text == "(":
                            self.function_body()
                            return
                        first = False
                else:
                    return
        finally:
            self.arrays = True

    def function_body(self) -> None:
        """`name ( )` then a compound command."""
        self.next()
        tok = self.next()
        if tok.text != ")":
            self.unexpected(tok)
        self.compound_body()

    def compound_body(self) -> None:
        """A function's body: a compound command, with line breaks allowed before it."""
        self.skip_newlines()
        tok = self.peek()
        if tok.kind == "op" and tok.text == "(":
            self.subshell()
        elif tok.kind == "word" and not tok.quoted and tok.text in _COMPOUND_STARTS:
            self.command()
        else:
            self.unexpected(tok)

    def expect(self, word: str) -> None:
        tok = self.next()
        if tok.kind == "word" and not tok.quoted and tok.text == word:
            return
        if tok.kind == "eof":
            self.missing(word)
        self.unexpected(tok)

    def opened(self, closer: str) -> None:
        self.next()
        self.open.append(closer)

    def if_(self) -> None:
        self.opened("fi")
        self.command_list(until=())
        self.expect("then")
        self.command_list(until=())
        while True:
            tok = self.peek()
            if tok.kind == "word" and not tok.quoted and tok.text == "elif":
                self.next()
                self.command_list(until=())
                self.expect("then")
                self.command_list(until=())
            elif tok.kind == "word" and not tok.quoted and tok.text == "else":
                self.next()
                self.command_list(until=())
            else:
                break
        self.expect("fi")
        self.open.pop()

    def while_(self) -> None:
        self.opened("done")
        self.command_list(until=())
        self.expect("do")
        self.command_list(until=())
        self.expect("done")
        self.open.pop()

    def for_(self) -> None:
        self.opened("done")
        tok = self.peek()
        if tok.kind == "op" and tok.text == "(" and self.s.startswith("((", tok.start):
            end = self.arithmetic_end(tok.start)
            if end is None:
                self.missing("))", tok.start)
            self.pos, self.peeked = end, None
            if self.peek().text == ";":
                self.next()
        else:
            name = self.next()
            if name.kind != "word":
                self.unexpected(name)
            if self.peek().kind == "op" and self.peek().text == ";":
                self.next()
            self.skip_newlines()
            tok = self.peek()
            if tok.kind == "word" and not tok.quoted and tok.text == "in":
                self.next()
                while self.peek().kind == "word":
                    self.next()
                sep = self.next()
                if sep.text not in (";", "\n"):
                    self.unexpected(sep)
        self.skip_newlines()
        tok = self.peek()
        if tok.kind == "word" and not tok.quoted and tok.text == "{":
            self.open.pop()
            self.group()
            return
        self.expect("do")
        self.command_list(until=())
        self.expect("done")
        self.open.pop()

    def case(self) -> None:
        self.opened("esac")
        subject = self.next()
        if subject.kind != "word":
            self.unexpected(subject)
        self.skip_newlines()
        self.expect("in")
        self.skip_newlines()
        while True:
            tok = self.next()
            if tok.kind == "word" and not tok.quoted and tok.text == "esac":
                self.open.pop()
                return
            if tok.kind == "eof":
                self.missing("esac")
            if tok.kind == "op" and tok.text == "(":
                tok = self.next()
            while True:  # patterns: word (| word)* )
                if tok.kind != "word":
                    self.unexpected(tok)
                tok = self.next()
                if tok.kind == "op" and tok.text == "|":
                    tok = self.next()
                    continue
                if tok.kind == "op" and tok.text == ")":
                    break
                self.unexpected(tok)
            self.command_list(until=(), may_be_empty=True)
            tok = self.peek()
            if tok.kind == "op" and tok.text in (";;", ";&", ";;&"):
                self.next()
                self.skip_newlines()
            elif not (tok.kind == "word" and not tok.quoted and tok.text == "esac"):
                if tok.kind == "eof":
                    self.missing("esac")
                self.unexpected(tok)

    def group(self) -> None:
        self.opened("}")
        self.command_list(until=())
        self.expect("}")
        self.open.pop()

    def subshell(self) -> None:
        tok = self.peek()
        if self.s.startswith("((", tok.start):  # arithmetic, whose inside bash checks only when it runs
            end = self.arithmetic_end(tok.start)
            if end is None:  # or a subshell in a subshell, or what bash reads otherwise: nothing is said
                raise _GiveUp()
            self.pos, self.peeked = end, None
            return
        self.opened(")")
        self.command_list(until=(")",))
        closing = self.next()
        if closing.text != ")":
            if closing.kind == "eof":
                self.missing(")")
            self.unexpected(closing)
        self.open.pop()

    def conditional(self) -> None:
        """`[[ ... ]]`, to its `]]`. Where bash's reading of the inside would fail (no `]]`, operands and operators
        out of place), bash stops there, saying at most that (`bash -n` even succeeds), and so does this; a regex
        after `=~` is not looked into."""
        self.next()
        s = self.s
        i = self.pos
        words: list[str] = []  # the inside, as words and the operators `(`, `)`, `&&`, `||`, `<`, `>`
        while True:
            self.pos = i
            self.skip_blanks()
            i = self.pos
            if i >= len(s):
                raise _GiveUp()
            if s.startswith("]]", i) and (i + 2 >= len(s) or s[i + 2] in _METACHARS):
                self.pos, self.peeked = i + 2, None
                break
            if s.startswith(("&&", "||"), i):
                words.append(s[i : i + 2])
                i += 2
            elif s[i] in "()<>":
                words.append(s[i])
                i += 1
            elif s[i] in _METACHARS:
                raise _GiveUp()  # `|`, `;`, `&` or a line break where no test goes
            else:
                end, _ = self.word_end(i)
                words.append(s[i:end])
                i = end
        if "=~" not in words and not _Condition(words).valid():
            raise _GiveUp()

    def function(self) -> None:
        self.next()
        name = self.next()
        if name.kind != "word":
            self.unexpected(name)
        if self.peek().kind == "op" and self.peek().text == "(":
            self.function_body()
        else:
            self.compound_body()

    def coproc(self) -> None:
        """`coproc [NAME] command`: a NAME is only taken before a compound command."""
        self.next()
        tok = self.peek()
        if tok.kind == "word" and not tok.quoted and tok.text not in _RESERVED:
            self.pos, self.peeked = tok.end, None
            after = self.peek()
            if not (after.kind == "word" and not after.quoted and after.text in _COMPOUND_STARTS):
                self.pos, self.peeked = tok.start, None
        self.command()


_UNARY_TESTS = {f"-{c}" for c in "abcdefghknoprstuvwxzGLNORS"}
_BINARY_TESTS = {"==", "=", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"}


class _Condition:
    """The grammar of the inside of `[[ ]]`: `!`, `( )`, `&&`, `||` over `WORD`, `-OP WORD`, `WORD OP WORD`."""

    def __init__(self, words: list[str]):
        self.words, self.i = words, 0

    def valid(self) -> bool:
        return bool(self.words) and self.either() and self.i == len(self.words)

    def at(self, *texts: str) -> bool:
        return self.i < len(self.words) and self.words[self.i] in texts

    def either(self) -> bool:
        if not self.both():
            return False
        while self.at("||"):
            self.i += 1
            if not self.both():
                return False
        return True

    def both(self) -> bool:
        if not self.term():
            return False
        while self.at("&&"):
            self.i += 1
            if not self.term():
                return False
        return True

    def term(self) -> bool:
        words = self.words
        if self.at("!"):
            self.i += 1
            return self.term()
        if self.at("("):
            self.i += 1
            if not self.either() or not self.at(")"):
                return False
            self.i += 1
            return True
        if self.i >= len(words) or self.at(")", "&&", "||", "<", ">"):
            return False
        if words[self.i] in _UNARY_TESTS and self.i + 1 < len(words) and words[self.i + 1] not in ("&&", "||", ")"):
            self.i += 2
            return True
        self.i += 1
        if self.at(*_BINARY_TESTS):
            self.i += 1
            if self.i >= len(words) or self.at("(", ")", "&&", "||"):
                return False
            self.i += 1
        return True
