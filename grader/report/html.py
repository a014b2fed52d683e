"""`--html DIR`: the class's results as a self-contained site to open in any browser, offline.

DIR/index.html               the class table (students × exercises: score and worst verdict, the numbers of
                             gradebook.csv), then per exercise its verdicts, how often each entry of each
                             return fails across the class, and the most common misconceptions
DIR/students/<name>.html     one student's results in full (report/html_result.py)

No scripts, no fonts, nothing fetched: styles are inline. The numbers come from report/exports.py's own
computations (the hand-ins, the exercises attempted, each column's points, the class summary), so that the
pages and gradebook.csv cannot disagree. Every name and message is student text, escaped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grader import __version__
from grader.outcomes import Verdict
from grader.report.common import GRID_LIMIT, VERDICT_MEANINGS, grid, mentions_envelopes
from grader.report.exports import (
    STUDENTS,
    ClassGrades,
    class_grades,
    class_summary,
    file_names,
    handed_in_result,
)
from grader.report.html_result import (
    FAIL_COLOUR,
    STYLE_SHEET,
    escape,
    result_html,
    verdict_badge,
    verdict_colour,
    verdict_css,
)
from grader.results import SubmissionResult
from grader.text import counted

INDEX = "index.html"

_PAGE_STYLE = (
    "<style>"
    "body{font-family:system-ui,sans-serif;font-size:14px;color:#1f2328;margin:1.5em auto;max-width:1200px;"
    "padding:0 1em}"
    "h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #d0d7de}"
    "h3{font-size:1.05em;margin:1em 0 .3em}"
    "table{border-collapse:collapse}th,td{padding:3px 10px;text-align:left}"
    "table.class th,table.class td{border:1px solid #d0d7de}"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}"
    "td.missing{color:#8c959f;text-align:center}"
    ".note{color:#59636e}"
    ".bar{display:flex;width:420px;height:18px;border:1px solid #d0d7de;margin:2px 0}"
    ".bar span{display:block;height:100%}"
    ".swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}"
    "table.heat td{width:24px;height:24px;padding:0;text-align:center;font-size:11px;"
    "border:1px solid #fff}" + "".join(f".v-{v.value}{{{verdict_css(v)}}}" for v in Verdict) + "</style>"
)


def page_names(students: Sequence[str]) -> dict[str, str]:
    """Each student's page file name: exports.file_names' (safe, unique even where a case-blind file
    system would merge two: a folder name is the student's to choose), .html added."""
    return {student: f"{name}.html" for student, name in file_names(students).items()}


def write_site(
    folder: Path, results: Sequence[SubmissionResult], exercises: Sequence[str], students: Sequence[str]
) -> list[Path]:
    """Write index.html and a page per student into `folder`; returns the files written."""
    (folder / STUDENTS).mkdir(parents=True, exist_ok=True)
    pages = page_names(students)
    index = folder / INDEX
    index.write_text(index_html(results, exercises, students, pages), encoding="utf-8")
    written = [index]
    grades = class_grades(results, exercises)
    for student in students:
        path = folder / STUDENTS / pages[student]
        path.write_text(student_html(student, results, grades), encoding="utf-8")
        written.append(path)
    return written


def _page(title: str, body: str, extra_style: str = "") -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title>{_PAGE_STYLE}{extra_style}</head><body>{body}"
        f'<p class="note">made by grader {escape(__version__)}</p></body></html>'
    )


def index_html(
    results: Sequence[SubmissionResult],
    exercises: Sequence[str],
    students: Sequence[str],
    pages: Mapping[str, str],
) -> str:
    grades = class_grades(results, exercises)
    graded = {r.student for r in results}
    summary = class_summary(results, grades.exercises, [s for s in students if s not in graded])
    parts = ["<h1>grades</h1>", _class_table(grades, students, pages)]
    nobody = [e for e in exercises if e not in grades.exercises]
    if nobody:
        parts.append(f'<p class="note">handed in by nobody (0 for everyone): {escape(", ".join(nobody))}</p>')
    parts.append(_legend())
    for exercise in grades.exercises:
        mine = [r for r in results if r.exercise == exercise and handed_in_result(r)]
        parts.append(_exercise_section(exercise, summary["exercises"][exercise], mine))
    return _page("grades", "".join(parts))


