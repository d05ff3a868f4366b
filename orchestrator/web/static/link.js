// The page's one WebSocket to go19: JSON messages both ways, reconnecting after a second
// when the server goes away, until the server has said there is nothing more to show.

export function connect({onMessage, onState}) {
  let socket = null;
  let finished = false;
  const scheme = location.protocol === "https:" ? "wss" : "ws";

  function open() {
    socket = new WebSocket(`${scheme}://${location.host}/ws`);
    socket.onopen = () => onState("open");
    socket.onmessage = (ev) => onMessage(JSON.parse(ev.data));
    socket.onclose = (ev) => {
      if (finished) {
        onState("finished");
        return;
      }
      onState("lost", ev.reason);  // the server's reason, if it gave one (too many pages)
      setTimeout(open, 1000);
    };
  }

  open();
  return {
    send(message) {
      if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    },
    // The server said this was its last message: a close that follows is the end.
    finish() { finished = true; },
  };
}

export function showLink(state, lostText, reason) {
  document.body.classList.toggle("connecting", state !== "open" && state !== "finished");
  document.getElementById("link-state").textContent =
    state === "open" || state === "finished" ? "" :
    state === "lost" ? lostText + (reason ? ` (${reason})` : "") : "connecting…";
}
