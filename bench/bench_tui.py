"""Console start, whole process (issue 8 item 10): first frame ≤ 1 s on the 1,024-node / 10,000-job
state; `gpuadmin --help` ≤ 150 ms; `gpuadmin get nodes -o json` on the same state.

The console runs as a user starts it — `gpuadmin --state DIR tui --view VIEW`, the installed entry point —
on a pseudo-terminal (TERM=xterm-256color, 120x36 set with TIOCSWINSZ, the pty its controlling terminal).
Everything it writes is fed to a small screen model (cursor moves and text; colours ignored). The bench
answers one query, synchronized output (DEC mode 2026: "supported"), as kitty, WezTerm, foot or iTerm2 do, so
Textual brackets each frame and the screen is judged only at the end of a frame: a milestone counts once a
whole frame shows it, never when half of one has been written. (A program that does not ask is judged after
every read.) The clock starts just before the process is spawned. Milestones:

  paint    the first complete frame: the header bar (" gpuadmin  CLUSTER ... VIEW") on the top row and
           the key hints on the bottom row; the body may still say "loading...";
  data     the view's data on screen (the overview's counts through "Queues over quota"; the nodes /
           jobs table with its status line "nodes: 1024 of 1024") — *the first frame* the target is
           about;
  reasons  the why-pending reasons filled in (overview: no "computing (a scheduling dry run)" left; jobs:
           no "(reasons: computing)" left). Each run starts from a fresh copy of the state as `init` left
           it, so the console computes them (a dry-run cycle in a worker). "cached": the same on a state
           whose reasons an earlier process already computed and cached for this revision.

Then `q` is typed (ctrl+c after 3 s, SIGKILL after 6 s) and the process must exit.

Baselines, same run, runs interleaved: for the console, a bare Textual app (a header Static, a body Static
and a Footer, no gpuadmin import) started the same way, to its first complete frame; for the CLI, the bare
interpreter (`python -c pass`). Also checks, with -X importtime, that `gpuadmin --help` imports none of
textual, rich, pydantic, and prints its heaviest imports when it is over target.

    .venv/bin/python -m bench.bench_tui [--repeat 5] [--cli-repeat 7]

Key to acknowledgement (issue 20 item 5), `--keys`: on the 1,024-node / 100,000-job state (its why-pending
reasons cached, as after a first `get jobs`), the console run headless by Textual's pilot at 120x36, one
console with the views opened in turn. For each case the key is handed to the app as the terminal driver
hands it (not `pilot.press`, which waits until the whole process is idle) and the clock stops when the
screen acknowledges it, checked on the event loop every 1 ms: the describe screen on top or the view's
"working" line shown (`d`), the view scrolled or its cursor moved a page (PageDown) — and then the screen
refreshed with it (`call_after_refresh`), so the drawing's cost counts. Target: <= 50 ms. With
`--baseline-rev REV` the same cases run on REV's code (a temporary `git worktree`), each side in its own
process, the two alternating round by round; the ratio is baseline / this tree.

    .venv/bin/python -m bench.bench_tui --keys [--rounds 3] [--presses 3] [--baseline-rev main] [--state DIR]
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import fcntl
import os
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import generated_file

ROWS, COLS = 36, 120
Check = Callable[["Screen"], bool]

BASELINE_APP = """
from textual.app import App
from textual.widgets import Footer, Static

class Bare(App):
    BINDINGS = [("q", "quit", "Quit"), ("d", "bell", "Describe")]

    def compose(self):
        yield Static(" baseline  bare-cluster  rev 0  role admin  overview", id="header")
        yield Static("hello", id="body")
        yield Footer()

