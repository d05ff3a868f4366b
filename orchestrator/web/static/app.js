// The page: one WebSocket; draws the snapshots the server sends and sends clicks.
// No game logic here: the server decides legality, scoring and whose turn it is.
"use strict";

const $ = (id) => document.getElementById(id);
let socket = null;
let kind = null;           // "play" or "watch", from the first message
let formFilled = false;    // the form is filled from the server once, then edited here
let pngVersion = null;
let watched = null;        // watch mode: the selected game number
let replay = null;         // watch mode: frames of a finished game

const board = new Board($("board"), (p) => send({type: "click", point: p}),
                        (p) => { $("hover").textContent = p === null ? "—" : pointName(p); });

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws`);
  socket.onopen = () => { document.body.classList.remove("connecting"); $("link-state").textContent = ""; };
  socket.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (kind === null) start(msg.type);
    if (msg.type === "play") showPlay(msg); else showWatch(msg);
  };
  socket.onclose = () => {
    document.body.classList.add("connecting");
    $("link-state").textContent = "connection to go19 lost — retrying…";
    setTimeout(connect, 1000);
  };
}

function start(type) {
  kind = type;
  document.body.classList.add(type);
  $("kind").textContent = type === "play" ? "play" : "watch";
  if (type === "watch") {
    $("slider").addEventListener("input", () => showFrame(Number($("slider").value)));
    return;
  }
  $("new").onclick = () => send({type: "new", settings: formSettings()});
  $("pass").onclick = () => send({type: "pass"});
  $("resign").onclick = () => send({type: "resign"});
  $("cancel").onclick = () => send({type: "cancel"});
  $("check1").onclick = () => send({type: "check", server: 1, settings: formSettings()});
  $("check2").onclick = () => send({type: "check", server: 2, settings: formSettings()});
  for (const id of ["training", "auto-restart", "auto-reconnect1", "auto-reconnect2"]) {
    $(id).onchange = () => send({type: "settings", settings: formSettings()});
  }
  $("mode").onchange = showModeRows;
  $("show-png").onchange = () => { $("vlm-png").classList.toggle("hidden", !$("show-png").checked); pngVersion = null; };
}

// -- play ------------------------------------------------------------------------

function formSettings() {
  const port2 = $("port2").value.trim();
  return {
    mode: $("mode").value, color: $("colour").value,
    host1: $("host1").value.trim(), port1: Number($("port1").value),
    host2: $("host2").value.trim(), port2: port2 === "" ? null : Number(port2),
    timeout: Number($("timeout").value), komi: Number($("komi").value),
    training: $("training").checked, auto_restart: $("auto-restart").checked,
    auto_reconnect1: $("auto-reconnect1").checked, auto_reconnect2: $("auto-reconnect2").checked,
  };
}

function fillForm(s) {
  $("mode").value = s.mode; $("colour").value = s.color;
  $("host1").value = s.host1; $("port1").value = s.port1;
  $("host2").value = s.host2; $("port2").value = s.port2 === null ? "" : s.port2;
  $("timeout").value = s.timeout; $("komi").value = s.komi;
  $("training").checked = s.training; $("auto-restart").checked = s.auto_restart;
  $("auto-reconnect1").checked = s.auto_reconnect1; $("auto-reconnect2").checked = s.auto_reconnect2;
  showModeRows();
}

function showModeRows() {
  const mode = $("mode").value;
  $("server1").classList.toggle("hidden", !["av", "hv", "vv"].includes(mode));
  $("server2").classList.toggle("hidden", mode !== "vv");
  $("colour-row").classList.toggle("hidden", mode === "hh" || mode === "vv");
  $("colour-label").textContent = mode === "av" ? "AI colour" : "your colour";
}

function showPlay(msg) {
  if (!formFilled) { fillForm(msg.settings); formFilled = true; }
  const g = msg.game;
  board.draw(g.stones, g.last, g.fallbacks, g.move);
  $("players").textContent = `game ${g.number} · ${msg.modes[g.mode]} · Black: ${g.black} · ` +
    `White: ${g.white} · move ${g.move} · captures B ${g.captures.black} W ${g.captures.white}` +
    (g.last_pass ? " · last move: pass" : "");
  $("turn").textContent = msg.turn;
  $("turn").classList.toggle("over", g.over);
  $("status").textContent = msg.status.text;
  $("status").className = msg.status.level;
  $("estimate").textContent = msg.estimate;
  for (const i of ["1", "2"]) {
    const label = $(`server${i}-label`);
    label.textContent = msg.servers[i].label;
    label.className = "label " + msg.servers[i].colour;
  }
  $("cancel").disabled = !msg.can_cancel;
  $("finished-count").textContent = msg.finished;
  $("saved").textContent = msg.saved.length ? `· saved ${msg.saved[msg.saved.length - 1]}` : "";
  if ($("show-png").checked && msg.vlm_png !== null && msg.vlm_png !== pngVersion) {
    pngVersion = msg.vlm_png;
    $("vlm-png").src = `/vlm.png?v=${pngVersion}`;
  }
}

// -- watch -----------------------------------------------------------------------

// Rows are updated in place (by game number), not rebuilt: a row that is replaced
// between mouse-down and mouse-up would swallow the click.
function gameRows(tbody, games, columns) {
  const rows = new Map([...tbody.rows].map((tr) => [Number(tr.dataset.game), tr]));
  games.forEach((g, i) => {
    let tr = rows.get(g.number);
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.game = g.number;
      for (const c of columns) {
        const td = document.createElement("td");
        if (c === "sgf") {
          const a = document.createElement("a");
          a.href = g.sgf; a.textContent = "SGF"; a.download = "";
          td.appendChild(a);
        }
        tr.appendChild(td);
      }
      tr.onclick = (ev) => {
        if (ev.target.tagName === "A") return;
        if (g.number !== watched) replay = null;  // keep the frames shown until new ones come
        watched = g.number;
        for (const other of document.querySelectorAll("#games tr.selected")) other.classList.remove("selected");
        tr.classList.add("selected");
        send({type: "watch", game: g.number});
      };
    }
    rows.delete(g.number);
    columns.forEach((c, k) => {
      if (c !== "sgf" && tr.cells[k].textContent !== String(g[c])) tr.cells[k].textContent = String(g[c]);
    });
    tr.classList.toggle("selected", g.number === watched);
    if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
  });
  for (const gone of rows.values()) gone.remove();
}

function showWatch(msg) {
  const h = msg.headline;
  for (const k of ["run", "progress", "wld", "elo", "sprt", "stopping"]) $(k).textContent = h[k];
  gameRows($("live-games").tBodies[0], msg.live,
           ["number", "black", "white", "move", "estimate", "fallbacks", "waiting_on"]);
  gameRows($("finished-games").tBodies[0], msg.finished,
           ["number", "black", "white", "result", "moves", "fallbacks", "sgf"]);
  const v = msg.view;
  if (!v) {
    $("players").textContent = "click a game to watch it";
    return;
  }
  if (v.kind === "live") {
    replay = null;
    $("replay").classList.add("hidden");
    board.draw(v.stones, v.last, [], v.move);
    $("players").textContent = `game ${v.number} (live) · Black: ${v.black} · White: ${v.white} · move ${v.move}`;
    $("turn").textContent = v.waiting_on ? `waiting on ${v.waiting_on}` : "";
    $("status").textContent = v.fallbacks ? `${v.fallbacks} fallback move(s) so far` : "";
    $("estimate").textContent = v.estimate;
  } else if (v.kind === "replay" && !v.same) {
    if (v.error) { $("status").textContent = v.error; return; }
    // The same game again (the page asked anew): stay at the move being looked at.
    const same = replay && replay.number === v.number && replay.moves.length === v.moves.length;
    replay = v;
    $("replay").classList.remove("hidden");
    $("slider").max = v.moves.length;
    if (!same) $("slider").value = v.moves.length;
    $("sgf-link").href = v.sgf;
    $("turn").textContent = `${v.result} (${v.reason})`;
    showFrame(Number($("slider").value));
  } else if (v.kind === "gone") {
    $("players").textContent = `game ${v.number} is not in this run`;
  }
}

function showFrame(k) {
  if (!replay) return;
  const move = k > 0 ? replay.moves[k - 1] : null;
  const marks = [];
  replay.moves.slice(0, k).forEach((m) => {
    if (m.source && m.source.startsWith("fallback") && m.point !== null) marks.push(m.point);
  });
  board.draw(replay.frames[k], move ? move.point : null, marks, k);
  $("players").textContent = `game ${replay.number} (finished) · Black: ${replay.black} · White: ${replay.white}`;
  $("slider-label").textContent = `move ${k} of ${replay.moves.length}` +
    (move && move.point === null ? ` (${move.colour} passed)` : "");
  $("status").textContent = move && move.source ? `move ${k}: ${move.source}` : "";
  $("estimate").textContent = replay.estimates[k];
}

connect();
