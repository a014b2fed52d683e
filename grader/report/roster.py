"""`--roster FILE`: who the class is, as the LMS knows them — each submissions folder's LMS id, name, email.

The roster is a CSV with a header row. Column names are matched without regard to case, spaces, dashes or
underscores, and the common spellings of each are accepted (an LMS's own export, or a spreadsheet someone
typed), so `Email Address` and `email` both name the email column:

    folder          the student's folder under --submissions (required)
    id              the LMS's student id (required): Canvas's user ID, Moodle's ID number
    name            the student's name, as the LMS shows it
    email           the student's email
    first_name, last_name   optional, the name's parts as the LMS holds them (Moodle's "First name" and
                    "Last name"): never guessed from `name` ("Maria da Silva" has no one place to split)
    sis_user_id, sis_login_id, section   optional, written to Canvas's columns of those names

The file comes from outside the grader (an LMS export, hand edits), so every row is validated by pydantic
and a bad one stops the run with its file, line and value: a grade sent to the wrong student is worse
than no export.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from grader.errors import UsageError
from grader.text import runs_as_formula

# Normalised header (lower case, no spaces, dashes or underscores) -> the field it fills.
_ALIASES: dict[str, str] = {
    **dict.fromkeys(["folder", "directory", "dir", "username", "handle", "github"], "folder"),
    **dict.fromkeys(
        ["id", "studentid", "lmsid", "userid", "canvasid", "idnumber", "studentnumber", "number"], "id"
    ),
    **dict.fromkeys(["name", "fullname", "student", "studentname", "displayname"], "name"),
    **dict.fromkeys(["email", "emailaddress", "mail", "useremail"], "email"),
    **dict.fromkeys(["firstname", "givenname", "forename", "first"], "first_name"),
    **dict.fromkeys(["lastname", "surname", "familyname", "last"], "last_name"),
    **dict.fromkeys(["sisuserid", "sisid"], "sis_user_id"),
    **dict.fromkeys(["sisloginid", "loginid", "login"], "sis_login_id"),
    **dict.fromkeys(["section", "sections"], "section"),
}
_REQUIRED = ("folder", "id")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class RosterEntry(BaseModel):
    """One student of the roster; every value stripped of surrounding spaces."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    folder: str
    id: str
    name: str = ""
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""

    @field_validator("folder", "id")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("is empty; every student needs one")
        return value

    @field_validator("folder")
    @classmethod
    def _one_folder_name(cls, value: str) -> str:
        # A path would never match a folder name that discover_students gives: say so rather than skip it.
        if "/" in value or "\\" in value or value in (".", ".."):
            raise ValueError("is a path; give the folder's own name, as it is under --submissions")
        return value

    @field_validator("id", "email", "sis_user_id", "sis_login_id")
    @classmethod
    def _inert(cls, value: str) -> str:
        # The LMS matches a row by these exactly as they are, so the exports cannot make them safe with a
        # quote (report/lms.py): one that a spreadsheet would run is refused here instead.
        if runs_as_formula(value):
            raise ValueError(
                "would run as a formula in a spreadsheet (= + - or @ at its start, or after a , ; | or "
                "tab); no LMS identifier looks like that"
            )
        return value

    @field_validator("email")
    @classmethod
    def _an_email(cls, value: str) -> str:
        if value and not _EMAIL.match(value):
            raise ValueError("is not an email address (name@host.domain)")
        return value


@dataclass(frozen=True)
class Roster:
    path: Path
    entries: tuple[RosterEntry, ...]

    def __iter__(self) -> Iterator[RosterEntry]:
        return iter(self.entries)

    def by_folder(self) -> dict[str, RosterEntry]:
        return {e.folder: e for e in self.entries}

    def folders(self) -> list[str]:
        return [e.folder for e in self.entries]

    def not_on_roster(self, folders: Sequence[str]) -> list[str]:
        """The folders graded that the roster does not name: reported, and kept in gradebook.csv."""
        known = self.by_folder()
        return [f for f in folders if f not in known]


def load_roster(path: Path) -> Roster:
    """Read and check a roster; a UsageError names the file, the line and the value that is wrong."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: Excel's "CSV UTF-8" starts with a BOM
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path}: the roster is not UTF-8 text (byte {exc.start}); save it as CSV UTF-8 and pass it again"
        ) from None
    except OSError as exc:
        raise UsageError(
            f"{path}: cannot read the roster ({exc.strerror}); check the path given to --roster"
        ) from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise UsageError(
            f"{path}:1: the roster has no header row; its first line names the columns, e.g. "
            "folder,id,name,email"
        )
    # A spreadsheet in a locale with decimal commas writes ';' between cells.
    delimiter = ";" if lines[0].count(";") > lines[0].count(",") else ","
    rows = csv.reader(lines, delimiter=delimiter)
    header = next(rows)
    fields = _fields(path, header)
    entries: list[RosterEntry] = []
    seen_folder: dict[str, int] = {}
    seen_id: dict[str, int] = {}
    for row in rows:
        number = rows.line_num  # the file's line (where the row ends), as an editor shows it
        if not any(cell.strip() for cell in row):
            continue  # a blank line, as spreadsheets leave at the end
        if len(row) > len(header):
            extra = row[len(header)]
            raise UsageError(
                f"{path}:{number}: {len(row)} cells where the header has {len(header)} (the first extra is "
                f"'{extra}'); quote a value that holds '{delimiter}', or remove the extra cells"
            )
        values = {field: row[i] if i < len(row) else "" for i, field in fields.items()}
        try:
            entry = RosterEntry(**values)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = str(error["loc"][0]) if error["loc"] else ""
            column = next((header[i] for i, f in fields.items() if f == field), field)
            value = values.get(field, "")
            why = str(error["msg"]).removeprefix("Value error, ")
            raise UsageError(
                f"{path}:{number}: {column} '{value}' {why}; correct this line and run again"
            ) from None
        for key, seen, what in ((entry.folder, seen_folder, "folder"), (entry.id, seen_id, "id")):
            if key in seen:
                raise UsageError(
                    f"{path}:{number}: {what} '{key}' is already on line {seen[key]}; each student is on the "
                    "roster once, with an id of their own"
                )
            seen[key] = number
        entries.append(entry)
    return Roster(path, tuple(entries))


def _fields(path: Path, header: Sequence[str]) -> dict[int, str]:
    """Column index -> field, from the header row; unknown columns are ignored (an LMS export has many)."""
    fields: dict[int, str] = {}
    for index, name in enumerate(header):
        field = _ALIASES.get(re.sub(r"[\s_-]+", "", name.strip().lower()))
        if field is None:
            continue
        if field in fields.values():
            first = header[next(i for i, f in fields.items() if f == field)]
            raise UsageError(
                f"{path}:1: columns '{first}' and '{name}' both name the {field}; keep one of them"
            )
        fields[index] = field
    missing = [f for f in _REQUIRED if f not in fields.values()]
    if missing:
        raise UsageError(
            f"{path}:1: the header {list(header)} has no {' or '.join(missing)} column; name the columns "
            "folder,id,name,email (the first row of the file)"
        )
    return fields
