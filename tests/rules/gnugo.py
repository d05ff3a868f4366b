"""A small blocking GTP driver for GNU Go, for the cross-check tests only.

Commands may be sent in batches: each reply is read as lines up to a blank
line, starting ``= `` (success) or ``? `` (failure).
"""

from __future__ import annotations

import subprocess

from tests.conftest import GNUGO


class GtpError(RuntimeError):
    pass


class GnuGo:
    def __init__(self, *options: str) -> None:
        assert GNUGO is not None
        self.process = subprocess.Popen(
            [GNUGO, "--mode", "gtp", "--chinese-rules", "--positional-superko", *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def batch(self, commands: list[str]) -> list[str]:
        """Send every command, then read one reply each; raise on a ``?`` reply.

        The replies to one batch must fit in the pipe buffer (64 KiB), which a few
        thousand short replies do.
        """
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("".join(f"{c}\n" for c in commands))
        self.process.stdin.flush()
        replies = []
        for command in commands:
            lines: list[str] = []
            while True:
                line = self.process.stdout.readline()
                if not line:
                    raise GtpError(f"GNU Go exited during {command!r}")
                if line.strip():
                    lines.append(line.rstrip("\n"))
                elif lines:
                    break
            text = "\n".join(lines)
            if not text.startswith("="):
                raise GtpError(f"{command!r}: {text}")
            replies.append(text[1:].strip())
        return replies

    def __call__(self, command: str) -> str:
        return self.batch([command])[0]

    def close(self) -> None:
        try:
            self("quit")
        except (GtpError, OSError):
            pass
        self.process.wait(timeout=10)

    def __enter__(self) -> GnuGo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