Bare().run()
"""

# ------------------------------------------------------------------------------------------- the screen


class Screen:
    """Just enough of a terminal for what Textual writes: CUP/CUU/CUD/CUF/CUB, CR, LF, BS, text (no
    autowrap: Textual turns it off); SGR, private modes and OSC strings are skipped."""

    CSI = re.compile(r"\x1b\[([0-9;?<>=$ ]*)([@-~])")

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.y = self.x = 0
        self.pending = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.replies: list[bytes] = []  # answers to the program's queries, to write back
        self.asked = False  # the program asked whether the terminal has synchronized output (mode 2026)
        self.synced = False  # and brackets its frames with it
        self.frames = 0  # frames completed (with synchronized output)
        self.on_frame: Callable[[], None] = lambda: None

    def feed(self, data: bytes) -> None:
        text = self.pending + self.decoder.decode(data)
        self.pending = ""
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c == "\x1b":
                if i + 1 >= n:
                    self.pending = text[i:]
                    return
                nxt = text[i + 1]
                if nxt == "[":
                    m = self.CSI.match(text, i)
                    if m is None:
                        if not re.fullmatch(r"\x1b\[[0-9;?<>=$ ]*", text[i:]):
                            i += 2  # malformed: drop the introducer
                            continue
                        self.pending = text[i:]  # split across reads
                        return
                    self._csi(m.group(1), m.group(2))
                    i = m.end()
                elif nxt in "]PX^_":  # OSC / DCS / ...: up to BEL or ST
                    end = min((j for j in (text.find("\x07", i), text.find("\x1b\\", i)) if j >= 0), default=-1)
                    if end < 0:
                        self.pending = text[i:]
                        return
                    i = end + (1 if text[end] == "\x07" else 2)
                else:
                    i += 2
            elif c == "\r":
                self.x = 0
                i += 1
            elif c == "\n":
                self.y = min(self.rows - 1, self.y + 1)
                i += 1
            elif c == "\b":
                self.x = max(0, self.x - 1)
                i += 1
            elif c < " ":
                i += 1
            else:
                if self.x < self.cols:
                    self.cells[self.y][self.x] = c
                    self.x += 1
                i += 1

    def _csi(self, params: str, final: str) -> None:
        if params == "?2026$" and final == "p":  # DECRQM: synchronized output? "supported, reset"
            self.replies.append(b"\x1b[?2026;2$y")
            self.asked = True
        elif params == "?2026" and final == "h":
            self.synced = True
        elif params == "?2026" and final == "l":
            self.frames += 1
            self.on_frame()  # a whole frame is on screen
        if params.startswith(("?", ">", "<", "=")):
            return
        args = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else []
        first = args[0] if args and args[0] else 1
        if final in "Hf":
            row = args[0] if len(args) > 0 and args[0] else 1
            col = args[1] if len(args) > 1 and args[1] else 1
            self.y, self.x = min(self.rows, row) - 1, min(self.cols, col) - 1
        elif final == "A":
            self.y = max(0, self.y - first)
        elif final == "B":
            self.y = min(self.rows - 1, self.y + first)
        elif final == "C":
            self.x = min(self.cols - 1, self.x + first)
        elif final == "D":
            self.x = max(0, self.x - first)
        elif final == "G":
            self.x = min(self.cols, first) - 1
        elif final == "J" and args[:1] == [2]:
            self.cells = [[" "] * self.cols for _ in range(self.rows)]

    def row(self, y: int) -> str:
        return "".join(self.cells[y])

    def text(self) -> str:
        return "\n".join(self.row(y) for y in range(self.rows))


# ------------------------------------------------------------------------------------------- one start


class _PtyReader:
    """Reads the console's pty into a `Screen`, answering its queries and timing each milestone (seconds
    from `start`) the first time its check holds on a frame."""

    def __init__(self, master: int, screen: Screen, checks: dict[str, Check], start: float) -> None:
        self.master, self.screen, self.checks, self.start = master, screen, checks, start
        self.seen: dict[str, float | None] = dict.fromkeys(checks)
        self.read_at = 0.0
        screen.on_frame = self.check

    def check(self) -> None:
        for name, done in self.checks.items():
            if self.seen[name] is None and done(self.screen):
                self.seen[name] = self.read_at

    def pump(self, wait: float) -> bool:
        """Read what is there (up to `wait` s); False once the pty is closed."""
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.master, 1 << 16)
        except OSError:  # EIO: the child is gone
            return False
        if not data:
            return False
        self.read_at = time.perf_counter() - self.start
        self.screen.feed(data)
        for reply in self.screen.replies:
            os.write(self.master, reply)
        self.screen.replies.clear()
        if not self.screen.asked:  # a program that will not bracket its frames: judge after every read
            self.check()
        return True


def run_console(argv: list[str], checks: dict[str, Check], timeout: float) -> dict[str, float | None]:
    """Start `argv` on a fresh pty and time each milestone (seconds from spawn; None if never seen)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TEXTUAL") and k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    screen = Screen(ROWS, COLS)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                            start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    reader = _PtyReader(master, screen, checks, start)
    seen = reader.seen
    try:
        open_ = True
        while open_ and time.perf_counter() - start < timeout and None in seen.values():
            open_ = reader.pump(0.05)
        if None in seen.values() and proc.poll() is not None:
            tail = screen.text().strip()[-600:]
            raise SystemExit(f"{argv[2:]!r} exited early ({proc.returncode}); screen:\n{tail}")
        _quit(proc, reader, argv)
        while reader.pump(0):  # drain what is left (the alt-screen exit)
            pass
        if screen.asked and not screen.synced:
            print(f"  ! {' '.join(argv[-4:])} never bracketed a frame: milestones may be late", file=sys.stderr)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    return seen


