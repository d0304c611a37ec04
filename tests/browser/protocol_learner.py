"""A learner's page without a browser: Streamlit's websocket protocol, spoken the way its frontend speaks it.

For tests/browser/load_room.py `--clients protocol`: N learners on one server where the server's machine also has to
host the learners' browsers is a test of Chromium (one Chromium drawing 20 pages' charts took 1.5 of the 2 cores
before anyone trained, and pages fell 90-160 s behind the server). In a workshop every learner's browser runs on
their own laptop. A ProtocolLearner asks the server for exactly what a browser asks for, so the server does all of
its work (every script and fragment run, every chart's data, every message sent), but nothing is drawn:

- on connect, a `rerun_script` BackMsg with the page's query string (the frontend's first message);
- the query string follows the server's `page_info_changed` (the app puts `?run=<id>` in the URL);
- every `auto_rerun` (a fragment's `run_every`) becomes a timer that asks for that fragment's rerun with
  `is_auto_rerun`, as the frontend does; a tick is skipped while a script run of the page is in progress (what
  Streamlit's frontend does since its fix for stale auto-reruns), and `stop_auto_rerun` and each new full run end
  the timers;
- a click on a button is the rerun with that widget's trigger value.

It records what the in-page tracker of load_room.py records (TRACKER_JS: the click, each change of the status line's
state, the first step > 0, messages sent and received), from the markdown deltas the server sends. Deliberately
left out: cookies (each connection is a new learner), widget values other than button triggers (the server keeps
a widget's last value when a rerun does not carry it), and the ForwardMsg cache (every message is sent in full,
slightly more than a browser that already holds it is sent).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect

STATUS = re.compile(r"^\*\*step ([\d,]+)(?: / ([\d,]+))?(.*)\*\*$", re.S)


class Loop:
    """One asyncio loop in a daemon thread for all protocol learners (callers stay synchronous)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="protocol-learners", daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float | None = None):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


