"""`--html DIR` through the real CLI, opened in a real headless Chromium with the network closed: the DOM it
builds holds gradebook.csv's numbers, the screenshot shows the verdicts' colours, nothing is fetched."""

from __future__ import annotations

import csv
import dataclasses
import re
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from browser import dump_dom, png_colours, screenshot
from conftest import CORRECT_GRAPH2, TRANSPOSED_GRAPH2, copy_exercise, grader_command, write_source
from test_html_result import sample_result

from grader.report.html import index_html, page_names, write_site
from grader.report.html_result import FAIL_COLOUR, PASS_COLOUR
from grader.results import SubmissionResult

HOSTILE = "<img src=x onerror=alert(1)>"  # a folder name: student-controlled, like everything they hand in


@dataclass(frozen=True)
class Site:
    root: Path
    run: subprocess.CompletedProcess[str]
    report: subprocess.CompletedProcess[str]
    profile: Path

    @property
    def html(self) -> Path:
        return self.root / "site"


def _grader(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*grader_command(), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """ana is right, bob and the hostile name transpose user_grad, carl does not parse, dana hands in
    another function only (not handed in); graded by `run --html`, exported again by `report --html`."""
    root = tmp_path_factory.mktemp("html")
    exercises = root / "exercises"
    copy_exercise(exercises / "graph2")
    submissions = root / "submissions"
    write_source(submissions / "ana" / "hw.py", CORRECT_GRAPH2)
    write_source(submissions / "bob" / "hw.py", TRANSPOSED_GRAPH2)
    write_source(submissions / HOSTILE / "hw.py", TRANSPOSED_GRAPH2)
    write_source(submissions / "carl" / "hw.py", "def graph2(W_np, x_np, b_np:\n    return 1\n")
    write_source(submissions / "dana" / "hw.py", "def something_else():\n    return 1\n")
    ran = _grader("run", exercises, "--trials", "20", "--html", "site_run", cwd=root)
    reported = _grader("report", exercises, "--html", "site", "--out", "out", cwd=root)
    return Site(root, ran, reported, tmp_path_factory.mktemp("chromium-profile"))


class _Dom(HTMLParser):
    """Elements with their attributes and the text inside each, as the browser serialized them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[list[str]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        text: list[str] = []
        self.elements.append((tag, {k: v or "" for k, v in attrs}, text))
        if tag not in ("br", "img", "meta", "link", "input", "hr"):
            self._open.append(text)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for text in self._open:
            text.append(data)

    def find(self, tag: str, attribute: str) -> list[tuple[dict[str, str], str]]:
        return [(a, "".join(t).strip()) for name, a, t in self.elements if name == tag and attribute in a]


def _heat(dom: _Dom) -> dict[tuple[int, int], int]:
    """The heatmap's count per (row, column)."""
    cells = dom.find("td", "data-count")
    return {(int(a["data-row"]), int(a["data-col"])): int(a["data-count"]) for a, _ in cells}


def _class_table(dom: _Dom) -> dict[str, dict[str, tuple[str, str]]]:
    """student -> {exercise, "total", "max": (the data attribute's number, the text shown)}, row by row."""
    table: dict[str, dict[str, tuple[str, str]]] = {}
    row: dict[str, tuple[str, str]] = {}
    for tag, attrs, text in dom.elements:
        shown = "".join(text).strip()
        if tag == "tr" and "data-student" in attrs:
            row = table.setdefault(attrs["data-student"], {})
        elif tag == "td" and "data-score" in attrs:
            row[attrs["data-exercise"]] = (attrs["data-score"], shown)
        elif tag == "td" and "data-total" in attrs:
            row["total"] = (attrs["data-total"], shown)
        elif tag == "td" and "data-max" in attrs:
            row["max"] = (attrs["data-max"], shown)
    return table


def test_the_class_table_chromium_shows_holds_gradebook_csvs_numbers(site: Site) -> None:
    assert site.report.returncode == 1, site.report.stderr  # bob fails a return
    assert "pages to site" in site.report.stderr
    with (site.root / "out" / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        gradebook = list(csv.DictReader(handle))
    table = _class_table(_Dom(dump_dom(site.html / "index.html", site.profile)))
    assert set(table) == {row["student"] for row in gradebook} == {"ana", "bob", "carl", "dana", HOSTILE}
    for row in gradebook:
        shown = table[row["student"]]
        score, text = shown["graph2"]
        assert score == row["graph2"], row
        # a score reads "6/10 logic"; not handed in reads as a dash, never as 0
        assert text.startswith(f"{score}/10 ") if score else text == "—", (row, text)
        assert shown["total"] == (row["total"], row["total"] or "—"), row
        assert shown["max"] == (row["max_total"], row["max_total"]) == ("10", "10"), row
    assert table["carl"]["graph2"][0] == "0" and table["dana"]["graph2"][0] == ""
    assert table["bob"]["graph2"][1] == "6/10 logic"


def test_grader_run_html_writes_the_same_class_page(site: Site) -> None:
    assert site.run.returncode == 1, site.run.stderr
    assert (site.root / "site_run" / "index.html").read_text(encoding="utf-8") == (
        site.html / "index.html"
    ).read_text(encoding="utf-8")


def test_the_class_page_shows_where_the_class_fails_and_why(site: Site) -> None:
    page = (site.html / "index.html").read_text(encoding="utf-8")
    # bob and the hostile name transpose a 2×2 gradient (the smallest case, d=2): the diagonal is right
    assert _heat(_Dom(page)) == {(0, 0): 0, (0, 1): 2, (1, 0): 2, (1, 1): 0}
    # the most common misconception: 2 hand-ins, on user_grad
    assert '<td class="num">2</td><td>user_grad</td><td><strong>transposed</strong>' in page
    # the verdict bars count 1 pass, 2 logic, 1 error of 4 hand-ins (dana handed nothing in)
    assert "4 handed in, 1 not" in page
    assert '<span class="v-logic" data-verdict="logic">logic</span> <span class="count">2</span>' in page


def test_screenshots_show_the_pages_with_the_verdicts_colours(site: Site, tmp_path: Path) -> None:
    index = screenshot(site.html / "index.html", tmp_path / "index.png", site.profile)
    assert index.stat().st_size > 20_000
    colours = png_colours(index)
    assert len(colours) > 50 and _rgb(PASS_COLOUR) in colours  # the verdict bars
    pages = sorted((site.html / "students").iterdir())
    page = next(p for p in pages if p.name.startswith("bob"))
    shot = png_colours(screenshot(page, tmp_path / "bob.png", site.profile))
    assert {_rgb(FAIL_COLOUR), _rgb(PASS_COLOUR)} <= shot  # the failing-entry grid's cells


def test_a_hostile_folder_name_is_a_safe_file_and_plain_text(site: Site) -> None:
    pages = {p.name for p in (site.html / "students").iterdir()}
    assert len(pages) == 5 and all(re.fullmatch(r"[A-Za-z0-9_.-]+\.html", name) for name in pages)
    index = _Dom(dump_dom(site.html / "index.html", site.profile))
    link = next(a["href"] for a, text in index.find("a", "href") if text == HOSTILE)
    dom = _Dom(dump_dom(site.html / link, site.profile))
    assert not [e for e in dom.elements if e[0] in ("img", "script")]
    assert [text for _, text in dom.find("h1", "data-student")] == [HOSTILE]
    assert "transposed" in "".join(t for _, _, text in dom.elements for t in text)


def test_the_site_fetches_nothing(site: Site) -> None:
    for page in site.html.rglob("*.html"):
        dom = _Dom(page.read_text(encoding="utf-8"))
        for tag, attrs, _ in dom.elements:
            assert tag not in ("script", "link", "iframe", "img"), (page, tag)
            for name in ("src", "href", "srcset", "action"):
                target = attrs.get(name, "")
                assert not re.match(r"\s*(https?:)?//", target, re.IGNORECASE), (page, tag, target)
                if name == "href" and target:  # every link is a page of the site
                    assert (page.parent / target).resolve().is_file(), (page, target)
        assert not re.search(r"url\(|@import", page.read_text(encoding="utf-8")), page


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_page_names_are_safe_and_unique_even_on_a_case_blind_file_system() -> None:
    names = page_names(["a b", "a_b", "A_B", "..", "", "é/../x", "x" * 300])
    assert list(names.values()) == [
        "a_b.html",
        "a_b-2.html",
        "A_B-3.html",
        "_.html",
        "_-2.html",
        "_.._x.html",
        "x" * 80 + ".html",
    ]


def _with_mask(student: str, mask: np.ndarray) -> SubmissionResult:
    result = sample_result(student=student)
    wrong = result.returns[1]
    case = dataclasses.replace(wrong.case, mask=mask)  # type: ignore[type-var]
    return dataclasses.replace(result, returns=(result.returns[0], dataclasses.replace(wrong, case=case)))


def test_smallest_cases_of_different_shapes_are_counted_by_entry_index_and_said_so() -> None:
    small = np.array([[True, False], [False, False]])
    large = np.array([[True, True, False], [False, False, False], [False, False, True]])
    results = [_with_mask("a", small), _with_mask("b", large)]
    dom = _Dom(index_html(results, ["graph2"], ["a", "b"], page_names(["a", "b"])))
    assert _heat(dom) == {
        (i, j): int(small[i, j] if i < 2 and j < 2 else 0) + int(large[i, j])
        for i in range(3)
        for j in range(3)
    }
    text = "".join(t for _, _, text in dom.elements for t in text)
    assert "shapes vary with the trial sizes (2×2, 3×3): entries are counted by their index" in text


def test_a_mask_too_large_to_draw_lists_the_entries_failing_most_often() -> None:
    big = np.zeros((20, 20), dtype=bool)
    results = [_with_mask("a", big)]
    dom = _Dom(index_html(results, ["graph2"], ["a"], page_names(["a"])))
    assert not dom.find("td", "data-count")
    text = "".join(t for _, _, text in dom.elements for t in text)
    assert "too large to draw; the entries failing most often (hand-ins): [0, 0] (1)" in text


def test_a_roster_student_without_a_folder_has_a_row_of_dashes_and_a_page(tmp_path: Path) -> None:
    written = write_site(tmp_path, [sample_result(student="a")], ["graph2"], ["a", "ghost"])
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "index.html",
        "students/a.html",
        "students/ghost.html",
    ]
    table = _class_table(_Dom(written[0].read_text(encoding="utf-8")))
    assert table["ghost"] == {"graph2": ("", "—"), "total": ("", "—"), "max": ("3", "3")}
    assert table["a"]["graph2"] == ("1", "1/3 logic")
    assert "not handed in (no folder)" in written[2].read_text(encoding="utf-8")
