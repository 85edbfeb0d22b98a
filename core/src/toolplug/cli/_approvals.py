"""``toolplug approvals``: the calls waiting for a person, decided from any terminal.

The store is the one ``[approvals] store`` names (by default a SQLite file in the state
directory, or the Redis of ``[calls] store``): a call waiting in one process resumes when
this command, run in another, decides its request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from toolplug.cli._parser import EXIT_FAILED, EXIT_OK, EXIT_USAGE, _Exit
from toolplug.engine._inbox import open_approvals
from toolplug.engine._recording import decision_refused
from toolplug.state._inbox import DecisionRefused

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.engine._inbox import Approvals
    from toolplug.state._record import Recorder

__all__ = ["run_approvals"]


def run_approvals(args: argparse.Namespace, config: Config) -> int:
    """Run one ``toolplug approvals`` action; the exit code."""
    if args.action in ("approve", "deny", "forget") and not args.id:
        raise _Exit(EXIT_USAGE, f"approvals {args.action} needs the id: toolplug approvals "
                    f"{args.action} ID (see toolplug approvals list)")
    return asyncio.run(_run(args, config))


async def _run(args: argparse.Namespace, config: Config) -> int:
    approvals = open_approvals(config)
    approvals.recorder = await asyncio.to_thread(_open_record, config)  # a sweep's, a refusal's
    try:
        return await _act(approvals, args)
    except DecisionRefused as refused:
        print(f"toolplug: refused: {refused}", file=sys.stderr)
        if approvals.recorder is not None:
            approvals.recorder.add(decision_refused(
                refused.request, target=args.id, action=args.action, why=refused.why,
                reason=str(refused), by=args.owner, via="command line",
            ))
        return EXIT_FAILED
    finally:
        await approvals.aclose()
        if approvals.recorder is not None:
            await asyncio.to_thread(approvals.recorder.close)


def _open_record(config: Config) -> Recorder | None:
    """The record refused decisions and requests this command swept to ``failed`` are
    kept in, when it is on."""
    if not config.record.enabled:
        return None
    from toolplug.config._record import record_target
    from toolplug.state._record import open_record

    return open_record(config.record, record_target(
        config.record, config.state_dir, config.path.parent if config.path else None
    ))


def _when(stamp: float | None) -> str:
    return "-" if not stamp else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))


async def _act(approvals: Approvals, args: argparse.Namespace) -> int:
    owner, every = args.owner, args.every_owner
    if args.action == "list":
        pending = await approvals.apending(owner, every_owner=every)
        if args.json:
            print(json.dumps([p.to_dict() for p in pending], indent=2, default=str))
        elif not pending:
            print("no approval requests are waiting")
        for request in [] if args.json else pending:
            print(f"{request.id}  {request.tool}  owner {request.owner or '-'}  waits until "
                  f"{_when(request.expires)} UTC")
            print(f"  {request.describe()}")
            for carried in request.details.get("arguments") or ():
                source = carried.get("source") or {}
                print(f"  - {carried.get('argument')}: from {source.get('tool', '?')} "
                      f"({carried.get('label', '')}, rule {carried.get('rule', '')})")
        return EXIT_OK
    if args.action in ("approve", "deny"):
        decided = await approvals.adecide(
            args.id, args.action == "approve", by=owner, note=args.note, remember=args.remember
        )
        _say(args, decided.to_dict(), f"{decided.id} {decided.state}: {decided.describe()}")
        return EXIT_OK
    if args.action == "remembered":
        kept = await approvals.aremembered(owner, every_owner=every)
        if args.json:
            print(json.dumps([k.to_dict() for k in kept], indent=2, default=str))
        elif not kept:
            print("no decisions are remembered")
        else:
            print("\n\n".join(k.rule() for k in kept))
        return EXIT_OK
    forgotten = await approvals.aforget(args.id, by=owner)
    _say(args, forgotten.to_dict(), f"forgot {forgotten.id}:\n{forgotten.rule()}")
    return EXIT_OK


def _say(args: argparse.Namespace, body: dict[str, Any], text: str) -> None:
    print(json.dumps(body, indent=2, default=str) if args.json else text)
