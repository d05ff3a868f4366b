// `collect --web`: the run's headline and games, a game in flight move by move, a
// finished game stepped through (slider, ← → Home End). The server sends a finished
// game once, as its moves and what each captured; the page only applies them, and
// asks the server for the estimate of a position it stops at.

import {Board} from "./board.js";
import {connect, showLink} from "./link.js";

const $ = (id) => document.getElementById(id);
let board = null;
let boardInfo = null;
let watched = null;   // the selected game's number
let view = null;      // the game shown: a live view, or a replay with its frames
let frame = 0;        // the replay's move shown
let timer = null;
let picked = false;   // the page chose its first game (the newest live one)

const link = connect({
  // What is due at once comes as one array of messages.
  onMessage: (msg) => {
    for (const m of Array.isArray(msg) ? msg : [msg]) (handlers[m.type] || (() => {}))(m);
  },
  onState: (state, reason) => {
    showLink(state, "connection to collect lost — retrying…", reason);
    if (state === "finished") $("link-state").textContent = "collect has exited";
  },
});

const handlers = {
  hello(msg) {
    boardInfo = msg.board;
    if (!board || board.size !== boardInfo.size) {
      board = new Board($("board"), boardInfo, {
        onHover: (p) => { $("hover").textContent = p === null ? "—" : board.pointName(p); },
      });
    }
    if (watched !== null) watch(watched);  // reconnected: the server forgot the choice
  },
  run(msg) {
    const h = msg.headline;
    for (const k of ["run", "progress", "verdict", "quality", "stopping"]) $(k).textContent = h[k];
    gameRows($("live-games").tBodies[0], msg.live,
             ["number", "black", "white", "move", "estimate", "fallbacks", "waiting_on"]);
    if (!picked && msg.live.length) {
      picked = true;
      watch(Math.max(...msg.live.map((g) => g.number)));
    }
    if (msg.over) {
      link.finish();
      const over = $("over");
      over.replaceChildren(msg.over.text);
      if (msg.over.report) {
        // The page's own copy of report.html: it opens after collect has exited too
        // (a file:// link is one a browser will not follow from an http page).
        const a = document.createElement("a");
        a.href = URL.createObjectURL(new Blob([msg.over.report.html], {type: "text/html"}));
        a.target = "_blank";
        a.textContent = "open the report";
        a.id = "report-link";
        const where = document.createElement("span");
        where.className = "where";
        where.textContent = ` (${msg.over.report.path})`;
        over.append(" · ", a, where);
      }
      over.hidden = false;
    }
  },
  finished(msg) {
    gameRows($("finished-games").tBodies[0], msg.finished,
             ["number", "black", "white", "result", "moves", "fallbacks", "sgf"]);
    if (!picked && msg.finished.length) {
      picked = true;
      watch(msg.finished[0].number);
    }
  },
  game(msg) {
    if (msg.number !== watched) return;
    if (msg.kind === "live") showLive(msg);
    else if (msg.kind === "replay") showReplay(msg);
    else $("game-line").textContent = `game ${msg.number} is not in this run`;
  },
  estimate(msg) {
    if (view && view.kind === "replay" && msg.game === view.number && msg.move === frame) {
      $("estimate").textContent = msg.line;
    }
  },
};

function watch(number) {
  watched = number;
  picked = true;
  for (const tr of document.querySelectorAll("#panel tbody tr")) {
    tr.classList.toggle("selected", Number(tr.dataset.game) === number);
  }
  link.send({type: "watch", game: number});
}

// Rows are updated in place (by game number), not rebuilt: a row replaced between
// mouse-down and mouse-up would swallow the click.
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
      tr.onclick = (ev) => { if (ev.target.tagName !== "A") watch(g.number); };
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

function players(v, captures) {
  for (const side of ["black", "white"]) {
    $(`${side}-name`).textContent = v[side];
    $(`${side}-caps`).textContent = `${captures[side]} captured`;
    $(`${side}-card`).classList.toggle("to-play", v.kind === "live" && v.to_play === side);
  }
}

