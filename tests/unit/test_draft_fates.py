"""A draft's fate (StepRecord.draft_fates, StepRecord.own_token_kind): the one rule the
engine records by and the token view, the stepper and the test traces read."""
from __future__ import annotations

import pytest

from space.records.trace import (
    ACCEPTED,
    BONUS,
    CORRECTION,
    REJECTED,
    UNUSED,
    StepRecord,
)


def _verify(drafts: int, accepted: int, emitted: int, kind=None) -> StepRecord:
    return StepRecord(index=1, kind="verify", start_s=0.0, end_s=0.01,
                      num_scheduled_tokens=1 + drafts, draft_token_ids=list(range(drafts)),
                      num_accepted_tokens=accepted, emitted_token_ids=list(range(emitted)),
                      target_token_kind=kind)


@pytest.mark.parametrize("drafts, accepted, emitted, own, fates", [
    (4, 1, 2, CORRECTION, [ACCEPTED, REJECTED, REJECTED, REJECTED]),  # b rejected, c d with it
    (3, 3, 4, BONUS, [ACCEPTED] * 3),                                # all accepted + bonus
    (1, 0, 1, CORRECTION, [REJECTED]),                               # the only draft rejected
    (3, 3, 2, None, [ACCEPTED, ACCEPTED, UNUSED]),                   # max_tokens cut after 2
])
def test_fates_follow_the_rejection_sampler(drafts, accepted, emitted, own, fates):
    step = _verify(drafts, accepted, emitted)
    assert step.own_token_kind() == own
    step.target_token_kind = own  # as space/engine/build.py records it
    assert step.draft_fates() == fates


def test_no_token_kind_off_verify_steps_and_no_rejection_unless_the_trace_says():
    prefill = StepRecord(0, "prefill", 0.0, 0.01, 12, emitted_token_ids=[5])
    assert prefill.own_token_kind() is None and prefill.draft_fates() == []
    # a step whose record names no correction is never shown with rejected drafts
    assert _verify(4, 1, 2).draft_fates() == [ACCEPTED, UNUSED, UNUSED, UNUSED]
