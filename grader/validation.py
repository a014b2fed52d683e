"""`grader validate`: checks an exercise's gradients, its reference solution and its known-wrong solutions."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from grader.exercise.reference import References, compute_references, forward_values, reference_returns
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, ReturnSpec, WrongSolution
from grader.exercise.trials import Trial, make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.compare import Precision, compare_many
from grader.judging.naming.families import family_mistakes
from grader.judging.naming.mistakes import standard_mistakes
from grader.judging.naming.slips import Mistake
from grader.outcomes import MistakeFamily, Verdict
from grader.results import ReturnResult, SubmissionResult
from grader.text import counted

FD_TRIALS = 3
FD_STEP = 1e-6
FD_TOLERANCE = 1e-6
# Units of eps * |objective| / step a central difference may lose to the objective's rounding (its two
# evaluations' errors, each up to a few eps of the objective, divided by 2 * step).
FD_ROUNDING = 4.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def validate(
    exercise: Exercise,
    seed: int,
    trial_count: int | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
) -> list[Check]:
    def note(text: str) -> None:
        if progress is not None:
            progress(text)

    trials = trial_count or min(exercise.spec.trials, 200)
    # One set of references for every file graded on the exercise's own trials, and the discrimination check.
    references = compute_references(exercise, make_trials(exercise, seed, trials))
    solution = exercise.spec.solution
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # The files are graded `jobs` at a time while this thread checks gradients and test points.
        graded = {
            relative: pool.submit(_grade_file, exercise, relative, seed, references)
            for relative in ([solution] if solution else []) + [w.file for w in exercise.spec.wrong]
        }
        float32 = pool.submit(grade_float32_variant, exercise, solution, seed, trials) if solution else None
        note(f"{exercise.id}: checking gradients against finite differences")
        checks = [finite_differences(exercise, make_trials(exercise, seed, FD_TRIALS))]
        checks.append(saturation(references))
        note(f"{exercise.id}: checking that the test points tell standard mistakes from rounding")
        discriminating = discrimination(exercise, references)
        if solution is not None and float32 is not None:
            note(f"{exercise.id}: grading the reference solution, on float64 and float32 inputs")
            result = graded[solution].result()
            bad = [r for r in result.returns if r.verdict is not Verdict.PASS]
            detail = "passes every return" if not bad and result.error is None else _summary(result)
            checks.append(Check(f"reference solution {solution}", not bad and result.error is None, detail))
            result = float32.result()
            bad = [r for r in result.returns if r.verdict not in (Verdict.PASS, Verdict.PRECISION)]
            ok = not bad and result.error is None
            detail = (
                "every return is pass or precision: rounding in float32 stays inside the envelope"
                if ok
                else _summary(result)
                + " (correct float32 code would be marked wrong: widen the inputs' gaps or keep values in "
                "range)"
            )
            checks.append(Check(f"float32 variant of {solution}", ok, detail))
        if exercise.spec.starter is not None:
            checks.append(_starter(exercise, exercise.spec.starter))
        checks.append(discriminating)
        for wrong in exercise.spec.wrong:
            note(f"{exercise.id}: grading {wrong.file}")
            checks.append(_wrong_file_check(wrong, graded[wrong.file].result()))
        if exercise.spec.misconceptions:
            checks.append(misconceptions_covered(exercise))
        if exercise.spec.conventions:
            note(f"{exercise.id}: checking that each declared convention changes a return")
            checks += [conventions_covered(exercise), conventions_differ(exercise, references)]
    return checks


def _wrong_file_check(wrong: WrongSolution, result: SubmissionResult) -> Check:
    """Whether a known-wrong file got the verdicts (and misconceptions) its entry declares."""
    verdicts = {r.name: r.verdict for r in result.returns}
    named = {r.name: r.misconception for r in result.returns}
    by_name = {r.name: r for r in result.returns}
    mismatched = [
        f"{n}: expected {v.value}, got {verdicts[n].value}"
        for n, v in wrong.expect.items()
        if verdicts[n] is not v
    ]
    mismatched += [
        f"{n}: expected the misconception '{m}...', got {named[n]!r}"
        + misconception_miss(by_name[n], m, result)
        for n, m in wrong.misconceptions.items()
        if not (named[n] or "").startswith(m)
    ]
    if mismatched:
        detail = "; ".join(mismatched)
        error = result.error or result.first_trial_error
        if error is not None:
            detail += f" (error {error.kind}: {error.message})"
    else:
        detail = ", ".join(f"{n}={v.value}" for n, v in wrong.expect.items())
        detail += "".join(f"; {n}: {named[n]}" for n in wrong.misconceptions)
    return Check(f"known-wrong {wrong.file} ({wrong.mistake})", not mismatched, detail)


def misconception_miss(ret: ReturnResult, expected: str, result: SubmissionResult) -> str:
    """Why a misconception a known-wrong file expects did not name its values: how far they were from it,
    in its own rounding envelopes, where it was tried; what to change; the command that shows the trial."""
    if ret.verdict is not Verdict.LOGIC:
        return f" (mistakes are named only on a logic return; {ret.name} is {ret.verdict.value})"
    misses = [m for m in ret.near_misses if m.name.startswith(expected)]
    if not misses:
        known = ", ".join(f"'{m.name}'" for m in ret.near_misses)
        return (
            f" (no misconception the exercise declares for {ret.name} starts with '{expected}'"
            + (f"; it declares {known}" if known else "")
            + "; a standard mistake's name must be spelled as the grader names it)"
        )
    miss = min(misses, key=lambda m: m.envelopes)
    entry = f"[{', '.join(map(str, miss.index))}]" if miss.index else "its shape"
    where = (
        f"closest: misconception '{miss.name}' at {miss.envelopes:.3g} envelopes on {ret.name} (needs <= 1), "
        f"{miss.beyond} of {miss.entries} entries beyond over {miss.trials} trials, the largest at trial "
        f"{miss.trial} entry {entry}"
    )
    if not miss.separated:
        cause = (
            "it is within rounding of the right values wherever the trials look, so they cannot tell the "
            "two apart: choose inputs or sizes where the misconception changes the return"
        )
    elif math.isinf(miss.envelopes):
        cause = "its shape is not the file's: its expression computes another shape than the mistake"
    else:
        cause = (
            "the file computes something else than the misconception's expression: compare the two on that "
            "trial, and fix the expression (or the file, or the name it expects)"
        )
    repro = (
        f"grader repro {result.exercise_dir} {result.submission} --seed {result.seed} --trial {miss.trial}"
    )
    return f" — {where}; likely cause: {cause}; see it: {repro}"


def misconceptions_covered(exercise: Exercise) -> Check:
    """Every misconception the exercise declares is expected by some known-wrong file: otherwise nothing
    shows that it ever names a student's values (an expression that rounds, or is written, otherwise)."""
    uncovered = []
    covering: list[str] = []
    for misconception in exercise.spec.misconceptions:
        files = [
            w.file for w in exercise.spec.wrong if _expects(w, misconception.return_, misconception.name)
        ]
        if files:
            covering.append(f"'{misconception.name}' by {', '.join(files)}")
        else:
            uncovered.append(misconception)
    name = "declared misconceptions expected by known-wrong files"
    total = len(exercise.spec.misconceptions)
    if not uncovered:
        return Check(name, True, f"all {total}: " + "; ".join(covering))
    listed = "; ".join(f"'{m.name}' (return {m.return_})" for m in uncovered)
    example = uncovered[0]
    return Check(
        name,
        False,
        f"{len(uncovered)} of {total} declared misconceptions are expected by no known-wrong file: "
        f"{listed}; nothing then checks that they name a student's values (their expression may compute, "
        "or round, otherwise than the code that makes the mistake); add a file under wrong/ that makes "
        f'the mistake, with `misconceptions: {{{example.return_}: "{example.name}"}}` in its entry',
    )


