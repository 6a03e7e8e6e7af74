"""``capture sync`` and ``capture promote``: captures in, golden suites out, idempotently.

``sync`` is incremental: ``<base>/sync-state.json`` keeps how far each capture file was read and
the spans of turns whose root has not ended yet, so each sync reads only what is new. It keeps
them per set of options (suite name, rounds, names-only): a sync with options not used before
reads every capture file still on disk again, so its suite gets every turn, while a repeated sync
with the same options reads nothing twice.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from evalshift_sdk import schema as A

from .._exceptions import InputError
from .._io import DERIVED_MAX_DEPTH, atomic_write_bytes, open_maybe_gzip, remove_stale_temps
from .._limits import MAX_DEPTH, LimitError, check_value, format_path, load_json
from ..ingest._captures import Capture, build_capture
from ..ingest._files import FilePosition, capture_files, read_spans
from ..ingest._otlp import AttributeShapeError, Span, full_span_problem, hex_id
from ..ingest._turns import TurnAssembler
from ..store._lock import file_lock
from ..store._paths import check_name, is_safe_name, name_problem, toolset_filename, under
from ..store._suites import DEFAULT_BASE, read_sidecar, suite_path, toolset_path, write_toolset
from ._examples import LATER_ROUNDS_NOT_REPLAYED, RoundsMode, promote_example

STATE_FILE = "sync-state.json"
LOCK_FILE = ".sync.lock"
STATE_VERSION = 2
MAX_PROFILES = 64
"""Option sets the state remembers (the most recently used): one per suite name in practice."""
MAX_WARNINGS = 1000
MAX_QUARANTINED = 10_000
_HEAD_BYTES = 4096
STALE_TURN_NS = 3600 * 10**9
_NAMED_TOOLS = 5


@dataclass
class SyncResult:
    """What a sync did."""

    suites: dict[str, Path] = field(default_factory=dict)
    """Suite files written or already up to date, by suite name."""
    added: int = 0
    """Examples appended."""
    unchanged: int = 0
    """Promoted turns already in their suite (by example id)."""
    warnings: list[str] = field(default_factory=list)
    """Everything a user should read: promotion warnings, skipped lines (file:line).

    At most ``MAX_WARNINGS``; past that they are counted in ``warnings_dropped`` and one last
    line says how many, so a sync of a million turns stays bounded in memory."""
    warnings_dropped: int = 0
    """Warnings beyond ``MAX_WARNINGS``, counted but not kept."""
    details: list[str] = field(default_factory=list)
    """Per-example warnings of a kind summed up in one line of ``warnings`` (the later rounds
    ``--rounds first`` does not replay, per example), at most ``MAX_WARNINGS``."""
    later_rounds: int = 0
    """Examples with later rounds that ``rounds="first"`` does not replay."""
    quarantined: int = 0
    """Turns left out for a damaged span, an unsafe prompt id or a value past the limits (each
    named, with its file:line and field, in ``warnings``)."""
    held_back: int = 0
    """Turns whose root span has not ended yet, left for the next sync."""
    spans: int = 0
    """Spans read."""
    unrecognised: int = 0
    """Spans of complete turns holding no model call of a known dialect (evalshift, GenAI
    semconv, OpenLLMetry, OpenInference): read, and promoted into nothing."""
    unrecognised_source: str | None = None
    """``file:line`` of the first such span."""
    kept: int = 0
    """Examples a sync with options new to this state found already in their suite, promoted by
    an earlier sync with other options, and left as they were (suites merge by example id)."""
    gone: int = 0
    """Turns earlier syncs (with other options) promoted from capture files no longer on disk,
    which a sync with options new to this state cannot promote again."""

    def unrecognised_line(self) -> str | None:
        """The one line that tells the user about them, or None when every turn had a model call."""
        if not self.unrecognised:
            return None
        plural = "" if self.unrecognised == 1 else "s"
        return (f"{self.unrecognised} span{plural} recognised as no model call: first at {self.unrecognised_source} "
                "(no evalshift, GenAI-semconv or OpenInference model-call span in their turn)")


class _SuiteWriter:
    """Appends new examples to a suite through a temp file renamed into place at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Ids as their 64-bit hashes: merge-by-id needs one set entry per example of the suite,
        # and an int entry is half the memory of the id string (a collision has odds ~n²/2^65).
        self.known: set[int] = set()
        self.added = 0
        self._tmp: IO[bytes] | None = None
        self._tmp_path: Path | None = None
        if path.exists():
            with open(path, "rb") as fh:
                for raw in fh:
                    if raw.strip():
                        try:
                            row = orjson.loads(raw)
                        except orjson.JSONDecodeError:
                            continue  # load_suite reports it, with its line, when the suite is used
                        if isinstance(row, dict) and "id" in row:
                            self.known.add(hash(str(row["id"])))

    def add(self, example: dict[str, Any]) -> bool:
        """Append an example not in the suite yet (False when its id is); an example nested
        past the limits raises LimitError naming the field, and nothing is written."""
        key = hash(example["id"])
        if key in self.known:
            return False
        try:
            line = orjson.dumps(example) + b"\n"
        except orjson.JSONEncodeError:
            line = b""
        # No value can nest deeper than the brackets it holds: count first, walk only if needed.
        if not line or line.count(b"[") + line.count(b"{") > MAX_DEPTH:
            check_value(example)
        if self._tmp is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(self.path)  # a sync killed mid-write left its temp file behind
            self._tmp_path = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            self._tmp = open(self._tmp_path, "wb")  # noqa: SIM115 - closed by commit() or abort()
            if self.path.exists():
                with open(self.path, "rb") as src:
                    shutil.copyfileobj(src, self._tmp)  # streamed: a big suite is never held whole
                    size = src.tell()
                    if size:
                        src.seek(size - 1)
                        if src.read(1) != b"\n":  # a hand-edited suite missing its last newline
                            self._tmp.write(b"\n")
        self._tmp.write(line)
        self.known.add(key)
        self.added += 1
        return True

    def commit(self) -> None:
        if self._tmp is None or self._tmp_path is None:
            return
        self._tmp.flush()
        os.fsync(self._tmp.fileno())
        self._tmp.close()
        os.replace(self._tmp_path, self.path)
        self._tmp = None

    def abort(self) -> None:
        if self._tmp is not None and self._tmp_path is not None:
            self._tmp.close()
            self._tmp_path.unlink(missing_ok=True)
            self._tmp = None