def _quit(proc: subprocess.Popen[bytes], reader: _PtyReader, argv: list[str]) -> None:
    """Ask the console to quit (q, then ctrl+c, 3 s each), reading on so it can draw; kill it past that."""
    for key, after in ((b"q", 3.0), (b"\x03", 3.0)):
        try:
            os.write(reader.master, key)
        except OSError:
            break
        end = time.perf_counter() + after
        while proc.poll() is None and time.perf_counter() < end:
            reader.pump(0.05)
        if proc.poll() is not None:
            break
        print(f"  ! {' '.join(argv[-4:])} did not exit on {key!r}", file=sys.stderr)
    if proc.poll() is None:
        print(f"  ! {' '.join(argv[-4:])} did not exit on q or ctrl+c: killed", file=sys.stderr)
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(5)


def header_checks(title: str, view: str) -> Check:
    """The first complete frame: the header bar on the top row, the key hints on the bottom row."""

    def check(s: Screen) -> bool:
        top = s.row(0)
        return title in top and view in top and "Quit" in s.row(ROWS - 1)

    return check


def console_checks(cluster: str, view: str) -> dict[str, Check]:
    paint = header_checks(f" gpuadmin  {cluster}", view)
    if view == "overview":
        def data(s: Screen) -> bool:
            text = s.text()
            return paint(s) and "GPUs by use" in text and "Queues over quota" in text

        def reasons(s: Screen) -> bool:
            return data(s) and "computing (a scheduling dry run)" not in s.text()
    else:
        status = re.compile(rf"\b{view}: (\d+) of \1\b")

        def data(s: Screen) -> bool:
            text = s.text()
            return paint(s) and status.search(text) is not None and "gpu-" in text

        def reasons(s: Screen) -> bool:
            return data(s) and "(reasons: computing)" not in s.text()
    checks = {"paint": paint, "data": data}
    if view != "nodes":
        checks["reasons"] = reasons
    return checks


# ------------------------------------------------------------------------------------------- the CLI


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def help_imports() -> tuple[list[str], list[tuple[int, str]]]:
    """Modules of textual / rich / pydantic that `gpuadmin --help` imports, and its top-level imports
    by cumulative time (µs)."""
    code = ("import sys; sys.argv = ['gpuadmin', '--help']\n"
            "from gpuadmin.cli.main import main\n"
            "main()")
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True)
    heavy, top = [], []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        name = m.group(4)
        if name.split(".")[0] in ("textual", "rich", "pydantic", "pydantic_core"):
            heavy.append(name)
        if len(m.group(3)) == 1:  # imported by the program itself, not by another module
            top.append((int(m.group(2)), name))
    return heavy, sorted(top, reverse=True)[:8]