def conventions_covered(exercise: Exercise) -> Check:
    """Every convention the exercise declares is expected by some known-wrong file, on some return: what
    shows that students' code written under it is named so."""
    covering, uncovered = [], []
    for convention in exercise.spec.conventions:
        files = [
            w.file
            for w in exercise.spec.wrong
            if any(convention.label.startswith(expected) for expected in w.misconceptions.values())
        ]
        if files:
            covering.append(f"'{convention.name}' by {', '.join(files)}")
        else:
            uncovered.append(convention)
    name = "declared conventions expected by known-wrong files"
    if not uncovered:
        return Check(name, True, f"all {len(covering)}: " + "; ".join(covering))
    example = uncovered[0]
    return Check(
        name,
        False,
        f"{len(uncovered)} of {len(exercise.spec.conventions)} declared conventions are expected by no "
        f"known-wrong file: {', '.join(repr(c.name) for c in uncovered)}; nothing then checks that code "
        "written under them is named so; add a file under wrong/ written under that convention, with "
        f'`misconceptions: {{RETURN: "{example.label}"}}` for each return it changes',
    )


def conventions_differ(exercise: Exercise, references: References) -> Check:
    """Each declared convention changes some return beyond float32 rounding on some trial: one that
    agrees with the exercise's own values wherever the trials look can never name anything (and its
    graph lines or reference function are then probably not what the author meant)."""
    from grader.exercise.conventions import convention_variant

    trials = list(references.trials)
    found, same, failed = [], [], []
    for convention in exercise.spec.conventions:
        try:
            computed = reference_returns(convention_variant(exercise, convention), trials)
        except Exception as exc:
            failed.append(f"'{convention.name}' fails: {type(exc).__name__}: {exc}")
            continue
        changed = []
        for ret in exercise.spec.returns:
            outputs = {i: values[ret.name] for i, values in computed.items()}
            mistake = Mistake(convention.label, MistakeFamily.CONVENTION, outputs)
            caught = _beyond_rounding(ret, mistake, references, Precision.FLOAT32)
            if caught:
                changed.append(f"{ret.name} on {caught} of {len(trials)} trials")
        if changed:
            found.append(f"'{convention.name}' changes {', '.join(changed)}")
        else:
            same.append(convention.name)
    name = "declared conventions differ from the exercise's own"
    if failed or same:
        problems = failed + [
            f"'{n}' gives every return within float32 rounding of the exercise's own values on every trial"
            for n in same
        ]
        fix = (
            "fix its graph lines or reference function (each names what it changes: a line of the graph, "
            "a function of the reference file), or choose inputs where the two conventions differ"
        )
        return Check(name, False, "; ".join(problems) + f": {fix}")
    return Check(name, True, "; ".join(found))


