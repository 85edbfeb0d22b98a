"""The flow guard: whether a call's sinks carry what entered its conversation.

Before a call runs, ``FlowGuard.check`` looks at

1. the ``[policies]`` rules of the tool (JSON Schema per argument; allow, ask, deny);
2. the flow rule: a sink argument whose value carries text from an untrusted output of
   this conversation that is not in the user's request asks (for a call that only reads,
   such as a fetch's GET, once the conversation has also read something private).
   "Carries" means, both sides normalised (``_values.canon``: decoded, NFKC, invisible
   characters removed, look-alike letters mapped, case folded): a *token* of the value
   (no spaces, surrounding punctuation stripped) of ``min_token_chars`` or more that is
   not only letters (a URL, an address, an account number, a path), or any token with
   ``@`` or ``://``, found
   inside the output, or a piece of one (an address of a list, a URL's path segment or
   query value, a path resolved), or a URL whose host and path prefix the output names;
   or ``min_phrase_words`` consecutive words found in it. Inside a
   plan or a program the tracking is exact as well: a value passed by ``$stepN``
   reference from an untrusted step, or equal to a value the program received from an
   untrusted call;
3. the trifecta rule: once the conversation has read untrusted content, a sink of a tool
   that leaves the machine or changes something (not read-only, or open-world) asks when
   its value carries private data (``trifecta = "private"``), or always
   (``"always"``); except a destination (``Trust.destinations``) whose every string is,
   whole, a token of trusted private output: it goes where the user's own data points.

A ref (``Trust.refs``: a sink that names something the service holds) whose value, a
string or a list of strings, is each a whole string of an earlier result's ``data`` (case
folded, stripped) is a choice among what was listed: neither rule reads it. Anything else
in a ref is read as in any sink, and asks too when an untrusted output names it, at any
length, and no listing and no trusted text did (``flow.ref``).

A conversation opened with the effects the user's request asked for
(``Conversation.effects``: tools or categories, ``toolplug.trust._effects``) asks, once
untrusted content entered, about a call with an effect outside them (the effects rule).
An ask names every argument that carries outside data (``details["arguments"]``), and
each decision is kept (``decided``: ``toolplug.trust._decisions``).

The pipeline (``toolplug.engine._pipeline``) turns an ``ask`` into the approval it already
knows and a ``deny`` into a refusal. A check searches what was read (the records of
``_conversation``), once per token and run of words of a sink value (0.17 ms a MB): in a
conversation that read that much, a check whose searches are long (``FlowGuard.long``) is
awaited in a worker thread (``FlowGuard.check_off_loop``), with the same verdict.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from toolplug.contract._metadata import Trust
from toolplug.contract._tool import Tool
from toolplug.utilities._bridge import loop_running, offload_pool
from toolplug.utilities._validation import compile_schema

if TYPE_CHECKING:
    from toolplug.contract._metadata import Annotations, ToolMetadata
    from toolplug.contract._settings import ToolSettings
    from toolplug.trust._settings import GuardSettings, PolicyRule

from toolplug.trust._conversation import (
    CURRENT,
    DERIVED,
    OFF_LOOP_CHARS,
    Conversation,
    Record,
)
from toolplug.trust._decisions import Decision, carried_of, log, trace
from toolplug.trust._text import (
    NO_NAMES,
    SEARCH_CHARS,
    SLICE_CHARS,
    quoted,
    sliced_words,
    strings_in,
)
from toolplug.trust._values import plain, policy_forms

__all__ = ["Catalog", "FlowGuard", "GuardConfig", "Verdict"]

_DEBUG: Final = logging.DEBUG

_UNKNOWN: Final = object()


_DECLARED: Final = object()
"""A tool's declared annotations hold for every call (it does not refine them)."""


_PLAIN_HINTS: Final = Tool.annotations_for.__func__  # type: ignore[attr-defined]


_VALUE_CHARS_PER_SEARCH: Final = 6
"""The characters of a sink value counted as one search (a word and the space after it:
each starts a token, a run of words, or both)."""


@dataclass(frozen=True)
class Verdict:
    """What the guard or a policy decided about one call."""

    action: Literal["ask", "deny"]
    reason: str
    """Why, for the person asked (``ApprovalRequest.reason``) and the model."""
    details: Mapping[str, Any]
    """The rule, the argument and the source call, for hosts."""


