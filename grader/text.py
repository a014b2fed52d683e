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


# A spreadsheet opening a CSV runs a cell that starts with one of these as a formula (CSV injection,
# OWASP): `=HYPERLINK(...)` as a folder name or an LMS display name, both of them the student's to choose.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """`text` for a CSV cell that a spreadsheet shows as text, never runs: a leading quote where it would
    start a formula (spreadsheets hide that quote)."""
    text = valid_unicode(text)
    return f"'{text}" if text.startswith(_FORMULA_START) else text


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
