"""Under uniform random actions, a TaiGym task's episodes end as its Gymnasium v5 counterpart's do.

Tolerance: mean episode lengths, and the fraction of episodes each ending cause (a termination
term judged on the final state, or the time limit) accounts for, differ by at most
``Z_AGREE`` = 4 standard errors of the difference; the samples are seeded, so the outcome is
the same on every run. docs/random_actions.md has the table over more episodes.
"""

import mujoco  # noqa: F401  (a dev dependency: Gymnasium's MuJoCo envs need it)
import numpy as np
import pytest
from taigym.scripts import random_actions as ra  # noqa: E402

# episodes per simulator: enough for a standard error of a few percent of the mean length
EPISODES = {"InvertedPendulum": 400, "InvertedDoublePendulum": 400, "Hopper": 300, "Walker2d": 300,
            "Reacher": 64, "Ant": 128, "Humanoid": 200}


# the free-base tasks' long episodes make them the slow ones
@pytest.mark.parametrize("task", [pytest.param(t, marks=pytest.mark.slow) if t in ("Ant", "Humanoid") else t
                                  for t in sorted(EPISODES)])
def test_episodes_end_as_gymnasiums_under_random_actions(task):
    result = ra.compare(task, EPISODES[task], seed=0)
    assert result.length_agree, result.lengths
    differing = [c for c in result.causes if not c[3]]
    assert not differing, differing
    # every episode has at least one cause
    assert sum(c[1] for c in result.causes) >= 1.0 - 1e-12


def test_clock_only_tasks_run_the_full_thousand_steps():
    result = ra.compare("Swimmer", 2, seed=0)
    assert result.lengths["taigym"][0] == result.lengths["gymnasium"][0] == 1000
    assert result.causes[-1][:3] == (ra.TIME_LIMIT, 1.0, 1.0)


def test_agreement_checks_can_fail():
    # a difference of 10 standard errors in the mean, and of a cause's fraction, is caught
    rng = np.random.default_rng(0)
    a = rng.normal(20.0, 5.0, 400)
    assert ra._means_agree(a, a + 0.1)
    assert not ra._means_agree(a, a + 10 * 5.0 * np.sqrt(2 / 400))
    flags = np.zeros(400, bool)
    flags[:200] = True
    assert ra._fractions_agree(flags, flags)
    assert not ra._fractions_agree(flags, np.zeros(400, bool))


def test_an_ending_cause_is_judged_on_the_final_state():
    # a Hopper whose torso is tipped past 0.2 rad ended by the angle term, and not by height
    runs = ra.Episodes()
    qpos = np.array([0.0, 1.25, 0.5, 0.0, 0.0, 0.0])
    runs.add(10, False, qpos, np.zeros(6))
    names, flags = ra.ending_causes("Hopper", runs)
    by_name = dict(zip(names, flags[0]))
    assert by_name["qpos_out_of_range(joints=['rooty'], low=-0.2, high=0.2, inclusive=False)"]
    assert not by_name["qpos_out_of_range(joints=['rootz'], low=0.7, high=inf, inclusive=False)"]
