"""The views' hand-written run (traces.views_run) with target views, as an explained
run would carry them (trace version 3):

  step 2  drafts ' is',' 2',' years',' old'; ' is' accepted (90%), ' 2' rejected
          (7%), the target chose ',' (81%)
  step 3  drafts '<b>',' &','\\n' all accepted (95%, 60%, 99%)
  step 4  draft 'x' rejected (0.05%, outside the top 5); the target chose '"y' (60%)
  step 6  cut by max_tokens: '.', ' end' accepted (views for the two emitted drafts)
"""
from __future__ import annotations

from space.records.target_view import Explanation, TargetView
from space.records.trace import RunTrace
from tests.helpers.traces import views_run


def view(pos: int, draft: int, p: float, tops: list[tuple[int, float]]) -> TargetView:
    return TargetView(draft_pos=pos, draft_token_id=draft, draft_prob=p,
                      top_token_ids=[t for t, _ in tops], top_probs=[q for _, q in tops])


def make_explained(temperature: float = 0.0) -> RunTrace:
    run = views_run()
    s = run.steps
    s[2].target_views = [
        view(0, 11, 0.90, [(11, 0.90), (20, 0.05), (13, 0.02), (14, 0.01), (99, 0.01)]),
        view(1, 12, 0.07, [(20, 0.81), (12, 0.07), (99, 0.05), (14, 0.03), (13, 0.01)]),
    ]
    s[3].target_views = [
        view(0, 21, 0.95, [(21, 0.95), (6, 0.02), (99, 0.01), (22, 0.01), (23, 0.005)]),
        view(1, 22, 0.60, [(22, 0.60), (99, 0.30), (21, 0.05), (23, 0.02), (6, 0.01)]),
        view(2, 23, 0.99, [(23, 0.99), (99, 0.004), (22, 0.003), (21, 0.002), (6, 0.001)]),
    ]
    s[4].target_views = [
        view(0, 30, 0.0005, [(31, 0.60), (99, 0.20), (6, 0.10), (21, 0.05), (22, 0.02)]),
    ]
    s[6].target_views = [
        view(0, 27, 0.70, [(27, 0.70), (99, 0.20), (6, 0.05), (21, 0.03), (22, 0.01)]),
        view(1, 28, 0.55, [(28, 0.55), (99, 0.40), (6, 0.02), (21, 0.02), (22, 0.01)]),
    ]
    run.explanation = Explanation(temperature=temperature, top_p=1.0, score_s=0.2,
                                  num_scored_tokens=23)
    return run
