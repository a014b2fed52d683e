"""Exercise specs: the real graph2 loads; every broken copy of it names the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GRAPH2, copy_exercise, line_of, without_top_level_block

from grader.errors import ExitCode, SpecError
from grader.exercise.spec import Exercise, discover_exercises, load_exercise
from grader.handin import notebooks


def test_graph2_loads_with_its_declared_contents(graph2: Exercise) -> None:
    assert graph2.id == "graph2"
    assert graph2.spec.entry == "graph2"
    assert graph2.spec.args == ("W_np", "x_np", "b_np")
    assert graph2.return_names == ("f", "auto_grad", "user_grad")
    assert graph2.size_range("d") == (2, 9)
    assert graph2.shape("W_np", {"d": 4}) == (4, 4)
    assert graph2.shape("x_np", {"d": 4}) == (4, 1)
    assert graph2.max_score == 10
    assert graph2.points("user_grad") == 4
    assert graph2.root == GRAPH2.resolve()
    assert graph2.program.defined == ("u", "g", "f")
    assert graph2.spec.returns[1].grad is not None and graph2.spec.returns[1].grad.wrt == "W_np"


def test_spec_can_be_loaded_from_folder_or_file(graph2: Exercise) -> None:
    assert load_exercise(GRAPH2 / "exercise.yaml").spec == graph2.spec


def test_defaults_for_optional_fields(tmp_path: Path) -> None:
    folder = copy_exercise(tmp_path / "ex", [("points: {f: 2, auto_grad: 4, user_grad: 4}\n", "")])
    exercise = load_exercise(folder)
    assert exercise.points("f") == 1.0  # unlisted returns are worth one point
    assert exercise.max_score == 3
    assert exercise.spec.limits.trial_seconds > 0
    assert all(not r.explicit_tolerance for r in exercise.spec.returns)


def test_discover_finds_exercise_folders(tmp_path: Path) -> None:
    copy_exercise(tmp_path / "b")
    copy_exercise(tmp_path / "a")
    (tmp_path / "notes").mkdir()
    assert discover_exercises(tmp_path) == [tmp_path / "a", tmp_path / "b"]
    assert discover_exercises(tmp_path / "a") == [tmp_path / "a"]


def test_discover_finds_a_library_grouped_by_course(tmp_path: Path) -> None:
    copy_exercise(tmp_path / "course" / "a2" / "layer")
    copy_exercise(tmp_path / "course" / "a1" / "loss")
    copy_exercise(tmp_path / "top")
    copy_exercise(tmp_path / "top" / "notes" / "inner")  # below an exercise: its own files, not another
    copy_exercise(tmp_path / "_drafts" / "unfinished")
    found = discover_exercises(tmp_path)
    assert found == [
        tmp_path / "course" / "a1" / "loss",
        tmp_path / "course" / "a2" / "layer",
        tmp_path / "top",
    ]


def broken(tmp_path: Path, old: str, new: str) -> tuple[Path, str, SpecError]:
    """Load a copy of graph2 with one edit; return its spec path, its text and the error it raised."""
    folder = copy_exercise(tmp_path / "ex", [(old, new)])
    path = folder / "exercise.yaml"
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    return path, path.read_text(encoding="utf-8"), info.value


def test_spec_error_is_a_usage_error_with_file_and_line(tmp_path: Path) -> None:
    path, text, error = broken(tmp_path, "trials: 1000", "trials: many")
    assert error.exit_code == ExitCode.USAGE_OR_SPEC
    assert str(error).startswith(f"{path}:{line_of(text, 'trials: many')}: trials:")
    assert "'many'" in str(error)


def test_yaml_syntax_error(tmp_path: Path) -> None:
    path, text, error = broken(tmp_path, "trials: 1000", "trials: 1000: 2")
    assert error.path == path
    assert error.line == line_of(text, "trials: 1000: 2")
    assert "YAML syntax" in error.message


def test_yaml_that_is_not_a_mapping(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    folder.mkdir()
    (folder / "exercise.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert info.value.line == 1
    assert "mapping" in info.value.message


def test_unknown_top_level_field_lists_known_fields(tmp_path: Path) -> None:
    path, text, error = broken(tmp_path, "trials: 1000", "colour: 1000")
    assert (error.path, error.line, error.field) == (path, line_of(text, "colour:"), "colour")
    assert "unknown field 'colour'" in error.message
    for known in ("entry", "args", "inputs", "graph", "returns", "trials", "points", "limits"):
        assert known in error.message


def test_a_misspelt_top_level_field_is_named_with_what_was_meant(tmp_path: Path) -> None:
    path, text, error = broken(tmp_path, "trials: 1000", "trails: 1000")
    assert (error.path, error.line, error.field) == (path, line_of(text, "trails:"), "trails")
    assert error.message == "'trails' is not a field: did you mean 'trials'?"


def test_a_misspelt_required_field_is_told_at_its_own_line_not_as_missing(tmp_path: Path) -> None:
    # pydantic reports the missing 'returns' first, at line 1: the misspelling is the author's mistake.
    path, text, error = broken(tmp_path, "returns:", "retuns:")
    assert (error.path, error.line, error.field) == (path, line_of(text, "retuns:"), "retuns")
    assert error.message == "'retuns' is not a field: did you mean 'returns'?"
    assert str(error) == f"{path}:{line_of(text, 'retuns:')}: retuns: {error.message}"


def test_a_misspelt_field_of_an_input_is_named_with_what_was_meant(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path, "W_np: {shape: [d, d], dist: uniform}", "W_np: {shape: [d, d], dits: uniform}"
    )
    assert (error.line, error.field) == (line_of(text, "dits:"), "inputs.W_np.dits")
    assert error.message == "'dits' is not a field: did you mean 'dist'?"


def test_a_misspelt_required_field_of_a_return_is_told_at_its_line(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "{name: f, value: f}", "{nmae: f, value: f}")
    assert (error.line, error.field) == (line_of(text, "nmae:"), "returns[0].nmae")
    assert error.message == "'nmae' is not a field: did you mean 'name'?"


def test_unknown_field_in_a_return_lists_that_models_fields(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "{name: f, value: f}", "{name: f, value: f, tolerance: 1e-6}")
    assert error.line == line_of(text, "tolerance")
    assert error.field == "returns[0].tolerance"
    assert "atol" in error.message and "rtol" in error.message and "vjp" in error.message


def test_a_misspelt_field_of_a_return_is_named_with_what_was_meant(tmp_path: Path) -> None:
    _, _, error = broken(tmp_path, "{name: f, value: f}", "{name: f, value: f, atoll: 1e-6}")
    assert (error.field, error.message) == (
        "returns[0].atoll",
        "'atoll' is not a field: did you mean 'atol'?",
    )


def test_unknown_field_in_an_input(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path, "x_np: {shape: [d, 1], dist: uniform}", "x_np: {shape: [d, 1], dist: uniform, minimum: 1}"
    )
    assert error.line == line_of(text, "minimum: 1")
    assert error.field == "inputs.x_np.minimum"
    assert "low" in error.message and "high" in error.message


def test_missing_required_field(tmp_path: Path) -> None:
    path, _, error = broken(tmp_path, "entry: graph2\n", "")
    assert error.path == path
    assert error.field == "entry"
    assert "required" in error.message and "entry" in error.message
    assert error.line is not None


def test_unknown_distribution(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path, "x_np: {shape: [d, 1], dist: uniform}", "x_np: {shape: [d, 1], dist: gauss}"
    )
    assert error.line == line_of(text, "gauss")
    assert error.field == "inputs.x_np.dist"
    assert "gauss" in error.message and "normal" in error.message


def test_integer_input_needs_bounds(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path, "b_np: {shape: [d, 1], dist: uniform}", "b_np: {shape: [d, 1], dist: integer}"
    )
    assert error.line == line_of(text, "dist: integer")
    assert error.field.startswith("inputs.b_np")
    assert "low" in error.message and "high" in error.message


def test_size_range_reversed(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "d: {min: 2, max: 9}", "d: {min: 9, max: 2}")
    assert error.line == line_of(text, "min: 9")
    assert error.field.startswith("sizes.d")
    assert "min" in error.message and "max" in error.message


def test_undefined_size_variable_in_a_shape(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "x_np: {shape: [d, 1]", "x_np: {shape: [n, 1]")
    assert error.line == line_of(text, "[n, 1]")
    assert error.field == "inputs.x_np.shape[0]"
    assert "'n'" in error.message and "d" in error.message


def statement_line(text: str, statement: str) -> int:
    """1-based line of the graph statement (the description above the graph quotes it too)."""
    numbers = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip() == statement]
    assert len(numbers) == 1, f"{statement!r} is not exactly one line of the spec"
    return numbers[0]


def test_unknown_graph_function_points_into_the_graph_block(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "\n  f = sum(g)\n", "\n  f = total(g)\n")
    assert error.line == statement_line(text, "f = total(g)")
    assert error.line > line_of(text, "graph:")
    assert error.field == "graph"
    assert "'total'" in error.message and "sigmoid" in error.message  # names what is allowed


def test_unknown_graph_function_in_an_inline_graph(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path,
        "graph: |\n  u = W_np @ x_np + b_np\n  g = sigmoid(u)\n  f = sum(g)\n",
        'graph: "u = W_np @ x_np + b_np; g = sigmoid(u); f = total(g)"\n',
    )
    assert error.line == line_of(text, "graph:")
    assert error.field == "graph"
    assert "'total'" in error.message


def test_graph_syntax_error_points_at_its_line(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "\n  g = sigmoid(u)\n", "\n  g = sigmoid(u\n")
    assert error.line == statement_line(text, "g = sigmoid(u")
    assert error.field == "graph"
    assert "syntax" in error.message


def test_graph_forbidden_python_points_at_its_line(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "\n  g = sigmoid(u)\n", "\n  g = __import__('os')\n")
    assert error.line == statement_line(text, "g = __import__('os')")
    assert error.field == "graph"


def test_grad_wrt_an_input_that_does_not_exist(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path, "{name: auto_grad, grad: {of: f, wrt: W_np}}", "{name: auto_grad, grad: {of: f, wrt: V_np}}"
    )
    assert error.line == line_of(text, "V_np")
    assert error.field == "returns[1].grad.wrt"
    assert "'V_np'" in error.message and "W_np" in error.message


def test_grad_wrt_an_integer_input(tmp_path: Path) -> None:
    folder = copy_exercise(
        tmp_path / "ex",
        [
            ("b_np: {shape: [d, 1], dist: uniform}", "b_np: {shape: [d, 1], dist: integer, low: 0, high: 3}"),
            (
                "{name: user_grad, grad: {of: f, wrt: W_np}, by_hand: true}",
                "{name: user_grad, grad: {of: f, wrt: b_np}}",
            ),
        ],
    )
    text = (folder / "exercise.yaml").read_text(encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert info.value.line == line_of(text, "wrt: b_np")
    assert info.value.field == "returns[2].grad.wrt"
    assert "'b_np'" in info.value.message and "float" in info.value.message


def test_grad_of_something_the_graph_does_not_compute(tmp_path: Path) -> None:
    _, text, error = broken(
        tmp_path,
        "{name: auto_grad, grad: {of: f, wrt: W_np}}",
        "{name: auto_grad, grad: {of: loss, wrt: W_np}}",
    )
    assert error.line == line_of(text, "of: loss")
    assert error.field == "returns[1].grad.of"


def test_return_value_not_computed_by_the_graph(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "{name: f, value: f}", "{name: f, value: h}")
    assert error.line == line_of(text, "value: h")
    assert error.field == "returns[0].value"
    assert "'h'" in error.message
    for computed in ("u", "g", "f"):
        assert computed in error.message


def test_return_with_two_kinds(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "{name: f, value: f}", "{name: f, value: f, grad: {of: f, wrt: W_np}}")
    assert error.line == line_of(text, "{name: f, value: f, grad")
    assert "exactly one" in error.message


def test_duplicate_return_name(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "{name: auto_grad, grad:", "{name: f, grad:")
    assert error.line == line_of(text, "{name: f, grad:")
    assert "twice" in error.message


def test_points_for_an_unknown_return(tmp_path: Path) -> None:
    _, text, error = broken(tmp_path, "points: {f: 2,", "points: {loss: 2,")
    assert error.line == line_of(text, "points:")
    assert error.field == "points.loss"
    assert "'loss'" in error.message and "user_grad" in error.message


def test_missing_solution_file(tmp_path: Path) -> None:
    path, text, error = broken(tmp_path, "solution: solution.py", "solution: nothere.py")
    assert error.path == path
    assert error.line == line_of(text, "solution: nothere.py")
    assert error.field == "solution"
    assert "nothere.py" in error.message


def with_wrong_block(tmp_path: Path, block: str) -> tuple[Path, str]:
    folder = copy_exercise(tmp_path / "ex")
    spec = folder / "exercise.yaml"
    text = without_top_level_block(spec.read_text(encoding="utf-8"), "wrong").rstrip("\n") + "\n" + block
    spec.write_text(text, encoding="utf-8")
    return folder, text


def test_wrong_entry_expecting_an_unknown_return(tmp_path: Path) -> None:
    folder, text = with_wrong_block(
        tmp_path, "wrong:\n  - file: solution.py\n    mistake: bad\n    expect: {gg: logic}\n"
    )
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert info.value.line == line_of(text, "{gg: logic}")
    assert info.value.field == "wrong[0].expect.gg"


def test_wrong_entry_with_an_unknown_verdict(tmp_path: Path) -> None:
    folder, text = with_wrong_block(
        tmp_path, "wrong:\n  - file: solution.py\n    mistake: bad\n    expect: {f: wrong}\n"
    )
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert info.value.line == line_of(text, "{f: wrong}")
    assert info.value.field == "wrong[0].expect.f"
    assert "pass" in info.value.message and "logic" in info.value.message


def test_wrong_entry_file_must_exist(tmp_path: Path) -> None:
    folder, text = with_wrong_block(
        tmp_path, "wrong:\n  - file: wrong/absent.py\n    mistake: bad\n    expect: {f: logic}\n"
    )
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert info.value.line == line_of(text, "wrong/absent.py")
    assert info.value.field == "wrong[0].file"
    assert "wrong/absent.py" in info.value.message


def test_missing_spec_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_exercise(tmp_path)
    assert info.value.path == tmp_path / "exercise.yaml"
    assert "exercise.yaml" in str(info.value)


def _notebook_spec_error(tmp_path: Path, block: str) -> tuple[Path, str, SpecError]:
    folder = copy_exercise(tmp_path / "ex", append=block)
    path = folder / "exercise.yaml"
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    return path, path.read_text(encoding="utf-8"), info.value


def test_notebook_modes_load_with_definitions_as_the_default(tmp_path: Path, graph2: Exercise) -> None:
    assert graph2.spec.notebook.selection == notebooks.Selection("definitions", "grade")
    tagged = load_exercise(
        copy_exercise(tmp_path / "ex", append="notebook: {cells: tagged, tag: autograde}\n")
    )
    assert tagged.spec.notebook.selection == notebooks.Selection("tagged", "autograde")
    plain = load_exercise(copy_exercise(tmp_path / "ex2", append="notebook:\n  cells: tagged\n"))
    assert plain.spec.notebook.selection == notebooks.Selection("tagged", "grade")


def test_unknown_notebook_mode_names_the_modes(tmp_path: Path) -> None:
    path, text, error = _notebook_spec_error(tmp_path, "notebook:\n  cells: defs\n")
    assert (error.path, error.line, error.field) == (path, line_of(text, "cells: defs"), "notebook.cells")
    assert "'all', 'definitions' or 'tagged'" in error.message and "'defs'" in error.message


def test_a_tag_without_tagged_says_how_to_fix_it(tmp_path: Path) -> None:
    path, text, error = _notebook_spec_error(tmp_path, "notebook:\n  cells: definitions\n  tag: grade\n")
    assert (error.path, error.line, error.field) == (path, line_of(text, "notebook:"), "notebook")
    assert (
        error.message
        == "'tag' only goes with cells 'tagged', not 'definitions': remove tag, or set cells: tagged"
    )
    _, _, error = _notebook_spec_error(tmp_path / "default", "notebook: {tag: grade}\n")
    assert "not 'definitions'" in error.message  # the default
    assert str(error).startswith(f"{tmp_path / 'default' / 'ex' / 'exercise.yaml'}:")


def test_unknown_notebook_field_lists_the_notebook_fields(tmp_path: Path) -> None:
    _, text, error = _notebook_spec_error(tmp_path, "notebook: {cells: tagged, labels: [grade]}\n")
    assert (error.line, error.field) == (line_of(text, "notebook:"), "notebook.labels")
    assert error.message == "unknown field 'labels'; known fields: cells, tag"
    _, _, error = _notebook_spec_error(tmp_path / "close", "notebook: {cells: tagged, tags: [grade]}\n")
    assert (error.field, error.message) == ("notebook.tags", "'tags' is not a field: did you mean 'tag'?")


def test_the_spec_package_keeps_every_name_the_one_module_had() -> None:
    """spec.py became a package (models, locations, checks, exercise, loading): every name imported from
    `grader.exercise.spec` before is still imported from there."""
    import grader.exercise.spec as spec

    before = (
        "SPEC_FILE MISCONCEPTION SizeExpr FIRST_CALL_SECONDS WALL_CAP_FACTOR SizeRange InputSpec GradSpec "
        "VjpSpec Visibility ReturnSpec Limits NotebookSpec GradescopeSpec WrongSolution Misconception Scalar "
        "LiteralValue LiteralArg DictArg Vocabulary TokensArg IndexOfArg MethodSpec SamplerObject "
        "OBJECT_KINDS ObjectArg Arg CallSpec ExerciseSpec Exercise load_exercise discover_exercises "
        "EXERCISES_ENV exercise_argument"
    ).split()
    assert [name for name in before if not hasattr(spec, name)] == []
    assert set(before) <= set(spec.__all__)