class ProtocolLearner:
    def __init__(self, loop: Loop, label: str, cookie: str = ""):
        """`cookie`: a Cookie header sent with every connection (a browser that keeps its learner across page
        loads, e.g. "tinygpt_learner=<token>"); "" is a new learner at each connection."""
        self.loop, self.label, self.cookie = loop, label, cookie
        self.ws = None
        self.reader: asyncio.Task | None = None
        self.timers: dict[str, asyncio.Task] = {}
        self.running = False  # a script run of this page is in progress (session_status_changed)
        self.query = ""
        self.page_hash = ""
        self.page_name = ""
        self.buttons: dict[str, tuple[str, bool]] = {}  # label -> (widget id, disabled)
        self.exceptions = 0
        self.texts: dict[tuple, str] = {}  # delta path -> markdown body (the page as text, roughly)
        self.closed_with: int | None = None
        self.registered: set[str] = set()  # fragments whose auto_rerun came in the run in progress
        self._reset_tracker()

    def _reset_tracker(self) -> None:
        self.lt = {"click": None, "result": None, "firstStep": None, "key": None, "text": None, "trans": [],
                   "sent": [], "recvBytes": 0, "recv": 0, "run": None, "lastRecv": None, "state": None}  # fmt: skip

    # ---------------------------------------------------------------- actions (called from the script's thread)

    def goto(self, url: str, timeout_s: float = 60) -> None:
        """Open `url` (a new connection: a new session, as a page load is)."""
        self.loop.run(self._goto(url), timeout_s)

    def click(self, label: str) -> None:
        self.loop.run(self._click(label), 30)

    def close(self) -> None:
        try:
            self.loop.run(self._close(), 10)
        except Exception:  # noqa: BLE001 - the loop or the socket is gone already
            pass

    def summary(self) -> dict:
        lt, now = self.lt, time.time() * 1000
        sent = [t for t in lt["sent"] if lt["click"] and t >= lt["click"]]
        gaps = [b - a for a, b in zip(sent, sent[1:], strict=False)]
        return {**{k: lt[k] for k in ("click", "result", "firstStep", "state", "text", "run", "recv", "recvBytes")},
                "trans": list(lt["trans"]), "nsent": len(lt["sent"]), "frames": None, "visibility": "protocol",
                "sinceFrame": None, "sinceRecv": now - lt["lastRecv"] if lt["lastRecv"] else None,
                "sinceSend": now - lt["sent"][-1] if lt["sent"] else None,
                "maxGap": max([*gaps, now - sent[-1]]) if sent else None}  # fmt: skip

    def sent_between(self, a_ms: float, b_ms: float) -> int:
        return sum(1 for t in self.lt["sent"] if a_ms <= t <= b_ms)

    def ready(self) -> bool:
        """The Train page is drawn (its Train button exists) and no script run is in progress."""
        return "Train" in self.buttons and not self.running

    def page_text(self) -> str:
        return "\n".join(self.texts[k] for k in sorted(self.texts))

    # ---------------------------------------------------------------- the protocol (on the loop)

    async def _goto(self, url: str) -> None:
        await self._close()
        self._reset_tracker()
        parts = urlsplit(url)
        self.query, self.page_hash, self.buttons, self.texts = parts.query, "", {}, {}
        self.page_name = parts.path.strip("/")  # "" is the main page; "attention" is pages/attention.py
        ws_url = f"ws://{parts.netloc}/_stcore/stream"
        self.ws = await connect(
            ws_url, subprotocols=["streamlit"], origin=f"http://{parts.netloc}", max_size=None,
            open_timeout=60, ping_interval=None, additional_headers={"Cookie": self.cookie} if self.cookie else None,
        )  # fmt: skip
        self.reader = asyncio.get_running_loop().create_task(self._read())
        await self._rerun()

    async def _click(self, label: str) -> None:
        widget_id, _ = self.buttons[label]
        if label == "Train" and self.lt["click"] is None:
            self.lt["click"] = time.time() * 1000
        await self._rerun(trigger=widget_id)

    async def _close(self) -> None:
        for task in self.timers.values():
            task.cancel()
        self.timers.clear()
        if self.ws is not None:
            await self.ws.close()
            self.ws = None
        if self.reader is not None:
            self.reader.cancel()
            self.reader = None

    async def _send(self, msg: BackMsg) -> None:
        if self.ws is None:
            return
        self.lt["sent"].append(time.time() * 1000)
        await self.ws.send(msg.SerializeToString())

    async def _rerun(self, trigger: str | None = None, fragment: str | None = None) -> None:
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_script_hash = self.page_hash
        if self.page_name and not self.page_hash:  # the first run of a page opened by its address, as the frontend asks
            state.page_name = self.page_name
        if trigger is not None:
            widget = state.widget_states.widgets.add()
            widget.id, widget.trigger_value = trigger, True
        if fragment is not None:
            state.fragment_id, state.is_auto_rerun = fragment, True
        await self._send(msg)

    async def _tick(self, fragment: str, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if not self.running:
                await self._rerun(fragment=fragment)

    async def _read(self) -> None:
        try:
            async for data in self.ws:
                self.lt["recv"] += 1
                self.lt["recvBytes"] += len(data)
                self.lt["lastRecv"] = time.time() * 1000
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._handle(msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the connection ended: say how, keep the rest
            self.closed_with = getattr(getattr(exc, "rcvd", None), "code", -1)

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":  # every run starts with one, a fragment's run too
            self.page_hash = msg.new_session.page_script_hash or self.page_hash
            self.registered = set()
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "script_finished":
            self.running = False
            if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:  # a full run: timers it did not renew end
                for fragment in [f for f in self.timers if f not in self.registered]:
                    self.timers.pop(fragment).cancel()
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
            run = re.search(r"(?:^|&)run=([A-Za-z0-9_-]+)", self.query)
            if run:
                self.lt["run"] = run.group(1)
        elif kind == "auto_rerun":
            fragment, interval = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            self.registered.add(fragment)
            old = self.timers.pop(fragment, None)
            if old is not None:
                old.cancel()
            self.timers[fragment] = asyncio.get_running_loop().create_task(self._tick(fragment, interval))
        elif kind == "stop_auto_rerun":
            for fragment in msg.stop_auto_rerun.fragment_ids:
                task = self.timers.pop(fragment, None)
                if task is not None:
                    task.cancel()
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._element(tuple(msg.metadata.delta_path), msg.delta.new_element)

    def _element(self, path: tuple, element) -> None:  # noqa: ANN001 - a Streamlit Element proto
        which = element.WhichOneof("type")
        if which == "button":
            self.buttons[element.button.label] = (element.button.id, element.button.disabled)
        elif which == "exception":
            self.exceptions += 1
        elif which in ("markdown", "alert"):
            body = element.markdown.body if which == "markdown" else element.alert.body
            self.texts[path] = body
            status = STATUS.match(re.sub(r"\\(.)", r"\1", body))  # the status line is markdown-escaped text
            if status:
                self._status(re.sub(r"\\(.)", r"\1", body).strip("*"), int(status.group(1).replace(",", "")))

    def _status(self, line: str, step: int) -> None:
        """The in-page tracker's rules (load_room.TRACKER_JS), on the status line `step N / M · ... · state`."""
        lt, now = self.lt, time.time() * 1000
        m = re.match(r"^(\w+)(?: \(position (\d+))?", line.split(" · ")[-1])
        state = m.group(1) if m else "?"
        pos = int(m.group(2)) if m and m.group(2) else None
        if lt["click"] is not None and lt["result"] is None and (step > 0 or state == "queued"):
            lt["result"] = now
        if lt["click"] is not None and lt["firstStep"] is None and step > 0:
            lt["firstStep"] = now
        key = f"{state}#{pos}"
        if key != lt["key"]:
            lt["key"] = key
            lt["trans"].append([now, state, step, pos])
        lt["state"], lt["text"] = state, line
