/* ego_adr report.html: filters, counts, confusion-matrix cells and per-sample cards over the embedded data.
   Everything is built with DOM calls and textContent (no HTML from the data is interpreted), except the
   run's report.md, which ego_adr rendered and escaped itself. */
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const R = D.runs, S = D.samples, MULTI = R.length > 1, PAGE = 50;
const DIMS = ["source", "gt", "verdict", "route", "fkind"];
const st = {run: 0, source: "", gt: "", verdict: "", route: "", fkind: "", flipped: false, q: "", cm: null,
            shown: PAGE};
const $ = (s) => document.querySelector(s);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
const fmt = (x, d = 3) => (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : x);
const view = (s, k = st.run) => s.per[k];

function values(s, dim) {
  if (dim === "source") return [s.source || "-"];
  if (dim === "gt") return s.gt.length ? s.gt : ["(none)"];
  const v = view(s);
  if (!v) return ["(not in this run)"];
  if (dim === "verdict") return [v.verdict];
  if (dim === "route") return [v.route || "-"];
  return [v.failure_kind || "none"];
}

function flipped(s) {
  const hits = s.per.filter((p) => p && p.hit !== null && p.hit !== undefined).map((p) => p.hit);
  return hits.length >= 2 && hits.includes(true) && hits.includes(false);
}

const HAY = S.map((s) => {
  const parts = [s.sample_id, s.action, s.question, s.reference, s.task_id, s.video_id];
  for (const v of s.per) {
    if (!v) continue;
    parts.push(v.answer, v.raw, v.narration, v.failure, v.extraction, v.match && v.match.step);
  }
  return parts.filter((x) => typeof x === "string").join("\n").toLowerCase();
});

function passes(i, skip) {
  const s = S[i];
  for (const d of DIMS) if (d !== skip && st[d] && !values(s, d).includes(st[d])) return false;
  if (skip !== "flipped" && st.flipped && !flipped(s)) return false;
  if (st.q && !HAY[i].includes(st.q)) return false;
  if (st.cm) {
    const v = view(s, st.cm.run);
    if (!v || !v.cm || v.cm[0] !== st.cm.row || v.cm[1] !== st.cm.col) return false;
  }
  return true;
}

function fillSelect(dim) {
  const sel = document.querySelector(`select[data-dim="${dim}"]`);
  const all = new Map(), live = new Map();
  S.forEach((s, i) => {
    const ok = passes(i, dim);
    for (const v of values(s, dim)) {
      all.set(v, 0);
      if (ok) live.set(v, (live.get(v) || 0) + 1);
    }
  });
  const total = S.filter((_, i) => passes(i, dim)).length;
  sel.replaceChildren(el("option", {value: "", text: `all (${total})`}));
  for (const v of [...all.keys()].sort()) {
    sel.append(el("option", {value: v, text: `${v} (${live.get(v) || 0})`}));
  }
  sel.value = st[dim];
}

function thumbs(v) {
  const box = el("div", {class: "thumbs"});
  for (const f of v.frames || []) {
    const src = D.thumbs[f.k];
    const cap = `#${f.i}` + (f.t !== null && f.t !== undefined ? ` ${f.t.toFixed(2)}s` : "");
    const path = f.k.slice(0, f.k.lastIndexOf("#"));
    if (src) box.append(el("figure", {}, el("img", {src, alt: `frame ${f.i}`, title: `frame ${f.i}`,
                                                    "data-frame": f.k}), cap));
    else box.append(el("span", {class: "missing", "data-frame": f.k},
                       `${cap}: ${D.thumb_problems[f.k] || D.thumb_problems[path] || "no thumbnail"}`));
  }
  return box;
}

function dl(pairs) {
  const d = el("dl");
  for (const [k, v] of pairs) {
    if (v === null || v === undefined || v === "") continue;
    d.append(el("dt", {text: k}), el("dd", {}, v));
  }
  return d;
}

