"""Issue 32: what a student reads is in words they understand, in every output of the real CLI.

A broken class hands in reciprocal (loss = sum(1/a) and its gradient, twice): a return so large that the
grader's own error arithmetic overflows, NaN on some entries, a torch float64 formula that is wrong, a copy
of autograd's gradient as the by-hand one, float16 returns, a sign flipped by "Maria da Silva" (who prints
one line). One folder is not on the roster and one student of the roster has no folder, so each count of
one is said once. `grader run` (terminal, JSON, HTML, exports), `grader check`, `grader repro` and
`grader gradescope` run on it, and every string a student can see is walked: no warning, no path of the
grader or of the instructor's machine, no "1 lines", none of the old jargon, one word for a replay, one
form of "wrong by", NaN named.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_exercise, exercise_folder, grader_run, write_source

import grader
from grader.judging.amounts import how_wrong
from grader.judging.compare import Comparison, EntryError
from grader.outcomes import Verdict
from grader.text import counted, plural

TRIALS = 20  # enough for the autograd check to accuse (8 right trials), few enough to stay quick
SEED = 5
EXERCISE = "reciprocal"

_HEAD = """
    import numpy as np
    import torch


    def reciprocal(a_np):
        a = torch.tensor(a_np, requires_grad=True)
        loss = torch.sum(1 / a)
        loss.backward()
