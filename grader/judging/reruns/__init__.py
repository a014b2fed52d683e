"""Beyond rounding: which trials to run again above their precision, and what their reruns say.

A trial whose values lie beyond the rounding envelope is either a mistake (wrong at any precision) or an
unstable formula: rounding (or the format's range) that the formula amplifies, whose error shrinks as the
arithmetic gets more precise. The first pass is compared, the trials to rerun are chosen from it
(plan.py: `plan_reruns`, a pure function of the first pass), and once the worker has rerun them each trial
beyond rounding is decided from its own runs alone (resolve.py: `resolve_beyond_rounding`): never from
which other trials were rerun, so a verdict cannot change with the number of trials.

Every trial beyond rounding is rerun at float64 (float32 code lifted: torch's dtypes by a function mode,
numpy's `astype` by the inputs' class). Code that computed in float64 already is also rerun with numpy's
inputs in extended precision (`np.longdouble`: 80-bit on x86-64, 11 more bits and a range to 1e4932);
scaling.py judges by either.
Torch has nothing above float64; where the extended rerun cannot run (torch tensors made from the inputs,
numpy.linalg) a float64 trial is judged by its run on inputs moved by the exercise's shift invariance
where the graph has one and the inputs are large (invariance.py: right there is instability, wrong there a
mistake, NaN or not; where the invariance needs a scalar input such as reg at 0, by three runs with it at
0 and not: shifted.py), else on its first run: NaN or infinities where finite values were due are the
format's range (instability), any other error beyond float64 rounding is a mistake.

A rerun tells precision from a mistake only of code that answers the same call the same way. A few trials
beyond rounding also run once more exactly as they first ran (`again`); where a return's answer changed
there (a call counter, a cache keyed by input, unseeded random numbers: wrong on its first calls and
right later, say), none of its reruns is evidence of an unstable formula, and every trial of it beyond
rounding is judged by its values: a mistake, told as different answers for the same inputs. This one
finding is the hand-in's, not a trial's: a stateful hand-in must not earn instability's credit on the
trials that were not run again (changed.py).

What each rerun came back as, an array, the input refused or no answer, is typed in outcomes.py.
"""