function matchText(m) {
  if (!m) return null;
  const s = `${m.step}  (score ${fmt(m.score)}, ${m.method})`;
  const around = [m.previous && `previous: ${m.previous}`, m.next && `next: ${m.next}`].filter(Boolean);
  return around.length ? el("span", {}, s, el("br"), el("span", {class: "muted", text: around.join(" | ")})) : s;
}

function timings(t) {
  const keys = Object.keys(t || {});
  return keys.length ? keys.map((k) => `${k} ${fmt(t[k], 3)}`).join(", ") : null;
}

function runColumn(s, k) {
  const v = s.per[k];
  const col = el("div", {class: "col", "data-run": R[k].letter});
  const head = el("div", {}, el("span", {class: "badge run", text: R[k].letter}));
  if (!v) { col.append(head, el("span", {class: "muted", text: "not in this run"})); return col; }
  head.append(el("span", {class: `badge ${v.verdict.replace(/\s/g, "_")}`, text: v.verdict}));
  col.append(head, thumbs(v));
  const pre = (x) => (x ? el("pre", {text: x}) : null);
  const judges = v.judges ? Object.entries(v.judges).map(([n, j]) => `${n}: ${fmt(j.score)} (${j.method}` +
                                                        `${j.reason ? ", " + j.reason : ""})`).join("\n") : null;
  col.append(dl([
    ["matched step", matchText(v.match)], ["narration", pre(v.narration)], ["raw reply", pre(v.raw)],
    ["answer", v.answer === undefined || v.answer === null ? null
      : (v.answer === v.raw ? "the raw reply, as sent" : el("code", {text: JSON.stringify(v.answer)}))],
    ["extraction", [v.extraction, v.answer_from].filter(Boolean).join("; ")],
    ["read as", v.cleaned !== undefined ? (v.pred || `not an option (${JSON.stringify(String(v.cleaned).slice(0, 60))}${String(v.cleaned).length > 60 ? "..." : ""})`) : null],
    ["judge score", v.score !== undefined && v.score !== null ? fmt(v.score) : null], ["judges", pre(judges)],
    ["evidence", v.evidence && v.evidence.length ? JSON.stringify(v.evidence) : null],
    ["route", [v.route, v.mode && v.mode !== v.route ? `mode ${v.mode}` : ""].filter(Boolean).join(", ")],
    ["failure", v.failure ? `${v.failure} (${v.failure_kind || "sample"})` : null],
    ["not scored", v.reason || null], ["timings (s)", timings(v.timings)],
    ["frames", Object.keys(v.frames_note || {}).length ? JSON.stringify(v.frames_note) : null],
  ]));
  return col;
}

function card(s) {
  const c = el("div", {class: "card", "data-key": s.key});
  const head = el("div", {class: "head"}, el("span", {class: "sid", text: s.key}),
                  el("span", {class: "muted", text: `${s.source} · ${s.task_id || ""} · ${s.video_id || ""}` +
                                               (s.window ? ` · ${s.window.map((x) => fmt(x, 2)).join("–")} s` : "")}));
  for (const g of s.gt) head.append(el("span", {class: "badge gt", text: `GT: ${g}`}));
  if (MULTI && flipped(s)) head.append(el("span", {class: "badge flip", text: "flipped"}));
  c.append(head, dl([["procedure step", s.action], ["question", s.question], ["reference", s.reference]]));
  const cols = el("div", {class: "cols", style: `--n:${R.length}`});
  R.forEach((_, k) => cols.append(runColumn(s, k)));
  c.append(cols);
  return c;
}

