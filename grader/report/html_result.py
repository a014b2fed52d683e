"""One graded (student, exercise) result as a self-contained HTML fragment: no scripts, no network.

It says what the terminal report says (report/terminal.py), in the same words and colours. Every string
of a result may come from student code (messages, tracebacks, names, printed output) and is escaped.
Cells and rows carry data attributes (data-verdict, data-row, data-col, data-fails) for tools and tests.
"""

from __future__ import annotations

import html

import numpy as np

from grader.outcomes import Verdict
from grader.report.common import (
    ENVELOPE_MEANING,
    REPLAY_LABEL,
    STYLE,
    VERDICT_MEANINGS,
    error_summary,
    file_choice_note,
    focus_trial,
    grid,
    mentions_envelopes,
    mistake_label,
    number,
    shows_failure,
    sizes_text,
    summary_message,
)
from grader.report.terminal import notebook_note
from grader.results import ReturnResult, SubmissionResult
from grader.text import counted, visible

# STYLE's colours as shades that read on white, so that both reports colour a verdict alike; a bold style
# gets a darker shade, so that a bar's blocks of error and logic (or autograd and instability) differ.
_SHADES = {"green": "#1a7f37", "yellow": "#9a6700", "magenta": "#a626a4", "red": "#cf222e"}
_BOLD_SHADES = {"magenta": "#6e2a8c", "red": "#82071e", "cyan": "#0b5f73"}
FAIL_COLOUR = _SHADES["red"]
PASS_COLOUR = _SHADES["green"]


def verdict_colour(verdict: Verdict) -> str:
    """The shade of the verdict's terminal colour."""
    *weight, colour = STYLE[verdict].split()
    return (_BOLD_SHADES if "bold" in weight else _SHADES)[colour]


def verdict_css(verdict: Verdict) -> str:
    """The verdict's terminal style as CSS declarations."""
    bold = "font-weight:bold;" if "bold" in STYLE[verdict].split() else ""
    return f"{bold}color:{verdict_colour(verdict)}"


def _verdict_rules(scope: str) -> str:
    return "".join(f"{scope} .v-{v.value}{{{verdict_css(v)}}}" for v in Verdict)


