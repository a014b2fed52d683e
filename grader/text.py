"""Text that came from student code (messages, tracebacks, printed output, file names), made safe to show.

Two hazards. A lone surrogate (`raise ValueError("\\ud800")`, a file name that is not UTF-8) cannot be
written as UTF-8: JSON output and the terminal would fail on it. Control characters and escape sequences
(`\\x1b[2J`, a carriage return) would repaint an instructor's terminal, with a fake score line, say.
"""

from __future__ import annotations

import re

_SURROGATES = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, and the C1 controls (0x9b is a one-byte escape sequence start).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def valid_unicode(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD: always encodable as UTF-8."""
    return _SURROGATES.sub("\ufffd", text) if _SURROGATES.search(text) else text


def visible(text: str) -> str:
    """`text` as a terminal shows it harmlessly: control characters as visible escapes (`\\x1b`), lines
    and tabs kept."""
    text = valid_unicode(text)
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text) if _CONTROLS.search(text) else text


# A spreadsheet opening a CSV runs a cell that starts with = + - or @ as a formula (CSV injection,
# OWASP): `=HYPERLINK(...)` as a folder name or an LMS display name, both of them the student's to choose.
# Not only at the field's start: a spreadsheet told (or whose locale says) to split on `;`, a tab or `|`,
# or that splits on every separator whatever the quoting, starts a cell after each of them, and after a
# line break; one that splits first and strips quotes after starts one after a quote. So `x;=1+1` is
# `x` and a live `=1+1` in a `;` locale. Spaces before the formula do not help (an importer may trim them).
_FORMULA = re.compile(r"""(?<![^,;\t|\r\n"]) *[=+\-@]""")
_LEADING_CONTROL = ("\t", "\r")  # OWASP: a field starting with them is quoted as well


def spreadsheet_text(text: str) -> str:
    """`text` for a CSV cell that a spreadsheet shows as text, never runs, however it splits the line: a
    quote before every place a formula could start (spreadsheets hide a cell's leading quote), and before
    a leading tab or carriage return. For text only (names, folders, headers): a number the grader writes
    (a score, -1.5 too) stays a number and never comes here."""
    text = valid_unicode(text)
    text = _FORMULA.sub(lambda match: "'" + match.group(), text)
    return f"'{text}" if text.startswith(_LEADING_CONTROL) else text


def runs_as_formula(text: str) -> bool:
    """Whether a spreadsheet could run some of `text` as a formula (see spreadsheet_text); a number
    (-1.5, +3) is a number, not a formula."""
    try:
        float(text)
        return False
    except ValueError:
        return spreadsheet_text(text) != valid_unicode(text)


# Nouns whose plural is not the noun and an s; a count of any other noun adds the s.
_IRREGULAR = {"entry": "entries", "was": "were", "is": "are", "has": "have", "this": "these"}


def plural(count: int, noun: str) -> str:
    """`noun` as it goes with `count`: "trial" for 1, "trials" otherwise ("entry": "entries")."""
    if count == 1:
        return noun
    return _IRREGULAR.get(noun, f"{noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{noun}s")


def counted(count: int, noun: str) -> str:
    """`count` and `noun` agreeing: "1 student", "2 students", "1 entry", "3 entries"."""
    return f"{count} {plural(count, noun)}"
