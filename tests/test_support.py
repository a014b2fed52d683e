"""Support files: a course's helper module, declared by the exercise, importable and read-only."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, grade_source, line_of, write_source

from grader.errors import SpecError
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.sandbox import isolation

UTIL = '''
import numpy as np


def sigmoid(z):
    """The course's sigmoid, handed out with the exercise."""
    return 1.0 / (1.0 + np.exp(-z))
'''

USES_UTIL = """
    import torch
    from util import sigmoid


    def graph2(W_np, x_np, b_np):
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        f.backward()
        s = sigmoid(W_np @ x_np + b_np)
        return f, W.grad, (s * (1 - s)) @ x_np.T
"""


@pytest.fixture(scope="module")
def with_util(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    folder = copy_exercise(tmp_path_factory.mktemp("support") / "graph2", append="\nsupport: [util.py]\n")
    write_source(folder / "util.py", UTIL)
    return load_exercise(folder)


def test_a_submission_importing_the_support_module_passes(with_util: Exercise, tmp_path: Path) -> None:
    path = write_source(tmp_path / "student.py", USES_UTIL)
    result = grade(with_util, submission_from_path(path, "graph2"), Settings(0, 10))
    assert result.error is None, result.error
    assert result.passed


def test_the_course_module_wins_over_a_students_copy(with_util: Exercise, tmp_path: Path) -> None:
    write_source(tmp_path / "hw" / "graph2.py", USES_UTIL)
    write_source(tmp_path / "hw" / "util.py", "def sigmoid(z):\n    return z * 0\n")  # a broken local copy
    result = grade(with_util, submission_from_path(tmp_path / "hw", "graph2"), Settings(0, 10))
    assert result.passed, result.returns


def test_support_files_cannot_be_changed_by_a_submission(with_util: Exercise, tmp_path: Path) -> None:
    vandal = USES_UTIL.replace(
        "    def graph2(W_np, x_np, b_np):\n",
        "    import util\n    try:\n        open(util.__file__, 'w').write('')\n"
        "    except OSError:\n        pass\n\n\n    def graph2(W_np, x_np, b_np):\n",
    )
    path = write_source(tmp_path / "vandal.py", vandal)
    result = grade(with_util, submission_from_path(path, "graph2"), Settings(0, 3))
    assert result.passed  # graded normally
    assert "sigmoid" in (with_util.root / "util.py").read_text()  # the exercise's file is untouched


@pytest.mark.skipif(isolation.current().level != "bubblewrap", reason="read-only mounts need bubblewrap")
def test_under_bubblewrap_the_support_folder_is_read_only(with_util: Exercise, tmp_path: Path) -> None:
    probe = USES_UTIL.replace(
        "        return f, W.grad, (s * (1 - s)) @ x_np.T",
        "        import util\n        try:\n            open(util.__file__, 'a').close()\n"
        "            return f, W.grad, 0 * W_np\n        except OSError:\n"
        "            return f, W.grad, (s * (1 - s)) @ x_np.T",
    )
    path = write_source(tmp_path / "probe.py", probe)
    result = grade(with_util, submission_from_path(path, "graph2"), Settings(0, 3))
    assert result.passed, "the submission could open the support module for writing"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("[missing.py]", "'missing.py' is neither a .py file nor a folder"),
        ("[../outside.py]", "'../outside.py' is neither inside the exercise's folder nor in a shared folder"),
        ("[../other/solution.py]", "'../other/solution.py' is neither inside the exercise's folder nor"),
        ("[exercise.yaml]", "'exercise.yaml' is neither a .py file nor a folder"),
    ],
)
def test_bad_support_entries_are_spec_errors_with_a_line(tmp_path: Path, entry: str, message: str) -> None:
    write_source(tmp_path / "outside.py", UTIL)  # exists, but outside the exercise
    write_source(tmp_path / "other" / "solution.py", UTIL)  # a sibling exercise's: never importable
    folder = copy_exercise(tmp_path / "graph2", append=f"\nsupport: {entry}\n")
    with pytest.raises(SpecError) as raised:
        load_exercise(folder)
    text = str(raised.value)
    assert message in text
    spec_text = (folder / "exercise.yaml").read_text()
    assert f"exercise.yaml:{line_of(spec_text, 'support:')}: support[0]:" in text


def test_a_course_file_importing_python_2_names_from_past_is_graded_as_handed_in(
    graph2: Exercise, tmp_path: Path
) -> None:
    """CS231n's starters begin with `from past.builtins import xrange` (the `future` package), which the
    grading machine need not have."""
    source = (
        "from builtins import range\nfrom past.builtins import xrange\nimport past.builtins\n"
        + textwrap.dedent(CORRECT_GRAPH2).replace("    f.backward()", "    f.backward()\n    list(xrange(2))")
    )
    result = grade_source(graph2, tmp_path, "linear_svm.py", source)
    assert result.error is None, result.error
    assert {r.verdict.value for r in result.returns} == {"pass"}


def test_an_assignments_exercises_share_a_support_folder_beside_them(tmp_path: Path) -> None:
    """CS224n's word2vec.py imports `from utils.utils import softmax`: one `_support/utils` package for
    every exercise of the assignment, which discovery does not take for an exercise."""
    write_source(tmp_path / "a2" / "_support" / "util.py", UTIL)
    folder = copy_exercise(tmp_path / "a2" / "graph2", append="\nsupport: [../_support/util.py]\n")
    exercise = load_exercise(folder)
    path = write_source(tmp_path / "hand_in" / "hw.py", USES_UTIL)
    assert grade(exercise, submission_from_path(path, "graph2"), Settings(0, 3)).passed