class GuardConfig(Protocol):
    """What the guard reads of a configuration (``toolplug.Config`` is one)."""

    @property
    def guard(self) -> GuardSettings:
        """The ``[guard]`` table."""

    @property
    def policies(self) -> Mapping[str, tuple[PolicyRule, ...]]:
        """The ``[[policies.TOOL]]`` rules per tool."""

    def tool_settings(self, tool: str) -> ToolSettings:
        """The call settings of ``[tools.TOOL]`` (its ``trust`` overlay)."""


class Catalog(Protocol):
    """What the guard reads of the tools it judges: their labels, their classes (for
    ``annotations_for``) and the configuration. ``toolplug.Registry`` is one; declaring it
    here keeps trust below the registry, which names the guard's ``Conversation``."""

    @property
    def tools(self) -> Mapping[str, Any]:
        """Each tool's registration by name (its ``cls``)."""

    @property
    def config(self) -> GuardConfig:
        """The configuration the tools were registered with."""

    def labels(self, name: str) -> Trust:
        """The trust labels in force for ``name``."""


def _kind(labels: Trust, sink: str | None) -> str | None:
    """What the tool declares ``sink``'s value is (``Trust.url_sinks``, ``address_sinks``,
    ``path_sinks``): ``url``, ``address``, ``path``; None when it declares none (read
    every way)."""
    if sink is None:
        return None
    if sink in labels.url_sinks:
        return "url"
    if sink in labels.address_sinks:
        return "address"
    if sink in labels.path_sinks:
        return "path"
    return None


def _rule_matches(
    rule: PolicyRule, matches: Callable[[Any], bool], value: Any, kind: str | None
) -> bool:
    """Whether ``rule`` matches ``value`` as it reads (``_values.policy_forms``: each address
    of a list, a path resolved, a URL's real host): an ``allow`` only when every form
    matches, an ``ask`` or a ``deny`` when the value or any form does."""
    forms = policy_forms(value, kind)
    if not forms:
        return matches(value)
    if rule.action == "allow":
        return all(matches(form) for form in forms)
    return matches(value) or any(matches(form) for form in forms)


