"""Student randomness is seeded: the same command gives the same verdicts, and a trial replayed alone
draws what it drew in the whole run. A check loop left at the top of a hand-in is said to have run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, grader_command, line_of, write_source
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.handin.discover import submission_from_path
from grader.sandbox import isolation

# The seed question's own check loop (shared/seeds/002), left at the top level of a float32 hand-in:
# np.allclose on random sizes fails some runs and passes others, at import.
CHECK_LOOP = """
sizes = np.random.randint(2, 10, size=(300))
for i in range(300):
    size = sizes[i]
    W_np = np.random.rand(size, size)
    x_np = np.random.rand(size, 1)
    b_np = np.random.rand(size, 1)
    f, auto_grad, user_grad = graph2(W_np, x_np, b_np)
    assert np.allclose(auto_grad.numpy(), user_grad, rtol=1e-6, atol=1e-7), "Gradient not correct"
"""
FLOAT32 = (
    CORRECT_GRAPH2.replace(
        "torch.tensor(W_np, requires_grad=True)",
        "torch.tensor(W_np, dtype=torch.float32, requires_grad=True)",
    )
    .replace("torch.tensor(x_np)", "torch.tensor(x_np, dtype=torch.float32)")
    .replace("torch.tensor(b_np)", "torch.tensor(b_np, dtype=torch.float32)")
)
# A wrong user_grad whose error is random: which entries fail, and by how much, depends on the draws.
NOISY = CORRECT_GRAPH2.replace(
    "return f, W.grad, (s * (1 - s)) @ x_np.T",
    "return f, W.grad, (s * (1 - s)) @ x_np.T + np.random.rand(*W_np.shape)",
)


def _check(path: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [*grader_command(), "check", str(GRAPH2), str(path), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _verdicts(result: dict[str, Any]) -> str:
    for timing in ("seconds", "import_seconds"):
        result.pop(timing)
    return json.dumps(result, sort_keys=True)


def test_a_check_loop_at_the_top_gives_the_same_verdicts_on_every_run(tmp_path: Path) -> None:
    text = textwrap.dedent(FLOAT32).lstrip() + CHECK_LOOP
    path = write_source(tmp_path / "hw.py", text)
    runs = [_check(path, "--trials", "50") for _ in range(3)]
    assert len({_verdicts(r) for r in runs}) == 1
    assert (
        runs[0]["runs_at_import"]
        == [f"hw.py line {line_of(text, n)}" for n in ("sizes =", "for i", "W_np =")][:2]
    )


def test_a_trial_replayed_alone_draws_what_it_drew_in_the_whole_run(tmp_path: Path) -> None:
    path = write_source(tmp_path / "noisy.py", NOISY)
    whole = _check(path, "--trials", "20")
    user_grad = next(r for r in whole["returns"] if r["name"] == "user_grad")
    assert user_grad["verdict"] == "logic"
    case = user_grad["smallest_failing_case"]
    alone = _check(path, "--trial", str(case["trial"]))
    replayed = next(r for r in alone["returns"] if r["name"] == "user_grad")
    assert replayed["failing_entries"] == user_grad["failing_entries"]
    assert _verdicts(_check(path, "--trials", "20")) == _verdicts(whole)


def test_the_report_says_that_code_ran_at_import(tmp_path: Path) -> None:
    text = textwrap.dedent(CORRECT_GRAPH2).lstrip() + "\nprint(graph2)\n"
    path = write_source(tmp_path / "hw.py", text)
    done = subprocess.run(
        [*grader_command(), "check", str(GRAPH2), str(path), "--trials", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert f"your files run code at import (hw.py line {line_of(text, 'print(graph2)')};" in " ".join(
        done.stdout.split()
    )


def test_declarations_alone_do_not_run_code_at_import(tmp_path: Path) -> None:
    quiet = '''
        """A docstring."""
        import numpy as np
        try:
            import torch
        except ImportError:
            torch = None
        EPS = 1e-8
        sigmoid = np.tanh
        def graph2(W_np, x_np, b_np):
            return 0
        class Helper:
            pass
        if __name__ == "__main__":
            print(graph2(1, 2, 3))
    '''
    path = write_source(tmp_path / "quiet" / "hw.py", quiet)
    assert submission_from_path(path, "graph2").runs_at_import == ()
    text = textwrap.dedent(quiet).lstrip() + "np.random.seed(0)\nfor i in range(3):\n    pass\n"
    busy = write_source(tmp_path / "busy" / "hw.py", text)
    found = submission_from_path(busy, "graph2").runs_at_import
    assert found == (f"hw.py line {line_of(text, 'np.random.seed')}", f"hw.py line {line_of(text, 'for i')}")


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), trial=st.one_of(st.none(), st.integers(0, 10**6)))
def test_a_trial_seeds_python_random_exactly_as_random_seed_does(seed: int, trial: int | None) -> None:
    import random

    from grader.sandbox import seeding

    state = random.getstate()
    try:
        random.gauss(0.0, 1.0)  # a Gaussian pair half used: the seeding must drop the cached half too
        seeding.seed_randomness(seed, trial)
        drawn = _draws(random)
        random.gauss(0.0, 1.0)
        random.seed(seeding.trial_seed(seed, trial))
        assert drawn == _draws(random)
    finally:
        random.setstate(state)


def _draws(generator: Any) -> list[float]:  # each kind of draw, the cached Gaussian half included
    gaussians = [generator.gauss(0.0, 1.0), generator.gauss(1.0, 2.0)]
    return [generator.random(), *gaussians, generator.getrandbits(70)]


# Draws that reach the global generators directly, as libraries do (scipy and scikit-learn draw from
# np.random.mtrand._rand), besides those through the modules' functions; printed with the trial's first input.
DIRECT_DRAWS = textwrap.dedent(CORRECT_GRAPH2).replace(
    "    W = torch.tensor(W_np, requires_grad=True)",
    """    import random
    drawn = [
        np.random.mtrand._rand.random_sample(),
        random._inst.random(),
        random._inst.gauss(0.0, 1.0),
        torch.rand(1, generator=torch.default_generator).item(),
        torch.randn(1).item(),
        np.random.random(),
    ]
    np.random.seed(7)  # the student's own seed, then draws through the module and directly
    drawn += [np.random.random(), np.random.mtrand._rand.random_sample()]
    print("drawn", float(x_np.flat[0]).hex(), drawn)
    W = torch.tensor(W_np, requires_grad=True)""",
)


def _layer_env(layer: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    return env


def _drawn(path: Path, layer: str, *extra: str) -> dict[str, list[str]]:
    """What each call drew, by its trial's first input (a trial called twice, a rerun, draws twice)."""
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check", str(GRAPH2), str(path), "--json", "--show-output", *extra],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=_layer_env(layer),
    )
    result = json.loads(done.stdout)
    assert result["score"] == result["max_score"], result
    found: dict[str, list[str]] = {}
    for line in result["stdout"].splitlines():
        _, key, drawn = line.split(" ", 2)
        found.setdefault(key, []).append(drawn)
    return found


@pytest.mark.parametrize(
    "layer", ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]
)
def test_a_trial_alone_draws_what_it_drew_in_the_whole_run_from_every_global_generator(
    layer: str, tmp_path: Path
) -> None:
    path = write_source(tmp_path / "draws.py", DIRECT_DRAWS)
    whole = _drawn(path, layer, "--trials", "6")
    assert len(whole) == 6
    for trial in (0, 3, 5):
        alone = _drawn(path, layer, "--trials", "6", "--trial", str(trial))
        assert len(alone) == 1
        ((key, drawn),) = alone.items()
        # Every call of the trial, in either run, drew the same numbers.
        assert set(drawn) == set(whole[key]) and len(set(drawn)) == 1, (trial, drawn, whole[key])
    # And the trials drew different numbers from one another.
    assert len({drawn[0] for drawn in whole.values()}) == 6