function renderCM() {
  const box = $("#cm");
  const cm = R[st.run].cm;
  $("#cm-run").textContent = MULTI ? `(run ${R[st.run].letter})` : "";
  if (!cm) { box.replaceChildren(el("p", {class: "muted", text: "no confusion matrix (open-ended run)"})); return; }
  const ab = (x) => cm.abbrev[x] || x;
  const t = el("table");
  const hr = el("tr", {}, el("th", {text: "GT \\ pred"}));
  for (const c of cm.columns) hr.append(el("th", {title: c, text: ab(c)}));
  t.append(hr);
  cm.labels.forEach((row, i) => {
    const tr = el("tr", {}, el("th", {title: row, text: ab(row)}));
    const sum = cm.counts[i].reduce((a, b) => a + b, 0) || 1;
    cm.columns.forEach((col, j) => {
      const n = cm.counts[i][j];
      const td = el("td", {text: n, title: `ground truth ${row}, predicted ${col}: ${n}`});
      if (n) {
        td.className = "cell";
        td.dataset.row = row; td.dataset.col = col;
        td.style.background = `rgba(43,95,180,${(0.12 + 0.75 * n / sum).toFixed(2)})`;
        if (st.cm && st.cm.run === st.run && st.cm.row === row && st.cm.col === col) td.classList.add("sel");
        td.addEventListener("click", () => { st.cm = {run: st.run, row, col, n}; st.shown = PAGE; update(); });
      }
      tr.append(td);
    });
    t.append(tr);
  });
  box.replaceChildren(t);
}

function renderChip() {
  const chip = $("#cm-chip");
  if (!st.cm) { chip.replaceChildren(); return; }
  const b = el("button", {type: "button", title: "clear", text: "×"});
  b.addEventListener("click", () => { st.cm = null; update(); });
  chip.replaceChildren(el("span", {class: "chip", id: "cm-filter"},
    `confusion cell${MULTI ? " of run " + R[st.cm.run].letter : ""}: GT ${st.cm.row} → predicted ${st.cm.col} `, b));
}

function update() {
  DIMS.forEach(fillSelect);
  const idx = S.map((_, i) => i).filter((i) => passes(i));
  $("#count").textContent = `${idx.length} of ${S.length} samples`;
  $("#count").dataset.n = idx.length;
  if (MULTI) $("#n-flipped").textContent = `(${S.filter((_, i) => passes(i, "flipped") && flipped(S[i])).length})`;
  const cards = $("#cards");
  cards.replaceChildren(...idx.slice(0, st.shown).map((i) => card(S[i])));
  $("#more").style.display = idx.length > st.shown ? "" : "none";
  $("#more").textContent = `show ${Math.min(PAGE, idx.length - st.shown)} more`;
  renderCM();
  renderChip();
}

function init() {
  const runs = $("#runs");
  for (const r of R) {
    runs.append(el("div", {class: "run"}, el("span", {class: "badge run", text: r.letter}),
                   el("b", {text: r.name}), ` — ${r.settings} — ${r.n_rows} rows `,
                   el("span", {class: "muted", text: r.dir})));
    const d = el("details", {"data-run": r.letter}, el("summary", {text: `${r.letter}: ${r.name}`}));
    const body = el("div");
    body.innerHTML = r.report || "<p class='muted'>no report.md</p>";  // rendered + escaped by ego_adr
    d.append(body);
    d.open = R.length === 1;
    $("#report-list").append(d);
  }
  if (R.length === 1) $("#reports").open = true;
  const fr = $("#f-run");
  R.forEach((r, k) => fr.append(el("option", {value: k, text: `${r.letter}: ${r.name}`})));
  if (!MULTI) { $("#l-run").style.display = "none"; $("#l-flipped").style.display = "none"; }
  fr.addEventListener("change", () => { st.run = Number(fr.value); st.shown = PAGE; update(); });
  for (const d of DIMS) {
    const sel = document.querySelector(`select[data-dim="${d}"]`);
    sel.addEventListener("change", () => { st[d] = sel.value; st.shown = PAGE; update(); });
  }
  $("#f-flipped").addEventListener("change", (e) => { st.flipped = e.target.checked; st.shown = PAGE; update(); });
  $("#f-search").addEventListener("input", (e) => { st.q = e.target.value.trim().toLowerCase(); st.shown = PAGE;
                                                    update(); });
  $("#more").addEventListener("click", () => { st.shown += PAGE; update(); });
  update();
}
init();