# Scoped under .grader-result: the fragment may sit in any page (a notebook, the class report).
STYLE_SHEET = (
    "<style>"
    ".grader-result{font-family:system-ui,sans-serif;font-size:14px;line-height:1.4;color:#1f2328;"
    "margin:1em 0;padding:.5em 1em;border:1px solid #d0d7de;border-radius:6px}"
    ".grader-result h2{font-size:1.2em;margin:.3em 0}"
    ".grader-result h3{font-size:1em;margin:.8em 0 .3em}"
    ".grader-result .meta,.grader-result .note{color:#59636e}"
    ".grader-result table{border-collapse:collapse;margin:.3em 0}"
    ".grader-result th,.grader-result td{padding:2px 10px;text-align:left;vertical-align:top}"
    ".grader-result table.returns th{border-bottom:1px solid #d0d7de}"
    ".grader-result td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".grader-result pre{background:#f6f8fa;padding:.5em;overflow-x:auto;white-space:pre-wrap}"
    ".grader-result .error{border-left:4px solid " + FAIL_COLOUR + ";padding-left:.6em}"
    ".grader-result table.grid td{width:16px;height:16px;padding:0;border:1px solid #fff}"
    ".grader-result table.grid td.fail{background:" + FAIL_COLOUR + "}"
    ".grader-result table.grid td.pass{background:" + PASS_COLOUR + "}"
    ".grader-result code{background:#f6f8fa;padding:1px 4px}" + _verdict_rules(".grader-result") + "</style>"
)


def escape(text: str) -> str:
    """Student text for HTML: escaped, control characters shown as escapes, lone surrogates replaced."""
    return html.escape(visible(text), quote=True)


def verdict_badge(verdict: Verdict) -> str:
    meaning = escape(VERDICT_MEANINGS[verdict])
    return f'<span class="verdict v-{verdict.value}" title="{meaning}">{verdict.value}</span>'


def result_html(
    result: SubmissionResult, replay: str | None = None, *, style: bool = True, explain: bool = True
) -> str:
    """The result as an HTML fragment; `replay` replaces the `grader repro` commands it shows (a notebook
    shows its own call instead). `style=False` leaves out the style sheet, for a page that holds
    STYLE_SHEET once; `explain=False`, what a rounding envelope is, for a page that said it already."""
    parts = [STYLE_SHEET] if style else []
    parts.append(
        f'<section class="grader-result" data-exercise="{escape(result.exercise)}" '
        f'data-student="{escape(result.student)}" data-score="{result.score:g}" '
        f'data-max="{result.max_score:g}" data-verdict="{result.worst.value}">'
    )
    only = result.only_trial
    trials = f"trial {only}" if only is not None else counted(result.trials, "trial")
    parts.append(
        f"<h2>{escape(result.exercise)} — {escape(result.submission)} "
        f'<span class="score">{result.score:g}/{result.max_score:g}</span></h2>'
        f'<p class="meta">seed {result.seed}, {trials}, {result.seconds:.1f} s; '
        f"isolation: {escape(result.isolation.brief)}</p>"
    )
    if result.error is not None:
        error = result.error
        parts.append(
            f'<div class="error" data-kind="{escape(error.kind.value)}"><p><strong class="v-error">error'
            f"</strong> ({escape(error.kind.value)}): {escape(error_summary(result))}</p>"
        )
        if error.traceback:
            parts.append(f"<pre>{escape(error.traceback)}</pre>")
        parts.append("</div>")
    parts.append(_returns_table(result))
    if explain and mentions_envelopes(result):
        parts.append(f'<p class="note envelope">{escape(ENVELOPE_MEANING)}</p>')
    first = result.first_trial_error
    if result.error is None and first is not None and first.traceback:
        parts.append(f"<p><strong>first failing call</strong> (trial {first.trial}):</p>")
        parts.append(f"<pre>{escape(first.traceback)}</pre>")
    notes = []
    if result.runs_at_import:
        notes.append(
            f"your files run code at import ({escape(', '.join(result.runs_at_import))}; importing took "
            f"{result.import_seconds:.2f} s): it ran once, before the trials"
        )
    if result.notebook is not None:
        notes.append(escape(notebook_note(result.notebook)))
    if result.file_choice is not None:
        notes.append(escape(file_choice_note(result.file_choice)))
    parts += [f'<p class="note">{note}</p>' for note in notes]
    for ret in result.returns:
        if shows_failure(ret):
            parts.append(_failure(result, ret, replay))
    parts.append(_output(result))
    replayed = any(r.case is not None for r in result.returns if r.verdict is not Verdict.ERROR)
    if not result.passed and not replayed and result.only_trial is None:
        command = replay if replay is not None else result.repro(focus_trial(result))
        parts.append(f'<p>{REPLAY_LABEL} <code class="replay">{escape(command)}</code></p>')
    parts.append("</section>")
    return "".join(parts)


def _returns_table(result: SubmissionResult) -> str:
    rows = [
        '<table class="returns"><thead><tr><th>return</th><th>verdict</th><th>points</th><th>why</th>'
        "</tr></thead><tbody>"
    ]
    for ret in result.returns:
        rows.append(
            f'<tr data-return="{escape(ret.name)}" data-verdict="{ret.verdict.value}">'
            f"<td>{escape(ret.name)}</td><td>{verdict_badge(ret.verdict)}</td>"
            f'<td class="num">{ret.score:g}/{ret.points:g}</td>'
            f"<td>{escape(summary_message(ret, result))}</td></tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _failure(result: SubmissionResult, ret: ReturnResult, replay: str | None) -> str:
    name = escape(ret.name)
    parts = [f'<div class="failure" data-return="{name}"><h3>{name} {verdict_badge(ret.verdict)}</h3>']
    if ret.misconception is not None:
        label = escape(mistake_label(ret))
        parts.append(f'<p class="mistake"><strong>{label}:</strong> {escape(ret.misconception)}</p>')
        if ret.feedback:
            parts.append(f'<p class="feedback">{escape(ret.feedback)}</p>')
    elif ret.verdict.not_by_hand:
        parts.append(f'<p class="feedback"><strong>to fix:</strong> {escape(ret.feedback)}</p>')
    case = ret.case
    if case is None:
        parts.append("</div>")
        return "".join(parts)
    parts.append(f"<p>smallest failing case is trial {case.trial} ({escape(sizes_text(case))})</p>")
    if case.mask is not None:
        parts.append(mask_html(case.mask))
    if ret.failing_entries:
        parts.append(_entries_table(ret))
    if result.only_trial is None:  # a run of one trial is its replay already (terminal.py alike)
        command = replay if replay is not None else result.repro(case.trial)
        parts.append(f'<p>{REPLAY_LABEL} <code class="replay">{escape(command)}</code></p>')
    parts.append("</div>")
    return "".join(parts)


def mask_html(mask: np.ndarray) -> str:
    """The failing entries as a grid of red (failing) and green (passing) cells, or their count where the
    grid would be too large to read (as the terminal does)."""
    failing = int(np.count_nonzero(mask))
    cells = grid(mask)
    if cells is None:
        return f'<p class="mask" data-fails="{failing}">{failing} of {counted(mask.size, "entry")} fail</p>'
    rows = [f'<p>failing entries (red), passing (green):</p><table class="grid" data-fails="{failing}">']
    for i, row in enumerate(cells):
        rows.append("<tr>")
        for j, bad in enumerate(row):
            word = "fail" if bad else "pass"
            rows.append(
                f'<td class="{word}" data-row="{i}" data-col="{j}" data-fails="{int(bool(bad))}" '
                f'title="[{i}, {j}] {word}s"></td>'
            )
        rows.append("</tr>")
    rows.append("</table>")
    return "".join(rows)


def _entries_table(ret: ReturnResult) -> str:
    rows = [
        '<table class="entries"><thead><tr><th>entry</th><th>expected</th><th>got</th><th>abs err</th>'
        "<th>rel err</th></tr></thead><tbody>"
    ]
    for entry in ret.failing_entries[:5]:
        rows.append(
            f'<tr><td class="num">{list(entry.index)}</td><td class="num">{number(entry.expected)}</td>'
            f'<td class="num">{number(entry.got)}</td><td class="num">{entry.abs_error:.2e}</td>'
            f'<td class="num">{entry.rel_error:.2e}</td></tr>'
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _output(result: SubmissionResult) -> str:
    parts = []
    for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text.strip():
            lines = len(text.strip().splitlines())
            parts.append(
                f"<details><summary>your code printed {counted(lines, 'line')} to {stream}</summary>"
                f"<pre>{escape(text.strip())}</pre></details>"
            )
    return "".join(parts)