"""
HAND_INS = {
    # finite but huge: |error| / envelope overflows float64 in the grader's comparison
    "big": _HEAD + "        return loss, a.grad, 1.7e308 * np.sign(a_np)\n",
    "nan": _HEAD + "        return loss, a.grad, np.where(a_np < -0.4, np.nan, -1 / a_np**2)\n",
    "torchlogic": _HEAD + "        return loss, a.grad, -1 / torch.tensor(a_np) ** 3\n",
    "copy": _HEAD + "        return loss, a.grad, a.grad.clone().numpy()\n",
    "half": _HEAD + "        return loss.half(), a.grad.half(), -1 / a_np**2\n",
    # prints one line in all: on its first call only
    "maria": "    SAID = []\n"
    + _HEAD
    + "        if not SAID:\n            SAID.append(print('computing'))\n"
    + "        return loss, a.grad, 1 / a_np**2\n",
    # the function's name misspelt: nothing to call
    "typo": "def reciprocl(a_np):\n    return 1 / a_np\n",
    "stranger": _HEAD + "        return loss, a.grad, -1 / a_np**2\n",
}
ROSTER = """\
folder,id,name,email
maria,1001,Maria da Silva,maria@uni.edu
big,1002,Bea Big,bea@uni.edu
nan,1003,Nan Nobody,nan@uni.edu
torchlogic,1004,Tor Logic,tor@uni.edu
copy,1005,Cop Y,cop@uni.edu
typo,1008,Ty Po,ty@uni.edu
half,1006,Hal F,hal@uni.edu
ghost,1007,Gus Host,gus@uni.edu
"""
# Nouns the grader counts; "1 <noun>s" is the plural bug.
NOUNS = (
    "students|folders|files|lines|pages|trials|exercises|entries|values|hand-ins|points|others|"
    "other trials|rows|columns|seconds"
)
BAD_PLURAL = re.compile(rf"(?<![\d.])\b1 ({NOUNS})\b")
JARGON = (
    "as torch code does",
    "rerun in extended precision",
    "no precision above float64 could check it",
    "scaled by",
    "1.125",
    "factors between",
    "trial(s)",
    "exercise(s)",
)
WRONG_BY = re.compile(r"wrong by (.*?) on \d+ of \d+ trials?")
AMOUNT = re.compile(
    r"up to ((\d[\d.e+-]*%|vastly more than 100%) \(\S+ absolute, on values up to \S+\)|\S+ where 0 was due)"
)


@dataclass
class Seen:
    """Everything a student can see, by where it came from."""

    texts: dict[str, list[str]]
    root: Path

    def all(self) -> Iterator[tuple[str, str]]:
        for where, texts in self.texts.items():
            for text in texts:
                yield where, text


def _grader(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return grader_run(*args, cwd=cwd)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _page_text(path: Path) -> str:
    """An HTML page as a browser shows its text: tags dropped (the style sheet with them), entities read."""
    page = path.read_text(encoding="utf-8")
    page = re.sub(r"<style.*?</style>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Seen:
    root = tmp_path_factory.mktemp("words")
    exercises = root / "exercises"
    copy_exercise(exercises / EXERCISE, source=exercise_folder(EXERCISE))
    for student, source in HAND_INS.items():
        write_source(root / "submissions" / student / "reciprocal.py", source)
    (root / "roster.csv").write_text(ROSTER, encoding="utf-8")
    texts: dict[str, list[str]] = {}

    # The instructor runs the class from another folder, naming every folder absolutely: their machine's
    # paths are then in every command they see, and must be in none a student sees.
    elsewhere = tmp_path_factory.mktemp("instructor")
    common: list[str | Path] = [
        "--submissions",
        root / "submissions",
        "--trials",
        str(TRIALS),
        "--seed",
        str(SEED),
    ]
    ran = _grader(
        "run",
        exercises,
        *common,
        "--out",
        root / "out",
        "--html",
        root / "html",
        "--roster",
        root / "roster.csv",
        cwd=elsewhere,
    )
    assert ran.returncode in (0, 1), ran.stderr
    texts["run terminal"] = [ran.stdout, ran.stderr]
    as_json = _grader("run", exercises, *common, "--json", cwd=elsewhere)
    assert as_json.returncode in (0, 1), as_json.stderr
    texts["run json"] = [s for line in as_json.stdout.splitlines() for s in _strings(json.loads(line))]
    texts["html pages"] = [_page_text(p) for p in sorted((root / "html" / "students").glob("*.html"))]
    texts["results.json"] = [
        s
        for path in sorted((root / "out" / "students").glob("*/results.json"))
        for s in _strings(json.loads(path.read_text(encoding="utf-8")))
    ]
    texts["exports"] = [
        cell
        for name in ("canvas.csv", "moodle.csv")
        for row in csv.reader((root / "out" / name).open(newline="", encoding="utf-8"))
        for cell in row
    ]

    # A student checks their own file where they work: the exercise beside it.
    for student in ("big", "nan", "half", "maria", "typo"):
        checked = _grader(
            "check",
            f"exercises/{EXERCISE}",
            f"submissions/{student}/reciprocal.py",
            "--trials",
            str(TRIALS),
            "--seed",
            str(SEED),
            cwd=root,
        )
        assert checked.returncode in (0, 1), checked.stderr
        texts[f"check {student}"] = [checked.stdout, checked.stderr]
    replayed = _grader(
        "repro",
        f"exercises/{EXERCISE}",
        "submissions/maria/reciprocal.py",
        "--seed",
        str(SEED),
        "--trial",
        "0",
        cwd=root,
    )
    texts["repro"] = [replayed.stdout, replayed.stderr]
    misspelt = _grader("check", "reciprocl", "submissions/maria/reciprocal.py", cwd=root)
    assert misspelt.returncode == 2, misspelt.stderr
    texts["misspelt id"] = [misspelt.stdout, misspelt.stderr]

    # Gradescope, as test_gradescope runs it: the exercises below autograder/source, one hand-in.
    autograder = root / "gs" / "autograder" / "source" / "exercises"
    copy_exercise(autograder / EXERCISE, source=exercise_folder(EXERCISE))
    for student in ("nan", "maria"):
        submission = root / "gs" / "submission" / student
        write_source(submission / "reciprocal.py", HAND_INS[student])
        results = submission.parent / f"results-{student}.json"
        done = _grader(
            "gradescope",
            autograder,
            "--submission",
            submission,
            "--results",
            results,
            "--trials",
            str(TRIALS),
            cwd=root,
        )
        assert done.returncode == 0, done.stderr
        texts[f"gradescope {student}"] = list(_strings(json.loads(results.read_text(encoding="utf-8"))))
    return Seen(texts, root)


def test_no_warning_or_path_of_the_grader_reaches_anyone(seen: Seen) -> None:
    install = str(Path(grader.__file__).resolve().parent)
    for where, text in seen.all():
        assert "Warning" not in text, (where, text)
        assert install not in text and "grader/judging" not in text, (where, text)


def test_no_page_or_file_for_a_student_names_the_instructors_folders(seen: Seen) -> None:
    private = (str(seen.root), str(seen.root.resolve()))
    for where in ("html pages", "results.json", "exports", "gradescope nan", "gradescope maria"):
        for text in seen.texts[where]:
            assert not any(p in text for p in private), (where, text)
    # what the page shows instead: the exercise by id, the file as the student named it
    assert any(
        f"grader repro {EXERCISE} reciprocal.py --seed {SEED} --trial" in text
        for text in seen.texts["html pages"]
    )


def test_counts_of_one_are_singular(seen: Seen) -> None:
    for where, text in seen.all():
        assert not BAD_PLURAL.search(text), (where, BAD_PLURAL.search(text), text)
    terminal = " ".join(" ".join(seen.texts["run terminal"]).split())
    assert "1 folder is not on the roster: stranger" in terminal
    assert "1 student of the roster has no folder: ghost" in terminal
    assert "your code printed 1 line to stdout" in " ".join(seen.texts["check maria"])


def test_none_of_the_old_jargon_and_one_word_for_a_replay(seen: Seen) -> None:
    for where, text in seen.all():
        assert not [j for j in JARGON if j in text], (where, text)
        assert "reproduce" not in text.lower(), (where, text)
    assert any("replay:" in text for text in seen.texts["run terminal"])
    assert any("replay:" in text for text in seen.texts["html pages"])


def test_a_replay_shows_no_command_to_replay_itself(seen: Seen) -> None:
    output = "".join(seen.texts["repro"])
    assert "user_grad" in output and "logic" in output
    assert "replay:" not in output and "grader repro" not in output


def test_wrong_by_has_one_form_relative_with_the_absolute_beside_it(seen: Seen) -> None:
    found = []
    for where, text in seen.all():
        flat = " ".join(text.split())
        for match in WRONG_BY.finditer(flat):
            found.append(match.group(1))
            assert AMOUNT.fullmatch(match.group(1)), (where, match.group(0))
    assert found  # maria's sign, torchlogic's power, big's overflow


def test_nan_is_named_with_how_many_trials_and_where(seen: Seen) -> None:
    for where in ("check nan", "gradescope nan"):
        shown = re.sub(r"\\(.)", r"\1", " ".join(seen.texts[where]))  # Markdown's escapes read
        flat = " ".join(shown.split())
        assert re.search(r"returned NaN on \d+ of \d+ trials \(first on trial \d+: entr(y|ies) \[", flat), (
            where
        )


def test_each_problem_is_said_plainly(seen: Seen) -> None:
    terminal = " ".join(" ".join(seen.texts["run terminal"]).split())
    # torch code: why the grader could not tell rounding from a mistake
    assert "it could not be rerun above float64 (torch code cannot be), so it was judged against" in terminal
    # the autograd check: what it is, what was seen
    copied = "user_grad changed when only autograd's results changed: it comes from autograd, not from your"
    assert copied in terminal
    assert "in a process where the grader had altered every gradient autograd gives" in terminal
    # float16 work: passed, and told at what precision
    half = " ".join(" ".join(seen.texts["check half"]).split())
    assert "your values were float16, the exercise asks for float64" in half


def test_moodle_keeps_a_name_whole_where_the_roster_does_not_split_it(seen: Seen) -> None:
    with (seen.root / "out" / "moodle.csv").open(newline="", encoding="utf-8") as handle:
        rows = {row["Email address"]: row for row in csv.DictReader(handle)}
    maria = rows["maria@uni.edu"]
    assert (maria["First name"], maria["Last name"], maria["ID number"]) == ("Maria da Silva", "", "1001")


def test_counted_agrees_with_its_count() -> None:
    assert [counted(n, "trial") for n in (0, 1, 2)] == ["0 trials", "1 trial", "2 trials"]
    assert (counted(1, "entry"), counted(3, "entry")) == ("1 entry", "3 entries")
    assert (plural(1, "is"), plural(2, "is")) == ("is", "are")
    assert (plural(1, "has"), plural(4, "has")) == ("has", "have")


def test_wrong_by_is_told_against_the_largest_value_due_whatever_the_number_of_trials() -> None:
    """An entry due as 0.01 and off by 0.5 is 4819% off on its own; against the values due (up to 1.4),
    the mistake is 37% of them, on one trial as on fifty."""

    def off(trial: int, small_entry: bool) -> Comparison:
        relative = 48.19 if small_entry else 0.37
        return Comparison(
            trial, Verdict.LOGIC, max_rel_error=relative, max_abs_error=0.52, largest_expected=1.4
        )

    one = how_wrong([off(0, False)], 1)
    fifty = how_wrong([off(k, k == 7) for k in range(50)], 50)
    assert one == "wrong by up to 37% (0.52 absolute, on values up to 1.4) on 1 of 1 trial"
    assert fifty == "wrong by up to 37% (0.52 absolute, on values up to 1.4) on 50 of 50 trials"
    nan = Comparison(
        3, Verdict.LOGIC, nan_entries=1, failing=(EntryError((2,), 1.0, math.nan, *[math.inf] * 4),)
    )
    assert how_wrong([nan], 100) == "returned NaN on 1 of 100 trials (first on trial 3: entry [2])"


def test_a_misspelt_exercise_id_is_one_line_with_the_closest_id(seen: Seen) -> None:
    stdout, stderr = seen.texts["misspelt id"]
    said = " ".join(stderr.split())  # one message, however the terminal wraps it
    assert stdout == "" and said.startswith("error: 'reciprocl': ") and said.count("error") == 1, stderr
    assert "did you mean 'reciprocal'?" in said and "Traceback" not in said
