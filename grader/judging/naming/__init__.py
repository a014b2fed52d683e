"""Naming a logic return's mistake, apart from the rules that give the verdict.

A mistake's values are the reference computed on a changed exercise (slips, the standard mistakes, the
families derived from the graph, the slips of a backward by hand), so this part needs torch; the verdict
path (compare, reruns/, classify, judge) needs none. The verdict path enters only through `diagnosis`,
which imports the rest when a mistake is to be named (tests/test_judging_layers.py).
"""
