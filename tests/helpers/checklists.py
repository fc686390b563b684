"""Measured numbers for the checklist, as ChecklistInputs keyword arguments."""

# A fast ngram run on a code edit: 1.7x, every repeat above 1.
GOOD_NGRAM = dict(
    method="ngram", k=4, speedup_median=1.7, speedup_spread=(1.6, 1.8),
    acceptance_rate=0.45, mean_acceptance_length=2.8, proposer_share=0.03,
    target_decode_step_s=0.055, verify_step_s=0.060, spare_memory_bytes=2**30,
    draft_kv_tax_tokens=0, concurrency=1, context_tokens=300, temperature=0.0,
    task_type="code_editing", repetition_share=0.1)

# The truncated-copy draft: acceptance ~0, 0.6x.
BAD_DRAFT = dict(
    method="draft_model", k=4, speedup_median=0.6, speedup_spread=(0.55, 0.65),
    acceptance_rate=0.01, mean_acceptance_length=1.04, draft_step_s=0.012,
    target_decode_step_s=0.050, verify_step_s=0.110, temperature=0.0,
    task_type="structured_output", repetition_share=0.05)

# JSON extraction whose output looped: ngram accepts a lot, a small uneven gain.
LOOPED = dict(
    method="ngram", k=4, speedup_median=1.07, speedup_spread=(0.98, 1.15),
    acceptance_rate=0.43, mean_acceptance_length=2.72, proposer_share=0.03,
    temperature=0.0, task_type="structured_output", repetition_share=0.72)