function showLive(v) {
  view = v;
  $("replay").hidden = true;
  board.draw({stones: v.stones, move: v.move, last: v.last, moves: v.moves,
              numbers: $("numbers").checked});
  $("game-line").textContent = `game ${v.number} (live) · move ${v.move}`;
  players(v, v.captures);
  $("turn").textContent = v.waiting_on ? `waiting on ${v.waiting_on}` : "";
  $("turn").classList.remove("over");
  $("status").textContent = v.fallbacks ? `${v.fallbacks} fallback move${v.fallbacks === 1 ? "" : "s"} so far` : "";
  $("status").className = "";
  $("estimate").textContent = v.estimate;
}

function showReplay(v) {
  $("replay").hidden = false;
  if (v.error) {
    view = null;
    $("status").textContent = v.error;
    $("status").className = "error";
    return;
  }
  const same = view && view.kind === "replay" && view.number === v.number;
  // Frames from the moves: each places its stone and lifts what it captured.
  const size = boardInfo.size, frames = ["0".repeat(size * size)];
  const cells = frames[0].split("");
  const captured = [{black: 0, white: 0}];
  for (const [point, colour, , lifted] of v.moves) {
    if (point !== null) cells[point] = String(colour);
    for (const p of lifted) cells[p] = "0";
    frames.push(cells.join(""));
    const before = captured[captured.length - 1];
    const side = colour === 1 ? "black" : "white";
    captured.push({...before, [side]: before[side] + lifted.length});
  }
  view = {...v, frames, captured};
  $("slider").max = v.moves.length;
  $("sgf-link").href = v.sgf;
  $("turn").textContent = `${v.result} (${v.reason})`;
  $("turn").classList.add("over");
  showFrame(same ? Math.min(frame, v.moves.length) : v.moves.length);
}

function showFrame(k) {
  if (!view || view.kind !== "replay") return;
  frame = Math.max(0, Math.min(k, view.moves.length));
  const moves = view.moves.slice(0, frame);
  const move = frame > 0 ? view.moves[frame - 1] : null;
  const atEnd = frame === view.moves.length;
  board.draw({stones: view.frames[frame], move: frame, last: move ? move[0] : null,
              fallbacks: moves.filter((m) => m[2] && m[2].startsWith("fallback") && m[0] !== null).map((m) => m[0]),
              moves: moves.map((m) => m[0]), numbers: $("numbers").checked,
              count: atEnd ? view.count : null});
  $("slider").value = frame;
  $("game-line").textContent = `game ${view.number} (finished) · move ${frame}`;
  players(view, view.captured[frame]);
  $("slider-label").textContent = `move ${frame} of ${view.moves.length}` +
    (move && move[0] === null ? ` (${move[1] === 1 ? "Black" : "White"} passed)` : "");
  $("status").textContent = move && move[2] ? `move ${frame}: ${move[2]}` : "";
  $("status").className = "";
  clearTimeout(timer);
  if (atEnd) {
    $("estimate").textContent = view.end_line;
  } else {
    $("estimate").textContent = "Estimate …";
    // Asked once the slider rests: a drag through 200 moves asks for one estimate.
    timer = setTimeout(() => link.send({type: "estimate", game: view.number, move: frame}), 150);
  }
}

$("slider").addEventListener("input", () => showFrame(Number($("slider").value)));
$("first").onclick = () => showFrame(0);
$("back").onclick = () => showFrame(frame - 1);
$("forward").onclick = () => showFrame(frame + 1);
$("end").onclick = () => showFrame(Infinity);
$("numbers").checked = localStorage.getItem("go19.numbers") === "1";
$("numbers").onchange = () => {
  localStorage.setItem("go19.numbers", $("numbers").checked ? "1" : "0");
  if (view && view.kind === "replay") showFrame(frame);
  else if (view) showLive(view);
};
document.addEventListener("keydown", (ev) => {
  if (!view || view.kind !== "replay" || ["INPUT", "SELECT", "TEXTAREA"].includes(ev.target.tagName)
      && ev.target.type !== "range") return;
  const step = {ArrowLeft: -1, ArrowRight: 1}[ev.key];
  if (step) showFrame(frame + step);
  else if (ev.key === "Home") showFrame(0);
  else if (ev.key === "End") showFrame(Infinity);
  else return;
  ev.preventDefault();
});