class FlowGuard:
    """The flow guard and the ``[policies]`` rules of one registry."""

    def __init__(self, registry: Catalog) -> None:
        self.registry = registry
        config = registry.config
        self.settings = config.guard
        self._rules: dict[str, tuple[tuple[PolicyRule, Callable[[Any], bool]], ...]] = {
            tool: tuple((rule, compile_schema(rule.json_schema)) for rule in rules)
            for tool, rules in config.policies.items()
        }
        self._labels: dict[str, Trust] = {}
        # each tool's sinks as the flow rule reads them, (sink, kind, is a ref), read once
        self._sinks: dict[str, tuple[tuple[str, str | None, bool], ...]] = {}
        self._lists: bool | None = None
        self._refines: dict[str, Any] = {}

    def labels(self, name: str) -> Trust:
        """``Registry.labels(name)``, read once per tool."""
        found = self._labels.get(name)
        if found is None:
            found = self._labels[name] = self.registry.labels(name)
        return found

    @property
    def lists(self) -> bool:
        """Whether any tool of the registry has refs: only then does a conversation keep
        what results list (``Conversation.record``'s ``listing``)."""
        found = self._lists
        if found is None:
            registry = self.registry
            found = self._lists = any(registry.labels(name).refs for name in registry.tools)
        return found

    def of_result(self, name: str, own: Trust | None) -> Trust:
        """The labels of one result of ``name``: the tool's (``labels``), with the
        ``output`` and ``private`` labels the tool gave this result (``ToolResult.trust``:
        what this result holds, such as messages all written inside the organisation) in
        their place. A result that says it is untrusted or private is believed; one that
        says it is trusted or not private is not where the configuration's ``trust`` table
        for the tool sets that label: the operator's word stands over the tool's. A result
        cannot change its tool's sinks."""
        labels = self._labels.get(name) or self.labels(name)
        if own is None or own is labels or (
            own.output == labels.output and own.private == labels.private
        ):
            return labels
        overlay = None
        if (own.output == "trusted" and labels.untrusted) or (not own.private and labels.private):
            overlay = self.registry.config.tool_settings(name).trust
        output = own.output
        if output == "trusted" and overlay is not None and overlay.output is not None:
            output = labels.output
        private = own.private
        if not private and overlay is not None and overlay.private is not None:
            private = labels.private
        if output == labels.output and private == labels.private:
            return labels
        return labels.model_copy(update={"output": output, "private": private})

    def active(self, tool: str) -> bool:
        """Whether ``check`` may have something to say about a call of ``tool`` here."""
        return tool in self._rules or (self.settings.enabled and CURRENT.get() is not None)

    def check(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> Verdict | None:
        """The policies' and the flow guard's verdict on a call; None lets it go on."""
        asked: Verdict | None = None
        rules = self._rules.get(name)
        if rules:
            asked = self._policy(name, rules, arguments)
            if asked is not None and asked.action == "deny":
                return asked
        conversation = CURRENT.get()
        if conversation is None or not self.settings.enabled:
            return asked
        flow = self._flow(name, arguments, metadata, conversation)
        return flow if flow is not None else asked

    def long(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether a check of this call here would hold an event loop running in this thread
        long enough to make it in a worker thread: the current conversation read
        ``OFF_LOOP_CHARS`` characters or more of untrusted or private text
        (``Conversation.read_chars``, recorded here or absorbed from a replica), and its
        searches for the sink values (one a word, about) would go through ``SEARCH_CHARS``
        or more. The caller then awaits ``check_off_loop`` instead of ``check``."""
        conversation = CURRENT.get()
        if conversation is None:
            return False
        read = conversation._root.read_chars
        if read < OFF_LOOP_CHARS or not self.settings.enabled:  # the common case
            return False
        if not loop_running():
            return False
        chars = 0
        for sink in self.labels(name).sinks:
            value = arguments.get(sink)
            if value is not None:
                for text in strings_in(value):
                    chars += len(text)
        return read * (chars // _VALUE_CHARS_PER_SEARCH + 1) >= SEARCH_CHARS

    def check_off_loop(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> asyncio.Future[Verdict | None]:
        """``check``, in a worker thread (``offload_pool``'s), for a call whose check would search
        long text (``long``): each token and run of ``min_phrase_words`` words of a sink value
        is one search of the text read, 0.17 ms a MB, which would hold the event loop; in the
        thread they hand the GIL back a slice at a time. The same verdict: it runs in a copy of
        this context (the current conversation, the arguments a plan passed by reference),
        and the words of a long source not listed yet (absorbed from a replica, recorded
        where no loop ran) are listed a slice at a time first."""
        work = functools.partial(self._check_sliced, name, arguments, metadata)
        context = contextvars.copy_context()
        return asyncio.get_running_loop().run_in_executor(offload_pool(), context.run, work)

    def _check_sliced(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> Verdict | None:
        """``check_off_loop``'s work, in the worker thread."""
        conversation = CURRENT.get()
        if conversation is not None:
            root = conversation._root
            for source in (*root._untrusted, *root._private):
                if source._words is None and len(source.text) >= SLICE_CHARS:
                    source._words = sliced_words(source.text)
        return self.check(name, arguments, metadata)

    # -- policies --------------------------------------------------------------------

    def _policy(
        self,
        name: str,
        rules: tuple[tuple[PolicyRule, Callable[[Any], bool]], ...],
        arguments: Mapping[str, Any],
    ) -> Verdict | None:
        for index, (rule, matches) in enumerate(rules):
            if rule.argument is None:
                value: Any = dict(arguments)
            elif rule.argument in arguments:
                value = arguments[rule.argument]
            else:
                continue
            if plain(value):  # most values: nothing to read but the value
                if not matches(value):
                    continue
            elif not _rule_matches(rule, matches, value, _kind(self.labels(name), rule.argument)):
                continue
            if rule.action == "allow":
                return None
            where = f"policies.{name}[{index}]"
            about = f" on {rule.argument}" if rule.argument else ""
            because = f": {rule.reason}" if rule.reason else ""
            verb = "refuses" if rule.action == "deny" else "asks about"
            return Verdict(
                rule.action,
                f"the policy {where}{about} {verb} this call{because}",
                {
                    "rule": where,
                    "policy": rule.action,
                    "argument": rule.argument,
                    "reason": rule.reason,
                },
            )
        return None

    # -- the flow guard --------------------------------------------------------------

    def _flow(  # noqa: C901, PLR0912 - the guard's decision steps in the order docs/security.md gives
        self,
        name: str,
        arguments: Mapping[str, Any],
        metadata: ToolMetadata | None,
        conversation: Conversation,
    ) -> Verdict | None:
        # the outermost's: a plan's or a program's conversation, opened after the page was
        # read, has read nothing itself
        root = conversation._root
        if not root.untrusted:
            return None
        # what is the same for every call of the tool, read once: its labels, its sinks
        # with their kinds, whether its declared annotations hold for every call
        labels = self._labels.get(name) or self.labels(name)
        settings = self.settings
        derived = DERIVED.get()
        refines = self._refines.get(name, _UNKNOWN) if metadata is not None else None
        if refines is _DECLARED:
            hints: Annotations | None = metadata.annotations  # type: ignore[union-attr]
        elif refines is None:  # no annotations declared (or no metadata): none hold
            hints = None
        else:
            hints = self._hints(name, arguments, metadata)
        reads = hints is not None and hints.read_only
        # A call that only reads changes nothing: what it sends out can harm only by
        # carrying something private, so with nothing private read, following a link
        # found in a page is no flow to ask about.
        planned = self._sinks.get(name)
        if planned is None:
            planned = self._sinks[name] = tuple(
                (sink, _kind(labels, sink), sink in labels.refs) for sink in labels.sinks
            )
        sinks = () if reads and not root.private else planned
        # a ref naming, whole, what a result listed chooses among what exists: no rule reads it
        chosen = (
            {ref for ref in labels.refs if conversation._lists(arguments.get(ref))}
            if labels.refs
            else NO_NAMES
        )
        hits: list[tuple[str, Record | None, str, str]] | None = None  # every one that carries
        for sink, kind, ref in sinks:
            value = arguments.get(sink)
            if value is None or value == "" or (type(value) in (list, dict) and not value):
                continue
            if chosen and sink in chosen:
                continue
            if derived is not None and sink in derived:
                hits = hits or []
                hits.append((sink, derived[sink], "", "reference"))
                continue
            hit = conversation._carried(value, settings, kind=kind)
            if hit is None and conversation.exact:
                number = conversation._exact_numbers(value)
                if number is not None:
                    hit = (number[0], str(number[1]), "exact")
            if hit is None and ref:  # named by the attacker alone, any length
                named = conversation._named_outside(value)
                if named is not None:
                    hit = (named[0], named[1], "ref")
            if hit is not None:
                hits = hits or []
                hits.append((sink, *hit))
        if hits:
            return self._tainted_all(name, hits)
        if root._effects is not None or conversation._bounds:
            outside = self._outside_effects(name, labels, hints, metadata, conversation)
            if outside is not None:
                return outside
        if settings.trifecta == "off" or not root.private:
            return None
        if reads and hints is not None and not hints.open_world:
            return None  # stays on this machine and changes nothing
        hits = []
        destinations = labels.destinations
        for sink in labels.sinks:
            value = arguments.get(sink)
            if value is None or value in ("", [], {}) or (chosen and sink in chosen):
                continue
            if destinations and sink in destinations and conversation._points(value):
                continue  # where the user's own data points: it reaches only that place
            if settings.trifecta == "always":
                hits.append((sink, None, "", "trifecta"))
                continue
            hit = conversation._carried(value, settings, untrusted=False, kind=_kind(labels, sink))
            if hit is not None:
                hits.append((sink, hit[0], hit[1], "trifecta"))
        return self._trifecta_all(name, hits) if hits else None

    def _hints(
        self, name: str, arguments: Mapping[str, Any], metadata: ToolMetadata | None
    ) -> Annotations | None:
        """The annotations that hold for this call (``Tool.annotations_for``); None for a
        tool that declares none (treated as changing the world)."""
        if metadata is None:
            return None
        refines = self._refines.get(name, _UNKNOWN)
        if refines is _UNKNOWN:  # read once per tool: it is the same for every call
            refines = self._refines[name] = self._refinement(name, metadata)
        if refines is None:
            return None
        if refines is _DECLARED:
            return metadata.annotations
        try:
            return refines(arguments)  # type: ignore[no-any-return]
        except Exception:  # arguments the tool cannot read: what it declares
            return metadata.annotations

    def _refinement(self, name: str, metadata: ToolMetadata) -> Any:
        """None: the tool declares no annotations; ``_DECLARED``: its declared ones hold for
        every call; else its ``annotations_for``, which refines them per call."""
        if "annotations" not in metadata.model_fields_set:
            return None
        tool = self.registry.tools.get(name)
        if tool is None or getattr(tool.cls.annotations_for, "__func__", None) is _PLAIN_HINTS:
            return _DECLARED
        return tool.cls.annotations_for

    def _tainted(self, tool: str, sink: str, source: Record, text: str, rule: str) -> Verdict:
        what = self._what(rule, text)
        reason = (
            f"this session read untrusted content: {tool}'s {sink} carries {what} from "
            f"{source.describe()}, whose output anyone outside could have written, and not "
            f"from the user's request (flow rule: {self._rule(rule)})"
        )
        return Verdict(
            "ask",
            reason,
            {
                "rule": f"flow.{rule}",
                "argument": sink,
                "fragment": text,
                "source": source.to_dict(),
            },
        )

    def _rule(self, rule: str) -> str:
        settings = self.settings
        return {
            "token": f"a token of {settings.min_token_chars}+ characters, not only letters, "
            "or one with @ or ://",
            "phrase": f"{settings.min_phrase_words} consecutive words",
            "exact": "a whole value received from that call",
            "reference": "a $step reference to that step",
            "ref": "a ref naming what only untrusted text named: no listing, not the user",
        }[rule]

    def _tainted_all(
        self, tool: str, hits: list[tuple[str, Record | None, str, str]]
    ) -> Verdict:
        """The flow rule's verdict naming every argument of ``hits`` (sink, source, text,
        rule) that carries untrusted data: the first as ``_tainted`` says it, and its keys
        in ``details``; all of them in ``details["arguments"]``."""
        sink, source, text, rule = hits[0]
        assert source is not None
        first = self._tainted(tool, sink, source, text, rule)
        if len(hits) == 1:
            return Verdict("ask", first.reason, {**first.details, "arguments": [
                _argument(sink, f"flow.{rule}", text, source, "untrusted")
            ]})
        more = []
        arguments = [_argument(sink, f"flow.{rule}", text, source, "untrusted")]
        for sink, source, text, rule in hits[1:]:
            assert source is not None
            what = self._what(rule, text)
            more.append(
                f"its {sink} carries {what} from {source.describe()}, untrusted (flow rule: "
                f"{self._rule(rule)})"
            )
            arguments.append(_argument(sink, f"flow.{rule}", text, source, "untrusted"))
        reason = f"{first.reason}; and " + "; and ".join(more)
        return Verdict("ask", reason, {**first.details, "arguments": arguments})

    def _what(self, rule: str, text: str) -> str:
        return {
            "token": f"the text {quoted(text)}",
            "phrase": f"the words {quoted(text)}",
            "exact": f"the value {quoted(text)}",
            "reference": "a value passed by reference",
            "ref": f"the name {quoted(text)}",
        }[rule]

    def _trifecta_all(
        self, tool: str, hits: list[tuple[str, Record | None, str, str]]
    ) -> Verdict:
        """The trifecta rule's verdict naming every sink of ``hits`` it read."""
        sink, source, text, _rule = hits[0]
        first = self._trifecta(tool, sink, source, text)
        arguments = [_argument(sink, "trifecta", text, source, "private")]
        more = []
        for sink, source, text, _rule in hits[1:]:
            arguments.append(_argument(sink, "trifecta", text, source, "private"))
            carried = (
                f" and carries {quoted(text)} from {source.describe()}, private"
                if source is not None
                else ""
            )
            more.append(f"its {sink} leaves the machine or changes something{carried}")
        reason = first.reason if not more else f"{first.reason}; and " + "; and ".join(more)
        return Verdict("ask", reason, {**first.details, "arguments": arguments})

    def _outside_effects(
        self,
        tool: str,
        labels: Trust,
        hints: Annotations | None,
        metadata: ToolMetadata | None,
        conversation: Conversation,
    ) -> Verdict | None:
        """The effects rule: once untrusted content entered a conversation whose effects
        the user's request bounded (``Conversation.effects``), a call with an effect (a tool
        that declares it is not read-only; one that declares nothing and has sinks) of a
        tool outside them, by name and by category, asks. A conversation opened inside
        another with a bound of its own (``Conversation.child``) is inside the effects
        asked for only where each bound around it allows the call: the first that does
        not says why."""
        root = conversation.root
        bounds = conversation._bounds
        if root._effects is not None:
            bounds = (*bounds, root)
        category = metadata.category if metadata is not None else None
        for node in bounds:
            allowed = node._effects
            assert allowed is not None
            budgets = node._budgets
            count = None if budgets is None else budgets.get(tool)
            if tool in allowed and (count is None or root.spent[tool] < count):
                continue
            if count is None and category is not None and category in allowed:
                continue
            break
        else:
            return None
        if hints is None:
            if not labels.sinks:
                return None
        elif hints.read_only:
            return None
        if count is not None and tool in allowed:
            reason = (
                f"this session read untrusted content, and {tool} changes something or sends "
                f"it out: the user's request asked for {count} such call"
                f"{'' if count == 1 else 's'} and {root.spent[tool]} ran; this one may come "
                "from what the untrusted content said (effects rule)"
            )
        else:
            bound = ", ".join(sorted(allowed)) if allowed else "none"
            reason = (
                f"this session read untrusted content, and {tool} changes something or "
                f"sends it out, an effect the user's request did not ask for (it allows: "
                f"{bound}); the call may come from what the untrusted content said "
                "(effects rule)"
            )
        return Verdict("ask", reason, {
            "rule": "effects",
            "argument": None,
            "fragment": "",
            "source": None,
            "allowed": sorted(allowed),
            "category": category,
            "count": count,
            "arguments": [],
        })

    # -- traces ----------------------------------------------------------------------

    def decided(
        self, name: str, arguments: Mapping[str, Any], verdict: Verdict | None,
        *, approved: bool = False, wanted: bool = True,
    ) -> Decision | None:
        """Keep the decision ``check`` made about this call (``toolplug.trust._decisions``):
        on the current conversation's ``decisions``, as a log record and as a span event.
        An ``allow`` is kept only where a rule looked: a conversation that read untrusted
        content, or a ``[policies]`` rule of the tool. The decision kept, or None (an allow
        no rule looked at; or, not ``wanted`` by the caller, an allow kept on the
        conversation only, its ``Decision`` made when read)."""
        conversation = CURRENT.get()
        if verdict is None:  # the common case, kept cheap (bench/guard.py)
            if (
                conversation is None
                or not conversation._root.untrusted
                or not self.settings.enabled
            ):
                if name not in self._rules:
                    return None
                if conversation is None:
                    decision = Decision(name, "allow", None, "", self.labels(name).sinks)
                    trace(decision, None)
                    return decision
            root = conversation._root
            labels = self._labels.get(name) or self.labels(name)
            # quiet(), inline: no DEBUG record wanted, no OpenTelemetry loaded: kept, that
            # is all
            if (
                not wanted
                and not log.isEnabledFor(_DEBUG)
                and "opentelemetry.trace" not in sys.modules
            ):
                root.decisions.allowed(name, labels.sinks, root.calls, approved)
                return None
            decision = Decision(name, "allow", None, "", labels.sinks, (), root.calls, approved)
            root.decisions.append(decision)
            trace(decision, None)
            return decision
        redactor = getattr(self.registry, "redactor", None)
        redact: Callable[[str], str] = (
            redactor.redact if redactor is not None else (lambda text: text)
        )
        details = verdict.details
        decision = Decision(
            name, verdict.action, str(details.get("rule")), redact(verdict.reason),
            self.labels(name).sinks, carried_of(details, redact),
            0 if conversation is None else conversation.root.calls, approved,
        )
        trace(decision, None if conversation is None else conversation.root.decisions)
        return decision

    def _trifecta(self, tool: str, sink: str, source: Record | None, text: str) -> Verdict:
        carried = (
            f" and carries {quoted(text)} from {source.describe()}, whose output is private"
            if source is not None
            else ""
        )
        reason = (
            f"this session read untrusted content and private data, and {tool}'s {sink} "
            f"leaves the machine or changes something{carried} (trifecta rule)"
        )
        return Verdict(
            "ask",
            reason,
            {
                "rule": "trifecta",
                "argument": sink,
                "fragment": text,
                "source": None if source is None else source.to_dict(),
            },
        )


def _argument(
    sink: str, rule: str, text: str, source: Record | None, label: str
) -> dict[str, Any]:
    """One argument that carries outside data, as ``details["arguments"]`` lists it."""
    return {
        "argument": sink, "rule": rule, "fragment": text,
        "source": None if source is None else source.to_dict(), "label": label,
    }
