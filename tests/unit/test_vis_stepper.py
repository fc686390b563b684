"""Stepper: which steps a teacher steps through, and what each one says."""
from __future__ import annotations

from space.records.trace import CORRECTION, VERIFY, StepRecord
from vis.stepper import describe_step, emitting_step_indices


def test_steps_that_emit_tokens(spec_trace):
    # step 0 is a prefill chunk that emits nothing
    assert emitting_step_indices(spec_trace) == [1, 2, 3, 4, 5, 6]


def test_sentence_matches_the_docstring_example(spec_trace):
    """The StepRecord docstring's example, word for word."""
    spec_trace.token_text.update({101: "2", 102: " years", 103: " old", 104: " and", 105: ","})
    spec_trace.steps[2] = StepRecord(
        index=7, kind=VERIFY, start_s=0.0, end_s=0.0, num_scheduled_tokens=5,
        draft_token_ids=[101, 102, 103, 104], num_accepted_tokens=1, emitted_token_ids=[101, 105],
        target_token_kind=CORRECTION)
    assert describe_step(spec_trace, 2)["sentence"] == (
        "Engine step 7: the draft proposed 4 tokens: '2', ' years', ' old', ' and'. The target "
        "accepted '2'; at ' years' the target wanted ',' instead, so ' years', ' old', "
        "' and' are discarded and ',' is emitted.")


def test_sentences_for_each_kind(spec_trace):
    said = {i: describe_step(spec_trace, i)["sentence"] for i in range(7)}
    assert "8 tokens of the 12-token prompt" in said[0] and "no token" in said[0]
    assert "12-token prompt" in said[1] and "first token 'He'" in said[1]
    assert "accepted all 3 drafts and added the bonus token ' ok'" in said[3]
    assert "'\\n'" in said[3]  # whitespace is visible in quotes
    assert "accepted no draft; at 'x'" in said[4] and "'x' is discarded" in said[4]
    assert said[5] == ("Engine step 5: the proposer found nothing to propose; "
                       "the target decoded ' fine' on its own.")
    assert "accepted '.', ' end'" in said[6] and "length" in said[6]


def test_drafts_marked_accepted_rejected_or_unused(spec_trace, spans):
    def fates(i):
        drafts = spans(describe_step(spec_trace, i)["drafts_html"])
        return [(s["data-status"], s["text"]) for s in drafts]

    assert fates(2) == [("accepted", " is"), ("rejected", " 2"), ("rejected", " years"),
                        ("rejected", " old")]
    assert fates(3) == [("accepted", "<b>"), ("accepted", " &"), ("accepted", "\n")]
    assert fates(6) == [("accepted", "."), ("accepted", " end"), ("unused", "!")]
    assert "no drafts" in describe_step(spec_trace, 5)["drafts_html"]
    assert "line-through" in describe_step(spec_trace, 2)["drafts_html"]


def test_emitted_tokens(spec_trace, spans):
    emitted = spans(describe_step(spec_trace, 2)["emitted_html"])
    assert [(s["data-status"], s["text"]) for s in emitted] == [("accepted", " is"),
                                                                ("correction", ",")]


def test_context_is_output_before_the_step_and_escaped(spec_trace):
    d = describe_step(spec_trace, 4)
    assert d["output_offset"] == 7
    ctx = d["context_html"]
    assert "He is,&lt;b&gt; &amp;" in ctx and "<b>" not in ctx
    assert '"y' not in ctx  # step 4's own token is not context yet
    assert "Bob&lt;/b&gt;" in ctx  # the end of the prompt, escaped
