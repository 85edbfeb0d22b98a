"""Child processes measured by coverage as the test run is, or kept out of it.

Under ``pytest --cov``, coverage (``patch = ["subprocess"]`` in ``[tool.coverage.run]``)
puts its configuration in this process's environment as ``COVERAGE_PROCESS_CONFIG``; a
Python child that inherits it measures itself into a data file beside the run's, and
pytest-cov combines them at the end. A child whose environment a test builds from scratch
does not inherit it, nor one the MCP SDK's ``stdio_client`` starts (its environment is a
small allow-list plus ``env=``): ``measured`` carries the variables over. Without ``--cov``
there are none and both functions change nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PREFIX = "COVERAGE_"


def measured(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with this process's ``COVERAGE_*`` variables added (``env``'s own win)."""
    return {**{k: v for k, v in os.environ.items() if k.startswith(PREFIX)}, **env}


def unmeasured(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without ``COVERAGE_*`` variables: for an interpreter of a fresh virtual
    environment, which has no coverage and must not write into this run's data."""
    return {k: v for k, v in env.items() if not k.startswith(PREFIX)}
