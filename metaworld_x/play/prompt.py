"""A terminal prompt on a background thread: type a new instruction while the viewer runs."""

import queue
import sys
import threading


class InstructionPrompt:
    """Reads lines from stdin on a daemon thread; the viewer loop polls them without blocking.

    A daemon thread never keeps the process alive after the viewer closes,
    and stdin's end (Ctrl-D, or no terminal) or an unreadable stdin (closed,
    or captured as under pytest) simply stops the prompt.
    """

    def __init__(self, prompt: str = "instruction> ", stream=None):
        self._stream = stream if stream is not None else sys.stdin
        self._prompt = prompt
        self._lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, name="instruction-prompt", daemon=True)

    def start(self) -> "InstructionPrompt":
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            interactive = hasattr(self._stream, "isatty") and self._stream.isatty()
            while True:
                if interactive:
                    print(self._prompt, end="", flush=True)
                line = self._stream.readline()
                if not line:  # end of input
                    return
                if line.strip():
                    self._lines.put(line.strip())
        except (OSError, ValueError):  # closed or unreadable: no prompt, the viewer runs on
            return

    def poll(self) -> str | None:
        """The oldest instruction typed since the last poll, or None."""
        try:
            return self._lines.get_nowait()
        except queue.Empty:
            return None