class _Promoter:
    """Shared engine of ``sync`` and ``promote_files``: spans -> turns -> examples -> suites."""

    def __init__(self, base: Path, suite_name: str | None, rounds: RoundsMode, names_only: bool,
                 command: str = "evalshift capture sync") -> None:
        if rounds not in ("first", "all"):
            raise InputError(f"rounds must be 'first' or 'all', not {rounds!r}", field="rounds")
        self.base = base
        self.suite_name = suite_name
        self.rounds = rounds
        self.names_only = names_only
        self.result = SyncResult()
        self.writers: dict[str, _SuiteWriter] = {}
        self._toolsets: dict[str, list[dict[str, Any]] | None] = {}
        self._in_base: set[str] = set()
        self._missing_ref: set[str] = set()
        self.current: FilePosition | None = None
        self.newest_end = 0
        self.quarantined: dict[str, str] = {}
        """Traces with a damaged span (trace id -> its file:line), until their turn completes."""
        self.command = command
        """How the user ran this, for the fix a summary line suggests."""
        self.later_tools: dict[str, None] = {}
        """Tools called in rounds ``rounds="first"`` does not replay, in first-seen order."""
        self.other_suites: set[str] = set()
        """Suites fed by earlier syncs with other options (set when these options are new)."""
        if suite_name is not None:
            check_name(suite_name, what="suite name", field="suite_name")

    def warn(self, message: str) -> None:
        if len(self.result.warnings) < MAX_WARNINGS:
            self.result.warnings.append(message)
        else:
            self.result.warnings_dropped += 1

    def _lookup(self, ref: str, capture: Capture, capture_dir: Path) -> list[dict[str, Any]] | None:
        if ref in capture.toolsets:
            return capture.toolsets[ref]
        if ref not in self._toolsets:
            tools = read_sidecar(under(capture_dir / "toolsets", toolset_filename(ref)), ref)
            if tools is None:
                tools = read_sidecar(toolset_path(self.base, ref), ref)
            self._toolsets[ref] = tools
        return self._toolsets[ref]

    def _ensure_sidecar(self, example_id: str, ref: str, tools: list[dict[str, Any]] | None) -> None:
        if ref in self._in_base:
            return
        if toolset_path(self.base, ref).exists():
            self._in_base.add(ref)
            return
        if tools is not None:
            write_toolset(self.base, ref, tools)
            self._in_base.add(ref)
            return
        if ref not in self._missing_ref:
            self._missing_ref.add(ref)
            self.warn(f"{example_id}: toolset_ref {ref} has no sidecar in the capture dir or {self.base}; "
                      "run will stop on this example until the sidecar is added")

    def bad_span(self, message: str, trace_id: str | None) -> None:
        """A span left out of its line: said once, and its turn is quarantined when it completes."""
        self.warn(message)
        if trace_id is not None:
            key = trace_id if len(trace_id) == 32 else hex_id(trace_id, 32)
            self.quarantined.setdefault(key, message.partition(": ")[0])

    def quarantine(self, spans: list[Span], field: str | None, problem: str) -> None:
        where = f"{field}: " if field else ""
        self.warn(f"{spans[-1].source}: {where}{problem}; turn {spans[-1].trace_id} quarantined (not promoted)")
        self.result.quarantined += 1

    def take_turn(self, spans: list[Span], capture_dir: Path) -> None:
        """Build, promote and write one turn; a turn with a damaged span or attribute, an unsafe
        prompt id or a value past the limits is quarantined with its file:line and field."""
        root = spans[-1]
        damaged = self.quarantined.pop(root.trace_id, None)
        if damaged is not None:
            self.quarantine(spans, None, f"a span of this turn was damaged ({damaged})")
            return
        try:
            capture = build_capture(spans, all_messages=False)
            if capture is None:
                self.result.unrecognised += len(spans)
                self.result.unrecognised_source = self.result.unrecognised_source or spans[0].source
                return
            if capture.prompt_id is not None:
                field = A.PROMPT_ID if A.PROMPT_ID in root.attrs else A.AGENT_NAME
                problem = name_problem(capture.prompt_id)
                if problem is not None:
                    self.quarantine(spans, field, f"prompt id {capture.prompt_id[:80]!r} {problem}")
                    return
            record, warnings = promote_example(
                capture, rounds=self.rounds, names_only=self.names_only,
                toolsets=lambda ref: self._lookup(ref, capture, capture_dir),
            )
            self.take(capture, record, warnings, capture_dir)
        except AttributeShapeError as exc:
            self.quarantine(spans, f"attributes.{exc.key}", exc.problem)
            return
        except LimitError as exc:
            self.quarantine(spans, f"example.{format_path(exc.path)}", exc.message)
            return
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
            # A span or attribute with the wrong shape (a foreign or damaged writer): name it.
            for span in spans:
                found = full_span_problem(span.raw)
                if found is not None:
                    self.quarantine([span], found[0], found[1])
                    return
            self.quarantine(spans, None, f"a recorded attribute has an unexpected shape ({type(exc).__name__}: {exc})")
            return

    def take(self, capture: Capture, record: dict[str, Any] | None, warnings: list[str], capture_dir: Path) -> None:
        for message in warnings:
            _, _, text = message.partition(": ")
            if text.startswith(LATER_ROUNDS_NOT_REPLAYED):
                # One per multi-round example: summed up in one line at the end, kept as a detail.
                self.result.later_rounds += 1
                if len(self.result.details) < MAX_WARNINGS:
                    self.result.details.append(message)
                if len(self.later_tools) <= _NAMED_TOOLS:
                    for part in text.removeprefix(LATER_ROUNDS_NOT_REPLAYED).split("; "):
                        for tool in part.partition(": ")[2].split(", "):
                            self.later_tools.setdefault(tool[:80], None)
                continue
            self.warn(message)
        if record is None:
            return
        ref = record.get("toolset_ref")
        if ref:
            self._ensure_sidecar(record["id"], ref, self._lookup(ref, capture, capture_dir))
        name = self.suite_name or record.get("prompt_id") or "default"
        writer = self.writers.get(name)
        if writer is None:
            writer = self.writers[name] = _SuiteWriter(suite_path(self.base, name))
            self.result.suites[name] = writer.path
        if writer.add(record):
            self.result.added += 1
        else:
            self.result.unchanged += 1
            if name in self.other_suites:
                self.result.kept += 1
        if self.current is not None:
            self.current.examples += 1
            if name not in self.current.suites:
                self.current.suites.append(name)

    def run(self, files: list[Path], positions: dict[str, FilePosition], assembler: TurnAssembler,
            progress: bool | None) -> None:
        from .._progress import bar_class

        if progress is None:
            progress = sys.stderr.isatty()
        total = sum(max(0, p.stat().st_size - (0 if p.suffix == ".gz" else positions[str(p)].offset)) for p in files)
        bar = bar_class()(total=total, unit="B", unit_scale=True, desc="capture sync", file=sys.stderr,
                   disable=not progress, leave=False)
        # Parsed spans form no reference cycles, so reference counting frees them; the cyclic
        # collector would only rescan every live span dict over and over (about 2x the runtime).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for path in files:
                pos = positions[str(path)]
                # Examples promoted by earlier syncs from this file are still there, untouched.
                self.result.unchanged += pos.examples
                for name in pos.suites:
                    self.result.suites.setdefault(name, suite_path(self.base, name))
                self.current = pos
                start = pos.offset
                gz = path.suffix == ".gz"
                for batch in read_spans(path, pos, self.warn, self.bad_span):
                    self.result.spans += len(batch)
                    for span in batch:
                        spans = assembler.add(span)
                        if spans is not None:
                            self.newest_end = max(self.newest_end, spans[-1].end)
                            self.take_turn(spans, path.parent)
                    if not gz:
                        bar.update(pos.offset - start)
                        start = pos.offset
                if gz:
                    bar.update(path.stat().st_size)
            for writer in self.writers.values():
                writer.commit()
        except BaseException:
            for writer in self.writers.values():
                writer.abort()
            raise
        finally:
            if gc_was_enabled:
                gc.enable()
            bar.close()
        self.result.held_back = assembler.held_back_turns
        late = assembler.late_warning()
        if late:
            self.warn(late)
        stale = sum(1 for spans in assembler.pending.values()
                    if self.newest_end - max(s.end for s in spans) > STALE_TURN_NS)
        if stale:
            self.warn(f"{stale} turn(s) held back for over an hour of later captures: their root span "
                      "never arrived (a process that died mid-turn, or a root in another service?)")
        if self.result.later_rounds:
            n = self.result.later_rounds
            tools = list(self.later_tools)
            named = ", ".join(tools[:_NAMED_TOOLS]) + (", ..." if len(tools) > _NAMED_TOOLS else "")
            # Said even past MAX_WARNINGS: it stands for every one of those examples.
            self.result.warnings.append(
                f"{n} example{' has' if n == 1 else 's have'} later rounds that --rounds first does not replay "
                f"({named}): run `{self.command} --rounds all --suite-name NAME` to include them")
        if self.result.kept:
            names = sorted({n for n in self.result.suites if n in self.other_suites})
            self.warn(f"{self.result.kept} example(s) already in suite {', '.join(names)} were promoted by an "
                      "earlier sync with other options and stay as they were (suites merge by example id): "
                      "add --suite-name NAME to write them with these options into a suite of their own")
        if self.result.warnings_dropped:
            self.result.warnings.append(f"... and {self.result.warnings_dropped} more warnings")


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**63


