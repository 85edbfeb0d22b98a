"""The text helpers: HTML to plain text, shortening, authors, dates."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolplug_rss_feed._parse import _author, feed_links, iso_utc, shorten, strip_html


@pytest.mark.parametrize(
    ("fragment", "text"),
    [
        ("<p>one</p><p>two</p>", "one two"),  # blocks separate words
        ("a<br>b<br/>c", "a b c"),  # line breaks too
        ("<b>bold</b>er", "bolder"),  # inline elements do not
        ("Fish &amp; chips&nbsp;&#8212; &lt;tasty&gt;", "Fish & chips — <tasty>"),  # entities
        ("<script>alert('x')</script>Visible", "Visible"),  # scripts are not text
        ("<style>p { color: red }</style>Shown", "Shown"),  # nor styles
        ("  spaced \n\t out  ", "spaced out"),  # white space collapsed
        ("<ul><li>one</li><li>two</li></ul>", "one two"),
        ("<p>unclosed <i>tags", "unclosed tags"),  # broken HTML still gives its text
        ("no markup at all", "no markup at all"),
        ("", ""),
    ],
)
def test_strip_html(fragment: str, text: str) -> None:
    assert strip_html(fragment) == text


@given(st.text(), st.integers(min_value=0, max_value=300))
def test_shorten_never_exceeds_the_limit(text: str, limit: int) -> None:
    short = shorten(text, limit)
    assert len(short) <= limit
    if len(text) <= limit:
        assert short == text
    else:
        assert short == "" if limit == 0 else short.endswith("…")


@given(st.text())
def test_strip_html_gives_one_trimmed_line(fragment: str) -> None:
    text = strip_html(fragment)
    assert text == text.strip()
    assert "  " not in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("author", "name"),
    [
        ("ana@garden.example (Ana Lima)", "Ana Lima"),  # RSS 2.0's form, long TLD
        ("Chen Wei (chen@releases.example)", "Chen Wei"),  # feedparser's form for Atom
        ("Ana Lima <ana@example.org>", "Ana Lima"),
        ("Ana Lima", "Ana Lima"),
        ("ana@example.org", "ana@example.org"),  # an address alone is all there is
        ("", None),
    ],
)
def test_author_names(author: str, name: str | None) -> None:
    assert _author({"author": author}) == name


def test_iso_utc() -> None:
    assert iso_utc(time.struct_time((2024, 1, 2, 8, 0, 0, 1, 2, 0))) == "2024-01-02T08:00:00Z"
    assert iso_utc(None) is None
    assert iso_utc((2024, 13, 40, 0, 0, 0)) is None  # not a date


def test_feed_links_are_absolute_and_only_feeds() -> None:
    page = b"""<html><head>
    <link rel="alternate" type="application/atom+xml" href="/atom.xml">
    <link rel="alternate" type="application/rss+xml" href="https://cdn.example/rss">
    <link rel="alternate" hreflang="de" href="/de/">
    <link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
    </head></html>"""
    assert feed_links(page, "https://site.example/blog/") == [
        "https://site.example/atom.xml",
        "https://cdn.example/rss",
    ]
