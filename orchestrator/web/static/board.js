// The SVG board: draws what the server sends, turns a click into a point index.
// Point index = row * 19 + col, row 0 at the top (as everywhere in go19).
"use strict";

const SIZE = 19;
const MARGIN = 1.45;  // board units (one unit = the distance between two lines)
const COLUMNS = "ABCDEFGHJKLMNOPQRST";
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function pointName(point) {
  const row = Math.floor(point / SIZE), col = point % SIZE;
  return COLUMNS[col] + (SIZE - row);
}

class Board {
  constructor(svg, onClick, onHover) {
    this.svg = svg;
    const far = MARGIN + SIZE - 1;
    const side = 2 * MARGIN + SIZE - 1;
    svg.setAttribute("viewBox", `0 0 ${side} ${side}`);
    svg.appendChild(svgEl("rect", {x: 0, y: 0, width: side, height: side, class: "wood"}));
    for (let i = 0; i < SIZE; i++) {
      const at = MARGIN + i;
      svg.appendChild(svgEl("line", {x1: MARGIN, y1: at, x2: far, y2: at, class: "grid"}));
      svg.appendChild(svgEl("line", {x1: at, y1: MARGIN, x2: at, y2: far, class: "grid"}));
      const letter = COLUMNS[i], number = String(SIZE - i);
      for (const y of [MARGIN / 2 - 0.05, far + MARGIN / 2 + 0.05]) {
        svg.appendChild(svgEl("text", {x: at, y: y, class: "coord", "data-col": letter}, letter));
      }
      for (const x of [MARGIN / 2 - 0.05, far + MARGIN / 2 + 0.05]) {
        svg.appendChild(svgEl("text", {x: x, y: at, class: "coord", "data-row": number}, number));
      }
    }
    for (const r of [3, 9, 15]) for (const c of [3, 9, 15]) {
      svg.appendChild(svgEl("circle", {cx: MARGIN + c, cy: MARGIN + r, r: 0.12, class: "star"}));
    }
    this.ghost = svgEl("circle", {r: 0.45, class: "ghost hidden"});
    svg.appendChild(this.ghost);
    this.layer = svgEl("g", {id: "stones"});
    svg.appendChild(this.layer);
    this.stones = "0".repeat(SIZE * SIZE);
    svg.addEventListener("click", (ev) => {
      const p = this.pointAt(ev);
      if (p !== null && onClick) onClick(p);
    });
    svg.addEventListener("mousemove", (ev) => {
      const p = this.pointAt(ev);
      if (p === null) { this.ghost.classList.add("hidden"); onHover(null); return; }
      this.ghost.setAttribute("cx", MARGIN + p % SIZE);
      this.ghost.setAttribute("cy", MARGIN + Math.floor(p / SIZE));
      this.ghost.classList.toggle("hidden", this.stones[p] !== "0");
      onHover(p);
    });
    svg.addEventListener("mouseleave", () => { this.ghost.classList.add("hidden"); onHover(null); });
  }

  pointAt(ev) {
    const pt = this.svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    const at = pt.matrixTransform(this.svg.getScreenCTM().inverse());
    const col = Math.round(at.x - MARGIN), row = Math.round(at.y - MARGIN);
    if (col < 0 || col >= SIZE || row < 0 || row >= SIZE) return null;
    return row * SIZE + col;
  }

  // stones: 361 chars "0"/"1"/"2"; last: point or null; marks: points of fallback moves.
  draw(stones, last, marks, move) {
    this.stones = stones;
    this.svg.dataset.stones = stones;
    this.svg.dataset.move = String(move);
    const layer = svgEl("g", {id: "stones"});
    for (let p = 0; p < stones.length; p++) {
      const s = stones[p];
      if (s === "0") continue;
      const colour = s === "1" ? "black" : "white";
      layer.appendChild(svgEl("circle", {cx: MARGIN + p % SIZE, cy: MARGIN + Math.floor(p / SIZE),
                                         r: 0.47, class: "stone " + colour, "data-point": p}));
    }
    for (const p of marks || []) {
      layer.appendChild(svgEl("rect", {x: MARGIN + p % SIZE - 0.2, y: MARGIN + Math.floor(p / SIZE) - 0.2,
                                       width: 0.4, height: 0.4, class: "fallback-mark"}));
    }
    if (last !== null && last !== undefined && stones[last] !== "0") {
      layer.appendChild(svgEl("circle", {cx: MARGIN + last % SIZE, cy: MARGIN + Math.floor(last / SIZE),
                                         r: 0.2, class: "last " + (stones[last] === "1" ? "on-black" : "on-white")}));
    }
    this.layer.replaceWith(layer);
    this.layer = layer;
    this.ghost.classList.add("hidden");
  }
}