def _options(suite_name: str | None, rounds: str, names_only: bool) -> dict[str, Any]:
    """The options a profile of the state was promoted with: what makes two syncs the same."""
    return {"suite_name": suite_name, "rounds": rounds, "names_only": names_only}


def _profile_problem(profile: Any) -> str | None:
    """What makes one profile of a sync state unusable, or None."""
    if not isinstance(profile, dict):
        return ""
    if not (profile.get("suite_name") is None or is_safe_name(profile.get("suite_name"))) or \
            profile.get("rounds") not in ("first", "all") or not isinstance(profile.get("names_only"), bool):
        return "options"
    if not _is_count(profile.get("gone", 0)):
        return "gone"
    files = profile.get("files", {})
    if not isinstance(files, dict):
        return "files"
    for key, entry in files.items():
        if not isinstance(entry, dict) or not all(_is_count(entry.get(k, 0)) for k in
                                                  ("offset", "line", "examples", "head_len")):
            return f"files[{key!r}]"
        if not (entry.get("inode") is None or _is_count(entry.get("inode"))) or \
                not isinstance(entry.get("head", ""), str):
            return f"files[{key!r}]"
        if not isinstance(entry.get("suites", []), list) or not all(map(is_safe_name, entry.get("suites", []))):
            return f"files[{key!r}].suites"
    suites = profile.get("suites", [])
    if not isinstance(suites, list) or not all(map(is_safe_name, suites)):
        return "suites"
    pending = profile.get("pending", [])
    if not isinstance(pending, list) or not all(
            isinstance(row, list) and len(row) == 3 and full_span_problem(row[0]) is None
            and isinstance(row[1], str) and isinstance(row[2], str) for row in pending):
        return "pending"
    quarantined = profile.get("quarantined", {})
    if not isinstance(quarantined, dict) or not all(isinstance(v, str) for v in quarantined.values()):
        return "quarantined"
    return None


