"""Code mode against direct tool calling: model-visible tokens, round trips, and overhead.

    uv run --group bench python bench/code_mode.py --rounds 200

(a) Tokens. Seed 000's tools (search_documents, extract_section, compose_email, ...) run as
loopback stand-ins: a real HTTP server on 127.0.0.1 answers each with deterministic,
realistically sized data, and toolplug tools call it. Each of the seed's 13 chaining
patterns runs twice, side by side, through the same registry:

- directly: the model calls one tool per step (independent steps in one turn), and every
  result enters its context; the data a later step needs (a document's text for an
  email body) is written out again by the model as that step's arguments;
- as one run_code program: the model writes the program; only what it prints comes back.

Model-visible tokens = the tool definitions offered + what the model writes (calls or
the program) + what it reads back (results), counted with OpenAI's o200k_base encoding
(bpe-openai, which ships its vocabulary: tiktoken downloads it at first use, and this
machine has no internet). Round trips: the model turns that end in tool calls.

(b) Overhead: ``await registry.acall("run_code", ...)`` of a program making one call
(sandbox session, program start, the call, the result) against the same ``acall`` made
directly, interleaved, medians.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

import toolplug
from toolplug import Annotations, Tool, ToolContext, ToolMetadata, ToolResult, hookimpl

VOCABULARY = (
    "the quarter revenue growth customer engagement platform autopilot safety report data "
    "analysis market team product launch strategy results model training research findings "
    "performance metrics cost margin forecast region users adoption risk review design "
    "feature roadmap budget hiring partners supply chain battery software update latency "
    "survey quality support pricing retention churn pipeline operations compliance audit"
)
WORDS = VOCABULARY.split()


def prose(seed: str, words: int) -> str:
    """Deterministic English-like text of about ``words`` words."""
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    sentences, count = [], 0
    while count < words:
        length = rng.randint(8, 18)
        sentence = " ".join(rng.choice(WORDS) for _ in range(length))
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
        count += length
    return " ".join(sentences)


def slug(text: str) -> str:
    return "-".join(text.lower().split())[:40]


# -- the stand-ins: seed 000's tools, answered over loopback HTTP -------------------------


def standin(name: str, a: dict[str, Any]) -> dict[str, Any]:  # noqa: C901, PLR0911 - one branch per stand-in tool, a flat table
    if name == "search_documents":
        return {
            "doc_path": f"/Users/me/Documents/{slug(a['query'])}.pdf",
            "doc_title": a["query"].title(),
            "relevance_score": 0.87,
            "metadata": {"file_type": "pdf", "page_count": 12,
                         "last_modified": "2026-10-02T09:14:00"},
        }
    if name == "extract_section":
        text = prose(a["doc_path"] + a["section"], 600)
        return {"extracted_text": text, "page_numbers": [1, 2, 3],
                "word_count": len(text.split())}
    if name == "take_screenshot":
        stem = a["doc_path"].rsplit("/", 1)[-1].removesuffix(".pdf")
        return {"screenshot_paths": [f"/tmp/shots/{stem}-p{p}.png" for p in a["pages"]],
                "pages_captured": a["pages"]}
    if name == "compose_email":
        return {"status": "sent" if a.get("send") else "draft",
                "message_id": "<" + hashlib.md5(a["subject"].encode()).hexdigest() + "@mail>"}
    if name in ("create_keynote", "create_keynote_with_images"):
        result = {"keynote_path": f"/Users/me/Documents/{slug(a['title'])}.key",
                  "slide_count": 8}
        if name == "create_keynote_with_images":
            result["message"] = f"Created {len(a['image_paths'])} image slides"
        return result
    if name == "create_pages_doc":
        return {"pages_path": f"/Users/me/Documents/{slug(a['title'])}.pages", "page_count": 4}
    if name == "organize_files":
        files = [f"{w.title()} {i}.pdf" for i, w in enumerate(WORDS[:24])]
        moved, skipped = files[::2], files[1::2]
        return {
            "files_moved": moved, "files_skipped": skipped,
            "target_path": f"/Users/me/Documents/{a['target_folder']}",
            "total_evaluated": len(files),
            "reasoning": {f: ("matches " if f in moved else "unrelated to ") + a["category"]
                          for f in files},
            "message": f"Moved {len(moved)} of {len(files)} files",
        }
    if name == "synthesize_content":
        text = prose("synth" + a["topic"] + str(len(a["source_contents"])), 350)
        return {"synthesized_content": text, "key_points": text.split(". ")[:5],
                "word_count": len(text.split())}
    if name == "create_slide_deck_content":
        text = prose("slides" + a["title"], 250)
        slides = [{"title": f"Slide {i + 1}", "bullets": text.split(". ")[i * 2:i * 2 + 2]}
                  for i in range(6)]
        return {"slides": slides, "total_slides": 6, "formatted_content": text}
    if name == "create_detailed_report":
        text = prose("report" + a["title"], 500)
        return {"report_content": text, "executive_summary": text.split(". ")[0],
                "sections": [{"name": s, "word_count": 100}
                             for s in ("Summary", "Findings", "Analysis", "Outlook")],
                "total_word_count": len(text.split()), "report_style": "business"}
    if name == "create_meeting_notes":
        text = prose("notes" + a["meeting_title"], 300)
        return {"formatted_notes": text, "discussion_points": text.split(". ")[:4],
                "decisions": text.split(". ")[4:6],
                "action_items": [{"item": s, "owner": "Dana", "deadline": "2026-12-01"}
                                 for s in text.split(". ")[6:9]],
                "key_takeaways": text.split(". ")[9:11],
                "meeting_title": a["meeting_title"], "attendees": a.get("attendees") or []}
    if name == "google_search":
        return {"results": [
            {"title": f"{a['query'].title()}: result {i}",
             "url": f"https://news.example.org/{slug(a['query'])}/{i}",
             "snippet": prose(a["query"] + str(i), 30)} for i in range(1, 9)],
            "total_results": 8}
    if name == "navigate_to_url":
        return {"url": a["url"], "title": "Page at " + a["url"], "status_code": 200}
    if name == "extract_page_content":
        text = prose("page" + a["url"], 900)
        return {"url": a["url"], "title": "Page at " + a["url"], "content": text,
                "word_count": len(text.split())}
    raise KeyError(name)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = json.dumps(standin(self.path.strip("/"), json.loads(body))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


STR, INT, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
LS = {"type": "array", "items": STR}


def obj(required: Sequence[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


# name: (description, parameters, returns): the seed's definitions, as toolplug metadata
SEED_TOOLS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "search_documents": ("Find documents using semantic search.", obj(
        ["query"], query=STR), obj(["doc_path", "doc_title"], doc_path=STR, doc_title=STR,
                                 relevance_score={"type": "number"}, metadata={"type": "object"})),
    "extract_section": ("Extract specific content from a document.", obj(
        ["doc_path", "section"], doc_path=STR, section=STR), obj(
        ["extracted_text"], extracted_text=STR, page_numbers={"type": "array", "items": INT},
        word_count=INT)),
    "take_screenshot": ("Capture page images from a document.", obj(
        ["doc_path", "pages"], doc_path=STR, pages={"type": "array", "items": INT}), obj(
        ["screenshot_paths"], screenshot_paths=LS, pages_captured={"type": "array", "items": INT})),
    "compose_email": ("Create and optionally send an email via Mail.app.", obj(
        ["subject", "body"], subject=STR, body=STR, recipient=STR, attachments=LS, send=BOOL),
        obj(["status"], status={"enum": ["sent", "draft"]}, message_id=STR)),
    "create_keynote": ("Generate a Keynote presentation from content.", obj(
        ["title", "content"], title=STR, content=STR, output_path=STR),
        obj(["keynote_path"], keynote_path=STR, slide_count=INT)),
    "create_keynote_with_images": ("Create a Keynote presentation from images.", obj(
        ["title", "image_paths"], title=STR, image_paths=LS, output_path=STR),
        obj(["keynote_path"], keynote_path=STR, slide_count=INT, message=STR)),
    "create_pages_doc": ("Generate a Pages document from content.", obj(
        ["title", "content"], title=STR, content=STR, output_path=STR),
        obj(["pages_path"], pages_path=STR, page_count=INT)),
    "organize_files": ("Organize files into a folder by category, decided semantically.", obj(
        ["category", "target_folder"], category=STR, target_folder=STR, move_files=BOOL),
        obj(["files_moved"], files_moved=LS, files_skipped=LS, target_path=STR,
            total_evaluated=INT, reasoning={"type": "object"}, message=STR)),
    "synthesize_content": ("Synthesize information from several sources.", obj(
        ["source_contents", "topic"], source_contents=LS, topic=STR, synthesis_style={
            "enum": ["comprehensive", "concise", "comparative", "chronological"]}),
        obj(["synthesized_content"], synthesized_content=STR, key_points=LS, word_count=INT)),
    "create_slide_deck_content": ("Turn content into slide-ready text.", obj(
        ["content", "title"], content=STR, title=STR, num_slides=INT),
        obj(["formatted_content"], slides={"type": "array"}, total_slides=INT,
            formatted_content=STR)),
    "create_detailed_report": ("Write a detailed report from content.", obj(
        ["content", "title"], content=STR, title=STR, report_style={
            "enum": ["business", "academic", "technical", "executive"]}),
        obj(["report_content"], report_content=STR, executive_summary=STR, sections={
            "type": "array"}, total_word_count=INT, report_style=STR)),
    "create_meeting_notes": ("Format meeting notes with decisions and action items.", obj(
        ["content", "meeting_title"], content=STR, meeting_title=STR, attendees=LS),
        obj(["formatted_notes"], formatted_notes=STR, discussion_points=LS, decisions=LS,
            action_items={"type": "array"}, key_takeaways=LS, meeting_title=STR,
            attendees=LS)),
    "google_search": ("Search the web.", obj(["query"], query=STR, num_results=INT),
                      obj(["results"], results={"type": "array", "items": obj(
                          ["title", "url", "snippet"], title=STR, url=STR, snippet=STR)},
                          total_results=INT)),
    "navigate_to_url": ("Open a web page in the browser.", obj(["url"], url=STR),
                        obj(["url"], url=STR, title=STR, status_code=INT)),
    "extract_page_content": ("Extract the readable text of a web page.", obj(["url"], url=STR),
                             obj(["content"], url=STR, title=STR, content=STR, word_count=INT)),
}


def seed_tools(base: str, client: httpx.AsyncClient) -> list[type[Tool]]:
    made = []
    for name, (description, parameters, returns) in SEED_TOOLS.items():

        async def run(self: Tool, arguments: dict[str, Any], context: ToolContext,
                      _name: str = name) -> ToolResult:
            response = await client.post(f"{base}/{_name}", json=arguments)
            data = response.json()
            return ToolResult.success(json.dumps(data, separators=(",", ":")), data)

        meta = ToolMetadata(
            name=name, description=description, category="utility",
            parameters=parameters, returns=returns,
            annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        )
        made.append(type(name, (Tool,), {"metadata": meta, "run": run}))
    return made


class SeedPlugin:
    def __init__(self, tools: list[type[Tool]]) -> None:
        self.tools = tools

    @hookimpl
    def register_tools(self, register: Callable[[type[Tool]], None]) -> None:
        for tool in self.tools:
            register(tool)


# -- the 13 patterns, each as direct calls and as one program -----------------------------

Turn = Callable[..., Awaitable[list[dict[str, Any]]]]


async def p1(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "Tesla Autopilot safety report"}))
    await turn(("compose_email", {"subject": d["doc_title"], "body": "Attached.",
                                  "recipient": "me", "attachments": [d["doc_path"]],
                                  "send": True}))


async def p2(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "Q3 earnings report"}))
    (x,) = await turn(("extract_section", {"doc_path": d["doc_path"], "section": "summary"}))
    await turn(("compose_email", {"subject": "Q3 summary", "body": x["extracted_text"],
                                  "recipient": "me", "send": True}))


async def p3(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "guitar tab Bad Liar"}))
    (s,) = await turn(("take_screenshot", {"doc_path": d["doc_path"], "pages": [1, 2]}))
    await turn(("compose_email", {"subject": "Chorus", "body": "Screenshots attached.",
                                  "recipient": "me", "attachments": s["screenshot_paths"],
                                  "send": True}))


async def p4(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "AI research overview"}))
    (x,) = await turn(("extract_section", {"doc_path": d["doc_path"], "section": "key findings"}))
    await turn(("create_keynote", {"title": "AI Research", "content": x["extracted_text"]}))


async def p5(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "marketing strategy document"}))
    (x,) = await turn(("extract_section", {"doc_path": d["doc_path"], "section": "all"}))
    await turn(("create_pages_doc", {"title": "Marketing Strategy",
                                     "content": x["extracted_text"]}))


async def p6(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "product launch deck"}))
    (s,) = await turn(("take_screenshot", {"doc_path": d["doc_path"], "pages": [3, 5, 7]}))
    (k,) = await turn(("create_keynote_with_images", {"title": "Launch",
                                                       "image_paths": s["screenshot_paths"]}))
    await turn(("compose_email", {"subject": "Launch deck", "body": "Deck attached.",
                                  "recipient": "me", "attachments": [k["keynote_path"]],
                                  "send": True}))


async def p7(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "customer engagement study"}))
    (x,) = await turn(("extract_section", {"doc_path": d["doc_path"], "section": "summary"}))
    text = x["extracted_text"]
    await turn(("create_keynote", {"title": "Engagement", "content": text}),
               ("create_pages_doc", {"title": "Engagement", "content": text}),
               ("compose_email", {"subject": "Engagement summary", "body": text,
                                  "recipient": "me", "send": True}))


async def p8(turn: Turn) -> None:
    await turn(("organize_files", {"category": "music notes", "target_folder": "Music"}))


async def research(turn: Turn, queries: list[str]) -> list[str]:
    docs = await turn(*[("search_documents", {"query": q}) for q in queries])
    parts = await turn(*[("extract_section", {"doc_path": d["doc_path"], "section": "all"})
                         for d in docs])
    return [p["extracted_text"] for p in parts]


async def p9(turn: Turn) -> None:
    texts = await research(turn, ["battery supply report", "battery cost study",
                                  "battery market forecast"])
    (s,) = await turn(("synthesize_content", {"source_contents": texts, "topic": "batteries"}))
    (r,) = await turn(("create_detailed_report", {"content": s["synthesized_content"],
                                                   "title": "Battery outlook"}))
    await turn(("create_pages_doc", {"title": "Battery outlook",
                                     "content": r["report_content"]}))


async def p10(turn: Turn) -> None:
    texts = await research(turn, ["pricing review", "churn analysis"])
    (s,) = await turn(("synthesize_content", {"source_contents": texts, "topic": "pricing"}))
    (d,) = await turn(("create_slide_deck_content", {"content": s["synthesized_content"],
                                                      "title": "Pricing"}))
    await turn(("create_keynote", {"title": "Pricing", "content": d["formatted_content"]}))


async def p11(turn: Turn) -> None:
    (g,) = await turn(("google_search", {"query": "solid state battery news"}))
    urls = [r["url"] for r in g["results"][:3]]
    await turn(*[("navigate_to_url", {"url": u}) for u in urls])
    pages = await turn(*[("extract_page_content", {"url": u}) for u in urls])
    (s,) = await turn(("synthesize_content", {"source_contents": [p["content"] for p in pages],
                                              "topic": "solid state batteries"}))
    (r,) = await turn(("create_detailed_report", {"content": s["synthesized_content"],
                                                   "title": "Solid state batteries"}))
    await turn(("create_pages_doc", {"title": "Solid state batteries",
                                     "content": r["report_content"]}))


async def p12(turn: Turn) -> None:
    (d,) = await turn(("search_documents", {"query": "weekly sync transcript"}))
    (x,) = await turn(("extract_section", {"doc_path": d["doc_path"], "section": "all"}))
    (n,) = await turn(("create_meeting_notes", {"content": x["extracted_text"],
                                                "meeting_title": "Weekly sync",
                                                "attendees": ["Dana", "Lee"]}))
    await turn(("compose_email", {"subject": "Weekly sync notes",
                                  "body": n["formatted_notes"],
                                  "recipient": "team@example.org", "send": True}))


async def p13(turn: Turn) -> None:
    d, g = await turn(("search_documents", {"query": "autonomy roadmap"}),
                      ("google_search", {"query": "autonomy regulation 2026"}))
    x, p = await turn(("extract_section", {"doc_path": d["doc_path"], "section": "all"}),
                      ("extract_page_content", {"url": g["results"][0]["url"]}))
    (s,) = await turn(("synthesize_content", {"source_contents": [x["extracted_text"],
                                                                  p["content"]],
                                              "topic": "autonomy", "synthesis_style":
                                              "comparative"}))
    (c,) = await turn(("create_slide_deck_content", {"content": s["synthesized_content"],
                                                      "title": "Autonomy"}))
    await turn(("create_keynote", {"title": "Autonomy", "content": c["formatted_content"]}))


PROGRAMS = {
    "1 search -> email": '''
d = await search_documents("Tesla Autopilot safety report")
r = await compose_email(d["doc_title"], "Attached.", recipient="me",
                        attachments=[d["doc_path"]], send=True)
print(r["status"], d["doc_path"])
''',
    "2 search -> extract -> email": '''
d = await search_documents("Q3 earnings report")
x = await extract_section(d["doc_path"], "summary")
r = await compose_email("Q3 summary", x["extracted_text"], recipient="me", send=True)
print(r["status"], x["word_count"], "words")
''',
    "3 search -> screenshot -> email": '''
d = await search_documents("guitar tab Bad Liar")
s = await take_screenshot(d["doc_path"], [1, 2])
r = await compose_email("Chorus", "Screenshots attached.", recipient="me",
                        attachments=s["screenshot_paths"], send=True)
print(r["status"], len(s["screenshot_paths"]), "screenshots")
''',
    "4 search -> extract -> keynote": '''
d = await search_documents("AI research overview")
x = await extract_section(d["doc_path"], "key findings")
k = await create_keynote("AI Research", x["extracted_text"])
print(k["keynote_path"], k["slide_count"])
''',
    "5 search -> extract -> pages": '''
d = await search_documents("marketing strategy document")
x = await extract_section(d["doc_path"], "all")
p = await create_pages_doc("Marketing Strategy", x["extracted_text"])
print(p["pages_path"])
''',
    "6 screenshot -> keynote -> email": '''
d = await search_documents("product launch deck")
s = await take_screenshot(d["doc_path"], [3, 5, 7])
k = await create_keynote_with_images("Launch", s["screenshot_paths"])
r = await compose_email("Launch deck", "Deck attached.", recipient="me",
                        attachments=[k["keynote_path"]], send=True)
print(r["status"], k["keynote_path"])
''',
    "7 multi-output": '''
import asyncio
d = await search_documents("customer engagement study")
text = (await extract_section(d["doc_path"], "summary"))["extracted_text"]
k, p, e = await asyncio.gather(
    create_keynote("Engagement", text),
    create_pages_doc("Engagement", text),
    compose_email("Engagement summary", text, recipient="me", send=True),
)
print(k["keynote_path"], p["pages_path"], e["status"])
''',
    "8 file organization": '''
r = await organize_files("music notes", "Music")
print(r["message"], r["target_path"])
''',
    "9 multi-source report": '''
import asyncio
qs = ["battery supply report", "battery cost study", "battery market forecast"]
docs = await asyncio.gather(*[search_documents(q) for q in qs])
parts = await asyncio.gather(*[extract_section(d["doc_path"], "all") for d in docs])
s = await synthesize_content([p["extracted_text"] for p in parts], "batteries")
r = await create_detailed_report(s["synthesized_content"], "Battery outlook")
p = await create_pages_doc("Battery outlook", r["report_content"])
print(p["pages_path"], r["total_word_count"], "words")
''',
    "10 presentation from sources": '''
import asyncio
docs = await asyncio.gather(search_documents("pricing review"), search_documents("churn analysis"))
parts = await asyncio.gather(*[extract_section(d["doc_path"], "all") for d in docs])
s = await synthesize_content([p["extracted_text"] for p in parts], "pricing")
deck = await create_slide_deck_content(s["synthesized_content"], "Pricing")
k = await create_keynote("Pricing", deck["formatted_content"])
print(k["keynote_path"], deck["total_slides"], "slides")
''',
    "11 web research -> report": '''
import asyncio
g = await google_search("solid state battery news")
urls = [r["url"] for r in g["results"][:3]]
await asyncio.gather(*[navigate_to_url(u) for u in urls])
pages = await asyncio.gather(*[extract_page_content(u) for u in urls])
s = await synthesize_content([p["content"] for p in pages], "solid state batteries")
r = await create_detailed_report(s["synthesized_content"], "Solid state batteries")
p = await create_pages_doc("Solid state batteries", r["report_content"])
print(p["pages_path"], urls)
''',
    "12 meeting notes": '''
d = await search_documents("weekly sync transcript")
x = await extract_section(d["doc_path"], "all")
n = await create_meeting_notes(x["extracted_text"], "Weekly sync", attendees=["Dana", "Lee"])
r = await compose_email("Weekly sync notes", n["formatted_notes"],
                        recipient="team@example.org", send=True)
print(r["status"], len(n["action_items"]), "action items")
''',
    "13 hybrid research": '''
import asyncio
d, g = await asyncio.gather(search_documents("autonomy roadmap"),
                            google_search("autonomy regulation 2026"))
x, p = await asyncio.gather(extract_section(d["doc_path"], "all"),
                            extract_page_content(g["results"][0]["url"]))
s = await synthesize_content([x["extracted_text"], p["content"]], "autonomy",
                             synthesis_style="comparative")
c = await create_slide_deck_content(s["synthesized_content"], "Autonomy")
k = await create_keynote("Autonomy", c["formatted_content"])
print(k["keynote_path"])
''',
}
DIRECT = [p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13]


@dataclass
class Count:
    written: int = 0
    read: int = 0
    round_trips: int = 0
    calls: int = 0
    turns: list[int] = field(default_factory=list)
    """Tokens each turn adds to the context (its calls and their results)."""

    def processed(self, definitions: int) -> int:
        """Input tokens the model reads over the conversation: each turn, and the final
        answer, reads the definitions and everything before it again."""
        total, context = 0, definitions
        for added in [*self.turns, 0]:
            total += context
            context += added
        return total


async def direct(registry: toolplug.Registry, pattern: Any, tokens: Callable[[str], int]) -> Count:
    count = Count()

    async def turn(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
        count.round_trips += 1
        count.calls += len(calls)
        before = count.written + count.read
        for name, arguments in calls:  # what the model writes: each call with its arguments
            count.written += tokens(json.dumps({"name": name, "arguments": arguments}))
        results = await asyncio.gather(*[registry.acall(n, a) for n, a in calls])
        for result in results:
            assert result.error is None, result.for_model()
            count.read += tokens(result.for_model())
        count.turns.append(count.written + count.read - before)
        return [r.data for r in results]

    await pattern(turn)
    return count


async def program(registry: toolplug.Registry, code: str, tokens: Callable[[str], int]) -> Count:
    result = await registry.acall("run_code", {"code": code})
    assert result.error is None, result.for_model()
    written = tokens(json.dumps({"name": "run_code", "arguments": {"code": code}}))
    read = tokens(result.for_model())
    return Count(written, read, 1, result.data["calls"], [written + read])


class Lookup(Tool):
    """A tool that answers at once: the overhead measured is toolplug's and the sandbox's."""

    metadata = ToolMetadata(
        name="lookup", description="Look a key up.", category="utility",
        parameters=obj(["key"], key=STR), returns=obj(["value"], value=STR),
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("v", {"value": "v"})


async def overhead(
    registry: toolplug.Registry, tool: str, arguments: dict[str, Any], rounds: int
) -> tuple[float, float]:
    """Medians in ms: the call made directly, and a program making the same call."""
    direct_times, code_times = [], []
    code = {"code": f"await {tool}(**{arguments!r})"}
    for _ in range(20):  # warm: worker started, tools imported, connections open
        await registry.acall(tool, arguments)
        await registry.acall("run_code", code)
    for _ in range(rounds):
        start = time.perf_counter()
        await registry.acall(tool, arguments)
        direct_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = await registry.acall("run_code", code)
        code_times.append(time.perf_counter() - start)
        assert result.error is None, result.for_model()
    return statistics.median(direct_times) * 1e3, statistics.median(code_times) * 1e3


async def main(rounds: int) -> None:
    import bpe_openai

    encoding = bpe_openai.get_encoding("o200k_base")

    def tokens(text: str) -> int:
        return len(encoding.encode(text))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    async with httpx.AsyncClient() as client:
        # A program mails an attachment path it found with search_documents, an unlabelled
        # tool (the cautious default: untrusted output), so the flow guard asks; the person
        # running the bench approves what the programs do. The guard's cost is bench/guard.py's.
        registry = toolplug.load(
            {"code": {"enabled": True, "max_calls": 100}},
            env={"TOOLPLUG_PLUGINS": ""},
            plugins=[("seed-000", SeedPlugin(seed_tools(base, client)))],
            approver=lambda request: True,
        )
        exported = toolplug.export_tools(registry, "anthropic")
        tools_direct = [t for t in exported if t["name"] != "run_code"]
        tools_code = [t for t in exported if t["name"] == "run_code"]
        defs_direct = tokens(json.dumps(tools_direct))
        defs_code = tokens(json.dumps(tools_code))
        print(f"tool definitions: direct {defs_direct} tokens (15 tools), "
              f"code mode {defs_code} tokens (run_code with the 15 stubs)\n")
        print(f"{'pattern':32} {'direct':>7} {'code':>6} {'saved':>6} {'trips':>5} "
              f"{'code':>4} {'calls':>5}")
        directs, codes = [], []
        for (label, code), pattern in zip(PROGRAMS.items(), DIRECT, strict=True):
            d = await direct(registry, pattern, tokens)
            c = await program(registry, code, tokens)
            assert c.calls == d.calls, (label, c.calls, d.calls)
            directs.append(d)
            codes.append(c)
            dt, ct = d.written + d.read, c.written + c.read
            print(f"{label:32} {dt:7} {ct:6} {1 - ct / dt:6.0%} {d.round_trips:5} "
                  f"{c.round_trips:4} {d.calls:5}")

        def line(label: str, direct_total: int, code_total: int, trips: str = "") -> None:
            saved = 1 - code_total / direct_total
            print(f"{label:32} {direct_total:7} {code_total:6} {saved:6.0%} {trips}")

        line("all 13: calls and results", sum(d.written + d.read for d in directs),
             sum(c.written + c.read for c in codes),
             f"{sum(d.round_trips for d in directs):5} {sum(c.round_trips for c in codes):4}")
        line("all 13: + definitions, once", sum(d.written + d.read + defs_direct
                                               for d in directs),
             sum(c.written + c.read + defs_code for c in codes))
        line("all 13: input read, every turn", sum(d.processed(defs_direct) for d in directs),
             sum(c.processed(defs_code) for c in codes))
        print(f"\noverhead, {rounds} interleaved rounds, medians:")
        fast, slow = await overhead(registry, "search_documents", {"query": "x"}, rounds)
        print(f"  a loopback HTTP stand-in: acall {fast:.2f} ms, run_code making the same "
              f"call {slow:.2f} ms, +{slow - fast:.2f} ms")
        instant = toolplug.load(
            {"code": {"enabled": True}}, env={"TOOLPLUG_PLUGINS": ""},
            plugins=[("instant", SeedPlugin([Lookup]))],
        )
        fast, slow = await overhead(instant, "lookup", {"key": "k"}, rounds)
        print(f"  a tool that answers at once: acall {fast:.3f} ms, run_code making the same "
              f"call {slow:.2f} ms, +{slow - fast:.2f} ms")
        instant.close()
        registry.close()
    server.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    asyncio.run(main(parser.parse_args().rounds))