def _class_table(grades: ClassGrades, students: Sequence[str], pages: Mapping[str, str]) -> str:
    head = "".join(
        f'<th class="num" data-exercise="{escape(e)}">{escape(e)}<br><span class="note">'
        f"{escape(grades.points[e])} {'point' if grades.points[e] == '1' else 'points'}</span></th>"
        for e in grades.exercises
    )
    rows = [
        '<table class="class" id="grades"><thead><tr><th>student</th>'
        f'{head}<th class="num">total</th><th class="num">max</th></tr></thead><tbody>'
    ]
    for student in students:
        name = escape(student)
        link = f'<a href="{STUDENTS}/{escape(pages[student])}">{name}</a>'
        row = [f'<tr data-student="{name}"><td>{link}</td>']
        for exercise, score in zip(grades.exercises, grades.scores(student), strict=True):
            result = grades.handed_in.get((student, exercise))
            if result is None:
                row.append(
                    f'<td class="missing" data-exercise="{escape(exercise)}" data-score="" '
                    'title="not handed in">—</td>'
                )
            else:
                row.append(
                    f'<td class="num" data-exercise="{escape(exercise)}" data-score="{score}">'
                    f"{score}/{result.max_score:g} {verdict_badge(result.worst)}</td>"
                )
        total = grades.total(student)
        shown = total if total else "—"
        row.append(f'<td class="num" data-total="{total}">{shown}</td>')
        row.append(f'<td class="num" data-max="{grades.maximum:g}">{grades.maximum:g}</td></tr>')
        rows.append("".join(row))
    rows.append("</tbody></table>")
    rows.append('<p class="note">— not handed in (an empty cell in gradebook.csv, never a 0)</p>')
    return "".join(rows)


def _legend() -> str:
    items = "".join(
        f'<span class="swatch" style="background:{verdict_colour(v)}"></span><span class="v-{v.value}">'
        f"{v.value}</span>: {escape(VERDICT_MEANINGS[v])}<br>"
        for v in Verdict
    )
    return f'<p class="legend note">{items}</p>'


def _exercise_section(exercise: str, summary: Mapping[str, Any], mine: Sequence[SubmissionResult]) -> str:
    name = escape(exercise)
    mean = summary["mean_score"]
    parts = [
        f'<section class="exercise" data-exercise="{name}"><h2>{name}</h2>',
        f"<p>{summary['submissions']} handed in, {summary['not_submitted']} not; {summary['passed']} "
        f"passed everything; mean score {mean:g}/{summary['max_score']:g}</p>",
    ]
    if summary["errors"]:
        kinds = ", ".join(f"{escape(kind)} {count}" for kind, count in sorted(summary["errors"].items()))
        parts.append(f"<p>hand-ins that produced nothing (errors): {kinds}</p>")
    worst = Counter(r.worst.value for r in mine)
    parts.append("<h3>verdicts</h3><table>")
    parts.append(f"<tr><td>whole exercise (worst return)</td><td>{_bar(worst, len(mine))}</td></tr>")
    for ret, data in summary["returns"].items():
        parts.append(f"<tr><td>{escape(ret)}</td><td>{_bar(data['verdicts'], len(mine))}</td></tr>")
    parts.append("</table>")
    parts.append(_misconceptions(summary["returns"], mine))
    parts.append("<h3>failing entries across the class</h3>")
    parts += [_heatmap(ret, mine, data) for ret, data in summary["returns"].items()]
    parts.append("</section>")
    return "".join(parts)


def _bar(counts: Mapping[str, int], total: int) -> str:
    """Counts per verdict as one stacked bar, in the verdicts' order, with the counts in words beside it."""
    spans, words = [], []
    for verdict in Verdict:
        count = counts.get(verdict.value, 0)
        if count:
            width = 100 * count / max(total, 1)
            spans.append(
                f'<span style="width:{width:.2f}%;background:{verdict_colour(verdict)}" '
                f'title="{verdict.value}: {count}"></span>'
            )
            words.append(
                f'<span class="v-{verdict.value}" data-verdict="{verdict.value}">{verdict.value}</span> '
                f'<span class="count">{count}</span>'
            )
    return f'<div class="bar">{"".join(spans)}</div><span class="note">{", ".join(words)}</span>'