def _state_problem(state: Any) -> str | None:
    """What makes a sync state unusable (it is a file anyone can edit), or None."""
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        return f"not a version-{STATE_VERSION} state"
    profiles = state.get("profiles", [])
    if not isinstance(profiles, list) or len(profiles) > MAX_PROFILES:
        return "profiles"
    for i, profile in enumerate(profiles):
        problem = _profile_problem(profile)
        if problem is not None:
            return f"profiles[{i}]" + (f".{problem}" if problem else "")
    return None


def _load_state(base: Path, warn: Any = None) -> dict[str, Any] | None:
    path = base / STATE_FILE
    try:
        state = load_json(path.read_bytes(), file=str(path), what="sync state", error=InputError,
                          max_depth=DERIVED_MAX_DEPTH)
    except OSError:
        return None
    except InputError as exc:
        if warn is not None:
            warn(f"{exc}; every capture file is read again (examples already promoted stay as they are)")
        return None
    problem = _state_problem(state)
    if problem is not None:
        # A state of another version (an older EvalShift's) is read again silently.
        if warn is not None and not (isinstance(state, dict) and state.get("version") != STATE_VERSION):
            warn(f"{path}: {problem}: not a sync state this EvalShift wrote; every capture file is read "
                 "again (examples already promoted stay as they are)")
        return None
    return state