def stale_bytecode() -> list[str]:
    """gpuadmin modules whose .pyc is missing or out of date: with PYTHONDONTWRITEBYTECODE set (as on this
    machine) each of them is compiled again by every process."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent / "gpuadmin"
    stale = []
    for source in sorted(root.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        try:
            head = cached.read_bytes()[:16]
        except OSError:
            stale.append(str(source.relative_to(root.parent)))
            continue
        flags, mtime, size = struct.unpack("<III", head[4:16])
        info = source.stat()
        if flags == 0 and (mtime, size) != (int(info.st_mtime) & 0xFFFFFFFF, info.st_size & 0xFFFFFFFF):
            stale.append(str(source.relative_to(root.parent)))
    return stale


# ------------------------------------------------------------------------------------------- main


def ms(seconds: float | None) -> str:
    return "   n/a" if seconds is None else f"{seconds * 1000:6.0f}"


def med(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if len(got) == len(values) and got else None


# ------------------------------------------------------------------------------------------- key latency

VIEW_KEYS = {"nodes": "2", "gpus": "3", "topology": "4", "jobs": "6"}  # the console's digit keys
KEY_CASES = {  # case -> (view, key, which row the cursor is put on first)
    "jobs: d on a pending job": ("jobs", "d", "pending"),
    "nodes: d on a node": ("nodes", "d", "first"),
    "gpus: d on a GPU": ("gpus", "d", "first"),
    "topology: PageDown": ("topology", "pagedown", "first"),
    "jobs: PageDown": ("jobs", "pagedown", "first"),
}


async def _key_case(pilot: Any, key: str, row: str) -> float:
    """Seconds from pressing `key` on `view` to the screen's acknowledgement; then back to the view."""
    from textual.widgets import Static

    from gpuadmin.tui.screens.base import ViewScreen
    from gpuadmin.tui.screens.describe import DescribeScreen
    from gpuadmin.tui.widgets.table import RowTable

    app = pilot.app
    screen = app.screen
    assert isinstance(screen, ViewScreen)
    tables = screen.query(RowTable)
    if tables and row == "pending":
        grid = tables.first()
        position = next(i for i, index in enumerate(grid.shown) if grid.rows[index]["STATUS"] == "pending")
        grid._move_to(position)
    elif tables:
        grid = tables.first()
        grid._move_to(0)
    else:
        screen.query_one("#topology-scroll").scroll_to(y=0, animate=False, immediate=True)
    await pilot.pause()
    scrolled = screen.query_one("#rows" if tables else "#topology-scroll")
    working = screen.query("#working")

    def where() -> tuple[int, int]:  # a table's PageDown moves its cursor a page, and scrolls from the next
        return scrolled.scroll_offset.y, grid.cursor if tables else 0

    before = where()

    def acknowledged() -> bool:
        if key == "d":
            shown = bool(working) and working.first(Static).display
            return isinstance(app.screen, DescribeScreen) or shown
        return where() != before

    start = time.perf_counter()
    _send_key(app, key)
    await _until(app, acknowledged)
    drawn: list[bool] = []
    app.call_after_refresh(drawn.append, True)  # and the frame that shows it drawn (the screen refreshed)
    await _until(app, lambda: bool(drawn))
    taken = time.perf_counter() - start
    if key == "d":  # let the describe come (where it shows a working line first), then close it
        await _until(app, lambda: isinstance(app.screen, DescribeScreen))
        await pilot.press("escape")
        await pilot.pause()
    print(f"  {type(screen).__name__} {key}: {taken * 1000:.1f} ms", file=sys.stderr, flush=True)
    return taken


def _send_key(app: Any, key: str) -> None:
    """The key as the terminal driver delivers it. Not `pilot.press`: it waits until the whole process is idle
    (CPU time stops growing, up to 1 s), which a busy service thread never is — that would time the pilot."""
    from textual import events

    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    app._driver.send_message(event)


