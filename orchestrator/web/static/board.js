// The SVG board: draws what the server sends and turns a click into a point index
// (row * size + col, row 0 at the top, as everywhere in go19). It knows no rules: the
// size and the column letters come from the server, the stones and the marks too.
//
// The look takes from the boards Go players know: Sabaki's Shudan (stones a shade
// smaller than the grid with a soft shadow below, the ghost stone, dimmed dead stones),
// KaTrain (coordinates sized from the grid so they scale with the board, star points a
// tenth of the grid, the last move as a ring in the other colour) and OGS (the kaya
// board colour, the small squares of the count, dame kept faint).

const SVG_NS = "http://www.w3.org/2000/svg";
const MARGIN = 1.45;      // board units (one unit: the distance between two lines)
const STONE_R = 0.47;

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function starPoints(size) {
  if (size < 7) return [];
  const edge = size <= 11 ? 2 : 3;
  const lines = [edge, size - 1 - edge];
  if (size % 2 === 1 && size > 7) lines.push((size - 1) / 2);
  return lines.flatMap((r) => lines.map((c) => [r, c]));
}

// The wood, drawn once as an image (noise stretched along the grain): a filter on the
// live SVG would be worked out again at every redraw.
function woodImage(side) {
  const px = 1024;
  const svg = `<svg xmlns="${SVG_NS}" width="${px}" height="${px}">
    <filter id="g" x="0" y="0" width="1" height="1">
      <feTurbulence type="fractalNoise" baseFrequency="0.0025 0.09" numOctaves="4" seed="19"/>
      <feColorMatrix type="matrix" values="0 0 0 0 0.52  0 0 0 0 0.33  0 0 0 0 0.12
                                           0 0 0 -0.9 0.62"/>
    </filter>
    <radialGradient id="l" cx="0.38" cy="0.32" r="0.9">
      <stop offset="0" stop-color="#fff6dc" stop-opacity="0.22"/>
      <stop offset="1" stop-color="#5a3510" stop-opacity="0.16"/>
    </radialGradient>
    <rect width="100%" height="100%" fill="#dcb35c"/>
    <rect width="100%" height="100%" filter="url(#g)" opacity="0.55"/>
    <rect width="100%" height="100%" fill="url(#l)"/>
  </svg>`;
  return el("image", {x: 0, y: 0, width: side, height: side, preserveAspectRatio: "none",
                      href: "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg)});
}

function defs() {
  const d = el("defs");
  const gradient = (id, stops, attrs) => {
    const g = el("radialGradient", {id, ...attrs});
    for (const [offset, color, opacity = 1] of stops) {
      g.appendChild(el("stop", {offset, "stop-color": color, "stop-opacity": opacity}));
    }
    d.appendChild(g);
  };
  gradient("stone-black", [[0, "#8a8a8a"], [0.16, "#4a4a4a"], [0.55, "#1c1c1c"], [1, "#050505"]],
           {cx: "0.5", cy: "0.5", r: "0.5", fx: "0.34", fy: "0.3"});
  gradient("stone-white", [[0, "#ffffff"], [0.45, "#f4f3ef"], [0.85, "#d9d7d0"], [1, "#b5b3ad"]],
           {cx: "0.5", cy: "0.5", r: "0.5", fx: "0.36", fy: "0.32"});
  gradient("stone-shadow", [[0, "#1a0e02", 0.5], [0.62, "#1a0e02", 0.32], [1, "#1a0e02", 0]],
           {cx: "0.5", cy: "0.5", r: "0.5"});
  return d;
}

export class Board {
  // board: {size, columns} from the server; onClick(point), onHover(point | null).
  constructor(svg, board, {onClick = null, onHover = () => {}} = {}) {
    this.svg = svg;
    this.size = board.size;
    this.columns = board.columns;
    this.toPlay = null;           // the ghost stone's colour; null: no ghost
    this.stones = "0".repeat(this.size * this.size);
    svg.replaceChildren();
    const side = 2 * MARGIN + this.size - 1;
    svg.setAttribute("viewBox", `0 0 ${side} ${side}`);
    svg.appendChild(defs());
    svg.appendChild(woodImage(side));
    svg.appendChild(el("rect", {x: 0.04, y: 0.04, width: side - 0.08, height: side - 0.08,
                                class: "edge"}));
    this.drawGrid(side);
    this.shadows = svg.appendChild(el("g", {id: "shadows"}));
    this.stoneLayer = svg.appendChild(el("g", {id: "stones"}));
    this.marks = svg.appendChild(el("g", {id: "marks"}));
    this.ghost = svg.appendChild(el("circle", {r: STONE_R, class: "ghost", visibility: "hidden"}));
    this.hovered = null;
    svg.addEventListener("click", (ev) => {
      const p = this.pointAt(ev);
      if (p !== null && onClick) onClick(p);
    });
    svg.addEventListener("mousemove", (ev) => {
      this.hovered = this.pointAt(ev);
      this.showGhost();
      onHover(this.hovered);
    });
    svg.addEventListener("mouseleave", () => {
      this.hovered = null;
      this.showGhost();
      onHover(null);
    });
  }

  at(p) {
    return [MARGIN + p % this.size, MARGIN + Math.floor(p / this.size)];
  }

  pointName(p) {
    return this.columns[p % this.size] + (this.size - Math.floor(p / this.size));
  }

  drawGrid(side) {
    const n = this.size, far = MARGIN + n - 1;
    let path = "";
    for (let i = 0; i < n; i++) {
      const at = MARGIN + i;
      path += `M${MARGIN} ${at}H${far}M${at} ${MARGIN}V${far}`;
    }
    this.svg.appendChild(el("path", {d: path, class: "grid"}));
    this.svg.appendChild(el("rect", {x: MARGIN, y: MARGIN, width: n - 1, height: n - 1,
                                     class: "grid-edge"}));
    for (const [r, c] of starPoints(n)) {
      this.svg.appendChild(el("circle", {cx: MARGIN + c, cy: MARGIN + r, r: 0.1, class: "star"}));
    }
    const near = 0.62, farText = side - 0.62;
    for (let i = 0; i < n; i++) {
      const at = MARGIN + i, letter = this.columns[i], number = String(n - i);
      for (const y of [near, farText]) {
        this.svg.appendChild(el("text", {x: at, y, class: "coord", "data-col": letter}, letter));
      }
      for (const x of [near, farText]) {
        this.svg.appendChild(el("text", {x, y: at, class: "coord", "data-row": number}, number));
      }
    }
  }

  pointAt(ev) {
    const ctm = this.svg.getScreenCTM();
    if (!ctm) return null;
    const at = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
    const col = Math.round(at.x - MARGIN), row = Math.round(at.y - MARGIN);
    if (col < 0 || col >= this.size || row < 0 || row >= this.size) return null;
    return row * this.size + col;
  }

  showGhost() {
    const p = this.hovered;
    const show = p !== null && this.toPlay !== null && this.stones[p] === "0";
    this.ghost.setAttribute("visibility", show ? "visible" : "hidden");
    if (!show) return;
    const [x, y] = this.at(p);
    this.ghost.setAttribute("cx", x);
    this.ghost.setAttribute("cy", y);
    this.ghost.setAttribute("fill", `url(#stone-${this.toPlay})`);
    this.ghost.dataset.color = this.toPlay;
  }

  // view: {stones: "0"/"1"/"2" per point, move, last (point or null), fallbacks (points),
  //        moves (each move's point or null: for the numbers), numbers (bool),
  //        count ({black, white, dame, dead} point lists, or null), toPlay (the ghost's
  //        colour, or null for a board that takes no clicks)}
  draw(view) {
    const {stones, last = null, fallbacks = [], moves = [], numbers = false, count = null} = view;
    this.svg.dataset.stones = stones;
    this.svg.dataset.move = String(view.move);
    const dead = new Set(count ? count.dead : []);
    for (let p = 0; p < stones.length; p++) {
      if (stones[p] !== this.stones[p] || dead.has(p) !== this.wasDead(p)) this.drawStone(p, stones[p], dead.has(p));
    }
    this.stones = stones;
    this.dead = dead;
    this.drawMarks(stones, last, fallbacks, numbers ? moves : null, count);
    this.toPlay = view.toPlay ?? null;
    this.showGhost();
  }

  wasDead(p) {
    return this.dead ? this.dead.has(p) : false;
  }

  drawStone(p, s, dead) {
    for (const layer of [this.shadows, this.stoneLayer]) {
      const old = layer.querySelector(`[data-point="${p}"]`);
      if (old) old.remove();
    }
    if (s === "0") return;
    const [x, y] = this.at(p), color = s === "1" ? "black" : "white";
    if (!dead) {
      this.shadows.appendChild(el("circle", {cx: x + 0.05, cy: y + 0.08, r: STONE_R + 0.02,
                                             class: "shadow", "data-point": p}));
    }
    this.stoneLayer.appendChild(el("circle", {cx: x, cy: y, r: STONE_R, fill: `url(#stone-${color})`,
                                              class: `stone ${color}${dead ? " dead" : ""}`,
                                              "data-point": p}));
  }

  drawMarks(stones, last, fallbacks, moves, count) {
    const g = el("g", {id: "marks"});
    const on = (p) => (stones[p] === "1" ? "on-black" : "on-white");
    if (count) {
      const dead = new Set(count.dead);  // crossed out below: no square under the cross
      for (const owner of ["black", "white"]) {
        for (const p of count[owner]) {
          if (dead.has(p)) continue;
          const [x, y] = this.at(p);
          g.appendChild(el("rect", {x: x - 0.15, y: y - 0.15, width: 0.3, height: 0.3,
                                    class: `territory ${owner}`, "data-point": p}));
        }
      }
      for (const p of count.dame) {
        const [x, y] = this.at(p);
        g.appendChild(el("circle", {cx: x, cy: y, r: 0.07, class: "dame", "data-point": p}));
      }
      for (const p of count.dead) {
        const [x, y] = this.at(p), d = 0.2;
        g.appendChild(el("path", {d: `M${x - d} ${y - d}L${x + d} ${y + d}M${x + d} ${y - d}L${x - d} ${y + d}`,
                                  class: `dead-mark ${on(p)}`, "data-point": p}));
      }
    }
    if (moves) {  // each stone's number: the last move played on its point
      const number = new Map();
      moves.forEach((p, i) => { if (p !== null) number.set(p, i + 1); });
      for (const [p, n] of number) {
        if (stones[p] === "0") continue;
        const [x, y] = this.at(p), digits = String(n).length;
        g.appendChild(el("text", {x, y, class: `number ${on(p)}`, "data-point": p,
                                  "font-size": digits < 3 ? 0.46 : 0.36}, String(n)));
      }
    }
    if (last !== null && stones[last] !== "0") {
      const [x, y] = this.at(last);
      g.appendChild(el("circle", {cx: x, cy: y, r: moves ? 0.4 : 0.24, class: `last ${on(last)}`,
                                  "data-point": last}));
    }
    for (const p of fallbacks) {
      if (stones[p] === "0") continue;
      // A small amber triangle at the stone's upper right: another shape, another colour
      // and another place than the last-move ring (and no red: the VLM's picture marks
      // its last move with a red dot).
      const [x, y] = this.at(p), cx = x + 0.3, cy = y - 0.29, s = 0.19;
      g.appendChild(el("polygon", {points: `${cx} ${cy - s} ${cx + s} ${cy + s * 0.8} ${cx - s} ${cy + s * 0.8}`,
                                   class: "fallback-mark", "data-point": p}));
    }
    this.marks.replaceWith(g);
    this.marks = g;
  }
}
