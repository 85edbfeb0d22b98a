"""MkDocs hooks of the reference site (mkdocs.yml): more pages, their links, docstrings.

The site's pages live where a reader of the repository finds them: README.md at the top,
docs/ and guidelines/ beside each other, a README in each plugin, and they link to each
other with relative links that work on GitHub. ``docs/`` is the site's root; ``on_files``
adds README.md (the home page), every page of guidelines/ and the plugins' and bench's
READMEs, and ``on_page_markdown`` maps each relative link from where its page is in the
repository to where it is on the site, so ``mkdocs build --strict`` checks every link. A
page added under docs/ or guidelines/ is on the site without any change here.

A public name without a docstring fails the build too (a warning, which ``--strict`` makes
an error): every name in ``__all__`` of ``toolplug``, ``toolplug.http``, the integrations,
``toolplug.schema``, ``toolplug.search`` and ``toolplug.testing``, and every public method
and property of the classes among them.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent
EXTRA_PAGES = ("README.md", "guidelines/**/*.md", "plugins/*/README.md", "bench/*.md")
PUBLIC_MODULES = (
    "toolplug",
    "toolplug.http",
    "toolplug.integrations.langchain",
    "toolplug.integrations.llm",
    "toolplug.integrations.openai_agents",
    "toolplug.integrations.pydantic_ai",
    "toolplug.schema",
    "toolplug.search",
    "toolplug.testing",
)
_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")

log = logging.getLogger("mkdocs.plugins.toolplug")


def site_path(repository_path: str) -> str | None:
    """Where a file of the repository is on the site (its ``src_uri``), or None."""
    if repository_path.startswith("docs/"):
        return repository_path.removeprefix("docs/")
    if any(Path(repository_path).match(p) for p in EXTRA_PAGES) or repository_path.startswith(
        "guidelines/"
    ):
        return repository_path if (ROOT / repository_path).suffix == ".md" else None
    return None


def on_files(files: Any, config: Any) -> Any:
    """Add README.md, guidelines/ and the READMEs of the catalog to the site's pages."""
    for pattern in EXTRA_PAGES:
        for source in sorted(ROOT.glob(pattern)):
            relative = source.relative_to(ROOT).as_posix()
            files.append(File.generated(config, relative, abs_src_path=str(source)))
    return files


def _repository_path(page: Any, config: Any) -> str:
    """Where the page is in the repository: docs/ holds the site's own pages."""
    source = Path(page.file.abs_src_path).resolve()
    if source.is_relative_to(Path(config["docs_dir"]).resolve()):
        return f"docs/{page.file.src_uri}"
    return source.relative_to(ROOT).as_posix()


def map_link(page_in_repository: str, page_on_site: str, target: str) -> str:
    """A relative link of a page, from the repository's layout to the site's."""
    if "://" in target or target.startswith(("/", "mailto:")):
        return target
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page_in_repository), target))
    candidates = [resolved]
    if target.endswith("/") or (ROOT / resolved).is_dir():
        candidates = [f"{resolved}/index.md", f"{resolved}/README.md"]
    for candidate in candidates:
        on_site = site_path(candidate)
        if on_site is not None and (ROOT / candidate).is_file():
            return posixpath.relpath(on_site, posixpath.dirname(page_on_site) or ".")
    return target


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Map the page's links to the site's layout; once a build, check the docstrings."""
    _check_docstrings_once()
    in_repository = _repository_path(page, config)

    def replace(match: re.Match[str]) -> str:
        mapped = map_link(in_repository, page.file.src_uri, match[2])
        return f"{match[1]}{mapped}{match[3] or ''}{match[4]}"

    return _LINK.sub(replace, markdown)


def missing_docstrings(source: Path = ROOT / "core" / "src") -> list[str]:
    """Every public name (and public method or property of a public class) without one."""
    import griffe

    missing: list[str] = []
    loader = griffe.GriffeLoader(search_paths=[str(source)])
    package = loader.load("toolplug")
    loader.resolve_aliases(implicit=True, external=False)
    for module_path in PUBLIC_MODULES:
        module = package if module_path == "toolplug" else package[module_path.split(".", 1)[1]]
        for name in module.exports or ():
            if name == "__version__":
                continue
            member = module[name]
            target = member.final_target if member.is_alias else member
            if not target.docstring:
                missing.append(f"{module_path}.{name}")
            if target.is_class:
                for attribute, child in target.members.items():
                    field = child.is_attribute and "property" not in child.labels
                    if attribute.startswith("_") or child.is_alias or field:
                        continue  # fields are documented in the class's docstring or table
                    if not child.docstring:
                        missing.append(f"{module_path}.{name}.{attribute}")
    return sorted(set(missing))


_CHECKED: list[bool] = []


def _check_docstrings_once() -> None:
    if _CHECKED:
        return
    _CHECKED.append(True)
    for name in missing_docstrings():
        log.warning("public name without a docstring: %s", name)
