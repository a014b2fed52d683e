"""A student's hand-in, and the same hand-in made ready for the worker: its files read, notebooks as Python.

Everything the worker is given is decided here, before the sandbox: which bytes go into its submission
folder under which names, and in which order it imports them. Places in a converted notebook are told
back as the notebook's cells and lines here too, where the conversion is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.handin import notebooks
from grader.handin.choice import FileChoice
from grader.outcomes import FailedCell, Failure


@dataclass(frozen=True)
class Submission:
    """A student's hand-in for one exercise: its files (relative to `root`), the one defining the entry
    first, and what of its notebooks the exercise grades.

    The worker imports them in this order until one defines the entry; all are importable by each other.
    """

    name: str
    root: Path
    files: tuple[str, ...]
    contents: tuple[bytes, ...] = ()  # each file's bytes, read once without following links (files.py)
    runs_at_import: tuple[str, ...] = ()  # where the files imported run code at their top ("hw.py line 12")
    notebook: notebooks.Selection = notebooks.ALL  # the exercise's, for every notebook among the files
    left_out: int = 0  # of the notebooks, by the selection: top-level statements, or code cells
    refused: tuple[str, ...] = ()  # definitions left out since defining them runs code (notebooks.py)
    # Where several files define the entry, or the exercise pins one: which is graded, and the others.
    choice: FileChoice | None = None

    @property
    def has_notebook(self) -> bool:
        return any(f.endswith(notebooks.SUFFIX) for f in self.files)

    @property
    def path(self) -> Path:
        """What the student handed in: the file, or the folder of files."""
        return self.root / self.files[0] if len(self.files) == 1 else self.root


@dataclass(frozen=True)
class Prepared:
    """A hand-in as the worker gets it."""

    files: tuple[tuple[str, bytes], ...]  # path in the worker's submission folder, content
    imports: tuple[str, ...]  # the files the worker imports, in order (a notebook as its .py)
    notebooks: Mapping[str, notebooks.ConvertedNotebook] = field(default_factory=dict)

    @property
    def cell_starts(self) -> dict[str, list[int]]:
        """For each notebook run whole (`all`), as the worker imports it: the converted file's line where
        each code cell starts, for the worker to run them one by one."""
        return {
            relative + notebooks.CONVERTED: [span.first_line for span in notebook.cells]
            for relative, notebook in self.notebooks.items()
            if notebook.selection.cells == "all"
        }

    def located(self, failed: FailedCell) -> FailedCell:
        """A failed cell as the worker told it (the converted file, its line) told as the notebook's."""
        name = failed.notebook.removesuffix(notebooks.CONVERTED)
        notebook = self.notebooks.get(name)
        place = notebook.locate(failed.line) if notebook is not None else None
        if place is None:
            return replace(failed, notebook=name)
        return replace(failed, notebook=name, cell=place[0], line=place[1])

    def relocated(self, failure: Failure) -> Failure:
        """Places in a converted notebook told as the notebook's cells and lines."""
        if not self.notebooks:
            return failure
        location = failure.location
        return replace(
            failure,
            message=notebooks.relocate(failure.message, self.notebooks),
            traceback=notebooks.relocate(failure.traceback, self.notebooks),
            location=None if location is None else notebooks.relocate_location(location, self.notebooks),
        )


def prepare(submission: Submission) -> Prepared:
    """The hand-in's files as the worker gets them: a notebook becomes the Python of the code cells the
    exercise selects (the same conversion discover.py searched for the entry)."""
    files: list[tuple[str, bytes]] = []
    imports: list[str] = []
    converted: dict[str, notebooks.ConvertedNotebook] = {}
    for relative, content in zip(submission.files, submission.contents, strict=True):
        if relative.endswith(notebooks.SUFFIX):
            notebook = converted[relative] = notebooks.convert(
                content, submission.root / relative, submission.notebook
            )
            relative += notebooks.CONVERTED
            files.append((relative, notebook.source.encode("utf-8")))
        else:
            files.append((relative, content))
        imports.append(relative)
    return Prepared(tuple(files), tuple(imports), converted)
