"""The integrations are imported only when used, and say how to install what they need."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ["pydantic_ai", "pydantic_graph", "agents", "openai"]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )


def test_the_package_imports_no_framework() -> None:
    done = _python(
        "import json, sys\n"
        "import toolplug, toolplug.integrations\n"
        "toolplug.load({}, env={'TOOLPLUG_PLUGINS': ''})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    assert done.returncode == 0, done.stderr
    assert sorted(set(json.loads(done.stdout)) & set(FRAMEWORKS)) == []


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
    ],
)
def test_a_missing_framework_names_the_extra_to_install(
    module: str, framework: str, extra: str
) -> None:
    # None in sys.modules is how Python reports a module that is not installed.
    done = _python(
        f"import sys\nsys.modules[{framework!r}] = None\nimport toolplug.integrations.{module}\n"
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: toolplug's")
    assert f'pip install "toolplug[{extra}]"' in last


def test_each_module_exports_exactly_its_public_names() -> None:
    from toolplug.integrations import openai_agents, pydantic_ai

    assert pydantic_ai.__all__ == [
        "ToolplugToolset",
        "answers",
        "aprompt_content",
        "aprompt_messages",
        "aresource_content",
        "prompt_content",
        "prompt_messages",
        "resource_content",
    ]
    assert openai_agents.__all__ == ["channel_of", "function_tools", "instructions"]
    for module in (pydantic_ai, openai_agents):
        public = {
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        }
        assert public == set(module.__all__)


def test_the_integrations_use_the_public_door_only() -> None:
    # An integration is what a host would write itself: it names toolplug's types through
    # `toolplug`, never through a private module (type-checking imports included), so a
    # type it needs and the public door lacks shows up here.
    import ast
    from pathlib import Path

    import toolplug.integrations

    folder = Path(toolplug.integrations.__file__).parent
    private = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "toolplug" and parts[1:2] != ["integrations"] and any(
                    part.startswith("_") for part in parts
                ):
                    private.append(f"{path.name}:{node.lineno}: {name}")
    assert private == []
