"""The app with the test-only engine fault installed (tests/helpers/faults.py):

    python -m tests.helpers.fault_app [--fault-at N] [app.py's flags]

``space.engine.core`` takes its ``StepGuard`` from ``space.common.cancel`` when it
is imported, which the app does on its engine build thread, after this has
replaced it. Run from the repository root, as ``python app.py`` is.
"""
from __future__ import annotations

import sys

from space.common import cancel
from tests.helpers.faults import FAULT_STEP, faulty_guard


def main(argv: list[str]) -> int:
    step = FAULT_STEP
    if argv[:1] == ["--fault-at"]:
        step, argv = int(argv[1]), argv[2:]
    if "space.engine.core" in sys.modules:  # imported already: its name is bound
        raise RuntimeError("install the fault before space.engine.core is imported")
    cancel.StepGuard = faulty_guard(step)  # type: ignore[misc]
    import app
    return app.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
