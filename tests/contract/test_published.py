"""The published-item types: what the decorators make of a function, what each checks, how a
template matches a URI, and ``resource_changed`` reaching its watchers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.media import png
from toolplug import (
    Image,
    Message,
    Prompt,
    PromptArgument,
    PublishedContext,
    Resource,
    ResourceTemplate,
    prompt,
    resource,
    resource_changed,
)
from toolplug.contract._published import watch_resources


def test_prompt_decorator_reads_arguments_and_description_from_the_function() -> None:
    @prompt(arguments={"code": "The code to review"})
    def review(code: str, language: str = "python", context: Any = None) -> str:
        """Review a piece of code.

        Longer text that is not the description.
        """
        return f"{language}: {code} ({context.name})"

    assert isinstance(review, Prompt)
    assert review.name == "review"
    assert review.description == "Review a piece of code."
    # a parameter without a default is required; context is not an argument
    assert review.arguments == (
        PromptArgument("code", "The code to review", True),
        PromptArgument("language", "", False),
    )
    assert review.render({"code": "x = 1"}, PublishedContext("review")) == "python: x = 1 (review)"


def test_prompt_decorator_refuses_a_description_of_no_parameter() -> None:
    with pytest.raises(ValueError, match="no parameter named 'cod'"):
        prompt(description="d", arguments={"cod": "typo"})(lambda code: code)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # a name MCP clients cannot type
        (lambda: Prompt("two words", lambda a, c: "", "d"), "is not a prompt name"),
        # every prompt says what it is for (clients list the description)
        (lambda: Prompt("p", lambda a, c: "", " "), "description must not be empty"),
        # an argument twice
        (lambda: Prompt("p", lambda a, c: "", "d", arguments=(PromptArgument("a"),) * 2),
         "named twice"),
        # an argument name that is not one
        (lambda: PromptArgument("a b"), "is not an argument name"),
        # a role MCP does not have
        (lambda: Message("system", "hi"), "role is 'user' or 'assistant'"),  # type: ignore[arg-type]
        # content that is neither text nor a part
        (lambda: Message("user", 3), "is not text nor one of"),  # type: ignore[arg-type]
        # a URI without a scheme
        (lambda: Resource("today", "n", lambda c: ""), "is not a URI with a scheme"),
        # a URI with a variable is a template
        (lambda: Resource("x://{id}", "n", lambda c: ""), "is a ResourceTemplate"),
        # level 2 and up of RFC 6570 are not supported
        (lambda: ResourceTemplate("x://a{?q}", "n", lambda v, c: ""), "not a level-1 variable"),
        # a template without a variable is a resource
        (lambda: ResourceTemplate("x://a", "n", lambda v, c: ""), "has no {variable}"),
        # a variable twice
        (lambda: ResourceTemplate("x://{a}/{a}", "n", lambda v, c: ""), "a variable repeats"),
    ],
)
def test_each_item_checks_its_shape(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_a_message_carries_a_part() -> None:
    picture = Image(png(), "image/png")
    assert Message("assistant", picture).content is picture


def test_resource_decorator_makes_a_resource_or_a_template() -> None:
    @resource("notes://today", mime_type="text/plain")
    def today() -> str:
        """Today's note."""
        return "Buy milk."

    @resource("notes://{day}/{part}")
    def note(day: str, part: str, context: PublishedContext) -> str:
        return f"{day}/{part} at {context.name}"

    assert isinstance(today, Resource)
    assert (today.name, today.description) == ("today", "Today's note.")
    assert today.mime_type == "text/plain"
    assert today.read(PublishedContext("notes://today")) == "Buy milk."
    assert isinstance(note, ResourceTemplate)
    assert note.variables == ("day", "part")
    assert note.read({"day": "mon", "part": "a"}, PublishedContext("u")) == "mon/a at u"


def test_a_template_needs_a_parameter_per_variable() -> None:
    with pytest.raises(ValueError, match="takes no parameter 'id'"):
        resource("x://{id}")(lambda: "")


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("test://template/123/data", {"id": "123"}),
        # a value is percent-decoded
        ("test://template/a%20b/data", {"id": "a b"}),
        # one variable is one segment: no slash in it
        ("test://template/1/2/data", None),
        # an empty value is no match
        ("test://template//data", None),
        # the rest of the URI must match exactly
        ("test://template/123/data2", None),
        ("other://template/123/data", None),
    ],
)
def test_template_match(uri: str, expected: dict[str, str] | None) -> None:
    template = ResourceTemplate("test://template/{id}/data", "t", lambda v, c: "")
    assert template.match(uri) == expected


def test_resource_changed_reaches_every_watcher_from_any_thread() -> None:
    heard: list[str] = []

    def failing(uri: str) -> None:
        raise RuntimeError("a host's bug")

    stops = [watch_resources(failing), watch_resources(heard.append)]
    try:
        thing = Resource("notes://today", "today", lambda c: "")
        thing.changed()
        worker = threading.Thread(target=resource_changed, args=("notes://other",))
        worker.start()
        worker.join()
    finally:
        for stop in stops:
            stop()
    resource_changed("notes://after")  # nobody watches any more
    assert heard == ["notes://today", "notes://other"]