def _expects(wrong: WrongSolution, ret: str, name: str) -> bool:
    expected = wrong.misconceptions.get(ret)
    return expected is not None and name.startswith(expected)


def _grade_file(exercise: Exercise, relative: str, seed: int, references: References) -> SubmissionResult:
    submission = submission_from_path(
        exercise.path_of(relative), exercise.spec.entry, notebook=exercise.spec.notebook.selection
    )
    return grade(exercise, submission, Settings(seed), references=references)


def grade_float32_variant(exercise: Exercise, relative: str, seed: int, trial_count: int) -> SubmissionResult:
    """Grade a file handed float32 inputs, against references computed from those very inputs.

    The float inputs are rounded to float32 first, so what is judged is the code's own arithmetic: code
    that mixes float64 into its float32 work is judged at float64, and agrees there.
    """
    trials = [
        replace(t, inputs={n: _float32_rounded(a) for n, a in t.inputs.items()})
        for t in make_trials(exercise, seed, trial_count)
    ]
    submission = submission_from_path(
        exercise.path_of(relative), exercise.spec.entry, notebook=exercise.spec.notebook.selection
    )
    references = compute_references(exercise, trials)
    return grade(exercise, submission, Settings(seed), references=references, inputs_as="float32")


def _float32_rounded(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind != "f":
        return array
    rounded = array.astype(np.float32).astype(np.float64)
    rounded.flags.writeable = False
    return rounded


def discrimination(exercise: Exercise, references: References) -> Check:
    """Each standard mistake that changes a return must land beyond float32 rounding on some trial.

    Judged at float32, the precision students most often compute in: a mistake hidden inside float32's
    envelope would be graded pass for float32 code.
    """
    trials = list(references.trials)
    hidden: list[str] = []
    weakest: tuple[float, str] | None = None
    tested = 0
    for ret, mistake in standard_mistakes(exercise, trials, references.expected):
        if _beyond_rounding(ret, mistake, references, Precision.FLOAT64) == 0:
            continue  # the same result as the correct one: no mistake for this return
        tested += 1
        caught = _beyond_rounding(ret, mistake, references, Precision.FLOAT32)
        label = f"{ret.name}: {mistake.name}"
        if caught == 0:
            hidden.append(label)
        share = caught / len(trials)
        if weakest is None or share < weakest[0]:
            weakest = (share, label)
    if hidden:
        detail = (
            f"{len(hidden)} of {tested} standard mistakes stay within float32 rounding on every trial: "
            + "; ".join(hidden)
            + " (choose inputs, sizes or a regularisation strength that make them show)"
        )
        return Check(
            "test points tell standard mistakes apart",
            False,
            detail + _families_covered(exercise, references),
        )
    detail = f"all {tested} standard mistakes that change a return land beyond float32 rounding"
    if weakest is not None and weakest[0] < 0.5:
        detail += f"; the least visible, {weakest[1]}, on {weakest[0]:.0%} of trials"
    return Check(
        "test points tell standard mistakes apart", True, detail + _families_covered(exercise, references)
    )


def _families_covered(exercise: Exercise, references: References) -> str:
    """The graph's mistake families naming tries, by family: how many of their variants some return
    tells from float32 rounding. Informative only: a variant may equal the right values on purpose (a
    path whose gradient is 0 here), and naming never picks one that does."""
    tried: dict[MistakeFamily, set[str]] = {}
    told: dict[MistakeFamily, set[str]] = {}
    for ret, mistake in family_mistakes(exercise, list(references.trials)):
        tried.setdefault(mistake.family, set()).add(mistake.name)
        if _beyond_rounding(ret, mistake, references, Precision.FLOAT32) > 0:
            told.setdefault(mistake.family, set()).add(mistake.name)
    if not tried:
        return ""
    counts = ", ".join(f"{len(told.get(f, ()))} of {len(names)} {f.value}" for f, names in tried.items())
    return f"; the graph's mistake families that naming tries, told from float32 rounding: {counts}"


def _summary(result: SubmissionResult) -> str:
    if result.error is not None:
        return f"error ({result.error.kind}): {result.error.message}"
    return "; ".join(
        f"{r.name}: {r.verdict.value} — {r.message}" for r in result.returns if r.verdict is not Verdict.PASS
    )


def _starter(exercise: Exercise, relative: str) -> Check:
    """The starter defines every function the exercise calls, with the spec's parameters: students start
    from the right signatures."""
    spec = exercise.spec
    calls = [(spec.entry, spec.args), *((c.entry, c.args) for c in spec.then)]
    name = f"starter {relative}"
    try:
        tree = ast.parse(exercise.path_of(relative).read_text(encoding="utf-8"), relative)
    except (SyntaxError, ValueError) as exc:
        return Check(name, False, f"does not parse: {exc}")
    defined = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    found = []
    for entry, args in calls:
        wanted = ", ".join(_shown(a) for a in args)
        node = defined.get(entry)
        if node is None:
            return Check(name, False, f"defines no function {entry}, which the spec calls")
        taken = node.args.posonlyargs + node.args.args
        parameters = ", ".join(a.arg for a in taken)
        # Parameters past the spec's args are left at their defaults, as CS224n's skipgram leaves
        # word2vecLossAndGradient at the naive softmax.
        required = len(taken) - len(node.args.defaults)
        if not required <= len(args) <= len(taken):
            return Check(name, False, f"{entry}({parameters}) does not take the spec's args [{wanted}]")
        misplaced = _misplaced(args, [a.arg for a in taken])
        if misplaced:
            return Check(name, False, f"{entry}({parameters}) for the spec's args [{wanted}]: {misplaced}")
        found.append(f"{entry}({parameters})")
    return Check(name, True, f"defines {', '.join(found)}")


def _misplaced(args: tuple[object, ...], parameters: list[str]) -> str:
    """Where the starter's parameters take the spec's arguments in another order, or a cache's part for
    the whole cache: `(W, x)` for `[dout, [x, w, b]]`. A parameter may rename its argument (`cache`,
    `upstream`), but not under a name the spec gives another argument: then the order is wrong.
    Compared without case, as courses write `W` and `w` for one weight."""
    names = {
        i: [n.lower() for n in ([a] if isinstance(a, str) else a if isinstance(a, tuple) else [])]
        for i, a in enumerate(args)
    }
    for position, (arg, parameter) in enumerate(zip(args, parameters, strict=False)):
        own = parameter.lower()
        if isinstance(arg, tuple) and own in names[position]:
            return (
                f"parameter {position + 1} is '{parameter}', one part of the tuple ({', '.join(arg)}) "
                "the spec passes there whole; name it for the whole (cache)"
            )
        if isinstance(arg, str) and own == arg.lower():
            continue
        elsewhere = next((i for i, listed in names.items() if i != position and own in listed), None)
        if elsewhere is not None:
            return (
                f"parameter {position + 1} is '{parameter}', but the spec passes "
                f"{_shown(arg)} there and {_shown(args[elsewhere])} as argument {elsewhere + 1}; "
                "put the parameters in the spec's order"
            )
    return ""


def _shown(arg: object) -> str:
    """An argument as a starter's parameter list shows it."""
    if isinstance(arg, str):
        return arg
    return "(" + ", ".join(arg) + ")" if isinstance(arg, tuple) else "..."


def _beyond_rounding(ret: ReturnSpec, mistake: Mistake, references: References, precision: Precision) -> int:
    """On how many trials the mistaken output lands beyond the envelope of `precision`."""
    shown = [t.index for t in references.trials if t.index in mistake.outputs]
    judged = compare_many(
        ret,
        shown,
        [references.expected[i][ret.name] for i in shown],
        [mistake.outputs[i] for i in shown],
        ["float64"] * len(shown),
        [references.spread[i][ret.name] for i in shown],
        at=precision,
    )
    return sum(1 for c in judged if c.verdict is Verdict.ERROR or c.max_ratio > 1.0)


def saturation(references: References) -> Check:
    """Whether the graph's values stay finite, and where the inputs saturate it: entries whose rounding
    envelope could not be measured, since a randomly rounded copy of the reference left float64's range
    where the exact one did not (log-cosh's softplus(2r) at |r| near 1000). Those are judged by their
    magnitude alone, and they test only that a student's formula saturates too: told, with their share,
    so that an author who wants the formula tested narrows the inputs' range. Non-finite expected values
    fail: no student can be asked for them."""
    name = "the graph at these inputs"
    nonfinite: dict[str, list[int]] = {}
    undefined: dict[str, list[int]] = {}  # per return: [entries, of entries]
    for trial in references.trials:
        for ret, value in references.expected[trial.index].items():
            if not np.isfinite(value).all():
                nonfinite.setdefault(ret, []).append(trial.index)
            spread = references.spread[trial.index][ret]
            counts = undefined.setdefault(ret, [0, 0])
            counts[0] += int(np.count_nonzero(~np.isfinite(spread)))
            counts[1] += int(spread.size)
    if nonfinite:
        told = "; ".join(
            f"{ret} on {len(at)} of {len(references.trials)} trials (first trial {at[0]})"
            for ret, at in nonfinite.items()
        )
        return Check(
            name,
            False,
            f"the graph gives NaN or infinity: {told}; a student cannot return those: narrow the inputs' "
            "range, or write the graph stably (softplus or logsumexp rather than log(exp(...)))",
        )
    saturated = {ret: counts for ret, counts in undefined.items() if counts[0]}
    if not saturated:
        return Check(name, True, "every entry's rounding envelope was measured")
    told = ", ".join(f"{ret} {k / n:.1%} ({counted(k, 'entry')} of {n})" for ret, (k, n) in saturated.items())
    return Check(
        name,
        True,
        f"the inputs saturate the graph on {told}: there a randomly rounded copy of the reference overflows, "
        "so those entries are judged by their size alone and test only that a formula saturates too; to test "
        "the formula there, narrow the inputs' range (or give the returns an atol)",
    )


def finite_differences(exercise: Exercise, trials: list[Trial]) -> Check:
    expected = reference_returns(exercise, trials)
    worst = 0.0
    checked = 0
    for ret in exercise.spec.returns:
        target = ret.grad or ret.vjp
        if target is None:
            continue
        for trial in trials:
            upstream = trial.inputs[ret.vjp.upstream] if ret.vjp is not None else None

            def objective(
                x: np.ndarray,
                of: str = target.of,
                wrt: str = target.wrt,
                trial: Trial = trial,
                upstream: np.ndarray | None = upstream,
            ) -> float:
                value = forward_values(exercise, trial, {wrt: x})[of]
                return float(np.sum(value * upstream) if upstream is not None else np.sum(value))

            base = np.array(trial.inputs[target.wrt], dtype=np.float64)
            numeric = np.zeros_like(base)
            # Central differences lose eps * |objective| / step to the objective's own rounding: a loss
            # of 3e5 (a log-cosh over outliers) differenced with a step of 1e-6 is only good to 3e-5.
            rounding = np.zeros_like(base)
            for k in range(base.size):
                step = FD_STEP * max(1.0, abs(base.flat[k]))
                plus, minus = base.copy(), base.copy()
                plus.flat[k] += step
                minus.flat[k] -= step
                above, below = objective(plus), objective(minus)
                numeric.flat[k] = (above - below) / (2 * step)
                rounding.flat[k] = FD_ROUNDING * np.finfo(np.float64).eps * max(abs(above), abs(below)) / step
            analytic = expected[trial.index][ret.name]
            scale = max(1.0, float(np.max(np.abs(analytic))) if analytic.size else 1.0)
            scaled = float(np.max(np.abs(numeric - analytic) - rounding)) / scale if analytic.size else 0.0
            worst = scaled if math.isnan(scaled) or math.isnan(worst) else max(worst, scaled)
            checked += 1
    ok = worst <= FD_TOLERANCE  # NaN (a graph that overflows) is never within it
    detail = (
        f"autograd matches central differences on {checked} gradient checks (max scaled error {worst:.1e})"
        if checked
        else "no gradient returns to check"
    )
    if math.isnan(worst):
        detail = "autograd or central differences give NaN or infinity: the graph overflows at these inputs"
    elif not ok:
        detail = (
            f"autograd and central differences disagree by {worst:.1e} (scaled; allowed {FD_TOLERANCE:.0e}): "
            "a non-differentiable point in the graph, or inputs where it is ill-conditioned"
        )
    return Check("gradients vs finite differences", ok, detail)
