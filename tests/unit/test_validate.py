"""--validate (space/judge/validate.py): the first half's prediction interval against
the second half's ratio of totals, on hand-made comparisons."""
from __future__ import annotations

import json

from space.judge import validate
from space.judge.traffic import answer, describe
from tests.helpers.traffic import item


def test_halves_predict_and_check_and_a_short_group_says_so():
    steady = [item("code", i, s).compare for i, s in enumerate((1.8, 2.0, 1.9, 1.9, 2.0, 1.8))]
    jump = [item("chat", i, s).compare for i, s in enumerate((1.0, 1.1, 3.0, 3.2))]
    checks, short = validate.validate({"code": steady, "chat": jump,
                                       "faq": steady[:3]})
    code, chat = checks
    assert (code.first_prompts, code.second_prompts) == (3, 3)
    assert code.prediction is not None and code.inside is True
    assert chat.prediction is not None and chat.inside is False  # a shift the halves show
    assert chat.second_speedup > chat.prediction[1]
    assert short == ["--validate needs at least 4 prompts per group (two halves of two); too "
                     "few in faq (3)"]
    d = json.loads(json.dumps(validate.summary(checks, short)))
    assert (d["inside"], d["judged"]) == (1, 2)


def test_the_validation_is_part_of_the_answer():
    items = [item("code", i, s) for i, s in enumerate((1.8, 2.0, 1.9, 1.9))]
    r = answer("t", "how", items, {}, None, repeats=1, max_tokens=8)
    r.validation = validate.summary(*validate.validate(r.by_group()))
    text = describe(r)
    assert "validation: the second half fell inside the first half's prediction interval " \
           "in 1 of 1 groups" in text
    assert "code: first 2 prompts" in text and ": inside" in text
    assert json.loads(json.dumps(r.to_dict()))["validation"]["judged"] == 1
