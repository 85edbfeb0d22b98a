"""``toolplug.openapi``, where packages made by ``toolplug new --openapi`` in 0.1 import
``operation_tools`` from, keeps working for one minor release and says where it went."""

from __future__ import annotations

import subprocess
import sys


def test_the_old_home_warns_and_still_gives_operation_tools() -> None:
    script = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from toolplug.openapi import operation_tools\n"
        "from toolplug.sources.openapi import operation_tools as moved\n"
        "assert operation_tools is moved\n"
        "print([str(w.message) for w in caught if w.category is DeprecationWarning])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert "moved to toolplug.sources.openapi" in done.stdout