def _misconceptions(returns: Mapping[str, Any], mine: Sequence[SubmissionResult]) -> str:
    found = [(m["count"], ret, m["name"]) for ret, data in returns.items() for m in data["misconceptions"]]
    if not found:
        return ""
    feedback = {
        (ret.name, ret.misconception): ret.feedback for r in mine for ret in r.returns if ret.misconception
    }
    rows = [
        "<h3>most common misconceptions</h3><table><tr><th>hand-ins</th><th>return</th><th>mistake</th></tr>"
    ]
    for count, ret, name in sorted(found, key=lambda item: -item[0]):
        note = feedback.get((ret, name), "")
        rows.append(
            f'<tr><td class="num">{count}</td><td>{escape(ret)}</td><td><strong>{escape(name)}</strong>'
            f'<br><span class="note">{escape(note)}</span></td></tr>'
        )
    rows.append("</table>")
    return "".join(rows)


def _heatmap(name: str, mine: Sequence[SubmissionResult], data: Mapping[str, Any]) -> str:
    """How many hand-ins fail each entry of a return, from each one's smallest failing case."""
    masks = [
        np.atleast_2d(ret.case.mask)
        for r in mine
        for ret in r.returns
        if ret.name == name and ret.case is not None and ret.case.mask is not None
    ]
    title = f"<p><strong>{escape(name)}</strong>: "
    if not masks:
        return title + "no hand-in fails an entry</p>"
    if any(grid(mask) is None for mask in masks):
        common = ", ".join(f"{entry['index']} ({entry['count']})" for entry in data["failing_entries"])
        return (
            title + f"more than {GRID_LIMIT} entries a side, or more than 2 dimensions: too large to draw; "
            f"the entries failing most often (hand-ins): {escape(common)}</p>"
        )
    rows, columns = (max(mask.shape[axis] for mask in masks) for axis in (0, 1))
    count = np.zeros((rows, columns), dtype=int)
    for mask in masks:
        count[: mask.shape[0], : mask.shape[1]] += mask
    shapes = sorted({mask.shape for mask in masks})
    varies = (
        f"; the smallest failing cases' shapes vary with the trial sizes ({', '.join(map(_shape, shapes))}): "
        "entries are counted by their index in each one"
        if len(shapes) > 1
        else ""
    )
    parts = [
        title + f"how many of the {counted(len(mine), 'hand-in')} fail each entry in their smallest "
        "failing case"
        f"{escape(varies)}</p>",
        f'<table class="heat" data-return="{escape(name)}" data-hand-ins="{len(mine)}">',
    ]
    for i in range(rows):
        parts.append("<tr>")
        for j in range(columns):
            share = count[i, j] / len(mine)
            text = "#fff" if share > 0.5 else "#1f2328"
            parts.append(
                f'<td data-row="{i}" data-col="{j}" data-count="{count[i, j]}" '
                f'style="background:{FAIL_COLOUR}{round(255 * share):02x};color:{text}" '
                f'title="[{i}, {j}]: {count[i, j]} of {len(mine)}">{count[i, j] or ""}</td>'
            )
        parts.append("</tr>")
    parts.append("</table>")
    return "".join(parts)


def _shape(shape: tuple[int, ...]) -> str:
    return "×".join(map(str, shape))


def student_html(student: str, results: Sequence[SubmissionResult], grades: ClassGrades) -> str:
    name = escape(student)
    mine = {r.exercise: r for r in results if r.student == student}
    total = grades.total(student)
    parts = [
        f'<p><a href="../{INDEX}">← the class</a></p><h1 data-student="{name}">{name}</h1>',
        f'<p>total <strong data-total="{total}">{total or "—"}</strong> of {grades.maximum:g}</p>',
    ]
    explained = False  # what a rounding envelope is: said once a page, in the first result that needs it
    for exercise in grades.exercises:
        result = grades.handed_in.get((student, exercise))
        if result is not None:
            # The student's page: commands they can run where they work, no folder of the instructor's.
            shown = result.as_the_student_knows_it()
            parts.append(result_html(shown, style=False, explain=not explained))
            explained = explained or mentions_envelopes(result)
        elif exercise in mine:
            parts.append(
                f'<p class="missing" data-exercise="{escape(exercise)}">{escape(exercise)}: '
                "not handed in (no file attempts it)</p>"
            )
        else:
            parts.append(
                f'<p class="missing" data-exercise="{escape(exercise)}">{escape(exercise)}: '
                "not handed in (no folder)</p>"
            )
    return _page(name, "".join(parts), STYLE_SHEET)
