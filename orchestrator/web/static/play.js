// `go19 play`: draws the snapshots the server sends and sends clicks and settings.
// No game logic here: the server decides legality, scoring and whose turn it is, and
// the settings are the server's: the form shows them as they are (after a restart,
// and whatever another tab changed), and each edit is sent as soon as it is made.

import {Board} from "./board.js";
import {connect, showLink} from "./link.js";

const $ = (id) => document.getElementById(id);

// Setting name -> form element id.
const FIELDS = {
  mode: "mode", color: "colour", host1: "host1", port1: "port1", adapter1: "adapter1",
  model1: "model1", host2: "host2", port2: "port2", adapter2: "adapter2", model2: "model2",
  timeout: "timeout", komi: "komi",
  training: "training", auto_restart: "auto-restart", stop_after: "stop-after",
  auto_reconnect1: "auto-reconnect1", auto_reconnect2: "auto-reconnect2",
};
const VLM_MODES = ["av", "hv", "vv"];
const typing = new Set();  // settings being typed into, not sent yet: left alone
let board = null;
let last = null;           // the latest snapshot
let pngVersion = null;

const link = connect({
  onMessage: show,
  onState: (state, reason) => showLink(state, "connection to go19 lost — retrying…", reason),
});

function valueOf(input) {
  // Numbers go as typed: the server parses them, and says why when it cannot.
  return input.type === "checkbox" ? input.checked : input.value;
}

for (const [key, id] of Object.entries(FIELDS)) {
  const input = $(id);
  input.addEventListener("input", () => typing.add(key));
  input.addEventListener("change", () => {
    typing.delete(key);
    link.send({type: "settings", settings: {[key]: valueOf(input)}});
  });
}
$("new").onclick = () => link.send({type: "new"});
$("pass").onclick = () => link.send({type: "pass"});
$("resign").onclick = () => link.send({type: "resign"});
$("confirm").onclick = () => link.send({type: "confirm"});
$("cancel").onclick = () => link.send({type: "cancel"});
$("check1").onclick = () => link.send({type: "check", server: 1});
$("check2").onclick = () => link.send({type: "check", server: 2});

// Page-only choices (how to look, not what to play) are remembered by the browser.
for (const id of ["numbers", "show-png"]) {
  $(id).checked = localStorage.getItem(`go19.${id}`) === "1";
  $(id).onchange = () => {
    localStorage.setItem(`go19.${id}`, $(id).checked ? "1" : "0");
    if (last) show(last);
  };
}

function fillForm(settings) {
  for (const [key, id] of Object.entries(FIELDS)) {
    const input = $(id);
    if (typing.has(key) && document.activeElement === input) continue;
    typing.delete(key);
    const value = settings[key];
    if (input.type === "checkbox") {
      input.checked = Boolean(value);
    } else {
      const text = value === null ? "" : String(value);
      if (input.value !== text) input.value = text;
    }
  }
  const mode = settings.mode;
  $("server1").hidden = !VLM_MODES.includes(mode);
  $("server2").hidden = mode !== "vv";
  $("colour-row").hidden = mode === "hh" || mode === "vv";
  $("colour-label").textContent = mode === "av" ? "AI colour" : "your colour";
}

// While the players score the game a click marks the stone's group dead or alive (the
// server decides which stones the group has); a click on an empty point does nothing.
function clicked(p) {
  const g = last && last.game;
  if (g && g.scoring) {
    if (g.stones[p] !== "0") link.send({type: "toggle", point: p});
  } else {
    link.send({type: "click", point: p});
  }
}

function show(msg) {
  last = msg;
  if (!board || board.size !== msg.board.size) {
    board = new Board($("board"), msg.board, {
      onClick: clicked,
      onHover: (p) => { $("hover").textContent = p === null ? "—" : board.pointName(p); },
    });
  }
  fillForm(msg.settings);
  const g = msg.game;
  board.draw({stones: g.stones, move: g.move, last: g.last, fallbacks: g.fallbacks,
              moves: g.moves, numbers: $("numbers").checked, count: g.count,
              toPlay: g.your_move ? g.to_play : null});
  $("game-line").textContent = `game ${g.number}` + (g.series ? ` (${g.series})` : "") +
    ` · ${msg.modes[g.mode]} · move ${g.move}` +
    (g.last_pass ? " · last move: pass" : "");
  for (const side of ["black", "white"]) {
    $(`${side}-name`).textContent = g[side] || "—";
    $(`${side}-caps`).textContent = `${g.captures[side]} captured`;
    $(`${side}-card`).classList.toggle("to-play", !g.over && !g.scoring && g.to_play === side);
  }
  $("turn").textContent = msg.turn;
  $("turn").classList.toggle("over", g.over);
  $("turn").classList.toggle("scoring", g.scoring);
  $("board").classList.toggle("scoring", g.scoring);
  $("pass").hidden = $("resign").hidden = g.scoring;
  $("confirm").hidden = !g.scoring;
  $("status").textContent = msg.status.text;
  $("status").className = msg.status.level;
  $("estimate").textContent = msg.estimate;
  $("estimate").title = msg.estimate;
  $("pending").textContent = msg.pending;
  for (const i of ["1", "2"]) {
    const label = $(`server${i}-label`);
    label.textContent = msg.servers[i].label;
    label.className = "label " + msg.servers[i].colour;
  }
  $("cancel").hidden = !VLM_MODES.includes(g.mode);  // nothing to cancel without a VLM
  $("cancel").disabled = !msg.can_cancel;
  $("finished-count").textContent = msg.finished;
  $("void-count").textContent = msg.void ? ` (void ${msg.void})` : "";
  $("saved").textContent = msg.saved ? `saved ${msg.saved}` : "";
  showPicture(msg.vlm_png);
}

function showPicture(version) {
  $("vlm-view").hidden = !$("show-png").checked;
  $("vlm-none").hidden = version !== null;
  $("vlm-png").hidden = version === null;
  if (version !== null && $("show-png").checked && version !== pngVersion) {
    pngVersion = version;
    $("vlm-png").src = `/vlm.png?v=${version}`;
  }
}