async def _until(app: Any, condition: Callable[[], bool], timeout: float = 600.0) -> None:
    """Let the event loop run (1 ms steps) until `condition` holds; checked on the loop, between messages."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline or not app.is_running:
            raise SystemExit(f"nothing after {time.monotonic() - deadline + timeout:.0f} s on {app.screen!r}")
        await asyncio.sleep(0.001)


def key_child(state: str, rounds: int) -> None:
    """One side of the key bench, in its own process (PYTHONPATH picks the code): prints JSON."""
    import asyncio
    import json

    import textual._wait

    from gpuadmin.service import Service
    from gpuadmin.tui.app import GpuadminApp

    textual._wait.SLEEP_GRANULARITY = 1 / 200  # as the test suite: the pilot's idle checks in 5 ms steps
    out: dict[str, list[float]] = {case: [] for case in KEY_CASES}

    async def run() -> None:
        # one console, the views opened in turn by their digit keys: the state is loaded once
        app = GpuadminApp(Service(state_dir=Path(state)), theme="gpuadmin-dark", view="jobs")
        async with app.run_test(size=(COLS, ROWS)) as pilot:
            for view in dict.fromkeys(v for v, _, _ in KEY_CASES.values()):
                await pilot.press(VIEW_KEYS[view])
                await _loaded(pilot)
                for case, (case_view, key, row) in KEY_CASES.items():
                    if case_view == view:
                        for _ in range(rounds):
                            out[case].append(await _key_case(pilot, key, row))

    asyncio.run(run())
    print(json.dumps(out))


async def _loaded(pilot: Any) -> None:
    """Until the view shows its data (and the jobs view its reasons), whichever code runs."""
    from textual.widgets import Static

    app = pilot.app
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        screen = app.screen
        if screen.query("#status"):
            text = str(screen.query_one("#status", Static).render())
            if re.search(r": (\d+) of \1", text) and "computing" not in text:
                return
        elif screen.query("#topology-scroll") and "gpu-" in str(app.export_screenshot()):
            return
    raise SystemExit("the view never showed its data")


def keys_main(args: argparse.Namespace) -> None:
    import json

    from bench.common import baseline_checkout

    source = generated_file(1024, 100_000)
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        state = Path(args.state) if args.state else Path(tmp) / "state"
        entry = [sys.executable, "-m", "gpuadmin.cli.main"]
        if not args.state:
            subprocess.run([*entry, "--state", str(state), "init", "--from", str(source)], check=True,
                           capture_output=True)
        subprocess.run([*entry, "--state", str(state), "get", "jobs"], check=True, stdout=subprocess.DEVNULL)
        trees = {"this tree": here}
        if args.baseline_rev:
            trees[f"baseline {args.baseline_rev}"] = stack.enter_context(baseline_checkout(args.baseline_rev))
        results: dict[str, dict[str, list[float]]] = {name: {c: [] for c in KEY_CASES} for name in trees}
        for _ in range(args.rounds):  # alternating, so a burst of load hits both sides alike
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                child = [sys.executable, str(Path(__file__).resolve()), "--key-child", str(state),
                         "--presses", str(args.presses)]
                print(f"{name}:", file=sys.stderr, flush=True)
                done = subprocess.run(child, env=env, cwd=tree, check=True, stdout=subprocess.PIPE, text=True)
                for case, times in json.loads(done.stdout.splitlines()[-1]).items():
                    results[name][case] += times
    print(f"key -> acknowledgement, 1024 nodes / 100000 jobs (reasons cached), pilot at {COLS}x{ROWS}; "
          f"{args.rounds} round(s) x {args.presses} presses; load average {os.getloadavg()[0]:.1f}")
    names = list(trees)
    print(f"{'case':28}" + "".join(f"{n[:22]:>24}" for n in names) + ("   ratio" if len(names) > 1 else ""))
    for case in KEY_CASES:
        medians = [statistics.median(results[n][case]) for n in names]
        line = f"{case:28}" + "".join(f"{m * 1000:21.1f} ms" for m in medians)
        if len(names) > 1:
            line += f"   {medians[1] / medians[0]:6.1f}x"
        print(line)
    print("target: <= 50 ms in every view (this tree)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5, help="starts of each console case")
    parser.add_argument("--cli-repeat", type=int, default=7, help="runs of each CLI command")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a console start may take")
    parser.add_argument("--keys", action="store_true", help="key -> acknowledgement latency instead of starts")
    parser.add_argument("--rounds", type=int, default=3, help="--keys: processes per side, alternating")
    parser.add_argument("--baseline-rev", help="--keys: also run REV's code (a temporary git worktree)")
    parser.add_argument("--presses", type=int, default=3, help="--keys: presses of each key per process")
    parser.add_argument("--state", help="--keys: a state made from that inventory already (skips its init)")
    parser.add_argument("--key-child", metavar="STATE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.key_child:
        key_child(args.key_child, args.presses)
    elif args.keys:
        keys_main(args)
    else:
        starts_main(args)


def starts_main(args: argparse.Namespace) -> None:
    """Console start and CLI commands, whole process (the module's first part)."""

    bindir = Path(sys.executable).parent
    entry = [str(bindir / "gpuadmin")] if (bindir / "gpuadmin").exists() else [sys.executable, "-m",
                                                                                 "gpuadmin.cli.main"]
    source = generated_file(1024, 10_000)
    found = re.search(r"^cluster:\s*(\S+)", source.read_text(encoding="utf-8"), re.M)
    assert found, "no cluster name in the generated inventory"
    cluster = found.group(1)

    with tempfile.TemporaryDirectory() as tmp:
        pristine, cached = Path(tmp) / "pristine", Path(tmp) / "cached"
        subprocess.run([*entry, "--state", str(pristine), "init", "--from", str(source)], check=True,
                       capture_output=True)
        shutil.copytree(pristine, cached)
        subprocess.run([*entry, "--state", str(cached), "get", "jobs"], check=True, stdout=subprocess.DEVNULL)

        def fresh(i: int) -> Path:
            run_dir = Path(tmp) / f"run{i}"
            if run_dir.exists():
                shutil.rmtree(run_dir)
            shutil.copytree(pristine, run_dir)
            return run_dir

        def bare(_run: int) -> list[str]:
            return [sys.executable, "-c", BASELINE_APP]

        def console(view: str, state: Path | None) -> Callable[[int], list[str]]:
            return lambda i: [*entry, "--state", str(state or fresh(i)), "tui", "--view", view]

        cases: list[tuple[str, Callable[[int], list[str]], dict[str, Check]]] = [
            ("bare Textual app (baseline)", bare, {"paint": header_checks(" baseline  bare-cluster", "overview")})
        ]
        cases += [(f"tui --view {v}", console(v, None), console_checks(cluster, v))
                  for v in ("overview", "nodes", "jobs")]
        cases += [(f"tui --view {v}, reasons cached", console(v, cached), console_checks(cluster, v))
                  for v in ("overview", "jobs")]

        results: dict[str, list[dict[str, float | None]]] = {label: [] for label, _, _ in cases}
        for i in range(args.repeat):  # interleaved, so a burst of load hits every case alike
            for label, command, checks in cases:
                results[label].append(run_console(command(i), checks, args.timeout))

        cli = {"python -c pass (baseline)": [sys.executable, "-c", "pass"],
               "gpuadmin --help": [*entry, "--help"],
               "gpuadmin get nodes -o json": [*entry, "--state", str(pristine), "get", "nodes", "-o", "json"]}
        times: dict[str, list[float]] = {label: [] for label in cli}
        for _ in range(args.cli_repeat):
            for label, argv in cli.items():
                times[label].append(timed(argv))
    heavy, top = help_imports()

    print(f"state: 1024 nodes, 10000 jobs (generated, seed 0); console on a {COLS}x{ROWS} pty, "
          f"TERM=xterm-256color; load average {os.getloadavg()[0]:.1f}")
    print(f"\nconsole start, whole process: ms from spawn, median of {args.repeat} "
          f"(ratio: to the bare Textual app's first frame)")
    base = med([r["paint"] for r in results[cases[0][0]]])
    print(f"{'':38}{'paint':>8}{'data':>8}{'reasons':>9}{'data min-max':>14}   ratio paint / data")
    for label, _, _ in cases:
        runs = results[label]
        median = {m: med([r.get(m) for r in runs]) if m in runs[0] else None for m in ("paint", "data", "reasons")}
        if label.startswith("bare"):
            spread = [r["paint"] or 0.0 for r in runs]
            print(f"{label:38}{ms(median['paint']):>8}{'':17}{ms(min(spread)):>8}-{ms(max(spread)).strip()}")
            continue
        data = [r["data"] or 0.0 for r in runs]
        ratio = " / ".join("n/a" if (v is None or not base) else f"{v / base:.1f}x"
                           for v in (median["paint"], median["data"]))
        reasons = ms(median["reasons"]) if "reasons" in runs[0] else "     -"
        print(f"{label:38}{ms(median['paint']):>8}{ms(median['data']):>8}{reasons:>9}"
              f"{ms(min(data)):>8}-{ms(max(data)).strip():<5}   {ratio}")
    print("target: the first frame with the view's data (the 'data' column) <= 1000 ms")

    print(f"\nCLI, whole process: median of {args.cli_repeat} (ratio: to python -c pass)")
    floor = statistics.median(times["python -c pass (baseline)"])
    notes = {"gpuadmin --help": "  (target <= 150 ms)", "gpuadmin get nodes -o json": "  (target <= 600 ms)"}
    for label, runs_s in times.items():
        value = statistics.median(runs_s)
        print(f"{label:30}{value * 1000:7.1f} ms   ratio {value / floor:5.1f}x{notes.get(label, '')}")
    print("`gpuadmin --help` imports of textual / rich / pydantic: " + (", ".join(heavy) if heavy else "none"))
    stale = stale_bytecode()
    print(f"gpuadmin modules without an up-to-date .pyc: {len(stale)} {stale if stale else ''} "
          f"(PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
    if statistics.median(times["gpuadmin --help"]) > 0.150:
        print("over target; its heaviest top-level imports (cumulative, -X importtime, one run):")
        for micros, name in top:
            print(f"  {micros / 1000:6.1f} ms  {name}")


if __name__ == "__main__":
    main()