def _split_profiles(base: Path, state: dict[str, Any] | None,
                    options: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """This sync's profile of the state (None when its options are new) and the others."""
    mine: dict[str, Any] | None = None
    others: list[dict[str, Any]] = []
    for profile in (state or {}).get("profiles", []):
        if all(profile.get(k) == v for k, v in options.items()):
            mine = profile
        else:
            others.append(profile)
    # A suite this profile fed was deleted (or the state names one no rule allows): start over,
    # or its examples would never come back.
    if mine is not None and any(not (is_safe_name(name) and suite_path(base, name).exists())
                                for name in mine.get("suites", [])):
        mine = None
    return mine, others


def _gone(profile: dict[str, Any], inodes: set[int]) -> int:
    """Turns a profile promoted from capture files no longer on disk (nor renamed to a file read now)."""
    return int(profile.get("gone", 0)) + sum(
        int(entry.get("examples", 0)) for key, entry in profile.get("files", {}).items()
        if not Path(key).exists() and entry.get("inode") not in inodes)


def _head(path: Path, length: int) -> str:
    """Fingerprint of a file's first ``length`` bytes, to tell a file from a stranger with its inode."""
    if length <= 0:
        return ""
    try:
        with open_maybe_gzip(path) as fh:
            return hashlib.sha256(fh.read(length)).hexdigest()[:32]
    except (OSError, EOFError):
        return ""


def _positions(files: list[Path], state: dict[str, Any] | None, warn: Any) -> dict[str, FilePosition]:
    """Where to resume each file: by path, else by inode for a file rotated by rename.

    ``state`` is this sync's profile of the state. A stored position is reused only for the same
    inode whose first bytes still match what was read, so a file truncated, rewritten, or new on
    a recycled inode is read from the start.
    """
    stored: dict[str, dict[str, Any]] = (state or {}).get("files", {})
    by_inode = {v.get("inode"): k for k, v in stored.items() if v.get("inode") is not None}
    current = {path.stat().st_ino for path in files}
    out: dict[str, FilePosition] = {}
    for path in files:
        key = str(path.resolve())
        st = path.stat()
        pos = FilePosition(inode=st.st_ino)
        out[str(path)] = pos
        entry = stored.get(key)
        if entry is not None and entry.get("inode") != st.st_ino:
            if entry.get("inode") not in current:  # not rotated away under another name
                warn(f"{path}: replaced since the last sync; read again from the start")
            entry = None
        if entry is None:
            old = by_inode.get(st.st_ino)
            if old is None or old == key:
                continue
            entry = stored[old]  # rotated by rename: the file read before, under a new name
        offset = int(entry.get("offset", 0))
        head_len = int(entry.get("head_len", 0))
        if (path.suffix != ".gz" and st.st_size < offset) or _head(path, head_len) != entry.get("head", ""):
            warn(f"{path}: truncated or rewritten since the last sync; read again from the start")
            continue
        pos.offset, pos.line = offset, int(entry.get("line", 0))
        pos.examples, pos.suites = int(entry.get("examples", 0)), list(entry.get("suites", []))
    return out


def _save_state(base: Path, positions: dict[str, FilePosition], assembler: TurnAssembler,
                suites: Iterable[str], previous: dict[str, Any] | None,
                quarantined: dict[str, str] | None = None, *,
                options: dict[str, Any] | None = None, others: list[dict[str, Any]] | None = None) -> None:
    """Write this sync's profile (``previous`` is what it was) after the other profiles."""
    files = dict((previous or {}).get("files", {}))
    inodes = set()
    for path, pos in positions.items():
        entry = pos.to_json()
        entry["head_len"] = min(_HEAD_BYTES, pos.offset)
        entry["head"] = _head(Path(path), entry["head_len"])
        files[str(Path(path).resolve())] = entry
        inodes.add(pos.inode)
    # Files rotated away: their examples are counted, so a sync with new options can say so.
    gone = _gone({"gone": (previous or {}).get("gone", 0), "files": files}, inodes)
    files = {k: v for k, v in files.items() if Path(k).exists()}
    profile: dict[str, Any] = {
        **(options or _options(None, "first", False)),
        "files": dict(sorted(files.items())),
        "suites": sorted(set((previous or {}).get("suites", [])) | set(suites)),
        "pending": [s.to_json() for s in assembler.held_back()],
    }
    if gone:
        profile["gone"] = gone
    # Turns that hold a damaged span and have not ended stay quarantined across syncs (the most
    # recent MAX_QUARANTINED: a root that never comes must not grow the state forever).
    held = list((quarantined or {}).items())[-MAX_QUARANTINED:]
    if held:
        profile["quarantined"] = dict(held)
    # The profile just used goes last; the least recently used ones are forgotten past the cap.
    profiles = [*(others or [])[-(MAX_PROFILES - 1):], profile]
    data = orjson.dumps({"version": STATE_VERSION, "profiles": profiles}, option=orjson.OPT_INDENT_2) + b"\n"
    state_path = base / STATE_FILE
    if not state_path.exists() or state_path.read_bytes() != data:
        atomic_write_bytes(state_path, data)


def sync(
    capture_dir: str | os.PathLike[str] = ".evalshift/captures",
    *,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    suite_name: str | None = None,
    rounds: RoundsMode = "first",
    names_only: bool = False,
    progress: bool | None = None,
) -> SyncResult:
    """Promote the turns captured under ``capture_dir`` since the last sync into suites.

    Examples go to ``<base>/suites/<suite_name>.jsonl`` (else one suite per prompt id), merged
    by example id, so a second sync changes nothing. Toolset sidecars are copied into
    ``<base>/toolsets/``. Turns whose root span has not ended are held back for the next sync.
    ``progress=None`` shows a progress bar on stderr when it is a terminal.

    The state remembers how far each file was read per set of options (``suite_name``,
    ``rounds``, ``names_only``): a sync with options not used before promotes every turn whose
    capture file is still on disk (and warns how many turns earlier syncs promoted from files
    rotated away since); a repeated sync promotes only what is new. An example already in its
    suite stays as it is, whatever the options: write new options into a new ``suite_name``.
    Deleting a suite makes the next sync with the options that fed it read every file again.
    """
    base_path = Path(base)
    if not Path(capture_dir).exists():
        raise InputError("no captures here: run the agent with EVALSHIFT_CAPTURE=1 first", file=str(capture_dir))
    with file_lock(base_path / LOCK_FILE):
        engine = _Promoter(base_path, suite_name, rounds, names_only)
        options = _options(suite_name, rounds, names_only)
        state, others = _split_profiles(base_path, _load_state(base_path, engine.warn), options)
        files = capture_files(capture_dir)
        if state is None and others:
            inodes = {path.stat().st_ino for path in files}
            engine.result.gone = max(_gone(profile, inodes) for profile in others)
            engine.other_suites = {name for profile in others for name in profile.get("suites", [])}
            if engine.result.gone:
                where = f"suite {suite_name}" if suite_name else "their suites"
                engine.warn(f"{engine.result.gone} turn(s) an earlier sync promoted came from capture files no "
                            f"longer in {capture_dir} (rotated or deleted): they cannot be promoted into {where} "
                            "with these options; `evalshift capture promote FILE` takes a copy kept elsewhere")
        positions = _positions(files, state, engine.warn)
        pending = [Span.from_json(row) for row in (state or {}).get("pending", [])]
        engine.quarantined.update((state or {}).get("quarantined", {}))
        assembler = TurnAssembler(pending)
        engine.run(files, positions, assembler, progress)
        _save_state(base_path, positions, assembler, engine.result.suites, state, engine.quarantined,
                    options=options, others=others)
    return engine.result


def promote_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    suite_name: str | None = None,
    rounds: RoundsMode = "first",
    names_only: bool = False,
    progress: bool | None = None,
) -> SyncResult:
    """``capture promote FILE...``: promote every complete turn in these files (no sync state).

    Spans of one turn split across the given files are joined; turns whose root span is in none
    of them are reported as held back and not promoted.
    """
    base_path = Path(base)
    files: list[Path] = []
    for p in paths:
        found = capture_files(p)
        if not found:
            raise InputError("no capture file here (expected OTLP/JSON lines: *.jsonl, *.json, *.gz)", file=str(p))
        files.extend(found)
    with file_lock(base_path / LOCK_FILE):
        engine = _Promoter(base_path, suite_name, rounds, names_only, command="evalshift capture promote FILE...")
        positions = {str(p): FilePosition() for p in files}
        assembler = TurnAssembler()
        engine.run(files, positions, assembler, progress)
    if engine.result.held_back:
        engine.warn(f"{engine.result.held_back} turn(s) held back: their root span is in none of the "
                    "given files (the turn has not ended yet, or the file holding it was not given)")
    return engine.result
