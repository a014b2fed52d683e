"""The class table as an instructor reads it on a terminal of ordinary width."""

from __future__ import annotations

from grader.report.terminal import _shared_prefix


def test_a_courses_shared_id_prefix_is_said_once() -> None:
    assert _shared_prefix(["cs231n.a3.rnn", "cs231n.a3.lstm_step"]) == "cs231n.a3."
    assert _shared_prefix(["cs231n.a2.affine", "cs231n.a3.rnn"]) == "cs231n."
    assert _shared_prefix(["graph1", "graph2"]) == ""  # nothing dotted to share
    assert _shared_prefix(["cs231n.a3.rnn"]) == ""  # one column keeps its whole id
    assert _shared_prefix(["cs231n.a3.rnn", "eecs498.a2.svm_loss_naive"]) == ""
