"""`streamlit run` with a probe inside: what each browser session's websocket is sent and how far behind it is.

    .venv/bin/python tests/browser/server_probe.py PROBE.jsonl -- app.py --server.headless true ...

A diagnostic for tests/browser/load_room.py (`--probe`), not part of the app. Every second it appends one JSON line
to PROBE.jsonl: per connected websocket client, the messages waiting in its send queue (Streamlit's Starlette
server keeps at most WEBSOCKET_MAX_SEND_QUEUE_SIZE, 500, then drops the session while the socket stays open),
the messages queued and the BackMsgs received since the start, whether the session is still active in the runtime,
and whether the client was dropped for a full queue. SIGUSR1 writes every thread's stack to PROBE.stacks.
"""

from __future__ import annotations

import faulthandler
import json
import signal
import sys
import threading
import time
from pathlib import Path


def main() -> None:
    probe_path = Path(sys.argv[1])
    args = sys.argv[sys.argv.index("--") + 1 :]
    stacks = open(probe_path.with_suffix(".stacks"), "w")  # noqa: SIM115 - open for the server's life
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)

    from streamlit.runtime import Runtime
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.session_manager import SessionClientDisconnectedError
    from streamlit.web.server.starlette import starlette_websocket as ws

    clients: dict[int, dict] = {}
    lock = threading.Lock()
    original_write = ws.StarletteSessionClient.write_forward_msg
    original_init = ws.StarletteSessionClient.__init__

    def init(self, websocket) -> None:  # noqa: ANN001
        original_init(self, websocket)
        with lock:
            clients[id(self)] = {"client": self, "t0": time.time(), "queued": 0, "max_depth": 0, "dropped_at": None}

    def write(self, msg) -> None:  # noqa: ANN001
        entry = clients.get(id(self))
        try:
            original_write(self, msg)
        except SessionClientDisconnectedError:
            if entry is not None and entry["dropped_at"] is None and self._send_queue.full():
                entry["dropped_at"] = time.time()
            raise
        if entry is not None:
            entry["queued"] += 1
            entry["max_depth"] = max(entry["max_depth"], self._send_queue.qsize())

    ws.StarletteSessionClient.__init__ = init
    ws.StarletteSessionClient.write_forward_msg = write

    # Per session: the BackMsgs it received (by type) and the script runs that started and ended.
    sessions: dict[str, dict] = {}
    original_backmsg = AppSession.handle_backmsg
    original_event = AppSession._on_scriptrunner_event

    def handle_backmsg(self, msg) -> None:  # noqa: ANN001
        entry = sessions.setdefault(self.id, {"backmsgs": {}, "runs_started": 0, "runs_ended": 0, "last_msg": None})
        kind = msg.WhichOneof("type")
        entry["backmsgs"][kind] = entry["backmsgs"].get(kind, 0) + 1
        entry["last_msg"] = time.time()
        return original_backmsg(self, msg)

    def on_event(self, sender, event, **kwargs) -> None:  # noqa: ANN001
        entry = sessions.setdefault(self.id, {"backmsgs": {}, "runs_started": 0, "runs_ended": 0, "last_msg": None})
        name = getattr(event, "name", str(event))
        if name == "SCRIPT_STARTED":
            entry["runs_started"] += 1
            entry["last_start"] = time.time()
        elif name.startswith(("SCRIPT_STOPPED", "FRAGMENT_STOPPED")):
            entry["runs_ended"] += 1
            entry["last_end"] = time.time()
        return original_event(self, sender, event, **kwargs)

    AppSession.handle_backmsg = handle_backmsg
    AppSession._on_scriptrunner_event = on_event

    def sample() -> None:
        with probe_path.open("a") as out:
            while True:
                time.sleep(1.0)
                if not Runtime.exists():
                    continue
                active = {id(i.client): i.session.id for i in Runtime.instance()._session_mgr.list_active_sessions()}
                with lock:
                    rows = [
                        {
                            "client": key,
                            "session": active.get(key),
                            "depth": e["client"]._send_queue.qsize(),
                            "max_depth": e["max_depth"],
                            "queued": e["queued"],
                            "closed": e["client"]._closed.is_set(),
                            "dropped_at": e["dropped_at"],
                        }
                        for key, e in clients.items()
                    ]
                for row in rows:
                    row.update(sessions.get(row["session"] or "", {}))
                out.write(json.dumps({"t": time.time(), "clients": rows}) + "\n")
                out.flush()

    threading.Thread(target=sample, name="server-probe", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *args]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
